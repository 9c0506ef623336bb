//! The site's state engine end to end (`crates/sextant-state`), through real
//! `sextant serve` processes on loopback addresses, real backends the test
//! starts and kills, and real DNS, HTTP and metric exchange sockets.
//!
//! Each scenario is configured as an operator would write it (appliance
//! syntax as seed 001 writes it): a child site's file holds only itself,
//! its parent and its own services, with no ADNS service and no vservers;
//! service names repeat across sites.
//!
//! Nothing here asserts a wall-clock duration except generous bounds; the
//! figures that matter are measured and printed.

use std::fs;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use sextant_api::{Explain, Service, Site, State, Status};
use sextant_test_support::prelude::*;

/// The binary under test.
const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

/// `-MEPKeepAliveTimeout 1`: a peer is DOWN after 1 s of silence.
const KA_1S: &str = "set gslb parameter -MEPKeepAliveTimeout 1\n";

fn zone() -> &'static str {
    "add dns soaRec example.com -originServer ns1.example.com -contact hostmaster.example.com\n\
     add dns nsRec example.com ns1.example.com\n"
}

/// A fast TCP monitor named as the appliance's built-in one.
const TCP_MONITOR: &str =
    "add lb monitor tcp TCP -interval 200 MSEC -resptimeout 100 MSEC -retries 2\n";

// ---------------------------------------------------------------------------
// Typed API reads
// ---------------------------------------------------------------------------

fn typed<T: DeserializeOwned>(at: &SiteServer, path: &str) -> Result<T, String> {
    let (code, body) = at
        .get(path)
        .map_err(|e| format!("site {}: GET {path}: {e}", at.name))?;
    if code != 200 {
        return Err(format!("site {}: GET {path} -> {code}: {body}", at.name));
    }
    serde_json::from_str(&body).map_err(|e| {
        format!(
            "site {}: GET {path}: not the API type ({e}): {body}",
            at.name
        )
    })
}

fn typed_at<T: DeserializeOwned>(addr: SocketAddr, path: &str) -> Result<T, String> {
    let (code, body) = http_get(addr, path).map_err(|e| format!("GET {addr}{path}: {e}"))?;
    if code != 200 {
        return Err(format!("GET {addr}{path} -> {code}: {body}"));
    }
    serde_json::from_str(&body)
        .map_err(|e| format!("GET {addr}{path}: not the API type ({e}): {body}"))
}

fn services(at: &SiteServer) -> Result<Vec<Service>, String> {
    typed(at, "/v1/services")
}

fn service(at: &SiteServer, name: &str) -> Result<Service, String> {
    services(at)?
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| format!("site {}: /v1/services has no {name}", at.name))
}

fn find_site(list: Vec<Site>, name: &str) -> Result<Site, String> {
    let names: Vec<String> = list.iter().map(|s| s.name.clone()).collect();
    list.into_iter()
        .find(|s| s.name.eq_ignore_ascii_case(name))
        .ok_or_else(|| format!("/v1/sites has no {name} (sites: {names:?})"))
}

fn site_entry(at: &SiteServer, name: &str) -> Result<Site, String> {
    find_site(typed(at, "/v1/sites")?, name).map_err(|e| format!("site {}: {e}", at.name))
}

fn status(at: &SiteServer) -> Result<Status, String> {
    typed(at, "/v1/status")
}

fn explain(at: &SiteServer, name: &str, client: Ipv4Addr) -> Result<Explain, String> {
    typed(at, &format!("/v1/explain?name={name}&client={client}"))
}

fn expect_mep(at: &SiteServer, other: &str, want: &str) -> Result<Site, String> {
    let e = site_entry(at, other)?;
    if e.mep != want {
        return Err(format!(
            "at {}: metric exchange with {other} is {}, want {want}: {e:?}",
            at.name, e.mep
        ));
    }
    Ok(e)
}

fn expect_service(at: &SiteServer, name: &str, want: State) -> Result<Service, String> {
    let s = service(at, name)?;
    if s.state != want {
        return Err(format!("at {}: {name} is not {want:?}: {s:?}", at.name));
    }
    Ok(s)
}

fn expect_answer(at: &SiteServer, name: &str, want: &[Ipv4Addr]) -> Result<(), String> {
    let got = at.try_query_a(name)?;
    if got != want {
        return Err(format!(
            "at {}: {name} answered {got:?}, want {want:?}",
            at.name
        ));
    }
    Ok(())
}

/// GET with short timeouts of its own (the harness's wait seconds); the
/// body of a 200 answer.
fn quick_get(addr: SocketAddr, path: &str, timeout: Duration) -> Result<String, String> {
    use std::io::Read;
    let mut s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(timeout)).unwrap();
    s.set_write_timeout(Some(timeout)).unwrap();
    s.write_all(
        format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .map_err(|e| format!("write: {e}"))?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)
        .map_err(|e| format!("no answer within {timeout:?}: {e}"))?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no header end in {text:?}"))?;
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        return Err(format!("not 200: {head}"));
    }
    Ok(body.to_string())
}

fn output_text(out: &std::process::Output) -> String {
    format!(
        "--- stdout ---\n{}--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

// ---------------------------------------------------------------------------
// A `sextant serve` process the test starts itself (exact arguments, exit
// status, queries from the moment it starts)
// ---------------------------------------------------------------------------

struct Proc {
    name: String,
    child: Option<Child>,
    log_path: PathBuf,
    api: SocketAddr,
    started: Instant,
}

impl Proc {
    /// Spawns `sextant ARGS`, logging to DIR/NAME.log; does not wait.
    fn spawn(dir: &Path, name: &str, args: &[&str], api: SocketAddr) -> Proc {
        use std::os::unix::process::CommandExt;
        let log_path = dir.join(format!("{name}.log"));
        let log = fs::File::create(&log_path).expect("create log");
        let mut cmd = SEXTANT.command();
        cmd.args(args)
            .env(
                "RUST_LOG",
                std::env::var("SEXTANT_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .env("RUST_BACKTRACE", "1")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone log"))
            .stderr(log);
        // SAFETY: prctl(2) only, between fork and exec: the server gets
        // SIGKILL if the test process dies without running destructors.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let started = Instant::now();
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {}: {e}", SEXTANT.0));
        Proc {
            name: name.to_string(),
            child: Some(child),
            log_path,
            api,
            started,
        }
    }

    /// `sextant serve --config CONFIG --local-site SITE --api-listen API
    /// [--dns-listen DNS]`, waiting until its API answers.
    fn serve(
        dir: &Path,
        site: &str,
        config: &str,
        api: SocketAddr,
        dns: Option<SocketAddr>,
    ) -> Proc {
        let config_path = dir.join(format!("{site}.conf"));
        fs::write(&config_path, config).expect("write config");
        let mut p = Proc::spawn(dir, site, &serve_args(&config_path, site, api, dns), api);
        p.wait_api();
        p
    }

    fn wait_api(&mut self) {
        let end = Instant::now() + READY;
        loop {
            if let Some(st) = self.try_wait() {
                panic!(
                    "{} exited before its API answered ({st}); log:\n{}",
                    self.name,
                    self.log()
                );
            }
            if let Ok((200, _)) = http_get(self.api, "/v1/status") {
                return;
            }
            assert!(
                Instant::now() < end,
                "{}: API not answering within {READY:?}; log:\n{}",
                self.name,
                self.log()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    fn pid(&self) -> i32 {
        self.child.as_ref().expect("running").id() as i32
    }

    fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child.as_mut().and_then(|c| c.try_wait().unwrap())
    }

    /// Waits up to `deadline` for the process to exit by itself.
    fn wait_exit(&mut self, deadline: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + deadline;
        loop {
            if let Some(st) = self.try_wait() {
                self.child = None;
                return Some(st);
            }
            if Instant::now() >= end {
                return None;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    fn log(&self) -> String {
        fs::read_to_string(&self.log_path).unwrap_or_default()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            if let Ok(None) = child.try_wait() {
                // SAFETY: kill(2) on our own, not yet reaped child.
                unsafe {
                    libc::kill(child.id() as i32, libc::SIGTERM);
                }
                let end = Instant::now() + Duration::from_secs(5);
                while Instant::now() < end {
                    if let Ok(Some(_)) = child.try_wait() {
                        break;
                    }
                    thread::sleep(Duration::from_millis(20));
                }
                let _ = child.kill();
            }
            let _ = child.wait();
        }
        if thread::panicking() {
            let log = self.log();
            let lines: Vec<&str> = log.lines().collect();
            let tail = &lines[lines.len().saturating_sub(200)..];
            eprintln!(
                "===== {} log (last {} lines, {:?} after start) =====\n{}\n===== end of {} =====",
                self.name,
                tail.len(),
                self.started.elapsed(),
                tail.join("\n"),
                self.name
            );
        }
    }
}

fn serve_args<'a>(
    config: &'a Path,
    site: &'a str,
    api: SocketAddr,
    dns: Option<SocketAddr>,
) -> Vec<&'a str> {
    // Leaked: a handful of short strings per test.
    let api: &'a str = Box::leak(api.to_string().into_boxed_str());
    let mut args = vec![
        "serve",
        "--config",
        config.to_str().expect("utf-8 path"),
        "--local-site",
        site,
        "--api-listen",
        api,
        "--udp-workers",
        "1",
    ];
    if let Some(dns) = dns {
        args.push("--dns-listen");
        args.push(Box::leak(dns.to_string().into_boxed_str()));
    }
    args
}

fn api_of(ip: Ipv4Addr) -> SocketAddr {
    SocketAddr::from((ip, API_PORT))
}

fn dns_of(ip: Ipv4Addr) -> SocketAddr {
    SocketAddr::from((ip, DNS_PORT))
}

// ---------------------------------------------------------------------------
// a. Service names repeat across children
// ---------------------------------------------------------------------------

/// Samples P every 100 ms for about 3 s: `web_c1` UP in `/v1/services`
/// and `c1.example.com` answered with `ip1`. Returns the samples and when
/// `web_c2` was first seen DOWN.
fn watch_web_c1(
    p: &SiteServer,
    ip1: Ipv4Addr,
    after: &str,
    failures: &mut Vec<String>,
) -> (usize, Option<Duration>) {
    let t0 = Instant::now();
    let mut samples = 0;
    let mut c2_down_after = None;
    while t0.elapsed() < Duration::from_secs(3) {
        let ms = t0.elapsed().as_millis();
        match services(p) {
            Ok(list) => {
                samples += 1;
                match list.iter().find(|s| s.name == "web_c1") {
                    Some(s) if s.state == State::Up => {}
                    other => failures.push(format!("{ms} ms after {after}: web_c1 is {other:?}")),
                }
                if c2_down_after.is_none()
                    && list
                        .iter()
                        .any(|s| s.name == "web_c2" && s.state == State::Down)
                {
                    c2_down_after = Some(t0.elapsed());
                }
            }
            Err(e) => failures.push(format!("{ms} ms after {after}: {e}")),
        }
        match p.try_query_a("c1.example.com") {
            Ok(got) if got == [ip1] => {}
            other => failures.push(format!(
                "{ms} ms after {after}: c1.example.com answered {other:?}, want [{ip1}]"
            )),
        }
        thread::sleep(Duration::from_millis(100));
    }
    (samples, c2_down_after)
}

/// Parent P answers for two children C1 and C2, each a process of its own
/// with a local service called `svc_c1` (different backends). At P they
/// are `web_c1` (C1) and `web_c2` (C2). C2's backend dies: `web_c2` goes
/// DOWN at P and `web_c1` stays UP in every sample, and P keeps answering
/// C1's address for C1's domain: reports are matched by owning site and
/// IP:port, never by name.
#[test]
fn names_repeat_across_children_and_each_report_reaches_its_own_service() {
    let net = Net::for_sites("state_names", 3);
    let scratch = net.scratch();
    let (p_ip, c1_ip, c2_ip) = (net.site_ip(0), net.site_ip(1), net.site_ip(2));
    let b1 = Backend::tcp(net.svc_ip(0));
    let b2 = Backend::tcp(net.svc_ip(1));
    let (ip1, ip2) = (b1.ip(), b2.ip());

    let mut pconf = format!(
        "add service adns1 {p_ip} ADNS {DNS_PORT}\n{KA_1S}\
         add gslb site P {p_ip}\n\
         add gslb site C1 {c1_ip} -parentSite P\n\
         add gslb site C2 {c2_ip} -parentSite P\n{}",
        zone()
    );
    for (n, b) in [(1, &b1), (2, &b2)] {
        pconf += &format!(
            "add gslb service web_c{n} {} TCP {} -siteName C{n}\n\
             add gslb vserver vs_c{n} TCP -lbMethod ROUNDROBIN -EDR ENABLED\n\
             bind gslb vserver vs_c{n} -serviceName web_c{n}\n\
             bind gslb vserver vs_c{n} -domainName c{n}.example.com -TTL 5\n",
            b.ip(),
            b.port()
        );
    }
    // Each child: itself, its parent, its own service (the same name in
    // both children), monitored there. No ADNS, no vserver.
    let child_conf = |me: &str, ip: Ipv4Addr, b: &Backend| {
        format!(
            "{KA_1S}add gslb site P {p_ip}\n\
             add gslb site {me} {ip} -parentSite P\n{TCP_MONITOR}\
             add gslb service svc_c1 {} TCP {} -siteName {me}\n\
             bind gslb service svc_c1 -monitorName tcp\n",
            b.ip(),
            b.port()
        )
    };
    let p = SiteServer::start(SEXTANT, &scratch.0, "P", p_ip, &pconf, None);
    let c1 = SiteServer::start(
        SEXTANT,
        &scratch.0,
        "C1",
        c1_ip,
        &child_conf("C1", c1_ip, &b1),
        None,
    );
    let mut c2 = SiteServer::start(
        SEXTANT,
        &scratch.0,
        "C2",
        c2_ip,
        &child_conf("C2", c2_ip, &b2),
        None,
    );

    eventually_ok(EVENTUALLY, "P linked with both children, both UP", || {
        expect_mep(&p, "C1", "UP")?;
        expect_mep(&p, "C2", "UP")?;
        for (svc, site) in [("web_c1", "C1"), ("web_c2", "C2")] {
            let s = expect_service(&p, svc, State::Up)?;
            if !s.reason.contains("metric exchange") || !s.reason.contains(site) {
                return Err(format!("{svc}'s reason does not name {site}: {s:?}"));
            }
        }
        expect_answer(&p, "c1.example.com", &[ip1])?;
        expect_answer(&p, "c2.example.com", &[ip2])
    });

    // C2's backend dies. Sample P every 100 ms for about 3 s.
    let w1_before = service(&p, "web_c1").unwrap_or_else(|e| panic!("{e}"));
    b2.kill();
    let mut failures: Vec<String> = Vec::new();
    let (samples, c2_down_after) = watch_web_c1(&p, ip1, "C2's backend killed", &mut failures);
    eprintln!(
        "{samples} samples of P's /v1/services in 3 s; web_c2 DOWN at P after {c2_down_after:?}"
    );
    eventually_ok(EVENTUALLY, "web_c2 DOWN at P, told by C2", || {
        let s = expect_service(&p, "web_c2", State::Down)?;
        if !s.reason.contains("C2") {
            return Err(format!("web_c2's reason does not name C2: {s:?}"));
        }
        expect_answer(&p, "c2.example.com", &[])
    });
    let w1 = service(&p, "web_c1").unwrap_or_else(|e| panic!("{e}"));
    if w1.state != State::Up || w1.last_change != w1_before.last_change {
        failures.push(format!(
            "web_c1 changed state after the kill (last_change {:?} before): {w1:?}",
            w1_before.last_change
        ));
    }
    // Each child sees only its own svc_c1.
    expect_service(&c1, "svc_c1", State::Up).unwrap_or_else(|e| panic!("{e}"));
    expect_service(&c2, "svc_c1", State::Down).unwrap_or_else(|e| panic!("{e}"));

    // C2 itself goes away (SIGKILL): its service is DOWN at P for want of
    // a report, C1's is not touched.
    c2.kill();
    let (samples2, _) = watch_web_c1(&p, ip1, "C2's process killed", &mut failures);
    eventually_ok(EVENTUALLY, "P sees C2 DOWN", || {
        expect_mep(&p, "C2", "DOWN")?;
        expect_service(&p, "web_c2", State::Down).map(|_| ())
    });
    let w1 = service(&p, "web_c1").unwrap_or_else(|e| panic!("{e}"));
    if w1.state != State::Up || w1.last_change != w1_before.last_change {
        failures.push(format!("web_c1 changed state after C2 went away: {w1:?}"));
    }
    assert!(
        failures.is_empty(),
        "names repeated across children ({samples} + {samples2} samples):\n{}",
        failures.join("\n")
    );
    drop((p, c1, c2));
    drop(scratch);
}

/// Names *and* private addresses repeat: both children run `svc_c1` on
/// the same private IP:port (the seed's "private IP address of the load
/// balancing virtual server"), told apart by their `-publicIP`, as seed
/// 001 writes it (`add gslb service NAME PRIVATE_IP http 80 -sitename
/// CHILD -publicip PUBLIC_IP`). C2's monitor probes another port
/// (`-destPort`), so C2's state can change while C1's stays UP; P must
/// follow each child for its own service only.
#[test]
fn the_same_private_address_at_two_children_is_told_apart_by_site_and_public_ip() {
    let net = Net::for_sites("state_same_private", 3);
    let scratch = net.scratch();
    let (p_ip, c1_ip, c2_ip) = (net.site_ip(0), net.site_ip(1), net.site_ip(2));
    let shared = Backend::tcp(net.svc_ip(0));
    let (priv_ip, priv_port) = (shared.ip(), shared.port());
    let c2_probe_port = Net::closed_port(priv_ip);
    let (pub1, pub2) = (net.svc_ip(11), net.svc_ip(12));
    let mut pconf = format!(
        "add service adns1 {p_ip} ADNS {DNS_PORT}\n{KA_1S}\
         add gslb site P {p_ip}\n\
         add gslb site C1 {c1_ip} -parentSite P\n\
         add gslb site C2 {c2_ip} -parentSite P\n{}",
        zone()
    );
    for (n, public) in [(1, pub1), (2, pub2)] {
        pconf += &format!(
            "add gslb service web_c{n} {priv_ip} TCP {priv_port} -siteName C{n} -publicIP {public}\n\
             add gslb vserver vs_c{n} TCP -lbMethod ROUNDROBIN -EDR ENABLED\n\
             bind gslb vserver vs_c{n} -serviceName web_c{n}\n\
             bind gslb vserver vs_c{n} -domainName c{n}.example.com -TTL 5\n"
        );
    }
    let c1conf = format!(
        "{KA_1S}add gslb site P {p_ip}\n\
         add gslb site C1 {c1_ip} -parentSite P\n{TCP_MONITOR}\
         add gslb service svc_c1 {priv_ip} TCP {priv_port} -siteName C1 -publicIP {pub1}\n\
         bind gslb service svc_c1 -monitorName tcp\n"
    );
    let c2conf = format!(
        "{KA_1S}add gslb site P {p_ip}\n\
         add gslb site C2 {c2_ip} -parentSite P\n\
         add lb monitor tcp TCP -interval 200 MSEC -resptimeout 100 MSEC -retries 2 -destPort {c2_probe_port}\n\
         add gslb service svc_c1 {priv_ip} TCP {priv_port} -siteName C2 -publicIP {pub2}\n\
         bind gslb service svc_c1 -monitorName tcp\n"
    );
    let p = SiteServer::start(SEXTANT, &scratch.0, "P", p_ip, &pconf, None);
    let _c1 = SiteServer::start(SEXTANT, &scratch.0, "C1", c1_ip, &c1conf, None);
    let _c2 = SiteServer::start(SEXTANT, &scratch.0, "C2", c2_ip, &c2conf, None);

    let settled = |c2_up: bool| -> Result<(), String> {
        let want = if c2_up { State::Up } else { State::Down };
        let answer2: Vec<Ipv4Addr> = if c2_up { vec![pub2] } else { vec![] };
        expect_mep(&p, "C1", "UP")?;
        expect_mep(&p, "C2", "UP")?;
        expect_service(&p, "web_c1", State::Up)?;
        let s2 = expect_service(&p, "web_c2", want)?;
        if !s2.reason.contains("site C2 reports it") {
            return Err(format!("web_c2's state is not C2's report: {s2:?}"));
        }
        expect_answer(&p, "c1.example.com", &[pub1])?;
        expect_answer(&p, "c2.example.com", &answer2)
    };
    eventually_ok(
        EVENTUALLY,
        "web_c1 UP, web_c2 DOWN (C2 probes a closed port)",
        || settled(false),
    );
    let w1_before = service(&p, "web_c1").unwrap_or_else(|e| panic!("{e}"));
    let mut failures = Vec::new();

    // C2's probe port comes alive: C2 reports svc_c1 UP.
    let c2_target = Backend::tcp_at(SocketAddr::from((priv_ip, c2_probe_port)));
    eventually_ok(EVENTUALLY, "web_c2 UP, reported by C2", || settled(true));
    watch_web_c1(&p, pub1, "C2's service came UP", &mut failures);
    // And goes again.
    c2_target.kill();
    eventually_ok(EVENTUALLY, "web_c2 DOWN again", || settled(false));
    watch_web_c1(&p, pub1, "C2's service went DOWN", &mut failures);
    let w1 = service(&p, "web_c1").unwrap_or_else(|e| panic!("{e}"));
    if w1.state != State::Up || w1.last_change != w1_before.last_change {
        failures.push(format!(
            "web_c1 changed state while only C2's service did (last_change {:?} before): {w1:?}",
            w1_before.last_change
        ));
    }
    assert!(
        failures.is_empty(),
        "the same private address at two children:\n{}",
        failures.join("\n")
    );
    drop(p);
    drop(scratch);
}

// ---------------------------------------------------------------------------
// b. Services configured at the parent only
// ---------------------------------------------------------------------------

/// Seed 001: "GSLB services do not always have to be configured on a child
/// site." P configures two services of child C1 that C1's file does not
/// have: `web_mon` with a TCP monitor bound at P follows its backend;
/// `web_bare` with none is DOWN with a reason that says what to configure,
/// also in `/v1/explain`'s `down` list.
#[test]
fn services_configured_only_at_the_parent_follow_its_monitor_or_say_what_to_add() {
    let net = Net::for_sites("state_unreported", 2);
    let scratch = net.scratch();
    let (p_ip, c_ip) = (net.site_ip(0), net.site_ip(1));
    let own = Backend::tcp(net.svc_ip(0));
    let mon = Backend::tcp(net.svc_ip(1));
    let bare = Backend::tcp(net.svc_ip(2));
    let pconf = format!(
        "add service adns1 {p_ip} ADNS {DNS_PORT}\n{KA_1S}\
         add gslb site P {p_ip}\n\
         add gslb site C1 {c_ip} -parentSite P\n{}{TCP_MONITOR}\
         add gslb service web_c1 {} TCP {} -siteName C1\n\
         add gslb service web_mon {} TCP {} -siteName C1\n\
         bind gslb service web_mon -monitorName tcp\n\
         add gslb service web_bare {} TCP {} -siteName C1\n\
         add gslb vserver vs_c1 TCP -lbMethod ROUNDROBIN -EDR ENABLED\n\
         bind gslb vserver vs_c1 -serviceName web_c1\n\
         bind gslb vserver vs_c1 -domainName c1.example.com -TTL 5\n\
         add gslb vserver vs_mon TCP -lbMethod ROUNDROBIN -EDR ENABLED\n\
         bind gslb vserver vs_mon -serviceName web_mon\n\
         bind gslb vserver vs_mon -domainName mon.example.com -TTL 5\n\
         add gslb vserver vs_bare TCP -lbMethod ROUNDROBIN -EDR ENABLED\n\
         bind gslb vserver vs_bare -serviceName web_bare\n\
         bind gslb vserver vs_bare -domainName bare.example.com -TTL 5\n",
        zone(),
        own.ip(),
        own.port(),
        mon.ip(),
        mon.port(),
        bare.ip(),
        bare.port()
    );
    let cconf = format!(
        "{KA_1S}add gslb site P {p_ip}\n\
         add gslb site C1 {c_ip} -parentSite P\n{TCP_MONITOR}\
         add gslb service svc_c1 {} TCP {} -siteName C1\n\
         bind gslb service svc_c1 -monitorName tcp\n",
        own.ip(),
        own.port()
    );
    let p = SiteServer::start(SEXTANT, &scratch.0, "P", p_ip, &pconf, None);
    let c = SiteServer::start(SEXTANT, &scratch.0, "C1", c_ip, &cconf, None);
    let bare_addr = format!("{}:{}", bare.ip(), bare.port());

    eventually_ok(
        EVENTUALLY,
        "P linked with C1, every service settled",
        || {
            expect_mep(&p, "C1", "UP")?;
            expect_service(&p, "web_c1", State::Up)?;
            let m = expect_service(&p, "web_mon", State::Up)?;
            if !m.reason.starts_with("monitor tcp") {
                return Err(format!("web_mon's reason is not its monitor's: {m:?}"));
            }
            let b = expect_service(&p, "web_bare", State::Down)?;
            for want in [
                "reports no service at",
                "add gslb service",
                &bare_addr,
                "C1",
            ] {
                if !b.reason.contains(want) {
                    return Err(format!("web_bare's reason lacks {want:?}: {b:?}"));
                }
            }
            expect_answer(&p, "c1.example.com", &[own.ip()])?;
            expect_answer(&p, "mon.example.com", &[mon.ip()])?;
            expect_answer(&p, "bare.example.com", &[])
        },
    );
    let e = explain(&p, "bare.example.com", Ipv4Addr::LOCALHOST).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        e.down.iter().any(|d| d.contains("web_bare")
            && d.contains("reports no service at")
            && d.contains("add gslb service")),
        "/v1/explain at P does not list web_bare in down with the reason: {e:?}"
    );
    eprintln!("explain bare.example.com: down = {:?}", e.down);

    // web_mon's backend dies: P's own monitor takes it DOWN.
    mon.kill();
    eventually_ok(EVENTUALLY, "web_mon DOWN at P by its monitor", || {
        let m = expect_service(&p, "web_mon", State::Down)?;
        if !m.reason.starts_with("monitor tcp") {
            return Err(format!("web_mon's reason is not its monitor's: {m:?}"));
        }
        expect_answer(&p, "mon.example.com", &[])
    });
    let e = explain(&p, "mon.example.com", Ipv4Addr::LOCALHOST).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        e.down
            .iter()
            .any(|d| d.contains("web_mon") && d.contains("monitor tcp")),
        "/v1/explain does not list web_mon as DOWN by its monitor: {e:?}"
    );
    expect_service(&p, "web_c1", State::Up).unwrap_or_else(|e| panic!("{e}"));

    // C1 adds a service at web_bare's address, under a name of its own
    // (reload): P matches the report by site and IP:port, and web_bare
    // takes its state from C1 now.
    c.reload(&format!(
        "{cconf}add gslb service svc_extra {} TCP {} -siteName C1\n\
         bind gslb service svc_extra -monitorName tcp\n",
        bare.ip(),
        bare.port()
    ));
    eventually_ok(EVENTUALLY, "web_bare UP at P, reported by C1", || {
        let b = expect_service(&p, "web_bare", State::Up)?;
        if !b.reason.contains("metric exchange") || !b.reason.contains("C1") {
            return Err(format!("web_bare's reason is not C1's report: {b:?}"));
        }
        expect_answer(&p, "bare.example.com", &[bare.ip()])
    });
    drop((p, c));
    drop(scratch);
}

// ---------------------------------------------------------------------------
// c. A child with no DNS listener
// ---------------------------------------------------------------------------

/// Socket inodes of a process's open descriptors.
fn socket_inodes(pid: i32) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(dir) = fs::read_dir(format!("/proc/{pid}/fd")) {
        for e in dir.flatten() {
            if let Ok(t) = fs::read_link(e.path()) {
                let t = t.to_string_lossy().into_owned();
                if let Some(i) = t.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']')) {
                    out.push(i.to_string());
                }
            }
        }
    }
    out
}

/// Local ports of the sockets in /proc/net/FILE (tcp, udp, ...) that belong
/// to `inodes`; for TCP only LISTEN sockets (state 0A).
fn ports_of(file: &str, inodes: &[String]) -> Vec<u16> {
    let text = fs::read_to_string(format!("/proc/net/{file}")).unwrap_or_default();
    let tcp = file.starts_with("tcp");
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 10 || !inodes.iter().any(|i| i == f[9]) {
                return None;
            }
            if tcp && f[3] != "0A" {
                return None;
            }
            let port = f[1].rsplit(':').next()?;
            u16::from_str_radix(port, 16).ok()
        })
        .collect()
}

/// A child's file has no ADNS service: `sextant serve --config C.conf
/// --local-site C` (no --dns-listen) starts, logs that it is a child and
/// answers no DNS, `/v1/status` works, and its parent answers for it.
#[test]
fn a_child_without_an_adns_service_starts_and_opens_no_dns_socket() {
    let net = Net::for_sites("state_child_nodns", 2);
    let scratch = net.scratch();
    let (p_ip, c_ip) = (net.site_ip(0), net.site_ip(1));
    let b = Backend::tcp(net.svc_ip(0));
    let cconf = format!(
        "{KA_1S}add gslb site P {p_ip}\n\
         add gslb site C {c_ip} -parentSite P\n{TCP_MONITOR}\
         add gslb service svc_c {} TCP {} -siteName C\n\
         bind gslb service svc_c -monitorName tcp\n",
        b.ip(),
        b.port()
    );
    let mut c = Proc::serve(&scratch.0, "C", &cconf, api_of(c_ip), None);
    eprintln!(
        "child C answered its API {:?} after start",
        c.started.elapsed()
    );
    let st: Status = typed_at(c.api, "/v1/status").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(st.local_site.as_deref(), Some("C"), "{st:?}");
    assert!(st.mep.is_some(), "metric exchange not running at C: {st:?}");
    let log = c.log();
    assert!(
        log.contains("this node is a child site") && log.contains("answers no DNS"),
        "C's log does not say it is a child that answers no DNS:\n{log}"
    );
    assert!(
        !log.contains("DNS answering"),
        "C's log says it answers DNS:\n{log}"
    );
    // No DNS socket at all: no UDP socket, no TCP listener but the API and
    // metric exchange.
    let inodes = socket_inodes(c.pid());
    assert!(!inodes.is_empty(), "no sockets found for pid {}", c.pid());
    let udp: Vec<u16> = ports_of("udp", &inodes)
        .into_iter()
        .chain(ports_of("udp6", &inodes))
        .collect();
    let tcp: Vec<u16> = ports_of("tcp", &inodes)
        .into_iter()
        .chain(ports_of("tcp6", &inodes))
        .collect();
    assert!(udp.is_empty(), "the child has UDP sockets on ports {udp:?}");
    assert!(
        tcp.iter().all(|p| *p == API_PORT || *p == MEP_PORT),
        "the child listens on TCP ports {tcp:?} (only the API {API_PORT} and metric exchange {MEP_PORT} expected)"
    );
    let dns = Dns::new(dns_of(c_ip));
    let q = build_query("example.com", RecordType::SOA, None)
        .to_vec()
        .unwrap();
    if let Ok(Some(r)) = dns.raw_udp(&q, Duration::from_millis(500)) {
        panic!("the child answered DNS on {}: {r:?}", dns.server);
    }
    assert!(
        TcpStream::connect_timeout(&dns.server, Duration::from_secs(1)).is_err(),
        "the child accepts TCP on {}",
        dns.server
    );

    // Its parent dials it and answers for its service.
    let pconf = format!(
        "add service adns1 {p_ip} ADNS {DNS_PORT}\n{KA_1S}\
         add gslb site P {p_ip}\n\
         add gslb site C {c_ip} -parentSite P\n{}\
         add gslb service web_c {} TCP {} -siteName C\n\
         add gslb vserver vs_c TCP -lbMethod ROUNDROBIN -EDR ENABLED\n\
         bind gslb vserver vs_c -serviceName web_c\n\
         bind gslb vserver vs_c -domainName c.example.com -TTL 5\n",
        zone(),
        b.ip(),
        b.port()
    );
    let p = SiteServer::start(SEXTANT, &scratch.0, "P", p_ip, &pconf, None);
    eventually_ok(EVENTUALLY, "P answers the child's service", || {
        expect_mep(&p, "C", "UP")?;
        let sites: Vec<Site> = typed_at(c.api, "/v1/sites")?;
        let me = find_site(sites, "C")?;
        if me.current_parent.as_deref() != Some("P") {
            return Err(format!("C's current parent: {me:?}"));
        }
        expect_service(&p, "web_c", State::Up)?;
        expect_answer(&p, "c.example.com", &[b.ip()])
    });
    assert!(c.try_wait().is_none(), "the child exited");

    // A reload (SIGHUP) keeps it without DNS sockets.
    // SAFETY: kill(2) on our own, not yet reaped child.
    assert_eq!(unsafe { libc::kill(c.pid(), libc::SIGHUP) }, 0);
    eventually_ok(EVENTUALLY, "the child reloads", || {
        let st: Status = typed_at(c.api, "/v1/status")?;
        if st.generation >= 2 {
            Ok(())
        } else {
            Err(format!("generation {}", st.generation))
        }
    });
    let inodes = socket_inodes(c.pid());
    let udp: Vec<u16> = ports_of("udp", &inodes)
        .into_iter()
        .chain(ports_of("udp6", &inodes))
        .collect();
    assert!(
        udp.is_empty(),
        "after a reload the child has UDP sockets on {udp:?}"
    );
    assert!(
        !c.log().contains("DNS answering"),
        "the child answers DNS after a reload:\n{}",
        c.log()
    );
    drop(p);
    drop(c);
    drop(scratch);
}

// ---------------------------------------------------------------------------
// d. Backup parents must be added first; f. warnings
// ---------------------------------------------------------------------------

/// Seed 001's backup parent example (SiteP1..3 with child_site1..3 and the
/// three backup lists). With `wrong_order`, SiteP1's list comes before
/// `add gslb site SiteP3`. Returns the text, and the line and column of
/// "SiteP3" in SiteP1's list.
fn backup_parent_example(net: &Net, wrong_order: bool) -> (String, usize, usize) {
    let p1_list = "set gslb site SiteP1 -backupParentlist SiteP2 SiteP3";
    let mut lines: Vec<String> = vec![
        format!("add service adns1 {} ADNS {DNS_PORT}", net.site_ip(0)),
        format!("add gslb site SiteP1 {}", net.site_ip(0)),
        format!("add gslb site SiteP2 {}", net.site_ip(1)),
    ];
    if wrong_order {
        lines.push(p1_list.to_string());
    }
    lines.push(format!("add gslb site SiteP3 {}", net.site_ip(2)));
    for i in 1..=3u8 {
        lines.push(format!(
            "add gslb site child_site{i} {} -parentSite SiteP{i}",
            net.site_ip(2 + i)
        ));
    }
    if !wrong_order {
        lines.push(p1_list.to_string());
    }
    lines.push("set gslb site SiteP2 -backupParentlist SiteP3 SiteP1".into());
    lines.push("set gslb site SiteP3 -backupParentlist SiteP1 SiteP2".into());
    let line = lines.iter().position(|l| l == p1_list).unwrap() + 1;
    let column = p1_list.find("SiteP3").unwrap() + 1;
    let mut text = lines.join("\n");
    text.push('\n');
    text += zone();
    (text, line, column)
}

/// `sextant check` and `sextant serve` on the seed's backup parent example
/// with SiteP1's backup list before `add gslb site SiteP3`: exit 1 with
/// `FILE:LINE:COLUMN:` and a reason naming SiteP3; in the right order the
/// file is valid.
#[test]
fn backup_parent_list_before_the_site_is_added_is_refused_at_its_column() {
    let net = Net::for_sites("state_backup_order", 6);
    let scratch = net.scratch();
    let (wrong, line, column) = backup_parent_example(&net, true);
    let path = scratch.write("parents.conf", &wrong);
    let out = SEXTANT.run(&["check", &path]);
    let text = output_text(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "check of the wrong order:\n{text}"
    );
    let at = format!("{path}:{line}:{column}:");
    let error = text
        .lines()
        .find(|l| l.starts_with(&at))
        .unwrap_or_else(|| panic!("no line starting with {at:?}:\n{text}"))
        .to_string();
    assert!(
        error.contains("SiteP3") && error.contains("backup parent"),
        "the error does not name the backup parent SiteP3: {error}"
    );
    assert!(
        text.contains("1 error(s)"),
        "exactly one error expected (the other lists come after every site):\n{text}"
    );
    eprintln!("check: {error}");

    // serve refuses to start with the same message.
    let mut serve = Proc::spawn(
        &scratch.0,
        "serve_wrong_order",
        &serve_args(
            Path::new(&path),
            "SiteP1",
            api_of(net.site_ip(0)),
            Some(dns_of(net.site_ip(0))),
        ),
        api_of(net.site_ip(0)),
    );
    let st = serve.wait_exit(READY);
    let log = serve.log();
    let st = st.unwrap_or_else(|| {
        panic!("sextant serve still running {READY:?} after start on the wrong order:\n{log}")
    });
    assert!(
        !st.success(),
        "serve exited {st} on the wrong order:\n{log}"
    );
    assert!(
        log.contains(&error),
        "serve's message does not carry check's error {error:?}:\n{log}"
    );

    let (right, _, _) = backup_parent_example(&net, false);
    let path = scratch.write("parents-ok.conf", &right);
    let out = SEXTANT.run(&["check", &path]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "check of the right order:\n{}",
        output_text(&out)
    );
    drop(scratch);
}

/// `-automaticConfigSync ENABLED` is accepted without effect: `sextant
/// check` prints `warning: FILE:LINE: -automaticConfigSync ...` and exits
/// 0; `sextant serve` logs the same warning at start.
#[test]
fn automatic_config_sync_is_warned_about_by_check_and_at_start() {
    let net = Net::for_sites("state_warn_sync", 2);
    let scratch = net.scratch();
    let (p1, p2) = (net.site_ip(0), net.site_ip(1));
    let conf = format!(
        "add service adns1 {p1} ADNS {DNS_PORT}\n\
         add gslb site SiteP1 {p1}\n\
         add gslb site SiteP2 {p2}\n\
         set gslb parameter -automaticConfigSync ENABLED\n{}",
        zone()
    );
    let line = 4;
    let site = SiteServer::start(SEXTANT, &scratch.0, "SiteP1", p1, &conf, None);
    let path = site.config.to_str().unwrap().to_string();
    let out = SEXTANT.run(&["check", &path]);
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let want = format!("warning: {path}:{line}: -automaticConfigSync");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let warning = stderr
        .lines()
        .find(|l| l.starts_with(&want))
        .unwrap_or_else(|| panic!("check printed no line starting with {want:?}:\n{text}"))
        .to_string();
    eprintln!("check: {warning}");
    let logged = warning.trim_start_matches("warning: ");
    eventually_ok(EVENTUALLY, "serve logs the warning", || {
        let log = site.log();
        if log.contains(logged) {
            Ok(())
        } else {
            Err(format!("no {logged:?} in the log:\n{log}"))
        }
    });
    drop(site);
    drop(scratch);
}

// ---------------------------------------------------------------------------
// 5. Persistence sessions across parents
// ---------------------------------------------------------------------------

/// Persistence timeout of the session exchange test: the smallest round
/// figure the syntax allows that keeps the test short (`-timeout 3 SEC`;
/// the option's unit is minutes unless given, and seconds are accepted).
const PERSIST: Duration = Duration::from_secs(3);

fn persistence_config(net: &Net, me: u8, backends: &[Backend], p2_exchange: bool) -> String {
    let mut c = format!(
        "add service adns1 {} ADNS {DNS_PORT}\n{KA_1S}\
         add gslb site P1 {}\n\
         add gslb site P2 {}\n",
        net.site_ip(me),
        net.site_ip(0),
        net.site_ip(1)
    );
    if !p2_exchange {
        c += "set gslb site P2 -sessionExchange DISABLED\n";
    }
    c += zone();
    c += TCP_MONITOR;
    for (i, b) in backends.iter().enumerate() {
        c += &format!(
            "add gslb service svc{n} {} TCP {} -siteName P{site}\n\
             bind gslb service svc{n} -monitorName tcp\n",
            b.ip(),
            b.port(),
            n = i + 1,
            site = i / 2 + 1
        );
    }
    c += &format!(
        "add gslb vserver vs TCP -lbMethod ROUNDROBIN -persistenceType SOURCEIP -timeout {} SEC\n",
        PERSIST.as_secs()
    );
    for i in 1..=backends.len() {
        c += &format!("bind gslb vserver vs -serviceName svc{i}\n");
    }
    c += "bind gslb vserver vs -domainName www.example.com -TTL 5\n";
    c
}

fn one_answer(at: &SiteServer, client: Ipv4Addr) -> Ipv4Addr {
    let q = build_query("www.example.com", RecordType::A, None);
    let m = at
        .dns
        .try_udp_from(Some(client), &q)
        .unwrap_or_else(|e| panic!("{}: {e}", at.name));
    let a = a_records(&m);
    assert_eq!(a.len(), 1, "{}: answer for {client}: {m:?}", at.name);
    a[0]
}

/// The answer `at` would give `client` next (explain peeks: it takes no
/// round-robin turn), and whether a persistence entry decided it.
fn peek(at: &SiteServer, client: Ipv4Addr) -> (Ipv4Addr, bool) {
    let e = explain(at, "www.example.com", client).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(e.answers.len(), 1, "{}: explain {e:?}", at.name);
    let ip = e.answers[0]
        .parse()
        .unwrap_or_else(|_| panic!("explain answer {:?}", e.answers));
    let persisted = e.trace.iter().any(|t| t.contains("persistence keeps"));
    (ip, persisted)
}

/// Two parents, one config each, the same vserver with SOURCEIP
/// persistence. Returns the parents and the backends.
fn start_persistence_pair(
    net: &Net,
    dir: &Path,
    p2_exchange: bool,
) -> (SiteServer, SiteServer, Vec<Backend>) {
    let backends: Vec<Backend> = (0..4).map(|i| Backend::tcp(net.svc_ip(i))).collect();
    let p1 = SiteServer::start(
        SEXTANT,
        dir,
        "P1",
        net.site_ip(0),
        &persistence_config(net, 0, &backends, p2_exchange),
        None,
    );
    let p2 = SiteServer::start(
        SEXTANT,
        dir,
        "P2",
        net.site_ip(1),
        &persistence_config(net, 1, &backends, p2_exchange),
        None,
    );
    eventually_ok(EVENTUALLY, "P1 and P2 linked, all four services UP", || {
        expect_mep(&p1, "P2", "UP")?;
        expect_mep(&p2, "P1", "UP")?;
        for at in [&p1, &p2] {
            for i in 1..=4 {
                expect_service(at, &format!("svc{i}"), State::Up)?;
            }
        }
        Ok(())
    });
    (p1, p2, backends)
}

/// Makes `to`'s next round-robin pick for `client` differ from `from`'s,
/// by asking `to` from other clients (each takes one of its turns; `base`
/// picks their numbers). Returns (`from`'s next pick, `to`'s next pick).
fn desync(
    net: &Net,
    from: &SiteServer,
    to: &SiteServer,
    client: Ipv4Addr,
    base: u8,
) -> (Ipv4Addr, Ipv4Addr) {
    for k in base..base + 10 {
        let (a, pa) = peek(from, client);
        let (b, pb) = peek(to, client);
        assert!(
            !pa && !pb,
            "a persistence entry for {client} already exists"
        );
        if a != b {
            return (a, b);
        }
        one_answer(to, net.client_ip(k));
    }
    panic!(
        "{}'s round robin never moved away from {}'s",
        to.name, from.name
    );
}

/// Seed 001: "persistence session information is synchronized ... across
/// the parent sites". A client answered X by P1 is answered X by P2 within
/// one keepalive interval, although P2's own round robin would give
/// another service; once the timeout passes without queries, P1 makes a
/// fresh choice.
#[test]
fn persistence_sessions_are_honoured_by_the_other_parent() {
    let net = Net::for_sites("state_sessions", 2);
    let scratch = net.scratch();
    let (p1, p2, _backends) = start_persistence_pair(&net, &scratch.0, true);
    let client = net.client_ip(0);
    let (next1, next2) = desync(&net, &p1, &p2, client, 10);
    let x = one_answer(&p1, client);
    assert_eq!(x, next1, "P1 did not answer its own next pick");
    let t_answer = Instant::now();
    // One keepalive interval.
    thread::sleep(Duration::from_secs(1));
    let (shown, persisted) = peek(&p2, client);
    eprintln!(
        "P1 answered {client} with {x}; P2's own next pick was {next2}; {:?} later P2's explain \
         shows {shown} (persistence: {persisted})",
        t_answer.elapsed()
    );
    let got: Vec<Ipv4Addr> = (0..10).map(|_| one_answer(&p2, client)).collect();
    assert!(
        got.iter().all(|a| *a == x),
        "P2 answered {client} {got:?} one keepalive interval after P1 answered {x} \
         (P2's own round robin would give {next2})"
    );
    assert!(persisted, "P2's explain does not say persistence decided");

    // No queries for longer than the timeout: P1's entry is gone and its
    // round robin decides again.
    let t0 = Instant::now();
    let deadline = PERSIST + Duration::from_secs(10);
    let mut last = (x, true);
    let gone = wait_until(deadline, || {
        last = peek(&p1, client);
        !last.1
    });
    assert!(
        gone,
        "P1 still keeps {client} on a service {deadline:?} after the last query (timeout {PERSIST:?}): {last:?}"
    );
    eprintln!(
        "P1's entry for {client} gone {} ms after the last query (timeout {} ms)",
        t0.elapsed().as_millis(),
        PERSIST.as_millis()
    );
    // Round robin decides again: its next pick (moved on past X if need
    // be by other clients) is what the client gets now, not X.
    let mut fresh = last.0;
    for k in 20..30 {
        if fresh != x {
            break;
        }
        one_answer(&p1, net.client_ip(k));
        fresh = peek(&p1, client).0;
    }
    let z = one_answer(&p1, client);
    assert_eq!(z, fresh, "P1 did not answer its round robin's next pick");
    assert_ne!(z, x, "P1's fresh choice after the timeout is the old one");

    // The other way round: a session made at P2 is honoured at P1.
    let other = net.client_ip(1);
    let (next2b, next1b) = desync(&net, &p2, &p1, other, 30);
    let y = one_answer(&p2, other);
    assert_eq!(y, next2b, "P2 did not answer its own next pick");
    thread::sleep(Duration::from_secs(1));
    let got: Vec<Ipv4Addr> = (0..10).map(|_| one_answer(&p1, other)).collect();
    eprintln!("P2 answered {other} with {y}; P1's own next pick was {next1b}; P1 then: {got:?}");
    assert!(
        got.iter().all(|a| *a == y),
        "P1 answered {other} {got:?} one keepalive interval after P2 answered {y} \
         (P1's own round robin would give {next1b})"
    );

    drop((p1, p2));
    drop(scratch);
}

/// The same with `-sessionExchange DISABLED` on P2: P2 makes its own
/// choice for the client P1 answered.
#[test]
fn without_session_exchange_the_other_parent_makes_its_own_choice() {
    let net = Net::for_sites("state_sessions_off", 2);
    let scratch = net.scratch();
    let (p1, p2, _backends) = start_persistence_pair(&net, &scratch.0, false);
    let client = net.client_ip(0);
    let (next1, next2) = desync(&net, &p1, &p2, client, 10);
    let x = one_answer(&p1, client);
    assert_eq!(x, next1, "P1 did not answer its own next pick");
    // Two keepalive intervals: nothing may arrive.
    thread::sleep(Duration::from_secs(2));
    let (shown, persisted) = peek(&p2, client);
    assert!(
        !persisted,
        "P2 (-sessionExchange DISABLED) has a persistence entry for {client}: answer {shown}"
    );
    let y = one_answer(&p2, client);
    eprintln!("P1 answered {client} with {x}; P2 (no session exchange) answered {y}");
    assert_eq!(y, next2, "P2 did not answer its own round-robin pick");
    assert_ne!(y, x);
    // P2's round robin moves on for new clients.
    let others: Vec<Ipv4Addr> = (1..5).map(|k| one_answer(&p2, net.client_ip(k))).collect();
    assert!(
        others.windows(2).all(|w| w[0] != w[1]),
        "P2's round robin does not rotate over new clients: {others:?}"
    );
    drop((p1, p2));
    drop(scratch);
}

// ---------------------------------------------------------------------------
// 6a. SIGTERM closes metric exchange
// ---------------------------------------------------------------------------

/// A parent with metric exchange to a peer gets SIGTERM: it exits 0, and
/// the peer sees metric exchange with it DOWN long before the (30 s)
/// keepalive timeout would tell it: the session was closed.
#[test]
fn sigterm_exits_zero_and_the_peer_sees_the_session_closed() {
    const KA: Duration = Duration::from_secs(30);
    let net = Net::for_sites("state_sigterm", 2);
    let scratch = net.scratch();
    let (p1_ip, p2_ip) = (net.site_ip(0), net.site_ip(1));
    let conf = |me: Ipv4Addr| {
        format!(
            "add service adns1 {me} ADNS {DNS_PORT}\n\
             set gslb parameter -MEPKeepAliveTimeout {}\n\
             add gslb site P1 {p1_ip}\n\
             add gslb site P2 {p2_ip}\n{}",
            KA.as_secs(),
            zone()
        )
    };
    let mut p1 = Proc::serve(&scratch.0, "P1", &conf(p1_ip), api_of(p1_ip), None);
    let p2 = SiteServer::start(SEXTANT, &scratch.0, "P2", p2_ip, &conf(p2_ip), None);
    eventually_ok(EVENTUALLY, "P1 and P2 linked", || {
        expect_mep(&p2, "P1", "UP")?;
        let s = find_site(typed_at(p1.api, "/v1/sites")?, "P2")?;
        if s.mep != "UP" {
            return Err(format!("P1 sees P2 {s:?}"));
        }
        Ok(())
    });
    let down0 = status(&p2).unwrap().mep.unwrap_or_default().peer_down;

    // SAFETY: kill(2) on our own, not yet reaped child.
    let rc = unsafe { libc::kill(p1.pid(), libc::SIGTERM) };
    assert_eq!(rc, 0);
    let t0 = Instant::now();
    let bound = Duration::from_secs(10);
    let mut exited: Option<(ExitStatus, Duration)> = None;
    let mut peer_down: Option<Duration> = None;
    while t0.elapsed() < bound && (exited.is_none() || peer_down.is_none()) {
        if exited.is_none()
            && let Some(st) = p1.try_wait()
        {
            exited = Some((st, t0.elapsed()));
        }
        if peer_down.is_none() && expect_mep(&p2, "P1", "DOWN").is_ok() {
            peer_down = Some(t0.elapsed());
        }
        thread::sleep(Duration::from_millis(10));
    }
    let reason = site_entry(&p2, "P1").ok().and_then(|s| s.last_down_reason);
    eprintln!(
        "after SIGTERM: P1 exited {:?}; P2 saw P1 DOWN after {:?} (keepalive timeout {KA:?}); \
         last_down_reason {reason:?}",
        exited, peer_down
    );
    let (st, _) = exited.unwrap_or_else(|| panic!("P1 still running {bound:?} after SIGTERM"));
    p1.child = None;
    assert_eq!(st.code(), Some(0), "P1 exited {st} after SIGTERM");
    assert!(
        peer_down.is_some(),
        "P2 did not see P1 DOWN within {bound:?} of the SIGTERM (keepalive timeout {KA:?}): \
         the session was not closed"
    );
    let down1 = status(&p2).unwrap().mep.unwrap_or_default().peer_down;
    assert!(down1 > down0, "P2's peer_down counter did not move");
    assert!(
        p2.log().contains("metric exchange DOWN site=P1"),
        "P2's log does not record metric exchange with P1 DOWN:\n{}",
        p2.log()
    );
    assert!(
        p1.log().contains("SIGTERM"),
        "P1's log does not record the SIGTERM:\n{}",
        p1.log()
    );
    drop(p2);
    drop(scratch);
}

// ---------------------------------------------------------------------------
// 6b. Idle TCP DNS connections do not disturb metric exchange
// ---------------------------------------------------------------------------

fn raise_nofile(want: u64) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < want {
            r.rlim_cur = want.min(r.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
}

/// 1,000 idle TCP DNS connections and 50 that stall after one byte of a
/// length prefix, all to one parent: for 5 s after they are open, metric
/// exchange between it and its peer (keepalive timeout 1 s) stays UP in
/// every sample and neither counts a new `peer_down`.
#[test]
fn idle_tcp_dns_connections_do_not_disturb_metric_exchange() {
    const IDLE: usize = 1000;
    const STALLED: usize = 50;
    raise_nofile(4 * (IDLE + STALLED) as u64);
    let net = Net::for_sites("state_idle_tcp", 2);
    let scratch = net.scratch();
    let (s1_ip, s2_ip) = (net.site_ip(0), net.site_ip(1));
    let conf = |me: Ipv4Addr| {
        format!(
            "add service adns1 {me} ADNS {DNS_PORT}\n{KA_1S}\
             add gslb site S1 {s1_ip}\n\
             add gslb site S2 {s2_ip}\n{}",
            zone()
        )
    };
    let s1 = SiteServer::start(SEXTANT, &scratch.0, "S1", s1_ip, &conf(s1_ip), None);
    let s2 = SiteServer::start(SEXTANT, &scratch.0, "S2", s2_ip, &conf(s2_ip), None);
    eventually_ok(EVENTUALLY, "S1 and S2 linked", || {
        expect_mep(&s1, "S2", "UP")?;
        expect_mep(&s2, "S1", "UP").map(|_| ())
    });
    let down = |s: &SiteServer| status(s).unwrap().mep.unwrap_or_default().peer_down;
    let (d1, d2) = (down(&s1), down(&s2));

    let target = dns_of(s1_ip);
    let t_open = Instant::now();
    let mut conns: Vec<TcpStream> = Vec::with_capacity(IDLE + STALLED);
    let mut failed = 0;
    for i in 0..IDLE + STALLED {
        match TcpStream::connect_timeout(&target, Duration::from_secs(2)) {
            Ok(mut c) => {
                if i >= IDLE {
                    let _ = c.write_all(&[0]);
                }
                conns.push(c);
            }
            Err(_) => failed += 1,
        }
    }
    eprintln!(
        "opened {} TCP connections to {target} in {} ms ({failed} failed)",
        conns.len(),
        t_open.elapsed().as_millis()
    );
    assert_eq!(
        failed, 0,
        "could not open every connection (RLIMIT_NOFILE of the test process?)"
    );

    let t0 = Instant::now();
    let mut failures = Vec::new();
    let mut samples = 0;
    while t0.elapsed() < Duration::from_secs(5) {
        samples += 1;
        for (at, other) in [(&s1, "S2"), (&s2, "S1")] {
            if let Err(e) = expect_mep(at, other, "UP") {
                failures.push(format!("{} ms: {e}", t0.elapsed().as_millis()));
            }
        }
        thread::sleep(Duration::from_millis(100));
    }
    let (e1, e2) = (down(&s1), down(&s2));
    let st = status(&s1).unwrap();
    eprintln!(
        "{samples} samples in 5 s; S1 dns: queries_tcp {}, tcp_rejected {}; peer_down S1 {d1}->{e1}, S2 {d2}->{e2}",
        st.dns.queries_tcp, st.dns.tcp_rejected
    );
    if e1 != d1 || e2 != d2 {
        failures.push(format!("new peer_down: S1 {d1} -> {e1}, S2 {d2} -> {e2}"));
    }
    // UDP DNS still answers.
    expect_answer(&s1, "www.nothing.example.com", &[]).unwrap_or_else(|e| panic!("{e}"));
    drop(conns);
    assert!(
        failures.is_empty(),
        "with {} TCP DNS connections open to S1:\n{}",
        IDLE + STALLED,
        failures.join("\n")
    );
    drop((s1, s2));
    drop(scratch);
}

/// Sets the soft RLIMIT_NOFILE of process `pid` (prlimit(2)), as if it
/// had been started with that limit.
fn set_nofile_soft_of(pid: i32, soft: u64) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: prlimit(2) on a child of ours, with valid pointers to a
    // local struct (and null for the old value when setting).
    unsafe {
        assert_eq!(
            libc::prlimit(pid, libc::RLIMIT_NOFILE, std::ptr::null(), &mut r),
            0,
            "prlimit get: {}",
            std::io::Error::last_os_error()
        );
        r.rlim_cur = soft.min(r.rlim_max);
        assert_eq!(
            libc::prlimit(pid, libc::RLIMIT_NOFILE, &r, std::ptr::null_mut()),
            0,
            "prlimit set: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// The same flood against a server started with the soft descriptor limit
/// most systems give a service (1024, systemd's default `LimitNOFILE`
/// soft value), which `sextant serve` does not raise: idle TCP DNS
/// clients must not take the descriptors that metric exchange, the
/// monitors and the API need. S1 monitors a service of its own. (S1's
/// limit is set with prlimit(2) once it runs; nothing else in the test
/// process changes.)
#[test]
fn idle_tcp_dns_connections_do_not_starve_a_server_with_the_default_fd_limit() {
    const IDLE: usize = 1000;
    const STALLED: usize = 50;
    let net = Net::for_sites("state_idle_tcp_1024", 2);
    let scratch = net.scratch();
    let (s1_ip, s2_ip) = (net.site_ip(0), net.site_ip(1));
    let b1 = Backend::tcp(net.svc_ip(0));
    let conf = |me: Ipv4Addr| {
        format!(
            "add service adns1 {me} ADNS {DNS_PORT}\n{KA_1S}\
             add gslb site S1 {s1_ip}\n\
             add gslb site S2 {s2_ip}\n{}{TCP_MONITOR}\
             add gslb service svc1 {} TCP {} -siteName S1\n\
             bind gslb service svc1 -monitorName tcp\n\
             add gslb vserver vs TCP -lbMethod ROUNDROBIN -EDR ENABLED\n\
             bind gslb vserver vs -serviceName svc1\n\
             bind gslb vserver vs -domainName www.example.com -TTL 5\n",
            zone(),
            b1.ip(),
            b1.port()
        )
    };
    raise_nofile(4 * (IDLE + STALLED) as u64);
    let s1 = SiteServer::start(SEXTANT, &scratch.0, "S1", s1_ip, &conf(s1_ip), None);
    let s2 = SiteServer::start(SEXTANT, &scratch.0, "S2", s2_ip, &conf(s2_ip), None);
    set_nofile_soft_of(s1.pid().expect("S1 running"), 1024);
    eventually_ok(EVENTUALLY, "S1 and S2 linked, svc1 UP", || {
        expect_mep(&s1, "S2", "UP")?;
        expect_mep(&s2, "S1", "UP")?;
        expect_service(&s1, "svc1", State::Up)?;
        expect_service(&s2, "svc1", State::Up).map(|_| ())
    });
    let down = |s: &SiteServer| status(s).map(|st| st.mep.unwrap_or_default().peer_down);
    let (d1, d2) = (down(&s1).unwrap(), down(&s2).unwrap());
    let target = dns_of(s1_ip);
    let mut conns: Vec<TcpStream> = Vec::with_capacity(IDLE + STALLED);
    let mut failed = 0;
    for i in 0..IDLE + STALLED {
        match TcpStream::connect_timeout(&target, Duration::from_secs(2)) {
            Ok(mut c) => {
                if i >= IDLE {
                    let _ = c.write_all(&[0]);
                }
                conns.push(c);
            }
            Err(_) => failed += 1,
        }
    }
    eprintln!(
        "opened {} TCP connections to {target} ({failed} failed), server soft NOFILE 1024",
        conns.len()
    );
    // Every 100 ms for 5 s: S1's API (with a short timeout of its own, so
    // a stuck API does not stall the sampling), its DNS answer for svc1's
    // domain, and metric exchange as both sites see it.
    let t0 = Instant::now();
    let mut failures = Vec::new();
    let mut samples = 0;
    while t0.elapsed() < Duration::from_secs(5) {
        samples += 1;
        let ms = t0.elapsed().as_millis();
        match quick_get(s1.api_addr, "/v1/services", Duration::from_millis(500))
            .and_then(|b| serde_json::from_str::<Vec<Service>>(&b).map_err(|e| e.to_string()))
        {
            Ok(list) => {
                if !list
                    .iter()
                    .any(|s| s.name == "svc1" && s.state == State::Up)
                {
                    failures.push(format!("{ms} ms: S1's svc1 is not UP: {list:?}"));
                }
            }
            Err(e) => failures.push(format!("{ms} ms: S1's API: {e}")),
        }
        if let Err(e) = expect_answer(&s1, "www.example.com", &[b1.ip()]) {
            failures.push(format!("{ms} ms: {e}"));
        }
        if let Err(e) = expect_mep(&s2, "S1", "UP") {
            failures.push(format!("{ms} ms: {e}"));
        }
        thread::sleep(Duration::from_millis(100));
    }
    let emfile = s1
        .log()
        .lines()
        .filter(|l| l.contains("Too many open files"))
        .count();
    drop(conns);
    // Once the connections are gone S1's API answers again: compare the
    // peer_down counters.
    eventually_ok(EVENTUALLY, "S1's API answers again", || {
        down(&s1).map(|_| ())
    });
    let (e1, e2) = (down(&s1).unwrap(), down(&s2).unwrap());
    if e1 != d1 || e2 != d2 {
        failures.push(format!("new peer_down: S1 {d1} -> {e1}, S2 {d2} -> {e2}"));
    }
    eprintln!(
        "{samples} samples, {} failed checks; {emfile} log lines of S1 say 'Too many open files'",
        failures.len()
    );
    // At most half of its descriptors go to TCP DNS clients (the cap is
    // read at each accept), so the monitors, metric exchange and the API
    // keep theirs even under a soft limit of 1024 set after the start.
    assert!(
        failures.is_empty(),
        "{} TCP DNS connections to S1 (soft NOFILE 1024), {} failed checks in {samples} samples:\n{}",
        IDLE + STALLED,
        failures.len(),
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    drop((s1, s2));
    drop(scratch);
}

// ---------------------------------------------------------------------------
// 6c. DNS waits for the monitors' first results
// ---------------------------------------------------------------------------

/// A parent with a dead backend (nothing listens on its port) and a live
/// one, both monitored (`-interval 5 SEC -resptimeout 1 SEC -retries 3`)
/// and bound to one round-robin vserver. Queried in a tight loop from the
/// moment the process starts, the first answer and every one after it is
/// the live backend's address, never the dead one's.
#[test]
fn dns_answers_only_after_every_monitor_has_its_first_result() {
    let net = Net::for_sites("state_first_result", 1);
    let scratch = net.scratch();
    let ip = net.site_ip(0);
    let live = Backend::tcp(net.svc_ip(1));
    let dead_ip = net.svc_ip(0);
    let dead_port = Net::closed_port(dead_ip);
    let conf = format!(
        "add service adns1 {ip} ADNS {DNS_PORT}\n\
         add gslb site site1 {ip}\n{}\
         add lb monitor tcp TCP -interval 5 SEC -resptimeout 1 SEC -retries 3\n\
         add gslb service dead {dead_ip} TCP {dead_port} -siteName site1\n\
         bind gslb service dead -monitorName tcp\n\
         add gslb service live {} TCP {} -siteName site1\n\
         bind gslb service live -monitorName tcp\n\
         add gslb vserver vs TCP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs -serviceName dead\n\
         bind gslb vserver vs -serviceName live\n\
         bind gslb vserver vs -domainName www.example.com -TTL 5\n",
        zone(),
        live.ip(),
        live.port()
    );
    let config_path = scratch.0.join("site1.conf");
    fs::write(&config_path, &conf).unwrap();
    let q = build_query("www.example.com", RecordType::A, None)
        .to_vec()
        .unwrap();
    let dns = Dns::new(dns_of(ip));
    let mut p = Proc::spawn(
        &scratch.0,
        "site1",
        &serve_args(&config_path, "site1", api_of(ip), Some(dns_of(ip))),
        api_of(ip),
    );
    let t0 = p.started;
    let mut first: Option<Duration> = None;
    let mut sent = 0u64;
    let mut answers: Vec<Vec<Ipv4Addr>> = Vec::new();
    while answers.len() < 40 {
        assert!(
            t0.elapsed() < READY,
            "no DNS answer within {READY:?} of the start ({sent} queries)"
        );
        if let Some(st) = p.try_wait() {
            panic!("the server exited ({st}):\n{}", p.log());
        }
        sent += 1;
        if let Ok(Some(bytes)) = dns.raw_udp(&q, Duration::from_millis(50)) {
            let m = Message::from_vec(&bytes).expect("parse DNS response");
            if first.is_none() {
                first = Some(t0.elapsed());
            }
            answers.push(a_records(&m));
        }
    }
    let log = p.log();
    eprintln!(
        "first DNS answer {:?} after the start ({sent} queries sent); API ready: {}",
        first,
        log.contains("REST API listening")
    );
    let bad: Vec<(usize, &Vec<Ipv4Addr>)> = answers
        .iter()
        .enumerate()
        .filter(|(_, a)| a.as_slice() != [live.ip()])
        .collect();
    assert!(
        bad.is_empty(),
        "answers other than the live backend {} (dead one: {dead_ip}); (index, answer): {bad:?}",
        live.ip()
    );
    drop(p);
    drop(scratch);
}

/// The same rule after a reload: a monitored service the new configuration
/// adds (its backend dead) is not answered before its monitor's first
/// result. Queried in a tight loop from the SIGHUP on.
#[test]
fn a_service_added_by_a_reload_is_not_answered_before_its_first_result() {
    let net = Net::for_sites("state_reload_first_result", 1);
    let scratch = net.scratch();
    let ip = net.site_ip(0);
    let live = Backend::tcp(net.svc_ip(1));
    let dead_ip = net.svc_ip(0);
    let dead_port = Net::closed_port(dead_ip);
    let base = format!(
        "add service adns1 {ip} ADNS {DNS_PORT}\n\
         add gslb site site1 {ip}\n{}\
         add lb monitor tcp TCP -interval 5 SEC -resptimeout 1 SEC -retries 3\n\
         add gslb service live {} TCP {} -siteName site1\n\
         bind gslb service live -monitorName tcp\n\
         add gslb vserver vs TCP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs -serviceName live\n\
         bind gslb vserver vs -domainName www.example.com -TTL 5\n",
        zone(),
        live.ip(),
        live.port()
    );
    let added = format!(
        "{base}add gslb service dead {dead_ip} TCP {dead_port} -siteName site1\n\
         bind gslb service dead -monitorName tcp\n\
         bind gslb vserver vs -serviceName dead\n"
    );
    let site = SiteServer::start(SEXTANT, &scratch.0, "site1", ip, &base, None);
    eventually_ok(EVENTUALLY, "live UP", || {
        expect_service(&site, "live", State::Up)?;
        expect_answer(&site, "www.example.com", &[live.ip()])
    });
    let g0 = status(&site).unwrap().generation;
    let q = build_query("www.example.com", RecordType::A, None)
        .to_vec()
        .unwrap();
    site.reload(&added);
    let t0 = Instant::now();
    let mut answers: Vec<(u128, Vec<Ipv4Addr>)> = Vec::new();
    let mut reloaded_at = None;
    let mut dead_down_at = None;
    while t0.elapsed() < Duration::from_secs(4) {
        if let Ok(Some(bytes)) = site.dns.raw_udp(&q, Duration::from_millis(200)) {
            let m = Message::from_vec(&bytes).expect("parse DNS response");
            answers.push((t0.elapsed().as_millis(), a_records(&m)));
        }
        if (reloaded_at.is_none() || dead_down_at.is_none())
            && let Ok(list) = services(&site)
        {
            if reloaded_at.is_none() && list.iter().any(|s| s.name == "dead") {
                reloaded_at = Some(t0.elapsed());
            }
            if dead_down_at.is_none()
                && list
                    .iter()
                    .any(|s| s.name == "dead" && s.state == State::Down)
            {
                dead_down_at = Some(t0.elapsed());
            }
        }
    }
    assert!(
        status(&site).unwrap().generation > g0,
        "the reload was not applied"
    );
    // A monitored service a reload adds is DOWN until its first result
    // (it was never seen UP), so no answer points at it unprobed.
    eprintln!(
        "{} answers in 4 s after SIGHUP; 'dead' in /v1/services after {reloaded_at:?}, DOWN after {dead_down_at:?}",
        answers.len()
    );
    let bad: Vec<&(u128, Vec<Ipv4Addr>)> = answers
        .iter()
        .filter(|(_, a)| a.as_slice() != [live.ip()])
        .collect();
    assert!(
        bad.is_empty(),
        "after the reload, {} of {} answers are not the live backend {} (dead one {dead_ip}); \
         the first (ms after SIGHUP, answer): {:?}; the last: {:?}",
        bad.len(),
        answers.len(),
        live.ip(),
        &bad[..bad.len().min(5)],
        bad.last()
    );
    drop(site);
    drop(scratch);
}

/// A TCP port on `ip` that never completes a handshake: a listener with a
/// backlog of 0 whose queue the test fills and never accepts from, so
/// further SYNs are dropped (a backend that has hung, seen from its
/// monitor: a connect that times out). Returns the listener and the
/// connections that fill its queue; both must be kept.
fn silent_port(ip: Ipv4Addr) -> (std::net::TcpListener, Vec<TcpStream>, u16) {
    use std::os::fd::AsRawFd;
    let l = std::net::TcpListener::bind((ip, 0)).expect("bind");
    // SAFETY: listen(2) again on our own listening socket, to shrink its
    // backlog.
    let rc = unsafe { libc::listen(l.as_raw_fd(), 0) };
    assert_eq!(rc, 0, "listen(fd, 0)");
    let addr = l.local_addr().unwrap();
    let mut fill = Vec::new();
    for _ in 0..8 {
        match TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
            Ok(c) => fill.push(c),
            Err(_) => return (l, fill, addr.port()),
        }
    }
    panic!("cannot make {addr} silent: 8 connections completed with a backlog of 0");
}

/// As above, with a dead backend that does not refuse but never answers
/// (its monitor's probe runs into the 1 s response timeout): DNS still
/// waits for that first result.
#[test]
fn dns_waits_for_a_first_result_that_takes_the_whole_response_timeout() {
    let net = Net::for_sites("state_first_result_silent", 1);
    let scratch = net.scratch();
    let ip = net.site_ip(0);
    let live = Backend::tcp(net.svc_ip(1));
    let dead_ip = net.svc_ip(0);
    let (_silent, _fill, dead_port) = silent_port(dead_ip);
    let conf = format!(
        "add service adns1 {ip} ADNS {DNS_PORT}\n\
         add gslb site site1 {ip}\n{}\
         add lb monitor tcp TCP -interval 5 SEC -resptimeout 1 SEC -retries 3\n\
         add gslb service dead {dead_ip} TCP {dead_port} -siteName site1\n\
         bind gslb service dead -monitorName tcp\n\
         add gslb service live {} TCP {} -siteName site1\n\
         bind gslb service live -monitorName tcp\n\
         add gslb vserver vs TCP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs -serviceName dead\n\
         bind gslb vserver vs -serviceName live\n\
         bind gslb vserver vs -domainName www.example.com -TTL 5\n",
        zone(),
        live.ip(),
        live.port()
    );
    let config_path = scratch.0.join("site1.conf");
    fs::write(&config_path, &conf).unwrap();
    let q = build_query("www.example.com", RecordType::A, None)
        .to_vec()
        .unwrap();
    let dns = Dns::new(dns_of(ip));
    let mut p = Proc::spawn(
        &scratch.0,
        "site1",
        &serve_args(&config_path, "site1", api_of(ip), Some(dns_of(ip))),
        api_of(ip),
    );
    let t0 = p.started;
    let mut first: Option<Duration> = None;
    let mut answers: Vec<(u128, Vec<Ipv4Addr>)> = Vec::new();
    while answers.len() < 40 {
        assert!(
            t0.elapsed() < READY,
            "no DNS answer within {READY:?} of the start"
        );
        if let Some(st) = p.try_wait() {
            panic!("the server exited ({st}):\n{}", p.log());
        }
        if let Ok(Some(bytes)) = dns.raw_udp(&q, Duration::from_millis(50)) {
            let m = Message::from_vec(&bytes).expect("parse DNS response");
            first.get_or_insert(t0.elapsed());
            answers.push((t0.elapsed().as_millis(), a_records(&m)));
        }
    }
    let dead_state: Option<Service> = typed_at::<Vec<Service>>(api_of(ip), "/v1/services")
        .ok()
        .and_then(|l| l.into_iter().find(|s| s.name == "dead"));
    eprintln!("first DNS answer {first:?} after the start; dead now: {dead_state:?}");
    let bad: Vec<&(u128, Vec<Ipv4Addr>)> = answers
        .iter()
        .filter(|(_, a)| a.as_slice() != [live.ip()])
        .collect();
    assert!(
        bad.is_empty(),
        "answers other than the live backend {} (silent one: {dead_ip}:{dead_port}); \
         (ms after start, answer): {bad:?}",
        live.ip()
    );
    drop(p);
    drop(scratch);
}

// ---------------------------------------------------------------------------
// e. A child keeps the last backup-parent list in a state file
// ---------------------------------------------------------------------------

/// Seed 001: the parent sends its backup list to its children over MEP. A
/// child keeps the last list in a state file next to its configuration, so
/// that when it restarts while its parent is DOWN, the backup parent can
/// still take it over; without the file it could not (it would know no
/// backup list and refuse every offer).
#[test]
fn a_child_restarted_while_its_parent_is_down_is_adopted_thanks_to_its_state_file() {
    let net = Net::for_sites("state_file", 3);
    let scratch = net.scratch();
    let backend = Backend::tcp(net.svc_ip(0));
    let (p1_ip, p2_ip, c_ip) = (net.site_ip(0), net.site_ip(1), net.site_ip(2));
    let parent = format!(
        "{KA_1S}add gslb site SiteP1 {p1_ip}\n\
         add gslb site SiteP2 {p2_ip}\n\
         add gslb site child_site1 {c_ip} -parentSite SiteP1\n\
         set gslb site SiteP1 -backupParentlist SiteP2\n\
         set gslb site SiteP2 -backupParentlist SiteP1\n{}\
         add gslb service web_c1 {} TCP {} -siteName child_site1\n\
         add gslb vserver vs TCP -lbMethod ROUNDROBIN -EDR ENABLED\n\
         bind gslb vserver vs -serviceName web_c1\n\
         bind gslb vserver vs -domainName c1.example.com -TTL 5\n",
        zone(),
        backend.ip(),
        backend.port()
    );
    // The child's configuration, as the seed has it: itself and its parent
    // (not the backup parent), and its own service; no ADNS.
    let child = format!(
        "{KA_1S}add gslb site SiteP1 {p1_ip}\n\
         add gslb site child_site1 {c_ip} -parentSite SiteP1\n{TCP_MONITOR}\
         add gslb service lb_vip {} TCP {} -siteName child_site1\n\
         bind gslb service lb_vip -monitorName tcp\n",
        backend.ip(),
        backend.port()
    );
    let mut p1 = SiteServer::start(SEXTANT, &scratch.0, "SiteP1", p1_ip, &parent, None);
    let p2 = SiteServer::start(SEXTANT, &scratch.0, "SiteP2", p2_ip, &parent, None);
    let mut c = SiteServer::start(SEXTANT, &scratch.0, "child_site1", c_ip, &child, None);
    let state_file = scratch.0.join("child_site1.mep-state.json");
    eventually_ok(
        EVENTUALLY,
        "the child reports through SiteP1 and keeps the list",
        || {
            expect_service(&p2, "web_c1", State::Up)?;
            let text = fs::read_to_string(&state_file)
                .map_err(|e| format!("{}: {e}", state_file.display()))?;
            if !text.contains("SiteP2") {
                return Err(format!("state file without SiteP2: {text}"));
            }
            Ok(())
        },
    );

    // The child goes (maintenance), then its parent crashes; the child
    // comes back while the parent is DOWN.
    c.stop();
    p1.kill();
    c.restart();
    let t0 = Instant::now();
    eventually_ok(EVENTUALLY, "SiteP2 takes the restarted child over", || {
        let s = expect_mep(&p2, "child_site1", "UP")?;
        if s.adopted_for.as_deref() != Some("SiteP1") {
            return Err(format!("child_site1 at SiteP2: {s:?}"));
        }
        expect_service(&p2, "web_c1", State::Up).map(|_| ())
    });
    eprintln!("restarted child adopted by SiteP2 after {:?}", t0.elapsed());
    expect_answer(&p2, "c1.example.com", &[backend.ip()]).unwrap_or_else(|e| panic!("{e}"));
    let log = c.log();
    assert!(
        log.contains("accepted a backup parent's takeover"),
        "the child's log does not show the takeover:\n{log}"
    );

    // The same restart without the file: the child knows no backup list
    // and refuses SiteP2 (three keepalive timeouts are plenty for an offer).
    c.stop();
    fs::remove_file(&state_file).expect("remove the state file");
    c.restart();
    thread::sleep(Duration::from_secs(3));
    let s = site_entry(&p2, "child_site1").unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(
        s.mep, "UP",
        "without its state file the restarted child was adopted anyway: {s:?}"
    );
    drop((p2, c));
}
