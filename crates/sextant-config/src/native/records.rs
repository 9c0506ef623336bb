//! `[[record]]`: a static record of a zone Sextant serves, in the native
//! syntax. One table is one record (an A or AAAA table may list several
//! addresses, as `add dns addRec NAME IP IP` does):
//!
//! ```toml
//! [[record]]
//! name = "ns1.example.com"
//! type = "A"                 # A, AAAA, CNAME, MX, TXT, SRV, NS, DS
//! addresses = ["192.0.2.53"] # A, AAAA
//! ttl = 3600                 # default 3600
//! ```
//!
//! CNAME and NS take `target`; MX `exchange` and `preference`; TXT `text`
//! (a list of strings); SRV `target`, `priority`, `weight` and `port`; DS
//! `key_tag`, `algorithm`, `digest_type` and `digest` (hexadecimal). An NS
//! record delegates a child zone below one of our zones (the apex's own
//! name servers are `ns` of its `[[zone]]`).

use std::net::IpAddr;

use serde::Deserialize;
use sextant_core::RecordData;
use toml::Spanned;

use super::{Element, Native};
use crate::draft::{DEFAULT_RECORD_TTL, DraftRecord, MAX_TTL};
use crate::scalar;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RecordT {
    name: Spanned<String>,
    #[serde(rename = "type")]
    rtype: Spanned<String>,
    ttl: Option<Spanned<i64>>,
    addresses: Option<Spanned<Vec<Spanned<String>>>>,
    target: Option<Spanned<String>>,
    exchange: Option<Spanned<String>>,
    preference: Option<Spanned<i64>>,
    text: Option<Spanned<Vec<Spanned<String>>>>,
    priority: Option<Spanned<i64>>,
    weight: Option<Spanned<i64>>,
    port: Option<Spanned<i64>>,
    key_tag: Option<Spanned<i64>>,
    algorithm: Option<Spanned<i64>>,
    digest_type: Option<Spanned<i64>>,
    digest: Option<Spanned<String>>,
}

/// The keys each type takes besides name, type and ttl.
const KEYS: &[(&str, &[&str])] = &[
    ("A", &["addresses"]),
    ("AAAA", &["addresses"]),
    ("CNAME", &["target"]),
    ("NS", &["target"]),
    ("MX", &["exchange", "preference"]),
    ("TXT", &["text"]),
    ("SRV", &["target", "priority", "weight", "port"]),
    ("DS", &["key_tag", "algorithm", "digest_type", "digest"]),
];

impl Native<'_> {
    pub(super) fn record(&mut self, value: Element<'_>) {
        let Some(r) = self.de::<RecordT>("[[record]]", value) else {
            return;
        };
        let name = scalar::normalize_name(r.name.get_ref());
        let line = self.at(&r.name);
        let ty = r.rtype.get_ref().to_ascii_uppercase();
        let ctx = format!("[[record]] {name} {ty}");
        let Some((_, keys)) = KEYS.iter().find(|(t, _)| *t == ty) else {
            self.error(
                self.at(&r.rtype),
                &ctx,
                format!(
                    "type: expected one of A, AAAA, CNAME, MX, TXT, SRV, NS, DS, found \"{}\"",
                    r.rtype.get_ref()
                ),
            );
            return;
        };
        let given: [(&str, Option<usize>); 12] = [
            ("addresses", r.addresses.as_ref().map(|v| self.at(v))),
            ("target", r.target.as_ref().map(|v| self.at(v))),
            ("exchange", r.exchange.as_ref().map(|v| self.at(v))),
            ("preference", r.preference.as_ref().map(|v| self.at(v))),
            ("text", r.text.as_ref().map(|v| self.at(v))),
            ("priority", r.priority.as_ref().map(|v| self.at(v))),
            ("weight", r.weight.as_ref().map(|v| self.at(v))),
            ("port", r.port.as_ref().map(|v| self.at(v))),
            ("key_tag", r.key_tag.as_ref().map(|v| self.at(v))),
            ("algorithm", r.algorithm.as_ref().map(|v| self.at(v))),
            ("digest_type", r.digest_type.as_ref().map(|v| self.at(v))),
            ("digest", r.digest.as_ref().map(|v| self.at(v))),
        ];
        let mut complete = true;
        for (key, at) in given {
            match (keys.contains(&key), at) {
                (false, Some(at)) => {
                    self.error(
                        at,
                        &ctx,
                        format!(
                            "{key} does not apply to a {ty} record (it takes {})",
                            keys.join(", ")
                        ),
                    );
                }
                (true, None) => {
                    self.error(line, &ctx, format!("{key} is required for a {ty} record"));
                    complete = false;
                }
                _ => {}
            }
        }
        let ttl = r
            .ttl
            .as_ref()
            .and_then(|t| self.int(&ctx, "ttl", t, 0, MAX_TTL))
            .map_or(DEFAULT_RECORD_TTL, |v| v as u32);
        if !complete {
            return;
        }
        let context: std::sync::Arc<str> = ctx.clone().into();
        let push = |n: &mut Self, data: RecordData| {
            n.draft.records.push(DraftRecord {
                name: name.clone(),
                line,
                ttl,
                data,
                context: context.clone(),
            });
        };
        let name_of = |s: &Option<Spanned<String>>| {
            s.as_ref()
                .map(|t| scalar::normalize_name(t.get_ref()))
                .unwrap_or_default()
        };
        let u16_of = |n: &mut Self, key: &str, v: &Option<Spanned<i64>>| {
            v.as_ref()
                .and_then(|v| n.int(&ctx, key, v, 0, 65535))
                .map(|v| v as u16)
        };
        match ty.as_str() {
            "A" | "AAAA" => {
                let v6 = ty == "AAAA";
                let list = r
                    .addresses
                    .as_ref()
                    .map(|l| l.get_ref().as_slice())
                    .unwrap_or(&[]);
                if list.is_empty() {
                    self.error(line, &ctx, "addresses: give at least one address");
                }
                for a in list {
                    match (scalar::ip(a.get_ref()), v6) {
                        (Ok(IpAddr::V4(ip)), false) => push(self, RecordData::A(ip)),
                        (Ok(IpAddr::V6(ip)), true) => push(self, RecordData::Aaaa(ip)),
                        (Ok(_), _) => self.error(
                            self.at(a),
                            &ctx,
                            format!(
                                "addresses: {} is not an {} address; give it in a record of type {}",
                                a.get_ref(),
                                if v6 { "IPv6" } else { "IPv4" },
                                if v6 { "A" } else { "AAAA" }
                            ),
                        ),
                        (Err(e), _) => self.error(self.at(a), &ctx, format!("addresses: {e}")),
                    }
                }
            }
            "CNAME" => push(self, RecordData::Cname(name_of(&r.target))),
            "NS" => push(self, RecordData::Ns(name_of(&r.target))),
            "MX" => {
                if let Some(preference) = u16_of(self, "preference", &r.preference) {
                    let exchange = name_of(&r.exchange);
                    push(
                        self,
                        RecordData::Mx {
                            preference,
                            exchange,
                        },
                    );
                }
            }
            "TXT" => {
                let strings = r
                    .text
                    .as_ref()
                    .map(|l| l.get_ref().iter().map(|s| s.get_ref().clone()).collect())
                    .unwrap_or_default();
                push(self, RecordData::Txt(strings));
            }
            "SRV" => {
                let priority = u16_of(self, "priority", &r.priority);
                let weight = u16_of(self, "weight", &r.weight);
                let port = u16_of(self, "port", &r.port);
                if let (Some(priority), Some(weight), Some(port)) = (priority, weight, port) {
                    let target = name_of(&r.target);
                    push(
                        self,
                        RecordData::Srv {
                            priority,
                            weight,
                            port,
                            target,
                        },
                    );
                }
            }
            "DS" => {
                let key_tag = u16_of(self, "key_tag", &r.key_tag);
                let byte = |n: &mut Self, key: &str, v: &Option<Spanned<i64>>| {
                    v.as_ref()
                        .and_then(|v| n.int(&ctx, key, v, 0, 255))
                        .map(|v| v as u8)
                };
                let algorithm = byte(self, "algorithm", &r.algorithm);
                let digest_type = byte(self, "digest_type", &r.digest_type);
                let digest = r.digest.as_ref().and_then(|d| {
                    match sextant_dnssec::ds::digest_from_hex(d.get_ref()) {
                        Ok(v) => Some(v),
                        Err(e) => {
                            self.error(self.at(d), &ctx, format!("digest: {e}"));
                            None
                        }
                    }
                });
                if let (Some(key_tag), Some(algorithm), Some(digest_type), Some(digest)) =
                    (key_tag, algorithm, digest_type, digest)
                {
                    push(
                        self,
                        RecordData::Ds {
                            key_tag,
                            algorithm,
                            digest_type,
                            digest,
                        },
                    );
                }
            }
            _ => {}
        }
    }
}
