//! The REST API as the CLI speaks it: Sextant's one HTTP/1 client, with
//! the bearer token on writes.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use sextant_http1::blocking::{self, Timeouts};
use sextant_http1::{Limits, Request};

const TIMEOUTS: Timeouts = Timeouts {
    connect: Duration::from_secs(5),
    io: Duration::from_secs(10),
};

const LIMITS: Limits = Limits {
    max: 64 << 20,
    max_head: 64 * 1024,
    read_size: 64 * 1024,
};

/// A running server's API.
pub struct Client {
    addr: SocketAddr,
    /// Shown in errors: what the user gave.
    server: String,
    token: Option<String>,
}

/// A response: status and body text.
pub struct Reply {
    pub status: u16,
    pub body: String,
}

impl Client {
    /// `server` is `http://HOST:PORT`, or `HOST:PORT`.
    pub fn new(server: &str, token: Option<String>) -> anyhow::Result<Client> {
        let hostport = match server.split_once("://") {
            Some(("http", rest)) => rest,
            Some((scheme, _)) => bail!(
                "--server {server}: the CLI speaks http:// (got {scheme}://); give http://HOST:PORT"
            ),
            None => server,
        }
        .trim_end_matches('/');
        let addr = hostport
            .to_socket_addrs()
            .with_context(|| format!("--server {server}: not HOST:PORT"))?
            .next()
            .with_context(|| format!("--server {server}: no address"))?;
        Ok(Client {
            addr,
            server: server.to_string(),
            token,
        })
    }

    fn send(&self, method: &str, path: &str, body: Option<&str>) -> anyhow::Result<Reply> {
        let mut req = Request::new(&format!("{method} {path} HTTP/1.0"))
            .header("Host", self.addr)
            .header("Connection", "close");
        if let Some(token) = &self.token {
            req = req.header("Authorization", format!("Bearer {token}"));
        }
        let body = body.unwrap_or("");
        if method != "GET" {
            req = req
                .header("Content-Type", "application/json")
                .header("Content-Length", body.len());
        }
        let r = blocking::exchange(self.addr, &req.finish(body.as_bytes()), TIMEOUTS, LIMITS)
            .with_context(|| {
                format!(
                    "cannot reach the server at {} (is `sextant serve` running with --api-listen {}?)",
                    self.server, self.addr
                )
            })?;
        Ok(Reply {
            status: r.status,
            body: r.text(),
        })
    }

    /// GET `path`; an error status becomes an error with the server's
    /// reason.
    pub fn get(&self, path: &str) -> anyhow::Result<String> {
        let r = self.send("GET", path, None)?;
        ok(r, path)
    }

    /// POST `json` to `path`.
    pub fn post(&self, path: &str, json: &str) -> anyhow::Result<String> {
        let r = self.send("POST", path, Some(json))?;
        ok(r, path)
    }
}

fn ok(r: Reply, path: &str) -> anyhow::Result<String> {
    if (200..300).contains(&r.status) {
        return Ok(r.body);
    }
    let why = serde_json::from_str::<sextant_api::ApiError>(&r.body)
        .map(|e| e.error)
        .unwrap_or_else(|_| r.body.trim().to_string());
    match r.status {
        401 => bail!("{why} (give the API token with --token-file FILE or SEXTANT_API_TOKEN)"),
        404 if path.starts_with("/v1/") && why.starts_with("no such endpoint") => {
            bail!("the server does not offer {path}: is it an older version? ({why})")
        }
        _ => bail!("{why}"),
    }
}

/// The token to send: the first token of `file` (a token file as the
/// server reads it: `NAME TOKEN` or `TOKEN` lines, `#` comments), else
/// the environment's `SEXTANT_API_TOKEN`.
pub fn token(file: Option<&Path>) -> anyhow::Result<Option<String>> {
    if let Some(file) = file {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("--token-file {}: cannot read it", file.display()))?;
        let token = text
            .lines()
            .map(|l| l.split('#').next().unwrap_or("").trim())
            .find(|l| !l.is_empty())
            // `TOKEN`, `NAME TOKEN` or `NAME TOKEN read`: the server's
            // token file works.
            .and_then(|l| {
                let fields: Vec<&str> = l.split_whitespace().collect();
                fields.get(usize::from(fields.len() > 1)).copied()
            })
            .with_context(|| format!("--token-file {}: holds no token", file.display()))?;
        return Ok(Some(token.to_string()));
    }
    Ok(std::env::var("SEXTANT_API_TOKEN")
        .ok()
        .filter(|t| !t.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::token;

    #[test]
    fn a_token_file_line_gives_its_token_whatever_its_form() {
        let dir = std::env::temp_dir().join(format!("sextant-cli-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("token");
        for (text, want) in [
            ("0123456789abcdef0123\n", "0123456789abcdef0123"),
            ("# ops\nops 0123456789abcdef0123\n", "0123456789abcdef0123"),
            (
                "prom 0123456789abcdef0123 read # scrapes\n",
                "0123456789abcdef0123",
            ),
        ] {
            std::fs::write(&f, text).unwrap();
            assert_eq!(token(Some(&f)).unwrap().as_deref(), Some(want), "{text:?}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
