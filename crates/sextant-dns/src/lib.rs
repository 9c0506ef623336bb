//! Sextant's authoritative DNS edge.
//!
//! Bytes in, bytes out around the pure decision core: [`respond`] parses a
//! query, loads the current [`Snapshot`](sextant_core::Snapshot), calls
//! [`sextant_core::decide`] and builds the response. The UDP loop
//! ([`spawn_udp`]) runs one blocking thread per `SO_REUSEPORT` socket so the
//! kernel spreads queries over cores with no shared queue; the TCP server
//! ([`serve_tcp`]) runs on tokio because connections wait on slow clients.
//!
//! The hot path (recv → parse → snapshot load → decide → build → send) has
//! no heap allocation, no lock and no await: parsing and building are
//! hand-written over borrowed bytes and reused buffers, the snapshot is an
//! `ArcSwap` guard, and each thread owns its [`Worker`].

// Unsafe code is confined to `mmsg` (batched UDP system calls).
#![deny(unsafe_code)]

pub mod ldns;
mod limits;
#[cfg(target_os = "linux")]
mod mmsg;
mod respond;
pub mod sessions;
pub mod stats;
mod tcp;
mod udp;
pub mod wire;

use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwap;
use sextant_core::{AnswerBuf, Cursor, Snapshot};

pub use ldns::LdnsQueue;
pub use respond::{MAX_MESSAGE, MAX_UDP, respond, udp_limit};
pub use sessions::{SessionEntry, SessionTable};
pub use stats::{Counter, DnsStats, StatsSnapshot};
pub use tcp::{TcpConfig, bind_tcp, bind_tcp_vip, serve_tcp, serve_tcp_with};
pub use udp::{bind_udp, bind_udp_vip, spawn_udp, spawn_udp_sockets};

/// `IP_FREEBIND` (or its IPv6 twin): bind to an address the host does not
/// have yet.
fn set_freebind(socket: &socket2::Socket, addr: std::net::SocketAddr) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        if addr.is_ipv4() {
            socket.set_freebind_v4(true)
        } else {
            socket.set_freebind_v6(true)
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (socket, addr);
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "binding to an address the host does not have (a VRRP VIP) needs Linux",
        ))
    }
}
pub use wire::Rcode;
pub use wire::parse::{
    Ecs, Edns, FormErr, Header, ParseError, ParseErrorKind, ParsedQuery, parse_query,
};

/// State shared by every DNS worker.
#[derive(Debug)]
pub struct DnsShared {
    /// The configuration and health that queries are answered from; swap a
    /// whole new snapshot in to change either.
    pub snapshot: ArcSwap<Snapshot>,
    /// Source-IP persistence entries.
    pub sessions: SessionTable,
    pub stats: DnsStats,
    /// New LDNS groups for the RTT method's prober.
    pub ldns: LdnsQueue,
}

impl DnsShared {
    pub fn new(snapshot: Snapshot) -> Self {
        DnsShared {
            snapshot: ArcSwap::from_pointee(snapshot),
            sessions: SessionTable::new(),
            stats: DnsStats::default(),
            ldns: LdnsQueue::default(),
        }
    }

    /// Publishes a new snapshot; queries in flight finish on the old one.
    pub fn publish(&self, snapshot: Snapshot) {
        self.snapshot.store(Arc::new(snapshot));
    }
}

/// Per-thread state: selection cursor, answer and name buffers, stats shard.
/// Never shared, so the hot path needs no lock.
#[derive(Debug)]
pub struct Worker {
    cursor: Cursor,
    answers: AnswerBuf,
    name_buf: [u8; 256],
    shard: usize,
}

impl Worker {
    /// `seed` drives the worker's random choices; give each worker its own.
    pub fn new(seed: u64) -> Self {
        Worker {
            cursor: Cursor::new(seed),
            answers: AnswerBuf {
                addrs: Vec::with_capacity(64),
                cname_service: None,
                chain: Vec::with_capacity(sextant_core::records::MAX_CNAME_CHAIN),
            },
            name_buf: [0; 256],
            shard: stats::next_shard(),
        }
    }
}

/// How a query arrived; decides the response size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Udp,
    Tcp,
}

/// A seed that differs between calls and between processes.
pub(crate) fn random_seed() -> u64 {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    RandomState::new().hash_one(CALLS.fetch_add(1, Ordering::Relaxed))
}
