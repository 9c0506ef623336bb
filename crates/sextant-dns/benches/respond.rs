//! Cost of one `respond` (parse → snapshot load → decide → build), the part
//! of the 620k queries/s/core budget (~1.6 µs) that is ours rather than the
//! kernel's.

#[path = "../tests/common/model.rs"]
mod model;

use std::hint::black_box;
use std::net::IpAddr;

use criterion::{Criterion, criterion_group, criterion_main};
use sextant_dns::{DnsShared, Transport, Worker, respond};

fn query(name: &str, qtype: u16, opt: &[u8]) -> Vec<u8> {
    let mut m = vec![
        0xbe,
        0xef,
        0x01,
        0x00,
        0,
        1,
        0,
        0,
        0,
        0,
        0,
        u8::from(!opt.is_empty()),
    ];
    for label in name.split('.') {
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
    }
    m.extend_from_slice(&[0, (qtype >> 8) as u8, qtype as u8, 0, 1]);
    m.extend_from_slice(opt);
    m
}

fn bench(c: &mut Criterion) {
    let shared = DnsShared::new(model::snapshot());
    let mut worker = Worker::new(7);
    let mut out = Vec::with_capacity(65535);
    let source = IpAddr::from([198, 18, 0, 1]);
    let edns_ecs = [
        0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 11, // OPT, payload 4096, rdlen 11
        0, 8, 0, 7, 0, 1, 24, 0, 198, 51, 100, // ECS 198.51.100.0/24
    ];
    let cases = [
        ("a", query("www.example.com", 1, &[])),
        ("a_mixed_case", query("WWW.Example.COM", 1, &[])),
        ("a_edns_ecs", query("ecs.example.com", 1, &edns_ecs)),
        ("nxdomain", query("nope.example.com", 1, &[])),
        ("refused", query("www.example.org", 1, &[])),
        ("persistence", query("sticky.example.com", 1, &[])),
    ];
    let mut g = c.benchmark_group("respond");
    for (name, q) in &cases {
        g.bench_function(*name, |b| {
            b.iter(|| {
                respond(
                    &shared,
                    &mut worker,
                    black_box(q),
                    source,
                    Transport::Udp,
                    &mut out,
                );
                black_box(out.len())
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
