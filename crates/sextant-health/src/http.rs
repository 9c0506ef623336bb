//! HTTP monitor: one request, an accepted status and optionally a body text.
//!
//! The request is written by hand (HTTP/1.1 with `Connection: close`) rather
//! than with an HTTP client library: a monitor needs a single request line,
//! the status code and at most a bounded piece of the body, and a small,
//! fully bounded reader is easier to trust with untrusted backends. Request
//! building, the bounded reader and the response parsing are Sextant's one
//! HTTP/1 client, [`sextant_http1`]; what is the monitor's own is here: the
//! request from the operator's text and the verdict on a response while it
//! arrives. The same exchange runs over TLS for HTTPS (see [`crate::tls`]).

use std::net::{IpAddr, SocketAddr};

use sextant_core::HttpCheck;
use sextant_http1::{
    Fill, Framing, Reader, Request, contains, find, header_end, parse_status_line,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::{ProbeError, Success, tcp};

/// How much of a response is read at most (status line, headers and body).
/// Backends that put the expected text further down are misconfigured for
/// monitoring; reading on would let a backend make us buffer without bound.
pub const MAX_RESPONSE: usize = 64 * 1024;

/// The status line must fit in this many bytes.
const MAX_STATUS_LINE: usize = 8 * 1024;

/// The most bytes asked of one read.
const READ_SIZE: usize = 4096;

/// The request line used when the monitor has none.
const DEFAULT_REQUEST: &str = "HEAD /";

/// Connects to `target` and runs the HTTP exchange; the caller bounds time.
pub(crate) async fn probe(check: &HttpCheck, target: SocketAddr) -> Result<Success, ProbeError> {
    let mut stream = tcp::connect(target).await?;
    exchange(&mut stream, check, target).await
}

/// The bytes sent for `check` to a backend at `ip`.
///
/// `request` is normally the request line without version (`GET /health`,
/// the appliance's `-httpRequest`); ` HTTP/1.1` is added unless it names a
/// version already. It may carry header lines after the request line
/// (`GET / HTTP/1.1\r\nHost: a.example`): they are kept, and so are the
/// monitor's `custom_headers`. `Host` (the backend's address),
/// `Connection: close` and `User-Agent` are added unless one of those
/// headers names them already, so nothing is sent twice. A request that
/// already ends its headers (`\r\n\r\n`: an HTTP-ECV `-send` written out in
/// full) is sent verbatim.
pub fn request_bytes(check: &HttpCheck, ip: IpAddr) -> Vec<u8> {
    let text = check.request.trim_start();
    if text.contains("\r\n\r\n") {
        return text.as_bytes().to_vec();
    }
    let mut lines = text.lines().map(str::trim_end).filter(|l| !l.is_empty());
    let line = lines.next().unwrap_or(DEFAULT_REQUEST);
    let headers: Vec<&str> = lines
        .chain(check.custom_headers.lines().map(str::trim_end))
        .filter(|l| !l.is_empty())
        .collect();
    let has = |name: &str| {
        headers.iter().any(|h| {
            h.split_once(':')
                .is_some_and(|(n, _)| n.trim().eq_ignore_ascii_case(name))
        })
    };
    let version = if line.contains("HTTP/1.") {
        ""
    } else {
        " HTTP/1.1"
    };
    let mut request = Request::new(&format!("{line}{version}"));
    if !has("host") {
        request = request.header("Host", sextant_http1::host(&ip.to_string(), None));
    }
    for h in &headers {
        request = request.line(h);
    }
    if !has("connection") {
        request = request.header("Connection", "close");
    }
    if !has("user-agent") {
        request = request.header("User-Agent", "sextant-monitor");
    }
    request.finish(b"")
}

/// Sends the request on an open stream and judges the response.
pub(crate) async fn exchange<S>(
    stream: &mut S,
    check: &HttpCheck,
    target: SocketAddr,
) -> Result<Success, ProbeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let io_err = |source| ProbeError::Io {
        what: "HTTP exchange with",
        addr: target,
        source,
    };
    stream
        .write_all(&request_bytes(check, target.ip()))
        .await
        .map_err(io_err)?;
    stream.flush().await.map_err(io_err)?;

    // At MAX_RESPONSE the reader stops: the verdict is on what came.
    let mut reader = Reader::new(MAX_RESPONSE, READ_SIZE);
    let mut closed = false;
    loop {
        if let Some(verdict) = judge_response(check, reader.bytes(), closed) {
            return verdict;
        }
        let fill = reader
            .fill_async(async |w| stream.read(w).await)
            .await
            .map_err(io_err)?;
        closed = fill != Fill::Data;
    }
}

/// Judges the response received so far: `None` while more bytes could
/// change the verdict, the verdict once they cannot. `closed` says that no
/// more bytes will come (the peer closed, or a read hit [`MAX_RESPONSE`]);
/// with it the answer is always `Some`.
///
/// Pure (no I/O) so that the same code the monitor runs can be fed
/// arbitrary bytes by the fuzz target and the tests; [`exchange`] calls it
/// after every read, which rescans at most [`MAX_RESPONSE`] bytes.
pub(crate) fn judge_response(
    check: &HttpCheck,
    buf: &[u8],
    closed: bool,
) -> Option<Result<Success, ProbeError>> {
    let no_more = closed || buf.len() >= MAX_RESPONSE;
    // Status line first: most monitors need nothing more.
    let Some(line_end) = find(buf, b"\n") else {
        if buf.len() >= MAX_STATUS_LINE {
            return Some(Err(ProbeError::HttpMalformed(
                "status line too long".into(),
            )));
        }
        if !no_more {
            return None;
        }
        return Some(Err(ProbeError::HttpMalformed(if buf.is_empty() {
            "connection closed without a response".into()
        } else {
            "connection closed inside the status line".into()
        })));
    };
    let status = match parse_status_line(&buf[..line_end]) {
        Ok(status) => status,
        Err(e) => return Some(Err(ProbeError::HttpMalformed(e.to_string()))),
    };
    if !status_accepted(&check.status_codes, status) {
        return Some(Err(ProbeError::HttpStatus {
            status,
            expected: fmt_ranges(&check.status_codes),
        }));
    }
    let Some(needle) = check.body_contains.as_deref() else {
        return Some(Ok(Success::timed(format!("HTTP {status}"))));
    };
    let body_error = || {
        Some(Err(ProbeError::HttpBody {
            status,
            needle: needle.to_string(),
        }))
    };

    // Then the headers, for the body's framing.
    let Some(body_start) = header_end(buf) else {
        return if no_more { body_error() } else { None };
    };
    let framing = Framing::from_headers(&buf[..body_start]);

    // Then the body, until the text shows up or the body or our cap ends.
    let raw = buf.get(body_start..).unwrap_or_default();
    let (body, complete) = framing.body(raw);
    if contains(&body, needle.as_bytes()) {
        return Some(Ok(Success::timed(format!("HTTP {status}"))));
    }
    if complete || no_more {
        return body_error();
    }
    None
}

/// Whether `status` is in one of the inclusive `ranges` (default `200`).
pub fn status_accepted(ranges: &[(u16, u16)], status: u16) -> bool {
    if ranges.is_empty() {
        return status == 200;
    }
    ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&status))
}

/// `200`, `200,300-399`: the accepted ranges as operators wrote them.
fn fmt_ranges(ranges: &[(u16, u16)]) -> String {
    if ranges.is_empty() {
        return "200".into();
    }
    ranges
        .iter()
        .map(|&(lo, hi)| {
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}-{hi}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(request: &str) -> HttpCheck {
        HttpCheck {
            request: request.into(),
            status_codes: vec![],
            body_contains: None,
            custom_headers: String::new(),
        }
    }

    #[test]
    fn request_line_defaults_and_versions() {
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let req = String::from_utf8(request_bytes(&check(""), ip)).unwrap();
        assert_eq!(
            req,
            "HEAD / HTTP/1.1\r\nHost: 10.0.0.1\r\nConnection: close\r\nUser-Agent: sextant-monitor\r\n\r\n"
        );
        let req = String::from_utf8(request_bytes(&check("GET /health"), ip)).unwrap();
        assert!(req.starts_with("GET /health HTTP/1.1\r\nHost: 10.0.0.1\r\n"));
        let req = String::from_utf8(request_bytes(&check("GET / HTTP/1.0"), ip)).unwrap();
        assert!(req.starts_with("GET / HTTP/1.0\r\nHost:"));
        let v6: IpAddr = "::1".parse().unwrap();
        let req = String::from_utf8(request_bytes(&check("GET /"), v6)).unwrap();
        assert!(req.contains("Host: [::1]\r\n"));
        let full = "GET / HTTP/1.0\r\nX: y\r\n\r\n";
        assert_eq!(request_bytes(&check(full), ip), full.as_bytes());
    }

    #[test]
    fn operator_headers_are_kept_and_never_doubled() {
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let mut c = check("GET /health");
        c.custom_headers = "Host: www.example.com\r\nX-Probe: 1\r\n".into();
        let req = String::from_utf8(request_bytes(&c, ip)).unwrap();
        assert_eq!(
            req,
            "GET /health HTTP/1.1\r\nHost: www.example.com\r\nX-Probe: 1\r\nConnection: close\r\nUser-Agent: sextant-monitor\r\n\r\n"
        );
        // A request with its own version and headers, but no blank line.
        let c = check("GET /h HTTP/1.1\r\nhost: app\r\nconnection: keep-alive\r\n");
        let req = String::from_utf8(request_bytes(&c, ip)).unwrap();
        assert_eq!(
            req,
            "GET /h HTTP/1.1\r\nhost: app\r\nconnection: keep-alive\r\nUser-Agent: sextant-monitor\r\n\r\n"
        );
        // The appliance's empty custom headers ("\r\n") add nothing.
        let mut c = check("HEAD /");
        c.custom_headers = "\r\n".into();
        assert_eq!(request_bytes(&c, ip), request_bytes(&check("HEAD /"), ip));
    }

    #[test]
    fn ranges() {
        assert!(status_accepted(&[], 200));
        assert!(!status_accepted(&[], 204));
        assert!(status_accepted(&[(300, 399)], 302));
        assert!(!status_accepted(&[(300, 399), (200, 200)], 404));
        assert_eq!(fmt_ranges(&[(200, 200), (300, 399)]), "200,300-399");
    }

    #[test]
    fn judges_partial_and_complete_responses() {
        let verdict = |c: &HttpCheck, buf: &[u8], closed| {
            judge_response(c, buf, closed).map(|r| r.map(|s| s.what).map_err(|e| e.to_string()))
        };
        let plain = check("GET /");
        // Nothing yet: wait; closed with nothing: a failure that says so.
        assert_eq!(verdict(&plain, b"", false), None);
        assert_eq!(verdict(&plain, b"HTTP/1.1 200", false), None);
        let closed = verdict(&plain, b"HTTP/1.1 200", true).unwrap().unwrap_err();
        assert!(closed.contains("inside the status line"), "{closed}");
        assert_eq!(
            verdict(&plain, b"HTTP/1.1 200 OK\r\n", false),
            Some(Ok("HTTP 200".into()))
        );
        assert!(matches!(
            verdict(&plain, b"HTTP/1.1 503 No\r\n", false),
            Some(Err(_))
        ));
        assert!(matches!(
            verdict(&plain, &[b'x'; MAX_STATUS_LINE], false),
            Some(Err(_))
        ));

        let mut body = check("GET /");
        body.body_contains = Some("alive".into());
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
        assert_eq!(verdict(&body, head, false), None);
        let mut partial = head.to_vec();
        partial.extend_from_slice(b"I am");
        assert_eq!(verdict(&body, &partial, false), None);
        assert!(matches!(verdict(&body, &partial, true), Some(Err(_))));
        partial.extend_from_slice(b" alive");
        assert_eq!(verdict(&body, &partial, false), Some(Ok("HTTP 200".into())));
        // The whole body arrived without the text: no need to wait for more.
        let mut done = head.to_vec();
        done.extend_from_slice(b"I am dead.");
        assert!(matches!(verdict(&body, &done, false), Some(Err(_))));
    }
}
