//! Snapshot rebuild after one health change, against the size of the
//! configuration (issue 12, item 3): from "a probe result takes one
//! service DOWN (or back UP)" to "the new snapshot is in the Publish
//! effect", as `sextant serve` does it (one `Engine::apply` per probe
//! result; the DNS workers then load the published `Arc`).
//!
//! `cargo bench -p sextant-state --bench rebuild -- --warm-up-time 1 --measurement-time 2`
//!
//! The configurations are the decision benches' (`shape::big_model`: one
//! vserver of 10 services per domain over three sites) with a TCP monitor
//! on every service, 1,000 to 100,000 services:
//! * `three_sites`: as built, metric exchange on, so every publication also
//!   rebuilds this site's report of its own services (a third of them);
//! * `one_site`: the same with metric exchange off on every site, so there
//!   is no report and every service is monitored here.
//!
//! The `parts` group times, at the same sizes and through the public API,
//! the pieces a publication is made of, to say which dominates.

#[path = "../../sextant-core/benches/cpu_time/mod.rs"]
#[allow(unsafe_code)] // getrusage(2); each block says why it is sound
mod cpu_time;
#[path = "../../sextant-core/benches/shape/mod.rs"]
mod shape;

#[path = "../tests/common/mod.rs"]
mod common;

use common::probe;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use cpu_time::ThreadCpuTime;
use criterion::{BenchmarkId, criterion_group, criterion_main};
use sextant_core::{
    IdVec, Model, Monitor, MonitorId, MonitorKind, MonitorStatus, ServiceId, ServiceMetrics,
    ServiceState, ServiceStatus, Snapshot, StatusBuilder,
};
use sextant_state::{Effect, Engine, Event, FIGURES_FLUSH};

/// Measured in the thread's CPU time (see [`cpu_time`]).
type Criterion = criterion::Criterion<ThreadCpuTime>;

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

/// `services` services (10 per domain) with one TCP monitor each that
/// takes a service DOWN on one failure and back UP on one success.
fn model(services: usize, metric_exchange: bool) -> Model {
    let mut m = shape::big_model(services / 10, 10);
    let mut tcp = Monitor::new("tcp", MonitorKind::Tcp);
    tcp.retries = 1;
    tcp.success_retries = 1;
    m.monitors.push(tcp);
    for s in &mut m.services {
        s.monitors = vec![MonitorId::new(0)];
    }
    for site in &mut m.sites {
        site.metric_exchange = metric_exchange;
    }
    m
}

fn published(effects: &[Effect]) -> bool {
    effects.iter().any(|e| matches!(e, Effect::Publish(_)))
}

fn rebuild(c: &mut Criterion) {
    let start = Duration::from_secs(1_800_000_000);
    let mut g = c.benchmark_group("rebuild_after_one_change");
    g.sample_size(20);
    for (label, mep) in [("three_sites", true), ("one_site", false)] {
        for n in SIZES {
            let m = Arc::new(model(n, mep));
            // The services whose monitors decide here: the local site's
            // when metric exchange carries the others' state.
            let local = m.local_site.expect("big_model sets a local site");
            let flippable: Vec<ServiceId> = m
                .services
                .ids()
                .filter(|i| !mep || m.services[*i].site == local)
                .collect();
            let (mut engine, _) = Engine::new(Arc::clone(&m), 1, start);
            // Every service's first result, UP, in one batch (one publication).
            let t = start + FIGURES_FLUSH;
            let first = engine.apply_all(m.services.ids().map(|i| probe(i, true)), t);
            assert!(published(&first));
            let t = t + FIGURES_FLUSH;
            engine.apply(Event::Tick, t);
            let mut up: IdVec<ServiceId, bool> = m.services.iter().map(|_| true).collect();
            let mut k = 0usize;
            g.bench_with_input(BenchmarkId::new(label, n), &n, |b, _| {
                b.iter(|| {
                    // Spread over the services, each visit flips one.
                    k = (k + 7919) % flippable.len();
                    let s = flippable[k];
                    let now_up = !up[s];
                    up[s] = now_up;
                    let effects = engine.apply(probe(s, now_up), t);
                    debug_assert!(published(&effects));
                    effects
                })
            });
            // Checked outside the timing: every flip above published.
            k = (k + 7919) % flippable.len();
            let s = flippable[k];
            let effects = engine.apply(probe(s, !up[s]), t);
            assert!(
                published(&effects)
                    && effects
                        .iter()
                        .any(|e| matches!(e, Effect::Transition { service, .. } if *service == s)),
                "a flip transitions and publishes"
            );
        }
    }
    g.finish();
}

/// What one publication does per service, piece by piece, with the
/// engine's own types: the per-service state array and load figures built
/// afresh, the status table (copy-on-write chunks of 256), and the new
/// snapshot around them.
fn parts(c: &mut Criterion) {
    let mut g = c.benchmark_group("publish_parts");
    g.sample_size(20);
    for n in SIZES {
        let snap = Snapshot::new(Arc::new(model(n, true)), 1);
        let ups = vec![true; n];
        let figures = vec![ServiceMetrics::NONE; n];
        let mut status = StatusBuilder::new(
            (0..n)
                .map(|_| ServiceStatus {
                    reason: Arc::from(""),
                    last_change: None,
                    monitors: vec![MonitorStatus::default(); 1].into(),
                })
                .collect(),
        );
        g.bench_with_input(BenchmarkId::new("states_array", n), &n, |b, _| {
            b.iter(|| {
                black_box(&ups)
                    .iter()
                    .map(|up| ServiceState { up: *up })
                    .collect::<Arc<[ServiceState]>>()
            })
        });
        g.bench_with_input(BenchmarkId::new("metrics_copy", n), &n, |b, _| {
            b.iter(|| Arc::<[ServiceMetrics]>::from(&black_box(&figures)[..]))
        });
        let mut i = 0u32;
        g.bench_with_input(BenchmarkId::new("status_one_change", n), &n, |b, _| {
            b.iter(|| {
                i = (i + 7919) % n as u32;
                if let Some(s) = status.get_mut(ServiceId::new(i)) {
                    s.reason = Arc::from("monitor tcp: TCP connect refused");
                }
                status.publish()
            })
        });
        let states: Arc<[ServiceState]> = ups.iter().map(|up| ServiceState { up: *up }).collect();
        let metrics: Arc<[ServiceMetrics]> = Arc::from(&figures[..]);
        let table = status.publish();
        g.bench_with_input(BenchmarkId::new("snapshot_with_health", n), &n, |b, _| {
            b.iter(|| snap.with_health(Arc::clone(&states), Arc::clone(&metrics), table.clone()))
        });
    }
    g.finish();
}

fn config() -> Criterion {
    criterion::Criterion::default()
        .with_measurement(ThreadCpuTime::default())
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args()
}

criterion_group! {
    name = benches;
    config = config();
    targets = rebuild, parts
}
criterion_main!(benches);
