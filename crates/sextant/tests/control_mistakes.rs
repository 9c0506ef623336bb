//! Control-plane mistakes lose nothing (issue 38, item 4), each played
//! against the real `sextant serve` over its real API and DNS sockets:
//! an empty configuration put by `curl --data-binary @missing-file`, a
//! misspelt dry run, listeners the host cannot open, figures out of their
//! range, and temporary files a crash left beside the configuration.

use std::fs;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::os::unix::fs::PermissionsExt;

use sextant_test_support::prelude::*;

/// The binary under test.
const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

const CONFIG: &str = "/v1/config";

/// One site answering www.example.com with web1 (unmonitored, UP).
fn config(net: &Net) -> String {
    format!(
        "{}add gslb service web1 {} HTTP 80 -siteName site1\n\
         add gslb vserver vs1 HTTP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs1 -serviceName web1\n\
         bind gslb vserver vs1 -domainName www.example.com -TTL 5\n",
        net.conf_preamble(),
        net.svc_ip(1),
    )
}

/// The same with a second domain, the change the tests try to make.
fn with_api_domain(net: &Net) -> String {
    config(net) + "bind gslb vserver vs1 -domainName api.example.com -TTL 5\n"
}

fn rejected(r: &Reply, status: u16) -> ConfigRejected {
    assert_eq!(r.status, status, "{r:?}");
    serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("not a ConfigRejected ({e}): {r:?}"))
}

/// The error of an `ApiError` answer.
fn api_error(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    v["error"].as_str().unwrap_or_default().to_string()
}

#[test]
fn an_empty_configuration_is_refused_and_the_previous_file_is_kept() {
    let net = Net::new("control_empty");
    let text = config(&net);
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &text);
    let web = vec![net.svc_ip(1)];
    assert_eq!(s.dns.query_a("www.example.com"), web);
    let generation = s.status().generation;

    // What `curl -s --data-binary @missing-file` sends: nothing. Today's
    // node took it, wrote a 0-byte file and answered REFUSED.
    for path in [format!("{CONFIG}?dry_run=1"), CONFIG.to_string()] {
        let r = rejected(&s.put(&path, &[], ""), 422);
        assert!(
            r.errors.iter().any(|e| e.contains("no local site")),
            "{r:?}"
        );
        assert!(
            r.errors
                .iter()
                .any(|e| e.contains("removes every zone, GSLB service and vserver")),
            "{r:?}"
        );
        assert!(
            r.errors.iter().all(|e| e.contains("allow_empty=1")),
            "{r:?}"
        );
    }
    assert_eq!(
        fs::read_to_string(&s.config).unwrap(),
        text,
        "the file changed"
    );
    assert_eq!(s.status().generation, generation);
    assert_eq!(
        s.dns.query_a("www.example.com"),
        web,
        "the node lost its answer"
    );
    let prev = s.config.with_file_name("sextant.conf.prev");
    assert!(!prev.exists(), "nothing was applied, nothing is kept");

    // An apply keeps the file it replaces, with its mode, beside it.
    fs::set_permissions(&s.config, fs::Permissions::from_mode(0o640)).unwrap();
    let new = with_api_domain(&net);
    let r = s.put(CONFIG, &[], &new);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(fs::read_to_string(&s.config).unwrap(), new);
    assert_eq!(fs::read_to_string(&prev).unwrap(), text);
    for f in [&s.config, &prev] {
        let mode = fs::metadata(f).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o640, "{}", f.display());
    }
    assert_eq!(s.dns.query_a("api.example.com"), web);

    // Meant: allow_empty=1 takes it, and .prev holds the way back.
    let r = s.put(&format!("{CONFIG}?allow_empty=1"), &[], "");
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(fs::read_to_string(&s.config).unwrap(), "");
    assert!(s.dns.query_a("www.example.com").is_empty());
    let back = fs::read_to_string(&prev).unwrap();
    assert_eq!(back, new);
    let r = s.put(CONFIG, &[], &back);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(s.dns.query_a("api.example.com"), web);
    assert_eq!(fs::read_to_string(&s.config).unwrap(), new);
}

#[test]
fn a_misspelt_parameter_is_refused_and_never_applies() {
    let net = Net::new("control_params");
    let text = config(&net);
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &text);
    let generation = s.status().generation;
    let new = with_api_domain(&net);

    // `dryrun` for `dry_run`: today the change was applied for real.
    let r = s.put(&format!("{CONFIG}?dryrun=1"), &[], &new);
    assert_eq!(r.status, 400, "{r:?}");
    let e = api_error(&r.body);
    assert!(
        e.contains("\"dryrun\"") && e.contains("accepted: allow_empty, dry_run"),
        "{e}"
    );
    assert_eq!(
        fs::read_to_string(&s.config).unwrap(),
        text,
        "the file changed"
    );
    assert_eq!(s.status().generation, generation);
    assert!(s.dns.query_a("api.example.com").is_empty(), "applied");

    // A yes/no that is neither is refused, not guessed.
    let r = s.put(&format!("{CONFIG}?dry_run=ture"), &[], &new);
    assert_eq!(r.status, 400, "{r:?}");
    assert_eq!(s.status().generation, generation);

    // Every endpoint, reads included.
    let (status, body) = s.api("/v1/status?verbose=1");
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("it accepts none"),
        "{body}"
    );
    let (status, body) = s.post("/v1/services/web1/disable?force=1", "{}");
    assert_eq!(status, 400, "{body}");
    assert_eq!(s.service_state("web1"), Some(State::Up), "disabled anyway");

    // A misspelt field of a sync request is refused too (it would send).
    let (status, body) = s.post("/v1/config/sync", r#"{"previwe": true}"#);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("unknown field `previwe`"), "{body}");

    // The real names work.
    let r = s.put(&format!("{CONFIG}?dry_run=1"), &[], &new);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(s.status().generation, generation);
}

#[test]
fn listeners_this_host_cannot_open_are_refused() {
    let net = Net::new("control_listen");
    let scratch = net.scratch();
    let text = config(&net);
    // As an operator runs it: DNS where the file's ADNS service says.
    let site = SiteServer::start_as_written(
        SEXTANT,
        &scratch.0,
        "site1",
        net.server_ip(),
        net.dns_addr(),
        &text,
        None,
    );
    let generation = site.status().generation;

    // An ADNS service on an address this host does not have (TEST-NET-1):
    // accepted today, and the next restart fails.
    let foreign = format!("{text}add service adns2 192.0.2.53 ADNS 53\n");
    for path in [format!("{CONFIG}?dry_run=1"), CONFIG.to_string()] {
        let r = rejected(&site.put(&path, &[], &foreign), 422);
        assert!(
            r.errors
                .iter()
                .any(|e| e.contains("192.0.2.53:53") && e.contains("not an address of this host")),
            "{r:?}"
        );
    }

    // A port another program holds, for DNS (UDP and TCP).
    let ip = net.svc_ip(9);
    let port = free_port(ip.into());
    let _udp = UdpSocket::bind((ip, port)).unwrap();
    let _tcp = TcpListener::bind((ip, port)).unwrap();
    let taken = format!("{text}add service adns2 {ip} ADNS {port}\n");
    let r = rejected(&site.put(CONFIG, &[], &taken), 422);
    for proto in ["udp", "tcp"] {
        let want =
            format!("DNS ({proto}) {proto}/{ip}:{port}: the address is in use by another program");
        assert!(r.errors.contains(&want), "{want}: {r:?}");
    }

    // Metric exchange on a port another program holds.
    let mep_port = free_port(net.server_ip().into());
    let _mep = TcpListener::bind((net.server_ip(), mep_port)).unwrap();
    let two_sites = format!(
        "{text}add gslb site site2 {} -siteType REMOTE\nset gslb parameter -mepPort {mep_port}\n",
        net.svc_ip(10)
    );
    let r = rejected(&site.put(CONFIG, &[], &two_sites), 422);
    let mep = SocketAddr::new(net.server_ip().into(), mep_port);
    assert!(
        r.errors
            .iter()
            .any(|e| e.starts_with(&format!("metric exchange tcp/{mep}: the address is in use"))),
        "{r:?}"
    );

    assert_eq!(
        fs::read_to_string(&site.config).unwrap(),
        text,
        "the file changed"
    );
    assert_eq!(site.status().generation, generation);

    // A listener it can open is taken.
    let free = free_port(ip.into());
    let ok = format!("{text}add service adns2 {ip} ADNS {free}\n");
    let r = site.put(CONFIG, &[], &ok);
    assert_eq!(r.status, 200, "{r:?}");
}

#[test]
fn figures_out_of_range_are_refused_naming_the_field() {
    let net = Net::new("control_figures");
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net));
    let path = "/v1/services/web1/metrics";
    // (body, the field named, what the error says of it)
    let cases = [
        (
            r#"{"response_time_ms": -1}"#,
            "response_time_ms: -1 is out of range (0 to 3600000 ms)",
        ),
        (
            r#"{"response_time_ms": NaN}"#,
            "response_time_ms: expected value",
        ),
        (
            r#"{"response_time_ms": 1e999}"#,
            "response_time_ms: number out of range",
        ),
        (
            r#"{"response_time_ms": -1e999}"#,
            "response_time_ms: number out of range",
        ),
        (
            r#"{"cpu_percent": 150}"#,
            "cpu_percent: 150 is out of range (0 to 100)",
        ),
        (
            r#"{"memory_percent": -5}"#,
            "memory_percent: invalid value: integer `-5`",
        ),
    ];
    for (body, want) in cases {
        let (status, answer) = s.post(path, body);
        assert_eq!(status, 400, "{body}: {answer}");
        let e = api_error(&answer);
        assert!(e.contains(want), "{body}: {e}");
    }
    let (status, answer) = s.post("/v1/site/figures", r#"{"cpu_percent": -3.5}"#);
    assert_eq!(status, 400, "{answer}");
    assert!(api_error(&answer).contains("cpu_percent: -3.5 is out of range (0 to 100)"));
    // Nothing was taken: no response time, no CPU figure.
    let load = s.service("web1").expect("web1").load;
    assert_eq!(load.response_time_ms, None, "{load:?}");
    assert_eq!(load.cpu_percent, None, "{load:?}");
    // A figure in range is.
    let (status, answer) = s.post(path, r#"{"response_time_ms": 3.5, "cpu_percent": 100}"#);
    assert_eq!(status, 204, "{answer}");
    assert!(
        wait_until(EVENTUALLY, || s
            .service("web1")
            .is_some_and(|w| w.load.response_time_ms == Some(3.5))),
        "{:?}",
        s.service("web1")
    );
}

#[test]
fn temporary_files_a_crash_left_are_removed_at_start() {
    let net = Net::new("control_tmp");
    let scratch = net.scratch();
    let dir = &scratch.0;
    // Named as ours (`.NAME.tmpPID`): a copy of the configuration that a
    // process killed between write and rename left, secrets and all.
    let stale = [
        dir.join(".site1.conf.tmp4242"),
        dir.join(".site1.conf.prev.tmp4243"),
        dir.join(".site1.admin-state.json.tmp77"),
    ];
    for f in &stale {
        fs::write(f, "add rpcNode 10.0.0.1 -password s3cret\n").unwrap();
    }
    // Not ours: left alone.
    let other = dir.join(".other.conf.tmp5");
    fs::write(&other, "x").unwrap();
    let site = SiteServer::start(SEXTANT, dir, "site1", net.server_ip(), &config(&net), None);
    for f in &stale {
        assert!(!f.exists(), "{} is still there", f.display());
    }
    assert!(other.exists(), "a file not ours was removed");
    let log = fs::read_to_string(&site.log_path).unwrap_or_default();
    assert!(
        log.contains("removed a temporary file an earlier run left")
            && log.contains(".site1.conf.tmp4242"),
        "{log}"
    );
}
