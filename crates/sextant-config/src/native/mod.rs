//! Sextant's native TOML syntax, read into a [`Draft`].
//!
//! The schema is versioned (`version = 1` is required) and strict: every
//! table denies unknown keys, so a typo is an error with its line instead of
//! a silently ignored setting. Each top-level table and each element of an
//! array of tables is deserialized on its own, so one bad `[[service]]` does
//! not hide the errors in the next one. Values that need checking beyond
//! their TOML type (addresses, durations, keywords, ranges) are read as
//! [`Spanned`] so that every message carries the line of the offending key.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use serde::Deserialize;
use sextant_core::{
    DnsCheck, DnsQueryType, HttpCheck, LdnsProbe, LoadKind, Monitor, MonitorKind, Persistence,
    ServiceProtocol, TriggerMonitor, UdpCheck, VServer,
};
use toml::Spanned;
use toml::de::{DeTable, ValueDeserializer};

use crate::draft::Syntax;
use crate::draft::{
    BackupParent, DEFAULT_DOMAIN_TTL, DEFAULT_NS_TTL, DEFAULT_PERSISTENCE_TIMEOUT, DomainBinding,
    Draft, DraftAdmin, DraftLoad, DraftMonitor, DraftRpcNode, DraftService, DraftSite,
    DraftVServer, DraftZone, Kind, LoadSourceKind, MAX_MONITOR_TIME, MAX_PERSISTENCE_TIMEOUT,
    MAX_TTL, MonitorBinding, Ref, ServiceBinding, default_soa,
};
use crate::duration;
use crate::error::Diag;
use crate::no_effect::Scope;
use crate::scalar;

mod dc;
mod dns_server;
mod location;
mod policy;
mod records;
mod schema;
mod span;
mod vrrp;

use span::{Element, Lines};

use schema::{
    ApiT, GslbT, LoadT, MonitorT, PersistenceT, RpcNodeT, ServerT, ServiceT, SiteT, VServerT, ZoneT,
};

/// The schema version this reader understands.
const VERSION: i64 = 1;

/// The top-level keys, for the "unknown key" message.
const TOP_LEVEL: &str = "version, server, api, gslb, site, monitor, service, vserver, zone, record, dns_action, dns_policy, location, location_file, rpc_node, dc_record, vrrp, dns";

/// Reads a whole TOML file into a draft. `None` when the file is not TOML at
/// all or declares another schema version: then nothing else is checked.
pub(crate) fn read(text: &str, diag: &mut Diag) -> Option<Draft> {
    let lines = Lines::new(text);
    let (root, errors) = DeTable::parse_recoverable(text);
    if !errors.is_empty() {
        for e in errors {
            let line = e.span().map(|s| lines.of(s.start)).unwrap_or(0);
            diag.error(line, format!("TOML syntax: {}", e.message().trim()));
        }
        return None;
    }
    let root = root.into_inner();
    let mut n = Native {
        lines,
        diag,
        draft: Draft::default(),
        text,
    };
    match root.get("version") {
        None => n.diag.error(
            1,
            format!("missing `version = {VERSION}` (the schema version) at the top of the file"),
        ),
        Some(v) => {
            let line = n.line(&v.span());
            let found = match i64::deserialize(ValueDeserializer::from(v.clone())) {
                Ok(VERSION) => None,
                Ok(other) => Some(other.to_string()),
                Err(_) => Some(format!("a {}", v.get_ref().type_str())),
            };
            if let Some(found) = found {
                n.diag.error(
                    line,
                    format!("version: this Sextant reads schema version {VERSION}, found {found}"),
                );
                return None;
            }
        }
    }
    for (key, value) in root {
        let key_line = n.line(&key.span());
        let k: &str = key.get_ref();
        match k {
            "version" => {}
            "server" => n.server(value),
            "api" => n.api(value),
            "gslb" => n.gslb(value),
            "site" => n.each(key_line, "site", value, Native::site),
            "monitor" => n.each(key_line, "monitor", value, Native::monitor),
            "service" => n.each(key_line, "service", value, Native::service),
            "vserver" => n.each(key_line, "vserver", value, Native::vserver),
            "zone" => n.each(key_line, "zone", value, Native::zone),
            "record" => n.each(key_line, "record", value, Native::record),
            "dns_action" => n.each(key_line, "dns_action", value, Native::dns_action),
            "dns_policy" => n.each(key_line, "dns_policy", value, Native::dns_policy),
            "location" => n.each(key_line, "location", value, Native::location),
            "location_file" => n.each(key_line, "location_file", value, Native::location_file),
            "rpc_node" => n.each(key_line, "rpc_node", value, Native::rpc_node),
            "dc_record" => n.each(key_line, "dc_record", value, Native::dc_record),
            "vrrp" => n.vrrp(value),
            "dns" => n.dns_server(value),
            other => n.diag.error(
                key_line,
                format!("unknown top-level key `{other}`; expected one of {TOP_LEVEL}"),
            ),
        }
    }
    Some(n.draft)
}

struct Native<'d> {
    lines: Lines,
    diag: &'d mut Diag,
    draft: Draft,
    /// The whole file, for columns inside values (DNS policy rules).
    text: &'d str,
}

impl Native<'_> {
    // -- tables

    fn server(&mut self, value: Element<'_>) {
        let Some(s) = self.de::<ServerT>("[server]", value) else {
            return;
        };
        let ctx = "[server]";
        for a in &s.dns_listen {
            if let Some(addr) = self.with(ctx, "dns_listen", a, socket_addr)
                && !self.draft.dns_listen.contains(&addr)
            {
                self.draft.dns_listen.push(addr);
            }
        }
        if let Some(a) = &s.api_listen {
            self.draft.api_listen = self.with(ctx, "api_listen", a, socket_addr);
        }
        if let Some(l) = &s.local_site {
            self.draft.local_site = Some(self.reference("[server] local_site", l));
        }
    }

    fn api(&mut self, value: Element<'_>) {
        let Some(a) = self.de::<ApiT>("[api]", value) else {
            return;
        };
        if let Some(f) = &a.token_file {
            let line = self.at(f);
            if f.get_ref().trim().is_empty() {
                return self.error(line, "[api]", "token_file is empty");
            }
            self.draft.api_token_file = Some(f.get_ref().into());
        }
    }

    fn gslb(&mut self, value: Element<'_>) {
        let line = self.line(&value.span());
        let Some(g) = self.de::<GslbT>("[gslb]", value) else {
            return;
        };
        let ctx = "[gslb]";
        self.draft.params_line = line;
        let (ms, s) = (Duration::from_millis, Duration::from_secs);
        let mut p = self.draft.params.clone();
        if let Some(v) = &g.mep_keepalive_timeout
            && let Some(d) = self.duration(ctx, "mep_keepalive_timeout", v, ms(1), s(3600))
        {
            p.mep_keepalive_timeout = d;
        }
        if let Some(v) = &g.rtt_tolerance
            && let Some(d) = self.duration(ctx, "rtt_tolerance", v, ms(1), ms(100))
        {
            p.rtt_tolerance = d;
        }
        if let Some(v) = &g.ldns_entry_timeout
            && let Some(d) = self.duration(ctx, "ldns_entry_timeout", v, ms(1), s(65534))
        {
            p.ldns_entry_timeout = d;
        }
        if let Some(v) = &g.ldns_probe_interval
            && let Some(d) = self.duration(ctx, "ldns_probe_interval", v, ms(1), s(3600))
        {
            for kind in LdnsProbe::ALL {
                p.ldns_monitor_mut(kind).interval = d;
            }
        }
        if let Some(v) = &g.ldns_probe_timeout
            && let Some(d) = self.duration(ctx, "ldns_probe_timeout", v, ms(1), s(3600))
        {
            for kind in LdnsProbe::ALL {
                p.ldns_monitor_mut(kind).timeout = d;
            }
        }
        if let Some(v) = &g.dc_access_period
            && let Some(d) = self.duration(ctx, "dc_access_period", v, ms(1), s(3600))
        {
            p.dc_access_period = d;
        }
        for (key, v, field) in [
            (
                "svc_state_delay_time",
                &g.svc_state_delay_time,
                &mut p.svc_state_delay,
            ),
            (
                "svc_state_learning_time",
                &g.svc_state_learning_time,
                &mut p.svc_state_learning,
            ),
        ] {
            if let Some(v) = v
                && let Some(d) = self.duration_or_zero(ctx, key, v, s(3600))
            {
                *field = d;
            }
        }
        for (kind, table) in [
            (LdnsProbe::Ping, &g.ldns_ping),
            (LdnsProbe::DnsUdp, &g.ldns_dns),
            (LdnsProbe::DnsTcp, &g.ldns_tcp),
        ] {
            let Some(t) = table else { continue };
            let ctx = format!("[gslb.{}]", kind.monitor_name().replace('-', "_"));
            let t = t.get_ref();
            if let Some(v) = &t.interval
                && let Some(d) = self.duration(&ctx, "interval", v, ms(1), s(3600))
            {
                p.ldns_monitor_mut(kind).interval = d;
            }
            if let Some(v) = &t.response_timeout
                && let Some(d) = self.duration(&ctx, "response_timeout", v, ms(1), s(3600))
            {
                p.ldns_monitor_mut(kind).timeout = d;
            }
            if let Some(v) = &t.retries
                && let Some(n) = self.int(&ctx, "retries", v, 1, 127)
            {
                p.ldns_monitor_mut(kind).retries = n as u8;
            }
            if let Some(v) = &t.dest_port {
                if kind == LdnsProbe::Ping {
                    let at = self.at(v);
                    self.diag
                        .error(at, format!("{ctx}: dest_port: a PING probe has no port"));
                } else if let Some(port) = self.port(&ctx, "dest_port", v) {
                    p.ldns_monitor_mut(kind).dest_port = Some(port);
                }
            }
        }
        if let Some(v) = &g.ldns_v4_mask
            && let Some(m) = self.int(ctx, "ldns_v4_mask", v, 1, 32)
        {
            p.ldns_v4_mask = m as u8;
        }
        if let Some(v) = &g.ldns_v6_mask
            && let Some(m) = self.int(ctx, "ldns_v6_mask", v, 1, 128)
        {
            p.ldns_v6_mask = m as u8;
        }
        if let Some(order) = &g.ldns_probe_order {
            let mut probes = Vec::new();
            for v in order.get_ref() {
                if let Some(pr) = self.with(ctx, "ldns_probe_order", v, probe) {
                    if probes.contains(&pr) {
                        self.error(
                            self.at(v),
                            ctx,
                            format!("ldns_probe_order: \"{}\" is listed twice", v.get_ref()),
                        );
                    } else {
                        probes.push(pr);
                    }
                }
            }
            if probes.is_empty() {
                self.error(
                    self.at(order),
                    ctx,
                    "ldns_probe_order is empty; list one or more of \"ping\", \"dns\", \"tcp\"",
                );
            } else {
                p.ldns_probe_order = probes;
            }
        }
        if let Some(v) = &g.drop_ldns_requests {
            p.drop_ldns_requests = *v.get_ref();
        }
        if let Some(v) = &g.automatic_config_sync {
            p.automatic_config_sync = *v.get_ref();
        }
        if let Some(v) = &g.incarnation {
            match u64::try_from(*v.get_ref()) {
                Ok(n) => p.config_incarnation = Some(n),
                Err(_) => self.error(
                    self.at(v),
                    ctx,
                    format!(
                        "incarnation: expected an integer 0 or more, found {}",
                        v.get_ref()
                    ),
                ),
            }
        }
        if let Some(v) = &g.mep_port
            && let Some(port) = self.port(ctx, "mep_port", v)
        {
            p.mep_port = port;
        }
        if let Some(v) = &g.mep_secure_port
            && let Some(port) = self.port(ctx, "mep_secure_port", v)
        {
            p.mep_secure_port = port;
        }
        self.draft.params = p;
        let uses = [
            (
                "ldnsEntryTimeout",
                g.ldns_entry_timeout.as_ref().map(|v| self.at(v)),
            ),
            ("RTTTolerance", g.rtt_tolerance.as_ref().map(|v| self.at(v))),
            ("ldnsMask", g.ldns_v4_mask.as_ref().map(|v| self.at(v))),
            ("v6ldnsMaskLen", g.ldns_v6_mask.as_ref().map(|v| self.at(v))),
            (
                "ldnsProbeOrder",
                g.ldns_probe_order.as_ref().map(|v| self.at(v)),
            ),
            (
                "dropLdnsReq",
                g.drop_ldns_requests.as_ref().map(|v| self.at(v)),
            ),
            (
                "automaticConfigSync",
                g.automatic_config_sync.as_ref().map(|v| self.at(v)),
            ),
            (
                "MEPKeepAliveTimeout",
                g.mep_keepalive_timeout.as_ref().map(|v| self.at(v)),
            ),
            ("mepPort", g.mep_port.as_ref().map(|v| self.at(v))),
            (
                "mepSecurePort",
                g.mep_secure_port.as_ref().map(|v| self.at(v)),
            ),
            (
                "ldnsProbeInterval",
                g.ldns_probe_interval.as_ref().map(|v| self.at(v)),
            ),
            (
                "ldnsProbeTimeout",
                g.ldns_probe_timeout.as_ref().map(|v| self.at(v)),
            ),
            (
                "dcAccessPeriod",
                g.dc_access_period.as_ref().map(|v| self.at(v)),
            ),
        ];
        for (key, line) in uses {
            if let Some(line) = line {
                self.no_effect(line, Scope::Param, key);
            }
        }
    }

    /// Warns about a use of `key` of `scope` on `line` if that setting is
    /// accepted but has no effect ([`crate::no_effect`]); the keys are the
    /// appliance's option names.
    fn no_effect(&mut self, line: usize, scope: Scope, key: &str) {
        crate::no_effect::warn(self.diag, line, scope, key, Syntax::Toml);
    }

    fn site(&mut self, value: Element<'_>) {
        let line = self.line(&value.span());
        let name = Self::name_of(&value);
        let Some(s) = self.de::<SiteT>("[[site]]", value) else {
            if let Some(name) = name {
                self.draft.sites.push(placeholder_site(name, line));
            }
            return;
        };
        let ctx = format!("[[site]] {}", s.name.get_ref());
        let line = self.at(&s.name);
        let ip = self
            .ip(&ctx, "ip", &s.ip)
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        let public_ip = s
            .public_ip
            .as_ref()
            .and_then(|v| self.ip(&ctx, "public_ip", v));
        let trigger_monitor = s
            .trigger_monitor
            .as_ref()
            .and_then(|v| self.with(&ctx, "trigger_monitor", v, trigger_monitor))
            .unwrap_or(TriggerMonitor::Always);
        let backup_parents = s
            .backup_parents
            .iter()
            .map(|b| BackupParent {
                site: self.reference(&ctx, b),
                column: Some(self.column(b.span().start)),
            })
            .collect();
        let parent = s.parent.as_ref().map(|p| self.reference(&ctx, p));
        let password = s.site_password.as_ref().and_then(|v| {
            match crate::secrets::site_password(v.get_ref(), s.name.get_ref()) {
                Ok((password, warning)) => {
                    if let Some(w) = warning {
                        self.diag.warn(self.at(v), format!("{ctx}: {w}"));
                    }
                    Some(password)
                }
                Err(e) => {
                    self.error(self.at(v), &ctx, format!("site_password: {e}"));
                    None
                }
            }
        });
        for (key, v) in [("clip", &s.clip), ("public_clip", &s.public_clip)] {
            if let Some(v) = v {
                self.ip(&ctx, key, v);
            }
        }
        if let Some(v) = &s.naptr_replacement_suffix
            && v.get_ref().is_empty()
        {
            self.error(self.at(v), &ctx, "naptr_replacement_suffix is empty");
        }
        self.draft.sites.push(DraftSite {
            name: s.name.get_ref().clone(),
            line,
            ip,
            public_ip,
            local_line: None,
            parent,
            backup_parents,
            metric_exchange: s.metric_exchange.unwrap_or(true),
            nw_metric_exchange: s
                .nw_metric_exchange
                .as_ref()
                .map(|v| (*v.get_ref(), self.at(v))),
            session_exchange: s
                .session_exchange
                .as_ref()
                .map(|v| (*v.get_ref(), self.at(v))),
            trigger_monitor,
            password,
        });
        for (key, v) in [
            ("clip", &s.clip),
            ("publicCLIP", &s.public_clip),
            ("naptrReplacementSuffix", &s.naptr_replacement_suffix),
        ] {
            if let Some(v) = v {
                self.no_effect(self.at(v), Scope::Site, key);
            }
        }
        if let Some(v) = &s.nw_metric_exchange {
            self.no_effect(self.at(v), Scope::Site, "nwMetricExchange");
        }
        if let Some(v) = &s.session_exchange {
            self.no_effect(self.at(v), Scope::Site, "sessionExchange");
        }
    }

    fn monitor(&mut self, value: Element<'_>) {
        let line = self.line(&value.span());
        let name = Self::name_of(&value);
        let Some(m) = self.de::<MonitorT>("[[monitor]]", value) else {
            if let Some(name) = name {
                self.draft.monitors.push(DraftMonitor {
                    line,
                    timing_line: line,
                    monitor: Monitor::new(name, MonitorKind::Tcp),
                });
            }
            return;
        };
        let ctx = format!("[[monitor]] {}", m.name.get_ref());
        let line = self.at(&m.name);
        let kind = self.monitor_kind(&ctx, &m);
        let mut monitor = Monitor::new(m.name.get_ref().clone(), kind);
        let mut timing_line = line;
        if let Some(v) = &m.interval {
            timing_line = self.at(v);
            if let Some(d) = self.duration(&ctx, "interval", v, Duration::ZERO, MAX_MONITOR_TIME) {
                monitor.interval = d;
            }
        }
        if let Some(v) = &m.response_timeout {
            timing_line = timing_line.max(self.at(v));
            if let Some(d) = self.duration(
                &ctx,
                "response_timeout",
                v,
                Duration::ZERO,
                MAX_MONITOR_TIME,
            ) {
                monitor.response_timeout = d;
            }
        }
        if let Some(v) = &m.retries
            && let Some(n) = self.int(&ctx, "retries", v, 1, 127)
        {
            monitor.retries = n as u32;
        }
        if let Some(v) = &m.success_retries
            && let Some(n) = self.int(&ctx, "success_retries", v, 1, 32)
        {
            monitor.success_retries = n as u32;
        }
        if let Some(v) = &m.dest_port {
            monitor.dest_port = self.port(&ctx, "dest_port", v);
        }
        if let Some(v) = &m.dest_ip {
            monitor.dest_ip = self.ip(&ctx, "dest_ip", v);
        }
        if let Some(v) = &m.down_time {
            monitor.down_time =
                self.duration(&ctx, "down_time", v, Duration::ZERO, MAX_MONITOR_TIME);
        }
        if let Some(v) = &m.reverse {
            monitor.reverse = *v.get_ref();
        }
        self.draft.monitors.push(DraftMonitor {
            line,
            timing_line,
            monitor,
        });
    }

    /// The monitor's check, from its type and the keys that belong to it.
    fn monitor_kind(&mut self, ctx: &str, m: &MonitorT) -> MonitorKind {
        let ty = m.kind.get_ref().to_ascii_lowercase();
        let keys: [(&str, Option<usize>); 10] = [
            ("request", m.request.as_ref().map(|v| self.at(v))),
            (
                "custom_headers",
                m.custom_headers.as_ref().map(|v| self.at(v)),
            ),
            ("status_codes", m.status_codes.as_ref().map(|v| self.at(v))),
            (
                "body_contains",
                m.body_contains.as_ref().map(|v| self.at(v)),
            ),
            ("query", m.query.as_ref().map(|v| self.at(v))),
            ("query_type", m.query_type.as_ref().map(|v| self.at(v))),
            (
                "expect_addresses",
                m.expect_addresses.as_ref().map(|v| self.at(v)),
            ),
            (
                "expect_rcodes",
                m.expect_rcodes.as_ref().map(|v| self.at(v)),
            ),
            ("send", m.send.as_ref().map(|v| self.at(v))),
            ("receive", m.receive.as_ref().map(|v| self.at(v))),
        ];
        let allowed: &[&str] = match ty.as_str() {
            "ping" | "tcp" => &[],
            "http" | "https" => &["request", "custom_headers", "status_codes", "body_contains"],
            "dns" => &["query", "query_type", "expect_addresses", "expect_rcodes"],
            "udp" => &["send", "receive"],
            _ => {
                self.error(
                    self.at(&m.kind),
                    ctx,
                    format!(
                        "type: unknown monitor type \"{}\"; expected one of ping, tcp, http, https, dns, udp",
                        m.kind.get_ref()
                    ),
                );
                return MonitorKind::Tcp;
            }
        };
        for (key, line) in keys {
            if let Some(line) = line
                && !allowed.contains(&key)
            {
                let which = if allowed.is_empty() {
                    "it takes none of the type-specific keys".to_string()
                } else {
                    format!("its keys are {}", allowed.join(", "))
                };
                self.error(
                    line,
                    ctx,
                    format!("key `{key}` does not apply to monitors of type {ty} ({which})"),
                );
            }
        }
        match ty.as_str() {
            "ping" => MonitorKind::Ping,
            "tcp" => MonitorKind::Tcp,
            "http" | "https" => {
                let mut check = HttpCheck {
                    request: "HEAD /".to_string(),
                    status_codes: vec![(200, 200)],
                    body_contains: m.body_contains.as_ref().map(|v| v.get_ref().clone()),
                    custom_headers: String::new(),
                };
                if let Some(v) = &m.custom_headers
                    && let Some(h) = self.with(ctx, "custom_headers", v, scalar::header_lines)
                {
                    check.custom_headers = h;
                }
                if let Some(v) = &m.request {
                    if v.get_ref().trim().is_empty() {
                        self.error(
                            self.at(v),
                            ctx,
                            "request is empty; write e.g. \"GET /health\"",
                        );
                    } else {
                        check.request = v.get_ref().clone();
                    }
                }
                if let Some(codes) = &m.status_codes {
                    let mut ranges = Vec::new();
                    for c in codes.get_ref() {
                        match scalar::status_range(&c.get_ref().as_text()) {
                            Ok(r) => ranges.push(r),
                            Err(e) => self.error(self.at(c), ctx, format!("status_codes: {e}")),
                        }
                    }
                    if codes.get_ref().is_empty() {
                        self.error(
                            self.at(codes),
                            ctx,
                            "status_codes is empty; leave it out for the default [200]",
                        );
                    } else if !ranges.is_empty() {
                        check.status_codes = ranges;
                    }
                }
                if ty == "https" {
                    MonitorKind::Https(check)
                } else {
                    MonitorKind::Http(check)
                }
            }
            "dns" => {
                let mut check = DnsCheck {
                    query: String::new(),
                    query_type: DnsQueryType::A,
                    expect_addresses: Vec::new(),
                    expect_rcodes: Vec::new(),
                };
                match &m.query {
                    Some(q) => check.query = q.get_ref().clone(),
                    None => self.error(
                        self.at(&m.name),
                        ctx,
                        "a dns monitor needs `query` (the name to ask for)",
                    ),
                }
                if let Some(v) = &m.query_type {
                    check.query_type = self
                        .with(ctx, "query_type", v, |t| {
                            if t.eq_ignore_ascii_case("A") {
                                Ok(DnsQueryType::A)
                            } else if t.eq_ignore_ascii_case("AAAA") {
                                Ok(DnsQueryType::Aaaa)
                            } else if t.eq_ignore_ascii_case("SOA") {
                                Ok(DnsQueryType::Soa)
                            } else {
                                Err(format!(
                                    "expected \"A\", \"AAAA\" or \"SOA\", found \"{t}\""
                                ))
                            }
                        })
                        .unwrap_or(DnsQueryType::A);
                }
                if let Some(addrs) = &m.expect_addresses {
                    for a in addrs.get_ref() {
                        if let Some(ip) = self.ip(ctx, "expect_addresses", a) {
                            check.expect_addresses.push(ip);
                        }
                    }
                }
                if let Some(codes) = &m.expect_rcodes {
                    for c in codes.get_ref() {
                        match scalar::rcode(&c.get_ref().as_text()) {
                            Ok(n) => check.expect_rcodes.push(n),
                            Err(e) => self.error(self.at(c), ctx, format!("expect_rcodes: {e}")),
                        }
                    }
                }
                MonitorKind::Dns(check)
            }
            _ => MonitorKind::Udp(UdpCheck {
                send: m
                    .send
                    .as_ref()
                    .map(|v| v.get_ref().clone())
                    .unwrap_or_default(),
                receive: m.receive.as_ref().map(|v| v.get_ref().clone()),
            }),
        }
    }

    fn service(&mut self, value: Element<'_>) {
        let line = self.line(&value.span());
        let name = Self::name_of(&value);
        let Some(s) = self.de::<ServiceT>("[[service]]", value) else {
            if let Some(name) = name {
                self.draft.services.push(DraftService {
                    cname: None,
                    mon_threshold: 0,
                    name,
                    line,
                    ip: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                    port: 1,
                    protocol: ServiceProtocol::Any,
                    site: None,
                    public_ip: None,
                    public_port: None,
                    max_clients: 0,
                    load: None,
                    vservice_name: None,
                    health_monitor: None,
                });
            }
            return;
        };
        let ctx = format!("[[service]] {}", s.name.get_ref());
        let line = self.at(&s.name);
        let ip = self
            .ip(&ctx, "ip", &s.ip)
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        let port = self.port(&ctx, "port", &s.port).unwrap_or(1);
        let protocol = self
            .with(&ctx, "protocol", &s.protocol, scalar::protocol)
            .unwrap_or(ServiceProtocol::Any);
        let public_ip = s
            .public_ip
            .as_ref()
            .and_then(|v| self.ip(&ctx, "public_ip", v));
        let public_port = s
            .public_port
            .as_ref()
            .and_then(|v| self.port(&ctx, "public_port", v));
        let max_clients = s
            .max_clients
            .as_ref()
            .and_then(|v| self.int(&ctx, "max_clients", v, 0, 4_294_967_294))
            .unwrap_or(0) as u32;
        let load = s.load.as_ref().map(|l| Box::new(self.load(&ctx, l)));
        let vservice_name = s.vservice_name.as_ref().map(|v| {
            self.with(&ctx, "vservice_name", v, scalar::check_name);
            (v.get_ref().clone(), self.at(v))
        });
        if let Some(v) = &s.public_port {
            self.no_effect(self.at(v), Scope::Service, "publicPort");
        }
        if let Some(v) = &s.max_clients {
            self.no_effect(self.at(v), Scope::Service, "maxClient");
        }
        let service_ref = self.reference(&ctx, &s.name);
        for m in &s.monitors {
            let monitor = self.reference(&ctx, m);
            self.draft.monitor_bindings.push(MonitorBinding {
                service: Ref {
                    line: monitor.line,
                    ..service_ref.clone()
                },
                monitor,
                weight: 1,
            });
        }
        if let Some(d) = &s.disabled {
            self.draft.admin.push(DraftAdmin {
                kind: Kind::Service,
                name: Ref {
                    line: self.at(d),
                    ..service_ref.clone()
                },
                disabled: *d.get_ref(),
            });
        }
        self.draft.services.push(DraftService {
            cname: None,
            mon_threshold: 0,
            health_monitor: s
                .health_monitor
                .as_ref()
                .map(|h| (*h.get_ref(), self.at(h))),
            name: s.name.get_ref().clone(),
            line,
            ip,
            port,
            protocol,
            site: Some(self.reference(&ctx, &s.site)),
            public_ip,
            public_port,
            max_clients,
            load,
            vservice_name,
        });
    }

    /// A service's `load` table.
    fn load(&mut self, ctx: &str, l: &Spanned<LoadT>) -> DraftLoad {
        let l = l.get_ref();
        let mut load = DraftLoad::default();
        if let Some(kind) = self.with(ctx, "load: source", &l.source, |v| {
            LoadSourceKind::parse(v).ok_or_else(|| {
                format!("expected \"prometheus\", \"push\" or \"monitors\", found \"{v}\"")
            })
        }) {
            load.source = Some((kind, self.at(&l.source)));
        }
        if let Some(u) = &l.url {
            load.url = Some((u.get_ref().clone(), self.at(u)));
        }
        if let Some(v) = &l.interval
            && let Some(d) = self.with(ctx, "load: interval", v, duration::parse_suffixed)
        {
            load.interval = Some((d, self.at(v)));
        }
        for (kind, v) in [
            (LoadKind::Connections, &l.connections),
            (LoadKind::ResponseTime, &l.response_time),
            (LoadKind::Bandwidth, &l.bandwidth),
            (LoadKind::Packets, &l.packets),
            (LoadKind::CustomLoad, &l.custom_load),
            (LoadKind::Cpu, &l.cpu),
            (LoadKind::Memory, &l.memory),
            (LoadKind::Requests, &l.requests),
            (LoadKind::NewSessions, &l.new_sessions),
            (LoadKind::HealthyBackends, &l.healthy_backends),
        ] {
            if let Some(v) = v {
                load.metrics[kind.index()] = Some((v.get_ref().clone(), self.at(v)));
            }
        }
        load
    }

    fn rpc_node(&mut self, value: Element<'_>) {
        let Some(n) = self.de::<RpcNodeT>("[[rpc_node]]", value) else {
            return;
        };
        let ctx = format!("[[rpc_node]] {}", n.ip.get_ref());
        let line = self.at(&n.ip);
        let Some(ip) = self.ip(&ctx, "ip", &n.ip) else {
            return;
        };
        let password = match &n.password {
            Some(p) if p.get_ref().is_empty() => {
                self.error(
                    self.at(p),
                    &ctx,
                    "password is empty; leave it out for no authentication",
                );
                None
            }
            Some(p) => Some(p.get_ref().clone()),
            None => None,
        };
        let source_ip = n
            .source_ip
            .as_ref()
            .and_then(|v| self.ip(&ctx, "source_ip", v));
        if let Some(first) = self.draft.rpc_nodes.iter().find(|r| r.ip == ip) {
            let first = first.line;
            self.error(
                line,
                &ctx,
                format!("an [[rpc_node]] for {ip} is already defined on line {first}"),
            );
            return;
        }
        self.draft.rpc_nodes.push(DraftRpcNode {
            ip,
            line,
            password,
            secure: n.secure,
            source_ip,
        });
    }

    fn vserver(&mut self, value: Element<'_>) {
        let line = self.line(&value.span());
        let name = Self::name_of(&value);
        let Some(v) = self.de::<VServerT>("[[vserver]]", value) else {
            if let Some(name) = name {
                self.draft.vservers.push(DraftVServer {
                    line,
                    vserver: VServer::new(name, ServiceProtocol::Any),
                    backup_vserver: None,
                });
            }
            return;
        };
        let ctx = format!("[[vserver]] {}", v.name.get_ref());
        let line = self.at(&v.name);
        let protocol = self
            .with(&ctx, "protocol", &v.protocol, scalar::protocol)
            .unwrap_or(ServiceProtocol::Any);
        let mut vs = VServer::new(v.name.get_ref().clone(), protocol);
        if let Some(s) = &v.lb_method
            && let Some(m) = self.with(&ctx, "lb_method", s, scalar::lb_method)
        {
            self.no_effect(self.at(s), Scope::VServer, &format!("lbMethod {m}"));
            vs.method = m;
        }
        if let Some(s) = &v.backup_lb_method {
            vs.backup_method = self.with(&ctx, "backup_lb_method", s, scalar::lb_method);
            if let Some(m) = vs.backup_method {
                self.no_effect(self.at(s), Scope::VServer, &format!("backupLBMethod {m}"));
            }
        }
        if let Some(p) = &v.persistence {
            vs.persistence = self.persistence(&ctx, p);
        }
        vs.empty_down_response = v.empty_down_response.unwrap_or(false);
        vs.multi_ip_response = v.multi_ip_response.unwrap_or(false);
        vs.ecs = v.ecs.unwrap_or(false);
        if let Some(m) = &v.hash_v4_mask
            && let Some(m) = self.int(&ctx, "hash_v4_mask", m, 1, 32)
        {
            vs.hash_v4_mask = m as u8;
        }
        if let Some(m) = &v.hash_v6_mask
            && let Some(m) = self.int(&ctx, "hash_v6_mask", m, 1, 128)
        {
            vs.hash_v6_mask = m as u8;
        }
        if let Some(t) = &v.rtt_tolerance
            && let Some(d) = self.duration(
                &ctx,
                "rtt_tolerance",
                t,
                Duration::ZERO,
                Duration::from_millis(100),
            )
        {
            vs.rtt_tolerance = d;
        }
        let backup_vserver = v.backup_vserver.as_ref().map(|b| self.reference(&ctx, b));
        let vserver_ref = self.reference(&ctx, &v.name);
        if let Some(d) = &v.disabled {
            self.draft.admin.push(DraftAdmin {
                kind: Kind::VServer,
                name: Ref {
                    line: self.at(d),
                    ..vserver_ref.clone()
                },
                disabled: *d.get_ref(),
            });
        }
        for b in &v.services {
            let b = b.get_ref();
            let weight = b
                .weight
                .as_ref()
                .and_then(|w| self.int(&ctx, "services: weight", w, 1, 100))
                .unwrap_or(1) as u32;
            let service = self.reference(&ctx, &b.name);
            self.draft.service_bindings.push(ServiceBinding {
                vserver: Ref {
                    line: service.line,
                    ..vserver_ref.clone()
                },
                service,
                weight,
            });
        }
        for d in &v.domains {
            let d = d.get_ref();
            let dline = self.at(&d.name);
            let ttl = d
                .ttl
                .as_ref()
                .and_then(|t| self.int(&ctx, "domains: ttl", t, 1, MAX_TTL))
                .unwrap_or(u64::from(DEFAULT_DOMAIN_TTL)) as u32;
            let backup_ip = d
                .backup_ip
                .as_ref()
                .and_then(|b| self.ip(&ctx, "domains: backup_ip", b));
            self.draft.domain_bindings.push(DomainBinding {
                vserver: Ref {
                    line: dline,
                    ..vserver_ref.clone()
                },
                name: d.name.get_ref().clone(),
                line: dline,
                ttl,
                backup_ip,
            });
        }
        self.draft.vservers.push(DraftVServer {
            line,
            vserver: vs,
            backup_vserver,
        });
    }

    fn persistence(&mut self, ctx: &str, p: &Spanned<PersistenceT>) -> Option<Persistence> {
        let p = p.get_ref();
        let kind = p.kind.get_ref();
        if kind.eq_ignore_ascii_case("NONE") {
            let others = [
                p.timeout.as_ref().map(|v| self.at(v)),
                p.v4_mask.as_ref().map(|v| self.at(v)),
                p.v6_mask.as_ref().map(|v| self.at(v)),
            ];
            if let Some(line) = others.into_iter().flatten().next() {
                self.error(
                    line,
                    ctx,
                    "persistence: timeout and masks need type = \"SOURCEIP\" (type is \"NONE\")",
                );
            }
            return None;
        }
        if !kind.eq_ignore_ascii_case("SOURCEIP") {
            self.error(
                self.at(&p.kind),
                ctx,
                format!("persistence: type: expected \"SOURCEIP\" or \"NONE\", found \"{kind}\""),
            );
            return None;
        }
        let mut out = Persistence {
            timeout: DEFAULT_PERSISTENCE_TIMEOUT,
            v4_mask: 32,
            v6_mask: 128,
        };
        if let Some(t) = &p.timeout
            && let Some(d) = self.duration(
                ctx,
                "persistence: timeout",
                t,
                Duration::ZERO,
                MAX_PERSISTENCE_TIMEOUT,
            )
        {
            out.timeout = d;
        }
        if let Some(m) = &p.v4_mask
            && let Some(m) = self.int(ctx, "persistence: v4_mask", m, 1, 32)
        {
            out.v4_mask = m as u8;
        }
        if let Some(m) = &p.v6_mask
            && let Some(m) = self.int(ctx, "persistence: v6_mask", m, 1, 128)
        {
            out.v6_mask = m as u8;
        }
        Some(out)
    }

    fn zone(&mut self, value: Element<'_>) {
        let Some(z) = self.de::<ZoneT>("[[zone]]", value) else {
            return;
        };
        let apex = scalar::normalize_name(z.apex.get_ref());
        let ctx = format!("[[zone]] {apex}");
        let line = self.at(&z.apex);
        let mut ns: Vec<(String, usize)> = Vec::new();
        for n in &z.ns {
            let name = scalar::normalize_name(n.get_ref());
            if ns.iter().any(|(x, _)| *x == name) {
                self.error(self.at(n), &ctx, format!("ns: \"{name}\" is listed twice"));
            } else {
                ns.push((name, self.at(n)));
            }
        }
        let ns_ttl = z
            .ns_ttl
            .as_ref()
            .and_then(|t| self.int(&ctx, "ns_ttl", t, 0, MAX_TTL))
            .unwrap_or(u64::from(DEFAULT_NS_TTL)) as u32;
        let soa = z.soa.as_ref().map(|s| {
            let sline = self.at(s);
            let s = s.get_ref();
            let mut soa = default_soa(
                s.origin_server.get_ref().clone(),
                s.contact.get_ref().clone(),
            );
            let u32max = u64::from(u32::MAX);
            for (key, v, field) in [
                ("soa: serial", &s.serial, &mut soa.serial),
                ("soa: refresh", &s.refresh, &mut soa.refresh),
                ("soa: retry", &s.retry, &mut soa.retry),
                ("soa: expire", &s.expire, &mut soa.expire),
                ("soa: minimum", &s.minimum, &mut soa.minimum),
            ] {
                if let Some(v) = v
                    && let Some(n) = self.int(&ctx, key, v, 0, u32max)
                {
                    *field = n as u32;
                }
            }
            if let Some(v) = &s.ttl
                && let Some(n) = self.int(&ctx, "soa: ttl", v, 0, MAX_TTL)
            {
                soa.ttl = n as u32;
            }
            (soa, sline)
        });
        self.dnssec_keys(&apex, &ctx, line, &z.dnssec_key);
        self.draft.zones.push(DraftZone {
            apex,
            line,
            soa,
            ns,
            ns_ttl,
            declared: Some(line),
        });
    }
}

impl Native<'_> {
    /// A `[[zone]]`'s `[[zone.dnssec_key]]` tables: each a key, the zone
    /// signed by them all.
    fn dnssec_keys(
        &mut self,
        apex: &str,
        ctx: &str,
        line: usize,
        keys: &[Spanned<schema::DnssecKeyT>],
    ) {
        if keys.is_empty() {
            return;
        }
        let mut names = Vec::new();
        for k in keys {
            let kline = self.at(k);
            let k = k.get_ref();
            let file = k.file.get_ref();
            let base = file
                .strip_suffix(".key")
                .or_else(|| file.strip_suffix(".private"))
                .unwrap_or(file);
            let name = std::path::Path::new(base)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| base.to_string());
            let kctx = format!("{ctx}: dnssec_key {name}");
            let ttl = k
                .ttl
                .as_ref()
                .and_then(|t| self.int(&kctx, "ttl", t, 0, MAX_TTL))
                .map(|t| t as u32);
            let mut timing = sextant_core::dnssec::KeyTiming::default();
            for (key, value, field) in [
                ("publish", &k.publish, &mut timing.publish),
                ("activate", &k.activate, &mut timing.activate),
                ("inactive", &k.inactive, &mut timing.inactive),
                ("delete", &k.delete, &mut timing.delete),
                ("sync_publish", &k.sync_publish, &mut timing.sync_publish),
                ("sync_delete", &k.sync_delete, &mut timing.sync_delete),
            ] {
                if let Some(v) = value {
                    match crate::dnssec::time(v.get_ref()) {
                        Ok(t) => *field = Some(t),
                        Err(e) => self.error(self.at(v), &kctx, format!("{key}: {e}")),
                    }
                }
            }
            self.draft.dnssec.keys.push(crate::dnssec::DraftKey {
                name: name.clone(),
                line: kline,
                context: kctx,
                public: format!("{base}.key"),
                private: format!("{base}.private"),
                ttl,
                timing,
            });
            names.push(name);
        }
        self.draft.dnssec.signings.push(crate::dnssec::ZoneSigning {
            zone: apex.to_string(),
            keys: names,
            line,
            context: ctx.to_string(),
        });
    }
}

fn placeholder_site(name: String, line: usize) -> DraftSite {
    DraftSite {
        name,
        line,
        ip: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        public_ip: None,
        local_line: None,
        parent: None,
        backup_parents: Vec::new(),
        metric_exchange: true,
        nw_metric_exchange: None,
        session_exchange: None,
        trigger_monitor: TriggerMonitor::Always,
        password: None,
    }
}

fn socket_addr(text: &str) -> Result<SocketAddr, String> {
    let addr: SocketAddr = text.parse().map_err(|_| {
        format!("expected IP:PORT (e.g. \"127.0.0.1:5353\" or \"[::1]:5353\"), found \"{text}\"")
    })?;
    if addr.port() == 0 {
        return Err(format!(
            "port 0 in \"{text}\"; expected a port from 1 to 65535"
        ));
    }
    Ok(addr)
}

fn trigger_monitor(text: &str) -> Result<TriggerMonitor, String> {
    [
        ("always", TriggerMonitor::Always),
        ("mepdown", TriggerMonitor::MepDown),
        ("mepdown_svcdown", TriggerMonitor::MepDownSvcDown),
    ]
    .iter()
    .find(|(w, _)| w.eq_ignore_ascii_case(text))
    .map(|(_, t)| *t)
    .ok_or_else(|| {
        format!("expected \"always\", \"mepdown\" or \"mepdown_svcdown\", found \"{text}\"")
    })
}

fn probe(text: &str) -> Result<LdnsProbe, String> {
    if text.eq_ignore_ascii_case("ping") {
        Ok(LdnsProbe::Ping)
    } else if text.eq_ignore_ascii_case("dns") {
        Ok(LdnsProbe::DnsUdp)
    } else if text.eq_ignore_ascii_case("tcp") {
        Ok(LdnsProbe::DnsTcp)
    } else {
        Err(format!(
            "expected \"ping\", \"dns\" or \"tcp\", found \"{text}\""
        ))
    }
}
