//! What static records cost a GSLB answer through the whole `respond`
//! (parse → decide → build): the same query on the test model without and
//! with 1,000 static records in its zone, in alternating rounds; the median
//! of the per-round ratios is printed with its range. Then the cost of
//! static answers (an A record, an MX with its additional address, a CNAME
//! to the GSLB domain).
//!
//! `cargo bench -p sextant-dns --bench static_ratio`

#[path = "../tests/common/model.rs"]
mod model;

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Instant;

use sextant_core::records::sort_records;
use sextant_core::{RecordData, Snapshot, StaticRecord};
use sextant_dns::{DnsShared, Transport, Worker, respond};

const PER_ROUND: usize = 200_000;
const ROUNDS: usize = 15;

fn query(name: &str, qtype: u16) -> Vec<u8> {
    let mut m = vec![0xbe, 0xef, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    for label in name.split('.') {
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
    }
    m.extend_from_slice(&[0, (qtype >> 8) as u8, qtype as u8, 0, 1]);
    m
}

fn with_records() -> Snapshot {
    let mut m = model::model();
    for i in 0..1_000u32 {
        m.records.push(StaticRecord {
            name: format!("host{i}.static.example.com"),
            ttl: 300,
            data: RecordData::A(Ipv4Addr::from(0xc000_0200 + i)),
        });
    }
    m.records.push(StaticRecord {
        name: "example.com".into(),
        ttl: 300,
        data: RecordData::Mx {
            preference: 10,
            exchange: "host7.static.example.com".into(),
        },
    });
    m.records.push(StaticRecord {
        name: "web.example.com".into(),
        ttl: 300,
        data: RecordData::Cname("www.example.com".into()),
    });
    sort_records(&mut m.records);
    Snapshot::new(Arc::new(m), 1)
}

fn per_query_ns(shared: &DnsShared, q: &[u8]) -> f64 {
    let mut worker = Worker::new(7);
    let mut out = Vec::with_capacity(65535);
    let source = IpAddr::from([198, 18, 0, 1]);
    assert!(respond(
        shared,
        &mut worker,
        q,
        source,
        Transport::Udp,
        &mut out
    ));
    let start = Instant::now();
    for _ in 0..PER_ROUND {
        respond(
            shared,
            &mut worker,
            black_box(q),
            source,
            Transport::Udp,
            &mut out,
        );
        black_box(out.len());
    }
    start.elapsed().as_nanos() as f64 / PER_ROUND as f64
}

fn main() {
    let plain = DnsShared::new(model::snapshot());
    let zoned = DnsShared::new(with_records());
    println!(
        "{:>16} {:>10} {:>12} {:>8}  range of the per-round ratio",
        "GSLB query", "plain ns", "records ns", "ratio"
    );
    for (label, q) in [
        ("a", query("www.example.com", 1)),
        ("nxdomain", query("nope.example.com", 1)),
    ] {
        let (mut a, mut b, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            let x = per_query_ns(&plain, &q);
            let y = per_query_ns(&zoned, &q);
            a.push(x);
            b.push(y);
            ratio.push(y / x);
        }
        let lo = ratio.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ratio.iter().copied().fold(0.0, f64::max);
        println!(
            "{label:>16} {:>10.1} {:>12.1} {:>8.3}  {lo:.3}-{hi:.3}",
            median(&mut a),
            median(&mut b),
            median(&mut ratio)
        );
    }
    println!("{:>16} {:>10}", "static query", "ns");
    for (label, q) in [
        ("static_a", query("host555.static.example.com", 1)),
        ("mx_additional", query("example.com", 15)),
        ("cname_to_gslb", query("web.example.com", 1)),
    ] {
        let mut v: Vec<f64> = (0..ROUNDS).map(|_| per_query_ns(&zoned, &q)).collect();
        println!("{label:>16} {:>10.1}", median(&mut v));
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
