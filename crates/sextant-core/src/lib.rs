//! The pure decision core of Sextant.
//!
//! Nothing in this crate opens a socket, reads a clock or touches a global
//! random number generator. The edges (DNS server, monitors, metric exchange)
//! feed it immutable [`Snapshot`]s and [`Query`]s; it returns a [`Decision`]
//! and, when asked, a trace that explains the decision. This keeps every
//! answer reproducible, unit-testable and benchmarkable.

// Pure: no unsafe code, and (crate clippy.toml) no clock, socket, file or
// spawned task.
#![forbid(unsafe_code)]

pub mod admin;
mod choose;
pub mod dc;
pub mod dc_answer;
mod dc_client;
pub mod decide;
pub mod dnssec;
pub mod health;
pub mod id;
pub mod load;
pub mod location;
pub mod location_db;
pub mod log_throttle;
pub mod model;
pub mod policy;
pub mod records;
pub mod rtt;
mod rtt_compact;
pub mod select;
pub mod snapshot;
pub mod status;
pub mod trace;
pub mod vrrp;

pub use admin::{
    AdminCause, AdminKind, AdminMark, AdminState, AdminTable, AdminTarget, ConfigDisabled,
};
pub use dc::{
    Balance, ClientCriterion, DcAddress, DcCriterion, DcGroup, DcHealth, DcOrder, DcOrders,
    DcRecord, DcRecordId, DcSelection, Direction, RecordStatus, ServiceCriterion,
};
pub use decide::{
    AnswerBuf, ChainEnd, ClientSubnet, Cursor, Decision, LdnsUse, NoSessions, Outcome, Query,
    QueryType, Reason, Sessions, Stick, decide,
};
pub use health::{HealthTally, Transition, monitors_up};
pub use id::{IdVec, Idx};
pub use load::{HttpUrl, LoadKind, MetricSelector, ServiceMetrics, SiteFigures};
pub use location::{Coordinates, Location, LocationCode, LocationError};
pub use location_db::{LocationDb, LocationDbBuilder, Place, PlaceId, RangeError, Source};
pub use model::*;
pub use policy::{
    DnsAction, DnsActionId, DnsActionKind, DnsPolicy, DnsPolicyId, Expr, Goto, PolicyBinding,
    RequestFacts,
};
pub use records::{NameNode, NodeId, RecordData, RecordTable, StaticRecord};
pub use rtt::{LdnsStats, PathFigures, RttCell, RttRowInfo, RttTable, RttTableBuilder};
pub use snapshot::{PeerLink, ServiceState, Snapshot};
pub use status::{MonitorStatus, ServiceStatus, StatusBuilder, StatusTable};
pub use trace::{FallbackWhy, MatchPass, NoTrace, OutWhy, SkipWhy, TraceEvent, Tracer, VecTrace};
pub use vrrp::{Tracking, VipAddress, Vrid, VrrpChecksum, VrrpParams, VrrpSettings};
