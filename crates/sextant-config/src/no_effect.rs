//! Settings that both readers accept but that have no effect: the one list
//! of them, [`NO_EFFECT`].
//!
//! They are accepted so that appliance configurations import as they are
//! (and so that a file can say what it means today and work unchanged when
//! the setting is implemented), but nothing accepted is silently without
//! effect: every use becomes one warning, `FILE:LINE: <setting> is accepted
//! but not implemented yet; it has no effect (<why>)`, in
//! `Model::warnings`. The readers call [`warn`] with a row's key wherever
//! they read such a setting; implementing a setting means deleting its row
//! here (a key without a row warns about nothing). docs/config.md, "Accepted
//! but not implemented yet", lists the same rows.

use crate::draft::Syntax;
use crate::error::Diag;

/// Why a setting has no effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Why {
    /// Sextant does not do this yet; a later release may.
    NotYet,
    /// The setting belongs to the appliance's load balancer or its other
    /// subsystems, not to a DNS-based GSLB: it will never have an effect
    /// here.
    NotApplicable,
}

/// What a setting belongs to; the same option name may have an effect on
/// one command and none on another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// `set gslb parameter`, `[gslb]`.
    Param,
    /// `add/set gslb site`, `[[site]]`.
    Site,
    /// `add/set gslb service`, `[[service]]`.
    Service,
    /// `add/set gslb vserver`, `[[vserver]]`.
    VServer,
    /// `add/set lb monitor`, `[[monitor]]`.
    Monitor,
    /// `add ns ip`, `add ns ip6` (VIPs of VRIDs); TOML's `addresses` have
    /// none of these settings.
    NsIp,
    /// `add dns policy`, `[[dns_policy]]`.
    DnsPolicy,
}

/// One accepted setting without effect.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NoEffect {
    pub scope: Scope,
    /// What the readers look the row up by, within its scope: the
    /// appliance's option name without the hyphen, as spelled in the
    /// option tables (`automaticConfigSync`), or for a keyword the option
    /// and the keyword (`lbMethod RTT`). The native reader uses the same
    /// keys.
    pub key: &'static str,
    /// The setting as written in the appliance syntax.
    pub appliance: &'static str,
    /// The setting in the native TOML syntax; `None` when TOML has no key
    /// for it (it is not accepted there at all).
    pub toml: Option<&'static str>,
    pub why: Why,
    /// What happens instead, for the operator.
    pub reason: &'static str,
}

const fn row(
    scope: Scope,
    key: &'static str,
    appliance: &'static str,
    toml: Option<&'static str>,
    why: Why,
    reason: &'static str,
) -> NoEffect {
    NoEffect {
        scope,
        key,
        appliance,
        toml,
        why,
        reason,
    }
}

/// Every setting that is accepted but has no effect. Delete a row when its
/// setting is implemented.
pub(crate) const NO_EFFECT: &[NoEffect] = &[
    // -- set gslb parameter / [gslb]
    // (-automaticConfigSync and -incarnation are implemented: config sync,
    // docs/config-sync.md. The appliance's other sync settings are not.)
    row(
        Scope::Param,
        "GSLBSyncMode",
        "-GSLBSyncMode",
        None,
        Why::NotApplicable,
        "Sextant's config sync (-automaticConfigSync, docs/config-sync.md) has no modes to choose from",
    ),
    row(
        Scope::Param,
        "GSLBSyncInterval",
        "-GSLBSyncInterval",
        None,
        Why::NotApplicable,
        "Sextant's config sync (-automaticConfigSync, docs/config-sync.md) has no interval to set: a parent offers a change when it loads it",
    ),
    row(
        Scope::Param,
        "GSLBSyncLocFiles",
        "-GSLBSyncLocFiles",
        None,
        Why::NotApplicable,
        "Sextant's config sync (-automaticConfigSync) has no switch for location files; docs/config-sync.md says what it does with them",
    ),
    row(
        Scope::Param,
        "GSLBConfigSyncMonitor",
        "-GSLBConfigSyncMonitor",
        None,
        Why::NotApplicable,
        "monitors are part of the shared configuration that Sextant's config sync (-automaticConfigSync, docs/config-sync.md) sends; there is no separate monitor sync",
    ),
    row(
        Scope::Param,
        "GSLBSyncSaveConfigCommand",
        "-GSLBSyncSaveConfigCommand",
        None,
        Why::NotApplicable,
        "Sextant's config sync (-automaticConfigSync, docs/config-sync.md) writes a received configuration to the file itself, so there is no save command to send",
    ),
    // -- gslb site
    row(
        Scope::Site,
        "clip",
        "-clip",
        Some("[[site]] clip"),
        Why::NotApplicable,
        "the cluster IP is where the appliance pushes configuration auto-sync to a clustered site; Sextant syncs configuration (-automaticConfigSync) and exchanges metrics over the metric exchange connection to the site IP only",
    ),
    row(
        Scope::Site,
        "publicCLIP",
        "-publicCLIP",
        Some("[[site]] public_clip"),
        Why::NotApplicable,
        "the public cluster IP is where the appliance pushes configuration auto-sync through NAT; Sextant syncs configuration (-automaticConfigSync) and exchanges metrics over the metric exchange connection to the site IP (or -publicIP) only",
    ),
    row(
        Scope::Site,
        "naptrReplacementSuffix",
        "-naptrReplacementSuffix",
        Some("[[site]] naptr_replacement_suffix"),
        Why::NotApplicable,
        "the suffix builds the replacement field of NAPTR answers, and Sextant answers no NAPTR queries",
    ),
    // -- dns policy
    row(
        Scope::DnsPolicy,
        "logAction",
        "-logAction",
        Some("[[dns_policy]] log_action"),
        Why::NotApplicable,
        "Sextant has no appliance audit log, so no audit message is written when the policy matches; `sextant explain` and /v1/explain show which policies a query matches",
    ),
    row(
        Scope::DnsPolicy,
        "dns_default_act_Cachebypass",
        "dns_default_act_Cachebypass",
        Some("action = \"dns_default_act_Cachebypass\""),
        Why::NotApplicable,
        "Sextant keeps no DNS cache to bypass: a matching query is answered normally, as with dns_default_act_NoOp",
    ),
    // -- gslb service
    row(
        Scope::Service,
        "maxClient",
        "-maxClient",
        Some("[[service]] max_clients"),
        Why::NotYet,
        "Sextant does not count a service's clients, so a service is never left out for having too many",
    ),
    row(
        Scope::Service,
        "sitePersistence",
        "-sitePersistence",
        None,
        Why::NotApplicable,
        "the appliance's site persistence proxies or redirects HTTP traffic by a site cookie, in its data path; a DNS-only GSLB never sees that traffic: for stickiness at the DNS level, give the vserver -persistenceType SOURCEIP (docs/migrating.md)",
    ),
    row(
        Scope::Service,
        "cookieTimeout",
        "-cookieTimeout",
        None,
        Why::NotApplicable,
        "it times the cookie of site persistence, which lives in the appliance's HTTP data path",
    ),
    row(
        Scope::Service,
        "sitePrefix",
        "-sitePrefix",
        None,
        Why::NotApplicable,
        "it names the host of HTTP-redirect site persistence, which lives in the appliance's HTTP data path",
    ),
    row(
        Scope::Service,
        "maxBandwidth",
        "-maxBandwidth",
        None,
        Why::NotYet,
        "Sextant does not measure a service's bandwidth against a limit, so a service is never left out for exceeding it",
    ),
    row(
        Scope::Service,
        "maxAAAUsers",
        "-maxAAAUsers",
        None,
        Why::NotApplicable,
        "it limits the appliance's VPN users",
    ),
    row(
        Scope::Service,
        "hashId",
        "-hashId",
        None,
        Why::NotYet,
        "source-IP hashing keys on the service's position, not on a configured hash ID",
    ),
    row(
        Scope::VServer,
        "considerEffectiveState",
        "-considerEffectiveState",
        None,
        Why::NotYet,
        "a service's state is its own (by monitors or metric exchange); the effective state of the virtual server behind a remote service is not consulted separately",
    ),
    row(
        Scope::VServer,
        "disablePrimaryOnDown",
        "-disablePrimaryOnDown",
        None,
        Why::NotYet,
        "when the primary vserver comes back, answers return to it at once",
    ),
    row(
        Scope::VServer,
        "dynamicWeight",
        "-dynamicWeight",
        None,
        Why::NotYet,
        "weights are the configured ones; they are not scaled by service counts",
    ),
    row(
        Scope::VServer,
        "ecsAddrValidation",
        "-ecsAddrValidation",
        None,
        Why::NotYet,
        "an ECS subnet is taken as given; private or loopback subnets are not replaced by the source address",
    ),
    row(
        Scope::VServer,
        "toggleorder",
        "-toggleorder",
        None,
        Why::NotYet,
        "order-based selection is not implemented; services are chosen by the vserver's method",
    ),
    row(
        Scope::VServer,
        "orderthreshold",
        "-orderthreshold",
        None,
        Why::NotYet,
        "order-based selection is not implemented; services are chosen by the vserver's method",
    ),
    row(
        Scope::Service,
        "cip",
        "-cip",
        None,
        Why::NotApplicable,
        "client-IP insertion is the load balancer's job; Sextant only answers DNS",
    ),
    row(
        Scope::Service,
        "cipHeader",
        "-cipHeader",
        None,
        Why::NotApplicable,
        "client-IP insertion is the load balancer's job; Sextant only answers DNS",
    ),
    row(
        Scope::Service,
        "cltTimeout",
        "-cltTimeout",
        None,
        Why::NotApplicable,
        "connection timeouts are the load balancer's; Sextant only answers DNS",
    ),
    row(
        Scope::Service,
        "svrTimeout",
        "-svrTimeout",
        None,
        Why::NotApplicable,
        "connection timeouts are the load balancer's; Sextant only answers DNS",
    ),
    row(
        Scope::Service,
        "downStateFlush",
        "-downStateFlush",
        None,
        Why::NotApplicable,
        "flushing connections is the load balancer's job; Sextant only answers DNS",
    ),
    // -- gslb vserver
    row(
        Scope::VServer,
        "persistenceId",
        "-persistenceId",
        None,
        Why::NotYet,
        "persistence sessions are not exchanged between sites yet, so nothing uses the id",
    ),
    row(
        Scope::VServer,
        "dnsRecordType",
        "-dnsRecordType",
        None,
        Why::NotApplicable,
        "Sextant answers A and AAAA queries from the services' addresses, whatever the record type",
    ),
    row(
        Scope::VServer,
        "appflowLog",
        "-appflowLog",
        None,
        Why::NotApplicable,
        "Sextant has no AppFlow logging",
    ),
    // -- lb monitor
    row(
        Scope::Monitor,
        "LRTM",
        "-LRTM",
        None,
        Why::NotApplicable,
        "Sextant always keeps each monitor's response time (the LEASTRESPONSETIME figure)",
    ),
    row(
        Scope::Monitor,
        "deviation",
        "-deviation",
        None,
        Why::NotYet,
        "Sextant has no dynamic response time monitoring: a probe fails only when it gets no good answer within -resptimeout",
    ),
    row(
        Scope::Monitor,
        "transparent",
        "-transparent",
        None,
        Why::NotApplicable,
        "probes go to -destIP through the host's routing; Sextant does not send them to a transparent device's MAC address",
    ),
    // -- add ns ip / add ns ip6 (VIPs)
    row(
        Scope::NsIp,
        "arp",
        "-arp",
        None,
        Why::NotYet,
        "the master of a VRID always answers ARP for its VIPs, with the virtual MAC (seed 004)",
    ),
    row(
        Scope::NsIp,
        "nd",
        "-nd",
        None,
        Why::NotYet,
        "the master of a VRID always answers neighbour discovery for its VIPs",
    ),
    row(
        Scope::NsIp,
        "icmp",
        "-icmp",
        None,
        Why::NotYet,
        "the master holds its VIPs on the interface, and the kernel answers pings to them",
    ),
    row(
        Scope::NsIp,
        "arpResponse",
        "-arpResponse",
        None,
        Why::NotYet,
        "a VIP answers ARP while its VRID is master, whatever its vservers' state; health tracking (add vrid -tracking) moves it instead",
    ),
    row(
        Scope::NsIp,
        "icmpResponse",
        "-icmpResponse",
        None,
        Why::NotYet,
        "a VIP answers pings while its VRID is master, whatever its vservers' state; health tracking (add vrid -tracking) moves it instead",
    ),
    row(
        Scope::NsIp,
        "state",
        "-state",
        None,
        Why::NotYet,
        "a VIP is always enabled while its VRID runs; remove the line to take it out",
    ),
    row(
        Scope::NsIp,
        "vServer",
        "-vServer",
        None,
        Why::NotApplicable,
        "Sextant has no load-balancing vservers on its VIPs; its DNS listener is add service NAME IP ADNS PORT",
    ),
    row(
        Scope::NsIp,
        "telnet",
        "-telnet",
        None,
        Why::NotApplicable,
        "management access is the operating system's, not set per address",
    ),
    row(
        Scope::NsIp,
        "ftp",
        "-ftp",
        None,
        Why::NotApplicable,
        "management access is the operating system's, not set per address",
    ),
    row(
        Scope::NsIp,
        "gui",
        "-gui",
        None,
        Why::NotApplicable,
        "management access is the operating system's, not set per address",
    ),
    row(
        Scope::NsIp,
        "ssh",
        "-ssh",
        None,
        Why::NotApplicable,
        "management access is the operating system's, not set per address",
    ),
    row(
        Scope::NsIp,
        "snmp",
        "-snmp",
        None,
        Why::NotApplicable,
        "management access is the operating system's, not set per address",
    ),
    row(
        Scope::NsIp,
        "mgmtAccess",
        "-mgmtAccess",
        None,
        Why::NotApplicable,
        "management access is the operating system's, not set per address",
    ),
    row(
        Scope::NsIp,
        "restrictAccess",
        "-restrictAccess",
        None,
        Why::NotApplicable,
        "management access is the operating system's, not set per address",
    ),
    row(
        Scope::NsIp,
        "dynamicRouting",
        "-dynamicRouting",
        None,
        Why::NotApplicable,
        "Sextant moves VIPs with VRRP only; routing protocols are the routers'",
    ),
    row(
        Scope::NsIp,
        "hostRoute",
        "-hostRoute",
        None,
        Why::NotApplicable,
        "Sextant does not inject routes for its VIPs; it moves them with VRRP",
    ),
    row(
        Scope::NsIp,
        "hostRtGw",
        "-hostRtGw",
        None,
        Why::NotApplicable,
        "Sextant does not inject routes for its VIPs; it moves them with VRRP",
    ),
    row(
        Scope::NsIp,
        "metric",
        "-metric",
        None,
        Why::NotApplicable,
        "Sextant does not inject routes for its VIPs; it moves them with VRRP",
    ),
    row(
        Scope::NsIp,
        "vserverRHILevel",
        "-vserverRHILevel",
        None,
        Why::NotApplicable,
        "Sextant does not inject routes for its VIPs; it moves them with VRRP",
    ),
    row(
        Scope::NsIp,
        "vserverRHIMode",
        "-vserverRHIMode",
        None,
        Why::NotApplicable,
        "Sextant does not inject routes for its VIPs; it moves them with VRRP",
    ),
    row(
        Scope::NsIp,
        "td",
        "-td",
        None,
        Why::NotApplicable,
        "Sextant has no traffic domains",
    ),
    row(
        Scope::NsIp,
        "scope",
        "-scope",
        None,
        Why::NotApplicable,
        "an IPv6 VIP's scope follows from its address",
    ),
];

/// The row for `key` in `scope`, if the setting still has no effect.
pub(crate) fn find(scope: Scope, key: &str) -> Option<&'static NoEffect> {
    NO_EFFECT.iter().find(|r| r.scope == scope && r.key == key)
}

/// The warning for one use of the setting `key` of `scope` in `syntax`, or
/// `None` when the setting has an effect (no row).
pub(crate) fn message(scope: Scope, key: &str, syntax: Syntax) -> Option<String> {
    let row = find(scope, key)?;
    let name = match syntax {
        Syntax::Appliance => row.appliance,
        Syntax::Toml => row.toml.unwrap_or(row.appliance),
    };
    Some(match row.why {
        Why::NotYet => format!(
            "{name} is accepted but not implemented yet; it has no effect ({})",
            row.reason
        ),
        Why::NotApplicable => format!(
            "{name} is accepted but has no effect in Sextant ({})",
            row.reason
        ),
    })
}

/// Records one warning for a use of the setting `key` of `scope` on
/// `line`, if the setting has no effect.
/// Values of settings without effect that ask for what Sextant does anyway
/// (the appliance writes them on every saved line: `-maxClient 0` is no
/// limit, `-appflowLog DISABLED` no logging). A use with such a value says
/// nothing that behaves differently, so it is not warned about.
const INERT: &[(Scope, &str, &str)] = &[
    (Scope::Service, "maxClient", "0"),
    (Scope::Service, "appflowLog", "DISABLED"),
    (Scope::Service, "downStateFlush", "DISABLED"),
    (Scope::Service, "cip", "DISABLED"),
    (Scope::Service, "sitePersistence", "NONE"),
    (Scope::Service, "maxBandwidth", "0"),
    (Scope::Service, "maxAAAUsers", "0"),
    (Scope::VServer, "appflowLog", "DISABLED"),
    // Not without effect at all: CNAME-based GSLB.
    (Scope::VServer, "dnsRecordType", "CNAME"),
    (Scope::Monitor, "LRTM", "DISABLED"),
    (Scope::VServer, "considerEffectiveState", "NONE"),
    (Scope::VServer, "disablePrimaryOnDown", "DISABLED"),
    (Scope::VServer, "ecsAddrValidation", "DISABLED"),
];

/// Whether `value` of `key` asks for what Sextant does anyway ([`INERT`]).
pub(crate) fn is_inert(scope: Scope, key: &str, value: &str) -> bool {
    INERT
        .iter()
        .any(|(s, k, v)| *s == scope && *k == key && v.eq_ignore_ascii_case(value))
}

pub(crate) fn warn(diag: &mut Diag, line: usize, scope: Scope, key: &str, syntax: Syntax) {
    if let Some(text) = message(scope, key, syntax) {
        diag.warn(line, text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique() {
        for (i, r) in NO_EFFECT.iter().enumerate() {
            assert!(
                NO_EFFECT[..i]
                    .iter()
                    .all(|o| (o.scope, o.key) != (r.scope, r.key)),
                "duplicate key {}",
                r.key
            );
        }
    }

    /// Every row is reached by its reader(s): a file using every setting
    /// of the table warns about each row (and in TOML about each row with a
    /// TOML key). A new row needs its setting here and a reader that warns.
    #[test]
    fn every_row_is_warned_about_by_the_readers() {
        let conf = "\
add gslb site p1 10.0.0.1 -nwMetricExchange ENABLED -sessionExchange ENABLED -clip 10.0.0.9 -publicCLIP 192.0.2.9 -naptrReplacementSuffix example.net
add dns policy pol1 \"DNS.REQ.QUESTION.TYPE.EQ(AAAA)\" dns_default_act_Cachebypass -logAction audit1
set gslb parameter -automaticConfigSync ENABLED -ldnsEntryTimeout 60 -RTTTolerance 10 -ldnsMask 255.255.255.0 -v6ldnsMaskLen 64
set gslb parameter -ldnsProbeOrder DNS -dropLdnsReq ENABLED -ldnsProbeInterval 10 -ldnsProbeTimeout 3
set gslb parameter -incarnation 7 -GSLBSyncMode IncrementalSync -GSLBSyncInterval 10 -GSLBSyncLocFiles ENABLED -GSLBConfigSyncMonitor ENABLED -GSLBSyncSaveConfigCommand ENABLED
set lb monitor ldns-ping -interval 10
add gslb service s1 10.1.0.1 HTTP 80 -siteName p1 -publicPort 8080 -maxClient 100 -cip ENABLED -cipHeader X
set gslb service s1 -sitePersistence ConnectionProxy -cookieTimeout 5 -sitePrefix x -maxBandwidth 10 -maxAAAUsers 5 -hashId 3
set gslb service s1 -cltTimeout 180 -svrTimeout 360 -downStateFlush ENABLED
add gslb vserver vs HTTP -lbMethod RTT -backupLBMethod RTT -tolerance 10 -persistenceId 7 -dnsRecordType A -appflowLog ENABLED
set gslb vserver vs -considerEffectiveState STATE_ONLY -disablePrimaryOnDown ENABLED -dynamicWeight SERVICECOUNT -ecsAddrValidation ENABLED -toggleorder ASCENDING -orderthreshold 50
add lb monitor m TCP -LRTM ENABLED -deviation 10 -transparent YES -destIP 10.9.0.1
add vrid 1
bind vrid 1 -ifnum eth0
add ns ip 10.0.0.53 255.255.255.0 -type VIP -vrid 1 -arp ENABLED -icmp ENABLED -arpResponse NONE -icmpResponse NONE -state ENABLED -vServer ENABLED
add ns ip 10.0.0.54 255.255.255.0 -type VIP -vrid 1 -telnet DISABLED -ftp DISABLED -gui DISABLED -ssh DISABLED -snmp DISABLED -mgmtAccess DISABLED -restrictAccess DISABLED
add ns ip 10.0.0.55 255.255.255.0 -type VIP -vrid 1 -dynamicRouting DISABLED -hostRoute ENABLED -hostRtGw 10.0.0.1 -metric 0 -vserverRHILevel ONE_VSERVER -vserverRHIMode DYNAMIC_ROUTING -td 0
add vrid 2
bind vrid 2 -ifnum eth0
add ns ip6 fd00::53/64 -type VIP -vrid6 2 -nd ENABLED -scope global
";
        let m = crate::parse_appliance(conf, "t.conf").expect("valid");
        let toml = r#"version = 1
[gslb]
automatic_config_sync = true
ldns_entry_timeout = "60s"
rtt_tolerance = "10ms"
ldns_v4_mask = 24
ldns_v6_mask = 64
ldns_probe_order = ["dns"]
drop_ldns_requests = true
ldns_probe_interval = "10s"
ldns_probe_timeout = "3s"
[[site]]
name = "p1"
ip = "10.0.0.1"
nw_metric_exchange = true
session_exchange = true
clip = "10.0.0.9"
public_clip = "192.0.2.9"
naptr_replacement_suffix = "example.net"
[[dns_policy]]
name = "pol1"
rule = "DNS.REQ.QUESTION.TYPE.EQ(AAAA)"
action = "dns_default_act_Cachebypass"
log_action = "audit1"
[[service]]
name = "s1"
ip = "10.1.0.1"
port = 80
protocol = "HTTP"
site = "p1"
public_port = 8080
max_clients = 100
[[vserver]]
name = "vs"
protocol = "HTTP"
lb_method = "RTT"
backup_lb_method = "RTT"
"#;
        let t = crate::parse_toml(toml, "t.toml").expect("valid");
        for row in NO_EFFECT {
            let said = format!(": {} is accepted but ", row.appliance);
            assert_eq!(
                m.warnings.iter().filter(|w| w.contains(&said)).count(),
                1,
                "{}: {:#?}",
                row.appliance,
                m.warnings
            );
            if let Some(key) = row.toml {
                let said = format!(": {key} is accepted but ");
                assert_eq!(
                    t.warnings.iter().filter(|w| w.contains(&said)).count(),
                    1,
                    "{key}: {:#?}",
                    t.warnings
                );
            }
        }
        assert_eq!(m.warnings.len(), NO_EFFECT.len(), "{:#?}", m.warnings);
        let with_toml = NO_EFFECT.iter().filter(|r| r.toml.is_some()).count();
        assert_eq!(t.warnings.len(), with_toml, "{:#?}", t.warnings);
    }

    #[test]
    fn messages_name_the_setting() {
        let m = message(Scope::Service, "maxClient", Syntax::Appliance).expect("row");
        assert!(
            m.starts_with("-maxClient is accepted but not implemented yet; it has no effect ("),
            "{m}"
        );
        let m = message(Scope::Service, "maxClient", Syntax::Toml).expect("row");
        assert!(m.starts_with("[[service]] max_clients is accepted"), "{m}");
        // Config sync is implemented: its settings are not in the table.
        assert!(message(Scope::Param, "automaticConfigSync", Syntax::Appliance).is_none());
        assert!(message(Scope::Param, "incarnation", Syntax::Appliance).is_none());
        let m = message(Scope::Service, "cip", Syntax::Appliance).expect("row");
        assert!(
            m.starts_with("-cip is accepted but has no effect in Sextant ("),
            "{m}"
        );
        assert!(message(Scope::Service, "automaticConfigSync", Syntax::Appliance).is_none());
    }
}
