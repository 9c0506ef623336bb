//! The DNS server's settings in both syntaxes: `set dns parameter` with
//! Sextant's options and `[dns]`, `[dns.rrl]`, `[dns.cookies]`; defaults,
//! the same model from both, and the line of each rejection.

mod support;

use std::time::Duration;
use support::{conf, conf_errors, ip, one, toml, toml_errors};

use sextant_core::{CookieSettings, DnsSettings, RrlSettings};

const FULL_CONF: &str = "\
set dns parameter -nsid node-a -tcpIdleTimeout 15 SEC -maxTCPConnections 200
set dns parameter -rrlResponsesPerSecond 20 -rrlSlip 3 -rrlIPv4Prefix 22 -rrlIPv6Prefix 48
set dns parameter -rrlExempt 10.0.0.0/8,::1/128 -rrlTableSize 1000 -dnsCookie ENABLED -cookieSecretRotation 30 MIN
";

const FULL_TOML: &str = r#"version = 1

[dns]
nsid = "node-a"
tcp_idle_timeout = "15s"
tcp_max_connections = 200

[dns.rrl]
responses_per_second = 20
slip = 3
ipv4_prefix = 22
ipv6_prefix = 48
exempt = ["10.0.0.0/8", "::1/128"]
table_size = 1000

[dns.cookies]
enabled = true
secret_rotation = "30m"
"#;

fn full() -> DnsSettings {
    DnsSettings {
        nsid: Some(b"node-a".to_vec()),
        tcp_idle_timeout: Duration::from_secs(15),
        tcp_max_connections: 200,
        rrl: Some(RrlSettings {
            responses_per_second: 20,
            slip: 3,
            ipv4_prefix: 22,
            ipv6_prefix: 48,
            exempt: vec![(ip("10.0.0.0"), 8), (ip("::1"), 128)],
            table_size: 1000,
        }),
        cookies: Some(CookieSettings {
            secret_rotation: Duration::from_secs(1800),
        }),
    }
}

#[test]
fn every_setting_in_both_syntaxes() {
    assert_eq!(conf(FULL_CONF).dns, full());
    assert_eq!(toml(FULL_TOML).dns, full());
    let mut a = conf(FULL_CONF);
    let mut b = toml(FULL_TOML);
    a.warnings.clear();
    b.warnings.clear();
    assert_eq!(a, b);
}

#[test]
fn defaults_are_off_with_knot_like_tcp_limits() {
    let d = DnsSettings::default();
    assert_eq!(conf("").dns, d);
    assert_eq!(toml("version = 1\n").dns, d);
    assert_eq!(d.tcp_idle_timeout, Duration::from_secs(10));
    assert_eq!(d.tcp_max_connections, 1024);
    assert!(d.rrl.is_none() && d.cookies.is_none() && d.nsid.is_none());
    // A rate alone takes the other defaults.
    let r = conf("set dns parameter -rrlResponsesPerSecond 5\n")
        .dns
        .rrl
        .unwrap();
    assert_eq!(
        (r.slip, r.ipv4_prefix, r.ipv6_prefix, r.table_size),
        (2, 24, 56, 65536)
    );
    let t = toml("version = 1\n[dns.rrl]\nresponses_per_second = 5\n")
        .dns
        .rrl
        .unwrap();
    assert_eq!(r, t);
    // Cookies: the table alone turns them on, with a 1 h rotation.
    let c = toml("version = 1\n[dns.cookies]\n").dns.cookies.unwrap();
    assert_eq!(c.secret_rotation, Duration::from_secs(3600));
    assert!(
        toml("version = 1\n[dns.cookies]\nenabled = false\n")
            .dns
            .cookies
            .is_none()
    );
    assert!(
        conf("set dns parameter -dnsCookie DISABLED\n")
            .dns
            .cookies
            .is_none()
    );
    // NSID in hex.
    assert_eq!(
        toml("version = 1\n[dns]\nnsid_hex = \"6e6f6465\"\n")
            .dns
            .nsid,
        Some(b"node".to_vec())
    );
}

#[test]
fn bad_values_name_their_line() {
    one(
        conf_errors("\nset dns parameter -rrlSlip 2\n"),
        2,
        &["without a rate", "-rrlResponsesPerSecond"],
    );
    one(
        conf_errors("set dns parameter -rrlResponsesPerSecond 0\n"),
        1,
        &["-rrlResponsesPerSecond", "1 to 1000000"],
    );
    one(
        conf_errors("set dns parameter -rrlResponsesPerSecond 5 -rrlExempt 10.0.0.1/8\n"),
        1,
        &["-rrlExempt", "network address"],
    );
    one(
        conf_errors("set dns parameter -tcpIdleTimeout 0\n"),
        1,
        &["-tcpIdleTimeout", "out of range"],
    );
    one(
        conf_errors("set dns parameter -dnsCookie MAYBE\n"),
        1,
        &["-dnsCookie"],
    );
    one(
        conf_errors("set dns parameter -rrlResponsesPerSecond 5 -rrlIPv6Prefix 129\n"),
        1,
        &["-rrlIPv6Prefix"],
    );
    // Only the appliance's resolver options: outside Sextant's scope.
    one(
        conf_errors("set dns parameter -recursion DISABLED\n"),
        1,
        &["sextant import"],
    );
    one(
        toml_errors("version = 1\n[dns.rrl]\nslip = 2\n"),
        2,
        &["responses_per_second"],
    );
    one(
        toml_errors("version = 1\n[dns.rrl]\nresponses_per_second = 5\nexempt = [\"x\"]\n"),
        4,
        &["exempt"],
    );
    one(
        toml_errors("version = 1\n[dns]\ntcp_max_connections = 0\n"),
        3,
        &["tcp_max_connections"],
    );
    one(
        toml_errors("version = 1\n[dns]\nnsid_hex = \"abc\"\n"),
        3,
        &["nsid_hex"],
    );
    one(
        toml_errors("version = 1\n[dns]\nbogus = 1\n"),
        3,
        &["bogus"],
    );
    one(
        toml_errors("version = 1\n[dns.cookies]\nsecret_rotation = \"0s\"\n"),
        3,
        &["secret_rotation"],
    );
}

#[test]
fn appliance_resolver_options_beside_ours_are_accepted_with_a_warning() {
    let m = conf("set dns parameter -nsid n1 -maxUDPPacketSize 1280 -recursion DISABLED\n");
    assert_eq!(m.dns.nsid, Some(b"n1".to_vec()));
    assert_eq!(m.warnings.len(), 2, "{:#?}", m.warnings);
    assert!(m.warnings.iter().all(|w| w.contains("no effect")));
}
