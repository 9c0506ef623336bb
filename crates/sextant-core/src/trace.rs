//! Decision traces: why an answer is what it is.
//!
//! The hot path runs `decide` with [`NoTrace`], which compiles the trace
//! away; `explain` runs the very same code with [`VecTrace`] and renders the
//! events with names from the model.

use std::net::IpAddr;

use crate::model::{DomainId, LbMethod, Model, ServiceId, VServerId, ZoneId};

/// Why a selection method handed over to the backup method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FallbackWhy {
    /// The method needs load metrics (connections, response time, ...) and
    /// none are available for the candidates.
    NoLoadMetrics,
    /// The method needs a location database entry for the client or services.
    NoLocation,
    /// The method needs round-trip times to the client's LDNS.
    NoRtt,
}

impl FallbackWhy {
    pub fn describe(self) -> &'static str {
        match self {
            FallbackWhy::NoLoadMetrics => {
                "no load metrics are available for these services (they come from metric exchange and load sources, not yet configured)"
            }
            FallbackWhy::NoLocation => "no location is known for the client or the services",
            FallbackWhy::NoRtt => "no round-trip time to this LDNS is known yet",
        }
    }
}

/// Why a candidate service was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipWhy {
    Down,
    WrongFamily,
}

/// One step of a decision, in the order it happened.
#[derive(Debug, Clone, PartialEq)]
pub enum TraceEvent {
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
    /// The name is outside every zone and domain: REFUSED.
    NotAuthoritative,
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
                .get(*id as usize)
                .map(|s| format!("{} ({}:{})", s.name, s.answer_ip(), s.port))
                .unwrap_or_else(|| format!("service #{id}"))
        };
        let vs = |id: &VServerId| {
            model
                .vservers
                .get(*id as usize)
                .map(|v| v.name.clone())
                .unwrap_or_else(|| format!("vserver #{id}"))
        };
        let zone = |id: &ZoneId| {
            model
                .zones
                .get(*id as usize)
                .map(|z| z.apex.clone())
                .unwrap_or_else(|| format!("zone #{id}"))
        };
        match self {
            TraceEvent::Domain { domain, vserver } => format!(
                "domain {} is served by vserver {}",
                model
                    .domains
                    .get(*domain as usize)
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
                format!("candidate {} UP, weight {weight}", svc(service))
            }
            TraceEvent::Skipped { service, why } => match why {
                SkipWhy::Down => format!("skipped {}: DOWN", svc(service)),
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
            TraceEvent::NotAuthoritative => {
                "name is outside every configured zone and domain: REFUSED".to_string()
            }
        }
    }
}
