//! TOML span plumbing for the native reader: byte offsets into 1-based
//! lines and columns, deserializing one table with its errors at its line,
//! and the checked readers of [`Spanned`] values that report
//! `ctx: key: problem` at the key's line. Kept apart from the object
//! readers (`[[site]]`, `[[service]]`, ...) in the parent module and its
//! siblings, which all use these helpers through [`Native`].

use std::net::IpAddr;
use std::ops::Range;
use std::time::Duration;

use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::{DeValue, ValueDeserializer};

use crate::draft::Ref;
use crate::duration;
use crate::scalar;

use super::Native;

/// Maps byte offsets to 1-based line numbers.
pub(super) struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    pub(super) fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { starts }
    }

    pub(super) fn of(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset).max(1)
    }
}

pub(super) type Element<'i> = Spanned<DeValue<'i>>;

impl Native<'_> {
    pub(super) fn line(&self, span: &Range<usize>) -> usize {
        self.lines.of(span.start)
    }

    pub(super) fn at<T>(&self, s: &Spanned<T>) -> usize {
        self.lines.of(s.span().start)
    }

    /// The 1-based character column of byte `offset` in its line.
    pub(super) fn column(&self, offset: usize) -> usize {
        let line_start = self
            .lines
            .starts
            .get(self.lines.of(offset) - 1)
            .copied()
            .unwrap_or(0);
        crate::lexer::column(
            self.text.get(line_start..).unwrap_or(""),
            offset.saturating_sub(line_start),
        )
    }

    /// Deserializes one table, reporting a failure at its line.
    pub(super) fn de<T: DeserializeOwned>(&mut self, what: &str, value: Element<'_>) -> Option<T> {
        let span = value.span();
        match T::deserialize(ValueDeserializer::from(value)) {
            Ok(t) => Some(t),
            Err(e) => {
                let line = self.line(&e.span().unwrap_or(span));
                self.diag
                    .error(line, format!("{what}: {}", e.message().trim()));
                None
            }
        }
    }

    /// Reads each element of an array of tables (`[[site]]`).
    pub(super) fn each(
        &mut self,
        key_line: usize,
        key: &str,
        value: Element<'_>,
        f: fn(&mut Self, Element<'_>),
    ) {
        match value.get_ref() {
            DeValue::Array(items) => {
                for item in items.iter() {
                    f(self, item.clone());
                }
            }
            other => self.diag.error(
                key_line,
                format!(
                    "`{key}` must be an array of tables (write [[{key}]] above each one), found a {}",
                    other.type_str()
                ),
            ),
        }
    }

    /// The `name` of a table that failed to deserialize, so that a
    /// placeholder can stand in for it and references to it do not cause
    /// errors of their own.
    pub(super) fn name_of(value: &Element<'_>) -> Option<String> {
        match value.get_ref() {
            DeValue::Table(t) => t
                .get("name")
                .and_then(|v| v.get_ref().as_str())
                .map(String::from),
            _ => None,
        }
    }

    pub(super) fn error(&mut self, line: usize, ctx: &str, message: impl AsRef<str>) {
        self.diag
            .error(line, format!("{ctx}: {}", message.as_ref()));
    }

    // -- checked conversions; each reports `ctx: key: problem` at the key's line

    pub(super) fn ip(&mut self, ctx: &str, key: &str, v: &Spanned<String>) -> Option<IpAddr> {
        match scalar::ip(v.get_ref()) {
            Ok(ip) => Some(ip),
            Err(e) => {
                self.error(self.at(v), ctx, format!("{key}: {e}"));
                None
            }
        }
    }

    pub(super) fn int(
        &mut self,
        ctx: &str,
        key: &str,
        v: &Spanned<i64>,
        lo: u64,
        hi: u64,
    ) -> Option<u64> {
        match scalar::int_value_in(*v.get_ref(), lo, hi) {
            Ok(n) => Some(n),
            Err(e) => {
                self.error(self.at(v), ctx, format!("{key}: {e}"));
                None
            }
        }
    }

    pub(super) fn port(&mut self, ctx: &str, key: &str, v: &Spanned<i64>) -> Option<u16> {
        self.int(ctx, key, v, 1, 65535).map(|p| p as u16)
    }

    pub(super) fn duration(
        &mut self,
        ctx: &str,
        key: &str,
        v: &Spanned<String>,
        min: Duration,
        max: Duration,
    ) -> Option<Duration> {
        let result = duration::parse_suffixed(v.get_ref()).and_then(|d| {
            if d < min || d > max || d.is_zero() {
                Err(format!(
                    "{} is out of range; expected {} to {}",
                    duration::format(d),
                    duration::format(min.max(Duration::from_nanos(1))),
                    duration::format(max)
                ))
            } else {
                Ok(d)
            }
        });
        match result {
            Ok(d) => Some(d),
            Err(e) => {
                self.error(self.at(v), ctx, format!("{key}: {e}"));
                None
            }
        }
    }

    /// A duration in `[0, max]`: 0 turns the setting off.
    pub(super) fn duration_or_zero(
        &mut self,
        ctx: &str,
        key: &str,
        v: &Spanned<String>,
        max: Duration,
    ) -> Option<Duration> {
        let result = duration::parse_suffixed(v.get_ref()).and_then(|d| {
            if d > max {
                Err(format!(
                    "{} is out of range; expected 0s to {}",
                    duration::format(d),
                    duration::format(max)
                ))
            } else {
                Ok(d)
            }
        });
        match result {
            Ok(d) => Some(d),
            Err(e) => {
                self.error(self.at(v), ctx, format!("{key}: {e}"));
                None
            }
        }
    }

    pub(super) fn with<T>(
        &mut self,
        ctx: &str,
        key: &str,
        v: &Spanned<String>,
        f: impl FnOnce(&str) -> Result<T, String>,
    ) -> Option<T> {
        match f(v.get_ref()) {
            Ok(t) => Some(t),
            Err(e) => {
                self.error(self.at(v), ctx, format!("{key}: {e}"));
                None
            }
        }
    }

    pub(super) fn reference(&self, ctx: &str, v: &Spanned<String>) -> Ref {
        Ref {
            name: v.get_ref().clone(),
            line: self.at(v),
            context: ctx.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Lines;

    #[test]
    fn lines() {
        let l = Lines::new("a\nbc\n\nd");
        assert_eq!(l.of(0), 1);
        assert_eq!(l.of(1), 1);
        assert_eq!(l.of(2), 2);
        assert_eq!(l.of(5), 3);
        assert_eq!(l.of(6), 4);
        assert_eq!(l.of(100), 4);
    }
}
