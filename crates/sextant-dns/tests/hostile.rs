//! Hostile input: `respond` never panics, and whatever it sends back is a
//! DNS message (as hickory reads it) with the query's ID, within the size
//! the transport allows.

mod common;

use std::net::IpAddr;

use common::{QueryBuilder, Server, ecs_option};
use proptest::prelude::*;
use sextant_dns::Transport;

fn check(s: &mut Server, request: &[u8]) {
    for transport in [Transport::Udp, Transport::Tcp] {
        let Some(raw) = s.raw_from(request, IpAddr::from([192, 0, 2, 1]), transport) else {
            // Dropped: only runts and responses.
            assert!(request.len() < 12 || request[2] & 0x80 != 0);
            continue;
        };
        let m = hickory_proto::op::Message::from_vec(&raw)
            .unwrap_or_else(|e| panic!("unparseable response {e}: {raw:02x?} to {request:02x?}"));
        assert_eq!(m.metadata.id, u16::from_be_bytes([request[0], request[1]]));
        assert_eq!(raw[2] & 0x80, 0x80, "QR set");
        let max = match transport {
            Transport::Udp => 4096,
            Transport::Tcp => 65535,
        };
        assert!(raw.len() <= max);
        if transport == Transport::Udp && raw.len() > 512 {
            assert!(m.edns.is_some(), "over 512 only with EDNS");
        }
    }
}

/// Valid queries of every shape the server handles.
fn seeds() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for (name, t) in [
        ("www.example.com", 1),
        ("www.example.com", 28),
        ("big.example.com", 1),
        ("ecs.example.com", 1),
        ("sticky.example.com", 1),
        ("example.com", 6),
        ("example.com", 2),
        ("nope.example.com", 16),
        ("example.org", 1),
        ("", 2),
    ] {
        v.push(QueryBuilder::new(name, t).build());
        v.push(QueryBuilder::new(name, t).edns(1232, 0, true, &[]).build());
        v.push(
            QueryBuilder::new(name, t)
                .edns(4096, 0, false, &ecs_option(1, 24, 0, &[198, 51, 100]))
                .build(),
        );
    }
    v
}

#[derive(Debug, Clone)]
enum Mutation {
    Set(usize, u8),
    Insert(usize, u8),
    Remove(usize),
    Truncate(usize),
}

fn apply(mut q: Vec<u8>, muts: &[Mutation]) -> Vec<u8> {
    for m in muts {
        if q.is_empty() {
            break;
        }
        match *m {
            Mutation::Set(i, b) => {
                let i = i % q.len();
                q[i] = b;
            }
            Mutation::Insert(i, b) => {
                let i = i % (q.len() + 1);
                q.insert(i, b);
            }
            Mutation::Remove(i) => {
                let i = i % q.len();
                q.remove(i);
            }
            Mutation::Truncate(n) => q.truncate(n % (q.len() + 1)),
        }
    }
    q
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        1 => any::<usize>().prop_map(Mutation::Remove),
        1 => any::<usize>().prop_map(Mutation::Truncate),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let mut s = Server::new();
        check(&mut s, &bytes);
    }

    #[test]
    fn arbitrary_bytes_after_a_query_header(
        tail in proptest::collection::vec(any::<u8>(), 0..300),
        counts in any::<[u8; 8]>(),
    ) {
        // A plausible header so the parser gets past the first checks.
        let mut q = vec![0xab, 0xcd, 0x01, 0x00];
        q.extend_from_slice(&counts);
        q[5] = 1;
        q.extend_from_slice(&tail);
        let mut s = Server::new();
        check(&mut s, &q);
    }

    #[test]
    fn mutated_valid_queries(
        seed in 0usize..30,
        muts in proptest::collection::vec(mutation(), 1..6),
    ) {
        let seeds = seeds();
        let q = apply(seeds[seed % seeds.len()].clone(), &muts);
        let mut s = Server::new();
        check(&mut s, &q);
    }
}

#[test]
fn every_seed_is_answered() {
    let mut s = Server::new();
    for q in seeds() {
        check(&mut s, &q);
    }
}
