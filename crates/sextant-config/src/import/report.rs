//! What an import did, for the operator: the lines left out (grouped by
//! command), the lines written with a change, what needs their action, the
//! secrets to enter again, the settings taken without effect, and whether
//! the written file is valid.

use std::fmt;

use sextant_core::Model;

use super::line_ranges;
use crate::ConfigErrors;
use crate::scope::Area;

/// The commands of one kind that were left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// The command words as first written (`add lb vserver`).
    pub command: String,
    /// The part of the appliance they configure.
    pub area: &'static str,
    /// Why, when the command alone does not say (`bound to no GSLB service`).
    pub why: String,
    pub lines: Vec<usize>,
}

/// One finding at one line of the saved file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub line: usize,
    pub text: String,
}

/// The report of one import.
#[derive(Debug, Default)]
pub struct Report {
    pub file: String,
    /// Lines in the saved file, and the commands among them.
    pub lines: usize,
    pub commands: usize,
    pub left_out: Vec<LeftOut>,
    /// Lines written with a change the importer made.
    pub changed: Vec<Finding>,
    /// What the operator must do before the configuration serves as the
    /// appliance did.
    pub actions: Vec<Finding>,
    /// Secrets written as placeholders.
    pub secrets: Vec<Finding>,
    /// Settings taken that Sextant does not implement (yet), grouped: the
    /// text and the saved file's lines.
    pub not_implemented: Vec<(String, Vec<usize>)>,
    /// Settings taken that have no meaning for a DNS-only GSLB (they belong
    /// to the appliance's data path), grouped likewise.
    pub not_applicable: Vec<(String, Vec<usize>)>,
    /// Lines left out because the reader rejects them, as the appliance
    /// rejects them when it loads the file: the line, its command words and
    /// the reason.
    pub rejected: Vec<Finding>,
    /// Other warnings of the written configuration (placeholders, ...).
    pub warnings: Vec<(String, Vec<usize>)>,
    /// `FILE:LINE: reason` for each error of the written configuration, and
    /// errors of the import itself.
    pub errors: Vec<String>,
    /// What the written configuration holds, when it is valid.
    pub summary: Option<String>,
}

impl Report {
    pub(super) fn new(file: &str, lines: usize) -> Report {
        Report {
            file: file.to_string(),
            lines,
            ..Report::default()
        }
    }

    pub(super) fn leave_out(&mut self, command: &str, area: Area, why: &str, line: usize) {
        match self
            .left_out
            .iter_mut()
            .find(|g| g.command.eq_ignore_ascii_case(command) && g.why == why)
        {
            Some(g) => g.lines.push(line),
            None => self.left_out.push(LeftOut {
                command: command.to_string(),
                area: area.describe(),
                why: why.to_string(),
                lines: vec![line],
            }),
        }
    }

    pub(super) fn changed(&mut self, line: usize, text: String) {
        self.changed.push(Finding { line, text });
    }

    pub(super) fn action(&mut self, line: usize, text: String) {
        self.actions.push(Finding { line, text });
    }

    pub(super) fn secret(&mut self, line: usize, text: String) {
        self.secrets.push(Finding { line, text });
    }

    pub(super) fn reject(&mut self, line: usize, command: String, why: String) {
        let text = if command.is_empty()
            || why
                .to_ascii_lowercase()
                .starts_with(&command.to_ascii_lowercase())
        {
            why
        } else {
            format!("{command}: {why}")
        };
        self.rejected.push(Finding { line, text });
    }

    /// Whether lines were left out as rejected (the import is still
    /// usable when [`Report::ok`]).
    pub fn has_rejected(&self) -> bool {
        !self.rejected.is_empty()
    }

    pub(super) fn error(&mut self, text: String) {
        self.errors.push(text);
    }

    /// Lines left out, in all.
    pub fn left_out_lines(&self) -> usize {
        self.left_out.iter().map(|g| g.lines.len()).sum()
    }

    /// Whether the written configuration is valid and the import found no
    /// error of its own.
    pub fn ok(&self) -> bool {
        self.errors.is_empty()
    }

    pub(super) fn finish(&mut self, result: &Result<Model, ConfigErrors>) {
        // Found line by line and after the whole file was read: in line order.
        self.actions.sort_by_key(|a| a.line);
        self.changed.sort_by_key(|a| a.line);
        self.rejected.sort_by_key(|a| a.line);
        match result {
            Ok(model) => {
                let prefix = format!("{}:", self.file);
                for w in &model.warnings {
                    // "FILE:LINE: context: -option is accepted but ..."
                    let Some(rest) = w.strip_prefix(&prefix) else {
                        continue;
                    };
                    let (line, text) = rest.split_once(": ").unwrap_or(("0", rest));
                    let line: usize = line.parse().unwrap_or(0);
                    // Grouped by what is said, without the object's name.
                    let said = text
                        .split_once(": -")
                        .map_or(text.to_string(), |(_, t)| format!("-{t}"));
                    let list = if said.contains(" is accepted but not implemented yet") {
                        &mut self.not_implemented
                    } else if said.contains(" is accepted but has no effect in Sextant") {
                        &mut self.not_applicable
                    } else {
                        // Placeholders and the like: each says its own.
                        self.warnings.push((text.to_string(), vec![line]));
                        continue;
                    };
                    match list.iter_mut().find(|(t, _)| *t == said) {
                        Some((_, lines)) => lines.push(line),
                        None => list.push((said, vec![line])),
                    }
                }
                self.summary = Some(format!(
                    "{} sites, {} services, {} vservers, {} domains, {} monitors",
                    model.sites.len(),
                    model.services.len(),
                    model.vservers.len(),
                    model.domains.len(),
                    model.monitors.len()
                ));
            }
            Err(errors) => {
                self.errors
                    .extend(errors.errors.iter().map(|e| e.to_string()));
            }
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let left = self.left_out_lines();
        let rejected = self.rejected.len();
        write!(
            f,
            "{}: {} lines, {} commands: {} written, {} left out",
            self.file,
            self.lines,
            self.commands,
            self.commands.saturating_sub(left + rejected),
            left
        )?;
        if rejected > 0 {
            write!(f, ", {rejected} rejected")?;
        }
        writeln!(f)?;
        if !self.left_out.is_empty() {
            writeln!(f, "\nLeft out, outside Sextant's scope ({left} lines):")?;
            let width = self
                .left_out
                .iter()
                .map(|g| g.command.len())
                .max()
                .unwrap_or(0);
            for g in &self.left_out {
                let why = if g.why.is_empty() {
                    g.area.to_string()
                } else {
                    format!("{}; {}", g.area, g.why)
                };
                writeln!(
                    f,
                    "  {:width$}  {:>4}  {why}: lines {}",
                    g.command,
                    g.lines.len(),
                    line_ranges(&g.lines),
                )?;
            }
        }
        let findings = |f: &mut fmt::Formatter<'_>, title: &str, list: &[Finding]| -> fmt::Result {
            if list.is_empty() {
                return Ok(());
            }
            writeln!(f, "\n{title}:")?;
            for x in list {
                writeln!(f, "  line {}: {}", x.line, x.text)?;
            }
            Ok(())
        };
        if !self.rejected.is_empty() {
            writeln!(
                f,
                "\nRejected, as the appliance would ({} line{}; the rest is loaded, as the appliance loads it):",
                self.rejected.len(),
                if self.rejected.len() == 1 { "" } else { "s" }
            )?;
            for x in &self.rejected {
                writeln!(f, "  line {}: {}", x.line, x.text)?;
            }
        }
        findings(f, "Written with a change", &self.changed)?;
        findings(f, "Secrets to enter again", &self.secrets)?;
        findings(f, "Needs your action", &self.actions)?;
        let grouped = |f: &mut fmt::Formatter<'_>,
                       title: &str,
                       list: &[(String, Vec<usize>)]|
         -> fmt::Result {
            if list.is_empty() {
                return Ok(());
            }
            writeln!(f, "\n{title}:")?;
            for (text, lines) in list {
                let word = if lines.len() == 1 { "line" } else { "lines" };
                writeln!(f, "  {word} {}: {text}", line_ranges(lines))?;
            }
            Ok(())
        };
        grouped(
            f,
            "Taken, but not implemented: behaves differently in Sextant",
            &self.not_implemented,
        )?;
        grouped(
            f,
            "Taken, with no meaning for a DNS-only GSLB",
            &self.not_applicable,
        )?;
        grouped(f, "Warnings", &self.warnings)?;
        if self.errors.is_empty() {
            if let Some(s) = &self.summary {
                if self.rejected.is_empty() {
                    writeln!(f, "\nResult: a valid Sextant configuration ({s}).")?;
                } else {
                    writeln!(
                        f,
                        "\nResult: a valid Sextant configuration ({s}), without the {} rejected line{} above; import with --strict to refuse the file instead.",
                        self.rejected.len(),
                        if self.rejected.len() == 1 { "" } else { "s" }
                    )?;
                }
            }
        } else {
            writeln!(f, "\nErrors ({}):", self.errors.len())?;
            for e in &self.errors {
                writeln!(f, "  {e}")?;
            }
            writeln!(
                f,
                "\nResult: not valid; fix the saved file's lines above, or the written file, and check it with `sextant check`."
            )?;
        }
        Ok(())
    }
}
