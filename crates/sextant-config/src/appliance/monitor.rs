//! `add/set lb monitor`, `bind gslb service -monitorName` and
//! `bind lb monitor`.

use sextant_core::{DnsCheck, DnsQueryType, LdnsProbe, Monitor, MonitorKind, UdpCheck};

use super::args::Args;
use super::{Arity, OptSpec, Reader, context, opt};
use crate::builtin_monitors;
use crate::draft::{DraftMonitor, MAX_MONITOR_TIME, MonitorBinding, Ref, UnprobedMonitor};
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
    /// Types a saved configuration has (its built-in monitors use them)
    /// that Sextant accepts but cannot probe: binding one is an error.
    TcpEcv,
    DnsTcp,
    Arp,
    Nd6,
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
    ("TCP-ECV", MonType::TcpEcv),
    ("DNS-TCP", MonType::DnsTcp),
    ("ARP", MonType::Arp),
    ("ND6", MonType::Nd6),
];

/// Why Sextant cannot probe a monitor of type `type_word` as an `add lb
/// monitor` line gives it (`secure`: its `-secure YES`), or `None` when it
/// can. Types it does not know at all (LDAP, RADIUS, MYSQL, USER, ...) are
/// the appliance's own probes, which Sextant does not have.
pub(crate) fn why_unprobed(type_word: &str, secure: bool) -> Option<String> {
    match MonType::parse(type_word) {
        Err(_) => Some(format!(
            "Sextant has no {} probe",
            type_word.to_ascii_uppercase()
        )),
        Ok(ty) => ty
            .unprobed()
            .or((ty == MonType::Tcp && secure).then_some(builtin_monitors::NO_TCPS))
            .map(str::to_string),
    }
}

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

    /// Whether `set lb monitor NAME TYPE` may name this monitor's type as
    /// `given`: its own, or HTTP for HTTPS (the appliance has no HTTPS
    /// type, it writes HTTP with `-secure YES`).
    fn accepts(self, given: MonType) -> bool {
        self == given || (self, given) == (MonType::Https, MonType::Http)
    }

    /// The options a monitor of this type accepts: the common ones and its
    /// own. A type Sextant cannot probe accepts them all (they are read
    /// and dropped).
    fn options(self) -> Vec<OptSpec> {
        let own: &[OptSpec] = match self {
            MonType::Ping => &[],
            MonType::Tcp => &[opt("secure", Arity::One)],
            MonType::Http | MonType::Https => HTTP,
            MonType::HttpEcv => HTTP_ECV,
            MonType::Dns => DNS,
            MonType::Udp | MonType::UdpEcv => ECV,
            MonType::TcpEcv | MonType::DnsTcp | MonType::Arp | MonType::Nd6 => UNPROBED,
        };
        COMMON.iter().chain(own).copied().collect()
    }

    /// Why Sextant cannot probe this type, for the ones it cannot.
    fn unprobed(self) -> Option<&'static str> {
        builtin_monitors::unprobed_type(self.word())
    }

    /// A monitor of this type with the appliance's defaults.
    fn new_monitor(self, name: &str) -> Monitor {
        let kind = match self {
            MonType::Ping => MonitorKind::Ping,
            MonType::Http => MonitorKind::Http(builtin_monitors::http_check()),
            MonType::Https => MonitorKind::Https(builtin_monitors::http_check()),
            MonType::HttpEcv => MonitorKind::Http(builtin_monitors::http_ecv_check()),
            MonType::Dns => MonitorKind::Dns(DnsCheck {
                query: String::new(),
                query_type: DnsQueryType::A,
                expect_addresses: Vec::new(),
                expect_rcodes: Vec::new(),
            }),
            MonType::Udp | MonType::UdpEcv => MonitorKind::Udp(UdpCheck::default()),
            // Never probed (see `unprobed`); TCP is a placeholder.
            MonType::Tcp | MonType::TcpEcv | MonType::DnsTcp | MonType::Arp | MonType::Nd6 => {
                MonitorKind::Tcp
            }
        };
        Monitor::new(name, kind)
    }

    /// The type of a built-in monitor, from the type word it shows.
    fn of_builtin(b: &builtin_monitors::Builtin) -> MonType {
        MonType::parse(b.type_word).unwrap_or(MonType::Tcp)
    }
}

/// The options of every probed type.
const COMMON: &[OptSpec] = &[
    opt("interval", Arity::Duration),
    opt("resptimeout", Arity::Duration),
    opt("retries", Arity::One),
    opt("successRetries", Arity::One),
    opt("downTime", Arity::Duration),
    opt("destIP", Arity::One),
    opt("destPort", Arity::One),
    opt("reverse", Arity::One),
    opt("LRTM", Arity::One),
    opt("deviation", Arity::Duration),
    opt("transparent", Arity::One),
];
const HTTP: &[OptSpec] = &[
    opt("httpRequest", Arity::One),
    opt("respCode", Arity::Many),
    opt("customHeaders", Arity::One),
    opt("secure", Arity::One),
];
const HTTP_ECV: &[OptSpec] = &[
    opt("send", Arity::One),
    opt("recv", Arity::One),
    opt("secure", Arity::One),
];
const DNS: &[OptSpec] = &[
    opt("query", Arity::One),
    opt("queryType", Arity::One),
    opt("IPAddress", Arity::Many),
    opt("rcode", Arity::Many),
];
const ECV: &[OptSpec] = &[opt("send", Arity::One), opt("recv", Arity::One)];
/// What a monitor Sextant cannot probe may carry besides [`COMMON`].
const UNPROBED: &[OptSpec] = &[
    opt("send", Arity::One),
    opt("recv", Arity::One),
    opt("secure", Arity::One),
    opt("query", Arity::One),
    opt("queryType", Arity::One),
    opt("IPAddress", Arity::Many),
    opt("customHeaders", Arity::One),
];
/// The built-in LDNS probe monitors take their timing and, for the DNS
/// probes, the port.
const LDNS: &[OptSpec] = &[
    opt("interval", Arity::Duration),
    opt("resptimeout", Arity::Duration),
    opt("destPort", Arity::One),
    opt("retries", Arity::One),
    // What a saved configuration writes for them besides; see
    // `set_ldns_monitor`.
    opt("LRTM", Arity::One),
    opt("deviation", Arity::Duration),
    opt("downTime", Arity::Duration),
    opt("query", Arity::One),
    opt("queryType", Arity::One),
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
    // A saved configuration lists the built-in LDNS monitors with `add`.
    if let Some((_, ldns_type, kind)) = tokens.first().and_then(|t| {
        LDNS_MONITORS
            .iter()
            .find(|(n, _, _)| n.eq_ignore_ascii_case(&t.text))
    }) {
        set_ldns_monitor(r, line, &base, (ldns_type, *kind), tokens, true);
        return;
    }
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
    let args = r.args(line, &ctx, tokens, &ty.options());
    let Some(pos) = r.positional(line, &base, &args, &["NAME", "TYPE"]) else {
        return;
    };
    let name = pos[0];
    if let Some(b) = builtin_monitors::find(name)
        && !MonType::of_builtin(b).accepts(ty)
    {
        r.error(
            line,
            &ctx,
            format!(
                "\"{}\" is the name of a built-in monitor of type {}; change it with \"set lb monitor {} {} ...\" or give this monitor another name",
                b.name, b.type_word, b.name, b.type_word
            ),
        );
        return;
    }
    let secure_tcp = ty == MonType::Tcp
        && args
            .get("secure")
            .and_then(|o| r.value(line, &ctx, o, scalar::yes_no))
            == Some(true);
    if let Some(why) = ty
        .unprobed()
        .or(secure_tcp.then_some(builtin_monitors::NO_TCPS))
    {
        note_unprobed(r, line, name, ty.word(), why);
        return;
    }
    let mut monitor = ty.new_monitor(name);
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

/// Accepts a monitor Sextant cannot probe, with a warning; binding it is an
/// error (see [`builtin_monitors::unprobed`]).
fn note_unprobed(r: &mut Reader<'_>, line: usize, name: &str, type_word: &str, why: &'static str) {
    r.diag.warn(
        line,
        format!(
            "monitor \"{name}\" (type {type_word}) is accepted but has no effect: {why}; binding it to a service is an error"
        ),
    );
    if !r
        .draft
        .unprobed_monitors
        .iter()
        .any(|u| u.name.eq_ignore_ascii_case(name))
    {
        r.draft.unprobed_monitors.push(UnprobedMonitor {
            name: name.to_string(),
            line,
            type_word: type_word.to_string(),
            why,
        });
    }
}

/// `set lb monitor NAME [TYPE] [options]`: changes a monitor defined on an
/// earlier line or a built-in one (the first `set` of a built-in monitor
/// adds it with the appliance's defaults), or the timing of the built-in
/// LDNS probe monitors.
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
        set_ldns_monitor(r, line, &ctx, (ldns_type, *kind), tokens, false);
        return;
    }
    let defined = r
        .draft
        .monitors
        .iter()
        .position(|m| m.monitor.name.eq_ignore_ascii_case(&name));
    let idx = match (defined, builtin_monitors::find(&name)) {
        (Some(idx), _) => idx,
        (None, _)
            if let Some(u) = r
                .draft
                .unprobed_monitors
                .iter()
                .find(|u| u.name.eq_ignore_ascii_case(&name)) =>
        {
            let (type_word, why) = (u.type_word.clone(), u.why);
            set_unprobed(r, line, &ctx, tokens, &name, &type_word, why);
            return;
        }
        (None, Some(b)) => match (b.monitor(), b.check) {
            (Some(monitor), _) => {
                r.draft.monitors.push(DraftMonitor {
                    line,
                    timing_line: line,
                    monitor,
                });
                r.monitor_types.push(MonType::of_builtin(b));
                r.draft.monitors.len() - 1
            }
            (None, check) => {
                let why = check.err().unwrap_or_default();
                set_unprobed(r, line, &ctx, tokens, b.name, b.type_word, why);
                return;
            }
        },
        (None, None) => {
            let builtins: Vec<&str> = builtin_monitors::BUILTINS.iter().map(|b| b.name).collect();
            r.error(
                line,
                &ctx,
                format!(
                    "monitor \"{name}\" is not defined on an earlier line (add it with \"add lb monitor\" first; the built-in monitors are {}, ldns-ping, ldns-dns, ldns-tcp)",
                    builtins.join(", ")
                ),
            );
            return;
        }
    };
    let ty = r.monitor_types[idx];
    let args = r.args(line, &ctx, tokens, &ty.options());
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
        && !MonType::parse(&t.text).is_ok_and(|given| ty.accepts(given))
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

/// `set lb monitor` of a monitor Sextant cannot probe: the options are
/// read (so a mistyped one is still reported) and dropped.
fn set_unprobed(
    r: &mut Reader<'_>,
    line: usize,
    ctx: &str,
    tokens: &[Token],
    name: &str,
    type_word: &str,
    why: &'static str,
) {
    let specs: Vec<OptSpec> = COMMON.iter().chain(UNPROBED).copied().collect();
    r.args(line, ctx, tokens, &specs);
    note_unprobed(r, line, name, type_word, why);
}

fn set_ldns_monitor(
    r: &mut Reader<'_>,
    line: usize,
    ctx: &str,
    (ty, kind): (&str, LdnsProbe),
    tokens: &[Token],
    adding: bool,
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
    if let Some(o) = args.get("retries")
        && let Some(n) = r.value(line, ctx, o, |v| scalar::int_in(v, 1, 127))
    {
        // 1..=127 fits: the appliance's range for -retries.
        r.draft.params.ldns_monitor_mut(kind).retries = n as u8;
        r.draft.params_line = line;
    }
    if let Some(o) = args.get("destPort") {
        if kind == LdnsProbe::Ping {
            r.error(line, ctx, "-destPort: a PING probe has no port");
        } else if let Some(p) = r.value(line, ctx, o, scalar::port) {
            r.draft.params.ldns_monitor_mut(kind).dest_port = Some(p);
        }
    }
    if let Some(o) = args.get("LRTM")
        && r.value(line, ctx, o, scalar::enabled).is_some()
        && !crate::no_effect::is_inert(Scope::Monitor, "LRTM", o.value())
    {
        r.no_effect(line, Scope::Monitor, "LRTM");
    }
    if let Some(o) = args.get("deviation")
        && r.duration(line, ctx, o, Unit::Seconds)
            .is_some_and(|d| !d.is_zero())
    {
        r.no_effect(line, Scope::Monitor, "deviation");
    }
    if let Some(o) = args.get("downTime")
        && r.duration(line, ctx, o, Unit::Seconds).is_some()
    {
        r.diag.warn(
            line,
            "-downTime on a built-in LDNS monitor is accepted but has no effect in Sextant (an LDNS is never DOWN: its probes repeat every -interval)",
        );
    }
    for name in ["query", "queryType"] {
        if args.has(name) && kind == LdnsProbe::Ping {
            r.error(line, ctx, format!("-{name}: a PING probe sends no query"));
        }
    }
    if let Some(o) = args.get("query")
        && o.value() != "."
    {
        r.diag.warn(
            line,
            format!(
                "-query {} on a built-in LDNS monitor is accepted but has no effect in Sextant (its DNS probes ask for the root, `. NS`: any answer times the round trip)",
                o.value()
            ),
        );
    }
    if !args.any && !adding {
        r.error(
            line,
            ctx,
            "nothing to set; give -interval, -resptimeout, -retries and/or -destPort",
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
        // These two have no effect only when they ask for something.
        if !matches!(o.name, "deviation" | "transparent")
            && !crate::no_effect::is_inert(Scope::Monitor, o.name, o.value())
        {
            r.no_effect(line, Scope::Monitor, o.name);
        }
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
            "downTime" => match r.duration(line, ctx, o, Unit::Seconds) {
                Some(d) if d.is_zero() => r.error(line, ctx, "-downTime must be greater than zero"),
                Some(d) if d > MAX_MONITOR_TIME => r.error(
                    line,
                    ctx,
                    "-downTime is longer than the appliance's limit of 20939000 seconds",
                ),
                Some(d) => m.down_time = Some(d),
                None => {}
            },
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
            // 0 means the bound service's, as on the appliance.
            "destPort" if o.value() == "0" => m.dest_port = None,
            "destPort" => {
                if let Some(p) = r.value(line, ctx, o, scalar::port) {
                    m.dest_port = Some(p);
                }
            }
            "destIP" if o.value() == "0" => m.dest_ip = None,
            "destIP" => {
                if let Some(ip) = r.value(line, ctx, o, scalar::ip) {
                    m.dest_ip = Some(ip);
                }
            }
            "reverse" => {
                if let Some(reverse) = r.value(line, ctx, o, scalar::yes_no) {
                    m.reverse = reverse;
                }
            }
            "LRTM" => {
                // Least-response-time measurement of the appliance's LB: no
                // effect here (warned about); accepted so appliance exports
                // load.
                r.value(line, ctx, o, scalar::enabled);
            }
            "deviation" => {
                let d = r.duration(line, ctx, o, Unit::Seconds);
                if d.is_some_and(|d| !d.is_zero()) {
                    r.no_effect(line, Scope::Monitor, o.name);
                }
            }
            "transparent" => {
                let transparent = r.value(line, ctx, o, scalar::yes_no);
                if transparent == Some(true) {
                    r.no_effect(line, Scope::Monitor, o.name);
                }
            }
            "secure" if ty == MonType::Tcp => {
                let secure = r.value(line, ctx, o, scalar::yes_no);
                if secure == Some(true) {
                    r.error(
                        line,
                        ctx,
                        format!("-secure YES: {}", builtin_monitors::NO_TCPS),
                    );
                }
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
            "httpRequest" | "send" | "recv" | "respCode" | "customHeaders" => {
                http_or_udp_opt(r, line, ctx, m, o)
            }
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
        (MonitorKind::Http(c) | MonitorKind::Https(c), "customHeaders") => {
            if let Some(h) = r.value(line, ctx, o, scalar::header_lines) {
                c.custom_headers = h;
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
            let is = |w: &[&str]| w.iter().any(|w| w.eq_ignore_ascii_case(v));
            if is(&["Address", "A"]) {
                c.query_type = DnsQueryType::A;
            } else if is(&["IPv6", "AAAA"]) {
                c.query_type = DnsQueryType::Aaaa;
            } else if is(&["Zone", "SOA"]) {
                c.query_type = DnsQueryType::Soa;
            } else {
                r.error(
                    line,
                    ctx,
                    format!(
                        "-queryType: expected Address (A), IPv6 (AAAA) or Zone (SOA), found \"{v}\""
                    ),
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

/// `bind gslb service SVC -monitorName MON [-weight W]`.
pub(super) fn bind_gslb_service(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    const OPTS: &[OptSpec] = &[opt("monitorName", Arity::One), opt("weight", Arity::One)];
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
    // The appliance's range for a binding's weight: 1 to 100, default 1.
    let weight = match args.get("weight") {
        Some(o) => match r.value(line, &ctx, o, |v| scalar::int_in(v, 1, 100)) {
            Some(w) => u32::try_from(w).unwrap_or(1),
            None => return,
        },
        None => 1,
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
        weight,
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
        weight: 1,
    });
}
