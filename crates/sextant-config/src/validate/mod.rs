//! Turns a [`Draft`] into a [`Model`]: resolves every reference by name
//! (case-insensitively, as the appliance does), and checks the rules that
//! span several objects. Shared by both syntaxes, so they accept exactly the
//! same configurations.
//!
//! Every problem is recorded and checking goes on; when anything was
//! recorded the returned model is incomplete and the caller discards it.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use sextant_core::snapshot::FnvMap;

use sextant_core::{
    AdminKind, Binding, Domain, HttpUrl, IdVec, Idx, LoadKind, LoadSource, MetricSelector, Model,
    MonitorId, MonitorKind, PrometheusSource, RpcNode, Service, ServiceId, Site, SiteId, VServer,
    VServerId, Zone,
};

use crate::draft::{
    DEFAULT_LOAD_INTERVAL, Draft, DraftService, Kind, LoadSourceKind, MAX_BACKUP_PARENTS,
    MAX_LOAD_INTERVAL, MAX_MONITOR_TIME, MAX_TTL, MIN_LOAD_INTERVAL, Ref, Syntax, default_soa,
};
use crate::duration;
use crate::error::Diag;
use crate::files::FileAccess;
use crate::scalar::{check_domain, check_name, normalize_name};

mod datacenter;

/// Builds the model from `draft`, recording every problem in `diag`; the
/// files it names are read as `files` allows.
pub(crate) fn build(
    mut draft: Draft,
    syntax: Syntax,
    files: &FileAccess,
    diag: &mut Diag,
) -> Model {
    let mut v = Validator {
        syntax,
        diag,
        model: Model::default(),
    };
    v.params(&draft);
    v.listeners(&draft);
    let sites = v.sites(&draft);
    crate::builtin_monitors::add_bound(&mut draft);
    let monitors = v.monitors(&draft);
    let services = v.services(&mut draft, &sites);
    v.monitor_bindings(&draft, &services, &monitors);
    let vservers = v.vservers(&draft);
    v.service_bindings(&draft, &vservers, &services);
    v.config_disabled(&draft, &services, &vservers);
    v.domains(&draft, &vservers);
    let delegations = v.zones(&draft);
    crate::dnssec::build(&draft.dnssec, files, v.diag, &mut v.model);
    v.local_site(&draft, &sites);
    v.dc_records(&draft, &sites, &services);
    v.rpc_nodes(&draft);
    crate::dns_policy::build(&draft.dns, syntax, v.diag, &mut v.model);
    crate::locations::build(&draft.locations, files, v.diag, &mut v.model);
    crate::vrrp::build(&draft.vrrp, syntax, v.diag, &mut v.model);
    crate::dns_settings::build(&draft.dns_server, v.diag, &mut v.model);
    crate::static_records::build(&draft, delegations, syntax, v.diag, &mut v.model);
    v.health_sources(&draft);
    v.model
}

/// Records `value` for `key` unless the key was seen before; then it is the
/// first value, for "already ... (line N)" messages.
fn first_time<K: std::hash::Hash + Eq, V: Copy>(
    seen: &mut FnvMap<K, V>,
    key: K,
    value: V,
) -> Result<(), V> {
    match seen.entry(key) {
        Entry::Occupied(first) => Err(*first.get()),
        Entry::Vacant(slot) => {
            slot.insert(value);
            Ok(())
        }
    }
}

/// Lower-cased name → id, for lookups by name.
type Index<I> = FnvMap<String, I>;

/// The draft's items with the ids their model entries get: the model's
/// tables are built in draft order.
fn with_ids<I: Idx, T>(items: &[T]) -> impl Iterator<Item = (I, &T)> {
    items.iter().enumerate().map(|(i, t)| (I::from_index(i), t))
}

/// Looks a name up case-insensitively in an index of lower-case names,
/// lowering short names on the stack (this runs once per reference, and a
/// file of 100,000 services has several hundred thousand).
fn lookup<I: Copy>(index: &Index<I>, name: &str) -> Option<I> {
    if !name.bytes().any(|b| b.is_ascii_uppercase()) {
        return index.get(name).copied();
    }
    let mut buf = [0u8; 128];
    match buf.get_mut(..name.len()) {
        Some(lower) => {
            lower.copy_from_slice(name.as_bytes());
            lower.make_ascii_lowercase();
            // Lowering ASCII letters keeps the bytes valid UTF-8.
            std::str::from_utf8(lower)
                .ok()
                .and_then(|l| index.get(l).copied())
        }
        None => index.get(&name.to_ascii_lowercase()).copied(),
    }
}

struct Validator<'d> {
    syntax: Syntax,
    diag: &'d mut Diag,
    model: Model,
}

impl Validator<'_> {
    /// The name of a setting in this syntax, for messages.
    fn key(&self, appliance: &'static str, toml: &'static str) -> &'static str {
        match self.syntax {
            Syntax::Appliance => appliance,
            Syntax::Toml => toml,
        }
    }

    /// Indexes names, reporting duplicates (names are case-insensitive).
    /// The `i`th item gets id `i`: the model's table is built in the same
    /// order.
    fn index<'a, I: Idx>(
        &mut self,
        kind: Kind,
        items: impl Iterator<Item = (&'a str, usize)>,
    ) -> Index<I> {
        let mut index = Index::<I>::default();
        let mut lines = Vec::new();
        for (i, (name, line)) in items.enumerate() {
            lines.push(line);
            if let Err(e) = check_name(name) {
                self.diag.error(line, format!("{} name: {e}", kind.noun()));
            }
            match index.entry(name.to_ascii_lowercase()) {
                Entry::Occupied(first) => {
                    let first = lines[first.get().index()];
                    self.diag.error(
                        line,
                        format!(
                            "{} \"{name}\" is already defined on line {first} (names are case-insensitive)",
                            kind.noun()
                        ),
                    );
                }
                Entry::Vacant(slot) => {
                    slot.insert(I::from_index(i));
                }
            }
        }
        index
    }

    /// Looks `r` up in `index`, reporting it if it is not defined.
    fn resolve<I: Copy>(&mut self, r: &Ref, kind: Kind, index: &Index<I>) -> Option<I> {
        let found = lookup(index, &r.name);
        if found.is_none() {
            let hint = self.syntax.how_to_define(kind, &r.name);
            self.diag.error(
                r.line,
                format!(
                    "{}: {} \"{}\" is not defined ({hint})",
                    r.context,
                    kind.noun(),
                    r.name
                ),
            );
        }
        found
    }

    fn params(&mut self, draft: &Draft) {
        let p = &draft.params;
        let too_long: Vec<_> = sextant_core::LdnsProbe::ALL
            .into_iter()
            .filter(|k| p.ldns_monitor(*k).timeout >= p.ldns_monitor(*k).interval)
            .collect();
        let all_alike = too_long.len() == 3
            && [&p.ldns_dns, &p.ldns_tcp]
                .iter()
                .all(|m| (m.interval, m.timeout) == (p.ldns_ping.interval, p.ldns_ping.timeout));
        if all_alike {
            // As the GSLB parameters set them, for all three monitors at once.
            let (t, i) = (
                self.key("-ldnsProbeTimeout", "ldns_probe_timeout"),
                self.key("-ldnsProbeInterval", "ldns_probe_interval"),
            );
            self.diag.error(
                draft.params_line,
                format!(
                    "GSLB parameters: {t} ({}) must be shorter than {i} ({})",
                    duration::format(p.ldns_ping.timeout),
                    duration::format(p.ldns_ping.interval)
                ),
            );
        }
        for kind in too_long.into_iter().filter(|_| !all_alike) {
            let m = p.ldns_monitor(kind);
            {
                let (t, i) = (
                    self.key("-resptimeout", "response_timeout"),
                    self.key("-interval", "interval"),
                );
                self.diag.error(
                    draft.params_line,
                    format!(
                        "LDNS monitor {}: {t} ({}) must be shorter than {i} ({})",
                        kind.monitor_name(),
                        duration::format(m.timeout),
                        duration::format(m.interval)
                    ),
                );
            }
        }
        if p.mep_port == p.mep_secure_port {
            let (a, b) = (
                self.key("-mepPort", "mep_port"),
                self.key("-mepSecurePort", "mep_secure_port"),
            );
            self.diag.error(
                draft.params_line,
                format!(
                    "GSLB parameters: {a} and {b} are both {}; they must differ",
                    p.mep_port
                ),
            );
        }
        self.model.params = p.clone();
    }

    fn listeners(&mut self, draft: &Draft) {
        for addr in &draft.dns_listen {
            if !self.model.dns_listen.contains(addr) {
                self.model.dns_listen.push(*addr);
            }
        }
        self.model.api_listen = draft.api_listen;
        self.model.api_token_file = draft.api_token_file.clone();
    }

    fn sites(&mut self, draft: &Draft) -> Index<SiteId> {
        let index = self.index(
            Kind::Site,
            draft.sites.iter().map(|s| (s.name.as_str(), s.line)),
        );
        for d in &draft.sites {
            let mut site = Site::new(d.name.clone(), d.ip);
            site.public_ip = d.public_ip;
            site.metric_exchange = d.metric_exchange;
            site.trigger_monitor = d.trigger_monitor;
            site.password = d.password.clone();
            self.model.sites.push(site);
        }

        // Parents: defined, not the site itself, and not children themselves
        // (the topology has two levels).
        for (i, d) in with_ids(&draft.sites) {
            let Some(r) = &d.parent else { continue };
            let Some(p) = self.resolve(r, Kind::Site, &index) else {
                continue;
            };
            if p == i {
                self.diag.error(
                    r.line,
                    format!(
                        "{}: site \"{}\" cannot be its own parent",
                        r.context, d.name
                    ),
                );
            } else {
                self.model.sites[i].parent = Some(p);
            }
        }
        for (i, d) in with_ids(&draft.sites) {
            let (Some(p), Some(r)) = (self.model.sites[i].parent, &d.parent) else {
                continue;
            };
            let parent = &draft.sites[p.index()];
            if let Some(grand) = &parent.parent {
                self.diag.error(
                    r.line,
                    format!(
                        "{}: parent site \"{}\" is itself a child (of \"{}\"); parent-child topologies have two levels, so a parent site must not have a parent",
                        r.context, parent.name, grand.name
                    ),
                );
            }
        }

        // Exchange switches: on by default for parents, always off on
        // children (only parents exchange RTT and persistence sessions).
        for (i, d) in with_ids::<SiteId, _>(&draft.sites) {
            let child = d.parent.is_some();
            let nw = self.child_switch(
                d,
                child,
                d.nw_metric_exchange,
                self.key("-nwMetricExchange", "nw_metric_exchange"),
                "RTT metric exchange",
            );
            let sess = self.child_switch(
                d,
                child,
                d.session_exchange,
                self.key("-sessionExchange", "session_exchange"),
                "session exchange",
            );
            self.model.sites[i].nw_metric_exchange = nw;
            self.model.sites[i].session_exchange = sess;
        }

        self.backup_parents(draft, &index);
        index
    }

    fn child_switch(
        &mut self,
        d: &crate::draft::DraftSite,
        child: bool,
        explicit: Option<(bool, usize)>,
        key: &str,
        what: &str,
    ) -> bool {
        match explicit {
            Some((true, line)) if child => {
                let parent = d.parent.as_ref().map(|r| r.name.as_str()).unwrap_or("");
                self.diag.error(
                    line,
                    format!(
                        "site \"{}\" is a child of \"{parent}\", and {what} is always off on child sites; remove {key}",
                        d.name
                    ),
                );
                false
            }
            Some((on, _)) => on,
            None => !child,
        }
    }

    /// Records an error at `line`, and at `column` when it is known.
    fn error_at(&mut self, line: usize, column: Option<usize>, message: String) {
        match column {
            Some(c) => self.diag.error_at(line, c, message),
            None => self.diag.error(line, message),
        }
    }

    /// Backup parent lists: only on parent sites, at most 5, each a parent
    /// site of the file, not the site itself, none twice. In the appliance
    /// syntax each must also be added on an earlier line than the list
    /// (seed 001: "You must first add all the sites and then configure the
    /// site as a backup parent"). Errors about one name point at its column.
    fn backup_parents(&mut self, draft: &Draft, index: &Index<SiteId>) {
        for (i, d) in with_ids(&draft.sites) {
            let Some(first) = d.backup_parents.first() else {
                continue;
            };
            let line = first.site.line;
            let ctx = first.site.context.clone();
            let key = self.key("-backupParentlist", "backup_parents");
            if let Some(parent) = &d.parent {
                self.diag.error(
                    line,
                    format!(
                        "{ctx}: site \"{}\" is a child of \"{}\"; only parent sites have backup parents (remove {key})",
                        d.name, parent.name
                    ),
                );
                continue;
            }
            if let Some(extra) = d.backup_parents.get(MAX_BACKUP_PARENTS) {
                self.error_at(
                    line,
                    extra.column,
                    format!(
                        "{ctx}: {} backup parents given; at most {MAX_BACKUP_PARENTS} are allowed",
                        d.backup_parents.len()
                    ),
                );
            }
            let mut resolved: Vec<SiteId> = Vec::new();
            for bp in &d.backup_parents {
                let r = &bp.site;
                let Some(b) = index.get(&r.name.to_ascii_lowercase()).copied() else {
                    let message = match self.syntax {
                        Syntax::Appliance => format!(
                            "{}: backup parent \"{}\" is not a site yet: add it with \"add gslb site {} IP\" before this line (add all the sites first, then set the backup parents)",
                            r.context, r.name, r.name
                        ),
                        Syntax::Toml => format!(
                            "{}: backup parent \"{}\" is not defined ({}); a backup parent must be a parent site of this file",
                            r.context,
                            r.name,
                            self.syntax.how_to_define(Kind::Site, &r.name)
                        ),
                    };
                    self.error_at(r.line, bp.column, message);
                    continue;
                };
                let backup = &draft.sites[b.index()];
                if b == i {
                    self.error_at(
                        r.line,
                        bp.column,
                        format!(
                            "{}: site \"{}\" cannot be its own backup parent",
                            r.context, d.name
                        ),
                    );
                } else if self.syntax == Syntax::Appliance && backup.line >= r.line {
                    self.error_at(
                        r.line,
                        bp.column,
                        format!(
                            "{}: backup parent \"{}\" is not a site yet: it is added on line {}, after this line; move that \"add gslb site\" line above this one (add all the sites first, then set the backup parents)",
                            r.context, r.name, backup.line
                        ),
                    );
                } else if let Some(p) = &backup.parent {
                    self.error_at(
                        r.line,
                        bp.column,
                        format!(
                            "{}: backup parent \"{}\" is a child site (of \"{}\"); only parent sites can be backup parents",
                            r.context, backup.name, p.name
                        ),
                    );
                } else if resolved.contains(&b) {
                    self.error_at(
                        r.line,
                        bp.column,
                        format!(
                            "{}: backup parent \"{}\" is listed twice",
                            r.context, backup.name
                        ),
                    );
                } else {
                    resolved.push(b);
                }
            }
            self.model.sites[i].backup_parents = resolved;
        }
    }

    fn monitors(&mut self, draft: &Draft) -> Index<MonitorId> {
        let index = self.index(
            Kind::Monitor,
            draft
                .monitors
                .iter()
                .map(|m| (m.monitor.name.as_str(), m.line)),
        );
        for d in &draft.monitors {
            let mut m = d.monitor.clone();
            let (iv, rt) = (
                self.key("-interval", "interval"),
                self.key("-resptimeout", "response_timeout"),
            );
            if m.interval.is_zero() {
                self.diag.error(
                    d.timing_line,
                    format!("monitor \"{}\": {iv} must be greater than zero", m.name),
                );
            } else if m.interval > MAX_MONITOR_TIME {
                self.diag.error(
                    d.timing_line,
                    format!(
                        "monitor \"{}\": {iv} ({}) is longer than the appliance's limit of 20940 minutes",
                        m.name,
                        duration::format(m.interval)
                    ),
                );
            } else if m.response_timeout.is_zero() {
                self.diag.error(
                    d.timing_line,
                    format!("monitor \"{}\": {rt} must be greater than zero", m.name),
                );
            } else if m.response_timeout >= m.interval {
                self.diag.error(
                    d.timing_line,
                    format!(
                        "monitor \"{}\": {rt} ({}) must be shorter than {iv} ({}), as on the appliance",
                        m.name,
                        duration::format(m.response_timeout),
                        duration::format(m.interval)
                    ),
                );
            }
            if let MonitorKind::Dns(dns) = &mut m.kind {
                dns.query = normalize_name(&dns.query);
                // `-query .` asks for the root, which the probe writes as
                // the empty name.
                if dns.query == "." {
                    dns.query.clear();
                }
                // An empty query was reported as missing by the front end.
                let checked = match dns.query.is_empty() {
                    true => Ok(()),
                    false => check_domain(&dns.query),
                };
                if let Err(e) = checked {
                    let q = self.key("-query", "query");
                    self.diag
                        .error(d.line, format!("monitor \"{}\": {q}: {e}", m.name));
                }
            }
            self.model.monitors.push(m);
        }
        index
    }

    /// The services, their names moved out of the draft (nothing after this
    /// reads them there).
    fn services(&mut self, draft: &mut Draft, sites: &Index<SiteId>) -> Index<ServiceId> {
        let index = self.index(
            Kind::Service,
            draft.services.iter().map(|s| (s.name.as_str(), s.line)),
        );
        self.model.services.reserve_exact(draft.services.len());
        // Metric exchange matches a site's report to a service by address
        // and port; CNAME services have no address, so their ports tell
        // them apart within a site.
        let mut cname_ports: FnvMap<(String, u16), usize> = FnvMap::default();
        for d in draft.services.iter().filter(|d| d.cname.is_some()) {
            let site = d
                .site
                .as_ref()
                .map(|r| r.name.to_ascii_lowercase())
                .unwrap_or_default();
            if let Err(first) = first_time(&mut cname_ports, (site, d.port), d.line) {
                self.diag.error(
                    d.line,
                    format!(
                        "add gslb service {}: another CNAME service of this site has port {} (line {first}); metric exchange tells a site's services apart by address and port, and CNAME services have no address: give each its own port (add gslb service NAME PROTOCOL PORT -cnameEntry ...)",
                        d.name, d.port
                    ),
                );
            }
        }
        for d in &mut draft.services {
            // A service without a valid site is already an error: the
            // model is discarded, so any site will do.
            let site = d
                .site
                .as_ref()
                .and_then(|r| self.resolve(r, Kind::Site, sites))
                .unwrap_or(SiteId::new(0));
            let load_source = self.load_source(d);
            self.model.services.push(Service {
                name: std::mem::take(&mut d.name),
                ip: d.ip,
                port: d.port,
                protocol: d.protocol,
                site,
                public_ip: d.public_ip,
                public_port: d.public_port,
                max_clients: d.max_clients,
                monitors: Vec::new(),
                monitor_weights: Vec::new(),
                mon_threshold: d.mon_threshold,
                load_source,
                cname: d.cname.take(),
                health_monitor: d.health_monitor.is_none_or(|(yes, _)| yes),
            });
        }
        index
    }

    /// The load source of a service, checked: the Prometheus settings only
    /// with a Prometheus source, which needs a URL and at least one metric.
    fn load_source(&mut self, d: &DraftService) -> LoadSource {
        let Some(load) = d.load.as_deref() else {
            return LoadSource::Monitors;
        };
        let kind = load
            .source
            .map(|(k, _)| k)
            .unwrap_or(LoadSourceKind::Monitors);
        let defaults = load.source.is_none()
            && load.url.is_none()
            && load.interval.is_none()
            && load.metrics.iter().all(Option::is_none);
        if defaults {
            // The common case: nothing to check, nothing to format.
            return LoadSource::Monitors;
        }
        let ctx = match self.syntax {
            Syntax::Appliance => format!("service \"{}\"", d.name),
            Syntax::Toml => format!("[[service]] {}", d.name),
        };
        let source_key = self.key("-loadSource", "load: source");
        let metric_keys = self.metric_keys();
        if kind != LoadSourceKind::Prometheus {
            let settings = [
                (
                    self.key("-loadURL", "load: url"),
                    load.url.as_ref().map(|u| u.1),
                ),
                (
                    self.key("-loadInterval", "load: interval"),
                    load.interval.map(|i| i.1),
                ),
            ]
            .into_iter()
            .chain(
                metric_keys
                    .iter()
                    .zip(&load.metrics)
                    .map(|(k, m)| (*k, m.as_ref().map(|m| m.1))),
            );
            let which = match self.syntax {
                Syntax::Appliance => kind.appliance_word().to_string(),
                Syntax::Toml => format!("\"{}\"", kind.appliance_word().to_ascii_lowercase()),
            };
            let want = match self.syntax {
                Syntax::Appliance => "-loadSource PROMETHEUS",
                Syntax::Toml => "source = \"prometheus\"",
            };
            for (key, line) in settings {
                if let Some(line) = line {
                    self.diag.error(
                        line,
                        format!(
                            "{ctx}: {key} applies only to {want} (this service's {source_key} is {which})"
                        ),
                    );
                }
            }
            return match kind {
                LoadSourceKind::Push => LoadSource::Push,
                _ => LoadSource::Monitors,
            };
        }
        let source_line = load.source.map(|(_, l)| l).unwrap_or(d.line);
        let url_key = self.key("-loadURL", "load: url");
        let url = match &load.url {
            Some((text, line)) => match HttpUrl::parse(text) {
                Ok(_) => text.trim().to_string(),
                Err(e) => {
                    self.diag.error(*line, format!("{ctx}: {url_key}: {e}"));
                    String::new()
                }
            },
            None => {
                self.diag.error(
                    source_line,
                    format!(
                        "{ctx}: a Prometheus load source needs {url_key} (http://HOST:PORT/PATH of the exporter)"
                    ),
                );
                String::new()
            }
        };
        let interval = match load.interval {
            Some((d, line)) if d < MIN_LOAD_INTERVAL || d > MAX_LOAD_INTERVAL => {
                let key = self.key("-loadInterval", "load: interval");
                self.diag.error(
                    line,
                    format!(
                        "{ctx}: {key}: {} is out of range; expected {} to {}",
                        duration::format(d),
                        duration::format(MIN_LOAD_INTERVAL),
                        duration::format(MAX_LOAD_INTERVAL)
                    ),
                );
                DEFAULT_LOAD_INTERVAL
            }
            Some((d, _)) => d,
            None => DEFAULT_LOAD_INTERVAL,
        };
        let mut metrics: [Option<String>; LoadKind::EVERY.len()] = Default::default();
        for (i, m) in load.metrics.iter().enumerate() {
            let Some((text, line)) = m else { continue };
            match MetricSelector::parse(text) {
                Ok(sel) => metrics[i] = Some(sel.to_string()),
                Err(e) => {
                    let hint = match self.syntax {
                        Syntax::Appliance if !text.contains('"') && text.contains('{') => {
                            " (label values need double quotes; quote the whole selector in single quotes: '...{label=\"value\"}')"
                        }
                        _ => "",
                    };
                    self.diag
                        .error(*line, format!("{ctx}: {}: {e}{hint}", metric_keys[i]));
                }
            }
        }
        if load.metrics.iter().all(Option::is_none) {
            self.diag.error(
                source_line,
                format!(
                    "{ctx}: a Prometheus load source needs at least one metric: {}",
                    metric_keys.join(", ")
                ),
            );
        }
        LoadSource::Prometheus(Box::new(PrometheusSource {
            url,
            interval,
            metrics,
        }))
    }

    /// The setting naming each figure's metric, in this syntax, indexed
    /// like [`LoadKind::EVERY`].
    fn metric_keys(&self) -> [&'static str; LoadKind::EVERY.len()] {
        LoadKind::EVERY.map(|k| match (self.syntax, k) {
            (Syntax::Appliance, LoadKind::Connections) => "-connectionsMetric",
            (Syntax::Appliance, LoadKind::ResponseTime) => "-responseTimeMetric",
            (Syntax::Appliance, LoadKind::Bandwidth) => "-bandwidthMetric",
            (Syntax::Appliance, LoadKind::Packets) => "-packetsMetric",
            (Syntax::Appliance, LoadKind::CustomLoad) => "-customLoadMetric",
            (Syntax::Toml, LoadKind::Connections) => "load: connections",
            (Syntax::Toml, LoadKind::ResponseTime) => "load: response_time",
            (Syntax::Toml, LoadKind::Bandwidth) => "load: bandwidth",
            (Syntax::Toml, LoadKind::Packets) => "load: packets",
            (Syntax::Toml, LoadKind::CustomLoad) => "load: custom_load",
            (Syntax::Appliance, LoadKind::Cpu) => "-cpuMetric",
            (Syntax::Appliance, LoadKind::Memory) => "-memoryMetric",
            (Syntax::Appliance, LoadKind::Requests) => "-requestsMetric",
            (Syntax::Appliance, LoadKind::NewSessions) => "-newSessionsMetric",
            (Syntax::Appliance, LoadKind::HealthyBackends) => "-healthyBackendsMetric",
            (Syntax::Toml, LoadKind::Cpu) => "load: cpu",
            (Syntax::Toml, LoadKind::Memory) => "load: memory",
            (Syntax::Toml, LoadKind::Requests) => "load: requests",
            (Syntax::Toml, LoadKind::NewSessions) => "load: new_sessions",
            (Syntax::Toml, LoadKind::HealthyBackends) => "load: healthy_backends",
        })
    }

    /// Metric exchange credentials, one per IP (the front ends merged or
    /// rejected repeats).
    fn rpc_nodes(&mut self, draft: &Draft) {
        for n in &draft.rpc_nodes {
            self.model.rpc_nodes.push(RpcNode {
                ip: n.ip,
                password: n.password.clone(),
                secure: n.secure.unwrap_or(false),
                source_ip: n.source_ip,
            });
        }
    }

    fn monitor_bindings(
        &mut self,
        draft: &Draft,
        services: &Index<ServiceId>,
        monitors: &Index<MonitorId>,
    ) {
        let mut seen: FnvMap<(ServiceId, MonitorId), usize> = FnvMap::default();
        for b in &draft.monitor_bindings {
            let svc = self.resolve(&b.service, Kind::Service, services);
            if lookup(monitors, &b.monitor.name).is_none()
                && let Some(why) = crate::builtin_monitors::unprobed(draft, &b.monitor.name)
            {
                self.diag
                    .error(b.monitor.line, format!("{}: {why}", b.monitor.context));
                continue;
            }
            let mon = self.resolve(&b.monitor, Kind::Monitor, monitors);
            let (Some(svc), Some(mon)) = (svc, mon) else {
                continue;
            };
            if let Err(first) = first_time(&mut seen, (svc, mon), b.monitor.line) {
                self.diag.error(
                    b.monitor.line,
                    format!(
                        "{}: monitor \"{}\" is already bound to service \"{}\" (line {first})",
                        b.monitor.context, b.monitor.name, b.service.name
                    ),
                );
                continue;
            }
            if self.model.services[svc].cname.is_some()
                && self.model.monitors[mon].dest_ip.is_none()
            {
                self.diag.error(
                    b.monitor.line,
                    format!(
                        "{}: service \"{}\" stands for a name (-cnameEntry) and has no address to probe: give monitor \"{}\" -destIP, or leave the service to metric exchange",
                        b.monitor.context, b.service.name, b.monitor.name
                    ),
                );
                continue;
            }
            self.model.services[svc].monitors.push(mon);
            self.model.services[svc].monitor_weights.push(b.weight);
        }
    }

    fn vservers(&mut self, draft: &Draft) -> Index<VServerId> {
        let index = self.index(
            Kind::VServer,
            draft
                .vservers
                .iter()
                .map(|v| (v.vserver.name.as_str(), v.line)),
        );
        for d in &draft.vservers {
            let mut vs: VServer = d.vserver.clone();
            vs.bindings.clear();
            vs.backup_vserver = None;
            self.model.vservers.push(vs);
        }
        for (i, d) in with_ids(&draft.vservers) {
            let Some(r) = &d.backup_vserver else { continue };
            let Some(b) = self.resolve(r, Kind::VServer, &index) else {
                continue;
            };
            if b == i {
                self.diag.error(
                    r.line,
                    format!(
                        "{}: vserver \"{}\" cannot be its own backup vserver",
                        r.context, d.vserver.name
                    ),
                );
            } else {
                self.model.vservers[i].backup_vserver = Some(b);
            }
        }
        self.backup_cycles(draft);
        index
    }

    /// Reports each cycle of backup vservers once (a backup chain must end).
    fn backup_cycles(&mut self, draft: &Draft) {
        let mut reported: IdVec<VServerId, bool> =
            self.model.vservers.iter().map(|_| false).collect();
        for start in self.model.vservers.ids() {
            let mut chain: Vec<VServerId> = vec![start];
            let mut cur = start;
            while let Some(next) = self.model.vservers[cur].backup_vserver {
                if let Some(pos) = chain.iter().position(|&c| c == next) {
                    let cycle = &chain[pos..];
                    if cycle.iter().all(|&c| !reported[c]) {
                        for &c in cycle {
                            reported[c] = true;
                        }
                        let first = cycle.iter().copied().min().unwrap_or(next);
                        let names: Vec<String> = cycle
                            .iter()
                            .chain(std::iter::once(&next))
                            .map(|&c| format!("\"{}\"", self.model.vservers[c].name))
                            .collect();
                        let first = &draft.vservers[first.index()];
                        let line = first.backup_vserver.as_ref().map_or(first.line, |r| r.line);
                        let key = self.key("-backupVServer", "backup_vserver");
                        self.diag.error(
                            line,
                            format!(
                                "backup vservers form a cycle: {}; a backup chain must end (remove one {key})",
                                names.join(" -> ")
                            ),
                        );
                    }
                    break;
                }
                chain.push(next);
                cur = next;
            }
        }
    }

    fn service_bindings(
        &mut self,
        draft: &Draft,
        vservers: &Index<VServerId>,
        services: &Index<ServiceId>,
    ) {
        let mut seen: FnvMap<(VServerId, ServiceId), usize> = FnvMap::default();
        for b in &draft.service_bindings {
            let vs = self.resolve(&b.vserver, Kind::VServer, vservers);
            let svc = self.resolve(&b.service, Kind::Service, services);
            let (Some(vs), Some(svc)) = (vs, svc) else {
                continue;
            };
            if let Err(first) = first_time(&mut seen, (vs, svc), b.service.line) {
                self.diag.error(
                    b.service.line,
                    format!(
                        "{}: service \"{}\" is already bound to vserver \"{}\" (line {first})",
                        b.service.context, b.service.name, b.vserver.name
                    ),
                );
                continue;
            }
            // CNAME-based GSLB: a CNAME vserver answers names, others
            // addresses, so each takes only services of its kind.
            let cname_vs = self.model.vservers[vs].cname;
            let cname_svc = self.model.services[svc].cname.is_some();
            if cname_vs != cname_svc {
                let why = if cname_vs {
                    "vserver \"{vs}\" answers with CNAMEs (-dnsRecordType CNAME), so its services need -cnameEntry; service \"{svc}\" has an address"
                } else {
                    "service \"{svc}\" stands for a name (-cnameEntry), so it needs a vserver with -dnsRecordType CNAME; vserver \"{vs}\" answers with addresses"
                };
                let why = why
                    .replace("{vs}", &b.vserver.name)
                    .replace("{svc}", &b.service.name);
                self.diag
                    .error(b.service.line, format!("{}: {why}", b.service.context));
                continue;
            }
            self.model.vservers[vs].bindings.push(Binding {
                service: svc,
                weight: b.weight,
            });
        }
    }

    /// Warns about every service that nothing checks (no monitor, no
    /// metric exchange with its site): it would be UP whatever happens to
    /// it. `-healthMonitor NO` says so on purpose and silences it; with
    /// monitors bound it changes nothing, which is said too. Without a
    /// local site in the file (`--local-site` names it) whether metric
    /// exchange checks a service is not known here: nothing is said.
    fn health_sources(&mut self, draft: &Draft) {
        if self.model.local_site.is_none() {
            return;
        }
        let fix = self.key(
            "bind a monitor (bind gslb service NAME -monitorName MONITOR), or give the service -healthMonitor NO to say that nothing is to check it",
            "bind a monitor (monitors = [\"MONITOR\"] in its [[service]]), or give it health_monitor = false to say that nothing is to check it",
        );
        for (id, d) in with_ids::<ServiceId, _>(&draft.services) {
            let s = self.model.service(id);
            match (self.model.health_source(id), d.health_monitor) {
                (sextant_core::HealthSource::None, _) => {
                    let name = &s.name;
                    self.diag.warn(
                        d.line,
                        format!(
                            "service {name}: nothing checks it (no monitor bound, and its site does not report it over metric exchange), so it is UP whatever happens to it; {}",
                            fix.replace("NAME", name)
                        ),
                    );
                }
                (sextant_core::HealthSource::Monitors, Some((false, line))) => {
                    let name = &s.name;
                    self.diag.warn(
                        line,
                        format!("service {name}: -healthMonitor NO is accepted, but Sextant still runs the monitors bound to the service; unbind them to judge the service by metric exchange alone"),
                    );
                }
                _ => {}
            }
        }
    }

    /// The services and vservers the file leaves disabled: per object, the
    /// last of its `-state` options and `enable|disable` lines says.
    fn config_disabled(
        &mut self,
        draft: &Draft,
        services: &Index<ServiceId>,
        vservers: &Index<VServerId>,
    ) {
        let mut last: FnvMap<(AdminKind, usize), (bool, usize)> = FnvMap::default();
        let mut order = Vec::new();
        for a in &draft.admin {
            let key = match a.kind {
                Kind::Service => self
                    .resolve(&a.name, Kind::Service, services)
                    .map(|id| (AdminKind::Service, id.index())),
                Kind::VServer => self
                    .resolve(&a.name, Kind::VServer, vservers)
                    .map(|id| (AdminKind::VServer, id.index())),
                _ => None,
            };
            let Some(key) = key else { continue };
            if last.insert(key, (a.disabled, a.name.line)).is_none() {
                order.push(key);
            }
        }
        for key in order {
            let Some(&(true, line)) = last.get(&key) else {
                continue;
            };
            let (kind, i) = key;
            let name = match kind {
                AdminKind::Service => self.model.services[ServiceId::from_index(i)].name.clone(),
                _ => self.model.vservers[VServerId::from_index(i)].name.clone(),
            };
            self.model
                .config_disabled
                .push(sextant_core::ConfigDisabled { kind, name, line });
        }
        self.model.config_disabled.sort_by_key(|d| d.line);
    }

    fn domains(&mut self, draft: &Draft, vservers: &Index<VServerId>) {
        // Domain → the binding that claimed it first.
        let mut seen: FnvMap<String, usize> = FnvMap::default();
        for (i, b) in draft.domain_bindings.iter().enumerate() {
            let name = normalize_name(&b.name);
            let vs = self.resolve(&b.vserver, Kind::VServer, vservers);
            if let Err(e) = check_domain(&name) {
                self.diag
                    .error(b.line, format!("{}: {e}", b.vserver.context));
                continue;
            }
            if u64::from(b.ttl) > MAX_TTL {
                self.diag.error(
                    b.line,
                    format!("{}: TTL {} is above {MAX_TTL}", b.vserver.context, b.ttl),
                );
            }
            if let Err(first) = first_time(&mut seen, name.clone(), i) {
                let first = &draft.domain_bindings[first];
                let message = if first.vserver.name.eq_ignore_ascii_case(&b.vserver.name) {
                    format!(
                        "{}: domain \"{name}\" is already bound to vserver \"{}\" (line {})",
                        b.vserver.context, first.vserver.name, first.line
                    )
                } else {
                    // The appliance takes a name on two vservers when one
                    // answers A and the other AAAA (-dnsRecordType);
                    // Sextant answers both from one vserver's services.
                    format!(
                        "{}: domain \"{name}\" is already bound to vserver \"{}\" (line {}); in Sextant a domain belongs to exactly one vserver, which answers A and AAAA queries from its services' IPv4 and IPv6 addresses: if one vserver answered A and the other AAAA on the appliance, bind both vservers' services to \"{}\" and remove this line",
                        b.vserver.context, first.vserver.name, first.line, first.vserver.name
                    )
                };
                self.diag.error(b.line, message);
                continue;
            }
            let Some(vs) = vs else { continue };
            self.model.domains.push(Domain {
                name,
                vserver: vs,
                ttl: b.ttl,
                backup_ip: b.backup_ip,
            });
        }
    }

    /// Builds the zones; returns the delegations: names given only NS
    /// records (`add dns nsRec CHILD NS`), neither an SOA nor `add dns
    /// zone`, below another zone's apex.
    fn zones(&mut self, draft: &Draft) -> Vec<crate::draft::DraftRecord> {
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut delegations = Vec::new();
        for z in &draft.zones {
            let below_another = draft.zones.iter().any(|p| {
                z.apex.len() > p.apex.len()
                    && z.apex.ends_with(&p.apex)
                    && (p.apex.is_empty()
                        || z.apex.as_bytes()[z.apex.len() - p.apex.len() - 1] == b'.')
            });
            if z.soa.is_none() && z.declared.is_none() && below_another {
                let context: std::sync::Arc<str> = match self.syntax {
                    Syntax::Appliance => format!("add dns nsRec {}", z.apex).into(),
                    Syntax::Toml => format!("[[record]] {} NS", z.apex).into(),
                };
                for (ns, line) in &z.ns {
                    delegations.push(crate::draft::DraftRecord {
                        name: z.apex.clone(),
                        line: *line,
                        ttl: z.ns_ttl,
                        data: sextant_core::RecordData::Ns(ns.clone()),
                        context: context.clone(),
                    });
                }
                continue;
            }
            if let Err(e) = check_domain(&z.apex) {
                self.diag.error(z.line, format!("zone \"{}\": {e}", z.apex));
            }
            if let Some(first) = seen.get(&z.apex) {
                self.diag.error(
                    z.line,
                    format!("zone \"{}\" is already defined on line {first}", z.apex),
                );
                continue;
            }
            seen.insert(z.apex.clone(), z.line);
            for (ns, line) in &z.ns {
                if let Err(e) = check_domain(ns) {
                    self.diag
                        .error(*line, format!("zone \"{}\": name server: {e}", z.apex));
                }
            }
            let soa = match &z.soa {
                Some((soa, line)) => {
                    let mut soa = soa.clone();
                    soa.origin_server = normalize_name(&soa.origin_server);
                    soa.contact = normalize_name(&soa.contact);
                    for (what, name) in [
                        (
                            self.key("-originServer", "origin_server"),
                            &soa.origin_server,
                        ),
                        (self.key("-contact", "contact"), &soa.contact),
                    ] {
                        if let Err(e) = check_domain(name) {
                            self.diag
                                .error(*line, format!("zone \"{}\": SOA {what}: {e}", z.apex));
                        }
                    }
                    soa
                }
                None => match z.ns.first() {
                    Some((ns, _)) => default_soa(ns.clone(), format!("hostmaster.{}", z.apex)),
                    None => {
                        self.diag.error(
                            z.line,
                            format!(
                                "zone \"{}\" has neither an SOA nor NS records; give it at least one",
                                z.apex
                            ),
                        );
                        continue;
                    }
                },
            };
            self.model.zones.push(Zone {
                apex: z.apex.clone(),
                soa,
                ns: z.ns.iter().map(|(n, _)| n.clone()).collect(),
                ns_ttl: z.ns_ttl,
            });
        }
        delegations
    }

    fn local_site(&mut self, draft: &Draft, sites: &Index<SiteId>) {
        let mut local: Option<(SiteId, usize)> = None;
        for (i, d) in with_ids(&draft.sites) {
            let Some(line) = d.local_line else { continue };
            match local {
                Some((first, first_line)) => self.diag.error(
                    line,
                    format!(
                        "site \"{}\" is declared LOCAL, but site \"{}\" already is (line {first_line}); a node runs as exactly one site",
                        d.name, draft.sites[first.index()].name
                    ),
                ),
                None => local = Some((i, line)),
            }
        }
        if let Some(r) = &draft.local_site
            && let Some(id) = self.resolve(r, Kind::Site, sites)
        {
            local = Some((id, r.line));
        }
        if let Some((id, _)) = local
            && self.model.sites.get(id).is_some()
        {
            self.model.set_local_site(id);
        }
    }
}
