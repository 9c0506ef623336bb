//! Scale of the decision core, as curves rather than points (issue 12,
//! item 3): the cost of one `decide()` against the number of domains and
//! of zones, of one location lookup (and of building the database) against
//! the number of ranges, and of one `decide()` against the number of DNS
//! policies bound globally.
//!
//! `cargo bench -p sextant-core --bench scale -- --warm-up-time 1 --measurement-time 2`
//! (or `bench/scale.sh`, which runs this, the rebuild bench of
//! sextant-state and the memory table, and summarizes). A criterion filter
//! picks one curve: `... --bench scale -- location_db/`.
//!
//! The configurations are those of the other decision benches
//! (`shape::big_model`: each domain its own vserver of 10 weighted services
//! over three sites, a third DOWN), so the 10,000-domain point is the
//! 100,000-service configuration of `benches/decide.rs`.

#![allow(clippy::disallowed_methods)] // a benchmark: it measures time and reads its inputs

#[allow(unsafe_code)] // getrusage(2); each block says why it is sound
mod cpu_time;
mod scale_locations;
mod shape;

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cpu_time::ThreadCpuTime;
use criterion::{BenchmarkId, Throughput, criterion_group, criterion_main};
use scale_locations::*;
use sextant_core::*;
use shape::*;

/// Every curve here is measured in the thread's CPU time (see [`cpu_time`]).
type Criterion = criterion::Criterion<ThreadCpuTime>;

/// How many distinct query names each point cycles through: enough that
/// the large configurations' tables do not all sit in cache, as on a
/// server whose clients ask for many names.
const NAMES: usize = 4096;

/// `decide()` with one cursor and answer buffer kept across calls, as a
/// worker keeps them.
struct Decider {
    cursor: Cursor,
    out: AnswerBuf,
}

impl Decider {
    fn new() -> Self {
        Decider {
            cursor: Cursor::new(1),
            out: AnswerBuf::default(),
        }
    }

    fn decide(
        &mut self,
        snap: &Snapshot,
        name: &str,
        qtype: QueryType,
        source: IpAddr,
    ) -> Decision {
        let q = Query {
            name,
            qtype,
            source,
            ecs: None,
        };
        decide(
            snap,
            &q,
            &mut self.cursor,
            &NoSessions,
            &mut self.out,
            &mut NoTrace,
        )
    }
}

/// Names spread over `count` indices so that consecutive queries hit
/// entries far apart: `fmt(i)` for [`NAMES`] indices below `count`.
fn spread_names(count: usize, fmt: impl Fn(usize) -> String) -> Vec<String> {
    let mut rng = Rng(7);
    (0..NAMES)
        .map(|_| fmt((rng.next() % count as u64) as usize))
        .collect()
}

/// Panics unless every name gives the outcome the bench claims to measure,
/// so a curve never silently measures another path.
fn check_all(snap: &Snapshot, names: &[String], qtype: QueryType, want: fn(&Outcome) -> bool) {
    let mut d = Decider::new();
    let source = IpAddr::from([198, 51, 100, 7]);
    for n in names {
        let got = d.decide(snap, n, qtype, source);
        assert!(want(&got.outcome), "{n}: {:?}", got.outcome);
    }
}

fn is_addresses(o: &Outcome) -> bool {
    matches!(o, Outcome::Addresses { .. })
}

fn is_nxdomain(o: &Outcome) -> bool {
    matches!(o, Outcome::NxDomain { .. })
}

/// Cycles through `names`, one `decide()` per iteration.
fn bench_names(
    g: &mut criterion::BenchmarkGroup<'_, ThreadCpuTime>,
    id: BenchmarkId,
    snap: &Snapshot,
    names: &[String],
    qtype: QueryType,
) {
    let mut d = Decider::new();
    let source = IpAddr::from([198, 51, 100, 7]);
    let mut i = 0usize;
    g.bench_function(id, |b| {
        b.iter(|| {
            i = (i + 1) & (NAMES - 1);
            black_box(d.decide(snap, black_box(&names[i]), qtype, source))
        })
    });
}

/// decide() against the number of domains (10 services each: 1,000 to
/// 1,000,000 services), for an A query of a GSLB name and an NXDOMAIN in
/// the zone.
fn domains(c: &mut Criterion) {
    let mut g = c.benchmark_group("decide_domains");
    for n in [100usize, 1_000, 10_000, 100_000] {
        let t = Instant::now();
        let snap = health(Snapshot::new(Arc::new(big_model(n, 10)), 1));
        eprintln!(
            "decide_domains: {n} domains, {} services, model + snapshot built in {:.2?}",
            snap.model().services.len(),
            t.elapsed()
        );
        let gslb = spread_names(n, |d| format!("app{d}.example.com"));
        let nx = spread_names(n, |d| format!("nx{d}.example.com"));
        check_all(&snap, &gslb, QueryType::A, is_addresses);
        check_all(&snap, &nx, QueryType::A, is_nxdomain);
        bench_names(
            &mut g,
            BenchmarkId::new("gslb_A", n),
            &snap,
            &gslb,
            QueryType::A,
        );
        bench_names(
            &mut g,
            BenchmarkId::new("nxdomain", n),
            &snap,
            &nx,
            QueryType::A,
        );
        // One name over and over: everything it touches stays in cache,
        // so this is the work of the lookup and selection alone.
        let one = vec![gslb[0].clone(); NAMES];
        bench_names(
            &mut g,
            BenchmarkId::new("gslb_A_one_name", n),
            &snap,
            &one,
            QueryType::A,
        );
    }
    g.finish();
}

/// decide() against the number of zones: the 10,000 domains spread over
/// 1 to 10,000 zones (`zoneK.example`), the same queries.
fn zones(c: &mut Criterion) {
    let mut g = c.benchmark_group("decide_zones");
    let n = 10_000usize;
    for z in [1usize, 100, 10_000] {
        let mut model = big_model(n, 10);
        let soa = model.zones[ZoneId::new(0)].soa.clone();
        model.zones = (0..z)
            .map(|k| Zone {
                apex: format!("zone{k}.example"),
                soa: Soa {
                    origin_server: format!("ns1.zone{k}.example"),
                    ..soa.clone()
                },
                ns: vec![format!("ns1.zone{k}.example")],
                ns_ttl: 3600,
            })
            .collect();
        for (d, dom) in model.domains.iter_mut().enumerate() {
            dom.name = format!("app{d}.zone{}.example", d % z);
        }
        let snap = health(Snapshot::new(Arc::new(model), 1));
        let gslb = spread_names(n, |d| format!("app{d}.zone{}.example", d % z));
        let nx = spread_names(n, |d| format!("nx{d}.zone{}.example", d % z));
        check_all(&snap, &gslb, QueryType::A, is_addresses);
        check_all(&snap, &nx, QueryType::A, is_nxdomain);
        bench_names(
            &mut g,
            BenchmarkId::new("gslb_A", z),
            &snap,
            &gslb,
            QueryType::A,
        );
        bench_names(
            &mut g,
            BenchmarkId::new("nxdomain", z),
            &snap,
            &nx,
            QueryType::A,
        );
    }
    g.finish();
}

/// Location lookups against the number of ranges (1,000 to 1,000,000),
/// flat and nested; and the build time.
fn location(c: &mut Criterion) {
    const PROBES: usize = 1 << 16;
    const BATCH: usize = 1024;
    let sizes = [1_000u64, 10_000, 100_000, 1_000_000];
    let mut rng = Rng(1);
    let probes: Vec<IpAddr> = (0..PROBES)
        .map(|_| IpAddr::V4(Ipv4Addr::from(rng.next() as u32)))
        .collect();
    let mut g = c.benchmark_group("location_db");
    g.throughput(Throughput::Elements(BATCH as u64));
    for layout in [Layout::Flat, Layout::Nested] {
        let tag = format!("{layout:?}").to_lowercase();
        for n in sizes {
            let t = Instant::now();
            let db = location_db(n, layout);
            let built = t.elapsed();
            let hits = probes
                .iter()
                .filter(|ip| db.lookup_id(**ip).is_some())
                .count();
            eprintln!(
                "location_db {tag}: {} ranges, {} intervals, {} places, built in {built:.2?}, \
                 {:.1} MiB ({:.1} bytes per range by memory_bytes()), {hits} of {PROBES} random probes hit",
                db.ranges(),
                db.intervals(),
                db.places().len(),
                db.memory_bytes() as f64 / (1024.0 * 1024.0),
                db.memory_bytes() as f64 / db.ranges() as f64,
            );
            assert!(
                hits > PROBES / 8,
                "a good share of the probes must hit ranges"
            );
            // 1024 independent lookups per iteration: the time per lookup
            // when lookups overlap, as in a busy server (criterion reports
            // it as a rate per element).
            g.bench_function(BenchmarkId::new(format!("lookup_{tag}"), n), |b| {
                let mut start = 0usize;
                b.iter(|| {
                    start = (start + BATCH) & (PROBES - 1);
                    let mut hits = 0u32;
                    for ip in black_box(&probes[start..start + BATCH]) {
                        hits += u32::from(db.lookup_id(*ip).is_some());
                    }
                    hits
                })
            });
            // Each address depends on the previous result: the latency of
            // one lookup, cache misses not overlapped.
            g.bench_function(
                BenchmarkId::new(format!("lookup_{tag}_dependent"), n),
                |b| {
                    let mut start = 0usize;
                    b.iter(|| {
                        start = (start + BATCH) & (PROBES - 1);
                        let mut last = 0u32;
                        for ip in &probes[start..start + BATCH] {
                            let IpAddr::V4(a) = *ip else { continue };
                            // Ids stay below 2^31: flips no bit, but the
                            // compiler cannot know, so the next lookup waits.
                            let ip = IpAddr::V4(Ipv4Addr::from(u32::from(a) | (last >> 31)));
                            last = db.lookup_id(ip).map_or(0, PlaceId::raw);
                        }
                        last
                    })
                },
            );
        }
    }
    g.finish();

    // The build: places interned, ranges added, overlaps resolved, index
    // built; as a configuration load or reload pays it.
    let mut g = c.benchmark_group("location_db_build");
    g.sample_size(10);
    for layout in [Layout::Flat, Layout::Nested] {
        let tag = format!("{layout:?}").to_lowercase();
        for n in sizes {
            g.throughput(Throughput::Elements(n));
            g.bench_function(BenchmarkId::new(&tag, n), |b| {
                b.iter(|| location_db(n, layout))
            });
        }
    }
    g.finish();
}

/// The source of the policy bench's queries: in no policy's subnet, and at
/// a place no location policy names.
const POLICY_CLIENT: [u8; 4] = [198, 51, 100, 7];

/// The `k`-th realistic policy rule; none of them is true for
/// [`POLICY_CLIENT`] asking A for a GSLB name of `big_model`.
fn policy_rule(k: usize) -> String {
    let (a, b) = ((k / 250) % 250, k % 250);
    match k % 5 {
        0 => format!("CLIENT.IP.SRC.IN_SUBNET(10.{a}.{b}.0/24)"),
        1 => format!(
            "CLIENT.IP.SRC.MATCHES_LOCATION(\"{}.c{}.*\")",
            ["Europe", "Asia", "Africa", "North America"][k % 4],
            k % 250
        ),
        2 => format!("DNS.REQ.QUESTION.TYPE.EQ(AAAA) && CLIENT.IP.SRC.IN_SUBNET(172.16.{b}.0/24)"),
        3 => format!(
            "DNS.REQ.QUESTION.DOMAIN.ENDSWITH(\"svc{k}.example.net\") || CLIENT.IP.SRC.IN_SUBNET(2001:db8:{k:x}::/48)"
        ),
        _ => format!(
            "CLIENT.IP.SRC.IN_SUBNET(100.{a}.{b}.0/24) && CLIENT.IP.SRC.MATCHES_LOCATION(\"Asia.c{}.*\").NOT",
            k % 250
        ),
    }
}

/// `base` with `n` global policies (priorities 10, 20, ...; each a
/// GslbPrefLoc action preferring one site's location), the last one true
/// for [`POLICY_CLIENT`] when `last_matches`.
fn with_policies(base: &Model, n: usize, last_matches: bool) -> Model {
    let mut m = base.clone();
    for k in 0..n {
        let text = if last_matches && k + 1 == n {
            "CLIENT.IP.SRC.IN_SUBNET(198.51.100.0/24) && DNS.REQ.QUESTION.TYPE.EQ(A)".to_string()
        } else {
            policy_rule(k)
        };
        let rule = Expr::parse(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        m.dns_actions.push(DnsAction {
            name: format!("pref{k}"),
            kind: DnsActionKind::PreferredLocations(vec![
                Location::parse(&format!("Europe.c{}.*", k % SITES)).expect("valid location"),
            ]),
        });
        m.dns_policies.push(DnsPolicy {
            name: format!("pol{k}"),
            rule,
            rule_text: text,
            action: DnsActionId::from_index(k),
        });
        m.dns_global_bindings.push(PolicyBinding {
            policy: DnsPolicyId::from_index(k),
            priority: 10 * (k as u32 + 1),
            goto: Goto::End,
        });
    }
    m
}

/// One decide() against the number of global policies (0 to 1,000) on the
/// 10,000-domain configuration with a 100,000-range location database:
/// none matches (every rule evaluated), or only the last one does.
fn policies(c: &mut Criterion) {
    let mut base = big_model(10_000, 10);
    let mut db = location_builder(100_000, Layout::Flat);
    // The client's own network, at a place no rule names (a custom entry).
    db.add(
        IpAddr::from([198, 51, 100, 0]),
        IpAddr::from([198, 51, 100, 255]),
        Place {
            location: Location::from_qualifiers(["Oceania", "c999", "r1", "city0"]),
            coordinates: None,
        },
        Source::Custom,
    )
    .expect("valid range");
    let db = db.build();
    assert!(
        db.lookup_id(IpAddr::from(POLICY_CLIENT)).is_some(),
        "the client must have a location, so location rules are evaluated against one"
    );
    base.locations = Arc::new(db);
    let gslb = spread_names(10_000, |d| format!("app{d}.example.com"));
    let mut g = c.benchmark_group("decide_policies");
    for n in [0usize, 1, 10, 100, 1_000] {
        for last_matches in [false, true] {
            if n == 0 && last_matches {
                continue;
            }
            let snap = health(Snapshot::new(
                Arc::new(with_policies(&base, n, last_matches)),
                1,
            ));
            check_all(&snap, &gslb[..64], QueryType::A, is_addresses);
            let mut trace = VecTrace::default();
            let q = Query {
                name: &gslb[0],
                qtype: QueryType::A,
                source: IpAddr::from(POLICY_CLIENT),
                ecs: None,
            };
            decide(
                &snap,
                &q,
                &mut Cursor::new(1),
                &NoSessions,
                &mut AnswerBuf::default(),
                &mut trace,
            );
            let evaluated: Vec<bool> = trace
                .0
                .iter()
                .filter_map(|e| match e {
                    TraceEvent::Policy { matched, .. } => Some(*matched),
                    _ => None,
                })
                .collect();
            assert_eq!(evaluated.len(), n, "every policy evaluated");
            assert_eq!(
                evaluated.iter().filter(|m| **m).count(),
                usize::from(last_matches),
                "exactly the policies meant to match do"
            );
            let label = if last_matches {
                "last_matches"
            } else {
                "none_match"
            };
            let mut d = Decider::new();
            let mut i = 0usize;
            g.bench_function(BenchmarkId::new(label, n), |b| {
                b.iter(|| {
                    i = (i + 1) & (NAMES - 1);
                    black_box(d.decide(
                        &snap,
                        black_box(&gslb[i]),
                        QueryType::A,
                        IpAddr::from(POLICY_CLIENT),
                    ))
                })
            });
        }
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
    targets = domains, zones, location, policies
}
criterion_main!(benches);
