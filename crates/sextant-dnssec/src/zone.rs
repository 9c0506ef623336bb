//! One signed zone's keys, ready to sign: which key signs what at a given
//! time, and the apex RRsets DNSSEC adds (DNSKEY, CDS, CDNSKEY).
//!
//! Each key's timing (publish, activate, inactive, delete, sync-publish,
//! sync-delete) comes from its key file or the configuration, so a
//! rollover is a matter of times: a zone-signing key published before it
//! signs (pre-publication), a key-signing key signing the DNSKEY RRset
//! beside the old one until the parent's DS changes (double signature).

use sextant_core::dnssec::{KeyTiming, SignedZone};

use crate::key::{Signer, dnskey_rdata, key_tag};
use crate::{Error, TYPE_CDNSKEY, TYPE_CDS, TYPE_DNSKEY, ds, name};

/// A key of a signed zone, with its signer.
#[derive(Debug)]
pub struct LoadedKey {
    pub name: String,
    pub tag: u16,
    pub algorithm: u8,
    pub ksk: bool,
    /// The DNSKEY RDATA.
    pub dnskey: Vec<u8>,
    /// The CDS RDATA (its DS with SHA-256).
    pub cds: Vec<u8>,
    pub timing: KeyTiming,
    pub signer: Signer,
}

/// A signed zone's keys.
#[derive(Debug)]
pub struct ZoneSigner {
    /// The apex, dotted, lower case.
    pub apex: String,
    /// The apex in wire form: the RRSIGs' signer name.
    pub apex_wire: Vec<u8>,
    pub keys: Vec<LoadedKey>,
    /// Only one kind of key: each signs everything (CSK).
    single_kind: bool,
    pub dnskey_ttl: u32,
}

impl ZoneSigner {
    pub fn new(zone: &SignedZone, apex: &str) -> Result<ZoneSigner, Error> {
        let keys = zone
            .keys
            .iter()
            .map(|k| {
                let dnskey = dnskey_rdata(k.flags, k.algorithm, &k.public_key);
                Ok(LoadedKey {
                    name: k.name.clone(),
                    tag: key_tag(&dnskey),
                    algorithm: k.algorithm,
                    ksk: k.is_ksk(),
                    cds: ds::rdata(apex, &dnskey, ds::DIGEST_SHA256)?,
                    dnskey,
                    timing: k.timing,
                    signer: Signer::new(k)?,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(ZoneSigner {
            apex: apex.to_string(),
            apex_wire: name::wire(apex)?,
            keys,
            single_kind: zone.single_kind(),
            dnskey_ttl: zone.dnskey_ttl,
        })
    }

    /// Whether `key` signs RRsets of type `rtype` (when active): key-signing
    /// keys the apex's key RRsets, zone-signing keys everything else; a
    /// zone with one kind of key signs everything with it.
    pub fn signs(&self, key: &LoadedKey, rtype: u16) -> bool {
        self.single_kind || key.ksk == matches!(rtype, TYPE_DNSKEY | TYPE_CDS | TYPE_CDNSKEY)
    }

    /// The keys that sign an RRset of `rtype` at `now` (their indexes).
    pub fn signing(&self, rtype: u16, now: u64) -> impl Iterator<Item = usize> + '_ {
        self.keys
            .iter()
            .enumerate()
            .filter(move |(_, k)| k.timing.active(now) && self.signs(k, rtype))
            .map(|(i, _)| i)
    }

    /// The DNSKEY RRset at `now`: every published key.
    pub fn dnskeys(&self, now: u64) -> impl Iterator<Item = &[u8]> {
        self.keys
            .iter()
            .filter(move |k| k.timing.published(now))
            .map(|k| k.dnskey.as_slice())
    }

    /// The CDS RRset at `now`: the key-signing keys whose sync time has
    /// come (RFC 7344), for parents that read them.
    pub fn cds(&self, now: u64) -> impl Iterator<Item = &[u8]> {
        self.synced(now).map(|k| k.cds.as_slice())
    }

    /// The CDNSKEY RRset at `now`.
    pub fn cdnskeys(&self, now: u64) -> impl Iterator<Item = &[u8]> {
        self.synced(now).map(|k| k.dnskey.as_slice())
    }

    fn synced(&self, now: u64) -> impl Iterator<Item = &LoadedKey> {
        self.keys
            .iter()
            .filter(move |k| (k.ksk || self.single_kind) && k.timing.synced(now))
    }

    /// Whether the zone has CDS/CDNSKEY records at `now`.
    pub fn has_cds(&self, now: u64) -> bool {
        self.synced(now).next().is_some()
    }
}

/// What is wrong with a signed zone's keys at `now`, in words for the
/// operator: RRsets no active key signs (a validator would find them
/// bogus), published keys none of which is active. Empty when the zone
/// signs everything.
pub fn signing_gaps(zone: &ZoneSigner, now: u64) -> Vec<String> {
    let mut gaps = Vec::new();
    let when = |t: Option<u64>| t.map(crate::time::format);
    let next = |ksk: bool| {
        zone.keys
            .iter()
            .filter(|k| k.ksk == ksk || zone.single_kind)
            .filter_map(|k| k.timing.activate.filter(|t| *t > now))
            .min()
    };
    if zone.signing(TYPE_DNSKEY, now).next().is_none() {
        gaps.push(format!(
            "zone {}: no key signs its DNSKEY RRset now{}: validating resolvers will find the zone bogus",
            zone.apex,
            when(next(true)).map(|t| format!(" (the first activates at {t} UTC)")).unwrap_or_default()
        ));
    }
    if zone
        .signing(sextant_core::records::TYPE_A, now)
        .next()
        .is_none()
    {
        gaps.push(format!(
            "zone {}: no key signs its records now{}: validating resolvers will find its answers bogus",
            zone.apex,
            when(next(false)).map(|t| format!(" (the first activates at {t} UTC)")).unwrap_or_default()
        ));
    }
    gaps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{Algorithm, from_files, generate};
    use sextant_core::model::ZoneId;

    #[test]
    fn a_zone_whose_keys_are_not_active_yet_is_reported() {
        let rng = ring::rand::SystemRandom::new();
        let now = 1_800_000_000;
        let keys = [true, false]
            .into_iter()
            .map(|ksk| {
                let k =
                    generate("example.com", Algorithm::Ed25519, ksk, 3600, now + 60, &rng).unwrap();
                from_files("k", &k.key_file, &k.private_file).unwrap().1
            })
            .collect();
        let signed = SignedZone {
            zone: ZoneId::new(0),
            keys,
            dnskey_ttl: 3600,
        };
        let z = ZoneSigner::new(&signed, "example.com").unwrap();
        let gaps = signing_gaps(&z, now);
        assert_eq!(gaps.len(), 2, "{gaps:?}");
        assert!(gaps[0].contains("activates at 20270115080100"), "{gaps:?}");
        assert!(signing_gaps(&z, now + 60).is_empty());
    }
}
