//! The appliance's verbs, as `sextant cli` understands them: one table of
//! commands drives parsing, `help`, completion and the suggestions an
//! error makes. Keywords match case-insensitively, and a keyword may be
//! shortened to any prefix no other command shares at that place
//! (`sh gslb vs` is `show gslb vserver`), as on the appliance.

use std::net::IpAddr;
use std::sync::LazyLock;

use sextant_config::edit::{EditVerb, Word};

/// Whether a command takes an object name after its keywords.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameArg {
    None,
    Optional(Object),
    Required(Object),
}

/// The kinds of object a name can stand for (for completion and errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Object {
    VServer,
    Service,
    Site,
    Domain,
    Vrid,
    /// A DNS name to explain (completed from the GSLB domains).
    QueryName,
    /// The name of another object a configuration command names (a
    /// monitor, a record, a policy): not completed.
    Other,
}

impl Object {
    /// How its value is written in a usage line.
    pub fn placeholder(self) -> &'static str {
        match self {
            Object::Vrid => "VRID",
            _ => "NAME",
        }
    }

    pub fn noun(self) -> &'static str {
        match self {
            Object::VServer => "vserver",
            Object::Service => "service",
            Object::Site => "site",
            Object::Domain => "domain",
            Object::Vrid => "VRID",
            Object::QueryName => "DNS name",
            Object::Other => "object",
        }
    }
}

/// What a command does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    ShowVServer,
    ShowService,
    ShowSite,
    ShowDomain,
    ShowLdns,
    ShowVrid,
    ShowRunningConfig,
    StatVServer,
    StatService,
    Admin(AdminAction, AdminKind),
    SyncConfig,
    /// A configuration command (`add gslb service ...`), applied by the
    /// server to the running configuration.
    Edit(EditVerb),
    /// `save ns config`.
    SaveConfig,
    Explain,
    Help,
    Quit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminAction {
    Enable,
    Disable,
    Drain,
}

impl AdminAction {
    /// The last segment of the API path (`POST /v1/services/NAME/disable`).
    pub fn path(self) -> &'static str {
        match self {
            AdminAction::Enable => "enable",
            AdminAction::Disable => "disable",
            AdminAction::Drain => "drain",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminKind {
    Service,
    VServer,
    Site,
}

impl AdminKind {
    /// The API collection (`/v1/services/...`).
    pub fn collection(self) -> &'static str {
        match self {
            AdminKind::Service => "services",
            AdminKind::VServer => "vservers",
            AdminKind::Site => "sites",
        }
    }
}

/// One command of the table.
#[derive(Debug)]
pub struct Spec {
    pub words: &'static [&'static str],
    pub name: NameArg,
    /// Options it takes, each followed by one value (`-reason TEXT`).
    pub options: &'static [&'static str],
    pub verb: Verb,
    pub help: &'static str,
}

impl Spec {
    /// The command as a user types it, e.g. `stat gslb vserver NAME`.
    pub fn usage(&self) -> String {
        let mut u = self.words.join(" ");
        if let Verb::Edit(verb) = self.verb {
            u.push_str(match verb {
                EditVerb::Add => " NAME ARGS... [-option VALUE...]",
                EditVerb::Set => " NAME -option VALUE...",
                EditVerb::Unset => " NAME -option...",
                EditVerb::Rm => " NAME [VALUE...]",
                EditVerb::Bind | EditVerb::Unbind => " NAME [VALUE...] [-option VALUE...]",
            });
            return u;
        }
        match self.name {
            NameArg::None => {}
            NameArg::Optional(o) => u.push_str(&format!(" [{}]", o.placeholder())),
            NameArg::Required(o) => u.push_str(&format!(" {}", o.placeholder())),
        }
        for o in self.options {
            if FLAGS.contains(o) {
                u.push_str(&format!(" [{o}]"));
            } else {
                u.push_str(&format!(" [{o} {}]", option_value(o)));
            }
        }
        u
    }
}

fn option_value(option: &str) -> &'static str {
    match option {
        "-client" => "IP",
        "-type" => "TYPE",
        "-forceSync" => "SITE",
        _ => "TEXT",
    }
}

/// Options that take no value (`sync gslb config -preview`).
const FLAGS: &[&str] = &["-preview", "-debug"];

use AdminAction::{Disable, Drain, Enable};
use AdminKind as K;

/// Every command `sextant cli` knows: [`BASE_SPECS`], then the
/// configuration commands (one per verb and kind of
/// `sextant_config::edit::KINDS`) and `save ns config`.
pub fn specs() -> &'static [Spec] {
    static ALL: LazyLock<Vec<Spec>> = LazyLock::new(|| {
        let mut all: Vec<Spec> = Vec::new();
        let (before, after) = BASE_SPECS.split_at(
            BASE_SPECS
                .iter()
                .position(|s| s.verb == Verb::Explain)
                .unwrap_or(BASE_SPECS.len()),
        );
        all.extend(before.iter().map(Spec::copy));
        for verb in EditVerb::ALL {
            for kind in sextant_config::edit::KINDS {
                if !kind.verbs.contains(&verb) {
                    continue;
                }
                let words: Vec<&'static str> = std::iter::once(verb.word())
                    .chain(kind.words.iter().copied())
                    .collect();
                let object = match kind.words {
                    ["gslb", "service"] => Object::Service,
                    ["gslb", "vserver"] => Object::VServer,
                    ["gslb", "site"] => Object::Site,
                    _ => Object::Other,
                };
                all.push(Spec {
                    words: Box::leak(words.into_boxed_slice()),
                    name: NameArg::Required(object),
                    options: edit_options(verb, kind.words),
                    verb: Verb::Edit(verb),
                    help: Box::leak(edit_help(verb, kind.words).into_boxed_str()),
                });
            }
        }
        all.push(Spec {
            words: &["save", "ns", "config"],
            name: NameArg::None,
            options: &[],
            verb: Verb::SaveConfig,
            help: "write the running configuration to the file (configuration commands run at once, and are saved by this)",
        });
        all.extend(after.iter().map(Spec::copy));
        all
    });
    &ALL
}

impl Spec {
    fn copy(&self) -> Spec {
        Spec {
            words: self.words,
            name: self.name,
            options: self.options,
            verb: self.verb,
            help: self.help,
        }
    }
}

/// What a configuration command does, for `help`.
fn edit_help(verb: EditVerb, kind: &[&str]) -> String {
    let what = match kind {
        ["gslb", k] => format!("a GSLB {k}"),
        ["lb", "monitor"] => "a monitor".to_string(),
        ["dns", "global"] => "a DNS policy, globally".to_string(),
        ["dns", "zone"] => "a DNS zone".to_string(),
        ["dns", "policy"] => "a DNS policy".to_string(),
        ["dns", "action"] => "a DNS policy action".to_string(),
        ["dns", r] => format!("a DNS record ({r})"),
        _ => kind.join(" "),
    };
    match verb {
        EditVerb::Add => format!("add {what} (running at once; save ns config saves)"),
        EditVerb::Set => format!("change options of {what}"),
        EditVerb::Unset => format!("put options of {what} back to their defaults"),
        EditVerb::Rm => format!("remove {what}"),
        EditVerb::Bind => match kind {
            ["gslb", "vserver"] => {
                "bind a service (-serviceName) or a domain (-domainName) to a vserver".to_string()
            }
            ["gslb", "service"] => "bind a monitor to a service (-monitorName)".to_string(),
            _ => format!("bind {what}"),
        },
        EditVerb::Unbind => match kind {
            ["gslb", "vserver"] => "unbind a service or a domain from a vserver".to_string(),
            _ => format!("unbind {what}"),
        },
    }
}

/// The options a configuration command's completion offers (any other
/// option is passed on: the server's reader decides).
fn edit_options(verb: EditVerb, kind: &[&str]) -> &'static [&'static str] {
    match (verb, kind) {
        (EditVerb::Bind | EditVerb::Unbind, ["gslb", "vserver"]) => &[
            "-serviceName",
            "-domainName",
            "-weight",
            "-TTL",
            "-backupIP",
        ],
        (EditVerb::Bind | EditVerb::Unbind, ["gslb", "service"]) => &["-monitorName", "-weight"],
        (EditVerb::Bind | EditVerb::Unbind, ["dns", "global"]) => {
            &["-gotoPriorityExpression", "-type"]
        }
        (_, ["gslb", "service"]) => &[
            "-siteName",
            "-publicIP",
            "-publicPort",
            "-maxClients",
            "-cnameEntry",
            "-comment",
        ],
        (_, ["gslb", "vserver"]) => &[
            "-lbMethod",
            "-backupLBMethod",
            "-persistenceType",
            "-timeout",
            "-tolerance",
            "-backupVServer",
            "-EDR",
            "-MIR",
            "-ECS",
            "-comment",
        ],
        (_, ["gslb", "site"]) => &[
            "-siteType",
            "-publicIP",
            "-metricExchange",
            "-parentSite",
            "-comment",
        ],
        (_, ["lb", "monitor"]) => &[
            "-respCode",
            "-httpRequest",
            "-send",
            "-recv",
            "-interval",
            "-resptimeout",
            "-retries",
            "-downTime",
            "-destPort",
            "-query",
            "-queryType",
        ],
        (_, ["dns", _]) => &["-TTL"],
        _ => &[],
    }
}

/// The commands of the table written out (the configuration commands are
/// added from `sextant_config::edit::KINDS` by [`specs`]).
const BASE_SPECS: &[Spec] = &[
    Spec {
        words: &["show", "gslb", "vserver"],
        name: NameArg::Optional(Object::VServer),
        options: &[],
        verb: Verb::ShowVServer,
        help: "GSLB vservers: method, state, bound services and domains",
    },
    Spec {
        words: &["show", "gslb", "service"],
        name: NameArg::Optional(Object::Service),
        options: &[],
        verb: Verb::ShowService,
        help: "GSLB services: address, site, state, what checks them and why",
    },
    Spec {
        words: &["show", "gslb", "site"],
        name: NameArg::Optional(Object::Site),
        options: &[],
        verb: Verb::ShowSite,
        help: "GSLB sites: role, metric exchange state, figures",
    },
    Spec {
        words: &["show", "gslb", "domain"],
        name: NameArg::Optional(Object::Domain),
        options: &[],
        verb: Verb::ShowDomain,
        help: "GSLB domains and the vserver answering each",
    },
    Spec {
        words: &["show", "gslb", "ldnsentries"],
        name: NameArg::None,
        options: &[],
        verb: Verb::ShowLdns,
        help: "the RTT method's LDNS table",
    },
    Spec {
        words: &["show", "vrid"],
        name: NameArg::Optional(Object::Vrid),
        options: &[],
        verb: Verb::ShowVrid,
        help: "VRRP virtual routers: state, priority, VIPs",
    },
    Spec {
        words: &["show", "ns", "runningConfig"],
        name: NameArg::None,
        options: &[],
        verb: Verb::ShowRunningConfig,
        help: "the configuration that runs (a first comment line tells of unsaved changes)",
    },
    Spec {
        words: &["stat", "gslb", "vserver"],
        name: NameArg::Required(Object::VServer),
        options: &[],
        verb: Verb::StatVServer,
        help: "a vserver's hits, and answers per service",
    },
    Spec {
        words: &["stat", "gslb", "service"],
        name: NameArg::Required(Object::Service),
        options: &[],
        verb: Verb::StatService,
        help: "how often a service was the answer",
    },
    Spec {
        words: &["enable", "gslb", "service"],
        name: NameArg::Required(Object::Service),
        options: &["-reason"],
        verb: Verb::Admin(Enable, K::Service),
        help: "answer with a service again",
    },
    Spec {
        words: &["disable", "gslb", "service"],
        name: NameArg::Required(Object::Service),
        options: &["-reason"],
        verb: Verb::Admin(Disable, K::Service),
        help: "stop answering with a service (kept across restarts)",
    },
    Spec {
        words: &["drain", "gslb", "service"],
        name: NameArg::Required(Object::Service),
        options: &["-reason"],
        verb: Verb::Admin(Drain, K::Service),
        help: "no new clients for a service; persistent ones stay until they expire",
    },
    Spec {
        words: &["enable", "gslb", "vserver"],
        name: NameArg::Required(Object::VServer),
        options: &["-reason"],
        verb: Verb::Admin(Enable, K::VServer),
        help: "answer for a vserver again",
    },
    Spec {
        words: &["disable", "gslb", "vserver"],
        name: NameArg::Required(Object::VServer),
        options: &["-reason"],
        verb: Verb::Admin(Disable, K::VServer),
        help: "answer a vserver's domains as if none of its services were UP",
    },
    Spec {
        words: &["enable", "gslb", "site"],
        name: NameArg::Required(Object::Site),
        options: &["-reason"],
        verb: Verb::Admin(Enable, K::Site),
        help: "answer with a site's services again",
    },
    Spec {
        words: &["disable", "gslb", "site"],
        name: NameArg::Required(Object::Site),
        options: &["-reason"],
        verb: Verb::Admin(Disable, K::Site),
        help: "stop answering with every service of a site",
    },
    Spec {
        words: &["sync", "gslb", "config"],
        name: NameArg::None,
        options: &["-preview", "-forceSync", "-debug"],
        verb: Verb::SyncConfig,
        help: "send this parent's configuration to the other parents now (config sync)",
    },
    Spec {
        words: &["explain"],
        name: NameArg::Required(Object::QueryName),
        options: &["-client", "-type"],
        verb: Verb::Explain,
        help: "how a query for a name is answered now, step by step",
    },
    Spec {
        words: &["help"],
        name: NameArg::None,
        options: &[],
        verb: Verb::Help,
        help: "this list",
    },
    Spec {
        words: &["quit"],
        name: NameArg::None,
        options: &[],
        verb: Verb::Quit,
        help: "leave the prompt (also exit, or Ctrl-D)",
    },
    Spec {
        words: &["exit"],
        name: NameArg::None,
        options: &[],
        verb: Verb::Quit,
        help: "leave the prompt",
    },
];

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub verb: Verb,
    pub name: Option<String>,
    pub reason: Option<String>,
    pub client: Option<IpAddr>,
    pub qtype: Option<String>,
    /// `sync gslb config -forceSync SITE`, `-preview`, `-debug`.
    pub force_site: Option<String>,
    pub preview: bool,
    pub debug: bool,
    /// A configuration command's words after its keywords (name, values,
    /// options), as typed: the server reads them.
    pub args: Vec<Word>,
    /// The command's keywords as the table spells them.
    pub keywords: &'static [&'static str],
}

/// Why a line is not a command, said so that the user can fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct VerbError(pub String);

/// Splits a line into words with the configuration file's quoting rules
/// (the lexer of sextant-config): blanks separate, `"..."` groups with
/// `\"` and `\\` escapes (`-reason "patching the kernel"`), `'...'`
/// groups as written, `#` at the start of a word begins a comment.
pub fn words(line: &str) -> Result<Vec<Word>, VerbError> {
    sextant_config::edit::split(line).map_err(|e| VerbError(e.to_string()))
}

/// The keyword at place `depth` that `word` stands for among `specs` (all
/// agreeing on the places before): an exact match, or the one keyword it
/// is a prefix of.
fn keyword<'a>(specs: &[&'a Spec], depth: usize, word: &str) -> Option<&'a str> {
    let mut candidates: Vec<&'a str> = specs
        .iter()
        .filter_map(|s| s.words.get(depth).copied())
        .collect();
    candidates.sort_unstable();
    candidates.dedup();
    if let Some(exact) = candidates.iter().find(|k| k.eq_ignore_ascii_case(word)) {
        return Some(exact);
    }
    let lower = word.to_ascii_lowercase();
    let mut prefixed = candidates
        .iter()
        .filter(|k| k.to_ascii_lowercase().starts_with(&lower));
    match (prefixed.next(), prefixed.next()) {
        (Some(k), None) => Some(k),
        _ => None,
    }
}

/// The keywords that may come at place `depth` after `given`.
pub fn next_keywords(given: &[&str]) -> Vec<&'static str> {
    let mut specs: Vec<&Spec> = specs().iter().collect();
    for (depth, w) in given.iter().enumerate() {
        let Some(k) = keyword(&specs, depth, w) else {
            return Vec::new();
        };
        specs.retain(|s| s.words.get(depth) == Some(&k));
    }
    let mut next: Vec<&'static str> = specs
        .iter()
        .filter_map(|s| s.words.get(given.len()).copied())
        .collect();
    next.sort_unstable();
    next.dedup();
    next
}

/// The command `words` spell, and the words left after its keywords.
pub fn spec_of(words: &[String]) -> Result<(&'static Spec, &[String]), VerbError> {
    let mut specs: Vec<&'static Spec> = specs().iter().collect();
    let mut depth = 0;
    loop {
        if let Some(done) = specs.iter().find(|s| s.words.len() == depth) {
            return Ok((done, &words[depth..]));
        }
        let Some(word) = words.get(depth) else {
            let given = words.join(" ");
            let next = next_keywords(&words.iter().map(String::as_str).collect::<Vec<_>>());
            return Err(VerbError(format!(
                "`{given}` is not a whole command; after it comes one of: {}",
                next.join(", ")
            )));
        };
        match keyword(&specs, depth, word) {
            Some(k) => specs.retain(|s| s.words.get(depth) == Some(&k)),
            None => return Err(unknown(words, depth, &specs)),
        }
        depth += 1;
    }
}

/// The error for a word that no command has at `depth`: the nearest whole
/// command by spelling, and what may come there.
fn unknown(words: &[String], depth: usize, specs: &[&Spec]) -> VerbError {
    let mut here: Vec<&str> = specs
        .iter()
        .filter_map(|s| s.words.get(depth).copied())
        .collect();
    here.sort_unstable();
    here.dedup();
    let typed = words
        .iter()
        .take(depth + 1)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(" ");
    let mut msg = format!("unknown command `{typed}`");
    if let Some(near) = nearest_command(words) {
        msg.push_str(&format!("; did you mean `{near}`?"));
    } else if !here.is_empty() {
        msg.push_str(&format!("; here comes one of: {}", here.join(", ")));
    }
    msg.push_str(" (`help` lists every command)");
    VerbError(msg)
}

/// The command whose keywords are nearest (by edit distance, ignoring
/// case) to the first words typed, if one is near enough to be a typo.
fn nearest_command(words: &[String]) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for s in specs() {
        let typed = words.iter().take(s.words.len()).map(String::as_str);
        let typed: Vec<char> = joined(typed)
            .chars()
            .take(crate::suggest::MAX_COMPARED + 1)
            .map(|c| c.to_ascii_lowercase())
            .collect();
        if typed.len() > crate::suggest::MAX_COMPARED {
            return None;
        }
        let phrase = s.words.join(" ");
        let mut max = (phrase.len() / 4).max(2);
        if let Some((d, _)) = &best {
            max = max.min(d.saturating_sub(1));
        }
        let target: Vec<char> = phrase.to_ascii_lowercase().chars().collect();
        // What was typed is what failed: never suggest it back.
        if typed == target {
            continue;
        }
        if let Some(d) = crate::suggest::distance_within(&typed, &target, max)
            && best.as_ref().is_none_or(|(b, _)| d < *b)
        {
            best = Some((d, phrase));
        }
    }
    best.map(|(_, phrase)| phrase)
}

/// Words joined by one space each.
fn joined<'a>(words: impl Iterator<Item = &'a str>) -> String {
    words.collect::<Vec<_>>().join(" ")
}

/// Parses one command line.
pub fn parse(line: &str) -> Result<Command, VerbError> {
    let typed = words(line)?;
    let words: Vec<String> = typed.iter().map(|w| w.text.clone()).collect();
    if words.is_empty() {
        return Err(VerbError(
            "empty command (`help` lists every command)".into(),
        ));
    }
    let (spec, rest) = spec_of(&words)?;
    let usage = spec.usage();
    let mut cmd = Command {
        verb: spec.verb,
        name: None,
        reason: None,
        client: None,
        qtype: None,
        force_site: None,
        preview: false,
        debug: false,
        args: Vec::new(),
        keywords: spec.words,
    };
    if let Verb::Edit(_) = spec.verb {
        // The server's reader checks the rest; the name must be there.
        cmd.args = typed[spec.words.len()..].to_vec();
        match cmd.args.first() {
            Some(w) if !w.text.starts_with('-') || w.quoted => cmd.name = Some(w.text.clone()),
            _ => {
                return Err(VerbError(format!(
                    "`{}` needs a name: {usage}",
                    spec.words.join(" ")
                )));
            }
        }
        return Ok(cmd);
    }
    let mut rest = rest.iter();
    let mut pending = rest.next();
    if let NameArg::Optional(_) | NameArg::Required(_) = spec.name
        && let Some(w) = pending
        && !w.starts_with('-')
    {
        cmd.name = Some(w.clone());
        pending = rest.next();
    }
    if let NameArg::Required(object) = spec.name
        && cmd.name.is_none()
    {
        return Err(VerbError(format!(
            "`{}` needs a {} name: {usage}",
            spec.words.join(" "),
            object.noun()
        )));
    }
    while let Some(w) = pending {
        let Some(option) = spec.options.iter().find(|o| o.eq_ignore_ascii_case(w)) else {
            return Err(VerbError(if w.starts_with('-') {
                format!("`{}` has no option {w}: {usage}", spec.words.join(" "))
            } else {
                format!("unexpected `{w}` after `{}`: {usage}", spec.words.join(" "))
            }));
        };
        if FLAGS.contains(option) {
            match *option {
                "-preview" => cmd.preview = true,
                "-debug" => cmd.debug = true,
                _ => {}
            }
            pending = rest.next();
            continue;
        }
        let Some(value) = rest.next() else {
            return Err(VerbError(format!("{option} needs a value: {usage}")));
        };
        match *option {
            "-forceSync" => cmd.force_site = Some(value.clone()),
            "-reason" => cmd.reason = Some(value.clone()),
            "-type" => cmd.qtype = Some(value.to_ascii_uppercase()),
            "-client" => {
                cmd.client = Some(
                    value
                        .parse()
                        .map_err(|_| VerbError(format!("-client {value}: not an IP address")))?,
                );
            }
            _ => {}
        }
        pending = rest.next();
    }
    Ok(cmd)
}

/// The `help` text: every command and what it does.
pub fn help() -> String {
    let width = specs().iter().map(|s| s.usage().len()).max().unwrap_or(0);
    let mut out = String::new();
    for s in specs() {
        out.push_str(&format!("  {:width$}  {}\n", s.usage(), s.help));
    }
    out.push_str(
        "\nKeywords may be shortened where no other command shares the prefix \
         (`sh gslb vs web`). Quote values with blanks: -reason \"kernel update\".\n",
    );
    out
}

/// Completion: the candidates for the word being typed, given the words
/// before it. `names` gives the names of an object kind (from the server).
pub fn complete(
    before: &[&str],
    partial: &str,
    names: &dyn Fn(Object) -> Vec<String>,
) -> Vec<String> {
    let lower = partial.to_ascii_lowercase();
    let keep = |c: &str| c.to_ascii_lowercase().starts_with(&lower);
    let next = next_keywords(before);
    if !next.is_empty() {
        return next
            .into_iter()
            .filter(|k| keep(k))
            .map(str::to_string)
            .collect();
    }
    let owned: Vec<String> = before.iter().map(|w| (*w).to_string()).collect();
    let Ok((spec, rest)) = spec_of(&owned) else {
        return Vec::new();
    };
    let name_slot = matches!(spec.name, NameArg::Optional(_) | NameArg::Required(_));
    match (spec.name, rest.len()) {
        (NameArg::Optional(o) | NameArg::Required(o), 0) if !partial.starts_with('-') => {
            let mut out: Vec<String> = names(o).into_iter().filter(|n| keep(n)).collect();
            if matches!(spec.name, NameArg::Optional(_)) || out.is_empty() {
                out.extend(
                    spec.options
                        .iter()
                        .filter(|o| keep(o))
                        .map(|o| (*o).to_string()),
                );
            }
            out
        }
        (_, n) => {
            // After the name (or without one), options, each with a value.
            let after_name = if name_slot { n.saturating_sub(1) } else { n };
            let at_option = name_slot && n == 0 || after_name % 2 == 0;
            if at_option {
                spec.options
                    .iter()
                    .filter(|o| !rest.iter().any(|r| r.eq_ignore_ascii_case(o)))
                    .filter(|o| keep(o))
                    .map(|o| (*o).to_string())
                    .collect()
            } else {
                Vec::new()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(line: &str) -> Command {
        parse(line).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    fn error(line: &str) -> String {
        parse(line).unwrap_err().0
    }

    #[test]
    fn the_appliance_verbs_parse() {
        let c = parsed("show gslb vserver");
        assert_eq!((c.verb, c.name), (Verb::ShowVServer, None));
        let c = parsed("SHOW GSLB VSERVER vs_app");
        assert_eq!(
            (c.verb, c.name.as_deref()),
            (Verb::ShowVServer, Some("vs_app"))
        );
        assert_eq!(
            parsed("show ns runningConfig").verb,
            Verb::ShowRunningConfig
        );
        assert_eq!(
            parsed("show ns runningconfig").verb,
            Verb::ShowRunningConfig
        );
        assert_eq!(parsed("show gslb ldnsentries").verb, Verb::ShowLdns);
        let c = parsed(r#"disable gslb service web-1 -reason "kernel \"6.1\" update""#);
        assert_eq!(
            c.verb,
            Verb::Admin(AdminAction::Disable, AdminKind::Service)
        );
        assert_eq!(c.name.as_deref(), Some("web-1"));
        assert_eq!(c.reason.as_deref(), Some(r#"kernel "6.1" update"#));
        let c = parsed("explain app.example.com -client 192.0.2.1 -type aaaa");
        assert_eq!(c.verb, Verb::Explain);
        assert_eq!(c.client, Some("192.0.2.1".parse().unwrap()));
        assert_eq!(c.qtype.as_deref(), Some("AAAA"));
    }

    #[test]
    fn unambiguous_prefixes_stand_for_keywords() {
        assert_eq!(parsed("sh gslb vs web").verb, Verb::ShowVServer);
        assert_eq!(parsed("sh gs se").verb, Verb::ShowService);
        assert_eq!(parsed("sh gslb si").verb, Verb::ShowSite);
        assert_eq!(
            parsed("dis gslb site fra").verb,
            Verb::Admin(AdminAction::Disable, AdminKind::Site)
        );
        // `s` is show, stat and ... : ambiguous, so an error.
        assert!(
            error("s gslb vserver").contains("unknown command"),
            "{}",
            error("s gslb vserver")
        );
        // `show gslb s` could be service, site: ambiguous.
        assert!(error("show gslb s").contains("unknown command `show gslb s`"));
    }

    #[test]
    fn errors_name_the_verb_and_suggest_the_nearest_command() {
        assert_eq!(
            error("shwo gslb vserver"),
            "unknown command `shwo`; did you mean `show gslb vserver`? (`help` lists every command)"
        );
        assert_eq!(
            error("show gslb vsrever x"),
            "unknown command `show gslb vsrever`; did you mean `show gslb vserver`? (`help` lists every command)"
        );
        assert_eq!(
            error("show gslb"),
            "`show gslb` is not a whole command; after it comes one of: domain, ldnsentries, service, site, vserver"
        );
        assert_eq!(
            error("stat gslb vserver"),
            "`stat gslb vserver` needs a vserver name: stat gslb vserver NAME"
        );
        assert_eq!(
            error("disable gslb service web -because x"),
            "`disable gslb service` has no option -because: disable gslb service NAME [-reason TEXT]"
        );
        assert_eq!(
            error("disable gslb service web -reason"),
            "-reason needs a value: disable gslb service NAME [-reason TEXT]"
        );
        assert_eq!(
            error("explain a.example -client nowhere"),
            "-client nowhere: not an IP address"
        );
        assert_eq!(
            error("frobnicate"),
            "unknown command `frobnicate`; here comes one of: add, bind, disable, drain, enable, exit, explain, help, quit, rm, save, set, show, stat, sync, unbind, unset (`help` lists every command)"
        );
        assert!(
            error(r#"disable gslb service "web"#).contains("unterminated quoted string"),
            "{}",
            error(r#"disable gslb service "web"#)
        );
    }

    #[test]
    fn configuration_commands_parse_and_keep_their_words() {
        let c = parsed(r#"add gslb service s1 10.0.0.1 HTTP 80 -siteName x -comment "a b""#);
        assert_eq!(c.verb, Verb::Edit(EditVerb::Add));
        assert_eq!(c.name.as_deref(), Some("s1"));
        assert_eq!(
            sextant_config::edit::join(&c.args),
            r#"s1 10.0.0.1 HTTP 80 -siteName x -comment "a b""#
        );
        assert_eq!(
            parsed("se gslb vs v1 -lbMethod RTT").verb,
            Verb::Edit(EditVerb::Set)
        );
        assert_eq!(
            parsed("rm dns addRec a.example.com").verb,
            Verb::Edit(EditVerb::Rm)
        );
        assert_eq!(
            parsed("bind dns global p1 100").verb,
            Verb::Edit(EditVerb::Bind)
        );
        assert_eq!(parsed("save ns config").verb, Verb::SaveConfig);
        assert_eq!(
            error("set gslb vserver -lbMethod RTT"),
            "`set gslb vserver` needs a name: set gslb vserver NAME -option VALUE..."
        );
    }

    #[test]
    fn completion_knows_the_configuration_commands() {
        let names = |o: Object| match o {
            Object::VServer => vec!["vs_app".to_string()],
            _ => Vec::new(),
        };
        assert_eq!(complete(&[], "ad", &names), ["add"]);
        assert_eq!(complete(&["add"], "", &names), ["dns", "gslb", "lb"]);
        assert_eq!(complete(&["set", "gslb"], "vs", &names), ["vserver"]);
        assert_eq!(
            complete(&["set", "gslb", "vserver"], "vs", &names),
            ["vs_app"]
        );
        assert_eq!(
            complete(&["set", "gslb", "vserver", "vs_app"], "-lb", &names),
            ["-lbMethod"]
        );
        assert_eq!(complete(&["save", "ns"], "", &names), ["config"]);
        assert!(help().contains("save ns config"));
    }

    /// The text that failed is never what is suggested.
    #[test]
    fn a_suggestion_never_repeats_the_input() {
        // One word holding a whole command (as a shell passes "show gslb
        // service"): not a keyword, and its nearest command is itself.
        let e = spec_of(&["show gslb service".to_string()]).unwrap_err().0;
        assert!(!e.contains("did you mean `show gslb service`"), "{e}");
        assert!(e.starts_with("unknown command `show gslb service`"), "{e}");
    }

    #[test]
    fn sync_gslb_config_takes_flags_and_a_site() {
        let c = parsed("sync gslb config -preview");
        assert_eq!(
            (c.verb, c.preview, c.debug, c.force_site),
            (Verb::SyncConfig, true, false, None)
        );
        let c = parsed("sync gslb config -forceSync P2 -debug");
        assert_eq!(
            (c.preview, c.debug, c.force_site.as_deref()),
            (false, true, Some("P2"))
        );
        assert_eq!(
            error("sync gslb config -forceSync"),
            "-forceSync needs a value: sync gslb config [-preview] [-forceSync SITE] [-debug]"
        );
        assert_eq!(
            error("sync gslb config P2"),
            "unexpected `P2` after `sync gslb config`: sync gslb config [-preview] [-forceSync SITE] [-debug]"
        );
    }

    #[test]
    fn completion_offers_keywords_then_names_then_options() {
        let names = |o: Object| match o {
            Object::VServer => vec!["vs_app".to_string(), "vs_backup".to_string()],
            Object::Service => vec!["web-1".to_string()],
            _ => Vec::new(),
        };
        assert_eq!(complete(&[], "st", &names), ["stat"]);
        assert_eq!(complete(&["show"], "", &names), ["gslb", "ns", "vrid"]);
        assert_eq!(
            complete(&["show", "gslb"], "s", &names),
            ["service", "site"]
        );
        assert_eq!(
            complete(&["sh", "gslb", "vserver"], "vs_b", &names),
            ["vs_backup"]
        );
        assert_eq!(
            complete(&["disable", "gslb", "service"], "w", &names),
            ["web-1"]
        );
        assert_eq!(
            complete(&["disable", "gslb", "service", "web-1"], "", &names),
            ["-reason"]
        );
        assert_eq!(
            complete(
                &["disable", "gslb", "service", "web-1", "-reason"],
                "",
                &names
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn every_command_is_in_the_help_and_parses_from_its_usage() {
        let help = help();
        for s in specs() {
            assert!(help.contains(&s.usage()), "{}", s.usage());
            let mut line = s.words.join(" ");
            if !matches!(s.name, NameArg::None) {
                line.push_str(" x");
            }
            assert_eq!(parsed(&line).verb, s.verb, "{line}");
        }
    }

    #[test]
    fn nearest_names() {
        use crate::suggest::nearest;
        let names = ["vs_app", "vs_backup", "web-fra-1"];
        assert_eq!(nearest("vs_ap", names), Some("vs_app"));
        assert_eq!(nearest("web-fra-2", names), Some("web-fra-1"));
        assert_eq!(nearest("zzz", names), None);
    }

    /// A 100 kB word is no typo of any command: no suggestion, at once.
    #[test]
    fn a_huge_word_gets_no_suggestion() {
        let huge = "s".repeat(100_000);
        let err = parse(&huge).expect_err("not a command");
        assert!(
            !err.0.contains("did you mean"),
            "{}",
            &err.0[err.0.len() - 200..]
        );
    }
}
