//! A `/v1/events` client for tests: a plain HTTP/1.1 connection that reads
//! the server-sent event stream as text, so a test can wait for what it
//! expects and see everything the stream said when it fails.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::wait::EVENTUALLY;

/// An open `/v1/events` stream and all it has sent so far.
pub struct EventReader {
    stream: TcpStream,
    /// Everything read from the connection, the response head included.
    pub seen: String,
}

impl EventReader {
    /// Opens `/v1/events` at `api` with the bearer `token` (if any) and
    /// `extra` header lines (each ending in `\r\n`), and waits until the
    /// server says `: subscribed`; panics if the answer is not a 200
    /// event stream.
    pub fn connect(api: SocketAddr, token: Option<&str>, extra: &str) -> EventReader {
        let mut stream = TcpStream::connect(api).expect("connect to the API");
        let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
        write!(
            stream,
            "GET /v1/events HTTP/1.1\r\nHost: {api}\r\nAccept: text/event-stream\r\n{auth}{extra}\r\n"
        )
        .expect("send the request");
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .expect("a read timeout");
        let mut r = EventReader {
            stream,
            seen: String::new(),
        };
        r.wait_for(&[": subscribed"]);
        assert!(
            r.seen.starts_with("HTTP/1.1 200") && r.seen.contains("text/event-stream"),
            "{}",
            r.seen
        );
        r
    }

    /// Reads until every one of `wanted` has been seen; panics after
    /// [`EVENTUALLY`] with what was read.
    pub fn wait_for(&mut self, wanted: &[&str]) {
        let end = Instant::now() + EVENTUALLY;
        while !wanted.iter().all(|w| self.seen.contains(w)) {
            assert!(
                Instant::now() < end,
                "missing {wanted:?} in the event stream:\n{}",
                self.seen
            );
            if !self.read_some() {
                panic!("the event stream ended:\n{}", self.seen);
            }
        }
    }

    /// Reads what comes within `period` (a bounded number of reads).
    pub fn drain(&mut self, period: Duration) {
        let end = Instant::now() + period;
        for _ in 0..1000 {
            if Instant::now() >= end || !self.read_some() {
                return;
            }
        }
    }

    /// One read (up to the 200 ms timeout); false once the stream ended.
    fn read_some(&mut self) -> bool {
        let mut buf = [0u8; 4096];
        match self.stream.read(&mut buf) {
            Ok(0) => false,
            Ok(n) => {
                self.seen.push_str(&String::from_utf8_lossy(&buf[..n]));
                true
            }
            Err(_) => true,
        }
    }
}
