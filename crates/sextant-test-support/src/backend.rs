//! Real TCP and HTTP backends (monitor targets) on a loopback address.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// A TCP listener that accepts and closes connections (a TCP-monitor target)
/// or, with `http`, answers each request with 200 or 503. Dropping it closes
/// the port.
pub struct Backend {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    status: Arc<AtomicU16>,
    requests: Arc<Mutex<Vec<String>>>,
    /// Whole request heads, as received (the first 1000).
    heads: Arc<Mutex<Vec<String>>>,
    thread: Option<JoinHandle<()>>,
}

impl Backend {
    /// Plain TCP backend on `ip`, any free port.
    pub fn tcp(ip: Ipv4Addr) -> Backend {
        Self::spawn(SocketAddr::new(IpAddr::V4(ip), 0), false)
    }

    /// Plain TCP backend on a given address (to restart a killed one).
    pub fn tcp_at(addr: SocketAddr) -> Backend {
        Self::spawn(addr, false)
    }

    /// HTTP backend answering 200 until told otherwise.
    pub fn http(ip: Ipv4Addr) -> Backend {
        Self::spawn(SocketAddr::new(IpAddr::V4(ip), 0), true)
    }

    pub fn http_at(addr: SocketAddr) -> Backend {
        Self::spawn(addr, true)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn ip(&self) -> Ipv4Addr {
        match self.addr.ip() {
            IpAddr::V4(v) => v,
            IpAddr::V6(_) => unreachable!(),
        }
    }

    /// The request lines (`GET /health HTTP/1.1`) an HTTP backend has seen.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }

    /// The whole request heads (request line, headers, blank line) an HTTP
    /// backend has seen, as received: for tests of what a monitor sends.
    pub fn request_heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }

    /// Sets the HTTP status code the backend answers with.
    pub fn set_status(&self, code: u16) {
        self.status.store(code, Ordering::SeqCst);
    }

    fn spawn(addr: SocketAddr, http: bool) -> Backend {
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(addr) {
                Ok(l) => break l,
                Err(e) if tries < 100 => {
                    let _ = e;
                    tries += 1;
                    thread::sleep(Duration::from_millis(50));
                }
                Err(e) => panic!("cannot bind backend {addr}: {e}"),
            }
        };
        let addr = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let status = Arc::new(AtomicU16::new(200));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (stop2, status2, requests2) = (stop.clone(), status.clone(), requests.clone());
        let heads2 = heads.clone();
        let thread = thread::spawn(move || {
            while !stop2.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        if http {
                            let code = status2.load(Ordering::SeqCst);
                            let log = (requests2.clone(), heads2.clone());
                            thread::spawn(move || serve_http(conn, code, log));
                        } else {
                            drop(conn);
                        }
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
            // listener dropped here: the port is closed
        });
        Backend {
            addr,
            stop,
            status,
            requests,
            heads,
            thread: Some(thread),
        }
    }

    /// Closes the port (same as dropping it).
    pub fn kill(mut self) -> SocketAddr {
        self.shutdown();
        self.addr
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.shutdown();
    }
}

type Logs = (Arc<Mutex<Vec<String>>>, Arc<Mutex<Vec<String>>>);

fn serve_http(mut conn: TcpStream, code: u16, (log, heads): Logs) {
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 65536 {
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let text = String::from_utf8_lossy(&buf);
    let line = text.lines().next().unwrap_or_default().to_string();
    {
        let mut l = log.lock().unwrap();
        if l.len() < 1000 {
            l.push(line);
        }
        let mut h = heads.lock().unwrap();
        if h.len() < 1000 {
            h.push(text.into_owned());
        }
    }
    let reason = if code == 200 {
        "OK"
    } else {
        "Service Unavailable"
    };
    let body = if code == 200 { "OK\n" } else { "DOWN\n" };
    let resp = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = conn.write_all(resp.as_bytes());
    let _ = conn.shutdown(Shutdown::Both);
}
