//! Sextant's metric exchange (MEP): how sites tell each other the
//! health and load of their services.
//!
//! * [`frame`] and [`message`]: the wire format (pure).
//! * [`session`]: the state machine of one connection — handshake,
//!   challenge-response authentication, keepalives, RTT (pure).
//! * [`sync`]: the service state stream — snapshot, numbered deltas,
//!   resync — and the merging of its steps (pure).
//! * [`state`]: the child's state file (backup lists kept across restarts),
//!   read and written here; its format is `sextant_mep_proto::state`.
//! * [`topology`]: who links with whom, who initiates, backup-parent takeover
//!   and return (pure).
//! * [`node`]: the decisions of one site — which connection counts, adoption
//!   offers, relaying children, UP/DOWN, what to dial — as a state machine
//!   fed inputs with `now` and answering outputs (pure).
//! * [`driver`]: the tokio side — listeners, connections from the site IP,
//!   TLS, reconnection, the state file, and the events the binary consumes;
//!   it carries out what the node decides.
//!
//! The protocol is documented in `docs/mep.md`.

pub mod driver;
pub mod state;
mod tls;

/// The protocol itself lives in the pure `sextant-mep-proto`.
pub use sextant_mep_proto::{frame, handshake, message, node, session, sync, topology};

pub use driver::{
    LocalReport, MepError, MepEvent, MepHandle, MepState, MepStatus, Options, PeerStatus, start,
    start_with,
};
pub use frame::{DEFAULT_MAX_FRAME, FrameError, FrameReader};
pub use message::Message;
pub use session::{Action, CloseReason, Session, SessionConfig, SessionEvent, State};
