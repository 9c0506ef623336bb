//! The intermediate form both syntaxes are read into.
//!
//! A [`Draft`] holds the objects with their names, the lines they were
//! written on, and references as names ([`Ref`]). Each front end only checks
//! what it can see locally (value syntax, ranges); `validate` then resolves
//! references and checks the whole, in one place for both syntaxes, so the
//! two syntaxes accept exactly the same configurations.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use sextant_core::{
    Balance, ClientCriterion, DcCriterion, DcSelection, GslbParams, LoadKind, Monitor,
    ServiceCriterion, ServiceProtocol, Soa, TriggerMonitor, VServer,
};

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
    DcRecord,
}

impl Kind {
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Kind::Site => "site",
            Kind::Service => "service",
            Kind::VServer => "vserver",
            Kind::Monitor => "monitor",
            Kind::DcRecord => "dcRecord",
        }
    }

    /// The native table that defines objects of this kind.
    fn table(self) -> &'static str {
        match self {
            Kind::DcRecord => "dc_record",
            other => other.noun(),
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
                    Kind::DcRecord => "add gslb dcRecord",
                };
                format!("add it with \"{cmd}\"")
            }
            Syntax::Toml => format!("add a [[{}]] table with name = \"{name}\"", kind.table()),
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
    /// `[api] token_file`, as written.
    pub api_token_file: Option<std::path::PathBuf>,
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
    /// Monitors the file adds or changes that Sextant cannot probe (ARP,
    /// TCP-ECV, ...): accepted with a warning, an error once bound.
    pub unprobed_monitors: Vec<UnprobedMonitor>,
    pub zones: Vec<DraftZone>,
    /// DNSSEC keys and the zones they sign.
    pub dnssec: crate::dnssec::DraftDnssec,
    /// Static records (`add dns addRec ...`, `[[record]]`), in file order.
    pub records: Vec<DraftRecord>,
    /// DNS actions, policies and global bindings.
    pub dns: crate::dns_policy::DnsDraft,
    /// Custom location entries and location files.
    pub locations: crate::locations::DraftLocations,
    /// Metric exchange credentials per site IP (`set ns rpcNode`,
    /// `[[rpc_node]]`), in order of first mention.
    pub rpc_nodes: Vec<DraftRpcNode>,
    /// Datacenter-mode records (`add gslb dcRecord`, `[[dc_record]]`).
    pub dc_records: Vec<DraftDcRecord>,
    /// Their addresses and fail-safe records, in binding order.
    pub dc_bindings: Vec<DcBinding>,
    /// VRRP: the VRIDs, what is bound to them and the global parameters.
    pub vrrp: crate::vrrp::DraftVrrp,
    /// NSID, TCP limits, rate limiting, cookies (`set dns parameter`,
    /// `[dns]`).
    pub dns_server: crate::dns_settings::DraftDnsServer,
    /// `-state ENABLED|DISABLED` on `add gslb service|vserver`, and
    /// `enable|disable gslb service|vserver NAME`, in line order: the last
    /// one of an object says whether the configuration disables it.
    pub admin: Vec<DraftAdmin>,
}

/// One line that enables or disables a service or a vserver.
#[derive(Debug)]
pub(crate) struct DraftAdmin {
    /// [`Kind::Service`] or [`Kind::VServer`].
    pub kind: Kind,
    pub name: Ref,
    pub disabled: bool,
}

/// `set ns rpcNode IP ...` / `[[rpc_node]]`.
#[derive(Debug)]
pub(crate) struct DraftRpcNode {
    pub ip: IpAddr,
    /// The line that first set this IP.
    pub line: usize,
    pub password: Option<String>,
    pub secure: Option<bool>,
    /// `-srcIP`: `None` when not given or `*`.
    pub source_ip: Option<IpAddr>,
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
    /// `-sitePassword` / `site_password`.
    pub password: Option<sextant_core::SitePassword>,
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
    /// The vService name (`-vServiceName`, `vservice_name`) with the line
    /// that set it: what a Service Based datacenter-mode record measures.
    pub vservice_name: Option<(String, usize)>,
    /// `-cnameEntry`: the name a CNAME-based service stands for.
    pub cname: Option<String>,
    /// `-monThreshold`: 0 means every bound monitor must be UP.
    pub mon_threshold: u32,
    /// `-healthMonitor YES|NO` and its line: NO says nothing is to check
    /// the service (the appliance then treats it as UP).
    pub health_monitor: Option<(bool, usize)>,
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
    /// [`LoadKind::EVERY`]).
    pub metrics: [Option<(String, usize)>; LoadKind::EVERY.len()],
}

impl DraftLoad {
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

/// `add gslb dcRecord` / `[[dc_record]]`: a name answered in datacenter
/// mode. Settings that other settings are checked against carry the line
/// that set them (`set gslb dcRecord` may change them on a later line).
#[derive(Debug)]
pub(crate) struct DraftDcRecord {
    /// As written; `validate` normalizes and checks it.
    pub name: String,
    pub line: usize,
    pub ttl: u32,
    /// `None` when the keyword given is not one (reported already): the
    /// settings checked against the selection are then not checked.
    pub selection: Option<DcSelectionKind>,
    /// The line that set the selection; `None` while it is the default.
    pub selection_line: Option<usize>,
    /// The criterion's keyword as written; `validate` checks it against
    /// the selection.
    pub criterion: Option<(String, usize)>,
    pub vservice_name: Option<(String, usize)>,
    pub total_dcs: Option<(u32, usize)>,
    pub balance: Balance,
    /// The sites in datacenter order, each with the line that gave it.
    pub dc_order: Option<Vec<Ref>>,
}

impl DraftDcRecord {
    /// A record with the defaults: ALL_DC_RECORDS, one datacenter, round
    /// robin, the TTL of a GSLB domain.
    pub(crate) fn new(name: String, line: usize) -> Self {
        DraftDcRecord {
            name,
            line,
            ttl: DEFAULT_DOMAIN_TTL,
            selection: Some(DcSelectionKind::AllDcRecords),
            selection_line: None,
            criterion: None,
            vservice_name: None,
            total_dcs: None,
            balance: Balance::RoundRobin,
            dc_order: None,
        }
    }

    /// Sets the selection on `line`. A different selection than before
    /// forgets the criterion and vService name given on earlier lines, which
    /// belonged to the old one (options of `line` then apply to the new one).
    pub(crate) fn set_selection(&mut self, kind: Option<DcSelectionKind>, line: usize) {
        if kind != self.selection {
            self.criterion = None;
            self.vservice_name = None;
        }
        self.selection = kind;
        self.selection_line = Some(line);
    }
}

/// A DC Selection without its criterion (`-dcSelection`, `dc_selection`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DcSelectionKind {
    AllDcRecords,
    DcBased,
    ServiceBased,
    ClientBased,
}

impl DcSelectionKind {
    pub(crate) const ALL: [DcSelectionKind; 4] = [
        DcSelectionKind::AllDcRecords,
        DcSelectionKind::DcBased,
        DcSelectionKind::ServiceBased,
        DcSelectionKind::ClientBased,
    ];

    /// The appliance's keyword (`DC_BASED`); the native one is its lower case.
    pub(crate) fn appliance_word(self) -> &'static str {
        match self {
            DcSelectionKind::AllDcRecords => "ALL_DC_RECORDS",
            DcSelectionKind::DcBased => "DC_BASED",
            DcSelectionKind::ServiceBased => "SERVICE_BASED",
            DcSelectionKind::ClientBased => "CLIENT_BASED",
        }
    }

    /// Parses a keyword of either syntax, case-insensitively.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.appliance_word().eq_ignore_ascii_case(text))
    }

    /// The keywords of this selection's criteria, as the core names them
    /// (none for ALL_DC_RECORDS, which ranks by nothing).
    pub(crate) fn criteria(self) -> Vec<&'static str> {
        match self {
            DcSelectionKind::AllDcRecords => Vec::new(),
            DcSelectionKind::DcBased => DcCriterion::ALL.iter().map(|c| c.name()).collect(),
            DcSelectionKind::ServiceBased => {
                ServiceCriterion::ALL.iter().map(|c| c.name()).collect()
            }
            DcSelectionKind::ClientBased => ClientCriterion::ALL.iter().map(|c| c.name()).collect(),
        }
    }

    /// The selection with the criterion `word` (case-insensitive), if it
    /// is one of this selection's; `service` is the vService name of a
    /// Service Based one.
    pub(crate) fn with_criterion(self, word: &str, service: &str) -> Option<DcSelection> {
        let is = |name: &str| name.eq_ignore_ascii_case(word);
        match self {
            DcSelectionKind::AllDcRecords => None,
            DcSelectionKind::DcBased => DcCriterion::ALL
                .into_iter()
                .find(|c| is(c.name()))
                .map(DcSelection::DcBased),
            DcSelectionKind::ServiceBased => ServiceCriterion::ALL
                .into_iter()
                .find(|c| is(c.name()))
                .map(|criterion| DcSelection::ServiceBased {
                    criterion,
                    service: service.to_string(),
                }),
            DcSelectionKind::ClientBased => ClientCriterion::ALL
                .into_iter()
                .find(|c| is(c.name()))
                .map(DcSelection::ClientBased),
        }
    }
}

/// When an address of a datacenter-mode record counts as healthy (`-hc`,
/// `hc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DcHc {
    Service,
    Site,
    ServiceAndSite,
    None,
}

impl DcHc {
    pub(crate) const ALL: [DcHc; 4] = [DcHc::Service, DcHc::Site, DcHc::ServiceAndSite, DcHc::None];

    /// The appliance's keyword (`SERVICE_AND_SITE`); the native one is its
    /// lower case.
    pub(crate) fn appliance_word(self) -> &'static str {
        match self {
            DcHc::Service => "SERVICE",
            DcHc::Site => "SITE",
            DcHc::ServiceAndSite => "SERVICE_AND_SITE",
            DcHc::None => "NONE",
        }
    }

    /// Parses a keyword of either syntax, case-insensitively.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.appliance_word().eq_ignore_ascii_case(text))
    }
}

/// What a datacenter-mode address answers with.
#[derive(Debug)]
pub(crate) enum DcTarget {
    /// A GSLB service's answer address (`-serviceName`, `service`).
    Service(Ref),
    /// An address as given (`-IPAddress`, `ip`).
    Ip(IpAddr),
}

/// One address of a datacenter-mode record.
#[derive(Debug)]
pub(crate) struct DraftDcAddress {
    /// The datacenter it belongs to.
    pub site: Ref,
    pub target: DcTarget,
    /// 0..=100, checked by the front end.
    pub weight: u32,
    /// `None`: the default for the target (SERVICE for a service, NONE
    /// for an address).
    pub hc: Option<(DcHc, usize)>,
    pub line: usize,
}

/// `bind gslb dcRecord` / an entry of a `[[dc_record]]`.
#[derive(Debug)]
pub(crate) struct DcBinding {
    pub record: Ref,
    /// The record's index in [`Draft::dc_records`] when the binding is
    /// written in its record's own table (TOML); otherwise the record is
    /// found by `record`'s name.
    pub of: Option<usize>,
    pub bound: DcBound,
}

#[derive(Debug)]
pub(crate) enum DcBound {
    Address(DraftDcAddress),
    /// A fail-safe record, with its line.
    FailSafe(IpAddr, usize),
}

/// A monitor Sextant cannot probe, see [`Draft::unprobed_monitors`].
#[derive(Debug)]
pub(crate) struct UnprobedMonitor {
    pub name: String,
    /// The first line that added or changed it.
    pub line: usize,
    pub type_word: String,
    /// Why it cannot be probed, for the operator.
    pub why: &'static str,
}

/// A monitor bound to a service.
#[derive(Debug)]
pub(crate) struct MonitorBinding {
    pub service: Ref,
    pub monitor: Ref,
    /// `-weight` of the binding (1 to 100, default 1): what the monitor
    /// adds towards the service's `-monThreshold` when UP.
    pub weight: u32,
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
    /// The line of `add dns zone APEX -proxyMode NO` (or a native
    /// `[[zone]]`): the name is a zone of ours even when it has only NS
    /// records and lies below another zone. Without it, an NS-only name
    /// below one of our zones is a delegation (see `static_records`).
    pub declared: Option<usize>,
}

/// Default TTL of a static record (the appliance's).
pub(crate) const DEFAULT_RECORD_TTL: u32 = 3600;

/// One static record as written: `validate` places it in its zone and
/// checks it against the others.
#[derive(Debug)]
pub(crate) struct DraftRecord {
    /// Normalized (lower case, no trailing dot); targets in `data` too.
    pub name: String,
    pub line: usize,
    pub ttl: u32,
    pub data: sextant_core::RecordData,
    /// The command or table, for messages (`add dns addRec www.example.com`).
    pub context: Arc<str>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dc_keywords_parse_in_either_case() {
        for kind in DcSelectionKind::ALL {
            let word = kind.appliance_word();
            assert_eq!(DcSelectionKind::parse(word), Some(kind));
            assert_eq!(
                DcSelectionKind::parse(&word.to_ascii_lowercase()),
                Some(kind)
            );
        }
        assert_eq!(DcSelectionKind::parse("DC BASED"), None);
        for hc in DcHc::ALL {
            assert_eq!(
                DcHc::parse(&hc.appliance_word().to_ascii_lowercase()),
                Some(hc)
            );
        }
        assert_eq!(DcHc::parse("ALWAYS"), None);
    }

    /// The selections' keywords are the core's names, and each criterion
    /// word builds its selection.
    #[test]
    fn criteria_are_the_cores() {
        for kind in DcSelectionKind::ALL {
            for word in kind.criteria() {
                let sel = kind.with_criterion(&word.to_ascii_lowercase(), "web");
                let sel = sel.expect("criterion of its selection");
                assert_eq!(sel.name(), kind.appliance_word());
                assert_eq!(sel.criterion_name(), Some(word));
            }
        }
        assert!(DcSelectionKind::AllDcRecords.criteria().is_empty());
        assert_eq!(
            DcSelectionKind::ServiceBased.with_criterion("cpu", "web"),
            Some(DcSelection::ServiceBased {
                criterion: ServiceCriterion::Cpu,
                service: "web".into()
            })
        );
        assert_eq!(DcSelectionKind::DcBased.with_criterion("HOPS", ""), None);
        assert_eq!(
            DcSelectionKind::AllDcRecords.with_criterion("CPU", ""),
            None
        );
    }

    #[test]
    fn another_selection_forgets_its_criterion() {
        let mut r = DraftDcRecord::new("a.example".into(), 1);
        r.set_selection(Some(DcSelectionKind::DcBased), 1);
        r.criterion = Some(("CPU".into(), 1));
        r.set_selection(Some(DcSelectionKind::DcBased), 2);
        assert!(r.criterion.is_some());
        r.set_selection(Some(DcSelectionKind::ClientBased), 3);
        assert!(r.criterion.is_none());
        assert_eq!(r.selection_line, Some(3));
    }
}
