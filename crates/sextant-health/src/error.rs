//! Why a probe failed.
//!
//! The `Display` text of each variant is what operators see as the
//! observation's `detail`, so it names the target and the expectation.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// A probe failure, or a reason probes of a kind cannot run at all.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The probe did not finish within the monitor's response timeout.
    #[error("no response within {0:?}")]
    Timeout(Duration),

    /// The target actively refused the TCP connection (RST).
    #[error("TCP connect to {0} refused")]
    Refused(SocketAddr),

    /// Any other I/O failure while talking to the target.
    #[error("{what} {addr} failed: {source}")]
    Io {
        /// What was being done, e.g. `TCP connect to`, `HTTP request to`.
        what: &'static str,
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },

    /// The TLS handshake failed (certificates are not verified, so this is
    /// a protocol-level failure: no TLS, no common cipher, ...).
    #[error("TLS handshake with {addr} failed: {source}")]
    Tls {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },

    /// The HTTP status is not in any accepted range.
    #[error("HTTP {status} not in {expected}")]
    HttpStatus { status: u16, expected: String },

    /// The status was accepted but the body lacks the required text.
    #[error("HTTP {status} body does not contain {needle:?}")]
    HttpBody { status: u16, needle: String },

    /// The reply is not an HTTP/1.x response.
    #[error("malformed HTTP response: {0}")]
    HttpMalformed(String),

    /// The DNS response code is not an accepted one.
    #[error("DNS rcode {got} not in {expected}")]
    DnsRcode { got: String, expected: String },

    /// None of the expected addresses is in the answer section.
    #[error("DNS answer [{got}] has none of [{expected}]")]
    DnsAddress { got: String, expected: String },

    /// The DNS response could not be parsed.
    #[error("malformed DNS response: {0}")]
    DnsMalformed(&'static str),

    /// The monitor's query name cannot be encoded (configuration problem).
    #[error("invalid DNS monitor query {name:?}: {why}")]
    DnsQuery { name: String, why: &'static str },

    /// A datagram was answered by ICMP port unreachable (`ECONNREFUSED` on
    /// a connected UDP socket).
    #[error("{proto} to {addr} refused (ICMP port unreachable)")]
    PortUnreachable {
        proto: &'static str,
        addr: SocketAddr,
    },

    /// UDP replies arrived, but none contained the expected text.
    #[error("UDP reply does not contain {needle:?}")]
    UdpMismatch { needle: String },

    /// Neither a raw nor an unprivileged ICMP socket could be opened.
    #[error("PING monitors need root or CAP_NET_RAW (or net.ipv4.ping_group_range): {0}")]
    PingPermission(#[source] io::Error),

    /// Sending or receiving the ICMP echo failed.
    #[error("ICMP echo to {addr} failed: {source}")]
    Ping {
        addr: IpAddr,
        #[source]
        source: io::Error,
    },
}

impl ProbeError {
    /// Whether the probe failed for a reason of this host rather than of
    /// the target: the process or the system is out of descriptors
    /// (`EMFILE`, `ENFILE`) or of buffer memory (`ENOBUFS`, `ENOMEM`) when
    /// the socket was made or used. Such a failure says nothing about the
    /// target, so it must never count towards DOWN.
    pub fn is_local(&self) -> bool {
        match self {
            ProbeError::Io { source, .. }
            | ProbeError::Tls { source, .. }
            | ProbeError::Ping { source, .. }
            | ProbeError::PingPermission(source) => is_local_io(source),
            _ => false,
        }
    }

    /// Classifies a failed connect: refusals get their own, shorter text.
    pub(crate) fn connect(addr: SocketAddr, e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::ConnectionRefused {
            ProbeError::Refused(addr)
        } else {
            ProbeError::Io {
                what: "TCP connect to",
                addr,
                source: e,
            }
        }
    }
}

/// `e` (or an I/O error it wraps) is one of the local resource errors of
/// [`ProbeError::is_local`].
pub(crate) fn is_local_io(e: &io::Error) -> bool {
    const LOCAL: [i32; 4] = [libc::EMFILE, libc::ENFILE, libc::ENOBUFS, libc::ENOMEM];
    if e.raw_os_error().is_some_and(|n| LOCAL.contains(&n)) {
        return true;
    }
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<io::Error>())
        .is_some_and(is_local_io)
}

/// A failed bind to a configured source address, as an I/O error that says
/// which address (the usual cause: it is not one of this host's addresses).
/// Its kind is kept, so callers classify it like any other I/O error.
pub(crate) fn bind_error(local: IpAddr, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("cannot send from {local}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io_failure(errno: i32) -> ProbeError {
        ProbeError::Io {
            what: "TCP connect to",
            addr: SocketAddr::from(([127, 0, 0, 1], 80)),
            source: io::Error::from_raw_os_error(errno),
        }
    }

    #[test]
    fn running_out_of_descriptors_or_buffers_is_local() {
        for errno in [libc::EMFILE, libc::ENFILE, libc::ENOBUFS, libc::ENOMEM] {
            assert!(io_failure(errno).is_local(), "errno {errno}");
        }
        // Wrapped once more (as TLS and HTTP errors are), still local.
        let wrapped = io::Error::other(io::Error::from_raw_os_error(libc::EMFILE));
        assert!(is_local_io(&wrapped));
    }

    #[test]
    fn what_the_target_does_is_not_local() {
        for errno in [
            libc::ECONNREFUSED,
            libc::ECONNRESET,
            libc::EHOSTUNREACH,
            libc::ETIMEDOUT,
        ] {
            assert!(!io_failure(errno).is_local(), "errno {errno}");
        }
        assert!(!ProbeError::Timeout(Duration::from_secs(1)).is_local());
        assert!(!ProbeError::Refused(SocketAddr::from(([127, 0, 0, 1], 80))).is_local());
    }
}
