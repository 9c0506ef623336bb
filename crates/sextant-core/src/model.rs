//! The validated configuration model shared by every part of Sextant.
//!
//! `sextant-config` builds a [`Model`] from either configuration syntax; the
//! rest of the system only ever sees this one shape. Cross references are
//! typed indices (`SiteId`, `ServiceId`, ...) into the model's tables
//! ([`IdVec`]s), so a model is cheap to share behind an `Arc` and needs no
//! lookups by name at query time.

use std::net::IpAddr;
use std::time::Duration;

pub use crate::id::{DomainId, IdVec, MonitorId, ServiceId, SiteId, VServerId, ZoneId};

/// The whole validated configuration of one Sextant node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Model {
    pub sites: IdVec<SiteId, Site>,
    pub services: IdVec<ServiceId, Service>,
    pub vservers: IdVec<VServerId, VServer>,
    /// GSLB domain names, each bound to exactly one vserver.
    pub domains: IdVec<DomainId, Domain>,
    /// Names answered in datacenter mode (seed 002).
    pub dc_records: IdVec<crate::dc::DcRecordId, crate::dc::DcRecord>,
    /// Zones this node is authoritative for (from SOA/NS records).
    pub zones: IdVec<ZoneId, Zone>,
    /// The zones whose answers are signed (DNSSEC), with their keys.
    pub dnssec: Vec<crate::dnssec::SignedZone>,
    /// Static records of those zones, sorted by owner name then type
    /// ([`crate::records::sort_records`]); delegations are NS records here.
    pub records: Vec<crate::records::StaticRecord>,
    pub monitors: IdVec<MonitorId, Monitor>,
    /// Addresses the DNS server listens on (`add service NAME IP ADNS PORT`).
    pub dns_listen: Vec<std::net::SocketAddr>,
    /// Address of the REST API, if configured in the file.
    pub api_listen: Option<std::net::SocketAddr>,
    /// The REST API's token file (`[api] token_file`), as written: a
    /// relative path is relative to the configuration file's directory.
    pub api_token_file: Option<std::path::PathBuf>,
    pub params: GslbParams,
    /// `add dns action`.
    pub dns_actions: IdVec<crate::policy::DnsActionId, crate::policy::DnsAction>,
    /// `add dns policy`.
    pub dns_policies: IdVec<crate::policy::DnsPolicyId, crate::policy::DnsPolicy>,
    /// `bind dns global`, in evaluation order: the REQ_OVERRIDE bind point's
    /// bindings by ascending priority, then REQ_DEFAULT's.
    pub dns_global_bindings: Vec<crate::policy::PolicyBinding>,
    /// The location database (custom entries, location files, MaxMind
    /// databases) for static proximity and `MATCHES_LOCATION`. Shared, so
    /// cloning a model does not copy millions of ranges.
    pub locations: std::sync::Arc<crate::location_db::LocationDb>,
    /// The location files read into [`Model::locations`], in order: the
    /// path as the configuration writes it, and as it was opened (relative
    /// paths are relative to the configuration file). Config sync compares
    /// their digests between parents.
    pub location_files: Vec<(String, std::path::PathBuf)>,
    /// `set ns rpcNode`: metric exchange credentials per site IP.
    pub rpc_nodes: Vec<RpcNode>,
    /// The site this node runs as. `sextant-config` sets it from the single
    /// `LOCAL` site; `--local-site` overrides it.
    pub local_site: Option<SiteId>,
    /// VRRP (seed 004): the virtual routers whose VIPs this node shares
    /// with the other nodes of its site. Default: none, VRRP does not run.
    pub vrrp: crate::vrrp::VrrpSettings,
    /// The DNS server's identity and protections (`[dns]`, `set dns
    /// parameter`): NSID, TCP limits, response rate limiting, cookies.
    pub dns: DnsSettings,
    /// The services and vservers the configuration disables (`-state
    /// DISABLED`, `disable gslb service|vserver NAME`), in line order.
    pub config_disabled: Vec<crate::admin::ConfigDisabled>,
    /// Settings the file gives that are accepted but have no effect, one
    /// `FILE:LINE: text` per use, in line order (`sextant check` prints them,
    /// the server logs them at start). Diagnostics about the file, not
    /// configuration: they name the file, so the same configuration written
    /// in both syntaxes builds models that differ only here.
    pub warnings: Vec<String>,
}

impl Model {
    /// What decides whether service `id` is UP, as the state engine does
    /// it: its monitors, else metric exchange with its site (a remote site,
    /// both sites with metric exchange on), else nothing.
    pub fn health_source(&self, id: ServiceId) -> HealthSource {
        let s = self.service(id);
        if !s.monitors.is_empty() {
            return HealthSource::Monitors;
        }
        let exchanged = self.local_site.is_some_and(|local| {
            s.site != local && self.site(local).metric_exchange && self.site(s.site).metric_exchange
        });
        match (exchanged, s.health_monitor) {
            (true, _) => HealthSource::MetricExchange,
            (false, true) => HealthSource::None,
            (false, false) => HealthSource::NoneByChoice,
        }
    }

    pub fn site_by_name(&self, name: &str) -> Option<SiteId> {
        self.sites.position(|s| s.name.eq_ignore_ascii_case(name))
    }

    pub fn service_by_name(&self, name: &str) -> Option<ServiceId> {
        self.services
            .position(|s| s.name.eq_ignore_ascii_case(name))
    }

    pub fn vserver_by_name(&self, name: &str) -> Option<VServerId> {
        self.vservers
            .position(|s| s.name.eq_ignore_ascii_case(name))
    }

    pub fn monitor_by_name(&self, name: &str) -> Option<MonitorId> {
        self.monitors
            .position(|s| s.name.eq_ignore_ascii_case(name))
    }

    pub fn site(&self, id: SiteId) -> &Site {
        &self.sites[id]
    }

    pub fn service(&self, id: ServiceId) -> &Service {
        &self.services[id]
    }

    pub fn vserver(&self, id: VServerId) -> &VServer {
        &self.vservers[id]
    }

    pub fn domain(&self, id: DomainId) -> &Domain {
        &self.domains[id]
    }

    pub fn zone(&self, id: ZoneId) -> &Zone {
        &self.zones[id]
    }

    pub fn monitor(&self, id: MonitorId) -> &Monitor {
        &self.monitors[id]
    }

    /// Makes `name` the local site and every other site remote.
    pub fn set_local_site(&mut self, id: SiteId) {
        self.local_site = Some(id);
        for (i, site) in self.sites.iter_enumerated_mut() {
            site.kind = if i == id {
                SiteKind::Local
            } else {
                SiteKind::Remote
            };
        }
        // The local datacenter is always one of a datacenter-mode record's
        // groups (seed 002), also when the node's site is chosen at start.
        for rec in &mut self.dc_records {
            if !rec.groups.iter().any(|g| g.site == id)
                && rec.groups.len() < crate::dc::MAX_DC_GROUPS
            {
                rec.groups.push(crate::dc::DcGroup {
                    site: id,
                    service: None,
                });
            }
        }
    }
}

/// The start of a secret that `sextant import` wrote in place of one the
/// appliance saved encrypted with its own key. Metric exchange never
/// authenticates with it, so an imported file cannot run with a secret that
/// anyone reading the import's output knows.
pub const SECRET_PLACEHOLDER_PREFIX: &str = "SEXTANT-REENTER-";

/// Metric exchange settings for the node at one site IP (`set ns rpcNode`).
/// `Debug` never shows the password.
#[derive(Clone, PartialEq, Eq)]
pub struct RpcNode {
    /// The site IP these settings apply to.
    pub ip: IpAddr,
    /// Shared secret for the challenge-response; `None` means no
    /// authentication (the appliance's default password is not assumed).
    pub password: Option<String>,
    /// Use the TLS variant (port `mep_secure_port`) to and from this node.
    pub secure: bool,
    /// The source address of connections to this node (`-srcIP`); `None`
    /// connects from the local site IP. The peer knows a site by its site
    /// IP or public IP, so this must be one of those behind NAT.
    pub source_ip: Option<IpAddr>,
}

impl std::fmt::Debug for RpcNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcNode")
            .field("ip", &self.ip)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("secure", &self.secure)
            .field("source_ip", &self.source_ip)
            .finish()
    }
}

/// Where a local service's load figures come from, for the metric-driven
/// methods (LEASTCONNECTION, LEASTRESPONSETIME, ...).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum LoadSource {
    /// The bound monitors' response times only (LEASTRESPONSETIME).
    #[default]
    Monitors,
    /// Figures pushed with `POST /v1/services/NAME/metrics`.
    Push,
    /// Scraped from a Prometheus text endpoint.
    Prometheus(Box<PrometheusSource>),
}

/// A Prometheus text endpoint and the metric names that carry each figure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrometheusSource {
    /// e.g. `http://127.0.0.1:9101/metrics`.
    pub url: String,
    /// How often to scrape.
    pub interval: Duration,
    /// The metric name (optionally with a `{label="value"}` selector) of
    /// each figure, indexed like [`crate::LoadKind::EVERY`]
    /// (`metrics[kind.index()]`); `None`: that figure is not scraped.
    pub metrics: [Option<String>; crate::LoadKind::EVERY.len()],
}

impl PrometheusSource {
    /// The selector of one figure, if it is scraped.
    pub fn metric(&self, kind: crate::LoadKind) -> Option<&str> {
        self.metrics[kind.index()].as_deref()
    }
}

/// Whether a site is this node or another datacenter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SiteKind {
    #[default]
    Remote,
    Local,
}

/// When local monitors probe the services of a remote site (`-triggerMonitor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TriggerMonitor {
    /// Probe always, whatever metric exchange says.
    #[default]
    Always,
    /// Probe only while metric exchange with the site is down.
    MepDown,
    /// Probe while metric exchange is down or reports the service down.
    MepDownSvcDown,
}

/// One datacenter running Sextant.
#[derive(Debug, Clone, PartialEq)]
pub struct Site {
    pub name: String,
    /// The address the site's Sextant uses for metric exchange.
    pub ip: IpAddr,
    pub public_ip: Option<IpAddr>,
    pub kind: SiteKind,
    /// Set for a child site: its parent.
    pub parent: Option<SiteId>,
    /// Ordered backup parents (at most 5), for parent sites.
    pub backup_parents: Vec<SiteId>,
    pub metric_exchange: bool,
    pub nw_metric_exchange: bool,
    pub session_exchange: bool,
    pub trigger_monitor: TriggerMonitor,
    /// The metric exchange secret of the links this site accepts
    /// (`-sitePassword`); ahead of the rpcNode password of its IP.
    pub password: Option<SitePassword>,
}

/// A site's metric exchange secret. `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub enum SitePassword {
    /// The secret as the operator entered it.
    Clear(String),
    /// A stand-in that `sextant import` writes for a password the appliance
    /// saved encrypted with its own key: no secret is known, so the link
    /// must fail to authenticate rather than use a guessable one.
    Placeholder,
}

impl std::fmt::Debug for SitePassword {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SitePassword::Clear(_) => f.write_str("Clear(<redacted>)"),
            SitePassword::Placeholder => f.write_str("Placeholder"),
        }
    }
}

impl Site {
    /// A site with the appliance's defaults.
    pub fn new(name: impl Into<String>, ip: IpAddr) -> Self {
        Site {
            name: name.into(),
            ip,
            public_ip: None,
            kind: SiteKind::Remote,
            parent: None,
            backup_parents: Vec::new(),
            metric_exchange: true,
            nw_metric_exchange: true,
            session_exchange: true,
            trigger_monitor: TriggerMonitor::Always,
            password: None,
        }
    }
}

/// The protocol of a GSLB service or vserver, as the appliance names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceProtocol {
    Http,
    Ssl,
    Tcp,
    Udp,
    Dns,
    Any,
    SslBridge,
    SslTcp,
    Ftp,
    Rtsp,
    Nntp,
    Mysql,
    Mssql,
    Radius,
    Rdp,
    Sip,
}

impl ServiceProtocol {
    pub const ALL: &'static [(&'static str, ServiceProtocol)] = &[
        ("HTTP", ServiceProtocol::Http),
        ("SSL", ServiceProtocol::Ssl),
        ("TCP", ServiceProtocol::Tcp),
        ("UDP", ServiceProtocol::Udp),
        ("DNS", ServiceProtocol::Dns),
        ("ANY", ServiceProtocol::Any),
        ("SSL_BRIDGE", ServiceProtocol::SslBridge),
        ("SSL_TCP", ServiceProtocol::SslTcp),
        ("FTP", ServiceProtocol::Ftp),
        ("RTSP", ServiceProtocol::Rtsp),
        ("NNTP", ServiceProtocol::Nntp),
        ("MYSQL", ServiceProtocol::Mysql),
        ("MSSQL", ServiceProtocol::Mssql),
        ("RADIUS", ServiceProtocol::Radius),
        ("RDP", ServiceProtocol::Rdp),
        ("SIP_UDP", ServiceProtocol::Sip),
    ];

    /// Parses the appliance's protocol keyword, case-insensitively.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(s))
            .map(|(_, p)| *p)
    }

    pub fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, p)| *p == self)
            .map(|(n, _)| *n)
            .unwrap_or("ANY")
    }
}

/// One load-balanced address:port at a site.
#[derive(Debug, Clone, PartialEq)]
pub struct Service {
    pub name: String,
    pub ip: IpAddr,
    pub port: u16,
    pub protocol: ServiceProtocol,
    pub site: SiteId,
    /// The address handed out in DNS answers when the service is behind NAT.
    pub public_ip: Option<IpAddr>,
    pub public_port: Option<u16>,
    /// 0 means unlimited.
    pub max_clients: u32,
    /// Monitors bound to this service. With `mon_threshold` 0 all must be
    /// UP for the service to be UP; otherwise the weights of the UP ones
    /// must reach it ([`crate::health::monitors_up`]).
    pub monitors: Vec<MonitorId>,
    /// The weight of each binding in `monitors` (`-weight`, default 1); a
    /// missing entry is 1.
    pub monitor_weights: Vec<u32>,
    /// `-monThreshold`: 0 (the default) means every monitor must be UP.
    pub mon_threshold: u32,
    /// Where its load figures come from (local services only).
    pub load_source: LoadSource,
    /// CNAME-based GSLB (`-cnameEntry`): the name this service stands for,
    /// lower case, no trailing dot; its vserver answers with a CNAME to it.
    /// Such a service has no address (`ip` is unspecified).
    pub cname: Option<String>,
    /// `-healthMonitor NO`: the operator says deliberately that nothing is
    /// to check this service (it is UP unless a bound monitor or its site
    /// says otherwise). Default `true`.
    pub health_monitor: bool,
}

/// What decides whether a service is UP ([`Model::health_source`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthSource {
    /// The monitors bound to it (at a remote site with metric exchange,
    /// as `-triggerMonitor` says, besides what its site reports).
    Monitors,
    /// What its site reports over metric exchange.
    MetricExchange,
    /// Nothing: it is UP until something says otherwise.
    None,
    /// Nothing, and the configuration says so (`-healthMonitor NO`).
    NoneByChoice,
}

impl HealthSource {
    /// As the API and the CLI write it.
    pub fn as_str(self) -> &'static str {
        match self {
            HealthSource::Monitors => "monitors",
            HealthSource::MetricExchange => "metric_exchange",
            HealthSource::None => "none",
            HealthSource::NoneByChoice => "none_by_choice",
        }
    }

    /// Whether anything checks the service.
    pub fn checked(self) -> bool {
        matches!(self, HealthSource::Monitors | HealthSource::MetricExchange)
    }
}

impl Service {
    /// The address DNS answers carry for this service.
    pub fn answer_ip(&self) -> IpAddr {
        self.public_ip.unwrap_or(self.ip)
    }
}

/// A selection method (`-lbMethod` / `-backupLBMethod`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LbMethod {
    RoundRobin,
    LeastConnection,
    LeastResponseTime,
    LeastBandwidth,
    LeastPackets,
    SourceIpHash,
    CustomLoad,
    StaticProximity,
    Rtt,
}

impl LbMethod {
    pub const ALL: &'static [(&'static str, LbMethod)] = &[
        ("ROUNDROBIN", LbMethod::RoundRobin),
        ("LEASTCONNECTION", LbMethod::LeastConnection),
        ("LEASTRESPONSETIME", LbMethod::LeastResponseTime),
        ("LEASTBANDWIDTH", LbMethod::LeastBandwidth),
        ("LEASTPACKETS", LbMethod::LeastPackets),
        ("SOURCEIPHASH", LbMethod::SourceIpHash),
        ("CUSTOMLOAD", LbMethod::CustomLoad),
        ("STATICPROXIMITY", LbMethod::StaticProximity),
        ("RTT", LbMethod::Rtt),
    ];

    /// Parses the appliance's method keyword, case-insensitively.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(s))
            .map(|(_, m)| *m)
    }

    pub fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, m)| *m == self)
            .map(|(n, _)| *n)
            .unwrap_or("ROUNDROBIN")
    }
}

impl std::fmt::Display for LbMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A service bound to a vserver, with its weight for weighted round robin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding {
    pub service: ServiceId,
    /// 1..=100 on the appliance; default 1.
    pub weight: u32,
}

/// Source-IP persistence settings of a vserver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Persistence {
    /// How long a client stays with its service after its last query.
    pub timeout: Duration,
    /// Prefix lengths that group clients into one persistence entry.
    pub v4_mask: u8,
    pub v6_mask: u8,
}

/// A GSLB virtual server: a group of services and how to choose among them.
#[derive(Debug, Clone, PartialEq)]
pub struct VServer {
    pub name: String,
    pub protocol: ServiceProtocol,
    pub method: LbMethod,
    /// Used when `method` cannot decide; `None` means round robin.
    pub backup_method: Option<LbMethod>,
    pub persistence: Option<Persistence>,
    /// Empty down response: NODATA instead of a last-resort address.
    pub empty_down_response: bool,
    /// Multi-IP response: every UP service in one answer.
    pub multi_ip_response: bool,
    /// Use the EDNS Client Subnet address as the client's address.
    pub ecs: bool,
    pub backup_vserver: Option<VServerId>,
    pub bindings: Vec<Binding>,
    /// Prefix lengths for SOURCEIPHASH (`-netmask`, `-v6netmasklen`).
    pub hash_v4_mask: u8,
    pub hash_v6_mask: u8,
    /// RTT method: answers are balanced among the sites within this much
    /// of the smallest RTT (`-tolerance`, ms); 0 = the best site only.
    pub rtt_tolerance: Duration,
    /// CNAME-based GSLB (`-dnsRecordType CNAME`): answers with a CNAME to
    /// the chosen service's name instead of an address.
    pub cname: bool,
}

impl VServer {
    pub fn new(name: impl Into<String>, protocol: ServiceProtocol) -> Self {
        VServer {
            name: name.into(),
            protocol,
            method: LbMethod::LeastConnection,
            backup_method: None,
            persistence: None,
            empty_down_response: false,
            multi_ip_response: false,
            ecs: false,
            backup_vserver: None,
            bindings: Vec::new(),
            hash_v4_mask: 32,
            hash_v6_mask: 128,
            rtt_tolerance: Duration::ZERO,
            cname: false,
        }
    }

    /// Whether its answers may depend on the LDNS's RTTs (as its method or
    /// its backup method), so that a query must look its LDNS up.
    pub fn uses_rtt(&self) -> bool {
        self.method == LbMethod::Rtt || self.backup_method == Some(LbMethod::Rtt)
    }
}

/// A DNS name answered by a vserver.
#[derive(Debug, Clone, PartialEq)]
pub struct Domain {
    /// Lower case, no trailing dot.
    pub name: String,
    pub vserver: VServerId,
    pub ttl: u32,
    /// Answered when the vserver and its backup chain have no UP service.
    pub backup_ip: Option<IpAddr>,
}

/// Start-of-authority data of a zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Soa {
    /// Lower case, no trailing dot.
    pub origin_server: String,
    /// The contact mailbox in domain-name form (`hostmaster.example.com`).
    pub contact: String,
    pub serial: u32,
    pub refresh: u32,
    pub retry: u32,
    pub expire: u32,
    pub minimum: u32,
    pub ttl: u32,
}

/// A zone this node is authoritative for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zone {
    /// Lower case, no trailing dot.
    pub apex: String,
    pub soa: Soa,
    /// Name servers of the zone, lower case, no trailing dot.
    pub ns: Vec<String>,
    pub ns_ttl: u32,
}

/// What a monitor checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MonitorKind {
    /// ICMP echo.
    Ping,
    /// A TCP connection is accepted.
    Tcp,
    /// An HTTP request gets one of the expected status codes.
    Http(HttpCheck),
    /// The same over TLS.
    Https(HttpCheck),
    /// A DNS query gets the expected answer or response code.
    Dns(DnsCheck),
    /// A UDP datagram is not refused (and, if `receive` is set, answered).
    Udp(UdpCheck),
}

impl MonitorKind {
    pub fn type_name(&self) -> &'static str {
        match self {
            MonitorKind::Ping => "PING",
            MonitorKind::Tcp => "TCP",
            MonitorKind::Http(_) => "HTTP",
            MonitorKind::Https(_) => "HTTPS",
            MonitorKind::Dns(_) => "DNS",
            MonitorKind::Udp(_) => "UDP",
        }
    }
}

/// Settings of an HTTP(S) monitor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCheck {
    /// The request line, e.g. `GET /health` (the appliance's `-httpRequest`).
    pub request: String,
    /// Accepted status codes as inclusive ranges; default `200`.
    pub status_codes: Vec<(u16, u16)>,
    /// If set, the body must contain this text.
    pub body_contains: Option<String>,
    /// Extra header lines sent with the request as written
    /// (`-customHeaders`, escapes already processed), each ending in CR LF;
    /// empty: none.
    pub custom_headers: String,
}

/// Settings of a DNS monitor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsCheck {
    /// The name to query, without trailing dot.
    pub query: String,
    /// `A` or `AAAA`.
    pub query_type: DnsQueryType,
    /// If non-empty, one of these addresses must be in the answer.
    pub expect_addresses: Vec<IpAddr>,
    /// Accepted response codes (numeric); empty means NOERROR only.
    pub expect_rcodes: Vec<u8>,
}

/// Query types a DNS monitor can send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DnsQueryType {
    A,
    Aaaa,
    /// The zone's SOA record (the appliance's `-queryType Zone`): the server
    /// answers for the zone at all.
    Soa,
}

/// Settings of a UDP monitor.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UdpCheck {
    /// Payload to send.
    pub send: String,
    /// If set, a reply must arrive and contain this text.
    pub receive: Option<String>,
}

/// A health monitor (`add lb monitor`).
#[derive(Debug, Clone, PartialEq)]
pub struct Monitor {
    pub name: String,
    pub kind: MonitorKind,
    /// Time between probes; default 5 s.
    pub interval: Duration,
    /// How long one probe may take; default 2 s.
    pub response_timeout: Duration,
    /// Consecutive failures before DOWN; default 3.
    pub retries: u32,
    /// Consecutive successes before UP; default 1.
    pub success_retries: u32,
    /// Destination port override; `None` probes the service's port.
    pub dest_port: Option<u16>,
    /// Destination address override (`-destIP`); `None` probes the
    /// service's address. Lets one monitor watch a dependency (a database,
    /// a health endpoint on another host) on behalf of the service.
    pub dest_ip: Option<IpAddr>,
    /// While the service is DOWN by this monitor, it is probed this often
    /// instead of every `interval` (`-downTime`). `None` (the default):
    /// every `interval`, so a service is back as soon as it is healthy
    /// again; the appliance's default is 30 s, which a saved configuration
    /// writes out as `-downTime 30`.
    pub down_time: Option<Duration>,
    /// A successful probe means DOWN and a failed one UP (`-reverse YES`),
    /// e.g. to take a site out while a maintenance page answers.
    pub reverse: bool,
}

impl Monitor {
    /// The address this monitor probes for a service at `ip:port`: its
    /// `dest_ip` / `dest_port` where set. Always the service's real
    /// address, never its public (NAT) one.
    pub fn target(&self, ip: IpAddr, port: u16) -> std::net::SocketAddr {
        std::net::SocketAddr::new(self.dest_ip.unwrap_or(ip), self.dest_port.unwrap_or(port))
    }

    /// A monitor with the appliance's defaults.
    pub fn new(name: impl Into<String>, kind: MonitorKind) -> Self {
        Monitor {
            name: name.into(),
            kind,
            interval: Duration::from_secs(5),
            response_timeout: Duration::from_secs(2),
            retries: 3,
            success_retries: 1,
            dest_port: None,
            dest_ip: None,
            down_time: None,
            reverse: false,
        }
    }
}

/// GSLB-wide parameters (`set gslb parameter`).
#[derive(Debug, Clone, PartialEq)]
pub struct GslbParams {
    /// Metric exchange keepalive timeout (`-MEPKeepAliveTimeout`); default 10 s.
    pub mep_keepalive_timeout: Duration,
    /// RTT change that is worth sending to other sites (`-RTTTolerance`); default 5 ms.
    pub rtt_tolerance: Duration,
    /// LDNS grouping masks (`-ldnsMask`, `-v6ldnsMaskLen`).
    pub ldns_v4_mask: u8,
    pub ldns_v6_mask: u8,
    /// LDNS entry lifetime (`-ldnsEntryTimeout`); default 180 s.
    pub ldns_entry_timeout: Duration,
    /// LDNS probe order (`-ldnsProbeOrder`).
    pub ldns_probe_order: Vec<LdnsProbe>,
    /// Drop LDNS requests when metrics are missing (`-dropLdnsReq`).
    pub drop_ldns_requests: bool,
    /// Parents keep their configuration in sync (`-automaticConfigSync`).
    pub automatic_config_sync: bool,
    /// The configuration's sync counter (`-incarnation N`, `[gslb]
    /// incarnation`): which of two configurations is newer when parents
    /// sync (docs/config-sync.md). `None` when the file gives none.
    pub config_incarnation: Option<u64>,
    /// Metric exchange port; default 3011 (3009 for the secure variant).
    pub mep_port: u16,
    pub mep_secure_port: u16,
    /// The built-in LDNS monitors (`ldns-ping`, `ldns-dns`, `ldns-tcp`),
    /// tuned with `set lb monitor ldns-dns LDNS-DNS -interval ...`;
    /// `-ldnsProbeInterval` / `-ldnsProbeTimeout` set all three.
    pub ldns_ping: LdnsMonitor,
    pub ldns_dns: LdnsMonitor,
    pub ldns_tcp: LdnsMonitor,
    /// At most this many LDNS entries; the least recently queried one makes
    /// room for a new one. Default 100,000.
    pub ldns_max_entries: usize,
    /// At most this many new LDNS entries per second (more are counted and
    /// dropped), so spoofed sources cannot turn the site into a prober of
    /// arbitrary addresses. Default 100.
    pub ldns_new_per_second: u32,
    /// At most this many LDNS probes per second in all (more wait). Default 2,000.
    pub ldns_probes_per_second: u32,
    /// Datacenter mode: how often DC and service figures are read and the
    /// records' datacenters re-ranked (`-dcAccessPeriod`). Default 5 min.
    pub dc_access_period: Duration,
    /// How long a remote service that no monitor here decides keeps its
    /// state after metric exchange with its site goes down, so that a short
    /// outage of the link does not take the site's answers away
    /// (`-GSLBSvcStateDelayTime`, 0 to 3600 s). Default 0: DOWN at once.
    pub svc_state_delay: Duration,
    /// How long after metric exchange with a site comes up what it reports
    /// is not honoured, while its own monitors are still learning
    /// (`-SvcStateLearningTime`, 0 to 3600 s). Default 0.
    pub svc_state_learning: Duration,
}

/// One built-in LDNS probe monitor's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LdnsMonitor {
    /// How often each LDNS is probed; default 5 s.
    pub interval: Duration,
    /// How long a probe waits for its answer; default 2 s.
    pub timeout: Duration,
    /// Port of the DNS probes (`-destPort`); default 53. Unused by PING.
    pub dest_port: Option<u16>,
    /// Attempts of this kind in one cycle before the cycle moves on to the
    /// next kind in the order (`-retries`, the appliance's "probes to send
    /// to establish that a probe failed"); default 1, as seed 003 describes
    /// it: no answer within the timeout, and the next monitor is used.
    pub retries: u8,
}

impl Default for LdnsMonitor {
    fn default() -> Self {
        LdnsMonitor {
            interval: Duration::from_secs(5),
            timeout: Duration::from_secs(2),
            dest_port: None,
            retries: 1,
        }
    }
}

impl GslbParams {
    /// The settings of the monitor of `kind`.
    pub fn ldns_monitor(&self, kind: LdnsProbe) -> &LdnsMonitor {
        match kind {
            LdnsProbe::Ping => &self.ldns_ping,
            LdnsProbe::DnsUdp => &self.ldns_dns,
            LdnsProbe::DnsTcp => &self.ldns_tcp,
        }
    }

    /// The settings of the monitor of `kind`, to change them.
    pub fn ldns_monitor_mut(&mut self, kind: LdnsProbe) -> &mut LdnsMonitor {
        match kind {
            LdnsProbe::Ping => &mut self.ldns_ping,
            LdnsProbe::DnsUdp => &mut self.ldns_dns,
            LdnsProbe::DnsTcp => &mut self.ldns_tcp,
        }
    }
}

impl Default for GslbParams {
    fn default() -> Self {
        GslbParams {
            mep_keepalive_timeout: Duration::from_secs(10),
            rtt_tolerance: Duration::from_millis(5),
            ldns_v4_mask: 32,
            ldns_v6_mask: 128,
            ldns_entry_timeout: Duration::from_secs(180),
            ldns_probe_order: vec![LdnsProbe::Ping, LdnsProbe::DnsUdp, LdnsProbe::DnsTcp],
            drop_ldns_requests: false,
            automatic_config_sync: false,
            config_incarnation: None,
            mep_port: 3011,
            mep_secure_port: 3009,
            ldns_ping: LdnsMonitor::default(),
            ldns_dns: LdnsMonitor::default(),
            ldns_tcp: LdnsMonitor::default(),
            ldns_max_entries: 100_000,
            ldns_new_per_second: 100,
            ldns_probes_per_second: 2_000,
            dc_access_period: Duration::from_secs(300),
            svc_state_delay: Duration::ZERO,
            svc_state_learning: Duration::ZERO,
        }
    }
}

/// One kind of LDNS round-trip probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LdnsProbe {
    Ping,
    DnsUdp,
    DnsTcp,
}

impl LdnsProbe {
    pub const ALL: [LdnsProbe; 3] = [LdnsProbe::Ping, LdnsProbe::DnsUdp, LdnsProbe::DnsTcp];

    /// The built-in monitor's name (`ldns-ping`, ...), as the API shows it.
    pub fn monitor_name(self) -> &'static str {
        match self {
            LdnsProbe::Ping => "ldns-ping",
            LdnsProbe::DnsUdp => "ldns-dns",
            LdnsProbe::DnsTcp => "ldns-tcp",
        }
    }
}

/// The DNS server's identity and protections, as configured (`[dns]` in
/// the native syntax, `set dns parameter` in the appliance's). Part of the
/// model so that a reload changes them like everything else, and a failed
/// reload keeps the old ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsSettings {
    /// RFC 5001 name server identifier, sent to clients that ask for it
    /// (an empty NSID option), so an operator can tell which node answered.
    pub nsid: Option<Vec<u8>>,
    /// A TCP connection that has not delivered a complete query for this
    /// long (idle, or stalled in the middle of one) is closed.
    pub tcp_idle_timeout: std::time::Duration,
    /// Open TCP connections at most; new ones beyond are closed at once.
    pub tcp_max_connections: usize,
    /// Response rate limiting over UDP; `None`: off.
    pub rrl: Option<RrlSettings>,
    /// DNS cookies (RFC 7873, RFC 9018); `None`: off (cookie options are
    /// ignored, as by a server that does not implement them).
    pub cookies: Option<CookieSettings>,
}

impl DnsSettings {
    /// Knot's tcp-idle-timeout.
    pub const DEFAULT_TCP_IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
    pub const DEFAULT_TCP_MAX_CONNECTIONS: usize = 1024;
}

impl Default for DnsSettings {
    fn default() -> Self {
        DnsSettings {
            nsid: None,
            tcp_idle_timeout: Self::DEFAULT_TCP_IDLE_TIMEOUT,
            tcp_max_connections: Self::DEFAULT_TCP_MAX_CONNECTIONS,
            rrl: None,
            cookies: None,
        }
    }
}

/// Response rate limiting (as Knot's mod-rrl and NSD's rrl-*): a token
/// bucket per client prefix, so a spoofed flood aimed at a victim's
/// addresses is held to a few responses per second per prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RrlSettings {
    /// Responses per second allowed per prefix (the bucket also holds one
    /// second's worth, as a burst).
    pub responses_per_second: u32,
    /// Every Nth limited response is sent truncated (TC=1, no answer) so a
    /// real client retries over TCP; 0 drops every limited response, 1
    /// truncates every one.
    pub slip: u32,
    /// Client prefixes a bucket covers.
    pub ipv4_prefix: u8,
    pub ipv6_prefix: u8,
    /// Sources never limited (network address, prefix length).
    pub exempt: Vec<(std::net::IpAddr, u8)>,
    /// Buckets in the fixed-size table (rounded up to a power of two).
    pub table_size: usize,
}

impl RrlSettings {
    pub const DEFAULT_SLIP: u32 = 2;
    pub const DEFAULT_IPV4_PREFIX: u8 = 24;
    pub const DEFAULT_IPV6_PREFIX: u8 = 56;
    pub const DEFAULT_TABLE_SIZE: usize = 65536;
}

/// DNS cookies: the server secret is made at start from the OS's random
/// source and replaced every `secret_rotation`; the previous one is still
/// accepted for one more period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CookieSettings {
    pub secret_rotation: std::time::Duration,
}

impl CookieSettings {
    pub const DEFAULT_SECRET_ROTATION: std::time::Duration = std::time::Duration::from_secs(3600);
}
