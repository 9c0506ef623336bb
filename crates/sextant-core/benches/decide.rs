//! How long one decision takes on a large configuration: 10k domains, each
//! with its own vserver of 10 services (100k services in all) spread over
//! three sites; and the RTT method on an RTT table of up to 100k LDNS rows.

mod shape;

use std::hint::black_box;
use std::net::IpAddr;
use std::sync::Arc;

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use sextant_core::dc;
use sextant_core::*;
use sextant_test_support::model::rtt_ms;
use shape::*;

fn bench(c: &mut Criterion) {
    let mut model = big_model(10_000, 10);
    model.vservers[VServerId::new(4242)].method = LbMethod::SourceIpHash;
    model.vservers[VServerId::new(777)].method = LbMethod::LeastConnection;
    add_dc_records(&mut model);
    let snap = health(Snapshot::new(Arc::new(model), 1));
    let snap = with_dc_rankings(&snap);
    let mut cursor = Cursor::new(1);
    let mut out = AnswerBuf::default();
    let source = IpAddr::from([198, 51, 100, 7]);

    let mut group = c.benchmark_group("decide");
    for (label, name, qtype) in [
        ("round_robin_A", "app1234.example.com", QueryType::A),
        ("source_ip_hash_A", "app4242.example.com", QueryType::A),
        ("least_connection_A", "app777.example.com", QueryType::A),
        ("dc_based_A", "dc.example.com", QueryType::A),
        ("dc_client_based_A", "dcc.example.com", QueryType::A),
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

/// Two datacenter-mode records over the three sites, two addresses each
/// (a service's, and an always-healthy one, weights 1 and 3): DC Based CPU
/// with `-totalDCs 2` and weighted round robin (`dc.example.com`), and
/// Client Based by hops (`dcc.example.com`).
fn add_dc_records(m: &mut Model) {
    for (name, selection) in [
        ("dc.example.com", DcSelection::DcBased(DcCriterion::Cpu)),
        (
            "dcc.example.com",
            DcSelection::ClientBased(ClientCriterion::Hops),
        ),
    ] {
        let mut rec = DcRecord {
            name: name.into(),
            ttl: 30,
            selection,
            total_dcs: 2,
            balance: Balance::WeightedRoundRobin,
            groups: Vec::new(),
            addresses: Vec::new(),
            fail_safe: Vec::new(),
        };
        for s in 0..SITES {
            rec.groups.push(DcGroup {
                site: SiteId::from_index(s),
                service: Some(ServiceId::from_index(s)),
            });
            rec.addresses.push(DcAddress {
                group: s as u8,
                ip: m.services[ServiceId::from_index(s)].ip,
                weight: 1,
                health: DcHealth::Service(ServiceId::from_index(s)),
            });
            rec.addresses.push(DcAddress {
                group: s as u8,
                ip: IpAddr::from([192, 0, 2, s as u8 + 1]),
                weight: 3,
                health: DcHealth::Always,
            });
        }
        m.dc_records.push(rec);
    }
}

/// The DC Based record ranked (site CPU 30 / 10 / 20 %), and an RTT table
/// whose row for the bench's source carries every site's path figures.
fn with_dc_rankings(snap: &Snapshot) -> Snapshot {
    let cpu = [30.0, 10.0, 20.0];
    let order = dc::rank_record(
        &snap.model().dc_records[DcRecordId::new(0)],
        |g| dc::DcFacts {
            reachable: true,
            cpu_percent: Some(cpu[g]),
            ..dc::DcFacts::default()
        },
        Duration::ZERO,
    );
    let cells: Vec<Option<RttCell>> = (0..SITES as u8)
        .map(|s| {
            Some(RttCell {
                path: Some(PathFigures {
                    hops: 10 - s,
                    ttl: 54 + s,
                    loss_permille: 0,
                    mos_centi: 420,
                }),
                ..rtt_ms(20)
            })
        })
        .collect();
    let mut rtt = RttTable::builder(SITES);
    rtt.row(IpAddr::from([198, 51, 100, 7]), &cells);
    snap.with_dc_orders(Arc::new(DcOrders {
        orders: vec![Some(order), None].into(),
        site_reachable: vec![true; SITES].into(),
    }))
    .with_rtt(Arc::new(rtt.build()))
}

/// The RTT method on RTT tables of growing size, next to weighted round
/// robin on a vserver of the same shape (10 services with weights 1..3
/// over three sites, a third DOWN), with the same query sources.
fn bench_rtt(c: &mut Criterion) {
    let snap = rtt_snapshot();
    let mut cursor = Cursor::new(1);
    let mut out = AnswerBuf::default();

    let mut group = c.benchmark_group("decide_rtt");
    for rows in [1_000u32, 10_000, 100_000] {
        let snap = snap.with_rtt(rtt_rows(rows));
        for (label, name, method) in [
            ("wrr_A", WRR_NAME, LbMethod::RoundRobin),
            ("rtt_A", RTT_NAME, LbMethod::Rtt),
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
        // Most queries from a few resolvers: the hot rows stay in cache.
        let sources: Vec<IpAddr> = (0..4096).map(|i| skewed_source(i, rows)).collect();
        let mut i = 0usize;
        group.bench_with_input(BenchmarkId::new("rtt_A_skewed", rows), &rows, |b, _| {
            b.iter(|| {
                i = (i + 1) % sources.len();
                let q = Query {
                    name: black_box(RTT_NAME),
                    qtype: QueryType::A,
                    source: sources[i],
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
        // One LDNS for every query: its row stays in cache, so the
        // difference to `rtt_A` is the memory cost of rows far apart.
        let source = spread_source(12_345, rows);
        group.bench_with_input(BenchmarkId::new("rtt_A_one_ldns", rows), &rows, |b, _| {
            b.iter(|| {
                let q = Query {
                    name: black_box(RTT_NAME),
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
