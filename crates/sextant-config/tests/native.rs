//! The native TOML syntax: strictness (unknown keys with their line),
//! error lines for each class of error, and agreement with the appliance
//! syntax.

use std::path::Path;
use std::time::Duration;

use sextant_config::{parse_appliance, parse_toml};
use sextant_core::{
    DnsQueryType, LbMethod, LdnsProbe, Model, MonitorId, MonitorKind, ServiceId, SiteId,
    TriggerMonitor, VServerId, ZoneId,
};

fn ok(text: &str) -> Model {
    match parse_toml(text, "t.toml") {
        Ok(m) => m,
        Err(e) => panic!("expected success, got:\n{e}"),
    }
}

fn errors(text: &str) -> Vec<(usize, String)> {
    errors_in(text, "t.toml")
}

/// The errors of `text` read as if it were `file`, asserting each is in `file`.
fn errors_in(text: &str, file: &str) -> Vec<(usize, String)> {
    match parse_toml(text, file) {
        Ok(_) => panic!("expected errors, the text parsed:\n{text}"),
        Err(e) => e
            .errors
            .iter()
            .map(|e| {
                assert_eq!(e.file, file);
                (e.line, e.message.clone())
            })
            .collect(),
    }
}

fn one_error(text: &str, line: usize, parts: &[&str]) {
    let errs = errors(text);
    assert_eq!(errs.len(), 1, "expected one error, got {errs:#?}");
    assert_eq!(errs[0].0, line, "wrong line: {errs:#?}");
    for p in parts {
        assert!(errs[0].1.contains(p), "message {:?} lacks {p:?}", errs[0].1);
    }
}

/// The example's path: its location file is found relative to it.
fn example_path() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/sextant.toml")
        .display()
        .to_string()
}

fn example() -> String {
    std::fs::read_to_string(example_path()).expect("example exists")
}

const BASE: &str = r#"version = 1

[[site]]
name = "s1"
ip = "10.0.0.1"

[[service]]
name = "svc1"
ip = "10.1.0.1"
port = 80
protocol = "HTTP"
site = "s1"
"#;

#[test]
fn minimal_files() {
    assert_eq!(ok("version = 1\n"), Model::default());
    let m = ok(BASE);
    assert_eq!(m.services[ServiceId::new(0)].site, SiteId::new(0));
    assert_eq!(m.local_site, None);
}

/// Injecting an unknown key into any table of the example, standard or
/// inline, is an error on exactly that line naming the key.
#[test]
fn unknown_key_in_every_table_is_rejected_with_its_line() {
    let text = example();
    let file = example_path();
    let errors = |text: &str| errors_in(text, &file);
    let lines: Vec<&str> = text.lines().collect();
    let mut tried = 0;
    for (i, l) in lines.iter().enumerate() {
        let trimmed = l.trim_start();
        // A standard table header: add the key on a new line below it.
        if trimmed.starts_with('[') && !trimmed.starts_with("[\"") {
            let mut v: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
            v.insert(i + 1, "bogus_key = 1".to_string());
            let errs = errors(&v.join("\n"));
            assert!(
                errs.iter()
                    .any(|(line, msg)| *line == i + 2 && msg.contains("bogus_key")),
                "header {l:?} (line {}): {errs:#?}",
                i + 1
            );
            tried += 1;
        }
        // Each inline table on the line.
        let mut from = 0;
        while let Some(pos) = l[from..].find("{ ") {
            let at = from + pos;
            let mut v: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
            v[i] = format!("{}{{ bogus_key = 1, {}", &l[..at], &l[at + 2..]);
            let errs = errors(&v.join("\n"));
            assert!(
                errs.iter()
                    .any(|(line, msg)| *line == i + 1 && msg.contains("bogus_key")),
                "inline table on line {}: {errs:#?}",
                i + 1
            );
            tried += 1;
            from = at + 2;
        }
    }
    assert!(tried >= 15, "only {tried} tables tried");

    // And at the top level.
    let with_top = text.replacen("version = 1", "version = 1\nbogus_key = 1", 1);
    let errs = errors(&with_top);
    let line = text
        .lines()
        .position(|l| l.starts_with("version"))
        .expect("version line")
        + 2;
    assert!(
        errs.iter()
            .any(|(l, m)| *l == line && m.contains("unknown top-level key `bogus_key`")),
        "{errs:#?}"
    );
}

#[test]
fn version() {
    one_error(
        "[[site]]\nname = \"a\"\nip = \"10.0.0.1\"\n",
        1,
        &["missing `version = 1`"],
    );
    one_error(
        "\n\nversion = 2\n[[site]]\nbogus = 1\n",
        3,
        &["schema version 1, found 2"],
    );
    one_error("version = \"1\"\n", 1, &["found a string"]);
}

#[test]
fn syntax_errors_carry_their_line() {
    let errs = errors("version = 1\n\n[server]\ndns_listen = [\"127.0.0.1:53\"\n");
    assert!(!errs.is_empty());
    assert!(
        errs.iter()
            .all(|(l, m)| *l >= 4 && m.starts_with("TOML syntax:")),
        "{errs:#?}"
    );
    one_error(
        "version = 1\nversion = 1\n",
        2,
        &["TOML syntax", "duplicate key"],
    );
}

#[test]
fn table_shape_errors() {
    one_error(
        "version = 1\n[site]\nname = \"a\"\nip = \"10.0.0.1\"\n",
        2,
        &["`site` must be an array of tables", "[[site]]"],
    );
    one_error(
        "version = 1\n\n[[site]]\nname = \"a\"\n",
        3,
        &["[[site]]: missing field `ip`"],
    );
    one_error(
        "version = 1\n[[site]]\nname = \"a\"\nip = 10\n",
        4,
        &["invalid type: integer `10`, expected a string"],
    );
    one_error(
        "version = 1\nsites = []\n",
        2,
        &["unknown top-level key `sites`"],
    );
}

#[test]
fn reference_errors_point_at_the_reference() {
    let text = format!(
        "{BASE}monitors = [\"nope\"]\n\n[[service]]\nname = \"svc2\"\nip = \"10.1.0.2\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"ghost\"\n\n[[vserver]]\nname = \"vs\"\nprotocol = \"HTTP\"\nservices = [\n  {{ name = \"svc1\" }},\n  {{ name = \"svc9\" }},\n]\nbackup_vserver = \"vs\"\n"
    );
    let errs = errors(&text);
    let want = [
        (
            13,
            "[[service]] svc1: monitor \"nope\" is not defined (add a [[monitor]] table with name = \"nope\")",
        ),
        (
            20,
            "[[service]] svc2: site \"ghost\" is not defined (add a [[site]] table with name = \"ghost\")",
        ),
        (27, "[[vserver]] vs: service \"svc9\" is not defined"),
        (29, "cannot be its own backup vserver"),
    ];
    assert_eq!(errs.len(), want.len(), "{errs:#?}");
    for ((line, msg), (wl, wm)) in errs.iter().zip(want) {
        assert_eq!(*line, wl, "{errs:#?}");
        assert!(msg.contains(wm), "{msg:?} lacks {wm:?}");
    }
}

#[test]
fn value_errors_point_at_the_key() {
    one_error(
        &BASE.replace("port = 80", "port = 0"),
        10,
        &["[[service]] svc1: port", "1 to 65535"],
    );
    one_error(
        &BASE.replace("\"10.1.0.1\"", "\"10.1.0\""),
        9,
        &["ip: expected an IPv4 or IPv6 address"],
    );
    one_error(
        &BASE.replace("\"HTTP\"", "\"HTTP2\""),
        11,
        &["unknown protocol \"HTTP2\""],
    );
    one_error(
        "version = 1\n[gslb]\nmep_keepalive_timeout = \"10\"\n",
        3,
        &["mep_keepalive_timeout", "no unit"],
    );
    one_error(
        "version = 1\n[gslb]\nldns_probe_order = [\"ping\", \"icmp\"]\n",
        3,
        &["expected \"ping\", \"dns\" or \"tcp\""],
    );
    one_error(
        "version = 1\n[server]\ndns_listen = [\"127.0.0.1\"]\n",
        3,
        &["expected IP:PORT"],
    );
    one_error(
        "version = 1\n[server]\nlocal_site = \"nowhere\"\n",
        3,
        &["[server] local_site: site \"nowhere\" is not defined"],
    );
    one_error(
        "version = 1\n[[site]]\nname = \"a\"\nip = \"10.0.0.1\"\ntrigger_monitor = \"sometimes\"\n",
        5,
        &["trigger_monitor", "\"always\""],
    );
}

#[test]
fn monitor_errors() {
    one_error(
        "version = 1\n[[monitor]]\nname = \"m\"\ntype = \"tcp\"\ninterval = \"1s\"\nresponse_timeout = \"1s\"\n",
        6,
        &["monitor \"m\": response_timeout (1s) must be shorter than interval (1s)"],
    );
    one_error(
        "version = 1\n[[monitor]]\nname = \"m\"\ntype = \"tcp\"\nrequest = \"GET /\"\n",
        5,
        &["key `request` does not apply to monitors of type tcp"],
    );
    one_error(
        "version = 1\n[[monitor]]\nname = \"m\"\ntype = \"dns\"\n",
        3,
        &["needs `query`"],
    );
    one_error(
        "version = 1\n[[monitor]]\nname = \"m\"\ntype = \"smtp\"\n",
        4,
        &["unknown monitor type \"smtp\""],
    );
    one_error(
        "version = 1\n[[monitor]]\nname = \"m\"\ntype = \"http\"\nstatus_codes = [200, \"600\"]\n",
        5,
        &["status_codes", "\"600\""],
    );
}

#[test]
fn sites_and_topology() {
    let m = ok(r#"version = 1
[server]
local_site = "p1"
[[site]]
name = "c1"
ip = "10.0.1.1"
parent = "p1"
[[site]]
name = "p1"
ip = "10.0.0.1"
backup_parents = ["p2"]
[[site]]
name = "p2"
ip = "10.0.0.2"
metric_exchange = false
session_exchange = false
trigger_monitor = "MEPDOWN_SVCDOWN"
"#);
    assert_eq!(m.sites[SiteId::new(0)].parent, Some(SiteId::new(1)));
    assert!(
        !m.sites[SiteId::new(0)].nw_metric_exchange && !m.sites[SiteId::new(0)].session_exchange
    );
    assert_eq!(m.sites[SiteId::new(1)].backup_parents, vec![SiteId::new(2)]);
    assert_eq!(m.local_site, Some(SiteId::new(1)));
    assert!(!m.sites[SiteId::new(2)].metric_exchange && !m.sites[SiteId::new(2)].session_exchange);
    assert!(m.sites[SiteId::new(2)].nw_metric_exchange);
    assert_eq!(
        m.sites[SiteId::new(2)].trigger_monitor,
        TriggerMonitor::MepDownSvcDown
    );

    one_error(
        "version = 1\n[[site]]\nname = \"p\"\nip = \"10.0.0.1\"\n[[site]]\nname = \"c\"\nip = \"10.0.0.2\"\nparent = \"p\"\nsession_exchange = true\n",
        9,
        &["always off on child sites", "session_exchange"],
    );
}

#[test]
fn duplicates_and_domains() {
    let text = r#"version = 1
[[vserver]]
name = "a"
protocol = "HTTP"
domains = [{ name = "WWW.example.com." }]
[[vserver]]
name = "A"
protocol = "HTTP"
domains = [{ name = "www.example.com" }, { name = "bad_.example..com" }]
"#;
    let errs = errors(text);
    let lines: Vec<usize> = errs.iter().map(|e| e.0).collect();
    assert_eq!(lines, vec![7, 9, 9], "{errs:#?}");
    assert!(
        errs[0]
            .1
            .contains("vserver \"A\" is already defined on line 3")
    );
    assert!(
        errs[1]
            .1
            .contains("already bound to vserver \"a\" (line 5)")
    );
    assert!(errs[2].1.contains("empty label"));
}

#[test]
fn everything_round_trips_into_the_model() {
    let m = ok(r#"version = 1
[server]
dns_listen = ["127.0.0.1:5353", "[::1]:5353", "127.0.0.1:5353"]
api_listen = "127.0.0.1:8080"

[gslb]
mep_keepalive_timeout = "500ms"
rtt_tolerance = "10ms"
ldns_v4_mask = 24
ldns_v6_mask = 56
ldns_entry_timeout = "3m"
ldns_probe_order = ["tcp", "ping"]
drop_ldns_requests = true
automatic_config_sync = true
mep_port = 13011
mep_secure_port = 13009
ldns_probe_interval = "1.5s"
ldns_probe_timeout = "1s"
ldns_dns = { interval = "10s", response_timeout = "5s", dest_port = 5399, retries = 2 }

[[monitor]]
name = "d"
type = "DNS"
query = "Health.Example.com."
query_type = "AAAA"
expect_addresses = ["2001:db8::1"]
expect_rcodes = [0, "NXDOMAIN"]
dest_port = 5353

[[monitor]]
name = "u"
type = "udp"
send = "ping"
receive = "pong"

[[monitor]]
name = "h"
type = "https"
body_contains = "ok"

[[vserver]]
name = "v"
protocol = "TCP"
lb_method = "sourceiphash"
hash_v4_mask = 16
hash_v6_mask = 48
persistence = { type = "SOURCEIP", timeout = "90s", v6_mask = 64 }

[[vserver]]
name = "w"
protocol = "TCP"
persistence = { type = "NONE" }

[[zone]]
apex = "Example.org."
ns = ["ns1.example.org"]
"#);
    assert_eq!(m.dns_listen.len(), 2);
    assert_eq!(m.api_listen, Some("127.0.0.1:8080".parse().expect("addr")));
    let p = &m.params;
    assert_eq!(p.mep_keepalive_timeout, Duration::from_millis(500));
    assert_eq!(p.rtt_tolerance, Duration::from_millis(10));
    assert_eq!((p.ldns_v4_mask, p.ldns_v6_mask), (24, 56));
    assert_eq!(p.ldns_entry_timeout, Duration::from_secs(180));
    assert_eq!(p.ldns_probe_order, vec![LdnsProbe::DnsTcp, LdnsProbe::Ping]);
    assert!(p.drop_ldns_requests && p.automatic_config_sync);
    assert_eq!((p.mep_port, p.mep_secure_port), (13011, 13009));
    assert_eq!(
        p.ldns_monitor(LdnsProbe::Ping).interval,
        Duration::from_millis(1500)
    );
    let dns = p.ldns_monitor(LdnsProbe::DnsUdp);
    assert_eq!(
        (dns.interval, dns.timeout, dns.dest_port, dns.retries),
        (
            Duration::from_secs(10),
            Duration::from_secs(5),
            Some(5399),
            2
        )
    );
    match &m.monitors[MonitorId::new(0)].kind {
        MonitorKind::Dns(c) => {
            assert_eq!(c.query, "health.example.com");
            assert_eq!(c.query_type, DnsQueryType::Aaaa);
            assert_eq!(c.expect_rcodes, vec![0, 3]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(m.monitors[MonitorId::new(0)].dest_port, Some(5353));
    assert!(matches!(&m.monitors[MonitorId::new(1)].kind, MonitorKind::Udp(c) if c.send == "ping"));
    assert!(
        matches!(&m.monitors[MonitorId::new(2)].kind, MonitorKind::Https(c) if c.request == "HEAD /" && c.body_contains.as_deref() == Some("ok"))
    );
    let v = &m.vservers[VServerId::new(0)];
    assert_eq!(v.method, LbMethod::SourceIpHash);
    assert_eq!((v.hash_v4_mask, v.hash_v6_mask), (16, 48));
    let per = v.persistence.expect("persistence");
    assert_eq!(
        (per.timeout, per.v4_mask, per.v6_mask),
        (Duration::from_secs(90), 32, 64)
    );
    assert!(m.vservers[VServerId::new(1)].persistence.is_none());
    assert_eq!(m.zones[ZoneId::new(0)].apex, "example.org");
    assert_eq!(
        m.zones[ZoneId::new(0)].soa.contact,
        "hostmaster.example.org"
    );
}

/// Small configurations written both ways build the same model, including
/// defaults the two front ends fill in separately.
#[test]
fn agrees_with_the_appliance_syntax() {
    let pairs: &[(&str, &str)] = &[
        (
            "add lb monitor m HTTP\nadd lb monitor t TCP -interval 500 MSEC -resptimeout 0.2\n",
            "version = 1\n[[monitor]]\nname = \"m\"\ntype = \"http\"\n[[monitor]]\nname = \"t\"\ntype = \"tcp\"\ninterval = \"500ms\"\nresponse_timeout = \"200ms\"\n",
        ),
        (
            "add lb monitor e HTTP-ECV -send \"GET /x\" -recv ok\n",
            "version = 1\n[[monitor]]\nname = \"e\"\ntype = \"http\"\nrequest = \"GET /x\"\nstatus_codes = [\"100-599\"]\nbody_contains = \"ok\"\n",
        ),
        (
            "add gslb vserver v HTTP -persistenceType SOURCEIP\nbind gslb vserver v -domainName a.example\n",
            "version = 1\n[[vserver]]\nname = \"v\"\nprotocol = \"HTTP\"\npersistence = { type = \"SOURCEIP\" }\ndomains = [{ name = \"a.example\" }]\n",
        ),
        (
            "add gslb site p 10.0.0.1\nadd gslb site c 10.0.0.2 -parentSite p\n",
            "version = 1\n[[site]]\nname = \"p\"\nip = \"10.0.0.1\"\n[[site]]\nname = \"c\"\nip = \"10.0.0.2\"\nparent = \"p\"\n",
        ),
        (
            "add dns nsRec example.com ns1.example.com\n",
            "version = 1\n[[zone]]\napex = \"example.com\"\nns = [\"ns1.example.com\"]\n",
        ),
    ];
    for (conf, toml) in pairs {
        let a = parse_appliance(conf, "t.conf").expect("conf parses");
        let b = parse_toml(toml, "t.toml").expect("toml parses");
        assert_eq!(a, b, "\n{conf}\n---\n{toml}");
    }
}
