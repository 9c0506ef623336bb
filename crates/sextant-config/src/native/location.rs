//! `[[location]]` and `[[location_file]]`: the native form of `add location`
//! and `add locationFile`.
//!
//! ```toml
//! [[location]]
//! from = "192.0.2.0"
//! to = "192.0.2.255"
//! location = "Europe.UK.*.London"
//! longitude = -0.12
//! latitude = 51.5
//!
//! [[location_file]]
//! path = "geo/locations.csv"
//! format = "netscaler"
//! ```

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer};
use sextant_core::{Location, Place};
use toml::Spanned;

use super::{Element, Native};
use crate::locations::{Coord, CustomLocation, Format, LocationFile, coordinates};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LocationT {
    from: Spanned<String>,
    to: Spanned<String>,
    location: Spanned<String>,
    longitude: Option<Spanned<Degrees>>,
    latitude: Option<Spanned<Degrees>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LocationFileT {
    path: Spanned<String>,
    format: Option<Spanned<String>>,
}

/// Degrees written as a TOML float or integer.
#[derive(Debug, Clone, Copy)]
struct Degrees(f64);

impl<'de> Deserialize<'de> for Degrees {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Degrees;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number of degrees")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Degrees, E> {
                Ok(Degrees(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Degrees, E> {
                Ok(Degrees(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Degrees, E> {
                Ok(Degrees(v as f64))
            }
        }
        d.deserialize_any(V)
    }
}

impl Native<'_> {
    pub(super) fn location(&mut self, value: Element<'_>) {
        let Some(l) = self.de::<LocationT>("[[location]]", value) else {
            return;
        };
        let ctx = format!("[[location]] {} - {}", l.from.get_ref(), l.to.get_ref());
        let line = self.at(&l.from);
        let from = self.ip(&ctx, "from", &l.from);
        let to = self.ip(&ctx, "to", &l.to);
        let location = self.with(&ctx, "location", &l.location, |t| {
            Location::parse(t).map_err(|e| e.to_string())
        });
        let coordinates = match coordinates(
            l.longitude.as_ref().map(|v| v.get_ref().0),
            l.latitude.as_ref().map(|v| v.get_ref().0),
            ("longitude", "latitude"),
        ) {
            Ok(c) => c,
            Err((which, e)) => {
                let key = match which {
                    Coord::Longitude => &l.longitude,
                    Coord::Latitude => &l.latitude,
                };
                let at = key.as_ref().map_or(line, |v| self.at(v));
                return self.error(at, &ctx, e);
            }
        };
        let (Some(from), Some(to), Some(location)) = (from, to, location) else {
            return;
        };
        self.draft.locations.custom.push(CustomLocation {
            from,
            to,
            place: Place {
                location,
                coordinates,
            },
            line,
            context: ctx,
        });
    }

    pub(super) fn location_file(&mut self, value: Element<'_>) {
        let Some(f) = self.de::<LocationFileT>("[[location_file]]", value) else {
            return;
        };
        let path = f.path.get_ref().clone();
        let ctx = format!("[[location_file]] {path}");
        let line = self.at(&f.path);
        if path.trim().is_empty() {
            return self.error(line, &ctx, "path is empty");
        }
        let format = match &f.format {
            Some(v) => match self.with(&ctx, "format", v, Format::parse) {
                Some(f) => f,
                None => return,
            },
            None => Format::for_path(&path),
        };
        self.draft.locations.files.push(LocationFile {
            path,
            format,
            line,
            context: ctx,
        });
    }
}
