//! Config sync among parent sites (seed 001, issue 27): splits a
//! configuration file into the part that is this node's own (**local**) and
//! the GSLB part all parents share (**shared**), and merges a shared part
//! received from another parent back into this node's file.
//!
//! The shared part, as text, is what travels between parents and what the
//! version digest covers, so [`split`] returns it canonical: header and
//! separator dropped, per-node tokens taken out, LF line endings, every
//! line ending in `\n`. [`merge`] writes the receiver's new file:
//!
//! ```text
//! # sextant config sync: from SiteP1, incarnation 9, sha256:..., at 2026-12-04T11:02:03Z
//! # This node's own settings come first and are never synchronised; the shared GSLB
//! # configuration follows and is replaced by every sync (docs/config-sync.md).
//! <this node's local part, as written, with its incarnation set>
//! # ---- shared GSLB configuration (the same at every parent; replaced by each sync) ----
//! <the shared part, with this node's per-node tokens put back>
//! ```
//!
//! Local lines come first and never depend on shared ones: the per-node
//! tokens of shared lines (overlays) stay on those lines instead of moving
//! to local `set` lines, because the appliance reader needs `add gslb site
//! X` before any `set gslb site X`.
//!
//! Comments and blank lines travel with the command (appliance) or table
//! (TOML) after them; those at the end of a file, or just before the
//! separator, are local. What each syntax classifies as local or shared is
//! in [`appliance`] and [`toml`]'s module docs.
//!
//! Both functions are linear in the size of their texts: one pass over the
//! lines (appliance) or over the parser's events (TOML), no re-scans.

mod appliance;
mod toml;

use std::path::Path;

/// The two configuration syntaxes, by file extension as
/// [`crate::load_file`] picks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncSyntax {
    /// `.conf`: the appliance's command syntax.
    Appliance,
    /// `.toml`: the native TOML syntax.
    Toml,
}

impl SyncSyntax {
    /// The syntax of `path` by its extension (case-insensitive), if known.
    pub fn of(path: &Path) -> Option<SyncSyntax> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "conf" => Some(SyncSyntax::Appliance),
            "toml" => Some(SyncSyntax::Toml),
            _ => None,
        }
    }

    /// `"appliance"` or `"toml"`, as the wire and the API name the syntax.
    pub fn as_str(self) -> &'static str {
        match self {
            SyncSyntax::Appliance => "appliance",
            SyncSyntax::Toml => "toml",
        }
    }
}

/// What a sync wrote at the top of a file (parsed back by [`split`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncHeader {
    /// The site the shared part came from.
    pub origin: String,
    pub incarnation: u64,
    /// `sha256:<hex>`; opaque here.
    pub digest: String,
    /// RFC 3339 wall time, given by the caller; opaque here.
    pub at: String,
}

/// A configuration file taken apart by [`split`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncSplit {
    pub syntax: SyncSyntax,
    /// The shared part, canonical: exactly the text that travels and that
    /// the digest covers.
    pub shared: String,
    /// The file's sync header, if it has one.
    pub header: Option<SyncHeader>,
    /// `set gslb parameter -incarnation N` / `[gslb] incarnation = N` in
    /// the file (the last one, as the reader takes it).
    pub incarnation: Option<u64>,
}

/// Why a text cannot be split or merged. Displayed as `FILE:LINE: reason`
/// where there is a line; a shared text received from another parent is
/// named `shared configuration from ORIGIN`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyncTextError {
    /// The path's extension names no syntax.
    #[error(
        "{file}: unknown configuration file type; name the file *.conf for the appliance command syntax or *.toml for the native TOML syntax"
    )]
    UnknownSyntax { file: String },
    /// The text is not valid in its syntax (an unterminated quote, a line
    /// that is no command, TOML that does not parse).
    #[error("{file}:{line}: {reason}")]
    Syntax {
        file: String,
        line: usize,
        reason: String,
    },
    /// A shared text holds what only a node's own part may hold (a local
    /// command or table, a per-node option, a sync header or separator), or
    /// is not in the canonical form [`split`] gives.
    #[error("{file}:{line}: {reason}")]
    NotShared {
        file: String,
        line: usize,
        reason: String,
    },
    /// A construct that cannot be put into one of the two parts.
    #[error("{file}:{line}: {reason}")]
    Unsupported {
        file: String,
        line: usize,
        reason: String,
    },
    /// An incarnation that is not an integer ≥ 0.
    #[error("{file}:{line}: incarnation: {reason}")]
    Incarnation {
        file: String,
        line: usize,
        reason: String,
    },
    /// This node's own site (`-siteType LOCAL`) is not in the shared text.
    #[error(
        "{file}: the shared configuration from {origin} does not define site \"{site}\", which is this node's own site (-siteType LOCAL): every parent's configuration must define every parent site"
    )]
    LocalSiteMissing {
        file: String,
        origin: String,
        site: String,
    },
    /// A header whose fields cannot be written so that [`split`] reads
    /// them back.
    #[error("sync header: {0}")]
    Header(String),
}

/// The first line's fixed start; the fields follow.
const HEADER_PREFIX: &str = "# sextant config sync: from ";
/// The header's fixed second and third lines.
const HEADER_TAIL: [&str; 2] = [
    "# This node's own settings come first and are never synchronised; the shared GSLB",
    "# configuration follows and is replaced by every sync (docs/config-sync.md).",
];
/// The line between the local and the shared part of a merged file.
pub(crate) const SEPARATOR: &str =
    "# ---- shared GSLB configuration (the same at every parent; replaced by each sync) ----";

/// Splits the configuration file `path`'s `text` into its shared part,
/// sync header and incarnation.
pub fn split(path: &Path, text: &str) -> Result<SyncSplit, SyncTextError> {
    let file = path.display().to_string();
    let syntax =
        SyncSyntax::of(path).ok_or_else(|| SyncTextError::UnknownSyntax { file: file.clone() })?;
    let text = normalize(text);
    let (header, body, skipped) = strip_header(&text);
    let (shared, incarnation) = match syntax {
        SyncSyntax::Appliance => {
            let a = appliance::analyse(body, &file, skipped)?;
            (a.shared, a.incarnation)
        }
        SyncSyntax::Toml => {
            let a = toml::analyse(body, &file, skipped)?;
            (a.shared, a.incarnation)
        }
    };
    Ok(SyncSplit {
        syntax,
        shared,
        header,
        incarnation,
    })
}

/// The receiver's new file text: `header` at the top, `current`'s local
/// part kept as written (with its incarnation set to `header.incarnation`),
/// and `shared` (another file's `split(..).shared`, same syntax) as the
/// shared part, with this node's per-node tokens put back into it, matched
/// by site name. A site the receiver did not have gets no password.
/// Line endings follow `current` (CRLF if it uses them).
pub fn merge(
    path: &Path,
    current: &str,
    shared: &str,
    header: &SyncHeader,
) -> Result<String, SyncTextError> {
    let file = path.display().to_string();
    let syntax =
        SyncSyntax::of(path).ok_or_else(|| SyncTextError::UnknownSyntax { file: file.clone() })?;
    let head = render_header(header)?;
    let crlf = current.contains("\r\n");
    let current = normalize(current);
    let (_, body, skipped) = strip_header(&current);
    let shared_name = format!("shared configuration from {}", header.origin);
    // What `split` would change is not canonical: a CR or a byte-order mark.
    if let Some(at) = shared.find(['\r', '\u{feff}']) {
        return Err(SyncTextError::NotShared {
            file: shared_name,
            line: shared[..at].matches('\n').count() + 1,
            reason: "not in the canonical form config sync sends: a carriage return or byte-order mark (the shared text has LF line ends)".into(),
        });
    }
    let mut out = head;
    match syntax {
        SyncSyntax::Appliance => {
            appliance::merge(body, &file, skipped, shared, &shared_name, header, &mut out)?
        }
        SyncSyntax::Toml => {
            toml::merge(body, &file, skipped, shared, &shared_name, header, &mut out)?
        }
    }
    if crlf {
        out = out.replace('\n', "\r\n");
    }
    Ok(out)
}

/// The text without a byte-order mark and with CRLF line ends as LF.
fn normalize(text: &str) -> std::borrow::Cow<'_, str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.contains("\r\n") {
        std::borrow::Cow::Owned(text.replace("\r\n", "\n"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// The header at the top of `text` if it has exactly one, the text after
/// it, and how many lines it took.
fn strip_header(text: &str) -> (Option<SyncHeader>, &str, usize) {
    let mut rest = text;
    let mut lines = [""; 3];
    for l in &mut lines {
        let Some((line, after)) = rest.split_once('\n') else {
            return (None, text, 0);
        };
        *l = line;
        rest = after;
    }
    if lines[1..] != HEADER_TAIL {
        return (None, text, 0);
    }
    match parse_header_line(lines[0]) {
        Some(h) => (Some(h), rest, 3),
        None => (None, text, 0),
    }
}

/// `# sextant config sync: from ORIGIN, incarnation N, DIGEST, at TIME`.
fn parse_header_line(line: &str) -> Option<SyncHeader> {
    let fields = line.strip_prefix(HEADER_PREFIX)?;
    let parts: Vec<&str> = fields.split(", ").collect();
    let [origin, incarnation, digest, at] = parts.as_slice() else {
        return None;
    };
    let incarnation = incarnation.strip_prefix("incarnation ")?.parse().ok()?;
    let at = at.strip_prefix("at ")?;
    if origin.is_empty() || digest.is_empty() || at.is_empty() {
        return None;
    }
    Some(SyncHeader {
        origin: origin.to_string(),
        incarnation,
        digest: digest.to_string(),
        at: at.to_string(),
    })
}

/// The three header lines, each ending in `\n`, or why `h` cannot be
/// written so that it reads back the same.
fn render_header(h: &SyncHeader) -> Result<String, SyncTextError> {
    for (what, value) in [("origin", &h.origin), ("digest", &h.digest), ("at", &h.at)] {
        if value.is_empty() {
            return Err(SyncTextError::Header(format!("{what} is empty")));
        }
        if value.contains(',') || value.chars().any(char::is_control) {
            return Err(SyncTextError::Header(format!(
                "{what} \"{}\" contains a comma or a control character",
                value.escape_debug()
            )));
        }
    }
    Ok(format!(
        "{HEADER_PREFIX}{}, incarnation {}, {}, at {}\n{}\n{}\n",
        h.origin, h.incarnation, h.digest, h.at, HEADER_TAIL[0], HEADER_TAIL[1]
    ))
}

/// Whether `line` (without its line end) is the separator.
fn is_separator(line: &str) -> bool {
    line.trim_end() == SEPARATOR
}

/// `text` as lines with their `\n` (the last one may lack it), each with
/// its byte offset.
fn lines_with_ends(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    text.split_inclusive('\n').map(move |l| {
        let start = at;
        at += l.len();
        (start, l)
    })
}

/// `l` with its line end (`\n`) removed.
fn content(l: &str) -> &str {
    l.strip_suffix('\n').unwrap_or(l)
}

/// Pushes `line` (without its line end) and `\n` to `out`.
fn push_line(out: &mut String, line: &str) {
    out.push_str(line);
    out.push('\n');
}

/// What a syntax's reader found in a text given as a received shared text,
/// and the words it names things with (`commands`/`option`, or
/// `tables`/`key`).
pub(super) struct SharedCheck<'a> {
    /// The canonical shared text `split` makes of it.
    pub shared: &'a str,
    pub separator: Option<usize>,
    pub first_local: Option<&'a (usize, String)>,
    pub first_overlay: Option<&'a (usize, String)>,
    /// How the syntax names its units (`commands`, `tables`) and its
    /// per-node settings (`option`, `key`).
    pub units: &'static str,
    pub setting: &'static str,
}

/// Checks that `text` is a canonical shared text, as `split` gives: no
/// separator, no node's own setting, no per-node overlay, nothing but what
/// `split` would have made of it.
pub(super) fn check_shared(c: &SharedCheck, text: &str, name: &str) -> Result<(), SyncTextError> {
    let err = |line: usize, reason: String| SyncTextError::NotShared {
        file: name.to_string(),
        line,
        reason,
    };
    if let Some(line) = c.separator {
        return Err(err(
            line,
            "the sync separator line belongs to a node's own file, not to a shared text".into(),
        ));
    }
    if let Some((line, what)) = c.first_local {
        return Err(err(
            *line,
            format!(
                "`{what}` is a node's own setting and never travels between parents; a shared text holds only shared {}",
                c.units
            ),
        ));
    }
    if let Some((line, what)) = c.first_overlay {
        return Err(err(
            *line,
            format!(
                "`{what}` is a per-node {} and never travels between parents",
                c.setting
            ),
        ));
    }
    if c.shared != text {
        let line = c
            .shared
            .lines()
            .zip(text.lines())
            .position(|(a, b)| a != b)
            .map_or_else(|| c.shared.lines().count().max(1), |i| i + 1);
        return Err(err(
            line,
            format!(
                "not in the canonical form config sync sends (LF line ends, every line ended, no comment after the last of its {})",
                c.units
            ),
        ));
    }
    Ok(())
}

/// Appends `shared` to `out` with each overlay text inserted at its byte
/// offset in `shared` (the per-node tokens `merge` puts back).
pub(super) fn splice(out: &mut String, shared: &str, mut inserts: Vec<(usize, String)>) {
    inserts.sort_by_key(|(at, _)| *at);
    let mut at = 0;
    for (point, text) in inserts {
        out.push_str(&shared[at..point]);
        out.push_str(&text);
        at = point;
    }
    out.push_str(&shared[at..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h() -> SyncHeader {
        SyncHeader {
            origin: "SiteP1".into(),
            incarnation: 9,
            digest: "sha256:3f2a".into(),
            at: "2026-12-04T11:02:03Z".into(),
        }
    }

    #[test]
    fn header_round_trip() {
        let text = render_header(&h()).expect("renders") + "rest\n";
        let (parsed, rest, n) = strip_header(&text);
        assert_eq!(parsed, Some(h()));
        assert_eq!((rest, n), ("rest\n", 3));
    }

    #[test]
    fn header_needs_all_three_lines() {
        let full = render_header(&h()).expect("renders");
        let first = full.lines().next().expect("a line").to_string() + "\nx\n";
        assert_eq!(strip_header(&first).0, None);
        assert_eq!(strip_header("# sextant config sync: from\n").0, None);
    }

    #[test]
    fn header_fields_that_would_not_read_back_are_refused() {
        let mut bad = h();
        bad.origin = "a, b".into();
        assert!(render_header(&bad).is_err());
        bad.origin = "a\nb".into();
        assert!(render_header(&bad).is_err());
        bad.origin = String::new();
        assert!(render_header(&bad).is_err());
    }

    #[test]
    fn syntax_by_extension() {
        assert_eq!(
            SyncSyntax::of(Path::new("a/b.CONF")),
            Some(SyncSyntax::Appliance)
        );
        assert_eq!(SyncSyntax::of(Path::new("b.toml")), Some(SyncSyntax::Toml));
        assert_eq!(SyncSyntax::of(Path::new("b.txt")), None);
        assert_eq!(SyncSyntax::Toml.as_str(), "toml");
    }
}
