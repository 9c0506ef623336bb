//! What an RTT answer costs per query against a weighted round-robin one,
//! as a ratio that survives a noisy machine: the two are timed in
//! alternating rounds on the same sources, and the median of the per-round
//! ratios is printed (with its range), beside the median ns of each.
//!
//! `cargo bench -p sextant-core --bench rtt_ratio`
//!
//! Each case is timed twice: query by query, and as the DNS worker runs it
//! (`batched`): a received batch of 32 sources is prefetched
//! (`Snapshot::prefetch_ldns`, for WRR as well, since the worker cannot
//! know the method before parsing) and then answered.
//!
//! Sources: `spread` hits rows far apart (every query a different LDNS,
//! the worst case for the cache), `skewed` has a few resolvers send most
//! queries (log-uniform, about Zipf's law), `one` is a single LDNS.

#![allow(clippy::disallowed_methods)] // a benchmark: it measures time and reads its inputs

mod shape;

use std::hint::black_box;
use std::net::IpAddr;
use std::time::Instant;

use sextant_core::*;
use shape::*;

/// The source of query `i` on a table of `rows` rows.
type SourceOf = fn(u64, u32) -> IpAddr;

/// Decisions per timed round, and rounds per case.
const PER_ROUND: usize = 200_000;
/// The DNS worker's receive batch (`recvmmsg`).
const BATCH: usize = 32;
const ROUNDS: usize = 15;

fn main() {
    let base = rtt_snapshot();
    println!(
        "{:>7} {:>7} {:>8} {:>9} {:>9} {:>8}  range of the per-round ratio",
        "rows", "sources", "mode", "wrr ns", "rtt ns", "rtt/wrr"
    );
    for rows in [1_000u32, 10_000, 100_000] {
        let snap = base.with_rtt(rtt_rows(rows));
        let kinds: [(&str, SourceOf); 3] = [
            ("spread", spread_source),
            ("skewed", skewed_source),
            ("one", |_, rows| spread_source(12_345, rows)),
        ];
        for (label, source) in kinds {
            let sources: Vec<IpAddr> = (0..1 << 16).map(|i| source(i, rows)).collect();
            for (mode, batch) in [("single", 1), ("batched", BATCH)] {
                let (mut wrr, mut rtt, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
                for _ in 0..ROUNDS {
                    let w = per_query_ns(&snap, WRR_NAME, LbMethod::RoundRobin, &sources, batch);
                    let r = per_query_ns(&snap, RTT_NAME, LbMethod::Rtt, &sources, batch);
                    wrr.push(w);
                    rtt.push(r);
                    ratio.push(r / w);
                }
                let (lo, hi) = (shape::min(&ratio), shape::max(&ratio));
                println!(
                    "{rows:>7} {label:>7} {mode:>8} {:>9.1} {:>9.1} {:>8.2}  {lo:.2}-{hi:.2}",
                    shape::median(&mut wrr),
                    shape::median(&mut rtt),
                    shape::median(&mut ratio),
                );
            }
        }
    }
}

/// Mean ns per `decide()` over one round, `batch` queries at a time (each
/// batch's sources prefetched first when `batch` > 1); the first
/// decision's reason is checked, so that RTT is known to decide by itself.
fn per_query_ns(
    snap: &Snapshot,
    name: &str,
    method: LbMethod,
    sources: &[IpAddr],
    batch: usize,
) -> f64 {
    let mut cursor = Cursor::new(1);
    let mut out = AnswerBuf::default();
    let query = |i: usize| Query {
        name: black_box(name),
        qtype: QueryType::A,
        source: sources[i % sources.len()],
        ecs: None,
    };
    let d = decide(
        snap,
        &query(0),
        &mut cursor,
        &NoSessions,
        &mut out,
        &mut NoTrace,
    );
    assert_eq!(d.reason, Reason::Method(method), "{name}");
    let start = Instant::now();
    for first in (0..PER_ROUND).step_by(batch) {
        if batch > 1 {
            for i in first..first + batch {
                snap.prefetch_ldns(sources[i % sources.len()]);
            }
        }
        for i in first..first + batch {
            black_box(decide(
                snap,
                &query(i),
                &mut cursor,
                &NoSessions,
                &mut out,
                &mut NoTrace,
            ));
        }
    }
    start.elapsed().as_nanos() as f64 / PER_ROUND as f64
}
