//! Sextant's metric exchange protocol (MEP): how sites tell each other the
//! health and load of their services.
//!
//! * [`frame`] and [`message`]: the wire format (pure).
//! * [`session`]: the state machine of one connection — handshake,
//!   challenge-response authentication, keepalives, RTT (pure).
//! * [`topology`]: who links with whom, who initiates, backup-parent takeover
//!   and return (pure).
//!
//! The protocol is documented in `docs/mep.md`.

pub mod frame;
pub mod message;
pub mod session;
pub mod topology;

pub use frame::{DEFAULT_MAX_FRAME, FrameError, FrameReader};
pub use message::{Message, Role};
pub use session::{Action, CloseReason, Session, SessionConfig, SessionEvent, State};
