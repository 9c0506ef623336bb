//! The API over TLS (`--api-tls-cert`, `--api-tls-key`): rustls with ring,
//! as metric exchange uses. Handshakes run in each connection's own task,
//! within a timeout ([`super::listen`]), so a client that stalls its
//! handshake delays nobody else.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A TLS server configuration from a PEM certificate chain and a PEM
/// private key (PKCS#8, PKCS#1 or SEC1); errors name the file.
pub fn server_config(cert: &Path, key: &Path) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| {
            anyhow::anyhow!(
                "{}: cannot read the API's TLS certificate: {e}",
                cert.display()
            )
        })?;
    if chain.is_empty() {
        anyhow::bail!(
            "{}: no certificate in the file (PEM, `-----BEGIN CERTIFICATE-----`)",
            cert.display()
        );
    }
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| {
        anyhow::anyhow!(
            "{}: cannot read the API's TLS private key: {e}",
            key.display()
        )
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .with_context(|| {
            format!(
                "{} and {}: the certificate and the key do not make a usable pair",
                cert.display(),
                key.display()
            )
        })?;
    Ok(Arc::new(config))
}
