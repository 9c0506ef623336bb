//! Query and response counters.
//!
//! Every query bumps two counters, from every worker thread. One shared
//! atomic per counter would bounce its cache line between cores at
//! hundreds of thousands of queries per second, so the counters are split
//! into cache-line-aligned shards; each [`crate::Worker`] writes to its own
//! shard with Relaxed adds and readers sum the shards.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// What is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Counter {
    QueriesUdp,
    QueriesTcp,
    NoError,
    NxDomain,
    Refused,
    FormErr,
    ServFail,
    NotImp,
    BadVers,
    /// UDP responses sent with TC=1.
    Truncated,
    /// Packets not answered (shorter than a header, or a response).
    Dropped,
    /// TCP connections closed at once because the connection cap was hit.
    TcpRejected,
    /// UDP responses over the rate limit (dropped or slipped).
    RateLimited,
    /// Of those, the ones sent truncated (TC=1) so the client retries over TCP.
    Slipped,
    /// Queries with a valid server cookie (exempt from rate limiting).
    CookieValid,
    /// Queries whose server cookie was not ours, expired or for another
    /// address (answered with a fresh cookie).
    CookieInvalid,
    /// TCP connections closed for idleness or a stalled query.
    TcpIdleClosed,
    /// Frames the XDP path took off its interface (the queries among them
    /// count in `QueriesUdp` too).
    QueriesXdp,
    /// Responses that carried DNSSEC signatures (DO set, a signed zone).
    DnssecSigned,
    /// RRSIGs made (signature cache misses; the rest came from the cache).
    DnssecSignatures,
}

const COUNTERS: usize = 20;
/// A power of two; more shards than cores keeps collisions rare.
const SHARDS: usize = 16;

/// One shard on its own pair of cache lines (128 bytes covers the adjacent
/// line prefetcher too).
#[repr(align(128))]
#[derive(Default)]
struct Shard {
    counters: [AtomicU64; COUNTERS],
}

/// Atomic DNS counters shared by all workers.
pub struct DnsStats {
    shards: [Shard; SHARDS],
}

impl Default for DnsStats {
    fn default() -> Self {
        DnsStats {
            shards: std::array::from_fn(|_| Shard::default()),
        }
    }
}

impl std::fmt::Debug for DnsStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.snapshot().fmt(f)
    }
}

/// A point-in-time copy of the counters (each total is exact; the totals
/// are not read atomically together).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    pub queries_udp: u64,
    pub queries_tcp: u64,
    pub noerror: u64,
    pub nxdomain: u64,
    pub refused: u64,
    pub formerr: u64,
    pub servfail: u64,
    pub notimp: u64,
    pub badvers: u64,
    pub truncated: u64,
    pub dropped: u64,
    pub tcp_rejected: u64,
    pub rate_limited: u64,
    pub slipped: u64,
    pub cookie_valid: u64,
    pub cookie_invalid: u64,
    pub tcp_idle_closed: u64,
    pub queries_xdp: u64,
    pub dnssec_signed: u64,
    pub dnssec_signatures: u64,
}

impl DnsStats {
    /// Adds one to `counter` in shard `shard` (any number; it is reduced).
    #[inline]
    pub fn incr(&self, shard: usize, counter: Counter) {
        if let Some(c) = self.shards[shard % SHARDS].counters.get(counter as usize) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The total of one counter.
    pub fn get(&self, counter: Counter) -> u64 {
        self.shards
            .iter()
            .filter_map(|s| s.counters.get(counter as usize))
            .map(|c| c.load(Ordering::Relaxed))
            .fold(0u64, u64::wrapping_add)
    }

    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            queries_udp: self.get(Counter::QueriesUdp),
            queries_tcp: self.get(Counter::QueriesTcp),
            noerror: self.get(Counter::NoError),
            nxdomain: self.get(Counter::NxDomain),
            refused: self.get(Counter::Refused),
            formerr: self.get(Counter::FormErr),
            servfail: self.get(Counter::ServFail),
            notimp: self.get(Counter::NotImp),
            badvers: self.get(Counter::BadVers),
            truncated: self.get(Counter::Truncated),
            dropped: self.get(Counter::Dropped),
            tcp_rejected: self.get(Counter::TcpRejected),
            rate_limited: self.get(Counter::RateLimited),
            slipped: self.get(Counter::Slipped),
            cookie_valid: self.get(Counter::CookieValid),
            cookie_invalid: self.get(Counter::CookieInvalid),
            tcp_idle_closed: self.get(Counter::TcpIdleClosed),
            queries_xdp: self.get(Counter::QueriesXdp),
            dnssec_signed: self.get(Counter::DnssecSigned),
            dnssec_signatures: self.get(Counter::DnssecSignatures),
        }
    }
}

/// Hands each new worker the next shard, round robin.
pub(crate) fn next_shard() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_sum() {
        let s = DnsStats::default();
        for shard in 0..40 {
            s.incr(shard, Counter::NoError);
        }
        s.incr(3, Counter::TcpRejected);
        s.incr(5, Counter::TcpIdleClosed);
        assert_eq!(s.get(Counter::TcpIdleClosed), 1);
        let snap = s.snapshot();
        assert_eq!(snap.noerror, 40);
        assert_eq!(snap.tcp_rejected, 1);
        assert_eq!(snap.queries_udp, 0);
        assert!(std::mem::align_of::<Shard>() >= 128);
    }
}
