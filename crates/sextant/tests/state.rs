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

#![allow(unsafe_code)] // system calls in the test harness; each block says why it is sound

use std::fs;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::process::ExitStatus;
use std::thread;
use std::time::{Duration, Instant};

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
// Configuration text
// ---------------------------------------------------------------------------

/// `add gslb service NAME IP TCP PORT -siteName SITE EXTRA`, bound to the
/// `tcp` monitor.
fn monitored_service(name: &str, addr: SocketAddr, site: &str, extra: &str) -> String {
    format!(
        "add gslb service {name} {} TCP {} -siteName {site}{extra}\n\
         bind gslb service {name} -monitorName tcp\n",
        addr.ip(),
        addr.port()
    )
}

/// A round-robin vserver `VS` with EDR, one service and one domain.
fn vserver(vs: &str, service: &str, domain: &str) -> String {
    format!(
        "add gslb vserver {vs} TCP -lbMethod ROUNDROBIN -EDR ENABLED\n\
         bind gslb vserver {vs} -serviceName {service}\n\
         bind gslb vserver {vs} -domainName {domain} -TTL 5\n"
    )
}

/// Parent P's file up to its services: its ADNS service, `KA_1S`, itself,
/// its `children` and the zone.
fn parent_head(p_ip: Ipv4Addr, children: &[(&str, Ipv4Addr)]) -> String {
    let mut c =
        format!("add service adns1 {p_ip} ADNS {DNS_PORT}\n{KA_1S}add gslb site P {p_ip}\n");
    for (name, ip) in children {
        c += &format!("add gslb site {name} {ip} -parentSite P\n");
    }
    c + zone()
}

/// A child's file up to its monitor: `KA_1S`, its parent and itself; no
/// ADNS service, no vserver.
fn child_head((parent, p_ip): (&str, Ipv4Addr), (me, ip): (&str, Ipv4Addr)) -> String {
    format!(
        "{KA_1S}add gslb site {parent} {p_ip}\n\
         add gslb site {me} {ip} -parentSite {parent}\n"
    )
}

/// A child's whole file: [`child_head`], `TCP_MONITOR` and one service of
/// its own at `addr` bound to it (`extra` ends its `add gslb service`).
fn child_conf(
    parent: (&str, Ipv4Addr),
    me: (&str, Ipv4Addr),
    service: &str,
    addr: SocketAddr,
    extra: &str,
) -> String {
    child_head(parent, me) + TCP_MONITOR + &monitored_service(service, addr, me.0, extra)
}

/// The head of a file of peer sites: `me`'s ADNS service, the keepalive
/// timeout, and every site (no zone).
fn peers_head(me: Ipv4Addr, keepalive: Duration, sites: &[(&str, Ipv4Addr)]) -> String {
    let mut c = format!(
        "add service adns1 {me} ADNS {DNS_PORT}\n\
         set gslb parameter -MEPKeepAliveTimeout {}\n",
        keepalive.as_secs()
    );
    for (name, ip) in sites {
        c += &format!("add gslb site {name} {ip}\n");
    }
    c
}

// ---------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------

/// Metric exchange UP between `a` and `b`, as each sees the other.
fn linked(a: &SiteServer, b: &SiteServer) -> Result<(), String> {
    a.expect_mep(&b.name, "UP")?;
    b.expect_mep(&a.name, "UP").map(|_| ())
}

/// The `peer_down` counter of `at`'s metric exchange (0 without one).
fn peer_down(at: &SiteServer) -> Result<u64, String> {
    at.try_status()
        .map(|st| st.mep.unwrap_or_default().peer_down)
}

/// Pushes a failure unless `service` at `at` is still UP with the same
/// `last_change` as `before`; `when` says after what.
fn unchanged(at: &SiteServer, before: &Service, when: &str, failures: &mut Vec<String>) {
    let now = at.service(&before.name);
    if now.state != State::Up || now.last_change != before.last_change {
        failures.push(format!(
            "{} changed state {when} (last_change {:?} before): {now:?}",
            before.name, before.last_change
        ));
    }
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
        match p.try_services() {
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

    let mut pconf = parent_head(p_ip, &[("C1", c1_ip), ("C2", c2_ip)]);
    for (n, b) in [(1, &b1), (2, &b2)] {
        pconf += &format!(
            "add gslb service web_c{n} {} TCP {} -siteName C{n}\n",
            b.ip(),
            b.port()
        );
        pconf += &vserver(
            &format!("vs_c{n}"),
            &format!("web_c{n}"),
            &format!("c{n}.example.com"),
        );
    }
    // Each child: itself, its parent, its own service (the same name in
    // both children), monitored there. No ADNS, no vserver.
    let child = |me: &str, ip: Ipv4Addr, b: &Backend| {
        child_conf(("P", p_ip), (me, ip), "svc_c1", b.addr, "")
    };
    let p = SiteServer::start(SEXTANT, &scratch.0, "P", p_ip, &pconf, None);
    let c1 = SiteServer::start(
        SEXTANT,
        &scratch.0,
        "C1",
        c1_ip,
        &child("C1", c1_ip, &b1),
        None,
    );
    let mut c2 = SiteServer::start(
        SEXTANT,
        &scratch.0,
        "C2",
        c2_ip,
        &child("C2", c2_ip, &b2),
        None,
    );

    eventually_ok(EVENTUALLY, "P linked with both children, both UP", || {
        p.expect_mep("C1", "UP")?;
        p.expect_mep("C2", "UP")?;
        for (svc, site) in [("web_c1", "C1"), ("web_c2", "C2")] {
            let s = p.expect_service(svc, State::Up)?;
            if !s.reason.contains("metric exchange") || !s.reason.contains(site) {
                return Err(format!("{svc}'s reason does not name {site}: {s:?}"));
            }
        }
        p.expect_answer("c1.example.com", &[ip1])?;
        p.expect_answer("c2.example.com", &[ip2])
    });

    // C2's backend dies. Sample P every 100 ms for about 3 s.
    let w1_before = p.service("web_c1");
    b2.kill();
    let mut failures: Vec<String> = Vec::new();
    let (samples, c2_down_after) = watch_web_c1(&p, ip1, "C2's backend killed", &mut failures);
    eprintln!(
        "{samples} samples of P's /v1/services in 3 s; web_c2 DOWN at P after {c2_down_after:?}"
    );
    eventually_ok(EVENTUALLY, "web_c2 DOWN at P, told by C2", || {
        let s = p.expect_service("web_c2", State::Down)?;
        if !s.reason.contains("C2") {
            return Err(format!("web_c2's reason does not name C2: {s:?}"));
        }
        p.expect_answer("c2.example.com", &[])
    });
    unchanged(&p, &w1_before, "after the kill", &mut failures);
    // Each child sees only its own svc_c1.
    c1.expect_service("svc_c1", State::Up)
        .unwrap_or_else(|e| panic!("{e}"));
    c2.expect_service("svc_c1", State::Down)
        .unwrap_or_else(|e| panic!("{e}"));

    // C2 itself goes away (SIGKILL): its service is DOWN at P for want of
    // a report, C1's is not touched.
    c2.kill();
    let (samples2, _) = watch_web_c1(&p, ip1, "C2's process killed", &mut failures);
    eventually_ok(EVENTUALLY, "P sees C2 DOWN", || {
        p.expect_mep("C2", "DOWN")?;
        p.expect_service("web_c2", State::Down).map(|_| ())
    });
    unchanged(&p, &w1_before, "after C2 went away", &mut failures);
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
    let mut pconf = parent_head(p_ip, &[("C1", c1_ip), ("C2", c2_ip)]);
    for (n, public) in [(1, pub1), (2, pub2)] {
        pconf += &format!(
            "add gslb service web_c{n} {priv_ip} TCP {priv_port} -siteName C{n} -publicIP {public}\n"
        );
        pconf += &vserver(
            &format!("vs_c{n}"),
            &format!("web_c{n}"),
            &format!("c{n}.example.com"),
        );
    }
    let c1conf = child_conf(
        ("P", p_ip),
        ("C1", c1_ip),
        "svc_c1",
        shared.addr,
        &format!(" -publicIP {pub1}"),
    );
    let c2conf = child_head(("P", p_ip), ("C2", c2_ip))
        + &format!(
            "add lb monitor tcp TCP -interval 200 MSEC -resptimeout 100 MSEC -retries 2 -destPort {c2_probe_port}\n"
        )
        + &monitored_service("svc_c1", shared.addr, "C2", &format!(" -publicIP {pub2}"));
    let p = SiteServer::start(SEXTANT, &scratch.0, "P", p_ip, &pconf, None);
    let _c1 = SiteServer::start(SEXTANT, &scratch.0, "C1", c1_ip, &c1conf, None);
    let _c2 = SiteServer::start(SEXTANT, &scratch.0, "C2", c2_ip, &c2conf, None);

    let settled = |c2_up: bool| -> Result<(), String> {
        let want = if c2_up { State::Up } else { State::Down };
        let answer2: Vec<Ipv4Addr> = if c2_up { vec![pub2] } else { vec![] };
        p.expect_mep("C1", "UP")?;
        p.expect_mep("C2", "UP")?;
        p.expect_service("web_c1", State::Up)?;
        let s2 = p.expect_service("web_c2", want)?;
        if !s2.reason.contains("site C2 reports it") {
            return Err(format!("web_c2's state is not C2's report: {s2:?}"));
        }
        p.expect_answer("c1.example.com", &[pub1])?;
        p.expect_answer("c2.example.com", &answer2)
    };
    eventually_ok(
        EVENTUALLY,
        "web_c1 UP, web_c2 DOWN (C2 probes a closed port)",
        || settled(false),
    );
    let w1_before = p.service("web_c1");
    let mut failures = Vec::new();

    // C2's probe port comes alive: C2 reports svc_c1 UP.
    let c2_target = Backend::tcp_at(SocketAddr::from((priv_ip, c2_probe_port)));
    eventually_ok(EVENTUALLY, "web_c2 UP, reported by C2", || settled(true));
    watch_web_c1(&p, pub1, "C2's service came UP", &mut failures);
    // And goes again.
    c2_target.kill();
    eventually_ok(EVENTUALLY, "web_c2 DOWN again", || settled(false));
    watch_web_c1(&p, pub1, "C2's service went DOWN", &mut failures);
    unchanged(&p, &w1_before, "while only C2's service did", &mut failures);
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
    let pconf = parent_head(p_ip, &[("C1", c_ip)])
        + TCP_MONITOR
        + &format!(
            "add gslb service web_c1 {} TCP {} -siteName C1\n",
            own.ip(),
            own.port()
        )
        + &monitored_service("web_mon", mon.addr, "C1", "")
        + &format!(
            "add gslb service web_bare {} TCP {} -siteName C1\n",
            bare.ip(),
            bare.port()
        )
        + &vserver("vs_c1", "web_c1", "c1.example.com")
        + &vserver("vs_mon", "web_mon", "mon.example.com")
        + &vserver("vs_bare", "web_bare", "bare.example.com");
    let cconf = child_conf(("P", p_ip), ("C1", c_ip), "svc_c1", own.addr, "");
    let p = SiteServer::start(SEXTANT, &scratch.0, "P", p_ip, &pconf, None);
    let c = SiteServer::start(SEXTANT, &scratch.0, "C1", c_ip, &cconf, None);
    let bare_addr = format!("{}:{}", bare.ip(), bare.port());

    eventually_ok(
        EVENTUALLY,
        "P linked with C1, every service settled",
        || {
            p.expect_mep("C1", "UP")?;
            p.expect_service("web_c1", State::Up)?;
            let m = p.expect_service("web_mon", State::Up)?;
            if !m.reason.starts_with("monitor tcp") {
                return Err(format!("web_mon's reason is not its monitor's: {m:?}"));
            }
            let b = p.expect_service("web_bare", State::Down)?;
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
            p.expect_answer("c1.example.com", &[own.ip()])?;
            p.expect_answer("mon.example.com", &[mon.ip()])?;
            p.expect_answer("bare.example.com", &[])
        },
    );
    let e = p.explain("bare.example.com", "127.0.0.1");
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
        let m = p.expect_service("web_mon", State::Down)?;
        if !m.reason.starts_with("monitor tcp") {
            return Err(format!("web_mon's reason is not its monitor's: {m:?}"));
        }
        p.expect_answer("mon.example.com", &[])
    });
    let e = p.explain("mon.example.com", "127.0.0.1");
    assert!(
        e.down
            .iter()
            .any(|d| d.contains("web_mon") && d.contains("monitor tcp")),
        "/v1/explain does not list web_mon as DOWN by its monitor: {e:?}"
    );
    p.expect_service("web_c1", State::Up)
        .unwrap_or_else(|e| panic!("{e}"));

    // C1 adds a service at web_bare's address, under a name of its own
    // (reload): P matches the report by site and IP:port, and web_bare
    // takes its state from C1 now.
    c.reload(&(cconf + &monitored_service("svc_extra", bare.addr, "C1", "")));
    eventually_ok(EVENTUALLY, "web_bare UP at P, reported by C1", || {
        let b = p.expect_service("web_bare", State::Up)?;
        if !b.reason.contains("metric exchange") || !b.reason.contains("C1") {
            return Err(format!("web_bare's reason is not C1's report: {b:?}"));
        }
        p.expect_answer("bare.example.com", &[bare.ip()])
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

/// [`ports_of`] over `/proc/net/PROTO` and `/proc/net/PROTO6`.
fn ports_of_both(proto: &str, inodes: &[String]) -> Vec<u16> {
    let mut ports = ports_of(proto, inodes);
    ports.extend(ports_of(&format!("{proto}6"), inodes));
    ports
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
    let cconf = child_conf(("P", p_ip), ("C", c_ip), "svc_c", b.addr, "");
    let mut c = SiteServer::start_without_dns(SEXTANT, &scratch.0, "C", c_ip, &cconf);
    eprintln!(
        "child C answered its API {:?} after start",
        c.started().elapsed()
    );
    let st = c.try_status().unwrap_or_else(|e| panic!("{e}"));
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
    let pid = c.pid().expect("C running");
    let inodes = socket_inodes(pid);
    assert!(!inodes.is_empty(), "no sockets found for pid {pid}");
    let udp = ports_of_both("udp", &inodes);
    let tcp = ports_of_both("tcp", &inodes);
    assert!(udp.is_empty(), "the child has UDP sockets on ports {udp:?}");
    assert!(
        tcp.iter().all(|p| *p == API_PORT || *p == MEP_PORT),
        "the child listens on TCP ports {tcp:?} (only the API {API_PORT} and metric exchange {MEP_PORT} expected)"
    );
    let dns = &c.dns;
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
    let pconf = parent_head(p_ip, &[("C", c_ip)])
        + &format!(
            "add gslb service web_c {} TCP {} -siteName C\n",
            b.ip(),
            b.port()
        )
        + &vserver("vs_c", "web_c", "c.example.com");
    let p = SiteServer::start(SEXTANT, &scratch.0, "P", p_ip, &pconf, None);
    eventually_ok(EVENTUALLY, "P answers the child's service", || {
        p.expect_mep("C", "UP")?;
        let me = c.try_site("C")?;
        if me.current_parent.as_deref() != Some("P") {
            return Err(format!("C's current parent: {me:?}"));
        }
        p.expect_service("web_c", State::Up)?;
        p.expect_answer("c.example.com", &[b.ip()])
    });
    assert!(c.is_running(), "the child exited");

    // A reload (SIGHUP) keeps it without DNS sockets.
    c.signal(libc::SIGHUP);
    eventually_ok(EVENTUALLY, "the child reloads", || {
        let st = c.try_status()?;
        if st.generation >= 2 {
            Ok(())
        } else {
            Err(format!("generation {}", st.generation))
        }
    });
    let inodes = socket_inodes(pid);
    let udp = ports_of_both("udp", &inodes);
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
    // The file serve reads below: SiteP1's, DIR/SiteP1.conf.
    let path = scratch.write("SiteP1.conf", &wrong);
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
    let mut serve = SiteServer::spawn(SEXTANT, &scratch.0, "SiteP1", net.site_ip(0), &wrong);
    assert_eq!(serve.config, Path::new(&path), "serve reads another file");
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

/// `-automaticConfigSync ENABLED -incarnation N` are config sync's settings
/// (issue 27), no longer "accepted without effect": `sextant check` exits 0
/// without a warning about them, and `sextant serve` logs none at start.
#[test]
fn automatic_config_sync_is_not_warned_about_by_check_or_at_start() {
    let net = Net::for_sites("state_warn_sync", 2);
    let scratch = net.scratch();
    let (p1, p2) = (net.site_ip(0), net.site_ip(1));
    let conf = format!(
        "add service adns1 {p1} ADNS {DNS_PORT}\n\
         add gslb site SiteP1 {p1}\n\
         add gslb site SiteP2 {p2}\n\
         set gslb parameter -automaticConfigSync ENABLED -incarnation 3\n{}",
        zone()
    );
    let site = SiteServer::start(SEXTANT, &scratch.0, "SiteP1", p1, &conf, None);
    let path = site.config.to_str().unwrap().to_string();
    let out = SEXTANT.run(&["check", &path]);
    let text = output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for setting in ["-automaticConfigSync", "-incarnation"] {
        assert!(
            !text.contains(&format!("{setting} is accepted")),
            "check warned about {setting}:\n{text}"
        );
    }
    // Serving: up and answering the API, and no such warning logged.
    eventually_ok(EVENTUALLY, "serve is up", || {
        let log = site.log();
        if log.contains("is accepted but") {
            return Err(format!("a setting was warned about:\n{log}"));
        }
        site.try_sites().map(|_| ())
    });
    assert!(
        !site.log().contains("-automaticConfigSync is accepted"),
        "{}",
        site.log()
    );
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
    let mut c = peers_head(
        net.site_ip(me),
        Duration::from_secs(1),
        &[("P1", net.site_ip(0)), ("P2", net.site_ip(1))],
    );
    if !p2_exchange {
        c += "set gslb site P2 -sessionExchange DISABLED\n";
    }
    c += zone();
    c += TCP_MONITOR;
    for (i, b) in backends.iter().enumerate() {
        c += &monitored_service(
            &format!("svc{}", i + 1),
            b.addr,
            &format!("P{}", i / 2 + 1),
            "",
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
    let e = at.explain("www.example.com", &client.to_string());
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
        linked(&p1, &p2)?;
        for at in [&p1, &p2] {
            for i in 1..=4 {
                at.expect_service(&format!("svc{i}"), State::Up)?;
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
    let conf = |me: Ipv4Addr| peers_head(me, KA, &[("P1", p1_ip), ("P2", p2_ip)]) + zone();
    let mut p1 = SiteServer::start_without_dns(SEXTANT, &scratch.0, "P1", p1_ip, &conf(p1_ip));
    let p2 = SiteServer::start(SEXTANT, &scratch.0, "P2", p2_ip, &conf(p2_ip), None);
    eventually_ok(EVENTUALLY, "P1 and P2 linked", || linked(&p2, &p1));
    let down0 = peer_down(&p2).unwrap();

    p1.signal(libc::SIGTERM);
    let t0 = Instant::now();
    let bound = Duration::from_secs(10);
    let mut exited: Option<(ExitStatus, Duration)> = None;
    let mut saw_down: Option<Duration> = None;
    while t0.elapsed() < bound && (exited.is_none() || saw_down.is_none()) {
        if exited.is_none()
            && let Some(st) = p1.try_wait()
        {
            exited = Some((st, t0.elapsed()));
        }
        if saw_down.is_none() && p2.expect_mep("P1", "DOWN").is_ok() {
            saw_down = Some(t0.elapsed());
        }
        thread::sleep(Duration::from_millis(10));
    }
    let reason = p2.try_site("P1").ok().and_then(|s| s.last_down_reason);
    eprintln!(
        "after SIGTERM: P1 exited {:?}; P2 saw P1 DOWN after {:?} (keepalive timeout {KA:?}); \
         last_down_reason {reason:?}",
        exited, saw_down
    );
    let (st, _) = exited.unwrap_or_else(|| panic!("P1 still running {bound:?} after SIGTERM"));
    assert_eq!(st.code(), Some(0), "P1 exited {st} after SIGTERM");
    assert!(
        saw_down.is_some(),
        "P2 did not see P1 DOWN within {bound:?} of the SIGTERM (keepalive timeout {KA:?}): \
         the session was not closed"
    );
    let down1 = peer_down(&p2).unwrap();
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

/// `idle` TCP connections to `target` that send nothing and `stalled` ones
/// that send one byte of a length prefix and no more; also how many could
/// not be opened.
fn open_tcp_dns_clients(
    target: SocketAddr,
    idle: usize,
    stalled: usize,
) -> (Vec<TcpStream>, usize) {
    let mut conns: Vec<TcpStream> = Vec::with_capacity(idle + stalled);
    let mut failed = 0;
    for i in 0..idle + stalled {
        match TcpStream::connect_timeout(&target, Duration::from_secs(2)) {
            Ok(mut c) => {
                if i >= idle {
                    let _ = c.write_all(&[0]);
                }
                conns.push(c);
            }
            Err(_) => failed += 1,
        }
    }
    (conns, failed)
}

/// 1,000 idle TCP DNS connections and 50 that stall after one byte of a
/// length prefix, all to one parent: for 5 s after they are open, metric
/// exchange between it and its peer (keepalive timeout 1 s) stays UP in
/// every sample and neither counts a new `peer_down`.
#[test]
fn idle_tcp_dns_connections_do_not_disturb_metric_exchange() {
    const IDLE: usize = 1000;
    const STALLED: usize = 50;
    raise_own_open_files(4 * (IDLE + STALLED) as u64);
    let net = Net::for_sites("state_idle_tcp", 2);
    let scratch = net.scratch();
    let (s1_ip, s2_ip) = (net.site_ip(0), net.site_ip(1));
    let conf = |me: Ipv4Addr| {
        peers_head(me, Duration::from_secs(1), &[("S1", s1_ip), ("S2", s2_ip)]) + zone()
    };
    let s1 = SiteServer::start(SEXTANT, &scratch.0, "S1", s1_ip, &conf(s1_ip), None);
    let s2 = SiteServer::start(SEXTANT, &scratch.0, "S2", s2_ip, &conf(s2_ip), None);
    eventually_ok(EVENTUALLY, "S1 and S2 linked", || linked(&s1, &s2));
    let down = |s: &SiteServer| peer_down(s).unwrap();
    let (d1, d2) = (down(&s1), down(&s2));

    let target = s1.dns.server;
    let t_open = Instant::now();
    let (conns, failed) = open_tcp_dns_clients(target, IDLE, STALLED);
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
            if let Err(e) = at.expect_mep(other, "UP") {
                failures.push(format!("{} ms: {e}", t0.elapsed().as_millis()));
            }
        }
        thread::sleep(Duration::from_millis(100));
    }
    let (e1, e2) = (down(&s1), down(&s2));
    let st = s1.status();
    eprintln!(
        "{samples} samples in 5 s; S1 dns: queries_tcp {}, tcp_rejected {}; peer_down S1 {d1}->{e1}, S2 {d2}->{e2}",
        st.dns.queries_tcp, st.dns.tcp_rejected
    );
    if e1 != d1 || e2 != d2 {
        failures.push(format!("new peer_down: S1 {d1} -> {e1}, S2 {d2} -> {e2}"));
    }
    // UDP DNS still answers.
    s1.expect_answer("www.nothing.example.com", &[])
        .unwrap_or_else(|e| panic!("{e}"));
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
        peers_head(me, Duration::from_secs(1), &[("S1", s1_ip), ("S2", s2_ip)])
            + zone()
            + TCP_MONITOR
            + &monitored_service("svc1", b1.addr, "S1", "")
            + &vserver("vs", "svc1", "www.example.com")
    };
    raise_own_open_files(4 * (IDLE + STALLED) as u64);
    let s1 = SiteServer::start(SEXTANT, &scratch.0, "S1", s1_ip, &conf(s1_ip), None);
    let s2 = SiteServer::start(SEXTANT, &scratch.0, "S2", s2_ip, &conf(s2_ip), None);
    set_nofile_soft_of(s1.pid().expect("S1 running"), 1024);
    eventually_ok(EVENTUALLY, "S1 and S2 linked, svc1 UP", || {
        linked(&s1, &s2)?;
        s1.expect_service("svc1", State::Up)?;
        s2.expect_service("svc1", State::Up).map(|_| ())
    });
    let (d1, d2) = (peer_down(&s1).unwrap(), peer_down(&s2).unwrap());
    let target = s1.dns.server;
    let (conns, failed) = open_tcp_dns_clients(target, IDLE, STALLED);
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
        match api_get_within::<Vec<Service>>(s1.api_addr, SERVICES, Duration::from_millis(500)) {
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
        if let Err(e) = s1.expect_answer("www.example.com", &[b1.ip()]) {
            failures.push(format!("{ms} ms: {e}"));
        }
        if let Err(e) = s2.expect_mep("S1", "UP") {
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
        peer_down(&s1).map(|_| ())
    });
    let (e1, e2) = (peer_down(&s1).unwrap(), peer_down(&s2).unwrap());
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

/// The monitor of the first-result tests: a result every 5 s at most.
const SLOW_MONITOR: &str = "add lb monitor tcp TCP -interval 5 SEC -resptimeout 1 SEC -retries 3\n";

/// site1 alone, with its ADNS service, the zone and `SLOW_MONITOR`.
fn site1_head(ip: Ipv4Addr) -> String {
    format!(
        "add service adns1 {ip} ADNS {DNS_PORT}\n\
         add gslb site site1 {ip}\n{}{SLOW_MONITOR}",
        zone()
    )
}

/// site1 with a monitored service `dead` at `dead` and `live` at `live`,
/// both bound to the round-robin vserver of www.example.com.
fn first_result_conf(ip: Ipv4Addr, dead: SocketAddr, live: &Backend) -> String {
    site1_head(ip)
        + &monitored_service("dead", dead, "site1", "")
        + &monitored_service("live", live.addr, "site1", "")
        + "add gslb vserver vs TCP -lbMethod ROUNDROBIN\n\
           bind gslb vserver vs -serviceName dead\n\
           bind gslb vserver vs -serviceName live\n\
           bind gslb vserver vs -domainName www.example.com -TTL 5\n"
}

/// A DNS answer's A records and when it came (ms after some start).
type Timed = (u128, Vec<Ipv4Addr>);

/// Queries `p` (spawned, not yet ready) for www.example.com's A records in
/// a tight loop, 50 ms per query, from its start until `n` answers came;
/// panics if it exits or [`READY`] passes first. The answers with their
/// time (ms after the start), when the first came, and how many queries
/// were sent.
fn answers_from_the_start(p: &mut SiteServer, n: usize) -> (Vec<Timed>, Option<Duration>, u64) {
    let q = build_query("www.example.com", RecordType::A, None)
        .to_vec()
        .unwrap();
    let t0 = p.started();
    let mut first: Option<Duration> = None;
    let mut sent = 0u64;
    let mut answers = Vec::new();
    while answers.len() < n {
        assert!(
            t0.elapsed() < READY,
            "no DNS answer within {READY:?} of the start ({sent} queries)"
        );
        if let Some(st) = p.try_wait() {
            panic!("the server exited ({st}):\n{}", p.log());
        }
        sent += 1;
        if let Ok(Some(bytes)) = p.dns.raw_udp(&q, Duration::from_millis(50)) {
            let m = Message::from_vec(&bytes).expect("parse DNS response");
            first.get_or_insert(t0.elapsed());
            answers.push((t0.elapsed().as_millis(), a_records(&m)));
        }
    }
    (answers, first, sent)
}

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
    let conf = first_result_conf(ip, SocketAddr::from((dead_ip, dead_port)), &live);
    let mut p = SiteServer::spawn(SEXTANT, &scratch.0, "site1", ip, &conf);
    let (answers, first, sent) = answers_from_the_start(&mut p, 40);
    let log = p.log();
    eprintln!(
        "first DNS answer {:?} after the start ({sent} queries sent); API ready: {}",
        first,
        log.contains("REST API listening")
    );
    let bad: Vec<(usize, &Vec<Ipv4Addr>)> = answers
        .iter()
        .map(|(_, a)| a)
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
    let base = site1_head(ip)
        + &monitored_service("live", live.addr, "site1", "")
        + "add gslb vserver vs TCP -lbMethod ROUNDROBIN\n\
           bind gslb vserver vs -serviceName live\n\
           bind gslb vserver vs -domainName www.example.com -TTL 5\n";
    let added = base.clone()
        + &monitored_service("dead", SocketAddr::from((dead_ip, dead_port)), "site1", "")
        + "bind gslb vserver vs -serviceName dead\n";
    let site = SiteServer::start(SEXTANT, &scratch.0, "site1", ip, &base, None);
    eventually_ok(EVENTUALLY, "live UP", || {
        site.expect_service("live", State::Up)?;
        site.expect_answer("www.example.com", &[live.ip()])
    });
    let g0 = site.status().generation;
    let q = build_query("www.example.com", RecordType::A, None)
        .to_vec()
        .unwrap();
    site.reload(&added);
    let t0 = Instant::now();
    let mut answers: Vec<Timed> = Vec::new();
    let mut reloaded_at = None;
    let mut dead_down_at = None;
    while t0.elapsed() < Duration::from_secs(4) {
        if let Ok(Some(bytes)) = site.dns.raw_udp(&q, Duration::from_millis(200)) {
            let m = Message::from_vec(&bytes).expect("parse DNS response");
            answers.push((t0.elapsed().as_millis(), a_records(&m)));
        }
        if (reloaded_at.is_none() || dead_down_at.is_none())
            && let Ok(list) = site.try_services()
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
    assert!(site.status().generation > g0, "the reload was not applied");
    // A monitored service a reload adds is DOWN until its first result
    // (it was never seen UP), so no answer points at it unprobed.
    eprintln!(
        "{} answers in 4 s after SIGHUP; 'dead' in /v1/services after {reloaded_at:?}, DOWN after {dead_down_at:?}",
        answers.len()
    );
    let bad: Vec<&Timed> = answers
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
    let conf = first_result_conf(ip, SocketAddr::from((dead_ip, dead_port)), &live);
    let mut p = SiteServer::spawn(SEXTANT, &scratch.0, "site1", ip, &conf);
    let (answers, first, _) = answers_from_the_start(&mut p, 40);
    let dead_state: Option<Service> = p.try_service("dead").ok();
    eprintln!("first DNS answer {first:?} after the start; dead now: {dead_state:?}");
    let bad: Vec<&Timed> = answers
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
         add gslb service web_c1 {} TCP {} -siteName child_site1\n{}",
        zone(),
        backend.ip(),
        backend.port(),
        vserver("vs", "web_c1", "c1.example.com")
    );
    // The child's configuration, as the seed has it: itself and its parent
    // (not the backup parent), and its own service; no ADNS.
    let child = child_conf(
        ("SiteP1", p1_ip),
        ("child_site1", c_ip),
        "lb_vip",
        backend.addr,
        "",
    );
    let mut p1 = SiteServer::start(SEXTANT, &scratch.0, "SiteP1", p1_ip, &parent, None);
    let p2 = SiteServer::start(SEXTANT, &scratch.0, "SiteP2", p2_ip, &parent, None);
    let mut c = SiteServer::start(SEXTANT, &scratch.0, "child_site1", c_ip, &child, None);
    let state_file = scratch.0.join("child_site1.mep-state.json");
    eventually_ok(
        EVENTUALLY,
        "the child reports through SiteP1 and keeps the list",
        || {
            p2.expect_service("web_c1", State::Up)?;
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
        let s = p2.expect_mep("child_site1", "UP")?;
        if s.adopted_for.as_deref() != Some("SiteP1") {
            return Err(format!("child_site1 at SiteP2: {s:?}"));
        }
        p2.expect_service("web_c1", State::Up).map(|_| ())
    });
    eprintln!("restarted child adopted by SiteP2 after {:?}", t0.elapsed());
    p2.expect_answer("c1.example.com", &[backend.ip()])
        .unwrap_or_else(|e| panic!("{e}"));
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
    let s = p2.site("child_site1");
    assert_ne!(
        s.mep, "UP",
        "without its state file the restarted child was adopted anyway: {s:?}"
    );
    drop((p2, c));
}
