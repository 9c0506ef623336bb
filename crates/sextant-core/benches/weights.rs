//! What a weighted answer costs against the weights and the share of DOWN
//! services: one `decide()` for a weighted round-robin vserver whose total
//! weight runs from 19 to 9,994 (10 services, uneven weights), of 100
//! services of the appliance's largest weight (total 10,000), and a vserver
//! of 50 services (weights 1 to 100) with 0 to 90 % of them DOWN. Each curve should be flat.
//!
//! `select` times the selection alone (`select::nth_weighted`); beside
//! it, `table_walk` is the selection this replaced (a
//! precomputed smooth schedule, walked twice per answer: count the
//! eligible slots, then find the n-th), kept here only as the baseline.
//!
//! `cargo bench -p sextant-core --bench weights`

mod shape;

use std::hint::black_box;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use sextant_core::*;
use shape::big_model;

/// One domain, `weights.len()` services; service `k` is DOWN when `down(k)`.
fn snapshot(weights: &[u32], down: impl Fn(usize) -> bool) -> Snapshot {
    let mut m = big_model(1, weights.len());
    for (b, w) in m.vservers[VServerId::new(0)]
        .bindings
        .iter_mut()
        .zip(weights)
    {
        b.weight = *w;
    }
    let states: Vec<_> = (0..weights.len())
        .map(|k| ServiceState { up: !down(k) })
        .collect();
    Snapshot::new(Arc::new(m), 1).with_states(states.into())
}

fn decide_once(snap: &Snapshot, cursor: &mut Cursor, out: &mut AnswerBuf) -> Outcome {
    let q = Query {
        name: black_box("app0.example.com"),
        qtype: QueryType::A,
        source: IpAddr::from([198, 51, 100, 7]),
        ecs: None,
    };
    decide(snap, &q, cursor, &NoSessions, out, &mut NoTrace).outcome
}

/// The replaced selection: the nginx smooth order tabulated, walked twice.
fn table(weights: &[u32]) -> Vec<u32> {
    let total: i64 = weights.iter().map(|w| i64::from(*w)).sum();
    let mut current = vec![0i64; weights.len()];
    (0..total)
        .map(|_| {
            let mut best = 0;
            for (i, w) in weights.iter().enumerate() {
                current[i] += i64::from(*w);
                if current[i] > current[best] {
                    best = i;
                }
            }
            current[best] -= total;
            best as u32
        })
        .collect()
}

fn table_walk(schedule: &[u32], turn: u64, eligible: impl Fn(usize) -> bool) -> Option<usize> {
    let open = schedule.iter().filter(|b| eligible(**b as usize)).count() as u64;
    if open == 0 {
        return None;
    }
    schedule
        .iter()
        .map(|b| *b as usize)
        .filter(|b| eligible(*b))
        .nth((turn % open) as usize)
}

fn uneven(base: u32) -> Vec<u32> {
    (0..10).map(|k| base * (1 + k % 3)).collect()
}

fn bench(c: &mut Criterion) {
    let mut cursor = Cursor::new(1);
    let mut out = AnswerBuf::default();

    let mut sum = c.benchmark_group("weight_sum");
    let mut cases: Vec<(String, Vec<u32>)> = [1, 5, 53, 526]
        .into_iter()
        .map(|base| {
            let w = uneven(base);
            (format!("10_services_sum_{}", w.iter().sum::<u32>()), w)
        })
        .collect();
    cases.push(("10_services_weight_100_sum_1000".into(), vec![100; 10]));
    cases.push(("100_services_weight_100_sum_10000".into(), vec![100; 100]));
    cases.push((
        "64_services_weights_1_to_64_sum_2080".into(),
        (1..=64).collect(),
    ));
    for (label, weights) in &cases {
        let snap = snapshot(weights, |k| k % 3 == 0);
        sum.bench_function(BenchmarkId::new("decide", label), |b| {
            b.iter(|| black_box(decide_once(&snap, &mut cursor, &mut out)))
        });
        let mut turn = 0u64;
        sum.bench_function(BenchmarkId::new("select", label), |b| {
            b.iter(|| {
                turn += 1;
                black_box(select::nth_weighted(
                    weights.len(),
                    |i| weights[i],
                    turn,
                    |i| i % 3 != 0,
                ))
            })
        });
        let schedule = table(weights);
        sum.bench_function(BenchmarkId::new("table_walk", label), |b| {
            b.iter(|| {
                turn += 1;
                black_box(table_walk(&schedule, turn, |i| i % 3 != 0))
            })
        });
    }
    sum.finish();

    let mut down = c.benchmark_group("down_share");
    let weights: Vec<u32> = (0..50).map(|k| 1 + (k * 37 % 100)).collect();
    for percent in [0usize, 10, 30, 50, 70, 90] {
        // Services spread over the vserver, `percent` of them DOWN.
        let is_down = |k: usize| (k * 7 % 50) * 2 < percent;
        let snap = snapshot(&weights, is_down);
        down.bench_function(BenchmarkId::new("decide_50_services", percent), |b| {
            b.iter(|| black_box(decide_once(&snap, &mut cursor, &mut out)))
        });
        let mut turn = 0u64;
        down.bench_function(BenchmarkId::new("select_50_services", percent), |b| {
            b.iter(|| {
                turn += 1;
                black_box(select::nth_weighted(
                    weights.len(),
                    |i| weights[i],
                    turn,
                    |i| !is_down(i),
                ))
            })
        });
        let schedule = table(&weights);
        down.bench_function(BenchmarkId::new("table_walk_50_services", percent), |b| {
            b.iter(|| {
                turn += 1;
                black_box(table_walk(&schedule, turn, |i| !is_down(i)))
            })
        });
    }
    down.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
