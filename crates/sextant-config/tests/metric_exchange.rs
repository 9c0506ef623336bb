//! Configuration for metric exchange and load figures, in both syntaxes:
//! `set ns rpcNode` / `[[rpc_node]]`, per-service load sources
//! (`-loadSource` / `load = {...}`), backup parent lists, `-triggerMonitor`
//! and the keepalive timeout.

mod support;

use std::time::Duration;
use support::{conf, conf_errors, ip, one, toml, toml_errors, without_unchecked};

use sextant_core::{
    LoadKind, LoadSource, Model, PrometheusSource, RpcNode, ServiceId, SiteId, TriggerMonitor,
};

const SITES: &str = "\
add gslb site s1 10.0.0.1 -siteType LOCAL
add gslb site s2 10.0.0.2
";

fn with_sites(rest: &str) -> String {
    format!("{SITES}{rest}")
}

const TOML_HEAD: &str = r#"version = 1

[server]
local_site = "s1"

[[site]]
name = "s1"
ip = "10.0.0.1"

[[site]]
name = "s2"
ip = "10.0.0.2"
"#;

fn with_toml_head(rest: &str) -> String {
    format!("{TOML_HEAD}{rest}")
}

// -- rpc nodes

#[test]
fn rpc_nodes_are_stored_and_merged_per_ip() {
    let m = conf(concat!(
        "set ns rpcNode 10.0.0.1 -password first\n",
        "set ns rpcNode 10.0.0.2 -secure YES\n",
        "set ns rpcNode 10.0.0.1 -secure YES\n",
        "set ns rpcNode 10.0.0.1 -password second\n",
        "set ns rpcNode 2001:db8::1 -password v6 -secure NO\n",
    ));
    assert_eq!(
        m.rpc_nodes,
        vec![
            RpcNode {
                ip: ip("10.0.0.1"),
                password: Some("second".into()),
                secure: true,
                source_ip: None,
            },
            RpcNode {
                ip: ip("10.0.0.2"),
                password: None,
                secure: true,
                source_ip: None,
            },
            RpcNode {
                ip: ip("2001:db8::1"),
                password: Some("v6".into()),
                secure: false,
                source_ip: None,
            },
        ]
    );
    // Quoted secrets keep their spaces and specials.
    let m = conf("set ns rpcNode 10.0.0.9 -password \"a b#c\\\"d\"\n");
    assert_eq!(m.rpc_nodes[0].password.as_deref(), Some("a b#c\"d"));
}

#[test]
fn rpc_node_errors() {
    one(
        conf_errors("set ns rpcNode 10.0.0.1 -password \"\"\n"),
        1,
        &["-password is empty"],
    );
    one(
        conf_errors("set ns rpcNode 10.0.0.1\n"),
        1,
        &["nothing to set"],
    );
    one(
        conf_errors("set ns rpcNode 10.0.0.1 -password a -hmac x\n"),
        1,
        &["unknown option -hmac"],
    );
    one(
        conf_errors("set ns rpcNode -password a\n"),
        1,
        &["missing IP"],
    );
}

#[test]
fn rpc_nodes_in_toml() {
    let m = toml(concat!(
        "version = 1\n",
        "[[rpc_node]]\nip = \"10.0.0.1\"\npassword = \"s3cret\"\nsecure = true\n",
        "[[rpc_node]]\nip = \"10.0.0.2\"\n",
    ));
    assert_eq!(
        m.rpc_nodes,
        vec![
            RpcNode {
                ip: ip("10.0.0.1"),
                password: Some("s3cret".into()),
                secure: true,
                source_ip: None,
            },
            RpcNode {
                ip: ip("10.0.0.2"),
                password: None,
                secure: false,
                source_ip: None,
            },
        ]
    );
    one(
        toml_errors(concat!(
            "version = 1\n",
            "[[rpc_node]]\nip = \"10.0.0.1\"\n",
            "[[rpc_node]]\nip = \"10.0.0.1\"\npassword = \"x\"\n",
        )),
        5,
        &["already defined on line 3"],
    );
    one(
        toml_errors("version = 1\n[[rpc_node]]\nip = \"10.0.0.1\"\npassword = \"\"\n"),
        4,
        &["password is empty"],
    );
    one(
        toml_errors("version = 1\n[[rpc_node]]\nip = \"10.0.0.x\"\n"),
        3,
        &["[[rpc_node]] 10.0.0.x: ip"],
    );
    one(
        toml_errors("version = 1\n[[rpc_node]]\nip = \"10.0.0.1\"\nsecrets = 1\n"),
        4,
        &["unknown field `secrets`"],
    );
}

#[test]
fn rpc_nodes_agree_between_syntaxes() {
    let a = conf("set ns rpcNode 10.0.0.1 -password p -secure YES\n");
    let b = toml("version = 1\n[[rpc_node]]\nip = \"10.0.0.1\"\npassword = \"p\"\nsecure = true\n");
    assert_eq!(a, b);
}

// -- load sources

fn prometheus(m: &Model, service: usize) -> &PrometheusSource {
    match &m.services[ServiceId::from_index(service)].load_source {
        LoadSource::Prometheus(p) => p,
        other => panic!("expected a Prometheus source, got {other:?}"),
    }
}

#[test]
fn load_sources_in_the_appliance_syntax() {
    let m = conf(&with_sites(concat!(
        "add gslb service web1 10.1.0.1 HTTP 80 -siteName s1 -loadSource PROMETHEUS -loadURL http://127.0.0.1:9101/metrics -connectionsMetric 'haproxy_backend_current_sessions{proxy=\"web\"}'\n",
        "add gslb service web2 10.1.0.2 HTTP 80 -siteName s1\n",
        "set gslb service web2 -loadSource prometheus -loadURL \"http://[::1]:8080/stats/prometheus\" -loadInterval 500 MSEC\n",
        "set gslb service web2 -responseTimeMetric envoy_rt_seconds -bandwidthMetric \"envoy_bytes{dir=\\\"out\\\"}\" -packetsMetric pkts_total -customLoadMetric load\n",
        "add gslb service web3 10.1.0.3 HTTP 80 -siteName s1 -loadSource PUSH\n",
        "add gslb service web4 10.2.0.1 HTTP 80 -siteName s2 -loadSource MONITORS\n",
        "add gslb service web5 10.2.0.2 HTTP 80 -siteName s2\n",
    )));
    let p = prometheus(&m, 0);
    assert_eq!(p.url, "http://127.0.0.1:9101/metrics");
    assert_eq!(p.interval, Duration::from_secs(5));
    assert_eq!(
        p.metric(LoadKind::Connections),
        Some("haproxy_backend_current_sessions{proxy=\"web\"}")
    );
    assert_eq!(p.metric(LoadKind::ResponseTime), None);
    let p = prometheus(&m, 1);
    assert_eq!(p.url, "http://[::1]:8080/stats/prometheus");
    assert_eq!(p.interval, Duration::from_millis(500));
    assert_eq!(p.metric(LoadKind::Connections), None);
    assert_eq!(p.metric(LoadKind::ResponseTime), Some("envoy_rt_seconds"));
    assert_eq!(
        p.metric(LoadKind::Bandwidth),
        Some("envoy_bytes{dir=\"out\"}")
    );
    assert_eq!(p.metric(LoadKind::Packets), Some("pkts_total"));
    assert_eq!(p.metric(LoadKind::CustomLoad), Some("load"));
    assert_eq!(m.services[ServiceId::new(2)].load_source, LoadSource::Push);
    assert_eq!(
        m.services[ServiceId::new(3)].load_source,
        LoadSource::Monitors
    );
    assert_eq!(
        m.services[ServiceId::new(4)].load_source,
        LoadSource::Monitors
    );
}

#[test]
fn set_gslb_service_changes_other_settings_too() {
    let m = conf(&with_sites(concat!(
        "add gslb service web1 10.1.0.1 HTTP 80 -siteName s1\n",
        "set gslb service WEB1 -publicIP 203.0.113.1 -publicPort 8080 -maxClient 10 -cip DISABLED\n",
    )));
    assert_eq!(
        m.services[ServiceId::new(0)].public_ip,
        Some(ip("203.0.113.1"))
    );
    assert_eq!(m.services[ServiceId::new(0)].public_port, Some(8080));
    assert_eq!(m.services[ServiceId::new(0)].max_clients, 10);
}

#[test]
fn changing_the_source_forgets_prometheus_settings() {
    let m = conf(&with_sites(concat!(
        "add gslb service web1 10.1.0.1 HTTP 80 -siteName s1 -loadSource PROMETHEUS -loadURL http://h/m -connectionsMetric c\n",
        "set gslb service web1 -loadSource PUSH\n",
    )));
    assert_eq!(m.services[ServiceId::new(0)].load_source, LoadSource::Push);
    // ... so going back needs them again.
    let errs = conf_errors(&with_sites(concat!(
        "add gslb service web1 10.1.0.1 HTTP 80 -siteName s1 -loadSource PROMETHEUS -loadURL http://h/m -connectionsMetric c\n",
        "set gslb service web1 -loadSource MONITORS\n",
        "set gslb service web1 -loadSource PROMETHEUS\n",
    )));
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert!(errs[0].0 == 5 && errs[0].1.contains("needs -loadURL"));
    assert!(errs[1].0 == 5 && errs[1].1.contains("needs at least one metric"));
}

#[test]
fn load_source_errors_in_the_appliance_syntax() {
    let svc = "add gslb service web1 10.1.0.1 HTTP 80 -siteName s1";
    let cases: &[(&str, &[&str])] = &[
        (
            " -loadSource SNMP",
            &["-loadSource: expected PROMETHEUS, PUSH or MONITORS, found \"SNMP\""],
        ),
        (
            " -loadSource PROMETHEUS -connectionsMetric c",
            &["service \"web1\": a Prometheus load source needs -loadURL"],
        ),
        (
            " -loadSource PROMETHEUS -loadURL http://h/m",
            &["needs at least one metric: -connectionsMetric, -responseTimeMetric"],
        ),
        (
            " -loadSource PROMETHEUS -loadURL https://h/m -connectionsMetric c",
            &["-loadURL: https is not supported"],
        ),
        (
            " -loadSource PROMETHEUS -loadURL h:9101 -connectionsMetric c",
            &["-loadURL: \"h:9101\" is not a URL"],
        ),
        (
            " -loadSource PROMETHEUS -loadURL http://h/m -connectionsMetric c -loadInterval 5 MSEC",
            &["-loadInterval: 5ms is out of range; expected 10ms to"],
        ),
        (
            " -loadSource PROMETHEUS -loadURL http://h/m -connectionsMetric c -loadInterval 2 MIN",
            &[],
        ),
        (
            " -loadSource PROMETHEUS -loadURL http://h/m -connectionsMetric c -loadInterval 2 HOURS",
            &["unexpected value \"HOURS\""],
        ),
        (
            " -loadSource PROMETHEUS -loadURL http://h/m -connectionsMetric sessions{proxy=\"web\"}",
            &[
                "-connectionsMetric: label proxy: expected a double-quoted value",
                "quote the whole selector in single quotes",
            ],
        ),
        (
            " -loadSource PROMETHEUS -loadURL http://h/m -packetsMetric '9lives'",
            &["-packetsMetric: \"9lives\" is not a metric name"],
        ),
        (
            " -loadURL http://h/m",
            &[
                "service \"web1\": -loadURL applies only to -loadSource PROMETHEUS (this service's -loadSource is MONITORS)",
            ],
        ),
        (
            " -loadSource PUSH -customLoadMetric x",
            &[
                "-customLoadMetric applies only to -loadSource PROMETHEUS (this service's -loadSource is PUSH)",
            ],
        ),
    ];
    for (opts, parts) in cases {
        let text = with_sites(&format!("{svc}{opts}\n"));
        if parts.is_empty() {
            let m = conf(&text);
            assert_eq!(prometheus(&m, 0).interval, Duration::from_secs(120));
            continue;
        }
        one(conf_errors(&text), 3, parts);
    }
    one(
        conf_errors("set gslb service nowhere -loadSource PUSH\n"),
        1,
        &["service \"nowhere\" is not defined on an earlier line"],
    );
    one(
        conf_errors(&with_sites(
            "add gslb service web1 10.1.0.1 HTTP 80 -siteName s1\nset gslb service web1 -siteName s2\n",
        )),
        4,
        &["unknown option -siteName"],
    );
    one(
        conf_errors(&with_sites(
            "add gslb service web1 10.1.0.1 HTTP 80 -siteName s1\nset gslb service web1\n",
        )),
        4,
        &["nothing to set"],
    );
}

#[test]
fn load_sources_in_toml() {
    let m = toml(&with_toml_head(concat!(
        "[[service]]\nname = \"web1\"\nip = \"10.1.0.1\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"s1\"\n",
        "load = { source = \"prometheus\", url = \"http://127.0.0.1:9101/metrics\", interval = \"250ms\", connections = 'haproxy_backend_current_sessions{proxy=\"web\"}', response_time = \"rt_seconds\", bandwidth = \"bytes_total\", packets = \"pkts_total\", custom_load = \"load\" }\n",
        "[[service]]\nname = \"web2\"\nip = \"10.1.0.2\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"s1\"\n",
        "load = { source = \"PUSH\" }\n",
        "[[service]]\nname = \"web3\"\nip = \"10.1.0.3\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"s2\"\n",
        "load = { source = \"monitors\" }\n",
    )));
    let p = prometheus(&m, 0);
    assert_eq!(p.url, "http://127.0.0.1:9101/metrics");
    assert_eq!(p.interval, Duration::from_millis(250));
    assert_eq!(
        p.metric(LoadKind::Connections),
        Some("haproxy_backend_current_sessions{proxy=\"web\"}")
    );
    assert_eq!(p.metric(LoadKind::CustomLoad), Some("load"));
    assert_eq!(m.services[ServiceId::new(1)].load_source, LoadSource::Push);
    assert_eq!(
        m.services[ServiceId::new(2)].load_source,
        LoadSource::Monitors
    );
}

#[test]
fn load_source_errors_in_toml() {
    let svc = "[[service]]\nname = \"web1\"\nip = \"10.1.0.1\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"s1\"\n";
    // The load line is line 19 (12 lines of head, 6 of the service).
    let cases: &[(&str, &[&str])] = &[
        (
            "load = { source = \"snmp\" }",
            &["[[service]] web1: load: source: expected \"prometheus\", \"push\" or \"monitors\""],
        ),
        (
            "load = { source = \"prometheus\", connections = \"c\" }",
            &["a Prometheus load source needs load: url"],
        ),
        (
            "load = { source = \"prometheus\", url = \"http://h/\" }",
            &["needs at least one metric: load: connections, load: response_time"],
        ),
        (
            "load = { source = \"prometheus\", url = \"http://h/\", connections = \"c\", interval = \"5\" }",
            &["load: interval", "no unit"],
        ),
        (
            "load = { source = \"prometheus\", url = \"http://h/\", connections = \"c\", interval = \"2h\" }",
            &["load: interval: 2h is out of range"],
        ),
        (
            "load = { source = \"prometheus\", url = \"http://h/\", connections = \"c{\" }",
            &["load: connections: missing closing }"],
        ),
        (
            "load = { source = \"push\", url = \"http://h/\" }",
            &[
                "load: url applies only to source = \"prometheus\" (this service's load: source is \"push\")",
            ],
        ),
        (
            "load = { source = \"prometheus\", url = \"http://h/\", connections = \"c\", scrape = true }",
            &["unknown field `scrape`"],
        ),
        (
            "load = { url = \"http://h/\" }",
            &["missing field `source`"],
        ),
    ];
    for (load, parts) in cases {
        let text = with_toml_head(&format!("{svc}{load}\n"));
        one(toml_errors(&text), 19, parts);
    }
}

#[test]
fn load_sources_agree_between_syntaxes() {
    let a = conf(&with_sites(concat!(
        "add gslb service web1 10.1.0.1 HTTP 80 -siteName s1 -loadSource PROMETHEUS -loadURL http://127.0.0.1:9101/metrics -loadInterval 2 -connectionsMetric 'c{a=\"b\", c = \"d\"}' -responseTimeMetric rt\n",
        "add gslb service web2 10.1.0.2 HTTP 80 -siteName s2 -loadSource PUSH\n",
    )));
    let b = toml(&with_toml_head(concat!(
        "[[service]]\nname = \"web1\"\nip = \"10.1.0.1\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"s1\"\n",
        "load = { source = \"prometheus\", url = \"http://127.0.0.1:9101/metrics\", interval = \"2s\", connections = 'c{a=\"b\",c=\"d\"}', response_time = \"rt\" }\n",
        "[[service]]\nname = \"web2\"\nip = \"10.1.0.2\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"s2\"\nload = { source = \"push\" }\n",
    )));
    let (a, b) = (without_unchecked(a), without_unchecked(b));
    assert_eq!(a, b);
    // Selectors are stored in one canonical spelling.
    assert_eq!(
        prometheus(&a, 0).metric(LoadKind::Connections),
        Some("c{a=\"b\",c=\"d\"}")
    );
}

#[test]
fn service_figure_metrics_in_both_syntaxes() {
    let a = conf(&with_sites(concat!(
        "add gslb service web1 10.1.0.1 HTTP 80 -siteName s1 -loadSource PROMETHEUS -loadURL http://127.0.0.1:9101/metrics -cpuMetric 'vservice_cpu_percent{svc=\"web\"}' -memoryMetric vservice_memory_percent\n",
        "set gslb service web1 -requestsMetric haproxy_backend_http_requests_total -newSessionsMetric haproxy_backend_current_session_rate -healthyBackendsMetric 'haproxy_backend_active_servers{proxy=\"web\"}'\n",
        // A new figure alone is enough for a Prometheus source.
        "add gslb service web2 10.1.0.2 HTTP 80 -siteName s1 -loadSource PROMETHEUS -loadURL http://h/m -healthyBackendsMetric up\n",
    )));
    let b = toml(&with_toml_head(concat!(
        "[[service]]\nname = \"web1\"\nip = \"10.1.0.1\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"s1\"\n",
        "load = { source = \"prometheus\", url = \"http://127.0.0.1:9101/metrics\", cpu = 'vservice_cpu_percent{svc=\"web\"}', memory = \"vservice_memory_percent\", requests = \"haproxy_backend_http_requests_total\", new_sessions = \"haproxy_backend_current_session_rate\", healthy_backends = 'haproxy_backend_active_servers{proxy=\"web\"}' }\n",
        "[[service]]\nname = \"web2\"\nip = \"10.1.0.2\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"s1\"\n",
        "load = { source = \"prometheus\", url = \"http://h/m\", healthy_backends = \"up\" }\n",
    )));
    let (a, b) = (without_unchecked(a), without_unchecked(b));
    assert_eq!(a, b);
    let p = prometheus(&a, 0);
    assert_eq!(
        p.metric(LoadKind::Cpu),
        Some("vservice_cpu_percent{svc=\"web\"}")
    );
    assert_eq!(p.metric(LoadKind::Memory), Some("vservice_memory_percent"));
    assert_eq!(
        p.metric(LoadKind::Requests),
        Some("haproxy_backend_http_requests_total")
    );
    assert_eq!(
        p.metric(LoadKind::NewSessions),
        Some("haproxy_backend_current_session_rate")
    );
    assert_eq!(
        p.metric(LoadKind::HealthyBackends),
        Some("haproxy_backend_active_servers{proxy=\"web\"}")
    );
    for kind in LoadKind::ALL {
        assert_eq!(p.metric(kind), None, "{kind}");
    }
    let p = prometheus(&a, 1);
    assert_eq!(p.metric(LoadKind::HealthyBackends), Some("up"));
}

#[test]
fn service_figure_metric_errors_in_both_syntaxes() {
    let svc = "add gslb service web1 10.1.0.1 HTTP 80 -siteName s1";
    let cases: &[(&str, &[&str])] = &[
        (
            " -loadSource PROMETHEUS -loadURL http://h/m -cpuMetric '9cpu'",
            &["service \"web1\": -cpuMetric: \"9cpu\" is not a metric name"],
        ),
        (
            " -loadSource PROMETHEUS -loadURL http://h/m -requestsMetric rq{proxy=\"web\"}",
            &[
                "-requestsMetric: label proxy: expected a double-quoted value",
                "quote the whole selector in single quotes",
            ],
        ),
        (
            " -loadSource PROMETHEUS -loadURL http://h/m -healthyBackendsMetric 'up{a!=\"b\"}'",
            &["-healthyBackendsMetric: label a: only equality matchers"],
        ),
        (
            " -loadSource PROMETHEUS -loadURL http://h/m",
            &[
                "needs at least one metric: -connectionsMetric,",
                "-customLoadMetric, -cpuMetric, -memoryMetric, -requestsMetric, -newSessionsMetric, -healthyBackendsMetric",
            ],
        ),
        (
            " -loadSource PUSH -newSessionsMetric ns",
            &[
                "-newSessionsMetric applies only to -loadSource PROMETHEUS (this service's -loadSource is PUSH)",
            ],
        ),
    ];
    for (opts, parts) in cases {
        one(
            conf_errors(&with_sites(&format!("{svc}{opts}\n"))),
            3,
            parts,
        );
    }
    // On `set gslb service`, at that line.
    one(
        conf_errors(&with_sites(concat!(
            "add gslb service web1 10.1.0.1 HTTP 80 -siteName s1 -loadSource PROMETHEUS -loadURL http://h/m -connectionsMetric c\n",
            "set gslb service web1 -memoryMetric 'mem{'\n",
        ))),
        4,
        &["service \"web1\": -memoryMetric: missing closing }"],
    );

    let svc = "[[service]]\nname = \"web1\"\nip = \"10.1.0.1\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"s1\"\n";
    // The load line is line 19 (12 lines of head, 6 of the service).
    let cases: &[(&str, &[&str])] = &[
        (
            "load = { source = \"prometheus\", url = \"http://h/\", cpu = \"9cpu\" }",
            &["[[service]] web1: load: cpu: \"9cpu\" is not a metric name"],
        ),
        (
            "load = { source = \"prometheus\", url = \"http://h/\", memory = \"m{\" }",
            &["load: memory: missing closing }"],
        ),
        (
            "load = { source = \"prometheus\", url = \"http://h/\", requests = \"r x\" }",
            &["load: requests: unexpected \"x\" after the metric name"],
        ),
        (
            "load = { source = \"prometheus\", url = \"http://h/\", new_sessions = 'n{a=\"1\",a=\"2\"}' }",
            &["load: new_sessions: label a is given twice"],
        ),
        (
            "load = { source = \"prometheus\", url = \"http://h/\", healthy_backends = \"\" }",
            &["load: healthy_backends: \"\" is not a metric name"],
        ),
        (
            "load = { source = \"prometheus\", url = \"http://h/\" }",
            &[
                "load: custom_load, load: cpu, load: memory, load: requests, load: new_sessions, load: healthy_backends",
            ],
        ),
        (
            "load = { source = \"monitors\", healthy_backends = \"up\" }",
            &[
                "load: healthy_backends applies only to source = \"prometheus\" (this service's load: source is \"monitors\")",
            ],
        ),
    ];
    for (load, parts) in cases {
        one(
            toml_errors(&with_toml_head(&format!("{svc}{load}\n"))),
            19,
            parts,
        );
    }
}

#[test]
fn load_sources_on_remote_services_are_accepted() {
    // --local-site may make any site local at run time, so this is not
    // an error; only the local site's services are scraped.
    let m = conf(&with_sites(
        "add gslb service r 10.2.0.1 HTTP 80 -siteName s2 -loadSource PROMETHEUS -loadURL http://10.2.0.1:9101/ -connectionsMetric c\n",
    ));
    assert!(matches!(
        m.services[ServiceId::new(0)].load_source,
        LoadSource::Prometheus(_)
    ));
}

// -- sites: backup parents, trigger monitor; keepalive timeout

#[test]
fn backup_parent_lists() {
    let sites = "add gslb site p1 10.0.0.1\nadd gslb site p2 10.0.0.2\nadd gslb site p3 10.0.0.3\nadd gslb site p4 10.0.0.4\nadd gslb site p5 10.0.0.5\nadd gslb site p6 10.0.0.6\n";
    // Five is the most, in order; a later set replaces the list.
    let m = conf(&format!(
        "{sites}set gslb site p1 -backupParentlist p6 p5 p4 p3 p2\n"
    ));
    assert_eq!(
        m.sites[SiteId::new(0)].backup_parents,
        vec![
            SiteId::new(5),
            SiteId::new(4),
            SiteId::new(3),
            SiteId::new(2),
            SiteId::new(1)
        ]
    );
    let m = conf(&format!(
        "{sites}set gslb site p1 -backupParentlist p2 p3\nset gslb site p1 -backupParentlist p4\n"
    ));
    assert_eq!(m.sites[SiteId::new(0)].backup_parents, vec![SiteId::new(3)]);
    // Unset clears; set again after unset works.
    let m = conf(&format!(
        "{sites}set gslb site p1 -backupParentlist p2 p3\nunset gslb site p1 -backupParentlist\n"
    ));
    assert!(m.sites[SiteId::new(0)].backup_parents.is_empty());
    let m = conf(&format!(
        "{sites}set gslb site p1 -backupParentlist p2\nunset gslb site p1 -backupParentlist\nset gslb site p1 -backupParentlist p3\n"
    ));
    assert_eq!(m.sites[SiteId::new(0)].backup_parents, vec![SiteId::new(2)]);
    // On add too, naming a site added on an earlier line (seed 001; see
    // tests/backup_parents.rs for the ordering rule).
    let m = conf("add gslb site p2 10.0.0.2\nadd gslb site p1 10.0.0.1 -backupParentlist p2\n");
    assert_eq!(m.sites[SiteId::new(1)].backup_parents, vec![SiteId::new(0)]);
    one(
        conf_errors(&format!(
            "{sites}set gslb site p1 -backupParentlist p2 p2\n"
        )),
        7,
        &["backup parent \"p2\" is listed twice"],
    );
    one(
        conf_errors(&format!("{sites}unset gslb site p1 -backupParentlist p2\n")),
        7,
        &["unexpected value \"p2\" after -backupParentlist"],
    );
    one(
        conf_errors(&format!("{sites}unset gslb site p1 -publicIP\n")),
        7,
        &["unknown option -publicIP"],
    );
    one(
        conf_errors(&format!("{sites}set gslb site p1 -backupParentlist\n")),
        7,
        &["needs at least one value"],
    );
}

#[test]
fn trigger_monitor() {
    let m = conf(concat!(
        "add gslb site a 10.0.0.1 -triggerMonitor mepdown\n",
        "add gslb site b 10.0.0.2\n",
        "set gslb site b -triggerMonitor MEPDOWN_SVCDOWN\n",
        "add gslb site c 10.0.0.3 -triggerMonitor MEPDOWN\n",
        "set gslb site c -triggerMonitor ALWAYS\n",
    ));
    assert_eq!(
        m.sites[SiteId::new(0)].trigger_monitor,
        TriggerMonitor::MepDown
    );
    assert_eq!(
        m.sites[SiteId::new(1)].trigger_monitor,
        TriggerMonitor::MepDownSvcDown
    );
    assert_eq!(
        m.sites[SiteId::new(2)].trigger_monitor,
        TriggerMonitor::Always
    );
    one(
        conf_errors("add gslb site a 10.0.0.1\nset gslb site a -triggerMonitor NEVER\n"),
        2,
        &["-triggerMonitor: expected ALWAYS, MEPDOWN or MEPDOWN_SVCDOWN, found \"NEVER\""],
    );
    let t = toml(
        "version = 1\n[[site]]\nname = \"a\"\nip = \"10.0.0.1\"\ntrigger_monitor = \"mepdown\"\n",
    );
    assert_eq!(
        t.sites[SiteId::new(0)].trigger_monitor,
        TriggerMonitor::MepDown
    );
}

#[test]
fn keepalive_timeout_may_be_sub_second() {
    for (text, want) in [
        ("0.25", Duration::from_millis(250)),
        ("250 MSEC", Duration::from_millis(250)),
        ("1 MSEC", Duration::from_millis(1)),
        ("3", Duration::from_secs(3)),
    ] {
        let m = conf(&format!("set gslb parameter -MEPKeepAliveTimeout {text}\n"));
        assert_eq!(m.params.mep_keepalive_timeout, want, "{text}");
    }
    one(
        conf_errors("set gslb parameter -MEPKeepAliveTimeout 0\n"),
        1,
        &["-MEPKeepAliveTimeout", "out of range"],
    );
    let m = toml("version = 1\n[gslb]\nmep_keepalive_timeout = \"200ms\"\n");
    assert_eq!(m.params.mep_keepalive_timeout, Duration::from_millis(200));
}
