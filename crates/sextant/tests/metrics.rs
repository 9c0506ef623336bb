//! `/metrics` scraped by a real Prometheus: after dig queries its query API
//! returns the answer counters dig saw, and a backend killed in the test
//! shows its state series at 0. `/v1/stats` agrees; counters survive a
//! reload by name.

use sextant_test_support::prelude::*;
use sextant_test_support::prometheus::Prometheus;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

const MONITORS: &str = "\
add lb monitor mon_tcp TCP -interval 200 MSEC -resptimeout 100 MSEC -retries 2 -successRetries 1
";

/// Services `names` on `backends`, TCP-monitored, behind one ROUNDROBIN
/// vserver answering `app.example.com`.
fn config(net: &Net, services: &[(&str, &Backend)]) -> String {
    let mut c = net.conf_preamble();
    c.push_str(MONITORS);
    c.push_str("add gslb vserver vs_app TCP -lbMethod ROUNDROBIN\n");
    for (n, be) in services {
        writeln!(
            c,
            "add gslb service {n} {} TCP {} -siteName site1\n\
             bind gslb service {n} -monitorName mon_tcp\n\
             bind gslb vserver vs_app -serviceName {n}",
            be.ip(),
            be.port()
        )
        .unwrap();
    }
    c.push_str("bind gslb vserver vs_app -domainName app.example.com -TTL 5\n");
    c
}

/// `n` queries with dig; how often each address was answered.
fn dig_answers(s: &Server, name: &str, n: usize) -> BTreeMap<String, u64> {
    let mut seen = BTreeMap::new();
    for _ in 0..n {
        let out = dig(None, s.net.dns_addr(), &["+short", name, "A"]);
        for line in out.lines().filter(|l| !l.is_empty()) {
            *seen.entry(line.to_string()).or_default() += 1;
        }
    }
    seen
}

/// The value of a one-sample PromQL query, if it has exactly one sample.
fn value(p: &Prometheus, promql: &str) -> Option<f64> {
    match p.query(promql).ok()?.as_slice() {
        [one] => Some(one.value),
        _ => None,
    }
}

/// Waits until Prometheus has scraped `promql` with value `want`.
fn prometheus_says(p: &Prometheus, promql: &str, want: f64) {
    let mut last = None;
    let ok = wait_until(EVENTUALLY, || {
        last = value(p, promql);
        last == Some(want)
    });
    assert!(
        ok,
        "Prometheus never gave {promql} = {want} (last: {last:?}; target: {:?})",
        p.target_health()
    );
}

fn stats(s: &Server) -> sextant_api::Stats {
    s.get("/v1/stats")
}

#[test]
fn prometheus_sees_answers_per_service_and_a_dead_backend() {
    let net = Net::new("metrics_prometheus");
    let a = Backend::tcp(net.svc_ip(0));
    let b = Backend::tcp(net.svc_ip(1));
    let s = Server::start(
        SEXTANT,
        &net,
        Syntax::Conf,
        &config(&net, &[("sA", &a), ("sB", &b)]),
    );
    s.wait_state("sA", State::Up);
    s.wait_state("sB", State::Up);
    let Some(p) = Prometheus::start(
        "metrics_prometheus",
        net.api_addr(),
        Duration::from_millis(300),
        None,
    ) else {
        return;
    };
    let before = stats(&s);
    let answered = |st: &sextant_api::Stats, name: &str| {
        st.services
            .iter()
            .find(|x| x.name == name)
            .map_or(0, |x| x.answers)
    };
    let hits = |st: &sextant_api::Stats| {
        st.vservers
            .iter()
            .find(|v| v.name == "vs_app")
            .map_or(0, |v| v.hits)
    };

    let seen = dig_answers(&s, "app.example.com", 10);
    let of = |ip: std::net::Ipv4Addr| seen.get(&ip.to_string()).copied().unwrap_or(0);
    let (n_a, n_b) = (of(a.ip()), of(b.ip()));
    assert_eq!(n_a + n_b, 10, "one address per answer: {seen:?}");
    assert!(n_a > 0 && n_b > 0, "round robin answers both: {seen:?}");

    let after = stats(&s);
    assert_eq!(answered(&after, "sA") - answered(&before, "sA"), n_a);
    assert_eq!(answered(&after, "sB") - answered(&before, "sB"), n_b);
    assert_eq!(hits(&after) - hits(&before), 10);
    let per_vserver = &after.vservers[0].answers;
    assert_eq!(per_vserver.get("sA"), Some(&answered(&after, "sA")));

    // What Prometheus scraped and stored is what dig saw.
    let want = |x: u64| x as f64;
    prometheus_says(
        &p,
        r#"sextant_service_answers_total{service="sA",site="site1"}"#,
        want(answered(&before, "sA") + n_a),
    );
    prometheus_says(
        &p,
        r#"sextant_service_answers_total{service="sB"}"#,
        want(answered(&before, "sB") + n_b),
    );
    prometheus_says(
        &p,
        r#"sextant_vserver_hits_total{vserver="vs_app"}"#,
        want(hits(&before) + 10),
    );
    let domain_before = before.domains.first().map_or(0, |d| d.answers);
    prometheus_says(
        &p,
        r#"sextant_domain_answers_total{domain="app.example.com",vserver="vs_app"}"#,
        want(domain_before + 10),
    );
    prometheus_says(
        &p,
        r#"sextant_dns_decisions_total{reason="method"}"#,
        want(hits(&before) + 10),
    );
    prometheus_says(
        &p,
        r#"sextant_dns_method_decisions_total{method="ROUNDROBIN",result="decided"}"#,
        want(hits(&before) + 10),
    );
    prometheus_says(
        &p,
        r#"sextant_service_up{service="sA",vserver="vs_app"}"#,
        1.0,
    );
    prometheus_says(&p, r#"sextant_build_info{version!=""}"#, 1.0);

    // Kill A: its state series goes to 0, B's stays 1.
    a.kill();
    s.wait_state("sA", State::Down);
    prometheus_says(
        &p,
        r#"sextant_service_up{service="sA",site="site1",vserver="vs_app"}"#,
        0.0,
    );
    prometheus_says(
        &p,
        r#"sextant_monitor_up{service="sA",monitor="mon_tcp"}"#,
        0.0,
    );
    prometheus_says(&p, r#"sextant_service_up{service="sB"}"#, 1.0);
    prometheus_says(
        &p,
        r#"sextant_service_transitions_total{service="sA",to="down"}"#,
        1.0,
    );
    let failures = value(
        &p,
        r#"sextant_monitor_probes_total{monitor="mon_tcp",result="failure"}"#,
    );
    assert!(
        failures.is_some_and(|f| f >= 2.0),
        "two failed probes at least took A down: {failures:?}"
    );
}

#[test]
fn answer_counters_survive_a_reload_by_name() {
    let net = Net::new("metrics_reload");
    let a = Backend::tcp(net.svc_ip(0));
    let b = Backend::tcp(net.svc_ip(1));
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net, &[("sA", &a)]));
    s.wait_state("sA", State::Up);
    for _ in 0..5 {
        assert_eq!(s.dns.query_a("app.example.com"), vec![a.ip()]);
    }
    let count = |st: &sextant_api::Stats, name: &str| {
        st.services
            .iter()
            .find(|x| x.name == name)
            .map(|x| x.answers)
    };
    let before = count(&stats(&s), "sA").expect("sA counted");
    assert!(before >= 5, "{before}");
    let generation = s.status().generation;

    // sB comes first now, so sA's id changes: its count must not.
    s.reload(&config(&net, &[("sB", &b), ("sA", &a)]));
    eventually(EVENTUALLY, "reloaded", || {
        s.status().generation > generation
    });
    s.wait_state("sB", State::Up);
    assert_eq!(count(&stats(&s), "sA"), Some(before));
    assert_eq!(count(&stats(&s), "sB"), Some(0));
    let mut seen_b = 0;
    for _ in 0..6 {
        let answer = s.dns.query_a("app.example.com");
        seen_b += answer.iter().filter(|ip| **ip == b.ip()).count() as u64;
    }
    let after = stats(&s);
    assert_eq!(count(&after, "sB"), Some(seen_b));
    assert_eq!(count(&after, "sA"), Some(before + 6 - seen_b));

    // The exposition names the counters with their _total suffix, and
    // every family has its HELP and TYPE.
    let (code, body) = http_get(net.api_addr(), "/metrics").expect("GET /metrics");
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains(&format!(
            "sextant_service_answers_total{{service=\"sA\",site=\"site1\"}} {}",
            before + 6 - seen_b
        )),
        "{body}"
    );
    assert!(body.contains("# TYPE sextant_service_up gauge"), "{body}");
    assert!(
        body.contains("sextant_config_reloads_total{result=\"success\"} 1"),
        "{body}"
    );
}

/// The query log's whole lines so far, parsed (the writer may be in the
/// middle of the last one: a line counts once its newline is written).
fn log_lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let whole = text.rfind('\n').map_or("", |end| &text[..end]);
    whole
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn query_log_writes_one_json_line_per_query_and_reopens_on_sighup() {
    let net = Net::new("metrics_query_log");
    let a = Backend::tcp(net.svc_ip(0));
    let dir = Scratch::new("metrics_query_log");
    let path = dir.0.join("queries.log");
    let conf = config(&net, &[("sA", &a)]);
    let s = Server::start_with(
        SEXTANT,
        &net,
        Syntax::Conf,
        &conf,
        &["--query-log", path.to_str().unwrap()],
    );
    s.wait_state("sA", State::Up);
    for _ in 0..5 {
        let out = dig(
            None,
            net.dns_addr(),
            &["+short", "+subnet=192.0.2.0/24", "app.example.com", "A"],
        );
        assert_eq!(out.trim(), a.ip().to_string());
    }
    let mut lines = Vec::new();
    eventually(EVENTUALLY, "five lines in the query log", || {
        lines = log_lines(&path);
        lines.len() >= 5
    });
    let ours: Vec<_> = lines
        .iter()
        .filter(|l| l["name"] == "app.example.com")
        .collect();
    assert_eq!(ours.len(), 5, "{lines:?}");
    for l in ours {
        assert_eq!(l["type"], "A", "{l}");
        assert_eq!(l["rcode"], "NOERROR", "{l}");
        assert_eq!(l["answers"], serde_json::json!([a.ip().to_string()]), "{l}");
        assert_eq!(l["vserver"], "vs_app", "{l}");
        assert_eq!(l["method"], "ROUNDROBIN", "{l}");
        assert_eq!(l["reason"], "method", "{l}");
        assert_eq!(l["ecs"], "192.0.2.0/24", "{l}");
        let client: std::net::IpAddr = l["client"].as_str().unwrap().parse().unwrap();
        assert!(client.is_loopback(), "{l}");
        let time = l["time"].as_str().unwrap();
        assert!(time.len() == 24 && time.ends_with('Z'), "RFC 3339: {l}");
    }
    // A name we are not authoritative for: REFUSED, no vserver.
    let _ = dig(None, net.dns_addr(), &["+short", "www.example.org", "A"]);
    eventually(EVENTUALLY, "the refused query logged", || {
        log_lines(&path)
            .iter()
            .any(|l| l["name"] == "www.example.org" && l["rcode"] == "REFUSED")
    });

    // logrotate: the file is moved away, SIGHUP, and the next queries go
    // to a new file of the same name.
    let rotated = dir.0.join("queries.log.1");
    std::fs::rename(&path, &rotated).unwrap();
    s.reload(&conf);
    eventually(EVENTUALLY, "queries in the reopened file", || {
        let _ = s.dns.query_a("app.example.com");
        log_lines(&path)
            .iter()
            .any(|l| l["name"] == "app.example.com")
    });
    let (_, body) = http_get(net.api_addr(), "/metrics").expect("GET /metrics");
    assert!(body.contains("sextant_query_log_dropped_total 0"), "{body}");
}

#[test]
fn query_log_samples_one_query_in_n() {
    let net = Net::new("metrics_query_log_sample");
    let a = Backend::tcp(net.svc_ip(0));
    let dir = Scratch::new("metrics_query_log_sample");
    let path = dir.0.join("queries.log");
    let s = Server::start_with(
        SEXTANT,
        &net,
        Syntax::Conf,
        &config(&net, &[("sA", &a)]),
        &[
            "--query-log",
            path.to_str().unwrap(),
            "--query-log-sample",
            "4",
            "--udp-workers",
            "2",
        ],
    );
    s.wait_state("sA", State::Up);
    for _ in 0..80 {
        assert_eq!(s.dns.query_a("app.example.com"), vec![a.ip()]);
    }
    // Each of the 2 workers logs every 4th query it answers: 18 to 20 of 80.
    let mut n = 0;
    let ok = wait_until(EVENTUALLY, || {
        n = log_lines(&path)
            .iter()
            .filter(|l| l["name"] == "app.example.com")
            .count();
        n >= 18
    });
    assert!(ok && n <= 20, "{n} lines for 80 queries sampled 1 in 4");
}

/// A read-only token (`NAME TOKEN read` in the token file) is what
/// Prometheus carries when reads need a token, as they do by default off
/// loopback: the scrape works with it, while the same token cannot write,
/// nor read the configuration's text, and a refused write changes nothing.
#[test]
fn a_read_only_token_lets_prometheus_scrape_and_nothing_more() {
    use std::os::unix::fs::PermissionsExt;
    let net = Net::new("metrics_read_token");
    let a = Backend::tcp(net.svc_ip(0));
    let dir = net.scratch();
    let tokens = dir.0.join("api-tokens");
    let (ops, prom) = (TEST_TOKEN, "prom-fedcba9876543210fedc");
    std::fs::write(&tokens, format!("ops {ops}\nprometheus {prom} read\n")).unwrap();
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).unwrap();
    // Prometheus reads its credentials file as the scrape's bearer token.
    let credentials = dir.0.join("prometheus-token");
    std::fs::write(&credentials, prom).unwrap();
    let mut s = Server::start_with(
        SEXTANT,
        &net,
        Syntax::Conf,
        &config(&net, &[("sA", &a)]),
        &[
            "--api-token-file",
            tokens.to_str().unwrap(),
            "--api-reads",
            "token",
        ],
    );
    s.token = Some(ops.to_string());
    s.wait_state("sA", State::Up);
    let api = net.api_addr();
    let get = |path: &str, token: Option<&str>| {
        http_get_as(api, path, token, Duration::from_secs(5)).unwrap()
    };
    assert_eq!(get("/metrics", None).0, 401, "reads need a token here");
    assert_eq!(get("/metrics", Some(prom)).0, 200);
    assert_eq!(get("/v1/services", Some(prom)).0, 200);
    let (code, body) = get("/v1/config", Some(prom));
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains("`prometheus` is read-only") && !body.contains(prom),
        "{body}"
    );
    assert_eq!(get("/v1/config", Some(ops)).0, 200);

    // A write with the read-only token is refused and changes nothing.
    let (code, body) =
        http_send_json(api, "POST", "/v1/services/sA/disable", "{}", Some(prom)).unwrap();
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("this request writes"), "{body}");
    let services: Vec<sextant_api::Service> =
        serde_json::from_str(&get("/v1/services", Some(prom)).1).unwrap();
    let sa = services.iter().find(|x| x.name == "sA").unwrap();
    assert_eq!(sa.admin_state, "enabled", "a refused write changed nothing");
    // The CLI says why, from the server's answer.
    let out = SEXTANT.run(&[
        "cli",
        "--server",
        &api.to_string(),
        "--token-file",
        credentials.to_str().unwrap(),
        "disable gslb service sA",
    ]);
    assert!(!out.status.success(), "{}", output_text(&out));
    assert!(
        output_text(&out).contains("read-only"),
        "{}",
        output_text(&out)
    );

    // Prometheus, configured with `authorization.credentials_file`, scrapes.
    let Some(p) = Prometheus::start(
        "metrics_read_token",
        api,
        Duration::from_millis(300),
        Some(credentials.to_str().unwrap()),
    ) else {
        return;
    };
    prometheus_says(&p, r#"sextant_service_up{service="sA",site="site1"}"#, 1.0);
    let (health, error) = p.target_health().unwrap();
    assert_eq!(health, "up", "scrape error: {error}");
    // The log names the refusal, never the token.
    let log = s.log();
    assert!(log.contains("read-only token"), "{log}");
    assert!(!log.contains(prom), "the token is never logged");
}
