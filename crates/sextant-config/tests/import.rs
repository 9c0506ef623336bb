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
        ..ImportOptions::default()
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
    // A GSLB line that a copy wrapped: its rest is rejected, as the
    // appliance rejects it, and listed with its line, never silently; with
    // --strict the whole file is refused.
    let wrapped = "add gslb site dc1 10.1.0.11 -siteType LOCAL\nadd gslb vserver v HTTP\n-lbMethod ROUNDROBIN\n";
    let i = import(wrapped);
    assert!(i.report.has_rejected(), "{}", i.report);
    assert!(
        i.report
            .to_string()
            .contains("line 3: -lbMethod: this line starts with the option \"-lbMethod\""),
        "{}",
        i.report
    );
    let strict = import_appliance(
        wrapped,
        "ns.conf",
        &ImportOptions {
            strict: true,
            ..ImportOptions::default()
        },
    );
    assert!(!strict.report.ok(), "{}", strict.report);
    assert!(
        strict
            .report
            .to_string()
            .contains("ns.conf:3: this line starts with the option \"-lbMethod\""),
        "{}",
        strict.report
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

/// The appliance's most common pattern: a local GSLB service at the VIP of
/// an LB vserver, with no monitor of its own, takes the vserver's state.
const LB_BEHIND: &str = "\
#NS13.1 Build 52.19
set ns config -IPAddress 10.1.0.10 -netmask 255.255.255.0
add ns ip 10.1.0.11 255.255.255.0 -vServer DISABLED
add server srv1 10.0.1.5
add server srv2 10.0.1.6
add server srv3 backend3.example.net
add service svc1 srv1 HTTP 80 -gslb NONE -maxClient 0
add service svc_plain 10.0.1.9 TCP 8443 -gslb NONE
add serviceGroup sg_web HTTP -maxClient 0
add lb vserver web_vs HTTP 10.20.0.50 80 -persistenceType NONE
add lb vserver app_vs TCP 10.20.0.51 8443
add lb vserver empty_vs HTTP 10.20.0.52 80
add lb monitor mon_health HTTP -respCode 200 -httpRequest \"GET /health\" -LRTM DISABLED -interval 5
add lb monitor mon_ldap LDAP -baseDN \"dc=example\" -LRTM DISABLED
add gslb site dc1 10.1.0.11 -publicIP 10.1.0.11
add gslb site dc2 10.2.0.11 -publicIP 10.2.0.11
add gslb vserver gv HTTP
add gslb service gs_web 10.20.0.50 HTTP 80 -siteName dc1
add gslb service gs_app 10.20.0.51 TCP 8443 -siteName dc1
add gslb service gs_empty 10.20.0.52 HTTP 80 -siteName dc1
add gslb service gs_remote 10.20.0.50 HTTP 80 -siteName dc2
add gslb service gs_direct 10.0.1.6 HTTP 80 -siteName dc1
bind lb vserver web_vs svc1
bind lb vserver web_vs sg_web
bind lb vserver app_vs svc_plain
bind gslb vserver gv -serviceName gs_web
bind serviceGroup sg_web srv2 80
bind serviceGroup sg_web srv3 80
bind serviceGroup sg_web -monitorName mon_ldap
bind service svc1 -monitorName mon_health
";

#[test]
fn a_gslb_service_at_an_lb_vip_is_probed_at_the_vservers_backends() {
    let i = import(LB_BEHIND);
    let model = i
        .result
        .as_ref()
        .unwrap_or_else(|e| panic!("{e}\n{}", i.config));
    let svc = |name: &str| {
        model
            .services
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let monitors = |name: &str| -> Vec<String> {
        let s = svc(name);
        s.monitors
            .iter()
            .map(|m| {
                let m = model.monitor(*m);
                format!(
                    "{} {} {:?}:{:?}",
                    m.name,
                    m.kind.type_name(),
                    m.dest_ip,
                    m.dest_port
                )
            })
            .collect()
    };
    // svc1 by its own monitor, srv2 by sg_web's LDAP monitor, which Sextant
    // cannot probe: TCP instead; srv3 (a domain name) is not carried over.
    assert_eq!(
        monitors("gs_web"),
        [
            "gs_web-1-mon_health HTTP Some(10.0.1.5):Some(80)",
            "gs_web-2-mon_ldap TCP Some(10.0.1.6):Some(80)",
        ],
        "{}",
        i.config
    );
    assert_eq!(svc("gs_web").mon_threshold, 1);
    assert_eq!(svc("gs_web").monitor_weights, [1, 1]);
    // A service with no monitor: the appliance's tcp-default; one backend,
    // so every monitor must be UP (threshold 0).
    assert_eq!(
        monitors("gs_app"),
        ["gs_app-1-tcp-default TCP Some(10.0.1.9):Some(8443)"]
    );
    assert_eq!(svc("gs_app").mon_threshold, 0);
    // At the address of an LB service (a serviceGroup member) directly.
    assert_eq!(
        monitors("gs_direct"),
        ["gs_direct-1-mon_ldap TCP Some(10.0.1.6):Some(80)"]
    );
    // A remote site's service and a vserver with nothing bound: as they are.
    assert!(monitors("gs_remote").is_empty());
    assert!(monitors("gs_empty").is_empty());
    let report = i.report.to_string();
    for expected in [
        "line 18: gslb service gs_web: no monitor is bound to it and it is at the VIP of lb vserver web_vs (line 10), whose state it takes on the appliance; written with a monitor per backend (10.0.1.5:80 by mon_health, 10.0.1.6:80 by mon_ldap), each bound with -weight 1, and -monThreshold 1",
        "line 18: gslb service gs_web: backend 10.0.1.6:80 is monitored by mon_ldap on the appliance (type LDAP: Sextant has no LDAP probe); written with Sextant's TCP probe instead",
        "line 6: gslb service gs_web: its backend server srv3 (port 80) is defined by the domain name backend3.example.net, which Sextant does not resolve",
        "line 20: gslb service gs_empty is at the VIP 10.20.0.52:80 of lb vserver empty_vs (line 12), whose state it takes on the appliance; the file binds no service to that vserver",
        "add lb vserver        1  load balancing; read for the health of GSLB service gs_web: lines 10",
        "bind lb vserver       2  load balancing; read for the health of GSLB service gs_web: lines 23, 24",
    ] {
        assert!(
            report.contains(expected),
            "report lacks {expected:?}:\n{report}"
        );
    }
    assert!(!report.contains("gs_remote"), "{report}");
}

/// The appliance loads a saved file line by line and rejects what it cannot
/// take; so does the import, and the lines that name a rejected object are
/// rejected in turn.
#[test]
fn lines_the_appliance_would_reject_are_left_out_and_the_rest_loads() {
    let text = format!(
        "{TWO_SITES}\
add gslb vserver gv HTTP
add gslb service s1 10.1.1.1 HTTP 80 -siteName dc1
add gslb service s1 10.1.1.2 HTTP 80 -siteName dc1
add gslb service s2 10.1.1.3 HTTP 80 -siteName
bind gslb vserver gv -serviceName s1
bind gslb vserver gv -serviceName s2
bind gslb vserver gv -serviceName nosuch
bind gslb vserver gv -domainName www.example.net
"
    );
    let i = import(&text);
    let model = i.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(model.services.len(), 1);
    assert_eq!(model.services[ServiceId::new(0)].ip.to_string(), "10.1.1.1");
    let rejected: Vec<usize> = i.report.rejected.iter().map(|f| f.line).collect();
    // The duplicate, the option without a value, the bind of the service it
    // did not define, the bind of a service the file never had.
    assert_eq!(rejected, [8, 9, 11, 12], "{}", i.report);
    assert!(i.report.ok() && i.report.has_rejected());
    let report = i.report.to_string();
    assert!(
        report.contains("line 8: add gslb service: service \"s1\" is already defined on line 7"),
        "{report}"
    );
    // --strict: all or nothing.
    let strict = import_appliance(
        &text,
        "ns.conf",
        &ImportOptions {
            strict: true,
            ..ImportOptions::default()
        },
    );
    assert!(strict.result.is_err() && !strict.report.ok());
    assert!(!strict.report.has_rejected());
}

/// A line the appliance takes but Sextant refuses (here an option Sextant's
/// monitors do not have, on a monitor a GSLB service uses) is not one the
/// appliance would reject: it stays an error, and the import fails.
#[test]
fn a_line_the_appliance_takes_but_sextant_refuses_still_fails_the_import() {
    let text = format!(
        "{TWO_SITES}\
add lb monitor m1 TCP -failureRetries 2
add gslb service s1 10.1.1.1 HTTP 80 -siteName dc1
bind gslb service s1 -monitorName m1
"
    );
    let i = import(&text);
    assert!(i.result.is_err(), "{}", i.config);
    assert!(!i.report.ok() && !i.report.has_rejected(), "{}", i.report);
}

/// A GSLB line a mail client wrapped mid-option: both halves are rejected,
/// as the appliance rejects them, and so is the line that binds the half
/// service; the rest loads.
#[test]
fn a_wrapped_gslb_line_is_rejected_with_what_depends_on_it() {
    let text = format!(
        "{TWO_SITES}\
add gslb vserver gv HTTP
add gslb service s1 10.1.1.1 HTTP 80 -maxClient 0 -siteName
 dc1 -cltTimeout 180
add gslb service s2 10.1.1.2 HTTP 80 -siteName dc1
bind gslb vserver gv -serviceName s1
bind gslb vserver gv -serviceName s2
"
    );
    let i = import(&text);
    assert!(i.result.is_ok(), "{}", i.report);
    let rejected: Vec<usize> = i.report.rejected.iter().map(|f| f.line).collect();
    assert_eq!(rejected, [7, 8, 10], "{}", i.report);
}

/// An LB service with `-healthMonitor NO` is never probed by the appliance
/// and always UP, and so is a GSLB service at its vserver's VIP: the import
/// binds it nothing, and says why.
#[test]
fn a_gslb_service_in_front_of_an_unmonitored_lb_service_stays_unmonitored() {
    let text = format!(
        "{TWO_SITES}\
add service svc1 10.0.1.5 HTTP 80 -healthMonitor NO
add lb vserver web_vs HTTP 10.20.0.50 80
add gslb service gs_web 10.20.0.50 HTTP 80 -siteName dc1
bind lb vserver web_vs svc1
"
    );
    let i = import(&text);
    let model = i.result.as_ref().unwrap_or_else(|e| panic!("{e}"));
    assert!(model.services[ServiceId::new(0)].monitors.is_empty());
    let report = i.report.to_string();
    assert!(
        report.contains("line 8: gslb service gs_web: no monitor is bound to it and it is at the VIP of lb vserver web_vs (line 7), whose state it takes on the appliance; service svc1 (line 6) has -healthMonitor NO"),
        "{report}"
    );
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

/// A name bound to two vservers, as the appliance binds one for A and one
/// for AAAA (`-dnsRecordType AAAA`): not a line the appliance rejects, so
/// the import fails and says how Sextant does it, rather than leaving the
/// IPv6 vserver's binding out as "rejected".
#[test]
fn a_domain_on_an_a_and_an_aaaa_vserver_is_not_rejected_as_the_appliance_would() {
    let text = format!(
        "{TWO_SITES}\
add gslb vserver gv4 HTTP
add gslb vserver gv6 HTTP -dnsRecordType AAAA
add gslb service s4 192.0.2.80 HTTP 80 -siteName dc2
add gslb service s6 2001:db8::80 HTTP 80 -siteName dc2
bind gslb vserver gv4 -serviceName s4
bind gslb vserver gv6 -serviceName s6
bind gslb vserver gv4 -domainName www.example.net
bind gslb vserver gv6 -domainName www.example.net
"
    );
    let i = import(&text);
    assert!(!i.report.has_rejected(), "{}", i.report);
    assert!(i.result.is_err(), "{}", i.report);
    assert!(
        i.report
            .to_string()
            .contains("bind both vservers' services to \"gv4\" and remove this line"),
        "{}",
        i.report
    );
}

/// Every saved file of the project's corpora (`tests/appliance-configs`,
/// its subdirectories included): whatever imports leaves no service that
/// nothing checks unless a "Needs your action" line names it; a file that
/// does not import says why in errors, never by leaving services out
/// silently.
#[test]
fn no_imported_service_is_unchecked_without_an_action_line() {
    fn saved_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                saved_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "conf") {
                out.push(p);
            }
        }
    }
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/appliance-configs");
    let mut files = Vec::new();
    saved_files(&root, &mut files);
    assert!(files.len() >= 20, "the corpus: {files:?}");
    let (mut imported, mut failed) = (0, 0);
    for path in &files {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let text = String::from_utf8_lossy(&bytes);
        let file = path.to_string_lossy();
        let i = import_appliance(&text, &file, &ImportOptions::default());
        let Ok(model) = &i.result else {
            assert!(
                !i.report.ok(),
                "{file}: failed without saying so:\n{}",
                i.report
            );
            failed += 1;
            continue;
        };
        imported += 1;
        for (id, s) in model.services.iter_enumerated() {
            if model.health_source(id) != sextant_core::HealthSource::None {
                continue;
            }
            let named = format!("service {} ", s.name);
            assert!(
                i.report.actions.iter().any(|a| a.text.contains(&named)),
                "{file}: service {} is checked by nothing and no action line names it:\n{}",
                s.name,
                i.report
            );
        }
    }
    eprintln!(
        "{} saved files: {imported} imported, {failed} refused",
        files.len()
    );
}
