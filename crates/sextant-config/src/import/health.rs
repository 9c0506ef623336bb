//! What decides a local GSLB service's health on the appliance when no
//! monitor is bound to it: the load-balancing objects behind its address.
//!
//! The appliance's most common pattern is a GSLB service at the VIP:port of
//! a local LB vserver (`add lb vserver web_vs HTTP 10.20.0.50 80` and `add
//! gslb service gs_web 10.20.0.50 HTTP 80 -siteName local`) with no monitor
//! of its own. There the GSLB service takes the LB vserver's state, which
//! is UP while one of its bound services (or serviceGroup members) is UP,
//! each by its own monitors, or by the appliance's default monitor when it
//! has none (`tcp-default` for TCP-based service types, `ping-default` for
//! the others). A GSLB service at the address of a local `add service` or
//! serviceGroup member takes that service's state the same way.
//!
//! Sextant reads no load-balancing lines, so the importer carries that
//! check over: one monitor per backend and monitor, the backend's monitor
//! with `-destIP`/`-destPort` set to the backend, bound to the GSLB service
//! with `-weight 1`, and the service's `-monThreshold` such that it is UP
//! when one backend is (1 when every backend has one monitor). What cannot
//! be carried over is reported for the operator's action.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::lexer::Token;
use crate::scope;

use super::rewrite::Line;
use super::{option_value, report::Report};

/// One saved line: number, text, tokens.
type Saved<'a> = (usize, &'a str, Vec<Token<'a>>);

/// What the importer writes for one GSLB service's health.
#[derive(Debug, Default)]
pub(super) struct Plan {
    /// `-monThreshold` to give the service (0: leave it).
    pub threshold: u32,
    /// `add lb monitor` and `bind gslb service` lines to write after the
    /// service's line.
    pub lines: Vec<String>,
}

/// The plans, and which saved lines each GSLB service's health read.
#[derive(Debug, Default)]
pub(super) struct Health {
    /// By GSLB service name, lower case.
    pub plans: HashMap<String, Plan>,
    /// Saved line -> the GSLB services (as written) whose health it was
    /// read for.
    pub read_for: HashMap<usize, Vec<String>>,
}

impl Health {
    /// Why a left-out line was read, if it was.
    pub(super) fn why(&self, line: usize) -> Option<String> {
        let names = self.read_for.get(&line)?;
        let word = if names.len() == 1 {
            "GSLB service"
        } else {
            "GSLB services"
        };
        Some(format!(
            "read for the health of {word} {}",
            names.join(", ")
        ))
    }
}

struct LbService {
    server: String,
    ty: String,
    port: String,
    line: usize,
    /// `-healthMonitor NO`: the appliance never probes it and shows it UP.
    unmonitored: bool,
}

#[derive(Default)]
struct Group {
    ty: String,
    line: usize,
    members: Vec<(String, String, usize)>,
    monitors: Vec<(String, usize)>,
}

struct Vserver {
    name: String,
    ip: String,
    port: String,
    line: usize,
    bound: Vec<(String, usize)>,
}

struct GslbService {
    name: String,
    lower: String,
    server: String,
    port: String,
    site: String,
    line: usize,
}

/// The load-balancing part of a saved file, by lower-case name.
#[derive(Default)]
struct Lb<'a> {
    servers: HashMap<String, (String, usize)>,
    services: HashMap<String, LbService>,
    groups: HashMap<String, Group>,
    service_monitors: HashMap<String, Vec<(String, usize)>>,
    vservers: Vec<Vserver>,
    /// `add lb monitor` / `set lb monitor` lines, by monitor name.
    monitor_lines: HashMap<String, Vec<&'a Saved<'a>>>,
    gslb: Vec<GslbService>,
    /// GSLB services with a monitor bound in the file.
    monitored: std::collections::HashSet<String>,
}

/// One server:port behind a GSLB service, with its monitors.
struct Backend {
    ip: IpAddr,
    port: String,
    monitors: Vec<(String, usize)>,
    /// The service's type, for its default monitor.
    ty: String,
}

/// Service types the appliance monitors with `tcp-default` when no monitor
/// is bound; the others get `ping-default`.
const TCP_TYPES: &[&str] = &[
    "HTTP",
    "SSL",
    "TCP",
    "SSL_BRIDGE",
    "SSL_TCP",
    "FTP",
    "MYSQL",
    "MSSQL",
    "ORACLE",
    "RDP",
    "RTSP",
    "SMPP",
    "MQTT",
    "MQTT_TLS",
    "DNS_TCP",
    "ADNS_TCP",
    "SIP_SSL",
    "SIP_TCP",
    "DIAMETER",
    "SSL_DIAMETER",
    "LDAP",
    "SMTP",
    "POP3",
    "IMAP",
    "NNTP",
    "MONGO",
    "MONGO_TLS",
    "REDIS",
    "HTTP_QUIC",
];

/// Plans the health of every local GSLB service with no monitor bound that
/// stands at a local LB vserver's VIP or a local service's address.
/// `local`: the local site's name, when known.
pub(super) fn plan(lines: &[Saved<'_>], local: Option<&str>, report: &mut Report) -> Health {
    let lb = Lb::scan(lines);
    let mut health = Health::default();
    for gs in &lb.gslb {
        if lb.monitored.contains(&gs.lower)
            || local.is_some_and(|l| !l.eq_ignore_ascii_case(&gs.site))
        {
            continue;
        }
        let Some(ip) = lb.address(&gs.server) else {
            continue;
        };
        let mut read = Vec::<usize>::new();
        let (what, backends) = if let Some(vs) = lb
            .vservers
            .iter()
            .find(|v| v.ip.parse::<IpAddr>().ok() == Some(ip) && v.port == gs.port)
        {
            read.push(vs.line);
            let mut backends = Vec::new();
            for (target, bline) in &vs.bound {
                if lb.services.contains_key(target) || lb.groups.contains_key(target) {
                    read.push(*bline);
                    backends.extend(lb.backends_of(target, gs, &mut read, report));
                }
            }
            if backends.is_empty() && read.len() == 1 {
                report.action(gs.line, format!("gslb service {} is at the VIP {ip}:{} of lb vserver {} (line {}), whose state it takes on the appliance; the file binds no service to that vserver, so there is nothing behind it to probe: it is written with no monitor (UP unless its site reports it DOWN over metric exchange); bind a monitor to it (`bind gslb service {} -monitorName MONITOR`)", gs.name, gs.port, vs.name, vs.line, gs.name));
                health.note(&gs.name, &read);
                continue;
            }
            (
                format!("the VIP of lb vserver {} (line {})", vs.name, vs.line),
                backends,
            )
        } else if let Some((name, s)) = lb
            .services
            .iter()
            .find(|(_, s)| s.port == gs.port && lb.address(&s.server) == Some(ip))
        {
            read.push(s.line);
            let backends = lb.backends_of(name, gs, &mut read, report);
            (
                format!("the address of service {name} (line {})", s.line),
                backends,
            )
        } else if let Some((name, g)) = lb.groups.iter().find(|(_, g)| {
            g.members
                .iter()
                .any(|(srv, port, _)| *port == gs.port && lb.address(srv) == Some(ip))
        }) {
            read.push(g.line);
            let backends: Vec<Backend> = lb
                .backends_of(name, gs, &mut read, report)
                .into_iter()
                .filter(|b| b.ip == ip && b.port == gs.port)
                .collect();
            (
                format!("a member of serviceGroup {name} (line {})", g.line),
                backends,
            )
        } else {
            continue;
        };
        // A service the appliance never probes (`-healthMonitor NO`) is
        // always UP there, and so is what stands in front of it.
        if let Some((name, s)) = lb
            .services
            .iter()
            .find(|(_, s)| s.unmonitored && read.contains(&s.line))
        {
            report.changed(gs.line, format!("gslb service {}: no monitor is bound to it and it is at {what}, whose state it takes on the appliance; service {name} (line {}) has -healthMonitor NO, so the appliance never probes it and shows it UP, and the GSLB service with it: written with no monitor, as UP as on the appliance", gs.name, s.line));
            health.note(&gs.name, &read);
            continue;
        }
        if backends.is_empty() {
            report.action(gs.line, format!("gslb service {} is at {what}, whose state it takes on the appliance, but no backend behind it could be carried over (above): it is written with no monitor (UP unless its site reports it DOWN over metric exchange); bind a monitor to it (`bind gslb service {} -monitorName MONITOR`)", gs.name, gs.name));
            health.note(&gs.name, &read);
            continue;
        }
        let mut plan = Plan::default();
        let mut probes = Vec::new();
        let mut per_backend = Vec::new();
        for (i, b) in backends.iter().enumerate() {
            let mut monitors = b.monitors.clone();
            if monitors.is_empty() {
                let default = if TCP_TYPES.contains(&b.ty.as_str()) {
                    "tcp-default"
                } else {
                    "ping-default"
                };
                monitors.push((default.to_string(), 0));
            }
            let mut n = 0;
            for (m, _) in &monitors {
                let name = format!("{}-{}-{m}", gs.name, i + 1);
                let Some(line) = lb.monitor_line(m, &name, b, gs, report, &mut read) else {
                    continue;
                };
                plan.lines.push(line);
                plan.lines.push(format!(
                    "bind gslb service {} -monitorName {name} -weight 1",
                    gs.name
                ));
                probes.push(format!("{}:{} by {m}", b.ip, b.port));
                n += 1;
            }
            if n > 0 {
                per_backend.push(n);
            }
        }
        if per_backend.is_empty() {
            health.note(&gs.name, &read);
            continue;
        }
        let rule = if per_backend.len() == 1 {
            // One backend: every one of its monitors must be UP, as on the
            // appliance (the default threshold, 0).
            "so it is UP while every monitor of its one backend is".to_string()
        } else if per_backend.iter().all(|n| *n == 1) {
            plan.threshold = 1;
            "and -monThreshold 1, so it is UP while one backend is UP, as the vserver is"
                .to_string()
        } else {
            let t = per_backend.iter().copied().min().unwrap_or(1);
            plan.threshold = u32::try_from(t).unwrap_or(1);
            format!(
                "and -monThreshold {t}: it is UP while {t} of these monitors are UP (on the appliance: while every monitor of one backend is; weights cannot say that exactly)"
            )
        };
        report.changed(gs.line, format!("gslb service {}: no monitor is bound to it and it is at {what}, whose state it takes on the appliance; written with a monitor per backend ({}), each bound with -weight 1, {rule}", gs.name, probes.join(", ")));
        health.note(&gs.name, &read);
        health.plans.insert(gs.lower.clone(), plan);
    }
    health
}

impl Health {
    fn note(&mut self, gslb: &str, lines: &[usize]) {
        for l in lines.iter().filter(|l| **l > 0) {
            let names = self.read_for.entry(*l).or_default();
            if !names.iter().any(|n| n == gslb) {
                names.push(gslb.to_string());
            }
        }
    }
}

impl<'a> Lb<'a> {
    fn scan(lines: &'a [Saved<'a>]) -> Lb<'a> {
        let mut lb = Lb::default();
        for saved in lines {
            let (line, _, tokens) = saved;
            let line = *line;
            if tokens.is_empty() {
                continue;
            }
            let words = scope::command_words(tokens).to_ascii_lowercase();
            let pos: Vec<&str> = tokens
                .iter()
                .take_while(|t| !t.is_option())
                .map(|t| &*t.text)
                .collect();
            let arg = |i: usize| pos.get(i).copied().unwrap_or("").to_string();
            let low = |i: usize| arg(i).to_ascii_lowercase();
            let monitor = option_value(tokens, "monitorName").map(str::to_ascii_lowercase);
            match words.as_str() {
                "add server" => {
                    lb.servers.insert(low(2), (arg(3), line));
                }
                "add service" => {
                    lb.services.insert(
                        low(2),
                        LbService {
                            server: low(3),
                            ty: arg(4).to_ascii_uppercase(),
                            port: arg(5),
                            line,
                            unmonitored: option_value(tokens, "healthMonitor")
                                .is_some_and(|v| v.eq_ignore_ascii_case("NO")),
                        },
                    );
                }
                "add servicegroup" => {
                    let g = lb.groups.entry(low(2)).or_default();
                    g.ty = arg(3).to_ascii_uppercase();
                    g.line = line;
                }
                "bind servicegroup" => {
                    if let Some(g) = lb.groups.get_mut(&low(2)) {
                        match monitor {
                            Some(m) => g.monitors.push((m, line)),
                            None if pos.len() >= 5 => g.members.push((low(3), arg(4), line)),
                            None => {}
                        }
                    }
                }
                "bind service" => {
                    if let Some(m) = monitor {
                        lb.service_monitors
                            .entry(low(2))
                            .or_default()
                            .push((m, line));
                    }
                }
                "bind lb monitor" => {
                    lb.service_monitors
                        .entry(low(4))
                        .or_default()
                        .push((low(3), line));
                    if let Some(g) = lb.groups.get_mut(&low(4)) {
                        g.monitors.push((low(3), line));
                    }
                }
                "add lb vserver" => lb.vservers.push(Vserver {
                    name: arg(3),
                    ip: arg(5),
                    port: arg(6),
                    line,
                    bound: Vec::new(),
                }),
                "bind lb vserver" if pos.len() >= 5 => {
                    let name = low(3);
                    if let Some(v) = lb
                        .vservers
                        .iter_mut()
                        .find(|v| v.name.eq_ignore_ascii_case(&name))
                    {
                        v.bound.push((low(4), line));
                    }
                }
                "add lb monitor" | "set lb monitor" => {
                    lb.monitor_lines.entry(low(3)).or_default().push(saved);
                }
                "add gslb service"
                    if pos.len() >= 7 && option_value(tokens, "cnameEntry").is_none() =>
                {
                    lb.gslb.push(GslbService {
                        name: arg(3),
                        lower: low(3),
                        server: low(4),
                        port: arg(6),
                        site: option_value(tokens, "siteName").unwrap_or("").to_string(),
                        line,
                    });
                }
                "bind gslb service" if monitor.is_some() => {
                    lb.monitored.insert(low(3));
                }
                _ => {}
            }
        }
        // `bind lb monitor M GS` binds a GSLB service too.
        for gs in &lb.gslb {
            if lb.service_monitors.contains_key(&gs.lower) {
                lb.monitored.insert(gs.lower.clone());
            }
        }
        lb
    }

    /// The IP of a server given by address or by `add server` name.
    fn address(&self, server: &str) -> Option<IpAddr> {
        server.parse().ok().or_else(|| {
            self.servers
                .get(&server.to_ascii_lowercase())
                .and_then(|(a, _)| a.parse().ok())
        })
    }

    /// The backends of LB service or serviceGroup `name`, noting the lines
    /// read; a server Sextant cannot resolve is reported.
    fn backends_of(
        &self,
        name: &str,
        gs: &GslbService,
        read: &mut Vec<usize>,
        report: &mut Report,
    ) -> Vec<Backend> {
        let mut members = Vec::new();
        let (monitors, ty) = if let Some(s) = self.services.get(name) {
            read.push(s.line);
            members.push((s.server.clone(), s.port.clone(), s.line));
            (
                self.service_monitors.get(name).cloned().unwrap_or_default(),
                s.ty.clone(),
            )
        } else if let Some(g) = self.groups.get(name) {
            read.push(g.line);
            members.extend(g.members.iter().cloned());
            read.extend(g.members.iter().map(|(_, _, l)| *l));
            (g.monitors.clone(), g.ty.clone())
        } else {
            return Vec::new();
        };
        read.extend(monitors.iter().map(|(_, l)| *l));
        let mut out = Vec::new();
        for (server, port, line) in members {
            if let Some((_, l)) = self.servers.get(&server) {
                read.push(*l);
            }
            match self.address(&server) {
                Some(ip) => out.push(Backend {
                    ip,
                    port,
                    monitors: monitors.clone(),
                    ty: ty.clone(),
                }),
                None => {
                    let (what, at) = match self.servers.get(&server) {
                        Some((domain, l)) => (
                            format!(
                                "is defined by the domain name {domain}, which Sextant does not resolve"
                            ),
                            *l,
                        ),
                        None => ("is not defined in the file".to_string(), line),
                    };
                    report.action(at, format!("gslb service {}: its backend server {server} (port {port}) {what}, so it is not probed for the service's health; add `bind gslb service {} -monitorName MONITOR` with a monitor whose -destIP is its address", gs.name, gs.name));
                }
            }
        }
        out
    }

    /// The `add lb monitor` line of monitor `m` probing backend `b`, named
    /// `name`; a type Sextant cannot probe becomes TCP (PING without a
    /// port), reported.
    fn monitor_line(
        &self,
        m: &str,
        name: &str,
        b: &Backend,
        gs: &GslbService,
        report: &mut Report,
        read: &mut Vec<usize>,
    ) -> Option<String> {
        let fallback = |why: String, report: &mut Report| {
            let port_less = b.port == "*" || b.port == "0";
            let ty = if port_less { "PING" } else { "TCP" };
            report.changed(gs.line, format!("gslb service {}: backend {}:{} is monitored by {m} on the appliance ({why}); written with Sextant's {ty} probe instead", gs.name, b.ip, b.port));
            let dest = if port_less {
                format!("-destIP {}", b.ip)
            } else {
                format!("-destIP {} -destPort {}", b.ip, b.port)
            };
            Some(format!("add lb monitor {name} {ty} {dest} -downTime 30"))
        };
        // The file's own definition, or its change of a built-in monitor.
        if let Some(saved) = self.monitor_lines.get(m).and_then(|l| l.last()) {
            let (line, raw, tokens) = saved;
            read.push(*line);
            let mut l = Line::new(raw, tokens);
            let ty = l.positional(4).unwrap_or_default();
            let secure = l
                .value("secure")
                .is_some_and(|v| v.eq_ignore_ascii_case("YES"));
            if let Some(why) = crate::appliance::why_unprobed(&ty, secure) {
                return fallback(format!("type {}: {why}", ty.to_ascii_uppercase()), report);
            }
            l.set_positional(0, "add");
            l.set_positional(3, name);
            if !l.has("destIP") {
                l.push_option("destIP", &b.ip.to_string());
            }
            if !l.has("destPort") && b.port != "*" && b.port != "0" {
                l.push_option("destPort", &b.port);
            }
            if !l.has("downTime") {
                l.push_option("downTime", "30");
            }
            return Some(l.render());
        }
        match crate::builtin_monitors::find(m) {
            Some(builtin) => match builtin.check {
                Ok(_) => {
                    let mut line = format!(
                        "add lb monitor {name} {} -destIP {}",
                        builtin.type_word, b.ip
                    );
                    if builtin.type_word != "PING" && b.port != "*" && b.port != "0" {
                        line.push_str(&format!(" -destPort {}", b.port));
                    }
                    line.push_str(" -downTime 30");
                    Some(line)
                }
                Err(why) => fallback(format!("type {}: {why}", builtin.type_word), report),
            },
            None => {
                report.action(gs.line, format!("gslb service {}: backend {}:{} is bound to monitor {m}, which the file does not define; it is not carried over", gs.name, b.ip, b.port));
                None
            }
        }
    }
}
