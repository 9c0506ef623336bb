//! Behaviour of `decide` on hand-built models.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

use proptest::prelude::*;
use sextant_core::decide::ClientSubnet;
use sextant_core::*;
use sextant_test_support::model::{ip, service, snapshot as snap, with_down, www_model as model};

fn q<'a>(name: &'a str, qtype: QueryType, source: &str) -> Query<'a> {
    Query {
        name,
        qtype,
        source: ip(source),
        ecs: None,
    }
}

fn ask(s: &Snapshot, query: &Query<'_>, cursor: &mut Cursor) -> (Decision, Vec<IpAddr>) {
    let mut out = AnswerBuf::default();
    let d = decide(s, query, cursor, &NoSessions, &mut out, &mut NoTrace);
    (d, out.addrs)
}

fn explain(s: &Snapshot, query: &Query<'_>) -> Vec<String> {
    let mut out = AnswerBuf::default();
    let mut t = VecTrace::default();
    decide(s, query, &mut Cursor::new(0), &NoSessions, &mut out, &mut t);
    t.0.iter().map(|e| e.describe(s.model())).collect()
}

const THREE: &[(&str, &str, u32)] = &[
    ("a", "192.0.2.1", 1),
    ("b", "192.0.2.2", 1),
    ("c", "192.0.2.3", 1),
];

#[test]
fn round_robin_rotates_over_up_services() {
    let s = snap(model(THREE, LbMethod::RoundRobin));
    let mut c = Cursor::new(1);
    let got: Vec<_> = (0..6)
        .map(|_| {
            ask(
                &s,
                &q("www.example.com", QueryType::A, "198.51.100.1"),
                &mut c,
            )
            .1[0]
        })
        .collect();
    assert_eq!(
        got,
        [
            "192.0.2.1",
            "192.0.2.2",
            "192.0.2.3",
            "192.0.2.1",
            "192.0.2.2",
            "192.0.2.3"
        ]
        .map(ip)
        .to_vec()
    );
    let down = with_down(&s, &[ServiceId::new(1)]);
    let got: Vec<_> = (0..4)
        .map(|_| {
            ask(
                &down,
                &q("www.example.com", QueryType::A, "198.51.100.1"),
                &mut c,
            )
            .1[0]
        })
        .collect();
    assert!(!got.contains(&ip("192.0.2.2")));
    assert!(got.contains(&ip("192.0.2.1")) && got.contains(&ip("192.0.2.3")));
}

#[test]
fn weights_share_answers_exactly_over_a_cycle() {
    let s = snap(model(
        &[("a", "192.0.2.1", 3), ("b", "192.0.2.2", 1)],
        LbMethod::RoundRobin,
    ));
    let mut c = Cursor::new(7);
    let mut counts = HashMap::new();
    for _ in 0..400 {
        let a = ask(
            &s,
            &q("www.example.com", QueryType::A, "198.51.100.1"),
            &mut c,
        )
        .1[0];
        *counts.entry(a).or_insert(0) += 1;
    }
    assert_eq!(counts[&ip("192.0.2.1")], 300);
    assert_eq!(counts[&ip("192.0.2.2")], 100);
}

#[test]
fn answers_carry_ttl_and_outcome() {
    let s = snap(model(THREE, LbMethod::RoundRobin));
    let (d, addrs) = ask(
        &s,
        &q("www.example.com", QueryType::A, "198.51.100.1"),
        &mut Cursor::new(0),
    );
    assert_eq!(addrs.len(), 1);
    assert_eq!(
        d.outcome,
        Outcome::Addresses {
            domain: DomainId::new(0),
            ttl: 30
        }
    );
    assert_eq!(d.reason, Reason::Method(LbMethod::RoundRobin));
}

#[test]
fn zone_answers_nxdomain_nodata_refused() {
    let s = snap(model(THREE, LbMethod::RoundRobin));
    let mut c = Cursor::new(0);
    let outcome = |name, t| {
        ask(&s, &q(name, t, "198.51.100.1"), &mut Cursor::new(0))
            .0
            .outcome
    };
    assert_eq!(
        outcome("example.com", QueryType::Soa),
        Outcome::ZoneSoa {
            zone: ZoneId::new(0)
        }
    );
    assert_eq!(
        outcome("example.com", QueryType::Ns),
        Outcome::ZoneNs {
            zone: ZoneId::new(0)
        }
    );
    assert_eq!(
        outcome("example.com", QueryType::A),
        Outcome::NoData {
            zone: Some(ZoneId::new(0))
        }
    );
    assert_eq!(
        outcome("nope.example.com", QueryType::A),
        Outcome::NxDomain {
            zone: ZoneId::new(0)
        }
    );
    assert_eq!(
        outcome("www.example.com", QueryType::Other(16)),
        Outcome::NoData {
            zone: Some(ZoneId::new(0))
        }
    );
    assert_eq!(outcome("example.org", QueryType::A), Outcome::Refused);
    assert_eq!(outcome("", QueryType::A), Outcome::Refused);
    // AAAA for a v4-only vserver: NODATA with the zone's SOA
    let (d, addrs) = ask(
        &s,
        &q("www.example.com", QueryType::Aaaa, "198.51.100.1"),
        &mut c,
    );
    assert!(addrs.is_empty());
    assert_eq!(
        d.outcome,
        Outcome::NoData {
            zone: Some(ZoneId::new(0))
        }
    );
    assert_eq!(d.reason, Reason::NoAddressOfFamily);
}

#[test]
fn families_are_kept_apart() {
    let s = snap(model(
        &[("v4", "192.0.2.1", 1), ("v6", "2001:db8::1", 1)],
        LbMethod::RoundRobin,
    ));
    let mut c = Cursor::new(0);
    for _ in 0..4 {
        assert_eq!(
            ask(
                &s,
                &q("www.example.com", QueryType::A, "198.51.100.1"),
                &mut c
            )
            .1,
            vec![ip("192.0.2.1")]
        );
        assert_eq!(
            ask(
                &s,
                &q("www.example.com", QueryType::Aaaa, "198.51.100.1"),
                &mut c
            )
            .1,
            vec![ip("2001:db8::1")]
        );
    }
}

#[test]
fn all_down_chain_backup_vserver_then_backup_ip_then_edr_then_last_resort() {
    let mut m = model(THREE, LbMethod::RoundRobin);
    m.services.push(service("spare", ip("192.0.2.9")));
    let mut backup = VServer::new("backup", ServiceProtocol::Http);
    backup.method = LbMethod::RoundRobin;
    backup.bindings.push(Binding {
        service: ServiceId::new(3),
        weight: 1,
    });
    m.vservers.push(backup);
    m.vservers[VServerId::new(0)].backup_vserver = Some(VServerId::new(1));
    let query = q("www.example.com", QueryType::A, "198.51.100.1");
    let mut c = Cursor::new(0);

    let s = with_down(
        &snap(m.clone()),
        &[ServiceId::new(0), ServiceId::new(1), ServiceId::new(2)],
    );
    let (d, addrs) = ask(&s, &query, &mut c);
    assert_eq!(
        (d.reason, addrs),
        (Reason::BackupVServer, vec![ip("192.0.2.9")])
    );

    m.domains[DomainId::new(0)].backup_ip = Some(ip("203.0.113.1"));
    let s = with_down(
        &snap(m.clone()),
        &[
            ServiceId::new(0),
            ServiceId::new(1),
            ServiceId::new(2),
            ServiceId::new(3),
        ],
    );
    let (d, addrs) = ask(&s, &query, &mut c);
    assert_eq!(
        (d.reason, addrs),
        (Reason::BackupIp, vec![ip("203.0.113.1")])
    );

    m.domains[DomainId::new(0)].backup_ip = None;
    let s = with_down(
        &snap(m.clone()),
        &[
            ServiceId::new(0),
            ServiceId::new(1),
            ServiceId::new(2),
            ServiceId::new(3),
        ],
    );
    let (d, addrs) = ask(&s, &query, &mut c);
    assert_eq!(d.reason, Reason::LastResort);
    assert_eq!(addrs.len(), 1);
    assert!(
        explain(&s, &query)
            .iter()
            .any(|l| l.contains("last-resort"))
    );

    m.vservers[VServerId::new(0)].empty_down_response = true;
    let s = with_down(
        &snap(m),
        &[
            ServiceId::new(0),
            ServiceId::new(1),
            ServiceId::new(2),
            ServiceId::new(3),
        ],
    );
    let (d, addrs) = ask(&s, &query, &mut c);
    assert_eq!(d.reason, Reason::EmptyDownResponse);
    assert!(addrs.is_empty());
    assert_eq!(
        d.outcome,
        Outcome::NoData {
            zone: Some(ZoneId::new(0))
        }
    );
}

#[test]
fn backup_vserver_cycles_end() {
    let mut m = model(THREE, LbMethod::RoundRobin);
    let mut other = VServer::new("other", ServiceProtocol::Http);
    other.backup_vserver = Some(VServerId::new(0));
    m.vservers.push(other);
    m.vservers[VServerId::new(0)].backup_vserver = Some(VServerId::new(1));
    m.vservers[VServerId::new(0)].empty_down_response = true;
    let s = with_down(
        &snap(m),
        &[ServiceId::new(0), ServiceId::new(1), ServiceId::new(2)],
    );
    let (d, _) = ask(
        &s,
        &q("www.example.com", QueryType::A, "198.51.100.1"),
        &mut Cursor::new(0),
    );
    assert_eq!(d.reason, Reason::EmptyDownResponse);
}

#[test]
fn multi_ip_response_answers_every_up_service() {
    let mut m = model(THREE, LbMethod::RoundRobin);
    m.vservers[VServerId::new(0)].multi_ip_response = true;
    let s = with_down(&snap(m), &[ServiceId::new(1)]);
    let (d, addrs) = ask(
        &s,
        &q("www.example.com", QueryType::A, "198.51.100.1"),
        &mut Cursor::new(0),
    );
    assert_eq!(d.reason, Reason::MultiIp);
    assert_eq!(addrs, vec![ip("192.0.2.1"), ip("192.0.2.3")]);
}

#[test]
fn source_ip_hash_is_stable_and_uses_ecs_when_enabled() {
    let mut m = model(THREE, LbMethod::SourceIpHash);
    m.vservers[VServerId::new(0)].hash_v4_mask = 24;
    let s = snap(m.clone());
    let mut c = Cursor::new(0);
    let first = ask(
        &s,
        &q("www.example.com", QueryType::A, "198.51.100.1"),
        &mut c,
    )
    .1;
    for last in 0..=255u8 {
        let src = format!("198.51.100.{last}");
        assert_eq!(
            ask(&s, &q("www.example.com", QueryType::A, &src), &mut c).1,
            first
        );
    }
    // ECS is ignored unless the vserver enables it.
    let mut query = q("www.example.com", QueryType::A, "198.51.100.1");
    let spread: std::collections::HashSet<_> = (0..64u8)
        .map(|n| {
            query.ecs = Some(ClientSubnet {
                addr: ip(&format!("10.{n}.0.0")),
                source_prefix: 24,
            });
            ask(&s, &query, &mut c).1[0]
        })
        .collect();
    assert_eq!(spread.len(), 1);
    assert_eq!(ask(&s, &query, &mut c).0.ecs_scope, 0);
    m.vservers[VServerId::new(0)].ecs = true;
    let s = snap(m);
    let spread: std::collections::HashSet<_> = (0..64u8)
        .map(|n| {
            query.ecs = Some(ClientSubnet {
                addr: ip(&format!("10.{n}.0.0")),
                source_prefix: 24,
            });
            ask(&s, &query, &mut c).1[0]
        })
        .collect();
    assert!(
        spread.len() > 1,
        "ECS addresses should spread over services"
    );
    assert_eq!(ask(&s, &query, &mut c).0.ecs_scope, 24);
}

struct OneSession(ServiceId);
impl Sessions for OneSession {
    fn lookup(&self, _vserver: VServerId, _key: IpAddr) -> Option<ServiceId> {
        Some(self.0)
    }
}

#[test]
fn persistence_keeps_the_client_while_its_service_is_up() {
    let mut m = model(THREE, LbMethod::RoundRobin);
    m.vservers[VServerId::new(0)].persistence = Some(Persistence {
        timeout: Duration::from_secs(120),
        v4_mask: 24,
        v6_mask: 64,
    });
    let s = snap(m);
    let mut out = AnswerBuf::default();
    let query = q("www.example.com", QueryType::A, "198.51.100.77");
    for _ in 0..5 {
        let d = decide(
            &s,
            &query,
            &mut Cursor::new(0),
            &OneSession(ServiceId::new(2)),
            &mut out,
            &mut NoTrace,
        );
        assert_eq!(out.addrs, vec![ip("192.0.2.3")]);
        assert_eq!(d.reason, Reason::Persistence);
        assert_eq!(
            d.stick,
            Some(Stick {
                vserver: VServerId::new(0),
                key: ip("198.51.100.0"),
                service: ServiceId::new(2)
            })
        );
    }
    // Its service goes down: a new one is chosen and the edge is told to stick to it.
    let down = with_down(&s, &[ServiceId::new(2)]);
    let d = decide(
        &down,
        &query,
        &mut Cursor::new(0),
        &OneSession(ServiceId::new(2)),
        &mut out,
        &mut NoTrace,
    );
    assert_eq!(d.reason, Reason::Method(LbMethod::RoundRobin));
    assert_ne!(out.addrs, vec![ip("192.0.2.3")]);
    assert!(matches!(d.stick, Some(Stick { service, .. }) if service != ServiceId::new(2)));
}

#[test]
fn methods_without_inputs_fall_back_visibly() {
    for method in [
        LbMethod::LeastConnection,
        LbMethod::LeastResponseTime,
        LbMethod::LeastBandwidth,
        LbMethod::LeastPackets,
        LbMethod::CustomLoad,
        LbMethod::StaticProximity,
        LbMethod::Rtt,
    ] {
        let mut m = model(THREE, method);
        m.vservers[VServerId::new(0)].backup_method = Some(LbMethod::SourceIpHash);
        let s = snap(m);
        let query = q("www.example.com", QueryType::A, "198.51.100.1");
        let (d, addrs) = ask(&s, &query, &mut Cursor::new(0));
        assert_eq!(addrs.len(), 1);
        assert!(
            matches!(d.reason, Reason::Fallback { method: m, backup: LbMethod::SourceIpHash, .. } if m == method)
        );
        let steps = explain(&s, &query).join("\n");
        assert!(steps.contains("backup method SOURCEIPHASH"), "{steps}");
        assert!(steps.contains(method.as_str()), "{steps}");
    }
}

#[test]
fn trace_lists_every_candidate() {
    let s = with_down(
        &snap(model(THREE, LbMethod::RoundRobin)),
        &[ServiceId::new(1)],
    );
    let steps = explain(&s, &q("www.example.com", QueryType::A, "198.51.100.1"));
    assert!(steps.iter().any(|l| l.starts_with("candidate a")));
    assert!(
        steps
            .iter()
            .any(|l| l.starts_with("skipped b") && l.contains("DOWN"))
    );
    assert!(steps.iter().any(|l| l.starts_with("candidate c")));
    assert!(steps.iter().any(|l| l.contains("ROUNDROBIN picked")));
}

proptest! {
    /// Whatever the health, an answer never names a DOWN service while an
    /// UP one of the family exists, and it is never empty unless EDR is on.
    #[test]
    fn never_answers_down_when_up_exists(down in proptest::collection::vec(any::<bool>(), 6),
                                         weights in proptest::collection::vec(1u32..100, 6),
                                         method in prop::sample::select(vec![LbMethod::RoundRobin, LbMethod::SourceIpHash, LbMethod::LeastConnection]),
                                         src in any::<u32>(), seed in any::<u64>()) {
        let names = ["a", "b", "c", "d", "e", "f"];
        let addrs: Vec<String> = (1..=6).map(|i| format!("192.0.2.{i}")).collect();
        let svcs: Vec<(&str, &str, u32)> = (0..6).map(|i| (names[i], addrs[i].as_str(), weights[i])).collect();
        let s = snap(model(&svcs, method));
        let down_ids: Vec<ServiceId> = (0..6).filter(|i| down[*i]).map(ServiceId::from_index).collect();
        let s = with_down(&s, &down_ids);
        let source = IpAddr::from(src.to_be_bytes());
        let query = Query { name: "www.example.com", qtype: QueryType::A, source, ecs: None };
        let mut c = Cursor::new(seed);
        for _ in 0..8 {
            let (_, got) = ask(&s, &query, &mut c);
            prop_assert_eq!(got.len(), 1);
            let idx = addrs.iter().position(|a| ip(a) == got[0]).unwrap();
            if down_ids.len() < 6 {
                prop_assert!(!down[idx]);
            }
        }
    }
}

#[test]
fn a_child_site_refuses_everything() {
    let mut m = model(THREE, LbMethod::RoundRobin);
    m.sites.push(Site::new("parent", ip("10.0.0.2")));
    m.sites[SiteId::new(0)].parent = Some(SiteId::new(1));
    let s = snap(m);
    for (name, t) in [
        ("www.example.com", QueryType::A),
        ("example.com", QueryType::Soa),
    ] {
        let (d, addrs) = ask(&s, &q(name, t, "198.51.100.1"), &mut Cursor::new(0));
        assert_eq!((d.outcome, d.reason), (Outcome::Refused, Reason::ChildSite));
        assert!(addrs.is_empty());
    }
}
