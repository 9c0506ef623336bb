//! The Linux edge of Sextant's VRRP (SPEC §7, seed 004): what
//! [`sextant_vrrp`]'s pure state machine needs from the network.
//!
//! * [`interface`] reads an interface's index, MAC, primary addresses and
//!   whether it is up (for tracking interfaces);
//! * [`AdvertSocket`] sends and receives advertisements on one interface
//!   and family (raw IP protocol 112);
//! * [`LinuxLink`] implements [`sextant_vrrp::link::Link`] for one VRID on
//!   one interface: the virtual MAC (a macvlan `vrrp.<VRID>`), the VIPs
//!   (rtnetlink), gratuitous ARP and unsolicited NA (AF_PACKET / ICMPv6);
//! * [`add_local_address`] / [`remove_local_address`] put a VIP on `lo` for
//!   a backup that shares traffic (LVS-DR style), [`set_sysctl`] writes the
//!   sysctls that needs.
//!
//! System calls go through crates that make them safe: `nix` (getifaddrs,
//! if_nametoindex, recvmsg and its control messages, sendto),
//! `rustix` and `socket2` (socket options), and `netlink-packet-route`
//! over a synchronous `netlink-sys` socket for rtnetlink (the few requests
//! used are in `netlink.rs`). What none of them offers safely is in a small
//! `unsafe` block that says why it is sound.
//! Everything here needs CAP_NET_ADMIN and CAP_NET_RAW (root).

#[allow(unsafe_code)] // a link-layer address from its fields; the block says why it is sound
mod announce;
mod ifaddrs;
mod link;
mod netlink;
#[allow(unsafe_code)] // registering with tokio's reactor; the block says why it is sound
mod socket;
mod sysctl;

use std::io;
use std::net::IpAddr;

pub use ifaddrs::{Interface, interface};
pub use link::{LinuxLink, LinuxLinkOptions};
pub use socket::{AdvertSocket, Received, parse_ipv4};
pub use sysctl::{Shared as SharedSysctl, set_sysctl};

use sextant_vrrp::link::Vip;

/// What went wrong at the network edge. Each variant names the interface or
/// address and the operation, so that the log line alone says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// The interface does not exist (in this network namespace).
    #[error("no interface {name}: check the `interface` setting and `ip link`")]
    NoSuchInterface { name: String },
    /// Reading the interface list failed.
    #[error("cannot read the addresses of {name}: {source}")]
    ReadInterface { name: String, source: io::Error },
    /// Adverts need a source address of the family on the interface.
    #[error(
        "{name} has no {family} address to send VRRP adverts from (IPv4: a primary address; IPv6: a link-local one, after DAD)"
    )]
    NoSourceAddress { name: String, family: &'static str },
    /// A setting this crate cannot act on.
    #[error("invalid VRRP link setting on {name}: {reason}")]
    Invalid { name: String, reason: String },
    /// A socket could not be opened or configured.
    #[error("cannot {op} on {name}: {source}{}", hint(.source))]
    Socket {
        name: String,
        op: &'static str,
        source: io::Error,
    },
    /// Creating, changing or deleting a link (the macvlan) failed.
    #[error("cannot {op} {name} on {parent}: {source}{}", hint(.source))]
    Link {
        name: String,
        parent: String,
        op: &'static str,
        source: io::Error,
    },
    /// Adding or removing an address failed.
    #[error("cannot {op} {vip} on {name}: {source}{}", hint(.source))]
    Address {
        vip: Vip,
        name: String,
        op: &'static str,
        source: io::Error,
    },
    /// A packet could not be sent.
    #[error("cannot send {what} on {name}: {source}{}", hint(.source))]
    Send {
        name: String,
        what: String,
        source: io::Error,
    },
    /// A sysctl could not be read or written.
    #[error("cannot set sysctl {path} to {value}: {source}{}", hint(.source))]
    Sysctl {
        path: String,
        value: String,
        source: io::Error,
    },
}

/// What an operator does about the commonest error.
fn hint(e: &io::Error) -> &'static str {
    match e.kind() {
        io::ErrorKind::PermissionDenied => " (run as root or grant CAP_NET_ADMIN and CAP_NET_RAW)",
        _ => "",
    }
}

/// Adds `vip` to interface `name` (typically `lo`), idempotently: a VIP that
/// is already there is not an error.
///
/// For a backup that shares traffic (LVS-DR style): the VIP lives on `lo`
/// so that the node accepts packets for it, while `arp_ignore=1` and
/// `arp_announce=2` on the VRRP interface (see [`set_sysctl`]) stop it from
/// answering ARP for it, which stays the master's job.
pub fn add_local_address(name: &str, vip: &Vip) -> Result<(), NetError> {
    let index = ifaddrs::index(name)?;
    link::add_address(&mut open_netlink(name)?, index, name, vip)
}

/// Removes `vip` from interface `name`, idempotently: a VIP that is not
/// there is not an error.
pub fn remove_local_address(name: &str, vip: &Vip) -> Result<(), NetError> {
    let index = ifaddrs::index(name)?;
    link::delete_address(&mut open_netlink(name)?, index, name, vip)
}

/// A netlink socket for changes to interface `name`.
fn open_netlink(name: &str) -> Result<netlink::Netlink, NetError> {
    netlink::Netlink::open().map_err(|source| NetError::Socket {
        name: name.to_owned(),
        op: "open a netlink socket",
        source,
    })
}

/// Whether `ip` is an IPv6 link-local unicast address (fe80::/10).
pub(crate) fn is_link_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
        IpAddr::V4(_) => false,
    }
}
