//! The API's accept loop, plain or TLS: what an unauthenticated client can
//! hold. Every connection holds a permit of a fixed number
//! ([`Limits::max_connections`], well below the descriptor limit), and at
//! most a quarter of them go to one client address ([`per_address_cap`]),
//! so one client cannot take them all; a connection over either cap is
//! closed at once, never queued. A client has
//! [`Limits::handshake_timeout`] for its TLS handshake and
//! [`Limits::header_timeout`] for each whole request head, which is also
//! how long a kept-alive connection may sit idle between requests (hyper's
//! header-read timer starts when it waits for a head). So idle and
//! half-sent connections cannot pile up until the health monitors, DNS
//! over TCP and metric exchange find no descriptor left. A client that
//! stops reading cannot hold its connection either: a write that makes no
//! progress for [`Limits::write_timeout`] closes it.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::Layer;
use tracing::{debug, warn};

use super::auth::Peer;
use sextant_core::log_throttle::LogThrottle;

/// The API's connection limits (`sextant serve --api-...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once, TLS handshakes included; `None`: the
    /// default of [`connection_cap`].
    pub max_connections: Option<usize>,
    /// How long a client may take to send a whole request head, and how
    /// long a kept-alive connection may wait for its next one.
    pub header_timeout: Duration,
    /// How long a client may take for its TLS handshake.
    pub handshake_timeout: Duration,
    /// How long a write to a client may make no progress (a client that
    /// stopped reading) before its connection is closed.
    pub write_timeout: Duration,
    /// `/v1/events` streams open at once.
    pub max_event_streams: usize,
}

/// The default cap on API connections.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
/// The default header-read (and keep-alive idle) timeout: PowerDNS's
/// webserver closes a connection after 5 s too.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// The default TLS handshake timeout.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// The default write-stall timeout.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// The default cap on `/v1/events` subscribers.
pub const DEFAULT_MAX_EVENT_STREAMS: usize = 32;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: None,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            write_timeout: DEFAULT_WRITE_TIMEOUT,
            max_event_streams: DEFAULT_MAX_EVENT_STREAMS,
        }
    }
}

/// The connection cap in force: the one configured, else
/// [`DEFAULT_MAX_CONNECTIONS`] but at most an eighth of the soft limit on
/// open files `nofile` (TCP DNS clients may take half; the monitors,
/// metric exchange and the rest keep the other three eighths), and at
/// least 4.
pub fn connection_cap(configured: Option<usize>, budget: &crate::fd_budget::Budget) -> usize {
    if let Some(n) = configured {
        return n.max(1);
    }
    DEFAULT_MAX_CONNECTIONS.min(budget.api).max(4)
}

/// How many of the `cap` connections one client address may hold: a
/// quarter (at least 1), so a client alone cannot shut the others out.
pub fn per_address_cap(cap: usize) -> usize {
    (cap / 4).max(1)
}

/// The connections open per client address.
#[derive(Default)]
struct PerAddress {
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One connection counted against its address until dropped.
struct AddressSlot {
    table: Arc<PerAddress>,
    ip: IpAddr,
}

impl PerAddress {
    /// A slot for `ip` if it holds fewer than `max` connections.
    fn take(table: &Arc<PerAddress>, ip: IpAddr, max: usize) -> Option<AddressSlot> {
        let mut open = table.open.lock().ok()?;
        let n = open.entry(ip).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(AddressSlot {
            table: Arc::clone(table),
            ip,
        })
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        if let Ok(mut open) = self.table.open.lock()
            && let Some(n) = open.get_mut(&self.ip)
        {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// What a client over the cap reads before its connection closes (plain
/// HTTP only: sent if the socket takes it at once, never waited for).
const OVER_CAP: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: 66\r\n\r\n{\"error\":\"too many connections to the API; try again in a moment\"}";

/// Accepts connections on `tcp` (TLS with `tls`) and serves `app` on them
/// within `limits`, until `stop`; then lets the requests in flight end.
pub async fn serve(
    tcp: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    app: Router,
    limits: Limits,
    cap: usize,
    stop: CancellationToken,
    clock: crate::clock::Clock,
) {
    let permits = Arc::new(Semaphore::new(cap));
    let per_address = Arc::new(PerAddress::default());
    let address_cap = per_address_cap(cap);
    let acceptor = tls.map(TlsAcceptor::from);
    let over_cap = LogThrottle::default();
    let over_address_cap = LogThrottle::default();
    let accept_failed = LogThrottle::default();
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            a = tcp.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(c) => c,
            Err(e) => {
                // Out of descriptors and the like: try again soon.
                if let Some(held_back) = accept_failed.admit(clock.now()) {
                    warn!(error = %e, not_logged = held_back, "REST API: cannot accept a connection");
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Some(slot) = PerAddress::take(&per_address, peer.ip(), address_cap) else {
            refuse(stream, acceptor.is_none());
            if let Some(held_back) = over_address_cap.admit(clock.now()) {
                warn!(
                    %peer,
                    max_per_address = address_cap,
                    not_logged = held_back,
                    "REST API: connection refused: this address has as many connections open as one address may (a quarter of --api-max-connections)"
                );
            }
            continue;
        };
        let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
            refuse(stream, acceptor.is_none());
            if let Some(held_back) = over_cap.admit(clock.now()) {
                warn!(
                    %peer,
                    max_connections = cap,
                    not_logged = held_back,
                    "REST API: connection refused: the API has as many connections open as it allows (--api-max-connections)"
                );
            }
            continue;
        };
        let service = axum::Extension(ConnectInfo(Peer(peer))).layer(app.clone());
        let acceptor = acceptor.clone();
        let stop = stop.clone();
        let stream = WriteDeadline::new(stream, limits.write_timeout);
        tokio::spawn(async move {
            let _held = (permit, slot);
            match acceptor {
                None => connection(stream, service, limits.header_timeout, &stop).await,
                Some(acceptor) => {
                    if let Some(tls) = handshake(&acceptor, stream, peer, limits, &stop).await {
                        connection(tls, service, limits.header_timeout, &stop).await;
                    }
                }
            }
        });
    }
    // Every connection was told to finish (the same token); wait until
    // the last permit is back (the runtime's shutdown bounds the wait).
    let all = u32::try_from(cap).unwrap_or(u32::MAX);
    let _ = permits.acquire_many(all).await;
}

/// Closes a connection over a cap at once; a plain HTTP client is told
/// why if its socket takes the answer without waiting.
fn refuse(stream: TcpStream, plain: bool) {
    if plain {
        let _ = stream.try_write(OVER_CAP);
    }
    drop(stream);
}

/// The TLS handshake of a new connection, within its timeout.
async fn handshake(
    acceptor: &TlsAcceptor,
    stream: WriteDeadline<TcpStream>,
    peer: SocketAddr,
    limits: Limits,
    stop: &CancellationToken,
) -> Option<tokio_rustls::server::TlsStream<WriteDeadline<TcpStream>>> {
    let done = tokio::select! {
        _ = stop.cancelled() => return None,
        r = tokio::time::timeout(limits.handshake_timeout, acceptor.accept(stream)) => r,
    };
    match done {
        Ok(Ok(tls)) => Some(tls),
        Ok(Err(e)) => {
            debug!(%peer, error = %e, "REST API: TLS handshake failed");
            None
        }
        Err(_) => {
            debug!(%peer, "REST API: TLS handshake timed out");
            None
        }
    }
}

/// HTTP/1.1 on one connection until it closes, or until `stop` (then the
/// request in flight finishes and the connection closes).
async fn connection<I, S>(io: I, service: S, header_timeout: Duration, stop: &CancellationToken)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: tower::Service<
            axum::http::Request<hyper::body::Incoming>,
            Response = axum::response::Response,
            Error = Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    let conn = builder.serve_connection(TokioIo::new(io), TowerToHyperService::new(service));
    tokio::pin!(conn);
    let ended = tokio::select! {
        r = conn.as_mut() => r,
        _ = stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = ended {
        // A client that went away or took too long for its head.
        debug!(error = %e, "REST API: connection closed");
    }
}

/// A connection whose writes may not stall: once a write (or flush)
/// has waited `limit` for the client to take bytes, it fails with
/// `TimedOut` and the connection closes. Reads are untouched (their
/// limits are hyper's header timer and the handlers').
struct WriteDeadline<T> {
    inner: T,
    limit: Duration,
    /// Armed by the first write that waits, disarmed by progress.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<T> WriteDeadline<T> {
    fn new(inner: T, limit: Duration) -> Self {
        WriteDeadline {
            inner,
            limit,
            stalled: None,
        }
    }

    /// After a write that made progress or failed: disarmed; after one
    /// that waits: armed, and `TimedOut` once the limit has passed.
    fn watch<R>(&mut self, cx: &mut Context<'_>, r: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        if r.is_ready() {
            self.stalled = None;
            return r;
        }
        let limit = self.limit;
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client took no bytes of the answer for the write timeout",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteDeadline<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, r)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.watch(cx, r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_stays_well_below_the_descriptor_limit() {
        use crate::fd_budget::budget;
        assert_eq!(connection_cap(None, &budget(None)), 256);
        assert_eq!(connection_cap(None, &budget(Some(1_048_576))), 256);
        assert_eq!(connection_cap(None, &budget(Some(1024))), 128);
        assert_eq!(connection_cap(None, &budget(Some(256))), 32);
        // The budget's floor.
        assert_eq!(connection_cap(None, &budget(Some(8))), 16);
        // What the operator says goes.
        assert_eq!(connection_cap(Some(1000), &budget(Some(256))), 1000);
        assert_eq!(connection_cap(Some(0), &budget(None)), 1);
        assert_eq!(per_address_cap(256), 64);
        assert_eq!(per_address_cap(32), 8);
        assert_eq!(per_address_cap(3), 1);
    }

    /// A peer that never reads: the writes fill the socket, wait, and
    /// fail with `TimedOut` once the limit has passed.
    #[tokio::test(start_paused = true)]
    async fn a_write_that_waits_past_the_limit_fails() {
        use tokio::io::AsyncWriteExt;
        let (near, _far) = tokio::io::duplex(1024);
        let mut w = WriteDeadline::new(near, Duration::from_secs(10));
        let chunk = [0u8; 512];
        w.write_all(&chunk).await.expect("room for the first bytes");
        let e = w.write_all(&chunk).await.and(w.write_all(&chunk).await);
        assert_eq!(e.expect_err("stalled").kind(), io::ErrorKind::TimedOut);
    }

    #[test]
    fn an_address_holds_its_share_and_gets_it_back() {
        let table = Arc::new(PerAddress::default());
        let (a, b): (IpAddr, IpAddr) = ("127.0.0.2".parse().unwrap(), "127.0.0.3".parse().unwrap());
        let first = PerAddress::take(&table, a, 2).expect("first");
        let _second = PerAddress::take(&table, a, 2).expect("second");
        assert!(PerAddress::take(&table, a, 2).is_none());
        assert!(PerAddress::take(&table, b, 2).is_some());
        drop(first);
        assert!(PerAddress::take(&table, a, 2).is_some());
        assert!(table.open.lock().unwrap().get(&b).is_none());
    }
}
