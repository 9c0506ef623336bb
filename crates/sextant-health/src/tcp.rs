//! TCP monitor: the target accepts a connection.
//!
//! The connection is closed right away; a completed three-way handshake is
//! all the appliance's TCP monitor checks.

use std::net::SocketAddr;

use tokio::net::TcpStream;

use crate::{ProbeError, Success};

/// Connects to `target`; the caller bounds the time.
pub(crate) async fn probe(target: SocketAddr) -> Result<Success, ProbeError> {
    let stream = connect(target).await?;
    drop(stream);
    Ok(Success::timed(format!("TCP connect to {target}")))
}

/// Opens a TCP connection with Nagle off (probe requests are one write).
pub(crate) async fn connect(target: SocketAddr) -> Result<TcpStream, ProbeError> {
    let stream = TcpStream::connect(target)
        .await
        .map_err(|e| ProbeError::connect(target, e))?;
    // Best effort: a failure here does not make the backend unhealthy.
    let _ = stream.set_nodelay(true);
    Ok(stream)
}
