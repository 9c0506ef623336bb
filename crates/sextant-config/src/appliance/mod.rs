//! The appliance's command syntax (NetScaler-style `add gslb ...` lines),
//! read into a [`Draft`].
//!
//! Each line is tokenized ([`crate::lexer`]), matched against the command
//! table below, and handed to the command's reader, which checks its
//! arguments and records the objects. References between objects are kept
//! as names and resolved by `validate` after the whole file has been read, so
//! an object may be referred to before the line that defines it.
//! `set ...` commands change an object and therefore need it defined on an
//! earlier line, as on the appliance.

mod args;
mod dc;
mod dns;
pub(crate) mod dns_server;
mod dnssec;
mod gslb;
mod location;
mod monitor;
mod policy;
mod records;
mod server;
mod system;
mod vrrp;

pub(crate) use monitor::why_unprobed;
pub(crate) use system::is_parameter_option;

use std::collections::HashMap;

use crate::draft::Draft;
use crate::error::Diag;
use crate::lexer::{self, Token};

pub(crate) use args::{Arity, OptSpec, opt};

/// Reads a whole file into a draft, recording every problem in `diag`.
pub(crate) fn read(text: &str, diag: &mut Diag) -> Draft {
    let mut r = Reader {
        diag,
        draft: Draft::default(),
        adns: HashMap::new(),
        monitor_types: Vec::new(),
        ns_ttl_lines: HashMap::new(),
        servers: HashMap::new(),
        raw: "",
    };
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        r.raw = raw;
        match lexer::tokenize(raw) {
            Ok(tokens) if tokens.is_empty() => {}
            Ok(tokens) => r.command(line, &tokens),
            Err(e) => r.diag.error(line, e),
        }
    }
    r.draft
}

/// State while reading one file.
pub(crate) struct Reader<'d> {
    pub diag: &'d mut Diag,
    pub draft: Draft,
    /// Names of `add service ... ADNS` listeners and their lines.
    pub adns: HashMap<String, usize>,
    /// The monitor type of each entry of `draft.monitors` (for `set lb monitor`).
    pub monitor_types: Vec<monitor::MonType>,
    /// Per zone apex: the NS TTL given explicitly, and on which line.
    pub ns_ttl_lines: HashMap<String, (u32, usize)>,
    /// `add server` names (lower case): the address and the defining line.
    pub servers: HashMap<String, (std::net::IpAddr, usize)>,
    /// The line being read, as written (tokens carry byte spans into it).
    pub raw: &'d str,
}

type Handler = fn(&mut Reader<'_>, usize, &[Token]);

/// What to do with a command.
enum Action {
    Read(Handler),
    /// Recognised, but not read: the message says why and what to do.
    NotYet(&'static str),
}

struct Command {
    words: &'static [&'static str],
    action: Action,
}

/// Every command the reader knows, longest word sequence first within a verb.
const COMMANDS: &[Command] = &[
    cmd(&["add", "gslb", "site"], Action::Read(gslb::add_site)),
    cmd(&["set", "gslb", "site"], Action::Read(gslb::set_site)),
    cmd(&["unset", "gslb", "site"], Action::Read(gslb::unset_site)),
    cmd(&["add", "gslb", "service"], Action::Read(gslb::add_service)),
    cmd(&["set", "gslb", "service"], Action::Read(gslb::set_service)),
    cmd(
        &["bind", "gslb", "service"],
        Action::Read(monitor::bind_gslb_service),
    ),
    cmd(&["add", "gslb", "vserver"], Action::Read(gslb::add_vserver)),
    cmd(&["set", "gslb", "vserver"], Action::Read(gslb::set_vserver)),
    cmd(
        &["bind", "gslb", "vserver"],
        Action::Read(gslb::bind_vserver),
    ),
    cmd(
        &["enable", "gslb", "service"],
        Action::Read(gslb::enable_service),
    ),
    cmd(
        &["disable", "gslb", "service"],
        Action::Read(gslb::disable_service),
    ),
    cmd(
        &["enable", "gslb", "vserver"],
        Action::Read(gslb::enable_vserver),
    ),
    cmd(
        &["disable", "gslb", "vserver"],
        Action::Read(gslb::disable_vserver),
    ),
    cmd(
        &["disable", "gslb", "site"],
        Action::NotYet(
            "a site is not disabled in the configuration (the appliance has no such command); disable it at run time with `sextant cli disable gslb site NAME`, which is kept across restarts (docs/operations.md)",
        ),
    ),
    cmd(
        &["enable", "gslb", "site"],
        Action::NotYet(
            "a site is not enabled or disabled in the configuration (the appliance has no such command); at run time, `sextant cli enable gslb site NAME` (docs/operations.md)",
        ),
    ),
    cmd(&["add", "gslb", "dcRecord"], Action::Read(dc::add_record)),
    cmd(&["set", "gslb", "dcRecord"], Action::Read(dc::set_record)),
    cmd(&["bind", "gslb", "dcRecord"], Action::Read(dc::bind_record)),
    cmd(
        &["set", "gslb", "parameter"],
        Action::Read(system::set_parameter),
    ),
    cmd(
        &["set", "dns", "parameter"],
        Action::Read(dns_server::set_parameter),
    ),
    cmd(
        &["add", "lb", "monitor"],
        Action::Read(monitor::add_monitor),
    ),
    cmd(
        &["set", "lb", "monitor"],
        Action::Read(monitor::set_monitor),
    ),
    cmd(
        &["bind", "lb", "monitor"],
        Action::Read(monitor::bind_lb_monitor),
    ),
    cmd(&["add", "service"], Action::Read(dns::add_service)),
    cmd(&["add", "server"], Action::Read(server::add_server)),
    cmd(&["add", "dns", "soaRec"], Action::Read(dns::add_soa)),
    cmd(&["add", "dns", "nsRec"], Action::Read(dns::add_ns)),
    cmd(
        &["set", "ns", "rpcNode"],
        Action::Read(system::set_rpc_node),
    ),
    cmd(
        &["add", "ns", "rpcNode"],
        Action::Read(system::add_rpc_node),
    ),
    cmd(
        &["enable", "ns", "feature"],
        Action::Read(system::enable_feature),
    ),
    cmd(&["enable", "ns", "mode"], Action::Read(system::enable_mode)),
    cmd(&["add", "location"], Action::Read(location::add_location)),
    cmd(
        &["add", "locationFile"],
        Action::Read(location::add_location_file),
    ),
    cmd(
        &["add", "locationFile6"],
        Action::Read(location::add_location_file6),
    ),
    cmd(&["add", "dns", "action"], Action::Read(policy::add_action)),
    cmd(&["add", "dns", "policy"], Action::Read(policy::add_policy)),
    cmd(
        &["bind", "dns", "global"],
        Action::Read(policy::bind_global),
    ),
    cmd(&["add", "vrid"], Action::Read(vrrp::add_vrid)),
    cmd(&["set", "vrid"], Action::Read(vrrp::set_vrid)),
    cmd(&["bind", "vrid"], Action::Read(vrrp::bind_vrid)),
    cmd(&["set", "vridParam"], Action::Read(vrrp::set_param)),
    cmd(&["add", "ns", "ip"], Action::Read(vrrp::add_ns_ip)),
    cmd(&["add", "ns", "ip6"], Action::Read(vrrp::add_ns_ip6)),
    cmd(&["add", "dns", "addRec"], Action::Read(records::add_a)),
    cmd(&["add", "dns", "aaaaRec"], Action::Read(records::add_aaaa)),
    cmd(
        &["add", "dns", "cnameRec"],
        Action::Read(records::add_cname),
    ),
    cmd(&["add", "dns", "mxRec"], Action::Read(records::add_mx)),
    cmd(&["add", "dns", "txtRec"], Action::Read(records::add_txt)),
    cmd(&["add", "dns", "srvRec"], Action::Read(records::add_srv)),
    cmd(&["add", "dns", "dsRec"], Action::Read(records::add_ds)),
    cmd(&["add", "dns", "zone"], Action::Read(records::add_zone)),
    cmd(&["add", "dns", "key"], Action::Read(dnssec::add_key)),
    cmd(&["sign", "dns", "zone"], Action::Read(dnssec::sign)),
    cmd(
        &["create", "dns", "key"],
        Action::NotYet(
            "the appliance makes key files with this command; Sextant's is `sextant dnssec keygen ZONE` (docs/dnssec.md), then add dns key NAME FILE.key FILE.private",
        ),
    ),
];

const fn cmd(words: &'static [&'static str], action: Action) -> Command {
    Command { words, action }
}

/// The supported command nearest to `words` by edit distance, when it is
/// near enough to be a misspelling of it.
fn nearest_command(words: &str) -> Option<String> {
    let typed = words.to_ascii_lowercase();
    COMMANDS
        .iter()
        .filter(|c| matches!(c.action, Action::Read(_)))
        .map(|c| c.words.join(" "))
        .map(|c| {
            (
                crate::scalar::edit_distance(&typed, &c.to_ascii_lowercase()),
                c,
            )
        })
        .filter(|(d, c)| *d <= (c.len() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

impl Reader<'_> {
    fn command(&mut self, line: usize, tokens: &[Token]) {
        let found = COMMANDS.iter().find(|c| {
            tokens.len() >= c.words.len()
                && c.words
                    .iter()
                    .zip(tokens)
                    .all(|(w, t)| !t.quoted && w.eq_ignore_ascii_case(&t.text))
        });
        match found {
            Some(Command {
                words,
                action: Action::Read(handler),
            }) => handler(self, line, &tokens[words.len()..]),
            Some(Command {
                words,
                action: Action::NotYet(why),
            }) => self.diag.error(line, format!("{}: {why}", words.join(" "))),
            None => self.unknown_command(line, tokens),
        }
    }

    /// Says what is wrong with a line that matches no command: a line that
    /// continues another, a command of the appliance outside Sextant's scope
    /// (use `sextant import`), or a misspelling (the nearest command).
    fn unknown_command(&mut self, line: usize, tokens: &[Token]) {
        if let Some(first) = tokens
            .first()
            .filter(|t| t.is_option() || t.is_dash_lookalike())
        {
            self.diag.error(
                line,
                format!(
                    "this line starts with the option \"{}\", not a command: each command is one whole line that starts with its verb (add, set, bind, ...); if it continues the line before, join the two lines",
                    first.text
                ),
            );
            return;
        }
        let words = crate::scope::command_words(tokens);
        if let Some(area) = crate::scope::area_of_line(tokens) {
            let what = match area {
                crate::scope::Area::Other => {
                    "is not a GSLB or DNS command Sextant knows".to_string()
                }
                area => format!("configures {}, outside Sextant's scope", area.describe()),
            };
            self.diag.error(
                line,
                format!(
                    "unknown command \"{words}\": it {what} (Sextant reads only GSLB and DNS commands); if this file was saved by an appliance, run `sextant import FILE -o OUT.conf`: it leaves such lines out, lists them, and writes the GSLB and DNS part"
                ),
            );
            return;
        }
        // Another verb on an object Sextant reads: a file is the whole
        // configuration, so nothing is removed or undone by a later line.
        let typed: Vec<&str> = words.split(' ').collect();
        let known_object = COMMANDS.iter().any(|c| {
            matches!(c.action, Action::Read(_))
                && c.words.len() == typed.len()
                && c.words[1..]
                    .iter()
                    .zip(&typed[1..])
                    .all(|(w, t)| w.eq_ignore_ascii_case(t))
        });
        if known_object && typed.len() > 1 {
            self.diag.error(
                line,
                format!(
                    "\"{words}\" is not supported: a Sextant configuration file is the whole configuration, read at start and on reload, so nothing is removed or undone by a later line; leave out the lines that add or bind what this one takes away"
                ),
            );
            return;
        }
        let hint = match nearest_command(&words) {
            Some(near) => format!("did you mean \"{near}\"?"),
            None => "docs/config.md lists the commands Sextant reads".to_string(),
        };
        self.diag
            .error(line, format!("unknown command \"{words}\"; {hint}"));
    }

    /// Parses the options of a command (see [`args::parse`]).
    pub(crate) fn args<'t>(
        &mut self,
        line: usize,
        ctx: &str,
        tokens: &'t [Token<'t>],
        specs: &[OptSpec],
    ) -> args::Args<'t> {
        args::parse(tokens, specs, ctx, line, self.diag)
    }

    /// Checks the positional arguments against `usage` (their names, e.g.
    /// `["NAME", "IP"]`) and returns them when the count is right.
    pub(crate) fn positional<'a, const N: usize>(
        &mut self,
        line: usize,
        ctx: &str,
        args: &'a args::Args<'_>,
        usage: &[&str; N],
    ) -> Option<[&'a str; N]> {
        let given = args.positional;
        if given.len() < N {
            self.diag.error(
                line,
                format!(
                    "{ctx}: missing {}; expected {}",
                    usage[given.len()..].join(" "),
                    usage.join(" ")
                ),
            );
            return None;
        }
        if given.len() > N {
            self.diag.error(
                line,
                format!(
                    "{ctx}: unexpected argument \"{}\"; expected {} and then options",
                    given[N].text,
                    usage.join(" ")
                ),
            );
        }
        Some(std::array::from_fn(|i| &*given[i].text))
    }

    /// Converts an option's value with `f`, reporting `ctx: -opt: error`.
    pub(crate) fn value<T>(
        &mut self,
        line: usize,
        ctx: &str,
        o: &args::Opt<'_>,
        f: impl FnOnce(&str) -> Result<T, String>,
    ) -> Option<T> {
        match f(o.value()) {
            Ok(v) => Some(v),
            Err(e) => {
                self.diag.error(line, format!("{ctx}: -{}: {e}", o.name));
                None
            }
        }
    }

    /// An option's duration value, in `default` units unless a unit word follows.
    pub(crate) fn duration(
        &mut self,
        line: usize,
        ctx: &str,
        o: &args::Opt<'_>,
        default: crate::duration::Unit,
    ) -> Option<std::time::Duration> {
        match o.duration(default) {
            Ok(d) => Some(d),
            Err(e) => {
                self.diag.error(line, format!("{ctx}: -{}: {e}", o.name));
                None
            }
        }
    }

    /// Warns about a use of `key` of `scope` on `line` if that setting is
    /// accepted but has no effect ([`crate::no_effect`]); nothing otherwise.
    pub(crate) fn no_effect(&mut self, line: usize, scope: crate::no_effect::Scope, key: &str) {
        crate::no_effect::warn(self.diag, line, scope, key, crate::draft::Syntax::Appliance);
    }

    /// Reports `ctx: message` on `line`.
    pub(crate) fn error(&mut self, line: usize, ctx: &str, message: impl AsRef<str>) {
        self.diag
            .error(line, format!("{ctx}: {}", message.as_ref()));
    }
}

/// `verb object NAME` for messages, or just `verb object` without a name;
/// the references a line makes share it.
pub(crate) fn context(command: &str, tokens: &[Token]) -> std::sync::Arc<str> {
    let Some(name) = tokens.first().filter(|t| !t.is_option()) else {
        return command.into();
    };
    // Joined on the stack, so that the one allocation is the shared one
    // (this runs for every line of a file).
    let mut buf = [0u8; 192];
    let (c, n) = (command.len(), name.text.len());
    match buf.get_mut(..c + 1 + n) {
        Some(joined) => {
            joined[..c].copy_from_slice(command.as_bytes());
            joined[c] = b' ';
            joined[c + 1..].copy_from_slice(name.text.as_bytes());
            std::str::from_utf8(joined).unwrap_or(command).into()
        }
        None => format!("{command} {}", name.text).into(),
    }
}

#[cfg(test)]
mod tests {
    use super::COMMANDS;

    /// Every command the reader accepts must also be one the config-sync
    /// splitter can place, or a file using it stops automatic sync (as
    /// `sign dns zone` once did); walking the whole table keeps a new
    /// command from repeating that.
    #[test]
    fn the_sync_splitter_knows_every_command_the_reader_accepts() {
        let path = std::path::Path::new("node.conf");
        for command in COMMANDS {
            let line = format!("{} NAME\n", command.words.join(" "));
            let split = crate::sync_text::split(path, &line);
            assert!(
                split.is_ok(),
                "the reader accepts `{}` but the sync splitter refuses it: {:?}",
                command.words.join(" "),
                split.err()
            );
        }
    }
}
