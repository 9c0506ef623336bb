//! What a location-based answer costs per query against a round-robin one,
//! as ratios that survive a noisy machine (the cases are timed in
//! alternating rounds; the median of the per-round ratios is printed with
//! its range, beside the median ns of each).
//!
//! `cargo bench -p sextant-core --bench location_ratio`
//!
//! The cases are `bench/peers.sh`'s, added to the benchmark configuration
//! (10,000 domains, 100,000 services) with a location database of 100,000
//! ranges (`benches/scale_locations`) plus 4,096 client /24s in
//! `Europe.UK`:
//!
//! * `rr`: round robin over four UP services (`failover.example.com`);
//! * `prox`: static proximity over four UP services in `Europe.UK`,
//!   `Asia.HK`, `America.US` and `Europe.DE` (`geo.example.com`; the
//!   client is in `Europe.UK`, so the first is the answer);
//! * `prefloc`: round robin over the same four, with a global DNS policy
//!   `DOMAIN.EQ("pl.example.com") && MATCHES_LOCATION("Europe.UK")` whose
//!   action prefers `Asia.HK` (`pl.example.com`). The policy is in a second
//!   snapshot of the same configuration, as `bench/peers.sh` loads it in a
//!   second instance; `rr+policy` is round robin on that snapshot (the
//!   policy's cost for the other names).
//!
//! Every ratio is against `rr` on the snapshot without the policy. Sources:
//! `one` is a single client (dnsperf's 127.0.0.1), `spread` 4,096 clients in
//! different ranges (every query a different place in the table);
//! `batched` prefetches each batch of 32 sources first
//! (`Snapshot::prefetch_ldns`), as the DNS worker does.
//!
//! For instruction counts, one case alone:
//! `location_ratio callgrind CASE [SOURCES [QUERIES]]` (CASE `rr`, `prox`,
//! `prefloc` or `rr+policy`; SOURCES `one` or `spread`) answers QUERIES
//! queries (default 100,000) in batches in the function `measured`, so
//! `valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*measured*'`
//! counts those alone.

#![allow(clippy::disallowed_methods)] // a benchmark: it measures time and reads its inputs

mod scale_locations;
mod shape;

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Instant;

use sextant_core::*;
use shape::*;

/// Decisions per timed round, and rounds per case.
const PER_ROUND: usize = 200_000;
/// The DNS worker's receive batch (`recvmmsg`).
const BATCH: usize = 32;
const ROUNDS: usize = 15;
/// Client /24s in `Europe.UK` for the `spread` sources.
const CLIENT_NETS: u32 = 4_096;

const RR_NAME: &str = "failover.example.com";
const PROX_NAME: &str = "geo.example.com";
const PREFLOC_NAME: &str = "pl.example.com";

/// The services' locations, as in `bench/peers/sextant.conf`.
const SERVICE_PLACES: [(&str, [&str; 2]); 4] = [
    ("127.0.64.1", ["Europe", "UK"]),
    ("127.0.64.2", ["Asia", "HK"]),
    ("127.0.64.3", ["America", "US"]),
    ("127.0.64.4", ["Europe", "DE"]),
];

fn place(qualifiers: [&str; 2]) -> Place {
    Place {
        location: Location::from_qualifiers(qualifiers),
        coordinates: None,
    }
}

/// The `k`-th client /24 of the `spread` sources: spread over the IPv4
/// space so that consecutive ones are far apart in the table.
fn client_net(k: u32) -> u32 {
    let slot = u32::MAX / CLIENT_NETS;
    (k * slot + 0x0080_0000) & 0xffff_ff00
}

fn spread_sources() -> Vec<IpAddr> {
    (0..1u32 << 16)
        .map(|i| {
            let k = (u64::from(i).wrapping_mul(0x9e37_79b1) % u64::from(CLIENT_NETS)) as u32;
            IpAddr::V4(Ipv4Addr::from(client_net(k) + 7))
        })
        .collect()
}

/// The benchmark configuration with the three vservers of the peers bench
/// and the location database.
fn model() -> Model {
    let mut m = big_model(10_000, 10);
    let mut db = scale_locations::location_builder(100_000, scale_locations::Layout::Flat);
    let uk = place(["Europe", "UK"]);
    for (from, to) in [("127.0.0.0", "127.0.0.255"), ("10.53.0.0", "10.53.255.255")] {
        db.add(
            from.parse().unwrap(),
            to.parse().unwrap(),
            uk.clone(),
            Source::Custom,
        )
        .expect("valid range");
    }
    for k in 0..CLIENT_NETS {
        let net = client_net(k);
        db.add(
            IpAddr::V4(Ipv4Addr::from(net)),
            IpAddr::V4(Ipv4Addr::from(net + 255)),
            uk.clone(),
            Source::Custom,
        )
        .expect("valid range");
    }
    for (ip, q) in SERVICE_PLACES {
        let ip: IpAddr = ip.parse().unwrap();
        db.add(ip, ip, place(q), Source::Custom)
            .expect("valid range");
    }
    m.locations = Arc::new(db.build());
    let vserver = |m: &mut Model, name: &str, method, ips: [&str; 4]| {
        let mut vs = VServer::new(format!("gv-{name}"), ServiceProtocol::Http);
        vs.method = method;
        for (k, ip) in ips.iter().enumerate() {
            let service = m.services.push(sextant_test_support::model::service(
                &format!("{name}{k}"),
                sextant_test_support::model::ip(ip),
            ));
            vs.bindings.push(Binding { service, weight: 1 });
        }
        let vserver = m.vservers.push(vs);
        m.domains.push(Domain {
            name: format!("{name}.example.com"),
            vserver,
            ttl: 30,
            backup_ip: None,
        });
    };
    let g = SERVICE_PLACES.map(|(ip, _)| ip);
    vserver(
        &mut m,
        "failover",
        LbMethod::RoundRobin,
        ["127.0.61.1", "127.0.61.2", "127.0.61.3", "127.0.61.4"],
    );
    vserver(&mut m, "geo", LbMethod::StaticProximity, g);
    vserver(&mut m, "pl", LbMethod::RoundRobin, g);
    m
}

/// `m` with the peers bench's preferred-location policy.
fn with_policy(mut m: Model) -> Model {
    let text = r#"DNS.REQ.QUESTION.DOMAIN.EQ("pl.example.com") && CLIENT.IP.SRC.MATCHES_LOCATION("Europe.UK")"#;
    m.dns_actions.push(DnsAction {
        name: "prefHK".into(),
        kind: DnsActionKind::PreferredLocations(vec![Location::parse("Asia.HK").unwrap()]),
    });
    m.dns_policies.push(DnsPolicy {
        name: "polPL".into(),
        rule: Expr::parse(text).unwrap(),
        rule_text: text.into(),
        action: DnsActionId::new(0),
    });
    m.dns_global_bindings.push(PolicyBinding {
        policy: DnsPolicyId::new(0),
        priority: 100,
        goto: Goto::End,
    });
    m
}

/// The snapshot of `m`: the big model's health, the added services UP.
fn snapshot(m: Model) -> Snapshot {
    let added = m.services.len() - 100_000;
    let snap = health(Snapshot::new(Arc::new(m), 1));
    let mut states = snap.states().to_vec();
    for s in states.iter_mut().rev().take(added) {
        *s = ServiceState { up: true };
    }
    snap.with_states(states.into())
}

/// One case: the snapshot, the name, the reason and address its answer has.
struct Case<'a> {
    label: &'static str,
    snap: &'a Snapshot,
    name: &'static str,
    reason: Reason,
    answer: Option<&'static str>,
}

fn main() {
    let base = model();
    let plain = snapshot(base.clone());
    let policy = snapshot(with_policy(base));
    let cases = [
        Case {
            label: "rr",
            snap: &plain,
            name: RR_NAME,
            reason: Reason::Method(LbMethod::RoundRobin),
            answer: None,
        },
        Case {
            label: "prox",
            snap: &plain,
            name: PROX_NAME,
            reason: Reason::Method(LbMethod::StaticProximity),
            answer: Some("127.0.64.1"),
        },
        Case {
            label: "prefloc",
            snap: &policy,
            name: PREFLOC_NAME,
            reason: Reason::PreferredLocation {
                pass: MatchPass::Perfect,
            },
            answer: Some("127.0.64.2"),
        },
        Case {
            label: "rr+policy",
            snap: &policy,
            name: RR_NAME,
            reason: Reason::Method(LbMethod::RoundRobin),
            answer: None,
        },
    ];
    let one = vec![IpAddr::from([127, 0, 0, 1])];
    let spread = spread_sources();
    for c in &cases {
        check(c, &one);
        check(c, &spread);
    }

    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.first().map(String::as_str) == Some("callgrind") {
        let label = args.get(1).map(String::as_str).unwrap_or("rr");
        let case = cases
            .iter()
            .find(|c| c.label == label)
            .unwrap_or_else(|| panic!("no case {label}"));
        let sources = match args.get(2).map(String::as_str) {
            Some("spread") => &spread,
            _ => &one,
        };
        let queries = args.get(3).map_or(100_000, |n| n.parse().expect("QUERIES"));
        let mut cursor = Cursor::new(1);
        let mut out = AnswerBuf::default();
        measured(case, sources, BATCH, queries, &mut cursor, &mut out);
        return;
    }

    println!(
        "{:>7} {:>8} {:>10} {:>8} {:>8}  range of the per-round ratio",
        "sources", "mode", "case", "ns", "/rr"
    );
    for (kind, sources) in [("one", &one), ("spread", &spread)] {
        for (mode, batch) in [("single", 1), ("batched", BATCH)] {
            if kind == "one" && batch == 1 {
                continue;
            }
            let mut ns: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
            let mut ratio: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
            for _ in 0..ROUNDS {
                let times: Vec<f64> = cases
                    .iter()
                    .map(|c| per_query_ns(c, sources, batch))
                    .collect();
                for (i, t) in times.iter().enumerate() {
                    ns[i].push(*t);
                    ratio[i].push(t / times[0]);
                }
            }
            for (i, c) in cases.iter().enumerate() {
                let (lo, hi) = (shape::min(&ratio[i]), shape::max(&ratio[i]));
                println!(
                    "{kind:>7} {mode:>8} {:>10} {:>8.1} {:>8.3}  {lo:.3}-{hi:.3}",
                    c.label,
                    shape::median(&mut ns[i]),
                    shape::median(&mut ratio[i]),
                );
            }
        }
    }
}

/// Checks that the case answers as meant for every source.
fn check(c: &Case<'_>, sources: &[IpAddr]) {
    let mut cursor = Cursor::new(1);
    let mut out = AnswerBuf::default();
    for source in sources.iter().take(4_096) {
        let q = Query {
            name: c.name,
            qtype: QueryType::A,
            source: *source,
            ecs: None,
        };
        let d = decide(c.snap, &q, &mut cursor, &NoSessions, &mut out, &mut NoTrace);
        assert_eq!(d.reason, c.reason, "{} from {source}", c.label);
        if let Some(a) = c.answer {
            assert_eq!(out.addrs, [a.parse::<IpAddr>().unwrap()], "{}", c.label);
        }
    }
}

/// `queries` decisions of `c`, `batch` at a time (each batch's sources
/// prefetched first when `batch` > 1).
#[inline(never)]
fn measured(
    c: &Case<'_>,
    sources: &[IpAddr],
    batch: usize,
    queries: usize,
    cursor: &mut Cursor,
    out: &mut AnswerBuf,
) {
    for first in (0..queries).step_by(batch) {
        if batch > 1 {
            for i in first..first + batch {
                c.snap.prefetch_ldns(sources[i % sources.len()]);
            }
        }
        for i in first..first + batch {
            let q = Query {
                name: black_box(c.name),
                qtype: QueryType::A,
                source: sources[i % sources.len()],
                ecs: None,
            };
            black_box(decide(c.snap, &q, cursor, &NoSessions, out, &mut NoTrace));
        }
    }
}

/// Mean ns per `decide()` over one round.
fn per_query_ns(c: &Case<'_>, sources: &[IpAddr], batch: usize) -> f64 {
    let mut cursor = Cursor::new(1);
    let mut out = AnswerBuf::default();
    let start = Instant::now();
    measured(c, sources, batch, PER_ROUND, &mut cursor, &mut out);
    start.elapsed().as_nanos() as f64 / PER_ROUND as f64
}
