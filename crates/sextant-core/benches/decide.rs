//! How long one decision takes on a large configuration: 10k domains, each
//! with its own vserver of 10 services (100k services in all) spread over
//! three sites; and the RTT method on an RTT table of up to 100k LDNS rows.

use std::hint::black_box;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use sextant_core::*;
use sextant_test_support::model::rtt_ms;

/// The services' sites: service `k` of a vserver is at site `k % SITES`.
const SITES: usize = 3;

fn big_model(domains: usize, per_vserver: usize) -> Model {
    let mut m = Model::default();
    for s in 0..SITES {
        m.sites.push(Site::new(
            format!("site{}", s + 1),
            IpAddr::from([10, 0, s as u8, 1]),
        ));
    }
    m.set_local_site(0);
    for d in 0..domains {
        let mut vs = VServer::new(format!("vs{d}"), ServiceProtocol::Http);
        vs.method = LbMethod::RoundRobin;
        for k in 0..per_vserver {
            let id = m.services.len() as u32;
            m.services.push(Service {
                name: format!("svc{d}-{k}"),
                ip: IpAddr::from((0x0a00_0000u32 + id).to_be_bytes()),
                port: 80,
                protocol: ServiceProtocol::Http,
                site: (k % SITES) as u32,
                public_ip: None,
                public_port: None,
                max_clients: 0,
                monitors: vec![],
                load_source: LoadSource::Monitors,
            });
            vs.bindings.push(Binding {
                service: id,
                weight: 1 + (k as u32 % 3),
            });
        }
        m.vservers.push(vs);
        m.domains.push(Domain {
            name: format!("app{d}.example.com"),
            vserver: d as u32,
            ttl: 30,
            backup_ip: None,
        });
    }
    m.zones.push(Zone {
        apex: "example.com".into(),
        soa: Soa {
            origin_server: "ns1.example.com".into(),
            contact: "hostmaster.example.com".into(),
            serial: 1,
            refresh: 3600,
            retry: 3,
            expire: 3600,
            minimum: 5,
            ttl: 3600,
        },
        ns: vec!["ns1.example.com".into()],
        ns_ttl: 3600,
    });
    m
}

/// A third of the services DOWN, so selection has to skip; connection
/// counts for every service, so LEASTCONNECTION decides.
fn health(snap: Snapshot) -> Snapshot {
    let states: Vec<_> = (0..snap.model().services.len())
        .map(|i| ServiceState { up: i % 3 != 0 })
        .collect();
    let metrics: Vec<_> = (0..snap.model().services.len() as u64)
        .map(|i| ServiceMetrics {
            connections: Some(i.wrapping_mul(0x9e37_79b9) % 97),
            ..ServiceMetrics::default()
        })
        .collect();
    snap.with_states(states.into()).with_metrics(metrics.into())
}

fn bench(c: &mut Criterion) {
    let mut model = big_model(10_000, 10);
    let hash_vs = 4242;
    model.vservers[hash_vs].method = LbMethod::SourceIpHash;
    let least_vs = 777;
    model.vservers[least_vs].method = LbMethod::LeastConnection;
    let snap = health(Snapshot::new(Arc::new(model), 1));
    let mut cursor = Cursor::new(1);
    let mut out = AnswerBuf::default();
    let source = IpAddr::from([198, 51, 100, 7]);

    let mut group = c.benchmark_group("decide");
    for (label, name, qtype) in [
        ("round_robin_A", "app1234.example.com", QueryType::A),
        ("source_ip_hash_A", "app4242.example.com", QueryType::A),
        ("least_connection_A", "app777.example.com", QueryType::A),
        ("nxdomain", "nothing.example.com", QueryType::A),
        ("refused", "www.example.org", QueryType::A),
    ] {
        group.bench_function(label, |b| {
            b.iter(|| {
                let q = Query {
                    name: black_box(name),
                    qtype,
                    source,
                    ecs: None,
                };
                black_box(decide(
                    &snap,
                    &q,
                    &mut cursor,
                    &NoSessions,
                    &mut out,
                    &mut NoTrace,
                ))
            })
        });
    }
    group.finish();
}

/// The first LDNS group of the RTT table; row `r` is this plus `r`.
const LDNS_BASE: u32 = 0x6440_0000; // 100.64.0.0

/// An RTT table of `rows` LDNS (/32 groups from [`LDNS_BASE`]) × the
/// sites: 1..=200 ms per cell; one in 16 of the last site's cells unknown.
fn rtt_rows(rows: u32) -> Arc<RttTable> {
    let mut b = RttTable::builder(SITES);
    for r in 0..rows {
        let cells: [Option<RttCell>; SITES] = std::array::from_fn(|s| {
            let h = (u64::from(r) * SITES as u64 + s as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            (s + 1 < SITES || h >> 60 != 0).then(|| rtt_ms(1 + (h >> 32) % 200))
        });
        b.row(IpAddr::from((LDNS_BASE + r).to_be_bytes()), &cells);
    }
    Arc::new(b.build())
}

/// The source of query `i`: a row of a `rows`-row table, spread so that
/// consecutive queries hit rows far apart.
fn spread_source(i: u64, rows: u32) -> IpAddr {
    let r = (i.wrapping_mul(0x9e37_79b1) % u64::from(rows)) as u32;
    IpAddr::from((LDNS_BASE + r).to_be_bytes())
}

/// The RTT method on RTT tables of growing size, next to weighted round
/// robin on a vserver of the same shape (10 services with weights 1..3
/// over three sites, a third DOWN), with the same query sources.
fn bench_rtt(c: &mut Criterion) {
    let mut model = big_model(10_000, 10);
    let rtt_vs = 2024;
    model.vservers[rtt_vs].method = LbMethod::Rtt;
    model.vservers[rtt_vs].rtt_tolerance = Duration::from_millis(20);
    // Same DOWN pattern as the RTT vserver (ids 20240.. and 20270..: the
    // three services at site2 are DOWN in both, 7 of 10 UP).
    let wrr_vs = 2027;
    assert_eq!(model.vservers[wrr_vs].method, LbMethod::RoundRobin);
    let snap = health(Snapshot::new(Arc::new(model), 1));
    let mut cursor = Cursor::new(1);
    let mut out = AnswerBuf::default();

    let mut group = c.benchmark_group("decide_rtt");
    for rows in [1_000u32, 10_000, 100_000] {
        let snap = snap.with_rtt(rtt_rows(rows));
        for (label, name, method) in [
            ("wrr_A", "app2027.example.com", LbMethod::RoundRobin),
            ("rtt_A", "app2024.example.com", LbMethod::Rtt),
        ] {
            // Every source has a row: the RTT method decides itself.
            let mut check = AnswerBuf::default();
            for i in 0..1_000 {
                let q = Query {
                    name,
                    qtype: QueryType::A,
                    source: spread_source(i, rows),
                    ecs: None,
                };
                let d = decide(
                    &snap,
                    &q,
                    &mut cursor,
                    &NoSessions,
                    &mut check,
                    &mut NoTrace,
                );
                assert_eq!(d.reason, Reason::Method(method), "{label} {rows}");
            }
            let mut i = 0u64;
            group.bench_with_input(BenchmarkId::new(label, rows), &rows, |b, rows| {
                b.iter(|| {
                    i = i.wrapping_add(1);
                    let q = Query {
                        name: black_box(name),
                        qtype: QueryType::A,
                        source: spread_source(i, *rows),
                        ecs: None,
                    };
                    black_box(decide(
                        &snap,
                        &q,
                        &mut cursor,
                        &NoSessions,
                        &mut out,
                        &mut NoTrace,
                    ))
                })
            });
        }
        // One LDNS for every query: its row stays in cache, so the
        // difference to `rtt_A` is the memory cost of rows far apart.
        let source = spread_source(12_345, rows);
        group.bench_with_input(BenchmarkId::new("rtt_A_one_ldns", rows), &rows, |b, _| {
            b.iter(|| {
                let q = Query {
                    name: black_box("app2024.example.com"),
                    qtype: QueryType::A,
                    source: black_box(source),
                    ecs: None,
                };
                black_box(decide(
                    &snap,
                    &q,
                    &mut cursor,
                    &NoSessions,
                    &mut out,
                    &mut NoTrace,
                ))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench, bench_rtt);
criterion_main!(benches);
