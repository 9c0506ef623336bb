//! Socket options that socket2 does not offer (Linux only), through rustix.

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsFd;

/// Never set DF on UDP answers and ignore path-MTU updates for them
/// (`IP_PMTUDISC_OMIT` / `IPV6_PMTUDISC_OMIT`), as Knot and gdnsd do.
///
/// A DNS answer is at most [`MAX_UDP`](crate::MAX_UDP) octets, which fits
/// every path; a spoofed ICMP "fragmentation needed" could otherwise lower
/// the MTU the kernel uses towards a resolver and make the answers
/// fragment, which is what off-path cache poisoning needs.
pub fn omit_path_mtu_discovery(socket: &impl AsFd, addr: SocketAddr) -> io::Result<()> {
    use rustix::net::sockopt::{
        Ipv4PathMtuDiscovery, Ipv6PathMtuDiscovery, set_ip_mtu_discover, set_ipv6_mtu_discover,
    };
    match addr {
        SocketAddr::V4(_) => set_ip_mtu_discover(socket, Ipv4PathMtuDiscovery::OMIT),
        SocketAddr::V6(_) => set_ipv6_mtu_discover(socket, Ipv6PathMtuDiscovery::OMIT),
    }
    .map_err(io::Error::from)
}
