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
    protections(c);
}

/// The same plain A query with rate limiting on (every query passes: the
/// source cycles over 65,536 /24s, so each bucket sees one query in 65,536)
/// and with a valid DNS cookie (checked and renewed on every query).
fn protections(c: &mut Criterion) {
    let settings = sextant_core::RrlSettings {
        responses_per_second: 1_000_000,
        slip: 2,
        ipv4_prefix: 24,
        ipv6_prefix: 56,
        exempt: Vec::new(),
        table_size: 65536,
    };
    let mut m = model::model();
    m.dns.rrl = Some(settings.clone());
    m.dns.cookies = Some(sextant_core::CookieSettings {
        secret_rotation: std::time::Duration::from_secs(3600),
    });
    let shared = DnsShared::new(sextant_core::Snapshot::new(std::sync::Arc::new(m), 1));
    shared.set_rate_limiter(Some(&settings));
    let mut worker = Worker::new(7);
    let mut out = Vec::with_capacity(65535);
    let mut g = c.benchmark_group("respond_protected");
    let plain = query("www.example.com", 1, &[]);
    let mut i = 0u32;
    g.bench_function("a_rrl_on", |b| {
        b.iter(|| {
            i = i.wrapping_add(1);
            let source = IpAddr::from((0x0a00_0000 | ((i & 0xffff) << 8)).to_be_bytes());
            respond(
                &shared,
                &mut worker,
                black_box(&plain),
                source,
                Transport::Udp,
                &mut out,
            );
            black_box(out.len())
        })
    });
    // Learn a server cookie, then send it on every query (valid: exempt).
    let source = IpAddr::from([198, 18, 0, 1]);
    let first = query(
        "www.example.com",
        1,
        &[
            0, 0, 41, 4, 0xd0, 0, 0, 0, 0, 0, 12, 0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8,
        ],
    );
    respond(
        &shared,
        &mut worker,
        &first,
        source,
        Transport::Udp,
        &mut out,
    );
    let at = out.len() - 24;
    let mut opt = vec![0, 0, 41, 4, 0xd0, 0, 0, 0, 0, 0, 28, 0, 10, 0, 24];
    opt.extend_from_slice(&out[at..]);
    let with_cookie = query("www.example.com", 1, &opt);
    g.bench_function("a_valid_cookie", |b| {
        b.iter(|| {
            respond(
                &shared,
                &mut worker,
                black_box(&with_cookie),
                source,
                Transport::Udp,
                &mut out,
            );
            black_box(out.len())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
