//! The REST API's authentication end to end: the real `sextant serve` with a
//! token file (`--api-token-file`), requests over real sockets, and the
//! server's log read back. A refused write must change nothing, a right
//! token must work, and no log line may ever hold a token.

#![allow(unsafe_code)] // kill(2) of the server the TLS test spawns itself

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use sextant_test_support::prelude::*;

/// The binary under test.
const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

/// A figure no sample of this host's CPU can be by chance (an operator's
/// override: `POST /v1/site/figures`).
const PUSHED_CPU: f64 = 42.5;
const FIGURES: &str = r#"{"cpu_percent": 42.5}"#;

/// One site, one service, one domain: what an operator starts with.
fn config(net: &Net) -> String {
    format!(
        "{}add gslb service web1 {} HTTP 80 -siteName site1\n\
         add gslb vserver vs1 HTTP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs1 -serviceName web1\n\
         bind gslb vserver vs1 -domainName www.example.com -TTL 5\n",
        net.conf_preamble(),
        net.svc_ip(1)
    )
}

/// This site's CPU figure as `/v1/sites` shows it.
fn local_cpu(s: &Server) -> Option<f64> {
    let sites: Vec<Site> = s.get(SITES);
    find_site(&sites, "site1").and_then(|site| site.cpu_percent)
}

fn error_text(r: &Reply) -> String {
    serde_json::from_str::<ApiError>(&r.body)
        .unwrap_or_else(|e| panic!("not a JSON error ({e}): {r:?}"))
        .error
}

/// A browser pointed at the node finds the dashboard: `/` leads to
/// `/ui/`, and the page has an icon (`/favicon.ico` too), with no token.
#[test]
fn the_root_leads_to_the_dashboard_and_it_has_an_icon() {
    let net = Net::new("api_auth_root");
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net));
    let location = |r: &Reply| {
        r.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("location"))
            .map(|(_, v)| v.clone())
    };
    let r = s.request_raw("GET", "/", &[], "");
    assert_eq!(
        (r.status, location(&r).as_deref()),
        (307, Some("/ui/")),
        "{r:?}"
    );
    let r = s.request_raw("GET", "/favicon.ico", &[], "");
    assert_eq!(
        (r.status, location(&r).as_deref()),
        (307, Some("/ui/favicon.svg")),
        "{r:?}"
    );
    let r = s.request_raw("GET", "/ui/favicon.svg", &[], "");
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.starts_with("<svg"), "{r:?}");
    let page = s.request_raw("GET", "/ui/", &[], "");
    assert!(page.body.contains("href=\"favicon.svg\""), "{}", page.body);
}

#[test]
fn an_unauthenticated_write_is_refused_and_changes_nothing() {
    let net = Net::new("api_auth_refused");
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net));
    let wrong = "wrong-token-0123456789abcdef";
    let refused: [(&str, Vec<(&str, &str)>); 4] = [
        ("no Authorization header", vec![]),
        (
            "a wrong token",
            vec![("Authorization", "Bearer wrong-token-0123456789abcdef")],
        ),
        (
            "another scheme",
            vec![("Authorization", "Basic dGVzdDpzZWNyZXQ=")],
        ),
        ("an empty bearer", vec![("Authorization", "Bearer ")]),
    ];
    for (what, headers) in &refused {
        let r = s.request_raw("POST", SITE_FIGURES, headers, FIGURES);
        assert_eq!(r.status, 401, "{what}: {r:?}");
        assert!(
            r.header("WWW-Authenticate")
                .is_some_and(|v| v.starts_with("Bearer")),
            "{what}: no WWW-Authenticate: Bearer: {r:?}"
        );
        assert!(!error_text(&r).is_empty());
    }
    // The other write too.
    let r = s.request_raw(
        "POST",
        "/v1/services/web1/metrics",
        &[],
        r#"{"connections": 7}"#,
    );
    assert_eq!(r.status, 401, "{r:?}");

    // Nothing changed: the figure the refused writes carried is not this
    // site's (it is measured from /proc: anything but the pushed value).
    std::thread::sleep(Duration::from_millis(300));
    assert_ne!(
        local_cpu(&s),
        Some(PUSHED_CPU),
        "a refused write changed the site's figure"
    );

    // Reads stay open on a loopback address (`--api-reads auto`).
    let r = s.request_raw("GET", STATUS, &[], "");
    assert_eq!(r.status, 200, "{r:?}");

    // The right token works, and the change shows.
    let (code, body) = s.post(SITE_FIGURES, FIGURES);
    assert_eq!(code, 204, "{body}");
    assert!(
        wait_until(EVENTUALLY, || local_cpu(&s) == Some(PUSHED_CPU)),
        "the authenticated write did not take effect: {:?}",
        local_cpu(&s)
    );

    // The log names the token and the refused peers, never a secret.
    let log = s.log();
    assert!(
        log.lines()
            .any(|l| l.contains("API write") && l.contains(&format!("token={TEST_TOKEN_NAME}"))),
        "no log line names the token that wrote:\n{log}"
    );
    assert!(
        log.lines().any(|l| l.contains("API request refused")
            && l.contains("peer=127.")
            && l.contains("not one of the API tokens")),
        "no log line tells of the wrong token with the peer address:\n{log}"
    );
    assert!(!log.contains(TEST_TOKEN), "the log holds the token:\n{log}");
    assert!(
        !log.contains(wrong),
        "the log holds a presented token:\n{log}"
    );
    assert!(
        !log.contains("dGVzdDpzZWNyZXQ="),
        "the log holds presented credentials:\n{log}"
    );
}

#[test]
fn without_a_token_file_writes_are_disabled() {
    let net = Net::new("api_auth_no_tokens");
    let s = Server::try_start_without_token(SEXTANT, &net, Syntax::Conf, &config(&net), &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let r = s.request_raw(
        "POST",
        SITE_FIGURES,
        &[("Authorization", format!("Bearer {TEST_TOKEN}").as_str())],
        FIGURES,
    );
    assert_eq!(r.status, 403, "{r:?}");
    assert_eq!(
        error_text(&r),
        "writes are disabled: start with --api-token-file"
    );
    // The configuration's text holds secrets: no token file, no reading it.
    let r = s.request_raw("GET", "/v1/config", &[], "");
    assert_eq!(r.status, 403, "{r:?}");
    std::thread::sleep(Duration::from_millis(300));
    assert_ne!(local_cpu(&s), Some(PUSHED_CPU));
}

#[test]
fn api_reads_token_makes_reads_need_the_token() {
    let net = Net::new("api_auth_reads");
    let s = Server::start_with(
        SEXTANT,
        &net,
        Syntax::Conf,
        &config(&net),
        &["--api-reads", "token"],
    );
    for path in [
        STATUS,
        SERVICES,
        "/v1/explain?name=www.example.com&client=192.0.2.1",
    ] {
        let r = s.request_raw("GET", path, &[], "");
        assert_eq!(r.status, 401, "GET {path} without a token: {r:?}");
        let r = s.request("GET", path, &[], "");
        assert_eq!(r.status, 200, "GET {path} with the token: {r:?}");
    }

    // `sextant explain --server` asks with the token it is given.
    let api = net.api_addr().to_string();
    let args = [
        "explain",
        "--server",
        &api,
        "--client",
        "192.0.2.1",
        "www.example.com",
    ];
    let out = SEXTANT.run(&args);
    assert!(!out.status.success(), "{}", output_text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--token-file"),
        "{}",
        output_text(&out)
    );
    let dir = net.scratch();
    let token_file = dir.0.join("token");
    sextant_test_support::process::write_token_file(&token_file);
    let token_arg = token_file.display().to_string();
    let mut with_token = args.to_vec();
    with_token.splice(3..3, ["--token-file", token_arg.as_str()]);
    let out = SEXTANT.run(&with_token);
    assert!(out.status.success(), "{}", output_text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("live, from the server"),
        "{}",
        output_text(&out)
    );
    // The server written as `sextant cli --server` takes it: http://HOST:PORT.
    let url = format!("http://{api}");
    let mut as_url = with_token.clone();
    as_url[2] = url.as_str();
    let out = SEXTANT.run(&as_url);
    assert!(out.status.success(), "{}", output_text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("live, from the server at {url}")),
        "{}",
        output_text(&out)
    );
}

/// `sextant serve` with `token_file` as its token file: it must stop at
/// once, and its message must contain `want`.
fn refuses_to_start(net: &Net, dir: &Path, token_file: &Path, want: &str) {
    let conf = dir.join("site.conf");
    fs::write(&conf, config(net)).unwrap();
    let out = SEXTANT.run(&[
        "serve",
        "--config",
        conf.to_str().unwrap(),
        "--api-listen",
        &net.api_addr().to_string(),
        "--dns-listen",
        &net.dns_addr().to_string(),
        "--api-token-file",
        token_file.to_str().unwrap(),
    ]);
    assert!(!out.status.success(), "{}", output_text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(want),
        "want {want:?}:\n{}",
        output_text(&out)
    );
}

#[test]
fn a_bad_token_file_stops_the_start() {
    let net = Net::new("api_auth_bad_file");
    let scratch = net.scratch();
    let f = scratch.0.join("api-tokens");
    let shown = f.display().to_string();

    fs::write(&f, "ops 0123456789abcdef0123\nci too-short\n").unwrap();
    fs::set_permissions(&f, fs::Permissions::from_mode(0o600)).unwrap();
    refuses_to_start(
        &net,
        &scratch.0,
        &f,
        &format!("{shown}:2: the token of `ci` is 9 characters"),
    );

    fs::write(&f, "ops 0123456789abcdef0123\n").unwrap();
    fs::set_permissions(&f, fs::Permissions::from_mode(0o644)).unwrap();
    refuses_to_start(
        &net,
        &scratch.0,
        &f,
        &format!("{shown}: the API token file is readable by other users (mode 0644)"),
    );

    let missing = scratch.0.join("no-such-file");
    refuses_to_start(
        &net,
        &scratch.0,
        &missing,
        &format!("{}: cannot read the API token file", missing.display()),
    );
}

#[test]
fn sighup_rotates_the_tokens_and_a_bad_file_keeps_them() {
    let net = Net::new("api_auth_rotate");
    let scratch = net.scratch();
    let f = scratch.0.join("api-tokens");
    let old = "old-token-0123456789abcdef";
    let new = "new-token-fedcba9876543210";
    let write = |text: &str| {
        fs::write(&f, text).unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o600)).unwrap();
    };
    write(&format!("ops {old}\n"));
    let s = Server::start_with(
        SEXTANT,
        &net,
        Syntax::Conf,
        &config(&net),
        &["--api-token-file", f.to_str().unwrap()],
    );
    let post = |token: &str| {
        let auth = format!("Bearer {token}");
        s.request_raw(
            "POST",
            SITE_FIGURES,
            &[("Authorization", auth.as_str())],
            FIGURES,
        )
        .status
    };
    assert_eq!(post(old), 204);
    assert_eq!(post(new), 401);

    write(&format!("ops {new}\n"));
    s.signal(libc::SIGHUP);
    assert!(
        wait_until(EVENTUALLY, || post(new) == 204),
        "the rotated token is not accepted:\n{}",
        s.log()
    );
    assert_eq!(
        post(old),
        401,
        "the old token still works after the rotation"
    );

    // A broken file: the tokens in force stay, and the status says why.
    write("ops short\n");
    s.signal(libc::SIGHUP);
    let shown = format!("{}:1: the token of `ops` is 5 characters", f.display());
    assert!(
        wait_until(EVENTUALLY, || s
            .status()
            .last_reload_error
            .is_some_and(|e| e.contains(&shown))),
        "no last_reload_error naming {shown}: {:?}",
        s.status().last_reload_error
    );
    assert_eq!(
        post(new),
        204,
        "a bad token file dropped the tokens in force"
    );
    assert!(
        s.log().contains(&shown),
        "the log does not say why:\n{}",
        s.log()
    );
}

#[test]
fn a_toml_configuration_names_the_token_file() {
    let net = Net::new("api_auth_toml");
    let scratch = net.scratch();
    let token = "toml-token-0123456789abcdef";
    let f = scratch.0.join("tokens");
    fs::write(&f, format!("from-toml {token}\n")).unwrap();
    fs::set_permissions(&f, fs::Permissions::from_mode(0o600)).unwrap();
    let config = format!(
        "{}\n[api]\ntoken_file = \"{}\"\n",
        net.toml_preamble(),
        f.display()
    );
    let s = Server::try_start_without_token(SEXTANT, &net, Syntax::Toml, &config, &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let r = s.request_raw("POST", SITE_FIGURES, &[], FIGURES);
    assert_eq!(r.status, 401, "{r:?}");
    let auth = format!("Bearer {token}");
    let r = s.request_raw(
        "POST",
        SITE_FIGURES,
        &[("Authorization", auth.as_str())],
        FIGURES,
    );
    assert_eq!(r.status, 204, "{r:?}");
    assert!(s.log().contains("token=from-toml"), "{}", s.log());
}

#[test]
fn the_api_over_tls() {
    if !have_program("curl") {
        return cannot_run("curl is not installed");
    }
    let net = Net::new("api_auth_tls");
    let scratch = net.scratch();
    let ip = net.server_ip();
    let cert = rcgen::generate_simple_self_signed(vec![ip.to_string()]).expect("certificate");
    let cert_file = scratch.0.join("api.crt");
    let key_file = scratch.0.join("api.key");
    fs::write(&cert_file, cert.cert.pem()).unwrap();
    fs::write(&key_file, cert.signing_key.serialize_pem()).unwrap();
    fs::set_permissions(&key_file, fs::Permissions::from_mode(0o600)).unwrap();
    let tokens = scratch.0.join("api-tokens");
    write_token_file(&tokens);
    let conf = scratch.0.join("site.conf");
    fs::write(&conf, config(&net)).unwrap();
    let log = scratch.0.join("server.log");
    let mut child = SEXTANT
        .command()
        .args(["serve", "--config"])
        .arg(&conf)
        .args(["--api-listen", &net.api_addr().to_string()])
        .args(["--dns-listen", &net.dns_addr().to_string()])
        .arg("--api-token-file")
        .arg(&tokens)
        .arg("--api-tls-cert")
        .arg(&cert_file)
        .arg("--api-tls-key")
        .arg(&key_file)
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .expect("spawn sextant");
    let url = |path: &str| format!("https://{ip}:{API_PORT}{path}");
    let curl = |args: &[&str]| {
        let out = Command::new("curl")
            .args(["-sS", "--max-time", "5", "--cacert"])
            .arg(&cert_file)
            .args(["-w", "\n%{http_code}"])
            .args(args)
            .output()
            .expect("run curl");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", "000"));
        (code.to_string(), body.to_string())
    };
    let up = wait_until(READY, || curl(&[&url(STATUS)]).0 == "200");
    let server_log = fs::read_to_string(&log).unwrap_or_default();
    let result = std::panic::catch_unwind(|| {
        assert!(up, "the API did not answer over TLS:\n{server_log}");
        let auth = format!("Authorization: Bearer {TEST_TOKEN}");
        let (code, body) = curl(&["-X", "POST", "-d", FIGURES, "-H", &auth, &url(SITE_FIGURES)]);
        assert_eq!(code, "204", "{body}");
        let (code, body) = curl(&["-X", "POST", "-d", FIGURES, &url(SITE_FIGURES)]);
        assert_eq!(code, "401", "{body}");
        // Plain HTTP to the TLS port gets no HTTP answer.
        let plain = http_get(net.api_addr(), STATUS);
        assert!(
            !matches!(plain, Ok((200, _))),
            "plain HTTP answered on the TLS port: {plain:?}"
        );
    });
    // SAFETY: kill(2) on the pid of our own child, not yet reaped.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let _ = child.wait();
    if let Err(e) = result {
        eprintln!(
            "--- server log ---\n{}",
            fs::read_to_string(&log).unwrap_or_default()
        );
        std::panic::resume_unwind(e);
    }
}

/// The supervisor's probes (`/v1/ready`, `/v1/live`: Kubernetes probes,
/// docs/deploy.md) answer without a token even where reads need one, and
/// ready means DNS answers: while the start-up gate waits for a monitor
/// (an HTTP backend that takes the connection and never replies) the API
/// is up, `/v1/ready` says 503 and why, and DNS says nothing.
#[test]
fn probes_need_no_token_and_ready_waits_for_dns() {
    let net = Net::new("api_auth_probes");
    // Connections complete in the kernel's backlog; nothing reads them.
    let silent = std::net::TcpListener::bind((net.svc_ip(1), 0)).expect("bind silent backend");
    let port = silent.local_addr().expect("silent address").port();
    let conf = format!(
        "{}add lb monitor slow HTTP -interval 5 SEC -resptimeout 4 SEC -retries 1\n\
         add gslb service web1 {} HTTP {port} -siteName site1\n\
         bind gslb service web1 -monitorName slow\n\
         add gslb vserver vs1 HTTP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs1 -serviceName web1\n\
         bind gslb vserver vs1 -domainName www.example.com -TTL 5\n",
        net.conf_preamble(),
        net.svc_ip(1)
    );
    let s = Server::start_with(
        SEXTANT,
        &net,
        Syntax::Conf,
        &conf,
        &["--api-reads", "token"],
    );
    let r = s.request_raw("GET", "/v1/ready", &[], "");
    assert_eq!(r.status, 503, "ready before the first health result: {r:?}");
    assert!(error_text(&r).contains("start-up gate"), "{r:?}");
    let query = build_query("www.example.com", RecordType::A, None);
    let quick = Dns {
        timeout: Duration::from_millis(300),
        ..s.dns.clone()
    };
    assert!(
        quick.try_udp_from(None, &query).is_err(),
        "DNS answered before /v1/ready said so"
    );
    let r = s.request_raw("GET", "/v1/live", &[], "");
    assert_eq!(r.status, 200, "live while the gate waits: {r:?}");

    // The monitor's timeout ends the wait (the service is DOWN): ready.
    eventually(Duration::from_secs(20), "/v1/ready says 200", || {
        s.request_raw("GET", "/v1/ready", &[], "").status == 200
    });
    let r = s.request_raw("GET", "/v1/ready", &[], "");
    let probe: sextant_api::Probe = serde_json::from_str(&r.body).expect("a probe's answer");
    assert_eq!(probe.generation, 1);
    assert!(
        s.dns.try_udp_from(None, &query).is_ok(),
        "ready, and DNS answers"
    );
    // Reads still need the token.
    assert_eq!(s.request_raw("GET", STATUS, &[], "").status, 401);
    drop(silent);
}
