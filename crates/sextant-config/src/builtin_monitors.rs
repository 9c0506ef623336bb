//! The appliance's built-in monitors (`ping`, `tcp`, `http`, ...): they
//! exist without `add lb monitor`, so a saved configuration binds them
//! (`bind gslb service S -monitorName http`) and changes them (`set lb
//! monitor http HTTP -respCode 200`) without defining them. Both syntaxes
//! may name them wherever a monitor is bound; a monitor of the same name
//! defined in the file takes its place.
//!
//! A built-in monitor is added to the model only when something binds or
//! changes it, so a configuration that uses none has no extra monitors.
//! The built-in LDNS monitors (`ldns-ping`, ...) are not bound to services;
//! `set lb monitor` tunes them as GSLB parameters (see `appliance::monitor`).

use std::net::{IpAddr, Ipv4Addr};

use sextant_core::{DnsCheck, DnsQueryType, HttpCheck, Monitor, MonitorKind, UdpCheck};

use crate::draft::{Draft, DraftMonitor};

/// One built-in monitor.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Builtin {
    pub name: &'static str,
    /// The type the appliance shows for it (`HTTP-ECV`; `HTTPS` stands for
    /// the appliance's HTTP with `-secure YES`).
    pub type_word: &'static str,
    /// Its check with the appliance's defaults, or why Sextant cannot
    /// probe it.
    pub check: Result<fn() -> MonitorKind, &'static str>,
}

impl Builtin {
    /// The monitor with the appliance's defaults, if Sextant can probe it.
    pub(crate) fn monitor(&self) -> Option<Monitor> {
        let kind = self.check.ok()?;
        Some(Monitor::new(self.name, kind()))
    }
}

/// The appliance's HTTP monitor check: `HEAD /`, status 200.
pub(crate) fn http_check() -> HttpCheck {
    HttpCheck {
        request: "HEAD /".to_string(),
        status_codes: vec![(200, 200)],
        body_contains: None,
        custom_headers: String::new(),
    }
}

/// An HTTP-ECV check without `-send`/`-recv`: `GET /`, any status (an ECV
/// monitor judges by the body only).
pub(crate) fn http_ecv_check() -> HttpCheck {
    HttpCheck {
        request: "GET /".to_string(),
        status_codes: vec![(100, 599)],
        body_contains: None,
        custom_headers: String::new(),
    }
}

/// The built-in `dns` monitor's check: `-query . -queryType Address
/// -IPAddress 127.0.0.1`, as a saved configuration shows it.
fn dns_check() -> DnsCheck {
    DnsCheck {
        query: String::new(),
        query_type: DnsQueryType::A,
        expect_addresses: vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
        expect_rcodes: Vec::new(),
    }
}

const NO_TCP_ECV: &str = "Sextant has no TCP-ECV probe (send a string over TCP and expect a reply); use a TCP, HTTP-ECV or UDP-ECV monitor";
pub(crate) const NO_TCPS: &str = "Sextant has no TLS-only probe (TCP with -secure YES); use an HTTPS monitor (the built-in https) or a TCP one";
const NO_DNS_TCP: &str =
    "Sextant's DNS monitors ask over UDP only; use a DNS monitor (the built-in dns)";
const NO_ARP: &str = "Sextant does not probe by ARP (a GSLB site's services are not on its own link); use a PING or TCP monitor";
const NO_ND6: &str = "Sextant does not probe by IPv6 neighbour discovery (a GSLB site's services are not on its own link); use a PING or TCP monitor";

/// Every built-in monitor a service can be bound to, by name.
pub(crate) const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "ping",
        type_word: "PING",
        check: Ok(|| MonitorKind::Ping),
    },
    Builtin {
        name: "ping-default",
        type_word: "PING",
        check: Ok(|| MonitorKind::Ping),
    },
    Builtin {
        name: "tcp",
        type_word: "TCP",
        check: Ok(|| MonitorKind::Tcp),
    },
    Builtin {
        name: "tcp-default",
        type_word: "TCP",
        check: Ok(|| MonitorKind::Tcp),
    },
    Builtin {
        name: "http",
        type_word: "HTTP",
        check: Ok(|| MonitorKind::Http(http_check())),
    },
    Builtin {
        name: "https",
        type_word: "HTTPS",
        check: Ok(|| MonitorKind::Https(http_check())),
    },
    Builtin {
        name: "http-ecv",
        type_word: "HTTP-ECV",
        check: Ok(|| MonitorKind::Http(http_ecv_check())),
    },
    Builtin {
        name: "https-ecv",
        type_word: "HTTP-ECV",
        check: Ok(|| MonitorKind::Https(http_ecv_check())),
    },
    Builtin {
        name: "udp-ecv",
        type_word: "UDP-ECV",
        check: Ok(|| MonitorKind::Udp(UdpCheck::default())),
    },
    Builtin {
        name: "dns",
        type_word: "DNS",
        check: Ok(|| MonitorKind::Dns(dns_check())),
    },
    Builtin {
        name: "tcp-ecv",
        type_word: "TCP-ECV",
        check: Err(NO_TCP_ECV),
    },
    Builtin {
        name: "tcps",
        type_word: "TCP",
        check: Err(NO_TCPS),
    },
    Builtin {
        name: "dns-tcp",
        type_word: "DNS-TCP",
        check: Err(NO_DNS_TCP),
    },
    Builtin {
        name: "arp",
        type_word: "ARP",
        check: Err(NO_ARP),
    },
    Builtin {
        name: "nd6",
        type_word: "ND6",
        check: Err(NO_ND6),
    },
];

/// The built-in monitor called `name` (case-insensitively).
pub(crate) fn find(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name.eq_ignore_ascii_case(name))
}

/// Why Sextant cannot probe a monitor of the appliance type `ty`, for the
/// types it accepts in a file but has no probe for.
pub(crate) fn unprobed_type(ty: &str) -> Option<&'static str> {
    [
        ("TCP-ECV", NO_TCP_ECV),
        ("DNS-TCP", NO_DNS_TCP),
        ("ARP", NO_ARP),
        ("ND6", NO_ND6),
    ]
    .iter()
    .find(|(t, _)| t.eq_ignore_ascii_case(ty))
    .map(|(_, why)| *why)
}

/// Adds to `draft` every built-in monitor that a binding names and the file
/// does not define, at the line of its first binding.
pub(crate) fn add_bound(draft: &mut Draft) {
    let mut added: Vec<DraftMonitor> = Vec::new();
    for b in &draft.monitor_bindings {
        let name = &b.monitor.name;
        let defined = |m: &DraftMonitor| m.monitor.name.eq_ignore_ascii_case(name);
        if draft.monitors.iter().any(defined) || added.iter().any(defined) {
            continue;
        }
        if draft
            .unprobed_monitors
            .iter()
            .any(|u| u.name.eq_ignore_ascii_case(name))
        {
            continue;
        }
        if let Some(monitor) = find(name).and_then(Builtin::monitor) {
            added.push(DraftMonitor {
                line: b.monitor.line,
                timing_line: b.monitor.line,
                monitor,
            });
        }
    }
    draft.monitors.extend(added);
}

/// Why a service cannot be bound to the monitor `name`, when that is a
/// monitor the file accepted but Sextant cannot probe (a built-in one, or
/// one added with such a type).
pub(crate) fn unprobed(draft: &Draft, name: &str) -> Option<String> {
    if let Some(u) = draft
        .unprobed_monitors
        .iter()
        .find(|u| u.name.eq_ignore_ascii_case(name))
    {
        return Some(format!(
            "monitor \"{}\" (line {}, type {}) cannot be bound: {}",
            u.name, u.line, u.type_word, u.why
        ));
    }
    let b = find(name)?;
    let why = b.check.err()?;
    Some(format!(
        "built-in monitor \"{}\" (type {}) cannot be bound: {why}",
        b.name, b.type_word
    ))
}
