//! The boundary between a virtual router and the network it runs on.
//!
//! [`machine::Machine`](crate::machine::Machine) returns
//! [`Action`](crate::machine::Action)s; a driver carries out the network
//! ones through a [`Link`]. The trait is small and synchronous so that the
//! driver can be tested with a recording double, and the Linux
//! implementation (raw sockets, netlink, AF_PACKET) lives in its own crate,
//! `sextant-vrrp-net`, keeping this one pure.

use std::net::IpAddr;

/// A VIP as the link layer handles it: the address and the prefix length it
/// is configured with (`/32` or `/128` for a host address, or the subnet's
/// length so that the kernel adds the connected route).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Vip {
    pub ip: IpAddr,
    pub prefix_len: u8,
}

impl Vip {
    /// A host VIP: `/32` for IPv4, `/128` for IPv6.
    pub fn host(ip: IpAddr) -> Vip {
        let prefix_len = match ip {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        };
        Vip { ip, prefix_len }
    }
}

impl std::fmt::Display for Vip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.ip, self.prefix_len)
    }
}

/// What a virtual router needs from the network to act on
/// [`machine::Action`](crate::machine::Action)s.
///
/// Every method is idempotent: taking addresses already held, or releasing
/// addresses not held, is not an error, so a driver can repeat an action
/// after a partial failure.
pub trait Link {
    type Error: std::error::Error + Send + Sync + 'static;
    /// Multicast one encoded advertisement (224.0.0.18 / ff02::12, TTL/hop
    /// limit 255).
    fn send_advert(&mut self, packet: &[u8]) -> Result<(), Self::Error>;
    /// Become the owner: bring the virtual MAC interface up if used, add the
    /// VIPs, answer ARP/ND.
    fn take_addresses(&mut self, vips: &[Vip]) -> Result<(), Self::Error>;
    /// Stop answering ARP/ND for the VIPs first, then remove them.
    fn release_addresses(&mut self, vips: &[Vip]) -> Result<(), Self::Error>;
    /// One gratuitous ARP (IPv4) / unsolicited NA with override flag (IPv6)
    /// per VIP.
    fn announce(&mut self, vips: &[Vip]) -> Result<(), Self::Error>;
}
