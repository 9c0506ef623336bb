//! Static proximity, DNS policies and preferred locations in `decide`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use sextant_core::decide::ClientSubnet;
use sextant_core::*;
use sextant_test_support::model::{ModelBuilder, ip, service};

fn place(loc: &str) -> Place {
    Place {
        location: Location::parse(loc).unwrap(),
        coordinates: None,
    }
}

/// Seed 000's eight services, one per location, on one vserver; the client
/// network 192.0.2.0/24 is in Africa.ZMB.
const SEED: &[(&str, &str, &str)] = &[
    ("asia-in", "198.51.100.1", "Asia.IN"),
    ("asia-jpn", "198.51.100.2", "Asia.JPN"),
    ("asia-hk", "198.51.100.3", "Asia.hk"),
    ("europe-uk", "198.51.100.4", "Europe.uk"),
    ("europe-ru", "198.51.100.5", "Europe.RU"),
    ("europe-eg", "198.51.100.6", "Europe.EG"),
    ("africa-sd", "198.51.100.7", "Africa.SD"),
    ("africa-zmb", "198.51.100.8", "Africa.zmb"),
];

fn model(method: LbMethod, with_policy: bool) -> Model {
    let mut m = ModelBuilder::local_site1().build();
    let mut db = LocationDb::builder();
    db.add(
        ip("192.0.2.0"),
        ip("192.0.2.255"),
        place("Africa.ZMB.*.*"),
        Source::Custom,
    )
    .unwrap();
    db.add(
        ip("203.0.113.0"),
        ip("203.0.113.255"),
        place("Europe.RU.Moscow"),
        Source::Custom,
    )
    .unwrap();
    let mut vs = VServer::new("gv", ServiceProtocol::Http);
    vs.method = method;
    for (i, (name, addr, loc)) in SEED.iter().enumerate() {
        db.add(ip(addr), ip(addr), place(loc), Source::Custom)
            .unwrap();
        m.services.push(service(name, ip(addr)));
        vs.bindings.push(Binding {
            service: ServiceId::from_index(i),
            weight: 1,
        });
    }
    m.locations = Arc::new(db.build());
    m.vservers.push(vs);
    m.domains.push(Domain {
        name: "app.example.com".into(),
        vserver: VServerId::new(0),
        ttl: 5,
        backup_ip: None,
    });
    if with_policy {
        m.dns_actions.push(DnsAction {
            name: "prefLoc11".into(),
            kind: DnsActionKind::PreferredLocations(vec![
                Location::parse("Asia.HK").unwrap(),
                Location::parse("Europe.UK").unwrap(),
            ]),
        });
        let rule = r#"CLIENT.IP.SRC.MATCHES_LOCATION("*.ZMB.*.*")"#;
        m.dns_policies.push(DnsPolicy {
            name: "dnsPolPrefLoc".into(),
            rule: Expr::parse(rule).unwrap(),
            rule_text: rule.into(),
            action: DnsActionId::new(0),
        });
        m.dns_global_bindings.push(PolicyBinding {
            policy: DnsPolicyId::new(0),
            priority: 100,
            goto: Goto::End,
        });
    }
    m
}

fn with_down(m: &Model, down: &[&str]) -> Snapshot {
    let snap = Snapshot::new(Arc::new(m.clone()), 1);
    let states: Vec<_> = m
        .services
        .iter()
        .map(|s| ServiceState {
            up: !down.contains(&s.name.as_str()),
        })
        .collect();
    snap.with_states(states.into())
}

/// The set of service names answered over `n` queries from `client`.
fn answers(snap: &Snapshot, client: &str, n: usize) -> BTreeMap<String, usize> {
    let mut got = BTreeMap::new();
    let mut out = AnswerBuf::default();
    let mut cursor = Cursor::new(3);
    for _ in 0..n {
        let q = Query {
            name: "app.example.com",
            qtype: QueryType::A,
            source: ip(client),
            ecs: None,
        };
        decide(snap, &q, &mut cursor, &NoSessions, &mut out, &mut NoTrace);
        for a in &out.addrs {
            let name = snap
                .model()
                .services
                .iter()
                .find(|s| s.ip == *a)
                .map(|s| s.name.clone())
                .unwrap();
            *got.entry(name).or_insert(0) += 1;
        }
    }
    got
}

fn names(got: &BTreeMap<String, usize>) -> BTreeSet<&str> {
    got.keys().map(String::as_str).collect()
}

#[test]
fn seed_000_walk_through_step_by_step() {
    let m = model(LbMethod::StaticProximity, true);
    let zmb = "192.0.2.53";
    // 1. Asia.HK is a perfect match and UP.
    let got = answers(&with_down(&m, &[]), zmb, 8);
    assert_eq!(names(&got), BTreeSet::from(["asia-hk"]));
    // 2. Asia.HK down: Europe.UK, the second preferred location, perfectly.
    let got = answers(&with_down(&m, &["asia-hk"]), zmb, 8);
    assert_eq!(names(&got), BTreeSet::from(["europe-uk"]));
    // 3. Europe.UK down too: partial matches of Asia.HK, balanced.
    let got = answers(&with_down(&m, &["asia-hk", "europe-uk"]), zmb, 8);
    assert_eq!(names(&got), BTreeSet::from(["asia-in", "asia-jpn"]));
    assert_eq!(got["asia-in"], got["asia-jpn"]);
    //    ... only one of them up: that one.
    let got = answers(&with_down(&m, &["asia-hk", "europe-uk", "asia-in"]), zmb, 8);
    assert_eq!(names(&got), BTreeSet::from(["asia-jpn"]));
    // 4. All partial matches of Asia.HK down: partial matches of Europe.UK.
    let down = ["asia-hk", "europe-uk", "asia-in", "asia-jpn"];
    let got = answers(&with_down(&m, &down), zmb, 8);
    assert_eq!(names(&got), BTreeSet::from(["europe-eg", "europe-ru"]));
    assert_eq!(got["europe-eg"], got["europe-ru"]);
    // 5. Those down too: the remaining UP services, balanced.
    let down = [
        "asia-hk",
        "europe-uk",
        "asia-in",
        "asia-jpn",
        "europe-ru",
        "europe-eg",
    ];
    let got = answers(&with_down(&m, &down), zmb, 8);
    assert_eq!(names(&got), BTreeSet::from(["africa-sd", "africa-zmb"]));
    assert_eq!(got["africa-sd"], got["africa-zmb"]);
}

#[test]
fn seed_000_explain_names_policy_pass_and_candidates() {
    let m = model(LbMethod::StaticProximity, true);
    let snap = with_down(&m, &["asia-hk", "europe-uk"]);
    let q = Query {
        name: "app.example.com",
        qtype: QueryType::A,
        source: ip("192.0.2.53"),
        ecs: None,
    };
    let mut trace = VecTrace::default();
    let d = decide(
        &snap,
        &q,
        &mut Cursor::peeking(0),
        &NoSessions,
        &mut AnswerBuf::default(),
        &mut trace,
    );
    assert_eq!(
        d.reason,
        Reason::PreferredLocation {
            pass: MatchPass::Partial
        }
    );
    let text: Vec<String> = trace.0.iter().map(|e| e.describe(snap.model())).collect();
    let all = text.join("\n");
    assert!(
        all.contains("client 192.0.2.53 is at location africa.zmb"),
        "{all}"
    );
    assert!(all.contains("policy dnsPolPrefLoc"), "{all}");
    assert!(all.contains("matched: action prefLoc11"), "{all}");
    assert!(
        all.contains("perfect pass, preferred location 1 (asia.hk): 0 UP matches, 1 not UP"),
        "{all}"
    );
    assert!(
        all.contains("perfect pass, preferred location 2 (europe.uk): 0 UP matches, 1 not UP"),
        "{all}"
    );
    assert!(
        all.contains("partial pass, preferred location 1 (asia.hk): 2 UP matches"),
        "{all}"
    );
    assert!(
        all.contains("skipped asia-hk (198.51.100.3:80), location asia.hk: DOWN"),
        "{all}"
    );
    assert!(all.contains("passed over africa-sd (198.51.100.7:80), location africa.sd: not a partial match for asia.hk"), "{all}");
}

#[test]
fn policy_that_does_not_match_leaves_the_method_in_charge() {
    let m = model(LbMethod::StaticProximity, true);
    // A client in Europe.RU.Moscow: the ZMB policy is false, proximity picks Europe.RU.
    let got = answers(&with_down(&m, &[]), "203.0.113.9", 6);
    assert_eq!(names(&got), BTreeSet::from(["europe-ru"]));
}

#[test]
fn static_proximity_longest_prefix_then_balance() {
    let m = model(LbMethod::StaticProximity, false);
    // Client in Africa.ZMB: the Africa.zmb service shares two qualifiers.
    let got = answers(&with_down(&m, &[]), "192.0.2.10", 4);
    assert_eq!(names(&got), BTreeSet::from(["africa-zmb"]));
    // It is down: Africa.SD shares one qualifier, the best left.
    let got = answers(&with_down(&m, &["africa-zmb"]), "192.0.2.10", 4);
    assert_eq!(names(&got), BTreeSet::from(["africa-sd"]));
    // Both down: nothing shares even the continent and there are no
    // coordinates: the backup method (round robin) over all UP services.
    let snap = with_down(&m, &["africa-zmb", "africa-sd"]);
    let got = answers(&snap, "192.0.2.10", 12);
    assert_eq!(got.len(), 6);
    let q = Query {
        name: "app.example.com",
        qtype: QueryType::A,
        source: ip("192.0.2.10"),
        ecs: None,
    };
    let d = decide(
        &snap,
        &q,
        &mut Cursor::new(0),
        &NoSessions,
        &mut AnswerBuf::default(),
        &mut NoTrace,
    );
    assert!(matches!(
        d.reason,
        Reason::Fallback {
            method: LbMethod::StaticProximity,
            why: FallbackWhy::NoSharedLocation,
            ..
        }
    ));
}

#[test]
fn static_proximity_without_client_location_falls_back_visibly() {
    let m = model(LbMethod::StaticProximity, false);
    let snap = with_down(&m, &[]);
    let q = Query {
        name: "app.example.com",
        qtype: QueryType::A,
        source: ip("100.64.0.1"),
        ecs: None,
    };
    let mut trace = VecTrace::default();
    let d = decide(
        &snap,
        &q,
        &mut Cursor::new(0),
        &NoSessions,
        &mut AnswerBuf::default(),
        &mut trace,
    );
    assert!(matches!(
        d.reason,
        Reason::Fallback {
            why: FallbackWhy::NoClientLocation,
            backup: LbMethod::RoundRobin,
            ..
        }
    ));
    let all: Vec<_> = trace.0.iter().map(|e| e.describe(snap.model())).collect();
    assert!(
        all.iter().any(|l| l.contains("no entry for the client")),
        "{all:?}"
    );
}

#[test]
fn ecs_address_is_the_client_where_the_vserver_enables_it() {
    let mut m = model(LbMethod::StaticProximity, true);
    m.vservers[VServerId::new(0)].ecs = true;
    let snap = with_down(&m, &[]);
    // The LDNS is in Europe.RU.Moscow but the ECS subnet is in Africa.ZMB:
    // the policy matches and Asia.HK answers, with the ECS scope.
    let q = Query {
        name: "app.example.com",
        qtype: QueryType::A,
        source: ip("203.0.113.9"),
        ecs: Some(ClientSubnet {
            addr: ip("192.0.2.0"),
            source_prefix: 24,
        }),
    };
    let mut out = AnswerBuf::default();
    let d = decide(
        &snap,
        &q,
        &mut Cursor::new(0),
        &NoSessions,
        &mut out,
        &mut NoTrace,
    );
    assert_eq!(out.addrs, vec![ip("198.51.100.3")]);
    assert_eq!(d.ecs_scope, 24);
    // Without ECS on the vserver, the LDNS address decides: Europe.RU.
    m.vservers[VServerId::new(0)].ecs = false;
    let snap = with_down(&m, &[]);
    decide(
        &snap,
        &q,
        &mut Cursor::new(0),
        &NoSessions,
        &mut out,
        &mut NoTrace,
    );
    assert_eq!(out.addrs, vec![ip("198.51.100.5")]);
}

#[test]
fn wildcard_perfect_matches_are_balanced() {
    let mut m = model(LbMethod::RoundRobin, true);
    m.dns_actions[DnsActionId::new(0)].kind =
        DnsActionKind::PreferredLocations(vec![Location::parse("Europe.*.*.*").unwrap()]);
    let got = answers(&with_down(&m, &[]), "192.0.2.53", 9);
    assert_eq!(
        names(&got),
        BTreeSet::from(["europe-eg", "europe-ru", "europe-uk"])
    );
    assert!(got.values().all(|n| *n == 3), "{got:?}");
}

#[test]
fn drop_action_drops_and_next_goes_on() {
    let mut m = model(LbMethod::RoundRobin, true);
    m.dns_actions.push(DnsAction {
        name: "dropper".into(),
        kind: DnsActionKind::Drop,
    });
    let rule = "CLIENT.IP.SRC.IN_SUBNET(203.0.113.0/24)";
    m.dns_policies.push(DnsPolicy {
        name: "drop-bad".into(),
        rule: Expr::parse(rule).unwrap(),
        rule_text: rule.into(),
        action: DnsActionId::new(1),
    });
    m.dns_global_bindings.insert(
        0,
        PolicyBinding {
            policy: DnsPolicyId::new(1),
            priority: 10,
            goto: Goto::End,
        },
    );
    let snap = with_down(&m, &[]);
    let mut out = AnswerBuf::default();
    let q = |src: &'static str| Query {
        name: "app.example.com",
        qtype: QueryType::A,
        source: ip(src),
        ecs: None,
    };
    let d = decide(
        &snap,
        &q("203.0.113.9"),
        &mut Cursor::new(0),
        &NoSessions,
        &mut out,
        &mut NoTrace,
    );
    assert_eq!(d.outcome, Outcome::Drop);
    let d = decide(
        &snap,
        &q("192.0.2.53"),
        &mut Cursor::new(0),
        &NoSessions,
        &mut out,
        &mut NoTrace,
    );
    assert_eq!(
        d.reason,
        Reason::PreferredLocation {
            pass: MatchPass::Perfect
        }
    );
    // A NOOP policy first, with END, stops the walk before the preferred locations.
    m.dns_actions.push(DnsAction {
        name: "nothing".into(),
        kind: DnsActionKind::Noop,
    });
    m.dns_policies.push(DnsPolicy {
        name: "all".into(),
        rule: Expr::Const(true),
        rule_text: "true".into(),
        action: DnsActionId::new(2),
    });
    m.dns_global_bindings.insert(
        0,
        PolicyBinding {
            policy: DnsPolicyId::new(2),
            priority: 1,
            goto: Goto::End,
        },
    );
    let snap = with_down(&m, &[]);
    let d = decide(
        &snap,
        &q("192.0.2.53"),
        &mut Cursor::new(0),
        &NoSessions,
        &mut out,
        &mut NoTrace,
    );
    assert_eq!(d.reason, Reason::Method(LbMethod::RoundRobin));
    // With NEXT it goes on and the preferred locations apply.
    m.dns_global_bindings[0].goto = Goto::Next;
    let snap = with_down(&m, &[]);
    let d = decide(
        &snap,
        &q("192.0.2.53"),
        &mut Cursor::new(0),
        &NoSessions,
        &mut out,
        &mut NoTrace,
    );
    assert_eq!(
        d.reason,
        Reason::PreferredLocation {
            pass: MatchPass::Perfect
        }
    );
}

#[test]
fn ipv6_locations() {
    let mut m = model(LbMethod::StaticProximity, false);
    let mut db = LocationDb::builder();
    db.add(
        ip("2001:db8::"),
        ip("2001:db8::ffff"),
        place("Europe.UK.London"),
        Source::Custom,
    )
    .unwrap();
    db.add(
        ip("2001:db8:1::1"),
        ip("2001:db8:1::1"),
        place("Europe.UK.Leeds"),
        Source::Custom,
    )
    .unwrap();
    db.add(
        ip("2001:db8:2::1"),
        ip("2001:db8:2::1"),
        place("Europe.FR.Paris"),
        Source::Custom,
    )
    .unwrap();
    m.locations = Arc::new(db.build());
    for (i, a) in ["2001:db8:1::1", "2001:db8:2::1"].iter().enumerate() {
        m.services[ServiceId::from_index(i)].ip = ip(a);
    }
    m.vservers[VServerId::new(0)].bindings.truncate(2);
    let snap = with_down(&m, &[]);
    let q = Query {
        name: "app.example.com",
        qtype: QueryType::Aaaa,
        source: ip("2001:db8::53"),
        ecs: None,
    };
    let mut out = AnswerBuf::default();
    decide(
        &snap,
        &q,
        &mut Cursor::new(0),
        &NoSessions,
        &mut out,
        &mut NoTrace,
    );
    assert_eq!(out.addrs, vec![ip("2001:db8:1::1")]);
}
