//! Location database at scale: 1M random non-overlapping IPv4 ranges (with
//! gaps between them) plus 100k IPv6 ranges, 50k distinct places. Measures
//! one lookup; prints the build time, the range count and the memory once.

#![allow(clippy::disallowed_methods)] // a benchmark: it measures time and reads its inputs

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sextant_core::{LocationDb, PlaceId, Source};

mod scale_locations;

use scale_locations::{Rng, places};

const V4_RANGES: u64 = 1_000_000;
const V6_RANGES: u64 = 100_000;
const PLACES: u64 = 50_000;
const PROBES: usize = 1 << 16;

fn build(rng: &mut Rng) -> LocationDb {
    let places = places(PLACES);
    let mut b = LocationDb::builder();
    // Slot k of the IPv4 space holds one range starting and ending at random
    // points inside it, so ranges never overlap and gaps separate them.
    let slot = (1u64 << 32) / V4_RANGES;
    for k in 0..V4_RANGES {
        let base = k * slot;
        let start = base + rng.next() % (slot / 2);
        let end = start + rng.next() % (slot / 2);
        let place = places[(rng.next() % PLACES) as usize].clone();
        b.add(
            IpAddr::V4(Ipv4Addr::from(start as u32)),
            IpAddr::V4(Ipv4Addr::from(end as u32)),
            place,
            Source::File,
        )
        .expect("valid range");
    }
    // IPv6: /48s scattered over 2000::/8.
    for _ in 0..V6_RANGES {
        let start = (0x20u128 << 120) | (u128::from(rng.next() & 0xff_ffff_ffff) << 80);
        let end = start | ((1u128 << 80) - 1);
        let place = places[(rng.next() % PLACES) as usize].clone();
        b.add(
            IpAddr::V6(Ipv6Addr::from(start)),
            IpAddr::V6(Ipv6Addr::from(end)),
            place,
            Source::File,
        )
        .expect("valid range");
    }
    b.build()
}

fn lookups(c: &mut Criterion) {
    let mut rng = Rng(42);
    let t = Instant::now();
    let db = build(&mut rng);
    let built = t.elapsed();
    let mem = db.memory_bytes();
    eprintln!(
        "location db: {} ranges ({} v4 + {} v6), {} intervals, {} places, built in {:.2?}, {} bytes ({:.1} MiB, {:.1} bytes per range)",
        db.ranges(),
        V4_RANGES,
        V6_RANGES,
        db.intervals(),
        db.places().len(),
        built,
        mem,
        mem as f64 / (1024.0 * 1024.0),
        mem as f64 / db.ranges() as f64
    );
    let v4: Vec<IpAddr> = (0..PROBES)
        .map(|_| IpAddr::V4(Ipv4Addr::from(rng.next() as u32)))
        .collect();
    let hits = v4.iter().filter(|ip| db.lookup_id(**ip).is_some()).count();
    eprintln!("location db: {hits} of {PROBES} random IPv4 probes hit a range");
    let v6: Vec<IpAddr> = (0..PROBES)
        .map(|_| {
            let x = (0x20u128 << 120) | (u128::from(rng.next()) << 56);
            IpAddr::V6(Ipv6Addr::from(x))
        })
        .collect();
    let mapped: Vec<IpAddr> = v4
        .iter()
        .map(|ip| match ip {
            IpAddr::V4(a) => IpAddr::V6(a.to_ipv6_mapped()),
            other => *other,
        })
        .collect();

    // Each iteration looks up 1024 addresses: the time per iteration / 1024
    // is the time per lookup when lookups overlap (a server answering many
    // queries). The "dependent" variants make each address depend on the
    // previous result, so lookups cannot overlap: the latency of one.
    const BATCH: usize = 1024;
    let mut g = c.benchmark_group("location_db");
    g.throughput(Throughput::Elements(BATCH as u64));
    for (name, probes) in [
        ("lookup_v4", &v4),
        ("lookup_v6", &v6),
        ("lookup_v4_mapped", &mapped),
    ] {
        g.bench_function(name, |b| {
            let mut start = 0usize;
            b.iter(|| {
                start = (start + BATCH) & (PROBES - 1);
                let mut hits = 0u32;
                // The slice, not each address, goes through black_box: an
                // IpAddr forced through memory one by one makes the IPv6
                // loads wait for the store (a 17-byte value stored in two
                // parts), which serializes the lookups and measures that
                // store instead of the database.
                for ip in black_box(&probes[start..start + BATCH]) {
                    hits += u32::from(db.lookup_id(*ip).is_some());
                }
                hits
            })
        });
        g.bench_function(format!("{name}_dependent"), |b| {
            let mut start = 0usize;
            b.iter(|| {
                start = (start + BATCH) & (PROBES - 1);
                let mut last = 0u32;
                for ip in &probes[start..start + BATCH] {
                    // Flips no bit in practice (ids < 2^31), but the
                    // compiler cannot know: the next lookup waits.
                    let ip = match *ip {
                        IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(u32::from(a) | (last >> 31))),
                        IpAddr::V6(a) => {
                            IpAddr::V6(Ipv6Addr::from(u128::from(a) | u128::from(last >> 31)))
                        }
                    };
                    last = db.lookup_id(ip).map_or(0, PlaceId::raw);
                }
                last
            })
        });
    }
    g.finish();
}

criterion_group!(benches, lookups);
criterion_main!(benches);
