//! `decide` on static names: exact matches, NODATA, NXDOMAIN, empty
//! non-terminals, CNAME chains (in zone, to a GSLB domain, loops) and
//! referrals to delegated children.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use sextant_core::records::{TYPE_A, TYPE_ANY, TYPE_MX, TYPE_TXT, sort_records};
use sextant_core::{
    AnswerBuf, ChainEnd, Cursor, Decision, LbMethod, Model, NoSessions, NoTrace, Outcome, Query,
    QueryType, Reason, RecordData, ServiceState, Snapshot, StaticRecord, ZoneId, decide,
};
use sextant_test_support::model::{ip, www_model};

fn rec(name: &str, data: RecordData) -> StaticRecord {
    StaticRecord {
        name: name.into(),
        ttl: 300,
        data,
    }
}

fn a(last: u8) -> RecordData {
    RecordData::A(Ipv4Addr::new(192, 0, 2, last))
}

/// `www.example.com` is a GSLB domain (10.0.0.1, 10.0.0.2); the static
/// names around it cover every case.
fn model() -> Model {
    let mut m = www_model(
        &[("a", "10.0.0.1", 1), ("b", "10.0.0.2", 1)],
        LbMethod::RoundRobin,
    );
    m.records = vec![
        rec("ns1.example.com", a(53)),
        rec(
            "example.com",
            RecordData::Mx {
                preference: 10,
                exchange: "mail.example.com".into(),
            },
        ),
        rec("mail.example.com", a(25)),
        rec("www.example.com", RecordData::Txt(vec!["gslb".into()])),
        rec(
            "_sip._tcp.example.com",
            RecordData::Srv {
                priority: 1,
                weight: 1,
                port: 5060,
                target: "sip.example.com".into(),
            },
        ),
        rec(
            "alias.example.com",
            RecordData::Cname("mail.example.com".into()),
        ),
        rec(
            "web.example.com",
            RecordData::Cname("www.example.com".into()),
        ),
        rec(
            "two.example.com",
            RecordData::Cname("alias.example.com".into()),
        ),
        rec(
            "dangling.example.com",
            RecordData::Cname("nowhere.example.com".into()),
        ),
        rec(
            "out.example.com",
            RecordData::Cname("www.example.net".into()),
        ),
        rec(
            "loop1.example.com",
            RecordData::Cname("loop2.example.com".into()),
        ),
        rec(
            "loop2.example.com",
            RecordData::Cname("loop1.example.com".into()),
        ),
        rec(
            "child.example.com",
            RecordData::Ns("ns.child.example.com".into()),
        ),
        rec("ns.child.example.com", a(99)),
        rec("gslb.deep.example.com", a(7)),
    ];
    sort_records(&mut m.records);
    m
}

fn ask(snap: &Snapshot, name: &str, qtype: QueryType, out: &mut AnswerBuf) -> Decision {
    let q = Query {
        name,
        qtype,
        source: ip("198.51.100.1"),
        ecs: None,
    };
    decide(
        snap,
        &q,
        &mut Cursor::new(1),
        &NoSessions,
        out,
        &mut NoTrace,
    )
}

fn snap() -> Snapshot {
    Snapshot::new(Arc::new(model()), 1)
}

fn records_of(snap: &Snapshot, d: &Decision) -> Vec<StaticRecord> {
    match d.outcome {
        Outcome::Static {
            end: ChainEnd::Records { node, rtype },
        } => snap
            .records()
            .records(snap.model(), node)
            .iter()
            .filter(|r| rtype == TYPE_ANY || r.data.rtype() == rtype)
            .cloned()
            .collect(),
        other => panic!("expected static records, got {other:?}"),
    }
}

#[test]
fn exact_match_returns_the_records() {
    let s = snap();
    let mut out = AnswerBuf::default();
    let d = ask(&s, "ns1.example.com", QueryType::A, &mut out);
    assert_eq!(d.reason, Reason::Static);
    assert_eq!(records_of(&s, &d), vec![rec("ns1.example.com", a(53))]);
    let d = ask(&s, "example.com", QueryType::Other(TYPE_MX), &mut out);
    assert_eq!(records_of(&s, &d).len(), 1);
}

#[test]
fn gslb_domains_come_first_and_keep_other_types() {
    let s = snap();
    let mut out = AnswerBuf::default();
    let d = ask(&s, "www.example.com", QueryType::A, &mut out);
    assert!(matches!(d.outcome, Outcome::Addresses { .. }), "{d:?}");
    let d = ask(&s, "www.example.com", QueryType::Other(TYPE_TXT), &mut out);
    assert_eq!(
        records_of(&s, &d)[0].data,
        RecordData::Txt(vec!["gslb".into()])
    );
    // A GSLB name without static data of the type: NODATA, not NXDOMAIN.
    let d = ask(&s, "www.example.com", QueryType::Other(TYPE_MX), &mut out);
    assert_eq!(
        d.outcome,
        Outcome::NoData {
            zone: Some(ZoneId::new(0))
        }
    );
}

#[test]
fn nodata_nxdomain_and_empty_non_terminals() {
    let s = snap();
    let mut out = AnswerBuf::default();
    let d = ask(&s, "ns1.example.com", QueryType::Aaaa, &mut out);
    assert_eq!(
        d.outcome,
        Outcome::NoData {
            zone: Some(ZoneId::new(0))
        }
    );
    let d = ask(&s, "nothing.example.com", QueryType::A, &mut out);
    assert_eq!(
        d.outcome,
        Outcome::NxDomain {
            zone: ZoneId::new(0)
        }
    );
    // _tcp.example.com has _sip._tcp below it; deep.example.com has a name
    // below it: both exist, with no data.
    for ent in ["_tcp.example.com", "deep.example.com"] {
        let d = ask(&s, ent, QueryType::A, &mut out);
        assert_eq!(
            d.outcome,
            Outcome::NoData {
                zone: Some(ZoneId::new(0))
            },
            "{ent}"
        );
    }
    // Outside every zone: REFUSED as before.
    let d = ask(&s, "example.net", QueryType::A, &mut out);
    assert_eq!(d.outcome, Outcome::Refused);
}

#[test]
fn cname_chains_are_followed_in_zone() {
    let s = snap();
    let mut out = AnswerBuf::default();
    let d = ask(&s, "two.example.com", QueryType::A, &mut out);
    assert_eq!(records_of(&s, &d), vec![rec("mail.example.com", a(25))]);
    let names: Vec<&str> = out
        .chain
        .iter()
        .map(|i| s.model().records[*i as usize].name.as_str())
        .collect();
    assert_eq!(names, ["two.example.com", "alias.example.com"]);
    // qtype CNAME: just the CNAME.
    let d = ask(&s, "two.example.com", QueryType::Other(5), &mut out);
    assert!(out.chain.is_empty());
    assert_eq!(records_of(&s, &d).len(), 1);
}

#[test]
fn cname_to_a_gslb_domain_is_answered_by_the_gslb_decision() {
    let s = snap();
    let mut out = AnswerBuf::default();
    let d = ask(&s, "web.example.com", QueryType::A, &mut out);
    assert!(
        matches!(
            d.outcome,
            Outcome::Static {
                end: ChainEnd::Addresses { ttl: 30, .. }
            }
        ),
        "{d:?}"
    );
    assert_eq!(out.chain.len(), 1);
    assert_eq!(out.addrs.len(), 1);
    // With service a down, the chain ends at b.
    let s = s.with_states(vec![ServiceState { up: false }, ServiceState { up: true }].into());
    for _ in 0..4 {
        ask(&s, "web.example.com", QueryType::A, &mut out);
        assert_eq!(out.addrs, vec![IpAddr::from([10, 0, 0, 2])]);
    }
}

#[test]
fn chain_ends_dangling_outside_and_in_loops() {
    let s = snap();
    let mut out = AnswerBuf::default();
    let d = ask(&s, "dangling.example.com", QueryType::A, &mut out);
    assert_eq!(
        d.outcome,
        Outcome::Static {
            end: ChainEnd::NxDomain {
                zone: ZoneId::new(0)
            }
        }
    );
    assert_eq!(out.chain.len(), 1);
    let d = ask(&s, "out.example.com", QueryType::A, &mut out);
    assert_eq!(
        d.outcome,
        Outcome::Static {
            end: ChainEnd::Cnames
        }
    );
    let d = ask(&s, "loop1.example.com", QueryType::A, &mut out);
    assert_eq!(
        d.outcome,
        Outcome::Static {
            end: ChainEnd::Cnames
        }
    );
    assert_eq!(out.chain.len(), 2, "each CNAME of the loop once");
}

#[test]
fn names_at_and_below_a_delegation_get_a_referral() {
    let s = snap();
    let mut out = AnswerBuf::default();
    for name in [
        "child.example.com",
        "host.child.example.com",
        "ns.child.example.com",
    ] {
        let d = ask(&s, name, QueryType::A, &mut out);
        assert!(
            matches!(d.outcome, Outcome::Referral { .. }),
            "{name}: {d:?}"
        );
        assert_eq!(d.reason, Reason::Referral);
    }
    let d = ask(&s, "ns.child.example.com", QueryType::A, &mut out);
    let Outcome::Referral { cut } = d.outcome else {
        unreachable!()
    };
    let ns = s.records().records(s.model(), cut);
    assert_eq!(ns[0].data, RecordData::Ns("ns.child.example.com".into()));
}

#[test]
fn any_returns_the_names_records() {
    let s = snap();
    let mut out = AnswerBuf::default();
    let d = ask(&s, "example.com", QueryType::Any, &mut out);
    assert_eq!(records_of(&s, &d).len(), 1);
    let d = ask(&s, "alias.example.com", QueryType::Any, &mut out);
    assert!(out.chain.is_empty());
    assert_eq!(records_of(&s, &d)[0].data.rtype(), 5);
    let _ = TYPE_A;
}

/// DS is the parent's at a zone cut (RFC 4035 §3.1.4.1): at a delegation
/// and at the apex of a zone of ours below another, the parent side
/// answers (its DS records, or NODATA in the parent); elsewhere DS is an
/// ordinary type.
#[test]
fn ds_at_a_cut_is_answered_by_the_parent_side() {
    let mut m = model();
    let parent = m.zones[ZoneId::new(0)].clone();
    for apex in [
        "signed.example.com",
        "plain.example.com",
        "only.example.com",
    ] {
        let mut z = parent.clone();
        z.apex = apex.into();
        m.zones.push(z);
    }
    let ds = |tag: u16| RecordData::Ds {
        key_tag: tag,
        algorithm: 13,
        digest_type: 2,
        digest: vec![tag as u8; 32],
    };
    m.records.push(rec("child.example.com", ds(1)));
    m.records.push(rec("signed.example.com", ds(2)));
    m.records.push(rec("signed.example.com", a(2)));
    m.records.push(rec("only.example.com", ds(3)));
    sort_records(&mut m.records);
    let s = Snapshot::new(Arc::new(m), 1);
    let ds_type = QueryType::Other(sextant_core::records::TYPE_DS);
    let mut out = AnswerBuf::default();
    for (name, tag) in [("child.example.com", 1), ("signed.example.com", 2)] {
        let d = ask(&s, name, ds_type, &mut out);
        assert_eq!(records_of(&s, &d), vec![rec(name, ds(tag))], "{name}");
    }
    // No DS for the unsigned child of ours: NODATA from the parent zone.
    let d = ask(&s, "plain.example.com", ds_type, &mut out);
    assert_eq!(
        d.outcome,
        Outcome::NoData {
            zone: Some(ZoneId::new(0))
        }
    );
    // Other types at the child's apex are the child's; DS below a cut is
    // the child's business.
    let d = ask(&s, "signed.example.com", QueryType::A, &mut out);
    assert_eq!(records_of(&s, &d), vec![rec("signed.example.com", a(2))]);
    // ANY at a child's apex that has no records but the parent's DS: the
    // SOA (RFC 8482), as at any apex without records.
    let d = ask(&s, "only.example.com", QueryType::Any, &mut out);
    assert_eq!(
        d.outcome,
        Outcome::ZoneSoa {
            zone: ZoneId::new(3)
        }
    );
    let d = ask(&s, "www.plain.example.com", ds_type, &mut out);
    assert!(
        matches!(d.outcome, Outcome::NxDomain { zone } if zone == ZoneId::new(2)),
        "{d:?}"
    );
    let d = ask(&s, "host.child.example.com", ds_type, &mut out);
    assert!(matches!(d.outcome, Outcome::Referral { .. }), "{d:?}");
}
