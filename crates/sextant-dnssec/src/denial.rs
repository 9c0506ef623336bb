//! Compact denial of existence (RFC 9824): a negative answer proves
//! itself with one NSEC made for the name asked, so nothing about the
//! zone's other names is revealed and each proof is one signature.
//!
//! * the name does not exist: NOERROR, and `NAME NSEC \000.NAME RRSIG NSEC
//!   NXNAME` (the NXNAME pseudo-type says the name does not exist);
//! * the name exists without the type asked (NODATA): `NAME NSEC
//!   \000.NAME` listing the types it has, never the one asked.

use crate::{Error, TYPE_NSEC, TYPE_RRSIG, name};

/// The NSEC RDATA for `owner`: next name `\000.owner`, then the type
/// bitmap of `types` with RRSIG and NSEC added, less `denied` (the type
/// the proof denies: a query for type NSEC or RRSIG must get a bitmap
/// without it, or validators reject the proof as denying itself). Types
/// from 256 up are not listed (Sextant serves none).
pub fn compact_nsec(
    owner: &str,
    types: &[u16],
    denied: Option<u16>,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    out.clear();
    out.extend_from_slice(&[1, 0]);
    name::write(owner, out)?;
    if out.len() > 255 {
        return Err(Error::BadName(format!("\\000.{owner}")));
    }
    let mut bits = [0u8; 32];
    for t in types.iter().copied().chain([TYPE_RRSIG, TYPE_NSEC]) {
        if t < 256 && Some(t) != denied {
            bits[usize::from(t) / 8] |= 0x80 >> (t % 8);
        }
    }
    let len = bits.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
    out.push(0); // window 0
    out.push(len as u8);
    out.extend_from_slice(&bits[..len]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TYPE_NXNAME;

    #[test]
    fn nxname_proof_matches_rfc9824() {
        let mut out = Vec::new();
        compact_nsec("a.example", &[TYPE_NXNAME], None, &mut out).unwrap();
        // \000.a.example; window 0, 17 bytes: RRSIG (46) NSEC (47) NXNAME (128).
        let mut want = b"\x01\x00\x01a\x07example\x00\x00\x11".to_vec();
        let mut bits = [0u8; 17];
        bits[5] = 0x03;
        bits[16] = 0x80;
        want.extend_from_slice(&bits);
        assert_eq!(out, want);
    }

    #[test]
    fn nodata_lists_what_the_name_has() {
        let mut out = Vec::new();
        compact_nsec("www.example", &[1, 28], Some(16), &mut out).unwrap();
        let bitmap = &out[out.len() - 6..];
        // A (1), AAAA (28), RRSIG (46), NSEC (47): 6 bytes.
        assert_eq!(bitmap, [0x40, 0, 0, 0x08, 0, 0x03]);
    }

    #[test]
    fn a_proof_never_lists_the_type_it_denies() {
        let mut out = Vec::new();
        // A query for NSEC at www.example (which has A): A, RRSIG only.
        compact_nsec("www.example", &[1], Some(crate::TYPE_NSEC), &mut out).unwrap();
        assert_eq!(&out[out.len() - 8..], [0, 6, 0x40, 0, 0, 0, 0, 0x02]);
        // A query for RRSIG: A, NSEC only.
        compact_nsec("www.example", &[1], Some(TYPE_RRSIG), &mut out).unwrap();
        assert_eq!(&out[out.len() - 8..], [0, 6, 0x40, 0, 0, 0, 0, 0x01]);
    }
}
