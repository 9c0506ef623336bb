//! One appliance configuration command applied to a configuration text
//! (`sextant cli`'s `add`, `set`, `unset`, `rm`, `bind` and `unbind`, over
//! `POST /v1/config/commands`). Pure: text in, text out; the caller
//! validates the result with the same reader as the file (so a duplicate,
//! an undefined reference or a bad value is refused with the reader's
//! reason) and applies it as any new configuration.
//!
//! What each verb does to the text, chosen so that the result looks like a
//! configuration saved by the appliance (one `add` line per object, with
//! its options):
//!
//! * `add` and `bind` append the command as a line.
//! * `set KIND NAME -opt value ...` writes the options into the object's
//!   `add` line (replacing a value given there, else appending it) and
//!   drops them from any `set KIND NAME` line of the file, where a later
//!   line would override them.
//! * `unset KIND NAME -opt ...` removes the options from the `add` line and
//!   the `set` lines: the option is back to its default.
//! * `rm KIND NAME` removes the object's `add`, `set`, `unset` and `bind`
//!   lines; `rm gslb service` also the `bind gslb vserver ... -serviceName
//!   NAME` lines that name it (as the appliance unbinds a removed service).
//!   Other references (a monitor bound to a service, a service's site, a
//!   policy's action) are not removed: the reader then refuses the result
//!   ("... is not defined"), so a bound monitor cannot be removed until it
//!   is unbound. DNS records are named by their leading values: `rm dns
//!   addRec www.example.com` removes every A record of the name, `rm dns
//!   addRec www.example.com 192.0.2.1` that one.
//! * `unbind KIND NAME -opt value ...` removes the `bind KIND NAME` lines
//!   that carry every option (and value) given.
//!
//! Words are split with the configuration file's own lexer, and written
//! back quoted as the file needs them ([`quote`]).

use crate::lexer;

/// The verbs this module applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditVerb {
    Add,
    Set,
    Unset,
    Rm,
    Bind,
    Unbind,
}

impl EditVerb {
    /// Every verb, in the order help lists them.
    pub const ALL: [EditVerb; 6] = [
        EditVerb::Add,
        EditVerb::Set,
        EditVerb::Unset,
        EditVerb::Rm,
        EditVerb::Bind,
        EditVerb::Unbind,
    ];

    pub fn word(self) -> &'static str {
        match self {
            EditVerb::Add => "add",
            EditVerb::Set => "set",
            EditVerb::Unset => "unset",
            EditVerb::Rm => "rm",
            EditVerb::Bind => "bind",
            EditVerb::Unbind => "unbind",
        }
    }

    fn of(word: &str) -> Option<EditVerb> {
        EditVerb::ALL
            .into_iter()
            .find(|v| v.word().eq_ignore_ascii_case(word))
    }
}

/// How an object of a kind is named in its lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Identity {
    /// By its first value (`add gslb service NAME ...`).
    Name,
    /// By its leading values (`add dns addRec NAME IP`): an `rm` names as
    /// many of them as it wants to match.
    Values,
}

/// One kind of object the configuration verbs edit.
#[derive(Debug)]
pub struct Kind {
    /// The words after the verb, as the file spells them.
    pub words: &'static [&'static str],
    /// The verbs it takes.
    pub verbs: &'static [EditVerb],
    identity: Identity,
}

use EditVerb::{Add, Bind, Rm, Set, Unbind, Unset};

const OBJECT: &[EditVerb] = &[Add, Set, Unset, Rm];
const BOUND_OBJECT: &[EditVerb] = &[Add, Set, Unset, Rm, Bind, Unbind];
const RECORD: &[EditVerb] = &[Add, Rm];

/// Every kind the configuration verbs edit.
pub const KINDS: &[Kind] = &[
    Kind {
        words: &["gslb", "site"],
        verbs: OBJECT,
        identity: Identity::Name,
    },
    Kind {
        words: &["gslb", "service"],
        verbs: BOUND_OBJECT,
        identity: Identity::Name,
    },
    Kind {
        words: &["gslb", "vserver"],
        verbs: BOUND_OBJECT,
        identity: Identity::Name,
    },
    Kind {
        words: &["lb", "monitor"],
        verbs: BOUND_OBJECT,
        identity: Identity::Name,
    },
    Kind {
        words: &["dns", "addRec"],
        verbs: RECORD,
        identity: Identity::Values,
    },
    Kind {
        words: &["dns", "aaaaRec"],
        verbs: RECORD,
        identity: Identity::Values,
    },
    Kind {
        words: &["dns", "cnameRec"],
        verbs: RECORD,
        identity: Identity::Values,
    },
    Kind {
        words: &["dns", "mxRec"],
        verbs: RECORD,
        identity: Identity::Values,
    },
    Kind {
        words: &["dns", "txtRec"],
        verbs: RECORD,
        identity: Identity::Values,
    },
    Kind {
        words: &["dns", "srvRec"],
        verbs: RECORD,
        identity: Identity::Values,
    },
    Kind {
        words: &["dns", "dsRec"],
        verbs: RECORD,
        identity: Identity::Values,
    },
    Kind {
        words: &["dns", "nsRec"],
        verbs: RECORD,
        identity: Identity::Values,
    },
    Kind {
        words: &["dns", "soaRec"],
        verbs: &[Add, Set, Unset, Rm],
        identity: Identity::Name,
    },
    Kind {
        words: &["dns", "zone"],
        verbs: OBJECT,
        identity: Identity::Name,
    },
    Kind {
        words: &["dns", "policy"],
        verbs: OBJECT,
        identity: Identity::Name,
    },
    Kind {
        words: &["dns", "action"],
        verbs: OBJECT,
        identity: Identity::Name,
    },
    Kind {
        words: &["dns", "global"],
        verbs: &[Bind, Unbind],
        identity: Identity::Name,
    },
];

/// One word of a command or line, and whether it was quoted (a quoted
/// word is a value even when it starts with `-`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    pub quoted: bool,
}

impl Word {
    fn is_option(&self) -> bool {
        let mut c = self.text.chars();
        !self.quoted && c.next() == Some('-') && c.next().is_some_and(char::is_alphabetic)
    }
}

/// Why a command was not applied. Each says it as the appliance's CLI
/// would after `ERROR: `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The line cannot be split into words (an unclosed quote).
    #[error("{0}")]
    Syntax(String),
    #[error("empty command")]
    Empty,
    /// Not one of the verbs and kinds above.
    #[error("not a configuration command Sextant edits: `{0}`")]
    Unknown(String),
    #[error("`{verb} {kind}` is not a command (the verbs of {kind} are: {verbs})")]
    VerbNotForKind {
        verb: &'static str,
        kind: String,
        verbs: String,
    },
    #[error("`{0}` needs a name")]
    NoName(String),
    #[error("`{command}` needs at least one option (-name value)")]
    NoOptions { command: String },
    #[error("`{command}`: {why}")]
    Usage { command: String, why: String },
    /// No object (or binding) the command names.
    #[error("No such resource [{kind} {name}]")]
    NoSuchResource { kind: String, name: String },
    #[error("No such binding [{0}]")]
    NoSuchBinding(String),
}

/// A command applied to a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edited {
    /// The new configuration text.
    pub text: String,
    /// The (1-based) line the command wrote or changed in `text`, if it
    /// wrote one: errors the reader finds there are the command's own.
    pub line: Option<usize>,
    /// The command as it is written in a file (keywords spelled out, words
    /// quoted as needed).
    pub command: String,
}

/// Splits a command line into words with the configuration file's quoting
/// rules (`"..."` with escapes, `'...'` literal, `#` starts a comment).
pub fn split(line: &str) -> Result<Vec<Word>, EditError> {
    lexer::tokenize(line)
        .map(|tokens| {
            tokens
                .into_iter()
                .map(|t| Word {
                    text: t.text.into_owned(),
                    quoted: t.quoted,
                })
                .collect()
        })
        .map_err(EditError::Syntax)
}

/// `word` as a configuration line writes it: as it is when the lexer reads
/// it back unchanged, else in double quotes with `\"`, `\\`, `\r`, `\n`
/// and `\t` escaped. `keep_value` quotes a word that would otherwise read
/// as an option (`-x` meant as a value).
pub fn quote(word: &str, keep_value: bool) -> String {
    let special =
        |b: u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b'"' | b'\'' | b'\\') || b < 0x20;
    let needs_quotes = word.is_empty()
        || word.starts_with('#')
        || word.bytes().any(special)
        || (keep_value && word.starts_with('-'));
    if !needs_quotes {
        return word.to_string();
    }
    let mut out = String::with_capacity(word.len() + 2);
    out.push('"');
    for c in word.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii_control() => out.push_str(&format!("\\{:03o}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Words joined into a line, each quoted as needed.
pub fn join(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| quote(&w.text, w.quoted))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A parsed configuration command.
#[derive(Debug)]
struct Cmd<'k> {
    verb: EditVerb,
    kind: &'k Kind,
    /// The values before the first option (the name first).
    values: Vec<Word>,
    /// The options, each with the values that follow it.
    options: Vec<(Word, Vec<Word>)>,
}

impl Cmd<'_> {
    fn kind_name(&self) -> String {
        self.kind.words.join(" ")
    }

    fn words(&self) -> Vec<Word> {
        let mut w: Vec<Word> = std::iter::once(self.verb.word())
            .chain(self.kind.words.iter().copied())
            .map(|t| Word {
                text: t.to_string(),
                quoted: false,
            })
            .collect();
        w.extend(self.values.iter().cloned());
        for (o, v) in &self.options {
            w.push(o.clone());
            w.extend(v.iter().cloned());
        }
        w
    }
}

/// The values before the first option, and the options with their values.
fn group(words: &[Word]) -> (Vec<Word>, Vec<(Word, Vec<Word>)>) {
    let mut values = Vec::new();
    let mut options: Vec<(Word, Vec<Word>)> = Vec::new();
    for w in words {
        if w.is_option() {
            options.push((w.clone(), Vec::new()));
        } else if let Some((_, v)) = options.last_mut() {
            v.push(w.clone());
        } else {
            values.push(w.clone());
        }
    }
    (values, options)
}

/// The kind whose words start `words` (case-insensitively), and how many
/// words it took.
fn kind_of(words: &[Word]) -> Option<&'static Kind> {
    KINDS.iter().find(|k| {
        k.words.len() <= words.len()
            && k.words
                .iter()
                .zip(words)
                .all(|(a, b)| !b.quoted && a.eq_ignore_ascii_case(&b.text))
    })
}

/// Parses a command; `None` when it is not one of this module's.
fn parse(words: &[Word]) -> Result<Cmd<'static>, EditError> {
    let Some(first) = words.first() else {
        return Err(EditError::Empty);
    };
    let typed = || join(words);
    let verb = EditVerb::of(&first.text).ok_or_else(|| EditError::Unknown(typed()))?;
    let kind = kind_of(&words[1..]).ok_or_else(|| EditError::Unknown(typed()))?;
    if !kind.verbs.contains(&verb) {
        return Err(EditError::VerbNotForKind {
            verb: verb.word(),
            kind: kind.words.join(" "),
            verbs: kind
                .verbs
                .iter()
                .map(|v| v.word())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let (values, options) = group(&words[1 + kind.words.len()..]);
    let cmd = Cmd {
        verb,
        kind,
        values,
        options,
    };
    let command = format!("{} {}", verb.word(), cmd.kind_name());
    if cmd.values.is_empty() {
        return Err(EditError::NoName(command));
    }
    match verb {
        Set if cmd.options.is_empty() => return Err(EditError::NoOptions { command }),
        Set if cmd.values.len() > 1 => {
            return Err(EditError::Usage {
                command,
                why: format!(
                    "only the name comes before the options (`{}` is not an option)",
                    cmd.values[1].text
                ),
            });
        }
        Unset if cmd.options.is_empty() => return Err(EditError::NoOptions { command }),
        Unset => {
            if let Some((o, _)) = cmd.options.iter().find(|(_, v)| !v.is_empty()) {
                return Err(EditError::Usage {
                    command,
                    why: format!("{} takes no value here: unset names options only", o.text),
                });
            }
        }
        Unbind
            if cmd.options.is_empty()
                && cmd.values.len() < 2
                && cmd.kind.words != ["dns", "global"] =>
        {
            return Err(EditError::NoOptions { command });
        }
        _ => {}
    }
    Ok(cmd)
}

/// Whether two names are the same: the reader's names are
/// case-insensitive, and a DNS name may end with a dot.
fn same(a: &str, b: &str) -> bool {
    a.trim_end_matches('.')
        .eq_ignore_ascii_case(b.trim_end_matches('.'))
}

/// One line of the text, split when it is a command.
struct Line<'t> {
    raw: &'t str,
    /// Replaced by the edit (`None`: removed), else kept as `raw`.
    new: Option<Option<String>>,
    words: Option<Vec<Word>>,
}

impl Line<'_> {
    /// The line is `verb KIND ...` (any spelling of the keywords), and its
    /// words after them.
    fn of(&self, verb: EditVerb, kind: &Kind) -> Option<&[Word]> {
        let w = self.words.as_deref()?;
        let first = w.first()?;
        if first.quoted || EditVerb::of(&first.text) != Some(verb) {
            return None;
        }
        let k = kind_of(&w[1..])?;
        if !std::ptr::eq(k, kind) {
            return None;
        }
        Some(&w[1 + kind.words.len()..])
    }

    /// The words after `enable KIND` / `disable KIND` (the administrative
    /// state a saved file gives an object: `disable gslb vserver NAME`).
    fn state_of(&self, kind: &Kind) -> Option<&[Word]> {
        let w = self.words.as_deref()?;
        let first = w.first()?;
        if first.quoted
            || !["enable", "disable"]
                .iter()
                .any(|v| v.eq_ignore_ascii_case(&first.text))
        {
            return None;
        }
        let k = kind_of(&w[1..])?;
        if !std::ptr::eq(k, kind) {
            return None;
        }
        Some(&w[1 + kind.words.len()..])
    }
}

/// Applies one configuration command (its text, as typed) to `text`.
pub fn apply(text: &str, command: &str) -> Result<Edited, EditError> {
    let words = split(command)?;
    let cmd = parse(&words)?;
    let canonical = join(&cmd.words());
    let mut lines: Vec<Line> = text
        .lines()
        .map(|raw| Line {
            raw,
            new: None,
            words: split(raw).ok(),
        })
        .collect();
    let name = cmd.values[0].text.clone();
    let no_such = || EditError::NoSuchResource {
        kind: cmd.kind_name(),
        name: name.clone(),
    };
    let mut appended = None;
    let mut changed_line = None;
    match cmd.verb {
        Add | Bind => appended = Some(canonical.clone()),
        Set | Unset => {
            let at = lines
                .iter()
                .position(|l| {
                    l.of(Add, cmd.kind)
                        .and_then(|rest| rest.first())
                        .is_some_and(|n| same(&n.text, &name))
                })
                .ok_or_else(no_such)?;
            let touched = |o: &Word| cmd.options.iter().any(|(c, _)| same(&c.text, &o.text));
            for l in lines.iter_mut() {
                for verb in [Set, Unset] {
                    let Some(rest) = l.of(verb, cmd.kind) else {
                        continue;
                    };
                    if !rest.first().is_some_and(|n| same(&n.text, &name)) {
                        continue;
                    }
                    let (values, options) = group(rest);
                    let kept: Vec<_> = options.iter().filter(|(o, _)| !touched(o)).collect();
                    if kept.len() == options.len() {
                        continue;
                    }
                    l.new = Some((!kept.is_empty()).then(|| {
                        let mut w = l.words.as_deref().unwrap_or_default()
                            [..1 + cmd.kind.words.len()]
                            .to_vec();
                        w.extend(values.iter().cloned());
                        for (o, v) in kept {
                            w.push(o.clone());
                            w.extend(v.iter().cloned());
                        }
                        join(&w)
                    }));
                }
            }
            let line = &mut lines[at];
            let all = line.words.clone().unwrap_or_default();
            let head = &all[..1 + cmd.kind.words.len()];
            let (values, mut options) = group(&all[head.len()..]);
            if cmd.verb == Set {
                for (o, v) in &cmd.options {
                    match options
                        .iter_mut()
                        .find(|(have, _)| same(&have.text, &o.text))
                    {
                        Some(slot) => slot.1 = v.clone(),
                        None => options.push((o.clone(), v.clone())),
                    }
                }
            } else {
                options.retain(|(o, _)| !touched(o));
            }
            let mut w = head.to_vec();
            w.extend(values);
            for (o, v) in options {
                w.push(o);
                w.extend(v);
            }
            line.new = Some(Some(join(&w)));
            changed_line = Some(at);
        }
        Rm => {
            let mut removed = 0;
            let values = &cmd.values;
            let service = cmd.kind.words == ["gslb", "service"];
            let vservers = KINDS.iter().find(|k| k.words == ["gslb", "vserver"]);
            for l in lines.iter_mut() {
                let own = [Add, Set, Unset, Bind].into_iter().any(|verb| {
                    let Some(rest) = l.of(verb, cmd.kind) else {
                        return false;
                    };
                    match (cmd.kind.identity, verb) {
                        (Identity::Values, Add) => {
                            values.len() <= rest.len()
                                && values.iter().zip(rest).all(|(a, b)| same(&a.text, &b.text))
                        }
                        _ => rest.first().is_some_and(|n| same(&n.text, &name)),
                    }
                });
                // `disable gslb vserver NAME`: the object's state goes
                // with it, as on the appliance.
                let state = cmd.kind.identity == Identity::Name
                    && l.state_of(cmd.kind)
                        .and_then(|rest| rest.first())
                        .is_some_and(|n| same(&n.text, &name));
                let binding = service
                    && vservers.and_then(|v| l.of(Bind, v)).is_some_and(|rest| {
                        group(rest).1.iter().any(|(o, v)| {
                            same(&o.text, "-serviceName")
                                && v.first().is_some_and(|s| same(&s.text, &name))
                        })
                    });
                if own || state || binding {
                    l.new = Some(None);
                    removed += 1;
                }
            }
            if removed == 0 {
                return Err(EditError::NoSuchResource {
                    kind: cmd.kind_name(),
                    name: join(values),
                });
            }
        }
        Unbind => {
            let mut removed = 0;
            for l in lines.iter_mut() {
                let Some(rest) = l.of(Bind, cmd.kind) else {
                    continue;
                };
                let (values, options) = group(rest);
                let values_match = cmd.values.len() <= values.len()
                    && cmd
                        .values
                        .iter()
                        .zip(&values)
                        .all(|(a, b)| same(&a.text, &b.text));
                let options_match = cmd.options.iter().all(|(o, v)| {
                    options.iter().any(|(have, hv)| {
                        same(&have.text, &o.text)
                            && v.len() <= hv.len()
                            && v.iter().zip(hv).all(|(a, b)| same(&a.text, &b.text))
                    })
                });
                if values_match && options_match {
                    l.new = Some(None);
                    removed += 1;
                }
            }
            if removed == 0 {
                let mut what = cmd.words();
                what.drain(..1 + cmd.kind.words.len());
                return Err(EditError::NoSuchBinding(format!(
                    "{} {}",
                    cmd.kind_name(),
                    join(&what)
                )));
            }
        }
    }
    // The new text: kept lines as written, changed ones rewritten.
    let mut out = String::with_capacity(text.len() + canonical.len() + 2);
    let mut line_no = 0;
    let mut wrote = None;
    for (i, l) in lines.iter().enumerate() {
        let written = match &l.new {
            None => Some(l.raw),
            Some(Some(s)) => Some(s.as_str()),
            Some(None) => None,
        };
        if let Some(s) = written {
            out.push_str(s);
            out.push('\n');
            line_no += 1;
            if changed_line == Some(i) {
                wrote = Some(line_no);
            }
        }
    }
    if let Some(a) = appended {
        out.push_str(&a);
        out.push('\n');
        wrote = Some(line_no + 1);
    }
    Ok(Edited {
        text: out,
        line: wrote,
        command: canonical,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const BASE: &str = "\
add gslb site fra 10.0.0.1 -siteType LOCAL
add gslb service web1 10.0.1.1 HTTP 80 -siteName fra
add gslb service web2 10.0.1.2 HTTP 80 -siteName fra
add lb monitor mon1 HTTP -respCode 200
add gslb vserver vs1 HTTP -lbMethod ROUNDROBIN
bind gslb vserver vs1 -serviceName web1
bind gslb vserver vs1 -serviceName web2 -weight 3
bind gslb vserver vs1 -domainName www.example.com -TTL 5
bind gslb service web1 -monitorName mon1
";

    fn valid(text: &str) -> sextant_core::Model {
        crate::parse_as(Path::new("t.conf"), text).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    fn edit(text: &str, cmd: &str) -> String {
        apply(text, cmd)
            .unwrap_or_else(|e| panic!("{cmd}: {e}"))
            .text
    }

    #[test]
    fn add_and_bind_append_the_command_as_the_file_writes_it() {
        valid(BASE);
        let e = apply(
            BASE,
            r#"ADD GSLB Service web3 10.0.1.3 HTTP 80 -siteName fra -comment "a b""#,
        )
        .unwrap();
        assert_eq!(
            e.command,
            r#"add gslb service web3 10.0.1.3 HTTP 80 -siteName fra -comment "a b""#
        );
        assert!(e.text.ends_with(&format!("{}\n", e.command)));
        assert_eq!(e.line, Some(BASE.lines().count() + 1));
        let t = edit(&e.text, "bind gslb vserver vs1 -serviceName web3");
        let m = valid(&t);
        assert_eq!(m.services.len(), 3);
        // A second `add` of a name is appended too; the reader refuses it.
        let twice = edit(&t, "add gslb service WEB3 10.0.1.4 HTTP 80 -siteName fra");
        let errors = crate::parse_as(Path::new("t.conf"), &twice).unwrap_err();
        assert!(errors.to_string().contains("already defined"), "{errors}");
        assert_eq!(m.vservers.iter().next().map(|v| v.bindings.len()), Some(3));
    }

    #[test]
    fn set_writes_into_the_add_line_and_unset_takes_the_option_out() {
        let t = edit(
            BASE,
            "set gslb vserver vs1 -lbMethod LEASTCONNECTION -tolerance 2",
        );
        assert!(
            t.contains("add gslb vserver vs1 HTTP -lbMethod LEASTCONNECTION -tolerance 2\n"),
            "{t}"
        );
        assert_eq!(t.lines().count(), BASE.lines().count());
        valid(&t);
        let e = apply(&t, "unset gslb vserver vs1 -lbMethod").unwrap();
        assert!(
            e.text.contains("add gslb vserver vs1 HTTP -tolerance 2\n"),
            "{}",
            e.text
        );
        assert_eq!(e.line, Some(5));
        // A `set` line of the file would override the add line: the option
        // set now leaves it.
        let with_set = format!("{BASE}set gslb vserver vs1 -lbMethod RTT -tolerance 1\n");
        let t = edit(&with_set, "set gslb vserver vs1 -lbMethod STATICPROXIMITY");
        assert!(t.ends_with("set gslb vserver vs1 -tolerance 1\n"), "{t}");
        let t = edit(&t, "unset gslb vserver vs1 -tolerance");
        assert!(!t.contains("set gslb vserver vs1 -tolerance"), "{t}");
    }

    #[test]
    fn rm_service_removes_its_bindings_and_rm_of_a_bound_monitor_is_refused_by_the_reader() {
        let t = edit(BASE, "rm gslb service web1");
        assert!(!t.contains("web1"), "{t}");
        let m = valid(&t);
        assert_eq!(m.services.len(), 1);
        // The monitor is bound to web1: its removal leaves a reference the
        // reader refuses.
        let t = edit(BASE, "rm lb monitor mon1");
        let errors = crate::parse_as(Path::new("t.conf"), &t).unwrap_err();
        assert!(errors.to_string().contains("mon1"), "{errors}");
        // Unbound first, it goes.
        let t = edit(BASE, "unbind gslb service web1 -monitorName mon1");
        valid(&edit(&t, "rm lb monitor mon1"));
        // The vserver's own lines (its domains) go with it.
        let t = edit(BASE, "rm gslb vserver vs1");
        assert!(!t.contains("vs1"), "{t}");
        valid(&t);
        // So does the state a saved file gives it: `disable gslb vserver`
        // (and a service's) would name nothing.
        let disabled = format!("{BASE}disable gslb vserver VS1\ndisable gslb service web1\n");
        valid(&disabled);
        let t = edit(&disabled, "rm gslb vserver vs1");
        assert!(!t.contains("vs1") && !t.contains("VS1"), "{t}");
        assert!(t.contains("disable gslb service web1\n"), "{t}");
        let t = edit(&t, "rm gslb service web1");
        assert!(!t.contains("web1"), "{t}");
        valid(&t);
    }

    #[test]
    fn unbind_removes_the_matching_binding_only() {
        let t = edit(BASE, "unbind gslb vserver vs1 -serviceName web2");
        assert!(!t.contains("-serviceName web2"), "{t}");
        assert!(t.contains("-serviceName web1"), "{t}");
        let t = edit(&t, "unbind gslb vserver vs1 -domainName WWW.example.com.");
        assert!(!t.contains("www.example.com"), "{t}");
        assert_eq!(
            apply(BASE, "unbind gslb vserver vs1 -serviceName web9"),
            Err(EditError::NoSuchBinding(
                "gslb vserver vs1 -serviceName web9".into()
            ))
        );
    }

    #[test]
    fn records_are_named_by_their_values() {
        let base = "add dns addRec a.example.com 192.0.2.1\nadd dns addRec a.example.com 192.0.2.2\nadd dns aaaaRec a.example.com 2001:db8::1\n";
        let t = edit(base, "rm dns addRec a.example.com 192.0.2.2");
        assert_eq!(
            t,
            "add dns addRec a.example.com 192.0.2.1\nadd dns aaaaRec a.example.com 2001:db8::1\n"
        );
        let t = edit(base, "rm dns addRec A.example.com");
        assert_eq!(t, "add dns aaaaRec a.example.com 2001:db8::1\n");
        assert_eq!(
            apply(base, "rm dns cnameRec a.example.com"),
            Err(EditError::NoSuchResource {
                kind: "dns cnameRec".into(),
                name: "a.example.com".into()
            })
        );
    }

    #[test]
    fn dns_policies_bind_and_unbind_globally() {
        let t = edit("", r#"add dns action drop1 DROP"#);
        let t = edit(
            &t,
            r#"add dns policy p1 "CLIENT.IP.SRC.IN_SUBNET(10.9.0.0/16)" drop1"#,
        );
        let t = edit(&t, "bind dns global p1 100 -gotoPriorityExpression END");
        let e = apply(&t, "unbind dns global p1").unwrap();
        assert!(!e.text.contains("bind dns global"), "{}", e.text);
        assert_eq!(e.line, None);
    }

    #[test]
    fn mistakes_are_typed_errors() {
        assert_eq!(
            apply(BASE, "set gslb vserver nope -lbMethod RTT"),
            Err(EditError::NoSuchResource {
                kind: "gslb vserver".into(),
                name: "nope".into()
            })
        );
        assert!(matches!(
            apply(BASE, "set gslb vserver vs1"),
            Err(EditError::NoOptions { .. })
        ));
        assert!(matches!(
            apply(BASE, "unset gslb vserver vs1 -lbMethod RTT"),
            Err(EditError::Usage { .. })
        ));
        assert!(matches!(apply(BASE, "rm gslb"), Err(EditError::Unknown(_))));
        assert!(matches!(
            apply(BASE, "show gslb vserver"),
            Err(EditError::Unknown(_))
        ));
        assert!(matches!(
            apply(BASE, "bind gslb site fra"),
            Err(EditError::VerbNotForKind { .. })
        ));
        assert!(matches!(
            apply(BASE, "add gslb service"),
            Err(EditError::NoName(_))
        ));
        assert!(matches!(
            apply(BASE, r#"add gslb service "x"#),
            Err(EditError::Syntax(_))
        ));
        assert_eq!(apply(BASE, "   "), Err(EditError::Empty));
    }

    /// A command is one line whatever its values hold: a newline in a
    /// value is written escaped, never as a second command.
    #[test]
    fn a_command_cannot_write_two_lines() {
        let e = apply(BASE, "add gslb service x 10.0.1.9 HTTP 80 -siteName fra -comment \"a\nadd gslb site evil 10.9.9.9\"").unwrap();
        assert_eq!(e.text.lines().count(), BASE.lines().count() + 1);
        assert!(
            e.command
                .ends_with(r#"-comment "a\nadd gslb site evil 10.9.9.9""#),
            "{}",
            e.command
        );
        let e = apply(
            BASE,
            "add gslb service y 10.0.1.8 HTTP 80 -siteName fra\nadd gslb site evil 10.9.9.9",
        )
        .unwrap();
        assert_eq!(
            e.text.lines().count(),
            BASE.lines().count() + 1,
            "{}",
            e.text
        );
    }

    #[test]
    fn lines_the_command_does_not_touch_stay_as_written() {
        let base = format!(
            "# my comment\n{BASE}add   gslb  service  odd 10.0.1.9 HTTP 80 -siteName fra   \n"
        );
        let t = edit(&base, "set gslb service web1 -maxClients 5");
        assert!(t.starts_with("# my comment\n"));
        assert!(t.contains("add   gslb  service  odd 10.0.1.9 HTTP 80 -siteName fra   \n"));
        assert!(t.contains("add gslb service web1 10.0.1.1 HTTP 80 -siteName fra -maxClients 5\n"));
    }

    mod props {
        use super::super::*;
        use super::BASE;
        use proptest::prelude::*;

        proptest! {
            /// Every word survives quote + split unchanged.
            #[test]
            fn quoting_round_trips(words in proptest::collection::vec("[ -~\t\r\n]{0,12}", 1..6)) {
                let ws: Vec<Word> = words.iter().map(|t| Word { text: t.clone(), quoted: true }).collect();
                let line = join(&ws);
                let back = split(&line).unwrap();
                prop_assert_eq!(back.iter().map(|w| w.text.clone()).collect::<Vec<_>>(), words);
            }

            /// add then rm of a service gives the text back; bind then
            /// unbind too.
            #[test]
            fn add_then_rm_is_identity(name in "[a-z][a-z0-9_]{0,10}", last in 2u8..250) {
                prop_assume!(name != "web1" && name != "web2");
                let add = format!("add gslb service {name} 10.0.2.{last} HTTP 80 -siteName fra");
                let t = apply(BASE, &add).unwrap().text;
                let t2 = apply(&t, &format!("bind gslb vserver vs1 -serviceName {name}")).unwrap().text;
                let back = apply(&t2, &format!("unbind gslb vserver vs1 -serviceName {name}")).unwrap().text;
                prop_assert_eq!(&back, &t);
                prop_assert_eq!(apply(&t2, &format!("rm gslb service {name}")).unwrap().text, BASE);
            }

            /// set then unset of an option not in the file gives the text back.
            #[test]
            fn set_then_unset_is_identity(n in 1u32..1000) {
                let t = apply(BASE, &format!("set gslb service web2 -maxClients {n}")).unwrap().text;
                prop_assert_eq!(apply(&t, "unset gslb service web2 -maxClients").unwrap().text, BASE);
            }
        }
    }
}
