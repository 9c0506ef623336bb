//! The REST API's client for tests: HTTP/1.0 `GET` and `POST` with
//! Sextant's one HTTP/1 client ([`sextant_http1::blocking`]).

use std::net::SocketAddr;
use std::time::Duration;

use sextant_http1::Limits;
use sextant_http1::blocking::{self, Timeouts};

/// Responses read at most (a large model's JSON fits many times over).
const LIMITS: Limits = Limits {
    max: 64 * 1024 * 1024,
    max_head: 64 * 1024,
    read_size: 64 * 1024,
};

const TIMEOUTS: Timeouts = Timeouts {
    connect: Duration::from_secs(2),
    io: Duration::from_secs(5),
};

/// HTTP/1.0 GET: returns (status, body).
pub fn http_get(addr: SocketAddr, path: &str) -> Result<(u16, String), String> {
    get(addr, path, TIMEOUTS)
}

/// Like [`http_get`], with `timeout` for the connect and for each read and
/// write (a short one, so a stuck server does not stall a sampling loop).
pub fn http_get_within(
    addr: SocketAddr,
    path: &str,
    timeout: Duration,
) -> Result<(u16, String), String> {
    let timeouts = Timeouts {
        connect: timeout,
        io: timeout,
    };
    get(addr, path, timeouts)
}

fn get(addr: SocketAddr, path: &str, timeouts: Timeouts) -> Result<(u16, String), String> {
    blocking::get(addr, path, timeouts, LIMITS)
        .map(|r| (r.status, r.text()))
        .map_err(|e| format!("GET {path} from {addr}: {e}"))
}

/// HTTP/1.0 POST of a JSON body: returns (status, body).
pub fn http_post(addr: SocketAddr, path: &str, json: &str) -> Result<(u16, String), String> {
    blocking::post_json(addr, path, json, TIMEOUTS, LIMITS)
        .map(|r| (r.status, r.text()))
        .map_err(|e| format!("POST {path} to {addr}: {e}"))
}

/// A whole HTTP answer: status, header fields and body.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Any request: `method path` with `headers` (sent as given) and `body`.
pub fn http_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<Reply, String> {
    request_within(addr, method, path, headers, body, TIMEOUTS)
}

/// Like [`http_request`], with `timeout` for the connect and for each read
/// and write.
pub fn request_within(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
    timeouts: Timeouts,
) -> Result<Reply, String> {
    blocking::request(
        addr,
        method,
        path,
        headers,
        body.as_bytes(),
        timeouts,
        LIMITS,
    )
    .map(|r| Reply {
        status: r.status,
        body: r.text(),
        headers: r.headers,
    })
    .map_err(|e| format!("{method} {path} at {addr}: {e}"))
}

/// The `Authorization` header of `token`, when there is one.
pub fn bearer(token: Option<&str>) -> Option<String> {
    token.map(|t| format!("Bearer {t}"))
}

/// GET with the API token `token` (if any): (status, body).
pub fn http_get_as(
    addr: SocketAddr,
    path: &str,
    token: Option<&str>,
    timeout: Duration,
) -> Result<(u16, String), String> {
    let auth = bearer(token);
    let headers: Vec<(&str, &str)> = auth
        .as_deref()
        .map(|a| ("Authorization", a))
        .into_iter()
        .collect();
    let timeouts = Timeouts {
        connect: timeout.min(TIMEOUTS.connect),
        io: timeout,
    };
    request_within(addr, "GET", path, &headers, "", timeouts).map(|r| (r.status, r.body))
}

/// A JSON body sent with `method` (POST, PUT...) with the API token
/// `token` (if any): (status, body).
pub fn http_send_json(
    addr: SocketAddr,
    method: &str,
    path: &str,
    json: &str,
    token: Option<&str>,
) -> Result<(u16, String), String> {
    let auth = bearer(token);
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(a) = auth.as_deref() {
        headers.push(("Authorization", a));
    }
    http_request(addr, method, path, &headers, json).map(|r| (r.status, r.body))
}
