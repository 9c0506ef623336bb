//! Policy rules are evaluated for every query: `Expr::eval` must not
//! allocate. A counting global allocator (per thread, so the test harness's
//! own threads do not interfere) wraps the system one.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::net::IpAddr;

use sextant_core::policy::{Expr, RequestFacts};
use sextant_core::{Location, QueryType};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: forwards every call unchanged to the system allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(|c| c.get())
}

#[test]
fn eval_does_not_allocate() {
    let rules: Vec<Expr> = [
        r#"CLIENT.IP.SRC.MATCHES_LOCATION("\*.ZMB.\*.*")"#,
        r#"CLIENT.IP.SRC.IN_SUBNET(10.0.0.0/8) || CLIENT.IP.SRC.IN_SUBNET(2001:db8::/32)"#,
        r#"!DNS.REQ.QUESTION.DOMAIN.EQ("www.example.com") && DNS.REQ.QUESTION.DOMAIN.ENDSWITH("Example.COM")"#,
        r#"(DNS.REQ.QUESTION.TYPE.EQ(A) || DNS.REQ.QUESTION.TYPE.EQ(AAAA)) && true && !false"#,
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
