//! The native TOML syntax: split by top-level key and table, using the
//! spans of `toml_parser` (the parser under the `toml` crate) so that every
//! kept byte is exactly as written.
//!
//! **Local**: `version` and every top-level key written as a value before
//! the first table (`server = { ... }`); the tables `[server]`, `[api]`,
//! `[dns]`, `[vrrp]`, `[[rpc_node]]` (and their sub-tables); a `[gslb]`
//! table that holds only `automatic_config_sync` and/or `incarnation`.
//!
//! **Shared**: every other table: `[gslb]` (but those two keys) and its
//! sub-tables, `[[site]]`, `[[monitor]]`, `[[service]]`, `[[vserver]]`,
//! `[[zone]]`, `[[record]]`, `[[dns_action]]`, `[[dns_policy]]`,
//! `[[location]]`, `[[location_file]]`, `[[dc_record]]`, and tables this
//! module does not know (the reader judges them). A shared key written as
//! a top-level value (`site = [ ... ]`) cannot be split: it is an error
//! that asks for the table form.
//!
//! **Per-node keys in shared tables** (overlays), taken out by `split`
//! (their whole line) and put back by `merge` from the receiver's file,
//! right after the table's header line: `site_password` in a `[[site]]`
//! (matched by the site's `name`, case-insensitive); `automatic_config_sync`
//! and `incarnation` in `[gslb]` (into the shared `[gslb]` if the shared
//! text has one, else into a local `[gslb]`). Comments before such a key
//! stay where they are, in the shared text.

use std::collections::HashMap;

use toml_parser::decoder::ScalarKind;
use toml_parser::parser::{Event, EventKind};
use toml_parser::{ParseError, Raw, Source, Span};

use super::{SEPARATOR, SyncHeader, SyncTextError, is_separator, lines_with_ends};

/// Top-level keys that are this node's own.
const LOCAL_KEYS: &[&str] = &["version", "server", "api", "dns", "vrrp", "rpc_node"];

/// A per-node key's line, as written.
#[derive(Debug, Clone)]
struct OLine {
    /// The key (`site_password`, `automatic_config_sync`, `incarnation`).
    key: String,
    /// The whole line(s), indentation and comment included, without the
    /// last `\n`.
    text: String,
    /// The value's span in `text`.
    value: Option<(usize, usize)>,
}

impl OLine {
    fn set_value(&mut self, v: &str) {
        if let Some((s, e)) = self.value {
            self.text.replace_range(s..e, v);
            self.value = Some((s, s + v.len()));
        }
    }
}

#[derive(Debug)]
enum Piece {
    Text(String),
    /// A local `[gslb]` (only per-node keys): its leading comments and
    /// header line, then its body.
    Gslb {
        head: String,
        body: Vec<Body>,
    },
}

#[derive(Debug)]
enum Body {
    Trivia(String),
    Key(OLine),
}

#[derive(Debug, Default)]
pub(super) struct Analysis {
    pub shared: String,
    pub incarnation: Option<u64>,
    local: Vec<Piece>,
    /// Per-node keys of a shared `[gslb]`.
    gslb_overlays: Vec<OLine>,
    /// After the header line of the shared `[gslb]`, in `shared`.
    gslb_point: Option<usize>,
    /// `site_password` lines by lower-case site name, in file order.
    site_overlays: Vec<(String, OLine)>,
    /// After the header line of each site's (first) `[[site]]`, in `shared`.
    site_points: HashMap<String, usize>,
    first_local: Option<(usize, String)>,
    first_overlay: Option<(usize, String)>,
    separator: Option<usize>,
}

/// One key-value or table header of the file, from its line start to after
/// its line end.
#[derive(Debug)]
struct Item {
    start: usize,
    end: usize,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Header {
        keys: Vec<String>,
    },
    KeyVal {
        keys: Vec<String>,
        value: Option<(Span, String, Option<ScalarKind>)>,
    },
}

/// Line numbers of increasing offsets, counted once over the text (a
/// count from the start for every item would make a split quadratic).
struct Lines<'a> {
    text: &'a str,
    at: usize,
    line: usize,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str, skipped: usize) -> Self {
        Lines {
            text,
            at: 0,
            line: 1 + skipped,
        }
    }

    /// The 1-based line of `offset`, which is not before the last one asked.
    fn of(&mut self, offset: usize) -> usize {
        let offset = offset.min(self.text.len()).max(self.at);
        self.line += self.text.as_bytes()[self.at..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        self.at = offset;
        self.line
    }
}

/// 1-based line of byte `offset` of `text`, plus `skipped` (for errors).
fn line_of(text: &str, offset: usize, skipped: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
        + skipped
}

/// The file's items, or its first syntax error.
fn items(text: &str, file: &str, skipped: usize) -> Result<Vec<Item>, SyncTextError> {
    let source = Source::new(text);
    let tokens = source.lex().into_vec();
    let mut events: Vec<Event> = Vec::new();
    let mut errors: Vec<ParseError> = Vec::new();
    toml_parser::parser::parse_document(&tokens, &mut events, &mut errors);
    let syntax = |offset: usize, reason: String| SyncTextError::Syntax {
        file: file.to_string(),
        line: line_of(text, offset, skipped),
        reason: format!("TOML syntax: {reason}"),
    };
    if let Some(e) = errors.first() {
        let at = e.unexpected().or(e.context()).map_or(0, |s| s.start());
        return Err(syntax(at, e.description().to_string()));
    }
    // The event's encoding says how the text is quoted.
    let raw = |ev: &Event| {
        Raw::new_unchecked(
            &text[ev.span().start()..ev.span().end()],
            ev.encoding(),
            ev.span(),
        )
    };
    let decode_key = |ev: &Event| -> Result<String, SyncTextError> {
        let span = ev.span();
        let mut out = String::new();
        let mut errs: Vec<ParseError> = Vec::new();
        raw(ev).decode_key(&mut out, &mut errs);
        match errs.first() {
            Some(e) => Err(syntax(span.start(), e.description().to_string())),
            None => Ok(out),
        }
    };
    let line_start = |at: usize| text[..at].rfind('\n').map_or(0, |i| i + 1);

    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut in_header = false;
    let mut after_eq = false;
    let mut cur: Option<Item> = None;
    for ev in &events {
        let span = ev.span();
        match ev.kind() {
            EventKind::StdTableOpen | EventKind::ArrayTableOpen if depth == 0 => {
                in_header = true;
                cur = Some(Item {
                    start: line_start(span.start()),
                    end: text.len(),
                    kind: Kind::Header { keys: Vec::new() },
                });
            }
            EventKind::StdTableClose | EventKind::ArrayTableClose if depth == 0 => {
                in_header = false;
            }
            EventKind::SimpleKey if depth == 0 => {
                let key = decode_key(ev)?;
                match &mut cur {
                    Some(Item {
                        kind: Kind::Header { keys },
                        ..
                    }) if in_header => keys.push(key),
                    Some(Item {
                        kind: Kind::KeyVal { keys, .. },
                        ..
                    }) if !after_eq => keys.push(key),
                    None => {
                        after_eq = false;
                        cur = Some(Item {
                            start: line_start(span.start()),
                            end: text.len(),
                            kind: Kind::KeyVal {
                                keys: vec![key],
                                value: None,
                            },
                        });
                    }
                    _ => {}
                }
            }
            EventKind::KeyValSep if depth == 0 => after_eq = true,
            EventKind::Scalar if depth == 0 => {
                if let Some(Item {
                    kind: Kind::KeyVal { value, .. },
                    ..
                }) = &mut cur
                    && value.is_none()
                {
                    let mut out = String::new();
                    let mut errs: Vec<ParseError> = Vec::new();
                    let kind = raw(ev).decode_scalar(&mut out, &mut errs);
                    *value = Some((span, out, Some(kind)));
                }
            }
            EventKind::ArrayOpen | EventKind::InlineTableOpen => depth += 1,
            EventKind::ArrayClose | EventKind::InlineTableClose => depth = depth.saturating_sub(1),
            EventKind::Newline if depth == 0 => {
                if let Some(mut item) = cur.take() {
                    item.end = span.end();
                    items.push(item);
                }
                after_eq = false;
            }
            EventKind::Error => {
                return Err(syntax(span.start(), "not valid TOML here".into()));
            }
            _ => {}
        }
    }
    if let Some(item) = cur.take() {
        items.push(item);
    }
    Ok(items)
}

/// `text[start..end]` with a `\n` at its end.
fn push_ended(out: &mut String, text: &str) {
    out.push_str(text);
    if !text.ends_with('\n') {
        out.push('\n');
    }
}

/// A per-node key line from `item`.
fn oline(text: &str, item: &Item, key: &str) -> OLine {
    let raw = &text[item.start..item.end];
    let raw = raw.strip_suffix('\n').unwrap_or(raw);
    let value = match &item.kind {
        Kind::KeyVal {
            value: Some((span, _, _)),
            ..
        } => Some((span.start() - item.start, span.end() - item.start)),
        _ => None,
    };
    OLine {
        key: key.to_string(),
        text: raw.to_string(),
        value,
    }
}

/// A table being collected: its head (comments before it and its header
/// line) and its body.
struct Section {
    keys: Vec<String>,
    line: usize,
    head: String,
    body: Vec<(Option<String>, String, Option<usize>)>,
}

pub(super) fn analyse(body: &str, file: &str, skipped: usize) -> Result<Analysis, SyncTextError> {
    let items = items(body, file, skipped)?;
    let mut a = Analysis::default();
    let mut pending = String::new();
    let mut pos = 0;
    let mut lines = Lines::new(body, skipped);
    let mut section: Option<(Section, Vec<(usize, OLine)>)> = None;
    // The open table and its per-node key lines (by index into its body).
    for item in items.iter().chain(std::iter::once(&Item {
        start: body.len(),
        end: body.len(),
        kind: Kind::Header { keys: Vec::new() },
    })) {
        // The blank and comment lines before this item.
        for (at, l) in lines_with_ends(&body[pos..item.start]) {
            if is_separator(super::content(l)) {
                let line = lines.of(pos + at);
                a.separator.get_or_insert(line);
                // The separator ends the local part: the table before it
                // and the comments between are local.
                if let Some((s, olines)) = section.take() {
                    close(&mut a, s, olines);
                }
                if !pending.is_empty() {
                    a.local.push(Piece::Text(std::mem::take(&mut pending)));
                }
            } else {
                push_ended(&mut pending, l);
            }
        }
        pos = item.end;
        let is_end = item.start == body.len();
        let line = lines.of(item.start);
        match &item.kind {
            Kind::Header { keys } => {
                if let Some((s, olines)) = section.take() {
                    close(&mut a, s, olines);
                }
                if is_end {
                    break;
                }
                let mut head = std::mem::take(&mut pending);
                push_ended(&mut head, &body[item.start..item.end]);
                section = Some((
                    Section {
                        keys: keys.clone(),
                        line,
                        head,
                        body: Vec::new(),
                    },
                    Vec::new(),
                ));
            }
            Kind::KeyVal { keys, value } => match &mut section {
                None => {
                    let key = keys.first().cloned().unwrap_or_default();
                    if !LOCAL_KEYS.contains(&key.as_str()) {
                        return Err(SyncTextError::Unsupported {
                            file: file.to_string(),
                            line,
                            reason: format!(
                                "`{key}` is written as a top-level value; config sync needs the shared part in tables: write it as `[{key}]` / `[[{key}]]`"
                            ),
                        });
                    }
                    if key != "version" {
                        a.first_local.get_or_insert((line, key.clone()));
                    } else {
                        a.first_local.get_or_insert((line, "version".into()));
                    }
                    let mut t = std::mem::take(&mut pending);
                    push_ended(&mut t, &body[item.start..item.end]);
                    a.local.push(Piece::Text(t));
                }
                Some((s, olines)) => {
                    if !pending.is_empty() {
                        s.body.push((None, std::mem::take(&mut pending), None));
                    }
                    let key = match keys.as_slice() {
                        [k] => Some(k.as_str()),
                        _ => None,
                    };
                    let overlay = match (s.keys.as_slice(), key) {
                        ([t], Some(k @ ("automatic_config_sync" | "incarnation")))
                            if t == "gslb" =>
                        {
                            if k == "incarnation" {
                                a.incarnation = Some(incarnation(value, file, line)?);
                            }
                            Some(k)
                        }
                        ([t], Some(k @ "site_password")) if t == "site" => Some(k),
                        _ => None,
                    };
                    let name = match (key, value) {
                        (Some("name"), Some((_, v, Some(ScalarKind::String)))) => {
                            Some(v.to_ascii_lowercase())
                        }
                        _ => None,
                    };
                    let mut text = String::new();
                    push_ended(&mut text, &body[item.start..item.end]);
                    if let Some(k) = overlay {
                        olines.push((s.body.len(), oline(body, item, k)));
                        s.body.push((Some(k.to_string()), text, Some(line)));
                    } else {
                        s.body.push((name, text, None));
                    }
                }
            },
        }
    }
    if !pending.is_empty() {
        a.local.push(Piece::Text(pending));
    }
    Ok(a)
}

fn incarnation(
    value: &Option<(Span, String, Option<ScalarKind>)>,
    file: &str,
    line: usize,
) -> Result<u64, SyncTextError> {
    let err = |reason: &str| SyncTextError::Incarnation {
        file: file.to_string(),
        line,
        reason: reason.to_string(),
    };
    match value {
        Some((_, digits, Some(ScalarKind::Integer(radix)))) => {
            u64::from_str_radix(digits, radix.value()).map_err(|_| err("expected an integer ≥ 0"))
        }
        _ => Err(err("expected an integer ≥ 0")),
    }
}

/// Puts a finished table into its part.
fn close(a: &mut Analysis, s: Section, olines: Vec<(usize, OLine)>) {
    let top = s.keys.first().map(String::as_str).unwrap_or("");
    if LOCAL_KEYS.contains(&top) {
        a.first_local.get_or_insert((s.line, format!("[{top}]")));
        let mut t = s.head;
        for (_, b, _) in s.body {
            t.push_str(&b);
        }
        a.local.push(Piece::Text(t));
        return;
    }
    let is_gslb = s.keys.len() == 1 && top == "gslb";
    let is_site = s.keys.len() == 1 && top == "site";
    let any_shared_key = s
        .body
        .iter()
        .any(|(k, text, l)| l.is_none() && (k.is_some() || !is_trivia(text)));
    if is_gslb && !olines.is_empty() && !any_shared_key {
        a.first_local.get_or_insert((s.line, "[gslb]".into()));
        let mut olines = olines.into_iter().peekable();
        let mut body = Vec::new();
        for (i, (_, text, _)) in s.body.into_iter().enumerate() {
            match olines.peek() {
                Some((j, _)) if *j == i => {
                    let (_, o) = olines.next().expect("peeked");
                    body.push(Body::Key(o));
                }
                _ => body.push(Body::Trivia(text)),
            }
        }
        a.local.push(Piece::Gslb { head: s.head, body });
        return;
    }
    if let Some((_, line)) = s.body.iter().find_map(|(k, _, l)| l.map(|l| (k, l))) {
        let what = olines
            .first()
            .map(|(_, o)| o.key.clone())
            .unwrap_or_default();
        a.first_overlay.get_or_insert((line, what));
    }
    a.shared.push_str(&s.head);
    let point = a.shared.len();
    if is_gslb {
        a.gslb_point.get_or_insert(point);
        a.gslb_overlays
            .extend(olines.iter().map(|(_, o)| o.clone()));
    }
    let mut site_name = None;
    for (k, text, overlay_line) in s.body {
        if overlay_line.is_some() {
            continue;
        }
        if is_site && site_name.is_none() {
            site_name = k;
        }
        a.shared.push_str(&text);
    }
    if is_site && let Some(name) = site_name {
        a.site_points.entry(name.clone()).or_insert(point);
        for (_, o) in olines {
            a.site_overlays.push((name.clone(), o));
        }
    }
}

/// Whether `text` is only blank and comment lines.
fn is_trivia(text: &str) -> bool {
    text.lines().all(|l| {
        let l = l.trim_start();
        l.is_empty() || l.starts_with('#')
    })
}

fn push_oline(out: &mut String, o: &OLine) {
    out.push_str(&o.text);
    out.push('\n');
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
            units: "tables",
            setting: "key",
        },
        shared,
        shared_name,
    )?;
    let n = header.incarnation.to_string();
    let mut gslb_lines = cur.gslb_overlays.clone();
    let mut local_gslb_seen = false;
    let fresh_incarnation = || OLine {
        key: "incarnation".into(),
        text: format!("incarnation = {n}"),
        value: Some((14, 14 + n.len())),
    };
    // Sets the incarnation in `lines`; adds it when none is there.
    let settle = |lines: &mut Vec<OLine>| {
        let mut found = false;
        for o in lines.iter_mut().filter(|o| o.key == "incarnation") {
            o.set_value(&n);
            found = true;
        }
        if !found {
            lines.push(fresh_incarnation());
        }
    };
    for p in cur.local {
        match p {
            Piece::Text(t) => out.push_str(&t),
            Piece::Gslb { head, body } => {
                local_gslb_seen = true;
                if s.gslb_point.is_some() {
                    // The shared text has a [gslb]: the keys move into it.
                    gslb_lines.extend(body.into_iter().filter_map(|b| match b {
                        Body::Key(o) => Some(o),
                        Body::Trivia(_) => None,
                    }));
                    continue;
                }
                out.push_str(&head);
                let mut keys: Vec<OLine> = Vec::new();
                for b in body {
                    match b {
                        Body::Trivia(t) => out.push_str(&t),
                        Body::Key(o) => keys.push(o),
                    }
                }
                keys.append(&mut gslb_lines);
                settle(&mut keys);
                for o in &keys {
                    push_oline(out, o);
                }
            }
        }
    }
    if s.gslb_point.is_none() && !local_gslb_seen {
        settle(&mut gslb_lines);
        out.push_str("[gslb]\n");
        for o in &gslb_lines {
            push_oline(out, o);
        }
        gslb_lines.clear();
    }
    out.push_str(SEPARATOR);
    out.push('\n');

    let mut inserts: Vec<(usize, String)> = Vec::new();
    if let Some(point) = s.gslb_point {
        settle(&mut gslb_lines);
        let mut t = String::new();
        for o in &gslb_lines {
            push_oline(&mut t, o);
        }
        inserts.push((point, t));
    }
    for (name, o) in &cur.site_overlays {
        if let Some(&point) = s.site_points.get(name) {
            let mut t = String::new();
            push_oline(&mut t, o);
            inserts.push((point, t));
        }
    }
    super::splice(out, shared, inserts);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Analysis {
        analyse(text, "t.toml", 0).expect("splits")
    }

    const FILE: &str = r#"# top
version = 1

[server]
local_site = "P1" # me

# params
[gslb]
automatic_config_sync = true
mep_keepalive_timeout = "3s"
incarnation = 0x10

[[site]]
name = "P1"
ip = "10.0.0.1"
site_password = "s3cret"

[[site]]
name = "P2"
ip = "10.0.0.2"
status = [
  [1, 2],
]
# end
"#;

    #[test]
    fn tables_split_by_key() {
        let a = split(FILE);
        assert_eq!(
            a.shared,
            "\n# params\n[gslb]\nmep_keepalive_timeout = \"3s\"\n\n[[site]]\nname = \"P1\"\nip = \"10.0.0.1\"\n\n[[site]]\nname = \"P2\"\nip = \"10.0.0.2\"\nstatus = [\n  [1, 2],\n]\n"
        );
        assert_eq!(a.incarnation, Some(16));
        assert_eq!(a.site_overlays.len(), 1);
        assert_eq!(a.site_overlays[0].0, "p1");
        assert_eq!(a.site_overlays[0].1.text, "site_password = \"s3cret\"");
        assert_eq!(a.gslb_overlays.len(), 2);
        let local: String = a
            .local
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.clone(),
                Piece::Gslb { .. } => panic!("no local [gslb]"),
            })
            .collect();
        assert_eq!(
            local,
            "# top\nversion = 1\n\n[server]\nlocal_site = \"P1\" # me\n# end\n"
        );
    }

    #[test]
    fn gslb_with_only_per_node_keys_is_local() {
        let a = split(
            "version = 1\n[gslb]\nincarnation = 3\n[[site]]\nname = \"a\"\nip = \"1.1.1.1\"\n",
        );
        assert_eq!(a.shared, "[[site]]\nname = \"a\"\nip = \"1.1.1.1\"\n");
        assert!(matches!(a.local.last(), Some(Piece::Gslb { .. })));
        assert_eq!(a.incarnation, Some(3));
    }

    #[test]
    fn shared_top_level_values_are_refused() {
        let e = analyse("version = 1\nsite = []\n", "t.toml", 0).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("t.toml:2: `site` is written as a top-level value"),
            "{e}"
        );
        let e = analyse("version = 1\n[gslb\n", "t.toml", 0).unwrap_err();
        assert!(e.to_string().starts_with("t.toml:2: TOML syntax"), "{e}");
        let e = analyse("[gslb]\nincarnation = -1\n", "t.toml", 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.toml:2: incarnation: expected an integer ≥ 0"
        );
    }
}
