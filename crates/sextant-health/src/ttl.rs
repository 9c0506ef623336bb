//! The IP TTL (IPv6: hop limit) a datagram arrived with, for the path
//! figures of datacenter mode's Client Based selection (the LDNS probes).
//!
//! The kernel tells it only when asked (`IP_RECVTTL` / `IPV6_RECVHOPLIMIT`)
//! and only in a control message of `recvmsg`, which the standard library
//! and tokio do not read. This module is the crate's one place for that: a
//! `setsockopt` to ask, and a `recvmsg` whose control buffer is scanned for
//! the TTL. Both are libc calls on a socket the caller owns, on buffers that
//! live for the whole call; everything the kernel wrote is read with the
//! libc `CMSG_*` helpers, bounded by the lengths it reported.
//!
//! Where the option is refused (or on a system other than Linux, whose
//! control messages differ) [`request`] says `false`, [`recv`] reads the
//! datagram as usual and the TTL is `None`: the probe works without it.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

/// Control buffer for one TTL message: `CMSG_SPACE(sizeof(int))` is 24 on
/// 64-bit Linux; this leaves room for a second message the kernel may add.
/// `u64` elements keep it aligned for `cmsghdr`.
const CONTROL_WORDS: usize = 8;

/// Asks the kernel to report the TTL (`v6`: hop limit) of every datagram
/// received on `socket`. `false` when the platform refuses: reads then
/// carry no TTL.
pub(crate) fn request(socket: &impl AsRawFd, v6: bool) -> bool {
    #[cfg(target_os = "linux")]
    {
        let (level, name) = if v6 {
            (libc::IPPROTO_IPV6, libc::IPV6_RECVHOPLIMIT)
        } else {
            (libc::IPPROTO_IP, libc::IP_RECVTTL)
        };
        let on: libc::c_int = 1;
        // SAFETY: a plain setsockopt on an fd the caller keeps open for the
        // call; the value pointer and its size describe `on`, which lives on
        // this frame for the whole call and is only read by the kernel.
        let rc = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                level,
                name,
                (&raw const on).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        rc == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (socket.as_raw_fd(), v6);
        false
    }
}

/// Receives one datagram (non-blocking sockets report `WouldBlock` as
/// usual) into `buf`: its length, cut to `buf`, and the TTL it arrived with
/// when the kernel reported one ([`request`]).
pub(crate) fn recv(socket: &impl AsRawFd, buf: &mut [u8]) -> io::Result<(usize, Option<u8>)> {
    recv_fd(socket.as_raw_fd(), buf)
}

fn recv_fd(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<u8>)> {
    let mut control = [0u64; CONTROL_WORDS];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is plain old data; all zeroes (no name, no buffers) is
    // a valid value, filled in below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: `msg` points at `iov` (which describes `buf`) and `control`,
    // all alive and exclusively borrowed for the whole call; the kernel
    // writes at most the sizes declared in them.
    let n = unsafe { libc::recvmsg(fd, &raw mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = (n as usize).min(buf.len());
    Ok((n, ttl_of(&msg)))
}

/// The TTL or hop limit among the control messages `recvmsg` left in
/// `msg`, if any.
fn ttl_of(msg: &libc::msghdr) -> Option<u8> {
    // A truncated control buffer may end in a partial message: trust none.
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return None;
    }
    let mut found = None;
    // SAFETY: `msg` is the header `recvmsg` just filled: `msg_control` and
    // the `msg_controllen` it set describe the live control buffer, and the
    // CMSG_* helpers only return headers that lie within it (FIRSTHDR and
    // NXTHDR check the remaining length, returning null past the end).
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(msg) };
    while !cmsg.is_null() {
        // SAFETY: non-null headers from CMSG_FIRSTHDR/NXTHDR are within the
        // buffer; read unaligned since it is only byte data to us.
        let header = unsafe { cmsg.read_unaligned() };
        if is_ttl(header.cmsg_level, header.cmsg_type) {
            // SAFETY: CMSG_LEN(0) is a pure size computation.
            let data_len =
                (header.cmsg_len as usize).saturating_sub(unsafe { libc::CMSG_LEN(0) } as usize);
            if data_len >= std::mem::size_of::<libc::c_int>() {
                // SAFETY: the message's length says an int follows its
                // header, inside the buffer; read unaligned.
                let value = unsafe { libc::CMSG_DATA(cmsg).cast::<libc::c_int>().read_unaligned() };
                found = u8::try_from(value).ok();
            }
        }
        // SAFETY: as for CMSG_FIRSTHDR; `cmsg` is a header of `msg`.
        cmsg = unsafe { libc::CMSG_NXTHDR(msg, cmsg) };
    }
    found
}

/// Whether a control message of this level and type carries the TTL
/// (`IP_TTL`) or hop limit (`IPV6_HOPLIMIT`) as an `int`.
fn is_ttl(level: libc::c_int, kind: libc::c_int) -> bool {
    #[cfg(target_os = "linux")]
    {
        (level == libc::IPPROTO_IP && kind == libc::IP_TTL)
            || (level == libc::IPPROTO_IPV6 && kind == libc::IPV6_HOPLIMIT)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (level, kind);
        false
    }
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
