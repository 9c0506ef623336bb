//! A minimal HTTP/1.0 client for the REST API.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Minimal HTTP/1.0 GET: returns (status, body).
pub fn http_get(addr: SocketAddr, path: &str) -> Result<(u16, String), String> {
    get(addr, path, Duration::from_secs(2), Duration::from_secs(5))
}

/// Like [`http_get`], with `timeout` for the connect and for each read and
/// write (a short one, so a stuck server does not stall a sampling loop).
pub fn http_get_within(
    addr: SocketAddr,
    path: &str,
    timeout: Duration,
) -> Result<(u16, String), String> {
    get(addr, path, timeout, timeout)
}

fn get(
    addr: SocketAddr,
    path: &str,
    connect: Duration,
    io: Duration,
) -> Result<(u16, String), String> {
    let mut s =
        TcpStream::connect_timeout(&addr, connect).map_err(|e| format!("connect {addr}: {e}"))?;
    s.set_read_timeout(Some(io)).unwrap();
    s.set_write_timeout(Some(io)).unwrap();
    let req = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes())
        .map_err(|e| format!("write: {e}"))?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)
        .map_err(|e| format!("no answer within {io:?}: {e}"))?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no header end in {text:?}"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or_else(|| format!("bad status line in {head:?}"))?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    Ok((status, body))
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((len, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(len.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// Minimal HTTP/1.0 POST of a JSON body: returns (status, body).
pub fn http_post(addr: SocketAddr, path: &str, json: &str) -> Result<(u16, String), String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map_err(|e| format!("connect {addr}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    let req = format!(
        "POST {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{json}",
        json.len()
    );
    s.write_all(req.as_bytes())
        .map_err(|e| format!("write: {e}"))?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).map_err(|e| format!("read: {e}"))?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or_else(|| format!("bad status line in {head:?}"))?;
    Ok((status, body.to_string()))
}
