//! Splits a command's tokens into positional arguments and `-options`, by a
//! table of the options the command accepts. Option names match
//! case-insensitively, as on the appliance; messages use the canonical
//! spelling from the table.

use std::time::Duration;

use crate::duration::{self, Unit};
use crate::error::Diag;
use crate::lexer::Token;

/// How many values an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arity {
    /// No value (`unset gslb site S -backupParentlist`).
    Flag,
    /// Exactly one value.
    One,
    /// A number and an optional unit word: `-interval 500 MSEC`.
    Duration,
    /// One or more values, up to the next option: `-respCode 200 300-399`.
    Many,
}

/// One accepted option: canonical name (without the hyphen) and arity.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OptSpec {
    pub name: &'static str,
    pub arity: Arity,
}

pub(crate) const fn opt(name: &'static str, arity: Arity) -> OptSpec {
    OptSpec { name, arity }
}

/// An option as given on the line.
#[derive(Debug, Clone)]
pub(crate) struct Opt {
    pub name: &'static str,
    pub values: Vec<String>,
    /// Byte offset in the line of each value as written (quotes included),
    /// for errors that point at one value.
    pub starts: Vec<usize>,
    /// The unit word after a [`Arity::Duration`] value, if any.
    pub unit: Option<String>,
}

impl Opt {
    /// The single value of a `One`/`Duration` option (empty if missing,
    /// which the parser has already reported).
    pub(crate) fn value(&self) -> &str {
        self.values.first().map(String::as_str).unwrap_or("")
    }

    /// The value as a duration, in `default` units unless a unit word follows.
    pub(crate) fn duration(&self, default: Unit) -> Result<Duration, String> {
        let unit = match &self.unit {
            Some(word) => Unit::from_appliance_word(word)
                .ok_or_else(|| format!("unknown unit \"{word}\"; expected MSEC, SEC or MIN"))?,
            None => default,
        };
        duration::number_in_unit(self.value(), unit).map_err(|e| {
            format!(
                "{e} (a number, optionally followed by a unit word: MSEC, SEC or MIN; default {})",
                default.appliance_word()
            )
        })
    }
}

/// A command's arguments after the command words.
#[derive(Debug, Default)]
pub(crate) struct Args {
    pub positional: Vec<Token>,
    /// The options given with their values. An option whose value is missing
    /// is reported and left out, so that its absence causes no further errors.
    pub opts: Vec<Opt>,
    /// Some option was not recognised (and has been reported).
    pub unknown: bool,
    /// Any option token at all was given.
    pub any: bool,
    /// Recognised options that were given, with or without their values.
    pub mentioned: Vec<&'static str>,
}

impl Args {
    pub(crate) fn get(&self, name: &str) -> Option<&Opt> {
        self.opts.iter().find(|o| o.name == name)
    }

    pub(crate) fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Whether a required option is really absent: not given at all, and no
    /// misspelt option that was probably meant to be it.
    pub(crate) fn lacks(&self, name: &str) -> bool {
        !self.unknown && !self.mentioned.contains(&name)
    }
}

/// Lists option names for messages: `-siteName, -publicIP, ...`.
pub(crate) fn list(specs: &[OptSpec]) -> String {
    specs
        .iter()
        .map(|s| format!("-{}", s.name))
        .collect::<Vec<_>>()
        .join(", ")
}

fn is_unit_word(t: &Token) -> bool {
    !t.quoted && Unit::from_appliance_word(&t.text).is_some()
}

/// Parses `tokens` against `specs`, reporting problems as `ctx: ...` on `line`.
pub(crate) fn parse(
    tokens: &[Token],
    specs: &[OptSpec],
    ctx: &str,
    line: usize,
    diag: &mut Diag,
) -> Args {
    let mut args = Args::default();
    let mut i = 0;
    while i < tokens.len() && !tokens[i].is_option() && !tokens[i].is_dash_lookalike() {
        args.positional.push(tokens[i].clone());
        i += 1;
    }
    while i < tokens.len() {
        let t = &tokens[i];
        i += 1;
        args.any = true;
        let name: String = if t.is_option() {
            t.text[1..].to_string()
        } else if t.is_dash_lookalike() {
            let rest: String = t.text.chars().skip(1).collect();
            diag.error(
                line,
                format!(
                    "{ctx}: \"{}\" starts with a typographic dash, not a hyphen; write -{rest}",
                    t.text
                ),
            );
            rest
        } else {
            diag.error(
                line,
                format!(
                    "{ctx}: unexpected value \"{}\" (each value must follow its option, and positional arguments come before the first option; quote values that contain spaces)",
                    t.text
                ),
            );
            continue;
        };
        let Some(spec) = specs.iter().find(|s| s.name.eq_ignore_ascii_case(&name)) else {
            args.unknown = true;
            if specs.is_empty() {
                diag.error(
                    line,
                    format!("{ctx}: unknown option -{name}; this command takes no options"),
                );
            } else {
                diag.error(
                    line,
                    format!(
                        "{ctx}: unknown option -{name}; expected one of {}",
                        list(specs)
                    ),
                );
            }
            // Skip the unknown option's values: they are not errors of their own.
            while i < tokens.len() && !tokens[i].is_option() && !tokens[i].is_dash_lookalike() {
                i += 1;
            }
            continue;
        };
        if args.mentioned.contains(&spec.name) {
            diag.error(line, format!("{ctx}: option -{} is given twice", spec.name));
        }
        args.mentioned.push(spec.name);
        let mut missing_value = false;
        let mut o = Opt {
            name: spec.name,
            values: Vec::new(),
            starts: Vec::new(),
            unit: None,
        };
        let takes_value = |i: usize| i < tokens.len() && !tokens[i].is_option();
        match spec.arity {
            Arity::Flag => {}
            Arity::One | Arity::Duration => {
                if takes_value(i) {
                    o.values.push(tokens[i].text.clone());
                    o.starts.push(tokens[i].start);
                    i += 1;
                    if spec.arity == Arity::Duration && i < tokens.len() && is_unit_word(&tokens[i])
                    {
                        o.unit = Some(tokens[i].text.clone());
                        i += 1;
                    }
                } else {
                    diag.error(line, format!("{ctx}: option -{} needs a value", spec.name));
                    missing_value = true;
                }
            }
            Arity::Many => {
                while takes_value(i) && !tokens[i].is_dash_lookalike() {
                    o.values.push(tokens[i].text.clone());
                    o.starts.push(tokens[i].start);
                    i += 1;
                }
                if o.values.is_empty() {
                    missing_value = true;
                    diag.error(
                        line,
                        format!("{ctx}: option -{} needs at least one value", spec.name),
                    );
                }
            }
        }
        // Values left over after a fixed-arity option.
        while i < tokens.len() && !tokens[i].is_option() && !tokens[i].is_dash_lookalike() {
            let what = if spec.arity == Arity::Flag {
                "takes no value"
            } else {
                "takes one value"
            };
            diag.error(
                line,
                format!(
                    "{ctx}: unexpected value \"{}\" after -{} (it {what}; quote values that contain spaces)",
                    tokens[i].text, spec.name
                ),
            );
            i += 1;
        }
        if !missing_value {
            args.opts.push(o);
        }
    }
    args
}
