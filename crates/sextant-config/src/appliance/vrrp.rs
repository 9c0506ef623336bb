//! VRRP (seed 004, active-active): `add vrid`, `set vrid`, `bind vrid`,
//! `set vridParam`, and the VIPs of the virtual routers, `add ns ip IP MASK
//! -type VIP -vrid ID` and `add ns ip6 ADDR/LEN -type VIP -vrid6 ID`.
//! Saved appliance files spell them `add vrID`, `bind vrID`, `set
//! vrIDParam`; commands and options match case-insensitively.
//!
//! A VIP or a binding may come before the `add vrid` of its VRID (saved
//! files often put the `add ns ip` lines first): the VRID is found by id
//! once the whole file is read (`crate::vrrp::build`).

use std::sync::Arc;

use super::args::{Args, Opt};
use super::{Arity, OptSpec, Reader, context, opt};
use crate::draft::Ref;
use crate::duration::Unit;
use crate::lexer::Token;
use crate::no_effect::Scope;
use crate::scalar;
use crate::vrrp::{self, DraftVrid, VridBinding, VridBound};

const VRID_OPTS: &[OptSpec] = &[
    opt("priority", Arity::One),
    opt("preemption", Arity::One),
    opt("sharing", Arity::One),
    opt("tracking", Arity::One),
    opt("preemptiondelaytimer", Arity::Duration),
];

const BIND_OPTS: &[OptSpec] = &[
    opt("ifnum", Arity::Many),
    opt("trackifNum", Arity::Many),
    opt("trackVserver", Arity::Many),
    opt("trackService", Arity::Many),
];

const PARAM_OPTS: &[OptSpec] = &[
    opt("sendToMaster", Arity::One),
    opt("helloInterval", Arity::Duration),
    opt("deadInterval", Arity::Duration),
    opt("checksum", Arity::One),
    opt("virtualMac", Arity::One),
];

/// Options of `add ns ip` (and `add ns ip6`) that the appliance writes on
/// VIP lines and that have no effect here (`crate::no_effect`), with how
/// their value is checked.
const NO_EFFECT_OPTS: &[(&str, Check)] = &[
    ("arp", Check::Enabled),
    ("icmp", Check::Enabled),
    ("arpResponse", Check::Any),
    ("icmpResponse", Check::Any),
    ("state", Check::Enabled),
    ("vServer", Check::Enabled),
    ("telnet", Check::Enabled),
    ("ftp", Check::Enabled),
    ("gui", Check::Any),
    ("ssh", Check::Enabled),
    ("snmp", Check::Enabled),
    ("mgmtAccess", Check::Enabled),
    ("restrictAccess", Check::Enabled),
    ("dynamicRouting", Check::Enabled),
    ("hostRoute", Check::Enabled),
    ("hostRtGw", Check::Ip),
    ("metric", Check::Int),
    ("vserverRHILevel", Check::Any),
    ("vserverRHIMode", Check::Any),
    ("td", Check::Int),
];

/// Only on `add ns ip6`.
const NO_EFFECT_OPTS6: &[(&str, Check)] = &[("nd", Check::Enabled), ("scope", Check::Any)];

/// How the value of an option without effect is checked.
#[derive(Debug, Clone, Copy)]
enum Check {
    Enabled,
    Ip,
    Int,
    /// A keyword of the appliance's (`-gui SECUREONLY`, `-arpResponse
    /// ONE_VSERVER`): taken as written.
    Any,
}

fn tracking(text: &str) -> Result<sextant_core::Tracking, String> {
    vrrp::tracking(text)
        .ok_or_else(|| format!("expected NONE, ALL, ONE or PROGRESSIVE, found \"{text}\""))
}

fn checksum(text: &str) -> Result<sextant_core::VrrpChecksum, String> {
    vrrp::checksum(text)
        .ok_or_else(|| format!("expected PSEUDO_HEADER or RFC9568, found \"{text}\""))
}

/// `add vrid ID [-priority N] [-preemption ENABLED|DISABLED] [-sharing
/// ENABLED|DISABLED] [-tracking MODE] [-preemptiondelaytimer SECONDS]`.
pub(super) fn add_vrid(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = context("add vrid", tokens);
    let args = r.args(line, &ctx, tokens, VRID_OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["ID"]) else {
        return;
    };
    let Ok(id) = vrrp::vrid_text(pos[0]).map_err(|e| r.error(line, &ctx, format!("ID: {e}")))
    else {
        return;
    };
    r.draft
        .vrrp
        .vrids
        .push(DraftVrid::new(id, line, ctx.clone()));
    let idx = r.draft.vrrp.vrids.len() - 1;
    apply_vrid_opts(r, line, &ctx, idx, &args);
}

/// `set vrid ID [the options of add]`: changes a VRID added on an earlier
/// line.
pub(super) fn set_vrid(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = context("set vrid", tokens);
    let args = r.args(line, &ctx, tokens, VRID_OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["ID"]) else {
        return;
    };
    let Ok(id) = vrrp::vrid_text(pos[0]).map_err(|e| r.error(line, &ctx, format!("ID: {e}")))
    else {
        return;
    };
    let Some(idx) = r.draft.vrrp.vrids.iter().position(|v| v.vrid.id == id) else {
        r.error(
            line,
            &ctx,
            format!(
                "vrid {id} is not added on an earlier line (add it with \"add vrid {id}\" first)"
            ),
        );
        return;
    };
    if !args.any {
        r.error(
            line,
            &ctx,
            format!(
                "nothing to set; give one of {}",
                super::args::list(VRID_OPTS)
            ),
        );
    }
    apply_vrid_opts(r, line, &ctx, idx, &args);
}

fn apply_vrid_opts(r: &mut Reader<'_>, line: usize, ctx: &str, idx: usize, args: &Args) {
    for o in &args.opts {
        match o.name {
            "priority" => {
                if let Some(p) = r.value(line, ctx, o, vrrp::priority_text) {
                    r.draft.vrrp.vrids[idx].vrid.priority = p;
                }
            }
            "preemption" => {
                if let Some(on) = r.value(line, ctx, o, scalar::enabled) {
                    let v = &mut r.draft.vrrp.vrids[idx];
                    v.vrid.preemption = on;
                    v.preemption_line = Some(line);
                }
            }
            "sharing" => {
                if let Some(on) = r.value(line, ctx, o, scalar::enabled) {
                    r.draft.vrrp.vrids[idx].vrid.sharing = on;
                }
            }
            "tracking" => {
                if let Some(t) = r.value(line, ctx, o, tracking) {
                    let v = &mut r.draft.vrrp.vrids[idx];
                    v.vrid.tracking = t;
                    v.tracking_line = Some(line);
                }
            }
            "preemptiondelaytimer" => {
                if let Some(d) = checked_duration(r, line, ctx, o, Unit::Seconds, |d| {
                    vrrp::preemption_delay(d)
                }) {
                    r.draft.vrrp.vrids[idx].vrid.preemption_delay = d;
                }
            }
            _ => {}
        }
    }
}

/// An option's duration, then `check`ed; problems reported as `ctx: -opt: ...`.
fn checked_duration(
    r: &mut Reader<'_>,
    line: usize,
    ctx: &str,
    o: &Opt<'_>,
    unit: Unit,
    check: impl FnOnce(std::time::Duration) -> Result<std::time::Duration, String>,
) -> Option<std::time::Duration> {
    let d = r.duration(line, ctx, o, unit)?;
    match check(d) {
        Ok(d) => Some(d),
        Err(e) => {
            r.error(line, ctx, format!("-{}: {e}", o.name));
            None
        }
    }
}

/// `bind vrid ID [-ifnum IFACE ...] [-trackifNum IFACE ...] [-trackVserver
/// NAME ...] [-trackService NAME ...]`.
pub(super) fn bind_vrid(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = context("bind vrid", tokens);
    let args = r.args(line, &ctx, tokens, BIND_OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["ID"]) else {
        return;
    };
    let Ok(id) = vrrp::vrid_text(pos[0]).map_err(|e| r.error(line, &ctx, format!("ID: {e}")))
    else {
        return;
    };
    if !args.any {
        r.error(
            line,
            &ctx,
            "nothing to bind; give -ifnum IFACE, -trackifNum IFACE, -trackVserver NAME or -trackService NAME",
        );
        return;
    }
    for o in &args.opts {
        for name in o.texts() {
            let bound = match o.name {
                "ifnum" | "trackifNum" => {
                    if let Err(e) = vrrp::interface_name(name) {
                        r.error(line, &ctx, format!("-{}: {e}", o.name));
                        continue;
                    }
                    if o.name == "ifnum" {
                        VridBound::Interface(name.to_string())
                    } else {
                        VridBound::TrackInterface(name.to_string())
                    }
                }
                "trackVserver" | "trackService" => {
                    let reference = Ref {
                        name: name.to_string(),
                        line,
                        context: ctx.clone(),
                    };
                    if o.name == "trackVserver" {
                        VridBound::TrackVserver(reference)
                    } else {
                        VridBound::TrackService(reference)
                    }
                }
                _ => continue,
            };
            r.draft.vrrp.bindings.push(VridBinding {
                vrid: id,
                of: None,
                line,
                context: ctx.clone(),
                bound,
            });
        }
    }
}

/// `set vridParam [-sendToMaster ENABLED|DISABLED] [-helloInterval MS]
/// [-deadInterval S] [-checksum PSEUDO_HEADER|RFC9568] [-virtualMac
/// ENABLED|DISABLED]`.
pub(super) fn set_param(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx: Arc<str> = "set vridParam".into();
    let args = r.args(line, &ctx, tokens, PARAM_OPTS);
    if let Some(extra) = args.positional.first() {
        r.error(
            line,
            &ctx,
            format!(
                "unexpected argument \"{}\"; set vridParam takes only options",
                extra.text
            ),
        );
        return;
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
    r.draft.vrrp.params_context = Some(ctx.clone());
    for o in &args.opts {
        match o.name {
            "sendToMaster" => {
                if let Some(on) = r.value(line, &ctx, o, scalar::enabled) {
                    r.draft.vrrp.params.send_to_master = on;
                }
            }
            "helloInterval" => {
                if let Some(d) =
                    checked_duration(r, line, &ctx, o, Unit::Millis, vrrp::hello_interval)
                {
                    r.draft.vrrp.params.hello_interval = d;
                }
            }
            "deadInterval" => {
                r.draft.vrrp.interval_line = Some(line);
                if let Some(d) =
                    checked_duration(r, line, &ctx, o, Unit::Seconds, vrrp::dead_interval)
                {
                    r.draft.vrrp.params.dead_interval = d;
                }
            }
            "checksum" => {
                if let Some(c) = r.value(line, &ctx, o, checksum) {
                    r.draft.vrrp.params.checksum = c;
                }
            }
            "virtualMac" => {
                if let Some(on) = r.value(line, &ctx, o, scalar::enabled) {
                    r.draft.vrrp.params.virtual_mac = on;
                }
            }
            _ => {}
        }
    }
}

/// `add ns ip IP MASK -type VIP -vrid ID [options without effect]`.
pub(super) fn add_ns_ip(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    vip_line(r, line, tokens, false);
}

/// `add ns ip6 ADDR/LEN -type VIP -vrid6 ID [options without effect]`
/// (`-vrid ID` is taken too).
pub(super) fn add_ns_ip6(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    vip_line(r, line, tokens, true);
}

/// The value of option `name` if the line gives it, read before the
/// options are checked (to tell a VIP line from the lines not supported).
fn raw_option<'t>(tokens: &'t [Token<'t>], name: &str) -> Option<&'t str> {
    let i = tokens
        .iter()
        .position(|t| t.is_option() && t.text[1..].eq_ignore_ascii_case(name))?;
    Some(
        tokens
            .get(i + 1)
            .filter(|t| !t.is_option())
            .map_or("", |t| &*t.text),
    )
}

fn vip_line(r: &mut Reader<'_>, line: usize, tokens: &[Token], v6: bool) {
    let command = if v6 { "add ns ip6" } else { "add ns ip" };
    let vrid_opt = if v6 { "vrid6" } else { "vrid" };
    // Only the VIPs of virtual routers are read; other addresses keep the
    // "not supported yet" of before, with nothing else checked.
    let ty = raw_option(tokens, "type");
    let has_vrid =
        raw_option(tokens, "vrid").is_some() || (v6 && raw_option(tokens, "vrid6").is_some());
    match ty {
        Some(t) if t.eq_ignore_ascii_case("VIP") => {}
        _ => {
            let ty = match ty {
                Some(t) => format!("-type {t}"),
                None => "-type SNIP (the default)".to_string(),
            };
            r.diag.error(
                line,
                format!(
                    "{command}: not supported yet for {ty}: Sextant takes only the VIPs of its virtual routers (-type VIP -{vrid_opt} ID); configure the node's own addresses in the operating system, or remove this line"
                ),
            );
            return;
        }
    }
    if !has_vrid {
        r.diag.error(
            line,
            format!(
                "{command}: a VIP without -{vrid_opt} is not supported yet: Sextant takes only the VIPs of its virtual routers; give -{vrid_opt} ID (and add vrid ID), or remove this line"
            ),
        );
        return;
    }

    let ctx = context(command, tokens);
    let mut specs: Vec<OptSpec> = vec![opt("type", Arity::One), opt("vrid", Arity::One)];
    if v6 {
        specs.push(opt("vrid6", Arity::One));
    }
    let extra = NO_EFFECT_OPTS
        .iter()
        .chain(if v6 { NO_EFFECT_OPTS6 } else { &[] });
    specs.extend(extra.clone().map(|(name, _)| opt(name, Arity::One)));
    let args = r.args(line, &ctx, tokens, &specs);

    let vip = if v6 {
        r.positional(line, &ctx, &args, &["ADDR/LEN"])
            .and_then(|pos| {
                vrrp::vip_cidr(pos[0], true)
                    .map_err(|e| r.error(line, &ctx, format!("ADDR/LEN: {e}")))
                    .ok()
            })
    } else {
        r.positional(line, &ctx, &args, &["IP", "MASK"])
            .and_then(|pos| {
                let ip = scalar::ip(pos[0])
                    .and_then(|ip| match ip {
                        std::net::IpAddr::V6(_) => Err(format!(
                            "{ip} is an IPv6 address; use add ns ip6 ADDR/LEN for IPv6 VIPs"
                        )),
                        v4 => Ok(v4),
                    })
                    .map_err(|e| r.error(line, &ctx, format!("IP: {e}")));
                let len =
                    scalar::v4_mask(pos[1]).map_err(|e| r.error(line, &ctx, format!("MASK: {e}")));
                let (ip, len) = (ip.ok()?, len.ok()?);
                vrrp::vip(ip, len)
                    .map_err(|e| r.error(line, &ctx, format!("IP: {e}")))
                    .ok()
            })
    };

    let mut id = None;
    let given: Vec<&Opt> = ["vrid", "vrid6"]
        .iter()
        .filter_map(|n| args.get(n))
        .collect();
    if given.len() > 1 {
        r.error(line, &ctx, "give -vrid6 or -vrid, not both");
    } else if let Some(o) = given.first() {
        id = r.value(line, &ctx, o, vrrp::vrid_text);
    }
    for o in &args.opts {
        let Some((_, check)) = extra.clone().find(|(n, _)| *n == o.name) else {
            continue;
        };
        match check {
            Check::Enabled => {
                r.value(line, &ctx, o, scalar::enabled);
            }
            Check::Ip => {
                r.value(line, &ctx, o, scalar::ip);
            }
            Check::Int => {
                r.value(line, &ctx, o, |v| scalar::int_in(v, 0, u64::from(u32::MAX)));
            }
            Check::Any => {}
        }
        r.no_effect(line, Scope::NsIp, o.name);
    }
    if let (Some(vip), Some(id)) = (vip, id) {
        r.draft.vrrp.bindings.push(VridBinding {
            vrid: id,
            of: None,
            line,
            context: ctx,
            bound: VridBound::Address(vip),
        });
    }
}
