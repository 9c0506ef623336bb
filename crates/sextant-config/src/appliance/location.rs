//! `add location` (custom entries of the location database) and
//! `add locationFile` / `add locationFile6` (location files).

use sextant_core::{Location, Place};

use super::{Arity, OptSpec, Reader, context, opt};
use crate::lexer::Token;
use crate::locations::{CustomLocation, Format, LocationFile, coordinates, degrees};
use crate::scalar;

/// `add location FROM_IP TO_IP "q1.q2.q3.q4.q5.q6" [-longitude X -latitude Y]`.
pub(super) fn add_location(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    const OPTS: &[OptSpec] = &[opt("longitude", Arity::One), opt("latitude", Arity::One)];
    let ctx = context("add location", tokens);
    let args = r.args(line, &ctx, tokens, OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["FROM_IP", "TO_IP", "LOCATION"]) else {
        return;
    };
    let from = scalar::ip(pos[0]).map_err(|e| r.error(line, &ctx, format!("FROM_IP: {e}")));
    let to = scalar::ip(pos[1]).map_err(|e| r.error(line, &ctx, format!("TO_IP: {e}")));
    let location = Location::parse(pos[2]).map_err(|e| r.error(line, &ctx, e.to_string()));
    let longitude = args
        .get("longitude")
        .map(|o| r.value(line, &ctx, o, degrees).ok_or(()))
        .transpose();
    let latitude = args
        .get("latitude")
        .map(|o| r.value(line, &ctx, o, degrees).ok_or(()))
        .transpose();
    let (Ok(from), Ok(to), Ok(location), Ok(longitude), Ok(latitude)) =
        (from, to, location, longitude, latitude)
    else {
        return;
    };
    let coordinates = match coordinates(longitude, latitude, ("-longitude", "-latitude")) {
        Ok(c) => c,
        Err((_, e)) => return r.error(line, &ctx, e),
    };
    r.draft.locations.custom.push(CustomLocation {
        from,
        to,
        place: Place {
            location,
            coordinates,
        },
        line,
        context: ctx.to_string(),
    });
}

/// `add locationFile PATH [-format netscaler|mmdb]`; `add locationFile6`
/// (the appliance's command for IPv6 files) is the same command here.
pub(super) fn add_location_file(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    add_file(r, line, tokens, "add locationFile");
}

pub(super) fn add_location_file6(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    add_file(r, line, tokens, "add locationFile6");
}

fn add_file(r: &mut Reader<'_>, line: usize, tokens: &[Token], command: &str) {
    const OPTS: &[OptSpec] = &[opt("format", Arity::One)];
    let ctx = context(command, tokens);
    let args = r.args(line, &ctx, tokens, OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["PATH"]) else {
        return;
    };
    let path = pos[0].to_string();
    let format = match args.get("format") {
        Some(o) => match r.value(line, &ctx, o, Format::parse) {
            Some(f) => f,
            None => return,
        },
        None => Format::for_path(&path),
    };
    r.draft.locations.files.push(LocationFile {
        path,
        format,
        line,
        context: ctx.to_string(),
    });
}
