//! Datacenter mode (seed 002): a record whose addresses are grouped per
//! datacenter (a site). The datacenters with a healthy address are ranked
//! by the record's DC Selection and Selection Criterion, the first
//! `total_dcs` are taken, and their healthy addresses answer by the
//! record's balance algorithm; with no healthy address at all the
//! fail-safe records answer.
//!
//! The ranking by DC or service figures is worked out by the state engine
//! once per access period ([`rank`]) and published in the snapshot
//! ([`DcOrders`]); a query only reads it. Client Based ranks per query from
//! the LDNS table's per-site figures, on the stack.

use std::cmp::Ordering;
use std::net::IpAddr;
use std::time::Duration;

pub use crate::id::DcRecordId;
use crate::id::IdVec;
use crate::load::LoadKind;
use crate::model::{ServiceId, SiteId};

/// The most datacenter groups a record may have (a group is a bit in a
/// per-query mask).
pub const MAX_DC_GROUPS: usize = 64;

/// A DNS name answered in datacenter mode.
#[derive(Debug, Clone, PartialEq)]
pub struct DcRecord {
    /// Lower case, no trailing dot.
    pub name: String,
    pub ttl: u32,
    pub selection: DcSelection,
    /// Total DCs to Select from: how many ranked datacenters answer (not
    /// applied with Client Based). At least 1.
    pub total_dcs: u32,
    pub balance: Balance,
    /// The datacenter groups in configured order (DC 1, DC 2, ...); the
    /// local site is always one of them.
    pub groups: Vec<DcGroup>,
    /// Every address of every group, in group order.
    pub addresses: Vec<DcAddress>,
    /// Answered when no address of any group is healthy (not with Client
    /// Based).
    pub fail_safe: Vec<IpAddr>,
}

/// One datacenter of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DcGroup {
    pub site: SiteId,
    /// Service Based: the service measured at this datacenter (the one at
    /// its site whose vService name is the record's Service Name), if any.
    pub service: Option<ServiceId>,
}

/// One address of a datacenter group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DcAddress {
    /// Index of its group in [`DcRecord::groups`].
    pub group: u8,
    pub ip: IpAddr,
    /// For the weighted algorithms; 0 drains the address (never answered).
    pub weight: u32,
    pub health: DcHealth,
}

/// When an address counts as healthy (its HC condition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DcHealth {
    /// Always.
    Always,
    /// While the GSLB service is UP (its monitors, or its site's report).
    Service(ServiceId),
    /// While this node reaches the datacenter: metric exchange with its
    /// site is UP (the local datacenter always is).
    SiteReachable,
    /// Both of the above.
    ServiceAndSite(ServiceId),
}

/// How the datacenters are ranked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DcSelection {
    /// The configured order.
    AllDcRecords,
    /// By the figures of the Sextant node at each datacenter.
    DcBased(DcCriterion),
    /// By the figures, at each datacenter, of the service whose
    /// vService name is `service` (the same name at every datacenter).
    ServiceBased {
        criterion: ServiceCriterion,
        service: String,
    },
    /// Per query, by each site's probe figures towards the client's LDNS.
    ClientBased(ClientCriterion),
}

impl DcSelection {
    pub fn name(&self) -> &'static str {
        match self {
            DcSelection::AllDcRecords => "ALL_DC_RECORDS",
            DcSelection::DcBased(_) => "DC_BASED",
            DcSelection::ServiceBased { .. } => "SERVICE_BASED",
            DcSelection::ClientBased(_) => "CLIENT_BASED",
        }
    }

    /// The criterion's name, if the selection has one.
    pub fn criterion_name(&self) -> Option<&'static str> {
        match self {
            DcSelection::AllDcRecords => None,
            DcSelection::DcBased(c) => Some(c.name()),
            DcSelection::ServiceBased { criterion, .. } => Some(criterion.name()),
            DcSelection::ClientBased(c) => Some(c.name()),
        }
    }

    /// Which way the figure ranks, if the selection ranks by one.
    pub fn direction(&self) -> Option<Direction> {
        match self {
            DcSelection::AllDcRecords => None,
            DcSelection::DcBased(c) => Some(c.direction()),
            DcSelection::ServiceBased { criterion, .. } => Some(criterion.direction()),
            DcSelection::ClientBased(c) => Some(c.direction()),
        }
    }

    pub fn is_client_based(&self) -> bool {
        matches!(self, DcSelection::ClientBased(_))
    }
}

/// Which figure first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    LowestFirst,
    HighestFirst,
}

/// DC Based criteria: figures of the Sextant node at the datacenter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DcCriterion {
    /// CPU use, percent (lowest first).
    Cpu,
    /// Memory use, percent (lowest first).
    Memory,
    /// Bytes per second through the node's network interfaces (lowest
    /// first).
    Bandwidth,
    /// 1 while this node reaches the datacenter (metric exchange UP; the
    /// local one always), else 0 (best, i.e. reachable, first).
    Status,
    /// Share of lost metric-exchange keepalives, percent (lowest first).
    PacketLoss,
}

impl DcCriterion {
    pub const ALL: [DcCriterion; 5] = [
        DcCriterion::Cpu,
        DcCriterion::Memory,
        DcCriterion::Bandwidth,
        DcCriterion::Status,
        DcCriterion::PacketLoss,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DcCriterion::Cpu => "CPU",
            DcCriterion::Memory => "MEMORY",
            DcCriterion::Bandwidth => "BANDWIDTH",
            DcCriterion::Status => "STATUS",
            DcCriterion::PacketLoss => "PACKET_LOSS",
        }
    }

    pub fn direction(self) -> Direction {
        match self {
            DcCriterion::Status => Direction::HighestFirst,
            _ => Direction::LowestFirst,
        }
    }
}

/// Service Based criteria: figures of the named service at each datacenter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceCriterion {
    Cpu,
    Memory,
    Bandwidth,
    Requests,
    Connections,
    NewSessions,
    /// 1 while the service is UP, else 0 (UP first).
    Status,
    /// How many of its backends are healthy (most first).
    HealthyBackends,
}

impl ServiceCriterion {
    pub const ALL: [ServiceCriterion; 8] = [
        ServiceCriterion::Cpu,
        ServiceCriterion::Memory,
        ServiceCriterion::Bandwidth,
        ServiceCriterion::Requests,
        ServiceCriterion::Connections,
        ServiceCriterion::NewSessions,
        ServiceCriterion::Status,
        ServiceCriterion::HealthyBackends,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ServiceCriterion::Cpu => "CPU",
            ServiceCriterion::Memory => "MEMORY",
            ServiceCriterion::Bandwidth => "BANDWIDTH",
            ServiceCriterion::Requests => "REQUESTS",
            ServiceCriterion::Connections => "CONNECTIONS",
            ServiceCriterion::NewSessions => "NEW_SESSIONS",
            ServiceCriterion::Status => "STATUS",
            ServiceCriterion::HealthyBackends => "HEALTHY_BACKENDS",
        }
    }

    pub fn direction(self) -> Direction {
        match self {
            ServiceCriterion::Status | ServiceCriterion::HealthyBackends => Direction::HighestFirst,
            _ => Direction::LowestFirst,
        }
    }
}

/// Client Based criteria: each site's probe figures towards the LDNS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientCriterion {
    /// Router hops, from the reply's IP TTL (fewest first).
    Hops,
    /// Mean opinion score from latency, jitter and loss (highest first).
    Mos,
    /// Share of lost probes, percent (lowest first).
    PacketLoss,
    /// The reply's IP TTL as received (highest first: fewer hops used).
    Ttl,
}

impl ClientCriterion {
    pub const ALL: [ClientCriterion; 4] = [
        ClientCriterion::Hops,
        ClientCriterion::Mos,
        ClientCriterion::PacketLoss,
        ClientCriterion::Ttl,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ClientCriterion::Hops => "HOPS",
            ClientCriterion::Mos => "MOS",
            ClientCriterion::PacketLoss => "PACKET_LOSS",
            ClientCriterion::Ttl => "TTL",
        }
    }

    pub fn direction(self) -> Direction {
        match self {
            ClientCriterion::Mos | ClientCriterion::Ttl => Direction::HighestFirst,
            ClientCriterion::Hops | ClientCriterion::PacketLoss => Direction::LowestFirst,
        }
    }
}

/// How one or more of the chosen healthy addresses answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Balance {
    /// Every chosen address.
    All,
    RoundRobin,
    WeightedRoundRobin,
    Random,
    WeightedRandom,
    /// The address nearest the client (location database coordinates);
    /// round robin among equally near ones, or when coordinates are missing.
    Closest,
}

impl Balance {
    pub const ALL: [Balance; 6] = [
        Balance::All,
        Balance::RoundRobin,
        Balance::WeightedRoundRobin,
        Balance::Random,
        Balance::WeightedRandom,
        Balance::Closest,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Balance::All => "ALL",
            Balance::RoundRobin => "ROUNDROBIN",
            Balance::WeightedRoundRobin => "WEIGHTED_ROUNDROBIN",
            Balance::Random => "RANDOM",
            Balance::WeightedRandom => "WEIGHTED_RANDOM",
            Balance::Closest => "CLOSEST",
        }
    }
}

/// A record's state as its preview shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordStatus {
    /// Every datacenter with addresses has a healthy one.
    Ok,
    /// Some datacenters have no healthy address.
    PartiallyOk,
    /// None has, and there are no fail-safe records.
    NoHealthyRecords,
    /// None has; the fail-safe records answer.
    FailSafe,
}

impl RecordStatus {
    pub fn describe(self) -> &'static str {
        match self {
            RecordStatus::Ok => "OK",
            RecordStatus::PartiallyOk => "Partially OK",
            RecordStatus::NoHealthyRecords => "No healthy records",
            RecordStatus::FailSafe => "Fail-safe",
        }
    }
}

/// The ranking of one record's datacenters, as published.
#[derive(Debug, Clone, PartialEq)]
pub struct DcOrder {
    /// Group indices, best first; those whose figure could not be read last.
    pub groups: Vec<u8>,
    /// Per group (configured order): the figure it was ranked by.
    pub figures: Vec<Option<f64>>,
    /// When it was worked out (engine clock, since the Unix epoch).
    pub at: Duration,
}

/// Every record's ranking, indexed by [`DcRecordId`]; `None` where none has
/// been worked out yet (the configured order is used).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DcOrders {
    pub orders: IdVec<DcRecordId, Option<DcOrder>>,
    /// Per site: whether this node reaches it (metric exchange UP; the
    /// local site always). Missing sites read as reachable.
    pub site_reachable: IdVec<SiteId, bool>,
}

/// What is known of one datacenter when a record's datacenters are ranked
/// (DC and Service Based), as of the last access period.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DcFacts {
    /// This node reaches the datacenter (metric exchange UP, or local).
    pub reachable: bool,
    /// The Sextant node's figures there (its own report); `None` where
    /// not reported, or stale because the datacenter is not reachable.
    pub cpu_percent: Option<f64>,
    pub memory_percent: Option<f64>,
    /// Bytes per second through the node's network interfaces.
    pub bandwidth_bytes_ps: Option<f64>,
    /// Share of this node's metric-exchange keepalives to the datacenter
    /// lost over the last access period, percent (0 for the local one).
    pub packet_loss_percent: Option<f64>,
    /// Service Based: the measured service, if the datacenter has one.
    pub service: Option<ServiceFacts>,
}

/// The measured service of one datacenter (Service Based).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ServiceFacts {
    pub up: bool,
    /// Its load figures, from its load source at its own site; `None`
    /// where its site is not reachable (the figures are stale).
    pub metrics: Option<crate::load::ServiceMetrics>,
}

/// The figure `selection` ranks a datacenter by; `None` when it cannot be
/// read (the datacenter then ranks last). Client Based figures are per
/// query, not here.
pub fn figure(selection: &DcSelection, facts: &DcFacts) -> Option<f64> {
    let flag = |b: bool| if b { 1.0 } else { 0.0 };
    match selection {
        DcSelection::AllDcRecords | DcSelection::ClientBased(_) => None,
        DcSelection::DcBased(c) => match c {
            DcCriterion::Cpu => facts.cpu_percent,
            DcCriterion::Memory => facts.memory_percent,
            DcCriterion::Bandwidth => facts.bandwidth_bytes_ps,
            DcCriterion::Status => Some(flag(facts.reachable)),
            DcCriterion::PacketLoss => facts.packet_loss_percent,
        },
        DcSelection::ServiceBased { criterion, .. } => {
            let service = facts.service?;
            if *criterion == ServiceCriterion::Status {
                return Some(flag(service.up));
            }
            let m = service.metrics?;
            let kind = match criterion {
                ServiceCriterion::Cpu => LoadKind::Cpu,
                ServiceCriterion::Memory => LoadKind::Memory,
                ServiceCriterion::Bandwidth => LoadKind::Bandwidth,
                ServiceCriterion::Requests => LoadKind::Requests,
                ServiceCriterion::Connections => LoadKind::Connections,
                ServiceCriterion::NewSessions => LoadKind::NewSessions,
                ServiceCriterion::HealthyBackends => LoadKind::HealthyBackends,
                ServiceCriterion::Status => return Some(flag(service.up)),
            };
            m.get(kind).map(|v| v as f64)
        }
    }
}

/// Ranks a record's groups from each group's facts.
pub fn rank_record(rec: &DcRecord, facts: impl Fn(usize) -> DcFacts, at: Duration) -> DcOrder {
    let figures: Vec<Option<f64>> = (0..rec.groups.len().min(MAX_DC_GROUPS))
        .map(|g| figure(&rec.selection, &facts(g)))
        .collect();
    DcOrder {
        groups: rank(&figures, rec.selection.direction()),
        figures,
        at,
    }
}

/// Ranks groups by `figure` (per group, configured order): by `direction`,
/// ties and equal figures in configured order, groups without a figure
/// last (in configured order). Without a direction, the configured order.
pub fn rank(figures: &[Option<f64>], direction: Option<Direction>) -> Vec<u8> {
    let mut order: Vec<u8> = (0..figures.len().min(MAX_DC_GROUPS) as u8).collect();
    if let Some(direction) = direction {
        order.sort_by(|a, b| compare(figures[*a as usize], figures[*b as usize], direction));
    }
    order
}

/// The ranking comparison: known before unknown, then by direction (a
/// stable sort keeps configured order among equals).
pub fn compare(a: Option<f64>, b: Option<f64>, direction: Direction) -> Ordering {
    match (a, b) {
        (Some(x), Some(y)) => match direction {
            Direction::LowestFirst => x.total_cmp(&y),
            Direction::HighestFirst => y.total_cmp(&x),
        },
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_by_direction_with_unknown_last_and_ties_in_order() {
        let f = [Some(50.0), None, Some(10.0), Some(50.0), None, Some(5.0)];
        assert_eq!(
            rank(&f, Some(Direction::LowestFirst)),
            vec![5, 2, 0, 3, 1, 4]
        );
        assert_eq!(
            rank(&f, Some(Direction::HighestFirst)),
            vec![0, 3, 2, 5, 1, 4]
        );
        assert_eq!(rank(&f, None), vec![0, 1, 2, 3, 4, 5]);
    }
}
