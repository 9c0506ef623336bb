//! GSLB parameters, site options and DNS policy pieces that saved appliance
//! configurations use (issue 11, item 3), in both syntaxes:
//! `-GSLBSvcStateDelayTime`, `-SvcStateLearningTime`, `-sitePassword` (clear,
//! encrypted, placeholder), `-clip`, `-publicCLIP`, `-naptrReplacementSuffix`,
//! `-logAction` and the built-in DNS actions.

use std::time::Duration;

use sextant_config::{REENTER_PREFIX, parse_appliance, parse_toml};
use sextant_core::policy::DnsActionKind;
use sextant_core::{DnsPolicyId, Model, SiteId, SitePassword};

fn ok(text: &str) -> Model {
    parse_appliance(text, "t.conf").unwrap_or_else(|e| panic!("expected success, got:\n{e}"))
}

fn ok_toml(text: &str) -> Model {
    parse_toml(text, "t.toml").unwrap_or_else(|e| panic!("expected success, got:\n{e}"))
}

/// Every error as `LINE: message`.
fn errors(text: &str) -> Vec<String> {
    match parse_appliance(text, "t.conf") {
        Ok(_) => panic!("expected errors, the text parsed:\n{text}"),
        Err(e) => e
            .errors
            .iter()
            .map(|e| format!("{}: {}", e.line, e.message))
            .collect(),
    }
}

fn errors_toml(text: &str) -> Vec<String> {
    match parse_toml(text, "t.toml") {
        Ok(_) => panic!("expected errors, the text parsed:\n{text}"),
        Err(e) => e
            .errors
            .iter()
            .map(|e| format!("{}: {}", e.line, e.message))
            .collect(),
    }
}

const SITES: &str = "add gslb site s1 10.0.0.1 -siteType LOCAL\n";

#[test]
fn svc_state_times_default_to_zero_and_are_read_in_both_syntaxes() {
    let m = ok(SITES);
    assert_eq!(m.params.svc_state_delay, Duration::ZERO);
    assert_eq!(m.params.svc_state_learning, Duration::ZERO);
    let m = ok(&format!(
        "{SITES}set gslb parameter -GSLBSvcStateDelayTime 10 -SvcStateLearningTime 30\n"
    ));
    assert_eq!(m.params.svc_state_delay, Duration::from_secs(10));
    assert_eq!(m.params.svc_state_learning, Duration::from_secs(30));
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    // 0 is the appliance's default and turns them off; 3600 is the limit.
    let m = ok(&format!(
        "{SITES}set gslb parameter -GSLBSvcStateDelayTime 0 -SvcStateLearningTime 3600\n"
    ));
    assert_eq!(m.params.svc_state_delay, Duration::ZERO);
    assert_eq!(m.params.svc_state_learning, Duration::from_secs(3600));
    let e = errors(&format!(
        "{SITES}set gslb parameter -GSLBSvcStateDelayTime 3601\n"
    ));
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].starts_with(
            "2: set gslb parameter: -GSLBSvcStateDelayTime: 3601s is out of range; expected 0 to"
        ),
        "{e:?}"
    );
    let e = errors(&format!(
        "{SITES}set gslb parameter -SvcStateLearningTime soon\n"
    ));
    assert!(e[0].contains("-SvcStateLearningTime"), "{e:?}");

    let toml = "version = 1\n[gslb]\nsvc_state_delay_time = \"10s\"\nsvc_state_learning_time = \"0s\"\n[[site]]\nname = \"s1\"\nip = \"10.0.0.1\"\n";
    let m = ok_toml(toml);
    assert_eq!(m.params.svc_state_delay, Duration::from_secs(10));
    assert_eq!(m.params.svc_state_learning, Duration::ZERO);
    let e = errors_toml(&toml.replace("\"10s\"", "\"2h\""));
    assert!(
        e[0].contains("svc_state_delay_time: 2h is out of range"),
        "{e:?}"
    );
}

#[test]
fn site_password_in_clear_is_the_sites_secret() {
    let m = ok(
        "add gslb site s1 10.0.0.1 -siteType LOCAL -sitePassword s3cret\n\
                add gslb site s2 10.0.0.2\n\
                set gslb site s2 -sitePassword other\n",
    );
    assert_eq!(
        m.sites[SiteId::new(0)].password,
        Some(SitePassword::Clear("s3cret".into()))
    );
    assert_eq!(
        m.sites[SiteId::new(1)].password,
        Some(SitePassword::Clear("other".into()))
    );
    // Debug never shows it.
    assert!(!format!("{:?}", m.sites[SiteId::new(0)]).contains("s3cret"));
    let m =
        ok("add gslb site s1 10.0.0.1 -sitePassword s3cret\nunset gslb site s1 -sitePassword\n");
    assert_eq!(m.sites[SiteId::new(0)].password, None);
    let m = ok_toml(
        "version = 1\n[[site]]\nname = \"s1\"\nip = \"10.0.0.1\"\nsite_password = \"s3cret\"\n",
    );
    assert_eq!(
        m.sites[SiteId::new(0)].password,
        Some(SitePassword::Clear("s3cret".into()))
    );
    let e = errors_toml(
        "version = 1\n[[site]]\nname = \"s1\"\nip = \"10.0.0.1\"\nsite_password = \"\"\n",
    );
    assert!(
        e[0].contains("site_password: the site password is empty"),
        "{e:?}"
    );
}

#[test]
fn an_encrypted_site_password_is_an_error_that_says_what_to_do() {
    let line = "add gslb site s2 10.0.0.2 -publicIP 10.0.0.2 -sitePassword 8e5b3f0a9c1d2e7f -encrypted -encryptmethod ENCMTHD_3 -kek -suffix 2024_01_01_00_00_00\n";
    let e = errors(&format!("{SITES}{line}"));
    assert_eq!(e.len(), 1, "{e:?}");
    let e = &e[0];
    assert!(
        e.starts_with(
            "2: add gslb site s2: -sitePassword is encrypted with the appliance's own key"
        ),
        "{e}"
    );
    assert!(
        e.contains("enter the password of site s2 again in clear"),
        "{e}"
    );
    assert!(
        e.contains("`sextant import` replaces it with a placeholder (SEXTANT-REENTER-...)"),
        "{e}"
    );
    // The encryption options make sense only with an encrypted password.
    let e = errors(&format!(
        "{SITES}add gslb site s2 10.0.0.2 -sitePassword x -encryptmethod ENCMTHD_3\n"
    ));
    assert_eq!(
        e,
        ["2: add gslb site s2: -encryptmethod applies only to an -encrypted -sitePassword"]
    );
    let e = errors(&format!("{SITES}add gslb site s2 10.0.0.2 -encrypted\n"));
    assert_eq!(
        e,
        ["2: add gslb site s2: -encrypted describes a saved -sitePassword, and none is given"]
    );
}

#[test]
fn a_placeholder_site_password_is_accepted_with_a_warning() {
    assert_eq!(REENTER_PREFIX, "SEXTANT-REENTER-");
    let m = ok(&format!(
        "{SITES}add gslb site s2 10.0.0.2 -sitePassword {REENTER_PREFIX}s2\n"
    ));
    assert_eq!(
        m.sites[SiteId::new(1)].password,
        Some(SitePassword::Placeholder)
    );
    assert_eq!(
        m.warnings,
        [
            "t.conf:2: add gslb site s2: placeholder password: MEP with site s2 will fail to authenticate until the real secret is entered"
        ]
    );
    let m = ok_toml(&format!(
        "version = 1\n[[site]]\nname = \"s2\"\nip = \"10.0.0.2\"\nsite_password = \"{REENTER_PREFIX}x\"\n"
    ));
    assert_eq!(
        m.sites[SiteId::new(0)].password,
        Some(SitePassword::Placeholder)
    );
    assert_eq!(m.warnings.len(), 1, "{:?}", m.warnings);
    assert!(
        m.warnings[0].starts_with("t.toml:5: [[site]] s2: placeholder password"),
        "{:?}",
        m.warnings
    );
}

#[test]
fn cluster_ips_and_the_naptr_suffix_are_checked_and_noted() {
    let m = ok(&format!(
        "{SITES}add gslb site s2 10.0.0.2 -clip 10.0.0.20 -publicCLIP 192.0.2.20 -naptrReplacementSuffix gslb.example.net\n"
    ));
    let w = m.warnings.join("\n");
    assert_eq!(m.warnings.len(), 3, "{w}");
    assert!(w.contains("t.conf:2: -clip is accepted but has no effect in Sextant (the cluster IP is where the appliance pushes configuration auto-sync"), "{w}");
    assert!(
        w.contains("t.conf:2: -publicCLIP is accepted but has no effect"),
        "{w}"
    );
    assert!(w.contains("-naptrReplacementSuffix is accepted but has no effect in Sextant (the suffix builds the replacement field of NAPTR answers, and Sextant answers no NAPTR queries)"), "{w}");
    let e = errors(&format!(
        "{SITES}add gslb site s2 10.0.0.2 -clip 10.0.0.256\n"
    ));
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].starts_with("2: add gslb site s2: -clip:"), "{e:?}");
    let e = errors_toml(
        "version = 1\n[[site]]\nname = \"s2\"\nip = \"10.0.0.2\"\npublic_clip = \"nope\"\n",
    );
    assert!(e[0].contains("public_clip"), "{e:?}");
}

#[test]
fn built_in_dns_actions_need_no_definition() {
    let m = ok(&format!(
        "{SITES}add dns policy drop \"CLIENT.IP.SRC.EQ(127.0.0.9)\" dns_default_act_Drop\n\
         add dns policy noop \"DNS.REQ.QUESTION.TYPE.EQ(MX)\" DNS_DEFAULT_ACT_NOOP\n\
         add dns policy bypass \"CLIENT.IP.SRC.IN_SUBNET(10.0.0.0/8).NOT\" dns_default_act_Cachebypass -logAction audit_all\n\
         add dns policy drop2 true dns_default_act_Drop\n\
         bind dns global drop 10\nbind dns global noop 20\nbind dns global bypass 30\n"
    ));
    let kind = |policy: &str| {
        let p = m
            .dns_policies
            .iter()
            .find(|p| p.name == policy)
            .expect("policy");
        let a = &m.dns_actions[p.action];
        (a.name.clone(), a.kind.clone())
    };
    assert_eq!(
        kind("drop"),
        ("dns_default_act_Drop".into(), DnsActionKind::Drop)
    );
    assert_eq!(
        kind("drop2"),
        ("dns_default_act_Drop".into(), DnsActionKind::Drop)
    );
    assert_eq!(
        kind("noop"),
        ("dns_default_act_NoOp".into(), DnsActionKind::Noop)
    );
    assert_eq!(
        kind("bypass"),
        ("dns_default_act_Cachebypass".into(), DnsActionKind::Noop)
    );
    // Each built-in once.
    assert_eq!(m.dns_actions.len(), 3);
    let w = m.warnings.join("\n");
    assert_eq!(m.warnings.len(), 2, "{w}");
    assert!(w.contains("t.conf:4: dns_default_act_Cachebypass is accepted but has no effect in Sextant (Sextant keeps no DNS cache to bypass"), "{w}");
    assert!(w.contains("t.conf:4: -logAction is accepted but has no effect in Sextant (Sextant has no appliance audit log"), "{w}");

    // A defined action of that name is refused.
    let e = errors(&format!(
        "{SITES}add dns action dns_default_act_Drop DROP\n"
    ));
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].contains("dns_default_act_Drop is the name of a built-in action"),
        "{e:?}"
    );

    let m = ok_toml(
        "version = 1\n[[dns_policy]]\nname = \"d\"\nrule = \"CLIENT.IP.SRC.EQ(::1)\"\naction = \"dns_default_act_Drop\"\nlog_action = \"a\"\nbind = { priority = 1 }\n",
    );
    assert_eq!(
        m.dns_actions[m.dns_policies[DnsPolicyId::new(0)].action].kind,
        DnsActionKind::Drop
    );
    assert_eq!(m.warnings.len(), 1, "{:?}", m.warnings);
    assert!(
        m.warnings[0].contains("[[dns_policy]] log_action is accepted"),
        "{:?}",
        m.warnings
    );
}

#[test]
fn new_expressions_read_the_same_in_both_syntaxes() {
    let rules = [
        "CLIENT.IP.SRC.EQ(127.0.0.7)",
        "CLIENT.IP.SRC.EQ(2001:db8::7)",
        "CLIENT.IP.SRC.IN_SUBNET(10.0.0.0/8).NOT",
        "CLIENT.IP.SRC.IN_SUBNET(2001:db8::/32)",
        "DNS.REQ.QUESTION.TYPE.EQ(AAAA)",
        "DNS.REQ.QUESTION.TYPE.EQ(CNAME) || DNS.REQ.QUESTION.TYPE.EQ(SRV).NOT",
    ];
    for rule in rules {
        let a = ok(&format!(
            "add dns policy p \"{rule}\" dns_default_act_NoOp\n"
        ));
        let t = ok_toml(&format!(
            "version = 1\n[[dns_policy]]\nname = \"p\"\nrule = '{rule}'\naction = \"dns_default_act_NoOp\"\n"
        ));
        assert_eq!(
            a.dns_policies[DnsPolicyId::new(0)].rule,
            t.dns_policies[DnsPolicyId::new(0)].rule,
            "{rule}"
        );
    }
}
