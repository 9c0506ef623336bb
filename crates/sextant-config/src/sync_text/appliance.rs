//! The appliance syntax: one command per line, classified by its command
//! words (case-insensitive, as the reader matches them).
//!
//! **Local** (this node's own; kept as written, never sent):
//! - `add service NAME IP ADNS|ADNS_TCP PORT`: the DNS listeners;
//! - `add server NAME IP` when an `add service` line of the same file names
//!   that server (the listener needs it on an earlier line, and local lines
//!   come first); a shared line that also names such a server only works
//!   where the receiver defines it too;
//! - `set dns parameter` (the DNS server's own settings);
//! - `set ns rpcNode`, `add ns rpcNode` (metric exchange secrets);
//! - `add vrid`, `set vrid`, `bind vrid`, `set vridParam`, `add ns ip`,
//!   `add ns ip6` (VRRP);
//! - `enable ns feature`, `enable ns mode` (the node's own switches);
//! - `set gslb parameter` lines that give only `-automaticConfigSync`
//!   and/or `-incarnation`.
//!
//! **Shared** (travels; replaced by every sync): every other command:
//! `add/set/unset gslb site`, `add/set/bind gslb service`, `add/set/bind
//! gslb vserver`, `add/set/bind gslb dcRecord`, the other `set gslb
//! parameter` lines, `add/set/bind lb monitor`, `add server` (but the
//! above), `add dns soaRec/nsRec/addRec/aaaaRec/cnameRec/mxRec/txtRec/
//! srvRec/dsRec/zone`, `add location`, `add locationFile`, `add locationFile6`,
//! `add dns action/policy`, `bind dns global`, and commands this module
//! does not know (the reader judges them). A line that does not start with
//! a verb is an error.
//!
//! **Per-node tokens on shared lines** (overlays), taken out by `split`
//! and put back by `merge` from the receiver's own file:
//! - on `add gslb site NAME`: `-siteType LOCAL|REMOTE` (or the older
//!   positional `NAME LOCAL IP`), `-sitePassword X` with `-encrypted`,
//!   `-encryptmethod`, `-kek`, `-suffix`; on `set gslb site NAME`:
//!   `-sitePassword X` and its encryption options; on `unset gslb site
//!   NAME`: `-sitePassword`. The receiver's final state per site goes back
//!   onto the shared `add gslb site NAME` line, as `-siteType T` and the
//!   password options as written. A `set`/`unset gslb site` line left with
//!   no option is dropped.
//! - on `set gslb parameter`: `-automaticConfigSync X` and `-incarnation
//!   N`; they go back onto a local `set gslb parameter` line (the last one,
//!   or a new one at the end of the local part).

use std::collections::{HashMap, HashSet};

use super::{SEPARATOR, SyncHeader, SyncTextError, is_separator, lines_with_ends, push_line};
use crate::lexer::{self, Token};

/// Commands that are this node's own.
const LOCAL: &[&[&str]] = &[
    &["add", "service"],
    &["set", "dns", "parameter"],
    &["set", "ns", "rpcNode"],
    &["add", "ns", "rpcNode"],
    &["add", "vrid"],
    &["set", "vrid"],
    &["bind", "vrid"],
    &["set", "vridParam"],
    &["add", "ns", "ip"],
    &["add", "ns", "ip6"],
    &["enable", "ns", "feature"],
    &["enable", "ns", "mode"],
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SiteVerb {
    Add,
    Set,
    Unset,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Local,
    Shared,
    Site(SiteVerb),
    Param,
    Server,
}

fn matches(tokens: &[Token], words: &[&str]) -> bool {
    tokens.len() >= words.len()
        && words
            .iter()
            .zip(tokens)
            .all(|(w, t)| !t.quoted && w.eq_ignore_ascii_case(&t.text))
}

/// The class of a command line and how many tokens its command words take;
/// `None` when the line does not start with a verb.
fn classify(tokens: &[Token]) -> Option<(Class, usize)> {
    let n = crate::scope::command_len(tokens);
    if n == 0 {
        return None;
    }
    let found = [
        (&["add", "gslb", "site"][..], Class::Site(SiteVerb::Add)),
        (&["set", "gslb", "site"][..], Class::Site(SiteVerb::Set)),
        (&["unset", "gslb", "site"][..], Class::Site(SiteVerb::Unset)),
        (&["set", "gslb", "parameter"][..], Class::Param),
        (&["add", "server"][..], Class::Server),
    ]
    .into_iter()
    .find(|(w, _)| matches(tokens, w))
    .map(|(w, c)| (c, w.len()));
    if found.is_some() {
        return found;
    }
    if let Some(w) = LOCAL.iter().find(|w| matches(tokens, w)) {
        return Some((Class::Local, w.len()));
    }
    Some((Class::Shared, n))
}

/// One line's per-node state for a site.
#[derive(Debug, Default, Clone)]
struct SiteOverlay {
    /// The site's name as first written.
    name: String,
    /// `LOCAL` / `REMOTE` as written.
    site_type: Option<String>,
    /// The password options as written; `Some(None)` after an unset.
    password: Option<Option<String>>,
}

/// A piece of the local part.
#[derive(Debug)]
enum Piece {
    /// Lines as written, each with its `\n`.
    Text(String),
    /// A local `set gslb parameter` line (without its `\n`), whose
    /// `-incarnation` merge sets.
    Param(String),
}

/// A file (or shared text) taken apart.
#[derive(Debug, Default)]
pub(super) struct Analysis {
    pub shared: String,
    pub incarnation: Option<u64>,
    local: Vec<Piece>,
    /// Final per-node site state, by lower-case site name.
    sites: HashMap<String, SiteOverlay>,
    /// The order in which `sites` were first seen (for stable output).
    site_order: Vec<String>,
    /// `-automaticConfigSync X` groups taken from shared lines, as written.
    mixed_params: Vec<String>,
    /// Where, in `shared`, the first `add gslb site NAME` line of each site
    /// (lower case) ends its last token: overlays go there.
    add_points: HashMap<String, usize>,
    /// The first local command (line, words), for checking shared texts.
    first_local: Option<(usize, String)>,
    /// The first per-node token on a shared line (line, option).
    first_overlay: Option<(usize, String)>,
    /// A separator line.
    separator: Option<usize>,
}

struct Line<'a> {
    no: usize,
    text: &'a str,
    tokens: Vec<Token<'a>>,
}

/// Splits `body` (LF line ends, header removed; its first line is line
/// `skipped + 1` of `file`).
pub(super) fn analyse(body: &str, file: &str, skipped: usize) -> Result<Analysis, SyncTextError> {
    let mut lines = Vec::new();
    for (i, (_, l)) in lines_with_ends(body).enumerate() {
        let text = super::content(l);
        let no = i + 1 + skipped;
        let tokens = lexer::tokenize(text).map_err(|reason| SyncTextError::Syntax {
            file: file.to_string(),
            line: no,
            reason,
        })?;
        lines.push(Line { no, text, tokens });
    }
    // The servers the DNS listeners name stay local with them.
    let adns_servers: HashSet<String> = lines
        .iter()
        .filter(|l| matches(&l.tokens, &["add", "service"]))
        .filter_map(|l| {
            let pos: Vec<&Token> = l.tokens[2..]
                .iter()
                .take_while(|t| !t.is_option())
                .collect();
            pos.get(1).map(|t| t.text.to_ascii_lowercase())
        })
        .collect();

    let mut a = Analysis::default();
    let mut pending = String::new();
    let flush_local = |a: &mut Analysis, pending: &mut String| {
        if !pending.is_empty() {
            a.local.push(Piece::Text(std::mem::take(pending)));
        }
    };
    for line in &lines {
        if line.tokens.is_empty() {
            if is_separator(line.text) {
                a.separator.get_or_insert(line.no);
                flush_local(&mut a, &mut pending);
            } else {
                push_line(&mut pending, line.text);
            }
            continue;
        }
        let Some((class, n)) = classify(&line.tokens) else {
            return Err(SyncTextError::Syntax {
                file: file.to_string(),
                line: line.no,
                reason: format!(
                    "\"{}\" is not an appliance command: each line starts with a verb (add, set, bind, ...)",
                    line.tokens[0].text
                ),
            });
        };
        let local_server = class == Class::Server
            && line
                .tokens
                .get(2)
                .is_some_and(|t| adns_servers.contains(&t.text.to_ascii_lowercase()));
        match class {
            Class::Local => {
                a.first_local
                    .get_or_insert_with(|| (line.no, crate::scope::command_words(&line.tokens)));
                pending.push_str(line.text);
                pending.push('\n');
                flush_local(&mut a, &mut pending);
            }
            Class::Server if local_server => {
                a.first_local.get_or_insert((line.no, "add server".into()));
                push_line(&mut pending, line.text);
                flush_local(&mut a, &mut pending);
            }
            Class::Shared | Class::Server => {
                a.shared.push_str(&std::mem::take(&mut pending));
                push_line(&mut a.shared, line.text);
            }
            Class::Param => param_line(&mut a, &mut pending, line, n, file)?,
            Class::Site(verb) => site_line(&mut a, &mut pending, line, n, verb),
        }
    }
    flush_local(&mut a, &mut pending);
    Ok(a)
}

/// The index after option `i` and its value, if it has one.
fn after_value(tokens: &[Token], i: usize) -> usize {
    if tokens.get(i + 1).is_some_and(|t| !t.is_option()) {
        i + 2
    } else {
        i + 1
    }
}

/// The raw text of tokens `range`, joined by spaces.
fn raw(text: &str, tokens: &[Token]) -> String {
    tokens
        .iter()
        .map(|t| &text[t.start..t.end])
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` without tokens `remove` (sorted indices), each cut with the
/// blanks before it; and where the last kept token ends in the result.
fn without(text: &str, tokens: &[Token], remove: &[usize]) -> (String, usize) {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let mut last_end = 0;
    for (i, t) in tokens.iter().enumerate() {
        if remove.contains(&i) {
            let cut = text[..t.start].trim_end_matches([' ', '\t']).len().max(at);
            out.push_str(&text[at..cut]);
            at = t.end;
        } else {
            out.push_str(&text[at..t.end]);
            at = t.end;
            last_end = out.len();
        }
    }
    out.push_str(&text[at..]);
    (out, last_end)
}

fn param_line(
    a: &mut Analysis,
    pending: &mut String,
    line: &Line,
    n: usize,
    file: &str,
) -> Result<(), SyncTextError> {
    let t = &line.tokens;
    let mut remove = Vec::new();
    let mut groups = Vec::new();
    let mut i = n;
    while i < t.len() {
        let next = after_value(t, i);
        if t[i].is_option() {
            let name = &t[i].text[1..];
            if name.eq_ignore_ascii_case("incarnation") {
                let value = t.get(i + 1).filter(|_| next == i + 2).map(|v| &*v.text);
                a.incarnation = Some(parse_incarnation(value, file, line.no)?);
                remove.extend(i..next);
            } else if name.eq_ignore_ascii_case("automaticConfigSync") {
                groups.push(raw(line.text, &t[i..next]));
                remove.extend(i..next);
            }
        }
        i = if t[i].is_option() { next } else { i + 1 };
    }
    if remove.is_empty() {
        a.shared.push_str(&std::mem::take(pending));
        push_line(&mut a.shared, line.text);
        return Ok(());
    }
    if remove.len() == t.len() - n {
        // Only per-node options: a local line.
        a.first_local
            .get_or_insert((line.no, "set gslb parameter".into()));
        if !pending.is_empty() {
            a.local.push(Piece::Text(std::mem::take(pending)));
        }
        a.local.push(Piece::Param(line.text.to_string()));
        return Ok(());
    }
    a.first_overlay.get_or_insert_with(|| {
        let opt = &t[remove[0]].text;
        (line.no, opt.to_string())
    });
    a.mixed_params.extend(groups);
    let (kept, _) = without(line.text, t, &remove);
    a.shared.push_str(&std::mem::take(pending));
    push_line(&mut a.shared, &kept);
    Ok(())
}

fn parse_incarnation(value: Option<&str>, file: &str, line: usize) -> Result<u64, SyncTextError> {
    let err = |reason: String| SyncTextError::Incarnation {
        file: file.to_string(),
        line,
        reason,
    };
    let v = value.ok_or_else(|| err("missing value; expected an integer ≥ 0".into()))?;
    v.parse::<u64>()
        .map_err(|_| err(format!("\"{v}\" is not an integer ≥ 0")))
}

fn site_line(a: &mut Analysis, pending: &mut String, line: &Line, n: usize, verb: SiteVerb) {
    let t = &line.tokens;
    let Some(name) = t.get(n).filter(|t| !t.is_option()) else {
        // Malformed: the reader reports it; it travels as written.
        a.shared.push_str(&std::mem::take(pending));
        push_line(&mut a.shared, line.text);
        return;
    };
    let key = name.text.to_ascii_lowercase();
    let mut remove = Vec::new();
    let mut site_type = None;
    let mut password = Vec::new();
    let mut unset_password = false;
    if verb == SiteVerb::Add {
        let positional: Vec<usize> = (n..t.len()).take_while(|&i| !t[i].is_option()).collect();
        if let [_, ty, _] = positional.as_slice()
            && ["LOCAL", "REMOTE"]
                .iter()
                .any(|w| w.eq_ignore_ascii_case(&t[*ty].text))
        {
            site_type = Some(t[*ty].text.to_string());
            remove.push(*ty);
        }
    }
    let mut i = n + 1;
    while i < t.len() {
        if !t[i].is_option() {
            i += 1;
            continue;
        }
        let name = &t[i].text[1..];
        let is = |w: &str| name.eq_ignore_ascii_case(w);
        let next = after_value(t, i);
        if verb == SiteVerb::Unset {
            if is("sitePassword") {
                unset_password = true;
                remove.push(i);
            }
            i += 1;
            continue;
        }
        if verb == SiteVerb::Add && is("siteType") {
            site_type = t
                .get(i + 1)
                .filter(|_| next == i + 2)
                .map(|v| v.text.to_string());
            remove.extend(i..next);
        } else if is("sitePassword") || is("encryptmethod") || is("suffix") {
            password.push(raw(line.text, &t[i..next]));
            remove.extend(i..next);
            i = next;
            continue;
        } else if is("encrypted") || is("kek") {
            password.push(raw(line.text, &t[i..i + 1]));
            remove.push(i);
            i += 1;
            continue;
        }
        i = next;
    }
    if !remove.is_empty() {
        a.first_overlay
            .get_or_insert_with(|| (line.no, t[remove[0]].text.to_string()));
        if !a.sites.contains_key(&key) {
            a.site_order.push(key.clone());
        }
        let o = a.sites.entry(key.clone()).or_insert_with(|| SiteOverlay {
            name: name.text.to_string(),
            ..SiteOverlay::default()
        });
        if site_type.is_some() {
            o.site_type = site_type;
        }
        if !password.is_empty() {
            o.password = Some(Some(password.join(" ")));
        }
        if unset_password {
            o.password = Some(None);
        }
    }
    remove.sort_unstable();
    if verb != SiteVerb::Add && !remove.is_empty() && t.len() - remove.len() <= n + 1 {
        // Nothing but per-node options: the line has no shared content.
        return;
    }
    let (kept, end) = without(line.text, t, &remove);
    a.shared.push_str(&std::mem::take(pending));
    if verb == SiteVerb::Add && !a.add_points.contains_key(&key) {
        a.add_points.insert(key, a.shared.len() + end);
    }
    push_line(&mut a.shared, &kept);
}

/// Sets every `-incarnation` value of `line` to `n`; whether there was one.
fn set_incarnation(line: &mut String, n: u64) -> bool {
    let Ok(tokens) = lexer::tokenize(line) else {
        return false;
    };
    let mut edits = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        if t.is_option() && t.text[1..].eq_ignore_ascii_case("incarnation") {
            match tokens.get(i + 1).filter(|v| !v.is_option()) {
                Some(v) => edits.push((v.start, v.end, n.to_string())),
                None => edits.push((t.end, t.end, format!(" {n}"))),
            }
        }
    }
    let found = !edits.is_empty();
    for (start, end, text) in edits.into_iter().rev() {
        line.replace_range(start..end, &text);
    }
    found
}

/// Whether `line` gives option `name` (case-insensitive).
fn has_option(line: &str, name: &str) -> bool {
    lexer::tokenize(line).is_ok_and(|tokens| {
        tokens
            .iter()
            .any(|t| t.is_option() && t.text[1..].eq_ignore_ascii_case(name))
    })
}

/// `line` with ` addition` after its last token (before any comment).
fn append_after_last_token(line: &mut String, addition: &str) {
    let end = lexer::tokenize(line)
        .ok()
        .and_then(|t| t.last().map(|t| t.end))
        .unwrap_or(line.len());
    line.insert_str(end, &format!(" {addition}"));
}

pub(super) fn merge(
    body: &str,
    file: &str,
    skipped: usize,
    shared: &str,
    shared_name: &str,
    header: &SyncHeader,
    out: &mut String,
) -> Result<(), SyncTextError> {
    let cur = analyse(body, file, skipped)?;
    let s = analyse(shared, shared_name, 0)?;
    super::check_shared(
        &super::SharedCheck {
            shared: &s.shared,
            separator: s.separator,
            first_local: s.first_local.as_ref(),
            first_overlay: s.first_overlay.as_ref(),
            units: "commands",
            setting: "option",
        },
        shared,
        shared_name,
    )?;

    // The local part, with the incarnation set.
    let mut pieces: Vec<(bool, String)> = Vec::with_capacity(cur.local.len());
    let mut has_incarnation = false;
    for p in cur.local {
        match p {
            Piece::Text(t) => pieces.push((false, t)),
            Piece::Param(mut l) => {
                has_incarnation |= set_incarnation(&mut l, header.incarnation);
                pieces.push((true, l));
            }
        }
    }
    let mut additions: Vec<String> = Vec::new();
    let target = pieces.iter().rposition(|(param, _)| *param);
    // The last one on a shared line is what the file said (when no local
    // line says it).
    if let Some(g) = cur.mixed_params.last()
        && !target.is_some_and(|i| has_option(&pieces[i].1, "automaticConfigSync"))
    {
        additions.push(g.clone());
    }
    if !has_incarnation {
        additions.push(format!("-incarnation {}", header.incarnation));
    }
    if !additions.is_empty() {
        match target {
            Some(i) => append_after_last_token(&mut pieces[i].1, &additions.join(" ")),
            None => pieces.push((true, format!("set gslb parameter {}", additions.join(" ")))),
        }
    }
    for (param, text) in &pieces {
        if *param {
            push_line(out, text);
        } else {
            out.push_str(text);
        }
    }
    push_line(out, SEPARATOR);

    // The shared part, with this node's per-node tokens back on its sites.
    let mut inserts: Vec<(usize, String)> = Vec::new();
    for key in &cur.site_order {
        let o = &cur.sites[key];
        let Some(&at) = s.add_points.get(key) else {
            if o.site_type
                .as_deref()
                .is_some_and(|t| t.eq_ignore_ascii_case("LOCAL"))
            {
                return Err(SyncTextError::LocalSiteMissing {
                    file: file.to_string(),
                    origin: header.origin.clone(),
                    site: o.name.clone(),
                });
            }
            continue;
        };
        let mut text = String::new();
        if let Some(t) = &o.site_type {
            text.push_str(" -siteType ");
            text.push_str(t);
        }
        if let Some(Some(p)) = &o.password {
            text.push(' ');
            text.push_str(p);
        }
        if !text.is_empty() {
            inserts.push((at, text));
        }
    }
    super::splice(out, shared, inserts);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Analysis {
        analyse(text, "t.conf", 0).expect("splits")
    }

    #[test]
    fn overlays_leave_the_shared_line_as_written() {
        let a = split(
            "add gslb site P1 LOCAL 10.0.0.1 -publicIP 1.2.3.4  -sitePassword \"a b\" # c\n\
             add gslb site P2 10.0.0.2 -siteType REMOTE -sitePassword x -encrypted -encryptmethod ENCMTHD_3\n",
        );
        assert_eq!(
            a.shared,
            "add gslb site P1 10.0.0.1 -publicIP 1.2.3.4 # c\nadd gslb site P2 10.0.0.2\n"
        );
        assert_eq!(a.sites["p1"].site_type.as_deref(), Some("LOCAL"));
        assert_eq!(
            a.sites["p1"].password,
            Some(Some("-sitePassword \"a b\"".into()))
        );
        assert_eq!(
            a.sites["p2"].password,
            Some(Some(
                "-sitePassword x -encrypted -encryptmethod ENCMTHD_3".into()
            ))
        );
        let line1 = a.shared.lines().next().expect("line");
        assert_eq!(
            &line1[..a.add_points["p1"]],
            "add gslb site P1 10.0.0.1 -publicIP 1.2.3.4"
        );
    }

    #[test]
    fn set_lines_with_only_overlays_are_dropped() {
        let a = split(
            "add gslb site P1 10.0.0.1\n# pw\nset gslb site P1 -sitePassword s\nunset gslb site P1 -sitePassword\nset gslb site P1 -sitePassword t -triggerMonitor MEPDOWN\n",
        );
        assert_eq!(
            a.shared,
            "add gslb site P1 10.0.0.1\n# pw\nset gslb site P1 -triggerMonitor MEPDOWN\n"
        );
        assert_eq!(a.sites["p1"].password, Some(Some("-sitePassword t".into())));
    }

    #[test]
    fn parameter_lines() {
        let a = split(
            "set gslb parameter -incarnation 4\nset gslb parameter -ldnsMask 255.255.255.0 -automaticConfigSync ENABLED -incarnation 7\n",
        );
        assert_eq!(a.shared, "set gslb parameter -ldnsMask 255.255.255.0\n");
        assert_eq!(a.incarnation, Some(7));
        assert_eq!(a.mixed_params, ["-automaticConfigSync ENABLED"]);
        assert!(
            matches!(&a.local[..], [Piece::Param(l)] if l == "set gslb parameter -incarnation 4")
        );
        let e = analyse("set gslb parameter -incarnation -1\n", "t.conf", 2).unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.conf:3: incarnation: \"-1\" is not an integer ≥ 0"
        );
    }

    #[test]
    fn incarnation_is_set_in_place() {
        let mut l =
            "set gslb parameter -automaticConfigSync ENABLED -INCARNATION 3 # n".to_string();
        assert!(set_incarnation(&mut l, 12));
        assert_eq!(
            l,
            "set gslb parameter -automaticConfigSync ENABLED -INCARNATION 12 # n"
        );
        let mut l = "set gslb parameter -automaticConfigSync ENABLED # n".to_string();
        assert!(!set_incarnation(&mut l, 12));
        append_after_last_token(&mut l, "-incarnation 12");
        assert_eq!(
            l,
            "set gslb parameter -automaticConfigSync ENABLED -incarnation 12 # n"
        );
    }

    #[test]
    fn adns_servers_stay_local() {
        let a = split(
            "add server dns1 10.0.0.53\nadd server web1 10.0.0.80\nadd service adns1 dns1 ADNS 53\nadd gslb service s1 web1 HTTP 80 -siteName P1\n",
        );
        assert_eq!(
            a.shared,
            "add server web1 10.0.0.80\nadd gslb service s1 web1 HTTP 80 -siteName P1\n"
        );
        assert_eq!(a.first_local, Some((1, "add server".into())));
    }

    #[test]
    fn comments_go_with_the_next_command_and_trailing_ones_are_local() {
        let a = split(
            "# listener\nadd service a 1.2.3.4 ADNS 53\n\n# sites\nadd gslb site P1 1.2.3.4\n# end\n",
        );
        assert_eq!(a.shared, "\n# sites\nadd gslb site P1 1.2.3.4\n");
        assert!(matches!(&a.local[..], [Piece::Text(a), Piece::Text(b)]
            if a == "# listener\nadd service a 1.2.3.4 ADNS 53\n" && b == "# end\n"));
    }
}
