//! Replays of timed events through the engine, from a small text format.
//!
//! A replay file describes one site: its configuration, then events at
//! times, and checks. Running it yields a transcript (every event with the
//! effects it caused, the states and answers asked for) that tests compare
//! with a golden file, plus the failures of the `expect` lines, which state
//! by hand what a seed says must happen.
//!
//! ```text
//! # comment
//! config                      # the site's configuration (appliance syntax) until `end`
//! add gslb site p1 127.0.0.1 -siteType LOCAL
//! end
//! at 0 probe SERVICE MONITOR ok|fail|local [DETAIL...]
//!                             # local: failed for a reason of this host (EMFILE...)
//! at 0.5 figures SERVICE conn=N rt=MS load=N
//! at 1 peer-up SITE [via PARENT]
//! at 1 peer-down SITE [REASON...]
//! at 1 services SITE [via PARENT] full|delta [NAME@IP:PORT[>PUBIP:PUBPORT]=UP|DOWN[;conn=N]]... [-IP:PORT]...
//! at 2 site-figures cpu=N mem=N
//! at 2 local-session VSERVER CLIENT SERVICE SECONDS
//! at 2 peer-session SITE VSERVER CLIENT/PREFIX SERVICE SECONDS
//! at 2 ldns-query GROUP...    # LDNS that queried an RTT domain here
//! at 2 ldns-sample GROUP MS ping|dns|tcp [ttl=N]   # or: ldns-sample GROUP fail
//! at 2 peer-rtt SITE GROUP=MS[/ping|dns|tcp][,queried][,removed][,hops=N,ttl=N,loss=PCT%,mos=X]...
//!                             # MS may be `-` (none); the path needs all four
//! at 3 reload                  # a new configuration until `end`
//! at 4 tick
//! at 5 admin service|vserver|site NAME enabled|disabled|draining [REASON...]
//! at 5 admin-restore service|vserver|site NAME disabled|draining [REASON...]
//!                             # a mark read back from the state file at start
//! show states                 # every service with its state and reason
//! show ldns                   # the published LDNS table: every site's cell
//! answer NAME CLIENT [TYPE]   # the answer DNS would give now
//! expect state SERVICE UP|DOWN [REASON-SUBSTRING...]
//! expect answer NAME CLIENT ADDR[,ADDR...]|NXDOMAIN|NODATA|REFUSED
//! expect effect TEXT...       # some effect of the last event contains TEXT
//! expect ldns GROUP SITE TEXT # that site's published cell reads TEXT (`-`: none)
//! ```
//!
//! Times are seconds from the start (decimals allowed) and never go back.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use sextant_core::{
    AnswerBuf, Cursor, LdnsProbe, Model, NoSessions, Outcome, Query, QueryType, ServiceMetrics,
    Snapshot, decide, trace::NoTrace,
};

use crate::effect::Effect;
use crate::engine::{Engine, Prepared};
use crate::event::{
    Event, LocalSession, PeerServices, Probe, ReportedService, SharedRtt, SharedSession,
    SiteFigures,
};

/// Where replays start: zero on the monotonic clock, as the daemon does.
pub const EPOCH: Duration = Duration::ZERO;

/// A replay file that cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("line {line}: {reason}")]
    Syntax { line: usize, reason: String },
    #[error("line {line}: configuration: {reason}")]
    Config { line: usize, reason: String },
}

/// What a replay produced.
#[derive(Debug, Default)]
pub struct Transcript {
    pub transcript: String,
    /// `expect` lines that did not hold, with their line numbers.
    pub failures: Vec<String>,
}

/// Runs `text`; `parse` turns a configuration block into a model.
pub fn run(
    text: &str,
    parse: &dyn Fn(&str) -> Result<Model, String>,
) -> Result<Transcript, ReplayError> {
    let mut r = Runner {
        parse,
        engine: None,
        snapshot: None,
        now: EPOCH,
        out: Transcript::default(),
        last_effects: Vec::new(),
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let n = i + 1;
        let line = lines[i].trim();
        i += 1;
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let syntax = |reason: &str| ReplayError::Syntax {
            line: n,
            reason: reason.to_string(),
        };
        match words[0] {
            "config" | "at" if words[0] == "config" || words.get(2) == Some(&"reload") => {
                let mut block = String::new();
                let start = i;
                loop {
                    let Some(l) = lines.get(i) else {
                        return Err(syntax("configuration block without `end`"));
                    };
                    i += 1;
                    if l.trim() == "end" {
                        break;
                    }
                    block.push_str(l);
                    block.push('\n');
                }
                let model = (r.parse)(&block).map_err(|reason| ReplayError::Config {
                    line: start + 1,
                    reason,
                })?;
                if words[0] == "config" {
                    if r.engine.is_some() {
                        return Err(syntax("a second `config`; use `at T reload`"));
                    }
                    let _ = writeln!(
                        r.out.transcript,
                        "> config ({} services)",
                        model.services.len()
                    );
                    let (engine, effects) = Engine::new(Arc::new(model), 1, r.now);
                    r.engine = Some(engine);
                    r.record(effects);
                } else {
                    r.advance(words.get(1).copied(), n)?;
                    let _ = writeln!(
                        r.out.transcript,
                        "> {line} ({} services)",
                        model.services.len()
                    );
                    r.event(Event::Reload(Box::new(Prepared::new(Arc::new(model)))), n)?;
                }
            }
            "at" => {
                r.advance(words.get(1).copied(), n)?;
                let _ = writeln!(r.out.transcript, "> {line}");
                let event = r.parse_event(&words[2..], n)?;
                r.event(event, n)?;
            }
            "show" if words.get(1) == Some(&"states") => {
                let _ = writeln!(r.out.transcript, "> {line}");
                r.show_states();
            }
            "show" if words.get(1) == Some(&"ldns") => {
                let _ = writeln!(r.out.transcript, "> {line}");
                r.show_ldns();
            }
            "show" if words.get(1) == Some(&"records") => {
                let _ = writeln!(r.out.transcript, "> {line}");
                r.show_records();
            }
            "answer" => {
                let _ = writeln!(r.out.transcript, "> {line}");
                let a = r.answer(&words[1..], n)?;
                let _ = writeln!(r.out.transcript, "  {a}");
            }
            "expect" => r.expect(&words[1..], line, n)?,
            _ => return Err(syntax("unknown command")),
        }
    }
    Ok(r.out)
}

struct Runner<'a> {
    parse: &'a dyn Fn(&str) -> Result<Model, String>,
    engine: Option<Engine>,
    snapshot: Option<Arc<Snapshot>>,
    now: Duration,
    out: Transcript,
    last_effects: Vec<String>,
}

fn secs(s: &str) -> Option<Duration> {
    let v: f64 = s.parse().ok()?;
    (v.is_finite() && v >= 0.0).then(|| Duration::from_secs_f64(v))
}

/// `service web-1 disabled since 12.000 s: patching`.
fn admin_text(r: &crate::admin::AdminRecord) -> String {
    let mut text = format!(
        "{} {} {} since {:.3} s",
        r.kind.as_str(),
        r.name,
        r.mark.state.as_str(),
        r.mark.since_unix_ms as f64 / 1000.0
    );
    if let Some(reason) = &r.mark.reason {
        let _ = write!(text, ": {reason}");
    }
    text
}

fn parse_addr(s: &str) -> Option<(IpAddr, u16)> {
    let (ip, port) = s.rsplit_once(':')?;
    Some((
        ip.trim_matches(['[', ']']).parse().ok()?,
        port.parse().ok()?,
    ))
}

impl Runner<'_> {
    fn engine(&mut self, line: usize) -> Result<&mut Engine, ReplayError> {
        self.engine.as_mut().ok_or(ReplayError::Syntax {
            line,
            reason: "no `config` block before the first event".into(),
        })
    }

    fn advance(&mut self, at: Option<&str>, line: usize) -> Result<(), ReplayError> {
        let t = at.and_then(secs).ok_or(ReplayError::Syntax {
            line,
            reason: "expected `at SECONDS ...`".into(),
        })?;
        let t = EPOCH + t;
        // Effects of the ticks on the way count as the next event's.
        self.last_effects.clear();
        if t < self.now {
            return Err(ReplayError::Syntax {
                line,
                reason: "time goes back".into(),
            });
        }
        // Ticks the engine asked for on the way, as the binary's timers do.
        while let Some(wake) = self.engine.as_ref().and_then(|e| e.next_wake())
            && wake <= t
            && wake >= self.now
        {
            self.now = wake;
            let effects = self.engine(line)?.apply(Event::Tick, wake);
            if effects.iter().any(|e| !matches!(e, Effect::Publish(_))) {
                let _ = writeln!(
                    self.out.transcript,
                    "  (tick at {:.3})",
                    (wake - EPOCH).as_secs_f64()
                );
            }
            self.record(effects);
            if self.engine.as_ref().and_then(|e| e.next_wake()) == Some(wake) {
                break;
            }
        }
        self.now = t;
        Ok(())
    }

    fn event(&mut self, event: Event, line: usize) -> Result<(), ReplayError> {
        let now = self.now;
        let effects = self.engine(line)?.apply(event, now);
        self.record(effects);
        Ok(())
    }

    fn record(&mut self, effects: Vec<Effect>) {
        let Some(engine) = self.engine.as_ref() else {
            return;
        };
        let model = Arc::clone(engine.model());
        for e in effects {
            let text = match &e {
                Effect::Publish(s) => {
                    self.snapshot = Some(Arc::clone(s));
                    continue;
                }
                Effect::Restart {
                    model: m,
                    generation,
                    closed_gates,
                    slow_probes,
                    ..
                } => {
                    let mut text = format!(
                        "restart generation {generation}: {} services, gates closed: [{}]",
                        m.services.len(),
                        closed_gates
                            .iter()
                            .map(|s| m.service(*s).name.as_str())
                            .collect::<Vec<_>>()
                            .join(" ")
                    );
                    if !slow_probes.is_empty() {
                        let slow: Vec<String> = slow_probes
                            .iter()
                            .map(|(s, slot)| format!("{}/{}", m.service(*s).name, slot + 1))
                            .collect();
                        let _ = write!(text, ", probing at -downTime: [{}]", slow.join(" "));
                    }
                    text
                }
                Effect::Transition {
                    service,
                    up,
                    reason,
                } => format!(
                    "transition {} {}: {reason}",
                    model.service(*service).name,
                    if *up { "UP" } else { "DOWN" }
                ),
                Effect::Gate { service, open } => format!(
                    "gate {} {}",
                    model.service(*service).name,
                    if *open { "open" } else { "closed" }
                ),
                Effect::ListenerState { addr, up, reason } => format!(
                    "listener {addr} {}: {reason}",
                    if *up { "UP" } else { "DOWN" }
                ),
                Effect::MetricExchange { run } => {
                    if *run {
                        "metric exchange: start".to_string()
                    } else {
                        "metric exchange: stop".to_string()
                    }
                }
                Effect::ProbePace {
                    service,
                    slot,
                    slow,
                } => format!(
                    "pace {} monitor {}: every {}",
                    model.service(*service).name,
                    slot + 1,
                    if *slow { "-downTime" } else { "-interval" }
                ),
                Effect::Report(r) => format!(
                    "report [{}]",
                    r.services
                        .iter()
                        .map(|s| format!("{}={}", s.name, if s.up { "UP" } else { "DOWN" }))
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
                Effect::ShareSessions(list) => format!(
                    "share sessions [{}]",
                    list.iter()
                        .map(|s| format!(
                            "{} {}/{} -> {} {}s",
                            s.vserver,
                            s.key,
                            s.prefix,
                            s.service,
                            s.remaining.as_secs()
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Effect::InstallSessions(list) => format!(
                    "install sessions [{}]",
                    list.iter()
                        .map(|s| format!(
                            "{} {} -> {} {}s",
                            model.vserver(s.vserver).name,
                            s.key,
                            model.service(s.service).name,
                            s.remaining.as_secs()
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Effect::Ready => "ready: DNS answers".to_string(),
                Effect::ProbeLdns { add, remove } => format!(
                    "probe ldns{}{}",
                    add.iter().map(|g| format!(" +{g}")).collect::<String>(),
                    remove.iter().map(|g| format!(" -{g}")).collect::<String>()
                ),
                Effect::ShareRtt(list) => format!(
                    "share rtt [{}]",
                    list.iter()
                        .map(|r| format!(
                            "{}={}{}{}{}{}",
                            r.group,
                            r.rtt
                                .map_or("-".to_string(), |d| format!("{}ms", d.as_millis())),
                            r.kind
                                .map_or(String::new(), |k| format!("/{}", probe_word(k))),
                            path_text(r.path),
                            if r.queried { ",queried" } else { "" },
                            if r.removed { ",removed" } else { "" }
                        ))
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
                Effect::Admin(Ok(r)) => format!("admin {}", admin_text(r)),
                Effect::Admin(Err(e)) => format!("admin refused: {e}"),
                Effect::SaveAdmin(list) => format!(
                    "save admin [{}]",
                    list.iter().map(admin_text).collect::<Vec<_>>().join(", ")
                ),
                Effect::AdminDropped(list) => format!(
                    "admin dropped (not configured) [{}]",
                    list.iter().map(admin_text).collect::<Vec<_>>().join(", ")
                ),
                Effect::MeasurePathLoss(t) => format!(
                    "measure path loss from {}:{}",
                    t.source.map_or("-".to_string(), |ip| ip.to_string()),
                    t.targets
                        .iter()
                        .map(|(site, ip)| format!(" {site}={ip}"))
                        .collect::<String>()
                ),
            };
            let _ = writeln!(self.out.transcript, "  {text}");
            self.last_effects.push(text);
        }
    }

    fn parse_event(&mut self, w: &[&str], line: usize) -> Result<Event, ReplayError> {
        let syntax = |reason: String| ReplayError::Syntax { line, reason };
        let model = Arc::clone(self.engine(line)?.model());
        let service = |name: &str| {
            model
                .service_by_name(name)
                .ok_or_else(|| syntax(format!("no service {name:?}")))
        };
        let via = |w: &[&str]| -> (Option<String>, usize) {
            if w.first() == Some(&"via") {
                (w.get(1).map(|s| s.to_string()), 2)
            } else {
                (None, 0)
            }
        };
        Ok(match w.first().copied() {
            Some("tick") => Event::Tick,
            Some(verb @ ("admin" | "admin-restore")) if w.len() >= 4 => {
                let kind = sextant_core::AdminKind::parse(w[1])
                    .ok_or_else(|| syntax(format!("{verb} service|vserver|site NAME STATE")))?;
                let state = sextant_core::AdminState::parse(w[3])
                    .ok_or_else(|| syntax("STATE: enabled, disabled or draining".into()))?;
                let reason = (w.len() > 4).then(|| w[4..].join(" "));
                // The operator's wall clock, as data: the replay's own time.
                let at_unix_ms = (self.now - EPOCH).as_millis() as u64;
                if verb == "admin" {
                    Event::Admin(crate::admin::AdminChange {
                        kind,
                        name: w[2].to_string(),
                        state,
                        reason,
                        at_unix_ms,
                    })
                } else {
                    Event::AdminRestore(vec![crate::admin::AdminRecord {
                        kind,
                        name: w[2].to_string(),
                        mark: sextant_core::AdminMark {
                            state,
                            since_unix_ms: at_unix_ms,
                            reason: reason.map(Arc::from),
                        },
                    }])
                }
            }
            Some("listener") if w.len() >= 3 => {
                use crate::listeners::ListenerProbe;
                let addr = w[1]
                    .parse()
                    .map_err(|_| syntax(format!("bad listener address {}", w[1])))?;
                let probe = match w[2] {
                    "answered" => ListenerProbe::Answered,
                    "failed" => ListenerProbe::Failed(w[3..].join(" ")),
                    "unprobed" => ListenerProbe::Unprobed,
                    _ => return Err(syntax("listener ADDR answered|failed WHY|unprobed".into())),
                };
                Event::ListenerProbe { addr, probe }
            }
            Some("site-ip-master") => match w.get(1).copied() {
                Some("yes") => Event::SiteIpMaster(true),
                Some("no") => Event::SiteIpMaster(false),
                _ => return Err(syntax("site-ip-master yes|no".into())),
            },
            Some("probe") if w.len() >= 4 => {
                let s = service(w[1])?;
                let monitor = model
                    .monitor_by_name(w[2])
                    .ok_or_else(|| syntax(format!("no monitor {:?}", w[2])))?;
                let success = match w[3] {
                    "ok" => true,
                    "fail" => false,
                    "local" => {
                        return Ok(Event::ProbeLocalError {
                            service: s,
                            monitor,
                            detail: if w.len() > 4 {
                                w[4..].join(" ")
                            } else {
                                "Too many open files (os error 24)".to_string()
                            },
                        });
                    }
                    _ => return Err(syntax("probe result is ok, fail or local".into())),
                };
                let detail = if w.len() > 4 {
                    w[4..].join(" ")
                } else if success {
                    "probe succeeded".to_string()
                } else {
                    "probe failed".to_string()
                };
                Event::Probe(Probe {
                    service: s,
                    monitor,
                    success,
                    detail,
                    response_time: success.then_some(Duration::from_millis(1)),
                })
            }
            Some("figures") if w.len() >= 2 => Event::LocalFigures {
                service: service(w[1])?,
                metrics: parse_metrics(&w[2..]).ok_or_else(|| syntax("bad figure".into()))?,
            },
            Some("peer-up") if w.len() >= 2 => Event::PeerUp {
                site: w[1].to_string(),
                via: via(&w[2..]).0,
            },
            Some("peer-down") if w.len() >= 2 => Event::PeerDown {
                site: w[1].to_string(),
                reason: w[2..].join(" "),
            },
            Some("services") if w.len() >= 3 => {
                let (via, skip) = via(&w[2..]);
                let rest = &w[2 + skip..];
                let full = match rest.first().copied() {
                    Some("full") => true,
                    Some("delta") => false,
                    _ => return Err(syntax("services SITE [via P] full|delta ...".into())),
                };
                let mut entries = Vec::new();
                let mut removed = Vec::new();
                for tok in &rest[1..] {
                    if let Some(addr) = tok.strip_prefix('-') {
                        removed.push(
                            parse_addr(addr)
                                .ok_or_else(|| syntax(format!("bad address {addr}")))?,
                        );
                    } else {
                        entries.push(
                            parse_entry(tok).ok_or_else(|| syntax(format!("bad entry {tok}")))?,
                        );
                    }
                }
                Event::PeerServices(PeerServices {
                    site: w[1].to_string(),
                    via,
                    full,
                    entries,
                    removed,
                })
            }
            Some("site-figures") => Event::OwnSiteFigures(site_figures(&w[1..]).map_err(syntax)?),
            Some("peer-site-figures") if w.len() >= 2 => Event::PeerSiteFigures {
                site: w[1].to_string(),
                figures: site_figures(&w[2..]).map_err(syntax)?,
            },
            Some("path-loss") if w.len() == 4 => {
                let count = |kv: &str, key: &str| {
                    kv.strip_prefix(key)
                        .and_then(|v| v.parse::<u32>().ok())
                        .ok_or_else(|| syntax(format!("expected {key}N, found {kv}")))
                };
                Event::PathLoss {
                    site: w[1].to_string(),
                    sent: count(w[2], "sent=")?,
                    lost: count(w[3], "lost=")?,
                }
            }
            Some("local-session") if w.len() == 5 => {
                let vserver = model
                    .vserver_by_name(w[1])
                    .ok_or_else(|| syntax(format!("no vserver {:?}", w[1])))?;
                Event::LocalSessions(vec![LocalSession {
                    vserver,
                    key: w[2]
                        .parse()
                        .map_err(|_| syntax("bad client address".into()))?,
                    service: service(w[3])?,
                    remaining: secs(w[4]).ok_or_else(|| syntax("bad seconds".into()))?,
                }])
            }
            Some("ldns-query") if w.len() >= 2 => Event::LdnsQueried(
                w[1..]
                    .iter()
                    .map(|a| a.parse().map_err(|_| syntax(format!("bad address {a}"))))
                    .collect::<Result<_, _>>()?,
            ),
            Some("ldns-sample") if w.len() >= 3 => {
                let group = w[1]
                    .parse()
                    .map_err(|_| syntax(format!("bad address {}", w[1])))?;
                let usage = "ldns-sample GROUP MS KIND [ttl=N] | GROUP fail";
                let (sample, ttl) = match (w[2], w.get(3), w.get(4)) {
                    ("fail", None, _) => (None, None),
                    (ms, Some(kind), ttl) if w.len() <= 5 => (
                        Some((
                            millis(ms).ok_or_else(|| syntax("bad milliseconds".into()))?,
                            parse_probe(kind)
                                .ok_or_else(|| syntax("kind is ping, dns or tcp".into()))?,
                        )),
                        match ttl {
                            None => None,
                            Some(t) => Some(
                                t.strip_prefix("ttl=")
                                    .and_then(|n| n.parse().ok())
                                    .ok_or_else(|| syntax("ttl=N, N 0 to 255".into()))?,
                            ),
                        },
                    ),
                    _ => return Err(syntax(usage.into())),
                };
                Event::LdnsSample { group, sample, ttl }
            }
            Some("peer-rtt") if w.len() >= 3 => Event::PeerRtt {
                site: w[1].to_string(),
                entries: w[2..]
                    .iter()
                    .map(|t| parse_shared_rtt(t).ok_or_else(|| syntax(format!("bad entry {t}"))))
                    .collect::<Result<_, _>>()?,
            },
            Some("peer-session") if w.len() == 6 => {
                let (key, prefix) = w[3]
                    .split_once('/')
                    .and_then(|(a, p)| Some((a.parse().ok()?, p.parse().ok()?)))
                    .ok_or_else(|| syntax("expected CLIENT/PREFIX".into()))?;
                Event::PeerSessions {
                    site: w[1].to_string(),
                    entries: vec![SharedSession {
                        vserver: w[2].to_string(),
                        key,
                        prefix,
                        service: w[4].to_string(),
                        remaining: secs(w[5]).ok_or_else(|| syntax("bad seconds".into()))?,
                    }],
                }
            }
            _ => {
                return Err(syntax(format!(
                    "unknown or incomplete event: {}",
                    w.join(" ")
                )));
            }
        })
    }

    /// Every row of the published LDNS table, by group, with every site's
    /// cell ([`cell_text`]).
    fn show_ldns(&mut self) {
        let Some(snap) = self.snapshot.clone() else {
            return;
        };
        let table = snap.rtt();
        let mut rows: Vec<_> = table.rows().collect();
        rows.sort_by_key(|(group, _, _)| *group);
        for (group, _, cells) in rows {
            let sites: Vec<String> = snap
                .model()
                .sites
                .iter()
                .zip(cells)
                .map(|(site, cell)| format!("{}={}", site.name, cell_text(cell.as_ref())))
                .collect();
            let _ = writeln!(self.out.transcript, "  {group} {}", sites.join(" "));
        }
    }

    /// The published cell of `site` for `group`, as [`cell_text`] writes it.
    fn ldns_cell(&self, group: IpAddr, site: &str) -> String {
        let cell = self.snapshot.as_ref().and_then(|snap| {
            let site = snap.model().site_by_name(site)?;
            let table = snap.rtt();
            table.cell(table.row(group)?, site).copied()
        });
        cell_text(cell.as_ref())
    }

    /// Every datacenter-mode record: its status and its datacenters in the
    /// published ranking, each with the figure it was ranked by.
    fn show_records(&mut self) {
        let Some(snap) = self.snapshot.clone() else {
            return;
        };
        let model = snap.model();
        for (r, rec) in model.dc_records.iter_enumerated() {
            let status = sextant_core::dc_answer::record_status(&snap, r);
            let ranked: Vec<String> = match snap.dc_order(r) {
                Some(order) => order
                    .groups
                    .iter()
                    .map(|g| {
                        let site = rec
                            .groups
                            .get(*g as usize)
                            .and_then(|g| model.sites.get(g.site))
                            .map_or("?", |s| s.name.as_str());
                        match order.figures.get(*g as usize).copied().flatten() {
                            Some(f) => format!("{site}({f})"),
                            None => format!("{site}(-)"),
                        }
                    })
                    .collect(),
                None => vec!["not ranked yet".to_string()],
            };
            let _ = writeln!(
                self.out.transcript,
                "  {} {}: {}",
                rec.name,
                status.describe(),
                ranked.join(" ")
            );
        }
    }

    fn show_states(&mut self) {
        let Some(snap) = self.snapshot.clone() else {
            return;
        };
        for (i, s) in snap.model().services.iter_enumerated() {
            let reason = snap
                .status()
                .get(i)
                .map(|s| s.reason.to_string())
                .unwrap_or_default();
            let _ = writeln!(
                self.out.transcript,
                "  {} {} ({reason})",
                s.name,
                if snap.is_up(i) { "UP" } else { "DOWN" }
            );
        }
    }

    fn answer(&self, w: &[&str], line: usize) -> Result<String, ReplayError> {
        let syntax = |reason: &str| ReplayError::Syntax {
            line,
            reason: reason.to_string(),
        };
        let snap = self
            .snapshot
            .as_ref()
            .ok_or_else(|| syntax("nothing published yet"))?;
        let name = w
            .first()
            .ok_or_else(|| syntax("answer NAME CLIENT [TYPE]"))?;
        let client: IpAddr = w
            .get(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| syntax("answer NAME CLIENT [TYPE]"))?;
        let qtype = match w.get(2) {
            Some(t) => QueryType::parse(t).ok_or_else(|| syntax("unknown query type"))?,
            None => QueryType::A,
        };
        let lower = name.trim_end_matches('.').to_ascii_lowercase();
        let query = Query {
            name: &lower,
            qtype,
            source: client,
            ecs: None,
        };
        let mut out = AnswerBuf::default();
        let d = decide(
            snap,
            &query,
            &mut Cursor::peeking(0),
            &NoSessions,
            &mut out,
            &mut NoTrace,
        );
        Ok(match d.outcome {
            Outcome::Addresses { .. } | Outcome::DcAddresses { .. } => out
                .addrs
                .iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(","),
            Outcome::NxDomain { .. } => "NXDOMAIN".into(),
            Outcome::Refused => "REFUSED".into(),
            Outcome::Drop => "DROP".into(),
            _ => "NODATA".into(),
        })
    }

    fn expect(&mut self, w: &[&str], text: &str, line: usize) -> Result<(), ReplayError> {
        let syntax = |reason: &str| ReplayError::Syntax {
            line,
            reason: reason.to_string(),
        };
        let failure = match w.first().copied() {
            Some("state") if w.len() >= 3 => {
                let snap = self
                    .snapshot
                    .as_ref()
                    .ok_or_else(|| syntax("nothing published yet"))?;
                let id = snap
                    .service_by_name(w[1])
                    .ok_or_else(|| syntax("no such service"))?;
                let up = snap.is_up(id);
                let reason = snap
                    .status()
                    .get(id)
                    .map(|s| s.reason.to_string())
                    .unwrap_or_default();
                let want_up = match w[2] {
                    "UP" => true,
                    "DOWN" => false,
                    _ => return Err(syntax("expect state SERVICE UP|DOWN [REASON...]")),
                };
                let want_reason = w[3..].join(" ");
                (up != want_up || !reason.contains(&want_reason))
                    .then(|| format!("is {} ({reason})", if up { "UP" } else { "DOWN" }))
            }
            Some("answer") if w.len() == 4 => {
                let got = self.answer(&w[1..3], line)?;
                (got != w[3]).then(|| format!("answer is {got}"))
            }
            Some("ldns") if w.len() == 4 => {
                let group: IpAddr = w[1]
                    .parse()
                    .map_err(|_| syntax("expect ldns GROUP SITE TEXT"))?;
                let got = self.ldns_cell(group, w[2]);
                (got != w[3]).then(|| format!("the cell is {got}"))
            }
            Some("effect") if w.len() >= 2 => {
                let want = w[1..].join(" ");
                (!self.last_effects.iter().any(|e| e.contains(&want)))
                    .then(|| format!("effects were [{}]", self.last_effects.join("; ")))
            }
            _ => return Err(syntax("expect state|answer|effect|ldns ...")),
        };
        if let Some(f) = failure {
            self.out
                .failures
                .push(format!("line {line}: `{text}`: {f}"));
        }
        Ok(())
    }
}

fn parse_metrics(kvs: &[&str]) -> Option<ServiceMetrics> {
    let mut m = ServiceMetrics::NONE;
    for kv in kvs {
        let (k, v) = kv.split_once('=')?;
        match k {
            "conn" => m.connections = Some(v.parse().ok()?),
            "rt" => m.response_time_us = Some((v.parse::<f64>().ok()? * 1000.0) as u64),
            "load" => m.custom_load = Some(v.parse().ok()?),
            _ => return None,
        }
    }
    Some(m)
}

/// `NAME@IP:PORT[>PUBIP:PUBPORT]=UP|DOWN[;conn=N...]`.
fn parse_entry(tok: &str) -> Option<ReportedService> {
    let (head, figures) = match tok.split_once(';') {
        Some((h, f)) => (h, f.split(';').collect::<Vec<_>>()),
        None => (tok, Vec::new()),
    };
    let (head, state) = head.rsplit_once('=')?;
    let up = match state {
        "UP" => true,
        "DOWN" => false,
        _ => return None,
    };
    let (name, addrs) = head.split_once('@')?;
    let (addr, public) = match addrs.split_once('>') {
        Some((a, p)) => (a, Some(parse_addr(p)?)),
        None => (addrs, None),
    };
    let (ip, port) = parse_addr(addr)?;
    Some(ReportedService {
        name: name.into(),
        ip,
        port,
        public_ip: public.map(|p| p.0),
        public_port: public.map(|p| p.1),
        up,
        metrics: parse_metrics(&figures)?,
    })
}

fn millis(text: &str) -> Option<Duration> {
    let ms: f64 = text.parse().ok()?;
    (ms >= 0.0 && ms.is_finite()).then(|| Duration::from_secs_f64(ms / 1000.0))
}

/// A published cell: `MS/KIND[,hops=N,ttl=N,loss=PCT%,mos=X]` (RTT in
/// whole ms), or `-` for none.
fn cell_text(cell: Option<&sextant_core::RttCell>) -> String {
    let Some(c) = cell else {
        return "-".into();
    };
    format!(
        "{}ms{}{}",
        c.rtt.as_millis(),
        c.kind
            .map_or(String::new(), |k| format!("/{}", probe_word(k))),
        path_text(c.path)
    )
}

/// `,hops=N,ttl=N,loss=PCT%,mos=X`, or nothing without a path.
fn path_text(path: Option<sextant_core::PathFigures>) -> String {
    path.map_or(String::new(), |p| {
        format!(
            ",hops={},ttl={},loss={}%,mos={:.2}",
            p.hops,
            p.ttl,
            f64::from(p.loss_permille) / 10.0,
            f64::from(p.mos_centi) / 100.0
        )
    })
}

fn parse_probe(word: &str) -> Option<LdnsProbe> {
    match word {
        "ping" => Some(LdnsProbe::Ping),
        "dns" => Some(LdnsProbe::DnsUdp),
        "tcp" => Some(LdnsProbe::DnsTcp),
        _ => None,
    }
}

fn probe_word(kind: LdnsProbe) -> &'static str {
    match kind {
        LdnsProbe::Ping => "ping",
        LdnsProbe::DnsUdp => "dns",
        LdnsProbe::DnsTcp => "tcp",
    }
}

/// `GROUP=MS[/KIND][,queried][,removed][,hops=N,ttl=N,loss=PCT%,mos=X]`,
/// MS `-` for none; a path needs all four of its figures.
fn parse_shared_rtt(token: &str) -> Option<SharedRtt> {
    let (group, rest) = token.split_once('=')?;
    let mut parts = rest.split(',');
    let measured = parts.next()?;
    let (ms, kind) = match measured.split_once('/') {
        Some((ms, k)) => (ms, Some(parse_probe(k)?)),
        None => (measured, None),
    };
    let rtt = if ms == "-" { None } else { Some(millis(ms)?) };
    let mut r = SharedRtt {
        group: group.parse().ok()?,
        rtt,
        kind,
        path: None,
        queried: false,
        removed: false,
    };
    let (mut hops, mut ttl, mut loss, mut mos) = (None, None, None, None);
    for flag in parts {
        match flag.split_once('=') {
            None if flag == "queried" => r.queried = true,
            None if flag == "removed" => r.removed = true,
            Some(("hops", n)) => hops = Some(n.parse().ok()?),
            Some(("ttl", n)) => ttl = Some(n.parse().ok()?),
            Some(("loss", pct)) => {
                let pct: f64 = pct.strip_suffix('%')?.parse().ok()?;
                loss = Some((pct * 10.0).round().clamp(0.0, 1000.0) as u16);
            }
            Some(("mos", x)) => {
                let x: f64 = x.parse().ok()?;
                mos = Some((x * 100.0).round().clamp(0.0, 450.0) as u16);
            }
            _ => return None,
        }
    }
    r.path = match (hops, ttl, loss, mos) {
        (Some(hops), Some(ttl), Some(loss_permille), Some(mos_centi)) => {
            Some(sextant_core::PathFigures {
                hops,
                ttl,
                loss_permille,
                mos_centi,
            })
        }
        (None, None, None, None) => None,
        _ => return None,
    };
    Some(r)
}

/// `cpu=N mem=N bw=N` (bytes per second), any of them.
fn site_figures(words: &[&str]) -> Result<SiteFigures, String> {
    let mut f = SiteFigures::default();
    for kv in words {
        match kv.split_once('=') {
            Some(("cpu", v)) => f.cpu_percent = v.parse().ok(),
            Some(("mem", v)) => f.memory_percent = v.parse().ok(),
            Some(("bw", v)) => f.bandwidth_bytes_ps = v.parse().ok(),
            _ => return Err(format!("bad figure {kv}")),
        }
    }
    Ok(f)
}
