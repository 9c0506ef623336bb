//! A TLS client that encrypts without checking who it talks to: the one
//! [`AcceptAnyCert`] verifier of the HTTPS monitor (`sextant-health`) and of
//! metric exchange over TLS (`sextant-mep`).
//!
//! Each user says why not checking the certificate is right for it (the
//! HTTPS monitor checks liveness of a backend dialled by IP; MEP
//! authenticates peers with an HMAC bound to the TLS session). What they
//! share is here, once: the certificate chain is accepted as is, but the
//! handshake signatures are still verified with the crypto provider's
//! algorithms, so the peer really holds the key of the certificate it sent
//! and a peer that cannot complete a real TLS handshake still fails.
//!
//! A crate of its own because the two users have no other common crate that
//! may use rustls: the one they share, `sextant-core`, is pure (no I/O, no
//! TLS), and making `sextant-mep` depend on `sextant-health` for this would
//! pull the monitors (raw sockets, ICMP) into metric exchange. This crate
//! depends on rustls only, which both already use.

#![forbid(unsafe_code)]

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme, SupportedProtocolVersion};

/// A client configuration with `provider`, the protocol `versions` and
/// [`AcceptAnyCert`] as its verifier; no client certificate.
pub fn client_config(
    provider: Arc<CryptoProvider>,
    versions: &[&'static SupportedProtocolVersion],
) -> Result<ClientConfig, rustls::Error> {
    let verifier = Arc::new(AcceptAnyCert::new(&provider));
    Ok(ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

/// Accepts any server certificate (see the crate documentation for when
/// that is right) but verifies the handshake signatures with the provider's
/// algorithms.
#[derive(Debug)]
pub struct AcceptAnyCert {
    algorithms: WebPkiSupportedAlgorithms,
}

impl AcceptAnyCert {
    /// A verifier checking signatures with `provider`'s algorithms.
    pub fn new(provider: &CryptoProvider) -> Self {
        AcceptAnyCert {
            algorithms: provider.signature_verification_algorithms,
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_chain_passes_but_signatures_are_checked() {
        let provider = rustls::crypto::ring::default_provider();
        let v = AcceptAnyCert::new(&provider);
        let junk = CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x00]);
        let name = ServerName::try_from("backend.example").expect("a DNS name");
        assert!(
            v.verify_server_cert(&junk, &[], &name, &[], UnixTime::now())
                .is_ok()
        );
        // The schemes offered are the provider's, so signatures are checked.
        assert!(!v.supported_verify_schemes().is_empty());
        assert_eq!(
            v.supported_verify_schemes(),
            provider
                .signature_verification_algorithms
                .supported_schemes()
        );
        let config = client_config(Arc::new(provider), rustls::DEFAULT_VERSIONS);
        assert!(config.is_ok());
    }
}
