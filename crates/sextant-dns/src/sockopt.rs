//! Socket options that socket2 does not offer (Linux only).
//!
//! The crate's second and last unsafe code: one `setsockopt` call with a
//! plain integer value.
#![allow(unsafe_code)]

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

/// Never set DF on UDP answers and ignore path-MTU updates for them
/// (`IP_PMTUDISC_OMIT` / `IPV6_PMTUDISC_OMIT`), as Knot and gdnsd do.
///
/// A DNS answer is at most [`MAX_UDP`](crate::MAX_UDP) octets, which fits
/// every path; a spoofed ICMP "fragmentation needed" could otherwise lower
/// the MTU the kernel uses towards a resolver and make the answers
/// fragment, which is what off-path cache poisoning needs.
pub fn omit_path_mtu_discovery(socket: &impl AsRawFd, addr: SocketAddr) -> io::Result<()> {
    let (level, name, value) = match addr {
        SocketAddr::V4(_) => (
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            libc::IP_PMTUDISC_OMIT,
        ),
        SocketAddr::V6(_) => (
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU_DISCOVER,
            libc::IPV6_PMTUDISC_OMIT,
        ),
    };
    let value: libc::c_int = value;
    // SAFETY: the option value is a live c_int and its exact size is passed;
    // the kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&raw const value).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
