//! What signing costs on the answer path (docs/dnssec.md): the same
//! queries unsigned (no DO), signed with a warm signature cache, and cold
//! (a name never asked before: its NSEC is signed on the spot), for an
//! ECDSA P-256 and an Ed25519 zone-signing key. The warm/unsigned ratio is
//! the goal (≥ 0.9×); the cold time is one signature's cost.

#[path = "../tests/common/model.rs"]
mod model;

use std::hint::black_box;
use std::net::IpAddr;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use sextant_core::Snapshot;
use sextant_core::dnssec::SignedZone;
use sextant_core::model::ZoneId;
use sextant_dns::{DnsShared, Transport, Worker, respond};
use sextant_dnssec::key::{Algorithm, from_files, generate};

/// A query for `name` (type `qtype`) with an OPT record, DO set or not.
fn query(name: &str, qtype: u16, dnssec_ok: bool) -> Vec<u8> {
    let mut m = vec![0xbe, 0xef, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1];
    for label in name.split('.') {
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
    }
    m.extend_from_slice(&[0, (qtype >> 8) as u8, qtype as u8, 0, 1]);
    m.extend_from_slice(&[
        0,
        0,
        41,
        0x04,
        0xd0,
        0,
        0,
        if dnssec_ok { 0x80 } else { 0 },
        0,
        0,
        0,
    ]);
    m
}

/// The test model with example.com signed by a KSK and a ZSK of `alg`.
fn signed_snapshot(alg: Algorithm) -> Snapshot {
    let rng = ring::rand::SystemRandom::new();
    let unsigned = model::snapshot();
    let mut m = unsigned.model().clone();
    let now = 1_800_000_000;
    let keys = [true, false]
        .into_iter()
        .map(|ksk| {
            let k = generate("example.com", alg, ksk, 3600, now, &rng).expect("generate");
            let mut key = from_files("k", &k.key_file, &k.private_file)
                .expect("read")
                .1;
            // Active whatever the clock says.
            key.timing = Default::default();
            key
        })
        .collect();
    m.dnssec.push(SignedZone {
        zone: ZoneId::new(0),
        keys,
        dnskey_ttl: 3600,
    });
    Snapshot::new(Arc::new(m), 1)
}

fn bench(c: &mut Criterion) {
    let source = IpAddr::from([198, 18, 0, 1]);
    let mut out = Vec::with_capacity(65535);
    for (label, alg) in [
        ("ecdsa", Algorithm::EcdsaP256Sha256),
        ("ed25519", Algorithm::Ed25519),
    ] {
        let shared = DnsShared::new(signed_snapshot(alg));
        let mut worker = Worker::new(7);
        let mut g = c.benchmark_group(format!("signed_{label}"));
        for (name, q) in [
            ("a_unsigned", query("www.example.com", 1, false)),
            ("a_signed_warm", query("www.example.com", 1, true)),
            ("nxdomain_unsigned", query("nope.example.com", 1, false)),
            ("nxdomain_signed_warm", query("nope.example.com", 1, true)),
        ] {
            g.bench_function(name, |b| {
                b.iter(|| {
                    respond(
                        &shared,
                        &mut worker,
                        black_box(&q),
                        source,
                        Transport::Udp,
                        &mut out,
                    );
                    black_box(out.len())
                })
            });
        }
        // Cold: each query a name never asked, so its NSEC is signed.
        let mut n: u64 = 0;
        g.bench_function("nxdomain_signed_cold", |b| {
            b.iter(|| {
                n += 1;
                let q = query(&format!("n{n}.example.com"), 1, true);
                respond(
                    &shared,
                    &mut worker,
                    black_box(&q),
                    source,
                    Transport::Udp,
                    &mut out,
                );
                black_box(out.len())
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
