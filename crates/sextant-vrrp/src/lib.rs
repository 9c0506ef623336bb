//! VRRPv3 for Sextant's active-active sites (seed 004): several nodes at a
//! site share its virtual addresses, each VIP master on exactly one node.
//!
//! This crate is pure: [`packet`] encodes and checks advertisements,
//! [`machine`] is one virtual router's state machine, driven by received
//! adverts, timer expiries and priority changes, each with `now`, and
//! returning the actions for the edges (send an advert, take or give up the
//! addresses, announce them, arm a timer). Raw sockets, ARP/ND and address
//! changes live in `sextant-vrrp-net`, behind the small [`link::Link`]
//! trait.

// Pure: no unsafe code, and (crate clippy.toml) no clock, socket, file or
// spawned task.
#![forbid(unsafe_code)]

pub mod interface;
pub mod link;
pub mod machine;
pub mod packet;
pub mod router;
pub mod tracking;
