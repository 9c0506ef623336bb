//! `set dns parameter` with Sextant's options: the DNS server's NSID, TCP
//! limits, response rate limiting and cookies.
//!
//! On the appliance the command sets its resolver and cache; those options
//! are accepted here with a warning that they have no effect. A line with
//! none of Sextant's options is the resolver's only and is left out by
//! `sextant import` (see `crate::scope`).

use super::{Arity, OptSpec, Reader, opt};
use crate::dns_settings as ds;
use crate::duration::Unit;
use crate::lexer::Token;
use crate::scalar;

/// Sextant's options of `set dns parameter`.
pub(crate) const SEXTANT_OPTS: &[OptSpec] = &[
    opt("nsid", Arity::One),
    opt("nsidHex", Arity::One),
    opt("tcpIdleTimeout", Arity::Duration),
    opt("maxTCPConnections", Arity::One),
    opt("rrlResponsesPerSecond", Arity::One),
    opt("rrlSlip", Arity::One),
    opt("rrlIPv4Prefix", Arity::One),
    opt("rrlIPv6Prefix", Arity::One),
    opt("rrlExempt", Arity::One),
    opt("rrlTableSize", Arity::One),
    opt("dnsCookie", Arity::One),
    opt("cookieSecretRotation", Arity::Duration),
];

/// The appliance's own options of the command (its resolver, cache and
/// packet handling): accepted, no effect here.
const APPLIANCE_OPTS: &[&str] = &[
    "retries",
    "minTTL",
    "maxTTL",
    "cacheRecords",
    "nameLookupPriority",
    "recursion",
    "resolutionOrder",
    "dnssec",
    "maxPipeline",
    "dnsRootReferral",
    "dns64Timeout",
    "ECSMaxSubnets",
    "maxnegcacheTTL",
    "cacheHitBypass",
    "maxCacheSize",
    "maxNegativeCacheSize",
    "cacheNoExpire",
    "splitPktQueryProcessing",
    "cacheECSZeroPrefix",
    "maxUDPPacketSize",
    "zoneTransfer",
    "resolverRlimit",
    "autoSaveKeyOps",
];

/// Whether a `set dns parameter` line gives one of Sextant's options.
pub(crate) fn has_sextant_option(tokens: &[Token]) -> bool {
    tokens.iter().any(|t| {
        t.is_option()
            && SEXTANT_OPTS
                .iter()
                .any(|s| t.text[1..].eq_ignore_ascii_case(s.name))
    })
}

fn all_opts() -> Vec<OptSpec> {
    let mut v = SEXTANT_OPTS.to_vec();
    v.extend(APPLIANCE_OPTS.iter().map(|n| opt(n, Arity::One)));
    v
}

/// `set dns parameter [-nsid TEXT] [-tcpIdleTimeout N [SEC]] ...`.
pub(super) fn set_parameter(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = "set dns parameter";
    if !has_sextant_option(tokens) {
        r.error(
            line,
            ctx,
            format!(
                "none of Sextant's options ({}); the others set the appliance's DNS resolver and cache, outside Sextant's scope; if this file was saved by an appliance, run `sextant import FILE -o OUT.conf`: it leaves such lines out and lists them",
                super::args::list(SEXTANT_OPTS)
            ),
        );
        return;
    }
    let specs = all_opts();
    let args = r.args(line, ctx, tokens, &specs);
    if let Some(extra) = args.positional.first() {
        r.error(
            line,
            ctx,
            format!(
                "unexpected argument \"{}\"; the command takes only options",
                extra.text
            ),
        );
        return;
    }
    let int = |t: &str| ds::int_text(t);
    for o in &args.opts {
        match o.name {
            "nsid" => {
                if let Some(v) = r.value(line, ctx, o, ds::nsid_text) {
                    r.draft.dns_server.nsid = Some(v);
                }
            }
            "nsidHex" => {
                if let Some(v) = r.value(line, ctx, o, ds::nsid_hex) {
                    r.draft.dns_server.nsid = Some(v);
                }
            }
            "tcpIdleTimeout" => {
                if let Some(d) = r.duration(line, ctx, o, Unit::Seconds) {
                    match ds::tcp_idle_timeout(d) {
                        Ok(d) => r.draft.dns_server.tcp_idle_timeout = Some(d),
                        Err(e) => r.error(line, ctx, format!("-{}: {e}", o.name)),
                    }
                }
            }
            "maxTCPConnections" => {
                if let Some(n) = r.value(line, ctx, o, |t| int(t).and_then(ds::tcp_max_connections)) {
                    r.draft.dns_server.tcp_max_connections = Some(n);
                }
            }
            "rrlResponsesPerSecond" | "rrlSlip" | "rrlIPv4Prefix" | "rrlIPv6Prefix"
            | "rrlExempt" | "rrlTableSize" => {
                let dd = &mut r.draft.dns_server;
                dd.rrl_line.get_or_insert(line);
                dd.rrl_context.get_or_insert_with(|| ctx.to_string());
                match o.name {
                    "rrlResponsesPerSecond" => {
                        match r.value(line, ctx, o, |t| int(t).and_then(ds::rrl_rate)) {
                            Some(n) => r.draft.dns_server.rrl_rate = Some(n),
                            None => r.draft.dns_server.rrl_rate_bad = true,
                        }
                    }
                    "rrlSlip" => {
                        if let Some(n) = r.value(line, ctx, o, |t| int(t).and_then(ds::rrl_slip)) {
                            r.draft.dns_server.rrl_slip = Some(n);
                        }
                    }
                    "rrlIPv4Prefix" => {
                        if let Some(n) = r.value(line, ctx, o, |t| int(t).and_then(ds::ipv4_prefix))
                        {
                            r.draft.dns_server.rrl_ipv4_prefix = Some(n);
                        }
                    }
                    "rrlIPv6Prefix" => {
                        if let Some(n) = r.value(line, ctx, o, |t| int(t).and_then(ds::ipv6_prefix))
                        {
                            r.draft.dns_server.rrl_ipv6_prefix = Some(n);
                        }
                    }
                    "rrlTableSize" => {
                        if let Some(n) = r.value(line, ctx, o, |t| int(t).and_then(ds::table_size))
                        {
                            r.draft.dns_server.rrl_table_size = Some(n);
                        }
                    }
                    _ => {
                        // A comma-separated list; repeated lines add up.
                        let list = |t: &str| {
                            t.split(',')
                                .map(|c| ds::cidr(c.trim()))
                                .collect::<Result<Vec<_>, _>>()
                        };
                        if let Some(v) = r.value(line, ctx, o, list) {
                            r.draft.dns_server.rrl_exempt.extend(v);
                        }
                    }
                }
            }
            "dnsCookie" => {
                if let Some(on) = r.value(line, ctx, o, scalar::enabled) {
                    r.draft.dns_server.cookies = Some(on);
                }
            }
            "cookieSecretRotation" => {
                if let Some(d) = r.duration(line, ctx, o, Unit::Seconds) {
                    match ds::secret_rotation(d) {
                        Ok(d) => r.draft.dns_server.cookie_rotation = Some(d),
                        Err(e) => r.error(line, ctx, format!("-{}: {e}", o.name)),
                    }
                }
            }
            other => r.diag.warn(
                line,
                format!(
                    "{ctx}: -{other} sets the appliance's resolver and cache; it has no effect in Sextant (UDP answers are capped at 1232 octets, TCP pipelines without a limit)"
                ),
            ),
        }
    }
}
