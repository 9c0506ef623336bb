//! The API over TLS (`--api-tls-cert`, `--api-tls-key`): rustls with ring,
//! as metric exchange uses. Handshakes run in tasks of their own, so a
//! client that stalls its handshake delays nobody else; the finished
//! connections are what the HTTP server accepts.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tracing::{debug, warn};

/// How long a client may take to complete its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

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

/// The connections whose TLS handshake completed, for `axum::serve`.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// The listener, and the task that accepts TCP connections on `tcp`
    /// and runs their handshakes (to be run until the server stops).
    pub fn new(
        tcp: TcpListener,
        config: Arc<rustls::ServerConfig>,
    ) -> std::io::Result<(
        TlsListener,
        impl std::future::Future<Output = ()> + Send + 'static,
    )> {
        let local = tcp.local_addr()?;
        let (tx, ready) = mpsc::channel(64);
        let acceptor = TlsAcceptor::from(config);
        let accept = async move {
            loop {
                let (stream, peer) = match tcp.accept().await {
                    Ok(c) => c,
                    Err(e) => {
                        // Out of descriptors and the like: try again soon.
                        warn!(error = %e, "REST API: cannot accept a connection");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                if tx.is_closed() {
                    return;
                }
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = tx.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => debug!(%peer, error = %e, "REST API: TLS handshake failed"),
                        Err(_) => debug!(%peer, "REST API: TLS handshake timed out"),
                    }
                });
            }
        };
        Ok((TlsListener { ready, local }, accept))
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(c) => c,
            // The accepting task ended (the server stops): wait for the
            // shutdown to end the server.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}
