//! Static records: places each record in the zone it belongs to and checks
//! the names against each other, for both syntaxes.
//!
//! Rules (RFC 1034, RFC 2181): a record must be inside a zone Sextant
//! serves; a CNAME owns its name alone (no other record, no GSLB domain,
//! not the apex); a GSLB domain answers A and AAAA, so a static A or AAAA
//! of the same name is a conflict; below a delegation (NS records of a
//! name below our apex) only glue addresses may be given, and no GSLB
//! domain.

use std::collections::{BTreeMap, HashMap};

use sextant_core::records::{TYPE_A, TYPE_AAAA, TYPE_CNAME, TYPE_DS, TYPE_NS, sort_records};
use sextant_core::{Model, RecordData, StaticRecord, ZoneId};

use crate::draft::{Draft, DraftRecord, Syntax};
use crate::error::Diag;
use crate::scalar::{check_domain, normalize_name};

/// The largest character-string of a TXT record (RFC 1035 §3.3).
const MAX_TXT_STRING: usize = 255;

/// Checks `draft.records` and the delegations `validate` found, and puts
/// them in `model.records` (sorted by name, then type).
pub(crate) fn build(
    draft: &Draft,
    delegations: Vec<DraftRecord>,
    syntax: Syntax,
    diag: &mut Diag,
    model: &mut Model,
) {
    let apexes: HashMap<&str, ZoneId> = model
        .zones
        .iter_enumerated()
        .map(|(i, z)| (z.apex.as_str(), i))
        .collect();
    let all: Vec<&DraftRecord> = draft.records.iter().chain(delegations.iter()).collect();
    let mut placed: Vec<&DraftRecord> = Vec::with_capacity(all.len());
    for rec in all {
        if check_one(rec, &apexes, model, syntax, diag) {
            placed.push(rec);
        }
    }
    let mut by_name: BTreeMap<&str, Vec<&DraftRecord>> = BTreeMap::new();
    for rec in &placed {
        by_name.entry(rec.name.as_str()).or_default().push(rec);
    }
    let domains: HashMap<String, usize> = draft
        .domain_bindings
        .iter()
        .map(|b| (normalize_name(&b.name), b.line))
        .collect();
    let dc_names: HashMap<String, usize> = draft
        .dc_records
        .iter()
        .map(|d| (normalize_name(&d.name), d.line))
        .collect();
    let mut ok = true;
    for (name, recs) in &by_name {
        ok &= check_name(name, recs, &apexes, &domains, &dc_names, syntax, diag);
    }
    ok &= check_delegations(&by_name, &domains, syntax, diag);
    if !ok {
        return;
    }
    let mut records: Vec<StaticRecord> = placed
        .iter()
        .map(|r| StaticRecord {
            name: r.name.clone(),
            ttl: r.ttl,
            data: r.data.clone(),
        })
        .collect();
    sort_records(&mut records);
    model.records = records;
}

/// How a record names itself in messages: `add dns addRec www` or
/// `[[record]] www.example.com A`.
fn what(rec: &DraftRecord) -> &str {
    &rec.context
}

fn type_word(data: &RecordData) -> &'static str {
    data.type_name()
}

/// Checks what one record says on its own; false when it is left out.
fn check_one(
    rec: &DraftRecord,
    apexes: &HashMap<&str, ZoneId>,
    model: &Model,
    syntax: Syntax,
    diag: &mut Diag,
) -> bool {
    let ctx = what(rec);
    if rec.name.is_empty() {
        diag.error(
            rec.line,
            format!(
                "{ctx}: the root name \".\" is not in a zone Sextant serves: records at the root are root hints, the data of a resolver, not of an authoritative server (`sextant import` leaves them out); remove this line"
            ),
        );
        return false;
    }
    if let Err(e) = check_domain(&rec.name) {
        diag.error(rec.line, format!("{ctx}: {e}"));
        return false;
    }
    let mut good = true;
    match &rec.data {
        RecordData::Cname(t) | RecordData::Ns(t) => good &= target(rec, t, diag),
        RecordData::Mx { exchange, .. } => good &= target(rec, exchange, diag),
        RecordData::Srv { target: t, .. } => good &= target(rec, t, diag),
        RecordData::Txt(strings) => {
            for s in strings {
                if s.len() > MAX_TXT_STRING {
                    diag.error(
                        rec.line,
                        format!(
                            "{ctx}: a TXT string is {} bytes long; each string may have at most 255 bytes: split it into several quoted strings (resolvers join them)",
                            s.len()
                        ),
                    );
                    good = false;
                }
            }
            let total: usize = strings.iter().map(|s| s.len() + 1).sum();
            if total > 65_000 {
                diag.error(
                    rec.line,
                    format!("{ctx}: the TXT record has {total} bytes of data; a record holds at most 65,535"),
                );
                good = false;
            }
        }
        RecordData::Ds {
            digest_type,
            digest,
            ..
        } => {
            let want = match digest_type {
                1 => Some(20),
                2 | 3 => Some(32),
                4 => Some(48),
                _ => None,
            };
            match want {
                None => {
                    diag.error(
                        rec.line,
                        format!(
                            "{ctx}: digest type {digest_type} is not one of 1 (SHA-1), 2 (SHA-256), 3 (GOST) or 4 (SHA-384); `sextant dnssec ds` prints type 2"
                        ),
                    );
                    good = false;
                }
                Some(n) if digest.len() != n => {
                    diag.error(
                        rec.line,
                        format!(
                            "{ctx}: a digest of type {digest_type} is {n} bytes ({} hex digits); this one is {} bytes",
                            n * 2,
                            digest.len()
                        ),
                    );
                    good = false;
                }
                Some(_) => {}
            }
        }
        RecordData::A(_) | RecordData::Aaaa(_) => {}
    }
    let Some(zone) = zone_of(&rec.name, apexes) else {
        let zones: Vec<String> = model
            .zones
            .iter()
            .map(|z| format!("\"{}\"", z.apex))
            .collect();
        let have = if zones.is_empty() {
            "no zone is defined".to_string()
        } else {
            format!("the zones are {}", zones.join(", "))
        };
        let add = match syntax {
            Syntax::Appliance => {
                "add its zone with \"add dns soaRec\" (or \"add dns zone ... -proxyMode NO\")"
            }
            Syntax::Toml => "add its zone as a [[zone]] table",
        };
        let hint = if rec.name == "root-servers.net" || rec.name.ends_with(".root-servers.net") {
            " (root server addresses are root hints, the data of a resolver, not of an authoritative server; `sextant import` leaves them out)"
        } else {
            ""
        };
        diag.error(
            rec.line,
            format!(
                "{ctx}: \"{}\" is not in a zone Sextant serves ({have}){hint}; {add}, or remove the record",
                rec.name
            ),
        );
        return false;
    };
    if matches!(rec.data, RecordData::Ns(_)) && model.zones[zone].apex == rec.name {
        diag.error(
            rec.line,
            format!(
                "{ctx}: \"{}\" is a zone apex; its name servers are the zone's: give them with ns = [...] in its [[zone]] table",
                rec.name
            ),
        );
        return false;
    }
    good
}

fn target(rec: &DraftRecord, name: &str, diag: &mut Diag) -> bool {
    match check_domain(name) {
        Ok(()) => true,
        Err(e) => {
            diag.error(rec.line, format!("{}: target: {e}", what(rec)));
            false
        }
    }
}

/// The zone of `name`: the longest apex that is a suffix of it.
fn zone_of(name: &str, apexes: &HashMap<&str, ZoneId>) -> Option<ZoneId> {
    let mut rest = name;
    loop {
        if let Some(z) = apexes.get(rest) {
            return Some(*z);
        }
        rest = &rest[rest.find('.')? + 1..];
    }
}

/// The rules between the records of one name and the other objects of it.
fn check_name(
    name: &str,
    recs: &[&DraftRecord],
    apexes: &HashMap<&str, ZoneId>,
    domains: &HashMap<String, usize>,
    dc_names: &HashMap<String, usize>,
    syntax: Syntax,
    diag: &mut Diag,
) -> bool {
    let mut ok = true;
    let gslb_word = match syntax {
        Syntax::Appliance => "a GSLB domain (bind gslb vserver ... -domainName)",
        Syntax::Toml => "a GSLB domain ([[vserver]] domain)",
    };
    let cname = recs.iter().find(|r| r.data.rtype() == TYPE_CNAME);
    if let Some(c) = cname {
        if apexes.contains_key(name) {
            diag.error(
                c.line,
                format!(
                    "{}: \"{name}\" is a zone apex, which owns the zone's SOA and NS records; a CNAME cannot share its name with other data (RFC 1034 §3.6.2)",
                    what(c)
                ),
            );
            ok = false;
        }
        for other in recs.iter().filter(|r| !std::ptr::eq(**r, *c)) {
            diag.error(
                other.line,
                format!(
                    "{}: \"{name}\" has a CNAME (line {}), and a CNAME cannot share its name with other data: here a {} record (RFC 1034 §3.6.2)",
                    what(other),
                    c.line,
                    type_word(&other.data)
                ),
            );
            ok = false;
        }
        if let Some(line) = domains.get(name) {
            diag.error(
                c.line,
                format!(
                    "{}: \"{name}\" is also {gslb_word} on line {line}; a CNAME cannot share its name with other data",
                    what(c)
                ),
            );
            ok = false;
        }
        if let Some(line) = dc_names.get(name) {
            diag.error(
                c.line,
                format!(
                    "{}: \"{name}\" is also a datacenter-mode record on line {line}; a CNAME cannot share its name with other data",
                    what(c)
                ),
            );
            ok = false;
        }
    }
    for rec in recs {
        if !matches!(rec.data.rtype(), TYPE_A | TYPE_AAAA) {
            continue;
        }
        for (other, line) in [
            ("a GSLB domain", domains.get(name)),
            ("a datacenter-mode record", dc_names.get(name)),
        ] {
            if let Some(line) = line {
                diag.error(
                    rec.line,
                    format!(
                        "{}: \"{name}\" is also {other} on line {line}, whose {} answers are computed; remove the static record or the domain",
                        what(rec),
                        type_word(&rec.data)
                    ),
                );
                ok = false;
            }
        }
    }
    // A DS is the parent's record of a zone cut: at a delegation (NS
    // records here) or at the apex of one of our zones below another.
    let delegated = recs.iter().any(|r| r.data.rtype() == TYPE_NS);
    let nested = apexes.contains_key(name)
        && name
            .find('.')
            .is_some_and(|dot| zone_of(&name[dot + 1..], apexes).is_some());
    for rec in recs.iter().filter(|r| r.data.rtype() == TYPE_DS) {
        if !delegated && !nested {
            let (delegate, zone) = match syntax {
                Syntax::Appliance => ("add dns nsRec", "add dns zone"),
                Syntax::Toml => ("a [[record]] of type NS", "a [[zone]]"),
            };
            let why = if apexes.contains_key(name) {
                format!(
                    "\"{name}\" is a zone of ours with no parent zone here, so its DS records are its parent's to serve (give them to the parent's operator or registrar)"
                )
            } else {
                format!(
                    "\"{name}\" is not a delegation: delegate it ({delegate} {name} ...) or serve it as {zone} below its parent"
                )
            };
            diag.error(
                rec.line,
                format!(
                    "{}: a DS record belongs to the parent side of a zone cut; {why}",
                    what(rec)
                ),
            );
            ok = false;
        }
    }
    for (i, rec) in recs.iter().enumerate() {
        if let Some(first) = recs[..i].iter().find(|r| r.data == rec.data) {
            diag.error(
                rec.line,
                format!(
                    "{}: the same {} record of \"{name}\" is already given on line {}",
                    what(rec),
                    type_word(&rec.data),
                    first.line
                ),
            );
            ok = false;
        }
    }
    ok
}

/// Below a delegation only glue addresses may be given; no GSLB domain.
fn check_delegations(
    by_name: &BTreeMap<&str, Vec<&DraftRecord>>,
    domains: &HashMap<String, usize>,
    syntax: Syntax,
    diag: &mut Diag,
) -> bool {
    let cuts: Vec<(&str, usize)> = by_name
        .iter()
        .filter_map(|(name, recs)| {
            recs.iter()
                .find(|r| r.data.rtype() == TYPE_NS)
                .map(|r| (*name, r.line))
        })
        .collect();
    if cuts.is_empty() {
        return true;
    }
    let cut_above = |name: &str, strictly: bool| {
        cuts.iter().copied().find(|(cut, _)| {
            (name == *cut && !strictly)
                || (name.len() > cut.len()
                    && name.ends_with(cut)
                    && name.as_bytes()[name.len() - cut.len() - 1] == b'.')
        })
    };
    let mut ok = true;
    for (name, recs) in by_name {
        for rec in recs {
            let kind = rec.data.rtype();
            if kind == TYPE_NS {
                if let Some((cut, line)) = cut_above(name, true) {
                    diag.error(
                        rec.line,
                        format!(
                            "{}: \"{name}\" is inside the child zone \"{cut}\" delegated on line {line}; its delegations belong in the child zone's servers",
                            what(rec)
                        ),
                    );
                    ok = false;
                }
                continue;
            }
            let glue = matches!(kind, TYPE_A | TYPE_AAAA);
            if let Some((cut, line)) = cut_above(name, false)
                && !(glue && *name != cut)
                && !(kind == TYPE_DS && *name == cut)
            {
                diag.error(
                    rec.line,
                    format!(
                        "{}: \"{name}\" is {} the child zone \"{cut}\" delegated on line {line}, whose own servers answer it; only glue addresses (A/AAAA of name servers below the delegation) may be given there",
                        what(rec),
                        if *name == cut { "the apex of" } else { "inside" }
                    ),
                );
                ok = false;
            }
        }
    }
    let mut sorted: Vec<(&String, &usize)> = domains.iter().collect();
    sorted.sort_by_key(|(_, line)| **line);
    for (name, line) in sorted {
        if let Some((cut, cut_line)) = cut_above(name, false) {
            let what = match syntax {
                Syntax::Appliance => "GSLB domain",
                Syntax::Toml => "[[vserver]] domain",
            };
            diag.error(
                *line,
                format!(
                    "{what} \"{name}\" is inside the child zone \"{cut}\" delegated on line {cut_line}; the child zone's own servers answer it, so Sextant never would: remove the delegation or the domain"
                ),
            );
            ok = false;
        }
    }
    ok
}
