//! TCP monitor: the target accepts a connection.
//!
//! The connection is closed right away; a completed three-way handshake is
//! all the appliance's TCP monitor checks.

use std::net::{IpAddr, SocketAddr};

use tokio::net::{TcpSocket, TcpStream};

use crate::error::bind_error;
use crate::{ProbeError, Success};

/// Connects to `target`; the caller bounds the time.
pub(crate) async fn probe(target: SocketAddr) -> Result<Success, ProbeError> {
    let stream = connect(target).await?;
    drop(stream);
    Ok(Success::timed(format!("TCP connect to {target}")))
}

/// Opens a TCP connection with Nagle off (probe requests are one write).
pub(crate) async fn connect(target: SocketAddr) -> Result<TcpStream, ProbeError> {
    connect_from(target, None).await
}

/// [`connect`] from `source` (`None`: the kernel's choice), for probes that
/// must leave from the site's own address.
pub(crate) async fn connect_from(
    target: SocketAddr,
    source: Option<IpAddr>,
) -> Result<TcpStream, ProbeError> {
    let err = |e| ProbeError::connect(target, e);
    let socket = if target.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .map_err(err)?;
    if let Some(ip) = source {
        socket
            .bind(SocketAddr::new(ip, 0))
            .map_err(|e| err(bind_error(ip, e)))?;
    }
    let stream = socket.connect(target).await.map_err(err)?;
    // Best effort: a failure here does not make the backend unhealthy.
    let _ = stream.set_nodelay(true);
    Ok(stream)
}
