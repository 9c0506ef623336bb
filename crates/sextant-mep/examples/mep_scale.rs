//! MEP scale benchmark: many sites in one process, each with its OWN driver
//! (`sextant_mep::start`): its own site IP on 127/8, its own listener, its
//! own outbound sockets bound to that IP, its own sessions. Only loopback.
//!
//! ```text
//! cargo run --release -p sextant-mep --example mep_scale -- --parents 32 --children 1024
//! cargo run --release -p sextant-mep --example mep_scale -- --mesh 32
//! ```
//!
//! Options (defaults in brackets):
//!
//! * `--keepalive-ms N` [1000]: `mep_keepalive_timeout` of every site;
//! * `--window-s N` [5]: the steady-state window bytes and CPU are measured over;
//! * `--timeout-s N` [120]: global bound; when hit, the figures printed so far
//!   stand, `MODE.timed_out=1` is printed and the exit status is 2;
//! * `--net N` [90 tree, 91 mesh]: site i gets 127.N.(i/250).(i%250+1);
//! * `--port N` [3011]: MEP port (every site listens on its own IP);
//! * `--services N` [4]: services per site in its reports;
//! * `--fail stop|blackhole` [stop]: how the failed parent (tree) or site
//!   (mesh) fails. `stop` drops its driver: its sockets close, peers see EOF
//!   at once. `blackhole` keeps it running and drops every packet from and to
//!   its IP with iptables, so peers only notice through the keepalive
//!   timeout (the worst case). `blackhole` refuses to run outside a private
//!   network namespace (`unshare -n`; bench/mep-scale.sh does that);
//! * `--threads N` [cores]: tokio worker threads;
//! * `--poll-ms N` [50]: how often the state is polled (status() of the
//!   sites concerned; on a parent of 1056 sites one call costs about 1 ms).
//!
//! What happens (tree mode; the mesh differences follow):
//!
//! 1. Plan: parents P000.., children C0000.. spread evenly (child k has parent
//!    k mod P); parent p's backup list is [p+1, p+2] (mod P). Each site gets
//!    the model it would be configured with: a parent every site, a child only
//!    itself and its parent.
//! 2. Cold start: every driver is started at once; each site publishes a
//!    report (N services with load figures, site metrics) every keepalive/3,
//!    figures changing every time. `converge_s`: every expected session UP
//!    (parents: every other parent and their own children UP and direct in
//!    `status()`; children: their parent UP), polled every 50 ms: each poll
//!    asks the sites not yet seen converged, and a full sweep over all sites
//!    confirms (its end is the time reported). `visible_s`: every parent
//!    also sees every other site UP (children of other parents through their
//!    relay).
//! 3. Memory: VmRSS after convergence, minus the baseline before any driver
//!    (the models are built before the baseline), per site.
//! 4. Steady state: bytes per site over a window, from the kernel's own
//!    per-socket counters (`TCP_INFO` `tcpi_bytes_acked` /
//!    `tcpi_bytes_received` of every established socket in this process,
//!    attributed to the site whose IP is the socket's local address), next to
//!    an estimate from encoded message sizes × rates; CPU used; whether the
//!    publishers got their turns; the longest queue of events seen in a
//!    site's channel and the RSS growth (a backlog in the driver's event
//!    queue); the scheduling lag of the runtime (a probe task sleeping 10 ms);
//!    what one `status()` costs.
//! 5. Takeover: parent P000 fails; `takeover_s` is the time until every one of
//!    its children has the first backup (P001) as `current_parent()` AND P001's
//!    `status()` shows it adopted for P000; compared to 2 × keepalive + 1 s.
//!    `detect_s`: P001's `status()` shows P000 DOWN; `detect_event_s`: P001's
//!    event channel delivers PeerDown P000. `visible_again_s`: every
//!    surviving parent sees those children UP again with P001 as their
//!    parent.
//! 6. Return: P000 comes back (restarted, or the iptables rules removed);
//!    `return_s` is the time until every one of its children is back with it
//!    and P001 no longer adopts any.
//!
//! Mesh: every site has every other site (all flat); converged when each sees
//! all others UP. M000 fails: `detect_s` until every other site sees it
//! DOWN; `return_s`, after it is back, until every site sees every other UP.
//!
//! Output: one `MODE.KEY=VALUE` line per figure, with a `# comment`.

#![allow(unsafe_code)] // system calls in the test harness; each block says why it is sound

use std::collections::{HashMap, HashSet};
use std::fmt::Display;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddrV4};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use sextant_core::{Model, Site, SiteId};
use sextant_mep::frame;
use sextant_mep::message::{
    ChildReport, Keepalive, KeepaliveAck, LoadMetrics, ServiceEntry, ServiceState, ServiceStates,
};
use sextant_mep::sync::View;
use sextant_mep::{
    DEFAULT_MAX_FRAME, LocalReport, MepEvent, MepHandle, MepState, Message, message::SiteMetrics,
};
use tokio::sync::mpsc;

// ---------------------------------------------------------------- output

static MODE: OnceLock<&'static str> = OnceLock::new();
static PHASE: Mutex<&'static str> = Mutex::new("setup");
static BOUND_MISSED: AtomicU64 = AtomicU64::new(0);
/// (observer site, site): when the observer's event channel delivers
/// PeerDown for the site, WATCH_AT gets the time (µs since start).
static WATCH: Mutex<Option<(String, String)>> = Mutex::new(None);
static WATCH_AT: AtomicU64 = AtomicU64::new(0);

fn watch_down(observer: &str, site: &str) {
    WATCH_AT.store(0, Ordering::Relaxed);
    *WATCH.lock().unwrap() = Some((observer.to_owned(), site.to_owned()));
}

/// When the watched PeerDown was delivered, relative to `since`.
fn watched(since: Instant) -> Option<Duration> {
    let at = WATCH_AT.load(Ordering::Relaxed);
    (at > 0).then(|| (started() + Duration::from_micros(at)).saturating_duration_since(since))
}

/// Largest scheduling lag seen by the probe task, in microseconds.
static LAG_MAX_US: AtomicU64 = AtomicU64::new(0);

/// A task that sleeps 10 ms again and again and records how late it wakes:
/// how long a ready task (a connection with a frame waiting) can wait for a
/// worker thread.
async fn lag_probe() {
    let tick = Duration::from_millis(10);
    loop {
        let t = Instant::now();
        tokio::time::sleep(tick).await;
        let late = t.elapsed().saturating_sub(tick);
        LAG_MAX_US.fetch_max(late.as_micros() as u64, Ordering::Relaxed);
    }
}

/// The largest lag since the last call, in milliseconds.
fn take_lag() -> String {
    format!(
        "{:.1}",
        LAG_MAX_US.swap(0, Ordering::Relaxed) as f64 / 1000.0
    )
}

/// Reasons carried by PeerDown, AdoptionRefused, Released and error events,
/// with site names and numbers replaced by `#`, and how often each came.
static REASONS: Mutex<Vec<(String, u64)>> = Mutex::new(Vec::new());

fn anonymize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut last_hash = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            if !last_hash {
                out.push('#');
            }
            last_hash = true;
        } else {
            out.push(c);
            last_hash = false;
        }
    }
    out
}

fn tally(why: &str) {
    let why = anonymize(why);
    let mut r = REASONS.lock().unwrap();
    match r.iter_mut().find(|(w, _)| *w == why) {
        Some((_, n)) => *n += 1,
        None => r.push((why, 1)),
    }
}

/// Prints the reasons seen (most frequent first) to stderr and as one line.
fn print_reasons() {
    let mut r = REASONS.lock().unwrap().clone();
    r.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    for (why, n) in r.iter().take(12) {
        eprintln!("  {n:>7} x {why}");
    }
    emit(
        "event_reasons",
        r.len(),
        "distinct reasons of PeerDown/AdoptionRefused/Released/error events (listed on stderr)",
    );
}

fn emit(key: &str, value: impl Display, note: &str) {
    let mode = MODE.get().copied().unwrap_or("?");
    let line = format!("{mode}.{key}={value}");
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line:<42} # {note}");
    let _ = out.flush();
}

fn phase(p: &'static str) {
    *PHASE.lock().unwrap() = p;
    eprintln!("[{:>7.2?}] phase: {p}", started().elapsed());
}

fn started() -> Instant {
    static T: OnceLock<Instant> = OnceLock::new();
    *T.get_or_init(Instant::now)
}

fn secs(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64())
}

// ---------------------------------------------------------------- args

#[derive(Clone, Copy, PartialEq)]
enum Fail {
    Stop,
    Blackhole,
}

struct Args {
    parents: usize,
    children: usize,
    mesh: Option<usize>,
    keepalive: Duration,
    window: Duration,
    timeout: Duration,
    net: Option<u8>,
    port: u16,
    services: usize,
    fail: Fail,
    threads: Option<usize>,
    poll: Duration,
    /// `--stream`: the service state stream measurements instead.
    stream: bool,
    /// `--stream`: services of the site in the sync measurement.
    sync_services: usize,
    /// `--stream`: services of the site in the churn measurement.
    churn_services: usize,
    /// `--stream`: percent of those changing every second.
    churn_percent: f64,
    /// `--stream`: peers of the measured site.
    peers: usize,
}

fn usage(msg: &str) -> ! {
    eprintln!("mep_scale: {msg}");
    eprintln!(
        "usage: mep_scale (--parents P --children C | --mesh N | --stream [--sync-services 100000] \
         [--churn-services 10000] [--churn-percent 1] [--peers 2]) [--keepalive-ms 1000] \
         [--window-s 5] [--timeout-s 120] [--net 90] [--port 3011] [--services 4] \
         [--fail stop|blackhole] [--threads N] [--poll-ms 50]"
    );
    std::process::exit(64);
}

fn parse_args() -> Args {
    let mut a = Args {
        parents: 0,
        children: 0,
        mesh: None,
        keepalive: Duration::from_millis(1000),
        window: Duration::from_secs(5),
        timeout: Duration::from_secs(120),
        net: None,
        port: 3011,
        services: 4,
        fail: Fail::Stop,
        threads: None,
        poll: Duration::from_millis(50),
        stream: false,
        sync_services: 100_000,
        churn_services: 10_000,
        churn_percent: 1.0,
        peers: 2,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || {
            it.next()
                .unwrap_or_else(|| usage(&format!("{flag} needs a value")))
        };
        fn num<T: std::str::FromStr>(flag: &str, v: String) -> T {
            v.parse()
                .unwrap_or_else(|_| usage(&format!("{flag}: not a number: {v}")))
        }
        match flag.as_str() {
            "--parents" => a.parents = num(&flag, val()),
            "--children" => a.children = num(&flag, val()),
            "--mesh" => a.mesh = Some(num(&flag, val())),
            "--keepalive-ms" => a.keepalive = Duration::from_millis(num(&flag, val())),
            "--window-s" => a.window = Duration::from_secs_f64(num(&flag, val())),
            "--timeout-s" => a.timeout = Duration::from_secs_f64(num(&flag, val())),
            "--net" => a.net = Some(num(&flag, val())),
            "--port" => a.port = num(&flag, val()),
            "--services" => a.services = num(&flag, val()),
            "--threads" => a.threads = Some(num(&flag, val())),
            "--poll-ms" => a.poll = Duration::from_millis(num(&flag, val())),
            "--fail" => {
                a.fail = match val().as_str() {
                    "stop" => Fail::Stop,
                    "blackhole" => Fail::Blackhole,
                    other => usage(&format!("--fail: stop or blackhole, not {other}")),
                }
            }
            "--stream" => a.stream = true,
            "--sync-services" => a.sync_services = num(&flag, val()),
            "--churn-services" => a.churn_services = num(&flag, val()),
            "--churn-percent" => a.churn_percent = num(&flag, val()),
            "--peers" => a.peers = num(&flag, val()),
            "-h" | "--help" => usage("help"),
            other => usage(&format!("unknown argument {other}")),
        }
    }
    if a.stream {
        if a.peers == 0 || a.sync_services == 0 || a.churn_services == 0 {
            usage("--stream needs --peers, --sync-services and --churn-services above 0");
        }
        return a;
    }
    match a.mesh {
        Some(n) if n < 2 => usage("--mesh needs at least 2 sites"),
        Some(_) if a.parents > 0 || a.children > 0 => {
            usage("--mesh and --parents/--children exclude each other")
        }
        None if a.parents < 3 => usage("--parents needs at least 3 (backup lists of 2)"),
        None if a.children < a.parents => usage("--children must be at least --parents"),
        _ => {}
    }
    a
}

// ---------------------------------------------------------------- plan

struct Plan {
    name: String,
    ip: Ipv4Addr,
    /// Index of the parent (children only).
    parent: Option<usize>,
    backups: Vec<usize>,
    /// Indices of its children (parents only).
    children: Vec<usize>,
}

impl Plan {
    fn is_parent(&self) -> bool {
        self.parent.is_none()
    }
}

fn ip_of(net: u8, i: usize) -> Ipv4Addr {
    assert!(i < 250 * 256, "too many sites for one 127.N/16");
    Ipv4Addr::new(127, net, (i / 250) as u8, (i % 250 + 1) as u8)
}

fn plan_tree(parents: usize, children: usize, net: u8) -> Vec<Plan> {
    let mut plan: Vec<Plan> = (0..parents)
        .map(|p| Plan {
            name: format!("P{p:03}"),
            ip: ip_of(net, p),
            parent: None,
            backups: vec![(p + 1) % parents, (p + 2) % parents],
            children: Vec::new(),
        })
        .collect();
    for k in 0..children {
        let i = parents + k;
        let p = k % parents;
        plan[p].children.push(i);
        plan.push(Plan {
            name: format!("C{k:04}"),
            ip: ip_of(net, i),
            parent: Some(p),
            backups: Vec::new(),
            children: Vec::new(),
        });
    }
    plan
}

fn plan_mesh(n: usize, net: u8) -> Vec<Plan> {
    (0..n)
        .map(|i| Plan {
            name: format!("M{i:03}"),
            ip: ip_of(net, i),
            parent: None,
            backups: Vec::new(),
            children: Vec::new(),
        })
        .collect()
}

fn site_of(p: &Plan) -> Site {
    Site::new(p.name.clone(), IpAddr::V4(p.ip))
}

/// The configuration site `i` has: every site for a parent or mesh member,
/// itself and its parent for a child.
fn model_for(plan: &[Plan], full: &Model, i: usize) -> Model {
    match plan[i].parent {
        None => {
            let mut m = full.clone();
            m.set_local_site(SiteId::from_index(i));
            m
        }
        Some(p) => {
            let mut m = Model {
                params: full.params.clone(),
                ..Model::default()
            };
            m.sites.push(site_of(&plan[p]));
            let mut me = site_of(&plan[i]);
            me.parent = Some(SiteId::new(0));
            m.sites.push(me);
            m.set_local_site(SiteId::new(1));
            m
        }
    }
}

fn full_model(plan: &[Plan], a: &Args) -> Model {
    let mut m = Model {
        sites: plan.iter().map(site_of).collect(),
        ..Model::default()
    };
    for (i, p) in plan.iter().enumerate() {
        let site = &mut m.sites[SiteId::from_index(i)];
        site.parent = p.parent.map(SiteId::from_index);
        site.backup_parents = p.backups.iter().map(|&b| SiteId::from_index(b)).collect();
    }
    m.params.mep_keepalive_timeout = a.keepalive;
    m.params.mep_port = a.port;
    // Never used (no rpcNode is secure), but kept off the default 3009.
    m.params.mep_secure_port = a.port.wrapping_add(1);
    m
}

// ---------------------------------------------------------------- reports

/// Site `i`'s report number `n`: `services` services with load figures and
/// site metrics, every figure moving a little from one report to the next.
fn report(plan: &Plan, i: usize, services: usize, n: u64) -> LocalReport {
    let wobble = |k: u64, m: u64| (n.wrapping_mul(7) + k * 13 + i as u64 * 3) % m;
    let services = (0..services)
        .map(|k| {
            let k64 = k as u64;
            ServiceEntry {
                service: format!("{}-svc{}", plan.name.to_ascii_lowercase(), k),
                ip: IpAddr::V4(Ipv4Addr::new(
                    10,
                    (i / 250) as u8,
                    (i % 250) as u8,
                    (k + 10) as u8,
                )),
                port: 443,
                public_ip: None,
                public_port: None,
                state: ServiceState::Up,
                metrics: LoadMetrics {
                    connections: Some(200 + wobble(k64, 97)),
                    response_time_ms: Some(8.0 + wobble(k64, 40) as f64 * 0.137),
                    bandwidth_bps: Some(180_000_000 + wobble(k64, 1000) * 12_345),
                    packets_ps: Some(21_000 + wobble(k64, 500) * 3),
                    custom_load: None,
                    ..Default::default()
                },
            }
        })
        .collect();
    LocalReport {
        services,
        site: SiteMetrics {
            cpu_percent: Some(20.0 + wobble(1, 50) as f64 * 0.31),
            memory_percent: Some(41.0 + wobble(2, 10) as f64 * 0.1),
            bandwidth_bps: Some(900_000_000 + wobble(3, 1000) * 54_321),
            packet_loss_percent: Some(wobble(4, 5) as f64 * 0.01),
            links: Vec::new(),
        },
    }
}

// ---------------------------------------------------------------- nodes

#[derive(Default)]
struct Counters {
    peer_up: AtomicU64,
    peer_down: AtomicU64,
    services: AtomicU64,
    site_metrics: AtomicU64,
    parent_changed: AtomicU64,
    adopted: AtomicU64,
    released: AtomicU64,
    adoption_refused: AtomicU64,
    errors: AtomicU64,
    /// Largest number of events seen queued in one site's channel.
    backlog_max: AtomicU64,
    /// Reports published (all sites).
    published: AtomicU64,
    other: AtomicU64,
}

impl Counters {
    fn count(&self, e: &MepEvent) {
        let c = match e {
            MepEvent::PeerUp { .. } => &self.peer_up,
            MepEvent::PeerDown { .. } => &self.peer_down,
            MepEvent::Services { .. } => &self.services,
            MepEvent::SiteMetrics { .. } => &self.site_metrics,
            MepEvent::ParentChanged { .. } => &self.parent_changed,
            MepEvent::Adopted { .. } => &self.adopted,
            MepEvent::Released { .. } => &self.released,
            MepEvent::AdoptionRefused { .. } => &self.adoption_refused,
            MepEvent::AuthFailed { .. } | MepEvent::BadFrame { .. } | MepEvent::Refused { .. } => {
                &self.errors
            }
            _ => &self.other,
        };
        c.fetch_add(1, Ordering::Relaxed);
        let why = match e {
            MepEvent::PeerDown { reason, .. } => format!("PeerDown: {reason}"),
            MepEvent::AdoptionRefused { reason, .. } => format!("AdoptionRefused: {reason}"),
            MepEvent::Released { reason, .. } => format!("Released: {reason}"),
            MepEvent::AuthFailed { reason, .. } => format!("AuthFailed: {reason}"),
            MepEvent::BadFrame { reason, .. } => format!("BadFrame: {reason}"),
            MepEvent::Refused { reason, .. } => format!("Refused: {reason}"),
            _ => return,
        };
        tally(&why);
    }

    fn total(&self) -> u64 {
        [
            &self.peer_up,
            &self.peer_down,
            &self.services,
            &self.site_metrics,
            &self.parent_changed,
            &self.adopted,
            &self.released,
            &self.adoption_refused,
            &self.errors,
            &self.other,
        ]
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .sum()
    }
}

struct Node {
    model: Arc<Model>,
    handle: Mutex<Option<MepHandle>>,
}

impl Node {
    fn with<R>(&self, f: impl FnOnce(&MepHandle) -> R) -> Option<R> {
        self.handle.lock().unwrap().as_ref().map(f)
    }

    fn status(&self) -> Vec<sextant_mep::PeerStatus> {
        self.with(|h| h.status()).unwrap_or_default()
    }

    /// Starts the driver (retrying while the address is still held by a
    /// previous driver of the same site) and a task draining its events.
    async fn start(&self, name: &str, counters: &Arc<Counters>) {
        let mut tries = 0;
        loop {
            let (tx, mut rx) = mpsc::channel(4096);
            match sextant_mep::start(self.model.clone(), 1, tx) {
                Ok(h) => {
                    let c = counters.clone();
                    let me = name.to_owned();
                    tokio::spawn(async move {
                        while let Some(e) = rx.recv().await {
                            if let MepEvent::PeerDown { site, .. } = &e
                                && WATCH
                                    .lock()
                                    .unwrap()
                                    .as_ref()
                                    .is_some_and(|(o, s)| *o == me && s == site)
                            {
                                WATCH_AT.store(
                                    started().elapsed().as_micros() as u64,
                                    Ordering::Relaxed,
                                );
                            }
                            c.count(&e);
                            c.backlog_max.fetch_max(rx.len() as u64, Ordering::Relaxed);
                        }
                    });
                    *self.handle.lock().unwrap() = Some(h);
                    return;
                }
                Err(e) if tries < 100 => {
                    tries += 1;
                    if tries == 1 {
                        eprintln!("{name}: {e}; retrying");
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => {
                    eprintln!("mep_scale: cannot start {name}: {e}");
                    std::process::exit(1);
                }
            }
        }
    }

    fn stop(&self) {
        let h = self.handle.lock().unwrap().take();
        drop(h);
    }
}

fn spawn_publishers(
    nodes: &Arc<Vec<Node>>,
    plan: &Arc<Vec<Plan>>,
    counters: &Arc<Counters>,
    services: usize,
    every: Duration,
) {
    let n = nodes.len();
    for i in 0..n {
        let (nodes, plan, counters) = (nodes.clone(), plan.clone(), counters.clone());
        // Spread the sites' phases over one interval.
        let offset = every.mul_f64(i as f64 / n as f64);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + offset, every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut k = 0u64;
            loop {
                tick.tick().await;
                let r = report(&plan[i], i, services, k);
                k += 1;
                if nodes[i].with(|h| h.publish(r)).is_some() {
                    counters.published.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
}

// ---------------------------------------------------------------- /proc and sockets

fn raise_fd_limit() -> u64 {
    // SAFETY: getrlimit/setrlimit read and write one local rlimit struct.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return 0;
        }
        r.rlim_cur = r.rlim_max;
        if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
            eprintln!(
                "mep_scale: setrlimit(NOFILE, {}): {}",
                r.rlim_max,
                std::io::Error::last_os_error()
            );
        }
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        r.rlim_cur as u64
    }
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// User + system CPU time of the process.
fn cpu_time() -> Duration {
    let Ok(s) = std::fs::read_to_string("/proc/self/stat") else {
        return Duration::ZERO;
    };
    let Some(rest) = s.rsplit_once(") ").map(|(_, r)| r) else {
        return Duration::ZERO;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0)
        + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf takes a constant and touches no memory of ours.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_secs_f64(ticks as f64 / hz as f64)
}

fn threads() -> u64 {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count() as u64)
}

/// Payload bytes of one established TCP socket, from the kernel.
#[derive(Clone, Copy)]
struct SockBytes {
    sent: u64,
    received: u64,
}

/// Every established IPv4 TCP socket of this process, by (local, peer).
/// `tcpi_bytes_acked` (payload bytes sent and acknowledged) and
/// `tcpi_bytes_received` sit at offsets 120 and 128 of `struct tcp_info`
/// (Linux >= 4.1).
fn scan_sockets() -> HashMap<(SocketAddrV4, SocketAddrV4), SockBytes> {
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return out;
    };
    for e in dir.flatten() {
        let Ok(fd) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(target) = std::fs::read_link(e.path()) else {
            continue;
        };
        if !target.to_string_lossy().starts_with("socket:") {
            continue;
        }
        // SAFETY: read-only socket queries on a descriptor of this process
        // into buffers of the sizes passed; a descriptor closed (or reused)
        // meanwhile only makes a call fail or describe another socket.
        unsafe {
            let addr = |get: unsafe extern "C" fn(
                i32,
                *mut libc::sockaddr,
                *mut libc::socklen_t,
            ) -> i32| {
                let mut sa: libc::sockaddr_in = std::mem::zeroed();
                let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
                if get(fd, &mut sa as *mut _ as *mut libc::sockaddr, &mut len) != 0
                    || sa.sin_family as i32 != libc::AF_INET
                {
                    return None;
                }
                Some(SocketAddrV4::new(
                    Ipv4Addr::from(u32::from_be(sa.sin_addr.s_addr)),
                    u16::from_be(sa.sin_port),
                ))
            };
            let (Some(local), Some(peer)) = (addr(libc::getsockname), addr(libc::getpeername))
            else {
                continue;
            };
            let mut info = [0u8; 256];
            let mut len = info.len() as libc::socklen_t;
            if libc::getsockopt(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_INFO,
                info.as_mut_ptr() as *mut libc::c_void,
                &mut len,
            ) != 0
                || len < 136
                || info[0] != 1
            {
                continue;
            }
            let u64_at = |o: usize| u64::from_ne_bytes(info[o..o + 8].try_into().unwrap());
            out.insert(
                (local, peer),
                SockBytes {
                    sent: u64_at(120),
                    received: u64_at(128),
                },
            );
        }
    }
    out
}

/// A network namespace of its own, as `unshare -n` makes it: loopback is
/// its only interface, so iptables rules here touch nothing else.
fn in_private_netns() -> bool {
    std::fs::read_to_string("/proc/self/net/dev").is_ok_and(|dev| {
        let ifaces: Vec<&str> = dev
            .lines()
            .skip(2)
            .filter_map(|l| l.split(':').next())
            .map(str::trim)
            .collect();
        ifaces == ["lo"]
    })
}

fn iptables(op: &str, ip: Ipv4Addr) {
    for dir in ["-s", "-d"] {
        let st = Command::new("iptables")
            .args(["-w", op, "OUTPUT", dir, &ip.to_string(), "-j", "DROP"])
            .status();
        if !st.as_ref().is_ok_and(|s| s.success()) {
            eprintln!("mep_scale: iptables {op} OUTPUT {dir} {ip} failed: {st:?}");
            std::process::exit(1);
        }
    }
}

// ---------------------------------------------------------------- figures

fn stats(v: &[f64]) -> (f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, min, max)
}

fn frame_len(m: &Message) -> f64 {
    frame::encode_to_vec(m, DEFAULT_MAX_FRAME)
        .map(|v| v.len())
        .unwrap_or(0) as f64
}

/// Encoded sizes of the messages of the steady state.
struct Sizes {
    /// ServiceStates + SiteMetrics of one site.
    report: f64,
    /// The two ChildReports a parent relays for one child's report.
    relay: f64,
    /// Keepalive + KeepaliveAck.
    keepalive: f64,
}

fn sizes(plan: &[Plan], services: usize) -> Sizes {
    let i = plan.len() - 1;
    let r = report(&plan[i], i, services, 12345);
    Sizes {
        report: frame_len(&Message::ServiceStates(ServiceStates {
            entries: r.services.clone(),
            ..Default::default()
        })) + frame_len(&Message::SiteMetrics(r.site.clone())),
        relay: frame_len(&Message::ChildReport(ChildReport {
            child: plan[i].name.clone(),
            up: true,
            services: Some(r.services.clone()),
            states: None,
            site_metrics: None,
        })) + frame_len(&Message::ChildReport(ChildReport {
            child: plan[i].name.clone(),
            up: true,
            services: None,
            states: None,
            site_metrics: Some(r.site),
        })),
        keepalive: frame_len(&Message::Keepalive(Keepalive {
            sent_at_ms: 1_234_567,
        })) + frame_len(&Message::KeepaliveAck(KeepaliveAck { echo: 1_234_567 })),
    }
}

/// Bytes per second each site sent and received over `window`, from two
/// socket scans, and how many established sockets each site had at the end.
struct Traffic {
    tx: Vec<f64>,
    rx: Vec<f64>,
    sockets: Vec<u64>,
    churn: usize,
}

fn traffic(
    before: &HashMap<(SocketAddrV4, SocketAddrV4), SockBytes>,
    after: &HashMap<(SocketAddrV4, SocketAddrV4), SockBytes>,
    window: Duration,
    by_ip: &HashMap<Ipv4Addr, usize>,
    n: usize,
) -> Traffic {
    let mut t = Traffic {
        tx: vec![0.0; n],
        rx: vec![0.0; n],
        sockets: vec![0; n],
        churn: 0,
    };
    let w = window.as_secs_f64();
    for (k, a) in after {
        let Some(&i) = by_ip.get(k.0.ip()) else {
            continue;
        };
        let b = before.get(k).copied().unwrap_or(SockBytes {
            sent: 0,
            received: 0,
        });
        if !before.contains_key(k) {
            t.churn += 1;
        }
        t.tx[i] += a.sent.saturating_sub(b.sent) as f64 / w;
        t.rx[i] += a.received.saturating_sub(b.received) as f64 / w;
        t.sockets[i] += 1;
    }
    t.churn += before.keys().filter(|k| !after.contains_key(k)).count();
    t
}

// ---------------------------------------------------------------- main

fn main() {
    let a = parse_args();
    started();
    let mode: &'static str = if a.stream {
        "stream"
    } else if a.mesh.is_some() {
        "mesh"
    } else {
        "tree"
    };
    MODE.set(mode).unwrap();
    if a.fail == Fail::Blackhole && !in_private_netns() {
        usage(
            "--fail blackhole changes iptables rules: run it in a private network namespace (unshare -n)",
        );
    }
    let fd_limit = raise_fd_limit();
    // Watchdog: the global bound, whatever state the runtime is in.
    let limit = a.timeout;
    std::thread::spawn(move || {
        std::thread::sleep(limit);
        let p = *PHASE.lock().unwrap();
        print_reasons();
        emit(
            "lag_max_ms",
            take_lag(),
            "largest scheduling lag of the runtime in the phase that timed out",
        );
        emit(
            "timed_out",
            1,
            &format!(
                "global timeout of {limit:?} hit during phase '{p}'; the figures above are all there is"
            ),
        );
        std::process::exit(2);
    });
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(t) = a.threads {
        rt.worker_threads(t);
    }
    let rt = rt.build().expect("tokio runtime");
    let code = if a.stream {
        rt.block_on(run_stream(a))
    } else {
        rt.block_on(run(a, fd_limit))
    };
    // Do not wait for the drivers' tasks.
    std::process::exit(code);
}

async fn run(a: Args, fd_limit: u64) -> i32 {
    let mode = *MODE.get().unwrap();
    let net = a.net.unwrap_or(if mode == "mesh" { 91 } else { 90 });
    let plan: Vec<Plan> = match a.mesh {
        Some(n) => plan_mesh(n, net),
        None => plan_tree(a.parents, a.children, net),
    };
    let n = plan.len();
    let parents: Vec<usize> = (0..n).filter(|&i| plan[i].is_parent()).collect();
    let childs: Vec<usize> = (0..n).filter(|&i| !plan[i].is_parent()).collect();
    let by_name: HashMap<String, usize> = plan
        .iter()
        .enumerate()
        .map(|(i, p)| (p.name.clone(), i))
        .collect();
    let by_ip: HashMap<Ipv4Addr, usize> = plan.iter().enumerate().map(|(i, p)| (p.ip, i)).collect();
    let ka = a.keepalive;
    let interval = ka / 3;

    emit(
        "sites",
        n,
        "sites, each with its own driver, IP, listener and sessions",
    );
    emit(
        "parents",
        parents.len(),
        if mode == "mesh" {
            "mesh members"
        } else {
            "parent sites"
        },
    );
    emit("children", childs.len(), "child sites");
    emit(
        "keepalive_ms",
        ka.as_millis(),
        "MEP keepalive timeout (keepalive and report every third of it)",
    );
    emit(
        "services_per_site",
        a.services,
        "services in each site's report",
    );
    emit(
        "ip_range",
        format!("127.{net}.0.1-{}", plan[n - 1].ip),
        "site IPs (loopback)",
    );
    emit(
        "fd_limit",
        fd_limit,
        "RLIMIT_NOFILE after raising the soft limit to the hard one",
    );
    emit(
        "worker_threads",
        a.threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        "tokio worker threads (all sites share them)",
    );

    // --- models (before the memory baseline) ---
    phase("models");
    let full = full_model(&plan, &a);
    let nodes: Arc<Vec<Node>> = Arc::new(
        (0..n)
            .map(|i| Node {
                model: Arc::new(model_for(&plan, &full, i)),
                handle: Mutex::new(None),
            })
            .collect(),
    );
    drop(full);
    let plan = Arc::new(plan);
    let counters = Arc::new(Counters::default());
    let rss0 = rss_kib();
    emit(
        "rss_baseline_kib",
        rss0,
        "VmRSS before any driver (models already built)",
    );

    // --- cold start ---
    phase("cold start");
    let t0 = Instant::now();
    let cpu0 = cpu_time();
    tokio::spawn(lag_probe());
    take_lag();
    for (i, node) in nodes.iter().enumerate() {
        node.start(&plan[i].name, &counters).await;
    }
    spawn_publishers(&nodes, &plan, &counters, a.services, interval);
    emit(
        "start_s",
        secs(t0.elapsed()),
        "time to start every driver (bind + spawn)",
    );

    let expected_links = |i: usize| {
        if plan[i].is_parent() {
            parents.len() - 1 + plan[i].children.len()
        } else {
            1
        }
    };
    // Per site: (its expected sessions are all UP, it sees every site it
    // should see UP).
    let check = |i: usize| -> (bool, bool) {
        let st = nodes[i].status();
        let mut links = 0;
        let mut up = 0;
        for s in &st {
            let Some(&j) = by_name.get(&s.name) else {
                continue;
            };
            if j == i || s.state != MepState::Up {
                continue;
            }
            up += 1;
            let direct = s.via.is_none();
            let wanted = if plan[i].is_parent() {
                plan[j].is_parent() || (plan[j].parent == Some(i) && s.link == Some("to-child"))
            } else {
                plan[i].parent == Some(j)
            };
            if wanted && direct {
                links += 1;
            }
        }
        let visible = if plan[i].is_parent() { n - 1 } else { 1 };
        (links == expected_links(i), up == visible)
    };

    // Each poll asks status() of the sites not yet seen converged; when every
    // site has been, one full sweep over all of them confirms (a site may
    // have lost a session meanwhile) and its end is the time reported.
    let mut converged = None;
    let mut visible = None;
    let mut polls = 0u32;
    let mut poll_cost = Duration::ZERO;
    let mut sweeps = 0u32;
    let mut sweep_cost = Duration::ZERO;
    let mut ok = vec![(false, false); n];
    while converged.is_none() || visible.is_none() {
        let p0 = Instant::now();
        for (i, o) in ok.iter_mut().enumerate() {
            if *o != (true, true) {
                *o = check(i);
            }
        }
        poll_cost += p0.elapsed();
        polls += 1;
        let links = ok.iter().all(|o| o.0);
        let all = ok.iter().all(|o| o.0 && o.1);
        if (converged.is_none() && links) || (visible.is_none() && all) {
            let s0 = Instant::now();
            for (i, o) in ok.iter_mut().enumerate() {
                *o = check(i);
            }
            sweep_cost += s0.elapsed();
            sweeps += 1;
            let now = t0.elapsed();
            if converged.is_none() && ok.iter().all(|o| o.0) {
                converged = Some(now);
                emit(
                    "converge_s",
                    secs(now),
                    if mode == "mesh" {
                        "cold start until every site has its session with every other site UP"
                    } else {
                        "cold start until every expected session is UP (parents: other parents + own children; children: parent)"
                    },
                );
                phase("visibility");
            }
            if visible.is_none() && ok.iter().all(|o| o.0 && o.1) {
                visible = Some(now);
                emit(
                    "visible_s",
                    secs(now),
                    if mode == "mesh" {
                        "the same as converge_s in a mesh (every site is a direct peer)"
                    } else {
                        "cold start until every parent also sees every other site UP (children of others via their parent's relay)"
                    },
                );
            }
        }
        if polls.is_multiple_of(40) && converged.is_none() {
            let missing = ok.iter().filter(|o| !o.0).count();
            eprintln!(
                "  {:.1?}: {missing} sites still miss a session",
                t0.elapsed()
            );
        }
        tokio::time::sleep(a.poll).await;
    }
    emit(
        "poll_ms",
        format!("{:.1}", poll_cost.as_secs_f64() * 1000.0 / polls as f64),
        "mean cost of one poll (status() of every site not yet converged), one poll every --poll-ms",
    );
    emit(
        "sweep_ms",
        format!(
            "{:.1}",
            sweep_cost.as_secs_f64() * 1000.0 / sweeps.max(1) as f64
        ),
        "cost of one confirming status() sweep over every site (the timings above end with one)",
    );
    emit(
        "cold_start_cpu_s",
        secs(cpu_time() - cpu0),
        "CPU time (all threads) from start to full visibility",
    );
    emit(
        "cold_start_lag_max_ms",
        take_lag(),
        "largest scheduling lag of the runtime during the cold start (a task ready to run waited this long)",
    );
    let rss1 = rss_kib();
    emit("rss_converged_kib", rss1, "VmRSS right after convergence");
    emit(
        "rss_per_site_kib",
        format!("{:.1}", (rss1.saturating_sub(rss0)) as f64 / n as f64),
        "(VmRSS after convergence - baseline) / sites",
    );

    // --- steady state ---
    phase("steady state");
    tokio::time::sleep(ka).await;
    let before = scan_sockets();
    let ev0 = counters.total();
    let pub0 = counters.published.load(Ordering::Relaxed);
    counters.backlog_max.store(0, Ordering::Relaxed);
    let rss_w0 = rss_kib();
    take_lag();
    let (cpu1, w0) = (cpu_time(), Instant::now());
    tokio::time::sleep(a.window).await;
    let after = scan_sockets();
    let window = w0.elapsed();
    let cpu = cpu_time() - cpu1;
    let ev = counters.total() - ev0;
    let published = counters.published.load(Ordering::Relaxed) - pub0;
    let backlog = counters.backlog_max.load(Ordering::Relaxed);
    let rss_w1 = rss_kib();
    let t = traffic(&before, &after, window, &by_ip, n);
    let total_tx: f64 = t.tx.iter().sum();
    let total_rx: f64 = t.rx.iter().sum();
    emit(
        "window_s",
        secs(window),
        "steady-state window (all sites up, reports flowing)",
    );
    let sz = sizes(&plan, a.services);
    let per_s = 1.0 / interval.as_secs_f64();
    emit(
        "msg_report_bytes",
        sz.report,
        "ServiceStates + SiteMetrics frames of one report (encoded)",
    );
    if mode == "tree" {
        emit(
            "msg_relay_bytes",
            sz.relay,
            "the two ChildReport frames a parent relays per child report",
        );
    }
    emit(
        "msg_keepalive_bytes",
        sz.keepalive,
        "Keepalive + KeepaliveAck frames",
    );
    let ptx: Vec<f64> = parents.iter().map(|&i| t.tx[i]).collect();
    let prx: Vec<f64> = parents.iter().map(|&i| t.rx[i]).collect();
    let psock: Vec<f64> = parents.iter().map(|&i| t.sockets[i] as f64).collect();
    let who = if mode == "mesh" { "site" } else { "parent" };
    let (m, lo, hi) = stats(&ptx);
    emit(
        &format!("{who}_tx_Bps"),
        format!("{m:.0}"),
        &format!("MEP payload bytes/s sent per {who} (kernel TCP_INFO; min {lo:.0}, max {hi:.0})"),
    );
    let (m, lo, hi) = stats(&prx);
    emit(
        &format!("{who}_rx_Bps"),
        format!("{m:.0}"),
        &format!("MEP payload bytes/s received per {who} (min {lo:.0}, max {hi:.0})"),
    );
    let (m, lo, hi) = stats(&psock);
    emit(
        &format!("{who}_sockets"),
        format!("{m:.1}"),
        &format!("established MEP sockets per {who} (min {lo}, max {hi})"),
    );
    let peers = (parents.len() - 1) as f64;
    let cpp = childs.len() as f64 / parents.len() as f64;
    // One report per interval from each site, one keepalive each way per
    // link and interval; a parent relays each child report to every peer.
    let est_tx = per_s * (peers * (sz.report + cpp * sz.relay + sz.keepalive) + cpp * sz.keepalive);
    let est_rx = per_s
        * (peers * (sz.report + cpp * sz.relay + sz.keepalive) + cpp * (sz.report + sz.keepalive));
    emit(
        &format!("est_{who}_tx_Bps"),
        format!("{est_tx:.0}"),
        "estimate: message sizes x one report and one keepalive exchange per link per keepalive/3",
    );
    emit(
        &format!("est_{who}_rx_Bps"),
        format!("{est_rx:.0}"),
        "estimate, received",
    );
    if mode == "tree" {
        let relay = per_s * peers * cpp * sz.relay;
        emit(
            "relay_share",
            format!("{:.2}", relay / est_tx),
            "share of a parent's sent bytes that is relayed child reports (estimate)",
        );
        let ctx: Vec<f64> = childs.iter().map(|&i| t.tx[i]).collect();
        let crx: Vec<f64> = childs.iter().map(|&i| t.rx[i]).collect();
        let (m, lo, hi) = stats(&ctx);
        emit(
            "child_tx_Bps",
            format!("{m:.0}"),
            &format!(
                "bytes/s sent per child (min {lo:.0}, max {hi:.0}); estimate {:.0}",
                per_s * (sz.report + sz.keepalive)
            ),
        );
        let (m, _, _) = stats(&crx);
        emit(
            "child_rx_Bps",
            format!("{m:.0}"),
            "bytes/s received per child",
        );
    }
    emit(
        "total_tx_Bps",
        format!("{total_tx:.0}"),
        &format!(
            "all sites together (received: {total_rx:.0}; equal when every socket's both ends are here)"
        ),
    );
    emit(
        "socket_churn",
        t.churn,
        "sockets opened or closed during the window (0 in a steady state)",
    );
    emit(
        "events_per_s",
        format!("{:.0}", ev as f64 / window.as_secs_f64()),
        "MepEvents delivered to the sites' channels per second, all sites",
    );
    emit(
        "cpu_cores",
        format!("{:.2}", cpu.as_secs_f64() / window.as_secs_f64()),
        "CPU used during the window, in cores (whole process: drivers + publishers + event drains)",
    );
    emit("threads", threads(), "OS threads of the process");
    emit(
        "publish_ratio",
        format!(
            "{:.2}",
            published as f64 / (n as f64 * window.as_secs_f64() / interval.as_secs_f64())
        ),
        "reports published / reports due (1.00 unless the publishers are starved of CPU)",
    );
    emit(
        "steady_lag_max_ms",
        take_lag(),
        "largest scheduling lag during the window (compare with the keepalive timeout)",
    );
    emit(
        "event_backlog_max",
        backlog,
        "most MepEvents seen queued in one site's channel during the window (capacity 4096; beyond it the driver's unbounded queue grows)",
    );
    emit(
        "rss_growth_kib_per_s",
        format!(
            "{:.0}",
            (rss_w1 as f64 - rss_w0 as f64) / window.as_secs_f64()
        ),
        "VmRSS change over the window per second (about 0 in a sustainable steady state)",
    );
    let rss2 = rss_kib();
    emit("rss_steady_kib", rss2, "VmRSS after the steady window");
    emit(
        "rss_steady_per_site_kib",
        format!("{:.1}", rss2.saturating_sub(rss0) as f64 / n as f64),
        "(VmRSS after the window - baseline) / sites",
    );
    // What one status() (GET /v1/sites) costs; the driver holds its lock
    // for all of it.
    let timed = |sites: &[usize]| {
        let t = Instant::now();
        let entries: usize = sites.iter().map(|&i| nodes[i].status().len()).sum();
        (
            t.elapsed().as_secs_f64() * 1000.0 / sites.len().max(1) as f64,
            entries / sites.len().max(1),
        )
    };
    let (ms, entries) = timed(&parents);
    emit(
        &format!("status_{who}_ms"),
        format!("{ms:.3}"),
        &format!("one status() call on a {who} ({entries} entries), steady state"),
    );
    if mode == "tree" {
        let (ms, entries) = timed(&childs);
        emit(
            "status_child_ms",
            format!("{ms:.3}"),
            &format!("one status() call on a child ({entries} entries)"),
        );
    }

    // --- failure ---
    let bound = 2 * ka + Duration::from_secs(1);
    let failed = 0usize;
    let fname = plan[failed].name.clone();
    let fip = plan[failed].ip;
    let fail_now = || match a.fail {
        Fail::Stop => nodes[failed].stop(),
        Fail::Blackhole => iptables("-I", fip),
    };
    emit(
        "fail_mode",
        if a.fail == Fail::Stop {
            "stop"
        } else {
            "blackhole"
        },
        "stop: driver dropped, sockets closed; blackhole: iptables drops every packet of its IP",
    );
    if mode == "tree" {
        phase("takeover");
        let adopter = plan[failed].backups[0];
        let aname = plan[adopter].name.clone();
        let orphans = plan[failed].children.clone();
        let orphan_names: HashSet<&str> = orphans.iter().map(|&c| plan[c].name.as_str()).collect();
        emit(
            "failed_parent",
            &fname,
            &format!(
                "{} children; backup list {}, {}",
                orphans.len(),
                aname,
                plan[plan[failed].backups[1]].name
            ),
        );
        watch_down(&aname, &fname);
        let t1 = Instant::now();
        take_lag();
        fail_now();
        let mut detect = None;
        let mut took = None;
        let mut again = None;
        while took.is_none() || again.is_none() {
            let now = t1.elapsed();
            let ast = nodes[adopter].status();
            if detect.is_none()
                && ast
                    .iter()
                    .any(|s| s.name == fname && s.state == MepState::Down)
            {
                detect = Some(now);
                emit("detect_s", secs(now), &format!("{aname} sees {fname} DOWN"));
            }
            if took.is_none() {
                let adopted = ast
                    .iter()
                    .filter(|s| {
                        orphan_names.contains(s.name.as_str())
                            && s.state == MepState::Up
                            && s.adopted_for.as_deref() == Some(fname.as_str())
                    })
                    .count();
                let moved = orphans
                    .iter()
                    .filter(|&&c| {
                        nodes[c].with(|h| h.current_parent()).flatten().as_deref()
                            == Some(aname.as_str())
                    })
                    .count();
                if adopted == orphans.len() && moved == orphans.len() {
                    let now = t1.elapsed();
                    took = Some(now);
                    emit(
                        "takeover_s",
                        secs(now),
                        &format!(
                            "until all {} children of {fname} have {aname} as current parent and {aname} shows them adopted",
                            orphans.len()
                        ),
                    );
                    emit(
                        "takeover_bound_s",
                        secs(bound),
                        "2 x keepalive timeout + 1 s",
                    );
                    let ok = now <= bound;
                    if !ok {
                        BOUND_MISSED.fetch_add(1, Ordering::Relaxed);
                    }
                    emit(
                        "takeover_within_bound",
                        ok,
                        "takeover_s <= takeover_bound_s",
                    );
                    phase("takeover visible");
                }
            }
            if took.is_some() && again.is_none() {
                let all = parents.iter().filter(|&&p| p != failed).all(|&p| {
                    let st = nodes[p].status();
                    st.iter()
                        .filter(|s| orphan_names.contains(s.name.as_str()))
                        .filter(|s| {
                            s.state == MepState::Up
                                && s.current_parent.as_deref() == Some(aname.as_str())
                        })
                        .count()
                        == orphans.len()
                });
                if all {
                    let now = t1.elapsed();
                    again = Some(now);
                    emit(
                        "visible_again_s",
                        secs(now),
                        &format!(
                            "until every surviving parent sees {fname}'s children UP again under {aname}"
                        ),
                    );
                }
            }
            tokio::time::sleep(a.poll).await;
        }
        emit(
            "detect_event_s",
            watched(t1).map_or("-".into(), secs),
            &format!(
                "when {aname}'s event channel delivered PeerDown {fname} ('-': not by the end of the takeover; the backlog delays it)"
            ),
        );
        phase("return");
        let t2 = Instant::now();
        match a.fail {
            Fail::Stop => nodes[failed].start(&fname, &counters).await,
            Fail::Blackhole => iptables("-D", fip),
        }
        loop {
            let back = orphans.iter().all(|&c| {
                nodes[c].with(|h| h.current_parent()).flatten().as_deref() == Some(fname.as_str())
            });
            let released = back
                && !nodes[adopter]
                    .status()
                    .iter()
                    .any(|s| s.adopted_for.is_some());
            if released {
                emit(
                    "return_s",
                    secs(t2.elapsed()),
                    &format!(
                        "{fname} back: until all its children are its again and {aname} adopts none"
                    ),
                );
                break;
            }
            tokio::time::sleep(a.poll).await;
        }
    } else {
        phase("failure detection");
        watch_down(&plan[1].name, &fname);
        emit("failed_site", &fname, "the site that fails");
        let t1 = Instant::now();
        take_lag();
        fail_now();
        loop {
            let all = (0..n).filter(|&i| i != failed).all(|i| {
                nodes[i]
                    .status()
                    .iter()
                    .any(|s| s.name == fname && s.state == MepState::Down)
            });
            if all {
                let d = t1.elapsed();
                emit(
                    "detect_s",
                    secs(d),
                    &format!("until every other site sees {fname} DOWN"),
                );
                emit(
                    "detect_bound_s",
                    secs(bound),
                    "2 x keepalive timeout + 1 s (the takeover bound, for comparison)",
                );
                break;
            }
            tokio::time::sleep(a.poll).await;
        }
        emit(
            "detect_event_s",
            watched(t1).map_or("-".into(), secs),
            &format!(
                "when {}'s event channel delivered PeerDown {fname}",
                plan[1].name
            ),
        );
        phase("return");
        let t2 = Instant::now();
        match a.fail {
            Fail::Stop => nodes[failed].start(&fname, &counters).await,
            Fail::Blackhole => iptables("-D", fip),
        }
        loop {
            if (0..n).all(|i| check(i) == (true, true)) {
                emit(
                    "return_s",
                    secs(t2.elapsed()),
                    &format!("{fname} back: until every site sees every other UP again"),
                );
                break;
            }
            tokio::time::sleep(a.poll).await;
        }
    }

    phase("done");
    emit(
        "failover_lag_max_ms",
        take_lag(),
        "largest scheduling lag from the failure to the end",
    );
    let c = &counters;
    let g = |x: &AtomicU64| x.load(Ordering::Relaxed);
    emit(
        "events",
        format!(
            "peer_up:{},peer_down:{},services:{},site_metrics:{},parent_changed:{},adopted:{},released:{},adoption_refused:{},errors:{},other:{}",
            g(&c.peer_up),
            g(&c.peer_down),
            g(&c.services),
            g(&c.site_metrics),
            g(&c.parent_changed),
            g(&c.adopted),
            g(&c.released),
            g(&c.adoption_refused),
            g(&c.errors),
            g(&c.other)
        ),
        "MepEvents over the whole run, all sites",
    );
    print_reasons();
    emit("rss_final_kib", rss_kib(), "VmRSS at the end");
    emit("elapsed_s", secs(started().elapsed()), "whole run");
    let missed = BOUND_MISSED.load(Ordering::Relaxed);
    emit(
        "done",
        1,
        if missed == 0 {
            "every phase completed"
        } else {
            "every phase completed; a bound was missed (exit 3)"
        },
    );
    if missed == 0 { 0 } else { 3 }
}

// ---------------------------------------------------------------- stream

/// The size a frame of `m` would have, whatever the limit.
fn unlimited_frame_len(m: &Message) -> f64 {
    (frame::HEADER_LEN + m.to_json().map_or(0, |b| b.len())) as f64
}

/// Service `k` of the measured site, its figures at `version`: about 88
/// bytes of JSON, near the 78 of the issue's report.
fn stream_entry(k: usize, version: u64) -> ServiceEntry {
    ServiceEntry {
        service: format!("s{k}"),
        ip: IpAddr::V4(Ipv4Addr::new(10, (k >> 16) as u8, (k >> 8) as u8, k as u8)),
        port: 443,
        public_ip: None,
        public_port: None,
        state: ServiceState::Up,
        metrics: LoadMetrics {
            connections: Some(100 + version % 900),
            ..Default::default()
        },
    }
}

/// One peer's picture of the measured site, from its events.
#[derive(Default)]
struct PeerView {
    view: View,
    services_events: u64,
    full_events: u64,
}

struct StreamSites {
    /// Index 0 is the measured site; the others are its peers.
    handles: Vec<MepHandle>,
    views: Vec<Arc<Mutex<PeerView>>>,
    ips: Vec<Ipv4Addr>,
}

async fn stream_sites(a: &Args, net: u8) -> StreamSites {
    let plan = plan_mesh(a.peers + 1, net);
    let full = full_model(&plan, a);
    let mut handles = Vec::new();
    let mut views = Vec::new();
    let source = plan[0].name.clone();
    for i in 0..plan.len() {
        let (tx, mut rx) = mpsc::channel(4096);
        let h =
            sextant_mep::start(Arc::new(model_for(&plan, &full, i)), 1, tx).unwrap_or_else(|e| {
                eprintln!("mep_scale: cannot start {}: {e}", plan[i].name);
                std::process::exit(1)
            });
        let pv = Arc::new(Mutex::new(PeerView::default()));
        let (pv2, src) = (pv.clone(), source.clone());
        tokio::spawn(async move {
            while let Some(e) = rx.recv().await {
                match e {
                    MepEvent::Services {
                        from_site,
                        full,
                        entries,
                        removed,
                        ..
                    } if from_site == src => {
                        let mut v = pv2.lock().unwrap();
                        v.view.apply(full, &entries, &removed);
                        v.services_events += 1;
                        v.full_events += u64::from(full);
                    }
                    MepEvent::PeerDown { reason, .. } => tally(&format!("PeerDown: {reason}")),
                    MepEvent::BadFrame { reason, .. } => tally(&format!("BadFrame: {reason}")),
                    _ => {}
                }
            }
        });
        handles.push(h);
        views.push(pv);
    }
    let sites = StreamSites {
        handles,
        views,
        ips: plan.iter().map(|p| p.ip).collect(),
    };
    // Every peer UP with the measured site.
    loop {
        let up = sites.handles[0]
            .status()
            .iter()
            .filter(|s| s.state == MepState::Up)
            .count();
        if up == a.peers {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sites
}

impl StreamSites {
    /// Waits until every peer's view is `list`; returns how long it took.
    async fn wait_sync(&self, list: &[ServiceEntry], since: Instant, limit: Duration) -> Duration {
        loop {
            let all = self.views[1..].iter().all(|v| {
                let v = v.lock().unwrap();
                v.view.entries.len() == list.len() && v.view.matches(list)
            });
            if all {
                return since.elapsed();
            }
            if since.elapsed() > limit {
                eprintln!("mep_scale: peers not in sync within {limit:?}");
                BOUND_MISSED.fetch_add(1, Ordering::Relaxed);
                return since.elapsed();
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Payload bytes the measured site has sent so far (all its sockets).
    fn sent(&self) -> u64 {
        scan_sockets()
            .iter()
            .filter(|((local, _), _)| *local.ip() == self.ips[0])
            .map(|(_, b)| b.sent)
            .sum()
    }
}

async fn run_stream(a: Args) -> i32 {
    let ka = a.keepalive;
    let peers = a.peers as f64;
    emit("keepalive_ms", ka.as_millis(), "MEP keepalive timeout");
    emit("peers", a.peers, "peers of the measured site (flat mesh)");

    // 1. A site with many services comes into sync with its peers.
    phase("sync");
    let n = a.sync_services;
    let sites = stream_sites(&a, a.net.unwrap_or(92)).await;
    let list: Vec<ServiceEntry> = (0..n).map(|k| stream_entry(k, 1)).collect();
    let whole = unlimited_frame_len(&Message::ServiceStates(ServiceStates {
        entries: list.clone(),
        ..Default::default()
    }));
    emit("sync_services", n, "services of the measured site");
    emit(
        "sync_whole_frame_B",
        whole,
        &format!(
            "one ServiceStates with all of them (protocol before the stream: refused above {DEFAULT_MAX_FRAME} B)"
        ),
    );
    let mut sender = sextant_mep::sync::StreamSender::new();
    sender.set(&list);
    let parts = sender.snapshot(DEFAULT_MAX_FRAME - 2);
    emit(
        "sync_snapshot_parts",
        parts.len(),
        "frames of the split snapshot",
    );
    let b0 = sites.sent();
    let cpu0 = cpu_time();
    let t0 = Instant::now();
    sites.handles[0].publish(LocalReport {
        services: list.clone(),
        site: SiteMetrics::default(),
    });
    let took = sites.wait_sync(&list, t0, a.timeout / 2).await;
    let sent = sites.sent() - b0;
    emit(
        "sync_converge_s",
        secs(took),
        "publish of the whole list until every peer's event-applied view equals it",
    );
    emit(
        "sync_bytes_per_peer",
        format!("{:.0}", sent as f64 / peers),
        "bytes the site sent per peer to get there (TCP_INFO)",
    );
    emit(
        "sync_bytes_per_service",
        format!("{:.1}", sent as f64 / peers / n as f64),
        "of which per service",
    );
    emit(
        "sync_cpu_s",
        format!("{:.2}", (cpu_time() - cpu0).as_secs_f64()),
        "CPU seconds of the whole process (encode, decode, apply, compare)",
    );
    drop(sites);
    tokio::time::sleep(Duration::from_millis(200)).await;

    // 2. 10,000 services, 1 % of them changing every second.
    phase("churn");
    let m = a.churn_services;
    let per_s = ((m as f64 * a.churn_percent / 100.0).round() as usize).max(1);
    let sites = stream_sites(&a, a.net.unwrap_or(92).wrapping_add(1)).await;
    let mut versions = vec![1u64; m];
    let make = |v: &[u64]| -> Vec<ServiceEntry> {
        v.iter()
            .enumerate()
            .map(|(k, &ver)| stream_entry(k, ver))
            .collect()
    };
    let list = make(&versions);
    sites.handles[0].publish(LocalReport {
        services: list.clone(),
        site: SiteMetrics::default(),
    });
    sites.wait_sync(&list, Instant::now(), a.timeout / 4).await;
    let whole = unlimited_frame_len(&Message::ServiceStates(ServiceStates {
        entries: list.clone(),
        ..Default::default()
    }));
    let ev0: Vec<u64> = sites.views[1..]
        .iter()
        .map(|v| v.lock().unwrap().full_events)
        .collect();
    let window = a.window;
    let b0 = sites.sent();
    let t0 = Instant::now();
    let mut next = 0usize;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    let mut last = list;
    while t0.elapsed() < window {
        for _ in 0..per_s {
            versions[next % m] += 1;
            next += 1;
        }
        last = make(&versions);
        sites.handles[0].publish(LocalReport {
            services: last.clone(),
            site: SiteMetrics::default(),
        });
        tick.tick().await;
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let sent = sites.sent() - b0;
    let after = sent as f64 / peers / elapsed;
    sites
        .wait_sync(&last, Instant::now(), Duration::from_secs(10))
        .await;
    let fulls: u64 = sites.views[1..]
        .iter()
        .zip(&ev0)
        .map(|(v, f0)| v.lock().unwrap().full_events - f0)
        .sum();
    let rate = 1.0 / (ka / 3).as_secs_f64();
    emit("churn_services", m, "services of the measured site");
    emit(
        "churn_changes_per_s",
        per_s,
        "services changing every second",
    );
    emit(
        "churn_whole_list_B",
        whole,
        "one ServiceStates with the whole list (what every report was before)",
    );
    emit(
        "churn_before_Bps_per_peer",
        format!("{:.0}", whole * (rate + 1.0)),
        &format!(
            "before: the whole list every keepalive/3 ({rate:.2}/s) and at each change (1/s), keepalives aside"
        ),
    );
    emit(
        "churn_after_Bps_per_peer",
        format!("{after:.0}"),
        &format!(
            "after: deltas + heartbeats + site metrics + keepalives, measured (TCP_INFO) over {elapsed:.1} s"
        ),
    );
    emit(
        "churn_after_B_per_change",
        format!("{:.1}", after / per_s as f64),
        "of which per changed service",
    );
    emit(
        "churn_snapshots_during_window",
        fulls,
        "snapshots the peers received in the window (0: no resync needed)",
    );
    print_reasons();
    drop(sites);
    if BOUND_MISSED.load(Ordering::Relaxed) > 0 {
        3
    } else {
        0
    }
}
