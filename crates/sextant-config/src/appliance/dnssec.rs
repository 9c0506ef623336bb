//! `add dns key` and `sign dns zone` (and `-keyName` of `add dns zone`):
//! the appliance's DNSSEC commands, with the key times Sextant adds
//! (crate::dnssec).

use sextant_core::dnssec::KeyTiming;

use super::{Arity, OptSpec, Reader, context, opt};
use crate::dnssec::{DraftKey, ZoneSigning, time};
use crate::lexer::Token;
use crate::scalar;

/// `add dns key NAME PUBLIC_FILE PRIVATE_FILE [-TTL secs] [-publish T]
/// [-activate T] [-inactive T] [-delete T] [-syncPublish T] [-syncDelete T]`.
/// The appliance's `-expires`/`-notificationPeriod` (a reminder to roll the
/// key) and `-password` (an encrypted private key) are not read.
pub(super) fn add_key(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    const OPTS: &[OptSpec] = &[
        opt("TTL", Arity::One),
        opt("publish", Arity::One),
        opt("activate", Arity::One),
        opt("inactive", Arity::One),
        opt("delete", Arity::One),
        opt("syncPublish", Arity::One),
        opt("syncDelete", Arity::One),
    ];
    let ctx = context("add dns key", tokens);
    let args = r.args(line, &ctx, tokens, OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["NAME", "PUBLIC_FILE", "PRIVATE_FILE"])
    else {
        return;
    };
    let ttl = match args.get("TTL") {
        Some(o) => match r.value(line, &ctx, o, |v| {
            v.parse::<u32>()
                .ok()
                .filter(|t| *t <= crate::draft::MAX_TTL as u32)
                .ok_or_else(|| format!("expected a TTL in seconds, found \"{v}\""))
        }) {
            Some(t) => Some(t),
            None => return,
        },
        None => None,
    };
    let mut timing = KeyTiming::default();
    for (name, field) in [
        ("publish", &mut timing.publish),
        ("activate", &mut timing.activate),
        ("inactive", &mut timing.inactive),
        ("delete", &mut timing.delete),
        ("syncPublish", &mut timing.sync_publish),
        ("syncDelete", &mut timing.sync_delete),
    ] {
        if let Some(o) = args.get(name) {
            match r.value(line, &ctx, o, time) {
                Some(t) => *field = Some(t),
                None => return,
            }
        }
    }
    r.draft.dnssec.keys.push(DraftKey {
        name: pos[0].to_string(),
        line,
        context: ctx.to_string(),
        public: pos[1].to_string(),
        private: pos[2].to_string(),
        ttl,
        timing,
    });
}

/// `sign dns zone ZONE -keyName KEY...`.
pub(super) fn sign(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    const OPTS: &[OptSpec] = &[opt("keyName", Arity::Many)];
    let ctx = context("sign dns zone", tokens);
    let args = r.args(line, &ctx, tokens, OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["ZONE"]) else {
        return;
    };
    match args.get("keyName") {
        Some(o) => sign_zone(r, line, &ctx, pos[0], o.texts()),
        None => r.error(
            line,
            &ctx,
            "-keyName is required: the keys (add dns key) that sign the zone",
        ),
    }
}

/// Records that `zone` is signed by `keys`.
pub(super) fn sign_zone<'t>(
    r: &mut Reader<'_>,
    line: usize,
    ctx: &str,
    zone: &str,
    keys: impl Iterator<Item = &'t str>,
) {
    r.draft.dnssec.signings.push(ZoneSigning {
        zone: scalar::normalize_name(zone),
        keys: keys.map(str::to_string).collect(),
        line,
        context: ctx.to_string(),
    });
}
