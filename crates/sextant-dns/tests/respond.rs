//! Behaviour of `respond`, checked with an independent parser (hickory).

mod common;

use std::net::IpAddr;

use common::model::{BIG_SERVICES, HUGE_SERVICES, WWW_V4, WWW_V6};
use common::{CLIENT, QueryBuilder, Server, ecs_option};
use hickory_proto::op::{MessageType, OpCode, ResponseCode};
use hickory_proto::rr::rdata::opt::{EdnsCode, EdnsOption};
use hickory_proto::rr::{RData, RecordType};
use sextant_core::{DomainId, ZoneId};
use sextant_dns::{DnsShared, Transport, Worker, parse_query, respond};
use sextant_test_support::dns::{answer_addrs, decode};

const A: u16 = 1;
const NS: u16 = 2;
const SOA: u16 = 6;
const TXT: u16 = 16;
const AAAA: u16 = 28;

fn soa_of(rdata: &RData) -> &hickory_proto::rr::rdata::SOA {
    match rdata {
        RData::SOA(s) => s,
        other => panic!("expected SOA, got {other:?}"),
    }
}

#[test]
fn a_answer_is_authoritative_with_domain_ttl() {
    let mut s = Server::new();
    let m = s.udp(&QueryBuilder::new("www.example.com", A).build());
    assert_eq!(m.metadata.id, 0xbeef);
    assert_eq!(m.metadata.message_type, MessageType::Response);
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert!(m.metadata.authoritative);
    assert!(m.metadata.recursion_desired, "RD copied");
    assert!(!m.metadata.recursion_available);
    assert!(!m.metadata.truncation);
    assert_eq!(answer_addrs(&m), vec![IpAddr::from(WWW_V4)]);
    assert_eq!(m.answers[0].ttl, 30);
    assert_eq!(m.answers[0].name.to_ascii(), "www.example.com.");
    assert!(m.authorities.is_empty() && m.additionals.is_empty());
    assert!(m.edns.is_none(), "no OPT without OPT in the query");
}

#[test]
fn aaaa_answer() {
    let mut s = Server::new();
    let m = s.udp(&QueryBuilder::new("www.example.com", AAAA).build());
    assert!(m.metadata.authoritative);
    assert_eq!(answer_addrs(&m), vec![WWW_V6.parse::<IpAddr>().unwrap()]);
    assert_eq!(m.answers[0].record_type(), RecordType::AAAA);
    assert_eq!(m.answers[0].ttl, 30);
}

#[test]
fn nodata_carries_soa_with_negative_ttl() {
    let mut s = Server::new();
    let m = s.udp(&QueryBuilder::new("www.example.com", TXT).build());
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert!(m.metadata.authoritative);
    assert!(m.answers.is_empty());
    assert_eq!(m.authorities.len(), 1);
    let auth = &m.authorities[0];
    assert_eq!(auth.name.to_ascii(), "example.com.");
    assert_eq!(auth.ttl, 300, "min(SOA TTL 3600, MINIMUM 300)");
    let soa = soa_of(&auth.data);
    assert_eq!(soa.mname.to_ascii(), "ns1.example.com.");
    assert_eq!(soa.rname.to_ascii(), "hostmaster.example.com.");
    assert_eq!(soa.serial, 2024010101);
}

#[test]
fn nxdomain_under_the_zone() {
    let mut s = Server::new();
    let m = s.udp(&QueryBuilder::new("nope.sub.example.com", A).build());
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
    assert!(m.metadata.authoritative);
    assert!(m.answers.is_empty());
    assert_eq!(m.authorities[0].name.to_ascii(), "example.com.");
    assert_eq!(m.authorities[0].ttl, 300);
    soa_of(&m.authorities[0].data);
}

#[test]
fn refused_outside_our_zones() {
    let mut s = Server::new();
    let m = s.udp(&QueryBuilder::new("www.example.org", A).build());
    assert_eq!(m.metadata.response_code, ResponseCode::Refused);
    assert!(!m.metadata.authoritative);
    assert!(m.answers.is_empty() && m.authorities.is_empty());
    assert_eq!(m.queries.len(), 1, "question echoed");
}

#[test]
fn soa_and_ns_at_the_apex() {
    let mut s = Server::new();
    let m = s.udp(&QueryBuilder::new("example.com", SOA).build());
    assert!(m.metadata.authoritative);
    assert_eq!(m.answers.len(), 1);
    assert_eq!(m.answers[0].ttl, 3600);
    assert_eq!(soa_of(&m.answers[0].data).minimum, 300);

    let m = s.udp(&QueryBuilder::new("example.com", NS).build());
    assert!(m.metadata.authoritative);
    let targets: Vec<String> = m
        .answers
        .iter()
        .map(|r| match &r.data {
            RData::NS(ns) => ns.0.to_ascii(),
            other => panic!("expected NS, got {other:?}"),
        })
        .collect();
    assert_eq!(targets, ["ns1.example.com.", "ns2.example.net."]);
    assert!(m.answers.iter().all(|r| r.ttl == 86400));

    // A at the apex (not a GSLB domain): NODATA with SOA.
    let m = s.udp(&QueryBuilder::new("example.com", A).build());
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert!(m.answers.is_empty());
    assert_eq!(m.authorities.len(), 1);
}

#[test]
fn qname_matching_ignores_case_and_echo_keeps_it() {
    let mut s = Server::new();
    let q = QueryBuilder::new("WwW.ExAmPlE.CoM", A).build();
    let raw = s.raw(&q, Transport::Udp).unwrap();
    // The question section is byte-for-byte the one sent.
    assert_eq!(&raw[12..12 + 21], &q[12..12 + 21]);
    let m = decode(&raw);
    assert_eq!(m.queries[0].name.to_ascii(), "WwW.ExAmPlE.CoM.");
    assert_eq!(answer_addrs(&m), vec![IpAddr::from(WWW_V4)]);

    let m = s.udp(&QueryBuilder::new("NOPE.Example.COM", TXT).build());
    assert_eq!(m.metadata.response_code, ResponseCode::NXDomain);
}

#[test]
fn class_any_is_in_and_chaos_is_refused() {
    let mut s = Server::new();
    let m = s.udp(&QueryBuilder::new("www.example.com", A).class(255).build());
    assert_eq!(answer_addrs(&m), vec![IpAddr::from(WWW_V4)]);
    let m = s.udp(&QueryBuilder::new("version.bind", TXT).class(3).build());
    assert_eq!(m.metadata.response_code, ResponseCode::Refused);
    let m = s.udp(&QueryBuilder::new("www.example.com", A).class(3).build());
    assert_eq!(m.metadata.response_code, ResponseCode::Refused);
}

#[test]
fn zone_transfers_are_refused() {
    let mut s = Server::new();
    let m = s.tcp(&QueryBuilder::new("example.com", 252).build());
    assert_eq!(m.metadata.response_code, ResponseCode::Refused);
}

#[test]
fn edns_is_echoed_with_our_payload_size() {
    let mut s = Server::new();
    let m = s.udp(
        &QueryBuilder::new("www.example.com", A)
            .edns(4096, 0, true, &[])
            .build(),
    );
    let edns = m.edns.as_ref().expect("OPT in the response");
    assert_eq!(edns.max_payload(), 1232);
    assert_eq!(edns.version(), 0);
    assert!(edns.flags().dnssec_ok, "DO copied");
    assert_eq!(answer_addrs(&m).len(), 1);

    let m = s.udp(
        &QueryBuilder::new("www.example.com", A)
            .edns(1232, 0, false, &[])
            .build(),
    );
    assert!(!m.edns.as_ref().unwrap().flags().dnssec_ok);

    // OPT accompanies REFUSED and NXDOMAIN too.
    let m = s.udp(
        &QueryBuilder::new("example.org", A)
            .edns(1232, 0, false, &[])
            .build(),
    );
    assert!(m.edns.is_some());
    // Unknown options are ignored.
    let m = s.udp(
        &QueryBuilder::new("www.example.com", A)
            .edns(1232, 0, false, &[0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8])
            .build(),
    );
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
}

#[test]
fn large_answers_truncate_over_udp_and_come_whole_over_tcp() {
    let mut s = Server::new();
    let q = QueryBuilder::new("big.example.com", A).build();

    let raw = s.raw(&q, Transport::Udp).unwrap();
    assert!(raw.len() <= 512);
    let m = decode(&raw);
    assert!(m.metadata.truncation);
    assert!(m.metadata.authoritative);
    assert!(m.answers.is_empty() && m.authorities.is_empty() && m.additionals.is_empty());
    assert_eq!(m.queries.len(), 1, "question kept");

    let m = s.tcp(&q);
    assert!(!m.metadata.truncation);
    assert_eq!(answer_addrs(&m).len(), BIG_SERVICES);
    assert!(m.answers.iter().all(|r| r.ttl == 60));

    // With EDNS the client's buffer decides: 512 still truncates (and OPT
    // survives), 4096 fits.
    let q512 = QueryBuilder::new("big.example.com", A)
        .edns(512, 0, false, &[])
        .build();
    let m = s.udp(&q512);
    assert!(m.metadata.truncation);
    assert!(m.edns.is_some(), "OPT kept in a truncated response");
    let q_small = QueryBuilder::new("big.example.com", A)
        .edns(100, 0, false, &[])
        .build();
    assert!(
        s.udp(&q_small).metadata.truncation,
        "below 512 counts as 512"
    );
    let q4k = QueryBuilder::new("big.example.com", A)
        .edns(4096, 0, false, &[])
        .build();
    let m = s.udp(&q4k);
    assert!(!m.metadata.truncation);
    assert_eq!(answer_addrs(&m).len(), BIG_SERVICES);

    let stats = s.shared.stats.snapshot();
    assert_eq!(stats.truncated, 3);
}

#[test]
fn udp_answers_are_capped_at_1232_octets_whatever_the_client_offers() {
    let mut s = Server::new();
    // 80 A records need about 1,330 octets: over the cap, under every
    // buffer offered here but the smallest.
    for offered in [1232u16, 1400, 4096, 65535] {
        let q = QueryBuilder::new("huge.example.com", A)
            .edns(offered, 0, false, &[])
            .build();
        let raw = s.raw(&q, Transport::Udp).unwrap();
        assert!(raw.len() <= 1232, "offered {offered}: {} octets", raw.len());
        let m = decode(&raw);
        assert!(m.metadata.truncation, "offered {offered}: TC=1");
        assert!(m.answers.is_empty(), "offered {offered}: no partial answer");
        assert_eq!(m.edns.as_ref().map(|e| e.max_payload()), Some(1232));
    }
    // Without EDNS the limit is 512.
    let q = QueryBuilder::new("huge.example.com", A).build();
    let raw = s.raw(&q, Transport::Udp).unwrap();
    assert!(raw.len() <= 512);
    assert!(decode(&raw).metadata.truncation);
    // TCP carries the whole answer.
    let m = s.tcp(&QueryBuilder::new("huge.example.com", A).build());
    assert!(!m.metadata.truncation);
    assert_eq!(answer_addrs(&m).len(), HUGE_SERVICES);
    // An answer that fits 1232 is sent whole over UDP.
    let q = QueryBuilder::new("big.example.com", A)
        .edns(4096, 0, false, &[])
        .build();
    let raw = s.raw(&q, Transport::Udp).unwrap();
    assert!(raw.len() > 512 && raw.len() <= 1232);
    assert_eq!(answer_addrs(&decode(&raw)).len(), BIG_SERVICES);
}

#[test]
fn ecs_is_echoed_with_the_decision_scope() {
    let mut s = Server::new();
    let ecs = ecs_option(1, 24, 0, &[198, 51, 100]);
    let q = QueryBuilder::new("ecs.example.com", A)
        .edns(1232, 0, false, &ecs)
        .build();
    let m = s.udp(&q);
    let edns = m.edns.as_ref().unwrap();
    match edns.option(EdnsCode::Subnet) {
        Some(EdnsOption::Subnet(cs)) => {
            assert_eq!(cs.addr(), IpAddr::from([198, 51, 100, 0]));
            assert_eq!(cs.source_prefix(), 24);
            assert_eq!(cs.scope_prefix(), 24, "the answer depended on the subnet");
        }
        other => panic!("expected ECS, got {other:?}"),
    }
    let first = answer_addrs(&m);
    // The ECS address decides, not the LDNS address.
    for src in [[10, 0, 0, 1], [172, 16, 9, 9], CLIENT] {
        let raw = s.raw_from(&q, IpAddr::from(src), Transport::Udp).unwrap();
        assert_eq!(answer_addrs(&decode(&raw)), first);
    }

    // Answers that do not depend on the client get scope 0.
    let q = QueryBuilder::new("www.example.com", A)
        .edns(1232, 0, false, &ecs)
        .build();
    let m = s.udp(&q);
    match m.edns.as_ref().unwrap().option(EdnsCode::Subnet) {
        Some(EdnsOption::Subnet(cs)) => assert_eq!(cs.scope_prefix(), 0),
        other => panic!("expected ECS, got {other:?}"),
    }

    // IPv6 and /0 are fine too.
    for opt in [
        ecs_option(2, 56, 0, &[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0]),
        ecs_option(1, 0, 0, &[]),
    ] {
        let q = QueryBuilder::new("ecs.example.com", A)
            .edns(1232, 0, false, &opt)
            .build();
        let m = s.udp(&q);
        assert_eq!(m.metadata.response_code, ResponseCode::NoError);
        assert!(m.edns.as_ref().unwrap().option(EdnsCode::Subnet).is_some());
    }
}

#[test]
fn ecs_wire_echo_is_exact() {
    let mut s = Server::new();
    let ecs = ecs_option(1, 20, 0, &[198, 51, 96]);
    let q = QueryBuilder::new("ecs.example.com", A)
        .edns(1232, 0, false, &ecs)
        .build();
    let raw = s.raw(&q, Transport::Udp).unwrap();
    let tail = &raw[raw.len() - ecs.len()..];
    assert_eq!(tail, &ecs_option(1, 20, 20, &[198, 51, 96])[..]);
}

fn assert_formerr(s: &mut Server, q: &[u8], what: &str) -> hickory_proto::op::Message {
    let raw = s
        .raw(q, Transport::Udp)
        .unwrap_or_else(|| panic!("{what}: dropped"));
    let m = decode(&raw);
    assert_eq!(m.metadata.response_code, ResponseCode::FormErr, "{what}");
    assert_eq!(m.metadata.id, 0xbeef, "{what}: ID echoed");
    assert!(!m.metadata.authoritative, "{what}");
    assert!(m.answers.is_empty(), "{what}");
    m
}

#[test]
fn formerr_cases() {
    let mut s = Server::new();
    let good = QueryBuilder::new("www.example.com", A);

    let mut q = good.clone();
    q.qdcount = 0;
    q.question.clear();
    let m = assert_formerr(&mut s, &q.build(), "QDCOUNT 0");
    assert!(m.queries.is_empty());

    let mut q = good.clone();
    q.qdcount = 2;
    let q2 = good.question.clone();
    q.question.extend_from_slice(&q2);
    assert_formerr(&mut s, &q.build(), "QDCOUNT 2");

    // A pointer back to the header is never legal in a question.
    let q = QueryBuilder::raw_name(b"\x03www\xc0\x0c", A);
    assert_formerr(&mut s, &q.build(), "compression pointer");
    let q = QueryBuilder::raw_name(b"\x43www\x00", A);
    assert_formerr(&mut s, &q.build(), "label type 01");
    let q = QueryBuilder::raw_name(b"\x83www\x00", A);
    assert_formerr(&mut s, &q.build(), "label type 10");

    let mut long = Vec::new();
    for _ in 0..5 {
        long.push(60);
        long.extend(std::iter::repeat_n(b'a', 60));
    }
    long.push(0);
    assert_formerr(
        &mut s,
        &QueryBuilder::raw_name(&long, A).build(),
        "name > 255",
    );

    let full = good.build();
    for cut in [13, 20, full.len() - 1] {
        assert_formerr(&mut s, &full[..cut], "truncated question");
    }

    let mut q = good.clone();
    q.ancount = 1;
    let m = assert_formerr(&mut s, &q.build(), "ANCOUNT 1");
    assert_eq!(m.queries.len(), 1, "parsed question echoed");
    let mut q = good.clone();
    q.nscount = 1;
    assert_formerr(&mut s, &q.build(), "NSCOUNT 1");

    let q = good
        .clone()
        .edns(1232, 0, false, &[])
        .edns(1232, 0, false, &[]);
    assert_formerr(&mut s, &q.build(), "two OPT");

    let mut q = good.clone();
    q.arcount = 1;
    assert_formerr(&mut s, &q.build(), "ARCOUNT beyond the message");

    let mut q = good.clone().edns(1232, 0, false, &[]);
    q.additional[0] = 1; // owner "\x01?" ...
    q.additional.insert(1, b'x');
    q.additional.insert(2, 0);
    assert_formerr(&mut s, &q.build(), "OPT owner not root");

    let q = good.clone().edns(1232, 0, false, &[0, 8, 0, 9, 0, 1]);
    let m = assert_formerr(&mut s, &q.build(), "option longer than RDATA");
    assert!(m.edns.is_some(), "OPT in FORMERR when the query had one");

    for (opt, what) in [
        (ecs_option(3, 0, 0, &[]), "ECS family 3"),
        (ecs_option(1, 33, 0, &[1, 2, 3, 4, 5]), "ECS v4 prefix 33"),
        (ecs_option(2, 129, 0, &[0; 17]), "ECS v6 prefix 129"),
        (
            ecs_option(1, 24, 0, &[198, 51, 100, 0]),
            "ECS address too long",
        ),
        (ecs_option(1, 24, 0, &[198, 51]), "ECS address too short"),
        (
            ecs_option(1, 23, 0, &[198, 51, 101]),
            "ECS bits beyond prefix",
        ),
        (ecs_option(1, 24, 16, &[198, 51, 100]), "ECS scope in query"),
        (vec![0, 8, 0, 2, 0, 1], "ECS shorter than its fixed part"),
    ] {
        let q = good.clone().edns(1232, 0, false, &opt);
        assert_formerr(&mut s, &q.build(), what);
    }
    let two = [ecs_option(1, 8, 0, &[10]), ecs_option(1, 8, 0, &[10])].concat();
    assert_formerr(
        &mut s,
        &good.clone().edns(1232, 0, false, &two).build(),
        "two ECS",
    );

    assert_eq!(s.shared.stats.snapshot().noerror, 0);
}

#[test]
fn trailing_garbage_and_other_additional_records_are_ignored() {
    let mut s = Server::new();
    let mut q = QueryBuilder::new("www.example.com", A);
    q.trailing = vec![0xde, 0xad, 0xbe, 0xef, 0xff];
    let m = s.udp(&q.build());
    assert_eq!(answer_addrs(&m), vec![IpAddr::from(WWW_V4)]);

    // A TSIG-like record with a compressed owner next to the OPT.
    let mut q = QueryBuilder::new("www.example.com", A).edns(1232, 0, false, &[]);
    q.additional
        .extend_from_slice(&[0xc0, 12, 0, 250, 0, 255, 0, 0, 0, 0, 0, 2, 1, 2]);
    q.arcount += 1;
    let m = s.udp(&q.build());
    assert_eq!(m.metadata.response_code, ResponseCode::NoError);
    assert!(m.edns.is_some());
}

#[test]
fn badvers_for_edns_versions_above_zero() {
    let mut s = Server::new();
    let q = QueryBuilder::new("www.example.com", A).edns(1232, 1, true, &ecs_option(7, 0, 9, &[]));
    let raw = s.raw(&q.build(), Transport::Udp).unwrap();
    assert_eq!(raw[3] & 0x0f, 0, "low RCODE bits of 16 are 0");
    let m = decode(&raw);
    // 16 is both BADVERS (with OPT) and BADSIG (with TSIG); hickory names it
    // BADSIG, so compare the number.
    assert_eq!(u16::from(m.metadata.response_code), 16);
    let edns = m.edns.as_ref().expect("OPT with BADVERS");
    assert_eq!(edns.version(), 0);
    assert_eq!(edns.rcode_high(), 1);
    assert!(m.answers.is_empty());
    assert_eq!(m.queries.len(), 1);
    assert_eq!(s.shared.stats.snapshot().badvers, 1);
}

#[test]
fn other_opcodes_are_not_implemented() {
    let mut s = Server::new();
    for opcode in [1u16, 2, 4, 5, 15] {
        let mut q = QueryBuilder::new("www.example.com", A);
        q.flags |= opcode << 11;
        q.ancount = 3; // an UPDATE's sections mean other things
        let m = decode(&s.raw(&q.build(), Transport::Udp).unwrap());
        assert_eq!(
            m.metadata.response_code,
            ResponseCode::NotImp,
            "opcode {opcode}"
        );
        assert_eq!(u8::from(m.metadata.op_code), opcode as u8);
        assert_eq!(m.metadata.id, 0xbeef);
    }
    let mut q = QueryBuilder::new("www.example.com", A);
    q.flags |= 5 << 11;
    let m = decode(&s.raw(&q.build(), Transport::Udp).unwrap());
    assert_eq!(m.metadata.op_code, OpCode::Update);
    assert_eq!(s.shared.stats.snapshot().notimp, 6);
}

#[test]
fn responses_and_runts_are_dropped() {
    let mut s = Server::new();
    let mut q = QueryBuilder::new("www.example.com", A);
    q.flags |= 0x8000;
    assert!(s.raw(&q.build(), Transport::Udp).is_none(), "QR=1");
    assert!(s.raw(&[], Transport::Udp).is_none());
    assert!(
        s.raw(&[0xbe, 0xef, 1, 0, 0, 1, 0, 0, 0, 0, 0], Transport::Tcp)
            .is_none()
    );
    // Exactly a header (QDCOUNT 1, no question) is answerable: FORMERR.
    let m = decode(
        &s.raw(&[0xbe, 0xef, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0], Transport::Udp)
            .unwrap(),
    );
    assert_eq!(m.metadata.response_code, ResponseCode::FormErr);
    let st = s.shared.stats.snapshot();
    assert_eq!(
        (st.dropped, st.formerr, st.queries_udp, st.queries_tcp),
        (3, 1, 3, 1)
    );
}

#[test]
fn persistence_records_and_reuses_the_session() {
    let mut s = Server::new();
    let q = QueryBuilder::new("sticky.example.com", A).build();
    let client = IpAddr::from([198, 18, 5, 1]);
    let first = answer_addrs(&decode(&s.raw_from(&q, client, Transport::Udp).unwrap()));
    assert_eq!(first.len(), 1);
    assert_eq!(s.shared.sessions.len(), 1);
    let entry = s.shared.sessions.entries()[0];
    assert_eq!(entry.key, IpAddr::from([198, 18, 5, 0]), "masked /24");
    // Round robin would alternate; persistence keeps the client (and its
    // /24 neighbours) on one service.
    for last in [1, 2, 3, 200] {
        let c = IpAddr::from([198, 18, 5, last]);
        let got = answer_addrs(&decode(&s.raw_from(&q, c, Transport::Udp).unwrap()));
        assert_eq!(got, first);
    }
    assert_eq!(s.shared.sessions.len(), 1);
    // Another /24 gets its own entry.
    s.raw_from(&q, IpAddr::from([198, 18, 6, 1]), Transport::Udp);
    assert_eq!(s.shared.sessions.len(), 2);
    // Non-persistent vservers never touch the table.
    s.udp(&QueryBuilder::new("www.example.com", A).build());
    assert_eq!(s.shared.sessions.len(), 2);
}

#[test]
fn round_robin_alternates() {
    let mut s = Server::new();
    let q = QueryBuilder::new("sticky.example.com", A).build();
    let a = answer_addrs(&decode(
        &s.raw_from(&q, IpAddr::from([1, 1, 1, 1]), Transport::Udp)
            .unwrap(),
    ));
    let b = answer_addrs(&decode(
        &s.raw_from(&q, IpAddr::from([2, 2, 2, 2]), Transport::Udp)
            .unwrap(),
    ));
    assert_ne!(a, b);
}

#[test]
fn snapshot_swaps_take_effect_on_the_next_query() {
    let mut s = Server::new();
    let q = QueryBuilder::new("www.example.com", A).build();
    assert_eq!(answer_addrs(&s.udp(&q)).len(), 1);
    let mut model = common::model::model();
    model.domains[DomainId::new(0)].ttl = 5;
    s.shared
        .publish(sextant_core::Snapshot::new(std::sync::Arc::new(model), 2));
    assert_eq!(s.udp(&q).answers[0].ttl, 5);
}

#[test]
fn unencodable_configured_names_give_servfail() {
    let mut model = common::model::model();
    model.zones[ZoneId::new(0)].soa.contact = "bad..contact".into();
    let shared = DnsShared::new(sextant_core::Snapshot::new(std::sync::Arc::new(model), 1));
    let mut w = Worker::new(3);
    let mut out = Vec::new();
    let q = QueryBuilder::new("example.com", SOA).build();
    assert!(respond(
        &shared,
        &mut w,
        &q,
        IpAddr::from(CLIENT),
        Transport::Udp,
        &mut out
    ));
    let m = decode(&out);
    assert_eq!(m.metadata.response_code, ResponseCode::ServFail);
    assert!(m.answers.is_empty());
    assert_eq!(shared.stats.snapshot().servfail, 1);
}

#[test]
fn parse_query_exposes_everything_explain_needs() {
    let ecs = ecs_option(2, 48, 0, &[0x20, 0x01, 0x0d, 0xb8, 0, 1]);
    let q = QueryBuilder::new("Big.Example.com", AAAA)
        .edns(1400, 0, true, &ecs)
        .build();
    let mut buf = [0u8; 256];
    let p = parse_query(&q, &mut buf).unwrap();
    assert_eq!(p.qname, "big.example.com");
    assert_eq!((p.qtype, p.qclass, p.id()), (AAAA, 1, 0xbeef));
    assert_eq!(p.query_type(), sextant_core::QueryType::Aaaa);
    assert!(p.header.recursion_desired());
    assert_eq!(p.header.opcode(), 0);
    let e = p.edns.unwrap();
    assert_eq!((e.udp_payload, e.version, e.dnssec_ok), (1400, 0, true));
    let c = e.ecs.unwrap();
    assert_eq!((c.family, c.source_prefix, c.scope_prefix), (2, 48, 0));
    assert_eq!(c.addr, "2001:db8:1::".parse::<IpAddr>().unwrap());
    assert_eq!(c.address_bytes(), &[0x20, 0x01, 0x0d, 0xb8, 0, 1]);
    assert_eq!(
        p.client_subnet(),
        Some(sextant_core::ClientSubnet {
            addr: c.addr,
            source_prefix: 48
        })
    );
}

/// The OPT record of a raw response: (CLASS, TTL, RDATA), from the end of
/// the message (the only additional record in these answers).
fn raw_opt(raw: &[u8]) -> Option<(u16, [u8; 4], Vec<u8>)> {
    let m = decode(raw);
    m.edns.as_ref()?;
    // Walk back: OPT is last; find its root owner + type 41 from the end.
    (12..raw.len().saturating_sub(10)).rev().find_map(|i| {
        let rdlen = usize::from(u16::from_be_bytes([raw[i + 9], raw[i + 10]]));
        (raw[i] == 0 && raw[i + 1..i + 3] == [0, 41] && i + 11 + rdlen == raw.len()).then(|| {
            (
                u16::from_be_bytes([raw[i + 3], raw[i + 4]]),
                [raw[i + 5], raw[i + 6], raw[i + 7], raw[i + 8]],
                raw[i + 11..].to_vec(),
            )
        })
    })
}

#[test]
fn unknown_edns_options_and_flags_are_not_echoed() {
    let mut s = Server::new();
    // Every EDNS flag bit set (DO and the 15 unassigned Z bits), and two
    // unknown options (codes 10 and 65001).
    let mut q = QueryBuilder::new("www.example.com", A);
    let options = [
        &[0u8, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8][..],
        &[0xfd, 0xe9, 0, 1, 9],
    ]
    .concat();
    q.additional.push(0);
    q.additional.extend_from_slice(&41u16.to_be_bytes());
    q.additional.extend_from_slice(&1232u16.to_be_bytes());
    q.additional.extend_from_slice(&[0, 0, 0xff, 0xff]);
    q.additional
        .extend_from_slice(&(options.len() as u16).to_be_bytes());
    q.additional.extend_from_slice(&options);
    q.arcount = 1;
    let raw = s.raw(&q.build(), Transport::Udp).unwrap();
    let (class, ttl, rdata) = raw_opt(&raw).expect("OPT out for OPT in");
    assert_eq!(class, 1232);
    assert_eq!(ttl, [0, 0, 0x80, 0], "only DO echoed, version 0");
    assert!(rdata.is_empty(), "no option echoed: {rdata:?}");
    assert_eq!(decode(&raw).metadata.response_code, ResponseCode::NoError);

    // Without DO, no flag at all.
    let mut q = QueryBuilder::new("www.example.com", A);
    q.additional
        .extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0x7f, 0xff, 0, 0]);
    q.arcount = 1;
    let raw = s.raw(&q.build(), Transport::Udp).unwrap();
    assert_eq!(raw_opt(&raw).unwrap().1, [0, 0, 0, 0]);
}

#[test]
fn no_opt_in_gives_no_opt_out_for_every_kind_of_answer() {
    let mut s = Server::new();
    let cases: Vec<Vec<u8>> = vec![
        QueryBuilder::new("www.example.com", A).build(),
        QueryBuilder::new("nope.example.com", A).build(),
        QueryBuilder::new("example.org", A).build(),
        QueryBuilder::new("big.example.com", A).build(),
        {
            let mut q = QueryBuilder::new("www.example.com", A);
            q.qdcount = 2;
            q.build()
        },
        {
            let mut q = QueryBuilder::new("www.example.com", A);
            q.flags |= 15 << 11;
            q.build()
        },
    ];
    for q in cases {
        let m = s.udp(&q);
        assert!(m.edns.is_none(), "{:?}: {m:?}", m.metadata.response_code);
    }
}

#[test]
fn every_opcode_but_query_is_notimp() {
    let mut s = Server::new();
    for opcode in 1u16..=15 {
        let mut q = QueryBuilder::new("www.example.com", A);
        q.flags |= opcode << 11;
        let m = s.udp(&q.build());
        assert_eq!(
            m.metadata.response_code,
            ResponseCode::NotImp,
            "opcode {opcode}"
        );
        assert!(m.answers.is_empty());
        assert!(!m.metadata.authoritative);
        assert!(m.edns.is_none(), "no OPT in, none out");
        // With an OPT in a query's layout, the NOTIMP carries one back.
        let mut q = QueryBuilder::new("www.example.com", A).edns(4096, 0, true, &[]);
        q.flags |= opcode << 11;
        let m = s.udp(&q.build());
        assert_eq!(m.metadata.response_code, ResponseCode::NotImp);
        let edns = m.edns.as_ref().expect("OPT with NOTIMP");
        assert_eq!(edns.version(), 0);
        assert!(edns.flags().dnssec_ok);
    }
}

#[test]
fn unknown_qtypes_at_our_names_are_nodata_with_aa_and_soa() {
    let mut s = Server::new();
    // 65280 (private use), 99 (SPF, unassigned to us), 64 (SVCB).
    for name in ["www.example.com", "example.com", "big.example.com"] {
        for qtype in [65280u16, 99, 64] {
            let m = s.udp(&QueryBuilder::new(name, qtype).build());
            assert_eq!(
                m.metadata.response_code,
                ResponseCode::NoError,
                "{name} {qtype}"
            );
            assert!(m.metadata.authoritative, "{name} {qtype}");
            assert!(m.answers.is_empty(), "{name} {qtype}");
            assert_eq!(m.authorities.len(), 1, "{name} {qtype}");
            assert_eq!(m.authorities[0].record_type(), RecordType::SOA);
        }
    }
}
