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
