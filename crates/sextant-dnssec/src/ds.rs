//! DS records for the parent zone (RFC 4034 §5, RFC 4509): the digest of
//! the owner and the DNSKEY RDATA. SHA-256 (digest type 2) is what every
//! registry takes; CDS carries the same RDATA (RFC 7344).

use data_encoding::HEXUPPER;
use ring::digest;

use crate::{Error, key, name};

/// Digest type 2: SHA-256.
pub const DIGEST_SHA256: u8 = 2;
/// Digest type 4: SHA-384.
pub const DIGEST_SHA384: u8 = 4;

/// The DS RDATA of a DNSKEY of `zone`.
pub fn rdata(zone: &str, dnskey: &[u8], digest_type: u8) -> Result<Vec<u8>, Error> {
    let algorithm = match digest_type {
        DIGEST_SHA256 => &digest::SHA256,
        DIGEST_SHA384 => &digest::SHA384,
        _ => {
            return Err(Error::BadRdata(
                "DS digest type: 2 (SHA-256) or 4 (SHA-384)",
            ));
        }
    };
    let mut ctx = digest::Context::new(algorithm);
    ctx.update(&name::wire(zone)?);
    ctx.update(dnskey);
    let d = ctx.finish();
    let mut out = Vec::with_capacity(4 + d.as_ref().len());
    out.extend_from_slice(&key::key_tag(dnskey).to_be_bytes());
    out.push(*dnskey.get(3).ok_or(Error::BadRdata("DNSKEY too short"))?);
    out.push(digest_type);
    out.extend_from_slice(d.as_ref());
    Ok(out)
}

/// A DS digest written in hexadecimal (either case; spaces and tabs
/// between groups, as zone files split it, are ignored).
pub fn digest_from_hex(text: &str) -> Result<Vec<u8>, Error> {
    let compact: String = text.chars().filter(|c| !matches!(c, ' ' | '\t')).collect();
    if compact.is_empty() {
        return Err(Error::BadRdata("DS digest: empty"));
    }
    data_encoding::HEXLOWER_PERMISSIVE
        .decode(compact.as_bytes())
        .map_err(|_| {
            Error::BadRdata("DS digest: expected hexadecimal digits, an even number of them")
        })
}

/// Bytes in upper-case hexadecimal, as DS digests are written.
pub fn hex(bytes: &[u8]) -> String {
    HEXUPPER.encode(bytes)
}

/// The DS record as a zone file line: `zone. IN DS TAG ALG TYPE HEX`.
pub fn text(zone: &str, ttl: Option<u32>, ds: &[u8]) -> String {
    let tag = u16::from_be_bytes([ds[0], ds[1]]);
    let ttl = ttl.map(|t| format!("{t} ")).unwrap_or_default();
    format!(
        "{}. {ttl}IN DS {tag} {} {} {}",
        name::normalise(zone),
        ds[2],
        ds[3],
        HEXUPPER.encode(&ds[4..])
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use data_encoding::BASE64;

    /// RFC 6605 §6.1: the DS of its example KSK.
    #[test]
    fn rfc6605_ds() {
        let public = BASE64
            .decode(b"GojIhhXUN/u4v54ZQqGSnyhWJwaubCvTmeexv7bR6edbkrSqQpF64cYbcB7wNcP+e+MAnLr+Wi9xMWyQLc8NAA==")
            .unwrap();
        let dnskey = key::dnskey_rdata(257, 13, &public);
        let ds = rdata("example.net", &dnskey, DIGEST_SHA256).unwrap();
        assert_eq!(
            text("example.net", Some(3600), &ds),
            "example.net. 3600 IN DS 55648 13 2 B4C8C1FE2E7477127B27115656AD6256F424625BF5C1E2770CE6D6E37DF61D17"
        );
    }
}
