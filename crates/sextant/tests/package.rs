//! The Debian package (issue 29, item 1), installed for real: `dpkg -i` the
//! .deb that scripts/package.sh built, look at what an operator finds
//! (user, binary, conffile, manual pages, completions, state directory,
//! token file), install it again as an upgrade does (the token survives),
//! then `dpkg -r` (configuration kept) and `dpkg -P` (everything gone).
//!
//! The .deb is `$SEXTANT_DEB` when set: scripts/test.sh builds the package
//! in a step of its own before the tests (a release build, too long for a
//! test's timeout and too heavy to run beside the other tests); otherwise
//! this test runs scripts/package.sh itself. Needs root, dpkg and
//! cargo-deb: under CI a missing one fails the test.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sextant_test_support::ci::{cannot_run, have_program, is_root};
use sextant_test_support::prelude::*;

const BIN: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs a command to completion; panics with its output when it fails.
fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed ({}):\n{}",
        out.status,
        text(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn text(out: &Output) -> String {
    format!(
        "--- stdout ---\n{}--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Whether dpkg knows the package `sextant` in any state (installed, or
/// removed with its configuration kept).
fn dpkg_status() -> Option<String> {
    let out = Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", "sextant"])
        .output()
        .expect("run dpkg-query");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
        .filter(|s| !s.contains("not-installed"))
}

/// Purges the package when the test ends, passed or not, so that a failed
/// run leaves no sextant installed on the machine.
struct Purge;

impl Drop for Purge {
    fn drop(&mut self) {
        let _ = Command::new("dpkg").args(["-P", "sextant"]).output();
    }
}

/// The starting configuration the package installs is one `sextant check`
/// accepts (this runs everywhere, without root).
#[test]
fn packaged_configuration_is_valid() {
    let conf = workspace().join("packaging/sextant.conf");
    let out = BIN.run(&["check", conf.to_str().expect("utf-8 path")]);
    assert!(
        out.status.success(),
        "sextant check refused packaging/sextant.conf:\n{}",
        text(&out)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("warning"),
        "the starting configuration has warnings:\n{stderr}"
    );
}

#[test]
fn package_installs_upgrades_removes_and_purges() {
    if !is_root() {
        cannot_run("installing a .deb needs root");
        return;
    }
    for program in ["dpkg", "dpkg-query", "adduser"] {
        if !have_program(program) {
            cannot_run(&format!("this test needs `{program}`"));
            return;
        }
    }
    if let Some(status) = dpkg_status() {
        // Never replace an installation this test did not make.
        cannot_run(&format!(
            "a sextant package is already on this machine ({status}); purge it first"
        ));
        return;
    }
    let deb = match std::env::var_os("SEXTANT_DEB") {
        Some(deb) => PathBuf::from(deb),
        None => {
            if Command::new("cargo")
                .args(["deb", "--version"])
                .output()
                .map(|o| !o.status.success())
                .unwrap_or(true)
            {
                cannot_run("cargo-deb is missing (scripts/setup.sh installs it)");
                return;
            }
            let script = workspace().join("scripts/package.sh");
            let out = run(script.to_str().expect("utf-8 path"), &[]);
            PathBuf::from(
                out.lines()
                    .last()
                    .expect("package.sh prints the .deb's path")
                    .trim(),
            )
        }
    };
    assert!(deb.is_file(), "no package at {}", deb.display());
    let deb = deb.to_str().expect("utf-8 path").to_owned();

    // What the package holds, before installing it.
    let contents = run("dpkg-deb", &["--contents", &deb]);
    for path in [
        "./usr/bin/sextant",
        "./etc/sextant/sextant.conf",
        "./usr/share/man/man1/sextant.1.gz",
        "./usr/share/man/man1/sextant-serve.1.gz",
        "./usr/share/man/man1/sextant-check.1.gz",
        "./usr/share/bash-completion/completions/sextant",
        "./usr/share/zsh/vendor-completions/_sextant",
        "./usr/share/fish/vendor_completions.d/sextant.fish",
    ] {
        assert!(
            contents.lines().any(|l| l.ends_with(path)),
            "{path} is not in the package:\n{contents}"
        );
    }
    // The hidden subcommand that made the pages has none of its own.
    assert!(!contents.contains("generate-assets"), "{contents}");
    // The unit (packaging/sextant.service, written with the systemd work)
    // goes where systemd looks for a package's units, when it is there.
    let unit_source = workspace().join("packaging/sextant.service");
    let unit_packaged = contents
        .lines()
        .any(|l| l.ends_with("/lib/systemd/system/sextant.service"));
    assert_eq!(unit_packaged, unit_source.exists(), "{contents}");

    let _purge = Purge;
    run("dpkg", &["-i", &deb]);

    let passwd = run("getent", &["passwd", "sextant"]);
    let fields: Vec<&str> = passwd.trim().split(':').collect();
    let uid: u32 = fields[2].parse().expect("uid");
    assert!(uid < 1000, "sextant is not a system user: {passwd}");
    assert_eq!(fields[6], "/usr/sbin/nologin", "{passwd}");
    let gid: u32 = run("getent", &["group", "sextant"])
        .trim()
        .split(':')
        .nth(2)
        .expect("gid")
        .parse()
        .expect("gid");

    let version = run("/usr/bin/sextant", &["--version"]);
    assert!(version.starts_with("sextant "), "{version}");

    let conffiles = run("dpkg-query", &["-W", "-f=${Conffiles}", "sextant"]);
    assert!(
        conffiles.contains("/etc/sextant/sextant.conf"),
        "not a conffile: {conffiles}"
    );
    run("/usr/bin/sextant", &["check", "/etc/sextant/sextant.conf"]);
    // The installed unit verifies against the installed binary.
    if unit_source.exists() {
        run(
            "systemd-analyze",
            &["verify", "/usr/lib/systemd/system/sextant.service"],
        );
    }
    assert_eq!(
        fs::read(workspace().join("packaging/sextant.conf")).expect("read packaging/sextant.conf"),
        fs::read("/etc/sextant/sextant.conf").expect("read the installed configuration"),
    );

    for page in ["sextant", "sextant-serve", "sextant-check", "sextant-cli"] {
        let path = format!("/usr/share/man/man1/{page}.1.gz");
        assert!(Path::new(&path).is_file(), "{path} missing");
    }
    let bash = fs::read_to_string("/usr/share/bash-completion/completions/sextant")
        .expect("bash completion");
    assert!(
        bash.contains("serve") && bash.contains("--config"),
        "{bash}"
    );

    let state = fs::metadata("/var/lib/sextant").expect("/var/lib/sextant");
    assert!(state.is_dir());
    assert_eq!(
        (state.uid(), state.gid()),
        (uid, gid),
        "/var/lib/sextant not owned by sextant"
    );
    assert_eq!(state.permissions().mode() & 0o777, 0o750);
    // The server rewrites its configuration there (PUT /v1/config, config
    // sync): the directory is writable by its group.
    let etc = fs::metadata("/etc/sextant").expect("/etc/sextant");
    assert_eq!(
        (etc.uid(), etc.gid(), etc.permissions().mode() & 0o777),
        (0, gid, 0o770),
        "/etc/sextant is not root:sextant 0770"
    );

    let tokens = fs::metadata("/etc/sextant/api-tokens").expect("/etc/sextant/api-tokens");
    assert_eq!(tokens.permissions().mode() & 0o777, 0o600);
    assert_eq!(tokens.uid(), uid, "the token file is not sextant's");
    let token_text = fs::read_to_string("/etc/sextant/api-tokens").expect("read the token file");
    let token_line = token_text
        .lines()
        .find(|l| !l.starts_with('#'))
        .expect("a token line");
    let token = token_line.strip_prefix("admin ").expect("NAME TOKEN");
    assert_eq!(token.len(), 32, "a 128-bit hex token: {token_line}");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));

    // An upgrade (the same package configured again) keeps the operator's
    // edit of the conffile and the token.
    let mut edited = fs::read_to_string("/etc/sextant/sextant.conf").expect("read");
    edited.push_str("# edited by the operator\n");
    fs::write("/etc/sextant/sextant.conf", &edited).expect("edit the configuration");
    run("dpkg", &["-i", "--force-confold", &deb]);
    assert_eq!(
        fs::read_to_string("/etc/sextant/api-tokens").expect("read"),
        token_text
    );
    assert_eq!(
        fs::read_to_string("/etc/sextant/sextant.conf").expect("read"),
        edited
    );

    // Remove: the binary goes, configuration, token and state stay.
    run("dpkg", &["-r", "sextant"]);
    assert!(!Path::new("/usr/bin/sextant").exists());
    assert!(Path::new("/etc/sextant/sextant.conf").is_file());
    assert!(Path::new("/etc/sextant/api-tokens").is_file());
    assert!(Path::new("/var/lib/sextant").is_dir());
    assert!(dpkg_status().is_some_and(|s| s.contains("config-files")));

    // Purge: everything of the package is gone; the system user stays
    // (Debian's practice: a uid that owned files is not handed out again).
    run("dpkg", &["-P", "sextant"]);
    assert_eq!(dpkg_status(), None);
    for gone in [
        "/etc/sextant",
        "/var/lib/sextant",
        "/usr/share/man/man1/sextant.1.gz",
    ] {
        assert!(
            !Path::new(gone).exists(),
            "{gone} is still there after purge"
        );
    }
    run("getent", &["passwd", "sextant"]);
}
