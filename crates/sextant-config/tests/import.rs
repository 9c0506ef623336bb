//! The importer's decisions, one at a time, on short saved-file excerpts
//! (the whole saved files are in tests/appliance-configs/, imported end to
//! end by crates/sextant/tests/import.rs).

use sextant_config::import::{ImportOptions, import_appliance};
use sextant_core::ServiceId;

fn import(text: &str) -> sextant_config::import::Import {
    import_appliance(text, "ns.conf", &ImportOptions::default())
}

fn import_as(text: &str, local: &str) -> sextant_config::import::Import {
    let options = ImportOptions {
        local_site: Some(local.to_string()),
    };
    import_appliance(text, "ns.conf", &options)
}

const TWO_SITES: &str = "\
#NS13.1 Build 52.19
set ns config -IPAddress 10.1.0.10 -netmask 255.255.255.0
add ns ip 10.1.0.11 255.255.255.0 -vServer DISABLED
add gslb site dc1 10.1.0.11 -publicIP 10.1.0.11
add gslb site dc2 10.2.0.11 -publicIP 10.2.0.11
";

/// The written command that came from saved line `line`.
fn written(config: &str, line: usize) -> &str {
    let tag = format!("# ns.conf:{line}");
    let mut lines = config.lines();
    while let Some(l) = lines.next() {
        if l == tag {
            return lines.next().unwrap_or("");
        }
    }
    panic!("no command from line {line} in:\n{config}");
}

#[test]
fn the_local_site_is_the_one_whose_ip_the_appliance_owns() {
    let i = import(TWO_SITES);
    assert!(i.report.ok(), "{}", i.report);
    assert_eq!(
        written(&i.config, 4),
        "add gslb site dc1 10.1.0.11 -publicIP 10.1.0.11 -siteType LOCAL"
    );
    assert_eq!(
        written(&i.config, 5),
        "add gslb site dc2 10.2.0.11 -publicIP 10.2.0.11"
    );
    let model = i.result.expect("valid");
    assert!(
        model
            .sites
            .iter()
            .any(|s| s.name == "dc1" && s.kind == sextant_core::SiteKind::Local)
    );
    // The NSIP counts too.
    let i = import(&TWO_SITES.replace("10.1.0.11", "10.1.0.10"));
    assert!(
        written(&i.config, 4).ends_with("-siteType LOCAL"),
        "{}",
        i.config
    );
}

#[test]
fn local_site_overrides_and_unowned_sites_are_reported() {
    let i = import_as(TWO_SITES, "dc2");
    assert_eq!(
        written(&i.config, 4),
        "add gslb site dc1 10.1.0.11 -publicIP 10.1.0.11"
    );
    assert_eq!(
        written(&i.config, 5),
        "add gslb site dc2 10.2.0.11 -publicIP 10.2.0.11 -siteType LOCAL"
    );
    // A positional site type is changed in place.
    let typed = "add gslb site dc1 LOCAL 10.1.0.11\nadd gslb site dc2 REMOTE 10.2.0.11\n";
    let i = import_as(typed, "dc2");
    assert_eq!(written(&i.config, 1), "add gslb site dc1 REMOTE 10.1.0.11");
    assert_eq!(written(&i.config, 2), "add gslb site dc2 LOCAL 10.2.0.11");
    assert!(i.report.ok(), "{}", i.report);
    // No owned site: the report says what to do; the file is still valid.
    let i = import("add gslb site dc1 10.1.0.11\nadd gslb site dc2 10.2.0.11\n");
    assert!(i.report.ok(), "{}", i.report);
    let text = i.report.to_string();
    assert!(text.contains("Needs your action:"), "{text}");
    assert!(
        text.contains("give the site this node runs as with `--local-site NAME`"),
        "{text}"
    );
}

/// Seed 004 and the appliance allow 1–255; a saved file leaves out the
/// default, 255, which the import writes (Sextant's default is 100), and a
/// written 255 stays 255: rewriting it as 254 would tie with a node that
/// says 254 and let the higher address win instead.
#[test]
fn vrrp_priorities_keep_the_appliance_meaning() {
    let i = import(
        "add vrid 10\nadd vrid 11 -priority 255 -preemption ENABLED\nadd vrid 12 -priority 120\n",
    );
    assert_eq!(written(&i.config, 1), "add vrid 10 -priority 255");
    assert_eq!(
        written(&i.config, 2),
        "add vrid 11 -priority 255 -preemption ENABLED"
    );
    assert_eq!(written(&i.config, 3), "add vrid 12 -priority 120");
    let text = i.report.to_string();
    assert!(
        text.contains("line 1: add vrid 10: -priority 255 added: the appliance's default"),
        "{text}"
    );
    assert_eq!(text.matches("-priority 255 added").count(), 1, "{text}");
    let model = i.result.expect("valid");
    let priorities: Vec<u8> = model.vrrp.vrids.iter().map(|v| v.priority).collect();
    assert_eq!(priorities, [255, 255, 120]);
}

#[test]
fn encrypted_secrets_become_placeholders_the_report_names() {
    let i = import(
        "add gslb site dc1 10.1.0.11 -siteType LOCAL\n\
         set ns rpcNode 10.1.0.11 -password 0a1b2c3d4e5f -encrypted -encryptmethod ENCMTHD_3 -kek -suffix 2026_11_01_08_00_00 -srcIP *\n",
    );
    assert_eq!(
        written(&i.config, 2),
        "set ns rpcNode 10.1.0.11 -password SEXTANT-REENTER-rpcNode-10.1.0.11 -srcIP *"
    );
    let text = i.report.to_string();
    assert!(
        text.contains("Secrets to enter again:\n  line 2: set ns rpcNode 10.1.0.11 -password"),
        "{text}"
    );
    let model = i.result.expect("valid");
    assert!(
        model
            .warnings
            .iter()
            .any(|w| w.starts_with("ns.conf:2:") && w.contains("placeholder")),
        "{:?}",
        model.warnings
    );
    // A password in clear is kept as it is.
    let i = import("set ns rpcNode 10.1.0.11 -password s3cret\n");
    assert_eq!(
        written(&i.config, 1),
        "set ns rpcNode 10.1.0.11 -password s3cret"
    );
    assert!(i.report.secrets.is_empty());
}

#[test]
fn root_hints_and_resolver_settings_are_left_out_and_counted() {
    let i = import(
        "add dns nsRec . a.root-servers.net -TTL 3600000\n\
         add dns nsRec . b.root-servers.net -TTL 3600000\n\
         add dns addRec a.root-servers.net 198.41.0.4 -TTL 3600000\n\
         add dns aaaaRec b.root-servers.net 2801:1b8:10::b -TTL 3600000\n\
         set dns parameter -recursion DISABLED\n",
    );
    assert!(i.report.ok(), "{}", i.report);
    let groups: Vec<(String, usize)> = i
        .report
        .left_out
        .iter()
        .map(|g| (g.command.clone(), g.lines.len()))
        .collect();
    assert_eq!(
        groups,
        [
            ("add dns nsRec".to_string(), 2),
            ("add dns addRec".to_string(), 1),
            ("add dns aaaaRec".to_string(), 1),
            ("set dns parameter".to_string(), 1)
        ]
    );
    assert!(!i.config.contains("root-servers"), "{}", i.config);
}

#[test]
fn lines_outside_the_gslb_part_are_grouped_by_command() {
    let i = import(
        "add server web1 10.0.0.1\n\
         add server web2 10.0.0.2\n\
         add server gslb_vip 10.0.0.20\n\
         add lb vserver vs1 HTTP 10.0.0.20 80\n\
         add lb vserver vs2 HTTP 10.0.0.20 81\n\
         add lb monitor unused HTTP\n\
         add lb monitor used HTTP -respCode 200\n\
         add gslb site dc1 10.1.0.11 -siteType LOCAL\n\
         add gslb service gs1 gslb_vip HTTP 80 -siteName dc1\n\
         bind gslb service gs1 -monitorName used\n\
         bind service svc1 -monitorName unused\n",
    );
    assert!(i.report.ok(), "{}", i.report);
    let text = i.report.to_string();
    assert!(
        text.contains(
            "add server         2  load balancing; used by no GSLB or ADNS service: lines 1, 2"
        ),
        "{text}"
    );
    assert!(
        text.contains("add lb vserver     2  load balancing: lines 4, 5"),
        "{text}"
    );
    assert!(
        text.contains("add lb monitor     1  load balancing; bound to no GSLB service: lines 6"),
        "{text}"
    );
    assert!(
        text.contains("bind service       1  load balancing: lines 11"),
        "{text}"
    );
    assert_eq!(written(&i.config, 3), "add server gslb_vip 10.0.0.20");
    let model = i.result.expect("valid");
    assert_eq!(
        model.services[ServiceId::new(0)].ip.to_string(),
        "10.0.0.20"
    );
}

#[test]
fn errors_are_reported_at_the_saved_files_lines() {
    let i = import(
        "add lb vserver vs1 HTTP 10.0.0.20 80\n\
         add gslb site dc1 10.1.0.11 -siteType LOCAL\n\
         add gslb vserver gv HTTP -lbMethod NOSUCH\n",
    );
    assert!(!i.report.ok());
    let errors = i.result.expect_err("invalid");
    assert_eq!(errors.errors[0].line, 3, "{errors}");
    assert_eq!(errors.errors[0].file, "ns.conf");
    let text = i.report.to_string();
    assert!(
        text.contains("Errors (1):\n  ns.conf:3: add gslb vserver gv"),
        "{text}"
    );
    // The written file reads back with the same error at its own line.
    let direct = sextant_config::parse_appliance(&i.config, "out.conf").expect_err("invalid");
    assert!(direct.errors[0].message.contains("NOSUCH"), "{direct}");
}

#[test]
fn a_location_file_that_is_not_here_is_written_commented_out() {
    let i = import(
        "add locationFile /var/netscaler/inbuilt_db/Citrix_Netscaler_InBuilt_GeoIP_DB_IPv4\n",
    );
    assert!(i.report.ok(), "{}", i.report);
    assert_eq!(
        written(&i.config, 1),
        "# add locationFile /var/netscaler/inbuilt_db/Citrix_Netscaler_InBuilt_GeoIP_DB_IPv4"
    );
    assert!(
        i.report
            .to_string()
            .contains("the file is not on this machine")
    );
}

#[test]
fn quoted_words_are_written_as_they_were() {
    let i = import(
        "add gslb site dc1 10.1.0.11 -siteType LOCAL\n\
         add gslb vserver gv HTTP -comment \"web \\\"front\\\" door\"\n",
    );
    assert!(i.report.ok(), "{}", i.report);
    assert_eq!(
        written(&i.config, 2),
        "add gslb vserver gv HTTP -comment \"web \\\"front\\\" door\""
    );
}

#[test]
fn monitors_keep_the_appliances_down_time() {
    let i = import(
        "add gslb site dc1 10.1.0.11 -siteType LOCAL\n\
         add gslb service gs1 10.0.0.20 HTTP 80 -siteName dc1\n\
         add lb monitor m1 HTTP -respCode 200\n\
         add lb monitor m2 HTTP -downTime 5\n\
         bind gslb service gs1 -monitorName m1\n\
         bind gslb service gs1 -monitorName m2\n\
         bind gslb service gs1 -monitorName tcp\n",
    );
    assert!(i.report.ok(), "{}", i.report);
    assert_eq!(
        written(&i.config, 3),
        "add lb monitor m1 HTTP -respCode 200 -downTime 30"
    );
    assert_eq!(written(&i.config, 4), "add lb monitor m2 HTTP -downTime 5");
    let text = i.report.to_string();
    assert!(
        text.contains("line 3: add lb monitor m1: -downTime 30 added"),
        "{text}"
    );
    assert!(
        text.contains("line 7: the built-in monitor tcp is bound with the appliance's defaults"),
        "{text}"
    );
    let model = i.result.expect("valid");
    let m1 = model.monitors.iter().find(|m| m.name == "m1").expect("m1");
    assert_eq!(m1.down_time, Some(std::time::Duration::from_secs(30)));
}

#[test]
fn an_unknown_gslb_parameter_is_left_out_of_its_line_and_reported() {
    let i =
        import("set gslb parameter -ldnsEntryTimeout 60 -someFutureOption X Y -incarnation 3\n");
    assert!(i.report.ok(), "{}", i.report);
    assert_eq!(
        written(&i.config, 1),
        "set gslb parameter -ldnsEntryTimeout 60 -incarnation 3"
    );
    let text = i.report.to_string();
    assert!(
        text.contains("line 1: set gslb parameter: -someFutureOption X Y left out: Sextant has no such GSLB parameter"),
        "{text}"
    );
    // The incarnation is config sync's counter, read without a warning.
    assert!(!text.contains("-incarnation is accepted"), "{text}");
    assert_eq!(model_incarnation(&i), Some(3));
    // A line of nothing Sextant has is left out whole.
    let i = import("set gslb parameter -someFutureOption X\n");
    assert!(i.report.ok(), "{}", i.report);
    assert!(!i.config.contains("someFutureOption"), "{}", i.config);
}

#[test]
fn a_wrapped_line_is_left_out_only_after_a_line_outside_scope() {
    // Outside scope: the broken line and the rest of it are left out.
    let i = import(
        "add responder action a1 respondwith \"\\\"HTTP/1.1 200 OK\\r\\n\nContent-Length: 0\\\"\"\nadd gslb site dc1 10.1.0.11 -siteType LOCAL\n",
    );
    assert!(i.report.ok(), "{}", i.report);
    let text = i.report.to_string();
    assert!(text.contains("the line cannot be read"), "{text}");
    assert!(text.contains("(the rest of a wrapped line)"), "{text}");
    // A GSLB line that a copy wrapped is an error at its lines: half a
    // vserver is never imported silently.
    let i = import(
        "add gslb site dc1 10.1.0.11 -siteType LOCAL\nadd gslb vserver v HTTP\n-lbMethod ROUNDROBIN\n",
    );
    assert!(!i.report.ok(), "{}", i.report);
    assert!(
        i.report
            .to_string()
            .contains("ns.conf:3: this line starts with the option \"-lbMethod\""),
        "{}",
        i.report
    );
}

#[test]
fn a_monitor_bound_with_bind_lb_monitor_to_a_gslb_service_is_kept() {
    let i = import(concat!(
        "add gslb site dc1 10.1.0.11 -siteType LOCAL\n",
        "add lb monitor m TCP\n",
        "add gslb service s1 10.1.1.1 HTTP 80 -siteName dc1\n",
        "bind lb monitor m s1\n",
    ));
    assert!(i.report.ok(), "{}", i.report);
    assert!(written(&i.config, 2).starts_with("add lb monitor m TCP"));
    assert_eq!(written(&i.config, 4), "bind lb monitor m s1");
}

#[test]
fn add_ns_rpc_node_is_read_as_set() {
    let i = import(
        "add gslb site dc1 10.1.0.11 -siteType LOCAL\nadd gslb site dc2 10.2.0.11\nadd ns rpcNode 10.2.0.11 -password s3cret -srcIP 10.1.0.11\n",
    );
    assert!(i.report.ok(), "{}", i.report);
    let model = i.result.expect("valid");
    assert_eq!(model.rpc_nodes.len(), 1, "{:?}", model.rpc_nodes);
}

fn model_incarnation(i: &sextant_config::import::Import) -> Option<u64> {
    i.result
        .as_ref()
        .ok()
        .and_then(|m| m.params.config_incarnation)
}

/// The administrative state a saved file writes (`-state DISABLED`,
/// `disable|enable gslb service|vserver NAME`) is GSLB scope: kept, and
/// the model disables what the file disables. A `disable` line of a
/// service that is left out (it names no server) is left out with it.
#[test]
fn administrative_state_lines_are_kept_and_those_of_dropped_services_left_out() {
    let text = format!(
        "{TWO_SITES}\
add server srv_web 10.1.0.21
add gslb service web-1 srv_web HTTP 80 -siteName dc1 -state DISABLED
add gslb service web-lb lbv HTTP 80 -siteName dc1
add gslb vserver gv-web HTTP -lbMethod ROUNDROBIN
bind gslb vserver gv-web -serviceName web-1
disable gslb vserver gv-web
disable gslb service web-lb
enable gslb service web-lb
"
    );
    let i = import(&text);
    assert_eq!(
        written(&i.config, 7),
        "add gslb service web-1 srv_web HTTP 80 -siteName dc1 -state DISABLED"
    );
    assert_eq!(written(&i.config, 11), "disable gslb vserver gv-web");
    for line in [8, 12, 13] {
        assert!(
            !i.config.contains(&format!("# ns.conf:{line}\n")),
            "line {line} is written:\n{}",
            i.config
        );
    }
    let m = i
        .result
        .as_ref()
        .unwrap_or_else(|e| panic!("{e}\n{}", i.config));
    let disabled: Vec<(&str, sextant_core::AdminKind)> = m
        .config_disabled
        .iter()
        .map(|d| (d.name.as_str(), d.kind))
        .collect();
    assert_eq!(
        disabled,
        vec![
            ("web-1", sextant_core::AdminKind::Service),
            ("gv-web", sextant_core::AdminKind::VServer)
        ]
    );
}
