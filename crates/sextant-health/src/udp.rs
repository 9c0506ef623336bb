//! UDP monitor: a datagram is not refused (and, if asked, is answered).
//!
//! This is the appliance's UDP monitor behaviour. UDP has no handshake, so
//! with no expected reply the only negative signal is an ICMP port
//! unreachable, which a *connected* UDP socket reports as `ECONNREFUSED` on
//! the next receive. Silence until the response timeout therefore counts as
//! success: the port is open or filtered, and the monitor cannot tell more.
//! Such a success has no response time (nothing was timed), so it does not
//! feed LEASTRESPONSETIME with the timeout value.
//!
//! With `receive` set, a reply containing that text must arrive within the
//! timeout; replies without it are skipped (another one may follow).

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use sextant_core::UdpCheck;
use sextant_http1::contains;
use tokio::net::UdpSocket;
use tokio::time::{Instant, timeout_at};

use crate::error::bind_error;
use crate::{ProbeError, Success};

/// Sent when the monitor has no payload: some stacks drop empty datagrams
/// before a service (or the ICMP logic) ever sees them.
const DEFAULT_PAYLOAD: &[u8] = b"\0";

/// Largest datagram we read.
const MAX_DATAGRAM: usize = 64 * 1024;

/// Runs the UDP probe; it owns its deadline (`timeout`) because running out
/// of time can be a success.
pub(crate) async fn probe(
    check: &UdpCheck,
    target: SocketAddr,
    timeout: Duration,
) -> Result<Success, ProbeError> {
    let deadline = Instant::now() + timeout;
    let err = |e| io_error("UDP", "UDP exchange with", target, e);
    let socket = connected_socket(target).await.map_err(err)?;
    let payload = if check.send.is_empty() {
        DEFAULT_PAYLOAD
    } else {
        check.send.as_bytes()
    };
    socket.send(payload).await.map_err(err)?;

    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut mismatched = false;
    loop {
        match timeout_at(deadline, socket.recv(&mut buf)).await {
            Err(_elapsed) => {
                return match &check.receive {
                    None => Ok(Success {
                        what: format!(
                            "UDP to {target}: no ICMP port unreachable within {timeout:?}"
                        ),
                        timed: false,
                    }),
                    Some(needle) if mismatched => Err(ProbeError::UdpMismatch {
                        needle: needle.clone(),
                    }),
                    Some(_) => Err(ProbeError::Timeout(timeout)),
                };
            }
            Ok(Err(e)) => return Err(err(e)),
            Ok(Ok(n)) => {
                let reply = buf.get(..n).unwrap_or_default();
                match &check.receive {
                    None => return Ok(Success::timed(format!("UDP reply from {target}"))),
                    Some(needle) if contains(reply, needle.as_bytes()) => {
                        return Ok(Success::timed(format!("UDP reply from {target}")));
                    }
                    Some(_) => mismatched = true,
                }
            }
        }
    }
}

/// A UDP socket on an ephemeral port, connected to `target` so that the
/// kernel filters other senders and reports ICMP errors to us.
pub(crate) async fn connected_socket(target: SocketAddr) -> io::Result<UdpSocket> {
    connected_socket_from(target, None).await
}

/// [`connected_socket`] sending from `source` (`None`: the kernel's
/// choice), for probes that must leave from the site's own address.
pub(crate) async fn connected_socket_from(
    target: SocketAddr,
    source: Option<IpAddr>,
) -> io::Result<UdpSocket> {
    let local: SocketAddr = match source {
        Some(ip) => (ip, 0).into(),
        None if target.is_ipv4() => (Ipv4Addr::UNSPECIFIED, 0).into(),
        None => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = UdpSocket::bind(local).await.map_err(|e| match source {
        Some(ip) => bind_error(ip, e),
        None => e,
    })?;
    socket.connect(target).await?;
    Ok(socket)
}

/// `ECONNREFUSED` on a connected UDP socket is an ICMP port unreachable.
pub(crate) fn io_error(
    proto: &'static str,
    what: &'static str,
    addr: SocketAddr,
    e: io::Error,
) -> ProbeError {
    if e.kind() == io::ErrorKind::ConnectionRefused {
        ProbeError::PortUnreachable { proto, addr }
    } else {
        ProbeError::Io {
            what,
            addr,
            source: e,
        }
    }
}
