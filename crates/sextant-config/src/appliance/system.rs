//! `set gslb parameter`, `set ns rpcNode`, `enable ns feature` and
//! `enable ns mode`.

use std::time::Duration;

use sextant_core::LdnsProbe;

use super::{Arity, OptSpec, Reader, context, opt};
use crate::draft::DraftRpcNode;
use crate::duration::{self, Unit};
use crate::lexer::Token;
use crate::no_effect::Scope;
use crate::scalar;

/// Exactly the parameters that map to `GslbParams`; `-mepPort` and
/// `-mepSecurePort` are Sextant's own (the appliance's ports are fixed).
const PARAM_OPTS: &[OptSpec] = &[
    opt("ldnsEntryTimeout", Arity::Duration),
    opt("RTTTolerance", Arity::Duration),
    opt("ldnsMask", Arity::One),
    opt("v6ldnsMaskLen", Arity::One),
    opt("ldnsProbeOrder", Arity::Many),
    opt("dropLdnsReq", Arity::One),
    opt("MEPKeepAliveTimeout", Arity::Duration),
    opt("automaticConfigSync", Arity::One),
    opt("ldnsProbeInterval", Arity::Duration),
    opt("ldnsProbeTimeout", Arity::Duration),
    opt("mepPort", Arity::One),
    opt("mepSecurePort", Arity::One),
    opt("dcAccessPeriod", Arity::Duration),
    opt("GSLBSvcStateDelayTime", Arity::Duration),
    opt("SvcStateLearningTime", Arity::Duration),
    // The configuration's sync counter, which a saved file writes.
    opt("incarnation", Arity::One),
    // The appliance's other config sync settings: accepted, without
    // effect (`no_effect.rs`).
    opt("GSLBSyncMode", Arity::One),
    opt("GSLBSyncInterval", Arity::Duration),
    opt("GSLBSyncLocFiles", Arity::One),
    opt("GSLBConfigSyncMonitor", Arity::One),
    opt("GSLBSyncSaveConfigCommand", Arity::One),
];

/// Whether `set gslb parameter` reads option `name` (without its hyphen;
/// case-insensitive): `sextant import` leaves the others out of the line.
pub(crate) fn is_parameter_option(name: &str) -> bool {
    PARAM_OPTS.iter().any(|o| o.name.eq_ignore_ascii_case(name))
}

/// The appliance's limit of `-GSLBSvcStateDelayTime` and
/// `-SvcStateLearningTime`.
const MAX_SVC_STATE_TIME: Duration = Duration::from_secs(3600);

/// A duration option's value if it lies in `[0, max]` (0 turns it off).
fn up_to(
    r: &mut Reader<'_>,
    line: usize,
    ctx: &str,
    o: &super::args::Opt,
    max: Duration,
) -> Option<Duration> {
    let d = r.duration(line, ctx, o, Unit::Seconds)?;
    if d > max {
        r.error(
            line,
            ctx,
            format!(
                "-{}: {} is out of range; expected 0 to {}",
                o.name,
                duration::format(d),
                duration::format(max)
            ),
        );
        return None;
    }
    Some(d)
}

/// A duration option's value if it lies in `(0, max]`.
fn bounded(
    r: &mut Reader<'_>,
    line: usize,
    ctx: &str,
    o: &super::args::Opt,
    default: Unit,
    min: Duration,
    max: Duration,
) -> Option<Duration> {
    let d = r.duration(line, ctx, o, default)?;
    if d < min || d > max || d.is_zero() {
        r.error(
            line,
            ctx,
            format!(
                "-{}: {} is out of range; expected {} to {}",
                o.name,
                duration::format(d),
                duration::format(min.max(Duration::from_nanos(1))),
                duration::format(max)
            ),
        );
        return None;
    }
    Some(d)
}

fn probe(text: &str) -> Result<LdnsProbe, String> {
    if text.eq_ignore_ascii_case("PING") {
        Ok(LdnsProbe::Ping)
    } else if text.eq_ignore_ascii_case("DNS") {
        Ok(LdnsProbe::DnsUdp)
    } else if text.eq_ignore_ascii_case("TCP") {
        Ok(LdnsProbe::DnsTcp)
    } else {
        Err(format!("expected PING, DNS or TCP, found \"{text}\""))
    }
}

/// `set gslb parameter [options]`.
pub(super) fn set_parameter(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = "set gslb parameter".to_string();
    let args = r.args(line, &ctx, tokens, PARAM_OPTS);
    if let Some(t) = args.positional.first() {
        r.error(
            line,
            &ctx,
            format!(
                "unexpected argument \"{}\"; this command takes only options",
                t.text
            ),
        );
    }
    if !args.any {
        r.error(
            line,
            &ctx,
            format!(
                "nothing to set; give one of {}",
                super::args::list(PARAM_OPTS)
            ),
        );
        return;
    }
    r.draft.params_line = line;
    let ms = Duration::from_millis;
    let s = Duration::from_secs;
    for o in &args.opts {
        r.no_effect(line, Scope::Param, o.name);
        match o.name {
            "ldnsEntryTimeout" => {
                if let Some(d) = bounded(r, line, &ctx, o, Unit::Seconds, ms(1), s(65534)) {
                    r.draft.params.ldns_entry_timeout = d;
                }
            }
            "RTTTolerance" => {
                if let Some(d) = bounded(r, line, &ctx, o, Unit::Millis, ms(1), ms(100)) {
                    r.draft.params.rtt_tolerance = d;
                }
            }
            "MEPKeepAliveTimeout" => {
                if let Some(d) = bounded(r, line, &ctx, o, Unit::Seconds, ms(1), s(3600)) {
                    r.draft.params.mep_keepalive_timeout = d;
                }
            }
            "ldnsProbeInterval" => {
                if let Some(d) = bounded(r, line, &ctx, o, Unit::Seconds, ms(1), s(3600)) {
                    for kind in LdnsProbe::ALL {
                        r.draft.params.ldns_monitor_mut(kind).interval = d;
                    }
                }
            }
            "ldnsProbeTimeout" => {
                if let Some(d) = bounded(r, line, &ctx, o, Unit::Seconds, ms(1), s(3600)) {
                    for kind in LdnsProbe::ALL {
                        r.draft.params.ldns_monitor_mut(kind).timeout = d;
                    }
                }
            }
            "dcAccessPeriod" => {
                if let Some(d) = bounded(r, line, &ctx, o, Unit::Seconds, ms(1), s(3600)) {
                    r.draft.params.dc_access_period = d;
                }
            }
            "ldnsMask" => {
                if let Some(m) = r.value(line, &ctx, o, scalar::v4_mask) {
                    r.draft.params.ldns_v4_mask = m;
                }
            }
            "v6ldnsMaskLen" => {
                if let Some(m) = r.value(line, &ctx, o, |v| scalar::int_in(v, 1, 128)) {
                    r.draft.params.ldns_v6_mask = m as u8;
                }
            }
            "ldnsProbeOrder" => {
                let mut order = Vec::new();
                let mut ok = true;
                for v in o.texts() {
                    match probe(v) {
                        Ok(pr) if order.contains(&pr) => {
                            r.error(line, &ctx, format!("-ldnsProbeOrder: {v} is listed twice"));
                            ok = false;
                        }
                        Ok(pr) => order.push(pr),
                        Err(e) => {
                            r.error(line, &ctx, format!("-ldnsProbeOrder: {e}"));
                            ok = false;
                        }
                    }
                }
                if ok && !order.is_empty() {
                    r.draft.params.ldns_probe_order = order;
                }
            }
            "dropLdnsReq" => {
                if let Some(v) = r.value(line, &ctx, o, scalar::enabled) {
                    r.draft.params.drop_ldns_requests = v;
                }
            }
            "automaticConfigSync" => {
                if let Some(v) = r.value(line, &ctx, o, scalar::enabled) {
                    r.draft.params.automatic_config_sync = v;
                }
            }
            "incarnation" => {
                if let Some(n) = r.value(line, &ctx, o, |v| {
                    v.parse::<u64>()
                        .map_err(|_| format!("expected an integer 0 or more, found \"{v}\""))
                }) {
                    r.draft.params.config_incarnation = Some(n);
                }
            }
            "GSLBSvcStateDelayTime" => {
                if let Some(d) = up_to(r, line, &ctx, o, MAX_SVC_STATE_TIME) {
                    r.draft.params.svc_state_delay = d;
                }
            }
            "SvcStateLearningTime" => {
                if let Some(d) = up_to(r, line, &ctx, o, MAX_SVC_STATE_TIME) {
                    r.draft.params.svc_state_learning = d;
                }
            }
            "mepPort" => {
                if let Some(v) = r.value(line, &ctx, o, scalar::port) {
                    r.draft.params.mep_port = v;
                }
            }
            "mepSecurePort" => {
                if let Some(v) = r.value(line, &ctx, o, scalar::port) {
                    r.draft.params.mep_secure_port = v;
                }
            }
            _ => {}
        }
    }
}

/// `set ns rpcNode IP [-password SECRET] [-secure YES|NO]`: the metric
/// exchange credentials of the node at a site IP. As on the appliance,
/// `set` updates: several lines for one IP merge, a later value of a
/// setting replacing an earlier one.
pub(super) fn set_rpc_node(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    rpc_node(r, line, tokens, "set ns rpcNode");
}

/// `add ns rpcNode IP [options]`: a saved file adds the nodes the appliance
/// did not create itself (other sites' IPs) with `add`; it says the same
/// as `set`, and lines for one IP merge alike.
pub(super) fn add_rpc_node(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    rpc_node(r, line, tokens, "add ns rpcNode");
}

fn rpc_node(r: &mut Reader<'_>, line: usize, tokens: &[Token], command: &str) {
    const OPTS: &[OptSpec] = &[
        opt("password", Arity::One),
        opt("secure", Arity::One),
        opt("srcIP", Arity::One),
        opt("validateCert", Arity::One),
        opt("encrypted", Arity::Flag),
        opt("encryptmethod", Arity::One),
        opt("kek", Arity::Flag),
        opt("suffix", Arity::One),
    ];
    let ctx = context(command, tokens);
    let args = r.args(line, &ctx, tokens, OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["IP"]) else {
        return;
    };
    let ip = match scalar::ip(pos[0]) {
        Ok(ip) => Some(ip),
        Err(e) => {
            r.error(line, &ctx, format!("IP: {e}"));
            None
        }
    };
    let mut password = None;
    if let Some(o) = args.get("password") {
        if o.value().is_empty() {
            r.error(line, &ctx, "-password is empty");
        } else if args.has("encrypted") {
            // The appliance saves the password encrypted with its own key,
            // which never leaves it.
            r.error(
                line,
                &ctx,
                "-password is encrypted with the appliance's own key (-encrypted), which Sextant cannot read: write the password in clear; `sextant import` rewrites such lines with a placeholder and lists them",
            );
        } else {
            if crate::secrets::is_placeholder(o.value()) {
                r.diag.warn(
                    line,
                    format!("{ctx}: -password is a placeholder written by `sextant import`: metric exchange with {} will not authenticate until the real password is entered here", pos[0]),
                );
            }
            password = Some(o.value().to_string());
        }
    } else if args.has("encrypted") {
        r.error(line, &ctx, "-encrypted without -password");
    }
    let secure = args
        .get("secure")
        .and_then(|o| r.value(line, &ctx, o, scalar::yes_no));
    let source_ip = args.get("srcIP").and_then(|o| {
        if o.value() == "*" {
            None
        } else {
            r.value(line, &ctx, o, scalar::ip)
        }
    });
    if let Some(o) = args.get("validateCert") {
        r.value(line, &ctx, o, scalar::yes_no);
    }
    // `add` alone names a node with the defaults; `set` must change something.
    if !args.any && command.starts_with("set") {
        r.error(
            line,
            &ctx,
            "nothing to set; give -password, -secure and/or -srcIP",
        );
    }
    let Some(ip) = ip else { return };
    let nodes = &mut r.draft.rpc_nodes;
    let i = match nodes.iter().position(|n| n.ip == ip) {
        Some(i) => i,
        None => {
            nodes.push(DraftRpcNode {
                ip,
                line,
                password: None,
                secure: None,
                source_ip: None,
            });
            nodes.len() - 1
        }
    };
    let node = &mut nodes[i];
    if password.is_some() {
        node.password = password;
    }
    if secure.is_some() {
        node.secure = secure;
    }
    if source_ip.is_some() {
        node.source_ip = source_ip;
    }
}

/// `enable ns feature WORD ...`: accepted with any feature words, as saved
/// files list every feature the appliance runs. Sextant is always a GSLB
/// with an authoritative DNS server, so the words change nothing.
pub(super) fn enable_feature(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = "enable ns feature";
    let args = r.args(line, ctx, tokens, &[]);
    if args.positional.is_empty() {
        r.error(line, ctx, "missing feature names, e.g. GSLB LB");
    }
}

/// `enable ns mode WORD ...`: accepted with any mode words; the appliance's
/// packet-forwarding modes have no counterpart in Sextant.
pub(super) fn enable_mode(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = "enable ns mode";
    let args = r.args(line, ctx, tokens, &[]);
    if args.positional.is_empty() {
        r.error(line, ctx, "missing mode names, e.g. FR L3 USNIP");
    }
}
