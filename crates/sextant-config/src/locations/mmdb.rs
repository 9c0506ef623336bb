//! MaxMind DB files (`.mmdb`) in the record schemas users have, read into
//! location-database ranges.
//!
//! The MaxMind DB *format* is one thing (a search tree over address bits and
//! a data section of typed values); what a record *holds* is another, and
//! each publisher chooses its own. Sextant reads three record schemas
//! ([`Schema`]); docs/locations.md has the table of which field becomes
//! which qualifier.
//!
//! How the schema is recognised: the first record that is not an empty map
//! decides by its keys (`country_code` → ip-location-db; `continent`,
//! `country`, `registered_country`, `subdivisions`, `location`, ... →
//! GeoIP2; `autonomous_system_*`, `isp` → ASN). The metadata's
//! `database_type` (`GeoLite2-City`, `DBIP-City-Lite`, `GeoLite2-ASN`, ...)
//! is taken first when the record has a key of the schema it names, which
//! settles a record that would fit two. Every record is then read as that
//! schema: a field of that schema holding another MaxMind DB type
//! (`city` a string where GeoIP2 has a map) is an *unknown record schema*
//! error naming the field and both types, never "corrupt"; "corrupt" is
//! kept for files the MaxMind DB decoder itself cannot read.
//!
//! Records are decoded once each (many networks share one record) into a
//! [`Val`] tree that keeps only the keys some schema reads, then mapped to a
//! place interned in the builder, so a network costs one hash lookup.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use sextant_core::{Coordinates, Location, LocationDbBuilder, Place, PlaceId, Source};

use super::continents::Continent;

/// The record schemas Sextant reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Schema {
    /// MaxMind GeoIP2 / GeoLite2 City and Country, and DB-IP's databases
    /// (lite and commercial), which use MaxMind's layout: nested
    /// `continent`, `country`, `subdivisions`, `city`, `location` maps.
    GeoIp2,
    /// ip-location-db (the `@ip-location-db/*-mmdb` packages): flat records
    /// of `country_code`, `state1`, `state2`, `city`, `latitude`,
    /// `longitude`, ...
    IpLocationDb,
    /// ASN / ISP databases (GeoLite2-ASN, GeoIP2-ISP, DB-IP ASN lite,
    /// ip-location-db's asn packages): `autonomous_system_number`,
    /// `autonomous_system_organization`, and `isp`/`organization` in
    /// GeoIP2-ISP.
    Asn,
}

impl Schema {
    fn name(self) -> &'static str {
        match self {
            Schema::GeoIp2 => "GeoIP2 (MaxMind GeoIP2/GeoLite2, DB-IP)",
            Schema::IpLocationDb => "ip-location-db",
            Schema::Asn => "ASN",
        }
    }

    /// Keys that, found in a record, identify the schema.
    fn keys(self) -> &'static [&'static str] {
        match self {
            Schema::GeoIp2 => &[
                "continent",
                "country",
                "registered_country",
                "represented_country",
                "subdivisions",
                "location",
                "postal",
                "traits",
            ],
            Schema::IpLocationDb => &["country_code", "state1", "state2"],
            Schema::Asn => &[
                "autonomous_system_number",
                "autonomous_system_organization",
                "isp",
                "organization",
            ],
        }
    }

    /// The schema a metadata `database_type` names, if it is a known product.
    fn of_database_type(t: &str) -> Option<Schema> {
        let t = t.to_ascii_lowercase();
        if t.contains("asn") || t == "geoip2-isp" || t == "dbip-isp" {
            Some(Schema::Asn)
        } else if ["geoip2-", "geolite2-", "geoip-", "dbip-"]
            .iter()
            .any(|p| t.starts_with(p))
        {
            Some(Schema::GeoIp2)
        } else {
            None
        }
    }

    /// The schema of a record: the database type's when the record has a
    /// key of it, otherwise the first whose keys the record has.
    fn detect(database_type: &str, fields: &[(&str, Val<'_>)]) -> Option<Schema> {
        let has = |s: Schema| fields.iter().any(|(k, _)| s.keys().contains(k));
        if let Some(s) = Schema::of_database_type(database_type).filter(|s| has(*s)) {
            return Some(s);
        }
        [Schema::IpLocationDb, Schema::GeoIp2, Schema::Asn]
            .into_iter()
            .find(|s| has(*s))
    }
}

/// What the schemas are, for the unknown-schema message.
const KNOWN_SCHEMAS: &str = "GeoIP2 (MaxMind GeoIP2/GeoLite2 City and Country, DB-IP lite: continent, country, subdivisions, city and location maps), ip-location-db (country_code, state1, city, latitude, longitude), ASN (autonomous_system_number, autonomous_system_organization); see docs/locations.md";

/// Why a MaxMind database could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MmdbError {
    #[error("not a readable MaxMind database (.mmdb): {0}")]
    NotMmdb(String),
    #[error("corrupt MaxMind database: {0}")]
    Corrupt(String),
    #[error("unknown record schema: {0}; known schemas: {KNOWN_SCHEMAS}")]
    UnknownSchema(String),
}

/// What a database held, for benchmarks and messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Summary {
    /// `None` when every record was empty.
    pub schema: Option<Schema>,
    pub database_type: String,
    pub networks: usize,
    /// Distinct records decoded.
    pub records: usize,
}

/// Reads every network of the MaxMind database `bytes` (a file's content,
/// read by [`crate::files`]) into `b`.
pub(crate) fn read(bytes: Vec<u8>, b: &mut LocationDbBuilder) -> Result<Summary, MmdbError> {
    let reader = match maxminddb::Reader::from_source(bytes) {
        Ok(r) => r,
        Err(e) => return Err(MmdbError::NotMmdb(e.to_string())),
    };
    let database_type = reader.metadata().database_type.clone();
    let networks = reader
        .networks(Default::default())
        .map_err(|e| MmdbError::Corrupt(format!("cannot iterate the networks: {e}")))?;
    let mut summary = Summary {
        schema: None,
        database_type,
        networks: 0,
        records: 0,
    };
    // Many networks share one record: decode each record once.
    let mut places: HashMap<usize, Option<PlaceId>> = HashMap::new();
    for item in networks {
        let item = item.map_err(|e| MmdbError::Corrupt(e.to_string()))?;
        let network = item
            .network()
            .map_err(|e| MmdbError::Corrupt(e.to_string()))?;
        let Some(offset) = item.offset() else {
            continue;
        };
        let place = match places.get(&offset) {
            Some(p) => *p,
            None => {
                let val = item
                    .decode::<Val<'_>>()
                    .map_err(|e| MmdbError::Corrupt(e.to_string()))?;
                summary.records += 1;
                let p = match val {
                    None => None,
                    Some(v) => record_place(&v, offset, &mut summary)?.map(|p| b.intern(p)),
                };
                places.insert(offset, p);
                p
            }
        };
        summary.networks += 1;
        if let Some(id) = place {
            let (from, to) = network_range(network.network(), network.prefix());
            b.add_interned(from, to, id, Source::File)
                .map_err(|e| MmdbError::Corrupt(e.to_string()))?;
        }
    }
    Ok(summary)
}

/// The place of one record (detecting the schema on the first record that
/// has fields).
fn record_place(
    val: &Val<'_>,
    offset: usize,
    summary: &mut Summary,
) -> Result<Option<Place>, MmdbError> {
    let context = || {
        format!(
            "the record at data offset {offset}, database_type \"{}\"",
            summary.database_type
        )
    };
    let Val::Map(fields) = val else {
        return Err(MmdbError::UnknownSchema(format!(
            "{} is a {}, not a map",
            context(),
            val.kind()
        )));
    };
    if fields.is_empty() {
        return Ok(None);
    }
    let schema = match summary.schema {
        Some(s) => s,
        None => {
            let Some(s) = Schema::detect(&summary.database_type, fields) else {
                let listed: Vec<String> = fields
                    .iter()
                    .map(|(k, v)| format!("\"{k}\" ({})", v.kind()))
                    .collect();
                return Err(MmdbError::UnknownSchema(format!(
                    "{} has the fields {}, none of which a known schema has",
                    context(),
                    listed.join(", ")
                )));
            };
            summary.schema = Some(s);
            s
        }
    };
    let parts = match schema {
        Schema::GeoIp2 => geoip2(fields),
        Schema::IpLocationDb => ip_location_db(fields),
        Schema::Asn => asn(fields),
    };
    let parts = parts.map_err(|m| {
        MmdbError::UnknownSchema(format!(
            "field \"{}\" is {} where the {} schema expects {} ({})",
            m.field,
            m.found,
            schema.name(),
            m.expected,
            context()
        ))
    })?;
    Ok(parts.place())
}

// ---------------------------------------------------------------------------
// The schemas

/// What a record says, before it becomes a [`Place`].
#[derive(Default)]
struct Parts<'a> {
    /// Qualifiers: continent, country, region, city, isp, organization.
    qualifiers: [&'a str; 6],
    latitude: Option<f64>,
    longitude: Option<f64>,
}

impl Parts<'_> {
    /// `None` when the record names no qualifier and has no coordinates.
    fn place(&self) -> Option<Place> {
        let parts = self.qualifiers.map(qualifier);
        let location = Location::from_qualifiers(parts.iter().map(String::as_str));
        let coordinates = match (self.latitude, self.longitude) {
            (Some(la), Some(lo))
                if (-90.0..=90.0).contains(&la) && (-180.0..=180.0).contains(&lo) =>
            {
                Some(Coordinates {
                    latitude: la,
                    longitude: lo,
                })
            }
            _ => None,
        };
        (!location.is_wildcard() || coordinates.is_some()).then_some(Place {
            location,
            coordinates,
        })
    }
}

/// A name from a record as a qualifier: dots separate qualifiers, so
/// `St. John's` becomes `St John's`; runs of white space become one space.
pub(super) fn qualifier(name: &str) -> String {
    name.replace('.', "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A field that holds another type than the schema has there.
struct Mismatch {
    field: String,
    found: String,
    expected: &'static str,
}

/// Reads typed fields of a record, naming the field path in mismatches.
type Fields<'v, 'a> = &'v [(&'a str, Val<'a>)];

fn get<'v, 'a>(fields: Fields<'v, 'a>, key: &str) -> Option<&'v Val<'a>> {
    fields.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
}

fn mismatch(field: &str, found: &Val<'_>, expected: &'static str) -> Mismatch {
    Mismatch {
        field: field.to_string(),
        found: format!("a {}", found.kind()),
        expected,
    }
}

/// A string field (absent: empty).
fn text<'a>(fields: Fields<'_, 'a>, key: &str, path: &str) -> Result<&'a str, Mismatch> {
    match get(fields, key) {
        None => Ok(""),
        Some(Val::Str(s)) => Ok(s),
        Some(v) => Err(mismatch(path, v, "a utf8_string")),
    }
}

/// A map field (absent: empty).
fn map<'v, 'a>(
    fields: Fields<'v, 'a>,
    key: &str,
    path: &str,
    expected: &'static str,
) -> Result<Fields<'v, 'a>, Mismatch> {
    match get(fields, key) {
        None => Ok(&[]),
        Some(Val::Map(m)) => Ok(m),
        Some(v) => Err(mismatch(path, v, expected)),
    }
}

/// A number of degrees: a double, a float, an integer, or a string holding
/// a number (absent or an empty string: none).
fn degrees(fields: Fields<'_, '_>, key: &str, path: &str) -> Result<Option<f64>, Mismatch> {
    const EXPECTED: &str = "a number (double, float, integer, or a utf8_string holding one)";
    match get(fields, key) {
        None => Ok(None),
        Some(Val::Num(n, _)) => Ok(n.is_finite().then_some(*n)),
        Some(Val::Str(s)) if s.trim().is_empty() => Ok(None),
        Some(Val::Str(s)) => match s.trim().parse::<f64>() {
            Ok(n) if n.is_finite() => Ok(Some(n)),
            _ => Err(Mismatch {
                field: path.to_string(),
                found: format!("a utf8_string that is not a number ({s:?})"),
                expected: EXPECTED,
            }),
        },
        Some(v) => Err(mismatch(path, v, EXPECTED)),
    }
}

/// `names.en` of a GeoIP2 map (`continent`, `city`, a subdivision).
fn english<'a>(fields: Fields<'_, 'a>, path: &str) -> Result<&'a str, Mismatch> {
    let names = map(
        fields,
        "names",
        &format!("{path}.names"),
        "a map of language codes to names",
    )?;
    text(names, "en", &format!("{path}.names.en"))
}

/// GeoIP2: continent = `continent.names.en` (else the name of
/// `continent.code`, else the country's continent); country =
/// `country.iso_code` (else `registered_country.iso_code`); region = the
/// first subdivision's `iso_code` (else its English name: DB-IP's lite
/// databases have no subdivision codes); city = `city.names.en`;
/// coordinates = `location.latitude` / `location.longitude`.
fn geoip2<'a>(fields: Fields<'_, 'a>) -> Result<Parts<'a>, Mismatch> {
    const A_MAP: &str = "a map";
    let continent = map(fields, "continent", "continent", A_MAP)?;
    let country = map(fields, "country", "country", A_MAP)?;
    let registered = map(fields, "registered_country", "registered_country", A_MAP)?;
    let city = map(fields, "city", "city", "a map (city.names.en)")?;
    let location = map(fields, "location", "location", A_MAP)?;
    let subdivision: Fields<'_, 'a> = match get(fields, "subdivisions") {
        None => &[],
        Some(Val::Array(items)) => match items.first() {
            None => &[],
            Some(Val::Map(m)) => m,
            Some(v) => return Err(mismatch("subdivisions[0]", v, A_MAP)),
        },
        Some(v) => return Err(mismatch("subdivisions", v, "an array of maps")),
    };

    let mut country_code = text(country, "iso_code", "country.iso_code")?;
    if country_code.is_empty() {
        country_code = text(registered, "iso_code", "registered_country.iso_code")?;
    }
    let mut continent_name = english(continent, "continent")?;
    if continent_name.is_empty() {
        let code = text(continent, "code", "continent.code")?;
        continent_name = Continent::from_code(code)
            .or_else(|| Continent::of_country(country_code))
            .map_or("", Continent::name);
    }
    let mut region = text(subdivision, "iso_code", "subdivisions[0].iso_code")?;
    if region.is_empty() {
        region = english(subdivision, "subdivisions[0]")?;
    }
    Ok(Parts {
        qualifiers: [
            continent_name,
            country_code,
            region,
            english(city, "city")?,
            "",
            "",
        ],
        latitude: degrees(location, "latitude", "location.latitude")?,
        longitude: degrees(location, "longitude", "location.longitude")?,
    })
}

/// ip-location-db: continent = the continent of `country_code` (the
/// built-in table); country = `country_code`; region = `state1`; city =
/// `city`; coordinates = `latitude` / `longitude`. `state2`, `postcode`
/// and `timezone` are not used.
fn ip_location_db<'a>(fields: Fields<'_, 'a>) -> Result<Parts<'a>, Mismatch> {
    let country = text(fields, "country_code", "country_code")?;
    Ok(Parts {
        qualifiers: [
            Continent::of_country(country).map_or("", Continent::name),
            country,
            text(fields, "state1", "state1")?,
            text(fields, "city", "city")?,
            "",
            "",
        ],
        latitude: degrees(fields, "latitude", "latitude")?,
        longitude: degrees(fields, "longitude", "longitude")?,
    })
}

/// ASN: isp = `isp` (GeoIP2-ISP), else `autonomous_system_organization`;
/// organization = `organization` (GeoIP2-ISP). No continent, country or
/// coordinates.
fn asn<'a>(fields: Fields<'_, 'a>) -> Result<Parts<'a>, Mismatch> {
    let mut isp = text(fields, "isp", "isp")?;
    if isp.is_empty() {
        isp = text(
            fields,
            "autonomous_system_organization",
            "autonomous_system_organization",
        )?;
    }
    Ok(Parts {
        qualifiers: [
            "",
            "",
            "",
            "",
            isp,
            text(fields, "organization", "organization")?,
        ],
        latitude: None,
        longitude: None,
    })
}

// ---------------------------------------------------------------------------
// Decoding

/// The MaxMind DB data types, named as the format's specification names
/// them (and as `mmdblookup` prints them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Utf8String,
    Double,
    Bytes,
    Uint16,
    Uint32,
    Map,
    Int32,
    Uint64,
    Uint128,
    Array,
    Boolean,
    Float,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Utf8String => "utf8_string",
            Kind::Double => "double",
            Kind::Bytes => "bytes",
            Kind::Uint16 => "uint16",
            Kind::Uint32 => "uint32",
            Kind::Map => "map",
            Kind::Int32 => "int32",
            Kind::Uint64 => "uint64",
            Kind::Uint128 => "uint128",
            Kind::Array => "array",
            Kind::Boolean => "boolean",
            Kind::Float => "float",
        })
    }
}

/// Keys whose values some schema reads (at any depth); the values of other
/// keys are skipped, only their type kept.
const READ_KEYS: &[&str] = &[
    "continent",
    "country",
    "registered_country",
    "subdivisions",
    "city",
    "location",
    "names",
    "en",
    "code",
    "iso_code",
    "latitude",
    "longitude",
    "country_code",
    "state1",
    "isp",
    "organization",
    "autonomous_system_organization",
];

/// A decoded value, borrowing its strings from the database.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val<'a> {
    Str(&'a str),
    Num(f64, Kind),
    Map(Vec<(&'a str, Val<'a>)>),
    Array(Vec<Val<'a>>),
    /// A value not kept: bytes, a boolean, or the value of a key no schema
    /// reads.
    Skipped(Kind),
}

impl Val<'_> {
    fn kind(&self) -> Kind {
        match self {
            Val::Str(_) => Kind::Utf8String,
            Val::Num(_, k) | Val::Skipped(k) => *k,
            Val::Map(_) => Kind::Map,
            Val::Array(_) => Kind::Array,
        }
    }
}

/// An `f32` as the `f64` of its shortest decimal form: the float 37.751
/// becomes 37.751, not 37.750999450683594.
fn widen(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

impl<'de> Deserialize<'de> for Val<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValVisitor)
    }
}

struct ValVisitor;

impl<'de> Visitor<'de> for ValVisitor {
    type Value = Val<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a MaxMind DB value")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Val::Str(v))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        // The MaxMind decoder always lends strings from the file.
        Ok(Val::Skipped(Kind::Utf8String))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Val::Num(v, Kind::Double))
    }
    fn visit_f32<E: de::Error>(self, v: f32) -> Result<Self::Value, E> {
        Ok(Val::Num(widen(v), Kind::Float))
    }
    fn visit_u16<E: de::Error>(self, v: u16) -> Result<Self::Value, E> {
        Ok(Val::Num(f64::from(v), Kind::Uint16))
    }
    fn visit_u32<E: de::Error>(self, v: u32) -> Result<Self::Value, E> {
        Ok(Val::Num(f64::from(v), Kind::Uint32))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Val::Num(v as f64, Kind::Uint64))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Self::Value, E> {
        Ok(Val::Num(v as f64, Kind::Uint128))
    }
    fn visit_i32<E: de::Error>(self, v: i32) -> Result<Self::Value, E> {
        Ok(Val::Num(f64::from(v), Kind::Int32))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Val::Num(v as f64, Kind::Int32))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Val::Skipped(Kind::Boolean))
    }
    fn visit_borrowed_bytes<E: de::Error>(self, _: &'de [u8]) -> Result<Self::Value, E> {
        Ok(Val::Skipped(Kind::Bytes))
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Self::Value, E> {
        Ok(Val::Skipped(Kind::Bytes))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(m.size_hint().unwrap_or(0).min(16));
        while let Some(k) = m.next_key::<&'de str>()? {
            let v = if READ_KEYS.contains(&k) {
                m.next_value::<Val<'de>>()?
            } else {
                Val::Skipped(m.next_value::<KindOnly>()?.0)
            };
            out.push((k, v));
        }
        Ok(Val::Map(out))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(s.size_hint().unwrap_or(0).min(16));
        while let Some(v) = s.next_element::<Val<'de>>()? {
            out.push(v);
        }
        Ok(Val::Array(out))
    }
}

/// The type of a value, its contents skipped.
struct KindOnly(Kind);

impl<'de> Deserialize<'de> for KindOnly {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(KindVisitor)
    }
}

struct KindVisitor;

impl<'de> Visitor<'de> for KindVisitor {
    type Value = KindOnly;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a MaxMind DB value")
    }

    fn visit_borrowed_str<E: de::Error>(self, _: &'de str) -> Result<Self::Value, E> {
        Ok(KindOnly(Kind::Utf8String))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(KindOnly(Kind::Utf8String))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(KindOnly(Kind::Double))
    }
    fn visit_f32<E: de::Error>(self, _: f32) -> Result<Self::Value, E> {
        Ok(KindOnly(Kind::Float))
    }
    fn visit_u16<E: de::Error>(self, _: u16) -> Result<Self::Value, E> {
        Ok(KindOnly(Kind::Uint16))
    }
    fn visit_u32<E: de::Error>(self, _: u32) -> Result<Self::Value, E> {
        Ok(KindOnly(Kind::Uint32))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(KindOnly(Kind::Uint64))
    }
    fn visit_u128<E: de::Error>(self, _: u128) -> Result<Self::Value, E> {
        Ok(KindOnly(Kind::Uint128))
    }
    fn visit_i32<E: de::Error>(self, _: i32) -> Result<Self::Value, E> {
        Ok(KindOnly(Kind::Int32))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(KindOnly(Kind::Int32))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(KindOnly(Kind::Boolean))
    }
    fn visit_borrowed_bytes<E: de::Error>(self, _: &'de [u8]) -> Result<Self::Value, E> {
        Ok(KindOnly(Kind::Bytes))
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Self::Value, E> {
        Ok(KindOnly(Kind::Bytes))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
        while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(KindOnly(Kind::Map))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
        while s.next_element::<IgnoredAny>()?.is_some() {}
        Ok(KindOnly(Kind::Array))
    }
}

/// First and last address of `ip/prefix`.
pub(super) fn network_range(ip: IpAddr, prefix: u8) -> (IpAddr, IpAddr) {
    match ip {
        IpAddr::V4(a) => {
            let host = u32::MAX.checked_shr(u32::from(prefix)).unwrap_or(0);
            let first = u32::from(a) & !host;
            (
                IpAddr::V4(Ipv4Addr::from(first)),
                IpAddr::V4(Ipv4Addr::from(first | host)),
            )
        }
        IpAddr::V6(a) => {
            let host = u128::MAX.checked_shr(u32::from(prefix)).unwrap_or(0);
            let first = u128::from(a) & !host;
            (
                IpAddr::V6(Ipv6Addr::from(first)),
                IpAddr::V6(Ipv6Addr::from(first | host)),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&'static str, Val<'static>)]) -> Vec<(&'static str, Val<'static>)> {
        pairs.to_vec()
    }

    #[test]
    fn floats_widen_to_their_shortest_decimal() {
        assert_eq!(widen(37.751_f32), 37.751);
        assert_eq!(widen(-97.822_f32), -97.822);
    }

    #[test]
    fn detection_by_keys_and_database_type() {
        let ild = fields(&[("city", Val::Str("")), ("country_code", Val::Str("US"))]);
        assert_eq!(
            Schema::detect("city ipv4", &ild),
            Some(Schema::IpLocationDb)
        );
        // A database type that the record does not fit does not decide.
        assert_eq!(
            Schema::detect("GeoLite2-City", &ild),
            Some(Schema::IpLocationDb)
        );
        let geo = fields(&[("country", Val::Map(vec![]))]);
        assert_eq!(Schema::detect("whatever", &geo), Some(Schema::GeoIp2));
        assert_eq!(
            Schema::detect("DBIP-Country-Lite", &geo),
            Some(Schema::GeoIp2)
        );
        let asn = fields(&[("autonomous_system_number", Val::Num(1.0, Kind::Uint32))]);
        assert_eq!(Schema::detect("GeoLite2-ASN", &asn), Some(Schema::Asn));
        assert_eq!(Schema::detect("asn ipv4", &asn), Some(Schema::Asn));
        // GeoIP2-ISP has both ASN and ISP keys and no location keys.
        let isp = fields(&[
            ("autonomous_system_number", Val::Num(1.0, Kind::Uint32)),
            ("isp", Val::Str("x")),
        ]);
        assert_eq!(Schema::detect("GeoIP2-ISP", &isp), Some(Schema::Asn));
        let other = fields(&[("foo", Val::Skipped(Kind::Uint32))]);
        assert_eq!(Schema::detect("GeoLite2-City", &other), None);
    }

    #[test]
    fn degrees_of_every_type() {
        let f = fields(&[
            ("a", Val::Num(1.5, Kind::Double)),
            ("b", Val::Str(" -2.25 ")),
            ("c", Val::Str("")),
            ("d", Val::Str("north")),
            ("e", Val::Map(vec![])),
        ]);
        assert_eq!(degrees(&f, "a", "a").ok(), Some(Some(1.5)));
        assert_eq!(degrees(&f, "b", "b").ok(), Some(Some(-2.25)));
        assert_eq!(degrees(&f, "c", "c").ok(), Some(None));
        assert_eq!(degrees(&f, "z", "z").ok(), Some(None));
        let e = degrees(&f, "d", "d").expect_err("mismatch");
        assert!(e.found.contains("\"north\""), "{}", e.found);
        let e = degrees(&f, "e", "e").expect_err("mismatch");
        assert_eq!(e.found, "a map");
    }

    #[test]
    fn names() {
        assert_eq!(qualifier("St. John's"), "St John's");
        assert_eq!(qualifier("North  America"), "North America");
    }

    #[test]
    fn ranges_of_networks() {
        let r = |s: &str, p| {
            let (a, b) = network_range(s.parse().unwrap(), p);
            (a.to_string(), b.to_string())
        };
        assert_eq!(
            r("10.1.2.3", 8),
            ("10.0.0.0".into(), "10.255.255.255".into())
        );
        assert_eq!(r("10.1.2.3", 32), ("10.1.2.3".into(), "10.1.2.3".into()));
        assert_eq!(
            r("10.1.2.3", 0),
            ("0.0.0.0".into(), "255.255.255.255".into())
        );
        assert_eq!(
            r("2001:db8::1", 32),
            (
                "2001:db8::".into(),
                "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff".into()
            )
        );
        assert_eq!(r("::", 0).1, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
    }
}
