//! Static records in both syntaxes: every command's parse, its errors
//! (file:line and reason), and the same model from either syntax.

use std::net::{Ipv4Addr, Ipv6Addr};

use sextant_config::{parse_appliance, parse_toml};
use sextant_core::{Model, RecordData, StaticRecord, ZoneId};

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

fn errors(text: &str) -> Vec<(usize, String)> {
    match parse_appliance(text, "t.conf") {
        Ok(_) => panic!("expected errors, the text parsed"),
        Err(e) => e
            .errors
            .iter()
            .map(|e| (e.line, e.message.clone()))
            .collect(),
    }
}

fn toml_errors(text: &str) -> Vec<(usize, String)> {
    match parse_toml(text, "t.toml") {
        Ok(_) => panic!("expected errors, the text parsed"),
        Err(e) => e
            .errors
            .iter()
            .map(|e| (e.line, e.message.clone()))
            .collect(),
    }
}

/// Asserts exactly one error, on `line`, containing every one of `parts`.
fn one_error(text: &str, line: usize, parts: &[&str]) {
    check_one(errors(text), line, parts);
}

fn check_one(errs: Vec<(usize, String)>, line: usize, parts: &[&str]) {
    assert_eq!(errs.len(), 1, "expected one error, got {errs:#?}");
    assert_eq!(errs[0].0, line, "wrong line: {errs:#?}");
    for p in parts {
        assert!(errs[0].1.contains(p), "message {:?} lacks {p:?}", errs[0].1);
    }
}

const ZONE: &str = "add dns soaRec example.com -originServer ns1.example.com -contact hostmaster.example.com\nadd dns nsRec example.com ns1.example.com\n";

fn rec(name: &str, ttl: u32, data: RecordData) -> StaticRecord {
    StaticRecord {
        name: name.to_string(),
        ttl,
        data,
    }
}

/// Every command as a saved file writes it, and the records it makes.
const EVERY_TYPE: &str = "\
add dns addRec ns1.example.com 192.0.2.53
add dns addRec WWW.Example.COM. 192.0.2.1 192.0.2.2 -TTL 300
add dns aaaaRec ns1.example.com 2001:db8::53 -TTL 600
add dns cnameRec alias.example.com www.example.com
add dns mxRec example.com -mx mail.example.com -pref 10 -TTL 900
add dns txtRec example.com \"v=spf1 -all\" \"second string\"
add dns srvRec _sip._tcp.example.com sip.example.com -priority 1 -weight 5 -port 5060
add dns nsRec child.example.com ns.child.example.com -TTL 7200
add dns addRec ns.child.example.com 192.0.2.99
add dns zone example.com -proxyMode NO -dnssecOffload DISABLED -nsec DISABLED
";

fn every_type_records() -> Vec<StaticRecord> {
    vec![
        rec(
            "_sip._tcp.example.com",
            3600,
            RecordData::Srv {
                priority: 1,
                weight: 5,
                port: 5060,
                target: "sip.example.com".into(),
            },
        ),
        rec(
            "alias.example.com",
            3600,
            RecordData::Cname("www.example.com".into()),
        ),
        rec(
            "child.example.com",
            7200,
            RecordData::Ns("ns.child.example.com".into()),
        ),
        rec(
            "example.com",
            900,
            RecordData::Mx {
                preference: 10,
                exchange: "mail.example.com".into(),
            },
        ),
        rec(
            "example.com",
            3600,
            RecordData::Txt(vec!["v=spf1 -all".into(), "second string".into()]),
        ),
        rec(
            "ns.child.example.com",
            3600,
            RecordData::A(Ipv4Addr::new(192, 0, 2, 99)),
        ),
        rec(
            "ns1.example.com",
            3600,
            RecordData::A(Ipv4Addr::new(192, 0, 2, 53)),
        ),
        rec(
            "ns1.example.com",
            600,
            RecordData::Aaaa("2001:db8::53".parse::<Ipv6Addr>().unwrap()),
        ),
        rec(
            "www.example.com",
            300,
            RecordData::A(Ipv4Addr::new(192, 0, 2, 1)),
        ),
        rec(
            "www.example.com",
            300,
            RecordData::A(Ipv4Addr::new(192, 0, 2, 2)),
        ),
    ]
}

#[test]
fn every_command_builds_its_records() {
    let m = ok(&format!("{ZONE}{EVERY_TYPE}"));
    assert_eq!(m.records, every_type_records());
    // The delegation is not a zone of ours; example.com is.
    assert_eq!(m.zones.len(), 1);
    assert_eq!(m.zones[ZoneId::new(0)].apex, "example.com");
}

const EVERY_TYPE_TOML: &str = r#"
version = 1
[[zone]]
apex = "example.com"
ns = ["ns1.example.com"]
soa = { origin_server = "ns1.example.com", contact = "hostmaster.example.com" }

[[record]]
name = "ns1.example.com"
type = "A"
addresses = ["192.0.2.53"]

[[record]]
name = "WWW.Example.COM."
type = "a"
addresses = ["192.0.2.1", "192.0.2.2"]
ttl = 300

[[record]]
name = "ns1.example.com"
type = "AAAA"
addresses = ["2001:db8::53"]
ttl = 600

[[record]]
name = "alias.example.com"
type = "CNAME"
target = "www.example.com"

[[record]]
name = "example.com"
type = "MX"
exchange = "mail.example.com"
preference = 10
ttl = 900

[[record]]
name = "example.com"
type = "TXT"
text = ["v=spf1 -all", "second string"]

[[record]]
name = "_sip._tcp.example.com"
type = "SRV"
target = "sip.example.com"
priority = 1
weight = 5
port = 5060

[[record]]
name = "child.example.com"
type = "NS"
target = "ns.child.example.com"
ttl = 7200

[[record]]
name = "ns.child.example.com"
type = "A"
addresses = ["192.0.2.99"]
"#;

#[test]
fn both_syntaxes_build_the_same_records() {
    let a = ok(&format!("{ZONE}{EVERY_TYPE}"));
    let b = ok_toml(EVERY_TYPE_TOML);
    assert_eq!(b.records, every_type_records());
    assert_eq!(a, b);
}

#[test]
fn root_hints_are_named_as_such() {
    one_error(
        "add dns nsRec . a.root-servers.net -TTL 3600000\n",
        1,
        &[
            "the root name \".\"",
            "root hints",
            "resolver",
            "sextant import",
        ],
    );
    one_error(
        &format!("{ZONE}add dns addRec a.root-servers.net 198.41.0.4 -TTL 3600000\n"),
        3,
        &[
            "\"a.root-servers.net\" is not in a zone Sextant serves",
            "\"example.com\"",
            "root hints",
        ],
    );
    one_error(
        &format!("{ZONE}add dns addRec . 192.0.2.1\n"),
        3,
        &["the root name \".\""],
    );
}

#[test]
fn records_outside_our_zones_name_the_zones() {
    one_error(
        &format!("{ZONE}add dns addRec www.example.net 192.0.2.1\n"),
        3,
        &[
            "add dns addRec www.example.net",
            "\"www.example.net\" is not in a zone Sextant serves",
            "the zones are \"example.com\"",
            "add dns soaRec",
        ],
    );
    check_one(
        toml_errors(
            "version = 1\n[[record]]\nname = \"www.example.net\"\ntype = \"A\"\naddresses = [\"192.0.2.1\"]\n",
        ),
        3,
        &[
            "[[record]] www.example.net A",
            "no zone is defined",
            "[[zone]]",
        ],
    );
}

#[test]
fn cname_conflicts_name_both_lines() {
    one_error(
        &format!(
            "{ZONE}add dns cnameRec www.example.com other.example.net\nadd dns addRec www.example.com 192.0.2.1\n"
        ),
        4,
        &["has a CNAME (line 3)", "A record"],
    );
    one_error(
        &format!("{ZONE}add dns cnameRec example.com other.example.net\n"),
        3,
        &["zone apex", "CNAME"],
    );
    one_error(
        &format!(
            "{ZONE}add gslb vserver vs HTTP\nbind gslb vserver vs -domainName www.example.com\nadd dns cnameRec www.example.com other.example.net\n"
        ),
        5,
        &["GSLB domain", "line 4", "CNAME"],
    );
}

#[test]
fn a_gslb_domain_cannot_also_be_a_static_address() {
    one_error(
        &format!(
            "{ZONE}add gslb vserver vs HTTP\nbind gslb vserver vs -domainName www.example.com\nadd dns addRec www.example.com 192.0.2.1\n"
        ),
        5,
        &["GSLB domain on line 4", "A answers are computed"],
    );
    // Other types at a GSLB name are fine.
    let m = ok(&format!(
        "{ZONE}add gslb vserver vs HTTP\nbind gslb vserver vs -domainName www.example.com\nadd dns txtRec www.example.com \"hello\"\n"
    ));
    assert_eq!(m.records.len(), 1);
}

#[test]
fn duplicates_are_errors() {
    one_error(
        &format!(
            "{ZONE}add dns addRec a.example.com 192.0.2.1\nadd dns addRec a.example.com 192.0.2.1\n"
        ),
        4,
        &["already given on line 3"],
    );
}

#[test]
fn delegations_allow_only_glue_below() {
    let base = format!("{ZONE}add dns nsRec child.example.com ns.child.example.com\n");
    one_error(
        &format!("{base}add dns txtRec x.child.example.com \"t\"\n"),
        4,
        &[
            "inside the child zone \"child.example.com\" delegated on line 3",
            "glue",
        ],
    );
    one_error(
        &format!("{base}add dns addRec child.example.com 192.0.2.1\n"),
        4,
        &["the apex of the child zone"],
    );
    one_error(
        &format!(
            "{base}add gslb vserver vs HTTP\nbind gslb vserver vs -domainName www.child.example.com\n"
        ),
        5,
        &["GSLB domain \"www.child.example.com\" is inside the child zone"],
    );
    // With an SOA (or add dns zone), a name below our zone is a zone of ours.
    let m = ok(&format!(
        "{ZONE}add dns soaRec sub.example.com -originServer ns1.example.com -contact h.example.com\nadd dns nsRec sub.example.com ns1.example.com\n"
    ));
    assert_eq!(m.zones.len(), 2);
    assert!(m.records.is_empty());
    let m = ok(&format!(
        "{ZONE}add dns zone sub.example.com -proxyMode NO\nadd dns nsRec sub.example.com ns1.example.com\n"
    ));
    assert_eq!(m.zones.len(), 2);
}

#[test]
fn zone_command_options() {
    let m = ok(&format!(
        "{ZONE}add dns zone example.com -proxyMode NO -type ADNS\n"
    ));
    assert_eq!(m.zones.len(), 1);
    one_error(
        &format!("{ZONE}add dns zone example.com -proxyMode YES\n"),
        3,
        &[
            "-proxyMode YES",
            "only an authoritative server",
            "-proxyMode NO",
        ],
    );
    one_error(
        &format!("{ZONE}add dns zone example.com\n"),
        3,
        &["-proxyMode is required"],
    );
    // The appliance's DNSSEC switches are accepted (a zone with keys is
    // signed, docs/dnssec.md); a value other than ENABLED/DISABLED is not,
    // nor a key that no `add dns key` names.
    let m = ok(&format!(
        "{ZONE}add dns zone example.com -proxyMode NO -dnssecOffload ENABLED -nsec ENABLED\n"
    ));
    assert!(m.dnssec.is_empty(), "no keys, nothing signed");
    one_error(
        &format!("{ZONE}add dns zone example.com -proxyMode NO -dnssecOffload MAYBE\n"),
        3,
        &["-dnssecOffload: expected ENABLED or DISABLED"],
    );
    one_error(
        &format!("{ZONE}add dns zone example.com -proxyMode NO -keyName example.com.ksk\n"),
        3,
        &["no key named \"example.com.ksk\"", "add dns key"],
    );
    one_error(
        &format!(
            "{ZONE}add dns zone example.com -proxyMode NO\nadd dns zone example.com -proxyMode NO\n"
        ),
        4,
        &["already added on line 3"],
    );
}

#[test]
fn value_errors_carry_their_line() {
    one_error(
        &format!("{ZONE}add dns addRec a.example.com 2001:db8::1\n"),
        3,
        &["IPv6", "add dns aaaaRec"],
    );
    one_error(
        &format!("{ZONE}add dns aaaaRec a.example.com 192.0.2.1\n"),
        3,
        &["IPv4", "add dns addRec"],
    );
    one_error(
        &format!("{ZONE}add dns addRec a.example.com\n"),
        3,
        &["missing IP"],
    );
    one_error(
        &format!("{ZONE}add dns addRec a.example.com 192.0.2.1 -TTL x\n"),
        3,
        &["-TTL"],
    );
    one_error(
        &format!("{ZONE}add dns mxRec example.com -pref 10\n"),
        3,
        &["-mx is required"],
    );
    one_error(
        &format!("{ZONE}add dns mxRec example.com -mx m.example.com -pref 70000\n"),
        3,
        &["-pref"],
    );
    one_error(
        &format!("{ZONE}add dns srvRec _s._tcp.example.com t.example.com -priority 1 -weight 1\n"),
        3,
        &["-port is required"],
    );
    one_error(
        &format!("{ZONE}add dns txtRec example.com\n"),
        3,
        &["missing STRING"],
    );
    one_error(
        &format!("{ZONE}add dns txtRec example.com \"{}\"\n", "x".repeat(256)),
        3,
        &["256 bytes", "at most 255", "split it"],
    );
    one_error(
        &format!("{ZONE}add dns cnameRec a.example.com bad..name\n"),
        3,
        &["target", "empty label"],
    );
    one_error(
        &format!("{ZONE}add dns addRec a.example.com 192.0.2.1 -ecssubnet 10.0.0.0/8\n"),
        3,
        &["-ecssubnet", "not supported"],
    );
}

#[test]
fn toml_value_errors_carry_their_line() {
    let zone = "version = 1\n[[zone]]\napex = \"example.com\"\nns = [\"ns1.example.com\"]\n";
    check_one(
        toml_errors(&format!(
            "{zone}[[record]]\nname = \"a.example.com\"\ntype = \"MX\"\nexchange = \"m.example.com\"\n"
        )),
        6,
        &["preference is required"],
    );
    check_one(
        toml_errors(&format!(
            "{zone}[[record]]\nname = \"a.example.com\"\ntype = \"A\"\naddresses = [\"192.0.2.1\"]\ntarget = \"x.example.com\"\n"
        )),
        9,
        &["target does not apply to a A record"],
    );
    check_one(
        toml_errors(&format!(
            "{zone}[[record]]\nname = \"a.example.com\"\ntype = \"PTR\"\n"
        )),
        7,
        &["expected one of A, AAAA"],
    );
    check_one(
        toml_errors(&format!(
            "{zone}[[record]]\nname = \"example.com\"\ntype = \"NS\"\ntarget = \"ns2.example.com\"\n"
        )),
        6,
        &["zone apex", "ns = [...]"],
    );
}

/// `add dns dsRec` and a `[[record]]` of type DS: the same record, at a
/// delegation or at a zone of ours below another; a DS elsewhere, a digest
/// of the wrong length or not hexadecimal, a missing option: errors with
/// their line.
#[test]
fn ds_records_in_both_syntaxes_and_their_errors() {
    let digest = "C910CF9C35870F4A5FD8ECBBEB274D1105A11BCAB4F6DFB9E070AC05601BC5AC";
    let bytes: Vec<u8> = (0..32)
        .map(|i| u8::from_str_radix(&digest[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let want = |name: &str, ttl: u32| {
        rec(
            name,
            ttl,
            RecordData::Ds {
                key_tag: 21170,
                algorithm: 13,
                digest_type: 2,
                digest: bytes.clone(),
            },
        )
    };
    let text = format!(
        "{ZONE}add dns nsRec away.example.com ns.away.example.com\n\
         add dns soaRec sub.example.com -originServer ns1.example.com -contact hostmaster.example.com\n\
         add dns dsRec away.example.com -keyTag 21170 -algorithm 13 -digestType 2 -digest {digest}\n\
         add dns dsRec sub.example.com -keyTag 21170 -algorithm 13 -digestType 2 -digest {} -TTL 60\n",
        digest.to_lowercase()
    );
    let m = ok(&text);
    let ds: Vec<&StaticRecord> = m
        .records
        .iter()
        .filter(|r| matches!(r.data, RecordData::Ds { .. }))
        .collect();
    assert_eq!(
        ds,
        vec![
            &want("away.example.com", 3600),
            &want("sub.example.com", 60)
        ]
    );
    let toml = format!(
        "version = 1\n[[zone]]\napex = \"example.com\"\nns = [\"ns1.example.com\"]\n\
         [[zone]]\napex = \"sub.example.com\"\nns = [\"ns1.example.com\"]\n\
         [[record]]\nname = \"sub.example.com\"\ntype = \"DS\"\nttl = 60\nkey_tag = 21170\n\
         algorithm = 13\ndigest_type = 2\ndigest = \"{digest}\"\n"
    );
    let m = ok_toml(&toml);
    assert!(
        m.records.contains(&want("sub.example.com", 60)),
        "{:?}",
        m.records
    );

    let line = ZONE.lines().count() + 1;
    one_error(
        &format!(
            "{ZONE}add dns dsRec www.example.com -keyTag 1 -algorithm 13 -digestType 2 -digest {digest}\n"
        ),
        line,
        &[
            "add dns dsRec www.example.com",
            "a DS record belongs to the parent side of a zone cut",
            "is not a delegation",
        ],
    );
    one_error(
        &format!(
            "{ZONE}add dns dsRec example.com -keyTag 1 -algorithm 13 -digestType 2 -digest {digest}\n"
        ),
        line,
        &["\"example.com\" is a zone of ours with no parent zone here"],
    );
    one_error(
        &format!(
            "{ZONE}add dns nsRec a.example.com ns.a.example.com\nadd dns dsRec a.example.com -keyTag 1 -algorithm 13 -digestType 2 -digest ABCD\n"
        ),
        line + 1,
        &["a digest of type 2 is 32 bytes (64 hex digits); this one is 2 bytes"],
    );
    one_error(
        &format!(
            "{ZONE}add dns nsRec a.example.com ns.a.example.com\nadd dns dsRec a.example.com -keyTag 1 -algorithm 13 -digestType 2 -digest XYZ1\n"
        ),
        line + 1,
        &["-digest", "hexadecimal"],
    );
    one_error(
        &format!(
            "{ZONE}add dns nsRec a.example.com ns.a.example.com\nadd dns dsRec a.example.com -keyTag 1 -algorithm 13 -digestType 2\n"
        ),
        line + 1,
        &["-digest is required"],
    );
    let bad_toml = toml.replace(&format!("digest = \"{digest}\""), "digest = \"AB\"");
    check_one(
        toml_errors(&bad_toml),
        9,
        &["[[record]] sub.example.com DS", "this one is 1 bytes"],
    );
}
