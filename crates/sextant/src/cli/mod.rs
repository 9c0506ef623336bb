//! `sextant cli`: the appliance's verbs against a running server's API.
//!
//! One command from the command line, or, without one, a prompt with
//! history and completion (rustyline). Each command is one or two API
//! requests; tables by default, the API's JSON with `--json`.

pub(crate) mod client;
mod render;
pub mod verbs;

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::{Context, bail};
use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Editor, Helper};
use serde::de::DeserializeOwned;

use client::Client;
use render::{or_dash, table};
use verbs::{AdminKind, Command, Object, Verb};

/// How the CLI was started.
pub struct Options {
    pub server: String,
    pub token_file: Option<PathBuf>,
    pub json: bool,
    /// The command's words; empty for the prompt.
    pub command: Vec<String>,
}

/// Runs one command, or the prompt. A command that fails exits 1 with its
/// error; a line that is not a command exits 2.
pub fn run(o: Options) -> anyhow::Result<std::process::ExitCode> {
    let token = client::token(o.token_file.as_deref())?;
    let session = Session {
        client: Client::new(&o.server, token)?,
        json: o.json,
        names: RefCell::new(HashMap::new()),
    };
    if o.command.is_empty() {
        session.prompt()?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    // One argument is a whole command line, as given over ssh to the
    // appliance (`sextant cli "show gslb service"`): split as typed.
    // Otherwise the shell has already split the words; quote them back so
    // that the one parser sees what was meant (`-reason "two words"`).
    let line = if let [one] = o.command.as_slice() {
        one.clone()
    } else {
        o.command
            .iter()
            .map(|w| sextant_config::edit::quote(w, false))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let cmd = match verbs::parse(&line) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(std::process::ExitCode::from(2));
        }
    };
    match session.execute(&cmd) {
        Ok(out) => {
            print!("{out}");
            Ok(std::process::ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("{}", failure(&cmd, &e));
            Ok(std::process::ExitCode::from(1))
        }
    }
}

/// A failed command's message: a configuration command's as the appliance
/// answers (`ERROR: reason`), others naming the verb and object.
fn failure(cmd: &Command, e: &anyhow::Error) -> String {
    match cmd.verb {
        Verb::Edit(_) | Verb::SaveConfig => format!("ERROR: {e:#}"),
        _ => format!("error: {}: {e:#}", command_words(cmd)),
    }
}

/// The verb and object of a command, for its error messages.
fn command_words(cmd: &Command) -> String {
    let mut w = cmd.keywords.join(" ");
    if let Some(n) = &cmd.name {
        w.push(' ');
        w.push_str(n);
    }
    w
}

struct Session {
    client: Client,
    json: bool,
    /// Object names fetched for completion, per kind, once per session.
    names: RefCell<HashMap<&'static str, Vec<String>>>,
}

impl Session {
    fn get<T: DeserializeOwned>(&self, path: &str) -> anyhow::Result<(T, String)> {
        let body = self.client.get(path)?;
        let v = serde_json::from_str(&body).with_context(|| {
            format!("the server's answer to {path} is not what this sextant reads")
        })?;
        Ok((v, body))
    }

    /// The output of one command.
    fn execute(&self, cmd: &Command) -> anyhow::Result<String> {
        let name = cmd.name.as_deref();
        match cmd.verb {
            Verb::Help => Ok(verbs::help()),
            Verb::Quit => Ok(String::new()),
            Verb::ShowVServer => self.show_vservers(name),
            Verb::ShowService => self.show_services(name),
            Verb::ShowSite => self.show_sites(name),
            Verb::ShowDomain => self.show_domains(name),
            Verb::ShowLdns => self.show_ldns(),
            Verb::ShowVrid => self.show_vrids(name),
            Verb::ShowRunningConfig => self.running_config(),
            Verb::Edit(_) => self.edit(cmd),
            Verb::SaveConfig => {
                let reply = self.client.post("/v1/config/save", "{}")?;
                Ok(if self.json {
                    reply + "\n"
                } else {
                    "Done\n".to_string()
                })
            }
            Verb::StatVServer | Verb::StatService => self.stat(cmd.verb, name.unwrap_or("")),
            Verb::Admin(action, kind) => self.admin(action, kind, name.unwrap_or(""), cmd),
            Verb::SyncConfig => self.sync_config(cmd),
            Verb::Explain => self.explain(cmd),
        }
    }

    /// A configuration command: the server applies it to the running
    /// configuration (`POST /v1/config/commands`); `Done`, as the
    /// appliance answers.
    fn edit(&self, cmd: &Command) -> anyhow::Result<String> {
        let mut command = cmd.keywords.join(" ");
        for w in &cmd.args {
            command.push(' ');
            command.push_str(&sextant_config::edit::quote(&w.text, w.quoted));
        }
        let body = serde_json::to_string(&sextant_api::ConfigCommand { command })?;
        let reply = self.client.post("/v1/config/commands", &body)?;
        if self.json {
            return Ok(reply + "\n");
        }
        Ok("Done\n".to_string())
    }

    /// `show ns runningConfig`: the text that runs, and a first comment
    /// line when it holds changes not saved to the file.
    fn running_config(&self) -> anyhow::Result<String> {
        let text = self.client.get("/v1/config")?;
        let (status, _): (sextant_api::Status, _) = self.get("/v1/status")?;
        if !status.config_unsaved {
            return Ok(text);
        }
        Ok(format!(
            "# unsaved changes: {} command(s) since {} run but are not in {} (`save ns config` writes them)\n{text}",
            status.config_unsaved_commands,
            status.config_unsaved_since.as_deref().unwrap_or("-"),
            status.config_file,
        ))
    }

    /// `sync gslb config [-preview] [-forceSync SITE] [-debug]`.
    fn sync_config(&self, cmd: &Command) -> anyhow::Result<String> {
        let body = serde_json::to_string(&sextant_api::ConfigSyncRequest {
            preview: cmd.preview,
            force_site: cmd.force_site.clone(),
            debug: cmd.debug,
        })?;
        let reply = self.client.post("/v1/config/sync", &body)?;
        let a: sextant_api::ConfigSyncAnswer = serde_json::from_str(&reply)
            .context("the server's answer to /v1/config/sync is not what this sextant reads")?;
        let shown = if self.json {
            reply + "\n"
        } else {
            render_sync(&a)
        };
        // A sync that left a parent behind fails (exit 1), so that a
        // script notices: the parents it asked for, every one by default.
        let missed: Vec<String> = a
            .peers
            .iter()
            .filter(|p| {
                cmd.force_site
                    .as_deref()
                    .is_none_or(|f| f.eq_ignore_ascii_case(&p.site))
            })
            .filter(|p| a.preview.is_none() && p.state != "in_sync")
            .map(|p| format!("{} ({})", p.site, p.state.replace('_', " ")))
            .collect();
        if missed.is_empty() {
            return Ok(shown);
        }
        print!("{shown}");
        anyhow::bail!(
            "{} parent(s) did not take this node's configuration: {}",
            missed.len(),
            missed.join(", ")
        )
    }

    /// "no vserver named X; did you mean Y?" when `name` is not in `names`.
    fn missing(&self, object: Object, name: &str, names: &[&str]) -> anyhow::Error {
        match crate::suggest::nearest(name, names.iter().copied()) {
            Some(near) => anyhow::anyhow!(
                "no {} named {name:?}; did you mean {near:?}?",
                object.noun()
            ),
            None => anyhow::anyhow!("no {} named {name:?}", object.noun()),
        }
    }

    fn show_vservers(&self, name: Option<&str>) -> anyhow::Result<String> {
        let (all, body): (Vec<sextant_api::VServer>, _) = self.get("/v1/vservers")?;
        let Some(name) = name else {
            if self.json {
                return Ok(body + "\n");
            }
            let rows: Vec<Vec<String>> = all
                .iter()
                .map(|v| {
                    let up = v
                        .services
                        .iter()
                        .filter(|b| b.state == sextant_api::State::Up)
                        .count();
                    vec![
                        v.name.clone(),
                        v.service_type.clone(),
                        state(v.state).into(),
                        v.lb_method.clone(),
                        or_dash(v.backup_lb_method.as_ref()),
                        format!("{up}/{}", v.services.len()),
                        v.domains.join(","),
                    ]
                })
                .collect();
            return Ok(table(
                &[
                    "NAME",
                    "TYPE",
                    "STATE",
                    "METHOD",
                    "BACKUP METHOD",
                    "SERVICES UP",
                    "DOMAINS",
                ],
                &rows,
            ));
        };
        let names: Vec<&str> = all.iter().map(|v| v.name.as_str()).collect();
        let v = all
            .iter()
            .find(|v| v.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| self.missing(Object::VServer, name, &names))?;
        if self.json {
            return Ok(serde_json::to_string_pretty(v)? + "\n");
        }
        let mut out = format!("{} - {}\n", v.name, v.service_type);
        out += &format!("State: {}\n", state(v.state));
        out += &format!("Method: {}", v.lb_method);
        if let Some(b) = &v.backup_lb_method {
            out += &format!("   Backup method: {b}");
        }
        out += "\n";
        if let Some(t) = v.persistence_timeout_seconds {
            out += &format!("Persistence: SOURCEIP, timeout {t} s\n");
        }
        if let Some(b) = &v.backup_vserver {
            out += &format!("Backup vserver: {b}\n");
        }
        let flags: Vec<&str> = [
            (v.empty_down_response, "empty down response"),
            (v.multi_ip_response, "multi-IP response"),
            (v.ecs, "EDNS client subnet"),
        ]
        .into_iter()
        .filter_map(|(on, what)| on.then_some(what))
        .collect();
        if !flags.is_empty() {
            out += &format!("Options: {}\n", flags.join(", "));
        }
        out += &format!(
            "Domains: {}\n",
            if v.domains.is_empty() {
                "-".to_string()
            } else {
                v.domains.join(", ")
            }
        );
        out += &format!("{} bound service(s):\n", v.services.len());
        let rows: Vec<Vec<String>> = v
            .services
            .iter()
            .map(|b| {
                vec![
                    b.service.clone(),
                    b.site.clone(),
                    format!("{}:{}", b.ip, b.port),
                    b.weight.to_string(),
                    state(b.state).into(),
                ]
            })
            .collect();
        out += &indent(&table(
            &["SERVICE", "SITE", "ADDRESS", "WEIGHT", "STATE"],
            &rows,
        ));
        Ok(out)
    }

    fn show_services(&self, name: Option<&str>) -> anyhow::Result<String> {
        let (all, body): (Vec<sextant_api::Service>, _) = self.get("/v1/services")?;
        let Some(name) = name else {
            if self.json {
                return Ok(body + "\n");
            }
            let rows: Vec<Vec<String>> = all
                .iter()
                .map(|s| {
                    vec![
                        s.name.clone(),
                        s.site.clone(),
                        format!("{}:{}", s.ip, s.port),
                        state(s.state).into(),
                        admin(&s.admin_state),
                        checked_column(&s.health_source).into(),
                        s.reason.clone(),
                    ]
                })
                .collect();
            return Ok(table(
                &[
                    "NAME", "SITE", "ADDRESS", "STATE", "ADMIN", "CHECKED", "REASON",
                ],
                &rows,
            ));
        };
        let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
        let s = all
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| self.missing(Object::Service, name, &names))?;
        if self.json {
            return Ok(serde_json::to_string_pretty(s)? + "\n");
        }
        let mut out = format!("{} ({}:{}) - site {}\n", s.name, s.ip, s.port, s.site);
        if let Some(p) = &s.public_ip {
            out += &format!("Public IP: {p}\n");
        }
        out += &format!("State: {}", state(s.state));
        if let Some(t) = &s.last_change {
            out += &format!(" since {t}");
        }
        out += &format!("\nReason: {}\n", s.reason);
        out += &format!("Checked by: {}\n", checked_by(&s.health_source));
        if admin(&s.admin_state) != "ENABLED" {
            out += &format!("Admin: {}", admin(&s.admin_state));
            if let Some(t) = &s.admin_since {
                out += &format!(" since {t}");
            }
            if let Some(r) = &s.admin_reason {
                out += &format!(": {r}");
            }
            out += " (answers leave it out)\n";
        }
        if !s.monitors.is_empty() {
            let rows: Vec<Vec<String>> = s
                .monitors
                .iter()
                .map(|m| {
                    vec![
                        m.name.clone(),
                        m.kind.clone(),
                        m.state.clone(),
                        m.last_response_ms
                            .map_or("-".into(), |ms| format!("{ms:.1} ms")),
                        or_dash(m.last_detail.as_ref()),
                    ]
                })
                .collect();
            out += "Monitors:\n";
            out += &indent(&table(
                &["MONITOR", "TYPE", "STATE", "RESPONSE", "DETAIL"],
                &rows,
            ));
        }
        Ok(out)
    }

    fn show_sites(&self, name: Option<&str>) -> anyhow::Result<String> {
        let (mut all, _): (Vec<sextant_api::Site>, _) = self.get("/v1/sites")?;
        if let Some(name) = name {
            let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
            if !names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
                return Err(self.missing(Object::Site, name, &names));
            }
            all.retain(|s| s.name.eq_ignore_ascii_case(name));
        }
        if self.json {
            return Ok(serde_json::to_string_pretty(&all)? + "\n");
        }
        let rows: Vec<Vec<String>> = all
            .iter()
            .map(|s| {
                vec![
                    s.name.clone(),
                    s.ip.clone(),
                    s.role.clone(),
                    s.kind.clone(),
                    or_dash(s.parent.as_ref()),
                    s.mep.clone(),
                    or_dash(s.link.as_ref()),
                    s.link_rtt_ms.map_or("-".into(), |r| format!("{r:.1} ms")),
                    or_dash(s.cpu_percent.map(|c| format!("{c:.0}%"))),
                    config_sync_column(s.config_sync.as_ref()),
                ]
            })
            .collect();
        let mut out = table(
            &[
                "NAME", "IP", "ROLE", "TYPE", "PARENT", "MEP", "LINK", "RTT", "CPU", "CONFIG",
            ],
            &rows,
        );
        // Why each link that is not UP went down (a password mismatch, a
        // timeout...): otherwise only the log says it.
        for s in all.iter().filter(|s| s.mep != "UP") {
            if let Some(why) = &s.last_down_reason {
                out.push_str(&format!("Why MEP with {} is {}: {why}\n", s.name, s.mep));
            }
        }
        Ok(out)
    }

    fn show_domains(&self, name: Option<&str>) -> anyhow::Result<String> {
        let (mut all, _): (Vec<sextant_api::Domain>, _) = self.get("/v1/domains")?;
        if let Some(name) = name {
            let want = name.trim_end_matches('.');
            let names: Vec<&str> = all.iter().map(|d| d.name.as_str()).collect();
            if !names.iter().any(|n| n.eq_ignore_ascii_case(want)) {
                return Err(self.missing(Object::Domain, want, &names));
            }
            all.retain(|d| d.name.eq_ignore_ascii_case(want));
        }
        if self.json {
            return Ok(serde_json::to_string_pretty(&all)? + "\n");
        }
        let rows: Vec<Vec<String>> = all
            .iter()
            .map(|d| {
                vec![
                    d.name.clone(),
                    d.vserver.clone(),
                    d.ttl.to_string(),
                    or_dash(d.backup_ip.as_ref()),
                ]
            })
            .collect();
        Ok(table(&["DOMAIN", "VSERVER", "TTL", "BACKUP IP"], &rows))
    }

    fn show_ldns(&self) -> anyhow::Result<String> {
        let (l, body): (sextant_api::Ldns, _) = self.get("/v1/ldns")?;
        if self.json {
            return Ok(body + "\n");
        }
        let rows: Vec<Vec<String>> = l
            .entries
            .iter()
            .map(|e| {
                let rtts = e
                    .sites
                    .iter()
                    .map(|s| {
                        format!(
                            "{}={}",
                            s.site,
                            s.rtt_ms.map_or("-".into(), |r| format!("{r:.1}ms"))
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(" ");
                vec![
                    format!("{}/{}", e.ldns, e.prefix_len),
                    e.last_query_age_seconds
                        .map_or("-".into(), |a| format!("{a:.0} s")),
                    rtts,
                ]
            })
            .collect();
        let mut out = table(&["LDNS", "LAST QUERY", "RTT PER SITE"], &rows);
        out += &format!(
            "{} entries; probes sent {}, failed {}, rate limited {}\n",
            l.entries.len(),
            l.probes_sent,
            l.probe_failures,
            l.probes_rate_limited
        );
        Ok(out)
    }

    fn show_vrids(&self, name: Option<&str>) -> anyhow::Result<String> {
        let (mut v, _): (sextant_api::Vrrp, _) = self.get("/v1/vrrp")?;
        if let Some(name) = name {
            let id: u8 = name
                .parse()
                .map_err(|_| anyhow::anyhow!("a VRID is a number from 1 to 255, not {name:?}"))?;
            if !v.vrids.iter().any(|r| r.vrid == id) {
                bail!("no VRID {id} on this node");
            }
            v.vrids.retain(|r| r.vrid == id);
        }
        if self.json {
            return Ok(serde_json::to_string_pretty(&v)? + "\n");
        }
        let rows: Vec<Vec<String>> = v
            .vrids
            .iter()
            .map(|r| {
                vec![
                    r.vrid.to_string(),
                    r.interface.clone(),
                    r.family.clone(),
                    r.state.clone(),
                    format!("{}/{}", r.effective_priority, r.base_priority),
                    or_dash(r.master.as_ref()),
                    r.addresses.join(","),
                ]
            })
            .collect();
        Ok(table(
            &[
                "VRID",
                "INTERFACE",
                "FAMILY",
                "STATE",
                "PRIORITY (EFFECTIVE/BASE)",
                "MASTER",
                "ADDRESSES",
            ],
            &rows,
        ))
    }

    /// `stat gslb vserver|service NAME`: the counters of `/v1/stats`.
    fn stat(&self, verb: Verb, name: &str) -> anyhow::Result<String> {
        let (stats, _): (sextant_api::Stats, _) = self.get("/v1/stats")?;
        if verb == Verb::StatVServer {
            let names: Vec<&str> = stats.vservers.iter().map(|v| v.name.as_str()).collect();
            let v = stats
                .vservers
                .iter()
                .find(|v| v.name.eq_ignore_ascii_case(name))
                .ok_or_else(|| self.missing(Object::VServer, name, &names))?;
            if self.json {
                return Ok(serde_json::to_string_pretty(v)? + "\n");
            }
            let rows: Vec<Vec<String>> = v
                .answers
                .iter()
                .map(|(s, n)| vec![s.clone(), n.to_string()])
                .collect();
            return Ok(format!("{}: {} hits\n", v.name, v.hits)
                + &indent(&table(&["SERVICE", "ANSWERS"], &rows)));
        }
        let names: Vec<&str> = stats.services.iter().map(|s| s.name.as_str()).collect();
        let s = stats
            .services
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| self.missing(Object::Service, name, &names))?;
        if self.json {
            return Ok(serde_json::to_string_pretty(s)? + "\n");
        }
        Ok(format!(
            "{} (site {}): {} answers\n",
            s.name, s.site, s.answers
        ))
    }

    fn admin(
        &self,
        action: verbs::AdminAction,
        kind: AdminKind,
        name: &str,
        cmd: &Command,
    ) -> anyhow::Result<String> {
        let body = serde_json::json!({ "reason": cmd.reason }).to_string();
        let path = format!(
            "/v1/{}/{}/{}",
            kind.collection(),
            encode(name),
            action.path()
        );
        let reply = self.client.post(&path, &body)?;
        if self.json {
            return Ok(reply + "\n");
        }
        let v: serde_json::Value = serde_json::from_str(&reply).unwrap_or_default();
        let mut out = format!(
            "{} {}: {}",
            v["kind"]
                .as_str()
                .unwrap_or(kind.collection().trim_end_matches('s')),
            v["name"].as_str().unwrap_or(name),
            v["state"].as_str().unwrap_or("done")
        );
        if let Some(r) = v["reason"].as_str() {
            out += &format!(" ({r})");
        }
        Ok(out + "\n")
    }

    fn explain(&self, cmd: &Command) -> anyhow::Result<String> {
        let client = cmd.client.unwrap_or(std::net::IpAddr::from([127, 0, 0, 1]));
        let path = format!(
            "/v1/explain?name={}&client={client}&type={}",
            encode(cmd.name.as_deref().unwrap_or("")),
            encode(cmd.qtype.as_deref().unwrap_or("A"))
        );
        let (e, body): (sextant_api::Explain, _) = self.get(&path)?;
        if self.json {
            return Ok(body + "\n");
        }
        let mut out = crate::explain::render(&e, "live, from the server");
        if cmd.client.is_none() {
            out += "(client 127.0.0.1; give -client IP for another)\n";
        }
        Ok(out)
    }

    /// The names of `object`'s kind on the server, for completion.
    fn names(&self, object: Object) -> Vec<String> {
        let key = object.noun();
        if let Some(n) = self.names.borrow().get(key) {
            return n.clone();
        }
        let fetched: Vec<String> = match object {
            Object::VServer => self
                .get::<Vec<sextant_api::VServer>>("/v1/vservers")
                .map(|(v, _)| v.into_iter().map(|x| x.name).collect()),
            Object::Service => self
                .get::<Vec<sextant_api::Service>>("/v1/services")
                .map(|(v, _)| v.into_iter().map(|x| x.name).collect()),
            Object::Site => self
                .get::<Vec<sextant_api::Site>>("/v1/sites")
                .map(|(v, _)| v.into_iter().map(|x| x.name).collect()),
            Object::Domain | Object::QueryName => self
                .get::<Vec<sextant_api::Domain>>("/v1/domains")
                .map(|(v, _)| v.into_iter().map(|x| x.name).collect()),
            Object::Vrid => self
                .get::<sextant_api::Vrrp>("/v1/vrrp")
                .map(|(v, _)| v.vrids.into_iter().map(|x| x.vrid.to_string()).collect()),
            Object::Other => Ok(Vec::new()),
        }
        .unwrap_or_default();
        self.names.borrow_mut().insert(key, fetched.clone());
        fetched
    }

    /// The interactive prompt.
    fn prompt(self) -> anyhow::Result<()> {
        let history = history_file();
        let mut editor: Editor<Prompt, rustyline::history::DefaultHistory> =
            Editor::new().context("cannot start the prompt")?;
        editor.set_helper(Some(Prompt { session: self }));
        if let Some(h) = &history {
            let _ = editor.load_history(h);
        }
        println!("Sextant CLI: `help` lists the commands, Tab completes, Ctrl-D leaves.");
        loop {
            match editor.readline("> ") {
                Ok(line) => {
                    if line.trim().is_empty() {
                        continue;
                    }
                    let _ = editor.add_history_entry(line.as_str());
                    let Some(helper) = editor.helper() else { break };
                    let session = &helper.session;
                    match verbs::parse(&line) {
                        Ok(cmd) if cmd.verb == Verb::Quit => break,
                        Ok(cmd) => match session.execute(&cmd) {
                            Ok(out) => print!("{out}"),
                            Err(e) => println!("{}", failure(&cmd, &e)),
                        },
                        Err(e) => println!("error: {e}"),
                    }
                    // Names may have changed (a reload): fetch them again.
                    session.names.borrow_mut().clear();
                }
                Err(ReadlineError::Interrupted) => continue,
                Err(ReadlineError::Eof) => break,
                Err(e) => return Err(e).context("reading the prompt"),
            }
        }
        if let Some(h) = &history {
            let _ = editor.save_history(h);
        }
        Ok(())
    }
}

/// The operator's mark as the appliance shows it; an older server that
/// sends none is enabled.
/// `show gslb service NAME`'s "Checked by" line, from `health_source`.
fn checked_by(source: &str) -> String {
    match source {
        "monitors" => "its monitors".to_string(),
        "metric_exchange" => "metric exchange (what its site reports)".to_string(),
        "none" => {
            "nothing - no monitor bound: UP whatever happens to it (bind a monitor)".to_string()
        }
        "none_by_choice" => {
            "nothing, by choice (-healthMonitor NO): UP unless disabled".to_string()
        }
        other => other.to_string(),
    }
}

/// What checks a service, in a word for the list: `NOTHING` stands out.
fn checked_column(source: &str) -> &str {
    match source {
        "monitors" => "monitors",
        "metric_exchange" => "its site",
        "none" => "NOTHING",
        "none_by_choice" => "no (chosen)",
        other => other,
    }
}

fn admin(state: &str) -> String {
    if state.is_empty() {
        "ENABLED".to_string()
    } else {
        state.to_ascii_uppercase()
    }
}

/// `show gslb site`'s CONFIG column: config sync's state and the
/// incarnation (`local 3`, `in sync 3`, `rejected 2`), `-` where there is
/// none.
fn config_sync_column(c: Option<&sextant_api::SiteConfigSync>) -> String {
    match c {
        None => "-".to_string(),
        Some(c) => match c.incarnation {
            Some(i) => format!("{} {i}", c.state.replace('_', " ")),
            None => c.state.replace('_', " "),
        },
    }
}

/// A config sync answer as the prompt shows it.
fn render_sync(a: &sextant_api::ConfigSyncAnswer) -> String {
    let v = &a.version;
    let mut out = format!(
        "this node: incarnation {} from {} ({})\n",
        v.incarnation, v.origin, v.digest
    );
    if let Some(preview) = &a.preview {
        for p in preview {
            let theirs = p
                .version
                .as_ref()
                .map(|v| format!("incarnation {} from {}", v.incarnation, v.origin))
                .unwrap_or_else(|| "version not known".to_string());
            out += &format!("{} ({theirs}): {}\n", p.site, p.transfer);
            for line in p.diff.iter().flatten() {
                out += &format!("  {line}\n");
            }
        }
        return out;
    }
    for p in &a.peers {
        out += &format!(
            "{}: {}{}{}\n",
            p.site,
            p.state.replace('_', " "),
            p.incarnation
                .map(|i| format!(", incarnation {i}"))
                .unwrap_or_default(),
            p.last_error
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        );
    }
    if let Some(lines) = &a.exchange {
        out += "exchange:\n";
        out += &indent(&lines.join("\n"));
    }
    out
}

/// Indents every line by two blanks.
fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

fn state(s: sextant_api::State) -> &'static str {
    match s {
        sextant_api::State::Up => "UP",
        sextant_api::State::Down => "DOWN",
    }
}

/// Percent-encodes a path segment or query value.
pub(crate) fn encode(s: &str) -> String {
    sextant_http1::percent_encode(s)
}

/// `$XDG_STATE_HOME/sextant/cli_history`, else `~/.local/state/...`;
/// none without a home.
fn history_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))?;
    let dir = base.join("sextant");
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir.join("cli_history"))
}

/// The prompt's completion, from the verb table and the server's names.
struct Prompt {
    session: Session,
}

impl Completer for Prompt {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let head = &line[..pos];
        let start = head.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let before: Vec<&str> = head[..start].split_whitespace().collect();
        let partial = &head[start..];
        let names = |o: Object| self.session.names(o);
        let candidates = verbs::complete(&before, partial, &names);
        Ok((start, candidates.into_iter().map(|c| c + " ").collect()))
    }
}

impl Hinter for Prompt {
    type Hint = String;
}

impl Highlighter for Prompt {
    fn highlight<'l>(&self, line: &'l str, _pos: usize) -> Cow<'l, str> {
        Cow::Borrowed(line)
    }
}

impl Validator for Prompt {}

impl Helper for Prompt {}
