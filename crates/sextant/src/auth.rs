//! API tokens: who may write (and, off loopback, read).
//!
//! A token file holds one token per line, optionally after a name
//! (`NAME TOKEN`), so that logs and events can say which token wrote
//! without ever showing the secret; `#` starts a comment. A named token may
//! end with its scope (`NAME TOKEN read`): a read-only token, for
//! Prometheus and dashboards off loopback, reads everything but the
//! configuration's text (which holds secrets) and writes nothing. Tokens are kept
//! only as SHA-256 digests, and a presented token is hashed and compared
//! with every digest in constant time, so neither the comparison's time
//! nor the token's length tells an attacker anything.

use std::path::{Path, PathBuf};

use ring::digest::{SHA256, digest};
use subtle::ConstantTimeEq;

/// The shortest token accepted: 16 characters (a 128-bit random token in
/// hex is 32).
pub const MIN_TOKEN_LEN: usize = 16;

/// What is wrong with a token file: `FILE:LINE: reason` or `FILE: reason`.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("{file}: cannot read the API token file: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    #[error(
        "{file}: the API token file is readable by other users (mode {mode:04o}); run `chmod 600 {file}`"
    )]
    Readable { file: String, mode: u32 },
    #[error("{file}:{line}: {reason}")]
    Line {
        file: String,
        line: usize,
        reason: String,
    },
    #[error("{file}: the API token file holds no token (one per line, `NAME TOKEN` or `TOKEN`)")]
    Empty { file: String },
}

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Reads, except the configuration's text (`NAME TOKEN read`).
    Read,
    /// Everything: reads and writes (`TOKEN`, `NAME TOKEN`, `NAME TOKEN write`).
    Write,
}

/// One accepted token: its name, scope and digest.
#[derive(Clone)]
struct Entry {
    name: String,
    scope: Scope,
    digest: [u8; 32],
}

/// The tokens of one token file.
#[derive(Clone)]
pub struct Tokens {
    file: PathBuf,
    entries: Vec<Entry>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Names only: the digests stay out of every log.
        f.debug_struct("Tokens")
            .field("file", &self.file)
            .field("names", &self.names())
            .finish()
    }
}

fn sha256(text: &str) -> [u8; 32] {
    let mut out = [0; 32];
    out.copy_from_slice(digest(&SHA256, text.as_bytes()).as_ref());
    out
}

impl Tokens {
    /// Reads `file`. It must not be readable by group or others: a token
    /// file anyone on the host can read is a write credential for all.
    pub fn load(file: &Path) -> Result<Tokens, TokenFileError> {
        let name = file.display().to_string();
        let meta = std::fs::metadata(file).map_err(|source| TokenFileError::Read {
            file: name.clone(),
            source,
        })?;
        let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777;
        if mode & 0o077 != 0 {
            return Err(TokenFileError::Readable { file: name, mode });
        }
        let text = std::fs::read_to_string(file).map_err(|source| TokenFileError::Read {
            file: name.clone(),
            source,
        })?;
        Tokens::parse(file, &text)
    }

    /// The tokens of `text` (a token file's content; `file` names it in
    /// errors).
    pub fn parse(file: &Path, text: &str) -> Result<Tokens, TokenFileError> {
        let shown = file.display().to_string();
        let mut entries: Vec<Entry> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let content = raw.split('#').next().unwrap_or("").trim();
            if content.is_empty() {
                continue;
            }
            let fields: Vec<&str> = content.split_whitespace().collect();
            let (name, token, scope) = match fields.as_slice() {
                [token] => (format!("token-{line}"), *token, Scope::Write),
                [name, token] => ((*name).to_string(), *token, Scope::Write),
                [name, token, scope] => {
                    let scope = match *scope {
                        "read" => Scope::Read,
                        "write" => Scope::Write,
                        other => {
                            return Err(TokenFileError::Line {
                                file: shown,
                                line,
                                reason: format!(
                                    "the scope of `{name}` is `{other}`; it is `read` (reads only) or `write` (everything, the default)"
                                ),
                            });
                        }
                    };
                    ((*name).to_string(), *token, scope)
                }
                _ => {
                    return Err(TokenFileError::Line {
                        file: shown,
                        line,
                        reason: "expected `TOKEN`, `NAME TOKEN` or `NAME TOKEN read` (a token holds no spaces)"
                            .to_string(),
                    });
                }
            };
            if token.len() < MIN_TOKEN_LEN {
                return Err(TokenFileError::Line {
                    file: shown,
                    line,
                    reason: format!(
                        "the token of `{name}` is {} characters; at least {MIN_TOKEN_LEN} are needed \
                         (for example `openssl rand -hex 16`)",
                        token.len()
                    ),
                });
            }
            if entries.iter().any(|e| e.name == name) {
                return Err(TokenFileError::Line {
                    file: shown,
                    line,
                    reason: format!("the name `{name}` is used twice"),
                });
            }
            entries.push(Entry {
                name,
                scope,
                digest: sha256(token),
            });
        }
        if entries.is_empty() {
            return Err(TokenFileError::Empty { file: shown });
        }
        Ok(Tokens {
            file: file.to_path_buf(),
            entries,
        })
    }

    /// The name and scope of the token `presented` is, if it is one of
    /// these. Every digest is compared, whatever matched, in constant time.
    pub fn check(&self, presented: &str) -> Option<(&str, Scope)> {
        let d = sha256(presented);
        let mut found = None;
        for e in &self.entries {
            if bool::from(e.digest.ct_eq(&d)) && found.is_none() {
                found = Some((e.name.as_str(), e.scope));
            }
        }
        found
    }

    /// The tokens' names, for logs; a read-only token's with `(read)`.
    pub fn names(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|e| match e.scope {
                Scope::Write => e.name.clone(),
                Scope::Read => format!("{} (read)", e.name),
            })
            .collect()
    }

    /// The file they came from.
    pub fn file(&self) -> &Path {
        &self.file
    }
}

/// The token of an `Authorization: Bearer TOKEN` header value.
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Tokens, TokenFileError> {
        Tokens::parse(Path::new("/etc/sextant/api-tokens"), text)
    }

    #[test]
    fn named_and_bare_tokens_are_accepted_and_only_they() {
        let t =
            parse("# operators\nalice 0123456789abcdef0123\n\n  fedcba9876543210fedcba # the CI\n")
                .unwrap();
        assert_eq!(
            t.check("0123456789abcdef0123"),
            Some(("alice", Scope::Write))
        );
        assert_eq!(
            t.check("fedcba9876543210fedcba"),
            Some(("token-4", Scope::Write))
        );
        assert_eq!(t.check("0123456789abcdef012"), None);
        assert_eq!(t.check(""), None);
        assert_eq!(t.check("alice"), None);
        assert_eq!(t.names(), ["alice", "token-4"]);
    }

    #[test]
    fn a_named_token_may_be_read_only() {
        let t = parse(
            "prometheus 0123456789abcdef0123 read\nops fedcba9876543210fedcba write\nci 0123456789abcdefffff\n",
        )
        .unwrap();
        assert_eq!(
            t.check("0123456789abcdef0123"),
            Some(("prometheus", Scope::Read))
        );
        assert_eq!(
            t.check("fedcba9876543210fedcba"),
            Some(("ops", Scope::Write))
        );
        assert_eq!(t.check("0123456789abcdefffff"), Some(("ci", Scope::Write)));
        assert_eq!(t.names(), ["prometheus (read)", "ops", "ci"]);
        let e = parse("prom 0123456789abcdef0123 readonly\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "/etc/sextant/api-tokens:1: the scope of `prom` is `readonly`; it is `read` (reads only) or `write` (everything, the default)"
        );
        assert!(!e.contains("0123456789abcdef"), "{e}");
    }

    #[test]
    fn errors_name_the_file_and_line_and_never_the_token() {
        let e = parse("ops short\n").unwrap_err().to_string();
        assert_eq!(
            e,
            "/etc/sextant/api-tokens:1: the token of `ops` is 5 characters; at least 16 are \
             needed (for example `openssl rand -hex 16`)"
        );
        assert!(!e.contains("short"));
        let e = parse("a 0123456789abcdef\nb c d e\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/etc/sextant/api-tokens:2: expected"), "{e}");
        let e = parse("a 0123456789abcdef\na 0123456789abcdeg\n")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "/etc/sextant/api-tokens:2: the name `a` is used twice");
        let e = parse("# nothing\n").unwrap_err().to_string();
        assert!(e.contains("holds no token"), "{e}");
    }

    #[test]
    fn a_file_others_can_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("sextant-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("tokens");
        std::fs::write(&f, "ops 0123456789abcdef0123\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = Tokens::load(&f).unwrap_err().to_string();
        assert!(e.contains("mode 0644") && e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            Tokens::load(&f).unwrap().check("0123456789abcdef0123"),
            Some(("ops", Scope::Write))
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_debug_form_shows_names_only() {
        let t = parse("ops 0123456789abcdef0123\n").unwrap();
        let shown = format!("{t:?}");
        assert!(
            shown.contains("ops") && !shown.contains("0123456789abcdef"),
            "{shown}"
        );
    }

    #[test]
    fn bearer_headers() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer  abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer "), None);
        assert_eq!(bearer("Bearer"), None);
    }
}
