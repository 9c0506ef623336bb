//! Reading an interface: getifaddrs(3) (through nix), which lists the
//! addresses in the kernel's order (an IPv4 subnet's primary address
//! first).

use std::net::{Ipv4Addr, Ipv6Addr};

use nix::ifaddrs::getifaddrs;
use nix::net::if_::{InterfaceFlags, if_nametoindex};

use crate::NetError;

/// An interface as VRRP uses it, read by [`interface`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    pub name: String,
    pub index: u32,
    /// Its own (burned-in or configured) MAC: the Ethernet source of what
    /// is sent without the virtual MAC.
    pub mac: [u8; 6],
    /// The primary IPv4 address (the first the kernel lists): the source
    /// of IPv4 adverts, as RFC 5798 §5.1.1.1 asks.
    pub ipv4: Option<Ipv4Addr>,
    /// The first IPv6 link-local address: the source of IPv6 adverts
    /// (RFC 5798 §5.1.2.1). Listed once configured, even while DAD runs.
    pub ipv6_link_local: Option<Ipv6Addr>,
    /// IFF_UP and IFF_RUNNING (operationally up, carrier present): an
    /// interface that is not up makes a tracking virtual router step down.
    pub up: bool,
}

/// The interface index of `name`.
pub(crate) fn index(name: &str) -> Result<u32, NetError> {
    // A name with a NUL in it is an error too: no such interface.
    if_nametoindex(name).map_err(|_| NetError::NoSuchInterface {
        name: name.to_owned(),
    })
}

/// Reads interface `name` (in the calling thread's network namespace).
pub fn interface(name: &str) -> Result<Interface, NetError> {
    let index = index(name)?;
    let list = getifaddrs().map_err(|e| NetError::ReadInterface {
        name: name.to_owned(),
        source: e.into(),
    })?;
    let mut found = Interface {
        name: name.to_owned(),
        index,
        mac: [0; 6],
        ipv4: None,
        ipv6_link_local: None,
        up: false,
    };
    for entry in list {
        if entry.interface_name != name {
            continue;
        }
        let Some(addr) = entry.address else {
            continue;
        };
        if let Some(ll) = addr.as_link_addr() {
            if ll.halen() == 6
                && let Some(mac) = ll.addr()
            {
                found.mac = mac;
            }
            found.up = entry
                .flags
                .contains(InterfaceFlags::IFF_UP | InterfaceFlags::IFF_RUNNING);
        } else if let Some(sin) = addr.as_sockaddr_in() {
            if found.ipv4.is_none() {
                found.ipv4 = Some(sin.ip());
            }
        } else if let Some(sin6) = addr.as_sockaddr_in6() {
            let ip = sin6.ip();
            if found.ipv6_link_local.is_none() && crate::is_link_local(ip.into()) {
                found.ipv6_link_local = Some(ip);
            }
        }
    }
    Ok(found)
}
