//! `add/set/unset gslb site`, `add/set gslb service`, `add/set gslb
//! vserver`, `bind gslb vserver` and `enable|disable gslb service|vserver`.

use std::net::{IpAddr, Ipv4Addr};

use sextant_core::{LoadKind, Persistence, ServiceProtocol, TriggerMonitor, VServer};

use super::args::Args;
use super::{Arity, OptSpec, Reader, context, opt};
use crate::draft::{
    BackupParent, DEFAULT_DOMAIN_TTL, DEFAULT_PERSISTENCE_TIMEOUT, DomainBinding, DraftAdmin,
    DraftService, DraftSite, DraftVServer, Kind, LoadSourceKind, MAX_PERSISTENCE_TIMEOUT, MAX_TTL,
    Ref, ServiceBinding,
};
use crate::duration::{self, Unit};
use crate::lexer::Token;
use crate::no_effect::Scope;
use crate::scalar;

const SITE_SET_OPTS: &[OptSpec] = &[
    opt("publicIP", Arity::One),
    opt("metricExchange", Arity::One),
    opt("nwMetricExchange", Arity::One),
    opt("sessionExchange", Arity::One),
    opt("triggerMonitor", Arity::One),
    opt("backupParentlist", Arity::Many),
    opt("sitePassword", Arity::One),
    opt("encrypted", Arity::Flag),
    opt("encryptmethod", Arity::One),
    opt("kek", Arity::Flag),
    opt("suffix", Arity::One),
    opt("clip", Arity::One),
    opt("publicCLIP", Arity::One),
    opt("naptrReplacementSuffix", Arity::One),
];

const SITE_ADD_OPTS: &[OptSpec] = &[
    opt("publicIP", Arity::One),
    opt("siteType", Arity::One),
    opt("parentSite", Arity::One),
    opt("metricExchange", Arity::One),
    opt("nwMetricExchange", Arity::One),
    opt("sessionExchange", Arity::One),
    opt("triggerMonitor", Arity::One),
    opt("backupParentlist", Arity::Many),
    opt("sitePassword", Arity::One),
    opt("encrypted", Arity::Flag),
    opt("encryptmethod", Arity::One),
    opt("kek", Arity::Flag),
    opt("suffix", Arity::One),
    opt("clip", Arity::One),
    opt("publicCLIP", Arity::One),
    opt("naptrReplacementSuffix", Arity::One),
];

/// The options that only describe how the appliance encrypted a saved
/// `-sitePassword`.
const ENCRYPTION_OPTS: [&str; 4] = ["encrypted", "encryptmethod", "kek", "suffix"];

/// `LOCAL` → true, `REMOTE` → false.
fn site_type(text: &str) -> Result<bool, String> {
    if text.eq_ignore_ascii_case("LOCAL") {
        Ok(true)
    } else if text.eq_ignore_ascii_case("REMOTE") {
        Ok(false)
    } else {
        Err(format!("expected LOCAL or REMOTE, found \"{text}\""))
    }
}

fn trigger_monitor(text: &str) -> Result<TriggerMonitor, String> {
    [
        ("ALWAYS", TriggerMonitor::Always),
        ("MEPDOWN", TriggerMonitor::MepDown),
        ("MEPDOWN_SVCDOWN", TriggerMonitor::MepDownSvcDown),
    ]
    .iter()
    .find(|(w, _)| w.eq_ignore_ascii_case(text))
    .map(|(_, t)| *t)
    .ok_or_else(|| format!("expected ALWAYS, MEPDOWN or MEPDOWN_SVCDOWN, found \"{text}\""))
}

/// `add gslb site NAME [LOCAL|REMOTE] IP [options]`.
///
/// The optional type word before the IP is the older positional form of
/// `-siteType`.
pub(super) fn add_site(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = context("add gslb site", tokens);
    let args = r.args(line, &ctx, tokens, SITE_ADD_OPTS);
    let pos: Vec<&str> = args.positional.iter().map(|t| &*t.text).collect();
    let mut positional_type = None;
    let (name, ip_text) = match pos.as_slice() {
        [name, ip] => (*name, *ip),
        [name, ty, ip] if site_type(ty).is_ok() => {
            positional_type = site_type(ty).ok();
            (*name, *ip)
        }
        _ => {
            // Let the generic check produce the message.
            if r.positional(line, &ctx, &args, &["NAME", "IP"]).is_none() {
                return;
            }
            (pos[0], pos[1])
        }
    };
    let ip = match scalar::ip(ip_text) {
        Ok(ip) => ip,
        Err(e) => {
            r.error(line, &ctx, format!("site IP: {e}"));
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        }
    };
    let mut local = positional_type;
    if let Some(o) = args.get("siteType")
        && let Some(t) = r.value(line, &ctx, o, site_type)
    {
        if positional_type.is_some_and(|p| p != t) {
            r.error(line, &ctx, "the site type is given twice, differently");
        }
        local = Some(t);
    }
    let parent = args.get("parentSite").map(|o| Ref {
        name: o.value().to_string(),
        line,
        context: ctx.clone(),
    });
    r.draft.sites.push(DraftSite {
        name: name.to_string(),
        line,
        ip,
        public_ip: None,
        local_line: (local == Some(true)).then_some(line),
        parent,
        backup_parents: Vec::new(),
        metric_exchange: true,
        nw_metric_exchange: None,
        session_exchange: None,
        trigger_monitor: TriggerMonitor::Always,
        password: None,
    });
    let idx = r.draft.sites.len() - 1;
    apply_site_opts(r, line, &ctx, idx, &args);
}

/// `set gslb site NAME [options]`.
pub(super) fn set_site(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = context("set gslb site", tokens);
    let args = r.args(line, &ctx, tokens, SITE_SET_OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["NAME"]) else {
        return;
    };
    let Some(idx) = find_site(r, line, &ctx, pos[0]) else {
        return;
    };
    if !args.any {
        r.error(
            line,
            &ctx,
            format!(
                "nothing to set; give one of {}",
                super::args::list(SITE_SET_OPTS)
            ),
        );
    }
    apply_site_opts(r, line, &ctx, idx, &args);
}

/// `unset gslb site NAME -backupParentlist|-sitePassword`.
pub(super) fn unset_site(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    const OPTS: &[OptSpec] = &[
        opt("backupParentlist", Arity::Flag),
        opt("sitePassword", Arity::Flag),
    ];
    let ctx = context("unset gslb site", tokens);
    let args = r.args(line, &ctx, tokens, OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["NAME"]) else {
        return;
    };
    let Some(idx) = find_site(r, line, &ctx, pos[0]) else {
        return;
    };
    if args.has("backupParentlist") {
        r.draft.sites[idx].backup_parents.clear();
    }
    if args.has("sitePassword") {
        r.draft.sites[idx].password = None;
    }
    if !args.any {
        r.error(
            line,
            &ctx,
            "nothing to unset; give -backupParentlist or -sitePassword",
        );
    }
}

/// A site defined on an earlier line, by name (case-insensitive).
fn find_site(r: &mut Reader<'_>, line: usize, ctx: &str, name: &str) -> Option<usize> {
    let found = r
        .draft
        .sites
        .iter()
        .position(|s| s.name.eq_ignore_ascii_case(name));
    if found.is_none() {
        r.error(
            line,
            ctx,
            format!(
                "site \"{name}\" is not defined on an earlier line (add it with \"add gslb site\" first)"
            ),
        );
    }
    found
}

fn apply_site_opts(r: &mut Reader<'_>, line: usize, ctx: &str, idx: usize, args: &Args) {
    site_password_opts(r, line, ctx, idx, args);
    for o in &args.opts {
        r.no_effect(line, Scope::Site, o.name);
        match o.name {
            "publicIP" => {
                if let Some(ip) = r.value(line, ctx, o, scalar::ip) {
                    r.draft.sites[idx].public_ip = Some(ip);
                }
            }
            "metricExchange" => {
                if let Some(v) = r.value(line, ctx, o, scalar::enabled) {
                    r.draft.sites[idx].metric_exchange = v;
                }
            }
            "nwMetricExchange" => {
                if let Some(v) = r.value(line, ctx, o, scalar::enabled) {
                    r.draft.sites[idx].nw_metric_exchange = Some((v, line));
                }
            }
            "sessionExchange" => {
                if let Some(v) = r.value(line, ctx, o, scalar::enabled) {
                    r.draft.sites[idx].session_exchange = Some((v, line));
                }
            }
            "triggerMonitor" => {
                if let Some(v) = r.value(line, ctx, o, trigger_monitor) {
                    r.draft.sites[idx].trigger_monitor = v;
                }
            }
            "backupParentlist" => {
                let raw = r.raw;
                r.draft.sites[idx].backup_parents = o
                    .values
                    .iter()
                    .map(|t| BackupParent {
                        site: Ref {
                            name: t.text.to_string(),
                            line,
                            context: ctx.into(),
                        },
                        column: Some(crate::lexer::column(raw, t.start)),
                    })
                    .collect();
            }
            "clip" | "publicCLIP" => {
                // Only checked: the cluster IP serves the appliance's
                // configuration auto-sync (warned as without effect).
                r.value(line, ctx, o, scalar::ip);
            }
            "naptrReplacementSuffix" if o.value().is_empty() => {
                r.error(line, ctx, "-naptrReplacementSuffix is empty");
            }
            // siteType and parentSite are handled by add_site, the
            // password and its encryption options by site_password_opts.
            _ => {}
        }
    }
}

/// `-sitePassword SECRET`: the metric exchange secret of the links this
/// site accepts. A password the appliance saved encrypted
/// (`-sitePassword HEX -encrypted -encryptmethod ENCMTHD_3`) cannot be
/// decrypted without the appliance's key, so it is an error that says how
/// to enter it again; a placeholder written by `sextant import`
/// ([`crate::secrets::REENTER_PREFIX`]) is accepted with a warning.
fn site_password_opts(r: &mut Reader<'_>, line: usize, ctx: &str, idx: usize, args: &Args) {
    let encryption: Vec<&str> = ENCRYPTION_OPTS
        .iter()
        .copied()
        .filter(|name| args.has(name) || args.get(name).is_some())
        .collect();
    let Some(o) = args.get("sitePassword") else {
        if let Some(first) = encryption.first() {
            r.error(
                line,
                ctx,
                format!("-{first} describes a saved -sitePassword, and none is given"),
            );
        }
        return;
    };
    let site = r.draft.sites[idx].name.clone();
    if args.has("encrypted") {
        r.error(
            line,
            ctx,
            format!(
                "-sitePassword is encrypted with the appliance's own key (-encrypted), which Sextant cannot decrypt;                  enter the password of site {site} again in clear (-sitePassword SECRET, without -encrypted{});                  `sextant import` replaces it with a placeholder ({}...) for you to fill in",
                if encryption.len() > 1 {
                    " and the other encryption options"
                } else {
                    ""
                },
                crate::secrets::REENTER_PREFIX
            ),
        );
        return;
    }
    if let Some(first) = encryption.first() {
        r.error(
            line,
            ctx,
            format!("-{first} applies only to an -encrypted -sitePassword"),
        );
    }
    match crate::secrets::site_password(o.value(), &site) {
        Ok((password, warning)) => {
            if let Some(w) = warning {
                r.diag.warn(line, format!("{ctx}: {w}"));
            }
            r.draft.sites[idx].password = Some(password);
        }
        Err(e) => r.error(line, ctx, format!("-sitePassword: {e}")),
    }
}

const SERVICE_OPTS: &[OptSpec] = &[
    opt("siteName", Arity::One),
    opt("publicIP", Arity::One),
    opt("publicPort", Arity::One),
    opt("maxClient", Arity::One),
    opt("cip", Arity::Many),
    opt("cipHeader", Arity::One),
    opt("cltTimeout", Arity::One),
    opt("svrTimeout", Arity::One),
    opt("downStateFlush", Arity::One),
    opt("loadSource", Arity::One),
    opt("loadURL", Arity::One),
    opt("loadInterval", Arity::Duration),
    opt("connectionsMetric", Arity::One),
    opt("responseTimeMetric", Arity::One),
    opt("bandwidthMetric", Arity::One),
    opt("packetsMetric", Arity::One),
    opt("customLoadMetric", Arity::One),
    opt("cpuMetric", Arity::One),
    opt("memoryMetric", Arity::One),
    opt("requestsMetric", Arity::One),
    opt("newSessionsMetric", Arity::One),
    opt("healthyBackendsMetric", Arity::One),
    opt("sitePersistence", Arity::One),
    opt("cookieTimeout", Arity::One),
    opt("sitePrefix", Arity::One),
    opt("healthMonitor", Arity::One),
    opt("appflowLog", Arity::One),
    opt("maxBandwidth", Arity::One),
    opt("monThreshold", Arity::One),
    opt("maxAAAUsers", Arity::One),
    opt("hashId", Arity::One),
    opt("vServiceName", Arity::One),
    opt("state", Arity::One),
];

/// `set gslb service` takes every option of `add` but the site (the first).
const SERVICE_SET_OPTS: &[OptSpec] = SERVICE_OPTS.split_at(1).1;

/// The option naming the metric of each figure.
const METRIC_OPTS: [(&str, LoadKind); LoadKind::EVERY.len()] = [
    ("connectionsMetric", LoadKind::Connections),
    ("responseTimeMetric", LoadKind::ResponseTime),
    ("bandwidthMetric", LoadKind::Bandwidth),
    ("packetsMetric", LoadKind::Packets),
    ("customLoadMetric", LoadKind::CustomLoad),
    ("cpuMetric", LoadKind::Cpu),
    ("memoryMetric", LoadKind::Memory),
    ("requestsMetric", LoadKind::Requests),
    ("newSessionsMetric", LoadKind::NewSessions),
    ("healthyBackendsMetric", LoadKind::HealthyBackends),
];

/// `add gslb service NAME IP PROTOCOL PORT -siteName SITE [options]`.
pub(super) fn add_service(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = context("add gslb service", tokens);
    if tokens
        .iter()
        .any(|t| t.is_option() && t.text[1..].eq_ignore_ascii_case("cnameEntry"))
    {
        add_cname_service(r, line, &ctx, tokens);
        return;
    }
    let args = r.args(line, &ctx, tokens, SERVICE_OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["NAME", "IP", "PROTOCOL", "PORT"]) else {
        return;
    };
    let name = pos[0].to_string();
    let ip = r
        .address_or_server(line, &ctx, "IP", pos[1])
        .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    let protocol = scalar::protocol(pos[2]).unwrap_or_else(|e| {
        r.error(line, &ctx, e);
        ServiceProtocol::Any
    });
    let port = scalar::port(pos[3]).unwrap_or_else(|e| {
        r.error(line, &ctx, format!("PORT: {e}"));
        1
    });
    let site = args.get("siteName").map(|o| Ref {
        name: o.value().to_string(),
        line,
        context: ctx.clone(),
    });
    if site.is_none() && args.lacks("siteName") {
        r.error(
            line,
            &ctx,
            "-siteName is required (the site the service belongs to)",
        );
    }
    r.draft.services.push(DraftService {
        name,
        line,
        ip,
        port,
        protocol,
        site,
        public_ip: None,
        public_port: None,
        max_clients: 0,
        load: None,
        vservice_name: None,
        cname: None,
        mon_threshold: 0,
        health_monitor: None,
    });
    let idx = r.draft.services.len() - 1;
    apply_service_opts(r, line, &ctx, idx, &args);
}

/// `add gslb service NAME [PROTOCOL PORT] -cnameEntry CANONICAL -siteName
/// SITE [options]`: CNAME-based GSLB. The service stands for a name, not an
/// address; a vserver with `-dnsRecordType CNAME` answers with a CNAME to
/// the chosen service's name.
fn add_cname_service(r: &mut Reader<'_>, line: usize, ctx: &str, tokens: &[Token]) {
    let mut specs = SERVICE_OPTS.to_vec();
    specs.push(opt("cnameEntry", Arity::One));
    let args = r.args(line, ctx, tokens, &specs);
    let name = match args.positional {
        [name] | [name, _, _] => name.text.to_string(),
        _ => {
            r.error(
                line,
                ctx,
                "with -cnameEntry, give NAME (and optionally PROTOCOL PORT) before the options, no IP",
            );
            return;
        }
    };
    let (protocol, port) = match args.positional {
        [_, proto, port] => (
            scalar::protocol(&proto.text).unwrap_or_else(|e| {
                r.error(line, ctx, e);
                ServiceProtocol::Any
            }),
            scalar::port(&port.text).unwrap_or_else(|e| {
                r.error(line, ctx, format!("PORT: {e}"));
                1
            }),
        ),
        _ => (ServiceProtocol::Any, 1),
    };
    let cname = args
        .get("cnameEntry")
        .map(|o| scalar::normalize_name(o.value()));
    if let Some(c) = &cname
        && let Err(e) = scalar::check_domain(c)
    {
        r.error(line, ctx, format!("-cnameEntry: {e}"));
    }
    let site = args.get("siteName").map(|o| Ref {
        name: o.value().to_string(),
        line,
        context: ctx.into(),
    });
    if site.is_none() && args.lacks("siteName") {
        r.error(
            line,
            ctx,
            "-siteName is required (the site the service belongs to)",
        );
    }
    r.draft.services.push(DraftService {
        name,
        line,
        ip: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        port,
        protocol,
        site,
        public_ip: None,
        public_port: None,
        max_clients: 0,
        load: None,
        vservice_name: None,
        cname,
        mon_threshold: 0,
        health_monitor: None,
    });
    let idx = r.draft.services.len() - 1;
    apply_service_opts(r, line, ctx, idx, &args);
}

/// `set gslb service NAME [options]`.
pub(super) fn set_service(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = context("set gslb service", tokens);
    let args = r.args(line, &ctx, tokens, SERVICE_SET_OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["NAME"]) else {
        return;
    };
    let name = pos[0];
    let Some(idx) = r
        .draft
        .services
        .iter()
        .position(|s| s.name.eq_ignore_ascii_case(name))
    else {
        r.error(
            line,
            &ctx,
            format!(
                "service \"{name}\" is not defined on an earlier line (add it with \"add gslb service\" first)"
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
                super::args::list(SERVICE_SET_OPTS)
            ),
        );
    }
    apply_service_opts(r, line, &ctx, idx, &args);
}

fn apply_service_opts(r: &mut Reader<'_>, line: usize, ctx: &str, idx: usize, args: &Args) {
    // The load source first: changing it forgets the Prometheus settings
    // of an earlier line, and options of this line then apply to the new
    // source (validate checks that they fit it).
    if let Some(o) = args.get("loadSource")
        && let Some(kind) = r.value(line, ctx, o, |v| {
            LoadSourceKind::parse(v)
                .ok_or_else(|| format!("expected PROMETHEUS, PUSH or MONITORS, found \"{v}\""))
        })
    {
        let load = r.draft.services[idx].load_mut();
        if kind != LoadSourceKind::Prometheus {
            load.clear_prometheus();
        }
        load.source = Some((kind, line));
    }
    for o in &args.opts {
        if !crate::no_effect::is_inert(Scope::Service, o.name, o.value()) {
            r.no_effect(line, Scope::Service, o.name);
        }
        match o.name {
            "publicIP" => {
                if let Some(ip) = r.value(line, ctx, o, scalar::ip) {
                    r.draft.services[idx].public_ip = Some(ip);
                }
            }
            "publicPort" => {
                if let Some(p) = r.value(line, ctx, o, scalar::port) {
                    r.draft.services[idx].public_port = Some(p);
                }
            }
            "maxClient" => {
                if let Some(n) = r.value(line, ctx, o, |v| scalar::int_in(v, 0, 4_294_967_294)) {
                    r.draft.services[idx].max_clients = n as u32;
                }
            }
            // Client-IP insertion and LB timeouts belong to the load balancer
            // behind the service, not to DNS: accepted (so appliance exports
            // load) and checked, with no effect.
            "cip" => super::dns::check_cip(r, line, ctx, o),
            "downStateFlush" | "appflowLog" => {
                r.value(line, ctx, o, scalar::enabled);
            }
            "sitePersistence" => {
                let known = ["ConnectionProxy", "HTTPRedirect", "NONE"];
                r.value(line, ctx, o, |v| {
                    known
                        .iter()
                        .any(|k| k.eq_ignore_ascii_case(v))
                        .then_some(())
                        .ok_or_else(|| {
                            format!("expected ConnectionProxy, HTTPRedirect or NONE, found \"{v}\"")
                        })
                });
            }
            // Whether monitors are bound is known once the whole file is
            // read: validate says what NO means for this service.
            "healthMonitor" => {
                if let Some(yes) = r.value(line, ctx, o, scalar::yes_no) {
                    r.draft.services[idx].health_monitor = Some((yes, line));
                }
            }
            "monThreshold" => {
                if let Some(t) = r.value(line, ctx, o, |v| scalar::int_in(v, 0, 65_535)) {
                    r.draft.services[idx].mon_threshold = u32::try_from(t).unwrap_or(u32::MAX);
                }
            }
            "state" => {
                let name = r.draft.services[idx].name.clone();
                admin_state(r, line, ctx, o, Kind::Service, name);
            }
            "cookieTimeout" | "maxBandwidth" | "maxAAAUsers" | "hashId" => {
                r.value(line, ctx, o, |v| scalar::int_in(v, 0, 4_294_967_294));
            }
            "cltTimeout" | "svrTimeout" => {
                r.value(line, ctx, o, |v| scalar::int_in(v, 0, 31_536_000));
            }
            "cipHeader" if o.value().is_empty() => {
                r.error(line, ctx, "-cipHeader: the header name is empty");
            }
            "loadURL" => {
                r.draft.services[idx].load_mut().url = Some((o.value().to_string(), line));
            }
            "vServiceName" => {
                r.value(line, ctx, o, scalar::check_name);
                r.draft.services[idx].vservice_name = Some((o.value().to_string(), line));
            }
            "loadInterval" => {
                if let Some(d) = r.duration(line, ctx, o, Unit::Seconds) {
                    r.draft.services[idx].load_mut().interval = Some((d, line));
                }
            }
            name => {
                if let Some((_, kind)) = METRIC_OPTS.iter().find(|(n, _)| *n == name) {
                    r.draft.services[idx].load_mut().metrics[kind.index()] =
                        Some((o.value().to_string(), line));
                }
            }
        }
    }
}

const VSERVER_OPTS: &[OptSpec] = &[
    opt("lbMethod", Arity::One),
    opt("backupLBMethod", Arity::One),
    opt("persistenceType", Arity::One),
    opt("persistenceId", Arity::One),
    opt("timeout", Arity::Duration),
    opt("persistMask", Arity::One),
    opt("v6persistmasklen", Arity::One),
    opt("EDR", Arity::One),
    opt("MIR", Arity::One),
    opt("ECS", Arity::One),
    opt("backupVServer", Arity::One),
    opt("netmask", Arity::One),
    opt("v6netmasklen", Arity::One),
    opt("tolerance", Arity::One),
    opt("dnsRecordType", Arity::One),
    opt("appflowLog", Arity::One),
    opt("considerEffectiveState", Arity::One),
    opt("disablePrimaryOnDown", Arity::One),
    opt("dynamicWeight", Arity::One),
    opt("ecsAddrValidation", Arity::One),
    opt("toggleorder", Arity::One),
    opt("orderthreshold", Arity::One),
    opt("state", Arity::One),
];

/// `add gslb vserver NAME PROTOCOL [options]`.
pub(super) fn add_vserver(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = context("add gslb vserver", tokens);
    let args = r.args(line, &ctx, tokens, VSERVER_OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["NAME", "PROTOCOL"]) else {
        return;
    };
    let protocol = scalar::protocol(pos[1]).unwrap_or_else(|e| {
        r.error(line, &ctx, e);
        ServiceProtocol::Any
    });
    r.draft.vservers.push(DraftVServer {
        line,
        vserver: VServer::new(pos[0], protocol),
        backup_vserver: None,
    });
    let idx = r.draft.vservers.len() - 1;
    apply_vserver_opts(r, line, &ctx, idx, &args);
}

/// `set gslb vserver NAME [options]`.
pub(super) fn set_vserver(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = context("set gslb vserver", tokens);
    let args = r.args(line, &ctx, tokens, VSERVER_OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["NAME"]) else {
        return;
    };
    let name = pos[0];
    let Some(idx) = r
        .draft
        .vservers
        .iter()
        .position(|v| v.vserver.name.eq_ignore_ascii_case(name))
    else {
        r.error(
            line,
            &ctx,
            format!(
                "vserver \"{name}\" is not defined on an earlier line (add it with \"add gslb vserver\" first)"
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
                super::args::list(VSERVER_OPTS)
            ),
        );
    }
    apply_vserver_opts(r, line, &ctx, idx, &args);
}

fn apply_vserver_opts(r: &mut Reader<'_>, line: usize, ctx: &str, idx: usize, args: &Args) {
    // The persistence type first, so that `-timeout 5 -persistenceType
    // SOURCEIP` works in either order.
    if let Some(o) = args.get("persistenceType") {
        let kind = r.value(line, ctx, o, |v| {
            if v.eq_ignore_ascii_case("SOURCEIP") {
                Ok(true)
            } else if v.eq_ignore_ascii_case("NONE") {
                Ok(false)
            } else {
                Err(format!(
                    "expected SOURCEIP or NONE (GSLB persistence is by source IP), found \"{v}\""
                ))
            }
        });
        let vs = &mut r.draft.vservers[idx].vserver;
        match kind {
            Some(true) if vs.persistence.is_none() => {
                vs.persistence = Some(Persistence {
                    timeout: DEFAULT_PERSISTENCE_TIMEOUT,
                    v4_mask: 32,
                    v6_mask: 128,
                })
            }
            Some(false) => vs.persistence = None,
            _ => {}
        }
    }
    for o in &args.opts {
        if !crate::no_effect::is_inert(Scope::VServer, o.name, o.value()) {
            r.no_effect(line, Scope::VServer, o.name);
        }
        match o.name {
            "persistenceType" => {}
            "lbMethod" => {
                if let Some(m) = r.value(line, ctx, o, scalar::lb_method) {
                    r.no_effect(line, Scope::VServer, &format!("lbMethod {m}"));
                    r.draft.vservers[idx].vserver.method = m;
                }
            }
            "backupLBMethod" => {
                if let Some(m) = r.value(line, ctx, o, scalar::lb_method) {
                    r.no_effect(line, Scope::VServer, &format!("backupLBMethod {m}"));
                    r.draft.vservers[idx].vserver.backup_method = Some(m);
                }
            }
            "timeout" | "persistMask" | "v6persistmasklen" => {
                persistence_opt(r, line, ctx, idx, o);
            }
            "persistenceId" => {
                // Accepted and checked; the model has no persistence id yet.
                r.value(line, ctx, o, |v| scalar::int_in(v, 0, 65535));
            }
            "EDR" => {
                if let Some(v) = r.value(line, ctx, o, scalar::enabled) {
                    r.draft.vservers[idx].vserver.empty_down_response = v;
                }
            }
            "MIR" => {
                if let Some(v) = r.value(line, ctx, o, scalar::enabled) {
                    r.draft.vservers[idx].vserver.multi_ip_response = v;
                }
            }
            "ECS" => {
                if let Some(v) = r.value(line, ctx, o, scalar::enabled) {
                    r.draft.vservers[idx].vserver.ecs = v;
                }
            }
            "backupVServer" => {
                r.draft.vservers[idx].backup_vserver = Some(Ref {
                    name: o.value().to_string(),
                    line,
                    context: ctx.into(),
                });
            }
            "netmask" => {
                if let Some(m) = r.value(line, ctx, o, scalar::v4_mask) {
                    r.draft.vservers[idx].vserver.hash_v4_mask = m;
                }
            }
            "v6netmasklen" => {
                if let Some(m) = r.value(line, ctx, o, |v| scalar::int_in(v, 1, 128)) {
                    r.draft.vservers[idx].vserver.hash_v6_mask = m as u8;
                }
            }
            "tolerance" => {
                // The RTT tolerance of this vserver, in ms (0-100 on the appliance).
                if let Some(ms) = r.value(line, ctx, o, |v| scalar::int_in(v, 0, 100)) {
                    r.draft.vservers[idx].vserver.rtt_tolerance =
                        std::time::Duration::from_millis(ms);
                }
            }
            "dnsRecordType" => {
                let cname = r.value(line, ctx, o, |v| {
                    if v.eq_ignore_ascii_case("A") || v.eq_ignore_ascii_case("AAAA") {
                        Ok(false)
                    } else if v.eq_ignore_ascii_case("CNAME") {
                        Ok(true)
                    } else if v.eq_ignore_ascii_case("NAPTR") {
                        Err(format!(
                            "{} GSLB is not supported yet; use A or AAAA (Sextant answers both A and AAAA queries from the services' addresses)",
                            v.to_ascii_uppercase()
                        ))
                    } else {
                        Err(format!("expected A, AAAA or CNAME, found \"{v}\""))
                    }
                });
                if let Some(cname) = cname {
                    r.draft.vservers[idx].vserver.cname = cname;
                }
            }
            "appflowLog" => {
                r.value(line, ctx, o, scalar::enabled);
            }
            "state" => {
                let name = r.draft.vservers[idx].vserver.name.clone();
                admin_state(r, line, ctx, o, Kind::VServer, name);
            }
            _ => {}
        }
    }
}

/// `-state ENABLED|DISABLED` of a service or vserver: DISABLED is the
/// maintenance mark the object starts with (docs/operations.md).
fn admin_state(
    r: &mut Reader<'_>,
    line: usize,
    ctx: &str,
    o: &super::args::Opt,
    kind: Kind,
    name: String,
) {
    if let Some(enabled) = r.value(line, ctx, o, scalar::enabled) {
        r.draft.admin.push(DraftAdmin {
            kind,
            name: Ref {
                name,
                line,
                context: ctx.into(),
            },
            disabled: !enabled,
        });
    }
}

/// `enable gslb service NAME`.
pub(super) fn enable_service(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    enable_or_disable(r, line, tokens, "enable gslb service", Kind::Service, false);
}

/// `disable gslb service NAME`.
pub(super) fn disable_service(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    enable_or_disable(r, line, tokens, "disable gslb service", Kind::Service, true);
}

/// `enable gslb vserver NAME`.
pub(super) fn enable_vserver(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    enable_or_disable(r, line, tokens, "enable gslb vserver", Kind::VServer, false);
}

/// `disable gslb vserver NAME`.
pub(super) fn disable_vserver(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    enable_or_disable(r, line, tokens, "disable gslb vserver", Kind::VServer, true);
}

/// `enable|disable gslb service|vserver NAME`, as a saved appliance
/// configuration writes a disabled object: the name is resolved once the
/// whole file is read, so the line may come before or after the `add`.
fn enable_or_disable(
    r: &mut Reader<'_>,
    line: usize,
    tokens: &[Token],
    command: &str,
    kind: Kind,
    disabled: bool,
) {
    let ctx = context(command, tokens);
    let args = r.args(line, &ctx, tokens, &[]);
    let Some([name]) = r.positional(line, &ctx, &args, &["NAME"]) else {
        return;
    };
    r.draft.admin.push(DraftAdmin {
        kind,
        name: Ref {
            name: name.to_string(),
            line,
            context: ctx.clone(),
        },
        disabled,
    });
}

fn persistence_opt(r: &mut Reader<'_>, line: usize, ctx: &str, idx: usize, o: &super::args::Opt) {
    let value: Option<Persist> = match o.name {
        "timeout" => r.duration(line, ctx, o, Unit::Minutes).and_then(|d| {
            if d.is_zero() || d > MAX_PERSISTENCE_TIMEOUT {
                r.error(
                    line,
                    ctx,
                    format!(
                        "-timeout: {} is out of range; expected more than 0 and at most 1440 minutes",
                        duration::format(d)
                    ),
                );
                None
            } else {
                Some(Persist::Timeout(d))
            }
        }),
        "persistMask" => r.value(line, ctx, o, scalar::v4_mask).map(Persist::V4),
        _ => r
            .value(line, ctx, o, |v| scalar::int_in(v, 1, 128))
            .map(|m| Persist::V6(m as u8)),
    };
    let Some(value) = value else { return };
    let Some(p) = r.draft.vservers[idx].vserver.persistence.as_mut() else {
        r.error(
            line,
            ctx,
            format!(
                "-{} needs -persistenceType SOURCEIP (persistence is off for this vserver)",
                o.name
            ),
        );
        return;
    };
    match value {
        Persist::Timeout(d) => p.timeout = d,
        Persist::V4(m) => p.v4_mask = m,
        Persist::V6(m) => p.v6_mask = m,
    }
}

enum Persist {
    Timeout(std::time::Duration),
    V4(u8),
    V6(u8),
}

const BIND_VSERVER_OPTS: &[OptSpec] = &[
    opt("serviceName", Arity::One),
    opt("weight", Arity::One),
    opt("domainName", Arity::One),
    opt("TTL", Arity::One),
    opt("backupIP", Arity::One),
];

/// `bind gslb vserver NAME -serviceName SVC [-weight N]` or
/// `bind gslb vserver NAME -domainName FQDN [-TTL N] [-backupIP IP]`.
pub(super) fn bind_vserver(r: &mut Reader<'_>, line: usize, tokens: &[Token]) {
    let ctx = context("bind gslb vserver", tokens);
    let args = r.args(line, &ctx, tokens, BIND_VSERVER_OPTS);
    let Some(pos) = r.positional(line, &ctx, &args, &["NAME"]) else {
        return;
    };
    let vserver = Ref {
        name: pos[0].to_string(),
        line,
        context: ctx.clone(),
    };
    match (args.get("serviceName"), args.get("domainName")) {
        (Some(_), Some(_)) => r.error(
            line,
            &ctx,
            "give either -serviceName or -domainName, not both (use one bind line for each)",
        ),
        (None, None) => {
            if args.lacks("serviceName") && args.lacks("domainName") {
                r.error(
                    line,
                    &ctx,
                    "nothing to bind; give -serviceName SERVICE [-weight N] or -domainName NAME [-TTL N] [-backupIP IP]",
                );
            }
        }
        (Some(svc), None) => {
            for other in ["TTL", "backupIP"] {
                if args.has(other) {
                    r.error(
                        line,
                        &ctx,
                        format!("-{other} belongs to -domainName bindings, not -serviceName"),
                    );
                }
            }
            let weight = match args.get("weight") {
                Some(o) => r
                    .value(line, &ctx, o, |v| scalar::int_in(v, 1, 100))
                    .unwrap_or(1),
                None => 1,
            } as u32;
            r.draft.service_bindings.push(ServiceBinding {
                vserver,
                service: Ref {
                    name: svc.value().to_string(),
                    line,
                    context: ctx.clone(),
                },
                weight,
            });
        }
        (None, Some(dom)) => {
            if args.has("weight") {
                r.error(
                    line,
                    &ctx,
                    "-weight belongs to -serviceName bindings, not -domainName",
                );
            }
            let ttl = match args.get("TTL") {
                Some(o) => r
                    .value(line, &ctx, o, |v| scalar::int_in(v, 1, MAX_TTL))
                    .unwrap_or(u64::from(DEFAULT_DOMAIN_TTL)),
                None => u64::from(DEFAULT_DOMAIN_TTL),
            } as u32;
            let backup_ip = args
                .get("backupIP")
                .and_then(|o| r.value(line, &ctx, o, scalar::ip));
            r.draft.domain_bindings.push(DomainBinding {
                vserver,
                name: dom.value().to_string(),
                line,
                ttl,
                backup_ip,
            });
        }
    }
}
