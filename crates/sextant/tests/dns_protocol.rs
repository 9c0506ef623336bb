//! DNS protocol behaviour of the real server over real sockets: AA, apex
//! SOA/NS, NXDOMAIN/NODATA with SOA, REFUSED, EDNS echo, truncation and TCP
//! retry, ECS echo, malformed packets, case-insensitivity.

use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpStream};
use std::time::Duration;

/// Services 0..40 back `big.example.com` (MIR, for truncation);
/// 50 and 51 back `app.example.com`; 60 and 61 back `ecs.example.com`
/// (SOURCEIPHASH with ECS). None is monitored, so all are UP.
fn config(net: &Net) -> String {
    let mut c = net.conf_preamble();
    for i in 0..40u8 {
        writeln!(
            c,
            "add gslb service big{i} {} HTTP 80 -siteName site1",
            net.svc_ip(i)
        )
        .unwrap();
    }
    for i in [50u8, 51, 60, 61] {
        writeln!(
            c,
            "add gslb service s{i} {} HTTP 80 -siteName site1",
            net.svc_ip(i)
        )
        .unwrap();
    }
    c.push_str("add gslb vserver vs_app HTTP -lbMethod ROUNDROBIN\n");
    c.push_str("bind gslb vserver vs_app -serviceName s50\n");
    c.push_str("bind gslb vserver vs_app -serviceName s51\n");
    c.push_str("bind gslb vserver vs_app -domainName app.example.com -TTL 30\n");
    c.push_str("add gslb vserver vs_big HTTP -lbMethod ROUNDROBIN -MIR ENABLED\n");
    for i in 0..40u8 {
        writeln!(c, "bind gslb vserver vs_big -serviceName big{i}").unwrap();
    }
    c.push_str("bind gslb vserver vs_big -domainName big.example.com -TTL 30\n");
    c.push_str("add gslb vserver vs_ecs HTTP -lbMethod SOURCEIPHASH -ECS ENABLED\n");
    c.push_str("bind gslb vserver vs_ecs -serviceName s60\n");
    c.push_str("bind gslb vserver vs_ecs -serviceName s61\n");
    c.push_str("bind gslb vserver vs_ecs -domainName ecs.example.com -TTL 30\n");
    c
}

fn start(name: &str) -> (Net, Server) {
    let net = Net::new(name);
    let server = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net));
    (net, server)
}

#[test]
fn a_answer_is_authoritative_with_ttl_and_echoes_question() {
    let (net, s) = start("dns_a_answer");
    let q = build_query("app.example.com", RecordType::A, None);
    let r = s.dns.udp(&q);
    assert_eq!(r.metadata.id, q.metadata.id, "id echoed");
    assert_eq!(r.metadata.message_type, MessageType::Response);
    assert_eq!(r.metadata.response_code, ResponseCode::NoError);
    assert!(r.metadata.authoritative, "AA must be set: {r:?}");
    assert_eq!(r.queries.len(), 1, "question echoed: {r:?}");
    assert_eq!(
        r.queries[0].name().to_ascii().trim_end_matches('.'),
        "app.example.com"
    );
    assert_eq!(r.queries[0].query_type(), RecordType::A);
    assert_eq!(r.queries[0].query_class(), q.queries[0].query_class());
    let ips = a_records(&r);
    assert_eq!(ips.len(), 1, "one address without MIR: {r:?}");
    assert!(
        [net.svc_ip(50), net.svc_ip(51)].contains(&ips[0]),
        "answer {ips:?} is not one of the bound services"
    );
    assert_eq!(r.answers[0].ttl, 30, "domain TTL");
    assert!(r.edns.is_none(), "no OPT in answer to a query without one");
}

#[test]
fn same_answer_over_tcp_and_pipelined_queries() {
    let (net, s) = start("dns_tcp");
    let r = s
        .dns
        .tcp(&build_query("app.example.com", RecordType::A, None));
    assert_eq!(r.metadata.response_code, ResponseCode::NoError);
    assert!(r.metadata.authoritative);
    let ips = a_records(&r);
    assert_eq!(ips.len(), 1, "{r:?}");
    assert!([net.svc_ip(50), net.svc_ip(51)].contains(&ips[0]));

    // Two queries on one connection (RFC 7766): both answered.
    let mut conn = TcpStream::connect(net.dns_addr()).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let q1 = build_query("app.example.com", RecordType::A, None);
    let q2 = build_query("example.com", RecordType::SOA, None);
    for q in [&q1, &q2] {
        let b = q.to_vec().unwrap();
        conn.write_all(&(b.len() as u16).to_be_bytes()).unwrap();
        conn.write_all(&b).unwrap();
    }
    let mut ids = Vec::new();
    for _ in 0..2 {
        let mut len = [0u8; 2];
        conn.read_exact(&mut len)
            .expect("second answer on one TCP connection");
        let mut body = vec![0u8; u16::from_be_bytes(len) as usize];
        conn.read_exact(&mut body).unwrap();
        ids.push(Message::from_vec(&body).unwrap().metadata.id);
    }
    ids.sort();
    let mut want = vec![q1.metadata.id, q2.metadata.id];
    want.sort();
    assert_eq!(ids, want);
}

#[test]
fn soa_and_ns_at_apex() {
    let (_net, s) = start("dns_apex");
    let r = s.dns.query("example.com", RecordType::SOA);
    assert_eq!(r.metadata.response_code, ResponseCode::NoError);
    assert!(r.metadata.authoritative);
    let soa = r
        .answers
        .iter()
        .find_map(|a| match &a.data {
            RData::SOA(soa) => Some(soa.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no SOA in answer: {r:?}"));
    assert!(
        soa.mname
            .eq_case(&Name::from_ascii("ns1.example.com.").unwrap())
            || soa.mname.to_ascii().trim_end_matches('.') == "ns1.example.com",
        "SOA mname {} is not the -originServer",
        soa.mname
    );
    assert!(
        soa.rname.to_ascii().starts_with("hostmaster"),
        "SOA rname {} is not the -contact",
        soa.rname
    );

    let r = s.dns.query("example.com", RecordType::NS);
    assert_eq!(r.metadata.response_code, ResponseCode::NoError);
    assert!(r.metadata.authoritative);
    let ns: Vec<String> = r
        .answers
        .iter()
        .filter_map(|a| match &a.data {
            RData::NS(n) => Some(n.0.to_ascii().trim_end_matches('.').to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(ns, vec!["ns1.example.com".to_string()], "{r:?}");
}

#[test]
fn nxdomain_with_soa_inside_zone() {
    let (_net, s) = start("dns_nxdomain");
    for rtype in [RecordType::A, RecordType::AAAA] {
        let r = s.dns.query("nope.example.com", rtype);
        assert_eq!(r.metadata.response_code, ResponseCode::NXDomain, "{r:?}");
        assert!(r.metadata.authoritative, "AA on NXDOMAIN");
        assert!(r.answers.is_empty());
        assert!(has_soa_authority(&r), "SOA in authority: {r:?}");
    }
}

#[test]
fn refused_outside_zones() {
    let (_net, s) = start("dns_refused");
    for name in ["www.example.org", "example.net", "com", "."] {
        let r = s.dns.query(name, RecordType::A);
        assert_eq!(
            r.metadata.response_code,
            ResponseCode::Refused,
            "{name}: {r:?}"
        );
        assert!(r.answers.is_empty());
    }
}

#[test]
fn nodata_with_soa_for_missing_type() {
    let (_net, s) = start("dns_nodata");
    // Only IPv4 services: AAAA is NODATA.
    let r = s.dns.query("app.example.com", RecordType::AAAA);
    assert_eq!(r.metadata.response_code, ResponseCode::NoError, "{r:?}");
    assert!(r.metadata.authoritative);
    assert!(r.answers.is_empty(), "no answer: {r:?}");
    assert!(has_soa_authority(&r), "SOA in authority: {r:?}");
    // The apex exists but has no A record.
    let r = s.dns.query("example.com", RecordType::A);
    assert_eq!(r.metadata.response_code, ResponseCode::NoError, "{r:?}");
    assert!(r.answers.is_empty(), "{r:?}");
    assert!(has_soa_authority(&r), "{r:?}");
}

#[test]
fn edns_opt_is_echoed() {
    let (_net, s) = start("dns_edns");
    let r = s
        .dns
        .udp(&build_query("app.example.com", RecordType::A, Some(1232)));
    assert_eq!(r.metadata.response_code, ResponseCode::NoError);
    let e = r.edns.as_ref().expect("OPT echoed");
    assert_eq!(e.version(), 0);
    assert!(
        e.max_payload() >= 512,
        "server payload size {}",
        e.max_payload()
    );
    assert_eq!(a_records(&r).len(), 1);

    // Errors echo OPT too.
    let r = s
        .dns
        .udp(&build_query("nope.example.com", RecordType::A, Some(1232)));
    assert_eq!(r.metadata.response_code, ResponseCode::NXDomain);
    assert!(r.edns.is_some(), "OPT on NXDOMAIN: {r:?}");
}

#[test]
fn unsupported_edns_version_gets_badvers() {
    let (_net, s) = start("dns_badvers");
    let mut q = build_query("app.example.com", RecordType::A, Some(1232));
    q.edns.as_mut().unwrap().set_version(1);
    let r = s.dns.udp(&q);
    // BADVERS is extended rcode 16 (hickory names 16 BADSIG, its TSIG twin).
    assert_eq!(
        u16::from(r.metadata.response_code),
        16,
        "RFC 6891 6.1.3: BADVERS expected: {r:?}"
    );
    assert!(r.edns.is_some(), "BADVERS comes with an OPT record");
    assert!(r.answers.is_empty());
}

#[test]
fn truncation_without_edns_and_full_answer_over_tcp() {
    let (net, s) = start("dns_tc");
    let all: Vec<Ipv4Addr> = (0..40).map(|i| net.svc_ip(i)).collect();

    // 40 A records do not fit in 512 bytes.
    let r = s
        .dns
        .udp(&build_query("big.example.com", RecordType::A, None));
    assert!(r.metadata.truncation, "TC must be set: {r:?}");
    assert_eq!(r.metadata.response_code, ResponseCode::NoError);

    // Same with an explicit 512-byte EDNS buffer.
    let r = s
        .dns
        .udp(&build_query("big.example.com", RecordType::A, Some(512)));
    assert!(r.metadata.truncation, "TC with EDNS 512: {r:?}");
    assert!(r.edns.is_some(), "OPT echoed on a truncated answer");

    // TCP carries all of them.
    let r = s
        .dns
        .tcp(&build_query("big.example.com", RecordType::A, None));
    assert!(!r.metadata.truncation);
    let mut got = a_records(&r);
    got.sort();
    assert_eq!(got, all, "MIR over TCP: every UP service");

    // A large enough EDNS buffer carries them over UDP.
    let r = s
        .dns
        .udp(&build_query("big.example.com", RecordType::A, Some(4096)));
    assert!(!r.metadata.truncation, "fits in 4096: {r:?}");
    let mut got = a_records(&r);
    got.sort();
    assert_eq!(got, all);
}

#[test]
fn ecs_is_echoed_with_scope() {
    let (net, s) = start("dns_ecs");
    let ecs_addr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 0));
    let q = with_ecs(
        build_query("ecs.example.com", RecordType::A, Some(1232)),
        ecs_addr,
        24,
    );
    let r = s.dns.udp(&q);
    assert_eq!(r.metadata.response_code, ResponseCode::NoError, "{r:?}");
    let ips = a_records(&r);
    assert_eq!(ips.len(), 1);
    assert!([net.svc_ip(60), net.svc_ip(61)].contains(&ips[0]));
    let ecs = ecs_of(&r).unwrap_or_else(|| panic!("ECS option not echoed: {r:?}"));
    assert_eq!(ecs.addr(), ecs_addr, "ECS address echoed");
    assert_eq!(ecs.source_prefix(), 24, "ECS source prefix echoed");
    assert!(
        ecs.scope_prefix() <= 32,
        "scope prefix {} is no IPv4 prefix",
        ecs.scope_prefix()
    );

    // A vserver without -ECS ENABLED does not use the subnet: the option
    // is still echoed, with scope 0 (valid for every client, RFC 7871 7.2.1).
    let q0 = with_ecs(
        build_query("app.example.com", RecordType::A, Some(1232)),
        ecs_addr,
        24,
    );
    let r0 = s.dns.udp(&q0);
    assert_eq!(a_records(&r0).len(), 1, "{r0:?}");
    let ecs0 = ecs_of(&r0).unwrap_or_else(|| panic!("ECS not echoed: {r0:?}"));
    assert_eq!(ecs0.addr(), ecs_addr);
    assert_eq!(
        ecs0.scope_prefix(),
        0,
        "answer did not depend on the subnet"
    );

    // Also over TCP.
    let r = s.dns.tcp(&q);
    let ecs = ecs_of(&r).unwrap_or_else(|| panic!("ECS not echoed over TCP: {r:?}"));
    assert_eq!(ecs.addr(), ecs_addr);
    assert_eq!(ecs.source_prefix(), 24);
}

#[test]
fn names_are_case_insensitive() {
    let (net, s) = start("dns_case");
    for name in ["APP.EXAMPLE.COM", "App.Example.Com", "app.EXAMPLE.com."] {
        let r = s.dns.query(name, RecordType::A);
        assert_eq!(r.metadata.response_code, ResponseCode::NoError, "{name}");
        let ips = a_records(&r);
        assert_eq!(ips.len(), 1, "{name}: {r:?}");
        assert!([net.svc_ip(50), net.svc_ip(51)].contains(&ips[0]));
        // The question comes back as asked (0x20 case preserved).
        assert_eq!(
            r.queries[0].name().to_ascii().trim_end_matches('.'),
            name.trim_end_matches('.'),
            "question case changed"
        );
    }
    let r = s.dns.query("EXAMPLE.COM", RecordType::SOA);
    assert_eq!(r.metadata.response_code, ResponseCode::NoError);
    assert_eq!(r.answers.len(), 1, "{r:?}");
    let r = s.dns.query("NoPe.Example.Com", RecordType::A);
    assert_eq!(r.metadata.response_code, ResponseCode::NXDomain);
}

/// Hand-made hostile packets. Each gets FORMERR (or REFUSED/NOTIMP for a
/// well-formed but unsupported request) or no answer at all; afterwards the
/// server still answers a good query at once.
#[test]
fn malformed_packets_then_good_query() {
    let (net, mut s) = start("dns_malformed");
    let hdr = |id: u16, flags: u16, qd: u16, an: u16, ns: u16, ar: u16| -> Vec<u8> {
        let mut v = Vec::new();
        for x in [id, flags, qd, an, ns, ar] {
            v.extend_from_slice(&x.to_be_bytes());
        }
        v
    };
    let qname = |v: &mut Vec<u8>| {
        for l in ["app", "example", "com"] {
            v.push(l.len() as u8);
            v.extend_from_slice(l.as_bytes());
        }
        v.push(0);
    };
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("one byte", vec![0x12]),
        ("short header", vec![0x12, 0x34, 0x01, 0x00, 0x00]),
        ("header only, qdcount 1", hdr(0x1001, 0x0000, 1, 0, 0, 0)),
        ("header only, qdcount 0", hdr(0x1002, 0x0000, 0, 0, 0, 0)),
    ];
    // Question name cut mid-label.
    let mut v = hdr(0x1003, 0, 1, 0, 0, 0);
    v.extend_from_slice(&[3, b'a', b'p']);
    cases.push(("truncated label", v));
    // Label longer than 63.
    let mut v = hdr(0x1004, 0, 1, 0, 0, 0);
    v.push(64);
    v.extend_from_slice(&[b'a'; 64]);
    v.extend_from_slice(&[0, 0, 1, 0, 1]);
    cases.push(("label of 64", v));
    // Compression pointer to itself.
    let mut v = hdr(0x1005, 0, 1, 0, 0, 0);
    v.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1]);
    cases.push(("pointer loop", v));
    // Pointer forward, out of the packet.
    let mut v = hdr(0x1006, 0, 1, 0, 0, 0);
    v.extend_from_slice(&[0xC3, 0xFF, 0, 1, 0, 1]);
    cases.push(("pointer out of bounds", v));
    // Name without qtype/qclass.
    let mut v = hdr(0x1007, 0, 1, 0, 0, 0);
    qname(&mut v);
    cases.push(("no qtype", v));
    // Two OPT records.
    let mut v = hdr(0x1008, 0, 1, 0, 0, 2);
    qname(&mut v);
    v.extend_from_slice(&[0, 1, 0, 1]);
    for _ in 0..2 {
        v.extend_from_slice(&[0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 0]);
    }
    cases.push(("two OPT", v));
    // Claims 5 answers it does not carry.
    let mut v = hdr(0x1009, 0, 1, 5, 0, 0);
    qname(&mut v);
    v.extend_from_slice(&[0, 1, 0, 1]);
    cases.push(("counts beyond the end", v));
    // ECS with an address longer than its prefix allows.
    let mut v = hdr(0x100A, 0, 1, 0, 0, 1);
    qname(&mut v);
    v.extend_from_slice(&[0, 1, 0, 1]);
    v.extend_from_slice(&[0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 12]);
    v.extend_from_slice(&[0, 8, 0, 8, 0, 1, 8, 0, 192, 0, 2, 1]);
    cases.push(("bad ECS", v));
    // Deterministic garbage.
    let mut seed: u32 = 0x9E37_79B9;
    for i in 0..40 {
        let len = 12 + (i * 7) % 300;
        let mut v = Vec::with_capacity(len);
        for _ in 0..len {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            v.push(seed as u8);
        }
        // Keep QR clear so it looks like a query.
        v[2] &= 0x7F;
        cases.push(("random", v));
    }

    for (what, bytes) in &cases {
        let resp = s
            .dns
            .raw_udp(bytes, Duration::from_millis(200))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        if let Some(resp) = resp {
            // Whatever comes back must at least be a DNS response header.
            assert!(resp.len() >= 12, "{what}: runt response {resp:?}");
            assert_eq!(resp[2] & 0x80, 0x80, "{what}: QR not set in response");
            let rcode = resp[3] & 0x0F;
            if *what != "random" {
                assert!(
                    matches!(rcode, 1 | 4 | 5),
                    "{what}: rcode {rcode} is not FORMERR/NOTIMP/REFUSED"
                );
            }
        }
    }

    // Malformed TCP: a length prefix with garbage, and a half-sent frame.
    for bytes in [vec![0, 5, 1, 2, 3, 4, 5], vec![0], vec![0xFF, 0xFF, 1, 2]] {
        if let Ok(mut c) = TcpStream::connect(net.dns_addr()) {
            let _ = c.write_all(&bytes);
            drop(c);
        }
    }

    // The server is alive and answers at once, over UDP and TCP.
    let r = s
        .dns
        .udp(&build_query("app.example.com", RecordType::A, None));
    assert_eq!(r.metadata.response_code, ResponseCode::NoError);
    assert_eq!(a_records(&r).len(), 1);
    let r = s
        .dns
        .tcp(&build_query("app.example.com", RecordType::A, None));
    assert_eq!(a_records(&r).len(), 1);
    assert!(s.is_running(), "server died on malformed input");
}

/// A response (QR=1) sent to the server gets no answer (or at most an
/// error without records); the server goes on answering.
#[test]
fn responses_are_not_answered() {
    let (_net, s) = start("dns_qr");
    let mut q = build_query("app.example.com", RecordType::A, None);
    q.metadata.message_type = MessageType::Response;
    let resp = s
        .dns
        .raw_udp(&q.to_vec().unwrap(), Duration::from_millis(500))
        .unwrap();
    if let Some(resp) = resp {
        let m = Message::from_vec(&resp).expect("parsable");
        assert!(
            m.answers.is_empty(),
            "the server answered a response: {m:?}"
        );
        assert_ne!(m.metadata.response_code, ResponseCode::NoError, "{m:?}");
    }
    assert_eq!(s.dns.query_a("app.example.com").len(), 1);
}

/// The answers as `dig` (bind9-dnsutils) sees them, over UDP and TCP.
#[test]
fn dig_sees_authoritative_answers() {
    if !have_program("dig") {
        cannot_run("the dig test needs dig (scripts/setup.sh installs bind9-dnsutils)");
        return;
    }
    let (net, s) = start("dns_dig");
    let server = std::net::SocketAddr::new(net.server_ip().into(), DNS_PORT);
    let dig = |extra: &[&str]| -> String { sextant_test_support::dns::dig(None, server, extra) };
    let valid = [net.svc_ip(50).to_string(), net.svc_ip(51).to_string()];
    for transport in ["+notcp", "+tcp"] {
        let short = dig(&[transport, "+short", "app.example.com", "A"]);
        let lines: Vec<&str> = short.lines().collect();
        assert_eq!(lines.len(), 1, "dig {transport} +short: {short:?}");
        assert!(
            valid.contains(&lines[0].to_string()),
            "dig {transport}: {short:?}"
        );
        let full = dig(&[transport, "app.example.com", "A"]);
        assert!(full.contains("status: NOERROR"), "{full}");
        assert!(
            full.lines()
                .any(|l| l.contains("flags:") && l.contains(" aa")),
            "dig shows no aa flag:\n{full}"
        );
    }
    let nx = dig(&["nothing.example.com", "A"]);
    assert!(nx.contains("status: NXDOMAIN"), "{nx}");
    assert!(nx.contains("AUTHORITY SECTION"), "{nx}");
    let refused = dig(&["example.org", "A"]);
    assert!(refused.contains("status: REFUSED"), "{refused}");
    // dig retries over TCP by itself when it sees TC.
    let big = dig(&["+noedns", "+ignore", "big.example.com", "A"]);
    assert!(
        big.contains("flags: qr aa") && big.contains(" tc"),
        "TC expected:\n{big}"
    );
    let big = dig(&["+noedns", "+short", "big.example.com", "A"]);
    assert_eq!(
        big.lines().count(),
        40,
        "dig's TCP retry gets all 40:\n{big}"
    );
    let _ = s;
}

/// The zone and a domain from a native TOML file: apex SOA/NS, the A
/// answer with its TTL, NODATA, NXDOMAIN, REFUSED.
#[test]
fn toml_zone_answers_like_the_appliance_syntax() {
    let net = Net::new("dns_toml");
    let mut c = net.toml_preamble();
    write!(
        c,
        r#"
[[service]]
name = "t0"
ip = "{}"
port = 80
protocol = "HTTP"
site = "site1"

[[vserver]]
name = "vs_t"
protocol = "HTTP"
lb_method = "ROUNDROBIN"
services = [{{ name = "t0" }}]
domains = [{{ name = "app.example.com", ttl = 42 }}]
"#,
        net.svc_ip(0)
    )
    .unwrap();
    let s = Server::start(SEXTANT, &net, Syntax::Toml, &c);
    let r = s.dns.query("app.example.com", RecordType::A);
    assert!(r.metadata.authoritative);
    assert_eq!(a_records(&r), vec![net.svc_ip(0)]);
    assert_eq!(r.answers[0].ttl, 42);
    let r = s.dns.query("example.com", RecordType::SOA);
    assert!(
        r.answers.iter().any(|a| a.record_type() == RecordType::SOA),
        "{r:?}"
    );
    let r = s.dns.query("example.com", RecordType::NS);
    assert!(
        r.answers.iter().any(|a| a.record_type() == RecordType::NS),
        "{r:?}"
    );
    let r = s.dns.query("app.example.com", RecordType::AAAA);
    assert_eq!(r.metadata.response_code, ResponseCode::NoError);
    assert!(r.answers.is_empty() && has_soa_authority(&r), "{r:?}");
    let r = s.dns.query("nope.example.com", RecordType::A);
    assert_eq!(r.metadata.response_code, ResponseCode::NXDomain);
    assert!(has_soa_authority(&r));
    let r = s.dns.query("example.net", RecordType::A);
    assert_eq!(r.metadata.response_code, ResponseCode::Refused);
}
