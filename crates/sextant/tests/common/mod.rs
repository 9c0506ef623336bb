//! End-to-end test harness: starts the real `sextant` binary on a loopback
//! address of its own, real TCP/HTTP backends, and talks DNS and HTTP to it
//! over real sockets.
//!
//! Every test derives its own 127.77.X.Y address from its name and the
//! process id, so tests running in parallel (threads under `cargo test`,
//! processes under nextest) never share a socket. All of 127.0.0.0/8 is
//! routed to `lo` on Linux, so no setup is needed.
//!
//! Nothing here asserts a wall-clock time: waits are "eventually, within a
//! generous deadline".
#![allow(dead_code, unused_imports)]

use std::collections::hash_map::DefaultHasher;
use std::fs;
use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::net::{
    IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket,
};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

pub use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
pub use hickory_proto::rr::rdata::opt::{ClientSubnet, EdnsCode, EdnsOption};
pub use hickory_proto::rr::{Name, RData, Record, RecordType};
pub use serde_json::Value;

/// Port of the DNS listener on the test's own address.
pub const DNS_PORT: u16 = 5300;
/// Port of the REST API on the test's own address.
pub const API_PORT: u16 = 8080;
/// Deadline for anything that must happen "eventually".
pub const EVENTUALLY: Duration = Duration::from_secs(15);
/// Deadline for the server to become ready.
pub const READY: Duration = Duration::from_secs(30);

/// Path of the binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_sextant")
}

// ---------------------------------------------------------------------------
// Addresses
// ---------------------------------------------------------------------------

/// The loopback addresses one test owns: 127.77.X.Y for the server, and
/// 127.(100+i).X.Y for backend / service i, 127.(200+k).X.Y for client k.
#[derive(Clone, Debug)]
pub struct Net {
    pub name: String,
    pub x: u8,
    pub y: u8,
}

impl Net {
    /// Picks the test's address from its name and the pid; probes that the
    /// fixed ports are free on it (re-hashing with a salt otherwise).
    pub fn new(test_name: &str) -> Net {
        for salt in 0u32..64 {
            let mut h = DefaultHasher::new();
            test_name.hash(&mut h);
            std::process::id().hash(&mut h);
            salt.hash(&mut h);
            let v = h.finish();
            let x = 1 + (v % 254) as u8;
            let y = 1 + ((v / 254) % 254) as u8;
            let net = Net {
                name: test_name.to_string(),
                x,
                y,
            };
            if net.ports_free() {
                return net;
            }
        }
        panic!("no free loopback address found for test {test_name}");
    }

    fn ports_free(&self) -> bool {
        let ip = self.server_ip();
        UdpSocket::bind((ip, DNS_PORT)).is_ok()
            && TcpListener::bind((ip, DNS_PORT)).is_ok()
            && TcpListener::bind((ip, API_PORT)).is_ok()
    }

    /// The server's own address (site IP, DNS and API listen address).
    pub fn server_ip(&self) -> Ipv4Addr {
        Ipv4Addr::new(127, 77, self.x, self.y)
    }

    /// Address of service / backend `i` (0..100).
    pub fn svc_ip(&self, i: u8) -> Ipv4Addr {
        assert!(i < 100);
        Ipv4Addr::new(127, 100 + i, self.x, self.y)
    }

    /// Address of DNS client `k` (0..50), for per-client behaviour.
    pub fn client_ip(&self, k: u8) -> Ipv4Addr {
        assert!(k < 50);
        Ipv4Addr::new(127, 200 + k, self.x, self.y)
    }

    pub fn dns_addr(&self) -> SocketAddr {
        SocketAddr::new(IpAddr::V4(self.server_ip()), DNS_PORT)
    }

    pub fn api_addr(&self) -> SocketAddr {
        SocketAddr::new(IpAddr::V4(self.server_ip()), API_PORT)
    }

    /// A fresh scratch directory for this test.
    pub fn tempdir(&self) -> PathBuf {
        static SEQ: AtomicU16 = AtomicU16::new(0);
        let d = std::env::temp_dir().join(format!(
            "sextant-e2e-{}-{}-{}",
            self.name.replace("::", "_"),
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).expect("create tempdir");
        d
    }

    /// A scratch directory removed when dropped (kept if the test fails).
    pub fn scratch(&self) -> Scratch {
        Scratch(self.tempdir())
    }

    /// A port on `ip` that is closed right now (bound, then released).
    pub fn closed_port(ip: Ipv4Addr) -> u16 {
        let l = TcpListener::bind((ip, 0)).expect("bind ephemeral");
        l.local_addr().unwrap().port()
    }

    /// The first lines of an appliance config every test shares: the local
    /// site and the ADNS listener, and the zone `example.com`.
    pub fn conf_preamble(&self) -> String {
        let ip = self.server_ip();
        format!(
            "# generated by the sextant end-to-end tests\n\
             add service adns1 {ip} ADNS {DNS_PORT}\n\
             add gslb site site1 {ip} -siteType LOCAL\n\
             add dns soaRec example.com -originServer ns1.example.com -contact hostmaster.example.com\n\
             add dns nsRec example.com ns1.example.com\n"
        )
    }
}

impl Net {
    /// The TOML equivalent of [`Net::conf_preamble`]: schema version, the
    /// DNS listener, the local site and the zone `example.com`. Tables that
    /// follow must start with their own `[[...]]` header.
    pub fn toml_preamble(&self) -> String {
        let ip = self.server_ip();
        format!(
            "# generated by the sextant end-to-end tests\n\
             version = 1\n\
             \n\
             [server]\n\
             dns_listen = [\"{ip}:{DNS_PORT}\"]\n\
             local_site = \"site1\"\n\
             \n\
             [[site]]\n\
             name = \"site1\"\n\
             ip = \"{ip}\"\n\
             \n\
             [[zone]]\n\
             apex = \"example.com\"\n\
             ns = [\"ns1.example.com\"]\n\
             soa = {{ origin_server = \"ns1.example.com\", contact = \"hostmaster.example.com\" }}\n"
        )
    }
}

/// A directory that is removed on drop, unless the test is failing.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// Writes `text` to `name` inside; returns the path as a string.
    pub fn write(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        fs::write(&p, text).expect("write scratch file");
        p.to_str().expect("utf-8 path").to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if thread::panicking() {
            eprintln!("scratch files kept in {}", self.0.display());
        } else {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

// ---------------------------------------------------------------------------
// eventually
// ---------------------------------------------------------------------------

/// Polls `cond` until it holds or `deadline` passes; returns whether it held.
pub fn wait_until(deadline: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + deadline;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// Like [`wait_until`] but panics with `what` when the deadline passes.
pub fn eventually(deadline: Duration, what: &str, cond: impl FnMut() -> bool) {
    assert!(
        wait_until(deadline, cond),
        "not true within {deadline:?}: {what}"
    );
}

// ---------------------------------------------------------------------------
// The server process
// ---------------------------------------------------------------------------

pub struct Server {
    child: Option<Child>,
    pub net: Net,
    pub dir: PathBuf,
    pub config: PathBuf,
    pub stderr_path: PathBuf,
    pub stdout_path: PathBuf,
    pub dns: Dns,
}

/// Config syntax of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    Conf,
    Toml,
}

impl Syntax {
    fn ext(self) -> &'static str {
        match self {
            Syntax::Conf => "conf",
            Syntax::Toml => "toml",
        }
    }
}

impl Server {
    /// Writes `config` and starts `sextant serve` on the test's address,
    /// waiting until the API answers. Panics (with the server log) if it
    /// does not come up.
    pub fn start(net: &Net, syntax: Syntax, config: &str) -> Server {
        Self::start_with(net, syntax, config, &[])
    }

    pub fn start_with(net: &Net, syntax: Syntax, config: &str, extra: &[&str]) -> Server {
        match Self::try_start(net, syntax, config, extra) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        }
    }

    /// Like [`Server::start_with`] but returns the log instead of panicking.
    pub fn try_start(
        net: &Net,
        syntax: Syntax,
        config: &str,
        extra: &[&str],
    ) -> Result<Server, String> {
        let dir = net.tempdir();
        let config_path = dir.join(format!("sextant.{}", syntax.ext()));
        fs::write(&config_path, config).expect("write config");
        let stderr_path = dir.join("stderr.log");
        let stdout_path = dir.join("stdout.log");
        let dns = net.dns_addr().to_string();
        let api = net.api_addr().to_string();
        let mut args: Vec<&str> = vec![
            "serve",
            "--config",
            config_path.to_str().unwrap(),
            "--dns-listen",
            &dns,
            "--api-listen",
            &api,
        ];
        args.extend_from_slice(extra);
        let child = Command::new(bin())
            .args(&args)
            .env(
                "RUST_LOG",
                std::env::var("SEXTANT_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(fs::File::create(&stdout_path).unwrap())
            .stderr(fs::File::create(&stderr_path).unwrap())
            .spawn()
            .map_err(|e| format!("cannot spawn {}: {e}", bin()))?;
        let mut server = Server {
            child: Some(child),
            net: net.clone(),
            dir,
            config: config_path,
            stderr_path,
            stdout_path,
            dns: Dns::new(net.dns_addr()),
        };
        let end = Instant::now() + READY;
        loop {
            if let Some(status) = server.child.as_mut().unwrap().try_wait().unwrap() {
                let log = server.log();
                server.child = None;
                return Err(format!(
                    "sextant exited before it was ready ({status}); config:\n{config}\n--- stderr ---\n{log}"
                ));
            }
            if let Ok((200, _)) = http_get(net.api_addr(), "/v1/status") {
                return Ok(server);
            }
            if Instant::now() >= end {
                let log = server.log();
                return Err(format!(
                    "sextant not ready within {READY:?} (GET /v1/status); config:\n{config}\n--- stderr ---\n{log}"
                ));
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().expect("server running").id() as i32
    }

    /// The server's stderr so far.
    pub fn log(&self) -> String {
        fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => c.try_wait().unwrap().is_none(),
            None => false,
        }
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
        let rc = unsafe { libc::kill(self.pid(), sig) };
        assert_eq!(rc, 0, "kill({}, {sig}) failed", self.pid());
    }

    /// Rewrites the config file and sends SIGHUP.
    pub fn reload(&self, config: &str) {
        fs::write(&self.config, config).expect("rewrite config");
        self.signal(libc::SIGHUP);
    }

    /// GET on the API, parsed as JSON; panics on transport errors.
    pub fn api(&self, path: &str) -> (u16, Value) {
        let (status, body) = http_get(self.net.api_addr(), path)
            .unwrap_or_else(|e| panic!("GET {path}: {e}\n--- stderr ---\n{}", self.log()));
        let v = serde_json::from_str(&body).unwrap_or(Value::String(body));
        (status, v)
    }

    /// GET that must answer 200 with JSON.
    pub fn api_ok(&self, path: &str) -> Value {
        let (status, v) = self.api(path);
        assert_eq!(status, 200, "GET {path} -> {status}: {v}");
        v
    }

    pub fn generation(&self) -> u64 {
        let v = self.api_ok("/v1/status");
        v["generation"]
            .as_u64()
            .unwrap_or_else(|| panic!("/v1/status has no numeric generation: {v}"))
    }

    /// The state ("UP"/"DOWN") of a service by name, from /v1/services.
    pub fn service_state(&self, name: &str) -> Option<String> {
        self.service(name)
            .and_then(|s| s["state"].as_str().map(str::to_string))
    }

    pub fn service(&self, name: &str) -> Option<Value> {
        let v = self.api_ok("/v1/services");
        v.as_array()
            .unwrap_or_else(|| panic!("/v1/services is not an array: {v}"))
            .iter()
            .find(|s| s["name"] == name)
            .cloned()
    }

    /// Waits until the API reports `state` for `svc`.
    pub fn wait_state(&self, svc: &str, state: &str) {
        let mut last = None;
        let ok = wait_until(EVENTUALLY, || {
            last = self.service_state(svc);
            last.as_deref() == Some(state)
        });
        assert!(
            ok,
            "service {svc} not {state} within {EVENTUALLY:?} (last: {last:?})"
        );
    }

    /// The /v1/explain trace for a query, as one string.
    pub fn explain(&self, name: &str, client: &str) -> String {
        let v = self.api_ok(&format!("/v1/explain?name={name}&client={client}"));
        let trace = v["trace"]
            .as_array()
            .unwrap_or_else(|| panic!("explain has no trace array: {v}"));
        trace
            .iter()
            .map(|t| t.as_str().unwrap_or_default().to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// SIGTERM, then SIGKILL if it has not gone after a few seconds.
    pub fn stop(&mut self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        if let Ok(Some(st)) = child.try_wait() {
            return Some(st);
        }
        // SAFETY: kill(2) on our own, not yet reaped child.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGTERM);
        }
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end {
            if let Ok(Some(st)) = child.try_wait() {
                return Some(st);
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        child.wait().ok()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
        if thread::panicking() {
            eprintln!(
                "===== sextant stderr ({}) =====\n{}\n===== config ({}) =====\n{}\n===== end =====",
                self.stderr_path.display(),
                self.log(),
                self.config.display(),
                fs::read_to_string(&self.config).unwrap_or_default()
            );
        } else {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// Runs the binary with `args` to completion (bounded by a deadline).
pub fn run_bin(args: &[&str]) -> Output {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn sextant");
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() >= end {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "sextant {args:?} did not finish within 60s\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        thread::sleep(Duration::from_millis(20));
    }
}

// ---------------------------------------------------------------------------
// HTTP client for the API
// ---------------------------------------------------------------------------

/// Minimal HTTP/1.0 GET: returns (status, body).
pub fn http_get(addr: SocketAddr, path: &str) -> Result<(u16, String), String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map_err(|e| format!("connect {addr}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    let req = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes())
        .map_err(|e| format!("write: {e}"))?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).map_err(|e| format!("read: {e}"))?;
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

// ---------------------------------------------------------------------------
// Backends
// ---------------------------------------------------------------------------

/// A TCP listener that accepts and closes connections (a TCP-monitor target)
/// or, with `http`, answers each request with 200 or 503. Dropping it closes
/// the port.
pub struct Backend {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    status: Arc<AtomicU16>,
    requests: Arc<Mutex<Vec<String>>>,
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
        let (stop2, status2, requests2) = (stop.clone(), status.clone(), requests.clone());
        let thread = thread::spawn(move || {
            while !stop2.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        if http {
                            let code = status2.load(Ordering::SeqCst);
                            let log = requests2.clone();
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

fn serve_http(mut conn: TcpStream, code: u16, log: Arc<Mutex<Vec<String>>>) {
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

// ---------------------------------------------------------------------------
// DNS client
// ---------------------------------------------------------------------------

/// Builds a query for `name`/`rtype`, RD clear, optional EDNS payload size.
pub fn build_query(name: &str, rtype: RecordType, edns: Option<u16>) -> Message {
    let mut m = Message::query();
    m.metadata.recursion_desired = false;
    m.add_query(Query::query(
        Name::from_ascii(name).expect("valid name"),
        rtype,
    ));
    if let Some(size) = edns {
        let mut e = Edns::new();
        e.set_max_payload(size);
        m.set_edns(e);
    }
    m
}

/// Adds an EDNS Client Subnet option (creating EDNS with 1232 if absent).
pub fn with_ecs(mut m: Message, addr: IpAddr, source_prefix: u8) -> Message {
    let mut e = m.edns.take().unwrap_or_else(|| {
        let mut e = Edns::new();
        e.set_max_payload(1232);
        e
    });
    e.options_mut().insert(EdnsOption::Subnet(ClientSubnet::new(
        addr,
        source_prefix,
        0,
    )));
    m.set_edns(e);
    m
}

/// The A addresses in a message's answer section.
pub fn a_records(m: &Message) -> Vec<Ipv4Addr> {
    m.answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::A(a) => Some(a.0),
            _ => None,
        })
        .collect()
}

pub fn aaaa_records(m: &Message) -> Vec<Ipv6Addr> {
    m.answers
        .iter()
        .filter_map(|r| match &r.data {
            RData::AAAA(a) => Some(a.0),
            _ => None,
        })
        .collect()
}

/// Whether the authority section holds an SOA record.
pub fn has_soa_authority(m: &Message) -> bool {
    m.authorities
        .iter()
        .any(|r| r.record_type() == RecordType::SOA)
}

/// The ECS option of a response, if any.
pub fn ecs_of(m: &Message) -> Option<ClientSubnet> {
    match m.edns.as_ref()?.option(EdnsCode::Subnet)? {
        EdnsOption::Subnet(s) => Some(*s),
        _ => None,
    }
}

#[derive(Clone, Debug)]
pub struct Dns {
    pub server: SocketAddr,
    pub timeout: Duration,
}

impl Dns {
    pub fn new(server: SocketAddr) -> Dns {
        Dns {
            server,
            timeout: Duration::from_secs(2),
        }
    }

    /// UDP exchange from an ephemeral port on `source` (None = 127.0.0.1),
    /// retried up to 3 times on timeout.
    pub fn try_udp_from(&self, source: Option<Ipv4Addr>, q: &Message) -> Result<Message, String> {
        let bytes = q.to_vec().map_err(|e| format!("encode: {e}"))?;
        let mut last = String::new();
        for _ in 0..3 {
            match self.raw_udp_from(source, &bytes, self.timeout) {
                Ok(Some(resp)) => {
                    return Message::from_vec(&resp)
                        .map_err(|e| format!("cannot parse response ({e}): {resp:?}"));
                }
                Ok(None) => last = format!("timeout after {:?}", self.timeout),
                Err(e) => last = e,
            }
        }
        Err(format!("UDP query to {} failed: {last}", self.server))
    }

    pub fn udp_from(&self, source: Option<Ipv4Addr>, q: &Message) -> Message {
        self.try_udp_from(source, q)
            .unwrap_or_else(|e| panic!("{e} (query {:?})", q.queries))
    }

    pub fn udp(&self, q: &Message) -> Message {
        self.udp_from(None, q)
    }

    /// Sends raw bytes over UDP; returns the first datagram that comes back
    /// within `wait` (None if nothing does). Responses whose id does not
    /// match the query's (when it has one) are skipped.
    pub fn raw_udp_from(
        &self,
        source: Option<Ipv4Addr>,
        bytes: &[u8],
        wait: Duration,
    ) -> Result<Option<Vec<u8>>, String> {
        let src = source.unwrap_or(Ipv4Addr::LOCALHOST);
        let sock = UdpSocket::bind((src, 0)).map_err(|e| format!("bind {src}: {e}"))?;
        sock.connect(self.server)
            .map_err(|e| format!("connect: {e}"))?;
        sock.send(bytes).map_err(|e| format!("send: {e}"))?;
        let end = Instant::now() + wait;
        let mut buf = vec![0u8; 65535];
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            sock.set_read_timeout(Some(left)).unwrap();
            match sock.recv(&mut buf) {
                Ok(n) => {
                    if bytes.len() >= 2 && n >= 2 && buf[..2] != bytes[..2] {
                        continue; // stale answer of an earlier try
                    }
                    return Ok(Some(buf[..n].to_vec()));
                }
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    return Ok(None);
                }
                // ECONNREFUSED from an ICMP port unreachable: nothing listens.
                Err(e) => return Err(format!("recv: {e}")),
            }
        }
    }

    pub fn raw_udp(&self, bytes: &[u8], wait: Duration) -> Result<Option<Vec<u8>>, String> {
        self.raw_udp_from(None, bytes, wait)
    }

    /// TCP exchange (2-byte length framing).
    pub fn try_tcp(&self, q: &Message) -> Result<Message, String> {
        let bytes = q.to_vec().map_err(|e| format!("encode: {e}"))?;
        let mut s = TcpStream::connect_timeout(&self.server, self.timeout)
            .map_err(|e| format!("TCP connect {}: {e}", self.server))?;
        s.set_read_timeout(Some(self.timeout * 2)).unwrap();
        s.set_write_timeout(Some(self.timeout)).unwrap();
        let mut framed = (bytes.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(&bytes);
        s.write_all(&framed)
            .map_err(|e| format!("TCP write: {e}"))?;
        let mut len = [0u8; 2];
        s.read_exact(&mut len)
            .map_err(|e| format!("TCP read length: {e}"))?;
        let mut body = vec![0u8; u16::from_be_bytes(len) as usize];
        s.read_exact(&mut body)
            .map_err(|e| format!("TCP read body: {e}"))?;
        Message::from_vec(&body).map_err(|e| format!("cannot parse TCP response: {e}"))
    }

    pub fn tcp(&self, q: &Message) -> Message {
        self.try_tcp(q)
            .unwrap_or_else(|e| panic!("{e} (query {:?})", q.queries))
    }

    /// Any message over UDP (alias of [`Dns::udp`]).
    pub fn query_full(&self, q: &Message) -> Message {
        self.udp(q)
    }

    /// Any message over TCP (alias of [`Dns::tcp`]).
    pub fn query_full_tcp(&self, q: &Message) -> Message {
        self.tcp(q)
    }

    /// A query over UDP without EDNS.
    pub fn query(&self, name: &str, rtype: RecordType) -> Message {
        self.udp(&build_query(name, rtype, None))
    }

    /// The A addresses for `name` (one UDP query from 127.0.0.1).
    pub fn query_a(&self, name: &str) -> Vec<Ipv4Addr> {
        a_records(&self.query(name, RecordType::A))
    }

    /// The A addresses for `name` asked from a given source address.
    pub fn query_a_from(&self, source: Ipv4Addr, name: &str) -> Vec<Ipv4Addr> {
        a_records(&self.udp_from(Some(source), &build_query(name, RecordType::A, None)))
    }

    /// `n` queries for `name`; every address seen, with multiplicity.
    pub fn sample_a(&self, name: &str, n: usize) -> Vec<Ipv4Addr> {
        (0..n).flat_map(|_| self.query_a(name)).collect()
    }
}

/// Reads a file path as a string for messages.
pub fn show(p: &Path) -> String {
    p.display().to_string()
}

/// Whether a program is on PATH.
pub fn have_program(name: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {name} >/dev/null 2>&1"))
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

// ---------------------------------------------------------------------------
// Other listen addresses and IPv6 clients
// ---------------------------------------------------------------------------

/// A port on `ip` that is free for both UDP and TCP right now (bound, then
/// released), e.g. for a DNS listener on `::1`, which every test shares.
pub fn free_port(ip: IpAddr) -> u16 {
    for _ in 0..100 {
        let Ok(u) = UdpSocket::bind((ip, 0)) else {
            continue;
        };
        let port = u.local_addr().unwrap().port();
        if TcpListener::bind((ip, port)).is_ok() {
            return port;
        }
    }
    panic!("no port free for UDP and TCP on {ip}");
}

impl Server {
    /// Like [`Server::start`], but the DNS listener is `dns` (for example
    /// `[::1]:PORT`) instead of the test's own IPv4 address; the API stays
    /// on the test's address, and `dns` is what [`Server::dns`] talks to.
    pub fn start_dns_on(net: &Net, syntax: Syntax, config: &str, dns: SocketAddr) -> Server {
        let dir = net.tempdir();
        let config_path = dir.join(format!("sextant.{}", syntax.ext()));
        fs::write(&config_path, config).expect("write config");
        let stderr_path = dir.join("stderr.log");
        let stdout_path = dir.join("stdout.log");
        let dns_arg = dns.to_string();
        let api = net.api_addr().to_string();
        let child = Command::new(bin())
            .args([
                "serve",
                "--config",
                config_path.to_str().unwrap(),
                "--dns-listen",
                &dns_arg,
                "--api-listen",
                &api,
            ])
            .env(
                "RUST_LOG",
                std::env::var("SEXTANT_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(fs::File::create(&stdout_path).unwrap())
            .stderr(fs::File::create(&stderr_path).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {}: {e}", bin()));
        let mut server = Server {
            child: Some(child),
            net: net.clone(),
            dir,
            config: config_path,
            stderr_path,
            stdout_path,
            dns: Dns::new(dns),
        };
        let end = Instant::now() + READY;
        loop {
            if let Some(status) = server.child.as_mut().unwrap().try_wait().unwrap() {
                let log = server.log();
                server.child = None;
                panic!(
                    "sextant exited before it was ready ({status}); config:\n{config}\n--- stderr ---\n{log}"
                );
            }
            if let Ok((200, _)) = http_get(net.api_addr(), "/v1/status") {
                return server;
            }
            assert!(
                Instant::now() < end,
                "sextant not ready within {READY:?} (GET /v1/status); config:\n{config}\n--- stderr ---\n{}",
                server.log()
            );
            thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Dns {
    /// Like [`Dns::raw_udp_from`], from any local address, IPv4 or IPv6
    /// (the server must listen in the same family).
    pub fn raw_udp_from_ip(
        &self,
        source: IpAddr,
        bytes: &[u8],
        wait: Duration,
    ) -> Result<Option<Vec<u8>>, String> {
        let sock = UdpSocket::bind((source, 0)).map_err(|e| format!("bind {source}: {e}"))?;
        sock.connect(self.server)
            .map_err(|e| format!("connect: {e}"))?;
        sock.send(bytes).map_err(|e| format!("send: {e}"))?;
        let end = Instant::now() + wait;
        let mut buf = vec![0u8; 65535];
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            sock.set_read_timeout(Some(left)).unwrap();
            match sock.recv(&mut buf) {
                Ok(n) => {
                    if bytes.len() >= 2 && n >= 2 && buf[..2] != bytes[..2] {
                        continue;
                    }
                    return Ok(Some(buf[..n].to_vec()));
                }
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    return Ok(None);
                }
                Err(e) => return Err(format!("recv: {e}")),
            }
        }
    }

    /// UDP exchange from `source` (IPv4 or IPv6), retried up to 3 times.
    pub fn udp_from_ip(&self, source: IpAddr, q: &Message) -> Message {
        let bytes = q.to_vec().expect("encode query");
        let mut last = String::new();
        for _ in 0..3 {
            match self.raw_udp_from_ip(source, &bytes, self.timeout) {
                Ok(Some(resp)) => {
                    return Message::from_vec(&resp)
                        .unwrap_or_else(|e| panic!("cannot parse response ({e}): {resp:?}"));
                }
                Ok(None) => last = format!("timeout after {:?}", self.timeout),
                Err(e) => last = e,
            }
        }
        panic!(
            "UDP query from {source} to {} failed: {last} (query {:?})",
            self.server, q.queries
        )
    }
}

// ---------------------------------------------------------------------------
// Several sites: metric exchange (MEP) tests
// ---------------------------------------------------------------------------

/// The default metric exchange port (`-mepPort`).
pub const MEP_PORT: u16 = 3011;

impl Net {
    /// The addresses of a test that runs `sites` sites (at most 20) in the
    /// host's network namespace: site `k` is 127.(80+k).X.Y (see
    /// [`Net::site_ip`]), backends and clients as for one server. X.Y is
    /// picked from the test name and the pid, like [`Net::new`], and probed
    /// free on every site IP for DNS, the API and MEP (other test binaries
    /// use 127.77 and 127.78 for their own MEP sites).
    pub fn for_sites(test_name: &str, sites: u8) -> Net {
        assert!((1..=20).contains(&sites), "1 to 20 sites");
        for salt in 0u32..64 {
            let mut h = DefaultHasher::new();
            test_name.hash(&mut h);
            std::process::id().hash(&mut h);
            "sites".hash(&mut h);
            salt.hash(&mut h);
            let v = h.finish();
            let net = Net {
                name: test_name.to_string(),
                x: 1 + (v % 254) as u8,
                y: 1 + ((v / 254) % 254) as u8,
            };
            if (0..sites).all(|k| net.site_ports_free(k)) {
                return net;
            }
        }
        panic!("no free loopback addresses found for the sites of test {test_name}");
    }

    fn site_ports_free(&self, k: u8) -> bool {
        let ip = self.site_ip(k);
        UdpSocket::bind((ip, DNS_PORT)).is_ok()
            && TcpListener::bind((ip, DNS_PORT)).is_ok()
            && TcpListener::bind((ip, API_PORT)).is_ok()
            && TcpListener::bind((ip, MEP_PORT)).is_ok()
    }

    /// The site IP of site `k` (0..20): its MEP, DNS and API address.
    pub fn site_ip(&self, k: u8) -> Ipv4Addr {
        assert!(k < 20);
        Ipv4Addr::new(127, 80 + k, self.x, self.y)
    }
}

/// Like [`eventually`], for a check that says why it does not hold yet: the
/// last reason is in the panic message.
pub fn eventually_ok(
    deadline: Duration,
    what: &str,
    mut check: impl FnMut() -> Result<(), String>,
) {
    let mut last = String::from("never checked");
    let ok = wait_until(deadline, || match check() {
        Ok(()) => true,
        Err(e) => {
            last = e;
            false
        }
    });
    assert!(
        ok,
        "not true within {deadline:?}: {what}\nlast check: {last}"
    );
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

/// A network namespace of the test's own (`ip netns add sxt-PID-TAG`, `lo`
/// up), deleted on drop. Inside it, all of 127.0.0.0/8 is routed to its
/// own `lo`, so sites get 127.0.x.y addresses that no other test sees, and
/// iptables rules in it cut links between them without touching the host.
///
/// * processes run inside with `ip netns exec NAME ...` (see
///   [`SiteServer::start`]);
/// * the test's own sockets (DNS and API clients, backends) are opened by
///   [`Netns::run`], on a helper thread that joined the namespace with
///   `setns(2)`: a socket stays in the namespace it was created in, so the
///   usual harness code works unchanged inside the closure.
pub struct Netns {
    pub name: String,
}

impl Netns {
    /// Creates the namespace, or returns None (with a printed notice) when
    /// the test cannot: not root, or `ip` / `iptables` missing
    /// (scripts/setup.sh installs them; CI runs as root).
    pub fn create(tag: &str) -> Option<Arc<Netns>> {
        // SAFETY: geteuid(2) has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("SKIPPED: this test needs root (network namespace and iptables)");
            return None;
        }
        for program in ["ip", "iptables", "iptables-restore"] {
            if !have_program(program) {
                eprintln!(
                    "SKIPPED: this test needs `{program}` (scripts/setup.sh installs iproute2 and iptables)"
                );
                return None;
            }
        }
        Self::remove_stale();
        let name = format!("sxt-{}-{tag}", std::process::id());
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        let out = Command::new("ip")
            .args(["netns", "add", &name])
            .output()
            .expect("run ip netns add");
        assert!(
            out.status.success(),
            "ip netns add {name} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ns = Arc::new(Netns { name });
        ns.exec_ok(&["ip", "link", "set", "lo", "up"]);
        Some(ns)
    }

    /// Deletes namespaces that earlier test processes left behind (a test
    /// killed by a timeout runs no destructor).
    fn remove_stale() {
        let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
            return;
        };
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let name = line.split_whitespace().next().unwrap_or_default();
            let Some(pid) = name
                .strip_prefix("sxt-")
                .and_then(|rest| rest.split('-').next())
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = Command::new("ip").args(["netns", "del", name]).output();
            }
        }
    }

    /// Runs `f` on a thread inside the namespace and returns its result;
    /// sockets `f` opens live in the namespace (and stay there).
    pub fn run<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        let path = format!("/run/netns/{}", self.name);
        thread::scope(|s| {
            s.spawn(|| {
                use std::os::fd::AsRawFd;
                let file = fs::File::open(&path).unwrap_or_else(|e| panic!("open {path}: {e}"));
                // SAFETY: setns(2) with a valid descriptor of a network
                // namespace; it moves only this helper thread, which ends
                // when `f` returns.
                let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                assert_eq!(
                    rc,
                    0,
                    "setns into {path}: {}",
                    std::io::Error::last_os_error()
                );
                f()
            })
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
        })
    }

    /// `ip netns exec NAME args...` to completion.
    pub fn exec(&self, args: &[&str]) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &self.name])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("ip netns exec {} {args:?}: {e}", self.name))
    }

    /// Like [`Netns::exec`]; panics unless it succeeds.
    pub fn exec_ok(&self, args: &[&str]) -> Output {
        let out = self.exec(args);
        assert!(
            out.status.success(),
            "ip netns exec {} {args:?} failed: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Applies iptables rules in one `iptables-restore --noflush` run, so a
    /// set of links goes down (or up) at once.
    fn restore(&self, rules: &str) {
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.name, "iptables-restore", "--noflush"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn iptables-restore");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(format!("*filter\n{rules}COMMIT\n").as_bytes())
            .expect("write iptables rules");
        let out = child.wait_with_output().expect("iptables-restore");
        assert!(
            out.status.success(),
            "iptables-restore failed: {}\nrules:\n{rules}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn rules(op: &str, pairs: &[(Ipv4Addr, Ipv4Addr)]) -> String {
        pairs
            .iter()
            .flat_map(|&(a, b)| [(a, b), (b, a)])
            .map(|(s, d)| format!("{op} INPUT -s {s}/32 -d {d}/32 -j DROP\n"))
            .collect()
    }

    /// Cuts each link A <-> B: every packet between the two addresses is
    /// dropped, in both directions (`iptables -A INPUT -s A -d B -j DROP`
    /// and the reverse).
    pub fn cut(&self, pairs: &[(Ipv4Addr, Ipv4Addr)]) {
        self.restore(&Self::rules("-A", pairs));
    }

    /// Heals links cut with [`Netns::cut`] (deletes their rules).
    pub fn heal(&self, pairs: &[(Ipv4Addr, Ipv4Addr)]) {
        self.restore(&Self::rules("-D", pairs));
    }

    /// Heals every link (flushes INPUT).
    pub fn heal_all(&self) {
        self.exec_ok(&["iptables", "-w", "-F", "INPUT"]);
    }

    /// The INPUT rules in force, for messages.
    pub fn rules_in_force(&self) -> String {
        String::from_utf8_lossy(&self.exec(&["iptables", "-w", "-S", "INPUT"]).stdout).into_owned()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// One site of a multi-site test: `sextant serve --local-site NAME` with
/// DNS on SITE_IP:5300 and the API on SITE_IP:8080, in the host's network
/// namespace or in a [`Netns`]. Its API and DNS helpers open their sockets
/// in the site's namespace. Stopped (by pid) on drop; its log is printed if
/// the test is failing.
pub struct SiteServer {
    pub name: String,
    pub ip: Ipv4Addr,
    pub dns: Dns,
    pub api_addr: SocketAddr,
    pub config: PathBuf,
    pub log_path: PathBuf,
    pub ns: Option<Arc<Netns>>,
    child: Option<Child>,
}

impl SiteServer {
    /// Writes `config` to DIR/NAME.conf and starts the site, waiting until
    /// its API answers.
    pub fn start(
        dir: &Path,
        name: &str,
        ip: Ipv4Addr,
        config: &str,
        ns: Option<Arc<Netns>>,
    ) -> SiteServer {
        let config_path = dir.join(format!("{name}.conf"));
        fs::write(&config_path, config).expect("write site config");
        let mut site = SiteServer {
            name: name.to_string(),
            ip,
            dns: Dns::new(SocketAddr::new(IpAddr::V4(ip), DNS_PORT)),
            api_addr: SocketAddr::new(IpAddr::V4(ip), API_PORT),
            config: config_path,
            log_path: dir.join(format!("{name}.log")),
            ns,
            child: None,
        };
        let _ = fs::remove_file(&site.log_path);
        site.spawn();
        site
    }

    /// Starts the process again after [`SiteServer::kill`] or
    /// [`SiteServer::stop`] (same configuration file; the log is appended).
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "site {} is running", self.name);
        self.spawn();
    }

    fn spawn(&mut self) {
        use std::os::unix::process::CommandExt;
        let mut log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .expect("open site log");
        let _ = writeln!(log, "===== test harness: starting site {} =====", self.name);
        let dns = self.dns.server.to_string();
        let api = self.api_addr.to_string();
        let config = self.config.to_str().expect("utf-8 path").to_string();
        let args = [
            "serve",
            "--config",
            config.as_str(),
            "--local-site",
            &self.name,
            "--dns-listen",
            &dns,
            "--api-listen",
            &api,
            "--udp-workers",
            "1",
        ];
        let mut cmd = match &self.ns {
            // `ip netns exec` execs the binary in place: the pid is sextant's.
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &ns.name, bin()]);
                c
            }
            None => Command::new(bin()),
        };
        cmd.args(args)
            .env(
                "RUST_LOG",
                std::env::var("SEXTANT_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        // SAFETY: prctl(2) only, between fork and exec: the server gets
        // SIGKILL if the test process dies without running destructors
        // (a test killed by a timeout), so no server outlives its test.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn site {}: {e}", self.name));
        self.child = Some(child);
        let end = Instant::now() + READY;
        loop {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                self.child = None;
                panic!(
                    "site {} exited before it was ready ({status}); config:\n{}\n--- log ---\n{}",
                    self.name,
                    fs::read_to_string(&self.config).unwrap_or_default(),
                    self.log()
                );
            }
            if let Ok((200, _)) = self.get("/v1/status") {
                return;
            }
            assert!(
                Instant::now() < end,
                "site {} not ready within {READY:?}; log:\n{}",
                self.name,
                self.log()
            );
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Runs `f` in the site's network namespace (directly without one).
    pub fn in_ns<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match &self.ns {
            Some(ns) => ns.run(f),
            None => f(),
        }
    }

    pub fn pid(&self) -> Option<i32> {
        self.child.as_ref().map(|c| c.id() as i32)
    }

    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => c.try_wait().unwrap().is_none(),
            None => false,
        }
    }

    /// GET on the site's API.
    pub fn get(&self, path: &str) -> Result<(u16, String), String> {
        let addr = self.api_addr;
        self.in_ns(|| http_get(addr, path))
    }

    /// GET that must answer 200 with JSON.
    pub fn try_api(&self, path: &str) -> Result<Value, String> {
        let (status, body) = self
            .get(path)
            .map_err(|e| format!("site {}: GET {path}: {e}", self.name))?;
        if status != 200 {
            return Err(format!(
                "site {}: GET {path} -> {status}: {body}",
                self.name
            ));
        }
        serde_json::from_str(&body)
            .map_err(|e| format!("site {}: GET {path}: not JSON ({e}): {body}", self.name))
    }

    pub fn api_ok(&self, path: &str) -> Value {
        self.try_api(path).unwrap_or_else(|e| panic!("{e}"))
    }

    /// POST of a JSON body on the site's API.
    pub fn post(&self, path: &str, json: &str) -> (u16, String) {
        let addr = self.api_addr;
        self.in_ns(|| http_post(addr, path, json))
            .unwrap_or_else(|e| panic!("site {}: POST {path}: {e}", self.name))
    }

    /// `/v1/sites`.
    pub fn try_sites(&self) -> Result<Vec<Value>, String> {
        match self.try_api("/v1/sites")? {
            Value::Array(a) => Ok(a),
            v => Err(format!(
                "site {}: /v1/sites is not an array: {v}",
                self.name
            )),
        }
    }

    /// The `/v1/sites` entry of `site` (case-insensitive name).
    pub fn try_site(&self, site: &str) -> Result<Value, String> {
        let sites = self.try_sites()?;
        sites
            .iter()
            .find(|s| {
                s["name"]
                    .as_str()
                    .is_some_and(|n| n.eq_ignore_ascii_case(site))
            })
            .cloned()
            .ok_or_else(|| {
                format!(
                    "site {}: /v1/sites has no entry {site}: {}",
                    self.name,
                    Value::Array(sites)
                )
            })
    }

    pub fn site(&self, site: &str) -> Value {
        self.try_site(site).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The `mep` counters of `/v1/status` (null when MEP is not running).
    pub fn mep_counters(&self) -> Value {
        self.api_ok("/v1/status")["mep"].clone()
    }

    /// One counter of `/v1/status` `mep`.
    pub fn mep_counter(&self, name: &str) -> u64 {
        let mep = self.mep_counters();
        mep[name]
            .as_u64()
            .unwrap_or_else(|| panic!("site {}: /v1/status mep.{name} missing: {mep}", self.name))
    }

    /// The `/v1/services` entry of a service.
    pub fn try_service(&self, name: &str) -> Result<Value, String> {
        let v = self.try_api("/v1/services")?;
        v.as_array()
            .and_then(|a| a.iter().find(|s| s["name"] == name).cloned())
            .ok_or_else(|| format!("site {}: /v1/services has no {name}: {v}", self.name))
    }

    pub fn service(&self, name: &str) -> Value {
        self.try_service(name).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A DNS query over UDP from 127.0.0.1 (in the site's namespace).
    pub fn try_query(&self, name: &str, rtype: RecordType) -> Result<Message, String> {
        let dns = self.dns.clone();
        let q = build_query(name, rtype, None);
        self.in_ns(|| dns.try_udp_from(None, &q))
            .map_err(|e| format!("site {}: {e}", self.name))
    }

    /// The A addresses the site answers for `name`.
    pub fn try_query_a(&self, name: &str) -> Result<Vec<Ipv4Addr>, String> {
        self.try_query(name, RecordType::A).map(|m| a_records(&m))
    }

    pub fn query_a(&self, name: &str) -> Vec<Ipv4Addr> {
        self.try_query_a(name).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The `/v1/explain` answer for `name` asked by `client`.
    pub fn explain(&self, name: &str, client: &str) -> Value {
        self.api_ok(&format!("/v1/explain?name={name}&client={client}"))
    }

    /// The site's log (stderr and stdout) so far.
    pub fn log(&self) -> String {
        fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// Rewrites the configuration file and sends SIGHUP.
    pub fn reload(&self, config: &str) {
        fs::write(&self.config, config).expect("rewrite site config");
        let pid = self.pid().expect("site running");
        // SAFETY: kill(2) on our own, not yet reaped child.
        let rc = unsafe { libc::kill(pid, libc::SIGHUP) };
        assert_eq!(rc, 0, "SIGHUP to site {} failed", self.name);
    }

    /// SIGKILL by pid, as a crash: no goodbye to the peers.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM by pid, then SIGKILL if it has not gone after 5 s.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        // SAFETY: kill(2) on our own, not yet reaped child.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGTERM);
        }
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for SiteServer {
    fn drop(&mut self) {
        self.stop();
        if thread::panicking() {
            let log = self.log();
            let lines: Vec<&str> = log.lines().collect();
            let tail = &lines[lines.len().saturating_sub(200)..];
            eprintln!(
                "===== site {} ({}) log, last {} lines: {} =====\n{}\n===== end of site {} =====",
                self.name,
                self.ip,
                tail.len(),
                self.log_path.display(),
                tail.join("\n"),
                self.name
            );
        }
    }
}
