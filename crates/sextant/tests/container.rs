//! The container image (issue 29, item 3; docs/deploy.md, "Container
//! image"): packaging/Containerfile, built by scripts/container.sh.
//!
//! - `static_binary_serves_with_the_image_command_line`: the exact static
//!   binary the image copies, with the image's file capability, run as the
//!   image's user (uid 5353) with the Containerfile's ENTRYPOINT and the
//!   image's configuration, in a network namespace of its own: it binds
//!   port 53 of every address without root and answers DNS and the API.
//! - `image_answers_dns`: the image itself, run by podman in a network
//!   namespace the test made (`--network ns:PATH`), answers a query.
//!
//! The static binary is `$SEXTANT_STATIC_BIN` and the image
//! `$SEXTANT_IMAGE` when set (scripts/test.sh builds both in a step of its
//! own: a release build is too long for a test's timeout); otherwise the
//! test runs scripts/container.sh itself. Needs root, setcap, setpriv and
//! podman: under CI a missing one fails the test.

#![allow(unsafe_code)] // getrlimit(2) for the container's limits

use std::fs;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use sextant_test_support::ci::{cannot_run, have_program, is_root};
use sextant_test_support::prelude::*;

/// The image's user and group (packaging/Containerfile, `USER`).
const IMAGE_UID: &str = "5353";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// scripts/container.sh with `extra` in its environment; its last line of
/// stdout (the binary's path or the image's name).
fn container_sh(extra: &[(&str, &str)]) -> String {
    let out = Command::new(workspace().join("scripts/container.sh"))
        .envs(extra.iter().copied())
        .stderr(Stdio::inherit())
        .output()
        .expect("run scripts/container.sh");
    assert!(out.status.success(), "scripts/container.sh failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .expect("scripts/container.sh printed nothing")
        .to_string()
}

/// The static binary the image copies.
fn static_binary() -> PathBuf {
    let path = match std::env::var("SEXTANT_STATIC_BIN") {
        Ok(p) => PathBuf::from(p),
        Err(_) => workspace().join(container_sh(&[("BUILD_ONLY", "1")])),
    };
    assert!(path.exists(), "no static binary at {}", path.display());
    path
}

/// The Containerfile's ENTRYPOINT, as its JSON array says it.
fn entrypoint() -> Vec<String> {
    let text = fs::read_to_string(workspace().join("packaging/Containerfile"))
        .expect("read packaging/Containerfile");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("ENTRYPOINT "))
        .expect("an ENTRYPOINT line");
    serde_json::from_str(line).expect("ENTRYPOINT is a JSON array")
}

/// The image's configuration, with a monitored service behind a vserver
/// added as an operator would, so that a query has an answer.
fn configuration(backend: &Backend) -> String {
    let mut c = fs::read_to_string(workspace().join("packaging/container/sextant.conf"))
        .expect("read packaging/container/sextant.conf");
    c.push_str(&format!(
        "add lb monitor tcp TCP -interval 1 SEC -resptimeout 500 MSEC -retries 2\n\
         add gslb service web-1 {} TCP {} -siteName site1\n\
         bind gslb service web-1 -monitorName tcp\n\
         add gslb vserver vs_app TCP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs_app -serviceName web-1\n\
         bind gslb vserver vs_app -domainName app.example.com -TTL 5\n",
        backend.ip(),
        backend.port()
    ));
    c
}

/// Ends the child (by its pid) when the test ends, passed or not.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Port 53 of every address of the namespace answers `app.example.com`
/// with the backend's address.
fn answers(ns: &Netns, backend: Ipv4Addr, log: &dyn Fn() -> String) {
    let dns = SocketAddr::from((Ipv4Addr::LOCALHOST, 53));
    let mut last = Vec::new();
    let ok = wait_until(Duration::from_secs(20), || {
        last = ns.run(|| {
            Dns::new(dns)
                .try_udp_from(None, &build_query("app.example.com", RecordType::A, None))
                .map(|m| a_records(&m))
                .unwrap_or_default()
        });
        last == vec![backend]
    });
    assert!(
        ok,
        "no answer {backend} on port 53 (last {last:?}):\n{}",
        log()
    );
}

#[test]
fn static_binary_serves_with_the_image_command_line() {
    if !is_root() {
        cannot_run("this test needs root (setcap, another user, a network namespace)");
        return;
    }
    for program in ["setcap", "setpriv"] {
        if !have_program(program) {
            cannot_run(&format!(
                "this test needs `{program}` (scripts/setup.sh installs libcap2-bin and util-linux)"
            ));
            return;
        }
    }
    let Some(ns) = Netns::create("image_cmd") else {
        return;
    };
    let net = Net::new("container_image_cmd");
    let scratch = net.scratch();
    let dir = &scratch.0;
    fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod scratch");
    // The image's layout, under the test's directory: the binary with the
    // file capability container.sh sets, the configuration, the state
    // directory owned by the image's user.
    let binary = dir.join("sextant");
    fs::copy(static_binary(), &binary).expect("copy the static binary");
    let out = Command::new("setcap")
        .args(["cap_net_bind_service=ep"])
        .arg(&binary)
        .output()
        .expect("run setcap");
    assert!(out.status.success(), "setcap: {}", output_text(&out));
    let backend = ns.run(|| Backend::tcp(net.svc_ip(0)));
    let conf = dir.join("sextant.conf");
    fs::write(&conf, configuration(&backend)).expect("write the configuration");
    let state = dir.join("state");
    fs::create_dir(&state).expect("the state directory");
    let chown = Command::new("chown")
        .args([&format!("{IMAGE_UID}:{IMAGE_UID}")])
        .arg(&state)
        .status()
        .expect("run chown");
    assert!(chown.success());
    let argv: Vec<String> = entrypoint()
        .into_iter()
        .map(|a| match a.as_str() {
            "/usr/bin/sextant" => binary.display().to_string(),
            "/etc/sextant/sextant.conf" => conf.display().to_string(),
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
    assert!(
        argv.windows(2)
            .any(|w| w[0] == "--api-listen" && w[1] == "0.0.0.0:8053"),
        "the image's API listens on every address: {argv:?}"
    );
    let stderr = dir.join("stderr.log");
    // As the image's user, with no capability but what the file gives
    // (setpriv drops the inheritable and ambient sets; the bounding set
    // keeps NET_BIND_SERVICE, as a container's does).
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &ns.name, "setpriv"])
        .args(["--reuid", IMAGE_UID, "--regid", IMAGE_UID, "--clear-groups"])
        .args(["--inh-caps=-all", "--ambient-caps=-all"])
        .args(&argv)
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(&stderr).expect("stderr file"));
    let daemon = Kill(cmd.spawn().expect("spawn the static sextant"));
    let log = || fs::read_to_string(&stderr).unwrap_or_default();
    answers(&ns, net.svc_ip(0), &log);
    let (code, body) = ns
        .run(|| http_get(SocketAddr::from((Ipv4Addr::LOCALHOST, 8053)), "/v1/status"))
        .expect("GET /v1/status");
    assert_eq!(code, 200, "{body}");
    // The user it runs as is the image's, not root.
    let status = fs::read_to_string(format!("/proc/{}/status", daemon.0.id())).unwrap_or_default();
    let uid_line = status.lines().find(|l| l.starts_with("Uid:"));
    // The child is `ip netns exec`, which execs setpriv, which execs sextant:
    // the same process.
    assert!(
        uid_line.is_some_and(|l| l.split_whitespace().nth(1) == Some(IMAGE_UID)),
        "runs as uid {IMAGE_UID}: {uid_line:?}"
    );
    drop(daemon);
}

/// The OCI runtime: runc. crun (podman's default) refuses a machine whose
/// cgroups are mounted in hybrid mode, as this one's are ("cgroups in
/// hybrid mode not supported"); runc runs there and everywhere else.
fn podman_runtime() -> [&'static str; 2] {
    ["--runtime", "runc"]
}

/// The container's file and process limits: this process's own. podman's
/// defaults (a million files) are above the hard limits of a machine
/// whose root lacks CAP_SYS_RESOURCE, where setting them fails
/// ("setrlimit `RLIMIT_NOFILE`: Operation not permitted").
fn ulimits() -> Vec<String> {
    let limit = |resource| {
        let mut l = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit(2) fills the struct it is given.
        let rc = unsafe { libc::getrlimit(resource, &mut l) };
        assert_eq!(rc, 0, "getrlimit");
        format!("{}:{}", l.rlim_cur, l.rlim_max)
    };
    vec![
        format!("--ulimit=nofile={}", limit(libc::RLIMIT_NOFILE)),
        // Setting RLIMIT_NPROC to this process's own hard limit is refused
        // here too; a lower one is taken (the daemon needs a few dozen).
        "--ulimit=nproc=4096:4096".to_string(),
    ]
}

#[test]
fn image_answers_dns() {
    if !is_root() {
        cannot_run("this test needs root (podman, a network namespace)");
        return;
    }
    if !have_program("podman") {
        cannot_run("this test needs podman (scripts/setup.sh installs it)");
        return;
    }
    let Some(ns) = Netns::create("image_run") else {
        return;
    };
    let image = std::env::var("SEXTANT_IMAGE").unwrap_or_else(|_| container_sh(&[]));
    let net = Net::new("container_image_run");
    let scratch = net.scratch();
    let dir = &scratch.0;
    let backend = ns.run(|| Backend::tcp(net.svc_ip(0)));
    let conf = dir.join("sextant.conf");
    fs::write(&conf, configuration(&backend)).expect("write the configuration");
    fs::set_permissions(&conf, std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .expect("chmod the configuration");
    let name = format!("sextant-test-{}", std::process::id());
    let stderr = dir.join("podman.log");
    // The configuration replaces the image's (read-only, as a ConfigMap
    // is); the image's own command line, user and capabilities.
    let child = Command::new("podman")
        .args(podman_runtime())
        .args(["run", "--rm", "--name", &name])
        .arg(format!("--network=ns:/run/netns/{}", ns.name))
        // Ports below 1024 need the capability (runtimes default this
        // sysctl to 0 in a container): the binary's file capability is
        // what lets the user sextant bind port 53.
        .arg("--sysctl=net.ipv4.ip_unprivileged_port_start=1024")
        .args(ulimits())
        .arg(format!(
            "--volume={}:/etc/sextant/sextant.conf:ro",
            conf.display()
        ))
        .arg(&image)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(&stderr).expect("log file"))
        .spawn()
        .expect("run podman");
    let _container = Kill(child);
    let log = || fs::read_to_string(&stderr).unwrap_or_default();
    answers(&ns, net.svc_ip(0), &log);
    // The process in the container is not root.
    let top = Command::new("podman")
        .args(podman_runtime())
        .args(["top", &name, "user", "args"])
        .output()
        .expect("podman top");
    let top = String::from_utf8_lossy(&top.stdout).into_owned();
    assert!(
        top.lines()
            .any(|l| l.contains("sextant serve") && l.starts_with("sextant")),
        "podman top: the daemon runs as the user sextant:\n{top}"
    );
    let stop = Command::new("podman")
        .args(podman_runtime())
        .args(["stop", "--time", "10", &name])
        .output()
        .expect("podman stop");
    assert!(stop.status.success(), "podman stop: {}", output_text(&stop));
}
