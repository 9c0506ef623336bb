//! The command line and operations: `sextant check`, SIGHUP reload (good and
//! bad), the REST API fields, `--local-site`, `sextant demo`, SIGTERM.

#![allow(unsafe_code)] // system calls in the test harness; each block says why it is sound

use sextant_test_support::browser::Browser;
use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));
use std::fmt::Write as _;
use std::fs;
use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// A config exercising most commands of the appliance syntax.
fn full_config(net: &Net) -> String {
    let mut c = net.conf_preamble();
    let dead = Net::closed_port(net.svc_ip(2));
    write!(
        c,
        r#"
# monitors, quoted strings and units
add lb monitor mon_http HTTP -interval 500 MSEC -resptimeout 200 MSEC -retries 2 -successRetries 1 -httpRequest "GET /health" -respCode 200
add lb monitor mon_tcp TCP -interval 1 SEC -resptimeout 500 MSEC -retries 3
add gslb service s0 {s0} HTTP 80 -siteName site1 -publicIP {s0} -publicPort 80
add gslb service s1 {s1} HTTP 80 -siteName site1
add gslb service s2 {s2} TCP {dead} -siteName site1
bind gslb service s2 -monitorName mon_tcp
add gslb vserver vs_backup HTTP -lbMethod ROUNDROBIN
bind gslb vserver vs_backup -serviceName s1
add gslb vserver vs_app HTTP -lbMethod ROUNDROBIN -backupLBMethod ROUNDROBIN -persistenceType SOURCEIP -timeout 2 -backupVServer vs_backup
bind gslb vserver vs_app -serviceName s0 -weight 2
bind gslb vserver vs_app -serviceName s2 -weight 1
bind gslb vserver vs_app -domainName app.example.com -TTL 30 -backupIP {bk}
"#,
        s0 = net.svc_ip(0),
        s1 = net.svc_ip(1),
        s2 = net.svc_ip(2),
        bk = net.svc_ip(9),
    )
    .unwrap();
    c
}

/// The commit of this checkout, as `git` says (the tests run in one).
fn built_commit() -> String {
    let out = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("git runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn output_text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn check_accepts_a_valid_config() {
    let net = Net::new("cli_check_valid");
    let dir = net.scratch();
    let path = dir.write("ok.conf", &full_config(&net));
    let out = SEXTANT.run(&["check", &path]);
    assert!(
        out.status.success(),
        "check of a valid file failed ({}):\n{}",
        out.status,
        output_text(&out)
    );
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn check_reports_every_error_with_file_and_line() {
    let net = Net::new("cli_check_invalid");
    let ip = net.server_ip();
    let text = format!(
        "# line 1: comment\n\
         add gslb site site1 {ip} -siteType LOCAL\n\
         add gslb frobnicate thing\n\
         add gslb service s1 127.100.0.1 HTTP 80 -siteName site1 -bogusOption 7\n\
         \n\
         add gslb vserver vs1 HTTP -lbMethod NOSUCHMETHOD\n"
    );
    let dir = net.scratch();
    let path = dir.write("bad.conf", &text);
    let out = SEXTANT.run(&["check", &path]);
    let all = output_text(&out);
    assert_eq!(out.status.code(), Some(1), "exit code 1 expected:\n{all}");
    for line in [3, 4, 6] {
        let want = format!("{path}:{line}:");
        assert!(
            all.lines().any(|l| l.contains(&want)),
            "no error reported as {want}; output:\n{all}"
        );
    }
    for ok_line in [1, 2, 5] {
        let not = format!("{path}:{ok_line}:");
        assert!(
            !all.contains(&not),
            "line {ok_line} is valid but reported; output:\n{all}"
        );
    }
}

#[test]
fn check_reports_undefined_references_with_line() {
    let net = Net::new("cli_check_refs");
    let text = format!(
        "{}add gslb service s1 {} HTTP 80 -siteName nosuchsite\n\
         bind gslb vserver nosuchvs -serviceName s1\n",
        net.conf_preamble(),
        net.svc_ip(0)
    );
    let dir = net.scratch();
    let path = dir.write("refs.conf", &text);
    let out = SEXTANT.run(&["check", &path]);
    let all = output_text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    let pre = net.conf_preamble().lines().count();
    for line in [pre + 1, pre + 2] {
        let want = format!("{path}:{line}:");
        assert!(all.contains(&want), "missing {want} in:\n{all}");
    }
}

/// Errors and warnings of one reading are both shown, as a compiler shows
/// them: the operator fixes the file in one pass.
#[test]
fn check_shows_the_warnings_beside_the_errors() {
    let net = Net::new("cli_check_both");
    let text = format!(
        "{}add gslb service s1 {} HTTP 80 -siteName nosuchsite\n\
         add gslb service s2 {} HTTP 80 -siteName site1 -cltTimeout 180\n",
        net.conf_preamble(),
        net.svc_ip(0),
        net.svc_ip(1),
    );
    let dir = net.scratch();
    let path = dir.write("both.conf", &text);
    let out = SEXTANT.run(&["check", &path]);
    let all = output_text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    let pre = net.conf_preamble().lines().count();
    assert!(
        all.contains(&format!("{path}:{}:", pre + 1)),
        "the error:\n{all}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with(&format!("warning: {path}:{}: ", pre + 2))
                && l.contains("-cltTimeout")),
        "no warning for the -cltTimeout of line {}:\n{all}",
        pre + 2
    );
}

#[test]
fn check_of_missing_file_fails() {
    let out = SEXTANT.run(&["check", "/nonexistent/sextant-e2e/none.conf"]);
    assert_eq!(out.status.code(), Some(1), "{}", output_text(&out));
}

#[test]
fn serve_refuses_an_invalid_config() {
    let net = Net::new("cli_serve_invalid");
    let cfg = format!("{}add gslb nonsense here\n", net.conf_preamble());
    match Server::try_start(SEXTANT, &net, Syntax::Conf, &cfg, &[]) {
        Ok(mut s) => {
            let st = s.stop();
            panic!("serve started on an invalid config (stopped: {st:?})");
        }
        Err(e) => assert!(e.contains("exited before it was ready"), "{e}"),
    }
}

/// A `--state-dir` that is not a directory stops the start and says so.
#[test]
fn serve_refuses_a_missing_state_dir() {
    let net = Net::new("cli_state_dir");
    let dir = net.tempdir();
    let conf = dir.join("site.conf");
    fs::write(&conf, net.conf_preamble()).unwrap();
    let missing = dir.join("no-such-dir");
    let out = SEXTANT.run(&[
        "serve",
        "--config",
        conf.to_str().unwrap(),
        "--state-dir",
        missing.to_str().unwrap(),
    ]);
    assert!(!out.status.success(), "{}", output_text(&out));
    assert!(
        output_text(&out).contains(&format!(
            "--state-dir {}: not a directory",
            missing.display()
        )),
        "{}",
        output_text(&out)
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn api_reports_status_services_and_sites() {
    let net = Net::new("cli_api");
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &full_config(&net));
    let st = s.status();
    assert!(!st.version.is_empty(), "version: {st:?}");
    // The build facts are the ones `--version` prints.
    let built = format!("(commit {}, {})", st.commit, st.build_date);
    assert!(built_commit().starts_with(&st.commit), "{st:?}");
    assert_eq!(st.build_date.len(), 10, "{st:?}");
    let out = Command::new(SEXTANT.0).arg("--version").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("sextant {} {built}", st.version)
    );
    assert_eq!(st.local_site.as_deref(), Some("site1"), "{st:?}");

    s.wait_state("s2", State::Down);
    // Every field is in the JSON, null or not (api.md), and the typed
    // read below checks the types.
    let (_, raw) = s.api("/v1/services");
    for svc in raw.as_array().expect("array") {
        for f in ["name", "site", "ip", "port", "state", "last_change"] {
            assert!(svc.get(f).is_some(), "service lacks {f}: {svc}");
        }
    }
    let svcs = s.services();
    assert_eq!(svcs.len(), 3, "{svcs:?}");
    for svc in &svcs {
        assert_eq!(svc.site, "site1");
    }
    let s0 = s.service("s0").unwrap();
    assert_eq!(s0.ip, net.svc_ip(0).to_string());
    assert_eq!(s0.port, 80);
    assert_eq!(s0.state, State::Up, "an unmonitored service is UP: {s0:?}");
    let s2 = s.service("s2").unwrap();
    assert!(
        s2.last_change.is_some(),
        "a service that went DOWN has a last_change: {s2:?}"
    );

    let sites = s.sites();
    assert_eq!(sites.len(), 1, "{sites:?}");
    let site = &sites[0];
    assert_eq!(site.name, "site1");
    assert_eq!(site.ip, net.server_ip().to_string());
    assert_eq!(site.role, "local");
    assert_eq!(site.kind, "flat");
    assert!(site.parent.is_none(), "{site:?}");
    assert!(
        ["UP", "DOWN", "n/a"].contains(&site.mep.as_str()),
        "{site:?}"
    );

    let (code, _) = s.api("/v1/nosuchthing");
    assert_eq!(code, 404);
}

#[test]
fn local_site_flag_picks_the_local_site() {
    let net = Net::new("cli_local_site");
    let ip = net.server_ip();
    let other = Ipv4Addr::new(127, 78, net.x, net.y);
    let cfg = format!(
        "add service adns1 {ip} ADNS {DNS_PORT}\n\
         add gslb site east {other}\n\
         add gslb site west {ip}\n\
         add gslb service w1 {} HTTP 80 -siteName west\n\
         add gslb service e1 {} HTTP 80 -siteName east\n\
         add gslb vserver vs HTTP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs -serviceName w1\n\
         bind gslb vserver vs -serviceName e1\n\
         bind gslb vserver vs -domainName app.example.com -TTL 5\n\
         add dns soaRec example.com -originServer ns1.example.com -contact hostmaster.example.com\n\
         add dns nsRec example.com ns1.example.com\n",
        net.svc_ip(0),
        net.svc_ip(1)
    );
    let s = Server::start_with(SEXTANT, &net, Syntax::Conf, &cfg, &["--local-site", "west"]);
    assert_eq!(s.status().local_site.as_deref(), Some("west"));
    let sites = s.sites();
    let role = |n: &str| {
        find_site(&sites, n)
            .map(|x| x.role.clone())
            .unwrap_or_else(|| panic!("site {n} missing: {sites:?}"))
    };
    assert_eq!(role("west"), "local");
    assert_eq!(role("east"), "remote");
    assert_eq!(s.dns.sample_a("app.example.com", 10).len(), 10);
}

#[test]
fn sighup_reload_adds_a_domain_and_bumps_generation() {
    let net = Net::new("cli_reload");
    let base = full_config(&net);
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &base);
    let g0 = s.generation();
    let r = s.dns.query("new.example.com", RecordType::A);
    assert_eq!(r.metadata.response_code, ResponseCode::NXDomain);

    let mut next = base.clone();
    writeln!(
        next,
        "add gslb service sNew {} HTTP 80 -siteName site1\n\
         add gslb vserver vs_new HTTP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs_new -serviceName sNew\n\
         bind gslb vserver vs_new -domainName new.example.com -TTL 5",
        net.svc_ip(7)
    )
    .unwrap();
    s.reload(&next);
    eventually(EVENTUALLY, "new.example.com answered after SIGHUP", || {
        let r = s.dns.query("new.example.com", RecordType::A);
        a_records(&r) == vec![net.svc_ip(7)]
    });
    assert!(s.generation() > g0, "generation did not move on reload");
    assert!(s.service("sNew").is_some(), "new service in /v1/services");
    // Old names keep answering.
    assert_eq!(s.dns.query_a("app.example.com").len(), 1);
}

#[test]
fn invalid_reload_keeps_config_generation_and_health() {
    let net = Net::new("cli_bad_reload");
    let base = full_config(&net);
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &base);
    s.wait_state("s2", State::Down);
    let g0 = s.generation();
    let before = s.service("s2").unwrap();

    let pre = base.lines().count();
    let broken = format!("{base}add gslb frobnicate everything\n");
    s.reload(&broken);
    // The server says why (api.md: last_reload_error holds FILE:LINE: reason).
    let want = format!("{}:{}:", s.config.display(), pre + 1);
    let mut st = None;
    let said = wait_until(EVENTUALLY, || {
        st = Some(s.status());
        st.as_ref().is_some_and(|st| st.last_reload_error.is_some())
    });
    assert!(said, "failed reload not reported in /v1/status: {st:?}");
    assert!(
        st.as_ref()
            .and_then(|st| st.last_reload_error.as_deref())
            .is_some_and(|e| e.contains(&want)),
        "last_reload_error does not name {want}: {st:?}"
    );
    assert_eq!(s.generation(), g0, "generation moved on a failed reload");
    assert_eq!(
        s.dns.query_a("app.example.com").len(),
        1,
        "old config serves"
    );
    let after = s.service("s2").unwrap();
    assert_eq!(after.state, before.state, "health state kept");
    assert_eq!(
        after.last_change, before.last_change,
        "health state untouched by a failed reload"
    );

    // A good file afterwards loads.
    let mut fixed = base.clone();
    writeln!(
        fixed,
        "add gslb service sNew {} HTTP 80 -siteName site1\n\
         add gslb vserver vs_new HTTP\n\
         bind gslb vserver vs_new -serviceName sNew\n\
         bind gslb vserver vs_new -domainName new.example.com -TTL 5",
        net.svc_ip(7)
    )
    .unwrap();
    s.reload(&fixed);
    eventually(EVENTUALLY, "generation moves after a good reload", || {
        s.generation() > g0
    });
    assert_eq!(s.dns.query_a("new.example.com"), vec![net.svc_ip(7)]);
}

#[test]
fn sigterm_stops_the_server() {
    let net = Net::new("cli_sigterm");
    let mut s = Server::start(SEXTANT, &net, Syntax::Conf, &full_config(&net));
    s.signal(libc::SIGTERM);
    let end = Instant::now() + EVENTUALLY;
    while s.is_running() && Instant::now() < end {
        thread::sleep(Duration::from_millis(50));
    }
    assert!(!s.is_running(), "still running after SIGTERM");
}

/// `sextant demo` serves on 127.0.0.1:5353 and prints dig commands that work.
#[test]
fn demo_serves_what_it_prints() {
    let demo_addr: SocketAddr = "127.0.0.1:5353".parse().unwrap();
    if UdpSocket::bind(demo_addr).is_err() || TcpListener::bind(demo_addr).is_err() {
        cannot_run("the demo test needs 127.0.0.1:5353, which is in use on this machine");
        return;
    }
    let net = Net::new("cli_demo");
    let dir = net.tempdir();
    let out_path = dir.join("demo.out");
    let err_path = dir.join("demo.err");
    let child = Command::new(SEXTANT.0)
        .arg("demo")
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out_path).unwrap())
        .stderr(fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("spawn demo");
    let mut guard = ChildGuard(child);
    let read = |p: &std::path::Path| {
        let mut s = String::new();
        if let Ok(mut f) = fs::File::open(p) {
            let _ = f.read_to_string(&mut s);
        }
        s
    };
    let dns = Dns::new(demo_addr);
    let mut name = None;
    let ok = wait_until(READY, || {
        let out = read(&out_path);
        // The first dig command that asks for an A record.
        name = out
            .lines()
            .filter(|l| l.trim_start().starts_with("dig ") && l.contains(" A"))
            .find_map(|l| {
                l.split_whitespace()
                    .skip(1)
                    .find(|t| {
                        !t.starts_with('@')
                            && !t.starts_with('-')
                            && !t.starts_with('+')
                            && t.contains('.')
                            && t.parse::<IpAddr>().is_err()
                    })
                    .map(str::to_string)
            });
        name.is_some()
            && dns
                .try_udp_from(
                    None,
                    &build_query(name.as_ref().unwrap(), RecordType::A, None),
                )
                .is_ok()
    });
    assert!(
        ok,
        "demo printed no usable dig command or did not answer on {demo_addr}\nstdout:\n{}\nstderr:\n{}",
        read(&out_path),
        read(&err_path)
    );
    let name = name.unwrap();
    let mut last = None;
    let answered = wait_until(EVENTUALLY, || {
        let r = dns.udp(&build_query(&name, RecordType::A, None));
        let good = r.metadata.response_code == ResponseCode::NoError && !r.answers.is_empty();
        last = Some(r);
        good
    });
    assert!(answered, "demo: no A answer for {name}: {last:?}");

    // The dashboard it prints works, and so does the token it prints.
    let out = read(&out_path);
    let printed = |prefix: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_string)
            .unwrap_or_else(|| panic!("the demo prints no `{prefix}` line:\n{out}"))
    };
    let dashboard = printed("Dashboard: ");
    let token = printed("API token: ");
    let api: SocketAddr = dashboard
        .trim_start_matches("http://")
        .trim_end_matches("/ui/")
        .parse()
        .unwrap_or_else(|e| panic!("dashboard address {dashboard}: {e}"));
    // One node plays all three sites: no site is shown with a metric
    // exchange that is DOWN (the dashboard's topology would open red).
    let (code, body) = http_get(api, "/v1/sites").expect("GET /v1/sites");
    assert_eq!(code, 200, "{body}");
    let sites: Value = serde_json::from_str(&body).expect("JSON sites");
    let down: Vec<&str> = sites
        .as_array()
        .expect("a list of sites")
        .iter()
        .filter(|s| s["mep"] == "DOWN")
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert!(
        down.is_empty(),
        "the demo starts with sites whose metric exchange is DOWN: {down:?}\n{body}"
    );
    let (code, _) = http_post(api, "/v1/services/web-lon-1/disable", "{}").expect("POST");
    assert_eq!(code, 401, "a write without the demo's token is refused");
    let (code, body) = http_send_json(
        api,
        "POST",
        "/v1/services/web-lon-1/disable",
        "{\"reason\":\"demo\"}",
        Some(&token),
    )
    .expect("POST with the token");
    assert_eq!(code, 200, "the printed token disables a service: {body}");
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots/demo");
    if let Some(mut browser) = Browser::launch(&folder) {
        browser.open(&format!("{dashboard}#services"));
        browser.wait_for_text(
            "tr[data-service=\"web-lon-1\"] [data-field=\"admin\"]",
            EVENTUALLY,
            "the demo's dashboard shows the disabled service",
            |t| t == "DISABLED",
        );
        browser.screenshot("demo-services");
    }
    guard.stop();
    let _ = fs::remove_dir_all(&dir);
}

/// Kills a child by PID (SIGTERM, then SIGKILL) when dropped.
struct ChildGuard(std::process::Child);

impl ChildGuard {
    fn stop(&mut self) {
        if let Ok(Some(_)) = self.0.try_wait() {
            return;
        }
        // SAFETY: kill(2) on our own, not yet reaped child.
        unsafe {
            libc::kill(self.0.id() as i32, libc::SIGTERM);
        }
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.stop();
    }
}

#[test]
fn check_accepts_the_shipped_examples() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for f in ["examples/sextant.conf", "examples/sextant.toml"] {
        let p = root.join(f);
        if !p.exists() {
            panic!("{f} is missing");
        }
        let out = SEXTANT.run(&["check", p.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{f}:\n{}", output_text(&out));
    }
}

#[test]
fn check_reports_toml_errors_with_file_and_line() {
    let net = Net::new("cli_check_toml");
    let good = format!(
        "{}\n[[service]]\nname = \"s0\"\nip = \"{}\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"site1\"\n",
        net.toml_preamble(),
        net.svc_ip(0)
    );
    let dir = net.scratch();
    let path = dir.write("ok.toml", &good);
    let out = SEXTANT.run(&["check", &path]);
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));

    // An unknown key and a reference to an undefined site.
    let pre = good.lines().count();
    let bad = format!(
        "{good}colour = \"blue\"\n\n[[service]]\nname = \"s1\"\nip = \"{}\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"ghost\"\n",
        net.svc_ip(1)
    );
    let dir = net.scratch();
    let path = dir.write("bad.toml", &bad);
    let out = SEXTANT.run(&["check", &path]);
    let all = output_text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    let unknown_key_line = pre + 1;
    let ghost_line = pre + 8;
    for line in [unknown_key_line, ghost_line] {
        let want = format!("{path}:{line}:");
        assert!(all.contains(&want), "missing {want} in:\n{all}");
    }
}

#[test]
fn toml_sighup_reload_adds_a_domain() {
    let net = Net::new("cli_toml_reload");
    let base = format!(
        "{}\n[[service]]\nname = \"s0\"\nip = \"{}\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"site1\"\n\n\
         [[vserver]]\nname = \"vs0\"\nprotocol = \"HTTP\"\nlb_method = \"ROUNDROBIN\"\n\
         services = [{{ name = \"s0\" }}]\ndomains = [{{ name = \"app.example.com\" }}]\n",
        net.toml_preamble(),
        net.svc_ip(0)
    );
    let s = Server::start(SEXTANT, &net, Syntax::Toml, &base);
    let g0 = s.generation();
    assert_eq!(s.dns.query_a("app.example.com"), vec![net.svc_ip(0)]);
    let next = format!(
        "{base}\n[[service]]\nname = \"s1\"\nip = \"{}\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"site1\"\n\n\
         [[vserver]]\nname = \"vs1\"\nprotocol = \"HTTP\"\nlb_method = \"ROUNDROBIN\"\n\
         services = [{{ name = \"s1\" }}]\ndomains = [{{ name = \"new.example.com\" }}]\n",
        net.svc_ip(1)
    );
    s.reload(&next);
    eventually(EVENTUALLY, "new.example.com after SIGHUP", || {
        s.dns.query_a("new.example.com") == vec![net.svc_ip(1)]
    });
    assert!(s.generation() > g0);

    // A broken TOML file keeps the running config.
    let g1 = s.generation();
    s.reload("version = 1\n[server\n");
    let said = wait_until(EVENTUALLY, || s.status().last_reload_error.is_some());
    assert!(said, "failed TOML reload not reported in /v1/status");
    assert_eq!(s.generation(), g1);
    assert_eq!(s.dns.query_a("new.example.com"), vec![net.svc_ip(1)]);
}

/// `--udp-receive-buffer`: the DNS socket gets the buffer asked for (the
/// kernel doubles it for its bookkeeping, within net.core.rmem_max), 0
/// keeps the kernel's default, and the server answers either way. Read
/// back with `ss -m`, from outside the process.
#[test]
fn udp_receive_buffer_flag_sizes_the_dns_socket() {
    if !have_program("ss") {
        cannot_run("ss (iproute2) is needed to read the socket's buffer");
        return;
    }
    let sysctl = |name: &str| -> u64 {
        fs::read_to_string(format!("/proc/sys/net/core/{name}"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let (rmem_default, rmem_max) = (sysctl("rmem_default"), sysctl("rmem_max"));
    for (flag, want) in [("0", rmem_default), ("300000", 2 * rmem_max.min(300_000))] {
        let net = Net::new(&format!("cli_udp_receive_buffer_{flag}"));
        let cfg = format!(
            "{}add gslb service s0 {} HTTP 80 -siteName site1\n\
             add gslb vserver vs HTTP -lbMethod ROUNDROBIN\n\
             bind gslb vserver vs -serviceName s0\n\
             bind gslb vserver vs -domainName app.example.com -TTL 5\n",
            net.conf_preamble(),
            net.svc_ip(0)
        );
        let s = Server::start_with(
            SEXTANT,
            &net,
            Syntax::Conf,
            &cfg,
            &["--udp-receive-buffer", flag],
        );
        assert_eq!(
            s.dns.sample_a("app.example.com", 3).len(),
            3,
            "{flag}: answers"
        );
        let listen = format!("{}:{DNS_PORT}", net.server_ip());
        let out = Command::new("ss")
            .args(["-Hulnm", "src", &listen])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let rb: u64 = text
            .split([',', '(', ')'])
            .find_map(|f| f.strip_prefix("rb"))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no rb in `ss -Hulnm src {listen}`: {text}"));
        assert_eq!(rb, want, "--udp-receive-buffer {flag}: {text}");
    }
}
