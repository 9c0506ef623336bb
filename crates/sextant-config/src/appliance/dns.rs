//! `add service NAME IP ADNS PORT` (the DNS listener), `add dns soaRec` and
//! `add dns nsRec`.

use std::net::SocketAddr;

use super::{Arity, OptSpec, Reader, context, opt};
use crate::draft::{DEFAULT_NS_TTL, DraftZone, MAX_TTL, default_soa};
use crate::lexer::Token;
use crate::scalar;

/// Options the appliance saves on every `add service` line. On an ADNS
/// service they configure the appliance's connection handling, which a DNS
/// listener does not have; they are checked for form and otherwise have no
/// effect (docs/config.md, "DNS listeners").
const SERVICE_OPTS: &[OptSpec] = &[
    opt("gslb", Arity::One),
    opt("maxClient", Arity::One),
    opt("maxReq", Arity::One),
    opt("cip", Arity::Many),
    opt("usip", Arity::One),
    opt("useproxyport", Arity::One),
    opt("sp", Arity::One),
    opt("rtspSessionidRemap", Arity::One),
    opt("cltTimeout", Arity::One),
    opt("svrTimeout", Arity::One),
    opt("CKA", Arity::One),
    opt("TCPB", Arity::One),
    opt("CMP", Arity::One),
    opt("maxBandwidth", Arity::One),
    opt("accessDown", Arity::One),
    opt("monThreshold", Arity::One),
    opt("state", Arity::One),
    opt("downStateFlush", Arity::One),
    opt("td", Arity::One),
    opt("appflowLog", Arity::One),
    opt("healthMonitor", Arity::One),
    opt("cacheable", Arity::One),
    opt("pathMonitor", Arity::One),
    opt("pathMonitorIndv", Arity::One),
    opt("serverID", Arity::One),
    opt("hashId", Arity::One),
    opt("netProfile", Arity::One),
    opt("tcpProfileName", Arity::One),
    opt("httpProfileName", Arity::One),
    opt("dnsProfileName", Arity::One),
    opt("processLocal", Arity::One),
    opt("monConnectionClose", Arity::One),
];

/// `add service NAME IP|SERVER ADNS|ADNS_TCP PORT [options]`: Sextant
/// listens on IP:PORT for DNS over both UDP and TCP, whichever of the two
/// types is given.
pub(super) fn add_service(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = context("add service", tokens);
    // Load-balancing services are judged by their type before their
    // options, which only the appliance's load balancer knows.
    let ty = tokens
        .iter()
        .take_while(|t| !t.is_option())
        .nth(2)
        .map(|t| &*t.text);
    if let Some(ty) = ty
        && !(ty.eq_ignore_ascii_case("ADNS") || ty.eq_ignore_ascii_case("ADNS_TCP"))
    {
        r.error(
            line,
            &ctx,
            format!(
                "only ADNS and ADNS_TCP services are read (they set the address Sextant's DNS server listens on), found {ty}: a load-balancing service belongs to the load balancer behind Sextant; if this file was saved by an appliance, `sextant import` leaves such services out"
            ),
        );
        return;
    }
    let args = r.args(line, &ctx, tokens, SERVICE_OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["NAME", "IP", "TYPE", "PORT"]) else {
        return;
    };
    let name = pos[0].to_ascii_lowercase();
    if let Some(first) = r.adns.get(&name) {
        r.error(
            line,
            &ctx,
            format!("service \"{}\" is already defined on line {first}", pos[0]),
        );
    } else {
        r.adns.insert(name, line);
    }
    if let Some(o) = args.get("cip") {
        check_cip(r, line, &ctx, o);
    }
    let disabled = args
        .get("state")
        .and_then(|o| r.value(line, &ctx, o, scalar::enabled))
        .is_some_and(|enabled| !enabled);
    let ip = r.address_or_server(line, &ctx, "IP", pos[1]);
    let port = scalar::port(pos[3]).map_err(|e| r.error(line, &ctx, format!("PORT: {e}")));
    if disabled {
        r.diag.warn(
            line,
            format!("{ctx}: -state DISABLED: Sextant does not listen on this address, as the appliance does not answer on a disabled ADNS service"),
        );
        return;
    }
    if let (Ok(ip), Ok(port)) = (ip, port) {
        let addr = SocketAddr::new(ip, port);
        if !r.draft.dns_listen.contains(&addr) {
            r.draft.dns_listen.push(addr);
        }
    }
}

/// `-cip ENABLED|DISABLED [HEADER]`, the appliance's client-IP insertion
/// with its optional header name.
pub(super) fn check_cip(r: &mut Reader<'_>, line: usize, ctx: &str, o: &super::args::Opt<'_>) {
    let mut values = o.texts();
    if let Some(first) = values.next() {
        r.value(line, ctx, o, |_| scalar::enabled(first));
    }
    if values.nth(1).is_some() {
        r.error(
            line,
            ctx,
            "-cip takes ENABLED or DISABLED and, optionally, a header name",
        );
    }
}

/// The zone for `apex` (normalized), created on first mention.
pub(super) fn zone(r: &mut Reader<'_>, apex: &str, line: usize) -> usize {
    let apex = scalar::normalize_name(apex);
    match r.draft.zones.iter().position(|z| z.apex == apex) {
        Some(i) => i,
        None => {
            r.draft.zones.push(DraftZone {
                apex,
                line,
                soa: None,
                ns: Vec::new(),
                ns_ttl: DEFAULT_NS_TTL,
                declared: None,
            });
            r.draft.zones.len() - 1
        }
    }
}

const SOA_OPTS: &[OptSpec] = &[
    opt("originServer", Arity::One),
    opt("contact", Arity::One),
    opt("serial", Arity::One),
    opt("refresh", Arity::One),
    opt("retry", Arity::One),
    opt("expire", Arity::One),
    opt("minimum", Arity::One),
    opt("TTL", Arity::One),
];

/// `add dns soaRec APEX -originServer NAME -contact NAME [-serial N] ...`.
pub(super) fn add_soa(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = context("add dns soaRec", tokens);
    let args = r.args(line, &ctx, tokens, SOA_OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["DOMAIN"]) else {
        return;
    };
    let mut missing = Vec::new();
    let mut text = |name: &str| match args.get(name) {
        Some(o) => o.value().to_string(),
        None => {
            if args.lacks(name) {
                missing.push(format!("-{name}"));
            }
            // A valid stand-in, so the missing value is reported only once.
            "missing.invalid".to_string()
        }
    };
    let origin = text("originServer");
    let contact = text("contact");
    if !missing.is_empty() {
        r.error(
            line,
            &ctx,
            format!(
                "{} required (the primary name server and the contact mailbox, e.g. -originServer ns1.example.com -contact hostmaster.example.com)",
                if missing.len() == 1 {
                    format!("{} is", missing[0])
                } else {
                    format!("{} are", missing.join(" and "))
                }
            ),
        );
    }
    let mut soa = default_soa(origin, contact);
    for (name, field) in [
        ("serial", &mut soa.serial),
        ("refresh", &mut soa.refresh),
        ("retry", &mut soa.retry),
        ("expire", &mut soa.expire),
        ("minimum", &mut soa.minimum),
    ] {
        if let Some(o) = args.get(name)
            && let Some(v) = r.value(line, &ctx, o, |v| scalar::int_in(v, 0, u64::from(u32::MAX)))
        {
            *field = v as u32;
        }
    }
    if let Some(o) = args.get("TTL")
        && let Some(v) = r.value(line, &ctx, o, |v| scalar::int_in(v, 0, MAX_TTL))
    {
        soa.ttl = v as u32;
    }
    let z = zone(r, pos[0], line);
    match &r.draft.zones[z].soa {
        Some((_, first)) => {
            let first = *first;
            r.error(
                line,
                &ctx,
                format!("the zone already has an SOA record (line {first}); give one per zone"),
            );
        }
        None => r.draft.zones[z].soa = Some((soa, line)),
    }
}

/// `add dns nsRec APEX NSNAME [-TTL N]`.
pub(super) fn add_ns(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    const OPTS: &[OptSpec] = &[opt("TTL", Arity::One)];
    let ctx = context("add dns nsRec", tokens);
    let args = r.args(line, &ctx, tokens, OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["DOMAIN", "NAMESERVER"]) else {
        return;
    };
    if scalar::normalize_name(pos[0]).is_empty() {
        r.error(line, &ctx, super::records::ROOT_HINTS);
        return;
    }
    let z = zone(r, pos[0], line);
    let ns = scalar::normalize_name(pos[1]);
    if let Some((_, first)) = r.draft.zones[z].ns.iter().find(|(n, _)| *n == ns) {
        let first = *first;
        r.error(
            line,
            &ctx,
            format!("name server \"{ns}\" is already listed for this zone (line {first})"),
        );
    } else {
        r.draft.zones[z].ns.push((ns, line));
    }
    // One TTL for all NS records of a zone (the model keeps one).
    if let Some(o) = args.get("TTL")
        && let Some(ttl) = r.value(line, &ctx, o, |v| scalar::int_in(v, 0, MAX_TTL))
    {
        let ttl = ttl as u32;
        let apex = r.draft.zones[z].apex.clone();
        match r.ns_ttl_lines.get(&apex) {
            Some((other, first)) if *other != ttl => {
                let (other, first) = (*other, *first);
                r.error(
                        line,
                        &ctx,
                        format!(
                            "-TTL {ttl} differs from the TTL {other} given on line {first}; all NS records of a zone share one TTL"
                        ),
                    );
            }
            Some(_) => {}
            None => {
                r.ns_ttl_lines.insert(apex, (ttl, line));
                r.draft.zones[z].ns_ttl = ttl;
            }
        }
    }
}
