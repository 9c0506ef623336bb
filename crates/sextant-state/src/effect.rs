//! What the engine asks the edges to do: its output.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use sextant_core::{IdVec, Model, ServiceId, Snapshot, VServerId};

use crate::event::{ReportedService, SharedRtt, SharedSession, SiteFigures};

/// One thing for the edges to do, in the order given.
#[derive(Debug, Clone)]
pub enum Effect {
    /// A new configuration is in force: stop the monitors and load sources
    /// of the old one, start the new ones with these gates closed, and tell
    /// metric exchange.
    Restart {
        model: Arc<Model>,
        generation: u64,
        closed_gates: Vec<ServiceId>,
        /// (service, position in its monitor list) of the bindings whose
        /// monitor is DOWN and has a `-downTime`: they probe at that pace.
        slow_probes: Vec<(ServiceId, usize)>,
        /// Persistence entries carry over: old vserver id → new one, and old
        /// service id → new one (by name; `None`: gone).
        renumber: Renumbering,
    },
    /// Make this the state DNS and the API read (one atomic swap).
    Publish(Arc<Snapshot>),
    /// A service changed state: log it with its reason.
    Transition {
        service: ServiceId,
        up: bool,
        reason: Arc<str>,
    },
    /// Open or close the gate of a service's monitors (`-triggerMonitor`).
    /// A gate that opens starts its monitors afresh, at their interval.
    Gate { service: ServiceId, open: bool },
    /// Binding `slot` of `service` (its position in the service's monitor
    /// list) probes every `-downTime` (`slow`) or every `-interval`: its
    /// monitor, which has a `-downTime`, went DOWN or came back UP.
    ProbePace {
        service: ServiceId,
        slot: usize,
        slow: bool,
    },
    /// This site's report for metric exchange changed: send it.
    Report(Arc<LocalReport>),
    /// Send these persistence entries to the other parents.
    ShareSessions(Vec<SharedSession>),
    /// Record these persistence entries (made at another parent) here.
    InstallSessions(Vec<InstallSession>),
    /// Start (`run`) or stop metric exchange on this node: the site IP is a
    /// VRRP VIP and this node became, or stopped being, its master, or a
    /// reload turned metric exchange on or off.
    MetricExchange { run: bool },
    /// This node's DNS listener on a VIP started or stopped answering its
    /// self-probe (VRRP gives the VIP up while it does not): for the log.
    ListenerState {
        addr: std::net::SocketAddr,
        up: bool,
        reason: String,
    },
    /// Every monitored service has its first result (or its time is up):
    /// DNS may answer now.
    Ready,
    /// Start probing these LDNS groups, stop probing those.
    ProbeLdns {
        add: Vec<IpAddr>,
        remove: Vec<IpAddr>,
    },
    /// Send these RTTs (changes beyond the tolerance, interest) to the
    /// other parents.
    ShareRtt(Vec<SharedRtt>),
    /// Measure the packet loss to these datacenters (one probe burst each)
    /// and report each as [`crate::Event::PathLoss`].
    MeasurePathLoss(crate::dc::LossTargets),
    /// The outcome of an [`crate::Event::Admin`]: the record as it now
    /// stands (published with this batch's snapshot), or why not.
    Admin(Result<crate::admin::AdminRecord, crate::admin::AdminError>),
    /// The marks changed: write every one to the state file.
    SaveAdmin(Vec<crate::admin::AdminRecord>),
    /// These marks name objects the configuration no longer has: they are
    /// dropped (for the log).
    AdminDropped(Vec<crate::admin::AdminRecord>),
}

/// How a reload renumbers vservers and services, so that state kept at
/// the edges by id (persistence entries) survives it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Renumbering {
    /// Old id → new id, `None` where the reload removed it.
    pub vservers: IdVec<VServerId, Option<VServerId>>,
    pub services: IdVec<ServiceId, Option<ServiceId>>,
}

/// This site's services as it reports them to other sites.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LocalReport {
    pub services: Vec<ReportedService>,
    pub site: SiteFigures,
}

/// A persistence entry to record in this node's session table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstallSession {
    pub vserver: VServerId,
    pub key: IpAddr,
    pub service: ServiceId,
    pub remaining: Duration,
}
