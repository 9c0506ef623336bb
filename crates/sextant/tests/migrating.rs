//! docs/migrating.md's walkthrough, run: a realistic saved appliance file
//! (tests/appliance-configs/walkthrough/ns.conf: LB vservers, GSLB, ADNS,
//! a DNS policy, monitors, disabled objects) through `sextant import`, the
//! report, `sextant check`, the first start in a network namespace of the
//! test's own with real backends behind the LB vservers, a backend's
//! failure, and a first change made with `sextant cli`'s verbs and `save ns
//! config`.
//!
//! Each step's command and real output is a transcript, compared with the
//! golden files of that directory (`*.txt`), and docs/migrating.md must
//! hold every golden file verbatim in a code block: the guide shows what
//! the binary does. Timestamps and response times are the only things
//! compared loosely (`sextant_test_support::docs::normalize`, which
//! tests/docs_commands.rs uses for every other page).
//!
//! `UPDATE_GOLDEN=1 cargo nextest run -p sextant --test migrating`
//! rewrites the golden files after a deliberate change; then paste them
//! into docs/migrating.md (the test names the block that differs).

use std::fs;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use sextant_test_support::docs::normalize;
use sextant_test_support::prelude::*;
use sextant_test_support::scratch::tempdir;

const BIN: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

/// The site's own address (its ADNS service and GSLB site IP) and the
/// backends behind its LB vservers, added to the namespace's loopback. The
/// VIPs themselves (10.70.1.x) are not: nothing listens there, as nothing
/// needs to for the imported monitors.
const ADDRESSES: &[&str] = &[
    "10.70.0.11",
    "10.70.2.11",
    "10.70.2.12",
    "10.70.2.21",
    "10.70.2.31",
];

const TOKENS: &str = "--token-file ams.api-tokens";

fn walkthrough() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/appliance-configs/walkthrough")
}

fn guide() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/migrating.md")
}

fn v4(s: &str) -> Ipv4Addr {
    s.parse().expect("IPv4 address")
}

fn at(ip: &str, port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(v4(ip)), port)
}

/// A code block of the guide: commands as the operator types them, each
/// followed by its real output.
struct Transcript(String, String);

impl Transcript {
    /// A transcript of commands run in `dir`: its path is left out of
    /// their output, as the operator's own directory would read.
    fn new(dir: &Path) -> Transcript {
        Transcript(String::new(), format!("{}/", dir.display()))
    }

    fn step(&mut self, shown: &str, output: &str) {
        let output = output.replace(&self.1, "");
        self.0 += &format!("$ {shown}\n{output}");
        if !output.is_empty() && !output.ends_with('\n') {
            self.0.push('\n');
        }
    }

    /// What happens between two commands, as a comment line.
    fn note(&mut self, what: &str) {
        self.0 += &format!("# {what}\n");
    }

    /// Compares with the golden file `name` (or writes it under
    /// UPDATE_GOLDEN=1), then checks that the guide holds it verbatim.
    fn golden(&self, name: &str) {
        let path = walkthrough().join(name);
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            // The guide is pasted from the files after this run.
            fs::write(&path, &self.0).expect("write golden file");
            return;
        } else {
            let expected = fs::read_to_string(&path).unwrap_or_else(|e| {
                panic!("{}: {e} (create it with UPDATE_GOLDEN=1)", path.display())
            });
            let (e, a) = (normalize(&expected), normalize(&self.0));
            if e != a {
                let diff = e
                    .lines()
                    .zip(a.lines())
                    .enumerate()
                    .find(|(_, (e, a))| e != a)
                    .map(|(i, (e, a))| format!("first difference at line {}:\n- {e}\n+ {a}", i + 1))
                    .unwrap_or_else(|| "one is a prefix of the other".to_string());
                panic!(
                    "{} differs from this run ({diff}); rerun with UPDATE_GOLDEN=1 if the change is meant, and paste it into docs/migrating.md\n--- actual ---\n{}",
                    path.display(),
                    self.0
                );
            }
        }
        let doc = fs::read_to_string(guide()).expect("read docs/migrating.md");
        let golden = fs::read_to_string(&path).expect("read golden file");
        assert!(
            normalize(&doc).contains(&format!("```\n{}```\n", normalize(&golden))),
            "docs/migrating.md does not show {} as it is (a code block holding exactly that file)",
            path.display()
        );
    }
}

/// The walkthrough's working directory: a copy of the saved file, where
/// every command runs, so the transcripts name files as the operator does.
struct Desk {
    dir: PathBuf,
    ns: Option<std::sync::Arc<Netns>>,
}

impl Desk {
    /// Runs `sextant ARGS` (split at blanks, as the guide shows them) in
    /// the working directory, inside the namespace once there is one.
    fn sextant(&self, shown: &str) -> Ran {
        let args: Vec<&str> = shown
            .strip_prefix("sextant ")
            .expect("a sextant command")
            .split(' ')
            .collect();
        let mut cmd = BIN.command_in(self.ns.as_deref());
        cmd.current_dir(&self.dir).args(&args);
        run(cmd)
    }

    /// `sextant cli` with one command as one argument (as the guide
    /// quotes it), with the token file when `write` says so.
    fn cli(&self, command: &str, write: bool) -> (String, Ran) {
        let mut cmd = BIN.command_in(self.ns.as_deref());
        cmd.current_dir(&self.dir).arg("cli");
        let mut shown = "sextant cli".to_string();
        if write {
            cmd.args(["--token-file", "ams.api-tokens"]);
            shown += &format!(" {TOKENS}");
        }
        cmd.arg(command);
        shown += &format!(" {command}");
        (shown, run(cmd))
    }

    /// `dig @10.70.0.11 NAME TYPE +short`, from the namespace.
    fn dig(&self, name: &str, rtype: &str) -> (String, String) {
        let ns = self.ns.as_deref().expect("serving in a namespace");
        let out = sextant_test_support::dns::dig_output(
            Some(ns),
            at("10.70.0.11", 53),
            &[name, rtype, "+short"],
        );
        assert!(out.status.success(), "dig failed: {}", output_text(&out));
        (
            format!("dig @10.70.0.11 {name} {rtype} +short"),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }
}

/// What a command printed, stdout and stderr in the order a terminal
/// shows them (one pipe for both), and how it exited.
struct Ran {
    code: Option<i32>,
    text: String,
}

fn run(mut cmd: Command) -> Ran {
    use std::io::Read as _;
    let (mut reader, writer) = std::io::pipe().expect("a pipe");
    cmd.stdin(Stdio::null())
        .stdout(writer.try_clone().expect("dup the pipe"))
        .stderr(writer);
    let mut child = cmd.spawn().expect("spawn");
    // The command's copies of the pipe's writing end go before reading.
    drop(cmd);
    let mut text = String::new();
    reader.read_to_string(&mut text).expect("read the output");
    let status = child.wait().expect("wait");
    Ran {
        code: status.code(),
        text,
    }
}

fn ok(r: &Ran) -> String {
    assert_eq!(r.code, Some(0), "{}", r.text);
    r.text.clone()
}

#[test]
fn the_migration_guide_walks_a_realistic_saved_file() {
    if !have_program("dig") {
        sextant_test_support::ci::cannot_run(
            "this test needs dig (scripts/setup.sh installs bind9-dnsutils)",
        );
        return;
    }
    let dir = tempdir("migrating");
    fs::copy(walkthrough().join("ns.conf"), dir.join("ns.conf")).expect("copy ns.conf");
    let mut desk = Desk {
        dir: dir.clone(),
        ns: None,
    };

    // 1. Import, and the report.
    let mut t = Transcript::new(&dir);
    let shown = "sextant import ns.conf -o ams.conf";
    t.step(shown, &ok(&desk.sextant(shown)));
    t.golden("report.txt");
    // What the written file says of one GSLB service at an LB VIP.
    let mut t = Transcript::new(&dir);
    let mut grep = Command::new("grep");
    grep.current_dir(&dir).args(["gs_www_ams", "ams.conf"]);
    t.step("grep gs_www_ams ams.conf", &ok(&run(grep)));
    t.golden("written.txt");
    let imported = fs::read_to_string(dir.join("ams.conf")).expect("the written file");
    for written in [
        "add gslb site site_ams 10.70.0.11 -publicIP 10.70.0.11 -siteType LOCAL",
        "-state DISABLED",
        "disable gslb vserver gv_legacy",
        "bind dns global pol_no_any 100",
        "add service svc_adns srv_adns ADNS 53",
    ] {
        assert!(imported.contains(written), "{written:?}:\n{imported}");
    }

    // 2. The secrets, then check.
    let config = imported
        .replace("SEXTANT-REENTER-rpcNode-10.70.0.11", "YOUR-REAL-SECRET")
        .replace("SEXTANT-REENTER-rpcNode-10.80.0.11", "YOUR-REAL-SECRET");
    fs::write(dir.join("ams.conf"), &config).expect("enter the secrets");
    let mut t = Transcript::new(&dir);
    t.step(
        "sed -i 's/SEXTANT-REENTER-rpcNode-[0-9.]*/YOUR-REAL-SECRET/' ams.conf",
        "",
    );
    let shown = "sextant check ams.conf";
    t.step(shown, &ok(&desk.sextant(shown)));
    t.golden("check.txt");

    // 3. The first start, in a namespace holding the file's addresses and
    // live backends behind the LB vservers.
    let Some(ns) = Netns::create("migrating") else {
        return;
    };
    for a in ADDRESSES {
        ns.exec_ok(&["ip", "addr", "add", &format!("{a}/32"), "dev", "lo"]);
    }
    desk.ns = Some(ns.clone());
    let (www1, _www2, api1, _app1) = ns.run(|| {
        (
            Backend::http_at(at("10.70.2.11", 8080)),
            Backend::http_at(at("10.70.2.12", 8080)),
            Backend::tcp_at(at("10.70.2.21", 8443)),
            Backend::tcp_at(at("10.70.2.31", 8080)),
        )
    });
    let site = SiteServer::start_as_written_at(
        BIN,
        &dir,
        "ams",
        v4("10.70.0.11"),
        at("10.70.0.11", 53),
        at("127.0.0.1", 8053),
        &config,
        Some(ns.clone()),
    );
    let state = |name: &str| site.try_service(name).ok().map(|s| s.state);
    // Every local service checked: UP by its monitors' probes of the
    // backends, not by the start's benefit of the doubt.
    eventually(
        Duration::from_secs(30),
        "every local service probed UP",
        || {
            ["gs_www_ams", "gs_api_ams", "gs_app_ams"].iter().all(|s| {
                site.try_service(s).is_ok_and(|s| {
                    s.state == State::Up
                        && !s.reason.contains("waiting")
                        && !s.reason.contains("no result yet")
                })
            })
        },
    );
    let log = site.log();
    // The start's lines the guide explains, the first of each kind, in
    // this order (metric exchange's first attempt races the API's start).
    let started: String = [
        "no maintenance state yet",
        "REST API listening",
        "sextant started",
        "cannot connect for MEP",
    ]
    .into_iter()
    .filter_map(|kind| log.lines().find(|l| l.contains(kind)))
    .map(|l| format!("{l}\n"))
    .collect();
    assert_eq!(started.lines().count(), 4, "{log}");

    let mut t = Transcript::new(&dir);
    // SiteServer also passes `--api-listen 127.0.0.1:8053` (serve's
    // default) and `--udp-workers 1` (the test's share of the cores).
    t.step(
        "sextant serve --config ams.conf --api-token-file ams.api-tokens",
        &started,
    );
    let (shown, o) = desk.cli("show gslb service", false);
    t.step(&shown, &ok(&o));
    let (status, maintenance) = site.get("/v1/maintenance").expect("GET /v1/maintenance");
    assert_eq!(status, 200, "{maintenance}");
    // The reason names the line of the file that runs, ams.conf.
    let line_of = |start: &str| {
        config
            .lines()
            .position(|l| l.starts_with(start))
            .map(|i| i + 1)
            .unwrap_or_else(|| panic!("no {start:?} line:\n{config}"))
    };
    for (name, line) in [
        ("gs_app_ams", line_of("add gslb service gs_app_ams ")),
        ("gv_legacy", line_of("disable gslb vserver gv_legacy")),
    ] {
        assert!(
            maintenance.contains(&format!(
                "\"name\":\"{name}\",\"state\":\"disabled\",\"reason\":\"disabled in the configuration (line {line})\""
            )),
            "{maintenance}"
        );
    }
    t.step("curl -s http://127.0.0.1:8053/v1/maintenance", &maintenance);
    for (name, rtype) in [
        ("www.gslb.example.com", "A"),
        ("api.gslb.example.com", "A"),
        ("app.gslb.example.com", "A"),
        ("old.gslb.example.com", "A"),
        ("gslb.example.com", "NS"),
    ] {
        let (shown, out) = desk.dig(name, rtype);
        t.step(&shown, &out);
    }
    let (_, app) = desk.dig("app.gslb.example.com", "A");
    assert!(app.is_empty(), "the disabled gs_app_ams is answered: {app}");
    let (_, old) = desk.dig("old.gslb.example.com", "A");
    assert!(old.is_empty(), "the disabled gv_legacy is answered: {old}");
    // pol_no_any drops ANY queries: no answer at all.
    let any = site.in_ns(|| {
        site.dns.try_udp_from(
            None,
            &build_query("www.gslb.example.com", RecordType::ANY, None),
        )
    });
    assert!(any.is_err(), "an ANY query was answered: {any:?}");
    t.golden("first-start.txt");

    // 4. A backend fails: the imported monitors see it, as the appliance's
    // LB vserver would.
    let mut t = Transcript::new(&dir);
    let dead = www1.kill();
    eventually(
        Duration::from_secs(20),
        &format!("gs_www_ams says {dead} is DOWN"),
        || {
            site.try_service("gs_www_ams")
                .map(|s| s.reason.contains("1 of 2 monitors UP"))
                .unwrap_or(false)
        },
    );
    t.note(&format!("the web server at {dead} stops"));
    let (shown, o) = desk.cli("show gslb service gs_www_ams", false);
    t.step(&shown, &ok(&o));
    api1.kill();
    eventually(Duration::from_secs(20), "gs_api_ams DOWN", || {
        state("gs_api_ams") == Some(State::Down)
    });
    t.note("the API server at 10.70.2.21:8443 stops");
    let (shown, o) = desk.cli("show gslb service gs_api_ams", false);
    t.step(&shown, &ok(&o));
    let (shown, out) = desk.dig("api.gslb.example.com", "A");
    assert!(out.is_empty(), "a DOWN gs_api_ams is answered: {out}");
    t.step(&shown, &out);
    let _api1 = ns.run(|| Backend::tcp_at(at("10.70.2.21", 8443)));
    eventually(Duration::from_secs(20), "gs_api_ams UP again", || {
        state("gs_api_ams") == Some(State::Up)
    });
    t.note("the API server is back");
    let (shown, out) = desk.dig("api.gslb.example.com", "A");
    assert_eq!(out, "10.70.1.21\n");
    t.step(&shown, &out);
    t.golden("backend-down.txt");

    // 5. The first change, with the CLI's verbs, then saved.
    let mut t = Transcript::new(&dir);
    let (shown, o) = desk.cli("enable gslb service gs_app_ams", true);
    assert_eq!(ok(&o), "service gs_app_ams: enabled\n", "{shown}");
    t.step(&shown, &o.text);
    for command in [
        "bind gslb vserver gv_app -domainName portal.gslb.example.com -TTL 5",
        "rm gslb vserver gv_legacy",
    ] {
        let (shown, o) = desk.cli(command, true);
        assert_eq!(ok(&o), "Done\n", "{shown}");
        t.step(&shown, &o.text);
    }
    for name in ["app.gslb.example.com", "portal.gslb.example.com"] {
        eventually(Duration::from_secs(10), &format!("{name} answered"), || {
            desk.dig(name, "A").1 == "10.70.1.22\n"
        });
        let (shown, out) = desk.dig(name, "A");
        t.step(&shown, &out);
    }
    let (shown, o) = desk.cli("show ns runningConfig", true);
    let first = ok(&o).lines().next().unwrap_or_default().to_string();
    assert!(
        first.starts_with("# unsaved changes: 2 command(s)"),
        "{first}"
    );
    t.step(&format!("{shown} | head -1"), &format!("{first}\n"));
    let (shown, o) = desk.cli("save ns config", true);
    assert_eq!(ok(&o), "Done\n");
    t.step(&shown, &o.text);
    let mut cmd = Command::new("diff");
    cmd.current_dir(&dir).args(["ams.conf.prev", "ams.conf"]);
    let diff = run(cmd);
    assert_eq!(diff.code, Some(1), "{}", diff.text);
    t.step("diff ams.conf.prev ams.conf", &diff.text);
    let (shown, o) = desk.cli("show ns runningConfig", true);
    let first = ok(&o).lines().next().unwrap_or_default().to_string();
    assert!(!first.starts_with("# unsaved"), "{first}");
    t.step(&format!("{shown} | head -1"), &format!("{first}\n"));
    t.golden("first-change.txt");
    drop(site);
}
