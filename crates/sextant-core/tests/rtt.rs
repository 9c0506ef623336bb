//! The RTT method (seed 003) on hand-built snapshots: three sites (fra,
//! ams, nyc) with services at each, an RTT table keyed by LDNS group. The
//! answer is at the site with the smallest RTT to the query's LDNS (its
//! source address, masked), or at any site within the tolerance of it;
//! without an RTT the backup method answers, visibly.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use sextant_core::*;
use sextant_test_support::alloc::{Counting, allocations};
use sextant_test_support::model::{ModelBuilder, ip, rtt_table, soa, with_down};

// The "decide does not allocate" test counts this thread's allocations.
#[global_allocator]
static GLOBAL: Counting = Counting;

const FRA: u32 = 0;
const AMS: u32 = 1;
const NYC: u32 = 2;

/// Services: (name, address, site).
const SERVICES: &[(&str, &str, u32)] = &[
    ("fra-1", "192.0.2.1", FRA),
    ("fra-2", "192.0.2.2", FRA),
    ("ams-1", "192.0.2.11", AMS),
    ("nyc-1", "192.0.2.21", NYC),
    ("nyc-2", "192.0.2.22", NYC),
];

const FRA_1: &str = "192.0.2.1";
const FRA_2: &str = "192.0.2.2";
const AMS_1: &str = "192.0.2.11";
const NYC_1: &str = "192.0.2.21";
const NYC_2: &str = "192.0.2.22";

/// Three sites, the five services, vserver `vs` (index 0) with `method` on
/// `www.example.com`; a round-robin vserver `plain` (index 1) over the
/// same services on `rr.example.com`.
fn model(method: LbMethod) -> Model {
    padded_model(method, 0)
}

/// [`model`] with `pad` more services bound to `vs` after the five (ids
/// 5.., spread over the sites): enough of them take the vserver past 64
/// bindings, where the RTT method works per binding instead of per site.
fn padded_model(method: LbMethod, pad: usize) -> Model {
    let mut b = ModelBuilder::new();
    let fra = b.add_site("fra", ip("10.0.0.1"));
    b.add_site("ams", ip("10.0.1.1"));
    b.add_site("nyc", ip("10.0.2.1"));
    b.model.set_local_site(fra);
    let bindings: Vec<(ServiceId, u32)> = SERVICES
        .iter()
        .map(|&(name, addr, site)| (b.add_service_at(name, ip(addr), SiteId::new(site)), 1))
        .collect();
    let padding: Vec<(ServiceId, u32)> = (0..pad)
        .map(|k| {
            let addr = IpAddr::from([192, 0, 2, 100 + k as u8]);
            (
                b.add_service_at(&format!("pad-{k}"), addr, SiteId::from_index(k % 3)),
                1,
            )
        })
        .collect();
    b.add_vserver("vs", method, [bindings.clone(), padding].concat());
    b.add_vserver("plain", LbMethod::RoundRobin, bindings);
    b.add_domain("www.example.com", VServerId::new(0), 30);
    b.add_domain("rr.example.com", VServerId::new(1), 30);
    b.add_zone(
        "example.com",
        soa(1, 3600, 3, 3600, 5, 3600),
        &["ns1.example.com"],
        3600,
    );
    b.build()
}

/// LDNS whose nearest site is ams.
const LDNS_AMS: &str = "198.51.100.10";
/// LDNS whose nearest site is fra.
const LDNS_FRA: &str = "203.0.113.5";
/// LDNS whose nearest site is nyc.
const LDNS_NYC: &str = "100.64.0.1";

/// The RTTs (ms; fra, ams, nyc) of the three LDNS above.
fn table() -> Arc<RttTable> {
    rtt_table(
        3,
        &[
            (ip(LDNS_AMS), &[Some(30), Some(12), Some(80)]),
            (ip(LDNS_FRA), &[Some(9), Some(15), Some(70)]),
            (ip(LDNS_NYC), &[Some(90), Some(85), Some(8)]),
        ],
    )
}

fn snap(m: Model, rtt: Arc<RttTable>) -> Snapshot {
    Snapshot::new(Arc::new(m), 1).with_rtt(rtt)
}

fn rtt_snap() -> Snapshot {
    snap(model(LbMethod::Rtt), table())
}

fn query(source: &str) -> Query<'static> {
    Query {
        name: "www.example.com",
        qtype: QueryType::A,
        source: ip(source),
        ecs: None,
    }
}

fn ask(s: &Snapshot, q: &Query<'_>, cursor: &mut Cursor) -> (Decision, Vec<IpAddr>) {
    let mut out = AnswerBuf::default();
    let d = decide(s, q, cursor, &NoSessions, &mut out, &mut NoTrace);
    (d, out.addrs)
}

/// `n` answers to `q` with a fresh cursor, counted per address; checks
/// every decision has one address and the same reason, and returns it.
fn answers(s: &Snapshot, q: &Query<'_>, n: usize) -> (Reason, HashMap<IpAddr, usize>) {
    let mut cursor = Cursor::new(42);
    let mut counts = HashMap::new();
    let mut reason = None;
    for _ in 0..n {
        let (d, addrs) = ask(s, q, &mut cursor);
        assert_eq!(addrs.len(), 1, "{d:?}");
        assert!(reason.is_none_or(|r| r == d.reason), "{d:?}");
        reason = Some(d.reason);
        *counts.entry(addrs[0]).or_insert(0) += 1;
    }
    (reason.expect("n > 0"), counts)
}

/// The addresses answered, sorted.
fn answered(counts: &HashMap<IpAddr, usize>) -> Vec<IpAddr> {
    let mut v: Vec<IpAddr> = counts.keys().copied().collect();
    v.sort();
    v
}

fn ips(list: &[&str]) -> Vec<IpAddr> {
    let mut v: Vec<IpAddr> = list.iter().map(|a| ip(a)).collect();
    v.sort();
    v
}

fn explain(s: &Snapshot, q: &Query<'_>) -> (Decision, Vec<String>) {
    let mut out = AnswerBuf::default();
    let mut t = VecTrace::default();
    let d = decide(s, q, &mut Cursor::peeking(0), &NoSessions, &mut out, &mut t);
    (d, t.0.iter().map(|e| e.describe(s.model())).collect())
}

fn trace(s: &Snapshot, q: &Query<'_>) -> Vec<TraceEvent> {
    let mut out = AnswerBuf::default();
    let mut t = VecTrace::default();
    decide(s, q, &mut Cursor::peeking(0), &NoSessions, &mut out, &mut t);
    t.0
}

const NO_RTT: Reason = Reason::Fallback {
    method: LbMethod::Rtt,
    backup: LbMethod::RoundRobin,
    why: FallbackWhy::NoRtt,
};

// -- the best site

#[test]
fn the_site_with_the_smallest_rtt_to_the_ldns_answers() {
    let s = rtt_snap();
    let row = s.rtt().row(ip(LDNS_AMS)).expect("row");
    let mut cursor = Cursor::new(3);
    for _ in 0..10 {
        let (d, addrs) = ask(&s, &query(LDNS_AMS), &mut cursor);
        assert_eq!(d.reason, Reason::Method(LbMethod::Rtt));
        assert_eq!(addrs, vec![ip(AMS_1)]);
        assert_eq!(d.ldns, Some(LdnsUse::Known(row)));
        assert_eq!(d.ecs_scope, 0, "the answer depends on the LDNS only");
        assert_eq!(
            d.outcome,
            Outcome::Addresses {
                domain: DomainId::new(0),
                ttl: 30
            }
        );
    }
}

#[test]
fn other_ldns_get_their_own_nearest_site() {
    let s = rtt_snap();
    let (reason, counts) = answers(&s, &query(LDNS_FRA), 20);
    assert_eq!(reason, Reason::Method(LbMethod::Rtt));
    // Both services at fra, in turn.
    assert_eq!(answered(&counts), ips(&[FRA_1, FRA_2]));
    assert_eq!(counts[&ip(FRA_1)], 10);
    assert_eq!(counts[&ip(FRA_2)], 10);

    let (reason, counts) = answers(&s, &query(LDNS_NYC), 20);
    assert_eq!(reason, Reason::Method(LbMethod::Rtt));
    assert_eq!(answered(&counts), ips(&[NYC_1, NYC_2]));

    let row_fra = s.rtt().row(ip(LDNS_FRA)).expect("row");
    let row_nyc = s.rtt().row(ip(LDNS_NYC)).expect("row");
    assert_ne!(row_fra, row_nyc);
    assert_eq!(
        ask(&s, &query(LDNS_NYC), &mut Cursor::new(0)).0.ldns,
        Some(LdnsUse::Known(row_nyc))
    );
}

#[test]
fn the_ldns_is_the_query_source_not_the_ecs_address() {
    let mut m = model(LbMethod::Rtt);
    m.vservers[VServerId::new(0)].ecs = true;
    let s = snap(m, table());
    let with_ecs = |source: &str, subnet: &str| Query {
        ecs: Some(ClientSubnet {
            addr: ip(subnet),
            source_prefix: 32,
        }),
        ..query(source)
    };
    // From the LDNS nearest ams, for a client subnet whose address is the
    // LDNS nearest nyc: ams answers.
    let q = with_ecs(LDNS_AMS, LDNS_NYC);
    let row = s.rtt().row(ip(LDNS_AMS)).expect("row");
    let (reason, counts) = answers(&s, &q, 10);
    assert_eq!(reason, Reason::Method(LbMethod::Rtt));
    assert_eq!(answered(&counts), ips(&[AMS_1]));
    let (d, _) = ask(&s, &q, &mut Cursor::new(0));
    assert_eq!(d.ldns, Some(LdnsUse::Known(row)));
    // The answer does not depend on the client subnet.
    assert_eq!(d.ecs_scope, 0);
    // ECS is in use: the trace says the client address is the subnet's.
    assert!(trace(&s, &q).contains(&TraceEvent::Client {
        addr: ip(LDNS_NYC),
        from_ecs: true
    }));
    // The other way round: nyc.
    let (_, counts) = answers(&s, &with_ecs(LDNS_NYC, LDNS_AMS), 10);
    assert_eq!(answered(&counts), ips(&[NYC_1, NYC_2]));
    // Only the subnet has a row: no RTT for this LDNS.
    let only_subnet = s.with_rtt(rtt_table(3, &[(ip(LDNS_NYC), &[None, None, Some(1)])]));
    let (d, _) = ask(
        &only_subnet,
        &with_ecs(LDNS_AMS, LDNS_NYC),
        &mut Cursor::new(0),
    );
    assert_eq!(d.reason, NO_RTT);
    assert_eq!(d.ldns, Some(LdnsUse::Unknown(ip(LDNS_AMS))));
}

// -- LDNS groups

#[test]
fn sources_in_one_v4_group_share_a_row() {
    let mut m = model(LbMethod::Rtt);
    m.params.ldns_v4_mask = 24;
    let rtt = rtt_table(3, &[(ip("198.51.100.0"), &[Some(40), Some(5), Some(90)])]);
    let s = snap(m.clone(), rtt.clone());
    let row = s.rtt().row(ip("198.51.100.0")).expect("row");
    assert_eq!(s.ldns_group(ip("198.51.100.200")), ip("198.51.100.0"));
    for source in ["198.51.100.10", "198.51.100.200", "198.51.100.0"] {
        let (d, addrs) = ask(&s, &query(source), &mut Cursor::new(0));
        assert_eq!(d.reason, Reason::Method(LbMethod::Rtt), "{source}");
        assert_eq!(addrs, vec![ip(AMS_1)], "{source}");
        assert_eq!(d.ldns, Some(LdnsUse::Known(row)), "{source}");
    }
    // The next /24 is another group, without a row: its masked address is
    // the one for the prober.
    let (d, _) = ask(&s, &query("198.51.101.1"), &mut Cursor::new(0));
    assert_eq!(d.reason, NO_RTT);
    assert_eq!(d.ldns, Some(LdnsUse::Unknown(ip("198.51.101.0"))));

    // With the default /32 the same row only matches its own address.
    let s = snap(model(LbMethod::Rtt), rtt);
    let (d, _) = ask(&s, &query("198.51.100.10"), &mut Cursor::new(0));
    assert_eq!(d.reason, NO_RTT);
    assert_eq!(d.ldns, Some(LdnsUse::Unknown(ip("198.51.100.10"))));
    let (d, addrs) = ask(&s, &query("198.51.100.0"), &mut Cursor::new(0));
    assert_eq!(d.reason, Reason::Method(LbMethod::Rtt));
    assert_eq!(addrs, vec![ip(AMS_1)]);
}

#[test]
fn sources_in_one_v6_group_share_a_row() {
    let mut m = model(LbMethod::Rtt);
    m.params.ldns_v6_mask = 48;
    let rtt = rtt_table(
        3,
        &[
            (ip("2001:db8:aa::"), &[Some(50), Some(60), Some(4)]),
            // A v4 row with the same leading bits changes nothing.
            (ip("32.1.13.184"), &[Some(1), None, None]),
        ],
    );
    let s = snap(m, rtt);
    let row = s.rtt().row(ip("2001:db8:aa::")).expect("row");
    for source in [
        "2001:db8:aa:1::53",
        "2001:db8:aa:ffff:ffff::1",
        "2001:db8:aa::",
    ] {
        let (reason, counts) = answers(&s, &query(source), 6);
        assert_eq!(reason, Reason::Method(LbMethod::Rtt), "{source}");
        assert_eq!(answered(&counts), ips(&[NYC_1, NYC_2]), "{source}");
        let (d, _) = ask(&s, &query(source), &mut Cursor::new(0));
        assert_eq!(d.ldns, Some(LdnsUse::Known(row)), "{source}");
    }
    let (d, _) = ask(&s, &query("2001:db8:ab::1"), &mut Cursor::new(0));
    assert_eq!(d.reason, NO_RTT);
    assert_eq!(d.ldns, Some(LdnsUse::Unknown(ip("2001:db8:ab::"))));
}

// -- tolerance

/// An LDNS with fra at 10 ms, ams at 14 ms, nyc at 30 ms.
const LDNS_NEAR: &str = "192.0.2.53";

fn tolerance_snap(tolerance_ms: u64) -> Snapshot {
    let mut m = model(LbMethod::Rtt);
    m.vservers[VServerId::new(0)].rtt_tolerance = Duration::from_millis(tolerance_ms);
    snap(
        m,
        rtt_table(3, &[(ip(LDNS_NEAR), &[Some(10), Some(14), Some(30)])]),
    )
}

#[test]
fn tolerance_zero_answers_only_the_best_site() {
    let (reason, counts) = answers(&tolerance_snap(0), &query(LDNS_NEAR), 30);
    assert_eq!(reason, Reason::Method(LbMethod::Rtt));
    assert_eq!(answered(&counts), ips(&[FRA_1, FRA_2]));
}

#[test]
fn weights_share_the_answers_within_one_site_and_across_sites() {
    // Weights fra-1 1, fra-2 3, ams-1 2 (nyc 1 each).
    let weighted = |tolerance_ms| {
        let mut m = model(LbMethod::Rtt);
        m.vservers[VServerId::new(0)].rtt_tolerance = Duration::from_millis(tolerance_ms);
        m.vservers[VServerId::new(0)].bindings[1].weight = 3;
        m.vservers[VServerId::new(0)].bindings[2].weight = 2;
        snap(
            m,
            rtt_table(3, &[(ip(LDNS_NEAR), &[Some(10), Some(14), Some(30)])]),
        )
    };
    // fra alone (round robin over its part of the schedule): 1 : 3.
    let (_, counts) = answers(&weighted(0), &query(LDNS_NEAR), 40);
    assert_eq!(answered(&counts), ips(&[FRA_1, FRA_2]));
    assert_eq!((counts[&ip(FRA_1)], counts[&ip(FRA_2)]), (10, 30));
    // fra and ams within 5 ms: 1 : 3 : 2 over the whole schedule.
    let (_, counts) = answers(&weighted(5), &query(LDNS_NEAR), 60);
    assert_eq!(answered(&counts), ips(&[FRA_1, FRA_2, AMS_1]));
    assert_eq!(
        (counts[&ip(FRA_1)], counts[&ip(FRA_2)], counts[&ip(AMS_1)]),
        (10, 30, 20)
    );
}

#[test]
fn tolerance_rotates_among_every_site_within_it_and_never_beyond() {
    for (tolerance, want) in [
        (3, &[FRA_1, FRA_2][..]),
        // 14 ms is within 10 + 4: the bound is inclusive.
        (4, &[FRA_1, FRA_2, AMS_1][..]),
        (5, &[FRA_1, FRA_2, AMS_1][..]),
        (19, &[FRA_1, FRA_2, AMS_1][..]),
        (20, &[FRA_1, FRA_2, AMS_1, NYC_1, NYC_2][..]),
    ] {
        let n = 60;
        let (reason, counts) = answers(&tolerance_snap(tolerance), &query(LDNS_NEAR), n);
        assert_eq!(reason, Reason::Method(LbMethod::Rtt), "{tolerance} ms");
        assert_eq!(answered(&counts), ips(want), "{tolerance} ms");
        // Equal weights: round robin gives each the same share.
        for a in want {
            assert_eq!(counts[&ip(a)], n / want.len(), "{tolerance} ms: {a}");
        }
    }
}

#[test]
fn tolerance_is_measured_from_the_best_up_site() {
    // fra is DOWN: ams (14 ms) is the best; with 16 ms of tolerance nyc
    // (30 ms) joins it, which 10 + 16 would not allow.
    let s = with_down(&tolerance_snap(16), &[ServiceId::new(0), ServiceId::new(1)]);
    let (_, counts) = answers(&s, &query(LDNS_NEAR), 30);
    assert_eq!(answered(&counts), ips(&[AMS_1, NYC_1, NYC_2]));
    assert!(trace(&s, &query(LDNS_NEAR)).contains(&TraceEvent::RttBest {
        best_us: 14_000,
        tolerance_us: 16_000
    }));
}

#[test]
fn multi_ip_response_answers_every_site_within_the_tolerance() {
    let mut m = model(LbMethod::Rtt);
    m.vservers[VServerId::new(0)].multi_ip_response = true;
    m.vservers[VServerId::new(0)].rtt_tolerance = Duration::from_millis(5);
    let s = snap(
        m,
        rtt_table(3, &[(ip(LDNS_NEAR), &[Some(10), Some(14), Some(30)])]),
    );
    let (d, mut addrs) = ask(&s, &query(LDNS_NEAR), &mut Cursor::new(0));
    assert_eq!(d.reason, Reason::MultiIp);
    addrs.sort();
    assert_eq!(addrs, ips(&[FRA_1, FRA_2, AMS_1]));
}

// -- health and missing cells

#[test]
fn a_down_service_at_the_best_site_is_skipped() {
    let s = rtt_snap();
    // fra-1 DOWN: the other service at fra answers.
    let down = with_down(&s, &[ServiceId::new(0)]);
    let (reason, counts) = answers(&down, &query(LDNS_FRA), 10);
    assert_eq!(reason, Reason::Method(LbMethod::Rtt));
    assert_eq!(answered(&counts), ips(&[FRA_2]));
    // Both at fra DOWN: the next best site, ams.
    let down = with_down(&s, &[ServiceId::new(0), ServiceId::new(1)]);
    let (reason, counts) = answers(&down, &query(LDNS_FRA), 10);
    assert_eq!(reason, Reason::Method(LbMethod::Rtt));
    assert_eq!(answered(&counts), ips(&[AMS_1]));
    // ams DOWN too: nyc.
    let down = with_down(
        &s,
        &[ServiceId::new(0), ServiceId::new(1), ServiceId::new(2)],
    );
    let (_, counts) = answers(&down, &query(LDNS_FRA), 10);
    assert_eq!(answered(&counts), ips(&[NYC_1, NYC_2]));
}

#[test]
fn a_site_without_an_rtt_is_never_chosen_by_rtt() {
    // fra and nyc have no usable RTT to this LDNS (not measured, or
    // stale): only ams can answer, whatever the tolerance.
    let ldns = "192.0.2.99";
    for tolerance in [0, 5, 1000] {
        let mut m = model(LbMethod::Rtt);
        m.vservers[VServerId::new(0)].rtt_tolerance = Duration::from_millis(tolerance);
        let s = snap(m, rtt_table(3, &[(ip(ldns), &[None, Some(40), None])]));
        let (reason, counts) = answers(&s, &query(ldns), 20);
        assert_eq!(reason, Reason::Method(LbMethod::Rtt), "{tolerance} ms");
        assert_eq!(answered(&counts), ips(&[AMS_1]), "{tolerance} ms");
    }
    // A row shorter than the sites: the missing trailing cell (nyc) is
    // unknown, even with a tolerance that would take any site.
    let mut m = model(LbMethod::Rtt);
    m.vservers[VServerId::new(0)].rtt_tolerance = Duration::from_secs(1);
    let s = snap(m, rtt_table(3, &[(ip(ldns), &[Some(70), Some(40)])]));
    let (_, counts) = answers(&s, &query(ldns), 30);
    assert_eq!(answered(&counts), ips(&[FRA_1, FRA_2, AMS_1]));
}

#[test]
fn no_row_for_the_ldns_falls_back_to_round_robin() {
    let unknown = "198.18.0.1";
    for s in [
        rtt_snap(),
        // No RTT table published at all.
        Snapshot::new(Arc::new(model(LbMethod::Rtt)), 1),
    ] {
        let (d, _) = ask(&s, &query(unknown), &mut Cursor::new(0));
        assert_eq!(d.reason, NO_RTT);
        assert_eq!(d.ldns, Some(LdnsUse::Unknown(ip(unknown))));
        assert_eq!(d.ecs_scope, 0);
        // Round robin over every UP service, whatever its site.
        let (reason, counts) = answers(&s, &query(unknown), 25);
        assert_eq!(reason, NO_RTT);
        assert_eq!(answered(&counts), ips(&[FRA_1, FRA_2, AMS_1, NYC_1, NYC_2]));
        assert!(counts.values().all(|c| *c == 5), "{counts:?}");
    }
    let (d, steps) = explain(&rtt_snap(), &query(unknown));
    assert_eq!(d.reason, NO_RTT);
    let steps = steps.join("\n");
    assert!(
        steps.contains(
            "method RTT cannot decide (no round-trip time to this LDNS is known yet); backup method ROUNDROBIN decides"
        ),
        "{steps}"
    );
    assert_eq!(
        d.reason.describe(),
        "RTT could not decide (no round-trip time to this LDNS is known yet); chosen by backup method ROUNDROBIN"
    );
}

#[test]
fn drop_ldns_requests_drops_a_query_without_an_rtt_and_still_asks_for_a_probe() {
    let mut m = model(LbMethod::Rtt);
    m.params.drop_ldns_requests = true;
    // Even a backup method set on the vserver does not answer.
    m.vservers[VServerId::new(0)].backup_method = Some(LbMethod::RoundRobin);
    let s = snap(m, table());
    let unknown = "198.18.0.1";
    let (d, addrs) = ask(&s, &query(unknown), &mut Cursor::new(0));
    assert_eq!(d.outcome, Outcome::Drop);
    assert_eq!(d.reason, Reason::NoRttDropped);
    assert!(addrs.is_empty());
    // The DNS path hands the new LDNS to the prober all the same.
    assert_eq!(d.ldns, Some(LdnsUse::Unknown(ip(unknown))));
    let (_, steps) = explain(&s, &query(unknown));
    assert!(
        steps.iter().any(|l| l.contains("-dropLdnsReq ENABLED")),
        "{steps:?}"
    );
    // A measured LDNS is answered as usual.
    let (d, addrs) = ask(&s, &query(LDNS_AMS), &mut Cursor::new(0));
    assert_eq!(d.reason, Reason::Method(LbMethod::Rtt));
    assert_eq!(addrs, vec![ip(AMS_1)]);
    // Round robin elsewhere is not affected.
    let rr = Query {
        name: "rr.example.com",
        ..query(unknown)
    };
    let (d, addrs) = ask(&s, &rr, &mut Cursor::new(0));
    assert_eq!(d.reason, Reason::Method(LbMethod::RoundRobin));
    assert_eq!(addrs.len(), 1);
}

#[test]
fn a_backup_method_decides_without_an_rtt() {
    let mut m = model(LbMethod::Rtt);
    m.vservers[VServerId::new(0)].backup_method = Some(LbMethod::LeastConnection);
    let connections = [40u64, 30, 50, 7, 20];
    let metrics: Arc<[ServiceMetrics]> = connections
        .iter()
        .map(|c| ServiceMetrics {
            connections: Some(*c),
            ..ServiceMetrics::default()
        })
        .collect();
    let s = snap(m, table()).with_metrics(metrics);
    let unknown = "198.18.0.1";
    let (reason, counts) = answers(&s, &query(unknown), 10);
    assert_eq!(
        reason,
        Reason::Fallback {
            method: LbMethod::Rtt,
            backup: LbMethod::LeastConnection,
            why: FallbackWhy::NoRtt
        }
    );
    assert_eq!(answered(&counts), ips(&[NYC_1]));
    let (d, _) = ask(&s, &query(unknown), &mut Cursor::new(0));
    assert_eq!(d.ldns, Some(LdnsUse::Unknown(ip(unknown))));
    // With a known LDNS the RTT method itself decides, not the figures.
    let (reason, counts) = answers(&s, &query(LDNS_AMS), 10);
    assert_eq!(reason, Reason::Method(LbMethod::Rtt));
    assert_eq!(answered(&counts), ips(&[AMS_1]));
}

#[test]
fn a_row_where_no_candidate_site_has_an_rtt_falls_back() {
    let ldns = "192.0.2.77";
    // A row of unknowns only.
    let s = snap(
        model(LbMethod::Rtt),
        rtt_table(3, &[(ip(ldns), &[None, None, None])]),
    );
    let row = s.rtt().row(ip(ldns)).expect("row");
    let (d, _) = ask(&s, &query(ldns), &mut Cursor::new(0));
    assert_eq!(d.reason, NO_RTT);
    // The row exists: the DNS path marks it queried rather than asking the
    // prober for a new LDNS.
    assert_eq!(d.ldns, Some(LdnsUse::Known(row)));
    let (_, counts) = answers(&s, &query(ldns), 25);
    assert_eq!(counts.len(), 5);

    // Only fra has an RTT, and both fra services are DOWN.
    let s = snap(
        model(LbMethod::Rtt),
        rtt_table(3, &[(ip(ldns), &[Some(3), None, None])]),
    );
    let down = with_down(&s, &[ServiceId::new(0), ServiceId::new(1)]);
    let (reason, counts) = answers(&down, &query(ldns), 30);
    assert_eq!(reason, NO_RTT);
    assert_eq!(answered(&counts), ips(&[AMS_1, NYC_1, NYC_2]));
    let (_, steps) = explain(&down, &query(ldns));
    let steps = steps.join("\n");
    assert!(steps.contains("skipped fra-1"), "{steps}");
    assert!(
        steps.contains("ams-1 (192.0.2.11:80) at site ams: no RTT to the LDNS"),
        "{steps}"
    );
}

// -- what the decision says

#[test]
fn non_rtt_vservers_do_not_look_the_ldns_up() {
    let s = snap(model(LbMethod::RoundRobin), table());
    let (d, _) = ask(&s, &query(LDNS_AMS), &mut Cursor::new(0));
    assert_eq!(d.reason, Reason::Method(LbMethod::RoundRobin));
    assert_eq!(d.ldns, None);
    // The round-robin vserver of the RTT model, from a known LDNS.
    let s = rtt_snap();
    let q = Query {
        name: "rr.example.com",
        ..query(LDNS_AMS)
    };
    let (reason, counts) = answers(&s, &q, 10);
    assert_eq!(reason, Reason::Method(LbMethod::RoundRobin));
    assert_eq!(counts.len(), 5);
    assert_eq!(ask(&s, &q, &mut Cursor::new(0)).0.ldns, None);
    // Other methods neither.
    for method in [LbMethod::SourceIpHash, LbMethod::LeastConnection] {
        let s = snap(model(method), table());
        let (d, _) = ask(&s, &query(LDNS_AMS), &mut Cursor::new(0));
        assert_eq!(d.ldns, None, "{method}");
    }
}

#[test]
fn the_explanation_names_each_sites_rtt_and_the_best() {
    let s = with_down(&tolerance_snap(0), &[ServiceId::new(1)]);
    let (d, steps) = explain(&s, &query(LDNS_NEAR));
    assert_eq!(d.reason, Reason::Method(LbMethod::Rtt));
    let text = steps.join("\n");
    for line in [
        "fra-1 (192.0.2.1:80) at site fra: RTT to the LDNS 10.0 ms",
        "ams-1 (192.0.2.11:80) at site ams: RTT to the LDNS 14.0 ms",
        "nyc-1 (192.0.2.21:80) at site nyc: RTT to the LDNS 30.0 ms",
        "nyc-2 (192.0.2.22:80) at site nyc: RTT to the LDNS 30.0 ms",
        "RTT: the smallest is 10.0 ms; the services at that site are in the running",
        "passed over ams-1 (192.0.2.11:80): its site's RTT to the LDNS is beyond the best plus the tolerance",
        "RTT picked fra-1 (192.0.2.1:80)",
    ] {
        assert!(
            steps.iter().any(|l| l == line),
            "missing {line:?} in\n{text}"
        );
    }
    // The DOWN service is skipped, not measured.
    assert!(text.contains("skipped fra-2"), "{text}");
    assert!(!text.contains("fra-2 (192.0.2.2:80) at site fra"), "{text}");

    let (_, steps) = explain(&tolerance_snap(5), &query(LDNS_NEAR));
    let line = "RTT: the smallest is 10.0 ms; with the tolerance of 5.0 ms the services at sites up to 15.0 ms are in the running";
    assert!(steps.iter().any(|l| l == line), "{steps:#?}");
    assert!(
        steps
            .iter()
            .any(|l| l.starts_with("passed over nyc-1") && l.contains("RTT")),
        "{steps:#?}"
    );
    assert!(!steps.iter().any(|l| l.starts_with("passed over ams-1")));

    // An unknown cell is said to be unknown.
    let s = snap(
        model(LbMethod::Rtt),
        rtt_table(3, &[(ip(LDNS_NEAR), &[Some(10), None, Some(30)])]),
    );
    let (_, steps) = explain(&s, &query(LDNS_NEAR));
    assert!(
        steps.iter().any(|l| l.starts_with(
            "ams-1 (192.0.2.11:80) at site ams: no RTT to the LDNS (not measured yet"
        )),
        "{steps:#?}"
    );
    // ... and is passed over for that, not for being farther.
    assert!(
        steps
            .iter()
            .any(|l| l == "passed over ams-1 (192.0.2.11:80): its site has no RTT to the LDNS"),
        "{steps:#?}"
    );
    assert!(
        steps
            .iter()
            .any(|l| l.starts_with("passed over nyc-1") && l.contains("beyond the best")),
        "{steps:#?}"
    );
}

#[test]
fn deciding_by_rtt_does_not_allocate() {
    let mut with_backup = model(LbMethod::Rtt);
    with_backup.vservers[VServerId::new(0)].backup_method = Some(LbMethod::LeastConnection);
    with_backup.vservers[VServerId::new(0)].rtt_tolerance = Duration::from_millis(10);
    let metrics: Arc<[ServiceMetrics]> = (0..5u64)
        .map(|c| ServiceMetrics {
            connections: Some(10 - c),
            ..ServiceMetrics::default()
        })
        .collect();
    let snaps = [
        rtt_snap(),
        tolerance_snap(5),
        with_down(&rtt_snap(), &[ServiceId::new(0)]),
        snap(with_backup, table()).with_metrics(metrics),
    ];
    for s in &snaps {
        for source in [
            LDNS_AMS,
            LDNS_FRA,
            LDNS_NYC,
            LDNS_NEAR,
            "198.18.0.1",
            "2001:db8::53",
        ] {
            let q = query(source);
            let mut cursor = Cursor::new(1);
            let mut out = AnswerBuf::default();
            // Warm up: the answer buffer grows once.
            decide(s, &q, &mut cursor, &NoSessions, &mut out, &mut NoTrace);
            let before = allocations();
            for _ in 0..100 {
                std::hint::black_box(decide(
                    s,
                    &q,
                    &mut cursor,
                    &NoSessions,
                    &mut out,
                    &mut NoTrace,
                ));
            }
            assert_eq!(allocations(), before, "{source}");
        }
    }
}

proptest! {
    /// Whatever the RTTs, tolerance and health: the answer is an UP
    /// service whose site's RTT is at most the best UP site's plus the
    /// tolerance; without any UP site with an RTT the backup answers.
    #[test]
    fn the_answer_is_always_within_the_tolerance_of_the_best(
        rtts in proptest::collection::vec(proptest::option::of(0u64..200), 3),
        tolerance in 0u64..60,
        down in proptest::collection::vec(any::<bool>(), 5),
        seed in any::<u64>(),
        queries in 1usize..8,
        wide in any::<bool>(),
    ) {
        // Wide: 60 more bindings, all DOWN, past the 64 that the method
        // handles by bit mask; the answers must not change.
        let pad = if wide { 60 } else { 0 };
        let mut down_ids: Vec<ServiceId> = (0..5).filter(|i| down[*i]).map(ServiceId::from_index).collect();
        prop_assume!(down_ids.len() < 5);
        down_ids.extend((5..5 + pad).map(ServiceId::from_index));
        let mut m = padded_model(LbMethod::Rtt, pad);
        m.vservers[VServerId::new(0)].rtt_tolerance = Duration::from_millis(tolerance);
        let ldns = "192.0.2.200";
        let s = with_down(&snap(m, rtt_table(3, &[(ip(ldns), &rtts)])), &down_ids);
        let rtt_of = |i: usize| rtts[SERVICES[i].2 as usize];
        let best = (0..5).filter(|i| !down[*i]).filter_map(rtt_of).min();
        let mut cursor = Cursor::new(seed);
        for _ in 0..queries {
            let (d, addrs) = ask(&s, &query(ldns), &mut cursor);
            prop_assert_eq!(addrs.len(), 1);
            let i = SERVICES.iter().position(|(_, a, _)| ip(a) == addrs[0]).unwrap();
            prop_assert!(!down[i]);
            match best {
                Some(best) => {
                    prop_assert_eq!(d.reason, Reason::Method(LbMethod::Rtt));
                    let r = rtt_of(i);
                    prop_assert!(r.is_some_and(|r| r <= best + tolerance), "{:?} vs {}", r, best);
                }
                None => prop_assert_eq!(d.reason, NO_RTT),
            }
        }
    }
}

/// One persistence entry: every client of vserver 0 sticks to `service`.
struct Sticky(ServiceId);

impl Sessions for Sticky {
    fn lookup(&self, vserver: VServerId, _key: IpAddr) -> Option<ServiceId> {
        (vserver == VServerId::new(0)).then_some(self.0)
    }
}

#[test]
fn a_persisted_answer_still_keeps_the_ldns_in_use() {
    let mut m = model(LbMethod::Rtt);
    m.vservers[VServerId::new(0)].persistence = Some(Persistence {
        timeout: Duration::from_secs(60),
        v4_mask: 32,
        v6_mask: 128,
    });
    let s = snap(m, table());
    let nyc_1 = s.service_by_name("nyc-1").expect("nyc-1");
    let mut out = AnswerBuf::default();
    // A known LDNS: its row is marked queried although persistence answered.
    let d = decide(
        &s,
        &query(LDNS_AMS),
        &mut Cursor::new(1),
        &Sticky(nyc_1),
        &mut out,
        &mut NoTrace,
    );
    assert_eq!(d.reason, Reason::Persistence);
    assert_eq!(out.addrs, ips(&[NYC_1]));
    let row = s.rtt().row(ip(LDNS_AMS)).expect("row");
    assert_eq!(d.ldns, Some(LdnsUse::Known(row)));
    // An unknown one is still handed to the prober.
    let d = decide(
        &s,
        &query("192.0.2.200"),
        &mut Cursor::new(1),
        &Sticky(nyc_1),
        &mut out,
        &mut NoTrace,
    );
    assert_eq!(d.ldns, Some(LdnsUse::Unknown(ip("192.0.2.200"))));
}
