//! `add gslb dcRecord`, `set gslb dcRecord` and `bind gslb dcRecord`: the
//! names answered in datacenter mode (seed 002), their addresses per
//! datacenter and their fail-safe records.
//!
//! The settings are checked against each other (criterion against
//! selection, ...) by `validate`, once the whole file is read, since `set`
//! may change them on later lines.

use sextant_core::Balance;
use sextant_core::dc::MAX_DC_GROUPS;

use super::args::Args;
use super::{Arity, OptSpec, Reader, context, opt};
use crate::draft::{
    DcBinding, DcBound, DcHc, DcSelectionKind, DcTarget, DraftDcAddress, DraftDcRecord, MAX_TTL,
    Ref,
};
use crate::lexer::Token;
use crate::scalar;

const RECORD_OPTS: &[OptSpec] = &[
    opt("dcSelection", Arity::One),
    opt("criterion", Arity::One),
    opt("vServiceName", Arity::One),
    opt("totalDCs", Arity::One),
    opt("balance", Arity::One),
    opt("TTL", Arity::One),
    opt("dcOrder", Arity::Many),
];

const BIND_OPTS: &[OptSpec] = &[
    opt("siteName", Arity::One),
    opt("serviceName", Arity::One),
    opt("IPAddress", Arity::One),
    opt("weight", Arity::One),
    opt("hc", Arity::One),
    opt("failSafe", Arity::One),
];

fn selection(text: &str) -> Result<DcSelectionKind, String> {
    DcSelectionKind::parse(text).ok_or_else(|| {
        let all: Vec<&str> = DcSelectionKind::ALL
            .iter()
            .map(|k| k.appliance_word())
            .collect();
        format!(
            "unknown DC selection \"{text}\"; expected one of {}",
            all.join(", ")
        )
    })
}

fn balance(text: &str) -> Result<Balance, String> {
    Balance::ALL
        .into_iter()
        .find(|b| b.name().eq_ignore_ascii_case(text))
        .ok_or_else(|| {
            let all: Vec<&str> = Balance::ALL.iter().map(|b| b.name()).collect();
            format!(
                "unknown balance method \"{text}\"; expected one of {}",
                all.join(", ")
            )
        })
}

fn hc(text: &str) -> Result<DcHc, String> {
    DcHc::parse(text).ok_or_else(|| {
        format!("expected SERVICE, SITE, SERVICE_AND_SITE or NONE, found \"{text}\"")
    })
}

/// `add gslb dcRecord NAME [options]`.
pub(super) fn add_record(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = context("add gslb dcRecord", tokens);
    let args = r.args(line, &ctx, tokens, RECORD_OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["NAME"]) else {
        return;
    };
    r.draft
        .dc_records
        .push(DraftDcRecord::new(pos[0].to_string(), line));
    let idx = r.draft.dc_records.len() - 1;
    apply_record_opts(r, line, &ctx, idx, &args);
}

/// `set gslb dcRecord NAME [options]`: changes a record added on an
/// earlier line.
pub(super) fn set_record(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = context("set gslb dcRecord", tokens);
    let args = r.args(line, &ctx, tokens, RECORD_OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["NAME"]) else {
        return;
    };
    let name = scalar::normalize_name(pos[0]);
    let Some(idx) = r
        .draft
        .dc_records
        .iter()
        .position(|d| scalar::normalize_name(&d.name) == name)
    else {
        r.error(
            line,
            &ctx,
            format!(
                "dcRecord \"{}\" is not defined on an earlier line (add it with \"add gslb dcRecord\" first)",
                pos[0]
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
                super::args::list(RECORD_OPTS)
            ),
        );
    }
    apply_record_opts(r, line, &ctx, idx, &args);
}

fn apply_record_opts(r: &mut Reader<'_>, line: usize, ctx: &str, idx: usize, args: &Args) {
    // The selection first: changing it forgets the criterion and vService
    // name of earlier lines, and those of this line then apply to the new
    // selection (validate checks that they fit it).
    if let Some(o) = args.get("dcSelection") {
        let kind = r.value(line, ctx, o, selection);
        r.draft.dc_records[idx].set_selection(kind, line);
    }
    for o in &args.opts {
        match o.name {
            "criterion" => {
                r.draft.dc_records[idx].criterion = Some((o.value().to_string(), line));
            }
            "vServiceName" => {
                // Kept when reported, so that its absence is not reported too.
                r.value(line, ctx, o, scalar::check_name);
                r.draft.dc_records[idx].vservice_name = Some((o.value().to_string(), line));
            }
            "totalDCs" => {
                if let Some(n) =
                    r.value(line, ctx, o, |v| scalar::int_in(v, 1, MAX_DC_GROUPS as u64))
                {
                    r.draft.dc_records[idx].total_dcs = Some((n as u32, line));
                }
            }
            "balance" => {
                if let Some(b) = r.value(line, ctx, o, balance) {
                    r.draft.dc_records[idx].balance = b;
                }
            }
            "TTL" => {
                if let Some(t) = r.value(line, ctx, o, |v| scalar::int_in(v, 1, MAX_TTL)) {
                    r.draft.dc_records[idx].ttl = t as u32;
                }
            }
            "dcOrder" => {
                let context: std::sync::Arc<str> = format!("{ctx}: -dcOrder").into();
                r.draft.dc_records[idx].dc_order = Some(
                    o.texts()
                        .map(|t| Ref {
                            name: t.to_string(),
                            line,
                            context: context.clone(),
                        })
                        .collect(),
                );
            }
            // dcSelection is applied above.
            _ => {}
        }
    }
}

/// `bind gslb dcRecord NAME -siteName SITE (-serviceName SERVICE |
/// -IPAddress IP) [-weight N] [-hc HC]` or `bind gslb dcRecord NAME
/// -failSafe IP`.
pub(super) fn bind_record(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = context("bind gslb dcRecord", tokens);
    let args = r.args(line, &ctx, tokens, BIND_OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["NAME"]) else {
        return;
    };
    let record = Ref {
        name: pos[0].to_string(),
        line,
        context: ctx.clone(),
    };
    let reference = |o: &super::args::Opt| Ref {
        name: o.value().to_string(),
        line,
        context: ctx.clone(),
    };
    if let Some(o) = args.get("failSafe") {
        let others: Vec<String> = ["siteName", "serviceName", "IPAddress", "weight", "hc"]
            .into_iter()
            .filter(|n| args.mentioned.contains(n))
            .map(|n| format!("-{n}"))
            .collect();
        if !others.is_empty() {
            r.error(
                line,
                &ctx,
                format!(
                    "-failSafe binds a fail-safe record and takes no {}; bind addresses on lines of their own",
                    others.join(", ")
                ),
            );
            return;
        }
        if let Some(ip) = r.value(line, &ctx, o, scalar::ip) {
            r.draft.dc_bindings.push(DcBinding {
                record,
                of: None,
                bound: DcBound::FailSafe(ip, line),
            });
        }
        return;
    }
    let target = match (args.get("serviceName"), args.get("IPAddress")) {
        (Some(_), Some(_)) => {
            r.error(
                line,
                &ctx,
                "give either -serviceName or -IPAddress, not both (use one bind line for each address)",
            );
            return;
        }
        (Some(svc), None) => DcTarget::Service(reference(svc)),
        (None, Some(o)) => match r.value(line, &ctx, o, scalar::ip) {
            Some(ip) => DcTarget::Ip(ip),
            None => return,
        },
        (None, None) => {
            if args.lacks("serviceName") && args.lacks("IPAddress") && args.lacks("failSafe") {
                r.error(
                    line,
                    &ctx,
                    "nothing to bind; give -siteName SITE with -serviceName SERVICE or -IPAddress IP (and optionally -weight N, -hc HC), or -failSafe IP",
                );
            }
            return;
        }
    };
    let Some(site) = args.get("siteName").map(reference) else {
        if args.lacks("siteName") {
            r.error(
                line,
                &ctx,
                "-siteName is required (the datacenter the address belongs to)",
            );
        }
        return;
    };
    let weight = match args.get("weight") {
        Some(o) => r
            .value(line, &ctx, o, |v| scalar::int_in(v, 0, 100))
            .unwrap_or(1),
        None => 1,
    } as u32;
    let health = args
        .get("hc")
        .and_then(|o| r.value(line, &ctx, o, hc))
        .map(|h| (h, line));
    r.draft.dc_bindings.push(DcBinding {
        record,
        of: None,
        bound: DcBound::Address(DraftDcAddress {
            site,
            target,
            weight,
            hc: health,
            line,
        }),
    });
}
