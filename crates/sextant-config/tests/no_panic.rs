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
    fn toml_never_panics_on_arbitrary_text(text in "(?s).{0,300}") {
        let _ = sextant_config::parse_toml(&text, "p.toml");
    }
}
