//! Memory per domain, per service and per location range (issue 12,
//! item 3): heap bytes held by the `Model`, by the `Snapshot` built from
//! it (lookup tables, schedules, the per-service state and figures) and by
//! a `LocationDb`, counted by the test-support counting allocator at
//! several sizes; the cost per item is the slope between sizes.
//!
//! `cargo bench -p sextant-core --bench scale_memory` prints the tables
//! (no timing: the figures do not depend on the machine's load).
//!
//! Domains and services come together in `shape::big_model` (one vserver
//! per domain): the domain series (10 services each) gives the cost of a
//! domain with its vserver and 10 services, the service series (1,000
//! domains, 1 to 100 services each) the cost of one more service with its
//! binding; a domain with its vserver alone is the first minus ten times
//! the second.

mod scale_locations;
mod shape;

use std::sync::Arc;

use scale_locations::{Layout, location_db};
use sextant_core::Snapshot;
use sextant_test_support::alloc::{Counting, live_bytes};
use shape::{big_model, health};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Live heap bytes of the model and of the snapshot built on it (its
/// lookup tables and the per-service state and load-figure arrays).
struct Sizes {
    model: i64,
    snapshot: i64,
}

fn measure(domains: usize, per_vserver: usize) -> Sizes {
    // A clone holds exactly what the model needs: the builder's vectors
    // keep the slack of their growth, which would blur the slopes.
    let built = big_model(domains, per_vserver);
    let base = live_bytes();
    let model = Arc::new(built.clone());
    let after_model = live_bytes();
    drop(built);
    let at_snapshot = live_bytes();
    // With a third of the services DOWN and figures for every one: the
    // arrays `health` puts in replace the all-UP ones, same size.
    let snap = health(Snapshot::new(Arc::clone(&model), 1));
    let sizes = Sizes {
        model: after_model - base,
        snapshot: live_bytes() - at_snapshot,
    };
    drop(snap);
    drop(model);
    sizes
}

fn slope(a: (usize, i64), b: (usize, i64)) -> f64 {
    (b.1 - a.1) as f64 / (b.0 - a.0) as f64
}

fn mib(b: i64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

fn main() {
    // `cargo bench` passes `--bench`; no argument is used.
    println!("## Model + Snapshot by domains (10 services per domain)\n");
    println!("| domains | services | Model MiB | Snapshot MiB | total bytes per domain |");
    println!("|---:|---:|---:|---:|---:|");
    let mut dom = Vec::new();
    for d in [1_000usize, 10_000, 100_000] {
        let s = measure(d, 10);
        println!(
            "| {d} | {} | {:.1} | {:.1} | {:.0} |",
            d * 10,
            mib(s.model),
            mib(s.snapshot),
            (s.model + s.snapshot) as f64 / d as f64
        );
        dom.push((d, s));
    }
    println!("\n## Model + Snapshot by services per vserver (1,000 domains)\n");
    println!(
        "| services per vserver | services | Model MiB | Snapshot MiB | total bytes per service |"
    );
    println!("|---:|---:|---:|---:|---:|");
    let mut svc = Vec::new();
    for per in [1usize, 10, 100] {
        let s = measure(1_000, per);
        println!(
            "| {per} | {} | {:.1} | {:.1} | {:.0} |",
            1_000 * per,
            mib(s.model),
            mib(s.snapshot),
            (s.model + s.snapshot) as f64 / (1_000 * per) as f64
        );
        svc.push((1_000 * per, s));
    }
    // (Model, Snapshot) bytes per item added between sizes i and i + 1.
    let parts = |v: &[(usize, Sizes)], i: usize| {
        let (a, b) = (&v[i], &v[i + 1]);
        (
            slope((a.0, a.1.model), (b.0, b.1.model)),
            slope((a.0, a.1.snapshot), (b.0, b.1.snapshot)),
        )
    };
    println!("\n## Slopes (bytes per added item, between consecutive sizes)\n");
    println!("| item | between | Model | Snapshot | total |");
    println!("|---|---|---:|---:|---:|");
    for i in 0..dom.len() - 1 {
        let (m, s) = parts(&dom, i);
        println!(
            "| domain with vserver and 10 services | {} and {} domains | {m:.0} | {s:.0} | {:.0} |",
            dom[i].0,
            dom[i + 1].0,
            m + s
        );
    }
    for i in 0..svc.len() - 1 {
        let (m, s) = parts(&svc, i);
        println!(
            "| service with its binding | {} and {} services | {m:.0} | {s:.0} | {:.0} |",
            svc[i].0,
            svc[i + 1].0,
            m + s
        );
    }
    let (dm, ds) = parts(&dom, dom.len() - 2);
    let (sm, ss) = parts(&svc, svc.len() - 2);
    println!(
        "| domain with its vserver, without services | the last slopes of both series | {:.0} | {:.0} | {:.0} |",
        dm - 10.0 * sm,
        ds - 10.0 * ss,
        (dm + ds) - 10.0 * (sm + ss)
    );

    println!("\n## LocationDb by ranges (IPv4; places = ranges / 20)\n");
    println!(
        "| layout | ranges | intervals | places | heap MiB (allocator) | bytes per range (allocator) | bytes per range (memory_bytes()) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for layout in [Layout::Flat, Layout::Nested] {
        let mut prev: Option<(usize, i64)> = None;
        for n in [1_000u64, 10_000, 100_000, 1_000_000] {
            let base = live_bytes();
            let db = location_db(n, layout);
            let held = live_bytes() - base;
            let slope_note = prev
                .map(|p| format!(" (slope {:.1})", slope(p, (n as usize, held))))
                .unwrap_or_default();
            println!(
                "| {layout:?} | {n} | {} | {} | {:.2} | {:.1}{slope_note} | {:.1} |",
                db.intervals(),
                db.places().len(),
                mib(held),
                held as f64 / n as f64,
                db.memory_bytes() as f64 / n as f64,
            );
            prev = Some((n as usize, held));
            drop(db);
        }
    }
}
