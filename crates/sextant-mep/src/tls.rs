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

use rustls::crypto::CryptoProvider;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ClientConfig, ServerConfig};

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

/// The client configuration (shared; immutable), with the verifier of
/// [`sextant_tls`] that accepts any certificate and checks the handshake
/// signatures.
pub fn client_config() -> Arc<ClientConfig> {
    static CONFIG: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let config = sextant_tls::client_config(provider(), &[&rustls::version::TLS13])
                .expect("ring implements TLS 1.3");
            Arc::new(config)
        })
        .clone()
}

/// The channel binding of an established connection.
pub fn binding<D>(conn: &rustls::ConnectionCommon<D>) -> Result<Vec<u8>, rustls::Error> {
    conn.export_keying_material(vec![0u8; BINDING_LEN], EXPORTER_LABEL, None)
}
