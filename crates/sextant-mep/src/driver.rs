//! The MEP driver: sockets, TLS, timers and the bookkeeping that ties the
//! pure [`Session`]s and the pure [`Topology`] together.
//!
//! # Tasks
//!
//! * one accept loop per listener (the site IP on `mep_port`, and on
//!   `mep_secure_port` when any rpcNode is secure);
//! * one dial loop per link this node opens (see [`Topology::links`]),
//!   reconnecting with a backoff of 100 ms doubling up to 1 s;
//! * one task per connection, running a [`Session`]: it reads frames, feeds
//!   them to the session, writes what the session sends, and reports the
//!   session's events here;
//! * a ticker (every keepalive interval): sends the heartbeat of the local
//!   service stream and the site metrics (relay heartbeats every keepalive
//!   timeout), marks sites never reached as DOWN one keepalive timeout
//!   after start (and after each reload);
//! * a forwarder that moves [`MepEvent`]s into the caller's channel, so no
//!   lock is ever held while waiting for the caller; reports (`Services`,
//!   `SiteMetrics`) are coalesced per site and never delay state changes
//!   (see `EventSink`).
//!
//! # Logging
//!
//! What is reported as a [`MepEvent`] (UP/DOWN, authentication failures, bad
//! frames, refused connections, takeovers, parent changes) is logged by the
//! binary, which also counts it; the driver logs it at debug level only. The
//! driver logs what has no event: listening, connection attempts that fail
//! (once per change of error), TLS failures, a child's refusal of a takeover
//! (once per offering site and reason), reload problems.
//!
//! All state lives in one `Mutex<Inner>`; every handler is synchronous and
//! short, and no lock is held across an `await`.
//!
//! # What a connection counts for
//!
//! A session that completed its handshake is *confirmed* — it is this node's
//! MEP link with that site, reported as UP — once it is wanted by the
//! topology. Two cases wait for one more message first: a child that
//! receives an adoption offer (a Hello with `acting_for`) confirms it only
//! when it accepts the offer (after the adopter's BackupParents), and the
//! adopting parent confirms only on the child's AcceptParent. A refused
//! offer is therefore never an UP/DOWN flap.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use ring::rand::{SecureRandom, SystemRandom};
use rustls::ServerConfig;
use rustls::pki_types::ServerName;
use sextant_core::{Model, RpcNode, SitePassword};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::runtime::Handle;
use tokio::sync::{Notify, mpsc, watch};
use tokio::task::{AbortHandle, JoinHandle};
use tokio::time::Instant;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::frame::{self, DEFAULT_MAX_FRAME, FrameReader};
use crate::message::{
    AcceptParent, BackupParents, ChildReport, Hello, LdnsRttEntry, Message, ResyncRequest,
    Role as WireRole, ServiceEntry, ServiceKey, ServiceStates, SessionEntry, SiteAddr, SiteMetrics,
};
use crate::session::{Action, CloseReason, Session, SessionConfig, SessionEvent, State};
use crate::state::{self, StateFile};
use crate::sync::{Merged, Step, StreamError, StreamReceiver, StreamSender};
use crate::tls;
use crate::topology::{Accept, Link, LinkKind, Role, SiteRef, Topology, TopologyError};

/// First reconnect delay.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
/// Reconnect delays double up to this, so a takeover or a return is never
/// more than about a second behind the topology.
const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// Frames queued for one connection before it is judged stuck and closed.
const SEND_QUEUE: usize = 4096;
/// The ticker never runs more often than this.
const MIN_TICK: Duration = Duration::from_millis(10);
/// Coalesced reports (Services, SiteMetrics) are moved into the caller's
/// event channel only while fewer than this many events wait in it, so a
/// state change (PeerUp, PeerDown, ...) never waits behind more reports.
const BULK_IN_FLIGHT: usize = 32;
/// First read buffer of a connection; it doubles on demand up to
/// `READ_BUF_MAX` (or the frame limit, if smaller).
const READ_BUF_MIN: usize = 1024;
const READ_BUF_MAX: usize = 64 * 1024;
/// Relayed child streams one peer connection may hold: a peer parent relays
/// at most the children of the configuration (1024 in the largest ones), so
/// more is a hostile or broken peer, not a topology.
const MAX_RELAYED_STREAMS: usize = 8192;
/// Room a `ChildReport` needs around its `states` (child name aside):
/// field names, `up`, the child's site metrics.
const CHILD_REPORT_OVERHEAD: usize = 512;

/// This site's own figures, as the binary measures them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LocalReport {
    /// Every local service with its state and load figures: always the
    /// whole current list, so the binary need not track what it sent; the
    /// driver diffs it against the previous one and sends only the changes.
    pub services: Vec<ServiceEntry>,
    pub site: SiteMetrics,
}

/// Something the binary must know. Site names are in their configured
/// spelling.
#[derive(Debug, Clone, PartialEq)]
pub enum MepEvent {
    /// The site became reachable over MEP: directly (`via: None`) or, for
    /// another parent's child, relayed by that parent (`via: Some(parent)`).
    PeerUp { site: String, via: Option<String> },
    /// The site is no longer reachable over MEP (neither directly nor
    /// relayed). Its services' MEP-reported states are stale from now on.
    PeerDown { site: String, reason: String },
    /// What `from_site` reports of its services, as a step of its stream
    /// (sites send a snapshot once, then only what changed).
    ///
    /// `full`: `entries` is the whole list of `from_site`'s services;
    /// replace everything known from that site. Otherwise `entries` are new
    /// or changed entries and `removed` the keys of entries that are gone
    /// (the two are disjoint). Entries are identified by [`ServiceKey`]
    /// (the sender's ip and port), never by name. Apply events in order.
    Services {
        from_site: String,
        via: Option<String>,
        full: bool,
        entries: Vec<ServiceEntry>,
        removed: Vec<ServiceKey>,
    },
    SiteMetrics {
        from_site: String,
        via: Option<String>,
        metrics: SiteMetrics,
    },
    LdnsRtt {
        from_site: String,
        entries: Vec<LdnsRttEntry>,
    },
    Sessions {
        from_site: String,
        entries: Vec<SessionEntry>,
    },
    /// A peer failed authentication (wrong or missing password). Log and
    /// count it.
    AuthFailed {
        peer: SocketAddr,
        site: String,
        reason: String,
    },
    /// A session was closed for a malformed or oversized frame or another
    /// protocol violation.
    BadFrame {
        peer: SocketAddr,
        site: String,
        reason: String,
    },
    /// A connection was refused before any session (unknown source IP, or
    /// plain MEP where this site requires TLS).
    Refused { peer: SocketAddr, reason: String },
    /// (Child) The current parent changed: `None` while it has none.
    ParentChanged { new_parent: Option<String> },
    /// (Backup parent) `child` accepted this node as its parent in place of
    /// `for_parent`.
    Adopted { child: String, for_parent: String },
    /// (Backup parent) An adoption ended (the child returned to its parent,
    /// or the link went down).
    Released { child: String, reason: String },
    /// (Backup parent) `child` refused this node's adoption offer.
    AdoptionRefused {
        child: String,
        for_parent: String,
        reason: String,
    },
}

/// MEP state of a site, for `/v1/sites`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MepState {
    /// This node's own site.
    Local,
    Up,
    Down,
}

impl MepState {
    pub fn as_str(self) -> &'static str {
        match self {
            MepState::Local => "LOCAL",
            MepState::Up => "UP",
            MepState::Down => "DOWN",
        }
    }
}

/// One site as this node sees it, for `GET /v1/sites`.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerStatus {
    pub name: String,
    pub ip: IpAddr,
    /// `"parent"`, `"child"` or `"flat"`.
    pub kind: &'static str,
    pub state: MepState,
    /// Reachable only through this parent's relay.
    pub via: Option<String>,
    /// This node's direct link with the site, if the topology wants one:
    /// `"peer"`, `"to-child"`, `"adopted"`, `"to-parent"`.
    pub link: Option<&'static str>,
    /// When the last message from (or about) the site arrived, on the
    /// driver's clock ([`Options::origin`]).
    pub last_message: Option<Duration>,
    /// The RTT of the direct link, from keepalives.
    pub link_rtt: Option<Duration>,
    /// Keepalives this node sent to the site since the driver started, over
    /// every session with it (they add up across reconnects and reloads).
    pub keepalives_sent: u64,
    /// Those of them whose echo never came: counted when the next keepalive
    /// is due with the previous one unanswered, or when the session closes
    /// with one outstanding for a keepalive interval or more (see
    /// [`Session::keepalives_lost`]). Never more than `keepalives_sent`.
    pub keepalives_lost: u64,
    /// The TLS variant is in use on the direct link.
    pub secure: bool,
    pub configured_parent: Option<String>,
    /// The child's parent right now, as far as this node knows.
    pub current_parent: Option<String>,
    /// This node adopted the child in place of this parent.
    pub adopted_for: Option<String>,
    /// Why the site last went DOWN.
    pub last_down_reason: Option<String>,
}

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
    /// [`SiteStatus::last_message`] is measured on: the daemon's one time
    /// base.
    pub origin: std::time::Instant,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_frame: DEFAULT_MAX_FRAME,
            state_file: None,
            origin: std::time::Instant::now(),
        }
    }
}

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
    let topo = Topology::new(&model)?;
    let cfg = Cfg::new(model, generation, &topo, options.max_frame);
    let sink = Arc::new(EventSink::default());
    let shared = Arc::new_cyclic(|weak| Shared {
        origin: Instant::from_std(options.origin),
        inner: Mutex::new(Inner {
            weak: weak.clone(),
            rt: rt.clone(),
            events: sink.clone(),
            stopped: false,
            cfg,
            topo,
            links: HashMap::new(),
            next_id: 1,
            conns: HashMap::new(),
            active: HashMap::new(),
            dialers: HashMap::new(),
            sites: HashMap::new(),
            own: StreamSender::new(),
            site_metrics: None,
            report_sent: Duration::ZERO,
            lose_next_delta: false,
            relay_beat_at: Duration::ZERO,
            state_file: options.state_file,
            children: HashMap::new(),
            received_lists: HashMap::new(),
            accepted_offer: None,
            adopted: HashMap::new(),
            last_parent: None,
            refusals: HashMap::new(),
            unreached_at: None,
            tasks: Vec::new(),
            listeners: Vec::new(),
            listen_on: Vec::new(),
            tls_server: None,
            rng: SystemRandom::new(),
        }),
    });
    {
        let mut inner = shared.lock();
        inner.listen()?;
        inner.load_state();
        let now = shared.now();
        inner.unreached_at = Some(now + inner.cfg.timeout);
        let fwd = rt.spawn(forward_events(sink, events));
        inner.tasks.push(fwd.abort_handle());
        let ticker = rt.spawn(tick_loop(Arc::downgrade(&shared)));
        inner.tasks.push(ticker.abort_handle());
        tracing::info!(
            site = %inner.cfg.local.name,
            ip = %inner.cfg.local.ip,
            role = ?inner.topo.role(),
            port = inner.cfg.port,
            "metric exchange started"
        );
        inner.after_change();
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
        self.shared.lock().publish(report, now);
    }

    /// LDNS RTT tables and persistence sessions (`Message::LdnsRtt`,
    /// `Message::Sessions`): sent once to every UP peer parent or mesh peer,
    /// never to or from children. Other messages are ignored.
    pub fn send_to_peers(&self, msg: Message) {
        let inner = self.shared.lock();
        if !matches!(msg, Message::LdnsRtt(_) | Message::Sessions(_)) {
            tracing::debug!(kind = %msg.kind(), "send_to_peers: not an exchange message");
            return;
        }
        for id in inner.peer_conns() {
            inner.send(id, msg.clone());
        }
    }

    /// A new configuration: re-plans the links, keeps the sessions whose
    /// site still exists at the same IP (with their handshake-time settings:
    /// secret and keepalive timeout), closes the others.
    pub fn reload(&self, model: Arc<Model>, generation: u64) {
        let now = self.shared.now();
        self.shared.lock().reload(model, generation, now);
    }

    /// Every site this node knows, with its MEP state.
    pub fn status(&self) -> Vec<PeerStatus> {
        self.shared.lock().status()
    }

    /// This node's role in the topology.
    pub fn role(&self) -> Role {
        self.shared.lock().topo.role()
    }

    /// (Child) The current parent.
    pub fn current_parent(&self) -> Option<String> {
        self.shared.lock().topo.current_parent().map(str::to_owned)
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
            let listeners: Vec<JoinHandle<()>> = inner.listeners.drain(..).collect();
            for h in &listeners {
                h.abort();
            }
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
        self.shared.lock().lose_next_delta = true;
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

/// Settings derived from the model.
struct Cfg {
    model: Arc<Model>,
    generation: u64,
    local: SiteRef,
    /// Key of the configured parent (child only).
    original_parent: Option<String>,
    timeout: Duration,
    port: u16,
    secure_port: u16,
    max_frame: usize,
}

impl Cfg {
    fn new(model: Arc<Model>, generation: u64, topo: &Topology, max_frame: usize) -> Cfg {
        let local = topo.local().clone();
        let original_parent = model
            .local_site
            .and_then(|id| model.sites.get(id as usize))
            .and_then(|s| s.parent)
            .and_then(|p| model.sites.get(p as usize))
            .map(|p| key(&p.name));
        Cfg {
            generation,
            local,
            original_parent,
            timeout: model
                .params
                .mep_keepalive_timeout
                .max(Duration::from_millis(3)),
            port: model.params.mep_port,
            secure_port: model.params.mep_secure_port,
            max_frame,
            model,
        }
    }

    fn rpc(&self, ip: IpAddr) -> Option<&RpcNode> {
        self.model.rpc_nodes.iter().find(|n| n.ip == ip)
    }

    /// The link to `peer` uses TLS when the accepting side's rpcNode says so.
    fn secure_to(&self, peer: IpAddr) -> bool {
        self.rpc(peer).is_some_and(|n| n.secure)
    }

    fn local_requires_tls(&self) -> bool {
        self.secure_to(self.local.ip)
    }

    fn any_secure(&self) -> bool {
        self.model.rpc_nodes.iter().any(|n| n.secure)
    }

    fn interval(&self) -> Duration {
        (self.timeout / 3).max(MIN_TICK)
    }
}

/// Largest JSON body of one of our own `ServiceStates`.
fn own_budget(max_frame: usize) -> usize {
    max_frame.saturating_sub(2)
}

/// Largest JSON body of the `states` of a `ChildReport` relaying `child`.
fn relay_budget(max_frame: usize, child: &str) -> usize {
    max_frame.saturating_sub(2 + CHILD_REPORT_OVERHEAD + 2 * child.len())
}

fn key(name: &str) -> String {
    name.to_ascii_lowercase()
}

fn link_name(kind: LinkKind) -> &'static str {
    match kind {
        LinkKind::Peer => "peer",
        LinkKind::ToChild => "to-child",
        LinkKind::Adopted => "adopted",
        LinkKind::ToParent => "to-parent",
    }
}

fn wire_role(role: Role) -> WireRole {
    match role {
        Role::Parent => WireRole::Parent,
        Role::Child => WireRole::Child,
        Role::Flat => WireRole::Flat,
    }
}

fn to_wire(list: Vec<SiteRef>) -> Vec<SiteAddr> {
    list.into_iter()
        .map(|s| SiteAddr {
            name: s.name,
            ip: s.ip,
        })
        .collect()
}

enum ConnCmd {
    Send(Message),
    /// An encoded frame, shared by every connection it goes to (relays and
    /// reports are encoded once, not once per connection). Sent only while
    /// the session is up.
    Frame(Arc<[u8]>),
}

/// One connection (handshaking or up).
struct Conn {
    site: SiteRef,
    key: String,
    addr: SocketAddr,
    outbound: bool,
    secure: bool,
    tx: mpsc::Sender<ConnCmd>,
    /// Set to a reason to make the connection send Reject and close.
    kill: watch::Sender<Option<String>>,
    /// The dial loop that owns it (outbound).
    dialer: Option<u64>,
    /// The task running an inbound connection.
    task: Option<AbortHandle>,
    /// The session completed its handshake.
    up: bool,
    /// It is this node's MEP link with the site (see the module docs).
    confirmed: bool,
    /// Outbound: we offer to adopt the child for this parent.
    acting_for: Option<String>,
    /// Inbound, child only: the peer offers to act for this parent.
    offer: Option<String>,
    /// The peer's own service stream.
    stream: StreamReceiver,
    /// The peer's relay streams of its children, by child key.
    relayed: HashMap<String, StreamReceiver>,
    /// When we last answered a ResyncRequest, by stream ("" for our own
    /// services, else the child key): a snapshot may be megabytes, so a
    /// peer asking again and again is answered once per keepalive interval
    /// (a real receiver repeats its request with its next heartbeat).
    resync_answered: HashMap<String, Duration>,
}

struct Dialer {
    token: u64,
    plan: DialPlan,
}

#[derive(Debug, Clone, PartialEq)]
struct DialPlan {
    site: SiteRef,
    acting_for: Option<String>,
    secure: bool,
    port: u16,
}

/// What a dial loop needs for one attempt.
struct Attempt {
    plan: DialPlan,
    local_ip: IpAddr,
    timeout: Duration,
}

/// A registered connection, for its task.
struct Reg {
    id: u64,
    cfg: SessionConfig,
    rx: mpsc::Receiver<ConnCmd>,
    kill: watch::Receiver<Option<String>>,
    max_frame: usize,
}

/// Per-site state for events and status.
#[derive(Default)]
struct SiteInfo {
    name: String,
    /// Last announced reachability (PeerUp/PeerDown sent).
    announced: bool,
    /// Peer parents that relay this (child) site as UP.
    via: HashSet<String>,
    last_message: Option<Duration>,
    rtt: Option<Duration>,
    /// Keepalives sent to the site and lost, over every session this
    /// driver had with it (never reset).
    keepalives_sent: u64,
    keepalives_lost: u64,
    down_reason: Option<String>,
}

/// A parent's copy of one of its children's figures, for relaying.
struct ChildData {
    name: String,
    /// This node's relay stream of the child's services (its own numbering:
    /// the child's stream goes to this node only).
    relay: StreamSender,
    metrics: Option<SiteMetrics>,
    /// Relay steps not sent yet, and whether the metrics changed since the
    /// last relay: sent together once the frames of one read are handled
    /// (see `flush_relay`), the metrics in the first ChildReport.
    outbox: Vec<ServiceStates>,
    metrics_dirty: bool,
}

impl ChildData {
    fn new(name: String) -> ChildData {
        ChildData {
            name,
            relay: StreamSender::new(),
            metrics: None,
            outbox: Vec::new(),
            metrics_dirty: false,
        }
    }
}

struct Inner {
    weak: Weak<Shared>,
    rt: Handle,
    events: Arc<EventSink>,
    stopped: bool,
    cfg: Cfg,
    topo: Topology,
    /// `topo.links()` by site key, as of the last reconcile.
    links: HashMap<String, Link>,
    next_id: u64,
    conns: HashMap<u64, Conn>,
    /// Site key → its confirmed connection.
    active: HashMap<String, u64>,
    dialers: HashMap<String, Dialer>,
    sites: HashMap<String, SiteInfo>,
    /// Our own service stream (the list as last published).
    own: StreamSender,
    /// Our site figures as last published; `None` until the first publish.
    site_metrics: Option<SiteMetrics>,
    /// When the last heartbeat (and site metrics) went out.
    report_sent: Duration,
    /// When the next relay heartbeats are due.
    relay_beat_at: Duration,
    /// Test hook: drop the next delta of `own` (see
    /// `MepHandle::lose_next_delta`).
    lose_next_delta: bool,
    /// Child: where received backup lists are kept.
    state_file: Option<PathBuf>,
    /// Parent: my confirmed children (own and adopted) by key.
    children: HashMap<String, ChildData>,
    /// Child: backup lists received, by parent key (replayed on reload).
    received_lists: HashMap<String, (String, Vec<SiteRef>)>,
    /// Child: the adoption accepted (adopter, original parent).
    accepted_offer: Option<(String, String)>,
    /// Parent: child key → original parent, for adoptions accepted.
    adopted: HashMap<String, String>,
    /// Child: the parent last announced by ParentChanged.
    last_parent: Option<String>,
    /// Child: the last refusal reason per offering site (logged once).
    refusals: HashMap<String, String>,
    unreached_at: Option<Duration>,
    tasks: Vec<AbortHandle>,
    /// Accept loops; joined by [`MepHandle::close`] so the ports are free
    /// when it returns.
    listeners: Vec<JoinHandle<()>>,
    listen_on: Vec<(SocketAddr, bool)>,
    tls_server: Option<Arc<ServerConfig>>,
    rng: SystemRandom,
}

impl Inner {
    fn emit(&self, e: MepEvent) {
        self.events.push(e);
    }

    fn shared(&self) -> Option<Arc<Shared>> {
        self.weak.upgrade()
    }

    fn site_info(&mut self, k: &str, name: &str) -> &mut SiteInfo {
        let info = self.sites.entry(k.to_owned()).or_default();
        if info.name.is_empty() {
            info.name = name.to_owned();
        }
        info
    }

    // --- listeners ---

    fn listen(&mut self) -> Result<(), MepError> {
        let ip = self.cfg.local.ip;
        let mut want = vec![(SocketAddr::new(ip, self.cfg.port), false)];
        if self.cfg.any_secure() {
            want.push((SocketAddr::new(ip, self.cfg.secure_port), true));
        }
        if want == self.listen_on {
            return Ok(());
        }
        for h in self.listeners.drain(..) {
            h.abort();
        }
        self.listen_on.clear();
        if want.iter().any(|(_, s)| *s) && self.tls_server.is_none() {
            self.tls_server = Some(tls::server_config().map_err(MepError::Tls)?);
        }
        let shared = self.shared().expect("called through the handle");
        for &(addr, secure) in &want {
            let listener =
                bind_listener(addr).map_err(|source| MepError::Listen { addr, source })?;
            let h = self.rt.spawn(accept_loop(shared.clone(), listener, secure));
            self.listeners.push(h);
            tracing::info!(%addr, secure, "MEP listening");
        }
        self.listen_on = want;
        Ok(())
    }

    fn site_by_ip(&self, ip: IpAddr) -> Option<SiteRef> {
        let me = key(&self.cfg.local.name);
        self.topo
            .view()
            .into_iter()
            .find(|v| v.ip == ip && key(&v.name) != me)
            .map(|v| SiteRef {
                name: v.name,
                ip: v.ip,
            })
    }

    /// An inbound connection arrived at a listener.
    fn accept(&mut self, tcp: TcpStream, addr: SocketAddr, secure: bool) {
        if self.stopped {
            return;
        }
        let Some(site) = self.site_by_ip(addr.ip()) else {
            tracing::debug!(peer = %addr, "MEP connection from an address that is no known site: closed");
            self.emit(MepEvent::Refused {
                peer: addr,
                reason: "not the IP of a known site".into(),
            });
            return;
        };
        if !secure && self.cfg.local_requires_tls() {
            tracing::debug!(peer = %addr, site = %site.name, "plain MEP connection refused: this site requires the secure port");
            self.emit(MepEvent::Refused {
                peer: addr,
                reason: "this site accepts only secure MEP".into(),
            });
            return;
        }
        let Some(reg) = self.register(site, addr, false, secure, None, None) else {
            return;
        };
        let id = reg.id;
        let shared = self.shared().expect("called through the handle");
        let tls = if secure {
            self.tls_server.clone()
        } else {
            None
        };
        let timeout = self.cfg.timeout;
        let h = self.rt.spawn(async move {
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
            shared.lock().closed(reg.id, CloseReason::Local(failed));
        });
        if let Some(c) = self.conns.get_mut(&id) {
            c.task = Some(h.abort_handle());
        }
        self.tasks.push(h.abort_handle());
    }

    // --- connections ---

    fn register(
        &mut self,
        site: SiteRef,
        addr: SocketAddr,
        outbound: bool,
        secure: bool,
        acting_for: Option<String>,
        dialer: Option<u64>,
    ) -> Option<Reg> {
        if self.stopped {
            return None;
        }
        let k = key(&site.name);
        if let Some(t) = dialer
            && self.dialers.get(&k).map(|d| d.token) != Some(t)
        {
            return None;
        }
        let id = self.next_id;
        self.next_id += 1;
        let (tx, rx) = mpsc::channel(SEND_QUEUE);
        let (kill_tx, kill_rx) = watch::channel(None);
        // The link's secret is the accepting side's: its site's
        // -sitePassword, else the rpcNode password of its IP.
        let (acceptor, acceptor_ip) = if outbound {
            (&site.name, site.ip)
        } else {
            (&self.cfg.local.name, self.cfg.local.ip)
        };
        let site_password = self
            .cfg
            .model
            .sites
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(acceptor))
            .and_then(|s| s.password.as_ref());
        let secret = match site_password {
            Some(SitePassword::Clear(p)) => Some(p.as_bytes().to_vec()),
            Some(SitePassword::Placeholder) => {
                // No secret is known yet: one that matches nothing, so the
                // link fails to authenticate instead of using a guessable one.
                let mut unknown = [0u8; 32];
                self.rng
                    .fill(&mut unknown)
                    .expect("the system random number generator works");
                Some(unknown.to_vec())
            }
            None => self
                .cfg
                .rpc(acceptor_ip)
                .and_then(|n| n.password.as_ref())
                .map(|p| p.as_bytes().to_vec()),
        };
        let mut nonce = [0u8; 32];
        self.rng
            .fill(&mut nonce)
            .expect("the system random number generator works");
        let cfg = SessionConfig {
            local_name: self.cfg.local.name.clone(),
            local_ip: self.cfg.local.ip,
            role: wire_role(self.topo.role()),
            generation: self.cfg.generation,
            peer_name: site.name.clone(),
            peer_ip: site.ip,
            secret,
            nonce,
            acting_for: acting_for.clone(),
            keepalive_timeout: self.cfg.timeout,
        };
        self.conns.insert(
            id,
            Conn {
                site,
                key: k,
                addr,
                outbound,
                secure,
                tx,
                kill: kill_tx,
                dialer,
                task: None,
                up: false,
                confirmed: false,
                acting_for,
                offer: None,
                stream: StreamReceiver::new(),
                relayed: HashMap::new(),
                resync_answered: HashMap::new(),
            },
        );
        Some(Reg {
            id,
            cfg,
            rx,
            kill: kill_rx,
            max_frame: self.cfg.max_frame,
        })
    }

    fn send(&self, id: u64, msg: Message) {
        self.send_cmd(id, ConnCmd::Send(msg));
    }

    fn send_cmd(&self, id: u64, cmd: ConnCmd) {
        if let Some(c) = self.conns.get(&id)
            && c.tx.try_send(cmd).is_err()
        {
            c.kill
                .send_replace(Some("send queue full: the peer does not read".into()));
        }
    }

    /// Sends `msg` to every connection of `ids`, encoded once.
    fn broadcast(&self, ids: &[u64], msg: &Message) {
        if ids.is_empty() {
            return;
        }
        match frame::encode_to_vec(msg, self.cfg.max_frame) {
            Ok(f) => {
                let f: Arc<[u8]> = f.into();
                for &id in ids {
                    self.send_cmd(id, ConnCmd::Frame(f.clone()));
                }
            }
            Err(e) => tracing::error!(kind = %msg.kind(), error = %e, "MEP message not sent"),
        }
    }

    fn reject(&self, id: u64, reason: String) {
        if let Some(c) = self.conns.get(&id) {
            c.kill.send_replace(Some(reason));
        }
    }

    fn touch(&mut self, id: u64, now: Duration) {
        let Some(c) = self.conns.get(&id) else { return };
        if !c.up {
            return;
        }
        let (k, name) = (c.key.clone(), c.site.name.clone());
        self.site_info(&k, &name).last_message = Some(now);
    }

    fn session_event(&mut self, id: u64, e: SessionEvent) {
        if self.stopped {
            return;
        }
        match e {
            SessionEvent::Up { peer } => self.on_up(id, peer),
            SessionEvent::Received(m) => self.on_received(id, m),
            SessionEvent::Rtt(rtt) => {
                if let Some(c) = self.conns.get(&id)
                    && self.active.get(&c.key) == Some(&id)
                {
                    let (k, name) = (c.key.clone(), c.site.name.clone());
                    self.site_info(&k, &name).rtt = Some(rtt);
                }
            }
            // Counted for every session with the site, confirmed or not (a
            // duplicate, an adoption offer): each is a keepalive this node
            // sent to it. Only Up sessions send keepalives.
            SessionEvent::KeepaliveSent | SessionEvent::KeepaliveLost => {
                if let Some(c) = self.conns.get(&id) {
                    let (k, name) = (c.key.clone(), c.site.name.clone());
                    let info = self.site_info(&k, &name);
                    if e == SessionEvent::KeepaliveSent {
                        info.keepalives_sent += 1;
                    } else {
                        info.keepalives_lost += 1;
                    }
                }
            }
            SessionEvent::AuthFailed { reason } => {
                if let Some(c) = self.conns.get(&id) {
                    tracing::debug!(
                        site = %c.site.name,
                        peer = %c.addr,
                        %reason,
                        "MEP authentication failed"
                    );
                    self.emit(MepEvent::AuthFailed {
                        peer: c.addr,
                        site: c.site.name.clone(),
                        reason,
                    });
                }
            }
        }
    }

    fn on_up(&mut self, id: u64, hello: Hello) {
        let role = self.topo.role();
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        c.up = true;
        let k = c.key.clone();
        let name = c.site.name.clone();
        tracing::debug!(site = %name, peer = %c.addr, outbound = c.outbound, generation = hello.generation, "MEP handshake complete");
        if role == Role::Child {
            let is_original = self.cfg.original_parent.as_deref() == Some(k.as_str());
            if let Some(for_parent) = hello.acting_for.filter(|_| !is_original) {
                // Wait for the adopter's BackupParents, then decide.
                c.offer = Some(for_parent);
                return;
            }
        } else if c.outbound
            && let Some(for_parent) = c.acting_for.clone()
        {
            let list = to_wire(self.topo.backup_list(&for_parent));
            tracing::debug!(child = %name, %for_parent, "offering to adopt the child");
            self.send(
                id,
                Message::BackupParents(BackupParents {
                    parent: for_parent,
                    list,
                }),
            );
            return;
        }
        if !self.links.contains_key(&k) {
            let reason = format!(
                "{} has no MEP link with {name} in its configuration",
                self.cfg.local.name
            );
            self.reject(id, reason);
            return;
        }
        self.confirm(id);
    }

    /// Makes connection `id` the site's MEP link.
    fn confirm(&mut self, id: u64) {
        let Some(c) = self.conns.get(&id) else { return };
        let (k, name, outbound) = (c.key.clone(), c.site.name.clone(), c.outbound);
        let (addr, secure) = (c.addr, c.secure);
        let mut replaced = false;
        if let Some(&old) = self.active.get(&k)
            && old != id
        {
            // A site restarted (same direction: the old one is stale), or
            // the two ends disagree on who initiates (keep the one the
            // topology expects).
            let keep_new = match self.conns.get(&old) {
                None => true,
                Some(o) if o.outbound == outbound => true,
                Some(_) => self.links.get(&k).is_none_or(|l| l.initiate == outbound),
            };
            if keep_new {
                self.reject(
                    old,
                    "replaced by a newer connection from the same site".into(),
                );
                replaced = true;
            } else {
                self.reject(id, "a MEP connection with this site already exists".into());
                return;
            }
        }
        if let Some(c) = self.conns.get_mut(&id) {
            c.confirmed = true;
        }
        self.active.insert(k.clone(), id);
        self.topo.peer_up(&name);
        // A child whose parent reconnected: no ParentChanged follows, so
        // the new session gets its snapshot here.
        if replaced
            && self.topo.role() == Role::Child
            && self.topo.current_parent().map(key).as_deref() == Some(k.as_str())
        {
            self.send_report_to(id);
        }
        self.site_info(&k, &name).rtt = None;
        if !replaced {
            tracing::debug!(site = %name, peer = %addr, secure, "MEP is UP");
        }
        let role = self.topo.role();
        let kind = self.links.get(&k).map(|l| l.kind);
        if role == Role::Parent && matches!(kind, Some(LinkKind::Peer | LinkKind::ToChild)) {
            let list = to_wire(self.topo.own_backup_list());
            self.send(
                id,
                Message::BackupParents(BackupParents {
                    parent: self.cfg.local.name.clone(),
                    list,
                }),
            );
        }
        if role != Role::Child && kind == Some(LinkKind::Peer) {
            self.send_report_to(id);
            let keys: Vec<String> = self.children.keys().cloned().collect();
            for ck in keys {
                self.send_child_snapshot(id, &ck);
            }
        }
        if role == Role::Parent
            && matches!(kind, Some(LinkKind::ToChild | LinkKind::Adopted))
            && !self.children.contains_key(&k)
        {
            self.children
                .insert(k.clone(), ChildData::new(name.clone()));
            self.relay(ChildReport {
                child: name,
                up: true,
                services: None,
                states: None,
                site_metrics: None,
            });
        }
        self.announce(&k);
        self.after_change();
    }

    fn on_received(&mut self, id: u64, msg: Message) {
        let Some(c) = self.conns.get(&id) else { return };
        let (k, name, confirmed) = (c.key.clone(), c.site.name.clone(), c.confirmed);
        let role = self.topo.role();
        match msg {
            Message::BackupParents(b) => {
                let list: Vec<SiteRef> = b
                    .list
                    .into_iter()
                    .map(|s| SiteRef {
                        name: s.name,
                        ip: s.ip,
                    })
                    .collect();
                if role != Role::Child {
                    tracing::debug!(from = %name, parent = %b.parent, "backup list from a peer ignored (the configuration is authoritative)");
                    return;
                }
                let offer = self.conns.get(&id).and_then(|c| c.offer.clone());
                match offer {
                    Some(for_parent) if !confirmed => {
                        if key(&b.parent) == key(&for_parent) {
                            self.remember_list(&b.parent, list);
                        }
                        self.decide_offer(id, &name, &for_parent);
                    }
                    _ if confirmed && key(&b.parent) == k => {
                        tracing::debug!(parent = %name, backups = list.len(), "backup parent list received");
                        self.remember_list(&b.parent, list);
                        self.after_change();
                    }
                    _ => {
                        tracing::debug!(from = %name, parent = %b.parent, "unexpected backup list ignored");
                    }
                }
            }
            Message::AcceptParent(_) => {
                let Some(c) = self.conns.get(&id) else { return };
                let Some(for_parent) = c.acting_for.clone().filter(|_| c.outbound && !confirmed)
                else {
                    tracing::debug!(from = %name, "unexpected AcceptParent ignored");
                    return;
                };
                tracing::debug!(child = %name, %for_parent, "took over the child (backup parent)");
                self.topo.adopted(&name, true);
                self.adopted.insert(k.clone(), for_parent.clone());
                self.emit(MepEvent::Adopted {
                    child: name,
                    for_parent,
                });
                self.confirm(id);
            }
            _ if !confirmed => {
                tracing::debug!(from = %name, kind = %msg.kind(), "data before the link is confirmed ignored");
            }
            Message::ServiceStates(s) => {
                let Some(c) = self.conns.get_mut(&id) else {
                    return;
                };
                let step = match c.stream.on_states(s) {
                    Ok(step) => step,
                    Err(e) => return self.stream_error(id, None, e),
                };
                let (full, entries, removed) = match step {
                    Step::Nothing => return,
                    Step::Resync { have } => {
                        tracing::debug!(from = %name, ?have, "gap in the service stream: asking for a snapshot");
                        self.send(
                            id,
                            Message::ResyncRequest(ResyncRequest { child: None, have }),
                        );
                        return;
                    }
                    Step::Full(entries) => (true, entries, Vec::new()),
                    Step::Delta { entries, removed } => (false, entries, removed),
                };
                if let Some(child) = self.children.get_mut(&k) {
                    let diff = if full {
                        child.relay.set(&entries)
                    } else {
                        child.relay.apply(entries.clone(), &removed)
                    };
                    let budget = relay_budget(self.cfg.max_frame, &child.name);
                    let steps = child.relay.changes(diff, budget);
                    child.outbox.extend(steps);
                }
                if full || !entries.is_empty() || !removed.is_empty() {
                    self.emit(MepEvent::Services {
                        from_site: name,
                        via: None,
                        full,
                        entries,
                        removed,
                    });
                }
            }
            Message::ResyncRequest(r) => self.on_resync_request(id, &name, r),
            Message::SiteMetrics(m) => {
                if let Some(child) = self.children.get_mut(&k)
                    && child.metrics != Some(m)
                {
                    child.metrics = Some(m);
                    child.metrics_dirty = true;
                }
                self.emit(MepEvent::SiteMetrics {
                    from_site: name,
                    via: None,
                    metrics: m,
                });
            }
            Message::LdnsRtt(r) => self.emit(MepEvent::LdnsRtt {
                from_site: name,
                entries: r.entries,
            }),
            Message::Sessions(s) => self.emit(MepEvent::Sessions {
                from_site: name,
                entries: s.entries,
            }),
            Message::ChildReport(r) => self.on_child_report(id, &k, &name, r),
            other => {
                tracing::debug!(from = %name, kind = %other.kind(), "message ignored");
            }
        }
    }

    fn remember_list(&mut self, parent: &str, list: Vec<SiteRef>) {
        let entry = (parent.to_owned(), list.clone());
        let old = self.received_lists.insert(key(parent), entry.clone());
        self.topo.set_backup_list(parent, list);
        if old.as_ref() != Some(&entry) {
            self.save_state();
        }
    }

    /// (Child) Seeds the topology with the backup lists of the state file.
    fn load_state(&mut self) {
        let Some(path) = self.state_file.clone() else {
            return;
        };
        match state::load(&path) {
            Ok(None) => {
                tracing::debug!(path = %path.display(), "no MEP state file yet");
            }
            Ok(Some(st)) if key(&st.site) != key(&self.cfg.local.name) => {
                tracing::warn!(path = %path.display(), file_site = %st.site, site = %self.cfg.local.name, "MEP state file of another site ignored");
            }
            Ok(Some(st)) => {
                if self.topo.role() != Role::Child {
                    tracing::debug!(path = %path.display(), "MEP state file ignored: not a child site");
                    return;
                }
                let n = st.backup_lists.len();
                for b in st.backup_lists {
                    let list: Vec<SiteRef> = b
                        .list
                        .into_iter()
                        .map(|s| SiteRef {
                            name: s.name,
                            ip: s.ip,
                        })
                        .collect();
                    self.received_lists
                        .insert(key(&b.parent), (b.parent.clone(), list.clone()));
                    self.topo.set_backup_list(&b.parent, list);
                }
                tracing::info!(path = %path.display(), lists = n, "backup parent lists restored from the MEP state file");
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "MEP state file ignored");
            }
        }
    }

    /// (Child) Writes the backup lists held to the state file. Lists change
    /// rarely (when a parent's configuration does), so the write is done
    /// in place; it is small and replaces the file atomically.
    fn save_state(&self) {
        let Some(path) = &self.state_file else {
            return;
        };
        let mut lists: Vec<BackupParents> = self
            .received_lists
            .values()
            .map(|(parent, list)| BackupParents {
                parent: parent.clone(),
                list: to_wire(list.clone()),
            })
            .collect();
        lists.sort_by_key(|b| key(&b.parent));
        let st = StateFile {
            version: state::STATE_VERSION,
            site: self.cfg.local.name.clone(),
            backup_lists: lists,
        };
        match state::save(path, &st) {
            Ok(()) => tracing::debug!(path = %path.display(), "MEP state file written"),
            Err(e) => tracing::warn!(error = %e, "MEP state file not written"),
        }
    }

    /// A peer broke the rules of a service stream: its session cannot be
    /// trusted to converge, so it is closed (the peer reconnects and starts
    /// afresh with a snapshot).
    fn stream_error(&mut self, id: u64, child: Option<&str>, e: StreamError) {
        let Some(c) = self.conns.get(&id) else { return };
        let reason = match child {
            None => format!("protocol error: service stream: {e}"),
            Some(ch) => format!("protocol error: relay stream of {ch}: {e}"),
        };
        tracing::debug!(site = %c.site.name, peer = %c.addr, %reason, "MEP session closed");
        self.emit(MepEvent::BadFrame {
            peer: c.addr,
            site: c.site.name.clone(),
            reason: reason.clone(),
        });
        self.reject(id, reason);
    }

    /// A peer asks for a fresh snapshot of one of our streams.
    fn on_resync_request(&mut self, id: u64, from: &str, r: ResyncRequest) {
        tracing::debug!(%from, child = ?r.child, have = ?r.have, "snapshot requested");
        let Some(now) = self.shared().map(|s| s.now()) else {
            return;
        };
        let interval = self.cfg.interval();
        let stream = r.child.as_deref().map(key).unwrap_or_default();
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        if c.resync_answered.len() > MAX_RELAYED_STREAMS {
            c.resync_answered.clear();
        }
        if c.resync_answered
            .get(&stream)
            .is_some_and(|&t| now < t + interval)
        {
            tracing::debug!(%from, child = ?r.child, "snapshot requested again too soon: ignored");
            return;
        }
        c.resync_answered.insert(stream, now);
        match r.child {
            None => {
                if self.report_targets().contains(&id) {
                    self.send_report_to(id);
                }
            }
            Some(child) => {
                let is_peer = self
                    .conns
                    .get(&id)
                    .and_then(|c| self.links.get(&c.key))
                    .is_some_and(|l| l.kind == LinkKind::Peer);
                if is_peer && self.topo.role() == Role::Parent {
                    self.send_child_snapshot(id, &key(&child));
                }
            }
        }
    }

    /// Sends connection `id` (a peer parent) the relay snapshot of child
    /// `ck`, with its site metrics.
    fn send_child_snapshot(&mut self, id: u64, ck: &str) {
        let Some(child) = self.children.get_mut(ck) else {
            return;
        };
        let budget = relay_budget(self.cfg.max_frame, &child.name);
        let parts = child.relay.snapshot(budget);
        let (name, metrics) = (child.name.clone(), child.metrics);
        for (i, st) in parts.into_iter().enumerate() {
            self.send(
                id,
                Message::ChildReport(ChildReport {
                    child: name.clone(),
                    up: true,
                    services: None,
                    states: Some(st),
                    site_metrics: metrics.filter(|_| i == 0),
                }),
            );
        }
    }

    /// Child: decides the adoption offer on connection `id`.
    fn decide_offer(&mut self, id: u64, from: &str, for_parent: &str) {
        match self.topo.offer_parent(from, for_parent) {
            Accept::Yes => {
                tracing::info!(new_parent = %from, original = %for_parent, "accepted a backup parent's takeover");
                self.accepted_offer = Some((from.to_owned(), for_parent.to_owned()));
                if let Some(c) = self.conns.get_mut(&id) {
                    c.offer = None;
                }
                self.send(
                    id,
                    Message::AcceptParent(AcceptParent {
                        parent: from.to_owned(),
                    }),
                );
                self.confirm(id);
            }
            Accept::No(reason) => {
                let k = format!("offer:{}", key(from));
                if self.refusals.get(&k) != Some(&reason) {
                    tracing::info!(from = %from, original = %for_parent, %reason, "refused a backup parent's takeover");
                    self.refusals.insert(k, reason.clone());
                } else {
                    tracing::debug!(from = %from, original = %for_parent, %reason, "refused a backup parent's takeover");
                }
                self.reject(id, reason);
            }
        }
    }

    /// Parent: a peer parent relays one of its children.
    fn on_child_report(&mut self, id: u64, from_key: &str, from: &str, r: ChildReport) {
        if self.topo.role() == Role::Child
            || self.links.get(from_key).map(|l| l.kind) != Some(LinkKind::Peer)
        {
            tracing::debug!(%from, child = %r.child, "child report from a site that is not a peer parent ignored");
            return;
        }
        let ck = key(&r.child);
        if ck == key(&self.cfg.local.name) {
            return;
        }
        // The relay stream: followed even while we reach the child directly,
        // so its numbering holds when we no longer do.
        let mut services = None;
        if let Some(c) = self.conns.get_mut(&id) {
            if !r.up {
                c.relayed.remove(&ck);
            } else if let Some(st) = r.states {
                if !c.relayed.contains_key(&ck) && c.relayed.len() >= MAX_RELAYED_STREAMS {
                    return self.stream_error(
                        id,
                        Some(&r.child),
                        StreamError::TooManyStreams(MAX_RELAYED_STREAMS),
                    );
                }
                match c.relayed.entry(ck.clone()).or_default().on_states(st) {
                    Err(e) => return self.stream_error(id, Some(&r.child), e),
                    Ok(Step::Nothing) => {}
                    Ok(Step::Resync { have }) => {
                        tracing::debug!(%from, child = %r.child, ?have, "gap in a relay stream: asking for a snapshot");
                        self.send(
                            id,
                            Message::ResyncRequest(ResyncRequest {
                                child: Some(r.child.clone()),
                                have,
                            }),
                        );
                    }
                    Ok(Step::Full(entries)) => services = Some((true, entries, Vec::new())),
                    Ok(Step::Delta { entries, removed }) => {
                        services = Some((false, entries, removed))
                    }
                }
            } else if let Some(entries) = r.services {
                // A sender from before the stream: a complete list.
                services = Some((true, entries, Vec::new()));
            }
        }
        let now = self.shared().map(|s| s.now());
        let info = self.site_info(&ck, &r.child);
        if r.up {
            info.via.insert(from_key.to_owned());
            info.last_message = now;
        } else if info.via.remove(from_key) {
            info.down_reason = Some(format!("{from} lost its MEP link with it"));
        }
        let direct = self.active.contains_key(&ck);
        self.announce(&ck);
        if r.up && !direct {
            if let Some((full, entries, removed)) = services
                && (full || !entries.is_empty() || !removed.is_empty())
            {
                self.emit(MepEvent::Services {
                    from_site: r.child.clone(),
                    via: Some(from.to_owned()),
                    full,
                    entries,
                    removed,
                });
            }
            if let Some(metrics) = r.site_metrics {
                self.emit(MepEvent::SiteMetrics {
                    from_site: r.child,
                    via: Some(from.to_owned()),
                    metrics,
                });
            }
        }
    }

    /// Sends a child report to every confirmed peer parent (encoded once).
    fn relay(&self, r: ChildReport) {
        if self.topo.role() != Role::Parent {
            return;
        }
        self.broadcast(&self.peer_conns(), &Message::ChildReport(r));
    }

    /// Relays what changed of the child on connection `id` since its last
    /// relay: the relay steps of its services, the site metrics in the
    /// first. Called once the frames of one read are handled, so a child's
    /// ServiceStates and SiteMetrics, which it writes together, usually go
    /// out as one message.
    fn flush_relay(&mut self, id: u64) {
        let Some(c) = self.conns.get(&id).filter(|c| c.confirmed) else {
            return;
        };
        let Some(child) = self.children.get_mut(&c.key) else {
            return;
        };
        if child.outbox.is_empty() && !child.metrics_dirty {
            return;
        }
        let name = child.name.clone();
        let mut metrics = child
            .metrics
            .filter(|_| std::mem::take(&mut child.metrics_dirty));
        let steps = std::mem::take(&mut child.outbox);
        let mut reports = Vec::with_capacity(steps.len().max(1));
        for st in steps {
            reports.push(ChildReport {
                child: name.clone(),
                up: true,
                services: None,
                states: Some(st),
                site_metrics: metrics.take(),
            });
        }
        if let Some(m) = metrics {
            reports.push(ChildReport {
                child: name,
                up: true,
                services: None,
                states: None,
                site_metrics: Some(m),
            });
        }
        for r in reports {
            self.relay(r);
        }
    }

    /// Confirmed connections with peer parents / mesh peers.
    fn peer_conns(&self) -> Vec<u64> {
        self.active
            .iter()
            .filter(|(k, _)| self.links.get(*k).is_some_and(|l| l.kind == LinkKind::Peer))
            .map(|(_, &id)| id)
            .collect()
    }

    /// Where our own report goes: peers (parent, flat), or the current
    /// parent (child).
    fn report_targets(&self) -> Vec<u64> {
        if self.topo.role() == Role::Child {
            self.topo
                .current_parent()
                .and_then(|p| self.active.get(&key(p)).copied())
                .into_iter()
                .collect()
        } else {
            self.peer_conns()
        }
    }

    /// Sends connection `id` a snapshot of our services and our site
    /// figures (a new receiver, or one that asked for it).
    fn send_report_to(&mut self, id: u64) {
        let Some(site) = self.site_metrics else {
            return;
        };
        let budget = own_budget(self.cfg.max_frame);
        for st in self.own.snapshot(budget) {
            self.send(id, Message::ServiceStates(st));
        }
        self.send(id, Message::SiteMetrics(site));
    }

    fn publish(&mut self, report: LocalReport, now: Duration) {
        if self.stopped {
            return;
        }
        let diff = self.own.set(&report.services);
        let site_changed = self.site_metrics != Some(report.site);
        self.site_metrics = Some(report.site);
        let targets = self.report_targets();
        let budget = own_budget(self.cfg.max_frame);
        let was_started = self.own.started();
        let steps = self.own.changes(diff, budget);
        if !steps.is_empty() && site_changed {
            self.report_sent = now;
        }
        for (i, st) in steps.into_iter().enumerate() {
            if i == 0 && was_started && std::mem::take(&mut self.lose_next_delta) {
                tracing::debug!(seq = st.seq, "test hook: delta not sent");
                continue;
            }
            self.broadcast(&targets, &Message::ServiceStates(st));
        }
        if site_changed {
            self.broadcast(&targets, &Message::SiteMetrics(report.site));
        }
    }

    /// A connection ended. Returns whether it had been confirmed.
    fn closed(&mut self, id: u64, reason: CloseReason) -> bool {
        let Some(c) = self.conns.remove(&id) else {
            return false;
        };
        if self.stopped {
            return c.confirmed;
        }
        let why = reason.to_string();
        let name = c.site.name.clone();
        if matches!(reason, CloseReason::Malformed(_) | CloseReason::Protocol(_)) {
            tracing::debug!(site = %name, peer = %c.addr, reason = %why, "MEP session closed: protocol error");
            self.emit(MepEvent::BadFrame {
                peer: c.addr,
                site: name.clone(),
                reason: why.clone(),
            });
        } else if !c.confirmed {
            tracing::debug!(site = %name, peer = %c.addr, reason = %why, "MEP connection closed before it was up");
        }
        // Adopter side.
        if c.outbound
            && let Some(for_parent) = c.acting_for.clone()
        {
            if c.confirmed && self.adopted.remove(&c.key).is_some() {
                self.topo.adopted(&name, false);
                tracing::debug!(child = %name, %for_parent, reason = %why, "adoption ended");
                self.emit(MepEvent::Released {
                    child: name.clone(),
                    reason: why.clone(),
                });
            } else if let CloseReason::RejectedByPeer(r) = &reason {
                tracing::debug!(child = %name, %for_parent, reason = %r, "child refused the takeover");
                self.emit(MepEvent::AdoptionRefused {
                    child: name.clone(),
                    for_parent,
                    reason: r.clone(),
                });
            }
        }
        if self.active.get(&c.key) != Some(&id) {
            return c.confirmed;
        }
        self.active.remove(&c.key);
        if self
            .accepted_offer
            .as_ref()
            .is_some_and(|(from, _)| key(from) == c.key)
        {
            self.accepted_offer = None;
        }
        self.topo.peer_down(&name);
        {
            let info = self.site_info(&c.key, &name);
            info.rtt = None;
            info.down_reason = Some(why.clone());
        }
        tracing::debug!(site = %name, peer = %c.addr, reason = %why, "MEP is DOWN");
        if self.children.remove(&c.key).is_some() {
            self.relay(ChildReport {
                child: name.clone(),
                up: false,
                services: None,
                states: None,
                site_metrics: None,
            });
        }
        // Children this peer relayed are no longer reachable through it.
        let mut lost = Vec::new();
        for (k, info) in &mut self.sites {
            if info.via.remove(&c.key) {
                info.down_reason = Some(format!("MEP with {name}, which relayed it, is DOWN"));
                lost.push(k.clone());
            }
        }
        for k in lost {
            self.announce(&k);
        }
        self.announce(&c.key);
        self.after_change();
        true
    }

    /// Emits PeerUp/PeerDown when a site's reachability changed.
    fn announce(&mut self, k: &str) {
        let direct = self.active.contains_key(k);
        let Some(info) = self.sites.get_mut(k) else {
            return;
        };
        let up = direct || !info.via.is_empty();
        if up == info.announced {
            return;
        }
        info.announced = up;
        let site = info.name.clone();
        let e = if up {
            let via = if direct {
                None
            } else {
                info.via.iter().min().cloned()
            };
            let via = via.map(|v| self.sites.get(&v).map_or(v.clone(), |i| i.name.clone()));
            MepEvent::PeerUp { site, via }
        } else {
            MepEvent::PeerDown {
                site,
                reason: info.down_reason.clone().unwrap_or_default(),
            }
        };
        self.emit(e);
    }

    /// After anything that may change the topology's answers.
    fn after_change(&mut self) {
        if self.stopped {
            return;
        }
        if self.topo.role() == Role::Child {
            let cur = self.topo.current_parent().map(str::to_owned);
            if cur != self.last_parent {
                match &cur {
                    Some(p) => tracing::debug!(parent = %p, "current parent"),
                    None => tracing::debug!("no parent reachable"),
                }
                self.emit(MepEvent::ParentChanged {
                    new_parent: cur.clone(),
                });
                self.last_parent = cur.clone();
                if let Some(p) = cur
                    && let Some(&id) = self.active.get(&key(&p))
                {
                    self.send_report_to(id);
                }
            }
        }
        self.reconcile();
    }

    /// Opens the links the topology wants, closes those it no longer wants.
    fn reconcile(&mut self) {
        let adoptions: HashMap<String, String> = self
            .topo
            .adoptions()
            .into_iter()
            .map(|(c, p)| (key(&c.name), p))
            .collect();
        self.links = self
            .topo
            .links()
            .into_iter()
            .map(|l| (key(&l.peer.name), l))
            .collect();
        let mut wanted: HashMap<String, DialPlan> = HashMap::new();
        for (k, l) in &self.links {
            if !l.initiate {
                continue;
            }
            let acting_for = if l.kind == LinkKind::Adopted {
                adoptions.get(k).cloned()
            } else {
                None
            };
            let secure = self.cfg.secure_to(l.peer.ip);
            wanted.insert(
                k.clone(),
                DialPlan {
                    site: l.peer.clone(),
                    acting_for,
                    secure,
                    port: if secure {
                        self.cfg.secure_port
                    } else {
                        self.cfg.port
                    },
                },
            );
        }
        self.dialers
            .retain(|k, d| wanted.get(k).is_some_and(|p| *p == d.plan));
        for (k, plan) in wanted {
            if self.dialers.contains_key(&k) {
                continue;
            }
            let token = self.next_id;
            self.next_id += 1;
            tracing::debug!(site = %plan.site.name, acting_for = ?plan.acting_for, "dialing");
            self.dialers.insert(k.clone(), Dialer { token, plan });
            if let Some(shared) = self.shared() {
                let h = self.rt.spawn(dial_loop(shared, k, token));
                self.tasks.push(h.abort_handle());
            }
        }
        let parent_now = (self.topo.role() == Role::Child)
            .then(|| self.topo.current_parent().map(str::to_owned))
            .flatten();
        let mut rejects = Vec::new();
        for (&id, c) in &self.conns {
            if let Some(t) = c.dialer
                && self.dialers.get(&c.key).map(|d| d.token) != Some(t)
            {
                rejects.push((
                    id,
                    format!(
                        "{} no longer links with {}",
                        self.cfg.local.name, c.site.name
                    ),
                ));
                continue;
            }
            if !c.up || (c.offer.is_some() && !c.confirmed) {
                continue;
            }
            match self.links.get(&c.key) {
                None => rejects.push((
                    id,
                    match &parent_now {
                        Some(p) => format!("{p} is now my parent"),
                        None => format!(
                            "{} no longer links with {}",
                            self.cfg.local.name, c.site.name
                        ),
                    },
                )),
                Some(l) if l.peer.ip != c.site.ip => {
                    rejects.push((id, format!("the IP of {} changed", c.site.name)));
                }
                _ => {}
            }
        }
        for (id, why) in rejects {
            self.reject(id, why);
        }
    }

    fn attempt(&self, k: &str, token: u64) -> Option<Attempt> {
        if self.stopped {
            return None;
        }
        let d = self.dialers.get(k).filter(|d| d.token == token)?;
        // `set ns rpcNode PEER -srcIP IP` picks the source address towards
        // that peer; the site IP otherwise.
        let local_ip = self
            .cfg
            .rpc(d.plan.site.ip)
            .and_then(|n| n.source_ip)
            .unwrap_or(self.cfg.local.ip);
        Some(Attempt {
            plan: d.plan.clone(),
            local_ip,
            timeout: self.cfg.timeout,
        })
    }

    fn tick(&mut self, now: Duration) {
        if self.stopped {
            return;
        }
        if let Some(t) = self.unreached_at
            && now >= t
        {
            self.unreached_at = None;
            self.topo.mark_unreached_down();
            self.after_change();
        }
        if let Some(site) = self.site_metrics
            && now >= self.report_sent + self.cfg.interval()
        {
            // No periodic resend of the services: a heartbeat (the latest
            // seq, nothing else) lets receivers notice a lost delta; the
            // site figures are small and complete, so they are resent.
            self.report_sent = now;
            let targets = self.report_targets();
            self.broadcast(&targets, &Message::ServiceStates(self.own.heartbeat()));
            self.broadcast(&targets, &Message::SiteMetrics(site));
            // Relay heartbeats: one frame per child and peer parent, so they
            // go every keepalive timeout only (a third of the rate), which
            // still reveals a lost relay delta within T.
            if self.topo.role() == Role::Parent && now >= self.relay_beat_at {
                self.relay_beat_at = now + self.cfg.timeout;
                let peers = self.peer_conns();
                let beats: Vec<Message> = self
                    .children
                    .values()
                    .filter(|c| c.relay.started())
                    .map(|c| {
                        Message::ChildReport(ChildReport {
                            child: c.name.clone(),
                            up: true,
                            services: None,
                            states: Some(c.relay.heartbeat()),
                            site_metrics: None,
                        })
                    })
                    .collect();
                for m in beats {
                    self.broadcast(&peers, &m);
                }
            }
        }
        self.tasks.retain(|h| !h.is_finished());
    }

    fn reload(&mut self, model: Arc<Model>, generation: u64, now: Duration) {
        if self.stopped {
            return;
        }
        let mut topo = match Topology::new(&model) {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(error = %e, "MEP keeps the previous topology: the new configuration is unusable");
                return;
            }
        };
        let old_local = self.cfg.local.clone();
        let old_own = self.topo.own_backup_list();
        let cfg = Cfg::new(model, generation, &topo, self.cfg.max_frame);
        if key(&cfg.local.name) != key(&old_local.name) || cfg.local.ip != old_local.ip {
            tracing::warn!(old = %old_local.name, new = %cfg.local.name, "the local site changed: every MEP session restarts");
            for &id in self.conns.keys() {
                self.reject(id, "the site's identity changed".into());
            }
        } else {
            // Carry what this node has observed over to the new topology.
            for (parent, list) in self.received_lists.values() {
                topo.set_backup_list(parent, list.clone());
            }
            for c in self.active.values().filter_map(|id| self.conns.get(id)) {
                topo.peer_up(&c.site.name);
            }
            for v in self.topo.view() {
                if self.topo.peer_state(&v.name) == crate::topology::PeerState::Down {
                    topo.peer_down(&v.name);
                }
            }
            if let Some((from, for_parent)) = &self.accepted_offer
                && topo.offer_parent(from, for_parent) != Accept::Yes
            {
                self.accepted_offer = None;
            }
            for child in self.adopted.keys() {
                topo.adopted(child, true);
            }
        }
        self.topo = topo;
        self.cfg = cfg;
        if let Err(e) = self.listen() {
            tracing::error!(error = %e, "MEP listener");
        }
        self.unreached_at = Some(now + self.cfg.timeout);
        let own = self.topo.own_backup_list();
        if own != old_own && self.topo.role() == Role::Parent {
            let msg = Message::BackupParents(BackupParents {
                parent: self.cfg.local.name.clone(),
                list: to_wire(own),
            });
            let ids: Vec<u64> = self.active.values().copied().collect();
            for id in ids {
                self.send(id, msg.clone());
            }
        }
        self.after_change();
    }

    fn status(&self) -> Vec<PeerStatus> {
        let me = key(&self.cfg.local.name);
        self.topo
            .view()
            .into_iter()
            .map(|v| {
                let k = key(&v.name);
                let info = self.sites.get(&k);
                let conn = self.active.get(&k).and_then(|id| self.conns.get(id));
                let state = if k == me {
                    MepState::Local
                } else if info.is_some_and(|i| i.announced) {
                    MepState::Up
                } else {
                    MepState::Down
                };
                let via = if conn.is_none() {
                    info.and_then(|i| i.via.iter().min())
                        .map(|v| self.sites.get(v).map_or(v.clone(), |i| i.name.clone()))
                } else {
                    None
                };
                PeerStatus {
                    ip: v.ip,
                    kind: v.kind,
                    state,
                    via,
                    link: self.links.get(&k).map(|l| link_name(l.kind)),
                    last_message: info.and_then(|i| i.last_message),
                    link_rtt: conn.and(info.and_then(|i| i.rtt)),
                    keepalives_sent: info.map_or(0, |i| i.keepalives_sent),
                    keepalives_lost: info.map_or(0, |i| i.keepalives_lost),
                    secure: conn.is_some_and(|c| c.secure),
                    configured_parent: v.configured_parent,
                    current_parent: v.current_parent,
                    adopted_for: self.adopted.get(&k).cloned(),
                    last_down_reason: info.and_then(|i| i.down_reason.clone()),
                    name: v.name,
                }
            })
            .collect()
    }

    fn shutdown(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        for h in self.listeners.drain(..) {
            h.abort();
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
        self.dialers.clear();
        tracing::info!(site = %self.cfg.local.name, "metric exchange stopped");
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

async fn accept_loop(shared: Arc<Shared>, listener: TcpListener, secure: bool) {
    loop {
        match listener.accept().await {
            Ok((tcp, addr)) => {
                let _ = tcp.set_nodelay(true);
                shared.lock().accept(tcp, addr, secure);
            }
            Err(e) => {
                tracing::warn!(error = %e, "MEP accept failed");
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
            inner.cfg.interval()
        };
        tokio::time::sleep(interval.min(Duration::from_millis(500))).await;
    }
}

async fn dial_loop(shared: Arc<Shared>, k: String, token: u64) {
    let mut backoff = BACKOFF_MIN;
    let mut last_error: Option<String> = None;
    loop {
        let Some(a) = shared.lock().attempt(&k, token) else {
            return;
        };
        let addr = SocketAddr::new(a.plan.site.ip, a.plan.port);
        let error = match tokio::time::timeout(a.timeout, connect(a.local_ip, addr)).await {
            Ok(Ok(tcp)) => {
                let reg = shared.lock().register(
                    a.plan.site.clone(),
                    addr,
                    true,
                    a.plan.secure,
                    a.plan.acting_for.clone(),
                    Some(token),
                );
                let Some(reg) = reg else { return };
                last_error = None;
                let confirmed = if a.plan.secure {
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
                        tracing::warn!(site = %a.plan.site.name, peer = %addr, error = %why, "MEP over TLS failed");
                        shared.lock().closed(id, CloseReason::Local(why))
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
                tracing::info!(site = %a.plan.site.name, peer = %addr, error = %e, "cannot connect for MEP; retrying");
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
    let read_max = READ_BUF_MAX.min(max_frame + 4).max(READ_BUF_MIN);
    let mut buf = vec![0u8; READ_BUF_MIN];
    let mut out = Vec::new();
    let mut events = Vec::new();
    loop {
        let mut close = None;
        for a in actions.drain(..) {
            match a {
                Action::Send(m) => {
                    if let Err(e) = frame::encode(&m, max_frame, &mut out) {
                        tracing::error!(kind = %m.kind(), error = %e, "MEP message not sent");
                    }
                }
                Action::Event(e) => events.push(e),
                Action::Close(r) => close = Some(r),
            }
        }
        if !events.is_empty() {
            let mut inner = shared.lock();
            for e in events.drain(..) {
                inner.session_event(id, e);
            }
            inner.flush_relay(id);
        }
        if !out.is_empty() {
            let r = tokio::time::timeout(write_timeout, stream.write_all(&out)).await;
            out.clear();
            let failed = match r {
                Ok(Ok(())) => None,
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
            return shared.lock().closed(id, reason);
        }
        let deadline = session
            .next_deadline()
            .unwrap_or_else(|| shared.now() + Duration::from_secs(1));
        tokio::select! {
            r = stream.read(&mut buf) => match r {
                Ok(0) | Err(_) => actions = session.on_eof(shared.now()),
                Ok(n) => {
                    reader.push(&buf[..n]);
                    if n == buf.len() && buf.len() < read_max {
                        buf.resize((buf.len() * 2).min(read_max), 0);
                    }
                    shared.lock().touch(id, shared.now());
                    let now = shared.now();
                    loop {
                        match reader.next_message() {
                            Ok(Some(m)) => {
                                actions.extend(session.on_frame(m, now));
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
                            ConnCmd::Send(m) => actions.extend(session.send(m)),
                            ConnCmd::Frame(f) => {
                                if session.state() == State::Up {
                                    // Keep the order of the frames queued before it.
                                    for a in actions.drain(..) {
                                        if let Action::Send(m) = a
                                            && let Err(e) = frame::encode(&m, max_frame, &mut out)
                                        {
                                            tracing::error!(kind = %m.kind(), error = %e, "MEP message not sent");
                                        }
                                    }
                                    out.extend_from_slice(&f);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{LoadMetrics, ServiceState};
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
