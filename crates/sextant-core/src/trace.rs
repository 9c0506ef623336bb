//! Decision traces: why an answer is what it is.
//!
//! The hot path runs `decide` with [`NoTrace`], which compiles the trace
//! away; `explain` runs the very same code with [`VecTrace`] and renders the
//! events with names from the model.

use std::net::IpAddr;

use crate::load::LoadKind;
use crate::location_db::PlaceId;
use crate::model::{DomainId, LbMethod, Model, ServiceId, VServerId, ZoneId};
use crate::policy::DnsPolicyId;

/// Why a selection method handed over to the backup method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FallbackWhy {
    /// The method decides by a load figure (connections, response time,
    /// ...) and at least one UP candidate has none yet.
    NoLoadMetrics,
    /// The location database has no entry for the client's address.
    NoClientLocation,
    /// The location database has no entry for any UP service.
    NoServiceLocation,
    /// No UP service shares even the first qualifier with the client, and
    /// coordinates are missing to judge distance.
    NoSharedLocation,
    /// The method needs round-trip times to the client's LDNS.
    NoRtt,
}

impl FallbackWhy {
    pub fn describe(self) -> &'static str {
        match self {
            FallbackWhy::NoLoadMetrics => {
                "an UP candidate has no figure for this method yet: figures come from the local load sources and, for other sites' services, from metric exchange"
            }
            FallbackWhy::NoClientLocation => "the location database has no entry for the client",
            FallbackWhy::NoServiceLocation => {
                "the location database has no entry for any UP service"
            }
            FallbackWhy::NoSharedLocation => {
                "no UP service shares a location qualifier with the client and coordinates are missing"
            }
            FallbackWhy::NoRtt => "no round-trip time to this LDNS is known yet",
        }
    }
}

/// What became of one datacenter of a datacenter-mode record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DcVerdict {
    /// Its healthy addresses are in the answer's pool.
    Taken,
    /// No healthy address (of the query's family, not drained).
    NoHealthy,
    /// Healthy, but a preferred location matched other datacenters.
    OffTopology,
    /// Healthy, ranked after the first Total DCs to Select from.
    BeyondCut,
    /// Client Based: another datacenter is better for this client.
    NotBestForClient,
}

/// The passes of the preferred-locations algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchPass {
    Perfect,
    Partial,
    /// Neither pass found an UP match: every UP service.
    Remaining,
}

impl MatchPass {
    pub fn as_str(self) -> &'static str {
        match self {
            MatchPass::Perfect => "perfect",
            MatchPass::Partial => "partial",
            MatchPass::Remaining => "remaining",
        }
    }
}

/// Why an UP candidate was left out of the set a decision chose from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutWhy {
    /// Not a perfect match for preferred location `index` of `action`.
    NotPerfect {
        action: crate::policy::DnsActionId,
        index: u8,
    },
    /// Not a partial match for preferred location `index` of `action`.
    NotPartial {
        action: crate::policy::DnsActionId,
        index: u8,
    },
    /// Shares fewer leading location qualifiers with the client than the
    /// closest services (which share `shared`).
    FartherThan { shared: u8 },
    /// Its load figure (per unit of weight, for the LEAST* methods) is
    /// higher than the lowest.
    MoreLoaded { kind: LoadKind },
    /// Its site's RTT to the LDNS is beyond the best plus the tolerance.
    FartherByRtt,
    /// Its site has no usable RTT to the LDNS.
    NoRtt,
}

/// Why a candidate service was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipWhy {
    Down,
    WrongFamily,
    /// The operator disabled it, or its site (runtime maintenance).
    Disabled,
    /// The operator drains it: only clients persisted to it get it.
    Draining,
}

/// One step of a decision, in the order it happened.
#[derive(Debug, Clone, PartialEq)]
pub enum TraceEvent {
    /// The client's location, looked up for DNS policies.
    ClientLocation {
        addr: IpAddr,
        place: Option<PlaceId>,
    },
    /// A globally bound DNS policy was evaluated.
    Policy { policy: DnsPolicyId, matched: bool },
    /// A DROP action matched: no response.
    Dropped,
    /// The RTT method had no RTT to the LDNS and `-dropLdnsReq` is
    /// ENABLED: no response.
    NoRttDropped,
    /// The name is a datacenter-mode record, in this status.
    DcRecord {
        record: crate::dc::DcRecordId,
        status: crate::dc::RecordStatus,
    },
    /// One datacenter group in ranked order: its figure, how many of its
    /// addresses can answer, and whether it was taken.
    DcGroup {
        record: crate::dc::DcRecordId,
        group: u8,
        rank: u8,
        figure: Option<f64>,
        healthy: u32,
        verdict: DcVerdict,
    },
    /// No datacenter has a healthy address: the fail-safe records answer.
    DcFailSafe { count: u32 },
    /// No datacenter has a healthy address and nothing is fail-safe.
    DcNoHealthy,
    /// The balance algorithm answered this many addresses.
    DcAnswered {
        balance: crate::dc::Balance,
        count: u32,
    },
    /// Preferred location number `index` (0 = highest priority) in a pass:
    /// how many of its matches are UP and how many are not.
    PreferredLocation {
        action: crate::policy::DnsActionId,
        pass: MatchPass,
        index: u8,
        up: u32,
        down: u32,
    },
    /// An UP candidate left out of the chosen set.
    OutOfSet { service: ServiceId, why: OutWhy },
    /// No preferred location matched an UP service in either pass.
    PreferredRemaining,
    /// Static proximity: the most leading qualifiers an UP service shares
    /// with the client, and how many services share that many.
    Proximity { shared: u8, tied: u32 },
    /// A candidate's load figure for a metric-driven method (`None`: not
    /// known), and the weight it is divided by (1 for CUSTOMLOAD).
    Load {
        service: ServiceId,
        kind: LoadKind,
        figure: Option<u64>,
        weight: u32,
    },
    /// A metric-driven method found its lowest figure: `tied` candidates
    /// share it, and round robin picks among them.
    LeastLoad { method: LbMethod, tied: u32 },
    /// RTT method: a candidate's site and that site's RTT to the LDNS
    /// (`None`: not measured, or the site's metric exchange is down).
    Rtt {
        service: ServiceId,
        site: crate::model::SiteId,
        rtt_us: Option<u32>,
    },
    /// RTT method: the smallest RTT and the vserver's tolerance; services
    /// whose site is within both are in the running.
    RttBest { best_us: u32, tolerance_us: u32 },
    /// The query name is a GSLB domain served by this vserver.
    Domain {
        domain: DomainId,
        vserver: VServerId,
    },
    /// The address the decision treats as the client's.
    Client { addr: IpAddr, from_ecs: bool },
    /// A bound service that could answer this query.
    Candidate { service: ServiceId, weight: u32 },
    /// A bound service left out, and why.
    Skipped { service: ServiceId, why: SkipWhy },
    /// The vserver's method cannot decide and its backup method does.
    MethodFallback {
        vserver: VServerId,
        method: LbMethod,
        backup: LbMethod,
        why: FallbackWhy,
    },
    /// A method chose this service.
    Picked {
        service: ServiceId,
        method: LbMethod,
    },
    /// The client's persistence entry chose this service.
    Persisted { service: ServiceId },
    /// Multi-IP response: every UP candidate is answered.
    MultiIp { count: u32 },
    /// No service of the vserver is UP.
    AllDown { vserver: VServerId },
    /// The operator disabled the vserver: it answers as if no service
    /// were UP.
    VServerDisabled { vserver: VServerId },
    /// A draining service answered because the client's persistence entry
    /// points at it.
    PersistedDraining { service: ServiceId },
    /// The backup vserver answers instead.
    BackupVServer { from: VServerId, to: VServerId },
    /// The domain's backup IP answers.
    BackupIp { addr: IpAddr },
    /// Empty down response: NODATA because everything is down.
    EmptyDownResponse,
    /// Everything is down and nothing else is configured: one service is
    /// answered regardless of its state rather than nothing.
    LastResort { service: ServiceId },
    /// No bound service has an address of the queried family.
    NoAddressOfFamily,
    /// The name is in this zone but not served: NXDOMAIN.
    NxDomain { zone: ZoneId },
    /// The name exists but has no data of this type: NODATA.
    NoData,
    /// The zone apex records answer.
    ZoneApex { zone: ZoneId },
    /// A static CNAME (index into `Model::records`) is followed.
    Cname { record: u32 },
    /// Static records answer: `count` of type `rtype` (255: all).
    StaticRecords { rtype: u16, count: u32 },
    /// A referral: the name is at or below the delegation whose first NS
    /// record is `record` (index into `Model::records`).
    Referral { record: u32 },
    /// The name is outside every zone and domain: REFUSED.
    NotAuthoritative,
    /// This node is a child site: it answers no DNS.
    ChildSite,
}

/// Receives the events of one decision.
pub trait Tracer {
    /// False when events are thrown away, so costly ones are not built.
    const ENABLED: bool = true;
    fn record(&mut self, event: TraceEvent);
}

/// Discards everything; what the DNS hot path uses.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoTrace;

impl Tracer for NoTrace {
    const ENABLED: bool = false;
    #[inline(always)]
    fn record(&mut self, _event: TraceEvent) {}
}

/// Keeps every event, for `explain`.
#[derive(Debug, Default, Clone)]
pub struct VecTrace(pub Vec<TraceEvent>);

impl Tracer for VecTrace {
    fn record(&mut self, event: TraceEvent) {
        self.0.push(event);
    }
}

impl TraceEvent {
    /// One line for an operator, with names from the model.
    pub fn describe(&self, model: &Model) -> String {
        let svc = |id: &ServiceId| {
            model
                .services
                .get(*id)
                .map(|s| format!("{} ({}:{})", s.name, s.answer_ip(), s.port))
                .unwrap_or_else(|| format!("service #{id}"))
        };
        let vs = |id: &VServerId| {
            model
                .vservers
                .get(*id)
                .map(|v| v.name.clone())
                .unwrap_or_else(|| format!("vserver #{id}"))
        };
        let zone = |id: &ZoneId| {
            model
                .zones
                .get(*id)
                .map(|z| z.apex.clone())
                .unwrap_or_else(|| format!("zone #{id}"))
        };
        let place = |ip: IpAddr| {
            model
                .locations
                .lookup(ip)
                .map(|p| p.location.to_string())
                .unwrap_or_else(|| "unknown".to_string())
        };
        let located = |id: &ServiceId| {
            model
                .services
                .get(*id)
                .map(|s| format!("{}, location {}", svc(id), place(s.answer_ip())))
                .unwrap_or_else(|| svc(id))
        };
        let preferred = |action: crate::policy::DnsActionId, index: u8| match model
            .dns_actions
            .get(action)
            .map(|a| &a.kind)
        {
            Some(crate::policy::DnsActionKind::PreferredLocations(list)) => list
                .get(index as usize)
                .map(|l| l.to_string())
                .unwrap_or_else(|| "?".to_string()),
            _ => "?".to_string(),
        };
        match self {
            TraceEvent::ClientLocation { addr, place: p } => match p {
                Some(id) => format!(
                    "client {addr} is at location {}",
                    model.locations.place(*id).location
                ),
                None => format!("client {addr} has no entry in the location database"),
            },
            TraceEvent::Policy { policy, matched } => {
                let p = model.dns_policies.get(*policy);
                let name = p.map(|p| p.name.as_str()).unwrap_or("?");
                let rule = p.map(|p| p.rule_text.as_str()).unwrap_or("?");
                let action = p
                    .and_then(|p| model.dns_actions.get(p.action))
                    .map(|a| a.name.as_str())
                    .unwrap_or("?");
                if *matched {
                    format!("policy {name} ({rule}) matched: action {action}")
                } else {
                    format!("policy {name} ({rule}) did not match")
                }
            }
            TraceEvent::Dropped => "DROP action: the query is dropped".to_string(),
            TraceEvent::NoRttDropped => {
                "-dropLdnsReq ENABLED: the query is dropped until this LDNS has an RTT".to_string()
            }
            TraceEvent::DcRecord { record, status } => match model.dc_records.get(*record) {
                Some(r) => {
                    let criterion = r
                        .selection
                        .criterion_name()
                        .map(|c| format!(" by {c}"))
                        .unwrap_or_default();
                    let cut = if r.selection.is_client_based() {
                        "every datacenter (Client Based: no cut, no topology, no fail-safe)"
                            .to_string()
                    } else {
                        format!("the first {} datacenter(s) with a healthy address", r.total_dcs)
                    };
                    format!(
                        "{} is a datacenter-mode record (status {}): {}{criterion}; {cut}; balance {}",
                        r.name,
                        status.describe(),
                        r.selection.name(),
                        r.balance.name()
                    )
                }
                None => format!("datacenter-mode record #{record}"),
            },
            TraceEvent::DcGroup {
                record,
                group,
                rank,
                figure,
                healthy,
                verdict,
            } => {
                let r = model.dc_records.get(*record);
                let site = r
                    .and_then(|r| r.groups.get(*group as usize))
                    .and_then(|g| model.sites.get(g.site))
                    .map(|s| s.name.as_str())
                    .unwrap_or("?");
                let figure = match (r.and_then(|r| r.selection.criterion_name()), figure) {
                    (None, _) => "configured order".to_string(),
                    (Some(c), Some(f)) => format!("{c} {f}"),
                    (Some(c), None) => format!("{c} unknown (ranks last)"),
                };
                let verdict = match verdict {
                    DcVerdict::Taken => "taken",
                    DcVerdict::NoHealthy => "no healthy address, left out",
                    DcVerdict::OffTopology => "no address in the preferred location, left out",
                    DcVerdict::BeyondCut => "beyond Total DCs to Select from, left out",
                    DcVerdict::NotBestForClient => "not the best for this client, left out",
                };
                format!(
                    "rank {}: DC {} (site {site}), {figure}, {healthy} healthy address(es): {verdict}",
                    rank + 1,
                    group + 1
                )
            }
            TraceEvent::DcFailSafe { count } => {
                format!("no datacenter has a healthy address: {count} fail-safe record(s)")
            }
            TraceEvent::DcNoHealthy => {
                "no datacenter has a healthy address and there are no fail-safe records".to_string()
            }
            TraceEvent::DcAnswered { balance, count } => {
                format!("balance {}: {count} address(es) answered", balance.name())
            }
            TraceEvent::PreferredLocation {
                action,
                pass,
                index,
                up,
                down,
            } => format!(
                "{} pass, preferred location {} ({}): {up} UP match{}, {down} not UP",
                pass.as_str(),
                index + 1,
                preferred(*action, *index),
                if *up == 1 { "" } else { "es" }
            ),
            TraceEvent::OutOfSet { service, why } => match why {
                OutWhy::NotPerfect { action, index } => format!(
                    "passed over {}: not a perfect match for {}",
                    located(service),
                    preferred(*action, *index)
                ),
                OutWhy::NotPartial { action, index } => format!(
                    "passed over {}: not a partial match for {}",
                    located(service),
                    preferred(*action, *index)
                ),
                OutWhy::FartherThan { shared } => format!(
                    "passed over {}: shares fewer than {shared} leading location qualifiers with the client",
                    located(service)
                ),
                OutWhy::FartherByRtt => format!(
                    "passed over {}: its site's RTT to the LDNS is beyond the best plus the tolerance",
                    svc(service)
                ),
                OutWhy::NoRtt => format!(
                    "passed over {}: its site has no RTT to the LDNS",
                    svc(service)
                ),
                OutWhy::MoreLoaded { kind } => format!(
                    "passed over {}: higher {}{} than the lowest",
                    svc(service),
                    kind.as_str(),
                    if kind.per_weight() {
                        " per unit of weight"
                    } else {
                        ""
                    }
                ),
            },
            TraceEvent::PreferredRemaining => {
                "no preferred location has an UP perfect or partial match: balancing over the remaining UP services".to_string()
            }
            TraceEvent::Proximity { shared, tied } => format!(
                "static proximity: {tied} UP service{} share{} {shared} leading location qualifier{} with the client",
                if *tied == 1 { "" } else { "s" },
                if *tied == 1 { "s" } else { "" },
                if *shared == 1 { "" } else { "s" }
            ),
            TraceEvent::Load {
                service,
                kind,
                figure,
                weight,
            } => match figure {
                Some(f) if *weight > 1 => format!(
                    "{} {}, weight {weight}: {} per unit of weight",
                    svc(service),
                    kind.phrase(Some(*f)),
                    kind.per_unit(*f, *weight)
                ),
                _ => format!("{} {}", svc(service), kind.phrase(*figure)),
            },
            TraceEvent::Rtt {
                service,
                site,
                rtt_us,
            } => {
                let site = model
                    .sites
                    .get(*site)
                    .map_or("?", |s| s.name.as_str());
                match rtt_us {
                    Some(us) => format!(
                        "{} at site {site}: RTT to the LDNS {}",
                        svc(service),
                        fmt_us(*us)
                    ),
                    None => format!(
                        "{} at site {site}: no RTT to the LDNS (not measured yet, or the site's metric exchange is down)",
                        svc(service)
                    ),
                }
            }
            TraceEvent::RttBest {
                best_us,
                tolerance_us,
            } => {
                if *tolerance_us == 0 {
                    format!(
                        "RTT: the smallest is {}; the services at that site are in the running",
                        fmt_us(*best_us)
                    )
                } else {
                    format!(
                        "RTT: the smallest is {}; with the tolerance of {} the services at sites up to {} are in the running",
                        fmt_us(*best_us),
                        fmt_us(*tolerance_us),
                        fmt_us(best_us.saturating_add(*tolerance_us))
                    )
                }
            }
            TraceEvent::LeastLoad { method, tied } => {
                let kind = LoadKind::of_method(*method).unwrap_or(LoadKind::Connections);
                let what = if kind.per_weight() {
                    format!("{} per unit of weight", kind.as_str())
                } else {
                    kind.as_str().to_string()
                };
                if *tied == 1 {
                    format!("{method}: one candidate has the lowest {what}")
                } else {
                    format!(
                        "{method}: {tied} candidates share the lowest {what}; round robin among them"
                    )
                }
            }
            TraceEvent::Domain { domain, vserver } => format!(
                "domain {} is served by vserver {}",
                model
                    .domains
                    .get(*domain)
                    .map(|d| d.name.as_str())
                    .unwrap_or("?"),
                vs(vserver)
            ),
            TraceEvent::Client { addr, from_ecs } => {
                if *from_ecs {
                    format!("client address {addr} (from EDNS Client Subnet)")
                } else {
                    format!("client address {addr} (the LDNS source address)")
                }
            }
            TraceEvent::Candidate { service, weight } => {
                format!("candidate {} UP, weight {weight}", located(service))
            }
            TraceEvent::Skipped { service, why } => match why {
                SkipWhy::Down => format!("skipped {}: DOWN", located(service)),
                SkipWhy::Disabled => {
                    format!("skipped {}: disabled by the operator", located(service))
                }
                SkipWhy::Draining => format!(
                    "skipped {}: draining (persisted clients only)",
                    located(service)
                ),
                SkipWhy::WrongFamily => {
                    format!(
                        "skipped {}: address family does not match the query type",
                        svc(service)
                    )
                }
            },
            TraceEvent::MethodFallback {
                vserver,
                method,
                backup,
                why,
            } => format!(
                "vserver {}: method {method} cannot decide ({}); backup method {backup} decides",
                vs(vserver),
                why.describe()
            ),
            TraceEvent::Picked { service, method } => {
                format!("{method} picked {}", svc(service))
            }
            TraceEvent::Persisted { service } => {
                format!("source-IP persistence keeps the client on {}", svc(service))
            }
            TraceEvent::MultiIp { count } => {
                format!("multi-IP response: all {count} UP services answered")
            }
            TraceEvent::AllDown { vserver } => {
                format!("vserver {}: no service is UP", vs(vserver))
            }
            TraceEvent::VServerDisabled { vserver } => format!(
                "vserver {} is disabled by the operator: answered as if no service were UP",
                vs(vserver)
            ),
            TraceEvent::PersistedDraining { service } => format!(
                "source-IP persistence keeps the client on {}, which is draining (no new clients)",
                svc(service)
            ),
            TraceEvent::BackupVServer { from, to } => {
                format!(
                    "vserver {} falls back to backup vserver {}",
                    vs(from),
                    vs(to)
                )
            }
            TraceEvent::BackupIp { addr } => format!("answered the domain's backup IP {addr}"),
            TraceEvent::EmptyDownResponse => {
                "empty down response: everything is down, answered NODATA".to_string()
            }
            TraceEvent::LastResort { service } => format!(
                "everything is down and no backup is configured: last-resort answer {}",
                svc(service)
            ),
            TraceEvent::NoAddressOfFamily => {
                "no bound service has an address of the queried family: NODATA".to_string()
            }
            TraceEvent::NxDomain { zone: z } => {
                format!(
                    "name is inside zone {} but not configured: NXDOMAIN",
                    zone(z)
                )
            }
            TraceEvent::NoData => "the name has no records of this type: NODATA".to_string(),
            TraceEvent::ZoneApex { zone: z } => format!("zone apex records of {}", zone(z)),
            TraceEvent::Cname { record } => match model.records.get(*record as usize) {
                Some(r) => match &r.data {
                    crate::records::RecordData::Cname(t) => {
                        format!("{} is a CNAME to {t}: followed", r.name)
                    }
                    _ => format!("{} is a CNAME", r.name),
                },
                None => format!("CNAME record #{record}"),
            },
            TraceEvent::StaticRecords { rtype, count } => format!(
                "{count} static {} record(s) answer",
                crate::records::type_name(*rtype)
            ),
            TraceEvent::Referral { record } => match model.records.get(*record as usize) {
                Some(r) => format!(
                    "{} is a delegated child zone: referral to its name servers",
                    r.name
                ),
                None => "delegated child zone: referral".to_string(),
            },
            TraceEvent::ChildSite => {
                "this node is a child site; only parent sites answer DNS: REFUSED".to_string()
            }
            TraceEvent::NotAuthoritative => {
                "name is outside every configured zone and domain: REFUSED".to_string()
            }
        }
    }
}

/// Microseconds as an operator reads them: `12.3 ms`.
fn fmt_us(us: u32) -> String {
    format!("{:.1} ms", f64::from(us) / 1000.0)
}
