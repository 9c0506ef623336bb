//! What the node tells the binary, and what the binary tells it.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crate::message::{LdnsRttEntry, Message, ServiceEntry, ServiceKey, SessionEntry, SiteMetrics};

/// This site's own figures, as the binary measures them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LocalReport {
    /// Every local service with its state and load figures: always the
    /// whole current list, so the binary need not track what it sent; the
    /// node diffs it against the previous one and sends only the changes.
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
    /// Config sync (docs/config-sync.md): a `ConfigOffer`, `ConfigUpdate`
    /// or `ConfigResult` from a peer parent or mesh peer, on this node's
    /// confirmed direct link with it, for the config sync machine as it
    /// arrived. Never from or to a child.
    ConfigSync { from_site: String, msg: Message },
    /// Config sync: this node refused a `ConfigUpdate` from `from_site`
    /// because one of the two is a child site, and answered `Refused` with
    /// `reason` on the link. A parent that sends configurations to a child
    /// is misconfigured: log it.
    ConfigSyncRefused { from_site: String, reason: String },
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
    /// driver's clock ([`crate::driver::Options::origin`]).
    pub last_message: Option<Duration>,
    /// The RTT of the direct link, from keepalives.
    pub link_rtt: Option<Duration>,
    /// Keepalives this node sent to the site since the driver started, over
    /// every session with it (they add up across reconnects and reloads).
    pub keepalives_sent: u64,
    /// Those of them whose echo never came: counted when the next keepalive
    /// is due with the previous one unanswered, or when the session closes
    /// with one outstanding for a keepalive interval or more (see
    /// [`crate::session::Session::keepalives_lost`]). Never more than `keepalives_sent`.
    pub keepalives_lost: u64,
    /// Messages (not keepalives) this node queued to the site, and
    /// received from it, over every session (never reset).
    pub messages_sent: u64,
    pub messages_received: u64,
    /// Sessions with the site that came up: every one after the first is a
    /// reconnect.
    pub sessions_up: u64,
    /// Bytes written to and read from the site's connections (every frame,
    /// keepalives included), over every session.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// The TLS variant is in use on the direct link.
    pub secure: bool,
    pub configured_parent: Option<String>,
    /// The child's parent right now, as far as this node knows.
    pub current_parent: Option<String>,
    /// This node adopted the child in place of this parent.
    pub adopted_for: Option<String>,
    /// Why the site last went DOWN.
    pub last_down_reason: Option<String>,
    /// The site's own direct links as it last reported them over metric
    /// exchange, and when (the driver's clock); `None` when it never did.
    pub reported_links: Option<(Vec<crate::message::PeerLink>, Duration)>,
}
