//! The shipped examples parse, and the two syntaxes build the same model.

use std::path::{Path, PathBuf};

use sextant_core::{DomainId, SiteId, ZoneId};

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

#[test]
fn every_example_parses() {
    let mut seen = 0;
    let entries = std::fs::read_dir(examples_dir()).expect("examples/ exists");
    for entry in entries {
        let path = entry.expect("readable entry").path();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if ext != "conf" && ext != "toml" {
            continue;
        }
        if let Err(e) = sextant_config::load_file(&path) {
            panic!("{} does not parse:\n{e}", path.display());
        }
        seen += 1;
    }
    assert!(
        seen >= 2,
        "expected at least the two examples, found {seen}"
    );
}

/// What a warning says after its `FILE:LINE:` and the setting's name (which
/// differ between the syntaxes): why the setting has no effect.
fn why(warning: &str) -> &str {
    warning
        .split_once(" is accepted ")
        .map(|(_, why)| why)
        .unwrap_or(warning)
}

#[test]
fn conf_and_toml_examples_are_equal() {
    let mut conf =
        sextant_config::load_file(&examples_dir().join("sextant.conf")).expect("conf parses");
    let mut toml =
        sextant_config::load_file(&examples_dir().join("sextant.toml")).expect("toml parses");
    // Warnings name the file and its lines: equal models but for them, and
    // the same warnings but for where and how the setting is spelt.
    let conf_warnings = std::mem::take(&mut conf.warnings);
    let toml_warnings = std::mem::take(&mut toml.warnings);
    assert_eq!(conf, toml);
    let mut a: Vec<&str> = conf_warnings.iter().map(|w| why(w)).collect();
    let mut b: Vec<&str> = toml_warnings.iter().map(|w| why(w)).collect();
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b, "{conf_warnings:#?}\n{toml_warnings:#?}");
}

/// The examples use settings that are accepted but not implemented yet; they
/// load, and each use is warned about at its line.
#[test]
fn example_warnings() {
    let m = sextant_config::load_file(&examples_dir().join("sextant.conf")).expect("parses");
    let got: Vec<(usize, &str)> = m
        .warnings
        .iter()
        .map(|w| {
            let (place, text) = w.split_once(": ").expect("FILE:LINE: text");
            let line = place
                .rsplit(':')
                .next()
                .expect("line")
                .parse()
                .expect("number");
            assert!(place.ends_with(&format!("sextant.conf:{line}")), "{w}");
            (line, text.split(" is accepted").next().unwrap_or(text))
        })
        .collect();
    assert_eq!(got, [(28, "-maxClient"), (29, "-maxClient")]);
    let m = sextant_config::load_file(&examples_dir().join("sextant.toml")).expect("parses");
    let names: Vec<&str> = m
        .warnings
        .iter()
        .map(|w| {
            let text = w.split_once(": ").map(|(_, t)| t).unwrap_or(w);
            text.split(" is accepted").next().unwrap_or(text)
        })
        .collect();
    assert_eq!(
        names,
        ["[[service]] max_clients", "[[service]] max_clients"]
    );
}

#[test]
fn example_content_is_what_the_comments_say() {
    use sextant_core::{LbMethod, MonitorKind, SiteKind};
    use std::time::Duration;

    let m = sextant_config::load_file(&examples_dir().join("sextant.conf")).expect("parses");
    assert_eq!(m.dns_listen, vec!["127.0.0.1:5353".parse().expect("addr")]);
    assert_eq!(m.sites.len(), 2);
    assert_eq!(m.local_site, Some(SiteId::new(0)));
    assert_eq!(m.sites[SiteId::new(0)].kind, SiteKind::Local);
    assert_eq!(m.sites[SiteId::new(1)].kind, SiteKind::Remote);
    assert_eq!(m.services.len(), 4);
    assert!(m.services.iter().all(|s| s.monitors.len() == 1));
    let www = &m.vservers[m.vserver_by_name("gv-www").expect("gv-www")];
    assert_eq!(www.method, LbMethod::Rtt);
    assert_eq!(www.backup_method, Some(LbMethod::RoundRobin));
    assert_eq!(www.bindings.len(), 2);
    assert_eq!(www.bindings[0].weight, 2);
    let app = &m.vservers[m.vserver_by_name("gv-app").expect("gv-app")];
    let p = app.persistence.expect("persistence");
    assert_eq!(p.timeout, Duration::from_secs(600));
    assert_eq!(p.v4_mask, 24);
    assert_eq!(app.backup_vserver, m.vserver_by_name("gv-app-dr"));
    assert_eq!(m.domains.len(), 2);
    assert_eq!(m.domains[DomainId::new(0)].ttl, 30);
    assert!(m.domains.iter().all(|d| d.backup_ip.is_some()));
    assert_eq!(m.zones.len(), 1);
    assert_eq!(
        m.zones[ZoneId::new(0)].ns,
        ["ns1.example.com", "ns2.example.com"]
    );
    let tcp = &m.monitors[m.monitor_by_name("app-tcp").expect("app-tcp")];
    assert_eq!(tcp.response_timeout, Duration::from_millis(800));
    assert_eq!(tcp.kind, MonitorKind::Tcp);
    assert_eq!(m.params.ldns_v4_mask, 24);
    let at = |a: &str| {
        m.locations
            .lookup(a.parse().expect("addr"))
            .map(|p| p.location.to_string())
    };
    assert_eq!(at("10.2.3.4").as_deref(), Some("asia.sg.*.singapore"));
    assert_eq!(at("2001:db8:100::1").as_deref(), Some("europe.nl"));
    assert_eq!(
        at("203.0.113.31").as_deref(),
        Some("europe.nl.nh.amsterdam")
    );
}

/// The demo configuration of the `sextant` binary is written in this syntax
/// too; keep it loadable (skipped if the file moves).
#[test]
fn demo_conf_parses_if_present() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sextant/src/demo.conf");
    if path.exists()
        && let Err(e) = sextant_config::load_file(&path)
    {
        panic!("{e}");
    }
}

#[test]
fn file_errors() {
    let missing = sextant_config::load_file(Path::new("/nonexistent/sextant.conf")).unwrap_err();
    assert_eq!(missing.errors.len(), 1);
    assert_eq!(missing.errors[0].line, 0);
    assert_eq!(
        missing.to_string(),
        "/nonexistent/sextant.conf:0: cannot read the configuration file: no such file"
    );

    let other = sextant_config::load_file(Path::new("/nonexistent/sextant.yaml")).unwrap_err();
    assert_eq!(other.errors[0].line, 0);
    let msg = other.to_string();
    assert!(msg.contains(".conf") && msg.contains(".toml"), "{msg}");
}
