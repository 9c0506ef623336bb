//! Datacenter mode (seed 002) in both syntaxes: `add/set/bind gslb
//! dcRecord`, `-vServiceName` and `-dcAccessPeriod`, and their native
//! `[[dc_record]]`, `vservice_name` and `dc_access_period`; the groups and
//! their order, the addresses' health and weights, and the line and wording
//! of every rejection.

mod support;

use std::time::Duration;
use support::{conf, conf_errors, ip, one, toml, toml_errors, without_unchecked};

use sextant_core::{
    Balance, ClientCriterion, DcAddress, DcCriterion, DcGroup, DcHealth, DcRecord, DcRecordId,
    DcSelection, Model, ServiceCriterion, ServiceId, SiteId,
};

// -- one configuration, both syntaxes

/// Sites fra (LOCAL), ams, nyc; services with vService names; a record of
/// each DC selection.
const FULL_CONF: &str = "\
add gslb site fra 10.0.0.1 -siteType LOCAL
add gslb site ams 10.0.0.2
add gslb site nyc 10.0.0.3
add gslb service web-fra 192.0.2.10 HTTP 80 -siteName fra -vServiceName web
add gslb service web-ams 192.0.2.20 HTTP 80 -siteName ams -publicIP 198.51.100.20
set gslb service web-ams -vServiceName web
add gslb service app-nyc 192.0.2.30 HTTP 80 -siteName nyc -vServiceName app
add gslb service web-nyc 192.0.2.31 HTTP 80 -siteName nyc -vServiceName web
set gslb parameter -dcAccessPeriod 1.5 MIN
add gslb dcRecord all.example.com -dcOrder nyc ams fra -TTL 30
bind gslb dcRecord all.example.com -siteName ams -serviceName web-ams
bind gslb dcRecord all.example.com -siteName nyc -IPAddress 192.0.2.40 -hc SITE
bind gslb dcRecord all.example.com -failSafe 192.0.2.99
add gslb dcRecord cpu.example.com -dcSelection DC_BASED -criterion CPU -totalDCs 2 -balance WEIGHTED_ROUNDROBIN
bind gslb dcRecord cpu.example.com -siteName ams -serviceName web-ams -weight 10
bind gslb dcRecord cpu.example.com -siteName fra -serviceName web-fra -weight 0 -hc SERVICE_AND_SITE
bind gslb dcRecord cpu.example.com -siteName ams -IPAddress 192.0.2.21 -weight 5 -hc NONE
bind gslb dcRecord cpu.example.com -failSafe 192.0.2.98
bind gslb dcRecord cpu.example.com -failSafe 2001:db8::98
add gslb dcRecord svc.example.com -dcSelection SERVICE_BASED -criterion CONNECTIONS -vServiceName web -balance RANDOM
bind gslb dcRecord svc.example.com -siteName nyc -serviceName web-nyc -hc SITE
bind gslb dcRecord svc.example.com -siteName ams -serviceName web-ams
add gslb dcRecord client.example.com -dcSelection CLIENT_BASED -criterion MOS -balance ALL
bind gslb dcRecord client.example.com -siteName ams -IPAddress 192.0.2.50 -hc NONE
bind gslb dcRecord client.example.com -siteName nyc -serviceName app-nyc
";

const FULL_TOML: &str = r#"version = 1

[server]
local_site = "fra"

[gslb]
dc_access_period = "90s"

[[site]]
name = "fra"
ip = "10.0.0.1"

[[site]]
name = "ams"
ip = "10.0.0.2"

[[site]]
name = "nyc"
ip = "10.0.0.3"

[[service]]
name = "web-fra"
ip = "192.0.2.10"
port = 80
protocol = "HTTP"
site = "fra"
vservice_name = "web"

[[service]]
name = "web-ams"
ip = "192.0.2.20"
port = 80
protocol = "HTTP"
site = "ams"
public_ip = "198.51.100.20"
vservice_name = "web"

[[service]]
name = "app-nyc"
ip = "192.0.2.30"
port = 80
protocol = "HTTP"
site = "nyc"
vservice_name = "app"

[[service]]
name = "web-nyc"
ip = "192.0.2.31"
port = 80
protocol = "HTTP"
site = "nyc"
vservice_name = "web"

[[dc_record]]
name = "all.example.com"
dc_order = ["nyc", "ams", "fra"]
ttl = 30
fail_safe = ["192.0.2.99"]

[[dc_record.address]]
site = "ams"
service = "web-ams"

[[dc_record.address]]
site = "nyc"
ip = "192.0.2.40"
hc = "site"

[[dc_record]]
name = "cpu.example.com"
dc_selection = "dc_based"
criterion = "cpu"
total_dcs = 2
balance = "weighted_round_robin"
fail_safe = ["192.0.2.98", "2001:db8::98"]

[[dc_record.address]]
site = "ams"
service = "web-ams"
weight = 10

[[dc_record.address]]
site = "fra"
service = "web-fra"
weight = 0
hc = "service_and_site"

[[dc_record.address]]
site = "ams"
ip = "192.0.2.21"
weight = 5
hc = "none"

[[dc_record]]
name = "svc.example.com"
dc_selection = "service_based"
criterion = "connections"
vservice_name = "web"
balance = "random"

[[dc_record.address]]
site = "nyc"
service = "web-nyc"
hc = "site"

[[dc_record.address]]
site = "ams"
service = "web-ams"

[[dc_record]]
name = "client.example.com"
dc_selection = "client_based"
criterion = "mos"
balance = "all"

[[dc_record.address]]
site = "ams"
ip = "192.0.2.50"
hc = "none"

[[dc_record.address]]
site = "nyc"
service = "app-nyc"
"#;

/// Site and service ids of the full configuration.
const FRA: SiteId = SiteId::new(0);
const AMS: SiteId = SiteId::new(1);
const NYC: SiteId = SiteId::new(2);
const WEB_FRA: ServiceId = ServiceId::new(0);
const WEB_AMS: ServiceId = ServiceId::new(1);
const APP_NYC: ServiceId = ServiceId::new(2);
const WEB_NYC: ServiceId = ServiceId::new(3);

fn group(site: SiteId, service: Option<ServiceId>) -> DcGroup {
    DcGroup { site, service }
}

fn addr(group: u8, a: &str, weight: u32, health: DcHealth) -> DcAddress {
    DcAddress {
        group,
        ip: ip(a),
        weight,
        health,
    }
}

fn check_full(m: &Model) {
    assert_eq!(m.params.dc_access_period, Duration::from_secs(90));
    assert_eq!(m.local_site, Some(FRA));
    let want = vec![
        DcRecord {
            name: "all.example.com".into(),
            ttl: 30,
            selection: DcSelection::AllDcRecords,
            total_dcs: 1,
            balance: Balance::RoundRobin,
            // -dcOrder's order; fra is listed, so not appended.
            groups: vec![group(NYC, None), group(AMS, None), group(FRA, None)],
            addresses: vec![
                addr(0, "192.0.2.40", 1, DcHealth::SiteReachable),
                // The service's answer address: its public IP.
                addr(1, "198.51.100.20", 1, DcHealth::Service(WEB_AMS)),
            ],
            fail_safe: vec![ip("192.0.2.99")],
        },
        DcRecord {
            name: "cpu.example.com".into(),
            ttl: 5,
            selection: DcSelection::DcBased(DcCriterion::Cpu),
            total_dcs: 2,
            balance: Balance::WeightedRoundRobin,
            // Sites in order of first appearance; fra (local) is one.
            groups: vec![group(AMS, None), group(FRA, None)],
            addresses: vec![
                addr(0, "198.51.100.20", 10, DcHealth::Service(WEB_AMS)),
                addr(0, "192.0.2.21", 5, DcHealth::Always),
                addr(1, "192.0.2.10", 0, DcHealth::ServiceAndSite(WEB_FRA)),
            ],
            fail_safe: vec![ip("192.0.2.98"), ip("2001:db8::98")],
        },
        DcRecord {
            name: "svc.example.com".into(),
            ttl: 5,
            selection: DcSelection::ServiceBased {
                criterion: ServiceCriterion::Connections,
                service: "web".into(),
            },
            total_dcs: 1,
            balance: Balance::Random,
            // The local site appended, with its own "web" service.
            groups: vec![
                group(NYC, Some(WEB_NYC)),
                group(AMS, Some(WEB_AMS)),
                group(FRA, Some(WEB_FRA)),
            ],
            addresses: vec![
                addr(0, "192.0.2.31", 1, DcHealth::SiteReachable),
                addr(1, "198.51.100.20", 1, DcHealth::Service(WEB_AMS)),
            ],
            fail_safe: vec![],
        },
        DcRecord {
            name: "client.example.com".into(),
            ttl: 5,
            selection: DcSelection::ClientBased(ClientCriterion::Mos),
            total_dcs: 1,
            balance: Balance::All,
            groups: vec![group(AMS, None), group(NYC, None), group(FRA, None)],
            addresses: vec![
                addr(0, "192.0.2.50", 1, DcHealth::Always),
                addr(1, "192.0.2.30", 1, DcHealth::Service(APP_NYC)),
            ],
            fail_safe: vec![],
        },
    ];
    assert_eq!(m.dc_records, want.into());
    assert!(m.warnings.is_empty(), "{:#?}", m.warnings);
}

#[test]
fn full_configuration_in_the_appliance_syntax() {
    check_full(&without_unchecked(conf(FULL_CONF)));
}

#[test]
fn full_configuration_in_toml() {
    check_full(&without_unchecked(toml(FULL_TOML)));
}

/// The same configuration builds the same model in both syntaxes (as
/// `examples.rs` compares the shipped examples: equal but for warnings).
#[test]
fn both_syntaxes_build_the_same_model() {
    let mut a = without_unchecked(conf(FULL_CONF));
    let mut b = without_unchecked(toml(FULL_TOML));
    let (wa, wb) = (
        std::mem::take(&mut a.warnings),
        std::mem::take(&mut b.warnings),
    );
    assert_eq!(a, b);
    assert!(wa.is_empty() && wb.is_empty(), "{wa:#?}\n{wb:#?}");
}

#[test]
fn defaults() {
    let m = conf("add gslb dcRecord www.example.com\n");
    assert_eq!(
        m.dc_records,
        vec![DcRecord {
            name: "www.example.com".into(),
            ttl: 5,
            selection: DcSelection::AllDcRecords,
            total_dcs: 1,
            balance: Balance::RoundRobin,
            groups: vec![],
            addresses: vec![],
            fail_safe: vec![],
        }]
        .into()
    );
    assert_eq!(m.params.dc_access_period, Duration::from_secs(300));
    let t = toml("version = 1\n[[dc_record]]\nname = \"WWW.Example.com.\"\n");
    assert_eq!(t.dc_records, m.dc_records);
    assert_eq!(t.params.dc_access_period, Duration::from_secs(300));

    // An -IPAddress entry defaults to -hc NONE, a -serviceName one to SERVICE.
    let m = conf(concat!(
        "add gslb site fra 10.0.0.1 -siteType LOCAL\n",
        "add gslb service s 192.0.2.1 HTTP 80 -siteName fra\n",
        "bind gslb dcRecord www.example.com -siteName fra -IPAddress 192.0.2.9\n",
        "bind gslb dcRecord www.example.com -siteName fra -serviceName s\n",
        "add gslb dcRecord www.example.com\n",
    ));
    let r = &m.dc_records[DcRecordId::new(0)];
    assert_eq!(r.groups, vec![group(SiteId::new(0), None)]);
    assert_eq!(
        r.addresses,
        vec![
            addr(0, "192.0.2.9", 1, DcHealth::Always),
            addr(0, "192.0.2.1", 1, DcHealth::Service(ServiceId::new(0))),
        ]
    );
}

#[test]
fn keywords_and_options_are_case_insensitive() {
    let m = conf(concat!(
        "add gslb site fra 10.0.0.1\n",
        "add gslb service s 192.0.2.1 HTTP 80 -siteName FRA\n",
        "ADD GSLB DCRECORD www.example.com -DCSELECTION dc_based -Criterion packet_loss -balance weighted_random -ttl 60 -totaldcs 3\n",
        "BIND gslb dcrecord WWW.EXAMPLE.COM. -sitename FRA -servicename S -HC service_and_site -WEIGHT 7\n",
    ));
    let want = DcRecord {
        name: "www.example.com".into(),
        ttl: 60,
        selection: DcSelection::DcBased(DcCriterion::PacketLoss),
        total_dcs: 3,
        balance: Balance::WeightedRandom,
        groups: vec![group(SiteId::new(0), None)],
        addresses: vec![addr(
            0,
            "192.0.2.1",
            7,
            DcHealth::ServiceAndSite(ServiceId::new(0)),
        )],
        fail_safe: vec![],
    };
    assert_eq!(m.dc_records, vec![want.clone()].into());
    let t = toml(
        r#"version = 1
[[site]]
name = "fra"
ip = "10.0.0.1"
[[service]]
name = "s"
ip = "192.0.2.1"
port = 80
protocol = "HTTP"
site = "FRA"
[[dc_record]]
name = "www.example.com"
dc_selection = "DC_BASED"
criterion = "Packet_Loss"
balance = "Weighted_Random"
ttl = 60
total_dcs = 3
[[dc_record.address]]
site = "fra"
service = "S"
hc = "SERVICE_AND_SITE"
weight = 7
"#,
    );
    assert_eq!(t.dc_records, vec![want].into());
}

#[test]
fn set_gslb_dc_record_changes_a_record() {
    let m = conf(concat!(
        "add gslb site fra 10.0.0.1 -siteType LOCAL\n",
        "add gslb site ams 10.0.0.2\n",
        "add gslb dcRecord www.example.com -dcSelection DC_BASED -criterion CPU -dcOrder fra ams\n",
        "set gslb dcRecord www.example.com -criterion MEMORY -TTL 20\n",
        "set gslb dcRecord WWW.example.com. -dcOrder ams fra -balance ALL\n",
    ));
    let r = &m.dc_records[DcRecordId::new(0)];
    assert_eq!(r.selection, DcSelection::DcBased(DcCriterion::Memory));
    assert_eq!(r.ttl, 20);
    assert_eq!(r.balance, Balance::All);
    assert_eq!(
        r.groups,
        vec![group(SiteId::new(1), None), group(SiteId::new(0), None)]
    );

    // Another selection forgets the criterion (and vService name) of
    // earlier lines: they belonged to the old one.
    let m = conf(concat!(
        "add gslb dcRecord www.example.com -dcSelection SERVICE_BASED -criterion CPU -vServiceName web\n",
        "set gslb dcRecord www.example.com -dcSelection CLIENT_BASED -criterion HOPS\n",
    ));
    assert_eq!(
        m.dc_records[DcRecordId::new(0)].selection,
        DcSelection::ClientBased(ClientCriterion::Hops)
    );
    let m = conf(concat!(
        "add gslb dcRecord www.example.com -dcSelection DC_BASED -criterion STATUS\n",
        "set gslb dcRecord www.example.com -dcSelection ALL_DC_RECORDS\n",
    ));
    assert_eq!(
        m.dc_records[DcRecordId::new(0)].selection,
        DcSelection::AllDcRecords
    );
    // The same selection again keeps them.
    let m = conf(concat!(
        "add gslb dcRecord www.example.com -dcSelection DC_BASED -criterion STATUS\n",
        "set gslb dcRecord www.example.com -dcSelection DC_BASED\n",
    ));
    assert_eq!(
        m.dc_records[DcRecordId::new(0)].selection,
        DcSelection::DcBased(DcCriterion::Status)
    );
    // A changed selection without a criterion on its line needs one.
    one(
        conf_errors(concat!(
            "add gslb dcRecord www.example.com -dcSelection DC_BASED -criterion STATUS\n",
            "set gslb dcRecord www.example.com -dcSelection CLIENT_BASED\n",
        )),
        2,
        &[
            "dcRecord \"www.example.com\": -dcSelection CLIENT_BASED needs -criterion, one of HOPS, MOS, PACKET_LOSS, TTL",
        ],
    );
}

#[test]
fn set_gslb_dc_record_errors() {
    one(
        conf_errors("set gslb dcRecord www.example.com -TTL 5\n"),
        1,
        &[
            "set gslb dcRecord www.example.com: dcRecord \"www.example.com\" is not defined on an earlier line (add it with \"add gslb dcRecord\" first)",
        ],
    );
    one(
        conf_errors("add gslb dcRecord a.example\nset gslb dcRecord a.example\n"),
        2,
        &["nothing to set; give one of -dcSelection, -criterion"],
    );
    one(
        conf_errors("add gslb dcRecord a.example -ttl 5 -weight 2\n"),
        1,
        &[
            "unknown option -weight; expected one of -dcSelection, -criterion, -vServiceName, -totalDCs, -balance, -TTL, -dcOrder",
        ],
    );
}

#[test]
fn dc_access_period() {
    let m = conf("set gslb parameter -dcAccessPeriod 500 MSEC\n");
    assert_eq!(m.params.dc_access_period, Duration::from_millis(500));
    let m = conf("set gslb parameter -dcAccessPeriod 0.25\n");
    assert_eq!(m.params.dc_access_period, Duration::from_millis(250));
    let m = conf("set gslb parameter -dcAccessPeriod 10 MIN\n");
    assert_eq!(m.params.dc_access_period, Duration::from_secs(600));
    let m = toml("version = 1\n[gslb]\ndc_access_period = \"750ms\"\n");
    assert_eq!(m.params.dc_access_period, Duration::from_millis(750));
    one(
        conf_errors("set gslb parameter -dcAccessPeriod 0\n"),
        1,
        &["set gslb parameter: -dcAccessPeriod: 0s is out of range; expected 1ms to 1h"],
    );
    one(
        conf_errors("\nset gslb parameter -dcAccessPeriod soon\n"),
        2,
        &["-dcAccessPeriod: expected a number, found \"soon\""],
    );
    one(
        toml_errors("version = 1\n[gslb]\ndc_access_period = \"0s\"\n"),
        3,
        &["[gslb]: dc_access_period: 0s is out of range; expected 1ms to 1h"],
    );
    one(
        toml_errors("version = 1\n[gslb]\ndc_access_period = \"2h\"\n"),
        3,
        &["dc_access_period: 2h is out of range"],
    );
}

// -- warnings

#[test]
fn service_based_datacenter_without_the_service_is_warned_about() {
    let text = "\
add gslb site fra 10.0.0.1 -siteType LOCAL
add gslb site ams 10.0.0.2
add gslb service web-ams 192.0.2.20 HTTP 80 -siteName ams -vServiceName web
add gslb service other-fra 192.0.2.10 HTTP 80 -siteName fra -vServiceName Web
add gslb dcRecord www.example.com -dcSelection SERVICE_BASED -criterion HEALTHY_BACKENDS
set gslb dcRecord www.example.com -vServiceName web
bind gslb dcRecord www.example.com -siteName ams -serviceName web-ams
";
    let m = without_unchecked(conf(text));
    // vService names match case-sensitively: fra's "Web" is not "web".
    assert_eq!(
        m.dc_records[DcRecordId::new(0)].groups,
        vec![
            group(SiteId::new(1), Some(ServiceId::new(0))),
            group(SiteId::new(0), None)
        ]
    );
    assert_eq!(
        m.warnings,
        vec![
            "t.conf:6: dcRecord \"www.example.com\": no service at site \"fra\" has -vServiceName \"web\", so datacenter \"fra\"'s HEALTHY_BACKENDS figure cannot be read; it will rank last"
        ]
    );
    let t = toml(
        r#"version = 1
[server]
local_site = "fra"
[[site]]
name = "fra"
ip = "10.0.0.1"
[[site]]
name = "ams"
ip = "10.0.0.2"
[[service]]
name = "web-ams"
ip = "192.0.2.20"
port = 80
protocol = "HTTP"
site = "ams"
vservice_name = "web"
[[dc_record]]
name = "www.example.com"
dc_selection = "service_based"
criterion = "healthy_backends"
vservice_name = "web"
[[dc_record.address]]
site = "ams"
service = "web-ams"
"#,
    );
    assert_eq!(
        t.dc_records[DcRecordId::new(0)].groups,
        m.dc_records[DcRecordId::new(0)].groups
    );
    assert_eq!(
        t.warnings,
        vec![
            "t.toml:21: [[dc_record]] www.example.com: no service at site \"fra\" has vservice_name \"web\", so datacenter \"fra\"'s HEALTHY_BACKENDS figure cannot be read; it will rank last"
        ]
    );
}

// -- rejections, appliance syntax

const SITES: &str = "\
add gslb site fra 10.0.0.1 -siteType LOCAL
add gslb site ams 10.0.0.2
add gslb service web-fra 192.0.2.10 HTTP 80 -siteName fra -vServiceName web
add gslb service web-ams 192.0.2.20 HTTP 80 -siteName ams -vServiceName web
";

/// `SITES` then `rest`, whose first line is line 5.
fn with_sites(rest: &str) -> String {
    format!("{SITES}{rest}")
}

#[test]
fn criterion_missing_for_a_selection_that_ranks() {
    for (sel, list) in [
        ("DC_BASED", "CPU, MEMORY, BANDWIDTH, STATUS, PACKET_LOSS"),
        (
            "SERVICE_BASED",
            "CPU, MEMORY, BANDWIDTH, REQUESTS, CONNECTIONS, NEW_SESSIONS, STATUS, HEALTHY_BACKENDS",
        ),
        ("CLIENT_BASED", "HOPS, MOS, PACKET_LOSS, TTL"),
    ] {
        let vs = if sel == "SERVICE_BASED" {
            " -vServiceName web"
        } else {
            ""
        };
        one(
            conf_errors(&with_sites(&format!(
                "add gslb dcRecord www.example.com -dcSelection {sel}{vs}\n"
            ))),
            5,
            &[&format!(
                "dcRecord \"www.example.com\": -dcSelection {sel} needs -criterion, one of {list}"
            )],
        );
    }
}

#[test]
fn criterion_with_all_dc_records() {
    one(
        conf_errors("add gslb dcRecord www.example.com -criterion CPU\n"),
        1,
        &[
            "dcRecord \"www.example.com\": -criterion does not apply to -dcSelection ALL_DC_RECORDS (the default), which keeps the datacenters in their configured order",
        ],
    );
    one(
        conf_errors(concat!(
            "add gslb dcRecord www.example.com -dcSelection ALL_DC_RECORDS\n",
            "set gslb dcRecord www.example.com -criterion CPU\n",
        )),
        2,
        &["-criterion does not apply to -dcSelection ALL_DC_RECORDS, which"],
    );
}

#[test]
fn criterion_of_another_selection_says_which_ones_belong() {
    one(
        conf_errors("add gslb dcRecord www.example.com -dcSelection DC_BASED -criterion HOPS\n"),
        1,
        &[
            "dcRecord \"www.example.com\": -criterion HOPS is not a criterion of -dcSelection DC_BASED, whose criteria are CPU, MEMORY, BANDWIDTH, STATUS, PACKET_LOSS (HOPS is a criterion of -dcSelection CLIENT_BASED)",
        ],
    );
    one(
        conf_errors(
            "add gslb dcRecord www.example.com -dcSelection CLIENT_BASED -criterion CONNECTIONS\n",
        ),
        1,
        &[
            "-criterion CONNECTIONS is not a criterion of -dcSelection CLIENT_BASED, whose criteria are HOPS, MOS, PACKET_LOSS, TTL (CONNECTIONS is a criterion of -dcSelection SERVICE_BASED)",
        ],
    );
    one(
        conf_errors(
            "add gslb dcRecord www.example.com -dcSelection SERVICE_BASED -vServiceName web -criterion PACKET_LOSS\n",
        ),
        1,
        &[
            "-criterion PACKET_LOSS is not a criterion of -dcSelection SERVICE_BASED, whose criteria are CPU, MEMORY, BANDWIDTH, REQUESTS, CONNECTIONS, NEW_SESSIONS, STATUS, HEALTHY_BACKENDS (PACKET_LOSS is a criterion of -dcSelection DC_BASED and -dcSelection CLIENT_BASED)",
        ],
    );
    one(
        conf_errors("add gslb dcRecord www.example.com -dcSelection DC_BASED -criterion LOAD\n"),
        1,
        &[
            "-criterion LOAD is not a criterion of -dcSelection DC_BASED, whose criteria are CPU, MEMORY, BANDWIDTH, STATUS, PACKET_LOSS",
        ],
    );
}

#[test]
fn vservice_name_with_and_without_service_based() {
    one(
        conf_errors(&with_sites(
            "add gslb dcRecord www.example.com -dcSelection SERVICE_BASED -criterion CPU\n",
        )),
        5,
        &[
            "dcRecord \"www.example.com\": -dcSelection SERVICE_BASED needs -vServiceName: the vService name of the service measured at each datacenter (the same name in every datacenter)",
        ],
    );
    one(
        conf_errors(
            "add gslb dcRecord www.example.com -dcSelection DC_BASED -criterion CPU -vServiceName web\n",
        ),
        1,
        &[
            "dcRecord \"www.example.com\": -vServiceName applies only to -dcSelection SERVICE_BASED (this record's DC selection is DC_BASED)",
        ],
    );
    one(
        conf_errors("\nadd gslb dcRecord www.example.com -vServiceName web\n"),
        2,
        &[
            "-vServiceName applies only to -dcSelection SERVICE_BASED (this record's DC selection is ALL_DC_RECORDS)",
        ],
    );
    one(
        conf_errors(
            "add gslb dcRecord www.example.com -dcSelection SERVICE_BASED -criterion CPU -vServiceName w/eb\n",
        ),
        1,
        &["-vServiceName: \"w/eb\" contains '/'"],
    );
    one(
        conf_errors(
            "add gslb site s1 10.0.0.1\nadd gslb service s 192.0.2.1 HTTP 80 -siteName s1 -vServiceName ''\n",
        ),
        2,
        &["add gslb service s: -vServiceName: the name is empty"],
    );
    // An unknown selection is reported once, not again for its criterion.
    one(
        conf_errors("add gslb dcRecord www.example.com -dcSelection FASTEST -criterion CPU\n"),
        1,
        &["-dcSelection: unknown DC selection \"FASTEST\""],
    );
}

#[test]
fn total_dcs() {
    one(
        conf_errors("add gslb dcRecord www.example.com -totalDCs 0\n"),
        1,
        &[
            "add gslb dcRecord www.example.com: -totalDCs: expected a whole number from 1 to 64, found 0",
        ],
    );
    one(
        conf_errors("add gslb dcRecord www.example.com -totalDCs two\n"),
        1,
        &["-totalDCs: expected a whole number from 1 to 64, found \"two\""],
    );
    // Client Based: accepted with a warning that it is not applied (seed
    // 002), never an error.
    let m = conf(
        "add gslb dcRecord www.example.com -dcSelection CLIENT_BASED -criterion TTL -totalDCs 2\n",
    );
    assert_eq!(m.warnings.len(), 1, "{:?}", m.warnings);
    assert!(
        m.warnings[0].ends_with(":1: dcRecord \"www.example.com\": -totalDCs is accepted but not applied by -dcSelection CLIENT_BASED (seed 002: it answers the best datacenter for each client); it has no effect"),
        "{:?}",
        m.warnings
    );
    // Reported where the two came together.
    let m = conf(concat!(
        "add gslb dcRecord www.example.com -dcSelection DC_BASED -criterion CPU -totalDCs 2\n",
        "set gslb dcRecord www.example.com -dcSelection CLIENT_BASED -criterion TTL\n",
    ));
    assert!(
        m.warnings.iter().any(|w| w.contains(":2: ")
            && w.contains("-totalDCs is accepted but not applied by -dcSelection CLIENT_BASED")),
        "{:?}",
        m.warnings
    );
}

#[test]
fn fail_safe_with_client_based() {
    let m = conf(concat!(
        "add gslb dcRecord www.example.com -dcSelection CLIENT_BASED -criterion HOPS\n",
        "bind gslb dcRecord www.example.com -failSafe 192.0.2.99\n",
        "bind gslb dcRecord www.example.com -failSafe 192.0.2.98\n",
    ));
    assert_eq!(m.warnings.len(), 2, "{:#?}", m.warnings);
    for (i, w) in m.warnings.iter().enumerate() {
        assert!(
            w.ends_with(&format!(":{}: dcRecord \"www.example.com\": fail-safe records (-failSafe) are accepted but not applied by -dcSelection CLIENT_BASED (seed 002): with no healthy address the answer is NODATA; they have no effect", i + 2)),
            "{w}"
        );
    }
}

#[test]
fn bind_to_an_unknown_record_site_or_service() {
    one(
        conf_errors(&with_sites(
            "add gslb dcRecord www.example.com\nbind gslb dcRecord ftp.example.com -siteName fra -IPAddress 192.0.2.1\n",
        )),
        6,
        &[
            "bind gslb dcRecord ftp.example.com: dcRecord \"ftp.example.com\" is not defined (add it with \"add gslb dcRecord\")",
        ],
    );
    one(
        conf_errors(&with_sites(
            "add gslb dcRecord www.example.com\nbind gslb dcRecord www.example.com -siteName lon -IPAddress 192.0.2.1\n",
        )),
        6,
        &[
            "bind gslb dcRecord www.example.com: site \"lon\" is not defined (add it with \"add gslb site\")",
        ],
    );
    one(
        conf_errors(&with_sites(
            "add gslb dcRecord www.example.com\nbind gslb dcRecord www.example.com -siteName fra -serviceName web-lon\n",
        )),
        6,
        &[
            "bind gslb dcRecord www.example.com: service \"web-lon\" is not defined (add it with \"add gslb service\")",
        ],
    );
    one(
        conf_errors(&with_sites(
            "add gslb dcRecord www.example.com\nbind gslb dcRecord www.example.com -siteName fra -serviceName web-ams\n",
        )),
        6,
        &[
            "bind gslb dcRecord www.example.com: service \"web-ams\" belongs to site \"ams\", not to \"fra\" (-siteName)",
        ],
    );
}

#[test]
fn bind_needs_one_target_and_a_site() {
    one(
        conf_errors(&with_sites(
            "add gslb dcRecord www.example.com\nbind gslb dcRecord www.example.com -siteName fra -serviceName web-fra -IPAddress 192.0.2.1\n",
        )),
        6,
        &["give either -serviceName or -IPAddress, not both"],
    );
    one(
        conf_errors(&with_sites(
            "add gslb dcRecord www.example.com\nbind gslb dcRecord www.example.com -siteName fra -weight 2\n",
        )),
        6,
        &[
            "bind gslb dcRecord www.example.com: nothing to bind; give -siteName SITE with -serviceName SERVICE or -IPAddress IP",
        ],
    );
    one(
        conf_errors(&with_sites(
            "add gslb dcRecord www.example.com\nbind gslb dcRecord www.example.com -serviceName web-fra\n",
        )),
        6,
        &["-siteName is required (the datacenter the address belongs to)"],
    );
    one(
        conf_errors(&with_sites(
            "add gslb dcRecord www.example.com\nbind gslb dcRecord www.example.com -failSafe 192.0.2.9 -siteName fra\n",
        )),
        6,
        &[
            "-failSafe binds a fail-safe record and takes no -siteName; bind addresses on lines of their own",
        ],
    );
    one(
        conf_errors("bind gslb dcRecord www.example.com -failSafe 192.0.2\n"),
        1,
        &["-failSafe: expected an IPv4 or IPv6 address"],
    );
}

#[test]
fn service_health_on_an_address_entry() {
    for hc in ["SERVICE", "SERVICE_AND_SITE"] {
        one(
            conf_errors(&with_sites(&format!(
                "add gslb dcRecord www.example.com\nbind gslb dcRecord www.example.com -siteName fra -IPAddress 192.0.2.1 -hc {hc}\n",
            ))),
            6,
            &[&format!(
                "bind gslb dcRecord www.example.com: -hc {hc} needs a GSLB service (-serviceName); an -IPAddress entry has none whose health it could follow (use -hc SITE or NONE)"
            )],
        );
    }
    one(
        conf_errors(&with_sites(
            "add gslb dcRecord www.example.com\nbind gslb dcRecord www.example.com -siteName fra -IPAddress 192.0.2.1 -hc ALWAYS\n",
        )),
        6,
        &["-hc: expected SERVICE, SITE, SERVICE_AND_SITE or NONE, found \"ALWAYS\""],
    );
}

#[test]
fn weights() {
    let m = conf(&with_sites(
        "add gslb dcRecord www.example.com\nbind gslb dcRecord www.example.com -siteName fra -IPAddress 192.0.2.1 -weight 0\nbind gslb dcRecord www.example.com -siteName fra -IPAddress 192.0.2.2 -weight 100\n",
    ));
    let w: Vec<u32> = m.dc_records[DcRecordId::new(0)]
        .addresses
        .iter()
        .map(|a| a.weight)
        .collect();
    assert_eq!(w, [0, 100]);
    for bad in ["101", "-1", "x"] {
        let errs = conf_errors(&with_sites(&format!(
            "add gslb dcRecord www.example.com\nbind gslb dcRecord www.example.com -siteName fra -IPAddress 192.0.2.1 -weight {bad}\n",
        )));
        assert!(
            errs.iter().all(|(l, _)| *l == 6)
                && errs
                    .iter()
                    .any(|(_, m)| m.contains("expected a whole number from 0 to 100")),
            "{bad}: {errs:#?}"
        );
    }
}

#[test]
fn the_same_address_twice_in_one_group() {
    one(
        conf_errors(&with_sites(
            "add gslb dcRecord www.example.com\nbind gslb dcRecord www.example.com -siteName fra -IPAddress 192.0.2.1\nbind gslb dcRecord www.example.com -siteName fra -IPAddress 192.0.2.1 -weight 3\n",
        )),
        7,
        &[
            "bind gslb dcRecord www.example.com: address 192.0.2.1 is already in datacenter \"fra\" of this record (line 6)",
        ],
    );
    // A service's answer address counts too.
    one(
        conf_errors(&with_sites(
            "add gslb dcRecord www.example.com\nbind gslb dcRecord www.example.com -siteName fra -serviceName web-fra\nbind gslb dcRecord www.example.com -siteName fra -IPAddress 192.0.2.10\n",
        )),
        7,
        &["address 192.0.2.10 is already in datacenter \"fra\""],
    );
    // In two groups, or in two records, it is fine.
    let m = conf(&with_sites(
        "add gslb dcRecord www.example.com\nbind gslb dcRecord www.example.com -siteName fra -IPAddress 192.0.2.1\nbind gslb dcRecord www.example.com -siteName ams -IPAddress 192.0.2.1\nadd gslb dcRecord ftp.example.com\nbind gslb dcRecord ftp.example.com -siteName fra -IPAddress 192.0.2.1\n",
    ));
    assert_eq!(m.dc_records[DcRecordId::new(0)].addresses.len(), 2);
    // A fail-safe record twice is a mistake too.
    one(
        conf_errors(
            "add gslb dcRecord www.example.com\nbind gslb dcRecord www.example.com -failSafe 192.0.2.9\nbind gslb dcRecord www.example.com -failSafe 192.0.2.9\n",
        ),
        3,
        &["dcRecord \"www.example.com\": fail-safe record 192.0.2.9 is already bound (line 2)"],
    );
}

#[test]
fn record_names() {
    one(
        conf_errors(&with_sites(
            "add gslb vserver vs HTTP\nbind gslb vserver vs -domainName WWW.example.com\nadd gslb dcRecord www.example.com.\n",
        )),
        7,
        &[
            "dcRecord \"www.example.com\": \"www.example.com\" is also a GSLB domain, bound to vserver \"vs\" (line 6); a name is answered either by a vserver or in datacenter mode, not both",
        ],
    );
    one(
        conf_errors("add gslb dcRecord www.example.com\nadd gslb dcRecord WWW.Example.com\n"),
        2,
        &[
            "dcRecord \"www.example.com\": this name already has a record, defined on line 1 (names are case-insensitive)",
        ],
    );
    one(
        conf_errors("add gslb dcRecord www..example.com\n"),
        1,
        &["dcRecord \"www..example.com\": domain name \"www..example.com\" has an empty label"],
    );
    one(
        conf_errors("add gslb dcRecord\n"),
        1,
        &["add gslb dcRecord: missing NAME; expected NAME"],
    );
}

#[test]
fn dc_order_errors() {
    one(
        conf_errors(&with_sites(
            "add gslb dcRecord www.example.com -dcOrder fra ams fra\n",
        )),
        5,
        &["add gslb dcRecord www.example.com: -dcOrder: site \"fra\" is listed twice"],
    );
    one(
        conf_errors(&with_sites(
            "add gslb dcRecord www.example.com -dcOrder fra lon\n",
        )),
        5,
        &[
            "add gslb dcRecord www.example.com: -dcOrder: site \"lon\" is not defined (add it with \"add gslb site\")",
        ],
    );
    one(
        conf_errors(&with_sites(
            "add gslb dcRecord www.example.com -dcOrder fra\nbind gslb dcRecord www.example.com -siteName ams -serviceName web-ams\n",
        )),
        6,
        &[
            "bind gslb dcRecord www.example.com: site \"ams\" is not in the record's -dcOrder (fra); list every datacenter of the record there",
        ],
    );
}

/// `n` sites `s0`.. (`s0` LOCAL) and a record with one address in each of
/// the first `bound`.
fn many_sites(n: usize, bound: usize) -> String {
    let mut text = String::new();
    for i in 0..n {
        let local = if i == 0 { " -siteType LOCAL" } else { "" };
        text.push_str(&format!(
            "add gslb site s{i} 10.1.{}.{}{local}\n",
            i / 200,
            i % 200 + 1
        ));
    }
    text.push_str("add gslb dcRecord www.example.com\n");
    for i in (0..bound).rev() {
        text.push_str(&format!(
            "bind gslb dcRecord www.example.com -siteName s{i} -IPAddress 192.0.{}.{}\n",
            i / 200,
            i % 200 + 1
        ));
    }
    text
}

#[test]
fn at_most_64_groups() {
    let m = conf(&many_sites(64, 64));
    let r = &m.dc_records[DcRecordId::new(0)];
    assert_eq!(r.groups.len(), 64);
    // Bound from s63 down to s0: the local site is already a group.
    assert_eq!(r.groups[0].site, SiteId::new(63));
    assert_eq!(r.groups[63].site, SiteId::new(0));
    assert_eq!(r.addresses[63].group, 63);
    // The 65th datacenter is an error at the line that adds it.
    let text = many_sites(65, 65);
    one(
        conf_errors(&text),
        65 + 1 + 65,
        &["dcRecord \"www.example.com\": 65 datacenters; a record has at most 64"],
    );
    // With the local site appended, at the record's line.
    let mut text = String::new();
    for i in 0..65 {
        let local = if i == 64 { " -siteType LOCAL" } else { "" };
        text.push_str(&format!("add gslb site s{i} 10.1.0.{}{local}\n", i + 1));
    }
    text.push_str("add gslb dcRecord www.example.com\n");
    for i in 0..64 {
        text.push_str(&format!(
            "bind gslb dcRecord www.example.com -siteName s{i} -IPAddress 192.0.2.{}\n",
            i + 1
        ));
    }
    one(
        conf_errors(&text),
        66,
        &["65 datacenters; a record has at most 64"],
    );
}

#[test]
fn vservice_name_once_per_site() {
    one(
        conf_errors(&with_sites(
            "add gslb service web2-fra 192.0.2.11 HTTP 80 -siteName fra\nset gslb service web2-fra -vServiceName web\n",
        )),
        6,
        &[
            "service \"web2-fra\": -vServiceName \"web\" is already used by service \"web-fra\" at site \"fra\" (line 3); a vService name names one service per site",
        ],
    );
}

#[test]
fn keyword_errors() {
    one(
        conf_errors("add gslb dcRecord www.example.com -dcSelection FASTEST\n"),
        1,
        &[
            "-dcSelection: unknown DC selection \"FASTEST\"; expected one of ALL_DC_RECORDS, DC_BASED, SERVICE_BASED, CLIENT_BASED",
        ],
    );
    one(
        conf_errors("add gslb dcRecord www.example.com -balance ROUND_ROBIN\n"),
        1,
        &[
            "-balance: unknown balance method \"ROUND_ROBIN\"; expected one of ALL, ROUNDROBIN, WEIGHTED_ROUNDROBIN, RANDOM, WEIGHTED_RANDOM, CLOSEST",
        ],
    );
    one(
        conf_errors("add gslb dcRecord www.example.com -TTL 0\n"),
        1,
        &["-TTL: expected a whole number from 1 to 2147483647, found 0"],
    );
}

#[test]
fn every_error_of_a_file_is_reported() {
    let errs = conf_errors(&with_sites(concat!(
        "add gslb dcRecord www.example.com -dcSelection DC_BASED\n",
        "bind gslb dcRecord www.example.com -siteName lon -IPAddress 192.0.2.1\n",
        "bind gslb dcRecord www.example.com -siteName fra -IPAddress 192.0.2.1 -hc SERVICE\n",
        "set gslb parameter -dcAccessPeriod 0\n",
    )));
    let lines: Vec<usize> = errs.iter().map(|e| e.0).collect();
    assert_eq!(lines, [5, 6, 7, 8], "{errs:#?}");
}

// -- rejections, TOML

const TOML_HEAD: &str = r#"version = 1
[server]
local_site = "fra"
[[site]]
name = "fra"
ip = "10.0.0.1"
[[site]]
name = "ams"
ip = "10.0.0.2"
[[service]]
name = "web-fra"
ip = "192.0.2.10"
port = 80
protocol = "HTTP"
site = "fra"
vservice_name = "web"
[[dc_record]]
name = "www.example.com"
"#;

/// `TOML_HEAD` (whose `[[dc_record]]` name is on line 18) then `rest`,
/// whose first line is line 19.
fn with_toml_head(rest: &str) -> String {
    format!("{TOML_HEAD}{rest}")
}

#[test]
fn toml_selection_errors() {
    one(
        toml_errors(&with_toml_head("dc_selection = \"dc_based\"\n")),
        19,
        &[
            "[[dc_record]] www.example.com: dc_selection = \"dc_based\" needs criterion, one of \"cpu\", \"memory\", \"bandwidth\", \"status\", \"packet_loss\"",
        ],
    );
    one(
        toml_errors(&with_toml_head("criterion = \"cpu\"\n")),
        19,
        &["criterion does not apply to dc_selection = \"all_dc_records\" (the default)"],
    );
    one(
        toml_errors(&with_toml_head(
            "dc_selection = \"dc_based\"\ncriterion = \"mos\"\n",
        )),
        20,
        &[
            "[[dc_record]] www.example.com: criterion \"mos\" is not a criterion of dc_selection = \"dc_based\", whose criteria are \"cpu\", \"memory\", \"bandwidth\", \"status\", \"packet_loss\" (\"mos\" is a criterion of dc_selection = \"client_based\")",
        ],
    );
    one(
        toml_errors(&with_toml_head(
            "dc_selection = \"service_based\"\ncriterion = \"requests\"\n",
        )),
        19,
        &["dc_selection = \"service_based\" needs vservice_name"],
    );
    one(
        toml_errors(&with_toml_head(
            "dc_selection = \"client_based\"\ncriterion = \"hops\"\nvservice_name = \"web\"\n",
        )),
        21,
        &[
            "vservice_name applies only to dc_selection = \"service_based\" (this record's DC selection is \"client_based\")",
        ],
    );
    let m = toml(&with_toml_head(
        "dc_selection = \"client_based\"\ncriterion = \"hops\"\ntotal_dcs = 2\n",
    ));
    assert!(
        m.warnings.iter().any(|w| w.contains(":21: ")
            && w.contains(
                "total_dcs is accepted but not applied by dc_selection = \"client_based\""
            )),
        "{:?}",
        m.warnings
    );
    one(
        toml_errors(&with_toml_head("total_dcs = 0\n")),
        19,
        &[
            "[[dc_record]] www.example.com: total_dcs: expected a whole number from 1 to 64, found 0",
        ],
    );
    let m = toml(&with_toml_head(
        "dc_selection = \"client_based\"\ncriterion = \"hops\"\nfail_safe = [\"192.0.2.9\"]\n",
    ));
    assert!(
        m.warnings.iter().any(|w| w.contains(":21: ")
            && w.contains("fail-safe records (fail_safe) are accepted but not applied by dc_selection = \"client_based\"")),
        "{:?}",
        m.warnings
    );
    one(
        toml_errors(&with_toml_head("dc_selection = \"fastest\"\n")),
        19,
        &[
            "dc_selection: unknown DC selection \"fastest\"; expected one of \"all_dc_records\", \"dc_based\", \"service_based\", \"client_based\"",
        ],
    );
    one(
        toml_errors(&with_toml_head("balance = \"roundrobin\"\n")),
        19,
        &[
            "balance: unknown balance method \"roundrobin\"; expected one of \"all\", \"round_robin\", \"weighted_round_robin\", \"random\", \"weighted_random\", \"closest\"",
        ],
    );
}

#[test]
fn toml_address_errors() {
    one(
        toml_errors(&with_toml_head(
            "[[dc_record.address]]\nsite = \"fra\"\nservice = \"web-fra\"\nip = \"192.0.2.1\"\n",
        )),
        22,
        &["[[dc_record]] www.example.com: address: give either service or ip, not both"],
    );
    one(
        toml_errors(&with_toml_head("[[dc_record.address]]\nsite = \"fra\"\n")),
        20,
        &["address: give service (a [[service]] name) or ip (an address)"],
    );
    one(
        toml_errors(&with_toml_head(
            "[[dc_record.address]]\nsite = \"fra\"\nip = \"192.0.2.1\"\nhc = \"service\"\n",
        )),
        22,
        &[
            "[[dc_record]] www.example.com: address: hc = \"service\" needs a GSLB service (service); an ip entry has none whose health it could follow (use hc = \"site\" or \"none\")",
        ],
    );
    one(
        toml_errors(&with_toml_head(
            "[[dc_record.address]]\nsite = \"fra\"\nip = \"192.0.2.1\"\nweight = 101\n",
        )),
        22,
        &["address: weight: expected a whole number from 0 to 100, found 101"],
    );
    one(
        toml_errors(&with_toml_head(
            "[[dc_record.address]]\nsite = \"lon\"\nip = \"192.0.2.1\"\n",
        )),
        20,
        &[
            "[[dc_record]] www.example.com: site \"lon\" is not defined (add a [[site]] table with name = \"lon\")",
        ],
    );
    one(
        toml_errors(&with_toml_head(
            "[[dc_record.address]]\nsite = \"ams\"\nservice = \"web-fra\"\n",
        )),
        20,
        &["service \"web-fra\" belongs to site \"fra\", not to \"ams\" (address: site)"],
    );
    one(
        toml_errors(&with_toml_head(
            "[[dc_record.address]]\nsite = \"fra\"\nservice = \"web-fra\"\n[[dc_record.address]]\nsite = \"fra\"\nip = \"192.0.2.10\"\n",
        )),
        23,
        &["address 192.0.2.10 is already in datacenter \"fra\" of this record (line 20)"],
    );
    one(
        toml_errors(&with_toml_head(
            "[[dc_record.address]]\nsite = \"fra\"\nip = \"192.0.2.1\"\nbogus = 1\n",
        )),
        22,
        &["[[dc_record]]", "bogus"],
    );
}

#[test]
fn toml_record_errors() {
    one(
        toml_errors(&with_toml_head("dc_order = [\"fra\", \"ams\", \"fra\"]\n")),
        19,
        &["[[dc_record]] www.example.com: dc_order: site \"fra\" is listed twice"],
    );
    one(
        toml_errors(&with_toml_head("dc_order = [\"fra\", \"lon\"]\n")),
        19,
        &["[[dc_record]] www.example.com: dc_order: site \"lon\" is not defined"],
    );
    one(
        toml_errors(&with_toml_head("dc_order = []\n")),
        19,
        &["dc_order is empty"],
    );
    one(
        toml_errors(&with_toml_head(
            "dc_order = [\"fra\"]\n[[dc_record.address]]\nsite = \"ams\"\nip = \"192.0.2.1\"\n",
        )),
        21,
        &["site \"ams\" is not in the record's dc_order (fra)"],
    );
    one(
        toml_errors(&with_toml_head(
            "[[dc_record]]\nname = \"WWW.example.com.\"\n",
        )),
        20,
        &["this name already has a record, defined on line 18"],
    );
    one(
        toml_errors(&with_toml_head(
            "[[vserver]]\nname = \"vs\"\nprotocol = \"HTTP\"\ndomains = [{ name = \"www.example.com\" }]\n",
        )),
        18,
        &["is also a GSLB domain, bound to vserver \"vs\" (line 22)"],
    );
    one(
        toml_errors(&with_toml_head(
            "fail_safe = [\"192.0.2.1\", \"192.0.2.1\"]\n",
        )),
        19,
        &["fail-safe record 192.0.2.1 is already bound (line 19)"],
    );
}

/// Client Based answers the best datacenter for each client with any
/// balance algorithm (the ranking is per query): no warning about the
/// balance any more.
#[test]
fn client_based_with_a_one_address_balance_is_fine() {
    for balance in ["CLOSEST", "ROUNDROBIN", "ALL"] {
        let m = conf(&format!(
            "add gslb dcRecord www.example.com -dcSelection CLIENT_BASED -criterion HOPS -balance {balance}\n"
        ));
        assert!(m.warnings.is_empty(), "{balance}: {:?}", m.warnings);
    }
}
