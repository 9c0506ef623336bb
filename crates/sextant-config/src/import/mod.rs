//! `sextant import`: a whole configuration saved by an appliance (`ns.conf`,
//! as `show ns runningConfig` or a backup writes it) in, its GSLB and DNS
//! part out as a Sextant configuration in the same syntax, with a report.
//!
//! The importer decides only what a saved file needs decided and Sextant's
//! readers cannot: which lines are outside Sextant's scope (the table in
//! [`crate::scope`]), which monitors and servers the GSLB part uses, which
//! site is local (the one whose IP the appliance owns), which secrets must
//! be entered again, and the appliance defaults that differ from Sextant's.
//! Every line it writes is then read by the same reader as `sextant check`,
//! so the written file is valid exactly when the import says so, and the
//! errors and warnings of that reading are reported at the saved file's
//! lines.

mod health;
mod report;
mod rewrite;

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::path::Path;

use sextant_core::Model;

use crate::ConfigErrors;
use crate::error::Diag;
use crate::lexer::{self, Token};
use crate::scope::{self, Area};

pub use report::{LeftOut, Report};
use rewrite::Line;

/// What the operator asks of an import.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// The site this node runs as, instead of the one the appliance owns.
    pub local_site: Option<String>,
    /// All or nothing: a line the written configuration cannot take fails
    /// the import, instead of being left out as the appliance would.
    pub strict: bool,
}

/// The result of an import.
#[derive(Debug)]
pub struct Import {
    /// The Sextant configuration, appliance syntax, one command per line
    /// after a comment naming its line in the saved file.
    pub config: String,
    pub report: Report,
    /// The written configuration as `sextant check` reads it, with errors
    /// and warnings at the saved file's lines.
    pub result: Result<Model, ConfigErrors>,
}

/// Imports the saved appliance configuration `text`, named `file` in the
/// report (its directory is where relative location files are looked for).
pub fn import_appliance(text: &str, file: &str, options: &ImportOptions) -> Import {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<(usize, &str, Vec<Token<'_>>)> = text
        .lines()
        .enumerate()
        .filter_map(|(i, raw)| match lexer::tokenize(raw) {
            Ok(t) if t.is_empty() => None,
            Ok(t) => Some((i + 1, raw, t)),
            // Judged below by the words before the quote.
            Err(_) => Some((i + 1, raw, Vec::new())),
        })
        .collect();
    let uses = Uses::scan(&lines);
    let mut report = Report::new(file, text.lines().count());
    let local = uses.local_site_name(options);
    let health = health::plan(&lines, local.as_deref(), &mut report);
    let mut out = Vec::<(usize, String)>::new();
    let base_dir = Path::new(file).parent().unwrap_or(Path::new(""));
    // The area of the line before when it was left out: a line that does
    // not start with a command and follows it is the rest of it, wrapped.
    let mut left_out_before: Option<Area> = None;

    for (line, raw, tokens) in &lines {
        let (line, raw) = (*line, *raw);
        report.commands += 1;
        if tokens.is_empty() {
            // An unterminated quote: outside Sextant's scope it is left out;
            // in its scope the reader says what is wrong at this line.
            if let Some((words, area)) = unreadable_area(raw) {
                report.leave_out(&words, area, UNREADABLE, line);
                left_out_before = Some(area);
            } else if let (None, Some(area)) = (command_of(raw), left_out_before) {
                report.leave_out(WRAPPED_REST, area, WRAPPED, line);
            } else {
                out.push((line, raw.trim().to_string()));
                left_out_before = None;
            }
            continue;
        }
        if scope::command_len(tokens) == 0
            && let Some(area) = left_out_before
        {
            report.leave_out(WRAPPED_REST, area, WRAPPED, line);
            continue;
        }
        let words = scope::command_words(tokens);
        let lower = words.to_ascii_lowercase();
        match decide(&lower, tokens, &uses) {
            Decision::Keep => left_out_before = None,
            Decision::LeaveOut(area, why) => {
                let read = health.why(line);
                report.leave_out(&words, area, read.as_deref().unwrap_or(why), line);
                left_out_before = Some(area);
                continue;
            }
        }
        let mut l = Line::new(raw, tokens);
        match lower.as_str() {
            "set gslb parameter" => {
                for (name, values) in l.options() {
                    if crate::appliance::is_parameter_option(&name) {
                        continue;
                    }
                    let given = option_text(tokens, &name, values);
                    l.remove_option(&name, values);
                    report.changed(line, format!("set gslb parameter: {given} left out: Sextant has no such GSLB parameter (docs/config.md lists those it reads)"));
                }
                if l.options().is_empty() {
                    report.leave_out(&words, Area::System, "no GSLB parameter Sextant has", line);
                    continue;
                }
            }
            "set ns rpcnode" | "add ns rpcnode" => {
                let ip = l.positional(3).unwrap_or_default();
                reenter(
                    &mut l,
                    &mut report,
                    line,
                    "password",
                    &format!("rpcNode-{ip}"),
                    &format!("{words} {ip} -password"),
                );
            }
            "add gslb site" | "set gslb site" => {
                let site = l.positional(3).unwrap_or_default();
                reenter(
                    &mut l,
                    &mut report,
                    line,
                    "sitePassword",
                    &format!("site-{site}"),
                    &format!("{words} {site} -sitePassword"),
                );
                if lower == "add gslb site" {
                    local_site(&mut l, &mut report, line, &uses, options);
                }
            }
            "add gslb service" => {
                let name = l.positional(3).unwrap_or_default().to_ascii_lowercase();
                if let Some(plan) = health.plans.get(&name) {
                    if plan.threshold > 0 {
                        let t = plan.threshold.to_string();
                        if l.value("monThreshold").is_some() {
                            l.set_value("monThreshold", &t);
                        } else {
                            l.push_option("monThreshold", &t);
                        }
                    }
                    out.push((line, l.render()));
                    out.extend(plan.lines.iter().map(|p| (line, p.clone())));
                    continue;
                }
            }
            "add vrid" => {
                // The appliance's default priority is 255, Sextant's 100: a
                // saved file writes none when it is the default.
                let id = l.positional(2).unwrap_or_default();
                if l.value("priority").is_none() {
                    l.push_option("priority", "255");
                    report.changed(line, format!("add vrid {id}: -priority 255 added: the appliance's default, which a saved file does not write (Sextant's own default is 100)"));
                }
            }
            "add lb monitor" | "set lb monitor" => {
                let name = l.positional(3).unwrap_or_default();
                if !name.to_ascii_lowercase().starts_with("ldns-") && !l.has("downTime") {
                    l.push_option("downTime", "30");
                    report.changed(line, format!("{words} {name}: -downTime 30 added: the appliance's default (a DOWN service is probed every 30 s), which a saved file does not write; Sextant's own default probes at -interval"));
                }
            }
            "add locationfile" | "add locationfile6" => {
                let path = l.positional(2).unwrap_or_default();
                if !base_dir.join(&path).exists() {
                    report.action(line, format!("{words} {path}: the file is not on this machine; copy it here (the path is relative to the written configuration, or absolute) and remove the # before the line"));
                    out.push((line, format!("# {}", l.render())));
                    continue;
                }
            }
            _ => {}
        }
        out.push((line, l.render()));
    }
    report_lost_monitors(&mut report, &uses);
    report_dropped_services(&mut report, &uses);
    report_proxy_zones(&mut report, &uses);
    for (name, line) in &uses.bound_builtins {
        if !uses.monitor_lines.contains(name) {
            report.action(*line, format!("the built-in monitor {name} is bound with the appliance's defaults, which probe a DOWN service every 30 s (-downTime 30); Sextant's built-in probes at -interval: add `set lb monitor {name} {} -downTime 30` to keep the appliance's pace", name.to_ascii_uppercase()));
        }
    }
    if let Some(n) = &options.local_site
        && !uses.sites.iter().any(|s| s.name.eq_ignore_ascii_case(n))
    {
        report.error(format!(
            "--local-site {n}: the file has no site of that name (its sites: {})",
            uses.site_names()
        ));
    }

    let (config, result) =
        load_as_the_appliance(&mut out, file, &mut report, options.strict, &lines);
    if let Ok(model) = &result {
        report_unchecked(&mut report, model, &lines);
    }
    report.finish(&result);
    Import {
        config,
        report,
        result,
    }
}

/// Every imported service that nothing checks (no monitor, not reported
/// over metric exchange, no `-healthMonitor NO`) and that no other action
/// line names: the appliance judged it by something the file does not say
/// (a vserver elsewhere, its own default), so the operator must choose.
fn report_unchecked(report: &mut Report, model: &Model, lines: &[(usize, &str, Vec<Token<'_>>)]) {
    for (id, service) in model.services.iter_enumerated() {
        if model.health_source(id) != sextant_core::HealthSource::None {
            continue;
        }
        let name = &service.name;
        let named = format!("service {name} ");
        if report.actions.iter().any(|a| a.text.contains(&named)) {
            continue;
        }
        let line = lines
            .iter()
            .find(|(_, _, tokens)| {
                tokens.len() > 3
                    && scope::command_words(tokens).eq_ignore_ascii_case("add gslb service")
                    && tokens[3].text.eq_ignore_ascii_case(name)
            })
            .map_or(0, |(l, _, _)| *l);
        let why = match &service.cname {
            Some(target) => format!(
                "gslb service {name} answers with a CNAME to {target} (-cnameEntry) and has no monitor bound"
            ),
            None => format!(
                "gslb service {name} has no monitor bound, and no LB vserver, service or service group of this file stands at its address"
            ),
        };
        report.action(line, format!("{why}: nothing checks it, so Sextant answers it whatever happens to it; bind a monitor (`bind gslb service {name} -monitorName MONITOR`{}), or add -healthMonitor NO to its line if nothing is to check it", if service.cname.is_some() { ", the monitor with -destIP and -destPort of what the name stands for" } else { "" }));
    }
}

/// Keep a line or leave it out, and why.
enum Decision {
    Keep,
    LeaveOut(Area, &'static str),
}

fn decide(words: &str, tokens: &[Token], uses: &Uses) -> Decision {
    let arg = |i: usize| {
        tokens
            .get(i)
            .filter(|t| !t.is_option())
            .map(|t| t.text.to_ascii_lowercase())
    };
    let option = |name: &str| option_value(tokens, name);
    if let Some(service) = option("serviceName").map(str::to_ascii_lowercase)
        && uses.dropped_services.contains_key(&service)
        && words != "add gslb service"
    {
        return Decision::LeaveOut(Area::LoadBalancing, BINDS_DROPPED);
    }
    match words {
        "add gslb service"
        | "set gslb service"
        | "bind gslb service"
        | "enable gslb service"
        | "disable gslb service"
            if arg(3).is_some_and(|s| uses.dropped_services.contains_key(&s)) =>
        {
            return Decision::LeaveOut(Area::LoadBalancing, NAMES_NO_SERVER);
        }
        "bind gslb service"
            if option("monitorName")
                .is_some_and(|m| uses.unprobed.contains_key(&m.to_ascii_lowercase())) =>
        {
            return Decision::LeaveOut(Area::LoadBalancing, UNPROBED);
        }
        "add lb monitor" | "set lb monitor"
            if arg(3)
                .is_some_and(|m| uses.unprobed.contains_key(&m) && uses.monitors.contains(&m)) =>
        {
            return Decision::LeaveOut(Area::LoadBalancing, UNPROBED);
        }
        "bind lb monitor"
            if arg(3).is_some_and(|m| uses.unprobed.contains_key(&m))
                || arg(4).is_some_and(|s| uses.dropped_services.contains_key(&s)) =>
        {
            return Decision::LeaveOut(Area::LoadBalancing, UNPROBED);
        }
        "add dns zone" if arg(3).is_some_and(|z| uses.proxy_zone_of(&z).is_some()) => {
            return Decision::LeaveOut(Area::DnsNotServed, PROXIED);
        }
        w if RECORD_COMMANDS.contains(&w) && arg(3).as_deref() != Some(".") => {
            let name = arg(3).unwrap_or_default();
            if uses.proxy_zone_of(&name).is_some() {
                return Decision::LeaveOut(Area::DnsNotServed, PROXIED);
            }
            if !matches!(w, "add dns soarec" | "add dns nsrec")
                && !uses.root_hints.contains(name.trim_end_matches('.'))
                && !uses.in_served_zone(&name)
            {
                return Decision::LeaveOut(Area::DnsResolver, OUTSIDE_ZONES);
            }
        }
        _ => {}
    }
    match words {
        "add dns nsrec" if arg(3).as_deref() == Some(".") => {
            return Decision::LeaveOut(
                Area::DnsResolver,
                "root hints: the resolver's, not an authoritative server's",
            );
        }
        "add dns addrec" | "add dns aaaarec"
            if arg(3).is_some_and(|n| uses.root_hints.contains(n.trim_end_matches('.'))) =>
        {
            return Decision::LeaveOut(
                Area::DnsResolver,
                "root hints: the resolver's, not an authoritative server's",
            );
        }
        "add service" => {
            let ty = arg(4).unwrap_or_default();
            if ty != "adns" && ty != "adns_tcp" {
                return Decision::LeaveOut(Area::LoadBalancing, "");
            }
        }
        "add server" if !arg(2).is_some_and(|n| uses.servers.contains(&n)) => {
            return Decision::LeaveOut(Area::LoadBalancing, "used by no GSLB or ADNS service");
        }
        "add lb monitor" | "set lb monitor" => {
            let name = arg(3).unwrap_or_default();
            if !(uses.monitors.contains(&name) || name.starts_with("ldns-")) {
                return Decision::LeaveOut(Area::LoadBalancing, "bound to no GSLB service");
            }
        }
        "bind lb monitor" if !arg(4).is_some_and(|s| uses.gslb_services.contains(&s)) => {
            return Decision::LeaveOut(Area::LoadBalancing, "");
        }
        "add ns ip" | "add ns ip6" => {
            let vip = option("type").is_some_and(|t| t.eq_ignore_ascii_case("VIP"));
            if !(vip && (option("vrid").is_some() || option("vrid6").is_some())) {
                return Decision::LeaveOut(
                    Area::Network,
                    "the appliance's own addresses (read for the local site)",
                );
            }
        }
        _ => {}
    }
    match scope::area_of_line(tokens) {
        Some(area) => Decision::LeaveOut(area, ""),
        None => Decision::Keep,
    }
}

/// The value of option `name` on a line, if given.
fn option_value<'t>(tokens: &'t [Token<'t>], name: &str) -> Option<&'t str> {
    let i = tokens
        .iter()
        .position(|t| t.is_option() && t.text[1..].eq_ignore_ascii_case(name))?;
    Some(
        tokens
            .get(i + 1)
            .filter(|t| !t.is_option())
            .map_or("", |t| &*t.text),
    )
}

/// The appliance's built-in monitors that probe (their `-downTime` is 30 s
/// there).
const BUILTIN_PROBES: &[&str] = &[
    "ping",
    "ping-default",
    "tcp",
    "tcp-default",
    "http",
    "https",
    "http-ecv",
    "https-ecv",
    "udp-ecv",
    "dns",
];

/// What the GSLB part of the file refers to, read before anything is
/// written (a server or monitor is defined before the lines that use it).
#[derive(Default)]
struct Uses {
    servers: HashSet<String>,
    monitors: HashSet<String>,
    gslb_services: HashSet<String>,
    root_hints: HashSet<String>,
    /// Monitors with an `add/set lb monitor` line (lower case).
    monitor_lines: HashSet<String>,
    /// Built-in monitors bound to GSLB services, with the first such line.
    bound_builtins: Vec<(String, usize)>,
    /// Addresses the appliance owns, with the line that says so.
    owned: HashMap<IpAddr, (usize, &'static str)>,
    sites: Vec<SiteLine>,
    /// `add server` names.
    defined_servers: HashSet<String>,
    /// GSLB services whose server is neither an IP nor defined: the line
    /// and the server's name.
    dropped_services: HashMap<String, (usize, String)>,
    /// Monitors Sextant cannot probe (by name): their type and why.
    unprobed: HashMap<String, (String, String)>,
    /// Per GSLB service: the monitors bound to it and the binding lines.
    service_monitors: HashMap<String, Vec<(String, usize)>>,
    /// GSLB service names as written, for the report.
    service_names: HashMap<String, String>,
    /// Zone apexes this file serves (SOA, NS, `add dns zone -proxyMode NO`).
    served_zones: HashSet<String>,
    /// Zones the appliance proxied (`add dns zone -proxyMode YES`): apex,
    /// as written, and line.
    proxy_zones: Vec<(String, String, usize)>,
    /// Record lines under a proxied zone, per zone apex.
    proxied_records: HashMap<String, Vec<usize>>,
}

struct SiteLine {
    name: String,
    ip: Option<IpAddr>,
    /// The site type the line gives, if any.
    typed: Option<String>,
}

impl Uses {
    fn scan(lines: &[(usize, &str, Vec<Token<'_>>)]) -> Uses {
        let mut u = Uses::default();
        for (line, _, tokens) in lines {
            let words = scope::command_words(tokens).to_ascii_lowercase();
            let pos: Vec<String> = tokens
                .iter()
                .take_while(|t| !t.is_option())
                .map(|t| t.text.to_ascii_lowercase())
                .collect();
            let arg = |i: usize| pos.get(i).cloned().unwrap_or_default();
            let option = |name: &str| option_value(tokens, name).map(str::to_string);
            match words.as_str() {
                "add gslb service" => {
                    u.gslb_services.insert(arg(3));
                    u.servers.insert(arg(4));
                    if let Some(t) = tokens.get(3) {
                        u.service_names.insert(arg(3), t.text.to_string());
                    }
                    // A CNAME service (`-cnameEntry`) names no server.
                    if !arg(4).is_empty() && arg(4).parse::<IpAddr>().is_err() {
                        // Judged once every `add server` is known.
                        u.dropped_services.insert(arg(3), (*line, arg(4)));
                    }
                }
                "add server" => {
                    u.defined_servers.insert(arg(2));
                }
                "add lb monitor" => {
                    let secure = option("secure").is_some_and(|v| v.eq_ignore_ascii_case("YES"));
                    if !arg(3).starts_with("ldns-")
                        && let Some(why) = crate::appliance::why_unprobed(&arg(4), secure)
                    {
                        u.unprobed
                            .insert(arg(3), (arg(4).to_ascii_uppercase(), why));
                    }
                    u.monitor_lines.insert(arg(3));
                }
                "add dns soarec" | "add dns nsrec" if arg(3) != "." => {
                    u.served_zones
                        .insert(arg(3).trim_end_matches('.').to_string());
                }
                "add dns zone" => {
                    let zone = arg(3).trim_end_matches('.').to_string();
                    // The appliance's default is a proxy zone.
                    let proxied = option("proxyMode").is_none_or(|v| !v.eq_ignore_ascii_case("NO"));
                    if proxied {
                        let written = tokens
                            .get(3)
                            .map(|t| t.text.to_string())
                            .unwrap_or_default();
                        u.proxy_zones.push((zone, written, *line));
                    } else {
                        u.served_zones.insert(zone);
                    }
                }
                "add service" if arg(4).starts_with("adns") => {
                    u.servers.insert(arg(3));
                }
                "bind gslb service" => {
                    if let Some(m) = option("monitorName") {
                        let m = m.to_ascii_lowercase();
                        u.service_monitors
                            .entry(arg(3))
                            .or_default()
                            .push((m.clone(), *line));
                        if BUILTIN_PROBES.contains(&m.as_str())
                            && !u.bound_builtins.iter().any(|(b, _)| *b == m)
                        {
                            u.bound_builtins.push((m.clone(), *line));
                        }
                        u.monitors.insert(m);
                    }
                }
                "set lb monitor" => {
                    u.monitor_lines.insert(arg(3));
                }
                "bind lb monitor" => {
                    u.service_monitors
                        .entry(arg(4))
                        .or_default()
                        .push((arg(3), *line));
                }
                "add dns nsrec" if arg(3) == "." => {
                    u.root_hints
                        .insert(arg(4).trim_end_matches('.').to_string());
                }
                "set ns config" => {
                    if let Some(ip) = option("IPAddress").and_then(|v| v.parse().ok()) {
                        u.owned
                            .entry(ip)
                            .or_insert((*line, "set ns config -IPAddress"));
                    }
                }
                "add ns ip" | "add ns ip6" => {
                    let addr = arg(3);
                    let addr = addr.split('/').next().unwrap_or("");
                    if let Ok(ip) = addr.parse() {
                        let how = if words == "add ns ip" {
                            "add ns ip"
                        } else {
                            "add ns ip6"
                        };
                        u.owned.entry(ip).or_insert((*line, how));
                    }
                }
                "add gslb site" => {
                    // add gslb site NAME [LOCAL|REMOTE] IP
                    let typed_positional = matches!(arg(4).as_str(), "local" | "remote");
                    let ip_text = if typed_positional { arg(5) } else { arg(4) };
                    let typed = option("siteType").or_else(|| typed_positional.then(|| arg(4)));
                    let name = tokens
                        .get(3)
                        .map(|t| t.text.to_string())
                        .unwrap_or_default();
                    u.sites.push(SiteLine {
                        name,
                        ip: ip_text.parse().ok(),
                        typed,
                    });
                }
                _ => {}
            }
        }
        let defined = &u.defined_servers;
        u.dropped_services
            .retain(|_, (_, server)| !defined.contains(server));
        // A monitor bound to a GSLB service (either way) is used.
        for (service, monitors) in &u.service_monitors {
            if u.gslb_services.contains(service) {
                u.monitors.extend(monitors.iter().map(|(m, _)| m.clone()));
            }
        }
        // The built-in monitors Sextant cannot probe, where bound.
        let bound: Vec<String> = u.monitors.iter().cloned().collect();
        for m in bound {
            if let Some(b) = crate::builtin_monitors::find(&m)
                && let Err(why) = b.check
                && !u.monitor_lines.contains(&m)
            {
                u.unprobed
                    .insert(m, (b.type_word.to_string(), why.to_string()));
            }
        }
        for (line, _, tokens) in lines {
            let words = scope::command_words(tokens).to_ascii_lowercase();
            if RECORD_COMMANDS.contains(&words.as_str())
                && let Some(name) = tokens.get(3).filter(|t| !t.is_option())
                && let Some(zone) = u.proxy_zone_of(&name.text.to_ascii_lowercase())
            {
                let zone = zone.to_string();
                u.proxied_records.entry(zone).or_default().push(*line);
            }
        }
        u
    }

    /// The local site's name: `--local-site`, else the site the file types
    /// LOCAL, else the one site whose IP the appliance owns.
    fn local_site_name(&self, options: &ImportOptions) -> Option<String> {
        if let Some(n) = &options.local_site {
            return Some(n.clone());
        }
        if let Some(s) = self.sites.iter().find(|s| {
            s.typed
                .as_deref()
                .is_some_and(|t| t.eq_ignore_ascii_case("local"))
        }) {
            return Some(s.name.clone());
        }
        let owned: Vec<&SiteLine> = self
            .sites
            .iter()
            .filter(|s| s.ip.is_some_and(|ip| self.owned.contains_key(&ip)))
            .collect();
        match owned.as_slice() {
            [only] => Some(only.name.clone()),
            _ => None,
        }
    }

    /// The proxied zone `name` is in, if any.
    fn proxy_zone_of(&self, name: &str) -> Option<&str> {
        let name = name.trim_end_matches('.');
        self.proxy_zones
            .iter()
            .map(|(z, _, _)| z.as_str())
            .filter(|z| in_zone(name, z))
            .max_by_key(|z| z.len())
    }

    /// Whether `name` is at or below a zone this file serves.
    fn in_served_zone(&self, name: &str) -> bool {
        let name = name.trim_end_matches('.');
        self.served_zones.iter().any(|z| in_zone(name, z))
    }

    fn site_names(&self) -> String {
        let names: Vec<&str> = self.sites.iter().map(|s| s.name.as_str()).collect();
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    }
}

/// The commands that define static records of a zone.
const RECORD_COMMANDS: &[&str] = &[
    "add dns soarec",
    "add dns nsrec",
    "add dns addrec",
    "add dns aaaarec",
    "add dns cnamerec",
    "add dns mxrec",
    "add dns txtrec",
    "add dns srvrec",
];

const UNREADABLE: &str =
    "the line cannot be read (an unterminated quote, or a line a copy cut short)";
const WRAPPED_REST: &str = "(the rest of a wrapped line)";
const WRAPPED: &str = "does not start with a command: the rest of the line before, which was left out (a line a copy wrapped)";
const OUTSIDE_ZONES: &str =
    "a name outside every zone the file serves: the resolver's data, not an authority's";
const PROXIED: &str =
    "in a zone the appliance proxied (add dns zone -proxyMode YES): see \"Needs your action\"";
const UNPROBED: &str = "a monitor type Sextant cannot probe: see \"Needs your action\"";
const NAMES_NO_SERVER: &str =
    "the service names a server the file does not define: see \"Needs your action\"";
const BINDS_DROPPED: &str = "binds a GSLB service that was left out: see \"Needs your action\"";

/// Whether `name` is `zone` or below it (both without the final dot).
fn in_zone(name: &str, zone: &str) -> bool {
    zone.is_empty()
        || name.eq_ignore_ascii_case(zone)
        || (name.len() > zone.len()
            && name.as_bytes()[name.len() - zone.len() - 1] == b'.'
            && name[name.len() - zone.len()..].eq_ignore_ascii_case(zone))
}

/// The command words of a line that does not tokenize, read up to its
/// first quote; `None` when it does not start with a command.
fn command_of(raw: &str) -> Option<Vec<Token<'_>>> {
    let head = raw.split('"').next().unwrap_or("");
    let tokens = lexer::tokenize(head).ok()?;
    (scope::command_len(&tokens) > 0).then_some(tokens)
}

/// A line that does not tokenize, when its command is outside Sextant's
/// scope: its command words and their area.
fn unreadable_area(raw: &str) -> Option<(String, Area)> {
    let tokens = command_of(raw)?;
    let area = scope::area_of_line(&tokens)?;
    Some((scope::command_words(&tokens), area))
}

/// `-name value ...` as the line gives it.
fn option_text(tokens: &[Token], name: &str, values: usize) -> String {
    let Some(i) = tokens
        .iter()
        .position(|t| t.is_option() && t.text[1..].eq_ignore_ascii_case(name))
    else {
        return format!("-{name}");
    };
    tokens[i..(i + 1 + values).min(tokens.len())]
        .iter()
        .map(|t| &*t.text)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Each GSLB service that loses a monitor Sextant cannot probe, and what it
/// does without it.
fn report_lost_monitors(report: &mut Report, uses: &Uses) {
    let mut services: Vec<(&String, &Vec<(String, usize)>)> = uses
        .service_monitors
        .iter()
        .filter(|(s, _)| uses.gslb_services.contains(*s) && !uses.dropped_services.contains_key(*s))
        .collect();
    services.sort_by_key(|(_, m)| m.first().map(|(_, l)| *l));
    for (service, monitors) in services {
        let name = uses.service_names.get(service).unwrap_or(service);
        let kept: Vec<&str> = monitors
            .iter()
            .filter(|(m, _)| !uses.unprobed.contains_key(m))
            .map(|(m, _)| m.as_str())
            .collect();
        for (monitor, line) in monitors {
            let Some((ty, why)) = uses.unprobed.get(monitor) else {
                continue;
            };
            let without = if kept.is_empty() {
                "with no monitor left nothing probes it: it is UP unless its site reports it DOWN over metric exchange; bind a monitor Sextant can probe (PING, TCP, HTTP, HTTPS, HTTP-ECV, DNS, UDP-ECV) to keep it checked".to_string()
            } else {
                format!("it is still probed by {}", kept.join(", "))
            };
            report.action(
                *line,
                format!(
                    "gslb service {name} loses its monitor {monitor} (type {ty}: {why}); {without}"
                ),
            );
        }
    }
}

/// Each GSLB service left out because its server is not defined.
fn report_dropped_services(report: &mut Report, uses: &Uses) {
    let mut dropped: Vec<(&String, &(usize, String))> = uses.dropped_services.iter().collect();
    dropped.sort_by_key(|(_, (l, _))| *l);
    for (service, (line, server)) in dropped {
        let name = uses.service_names.get(service).unwrap_or(service);
        report.action(*line, format!("gslb service {name} names the server {server}, which the file does not define (no `add server {server} IP` line): the service and the lines that bind it are left out; add the server's line and import again"));
    }
}

/// Each proxied zone, with its record lines.
fn report_proxy_zones(report: &mut Report, uses: &Uses) {
    for (zone, written, line) in &uses.proxy_zones {
        let records = uses
            .proxied_records
            .get(zone)
            .map(|l| format!(" and its records (lines {})", line_ranges(l)))
            .unwrap_or_default();
        report.action(*line, format!("add dns zone {written} -proxyMode YES: the appliance passed this zone's queries on to its back-end DNS servers; Sextant answers only as the zone's authority, so the zone{records} are left out: let those servers answer for it (delegate it to them), or give its records here (add dns soaRec, nsRec, addRec ...) with `add dns zone {written} -proxyMode NO`"));
    }
}

/// Replaces an encrypted secret (`-OPT HEX -encrypted -encryptmethod M
/// [-kek] [-suffix S]`) with a placeholder and reports it.
fn reenter(l: &mut Line, report: &mut Report, line: usize, option: &str, tag: &str, what: &str) {
    if l.value(option).is_none() || !l.has("encrypted") {
        return;
    }
    let placeholder = format!("{}{tag}", crate::REENTER_PREFIX);
    l.set_value(option, &placeholder);
    for flag in ["encrypted", "kek"] {
        l.remove_option(flag, 0);
    }
    for one in ["encryptmethod", "suffix"] {
        l.remove_option(one, 1);
    }
    report.secret(line, format!("{what}: the appliance saved it encrypted with its own key; written as \"{placeholder}\": enter the real secret there"));
}

/// Makes the local site explicit on its `add gslb site` line: the one
/// `--local-site` names, else, when no site gives a type, the one whose IP
/// the appliance owns, as the appliance itself decides.
fn local_site(
    l: &mut Line,
    report: &mut Report,
    line: usize,
    uses: &Uses,
    options: &ImportOptions,
) {
    let name = l.positional(3).unwrap_or_default();
    let Some(site) = uses.sites.iter().find(|s| s.name == name) else {
        return;
    };
    let typed_positional = l
        .positional(4)
        .is_some_and(|t| t.eq_ignore_ascii_case("LOCAL") || t.eq_ignore_ascii_case("REMOTE"));
    if let Some(chosen) = &options.local_site {
        let want = if chosen.eq_ignore_ascii_case(&name) {
            "LOCAL"
        } else {
            "REMOTE"
        };
        let is = site.typed.as_deref().map(str::to_ascii_uppercase);
        if is.as_deref() == Some(want) {
            return;
        }
        if typed_positional {
            l.set_positional(4, want);
        } else if l.value("siteType").is_some() {
            l.set_value("siteType", want);
        } else if want == "REMOTE" {
            return;
        } else {
            l.push_option("siteType", want);
        }
        report.changed(
            line,
            format!("add gslb site {name}: -siteType {want} (--local-site {chosen})"),
        );
        return;
    }
    if uses.sites.iter().any(|s| s.typed.is_some()) {
        return;
    }
    let owned: Vec<&SiteLine> = uses
        .sites
        .iter()
        .filter(|s| s.ip.is_some_and(|ip| uses.owned.contains_key(&ip)))
        .collect();
    match owned.as_slice() {
        [only] if only.name == name => {
            let ip = only.ip.expect("filtered on an owned IP");
            let (at, how) = uses.owned[&ip];
            l.push_option("siteType", "LOCAL");
            report.changed(line, format!("add gslb site {name}: -siteType LOCAL added: the appliance owns its IP {ip} ({how}, line {at}), so it is the local site, as the appliance decides"));
        }
        [] if uses.sites.first().is_some_and(|s| s.name == name) => {
            report.action(line, format!("no site's IP is an address this appliance owns (add ns ip, set ns config -IPAddress): give the site this node runs as with `--local-site NAME` (to import or to serve); the sites are {}", uses.site_names()));
        }
        several if several.len() > 1 && several[0].name == name => {
            let names: Vec<&str> = several.iter().map(|s| s.name.as_str()).collect();
            report.action(line, format!("the appliance owns the IPs of several sites ({}): give the one this node runs as with `--local-site NAME`", names.join(", ")));
        }
        _ => {}
    }
}

/// The written file and, for each of its lines, the saved file's line.
fn render(file: &str, out: &[(usize, String)]) -> (String, Vec<usize>) {
    let name = Path::new(file)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| file.to_string());
    let mut text = String::new();
    let mut map = Vec::new();
    let mut push = |text: &mut String, s: &str, source: usize| {
        text.push_str(s);
        text.push('\n');
        map.push(source);
    };
    push(
        &mut text,
        &format!("# The GSLB and DNS part of {name}, written by `sextant import`."),
        0,
    );
    push(
        &mut text,
        "# Each command follows the line of the saved file it comes from.",
        0,
    );
    for (line, command) in out {
        push(&mut text, "", 0);
        push(&mut text, &format!("# {name}:{line}"), *line);
        push(&mut text, command, *line);
    }
    (text, map)
}

/// Writes and reads the configuration; unless `strict`, leaves out each
/// saved line the reader rejects, as the appliance does when it loads
/// ns.conf line by line (a duplicate `add`, a reference to something the
/// file does not define, a line a mail client wrapped, a malformed option),
/// and reads again: a line that refers to a rejected one is rejected in
/// turn, as on the appliance, where the object it names does not exist.
/// Ends when the configuration reads clean, or an error is not at one line
/// (a whole-configuration error): that fails the import as before. At most
/// one round per written line.
fn load_as_the_appliance(
    out: &mut Vec<(usize, String)>,
    file: &str,
    report: &mut Report,
    strict: bool,
    lines: &[(usize, &str, Vec<Token<'_>>)],
) -> (String, Result<Model, ConfigErrors>) {
    let rounds = out.len() + 1;
    let mut round = 0;
    loop {
        let (config, line_map) = render(file, out);
        let result = validate(&config, file, &line_map);
        let Err(errors) = &result else {
            return (config, result);
        };
        round += 1;
        if strict || round > rounds {
            return (config, result);
        }
        // Every error at a written line (the first reason of each line)
        // that the appliance itself would reject the line for; any other
        // error (of the whole configuration, or a line the appliance takes
        // but Sextant does not) keeps the import failing.
        let mut at: Vec<(usize, String)> = Vec::new();
        for e in &errors.errors {
            if e.line == 0 || !out.iter().any(|(l, _)| *l == e.line) {
                return (config, result);
            }
            let starts_with_command =
                lines
                    .iter()
                    .find(|(l, _, _)| *l == e.line)
                    .is_some_and(|(_, raw, tokens)| {
                        if tokens.is_empty() {
                            command_of(raw).is_some()
                        } else {
                            scope::command_len(tokens) > 0
                        }
                    });
            if !appliance_rejects(&e.message, starts_with_command) {
                return (config, result);
            }
            if !at.iter().any(|(l, _)| *l == e.line) {
                at.push((e.line, e.message.clone()));
            }
        }
        for (line, why) in at {
            out.retain(|(l, _)| *l != line);
            let words = lines
                .iter()
                .find(|(l, _, _)| *l == line)
                .map(|(_, raw, tokens)| {
                    if tokens.is_empty() {
                        raw.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
                    } else {
                        scope::command_words(tokens)
                    }
                })
                .unwrap_or_default();
            report.reject(line, words, why);
        }
    }
}

/// Whether the appliance, loading its saved file line by line, rejects a
/// line for the reader's error `message` too: a reference to something
/// undefined, a duplicate, an option without its value or with a value the
/// appliance refuses as well, an unterminated quote, or a line that does
/// not start with a command (the rest of a wrapped line). Not: what the
/// appliance takes and Sextant refuses (an option it does not know, a
/// feature it does not have), which stays an error.
fn appliance_rejects(message: &str, starts_with_command: bool) -> bool {
    if message.contains("unknown command") || message.contains("not a command") {
        return !starts_with_command;
    }
    if message.contains("unknown option") || message.contains("Sextant") {
        return false;
    }
    [
        "is not defined",
        "is already defined",
        "is already bound",
        "needs a value",
        "unterminated quoted string",
        "as on the appliance",
        "expected a whole number",
        "expected an IP",
        "expected a port",
        "expected ENABLED or DISABLED",
        "expected YES or NO",
    ]
    .iter()
    .any(|m| message.contains(m))
}

/// Reads the written configuration as `sextant check` would, reporting at
/// the saved file's lines.
fn validate(config: &str, file: &str, line_map: &[usize]) -> Result<Model, ConfigErrors> {
    let mut diag = Diag::new(file);
    let draft = crate::appliance::read(config, &mut diag);
    let model = crate::validate::build(
        draft,
        crate::draft::Syntax::Appliance,
        &crate::files::FileAccess::operator(),
        &mut diag,
    );
    diag.remap_lines(|l| line_map.get(l.wrapping_sub(1)).copied().unwrap_or(l));
    diag.finish(model)
}

/// Lines as `3, 5-9, 12`.
pub(crate) fn line_ranges(lines: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let mut j = i;
        while j + 1 < lines.len() && lines[j + 1] == lines[j] + 1 {
            j += 1;
        }
        parts.push(if j > i + 1 {
            format!("{}-{}", lines[i], lines[j])
        } else if j == i + 1 {
            format!("{}, {}", lines[i], lines[j])
        } else {
            lines[i].to_string()
        });
        i = j + 1;
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::line_ranges;

    #[test]
    fn ranges_compress_runs() {
        assert_eq!(line_ranges(&[3, 5, 6, 7, 8, 9, 12, 13]), "3, 5-9, 12, 13");
        assert_eq!(line_ranges(&[1]), "1");
        assert_eq!(line_ranges(&[]), "");
    }
}
