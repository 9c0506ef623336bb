//! The documentation's code blocks, read and run: docs that cannot lie.
//!
//! [`Page::read`] takes a Markdown page apart into its fenced code blocks,
//! each with the `<!-- docs-test: ... -->` markers written just before it;
//! [`Page::run`] runs every block that talks to a server against a real
//! `sextant` started by the page itself, in a network namespace of the
//! test's own, and compares the output the page shows with what the
//! commands print, after [`normalize`]. `crates/sextant/tests/docs_commands.rs`
//! runs README.md and every docs/*.md page this way.
//!
//! # The marker language
//!
//! A marker is one HTML comment line (invisible in the rendered page) just
//! before a fenced block (only blank lines and other markers between):
//!
//! ```text
//! <!-- docs-test: DIRECTIVE; DIRECTIVE ... -->
//! ```
//!
//! Directives are separated by `;` (so a reason holds none); an unknown
//! one, or a marker no block follows, is an error naming its line.
//!
//! * `skip: REASON` — the block is not run, for the reason given (it needs
//!   two hosts, systemd, a package install...). A reason is required.
//! * `file: NAME` — the block is a file the page's commands use (a
//!   configuration, a token file): it is written as `NAME` into the page's
//!   working directory. The block is not run.
//! * `start: ARGS` — before the block runs, `sextant ARGS` is started in
//!   the page's working directory as the page's server (stopping the one
//!   started before), and the block runs once its API answers
//!   `GET /v1/ready` with 200 at the `--api-listen` address ARGS gives,
//!   else 127.0.0.1:8053 (`ready: IP:PORT` says another).
//! * `ready: IP:PORT` — see `start`.
//! * `run` — the block runs although no command in it talks to a server
//!   (`sextant check FILE`, `sextant dnssec keygen`).
//! * `env: NAME=VALUE` — sets a variable for the page's commands from then
//!   on (what the reader's shell would already hold).
//! * `copy: PATH` — copies the repository's file PATH (or the files of the
//!   directory PATH) into the page's working directory under its last name
//!   (`copy: tests/appliance-configs/lb-health` makes `lb-health/...`).
//! * `token: NAME` — sets the variable NAME to the API token of the page's
//!   server, as the page tells the reader to: the token `sextant demo`
//!   prints (`API token: ...`), else the first one of the file the `start`
//!   line's `--api-token-file` names.
//!
//! A block with a command that talks to a server (`curl`, `dig`, `delv`,
//! `sextant cli`, `sextant explain`, `sextant check`, `sextant dnssec`,
//! `sextant serve`, `sextant demo`, `sextant import`) runs unless it is
//! marked `skip`; a page whose such block runs before any `start` fails.
//!
//! # How a block runs
//!
//! * Commands are the `$ CMD` lines, each followed by the output the page
//!   shows for it (until the next `$ ` line); in a block without `$ `
//!   lines, every line that is not blank or a `#` comment is a command and
//!   no output is shown. A line ending in `\` goes on on the next.
//! * Each block runs in one `bash` in the page's working directory (where
//!   `examples/` is the repository's), inside
//!   the page's network namespace, with the `sextant` under test first on
//!   PATH. Variables a block sets stay set for the page's later blocks.
//!   The addresses are the page's own: in the namespace, 127.0.0.0/8 is the
//!   page's alone, so **no address or port is rewritten**; the command as
//!   written is what runs.
//! * `curl` runs as at a terminal: no progress meter (`.curlrc`: silent,
//!   show-error), as curl draws one only when its output is not a terminal.
//! * The working directory's path is taken out of what the commands print
//!   (`/tmp/sextant-e2e-.../site.conf` reads `site.conf`), as the reader's
//!   own directory would read.
//! * A command whose output the page shows must print that output, after
//!   [`normalize`] on both sides; a line `...` in the page stands for any
//!   number of lines. A command whose output the page does not show must
//!   exit 0 and print no API error (`{"error":`).
//! * `DOCS_UPDATE=1` rewrites each shown output that differs with what the
//!   command printed (read the diff: a `...` of a rewritten output is gone).
//! * Each block has 60 s; what it leaves running (`&`) is killed by process
//!   group with the page's server when the page is done.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::net::SocketAddr;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::netns::Netns;

/// A fenced code block of a page.
#[derive(Debug, Clone)]
pub struct Block {
    /// The line of the opening fence (1-based).
    pub line: usize,
    /// The fence's info string (`sh`, `text`, empty...).
    pub lang: String,
    /// The block's text, its indentation removed, with a final newline.
    pub text: String,
    /// The directives of the markers before it, in order.
    pub directives: Vec<Directive>,
}

/// One directive of a `<!-- docs-test: ... -->` marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    Skip(String),
    File(String),
    Start(String),
    Ready(SocketAddr),
    Run,
    Env(String, String),
    Token(String),
    Copy(String),
}

/// A command of a block, with the output the page shows for it (None
/// where it shows none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub command: String,
    pub line: usize,
    pub output: Option<String>,
}

/// A page, taken apart.
#[derive(Debug)]
pub struct Page {
    pub name: String,
    pub blocks: Vec<Block>,
}

const MARKER: &str = "<!-- docs-test:";

/// The programs whose commands talk to a server (or are `sextant`'s
/// commands a reader runs against one): a block using one runs, or says
/// why not.
const TALKERS: &[&str] = &["curl", "dig", "delv"];
const SEXTANT_TALKERS: &[&str] = &[
    "cli", "explain", "check", "dnssec", "serve", "demo", "import",
];

impl Page {
    /// Reads `path`, named `name` in what it reports (`docs/cli.md`); a
    /// marker that cannot be parsed, or that no block follows, is an error
    /// naming its line.
    pub fn read(path: &Path, name: &str) -> Result<Page, String> {
        let text = fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
        let mut blocks = Vec::new();
        let mut pending: Vec<(usize, Directive)> = Vec::new();
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let l = lines[i];
            let t = l.trim_start();
            if let Some(rest) = t.strip_prefix(MARKER) {
                let body = rest.trim_end().strip_suffix("-->").ok_or_else(|| {
                    format!(
                        "{name}:{}: a docs-test marker is one line ending in -->",
                        i + 1
                    )
                })?;
                for d in body.split(';').map(str::trim).filter(|d| !d.is_empty()) {
                    pending.push((
                        i + 1,
                        parse_directive(d).map_err(|e| format!("{name}:{}: {e}", i + 1))?,
                    ));
                }
            } else if let Some(info) = t.strip_prefix("```") {
                let indent = l.len() - t.len();
                let start = i + 1;
                let mut body = String::new();
                i += 1;
                while i < lines.len() && lines[i].trim() != "```" {
                    let raw = lines[i];
                    let cut = raw.len() - raw.trim_start().len();
                    body += &raw[cut.min(indent)..];
                    body.push('\n');
                    i += 1;
                }
                if i == lines.len() {
                    return Err(format!("{name}:{start}: a code block that is never closed"));
                }
                blocks.push(Block {
                    line: start,
                    lang: info.trim().to_string(),
                    text: body,
                    directives: pending.drain(..).map(|(_, d)| d).collect(),
                });
            } else if !t.is_empty() && !pending.is_empty() {
                return Err(format!(
                    "{name}:{}: a docs-test marker must be followed by a code block (only blank lines between)",
                    pending[0].0
                ));
            }
            i += 1;
        }
        if let Some((line, _)) = pending.first() {
            return Err(format!(
                "{name}:{line}: a docs-test marker after the last code block"
            ));
        }
        Ok(Page {
            name: name.to_string(),
            blocks,
        })
    }
}

fn parse_directive(d: &str) -> Result<Directive, String> {
    let (key, value) = match d.split_once(':') {
        Some((k, v)) => (k.trim(), v.trim()),
        None => (d, ""),
    };
    let need = |what: &str| {
        if value.is_empty() {
            Err(format!("`{key}:` needs {what}"))
        } else {
            Ok(value.to_string())
        }
    };
    Ok(match key {
        "skip" => Directive::Skip(need("a reason")?),
        "file" => Directive::File(need("a file name")?),
        "start" => Directive::Start(need("the sextant command's arguments")?),
        "ready" => Directive::Ready(
            need("IP:PORT")?
                .parse()
                .map_err(|e| format!("`ready: {value}`: {e}"))?,
        ),
        "run" if value.is_empty() => Directive::Run,
        "token" => Directive::Token(need("a variable name")?),
        "copy" => Directive::Copy(need("a path in the repository")?),
        "env" => {
            let v = need("NAME=VALUE")?;
            let (n, v) = v
                .split_once('=')
                .ok_or_else(|| format!("`env: {value}`: NAME=VALUE"))?;
            Directive::Env(n.trim().to_string(), v.trim().to_string())
        }
        _ => {
            return Err(format!(
                "unknown docs-test directive `{d}` (skip: REASON, file: NAME, start: ARGS, ready: IP:PORT, run, env: NAME=VALUE, token: NAME, copy: PATH)"
            ));
        }
    })
}

impl Block {
    /// Whether its info string says it is data, not commands.
    fn is_data(&self) -> bool {
        matches!(self.lang.as_str(), "json" | "toml" | "ini" | "yaml")
    }

    /// The commands and the output shown for each.
    pub fn commands(&self) -> Vec<Shown> {
        let lines: Vec<&str> = self.text.lines().collect();
        let prompted = lines.iter().any(|l| l.starts_with("$ "));
        let mut out: Vec<Shown> = Vec::new();
        let mut i = 0;
        while i < lines.len() {
            let l = lines[i];
            let at = self.line + 1 + i;
            let cmd = if prompted {
                l.strip_prefix("$ ")
            } else if l.trim().is_empty() || l.trim_start().starts_with('#') {
                None
            } else {
                Some(l)
            };
            match cmd {
                Some(c) => {
                    let mut command = c.to_string();
                    while command.ends_with('\\') && i + 1 < lines.len() {
                        i += 1;
                        command.push('\n');
                        command += lines[i];
                    }
                    out.push(Shown {
                        command,
                        line: at,
                        output: None,
                    });
                }
                None if prompted => {
                    if let Some(last) = out.last_mut() {
                        let o = last.output.get_or_insert_with(String::new);
                        *o += l;
                        o.push('\n');
                    }
                }
                None => {}
            }
            i += 1;
        }
        for s in &mut out {
            if s.output.as_deref().is_some_and(|o| o.trim().is_empty()) {
                s.output = None;
            }
        }
        out
    }

    /// Whether a command of the block talks to a server.
    pub fn talks_to_a_server(&self) -> bool {
        !self.is_data() && self.commands().iter().any(|c| talks(&c.command))
    }

    /// Whether [`Page::run`] runs it: not skipped, and talking to a
    /// server or marked `run` or `start`.
    pub fn runs(&self) -> bool {
        self.skip().is_none()
            && (self.talks_to_a_server()
                || self
                    .directives
                    .iter()
                    .any(|d| matches!(d, Directive::Run | Directive::Start(_))))
    }

    fn skip(&self) -> Option<&str> {
        self.directives.iter().find_map(|d| match d {
            Directive::Skip(r) => Some(r.as_str()),
            _ => None,
        })
    }
}

/// Whether a command line runs a program that talks to a server: the
/// first word of one of its simple commands (after `|`, `;`, `&`, `(`,
/// `do`, `then`, variable assignments and `sudo`), so that a block of
/// text that merely names one is not taken for a command.
fn talks(command: &str) -> bool {
    let spaced = command.replace(['|', ';', '&', '(', ')'], " ; ");
    let words: Vec<&str> = spaced.split_whitespace().collect();
    let mut first = true;
    for (i, w) in words.iter().enumerate() {
        if matches!(*w, ";" | "do" | "then" | "else" | "sudo" | "$" | "#") {
            first = true;
            continue;
        }
        if first && w.contains('=') && !w.starts_with('-') {
            continue; // NAME=VALUE before the command
        }
        if first
            && (TALKERS.contains(w)
                || (*w == "sextant"
                    && words
                        .get(i + 1)
                        .is_some_and(|s| SEXTANT_TALKERS.contains(s))))
        {
            return true;
        }
        first = false;
    }
    false
}

/// What differs from run to run, made equal on both sides of a comparison:
///
/// * each RFC 3339 time (`2026-12-07T21:09:22.662Z`) becomes `<time>`;
/// * a duration in milliseconds (`3.2ms`, `2.0 ms`) becomes `<ms>`;
/// * a date (`2026-12-04`) becomes `<date>`, and a run of 12 or more hex
///   digits with a letter and a digit among them (a commit, a token, a
///   digest) `<hex>`;
/// * an HTTP `date:` header's value becomes `<date>`, and CRLF line
///   ends (curl -i's headers) LF;
/// * runs of blanks become one blank (a table's columns widen with what
///   they hold), and blanks at a line's end go.
pub fn normalize(s: &str) -> String {
    let s = normalize_hex_and_dates(&normalize_times(&s.replace("\r\n", "\n")));
    let mut out = String::with_capacity(s.len());
    // Line by line, so that line ends stay where they are.
    for line in s.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if body.to_ascii_lowercase().starts_with("date: ") {
            out += "date: <date>";
            out += end;
            continue;
        }
        let dns = normalize_dns_line(body);
        let body = dns.as_deref().unwrap_or(body);
        let words: Vec<&str> = body.split(' ').filter(|w| !w.is_empty()).collect();
        let mut kept: Vec<String> = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let w = words[i];
            let number =
                |x: &str| !x.is_empty() && x.chars().all(|c| c.is_ascii_digit() || c == '.');
            if let Some(n) = w.strip_suffix("ms")
                && number(n)
            {
                kept.push("<ms>".to_string());
            } else if number(w) && words.get(i + 1) == Some(&"ms") {
                kept.push("<ms>".to_string());
                i += 1;
            } else {
                kept.push(w.to_string());
            }
            i += 1;
        }
        out += &kept.join(" ");
        out += end;
    }
    out
}

/// A line of dig or delv output whose parts change on every run, made
/// stable: an RRSIG's validity times and signature (they depend on when it
/// was made, and ECDSA signatures are randomised) and dig's message id.
/// `None` when the line has neither.
fn normalize_dns_line(line: &str) -> Option<String> {
    if let Some(at) = line.find("->>HEADER<<-")
        && let Some(id) = line[at..].find("id: ")
    {
        let start = at + id + "id: ".len();
        let digits = line[start..]
            .chars()
            .take_while(char::is_ascii_digit)
            .count();
        if digits > 0 {
            return Some(format!("{}<id>{}", &line[..start], &line[start + digits..]));
        }
    }
    let words: Vec<&str> = line.split_whitespace().collect();
    let time = |w: Option<&&str>| {
        w.is_some_and(|w| w.len() == 14 && w.chars().all(|c| c.is_ascii_digit()))
    };
    // RRSIG TYPE ALGORITHM LABELS TTL EXPIRATION INCEPTION TAG SIGNER SIGNATURE...
    let at = words
        .iter()
        .position(|w| *w == "RRSIG")
        .filter(|&i| time(words.get(i + 5)) && time(words.get(i + 6)) && words.len() > i + 9)?;
    let mut kept: Vec<&str> = words[..at + 5].to_vec();
    kept.extend(["<dnstime>", "<dnstime>"]);
    kept.extend(&words[at + 7..at + 9]);
    kept.push("<signature>");
    Some(kept.join(" "))
}

fn normalize_hex_and_dates(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let word = |c: char| c.is_ascii_alphanumeric();
    while i < chars.len() {
        let boundary = i == 0 || !word(chars[i - 1]);
        if boundary {
            let mut j = i;
            while j < chars.len() && chars[j].is_ascii_hexdigit() && !chars[j].is_ascii_uppercase()
            {
                j += 1;
            }
            let run = &chars[i..j];
            if run.len() >= 12
                && (j == chars.len() || !word(chars[j]))
                && run.iter().any(char::is_ascii_digit)
                && run.iter().any(char::is_ascii_alphabetic)
            {
                out.push_str("<hex>");
                i = j;
                continue;
            }
            let date = chars.get(i..i + 10).is_some_and(|d| {
                d.iter().enumerate().all(|(k, c)| {
                    if k == 4 || k == 7 {
                        *c == '-'
                    } else {
                        c.is_ascii_digit()
                    }
                })
            }) && chars.get(i + 10).is_none_or(|c| !word(*c));
            if date {
                out.push_str("<date>");
                i += 10;
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

fn normalize_times(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let shape = |j: usize| -> Option<usize> {
        // YYYY-MM-DDTHH:MM:SS
        let pat = b"dddd-dd-ddTdd:dd:dd";
        if j + pat.len() > b.len() {
            return None;
        }
        for (k, p) in pat.iter().enumerate() {
            let c = b[j + k];
            let ok = if *p == b'd' {
                c.is_ascii_digit()
            } else {
                c == *p
            };
            if !ok {
                return None;
            }
        }
        let mut end = j + pat.len();
        if b.get(end) == Some(&b'.') {
            end += 1;
            while b.get(end).is_some_and(u8::is_ascii_digit) {
                end += 1;
            }
        }
        (b.get(end) == Some(&b'Z')).then_some(end + 1)
    };
    while i < b.len() {
        if let Some(end) = shape(i) {
            out.push_str("<time>");
            i = end;
        } else {
            let c = s[i..].chars().next().expect("a char");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Whether `actual` is what `shown` shows, after [`normalize`]: line by
/// line, a shown line `...` standing for any number of lines. Leading and
/// trailing blank lines do not count.
pub fn shows(shown: &str, actual: &str) -> bool {
    let norm = |s: &str| -> Vec<String> {
        normalize(s)
            .trim_matches('\n')
            .lines()
            .map(|l| l.trim_end().to_string())
            .collect()
    };
    let (want, got) = (norm(shown), norm(actual));
    matches(&want, &got)
}

fn matches(want: &[String], got: &[String]) -> bool {
    match want.split_first() {
        None => got.is_empty(),
        Some((w, rest)) if w == "..." => (0..=got.len()).any(|k| matches(rest, &got[k..])),
        Some((w, rest)) => got.first().is_some_and(|g| g == w) && matches(rest, &got[1..]),
    }
}

/// What running a page found: one entry per problem, each naming its
/// `FILE:LINE`.
#[derive(Debug, Default)]
pub struct Report {
    pub ran: usize,
    pub commands: usize,
    pub skipped: Vec<(usize, String)>,
    pub problems: Vec<String>,
    /// Shown outputs that differ: (first line of the shown output, its
    /// number of lines, what the command printed), for [`Page::update`].
    pub differing: Vec<(usize, usize, String)>,
}

impl Page {
    /// Every block that talks to a server (or is marked `run`), run in
    /// the namespace `ns` with `bin` as `sextant`, in the working
    /// directory `dir` (where `examples` is the repository `repo`'s).
    pub fn run(&self, ns: &Arc<Netns>, bin: &str, dir: &Path, repo: &Path) -> Report {
        let name = self.name.clone();
        let mut report = Report::default();
        let path_dir = dir.join(".docs-bin");
        fs::create_dir_all(&path_dir).expect("create the PATH directory");
        let _ = fs::remove_file(path_dir.join("sextant"));
        std::os::unix::fs::symlink(bin, path_dir.join("sextant")).expect("link sextant");
        fs::write(path_dir.join(".curlrc"), "silent\nshow-error\n").expect("write .curlrc");
        // The repository's examples, as the pages name them
        // (`sextant check examples/sextant.conf`).
        let _ = std::os::unix::fs::symlink(repo.join("examples"), dir.join("examples"));
        let env_file = dir.join(".docs-env");
        let mut env: BTreeMap<String, String> = BTreeMap::new();
        let mut server: Option<Started> = None;
        for block in &self.blocks {
            let at = format!("{name}:{}", block.line);
            if let Some(reason) = block.skip() {
                report.skipped.push((block.line, reason.to_string()));
                continue;
            }
            let mut ready: Option<SocketAddr> = None;
            let mut start: Option<&str> = None;
            let mut run = false;
            let mut token: Option<&str> = None;
            for d in &block.directives {
                match d {
                    Directive::File(f) => {
                        // Mode 0600: a token file must be (the server
                        // refuses one others can read).
                        write_private(&dir.join(f), &block.text)
                            .unwrap_or_else(|e| panic!("{at}: write {f}: {e}"));
                    }
                    Directive::Start(a) => start = Some(a),
                    Directive::Ready(a) => ready = Some(*a),
                    Directive::Run => run = true,
                    Directive::Env(k, v) => {
                        env.insert(k.clone(), v.clone());
                    }
                    Directive::Token(n) => token = Some(n),
                    Directive::Copy(from) => {
                        if let Err(e) = copy_in(&repo.join(from), dir) {
                            report.problems.push(format!("{at}: `copy: {from}`: {e}"));
                        }
                    }
                    Directive::Skip(_) => {}
                }
            }
            if block
                .directives
                .iter()
                .any(|d| matches!(d, Directive::File(_)))
            {
                continue;
            }
            if let Some(args) = start {
                if let Some(s) = server.take() {
                    s.stop();
                }
                match Started::start(ns, &path_dir, dir, args, ready) {
                    Ok(s) => {
                        if let Some(n) = token {
                            match s.token(dir, args) {
                                Some(t) => {
                                    env.insert(n.to_string(), t);
                                }
                                None => report.problems.push(format!(
                                    "{at}: `token: {n}`: the server printed no `API token:` and its --api-token-file has no token"
                                )),
                            }
                        }
                        server = Some(s);
                    }
                    Err(e) => {
                        report.problems.push(format!("{at}: `sextant {args}`: {e}"));
                        continue;
                    }
                }
            }
            if !(run || block.talks_to_a_server()) {
                continue;
            }
            if server.is_none() && !run {
                report.problems.push(format!(
                    "{at}: this block talks to a server, but the page starts none before it (add <!-- docs-test: start: ARGS --> before it, or <!-- docs-test: skip: REASON -->)"
                ));
                continue;
            }
            report.ran += 1;
            let commands = block.commands();
            report.commands += commands.len();
            match run_block(ns, &path_dir, dir, &env_file, &env, &commands) {
                Ok(outputs) => {
                    let own = format!("{}/", dir.display());
                    for (c, mut got) in commands.iter().zip(outputs) {
                        // Paths in the working directory read as the
                        // reader's own (`site.conf`).
                        got.text = got.text.replace(&own, "");
                        if check(&name, c, &got, &mut report.problems)
                            && let Some(shown) = &c.output
                        {
                            report.differing.push((
                                c.line + c.command.lines().count(),
                                shown.lines().count(),
                                got.text.clone(),
                            ));
                        }
                    }
                }
                Err(e) => report.problems.push(format!("{at}: {e}")),
            }
        }
        if let Some(s) = server.take() {
            s.stop();
        }
        report
    }
}

/// What one command printed and how it exited.
#[derive(Debug)]
struct Output {
    text: String,
    status: Option<i32>,
}

/// Adds a problem when `got` is not what the page shows for `c`; true
/// when a shown output differs.
fn check(page: &str, c: &Shown, got: &Output, problems: &mut Vec<String>) -> bool {
    let at = format!("{page}:{}", c.line);
    match &c.output {
        Some(shown) => {
            if !shows(shown, &got.text) {
                problems.push(format!(
                    "{at}: `{}` printed what the page does not show\n--- page shows ---\n{}--- it printed (exit {:?}) ---\n{}",
                    c.command, shown, got.status, got.text
                ));
                return true;
            }
        }
        None => {
            if got.status != Some(0) || got.text.contains("{\"error\":") {
                let how = match got.status {
                    Some(0) => "answered an API error".to_string(),
                    Some(n) => format!("exited {n}"),
                    None => "was killed".to_string(),
                };
                problems.push(format!(
                    "{at}: `{}` {how}, and the page shows no output for it:\n{}",
                    c.command, got.text
                ));
            }
        }
    }
    false
}

/// Copies the file `from`, or the files of the directory `from`, into
/// `dir` under `from`'s last name.
fn copy_in(from: &Path, dir: &Path) -> std::io::Result<()> {
    let name = from
        .file_name()
        .ok_or_else(|| std::io::Error::other("a path with no last name"))?;
    if from.is_dir() {
        let to = dir.join(name);
        fs::create_dir_all(&to)?;
        for e in fs::read_dir(from)? {
            let e = e?;
            if e.file_type()?.is_file() {
                fs::copy(e.path(), to.join(e.file_name()))?;
            }
        }
        Ok(())
    } else {
        fs::copy(from, dir.join(name)).map(|_| ())
    }
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let _ = fs::remove_file(path);
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?
        .write_all(text.as_bytes())
}

impl Page {
    /// Rewrites the page at `path` with what the commands printed where
    /// it showed something else (`DOCS_UPDATE=1`): read the diff before
    /// committing it (a `...` line of a changed output is gone).
    pub fn update(&self, path: &Path, report: &Report) -> std::io::Result<()> {
        let text = fs::read_to_string(path)?;
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let mut changes = report.differing.clone();
        changes.sort_by_key(|c| std::cmp::Reverse(c.0));
        for (first, count, new) in changes {
            // `first` is 1-based; the shown output's blank tail stays.
            let start = first - 1;
            let end = (start + count).min(lines.len());
            let kept_blank = lines[start..end]
                .iter()
                .rev()
                .take_while(|l| l.trim().is_empty())
                .count();
            let new = new.replace("\r\n", "\n");
            let mut new_lines: Vec<String> = new
                .trim_end_matches('\n')
                .lines()
                .map(str::to_string)
                .collect();
            new_lines.extend(std::iter::repeat_n(String::new(), kept_blank));
            lines.splice(start..end, new_lines);
        }
        let mut out = lines.join("\n");
        out.push('\n');
        fs::write(path, out)
    }
}

const SEP: &str = "@@docs-test-end-of-command@@";
const BLOCK_DEADLINE: Duration = Duration::from_secs(60);

/// Runs the block's commands in one bash; returns each one's output.
fn run_block(
    ns: &Netns,
    path_dir: &Path,
    dir: &Path,
    env_file: &Path,
    env: &BTreeMap<String, String>,
    commands: &[Shown],
) -> Result<Vec<Output>, String> {
    let mut script = String::from("set -a\n");
    let _ = writeln!(script, "[ -f {0} ] && . {0}", shell_quote(env_file));
    for (k, v) in env {
        let _ = writeln!(script, "{k}={}", shell_quote_str(v));
    }
    for c in commands {
        // The separator keeps the command's status for the next one's `$?`.
        let _ = writeln!(
            script,
            "{}\n__docs_status=$?\nprintf '\\n{SEP} %s\\n' \"$__docs_status\"\n(exit $__docs_status)",
            c.command
        );
    }
    let _ = writeln!(script, "export -p > {}", shell_quote(env_file));
    let log = dir.join(".docs-output");
    let file = fs::File::create(&log).map_err(|e| format!("create {}: {e}", log.display()))?;
    let mut child = in_ns(ns, path_dir, dir)
        .args(["bash", "-c", &script])
        .stdin(Stdio::null())
        .stdout(file.try_clone().map_err(|e| e.to_string())?)
        .stderr(file)
        .spawn()
        .map_err(|e| format!("spawn bash: {e}"))?;
    let end = Instant::now() + BLOCK_DEADLINE;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break Some(s);
        }
        if Instant::now() > end {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // What the block left running (`cmd &`) goes with its process group.
    kill_group(child.id());
    let _ = child.wait();
    let text = fs::read_to_string(&log).map_err(|e| format!("read {}: {e}", log.display()))?;
    let mut outputs = Vec::new();
    let mut rest = text.as_str();
    for _ in commands {
        let Some(k) = rest.find(&format!("\n{SEP} ")) else {
            break;
        };
        let out = &rest[..k];
        let after = &rest[k + SEP.len() + 2..];
        let (code, tail) = after.split_once('\n').unwrap_or((after, ""));
        outputs.push(Output {
            text: out.to_string(),
            status: code.trim().parse().ok(),
        });
        rest = tail;
    }
    if outputs.len() < commands.len() {
        let which = &commands[outputs.len()];
        return Err(format!(
            "line {}: `{}` {} (what it printed: {rest})",
            which.line,
            which.command,
            if status.is_none() {
                "did not finish within 60 s"
            } else {
                "ended the block's shell"
            }
        ));
    }
    Ok(outputs)
}

/// `ip netns exec NS` in `dir`, with `path_dir` first on PATH, in a
/// process group of its own.
fn in_ns(ns: &Netns, path_dir: &Path, dir: &Path) -> Command {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &ns.name])
        .current_dir(dir)
        .env(
            "PATH",
            format!(
                "{}:{}",
                path_dir.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env_remove("SEXTANT_API_TOKEN")
        // curl as at a terminal: no progress meter (curl draws one on
        // stderr only when its output is not a terminal).
        .env("CURL_HOME", path_dir)
        .process_group(0);
    cmd
}

fn kill_group(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        // SAFETY: kill(2) of the process group this test made for the
        // child (process_group(0)); it has no memory effects here.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

fn shell_quote(p: &Path) -> String {
    shell_quote_str(&p.display().to_string())
}

fn shell_quote_str(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The page's server: `sextant ARGS` in the namespace.
struct Started {
    child: Child,
    log: PathBuf,
}

const READY_DEADLINE: Duration = Duration::from_secs(30);

impl Started {
    fn start(
        ns: &Netns,
        path_dir: &Path,
        dir: &Path,
        args: &str,
        ready: Option<SocketAddr>,
    ) -> Result<Started, String> {
        let log = dir.join(".docs-server.log");
        let file = fs::File::create(&log).map_err(|e| e.to_string())?;
        let words: Vec<&str> = args.split_whitespace().collect();
        let api = ready
            .or_else(|| {
                words
                    .iter()
                    .position(|w| *w == "--api-listen")
                    .and_then(|i| words.get(i + 1))
                    .and_then(|a| a.parse().ok())
            })
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8053)));
        // The server reads its standard input (`sextant demo` takes
        // commands there): an open pipe nobody writes, not /dev/null.
        let mut child = in_ns(ns, path_dir, dir)
            .arg("sextant")
            .args(&words)
            .stdin(Stdio::piped())
            .stdout(file.try_clone().map_err(|e| e.to_string())?)
            .stderr(file)
            .spawn()
            .map_err(|e| format!("spawn: {e}"))?;
        let end = Instant::now() + READY_DEADLINE;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!(
                    "exited ({status}) before it was ready:\n{}",
                    fs::read_to_string(&log).unwrap_or_default()
                ));
            }
            let ok = ns.run(|| {
                crate::http::http_get_within(api, "/v1/ready", Duration::from_millis(500))
                    .is_ok_and(|(code, _)| code == 200)
            });
            if ok {
                return Ok(Started { child, log });
            }
            if Instant::now() > end {
                let s = Started { child, log };
                let text = fs::read_to_string(&s.log).unwrap_or_default();
                s.stop();
                return Err(format!(
                    "GET http://{api}/v1/ready did not answer 200 within 30 s:\n{text}"
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The token the server printed (`API token: T`), else the first of
    /// its `--api-token-file` (lines `NAME TOKEN`).
    fn token(&self, dir: &Path, args: &str) -> Option<String> {
        let log = fs::read_to_string(&self.log).unwrap_or_default();
        if let Some(t) = log
            .lines()
            .find_map(|l| l.strip_prefix("API token: "))
            .and_then(|r| r.split_whitespace().next())
        {
            return Some(t.to_string());
        }
        let words: Vec<&str> = args.split_whitespace().collect();
        let file = words
            .iter()
            .position(|w| *w == "--api-token-file")
            .and_then(|i| words.get(i + 1))?;
        let text = fs::read_to_string(dir.join(file)).ok()?;
        text.lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .and_then(|l| l.split_whitespace().nth(1))
            .map(str::to_string)
    }

    /// Ends the server (by its process group; see the Drop below).
    fn stop(self) {}
}

impl Drop for Started {
    /// A page that panics half-way leaves no server behind.
    fn drop(&mut self) {
        kill_group(self.child.id());
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(text: &str) -> Block {
        Block {
            line: 10,
            lang: String::new(),
            text: text.to_string(),
            directives: vec![],
        }
    }

    #[test]
    fn signatures_and_message_ids_are_normalised_and_nothing_else() {
        let a = "app.example.com.\t30\tIN\tRRSIG\tA 13 3 30 20261221054903 20261207233146 12408 example.com. YI2GLCgg P8ZHvz==\n\
                 ;; ->>HEADER<<- opcode: QUERY, status: NOERROR, id: 32173\n";
        let b = "app.example.com. 30 IN RRSIG A 13 3 30 20261222000000 20261208000000 12408 example.com. AbCd EfGh==\n\
                 ;; ->>HEADER<<- opcode: QUERY, status: NOERROR, id: 7\n";
        assert_eq!(normalize(a), normalize(b));
        // Another key, type, signer or status is a difference.
        for other in [
            b.replace("12408", "12409"),
            b.replace("RRSIG A ", "RRSIG AAAA "),
            b.replace("example.com. AbCd", "example.net. AbCd"),
            b.replace("NOERROR", "NXDOMAIN"),
        ] {
            assert_ne!(normalize(a), normalize(&other), "{other}");
        }
        // An NSEC's type list naming RRSIG is left alone.
        let nsec = "x.example.com. 5 IN NSEC \\000.x.example.com. RRSIG NSEC TYPE128\n";
        assert_eq!(normalize(nsec), nsec);
    }

    #[test]
    fn prompted_blocks_pair_commands_with_their_output() {
        let b = block("$ curl -s x \\\n  -d y\n{\"a\":1}\n$ dig z\n");
        assert_eq!(
            b.commands(),
            vec![
                Shown {
                    command: "curl -s x \\\n  -d y".to_string(),
                    line: 11,
                    output: Some("{\"a\":1}\n".to_string())
                },
                Shown {
                    command: "dig z".to_string(),
                    line: 14,
                    output: None
                },
            ]
        );
        assert!(b.talks_to_a_server());
    }

    #[test]
    fn plain_blocks_are_commands_without_output() {
        let b = block("# a comment\ncargo bench\n\nscripts/test.sh\n");
        let c = b.commands();
        assert_eq!(c.len(), 2);
        assert!(c.iter().all(|c| c.output.is_none()));
        assert!(!b.talks_to_a_server());
        assert!(block("for i in 1 2; do dig +short x; done\n").talks_to_a_server());
        assert!(block("sextant cli show gslb site\n").talks_to_a_server());
        assert!(!block("add gslb site a 1.2.3.4\n").talks_to_a_server());
        assert!(!block("crates/\n  sextant-cli/  `sextant check` and dig\n").talks_to_a_server());
        assert!(block("TOKEN=x curl -s 127.0.0.1:8053/v1/status\n").talks_to_a_server());
        assert!(block("$ echo x | sextant cli\n").talks_to_a_server());
    }

    #[test]
    fn ellipsis_and_normalisation() {
        assert!(shows("a\n...\nz\n", "a\nb\nc\nz\n"));
        assert!(shows("a\n...\nz\n", "a\nz\n"));
        assert!(!shows("a\nz\n", "a\nb\nz\n"));
        assert!(shows(
            "x  at 2026-12-07T21:09:22.662Z took 3.2ms\n",
            "x at 2027-01-01T00:00:00Z took 12 ms\n"
        ));
        assert!(shows(
            "commit=\"5a7f76e72c21\",build_date=\"2026-12-04\" id 1796374652059\n",
            "commit=\"8d26bad66726\",build_date=\"2026-12-08\" id 1796374652059\n"
        ));
        assert!(!shows("id 1796374652059\n", "id 1796374652058\n"));
    }

    #[test]
    fn markers_are_parsed_and_bad_ones_named() {
        let dir = crate::scratch::Scratch::new("docs_markers");
        let good = dir.write(
            "good.md",
            "text\n\n<!-- docs-test: file: a.conf -->\n<!-- docs-test: start: serve --config a.conf; ready: 127.0.0.1:80 -->\n\n```\nx\n```\n",
        );
        let p = Page::read(Path::new(&good), "good.md").expect("parses");
        assert_eq!(
            p.blocks[0].directives,
            vec![
                Directive::File("a.conf".into()),
                Directive::Start("serve --config a.conf".into()),
                Directive::Ready("127.0.0.1:80".parse().unwrap())
            ]
        );
        let bad = dir.write("bad.md", "<!-- docs-test: skp: x -->\n```\nx\n```\n");
        let e = Page::read(Path::new(&bad), "bad.md").unwrap_err();
        assert!(e.contains("bad.md:1: unknown docs-test directive"), "{e}");
        let orphan = dir.write("orphan.md", "<!-- docs-test: run -->\ntext\n```\nx\n```\n");
        let e = Page::read(Path::new(&orphan), "orphan.md").unwrap_err();
        assert!(
            e.contains("orphan.md:1: a docs-test marker must be followed"),
            "{e}"
        );
        let noreason = dir.write("noreason.md", "<!-- docs-test: skip -->\n```\nx\n```\n");
        let e = Page::read(Path::new(&noreason), "noreason.md").unwrap_err();
        assert!(e.contains("noreason.md:1: `skip:` needs a reason"), "{e}");
    }
}
