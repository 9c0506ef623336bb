//! The decisions of metric exchange as a pure state machine: which site a
//! connection is, which connection counts (arbitration), adoption offers
//! and refusals (backup parents, seed 001), the relay of children to peer
//! parents, what is announced as UP or DOWN, what is dialled, and which
//! links carry config sync messages (peer parents only; see `config.rs`).
//!
//! [`Node::on`] takes an [`Input`] (a connection accepted, dialled, its
//! session's events, its close, a tick, a publish, a reload) and the time,
//! and returns [`Output`]s (messages to send, connections to reject, sites to
//! dial, [`MepEvent`]s, the state file to write). The node reads no clock,
//! opens no socket and spawns nothing, so every scenario can be replayed
//! without a network (`tests/node.rs`); [`crate::driver`] carries the
//! outputs out. Connections are known here by id and metadata only; each
//! one's [`crate::session::Session`] runs in the driver.
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

mod config;
mod links;
mod streams;
mod types;

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use sextant_core::{Model, RpcNode};

use crate::message::{Message, PeerLink, Role as WireRole, ServiceStates, SiteAddr, SiteMetrics};
use crate::session::{CloseReason, SessionConfig, SessionEvent};
use crate::state::StateFile;
use crate::sync::{StreamReceiver, StreamSender};
use crate::topology::{Link, LinkKind, Role, SiteRef, Topology, TopologyError};

pub use config::is_config_sync;
pub use links::{MAX_PENDING, MAX_PENDING_PER_ADDRESS};
pub use types::{LocalReport, MepEvent, MepState, PeerStatus};

/// A connection, as the driver numbers them (never reused).
pub type ConnId = u64;

/// The ticker never runs more often than this.
const MIN_TICK: Duration = Duration::from_millis(10);
/// Relayed child streams one peer connection may hold: a peer parent relays
/// at most the children of the configuration (1024 in the largest ones), so
/// more is a hostile or broken peer, not a topology.
const MAX_RELAYED_STREAMS: usize = 8192;
/// Room a `ChildReport` needs around its `states` (child name aside):
/// field names, `up`, the child's site metrics.
const CHILD_REPORT_OVERHEAD: usize = 512;

/// Random bytes a new connection's session needs: the node draws none, so
/// replays are deterministic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keys {
    /// The session's challenge nonce.
    pub nonce: [u8; 32],
    /// The secret of a link whose password is only a placeholder: one that
    /// matches nothing, so the link fails to authenticate.
    pub placeholder: [u8; 32],
}

/// What happened, as the driver saw it.
#[derive(Debug, Clone)]
pub enum Input {
    /// A listener accepted a connection (numbered `conn` by the driver).
    /// Answered by [`Output::Start`] for it, or nothing if it is refused.
    Accepted {
        conn: ConnId,
        addr: SocketAddr,
        secure: bool,
        keys: Keys,
    },
    /// The dial of [`Output::Dial`] `token` connected. Answered by
    /// [`Output::Start`], or nothing if the node no longer wants it.
    Dialled {
        conn: ConnId,
        token: u64,
        addr: SocketAddr,
        keys: Keys,
    },
    /// Bytes arrived on the connection (`bytes` of them).
    Data { conn: ConnId, bytes: u64 },
    /// `bytes` were written to the connection.
    Wrote { conn: ConnId, bytes: u64 },
    /// The session's events from one read (or one timer or send), in order.
    Session {
        conn: ConnId,
        events: Vec<SessionEvent>,
    },
    /// The connection ended.
    Closed { conn: ConnId, reason: CloseReason },
    /// The periodic timer (every [`Node::interval`] or more often).
    Tick,
    /// This site's own figures.
    Publish(LocalReport),
    /// LDNS RTT tables or sessions for every peer (other messages ignored).
    SendToPeers(Message),
    /// A config sync message (kinds 14–16) for one peer parent or mesh
    /// peer, sent on the confirmed link with it if that is up; dropped
    /// otherwise (other kinds, children, unknown or DOWN sites).
    SendTo { site: String, msg: Message },
    /// A new configuration.
    Reload { model: Arc<Model>, generation: u64 },
    /// The driver is listening: start, with the state file's content if it
    /// has one.
    Start { saved: Option<StateFile> },
    /// Test hook: the next delta of the own stream is numbered, not sent.
    LoseNextDelta,
    /// Stop: every later input is ignored.
    Stop,
}

/// What the driver must do, in order.
#[derive(Debug, Clone)]
pub enum Output {
    /// Run a session with this configuration on the connection of
    /// `Accepted` or `Dialled`.
    Start {
        conn: ConnId,
        config: Box<SessionConfig>,
    },
    /// Hand the message to the connection's session.
    Send { conn: ConnId, msg: Message },
    /// Send the message (encoded once) on each connection whose session is
    /// up.
    Broadcast { conns: Vec<ConnId>, msg: Message },
    /// Send Reject with the reason and close.
    Reject { conn: ConnId, reason: String },
    /// For the binary.
    Event(MepEvent),
    /// Keep dialling `attempt.site` until told to stop; a dial already
    /// running under `token` takes the new attempt from its next try.
    Dial { token: u64, attempt: Attempt },
    /// The dial `token` is no longer wanted (its connection, if any, is
    /// rejected separately).
    StopDial { token: u64 },
    /// (Child) Write the state file (backup lists).
    SaveState(StateFile),
    /// Listen on exactly these addresses (`true`: TLS).
    Listen(Vec<(SocketAddr, bool)>),
}

/// One try of a dial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub site: SiteRef,
    /// An adoption offer for this parent.
    pub acting_for: Option<String>,
    pub secure: bool,
    pub port: u16,
    /// The source address (`rpcNode -srcIP`, else the site IP).
    pub local_ip: IpAddr,
    /// Connect (and TLS handshake) time limit.
    pub timeout: Duration,
}

impl Attempt {
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::new(self.site.ip, self.port)
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
            .and_then(|id| model.sites.get(id))
            .and_then(|s| s.parent)
            .and_then(|p| model.sites.get(p))
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

/// The key of a site name in every map: its lower case.
pub fn key(name: &str) -> String {
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

fn from_wire(list: Vec<SiteAddr>) -> Vec<SiteRef> {
    list.into_iter()
        .map(|s| SiteRef {
            name: s.name,
            ip: s.ip,
        })
        .collect()
}

/// One connection (handshaking or up): what the decisions need of it.
struct Conn {
    site: SiteRef,
    key: String,
    addr: SocketAddr,
    outbound: bool,
    secure: bool,
    /// The dial that owns it (outbound).
    dialer: Option<u64>,
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

/// A site this node dials.
struct Dialer {
    token: u64,
    plan: DialPlan,
    /// The attempt last given to the driver.
    attempt: Option<Attempt>,
}

#[derive(Debug, Clone, PartialEq)]
struct DialPlan {
    site: SiteRef,
    acting_for: Option<String>,
    secure: bool,
    port: u16,
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
    /// node had with it (never reset).
    keepalives_sent: u64,
    keepalives_lost: u64,
    /// Messages this node queued to the site and received from it (not
    /// keepalives), and the sessions with it that came up.
    messages_sent: u64,
    messages_received: u64,
    sessions_up: u64,
    /// Bytes written to and read from its connections (frames, keepalives
    /// included).
    bytes_sent: u64,
    bytes_received: u64,
    down_reason: Option<String>,
    /// The site's own links as it last reported them, and when.
    reported_links: Option<(Vec<PeerLink>, Duration)>,
}

/// A parent's copy of one of its children's figures, for relaying.
struct ChildData {
    name: String,
    /// This node's relay stream of the child's services (its own numbering:
    /// the child's stream goes to this node only).
    relay: StreamSender,
    metrics: Option<SiteMetrics>,
    /// Relay steps not sent yet, and whether the metrics changed since the
    /// last relay: sent together once the events of one read are handled
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

/// One site's metric exchange, without its I/O.
pub struct Node {
    stopped: bool,
    cfg: Cfg,
    topo: Topology,
    /// `topo.links()` by site key, as of the last reconcile.
    links: HashMap<String, Link>,
    next_token: u64,
    conns: HashMap<ConnId, Conn>,
    /// Site key → its confirmed connection.
    active: HashMap<String, ConnId>,
    dialers: HashMap<String, Dialer>,
    sites: HashMap<String, SiteInfo>,
    /// Our own service stream (the list as last published).
    own: StreamSender,
    /// Our site figures as last published; `None` until the first publish.
    site_metrics: Option<SiteMetrics>,
    /// Our links as our last SiteMetrics reported them.
    links_reported: Vec<PeerLink>,
    /// A session or the wanted links changed since the last look: our
    /// links may differ from what we reported.
    links_touched: bool,
    /// When the last heartbeat (and site metrics) went out.
    report_sent: Duration,
    /// When the next relay heartbeats are due.
    relay_beat_at: Duration,
    /// Test hook: drop the next delta of `own`.
    lose_next_delta: bool,
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
    /// The time of the input being handled.
    now: Duration,
    out: Vec<Output>,
}

impl Node {
    /// The node of `model`'s local site; `max_frame` bounds what it sends.
    pub fn new(
        model: Arc<Model>,
        generation: u64,
        max_frame: usize,
    ) -> Result<Node, TopologyError> {
        let topo = Topology::new(&model)?;
        let cfg = Cfg::new(model, generation, &topo, max_frame);
        Ok(Node {
            stopped: false,
            cfg,
            topo,
            links: HashMap::new(),
            next_token: 1,
            conns: HashMap::new(),
            active: HashMap::new(),
            dialers: HashMap::new(),
            sites: HashMap::new(),
            own: StreamSender::new(),
            site_metrics: None,
            links_reported: Vec::new(),
            links_touched: false,
            report_sent: Duration::ZERO,
            relay_beat_at: Duration::ZERO,
            lose_next_delta: false,
            children: HashMap::new(),
            received_lists: HashMap::new(),
            accepted_offer: None,
            adopted: HashMap::new(),
            last_parent: None,
            refusals: HashMap::new(),
            unreached_at: None,
            now: Duration::ZERO,
            out: Vec::new(),
        })
    }

    /// Handles one input at `now` (any monotonic origin, the same for every
    /// call) and returns what the driver must do, in order.
    pub fn on(&mut self, input: Input, now: Duration) -> Vec<Output> {
        self.now = now;
        if !self.stopped {
            self.handle(input);
            self.report_links_if_changed();
        }
        std::mem::take(&mut self.out)
    }

    fn handle(&mut self, input: Input) {
        match input {
            Input::Accepted {
                conn,
                addr,
                secure,
                keys,
            } => self.accept(conn, addr, secure, keys),
            Input::Dialled {
                conn,
                token,
                addr,
                keys,
            } => self.dialled(conn, token, addr, keys),
            Input::Data { conn, bytes } => {
                self.count(conn, |i| i.bytes_received += bytes);
                self.touch(conn);
            }
            Input::Wrote { conn, bytes } => self.count(conn, |i| i.bytes_sent += bytes),
            Input::Session { conn, events } => {
                for e in events {
                    self.session_event(conn, e);
                }
                self.flush_relay(conn);
            }
            Input::Closed { conn, reason } => self.closed(conn, reason),
            Input::Tick => self.tick(),
            Input::Publish(report) => self.publish(report),
            Input::SendToPeers(msg) => {
                if !matches!(msg, Message::LdnsRtt(_) | Message::Sessions(_)) {
                    tracing::debug!(kind = %msg.kind(), "send_to_peers: not an exchange message");
                    return;
                }
                for conn in self.peer_conns() {
                    self.send(conn, msg.clone());
                }
            }
            Input::SendTo { site, msg } => self.send_to(&site, msg),
            Input::Reload { model, generation } => self.reload(model, generation),
            Input::Start { saved } => {
                if let Some(st) = saved {
                    self.restore(st);
                }
                self.unreached_at = Some(self.now + self.cfg.timeout);
                tracing::info!(
                    site = %self.cfg.local.name,
                    ip = %self.cfg.local.ip,
                    role = ?self.topo.role(),
                    port = self.cfg.port,
                    "metric exchange started"
                );
                self.after_change();
            }
            Input::LoseNextDelta => self.lose_next_delta = true,
            Input::Stop => {
                self.stopped = true;
                self.conns.clear();
                self.active.clear();
                for (_, d) in self.dialers.drain() {
                    self.out.push(Output::StopDial { token: d.token });
                }
                tracing::info!(site = %self.cfg.local.name, "metric exchange stopped");
            }
        }
    }

    // --- queries ---

    /// This node's role in the topology.
    pub fn role(&self) -> Role {
        self.topo.role()
    }

    /// (Child) The current parent.
    pub fn current_parent(&self) -> Option<&str> {
        self.topo.current_parent()
    }

    /// How often [`Input::Tick`] is due (at least).
    pub fn interval(&self) -> Duration {
        self.cfg.interval()
    }

    /// The keepalive timeout, which also bounds connects and TLS handshakes.
    pub fn keepalive_timeout(&self) -> Duration {
        self.cfg.timeout
    }

    /// Where to listen (`true`: TLS): the site IP on the MEP port, and on
    /// the secure port when any rpcNode is secure.
    pub fn listen_addrs(&self) -> Vec<(SocketAddr, bool)> {
        let ip = self.cfg.local.ip;
        let mut want = vec![(SocketAddr::new(ip, self.cfg.port), false)];
        if self.cfg.any_secure() {
            want.push((SocketAddr::new(ip, self.cfg.secure_port), true));
        }
        want
    }

    /// Whether the connection is this node's link with its site; a dial
    /// that lost a confirmed link starts again from the shortest backoff.
    pub fn is_confirmed(&self, conn: ConnId) -> bool {
        self.conns.get(&conn).is_some_and(|c| c.confirmed)
    }

    /// The local site's name.
    pub fn local_name(&self) -> &str {
        &self.cfg.local.name
    }

    // --- output helpers ---

    fn emit(&mut self, e: MepEvent) {
        self.out.push(Output::Event(e));
    }

    fn send(&mut self, conn: ConnId, msg: Message) {
        self.count(conn, |i| i.messages_sent += 1);
        self.out.push(Output::Send { conn, msg });
    }

    fn broadcast(&mut self, conns: Vec<ConnId>, msg: Message) {
        for c in &conns {
            self.count(*c, |i| i.messages_sent += 1);
        }
        if !conns.is_empty() {
            self.out.push(Output::Broadcast { conns, msg });
        }
    }

    fn reject(&mut self, conn: ConnId, reason: String) {
        self.out.push(Output::Reject { conn, reason });
    }

    /// Counts something in the figures of connection `id`'s site.
    fn count(&mut self, id: ConnId, f: impl FnOnce(&mut SiteInfo)) {
        if let Some(c) = self.conns.get(&id) {
            let (k, name) = (c.key.clone(), c.site.name.clone());
            f(self.site_info(&k, &name));
        }
    }

    fn site_info(&mut self, k: &str, name: &str) -> &mut SiteInfo {
        let info = self.sites.entry(k.to_owned()).or_default();
        if info.name.is_empty() {
            info.name = name.to_owned();
        }
        info
    }

    fn touch(&mut self, id: ConnId) {
        let Some(c) = self.conns.get(&id) else { return };
        if !c.up {
            return;
        }
        let (k, name) = (c.key.clone(), c.site.name.clone());
        let now = self.now;
        self.site_info(&k, &name).last_message = Some(now);
    }

    fn session_event(&mut self, id: ConnId, e: SessionEvent) {
        match e {
            SessionEvent::Up { peer } => {
                self.on_up(id, peer);
                self.count(id, |i| i.sessions_up += 1);
            }
            SessionEvent::Received(m) => {
                self.count(id, |i| i.messages_received += 1);
                self.on_received(id, m);
            }
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
                    let (k, name, peer) = (c.key.clone(), c.site.name.clone(), c.addr);
                    // Shown where the site is (`/v1/sites`, `show gslb
                    // site`, the dashboard), not only in the log: a link
                    // that never comes up has no other reason to show.
                    self.site_info(&k, &name).down_reason =
                        Some(format!("{}: {reason}", crate::session::AUTH_FAILED));
                    let e = MepEvent::AuthFailed {
                        peer,
                        site: name,
                        reason,
                    };
                    self.emit(e);
                }
            }
        }
    }

    /// Our direct links now (the ones the topology wants), each with
    /// whether its session is up, by site name.
    fn own_links(&self) -> Vec<PeerLink> {
        let mut links: Vec<PeerLink> = self
            .links
            .iter()
            .map(|(k, l)| PeerLink {
                site: l.peer.name.clone(),
                kind: link_name(l.kind).to_string(),
                up: self.active.contains_key(k),
            })
            .collect();
        links.sort_by(|a, b| a.site.cmp(&b.site));
        links
    }

    /// Every site this node knows, with its MEP state.
    pub fn status(&self) -> Vec<PeerStatus> {
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
                    messages_sent: info.map_or(0, |i| i.messages_sent),
                    messages_received: info.map_or(0, |i| i.messages_received),
                    sessions_up: info.map_or(0, |i| i.sessions_up),
                    bytes_sent: info.map_or(0, |i| i.bytes_sent),
                    bytes_received: info.map_or(0, |i| i.bytes_received),
                    secure: conn.is_some_and(|c| c.secure),
                    configured_parent: v.configured_parent,
                    current_parent: v.current_parent,
                    adopted_for: self.adopted.get(&k).cloned(),
                    last_down_reason: info.and_then(|i| i.down_reason.clone()),
                    reported_links: info.and_then(|i| i.reported_links.clone()),
                    name: v.name,
                }
            })
            .collect()
    }
}
