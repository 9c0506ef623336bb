//! Splits one line of appliance syntax into tokens.
//!
//! Rules (the appliance CLI's, as far as a file needs them):
//! - tokens are separated by spaces or tabs;
//! - `"..."` quotes a token; inside it `\"` is a quote and `\\` a backslash,
//!   any other backslash is kept as written (so `"\d+"` stays `\d+`);
//! - `'...'` quotes a token literally, without escapes;
//! - quoted and unquoted parts next to each other form one token (`a"b c"`);
//! - `#` at the start of a token, outside quotes, starts a comment that runs
//!   to the end of the line (a `#` inside a word, as in `vs#1`, is part of
//!   the word: appliance names may contain `#`).

/// One word of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    pub text: String,
    /// Any part of the token was quoted: it is a value, never an option.
    pub quoted: bool,
    /// Byte offsets of the token as written in the line, quotes included
    /// (for readers that need the raw text, such as DNS policy rules).
    pub start: usize,
    pub end: usize,
}

impl Token {
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

/// Splits `line` into tokens, or says why it cannot.
pub(crate) fn tokenize(line: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = line.char_indices().peekable();
    loop {
        // Skip separators.
        while chars
            .next_if(|(_, c)| *c == ' ' || *c == '\t' || *c == '\r')
            .is_some()
        {}
        let Some(&(start, first)) = chars.peek() else {
            break;
        };
        if first == '#' {
            break;
        }
        let mut text = String::new();
        let mut quoted = false;
        while let Some(&(pos, c)) = chars.peek() {
            match c {
                ' ' | '\t' | '\r' => break,
                '"' => {
                    chars.next();
                    quoted = true;
                    let mut closed = false;
                    while let Some((_, c)) = chars.next() {
                        match c {
                            '"' => {
                                closed = true;
                                break;
                            }
                            '\\' => match chars.peek() {
                                Some(&(_, e @ ('"' | '\\'))) => {
                                    text.push(e);
                                    chars.next();
                                }
                                _ => text.push('\\'),
                            },
                            other => text.push(other),
                        }
                    }
                    if !closed {
                        return Err(format!(
                            "unterminated quoted string: the \" at column {} is never closed",
                            column(line, pos)
                        ));
                    }
                }
                '\'' => {
                    chars.next();
                    quoted = true;
                    let mut closed = false;
                    for (_, c) in chars.by_ref() {
                        if c == '\'' {
                            closed = true;
                            break;
                        }
                        text.push(c);
                    }
                    if !closed {
                        return Err(format!(
                            "unterminated quoted string: the ' at column {} is never closed",
                            column(line, pos)
                        ));
                    }
                }
                other => {
                    text.push(other);
                    chars.next();
                }
            }
        }
        let end = chars.peek().map_or(line.len(), |&(pos, _)| pos);
        tokens.push(Token {
            text,
            quoted,
            start,
            end,
        });
    }
    Ok(tokens)
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
            .map(|t| t.text)
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
