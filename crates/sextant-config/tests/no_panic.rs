//! Property tests: no input makes the readers panic.

use proptest::prelude::*;

/// Words the appliance reader knows, so that random lines get past the
/// command table and exercise the option and value code too.
const WORDS: &[&str] = &[
    "add",
    "set",
    "unset",
    "bind",
    "enable",
    "gslb",
    "lb",
    "dns",
    "ns",
    "site",
    "service",
    "vserver",
    "monitor",
    "parameter",
    "soaRec",
    "nsRec",
    "rpcNode",
    "feature",
    "mode",
    "HTTP",
    "TCP",
    "DNS",
    "PING",
    "UDP-ECV",
    "HTTP-ECV",
    "ADNS",
    "LOCAL",
    "REMOTE",
    "s1",
    "s2",
    "v1",
    "m1",
    "-siteName",
    "-siteType",
    "-parentSite",
    "-backupParentlist",
    "-publicIP",
    "-lbMethod",
    "-persistenceType",
    "SOURCEIP",
    "-timeout",
    "-backupVServer",
    "-serviceName",
    "-domainName",
    "-TTL",
    "-weight",
    "-interval",
    "-resptimeout",
    "MSEC",
    "SEC",
    "MIN",
    "-respCode",
    "-query",
    "-monitorName",
    "-originServer",
    "-contact",
    "-ldnsProbeOrder",
    "-MEPKeepAliveTimeout",
    "-password",
    "-secure",
    "YES",
    "-loadSource",
    "PROMETHEUS",
    "PUSH",
    "-loadURL",
    "http://10.0.0.1:9101/metrics",
    "-loadInterval",
    "-connectionsMetric",
    "-customLoadMetric",
    "-cpuMetric",
    "-healthyBackendsMetric",
    "dcRecord",
    "www.example.com",
    "-dcSelection",
    "ALL_DC_RECORDS",
    "DC_BASED",
    "SERVICE_BASED",
    "CLIENT_BASED",
    "-criterion",
    "CPU",
    "CONNECTIONS",
    "MOS",
    "-vServiceName",
    "-totalDCs",
    "-balance",
    "WEIGHTED_ROUNDROBIN",
    "-dcOrder",
    "-IPAddress",
    "-hc",
    "SITE",
    "SERVICE_AND_SITE",
    "NONE",
    "-failSafe",
    "-dcAccessPeriod",
    "'x{a=\"b\"}'",
    "x{",
    "10.0.0.1",
    "::1",
    "0",
    "1",
    "5",
    "0.5",
    "65536",
    "200-299",
    "example.com",
    "\"",
    "'",
    "#",
    "\\",
    "–x",
    "-",
    "\"a b\"",
];

fn line() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(WORDS), 0..12).prop_map(|w| w.join(" "))
}

/// Sites and services for the datacenter-mode lines below.
const DC_BASE: &str = "\
add gslb site s1 10.0.0.1 -siteType LOCAL
add gslb site s2 10.0.0.2
add gslb service v1 10.1.0.1 HTTP 80 -siteName s1 -vServiceName web
add gslb service v2 10.2.0.1 HTTP 80 -siteName s2 -vServiceName web
add gslb vserver vs HTTP
bind gslb vserver vs -domainName q.example
";

/// Options of the datacenter-mode commands, with values good and bad.
const DC_OPTS: &[&str] = &[
    "-dcSelection ALL_DC_RECORDS",
    "-dcSelection DC_BASED",
    "-dcSelection service_based",
    "-dcSelection CLIENT_BASED",
    "-dcSelection",
    "-criterion CPU",
    "-criterion HOPS",
    "-criterion CONNECTIONS",
    "-criterion x",
    "-vServiceName web",
    "-vServiceName ''",
    "-totalDCs 2",
    "-totalDCs 0",
    "-totalDCs 65",
    "-balance CLOSEST",
    "-balance x",
    "-TTL 30",
    "-TTL 0",
    "-dcOrder s2 s1",
    "-dcOrder s1 s1",
    "-dcOrder s3",
    "-dcOrder",
    "-siteName s1",
    "-siteName s2",
    "-siteName s3",
    "-serviceName v1",
    "-serviceName v2",
    "-serviceName v3",
    "-IPAddress 10.9.0.1",
    "-IPAddress ::1",
    "-IPAddress x",
    "-weight 0",
    "-weight 100",
    "-weight 101",
    "-hc SERVICE",
    "-hc SITE",
    "-hc SERVICE_AND_SITE",
    "-hc NONE",
    "-hc",
    "-failSafe 10.9.9.9",
    "-failSafe x",
];

fn dc_line() -> impl Strategy<Value = String> {
    (
        prop::sample::select(&["add", "set", "bind"][..]),
        prop::sample::select(&["r.example", "R.EXAMPLE.", "q.example", "-x", ""][..]),
        prop::collection::vec(prop::sample::select(DC_OPTS), 0..8),
    )
        .prop_map(|(verb, name, opts)| format!("{verb} gslb dcRecord {name} {}", opts.join(" ")))
}

/// Keys of a `[[dc_record]]` table, with values good and bad.
const DC_KEYS: &[&str] = &[
    "ttl = 30",
    "ttl = 0",
    "dc_selection = \"dc_based\"",
    "dc_selection = \"service_based\"",
    "dc_selection = \"client_based\"",
    "dc_selection = 1",
    "criterion = \"cpu\"",
    "criterion = \"mos\"",
    "vservice_name = \"web\"",
    "total_dcs = 2",
    "total_dcs = -1",
    "balance = \"all\"",
    "dc_order = [\"s2\", \"s1\"]",
    "dc_order = [\"s1\", \"s1\"]",
    "dc_order = []",
    "fail_safe = [\"10.9.9.9\", \"10.9.9.9\"]",
    "fail_safe = [\"x\"]",
    "bogus = 1",
];

/// Keys of a `[[dc_record.address]]` table.
const ADDRESS_KEYS: &[&str] = &[
    "site = \"s1\"",
    "site = \"s2\"",
    "site = \"s3\"",
    "service = \"v1\"",
    "service = \"v3\"",
    "ip = \"10.9.0.1\"",
    "ip = \"x\"",
    "weight = 0",
    "weight = 101",
    "hc = \"service\"",
    "hc = \"site\"",
    "hc = \"x\"",
];

fn dc_toml() -> impl Strategy<Value = String> {
    let address = prop::collection::vec(prop::sample::select(ADDRESS_KEYS), 0..5)
        .prop_map(|keys| format!("[[dc_record.address]]\n{}\n", keys.join("\n")));
    (
        prop::collection::vec(prop::sample::select(DC_KEYS), 0..6),
        prop::collection::vec(address, 0..4),
    )
        .prop_map(|(keys, addresses)| {
            format!(
                "version = 1\n[server]\nlocal_site = \"s1\"\n[[site]]\nname = \"s1\"\nip = \"10.0.0.1\"\n[[site]]\nname = \"s2\"\nip = \"10.0.0.2\"\n[[service]]\nname = \"v1\"\nip = \"10.1.0.1\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"s1\"\nvservice_name = \"web\"\n[[dc_record]]\nname = \"r.example\"\n{}\n{}",
                keys.join("\n"),
                addresses.concat()
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn appliance_never_panics_on_arbitrary_text(text in "(?s).{0,400}") {
        let _ = sextant_config::parse_appliance(&text, "p.conf");
    }

    #[test]
    fn appliance_never_panics_on_command_like_lines(lines in prop::collection::vec(line(), 0..20)) {
        let _ = sextant_config::parse_appliance(&lines.join("\n"), "p.conf");
    }

    #[test]
    fn appliance_never_panics_on_datacenter_mode_lines(lines in prop::collection::vec(dc_line(), 0..12)) {
        let _ = sextant_config::parse_appliance(&format!("{DC_BASE}{}", lines.join("\n")), "p.conf");
    }

    #[test]
    fn toml_never_panics_on_datacenter_mode_tables(text in dc_toml()) {
        let _ = sextant_config::parse_toml(&text, "p.toml");
    }

    #[test]
    fn toml_never_panics_on_arbitrary_text(text in "(?s).{0,300}") {
        let _ = sextant_config::parse_toml(&text, "p.toml");
    }
}
