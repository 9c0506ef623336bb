//! What happens to a site: the engine's input.
//!
//! Every kind of input is plain data with names and addresses as the edges
//! see them (no sockets, no driver types), so a recorded sequence of events
//! can be replayed without the edges.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use sextant_core::{LdnsProbe, MonitorId, PathFigures, ServiceId, ServiceMetrics, VServerId};

/// One input of the state engine.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A monitor's raw probe result for one service.
    Probe(Probe),
    /// A monitor could not probe a service for a reason of this host (out
    /// of descriptors or buffers: `EMFILE`, `ENFILE`, `ENOBUFS`,
    /// `ENOMEM`). It says nothing about the service: its state and its
    /// monitor's count of failures stay as they are, and `detail` is shown
    /// as the monitor's last result. Whoever exhausts this host's
    /// descriptors (idle connections to the API, say) must not be able to
    /// turn its healthy backends DOWN.
    ProbeLocalError {
        service: ServiceId,
        monitor: MonitorId,
        detail: String,
    },
    /// Load figures measured here for a local service (a load source's
    /// scrape or a REST push).
    LocalFigures {
        service: ServiceId,
        metrics: ServiceMetrics,
    },
    /// Metric exchange with `site` is up: directly, or relayed by the
    /// parent `via`.
    PeerUp { site: String, via: Option<String> },
    /// Metric exchange with `site` is down: what it reported no longer holds.
    PeerDown { site: String, reason: String },
    /// `site` reported its services (its own, relayed by `via` for a child).
    PeerServices(PeerServices),
    /// This node's own CPU, memory and bandwidth use, for its reports and
    /// datacenter mode.
    OwnSiteFigures(SiteFigures),
    /// Another site's figures, from its metric exchange report.
    PeerSiteFigures { site: String, figures: SiteFigures },
    /// One probe burst to `site` (datacenter mode's DC Based PACKET_LOSS,
    /// asked for by [`crate::Effect::MeasurePathLoss`]): `lost` of `sent`
    /// echo requests got no reply.
    PathLoss { site: String, sent: u32, lost: u32 },
    /// Persistence entries this node made since the last such event, for
    /// session exchange.
    LocalSessions(Vec<LocalSession>),
    /// Persistence entries another parent made.
    PeerSessions {
        site: String,
        entries: Vec<SharedSession>,
    },
    /// LDNS groups (query sources, masked or not) that queried a domain
    /// whose vserver uses RTT, since the last such event: new ones get an
    /// entry (bounded, see [`crate::ldns`]), known ones stay alive.
    LdnsQueried(Vec<IpAddr>),
    /// One probe cycle of this site's LDNS prober for `group`: the RTT and
    /// the probe that measured it, or `None` when every kind failed; and the
    /// IP TTL (IPv6: hop limit) the reply arrived with, when the probe could
    /// see it (ping and DNS over UDP; always `None` for a failed cycle).
    /// The engine turns the recent cycles into the path figures of
    /// datacenter mode ([`crate::ldns`]).
    LdnsSample {
        group: IpAddr,
        sample: Option<(Duration, LdnsProbe)>,
        ttl: Option<u8>,
    },
    /// Another parent's RTTs to LDNS groups (only the changes it sends).
    PeerRtt {
        site: String,
        entries: Vec<SharedRtt>,
    },
    /// A new, already validated configuration, its tables built
    /// ([`crate::Prepared::new`]).
    Reload(Box<crate::engine::Prepared>),
    /// VRRP: this node became master of the site IP's VIP (`true`), or
    /// gave it up. Metric exchange runs on the master only.
    SiteIpMaster(bool),
    /// A self-probe of this node's DNS listener on a VRRP VIP.
    ListenerProbe {
        addr: std::net::SocketAddr,
        probe: crate::listeners::ListenerProbe,
    },
    /// The operator enabled, disabled or drained a service, vserver or
    /// site (runtime maintenance): published at once, answered with
    /// [`crate::Effect::Admin`], saved with [`crate::Effect::SaveAdmin`].
    Admin(crate::admin::AdminChange),
    /// The marks saved in the state file, at start (before anything else):
    /// those whose object is not configured are dropped
    /// ([`crate::Effect::AdminDropped`]).
    AdminRestore(Vec<crate::admin::AdminRecord>),
    /// Time passed: publish what waits, decide what is due.
    Tick,
}

/// One probe result.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub service: ServiceId,
    pub monitor: MonitorId,
    pub success: bool,
    /// Operator-readable verdict, e.g. `TCP connect to 127.0.0.1:81 refused`.
    pub detail: String,
    /// How long a successful probe took.
    pub response_time: Option<Duration>,
}

/// A report of one site's services. `full`: the complete list, replacing
/// everything known from that site; otherwise what changed (`entries`) and
/// what is gone (`removed`, by the sender's IP and port).
#[derive(Debug, Clone, PartialEq)]
pub struct PeerServices {
    pub site: String,
    pub via: Option<String>,
    pub full: bool,
    pub entries: Vec<ReportedService>,
    pub removed: Vec<(IpAddr, u16)>,
}

/// One service as its own site reports it over metric exchange: in other
/// sites' reports (events) and in this site's own (effects).
#[derive(Debug, Clone, PartialEq)]
pub struct ReportedService {
    /// The name at the reporting site (shown, never used to match).
    pub name: Arc<str>,
    pub ip: IpAddr,
    pub port: u16,
    pub public_ip: Option<IpAddr>,
    pub public_port: Option<u16>,
    pub up: bool,
    pub metrics: ServiceMetrics,
}

pub use sextant_core::SiteFigures;

/// A persistence entry made by this node's DNS path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalSession {
    pub vserver: VServerId,
    /// The client address masked with the vserver's persistence prefix.
    pub key: IpAddr,
    pub service: ServiceId,
    pub remaining: Duration,
}

/// A persistence entry as parents exchange it: by names, since ids are
/// local to one configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedSession {
    pub vserver: String,
    pub key: IpAddr,
    pub prefix: u8,
    pub service: String,
    pub remaining: Duration,
}

/// One site's RTT to one LDNS group as parents exchange it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedRtt {
    pub group: IpAddr,
    /// `None`: the site cannot measure it (every probe failed) or has not yet.
    pub rtt: Option<Duration>,
    pub kind: Option<LdnsProbe>,
    /// The site's path figures towards the group (datacenter mode's Client
    /// Based selection), when it has them; only meaningful with an `rtt`.
    pub path: Option<PathFigures>,
    /// The site's own clients query through this LDNS: keep it alive.
    pub queried: bool,
    /// The site dropped the group.
    pub removed: bool,
}
