//! PING monitor: one ICMP (or ICMPv6) echo request, one matching reply.
//!
//! ICMP needs a raw socket, i.e. root or `CAP_NET_RAW`. When the raw socket
//! is refused we try the kernel's unprivileged "ping socket" (`SOCK_DGRAM`
//! with `IPPROTO_ICMP`), which works for groups allowed by
//! `net.ipv4.ping_group_range`. If both fail the probe fails with a detail
//! that says exactly what is missing, and [`crate::start`] logs it once.
//!
//! The socket is connected to the target, so the kernel only hands us
//! packets from that address; replies are further matched by type,
//! identifier, sequence number and payload, because a raw socket sees every
//! echo reply from the target (other `ping`s, our own earlier probes).
//! The socket is non-blocking and driven by tokio's `AsyncFd`, so a probe
//! that times out (or a stopped monitor) simply drops it; no thread blocks.
//!
//! The LDNS probe also wants the TTL the reply arrived with: asked of the
//! kernel with `IP_RECVTTL` / `IPV6_RECVHOPLIMIT` ([`crate::ttl`]), or read
//! from the IP header a raw IPv4 socket delivers.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU16, Ordering};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use tokio::io::unix::AsyncFd;

use crate::error::bind_error;
use crate::{ProbeError, Success, ttl};

const ECHO_REQUEST_V4: u8 = 8;
const ECHO_REPLY_V4: u8 = 0;
const ECHO_REQUEST_V6: u8 = 128;
const ECHO_REPLY_V6: u8 = 129;
/// Marks our echo payloads; a nonce follows so replies to other probes with
/// a colliding identifier/sequence are still told apart.
const PAYLOAD_TAG: &[u8] = b"sextant-monitor:";

/// Which kind of ICMP socket we got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavor {
    /// `SOCK_RAW`: we choose the identifier; IPv4 reads include the IP header.
    Raw,
    /// `SOCK_DGRAM` ping socket: the kernel sets the identifier to the
    /// socket's "port" and filters replies by it; no IP header on reads.
    Dgram,
}

/// Sends an echo request to `ip` and waits (unbounded; the caller applies
/// the response timeout) for the matching reply.
pub(crate) async fn probe(ip: IpAddr) -> Result<Success, ProbeError> {
    probe_from(ip, None).await.map(|(success, _ttl)| success)
}

/// [`probe`] sending from `source` (`None`: the kernel's choice), also
/// telling the IP TTL (IPv6: hop limit) the reply arrived with, when the
/// kernel says. The LDNS probe sends from the site's own address, so the
/// reply comes back to it and the RTT is the site's.
pub(crate) async fn probe_from(
    ip: IpAddr,
    source: Option<IpAddr>,
) -> Result<(Success, Option<u8>), ProbeError> {
    let ping_err = |source| ProbeError::Ping { addr: ip, source };
    let (socket, flavor) = open(ip)?;
    socket.set_nonblocking(true).map_err(ping_err)?;
    // Refused: no TTL from the control messages (a raw IPv4 socket still
    // has it in the IP header it delivers).
    ttl::request(&socket, ip.is_ipv6());
    if let Some(local) = source {
        // Port 0: a ping socket picks its identifier, a raw one ignores it.
        socket
            .bind(&SockAddr::from(SocketAddr::new(local, 0)))
            .map_err(|e| ping_err(bind_error(local, e)))?;
    }
    socket
        .connect(&SockAddr::from(SocketAddr::new(ip, 0)))
        .map_err(ping_err)?;
    // SAFETY: `register` needs the fd to stay open and unchanged while the
    // `AsyncFd` lives; a `socket2::Socket` owns its fd for its whole life
    // and `AsyncFd` owns the socket, so both hold.
    let socket = unsafe { AsyncFd::register(socket) }.map_err(|e| ping_err(e.into()))?;

    let (ident, seq, nonce) = next_ids();
    let mut payload = PAYLOAD_TAG.to_vec();
    payload.extend_from_slice(&nonce.to_be_bytes());
    let request = echo_request(ip.is_ipv6(), ident, seq, &payload);

    loop {
        let mut guard = socket.writable().await.map_err(ping_err)?;
        match guard.try_io(|s| s.get_ref().send(&request)) {
            Ok(sent) => {
                sent.map_err(ping_err)?;
                break;
            }
            Err(_would_block) => continue,
        }
    }

    let mut buf = [0u8; 2048];
    loop {
        let mut guard = socket.readable().await.map_err(ping_err)?;
        let (n, ttl) = match guard.try_io(|s| ttl::recv(s.get_ref(), &mut buf)) {
            Ok(read) => read.map_err(ping_err)?,
            Err(_would_block) => continue,
        };
        let packet = buf.get(..n).unwrap_or_default();
        // The kernel rewrites the identifier of a ping socket; it also
        // filters replies by it, so only the sequence is ours to check.
        let want_ident = (flavor == Flavor::Raw).then_some(ident);
        if is_our_reply(ip, flavor, packet, want_ident, seq, &payload) {
            let ttl = ttl.or_else(|| header_ttl(ip, flavor, packet));
            return Ok((Success::timed(format!("ICMP echo reply from {ip}")), ttl));
        }
    }
}

/// The TTL in the IP header a raw IPv4 socket delivers with the reply.
fn header_ttl(ip: IpAddr, flavor: Flavor, packet: &[u8]) -> Option<u8> {
    (ip.is_ipv4() && flavor == Flavor::Raw)
        .then(|| packet.get(8).copied())
        .flatten()
}

/// Whether an ICMP socket for `ip`'s family can be opened: the check
/// [`crate::start`] runs once so a missing privilege is logged up front.
pub fn check_privilege(ip: IpAddr) -> Result<(), ProbeError> {
    open(ip).map(|_| ())
}

/// Opens a raw ICMP socket, or a ping socket when raw is not permitted.
fn open(ip: IpAddr) -> Result<(Socket, Flavor), ProbeError> {
    let (domain, protocol) = match ip {
        IpAddr::V4(_) => (Domain::IPV4, Protocol::ICMPV4),
        IpAddr::V6(_) => (Domain::IPV6, Protocol::ICMPV6),
    };
    match Socket::new(domain, Type::RAW, Some(protocol)) {
        Ok(s) => Ok((s, Flavor::Raw)),
        Err(raw_err) if raw_err.kind() == io::ErrorKind::PermissionDenied => {
            match Socket::new(domain, Type::DGRAM, Some(protocol)) {
                Ok(s) => Ok((s, Flavor::Dgram)),
                // Report the raw socket's error: "Operation not permitted"
                // points at the privilege, which is the usual fix.
                Err(_) => Err(ProbeError::PingPermission(raw_err)),
            }
        }
        Err(e) => Err(ProbeError::Ping {
            addr: ip,
            source: e,
        }),
    }
}

/// Identifier, sequence number and payload nonce of the next probe.
fn next_ids() -> (u16, u16, u64) {
    use std::hash::BuildHasher;
    static SEQ: AtomicU16 = AtomicU16::new(0);
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let nonce = std::collections::hash_map::RandomState::new().hash_one(seq);
    // The identifier is per process (like ping(8)) mixed with randomness, so
    // several Sextant processes on one host do not claim each other's replies.
    let ident = (std::process::id() as u16) ^ (nonce >> 48) as u16;
    (ident, seq, nonce)
}

/// Builds an echo request. The ICMPv6 checksum covers a pseudo-header the
/// kernel knows and we do not; Linux computes it for ICMPv6 sockets, so it
/// is left zero there. For ICMPv4 we compute it (a ping socket recomputes).
pub fn echo_request(v6: bool, ident: u16, seq: u16, payload: &[u8]) -> Vec<u8> {
    let mut packet = Vec::with_capacity(8 + payload.len());
    packet.push(if v6 { ECHO_REQUEST_V6 } else { ECHO_REQUEST_V4 });
    packet.push(0); // code
    packet.extend_from_slice(&[0, 0]); // checksum
    packet.extend_from_slice(&ident.to_be_bytes());
    packet.extend_from_slice(&seq.to_be_bytes());
    packet.extend_from_slice(payload);
    if !v6 {
        let sum = checksum(&packet);
        packet[2..4].copy_from_slice(&sum.to_be_bytes());
    }
    packet
}

/// The Internet checksum of `data`: over a packet that carries a correct
/// checksum it is 0.
pub fn checksum(data: &[u8]) -> u16 {
    sextant_checksum::checksum(sextant_checksum::sum_words(0, data))
}

/// Whether `packet` (as read from the socket) is the echo reply to our
/// request. Never panics on arbitrary input.
fn is_our_reply(
    ip: IpAddr,
    flavor: Flavor,
    packet: &[u8],
    ident: Option<u16>,
    seq: u16,
    payload: &[u8],
) -> bool {
    let icmp = match (ip, flavor) {
        // A raw IPv4 socket delivers the IP header too: check it came from
        // the target and carries ICMP, then skip it.
        (IpAddr::V4(target), Flavor::Raw) => {
            let Some(&first) = packet.first() else {
                return false;
            };
            let header_len = usize::from(first & 0x0f) * 4;
            if first >> 4 != 4 || header_len < 20 {
                return false;
            }
            match (packet.get(9), packet.get(12..16), packet.get(header_len..)) {
                (Some(1), Some(src), Some(icmp)) if src == target.octets() => icmp,
                _ => return false,
            }
        }
        _ => packet,
    };
    let reply_type = if ip.is_ipv6() {
        ECHO_REPLY_V6
    } else {
        ECHO_REPLY_V4
    };
    let [t, 0, _, _, i0, i1, s0, s1, data @ ..] = icmp else {
        return false;
    };
    if *t != reply_type
        || u16::from_be_bytes([*s0, *s1]) != seq
        || ident.is_some_and(|id| u16::from_be_bytes([*i0, *i1]) != id)
        || data != payload
    {
        return false;
    }
    // Raw IPv4 replies are checked end to end; ICMPv6 and ping sockets have
    // their checksums verified by the kernel.
    ip.is_ipv6() || flavor == Flavor::Dgram || checksum(icmp) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_matches_rfc1071_example() {
        // RFC 1071 §3: words 0001 f203 f4f5 f6f7 sum to ddf2, checksum 220d.
        assert_eq!(
            checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            0x220d
        );
        let req = echo_request(false, 0x1234, 7, b"abc");
        assert_eq!(checksum(&req), 0);
    }

    #[test]
    fn matches_only_our_reply() {
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let mut reply = echo_request(false, 0x1234, 7, b"xyz");
        reply[0] = ECHO_REPLY_V4;
        reply[2..4].copy_from_slice(&[0, 0]);
        let sum = checksum(&reply);
        reply[2..4].copy_from_slice(&sum.to_be_bytes());
        let mut ipv4 = vec![
            0x45, 0, 0, 0, 0, 0, 0, 0, 64, 1, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1,
        ];
        ipv4.extend_from_slice(&reply);
        assert!(is_our_reply(
            ip,
            Flavor::Raw,
            &ipv4,
            Some(0x1234),
            7,
            b"xyz"
        ));
        assert!(!is_our_reply(
            ip,
            Flavor::Raw,
            &ipv4,
            Some(0x1235),
            7,
            b"xyz"
        ));
        assert!(!is_our_reply(
            ip,
            Flavor::Raw,
            &ipv4,
            Some(0x1234),
            8,
            b"xyz"
        ));
        assert!(!is_our_reply(
            ip,
            Flavor::Raw,
            &ipv4,
            Some(0x1234),
            7,
            b"xy"
        ));
        assert!(is_our_reply(ip, Flavor::Dgram, &reply, None, 7, b"xyz"));
        let other: IpAddr = "127.0.0.2".parse().unwrap();
        assert!(!is_our_reply(
            other,
            Flavor::Raw,
            &ipv4,
            Some(0x1234),
            7,
            b"xyz"
        ));
        // Our own request, looped back to a raw socket, is not a reply.
        let mut req = ipv4.clone();
        req[20] = ECHO_REQUEST_V4;
        assert!(!is_our_reply(
            ip,
            Flavor::Raw,
            &req,
            Some(0x1234),
            7,
            b"xyz"
        ));
        for n in 0..ipv4.len() {
            assert!(!is_our_reply(
                ip,
                Flavor::Raw,
                &ipv4[..n],
                Some(0x1234),
                7,
                b"xyz"
            ));
        }
    }
}
