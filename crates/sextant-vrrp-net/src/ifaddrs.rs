//! Reading an interface: getifaddrs(3), which lists the addresses in the
//! kernel's order (an IPv4 subnet's primary address first).

use std::ffi::{CStr, CString};
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};

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
    let c = CString::new(name).map_err(|_| NetError::NoSuchInterface {
        name: name.to_owned(),
    })?;
    // SAFETY: if_nametoindex(3) reads a NUL-terminated string, which `c` is.
    let index = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if index == 0 {
        Err(NetError::NoSuchInterface {
            name: name.to_owned(),
        })
    } else {
        Ok(index)
    }
}

/// The list getifaddrs(3) returned, freed on drop.
struct IfAddrs(*mut libc::ifaddrs);

impl Drop for IfAddrs {
    fn drop(&mut self) {
        // SAFETY: the pointer came from a successful getifaddrs and is
        // freed once, here.
        unsafe { libc::freeifaddrs(self.0) }
    }
}

/// Reads interface `name` (in the calling thread's network namespace).
pub fn interface(name: &str) -> Result<Interface, NetError> {
    let index = index(name)?;
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs(3) writes a list head to a valid out pointer.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(NetError::ReadInterface {
            name: name.to_owned(),
            source: io::Error::last_os_error(),
        });
    }
    let list = IfAddrs(head);
    let mut found = Interface {
        name: name.to_owned(),
        index,
        mac: [0; 6],
        ipv4: None,
        ipv6_link_local: None,
        up: false,
    };
    let mut cur = list.0;
    while !cur.is_null() {
        // SAFETY: `cur` is a non-null node of the list, alive until `list`
        // is dropped at the end of this function.
        let entry = unsafe { &*cur };
        cur = entry.ifa_next;
        if entry.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let entry_name = unsafe { CStr::from_ptr(entry.ifa_name) };
        if entry_name.to_bytes() != name.as_bytes() || entry.ifa_addr.is_null() {
            continue;
        }
        // SAFETY: ifa_addr is non-null and points to a sockaddr whose
        // sa_family tells its real type, checked before each cast below.
        let family = i32::from(unsafe { (*entry.ifa_addr).sa_family });
        match family {
            libc::AF_PACKET => {
                // SAFETY: an AF_PACKET entry's address is a sockaddr_ll.
                let ll = unsafe { &*(entry.ifa_addr as *const libc::sockaddr_ll) };
                if ll.sll_halen == 6 {
                    found.mac.copy_from_slice(&ll.sll_addr[..6]);
                }
                let flags = entry.ifa_flags;
                found.up =
                    flags & libc::IFF_UP as u32 != 0 && flags & libc::IFF_RUNNING as u32 != 0;
            }
            libc::AF_INET if found.ipv4.is_none() => {
                // SAFETY: an AF_INET entry's address is a sockaddr_in.
                let sin = unsafe { &*(entry.ifa_addr as *const libc::sockaddr_in) };
                found.ipv4 = Some(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
            }
            libc::AF_INET6 if found.ipv6_link_local.is_none() => {
                // SAFETY: an AF_INET6 entry's address is a sockaddr_in6.
                let sin6 = unsafe { &*(entry.ifa_addr as *const libc::sockaddr_in6) };
                let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
                if crate::is_link_local(ip.into()) {
                    found.ipv6_link_local = Some(ip);
                }
            }
            _ => {}
        }
    }
    Ok(found)
}
