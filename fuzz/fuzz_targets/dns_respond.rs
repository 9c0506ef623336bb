//! Arbitrary bytes into `respond`, over UDP and TCP: it must never panic,
//! and anything it answers must carry the query's ID and fit the transport.
#![no_main]

#[path = "../../crates/sextant-dns/tests/common/model.rs"]
mod model;

use std::net::IpAddr;
use std::sync::{Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use sextant_dns::{DnsShared, Transport, Worker, respond};

struct State {
    shared: DnsShared,
    worker: Worker,
    out: Vec<u8>,
}

fn state() -> &'static Mutex<State> {
    static STATE: OnceLock<Mutex<State>> = OnceLock::new();
    STATE.get_or_init(|| {
        Mutex::new(State {
            shared: DnsShared::new(model::snapshot()),
            worker: Worker::new(1),
            out: Vec::with_capacity(65535),
        })
    })
}

fuzz_target!(|data: &[u8]| {
    let mut guard = state().lock().unwrap_or_else(|p| p.into_inner());
    let State {
        shared,
        worker,
        out,
    } = &mut *guard;
    let source = IpAddr::from([192, 0, 2, 1]);
    for (transport, max) in [(Transport::Udp, 4096), (Transport::Tcp, 65535)] {
        if respond(shared, worker, data, source, transport, out) {
            assert!(out.len() >= 12 && out.len() <= max);
            assert_eq!(out[..2], data[..2]);
            assert_eq!(out[2] & 0x80, 0x80);
        } else {
            assert!(out.is_empty());
        }
    }
});
