//! DNS actions, DNS policies and global bindings, in both syntaxes: seed
//! 000's exact lines, the quoting rule for rules, errors with line and
//! column, limits, and agreement between the appliance and TOML syntaxes.

use sextant_config::{ConfigError, parse_appliance, parse_toml};
use sextant_core::policy::{DnsActionKind, Goto};
use sextant_core::{DnsActionId, DnsPolicyId, Expr, Location, Model};

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

fn errors(text: &str) -> Vec<ConfigError> {
    match parse_appliance(text, "t.conf") {
        Ok(_) => panic!("expected errors, the text parsed:\n{text}"),
        Err(e) => e.errors,
    }
}

fn errors_toml(text: &str) -> Vec<ConfigError> {
    match parse_toml(text, "t.toml") {
        Ok(_) => panic!("expected errors, the text parsed:\n{text}"),
        Err(e) => e.errors,
    }
}

/// Asserts exactly one error, on `line`, containing every one of `parts`.
fn one(errs: Vec<ConfigError>, line: usize, parts: &[&str]) -> ConfigError {
    assert_eq!(errs.len(), 1, "expected one error, got {errs:#?}");
    let e = errs.into_iter().next().expect("one");
    assert_eq!(e.line, line, "wrong line: {e:#?}");
    for p in parts {
        assert!(e.message.contains(p), "message {:?} lacks {p:?}", e.message);
    }
    e
}

fn loc(s: &str) -> Location {
    Location::parse(s).expect("location")
}

/// Seed 000's commands, exactly as the seed writes them, plus the binding
/// the seed describes in words ("bind the policy to the global request bind
/// point").
const SEED: &str = r#"add dns action prefLoc11 GslbPrefLoc -preferredLocList "Asia.HK" "Europe.UK"
add dns policy dnsPolPrefLoc "CLIENT.IP.SRC.MATCHES_LOCATION("\*.ZMB.\*.*")" prefLoc11
bind dns global dnsPolPrefLoc 100
"#;

fn check_seed_model(m: &Model) {
    assert_eq!(m.dns_actions.len(), 1);
    assert_eq!(m.dns_actions[DnsActionId::new(0)].name, "prefLoc11");
    assert_eq!(
        m.dns_actions[DnsActionId::new(0)].kind,
        DnsActionKind::PreferredLocations(vec![loc("Asia.HK"), loc("Europe.UK")])
    );
    assert_eq!(m.dns_policies.len(), 1);
    let p = &m.dns_policies[DnsPolicyId::new(0)];
    assert_eq!(p.name, "dnsPolPrefLoc");
    assert_eq!(p.rule, Expr::MatchesLocation(loc("*.ZMB.*.*")));
    assert_eq!(p.action, DnsActionId::new(0));
    assert_eq!(m.dns_global_bindings.len(), 1);
    let b = m.dns_global_bindings[0];
    assert_eq!(
        (b.policy, b.priority, b.goto),
        (DnsPolicyId::new(0), 100, Goto::End)
    );
}

#[test]
fn seed_000_lines() {
    let m = ok(SEED);
    check_seed_model(&m);
    assert_eq!(
        m.dns_policies[DnsPolicyId::new(0)].rule_text,
        r#"CLIENT.IP.SRC.MATCHES_LOCATION("\*.ZMB.\*.*")"#
    );
    // The seed's console prompt and "Done" lines are not part of a file,
    // but the commands also read with Windows line ends.
    check_seed_model(&ok(&SEED.replace('\n', "\r\n")));
}

#[test]
fn properly_escaped_rule_is_the_same() {
    let m = ok(
        r#"add dns action prefLoc11 GslbPrefLoc -preferredLocList "Asia.HK" "Europe.UK"
add dns policy dnsPolPrefLoc "CLIENT.IP.SRC.MATCHES_LOCATION(\"*.ZMB.*.*\")" prefLoc11
bind dns global dnsPolPrefLoc 100 -gotoPriorityExpression END -type REQ_DEFAULT
"#,
    );
    check_seed_model(&m);
    assert_eq!(
        m.dns_policies[DnsPolicyId::new(0)].rule_text,
        r#"CLIENT.IP.SRC.MATCHES_LOCATION("*.ZMB.*.*")"#
    );
    // Single quotes, and a rule with spaces inside its inner strings.
    let m = ok(r#"add dns action a NOOP
add dns policy p1 'CLIENT.IP.SRC.MATCHES_LOCATION("*.ZMB.*.*")' a
add dns policy p2 "DNS.REQ.QUESTION.DOMAIN.EQ("www.example.com") || CLIENT.IP.SRC.MATCHES_LOCATION("North America.US")" a
add dns policy p3 true a
"#);
    assert_eq!(
        m.dns_policies[DnsPolicyId::new(0)].rule,
        Expr::MatchesLocation(loc("*.ZMB.*.*"))
    );
    assert_eq!(
        m.dns_policies[DnsPolicyId::new(1)].rule,
        Expr::Or(
            Box::new(Expr::DomainEq("www.example.com".into())),
            Box::new(Expr::MatchesLocation(loc("North America.US")))
        )
    );
    assert_eq!(m.dns_policies[DnsPolicyId::new(2)].rule, Expr::Const(true));
}

#[test]
fn action_types() {
    let m = ok(
        "add dns action n1 noop\nadd dns action d1 Drop\nadd dns action p1 gslbpREFloc -preferredloclist Europe.*.*.*\n",
    );
    let kinds: Vec<&DnsActionKind> = m.dns_actions.iter().map(|a| &a.kind).collect();
    assert_eq!(
        kinds,
        [
            &DnsActionKind::Noop,
            &DnsActionKind::Drop,
            &DnsActionKind::PreferredLocations(vec![loc("Europe")])
        ]
    );
    let errs = errors("add dns action a1 Rewrite_Response -IPAddress 10.0.0.1\n");
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert!(errs[0].message.contains("unknown option -IPAddress"));
    assert!(errs[1].message.contains("not supported"));
    one(
        errors("add dns action a1 Rewrite_Response\n"),
        1,
        &[
            "add dns action a1: action type \"Rewrite_Response\" is not supported; supported: GslbPrefLoc, NOOP, DROP",
        ],
    );
    one(
        errors("add dns action a1 NOOP -preferredLocList Asia\n"),
        1,
        &["-preferredLocList applies to GslbPrefLoc actions only"],
    );
    one(
        errors("add dns action a1 GslbPrefLoc\n"),
        1,
        &["needs -preferredLocList"],
    );
    one(
        errors("add dns action a1 GslbPrefLoc -preferredLocList\n"),
        1,
        &["-preferredLocList needs at least one value"],
    );
    one(
        errors("add dns action a1 GslbPrefLoc -preferredLocList Asia \"Europe..UK\"\n"),
        1,
        &["preferred location 2", "qualifier 2 is empty"],
    );
    one(errors("add dns action a1\n"), 1, &["missing TYPE"]);
}

#[test]
fn at_most_eight_preferred_locations() {
    let eight = (1..=8)
        .map(|i| format!("\"c{i}\""))
        .collect::<Vec<_>>()
        .join(" ");
    let m = ok(&format!(
        "add dns action a GslbPrefLoc -preferredLocList {eight}\n"
    ));
    let DnsActionKind::PreferredLocations(list) = &m.dns_actions[DnsActionId::new(0)].kind else {
        panic!("not GslbPrefLoc");
    };
    assert_eq!(list.len(), 8);
    assert_eq!(list[0], loc("c1"));
    assert_eq!(list[7], loc("c8"));
    one(
        errors(&format!(
            "\nadd dns action a GslbPrefLoc -preferredLocList {eight} \"c9\"\n"
        )),
        2,
        &["9 locations given; at most 8 are allowed"],
    );
}

#[test]
fn rule_errors_carry_the_column_in_the_line() {
    // Column of "FOO" in the properly quoted form: the rule starts at 19.
    let line = r#"add dns policy p1 "true && CLIENT.IP.SRC.FOO(1)" a"#;
    let e = one(
        errors(&format!("add dns action a NOOP\n{line}\n")),
        2,
        &["add dns policy p1: rule: unknown function CLIENT.IP.SRC.FOO; supported:"],
    );
    let col = line.find("CLIENT").expect("in line") + 1;
    assert_eq!(e.column, Some(col));
    assert!(
        e.to_string().starts_with(&format!(
            "t.conf:2:{col}: add dns policy p1: rule: unknown function"
        )),
        "{e}"
    );

    // The seed's unescaped form: a bad location is reported at its string.
    let line = r#"add dns policy p1 "CLIENT.IP.SRC.MATCHES_LOCATION("\*..ZMB")" a"#;
    let e = one(
        errors(&format!("add dns action a NOOP\n{line}\n")),
        2,
        &["qualifier 2 is empty"],
    );
    assert_eq!(e.column, Some(line.find("(\"").expect("in line") + 2));

    // Escapes before the error point shift the column in the line.
    let line = r#"add dns policy p1 "DNS.REQ.QUESTION.DOMAIN.EQ(\"a\") &&" a"#;
    let e = one(
        errors(&format!("add dns action a NOOP\n{line}\n")),
        2,
        &["found the end of the expression"],
    );
    // The end of the rule is its closing quote.
    assert_eq!(e.column, Some(line.rfind("\" a").expect("in line") + 1));

    let line = "add dns policy p1 \"CLIENT.IP.SRC.IN_SUBNET(10.0.0.0/8) and true\" a";
    let e = one(
        errors(&format!("add dns action a NOOP\n{line}\n")),
        2,
        &[
            "expected && or || or the end of the expression, found \"and\"",
            "write && for a logical and",
        ],
    );
    assert_eq!(e.column, Some(line.find(" and").expect("in line") + 2));

    // Other problems of the line have no column.
    let e = one(errors("add dns policy p1 true\n"), 1, &["missing ACTION"]);
    assert_eq!(e.column, None);
    assert_eq!(e.to_string(), format!("t.conf:1: {}", e.message));
}

#[test]
fn references_are_checked() {
    one(
        errors("add dns policy p1 true nosuch\n"),
        1,
        &[
            "add dns policy p1: dns action \"nosuch\" is not defined (add it with \"add dns action\")",
        ],
    );
    one(
        errors("add dns action a NOOP\nadd dns policy p1 true a\nbind dns global p2 10\n"),
        3,
        &["bind dns global p2: dns policy \"p2\" is not defined"],
    );
    // Names are case-insensitive, and may be defined after their use.
    let m = ok("bind dns global P1 10\nadd dns policy p1 true A\nadd dns action a DROP\n");
    assert_eq!(m.dns_global_bindings.len(), 1);
    one(
        errors("add dns action a NOOP\nadd dns action A DROP\n"),
        2,
        &["dns action \"A\" is already defined on line 1"],
    );
    one(
        errors("add dns action a NOOP\nadd dns policy p true a\nadd dns policy P false a\n"),
        3,
        &["dns policy \"P\" is already defined on line 2"],
    );
    one(
        errors("add dns action a NOOP\nadd dns policy p true a -undoAction x\n"),
        2,
        &["unknown option -undoAction"],
    );
}

#[test]
fn bindings_order_and_limits() {
    let m = ok(concat!(
        "add dns action a NOOP\n",
        "add dns policy p1 true a\n",
        "add dns policy p2 true a\n",
        "add dns policy p3 true a\n",
        "add dns policy p4 true a\n",
        "bind dns global p1 300\n",
        "bind dns global p2 100 -gotoPriorityExpression next\n",
        "bind dns global p3 2147483647 -type req_default\n",
        // Another bind point: its own priorities, evaluated first.
        "bind dns global p4 100 -type REQ_OVERRIDE\n",
    ));
    let order: Vec<(DnsPolicyId, u32, Goto)> = m
        .dns_global_bindings
        .iter()
        .map(|b| (b.policy, b.priority, b.goto))
        .collect();
    assert_eq!(
        order,
        [
            (DnsPolicyId::new(3), 100, Goto::End),
            (DnsPolicyId::new(1), 100, Goto::Next),
            (DnsPolicyId::new(0), 300, Goto::End),
            (DnsPolicyId::new(2), 2147483647, Goto::End)
        ]
    );

    const PS: &str = "add dns action a NOOP\nadd dns policy p1 true a\nadd dns policy p2 true a\n";
    one(
        errors(&format!(
            "{PS}bind dns global p1 10\nbind dns global p2 10\n"
        )),
        5,
        &[
            "priority 10 is already used by dns policy \"p1\" (line 4); priorities are unique per bind point (REQ_DEFAULT)",
        ],
    );
    one(
        errors(&format!(
            "{PS}bind dns global p1 10\nbind dns global p1 20\n"
        )),
        5,
        &["dns policy \"p1\" is already bound to the global REQ_DEFAULT bind point (line 4)"],
    );
    one(
        errors(&format!("{PS}bind dns global p1 0\n")),
        4,
        &["PRIORITY: expected a whole number from 1 to 2147483647, found 0"],
    );
    one(
        errors(&format!("{PS}bind dns global p1 2147483648\n")),
        4,
        &["from 1 to 2147483647"],
    );
    one(
        errors(&format!(
            "{PS}bind dns global p1 10 -gotoPriorityExpression USE_INVOCATION_RESULT\n"
        )),
        4,
        &["-gotoPriorityExpression: expected END or NEXT, found \"USE_INVOCATION_RESULT\""],
    );
    one(
        errors(&format!("{PS}bind dns global p1 10 -type RES_DEFAULT\n")),
        4,
        &["response-time policies are not supported"],
    );
    one(
        errors(&format!("{PS}bind dns global p1 10 -type OTHER\n")),
        4,
        &["expected REQ_DEFAULT or REQ_OVERRIDE, found \"OTHER\""],
    );
    one(
        errors(&format!("{PS}bind dns global p1\n")),
        4,
        &["missing PRIORITY"],
    );
}

// ---------------------------------------------------------------------------
// Native TOML

const SEED_TOML: &str = r#"version = 1

[[dns_action]]
name = "prefLoc11"
type = "GslbPrefLoc"
preferred_locations = ["Asia.HK", "Europe.UK"]

[[dns_policy]]
name = "dnsPolPrefLoc"
rule = 'CLIENT.IP.SRC.MATCHES_LOCATION("\*.ZMB.\*.*")'
action = "prefLoc11"
bind = { priority = 100 }
"#;

#[test]
fn toml_gives_the_same_model() {
    let toml = ok_toml(SEED_TOML);
    check_seed_model(&toml);
    let conf = ok(SEED);
    assert_eq!(toml.dns_actions, conf.dns_actions);
    assert_eq!(toml.dns_policies, conf.dns_policies);
    assert_eq!(toml.dns_global_bindings, conf.dns_global_bindings);

    let conf = ok(concat!(
        "add dns action n NOOP\n",
        "add dns action d DROP\n",
        "add dns policy p1 \"DNS.REQ.QUESTION.TYPE.EQ(AAAA) && !CLIENT.IP.SRC.IN_SUBNET(2001:db8::/32)\" d\n",
        "add dns policy p2 'DNS.REQ.QUESTION.DOMAIN.ENDSWITH(\"example.com\")' n\n",
        "add dns policy p3 false n\n",
        "bind dns global p1 20 -gotoPriorityExpression NEXT\n",
        "bind dns global p2 10 -type REQ_OVERRIDE\n",
    ));
    let toml = ok_toml(
        r#"version = 1
[[dns_action]]
name = "n"
type = "noop"
[[dns_action]]
name = "d"
type = "DROP"
[[dns_policy]]
name = "p1"
rule = "DNS.REQ.QUESTION.TYPE.EQ(AAAA) && !CLIENT.IP.SRC.IN_SUBNET(2001:db8::/32)"
action = "d"
bind = { priority = 20, goto = "NEXT" }
[[dns_policy]]
name = "p2"
rule = "DNS.REQ.QUESTION.DOMAIN.ENDSWITH(\"example.com\")"
action = "n"
bind = { priority = 10, type = "REQ_OVERRIDE" }
[[dns_policy]]
name = "p3"
rule = "false"
action = "n"
"#,
    );
    assert_eq!(toml.dns_actions, conf.dns_actions);
    assert_eq!(toml.dns_policies, conf.dns_policies);
    assert_eq!(toml.dns_global_bindings, conf.dns_global_bindings);
    assert_eq!(toml.dns_global_bindings[0].policy, DnsPolicyId::new(1));
}

#[test]
fn toml_errors() {
    // Strict keys.
    one(
        errors_toml("version = 1\n[[dns_action]]\nname = \"a\"\ntype = \"NOOP\"\nttl = 5\n"),
        5,
        &["[[dns_action]]", "unknown field `ttl`"],
    );
    one(
        errors_toml(
            "version = 1\n[[dns_action]]\nname = \"a\"\ntype = \"NOOP\"\n[[dns_policy]]\nname = \"p\"\nrule = \"true\"\naction = \"a\"\nbind = { priority = 1, prio = 2 }\n",
        ),
        9,
        &["unknown field `prio`"],
    );
    // Types, limits and references.
    one(
        errors_toml("version = 1\n[[dns_action]]\nname = \"a\"\ntype = \"Cache_Bypass\"\n"),
        4,
        &[
            "[[dns_action]] a: type: action type \"Cache_Bypass\" is not supported; supported: GslbPrefLoc, NOOP, DROP",
        ],
    );
    let nine = (1..=9)
        .map(|i| format!("\"c{i}\""))
        .collect::<Vec<_>>()
        .join(", ");
    one(
        errors_toml(&format!(
            "version = 1\n[[dns_action]]\nname = \"a\"\ntype = \"GslbPrefLoc\"\npreferred_locations = [{nine}]\n"
        )),
        5,
        &["preferred_locations: 9 locations given; at most 8 are allowed"],
    );
    one(
        errors_toml(
            "version = 1\n[[dns_action]]\nname = \"a\"\ntype = \"GslbPrefLoc\"\npreferred_locations = []\n",
        ),
        5,
        &["needs at least one preferred location"],
    );
    one(
        errors_toml("version = 1\n[[dns_action]]\nname = \"a\"\ntype = \"GslbPrefLoc\"\n"),
        3,
        &["needs preferred_locations"],
    );
    one(
        errors_toml(
            "version = 1\n[[dns_policy]]\nname = \"p\"\nrule = \"true\"\naction = \"zz\"\n",
        ),
        5,
        &[
            "[[dns_policy]] p: dns action \"zz\" is not defined (add a [[dns_action]] table with name = \"zz\")",
        ],
    );
    const A: &str = "version = 1\n[[dns_action]]\nname = \"a\"\ntype = \"NOOP\"\n";
    one(
        errors_toml(&format!(
            "{A}[[dns_policy]]\nname = \"p\"\nrule = \"true\"\naction = \"a\"\nbind = {{ priority = 0 }}\n"
        )),
        9,
        &["bind: priority: expected a whole number from 1 to 2147483647, found 0"],
    );
    one(
        errors_toml(&format!(
            "{A}[[dns_policy]]\nname = \"p\"\nrule = \"true\"\naction = \"a\"\nbind = {{ priority = 5 }}\n[[dns_policy]]\nname = \"q\"\nrule = \"true\"\naction = \"a\"\nbind = {{ priority = 5, goto = \"END\" }}\n"
        )),
        14,
        &["priority 5 is already used by dns policy \"p\" (line 9)"],
    );
    one(
        errors_toml(&format!(
            "{A}[[dns_policy]]\nname = \"p\"\nrule = \"true\"\naction = \"a\"\nbind = {{ priority = 5, goto = \"LATER\" }}\n"
        )),
        9,
        &["bind: goto: expected END or NEXT"],
    );

    // Rule errors with the column in the file's line: literal string...
    let line = "rule = 'true && CLIENT.IP.SRC.BAR(1)'";
    let e = one(
        errors_toml(&format!(
            "{A}[[dns_policy]]\nname = \"p\"\n{line}\naction = \"a\"\n"
        )),
        7,
        &["[[dns_policy]] p: rule: unknown function CLIENT.IP.SRC.BAR"],
    );
    assert_eq!(e.column, Some(line.find("CLIENT").expect("in line") + 1));
    // ...basic string with escapes before the error...
    let line = r#"rule = "DNS.REQ.QUESTION.DOMAIN.EQ(\"a\") ? true""#;
    let e = one(
        errors_toml(&format!(
            "{A}[[dns_policy]]\nname = \"p\"\n{line}\naction = \"a\"\n"
        )),
        7,
        &["found \"?\""],
    );
    assert_eq!(e.column, Some(line.find('?').expect("in line") + 1));
    // ...and a multi-line string, where the column is the rule's own.
    let e = one(
        errors_toml(&format!(
            "{A}[[dns_policy]]\nname = \"p\"\nrule = '''\ntrue ?'''\naction = \"a\"\n"
        )),
        7,
        &["rule: column 6 of the rule: expected && or ||"],
    );
    assert_eq!(e.column, None);
    // The binding of a policy whose table failed causes no further errors.
    one(
        errors_toml(&format!(
            "{A}[[dns_policy]]\nname = \"p\"\nrule = 5\naction = \"a\"\n"
        )),
        7,
        &["[[dns_policy]]", "invalid type"],
    );
}

mod no_panic {
    use proptest::prelude::*;
    use sextant_config::{parse_appliance, parse_toml};

    const PIECES: &[&str] = &[
        "add dns policy p ",
        "add dns action a ",
        "bind dns global p ",
        "GslbPrefLoc ",
        "NOOP ",
        "-preferredLocList ",
        "-gotoPriorityExpression ",
        "-type ",
        "CLIENT.IP.SRC.MATCHES_LOCATION(",
        "CLIENT.IP.SRC.IN_SUBNET(",
        "DNS.REQ.QUESTION.DOMAIN.EQ(",
        ")",
        "(",
        "\"",
        "'",
        "\\",
        "\\*",
        "\\\"",
        " ",
        "é",
        "#",
        "&&",
        "||",
        "!",
        "10.0.0.0/8",
        "Asia.*",
        " a",
        " 10",
        "\t",
        "\n",
    ];

    proptest! {
        #[test]
        fn appliance_policy_lines(parts in proptest::collection::vec(proptest::sample::select(PIECES), 0..30)) {
            let text: String = parts.concat();
            if let Err(e) = parse_appliance(&text, "t.conf") {
                for e in e.errors {
                    if let Some(c) = e.column {
                        let line = text.lines().nth(e.line - 1).unwrap_or("");
                        prop_assert!(c >= 1 && c <= line.chars().count() + 1, "{} in {:?}", e, line);
                    }
                }
            }
        }

        #[test]
        fn toml_rules(rule in "\\PC{0,40}", quote in 0..3usize) {
            let written = match quote {
                0 => format!("'{}'", rule.replace('\'', "")),
                1 => format!("{:?}", rule),
                _ => format!("'''{}'''", rule.replace('\'', "")),
            };
            let text = format!(
                "version = 1\n[[dns_action]]\nname = \"a\"\ntype = \"NOOP\"\n[[dns_policy]]\nname = \"p\"\nrule = {written}\naction = \"a\"\n"
            );
            if let Err(e) = parse_toml(&text, "t.toml") {
                for e in e.errors {
                    if let Some(c) = e.column {
                        let line = text.lines().nth(e.line - 1).unwrap_or("");
                        prop_assert!(c >= 1 && c <= line.chars().count() + 1, "{} in {:?}", e, line);
                    }
                }
            }
        }
    }
}
