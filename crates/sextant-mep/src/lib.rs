//! Sextant's metric exchange protocol (MEP): how sites tell each other the
//! health and load of their services.
//!
//! * [`frame`] and [`message`]: the wire format (pure).
//! * [`session`]: the state machine of one connection — handshake,
//!   challenge-response authentication, keepalives, RTT (pure).
//! * [`sync`]: the service state stream — snapshot, numbered deltas,
//!   resync — and the merging of its steps (pure).
//! * [`state`]: the child's state file (backup lists kept across restarts).
//! * [`topology`]: who links with whom, who initiates, backup-parent takeover
//!   and return (pure).
//! * [`driver`]: the tokio side — listeners, connections from the site IP,
//!   TLS, reconnection, and the events the binary consumes.
//!
//! The protocol is documented in `docs/mep.md`.

pub mod driver;
pub mod frame;
pub mod message;
pub mod node;
pub mod session;
pub mod state;
pub mod sync;
mod tls;
pub mod topology;

pub use driver::{
    LocalReport, MepError, MepEvent, MepHandle, MepState, Options, PeerStatus, start, start_with,
};
pub use frame::{DEFAULT_MAX_FRAME, FrameError, FrameReader};
pub use message::Message;
pub use session::{Action, CloseReason, Session, SessionConfig, SessionEvent, State};
