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

// Unsafe code is confined to `mmsg` (batched UDP system calls),
// `sockopt` (one setsockopt), `limits` (getrlimit) and the XDP path's
// `xdp::bpf` (bpf(2) calls) and `xdp::xsk` (the AF_XDP socket, its memory
// maps and rings).

pub mod cookie;
pub mod counters;
pub mod dnssec;
pub mod ldns;
mod limits;
#[cfg(target_os = "linux")]
pub mod mmsg;
pub mod querylog;
mod respond;
pub mod rrl;
pub mod sessions;
#[cfg(target_os = "linux")]
mod sockopt;
pub mod stats;
mod tcp;
mod udp;
/// The wire format lives in `sextant-wire` (pure, shared with the clients).
pub use sextant_wire as wire;
#[cfg(target_os = "linux")]
pub mod xdp;

use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use arc_swap::{ArcSwap, ArcSwapOption};
use sextant_core::{AnswerBuf, Cursor, Snapshot};

pub use cookie::{CookieSecrets, CookieStatus};
pub use ldns::LdnsQueue;
pub use respond::{MAX_MESSAGE, MAX_UDP, respond, udp_limit};
pub use rrl::{RateLimiter, Verdict};
pub use sessions::{SessionEntry, SessionTable};
pub use stats::{Counter, DnsStats, StatsSnapshot};
pub use tcp::{TcpConfig, bind_tcp, bind_tcp_vip, serve_tcp, serve_tcp_with};
pub use udp::{
    DEFAULT_RECEIVE_BUFFER, UdpOptions, bind_udp, bind_udp_vip, bind_udp_with, spawn_udp,
    spawn_udp_sockets,
};

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
    Cookie, Ecs, Edns, FormErr, Header, ParseError, ParseErrorKind, ParsedQuery, parse_query,
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
    /// Per-worker counters by query type, decision and answered object.
    pub answers: counters::AnswerCounters,
    /// The query log, when one is asked for (set once at start).
    pub query_log: std::sync::OnceLock<querylog::QueryLog>,
    /// New LDNS groups for the RTT method's prober.
    pub ldns: LdnsQueue,
    /// The response rate limiter's table. Whether limiting is on is the
    /// snapshot's (`model.dns.rrl`), so it follows reloads with one branch
    /// on the hot path; the table lives here so that publishing a snapshot
    /// (at every health change) does not reset the buckets. Replace it with
    /// [`DnsShared::set_rate_limiter`] when the settings change.
    pub rrl: ArcSwapOption<RateLimiter>,
    /// The DNS cookie secrets (current and previous); see
    /// [`DnsShared::rotate_cookie_secret`].
    pub cookie_secrets: ArcSwap<CookieSecrets>,
    /// The rate limiter's clock starts here.
    epoch: Instant,
}

impl DnsShared {
    /// The cookie secret is made here from the OS's random source.
    pub fn new(snapshot: Snapshot) -> Self {
        DnsShared {
            snapshot: ArcSwap::from_pointee(snapshot),
            sessions: SessionTable::new(),
            stats: DnsStats::default(),
            answers: counters::AnswerCounters::default(),
            query_log: std::sync::OnceLock::new(),
            ldns: LdnsQueue::default(),
            rrl: ArcSwapOption::empty(),
            cookie_secrets: ArcSwap::from_pointee(CookieSecrets::new(os_random())),
            epoch: Instant::now(),
        }
    }

    /// Publishes a new snapshot; queries in flight finish on the old one.
    pub fn publish(&self, snapshot: Snapshot) {
        self.snapshot.store(Arc::new(snapshot));
    }

    /// Installs a rate limiter for `settings` with a fresh random hash key,
    /// unless the one in place already has exactly these settings (a reload
    /// that changes nothing keeps the buckets); `None` removes it.
    pub fn set_rate_limiter(&self, settings: Option<&sextant_core::RrlSettings>) {
        let current = self.rrl.load();
        match (settings, current.as_deref()) {
            (Some(s), Some(l)) if l.settings() == s => {}
            (Some(s), _) => self
                .rrl
                .store(Some(Arc::new(RateLimiter::new(s.clone(), os_random())))),
            (None, _) => self.rrl.store(None),
        }
    }

    /// Replaces the cookie secret with a new random one; the old one stays
    /// valid until the next rotation.
    pub fn rotate_cookie_secret(&self) {
        self.rotate_cookie_secret_to(os_random());
    }

    /// [`DnsShared::rotate_cookie_secret`] with a given secret (tests).
    pub fn rotate_cookie_secret_to(&self, next: [u8; 16]) {
        let now = self.cookie_secrets.load();
        self.cookie_secrets.store(Arc::new(now.rotated(next)));
    }

    /// Microseconds since this state was made: the rate limiter's clock.
    pub(crate) fn now_us(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX)
    }
}

/// Seconds since the Unix epoch, truncated to 32 bits (the RFC 9018
/// timestamp, read with serial arithmetic).
pub(crate) fn wall_secs() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as u32)
        .unwrap_or(0)
}

/// 16 random octets from the OS (`/dev/urandom`), for the cookie secret
/// and the rate limiter's hash key. Should the device be unreadable, the
/// standard library's per-process random hash keys (also seeded by the OS)
/// are used instead, so the server still starts.
pub fn os_random() -> [u8; 16] {
    use std::io::Read;
    let mut out = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut out));
    if let Err(e) = read {
        tracing::warn!(error = %e, "cannot read /dev/urandom; using the process's random hash keys");
        let a = random_seed().to_le_bytes();
        let b = random_seed().to_le_bytes();
        out[..8].copy_from_slice(&a);
        out[8..].copy_from_slice(&b);
    }
    out
}

/// Per-thread state: selection cursor, answer and name buffers, stats shard.
/// Never shared, so the hot path needs no lock.
#[derive(Debug)]
pub struct Worker {
    cursor: Cursor,
    answers: AnswerBuf,
    name_buf: [u8; 256],
    shard: usize,
    /// Responses this worker has rate limited; every `slip`th is truncated.
    limited: u64,
    /// This worker's answer counters (registered with the server's
    /// [`DnsShared::answers`] on first use).
    counters: counters::WorkerCounters,
    /// Queries seen while the query log samples (one in N is logged).
    log_turn: u64,
    /// Signers and signatures of the signed zones.
    dnssec: dnssec::DnssecWorker,
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
                services: Vec::with_capacity(64),
                ..AnswerBuf::default()
            },
            counters: counters::WorkerCounters::default(),
            log_turn: 0,
            dnssec: dnssec::DnssecWorker::default(),
            name_buf: [0; 256],
            shard: stats::next_shard(),
            limited: 0,
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
