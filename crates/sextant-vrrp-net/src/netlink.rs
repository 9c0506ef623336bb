//! The few rtnetlink requests VRRP makes: create and delete a macvlan, set
//! a link up or down or its MAC, add and delete addresses. The messages are
//! built with `netlink-packet-route` and go over a synchronous
//! `netlink-sys` socket (the callers are synchronous code run by tokio
//! tasks; no second runtime). Each request asks for an ACK and waits for
//! it, so an error comes back as the errno of that request.

use std::io;
use std::net::IpAddr;
use std::time::Duration;

use netlink_packet_core::{
    ErrorBuffer, NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST, NLMSG_ALIGNTO, NLMSG_ERROR,
    NetlinkBuffer, NetlinkHeader, NetlinkMessage, NetlinkPayload,
};
use netlink_packet_route::address::{
    AddressAttribute, AddressFlags, AddressHeaderFlags, AddressMessage,
};
use netlink_packet_route::link::{
    InfoData, InfoKind, InfoMacVlan, LinkAttribute, LinkFlags, LinkInfo, LinkMessage, MacVlanMode,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{Socket, protocols::NETLINK_ROUTE};
use rustix::net::sockopt::{Timeout, set_socket_timeout};

/// A NETLINK_ROUTE socket, opened for a few requests.
pub(crate) struct Netlink {
    sock: Socket,
    seq: u32,
    buf: Vec<u8>,
}

fn invalid(msg: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

impl Netlink {
    pub(crate) fn open() -> io::Result<Netlink> {
        let sock = Socket::new(NETLINK_ROUTE)?;
        // The kernel answers at once; a bound on the wait turns a lost
        // answer into an error rather than a hang.
        set_socket_timeout(&sock, Timeout::Recv, Some(Duration::from_secs(5)))?;
        Ok(Netlink {
            sock,
            seq: 0,
            buf: Vec::with_capacity(16 * 1024),
        })
    }

    /// Sends `msg` with `flags` (besides NLM_F_REQUEST and NLM_F_ACK) and
    /// waits for its ACK: Ok, or the errno the kernel returned for it.
    fn request(&mut self, msg: RouteNetlinkMessage, flags: u16) -> io::Result<()> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let mut header = NetlinkHeader::default();
        header.flags = flags | NLM_F_REQUEST | NLM_F_ACK;
        header.sequence_number = seq;
        let mut msg = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(msg));
        msg.finalize();
        let mut bytes = vec![0u8; msg.buffer_len()];
        msg.serialize(&mut bytes);
        self.sock.send(&bytes, 0)?;
        loop {
            self.buf.clear();
            let n = self.sock.recv(&mut self.buf, 0)?;
            let mut rest = self.buf.get(..n).unwrap_or(&self.buf[..]);
            while !rest.is_empty() {
                let answer = NetlinkBuffer::new_checked(rest)
                    .map_err(|_| invalid("malformed netlink answer"))?;
                if answer.message_type() == NLMSG_ERROR && answer.sequence_number() == seq {
                    let error = ErrorBuffer::new_checked(answer.payload())
                        .map_err(|_| invalid("short netlink error message"))?;
                    return match error.code() {
                        None => Ok(()),
                        Some(code) => Err(io::Error::from_raw_os_error(-code.get())),
                    };
                }
                let len = answer.length() as usize;
                let step = len.next_multiple_of(usize::from(NLMSG_ALIGNTO));
                rest = rest.get(step..).unwrap_or_default();
            }
        }
    }

    fn link(index: u32, attributes: Vec<LinkAttribute>) -> LinkMessage {
        let mut msg = LinkMessage::default();
        msg.header.interface_family = AddressFamily::Unspec;
        msg.header.index = index;
        msg.attributes = attributes;
        msg
    }

    /// RTM_NEWLINK, create-exclusive: a macvlan `name` on `parent` with
    /// `mac`, mode private (the VRRP instances on one parent must not talk
    /// to each other through it; traffic from the wire reaches all).
    /// EEXIST when a link of that name exists.
    pub(crate) fn create_macvlan(
        &mut self,
        parent: u32,
        name: &str,
        mac: [u8; 6],
    ) -> io::Result<()> {
        let msg = Self::link(
            0,
            vec![
                LinkAttribute::Link(parent),
                LinkAttribute::IfName(name.to_owned()),
                LinkAttribute::Address(mac.to_vec()),
                LinkAttribute::LinkInfo(vec![
                    LinkInfo::Kind(InfoKind::MacVlan),
                    LinkInfo::Data(InfoData::MacVlan(vec![InfoMacVlan::Mode(
                        MacVlanMode::Private,
                    )])),
                ]),
            ],
        );
        self.request(RouteNetlinkMessage::NewLink(msg), NLM_F_CREATE | NLM_F_EXCL)
    }

    /// RTM_NEWLINK on an existing link: set its MAC.
    pub(crate) fn set_mac(&mut self, index: u32, mac: [u8; 6]) -> io::Result<()> {
        let msg = Self::link(index, vec![LinkAttribute::Address(mac.to_vec())]);
        self.request(RouteNetlinkMessage::NewLink(msg), 0)
    }

    /// RTM_NEWLINK on an existing link: IFF_UP on or off.
    pub(crate) fn set_up(&mut self, index: u32, up: bool) -> io::Result<()> {
        let mut msg = Self::link(index, Vec::new());
        msg.header.flags = if up {
            LinkFlags::Up
        } else {
            LinkFlags::empty()
        };
        msg.header.change_mask = LinkFlags::Up;
        self.request(RouteNetlinkMessage::NewLink(msg), 0)
    }

    /// RTM_DELLINK.
    pub(crate) fn delete_link(&mut self, index: u32) -> io::Result<()> {
        let msg = Self::link(index, Vec::new());
        self.request(RouteNetlinkMessage::DelLink(msg), 0)
    }

    /// RTM_NEWADDR, create-exclusive (EEXIST when present); IPv6 with
    /// IFA_F_NODAD: no duplicate address detection, since a VIP moves
    /// between nodes on purpose and a tentative address could not be used
    /// (nor answer ND) for a second.
    pub(crate) fn add_address(&mut self, index: u32, ip: IpAddr, prefix_len: u8) -> io::Result<()> {
        let msg = Self::address(index, ip, prefix_len);
        self.request(
            RouteNetlinkMessage::NewAddress(msg),
            NLM_F_CREATE | NLM_F_EXCL,
        )
    }

    /// RTM_DELADDR (EADDRNOTAVAIL when absent).
    pub(crate) fn delete_address(
        &mut self,
        index: u32,
        ip: IpAddr,
        prefix_len: u8,
    ) -> io::Result<()> {
        let msg = Self::address(index, ip, prefix_len);
        self.request(RouteNetlinkMessage::DelAddress(msg), 0)
    }

    /// The address message, scope universe: IFA_LOCAL and IFA_ADDRESS both
    /// `ip`.
    fn address(index: u32, ip: IpAddr, prefix_len: u8) -> AddressMessage {
        let mut msg = AddressMessage::default();
        msg.header.prefix_len = prefix_len;
        msg.header.index = index;
        msg.attributes = vec![AddressAttribute::Local(ip), AddressAttribute::Address(ip)];
        match ip {
            IpAddr::V4(_) => msg.header.family = AddressFamily::Inet,
            IpAddr::V6(_) => {
                msg.header.family = AddressFamily::Inet6;
                msg.header.flags = AddressHeaderFlags::Nodad;
                msg.attributes
                    .push(AddressAttribute::Flags(AddressFlags::Nodad));
            }
        }
        msg
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::Emitable;

    fn bytes(msg: RouteNetlinkMessage, flags: u16) -> Vec<u8> {
        let mut header = NetlinkHeader::default();
        header.flags = flags | NLM_F_REQUEST | NLM_F_ACK;
        header.sequence_number = 9;
        let mut msg = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(msg));
        msg.finalize();
        let mut b = vec![0u8; msg.buffer_len()];
        msg.serialize(&mut b);
        b
    }

    #[test]
    fn macvlan_request_nests_its_link_info() {
        let mut msg = Netlink::link(
            0,
            vec![LinkAttribute::LinkInfo(vec![
                LinkInfo::Kind(InfoKind::MacVlan),
                LinkInfo::Data(InfoData::MacVlan(vec![InfoMacVlan::Mode(
                    MacVlanMode::Private,
                )])),
            ])],
        );
        msg.header.index = 7;
        let len = msg.buffer_len();
        let m = bytes(RouteNetlinkMessage::NewLink(msg), NLM_F_CREATE | NLM_F_EXCL);
        // nlmsghdr (16) + ifinfomsg (16) + the attributes.
        assert_eq!(m.len(), 16 + len);
        assert_eq!(
            u32::from_ne_bytes([m[0], m[1], m[2], m[3]]) as usize,
            m.len()
        );
        assert_eq!(u16::from_ne_bytes([m[4], m[5]]), 16, "RTM_NEWLINK");
        assert_eq!(
            u16::from_ne_bytes([m[6], m[7]]),
            NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL
        );
        assert_eq!(u32::from_ne_bytes([m[8], m[9], m[10], m[11]]), 9);
        assert_eq!(u32::from_ne_bytes([m[20], m[21], m[22], m[23]]), 7);
        // IFLA_LINKINFO (18), then IFLA_INFO_KIND "macvlan".
        assert_eq!(u16::from_ne_bytes([m[34], m[35]]) & 0x3fff, 18);
        assert_eq!(&m[40..47], b"macvlan");
        // IFLA_MACVLAN_MODE = MACVLAN_MODE_PRIVATE (1), last.
        assert_eq!(&m[m.len() - 4..], &1u32.to_ne_bytes());
    }

    #[test]
    fn ipv6_addresses_skip_dad() {
        let msg = Netlink::address(3, "2001:db8::7".parse().unwrap(), 64);
        let m = bytes(RouteNetlinkMessage::NewAddress(msg), 0);
        assert_eq!(u16::from_ne_bytes([m[4], m[5]]), 20, "RTM_NEWADDR");
        assert_eq!(
            &m[16..20],
            &[10, 64, 0x02, 0],
            "AF_INET6, /64, NODAD, universe"
        );
        assert_eq!(u32::from_ne_bytes([m[20], m[21], m[22], m[23]]), 3);
        // IFA_FLAGS (8) = IFA_F_NODAD, last.
        assert_eq!(u16::from_ne_bytes([m[m.len() - 6], m[m.len() - 5]]), 8);
        assert_eq!(&m[m.len() - 4..], &2u32.to_ne_bytes());
    }
}
