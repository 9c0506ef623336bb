//! Durations in both syntaxes.
//!
//! The appliance writes a number and an optional separate unit word
//! (`-interval 500 MSEC`); the native TOML writes one string with a suffix
//! (`"500ms"`). Both allow a decimal fraction (`0.5 SEC`, `"1.5s"`). Parsing
//! is exact (integer arithmetic on nanoseconds), so `0.5` seconds is exactly
//! 500 ms and the two syntaxes produce equal models.

use std::time::Duration;

/// A time unit the configuration accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    Millis,
    Seconds,
    Minutes,
    Hours,
}

impl Unit {
    fn nanos(self) -> u128 {
        match self {
            Unit::Millis => 1_000_000,
            Unit::Seconds => 1_000_000_000,
            Unit::Minutes => 60_000_000_000,
            Unit::Hours => 3_600_000_000_000,
        }
    }

    /// The appliance's unit word (`MSEC`, `SEC`, `MIN`), case-insensitively.
    pub(crate) fn from_appliance_word(word: &str) -> Option<Unit> {
        [
            ("MSEC", Unit::Millis),
            ("SEC", Unit::Seconds),
            ("MIN", Unit::Minutes),
        ]
        .iter()
        .find(|(w, _)| w.eq_ignore_ascii_case(word))
        .map(|(_, u)| *u)
    }

    /// The word used for this unit in appliance-syntax messages.
    pub(crate) fn appliance_word(self) -> &'static str {
        match self {
            Unit::Millis => "MSEC",
            Unit::Seconds => "SEC",
            Unit::Minutes => "MIN",
            Unit::Hours => "HOUR",
        }
    }
}

/// Durations above this are certainly typos (and would overflow timers).
const MAX_NANOS: u128 = 366 * 24 * 3_600_000_000_000;

/// Parses a decimal number (`5`, `0.5`, `12.250`) in `unit` into a duration.
///
/// No sign, no exponent: a configuration value should read the way it is meant.
pub(crate) fn number_in_unit(number: &str, unit: Unit) -> Result<Duration, String> {
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    let digits_ok = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int_part.is_empty() || !digits_ok(int_part) || !digits_ok(frac_part) {
        return Err(format!("expected a number, found \"{number}\""));
    }
    if number.ends_with('.') {
        return Err(format!("expected a number, found \"{number}\""));
    }
    if frac_part.len() > 9 {
        return Err(format!(
            "\"{number}\" has more than 9 decimal places; that is finer than a nanosecond"
        ));
    }
    let int: u128 = if int_part.len() > 20 {
        u128::MAX
    } else {
        int_part.parse().unwrap_or(u128::MAX)
    };
    let frac: u128 = if frac_part.is_empty() {
        0
    } else {
        frac_part.parse().unwrap_or(0)
    };
    let scale = 10u128.pow(frac_part.len() as u32);
    let nanos = int
        .checked_mul(unit.nanos())
        .and_then(|n| n.checked_add(frac * unit.nanos() / scale));
    match nanos {
        Some(n) if n <= MAX_NANOS => Ok(Duration::from_nanos(n as u64)),
        _ => Err(format!("{number} is too large for a duration")),
    }
}

/// Parses a native duration string: a number and a unit suffix, `ms`, `s`,
/// `m` or `h` (`"500ms"`, `"5s"`, `"1.5s"`, `"3m"`).
pub(crate) fn parse_suffixed(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, suffix) = t.split_at(split);
    let unit = match suffix.trim() {
        "ms" => Unit::Millis,
        "s" => Unit::Seconds,
        "m" => Unit::Minutes,
        "h" => Unit::Hours,
        "" => {
            return Err(format!(
                "duration \"{text}\" has no unit; write e.g. \"{t}s\" (units: ms, s, m, h)"
            ));
        }
        other => {
            return Err(format!(
                "duration \"{text}\" has an unknown unit \"{other}\"; expected ms, s, m or h (e.g. \"500ms\", \"5s\", \"3m\")"
            ));
        }
    };
    if number.is_empty() {
        return Err(format!(
            "duration \"{text}\" has no number; write e.g. \"5s\" or \"500ms\""
        ));
    }
    number_in_unit(number, unit).map_err(|e| format!("duration \"{text}\": {e}"))
}

/// Formats a duration for messages in the shortest exact form (`500ms`, `2s`, `3m`).
pub(crate) fn format(d: Duration) -> String {
    let nanos = d.as_nanos();
    for (unit, suffix) in [
        (Unit::Hours, "h"),
        (Unit::Minutes, "m"),
        (Unit::Seconds, "s"),
        (Unit::Millis, "ms"),
    ] {
        if nanos != 0 && nanos.is_multiple_of(unit.nanos()) {
            return format!("{}{suffix}", nanos / unit.nanos());
        }
    }
    if nanos == 0 {
        return "0s".to_string();
    }
    format!("{}ns", nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_in_units() {
        assert_eq!(
            number_in_unit("5", Unit::Seconds),
            Ok(Duration::from_secs(5))
        );
        assert_eq!(
            number_in_unit("0.5", Unit::Seconds),
            Ok(Duration::from_millis(500))
        );
        assert_eq!(
            number_in_unit("500", Unit::Millis),
            Ok(Duration::from_millis(500))
        );
        assert_eq!(
            number_in_unit("2", Unit::Minutes),
            Ok(Duration::from_secs(120))
        );
        assert_eq!(
            number_in_unit("1.25", Unit::Minutes),
            Ok(Duration::from_secs(75))
        );
        for bad in [
            "",
            ".5",
            "5.",
            "-1",
            "1e3",
            "abc",
            "1.2.3",
            "99999999999999999999999",
        ] {
            assert!(number_in_unit(bad, Unit::Seconds).is_err(), "{bad}");
        }
    }

    #[test]
    fn suffixed() {
        assert_eq!(parse_suffixed("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_suffixed("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_suffixed("3m"), Ok(Duration::from_secs(180)));
        assert_eq!(parse_suffixed("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_suffixed("1.5s"), Ok(Duration::from_millis(1500)));
        assert!(parse_suffixed("10").unwrap_err().contains("no unit"));
        assert!(
            parse_suffixed("10 sec")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(parse_suffixed("s").unwrap_err().contains("no number"));
    }

    #[test]
    fn formatting() {
        assert_eq!(format(Duration::from_millis(500)), "500ms");
        assert_eq!(format(Duration::from_secs(2)), "2s");
        assert_eq!(format(Duration::from_secs(180)), "3m");
        assert_eq!(format(Duration::from_millis(1500)), "1500ms");
        assert_eq!(format(Duration::ZERO), "0s");
    }
}
