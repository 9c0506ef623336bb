//! Splits a command's tokens into positional arguments and `-options`, by a
//! table of the options the command accepts. Option names match
//! case-insensitively, as on the appliance; messages use the canonical
//! spelling from the table.

use std::borrow::Cow;

use smallvec::SmallVec;
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

/// An option as given on the line; it borrows the line's tokens.
#[derive(Debug, Clone)]
pub(crate) struct Opt<'t> {
    pub name: &'static str,
    /// The value tokens (their `start` is the byte offset in the line as
    /// written, quotes included, for errors that point at one value).
    pub values: &'t [Token<'t>],
    /// The unit word after a [`Arity::Duration`] value, if any.
    pub unit: Option<&'t str>,
}

impl<'t> Opt<'t> {
    /// The single value of a `One`/`Duration` option (empty if missing,
    /// which the parser has already reported).
    pub(crate) fn value(&self) -> &'t str {
        self.values.first().map(|t| &*t.text).unwrap_or("")
    }

    /// The texts of the values.
    pub(crate) fn texts(&self) -> impl Iterator<Item = &'t str> + 't {
        self.values.iter().map(|t| &*t.text)
    }

    /// The value as a duration, in `default` units unless a unit word follows.
    pub(crate) fn duration(&self, default: Unit) -> Result<Duration, String> {
        let unit = match self.unit {
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

/// A command's arguments after the command words, borrowing its tokens.
#[derive(Debug, Default)]
pub(crate) struct Args<'t> {
    pub positional: &'t [Token<'t>],
    /// The options given with their values. An option whose value is missing
    /// is reported and left out, so that its absence causes no further errors.
    /// (Inline up to four: a line rarely has more, and files have many lines.)
    pub opts: SmallVec<[Opt<'t>; 4]>,
    /// Some option was not recognised (and has been reported).
    pub unknown: bool,
    /// Any option token at all was given.
    pub any: bool,
    /// Recognised options that were given, with or without their values.
    pub mentioned: SmallVec<[&'static str; 4]>,
}

impl<'t> Args<'t> {
    pub(crate) fn get(&self, name: &str) -> Option<&Opt<'t>> {
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

/// `-comment "text"`, accepted on every command as on the appliance.
const COMMENT: OptSpec = opt("comment", Arity::One);

fn is_unit_word(t: &Token) -> bool {
    !t.quoted && Unit::from_appliance_word(&t.text).is_some()
}

/// Parses `tokens` against `specs`, reporting problems as `ctx: ...` on `line`.
pub(crate) fn parse<'t>(
    tokens: &'t [Token<'t>],
    specs: &[OptSpec],
    ctx: &str,
    line: usize,
    diag: &mut Diag,
) -> Args<'t> {
    let mut i = 0;
    while i < tokens.len() && !tokens[i].is_option() && !tokens[i].is_dash_lookalike() {
        i += 1;
    }
    let mut args = Args {
        positional: &tokens[..i],
        ..Args::default()
    };
    while i < tokens.len() {
        let t = &tokens[i];
        i += 1;
        args.any = true;
        let name: Cow<'_, str> = if t.is_option() {
            Cow::Borrowed(&t.text[1..])
        } else if t.is_dash_lookalike() {
            let rest: String = t.text.chars().skip(1).collect();
            diag.error(
                line,
                format!(
                    "{ctx}: \"{}\" starts with a typographic dash, not a hyphen; write -{rest}",
                    t.text
                ),
            );
            Cow::Owned(rest)
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
        // The appliance takes a comment on every object; it is for people.
        let spec = specs
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(&name))
            .or_else(|| name.eq_ignore_ascii_case("comment").then_some(&COMMENT));
        let Some(spec) = spec else {
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
            values: &[],
            unit: None,
        };
        let takes_value = |i: usize| i < tokens.len() && !tokens[i].is_option();
        match spec.arity {
            Arity::Flag => {}
            Arity::One | Arity::Duration => {
                if takes_value(i) {
                    o.values = &tokens[i..i + 1];
                    i += 1;
                    if spec.arity == Arity::Duration && i < tokens.len() && is_unit_word(&tokens[i])
                    {
                        o.unit = Some(&tokens[i].text);
                        i += 1;
                    }
                } else {
                    diag.error(line, format!("{ctx}: option -{} needs a value", spec.name));
                    missing_value = true;
                }
            }
            Arity::Many => {
                let first = i;
                while takes_value(i) && !tokens[i].is_dash_lookalike() {
                    i += 1;
                }
                o.values = &tokens[first..i];
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
