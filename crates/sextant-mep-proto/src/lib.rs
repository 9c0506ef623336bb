//! Metric exchange, the protocol (seed 001), pure: frames, messages, the
//! per-connection session machine, the topology (mesh, parent-child, backup
//! parents), service streams, the state file's format, and the node
//! (`node::Node`): one site's decisions over all its connections, inputs
//! with `now` in, outputs out. No socket, clock, file or task here; the
//! tokio TCP/TLS driver in `sextant-mep` carries the outputs out.

// Pure: no unsafe code, and (crate clippy.toml) no clock, socket, file or
// spawned task.
#![forbid(unsafe_code)]

pub mod frame;
pub mod handshake;
pub mod message;
pub mod node;
pub mod session;
pub mod state;
pub mod sync;
pub mod topology;
