//! The hot path allocates nothing once a worker's buffers are warm.
//!
//! A counting global allocator (per thread, so the test harness's own
//! threads do not interfere) wraps the system one.

mod common;

use std::net::IpAddr;

use common::{QueryBuilder, Server, ecs_option};
use sextant_dns::Transport;
use sextant_test_support::alloc::{Counting, allocations};

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn respond_does_not_allocate_when_warm() {
    let ecs = ecs_option(1, 24, 0, &[198, 51, 100]);
    let mut bad_ecs = QueryBuilder::new("ecs.example.com", 1);
    bad_ecs = bad_ecs.edns(1232, 0, false, &ecs_option(1, 24, 3, &[1, 2, 3]));
    let queries: Vec<(Vec<u8>, Transport)> = vec![
        (
            QueryBuilder::new("www.example.com", 1).build(),
            Transport::Udp,
        ),
        (
            QueryBuilder::new("WWW.example.com", 28).build(),
            Transport::Udp,
        ),
        (
            QueryBuilder::new("www.example.com", 16).build(),
            Transport::Udp,
        ),
        (
            QueryBuilder::new("nope.example.com", 1).build(),
            Transport::Udp,
        ),
        (QueryBuilder::new("example.org", 1).build(), Transport::Udp),
        (QueryBuilder::new("example.com", 6).build(), Transport::Udp),
        (QueryBuilder::new("example.com", 2).build(), Transport::Udp),
        (
            QueryBuilder::new("big.example.com", 1).build(),
            Transport::Udp,
        ),
        (
            QueryBuilder::new("big.example.com", 1).build(),
            Transport::Tcp,
        ),
        (
            QueryBuilder::new("ecs.example.com", 1)
                .edns(1232, 0, true, &ecs)
                .build(),
            Transport::Udp,
        ),
        (bad_ecs.build(), Transport::Udp),
        (
            QueryBuilder::new("www.example.com", 1)
                .edns(1232, 1, false, &[])
                .build(),
            Transport::Udp,
        ),
        // Persistence refreshes an existing entry: no allocation either.
        (
            QueryBuilder::new("sticky.example.com", 1).build(),
            Transport::Udp,
        ),
        (vec![1, 2, 3], Transport::Udp),
    ];
    let mut s = Server::new();
    let source = IpAddr::from([198, 18, 0, 1]);
    s.out.reserve(65535);
    let respond_all = |s: &mut Server| {
        for (q, t) in &queries {
            sextant_dns::respond(&s.shared, &mut s.worker, q, source, *t, &mut s.out);
        }
    };
    respond_all(&mut s);
    respond_all(&mut s);

    // The counter works.
    let before = allocations();
    std::hint::black_box(vec![0u8; 16]);
    assert_eq!(allocations() - before, 1);

    let before = allocations();
    for _ in 0..100 {
        respond_all(&mut s);
    }
    assert_eq!(allocations() - before, 0, "allocations on the hot path");
}
