//! Who may use the API: every write (any method but GET and HEAD) needs a
//! token of the token file (`--api-token-file`, [`crate::auth`]); reads need
//! one too unless they are open (`--api-reads`). A read-only token
//! (`NAME TOKEN read`) reads everything but the configuration's text and
//! writes nothing. A refused request never reaches its handler, so it
//! changes nothing.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use arc_swap::ArcSwapOption;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use tracing::{info, warn};

use super::error;
use crate::auth::{Scope, Tokens, bearer};
use sextant_core::log_throttle::LogThrottle;

/// The one read that always needs a token, whatever `--api-reads` says.
const SECRET_READ: &str = "/v1/config";

/// The name of the token a request was authenticated with, in the
/// request's extensions (for who-did-what records).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller(pub String);

/// `--api-reads`: whether GET and HEAD need a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ReadAccess {
    /// Open when the API listens on a loopback address; elsewhere a token,
    /// once a token file is given.
    #[default]
    Auto,
    /// Open to anyone who reaches the API.
    Open,
    /// A token, as for writes.
    Token,
}

/// The peer address of a request, from the listener (plain or TLS), in
/// its extensions as `ConnectInfo<Peer>` ([`super::listen`]).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

/// The API's tokens and read policy. The tokens are replaced when SIGHUP
/// re-reads a good token file; a bad one leaves them in force.
pub struct Access {
    file: Option<PathBuf>,
    tokens: ArcSwapOption<Tokens>,
    reads_need_token: bool,
    /// Why the last re-read of the token file was refused, until one
    /// succeeds (shown in `/v1/status`'s `last_reload_error`).
    reload_error: RwLock<Option<String>>,
    /// One log line per kind of refusal per [`sextant_core::log_throttle::LOG_EVERY`].
    refusals: [LogThrottle; Refusal::KINDS],
    /// The daemon's clock, for the throttles.
    clock: crate::clock::Clock,
}

/// Why a request was refused, one log throttle each.
#[derive(Debug, Clone, Copy)]
enum Refusal {
    NoTokenFile = 0,
    NoHeader = 1,
    NotBearer = 2,
    WrongToken = 3,
    ReadOnlyToken = 4,
}

impl Refusal {
    const KINDS: usize = 5;

    fn reason(self) -> &'static str {
        match self {
            Refusal::NoTokenFile => "no --api-token-file",
            Refusal::NoHeader => "no Authorization header",
            Refusal::NotBearer => "the Authorization header is not `Bearer TOKEN`",
            Refusal::WrongToken => "the token is not one of the API tokens",
            Refusal::ReadOnlyToken => "a read-only token was presented for a write or a secret",
        }
    }
}

impl Access {
    /// Reads the token file (if any) and settles the read policy for an API
    /// listening on `listen`: a missing, unreadable, open-to-others or
    /// malformed token file is an error (the start stops).
    pub fn load(
        file: Option<PathBuf>,
        reads: ReadAccess,
        listen: SocketAddr,
        clock: crate::clock::Clock,
    ) -> anyhow::Result<Access> {
        let tokens = file.as_deref().map(Tokens::load).transpose()?;
        let reads_need_token = match reads {
            ReadAccess::Open => false,
            ReadAccess::Token => {
                if tokens.is_none() {
                    anyhow::bail!(
                        "--api-reads token: reads need a token, but no token file is given; add --api-token-file FILE"
                    );
                }
                true
            }
            // Without a token file nothing could authenticate: reads stay
            // open (as they always were) and the start says so.
            ReadAccess::Auto => !is_loopback(listen.ip()) && tokens.is_some(),
        };
        match &tokens {
            Some(t) => info!(
                file = %t.file().display(),
                names = ?t.names(),
                reads = if reads_need_token { "token" } else { "open" },
                "API tokens loaded: writes need one"
            ),
            None if !is_loopback(listen.ip()) && reads == ReadAccess::Auto => warn!(
                %listen,
                "the API listens on an address that is not loopback without --api-token-file: reads are open to anyone who reaches it; writes are disabled"
            ),
            None => info!("no --api-token-file: API writes are disabled"),
        }
        Ok(Access {
            file,
            tokens: ArcSwapOption::from(tokens.map(Arc::new)),
            reads_need_token,
            reload_error: RwLock::new(None),
            refusals: Default::default(),
            clock,
        })
    }

    /// SIGHUP: reads the token file again. A bad file keeps the tokens in
    /// force; the reason is logged and kept for `/v1/status`.
    pub fn reload(&self) {
        let Some(file) = &self.file else {
            return;
        };
        let outcome = match Tokens::load(file) {
            Ok(t) => {
                info!(file = %file.display(), names = ?t.names(), "API tokens re-read");
                self.tokens.store(Some(Arc::new(t)));
                None
            }
            Err(e) => {
                let e = format!("{e}; the API tokens in force stay");
                tracing::error!("{e}");
                Some(e)
            }
        };
        if let Ok(mut last) = self.reload_error.write() {
            *last = outcome;
        }
    }

    /// Logs a refused request: at most one line per kind and period, which
    /// says how many were not logged. Never the token presented.
    fn refused(&self, why: Refusal, peer: &str, method: &Method, path: &str) {
        if let Some(held_back) = self.refusals[why as usize].admit(self.clock.now()) {
            warn!(
                %peer,
                %method,
                path = %truncated(path),
                not_logged = held_back,
                "API request refused: {}",
                why.reason()
            );
        }
    }

    /// Why the last re-read of the token file failed, if it did.
    pub fn reload_error(&self) -> Option<String> {
        self.reload_error.read().ok().and_then(|e| e.clone())
    }
}

fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// The middleware: lets a request through to its handler only when it may
/// go (with its [`Caller`] in the extensions), else answers 401 or 403.
pub async fn require(State(access): State<Arc<Access>>, mut req: Request, next: Next) -> Response {
    let write = !matches!(*req.method(), Method::GET | Method::HEAD);
    // The configuration's text holds its secrets (site and rpcNode
    // passwords): it is never an open read.
    let secret = req.uri().path() == SECRET_READ;
    if !write && !secret && !access.reads_need_token {
        return next.run(req).await;
    }
    let peer = req
        .extensions()
        .get::<axum::extract::ConnectInfo<Peer>>()
        .map(|c| c.0.0.to_string())
        .unwrap_or_else(|| "-".to_string());
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let Some(tokens) = access.tokens.load_full() else {
        access.refused(Refusal::NoTokenFile, &peer, &method, &path);
        let why = if write {
            "writes are disabled: start with --api-token-file"
        } else {
            "the configuration's text holds secrets and needs a token: start with --api-token-file"
        };
        return error(StatusCode::FORBIDDEN, why);
    };
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.to_str().ok().and_then(bearer));
    let name = match presented {
        None => {
            access.refused(Refusal::NoHeader, &peer, &method, &path);
            return unauthorized("this request needs `Authorization: Bearer TOKEN`");
        }
        Some(None) => {
            access.refused(Refusal::NotBearer, &peer, &method, &path);
            return unauthorized("the Authorization header must be `Bearer TOKEN`");
        }
        Some(Some(token)) => match tokens.check(token) {
            Some((name, Scope::Write)) => name.to_string(),
            Some((name, Scope::Read)) if !write && !secret => name.to_string(),
            Some((name, Scope::Read)) => {
                access.refused(Refusal::ReadOnlyToken, &peer, &method, &path);
                let why = if write {
                    format!(
                        "the token `{name}` is read-only (`read` in the token file): this request writes and needs a token without `read`"
                    )
                } else {
                    format!(
                        "the token `{name}` is read-only (`read` in the token file): the configuration's text holds secrets and needs a token without `read`"
                    )
                };
                return error(StatusCode::FORBIDDEN, &why);
            }
            None => {
                access.refused(Refusal::WrongToken, &peer, &method, &path);
                return unauthorized("the token is not valid");
            }
        },
    };
    if write {
        info!(token = %name, %peer, %method, %path, "API write");
    }
    req.extensions_mut().insert(Caller(name));
    next.run(req).await
}

/// A path as logged: at most 200 characters (a path is the client's).
fn truncated(path: &str) -> &str {
    match path.char_indices().nth(200) {
        Some((at, _)) => &path[..at],
        None => path,
    }
}

/// 401 with `WWW-Authenticate: Bearer` (RFC 6750).
fn unauthorized(message: &str) -> Response {
    let mut r = error(StatusCode::UNAUTHORIZED, message);
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"sextant\""),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_addresses() {
        assert!(is_loopback("127.0.0.1".parse().unwrap()));
        assert!(is_loopback("127.77.3.4".parse().unwrap()));
        assert!(is_loopback("::1".parse().unwrap()));
        assert!(is_loopback("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!is_loopback("10.77.0.10".parse().unwrap()));
        assert!(!is_loopback("0.0.0.0".parse().unwrap()));
        assert!(!is_loopback("::".parse().unwrap()));
    }
}
