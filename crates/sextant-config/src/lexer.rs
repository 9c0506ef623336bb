//! Splits one line of appliance syntax into tokens.
//!
//! Rules (the appliance CLI's, as far as a file needs them):
//! - tokens are separated by spaces or tabs;
//! - `"..."` quotes a token; inside it `\"` is a quote, `\\` a backslash,
//!   `\r`, `\n` and `\t` are CR, LF and tab, and `\NNN` (three octal
//!   digits) is that control character: the appliance writes control
//!   characters in saved files this way (`-customHeaders "Host: a\r\n"`).
//!   Any other backslash is kept as written (so `"\d+"` stays `\d+`, as
//!   regular expressions and policy expressions need);
//! - `'...'` quotes a token literally, without escapes;
//! - quoted and unquoted parts next to each other form one token (`a"b c"`);
//! - `#` at the start of a token, outside quotes, starts a comment that runs
//!   to the end of the line (a `#` inside a word, as in `vs#1`, is part of
//!   the word: appliance names may contain `#`).

use std::borrow::Cow;

/// One word of a command line. Its text borrows from the line unless
/// quoting changed it (a file of 100,000 services has millions of words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token<'a> {
    pub text: Cow<'a, str>,
    /// Any part of the token was quoted: it is a value, never an option.
    pub quoted: bool,
    /// Byte offsets of the token as written in the line, quotes included
    /// (for readers that need the raw text, such as DNS policy rules).
    pub start: usize,
    pub end: usize,
}

impl Token<'_> {
    /// Whether this token names an option (`-name`): unquoted, a hyphen and a
    /// letter. `-1` is a (negative) value, not an option.
    pub(crate) fn is_option(&self) -> bool {
        let mut chars = self.text.chars();
        !self.quoted && chars.next() == Some('-') && chars.next().is_some_and(|c| c.is_alphabetic())
    }

    /// Whether this token looks like an option typed with an en or em dash
    /// (as happens when commands are copied from formatted documents).
    pub(crate) fn is_dash_lookalike(&self) -> bool {
        let mut chars = self.text.chars();
        !self.quoted
            && matches!(chars.next(), Some('\u{2013}' | '\u{2014}' | '\u{2212}'))
            && chars.next().is_some_and(|c| c.is_alphabetic())
    }
}

fn is_separator(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r')
}

/// Splits `line` into tokens, or says why it cannot.
///
/// Works on bytes: every character with a meaning here is ASCII, and a
/// UTF-8 sequence never contains an ASCII byte, so slicing at those bytes
/// keeps the text valid.
pub(crate) fn tokenize(line: &str) -> Result<Vec<Token<'_>>, String> {
    let bytes = line.as_bytes();
    let mut tokens = Vec::with_capacity(12);
    let mut i = 0;
    loop {
        while i < bytes.len() && is_separator(bytes[i]) {
            i += 1;
        }
        if i == bytes.len() || bytes[i] == b'#' {
            break;
        }
        let start = i;
        while i < bytes.len() && !is_separator(bytes[i]) && bytes[i] != b'"' && bytes[i] != b'\'' {
            i += 1;
        }
        if i == bytes.len() || is_separator(bytes[i]) {
            // The common case: a plain word, borrowed from the line as it is.
            tokens.push(Token {
                text: Cow::Borrowed(&line[start..i]),
                quoted: false,
                start,
                end: i,
            });
            continue;
        }
        // Quoted parts: the text is built up, unquoting as it goes.
        let mut text = String::from(&line[start..i]);
        while i < bytes.len() && !is_separator(bytes[i]) {
            match bytes[i] {
                b'"' => {
                    let open = i;
                    i += 1;
                    let mut closed = false;
                    while i < bytes.len() {
                        let run = i;
                        while i < bytes.len() && bytes[i] != b'"' && bytes[i] != b'\\' {
                            i += 1;
                        }
                        text.push_str(&line[run..i]);
                        match bytes.get(i) {
                            Some(b'"') => {
                                i += 1;
                                closed = true;
                                break;
                            }
                            Some(_) => {
                                // A backslash: an escape, or itself.
                                match escape(&bytes[i + 1..]) {
                                    Some((c, len)) => {
                                        text.push(c);
                                        i += 1 + len;
                                    }
                                    None => {
                                        text.push('\\');
                                        i += 1;
                                    }
                                }
                            }
                            None => {}
                        }
                    }
                    if !closed {
                        return Err(format!(
                            "unterminated quoted string: the \" at column {} is never closed",
                            column(line, open)
                        ));
                    }
                }
                b'\'' => {
                    let open = i;
                    let Some(len) = bytes[i + 1..].iter().position(|&b| b == b'\'') else {
                        return Err(format!(
                            "unterminated quoted string: the ' at column {} is never closed",
                            column(line, open)
                        ));
                    };
                    text.push_str(&line[i + 1..i + 1 + len]);
                    i += len + 2;
                }
                _ => {
                    let run = i;
                    while i < bytes.len()
                        && !is_separator(bytes[i])
                        && bytes[i] != b'"'
                        && bytes[i] != b'\''
                    {
                        i += 1;
                    }
                    text.push_str(&line[run..i]);
                }
            }
        }
        tokens.push(Token {
            text: Cow::Owned(text),
            quoted: true,
            start,
            end: i,
        });
    }
    Ok(tokens)
}

/// The character an escape stands for and how many bytes after the
/// backslash it takes, or `None` when the backslash is not an escape (it is
/// then kept as written).
fn escape(after: &[u8]) -> Option<(char, usize)> {
    match after.first()? {
        b'"' => Some(('"', 1)),
        b'\\' => Some(('\\', 1)),
        b'r' => Some(('\r', 1)),
        b'n' => Some(('\n', 1)),
        b't' => Some(('\t', 1)),
        _ => {
            // `\NNN`: only control characters (what the appliance escapes),
            // so that `\101` in a regular expression stays as written.
            let digits = after.get(..3)?;
            if !digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                return None;
            }
            let value = digits.iter().fold(0u32, |n, d| n * 8 + u32::from(d - b'0'));
            let c = char::from_u32(value).filter(|c| c.is_ascii_control())?;
            Some((c, 3))
        }
    }
}

/// 1-based character column of byte offset `pos` in `line`.
pub(crate) fn column(line: &str, pos: usize) -> usize {
    line.get(..pos).map(|s| s.chars().count()).unwrap_or(0) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(line: &str) -> Vec<String> {
        tokenize(line)
            .expect("tokenizes")
            .into_iter()
            .map(|t| t.text.into_owned())
            .collect()
    }

    #[test]
    fn words_quotes_comments() {
        assert_eq!(
            texts("add gslb site  s1\t10.0.0.1"),
            ["add", "gslb", "site", "s1", "10.0.0.1"]
        );
        assert_eq!(texts("  # a comment"), Vec::<String>::new());
        assert_eq!(texts("a b # c d"), ["a", "b"]);
        assert_eq!(texts("a vs#1"), ["a", "vs#1"]);
        assert_eq!(
            texts(r#"-httpRequest "GET /health" x"#),
            ["-httpRequest", "GET /health", "x"]
        );
        assert_eq!(texts(r#""a \"q\" \\ \d""#), [r#"a "q" \ \d"#]);
        assert_eq!(texts(r##""# not a comment""##), ["# not a comment"]);
        assert_eq!(texts("'it''s' 'a \\ b'"), ["its", "a \\ b"]);
        assert_eq!(texts(r#"a"b c"d"#), ["ab cd"]);
        assert_eq!(texts(r#""""#), [""]);
        assert_eq!(texts("a b\r"), ["a", "b"]);
    }

    #[test]
    fn plain_words_borrow_and_quoted_ones_are_unquoted() {
        let t = tokenize("add größe \"ä b\"c 'x'").expect("tokenizes");
        assert!(matches!(t[0].text, Cow::Borrowed("add")));
        assert!(matches!(t[1].text, Cow::Borrowed("größe")));
        assert_eq!(t[2].text, "ä bc");
        assert!(t[2].quoted && !t[1].quoted);
        assert_eq!(t[3].text, "x");
        assert_eq!(texts("a\t\tb  "), ["a", "b"]);
        assert_eq!(texts(r#""a\\""#), [r#"a\"#]);
    }

    #[test]
    fn control_character_escapes() {
        assert_eq!(
            texts(r#""GET / HTTP/1.1\r\nHost: a\r\n\r\n" "a\tb""#),
            ["GET / HTTP/1.1\r\nHost: a\r\n\r\n", "a\tb"]
        );
        assert_eq!(texts(r#""\007x\012""#), ["\u{7}x\n"]);
        // Not escapes: kept as written; single quotes have none.
        assert_eq!(
            texts(r#""\d+\.\w \101 \08 \x41 \q" 'a\r\n'"#),
            [r"\d+\.\w \101 \08 \x41 \q", r"a\r\n"]
        );
    }

    #[test]
    fn spans_cover_the_raw_token() {
        let line = r#"add  "a \"b\"" x'y' "#;
        let t = tokenize(line).expect("tokenizes");
        let raw: Vec<&str> = t.iter().map(|t| &line[t.start..t.end]).collect();
        assert_eq!(raw, ["add", r#""a \"b\"""#, "x'y'"]);
    }

    #[test]
    fn unterminated() {
        let e = tokenize(r#"add "abc"#).unwrap_err();
        assert!(e.contains("column 5"), "{e}");
        assert!(tokenize("x 'abc").is_err());
        assert!(tokenize(r#"x "abc\""#).is_err());
    }

    #[test]
    fn options() {
        let t = tokenize(r#"-siteName "-x" -1 –sitename"#).expect("tokenizes");
        assert!(t[0].is_option());
        assert!(!t[1].is_option());
        assert!(!t[2].is_option());
        assert!(!t[3].is_option());
        assert!(t[3].is_dash_lookalike());
    }
}
