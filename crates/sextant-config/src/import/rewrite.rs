//! One saved line as the words it was written with, edited in place: what
//! is not edited is written exactly as it was (quotes and escapes too).

use crate::lexer::Token;

/// A command line's tokens, each as written.
pub(super) struct Line {
    words: Vec<Word>,
}

struct Word {
    raw: String,
    /// The token's text without quotes (for matching).
    text: String,
    option: bool,
}

impl Line {
    pub(super) fn new(raw: &str, tokens: &[Token]) -> Line {
        Line {
            words: tokens
                .iter()
                .map(|t| Word {
                    raw: raw.get(t.start..t.end).unwrap_or(&t.text).to_string(),
                    text: t.text.to_string(),
                    option: t.is_option(),
                })
                .collect(),
        }
    }

    /// The `i`-th word of the line (0 is the verb), when it is not an
    /// option and comes before the first option.
    pub(super) fn positional(&self, i: usize) -> Option<String> {
        self.words
            .iter()
            .take_while(|w| !w.option)
            .nth(i)
            .map(|w| w.text.clone())
    }

    pub(super) fn set_positional(&mut self, i: usize, value: &str) {
        if let Some(w) = self.words.iter_mut().take_while(|w| !w.option).nth(i) {
            *w = plain(value, false);
        }
    }

    fn find(&self, name: &str) -> Option<usize> {
        self.words
            .iter()
            .position(|w| w.option && w.text[1..].eq_ignore_ascii_case(name))
    }

    pub(super) fn has(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// The value of option `name`, if it is given with one.
    pub(super) fn value(&self, name: &str) -> Option<String> {
        let i = self.find(name)?;
        self.words
            .get(i + 1)
            .filter(|w| !w.option)
            .map(|w| w.text.clone())
    }

    pub(super) fn set_value(&mut self, name: &str, value: &str) {
        if let Some(i) = self.find(name)
            && let Some(w) = self.words.get_mut(i + 1).filter(|w| !w.option)
        {
            *w = plain(value, false);
        }
    }

    /// Removes option `name` and its `values` values.
    pub(super) fn remove_option(&mut self, name: &str, values: usize) {
        if let Some(i) = self.find(name) {
            let end = (i + 1..self.words.len())
                .take(values)
                .take_while(|&j| !self.words[j].option)
                .last()
                .map_or(i + 1, |j| j + 1);
            self.words.drain(i..end);
        }
    }

    /// Every option of the line (without its hyphen) and how many values
    /// follow it.
    pub(super) fn options(&self) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        for (i, w) in self.words.iter().enumerate().filter(|(_, w)| w.option) {
            let values = self.words[i + 1..].iter().take_while(|v| !v.option).count();
            out.push((w.text[1..].to_string(), values));
        }
        out
    }

    pub(super) fn push_option(&mut self, name: &str, value: &str) {
        self.words.push(plain(&format!("-{name}"), true));
        self.words.push(plain(value, false));
    }

    /// The line as written, with the edits.
    pub(super) fn render(&self) -> String {
        self.words
            .iter()
            .map(|w| w.raw.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A word the importer writes: quoted when it would not read back as one.
fn plain(text: &str, option: bool) -> Word {
    let needs_quotes = text.is_empty()
        || text
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '"' | '\'' | '#' | '\\'));
    let raw = if needs_quotes {
        format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        text.to_string()
    };
    Word {
        raw,
        text: text.to_string(),
        option,
    }
}
