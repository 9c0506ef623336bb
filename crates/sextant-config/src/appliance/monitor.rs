//! `add/set lb monitor`, `bind gslb service -monitorName` and
//! `bind lb monitor`.

use sextant_core::{DnsCheck, DnsQueryType, HttpCheck, LdnsProbe, Monitor, MonitorKind, UdpCheck};

use super::args::Args;
use super::{Arity, OptSpec, Reader, context, opt};
use crate::draft::{DraftMonitor, MonitorBinding, Ref};
use crate::duration::Unit;
use crate::lexer::Token;
use crate::no_effect::Scope;
use crate::scalar;

/// A monitor type as written in `add lb monitor NAME TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MonType {
    Ping,
    Tcp,
    Http,
    HttpEcv,
    Https,
    Dns,
    Udp,
    UdpEcv,
}

const TYPES: &[(&str, MonType)] = &[
    ("PING", MonType::Ping),
    ("TCP", MonType::Tcp),
    ("HTTP", MonType::Http),
    ("HTTP-ECV", MonType::HttpEcv),
    ("HTTPS", MonType::Https),
    ("DNS", MonType::Dns),
    ("UDP", MonType::Udp),
    ("UDP-ECV", MonType::UdpEcv),
];

impl MonType {
    fn parse(text: &str) -> Result<MonType, String> {
        TYPES
            .iter()
            .find(|(w, _)| w.eq_ignore_ascii_case(text))
            .map(|(_, t)| *t)
            .ok_or_else(|| {
                let all: Vec<&str> = TYPES.iter().map(|(w, _)| *w).collect();
                format!(
                    "unknown monitor type \"{text}\"; expected one of {}",
                    all.join(", ")
                )
            })
    }

    fn word(self) -> &'static str {
        TYPES
            .iter()
            .find(|(_, t)| *t == self)
            .map(|(w, _)| *w)
            .unwrap_or("?")
    }

    /// The options a monitor of this type accepts.
    fn options(self) -> &'static [OptSpec] {
        match self {
            MonType::Ping | MonType::Tcp => COMMON,
            MonType::Http | MonType::Https => HTTP,
            MonType::HttpEcv => HTTP_ECV,
            MonType::Dns => DNS,
            MonType::Udp | MonType::UdpEcv => UDP,
        }
    }

    /// A monitor of this type with the appliance's defaults.
    fn new_monitor(self, name: &str) -> Monitor {
        let kind = match self {
            MonType::Ping => MonitorKind::Ping,
            MonType::Tcp => MonitorKind::Tcp,
            MonType::Http => MonitorKind::Http(http_default()),
            MonType::Https => MonitorKind::Https(http_default()),
            MonType::HttpEcv => MonitorKind::Http(HttpCheck {
                request: "GET /".to_string(),
                // An ECV monitor judges by the body only: any status will do.
                status_codes: vec![(100, 599)],
                body_contains: None,
            }),
            MonType::Dns => MonitorKind::Dns(DnsCheck {
                query: String::new(),
                query_type: DnsQueryType::A,
                expect_addresses: Vec::new(),
                expect_rcodes: Vec::new(),
            }),
            MonType::Udp | MonType::UdpEcv => MonitorKind::Udp(UdpCheck::default()),
        };
        Monitor::new(name, kind)
    }
}

/// The appliance's HTTP monitor: `HEAD /`, status 200.
fn http_default() -> HttpCheck {
    HttpCheck {
        request: "HEAD /".to_string(),
        status_codes: vec![(200, 200)],
        body_contains: None,
    }
}

const COMMON: &[OptSpec] = &[
    opt("interval", Arity::Duration),
    opt("resptimeout", Arity::Duration),
    opt("retries", Arity::One),
    opt("successRetries", Arity::One),
    opt("destPort", Arity::One),
    opt("LRTM", Arity::One),
];
const HTTP: &[OptSpec] = &[
    opt("interval", Arity::Duration),
    opt("resptimeout", Arity::Duration),
    opt("retries", Arity::One),
    opt("successRetries", Arity::One),
    opt("destPort", Arity::One),
    opt("LRTM", Arity::One),
    opt("httpRequest", Arity::One),
    opt("respCode", Arity::Many),
    opt("secure", Arity::One),
];
const HTTP_ECV: &[OptSpec] = &[
    opt("interval", Arity::Duration),
    opt("resptimeout", Arity::Duration),
    opt("retries", Arity::One),
    opt("successRetries", Arity::One),
    opt("destPort", Arity::One),
    opt("LRTM", Arity::One),
    opt("send", Arity::One),
    opt("recv", Arity::One),
    opt("secure", Arity::One),
];
const DNS: &[OptSpec] = &[
    opt("interval", Arity::Duration),
    opt("resptimeout", Arity::Duration),
    opt("retries", Arity::One),
    opt("successRetries", Arity::One),
    opt("destPort", Arity::One),
    opt("LRTM", Arity::One),
    opt("query", Arity::One),
    opt("queryType", Arity::One),
    opt("IPAddress", Arity::Many),
    opt("rcode", Arity::Many),
];
const UDP: &[OptSpec] = &[
    opt("interval", Arity::Duration),
    opt("resptimeout", Arity::Duration),
    opt("retries", Arity::One),
    opt("successRetries", Arity::One),
    opt("destPort", Arity::One),
    opt("LRTM", Arity::One),
    opt("send", Arity::One),
    opt("recv", Arity::One),
];
/// The built-in LDNS probe monitors take their timing and, for the DNS
/// probes, the port.
const LDNS: &[OptSpec] = &[
    opt("interval", Arity::Duration),
    opt("resptimeout", Arity::Duration),
    opt("destPort", Arity::One),
];

/// The appliance's built-in RTT probe monitors, which `set lb monitor` may
/// tune like any other (seed 003): `GslbParams::ldns_ping`, `ldns_dns`,
/// `ldns_tcp`.
const LDNS_MONITORS: &[(&str, &str, LdnsProbe)] = &[
    ("ldns-ping", "LDNS-PING", LdnsProbe::Ping),
    ("ldns-dns", "LDNS-DNS", LdnsProbe::DnsUdp),
    ("ldns-tcp", "LDNS-TCP", LdnsProbe::DnsTcp),
];

/// `add lb monitor NAME TYPE [options]`.
pub(super) fn add_monitor(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let base = context("add lb monitor", tokens);
    // The type decides which options are valid, so read it before the options.
    let has_name = tokens.first().is_some_and(|t| !t.is_option());
    let ty_token = tokens.get(1).filter(|t| has_name && !t.is_option());
    let ty = match ty_token.map(|t| MonType::parse(&t.text)) {
        Some(Ok(ty)) => ty,
        Some(Err(e)) => {
            r.error(line, &base, e);
            return;
        }
        None => {
            let missing = if has_name { "TYPE" } else { "NAME TYPE" };
            r.error(
                line,
                &base,
                format!("missing {missing}; expected NAME TYPE and then options"),
            );
            return;
        }
    };
    let ctx = format!("{base} {}", ty.word());
    let args = r.args(line, &ctx, tokens, ty.options());
    let Some(pos) = r.positional(line, &base, &args, &["NAME", "TYPE"]) else {
        return;
    };
    let mut monitor = ty.new_monitor(pos[0]);
    apply_monitor_opts(r, line, &ctx, ty, &mut monitor, &args);
    if let MonitorKind::Dns(dns) = &monitor.kind
        && dns.query.is_empty()
        && args.lacks("query")
    {
        r.error(
            line,
            &ctx,
            "-query is required for DNS monitors (the name to ask for)",
        );
    }
    r.draft.monitors.push(DraftMonitor {
        line,
        timing_line: line,
        monitor,
    });
    r.monitor_types.push(ty);
}

/// `set lb monitor NAME [TYPE] [options]`: changes a monitor defined on an
/// earlier line, or the timing of the built-in LDNS probe monitors.
pub(super) fn set_monitor(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = context("set lb monitor", tokens);
    let Some(name) = tokens
        .first()
        .filter(|t| !t.is_option())
        .map(|t| t.text.clone())
    else {
        r.error(
            line,
            &ctx,
            "missing NAME; expected NAME [TYPE] and then options",
        );
        return;
    };
    if let Some((_, ldns_type, kind)) = LDNS_MONITORS
        .iter()
        .find(|(n, _, _)| n.eq_ignore_ascii_case(&name))
    {
        set_ldns_monitor(r, line, &ctx, (ldns_type, *kind), tokens);
        return;
    }
    let Some(idx) = r
        .draft
        .monitors
        .iter()
        .position(|m| m.monitor.name.eq_ignore_ascii_case(&name))
    else {
        r.error(
            line,
            &ctx,
            format!(
                "monitor \"{name}\" is not defined on an earlier line (add it with \"add lb monitor\" first; built-in monitors that can be set: ldns-ping, ldns-dns, ldns-tcp)"
            ),
        );
        return;
    };
    let ty = r.monitor_types[idx];
    let args = r.args(line, &ctx, tokens, ty.options());
    if args.positional.len() > 2 {
        r.error(
            line,
            &ctx,
            format!(
                "unexpected argument \"{}\"; expected NAME [TYPE] and then options",
                args.positional[2].text
            ),
        );
    }
    if let Some(t) = args.positional.get(1)
        && !t.text.eq_ignore_ascii_case(ty.word())
    {
        r.error(
            line,
            &ctx,
            format!(
                "monitor \"{name}\" has type {}, not {} (a monitor's type cannot be changed)",
                ty.word(),
                t.text
            ),
        );
    }
    let mut monitor = r.draft.monitors[idx].monitor.clone();
    apply_monitor_opts(r, line, &ctx, ty, &mut monitor, &args);
    let d = &mut r.draft.monitors[idx];
    d.monitor = monitor;
    if args.has("interval") || args.has("resptimeout") {
        d.timing_line = line;
    }
}

fn set_ldns_monitor(
    r: &mut Reader<'_>,
    line: usize,
    ctx: &str,
    (ty, kind): (&str, LdnsProbe),
    tokens: &[Token],
) {
    let args = r.args(line, ctx, tokens, LDNS);
    if args.positional.len() > 2 {
        r.error(
            line,
            ctx,
            format!("unexpected argument \"{}\"", args.positional[2].text),
        );
    }
    if let Some(t) = args.positional.get(1)
        && !t.text.eq_ignore_ascii_case(ty)
    {
        r.error(
            line,
            ctx,
            format!("this built-in monitor has type {ty}, not {}", t.text),
        );
    }
    if let Some(o) = args.get("interval")
        && let Some(d) = r.duration(line, ctx, o, Unit::Seconds)
    {
        r.draft.params.ldns_monitor_mut(kind).interval = d;
        r.draft.params_line = line;
    }
    if let Some(o) = args.get("resptimeout")
        && let Some(d) = r.duration(line, ctx, o, Unit::Seconds)
    {
        r.draft.params.ldns_monitor_mut(kind).timeout = d;
        r.draft.params_line = line;
    }
    if let Some(o) = args.get("destPort") {
        if kind == LdnsProbe::Ping {
            r.error(line, ctx, "-destPort: a PING probe has no port");
        } else if let Some(p) = r.value(line, ctx, o, scalar::port) {
            r.draft.params.ldns_monitor_mut(kind).dest_port = Some(p);
        }
    }
    if !args.any {
        r.error(
            line,
            ctx,
            "nothing to set; give -interval, -resptimeout and/or -destPort",
        );
    }
}

fn apply_monitor_opts(
    r: &mut Reader<'_>,
    line: usize,
    ctx: &str,
    ty: MonType,
    m: &mut Monitor,
    args: &Args,
) {
    for o in &args.opts {
        r.no_effect(line, Scope::Monitor, o.name);
        match o.name {
            "interval" => {
                if let Some(d) = r.duration(line, ctx, o, Unit::Seconds) {
                    m.interval = d;
                }
            }
            "resptimeout" => {
                if let Some(d) = r.duration(line, ctx, o, Unit::Seconds) {
                    m.response_timeout = d;
                }
            }
            "retries" => {
                if let Some(n) = r.value(line, ctx, o, |v| scalar::int_in(v, 1, 127)) {
                    m.retries = n as u32;
                }
            }
            "successRetries" => {
                if let Some(n) = r.value(line, ctx, o, |v| scalar::int_in(v, 1, 32)) {
                    m.success_retries = n as u32;
                }
            }
            "destPort" => {
                if let Some(p) = r.value(line, ctx, o, scalar::port) {
                    m.dest_port = Some(p);
                }
            }
            "LRTM" => {
                // Least-response-time measurement of the appliance's LB: no
                // effect here (warned about); accepted so appliance exports
                // load.
                r.value(line, ctx, o, scalar::enabled);
            }
            "secure" => {
                let Some(secure) = r.value(line, ctx, o, scalar::yes_no) else {
                    continue;
                };
                let kind = std::mem::replace(&mut m.kind, MonitorKind::Tcp);
                m.kind = match (kind, secure) {
                    (MonitorKind::Http(c), true) => MonitorKind::Https(c),
                    (MonitorKind::Https(c), false) if ty == MonType::Https => {
                        r.error(
                            line,
                            ctx,
                            "-secure NO contradicts type HTTPS; use type HTTP",
                        );
                        MonitorKind::Https(c)
                    }
                    (MonitorKind::Https(c), false) => MonitorKind::Http(c),
                    (other, _) => other,
                };
            }
            "httpRequest" | "send" | "recv" | "respCode" => http_or_udp_opt(r, line, ctx, m, o),
            "query" | "queryType" | "IPAddress" | "rcode" => dns_opt(r, line, ctx, m, o),
            _ => {}
        }
    }
}

fn http_or_udp_opt(
    r: &mut Reader<'_>,
    line: usize,
    ctx: &str,
    m: &mut Monitor,
    o: &super::args::Opt,
) {
    match (&mut m.kind, o.name) {
        (MonitorKind::Http(c) | MonitorKind::Https(c), "httpRequest" | "send") => {
            if o.value().trim().is_empty() {
                r.error(
                    line,
                    ctx,
                    format!(
                        "-{}: the request is empty; write e.g. \"GET /health\"",
                        o.name
                    ),
                );
            } else {
                c.request = o.value().to_string();
            }
        }
        (MonitorKind::Http(c) | MonitorKind::Https(c), "recv") => {
            c.body_contains = Some(o.value().to_string());
        }
        (MonitorKind::Http(c) | MonitorKind::Https(c), "respCode") => {
            let mut codes = Vec::new();
            for v in o.texts() {
                match scalar::status_range(v) {
                    Ok(range) => codes.push(range),
                    Err(e) => r.error(line, ctx, format!("-respCode: {e}")),
                }
            }
            if !codes.is_empty() {
                c.status_codes = codes;
            }
        }
        (MonitorKind::Udp(c), "send") => c.send = o.value().to_string(),
        (MonitorKind::Udp(c), "recv") => c.receive = Some(o.value().to_string()),
        _ => {}
    }
}

fn dns_opt(r: &mut Reader<'_>, line: usize, ctx: &str, m: &mut Monitor, o: &super::args::Opt) {
    let MonitorKind::Dns(c) = &mut m.kind else {
        return;
    };
    match o.name {
        "query" => c.query = o.value().to_string(),
        "queryType" => {
            let v = o.value();
            if v.eq_ignore_ascii_case("A") || v.eq_ignore_ascii_case("Address") {
                c.query_type = DnsQueryType::A;
            } else if v.eq_ignore_ascii_case("AAAA") {
                c.query_type = DnsQueryType::Aaaa;
            } else {
                r.error(
                    line,
                    ctx,
                    format!("-queryType: expected A (or Address) or AAAA, found \"{v}\""),
                );
            }
        }
        "IPAddress" => {
            c.expect_addresses.clear();
            for v in o.texts() {
                match scalar::ip(v) {
                    Ok(ip) => c.expect_addresses.push(ip),
                    Err(e) => r.error(line, ctx, format!("-IPAddress: {e}")),
                }
            }
        }
        "rcode" => {
            c.expect_rcodes.clear();
            for v in o.texts() {
                match scalar::rcode(v) {
                    Ok(n) => c.expect_rcodes.push(n),
                    Err(e) => r.error(line, ctx, format!("-rcode: {e}")),
                }
            }
        }
        _ => {}
    }
}

/// `bind gslb service SVC -monitorName MON`.
pub(super) fn bind_gslb_service(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    const OPTS: &[OptSpec] = &[opt("monitorName", Arity::One)];
    let ctx = context("bind gslb service", tokens);
    let args = r.args(line, &ctx, tokens, OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["SERVICE"]) else {
        return;
    };
    let Some(mon) = args.get("monitorName") else {
        if args.lacks("monitorName") {
            r.error(line, &ctx, "-monitorName is required (the monitor to bind)");
        }
        return;
    };
    r.draft.monitor_bindings.push(MonitorBinding {
        service: Ref {
            name: pos[0].to_string(),
            line,
            context: ctx.clone(),
        },
        monitor: Ref {
            name: mon.value().to_string(),
            line,
            context: ctx.clone(),
        },
    });
}

/// `bind lb monitor MON SVC`: the same binding, written monitor first.
pub(super) fn bind_lb_monitor(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = context("bind lb monitor", tokens);
    let args = r.args(line, &ctx, tokens, &[]);
    let Some(pos) = r.positional(line, &ctx, &args, &["MONITOR", "SERVICE"]) else {
        return;
    };
    r.draft.monitor_bindings.push(MonitorBinding {
        service: Ref {
            name: pos[1].to_string(),
            line,
            context: ctx.clone(),
        },
        monitor: Ref {
            name: pos[0].to_string(),
            line,
            context: ctx.clone(),
        },
    });
}
