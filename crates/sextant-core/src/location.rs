//! Locations in the appliance's dotted qualifier notation, and how they match.
//!
//! A location has up to six qualifiers,
//! `continent.country.region.city.isp.organization`; `*` (or a missing
//! trailing qualifier) is a wildcard. Qualifiers compare case-insensitively,
//! so they are stored in lower case.

use std::fmt;

/// How many qualifiers a location has.
pub const QUALIFIERS: usize = 6;

/// Names of the qualifiers, for messages.
pub const QUALIFIER_NAMES: [&str; QUALIFIERS] = [
    "continent",
    "country",
    "region",
    "city",
    "isp",
    "organization",
];

/// A location: six qualifiers, each a lower-case name or a wildcard (`None`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Location {
    qualifiers: [Option<Box<str>>; QUALIFIERS],
}

/// A location string that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocationError {
    #[error(
        "location {0:?} has more than six qualifiers (continent.country.region.city.isp.organization)"
    )]
    TooManyQualifiers(String),
    #[error("location {text:?}: qualifier {position} is empty; use * for a wildcard")]
    EmptyQualifier { text: String, position: usize },
    #[error(
        "location {text:?}: qualifier {position} has a character other than letters, digits, space, '-', '_', '&' or '''"
    )]
    BadCharacter { text: String, position: usize },
}

impl Location {
    /// Reads `Europe.UK.*.*` and the like. Fewer than six qualifiers leave the
    /// rest as wildcards; an empty string is the all-wildcard location.
    pub fn parse(text: &str) -> Result<Self, LocationError> {
        let mut qualifiers: [Option<Box<str>>; QUALIFIERS] = Default::default();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Ok(Location { qualifiers });
        }
        let parts: Vec<&str> = trimmed.split('.').collect();
        if parts.len() > QUALIFIERS {
            return Err(LocationError::TooManyQualifiers(text.to_string()));
        }
        for (i, part) in parts.iter().enumerate() {
            let part = part.trim();
            if part.is_empty() {
                return Err(LocationError::EmptyQualifier {
                    text: text.to_string(),
                    position: i + 1,
                });
            }
            if part == "*" {
                continue;
            }
            if !part
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_' | '&' | '\'' | ','))
            {
                return Err(LocationError::BadCharacter {
                    text: text.to_string(),
                    position: i + 1,
                });
            }
            qualifiers[i] = Some(part.to_lowercase().into_boxed_str());
        }
        Ok(Location { qualifiers })
    }

    /// Builds a location from qualifiers given one by one (`*` or empty is a
    /// wildcard), as location files and GeoIP databases provide them.
    pub fn from_qualifiers<'a>(parts: impl IntoIterator<Item = &'a str>) -> Self {
        let mut qualifiers: [Option<Box<str>>; QUALIFIERS] = Default::default();
        for (slot, part) in qualifiers.iter_mut().zip(parts) {
            let part = part.trim();
            if !part.is_empty() && part != "*" {
                *slot = Some(part.to_lowercase().into_boxed_str());
            }
        }
        Location { qualifiers }
    }

    /// The qualifier at `position` (0 = continent), `None` for a wildcard.
    pub fn qualifier(&self, position: usize) -> Option<&str> {
        self.qualifiers.get(position).and_then(|q| q.as_deref())
    }

    /// True when every qualifier is a wildcard.
    pub fn is_wildcard(&self) -> bool {
        self.qualifiers.iter().all(Option::is_none)
    }

    /// Perfect match of a preferred location (`self`) against a service's
    /// location: every non-wildcard qualifier of `self` equals the service's
    /// qualifier at the same position. A wildcard in the service's location
    /// does not equal a named qualifier.
    pub fn matches_perfectly(&self, service: &Location) -> bool {
        self.qualifiers
            .iter()
            .zip(&service.qualifiers)
            .all(|(want, have)| want.is_none() || want == have)
    }

    /// Partial match: not perfect, but a leading, non-empty part of the
    /// non-wildcard qualifiers of `self` matches. Because qualifiers are
    /// hierarchical, "a subset" is read as a leading subset: the first
    /// non-wildcard qualifier (usually the continent) must match.
    /// `Europe.UK` partially matches `Europe.RU`; `*.UK` has no partial
    /// matches (its only named qualifier is the country).
    pub fn matches_partially(&self, service: &Location) -> bool {
        let Some(first) = self.qualifiers.iter().position(Option::is_some) else {
            return false;
        };
        self.qualifiers[first] == service.qualifiers[first] && !self.matches_perfectly(service)
    }

    /// How many leading qualifiers two locations share (both named and
    /// equal); static proximity prefers the services with the most.
    pub fn shared_prefix(&self, other: &Location) -> usize {
        self.qualifiers
            .iter()
            .zip(&other.qualifiers)
            .take_while(|(a, b)| a.is_some() && a == b)
            .count()
    }
}

/// A qualifier id of a [`LocationCode`] that no place of the database has.
pub(crate) const UNKNOWN_QUALIFIER: u32 = u32::MAX;

/// A [`Location`] as the interned qualifier ids of one
/// [`LocationDb`](crate::LocationDb): 0 is a wildcard, equal names have
/// equal ids, and a name no place has is [`UNKNOWN_QUALIFIER`]. The
/// matches compare integers instead of strings and answer as
/// [`Location`]'s do for locations coded by the same database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LocationCode(pub(crate) [u32; QUALIFIERS]);

impl LocationCode {
    /// As [`Location::matches_perfectly`].
    #[inline]
    pub fn matches_perfectly(&self, service: &LocationCode) -> bool {
        self.0
            .iter()
            .zip(&service.0)
            .all(|(want, have)| *want == 0 || want == have)
    }

    /// As [`Location::matches_partially`].
    #[inline]
    pub fn matches_partially(&self, service: &LocationCode) -> bool {
        let Some(first) = self.0.iter().position(|q| *q != 0) else {
            return false;
        };
        self.0[first] == service.0[first] && !self.matches_perfectly(service)
    }

    /// As [`Location::shared_prefix`].
    #[inline]
    pub fn shared_prefix(&self, other: &LocationCode) -> usize {
        self.0
            .iter()
            .zip(&other.0)
            .take_while(|(a, b)| **a != 0 && a == b)
            .count()
    }
}

impl fmt::Display for Location {
    /// The dotted form with trailing wildcards dropped (`europe.uk`), or `*`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let last = self.qualifiers.iter().rposition(Option::is_some);
        let Some(last) = last else {
            return f.write_str("*");
        };
        for (i, q) in self.qualifiers[..=last].iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            f.write_str(q.as_deref().unwrap_or("*"))?;
        }
        Ok(())
    }
}

/// Latitude and longitude in degrees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Coordinates {
    pub latitude: f64,
    pub longitude: f64,
}

impl Coordinates {
    /// Great-circle distance in kilometres (haversine), to break proximity ties.
    pub fn distance_km(&self, other: &Coordinates) -> f64 {
        let (la1, la2) = (self.latitude.to_radians(), other.latitude.to_radians());
        let dla = la2 - la1;
        let dlo = (other.longitude - self.longitude).to_radians();
        let a = (dla / 2.0).sin().powi(2) + la1.cos() * la2.cos() * (dlo / 2.0).sin().powi(2);
        2.0 * 6371.0 * a.sqrt().min(1.0).asin()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(s: &str) -> Location {
        Location::parse(s).unwrap()
    }

    #[test]
    fn parse_and_display() {
        assert_eq!(loc("Europe.UK.*.*").to_string(), "europe.uk");
        assert_eq!(loc("*.ZMB.*.*").to_string(), "*.zmb");
        assert_eq!(loc("").to_string(), "*");
        assert_eq!(loc("a.b.c.d.e.f").to_string(), "a.b.c.d.e.f");
        assert!(Location::parse("a.b.c.d.e.f.g").is_err());
        assert!(Location::parse("a..b").is_err());
        assert!(Location::parse("a.b$").is_err());
    }

    #[test]
    fn seed_000_matches() {
        // Perfect: every named qualifier of the preferred location equal.
        assert!(loc("Asia.HK").matches_perfectly(&loc("asia.hk")));
        assert!(loc("*.UK.*.*").matches_perfectly(&loc("Europe.UK.*.*")));
        assert!(!loc("Asia.HK").matches_perfectly(&loc("Asia.IN")));
        // Partial: Europe.eg partially matches Europe.uk; Asia.in and Asia.JPN match Asia.hk.
        assert!(loc("Europe.UK").matches_partially(&loc("Europe.eg")));
        assert!(loc("Asia.HK").matches_partially(&loc("Asia.in")));
        assert!(loc("Asia.HK").matches_partially(&loc("Asia.JPN")));
        assert!(!loc("Asia.HK").matches_partially(&loc("Asia.HK")));
        assert!(!loc("Asia.HK").matches_partially(&loc("Africa.ZMB")));
        assert!(!loc("*.UK").matches_partially(&loc("Europe.FR")));
    }

    #[test]
    fn shared_prefix_counts_leading_named_qualifiers() {
        assert_eq!(
            loc("Europe.UK.London").shared_prefix(&loc("europe.uk.leeds")),
            2
        );
        assert_eq!(loc("Europe.UK").shared_prefix(&loc("Asia.UK")), 0);
        assert_eq!(loc("*.UK").shared_prefix(&loc("*.UK")), 0);
    }

    #[test]
    fn distance() {
        let london = Coordinates {
            latitude: 51.5074,
            longitude: -0.1278,
        };
        let paris = Coordinates {
            latitude: 48.8566,
            longitude: 2.3522,
        };
        let d = london.distance_km(&paris);
        assert!((d - 343.5).abs() < 2.0, "{d}");
    }
}
