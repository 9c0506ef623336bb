//! Static records of a zone Sextant serves, end to end: the real `sextant
//! serve` with an appliance configuration that has a GSLB domain and static
//! records of every type, queried with hickory (UDP and TCP) and with dig.
//! Checks answer, authority and additional sections, AA and RCODE; a CNAME
//! to a GSLB domain whose backend dies; a referral with glue; truncation.

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr};

use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

const MONITOR: &str = "add lb monitor mon_tcp TCP -interval 200 MSEC -resptimeout 100 MSEC -retries 2 -successRetries 1\n";

/// The zone's static records, as an operator writes them.
const RECORDS: &str = "\
add dns addRec ns1.example.com 192.0.2.53
add dns aaaaRec ns1.example.com 2001:db8::53 -TTL 600
add dns mxRec example.com -mx mail.example.com -pref 10 -TTL 900
add dns addRec mail.example.com 192.0.2.25
add dns txtRec example.com \"v=spf1 -all\" \"second string\"
add dns srvRec _sip._tcp.example.com sip.example.com -priority 1 -weight 5 -port 5060
add dns addRec sip.example.com 192.0.2.60
add dns cnameRec alias.example.com mail.example.com -TTL 120
add dns cnameRec web.example.com app.example.com
add dns nsRec child.example.com ns.child.example.com
add dns addRec ns.child.example.com 192.0.2.99
add dns zone example.com -proxyMode NO
";

fn config(net: &Net, a: &Backend, b: &Backend) -> String {
    let mut c = net.conf_preamble();
    c.push_str(MONITOR);
    for (n, be) in [("sA", a), ("sB", b)] {
        writeln!(
            c,
            "add gslb service {n} {} TCP {} -siteName site1\nbind gslb service {n} -monitorName mon_tcp",
            be.ip(),
            be.port()
        )
        .unwrap();
    }
    c.push_str(
        "add gslb vserver vs_app TCP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs_app -serviceName sA\n\
         bind gslb vserver vs_app -serviceName sB\n\
         bind gslb vserver vs_app -domainName app.example.com -TTL 5\n",
    );
    c.push_str(RECORDS);
    // 40 addresses: more than a 512-byte UDP answer holds.
    let big: Vec<String> = (1..=40).map(|i| format!("198.51.100.{i}")).collect();
    writeln!(c, "add dns addRec big.example.com {}", big.join(" ")).unwrap();
    c
}

fn start(name: &str) -> (Net, Backend, Backend, Server) {
    let net = Net::new(name);
    let a = Backend::tcp(net.svc_ip(0));
    let b = Backend::tcp(net.svc_ip(1));
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net, &a, &b));
    (net, a, b, s)
}

fn v4(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// `(owner, type, data)` of each record of a section, data as zone text.
fn section(records: &[Record]) -> Vec<(String, RecordType, String)> {
    records
        .iter()
        .map(|r| {
            (
                r.name.to_ascii().trim_end_matches('.').to_string(),
                r.record_type(),
                r.data.to_string(),
            )
        })
        .collect()
}

fn addrs_of(records: &[Record]) -> Vec<IpAddr> {
    records
        .iter()
        .filter_map(|r| match &r.data {
            RData::A(a) => Some(IpAddr::V4(a.0)),
            RData::AAAA(a) => Some(IpAddr::V6(a.0)),
            _ => None,
        })
        .collect()
}

/// Asks over UDP and TCP; both must say the same.
fn ask(s: &Server, name: &str, rtype: RecordType) -> Message {
    let q = build_query(name, rtype, Some(1232));
    let udp = s.dns.udp(&q);
    let tcp = s.dns.tcp(&q);
    assert_eq!(
        section(&udp.answers),
        section(&tcp.answers),
        "{name} {rtype}: UDP and TCP answers differ"
    );
    assert_eq!(section(&udp.authorities), section(&tcp.authorities));
    assert_eq!(section(&udp.additionals), section(&tcp.additionals));
    udp
}

fn authoritative_ok(m: &Message, what: &str) {
    assert_eq!(
        m.metadata.response_code,
        ResponseCode::NoError,
        "{what}: {m:?}"
    );
    assert!(m.metadata.authoritative, "{what}: AA must be set: {m:?}");
    assert!(!m.metadata.truncation, "{what}: {m:?}");
}

#[test]
fn every_record_type_answers_with_hickory() {
    let (_net, _a, _b, s) = start("zone_records_hickory");

    let r = ask(&s, "ns1.example.com", RecordType::A);
    authoritative_ok(&r, "A");
    assert_eq!(addrs_of(&r.answers), vec![v4("192.0.2.53")]);
    assert_eq!(r.answers[0].ttl, 3600, "default TTL");

    let r = ask(&s, "NS1.Example.COM", RecordType::AAAA);
    authoritative_ok(&r, "AAAA");
    assert_eq!(addrs_of(&r.answers), vec![v4("2001:db8::53")]);
    assert_eq!(r.answers[0].ttl, 600);

    // Apex NS: the name server's addresses in the additional section.
    let r = ask(&s, "example.com", RecordType::NS);
    authoritative_ok(&r, "NS");
    assert_eq!(r.answers.len(), 1);
    let mut extra = addrs_of(&r.additionals);
    extra.sort();
    assert_eq!(extra, vec![v4("192.0.2.53"), v4("2001:db8::53")]);

    let r = ask(&s, "example.com", RecordType::MX);
    authoritative_ok(&r, "MX");
    match &r.answers[..] {
        [rec] => {
            assert_eq!(rec.ttl, 900);
            match &rec.data {
                RData::MX(mx) => {
                    assert_eq!(mx.preference, 10);
                    assert_eq!(mx.exchange.to_ascii(), "mail.example.com.");
                }
                other => panic!("MX expected: {other:?}"),
            }
        }
        other => panic!("one MX expected: {other:?}"),
    }
    assert_eq!(addrs_of(&r.additionals), vec![v4("192.0.2.25")]);

    let r = ask(&s, "example.com", RecordType::TXT);
    authoritative_ok(&r, "TXT");
    match &r.answers[..] {
        [rec] => match &rec.data {
            RData::TXT(t) => {
                let strings: Vec<&[u8]> = t.txt_data.iter().map(|s| &s[..]).collect();
                assert_eq!(strings, vec![&b"v=spf1 -all"[..], &b"second string"[..]]);
            }
            other => panic!("TXT expected: {other:?}"),
        },
        other => panic!("one TXT expected: {other:?}"),
    }

    let r = ask(&s, "_sip._tcp.example.com", RecordType::SRV);
    authoritative_ok(&r, "SRV");
    match &r.answers[..] {
        [rec] => match &rec.data {
            RData::SRV(srv) => {
                assert_eq!((srv.priority, srv.weight, srv.port), (1, 5, 5060));
                assert_eq!(srv.target.to_ascii(), "sip.example.com.");
            }
            other => panic!("SRV expected: {other:?}"),
        },
        other => panic!("one SRV expected: {other:?}"),
    }
    assert_eq!(addrs_of(&r.additionals), vec![v4("192.0.2.60")]);

    // A CNAME inside the zone is followed.
    let r = ask(&s, "alias.example.com", RecordType::A);
    authoritative_ok(&r, "CNAME chain");
    let got = section(&r.answers);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].0, "alias.example.com");
    assert_eq!(got[0].1, RecordType::CNAME);
    assert_eq!(got[0].2, "mail.example.com.");
    assert_eq!(r.answers[0].ttl, 120);
    assert_eq!(
        (got[1].0.as_str(), got[1].1),
        ("mail.example.com", RecordType::A)
    );
    // Asked for the CNAME itself: the CNAME alone.
    let r = ask(&s, "alias.example.com", RecordType::CNAME);
    assert_eq!(section(&r.answers).len(), 1);

    // NODATA (an existing name, an empty non-terminal) and NXDOMAIN.
    for name in ["ns1.example.com", "_tcp.example.com"] {
        let r = ask(&s, name, RecordType::MX);
        authoritative_ok(&r, name);
        assert!(r.answers.is_empty(), "{name}: {r:?}");
        assert!(has_soa_authority(&r), "{name}: NODATA carries the SOA");
    }
    let r = ask(&s, "nothing.example.com", RecordType::A);
    assert_eq!(r.metadata.response_code, ResponseCode::NXDomain);
    assert!(r.metadata.authoritative && has_soa_authority(&r));

    // ANY: the name's static records.
    let r = ask(&s, "example.com", RecordType::ANY);
    let types: Vec<RecordType> = r.answers.iter().map(|r| r.record_type()).collect();
    assert_eq!(types, vec![RecordType::MX, RecordType::TXT], "{r:?}");
}

#[test]
fn delegated_child_gets_a_referral_with_glue() {
    let (_net, _a, _b, s) = start("zone_records_referral");
    for name in [
        "child.example.com",
        "www.child.example.com",
        "ns.child.example.com",
    ] {
        let r = ask(&s, name, RecordType::A);
        assert_eq!(r.metadata.response_code, ResponseCode::NoError, "{name}");
        assert!(
            !r.metadata.authoritative,
            "{name}: a referral has no AA: {r:?}"
        );
        assert!(r.answers.is_empty(), "{name}: {r:?}");
        let auth = section(&r.authorities);
        assert_eq!(
            auth,
            vec![(
                "child.example.com".to_string(),
                RecordType::NS,
                "ns.child.example.com.".to_string()
            )],
            "{name}"
        );
        assert_eq!(
            addrs_of(&r.additionals),
            vec![v4("192.0.2.99")],
            "{name}: glue"
        );
    }
}

#[test]
fn cname_to_a_gslb_domain_follows_failover() {
    let (_net, a, b, s) = start("zone_records_cname_gslb");
    s.wait_state("sA", State::Up);
    s.wait_state("sB", State::Up);
    let both = [IpAddr::V4(a.ip()), IpAddr::V4(b.ip())];
    let mut seen = std::collections::BTreeSet::new();
    let q = build_query("web.example.com", RecordType::A, Some(1232));
    // Round robin: UDP and TCP answers alternate, so each is checked alone.
    for i in 0..8 {
        let r = if i % 2 == 0 {
            s.dns.udp(&q)
        } else {
            s.dns.tcp(&q)
        };
        authoritative_ok(&r, "CNAME to GSLB");
        let got = section(&r.answers);
        assert_eq!(got[0].1, RecordType::CNAME, "{got:?}");
        assert_eq!(got[0].2, "app.example.com.");
        assert_eq!(
            got[1].0, "app.example.com",
            "the address is the GSLB name's"
        );
        assert_eq!(r.answers[1].ttl, 5, "the GSLB domain's TTL");
        let addrs = addrs_of(&r.answers);
        assert_eq!(addrs.len(), 1);
        assert!(both.contains(&addrs[0]));
        seen.insert(addrs[0]);
    }
    assert_eq!(seen.len(), 2, "round robin through the CNAME: {seen:?}");

    let b_ip = IpAddr::V4(b.ip());
    a.kill();
    s.wait_state("sA", State::Down);
    eventually(EVENTUALLY, "only B behind the CNAME", || {
        (0..6).all(|_| addrs_of(&s.dns.udp(&q).answers) == vec![b_ip])
    });
}

#[test]
fn big_answer_truncates_over_udp_and_is_whole_over_tcp() {
    let (_net, _a, _b, s) = start("zone_records_tc");
    let q = build_query("big.example.com", RecordType::A, None);
    let r = s.dns.udp(&q);
    assert!(r.metadata.truncation, "TC expected: {r:?}");
    assert!(r.answers.is_empty());
    let r = s.dns.tcp(&q);
    assert!(!r.metadata.truncation);
    assert_eq!(addrs_of(&r.answers).len(), 40);
    let _ = Ipv4Addr::LOCALHOST;
}

/// The same zone as dig sees it.
#[test]
fn dig_sees_every_record_type() {
    if !have_program("dig") {
        cannot_run("the dig test needs dig (scripts/setup.sh installs bind9-dnsutils)");
        return;
    }
    let (net, _a, b, s) = start("zone_records_dig");
    s.wait_state("sB", State::Up);
    let server = std::net::SocketAddr::new(net.server_ip().into(), DNS_PORT);
    let dig = |extra: &[&str]| -> String { sextant_test_support::dns::dig(None, server, extra) };
    for transport in ["+notcp", "+tcp"] {
        let short = |name: &str, ty: &str| dig(&[transport, "+short", name, ty]);
        assert_eq!(short("ns1.example.com", "A").trim(), "192.0.2.53");
        assert_eq!(short("ns1.example.com", "AAAA").trim(), "2001:db8::53");
        assert_eq!(short("example.com", "MX").trim(), "10 mail.example.com.");
        assert_eq!(
            short("example.com", "TXT").trim(),
            "\"v=spf1 -all\" \"second string\""
        );
        assert_eq!(
            short("_sip._tcp.example.com", "SRV").trim(),
            "1 5 5060 sip.example.com."
        );
        assert_eq!(
            short("alias.example.com", "CNAME").trim(),
            "mail.example.com."
        );
        assert_eq!(
            short("alias.example.com", "A").trim(),
            "mail.example.com.\n192.0.2.25"
        );
        let web = short("web.example.com", "A");
        assert!(web.starts_with("app.example.com.\n"), "{web}");

        let full = dig(&[transport, "example.com", "MX"]);
        assert!(full.contains("status: NOERROR"), "{full}");
        assert!(
            full.lines()
                .any(|l| l.contains("flags:") && l.contains(" aa")),
            "{full}"
        );
        assert!(
            full.contains("ADDITIONAL SECTION") && full.contains("192.0.2.25"),
            "{full}"
        );

        let referral = dig(&[transport, "www.child.example.com", "A"]);
        assert!(referral.contains("status: NOERROR"), "{referral}");
        assert!(
            referral
                .lines()
                .any(|l| l.contains("flags:") && !l.contains(" aa")),
            "a referral has no aa:\n{referral}"
        );
        assert!(
            referral.contains("AUTHORITY SECTION") && referral.contains("ns.child.example.com"),
            "{referral}"
        );
        assert!(referral.contains("192.0.2.99"), "glue:\n{referral}");

        let ent = dig(&[transport, "_tcp.example.com", "A"]);
        assert!(
            ent.contains("status: NOERROR") && ent.contains("SOA"),
            "{ent}"
        );
        let nx = dig(&[transport, "nothing.example.com", "TXT"]);
        assert!(nx.contains("status: NXDOMAIN"), "{nx}");
    }
    let _ = b;
}
