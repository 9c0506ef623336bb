//! LDNS round-trip probes for the dynamic RTT load-balancing method.
//!
//! Each site measures how far it is from a client's local DNS resolver (the
//! "LDNS") by probing the resolver itself, as the appliance does: an ICMP
//! echo (`ldns-ping`), else a DNS query over UDP (`ldns-dns`), else a DNS
//! query over TCP (`ldns-tcp`), in the configured order. The first kind that
//! gets *any* answer gives the cycle's sample. What counts as an answer is
//! deliberately broad, because only the round trip matters, not whether the
//! resolver would serve us:
//!
//! * PING: the matching echo reply;
//! * DNS over UDP: a response with our query ID, whatever its rcode
//!   (REFUSED is the usual answer of a resolver to a stranger), or an ICMP
//!   port unreachable (`ECONNREFUSED` on the connected socket);
//! * DNS over TCP: a refused connect (RST), a response with our ID (any
//!   rcode), or a reset of the established connection.
//!
//! Anything else (silence until the monitor's timeout, a closed
//! connection, replies that are not ours) is a failure of that kind, and the
//! next kind is tried. When every kind fails the cycle reports
//! [`LdnsOutcome::Failed`] with what each one said.
//!
//! A sample also carries the IP TTL (IPv6: hop limit) the reply arrived
//! with, for datacenter mode's path figures (hops, TTL): the ping and the
//! DNS-over-UDP probes read it from the reply (`IP_RECVTTL` /
//! `IPV6_RECVHOPLIMIT`); the TCP probe cannot see it, and neither can a UDP
//! probe answered by an ICMP port unreachable (the error carries no TTL of
//! the resolver's reply), nor any probe where the kernel refuses the socket
//! option: their TTL is `None`.
//!
//! Probes are sent from the site's own address ([`LdnsProberConfig::source`])
//! so the round trip is the site's, not that of whichever interface the
//! kernel picks. Which resolvers to probe, and what the samples mean, is the
//! state engine's business; this module only measures.
//!
//! Everything is bounded: one task per target runs its cycles one after the
//! other (never two outstanding), each attempt is bounded by its monitor's
//! timeout, a global token bucket caps the probes per second (probes beyond
//! it wait their turn, and are counted), and samples are handed over with
//! `try_send` so a slow consumer loses samples (counted) instead of stalling
//! the prober.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use sextant_core::{GslbParams, LdnsMonitor, LdnsProbe};
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::runtime::Handle;
use tokio::sync::mpsc::{self, error::TrySendError};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::{ProbeError, dns, ping, schedule, tcp, ttl, udp};

/// The port of the DNS probes when the monitor sets no `-destPort`.
const DNS_PORT: u16 = 53;
/// The shortest cycle period we schedule, so a zero interval cannot spin.
const MIN_PERIOD: Duration = Duration::from_millis(10);
/// The question of the DNS probes, `. IN NS`: small, and something every
/// resolver can answer (or refuse) at once, without recursing.
const QUERY_NAME: &str = ".";

/// What the prober needs from the configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct LdnsProberConfig {
    /// Address probes are sent from (the local site's IP); None = the
    /// kernel's choice. It is used only for resolvers of its own address
    /// family; the others get the kernel's choice.
    pub source: Option<IpAddr>,
    /// The kinds tried in each cycle, first to last (`-ldnsProbeOrder`).
    pub order: Vec<LdnsProbe>,
    pub ping: LdnsMonitor,
    pub dns: LdnsMonitor,
    pub tcp: LdnsMonitor,
    /// Global cap on probes per second (token bucket); probes beyond it
    /// wait, counted. Values below 1 count as 1, so the cap always holds.
    pub probes_per_second: u32,
}

impl LdnsProberConfig {
    /// The prober's settings from the GSLB parameters, sending from
    /// `source` (the local site's IP).
    pub fn from_params(params: &GslbParams, source: Option<IpAddr>) -> Self {
        LdnsProberConfig {
            source,
            order: params.ldns_probe_order.clone(),
            ping: params.ldns_ping,
            dns: params.ldns_dns,
            tcp: params.ldns_tcp,
            probes_per_second: params.ldns_probes_per_second,
        }
    }

    /// The settings of the monitor of `kind`.
    pub fn monitor(&self, kind: LdnsProbe) -> &LdnsMonitor {
        match kind {
            LdnsProbe::Ping => &self.ping,
            LdnsProbe::DnsUdp => &self.dns,
            LdnsProbe::DnsTcp => &self.tcp,
        }
    }

    /// How long after a cycle's start the next one starts: the interval of
    /// the kind that answered (`answered`), since that is the monitor that
    /// probes this resolver now (seed 003: when the ping gets no answer, the
    /// next monitor probes, at its own `-interval`); after a cycle in which
    /// every kind failed, or before the first, the interval of the first kind
    /// of the order, where every cycle begins. At least 10 ms; with an empty
    /// order, the default monitor interval (5 s).
    pub fn period(&self, answered: Option<LdnsProbe>) -> Duration {
        let interval = match answered.or_else(|| self.order.first().copied()) {
            Some(kind) => self.monitor(kind).interval,
            None => LdnsMonitor::default().interval,
        };
        interval.max(MIN_PERIOD)
    }
}

/// One cycle's result for one resolver.
#[derive(Debug, Clone, PartialEq)]
pub struct LdnsSample {
    pub ldns: IpAddr,
    pub outcome: LdnsOutcome,
}

/// What one cycle measured.
#[derive(Debug, Clone, PartialEq)]
pub enum LdnsOutcome {
    /// A valid RTT sample, the probe kind that produced it, and the IP TTL
    /// (IPv6: hop limit) the reply arrived with when the probe could see
    /// it (ping and DNS over UDP; never DNS over TCP).
    Rtt {
        rtt: Duration,
        kind: LdnsProbe,
        ttl: Option<u8>,
    },
    /// Every kind in the order failed this cycle; `detail` says how (e.g.
    /// "ldns-ping: no response within 2s; ldns-dns: ...").
    Failed { detail: String },
}

/// What the prober has done so far, for the API and the logs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LdnsProberCounters {
    /// Probe attempts started (one per kind tried).
    pub probes_sent: u64,
    /// Cycles that produced an RTT sample.
    pub samples: u64,
    /// Cycles in which every kind failed.
    pub failures: u64,
    /// Attempts that had to wait for the probes-per-second cap.
    pub rate_limited: u64,
    /// Samples (of either outcome) dropped because the channel was full.
    pub dropped: u64,
}

/// The running LDNS probes: one task per resolver, on the tokio runtime
/// that was current at [`LdnsProber::start`]. Dropping it aborts them all.
#[derive(Debug)]
pub struct LdnsProber {
    config: watch::Sender<Arc<LdnsProberConfig>>,
    shared: Arc<Shared>,
    targets: HashMap<IpAddr, JoinHandle<()>>,
    tx: mpsc::Sender<LdnsSample>,
    runtime: Handle,
}

impl LdnsProber {
    /// Spawns on the current tokio runtime. Samples go to `tx` (try_send; a
    /// full channel drops the sample and counts it — never block the
    /// prober). Nothing is probed until [`LdnsProber::add`].
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn start(config: LdnsProberConfig, tx: mpsc::Sender<LdnsSample>) -> LdnsProber {
        let shared = Arc::new(Shared {
            bucket: Mutex::new(Bucket::new(config.probes_per_second, Instant::now())),
            probes_sent: AtomicU64::new(0),
            samples: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            rate_limited: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            ping_denied_logged: AtomicBool::new(false),
        });
        let (config, _) = watch::channel(Arc::new(config));
        LdnsProber {
            config,
            shared,
            targets: HashMap::new(),
            tx,
            runtime: Handle::current(),
        }
    }

    /// Starts probing `ldns` (idempotent). First cycle soon (within a
    /// small deterministic jitter, at most min(period, 1 s), so a burst of
    /// new resolvers is spread out), then every cycle period.
    pub fn add(&mut self, ldns: IpAddr) {
        if self.targets.get(&ldns).is_some_and(|t| !t.is_finished()) {
            return;
        }
        let task = run_target(
            ldns,
            Arc::clone(&self.shared),
            self.config.subscribe(),
            self.tx.clone(),
        );
        self.targets.insert(ldns, self.runtime.spawn(task));
    }

    /// Stops probing `ldns` (idempotent). A cycle in progress is abandoned
    /// and reports nothing.
    pub fn remove(&mut self, ldns: IpAddr) {
        if let Some(task) = self.targets.remove(&ldns) {
            task.abort();
        }
    }

    /// New settings; targets keep running under them. A target waiting for
    /// its next cycle re-times the wait with the new period (counted from
    /// the start of its last cycle); a cycle in progress finishes under the
    /// settings it started with. The rate cap changes at once.
    pub fn reconfigure(&mut self, config: LdnsProberConfig) {
        self.shared
            .bucket
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .set_rate(config.probes_per_second, Instant::now());
        self.config.send_replace(Arc::new(config));
    }

    /// The number of resolvers being probed.
    pub fn len(&self) -> usize {
        self.targets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    /// Whether `ldns` is being probed.
    pub fn contains(&self, ldns: IpAddr) -> bool {
        self.targets.contains_key(&ldns)
    }

    pub fn counters(&self) -> LdnsProberCounters {
        let s = &self.shared;
        LdnsProberCounters {
            probes_sent: s.probes_sent.load(Ordering::Relaxed),
            samples: s.samples.load(Ordering::Relaxed),
            failures: s.failures.load(Ordering::Relaxed),
            rate_limited: s.rate_limited.load(Ordering::Relaxed),
            dropped: s.dropped.load(Ordering::Relaxed),
        }
    }
}

impl Drop for LdnsProber {
    /// Aborts every probe task (at its next await).
    fn drop(&mut self) {
        for task in self.targets.values() {
            task.abort();
        }
    }
}

/// What every target's task shares: the rate cap and the counters.
#[derive(Debug)]
struct Shared {
    bucket: Mutex<Bucket>,
    probes_sent: AtomicU64,
    samples: AtomicU64,
    failures: AtomicU64,
    rate_limited: AtomicU64,
    dropped: AtomicU64,
    /// Whether we logged that PING has no socket here (logged once, since
    /// every probe would say it again).
    ping_denied_logged: AtomicBool,
}

impl Shared {
    /// Waits for the rate cap to allow one more probe.
    async fn take_token(&self) {
        let wait = self
            .bucket
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .reserve(Instant::now());
        if let Some(wait) = wait {
            self.rate_limited.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(wait).await;
        }
    }
}

/// A token bucket that hands out reservations: a probe beyond the cap takes
/// a token anyway (the balance goes negative) and is told how long to wait
/// for it. Waiters are thus served in arrival order, without polling. The
/// debt is bounded by the number of targets, since each has at most one
/// attempt waiting.
#[derive(Debug)]
struct Bucket {
    /// Tokens per second, also the burst size.
    rate: f64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    fn new(per_second: u32, now: Instant) -> Self {
        let rate = f64::from(per_second.max(1));
        Bucket {
            rate,
            tokens: rate,
            last: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.rate);
        self.last = now;
    }

    /// Takes a token; `Some(wait)` when it is only there after `wait`.
    fn reserve(&mut self, now: Instant) -> Option<Duration> {
        self.refill(now);
        self.tokens -= 1.0;
        (self.tokens < 0.0).then(|| Duration::from_secs_f64(-self.tokens / self.rate))
    }

    fn set_rate(&mut self, per_second: u32, now: Instant) {
        self.refill(now);
        self.rate = f64::from(per_second.max(1));
        self.tokens = self.tokens.min(self.rate);
    }
}

/// The life of one target: a jittered first cycle, then one cycle per
/// period (measured from the start of the previous one; a cycle longer than
/// the period is followed by the next at once, never overlapped). Ends when
/// the sample channel is closed.
async fn run_target(
    ldns: IpAddr,
    shared: Arc<Shared>,
    mut config: watch::Receiver<Arc<LdnsProberConfig>>,
    tx: mpsc::Sender<LdnsSample>,
) {
    let first = schedule::jitter_of(ip_key(ldns), config.borrow().period(None));
    tokio::time::sleep(first).await;
    loop {
        let current = Arc::clone(&config.borrow_and_update());
        let started = Instant::now();
        // Boxed: the cycle's future holds the probes' buffers and sockets,
        // which a waiting task need not keep.
        let outcome = Box::pin(cycle(ldns, &current, &shared)).await;
        drop(current);
        let (counter, answered) = match outcome {
            LdnsOutcome::Rtt { kind, .. } => (&shared.samples, Some(kind)),
            LdnsOutcome::Failed { .. } => (&shared.failures, None),
        };
        counter.fetch_add(1, Ordering::Relaxed);
        match tx.try_send(LdnsSample { ldns, outcome }) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                shared.dropped.fetch_add(1, Ordering::Relaxed);
            }
            Err(TrySendError::Closed(_)) => return, // nobody listens any more
        }
        // Wait for the next cycle; a reconfiguration recomputes the wait.
        loop {
            let next = started + config.borrow_and_update().period(answered);
            tokio::select! {
                () = tokio::time::sleep_until(next) => break,
                changed = config.changed() => {
                    if changed.is_err() {
                        return; // the prober is gone
                    }
                }
            }
        }
    }
}

/// One cycle: the kinds in order until one gives a sample.
async fn cycle(ldns: IpAddr, config: &LdnsProberConfig, shared: &Shared) -> LdnsOutcome {
    if config.order.is_empty() {
        return LdnsOutcome::Failed {
            detail: "no LDNS probe kinds in the probe order".into(),
        };
    }
    let source = source_for(ldns, config.source);
    let mut failures = Vec::with_capacity(config.order.len());
    for &kind in &config.order {
        let monitor = config.monitor(kind);
        let attempts = monitor.retries.max(1);
        for n in 1..=attempts {
            shared.take_token().await;
            shared.probes_sent.fetch_add(1, Ordering::Relaxed);
            let timeout = monitor.timeout;
            let start = Instant::now();
            let result =
                match tokio::time::timeout(timeout, attempt(kind, ldns, monitor, source)).await {
                    Ok(result) => result,
                    Err(_elapsed) => Err(ProbeError::Timeout(timeout)),
                };
            match result {
                Ok(ttl) => {
                    return LdnsOutcome::Rtt {
                        rtt: start.elapsed(),
                        kind,
                        ttl,
                    };
                }
                Err(e) => {
                    if matches!(e, ProbeError::PingPermission(_))
                        && !shared.ping_denied_logged.swap(true, Ordering::Relaxed)
                    {
                        tracing::error!(
                            "{e}; ldns-ping probes fail, the next kind in the order is tried"
                        );
                    }
                    // The last attempt of a kind says why it failed.
                    if n == attempts {
                        let tries = if attempts > 1 {
                            format!(" ({attempts} attempts)")
                        } else {
                            String::new()
                        };
                        failures.push(format!("{}: {e}{tries}", kind.monitor_name()));
                    }
                }
            }
        }
    }
    LdnsOutcome::Failed {
        detail: failures.join("; "),
    }
}

/// One attempt of one kind; `Ok` means the resolver answered in a way that
/// times a round trip, with the reply's TTL when the kind can see it. The
/// caller bounds the time.
async fn attempt(
    kind: LdnsProbe,
    ldns: IpAddr,
    monitor: &LdnsMonitor,
    source: Option<IpAddr>,
) -> Result<Option<u8>, ProbeError> {
    let target = SocketAddr::new(ldns, monitor.dest_port.unwrap_or(DNS_PORT));
    match kind {
        LdnsProbe::Ping => ping::probe_from(ldns, source).await.map(|(_, ttl)| ttl),
        LdnsProbe::DnsUdp => dns_udp(target, source).await,
        LdnsProbe::DnsTcp => dns_tcp(target, source).await.map(|()| None),
    }
}

/// The configured source, when it can reach `ldns` (same address family).
fn source_for(ldns: IpAddr, source: Option<IpAddr>) -> Option<IpAddr> {
    source.filter(|s| s.is_ipv4() == ldns.is_ipv4())
}

/// A stable key of an address, for the jitter.
fn ip_key(ip: IpAddr) -> u64 {
    match ip {
        IpAddr::V4(v4) => u64::from(u32::from(v4)),
        IpAddr::V6(v6) => {
            let v = u128::from(v6);
            (v as u64) ^ ((v >> 64) as u64)
        }
    }
}

/// `. IN NS` with a fresh ID, and the ID.
fn query() -> Result<(u16, Vec<u8>), ProbeError> {
    let id = dns::query_id();
    Ok((
        id,
        sextant_wire::client::encode_query(id, QUERY_NAME, dns::TYPE_NS)?,
    ))
}

/// Whether `msg` is a response to our query `id`, with any rcode. Other IDs
/// (stale replies) and unparsable bytes are not.
fn is_reply(msg: &[u8], id: u16) -> bool {
    msg.get(..2) == Some(&id.to_be_bytes()[..])
        && dns::parse_response(msg).is_ok_and(|r| r.is_answer_to(QUERY_NAME, dns::TYPE_NS))
}

/// DNS over UDP: a response with our ID (with the TTL it arrived with, when
/// the kernel says), or an ICMP port unreachable (no TTL).
async fn dns_udp(target: SocketAddr, source: Option<IpAddr>) -> Result<Option<u8>, ProbeError> {
    let (id, query) = query()?;
    let socket = udp::connected_socket_from(target, source)
        .await
        .map_err(|e| udp::io_error("DNS", "DNS query to", target, e))?;
    // Refused: the replies carry no TTL, the probe works the same.
    ttl::request(&socket, target.is_ipv6());
    match socket.send(&query).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => return Ok(None),
        Err(e) => return Err(udp::io_error("DNS", "DNS query to", target, e)),
    }
    let mut buf = vec![0u8; dns::MAX_MESSAGE];
    loop {
        let received = socket
            .async_io(Interest::READABLE | Interest::ERROR, || {
                ttl::recv(&socket, &mut buf)
            })
            .await;
        match received {
            Ok((n, ttl)) => {
                if is_reply(buf.get(..n).unwrap_or_default(), id) {
                    return Ok(ttl);
                }
            }
            // ICMP port unreachable: the resolver's host answered.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => return Ok(None),
            Err(e) => return Err(udp::io_error("DNS", "DNS response from", target, e)),
        }
    }
}

/// DNS over TCP: a refused connect, a response with our ID, or a reset.
async fn dns_tcp(target: SocketAddr, source: Option<IpAddr>) -> Result<(), ProbeError> {
    let mut stream = match tcp::connect_from(target, source).await {
        Ok(stream) => stream,
        Err(ProbeError::Refused(_)) => return Ok(()),
        Err(e) => return Err(e),
    };
    let (id, query) = query()?;
    let mut framed = Vec::with_capacity(2 + query.len());
    // The query is a few bytes, far below the 64 KiB the prefix can say.
    framed.extend_from_slice(&(query.len() as u16).to_be_bytes());
    framed.extend_from_slice(&query);
    let failed = |what: &'static str| {
        move |e: io::Error| match e.kind() {
            // A reset is an answer too.
            io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe => Ok(()),
            _ => Err(ProbeError::Io {
                what,
                addr: target,
                source: e,
            }),
        }
    };
    if let Err(e) = stream.write_all(&framed).await {
        return failed("DNS query to")(e);
    }
    loop {
        let mut len = [0u8; 2];
        if let Err(e) = stream.read_exact(&mut len).await {
            return failed("DNS response from")(e);
        }
        let mut msg = vec![0u8; usize::from(u16::from_be_bytes(len))];
        if let Err(e) = stream.read_exact(&mut msg).await {
            return failed("DNS response from")(e);
        }
        if is_reply(&msg, id) {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_from_params() {
        let mut params = GslbParams {
            ldns_probe_order: vec![LdnsProbe::DnsTcp, LdnsProbe::Ping],
            ..GslbParams::default()
        };
        params.ldns_tcp.interval = Duration::from_secs(7);
        params.ldns_dns.dest_port = Some(5353);
        params.ldns_probes_per_second = 10;
        let src: IpAddr = "192.0.2.1".parse().unwrap();
        let c = LdnsProberConfig::from_params(&params, Some(src));
        assert_eq!(c.source, Some(src));
        assert_eq!(c.order, params.ldns_probe_order);
        assert_eq!(c.monitor(LdnsProbe::DnsUdp).dest_port, Some(5353));
        assert_eq!(c.probes_per_second, 10);
        assert_eq!(
            c.period(None),
            Duration::from_secs(7),
            "before any answer, or after a failed cycle: the first kind's interval"
        );
        assert_eq!(
            c.period(Some(LdnsProbe::Ping)),
            Duration::from_secs(5),
            "after a ping answered: ldns-ping's own interval"
        );
        let mut empty = c.clone();
        empty.order.clear();
        assert_eq!(empty.period(None), Duration::from_secs(5));
        empty.order = vec![LdnsProbe::Ping];
        empty.ping.interval = Duration::ZERO;
        assert_eq!(empty.period(None), MIN_PERIOD);
        assert_eq!(empty.period(Some(LdnsProbe::Ping)), MIN_PERIOD);
    }

    #[test]
    fn source_only_for_its_family() {
        let v4: IpAddr = "192.0.2.1".parse().unwrap();
        let v6: IpAddr = "2001:db8::1".parse().unwrap();
        assert_eq!(source_for(v4, Some(v4)), Some(v4));
        assert_eq!(source_for(v6, Some(v4)), None);
        assert_eq!(source_for(v6, Some(v6)), Some(v6));
        assert_eq!(source_for(v4, None), None);
    }

    #[test]
    fn bucket_caps_and_queues() {
        let t0 = Instant::now();
        let mut b = Bucket::new(10, t0);
        for _ in 0..10 {
            assert_eq!(b.reserve(t0), None);
        }
        let w1 = b.reserve(t0).expect("the 11th waits");
        let w2 = b.reserve(t0).expect("the 12th waits longer");
        assert!(w1 > Duration::from_millis(90) && w1 < Duration::from_millis(110));
        assert!(w2 > w1);
        // A second later the debt (2) is repaid and 8 tokens are back.
        let t1 = t0 + Duration::from_secs(1);
        for _ in 0..8 {
            assert_eq!(b.reserve(t1), None);
        }
        assert!(b.reserve(t1).is_some());
        // The burst never exceeds one second's worth.
        let t2 = t1 + Duration::from_secs(100);
        b.set_rate(2, t2);
        assert_eq!(b.reserve(t2), None);
        assert_eq!(b.reserve(t2), None);
        assert!(b.reserve(t2).is_some());
        // Zero is one per second, not unlimited.
        let mut z = Bucket::new(0, t0);
        assert_eq!(z.reserve(t0), None);
        assert!(z.reserve(t0).is_some());
    }

    #[test]
    fn replies_match_by_id_and_question() {
        let (id, q) = query().unwrap();
        assert!(!is_reply(&q, id), "a query (QR=0) is not a reply");
        let mut r = q.clone();
        r[2] |= 0x80;
        r[3] = 5; // REFUSED still times a round trip
        assert!(is_reply(&r, id));
        assert!(!is_reply(&r, id.wrapping_add(1)));
        // Some servers leave the question out of errors.
        let mut bare = r[..12].to_vec();
        bare[5] = 0;
        assert!(is_reply(&bare, id));
        // Another question is not ours.
        let mut other = sextant_wire::client::encode_query(id, "example", dns::TYPE_NS).unwrap();
        other[2] |= 0x80;
        assert!(!is_reply(&other, id));
        for n in 0..r.len() {
            assert!(!is_reply(&r[..n], id), "cut at {n}");
        }
    }

    #[test]
    fn keys_spread_addresses() {
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        assert_ne!(ip_key(a), ip_key(b));
        let period = Duration::from_millis(300);
        assert!(schedule::jitter_of(ip_key(a), period) < period);
    }
}
