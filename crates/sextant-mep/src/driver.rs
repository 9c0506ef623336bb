//! The MEP driver: sockets, TLS, timers and tasks around the pure
//! [`Node`] (the decisions) and the pure [`Session`]s (one per connection).
//!
//! # Tasks
//!
//! * one accept loop per listener (the site IP on `mep_port`, and on
//!   `mep_secure_port` when any rpcNode is secure);
//! * one dial loop per link the node dials ([`Output::Dial`]), reconnecting
//!   with a backoff of 100 ms doubling up to 1 s;
//! * one task per connection, running a [`Session`]: it reads frames, feeds
//!   them to the session, writes what the session sends, and hands the
//!   session's events to the node;
//! * a ticker (every keepalive interval) feeding [`Input::Tick`];
//! * a forwarder that moves [`MepEvent`]s into the caller's channel, so no
//!   lock is ever held while waiting for the caller; reports (`Services`,
//!   `SiteMetrics`) are coalesced per site and never delay state changes
//!   (see `EventSink`).
//!
//! # Logging
//!
//! What is reported as a [`MepEvent`] (UP/DOWN, authentication failures, bad
//! frames, refused connections, takeovers, parent changes) is logged by the
//! binary, which also counts it; the node logs it at debug level only. The
//! driver logs what has no event: listening, connection attempts that fail
//! (once per change of error), TLS failures, state file problems.
//!
//! The node and the driver's registry live in one `Mutex<Inner>`: every
//! handler turns what happened into an [`Input`], calls [`Node::on`] and
//! carries out its [`Output`]s, synchronously; no lock is held across an
//! `await`.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use arc_swap::ArcSwap;

use ring::rand::{SecureRandom, SystemRandom};
use rustls::ServerConfig;
use rustls::pki_types::ServerName;
use sextant_core::Model;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::runtime::Handle;
use tokio::sync::{Notify, mpsc, watch};
use tokio::task::{AbortHandle, JoinHandle};
use tokio::time::Instant;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::frame::{self, DEFAULT_MAX_FRAME, FrameReader};
use crate::message::Message;
use crate::node::{Attempt, ConnId, Input, Keys, Node, Output, key};
pub use crate::node::{LocalReport, MepEvent, MepState, PeerStatus};
use crate::session::{Action, CloseReason, Session, SessionConfig, State};
use crate::state::{self, StateFile};
use crate::sync::Merged;
use crate::tls;
use crate::topology::{Role, TopologyError};

/// First reconnect delay.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
/// Reconnect delays double up to this, so a takeover or a return is never
/// more than about a second behind the topology.
const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// Frames queued for one connection before it is judged stuck and closed.
const SEND_QUEUE: usize = 4096;
/// Coalesced reports (Services, SiteMetrics) are moved into the caller's
/// event channel only while fewer than this many events wait in it, so a
/// state change (PeerUp, PeerDown, ...) never waits behind more reports.
const BULK_IN_FLIGHT: usize = 32;
/// First read buffer of a connection; it doubles on demand up to
/// `READ_BUF_MAX` (or the frame limit, if smaller).
const READ_BUF_MIN: usize = 1024;
const READ_BUF_MAX: usize = 64 * 1024;

/// Why the driver cannot start.
#[derive(Debug, thiserror::Error)]
pub enum MepError {
    #[error(transparent)]
    Topology(#[from] TopologyError),
    #[error("cannot listen for MEP on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
    #[error("{0}")]
    Tls(String),
    #[error("the MEP driver must be started inside a tokio runtime")]
    NoRuntime,
}

/// Tuning knobs (defaults are the protocol's).
#[derive(Debug, Clone)]
pub struct Options {
    /// Largest frame accepted or sent (the frame `length` field).
    pub max_frame: usize,
    /// (Child) Where the backup-parent lists received are kept across
    /// restarts, so a child restarted while its parent is down can still
    /// be adopted (see [`crate::state`]). `None`: memory only.
    pub state_file: Option<PathBuf>,
    /// Zero of the monotonic clock every deadline and
    /// [`PeerStatus::last_message`] is measured on: the daemon's one time
    /// base.
    pub origin: std::time::Instant,
    /// Where the node's [`MepStatus`] is published after every step: the
    /// caller keeps it to read the status without the driver's lock, and
    /// it reads "not running" once the driver stops.
    pub status: Arc<ArcSwap<MepStatus>>,
    /// Most accepted connections open at once (authenticated or not);
    /// one more is closed as soon as it is accepted, so peers and
    /// strangers together can never take the descriptors the health
    /// monitors and DNS need (the binary sizes it from the descriptor
    /// limit, `docs/operations.md`).
    pub max_inbound: usize,
}

/// What metric exchange shows of itself: every site the node knows, with
/// its link. Published after every step of the node (see
/// [`Options::status`]), so readers see one consistent moment and never
/// wait for the driver.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MepStatus {
    /// The driver is running (false before the start and after the stop).
    pub running: bool,
    pub peers: Vec<PeerStatus>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_frame: DEFAULT_MAX_FRAME,
            state_file: None,
            origin: std::time::Instant::now(),
            status: Arc::default(),
            max_inbound: DEFAULT_MAX_INBOUND,
        }
    }
}

/// [`Options::max_inbound`] when the caller does not size it.
pub const DEFAULT_MAX_INBOUND: usize = 512;

/// The running MEP driver. Dropping it stops it, like [`MepHandle::stop`].
pub struct MepHandle {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for MepHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MepHandle").finish_non_exhaustive()
    }
}

/// Starts metric exchange for `model`'s local site. Must be called inside a
/// tokio runtime. Listens on the local site IP at `mep_port` (and
/// `mep_secure_port` when any rpcNode is secure) before returning.
pub fn start(
    model: Arc<Model>,
    generation: u64,
    events: mpsc::Sender<MepEvent>,
) -> Result<MepHandle, MepError> {
    start_with(model, generation, events, Options::default())
}

/// [`start`] with explicit [`Options`].
pub fn start_with(
    model: Arc<Model>,
    generation: u64,
    events: mpsc::Sender<MepEvent>,
    options: Options,
) -> Result<MepHandle, MepError> {
    let rt = Handle::try_current().map_err(|_| MepError::NoRuntime)?;
    // The node cuts messages to fit a frame; each frame's tag must fit too.
    let node = Node::new(
        model,
        generation,
        options.max_frame.saturating_sub(crate::handshake::TAG_LEN),
    )?;
    let sink = Arc::new(EventSink::default());
    let shared = Arc::new_cyclic(|weak| Shared {
        origin: Instant::from_std(options.origin),
        status: Arc::clone(&options.status),
        inner: Mutex::new(Inner {
            weak: weak.clone(),
            rt: rt.clone(),
            events: sink.clone(),
            stopped: false,
            node,
            max_frame: options.max_frame,
            next_id: 1,
            conns: HashMap::new(),
            dials: HashMap::new(),
            state_file: options.state_file,
            tasks: Vec::new(),
            listeners: Vec::new(),
            listen_on: Vec::new(),
            inbound: Arc::new(AtomicUsize::new(0)),
            max_inbound: options.max_inbound.max(1),
            over_cap: RateLimited::default(),
            tls_server: None,
            rng: SystemRandom::new(),
            published: Arc::default(),
        }),
    });
    {
        let mut inner = shared.lock();
        let want = inner.node.listen_addrs();
        inner.listen(want)?;
        let saved = inner.load_state();
        let fwd = rt.spawn(forward_events(sink, events));
        inner.tasks.push(fwd.abort_handle());
        let ticker = rt.spawn(tick_loop(Arc::downgrade(&shared)));
        inner.tasks.push(ticker.abort_handle());
        inner.apply(Input::Start { saved }, shared.now());
    }
    Ok(MepHandle { shared })
}

impl MepHandle {
    /// Our local services' states and figures and our site figures: always
    /// the whole current list, so the binary needs no memory of what it
    /// sent. The driver sends each receiver a snapshot once and then only
    /// what changed since the previous publish (see `docs/mep.md`,
    /// "Service state stream").
    pub fn publish(&self, report: LocalReport) {
        let now = self.shared.now();
        self.shared.lock().apply(Input::Publish(report), now);
    }

    /// LDNS RTT tables and persistence sessions (`Message::LdnsRtt`,
    /// `Message::Sessions`): sent once to every UP peer parent or mesh peer,
    /// never to or from children. Other messages are ignored.
    pub fn send_to_peers(&self, msg: Message) {
        let now = self.shared.now();
        self.shared.lock().apply(Input::SendToPeers(msg), now);
    }

    /// A config sync message (`ConfigOffer`, `ConfigUpdate`, `ConfigResult`)
    /// for one peer parent or mesh peer: sent on this node's confirmed link
    /// with `site` if it is UP. Dropped (with a debug log) otherwise: other
    /// kinds, a child, a site that is DOWN or unknown, or when this node is
    /// a child. The answers come as [`MepEvent::ConfigSync`].
    pub fn send_to(&self, site: &str, msg: Message) {
        let now = self.shared.now();
        self.shared.lock().apply(
            Input::SendTo {
                site: site.to_owned(),
                msg,
            },
            now,
        );
    }

    /// A new configuration: re-plans the links, keeps the sessions whose
    /// site still exists at the same IP (with their handshake-time settings:
    /// secret and keepalive timeout), closes the others.
    pub fn reload(&self, model: Arc<Model>, generation: u64) {
        let now = self.shared.now();
        self.shared
            .lock()
            .apply(Input::Reload { model, generation }, now);
    }

    /// Every site this node knows, with its MEP state.
    pub fn status(&self) -> Vec<PeerStatus> {
        self.shared.status.load().peers.clone()
    }

    /// This node's role in the topology.
    pub fn role(&self) -> Role {
        self.shared.lock().node.role()
    }

    /// (Child) The current parent.
    pub fn current_parent(&self) -> Option<String> {
        self.shared.lock().node.current_parent().map(str::to_owned)
    }

    /// Stops everything now: listeners, connections, timers. Peers see the
    /// connections close.
    pub fn stop(self) {
        drop(self);
    }

    /// [`stop`](Self::stop), and returns once the listening sockets are
    /// closed, so that the same addresses can be bound again at once
    /// (aborting a task only asks the runtime to drop it).
    pub async fn close(self) {
        let listeners = {
            let mut inner = self.shared.lock();
            let listeners: Vec<JoinHandle<()>> =
                inner.listeners.drain(..).map(Listener::close).collect();
            inner.shutdown();
            listeners
        };
        for h in listeners {
            // Cancelled is the expected outcome; either way the socket is gone.
            let _ = h.await;
        }
    }

    /// Test hook: the next delta of this node's own stream is numbered but
    /// not sent, as if the network had lost it, so tests can watch the
    /// receivers notice the gap and resync.
    #[doc(hidden)]
    pub fn lose_next_delta(&self) {
        let now = self.shared.now();
        self.shared.lock().apply(Input::LoseNextDelta, now);
    }
}

impl Drop for MepHandle {
    fn drop(&mut self) {
        self.shared.lock().shutdown();
    }
}

/// Events on their way to the caller. State changes and the rarer messages
/// keep their order; `Services` and `SiteMetrics` are coalesced per site
/// (the pending `Services` steps of a site are merged into one, see
/// [`Merged`]; `SiteMetrics` are complete, so the latest wins) and handed
/// over only while the caller's channel is nearly empty, so they can
/// neither pile up nor delay a state change, and nothing is lost.
#[derive(Default)]
struct EventSink {
    q: Mutex<EventQueue>,
    notify: Notify,
}

#[derive(Default)]
struct EventQueue {
    /// Everything but the coalesced reports, in order.
    ordered: VecDeque<MepEvent>,
    /// Site key → its latest pending reports.
    bulk: HashMap<String, PendingReports>,
    /// Site keys in the order their reports became pending (a key may be
    /// listed twice or no longer be in `bulk`; such entries are skipped).
    bulk_order: VecDeque<String>,
    /// The caller's receiver is gone.
    closed: bool,
}

#[derive(Default)]
struct PendingReports {
    services: Option<PendingServices>,
    metrics: Option<MepEvent>,
}

/// A site's `Services` events not handed over yet, merged.
struct PendingServices {
    from_site: String,
    via: Option<String>,
    merged: Merged,
}

impl PendingServices {
    fn into_event(self) -> MepEvent {
        let (full, entries, removed) = self.merged.into_parts();
        MepEvent::Services {
            from_site: self.from_site,
            via: self.via,
            full,
            entries,
            removed,
        }
    }
}

impl EventSink {
    fn lock(&self) -> MutexGuard<'_, EventQueue> {
        self.q.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, e: MepEvent) {
        let mut q = self.lock();
        if q.closed {
            return;
        }
        let bulk_site = match &e {
            MepEvent::Services { from_site, .. } | MepEvent::SiteMetrics { from_site, .. } => {
                Some(key(from_site))
            }
            MepEvent::PeerDown { site, .. } => {
                // What the site reported before is stale now.
                q.bulk.remove(&key(site));
                None
            }
            _ => None,
        };
        match bulk_site {
            Some(k) => {
                let q = &mut *q;
                let p = q.bulk.entry(k).or_insert_with_key(|k| {
                    q.bulk_order.push_back(k.clone());
                    PendingReports::default()
                });
                match e {
                    MepEvent::Services {
                        from_site,
                        via,
                        full,
                        entries,
                        removed,
                    } => match &mut p.services {
                        Some(ps) => {
                            ps.from_site = from_site;
                            ps.via = via;
                            ps.merged.push(full, entries, removed);
                        }
                        None => {
                            p.services = Some(PendingServices {
                                from_site,
                                via,
                                merged: Merged::new(full, entries, removed),
                            });
                        }
                    },
                    other => p.metrics = Some(other),
                }
            }
            None => q.ordered.push_back(e),
        }
        drop(q);
        self.notify.notify_one();
    }

    /// The next event to hand over: ordered ones first, then (if
    /// `bulk_ok`) the oldest pending report. The second value says whether
    /// reports are still pending.
    fn pop(&self, bulk_ok: bool) -> (Option<MepEvent>, bool) {
        let mut q = self.lock();
        if let Some(e) = q.ordered.pop_front() {
            return (Some(e), !q.bulk.is_empty());
        }
        if bulk_ok {
            while let Some(k) = q.bulk_order.pop_front() {
                let Some(mut p) = q.bulk.remove(&k) else {
                    continue;
                };
                let e = p
                    .services
                    .take()
                    .map(PendingServices::into_event)
                    .or_else(|| p.metrics.take());
                if p.metrics.is_some() {
                    q.bulk.insert(k.clone(), p);
                    q.bulk_order.push_front(k);
                }
                if e.is_some() {
                    return (e, !q.bulk.is_empty());
                }
            }
        }
        (None, !q.bulk.is_empty())
    }

    fn close(&self) {
        let mut q = self.lock();
        q.closed = true;
        q.ordered.clear();
        q.bulk.clear();
        q.bulk_order.clear();
    }
}

/// Moves events from the sink into the caller's channel.
async fn forward_events(sink: Arc<EventSink>, events: mpsc::Sender<MepEvent>) {
    loop {
        let Ok(permit) = events.reserve().await else {
            sink.close();
            return;
        };
        let e = loop {
            let notified = sink.notify.notified();
            // Events already in the caller's channel (our permit excluded).
            let waiting = events.max_capacity() - events.capacity() - 1;
            match sink.pop(waiting < BULK_IN_FLIGHT) {
                (Some(e), _) => break e,
                // Reports wait for the caller to catch up (or an ordered
                // event to arrive).
                (None, true) => {
                    tokio::select! {
                        _ = notified => {}
                        _ = tokio::time::sleep(Duration::from_millis(2)) => {}
                    }
                }
                (None, false) => notified.await,
            }
        };
        permit.send(e);
    }
}

struct Shared {
    inner: Mutex<Inner>,
    origin: Instant,
    status: Arc<ArcSwap<MepStatus>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The monotonic time the sessions see.
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }
}

enum ConnCmd {
    /// Boxed: a message is a few hundred bytes, the frame a pointer.
    Send(Box<Message>),
    /// An encoded frame, shared by every connection it goes to (relays and
    /// reports are encoded once, not once per connection). Sent only while
    /// the session is up.
    Frame(Arc<[u8]>),
}

/// The I/O side of one connection (the node holds what it means).
struct Conn {
    tx: mpsc::Sender<ConnCmd>,
    /// Set to a reason to make the connection send Reject and close.
    kill: watch::Sender<Option<String>>,
    /// The task running an inbound connection.
    task: Option<AbortHandle>,
}

/// A registered connection, for its task.
struct Reg {
    id: ConnId,
    cfg: SessionConfig,
    rx: mpsc::Receiver<ConnCmd>,
    kill: watch::Receiver<Option<String>>,
    max_frame: usize,
}

struct Inner {
    weak: Weak<Shared>,
    rt: Handle,
    events: Arc<EventSink>,
    stopped: bool,
    node: Node,
    max_frame: usize,
    next_id: ConnId,
    conns: HashMap<ConnId, Conn>,
    /// The dials the node wants, by token: each dial loop reads its attempt
    /// here before every try, and ends when its token is gone.
    dials: HashMap<u64, Attempt>,
    /// Child: where received backup lists are kept.
    state_file: Option<PathBuf>,
    tasks: Vec<AbortHandle>,
    /// The listening sockets and their accept loops; joined by
    /// [`MepHandle::close`] so the ports are free when it returns.
    listeners: Vec<Listener>,
    /// What the listeners are (address, secure), in the node's order.
    listen_on: Vec<(SocketAddr, bool)>,
    /// Accepted connections open now (decremented by their task's end,
    /// an abort included).
    inbound: Arc<AtomicUsize>,
    /// [`Options::max_inbound`].
    max_inbound: usize,
    /// Connections closed over the cap, logged at most once a second.
    over_cap: RateLimited,
    tls_server: Option<Arc<ServerConfig>>,
    rng: SystemRandom,
    /// The status last published (see [`Options::status`]).
    published: Arc<MepStatus>,
}

impl Inner {
    fn shared(&self) -> Option<Arc<Shared>> {
        self.weak.upgrade()
    }

    /// Hands `input` to the node and carries out what it says.
    fn apply(&mut self, input: Input, now: Duration) {
        let outs = self.node.on(input, now);
        self.publish_status();
        self.execute(outs);
    }

    /// Publishes the node's status as of its last step (see
    /// [`Options::status`]).
    fn publish_status(&mut self) {
        if self.stopped {
            return;
        }
        let status = MepStatus {
            running: true,
            peers: self.node.status(),
        };
        if *self.published != status
            && let Some(shared) = self.shared()
        {
            self.published = Arc::new(status);
            shared.status.store(Arc::clone(&self.published));
        }
    }

    fn execute(&mut self, outs: Vec<Output>) {
        for o in outs {
            match o {
                Output::Send { conn, msg } => self.send_cmd(conn, ConnCmd::Send(Box::new(msg))),
                Output::Broadcast { conns, msg } => self.broadcast(&conns, &msg),
                Output::Reject { conn, reason } => {
                    if let Some(c) = self.conns.get(&conn) {
                        c.kill.send_replace(Some(reason));
                    }
                }
                Output::Event(e) => self.events.push(e),
                Output::Dial { token, attempt } => {
                    if self.stopped {
                        continue;
                    }
                    if self.dials.insert(token, attempt).is_none()
                        && let Some(shared) = self.shared()
                    {
                        let h = self.rt.spawn(dial_loop(shared, token));
                        self.tasks.push(h.abort_handle());
                    }
                }
                Output::StopDial { token } => {
                    self.dials.remove(&token);
                }
                Output::SaveState(st) => self.save_state(&st),
                Output::Listen(want) => {
                    if let Err(e) = self.listen(want) {
                        tracing::error!(
                            error = %e,
                            listening = ?self.listen_on,
                            "MEP listeners not changed by the new configuration: the old ones keep running"
                        );
                    }
                }
                // Only for the connection being registered (see `register`).
                Output::Start { conn, .. } => {
                    tracing::debug!(conn, "session start for no registration ignored");
                }
            }
        }
    }

    fn send_cmd(&self, id: ConnId, cmd: ConnCmd) {
        if let Some(c) = self.conns.get(&id)
            && c.tx.try_send(cmd).is_err()
        {
            c.kill
                .send_replace(Some("send queue full: the peer does not read".into()));
        }
    }

    /// Sends `msg` to every connection of `ids`, encoded once.
    fn broadcast(&self, ids: &[ConnId], msg: &Message) {
        if ids.is_empty() {
            return;
        }
        // Sealed per connection: the tag goes within the frame limit.
        match frame::encode_to_vec(msg, self.max_frame - crate::handshake::TAG_LEN) {
            Ok(f) => {
                let f: Arc<[u8]> = f.into();
                for &id in ids {
                    self.send_cmd(id, ConnCmd::Frame(f.clone()));
                }
            }
            Err(e) => tracing::error!(kind = %msg.kind(), error = %e, "MEP message not sent"),
        }
    }

    /// Fresh random bytes for a new session.
    fn keys(&self) -> Keys {
        let mut nonce = [0u8; 32];
        let mut placeholder = [0u8; 32];
        self.rng
            .fill(&mut nonce)
            .expect("the system random number generator works");
        self.rng
            .fill(&mut placeholder)
            .expect("the system random number generator works");
        Keys { nonce, placeholder }
    }

    // --- listeners ---

    /// Makes the listeners `want`. A reload must never leave the node
    /// without a port, so nothing running is touched until everything new
    /// is ready: the TLS configuration is made and every new address bound
    /// first; if any of that fails the old listeners stay as they were and
    /// the error is returned (the node keeps running as before). Then an
    /// address that stays keeps its socket (only its mode changes, so
    /// turning secure MEP on or off never re-binds a port), and the
    /// addresses no longer wanted are closed at once (see
    /// [`Listener::close`]).
    fn listen(&mut self, want: Vec<(SocketAddr, bool)>) -> Result<(), MepError> {
        if want == self.listen_on {
            return Ok(());
        }
        let tls_server = match &self.tls_server {
            None if want.iter().any(|(_, s)| *s) => {
                Some(tls::server_config().map_err(MepError::Tls)?)
            }
            _ => None,
        };
        let mut fresh = Vec::new();
        for &(addr, secure) in &want {
            if self.listeners.iter().any(|l| l.addr == addr) {
                continue;
            }
            // On error `fresh` is dropped: the sockets bound so far close
            // with it (no task holds them yet).
            let socket = bind_listener(addr).map_err(|source| MepError::Listen { addr, source })?;
            fresh.push((addr, secure, socket));
        }
        // Everything is ready: from here on nothing fails.
        if tls_server.is_some() {
            self.tls_server = tls_server;
        }
        let shared = self.shared().expect("called through the handle");
        let mut kept = Vec::new();
        for l in self.listeners.drain(..) {
            match want.iter().find(|(a, _)| *a == l.addr) {
                Some(&(_, secure)) => {
                    if l.secure.swap(secure, Ordering::Relaxed) != secure {
                        tracing::info!(addr = %l.addr, secure, "MEP listener changes mode");
                    }
                    kept.push(l);
                }
                None => {
                    tracing::info!(addr = %l.addr, "MEP listener closed");
                    drop(l.close());
                }
            }
        }
        for (addr, secure, socket) in fresh {
            let secure_flag = Arc::new(AtomicBool::new(secure));
            let socket = Arc::new(socket);
            let task = self.rt.spawn(accept_loop(
                shared.clone(),
                Arc::clone(&socket),
                Arc::clone(&secure_flag),
            ));
            tracing::info!(%addr, secure, "MEP listening");
            kept.push(Listener {
                addr,
                secure: secure_flag,
                socket,
                task,
            });
        }
        self.listeners = kept;
        self.listen_on = want;
        Ok(())
    }

    /// An inbound connection arrived at a listener.
    fn accept(&mut self, tcp: TcpStream, addr: SocketAddr, secure: bool, now: Duration) {
        if self.stopped {
            return;
        }
        let open = self.inbound.load(Ordering::Relaxed);
        if open >= self.max_inbound {
            // Closed at once (dropped here): its descriptor belongs to the
            // monitors and DNS.
            if let Some(suppressed) = self.over_cap.ready(now) {
                tracing::warn!(
                    peer = %addr,
                    open,
                    cap = self.max_inbound,
                    suppressed,
                    "MEP connection closed: too many open MEP connections"
                );
            }
            return;
        }
        let slot = InboundSlot::take(&self.inbound);
        let id = self.next_id;
        self.next_id += 1;
        let keys = self.keys();
        let input = Input::Accepted {
            conn: id,
            addr,
            secure,
            keys,
        };
        let Some(reg) = self.register(id, input, now) else {
            return;
        };
        let shared = self.shared().expect("called through the handle");
        let tls = if secure {
            self.tls_server.clone()
        } else {
            None
        };
        let timeout = self.node.keepalive_timeout();
        let h = self.rt.spawn(async move {
            // Held to the end of the task, an abort included.
            let _slot = slot;
            let Some(cfg) = tls else {
                run_conn(shared, tcp, reg, None).await;
                return;
            };
            let failed =
                match tokio::time::timeout(timeout, TlsAcceptor::from(cfg).accept(tcp)).await {
                    Ok(Ok(s)) => match tls::binding(&**s.get_ref().1) {
                        Ok(b) => {
                            run_conn(shared, s, reg, Some(b)).await;
                            return;
                        }
                        Err(e) => format!("TLS exporter failed: {e}"),
                    },
                    Ok(Err(e)) => format!("TLS handshake failed: {e}"),
                    Err(_) => "TLS handshake timed out".to_owned(),
                };
            let now = shared.now();
            shared
                .lock()
                .closed(reg.id, CloseReason::Local(failed), now);
        });
        if let Some(c) = self.conns.get_mut(&id) {
            c.task = Some(h.abort_handle());
        }
        self.tasks.push(h.abort_handle());
    }

    /// A dial of `token` connected to `addr`.
    fn dialled(&mut self, token: u64, addr: SocketAddr, now: Duration) -> Option<Reg> {
        if self.stopped || !self.dials.contains_key(&token) {
            return None;
        }
        let id = self.next_id;
        self.next_id += 1;
        let keys = self.keys();
        let input = Input::Dialled {
            conn: id,
            token,
            addr,
            keys,
        };
        self.register(id, input, now)
    }

    /// Hands a new connection to the node; if it wants it (a session
    /// configuration comes back), gives it its channels.
    fn register(&mut self, id: ConnId, input: Input, now: Duration) -> Option<Reg> {
        let mut outs = self.node.on(input, now);
        self.publish_status();
        let start = outs
            .iter()
            .position(|o| matches!(o, Output::Start { conn, .. } if *conn == id))
            .map(|i| outs.remove(i));
        let reg = match start {
            Some(Output::Start { config, .. }) => {
                let (tx, rx) = mpsc::channel(SEND_QUEUE);
                let (kill_tx, kill_rx) = watch::channel(None);
                self.conns.insert(
                    id,
                    Conn {
                        tx,
                        kill: kill_tx,
                        task: None,
                    },
                );
                Some(Reg {
                    id,
                    cfg: *config,
                    rx,
                    kill: kill_rx,
                    max_frame: self.max_frame,
                })
            }
            _ => None,
        };
        self.execute(outs);
        reg
    }

    /// A connection ended. Returns whether it had been confirmed.
    fn closed(&mut self, id: ConnId, reason: CloseReason, now: Duration) -> bool {
        let confirmed = self.node.is_confirmed(id);
        self.conns.remove(&id);
        self.apply(Input::Closed { conn: id, reason }, now);
        confirmed
    }

    fn attempt(&self, token: u64) -> Option<Attempt> {
        if self.stopped {
            return None;
        }
        self.dials.get(&token).cloned()
    }

    fn tick(&mut self, now: Duration) {
        if self.stopped {
            return;
        }
        self.apply(Input::Tick, now);
        self.tasks.retain(|h| !h.is_finished());
    }

    // --- state file ---

    /// (Child) Reads the state file, if there is one.
    fn load_state(&self) -> Option<StateFile> {
        let path = self.state_file.as_ref()?;
        match state::load(path) {
            Ok(None) => {
                tracing::debug!(path = %path.display(), "no MEP state file yet");
                None
            }
            Ok(Some(st)) => Some(st),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "MEP state file ignored");
                None
            }
        }
    }

    /// Writes the state file. The lists change rarely (when a parent's
    /// configuration does), so the write is done in place; it is small and
    /// replaces the file atomically.
    fn save_state(&self, st: &StateFile) {
        let Some(path) = &self.state_file else {
            return;
        };
        match state::save(path, st) {
            Ok(()) => tracing::debug!(path = %path.display(), "MEP state file written"),
            Err(e) => tracing::warn!(error = %e, "MEP state file not written"),
        }
    }

    fn shutdown(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        for l in self.listeners.drain(..) {
            drop(l.close());
        }
        for h in self.tasks.drain(..) {
            h.abort();
        }
        for c in self.conns.values() {
            if let Some(t) = &c.task {
                t.abort();
            }
        }
        self.conns.clear();
        self.dials.clear();
        let _ = self.node.on(Input::Stop, Duration::ZERO);
        // "Not running", unless a driver started since has published
        // (a site IP's VIP can move back while this one closes).
        if let Some(shared) = self.shared() {
            shared
                .status
                .compare_and_swap(&self.published, Arc::default());
        }
    }
}

fn bind_listener(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// Connects to `peer` from the site IP (the peer identifies us by it).
async fn connect(local: IpAddr, peer: SocketAddr) -> io::Result<TcpStream> {
    let socket = if peer.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.bind(SocketAddr::new(local, 0))?;
    let stream = socket.connect(peer).await?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// One listening socket and its accept loop.
struct Listener {
    addr: SocketAddr,
    /// Read at every accept, so a reload that turns secure MEP on or off
    /// changes the mode of the same socket.
    secure: Arc<AtomicBool>,
    /// Shared with the accept loop; kept here so it can be shut down at
    /// once (see [`Listener::close`]).
    socket: Arc<TcpListener>,
    task: JoinHandle<()>,
}

impl Listener {
    /// Stops listening now and asks the accept loop to end. Aborting the
    /// task alone only asks the runtime to drop it some time later, and
    /// until then the socket holds the address ("Address already in use"
    /// for whoever binds it next); `shutdown(2)` on a listening socket
    /// takes it out of LISTEN at once, which frees the address for a new
    /// `SO_REUSEADDR` bind, and refuses what was still in its backlog.
    fn close(self) -> JoinHandle<()> {
        if let Err(e) = socket2::SockRef::from(&*self.socket).shutdown(std::net::Shutdown::Both) {
            tracing::debug!(addr = %self.addr, error = %e, "MEP listener shutdown");
        }
        self.task.abort();
        self.task
    }
}

/// One accepted connection counted against [`Options::max_inbound`] while
/// its task lives.
struct InboundSlot(Arc<AtomicUsize>);

impl InboundSlot {
    fn take(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        InboundSlot(Arc::clone(count))
    }
}

impl Drop for InboundSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A warning repeated at most once a second, with how many were left out.
#[derive(Default)]
struct RateLimited {
    last: Option<Duration>,
    suppressed: u64,
}

impl RateLimited {
    /// `Some(suppressed since the last one)` when the warning may be
    /// logged at `now`.
    fn ready(&mut self, now: Duration) -> Option<u64> {
        if self
            .last
            .is_some_and(|t| now.saturating_sub(t) < Duration::from_secs(1))
        {
            self.suppressed += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.suppressed))
    }
}

async fn accept_loop(shared: Arc<Shared>, listener: Arc<TcpListener>, secure: Arc<AtomicBool>) {
    let accept_failed = sextant_core::log_throttle::LogThrottle::default();
    loop {
        match listener.accept().await {
            Ok((tcp, addr)) => {
                let _ = tcp.set_nodelay(true);
                let now = shared.now();
                let secure = secure.load(Ordering::Relaxed);
                shared.lock().accept(tcp, addr, secure, now);
            }
            // The listener was shut down (`Listener::close`): its task is
            // being aborted.
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => return,
            Err(e) => {
                // Typically out of descriptors: one line per period.
                if let Some(held_back) = accept_failed.admit(shared.now()) {
                    tracing::warn!(error = %e, not_logged = held_back, "MEP accept failed");
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn tick_loop(shared: Weak<Shared>) {
    loop {
        let interval = {
            let Some(s) = shared.upgrade() else { return };
            let now = s.now();
            let mut inner = s.lock();
            inner.tick(now);
            inner.node.interval()
        };
        tokio::time::sleep(interval.min(Duration::from_millis(500))).await;
    }
}

async fn dial_loop(shared: Arc<Shared>, token: u64) {
    let mut backoff = BACKOFF_MIN;
    let mut last_error: Option<String> = None;
    loop {
        let Some(a) = shared.lock().attempt(token) else {
            return;
        };
        let addr = a.addr();
        let error = match tokio::time::timeout(a.timeout, connect(a.local_ip, addr)).await {
            Ok(Ok(tcp)) => {
                let now = shared.now();
                let reg = shared.lock().dialled(token, addr, now);
                let Some(reg) = reg else { return };
                last_error = None;
                let confirmed = if a.secure {
                    let connector = TlsConnector::from(tls::client_config());
                    let name = ServerName::IpAddress(addr.ip().into());
                    let id = reg.id;
                    let failed =
                        match tokio::time::timeout(a.timeout, connector.connect(name, tcp)).await {
                            Ok(Ok(s)) => match tls::binding(&**s.get_ref().1) {
                                Ok(b) => Ok(run_conn(shared.clone(), s, reg, Some(b)).await),
                                Err(e) => Err(format!("TLS exporter failed: {e}")),
                            },
                            Ok(Err(e)) => Err(format!("TLS handshake failed: {e}")),
                            Err(_) => Err("TLS handshake timed out".to_owned()),
                        };
                    failed.unwrap_or_else(|why| {
                        tracing::warn!(site = %a.site.name, peer = %addr, error = %why, "MEP over TLS failed");
                        let now = shared.now();
                        shared.lock().closed(id, CloseReason::Local(why), now)
                    })
                } else {
                    run_conn(shared.clone(), tcp, reg, None).await
                };
                if confirmed {
                    backoff = BACKOFF_MIN;
                }
                None
            }
            Ok(Err(e)) => Some(e.to_string()),
            Err(_) => Some(format!("no answer within {:?}", a.timeout)),
        };
        if let Some(e) = error {
            if last_error.as_ref() != Some(&e) {
                tracing::info!(site = %a.site.name, peer = %addr, error = %e, "cannot connect for MEP; retrying");
            }
            last_error = Some(e);
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// Runs one connection's session to its end. Returns whether it had been
/// confirmed as the site's link.
async fn run_conn<S>(shared: Arc<Shared>, mut stream: S, reg: Reg, binding: Option<Vec<u8>>) -> bool
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let Reg {
        id,
        cfg,
        mut rx,
        mut kill,
        max_frame,
    } = reg;
    let write_timeout = cfg.keepalive_timeout;
    let now = shared.now();
    let mut session = Session::new(cfg, now);
    let mut actions = session.connected(now, binding);
    let mut reader = FrameReader::new(max_frame);
    let mut buf = vec![0u8; READ_BUF_MIN];
    let mut out = Vec::new();
    let mut events = Vec::new();
    loop {
        let mut close = None;
        for a in actions.drain(..) {
            match a {
                Action::Send(_) | Action::SendSealed(_) | Action::SendLegacy { .. } => {
                    write_frame(&mut session, a, max_frame, &mut out);
                }
                Action::Event(e) => events.push(e),
                Action::Close(r) => close = Some(r),
            }
        }
        if !events.is_empty() {
            let now = shared.now();
            let events = std::mem::take(&mut events);
            shared
                .lock()
                .apply(Input::Session { conn: id, events }, now);
        }
        if !out.is_empty() {
            let r = tokio::time::timeout(write_timeout, stream.write_all(&out)).await;
            let written = out.len() as u64;
            out.clear();
            let failed = match r {
                Ok(Ok(())) => {
                    let now = shared.now();
                    shared.lock().apply(
                        Input::Wrote {
                            conn: id,
                            bytes: written,
                        },
                        now,
                    );
                    None
                }
                Ok(Err(e)) => Some(format!("write failed: {e}")),
                Err(_) => Some(format!("write blocked for {write_timeout:?}")),
            };
            if let Some(f) = failed
                && close.is_none()
            {
                // The session is told (a keepalive outstanding for an
                // interval is lost); its Close comes round again.
                let reason = CloseReason::Local(f);
                actions = session.abort(reason.clone(), shared.now());
                if matches!(actions.last(), Some(Action::Close(_))) {
                    continue;
                }
                close = Some(reason);
            }
        }
        if let Some(reason) = close {
            let _ = tokio::time::timeout(Duration::from_millis(200), stream.shutdown()).await;
            let now = shared.now();
            return shared.lock().closed(id, reason, now);
        }
        let deadline = session
            .next_deadline()
            .unwrap_or_else(|| shared.now() + Duration::from_secs(1));
        tokio::select! {
            r = stream.read(&mut buf) => match r {
                Ok(0) | Err(_) => actions = session.on_eof(shared.now()),
                Ok(n) => {
                    reader.push(&buf[..n]);
                    // Before authentication the buffer stays small: nobody
                    // without the password makes us hold a large frame.
                    let read_max = READ_BUF_MAX
                        .min(session.frame_limit(max_frame) + 4)
                        .max(READ_BUF_MIN);
                    if n == buf.len() && buf.len() < read_max {
                        buf.resize((buf.len() * 2).min(read_max), 0);
                    }
                    let now = shared.now();
                    shared.lock().apply(
                        Input::Data {
                            conn: id,
                            bytes: n as u64,
                        },
                        now,
                    );
                    let now = shared.now();
                    loop {
                        match reader.next_frame(session.frame_limit(max_frame)) {
                            Ok(Some(f)) => {
                                actions.extend(session.on_frame_bytes(f, now));
                                if matches!(actions.last(), Some(Action::Close(_))) {
                                    break;
                                }
                            }
                            Ok(None) => break,
                            Err(e) => {
                                actions.extend(session.on_decode_error(e, now));
                                break;
                            }
                        }
                    }
                }
            },
            cmd = rx.recv() => match cmd {
                Some(cmd) => {
                    // Everything already queued goes out in the same write.
                    let mut next = Some(cmd);
                    while let Some(cmd) = next {
                        match cmd {
                            ConnCmd::Send(m) => actions.extend(session.send(*m)),
                            ConnCmd::Frame(f) => {
                                if session.state() == State::Up {
                                    // Keep the order of the frames queued before it
                                    // (and of their sequence numbers).
                                    for a in std::mem::take(&mut actions) {
                                        write_frame(&mut session, a, max_frame, &mut out);
                                    }
                                    let start = out.len();
                                    out.extend_from_slice(&f);
                                    session.seal(&mut out, start);
                                }
                            }
                        }
                        if out.len() >= READ_BUF_MAX {
                            break;
                        }
                        next = rx.try_recv().ok();
                    }
                }
                None => actions = session.reject("metric exchange stopped", shared.now()),
            },
            changed = kill.changed() => {
                let reason = match changed {
                    Ok(()) => kill.borrow().clone(),
                    Err(_) => None,
                };
                actions = session.reject(
                    reason.unwrap_or_else(|| "metric exchange stopped".into()),
                    shared.now(),
                );
            }
            _ = tokio::time::sleep_until(shared.origin + deadline) => {
                actions = session.tick(shared.now());
            }
        }
    }
}

/// Encodes a send action into `out` (sealed when the session says so); any
/// other action is left alone.
fn write_frame(session: &mut Session, action: Action, max_frame: usize, out: &mut Vec<u8>) {
    if let Err(e) = session.encode(&action, max_frame, out)
        && let Some(m) = action.sent()
    {
        tracing::error!(kind = %m.kind(), error = %e, "MEP message not sent");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    use crate::message::{LoadMetrics, ServiceEntry, ServiceKey, ServiceState, SiteMetrics};
    use crate::sync::View;

    fn entry(i: u8, conns: u64) -> ServiceEntry {
        ServiceEntry {
            service: format!("s{i}"),
            ip: IpAddr::from([10, 0, 0, i]),
            port: 80,
            public_ip: None,
            public_port: None,
            state: ServiceState::Up,
            metrics: LoadMetrics {
                connections: Some(conns),
                ..Default::default()
            },
        }
    }

    fn full(site: &str, entries: Vec<ServiceEntry>) -> MepEvent {
        MepEvent::Services {
            from_site: site.into(),
            via: None,
            full: true,
            entries,
            removed: Vec::new(),
        }
    }

    fn delta(site: &str, entries: Vec<ServiceEntry>, removed: Vec<ServiceKey>) -> MepEvent {
        MepEvent::Services {
            from_site: site.into(),
            via: None,
            full: false,
            entries,
            removed,
        }
    }

    #[test]
    fn reports_are_coalesced_and_state_changes_go_first() {
        let sink = EventSink::default();
        sink.push(full("A", vec![entry(1, 1)]));
        sink.push(full("B", vec![entry(1, 1)]));
        sink.push(full("A", vec![entry(2, 2)]));
        sink.push(MepEvent::SiteMetrics {
            from_site: "a".into(),
            via: None,
            metrics: SiteMetrics::default(),
        });
        sink.push(MepEvent::PeerUp {
            site: "C".into(),
            via: None,
        });
        // Ordered events first; reports only when the caller has room.
        assert!(matches!(
            sink.pop(false),
            (Some(MepEvent::PeerUp { .. }), true)
        ));
        assert!(matches!(sink.pop(false), (None, true)));
        // A's latest snapshot (not the first), then its metrics, then B.
        match sink.pop(true).0 {
            Some(MepEvent::Services {
                from_site,
                entries,
                full,
                ..
            }) => {
                assert_eq!(from_site, "A");
                assert!(full);
                assert_eq!(entries, vec![entry(2, 2)]);
            }
            e => panic!("{e:?}"),
        }
        assert!(matches!(
            sink.pop(true).0,
            Some(MepEvent::SiteMetrics { .. })
        ));
        assert!(
            matches!(sink.pop(true).0, Some(MepEvent::Services { from_site, .. }) if from_site == "B")
        );
        assert!(matches!(sink.pop(true), (None, false)));
    }

    #[test]
    fn pending_deltas_are_merged_not_dropped() {
        let sink = EventSink::default();
        // A snapshot then deltas: one snapshot with the deltas applied.
        sink.push(full("A", vec![entry(1, 1), entry(2, 1)]));
        sink.push(delta("A", vec![entry(3, 1)], vec![entry(1, 1).key()]));
        sink.push(delta("A", vec![entry(2, 5)], vec![]));
        // Deltas after deltas: one delta.
        sink.push(delta("B", vec![entry(1, 1)], vec![entry(9, 0).key()]));
        sink.push(delta("B", vec![entry(9, 2)], vec![entry(1, 1).key()]));
        let mut views: HashMap<String, View> = HashMap::new();
        views
            .entry("B".into())
            .or_default()
            .apply(true, &[entry(1, 0), entry(7, 0)], &[]);
        let mut n = 0;
        while let (Some(e), _) = sink.pop(true) {
            n += 1;
            let MepEvent::Services {
                from_site,
                full,
                entries,
                removed,
                ..
            } = e
            else {
                panic!("{e:?}")
            };
            views
                .entry(from_site)
                .or_default()
                .apply(full, &entries, &removed);
        }
        assert_eq!(n, 2);
        assert!(views["A"].matches(&[entry(2, 5), entry(3, 1)]));
        assert!(views["B"].matches(&[entry(7, 0), entry(9, 2)]));
    }

    #[test]
    fn peer_down_drops_the_sites_pending_reports() {
        let sink = EventSink::default();
        sink.push(full("A", vec![]));
        sink.push(full("B", vec![]));
        sink.push(MepEvent::PeerDown {
            site: "a".into(),
            reason: "x".into(),
        });
        assert!(matches!(sink.pop(true).0, Some(MepEvent::PeerDown { .. })));
        assert!(
            matches!(sink.pop(true).0, Some(MepEvent::Services { from_site, .. }) if from_site == "B")
        );
        assert!(matches!(sink.pop(true), (None, false)));
    }
}
