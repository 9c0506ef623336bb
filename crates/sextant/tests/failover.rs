//! Health-driven failover against real backends: a backend dies and leaves
//! the answers, comes back and returns; the fallback chain when everything is
//! down (backup vserver, backup IP, EDR/NODATA, last resort).

use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::net::Ipv4Addr;

/// Fast monitors: a dead backend is DOWN after 2 failures 200 ms apart.
const MONITORS: &str = "\
add lb monitor mon_tcp TCP -interval 200 MSEC -resptimeout 100 MSEC -retries 2 -successRetries 1
add lb monitor mon_http HTTP -interval 200 MSEC -resptimeout 150 MSEC -retries 2 -successRetries 2 -httpRequest \"GET /health\" -respCode 200
";

/// Distinct addresses seen over `n` queries.
fn seen(s: &Server, name: &str, n: usize) -> BTreeSet<Ipv4Addr> {
    s.dns.sample_a(name, n).into_iter().collect()
}

/// Waits until `n` consecutive answers all lie in `allowed` (and at least
/// one is `must` if given).
fn eventually_answers(s: &Server, name: &str, allowed: &[Ipv4Addr], what: &str) {
    let mut last = BTreeSet::new();
    let ok = wait_until(EVENTUALLY, || {
        last = seen(s, name, 12);
        !last.is_empty() && last.iter().all(|ip| allowed.contains(ip))
    });
    assert!(
        ok,
        "{what}: answers for {name} never settled within {allowed:?} (last seen {last:?})"
    );
}

/// Two TCP-monitored services behind one ROUNDROBIN vserver.
fn two_tcp_services(net: &Net, a: &Backend, b: &Backend) -> String {
    let mut c = net.conf_preamble();
    c.push_str(MONITORS);
    for (n, be) in [("sA", a), ("sB", b)] {
        writeln!(
            c,
            "add gslb service {n} {} TCP {} -siteName site1\nbind gslb service {n} -monitorName mon_tcp",
            be.ip(),
            be.port()
        )
        .unwrap();
    }
    c.push_str(
        "add gslb vserver vs_app TCP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs_app -serviceName sA\n\
         bind gslb vserver vs_app -serviceName sB\n\
         bind gslb vserver vs_app -domainName app.example.com -TTL 5\n",
    );
    c
}

#[test]
fn dead_tcp_backend_leaves_answers_and_returns() {
    let net = Net::new("failover_tcp");
    let a = Backend::tcp(net.svc_ip(0));
    let b = Backend::tcp(net.svc_ip(1));
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &two_tcp_services(&net, &a, &b));
    s.wait_state("sA", State::Up);
    s.wait_state("sB", State::Up);
    let both = [a.ip(), b.ip()];
    eventually_answers(&s, "app.example.com", &both, "both up");
    eventually(EVENTUALLY, "both services answered", || {
        seen(&s, "app.example.com", 8).len() == 2
    });
    let up_since = s.service("sA").unwrap().last_change;

    // Kill A: it goes DOWN and leaves the answers.
    let addr_a = a.kill();
    s.wait_state("sA", State::Down);
    assert_eq!(s.service_state("sB"), Some(State::Up));
    eventually_answers(&s, "app.example.com", &[b.ip()], "A dead");
    for _ in 0..20 {
        assert_eq!(
            s.dns.query_a("app.example.com"),
            vec![b.ip()],
            "only B while A is down"
        );
    }
    let down = s.service("sA").unwrap();
    assert_ne!(
        down.last_change, up_since,
        "last_change moves on a state change: {down:?}"
    );

    // Bring A back on the same address: UP again and answered again.
    let a2 = Backend::tcp_at(addr_a);
    s.wait_state("sA", State::Up);
    eventually(EVENTUALLY, "A answered again", || {
        seen(&s, "app.example.com", 8).contains(&a2.ip())
    });
}

#[test]
fn service_without_backend_is_down_and_never_answered() {
    let net = Net::new("failover_never_up");
    let b = Backend::tcp(net.svc_ip(1));
    let dead_port = Net::closed_port(net.svc_ip(0));
    let mut c = net.conf_preamble();
    c.push_str(MONITORS);
    writeln!(
        c,
        "add gslb service sA {} TCP {dead_port} -siteName site1\nbind gslb service sA -monitorName mon_tcp",
        net.svc_ip(0)
    )
    .unwrap();
    writeln!(
        c,
        "add gslb service sB {} TCP {} -siteName site1\nbind gslb service sB -monitorName mon_tcp",
        b.ip(),
        b.port()
    )
    .unwrap();
    c.push_str(
        "add gslb vserver vs_app TCP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs_app -serviceName sA\n\
         bind gslb vserver vs_app -serviceName sB\n\
         bind gslb vserver vs_app -domainName app.example.com -TTL 5\n",
    );
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);
    s.wait_state("sA", State::Down);
    s.wait_state("sB", State::Up);
    eventually_answers(&s, "app.example.com", &[b.ip()], "A never up");
}

#[test]
fn http_monitor_follows_status_code() {
    let net = Net::new("failover_http");
    let a = Backend::http(net.svc_ip(0));
    let b = Backend::http(net.svc_ip(1));
    let mut c = net.conf_preamble();
    c.push_str(MONITORS);
    for (n, be) in [("hA", &a), ("hB", &b)] {
        writeln!(
            c,
            "add gslb service {n} {} HTTP {} -siteName site1\nbind gslb service {n} -monitorName mon_http",
            be.ip(),
            be.port()
        )
        .unwrap();
    }
    c.push_str(
        "add gslb vserver vs_web HTTP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs_web -serviceName hA\n\
         bind gslb vserver vs_web -serviceName hB\n\
         bind gslb vserver vs_web -domainName web.example.com -TTL 5\n",
    );
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);
    s.wait_state("hA", State::Up);
    s.wait_state("hB", State::Up);
    // A service is UP before its first probe: wait for probes to arrive.
    eventually(EVENTUALLY, "the HTTP monitor probes the backend", || {
        a.requests().len() >= 2
    });
    let reqs = a.requests();
    assert!(
        reqs.iter().all(|r| r.starts_with("GET /health ")),
        "the monitor's -httpRequest is what the backend sees: {reqs:?}"
    );

    a.set_status(503);
    s.wait_state("hA", State::Down);
    eventually_answers(&s, "web.example.com", &[b.ip()], "A answers 503");

    a.set_status(200);
    s.wait_state("hA", State::Up);
    eventually(EVENTUALLY, "A answered again after 200", || {
        seen(&s, "web.example.com", 8).contains(&a.ip())
    });

    // A closed port is DOWN too.
    drop(b);
    s.wait_state("hB", State::Down);
    eventually_answers(&s, "web.example.com", &[a.ip()], "B closed");
}

/// One monitored service; `vs_opts` and `dom_opts` add the fallback.
fn one_service(net: &Net, a: &Backend, vs_opts: &str, dom_opts: &str, extra: &str) -> String {
    let mut c = net.conf_preamble();
    c.push_str(MONITORS);
    writeln!(
        c,
        "add gslb service sA {} TCP {} -siteName site1\nbind gslb service sA -monitorName mon_tcp",
        a.ip(),
        a.port()
    )
    .unwrap();
    c.push_str(extra);
    writeln!(
        c,
        "add gslb vserver vs_app TCP -lbMethod ROUNDROBIN {vs_opts}\n\
         bind gslb vserver vs_app -serviceName sA\n\
         bind gslb vserver vs_app -domainName app.example.com -TTL 5 {dom_opts}"
    )
    .unwrap();
    c
}

#[test]
fn backup_vserver_takes_over_when_all_down() {
    let net = Net::new("failover_backup_vs");
    let a = Backend::tcp(net.svc_ip(0));
    let backup_ip = net.svc_ip(5);
    let extra = format!(
        "add gslb service sBackup {backup_ip} TCP 80 -siteName site1\n\
         add gslb vserver vs_backup TCP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs_backup -serviceName sBackup\n"
    );
    // The backup vserver must exist before the vserver that names it.
    let s = Server::start(
        SEXTANT,
        &net,
        Syntax::Conf,
        &one_service(&net, &a, "-backupVServer vs_backup", "", &extra),
    );
    s.wait_state("sA", State::Up);
    eventually_answers(&s, "app.example.com", &[a.ip()], "primary up");

    let addr = a.kill();
    s.wait_state("sA", State::Down);
    eventually_answers(&s, "app.example.com", &[backup_ip], "primary down");

    let a2 = Backend::tcp_at(addr);
    s.wait_state("sA", State::Up);
    eventually_answers(&s, "app.example.com", &[a2.ip()], "primary back");
}

#[test]
fn backup_ip_when_all_down() {
    let net = Net::new("failover_backup_ip");
    let a = Backend::tcp(net.svc_ip(0));
    let backup = net.svc_ip(9);
    let s = Server::start(
        SEXTANT,
        &net,
        Syntax::Conf,
        &one_service(&net, &a, "", &format!("-backupIP {backup}"), ""),
    );
    s.wait_state("sA", State::Up);
    eventually_answers(&s, "app.example.com", &[a.ip()], "primary up");
    drop(a);
    s.wait_state("sA", State::Down);
    eventually_answers(&s, "app.example.com", &[backup], "backup IP");
}

#[test]
fn edr_answers_nodata_when_all_down() {
    let net = Net::new("failover_edr");
    let a = Backend::tcp(net.svc_ip(0));
    let s = Server::start(
        SEXTANT,
        &net,
        Syntax::Conf,
        &one_service(&net, &a, "-EDR ENABLED", "", ""),
    );
    s.wait_state("sA", State::Up);
    eventually_answers(&s, "app.example.com", &[a.ip()], "up");
    drop(a);
    s.wait_state("sA", State::Down);
    let mut last = None;
    let ok = wait_until(EVENTUALLY, || {
        let r = s.dns.query("app.example.com", RecordType::A);
        let nodata = r.metadata.response_code == ResponseCode::NoError
            && r.answers.is_empty()
            && has_soa_authority(&r)
            && r.metadata.authoritative;
        last = Some(r);
        nodata
    });
    assert!(ok, "EDR: expected NODATA with SOA, got {last:?}");
}

#[test]
fn last_resort_answer_when_all_down_without_fallback() {
    let net = Net::new("failover_last_resort");
    let a = Backend::tcp(net.svc_ip(0));
    let ip = a.ip();
    let s = Server::start(
        SEXTANT,
        &net,
        Syntax::Conf,
        &one_service(&net, &a, "", "", ""),
    );
    s.wait_state("sA", State::Up);
    drop(a);
    s.wait_state("sA", State::Down);
    for _ in 0..10 {
        let r = s.dns.query("app.example.com", RecordType::A);
        assert_eq!(r.metadata.response_code, ResponseCode::NoError, "{r:?}");
        assert_eq!(
            a_records(&r),
            vec![ip],
            "without backup or EDR the last-resort answer is a service address"
        );
    }
}

/// The backup vserver, when its own services are down too, gives way to the
/// domain's backup IP.
#[test]
fn backup_chain_vserver_then_backup_ip() {
    let net = Net::new("failover_chain");
    let a = Backend::tcp(net.svc_ip(0));
    let bk = Backend::tcp(net.svc_ip(1));
    let backup_ip = net.svc_ip(9);
    let extra = format!(
        "add gslb service sBackup {} TCP {} -siteName site1\n\
         bind gslb service sBackup -monitorName mon_tcp\n\
         add gslb vserver vs_backup TCP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs_backup -serviceName sBackup\n",
        bk.ip(),
        bk.port()
    );
    let s = Server::start(
        SEXTANT,
        &net,
        Syntax::Conf,
        &one_service(
            &net,
            &a,
            "-backupVServer vs_backup",
            &format!("-backupIP {backup_ip}"),
            &extra,
        ),
    );
    s.wait_state("sA", State::Up);
    s.wait_state("sBackup", State::Up);
    eventually_answers(&s, "app.example.com", &[a.ip()], "primary");
    drop(a);
    s.wait_state("sA", State::Down);
    eventually_answers(&s, "app.example.com", &[bk.ip()], "backup vserver");
    drop(bk);
    s.wait_state("sBackup", State::Down);
    eventually_answers(&s, "app.example.com", &[backup_ip], "backup IP");
}

/// The same failover story from a native TOML file: a TCP-monitored and an
/// HTTP-monitored service, a backup vserver and a backup IP.
#[test]
fn toml_config_fails_over_through_the_chain_and_recovers() {
    let net = Net::new("failover_toml");
    let a = Backend::tcp(net.svc_ip(0));
    let b = Backend::http(net.svc_ip(1));
    let bk = Backend::tcp(net.svc_ip(2));
    let backup_ip = net.svc_ip(9);
    let mut c = net.toml_preamble();
    write!(
        c,
        r#"
[[monitor]]
name = "mon_tcp"
type = "tcp"
interval = "200ms"
response_timeout = "100ms"
retries = 2
success_retries = 1

[[monitor]]
name = "mon_http"
type = "http"
interval = "200ms"
response_timeout = "150ms"
retries = 2
success_retries = 1
request = "GET /health"
status_codes = [200]

[[service]]
name = "sA"
ip = "{a_ip}"
port = {a_port}
protocol = "TCP"
site = "site1"
monitors = ["mon_tcp"]

[[service]]
name = "sB"
ip = "{b_ip}"
port = {b_port}
protocol = "HTTP"
site = "site1"
monitors = ["mon_http"]

[[service]]
name = "sBackup"
ip = "{k_ip}"
port = {k_port}
protocol = "TCP"
site = "site1"
monitors = ["mon_tcp"]

[[vserver]]
name = "vs_backup"
protocol = "TCP"
lb_method = "ROUNDROBIN"
services = [{{ name = "sBackup" }}]

[[vserver]]
name = "vs_app"
protocol = "TCP"
lb_method = "ROUNDROBIN"
backup_vserver = "vs_backup"
services = [{{ name = "sA" }}, {{ name = "sB", weight = 1 }}]
domains = [{{ name = "app.example.com", ttl = 7, backup_ip = "{backup_ip}" }}]
"#,
        a_ip = a.ip(),
        a_port = a.port(),
        b_ip = b.ip(),
        b_port = b.port(),
        k_ip = bk.ip(),
        k_port = bk.port(),
    )
    .unwrap();
    let s = Server::start(SEXTANT, &net, Syntax::Toml, &c);
    for svc in ["sA", "sB", "sBackup"] {
        s.wait_state(svc, State::Up);
    }
    eventually(EVENTUALLY, "both primaries answered", || {
        seen(&s, "app.example.com", 8) == [a.ip(), b.ip()].into_iter().collect()
    });
    let r = s.dns.query("app.example.com", RecordType::A);
    assert_eq!(r.answers[0].ttl, 7, "TTL from the TOML domain binding");

    let addr_a = a.kill();
    s.wait_state("sA", State::Down);
    eventually_answers(&s, "app.example.com", &[b.ip()], "A dead");

    b.set_status(503);
    s.wait_state("sB", State::Down);
    eventually_answers(&s, "app.example.com", &[bk.ip()], "backup vserver");

    drop(bk);
    s.wait_state("sBackup", State::Down);
    eventually_answers(&s, "app.example.com", &[backup_ip], "backup IP");

    b.set_status(200);
    let a2 = Backend::tcp_at(addr_a);
    s.wait_state("sA", State::Up);
    s.wait_state("sB", State::Up);
    eventually(EVENTUALLY, "primaries back", || {
        seen(&s, "app.example.com", 8) == [a2.ip(), b.ip()].into_iter().collect()
    });
}

#[test]
fn toml_edr_answers_nodata_when_all_down() {
    let net = Net::new("failover_toml_edr");
    let a = Backend::tcp(net.svc_ip(0));
    let mut c = net.toml_preamble();
    write!(
        c,
        r#"
[[monitor]]
name = "mon_tcp"
type = "tcp"
interval = "200ms"
response_timeout = "100ms"
retries = 2

[[service]]
name = "sA"
ip = "{}"
port = {}
protocol = "TCP"
site = "site1"
monitors = ["mon_tcp"]

[[vserver]]
name = "vs_app"
protocol = "TCP"
lb_method = "ROUNDROBIN"
empty_down_response = true
services = [{{ name = "sA" }}]
domains = [{{ name = "app.example.com", ttl = 5 }}]
"#,
        a.ip(),
        a.port()
    )
    .unwrap();
    let s = Server::start(SEXTANT, &net, Syntax::Toml, &c);
    s.wait_state("sA", State::Up);
    eventually_answers(&s, "app.example.com", &[a.ip()], "up");
    drop(a);
    s.wait_state("sA", State::Down);
    let mut last = None;
    let ok = wait_until(EVENTUALLY, || {
        let r = s.dns.query("app.example.com", RecordType::A);
        let nodata = r.metadata.response_code == ResponseCode::NoError
            && r.answers.is_empty()
            && has_soa_authority(&r);
        last = Some(r);
        nodata
    });
    assert!(ok, "EDR from TOML: expected NODATA with SOA, got {last:?}");
}
