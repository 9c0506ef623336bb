//! `GET` and `POST` over a blocking `std` TCP connection, for the command
//! line (`sextant explain --server`) and the tests' REST client.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::{Error, Limits, Reader, Request, Response};

/// How long the connect, and each read or write, may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub connect: Duration,
    pub io: Duration,
}

/// `GET path` (HTTP/1.0, `Connection: close`) from `addr`.
pub fn get(
    addr: SocketAddr,
    path: &str,
    timeouts: Timeouts,
    limits: Limits,
) -> Result<Response, Error> {
    let request = Request::new(&format!("GET {path} HTTP/1.0"))
        .header("Host", addr)
        .header("Connection", "close")
        .finish(b"");
    exchange(addr, &request, timeouts, limits)
}

/// `POST path` of a JSON body (HTTP/1.0, `Connection: close`) to `addr`.
pub fn post_json(
    addr: SocketAddr,
    path: &str,
    json: &str,
    timeouts: Timeouts,
    limits: Limits,
) -> Result<Response, Error> {
    let request = Request::new(&format!("POST {path} HTTP/1.0"))
        .header("Host", addr)
        .header("Content-Type", "application/json")
        .header("Content-Length", json.len())
        .header("Connection", "close")
        .finish(json.as_bytes());
    exchange(addr, &request, timeouts, limits)
}

/// `METHOD path` with extra header fields (`(name, value)`, sent as given)
/// and a body (HTTP/1.0, `Connection: close`; a `Content-Length` is sent
/// when the body is not empty or the method is not GET or HEAD).
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeouts: Timeouts,
    limits: Limits,
) -> Result<Response, Error> {
    let mut request = Request::new(&format!("{method} {path} HTTP/1.0"))
        .header("Host", addr)
        .header("Connection", "close");
    for (name, value) in headers {
        request = request.header(name, value);
    }
    if !body.is_empty() || !matches!(method, "GET" | "HEAD") {
        request = request.header("Content-Length", body.len());
    }
    exchange(addr, &request.finish(body), timeouts, limits)
}

/// Connects to `addr`, sends `request` and reads one response.
pub fn exchange(
    addr: SocketAddr,
    request: &[u8],
    timeouts: Timeouts,
    limits: Limits,
) -> Result<Response, Error> {
    let timed_out = |e: io::Error, or: fn(io::Error) -> Error| {
        if matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ) {
            Error::Timeout(timeouts.io)
        } else {
            or(e)
        }
    };
    let mut stream = TcpStream::connect_timeout(&addr, timeouts.connect)
        .map_err(|source| Error::Connect { addr, source })?;
    stream
        .set_read_timeout(Some(timeouts.io))
        .and_then(|()| stream.set_write_timeout(Some(timeouts.io)))
        .map_err(|source| Error::Connect { addr, source })?;
    stream
        .write_all(request)
        .and_then(|()| stream.flush())
        .map_err(|e| timed_out(e, Error::Send))?;
    let mut reader = Reader::for_response(limits);
    loop {
        let fill = reader
            .fill(|w| stream.read(w))
            .map_err(|e| timed_out(e, Error::Read))?;
        if let Some(response) = reader.progress(fill, |_, _| Ok(()))? {
            return Ok(response);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    const LIMITS: Limits = Limits {
        max: 1024,
        max_head: 512,
        read_size: 256,
    };
    const TIMEOUTS: Timeouts = Timeouts {
        connect: Duration::from_secs(5),
        io: Duration::from_secs(5),
    };

    /// A one-shot server: reads the request head, answers `reply`.
    fn serve(reply: &'static [u8]) -> (SocketAddr, std::thread::JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 512];
            while crate::header_end(&seen).is_none() {
                let n = s.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                seen.extend_from_slice(&buf[..n]);
            }
            s.write_all(reply).unwrap();
            seen
        });
        (addr, server)
    }

    #[test]
    fn get_and_post_over_tcp() {
        let (addr, server) =
            serve(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n");
        let r = get(addr, "/v1/x?a=1", TIMEOUTS, LIMITS).unwrap();
        assert_eq!((r.status, r.text().as_str()), (200, "{}"));
        let seen = String::from_utf8(server.join().unwrap()).unwrap();
        assert_eq!(
            seen,
            format!("GET /v1/x?a=1 HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
        );

        let (addr, server) = serve(b"HTTP/1.1 400 Bad\r\nContent-Length: 2\r\n\r\nno");
        let r = post_json(addr, "/v1/y", "{\"a\":1}", TIMEOUTS, LIMITS).unwrap();
        assert_eq!((r.status, r.text().as_str()), (400, "no"));
        let seen = String::from_utf8(server.join().unwrap()).unwrap();
        assert!(seen.starts_with("POST /v1/y HTTP/1.0\r\n"), "{seen}");
        assert!(seen.contains("\r\nContent-Length: 7\r\n"), "{seen}");

        let (addr, server) =
            serve(b"HTTP/1.1 401 No\r\nWWW-Authenticate: Bearer\r\nContent-Length: 0\r\n\r\n");
        let r = request(
            addr,
            "PUT",
            "/v1/z",
            &[("Authorization", "Bearer t")],
            b"",
            TIMEOUTS,
            LIMITS,
        )
        .unwrap();
        assert_eq!(r.status, 401);
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
        let seen = String::from_utf8(server.join().unwrap()).unwrap();
        assert!(seen.starts_with("PUT /v1/z HTTP/1.0\r\n"), "{seen}");
        assert!(seen.contains("\r\nAuthorization: Bearer t\r\n"), "{seen}");
        assert!(seen.contains("\r\nContent-Length: 0\r\n"), "{seen}");
    }

    #[test]
    fn a_closed_port_is_a_connect_error() {
        let addr = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let e = get(addr, "/", TIMEOUTS, LIMITS).unwrap_err();
        assert!(matches!(e, Error::Connect { .. }), "{e}");
    }
}
