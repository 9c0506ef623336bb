//! Which appliance commands are Sextant's business: the one table that both
//! `sextant check` (to say "use `sextant import`" instead of "unknown
//! command") and `sextant import` (to leave a saved file's other commands
//! out and count them) read.
//!
//! A saved appliance configuration (`ns.conf`) holds the whole appliance:
//! system, network, load balancing, SSL, and a few dozen GSLB and DNS lines.
//! Sextant is a DNS-based GSLB, so most of those commands are outside its
//! scope; this module names the area each belongs to, so a report can say
//! why it was left out.

use crate::lexer::Token;

/// The part of the appliance a command configures, when it is not Sextant's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Area {
    System,
    Network,
    HighAvailability,
    LoadBalancing,
    ContentSwitching,
    Ssl,
    TrafficPolicies,
    Security,
    Logging,
    DnsResolver,
    /// DNS records and features of the appliance's authoritative server
    /// that Sextant does not serve.
    DnsNotServed,
    /// Commands an operator runs at the appliance's prompt (`show`, `sync
    /// gslb config`, `save ns config`, ...), found in a file: they
    /// configure nothing.
    Operational,
    /// A command of the appliance's syntax that this table does not know.
    Other,
}

impl Area {
    /// How the report and messages name the area.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Area::System => "system settings",
            Area::Network => "network: interfaces, VLANs, addresses, routes",
            Area::HighAvailability => "high availability and clustering",
            Area::LoadBalancing => "load balancing",
            Area::ContentSwitching => "content switching",
            Area::Ssl => "SSL/TLS offload",
            Area::TrafficPolicies => "HTTP traffic policies",
            Area::Security => "security, authentication and access",
            Area::Logging => "logging and monitoring",
            Area::DnsResolver => "the appliance's DNS resolver and cache",
            Area::DnsNotServed => {
                "DNS records and features Sextant does not serve (PTR, NAPTR, DNSSEC, views)"
            }
            Area::Operational => {
                "operational commands, run at the appliance's prompt: they configure nothing"
            }
            Area::Other => "not recognised as GSLB or DNS",
        }
    }
}

/// The verbs of the appliance's command line.
const VERBS: &[&str] = &[
    "add",
    "set",
    "unset",
    "bind",
    "unbind",
    "enable",
    "disable",
    "rm",
    "link",
    "unlink",
    "apply",
    "rename",
    "sign",
    "unsign",
    "update",
    "clear",
    "show",
    "save",
    "sync",
    "reset",
    "import",
    "create",
    "install",
    "stat",
    "reboot",
    "shutdown",
    "force",
    "ping",
    "traceroute",
];

/// The verbs of commands that act on the running appliance instead of
/// configuring it; a saved file holds them only when a copy caught them.
const OPERATIONAL_VERBS: &[&str] = &[
    "show",
    "stat",
    "save",
    "sync",
    "clear",
    "reset",
    "reboot",
    "shutdown",
    "force",
    "ping",
    "traceroute",
];

/// Object words that take a second word (`add lb vserver`, `set ns
/// config`); other objects are one word (`add server`, `add vlan`).
const GROUPS: &[&str] = &[
    "aaa",
    "analytics",
    "appflow",
    "appfw",
    "appqoe",
    "audit",
    "authentication",
    "authorization",
    "autoscale",
    "bot",
    "cache",
    "cluster",
    "cmp",
    "contentInspection",
    "cr",
    "cs",
    "db",
    "dns",
    "dos",
    "feo",
    "filter",
    "gslb",
    "ha",
    "ica",
    "ipsec",
    "ipsecalg",
    "lb",
    "lldp",
    "lsn",
    "mqtt",
    "ns",
    "ntp",
    "pcp",
    "policy",
    "pq",
    "protocol",
    "qos",
    "rdp",
    "reputation",
    "responder",
    "rewrite",
    "sc",
    "smpp",
    "snmp",
    "spillover",
    "ssl",
    "stream",
    "subscriber",
    "system",
    "tm",
    "transform",
    "tunnel",
    "ulfd",
    "urlfiltering",
    "user",
    "videooptimization",
    "vpn",
    "wf",
];

/// How many of `tokens` are the command's words: the verb and the object
/// (one or two words), or fewer when the line is shorter. 0 when the line
/// does not start with a verb.
pub(crate) fn command_len(tokens: &[Token]) -> usize {
    let word = |i: usize| {
        tokens
            .get(i)
            .filter(|t| !t.quoted && !t.is_option())
            .map(|t| &*t.text)
    };
    let Some(verb) = word(0) else { return 0 };
    if !VERBS.iter().any(|v| v.eq_ignore_ascii_case(verb)) {
        return 0;
    }
    match word(1) {
        None => 1,
        Some(object) if GROUPS.iter().any(|g| g.eq_ignore_ascii_case(object)) => {
            if word(2).is_some() { 3 } else { 2 }
        }
        Some(_) => 2,
    }
}

/// The command words of a line as written (`add lb vserver`), for messages.
pub(crate) fn command_words(tokens: &[Token]) -> String {
    let n = command_len(tokens).max(1).min(tokens.len());
    tokens[..n]
        .iter()
        .map(|t| &*t.text)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The area of a command outside Sextant's scope, by its object words
/// (`["lb", "vserver"]`, `["vlan"]`); `None` for the objects Sextant reads
/// (GSLB, its DNS zones and policies, monitors, ADNS services, servers,
/// locations, VRRP), whose lines the readers judge themselves.
pub(crate) fn area_of(object: &[&str]) -> Option<Area> {
    let lower: Vec<String> = object.iter().map(|w| w.to_ascii_lowercase()).collect();
    let first = lower.first().map(String::as_str).unwrap_or("");
    let second = lower.get(1).map(String::as_str).unwrap_or("");
    let area = match first {
        "gslb" | "location" | "locationfile" | "locationfile6" | "vrid" | "vridparam"
        | "server" | "service" => return None,
        "lb" if second == "monitor" => return None,
        "ns" => match second {
            "ip" | "ip6" | "rpcnode" | "feature" | "mode" => return None,
            "acl" | "acl6" | "simpleacl" | "simpleacl6" | "pbr" | "pbr6" | "netprofile" => {
                Area::Network
            }
            _ => Area::System,
        },
        "dns" => match second {
            "soarec" | "nsrec" | "addrec" | "aaaarec" | "cnamerec" | "mxrec" | "txtrec"
            | "srvrec" | "dsrec" | "zone" | "policy" | "action" | "global" | "key" => {
                return None;
            }
            "ptrrec" | "naptrrec" | "nsecrec" | "keys" | "view" | "policylabel" | "action64"
            | "policy64" | "profile" => Area::DnsNotServed,
            _ => Area::DnsResolver,
        },
        "lb" | "serviceGroup" | "servicegroup" | "spillover" | "pq" | "sc" | "db" | "user"
        | "mqtt" | "smpp" | "ica" | "rdp" | "autoscale" => Area::LoadBalancing,
        "cs" | "cr" => Area::ContentSwitching,
        "ssl" => Area::Ssl,
        "responder" | "rewrite" | "filter" | "cmp" | "cache" | "transform" | "feo" | "protocol"
        | "stream" | "appqoe" | "videooptimization" | "policy" | "analytics"
        | "contentinspection" => Area::TrafficPolicies,
        "aaa" | "authentication" | "authorization" | "tm" | "vpn" | "appfw" | "bot"
        | "reputation" | "urlfiltering" | "dos" | "wf" => Area::Security,
        "audit" | "snmp" | "appflow" | "ulfd" => Area::Logging,
        "ha" | "cluster" | "hanode" => Area::HighAvailability,
        "system" | "ntp" | "rsskeytype" | "lldp" | "ptp" | "qos" | "callhome"
        | "locationparameter" => Area::System,
        "vlan" | "interface" | "channel" | "route" | "route6" | "arp" | "nd6" | "rnat"
        | "rnat6" | "inat" | "inatparam" | "rnatparam" | "netbridge" | "bridgegroup"
        | "bridgetable" | "vxlan" | "iptunnel" | "ip6tunnel" | "ip6tunnelparam"
        | "iptunnelparam" | "ipsec" | "ipsecalg" | "lacp" | "linkset" | "ipv6" | "l2param"
        | "l3param" | "nd6ravariables" | "onlinkipv6prefix" | "forwardingsession" | "fis"
        | "mapdmr" | "mapbmr" | "mapdomain" | "nat64" | "nat64param" | "lsn" | "pcp"
        | "subscriber" | "ipset" | "netprofile" | "vrid6" | "tunnel" | "vlandyn" => Area::Network,
        _ => Area::Other,
    };
    Some(area)
}

/// The area of a whole line's command, from its tokens, when it is outside
/// Sextant's scope.
pub(crate) fn area_of_line(tokens: &[Token]) -> Option<Area> {
    let n = command_len(tokens);
    if n >= 1
        && OPERATIONAL_VERBS
            .iter()
            .any(|v| v.eq_ignore_ascii_case(&tokens[0].text))
    {
        return Some(Area::Operational);
    }
    if n < 2 {
        return None;
    }
    let object: Vec<&str> = tokens[1..n].iter().map(|t| &*t.text).collect();
    // Sextant defines servers and ADNS services; binding monitors to a
    // service or changing one is the load balancer's.
    let verb = &tokens[0].text;
    // `set dns parameter` is the appliance's resolver, unless the line
    // gives one of Sextant's DNS server options (NSID, rate limiting, ...).
    if verb.eq_ignore_ascii_case("set")
        && matches!(object.as_slice(), [a, b] if a.eq_ignore_ascii_case("dns") && b.eq_ignore_ascii_case("parameter"))
        && crate::appliance::dns_server::has_sextant_option(tokens)
    {
        return None;
    }
    if matches!(object.as_slice(), [o] if o.eq_ignore_ascii_case("service") || o.eq_ignore_ascii_case("server"))
        && !verb.eq_ignore_ascii_case("add")
    {
        return Some(Area::LoadBalancing);
    }
    area_of(&object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::tokenize;

    fn words(line: &str) -> String {
        command_words(&tokenize(line).expect("tokens"))
    }

    fn area(line: &str) -> Option<Area> {
        area_of_line(&tokenize(line).expect("tokens"))
    }

    #[test]
    fn command_words_stop_at_the_object() {
        assert_eq!(words("bind serviceGroup sg1 s1 80"), "bind serviceGroup");
        assert_eq!(
            words("add lb vserver vs HTTP 10.0.0.1 80"),
            "add lb vserver"
        );
        assert_eq!(words("set ns config -IPAddress 10.0.0.1"), "set ns config");
        assert_eq!(words("add server s1 10.0.0.1"), "add server");
        assert_eq!(words("set ns -x"), "set ns");
        assert_eq!(words("frobnicate x y"), "frobnicate");
    }

    #[test]
    fn areas_follow_the_object() {
        assert_eq!(
            area("add lb vserver vs HTTP 10.0.0.1 80"),
            Some(Area::LoadBalancing)
        );
        assert_eq!(area("add lb monitor m HTTP"), None);
        assert_eq!(area("add ssl certKey k -cert c"), Some(Area::Ssl));
        assert_eq!(
            area("set ns config -IPAddress 10.0.0.1"),
            Some(Area::System)
        );
        assert_eq!(area("add ns ip 10.0.0.2 255.255.255.0"), None);
        assert_eq!(
            area("add dns nameServer 10.0.0.53"),
            Some(Area::DnsResolver)
        );
        assert_eq!(area("add dns addRec www.example.com 10.0.0.1"), None);
        assert_eq!(area("add dns dsRec sub.example.com -keyTag 1"), None);
        for op in [
            "sync gslb config -saveconfig",
            "save ns config",
            "show gslb site",
            "stat gslb vserver gv_www",
            "reboot",
        ] {
            assert_eq!(area(op), Some(Area::Operational), "{op}");
        }
        assert_eq!(area("add vlan 10"), Some(Area::Network));
        assert_eq!(
            area("add dns ptrRec 1.0.0.10.in-addr.arpa a.example.com"),
            Some(Area::DnsNotServed)
        );
        assert_eq!(area("add gslb vserver v HTTP"), None);
        assert_eq!(area("add blorp x"), Some(Area::Other));
        assert_eq!(
            area("bind service svc1 -monitorName m"),
            Some(Area::LoadBalancing)
        );
        assert_eq!(area("add service svc1 10.0.0.1 ADNS 53"), None);
    }
}
