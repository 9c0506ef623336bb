//! The JSON shapes of Sextant's REST API.
//!
//! The daemon serialises these and clients (the CLI, tests, dashboards)
//! deserialise them, so both sides agree on one definition. Fields are only
//! ever added, never renamed, so older clients keep working.

// Pure: no unsafe code, and (crate clippy.toml) no clock, socket, file or
// spawned task.
#![forbid(unsafe_code)]

use serde::{Deserialize, Serialize};

/// `GET /v1/ready` and `GET /v1/live` when the answer is yes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Probe {
    /// The configuration generation in force.
    pub generation: u64,
}

/// `GET /v1/status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Status {
    pub version: String,
    /// The commit built (12 hex digits), or "unknown" outside a checkout.
    #[serde(default)]
    pub commit: String,
    /// The date of that commit (YYYY-MM-DD, UTC), the build's date.
    #[serde(default)]
    pub build_date: String,
    /// The site this node runs as, if the configuration names one.
    pub local_site: Option<String>,
    /// Bumps on every successful configuration (re)load.
    pub generation: u64,
    /// The configuration file in use.
    pub config_file: String,
    /// Seconds since the process started.
    pub uptime_seconds: u64,
    /// The last reload attempt that failed, if the most recent one did.
    pub last_reload_error: Option<String>,
    pub dns: DnsCounters,
    /// Metric exchange events since start; null when it is not running.
    pub mep: Option<MepCounters>,
    /// The running configuration holds changes (`sextant cli` commands,
    /// `POST /v1/config/commands`) not written to the file yet: `save ns
    /// config` (`POST /v1/config/save`) writes them; a restart drops them.
    #[serde(default)]
    pub config_unsaved: bool,
    /// How many commands were applied since the file was last written.
    #[serde(default)]
    pub config_unsaved_commands: usize,
    /// When the first of them was applied (RFC 3339), if any.
    #[serde(default)]
    pub config_unsaved_since: Option<String>,
}

/// Metric exchange events since start.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MepCounters {
    pub peer_up: u64,
    pub peer_down: u64,
    /// Child sites this node took over as a backup parent.
    pub adopted: u64,
    /// Taken-over child sites that went back (or away).
    pub released: u64,
    pub adoption_refused: u64,
    /// (Child) times the current parent changed.
    pub parent_changed: u64,
    pub auth_failed: u64,
    pub bad_frames: u64,
    pub refused_connections: u64,
}

/// `POST /v1/services/NAME/metrics`: load figures of a local service.
/// Missing fields mean "not measured". `GET /v1/services` shows each
/// service's figures in the same shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PushMetrics {
    pub connections: Option<u64>,
    pub response_time_ms: Option<f64>,
    pub bandwidth_bps: Option<u64>,
    pub packets_ps: Option<u64>,
    pub custom_load: Option<u32>,
    /// The service's own CPU and memory use, percent (0-100), requests and
    /// new sessions per second, healthy backends behind it: datacenter
    /// mode's Service Based figures.
    #[serde(default)]
    pub cpu_percent: Option<u32>,
    #[serde(default)]
    pub memory_percent: Option<u32>,
    #[serde(default)]
    pub requests_ps: Option<u64>,
    #[serde(default)]
    pub new_sessions_ps: Option<u64>,
    #[serde(default)]
    pub healthy_backends: Option<u64>,
}

/// Totals since start.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DnsCounters {
    pub queries_udp: u64,
    pub queries_tcp: u64,
    pub noerror: u64,
    pub nxdomain: u64,
    pub refused: u64,
    pub formerr: u64,
    pub servfail: u64,
    pub notimp: u64,
    pub badvers: u64,
    pub truncated: u64,
    pub dropped: u64,
    /// TCP connections closed at once because the connection cap was hit.
    pub tcp_rejected: u64,
    /// UDP responses over the rate limit (dropped or slipped).
    #[serde(default)]
    pub rate_limited: u64,
    /// Of those, the ones sent truncated (TC=1) so the client retries over TCP.
    #[serde(default)]
    pub slipped: u64,
    /// Queries with a valid server cookie (never rate limited).
    #[serde(default)]
    pub cookie_valid: u64,
    /// Queries with a server cookie that is not valid (answered with a fresh one).
    #[serde(default)]
    pub cookie_invalid: u64,
    /// TCP connections closed for idleness or a stalled query.
    #[serde(default)]
    pub tcp_idle_closed: u64,
    /// Frames the XDP path (`--xdp-interface`) took off its interface; the
    /// queries among them count in `queries_udp` too.
    #[serde(default)]
    pub queries_xdp: u64,
}

/// Health of a service as this node sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum State {
    Up,
    Down,
}

/// One entry of `GET /v1/services`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Service {
    pub name: String,
    pub site: String,
    pub ip: String,
    pub port: u16,
    pub public_ip: Option<String>,
    pub state: State,
    /// RFC 3339 time of the last state change; null if it never changed.
    pub last_change: Option<String>,
    /// Why the service has its state (last monitor verdict, or "no monitor bound").
    pub reason: String,
    pub monitors: Vec<MonitorState>,
    /// "enabled", "disabled" or "draining": what the operator set
    /// (runtime maintenance), separate from `state`. A service of a
    /// disabled site reads "disabled".
    #[serde(default = "enabled")]
    pub admin_state: String,
    /// The operator's reason, if one was given.
    #[serde(default)]
    pub admin_reason: Option<String>,
    /// RFC 3339 time the operator set it; null while enabled.
    #[serde(default)]
    pub admin_since: Option<String>,
    /// The load figures DNS decides with now: pushed here, measured, or
    /// reported by the service's site (null: not measured).
    #[serde(default)]
    pub load: PushMetrics,
    /// What decides whether the service is UP: "monitors" (bound to it),
    /// "metric_exchange" (what its site reports), "none" (nothing: it is
    /// UP whatever happens to it; bind a monitor) or "none_by_choice"
    /// (nothing, as the configuration says with `-healthMonitor NO`).
    #[serde(default = "monitors")]
    #[schema(example = "monitors")]
    pub health_source: String,
    /// false when nothing checks the service (`health_source` "none" or
    /// "none_by_choice").
    #[serde(default = "yes")]
    pub checked: bool,
}

fn enabled() -> String {
    "enabled".to_string()
}

fn monitors() -> String {
    "monitors".to_string()
}

fn yes() -> bool {
    true
}

/// The state of one monitor bound to a service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MonitorState {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// UP, DOWN, or UNKNOWN before the first probe result.
    pub state: String,
    pub last_detail: Option<String>,
    pub last_response_ms: Option<f64>,
}

/// One entry of `GET /v1/sites`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Site {
    pub name: String,
    pub ip: String,
    pub public_ip: Option<String>,
    /// "local" or "remote".
    pub role: String,
    /// "parent", "child" or "flat".
    #[serde(rename = "type")]
    pub kind: String,
    pub parent: Option<String>,
    /// "UP", "DOWN" or "n/a" (this node, or metric exchange not running).
    pub mep: String,
    /// The child's parent right now as this node knows it (a backup parent
    /// while it has taken the child over); null for parents.
    pub current_parent: Option<String>,
    /// This node took the child over in place of this parent.
    pub adopted_for: Option<String>,
    /// Reachable only through this parent's relay.
    pub via: Option<String>,
    /// RFC 3339 time of the last message from (or about) the site.
    pub last_message: Option<String>,
    /// Round-trip time of the direct link, from keepalives.
    pub link_rtt_ms: Option<f64>,
    /// Metric exchange keepalives this node sent to the site since it
    /// started (over every session), and those whose answer never came
    /// (counted when the next keepalive is due, or at the session's close
    /// after a whole keepalive interval). 0 for this node.
    #[serde(default)]
    pub keepalives_sent: u64,
    #[serde(default)]
    pub keepalives_lost: u64,
    /// This node's direct link with the site: "peer", "to-child", "adopted", "to-parent".
    pub link: Option<String>,
    /// The direct link runs over TLS (the secure variant): its messages,
    /// config sync's included, are encrypted. Null without a direct link.
    #[serde(default)]
    pub link_secure: Option<bool>,
    /// Why metric exchange with the site last went DOWN.
    pub last_down_reason: Option<String>,
    /// The site's own metric exchange links as it last reported them (each
    /// site tells the others, at once when one goes up or down); null for
    /// this node (its links are the other entries' `link` and `mep`) and
    /// for a site that never reported them (an older version).
    #[serde(default)]
    pub reported_links: Option<Vec<ReportedLink>>,
    /// How long ago that report came.
    #[serde(default)]
    pub reported_links_age_seconds: Option<f64>,
    /// The site's CPU and memory use, as it last reported (or, for this
    /// node, as measured here).
    pub cpu_percent: Option<f64>,
    pub memory_percent: Option<f64>,
    /// Config sync (parents only): this node's version for the local site,
    /// where each peer parent stands for the others; absent for children
    /// and for sites this node does not sync with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_sync: Option<SiteConfigSync>,
}

/// One link a site reported (`GET /v1/sites` `reported_links`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReportedLink {
    /// The site at the other end.
    pub site: String,
    /// The reporting site's side of it: "peer", "to-child", "adopted", "to-parent".
    pub kind: String,
    /// Its session is up.
    pub up: bool,
}

/// `GET /v1/explain`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Explain {
    pub name: String,
    #[serde(rename = "type")]
    pub qtype: String,
    pub client: String,
    pub ecs: Option<String>,
    pub rcode: String,
    pub answers: Vec<String>,
    pub ttl: Option<u32>,
    /// Short reason of the decision.
    pub reason: String,
    /// Every step the decision took, in order.
    pub trace: Vec<String>,
    pub ecs_scope: u8,
    /// The DOWN services the name could have been answered with, each with
    /// why it is DOWN (e.g. what to configure).
    #[serde(default)]
    pub down: Vec<String>,
}

/// `GET /v1/ldns`: the RTT method's table of local DNS resolvers (seed
/// 003), with how it was kept bounded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Ldns {
    pub entries: Vec<LdnsEntry>,
    /// Entries made for new LDNS groups.
    pub created: u64,
    /// New groups refused: more than the allowed number per second arrived.
    pub rate_limited: u64,
    /// Entries removed to make room (the least recently queried).
    pub evicted: u64,
    /// Entries removed because no site queried through them for the entry
    /// timeout.
    pub expired: u64,
    /// Sources never probed (unspecified, multicast, broadcast, a site's
    /// own address).
    pub ignored: u64,
    /// New LDNS the DNS path could not hand over (its queue was full).
    pub queue_dropped: u64,
    /// This site's probes: sent, cycles that gave an RTT, cycles in which
    /// every kind failed, probes that waited for the probe rate limit.
    pub probes_sent: u64,
    pub probe_samples: u64,
    pub probe_failures: u64,
    pub probes_rate_limited: u64,
    /// RTT messages this site sent to the other parents, and the entries
    /// in them (a site sends an RTT only when it moved by more than
    /// `-RTTTolerance`, or when a peer comes up).
    pub rtt_messages_sent: u64,
    pub rtt_entries_sent: u64,
}

/// One LDNS group and every site's RTT to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LdnsEntry {
    /// The group: the query source masked with `-ldnsMask` /
    /// `-v6ldnsMaskLen` (`198.51.100.0`).
    pub ldns: String,
    pub prefix_len: u8,
    /// Seconds since a query from it reached this site (`None`: none
    /// within the entry timeout; other sites keep it alive).
    pub last_query_age_seconds: Option<f64>,
    /// Another parent's clients query through it.
    pub peers_interested: bool,
    /// One per site, in configuration order.
    pub sites: Vec<LdnsSiteRtt>,
}

/// One site's RTT to one LDNS group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LdnsSiteRtt {
    pub site: String,
    /// `None`: not measured, every probe failed, or the site's metric
    /// exchange is down (its RTT is stale and not used).
    pub rtt_ms: Option<f64>,
    /// The monitor that measured it: `ldns-ping`, `ldns-dns`, `ldns-tcp`.
    pub probe: Option<String>,
    /// Seconds since it was measured (or received).
    pub age_seconds: Option<f64>,
    /// The path figures of datacenter mode's Client Based selection, when
    /// the site knows them (a recent reply told its IP TTL): router hops
    /// (the initial TTL 64, 128 or 255 less the reply's TTL), the reply's
    /// TTL, the share of the last ten probe cycles that got no reply, and
    /// the mean opinion score (1 to 4.5). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hops: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packet_loss_percent: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mos: Option<f64>,
}

/// The body of every API error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ApiError {
    pub error: String,
}

/// `GET /v1/records`: every datacenter-mode record (seed 002).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Records {
    pub records: Vec<Record>,
}

/// One datacenter-mode record: its settings, status, and its datacenters in
/// the order they rank now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Record {
    pub name: String,
    /// `OK`, `Partially OK`, `No healthy records` or `Fail-safe`.
    pub status: String,
    /// `ALL_DC_RECORDS`, `DC_BASED`, `SERVICE_BASED` or `CLIENT_BASED`.
    pub dc_selection: String,
    /// The Selection Criterion (`CPU`, `MOS`, ...), if the selection has one.
    pub criterion: Option<String>,
    /// Service Based: the vService name measured at each datacenter.
    pub vservice_name: Option<String>,
    pub total_dcs: u32,
    pub balance: String,
    pub ttl: u32,
    /// Seconds since the datacenters were last ranked (`None`: not yet,
    /// or Client Based, which ranks per query).
    pub ranked_age_seconds: Option<f64>,
    /// The datacenters, best first (Client Based: configured order).
    pub datacenters: Vec<RecordDc>,
    pub fail_safe: Vec<String>,
}

/// One datacenter of a record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RecordDc {
    /// 1-based position in the ranking.
    pub rank: u32,
    pub site: String,
    /// The figure it was ranked by (`None`: could not be read, so it
    /// ranks last; or no criterion).
    pub figure: Option<f64>,
    /// This node reaches it (metric exchange UP, or local).
    pub reachable: bool,
    pub addresses: Vec<RecordAddress>,
}

/// One address of a datacenter group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RecordAddress {
    pub ip: String,
    pub weight: u32,
    /// `NONE`, `SERVICE`, `SITE` or `SERVICE_AND_SITE`, and the service.
    pub hc: String,
    pub service: Option<String>,
    pub healthy: bool,
}

/// `POST /v1/site/figures`: this site's own figures as an operator sets
/// them, standing in for the measured ones while set (`null` or missing:
/// measured).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SiteFiguresPush {
    pub cpu_percent: Option<f64>,
    pub memory_percent: Option<f64>,
    /// Bytes per second through the node's network interfaces.
    pub bandwidth_bytes_ps: Option<f64>,
}

/// `GET /v1/vrrp`: this node's virtual routers (seed 004).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Vrrp {
    pub vrids: Vec<VrrpVrid>,
    /// Received packets dropped before they reached a virtual router, per
    /// interface and reason (`bad_ttl`, `bad_checksum`, `short`,
    /// `bad_version`, `bad_type`, `count_mismatch`, `other_vrid`, ...).
    pub dropped: Vec<VrrpDropped>,
}

/// One virtual router on one interface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VrrpVrid {
    pub vrid: u8,
    /// `ipv4` or `ipv6`.
    pub family: String,
    pub interface: String,
    /// `INITIALIZE`, `BACKUP` or `MASTER`.
    pub state: String,
    pub base_priority: u8,
    pub effective_priority: u8,
    /// `NONE`, `ALL`, `ONE` or `PROGRESSIVE`.
    pub tracking: String,
    /// The master's primary address: this node's when MASTER, the last
    /// advertiser's when BACKUP.
    pub master: Option<String>,
    pub master_adver_interval_ms: u64,
    pub preemption: bool,
    pub sharing: bool,
    pub addresses: Vec<String>,
    pub tracked: Vec<VrrpTracked>,
    /// The last transitions, oldest first.
    pub transitions: Vec<VrrpTransition>,
    /// Every transition since VRRP started on this node.
    #[serde(default)]
    pub transitions_total: u64,
    pub adverts_received: u64,
    /// Adverts whose address list differs from this node's.
    pub address_mismatches: u64,
    /// How the last advert heard was checksummed: `pseudo-header` or
    /// `rfc9568`.
    pub peer_checksum: Option<String>,
}

/// A tracked object and its state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VrrpTracked {
    /// `dns 10.0.0.53:53`, `vserver NAME`, `service NAME`, `interface eth1`.
    pub name: String,
    pub up: bool,
    /// DOWN gives the VIP up whatever the tracking mode (the node's own DNS
    /// listener and tracked interfaces).
    pub required: bool,
}

/// A state change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VrrpTransition {
    /// Seconds since VRRP started on this node.
    pub at_seconds: f64,
    pub from: String,
    pub to: String,
    pub reason: String,
}

/// A drop counter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VrrpDropped {
    pub interface: String,
    pub reason: String,
    pub count: u64,
}

/// One entry of `GET /v1/vservers`: a GSLB vserver as configured, with
/// its services' states (`show gslb vserver`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VServer {
    pub name: String,
    /// The service type (`HTTP`, `SSL`, `TCP`, `ANY`, ...).
    pub service_type: String,
    /// UP while any bound service is UP.
    pub state: State,
    pub lb_method: String,
    /// The backup method (`-backupLBMethod`), if one is set.
    pub backup_lb_method: Option<String>,
    pub backup_vserver: Option<String>,
    /// Source-IP persistence timeout in seconds, if persistence is on.
    pub persistence_timeout_seconds: Option<u64>,
    pub empty_down_response: bool,
    pub multi_ip_response: bool,
    pub ecs: bool,
    pub services: Vec<VServerBinding>,
    pub domains: Vec<String>,
}

/// A service bound to a vserver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VServerBinding {
    pub service: String,
    pub site: String,
    pub ip: String,
    pub port: u16,
    pub weight: u32,
    pub state: State,
}

/// One entry of `GET /v1/domains`: a GSLB domain (`show gslb domain`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Domain {
    pub name: String,
    pub vserver: String,
    pub ttl: u32,
    pub backup_ip: Option<String>,
}

/// `PUT /v1/config`: what a configuration changes against the running one
/// and whether it was applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConfigApply {
    /// The generation in force after the request (the new one when
    /// applied, the running one otherwise).
    pub generation: u64,
    /// Whether the configuration was written and swapped in (false for a
    /// dry run).
    pub applied: bool,
    pub diff: ConfigDiff,
    /// What could not be checked (a listener on a port this node holds
    /// itself); empty when all is well.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The objects a configuration adds, removes and changes, each as `"KIND
/// NAME"` (`"service web-1"`, `"domain www.example.com"`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConfigDiff {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<String>,
}

/// The answer to an invalid configuration (`PUT /v1/config`, 400): a
/// summary and every error as `FILE:LINE: reason`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConfigRejected {
    pub error: String,
    pub errors: Vec<String>,
}

/// One administrative mark: `POST /v1/{services,vservers,sites}/{name}/
/// {enable,disable,drain}` answers one, `GET /v1/maintenance` lists every
/// one that is not enabled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AdminEntry {
    /// "service", "vserver" or "site".
    pub kind: String,
    pub name: String,
    /// "enabled", "disabled" or "draining".
    pub state: String,
    pub reason: Option<String>,
    /// RFC 3339 time the operator set it; null once enabled.
    pub since: Option<String>,
}

/// The optional body of the maintenance endpoints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AdminRequest {
    #[serde(default)]
    pub reason: Option<String>,
}

/// One transition of `GET /v1/services/{name}/history` (newest last).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct HistoryEntry {
    /// RFC 3339.
    pub time: String,
    /// "UP" or "DOWN".
    pub from: String,
    pub to: String,
    pub reason: String,
}

/// `GET /v1/stats`: the answer counters since the start (carried over
/// reloads by name), as the appliance's `stat gslb ...` shows them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Stats {
    pub vservers: Vec<VServerStats>,
    pub services: Vec<ServiceStats>,
    pub domains: Vec<DomainStats>,
}

/// One vserver's hits and how often each of its services was answered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VServerStats {
    pub name: String,
    /// GSLB queries this vserver answered.
    pub hits: u64,
    /// By bound service name: answers that carried it.
    pub answers: std::collections::BTreeMap<String, u64>,
}

/// How often one service was in an answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ServiceStats {
    pub name: String,
    pub site: String,
    pub answers: u64,
}

/// Queries answered for one GSLB domain.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DomainStats {
    pub name: String,
    pub answers: u64,
    /// By service name: answers for this domain that carried it (its
    /// vserver's services and its backup vservers'; a service never
    /// answered for this domain is left out).
    #[serde(default)]
    pub services: std::collections::BTreeMap<String, u64>,
}

/// Config sync of one site, in `GET /v1/sites`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SiteConfigSync {
    /// `local` for this node; for a peer parent: `in_sync`, `behind` (it
    /// has not taken this node's newer version yet), `ahead` (it runs a
    /// newer one), `sending`, `refused` (another software version, syntax,
    /// or it refused), `rejected` (it found this node's version invalid),
    /// `disabled` (automatic sync is off at one end and the versions
    /// differ), `unknown` (no offer from it yet).
    pub state: String,
    /// The version it runs (this node's own for `local`).
    pub incarnation: Option<u64>,
    pub origin: Option<String>,
    pub digest: Option<String>,
    /// Its software version and whether automatic sync is on there.
    pub software: Option<String>,
    pub automatic: Option<bool>,
    /// Why the last sync with it failed, if it did.
    pub last_error: Option<String>,
    /// RFC 3339 time it last applied a version of this node's.
    pub last_sync: Option<String>,
    /// Bytes of config sync messages sent to it and received from it, and
    /// transfers sent as a delta or as the whole text.
    #[serde(default)]
    pub bytes_sent: u64,
    #[serde(default)]
    pub bytes_received: u64,
    #[serde(default)]
    pub deltas_sent: u64,
    #[serde(default)]
    pub fulls_sent: u64,
}

/// `POST /v1/config/sync`: the appliance's `sync gslb config`. An unknown
/// field is refused: a misspelt `preview` must not send for real.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigSyncRequest {
    /// Show what each peer parent would get; send nothing.
    #[serde(default)]
    pub preview: bool,
    /// Send the whole configuration to this parent only.
    #[serde(default)]
    pub force_site: Option<String>,
    /// Answer with the messages exchanged.
    #[serde(default)]
    pub debug: bool,
}

/// A version of the shared configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SyncVersion {
    pub incarnation: u64,
    pub origin: String,
    pub digest: String,
}

/// What one peer parent would get (`preview`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SyncPreview {
    pub site: String,
    /// The version it runs, as it last said.
    pub version: Option<SyncVersion>,
    /// `a delta`, `the whole text ...`, `nothing to change: in sync`, or
    /// why nothing would be sent.
    pub transfer: String,
    /// The lines it would lose (`- `) and gain (`+ `), when its text is
    /// known here.
    pub diff: Option<Vec<String>>,
}

/// The answer of `POST /v1/config/sync`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConfigSyncAnswer {
    /// This node's version (after the sync, for a sync).
    pub version: SyncVersion,
    /// For `preview`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<Vec<SyncPreview>>,
    /// For a sync: where each peer parent stands once the transfers are
    /// answered (or after 15 s).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peers: Vec<SyncPeerOutcome>,
    /// For `debug`: the messages exchanged, one line each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange: Option<Vec<String>>,
}

/// One peer parent after a manual sync.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SyncPeerOutcome {
    pub site: String,
    /// As in `SiteConfigSync::state`.
    pub state: String,
    pub incarnation: Option<u64>,
    pub last_error: Option<String>,
}

/// `POST /v1/config/commands`: one appliance configuration command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigCommand {
    /// The command as typed at the appliance's CLI, e.g. `add gslb service
    /// web3 10.0.0.3 HTTP 80 -siteName fra` (add, set, unset, rm, bind,
    /// unbind; docs/cli.md lists the objects).
    pub command: String,
}

/// A configuration command applied to the running configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConfigCommandDone {
    /// The configuration generation now in force.
    pub generation: u64,
    /// The command as the running configuration now writes it.
    pub command: String,
    /// What the change did to the objects.
    pub diff: ConfigDiff,
    /// What runs and is not in the file yet (this command included).
    pub unsaved: UnsavedConfig,
    /// What could not be checked (listeners), as for `PUT /v1/config`.
    pub warnings: Vec<String>,
}

/// The running configuration's changes not written to the file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct UnsavedConfig {
    /// The commands applied since the file was last written, oldest first.
    pub commands: Vec<String>,
    /// When the first was applied (RFC 3339).
    pub since: Option<String>,
}

/// `POST /v1/config/save`: the running configuration written to the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConfigSaved {
    /// The configuration file written.
    pub file: String,
    /// The generation saved.
    pub generation: u64,
    /// The commands the file did not hold before (now saved).
    pub saved_commands: Vec<String>,
}
