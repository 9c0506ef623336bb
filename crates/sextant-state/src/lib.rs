//! The state engine of a Sextant site.
//!
//! Everything a site decides about its own state happens here: monitor
//! results through hysteresis, reports from metric exchange peers and which
//! of the two decides (`-triggerMonitor`), load figures, persistence session
//! exchange, reload carry-over, readiness at start, and when to publish.
//! Like the decision core it is pure: events come in with `now`, effects go
//! out ([`Engine::apply`]); the binary only wires sockets, timers and signals
//! to it. That keeps the whole site replayable from a text file
//! ([`replay`]) and benchmarkable.

// Pure: no unsafe code, and (crate clippy.toml) no clock, socket, file or
// spawned task.
#![forbid(unsafe_code)]

pub mod admin;
mod dc;
pub mod effect;
pub mod engine;
pub mod event;
mod ldns;
pub mod listeners;
pub mod replay;

pub use admin::{AdminBook, AdminChange, AdminError, AdminRecord, config_records};
pub use dc::LossTargets;
pub use effect::{Effect, InstallSession, LocalReport, Renumbering};
pub use engine::{
    Engine, FIGURES_FLUSH, NO_MONITOR, Prepared, metric_exchange_configured, site_ip_vip,
};
pub use event::{
    Event, LocalSession, PeerServices, Probe, ReportedService, SharedRtt, SharedSession,
    SiteFigures,
};
