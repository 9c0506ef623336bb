//! `dns-robustness`: a black-box prober for a running DNS server.
//!
//! It talks raw UDP and TCP to one server address with packets it builds
//! byte by byte, and decodes the replies with its own strict parser, so that
//! what it checks is the wire, not what a library makes of it (two OPT
//! records, an extended RCODE, an echoed flag). Each check prints one line
//! `PASS|FAIL name: detail (counts)`; a summary follows and the exit status
//! is 1 when any check failed. It is run by `bench/robustness.sh`, which
//! starts `sextant serve` with a configuration that matches the flags below;
//! see docs/robustness.md for what is checked and why.
//!
//! All traffic goes to the given server address, which the script keeps on
//! loopback; every loop is bounded by a count and a deadline.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use sextant_test_support::process::{proc_status, rss_kib};

const TYPE_A: u16 = 1;
const TYPE_NS: u16 = 2;
const TYPE_SOA: u16 = 6;
const TYPE_TXT: u16 = 16;
const TYPE_AAAA: u16 = 28;
const TYPE_OPT: u16 = 41;
const OPT_NSID: u16 = 3;
const OPT_COOKIE: u16 = 10;
const RCODE_FORMERR: u16 = 1;
const RCODE_NXDOMAIN: u16 = 3;
const RCODE_NOTIMP: u16 = 4;
const RCODE_BADVERS: u16 = 16;
const RCODE_BADCOOKIE: u16 = 23;
const FLAG_QR: u16 = 0x8000;
const FLAG_AA: u16 = 0x0400;
const FLAG_TC: u16 = 0x0200;

// ---------------------------------------------------------------------------
// Command line

/// What the prober is told about the server under test: its address and
/// process, the names its configuration serves, and the limits it was
/// configured with (the checks compare the behaviour with these).
struct Args {
    server: SocketAddr,
    pid: Option<u32>,
    zone: String,
    name: String,
    big: Vec<(String, u16)>,
    checks: Vec<String>,
    udp_mutations: u64,
    tcp_mutations: u64,
    rate: u64,
    idle_timeout: Duration,
    tcp_max: usize,
    nsid: String,
    rrl_rps: f64,
    rrl_slip: u32,
    rrl_seconds: f64,
    rrl_flood_pps: u64,
    exempt_source: Ipv4Addr,
    seed: u64,
}

const USAGE: &str = "usage: dns-robustness --server IP:PORT [--pid PID] --zone ZONE --name NAME \
[--big NAME:TYPE]... [--checks edns,tcp,nsid,cookies,mutation,rrl] [--udp-mutations N] \
[--tcp-mutations M] [--rate PPS] [--idle-timeout SECS] [--tcp-max N] [--nsid STRING] \
[--rrl-rps N] [--rrl-slip N] [--rrl-seconds S] [--rrl-flood-pps N] [--exempt-source IPv4] [--seed N]";

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        server: SocketAddr::from(([127, 0, 0, 1], 53)),
        pid: None,
        zone: String::new(),
        name: String::new(),
        big: Vec::new(),
        checks: ["edns", "nsid", "cookies", "tcp", "rrl", "mutation"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        udp_mutations: 1_000_000,
        tcp_mutations: 10_000,
        rate: 20_000,
        idle_timeout: Duration::from_secs(2),
        tcp_max: 50,
        nsid: "node-a".into(),
        rrl_rps: 20.0,
        rrl_slip: 2,
        rrl_seconds: 3.0,
        rrl_flood_pps: 200,
        exempt_source: Ipv4Addr::new(127, 0, 0, 2),
        seed: 0x5e47_a47d,
    };
    let mut server_set = false;
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let key = argv[i].as_str();
        if key == "--help" || key == "-h" {
            return Err(USAGE.into());
        }
        let val = argv
            .get(i + 1)
            .ok_or_else(|| format!("{key} needs a value\n{USAGE}"))?
            .clone();
        let num = |v: &str| -> Result<u64, String> {
            v.parse::<u64>().map_err(|e| format!("{key} {v}: {e}"))
        };
        let float = |v: &str| -> Result<f64, String> {
            v.parse::<f64>().map_err(|e| format!("{key} {v}: {e}"))
        };
        match key {
            "--server" => {
                a.server = val.parse().map_err(|e| format!("--server {val}: {e}"))?;
                server_set = true;
            }
            "--pid" => a.pid = Some(u32::try_from(num(&val)?).map_err(|e| e.to_string())?),
            "--zone" => a.zone = val,
            "--name" => a.name = val,
            "--big" => {
                let (n, t) = val
                    .rsplit_once(':')
                    .ok_or_else(|| format!("--big {val}: expected NAME:TYPE"))?;
                let t = match t.to_ascii_uppercase().as_str() {
                    "A" => TYPE_A,
                    "AAAA" => TYPE_AAAA,
                    "TXT" => TYPE_TXT,
                    other => {
                        return Err(format!("--big {val}: type {other} is not A, AAAA or TXT"));
                    }
                };
                a.big.push((n.to_string(), t));
            }
            "--checks" => a.checks = val.split(',').map(|s| s.trim().to_string()).collect(),
            "--udp-mutations" => a.udp_mutations = num(&val)?,
            "--tcp-mutations" => a.tcp_mutations = num(&val)?,
            "--rate" => a.rate = num(&val)?.max(1),
            "--idle-timeout" => a.idle_timeout = Duration::from_secs_f64(float(&val)?),
            "--tcp-max" => a.tcp_max = usize::try_from(num(&val)?).map_err(|e| e.to_string())?,
            "--nsid" => a.nsid = val,
            "--rrl-rps" => a.rrl_rps = float(&val)?,
            "--rrl-slip" => a.rrl_slip = u32::try_from(num(&val)?).map_err(|e| e.to_string())?,
            "--rrl-seconds" => a.rrl_seconds = float(&val)?,
            "--rrl-flood-pps" => a.rrl_flood_pps = num(&val)?.max(1),
            "--exempt-source" => {
                a.exempt_source = val
                    .parse()
                    .map_err(|e| format!("--exempt-source {val}: {e}"))?
            }
            "--seed" => a.seed = num(&val)?,
            other => return Err(format!("unknown option {other}\n{USAGE}")),
        }
        i += 2;
    }
    if !server_set || a.zone.is_empty() || a.name.is_empty() {
        return Err(format!("--server, --zone and --name are required\n{USAGE}"));
    }
    Ok(a)
}

// ---------------------------------------------------------------------------
// Results

/// The checks' verdicts, printed as they are made so that a long run shows
/// progress.
#[derive(Default)]
struct Report {
    passed: usize,
    failed: Vec<String>,
}

impl Report {
    fn check(&mut self, ok: bool, name: &str, detail: impl AsRef<str>) {
        println!(
            "{} {name}: {}",
            if ok { "PASS" } else { "FAIL" },
            detail.as_ref()
        );
        if ok {
            self.passed += 1;
        } else {
            self.failed.push(name.to_string());
        }
    }
}

// ---------------------------------------------------------------------------
// Building queries

/// An OPT pseudo-record as a query carries it.
#[derive(Clone)]
struct Opt {
    udp: u16,
    ext_rcode: u8,
    version: u8,
    flags: u16,
    options: Vec<(u16, Vec<u8>)>,
}

impl Opt {
    fn new(udp: u16) -> Opt {
        Opt {
            udp,
            ext_rcode: 0,
            version: 0,
            flags: 0,
            options: Vec::new(),
        }
    }
    fn with(mut self, code: u16, data: &[u8]) -> Opt {
        self.options.push((code, data.to_vec()));
        self
    }
}

/// A query: one question and any number of OPT records (more than one is
/// itself a test).
#[derive(Clone)]
struct Query {
    id: u16,
    flags: u16,
    name: String,
    qtype: u16,
    opts: Vec<Opt>,
}

impl Query {
    fn new(id: u16, name: &str, qtype: u16) -> Query {
        Query {
            id,
            flags: 0,
            name: name.to_string(),
            qtype,
            opts: Vec::new(),
        }
    }
    fn opt(mut self, o: Opt) -> Query {
        self.opts.push(o);
        self
    }
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(64);
        b.extend_from_slice(&self.id.to_be_bytes());
        b.extend_from_slice(&self.flags.to_be_bytes());
        b.extend_from_slice(&1u16.to_be_bytes());
        b.extend_from_slice(&0u16.to_be_bytes());
        b.extend_from_slice(&0u16.to_be_bytes());
        b.extend_from_slice(&(self.opts.len() as u16).to_be_bytes());
        encode_name(&mut b, &self.name);
        b.extend_from_slice(&self.qtype.to_be_bytes());
        b.extend_from_slice(&1u16.to_be_bytes());
        for o in &self.opts {
            b.push(0);
            b.extend_from_slice(&TYPE_OPT.to_be_bytes());
            b.extend_from_slice(&o.udp.to_be_bytes());
            b.push(o.ext_rcode);
            b.push(o.version);
            b.extend_from_slice(&o.flags.to_be_bytes());
            let rdlen: usize = o.options.iter().map(|(_, d)| 4 + d.len()).sum();
            b.extend_from_slice(&(rdlen as u16).to_be_bytes());
            for (code, data) in &o.options {
                b.extend_from_slice(&code.to_be_bytes());
                b.extend_from_slice(&(data.len() as u16).to_be_bytes());
                b.extend_from_slice(data);
            }
        }
        b
    }
}

fn encode_name(b: &mut Vec<u8>, name: &str) {
    for label in name
        .trim_end_matches('.')
        .split('.')
        .filter(|l| !l.is_empty())
    {
        let l = &label.as_bytes()[..label.len().min(63)];
        b.push(l.len() as u8);
        b.extend_from_slice(l);
    }
    b.push(0);
}

// ---------------------------------------------------------------------------
// Parsing replies

/// A resource record of a reply, rdata undecoded.
struct Rr {
    rtype: u16,
    ttl: u32,
    rdata: Vec<u8>,
}

/// A reply as this prober sees it: the header, the counts, every record,
/// and every OPT record found (a correct reply has at most one).
struct Msg {
    id: u16,
    flags: u16,
    len: usize,
    answers: Vec<Rr>,
    authority: Vec<Rr>,
    additional: Vec<Rr>,
}

impl Msg {
    fn opts(&self) -> impl Iterator<Item = &Rr> {
        self.additional.iter().filter(|r| r.rtype == TYPE_OPT)
    }
    fn opt(&self) -> Option<&Rr> {
        self.opts().next()
    }
    /// The full 12-bit RCODE: the header's 4 bits and, with an OPT, its 8
    /// upper bits.
    fn rcode(&self) -> u16 {
        let ext = self.opt().map(|o| (o.ttl >> 24) as u16).unwrap_or(0);
        (ext << 4) | (self.flags & 0x000f)
    }
    fn tc(&self) -> bool {
        self.flags & FLAG_TC != 0
    }
    fn aa(&self) -> bool {
        self.flags & FLAG_AA != 0
    }
    /// The options of the (first) OPT record.
    fn options(&self) -> Vec<(u16, Vec<u8>)> {
        let mut out = Vec::new();
        if let Some(o) = self.opt() {
            let d = &o.rdata;
            let mut p = 0;
            while p + 4 <= d.len() {
                let code = u16::from_be_bytes([d[p], d[p + 1]]);
                let len = usize::from(u16::from_be_bytes([d[p + 2], d[p + 3]]));
                let end = (p + 4 + len).min(d.len());
                out.push((code, d[p + 4..end].to_vec()));
                p = end;
            }
        }
        out
    }
    fn option(&self, code: u16) -> Option<Vec<u8>> {
        self.options()
            .into_iter()
            .find(|(c, _)| *c == code)
            .map(|(_, d)| d)
    }
}

fn rd16(b: &[u8], p: usize) -> Result<u16, String> {
    b.get(p..p + 2)
        .map(|s| u16::from_be_bytes([s[0], s[1]]))
        .ok_or_else(|| format!("short message at offset {p}"))
}

/// Skips a (possibly compressed) name; follows pointers only to check them
/// (at most 128 jumps, 255 bytes of name), so loops cannot hang the parser.
fn skip_name(b: &[u8], mut p: usize) -> Result<usize, String> {
    let mut end = None;
    let mut jumps = 0;
    let mut total = 0usize;
    loop {
        let len = *b.get(p).ok_or("name runs past the end")?;
        match len & 0xc0 {
            0x00 => {
                if len == 0 {
                    return Ok(end.unwrap_or(p + 1));
                }
                total += usize::from(len) + 1;
                if total > 255 {
                    return Err("name longer than 255 bytes".into());
                }
                p += 1 + usize::from(len);
            }
            0xc0 => {
                let target = usize::from(rd16(b, p)? & 0x3fff);
                if end.is_none() {
                    end = Some(p + 2);
                }
                jumps += 1;
                if jumps > 128 || target >= b.len() {
                    return Err("bad compression pointer".into());
                }
                p = target;
            }
            _ => return Err(format!("label type {len:#x}")),
        }
    }
}

fn parse(b: &[u8]) -> Result<Msg, String> {
    if b.len() < 12 {
        return Err(format!("{} bytes, shorter than a header", b.len()));
    }
    let count = |i: usize| u16::from_be_bytes([b[4 + 2 * i], b[5 + 2 * i]]);
    let (qd, an, ns, ar) = (count(0), count(1), count(2), count(3));
    let mut p = 12;
    for _ in 0..qd {
        p = skip_name(b, p)? + 4;
        if p > b.len() {
            return Err("question runs past the end".into());
        }
    }
    let mut sections: [Vec<Rr>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for (s, n) in [an, ns, ar].into_iter().enumerate() {
        for _ in 0..n {
            p = skip_name(b, p)?;
            let rtype = rd16(b, p)?;
            let ttl = u32::from(rd16(b, p + 4)?) << 16 | u32::from(rd16(b, p + 6)?);
            let rdlen = usize::from(rd16(b, p + 8)?);
            p += 10;
            let rdata = b
                .get(p..p + rdlen)
                .ok_or("rdata runs past the end")?
                .to_vec();
            p += rdlen;
            sections[s].push(Rr { rtype, ttl, rdata });
        }
    }
    if p != b.len() {
        return Err(format!("{} bytes after the last record", b.len() - p));
    }
    let [answers, authority, additional] = sections;
    Ok(Msg {
        id: rd16(b, 0)?,
        flags: rd16(b, 2)?,
        len: b.len(),
        answers,
        authority,
        additional,
    })
}

/// Whether a (possibly mutated) query carries an OPT record where a server
/// would look for one: the additional section, after a question and
/// records that parse. Anything that does not parse counts as "no OPT", so
/// the 512-byte rule is applied at its strictest.
fn query_has_opt(b: &[u8]) -> bool {
    (|| -> Result<bool, String> {
        if b.len() < 12 {
            return Ok(false);
        }
        let count = |i: usize| u16::from_be_bytes([b[4 + 2 * i], b[5 + 2 * i]]);
        let mut p = 12;
        for _ in 0..count(0) {
            p = skip_name(b, p)? + 4;
        }
        let before = u32::from(count(1)) + u32::from(count(2));
        for i in 0..before + u32::from(count(3)) {
            p = skip_name(b, p)?;
            let rtype = rd16(b, p)?;
            let rdlen = usize::from(rd16(b, p + 8)?);
            if i >= before && rtype == TYPE_OPT {
                return Ok(true);
            }
            p += 10 + rdlen;
            if p > b.len() {
                return Err("past the end".into());
            }
        }
        Ok(false)
    })()
    .unwrap_or(false)
}

// ---------------------------------------------------------------------------
// Transport

/// The source of every check but the rate limiter's (which spreads its
/// sources over 127.0.0.0/8): the loopback address of the server's family
/// when the server is on loopback, else whatever address the route to the
/// server gives (bench/robustness.sh's XDP pass, across a veth pair).
fn source_for(server: SocketAddr) -> IpAddr {
    let loopback = server.ip().is_loopback();
    match server {
        SocketAddr::V4(_) if loopback => IpAddr::V4(Ipv4Addr::LOCALHOST),
        SocketAddr::V6(_) if loopback => IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
        SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
    }
}

fn udp_socket(src: IpAddr) -> Result<UdpSocket, String> {
    let s = UdpSocket::bind(SocketAddr::new(src, 0)).map_err(|e| format!("bind {src}: {e}"))?;
    Ok(s)
}

/// Sends one query over UDP and waits for the reply with its ID (two tries
/// of one second: loopback loses nothing, but a loaded machine can stall).
fn udp_exchange(sock: &UdpSocket, server: SocketAddr, q: &[u8]) -> Result<Vec<u8>, String> {
    let id = rd16(q, 0).unwrap_or(0);
    let mut buf = vec![0u8; 65535];
    for _ in 0..2 {
        sock.send_to(q, server).map_err(|e| format!("send: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            sock.set_read_timeout(Some(left))
                .map_err(|e| e.to_string())?;
            match sock.recv_from(&mut buf) {
                Ok((n, from)) if from == server && n >= 2 && rd16(&buf, 0)? == id => {
                    return Ok(buf[..n].to_vec());
                }
                Ok(_) => continue,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => break,
                Err(e) => return Err(format!("recv: {e}")),
            }
        }
    }
    Err("no reply in 2 s".into())
}

fn udp_ask(sock: &UdpSocket, server: SocketAddr, q: &Query) -> Result<Msg, String> {
    parse(&udp_exchange(sock, server, &q.encode())?)
}

fn frame(q: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(q.len() + 2);
    b.extend_from_slice(&(q.len() as u16).to_be_bytes());
    b.extend_from_slice(q);
    b
}

/// Reads one length-prefixed message; None on a clean close.
fn tcp_read_msg(s: &mut TcpStream) -> Result<Option<Vec<u8>>, String> {
    let mut len = [0u8; 2];
    match s.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(format!("read: {e}")),
    }
    let mut msg = vec![0u8; usize::from(u16::from_be_bytes(len))];
    s.read_exact(&mut msg).map_err(|e| format!("read: {e}"))?;
    Ok(Some(msg))
}

fn tcp_connect(server: SocketAddr) -> Result<TcpStream, String> {
    let s = TcpStream::connect_timeout(&server, Duration::from_secs(2))
        .map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(3)))
        .map_err(|e| e.to_string())?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    Ok(s)
}

fn tcp_ask(server: SocketAddr, q: &Query) -> Result<Msg, String> {
    let mut s = tcp_connect(server)?;
    s.write_all(&frame(&q.encode()))
        .map_err(|e| format!("write: {e}"))?;
    let reply = tcp_read_msg(&mut s)?.ok_or("closed without a reply")?;
    parse(&reply)
}

/// Whether the server still answers a plain query for the served name.
fn answers_valid(server: SocketAddr, name: &str) -> Result<Msg, String> {
    let sock = udp_socket(source_for(server))?;
    let m = udp_ask(&sock, server, &Query::new(0x5151, name, TYPE_A))?;
    if m.rcode() == 0 && !m.answers.is_empty() {
        Ok(m)
    } else {
        Err(format!(
            "rcode {} with {} answers",
            m.rcode(),
            m.answers.len()
        ))
    }
}

// ---------------------------------------------------------------------------
// The process under test

/// Alive: /proc/PID exists and the process is not a zombie.
fn alive(pid: u32) -> bool {
    proc_status(pid, "State:").is_some_and(|s| !s.starts_with('Z'))
}

// ---------------------------------------------------------------------------
// A small deterministic random source (xorshift64*), so that a run can be
// repeated exactly with --seed.

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn byte(&mut self) -> u8 {
        self.next() as u8
    }
}

// ---------------------------------------------------------------------------
// RFC 6891 and friends

fn check_edns(a: &Args, r: &mut Report) -> Result<(), String> {
    let sock = udp_socket(source_for(a.server))?;
    let ask = |q: &Query| udp_ask(&sock, a.server, q);

    match ask(&Query::new(1, &a.name, TYPE_A)) {
        Ok(m) => r.check(
            m.opt().is_none() && m.rcode() == 0 && !m.answers.is_empty(),
            "edns-no-opt-in-no-opt-out",
            format!(
                "rcode {}, {} answers, {} OPT in reply",
                m.rcode(),
                m.answers.len(),
                m.opts().count()
            ),
        ),
        Err(e) => r.check(false, "edns-no-opt-in-no-opt-out", e),
    }

    let mut v1 = Opt::new(1232);
    v1.version = 1;
    match ask(&Query::new(2, &a.name, TYPE_A).opt(v1)) {
        Ok(m) => {
            let ver = m.opt().map(|o| (o.ttl >> 16) as u8);
            r.check(
                m.rcode() == RCODE_BADVERS && ver == Some(0) && m.answers.is_empty(),
                "edns-version-1-badvers",
                format!(
                    "extended rcode {} (want 16), reply OPT version {ver:?} (want 0), {} answers",
                    m.rcode(),
                    m.answers.len()
                ),
            )
        }
        Err(e) => r.check(false, "edns-version-1-badvers", e),
    }

    let mut odd = Opt::new(1232).with(65001, b"echo-me?").with(65500, b"");
    odd.flags = 0x7fff; // every bit but DO, all unassigned
    match ask(&Query::new(3, &a.name, TYPE_A).opt(odd)) {
        Ok(m) => {
            let codes: Vec<u16> = m.options().iter().map(|(c, _)| *c).collect();
            let flags = m.opt().map(|o| o.ttl as u16);
            r.check(
                m.rcode() == 0
                    && !m.answers.is_empty()
                    && !codes.iter().any(|c| *c == 65001 || *c == 65500)
                    && flags.is_some_and(|f| f & 0x7fff == 0),
                "edns-unknown-options-and-flags-not-echoed",
                format!(
                    "rcode {}, {} answers, reply options {codes:?}, reply OPT flags {flags:04x?}",
                    m.rcode(),
                    m.answers.len()
                ),
            )
        }
        Err(e) => r.check(false, "edns-unknown-options-and-flags-not-echoed", e),
    }

    match ask(&Query::new(4, &a.name, TYPE_A)
        .opt(Opt::new(1232))
        .opt(Opt::new(1232)))
    {
        Ok(m) => r.check(
            m.rcode() == RCODE_FORMERR && m.answers.is_empty(),
            "edns-two-opt-formerr",
            format!("rcode {} (want 1), {} answers", m.rcode(), m.answers.len()),
        ),
        Err(e) => r.check(false, "edns-two-opt-formerr", e),
    }

    let mut op15 = Query::new(5, &a.name, TYPE_A);
    op15.flags = 15 << 11;
    match ask(&op15) {
        Ok(m) => r.check(
            m.rcode() == RCODE_NOTIMP && (m.flags >> 11) & 0xf == 15,
            "opcode-15-notimp",
            format!(
                "rcode {} (want 4), reply opcode {}",
                m.rcode(),
                (m.flags >> 11) & 0xf
            ),
        ),
        Err(e) => r.check(false, "opcode-15-notimp", e),
    }

    for (name, what) in [
        (a.name.as_str(), "gslb name"),
        (a.zone.as_str(), "zone apex"),
    ] {
        let check = format!(
            "unknown-qtype-65280-nodata-{}",
            if what == "zone apex" { "apex" } else { "gslb" }
        );
        match ask(&Query::new(6, name, 65280).opt(Opt::new(1232))) {
            Ok(m) => {
                let soa = m.authority.iter().any(|x| x.rtype == TYPE_SOA);
                r.check(
                    m.rcode() == 0 && m.answers.is_empty() && m.aa() && soa,
                    &check,
                    format!(
                        "{what} {name}: rcode {}, {} answers, AA {}, SOA in authority {soa}",
                        m.rcode(),
                        m.answers.len(),
                        m.aa()
                    ),
                )
            }
            Err(e) => r.check(false, &check, e),
        }
    }

    let nx = format!("no-such-name.{}", a.zone);
    match ask(&Query::new(7, &nx, TYPE_A).opt(Opt::new(1232))) {
        Ok(m) => {
            let soa = m.authority.iter().any(|x| x.rtype == TYPE_SOA);
            r.check(
                m.rcode() == RCODE_NXDOMAIN && m.answers.is_empty() && m.aa() && soa,
                "nxdomain-with-aa-and-soa",
                format!(
                    "{nx}: rcode {} (want 3), {} answers, AA {}, SOA in authority {soa}",
                    m.rcode(),
                    m.answers.len(),
                    m.aa()
                ),
            )
        }
        Err(e) => r.check(false, "nxdomain-with-aa-and-soa", e),
    }

    for (i, (name, t)) in a.big.iter().enumerate() {
        let id = 100 + i as u16 * 4;
        let tcp = tcp_ask(a.server, &Query::new(id, name, *t));
        let tcp_summary = match &tcp {
            Ok(m) => format!(
                "TCP: {} B, {} answers, TC {}",
                m.len,
                m.answers.len(),
                m.tc()
            ),
            Err(e) => format!("TCP: {e}"),
        };
        let full_len = tcp.as_ref().map(|m| m.len).unwrap_or(0);
        r.check(
            tcp.as_ref()
                .is_ok_and(|m| m.rcode() == 0 && !m.tc() && m.len > 512 && !m.answers.is_empty()),
            &format!("big-answer-tcp-complete {name}"),
            format!("{tcp_summary} (want > 512 B, TC 0)"),
        );
        match ask(&Query::new(id + 1, name, *t)) {
            Ok(m) => r.check(
                m.tc() && m.len <= 512,
                &format!("big-answer-udp-no-edns-tc {name}"),
                format!("UDP without EDNS: {} B, TC {}, {} answers (want TC 1, <= 512 B); {tcp_summary}", m.len, m.tc(), m.answers.len()),
            ),
            Err(e) => r.check(false, &format!("big-answer-udp-no-edns-tc {name}"), e),
        }
        match ask(&Query::new(id + 2, name, *t).opt(Opt::new(4096))) {
            Ok(m) => {
                // Complete when the whole answer fits in 1232 bytes, else TC.
                let fits = full_len + 11 <= 1232;
                let consistent = if fits { !m.tc() } else { m.tc() };
                r.check(
                    m.len <= 1232 && consistent,
                    &format!("big-answer-udp-edns4096-capped {name}"),
                    format!("UDP with EDNS 4096: {} B (want <= 1232), TC {} (answer over TCP {full_len} B: want TC {})", m.len, m.tc(), !fits),
                )
            }
            Err(e) => r.check(false, &format!("big-answer-udp-edns4096-capped {name}"), e),
        }
    }
    Ok(())
}

fn check_nsid(a: &Args, r: &mut Report) -> Result<(), String> {
    let sock = udp_socket(source_for(a.server))?;
    match udp_ask(
        &sock,
        a.server,
        &Query::new(10, &a.name, TYPE_A).opt(Opt::new(1232).with(OPT_NSID, b"")),
    ) {
        Ok(m) => {
            let nsid = m.option(OPT_NSID);
            r.check(
                nsid.as_deref() == Some(a.nsid.as_bytes()),
                "nsid-returned",
                format!(
                    "NSID {:?} (want {:?}), rcode {}",
                    nsid.map(|d| String::from_utf8_lossy(&d).into_owned()),
                    a.nsid,
                    m.rcode()
                ),
            )
        }
        Err(e) => r.check(false, "nsid-returned", e),
    }
    match udp_ask(
        &sock,
        a.server,
        &Query::new(11, &a.name, TYPE_A).opt(Opt::new(1232)),
    ) {
        Ok(m) => r.check(
            m.option(OPT_NSID).is_none() && m.opt().is_some(),
            "nsid-not-sent-unasked",
            format!(
                "reply options {:?}",
                m.options().iter().map(|(c, _)| *c).collect::<Vec<_>>()
            ),
        ),
        Err(e) => r.check(false, "nsid-not-sent-unasked", e),
    }
    Ok(())
}

/// Asks with a client cookie (and a server cookie, if given) and returns
/// the reply and the COOKIE option it carries.
fn cookie_ask(
    sock: &UdpSocket,
    server: SocketAddr,
    id: u16,
    name: &str,
    cookie: &[u8],
) -> Result<(Msg, Option<Vec<u8>>), String> {
    let m = udp_ask(
        sock,
        server,
        &Query::new(id, name, TYPE_A).opt(Opt::new(1232).with(OPT_COOKIE, cookie)),
    )?;
    let c = m.option(OPT_COOKIE);
    Ok((m, c))
}

fn check_cookies(a: &Args, r: &mut Report) -> Result<(), String> {
    let sock = udp_socket(source_for(a.server))?;
    let client = *b"\x01\x23\x45\x67\x89\xab\xcd\xef";
    let first = cookie_ask(&sock, a.server, 20, &a.name, &client);
    let server_cookie = match &first {
        Ok((m, c)) => {
            let ok = c
                .as_ref()
                .is_some_and(|c| (16..=40).contains(&c.len()) && c[..8] == client);
            r.check(
                ok && m.rcode() == 0,
                "cookie-server-cookie-returned",
                format!(
                    "rcode {}, COOKIE option {} B (want 16-40, starting with the client cookie)",
                    m.rcode(),
                    c.as_ref().map(|c| c.len()).unwrap_or(0)
                ),
            );
            if ok { c.clone() } else { None }
        }
        Err(e) => {
            r.check(false, "cookie-server-cookie-returned", e);
            None
        }
    };
    match server_cookie {
        Some(full) => match cookie_ask(&sock, a.server, 21, &a.name, &full) {
            Ok((m, c)) => {
                let ok = c
                    .as_ref()
                    .is_some_and(|c| (16..=40).contains(&c.len()) && c[..8] == client);
                r.check(
                    ok && m.rcode() == 0 && !m.answers.is_empty(),
                    "cookie-presented-accepted",
                    format!(
                        "rcode {} (BADCOOKIE is {RCODE_BADCOOKIE}), {} answers, COOKIE {} B, {} server cookie",
                        m.rcode(),
                        m.answers.len(),
                        c.as_ref().map(|c| c.len()).unwrap_or(0),
                        if c.as_deref() == Some(&full[..]) { "same" } else { "a fresh" }
                    ),
                )
            }
            Err(e) => r.check(false, "cookie-presented-accepted", e),
        },
        None => r.check(
            false,
            "cookie-presented-accepted",
            "no server cookie to present",
        ),
    }
    for len in [7usize, 12, 41] {
        let bad: Vec<u8> = (0..len as u8).collect();
        match cookie_ask(&sock, a.server, 22 + len as u16, &a.name, &bad) {
            Ok((m, _)) => r.check(
                m.rcode() == RCODE_FORMERR,
                &format!("cookie-malformed-length-{len}-formerr"),
                format!("rcode {} (want 1), {} answers", m.rcode(), m.answers.len()),
            ),
            Err(e) => r.check(false, &format!("cookie-malformed-length-{len}-formerr"), e),
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// TCP

/// How long until the server closes a connection the caller has prepared
/// (sent `preamble` on), or None if it stays open until `limit`.
fn time_to_close(
    server: SocketAddr,
    preamble: &[u8],
    limit: Duration,
) -> Result<Option<Duration>, String> {
    let mut s = tcp_connect(server)?;
    let start = Instant::now();
    if !preamble.is_empty() {
        s.write_all(preamble).map_err(|e| format!("write: {e}"))?;
    }
    let mut buf = [0u8; 512];
    loop {
        let left = limit.saturating_sub(start.elapsed());
        if left.is_zero() {
            return Ok(None);
        }
        s.set_read_timeout(Some(left.min(Duration::from_millis(250))))
            .map_err(|e| e.to_string())?;
        match s.read(&mut buf) {
            Ok(0) => return Ok(Some(start.elapsed())),
            Ok(_) => continue, // a reply (FORMERR) is allowed; keep waiting for the close
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
                ) =>
            {
                return Ok(Some(start.elapsed()));
            }
            Err(e) => return Err(format!("read: {e}")),
        }
    }
}

fn check_tcp(a: &Args, r: &mut Report) -> Result<(), String> {
    // 1,000 pipelined queries in one write.
    {
        let n = 1000u16;
        let mut batch = Vec::new();
        for id in 0..n {
            batch.extend(frame(&Query::new(id, &a.name, TYPE_A).encode()));
        }
        let res = (|| -> Result<(usize, usize, usize), String> {
            let mut s = tcp_connect(a.server)?;
            s.write_all(&batch).map_err(|e| format!("write: {e}"))?;
            let (mut got, mut in_order, mut answered) = (0usize, 0usize, 0usize);
            while got < usize::from(n) {
                let Some(m) = tcp_read_msg(&mut s)? else {
                    break;
                };
                let m = parse(&m)?;
                if usize::from(m.id) == got {
                    in_order += 1;
                }
                if m.rcode() == 0 && !m.answers.is_empty() {
                    answered += 1;
                }
                got += 1;
            }
            Ok((got, in_order, answered))
        })();
        match res {
            Ok((got, in_order, answered)) => r.check(
                got == 1000 && in_order == 1000 && answered == 1000,
                "tcp-pipelined-1000-in-one-write",
                format!("{got}/1000 replies, {in_order} in order, {answered} with an answer ({} bytes written at once)", batch.len()),
            ),
            Err(e) => r.check(false, "tcp-pipelined-1000-in-one-write", e),
        }
    }

    // Garbage, then a valid query, on one connection. A framed message
    // with a header but nonsense after it is answered (FORMERR) and the
    // connection goes on; one shorter than a header cannot be answered, so
    // closing the connection is as right as answering the query after it,
    // but hanging is not.
    for (name, garbage, strict) in [
        (
            "tcp-garbage-then-valid-query",
            {
                let mut junk = vec![0xffu8; 40];
                junk[..4].copy_from_slice(&[0x77, 0x77, 0x01, 0x00]); // QR=0, opcode 0, RD; nonsense counts
                junk
            },
            true,
        ),
        (
            "tcp-short-garbage-then-valid-query",
            vec![0xde, 0xad, 0xbe, 0xef, 0x00],
            false,
        ),
    ] {
        let res = (|| -> Result<(Option<bool>, usize), String> {
            let mut s = tcp_connect(a.server)?;
            let mut w = frame(&garbage);
            w.extend(frame(&Query::new(0x4242, &a.name, TYPE_A).encode()));
            s.write_all(&w).map_err(|e| format!("write: {e}"))?;
            let mut others = 0;
            for _ in 0..3 {
                match tcp_read_msg(&mut s) {
                    Ok(Some(m)) => match parse(&m) {
                        Ok(m) if m.id == 0x4242 => {
                            return Ok((Some(m.rcode() == 0 && !m.answers.is_empty()), others));
                        }
                        _ => others += 1,
                    },
                    Ok(None) => return Ok((None, others)),
                    Err(e) if e.contains("reset") => return Ok((None, others)),
                    Err(e) => return Err(e),
                }
            }
            Ok((Some(false), others))
        })();
        match res {
            Ok((Some(ok), others)) => r.check(
                ok,
                name,
                format!("the valid query after the garbage answered: {ok}; {others} replies to the garbage before it"),
            ),
            Ok((None, others)) => r.check(
                !strict,
                name,
                format!("the server closed the connection after the garbage ({others} replies to it){}", if strict { "; a message with a header must be answered (FORMERR) and the connection go on" } else { "" }),
            ),
            Err(e) => r.check(false, name, format!("{e} (neither an answer nor a close)")),
        }
    }

    // Idle and half-open connections, side by side.
    {
        let limit = a.idle_timeout * 3 + Duration::from_secs(1);
        let server = a.server;
        let q = frame(&Query::new(7, &a.name, TYPE_A).encode());
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("tcp-idle-closed", Vec::new()),
            ("tcp-half-open-partial-length-closed", vec![0x00]),
            (
                "tcp-half-open-partial-message-closed",
                q[..q.len() / 2].to_vec(),
            ),
        ];
        let handles: Vec<_> = cases
            .into_iter()
            .map(|(name, pre)| {
                (
                    name,
                    thread::spawn(move || time_to_close(server, &pre, limit)),
                )
            })
            .collect();
        for (name, h) in handles {
            match h.join().map_err(|_| "thread panicked".to_string())? {
                Ok(Some(t)) => r.check(
                    true,
                    name,
                    format!(
                        "closed by the server after {:.2} s (configured {:.1} s, bound {:.1} s)",
                        t.as_secs_f64(),
                        a.idle_timeout.as_secs_f64(),
                        limit.as_secs_f64()
                    ),
                ),
                Ok(None) => r.check(
                    false,
                    name,
                    format!(
                        "still open after {:.1} s (configured {:.1} s)",
                        limit.as_secs_f64(),
                        a.idle_timeout.as_secs_f64()
                    ),
                ),
                Err(e) => r.check(false, name, e),
            }
        }
    }

    // More connections than the cap, while UDP keeps answering.
    {
        let extra = 20usize.max(a.tcp_max / 5);
        let total = a.tcp_max + extra;
        let mut conns = Vec::new();
        let mut refused = 0usize;
        for i in 0..total {
            match TcpStream::connect_timeout(&a.server, Duration::from_secs(1)) {
                Ok(mut s) => {
                    let q = frame(&Query::new(i as u16, &a.name, TYPE_A).encode());
                    if s.write_all(&q).is_ok() {
                        conns.push(s);
                    } else {
                        refused += 1;
                    }
                }
                Err(_) => refused += 1,
            }
        }
        let udp = answers_valid(a.server, &a.name);
        let (mut answered, mut closed, mut hung) = (0usize, 0usize, 0usize);
        let deadline = Instant::now()
            + Duration::from_millis(1500).min(a.idle_timeout / 2 + Duration::from_millis(500));
        for s in &mut conns {
            let left = deadline
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(20));
            s.set_read_timeout(Some(left)).map_err(|e| e.to_string())?;
            match tcp_read_msg(s) {
                Ok(Some(_)) => answered += 1,
                Ok(None) => closed += 1,
                Err(e) if e.contains("reset") || e.contains("failed to fill") => closed += 1,
                Err(_) => hung += 1,
            }
        }
        drop(conns);
        r.check(
            answered <= a.tcp_max && answered + 2 >= a.tcp_max.min(total) && closed + refused >= total - a.tcp_max,
            "tcp-connection-cap",
            format!("{total} connections (cap {}): {answered} answered, {closed} closed by the server, {refused} refused, {hung} neither", a.tcp_max),
        );
        r.check(
            udp.is_ok(),
            "tcp-connection-cap-udp-still-answers",
            match &udp {
                Ok(m) => format!(
                    "UDP answered during the flood ({} answers)",
                    m.answers.len()
                ),
                Err(e) => format!("UDP during the flood: {e}"),
            },
        );
        thread::sleep(Duration::from_millis(200));
        let after = tcp_ask(a.server, &Query::new(9, &a.name, TYPE_A));
        r.check(
            after
                .as_ref()
                .is_ok_and(|m| m.rcode() == 0 && !m.answers.is_empty()),
            "tcp-serves-again-after-cap",
            match &after {
                Ok(m) => format!("rcode {}, {} answers", m.rcode(), m.answers.len()),
                Err(e) => e.clone(),
            },
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Mutation

/// The valid queries mutations start from: what clients ask (a GSLB name,
/// NODATA, NXDOMAIN, the apex), with and without EDNS options.
fn seeds(a: &Args) -> Vec<Vec<u8>> {
    let nx = format!("no-such-name.{}", a.zone);
    let mut v = vec![
        Query::new(0, &a.name, TYPE_A).encode(),
        Query::new(0, &a.name, TYPE_A).opt(Opt::new(1232)).encode(),
        Query::new(0, &a.name, TYPE_AAAA)
            .opt(Opt::new(4096))
            .encode(),
        Query::new(0, &nx, TYPE_A).encode(),
        Query::new(0, &a.zone, TYPE_SOA)
            .opt(Opt::new(1232))
            .encode(),
        Query::new(0, &a.zone, TYPE_NS).encode(),
        Query::new(0, &a.name, TYPE_A)
            .opt(Opt::new(1232).with(OPT_COOKIE, b"\x01\x02\x03\x04\x05\x06\x07\x08"))
            .encode(),
        Query::new(0, &a.name, TYPE_A)
            .opt(Opt::new(1232).with(OPT_NSID, b""))
            .encode(),
    ];
    // A query whose name is compressed against the question (legal).
    let mut c = Query::new(0, &a.name, TYPE_A).encode();
    c[11] = 1; // one additional record
    c.extend_from_slice(&[0xc0, 0x0c, 0x00, 0x29, 0x04, 0xd0, 0, 0, 0, 0, 0, 0]);
    v.push(c);
    v
}

/// Mutates a seed: one to three of bit flips, truncation, appended or
/// replaced bytes, header fields, compression-pointer loops, label lengths
/// and OPT lengths.
fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut p = seed.to_vec();
    for _ in 0..1 + rng.below(3) {
        match rng.below(11) {
            0 | 1 => {
                for _ in 0..1 + rng.below(8) {
                    if !p.is_empty() {
                        let i = rng.below(p.len());
                        p[i] ^= 1 << rng.below(8);
                    }
                }
            }
            2 => {
                let n = rng.below(p.len() + 1);
                p.truncate(n);
            }
            3 => {
                for _ in 0..1 + rng.below(64) {
                    p.push(rng.byte());
                }
            }
            4 => {
                let n = rng.below(600);
                p = (0..n).map(|_| rng.byte()).collect();
            }
            5 if p.len() >= 12 => {
                // Header: flags (QR, opcode, ...) or one of the counts.
                let field = 2 + 2 * rng.below(5);
                let v: u16 = match rng.below(4) {
                    0 => rng.next() as u16,
                    1 => 0xffff,
                    2 => rng.below(4) as u16,
                    _ => u16::from_be_bytes([p[field], p[field + 1]]) ^ 0x8000,
                };
                p[field..field + 2].copy_from_slice(&v.to_be_bytes());
            }
            6 if p.len() >= 14 => {
                // Compression pointers: to itself, a two-pointer loop, past
                // the end, or into the header.
                let at = 12 + rng.below(p.len() - 13);
                let target: u16 = match rng.below(4) {
                    0 => at as u16,
                    1 => {
                        if at + 3 < p.len() {
                            p[at + 2] = 0xc0;
                            p[at + 3] = at as u8;
                        }
                        (at + 2) as u16
                    }
                    2 => 0x3fff,
                    _ => rng.below(12) as u16,
                };
                p[at] = 0xc0 | (target >> 8) as u8 & 0x3f;
                p[at + 1] = target as u8;
            }
            7 if p.len() > 12 => {
                // A label length byte: too long, an extended label type, zero.
                let i = 12 + rng.below(p.len() - 12);
                p[i] = [63, 64, 0x40, 0x80, 0xff, 0][rng.below(6)];
            }
            8 if p.len() > 12 => {
                // Near the end, where the OPT and its option lengths are.
                let tail = rng.below(16.min(p.len() - 12)) + 1;
                let i = p.len() - tail;
                p[i] = [0, 0xff, rng.byte(), 0x29, 0x0a][rng.below(5)];
            }
            9 => {
                // Two messages in one datagram, or the question twice.
                let copy = p.clone();
                p.extend_from_slice(&copy[copy.len().min(12)..]);
                if p.len() >= 6 && rng.below(2) == 0 {
                    p[5] = p[5].wrapping_add(1);
                }
            }
            _ => {
                for _ in 0..1 + rng.below(4) {
                    if !p.is_empty() {
                        let i = rng.below(p.len());
                        p[i] = [0, 0xff, rng.byte()][rng.below(3)];
                    }
                }
            }
        }
    }
    p
}

/// What the sender recorded about packet `seq` for the receiver, packed in
/// one word: seq + 1 (so 0 is "nothing sent"), QR set, OPT present, length.
fn pack(seq: u64, qr: bool, opt: bool, len: usize) -> u64 {
    ((seq + 1) << 26) | (u64::from(qr) << 25) | (u64::from(opt) << 24) | (len as u64 & 0xff_ffff)
}

#[derive(Default, Debug)]
struct MutStats {
    sent: u64,
    sent_bytes: u64,
    sent_qr: u64,
    short: u64,
    replies: u64,
    reply_bytes: u64,
    replies_to_qr: u64,
    over_512_without_opt: u64,
    unattributed: u64,
    reply_qr_clear: u64,
    answered_req_bytes: u64,
    max_ratio: f64,
    max_ratio_req: usize,
    max_ratio_reply: usize,
}

fn mutate_udp(
    a: &Args,
    r: &mut Report,
    pid: Option<u32>,
    rss_warm: &mut Option<u64>,
) -> Result<MutStats, String> {
    let sock = udp_socket(source_for(a.server))?;
    sock.connect(a.server)
        .map_err(|e| format!("connect: {e}"))?;
    let sref = socket2::SockRef::from(&sock);
    let _ = sref.set_recv_buffer_size(8 << 20);
    let recv = sock.try_clone().map_err(|e| e.to_string())?;
    recv.set_read_timeout(Some(Duration::from_millis(200)))
        .map_err(|e| e.to_string())?;
    let table: Arc<Vec<AtomicU64>> = Arc::new((0..65536).map(|_| AtomicU64::new(0)).collect());
    let done = Arc::new(AtomicBool::new(false));
    let receiver = {
        let table = Arc::clone(&table);
        let done = Arc::clone(&done);
        thread::spawn(move || {
            let mut st = MutStats::default();
            let mut buf = vec![0u8; 65535];
            let mut quiet_since: Option<Instant> = None;
            loop {
                match recv.recv(&mut buf) {
                    Ok(n) => {
                        quiet_since = None;
                        st.replies += 1;
                        st.reply_bytes += n as u64;
                        if n < 4 {
                            st.unattributed += 1;
                            continue;
                        }
                        if u16::from_be_bytes([buf[2], buf[3]]) & FLAG_QR == 0 {
                            st.reply_qr_clear += 1;
                        }
                        let id = usize::from(u16::from_be_bytes([buf[0], buf[1]]));
                        let e = table[id].load(Ordering::Acquire);
                        if e == 0 {
                            st.unattributed += 1;
                            continue;
                        }
                        let (qr, opt, len) =
                            (e >> 25 & 1 == 1, e >> 24 & 1 == 1, (e & 0xff_ffff) as usize);
                        if qr {
                            st.replies_to_qr += 1;
                        }
                        if !opt && n > 512 {
                            st.over_512_without_opt += 1;
                        }
                        st.answered_req_bytes += len as u64;
                        let ratio = n as f64 / len.max(1) as f64;
                        if ratio > st.max_ratio {
                            st.max_ratio = ratio;
                            st.max_ratio_req = len;
                            st.max_ratio_reply = n;
                        }
                    }
                    Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                        if done.load(Ordering::Acquire) {
                            let q = *quiet_since.get_or_insert_with(Instant::now);
                            if q.elapsed() >= Duration::from_millis(500) {
                                break;
                            }
                        }
                    }
                    // ECONNREFUSED from an earlier ICMP error: the server
                    // would be gone; the liveness check reports it.
                    Err(_) => {
                        if done.load(Ordering::Acquire) {
                            break;
                        }
                        thread::sleep(Duration::from_millis(1));
                    }
                }
            }
            st
        })
    };

    let seeds = seeds(a);
    let mut rng = Rng(a.seed | 1);
    let mut st = MutStats::default();
    let start = Instant::now();
    let warm_at = (a.udp_mutations / 10).max(1);
    for seq in 0..a.udp_mutations {
        if seq == warm_at {
            // RSS once every code path has been through its first packets.
            thread::sleep(Duration::from_millis(300));
            *rss_warm = pid.and_then(rss_kib);
        }
        // Pace: never ahead of `rate` packets per second.
        let due = Duration::from_secs_f64(seq as f64 / a.rate as f64);
        let el = start.elapsed();
        if due > el + Duration::from_millis(1) {
            thread::sleep(due - el);
        }
        let seed = &seeds[rng.below(seeds.len())];
        let mut p = mutate(&mut rng, seed);
        if p.len() > 65000 {
            p.truncate(65000);
        }
        let id = (seq & 0xffff) as u16;
        if p.len() >= 2 {
            p[..2].copy_from_slice(&id.to_be_bytes());
        }
        let qr = p.len() >= 3 && p[2] & 0x80 != 0;
        if p.len() < 12 {
            st.short += 1;
        }
        if qr {
            st.sent_qr += 1;
        }
        table[usize::from(id)].store(pack(seq, qr, query_has_opt(&p), p.len()), Ordering::Release);
        match sock.send(&p) {
            Ok(_) => {
                st.sent += 1;
                st.sent_bytes += p.len() as u64;
            }
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                // An ICMP error from an earlier packet; the packet itself
                // was not sent. Liveness is checked at the end.
            }
            Err(e) => return Err(format!("send: {e}")),
        }
    }
    let secs = start.elapsed().as_secs_f64();
    done.store(true, Ordering::Release);
    let rx = receiver
        .join()
        .map_err(|_| "receiver panicked".to_string())?;
    st.replies = rx.replies;
    st.reply_bytes = rx.reply_bytes;
    st.replies_to_qr = rx.replies_to_qr;
    st.over_512_without_opt = rx.over_512_without_opt;
    st.unattributed = rx.unattributed;
    st.reply_qr_clear = rx.reply_qr_clear;
    st.max_ratio = rx.max_ratio;
    st.answered_req_bytes = rx.answered_req_bytes;
    st.max_ratio_req = rx.max_ratio_req;
    st.max_ratio_reply = rx.max_ratio_reply;
    let amp = st.reply_bytes as f64 / st.sent_bytes.max(1) as f64;
    let counts = format!(
        "{} sent in {secs:.1} s ({:.0}/s; {} with QR=1, {} shorter than a header), {} replies",
        st.sent,
        st.sent as f64 / secs,
        st.sent_qr,
        st.short,
        st.replies
    );
    r.check(
        st.replies_to_qr == 0,
        "udp-mutation-no-reply-to-qr",
        format!("{} replies to QR=1 packets ({counts})", st.replies_to_qr),
    );
    r.check(
        st.over_512_without_opt == 0,
        "udp-mutation-no-reply-over-512-without-opt",
        format!(
            "{} replies over 512 B to a query without OPT",
            st.over_512_without_opt
        ),
    );
    r.check(
        amp <= 2.0,
        "udp-mutation-amplification",
        format!(
            "{} B out / {} B in = {amp:.3} (bound 2); over the answered packets only {:.3}; max per packet {:.1}x ({} B reply to {} B)",
            st.reply_bytes,
            st.sent_bytes,
            st.reply_bytes as f64 / st.answered_req_bytes.max(1) as f64,
            st.max_ratio,
            st.max_ratio_reply,
            st.max_ratio_req
        ),
    );
    r.check(
        st.unattributed == 0 && st.reply_qr_clear == 0,
        "udp-mutation-replies-well-formed",
        format!(
            "{} replies matching no packet sent, {} replies with QR=0",
            st.unattributed, st.reply_qr_clear
        ),
    );
    Ok(st)
}

fn mutate_tcp(a: &Args, r: &mut Report) -> Result<(), String> {
    let per_conn = 10u64;
    let threads = 4u64;
    let conns = a.tcp_mutations.div_ceil(per_conn);
    let seeds = Arc::new(seeds(a));
    let server = a.server;
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let seeds = Arc::clone(&seeds);
            let mut rng = Rng((a.seed ^ (0x9e37_79b9 * (t + 1))) | 1);
            let total = a.tcp_mutations;
            thread::spawn(move || -> Result<[u64; 7], String> {
                // sent, bytes in, replies, bytes out, replies to QR, unattributed, connect failures
                let mut c = [0u64; 7];
                let mut seq = 0u64;
                for conn in (t..conns).step_by(threads as usize) {
                    let mut sent: HashMap<u16, (bool, usize)> = HashMap::new();
                    let mut w = Vec::new();
                    for k in 0..per_conn {
                        let n = conn * per_conn + k;
                        if n >= total {
                            break;
                        }
                        let pick = rng.below(seeds.len());
                        let mut p = mutate(&mut rng, &seeds[pick]);
                        p.truncate(65535);
                        let id = (seq & 0xffff) as u16;
                        seq += 1;
                        if p.len() >= 2 {
                            p[..2].copy_from_slice(&id.to_be_bytes());
                            sent.insert(id, (p.len() >= 3 && p[2] & 0x80 != 0, p.len()));
                        }
                        c[0] += 1;
                        c[1] += p.len() as u64;
                        let mut f = frame(&p);
                        if k + 1 == per_conn && rng.below(4) == 0 {
                            // A length prefix that promises more than follows
                            // (last in the batch, so no reply can come from
                            // a shifted frame).
                            let lie = (p.len() + 1 + rng.below(100)).min(65535) as u16;
                            f[..2].copy_from_slice(&lie.to_be_bytes());
                        }
                        w.extend(f);
                    }
                    let mut s = match tcp_connect(server) {
                        Ok(s) => s,
                        Err(_) => {
                            c[6] += 1;
                            continue;
                        }
                    };
                    let _ = s.write_all(&w);
                    let _ = s.shutdown(Shutdown::Write);
                    let _ = s.set_read_timeout(Some(Duration::from_millis(2500)));
                    while let Ok(Some(m)) = tcp_read_msg(&mut s) {
                        c[2] += 1;
                        c[3] += m.len() as u64 + 2;
                        match (m.len() >= 2)
                            .then(|| u16::from_be_bytes([m[0], m[1]]))
                            .and_then(|id| sent.get(&id))
                        {
                            Some((true, _)) => c[4] += 1,
                            Some(_) => {}
                            None => c[5] += 1,
                        }
                    }
                }
                Ok(c)
            })
        })
        .collect();
    let mut tot = [0u64; 7];
    for h in handles {
        let c = h
            .join()
            .map_err(|_| "tcp mutation thread panicked".to_string())??;
        for i in 0..7 {
            tot[i] += c[i];
        }
    }
    let amp = tot[3] as f64 / tot[1].max(1) as f64;
    r.check(
        tot[4] == 0 && tot[5] == 0 && tot[6] == 0,
        "tcp-mutation-no-reply-to-qr",
        format!(
            "{} messages on {conns} connections, {} replies: {} to QR=1, {} matching nothing sent, {} connections refused",
            tot[0], tot[2], tot[4], tot[5], tot[6]
        ),
    );
    r.check(
        amp <= 2.0,
        "tcp-mutation-amplification",
        format!("{} B out / {} B in = {amp:.3} (bound 2)", tot[3], tot[1]),
    );
    Ok(())
}

fn check_mutation(a: &Args, r: &mut Report) -> Result<(), String> {
    let pid = a.pid;
    let rss_start = pid.and_then(rss_kib);
    let mut rss_warm = None;
    if a.udp_mutations > 0 {
        mutate_udp(a, r, pid, &mut rss_warm)?;
    }
    if a.tcp_mutations > 0 {
        mutate_tcp(a, r)?;
    }
    thread::sleep(Duration::from_millis(300));
    match pid {
        Some(pid) => {
            r.check(
                alive(pid),
                "mutation-server-alive",
                format!("/proc/{pid} state {:?}", proc_status(pid, "State:")),
            );
            let end = rss_kib(pid);
            match (rss_warm.or(rss_start), end) {
                (Some(w), Some(e)) => {
                    // Allocator slack and per-thread caches may grow a
                    // little; a leak of ~10 bytes a packet over 1,000,000
                    // packets would not fit.
                    let bound = w + (w / 4).max(8 * 1024);
                    r.check(
                        e <= bound,
                        "mutation-rss-flat",
                        format!("VmRSS {} KiB at start, {w} KiB after warm-up, {e} KiB at the end (bound warm-up + max(25 %, 8 MiB) = {bound} KiB)", rss_start.unwrap_or(0)),
                    )
                }
                _ => r.check(false, "mutation-rss-flat", "VmRSS not readable"),
            }
        }
        None => r.check(false, "mutation-server-alive", "no --pid given"),
    }
    match answers_valid(a.server, &a.name) {
        Ok(m) => r.check(
            true,
            "mutation-valid-query-after",
            format!("{} answers", m.answers.len()),
        ),
        Err(e) => r.check(false, "mutation-valid-query-after", e),
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Response rate limiting

#[derive(Default, Clone, Copy)]
struct Flood {
    sent: u64,
    full: u64,
    slipped: u64,
    other: u64,
    secs: f64,
}

/// Sends `pps` queries a second for `secs` seconds from `src` and sorts the
/// replies: full answers, slipped (TC=1, no answer) and others; what is not
/// answered was dropped. With `cookie`, every query presents the client
/// cookie and the last server cookie received.
fn flood(
    server: SocketAddr,
    src: IpAddr,
    name: &str,
    pps: u64,
    secs: f64,
    cookie: Option<Vec<u8>>,
) -> Result<Flood, String> {
    let sock = udp_socket(src)?;
    let mut cookie = cookie;
    let mut f = Flood::default();
    let mut buf = vec![0u8; 4096];
    let start = Instant::now();
    let end = Duration::from_secs_f64(secs);
    let drain = end + Duration::from_millis(500);
    let interval = Duration::from_secs_f64(1.0 / pps as f64);
    let mut next = Duration::ZERO;
    loop {
        let now = start.elapsed();
        if now >= drain {
            break;
        }
        if now >= next && now < end {
            let mut q = Query::new((f.sent & 0xffff) as u16, name, TYPE_A);
            if let Some(c) = &cookie {
                q = q.opt(Opt::new(1232).with(OPT_COOKIE, c));
            }
            sock.send_to(&q.encode(), server)
                .map_err(|e| format!("send: {e}"))?;
            f.sent += 1;
            next += interval;
            continue;
        }
        let wait = if now < end {
            next.saturating_sub(now)
        } else {
            drain - now
        };
        sock.set_read_timeout(Some(wait.max(Duration::from_micros(100))))
            .map_err(|e| e.to_string())?;
        match sock.recv_from(&mut buf) {
            Ok((n, _)) => match parse(&buf[..n]) {
                Ok(m) if m.rcode() == 0 && !m.tc() && !m.answers.is_empty() => {
                    f.full += 1;
                    if let (Some(c), Some(new)) = (&mut cookie, m.option(OPT_COOKIE)) {
                        *c = new;
                    }
                }
                Ok(m) if m.tc() && m.answers.is_empty() => f.slipped += 1,
                _ => f.other += 1,
            },
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => return Err(format!("recv: {e}")),
        }
    }
    f.secs = secs;
    Ok(f)
}

fn flood_many(
    server: SocketAddr,
    srcs: &[Ipv4Addr],
    name: &str,
    pps: u64,
    secs: f64,
) -> Result<Vec<Flood>, String> {
    let hs: Vec<_> = srcs
        .iter()
        .map(|s| {
            let (s, name) = (IpAddr::V4(*s), name.to_string());
            thread::spawn(move || flood(server, s, &name, pps, secs, None))
        })
        .collect();
    hs.into_iter()
        .map(|h| h.join().map_err(|_| "flood thread panicked".to_string())?)
        .collect()
}

fn describe(f: &Flood) -> String {
    let dropped = f.sent.saturating_sub(f.full + f.slipped + f.other);
    format!(
        "{} sent, {} answered, {} slipped, {} dropped, {} other",
        f.sent, f.full, f.slipped, dropped, f.other
    )
}

fn check_rrl(a: &Args, r: &mut Report) -> Result<(), String> {
    if a.server.is_ipv6() {
        return Err(
            "the rate-limit checks spread their sources over 127.0.0.0/8: IPv4 only".into(),
        );
    }
    let secs = a.rrl_seconds;
    let pps = a.rrl_flood_pps;
    // A token bucket of `rps` a second lets through about rps × secs, plus
    // at most one second's worth of burst; half to double that is the
    // bound, wide enough for any reasonable bucket and pacing jitter, and
    // far below what a flood of `pps` would get without a limit.
    let expect = a.rrl_rps * secs;
    let within = |answered: u64| {
        (answered as f64) >= 0.5 * expect && (answered as f64) <= 2.0 * expect + a.rrl_rps
    };
    let slip_share = |f: &Flood| {
        let limited = f.sent.saturating_sub(f.full);
        if limited == 0 {
            0.0
        } else {
            f.slipped as f64 / limited as f64
        }
    };
    let want_slip = if a.rrl_slip == 0 {
        0.0
    } else {
        1.0 / f64::from(a.rrl_slip)
    };
    let slip_ok = |s: f64| {
        if a.rrl_slip == 0 {
            s == 0.0
        } else {
            s >= 0.5 * want_slip && s <= 1.5 * want_slip
        }
    };

    let one = flood(
        a.server,
        IpAddr::V4(Ipv4Addr::new(127, 1, 0, 1)),
        &a.name,
        pps,
        secs,
        None,
    )?;
    r.check(
        within(one.full),
        "rrl-one-source-held-to-limit",
        format!(
            "from 127.1.0.1, {pps}/s for {secs} s: {} (answered {:.1}/s, limit {}/s; bound {:.0}-{:.0} answered)",
            describe(&one),
            one.full as f64 / secs,
            a.rrl_rps,
            0.5 * expect,
            2.0 * expect + a.rrl_rps
        ),
    );
    let s = slip_share(&one);
    r.check(
        slip_ok(s) && one.full < one.sent,
        "rrl-slip-share",
        format!("{:.2} of the limited replies slipped as TC=1 (slip {}: want {want_slip:.2}, bound ±50 %)", s, a.rrl_slip),
    );

    let same: Vec<Ipv4Addr> = (1..=4).map(|i| Ipv4Addr::new(127, 2, 0, i)).collect();
    let fs = flood_many(a.server, &same, &a.name, pps / 2, secs)?;
    let same_total: u64 = fs.iter().map(|f| f.full).sum();
    r.check(
        within(same_total),
        "rrl-one-prefix-shares-a-limit",
        format!(
            "4 sources in 127.2.0.0/24, {}/s each: {same_total} answered in all (one limit: bound {:.0}-{:.0}); {}",
            pps / 2,
            0.5 * expect,
            2.0 * expect + a.rrl_rps,
            fs.iter().map(|f| f.full.to_string()).collect::<Vec<_>>().join("+")
        ),
    );
    let diff: Vec<Ipv4Addr> = (1..=4).map(|i| Ipv4Addr::new(127, 3, i, 1)).collect();
    let fd = flood_many(a.server, &diff, &a.name, pps / 2, secs)?;
    let each_ok = fd.iter().all(|f| within(f.full));
    let diff_total: u64 = fd.iter().map(|f| f.full).sum();
    r.check(
        each_ok && diff_total as f64 >= 2.0 * same_total.max(1) as f64,
        "rrl-prefixes-limited-apart",
        format!(
            "4 sources in 4 /24s (127.3.1-4.1), {}/s each: {} answered ({diff_total} in all, want each within the bound and the total >= 2x the one-prefix total {same_total})",
            pps / 2,
            fd.iter().map(|f| f.full.to_string()).collect::<Vec<_>>().join("+")
        ),
    );

    let ex = flood(
        a.server,
        IpAddr::V4(a.exempt_source),
        &a.name,
        pps,
        secs.min(2.0),
        None,
    )?;
    r.check(
        ex.full == ex.sent && ex.slipped == 0,
        "rrl-exempt-source-never-limited",
        format!("from {} (exempt): {}", a.exempt_source, describe(&ex)),
    );

    let csrc = IpAddr::V4(Ipv4Addr::new(127, 4, 0, 1));
    let sock = udp_socket(csrc)?;
    let client = b"\xc0\x0c\x1e\x5c\x00\x0c\x1e\x5c".to_vec();
    match cookie_ask(&sock, a.server, 30, &a.name, &client) {
        Ok((_, Some(c))) if c.len() >= 16 => {
            drop(sock);
            let cf = flood(a.server, csrc, &a.name, pps, secs.min(2.0), Some(c))?;
            r.check(
                cf.full == cf.sent && cf.slipped == 0,
                "rrl-valid-cookie-never-limited",
                format!("from 127.4.0.1 with a server cookie: {}", describe(&cf)),
            );
        }
        Ok((m, c)) => r.check(
            false,
            "rrl-valid-cookie-never-limited",
            format!(
                "no server cookie to present (rcode {}, COOKIE {:?} B)",
                m.rcode(),
                c.map(|c| c.len())
            ),
        ),
        Err(e) => r.check(false, "rrl-valid-cookie-never-limited", e),
    }
    Ok(())
}

// ---------------------------------------------------------------------------

fn main() -> ExitCode {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut r = Report::default();
    match answers_valid(a.server, &a.name) {
        Ok(_) => {}
        Err(e) => {
            r.check(
                false,
                "server-answers",
                format!("{} {}: {e}", a.server, a.name),
            );
            println!("SUMMARY: 0 passed, 1 failed");
            return ExitCode::FAILURE;
        }
    }
    type Group = fn(&Args, &mut Report) -> Result<(), String>;
    let groups: [(&str, Group); 6] = [
        ("edns", check_edns),
        ("nsid", check_nsid),
        ("cookies", check_cookies),
        ("tcp", check_tcp),
        ("rrl", check_rrl),
        ("mutation", check_mutation),
    ];
    for (name, f) in groups {
        if !a.checks.iter().any(|c| c == name) {
            continue;
        }
        let t = Instant::now();
        if let Err(e) = f(&a, &mut r) {
            r.check(
                false,
                &format!("{name}-group"),
                format!("could not run: {e}"),
            );
        }
        eprintln!("({name}: {:.1} s)", t.elapsed().as_secs_f64());
    }
    println!(
        "SUMMARY: {} passed, {} failed{}",
        r.passed,
        r.failed.len(),
        if r.failed.is_empty() {
            String::new()
        } else {
            format!(": {}", r.failed.join(", "))
        }
    );
    if r.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reply is a query with QR set and records appended; build one by
    /// hand and check the parser reads back what the checks rely on.
    #[test]
    fn parses_a_reply_with_opt_and_extended_rcode() {
        let mut b = Query::new(0x1234, "www.rob.example", TYPE_A).encode();
        b[2] |= 0x84; // QR, AA
        b[7] = 1; // one answer
        b[11] = 1; // one additional
        b.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4, 127, 0, 60, 1]);
        // OPT: udp 1232, ext rcode 1 (BADVERS with header rcode 0), version 0,
        // one NSID option "ab".
        b.extend_from_slice(&[
            0, 0, 41, 0x04, 0xd0, 1, 0, 0, 0, 0, 6, 0, 3, 0, 2, b'a', b'b',
        ]);
        let m = parse(&b).unwrap();
        assert_eq!(m.id, 0x1234);
        assert!(m.aa() && !m.tc());
        assert_eq!(m.answers.len(), 1);
        assert_eq!(m.answers[0].rdata, vec![127, 0, 60, 1]);
        assert_eq!(m.rcode(), RCODE_BADVERS);
        assert_eq!(m.option(OPT_NSID).as_deref(), Some(&b"ab"[..]));
        assert_eq!(m.opts().count(), 1);
    }

    #[test]
    fn rejects_pointer_loops_and_trailing_bytes() {
        let mut looped = Query::new(1, "a.example", TYPE_A).encode();
        looped.truncate(12);
        looped.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1]);
        assert!(parse(&looped).is_err());
        let mut trailing = Query::new(1, "a.example", TYPE_A).encode();
        trailing.push(0);
        assert!(parse(&trailing).is_err());
        assert!(parse(&[0u8; 11]).is_err());
    }

    #[test]
    fn finds_opt_only_in_the_additional_section() {
        let plain = Query::new(1, "a.example", TYPE_A).encode();
        assert!(!query_has_opt(&plain));
        let with = Query::new(1, "a.example", TYPE_A)
            .opt(Opt::new(1232))
            .encode();
        assert!(query_has_opt(&with));
        // The same OPT record counted as an answer is not an OPT.
        let mut as_answer = with.clone();
        as_answer[7] = 1;
        as_answer[11] = 0;
        assert!(!query_has_opt(&as_answer));
        // Truncated inside the OPT: not parseable, so "no OPT" (strictest).
        assert!(!query_has_opt(&with[..with.len() - 3]));
    }

    #[test]
    fn mutation_is_deterministic_and_varied() {
        let seed = Query::new(0, "www.rob.example", TYPE_A)
            .opt(Opt::new(1232))
            .encode();
        let run = |s: u64| -> Vec<Vec<u8>> {
            let mut rng = Rng(s);
            (0..200).map(|_| mutate(&mut rng, &seed)).collect()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        let distinct: std::collections::HashSet<_> = run(7).into_iter().collect();
        assert!(distinct.len() > 150, "{} distinct of 200", distinct.len());
    }
}
