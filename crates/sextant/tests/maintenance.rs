//! Runtime maintenance end to end (`enable|disable gslb service|vserver|
//! site`, drain), the state file that keeps it across restarts and
//! reloads, each service's history and the `/v1/events` stream: a real
//! `sextant serve`, real backends, real DNS and HTTP. Every write goes
//! through `SiteServer::post`.

use std::net::Ipv4Addr;
use std::time::Duration;

use sextant_api::{AdminEntry, HistoryEntry};
use sextant_test_support::events::EventReader;
use sextant_test_support::prelude::*;

/// The binary under test.
const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

/// The domain's backup IP: what a disabled vserver answers.
const BACKUP_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 99);

/// Site `site1` (local) and `site2`, both without metric exchange, so
/// this node's monitors decide every service; `web-1` and `web-2` at
/// site1, `web-3` at site2; vserver `vs` (round robin) on
/// `www.example.com` with a backup IP, and `vsp` (round robin, source-IP
/// persistence, 2 minutes) on `sticky.example.com`, over the same
/// services. `extra` is appended.
fn config(net: &Net, backends: &[Backend], extra: &str) -> String {
    let me = net.site_ip(0);
    let mut c = format!(
        "add service adns1 {me} ADNS {DNS_PORT}\n\
         add gslb site site1 {me} -metricExchange DISABLED\n\
         add gslb site site2 {} -metricExchange DISABLED\n\
         add dns soaRec example.com -originServer ns1.example.com -contact hostmaster.example.com\n\
         add dns nsRec example.com ns1.example.com\n\
         add lb monitor tcp TCP -interval 200 MSEC -resptimeout 100 MSEC -retries 2\n",
        net.site_ip(1)
    );
    for (i, b) in backends.iter().enumerate() {
        let site = if i < 2 { "site1" } else { "site2" };
        c += &format!(
            "add gslb service web-{} {} TCP {} -siteName {site}\n\
             bind gslb service web-{} -monitorName tcp\n",
            i + 1,
            b.ip(),
            b.port(),
            i + 1
        );
    }
    c += "add gslb vserver vs TCP -lbMethod ROUNDROBIN\n\
          add gslb vserver vsp TCP -lbMethod ROUNDROBIN -persistenceType SOURCEIP -timeout 2\n";
    for i in 1..=backends.len() {
        c += &format!(
            "bind gslb vserver vs -serviceName web-{i}\n\
             bind gslb vserver vsp -serviceName web-{i}\n"
        );
    }
    c += &format!(
        "bind gslb vserver vs -domainName www.example.com -TTL 5 -backupIP {BACKUP_IP}\n\
         bind gslb vserver vsp -domainName sticky.example.com -TTL 5\n"
    );
    c + extra
}

fn start(net: &Net, dir: &std::path::Path, backends: &[Backend]) -> SiteServer {
    let site = SiteServer::start(
        SEXTANT,
        dir,
        "site1",
        net.site_ip(0),
        &config(net, backends, ""),
        None,
    );
    eventually_ok(EVENTUALLY, "every service UP", || {
        for i in 1..=backends.len() {
            site.expect_service(&format!("web-{i}"), State::Up)?;
        }
        Ok(())
    });
    site
}

/// Every address `www.example.com` is answered with over `n` queries.
fn answers(site: &SiteServer, n: usize) -> Vec<Ipv4Addr> {
    let mut all: Vec<Ipv4Addr> = (0..n)
        .flat_map(|_| site.query_a("www.example.com"))
        .collect();
    all.sort();
    all.dedup();
    all
}

/// POST that must answer 200 with an [`AdminEntry`].
fn admin(site: &SiteServer, path: &str, body: &str) -> AdminEntry {
    let (code, text) = site.post(path, body);
    assert_eq!(code, 200, "POST {path}: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("POST {path}: {e}: {text}"))
}

fn sticky_from(site: &SiteServer, client: Ipv4Addr) -> Vec<Ipv4Addr> {
    site.try_query_a_from(client, "sticky.example.com")
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn disable_enable_and_drain_take_effect_at_once_and_survive_restart_and_reload() {
    let net = Net::for_sites("maint_admin", 2);
    let scratch = net.scratch();
    let backends: Vec<Backend> = (0..3).map(|i| Backend::tcp(net.svc_ip(i))).collect();
    let ips: Vec<Ipv4Addr> = backends.iter().map(|b| b.ip()).collect();
    let mut site = start(&net, &scratch.0, &backends);
    assert_eq!(answers(&site, 6), ips);

    // Disable web-1: out of the answers at once, still monitored and UP.
    let e = admin(
        &site,
        "/v1/services/web-1/disable",
        r#"{"reason": "kernel patch"}"#,
    );
    assert_eq!(
        (e.kind.as_str(), e.name.as_str(), e.state.as_str()),
        ("service", "web-1", "disabled")
    );
    assert_eq!(e.reason.as_deref(), Some("kernel patch"));
    assert!(e.since.is_some());
    assert_eq!(answers(&site, 9), ips[1..].to_vec());
    let v = site.service("web-1");
    assert_eq!(v.state, State::Up, "health is separate: {v:?}");
    assert_eq!(v.admin_state, "disabled");
    assert_eq!(v.admin_reason.as_deref(), Some("kernel patch"));
    let why = site.explain("www.example.com", "198.51.100.1");
    let text = format!("{:#?}", why.trace);
    assert!(
        text.contains("skipped web-1") && text.contains("disabled by operator at"),
        "{text}"
    );
    assert!(text.contains("kernel patch"), "{text}");
    let listed: Vec<AdminEntry> = site.api("/v1/maintenance");
    assert_eq!(listed, vec![e]);

    // Unknown names: 404 naming the nearest one; nothing changes.
    let (code, text) = site.post("/v1/services/web-11/disable", "");
    assert_eq!(code, 404, "{text}");
    assert!(text.contains("did you mean \\\"web-1\\\""), "{text}");
    let (code, text) = site.post("/v1/sites/site2/drain", "");
    assert_eq!(code, 404, "drain is for services only: {text}");

    // Enable: back in the answers.
    let e = admin(&site, "/v1/services/web-1/enable", "");
    assert_eq!((e.state.as_str(), e.since), ("enabled", None));
    assert_eq!(answers(&site, 6), ips);
    assert!(site.api::<Vec<AdminEntry>>("/v1/maintenance").is_empty());

    // Drain: a client persisted to the service keeps it, new clients and
    // the vserver without persistence never get it.
    let old_client = net.client_ip(0);
    let kept = sticky_from(&site, old_client);
    assert_eq!(kept.len(), 1);
    let drained = ips.iter().position(|ip| *ip == kept[0]).unwrap() + 1;
    let e = admin(
        &site,
        &format!("/v1/services/web-{drained}/drain"),
        r#"{"reason": "moving"}"#,
    );
    assert_eq!(e.state, "draining");
    for _ in 0..3 {
        assert_eq!(
            sticky_from(&site, old_client),
            kept,
            "persisted client moved"
        );
    }
    for k in 1..10 {
        let got = sticky_from(&site, net.client_ip(k));
        assert_ne!(got, kept, "new client {} got the draining service", k);
    }
    assert!(!answers(&site, 6).contains(&kept[0]));
    let why = site.explain("www.example.com", "198.51.100.1");
    assert!(
        format!("{:?}", why.trace).contains("draining since"),
        "{:#?}",
        why.trace
    );
    admin(&site, &format!("/v1/services/web-{drained}/enable"), "");

    // A disabled vserver answers as when nothing is UP: the backup IP.
    admin(&site, "/v1/vservers/vs/disable", "");
    assert_eq!(site.query_a("www.example.com"), vec![BACKUP_IP]);
    admin(&site, "/v1/vservers/vs/enable", "");
    assert_eq!(answers(&site, 6), ips);

    // A disabled site: its services are out.
    admin(
        &site,
        "/v1/sites/site2/disable",
        r#"{"reason": "datacenter move"}"#,
    );
    assert_eq!(answers(&site, 6), ips[..2].to_vec());
    assert_eq!(site.service("web-3").admin_state, "disabled");
    assert_eq!(
        site.service("web-3").admin_reason.as_deref(),
        Some("datacenter move")
    );
    admin(&site, "/v1/sites/site2/enable", "");

    // Restart: the state file keeps web-2 disabled from the first answer.
    admin(
        &site,
        "/v1/services/web-2/disable",
        r#"{"reason": "disk swap"}"#,
    );
    let file = scratch.0.join("site1.admin-state.json");
    let saved = std::fs::read_to_string(&file).expect("state file written");
    assert!(
        saved.contains("web-2") && saved.contains("disk swap"),
        "{saved}"
    );
    site.stop();
    site.restart();
    assert_eq!(site.service("web-2").admin_state, "disabled");
    eventually_ok(EVENTUALLY, "UP again after restart", || {
        site.expect_service("web-1", State::Up)?;
        site.expect_service("web-3", State::Up).map(|_| ())
    });
    assert_eq!(answers(&site, 6), vec![ips[0], ips[2]]);

    // SIGHUP reload: still disabled; a reload without web-2 drops the mark.
    site.reload(&config(&net, &backends, "# reloaded\n"));
    eventually(EVENTUALLY, "generation 2", || {
        site.try_status().is_ok_and(|s| s.generation == 2)
    });
    assert_eq!(site.service("web-2").admin_state, "disabled");
    assert_eq!(answers(&site, 6), vec![ips[0], ips[2]]);
    let text = config(&net, &backends, "")
        .lines()
        .filter(|l| !l.contains("web-2"))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    site.reload(&text);
    eventually(EVENTUALLY, "generation 3", || {
        site.try_status().is_ok_and(|s| s.generation == 3)
    });
    assert!(site.api::<Vec<AdminEntry>>("/v1/maintenance").is_empty());
    assert!(
        site.log().contains("service web-2 is no longer configured"),
        "no log line for the dropped mark"
    );
    let saved = std::fs::read_to_string(&file).expect("state file");
    assert!(!saved.contains("web-2"), "{saved}");
}

#[test]
fn a_corrupt_state_file_stops_the_start_and_names_the_file() {
    let net = Net::for_sites("maint_corrupt", 2);
    let scratch = net.scratch();
    let backends: Vec<Backend> = (0..3).map(|i| Backend::tcp(net.svc_ip(i))).collect();
    std::fs::write(
        scratch.0.join("site1.admin-state.json"),
        "{\"version\": 1, \"marks\": [",
    )
    .unwrap();
    let mut site = SiteServer::spawn(
        SEXTANT,
        &scratch.0,
        "site1",
        net.site_ip(0),
        &config(&net, &backends, ""),
    );
    let status = site
        .wait_exit(Duration::from_secs(20))
        .expect("the server must not start");
    assert!(!status.success());
    let log = site.log();
    assert!(
        log.contains("site1.admin-state.json") && log.contains("not valid"),
        "{log}"
    );
}

#[test]
fn events_stream_transitions_maintenance_and_reloads_and_history_keeps_transitions() {
    let net = Net::for_sites("maint_events", 2);
    let scratch = net.scratch();
    let mut backends: Vec<Backend> = (0..3).map(|i| Backend::tcp(net.svc_ip(i))).collect();
    let site = start(&net, &scratch.0, &backends);
    let mut events = EventReader::connect(site.api_addr, None, "");

    // A backend dies: a transition.
    let dead = backends.remove(0);
    let addr = dead.kill();
    events.wait_for(&[
        "event: transition",
        r#""service":"web-1""#,
        r#""to":"DOWN""#,
    ]);
    // A maintenance change and a reload.
    admin(&site, "/v1/services/web-2/disable", r#"{"reason":"test"}"#);
    events.wait_for(&["event: maintenance", r#""state":"disabled""#]);
    backends.insert(0, Backend::tcp_at(addr));
    site.reload(&config(&net, &backends, "# reloaded\n"));
    events.wait_for(&["event: reload", r#""generation":2"#, r#""result":"ok""#]);
    // The backend is back: UP again.
    events.wait_for(&[r#""to":"UP""#]);

    let history: Vec<HistoryEntry> = site.api("/v1/services/web-1/history");
    let steps: Vec<(&str, &str)> = history
        .iter()
        .map(|h| (h.from.as_str(), h.to.as_str()))
        .collect();
    assert!(
        steps.ends_with(&[("UP", "DOWN"), ("DOWN", "UP")]),
        "{history:#?}"
    );
    let down = &history[history.len() - 2];
    assert!(down.reason.contains("monitor tcp"), "{down:?}");
    let (code, _) = site.get("/v1/services/nosuch/history").unwrap();
    assert_eq!(code, 404);
}

#[test]
fn events_stream_metric_exchange_links_going_down() {
    let net = Net::for_sites("maint_events_mep", 2);
    let scratch = net.scratch();
    let c = format!(
        "set gslb parameter -MEPKeepAliveTimeout 1\n\
         add gslb site site1 {}\n\
         add gslb site site2 {}\n\
         add dns soaRec example.com -originServer ns1.example.com -contact hostmaster.example.com\n\
         add dns nsRec example.com ns1.example.com\n",
        net.site_ip(0),
        net.site_ip(1)
    );
    let s1 = SiteServer::start(SEXTANT, &scratch.0, "site1", net.site_ip(0), &c, None);
    let mut s2 = SiteServer::start(SEXTANT, &scratch.0, "site2", net.site_ip(1), &c, None);
    eventually_ok(EVENTUALLY, "metric exchange UP", || {
        s1.expect_mep("site2", "UP").map(|_| ())
    });
    let mut events = EventReader::connect(s1.api_addr, None, "");
    s2.stop();
    events.wait_for(&["event: mep", r#""site":"site2""#, r#""state":"DOWN""#]);
    s2.restart();
    events.wait_for(&[r#""state":"UP""#]);
}

/// A saved appliance file's own administrative state: `-state DISABLED`
/// on `add gslb service web-1` and a `disable gslb vserver vsp` line.
/// They are maintenance marks at the first start (no state file yet),
/// listed with where they came from; `sextant cli enable gslb service`
/// lifts web-1's, and a restart keeps it lifted (the state file wins).
#[test]
fn the_configurations_disable_lines_are_marks_at_first_start_and_the_operator_lifts_them() {
    let net = Net::for_sites("maint_config", 2);
    let scratch = net.scratch();
    let backends: Vec<Backend> = (0..3).map(|i| Backend::tcp(net.svc_ip(i))).collect();
    let ips: Vec<Ipv4Addr> = backends.iter().map(|b| b.ip()).collect();
    let text: String = config(&net, &backends, "disable gslb vserver vsp\n")
        .lines()
        .map(|l| {
            if l.starts_with("add gslb service web-1 ") {
                format!("{l} -state DISABLED\n")
            } else if l.starts_with("add gslb vserver vs ") {
                format!("{l} -state ENABLED\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let line_of = |start: &str| {
        text.lines()
            .position(|l| l.starts_with(start))
            .expect("line")
            + 1
    };
    let (web1_line, vsp_line) = (
        line_of("add gslb service web-1 "),
        line_of("disable gslb vserver vsp"),
    );
    let state_file = scratch.0.join("site1.admin-state.json");
    assert!(!state_file.exists());
    let mut site = SiteServer::start(SEXTANT, &scratch.0, "site1", net.site_ip(0), &text, None);
    eventually_ok(EVENTUALLY, "every service UP", || {
        for i in 1..=3 {
            site.expect_service(&format!("web-{i}"), State::Up)?;
        }
        Ok(())
    });
    // Out of the answers from the start: web-1 of vs, and every answer of
    // vsp (disabled, no backup: NODATA).
    assert_eq!(answers(&site, 9), ips[1..].to_vec());
    assert!(sticky_from(&site, net.client_ip(0)).is_empty());
    let listed: Vec<AdminEntry> = site.api("/v1/maintenance");
    let shown: Vec<(&str, &str, &str, Option<&str>)> = listed
        .iter()
        .map(|e| {
            (
                e.kind.as_str(),
                e.name.as_str(),
                e.state.as_str(),
                e.reason.as_deref(),
            )
        })
        .collect();
    let (r1, r2) = (
        format!("disabled in the configuration (line {web1_line})"),
        format!("disabled in the configuration (line {vsp_line})"),
    );
    assert_eq!(
        shown,
        vec![
            ("vserver", "vsp", "disabled", Some(r2.as_str())),
            ("service", "web-1", "disabled", Some(r1.as_str())),
        ]
    );
    assert!(state_file.exists(), "the marks are saved at once");

    // The operator enables web-1 with the CLI: back in the answers.
    let token = site.config.with_extension("api-tokens");
    let o = SEXTANT
        .command_in(site.ns.as_deref())
        .args(["cli", "--server", &format!("http://{}", site.api_addr)])
        .args(["--token-file", token.to_str().expect("utf-8 path")])
        .args(["enable", "gslb", "service", "web-1"])
        .output()
        .expect("run sextant cli");
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(answers(&site, 9), ips);

    // Restart with the same file: the state file wins, web-1 stays
    // enabled, vsp stays disabled.
    site.stop();
    site.restart();
    eventually_ok(EVENTUALLY, "UP after restart", || {
        for i in 1..=3 {
            site.expect_service(&format!("web-{i}"), State::Up)?;
        }
        Ok(())
    });
    assert_eq!(answers(&site, 9), ips);
    let listed: Vec<AdminEntry> = site.api("/v1/maintenance");
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].name, "vsp");

    // A reload that adds a disable line for web-3 applies it; the lines
    // already there (web-1's) do not come back.
    let reloaded = format!("{text}disable gslb service web-3\n");
    site.reload(&reloaded);
    eventually(EVENTUALLY, "generation 2", || {
        site.try_status().is_ok_and(|s| s.generation == 2)
    });
    assert_eq!(answers(&site, 9), ips[..2].to_vec());
    let web3 = site.service("web-3");
    assert_eq!(web3.admin_state, "disabled");
    let line = reloaded.lines().count();
    assert_eq!(
        web3.admin_reason,
        Some(format!("disabled in the configuration (line {line})"))
    );
}
