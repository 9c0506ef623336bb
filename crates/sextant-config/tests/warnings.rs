//! Settings that are accepted but have no effect are warned about: one
//! warning per use, `FILE:LINE: SETTING is accepted but ...`, in
//! `Model::warnings` (docs/config.md, "Accepted but not implemented yet").

mod support;

use sextant_config::{parse_appliance, parse_toml};
use sextant_core::Model;
use support::{conf, toml, without_unchecked};

/// Each warning as `(line, setting)`, checking the file name and the
/// wording.
fn warned(m: &Model, file: &str) -> Vec<(usize, String)> {
    without_unchecked(m.clone())
        .warnings
        .iter()
        .map(|w| {
            let rest = w
                .strip_prefix(&format!("{file}:"))
                .unwrap_or_else(|| panic!("{w:?} is not about {file}"));
            let (line, text) = rest.split_once(": ").expect("LINE: text");
            let (setting, why) = text
                .split_once(" is accepted but ")
                .unwrap_or_else(|| panic!("{w:?} lacks \"is accepted but\""));
            assert!(
                why.starts_with("not implemented yet; it has no effect (")
                    || why.starts_with("has no effect in Sextant ("),
                "{w:?}"
            );
            assert!(why.ends_with(')'), "{w:?}");
            (line.parse().expect("line number"), setting.to_string())
        })
        .collect()
}

fn pairs(expected: &[(usize, &str)]) -> Vec<(usize, String)> {
    expected.iter().map(|(l, s)| (*l, s.to_string())).collect()
}

/// Every setting of the appliance syntax that has no effect, used once
/// each (some lines use several).
const APPLIANCE_ALL: &str = "\
add gslb site p1 10.0.0.1 -siteType LOCAL
add gslb site p2 10.0.0.2 -nwMetricExchange ENABLED
set gslb site p2 -sessionExchange DISABLED
set gslb parameter -GSLBSyncMode IncrementalSync
set gslb parameter -ldnsEntryTimeout 60 -RTTTolerance 10
set gslb parameter -ldnsMask 255.255.255.0 -v6ldnsMaskLen 64 -ldnsProbeOrder DNS PING
set gslb parameter -dropLdnsReq ENABLED -ldnsProbeInterval 10 -ldnsProbeTimeout 3
set lb monitor ldns-tcp LDNS-TCP -interval 10 sec -resptimeout 5 sec
add gslb service s1 10.1.0.1 HTTP 80 -siteName p1 -publicPort 8080 -maxClient 100
set gslb service s1 -cip ENABLED -cipHeader X-Forwarded-For
set gslb service s1 -cltTimeout 180 -svrTimeout 360 -downStateFlush ENABLED
add gslb vserver vs HTTP -lbMethod RTT -backupLBMethod RTT
set gslb vserver vs -tolerance 10 -persistenceId 7 -dnsRecordType A -appflowLog ENABLED
add lb monitor m TCP -LRTM ENABLED
";

#[test]
fn every_appliance_setting_without_effect_warns_once_per_use_at_its_line() {
    let m = conf(APPLIANCE_ALL);
    assert_eq!(
        warned(&m, "t.conf"),
        pairs(&[
            (4, "-GSLBSyncMode"),
            (9, "-maxClient"),
            (10, "-cip"),
            (10, "-cipHeader"),
            (11, "-cltTimeout"),
            (11, "-svrTimeout"),
            (11, "-downStateFlush"),
            (13, "-persistenceId"),
            (13, "-dnsRecordType"),
            (13, "-appflowLog"),
            (14, "-LRTM"),
        ])
    );
}

/// Config sync (issue 27) is implemented: `-automaticConfigSync` and
/// `-incarnation` are read, not warned about.
#[test]
fn config_sync_settings_are_read_without_warning() {
    let m = conf(
        "add gslb site p1 10.0.0.1\nadd gslb site p2 10.0.0.2\nadd gslb site p3 10.0.0.3\nset gslb parameter -automaticConfigSync ENABLED -incarnation 4\n",
    );
    assert!(m.warnings.is_empty(), "{:#?}", m.warnings);
    assert!(m.params.automatic_config_sync);
    assert_eq!(m.params.config_incarnation, Some(4));
    let t = toml("version = 1\n[gslb]\nautomatic_config_sync = true\nincarnation = 4\n");
    assert!(t.warnings.is_empty(), "{:#?}", t.warnings);
    assert_eq!(
        (t.params.automatic_config_sync, t.params.config_incarnation),
        (true, Some(4))
    );
    let e = parse_toml("version = 1\n[gslb]\nincarnation = -1\n", "t.toml").expect_err("negative");
    assert_eq!(
        e.to_string(),
        "t.toml:3: [gslb]: incarnation: expected an integer 0 or more, found -1"
    );
}

#[test]
fn every_toml_setting_without_effect_warns_once_per_use_at_its_line() {
    let text = r#"version = 1
[gslb]
automatic_config_sync = true
ldns_entry_timeout = "60s"
rtt_tolerance = "10ms"
ldns_v4_mask = 24
ldns_v6_mask = 64
ldns_probe_order = ["dns", "ping"]
drop_ldns_requests = true
ldns_probe_interval = "10s"
ldns_probe_timeout = "3s"
mep_keepalive_timeout = "5s"
[[site]]
name = "p1"
ip = "10.0.0.1"
nw_metric_exchange = true
session_exchange = false
[[service]]
name = "s1"
ip = "10.1.0.1"
port = 80
protocol = "HTTP"
site = "p1"
public_port = 8080
max_clients = 100
[[vserver]]
name = "vs"
protocol = "HTTP"
lb_method = "RTT"
backup_lb_method = "RTT"
"#;
    let m = toml(text);
    assert_eq!(
        warned(&m, "t.toml"),
        pairs(&[(25, "[[service]] max_clients")])
    );
}

#[test]
fn each_use_is_one_warning_whatever_the_value() {
    let m = conf(
        "set gslb parameter -GSLBSyncLocFiles DISABLED\nset gslb parameter -GSLBSyncLocFiles ENABLED -MEPKeepAliveTimeout 5\nset gslb parameter -GSLBSyncLocFiles DISABLED\n",
    );
    assert_eq!(
        warned(&m, "t.conf"),
        pairs(&[
            (1, "-GSLBSyncLocFiles"),
            (2, "-GSLBSyncLocFiles"),
            (3, "-GSLBSyncLocFiles")
        ])
    );
}

/// Settings that have an effect, in both syntaxes: no warning at all.
#[test]
fn settings_with_an_effect_do_not_warn() {
    let text = "\
add service dns 127.0.0.1 ADNS 5353
add gslb site p1 10.0.0.1 -siteType LOCAL -publicIP 192.0.2.1 -metricExchange ENABLED -triggerMonitor MEPDOWN
add gslb site p2 10.0.0.2
add gslb site p3 10.0.0.3
add gslb site c1 10.0.0.4 -parentSite p1
set gslb site p1 -backupParentlist p2 p3
set gslb parameter -MEPKeepAliveTimeout 5 -mepPort 4011 -mepSecurePort 4009
set ns rpcNode 10.0.0.2 -password s -secure YES
enable ns feature GSLB LB
add lb monitor m HTTP -interval 2 -resptimeout 1 -retries 2 -successRetries 2 -destPort 8080 -httpRequest \"GET /h\" -respCode 200-299
add gslb service s1 10.1.0.1 HTTP 80 -siteName p1 -publicIP 192.0.2.10
add gslb service s2 10.2.0.1 HTTP 80 -siteName p2 -loadSource PUSH
bind gslb service s1 -monitorName m
add gslb vserver vs HTTP -lbMethod ROUNDROBIN -backupLBMethod LEASTCONNECTION -persistenceType SOURCEIP -timeout 5 -persistMask 255.255.255.0 -EDR ENABLED -MIR ENABLED -ECS ENABLED -netmask 255.255.0.0
add gslb vserver vs2 HTTP -lbMethod STATICPROXIMITY -backupVServer vs
bind gslb vserver vs -serviceName s1 -weight 3
bind gslb vserver vs2 -serviceName s2
bind gslb vserver vs -domainName www.example.com -TTL 30 -backupIP 192.0.2.99
add dns soaRec example.com -originServer ns1.example.com -contact hostmaster.example.com
add dns nsRec example.com ns1.example.com -TTL 600
add location 192.0.2.0 192.0.2.255 \"Europe.DE\" -longitude 8 -latitude 50
";
    let m = conf(text);
    assert!(m.warnings.is_empty(), "{:#?}", m.warnings);

    let text = r#"version = 1
[server]
dns_listen = ["127.0.0.1:5353"]
local_site = "p1"
[gslb]
mep_keepalive_timeout = "5s"
mep_port = 4011
mep_secure_port = 4009
[[site]]
name = "p1"
ip = "10.0.0.1"
public_ip = "192.0.2.1"
backup_parents = ["p2"]
metric_exchange = true
trigger_monitor = "mepdown"
[[site]]
name = "p2"
ip = "10.0.0.2"
[[service]]
name = "s1"
ip = "10.1.0.1"
port = 80
protocol = "HTTP"
site = "p1"
public_ip = "192.0.2.10"
[[vserver]]
name = "vs"
protocol = "HTTP"
lb_method = "LEASTCONNECTION"
backup_lb_method = "ROUNDROBIN"
services = [{ name = "s1", weight = 2 }]
domains = [{ name = "www.example.com", ttl = 30 }]
"#;
    let m = without_unchecked(toml(text));
    assert!(m.warnings.is_empty(), "{:#?}", m.warnings);
}

#[test]
fn an_empty_file_has_no_warnings() {
    assert!(conf("").warnings.is_empty());
    assert!(toml("version = 1\n").warnings.is_empty());
}

#[test]
fn a_file_with_errors_gives_errors_only() {
    let e = parse_appliance(
        "set gslb parameter -automaticConfigSync ENABLED\nadd gslb site\n",
        "t.conf",
    )
    .expect_err("line 2 is incomplete");
    assert_eq!(e.errors.len(), 1, "{e}");
    assert_eq!(e.errors[0].line, 2);
}

#[test]
fn warnings_are_in_line_order_across_kinds() {
    // The TOML reader reads [gslb] after [[vserver]] here; the warnings
    // still come in line order.
    let text = r#"version = 1
[[site]]
name = "p1"
ip = "10.0.0.1"
[[service]]
name = "s1"
ip = "10.1.0.1"
port = 80
protocol = "HTTP"
site = "p1"
max_clients = 100
[[site]]
name = "p2"
ip = "10.0.0.2"
clip = "10.0.0.9"
"#;
    let m = toml(text);
    assert_eq!(
        warned(&m, "t.toml"),
        pairs(&[(11, "[[service]] max_clients"), (15, "[[site]] clip")])
    );
}

/// What a saved file writes on every line and asks for what Sextant does
/// anyway (no client limit, no AppFlow) is not warned about.
#[test]
fn settings_that_ask_for_what_sextant_does_anyway_are_not_warned_about() {
    let m = conf(concat!(
        "add gslb site p1 10.0.0.1 -siteType LOCAL\n",
        "add gslb service s1 10.1.0.1 HTTP 80 -siteName p1 -maxClient 0 -appflowLog DISABLED -cip DISABLED\n",
        "add gslb vserver vs HTTP -appflowLog DISABLED -considerEffectiveState NONE\n",
    ));
    let m = without_unchecked(m);
    assert!(m.warnings.is_empty(), "{:#?}", m.warnings);
}
