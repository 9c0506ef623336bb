//! Gratuitous ARP (AF_PACKET) and unsolicited neighbour advertisements
//! (ICMPv6), so that hosts and switches learn where a VIP now lives.

use std::io;
use std::mem::size_of;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV6};
use std::os::fd::AsRawFd;

use nix::sys::socket::{AddressFamily, LinkAddr, MsgFlags, SockaddrLike, sendto};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

const ETH_P_ARP: u16 = 0x0806;
const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);

/// A gratuitous ARP frame: Ethernet broadcast from `mac`, an ARP *reply*
/// whose sender and target are both `ip` and `mac` (the form Linux takes
/// as gratuitous, `arp_process`). Not the request form RFC 5227 prefers: a
/// request for the VIP is answered by whoever still holds it, and during a
/// takeover that is the old master, whose reply from the shared virtual
/// MAC teaches the switch the old port again (measured on failback: 10 to
/// 40 ms of lost pings). Nobody answers a reply.
pub(crate) fn garp_frame(mac: [u8; 6], ip: Ipv4Addr) -> Vec<u8> {
    let mut f = Vec::with_capacity(42);
    f.extend_from_slice(&[0xff; 6]); // destination: broadcast
    f.extend_from_slice(&mac); // source
    f.extend_from_slice(&ETH_P_ARP.to_be_bytes());
    f.extend_from_slice(&1u16.to_be_bytes()); // hardware: Ethernet
    f.extend_from_slice(&0x0800u16.to_be_bytes()); // protocol: IPv4
    f.extend_from_slice(&[6, 4]); // address lengths
    f.extend_from_slice(&2u16.to_be_bytes()); // operation: reply
    f.extend_from_slice(&mac); // sender MAC
    f.extend_from_slice(&ip.octets()); // sender IP
    f.extend_from_slice(&mac); // target MAC: the sender's (gratuitous)
    f.extend_from_slice(&ip.octets()); // target IP
    f
}

/// An unsolicited neighbour advertisement for `target` (RFC 4861 §7.2.6):
/// type 136, Override set (so caches replace the old MAC), Solicited
/// clear, and the target link-layer address option carrying `mac`. The
/// checksum is left 0: the kernel computes it on ICMPv6 raw sockets.
pub(crate) fn na_message(mac: [u8; 6], target: Ipv6Addr) -> Vec<u8> {
    let mut m = Vec::with_capacity(32);
    m.extend_from_slice(&[136, 0, 0, 0]); // type, code, checksum
    m.extend_from_slice(&[0x20, 0, 0, 0]); // R=0 S=0 O=1, reserved
    m.extend_from_slice(&target.octets());
    m.extend_from_slice(&[2, 1]); // option: target link-layer address, 8 bytes
    m.extend_from_slice(&mac);
    m
}

/// Sends one link-layer frame on interface `index` through an AF_PACKET
/// socket opened with protocol 0 (it receives nothing).
pub(crate) fn send_frame(sock: &Socket, index: u32, frame: &[u8]) -> io::Result<()> {
    let sll = libc::sockaddr_ll {
        sll_family: AddressFamily::Packet as u16,
        sll_protocol: ETH_P_ARP.to_be(),
        sll_ifindex: i32::try_from(index).unwrap_or(0),
        sll_hatype: 0,
        sll_pkttype: 0,
        sll_halen: 6,
        sll_addr: [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0],
    };
    // Neither nix nor rustix nor socket2 builds a link-layer address from
    // its fields; nix takes one from the raw struct.
    // SAFETY: `sll` is a live, fully initialised sockaddr_ll and the length
    // passed is its size; from_raw copies it.
    let to = unsafe {
        LinkAddr::from_raw(
            (&sll as *const libc::sockaddr_ll).cast(),
            Some(size_of::<libc::sockaddr_ll>() as u32),
        )
    }
    .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "bad link-layer address"))?;
    sendto(sock.as_raw_fd(), frame, &to, MsgFlags::empty())?;
    Ok(())
}

/// An AF_PACKET socket for [`send_frame`].
pub(crate) fn packet_socket() -> io::Result<Socket> {
    Socket::new(Domain::PACKET, Type::RAW, Some(Protocol::from(0)))
}

/// An ICMPv6 socket on `dev` for neighbour advertisements: hop limit 255
/// (RFC 4861 §7.1.2: receivers drop NAs with any other).
pub(crate) fn icmpv6_socket(dev: &str, index: u32) -> io::Result<Socket> {
    let sock = Socket::new(Domain::IPV6, Type::RAW, Some(Protocol::ICMPV6))?;
    sock.bind_device(Some(dev.as_bytes()))?;
    sock.set_multicast_hops_v6(255)?;
    sock.set_unicast_hops_v6(255)?;
    sock.set_multicast_if_v6(index)?;
    sock.set_multicast_loop_v6(false)?;
    crate::socket::drop_all_input(&sock)?;
    Ok(sock)
}

/// Sends an unsolicited NA to all nodes (ff02::1) on `index`.
pub(crate) fn send_na(sock: &Socket, index: u32, mac: [u8; 6], target: Ipv6Addr) -> io::Result<()> {
    let to = SockAddr::from(SocketAddrV6::new(ALL_NODES, 0, 0, index));
    crate::socket::send_all(sock, &na_message(mac, target), &to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garp_is_a_broadcast_reply_for_itself() {
        let f = garp_frame([0, 0, 0x5e, 0, 1, 7], Ipv4Addr::new(192, 0, 2, 7));
        assert_eq!(f.len(), 42);
        assert_eq!(&f[..6], &[0xff; 6]);
        assert_eq!(&f[6..12], &[0, 0, 0x5e, 0, 1, 7]);
        assert_eq!(&f[12..14], &[0x08, 0x06]);
        assert_eq!(&f[20..22], &[0, 2], "a reply, which nobody answers");
        assert_eq!(&f[22..28], &f[6..12]);
        assert_eq!(&f[28..32], &[192, 0, 2, 7]);
        assert_eq!(&f[32..38], &f[6..12], "target MAC = sender MAC");
        assert_eq!(&f[38..42], &[192, 0, 2, 7]);
    }

    #[test]
    fn na_overrides_and_carries_the_mac() {
        let t: Ipv6Addr = "2001:db8::7".parse().unwrap();
        let m = na_message([0, 0, 0x5e, 0, 2, 7], t);
        assert_eq!(m.len(), 32);
        assert_eq!(m[0], 136);
        assert_eq!(m[4], 0x20);
        assert_eq!(&m[8..24], &t.octets());
        assert_eq!(&m[24..32], &[2, 1, 0, 0, 0x5e, 0, 2, 7]);
    }
}
