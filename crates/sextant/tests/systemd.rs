//! `sextant serve` under systemd (packaging/sextant.service): the unit
//! verified by `systemd-analyze verify`, the notify protocol spoken to a
//! unix datagram socket the test listens on (as systemd's NOTIFY_SOCKET),
//! and the daemon started with exactly the unit's command line.
//!
//! That a stuck state task stops the watchdog pings is tested where it is
//! honest, in the binary's unit tests (`systemd::tests`): the real
//! `keep_alive` against a stand-in state task that stops taking inputs.

#![allow(unsafe_code)] // kill(2) on the test's own child

use std::fs;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use sextant_test_support::prelude::*;

/// The binary under test.
const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

/// The unit as the package installs it.
const UNIT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../packaging/sextant.service"
);

/// The configuration an operator starts from: the local site with its DNS
/// listener, one monitored service behind one vserver and domain.
fn config(net: &Net, backend: &Backend, services: u8) -> String {
    let mut c = net.conf_preamble();
    c.push_str("add lb monitor tcp TCP -interval 200 MSEC -resptimeout 100 MSEC -retries 2\n");
    c.push_str("add gslb vserver vs_app TCP -lbMethod ROUNDROBIN\n");
    for i in 0..services {
        c.push_str(&format!(
            "add gslb service web-{i} {} TCP {} -siteName site1\n\
             bind gslb service web-{i} -monitorName tcp\n\
             bind gslb vserver vs_app -serviceName web-{i}\n",
            backend.ip(),
            backend.port()
        ));
    }
    c.push_str("bind gslb vserver vs_app -domainName app.example.com -TTL 5\n");
    c
}

/// The notify socket: every datagram, in order of arrival, with when it
/// came, on a channel.
struct NotifySocket {
    path: PathBuf,
    rx: mpsc::Receiver<(Instant, String)>,
}

impl NotifySocket {
    fn bind(dir: &Path) -> NotifySocket {
        let path = dir.join("notify.sock");
        let socket = UnixDatagram::bind(&path).expect("bind the notify socket");
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let mut buf = vec![0u8; 4096];
            while let Ok(n) = socket.recv(&mut buf) {
                let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                if tx.send((Instant::now(), text)).is_err() {
                    return;
                }
            }
        });
        NotifySocket { path, rx }
    }

    /// The next datagram; panics after `EVENTUALLY`.
    fn next(&self, seen: &mut Vec<String>, log: &dyn Fn() -> String) -> (Instant, String) {
        match self.rx.recv_timeout(EVENTUALLY) {
            Ok((at, m)) => {
                seen.push(m.clone());
                (at, m)
            }
            Err(_) => panic!(
                "no notify message within {EVENTUALLY:?}; so far: {seen:#?}\n--- log ---\n{}",
                log()
            ),
        }
    }

    /// Datagrams until one has `wanted` as a line, skipping watchdog pings
    /// (and counting them); the ones skipped that are not pings are returned.
    fn until(
        &self,
        wanted: &str,
        seen: &mut Vec<String>,
        pings: &mut Vec<Instant>,
        log: &dyn Fn() -> String,
    ) -> (Vec<String>, String) {
        let mut others = Vec::new();
        loop {
            let (at, m) = self.next(seen, log);
            if m == "WATCHDOG=1\n" {
                pings.push(at);
                continue;
            }
            if m.lines().any(|l| l == wanted) {
                return (others, m);
            }
            others.push(m);
        }
    }
}

/// A running `sextant serve`, killed on drop.
struct Daemon {
    child: Child,
    stderr: PathBuf,
}

impl Daemon {
    fn log(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child, not yet reaped.
        let rc = unsafe { libc::kill(self.child.id() as i32, sig) };
        assert_eq!(rc, 0, "kill({sig})");
    }

    /// Waits (bounded) for the exit; its status.
    fn wait(&mut self) -> std::process::ExitStatus {
        let end = Instant::now() + EVENTUALLY;
        loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                return s;
            }
            assert!(Instant::now() < end, "sextant did not exit\n{}", self.log());
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[test]
fn notify_protocol_ready_watchdog_reload_stop() {
    let net = Net::new("systemd_notify");
    let scratch = net.scratch();
    let dir = &scratch.0;
    let backend = Backend::tcp(net.svc_ip(0));
    let conf = dir.join("sextant.conf");
    fs::write(&conf, config(&net, &backend, 1)).expect("write config");
    let tokens = dir.join("api-tokens");
    write_token_file(&tokens);
    let notify = NotifySocket::bind(dir);
    let stderr = dir.join("stderr.log");
    let mut cmd = SEXTANT.command();
    cmd.args(["serve", "--config", conf.to_str().unwrap()])
        .args(["--api-token-file", tokens.to_str().unwrap()])
        .args(["--api-listen", &net.api_addr().to_string()])
        .env("NOTIFY_SOCKET", &notify.path)
        .env("WATCHDOG_USEC", "2000000")
        .env_remove("WATCHDOG_PID")
        .stdout(Stdio::null())
        .stderr(fs::File::create(&stderr).expect("stderr file"));
    let mut daemon = Daemon {
        child: cmd.spawn().expect("spawn sextant"),
        stderr,
    };
    let log = || fs::read_to_string(dir.join("stderr.log")).unwrap_or_default();
    let mut seen = Vec::new();
    let mut pings = Vec::new();

    // READY=1, and DNS answers a query sent the moment it arrives.
    // The log is read the moment READY=1 arrives, before the query: the
    // DNS threads must already be serving then.
    let (before, ready) = notify.until("READY=1", &mut seen, &mut pings, &log);
    let log_at_ready = log();
    let answer = net_dns(&net).query_a("app.example.com");
    assert_eq!(
        answer,
        vec![net.svc_ip(0)],
        "a query on READY=1 is answered"
    );
    assert!(
        log_at_ready.contains("DNS answering on UDP and TCP"),
        "READY=1 came before DNS was answering:\n{log_at_ready}"
    );
    assert!(
        before
            .iter()
            .any(|m| m.contains("STATUS=starting: waiting for the first health results")),
        "a STATUS while starting: {before:?}"
    );
    assert!(
        ready.contains("STATUS=configuration generation 1 loaded (1 services)"),
        "{ready:?}"
    );

    // Watchdog pings at half of WATCHDOG_USEC (about every second).
    while pings.len() < 3 {
        let (at, m) = notify.next(&mut seen, &log);
        assert_eq!(m, "WATCHDOG=1\n", "only pings while nothing happens");
        pings.push(at);
    }
    let gaps: Vec<Duration> = pings.windows(2).map(|w| w[1] - w[0]).collect();
    eprintln!("watchdog ping intervals: {gaps:?}");

    // SIGHUP with a second service: RELOADING=1, STATUS, READY=1.
    fs::write(&conf, config(&net, &backend, 2)).expect("edit config");
    daemon.signal(libc::SIGHUP);
    let (_, reloading) = notify.until("RELOADING=1", &mut seen, &mut pings, &log);
    assert!(reloading.contains("MONOTONIC_USEC="), "{reloading:?}");
    let (between, _) = notify.until("READY=1", &mut seen, &mut pings, &log);
    assert_eq!(
        between,
        vec!["STATUS=configuration generation 2 loaded (2 services)\n".to_string()],
        "the outcome between RELOADING=1 and READY=1"
    );

    // A bad edit: STATUS names the file and line; generation 2 stays.
    let mut bad = config(&net, &backend, 2);
    bad.push_str("bind gslb vserver vs_app -serviceName web-9\n");
    let bad_line = bad.lines().count();
    fs::write(&conf, &bad).expect("bad edit");
    daemon.signal(libc::SIGHUP);
    notify.until("RELOADING=1", &mut seen, &mut pings, &log);
    let (between, _) = notify.until("READY=1", &mut seen, &mut pings, &log);
    let status = between.join("");
    let where_ = format!("STATUS=reload failed: {}:{bad_line}: ", conf.display());
    assert!(
        status.starts_with(&where_) && status.ends_with("; still running generation 2\n"),
        "{status:?} should start with {where_:?}"
    );
    assert_eq!(
        net_dns(&net).query_a("app.example.com"),
        vec![net.svc_ip(0)],
        "generation 2 still answers"
    );

    // SIGTERM: STOPPING=1, exit 0.
    daemon.signal(libc::SIGTERM);
    let (_, stopping) = notify.until("STOPPING=1", &mut seen, &mut pings, &log);
    assert!(
        stopping.contains("STATUS=stopping (SIGTERM)"),
        "{stopping:?}"
    );
    assert!(daemon.wait().success(), "{}", daemon.log());
    eprintln!("notify messages received, in order:");
    for m in &seen {
        eprintln!("  {}", m.trim_end().replace('\n', " | "));
    }
}

/// Without NOTIFY_SOCKET nothing is sent and nothing about it is logged.
#[test]
fn without_notify_socket_nothing_is_logged() {
    let net = Net::new("systemd_no_socket");
    let backend = Backend::tcp(net.svc_ip(0));
    let mut s = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net, &backend, 1));
    assert!(
        wait_until(EVENTUALLY, || {
            s.dns
                .try_udp_from(None, &build_query("app.example.com", RecordType::A, None))
                .is_ok_and(|m| !a_records(&m).is_empty())
        }),
        "DNS answers"
    );
    s.reload(&config(&net, &backend, 1));
    assert!(
        wait_until(EVENTUALLY, || s.log().contains("configuration reloaded")),
        "the reload"
    );
    let log = s.log();
    assert!(
        !log.contains("notify") && !log.contains("watchdog"),
        "nothing about systemd without NOTIFY_SOCKET:\n{log}"
    );
    s.stop();
}

fn net_dns(net: &Net) -> Dns {
    Dns::new(net.dns_addr())
}

/// The unit file's `KEY=` lines of its [Service] section.
fn unit_values(key: &str) -> Vec<String> {
    let text = fs::read_to_string(UNIT).expect("read packaging/sextant.service");
    text.lines()
        .filter_map(|l| l.strip_prefix(&format!("{key}=")))
        .map(str::to_string)
        .collect()
}

/// The unit with its ExecStart binary replaced (`systemd-analyze verify`
/// checks that the binary exists; /usr/bin/sextant does not here).
fn unit_with_binary(dir: &Path, binary: &str) -> PathBuf {
    let text = fs::read_to_string(UNIT).expect("read packaging/sextant.service");
    let path = dir.join("sextant.service");
    fs::write(&path, text.replace("/usr/bin/sextant", binary)).expect("write unit");
    path
}

fn verify(unit: &Path) -> std::process::Output {
    Command::new("systemd-analyze")
        .arg("verify")
        .arg(unit)
        .output()
        .expect("run systemd-analyze")
}

#[test]
fn unit_verifies() {
    if !have_program("systemd-analyze") {
        cannot_run("this test needs systemd-analyze (scripts/setup.sh installs systemd)");
        return;
    }
    let net = Net::new("systemd_verify");
    let scratch = net.scratch();
    let unit = unit_with_binary(&scratch.0, SEXTANT.0);
    let out = verify(&unit);
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "systemd-analyze verify: {}",
        output_text(&out)
    );
    // The check can fail: a binary that is not there is refused.
    let missing = unit_with_binary(&scratch.0, "/nonexistent/sextant");
    assert!(
        !verify(&missing).status.success(),
        "verify refuses a unit whose binary is missing"
    );
}

/// `sextant serve` started with exactly the unit's ExecStart= (its paths
/// moved into the test's directory) and the environment systemd gives it
/// (only NOTIFY_SOCKET and WATCHDOG_USEC from WatchdogSec=, the working
/// directory /): it starts, READY=1 comes and DNS answers. In a network
/// namespace of its own, so the API's default 127.0.0.1:8053 (the unit
/// names no API address) is free.
#[test]
fn unit_command_line_serves() {
    let Some(ns) = Netns::create("unitcmd") else {
        return;
    };
    let net = Net::new("systemd_unit_cmd");
    let scratch = net.scratch();
    let dir = &scratch.0;
    assert!(
        unit_values("Environment").is_empty() && unit_values("EnvironmentFile").is_empty(),
        "the unit sets no environment: this test gives none"
    );
    let exec = unit_values("ExecStart");
    assert_eq!(exec.len(), 1, "one ExecStart=");
    let watchdog = unit_values("WatchdogSec");
    assert_eq!(watchdog, vec!["30s".to_string()]);
    let conf = dir.join("sextant.conf");
    let tokens = dir.join("api-tokens");
    let state = dir.join("state");
    fs::create_dir_all(&state).expect("the state directory");
    let argv: Vec<String> = exec[0]
        .split_whitespace()
        .map(|a| match a {
            "/usr/bin/sextant" => SEXTANT.0.to_string(),
            "/etc/sextant/sextant.conf" => conf.display().to_string(),
            "/etc/sextant/api-tokens" => tokens.display().to_string(),
            "/var/lib/sextant" => state.display().to_string(),
            other => {
                assert!(
                    !other.starts_with('/'),
                    "a path the test does not move: {other}"
                );
                other.to_string()
            }
        })
        .collect();
    // The backend and the queries run inside the namespace too.
    let ip = net.server_ip();
    let backend = ns.run(|| Backend::tcp(net.svc_ip(0)));
    fs::write(&conf, config(&net, &backend, 1)).expect("write config");
    write_token_file(&tokens);
    let notify = NotifySocket::bind(dir);
    let stderr = dir.join("stderr.log");
    let ip_program = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("ip(8)");
    // The environment is cleared: `ip` by its full path.
    let mut cmd = Command::new(ip_program);
    cmd.args(["netns", "exec", &ns.name])
        .args(&argv)
        .env_clear()
        .env("NOTIFY_SOCKET", &notify.path)
        .env("WATCHDOG_USEC", "30000000")
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(&stderr).expect("stderr file"));
    let mut daemon = Daemon {
        child: cmd.spawn().expect("spawn sextant"),
        stderr,
    };
    let log = || fs::read_to_string(dir.join("stderr.log")).unwrap_or_default();
    let (mut seen, mut pings) = (Vec::new(), Vec::new());
    notify.until("READY=1", &mut seen, &mut pings, &log);
    let answer = ns.run(|| {
        Dns::new(std::net::SocketAddr::new(ip.into(), DNS_PORT)).query_a("app.example.com")
    });
    assert_eq!(answer, vec![net.svc_ip(0)], "{}", daemon.log());
    // A maintenance mark is kept in the unit's --state-dir, not beside
    // the configuration.
    let api: std::net::SocketAddr = "127.0.0.1:8053".parse().expect("address");
    let (code, body) = ns
        .run(|| {
            http_send_json(
                api,
                "POST",
                "/v1/services/web-0/disable",
                r#"{"reason": "state-dir check"}"#,
                Some(TEST_TOKEN),
            )
        })
        .expect("disable over the API");
    assert_eq!(code, 200, "{body}");
    let saved = fs::read_to_string(state.join("sextant.admin-state.json")).unwrap_or_else(|e| {
        panic!(
            "no state file in the state directory: {e}\n{}",
            daemon.log()
        )
    });
    assert!(saved.contains("state-dir check"), "{saved}");
    assert!(
        !dir.join("sextant.admin-state.json").exists(),
        "a state file beside the configuration"
    );
    daemon.signal(libc::SIGTERM);
    notify.until("STOPPING=1", &mut seen, &mut pings, &log);
    assert!(daemon.wait().success(), "{}", daemon.log());
}
