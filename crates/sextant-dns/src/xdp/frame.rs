//! Ethernet frames of the XDP path: reading a DNS query out of one, and
//! turning the same frame into the answer.
//!
//! Only what the XDP program lets through arrives here (untagged Ethernet,
//! IPv4 without options or fragments, or IPv6 with UDP as the next header,
//! to a listening port), but every length is checked again: the frame is
//! bytes from the network. The answer goes back the way the query came:
//! the Ethernet and IP addresses and the UDP ports are swapped, so it is
//! sent to the hop the query arrived from, as Knot's XDP mode does.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::ops::Range;

use sextant_checksum::{checksum, sum_words};

const ETH: usize = 14;
const IPV4: usize = 20;
const IPV6: usize = 40;
const UDP: usize = 8;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const PROTO_UDP: u8 = 17;
/// The hop limit of answers, as the kernel's default.
const TTL: u8 = 64;

/// A UDP datagram found in a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram {
    /// Who sent it (the address the answer goes to).
    pub source: SocketAddr,
    /// The address and port it was sent to (the answer's source).
    pub destination: SocketAddr,
    /// Where its payload (the DNS message) lies in the frame.
    pub payload: Range<usize>,
}

impl Datagram {
    fn header_len(&self) -> usize {
        ETH + UDP
            + match self.source {
                SocketAddr::V4(_) => IPV4,
                SocketAddr::V6(_) => IPV6,
            }
    }
}

/// Reads the UDP datagram in `frame`, or `None` when the frame is not one
/// the XDP path answers: not IPv4/IPv6 over untagged Ethernet, IPv4 with
/// options or fragmented, another protocol, lengths that do not add up, or
/// a source port of 0 (nothing can be sent back there).
pub fn parse(frame: &[u8]) -> Option<Datagram> {
    match u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]) {
        ETHERTYPE_IPV4 => parse_v4(frame),
        ETHERTYPE_IPV6 => parse_v6(frame),
        _ => None,
    }
}

fn parse_v4(frame: &[u8]) -> Option<Datagram> {
    let ip = frame.get(ETH..ETH + IPV4)?;
    // Version 4, a 20-byte header (options are left to the kernel).
    if ip[0] != 0x45 || ip[9] != PROTO_UDP {
        return None;
    }
    // MF set or a fragment offset: a fragment, left to the kernel.
    if u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0 {
        return None;
    }
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    // The frame may be longer than the packet (Ethernet padding), never shorter.
    if total < IPV4 + UDP || ETH + total > frame.len() {
        return None;
    }
    let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    udp(
        frame,
        ETH + IPV4,
        ETH + total,
        IpAddr::V4(src),
        IpAddr::V4(dst),
    )
}

fn parse_v6(frame: &[u8]) -> Option<Datagram> {
    let ip = frame.get(ETH..ETH + IPV6)?;
    if ip[0] >> 4 != 6 || ip[6] != PROTO_UDP {
        return None;
    }
    let payload = usize::from(u16::from_be_bytes([ip[4], ip[5]]));
    if payload < UDP || ETH + IPV6 + payload > frame.len() {
        return None;
    }
    let src: [u8; 16] = ip[8..24].try_into().ok()?;
    let dst: [u8; 16] = ip[24..40].try_into().ok()?;
    udp(
        frame,
        ETH + IPV6,
        ETH + IPV6 + payload,
        IpAddr::V6(Ipv6Addr::from(src)),
        IpAddr::V6(Ipv6Addr::from(dst)),
    )
}

/// The UDP header at `at`, in an IP packet that ends at `end`.
fn udp(frame: &[u8], at: usize, end: usize, src: IpAddr, dst: IpAddr) -> Option<Datagram> {
    let h = frame.get(at..at + UDP)?;
    let sport = u16::from_be_bytes([h[0], h[1]]);
    let dport = u16::from_be_bytes([h[2], h[3]]);
    let len = usize::from(u16::from_be_bytes([h[4], h[5]]));
    if sport == 0 || len < UDP || at + len > end {
        return None;
    }
    Some(Datagram {
        source: SocketAddr::new(src, sport),
        destination: SocketAddr::new(dst, dport),
        payload: at + UDP..at + len,
    })
}

/// Rewrites `frame` (the whole buffer the query arrived in) into the answer
/// to `query` carrying `answer`; returns the answer frame's length, or
/// `None` when it does not fit in the buffer.
pub fn write_reply(frame: &mut [u8], query: &Datagram, answer: &[u8]) -> Option<usize> {
    let header = query.header_len();
    let total = header + answer.len();
    let udp_len = u16::try_from(UDP + answer.len()).ok()?;
    if total > frame.len() {
        return None;
    }
    // Ethernet: back to the hop the query came from.
    let mut macs = [0u8; 12];
    macs.copy_from_slice(&frame[..12]);
    frame[..6].copy_from_slice(&macs[6..]);
    frame[6..12].copy_from_slice(&macs[..6]);
    frame[header..total].copy_from_slice(answer);
    // The IP header, and the sum of its two addresses for the UDP
    // checksum's pseudo-header.
    let addresses = match (query.destination.ip(), query.source.ip()) {
        (IpAddr::V4(from), IpAddr::V4(to)) => {
            let ip = &mut frame[ETH..ETH + IPV4];
            let ip_len = u16::try_from(IPV4 + UDP + answer.len()).ok()?;
            ip[0] = 0x45;
            ip[1] = 0;
            ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
            // No identification and no DF: the answer is never fragmented
            // (at most MAX_UDP octets), as with IP_PMTUDISC_OMIT.
            ip[4..8].fill(0);
            ip[8] = TTL;
            ip[9] = PROTO_UDP;
            ip[10..12].fill(0);
            ip[12..16].copy_from_slice(&from.octets());
            ip[16..20].copy_from_slice(&to.octets());
            let sum = checksum(sum_words(0, ip));
            ip[10..12].copy_from_slice(&sum.to_be_bytes());
            sum_words(0, &ip[12..20])
        }
        (IpAddr::V6(from), IpAddr::V6(to)) => {
            let ip = &mut frame[ETH..ETH + IPV6];
            ip[..4].copy_from_slice(&[0x60, 0, 0, 0]);
            ip[4..6].copy_from_slice(&udp_len.to_be_bytes());
            ip[6] = PROTO_UDP;
            ip[7] = TTL;
            ip[8..24].copy_from_slice(&from.octets());
            ip[24..40].copy_from_slice(&to.octets());
            sum_words(0, &ip[8..40])
        }
        _ => return None,
    };
    let pseudo = addresses + u64::from(PROTO_UDP) + u64::from(udp_len);
    write_udp(frame, header - UDP, query, udp_len, pseudo);
    Some(total)
}

/// The UDP header of the answer at `at` (the payload already in place),
/// with its checksum over the pseudo-header sum `pseudo`.
fn write_udp(frame: &mut [u8], at: usize, query: &Datagram, udp_len: u16, pseudo: u64) {
    let end = at + usize::from(udp_len);
    let h = &mut frame[at..at + UDP];
    h[0..2].copy_from_slice(&query.destination.port().to_be_bytes());
    h[2..4].copy_from_slice(&query.source.port().to_be_bytes());
    h[4..6].copy_from_slice(&udp_len.to_be_bytes());
    h[6..8].fill(0);
    let sum = checksum(sum_words(pseudo, &frame[at..end]));
    // A computed 0 is sent as all ones (0 means "no checksum" over IPv4).
    let sum = if sum == 0 { 0xffff } else { sum };
    frame[at + 6..at + 8].copy_from_slice(&sum.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIENT_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
    const SERVER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];

    fn ethernet(ethertype: u16) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&SERVER_MAC);
        f.extend_from_slice(&CLIENT_MAC);
        f.extend_from_slice(&ethertype.to_be_bytes());
        f
    }

    fn udp_header(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
        let mut h = Vec::new();
        h.extend_from_slice(&sport.to_be_bytes());
        h.extend_from_slice(&dport.to_be_bytes());
        h.extend_from_slice(&((UDP + payload.len()) as u16).to_be_bytes());
        h.extend_from_slice(&[0, 0]);
        h.extend_from_slice(payload);
        h
    }

    /// A query frame from 10.53.0.2:40000 to 10.53.0.1:53.
    fn v4_frame(payload: &[u8]) -> Vec<u8> {
        let mut f = ethernet(ETHERTYPE_IPV4);
        let total = (IPV4 + UDP + payload.len()) as u16;
        let mut ip = vec![0x45, 0];
        ip.extend_from_slice(&total.to_be_bytes());
        ip.extend_from_slice(&[0x12, 0x34, 0x40, 0, 64, PROTO_UDP, 0, 0]);
        ip.extend_from_slice(&[10, 53, 0, 2, 10, 53, 0, 1]);
        f.extend_from_slice(&ip);
        f.extend_from_slice(&udp_header(40000, 53, payload));
        f
    }

    fn v6_frame(payload: &[u8]) -> Vec<u8> {
        let mut f = ethernet(ETHERTYPE_IPV6);
        f.extend_from_slice(&[0x60, 0, 0, 0]);
        f.extend_from_slice(&((UDP + payload.len()) as u16).to_be_bytes());
        f.extend_from_slice(&[PROTO_UDP, 64]);
        f.extend_from_slice(&"fd53::2".parse::<Ipv6Addr>().unwrap().octets());
        f.extend_from_slice(&"fd53::1".parse::<Ipv6Addr>().unwrap().octets());
        f.extend_from_slice(&udp_header(40000, 53, payload));
        f
    }

    /// The Internet checksum of `bytes` plus `pseudo` checks out (comes to
    /// 0).
    fn checks(pseudo: u64, bytes: &[u8]) -> bool {
        checksum(sum_words(pseudo, bytes)) == 0
    }

    #[test]
    fn reads_an_ipv4_query() {
        let f = v4_frame(b"query");
        let d = parse(&f).unwrap();
        assert_eq!(d.source, "10.53.0.2:40000".parse().unwrap());
        assert_eq!(d.destination, "10.53.0.1:53".parse().unwrap());
        assert_eq!(&f[d.payload.clone()], b"query");
    }

    #[test]
    fn ethernet_padding_is_not_payload() {
        let mut f = v4_frame(b"q");
        f.resize(60, 0); // the minimum Ethernet frame
        assert_eq!(&f[parse(&f).unwrap().payload], b"q");
    }

    #[test]
    fn reads_an_ipv6_query() {
        let f = v6_frame(b"query6");
        let d = parse(&f).unwrap();
        assert_eq!(d.source, "[fd53::2]:40000".parse().unwrap());
        assert_eq!(d.destination, "[fd53::1]:53".parse().unwrap());
        assert_eq!(&f[d.payload.clone()], b"query6");
    }

    #[test]
    fn leaves_what_it_does_not_answer_alone() {
        let good = v4_frame(b"query");
        let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
        let mut f = good.clone();
        f[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
        cases.push(("a VLAN tag", f));
        let mut f = good.clone();
        f[ETH] = 0x46;
        cases.push(("IPv4 options", f));
        let mut f = good.clone();
        f[ETH + 6] = 0x20; // MF
        cases.push(("a first fragment", f));
        let mut f = good.clone();
        f[ETH + 7] = 1; // offset
        cases.push(("a later fragment", f));
        let mut f = good.clone();
        f[ETH + 9] = 6;
        cases.push(("TCP", f));
        let mut f = good.clone();
        f[ETH + 2..ETH + 4].copy_from_slice(&500u16.to_be_bytes());
        cases.push(("an IP length past the frame", f));
        let mut f = good.clone();
        f[ETH + IPV4 + 4..ETH + IPV4 + 6].copy_from_slice(&100u16.to_be_bytes());
        cases.push(("a UDP length past the packet", f));
        let mut f = good.clone();
        f[ETH + IPV4 + 4..ETH + IPV4 + 6].copy_from_slice(&7u16.to_be_bytes());
        cases.push(("a UDP length under its header", f));
        let mut f = good.clone();
        f[ETH + IPV4..ETH + IPV4 + 2].fill(0);
        cases.push(("source port 0", f));
        let mut f = v6_frame(b"q");
        f[ETH + 6] = 0; // hop-by-hop options first
        cases.push(("an IPv6 extension header", f));
        for (what, f) in cases {
            assert_eq!(parse(&f), None, "{what}");
        }
        for len in 0..good.len() - 5 {
            assert_eq!(parse(&good[..len]), None, "cut at {len}");
        }
    }

    #[test]
    fn the_ipv4_answer_goes_back_with_valid_checksums() {
        let mut buf = v4_frame(b"query");
        let query = parse(&buf).unwrap();
        buf.resize(2048, 0xaa);
        let answer = b"an answer of odd length";
        let len = write_reply(&mut buf, &query, answer).unwrap();
        let f = &buf[..len];
        assert_eq!(&f[..6], &CLIENT_MAC);
        assert_eq!(&f[6..12], &SERVER_MAC);
        let back = parse(f).unwrap();
        assert_eq!(back.source, query.destination);
        assert_eq!(back.destination, query.source);
        assert_eq!(&f[back.payload.clone()], answer);
        let ip = &f[ETH..ETH + IPV4];
        assert!(checks(0, ip), "IPv4 header checksum");
        assert_eq!(ip[6] & 0x40, 0, "no DF");
        assert_eq!(ip[8], TTL);
        let pseudo = sum_words(0, &ip[12..20]) + u64::from(PROTO_UDP) + (UDP + answer.len()) as u64;
        assert!(checks(pseudo, &f[ETH + IPV4..]), "UDP checksum");
    }

    #[test]
    fn the_ipv6_answer_goes_back_with_a_valid_checksum() {
        let mut buf = v6_frame(b"query");
        let query = parse(&buf).unwrap();
        buf.resize(2048, 0);
        let len = write_reply(&mut buf, &query, b"answer").unwrap();
        let f = &buf[..len];
        let back = parse(f).unwrap();
        assert_eq!(back.source, query.destination);
        assert_eq!(back.destination, query.source);
        let pseudo = sum_words(0, &f[ETH + 8..ETH + IPV6]) + u64::from(PROTO_UDP) + 14;
        assert!(checks(pseudo, &f[ETH + IPV6..]), "UDP checksum");
    }

    #[test]
    fn an_answer_that_does_not_fit_is_refused() {
        let mut buf = v4_frame(b"query");
        let query = parse(&buf).unwrap();
        buf.resize(100, 0);
        assert_eq!(write_reply(&mut buf, &query, &[0; 59]), None);
        assert_eq!(write_reply(&mut buf, &query, &[0; 58]), Some(100));
    }
}
