//! Policy rules are evaluated for every query: `Expr::eval` must not
//! allocate. A counting global allocator (per thread, so the test harness's
//! own threads do not interfere) wraps the system one.

use std::net::IpAddr;

use sextant_core::policy::{Expr, RequestFacts};
use sextant_core::{Location, QueryType};
use sextant_test_support::alloc::{Counting, allocations};

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn eval_does_not_allocate() {
    let rules: Vec<Expr> = [
        r#"CLIENT.IP.SRC.MATCHES_LOCATION("\*.ZMB.\*.*")"#,
        r#"CLIENT.IP.SRC.IN_SUBNET(10.0.0.0/8) || CLIENT.IP.SRC.IN_SUBNET(2001:db8::/32)"#,
        r#"!DNS.REQ.QUESTION.DOMAIN.EQ("www.example.com") && DNS.REQ.QUESTION.DOMAIN.ENDSWITH("Example.COM")"#,
        r#"(DNS.REQ.QUESTION.TYPE.EQ(A) || DNS.REQ.QUESTION.TYPE.EQ(AAAA)) && true && !false"#,
        r#"CLIENT.IP.SRC.EQ(10.1.2.3) || CLIENT.IP.SRC.EQ(2001:db8::1) || CLIENT.IP.SRC.IN_SUBNET(10.0.0.0/8).NOT"#,
        r#"CLIENT.IP.SRC.IN_SUBNET(2001:db8::/32).NOT && DNS.REQ.QUESTION.TYPE.EQ(MX).NOT"#,
    ]
    .iter()
    .map(|t| Expr::parse(t).expect("parses"))
    .collect();
    let zmb = Location::parse("Africa.ZMB.Lusaka").expect("location");
    let clients: Vec<IpAddr> = ["10.1.2.3", "192.0.2.1", "2001:db8::1", "::ffff:10.0.0.1"]
        .iter()
        .map(|a| a.parse().expect("ip"))
        .collect();
    let names = ["www.example.com", "a.example.com.", "example.org", ""];
    let mut matched = 0u32;
    let before = allocations();
    for rule in &rules {
        for &client in &clients {
            for (i, qname) in names.iter().enumerate() {
                let facts = RequestFacts {
                    client,
                    client_location: (i % 2 == 0).then_some(&zmb),
                    qname,
                    qtype: if i < 2 { QueryType::A } else { QueryType::Aaaa },
                };
                matched += u32::from(rule.eval(&facts));
            }
        }
    }
    let after = allocations();
    assert!(matched > 0);
    assert_eq!(after - before, 0, "Expr::eval allocated");
}
