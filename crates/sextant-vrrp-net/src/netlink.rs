//! Just enough rtnetlink, by hand: create and delete a macvlan, set a link
//! up or down, add and delete addresses. Each request asks for an ACK and
//! waits for it, so an error comes back as the errno of that request.
//!
//! Messages are built in a byte vector with the layouts of
//! `<linux/netlink.h>`, `<linux/rtnetlink.h>` and `<linux/if_link.h>`; the
//! constants are spelled out here (they are kernel ABI and never change) so
//! the build does not depend on which of them the libc crate exports.

use std::io::{self, Read};
use std::net::IpAddr;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

const NETLINK_ROUTE: i32 = 0;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 0x001;
const NLM_F_ACK: u16 = 0x004;
const NLM_F_EXCL: u16 = 0x200;
const NLM_F_CREATE: u16 = 0x400;
const RTM_NEWLINK: u16 = 16;
const RTM_DELLINK: u16 = 17;
const RTM_NEWADDR: u16 = 20;
const RTM_DELADDR: u16 = 21;
const IFLA_ADDRESS: u16 = 1;
const IFLA_IFNAME: u16 = 3;
const IFLA_LINK: u16 = 5;
const IFLA_LINKINFO: u16 = 18;
const IFLA_INFO_KIND: u16 = 1;
const IFLA_INFO_DATA: u16 = 2;
const IFLA_MACVLAN_MODE: u16 = 1;
const MACVLAN_MODE_PRIVATE: u32 = 1;
const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;
const IFA_FLAGS: u16 = 8;
/// No duplicate address detection: a VIP moves between nodes on purpose,
/// and a tentative address could not be used (nor answer ND) for a second.
const IFA_F_NODAD: u32 = 0x02;
const IFF_UP: u32 = 0x1;
const NLMSG_HDRLEN: usize = 16;

/// One request under construction: the `nlmsghdr`, a fixed header, then
/// attributes, each padded to 4 bytes.
pub(crate) struct Message {
    buf: Vec<u8>,
    nests: Vec<usize>,
}

impl Message {
    fn new(ty: u16, flags: u16) -> Message {
        let mut buf = Vec::with_capacity(256);
        buf.extend_from_slice(&0u32.to_ne_bytes()); // nlmsg_len, set in finish
        buf.extend_from_slice(&ty.to_ne_bytes());
        buf.extend_from_slice(&(flags | NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
        buf.extend_from_slice(&0u32.to_ne_bytes()); // nlmsg_seq, set in finish
        buf.extend_from_slice(&0u32.to_ne_bytes()); // nlmsg_pid: 0, the kernel fills it
        Message {
            buf,
            nests: Vec::new(),
        }
    }

    /// `struct ifinfomsg`.
    fn ifinfo(mut self, index: u32, flags: u32, change: u32) -> Message {
        self.buf.push(libc::AF_UNSPEC as u8); // ifi_family
        self.buf.push(0); // pad
        self.buf.extend_from_slice(&0u16.to_ne_bytes()); // ifi_type
        self.buf.extend_from_slice(&index.to_ne_bytes()); // ifi_index
        self.buf.extend_from_slice(&flags.to_ne_bytes()); // ifi_flags
        self.buf.extend_from_slice(&change.to_ne_bytes()); // ifi_change
        self
    }

    /// `struct ifaddrmsg`.
    fn ifaddr(mut self, family: u8, prefix_len: u8, flags: u8, index: u32) -> Message {
        self.buf.extend_from_slice(&[family, prefix_len, flags, 0]); // scope: universe
        self.buf.extend_from_slice(&index.to_ne_bytes());
        self
    }

    fn pad(&mut self) {
        while !self.buf.len().is_multiple_of(4) {
            self.buf.push(0);
        }
    }

    fn attr(mut self, ty: u16, data: &[u8]) -> Message {
        let len = u16::try_from(4 + data.len()).unwrap_or(u16::MAX);
        self.buf.extend_from_slice(&len.to_ne_bytes());
        self.buf.extend_from_slice(&ty.to_ne_bytes());
        self.buf.extend_from_slice(data);
        self.pad();
        self
    }

    fn nest(mut self, ty: u16) -> Message {
        self.nests.push(self.buf.len());
        self.buf.extend_from_slice(&0u16.to_ne_bytes());
        self.buf.extend_from_slice(&ty.to_ne_bytes());
        self
    }

    fn end(mut self) -> Message {
        if let Some(start) = self.nests.pop() {
            let len = u16::try_from(self.buf.len() - start).unwrap_or(u16::MAX);
            self.buf[start..start + 2].copy_from_slice(&len.to_ne_bytes());
        }
        self
    }

    fn finish(mut self, seq: u32) -> Vec<u8> {
        let len = u32::try_from(self.buf.len()).unwrap_or(u32::MAX);
        self.buf[0..4].copy_from_slice(&len.to_ne_bytes());
        self.buf[8..12].copy_from_slice(&seq.to_ne_bytes());
        self.buf
    }
}

/// A NETLINK_ROUTE socket, opened for a few requests.
pub(crate) struct Netlink {
    sock: Socket,
    seq: u32,
}

impl Netlink {
    pub(crate) fn open() -> io::Result<Netlink> {
        let sock = Socket::new(
            Domain::from(libc::AF_NETLINK),
            Type::RAW,
            Some(Protocol::from(NETLINK_ROUTE)),
        )?;
        // The kernel answers at once; a bound on the wait turns a lost
        // answer into an error rather than a hang.
        sock.set_read_timeout(Some(Duration::from_secs(5)))?;
        Ok(Netlink { sock, seq: 0 })
    }

    /// Sends `msg` and waits for its ACK: Ok, or the errno the kernel
    /// returned for it.
    fn request(&mut self, msg: Message) -> io::Result<()> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let bytes = msg.finish(seq);
        self.sock.send(&bytes)?;
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = (&self.sock).read(&mut buf)?;
            let mut rest = buf.get(..n).unwrap_or_default();
            while rest.len() >= NLMSG_HDRLEN {
                let len = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
                let ty = u16::from_ne_bytes([rest[4], rest[5]]);
                let mseq = u32::from_ne_bytes([rest[8], rest[9], rest[10], rest[11]]);
                if len < NLMSG_HDRLEN || len > rest.len() {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "malformed netlink answer",
                    ));
                }
                if ty == NLMSG_ERROR && mseq == seq {
                    let Some(code) = rest.get(16..20) else {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            "short netlink error message",
                        ));
                    };
                    let code = i32::from_ne_bytes([code[0], code[1], code[2], code[3]]);
                    return if code == 0 {
                        Ok(())
                    } else {
                        Err(io::Error::from_raw_os_error(-code))
                    };
                }
                let step = (len + 3) & !3;
                rest = rest.get(step..).unwrap_or_default();
            }
        }
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
        let mut ifname = name.as_bytes().to_vec();
        ifname.push(0);
        let msg = Message::new(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL)
            .ifinfo(0, 0, 0)
            .attr(IFLA_LINK, &parent.to_ne_bytes())
            .attr(IFLA_IFNAME, &ifname)
            .attr(IFLA_ADDRESS, &mac)
            .nest(IFLA_LINKINFO)
            .attr(IFLA_INFO_KIND, b"macvlan")
            .nest(IFLA_INFO_DATA)
            .attr(IFLA_MACVLAN_MODE, &MACVLAN_MODE_PRIVATE.to_ne_bytes())
            .end()
            .end();
        self.request(msg)
    }

    /// RTM_NEWLINK on an existing link: set its MAC.
    pub(crate) fn set_mac(&mut self, index: u32, mac: [u8; 6]) -> io::Result<()> {
        let msg = Message::new(RTM_NEWLINK, 0)
            .ifinfo(index, 0, 0)
            .attr(IFLA_ADDRESS, &mac);
        self.request(msg)
    }

    /// RTM_NEWLINK on an existing link: IFF_UP on or off.
    pub(crate) fn set_up(&mut self, index: u32, up: bool) -> io::Result<()> {
        let flags = if up { IFF_UP } else { 0 };
        let msg = Message::new(RTM_NEWLINK, 0).ifinfo(index, flags, IFF_UP);
        self.request(msg)
    }

    /// RTM_DELLINK.
    pub(crate) fn delete_link(&mut self, index: u32) -> io::Result<()> {
        let msg = Message::new(RTM_DELLINK, 0).ifinfo(index, 0, 0);
        self.request(msg)
    }

    /// RTM_NEWADDR, create-exclusive (EEXIST when present); IPv6 with
    /// IFA_F_NODAD.
    pub(crate) fn add_address(&mut self, index: u32, ip: IpAddr, prefix_len: u8) -> io::Result<()> {
        let msg = Self::address(
            RTM_NEWADDR,
            NLM_F_CREATE | NLM_F_EXCL,
            index,
            ip,
            prefix_len,
        );
        self.request(msg)
    }

    /// RTM_DELADDR (EADDRNOTAVAIL when absent).
    pub(crate) fn delete_address(
        &mut self,
        index: u32,
        ip: IpAddr,
        prefix_len: u8,
    ) -> io::Result<()> {
        let msg = Self::address(RTM_DELADDR, 0, index, ip, prefix_len);
        self.request(msg)
    }

    fn address(ty: u16, flags: u16, index: u32, ip: IpAddr, prefix_len: u8) -> Message {
        match ip {
            IpAddr::V4(v4) => Message::new(ty, flags)
                .ifaddr(libc::AF_INET as u8, prefix_len, 0, index)
                .attr(IFA_LOCAL, &v4.octets())
                .attr(IFA_ADDRESS, &v4.octets()),
            IpAddr::V6(v6) => Message::new(ty, flags)
                .ifaddr(libc::AF_INET6 as u8, prefix_len, IFA_F_NODAD as u8, index)
                .attr(IFA_LOCAL, &v6.octets())
                .attr(IFA_ADDRESS, &v6.octets())
                .attr(IFA_FLAGS, &IFA_F_NODAD.to_ne_bytes()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_attributes_have_their_lengths_and_padding() {
        let m = Message::new(RTM_NEWLINK, 0)
            .ifinfo(7, 0, 0)
            .nest(IFLA_LINKINFO)
            .attr(IFLA_INFO_KIND, b"macvlan")
            .end()
            .finish(9);
        // 16 nlmsghdr + 16 ifinfomsg + 4 nest + (4 + 7 -> 12 padded)
        assert_eq!(m.len(), 48);
        assert_eq!(u32::from_ne_bytes([m[0], m[1], m[2], m[3]]), 48);
        assert_eq!(u32::from_ne_bytes([m[8], m[9], m[10], m[11]]), 9);
        assert_eq!(u16::from_ne_bytes([m[32], m[33]]), 16); // nest covers its child
        assert_eq!(u16::from_ne_bytes([m[36], m[37]]), 11); // child length unpadded
    }
}
