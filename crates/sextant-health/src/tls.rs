//! HTTPS monitor: the HTTP exchange of [`crate::http`] over TLS.
//!
//! Certificates are **not verified**, like the appliance's HTTPS monitors:
//! a monitor dials the backend's *real* IP address, and backends behind a
//! GSLB present the certificate of the public name (or a self-signed or
//! internal-CA one). Verifying it against an IP would mark every such
//! backend DOWN while it serves clients fine. The monitor checks liveness,
//! not identity; nothing secret is sent over this connection.
//!
//! The handshake signatures are still checked with the crypto provider's
//! algorithms ([`sextant_tls::AcceptAnyCert`]), so a peer that cannot
//! complete a real TLS handshake (a broken TLS stack, a non-TLS service)
//! still fails the probe.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use sextant_core::HttpCheck;
use tokio_rustls::TlsConnector;

use crate::{ProbeError, Success, http, tcp};

/// Connects, completes a TLS handshake and runs the HTTP exchange.
pub(crate) async fn probe(check: &HttpCheck, target: SocketAddr) -> Result<Success, ProbeError> {
    let stream = tcp::connect(target).await?;
    // An IP address cannot be sent as SNI; rustls omits SNI for
    // `ServerName::IpAddress`, which is what an IP-dialing client should do.
    let name = ServerName::IpAddress(target.ip().into());
    let mut tls = TlsConnector::from(client_config())
        .connect(name, stream)
        .await
        .map_err(|source| ProbeError::Tls {
            addr: target,
            source,
        })?;
    http::exchange(&mut tls, check, target).await
}

/// The shared client configuration (built once: it is immutable), with the
/// verifier of [`sextant_tls`] that accepts any certificate.
pub fn client_config() -> Arc<ClientConfig> {
    static CONFIG: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            // Not input-dependent: ring implements the safe defaults.
            let config = sextant_tls::client_config(provider, rustls::DEFAULT_VERSIONS)
                .expect("the ring provider supports TLS 1.2 and 1.3");
            Arc::new(config)
        })
        .clone()
}
