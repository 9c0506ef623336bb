//! Error types: every problem in a file becomes one [`ConfigError`] with the
//! file and line, and a whole load reports all of them at once as
//! [`ConfigErrors`], so an operator can fix a file in one pass.

use std::fmt;

use sextant_core::Model;

/// One problem in a configuration file, displayed as `FILE:LINE: reason`,
/// or `FILE:LINE:COLUMN: reason` when the column is known (errors inside a
/// DNS policy rule).
///
/// `line` is 1-based; 0 means the problem concerns the whole file (for
/// example, the file could not be read).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct ConfigError {
    pub file: String,
    pub line: usize,
    /// 1-based character column in the line, where known.
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.column {
            Some(column) => write!(f, "{}:{}:{column}: {}", self.file, self.line, self.message),
            None => write!(f, "{}:{}: {}", self.file, self.line, self.message),
        }
    }
}

/// Every problem found in a configuration file, in line order.
///
/// Displayed as one `FILE:LINE: reason` per error, separated by newlines.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct ConfigErrors {
    pub errors: Vec<ConfigError>,
    /// The warnings of the same reading, `FILE:LINE: text` in line order:
    /// shown beside the errors (as a compiler shows both), never part of
    /// the errors' text.
    pub warnings: Vec<String>,
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl ConfigErrors {
    /// A single error concerning the whole file (line 0), e.g. an I/O error.
    pub fn whole_file(file: &str, message: impl Into<String>) -> Self {
        ConfigErrors {
            errors: vec![ConfigError {
                file: file.to_string(),
                line: 0,
                column: None,
                message: message.into(),
            }],
            warnings: Vec::new(),
        }
    }
}

/// Collects errors while a file is read, so that reading can go on after an
/// error and report everything at the end.
#[derive(Debug)]
pub(crate) struct Diag {
    file: String,
    errors: Vec<ConfigError>,
    /// Warnings with their lines (see [`crate::no_effect`]); they go into
    /// the model only when there are no errors.
    warnings: Vec<(usize, String)>,
}

impl Diag {
    pub(crate) fn new(file: &str) -> Self {
        Diag {
            file: file.to_string(),
            errors: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Records one error at `line`.
    pub(crate) fn error(&mut self, line: usize, message: impl Into<String>) {
        self.errors.push(ConfigError {
            file: self.file.clone(),
            line,
            column: None,
            message: message.into(),
        });
    }

    /// Records one error at `line`, 1-based character `column`.
    pub(crate) fn error_at(&mut self, line: usize, column: usize, message: impl Into<String>) {
        self.errors.push(ConfigError {
            file: self.file.clone(),
            line,
            column: Some(column),
            message: message.into(),
        });
    }

    /// Records one warning at `line`: something in the file that is
    /// accepted but has no effect, or that will not work as well as it
    /// reads (a Service Based datacenter-mode record's datacenter without
    /// the measured service).
    pub(crate) fn warn(&mut self, line: usize, message: impl Into<String>) {
        self.warnings.push((line, message.into()));
    }

    /// Records one error in another file that the configuration loads (a
    /// location file), at that file's `line`.
    pub(crate) fn error_in(&mut self, file: &str, line: usize, message: impl Into<String>) {
        self.error(line, message);
        if let Some(e) = self.errors.last_mut() {
            e.file = file.to_string();
        }
    }

    /// Moves every error and warning of this file to the line `f` gives
    /// (the importer reports at the saved file's lines).
    pub(crate) fn remap_lines(&mut self, f: impl Fn(usize) -> usize) {
        let file = self.file.clone();
        for e in self.errors.iter_mut().filter(|e| e.file == file) {
            e.line = f(e.line);
            e.message = remap_in_text(&e.message, &f);
        }
        for (line, text) in &mut self.warnings {
            *line = f(*line);
            *text = remap_in_text(text, &f);
        }
    }

    /// The configuration file's name as given.
    pub(crate) fn file(&self) -> &str {
        &self.file
    }

    /// `Ok(model)`, with the warnings as `FILE:LINE: text` in line order
    /// (stable within a line) in [`Model::warnings`], if no error was
    /// recorded; else every error sorted by line (stable, so errors on one
    /// line keep the order they were found in); errors in other files
    /// (location files) follow, in the order found.
    pub(crate) fn finish(self, mut model: Model) -> Result<Model, ConfigErrors> {
        let mut warnings = self.warnings;
        warnings.sort_by_key(|(line, _)| *line);
        let warnings: Vec<String> = warnings
            .into_iter()
            .map(|(line, text)| format!("{}:{line}: {text}", self.file))
            .collect();
        if self.errors.is_empty() {
            model.warnings = warnings;
            Ok(model)
        } else {
            let file = self.file;
            let (mut errors, others): (Vec<_>, Vec<_>) =
                self.errors.into_iter().partition(|e| e.file == file);
            errors.sort_by_key(|e| e.line);
            errors.extend(others);
            Err(ConfigErrors { errors, warnings })
        }
    }
}

/// `text` with each "line N" in it (another line a message refers to, as in
/// "already defined on line 12") mapped by `f`.
fn remap_in_text(text: &str, f: &impl Fn(usize) -> usize) -> String {
    const WORD: &str = "line ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(WORD) {
        let after = &rest[i + WORD.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        out.push_str(&rest[..i + WORD.len()]);
        match after[..digits].parse::<usize>() {
            Ok(n) if digits > 0 => out.push_str(&f(n).to_string()),
            _ => out.push_str(&after[..digits]),
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}
