//! Tests that need something this machine may lack (root, a network
//! namespace, iptables, `dig`, an IPv6 loopback, ping sockets).
//!
//! CI (`bash .ci/run` with `CI=true`, as root, after `scripts/setup.sh`
//! installed dig, dnsperf, iproute2 and iptables) has all of it, so there a
//! test that cannot run is a failure, not a pass. On a developer's machine
//! it prints `SKIPPED: ...` and returns.

use std::process::Command;

/// Whether the tests run under CI: the environment variable `CI` is `true`.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true"))
}

/// Says that the calling test cannot run here, and why. Under CI this
/// panics (the test fails); elsewhere it prints `SKIPPED: {reason}` and
/// returns, and the caller returns too:
///
/// ```
/// # use sextant_test_support::ci::{cannot_run, have_program};
/// if !have_program("sh") {
///     cannot_run("this test needs `sh`");
///     return;
/// }
/// ```
#[track_caller]
pub fn cannot_run(reason: &str) {
    if under_ci() {
        panic!("this test cannot run here, and under CI (CI=true) every test must run: {reason}");
    }
    eprintln!("SKIPPED: {reason}");
}

/// Whether a program is on PATH.
pub fn have_program(name: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {name} >/dev/null 2>&1"))
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}
