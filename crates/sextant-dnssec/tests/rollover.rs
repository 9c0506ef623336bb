//! Key rollovers in simulated time, driven by the keys' times as the
//! configuration gives them (docs/dnssec.md): a zone-signing key rolled by
//! pre-publication, a key-signing key by double signature. At every step
//! (each minute of the timeline) a validator that may hold anything it
//! could have cached — a DNSKEY RRset fetched up to its TTL ago, a DS set
//! from the parent up to its TTL ago — must still validate a fresh answer
//! and the DNSKEY RRset: the signatures are made and verified for real.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};
use sextant_core::dnssec::{KeyTiming, SignedZone, ZoneKey};
use sextant_core::model::ZoneId;
use sextant_dnssec::key::{Algorithm, from_files, generate};
use sextant_dnssec::{RrsetBuf, SignatureCache, TYPE_DNSKEY, Validity, ZoneSigner, ds};

const T0: u64 = 1_800_000_000;
const HOUR: u64 = 3600;
const DNSKEY_TTL: u32 = 3600;
const ANSWER_TTL: u32 = 300;
const DS_TTL: u64 = 86_400;

fn key(ksk: bool, timing: KeyTiming) -> ZoneKey {
    let rng = ring::rand::SystemRandom::new();
    let k = generate(
        "example.com",
        Algorithm::EcdsaP256Sha256,
        ksk,
        DNSKEY_TTL,
        T0,
        &rng,
    )
    .expect("generate");
    let (_, mut key, _) = from_files("k", &k.key_file, &k.private_file).expect("read back");
    key.timing = timing;
    key
}

fn zone(keys: Vec<ZoneKey>) -> ZoneSigner {
    let signed = SignedZone {
        zone: ZoneId::new(0),
        keys,
        dnskey_ttl: DNSKEY_TTL,
    };
    ZoneSigner::new(&signed, "example.com").expect("signer")
}

/// The DNSKEY RDATAs published at `t`.
fn dnskeys(z: &ZoneSigner, t: u64) -> BTreeSet<Vec<u8>> {
    z.dnskeys(t).map(<[u8]>::to_vec).collect()
}

/// Each RRSIG of the RRset `set` (finished) made at `t`.
fn rrsigs(z: &ZoneSigner, cache: &mut SignatureCache, set: &RrsetBuf, t: u64) -> Vec<Vec<u8>> {
    let rng = ring::rand::SystemRandom::new();
    z.signing(set.rtype(), t)
        .map(|k| cache.rrsig(z, k, set, t, &rng).expect("sign").to_vec())
        .collect()
}

/// Whether one of `rrsigs` over `set` verifies with one of `keys` (DNSKEY
/// RDATAs), as a validator checks it (RFC 4035 §5.3).
fn validates(
    keys: &BTreeSet<Vec<u8>>,
    set: &RrsetBuf,
    rrsigs: &[Vec<u8>],
    signer_len: usize,
) -> bool {
    rrsigs.iter().any(|rrsig| {
        let tag = u16::from_be_bytes([rrsig[16], rrsig[17]]);
        let sig_at = 18 + signer_len;
        keys.iter()
            .filter(|k| sextant_dnssec::key::key_tag(k) == tag)
            .any(|k| {
                let mut public = vec![4];
                public.extend_from_slice(&k[4..]);
                let mut data = rrsig[..sig_at].to_vec();
                data.extend_from_slice(set.canonical());
                UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &public)
                    .verify(&data, &rrsig[sig_at..])
                    .is_ok()
            })
    })
}

fn answer() -> RrsetBuf {
    let mut set = RrsetBuf::default();
    set.start("app.example.com", 1, ANSWER_TTL).unwrap();
    set.push_addr(Ipv4Addr::new(192, 0, 2, 1).into());
    set.finish();
    set
}

fn dnskey_set(z: &ZoneSigner, t: u64) -> RrsetBuf {
    let mut set = RrsetBuf::default();
    set.start("example.com", TYPE_DNSKEY, DNSKEY_TTL).unwrap();
    for k in z.dnskeys(t) {
        set.push_raw(k);
    }
    set.finish();
    set
}

/// ZSK pre-publication: the new ZSK is published an hour (the DNSKEY TTL)
/// before it signs; the old one stops signing then and leaves once no
/// cached answer can carry its signature.
#[test]
fn zsk_prepublication_keeps_every_answer_valid() {
    let publish = T0 + 10 * HOUR;
    let switch = publish + HOUR;
    let delete = switch + HOUR;
    let z = zone(vec![
        key(true, KeyTiming::default()),
        key(
            false,
            KeyTiming {
                inactive: Some(switch),
                delete: Some(delete),
                ..Default::default()
            },
        ),
        key(
            false,
            KeyTiming {
                publish: Some(publish),
                activate: Some(switch),
                ..Default::default()
            },
        ),
    ]);
    let mut cache = SignatureCache::new(64, Validity::default());
    let signer_len = z.apex_wire.len();
    let set = answer();
    let mut seen_signers = BTreeSet::new();
    let mut t = T0 + 9 * HOUR;
    while t < delete + 2 * HOUR {
        let sigs = rrsigs(&z, &mut cache, &set, t);
        assert_eq!(sigs.len(), 1, "one ZSK signs at {t}");
        seen_signers.insert(u16::from_be_bytes([sigs[0][16], sigs[0][17]]));
        // Any DNSKEY RRset cached since t - TTL validates the answer.
        for back in (0..=u64::from(DNSKEY_TTL)).step_by(60) {
            let cached = dnskeys(&z, t - back);
            assert!(
                validates(&cached, &set, &sigs, signer_len),
                "an answer at {} does not validate with the DNSKEY RRset cached at {}",
                t - T0,
                t - back - T0
            );
        }
        // A signature cached up to its TTL ago still finds its key.
        if t >= T0 + 9 * HOUR + u64::from(ANSWER_TTL) {
            let old = rrsigs(&z, &mut cache, &set, t - u64::from(ANSWER_TTL));
            assert!(
                validates(&dnskeys(&z, t), &set, &old, signer_len),
                "at {}",
                t - T0
            );
        }
        t += 60;
    }
    assert_eq!(seen_signers.len(), 2, "the rollover happened");
    assert_eq!(dnskeys(&z, delete).len(), 2, "the old ZSK is gone");
}

/// KSK double signature: the new KSK signs the DNSKEY RRset beside the old
/// one; CDS moves to it; the parent's DS changes (a day's TTL); the old
/// KSK leaves once no cached DS names only it.
#[test]
fn ksk_double_signature_keeps_the_chain_valid() {
    let introduce = T0 + 10 * HOUR;
    let parent_switch = introduce + 2 * HOUR;
    let retire = parent_switch + DS_TTL;
    let z = zone(vec![
        key(
            true,
            KeyTiming {
                delete: Some(retire),
                sync_publish: Some(T0),
                sync_delete: Some(introduce),
                ..Default::default()
            },
        ),
        key(
            true,
            KeyTiming {
                publish: Some(introduce),
                activate: Some(introduce),
                sync_publish: Some(introduce),
                ..Default::default()
            },
        ),
        key(false, KeyTiming::default()),
    ]);
    let old_ds = ds::rdata("example.com", &z.keys[0].dnskey, 2).unwrap();
    let new_ds = ds::rdata("example.com", &z.keys[1].dnskey, 2).unwrap();
    // The parent's DS at time t (it follows CDS at `parent_switch`).
    let parent = |t: u64| if t < parent_switch { &old_ds } else { &new_ds };
    let mut cache = SignatureCache::new(64, Validity::default());
    let signer_len = z.apex_wire.len();
    let mut t = T0 + 9 * HOUR;
    while t < retire + 2 * HOUR {
        let set = dnskey_set(&z, t);
        let sigs = rrsigs(&z, &mut cache, &set, t);
        // Whatever DS the validator holds (fetched up to a DS TTL ago),
        // a KSK it names signs the DNSKEY RRset.
        for back in (0..=DS_TTL).step_by(1800) {
            let held = parent(t.saturating_sub(back));
            let trusted: BTreeSet<Vec<u8>> = z
                .dnskeys(t)
                .filter(|k| ds::rdata("example.com", k, 2).unwrap() == *held)
                .map(<[u8]>::to_vec)
                .collect();
            assert!(
                validates(&trusted, &set, &sigs, signer_len),
                "at +{}s the DNSKEY RRset is not signed by a key of the DS cached at +{}s",
                t - T0,
                t.saturating_sub(back) - T0
            );
        }
        // CDS names the key the parent should have.
        let cds: Vec<&[u8]> = z.cds(t).collect();
        let want = if t < introduce { &old_ds } else { &new_ds };
        assert_eq!(cds, vec![want.as_slice()], "CDS at +{}s", t - T0);
        t += 1800;
    }
    assert_eq!(
        z.signing(TYPE_DNSKEY, introduce).count(),
        2,
        "double signature"
    );
    assert_eq!(
        z.signing(TYPE_DNSKEY, retire).count(),
        1,
        "the old KSK is retired"
    );
}
