//! `sextant cli`: the appliance's verbs against a running server, as an
//! operator types them (one command from the shell, or lines at the
//! prompt), with tables, `--json`, typos and unknown names.

use std::fs;
use std::io::Write as _;
use std::process::{Command, Output, Stdio};

use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

/// Two vservers of the appliance's kind: one with weights and a DOWN
/// service (its port is closed), one with persistence and a backup.
fn config(net: &Net) -> String {
    let mut c = net.conf_preamble();
    let dead = Net::closed_port(net.svc_ip(2));
    c += &format!(
        "add lb monitor mon_tcp TCP -interval 1 SEC -resptimeout 500 MSEC -retries 1\n\
         add gslb service web-1 {s0} HTTP 80 -siteName site1\n\
         add gslb service web-2 {s1} HTTP 80 -siteName site1\n\
         add gslb service web-dead {s2} TCP {dead} -siteName site1\n\
         bind gslb service web-dead -monitorName mon_tcp\n\
         add gslb vserver vs_backup HTTP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs_backup -serviceName web-2\n\
         add gslb vserver vs_app HTTP -lbMethod ROUNDROBIN -backupLBMethod ROUNDROBIN -persistenceType SOURCEIP -timeout 2 -backupVServer vs_backup\n\
         bind gslb vserver vs_app -serviceName web-1 -weight 20\n\
         bind gslb vserver vs_app -serviceName web-dead -weight 80\n\
         bind gslb vserver vs_app -domainName app.example.com -TTL 30\n",
        s0 = net.svc_ip(0),
        s1 = net.svc_ip(1),
        s2 = net.svc_ip(2),
    );
    c
}

fn cli(net: &Net, args: &[&str]) -> Output {
    let server = format!("http://{}", net.api_addr());
    Command::new(SEXTANT.0)
        .args(["cli", "--server", &server])
        .args(args)
        .output()
        .expect("run sextant cli")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The row of `table` whose first column is `first`, split in columns.
fn row<'a>(table: &'a str, first: &str) -> Vec<&'a str> {
    table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|cols| cols.first() == Some(&first))
        .unwrap_or_else(|| panic!("no row {first} in:\n{table}"))
}

#[test]
fn show_verbs_print_tables_and_json_of_the_running_server() {
    let net = Net::new("appliance_cli_show");
    let conf = config(&net);
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &conf);
    s.wait_state("web-dead", State::Down);

    let o = cli(&net, &["show", "gslb", "vserver"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    assert_eq!(
        row(&t, "vs_app"),
        [
            "vs_app",
            "HTTP",
            "UP",
            "ROUNDROBIN",
            "ROUNDROBIN",
            "1/2",
            "app.example.com"
        ],
        "{t}"
    );
    assert_eq!(
        row(&t, "vs_backup")[..6],
        ["vs_backup", "HTTP", "UP", "ROUNDROBIN", "-", "1/1"],
        "{t}"
    );

    // One vserver, by a shortened verb: its bindings with weights and
    // states, persistence and backup.
    let o = cli(&net, &["sh", "gslb", "vs", "vs_app"]);
    let t = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(t.starts_with("vs_app - HTTP\nState: UP\n"), "{t}");
    assert!(t.contains("Persistence: SOURCEIP, timeout 120 s"), "{t}");
    assert!(t.contains("Backup vserver: vs_backup"), "{t}");
    let addr = format!("{}:80", net.svc_ip(0));
    assert_eq!(
        row(&t, "web-1"),
        ["web-1", "site1", addr.as_str(), "20", "UP"],
        "{t}"
    );
    assert_eq!(row(&t, "web-dead")[3..], ["80", "DOWN"], "{t}");

    let o = cli(&net, &["show", "gslb", "service", "web-dead"]);
    let t = stdout(&o);
    assert!(t.contains("State: DOWN since "), "{t}");
    assert!(t.contains("mon_tcp"), "{t}");

    let t = stdout(&cli(&net, &["show", "gslb", "domain"]));
    assert_eq!(
        row(&t, "app.example.com"),
        ["app.example.com", "vs_app", "30", "-"],
        "{t}"
    );
    let t = stdout(&cli(&net, &["show", "gslb", "site"]));
    assert_eq!(
        row(&t, "site1")[..4],
        [
            "site1",
            net.server_ip().to_string().as_str(),
            "local",
            "flat"
        ],
        "{t}"
    );

    // --json is the API's own JSON, for scripts.
    let o = cli(&net, &["--json", "show", "gslb", "vserver"]);
    let v: Vec<sextant_api::VServer> = serde_json::from_slice(&o.stdout).expect("JSON");
    let app = v.iter().find(|v| v.name == "vs_app").expect("vs_app");
    assert_eq!(app.services.len(), 2);
    assert_eq!(app.backup_vserver.as_deref(), Some("vs_backup"));
    assert_eq!(app.persistence_timeout_seconds, Some(120));

    // Answers are counted per vserver and per service (`stat`): four
    // queries, each answered by web-1 (web-dead is DOWN).
    let dns = sextant_test_support::dns::Dns::new(net.dns_addr());
    for _ in 0..4 {
        let q = sextant_test_support::dns::build_query("app.example.com", RecordType::A, None);
        let m = dns.udp_from_ip(net.client_ip(1).into(), &q);
        assert_eq!(sextant_test_support::dns::a_records(&m), [net.svc_ip(0)]);
    }
    let o = cli(&net, &["stat", "gslb", "vserver", "vs_app"]);
    let t = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(t.starts_with("vs_app: 4 hits\n"), "{t}");
    assert_eq!(row(&t, "web-1"), ["web-1", "4"], "{t}");
    assert_eq!(row(&t, "web-dead"), ["web-dead", "0"], "{t}");
    let t = stdout(&cli(&net, &["stat", "gslb", "service", "web-1"]));
    assert_eq!(t, "web-1 (site site1): 4 answers\n");
    let o = cli(&net, &["--json", "stat", "gslb", "service", "web-1"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["answers"], 4, "{v}");

    // The configuration in force, as its file says it: its text may hold
    // secrets, so it needs the token even on loopback.
    let o = cli(&net, &["show", "ns", "runningConfig"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stderr(&o).contains("--token-file"), "{}", stderr(&o));
    let dir = net.scratch();
    let token_file = dir.0.join("cli-token");
    sextant_test_support::process::write_token_file(&token_file);
    let o = cli(
        &net,
        &[
            "--token-file",
            &token_file.display().to_string(),
            "show",
            "ns",
            "runningConfig",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), conf);

    // explain through the CLI, with the live state.
    let o = cli(
        &net,
        &["explain", "app.example.com", "-client", "192.0.2.7"],
    );
    let t = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(t.contains(&format!("answer:  {}", net.svc_ip(0))), "{t}");
}

#[test]
fn typos_and_unknown_names_say_what_was_meant() {
    let net = Net::new("appliance_cli_errors");
    let _s = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net));

    // Not a command: exit 2, the nearest command.
    let o = cli(&net, &["shwo", "gslb", "vserver"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o).trim(),
        "error: unknown command `shwo`; did you mean `show gslb vserver`? (`help` lists every command)"
    );
    let o = cli(&net, &["stat", "gslb", "vserver"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("needs a vserver name: stat gslb vserver NAME"),
        "{}",
        stderr(&o)
    );

    // A command about something that is not there: exit 1, the verb, the
    // object and the nearest name.
    let o = cli(&net, &["show", "gslb", "vserver", "vs_ap"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o).trim(),
        "error: show gslb vserver vs_ap: no vserver named \"vs_ap\"; did you mean \"vs_app\"?"
    );

    // No server there: says where it looked.
    let closed = Net::closed_port(net.server_ip());
    let o = Command::new(SEXTANT.0)
        .args([
            "cli",
            "--server",
            &format!("{}:{closed}", net.server_ip()),
            "show",
            "gslb",
            "site",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("cannot reach the server"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn the_prompt_runs_line_after_line_and_keeps_going_after_an_error() {
    let net = Net::new("appliance_cli_prompt");
    let _s = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net));
    let home = net.scratch();
    let mut child = Command::new(SEXTANT.0)
        .args(["cli", "--server", &net.api_addr().to_string()])
        .env("HOME", &home.0)
        .env_remove("XDG_STATE_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"show gslb domain\nfrobnicate\nsh gslb vs vs_backup\nquit\nshow gslb site\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    assert!(t.contains("app.example.com  vs_app"), "{t}");
    assert!(t.contains("error: unknown command `frobnicate`"), "{t}");
    assert!(t.contains("vs_backup - HTTP"), "{t}");
    // `quit` ended it: the line after it never ran.
    assert!(!t.contains("ROLE"), "{t}");
    // The lines are in the history file for the next session.
    let history = std::fs::read_to_string(home.0.join(".local/state/sextant/cli_history"))
        .unwrap_or_default();
    assert!(history.contains("sh gslb vs vs_backup"), "{history}");
}

#[test]
fn enable_and_disable_need_the_token_and_change_the_answers() {
    let net = Net::new("appliance_cli_admin");
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net));
    s.wait_state("web-dead", State::Down);
    let dir = net.scratch();
    let token_file = dir.0.join("cli-token");
    sextant_test_support::process::write_token_file(&token_file);
    let token_arg = token_file.display().to_string();

    // Without the token: refused, says how to give it, nothing changes.
    let o = cli(&net, &["disable", "gslb", "service", "web-1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(e.starts_with("error: disable gslb service web-1: "), "{e}");
    assert!(e.contains("--token-file"), "{e}");
    let t = stdout(&cli(&net, &["show", "gslb", "vserver"]));
    assert_eq!(row(&t, "vs_app")[5], "1/2", "{t}");

    // With it: web-1 leaves the answers; vs_app's backup answers.
    let o = cli(
        &net,
        &[
            "--token-file",
            &token_arg,
            "disable",
            "gslb",
            "service",
            "web-1",
            "-reason",
            "kernel update",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "service web-1: disabled (kernel update)\n");
    let t = stdout(&cli(
        &net,
        &["explain", "app.example.com", "-client", "192.0.2.7"],
    ));
    assert!(t.contains(&format!("answer:  {}", net.svc_ip(1))), "{t}");
    assert!(t.contains("disabled by operator at"), "{t}");
    assert!(t.contains("kernel update"), "{t}");
    let t = stdout(&cli(&net, &["show", "gslb", "service", "web-1"]));
    assert!(t.contains("Admin: DISABLED since "), "{t}");
    assert!(t.contains(": kernel update (answers leave it out)"), "{t}");
    let t = stdout(&cli(&net, &["show", "gslb", "service"]));
    assert_eq!(row(&t, "web-1")[3..5], ["UP", "DISABLED"], "{t}");

    // The mark is in the metrics, with what DNS may answer.
    let (_, scrape) = s.api("/metrics");
    let scrape = scrape.as_str().unwrap_or_default().to_string();
    assert!(
        scrape.contains(r#"sextant_admin_state{kind="service",name="web-1",state="disabled"} 1"#),
        "{scrape}"
    );
    assert!(
        scrape.contains(
            r#"sextant_service_answerable{service="web-1",site="site1",vserver="vs_app"} 0"#
        ),
        "{scrape}"
    );
    assert!(
        scrape.contains(r#"sextant_service_up{service="web-1",site="site1",vserver="vs_app"} 1"#),
        "{scrape}"
    );

    // A drain of a vserver is not a command; of a service it is.
    let o = cli(
        &net,
        &[
            "--token-file",
            &token_arg,
            "drain",
            "gslb",
            "vserver",
            "vs_app",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = cli(
        &net,
        &[
            "--token-file",
            &token_arg,
            "enable",
            "gslb",
            "service",
            "web-1",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "service web-1: enabled\n");
    let t = stdout(&cli(
        &net,
        &["explain", "app.example.com", "-client", "192.0.2.7"],
    ));
    assert!(t.contains(&format!("answer:  {}", net.svc_ip(0))), "{t}");

    // The token also comes from the environment.
    let o = std::process::Command::new(SEXTANT.0)
        .args([
            "cli",
            "--server",
            &net.api_addr().to_string(),
            "disable",
            "gslb",
            "site",
            "site1",
        ])
        .env(
            "SEXTANT_API_TOKEN",
            sextant_test_support::process::TEST_TOKEN,
        )
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "site site1: disabled\n");
}

/// A service nothing checks says so: `/v1/services` gives its
/// `health_source` and `checked`, `show gslb service NAME` a "Checked by"
/// line, the log the configuration's warning at start; `-healthMonitor
/// NO` says it on purpose (no warning, still shown as not checked).
#[test]
fn a_service_nothing_checks_says_so_in_the_api_the_cli_and_the_log() {
    let net = Net::new("appliance_cli_unchecked");
    let text = config(&net) + "set gslb service web-2 -healthMonitor NO\n";
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &text);
    s.wait_state("web-dead", State::Down);
    let (code, all) = s.api("/v1/services");
    assert_eq!(code, 200, "{all}");
    let field = |name: &str| -> (String, bool) {
        let svc = all
            .as_array()
            .and_then(|a| a.iter().find(|v| v["name"] == name))
            .unwrap_or_else(|| panic!("no {name} in {all}"));
        (
            svc["health_source"].as_str().unwrap_or("?").to_string(),
            svc["checked"].as_bool().unwrap_or(true),
        )
    };
    assert_eq!(field("web-1"), ("none".to_string(), false));
    assert_eq!(field("web-2"), ("none_by_choice".to_string(), false));
    assert_eq!(field("web-dead"), ("monitors".to_string(), true));

    let shown = |name: &str| stdout(&cli(&net, &["show", "gslb", "service", name]));
    let t = shown("web-1");
    assert!(
        t.contains(
            "Checked by: nothing - no monitor bound: UP whatever happens to it (bind a monitor)\n"
        ),
        "{t}"
    );
    let t = shown("web-2");
    assert!(
        t.contains("Checked by: nothing, by choice (-healthMonitor NO): UP unless disabled\n"),
        "{t}"
    );
    let t = shown("web-dead");
    assert!(t.contains("Checked by: its monitors\n"), "{t}");
    // The list: a CHECKED column, NOTHING where nothing checks.
    let list = stdout(&cli(&net, &["show", "gslb", "service"]));
    let row = |name: &str| -> Vec<String> {
        list.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in\n{list}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    assert!(
        list.lines().next().is_some_and(|h| h.contains(" CHECKED ")),
        "{list}"
    );
    assert_eq!(row("web-1")[5], "NOTHING", "{list}");
    assert_eq!(row("web-2")[5..7], ["no", "(chosen)"], "{list}");
    assert_eq!(row("web-dead")[5], "monitors", "{list}");

    // The warning at start names web-1 (and not web-2, said on purpose).
    let log = s.log();
    let warned: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("nothing checks it"))
        .collect();
    assert_eq!(warned.len(), 1, "{log}");
    assert!(
        warned[0].contains("service web-1: nothing checks it")
            && warned[0].contains("bind gslb service web-1 -monitorName MONITOR"),
        "{}",
        warned[0]
    );
}

/// The A records a name gets from the server over 8 queries.
fn answers(net: &Net, name: &str) -> std::collections::BTreeSet<std::net::Ipv4Addr> {
    let dns = sextant_test_support::dns::Dns::new(net.dns_addr());
    (0..8u8)
        .flat_map(|i| {
            let q = sextant_test_support::dns::build_query(name, RecordType::A, None);
            let m = dns.udp_from_ip(net.client_ip(i % 4 + 1).into(), &q);
            sextant_test_support::dns::a_records(&m)
        })
        .collect()
}

/// The configuration verbs (`add`, `bind`, `set`, `unbind`, `rm`) change
/// what runs at once, through the path `PUT /v1/config` takes; the file
/// only on `save ns config`; a restart without a save says what it dropped.
#[test]
fn configuration_commands_run_at_once_and_are_saved_by_save_ns_config() {
    use std::os::unix::fs::PermissionsExt;
    let net = Net::new("appliance_cli_edit");
    let conf = config(&net);
    let mut s = Server::start(SEXTANT, &net, Syntax::Conf, &conf);
    let dir = net.scratch();
    let token_file = dir.0.join("cli-token");
    sextant_test_support::process::write_token_file(&token_file);
    let token_arg = token_file.display().to_string();
    let with_token = |args: &[&str]| {
        let mut all = vec!["--token-file", token_arg.as_str()];
        all.extend_from_slice(args);
        cli(&net, &all)
    };
    let generation = s.generation();
    let add = format!(
        "add gslb service web-3 {} HTTP 80 -siteName site1",
        net.svc_ip(3)
    );

    // Without the token: refused as the appliance refuses, nothing changes.
    let o = cli(&net, &[add.as_str()]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stderr(&o).starts_with("ERROR: "), "{}", stderr(&o));
    assert!(stderr(&o).contains("--token-file"), "{}", stderr(&o));
    assert_eq!(s.generation(), generation);

    // The command as one argument (as over ssh), then as words.
    let o = with_token(&[add.as_str()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "Done\n");
    for cmd in [
        "bind gslb vserver vs_backup -serviceName web-3",
        "bind gslb vserver vs_backup -domainName backup.example.com -TTL 5",
    ] {
        let words: Vec<&str> = cmd.split(' ').collect();
        let o = with_token(&words);
        assert!(o.status.success(), "{cmd}: {}", stderr(&o));
        assert_eq!(stdout(&o), "Done\n", "{cmd}");
    }
    assert!(
        answers(&net, "backup.example.com").contains(&net.svc_ip(3)),
        "{:?}",
        answers(&net, "backup.example.com")
    );
    let o = with_token(&["set gslb vserver vs_backup -lbMethod SOURCEIPHASH"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&cli(&net, &["show gslb vserver"]));
    assert_eq!(row(&t, "vs_backup")[3], "SOURCEIPHASH", "{t}");

    // A bad command: the reader's reason after ERROR:, nothing changes.
    let before = s.generation();
    let o = with_token(&["bind gslb vserver vs_backup -serviceName nosuch"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(e.starts_with("ERROR: "), "{e}");
    assert!(e.contains("\"nosuch\" is not defined"), "{e}");
    let o = with_token(&["set gslb vserver nope -lbMethod RTT"]);
    assert_eq!(stderr(&o), "ERROR: No such resource [gslb vserver nope]\n");
    // A monitor bound to a service is not removed: the binding would
    // name nothing.
    let o = with_token(&["rm lb monitor mon_tcp"]);
    let e = stderr(&o);
    assert!(
        e.starts_with("ERROR: `rm lb monitor mon_tcp` would leave: "),
        "{e}"
    );
    assert!(e.contains("\"mon_tcp\" is not defined"), "{e}");
    assert_eq!(s.generation(), before);

    // Unsaved: what runs says so, the file is as it was, the running text
    // is kept beside it (0600).
    let status = s.status();
    assert!(status.config_unsaved);
    assert_eq!(status.config_unsaved_commands, 4);
    assert!(status.config_unsaved_since.is_some());
    let o = with_token(&["show ns runningConfig"]);
    let t = stdout(&o);
    assert!(
        t.starts_with("# unsaved changes: 4 command(s) since "),
        "{t}"
    );
    assert!(t.contains(&format!("{add}\n")), "{t}");
    assert_eq!(fs::read_to_string(&s.config).unwrap(), conf);
    let running = s.dir.join("sextant.conf.running");
    let mode = fs::metadata(&running).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    // unbind, rm: no longer answered.
    let o = with_token(&["unbind gslb vserver vs_backup -serviceName web-3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        answers(&net, "backup.example.com"),
        [net.svc_ip(1)].into_iter().collect()
    );
    let o = with_token(&["rm gslb service web-3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stdout(&cli(&net, &["show gslb service"])).contains("web-3"));

    // save ns config: the file holds what runs (the one atomic writer, the
    // old file kept as .prev), nothing is unsaved.
    let o = with_token(&["save", "ns", "config"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "Done\n");
    let saved = fs::read_to_string(&s.config).unwrap();
    assert!(
        saved.contains("add gslb vserver vs_backup HTTP -lbMethod SOURCEIPHASH\n"),
        "{saved}"
    );
    assert!(
        saved.ends_with("bind gslb vserver vs_backup -domainName backup.example.com -TTL 5\n"),
        "{saved}"
    );
    assert!(!saved.contains("web-3"), "{saved}");
    assert_eq!(
        fs::read_to_string(s.dir.join("sextant.conf.prev")).unwrap(),
        conf
    );
    assert!(!running.exists());
    assert!(!s.status().config_unsaved);

    // One more command, then a restart without a save: the start says what
    // it dropped and keeps it aside; the file runs.
    let add5 = format!(
        "add gslb service web-5 {} HTTP 80 -siteName site1",
        net.svc_ip(5)
    );
    assert!(with_token(&[add5.as_str()]).status.success());
    s.stop();
    let stderr_path = s.dir.join("restart.log");
    let mut again = SEXTANT
        .command()
        .args([
            "serve",
            "--config",
            &s.config.display().to_string(),
            "--dns-listen",
            &net.dns_addr().to_string(),
            "--api-listen",
            &net.api_addr().to_string(),
        ])
        .stderr(fs::File::create(&stderr_path).unwrap())
        .stdout(Stdio::null())
        .spawn()
        .expect("restart sextant");
    let up = sextant_test_support::wait::wait_until(std::time::Duration::from_secs(20), || {
        cli(&net, &["show gslb service"]).status.success()
    });
    let log = fs::read_to_string(&stderr_path).unwrap_or_default();
    again.kill().expect("stop the restarted server");
    let _ = again.wait();
    assert!(up, "{log}");
    assert!(log.contains("never saved"), "{log}");
    assert!(log.contains(&format!("+ {add5}")), "{log}");
    let kept = fs::read_to_string(s.dir.join("sextant.conf.unsaved")).unwrap();
    assert!(kept.contains(&add5), "{kept}");
    assert_eq!(fs::read_to_string(&s.config).unwrap(), saved);
}
