//! Raw IP sockets for advertisements (IP protocol 112).

use std::io::{self, IoSliceMut};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
use std::ops::Range;
use std::os::fd::AsRawFd;

use nix::sys::socket::{
    ControlMessageOwned, MsgFlags, SockaddrStorage, recvmsg, setsockopt, sockopt,
};
use rustix::net::sockopt::set_ip_multicast_if_with_ifindex;
use sextant_vrrp::packet::{IPPROTO_VRRP, VRRP_GROUP_V4, VRRP_GROUP_V6, VRRP_TTL};
use socket2::{Domain, InterfaceIndexOrAddress, Protocol, SockAddr, SockFilter, Socket, Type};
use tokio::io::unix::AsyncFd;

use crate::{Interface, NetError};

/// One received advertisement, as [`AdvertSocket::recv`] returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The IP source (IPv6: link-local, without scope).
    pub from: IpAddr,
    /// IPv4 header TTL, or the IPV6_HOPLIMIT control message: RFC 5798
    /// requires 255, proof that the sender is on the link.
    pub ttl: u8,
    /// Where the VRRP message is in the caller's buffer (after the IPv4
    /// header and its options; all of it for IPv6).
    pub payload: Range<usize>,
    /// The IP destination (group or a unicast peer address), when known.
    pub to: Option<IpAddr>,
}

fn invalid(msg: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// Parses the IPv4 header a raw socket returns before the payload: source,
/// destination, TTL and the payload's range (header length from IHL, end
/// from the total length). Errors, never panics, on anything malformed.
pub fn parse_ipv4(packet: &[u8]) -> io::Result<Received> {
    let Some(&[vihl, _, l0, l1, _, _, _, _, ttl, proto]) = packet.first_chunk::<10>() else {
        return Err(invalid("truncated IPv4 header"));
    };
    if vihl >> 4 != 4 {
        return Err(invalid("not an IPv4 header"));
    }
    let ihl = usize::from(vihl & 0x0f) * 4;
    if ihl < 20 || packet.len() < ihl {
        return Err(invalid("truncated IPv4 header"));
    }
    if proto != IPPROTO_VRRP {
        return Err(invalid("not IP protocol 112"));
    }
    let total = usize::from(u16::from_be_bytes([l0, l1]));
    if total < ihl {
        return Err(invalid("IPv4 total length shorter than its header"));
    }
    // The kernel gives the whole datagram; a shorter total length (padding
    // after it) bounds the payload.
    let end = total.min(packet.len());
    let src = Ipv4Addr::new(packet[12], packet[13], packet[14], packet[15]);
    let dst = Ipv4Addr::new(packet[16], packet[17], packet[18], packet[19]);
    Ok(Received {
        from: src.into(),
        ttl,
        payload: ihl..end,
        to: Some(dst.into()),
    })
}

/// A raw protocol-112 socket that sends on device `dev` (`dev_index`) from
/// `source` with TTL / hop limit 255 and does not loop its multicasts back.
///
/// No IP_HDRINCL: for a multicast destination the kernel takes the TTL of
/// IP_MULTICAST_TTL, so it builds the header itself. SO_BINDTODEVICE makes
/// `dev` the output interface. The source address:
/// * IPv4: IP_MULTICAST_IF's address (an `ip_mreqn`), not bind(2): an IPv4
///   raw socket bound to an address receives only datagrams sent to that
///   address, never the group's. This also works on a device (the macvlan)
///   that does not hold the address.
/// * IPv6: bind(2) to the link-local address (with its scope); IPv6 raw
///   sockets still receive the groups they joined.
pub(crate) fn raw_socket(dev: &str, dev_index: u32, source: IpAddr) -> io::Result<Socket> {
    let proto = Some(Protocol::from(i32::from(IPPROTO_VRRP)));
    let sock = match source {
        IpAddr::V4(v4) => {
            let sock = Socket::new(Domain::IPV4, Type::RAW, proto)?;
            sock.bind_device(Some(dev.as_bytes()))?;
            sock.set_multicast_ttl_v4(u32::from(VRRP_TTL))?;
            sock.set_ttl_v4(u32::from(VRRP_TTL))?;
            sock.set_multicast_loop_v4(false)?;
            set_multicast_if_v4(&sock, dev_index, v4)?;
            sock
        }
        IpAddr::V6(v6) => {
            let sock = Socket::new(Domain::IPV6, Type::RAW, proto)?;
            sock.bind_device(Some(dev.as_bytes()))?;
            sock.set_multicast_hops_v6(u32::from(VRRP_TTL))?;
            sock.set_unicast_hops_v6(u32::from(VRRP_TTL))?;
            sock.set_multicast_loop_v6(false)?;
            sock.set_multicast_if_v6(dev_index)?;
            sock.set_recv_hoplimit_v6(true)?;
            setsockopt(&sock, sockopt::Ipv6RecvPacketInfo, &true)?;
            let scope = if crate::is_link_local(v6.into()) {
                dev_index
            } else {
                0
            };
            sock.bind(&SockAddr::from(SocketAddrV6::new(v6, 0, 0, scope)))?;
            sock
        }
    };
    sock.set_nonblocking(true)?;
    Ok(sock)
}

/// IP_MULTICAST_IF with an `ip_mreqn`: output interface and source address.
fn set_multicast_if_v4(sock: &Socket, index: u32, source: Ipv4Addr) -> io::Result<()> {
    set_ip_multicast_if_with_ifindex(sock, &Ipv4Addr::UNSPECIFIED, &source, index)?;
    Ok(())
}

/// Attaches a classic BPF filter that accepts nothing: for a socket that
/// only sends, so the kernel does not queue a copy of every advert on the
/// link for it.
pub(crate) fn drop_all_input(sock: &Socket) -> io::Result<()> {
    // BPF_RET | BPF_K, accept 0 bytes.
    sock.attach_filter(&[SockFilter::new(0x06, 0, 0, 0)])
}

/// The multicast group of `source`'s family, scoped to `index` for IPv6.
pub(crate) fn group(source: IpAddr, index: u32) -> SockAddr {
    match source {
        IpAddr::V4(_) => SockAddr::from(SocketAddrV4::new(VRRP_GROUP_V4, 0)),
        IpAddr::V6(_) => SockAddr::from(SocketAddrV6::new(VRRP_GROUP_V6, 0, 0, index)),
    }
}

/// Sends one whole datagram to `to`.
pub(crate) fn send_all(sock: &Socket, payload: &[u8], to: &SockAddr) -> io::Result<()> {
    let n = sock.send_to(payload, to)?;
    if n == payload.len() {
        Ok(())
    } else {
        Err(io::Error::new(io::ErrorKind::WriteZero, "short send"))
    }
}

/// The advertisement socket of one (interface, family): raw IP protocol
/// 112, bound to the interface, in the VRRP group on it, sending from the
/// interface's primary address with TTL / hop limit 255, non-blocking under
/// tokio's reactor.
///
/// Received IPv4 datagrams come with their IP header, which [`recv`]
/// strips (by IHL, so options are handled); IPv6 ones without, their hop
/// limit and destination coming as control messages.
///
/// [`recv`]: AdvertSocket::recv
pub struct AdvertSocket {
    fd: AsyncFd<Socket>,
    name: String,
    source: IpAddr,
    group: SockAddr,
}

impl AdvertSocket {
    /// IPv4: from the interface's primary address to 224.0.0.18. Needs a
    /// tokio runtime (the reactor).
    pub fn open_v4(interface: &Interface) -> Result<AdvertSocket, NetError> {
        let source = interface.ipv4.ok_or_else(|| NetError::NoSourceAddress {
            name: interface.name.clone(),
            family: "IPv4",
        })?;
        Self::open(interface, source.into())
    }

    /// IPv6: from the interface's link-local address to ff02::12 (RFC 5798
    /// §5.1.2.1). The link-local address must have finished DAD. Needs a
    /// tokio runtime (the reactor).
    pub fn open_v6(interface: &Interface) -> Result<AdvertSocket, NetError> {
        let source = interface
            .ipv6_link_local
            .ok_or_else(|| NetError::NoSourceAddress {
                name: interface.name.clone(),
                family: "IPv6",
            })?;
        Self::open(interface, source.into())
    }

    fn open(interface: &Interface, source: IpAddr) -> Result<AdvertSocket, NetError> {
        let err = |op| {
            move |source| NetError::Socket {
                name: interface.name.clone(),
                op,
                source,
            }
        };
        let sock = raw_socket(&interface.name, interface.index, source)
            .map_err(err("open the VRRP advert socket"))?;
        match source {
            IpAddr::V4(_) => sock.join_multicast_v4_n(
                &VRRP_GROUP_V4,
                &InterfaceIndexOrAddress::Index(interface.index),
            ),
            IpAddr::V6(_) => sock.join_multicast_v6(&VRRP_GROUP_V6, interface.index),
        }
        .map_err(err("join the VRRP multicast group"))?;
        // SAFETY: a socket2::Socket owns its descriptor and returns the
        // same one from as_raw_fd until dropped, which only the AsyncFd
        // does.
        let fd = unsafe { AsyncFd::register(sock) }
            .map_err(|e| err("register the VRRP advert socket with tokio")(e.into_parts().1))?;
        Ok(AdvertSocket {
            fd,
            name: interface.name.clone(),
            source,
            group: group(source, interface.index),
        })
    }

    /// The source address adverts leave with: the checksum's pseudo-header
    /// needs it ([`Advert::encode`](sextant_vrrp::packet::Advert::encode)).
    pub fn source(&self) -> IpAddr {
        self.source
    }

    /// The interface's name.
    pub fn interface(&self) -> &str {
        &self.name
    }

    /// Receives one advertisement into `buf`. A datagram that does not fit
    /// or whose IP header is malformed is an `InvalidData` error (the
    /// datagram is consumed); the caller logs it and calls again.
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<Received> {
        loop {
            let mut guard = self.fd.readable().await?;
            match guard.try_io(|inner| recv_one(inner.get_ref(), buf, self.source)) {
                Ok(result) => return result,
                Err(_would_block) => continue,
            }
        }
    }

    /// Multicasts one encoded advertisement. Non-blocking: a full send
    /// buffer is a `WouldBlock` error (the advert is lost, as on the wire).
    pub fn send(&self, payload: &[u8]) -> io::Result<()> {
        send_all(self.fd.get_ref(), payload, &self.group)
    }
}

/// Room for the IPV6_HOPLIMIT and IPV6_PKTINFO control messages, aligned
/// for the `cmsghdr`s the kernel writes into it.
#[repr(C, align(8))]
struct Control([u8; 128]);

/// One recvmsg(2), then the family's parsing.
fn recv_one(sock: &Socket, buf: &mut [u8], family_of: IpAddr) -> io::Result<Received> {
    let mut control = Control([0; 128]);
    let mut iov = [IoSliceMut::new(buf)];
    let msg = recvmsg::<SockaddrStorage>(
        sock.as_raw_fd(),
        &mut iov,
        Some(&mut control.0),
        MsgFlags::MSG_DONTWAIT,
    )?;
    if msg.flags.contains(MsgFlags::MSG_TRUNC) {
        return Err(invalid("datagram longer than the receive buffer"));
    }
    let n = msg.bytes;
    let (mut hop_limit, mut to) = (None, None);
    if family_of.is_ipv6() {
        // MSG_CTRUNC (cannot happen with this buffer): the hop limit may be
        // among the lost, so the datagram cannot be judged.
        let cmsgs = msg
            .cmsgs()
            .map_err(|_| invalid("control messages truncated"))?;
        for cmsg in cmsgs {
            match cmsg {
                ControlMessageOwned::Ipv6HopLimit(v) => hop_limit = u8::try_from(v).ok(),
                ControlMessageOwned::Ipv6PacketInfo(info) => {
                    to = Some(IpAddr::V6(Ipv6Addr::from(info.ipi6_addr.s6_addr)));
                }
                _ => {}
            }
        }
    }
    let from = msg.address.as_ref().and_then(sockaddr_ip);
    let data = buf.get(..n).unwrap_or_default();
    match family_of {
        IpAddr::V4(_) => parse_ipv4(data),
        IpAddr::V6(_) => {
            let from = from.ok_or_else(|| invalid("no IPv6 source address"))?;
            let ttl = hop_limit.ok_or_else(|| invalid("no IPV6_HOPLIMIT control message"))?;
            Ok(Received {
                from,
                ttl,
                payload: 0..n,
                to,
            })
        }
    }
}

/// The address in the source address recvmsg filled.
fn sockaddr_ip(addr: &SockaddrStorage) -> Option<IpAddr> {
    if let Some(sin6) = addr.as_sockaddr_in6() {
        Some(IpAddr::V6(sin6.ip()))
    } else {
        addr.as_sockaddr_in().map(|sin| IpAddr::V4(sin.ip()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(ihl: u8, total: u16) -> Vec<u8> {
        let mut h = vec![0u8; (usize::from(ihl) * 4).max(20)];
        h[0] = 0x40 | ihl;
        h[2..4].copy_from_slice(&total.to_be_bytes());
        h[8] = 255;
        h[9] = 112;
        h[12..16].copy_from_slice(&[10, 0, 0, 1]);
        h[16..20].copy_from_slice(&[224, 0, 0, 18]);
        h
    }

    #[test]
    fn strips_the_header_by_ihl_including_options() {
        let mut p = header(6, 24 + 4);
        p.extend_from_slice(&[1, 2, 3, 4]);
        let r = parse_ipv4(&p).unwrap();
        assert_eq!(r.payload, 24..28);
        assert_eq!(r.ttl, 255);
        assert_eq!(r.from, IpAddr::from([10, 0, 0, 1]));
        assert_eq!(r.to, Some(IpAddr::from([224, 0, 0, 18])));
    }

    #[test]
    fn malformed_headers_are_errors() {
        for bad in [
            vec![],
            vec![0x45; 9],
            header(5, 20)[..19].to_vec(),
            header(15, 60)[..40].to_vec(), // IHL beyond the data
            header(4, 20),                 // IHL below 5
            header(5, 10),                 // total length inside the header
        ] {
            assert_eq!(
                parse_ipv4(&bad).unwrap_err().kind(),
                io::ErrorKind::InvalidData,
                "{bad:?}"
            );
        }
        let mut v6 = header(5, 20);
        v6[0] = 0x65;
        assert!(parse_ipv4(&v6).is_err());
    }

    #[test]
    fn total_length_bounds_the_payload() {
        let mut p = header(5, 22);
        p.extend_from_slice(&[9, 9, 0, 0]);
        assert_eq!(parse_ipv4(&p).unwrap().payload, 20..22);
    }
}
