//! A signature cache miss, the two ways a DNS thread can meet it (issue 30:
//! "sign on a miss, or hand the signing to a signer and answer when
//! ready"): signing on the spot, or handing the RRset to a signing thread
//! and taking the signature back. Both make one real ECDSA P-256 RRSIG per
//! iteration (a new RRset each time); the difference is the hand-over.
//! docs/dnssec.md ("What it costs") says what was chosen from this.

use std::hint::black_box;
use std::net::Ipv4Addr;
use std::sync::mpsc;

use criterion::{Criterion, criterion_group, criterion_main};
use sextant_core::dnssec::SignedZone;
use sextant_core::model::ZoneId;
use sextant_dnssec::key::{Algorithm, from_files, generate};
use sextant_dnssec::{RrsetBuf, SignatureCache, Validity, ZoneSigner};

const NOW: u64 = 1_800_000_000;

fn zone() -> ZoneSigner {
    let rng = ring::rand::SystemRandom::new();
    let k = generate(
        "example.com",
        Algorithm::EcdsaP256Sha256,
        false,
        3600,
        0,
        &rng,
    )
    .expect("generate");
    let (_, key, _) = from_files("zsk", &k.key_file, &k.private_file).expect("read back");
    let signed = SignedZone {
        zone: ZoneId::new(0),
        keys: vec![key],
        dnskey_ttl: 3600,
    };
    ZoneSigner::new(&signed, "example.com").expect("signer")
}

/// A new RRset each call: `nN.example.com A 192.0.2.1`.
fn rrset(n: u64) -> RrsetBuf {
    let mut set = RrsetBuf::default();
    set.start(&format!("n{n}.example.com"), 1, 30)
        .expect("name");
    set.push_addr(Ipv4Addr::new(192, 0, 2, 1).into());
    set.finish();
    set
}

// The signing thread is what is measured: a benchmark may start one.
#[allow(clippy::disallowed_methods)]
fn bench(c: &mut Criterion) {
    let rng = ring::rand::SystemRandom::new();
    let mut g = c.benchmark_group("cache_miss");
    let z = zone();
    let mut cache = SignatureCache::new(1024, Validity::default());
    let mut n = 0;
    g.bench_function("sign_inline", |b| {
        b.iter(|| {
            n += 1;
            let set = rrset(n);
            black_box(cache.rrsig(&z, 0, &set, NOW, &rng).expect("sign").len())
        })
    });

    // A signing thread with its own cache: the DNS thread sends the RRset
    // and waits for the signature.
    type Request = (RrsetBuf, mpsc::Sender<Vec<u8>>);
    let (to_signer, requests) = mpsc::channel::<Request>();
    let signer = std::thread::spawn(move || {
        let z = zone();
        let rng = ring::rand::SystemRandom::new();
        let mut cache = SignatureCache::new(1024, Validity::default());
        for (set, reply) in requests {
            let sig = cache.rrsig(&z, 0, &set, NOW, &rng).expect("sign").to_vec();
            if reply.send(sig).is_err() {
                return;
            }
        }
    });
    g.bench_function("hand_to_signer", |b| {
        b.iter(|| {
            n += 1;
            let (reply, answer) = mpsc::channel();
            to_signer.send((rrset(n), reply)).expect("signer alive");
            black_box(answer.recv().expect("signature").len())
        })
    });
    g.finish();
    drop(to_signer);
    let _ = signer.join();
}

criterion_group!(benches, bench);
criterion_main!(benches);
