//! RRSIGs (RFC 4034 §3): the RDATA, and the window each signature is
//! valid in.
//!
//! The window: inception an hour back (a validator whose clock is behind
//! still accepts it), expiration two weeks ahead less a jitter of up to a
//! day taken from the RRset itself, so signatures made together do not all
//! expire together. A cached signature is made again once it is a week
//! old: it never reaches a validator with less than six days left.

use ring::rand::SecureRandom;

use crate::key::Signer;
use crate::rrset::RrsetBuf;
use crate::{Error, TYPE_RRSIG};

/// How long signatures are valid, and when they are made again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    /// Inception this many seconds before signing.
    pub backdate: u32,
    /// Expiration this many seconds after signing...
    pub lifetime: u32,
    /// ...less up to this many (taken from the RRset).
    pub jitter: u32,
    /// A cached signature this old is made again.
    pub refresh: u32,
}

impl Default for Validity {
    fn default() -> Self {
        Validity {
            backdate: 3600,
            lifetime: 14 * 86_400,
            jitter: 86_400,
            refresh: 7 * 86_400,
        }
    }
}

impl Validity {
    /// (inception, expiration) as RRSIG fields (32-bit serial time, RFC
    /// 4034 §3.1.5) for a signature made at `now`; `spread` picks the
    /// jitter.
    pub fn window(&self, now: u64, spread: u64) -> (u32, u32) {
        let jitter = spread % (u64::from(self.jitter) + 1);
        let inception = now.saturating_sub(u64::from(self.backdate));
        let expiration = now + u64::from(self.lifetime) - jitter;
        (inception as u32, expiration as u32)
    }
}

/// The fixed fields of an RRSIG, before the signer's name.
pub struct RrsigHeader {
    pub type_covered: u16,
    pub algorithm: u8,
    pub labels: u8,
    pub original_ttl: u32,
    pub expiration: u32,
    pub inception: u32,
    pub key_tag: u16,
}

/// The RDATA of the RRSIG by `signer` over `rrset` (finished), whose
/// zone's apex in wire form is `signer_name`.
pub fn rrsig_rdata(
    header: &RrsigHeader,
    signer_name: &[u8],
    rrset: &RrsetBuf,
    signer: &Signer,
    rng: &dyn SecureRandom,
) -> Result<Vec<u8>, Error> {
    let mut rdata = Vec::with_capacity(18 + signer_name.len() + 64);
    rdata.extend_from_slice(&header.type_covered.to_be_bytes());
    rdata.push(header.algorithm);
    rdata.push(header.labels);
    rdata.extend_from_slice(&header.original_ttl.to_be_bytes());
    rdata.extend_from_slice(&header.expiration.to_be_bytes());
    rdata.extend_from_slice(&header.inception.to_be_bytes());
    rdata.extend_from_slice(&header.key_tag.to_be_bytes());
    rdata.extend_from_slice(signer_name);
    let mut data = Vec::with_capacity(rdata.len() + rrset.canonical().len());
    data.extend_from_slice(&rdata);
    data.extend_from_slice(rrset.canonical());
    let signature = signer.sign(&data, rng)?;
    rdata.extend_from_slice(&signature);
    Ok(rdata)
}

/// The RRSIG type, for writers.
pub const RRSIG: u16 = TYPE_RRSIG;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_is_backdated_and_jittered_within_bounds() {
        let v = Validity::default();
        let now = 1_796_403_600;
        for spread in [0, 1, 86_400, 12_345_678, u64::MAX] {
            let (inception, expiration) = v.window(now, spread);
            assert_eq!(u64::from(inception), now - 3600);
            let left = u64::from(expiration) - now;
            assert!((13 * 86_400..=14 * 86_400).contains(&left), "{left}");
        }
        // Refreshed at a week, the least a validator sees is six days.
        assert!(v.lifetime - v.jitter - v.refresh >= 6 * 86_400);
    }
}
