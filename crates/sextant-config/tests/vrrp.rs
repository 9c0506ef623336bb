//! VRRP (seed 004, active-active) in both syntaxes: `add/set/bind vrid`,
//! `set vridParam`, `add ns ip ... -type VIP -vrid ID`, `add ns ip6 ...
//! -vrid6 ID`, and their native `[vrrp]` and `[[vrrp.vrid]]`; every option
//! and default, the line and wording of every rejection and warning, and
//! the seed's three-node, four-VIP figure.

mod support;

use std::time::Duration;
use support::{conf, conf_errors, ip, one, toml, toml_errors, without_unchecked};

use sextant_core::vrrp::{Tracking, VipAddress, Vrid, VrrpChecksum, VrrpParams, VrrpSettings};

fn vip(a: &str, prefix_len: u8) -> VipAddress {
    VipAddress {
        ip: ip(a),
        prefix_len,
    }
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

// -- one configuration, both syntaxes

/// Every option of every command, the VIPs before their `add vrid` (as
/// saved files write them), keywords in mixed case.
const FULL_CONF: &str = "\
add gslb site fra 10.0.0.1 -siteType LOCAL
add gslb service web-fra 192.0.2.10 HTTP 80 -siteName fra
add gslb service web-ams 192.0.2.20 HTTP 80 -siteName fra
add gslb vserver gv-www HTTP
add gslb vserver gv-app HTTP
add service dns-vip 10.0.0.53 ADNS 53
set vridParam -sendToMaster ENABLED -helloInterval 500 -deadInterval 2 -checksum RFC9568 -virtualMac DISABLED
set vridParam -deadInterval 1.5
add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 7
add ns ip 10.0.0.54 255.255.255.128 -type VIP -vrID 7 -arp ENABLED
add ns ip6 fd00::53/64 -type VIP -vrID6 8
add vrid 7 -priority 200 -preemption ENABLED -sharing ENABLED -tracking PROGRESSIVE -preemptiondelaytimer 30
bind vrid 7 -ifnum eth0 eth1 -trackifNum eth2
bind vrid 7 -trackVserver GV-WWW gv-app -trackService web-fra
bind vrID 7 -trackService web-ams
add vrID 8 -priority 1 -preemption DISABLED -tracking none
set vrid 8 -priority 254 -sharing disabled -preemptiondelaytimer 2 MIN
bind vrid 8 -ifnum eth0
add vrid 3
bind vrid 3 -ifnum bond0.100
add ns ip 192.0.2.99 255.255.255.255 -type vip -vrid 3
";

const FULL_TOML: &str = r#"version = 1

[server]
local_site = "fra"
dns_listen = ["10.0.0.53:53"]

[[site]]
name = "fra"
ip = "10.0.0.1"

[[service]]
name = "web-fra"
ip = "192.0.2.10"
port = 80
protocol = "HTTP"
site = "fra"

[[service]]
name = "web-ams"
ip = "192.0.2.20"
port = 80
protocol = "HTTP"
site = "fra"

[[vserver]]
name = "gv-www"
protocol = "HTTP"

[[vserver]]
name = "gv-app"
protocol = "HTTP"

[vrrp]
send_to_master = true
hello_interval = "500ms"
dead_interval = "1.5s"
checksum = "rfc9568"
virtual_mac = false

[[vrrp.vrid]]
id = 7
priority = 200
preemption = true
preemption_delay = "30s"
sharing = true
tracking = "progressive"
interfaces = ["eth0", "eth1"]
track_interfaces = ["eth2"]
track_vservers = ["gv-www", "GV-APP"]
track_services = ["web-fra", "web-ams"]
addresses = ["10.0.0.53/24", "10.0.0.54/25"]

[[vrrp.vrid]]
id = 8
priority = 254
preemption = false
preemption_delay = "2m"
sharing = false
tracking = "none"
interfaces = ["eth0"]
addresses = ["fd00::53/64"]

[[vrrp.vrid]]
id = 3
interfaces = ["bond0.100"]
addresses = ["192.0.2.99/32"]
"#;

fn full_want() -> VrrpSettings {
    VrrpSettings {
        params: VrrpParams {
            send_to_master: true,
            hello_interval: Duration::from_millis(500),
            dead_interval: Duration::from_millis(1500),
            checksum: VrrpChecksum::Rfc9568,
            virtual_mac: false,
        },
        vrids: vec![
            Vrid {
                interfaces: strings(&["bond0.100"]),
                addresses: vec![vip("192.0.2.99", 32)],
                ..Vrid::new(3)
            },
            Vrid {
                id: 7,
                priority: 200,
                preemption: true,
                preemption_delay: Duration::from_secs(30),
                sharing: true,
                tracking: Tracking::Progressive,
                interfaces: strings(&["eth0", "eth1"]),
                track_interfaces: strings(&["eth2"]),
                // As the vservers and services are defined, whatever the
                // case of the reference.
                track_vservers: strings(&["gv-www", "gv-app"]),
                track_services: strings(&["web-fra", "web-ams"]),
                addresses: vec![vip("10.0.0.53", 24), vip("10.0.0.54", 25)],
            },
            Vrid {
                id: 8,
                priority: 254,
                preemption: false,
                preemption_delay: Duration::from_secs(120),
                sharing: false,
                tracking: Tracking::None,
                interfaces: strings(&["eth0"]),
                addresses: vec![vip("fd00::53", 64)],
                ..Vrid::new(8)
            },
        ],
    }
}

#[test]
fn full_configuration_in_the_appliance_syntax() {
    let m = without_unchecked(conf(FULL_CONF));
    assert_eq!(m.vrrp, full_want());
    // Only the -arp of line 10 (the dead interval is three hello
    // intervals once line 8 has set it).
    assert_eq!(
        m.warnings,
        [
            "t.conf:10: -arp is accepted but not implemented yet; it has no effect (the master of a VRID always answers ARP for its VIPs, with the virtual MAC (seed 004))"
        ]
    );
}

#[test]
fn full_configuration_in_toml() {
    let m = without_unchecked(toml(FULL_TOML));
    assert_eq!(m.vrrp, full_want());
    assert!(m.warnings.is_empty(), "{:#?}", m.warnings);
}

/// The same configuration builds the same model in both syntaxes (as
/// `examples.rs` and `dc_records.rs` compare theirs: equal but for
/// warnings, which name the file).
#[test]
fn both_syntaxes_build_the_same_model() {
    let mut a = conf(FULL_CONF);
    let mut b = toml(FULL_TOML);
    a.warnings.clear();
    b.warnings.clear();
    assert_eq!(a, b);
}

// -- defaults

#[test]
fn defaults() {
    assert_eq!(conf("").vrrp, VrrpSettings::default());
    assert_eq!(toml("version = 1\n").vrrp, VrrpSettings::default());
    let m = conf(concat!(
        "add vrid 1\n",
        "bind vrid 1 -ifnum eth0\n",
        "add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 1\n",
    ));
    let want = VrrpSettings {
        params: VrrpParams {
            send_to_master: false,
            hello_interval: Duration::from_secs(1),
            dead_interval: Duration::from_secs(3),
            checksum: VrrpChecksum::PseudoHeader,
            virtual_mac: true,
        },
        vrids: vec![Vrid {
            id: 1,
            priority: 100,
            preemption: true,
            preemption_delay: Duration::ZERO,
            sharing: false,
            tracking: Tracking::None,
            interfaces: strings(&["eth0"]),
            track_interfaces: vec![],
            track_vservers: vec![],
            track_services: vec![],
            addresses: vec![vip("10.0.0.53", 24)],
        }],
    };
    assert_eq!(m.vrrp, want);
    assert!(m.warnings.is_empty(), "{:#?}", m.warnings);
    let t = toml(
        "version = 1\n[[vrrp.vrid]]\nid = 1\ninterfaces = [\"eth0\"]\naddresses = [\"10.0.0.53/24\"]\n",
    );
    assert_eq!(t.vrrp, want);
    // An empty [vrrp] table is the defaults too.
    assert_eq!(toml("version = 1\n[vrrp]\n").vrrp, VrrpSettings::default());
    let t = toml(
        "version = 1\n[vrrp]\nchecksum = \"pseudo_header\"\nhello_interval = \"1s\"\ndead_interval = \"3s\"\n",
    );
    assert_eq!(t.vrrp, VrrpSettings::default());
    assert!(t.warnings.is_empty(), "{:#?}", t.warnings);
}

#[test]
fn vrids_are_sorted_by_id() {
    let m = conf(concat!(
        "add vrid 200\n",
        "add vrid 2\n",
        "add vrid 17\n",
        "bind vrid 200 -ifnum eth0\n",
        "bind vrid 2 -ifnum eth0\n",
        "bind vrid 17 -ifnum eth0\n",
        "add ns ip 10.0.0.1 255.255.255.0 -type VIP -vrid 200\n",
        "add ns ip 10.0.0.2 255.255.255.0 -type VIP -vrid 2\n",
        "add ns ip 10.0.0.3 255.255.255.0 -type VIP -vrid 17\n",
    ));
    let ids: Vec<u8> = m.vrrp.vrids.iter().map(|v| v.id).collect();
    assert_eq!(ids, [2, 17, 200]);
    assert_eq!(
        m.vrrp.vrid(17).map(|v| v.addresses[0]),
        Some(vip("10.0.0.3", 24))
    );
}

#[test]
fn commands_keywords_and_options_are_case_insensitive() {
    let m = conf(concat!(
        "ADD VRID 1 -PRIORITY 50 -Preemption disabled -SHARING Enabled -Tracking all -PreemptionDelayTimer 5\n",
        "BIND vrID 1 -IFNUM eth0 -TRACKIFNUM eth1\n",
        "Set VrIdParam -SENDTOMASTER enabled -HELLOINTERVAL 1 SEC -deadinterval 3 -CHECKSUM pseudo_header -VIRTUALMAC enabled\n",
        "ADD NS IP 10.0.0.53 255.255.255.0 -TYPE vip -VRID 1\n",
        "add NS ip6 FD00::53/64 -Type Vip -VRID6 2\n",
        "add vrid 2\n",
        "bind vrid 2 -ifnum eth0\n",
    ));
    let v = m.vrrp.vrid(1).expect("vrid 1");
    assert_eq!(v.priority, 50);
    assert!(!v.preemption && v.sharing);
    assert_eq!(v.tracking, Tracking::All);
    assert_eq!(v.preemption_delay, Duration::from_secs(5));
    assert_eq!(v.track_interfaces, ["eth1"]);
    assert!(m.vrrp.params.send_to_master);
    assert_eq!(m.vrrp.params.hello_interval, Duration::from_secs(1));
    assert_eq!(
        m.vrrp.vrid(2).map(|v| v.addresses.clone()),
        Some(vec![vip("fd00::53", 64)])
    );
    // Interface names are Linux's, and case-sensitive.
    let m = conf(concat!(
        "add vrid 1\n",
        "bind vrid 1 -ifnum ETH0 eth0\n",
        "add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 1\n",
    ));
    assert_eq!(m.vrrp.vrids[0].interfaces, ["ETH0", "eth0"]);
    let t = toml(
        "version = 1\n[vrrp]\nchecksum = \"PSEUDO-HEADER\"\n[[vrrp.vrid]]\nid = 1\ntracking = \"One\"\n",
    );
    assert_eq!(t.vrrp.params.checksum, VrrpChecksum::PseudoHeader);
    assert_eq!(t.vrrp.vrids[0].tracking, Tracking::One);
}

#[test]
fn set_vrid_changes_only_what_it_gives() {
    let m = conf(concat!(
        "add vrid 1 -priority 200 -tracking ONE -sharing ENABLED\n",
        "set vrid 1 -priority 150\n",
        "set vrid 1 -preemption DISABLED -tracking NONE\n",
    ));
    let v = &m.vrrp.vrids[0];
    assert_eq!(
        (v.priority, v.tracking, v.sharing, v.preemption),
        (150, Tracking::None, true, false)
    );
}

#[test]
fn set_vrid_param_lines_add_up() {
    let m = conf(concat!(
        "set vridParam -helloInterval 200\n",
        "set vridParam -deadInterval 1 -sendToMaster ENABLED\n",
        "set vridParam -helloInterval 400 -deadInterval 1.2 SEC\n",
    ));
    let p = &m.vrrp.params;
    assert_eq!(p.hello_interval, Duration::from_millis(400));
    assert_eq!(p.dead_interval, Duration::from_millis(1200));
    assert!(p.send_to_master);
    assert!(m.warnings.is_empty(), "{:#?}", m.warnings);
}

/// The VRRPv3 advert interval goes down to one centisecond (the appliance
/// itself allows 200 ms to 1 s): fast failover is allowed.
#[test]
fn hello_interval_range() {
    for (text, ms) in [
        ("10", 10),
        ("40950", 40_950),
        ("0.1 SEC", 100),
        ("1 SEC", 1000),
    ] {
        let m = conf(&format!("set vridParam -helloInterval {text}\n"));
        assert_eq!(
            m.vrrp.params.hello_interval,
            Duration::from_millis(ms),
            "{text}"
        );
    }
    // Below the dead interval's 1 s, the warning about it cannot be
    // avoided: it says how soon RFC 5798 backups really take over.
    let m = conf("set vridParam -helloInterval 10 -deadInterval 1\n");
    assert_eq!(m.warnings.len(), 1, "{:#?}", m.warnings);
    assert!(m.warnings[0].contains("wait about 30ms whatever -deadInterval says"));
    one(
        conf_errors("set vridParam -helloInterval 5\n"),
        1,
        &[
            "set vridParam: -helloInterval: 5ms is out of range; expected 10 to 40950 ms (VRRPv3 carries the interval in centiseconds, at most 4095)",
        ],
    );
    one(
        conf_errors("\nset vridParam -helloInterval 40960\n"),
        2,
        &["-helloInterval: 40960ms is out of range"],
    );
    one(
        conf_errors("set vridParam -helloInterval 15\n"),
        1,
        &[
            "set vridParam: -helloInterval: 15ms is not a multiple of 10 ms (VRRPv3 carries the interval in centiseconds)",
        ],
    );
    one(
        conf_errors("set vridParam -helloInterval soon\n"),
        1,
        &["-helloInterval: expected a number, found \"soon\""],
    );
    one(
        toml_errors("version = 1\n[vrrp]\nhello_interval = \"15ms\"\n"),
        3,
        &["[vrrp]: hello_interval: 15ms is not a multiple of 10 ms"],
    );
    one(
        toml_errors("version = 1\n[vrrp]\nhello_interval = \"0s\"\n"),
        3,
        &["[vrrp]: hello_interval: 0s is out of range; expected 10 to 40950 ms"],
    );
    one(
        toml_errors("version = 1\n[vrrp]\nhello_interval = 100\n"),
        3,
        &["[vrrp]: invalid type: integer `100`, expected a string"],
    );
}

#[test]
fn dead_interval_range_and_warning() {
    one(
        conf_errors("set vridParam -deadInterval 0\n"),
        1,
        &["set vridParam: -deadInterval: 0s is out of range; expected 1 to 60 s"],
    );
    one(
        conf_errors("set vridParam -deadInterval 61\n"),
        1,
        &["-deadInterval: 61s is out of range; expected 1 to 60 s"],
    );
    one(
        toml_errors("version = 1\n[vrrp]\ndead_interval = \"2m\"\n"),
        3,
        &["[vrrp]: dead_interval: 2m is out of range; expected 1 to 60 s"],
    );
    // Not 3 × helloInterval: a warning at the line that set the dead interval.
    let m = conf("add gslb site s 10.0.0.1\nset vridParam -deadInterval 5\n");
    assert_eq!(m.vrrp.params.dead_interval, Duration::from_secs(5));
    assert_eq!(
        m.warnings,
        [
            "t.conf:2: set vridParam: -deadInterval 5s is not 3 × -helloInterval (3s); VRRPv3 backups take over after Master_Down_Interval = 3 × the advertised interval + skew, so RFC 5798 peers (keepalived) wait about 3s whatever -deadInterval says"
        ]
    );
    // A hello interval alone leaves the default dead interval unchecked:
    // the file did not say it.
    let m = conf("set vridParam -helloInterval 100\n");
    assert!(m.warnings.is_empty(), "{:#?}", m.warnings);
    let m = conf("set vridParam -helloInterval 100 -deadInterval 3\n");
    assert_eq!(m.warnings.len(), 1, "{:#?}", m.warnings);
    assert!(m.warnings[0].starts_with(
        "t.conf:1: set vridParam: -deadInterval 3s is not 3 × -helloInterval (300ms)"
    ));
    let t = toml("version = 1\n[vrrp]\nhello_interval = \"100ms\"\ndead_interval = \"1s\"\n");
    assert_eq!(t.warnings.len(), 1, "{:#?}", t.warnings);
    assert!(
        t.warnings[0]
            .starts_with("t.toml:4: [vrrp]: dead_interval 1s is not 3 × hello_interval (300ms)"),
        "{}",
        t.warnings[0]
    );
    // 3 ×: no warning.
    assert!(
        conf("set vridParam -helloInterval 500 -deadInterval 1.5\n")
            .warnings
            .is_empty()
    );
}

#[test]
fn vrid_param_keywords() {
    one(
        conf_errors("set vridParam -checksum CRC\n"),
        1,
        &["set vridParam: -checksum: expected PSEUDO_HEADER or RFC9568, found \"CRC\""],
    );
    one(
        conf_errors("set vridParam -virtualMac YES\n"),
        1,
        &["set vridParam: -virtualMac: expected ENABLED or DISABLED, found \"YES\""],
    );
    one(
        conf_errors("set vridParam -sendToMaster on\n"),
        1,
        &["-sendToMaster: expected ENABLED or DISABLED, found \"on\""],
    );
    one(
        conf_errors("set vridParam\n"),
        1,
        &[
            "set vridParam: nothing to set; give one of -sendToMaster, -helloInterval, -deadInterval, -checksum, -virtualMac",
        ],
    );
    one(
        conf_errors("set vridParam 3\n"),
        1,
        &["set vridParam: unexpected argument \"3\"; set vridParam takes only options"],
    );
    one(
        conf_errors("set vridParam -advertInterval 3\n"),
        1,
        &[
            "set vridParam: unknown option -advertInterval; expected one of -sendToMaster, -helloInterval, -deadInterval, -checksum, -virtualMac",
        ],
    );
    one(
        toml_errors("version = 1\n[vrrp]\nchecksum = \"crc\"\n"),
        3,
        &["[vrrp]: checksum: expected \"pseudo_header\" or \"rfc9568\", found \"crc\""],
    );
    one(
        toml_errors("version = 1\n[vrrp]\nvirtual_mac = \"yes\"\n"),
        3,
        &["[vrrp]: invalid type: string \"yes\", expected a boolean"],
    );
}

// -- add vrid / set vrid

#[test]
fn priority_range() {
    // 1 to 255, as the seed and the appliance allow (255, the appliance's
    // default, is the highest).
    for p in [1, 100, 254, 255] {
        let m = conf(&format!("add vrid 1 -priority {p}\n"));
        assert_eq!(m.vrrp.vrids[0].priority, p);
    }
    let m = toml("version = 1\n[[vrrp.vrid]]\nid = 1\npriority = 255\n");
    assert_eq!(m.vrrp.vrids[0].priority, 255);
    one(
        conf_errors("add vrid 1\nset vrid 1 -priority 0\n"),
        2,
        &[
            "set vrid 1: -priority: 0 is not a base priority (priority 0 means shutdown on the wire); use 1–255",
        ],
    );
    one(
        conf_errors("add vrid 1 -priority 300\n"),
        1,
        &["add vrid 1: -priority: expected a priority from 1 to 255, found 300"],
    );
    one(
        conf_errors("add vrid 1 -priority high\n"),
        1,
        &["-priority: expected a priority from 1 to 255, found \"high\""],
    );
    one(
        toml_errors("version = 1\n[[vrrp.vrid]]\nid = 1\npriority = 0\n"),
        4,
        &["[[vrrp.vrid]] 1: priority: 0 is not a base priority"],
    );
    one(
        toml_errors("version = 1\n[[vrrp.vrid]]\nid = 1\npriority = -4\n"),
        4,
        &["priority: expected a priority from 1 to 255, found -4"],
    );
}

#[test]
fn vrid_ids() {
    one(
        conf_errors("add vrid 0\n"),
        1,
        &[
            "add vrid 0: ID: expected a VRID from 1 to 255, found 0 (VRID 0 is not valid on the wire)",
        ],
    );
    one(
        conf_errors("add vrid 256\n"),
        1,
        &["add vrid 256: ID: expected a VRID from 1 to 255, found 256"],
    );
    one(
        conf_errors("add vrid one\n"),
        1,
        &["add vrid one: ID: expected a VRID from 1 to 255, found \"one\""],
    );
    one(
        conf_errors("add vrid -priority 5\n"),
        1,
        &["add vrid: missing ID; expected ID"],
    );
    one(
        toml_errors("version = 1\n[[vrrp.vrid]]\nid = 0\n"),
        3,
        &["[[vrrp.vrid]] 0: id: expected a VRID from 1 to 255, found 0"],
    );
    one(
        toml_errors("version = 1\n[[vrrp.vrid]]\npriority = 5\n"),
        2,
        &["[[vrrp.vrid]]: missing field `id`"],
    );
    // The same VRID twice.
    one(
        conf_errors("add vrid 1\nadd vrid 2\nadd vrid 1 -priority 5\n"),
        3,
        &["add vrid 1: vrid 1 is already defined on line 1"],
    );
    one(
        toml_errors("version = 1\n[[vrrp.vrid]]\nid = 1\n[[vrrp.vrid]]\nid = 1\n"),
        5,
        &["[[vrrp.vrid]] 1: vrid 1 is already defined on line 3"],
    );
}

#[test]
fn preemption_delay_range() {
    let m = conf("add vrid 1 -preemptiondelaytimer 36000\n");
    assert_eq!(
        m.vrrp.vrids[0].preemption_delay,
        Duration::from_secs(36_000)
    );
    let m = conf("add vrid 1 -preemptiondelaytimer 0\n");
    assert_eq!(m.vrrp.vrids[0].preemption_delay, Duration::ZERO);
    let m = conf("add vrid 1 -preemptiondelaytimer 500 MSEC\n");
    assert_eq!(m.vrrp.vrids[0].preemption_delay, Duration::from_millis(500));
    one(
        conf_errors("add vrid 1 -preemptiondelaytimer 36001\n"),
        1,
        &["add vrid 1: -preemptiondelaytimer: 36001s is out of range; expected 0 to 36000 s"],
    );
    let t = toml("version = 1\n[[vrrp.vrid]]\nid = 1\npreemption_delay = \"0s\"\n");
    assert_eq!(t.vrrp.vrids[0].preemption_delay, Duration::ZERO);
    one(
        toml_errors("version = 1\n[[vrrp.vrid]]\nid = 1\npreemption_delay = \"11h\"\n"),
        4,
        &["[[vrrp.vrid]] 1: preemption_delay: 11h is out of range; expected 0 to 36000 s"],
    );
    one(
        toml_errors("version = 1\n[[vrrp.vrid]]\nid = 1\npreemption_delay = \"10\"\n"),
        4,
        &["preemption_delay: duration \"10\" has no unit"],
    );
}

#[test]
fn vrid_keywords() {
    one(
        conf_errors("add vrid 1 -tracking SOME\n"),
        1,
        &["add vrid 1: -tracking: expected NONE, ALL, ONE or PROGRESSIVE, found \"SOME\""],
    );
    one(
        conf_errors("add vrid 1 -preemption YES\n"),
        1,
        &["add vrid 1: -preemption: expected ENABLED or DISABLED, found \"YES\""],
    );
    one(
        conf_errors("add vrid 1 -sharing 1\n"),
        1,
        &["-sharing: expected ENABLED or DISABLED, found \"1\""],
    );
    one(
        conf_errors("add vrid 1 -ownerNode 2\n"),
        1,
        &[
            "add vrid 1: unknown option -ownerNode; expected one of -priority, -preemption, -sharing, -tracking, -preemptiondelaytimer",
        ],
    );
    one(
        toml_errors("version = 1\n[[vrrp.vrid]]\nid = 1\ntracking = \"some\"\n"),
        4,
        &[
            "[[vrrp.vrid]] 1: tracking: expected \"none\", \"all\", \"one\" or \"progressive\", found \"some\"",
        ],
    );
}

#[test]
fn set_vrid_errors() {
    one(
        conf_errors("set vrid 1 -priority 5\nadd vrid 1\n"),
        1,
        &["set vrid 1: vrid 1 is not added on an earlier line (add it with \"add vrid 1\" first)"],
    );
    one(
        conf_errors("add vrid 1\nset vrid 1\n"),
        2,
        &[
            "set vrid 1: nothing to set; give one of -priority, -preemption, -sharing, -tracking, -preemptiondelaytimer",
        ],
    );
}

// -- bind vrid

#[test]
fn bind_vrid_errors() {
    one(
        conf_errors("add vrid 1\nbind vrid 1\n"),
        2,
        &[
            "bind vrid 1: nothing to bind; give -ifnum IFACE, -trackifNum IFACE, -trackVserver NAME or -trackService NAME",
        ],
    );
    one(
        conf_errors("add vrid 1\nbind vrid 1 -ifnum 1/1\n"),
        2,
        &[
            "bind vrid 1: -ifnum: \"1/1\" is the appliance's slot/port numbering; Sextant runs on Linux interfaces: give the interface's name (e.g. eth0)",
        ],
    );
    one(
        conf_errors("add vrid 1\nbind vrid 1 -trackifNum eth0:1\n"),
        2,
        &[
            "bind vrid 1: -trackifNum: interface name \"eth0:1\" contains ':'; Linux interface names cannot contain '/', ':' or white space",
        ],
    );
    one(
        conf_errors("add vrid 1\nbind vrid 1 -ifnum averyveryverylongname\n"),
        2,
        &[
            "-ifnum: interface name \"averyveryverylongname\" is 21 bytes long; Linux allows at most 15",
        ],
    );
    one(
        conf_errors("add vrid 1\nbind vrid 1 -ifnum\n"),
        2,
        &["bind vrid 1: option -ifnum needs at least one value"],
    );
    one(
        conf_errors("bind vrid 4 -ifnum eth0\n"),
        1,
        &["bind vrid 4: vrid 4 is not defined (add it with \"add vrid 4\")"],
    );
    one(
        conf_errors("add vrid 1\nbind vrid 1 -vlan 10\n"),
        2,
        &[
            "bind vrid 1: unknown option -vlan; expected one of -ifnum, -trackifNum, -trackVserver, -trackService",
        ],
    );
}

/// A VRID bound twice to the same thing is an error (as a service bound
/// twice to a vserver is), at the second binding, naming the first.
#[test]
fn bound_twice() {
    let base = "add gslb site s 10.0.0.1\nadd gslb vserver vs HTTP\nadd gslb service svc 192.0.2.1 HTTP 80 -siteName s\nadd vrid 1\n";
    for (bind, what) in [
        ("-ifnum eth0", "interface \"eth0\""),
        ("-trackifNum eth1", "tracked interface \"eth1\""),
        ("-trackVserver vs", "vserver \"VS\""),
        ("-trackService svc", "service \"Svc\""),
    ] {
        let again = bind.replace(" vs", " VS").replace(" svc", " Svc");
        one(
            conf_errors(&format!("{base}bind vrid 1 {bind}\nbind vrid 1 {again}\n")),
            6,
            &[&format!(
                "bind vrid 1: {what} is already bound to vrid 1 (line 5)"
            )],
        );
    }
    one(
        conf_errors(&format!("{base}bind vrid 1 -ifnum eth0 eth0\n")),
        5,
        &["bind vrid 1: interface \"eth0\" is already bound to vrid 1 (line 5)"],
    );
    one(
        conf_errors(&format!(
            "{base}bind vrid 1 -ifnum eth0\nadd ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 1\nadd ns ip 10.0.0.53 255.255.0.0 -type VIP -vrid 1\n"
        )),
        7,
        &["add ns ip 10.0.0.53: VIP 10.0.0.53 is already bound to vrid 1 (line 6)"],
    );
    one(
        toml_errors(
            "version = 1\n[[vrrp.vrid]]\nid = 1\ninterfaces = [\n  \"eth0\",\n  \"eth0\",\n]\n",
        ),
        6,
        &["[[vrrp.vrid]] 1: interfaces: interface \"eth0\" is listed twice (line 5)"],
    );
    one(
        toml_errors(
            "version = 1\n[[vrrp.vrid]]\nid = 1\ninterfaces = [\"eth0\"]\naddresses = [\"10.0.0.53/24\", \"10.0.0.53/32\"]\n",
        ),
        5,
        &["[[vrrp.vrid]] 1: addresses: VIP 10.0.0.53 is listed twice (line 5)"],
    );
}

#[test]
fn tracked_objects_must_exist() {
    one(
        conf_errors("add vrid 1\nbind vrid 1 -trackVserver gv-www\n"),
        2,
        &["bind vrid 1: vserver \"gv-www\" is not defined (add it with \"add gslb vserver\")"],
    );
    one(
        conf_errors("add vrid 1\nbind vrid 1 -trackService web\n"),
        2,
        &["bind vrid 1: service \"web\" is not defined (add it with \"add gslb service\")"],
    );
    one(
        toml_errors("version = 1\n[[vrrp.vrid]]\nid = 1\ntrack_vservers = [\"gv-www\"]\n"),
        4,
        &[
            "[[vrrp.vrid]] 1: vserver \"gv-www\" is not defined (add a [[vserver]] table with name = \"gv-www\")",
        ],
    );
    one(
        toml_errors("version = 1\n[[vrrp.vrid]]\nid = 1\ntrack_services = [\"web\"]\n"),
        4,
        &[
            "[[vrrp.vrid]] 1: service \"web\" is not defined (add a [[service]] table with name = \"web\")",
        ],
    );
    // The DNS listener (add service ... ADNS) is not a GSLB service.
    one(
        conf_errors(
            "add service dns1 10.0.0.53 ADNS 53\nadd vrid 1\nbind vrid 1 -trackService dns1\n",
        ),
        3,
        &["service \"dns1\" is not defined"],
    );
}

// -- add ns ip, add ns ip6

/// A VRID on eth0, and the line numbers below start at 3.
const VRID1: &str = "add vrid 1\nbind vrid 1 -ifnum eth0\n";

fn vrid1(rest: &str) -> String {
    format!("{VRID1}{rest}")
}

#[test]
fn vip_lines() {
    let m = conf(&vrid1(concat!(
        "add ns ip 10.0.0.53 255.255.255.255 -type VIP -vrid 1\n",
        "add ns ip 10.0.1.53 255.255.0.0 -type VIP -vrid 1\n",
    )));
    assert_eq!(
        m.vrrp.vrids[0].addresses,
        [vip("10.0.0.53", 32), vip("10.0.1.53", 16)]
    );
    // IPv6, with -vrid6 as the appliance writes it or with -vrid.
    let m = conf(&vrid1(concat!(
        "add ns ip6 2001:db8::53/64 -type VIP -vrid6 1\n",
        "add ns ip6 2001:db8::54/128 -type VIP -vrid 1\n",
    )));
    assert_eq!(
        m.vrrp.vrids[0].addresses,
        [vip("2001:db8::53", 64), vip("2001:db8::54", 128)]
    );
    // A VIP that is also the site IP is fine: that is the point (the
    // metric exchange address moves with the VIP).
    let m = conf(&vrid1(concat!(
        "add gslb site fra 10.0.0.53 -siteType LOCAL\n",
        "add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 1\n",
    )));
    assert_eq!(m.vrrp.vrids[0].addresses, [vip("10.0.0.53", 24)]);
    assert!(m.warnings.is_empty(), "{:#?}", m.warnings);
}

#[test]
fn vip_line_errors() {
    one(
        conf_errors(&vrid1(
            "add ns ip 10.0.0.53 255.0.255.0 -type VIP -vrid 1\n",
        )),
        3,
        &[
            "add ns ip 10.0.0.53: MASK: netmask 255.0.255.0 is not contiguous (its one bits must all come first, e.g. 255.255.255.0)",
        ],
    );
    one(
        conf_errors(&vrid1("add ns ip 10.0.0.53 24 -type VIP -vrid 1\n")),
        3,
        &["MASK: expected an IPv4 netmask such as 255.255.255.0, found \"24\""],
    );
    one(
        conf_errors(&vrid1(
            "add ns ip fd00::53 255.255.255.0 -type VIP -vrid 1\n",
        )),
        3,
        &[
            "add ns ip fd00::53: IP: fd00::53 is an IPv6 address; use add ns ip6 ADDR/LEN for IPv6 VIPs",
        ],
    );
    one(
        conf_errors(&vrid1(
            "add ns ip 10.0.0.x 255.255.255.0 -type VIP -vrid 1\n",
        )),
        3,
        &["IP: expected an IPv4 or IPv6 address"],
    );
    one(
        conf_errors(&vrid1(
            "add ns ip 224.0.0.18 255.255.255.0 -type VIP -vrid 1\n",
        )),
        3,
        &["IP: 224.0.0.18 cannot be a VIP; a VIP is a unicast address that the nodes share"],
    );
    one(
        conf_errors(&vrid1("add ns ip 10.0.0.53 -type VIP -vrid 1\n")),
        3,
        &["add ns ip 10.0.0.53: missing MASK; expected IP MASK"],
    );
    one(
        conf_errors(&vrid1("add ns ip6 fd00::53 -type VIP -vrid6 1\n")),
        3,
        &[
            "add ns ip6 fd00::53: ADDR/LEN: \"fd00::53\" has no prefix length; write ADDR/LEN, e.g. 2001:db8::53/64",
        ],
    );
    one(
        conf_errors(&vrid1("add ns ip6 10.0.0.53/24 -type VIP -vrid6 1\n")),
        3,
        &["ADDR/LEN: 10.0.0.53 is an IPv4 address; use add ns ip IP MASK for IPv4 VIPs"],
    );
    one(
        conf_errors(&vrid1("add ns ip6 fd00::53/129 -type VIP -vrid6 1\n")),
        3,
        &["ADDR/LEN: prefix length \"129\" in \"fd00::53/129\": expected 1 to 128"],
    );
    one(
        conf_errors(&vrid1(
            "add ns ip6 fd00::53/64 -type VIP -vrid6 1 -vrid 1\n",
        )),
        3,
        &["add ns ip6 fd00::53/64: give -vrid6 or -vrid, not both"],
    );
    one(
        conf_errors(&vrid1(
            "add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 0\n",
        )),
        3,
        &["-vrid: expected a VRID from 1 to 255, found 0"],
    );
    one(
        conf_errors(&vrid1(
            "add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid\n",
        )),
        3,
        &["add ns ip 10.0.0.53: option -vrid needs a value"],
    );
    one(
        conf_errors(&vrid1(
            "add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 1 -arp MAYBE\n",
        )),
        3,
        &["add ns ip 10.0.0.53: -arp: expected ENABLED or DISABLED, found \"MAYBE\""],
    );
    let errs = conf_errors(&vrid1(
        "add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 1 -ospfArea 0\n",
    ));
    one(
        errs,
        3,
        &[
            "add ns ip 10.0.0.53: unknown option -ospfArea; expected one of -type, -vrid, -arp, -icmp",
        ],
    );
}

/// Addresses other than VRRP VIPs are not read yet: one error naming the
/// command, as before, whatever else the line says.
#[test]
fn other_addresses_are_not_supported_yet() {
    one(
        conf_errors("add ns ip 10.0.0.10 255.255.255.0 -type SNIP -mgmtAccess ENABLED -bogus 1\n"),
        1,
        &[
            "add ns ip: not supported yet for -type SNIP: Sextant takes only the VIPs of its virtual routers (-type VIP -vrid ID); configure the node's own addresses in the operating system, or remove this line",
        ],
    );
    one(
        conf_errors("add ns ip 10.0.0.10 255.255.255.0\n"),
        1,
        &["add ns ip: not supported yet for -type SNIP (the default)"],
    );
    one(
        conf_errors("add ns ip6 fd00::10/64 -type NSIP\n"),
        1,
        &[
            "add ns ip6: not supported yet for -type NSIP: Sextant takes only the VIPs of its virtual routers (-type VIP -vrid6 ID)",
        ],
    );
    one(
        conf_errors("add ns ip 10.0.0.53 255.255.255.0 -type VIP\n"),
        1,
        &[
            "add ns ip: a VIP without -vrid is not supported yet: Sextant takes only the VIPs of its virtual routers; give -vrid ID (and add vrid ID), or remove this line",
        ],
    );
    one(
        conf_errors("add ns ip6 fd00::53/64 -type VIP\n"),
        1,
        &["add ns ip6: a VIP without -vrid6 is not supported yet"],
    );
    for ty in ["MIP", "GSLBsiteIP", "CLIP"] {
        one(
            conf_errors(&format!(
                "add ns ip 10.0.0.10 255.255.255.0 -type {ty} -vrid 1\n"
            )),
            1,
            &[&format!("add ns ip: not supported yet for -type {ty}")],
        );
    }
}

/// Saved files put the VIPs first; the VRID is found once the whole
/// file is read.
#[test]
fn order_does_not_matter() {
    let m = conf(concat!(
        "add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 9\n",
        "bind vrid 9 -ifnum eth0\n",
        "add vrid 9 -priority 20\n",
    ));
    assert_eq!(m.vrrp.vrids[0].addresses, [vip("10.0.0.53", 24)]);
    assert_eq!(m.vrrp.vrids[0].priority, 20);
    one(
        conf_errors("add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 9\n"),
        1,
        &["add ns ip 10.0.0.53: vrid 9 is not defined (add it with \"add vrid 9\")"],
    );
}

/// Options the appliance writes on `add ns ip` lines are accepted, and
/// each is warned about (`no_effect.rs` checks every row).
#[test]
fn options_without_effect_are_warned_about() {
    let m = conf(&vrid1(
        "add ns ip 10.0.0.53 255.255.255.0 -type VIP -snmp DISABLED -hostRoute ENABLED -hostRtGw 0.0.0.0 -metric 0 -vserverRHILevel ONE_VSERVER -vrid 1\n",
    ));
    let names: Vec<&str> = m
        .warnings
        .iter()
        .map(|w| w.split(" is accepted").next().unwrap_or(w))
        .collect();
    assert_eq!(
        names,
        [
            "t.conf:3: -snmp",
            "t.conf:3: -hostRoute",
            "t.conf:3: -hostRtGw",
            "t.conf:3: -metric",
            "t.conf:3: -vserverRHILevel"
        ]
    );
    assert!(m.warnings[0].ends_with("-snmp is accepted but has no effect in Sextant (management access is the operating system's, not set per address)"));
}

#[test]
fn a_vip_belongs_to_one_vrid() {
    one(
        conf_errors(concat!(
            "add vrid 1\nbind vrid 1 -ifnum eth0\nadd vrid 2\nbind vrid 2 -ifnum eth0\n",
            "add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 1\n",
            "add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 2\n",
        )),
        6,
        &[
            "add ns ip 10.0.0.53: VIP 10.0.0.53 is already a VIP of vrid 1 (line 5); a VIP belongs to one virtual router",
        ],
    );
    one(
        toml_errors(
            "version = 1\n[[vrrp.vrid]]\nid = 1\ninterfaces = [\"eth0\"]\naddresses = [\"10.0.0.53/24\"]\n[[vrrp.vrid]]\nid = 2\ninterfaces = [\"eth0\"]\naddresses = [\"10.0.0.53/24\"]\n",
        ),
        9,
        &[
            "[[vrrp.vrid]] 2: VIP 10.0.0.53 is already a VIP of vrid 1 (line 5); a VIP belongs to one virtual router",
        ],
    );
}

/// VRRPv3 runs one instance per address family: one VRID is IPv4 or IPv6.
#[test]
fn one_address_family_per_vrid() {
    one(
        conf_errors(&vrid1(concat!(
            "add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 1\n",
            "add ns ip6 fd00::53/64 -type VIP -vrid6 1\n",
        ))),
        4,
        &[
            "add ns ip6 fd00::53/64: vrid 1 mixes IPv4 and IPv6 VIPs (10.0.0.53 on line 3, fd00::53 here); VRRPv3 runs one instance per address family: use two VRIDs, one for each family",
        ],
    );
    one(
        toml_errors(
            "version = 1\n[[vrrp.vrid]]\nid = 1\ninterfaces = [\"eth0\"]\naddresses = [\"fd00::53/64\",\n  \"10.0.0.53/24\"]\n",
        ),
        6,
        &["[[vrrp.vrid]] 1: vrid 1 mixes IPv4 and IPv6 VIPs (fd00::53 on line 5, 10.0.0.53 here)"],
    );
}

// -- whole VRIDs

#[test]
fn a_vrid_with_vips_needs_an_interface() {
    one(
        conf_errors("add vrid 1\nadd ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 1\n"),
        1,
        &["vrid 1 has no interface: add `bind vrid 1 -ifnum IFACE`"],
    );
    one(
        toml_errors("version = 1\n[[vrrp.vrid]]\nid = 1\naddresses = [\"10.0.0.53/24\"]\n"),
        3,
        &["[[vrrp.vrid]] 1 has no interface: add interfaces = [\"IFACE\"]"],
    );
    // Tracked interfaces are not the ones it runs on.
    one(
        conf_errors(
            "add vrid 1\nbind vrid 1 -trackifNum eth0\nadd ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 1\n",
        ),
        1,
        &["vrid 1 has no interface"],
    );
}

#[test]
fn a_vrid_without_vips_is_warned_about() {
    let m = conf("add vrid 1\nbind vrid 1 -ifnum eth0\n");
    assert_eq!(
        m.warnings,
        [
            "t.conf:1: vrid 1 has no VIP, so it advertises nothing (add one with `add ns ip IP MASK -type VIP -vrid 1`)"
        ]
    );
    assert_eq!(m.vrrp.vrids.len(), 1);
    let t = toml("version = 1\n[[vrrp.vrid]]\nid = 4\n");
    assert_eq!(
        t.warnings,
        [
            "t.toml:3: [[vrrp.vrid]] 4 has no VIP, so it advertises nothing (add addresses = [\"IP/LEN\"])"
        ]
    );
}

#[test]
fn tracking_with_nothing_tracked_is_warned_about() {
    // Only the DNS listener on the VIP counts.
    let m = conf(&vrid1(concat!(
        "add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 1\n",
        "add service dns-vip 10.0.0.53 ADNS 53\n",
        "set vrid 1 -tracking ALL\n",
    )));
    assert_eq!(
        m.warnings,
        [
            "t.conf:5: vrid 1: -tracking ALL has nothing to count (no -trackVserver or -trackService); only the required objects, this node's DNS listener on 10.0.0.53:53, can move the VIPs, as they would with NONE"
        ]
    );
    // Nothing at all.
    let m = conf(&vrid1(concat!(
        "add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 1\n",
        "add service dns-other 10.0.0.99 ADNS 53\n",
        "set vrid 1 -tracking PROGRESSIVE\n",
    )));
    assert_eq!(
        m.warnings,
        [
            "t.conf:5: vrid 1: -tracking PROGRESSIVE has nothing to track: nothing is bound to count (no -trackVserver or -trackService), no interface is tracked and no DNS listener (add service NAME VIP ADNS PORT) is on its VIPs"
        ]
    );
    let t = toml(
        "version = 1\n[[vrrp.vrid]]\nid = 1\ntracking = \"one\"\ninterfaces = [\"eth0\"]\naddresses = [\"10.0.0.53/24\"]\n",
    );
    assert_eq!(
        t.warnings,
        [
            "t.toml:4: [[vrrp.vrid]] 1: tracking = \"one\" has nothing to track: nothing is bound to count (track_vservers and track_services are empty), no interface is tracked and no DNS listener ([server] dns_listen) is on its VIPs"
        ]
    );
    // A tracked interface is required in every mode, not counted: ONE has
    // nothing to count, and says what still moves the VIPs.
    let m = conf(&vrid1(concat!(
        "add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 1\n",
        "set vrid 1 -tracking ONE\n",
        "bind vrid 1 -trackifNum eth1\n",
    )));
    assert_eq!(
        m.warnings,
        [
            "t.conf:4: vrid 1: -tracking ONE has nothing to count (no -trackVserver or -trackService); only the required objects, the tracked interfaces, can move the VIPs, as they would with NONE"
        ]
    );
    // Something counted, or NONE: no warning.
    let m = conf(&vrid1(concat!(
        "add gslb vserver vs HTTP\n",
        "add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 1\n",
        "set vrid 1 -tracking ONE\n",
        "bind vrid 1 -trackVserver vs\n",
    )));
    assert!(m.warnings.is_empty(), "{:#?}", m.warnings);
    let m = conf(&vrid1(
        "add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 1 \n",
    ));
    assert!(m.warnings.is_empty(), "{:#?}", m.warnings);
}

/// Seed 004: with health tracking, preemption should be on, or a lowered
/// master keeps its VIP.
#[test]
fn tracking_without_preemption_is_warned_about() {
    let m = conf(concat!(
        "add gslb vserver vs HTTP\n",
        "add vrid 1 -tracking ALL\n",
        "bind vrid 1 -ifnum eth0 -trackVserver vs\n",
        "add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 1\n",
        "set vrid 1 -preemption DISABLED\n",
    ));
    assert_eq!(
        m.warnings,
        [
            "t.conf:5: vrid 1: -tracking ALL with -preemption DISABLED: a master whose tracking drops it to 0 hands its VIPs over all the same (it advertises priority 0), but once this node's tracked objects are back it does not take its VIPs back, and as a backup it never takes them from a lower master (seed 004: enable preemption with health tracking; the backups' setting is the one that moves a VIP)"
        ]
    );
    // PROGRESSIVE only lowers a master: the backups' preemption moves the VIP.
    let m = conf(concat!(
        "add gslb vserver vs HTTP\n",
        "add vrid 1 -tracking PROGRESSIVE -preemption DISABLED\n",
        "bind vrid 1 -ifnum eth0 -trackVserver vs\n",
        "add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 1\n",
    ));
    assert_eq!(m.warnings.len(), 1, "{:#?}", m.warnings);
    assert!(
        m.warnings[0].contains("as a backup this node never takes the VIPs from a master whose tracking lowered its priority below this node's"),
        "{:#?}",
        m.warnings
    );
    // At 255 preemption is always on (the address owner's rule).
    let m = conf(concat!(
        "add vrid 1 -priority 255 -preemption DISABLED\n",
        "bind vrid 1 -ifnum eth0\n",
        "add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 1\n",
    ));
    assert_eq!(
        m.warnings,
        [
            "t.conf:1: vrid 1: -preemption DISABLED has no effect at priority 255: that node is the address owner of RFC 5798, which always takes its VIPs (docs/vrrp.md)"
        ]
    );
    let t = toml(
        "version = 1\n[[vserver]]\nname = \"vs\"\nprotocol = \"HTTP\"\n[[vrrp.vrid]]\nid = 1\ntracking = \"all\"\npreemption = false\ntrack_vservers = [\"vs\"]\ninterfaces = [\"eth0\"]\naddresses = [\"10.0.0.53/24\"]\n",
    );
    assert_eq!(t.warnings.len(), 1, "{:#?}", t.warnings);
    assert!(
        t.warnings[0]
            .starts_with("t.toml:8: [[vrrp.vrid]] 1: tracking = \"all\" with preemption = false: a master whose tracking drops it to 0"),
        "{}",
        t.warnings[0]
    );
}

// -- native reader specifics

#[test]
fn toml_rejections() {
    one(
        toml_errors("version = 1\n[vrrp]\nadvert_interval = \"1s\"\n"),
        3,
        &["[vrrp]: unknown field `advert_interval`, expected one of"],
    );
    one(
        toml_errors("version = 1\n[[vrrp.vrid]]\nid = 1\nvips = []\n"),
        4,
        &["[[vrrp.vrid]]: unknown field `vips`, expected one of"],
    );
    one(
        toml_errors("version = 1\n[vrrp]\nvrid = 1\n"),
        3,
        &[
            "`vrrp.vrid` must be an array of tables (write [[vrrp.vrid]] above each one), found a integer",
        ],
    );
    one(
        toml_errors(
            "version = 1\n[[vrrp.vrid]]\nid = 1\ninterfaces = [\"eth0\"]\naddresses = [\"10.0.0.53\"]\n",
        ),
        5,
        &[
            "[[vrrp.vrid]] 1: addresses: \"10.0.0.53\" has no prefix length; write ADDR/LEN, e.g. 192.0.2.53/24 or 2001:db8::53/64",
        ],
    );
    one(
        toml_errors("version = 1\n[[vrrp.vrid]]\nid = 1\ninterfaces = [\"eth 0\"]\n"),
        4,
        &["[[vrrp.vrid]] 1: interfaces: interface name \"eth 0\" contains ' '"],
    );
    one(
        toml_errors("version = 1\n[[vrrp.vrid]]\nid = 1\ntrack_interfaces = [\"0/1\"]\n"),
        4,
        &["[[vrrp.vrid]] 1: track_interfaces: \"0/1\" is the appliance's slot/port numbering"],
    );
    one(
        toml_errors("version = 1\nvrrp = 3\n"),
        2,
        &["[vrrp]: invalid type: integer `3`, expected struct VrrpT"],
    );
    // One bad [[vrrp.vrid]] does not hide the errors of the next.
    let errs = toml_errors(
        "version = 1\n[[vrrp.vrid]]\nid = 1\nbogus = 1\n[[vrrp.vrid]]\nid = 2\npriority = 256\n",
    );
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert_eq!((errs[0].0, errs[1].0), (4, 7));
}

// -- seed 004's figure

/// One node's file of the seed's active-active figure: the same four VIPs
/// (VRIDs 1–4) on NS1, NS2 and NS3, with priorities so that VIP1 and VIP2
/// are master on NS1, VIP3 on NS2 and VIP4 on NS3; should NS1 fail, VIP1
/// goes to NS3 and VIP2 to NS2. `prio` gives this node's priority per VIP.
fn node(name: &str, own_ip: &str, prio: [u8; 4]) -> String {
    let mut f = format!(
        "add gslb site {name} {own_ip} -siteType LOCAL\n\
         add gslb vserver gv-www HTTP\n\
         set vridParam -helloInterval 1000 -deadInterval 3\n"
    );
    for (i, p) in prio.iter().enumerate() {
        let id = i + 1;
        // Saved files put the VIP first.
        f.push_str(&format!(
            "add ns ip 10.0.0.{} 255.255.255.0 -type VIP -vrid {id} -arp ENABLED\n\
             add vrid {id} -priority {p} -preemption ENABLED -tracking ONE\n\
             bind vrid {id} -ifnum eth0 -trackVserver gv-www\n\
             add service dns-vip{id} 10.0.0.{} ADNS 53\n",
            100 + id,
            100 + id
        ));
    }
    f
}

#[test]
fn seed_figure_three_nodes_four_vips() {
    let nodes = [
        ("NS1", node("ns1", "10.0.0.11", [200, 200, 100, 150])),
        ("NS2", node("ns2", "10.0.0.12", [100, 150, 200, 100])),
        ("NS3", node("ns3", "10.0.0.13", [150, 100, 150, 200])),
    ];
    let models: Vec<(&str, sextant_core::Model)> = nodes
        .iter()
        .map(|(n, text)| {
            let m = sextant_config::parse_appliance(text, &format!("{n}.conf"))
                .unwrap_or_else(|e| panic!("{n}:\n{e}"));
            (*n, m)
        })
        .collect();
    for (n, m) in &models {
        assert_eq!(m.vrrp.vrids.len(), 4, "{n}");
        // Only the four -arp warnings.
        assert_eq!(m.warnings.len(), 4, "{n}: {:#?}", m.warnings);
        for v in &m.vrrp.vrids {
            assert_eq!(v.addresses, [vip(&format!("10.0.0.{}", 100 + v.id), 24)]);
            assert_eq!(v.interfaces, ["eth0"]);
            assert_eq!(v.tracking, Tracking::One);
            assert_eq!(v.track_vservers, ["gv-www"]);
            assert!(v.preemption);
        }
    }
    // The master of each VIP: the node with the highest priority among
    // those that are up.
    let master = |id: u8, up: &[&str]| -> &str {
        models
            .iter()
            .filter(|(n, _)| up.contains(n))
            .max_by_key(|(_, m)| m.vrrp.vrid(id).map(|v| v.priority))
            .map(|(n, _)| *n)
            .unwrap_or("none")
    };
    let all = ["NS1", "NS2", "NS3"];
    let masters: Vec<&str> = (1..=4).map(|id| master(id, &all)).collect();
    assert_eq!(masters, ["NS1", "NS1", "NS2", "NS3"]);
    let without_ns1: Vec<&str> = (1..=4).map(|id| master(id, &["NS2", "NS3"])).collect();
    assert_eq!(without_ns1, ["NS3", "NS2", "NS2", "NS3"]);
    // No two nodes share a priority for one VIP (no tie-break by address).
    for id in 1..=4u8 {
        let mut p: Vec<u8> = models
            .iter()
            .filter_map(|(_, m)| m.vrrp.vrid(id).map(|v| v.priority))
            .collect();
        p.sort_unstable();
        p.dedup();
        assert_eq!(p.len(), 3, "vrid {id}");
    }
}

/// The NS1 example of docs/config.md parses, with the priorities it says,
/// and the TOML example there too.
#[test]
fn docs_examples_parse() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/config.md"))
        .expect("docs/config.md");
    let block = |after: &str, fence: &str| -> String {
        let start = doc.find(after).expect("the example's lead-in");
        let rest = &doc[start..];
        let open = rest.find(fence).expect("a code block") + fence.len();
        let close = rest[open..].find("```").expect("its end");
        rest[open..open + close].to_string()
    };
    let ns1 = block("For example, NS1 of the seed's figure", "```\n");
    let m = conf(&ns1);
    let prio: Vec<u8> = m.vrrp.vrids.iter().map(|v| v.priority).collect();
    assert_eq!(prio, [200, 200, 100, 150]);
    assert!(m.warnings.is_empty(), "{:#?}", m.warnings);
    let t = block("### `[vrrp]`, `[[vrrp.vrid]]`", "```toml\n");
    let t = toml(&format!(
        "version = 1\n[[vserver]]\nname = \"gv-www\"\nprotocol = \"HTTP\"\n{t}"
    ));
    assert_eq!(t.vrrp.vrids[0].tracking, Tracking::Progressive);
    assert!(t.warnings.is_empty(), "{:#?}", t.warnings);
}
