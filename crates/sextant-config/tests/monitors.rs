//! Monitors as saved appliance configurations carry them: the built-in
//! monitors, the options `-downTime`, `-reverse`, `-destIP`,
//! `-customHeaders`, `-deviation`, `-transparent`, DNS `-queryType`, and
//! the escapes in quoted strings; the same in the native syntax.

use std::net::IpAddr;
use std::time::Duration;

use sextant_config::{parse_appliance, parse_toml};
use sextant_core::{DnsQueryType, Model, Monitor, MonitorKind};

fn ok(text: &str) -> Model {
    match parse_appliance(text, "t.conf") {
        Ok(m) => m,
        Err(e) => panic!("expected success, got:\n{e}"),
    }
}

fn ok_toml(text: &str) -> Model {
    match parse_toml(text, "t.toml") {
        Ok(m) => m,
        Err(e) => panic!("expected success, got:\n{e}"),
    }
}

/// Asserts exactly one error, for `file` on `line`, containing each of `parts`.
fn one_error(result: Result<Model, sextant_config::ConfigErrors>, line: usize, parts: &[&str]) {
    let e = match result {
        Ok(_) => panic!("expected an error, the text parsed"),
        Err(e) => e,
    };
    assert_eq!(e.errors.len(), 1, "expected one error, got {:#?}", e.errors);
    assert_eq!(e.errors[0].line, line, "wrong line: {:#?}", e.errors);
    for p in parts {
        assert!(
            e.errors[0].message.contains(p),
            "message {:?} lacks {p:?}",
            e.errors[0].message
        );
    }
}

const BASE: &str = "\
add gslb site s1 10.0.0.1 -siteType LOCAL
add gslb service svc1 10.1.0.1 HTTP 80 -siteName s1
add gslb service svc2 10.1.0.2 DNS 53 -siteName s1
";

fn monitor<'m>(m: &'m Model, name: &str) -> &'m Monitor {
    m.monitor(m.monitor_by_name(name).expect("monitor exists"))
}

fn bound(m: &Model, service: &str) -> Vec<String> {
    let s = m.service(m.service_by_name(service).expect("service"));
    s.monitors
        .iter()
        .map(|id| m.monitor(*id).name.clone())
        .collect()
}

#[test]
fn built_in_monitors_bind_without_add_and_set_changes_them() {
    let m = ok(&format!(
        "{BASE}\
set lb monitor http HTTP -respCode 200 -httpRequest \"HEAD /\" -customHeaders \"Host: www.example.com\\r\\n\" -LRTM DISABLED -deviation 0 -interval 5 -resptimeout 2 -downTime 30
set lb monitor ping PING -deviation 0 -interval 10 -resptimeout 2 -downTime 30
bind gslb service svc1 -monitorName http
bind gslb service svc1 -monitorName tcp-default
bind gslb service svc2 -monitorName dns
bind gslb service svc2 -monitorName ping
"
    ));
    assert_eq!(bound(&m, "svc1"), ["http", "tcp-default"]);
    assert_eq!(bound(&m, "svc2"), ["dns", "ping"]);
    let http = monitor(&m, "http");
    match &http.kind {
        MonitorKind::Http(c) => {
            assert_eq!(c.request, "HEAD /");
            assert_eq!(c.status_codes, vec![(200, 200)]);
            assert_eq!(c.custom_headers, "Host: www.example.com\r\n");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(http.down_time, Some(Duration::from_secs(30)));
    assert_eq!(monitor(&m, "ping").interval, Duration::from_secs(10));
    assert_eq!(monitor(&m, "ping").kind, MonitorKind::Ping);
    assert_eq!(monitor(&m, "tcp-default").kind, MonitorKind::Tcp);
    match &monitor(&m, "dns").kind {
        MonitorKind::Dns(c) => {
            assert_eq!(c.query, "");
            assert_eq!(c.query_type, DnsQueryType::A);
            assert_eq!(
                c.expect_addresses,
                vec!["127.0.0.1".parse::<IpAddr>().unwrap()]
            );
        }
        other => panic!("{other:?}"),
    }
    // Unused built-ins are not in the model.
    assert!(m.monitor_by_name("https").is_none());
    assert_eq!(m.monitors.len(), 4);
}

#[test]
fn a_saved_file_may_list_the_built_in_monitors_with_add() {
    let m = ok(&format!(
        "{BASE}\
add lb monitor ping-default PING
add lb monitor tcp-default TCP
add lb monitor arp ARP
add lb monitor nd6 ND6
add lb monitor ping PING -LRTM DISABLED
add lb monitor tcp TCP -LRTM DISABLED
add lb monitor http HTTP -LRTM DISABLED
add lb monitor tcp-ecv TCP-ECV -LRTM DISABLED
add lb monitor http-ecv HTTP-ECV -LRTM DISABLED
add lb monitor udp-ecv UDP-ECV -LRTM DISABLED
add lb monitor dns DNS -query . -queryType Address -LRTM DISABLED -IPAddress 127.0.0.1
add lb monitor dns-tcp DNS-TCP -LRTM DISABLED -query . -queryType Address -IPAddress 127.0.0.1
add lb monitor https HTTP -LRTM DISABLED -secure YES
add lb monitor https-ecv HTTP-ECV -LRTM DISABLED -secure YES
add lb monitor tcps TCP -LRTM DISABLED -secure YES
bind gslb service svc1 -monitorName https
"
    ));
    assert!(matches!(monitor(&m, "https").kind, MonitorKind::Https(_)));
    assert!(matches!(
        monitor(&m, "https-ecv").kind,
        MonitorKind::Https(_)
    ));
    // The ones Sextant cannot probe are accepted with a warning each.
    for (name, ty) in [
        ("arp", "ARP"),
        ("nd6", "ND6"),
        ("tcp-ecv", "TCP-ECV"),
        ("dns-tcp", "DNS-TCP"),
        ("tcps", "TCP"),
    ] {
        let said = format!("monitor \"{name}\" (type {ty}) is accepted but has no effect");
        assert!(
            m.warnings.iter().any(|w| w.contains(&said)),
            "{said}: {:#?}",
            m.warnings
        );
        assert!(m.monitor_by_name(name).is_none());
    }
}

#[test]
fn binding_a_monitor_sextant_cannot_probe_is_an_error() {
    one_error(
        parse_appliance(
            &format!("{BASE}bind gslb service svc1 -monitorName arp\n"),
            "t.conf",
        ),
        4,
        &["built-in monitor \"arp\" (type ARP) cannot be bound", "ARP"],
    );
    one_error(
        parse_appliance(
            &format!(
                "{BASE}set lb monitor tcp-ecv TCP-ECV -send x -interval 10\nbind gslb service svc1 -monitorName tcp-ecv\n"
            ),
            "t.conf",
        ),
        5,
        &[
            "monitor \"tcp-ecv\" (line 4, type TCP-ECV) cannot be bound",
            "TCP-ECV probe",
        ],
    );
    one_error(
        parse_appliance(
            &format!("{BASE}add lb monitor mine ND6\nbind lb monitor mine svc1\n"),
            "t.conf",
        ),
        5,
        &["monitor \"mine\"", "neighbour discovery"],
    );
    one_error(
        parse_toml(
            "version = 1\n[server]\nlocal_site = \"s1\"\n[[site]]\nname = \"s1\"\nip = \"10.0.0.1\"\n[[service]]\nname = \"svc1\"\nip = \"10.1.0.1\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"s1\"\nmonitors = [\"arp\"]\n",
            "t.toml",
        ),
        13,
        &["built-in monitor \"arp\""],
    );
}

#[test]
fn a_built_in_name_cannot_be_added_with_another_type() {
    one_error(
        parse_appliance(&format!("{BASE}add lb monitor http TCP\n"), "t.conf"),
        4,
        &["built-in monitor of type HTTP", "set lb monitor http HTTP"],
    );
    one_error(
        parse_appliance(
            &format!("{BASE}set lb monitor http TCP -interval 10\n"),
            "t.conf",
        ),
        4,
        &["has type HTTP, not TCP"],
    );
}

#[test]
fn the_new_options_work_on_add_and_set() {
    let m = ok(&format!(
        "{BASE}\
add lb monitor mon-web HTTP-ECV -send \"GET /health HTTP/1.1\\r\\nHost: app.example.com\\r\\n\\r\\n\" -recv OK -LRTM DISABLED -destIP 10.1.0.5 -destPort 8080 -reverse YES -transparent NO
add lb monitor mon-dns DNS -query . -queryType Address -LRTM DISABLED -IPAddress 127.0.0.1
add lb monitor mon-v6 DNS -query www.example.com -queryType IPv6
add lb monitor mon-zone DNS -query example.com -queryType Zone
add lb monitor mon-tcp TCP -downTime 500 MSEC -interval 10
set lb monitor mon-tcp -destIP ::1 -reverse NO
set lb monitor mon-web HTTP-ECV -destIP 0 -destPort 0
"
    ));
    let web = monitor(&m, "mon-web");
    match &web.kind {
        MonitorKind::Http(c) => {
            assert_eq!(
                c.request,
                "GET /health HTTP/1.1\r\nHost: app.example.com\r\n\r\n"
            );
            assert_eq!(c.body_contains.as_deref(), Some("OK"));
        }
        other => panic!("{other:?}"),
    }
    assert!(web.reverse);
    // `set ... -destIP 0 -destPort 0`: back to the bound service's.
    assert_eq!((web.dest_ip, web.dest_port), (None, None));
    let tcp = monitor(&m, "mon-tcp");
    assert_eq!(tcp.down_time, Some(Duration::from_millis(500)));
    assert_eq!(tcp.dest_ip, Some("::1".parse().unwrap()));
    assert!(!tcp.reverse);
    let qtype = |name| match &monitor(&m, name).kind {
        MonitorKind::Dns(c) => (c.query.clone(), c.query_type),
        other => panic!("{other:?}"),
    };
    assert_eq!(qtype("mon-dns"), (String::new(), DnsQueryType::A));
    assert_eq!(
        qtype("mon-v6"),
        ("www.example.com".into(), DnsQueryType::Aaaa)
    );
    assert_eq!(qtype("mon-zone"), ("example.com".into(), DnsQueryType::Soa));
    // -transparent NO and -deviation 0 are the defaults: no warning.
    assert!(
        !m.warnings.iter().any(|w| w.contains("-transparent")),
        "{:#?}",
        m.warnings
    );

    let m = ok(&format!(
        "{BASE}add lb monitor m TCP -deviation 20 MSEC -transparent YES -destIP 10.9.0.1\n"
    ));
    for opt in ["-deviation", "-transparent"] {
        assert!(
            m.warnings
                .iter()
                .any(|w| w.starts_with("t.conf:4: ") && w.contains(&format!("{opt} is accepted"))),
            "{opt}: {:#?}",
            m.warnings
        );
    }
}

#[test]
fn bad_option_values_are_reported_with_their_line() {
    for (line, want) in [
        (
            "add lb monitor m TCP -downTime 0",
            "-downTime must be greater than zero",
        ),
        ("add lb monitor m TCP -destIP 10.0.0", "-destIP"),
        ("add lb monitor m TCP -reverse MAYBE", "-reverse"),
        (
            "add lb monitor m DNS -query a.example -queryType MX",
            "expected Address (A), IPv6 (AAAA) or Zone (SOA)",
        ),
        (
            "add lb monitor m HTTP -customHeaders \"no colon here\\r\\n\"",
            "is not a header line",
        ),
        (
            "add lb monitor m HTTP-ECV -customHeaders \"X: y\"",
            "-customHeaders",
        ),
        (
            "add lb monitor m TCP -interval 10\nset lb monitor m -secure YES",
            "TLS-only probe",
        ),
    ] {
        let text = format!("{BASE}{line}\n");
        let at = 3 + line.lines().count();
        one_error(parse_appliance(&text, "t.conf"), at, &[want]);
    }
}

#[test]
fn native_syntax_has_the_same_options() {
    let m = ok_toml(
        r#"version = 1
[server]
local_site = "s1"
[[site]]
name = "s1"
ip = "10.0.0.1"
[[monitor]]
name = "web"
type = "http"
request = "GET /health"
custom_headers = "Host: www.example.com\r\n"
dest_ip = "10.1.0.5"
dest_port = 8080
down_time = "2s"
reverse = true
[[monitor]]
name = "zone"
type = "dns"
query = "example.com"
query_type = "SOA"
[[service]]
name = "svc1"
ip = "10.1.0.1"
port = 80
protocol = "HTTP"
site = "s1"
monitors = ["web", "http"]
"#,
    );
    let web = monitor(&m, "web");
    assert_eq!(web.dest_ip, Some("10.1.0.5".parse().unwrap()));
    assert_eq!(web.dest_port, Some(8080));
    assert_eq!(web.down_time, Some(Duration::from_secs(2)));
    assert!(web.reverse);
    match &web.kind {
        MonitorKind::Http(c) => assert_eq!(c.custom_headers, "Host: www.example.com\r\n"),
        other => panic!("{other:?}"),
    }
    // The built-in http monitor is there for the binding.
    assert_eq!(bound(&m, "svc1"), ["web", "http"]);
    assert!(
        matches!(&monitor(&m, "zone").kind, MonitorKind::Dns(c) if c.query_type == DnsQueryType::Soa)
    );

    let bad = |extra: &str, line: usize, want: &str| {
        one_error(
            parse_toml(
                &format!("version = 1\n[[monitor]]\nname = \"m\"\ntype = \"tcp\"\n{extra}\n"),
                "t.toml",
            ),
            line,
            &[want],
        );
    };
    bad("down_time = \"0s\"", 5, "down_time");
    bad("dest_ip = \"nope\"", 5, "dest_ip");
    bad("custom_headers = \"X: y\"", 5, "custom_headers");
}

#[test]
fn the_built_in_ldns_monitors_as_a_saved_file_writes_them() {
    let m = ok(&format!(
        "{BASE}\
add lb monitor ldns-ping LDNS-PING -LRTM DISABLED -deviation 0 -interval 5 -resptimeout 4
add lb monitor ldns-dns LDNS-DNS -query . -queryType Address -LRTM DISABLED -deviation 0 -interval 6 -resptimeout 3 -downTime 20
set lb monitor ldns-tcp LDNS-TCP -interval 7 -resptimeout 3
"
    ));
    assert_eq!(m.params.ldns_ping.timeout, Duration::from_secs(4));
    assert_eq!(m.params.ldns_dns.interval, Duration::from_secs(6));
    assert_eq!(m.params.ldns_tcp.interval, Duration::from_secs(7));
    assert!(
        m.warnings
            .iter()
            .any(|w| w.starts_with("t.conf:5: -downTime on a built-in LDNS monitor")),
        "{:#?}",
        m.warnings
    );
    one_error(
        parse_appliance(
            &format!("{BASE}add lb monitor ldns-ping LDNS-PING -query .\n"),
            "t.conf",
        ),
        4,
        &["a PING probe sends no query"],
    );
}
