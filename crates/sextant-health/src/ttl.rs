//! The IP TTL (IPv6: hop limit) a datagram arrived with, for the path
//! figures of datacenter mode's Client Based selection (the LDNS probes).
//!
//! The kernel tells it only when asked (`IP_RECVTTL` / `IPV6_RECVHOPLIMIT`)
//! and only in a control message of `recvmsg`, which the standard library
//! and tokio do not read. This module is the crate's one place for that: a
//! socket option to ask, and a `recvmsg` whose control messages are read
//! for the TTL, both through `nix` (no unsafe code here).
//!
//! Where the option is refused (or on a system other than Linux, whose
//! control messages differ) [`request`] says `false`, [`recv`] reads the
//! datagram as usual and the TTL is `None`: the probe works without it.

use std::io::{self, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd};

/// Asks the kernel to report the TTL (`v6`: hop limit) of every datagram
/// received on `socket`. `false` when the platform refuses: reads then
/// carry no TTL.
pub(crate) fn request(socket: &impl AsFd, v6: bool) -> bool {
    #[cfg(target_os = "linux")]
    {
        use nix::sys::socket::{setsockopt, sockopt};
        if v6 {
            setsockopt(socket, sockopt::Ipv6RecvHopLimit, &true).is_ok()
        } else {
            setsockopt(socket, sockopt::Ipv4RecvTtl, &true).is_ok()
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (socket.as_fd(), v6);
        false
    }
}

/// Receives one datagram (non-blocking sockets report `WouldBlock` as
/// usual) into `buf`: its length, cut to `buf`, and the TTL it arrived with
/// when the kernel reported one ([`request`]).
pub(crate) fn recv(socket: &impl AsRawFd, buf: &mut [u8]) -> io::Result<(usize, Option<u8>)> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    let len = buf.len();
    let mut iov = [IoSliceMut::new(buf)];
    // Room for the TTL and a second message the kernel may add.
    let mut control = nix::cmsg_space!(libc::c_int, libc::c_int);
    let msg = recvmsg::<()>(
        socket.as_raw_fd(),
        &mut iov,
        Some(&mut control),
        MsgFlags::empty(),
    )
    .map_err(io::Error::from)?;
    // A truncated control buffer may end in a partial message: trust none.
    let ttl = if msg.flags.contains(MsgFlags::MSG_CTRUNC) {
        None
    } else {
        msg.cmsgs().ok().and_then(|mut all| {
            all.find_map(|c| match c {
                ControlMessageOwned::Ipv4Ttl(t) | ControlMessageOwned::Ipv6HopLimit(t) => {
                    u8::try_from(t).ok()
                }
                _ => None,
            })
        })
    };
    Ok((msg.bytes.min(len), ttl))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    #[test]
    fn a_datagram_tells_the_ttl_it_was_sent_with() {
        let rx = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let tx = UdpSocket::bind("127.0.0.1:0").expect("bind");
        assert!(request(&rx, false), "IP_RECVTTL on Linux");
        tx.set_ttl(37).expect("IP_TTL");
        tx.send_to(b"hi", rx.local_addr().expect("addr"))
            .expect("send");
        let mut buf = [0u8; 16];
        assert_eq!(recv(&rx, &mut buf).expect("recv"), (2, Some(37)));
        assert_eq!(&buf[..2], b"hi");

        // Not asked: no TTL, the datagram all the same.
        let quiet = UdpSocket::bind("127.0.0.1:0").expect("bind");
        tx.send_to(b"abc", quiet.local_addr().expect("addr"))
            .expect("send");
        assert_eq!(recv(&quiet, &mut buf).expect("recv"), (3, None));
        // A buffer shorter than the datagram gets its start.
        tx.send_to(b"abcdef", rx.local_addr().expect("addr"))
            .expect("send");
        let mut short = [0u8; 4];
        assert_eq!(recv(&rx, &mut short).expect("recv"), (4, Some(37)));
    }

    #[test]
    fn ipv6_tells_the_hop_limit() {
        let Ok(rx) = UdpSocket::bind("[::1]:0") else {
            return; // no IPv6 loopback here
        };
        let tx = UdpSocket::bind("[::1]:0").expect("bind");
        assert!(request(&rx, true));
        socket2::SockRef::from(&tx)
            .set_unicast_hops_v6(9)
            .expect("IPV6_UNICAST_HOPS");
        tx.send_to(b"x", rx.local_addr().expect("addr"))
            .expect("send");
        let mut buf = [0u8; 4];
        assert_eq!(recv(&rx, &mut buf).expect("recv"), (1, Some(9)));
    }
}
