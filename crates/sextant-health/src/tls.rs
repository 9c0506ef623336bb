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
//! algorithms, so a peer that cannot complete a real TLS handshake (a
//! broken TLS stack, a non-TLS service) still fails the probe.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
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

/// The shared client configuration (built once: it is immutable).
pub fn client_config() -> Arc<ClientConfig> {
    static CONFIG: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let verifier = Arc::new(AcceptAnyCert {
                algorithms: provider.signature_verification_algorithms,
            });
            let config = ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                // Not input-dependent: ring implements the safe defaults.
                .expect("the ring provider supports TLS 1.2 and 1.3")
                .dangerous()
                .with_custom_certificate_verifier(verifier)
                .with_no_client_auth();
            Arc::new(config)
        })
        .clone()
}

/// Accepts any server certificate (see the module docs for why) but still
/// verifies the handshake signatures with the provider's algorithms.
#[derive(Debug)]
struct AcceptAnyCert {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
