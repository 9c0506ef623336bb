//! The soak's answer checker (bench/soak.sh, issue 12 item 6), and the HTTP
//! backends the soak flaps.
//!
//! ```text
//! soak-check backend IP:PORT
//! soak-check run --site NAME,DNS_ADDR,API_ADDR,LOG [--site ...] --seconds N
//!                [--name DOMAIN ...] [--rate QPS] [--timeout-ms MS]
//!                [--window-ms MS] [--records FILE]
//! ```
//!
//! `backend` serves HTTP 200 on one address until it is killed: the soak
//! kills and restarts it by PID, so the monitors see a real port close and
//! reopen (it is test-support's [`Backend`], the one the end-to-end tests
//! use, as a process of its own).
//!
//! `run` sends a steady, bounded sample of A queries (`--rate` per second in
//! all, spread over the sites and names in turn, for `--seconds`), one UDP
//! socket per site, and records for each query its send time, reply time,
//! rcode and addresses. Nothing is retried: a query without a reply within
//! `--timeout-ms` is lost. Then it reads each site's state log (`sextant
//! serve --log-format json`: the `service UP` / `service DOWN` lines, with
//! their timestamps and the service's address) and checks every answer
//! against the log of the site that gave it:
//!
//! * **ok**: every address is a service that was UP, by the log, at some
//!   instant between the query's send and its reply;
//! * **window**: not so, but the service was UP within `--window-ms` of that
//!   interval. The engine writes the transition's log line before it
//!   publishes the new snapshot to the DNS workers, so an answer given just
//!   after a DOWN line, from the snapshot before it, is expected; how many
//!   answers fell there, and the largest lag seen, are reported;
//! * **wrong**: any other address (a service DOWN for longer than the
//!   window, or an address that is no service at all).
//!
//! A service's state before its first log line is the opposite of that
//! line; a service with no line at all never changed, and its state is the
//! one the site's API (`/v1/services`) gives at the end.
//!
//! It prints a table and `soak.KEY=VALUE` lines (for the script). Exit
//! status: 0 when every query got a NOERROR answer with addresses that were
//! all ok or in the window; 1 when an answer was wrong (wrong address, other
//! rcode, no address, malformed); 3 when the only fault is lost queries (the
//! script compares their share with dnsperf's own loss); 2 on a usage or
//! setup error.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::{BufWriter, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sextant_test_support::api::{State, api_services, api_sites};
use sextant_test_support::backend::Backend;
use sextant_test_support::dns::{Message, RecordType, ResponseCode, a_records, build_query};

type Res<T> = Result<T, String>;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match args.first().map(String::as_str) {
        Some("backend") => backend(&args[1..]),
        Some("healthy") => healthy(&args[1..]),
        Some("run") => match Opts::parse(&args[1..]).and_then(run) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("soak-check: {e}");
                2
            }
        },
        _ => {
            eprintln!(
                "usage: soak-check backend IP:PORT\n       soak-check healthy API_ADDR\n       soak-check run --site NAME,DNS_ADDR,API_ADDR,LOG [--site ...] --seconds N [--name DOMAIN ...] [--rate QPS] [--timeout-ms MS] [--window-ms MS] [--records FILE]"
            );
            2
        }
    };
    std::process::exit(code);
}

/// An HTTP backend on one address, until killed.
fn backend(args: &[String]) -> i32 {
    let Some(addr) = args.first().and_then(|a| a.parse::<SocketAddr>().ok()) else {
        eprintln!("soak-check backend: give IP:PORT");
        return 2;
    };
    let b = Backend::http_at(addr);
    eprintln!("soak-check backend: HTTP 200 on {}", b.addr);
    loop {
        thread::sleep(Duration::from_secs(3600));
    }
}

/// Whether the site whose API is at `API_ADDR` has every service UP and
/// metric exchange UP with every other site (exit 0), or not (exit 1, with
/// what is not): the script's "everything healed".
fn healthy(args: &[String]) -> i32 {
    let Some(api) = args.first().and_then(|a| a.parse::<SocketAddr>().ok()) else {
        eprintln!("soak-check healthy: give API_ADDR");
        return 2;
    };
    let mut not = Vec::new();
    match api_services(api) {
        Ok(list) if !list.is_empty() => not.extend(
            list.iter()
                .filter(|s| s.state != State::Up)
                .map(|s| format!("service {} DOWN", s.name)),
        ),
        Ok(_) => not.push("no services".to_string()),
        Err(e) => not.push(e),
    }
    match api_sites(api) {
        Ok(list) => not.extend(
            list.iter()
                .filter(|s| s.role != "local" && s.mep != "UP")
                .map(|s| format!("site {} MEP {}", s.name, s.mep)),
        ),
        Err(e) => not.push(e),
    }
    if not.is_empty() {
        println!("{api}: healthy: every service UP, metric exchange UP with every site");
        0
    } else {
        println!("{api}: {}", not.join("; "));
        1
    }
}

struct SiteArg {
    name: String,
    dns: SocketAddr,
    api: SocketAddr,
    log: String,
}

struct Opts {
    sites: Vec<SiteArg>,
    names: Vec<String>,
    rate: u32,
    seconds: u64,
    timeout: Duration,
    window_us: i64,
    records: Option<String>,
}

impl Opts {
    fn parse(args: &[String]) -> Res<Opts> {
        let mut o = Opts {
            sites: Vec::new(),
            names: Vec::new(),
            rate: 200,
            seconds: 0,
            timeout: Duration::from_millis(2000),
            window_us: 250_000,
            records: None,
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let mut value = || {
                it.next()
                    .cloned()
                    .ok_or_else(|| format!("{flag} needs a value"))
            };
            let num = |v: String| {
                v.parse::<u64>()
                    .map_err(|e| format!("{flag} {v}: not a number ({e})"))
            };
            match flag.as_str() {
                "--site" => {
                    let v = value()?;
                    let parts: Vec<&str> = v.splitn(4, ',').collect();
                    let [name, dns, api, log] = parts[..] else {
                        return Err(format!("--site {v}: want NAME,DNS_ADDR,API_ADDR,LOG"));
                    };
                    let addr = |s: &str| {
                        s.parse::<SocketAddr>()
                            .map_err(|e| format!("--site {v}: {s}: {e}"))
                    };
                    o.sites.push(SiteArg {
                        name: name.to_string(),
                        dns: addr(dns)?,
                        api: addr(api)?,
                        log: log.to_string(),
                    });
                }
                "--name" => o.names.push(value()?),
                "--rate" => o.rate = num(value()?)?.clamp(1, 10_000) as u32,
                "--seconds" => o.seconds = num(value()?)?,
                "--timeout-ms" => o.timeout = Duration::from_millis(num(value()?)?),
                "--window-ms" => o.window_us = num(value()?)? as i64 * 1000,
                "--records" => o.records = Some(value()?),
                other => return Err(format!("unknown option {other}")),
            }
        }
        if o.sites.is_empty() {
            return Err("give at least one --site".into());
        }
        if o.seconds == 0 || o.seconds > 24 * 3600 {
            return Err("give --seconds between 1 and 86400".into());
        }
        if o.names.is_empty() {
            o.names.push("www.example.com".into());
        }
        Ok(o)
    }
}

/// Microseconds since the Unix epoch (the log's clock).
fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// One query sent.
#[derive(Clone)]
struct Rec {
    site: usize,
    name: usize,
    sent_us: i64,
    reply: Option<Reply>,
}

#[derive(Clone)]
struct Reply {
    at_us: i64,
    rcode: ResponseCode,
    addrs: Vec<Ipv4Addr>,
    /// The reply did not parse, or its question is not the one asked.
    malformed: Option<String>,
}

/// What one site's socket is waiting for: by DNS id, the record's index.
struct Pending {
    by_id: Vec<Option<usize>>,
}

fn run(o: Opts) -> Res<i32> {
    let recs: Arc<Mutex<Vec<Rec>>> = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut sockets = Vec::new();
    let mut pendings = Vec::new();
    let mut receivers = Vec::new();
    let mut stray = Vec::new();
    for s in &o.sites {
        let bind: SocketAddr = match s.dns.ip() {
            IpAddr::V4(_) => "0.0.0.0:0",
            IpAddr::V6(_) => "[::]:0",
        }
        .parse()
        .map_err(|e| format!("{e}"))?;
        let sock = UdpSocket::bind(bind).map_err(|e| format!("bind: {e}"))?;
        sock.connect(s.dns)
            .map_err(|e| format!("connect {}: {e}", s.dns))?;
        sock.set_read_timeout(Some(Duration::from_millis(100)))
            .map_err(|e| format!("{e}"))?;
        let sock = Arc::new(sock);
        let pending = Arc::new(Mutex::new(Pending {
            by_id: vec![None; 65536],
        }));
        let strays = Arc::new(Mutex::new(0u64));
        let (sock2, pending2, recs2, stop2, strays2) = (
            Arc::clone(&sock),
            Arc::clone(&pending),
            Arc::clone(&recs),
            Arc::clone(&stop),
            Arc::clone(&strays),
        );
        let names = o.names.clone();
        receivers.push(thread::spawn(move || {
            receive(&sock2, &pending2, &recs2, &stop2, &strays2, &names)
        }));
        sockets.push(sock);
        pendings.push(pending);
        stray.push(strays);
    }

    // Send: one query every 1/rate s on an absolute schedule, sites and
    // names in turn; bounded by --seconds.
    let total = o.rate as u64 * o.seconds;
    let start = Instant::now();
    let mut send_errors = 0u64;
    for i in 0..total {
        let due = start + Duration::from_secs_f64(i as f64 / o.rate as f64);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            thread::sleep(wait);
        }
        let site = (i % o.sites.len() as u64) as usize;
        let name = ((i / o.sites.len() as u64) % o.names.len() as u64) as usize;
        let id = (i / o.sites.len() as u64 % 65536) as u16;
        let mut q = build_query(&o.names[name], RecordType::A, Some(1232));
        q.metadata.id = id;
        let bytes = q.to_vec().map_err(|e| format!("encode query: {e}"))?;
        let idx = {
            let mut r = recs.lock().map_err(|_| "lock")?;
            r.push(Rec {
                site,
                name,
                sent_us: now_us(),
                reply: None,
            });
            r.len() - 1
        };
        if let Ok(mut p) = pendings[site].lock() {
            p.by_id[id as usize] = Some(idx);
        }
        if sockets[site].send(&bytes).is_err() {
            send_errors += 1;
        }
    }
    // Replies to the last queries, then stop.
    thread::sleep(o.timeout + Duration::from_millis(200));
    stop.store(true, Ordering::SeqCst);
    for r in receivers {
        let _ = r.join();
    }
    let recs = recs.lock().map_err(|_| "lock")?.clone();
    let strays: u64 = stray
        .iter()
        .map(|s| s.lock().map(|v| *v).unwrap_or(0))
        .sum();

    // The state logs, and the end states of services that never changed.
    let mut timelines = Vec::new();
    for s in &o.sites {
        let text = fs::read_to_string(&s.log).map_err(|e| format!("read log {}: {e}", s.log))?;
        let mut tl = Timeline::from_log(&text);
        match api_services(s.api) {
            Ok(list) => {
                for svc in list {
                    if let Ok(ip) = svc.ip.parse::<Ipv4Addr>() {
                        tl.end_state.insert(ip, svc.state == State::Up);
                        tl.names.insert(ip, svc.name);
                    }
                }
            }
            Err(e) => return Err(format!("site {}: /v1/services: {e}", s.name)),
        }
        timelines.push(tl);
    }

    let mut out_records = match &o.records {
        Some(p) => Some(BufWriter::new(
            fs::File::create(p).map_err(|e| format!("create {p}: {e}"))?,
        )),
        None => None,
    };
    if let Some(w) = out_records.as_mut() {
        let _ = writeln!(w, "site,name,sent_us,reply_us,rcode,addrs,verdict");
    }

    let mut per_site: Vec<Tally> = vec![Tally::default(); o.sites.len()];
    let mut wrong_examples: Vec<String> = Vec::new();
    for r in &recs {
        let t = &mut per_site[r.site];
        t.sent += 1;
        let verdict = match &r.reply {
            None => {
                t.lost += 1;
                "lost".to_string()
            }
            Some(rep) => {
                let lat = rep.at_us - r.sent_us;
                t.latencies.push(lat);
                if lat > o.timeout.as_micros() as i64 {
                    t.late += 1;
                }
                if let Some(m) = &rep.malformed {
                    t.malformed += 1;
                    format!("malformed: {m}")
                } else if rep.rcode != ResponseCode::NoError {
                    t.bad_rcode += 1;
                    format!("rcode {}", rep.rcode)
                } else if rep.addrs.is_empty() {
                    t.empty += 1;
                    "no address".to_string()
                } else {
                    t.answered += 1;
                    let tl = &timelines[r.site];
                    let mut worst = Verdict::Ok;
                    for a in &rep.addrs {
                        t.addrs += 1;
                        let v = tl.check(*a, r.sent_us, rep.at_us, o.window_us);
                        *t.by_addr.entry(*a).or_default() += 1;
                        match v {
                            Verdict::Ok => {}
                            Verdict::Window(lag) => {
                                t.window_addrs += 1;
                                t.max_lag_us = t.max_lag_us.max(lag);
                            }
                            Verdict::Wrong(_) => t.wrong_addrs += 1,
                        }
                        worst = worst.worse(v);
                    }
                    match worst {
                        Verdict::Ok => "ok".to_string(),
                        Verdict::Window(lag) => {
                            t.window += 1;
                            format!("window {lag}us")
                        }
                        Verdict::Wrong(why) => {
                            t.wrong += 1;
                            if wrong_examples.len() < 20 {
                                wrong_examples.push(format!(
                                    "site {} {} sent {} reply {}: {:?}: {why}",
                                    o.sites[r.site].name,
                                    o.names[r.name],
                                    fmt_us(r.sent_us),
                                    fmt_us(rep.at_us),
                                    rep.addrs
                                ));
                            }
                            format!("wrong: {why}")
                        }
                    }
                }
            }
        };
        if let Some(w) = out_records.as_mut() {
            let (at, rc, addrs) = match &r.reply {
                Some(rep) => (
                    rep.at_us.to_string(),
                    rep.rcode.to_string(),
                    rep.addrs
                        .iter()
                        .map(|a| a.to_string())
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                None => (String::new(), String::new(), String::new()),
            };
            let _ = writeln!(
                w,
                "{},{},{},{at},{rc},{addrs},{verdict}",
                o.sites[r.site].name, o.names[r.name], r.sent_us
            );
        }
    }
    if let Some(mut w) = out_records {
        let _ = w.flush();
    }

    // The table.
    println!(
        "soak-check: {} queries at {}/s over {} s to {} site(s), names {}; timeout {} ms, window {} ms",
        recs.len(),
        o.rate,
        o.seconds,
        o.sites.len(),
        o.names.join(" "),
        o.timeout.as_millis(),
        o.window_us / 1000
    );
    println!(
        "{:<10} {:>8} {:>8} {:>6} {:>5} {:>6} {:>6} {:>6} {:>7} {:>6} {:>8} {:>8} {:>8} {:>11} {:>11}",
        "site",
        "sent",
        "answered",
        "lost",
        "late",
        "rcode",
        "empty",
        "malf",
        "wrong",
        "window",
        "max_lag",
        "p50_us",
        "p99_us",
        "transitions",
        "log_ups"
    );
    let mut all = Tally::default();
    for (k, t) in per_site.iter_mut().enumerate() {
        t.latencies.sort_unstable();
        let tl = &timelines[k];
        println!(
            "{:<10} {:>8} {:>8} {:>6} {:>5} {:>6} {:>6} {:>6} {:>7} {:>6} {:>8} {:>8} {:>8} {:>11} {:>11}",
            o.sites[k].name,
            t.sent,
            t.answered,
            t.lost,
            t.late,
            t.bad_rcode,
            t.empty,
            t.malformed,
            t.wrong,
            t.window,
            format!("{}ms", t.max_lag_us / 1000),
            pct(&t.latencies, 50),
            pct(&t.latencies, 99),
            tl.transitions,
            tl.ups
        );
        all.add(t);
    }
    println!("answers per address (site: address service count):");
    for (k, t) in per_site.iter().enumerate() {
        let tl = &timelines[k];
        let parts: Vec<String> = t
            .by_addr
            .iter()
            .map(|(a, n)| {
                format!(
                    "{a} {} {n}",
                    tl.names.get(a).map(String::as_str).unwrap_or("?")
                )
            })
            .collect();
        println!("  {}: {}", o.sites[k].name, parts.join(", "));
    }
    for w in &wrong_examples {
        println!("WRONG {w}");
    }
    let transitions: u64 = timelines.iter().map(|t| t.transitions).sum();
    let kv = [
        ("sent", all.sent),
        ("answered", all.answered),
        ("lost", all.lost),
        ("late", all.late),
        ("bad_rcode", all.bad_rcode),
        ("empty", all.empty),
        ("malformed", all.malformed),
        ("wrong", all.wrong),
        ("wrong_addrs", all.wrong_addrs),
        ("window", all.window),
        ("window_addrs", all.window_addrs),
        ("max_lag_ms", (all.max_lag_us / 1000) as u64),
        ("addrs", all.addrs),
        ("transitions", transitions),
        ("send_errors", send_errors),
        ("stray_replies", strays),
    ];
    for (k, v) in kv {
        println!("soak.{k}={v}");
    }
    let faults = all.wrong + all.bad_rcode + all.empty + all.malformed;
    Ok(if faults > 0 {
        1
    } else if all.lost + all.late + send_errors > 0 {
        3
    } else {
        0
    })
}

fn receive(
    sock: &UdpSocket,
    pending: &Mutex<Pending>,
    recs: &Mutex<Vec<Rec>>,
    stop: &AtomicBool,
    strays: &Mutex<u64>,
    names: &[String],
) {
    let mut buf = [0u8; 4096];
    while !stop.load(Ordering::SeqCst) {
        let n = match sock.recv(&mut buf) {
            Ok(n) => n,
            Err(_) => continue, // timeout (to look at `stop`), or ICMP refused
        };
        let at_us = now_us();
        let bytes = &buf[..n];
        // The id is the first two bytes, whatever else the reply holds.
        if n < 2 {
            if let Ok(mut s) = strays.lock() {
                *s += 1;
            }
            continue;
        }
        let id = u16::from_be_bytes([bytes[0], bytes[1]]);
        let idx = pending
            .lock()
            .ok()
            .and_then(|mut p| p.by_id[id as usize].take());
        let Some(idx) = idx else {
            if let Ok(mut s) = strays.lock() {
                *s += 1;
            }
            continue;
        };
        let Ok(mut r) = recs.lock() else { return };
        let Some(rec) = r.get_mut(idx) else { continue };
        let reply = match Message::from_vec(bytes) {
            Ok(m) => {
                let asked = &names[rec.name];
                let q_ok = m.queries.len() == 1
                    && m.queries[0]
                        .name()
                        .to_ascii()
                        .trim_end_matches('.')
                        .eq_ignore_ascii_case(asked.trim_end_matches('.'))
                    && m.queries[0].query_type() == RecordType::A;
                Reply {
                    at_us,
                    rcode: m.metadata.response_code,
                    addrs: a_records(&m),
                    malformed: if q_ok {
                        None
                    } else {
                        Some(format!("question is not {asked} A: {:?}", m.queries))
                    },
                }
            }
            Err(e) => Reply {
                at_us,
                rcode: ResponseCode::ServFail,
                addrs: Vec::new(),
                malformed: Some(format!("does not parse: {e}")),
            },
        };
        rec.reply = Some(reply);
    }
}

#[derive(Clone, Default)]
struct Tally {
    sent: u64,
    answered: u64,
    lost: u64,
    late: u64,
    bad_rcode: u64,
    empty: u64,
    malformed: u64,
    wrong: u64,
    window: u64,
    addrs: u64,
    wrong_addrs: u64,
    window_addrs: u64,
    max_lag_us: i64,
    latencies: Vec<i64>,
    by_addr: BTreeMap<Ipv4Addr, u64>,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.sent += o.sent;
        self.answered += o.answered;
        self.lost += o.lost;
        self.late += o.late;
        self.bad_rcode += o.bad_rcode;
        self.empty += o.empty;
        self.malformed += o.malformed;
        self.wrong += o.wrong;
        self.window += o.window;
        self.addrs += o.addrs;
        self.wrong_addrs += o.wrong_addrs;
        self.window_addrs += o.window_addrs;
        self.max_lag_us = self.max_lag_us.max(o.max_lag_us);
    }
}

fn pct(sorted: &[i64], p: usize) -> String {
    if sorted.is_empty() {
        return "-".into();
    }
    let rank = (sorted.len() * p).div_ceil(100).max(1) - 1;
    sorted[rank.min(sorted.len() - 1)].to_string()
}

#[derive(Clone, Debug, PartialEq)]
enum Verdict {
    Ok,
    /// UP only within the window; the lag (µs) past the query's interval.
    Window(i64),
    Wrong(String),
}

impl Verdict {
    fn rank(&self) -> u8 {
        match self {
            Verdict::Ok => 0,
            Verdict::Window(_) => 1,
            Verdict::Wrong(_) => 2,
        }
    }
    fn worse(self, other: Verdict) -> Verdict {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }
}

/// One site's service states over time, from its log.
#[derive(Default)]
struct Timeline {
    /// By address: (time µs, UP?) in log order.
    changes: HashMap<Ipv4Addr, Vec<(i64, bool)>>,
    /// By address: the state the API gives at the end.
    end_state: HashMap<Ipv4Addr, bool>,
    names: HashMap<Ipv4Addr, String>,
    transitions: u64,
    ups: u64,
}

impl Timeline {
    fn from_log(text: &str) -> Timeline {
        let mut tl = Timeline::default();
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let f = &v["fields"];
            let up = match f["message"].as_str() {
                Some("service UP") => true,
                Some("service DOWN") => false,
                _ => continue,
            };
            let (Some(ts), Some(ip)) = (
                v["timestamp"].as_str().and_then(parse_rfc3339_us),
                f["ip"].as_str().and_then(|s| s.parse::<Ipv4Addr>().ok()),
            ) else {
                continue;
            };
            tl.transitions += 1;
            if up {
                tl.ups += 1;
            }
            if let Some(name) = f["service"].as_str() {
                tl.names.insert(ip, name.to_string());
            }
            tl.changes.entry(ip).or_default().push((ts, up));
        }
        tl
    }

    /// The state of `ip` at time `t` (None: not a service this log or API
    /// knows).
    fn state_at(&self, ip: Ipv4Addr, t: i64) -> Option<bool> {
        match self.changes.get(&ip) {
            Some(list) if !list.is_empty() => {
                let mut state = !list[0].1;
                for (at, up) in list {
                    if *at > t {
                        break;
                    }
                    state = *up;
                }
                Some(state)
            }
            _ => self.end_state.get(&ip).copied(),
        }
    }

    /// Whether `ip` was UP at some instant of [from, to].
    fn up_within(&self, ip: Ipv4Addr, from: i64, to: i64) -> Option<bool> {
        let at_start = self.state_at(ip, from)?;
        Some(
            at_start
                || self
                    .changes
                    .get(&ip)
                    .is_some_and(|l| l.iter().any(|(at, up)| *up && *at > from && *at <= to)),
        )
    }

    /// How far (µs) outside [from, to] the nearest UP instant of `ip` lies.
    fn lag(&self, ip: Ipv4Addr, from: i64, to: i64) -> i64 {
        let Some(list) = self.changes.get(&ip) else {
            return i64::MAX;
        };
        let mut best = i64::MAX;
        // A DOWN line before `from` ends an UP period there.
        for (k, (at, up)) in list.iter().enumerate() {
            let was_up = if k == 0 { !list[0].1 } else { list[k - 1].1 };
            if !*up && was_up && *at <= from {
                best = best.min(from - at);
            }
            if *up && *at > to {
                best = best.min(at - to);
            }
        }
        best
    }

    fn check(&self, ip: Ipv4Addr, sent: i64, reply: i64, window: i64) -> Verdict {
        match self.up_within(ip, sent, reply) {
            None => Verdict::Wrong(format!("{ip} is no service of this site")),
            Some(true) => Verdict::Ok,
            Some(false) => {
                if self.up_within(ip, sent - window, reply + window) == Some(true) {
                    Verdict::Window(self.lag(ip, sent, reply))
                } else {
                    let name = self.names.get(&ip).map(String::as_str).unwrap_or("?");
                    Verdict::Wrong(format!(
                        "{ip} ({name}) was DOWN by the log from {} to {} and beyond the window",
                        fmt_us(sent - window),
                        fmt_us(reply + window)
                    ))
                }
            }
        }
    }
}

/// `2026-12-02T05:48:04.156312Z` (what tracing-subscriber writes) as µs
/// since the epoch.
fn parse_rfc3339_us(s: &str) -> Option<i64> {
    let s = s.strip_suffix('Z')?;
    let (date, time) = s.split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let mut t = hms.split(':').map(|p| p.parse::<i64>().ok());
    let (hh, mm, ss) = (t.next()??, t.next()??, t.next()??);
    let digits: String = frac.chars().take(6).collect();
    let micros = format!("{digits:0<6}").parse::<i64>().ok()?;
    // Days from the civil date (Howard Hinnant's algorithm).
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1_000_000) + micros)
}

fn fmt_us(us: i64) -> String {
    let secs = us.div_euclid(1_000_000);
    let day = secs.rem_euclid(86_400);
    format!(
        "{:02}:{:02}:{:02}.{:06}",
        day / 3600,
        day / 60 % 60,
        day % 60,
        us.rem_euclid(1_000_000)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_log_timestamp() {
        // 2026-12-02T05:48:04Z: `date -u -d 2026-12-02T05:48:04Z +%s` = 1796190484.
        assert_eq!(
            parse_rfc3339_us("2026-12-02T05:48:04.156312Z"),
            Some(1_796_190_484_156_312)
        );
        assert_eq!(parse_rfc3339_us("garbage"), None);
    }

    fn timeline() -> Timeline {
        let log = r#"{"timestamp":"1970-01-01T00:00:10Z","level":"WARN","fields":{"message":"service DOWN","service":"a","ip":"10.0.0.1","port":80,"reason":"x"}}
{"timestamp":"1970-01-01T00:00:20Z","level":"INFO","fields":{"message":"service UP","service":"a","ip":"10.0.0.1","port":80,"reason":"x"}}
not json"#;
        let mut tl = Timeline::from_log(log);
        tl.end_state.insert(Ipv4Addr::new(10, 0, 0, 2), true);
        tl
    }

    const S: i64 = 1_000_000;

    #[test]
    fn answers_are_judged_by_the_log() {
        let tl = timeline();
        let a = Ipv4Addr::new(10, 0, 0, 1);
        let w = S / 4;
        assert_eq!(tl.transitions, 2);
        // UP before its first line (a DOWN), DOWN from 10 s to 20 s.
        assert_eq!(tl.check(a, 5 * S, 5 * S + 100, w), Verdict::Ok);
        assert_eq!(tl.check(a, 15 * S, 15 * S + 100, w).rank(), 2);
        // Just after the DOWN line: in the window, with its lag.
        assert_eq!(
            tl.check(a, 10 * S + 1000, 10 * S + 2000, w),
            Verdict::Window(1000)
        );
        // Just before the UP line: in the window too.
        assert_eq!(
            tl.check(a, 20 * S - 3000, 20 * S - 1000, w),
            Verdict::Window(1000)
        );
        // Spanning the UP line: ok.
        assert_eq!(tl.check(a, 20 * S - 10, 20 * S + 10, w), Verdict::Ok);
        // Never logged, UP by the API; unknown address: wrong.
        assert_eq!(
            tl.check(Ipv4Addr::new(10, 0, 0, 2), 15 * S, 15 * S, w),
            Verdict::Ok
        );
        assert_eq!(
            tl.check(Ipv4Addr::new(10, 0, 0, 3), 15 * S, 15 * S, w)
                .rank(),
            2
        );
    }
}
