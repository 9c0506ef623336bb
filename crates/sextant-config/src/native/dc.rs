//! `[[dc_record]]` with its `[[dc_record.address]]` tables: the native
//! form of `add gslb dcRecord` and `bind gslb dcRecord` (datacenter mode,
//! seed 002).
//!
//! ```toml
//! [[dc_record]]
//! name = "www.example.com"
//! dc_selection = "dc_based"
//! criterion = "cpu"
//! total_dcs = 2
//! balance = "weighted_round_robin"
//! dc_order = ["fra", "ams"]
//! fail_safe = ["192.0.2.99"]
//!
//! [[dc_record.address]]
//! site = "fra"
//! service = "web-fra"
//! weight = 10
//! hc = "service"
//! ```

use serde::Deserialize;
use sextant_core::Balance;
use sextant_core::dc::MAX_DC_GROUPS;
use toml::Spanned;

use super::{Element, Native};
use crate::draft::{
    DcBinding, DcBound, DcHc, DcSelectionKind, DcTarget, DraftDcAddress, DraftDcRecord, MAX_TTL,
};
use crate::scalar;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DcRecordT {
    name: Spanned<String>,
    ttl: Option<Spanned<i64>>,
    dc_selection: Option<Spanned<String>>,
    criterion: Option<Spanned<String>>,
    vservice_name: Option<Spanned<String>>,
    total_dcs: Option<Spanned<i64>>,
    balance: Option<Spanned<String>>,
    dc_order: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    fail_safe: Vec<Spanned<String>>,
    #[serde(default)]
    address: Vec<Spanned<DcAddressT>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DcAddressT {
    site: Spanned<String>,
    service: Option<Spanned<String>>,
    ip: Option<Spanned<String>>,
    weight: Option<Spanned<i64>>,
    hc: Option<Spanned<String>>,
}

/// The native balance keywords.
const BALANCE: [(&str, Balance); 6] = [
    ("all", Balance::All),
    ("round_robin", Balance::RoundRobin),
    ("weighted_round_robin", Balance::WeightedRoundRobin),
    ("random", Balance::Random),
    ("weighted_random", Balance::WeightedRandom),
    ("closest", Balance::Closest),
];

/// `"a", "b", "c"`: the lower-cased keywords, quoted, for messages.
fn quoted(words: impl Iterator<Item = &'static str>) -> String {
    words
        .map(|w| format!("\"{}\"", w.to_ascii_lowercase()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn selection(text: &str) -> Result<DcSelectionKind, String> {
    DcSelectionKind::parse(text).ok_or_else(|| {
        format!(
            "unknown DC selection \"{text}\"; expected one of {}",
            quoted(DcSelectionKind::ALL.iter().map(|k| k.appliance_word()))
        )
    })
}

fn balance(text: &str) -> Result<Balance, String> {
    BALANCE
        .iter()
        .find(|(w, _)| w.eq_ignore_ascii_case(text))
        .map(|(_, b)| *b)
        .ok_or_else(|| {
            format!(
                "unknown balance method \"{text}\"; expected one of {}",
                quoted(BALANCE.iter().map(|(w, _)| *w))
            )
        })
}

fn hc(text: &str) -> Result<DcHc, String> {
    DcHc::parse(text).ok_or_else(|| {
        format!(
            "expected \"service\", \"site\", \"service_and_site\" or \"none\", found \"{text}\""
        )
    })
}

impl Native<'_> {
    pub(super) fn dc_record(&mut self, value: Element<'_>) {
        let Some(d) = self.de::<DcRecordT>("[[dc_record]]", value) else {
            return;
        };
        let ctx = format!("[[dc_record]] {}", d.name.get_ref());
        let line = self.at(&d.name);
        let mut rec = DraftDcRecord::new(d.name.get_ref().clone(), line);
        if let Some(v) = &d.dc_selection {
            let kind = self.with(&ctx, "dc_selection", v, selection);
            rec.set_selection(kind, self.at(v));
        }
        if let Some(v) = &d.criterion {
            rec.criterion = Some((v.get_ref().clone(), self.at(v)));
        }
        if let Some(v) = &d.vservice_name {
            // Kept when reported, so that its absence is not reported too.
            self.with(&ctx, "vservice_name", v, scalar::check_name);
            rec.vservice_name = Some((v.get_ref().clone(), self.at(v)));
        }
        if let Some(v) = &d.total_dcs
            && let Some(n) = self.int(&ctx, "total_dcs", v, 1, MAX_DC_GROUPS as u64)
        {
            rec.total_dcs = Some((n as u32, self.at(v)));
        }
        if let Some(v) = &d.balance
            && let Some(b) = self.with(&ctx, "balance", v, balance)
        {
            rec.balance = b;
        }
        if let Some(v) = &d.ttl
            && let Some(t) = self.int(&ctx, "ttl", v, 1, MAX_TTL)
        {
            rec.ttl = t as u32;
        }
        if let Some(order) = &d.dc_order {
            if order.get_ref().is_empty() {
                self.error(
                    self.at(order),
                    &ctx,
                    "dc_order is empty; leave it out for the order in which the addresses name their sites",
                );
            } else {
                let order_ctx = format!("{ctx}: dc_order");
                rec.dc_order = Some(
                    order
                        .get_ref()
                        .iter()
                        .map(|s| self.reference(&order_ctx, s))
                        .collect(),
                );
            }
        }
        let own = self.draft.dc_records.len();
        self.draft.dc_records.push(rec);
        let record = self.reference(&ctx, &d.name);
        for v in &d.fail_safe {
            if let Some(ip) = self.ip(&ctx, "fail_safe", v) {
                self.draft.dc_bindings.push(DcBinding {
                    record: record.clone(),
                    of: Some(own),
                    bound: DcBound::FailSafe(ip, self.at(v)),
                });
            }
        }
        for a in &d.address {
            let a = a.get_ref();
            let aline = self.at(&a.site);
            let target = match (&a.service, &a.ip) {
                (Some(_), Some(ip)) => {
                    self.error(
                        self.at(ip),
                        &ctx,
                        "address: give either service or ip, not both (one [[dc_record.address]] table for each address)",
                    );
                    continue;
                }
                (Some(svc), None) => DcTarget::Service(self.reference(&ctx, svc)),
                (None, Some(ip)) => match self.ip(&ctx, "address: ip", ip) {
                    Some(ip) => DcTarget::Ip(ip),
                    None => continue,
                },
                (None, None) => {
                    self.error(
                        aline,
                        &ctx,
                        "address: give service (a [[service]] name) or ip (an address)",
                    );
                    continue;
                }
            };
            let weight = a
                .weight
                .as_ref()
                .and_then(|w| self.int(&ctx, "address: weight", w, 0, 100))
                .unwrap_or(1) as u32;
            let health = a.hc.as_ref().and_then(|v| {
                self.with(&ctx, "address: hc", v, hc)
                    .map(|h| (h, self.at(v)))
            });
            self.draft.dc_bindings.push(DcBinding {
                record: record.clone(),
                of: Some(own),
                bound: DcBound::Address(DraftDcAddress {
                    site: self.reference(&ctx, &a.site),
                    target,
                    weight,
                    hc: health,
                    line: aline,
                }),
            });
        }
    }
}
