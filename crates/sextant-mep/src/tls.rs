//! The secure variant of MEP: the same frames inside TLS 1.3 (rustls, ring).
//!
//! TLS here encrypts; it does not authenticate. Each node presents a
//! self-signed certificate generated at start, and the client accepts any
//! certificate (the handshake signatures are still verified, so the peer
//! really holds the key of the certificate it sent). The peer is
//! authenticated by the HMAC challenge-response of the session, and that
//! proof is bound to the TLS connection: both ends mix 32 bytes exported
//! from the TLS session (RFC 8446 §7.5, label [`EXPORTER_LABEL`]) into their
//! proofs. A man in the middle runs two TLS sessions with different exported
//! values, so the proofs it relays fail — without any certificate
//! distribution.

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, ServerConfig, SignatureScheme};

/// The RFC 5705/8446 exporter label of the channel binding.
pub const EXPORTER_LABEL: &[u8] = b"EXPORTER-sextant-mep-auth";
/// Bytes of channel binding mixed into the proofs.
pub const BINDING_LEN: usize = 32;

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A server configuration with a fresh self-signed certificate.
pub fn server_config() -> Result<Arc<ServerConfig>, String> {
    let ck = rcgen::generate_simple_self_signed(vec!["sextant-mep".to_owned()])
        .map_err(|e| format!("cannot generate the MEP TLS certificate: {e}"))?;
    let cert = ck.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()));
    let config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("TLS 1.3 with ring: {e}"))?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .map_err(|e| format!("the MEP TLS certificate is not usable: {e}"))?;
    Ok(Arc::new(config))
}

/// The client configuration (shared; immutable).
pub fn client_config() -> Arc<ClientConfig> {
    static CONFIG: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let provider = provider();
            let verifier = Arc::new(AnyCert {
                algorithms: provider.signature_verification_algorithms,
            });
            let config = ClientConfig::builder_with_provider(provider)
                .with_protocol_versions(&[&rustls::version::TLS13])
                .expect("ring implements TLS 1.3")
                .dangerous()
                .with_custom_certificate_verifier(verifier)
                .with_no_client_auth();
            Arc::new(config)
        })
        .clone()
}

/// Accepts any certificate (see the module documentation), verifying the
/// handshake signatures.
#[derive(Debug)]
struct AnyCert {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for AnyCert {
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

/// The channel binding of an established connection.
pub fn binding<D>(conn: &rustls::ConnectionCommon<D>) -> Result<Vec<u8>, rustls::Error> {
    conn.export_keying_material(vec![0u8; BINDING_LEN], EXPORTER_LABEL, None)
}
