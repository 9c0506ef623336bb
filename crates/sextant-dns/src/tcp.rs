//! The TCP server (RFC 1035 §4.2.2, RFC 7766): two-octet length-prefixed
//! messages, several per connection, answered in order.
//!
//! On tokio because TCP clients can be slow or hostile: each connection is
//! its own task, so one that trickles bytes or never reads its answers only
//! holds its own task until a timeout closes it. The connection count is
//! capped; connections over the cap are closed at once. Answering itself is
//! the same synchronous [`respond`] as UDP, run with a per-thread
//! [`Worker`], so no await or lock sits inside it and a connection costs no
//! worker buffers of its own.

use std::cell::RefCell;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, timeout, timeout_at};

use crate::{DnsShared, MAX_MESSAGE, Transport, Worker, random_seed, respond};

/// Limits of the TCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpConfig {
    /// Open connections at most; more are closed as soon as accepted.
    pub max_connections: usize,
    /// How long a connection may take to deliver its next complete query
    /// (from the end of the previous one), and to take a response.
    pub idle_timeout: Duration,
    /// Largest query accepted; a longer length prefix closes the
    /// connection (real queries are a few hundred octets).
    pub max_query: usize,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            max_connections: 1024,
            idle_timeout: Duration::from_secs(10),
            max_query: 16 * 1024,
        }
    }
}

/// Responses buffered before they are written out.
const WRITE_BATCH: usize = 64 * 1024;
/// Bytes read at a time.
const READ_CHUNK: usize = 4096;
/// Listen backlog.
const BACKLOG: i32 = 1024;

/// Binds a TCP listener with `SO_REUSEADDR`. Must be called inside a tokio
/// runtime.
pub fn bind_tcp(addr: SocketAddr) -> io::Result<TcpListener> {
    bind_tcp_listener(addr, false)
}

/// [`bind_tcp`] for a VRRP VIP that may not be on the host yet (see
/// [`bind_udp_vip`](crate::bind_udp_vip)).
pub fn bind_tcp_vip(addr: SocketAddr) -> io::Result<TcpListener> {
    bind_tcp_listener(addr, true)
}

fn bind_tcp_listener(addr: SocketAddr, freebind: bool) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if freebind {
        crate::set_freebind(&socket, addr)?;
    }
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    TcpListener::from_std(socket.into())
}

/// Serves DNS over TCP on `listener` with the limits of the current
/// snapshot's model (`dns.tcp_idle_timeout`, `dns.tcp_max_connections`),
/// read at each accepted connection so that a reload changes them for new
/// connections; runs until the task is dropped.
pub async fn serve_tcp(listener: TcpListener, shared: Arc<DnsShared>) {
    serve(listener, shared, None).await
}

/// Serves DNS over TCP with explicit limits (whatever the model says).
pub async fn serve_tcp_with(listener: TcpListener, shared: Arc<DnsShared>, config: TcpConfig) {
    serve(listener, shared, Some(config)).await
}

/// The limits the model gives.
fn model_config(shared: &DnsShared) -> TcpConfig {
    let snapshot = shared.snapshot.load();
    let dns = &snapshot.model().dns;
    TcpConfig {
        max_connections: dns.tcp_max_connections.max(1),
        idle_timeout: dns.tcp_idle_timeout,
        ..TcpConfig::default()
    }
}

async fn serve(listener: TcpListener, shared: Arc<DnsShared>, fixed: Option<TcpConfig>) {
    let open = Arc::new(AtomicUsize::new(0));
    let accept_failed = sextant_core::log_throttle::LogThrottle::default();
    let origin = std::time::Instant::now();
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Typically EMFILE: back off instead of spinning, and log
                // one line per period.
                if let Some(held_back) = accept_failed.admit(origin.elapsed()) {
                    tracing::warn!(error = %e, not_logged = held_back, "dns tcp accept failed");
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let config = fixed.unwrap_or_else(|| model_config(&shared));
        if open.load(Ordering::Relaxed) >= crate::limits::connection_cap(config.max_connections) {
            shared.stats.incr(0, crate::Counter::TcpRejected);
            drop(stream);
            continue;
        }
        let slot = Slot::take(&open);
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let _slot = slot;
            let source = peer.ip().to_canonical();
            let mut stream = stream;
            let ended = serve_connection(&mut stream, source, &shared, &config).await;
            // Counted before the close, so a client that sees the close
            // also sees the count.
            if let Err(e) = &ended
                && e.kind() == io::ErrorKind::TimedOut
            {
                shared.stats.incr(0, crate::Counter::TcpIdleClosed);
            }
            drop(stream);
            if let Err(e) = ended {
                tracing::debug!(error = %e, %peer, "dns tcp connection ended");
            }
        });
    }
}

/// One counted connection; gives its place back when dropped.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(open: &Arc<AtomicUsize>) -> Slot {
        open.fetch_add(1, Ordering::Relaxed);
        Slot(Arc::clone(open))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

thread_local! {
    /// One worker per runtime thread: its buffers are reused across
    /// connections and no lock is needed.
    static WORKER: RefCell<Worker> = RefCell::new(Worker::new(random_seed()));
}

fn with_worker<R>(f: impl FnOnce(&mut Worker) -> R) -> R {
    WORKER.with(|w| match w.try_borrow_mut() {
        Ok(mut w) => f(&mut w),
        // Unreachable (respond never re-enters), but never panic for it.
        Err(_) => f(&mut Worker::new(random_seed())),
    })
}

/// Reads queries, answers them in order, closes on timeout, EOF, an
/// oversized or unanswerable message.
async fn serve_connection(
    stream: &mut TcpStream,
    source: IpAddr,
    shared: &DnsShared,
    config: &TcpConfig,
) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut input: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut output: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut response: Vec<u8> = Vec::new();
    let mut chunk = [0u8; READ_CHUNK];
    let mut deadline = Instant::now() + config.idle_timeout;
    loop {
        // Answer every complete query already buffered (pipelining).
        let mut consumed = 0;
        let mut close = false;
        while output.len() < WRITE_BATCH {
            let rest = input.get(consumed..).unwrap_or(&[]);
            let Some(prefix) = rest.get(..2) else { break };
            let len = usize::from(u16::from_be_bytes([prefix[0], prefix[1]]));
            if len > config.max_query.min(MAX_MESSAGE) {
                close = true;
                break;
            }
            let Some(query) = rest.get(2..2 + len) else {
                break;
            };
            let answered =
                with_worker(|w| respond(shared, w, query, source, Transport::Tcp, &mut response));
            if !answered {
                close = true;
                break;
            }
            output.extend_from_slice(&(response.len() as u16).to_be_bytes());
            output.extend_from_slice(&response);
            consumed += 2 + len;
            deadline = Instant::now() + config.idle_timeout;
        }
        input.drain(..consumed);
        if !output.is_empty() {
            timeout(config.idle_timeout, stream.write_all(&output))
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "client not reading"))??;
            output.clear();
        }
        if close {
            return Ok(());
        }
        if consumed > 0 {
            // More complete queries may be buffered behind a full batch.
            continue;
        }
        let n = timeout_at(deadline, stream.read(&mut chunk))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "idle"))??;
        if n == 0 {
            return Ok(());
        }
        input.extend_from_slice(chunk.get(..n).unwrap_or(&[]));
    }
}
