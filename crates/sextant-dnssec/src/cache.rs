//! The signature cache: each RRSIG made is kept, keyed by what it covers
//! (the key, and the RRset's canonical bytes), and reused until it is
//! [`Validity::refresh`] old. Bounded: past its capacity the oldest entry
//! goes (first in, first out), so a flood of distinct names (negative
//! answers are signed per name) cannot grow it.
//!
//! One cache per DNS thread: no lock, no thread waits for another's
//! signature. A miss signs on the spot (tens of microseconds); see
//! docs/dnssec.md for the measurement that chose this.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use ring::rand::SecureRandom;

use crate::Error;
use crate::rrset::RrsetBuf;
use crate::sign::{RrsigHeader, Validity, rrsig_rdata};
use crate::zone::ZoneSigner;

/// A signature kept, and what it covers.
#[derive(Debug)]
struct Entry {
    /// Key tag, algorithm, signer name, then the canonical RRset.
    covers: Box<[u8]>,
    rrsig: Box<[u8]>,
    signed_at: u64,
}

/// Hits and misses since start.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheCounters {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
}

/// RRSIGs by what they cover.
#[derive(Debug)]
pub struct SignatureCache {
    entries: HashMap<u64, Entry, BuildHasherDefault<IdentityHasher>>,
    order: VecDeque<u64>,
    capacity: usize,
    pub validity: Validity,
    pub counters: CacheCounters,
}

impl SignatureCache {
    pub fn new(capacity: usize, validity: Validity) -> SignatureCache {
        SignatureCache {
            entries: HashMap::default(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
            validity,
            counters: CacheCounters::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The RDATA of the RRSIG by key `key` of `zone` over `rrset`
    /// (finished) at `now`: from the cache, or made and kept.
    pub fn rrsig(
        &mut self,
        zone: &ZoneSigner,
        key: usize,
        rrset: &RrsetBuf,
        now: u64,
        rng: &dyn SecureRandom,
    ) -> Result<&[u8], Error> {
        let k = zone.keys.get(key).ok_or(Error::Sign)?;
        let head = [(k.tag >> 8) as u8, k.tag as u8, k.algorithm];
        let mut h = RrsetHasher::default();
        h.write(&head);
        h.write(&zone.apex_wire);
        h.write(rrset.canonical());
        let hash = h.finish();
        let covers = |e: &Entry| {
            let c = &e.covers;
            c.len() == 3 + zone.apex_wire.len() + rrset.canonical().len()
                && c[..3] == head
                && c[3..3 + zone.apex_wire.len()] == zone.apex_wire[..]
                && c[3 + zone.apex_wire.len()..] == *rrset.canonical()
        };
        let fresh =
            |e: &Entry| e.signed_at <= now && now - e.signed_at < u64::from(self.validity.refresh);
        let hit = self
            .entries
            .get(&hash)
            .is_some_and(|e| covers(e) && fresh(e));
        if !hit {
            self.counters.misses += 1;
            let (inception, expiration) = self.validity.window(now, hash);
            let header = RrsigHeader {
                type_covered: rrset.rtype(),
                algorithm: k.algorithm,
                labels: rrset.owner_labels(),
                original_ttl: rrset.ttl(),
                expiration,
                inception,
                key_tag: k.tag,
            };
            let rrsig = rrsig_rdata(&header, &zone.apex_wire, rrset, &k.signer, rng)?;
            let mut c = Vec::with_capacity(3 + zone.apex_wire.len() + rrset.canonical().len());
            c.extend_from_slice(&head);
            c.extend_from_slice(&zone.apex_wire);
            c.extend_from_slice(rrset.canonical());
            let entry = Entry {
                covers: c.into_boxed_slice(),
                rrsig: rrsig.into_boxed_slice(),
                signed_at: now,
            };
            if self.entries.insert(hash, entry).is_none() {
                self.order.push_back(hash);
                while self.entries.len() > self.capacity {
                    let Some(old) = self.order.pop_front() else {
                        break;
                    };
                    if self.entries.remove(&old).is_some() {
                        self.counters.evictions += 1;
                    }
                }
            }
        } else {
            self.counters.hits += 1;
        }
        self.entries
            .get(&hash)
            .map(|e| &*e.rrsig)
            .ok_or(Error::Sign)
    }
}

/// The cache key of an RRset: eight bytes at a time, multiply and rotate
/// (FxHash's step). Not a defence against chosen collisions, and it need
/// not be: a hit is only taken when the whole RRset compares equal, so a
/// collision costs one signature, never a wrong one.
#[derive(Debug, Clone, Copy)]
struct RrsetHasher(u64);

impl Default for RrsetHasher {
    fn default() -> Self {
        RrsetHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl RrsetHasher {
    const K: u64 = 0x517c_c1b7_2722_0a95;

    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::K);
    }
}

impl Hasher for RrsetHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 56));
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The map's hasher: its keys are hashes already.
#[derive(Debug, Default, Clone, Copy)]
struct IdentityHasher(u64);

impl Hasher for IdentityHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{Algorithm, from_files, generate};
    use ring::signature::{
        ECDSA_P256_SHA256_FIXED, ED25519, UnparsedPublicKey, VerificationAlgorithm,
    };
    use sextant_core::dnssec::SignedZone;
    use sextant_core::model::ZoneId;
    use std::net::Ipv4Addr;

    const NOW: u64 = 1_796_403_600;

    fn zone(alg: Algorithm) -> ZoneSigner {
        let rng = ring::rand::SystemRandom::new();
        let k = generate("example.com", alg, false, 3600, NOW - 60, &rng).unwrap();
        let (_, key, _) = from_files("zsk", &k.key_file, &k.private_file).unwrap();
        let signed = SignedZone {
            zone: ZoneId::new(0),
            keys: vec![key],
            dnskey_ttl: 3600,
        };
        ZoneSigner::new(&signed, "example.com").unwrap()
    }

    fn rrset(last: u8) -> RrsetBuf {
        let mut b = RrsetBuf::default();
        b.start("app.example.com", 1, 30).unwrap();
        b.push_addr(Ipv4Addr::new(192, 0, 2, last).into());
        b.finish();
        b
    }

    /// The signature verifies over RFC 4034 §3.1.8.1's data: the RRSIG
    /// RDATA without the signature, then the canonical RRset.
    fn verifies(
        alg: &'static dyn VerificationAlgorithm,
        zone: &ZoneSigner,
        rrsig: &[u8],
        set: &RrsetBuf,
    ) -> bool {
        let sig_at = 18 + zone.apex_wire.len();
        let mut data = rrsig[..sig_at].to_vec();
        data.extend_from_slice(set.canonical());
        let mut public = zone.keys[0].dnskey[4..].to_vec();
        if zone.keys[0].algorithm == 13 {
            public.insert(0, 4);
        }
        UnparsedPublicKey::new(alg, &public)
            .verify(&data, &rrsig[sig_at..])
            .is_ok()
    }

    #[test]
    fn signs_once_then_hits_and_signatures_verify() {
        let rng = ring::rand::SystemRandom::new();
        for (alg, verify) in [
            (
                Algorithm::EcdsaP256Sha256,
                &ECDSA_P256_SHA256_FIXED as &'static dyn VerificationAlgorithm,
            ),
            (Algorithm::Ed25519, &ED25519),
        ] {
            let z = zone(alg);
            let mut cache = SignatureCache::new(8, Validity::default());
            let set = rrset(1);
            let first = cache.rrsig(&z, 0, &set, NOW, &rng).unwrap().to_vec();
            assert!(verifies(verify, &z, &first, &set));
            assert_eq!(&first[..2], &[0, 1], "type covered A");
            assert_eq!(first[3], 3, "labels of app.example.com");
            let again = cache.rrsig(&z, 0, &set, NOW + 60, &rng).unwrap().to_vec();
            assert_eq!(first, again, "the cached signature is reused");
            assert_eq!(
                cache.counters,
                CacheCounters {
                    hits: 1,
                    misses: 1,
                    evictions: 0
                }
            );
            // A week on it is made again, with a new window.
            let later = cache
                .rrsig(&z, 0, &set, NOW + 7 * 86_400, &rng)
                .unwrap()
                .to_vec();
            assert_ne!(first[8..12], later[8..12], "a new inception");
            assert!(verifies(verify, &z, &later, &set));
            // Another answer is another RRset.
            let other = rrset(2);
            let sig = cache.rrsig(&z, 0, &other, NOW, &rng).unwrap().to_vec();
            assert!(verifies(verify, &z, &sig, &other));
            assert!(
                !verifies(verify, &z, &sig, &set),
                "a signature covers its own RRset only"
            );
        }
    }

    #[test]
    fn bounded_first_in_first_out() {
        let rng = ring::rand::SystemRandom::new();
        let z = zone(Algorithm::Ed25519);
        let mut cache = SignatureCache::new(4, Validity::default());
        for last in 0..20 {
            cache.rrsig(&z, 0, &rrset(last), NOW, &rng).unwrap();
        }
        assert_eq!(cache.len(), 4);
        assert_eq!(cache.counters.evictions, 16);
        cache.rrsig(&z, 0, &rrset(19), NOW, &rng).unwrap();
        assert_eq!(cache.counters.hits, 1, "the newest is still there");
        cache.rrsig(&z, 0, &rrset(0), NOW, &rng).unwrap();
        assert_eq!(cache.counters.misses, 21, "the oldest went");
    }
}
