//! Static records of the zones Sextant serves, in the appliance's grammar:
//! `add dns addRec`, `aaaaRec`, `cnameRec`, `mxRec`, `txtRec`, `srvRec`,
//! `dsRec` (Sextant's: the appliance has no DS record command),
//! and `add dns zone` (which makes a name one of our zones). `add dns
//! nsRec` is read by `dns::add_ns`: below one of our zones it is a
//! delegation, which `validate` works out once every zone is known.
//!
//! Each reader only checks what the line itself says (addresses, numbers,
//! option values); which zone a record belongs to and how it fits with the
//! other names is checked by `crate::static_records`, for both syntaxes.

use std::net::IpAddr;
use std::sync::Arc;

use sextant_core::RecordData;

use super::{Arity, OptSpec, Reader, context, opt};
use crate::draft::{DEFAULT_RECORD_TTL, DraftRecord, MAX_TTL};
use crate::lexer::Token;
use crate::scalar;

/// Why root hints are refused (`add dns nsRec . a.root-servers.net`).
pub(super) const ROOT_HINTS: &str = "the root name \".\" is not a zone Sextant serves: NS records at the root are root hints, the data of a resolver, not of an authoritative server; remove this line (`sextant import` leaves root hints out)";

const TTL_ONLY: &[OptSpec] = &[opt("TTL", Arity::One), opt("ecssubnet", Arity::One)];

/// The record's TTL (`-TTL`, default 3600 as on the appliance). An
/// ECS-specific record (`-ecssubnet`) is refused: Sextant answers one set of
/// records per name, whatever the client subnet.
fn ttl(r: &mut Reader<'_>, line: usize, ctx: &str, args: &super::args::Args<'_>) -> u32 {
    if args.has("ecssubnet") {
        r.error(
            line,
            ctx,
            "-ecssubnet: records specific to a client subnet are not supported (Sextant answers the same static records to every client); remove the option to answer this record to all clients",
        );
    }
    args.get("TTL")
        .and_then(|o| r.value(line, ctx, o, |v| scalar::int_in(v, 0, MAX_TTL)))
        .map_or(DEFAULT_RECORD_TTL, |v| v as u32)
}

fn push(r: &mut Reader<'_>, line: usize, ctx: &Arc<str>, name: &str, ttl: u32, data: RecordData) {
    r.draft.records.push(DraftRecord {
        name: scalar::normalize_name(name),
        line,
        ttl,
        data,
        context: ctx.clone(),
    });
}

/// `add dns addRec NAME IP [IP...] [-TTL N]`.
pub(super) fn add_a(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    addresses(r, line, tokens, "add dns addRec", false);
}

/// `add dns aaaaRec NAME IPV6 [IPV6...] [-TTL N]`.
pub(super) fn add_aaaa(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    addresses(r, line, tokens, "add dns aaaaRec", true);
}

fn addresses(r: &mut Reader<'_>, line: usize, tokens: &[Token], command: &str, v6: bool) {
    let ctx = context(command, tokens);
    let args = r.args(line, &ctx, tokens, TTL_ONLY);
    let family = if v6 { "IPV6" } else { "IP" };
    let Some((name, ips)) = args.positional.split_first() else {
        r.error(
            line,
            &ctx,
            format!("missing NAME {family}; expected NAME {family} [{family}...] and then options"),
        );
        return;
    };
    if ips.is_empty() {
        r.error(
            line,
            &ctx,
            format!("missing {family}; expected NAME {family} [{family}...] and then options"),
        );
        return;
    }
    let ttl = ttl(r, line, &ctx, &args);
    for ip in ips {
        match (scalar::ip(&ip.text), v6) {
            (Ok(IpAddr::V4(a)), false) => push(r, line, &ctx, &name.text, ttl, RecordData::A(a)),
            (Ok(IpAddr::V6(a)), true) => push(r, line, &ctx, &name.text, ttl, RecordData::Aaaa(a)),
            (Ok(IpAddr::V6(_)), false) => r.error(
                line,
                &ctx,
                format!(
                    "{} is an IPv6 address; give it with \"add dns aaaaRec\"",
                    ip.text
                ),
            ),
            (Ok(IpAddr::V4(_)), true) => r.error(
                line,
                &ctx,
                format!(
                    "{} is an IPv4 address; give it with \"add dns addRec\"",
                    ip.text
                ),
            ),
            (Err(e), _) => r.error(line, &ctx, format!("{family}: {e}")),
        }
    }
}

/// `add dns cnameRec ALIAS CANONICAL [-TTL N]`.
pub(super) fn add_cname(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = context("add dns cnameRec", tokens);
    let args = r.args(line, &ctx, tokens, TTL_ONLY);
    let Some(pos) = r.positional(line, &ctx, &args, &["ALIAS", "CANONICAL"]) else {
        return;
    };
    let ttl = ttl(r, line, &ctx, &args);
    let target = scalar::normalize_name(pos[1]);
    push(r, line, &ctx, pos[0], ttl, RecordData::Cname(target));
}

/// `add dns mxRec DOMAIN -mx EXCHANGE -pref N [-TTL N]`.
pub(super) fn add_mx(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    const OPTS: &[OptSpec] = &[
        opt("mx", Arity::One),
        opt("pref", Arity::One),
        opt("TTL", Arity::One),
        opt("ecssubnet", Arity::One),
    ];
    let ctx = context("add dns mxRec", tokens);
    let args = r.args(line, &ctx, tokens, OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["DOMAIN"]) else {
        return;
    };
    let ttl = ttl(r, line, &ctx, &args);
    let exchange = required(
        r,
        line,
        &ctx,
        &args,
        "mx",
        "the mail exchanger's name, e.g. -mx mail.example.com",
    );
    let pref = required(
        r,
        line,
        &ctx,
        &args,
        "pref",
        "the preference, e.g. -pref 10",
    );
    let preference = pref.and_then(|o| r.value(line, &ctx, &o, |v| scalar::int_in(v, 0, 65535)));
    if let (Some(exchange), Some(preference)) = (exchange, preference) {
        let data = RecordData::Mx {
            preference: preference as u16,
            exchange: scalar::normalize_name(exchange.value()),
        };
        push(r, line, &ctx, pos[0], ttl, data);
    }
}

/// `add dns txtRec DOMAIN "string" ["string"...] [-TTL N]`.
pub(super) fn add_txt(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = context("add dns txtRec", tokens);
    let args = r.args(line, &ctx, tokens, TTL_ONLY);
    let Some((name, strings)) = args.positional.split_first() else {
        r.error(
            line,
            &ctx,
            "missing DOMAIN STRING; expected DOMAIN \"STRING\" [\"STRING\"...] and then options",
        );
        return;
    };
    if strings.is_empty() {
        r.error(
            line,
            &ctx,
            "missing STRING; expected DOMAIN \"STRING\" [\"STRING\"...] and then options",
        );
        return;
    }
    let ttl = ttl(r, line, &ctx, &args);
    let strings = strings.iter().map(|t| t.text.to_string()).collect();
    push(r, line, &ctx, &name.text, ttl, RecordData::Txt(strings));
}

/// `add dns srvRec DOMAIN TARGET -priority N -weight N -port N [-TTL N]`.
pub(super) fn add_srv(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    const OPTS: &[OptSpec] = &[
        opt("priority", Arity::One),
        opt("weight", Arity::One),
        opt("port", Arity::One),
        opt("TTL", Arity::One),
        opt("ecssubnet", Arity::One),
    ];
    let ctx = context("add dns srvRec", tokens);
    let args = r.args(line, &ctx, tokens, OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["DOMAIN", "TARGET"]) else {
        return;
    };
    let ttl = ttl(r, line, &ctx, &args);
    let mut numbers = [0u16; 3];
    let mut complete = true;
    for (i, (name, hint)) in [
        ("priority", "e.g. -priority 10"),
        ("weight", "e.g. -weight 5"),
        ("port", "e.g. -port 5060"),
    ]
    .into_iter()
    .enumerate()
    {
        let value = required(r, line, &ctx, &args, name, hint)
            .and_then(|o| r.value(line, &ctx, &o, |v| scalar::int_in(v, 0, 65535)));
        match value {
            Some(v) => numbers[i] = v as u16,
            None => complete = false,
        }
    }
    if complete {
        let data = RecordData::Srv {
            priority: numbers[0],
            weight: numbers[1],
            port: numbers[2],
            target: scalar::normalize_name(pos[1]),
        };
        push(r, line, &ctx, pos[0], ttl, data);
    }
}

/// `add dns dsRec CHILD -keyTag N -algorithm N -digestType N -digest HEX
/// [-TTL N]`: a DS record of a child zone, served by its parent here (the
/// appliance has no such command; `sextant dnssec ds --format appliance`
/// prints these lines).
pub(super) fn add_ds(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    const OPTS: &[OptSpec] = &[
        opt("keyTag", Arity::One),
        opt("algorithm", Arity::One),
        opt("digestType", Arity::One),
        opt("digest", Arity::One),
        opt("TTL", Arity::One),
        opt("ecssubnet", Arity::One),
    ];
    let ctx = context("add dns dsRec", tokens);
    let args = r.args(line, &ctx, tokens, OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["CHILD"]) else {
        return;
    };
    let ttl = ttl(r, line, &ctx, &args);
    let mut numbers = [0u16; 3];
    let mut complete = true;
    for (i, (name, hint, hi)) in [
        ("keyTag", "the key tag, e.g. -keyTag 20841", 65535),
        (
            "algorithm",
            "the key's algorithm number, e.g. -algorithm 13",
            255,
        ),
        (
            "digestType",
            "the digest type, e.g. -digestType 2 (SHA-256)",
            255,
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let value = required(r, line, &ctx, &args, name, hint)
            .and_then(|o| r.value(line, &ctx, &o, |v| scalar::int_in(v, 0, hi)));
        match value {
            Some(v) => numbers[i] = v as u16,
            None => complete = false,
        }
    }
    let digest = required(
        r,
        line,
        &ctx,
        &args,
        "digest",
        "the digest in hexadecimal, as `sextant dnssec ds` prints it",
    )
    .and_then(|o| {
        r.value(line, &ctx, &o, |v| {
            sextant_dnssec::ds::digest_from_hex(v).map_err(|e| e.to_string())
        })
    });
    if let (true, Some(digest)) = (complete, digest) {
        let data = RecordData::Ds {
            key_tag: numbers[0],
            algorithm: numbers[1] as u8,
            digest_type: numbers[2] as u8,
            digest,
        };
        push(r, line, &ctx, pos[0], ttl, data);
    }
}

/// A required option, reported when absent.
fn required<'t>(
    r: &mut Reader<'_>,
    line: usize,
    ctx: &str,
    args: &super::args::Args<'t>,
    name: &str,
    hint: &str,
) -> Option<super::args::Opt<'t>> {
    let o = args.get(name).cloned();
    if o.is_none() && args.lacks(name) {
        r.error(line, ctx, format!("-{name} is required ({hint})"));
    }
    o
}

/// `add dns zone ZONE -proxyMode NO [-dnssecOffload ENABLED|DISABLED] [-nsec ENABLED|DISABLED] [-keyName KEY...] [-type ...]`.
pub(super) fn add_zone(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    const OPTS: &[OptSpec] = &[
        opt("proxyMode", Arity::One),
        opt("dnssecOffload", Arity::One),
        opt("nsec", Arity::One),
        opt("keyName", Arity::Many),
        opt("type", Arity::One),
    ];
    let ctx = context("add dns zone", tokens);
    let args = r.args(line, &ctx, tokens, OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["ZONE"]) else {
        return;
    };
    if scalar::normalize_name(pos[0]).is_empty() {
        r.error(
            line,
            &ctx,
            "the root name \".\" cannot be a zone Sextant serves; give the apex of your GSLB zone",
        );
        return;
    }
    match args.get("proxyMode").map(|o| o.value()) {
        Some(v) if v.eq_ignore_ascii_case("NO") => {}
        Some(v) if v.eq_ignore_ascii_case("YES") => r.error(
            line,
            &ctx,
            "-proxyMode YES (the appliance proxies the zone's queries to back-end servers) is not supported: Sextant is only an authoritative server; write -proxyMode NO and give the zone's records with add dns soaRec, nsRec, addRec...",
        ),
        Some(v) => r.error(line, &ctx, format!("-proxyMode: expected YES or NO, found \"{v}\"")),
        None if args.lacks("proxyMode") => r.error(
            line,
            &ctx,
            "-proxyMode is required (write -proxyMode NO: Sextant is authoritative for the zone)",
        ),
        None => {}
    }
    // DNSSEC: -dnssecOffload and -nsec say the appliance signs answers;
    // Sextant signs a zone that has keys (-keyName, or sign dns zone), with
    // compact denial for negative answers, whatever these two say.
    for name in ["dnssecOffload", "nsec"] {
        if let Some(o) = args.get(name) {
            let v = o.value();
            if !v.eq_ignore_ascii_case("ENABLED") && !v.eq_ignore_ascii_case("DISABLED") {
                r.error(
                    line,
                    &ctx,
                    format!("-{name}: expected ENABLED or DISABLED, found \"{v}\""),
                );
            }
        }
    }
    if let Some(o) = args.get("keyName") {
        super::dnssec::sign_zone(r, line, &ctx, pos[0], o.texts());
    }
    if let Some(o) = args.get("type") {
        let v = o.value();
        if !["ADNS", "ALL"].iter().any(|t| v.eq_ignore_ascii_case(t)) {
            r.error(
                line,
                &ctx,
                format!("-type: expected ADNS or ALL (Sextant answers as an authoritative server), found \"{v}\""),
            );
        }
    }
    let z = super::dns::zone(r, pos[0], line);
    match r.draft.zones[z].declared {
        Some(first) => {
            r.error(
                line,
                &ctx,
                format!("the zone is already added on line {first}"),
            );
        }
        None => r.draft.zones[z].declared = Some(line),
    }
}
