//! What static records cost the GSLB hot path: the same GSLB queries on the
//! benchmark configuration (10,000 domains, 100,000 services) without and
//! with 1,000 static records (and their empty non-terminals) in the zone,
//! timed in alternating rounds; the median of the per-round ratios is
//! printed with its range, beside the median ns of each. Then the cost of
//! the static answers themselves.
//!
//! `cargo bench -p sextant-core --bench static_ratio`

#![allow(clippy::disallowed_methods)] // a benchmark: it measures time and reads its inputs

mod shape;

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Instant;

use sextant_core::records::sort_records;
use sextant_core::*;
use shape::*;

const PER_ROUND: usize = 200_000;
const ROUNDS: usize = 15;

/// 1,000 static records: A records of `hostN.static.example.com`, every
/// tenth a CNAME to a GSLB domain, and SRV names with empty non-terminals.
fn with_records(mut m: Model) -> Model {
    for i in 0..1_000u32 {
        let data = match i % 10 {
            0 => RecordData::Cname(format!("app{i}.example.com")),
            1 => RecordData::Srv {
                priority: 1,
                weight: 1,
                port: 5060,
                target: format!("host{i}.static.example.com"),
            },
            _ => RecordData::A(Ipv4Addr::from(0xc000_0200 + i)),
        };
        let name = match i % 10 {
            0 => format!("alias{i}.example.com"),
            1 => format!("_sip._tcp.svc{i}.example.com"),
            _ => format!("host{i}.static.example.com"),
        };
        m.records.push(StaticRecord {
            name,
            ttl: 300,
            data,
        });
    }
    sort_records(&mut m.records);
    m
}

fn main() {
    let plain = health(Snapshot::new(Arc::new(big_model(10_000, 10)), 1));
    let zoned = health(Snapshot::new(
        Arc::new(with_records(big_model(10_000, 10))),
        1,
    ));
    println!("names in the static table: {}", zoned.records().len());
    println!(
        "{:>22} {:>12} {:>12} {:>8}  range of the per-round ratio",
        "GSLB query", "plain ns", "records ns", "ratio"
    );
    for (label, name, qtype) in [
        ("round_robin_A", "app1234.example.com", QueryType::A),
        ("round_robin_AAAA", "app1234.example.com", QueryType::Aaaa),
        ("nxdomain", "nothing.example.com", QueryType::A),
    ] {
        let (mut a, mut b, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            let x = per_query_ns(&plain, name, qtype);
            let y = per_query_ns(&zoned, name, qtype);
            a.push(x);
            b.push(y);
            ratio.push(y / x);
        }
        let (lo, hi) = (shape::min(&ratio), shape::max(&ratio));
        println!(
            "{label:>22} {:>12.1} {:>12.1} {:>8.3}  {lo:.3}-{hi:.3}",
            shape::median(&mut a),
            shape::median(&mut b),
            shape::median(&mut ratio)
        );
    }
    println!("{:>22} {:>12}", "static query", "ns");
    for (label, name, qtype) in [
        ("static_A", "host555.static.example.com", QueryType::A),
        ("cname_to_gslb_A", "alias500.example.com", QueryType::A),
        (
            "empty_non_terminal",
            "_tcp.svc501.example.com",
            QueryType::A,
        ),
        (
            "static_nodata",
            "host555.static.example.com",
            QueryType::Aaaa,
        ),
    ] {
        let mut v: Vec<f64> = (0..ROUNDS)
            .map(|_| per_query_ns(&zoned, name, qtype))
            .collect();
        println!("{label:>22} {:>12.1}", shape::median(&mut v));
    }
}

/// Mean ns per `decide()` over one round.
fn per_query_ns(snap: &Snapshot, name: &str, qtype: QueryType) -> f64 {
    let mut cursor = Cursor::new(1);
    let mut out = AnswerBuf::default();
    let source = IpAddr::from([198, 51, 100, 7]);
    let start = Instant::now();
    for _ in 0..PER_ROUND {
        let q = Query {
            name: black_box(name),
            qtype,
            source,
            ecs: None,
        };
        black_box(decide(
            snap,
            &q,
            &mut cursor,
            &NoSessions,
            &mut out,
            &mut NoTrace,
        ));
    }
    start.elapsed().as_nanos() as f64 / PER_ROUND as f64
}
