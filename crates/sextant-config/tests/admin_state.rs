//! Administrative state in the configuration, as a saved appliance file
//! writes it: `-state ENABLED|DISABLED` on `add gslb service|vserver`, and
//! `enable|disable gslb service|vserver NAME` lines. The objects the file
//! leaves disabled are in `Model::config_disabled` (the server turns them
//! into maintenance marks, docs/operations.md).

mod support;

use sextant_core::{AdminKind, ConfigDisabled};
use support::{conf, conf_errors};

const BASE: &str = "\
add gslb site s1 10.0.0.1 -siteType LOCAL
add gslb service web-1 10.1.0.1 HTTP 80 -siteName s1 -state DISABLED
add gslb service web-2 10.1.0.2 HTTP 80 -siteName s1 -state ENABLED
add gslb service web-3 10.1.0.3 HTTP 80 -siteName s1
add gslb vserver gv-web HTTP -state ENABLED
add gslb vserver gv-api HTTP
bind gslb vserver gv-web -serviceName web-1
bind gslb vserver gv-web -serviceName web-2
bind gslb vserver gv-api -serviceName web-3
";

fn disabled(kind: AdminKind, name: &str, line: usize) -> ConfigDisabled {
    ConfigDisabled {
        kind,
        name: name.to_string(),
        line,
    }
}

#[test]
fn state_disabled_and_disable_lines_are_the_objects_the_file_disables() {
    let text = format!("{BASE}disable gslb vserver GV-API\ndisable gslb service web-3\n");
    let m = conf(&text);
    assert_eq!(
        m.config_disabled,
        vec![
            disabled(AdminKind::Service, "web-1", 2),
            disabled(AdminKind::VServer, "gv-api", 10),
            disabled(AdminKind::Service, "web-3", 11),
        ]
    );
    assert_eq!(
        m.config_disabled[0].reason(),
        "disabled in the configuration (line 2)"
    );
    // -state ENABLED has no effect and no warning.
    assert!(
        m.warnings.iter().all(|w| !w.contains("-state")),
        "{:?}",
        m.warnings
    );
}

#[test]
fn the_last_line_of_an_object_says_and_a_disable_may_come_first() {
    let text = format!(
        "disable gslb service web-2\n{BASE}enable gslb service web-1\nenable gslb service web-2\ndisable gslb service web-2\n"
    );
    let m = conf(&text);
    assert_eq!(
        m.config_disabled,
        vec![disabled(AdminKind::Service, "web-2", 13)]
    );
    assert!(
        conf(BASE.replace(" -state DISABLED", "").as_str())
            .config_disabled
            .is_empty()
    );
}

#[test]
fn undefined_names_and_bad_values_are_errors_at_their_line() {
    let text = format!(
        "{BASE}disable gslb service web-9\ndisable gslb vserver gv-nope\nenable gslb service\ndisable gslb vserver gv-web extra\n"
    );
    let errors = conf_errors(&text);
    let at = |line: usize| -> Vec<&str> {
        errors
            .iter()
            .filter(|(l, _)| *l == line)
            .map(|(_, m)| m.as_str())
            .collect()
    };
    assert_eq!(
        at(10),
        vec![
            "disable gslb service web-9: service \"web-9\" is not defined (add it with \"add gslb service\")"
        ]
    );
    assert_eq!(
        at(11),
        vec![
            "disable gslb vserver gv-nope: vserver \"gv-nope\" is not defined (add it with \"add gslb vserver\")"
        ]
    );
    assert_eq!(
        at(12),
        vec!["enable gslb service: missing NAME; expected NAME"]
    );
    assert_eq!(
        at(13),
        vec![
            "disable gslb vserver gv-web: unexpected argument \"extra\"; expected NAME and then options"
        ]
    );
    let bad = conf_errors(&BASE.replace("-state DISABLED", "-state OFF"));
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert_eq!(bad[0].0, 2);
    assert!(
        bad[0]
            .1
            .ends_with("-state: expected ENABLED or DISABLED, found \"OFF\""),
        "{bad:?}"
    );
}

#[test]
fn a_site_has_no_enable_or_disable_line() {
    // The appliance has no `disable gslb site` command (only the operator's
    // runtime `sextant cli disable gslb site`): the line is an error.
    let errors = conf_errors(&format!("{BASE}disable gslb site s1\n"));
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].0, 10);
    assert!(
        errors[0]
            .1
            .starts_with("disable gslb site: a site is not disabled in the configuration")
            && errors[0].1.contains("sextant cli disable gslb site NAME"),
        "{errors:?}"
    );
}

/// The native TOML syntax says the same with `disabled = true` in a
/// `[[service]]` or `[[vserver]]`, and `health_monitor = false`: the same
/// model as the appliance lines (but for the lines and the warnings).
#[test]
fn toml_says_the_same_with_disabled_and_health_monitor() {
    let m = support::toml(
        r#"version = 1
[server]
local_site = "s1"
[[site]]
name = "s1"
ip = "10.0.0.1"
[[service]]
name = "web-1"
ip = "10.1.0.1"
port = 80
protocol = "HTTP"
site = "s1"
disabled = true
health_monitor = false
[[vserver]]
name = "gv-web"
protocol = "HTTP"
disabled = true
services = [{ name = "web-1" }]
"#,
    );
    let a = conf(
        "add gslb site s1 10.0.0.1 -siteType LOCAL\n\
         add gslb service web-1 10.1.0.1 HTTP 80 -siteName s1 -state DISABLED -healthMonitor NO\n\
         add gslb vserver gv-web HTTP -state DISABLED\n\
         bind gslb vserver gv-web -serviceName web-1\n",
    );
    let names = |m: &sextant_core::Model| -> Vec<(AdminKind, String)> {
        m.config_disabled
            .iter()
            .map(|d| (d.kind, d.name.clone()))
            .collect()
    };
    assert_eq!(names(&m), names(&a));
    assert_eq!(names(&m).len(), 2);
    assert!(!m.services[sextant_core::ServiceId::new(0)].health_monitor);
    assert!(!a.services[sextant_core::ServiceId::new(0)].health_monitor);
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
}
