//! DNS policies end to end with the expressions and built-in actions that
//! saved appliance configurations use (issue 11, item 3): a query-type
//! policy (`DNS.REQ.QUESTION.TYPE.EQ(AAAA)`), a negated subnet
//! (`CLIENT.IP.SRC.IN_SUBNET(...).NOT`), one client address
//! (`CLIENT.IP.SRC.EQ(...)`), and the built-in actions `dns_default_act_Drop`
//! (no response at all), `dns_default_act_NoOp` and
//! `dns_default_act_Cachebypass` (answered normally; with goto END they stop
//! the evaluation), with `-logAction` accepted.
//!
//! The real `sextant serve` answers over UDP; the test sends from several
//! 127.x.y.z source addresses of its own ([`Net::client_ip`]).

use std::net::Ipv4Addr;
use std::time::Duration;

use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

/// Whether `source` gets any response to a `rtype` query for `name`,
/// asked twice (a dropped query gets none, and a lost datagram on loopback
/// is not expected).
fn responds(s: &Server, source: Ipv4Addr, name: &str, rtype: RecordType) -> Option<Message> {
    let q = build_query(name, rtype, None).to_vec().expect("encodes");
    let mut last = None;
    for _ in 0..2 {
        last = s
            .dns
            .raw_udp_from(Some(source), &q, Duration::from_millis(700))
            .expect("UDP exchange")
            .map(|b| Message::from_vec(&b).expect("a DNS message"));
        if last.is_some() {
            break;
        }
    }
    last
}

fn assert_dropped(s: &Server, source: Ipv4Addr, name: &str, rtype: RecordType, why: &str) {
    if let Some(m) = responds(s, source, name, rtype) {
        panic!(
            "{why}: {rtype} {name} from {source} was answered: {m:?}\n--- explain ---\n{}",
            s.explain(name, &source.to_string())
        );
    }
}

fn assert_answered(
    s: &Server,
    source: Ipv4Addr,
    name: &str,
    rtype: RecordType,
    why: &str,
) -> Message {
    match responds(s, source, name, rtype) {
        Some(m) => m,
        None => panic!(
            "{why}: {rtype} {name} from {source} got no response\n--- explain ---\n{}",
            s.explain(name, &source.to_string())
        ),
    }
}

#[test]
fn saved_appliance_policy_expressions_and_built_in_actions() {
    let net = Net::new("policies_builtin");
    let eq_client = net.client_ip(1);
    let other = net.client_ip(2);
    let inside = net.client_ip(3);
    let outside = net.client_ip(4);
    let exempt = net.client_ip(5);
    let svc = net.svc_ip(0);
    let mut c = net.conf_preamble();
    c.push_str(&format!(
        "add gslb service s0 {svc} HTTP 80 -siteName site1\n\
         add gslb vserver vs HTTP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs -serviceName s0\n\
         bind gslb vserver vs -domainName www.example.com -TTL 5\n\
         bind gslb vserver vs -domainName inside.example.com -TTL 5\n\
         bind gslb vserver vs -domainName dual.example.com -TTL 5\n\
         add dns policy exempt_one \"CLIENT.IP.SRC.EQ({exempt})\" dns_default_act_NoOp\n\
         add dns policy bypass \"CLIENT.IP.SRC.EQ({other}) && DNS.REQ.QUESTION.DOMAIN.EQ(\\\"www.example.com\\\")\" dns_default_act_Cachebypass -logAction audit_all\n\
         add dns policy drop_one \"CLIENT.IP.SRC.EQ({eq_client})\" dns_default_act_Drop\n\
         add dns policy only_inside \"DNS.REQ.QUESTION.DOMAIN.EQ(\\\"inside.example.com\\\") && CLIENT.IP.SRC.IN_SUBNET({inside}/32).NOT\" dns_default_act_Drop\n\
         add dns policy no_aaaa \"DNS.REQ.QUESTION.DOMAIN.EQ(\\\"dual.example.com\\\") && DNS.REQ.QUESTION.TYPE.EQ(AAAA)\" dns_default_act_Drop\n\
         bind dns global exempt_one 5 -gotoPriorityExpression END\n\
         bind dns global bypass 6 -gotoPriorityExpression END\n\
         bind dns global drop_one 10\n\
         bind dns global only_inside 20\n\
         bind dns global no_aaaa 30\n"
    ));
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);

    // CLIENT.IP.SRC.EQ: that one source gets nothing, the next one an answer.
    let m = assert_answered(
        &s,
        other,
        "www.example.com",
        RecordType::A,
        "EQ, another client",
    );
    assert_eq!(a_records(&m), vec![svc]);
    assert_dropped(
        &s,
        eq_client,
        "www.example.com",
        RecordType::A,
        "EQ on the client",
    );

    // IN_SUBNET(...).NOT: everyone outside the subnet is dropped.
    let m = assert_answered(
        &s,
        inside,
        "inside.example.com",
        RecordType::A,
        ".NOT, inside",
    );
    assert_eq!(a_records(&m), vec![svc]);
    assert_dropped(
        &s,
        outside,
        "inside.example.com",
        RecordType::A,
        ".NOT, outside",
    );

    // TYPE.EQ(AAAA): AAAA queries are dropped, A queries answered.
    let m = assert_answered(
        &s,
        outside,
        "dual.example.com",
        RecordType::A,
        "TYPE.EQ(AAAA), an A query",
    );
    assert_eq!(a_records(&m), vec![svc]);
    assert_dropped(
        &s,
        outside,
        "dual.example.com",
        RecordType::AAAA,
        "TYPE.EQ(AAAA)",
    );

    // dns_default_act_NoOp with goto END: nothing after it is evaluated, so
    // this client's AAAA query is answered (NODATA: no IPv6 service) and so
    // is its query for the inside name.
    let m = assert_answered(
        &s,
        exempt,
        "dual.example.com",
        RecordType::AAAA,
        "NoOp + END",
    );
    assert_eq!(m.metadata.response_code, ResponseCode::NoError, "{m:?}");
    assert!(m.answers.is_empty(), "{m:?}");
    assert_answered(
        &s,
        exempt,
        "inside.example.com",
        RecordType::A,
        "NoOp + END",
    );

    // dns_default_act_Cachebypass: answered normally (there is no cache).
    let m = assert_answered(&s, other, "www.example.com", RecordType::A, "Cachebypass");
    assert_eq!(a_records(&m), vec![svc]);

    // The explain trace names the policy that matched.
    let trace = s.explain("inside.example.com", &outside.to_string());
    assert!(trace.contains("only_inside"), "{trace}");
}
