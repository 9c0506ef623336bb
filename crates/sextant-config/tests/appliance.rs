//! The appliance command syntax: what it accepts, and the file:line and
//! wording of each class of error.

use std::net::IpAddr;
use std::time::Duration;

use sextant_config::parse_appliance;
use sextant_core::{
    DnsQueryType, DomainId, LbMethod, LdnsProbe, Model, MonitorId, MonitorKind, ServiceId,
    ServiceProtocol, SiteId, SiteKind, TriggerMonitor, VServerId, ZoneId,
};

fn ok(text: &str) -> Model {
    match parse_appliance(text, "t.conf") {
        Ok(m) => m,
        Err(e) => panic!("expected success, got:\n{e}"),
    }
}

/// The errors as `(line, message)`, asserting each is for t.conf.
fn errors(text: &str) -> Vec<(usize, String)> {
    match parse_appliance(text, "t.conf") {
        Ok(_) => panic!("expected errors, the text parsed"),
        Err(e) => e
            .errors
            .iter()
            .map(|e| {
                assert_eq!(e.file, "t.conf");
                (e.line, e.message.clone())
            })
            .collect(),
    }
}

/// Asserts exactly one error, on `line`, containing every one of `parts`.
fn one_error(text: &str, line: usize, parts: &[&str]) {
    let errs = errors(text);
    assert_eq!(errs.len(), 1, "expected one error, got {errs:#?}");
    assert_eq!(errs[0].0, line, "wrong line: {errs:#?}");
    for p in parts {
        assert!(errs[0].1.contains(p), "message {:?} lacks {p:?}", errs[0].1);
    }
}

const BASE: &str = "\
add gslb site s1 10.0.0.1 -siteType LOCAL
add gslb site s2 10.0.0.2
add gslb service svc1 10.1.0.1 HTTP 80 -siteName s1
add gslb service svc2 10.2.0.1 HTTP 80 -siteName s2
add gslb vserver vs1 HTTP
bind gslb vserver vs1 -serviceName svc1
";

fn ip(s: &str) -> IpAddr {
    s.parse().expect("ip")
}

#[test]
fn empty_file_is_valid() {
    let m = ok("");
    assert_eq!(m, Model::default());
    let m = ok("# only a comment\n\n   \n");
    assert!(m.sites.is_empty() && m.services.is_empty());
}

#[test]
fn base_and_defaults() {
    let m = ok(BASE);
    assert_eq!(m.local_site, Some(SiteId::new(0)));
    assert_eq!(m.sites[SiteId::new(0)].kind, SiteKind::Local);
    assert_eq!(m.sites[SiteId::new(1)].kind, SiteKind::Remote);
    let vs = &m.vservers[VServerId::new(0)];
    assert_eq!(vs.method, LbMethod::LeastConnection);
    assert_eq!(vs.protocol, ServiceProtocol::Http);
    assert_eq!(vs.bindings.len(), 1);
    assert_eq!(vs.bindings[0].weight, 1);
    assert!(vs.persistence.is_none());
    assert_eq!(m.services[ServiceId::new(1)].site, SiteId::new(1));
}

#[test]
fn display_format() {
    let err = parse_appliance("bogus\nadd gslb site\n", "site.conf").unwrap_err();
    let text = err.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(
        lines[0].starts_with("site.conf:1: unknown command \"bogus\""),
        "{text}"
    );
    assert!(
        lines[1].starts_with("site.conf:2: add gslb site: missing NAME IP"),
        "{text}"
    );
    assert_eq!(err.errors[0].to_string(), lines[0]);
}

#[test]
fn quoting_and_comments() {
    let m = ok(concat!(
        "# comment line\n",
        "add lb monitor \"my mon\" HTTP -httpRequest \"GET /a \\\"b\\\" \\\\ c\" # trailing comment\n",
        "add lb monitor 'raw' HTTP-ECV -send 'GET /x \\n' -recv \"#not a comment\"\n",
        "add gslb site vs#1 10.0.0.1   # '#' inside a word is part of it\n",
    ));
    assert_eq!(m.monitors[MonitorId::new(0)].name, "my mon");
    match &m.monitors[MonitorId::new(0)].kind {
        MonitorKind::Http(c) => assert_eq!(c.request, r#"GET /a "b" \ c"#),
        other => panic!("{other:?}"),
    }
    match &m.monitors[MonitorId::new(1)].kind {
        MonitorKind::Http(c) => {
            assert_eq!(c.request, "GET /x \\n");
            assert_eq!(c.body_contains.as_deref(), Some("#not a comment"));
            assert_eq!(c.status_codes, vec![(100, 599)]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(m.sites[SiteId::new(0)].name, "vs#1");
}

#[test]
fn unterminated_quote() {
    one_error(
        "add lb monitor m HTTP -httpRequest \"GET /\n",
        1,
        &["unterminated quoted string", "column 36"],
    );
}

#[test]
fn sub_second_intervals() {
    let m = ok(concat!(
        "add lb monitor fast TCP -interval 500 MSEC -resptimeout 200 MSEC\n",
        "add lb monitor frac PING -interval 0.5 -resptimeout 0.25 sec\n",
        "add lb monitor mins HTTP -interval 1 MIN -resptimeout 2\n",
        "set gslb parameter -MEPKeepAliveTimeout 0.5\n",
    ));
    assert_eq!(
        m.monitors[MonitorId::new(0)].interval,
        Duration::from_millis(500)
    );
    assert_eq!(
        m.monitors[MonitorId::new(0)].response_timeout,
        Duration::from_millis(200)
    );
    assert_eq!(
        m.monitors[MonitorId::new(1)].interval,
        Duration::from_millis(500)
    );
    assert_eq!(
        m.monitors[MonitorId::new(1)].response_timeout,
        Duration::from_millis(250)
    );
    assert_eq!(
        m.monitors[MonitorId::new(2)].interval,
        Duration::from_secs(60)
    );
    assert_eq!(
        m.monitors[MonitorId::new(2)].response_timeout,
        Duration::from_secs(2)
    );
    assert_eq!(m.params.mep_keepalive_timeout, Duration::from_millis(500));
    let m = ok("set gslb parameter -MEPKeepAliveTimeout 300 MSEC\n");
    assert_eq!(m.params.mep_keepalive_timeout, Duration::from_millis(300));
}

#[test]
fn monitor_defaults_and_types() {
    let m = ok(concat!(
        "add lb monitor p PING\n",
        "add lb monitor h HTTP\n",
        "add lb monitor hs HTTP -secure YES -respCode 200 300-399\n",
        "add lb monitor hs2 HTTPS -httpRequest \"GET /h\"\n",
        "add lb monitor d DNS -query WWW.Example.com. -queryType AAAA -IPAddress 2001:db8::1 10.0.0.1 -rcode NOERROR 3\n",
        "add lb monitor u UDP-ECV -send ping -recv pong -destPort 7\n",
        "add lb monitor u2 UDP\n",
    ));
    let p = &m.monitors[MonitorId::new(0)];
    assert_eq!(p.kind, MonitorKind::Ping);
    assert_eq!(p.interval, Duration::from_secs(5));
    assert_eq!(p.response_timeout, Duration::from_secs(2));
    assert_eq!((p.retries, p.success_retries), (3, 1));
    match &m.monitors[MonitorId::new(1)].kind {
        MonitorKind::Http(c) => {
            assert_eq!(c.request, "HEAD /");
            assert_eq!(c.status_codes, vec![(200, 200)]);
        }
        other => panic!("{other:?}"),
    }
    match &m.monitors[MonitorId::new(2)].kind {
        MonitorKind::Https(c) => assert_eq!(c.status_codes, vec![(200, 200), (300, 399)]),
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(&m.monitors[MonitorId::new(3)].kind, MonitorKind::Https(c) if c.request == "GET /h")
    );
    match &m.monitors[MonitorId::new(4)].kind {
        MonitorKind::Dns(c) => {
            assert_eq!(c.query, "www.example.com");
            assert_eq!(c.query_type, DnsQueryType::Aaaa);
            assert_eq!(c.expect_addresses, vec![ip("2001:db8::1"), ip("10.0.0.1")]);
            assert_eq!(c.expect_rcodes, vec![0, 3]);
        }
        other => panic!("{other:?}"),
    }
    match &m.monitors[MonitorId::new(5)].kind {
        MonitorKind::Udp(c) => {
            assert_eq!(c.send, "ping");
            assert_eq!(c.receive.as_deref(), Some("pong"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(m.monitors[MonitorId::new(5)].dest_port, Some(7));
}

#[test]
fn monitor_errors() {
    one_error(
        "add lb monitor m TCP -interval 2 -resptimeout 2\n",
        1,
        &["must be shorter than", "2s"],
    );
    one_error(
        "add lb monitor m PING -httpRequest \"GET /\"\n",
        1,
        &["add lb monitor m PING: unknown option -httpRequest; expected one of -interval"],
    );
    one_error("add lb monitor m DNS\n", 1, &["-query is required"]);
    one_error(
        "add lb monitor m SNMP\n",
        1,
        &["unknown monitor type \"SNMP\"", "PING, TCP, HTTP"],
    );
    one_error(
        "add lb monitor m TCP -interval 5 HOURS\n",
        1,
        &["unexpected value \"HOURS\""],
    );
    one_error(
        "add lb monitor m TCP -retries 0\n",
        1,
        &["-retries", "1 to 127", "found 0"],
    );
    one_error(
        "add lb monitor m HTTP -respCode 399-300\n",
        1,
        &["runs backwards"],
    );
    one_error("add lb monitor m HTTPS -secure NO\n", 1, &["contradicts"]);
    one_error(
        "add lb monitor m TCP\nadd lb monitor M PING\n",
        2,
        &["monitor \"M\" is already defined on line 1"],
    );
}

#[test]
fn set_lb_monitor() {
    let m = ok(concat!(
        "add lb monitor m TCP\n",
        "set lb monitor M TCP -interval 10 -resptimeout 4\n",
        // The seed's example for the built-in LDNS probe monitors.
        "set lb monitor ldns-tcp LDNS-TCP -interval 10 sec -resptimeout 5 sec\n",
        // The issue's: an unprivileged port for a test LDNS.
        "set lb monitor ldns-dns LDNS-DNS -destPort 5399\n",
        // -retries, as on any monitor.
        "set lb monitor ldns-ping LDNS-PING -retries 3\n",
    ));
    assert_eq!(
        m.monitors[MonitorId::new(0)].interval,
        Duration::from_secs(10)
    );
    assert_eq!(m.params.ldns_monitor(LdnsProbe::Ping).retries, 3);
    assert_eq!(
        m.params.ldns_monitor(LdnsProbe::DnsTcp).retries,
        1,
        "the default: the next kind after one unanswered probe (seed 003)"
    );
    let tcp = m.params.ldns_monitor(LdnsProbe::DnsTcp);
    assert_eq!(
        (tcp.interval, tcp.timeout),
        (Duration::from_secs(10), Duration::from_secs(5))
    );
    // Each built-in monitor has its own settings.
    let dns = m.params.ldns_monitor(LdnsProbe::DnsUdp);
    assert_eq!(
        (dns.interval, dns.dest_port),
        (Duration::from_secs(5), Some(5399))
    );
    assert_eq!(
        m.params.ldns_monitor(LdnsProbe::Ping).timeout,
        Duration::from_secs(2)
    );
    one_error(
        "set lb monitor ldns-ping LDNS-PING -destPort 53\n",
        1,
        &["PING probe has no port"],
    );
    one_error(
        "set lb monitor ldns-dns LDNS-DNS -interval 2 -resptimeout 2\n",
        1,
        &["ldns-dns", "must be shorter"],
    );
    one_error(
        "set lb monitor ldns-tcp LDNS-TCP -retries 0\n",
        1,
        &["-retries"],
    );
    one_error(
        "set lb monitor nope -interval 1\n",
        1,
        &["not defined on an earlier line"],
    );
    one_error(
        "add lb monitor m TCP\nset lb monitor m HTTP -interval 9\n",
        2,
        &["has type TCP, not HTTP"],
    );
    one_error(
        "add lb monitor m TCP\nset lb monitor m -resptimeout 6\n",
        2,
        &["must be shorter than"],
    );
}

#[test]
fn monitor_bindings() {
    let m = ok(&format!(
        "{BASE}add lb monitor m1 TCP\nadd lb monitor m2 PING\nbind gslb service SVC1 -monitorName M1\nbind lb monitor m2 svc1\n"
    ));
    assert_eq!(
        m.services[ServiceId::new(0)].monitors,
        vec![MonitorId::new(0), MonitorId::new(1)]
    );
    let errs = errors(&format!(
        "{BASE}add lb monitor m1 TCP\nbind gslb service svc1 -monitorName m1\nbind lb monitor m1 svc1\nbind gslb service svc9 -monitorName m9\n"
    ));
    assert_eq!(errs.len(), 3, "{errs:#?}");
    assert_eq!(errs[0].0, 9);
    assert!(errs[0].1.contains("already bound"), "{}", errs[0].1);
    assert_eq!(errs[1].0, 10);
    assert!(
        errs[1]
            .1
            .contains("service \"svc9\" is not defined (add it with \"add gslb service\")")
    );
    assert!(
        errs[2]
            .1
            .contains("monitor \"m9\" is not defined (add it with \"add lb monitor\")")
    );
}

#[test]
fn unknown_command_and_option() {
    one_error(
        &format!("{BASE}add lb vserver lb1 HTTP 10.0.0.9 80\n"),
        7,
        &[
            "unknown command \"add lb vserver\"",
            "configures load balancing, outside Sextant's scope",
            "run `sextant import FILE -o OUT.conf`",
        ],
    );
    // The command is named by its words, not by the object's name.
    one_error(
        "bind serviceGroup sg_web srv1 80\n",
        1,
        &["unknown command \"bind serviceGroup\"", "sextant import"],
    );
    // A misspelt command gets the nearest one, not a list of all.
    one_error(
        "add gslb vsrever vs HTTP\n",
        1,
        &["unknown command \"add gslb vsrever\"; did you mean \"add gslb vserver\"?"],
    );
    // A line that continues the one before.
    one_error(
        "add gslb site s1 10.0.0.1\n    -publicIP 1.2.3.4\n",
        2,
        &[
            "this line starts with the option \"-publicIP\", not a command",
            "join the two lines",
        ],
    );
    one_error(
        "add gslb site s1 10.0.0.1 -sitetype LOCAL -publicIPs 1.2.3.4\n",
        1,
        &["add gslb site s1: unknown option -publicIPs; expected one of -publicIP, -siteType"],
    );
    one_error(
        "add gslb site s1 10.0.0.1\nadd gslb service svc 10.0.0.5 HTTP 80 -siteNam s1\n",
        2,
        &["add gslb service svc: unknown option -siteNam; expected one of -siteName, -publicIP"],
    );
}

#[test]
fn options_and_commands_are_case_insensitive() {
    let m = ok(concat!(
        "ADD GSLB SITE s1 10.0.0.1 -SITETYPE local -PUBLICip 1.2.3.4\n",
        "add gslb service svc 10.0.0.5 http 80 -sitename S1\n",
        "add gslb vserver vs HTTP -lbmethod roundrobin\n",
        "bind gslb vserver VS -servicename SVC -WEIGHT 7\n",
    ));
    assert_eq!(m.sites[SiteId::new(0)].public_ip, Some(ip("1.2.3.4")));
    assert_eq!(m.vservers[VServerId::new(0)].method, LbMethod::RoundRobin);
    assert_eq!(m.vservers[VServerId::new(0)].bindings[0].weight, 7);
}

#[test]
fn typographic_dash() {
    one_error(
        "add gslb site s1 10.0.0.1\nadd gslb service svc 10.0.0.5 http 80 \u{2013}sitename s1\n",
        2,
        &["typographic dash", "write -sitename"],
    );
}

#[test]
fn value_errors() {
    one_error(
        "add gslb site s1 10.0.0.300\n",
        1,
        &["site IP", "found \"10.0.0.300\""],
    );
    one_error(
        "add gslb site s1 10.0.0.1\nadd gslb service svc 10.0.0.5 HTTP 0 -siteName s1\n",
        2,
        &["PORT", "1 to 65535"],
    );
    one_error(
        "add gslb site s1 10.0.0.1\nadd gslb service svc 10.0.0.5 HTTP 70000 -siteName s1\n",
        2,
        &["PORT"],
    );
    one_error(
        "add gslb site s1 10.0.0.1\nadd gslb service svc 10.0.0.5 GOPHER 70 -siteName s1\n",
        2,
        &["unknown protocol \"GOPHER\""],
    );
    one_error(
        "add gslb site s1 10.0.0.1\nadd gslb service svc 10.0.0.5 HTTP 80\n",
        2,
        &["-siteName is required"],
    );
    one_error(
        "add gslb vserver vs HTTP -lbMethod FASTEST\n",
        1,
        &["unknown method \"FASTEST\""],
    );
    one_error(
        "add gslb vserver vs HTTP -EDR YES\n",
        1,
        &["-EDR", "ENABLED or DISABLED"],
    );
    one_error(
        "add gslb vserver vs HTTP -netmask 255.0.255.0\n",
        1,
        &["not contiguous"],
    );
    one_error(
        "add gslb vserver vs HTTP -dnsRecordType NAPTR\n",
        1,
        &["NAPTR GSLB is not supported yet"],
    );
    one_error(
        "add gslb vserver vs HTTP -timeout 5\n",
        1,
        &["needs -persistenceType SOURCEIP"],
    );
    one_error(
        "add gslb vserver vs HTTP -lbMethod\n",
        1,
        &["-lbMethod needs a value"],
    );
    one_error(
        "add gslb vserver vs HTTP extra\n",
        1,
        &["unexpected argument \"extra\""],
    );
    one_error(
        "add gslb vserver vs HTTP -lbMethod RTT -lbMethod ROUNDROBIN\n",
        1,
        &["given twice"],
    );
}

#[test]
fn every_error_is_reported() {
    let text = "\
add gslb site s1 10.0.0.999
add gslb site s1 10.0.0.1
frobnicate
add gslb service svc 10.0.0.5 HTTP 80 -siteName nowhere
add gslb vserver vs HTTP -backupVServer vs
bind gslb vserver vs -serviceName ghost -weight 101
";
    let errs = errors(text);
    let lines: Vec<usize> = errs.iter().map(|e| e.0).collect();
    assert_eq!(lines, vec![1, 2, 3, 4, 5, 6, 6], "{errs:#?}");
}

#[test]
fn sites_parents_and_backups() {
    let m = ok(concat!(
        "add gslb site c1 10.0.1.1 -parentSite p1\n", // forward reference
        "add gslb site p1 10.0.0.1 -siteType LOCAL\n",
        "add gslb site p2 10.0.0.2 -metricExchange DISABLED -triggerMonitor MEPDOWN_SVCDOWN\n",
        "add gslb site p3 10.0.0.3 -nwMetricExchange DISABLED -sessionExchange DISABLED\n",
        "set gslb site p1 -backupParentlist p2 P3\n",
        "set gslb site p2 -backupParentlist p3 -publicIP 192.0.2.2\n",
        "unset gslb site p2 -backupParentlist\n",
    ));
    let c1 = &m.sites[SiteId::new(0)];
    assert_eq!(c1.parent, Some(SiteId::new(1)));
    assert!(!c1.nw_metric_exchange && !c1.session_exchange && c1.metric_exchange);
    assert_eq!(m.local_site, Some(SiteId::new(1)));
    assert_eq!(
        m.sites[SiteId::new(1)].backup_parents,
        vec![SiteId::new(2), SiteId::new(3)]
    );
    assert!(m.sites[SiteId::new(1)].nw_metric_exchange);
    assert!(m.sites[SiteId::new(2)].backup_parents.is_empty());
    assert!(!m.sites[SiteId::new(2)].metric_exchange);
    assert_eq!(
        m.sites[SiteId::new(2)].trigger_monitor,
        TriggerMonitor::MepDownSvcDown
    );
    assert_eq!(m.sites[SiteId::new(2)].public_ip, Some(ip("192.0.2.2")));
    assert!(!m.sites[SiteId::new(3)].nw_metric_exchange);
}

#[test]
fn site_errors() {
    one_error(
        "add gslb site a 10.0.0.1 -siteType LOCAL\nadd gslb site b 10.0.0.2 -siteType LOCAL\n",
        2,
        &["declared LOCAL", "\"a\" already is (line 1)"],
    );
    one_error(
        "add gslb site a 10.0.0.1 -parentSite zz\n",
        1,
        &["site \"zz\" is not defined"],
    );
    one_error(
        "add gslb site a 10.0.0.1 -parentSite A\n",
        1,
        &["own parent"],
    );
    one_error(
        "add gslb site p 10.0.0.1\nadd gslb site c 10.0.0.2 -parentSite p\nadd gslb site g 10.0.0.3 -parentSite c\n",
        3,
        &["parent site \"c\" is itself a child"],
    );
    one_error(
        "add gslb site p 10.0.0.1\nadd gslb site c 10.0.0.2 -parentSite p -nwMetricExchange ENABLED\n",
        2,
        &["always off on child sites", "-nwMetricExchange"],
    );
    let many = "add gslb site p 10.0.0.1\nadd gslb site a 10.0.0.2\nadd gslb site b 10.0.0.3\nadd gslb site c 10.0.0.4\nadd gslb site d 10.0.0.5\nadd gslb site e 10.0.0.6\nadd gslb site f 10.0.0.7\nset gslb site p -backupParentlist a b c d e f\n";
    one_error(many, 8, &["6 backup parents given; at most 5"]);
    one_error(
        "add gslb site p 10.0.0.1\nadd gslb site c 10.0.0.2 -parentSite p\nadd gslb site q 10.0.0.3\nset gslb site q -backupParentlist c\n",
        4,
        &["backup parent \"c\" is a child site"],
    );
    one_error(
        "add gslb site p 10.0.0.1\nset gslb site p -backupParentlist p\n",
        2,
        &["own backup parent"],
    );
    one_error(
        "add gslb site p 10.0.0.1\nset gslb site p -backupParentlist nowhere\n",
        2,
        &[
            "set gslb site p: backup parent \"nowhere\" is not a site yet",
            "add it with \"add gslb site nowhere IP\" before this line",
        ],
    );
    one_error(
        "set gslb site p -backupParentlist a\n",
        1,
        &["not defined on an earlier line"],
    );
    one_error(
        "add gslb site p 10.0.0.1\nadd gslb site c 10.0.0.2 -parentSite p -backupParentlist p\n",
        2,
        &["only parent sites have backup parents"],
    );
}

#[test]
fn vservers_and_bindings() {
    let m = ok(&format!(
        "{BASE}\
add gslb vserver vs2 HTTP -lbMethod SOURCEIPHASH -netmask 255.255.255.0 -v6netmasklen 64 -persistenceType SOURCEIP -timeout 3 -persistMask 255.255.0.0 -v6persistmasklen 48 -EDR ENABLED -MIR ENABLED -ECS ENABLED -persistenceId 7 -backupLBMethod ROUNDROBIN
set gslb vserver vs1 -lbMethod RTT -tolerance 10 -backupVServer VS2
bind gslb vserver vs2 -serviceName svc2 -weight 100
bind gslb vserver vs1 -domainName WWW.Example.COM. -TTL 30 -backupIP 2001:db8::9
bind gslb vserver vs2 -domainName api.example.com
"
    ));
    let vs1 = &m.vservers[VServerId::new(0)];
    assert_eq!(vs1.method, LbMethod::Rtt);
    assert_eq!(vs1.backup_vserver, Some(VServerId::new(1)));
    let vs2 = &m.vservers[VServerId::new(1)];
    assert_eq!(vs2.method, LbMethod::SourceIpHash);
    assert_eq!(vs2.backup_method, Some(LbMethod::RoundRobin));
    assert_eq!((vs2.hash_v4_mask, vs2.hash_v6_mask), (24, 64));
    let p = vs2.persistence.expect("persistence");
    assert_eq!(p.timeout, Duration::from_secs(180));
    assert_eq!((p.v4_mask, p.v6_mask), (16, 48));
    assert!(vs2.empty_down_response && vs2.multi_ip_response && vs2.ecs);
    assert_eq!(vs2.bindings[0].weight, 100);
    assert_eq!(m.domains[DomainId::new(0)].name, "www.example.com");
    assert_eq!(m.domains[DomainId::new(0)].ttl, 30);
    assert_eq!(
        m.domains[DomainId::new(0)].backup_ip,
        Some(ip("2001:db8::9"))
    );
    assert_eq!(m.domains[DomainId::new(1)].ttl, 5);
    assert_eq!(m.domains[DomainId::new(1)].vserver, VServerId::new(1));

    // Persistence given on set; the type may follow its options.
    let m = ok(&format!(
        "{BASE}set gslb vserver vs1 -timeout 5 -persistenceType SOURCEIP\n"
    ));
    assert_eq!(
        m.vservers[VServerId::new(0)].persistence.map(|p| p.timeout),
        Some(Duration::from_secs(300))
    );
}

#[test]
fn vserver_errors() {
    one_error(
        &format!("{BASE}bind gslb vserver vs1 -serviceName svc9\n"),
        7,
        &[
            "bind gslb vserver vs1: service \"svc9\" is not defined (add it with \"add gslb service\")",
        ],
    );
    one_error(
        &format!("{BASE}bind gslb vserver vs9 -serviceName svc1\n"),
        7,
        &["vserver \"vs9\" is not defined"],
    );
    one_error(
        &format!("{BASE}bind gslb vserver vs1 -serviceName SVC1\n"),
        7,
        &["already bound to vserver \"vs1\" (line 6)"],
    );
    one_error(
        &format!("{BASE}bind gslb vserver vs1 -serviceName svc2 -weight 0\n"),
        7,
        &["-weight", "1 to 100"],
    );
    one_error(
        &format!(
            "{BASE}add gslb vserver vs2 HTTP\nbind gslb vserver vs1 -domainName a.example\nbind gslb vserver vs2 -domainName A.example.\n"
        ),
        9,
        &["domain \"a.example\" is already bound to vserver \"vs1\" (line 8)"],
    );
    one_error(
        &format!("{BASE}bind gslb vserver vs1 -domainName bad..name\n"),
        7,
        &["empty label"],
    );
    one_error(
        &format!(
            "{BASE}bind gslb vserver vs1 -domainName {}.com\n",
            "a".repeat(64)
        ),
        7,
        &["limit is 63"],
    );
    one_error(
        &format!("{BASE}bind gslb vserver vs1 -domainName x.example -TTL 0\n"),
        7,
        &["-TTL"],
    );
    one_error(
        &format!("{BASE}bind gslb vserver vs1 -domainName x.example -weight 3\n"),
        7,
        &["-weight belongs to -serviceName"],
    );
    one_error(
        &format!("{BASE}bind gslb vserver vs1\n"),
        7,
        &["nothing to bind"],
    );
    one_error(
        &format!("{BASE}set gslb vserver vs1 -backupVServer vs1\n"),
        7,
        &["own backup vserver"],
    );
    one_error(
        &format!(
            "{BASE}add gslb vserver vs2 HTTP -backupVServer vs3\nadd gslb vserver vs3 HTTP -backupVServer vs1\nset gslb vserver vs1 -backupVServer vs2\n"
        ),
        9,
        &["cycle", "\"vs1\" -> \"vs2\" -> \"vs3\" -> \"vs1\""],
    );
    one_error(
        &format!("{BASE}set gslb vserver nope -lbMethod RTT\n"),
        7,
        &["not defined on an earlier line"],
    );
    one_error(
        &format!("{BASE}add gslb vserver VS1 TCP\n"),
        7,
        &["vserver \"VS1\" is already defined on line 5"],
    );
    one_error(
        &format!("{BASE}set gslb vserver vs1 -tolerance 101\n"),
        7,
        &["-tolerance"],
    );
}

#[test]
fn dns_listener_and_zones() {
    let m = ok(concat!(
        "add service dns1 127.0.0.1 ADNS 5353\n",
        "add service dns1tcp 127.0.0.1 ADNS_TCP 5353\n",
        "add service dns6 ::1 ADNS 53\n",
        "add dns soaRec Example.COM -originServer NS1.example.com. -contact hostmaster.example.com -serial 7 -TTL 60\n",
        "add dns nsRec example.com ns1.example.com\n",
        "add dns nsRec example.com ns2.example.com\n",
        "add dns nsRec other.example ns.other.example -TTL 120\n",
    ));
    assert_eq!(
        m.dns_listen,
        vec![
            "127.0.0.1:5353".parse().expect("a"),
            "[::1]:53".parse().expect("b")
        ]
    );
    let z = &m.zones[ZoneId::new(0)];
    assert_eq!(z.apex, "example.com");
    assert_eq!(z.soa.origin_server, "ns1.example.com");
    assert_eq!(
        (
            z.soa.serial,
            z.soa.refresh,
            z.soa.retry,
            z.soa.expire,
            z.soa.minimum,
            z.soa.ttl
        ),
        (7, 3600, 3, 3600, 5, 60)
    );
    assert_eq!(z.ns, ["ns1.example.com", "ns2.example.com"]);
    assert_eq!(z.ns_ttl, 3600);
    // nsRec without soaRec: an SOA is synthesized from the first NS.
    let o = &m.zones[ZoneId::new(1)];
    assert_eq!(o.soa.origin_server, "ns.other.example");
    assert_eq!(o.soa.contact, "hostmaster.other.example");
    assert_eq!(o.ns_ttl, 120);
}

#[test]
fn dns_errors() {
    one_error(
        "add service lb1 10.0.0.1 HTTP 80\n",
        1,
        &["only ADNS and ADNS_TCP"],
    );
    one_error(
        "add dns soaRec example.com -contact h.example.com\n",
        1,
        &["-originServer is required"],
    );
    one_error(
        "add dns soaRec example.com -originServer a.example.com -contact h.example.com\nadd dns soaRec EXAMPLE.com. -originServer a.example.com -contact h.example.com\n",
        2,
        &["already has an SOA record (line 1)"],
    );
    one_error(
        "add dns nsRec example.com ns1.example.com -TTL 60\nadd dns nsRec example.com ns2.example.com -TTL 120\n",
        2,
        &["share one TTL"],
    );
    one_error(
        "add dns nsRec example.com ns1.example.com\nadd dns nsRec example.com NS1.example.com.\n",
        2,
        &["already listed"],
    );
    one_error(
        "add dns nsRec exa_mple..com ns1.example.com\n",
        1,
        &["zone", "empty label"],
    );
}

#[test]
fn gslb_parameters() {
    // The seed's example.
    let m = ok("set gslb parameter -ldnsprobeOrder DNS PING TCP\n");
    assert_eq!(
        m.params.ldns_probe_order,
        vec![LdnsProbe::DnsUdp, LdnsProbe::Ping, LdnsProbe::DnsTcp]
    );
    let m = ok(concat!(
        "set gslb parameter -ldnsEntryTimeout 60 -RTTTolerance 10 -ldnsMask 255.255.255.0 -v6ldnsMaskLen 48\n",
        "set gslb parameter -dropLdnsReq ENABLED -automaticConfigSync ENABLED -ldnsProbeInterval 3 -ldnsProbeTimeout 500 MSEC\n",
        "set gslb parameter -mepPort 13011 -mepSecurePort 13009\n",
    ));
    let p = &m.params;
    assert_eq!(p.ldns_entry_timeout, Duration::from_secs(60));
    assert_eq!(p.rtt_tolerance, Duration::from_millis(10));
    assert_eq!((p.ldns_v4_mask, p.ldns_v6_mask), (24, 48));
    assert!(p.drop_ldns_requests && p.automatic_config_sync);
    for kind in LdnsProbe::ALL {
        let mon = p.ldns_monitor(kind);
        assert_eq!(
            (mon.interval, mon.timeout),
            (Duration::from_secs(3), Duration::from_millis(500))
        );
    }
    assert_eq!((p.mep_port, p.mep_secure_port), (13011, 13009));

    one_error(
        "set gslb parameter -GSLBSyncIntervall 10\n",
        1,
        &["unknown option -GSLBSyncIntervall; expected one of -ldnsEntryTimeout, -RTTTolerance"],
    );
    // The appliance's config-sync parameters, as a saved file writes them:
    // the incarnation is read (config sync), the others accepted, each
    // warned about.
    let m = ok(
        "set gslb parameter -incarnation 12 -GSLBSyncInterval 10 -GSLBSyncMode IncrementalSync\n",
    );
    assert_eq!(m.params.config_incarnation, Some(12));
    assert_eq!(m.warnings.len(), 2, "{:?}", m.warnings);
    assert!(
        m.warnings[0].contains("-GSLBSyncInterval is accepted but has no effect in Sextant"),
        "{:?}",
        m.warnings
    );
    assert_eq!(
        ok("add gslb site a 10.0.0.1\n").params.config_incarnation,
        None
    );
    one_error(
        "set gslb parameter -incarnation -3\n",
        1,
        &["-incarnation: expected an integer 0 or more, found \"-3\""],
    );
    one_error(
        "set gslb parameter -RTTTolerance 500\n",
        1,
        &["out of range"],
    );
    one_error(
        "set gslb parameter -ldnsProbeOrder PING PING\n",
        1,
        &["listed twice"],
    );
    one_error(
        "set gslb parameter -ldnsProbeOrder ICMP\n",
        1,
        &["expected PING, DNS or TCP"],
    );
    one_error(
        "set gslb parameter -ldnsProbeTimeout 5\n",
        1,
        &["-ldnsProbeTimeout (5s) must be shorter than -ldnsProbeInterval (5s)"],
    );
    one_error("set gslb parameter\n", 1, &["nothing to set"]);
}

#[test]
fn system_commands() {
    let m = ok(concat!(
        "enable ns feature GSLB lb\n",
        "set ns rpcNode 10.0.0.2 -password s3cret -secure YES\n",
    ));
    assert_eq!(
        m,
        Model {
            rpc_nodes: vec![sextant_core::RpcNode {
                ip: ip("10.0.0.2"),
                password: Some("s3cret".into()),
                secure: true,
                source_ip: None,
            }],
            ..Model::default()
        }
    );
    // Saved files list every feature and mode the appliance runs.
    ok(
        "enable ns feature WL SP LB CS SSL GSLB REWRITE RESPONDER\nenable ns mode FR L3 Edge USNIP PMTUD\n",
    );
    // A password the appliance encrypted with its own key cannot be read.
    one_error(
        "set ns rpcNode 10.0.0.2 -password 8d2f6a0c1b -encrypted -encryptmethod ENCMTHD_3 -kek -suffix 2026_11_30_10_00_00 -srcIP *\n",
        1,
        &["encrypted with the appliance's own key", "sextant import"],
    );
    // The importer's placeholder is accepted, with a warning.
    let m =
        ok("set ns rpcNode 10.0.0.2 -password SEXTANT-REENTER-rpcNode-10.0.0.2 -srcIP 10.0.0.1\n");
    assert_eq!(m.rpc_nodes[0].source_ip, Some(ip("10.0.0.1")));
    assert!(m.warnings[0].contains("placeholder"), "{:?}", m.warnings);
    one_error("set ns rpcNode 10.0.0.x -password p\n", 1, &["IP"]);
    one_error("set ns rpcNode 10.0.0.2 -secure MAYBE\n", 1, &["YES or NO"]);
}

#[test]
fn static_records_need_a_zone() {
    // Static records are read (tests/records.rs), but only inside a zone.
    one_error(
        "add dns addRec ns1.example.com 10.0.0.1\n",
        1,
        &[
            "\"ns1.example.com\" is not in a zone Sextant serves",
            "no zone is defined",
        ],
    );
}

#[test]
fn seed_style_commands() {
    // Commands as the seeds write them.
    let m = ok(concat!(
        "add gslb site SiteP1 10.0.0.1\n",
        "add gslb site SiteP2 10.0.0.2\n",
        "add gslb site SiteP3 10.0.0.3\n",
        "add gslb site child_site1 10.0.1.1 -publicIP 203.0.113.1 -parentSite SiteP1\n",
        "set gslb site SiteP1 -backupParentlist SiteP2 SiteP3\n",
        "add gslb service Service-GSLB 192.168.1.3 http 80 -sitename child_site1 -publicip 172.16.1.1\n",
        "add gslb vserver Vserver-GSLB-1 HTTP\n",
        "set gslb vserver Vserver-GSLB-1 -lbMethod RTT -tolerance 10\n",
        "set gslb parameter -ldnsprobeOrder DNS PING TCP\n",
        "set lb monitor ldns-tcp LDNS-TCP -interval 10 sec -resptimeout 5 sec\n",
    ));
    assert_eq!(
        m.sites[SiteId::new(0)].backup_parents,
        vec![SiteId::new(1), SiteId::new(2)]
    );
    assert_eq!(m.sites[SiteId::new(3)].parent, Some(SiteId::new(0)));
    assert_eq!(
        m.services[ServiceId::new(0)].public_ip,
        Some(ip("172.16.1.1"))
    );
    assert_eq!(m.vservers[VServerId::new(0)].method, LbMethod::Rtt);
    assert_eq!(m.local_site, None);
}

#[test]
fn names_follow_the_appliance_rule() {
    one_error(
        "add gslb site web/fra 10.0.0.1\n",
        1,
        &["site name", "contains '/'"],
    );
    one_error(
        "add gslb vserver \"\" HTTP\n",
        1,
        &["vserver name", "empty"],
    );
    let m = ok("\u{feff}add gslb site \"site one\" 10.0.0.1\n");
    assert_eq!(m.sites[SiteId::new(0)].name, "site one");
}

#[test]
fn positional_site_type() {
    let m = ok("add gslb site s1 LOCAL 10.0.0.1\nadd gslb site s2 REMOTE 10.0.0.2\n");
    assert_eq!(m.local_site, Some(SiteId::new(0)));
    one_error(
        "add gslb site s1 LOCAL 10.0.0.1 -siteType REMOTE\n",
        1,
        &["site type is given twice"],
    );
}

#[test]
fn the_root_name_is_named_as_such() {
    one_error(
        "add gslb site s1 10.0.0.1 -siteType LOCAL\nadd gslb vserver v HTTP\nbind gslb vserver v -domainName .\n",
        3,
        &["the root name \".\" is not a name Sextant serves"],
    );
    one_error(
        "add dns soaRec . -originServer a.example.com -contact h.example.com\n",
        1,
        &["zone \".\": the root name \".\""],
    );
}

#[test]
fn removing_verbs_and_unserved_dns_records_say_what_to_do() {
    one_error(
        "add gslb site s1 10.0.0.1 -siteType LOCAL\nrm gslb site s1\n",
        2,
        &[
            "\"rm gslb site\" is not supported: a Sextant configuration file is the whole configuration",
        ],
    );
    one_error(
        "add dns ptrRec 1.0.0.10.in-addr.arpa a.example.com\n",
        1,
        &["DNS records and features Sextant does not serve"],
    );
}

const CNAME_BASE: &str = "\
add gslb site s1 10.0.0.1 -siteType LOCAL
add gslb site s2 10.0.0.2
add gslb vserver cdn HTTP -dnsRecordType CNAME -lbMethod ROUNDROBIN
add gslb service c1 -cnameEntry CDN-1.Example.org. -siteName s1
add gslb service c2 HTTP 8080 -cnameEntry cdn-2.example.org -siteName s2
bind gslb vserver cdn -serviceName c1
bind gslb vserver cdn -serviceName c2
bind gslb vserver cdn -domainName cdn.example.com -TTL 5
";

#[test]
fn cname_based_gslb_services_stand_for_names() {
    let m = ok(CNAME_BASE);
    assert!(m.vservers[VServerId::new(0)].cname);
    assert_eq!(
        m.services[ServiceId::new(0)].cname.as_deref(),
        Some("cdn-1.example.org")
    );
    assert_eq!(
        m.services[ServiceId::new(1)].cname.as_deref(),
        Some("cdn-2.example.org")
    );
    assert_eq!(m.services[ServiceId::new(1)].port, 8080);
    assert!(m.services[ServiceId::new(0)].ip.is_unspecified());
    // The CNAME services have no monitor: that alone is warned about.
    assert!(
        m.warnings
            .iter()
            .all(|w| w.contains(": nothing checks it (")),
        "{:?}",
        m.warnings
    );
    // Kinds do not mix.
    one_error(
        &format!(
            "{CNAME_BASE}add gslb service a1 10.1.0.1 HTTP 80 -siteName s1\nbind gslb vserver cdn -serviceName a1\n"
        ),
        10,
        &[
            "vserver \"cdn\" answers with CNAMEs (-dnsRecordType CNAME), so its services need -cnameEntry",
        ],
    );
    // Nothing to probe without -destIP.
    one_error(
        &format!("{CNAME_BASE}add lb monitor m1 TCP\nbind gslb service c1 -monitorName m1\n"),
        10,
        &[
            "stands for a name (-cnameEntry) and has no address to probe: give monitor \"m1\" -destIP",
        ],
    );
    ok(&format!(
        "{CNAME_BASE}add lb monitor m1 TCP -destIP 10.9.0.1 -destPort 80\nbind gslb service c1 -monitorName m1\n"
    ));
    // Two CNAME services of one site need their own ports.
    one_error(
        &format!("{CNAME_BASE}add gslb service c3 -cnameEntry cdn-3.example.org -siteName s1\n"),
        9,
        &["another CNAME service of this site has port 1 (line 4)"],
    );
}
