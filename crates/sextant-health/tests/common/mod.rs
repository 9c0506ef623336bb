//! Small real servers on 127.0.0.1 for the probe tests.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sextant_core::{Monitor, MonitorKind};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, UdpSocket};

/// A monitor of `kind` with a short timeout, for fast tests.
pub fn monitor(kind: MonitorKind, timeout_ms: u64) -> Monitor {
    let mut m = Monitor::new("test", kind);
    m.response_timeout = Duration::from_millis(timeout_ms);
    m
}

/// Requests seen by a test server, as text.
pub type Seen = Arc<Mutex<Vec<String>>>;

/// An HTTP server that answers every connection with `response` after
/// reading the request head; returns its address and the requests it saw.
pub async fn http_server(response: &'static [u8]) -> (SocketAddr, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Seen = Arc::default();
    let seen2 = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let seen = seen2.clone();
            tokio::spawn(async move { answer(&mut stream, response, &seen).await });
        }
    });
    (addr, seen)
}

/// Reads a request head from `stream`, records it, writes `response`, closes.
pub async fn answer<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    response: &[u8],
    seen: &Seen,
) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    seen.lock()
        .unwrap()
        .push(String::from_utf8_lossy(&buf).into_owned());
    let _ = stream.write_all(response).await;
    let _ = stream.shutdown().await;
}

/// A TCP server that accepts and then never says anything.
pub async fn silent_tcp_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    addr
}

/// A UDP server that answers every datagram with `reply(datagram)` (no
/// answer when it returns `None`).
pub async fn udp_server<F>(reply: F) -> SocketAddr
where
    F: Fn(&[u8]) -> Option<Vec<u8>> + Send + 'static,
{
    let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = socket.local_addr().unwrap();
    tokio::spawn(async move {
        let mut buf = [0u8; 2048];
        loop {
            let Ok((n, from)) = socket.recv_from(&mut buf).await else {
                return;
            };
            if let Some(out) = reply(&buf[..n]) {
                let _ = socket.send_to(&out, from).await;
            }
        }
    });
    addr
}

/// A UDP port with nothing bound to it (bound once, then released).
pub async fn closed_udp_port() -> SocketAddr {
    let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    socket.local_addr().unwrap()
}
