//! The intermediate form both syntaxes are read into.
//!
//! A [`Draft`] holds the objects with their names, the lines they were
//! written on, and references as names ([`Ref`]). Each front end only checks
//! what it can see locally (value syntax, ranges); `validate` then resolves
//! references and checks the whole, in one place for both syntaxes, so the
//! two syntaxes accept exactly the same configurations.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use sextant_core::{GslbParams, LoadKind, Monitor, ServiceProtocol, Soa, TriggerMonitor, VServer};

/// Which syntax a draft came from. It changes the hints in messages, and
/// one rule: in the appliance syntax a backup parent must be a site added on
/// an earlier line (seed 001), since commands there are read in order; the
/// tables of a TOML file have no such order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Syntax {
    Appliance,
    Toml,
}

/// The kinds of named objects a reference can point to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Site,
    Service,
    VServer,
    Monitor,
}

impl Kind {
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Kind::Site => "site",
            Kind::Service => "service",
            Kind::VServer => "vserver",
            Kind::Monitor => "monitor",
        }
    }
}

impl Syntax {
    /// How to define a missing object, phrased for this syntax.
    pub(crate) fn how_to_define(self, kind: Kind, name: &str) -> String {
        match self {
            Syntax::Appliance => {
                let cmd = match kind {
                    Kind::Site => "add gslb site",
                    Kind::Service => "add gslb service",
                    Kind::VServer => "add gslb vserver",
                    Kind::Monitor => "add lb monitor",
                };
                format!("add it with \"{cmd}\"")
            }
            Syntax::Toml => format!("add a [[{}]] table with name = \"{name}\"", kind.noun()),
        }
    }
}

/// A name that refers to another object, with where and in what it was written.
#[derive(Debug, Clone)]
pub(crate) struct Ref {
    pub name: String,
    pub line: usize,
    /// What the reference is part of, for messages: `bind gslb vserver vs1`
    /// or `[[service]] svc1: site`. Shared by the references of one line.
    pub context: Arc<str>,
}

#[derive(Debug, Default)]
pub(crate) struct Draft {
    pub dns_listen: Vec<SocketAddr>,
    pub api_listen: Option<SocketAddr>,
    /// An explicit choice of the local site by name (native `server.local_site`).
    pub local_site: Option<Ref>,
    pub params: GslbParams,
    /// Line of the (last) place the GSLB parameters were set, for messages.
    pub params_line: usize,
    pub sites: Vec<DraftSite>,
    pub monitors: Vec<DraftMonitor>,
    pub services: Vec<DraftService>,
    pub vservers: Vec<DraftVServer>,
    pub service_bindings: Vec<ServiceBinding>,
    pub domain_bindings: Vec<DomainBinding>,
    pub monitor_bindings: Vec<MonitorBinding>,
    pub zones: Vec<DraftZone>,
    /// DNS actions, policies and global bindings.
    pub dns: crate::dns_policy::DnsDraft,
    /// Custom location entries and location files.
    pub locations: crate::locations::DraftLocations,
    /// Metric exchange credentials per site IP (`set ns rpcNode`,
    /// `[[rpc_node]]`), in order of first mention.
    pub rpc_nodes: Vec<DraftRpcNode>,
}

/// `set ns rpcNode IP ...` / `[[rpc_node]]`.
#[derive(Debug)]
pub(crate) struct DraftRpcNode {
    pub ip: IpAddr,
    /// The line that first set this IP.
    pub line: usize,
    pub password: Option<String>,
    pub secure: Option<bool>,
}

#[derive(Debug)]
pub(crate) struct DraftSite {
    pub name: String,
    pub line: usize,
    pub ip: IpAddr,
    pub public_ip: Option<IpAddr>,
    /// Set when the site was declared LOCAL, with the line that did it.
    pub local_line: Option<usize>,
    pub parent: Option<Ref>,
    /// Backup parents; the line of each ref is the line that set the list.
    pub backup_parents: Vec<BackupParent>,
    pub metric_exchange: bool,
    /// Explicit settings with their lines; unset means "the default for the
    /// site's role" (on for parents, off for children).
    pub nw_metric_exchange: Option<(bool, usize)>,
    pub session_exchange: Option<(bool, usize)>,
    pub trigger_monitor: TriggerMonitor,
}

/// One name in a site's backup parent list, with the 1-based character
/// column it was written at in its line, so that errors point at the name.
#[derive(Debug, Clone)]
pub(crate) struct BackupParent {
    pub site: Ref,
    pub column: Option<usize>,
}

#[derive(Debug)]
pub(crate) struct DraftMonitor {
    pub line: usize,
    /// The line that last set the interval or response timeout.
    pub timing_line: usize,
    pub monitor: Monitor,
}

#[derive(Debug)]
pub(crate) struct DraftService {
    pub name: String,
    pub line: usize,
    pub ip: IpAddr,
    pub port: u16,
    pub protocol: ServiceProtocol,
    /// `None` only when the front end already reported the site as missing.
    pub site: Option<Ref>,
    pub public_ip: Option<IpAddr>,
    pub public_port: Option<u16>,
    pub max_clients: u32,
    /// Where the service's load figures come from; `None` until a load
    /// setting is given (most services take the default, and the settings
    /// are most of a service's size).
    pub load: Option<Box<DraftLoad>>,
}

impl DraftService {
    /// The load settings, made on first use.
    pub(crate) fn load_mut(&mut self) -> &mut DraftLoad {
        self.load.get_or_insert_with(Box::default)
    }
}

/// The kinds of load source (`-loadSource`, `load.source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoadSourceKind {
    Monitors,
    Push,
    Prometheus,
}

impl LoadSourceKind {
    pub(crate) fn appliance_word(self) -> &'static str {
        match self {
            LoadSourceKind::Monitors => "MONITORS",
            LoadSourceKind::Push => "PUSH",
            LoadSourceKind::Prometheus => "PROMETHEUS",
        }
    }

    /// Parses `MONITORS`, `PUSH` or `PROMETHEUS`, case-insensitively.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        [
            LoadSourceKind::Monitors,
            LoadSourceKind::Push,
            LoadSourceKind::Prometheus,
        ]
        .into_iter()
        .find(|k| k.appliance_word().eq_ignore_ascii_case(text))
    }
}

/// A service's load source settings as written, each with its line;
/// `validate` checks them together.
#[derive(Debug, Default, Clone)]
pub(crate) struct DraftLoad {
    /// `None`: the default (monitors).
    pub source: Option<(LoadSourceKind, usize)>,
    pub url: Option<(String, usize)>,
    pub interval: Option<(std::time::Duration, usize)>,
    /// Metric selectors as written, per figure (indexed like
    /// [`LoadKind::ALL`]).
    pub metrics: [Option<(String, usize)>; 5],
}

impl DraftLoad {
    /// Index of a figure in [`DraftLoad::metrics`].
    pub(crate) fn slot(kind: LoadKind) -> usize {
        LoadKind::ALL.iter().position(|k| *k == kind).unwrap_or(0)
    }

    /// Forgets the Prometheus settings (when the source changes).
    pub(crate) fn clear_prometheus(&mut self) {
        self.url = None;
        self.interval = None;
        self.metrics = Default::default();
    }
}

/// Default scrape interval of a Prometheus load source.
pub(crate) const DEFAULT_LOAD_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);
/// Shortest and longest scrape intervals.
pub(crate) const MIN_LOAD_INTERVAL: std::time::Duration = std::time::Duration::from_millis(10);
pub(crate) const MAX_LOAD_INTERVAL: std::time::Duration = std::time::Duration::from_secs(3600);

#[derive(Debug)]
pub(crate) struct DraftVServer {
    pub line: usize,
    /// Everything but `backup_vserver` and `bindings`, which are resolved later.
    pub vserver: VServer,
    pub backup_vserver: Option<Ref>,
}

/// A service bound to a vserver.
#[derive(Debug)]
pub(crate) struct ServiceBinding {
    pub vserver: Ref,
    pub service: Ref,
    pub weight: u32,
}

/// A domain name bound to a vserver.
#[derive(Debug)]
pub(crate) struct DomainBinding {
    pub vserver: Ref,
    /// As written; `validate` normalizes and checks it.
    pub name: String,
    pub line: usize,
    pub ttl: u32,
    pub backup_ip: Option<IpAddr>,
}

/// A monitor bound to a service.
#[derive(Debug)]
pub(crate) struct MonitorBinding {
    pub service: Ref,
    pub monitor: Ref,
}

#[derive(Debug)]
pub(crate) struct DraftZone {
    /// Normalized (lower case, no trailing dot).
    pub apex: String,
    pub line: usize,
    /// `None` until an SOA is given; `validate` then synthesizes one from the
    /// first name server (see docs/config.md).
    pub soa: Option<(Soa, usize)>,
    /// Normalized name servers, each with its line.
    pub ns: Vec<(String, usize)>,
    pub ns_ttl: u32,
}

/// The appliance's defaults for an SOA record (`add dns soaRec`).
pub(crate) fn default_soa(origin_server: String, contact: String) -> Soa {
    Soa {
        origin_server,
        contact,
        serial: 100,
        refresh: 3600,
        retry: 3,
        expire: 3600,
        minimum: 5,
        ttl: 3600,
    }
}

/// The appliance's default TTL of NS records.
pub(crate) const DEFAULT_NS_TTL: u32 = 3600;
/// The appliance's default TTL of a GSLB domain.
pub(crate) const DEFAULT_DOMAIN_TTL: u32 = 5;
/// The largest TTL the appliance accepts (2^31 - 1, RFC 2181).
pub(crate) const MAX_TTL: u64 = 2_147_483_647;
/// Default persistence timeout (`-timeout`, minutes on the appliance).
pub(crate) const DEFAULT_PERSISTENCE_TIMEOUT: std::time::Duration =
    std::time::Duration::from_secs(120);
/// Most persistence timeout the appliance accepts: 1440 minutes.
pub(crate) const MAX_PERSISTENCE_TIMEOUT: std::time::Duration =
    std::time::Duration::from_secs(1440 * 60);
/// At most this many backup parents per site.
pub(crate) const MAX_BACKUP_PARENTS: usize = 5;
/// The longest monitor interval the appliance accepts: 20940 minutes.
pub(crate) const MAX_MONITOR_TIME: std::time::Duration = std::time::Duration::from_secs(20940 * 60);
