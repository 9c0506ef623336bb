//! The cost of one `Engine::apply` and of one publication, by the number of
//! services (1,000 to 100,000): `cargo bench -p sextant-state --bench apply`.

#[path = "../tests/common/mod.rs"]
mod common;

use common::probe;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use sextant_core::{Model, Monitor, MonitorKind, ServiceId};
use sextant_state::{Engine, Event, FIGURES_FLUSH, Prepared};
use sextant_test_support::model::{ModelBuilder, ip, monitored_site};

/// A local site with `n` services, each with one TCP monitor.
fn model(n: usize) -> Arc<Model> {
    let mut tcp = Monitor::new("tcp", MonitorKind::Tcp);
    // One failure takes a service DOWN, one success brings it back.
    tcp.retries = 1;
    Arc::new(monitored_site(n, tcp))
}

/// An LDNS probe sample of `ms` for `group`.
fn sample(group: IpAddr, ms: u64) -> Event {
    Event::LdnsSample {
        group,
        sample: Some((Duration::from_millis(ms), sextant_core::LdnsProbe::Ping)),
        ttl: Some(60),
    }
}

fn bench(c: &mut Criterion) {
    let start = Duration::from_secs(1_800_000_000);
    let mut g = c.benchmark_group("engine");
    g.sample_size(20);
    for n in [1_000usize, 10_000, 100_000] {
        let m = model(n);
        let (mut engine, _) = Engine::new(Arc::clone(&m), 1, start);
        // Every service seen UP once, so probes below change no state.
        for i in 0..n as u32 {
            engine.apply(probe(ServiceId::new(i), true), start);
        }
        let mut t = start + FIGURES_FLUSH;
        engine.apply(Event::Tick, t);
        let mut i = 0u32;
        // A probe result that changes nothing but figures: no publication.
        g.bench_with_input(BenchmarkId::new("apply_probe_unchanged", n), &n, |b, _| {
            b.iter(|| {
                i = (i + 1) % n as u32;
                engine.apply(probe(ServiceId::new(i), true), t)
            })
        });
        // A probe result that takes a service DOWN: published at once.
        g.bench_with_input(
            BenchmarkId::new("apply_probe_transition_publish", n),
            &n,
            |b, _| {
                b.iter_batched(
                    || {
                        i = (i + 1) % n as u32;
                        i
                    },
                    |s| {
                        let down = engine.apply(probe(ServiceId::new(s), false), t);
                        let up = engine.apply(probe(ServiceId::new(s), true), t);
                        (down, up)
                    },
                    BatchSize::SmallInput,
                )
            },
        );
        // The figures flush: one publication after one changed probe.
        g.bench_with_input(BenchmarkId::new("publish_figures", n), &n, |b, _| {
            b.iter(|| {
                i = (i + 1) % n as u32;
                engine.apply(probe(ServiceId::new(i), true), t);
                t += FIGURES_FLUSH;
                engine.apply(Event::Tick, t)
            })
        });
        // A reload of the same configuration (carry-over of every service).
        g.bench_with_input(BenchmarkId::new("reload_carry_over", n), &n, |b, _| {
            b.iter(|| engine.apply(Event::Reload(Box::new(Prepared::new(Arc::clone(&m)))), t))
        });
    }
    g.finish();
}

/// The RTT method's LDNS table at 1,000 to 100,000 entries: one RTT sample
/// (applied; no publication), and the publication after one changed RTT,
/// which rebuilds the published table.
fn bench_ldns(c: &mut Criterion) {
    let start = Duration::from_secs(1_800_000_000);
    let mut g = c.benchmark_group("ldns");
    g.sample_size(20);
    for n in [1_000u32, 10_000, 100_000] {
        let mut b = ModelBuilder::new();
        b.add_site("local", ip("127.0.0.1"));
        b.add_site("peer", ip("127.0.0.2"));
        b.set_local("local");
        b.model.params.ldns_new_per_second = n;
        b.model.params.ldns_max_entries = n as usize;
        // The publication bench moves the clock on: keep entries alive.
        b.model.params.ldns_entry_timeout = Duration::from_secs(1 << 40);
        let (mut engine, _) = Engine::new(Arc::new(b.build()), 1, start);
        let group = |i: u32| IpAddr::V4(Ipv4Addr::from(0xc000_0000 + i));
        let mut t = start + Duration::from_secs(1);
        engine.apply(Event::LdnsQueried((0..n).map(group).collect()), t);
        for i in 0..n {
            engine.apply(sample(group(i), 20), t);
        }
        t += FIGURES_FLUSH;
        engine.apply(Event::Tick, t);
        let mut i = 0u32;
        let mut ms = 20u64;
        g.bench_with_input(BenchmarkId::new("apply_sample", n), &n, |bch, _| {
            bch.iter(|| {
                i = (i + 1) % n;
                ms = 20 + (ms + 7) % 40;
                engine.apply(sample(group(i), ms), t)
            })
        });
        g.bench_with_input(
            BenchmarkId::new("publish_after_a_change", n),
            &n,
            |bch, _| {
                bch.iter(|| {
                    i = (i + 1) % n;
                    ms = 20 + (ms + 7) % 40;
                    engine.apply(sample(group(i), ms), t);
                    t += FIGURES_FLUSH;
                    engine.apply(Event::Tick, t)
                })
            },
        );
    }
    g.finish();
}

criterion_group!(benches, bench, bench_ldns);
criterion_main!(benches);
