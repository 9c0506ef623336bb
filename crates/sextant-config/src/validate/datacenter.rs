//! Datacenter-mode records (`add gslb dcRecord` / `[[dc_record]]`): their
//! names, settings checked against each other, and addresses resolved and
//! grouped per datacenter. A module of its own because it is the largest
//! single part of validation and uses the rest only through the shared
//! helpers (the name indexes, [`Validator::resolve`], [`first_time`]);
//! [`Validator::dc_records`] runs from [`super::build`] after the domains
//! and the local site are known.

use std::collections::hash_map::Entry;
use std::net::IpAddr;

use sextant_core::dc::MAX_DC_GROUPS;
use sextant_core::snapshot::FnvMap;
use sextant_core::{DcAddress, DcGroup, DcHealth, DcRecord, DcSelection, ServiceId, SiteId};

use crate::draft::{
    DcBound, DcHc, DcSelectionKind, DcTarget, Draft, DraftDcAddress, DraftDcRecord, Kind, Ref,
    Syntax,
};
use crate::scalar::{check_domain, normalize_name};

use super::{Index, Validator, first_time, with_ids};

impl Validator<'_> {
    /// A datacenter-mode record as messages name it.
    fn dc_label(&self, name: &str) -> String {
        match self.syntax {
            Syntax::Appliance => format!("dcRecord \"{name}\""),
            Syntax::Toml => format!("[[dc_record]] {name}"),
        }
    }

    /// A keyword (`DC_BASED`, `CPU`) as written in this syntax: as is in the
    /// appliance syntax, a lower-case string in TOML.
    fn dc_word(&self, word: &str) -> String {
        match self.syntax {
            Syntax::Appliance => word.to_string(),
            Syntax::Toml => format!("\"{}\"", word.to_ascii_lowercase()),
        }
    }

    fn dc_words(&self, words: &[&str]) -> String {
        words
            .iter()
            .map(|w| self.dc_word(w))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `-dcSelection DC_BASED` / `dc_selection = "dc_based"`.
    fn dc_selection(&self, kind: DcSelectionKind) -> String {
        let word = self.dc_word(kind.appliance_word());
        match self.syntax {
            Syntax::Appliance => format!("-dcSelection {word}"),
            Syntax::Toml => format!("dc_selection = {word}"),
        }
    }

    /// Per site, the service with each vService name (`-vServiceName`),
    /// reporting a name used twice at one site: a Service Based record
    /// must find one service per datacenter.
    fn vservice_names<'a>(&mut self, draft: &'a Draft) -> FnvMap<(SiteId, &'a str), ServiceId> {
        let mut found: FnvMap<(SiteId, &'a str), ServiceId> = FnvMap::default();
        for (i, d) in with_ids::<ServiceId, _>(&draft.services) {
            let Some((name, line)) = &d.vservice_name else {
                continue;
            };
            let site = self.model.services[i].site;
            if let Err(first) = first_time(&mut found, (site, name.as_str()), i) {
                let key = self.key("-vServiceName", "vservice_name");
                let (this, other) = (
                    &self.model.services[i].name,
                    &self.model.services[first].name,
                );
                let label = match self.syntax {
                    Syntax::Appliance => format!("service \"{this}\""),
                    Syntax::Toml => format!("[[service]] {this}"),
                };
                let first_line = draft.services[first.index()]
                    .vservice_name
                    .as_ref()
                    .map_or(0, |v| v.1);
                let site_name = self.model.sites.get(site).map_or("", |s| s.name.as_str());
                self.diag.error(
                    *line,
                    format!(
                        "{label}: {key} \"{name}\" is already used by service \"{other}\" at site \"{site_name}\" (line {first_line}); a vService name names one service per site"
                    ),
                );
            }
        }
        found
    }

    /// The datacenter-mode records: names, settings checked against each
    /// other, addresses resolved and grouped per datacenter. Runs after
    /// the domains (a name is answered one way) and the local site (always
    /// one of a record's datacenters) are known.
    pub(super) fn dc_records(
        &mut self,
        draft: &Draft,
        sites: &Index<SiteId>,
        services: &Index<ServiceId>,
    ) {
        let vservices = self.vservice_names(draft);
        let mut domains: FnvMap<String, usize> = FnvMap::default();
        for (i, b) in draft.domain_bindings.iter().enumerate() {
            let _ = first_time(&mut domains, normalize_name(&b.name), i);
        }
        // Name → position in the draft.
        let mut index: Index<usize> = Index::default();
        let mut names = Vec::with_capacity(draft.dc_records.len());
        for (i, d) in draft.dc_records.iter().enumerate() {
            let name = normalize_name(&d.name);
            let label = self.dc_label(&name);
            if let Err(e) = check_domain(&name) {
                self.diag.error(d.line, format!("{label}: {e}"));
            }
            match index.entry(name.clone()) {
                Entry::Occupied(first) => {
                    let first = draft.dc_records[*first.get()].line;
                    self.diag.error(
                        d.line,
                        format!(
                            "{label}: this name already has a record, defined on line {first} (names are case-insensitive)"
                        ),
                    );
                }
                Entry::Vacant(slot) => {
                    slot.insert(i);
                }
            }
            if let Some(&b) = domains.get(&name) {
                let b = &draft.domain_bindings[b];
                self.diag.error(
                    d.line,
                    format!(
                        "{label}: \"{name}\" is also a GSLB domain, bound to vserver \"{}\" (line {}); a name is answered either by a vserver or in datacenter mode, not both",
                        b.vserver.name, b.line
                    ),
                );
            }
            names.push(name);
        }

        // Each record's bindings, in binding order.
        let mut bound: Vec<Vec<&DcBound>> = draft.dc_records.iter().map(|_| Vec::new()).collect();
        for b in &draft.dc_bindings {
            let of = match b.of {
                Some(i) => Some(i),
                None => {
                    let r = Ref {
                        name: normalize_name(&b.record.name),
                        ..b.record.clone()
                    };
                    self.resolve(&r, Kind::DcRecord, &index)
                }
            };
            if let Some(list) = of.and_then(|i| bound.get_mut(i)) {
                list.push(&b.bound);
            }
        }
        for (i, d) in draft.dc_records.iter().enumerate() {
            let record = self.dc_record(d, &names[i], &bound[i], sites, services, &vservices);
            self.model.dc_records.push(record);
        }
    }

    /// One datacenter-mode record, from its settings and its bindings.
    fn dc_record(
        &mut self,
        d: &DraftDcRecord,
        name: &str,
        bound: &[&DcBound],
        sites: &Index<SiteId>,
        services: &Index<ServiceId>,
        vservices: &FnvMap<(SiteId, &str), ServiceId>,
    ) -> DcRecord {
        let label = self.dc_label(name);
        let selection = self.dc_record_selection(d, &label);
        let client_based = DcSelectionKind::ClientBased;
        let (kind, sel_line) = (d.selection, d.selection_line.unwrap_or(d.line));
        if let Some((_, line)) = d.total_dcs
            && kind == Some(client_based)
        {
            let key = self.key("-totalDCs", "total_dcs");
            let sel = self.dc_selection(client_based);
            self.diag.warn(
                line.max(sel_line),
                format!("{label}: {key} is accepted but not applied by {sel} (seed 002: it answers the best datacenter for each client); it has no effect"),
            );
        }

        // Addresses and fail-safe records, checked one by one.
        struct Addr<'a> {
            bound: &'a DraftDcAddress,
            site: SiteId,
            ip: IpAddr,
            health: DcHealth,
        }
        let mut entries: Vec<Addr> = Vec::new();
        let mut fail_safe: Vec<IpAddr> = Vec::new();
        let mut fail_safe_lines: FnvMap<IpAddr, usize> = FnvMap::default();
        let mut in_group: FnvMap<(SiteId, IpAddr), usize> = FnvMap::default();
        let mut client_fail_safe_reported: Option<usize> = None;
        for b in bound {
            match b {
                DcBound::FailSafe(ip, line) => {
                    if kind == Some(client_based) && client_fail_safe_reported != Some(*line) {
                        client_fail_safe_reported = Some(*line);
                        let key = self.key("-failSafe", "fail_safe");
                        let sel = self.dc_selection(client_based);
                        self.diag.warn(
                            (*line).max(sel_line),
                            format!(
                                "{label}: fail-safe records ({key}) are accepted but not applied by {sel} (seed 002): with no healthy address the answer is NODATA; they have no effect"
                            ),
                        );
                    }
                    if let Err(first) = first_time(&mut fail_safe_lines, *ip, *line) {
                        self.diag.error(
                            *line,
                            format!(
                                "{label}: fail-safe record {ip} is already bound (line {first})"
                            ),
                        );
                        continue;
                    }
                    fail_safe.push(*ip);
                }
                DcBound::Address(a) => {
                    let Some((site, ip, health)) = self.dc_address(a, sites, services) else {
                        continue;
                    };
                    if let Err(first) = first_time(&mut in_group, (site, ip), a.line) {
                        self.diag.error(
                            a.line,
                            format!(
                                "{}: address {ip} is already in datacenter \"{}\" of this record (line {first})",
                                a.site.context,
                                self.model.sites[site].name
                            ),
                        );
                        continue;
                    }
                    entries.push(Addr {
                        bound: a,
                        site,
                        ip,
                        health,
                    });
                }
            }
        }

        // The datacenters: -dcOrder's, or the addresses' sites in order of
        // first appearance; then the local site if neither names it. Each
        // with the line that made it a datacenter, for the limit.
        let mut groups: Vec<(SiteId, usize)> = Vec::new();
        match &d.dc_order {
            Some(order) => {
                for r in order {
                    let Some(site) = self.resolve(r, Kind::Site, sites) else {
                        continue;
                    };
                    if groups.iter().any(|(s, _)| *s == site) {
                        self.diag.error(
                            r.line,
                            format!("{}: site \"{}\" is listed twice", r.context, r.name),
                        );
                        continue;
                    }
                    groups.push((site, r.line));
                }
                let listed: Vec<&str> = order.iter().map(|r| r.name.as_str()).collect();
                let key = self.key("-dcOrder", "dc_order");
                for e in &entries {
                    if !groups.iter().any(|(s, _)| *s == e.site) {
                        let site = &self.model.sites[e.site].name;
                        self.diag.error(
                            e.bound.line,
                            format!(
                                "{}: site \"{site}\" is not in the record's {key} ({}); list every datacenter of the record there",
                                e.bound.site.context,
                                listed.join(", ")
                            ),
                        );
                    }
                }
            }
            None => {
                for e in &entries {
                    if !groups.iter().any(|(s, _)| *s == e.site) {
                        groups.push((e.site, e.bound.line));
                    }
                }
            }
        }
        if let Some(local) = self.model.local_site
            && !groups.iter().any(|(s, _)| *s == local)
        {
            groups.push((local, d.line));
        }
        if let Some((_, line)) = groups.get(MAX_DC_GROUPS) {
            self.diag.error(
                *line,
                format!(
                    "{label}: {} datacenters; a record has at most {MAX_DC_GROUPS}",
                    groups.len()
                ),
            );
            groups.truncate(MAX_DC_GROUPS);
        }

        // Service Based: the service measured at each datacenter.
        let mut groups: Vec<DcGroup> = groups
            .iter()
            .map(|(site, _)| DcGroup {
                site: *site,
                service: None,
            })
            .collect();
        if let DcSelection::ServiceBased { criterion, service } = &selection {
            let line = d.vservice_name.as_ref().map_or(d.line, |v| v.1);
            let key = self.key("-vServiceName", "vservice_name");
            for g in &mut groups {
                g.service = vservices.get(&(g.site, service.as_str())).copied();
                if g.service.is_none() {
                    let site = &self.model.sites[g.site].name;
                    self.diag.warn(
                        line,
                        format!(
                            "{label}: no service at site \"{site}\" has {key} \"{service}\", so datacenter \"{site}\"'s {} figure cannot be read; it will rank last",
                            criterion.name()
                        ),
                    );
                }
            }
        }

        // Addresses by group, in binding order within a group.
        let mut addresses: Vec<DcAddress> = entries
            .iter()
            .filter_map(|e| {
                let group = groups.iter().position(|g| g.site == e.site)?;
                Some(DcAddress {
                    group: u8::try_from(group).ok()?,
                    ip: e.ip,
                    weight: e.bound.weight,
                    health: e.health,
                })
            })
            .collect();
        addresses.sort_by_key(|a| a.group);

        DcRecord {
            name: name.to_string(),
            ttl: d.ttl,
            selection,
            total_dcs: d.total_dcs.map_or(1, |t| t.0),
            balance: d.balance,
            groups,
            addresses,
            fail_safe,
        }
    }

    /// One address of a record: its site, answer address and health,
    /// checked (`None` when its site or service is not defined, which is
    /// reported).
    fn dc_address(
        &mut self,
        a: &DraftDcAddress,
        sites: &Index<SiteId>,
        services: &Index<ServiceId>,
    ) -> Option<(SiteId, IpAddr, DcHealth)> {
        let ctx = &a.site.context;
        let site = self.resolve(&a.site, Kind::Site, sites);
        let (ip, service) = match &a.target {
            DcTarget::Ip(ip) => (*ip, None),
            DcTarget::Service(r) => {
                let svc = self.resolve(r, Kind::Service, services)?;
                let s = &self.model.services[svc];
                if let Some(site) = site
                    && s.site != site
                {
                    let key = self.key("-siteName", "address: site");
                    let (svc_site, given) =
                        (&self.model.sites[s.site].name, &self.model.sites[site].name);
                    let message = format!(
                        "{ctx}: service \"{}\" belongs to site \"{svc_site}\", not to \"{given}\" ({key})",
                        s.name
                    );
                    self.diag.error(a.line, message);
                }
                (s.answer_ip(), Some(svc))
            }
        };
        let hc = match a.hc {
            Some((hc, line)) => {
                if service.is_none() && matches!(hc, DcHc::Service | DcHc::ServiceAndSite) {
                    let message = match self.syntax {
                        Syntax::Appliance => format!(
                            "-hc {} needs a GSLB service (-serviceName); an -IPAddress entry has none whose health it could follow (use -hc SITE or NONE)",
                            hc.appliance_word()
                        ),
                        Syntax::Toml => format!(
                            "address: hc = \"{}\" needs a GSLB service (service); an ip entry has none whose health it could follow (use hc = \"site\" or \"none\")",
                            hc.appliance_word().to_ascii_lowercase()
                        ),
                    };
                    self.diag.error(line, format!("{ctx}: {message}"));
                }
                hc
            }
            None if service.is_some() => DcHc::Service,
            None => DcHc::None,
        };
        let health = match (hc, service) {
            (DcHc::Service, Some(svc)) => DcHealth::Service(svc),
            (DcHc::ServiceAndSite, Some(svc)) => DcHealth::ServiceAndSite(svc),
            (DcHc::Site, _) => DcHealth::SiteReachable,
            _ => DcHealth::Always,
        };
        Some((site?, ip, health))
    }

    /// A record's DC Selection with its criterion (and vService name),
    /// checked against each other.
    fn dc_record_selection(&mut self, d: &DraftDcRecord, label: &str) -> DcSelection {
        let sel_line = d.selection_line.unwrap_or(d.line);
        // An unknown keyword is reported already.
        let Some(kind) = d.selection else {
            return DcSelection::AllDcRecords;
        };
        let sel = self.dc_selection(kind);
        let crit_key = self.key("-criterion", "criterion");
        let vs_key = self.key("-vServiceName", "vservice_name");
        let criteria = kind.criteria();
        let service = match (&d.vservice_name, kind) {
            (Some((name, _)), DcSelectionKind::ServiceBased) => name.as_str(),
            (None, DcSelectionKind::ServiceBased) => {
                self.diag.error(
                    sel_line,
                    format!(
                        "{label}: {sel} needs {vs_key}: the vService name of the service measured at each datacenter (the same name in every datacenter)"
                    ),
                );
                ""
            }
            (Some((_, line)), _) => {
                let service_based = self.dc_selection(DcSelectionKind::ServiceBased);
                self.diag.error(
                    *line,
                    format!(
                        "{label}: {vs_key} applies only to {service_based} (this record's DC selection is {})",
                        self.dc_word(kind.appliance_word())
                    ),
                );
                ""
            }
            (None, _) => "",
        };
        let Some((word, line)) = &d.criterion else {
            if !criteria.is_empty() {
                self.diag.error(
                    sel_line,
                    format!(
                        "{label}: {sel} needs {crit_key}, one of {}",
                        self.dc_words(&criteria)
                    ),
                );
            }
            return DcSelection::AllDcRecords;
        };
        if criteria.is_empty() {
            let default = if d.selection_line.is_none() {
                " (the default)"
            } else {
                ""
            };
            self.diag.error(
                *line,
                format!(
                    "{label}: {crit_key} does not apply to {sel}{default}, which keeps the datacenters in their configured order; remove it, or choose another DC selection"
                ),
            );
            return DcSelection::AllDcRecords;
        }
        if let Some(selection) = kind.with_criterion(word, service) {
            return selection;
        }
        let others: Vec<String> = DcSelectionKind::ALL
            .into_iter()
            .filter(|k| *k != kind && k.with_criterion(word, "").is_some())
            .map(|k| self.dc_selection(k))
            .collect();
        let elsewhere = if others.is_empty() {
            String::new()
        } else {
            format!(
                " ({} is a criterion of {})",
                self.dc_word(word),
                others.join(" and ")
            )
        };
        self.diag.error(
            *line,
            format!(
                "{label}: {crit_key} {} is not a criterion of {sel}, whose criteria are {}{elsewhere}",
                self.dc_word(word),
                self.dc_words(&criteria)
            ),
        );
        DcSelection::AllDcRecords
    }
}
