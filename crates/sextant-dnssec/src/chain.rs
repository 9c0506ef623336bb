//! The chain of trust between the zones a node serves: a zone of ours
//! below another (`sub.example.com` under `example.com`) is validated
//! through the DS records its parent serves. Pure: the configuration's
//! model in, the operator's warnings out.

use sextant_core::Model;
use sextant_core::records::RecordData;

use crate::{ds, key};

/// Where the chain of trust breaks between a signed parent zone and a zone
/// of ours below it, each a sentence for `sextant check` and each load:
/// a signed child whose parent has no DS for it (or none that matches a
/// key-signing key of the child), or an unsigned child whose parent has DS
/// records for it. Validating resolvers find such a child's answers bogus.
pub fn chain_breaks(model: &Model) -> Vec<String> {
    let signed = |apex: &str| {
        model
            .dnssec
            .iter()
            .find(|s| model.zones.get(s.zone).is_some_and(|z| z.apex == apex))
    };
    let mut out = Vec::new();
    for zone in model.zones.iter() {
        let apex = zone.apex.as_str();
        let Some(parent) = parent_zone(model, apex) else {
            continue;
        };
        if signed(parent).is_none() {
            continue;
        }
        let ds: Vec<(u8, &[u8])> = model
            .records
            .iter()
            .filter(|r| r.name == apex)
            .filter_map(|r| match &r.data {
                RecordData::Ds {
                    digest_type,
                    digest,
                    ..
                } => Some((*digest_type, digest.as_slice())),
                _ => None,
            })
            .collect();
        match signed(apex) {
            None if !ds.is_empty() => out.push(format!(
                "zone {apex}: the chain of trust breaks at {apex}: its parent zone {parent} has DS records for it, but {apex} is not signed here, so validating resolvers will find its answers bogus; sign {apex} or remove its DS records"
            )),
            None => {}
            Some(_) if ds.is_empty() => out.push(format!(
                "zone {apex}: the chain of trust breaks at {apex}: its parent zone {parent} is signed here but has no DS record for it, so validating resolvers will find {apex}'s answers bogus; add them to the parent (`sextant dnssec ds {apex} --config FILE --format conf` prints them)"
            )),
            Some(child) => {
                let single = child.single_kind();
                let matches = child
                    .keys
                    .iter()
                    .filter(|k| k.is_ksk() || single)
                    .any(|k| {
                        let dnskey = key::dnskey_rdata(k.flags, k.algorithm, &k.public_key);
                        ds.iter().any(|(digest_type, digest)| {
                            ds::rdata(apex, &dnskey, *digest_type)
                                .is_ok_and(|mine| mine.get(4..) == Some(*digest))
                        })
                    });
                let checkable = ds
                    .iter()
                    .all(|(t, _)| matches!(*t, ds::DIGEST_SHA256 | ds::DIGEST_SHA384));
                if checkable && !matches {
                    out.push(format!(
                        "zone {apex}: the chain of trust breaks at {apex}: no DS record of it in its parent zone {parent} matches a key-signing key of {apex}, so validating resolvers will find its answers bogus; replace them with what `sextant dnssec ds {apex} --config FILE --format conf` prints"
                    ));
                }
            }
        }
    }
    out
}

/// The closest zone of `model` strictly above `apex`.
fn parent_zone<'m>(model: &'m Model, apex: &str) -> Option<&'m str> {
    let mut rest = apex;
    while let Some(dot) = rest.find('.') {
        rest = &rest[dot + 1..];
        if let Some(z) = model.zones.iter().find(|z| z.apex == rest) {
            return Some(z.apex.as_str());
        }
    }
    None
}
