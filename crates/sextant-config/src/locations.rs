//! The location database: custom entries (`add location`, `[[location]]`)
//! and location files (`add locationFile`, `[[location_file]]`) in the
//! appliance's default format or as MaxMind databases (in any record schema
//! [`mmdb`] knows: GeoIP2 from MaxMind and DB-IP, ip-location-db, ASN), read
//! into `Model::locations`.
//!
//! The front ends check each entry's values and record them in a
//! [`DraftLocations`]; [`build`] then reads the files and builds the
//! database, once for both syntaxes. A problem inside a location file is
//! reported at the location file's own path and line, with the
//! configuration line that loads it in the message, and fails the whole
//! load like any other error (a running server keeps its database).

mod continents;
pub(crate) mod mmdb;

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sextant_core::{Coordinates, Location, LocationDb, LocationDbBuilder, Model, Place, Source};

use crate::error::Diag;
use crate::files::{FileAccess, FileError, FileKind};

/// At most this many errors are reported per location file.
const MAX_FILE_ERRORS: usize = 20;

/// The location entries and files of a configuration, in the order given.
#[derive(Debug, Default)]
pub(crate) struct DraftLocations {
    pub custom: Vec<CustomLocation>,
    pub files: Vec<LocationFile>,
}

/// `add location FROM TO "LOCATION" [-longitude X -latitude Y]`.
#[derive(Debug)]
pub(crate) struct CustomLocation {
    pub from: IpAddr,
    pub to: IpAddr,
    pub place: Place,
    pub line: usize,
    /// The command or table, for messages.
    pub context: String,
}

/// `add locationFile PATH [-format netscaler|mmdb]`.
#[derive(Debug)]
pub(crate) struct LocationFile {
    /// As written; relative paths are relative to the configuration file.
    pub path: String,
    pub format: Format,
    pub line: usize,
    pub context: String,
}

/// The formats of a location file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// The appliance's default CSV format.
    Netscaler,
    /// A MaxMind DB: GeoIP2 / GeoLite2 country or city, DB-IP, ip-location-db
    /// or an ASN database (see [`mmdb`]).
    Mmdb,
}

impl Format {
    /// `netscaler` or `mmdb`, case-insensitively.
    pub(crate) fn parse(text: &str) -> Result<Format, String> {
        if text.eq_ignore_ascii_case("netscaler") {
            Ok(Format::Netscaler)
        } else if text.eq_ignore_ascii_case("mmdb") {
            Ok(Format::Mmdb)
        } else {
            Err(format!(
                "format \"{text}\" is not supported; expected netscaler (the appliance's default CSV format) or mmdb (a MaxMind database); convert other formats to one of these"
            ))
        }
    }

    /// The format of a file given without one: mmdb for `*.mmdb`, else netscaler.
    pub(crate) fn for_path(path: &str) -> Format {
        let mmdb = Path::new(path)
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("mmdb"));
        if mmdb {
            Format::Mmdb
        } else {
            Format::Netscaler
        }
    }
}

/// Which of the two coordinates a problem is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Coord {
    Longitude,
    Latitude,
}

/// Checks a longitude and latitude given together (both or neither).
/// `names` are the two keys as this syntax spells them, for messages.
pub(crate) fn coordinates(
    longitude: Option<f64>,
    latitude: Option<f64>,
    names: (&str, &str),
) -> Result<Option<Coordinates>, (Coord, String)> {
    match (longitude, latitude) {
        (None, None) => Ok(None),
        (Some(_), None) => Err((
            Coord::Longitude,
            format!("{} needs {} as well", names.0, names.1),
        )),
        (None, Some(_)) => Err((
            Coord::Latitude,
            format!("{} needs {} as well", names.1, names.0),
        )),
        (Some(lo), Some(la)) => {
            if !(-180.0..=180.0).contains(&lo) {
                return Err((
                    Coord::Longitude,
                    format!("{} {lo} is out of range; expected -180 to 180", names.0),
                ));
            }
            if !(-90.0..=90.0).contains(&la) {
                return Err((
                    Coord::Latitude,
                    format!("{} {la} is out of range; expected -90 to 90", names.1),
                ));
            }
            Ok(Some(Coordinates {
                latitude: la,
                longitude: lo,
            }))
        }
    }
}

/// A number of degrees written as text.
pub(crate) fn degrees(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("expected a number of degrees, found \"{text}\"")),
    }
}

/// Builds `model.locations` from the draft, reading every location file as
/// `files` allows.
pub(crate) fn build(
    draft: &DraftLocations,
    files: &FileAccess,
    diag: &mut Diag,
    model: &mut Model,
) {
    let mut b = LocationDb::builder();
    for c in &draft.custom {
        if let Err(e) = b.add(c.from, c.to, c.place.clone(), Source::Custom) {
            diag.error(c.line, format!("{}: {e}", c.context));
        }
    }
    let config_file = diag.file().to_string();
    let base: PathBuf = Path::new(&config_file)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    model.location_files.clear();
    for f in &draft.files {
        let path = base.join(&f.path);
        model.location_files.push((f.path.clone(), path.clone()));
        let shown = path.display().to_string();
        let config = format!("{config_file}:{}", f.line);
        let mut errs = FileErrors {
            diag: &mut *diag,
            file: shown.clone(),
            origin: format!("location file loaded by {config}: {}", f.context),
            count: 0,
        };
        match f.format {
            Format::Netscaler => netscaler_file(&path, files, &mut b, &mut errs),
            Format::Mmdb => mmdb_file(&path, files, &mut b, &mut errs),
        }
        if errs.count > MAX_FILE_ERRORS {
            let more = errs.count - MAX_FILE_ERRORS;
            diag.error(
                f.line,
                format!(
                    "{}: ... and {more} more error{} in {shown} (the first {MAX_FILE_ERRORS} are shown)",
                    f.context,
                    if more == 1 { "" } else { "s" }
                ),
            );
        }
    }
    model.locations = Arc::new(b.build());
}

/// Records errors inside one location file, at most [`MAX_FILE_ERRORS`].
struct FileErrors<'d> {
    diag: &'d mut Diag,
    file: String,
    /// Where the file was loaded from, appended to each message.
    origin: String,
    count: usize,
}

impl FileErrors<'_> {
    fn error(&mut self, line: usize, message: impl AsRef<str>) {
        self.count += 1;
        if self.count <= MAX_FILE_ERRORS {
            self.diag.error_in(
                &self.file,
                line,
                format!("{} ({})", message.as_ref(), self.origin),
            );
        }
    }
}

fn read_error(why: &FileError) -> String {
    format!("cannot read the location file: {why}")
}

// ---------------------------------------------------------------------------
// The appliance's default format

/// Reads a location file in the appliance's default format. A problem in
/// a line is told by its line and field, never by the text: a configuration
/// received from a peer may name any file, and the errors go back to it.
fn netscaler_file(
    path: &Path,
    files: &FileAccess,
    b: &mut LocationDbBuilder,
    errs: &mut FileErrors<'_>,
) {
    let text = match files.read_text(path, FileKind::Location) {
        Ok(t) => t,
        Err(e) => return errs.error(0, read_error(&e)),
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut fields: Vec<String> = Vec::with_capacity(10);
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let entry = split_fields(trimmed, &mut fields).and_then(|()| netscaler_entry(&fields));
        match entry {
            Ok((from, to, place)) => {
                if let Err(e) = b.add(from, to, place, Source::File) {
                    errs.error(line, range_error(&e));
                }
            }
            Err(e) => errs.error(line, e),
        }
    }
}

/// A range of a location file that cannot be added, said without its
/// addresses (a file's content).
fn range_error(e: &sextant_core::RangeError) -> String {
    match e {
        sextant_core::RangeError::StartAfterEnd { .. } => {
            "the range's start (from-IP) is after its end (to-IP)".to_string()
        }
        sextant_core::RangeError::MixedFamilies { .. } => {
            "the range mixes an IPv4 and an IPv6 address".to_string()
        }
    }
}

/// Splits a line at commas; a field may be double-quoted (then it may hold
/// commas, and `""` is one quote). Fields are trimmed.
fn split_fields(line: &str, fields: &mut Vec<String>) -> Result<(), String> {
    fields.clear();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
            chars.next();
        }
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    None => {
                        return Err(format!(
                            "field {}: the quote is not closed",
                            fields.len() + 1
                        ));
                    }
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                }
            }
            while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
                chars.next();
            }
            match chars.next() {
                None => {
                    fields.push(field);
                    return Ok(());
                }
                Some(',') => fields.push(field),
                Some(_) => {
                    return Err(format!(
                        "field {}: a character after the closing quote (a quoted field ends at a comma)",
                        fields.len() + 1
                    ));
                }
            }
        } else {
            loop {
                match chars.next() {
                    None => {
                        fields.push(field.trim_end().to_string());
                        return Ok(());
                    }
                    Some(',') => break,
                    Some(c) => field.push(c),
                }
            }
            fields.push(field.trim_end().to_string());
        }
    }
}

/// Names of the fields after the two addresses, for messages.
const FIELD_NAMES: [&str; 8] = [
    "continent",
    "country",
    "region",
    "city",
    "isp",
    "organization",
    "longitude",
    "latitude",
];

/// One entry: from-IP, to-IP, up to six qualifiers, then longitude and
/// latitude (both or neither, possibly empty).
fn netscaler_entry(fields: &[String]) -> Result<(IpAddr, IpAddr, Place), String> {
    if fields.len() < 3 {
        return Err(format!(
            "{} field{} found; expected FROM-IP, TO-IP, then up to six qualifiers (continent, country, region, city, isp, organization) and optionally longitude and latitude",
            fields.len(),
            if fields.len() == 1 { "" } else { "s" }
        ));
    }
    if fields.len() > 10 {
        return Err(format!(
            "{} fields found; at most 10 are expected: FROM-IP, TO-IP, six qualifiers, longitude, latitude",
            fields.len()
        ));
    }
    let from = file_ip(&fields[0]).map_err(|e| format!("from-IP: {e}"))?;
    let to = file_ip(&fields[1]).map_err(|e| format!("to-IP: {e}"))?;
    let rest = &fields[2..];
    let (qualifiers, coords) = rest.split_at(rest.len().min(6));
    for (i, q) in qualifiers.iter().enumerate() {
        check_qualifier(q).map_err(|e| format!("{}: {e}", FIELD_NAMES[i]))?;
    }
    let number = |i: usize| -> Result<Option<f64>, String> {
        match coords.get(i).map(|s| s.trim()) {
            None | Some("") => Ok(None),
            Some(text) => degrees(text)
                .map(Some)
                .map_err(|_| format!("{}: not a number of degrees", FIELD_NAMES[6 + i])),
        }
    };
    let (longitude, latitude) = (number(0)?, number(1)?);
    let coordinates =
        coordinates(longitude, latitude, ("longitude", "latitude")).map_err(|(c, e)| {
            match (c, longitude.is_some() && latitude.is_some()) {
                // Out of range: said without the value (a file's content).
                (Coord::Longitude, true) => {
                    "longitude is out of range; expected -180 to 180".into()
                }
                (Coord::Latitude, true) => "latitude is out of range; expected -90 to 90".into(),
                _ => e,
            }
        })?;
    let place = Place {
        location: Location::from_qualifiers(qualifiers.iter().map(String::as_str)),
        coordinates,
    };
    Ok((from, to, place))
}

/// An address in a location file: dotted IPv4, IPv6, or an unsigned
/// integer (an IPv4 address as a 32-bit number).
fn file_ip(text: &str) -> Result<IpAddr, String> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return match text.parse::<u32>() {
            Ok(n) => Ok(IpAddr::V4(Ipv4Addr::from(n))),
            Err(_) => Err(
                "the number is too large for an IPv4 address as a number (at most 4294967295)"
                    .to_string(),
            ),
        };
    }
    text.parse::<IpAddr>()
        .map_err(|_| "not an IPv4 or IPv6 address, nor an IPv4 address as a number".to_string())
}

/// A qualifier as written in a file: empty or `*` is a wildcard, otherwise
/// the characters a location qualifier may hold (and no dot: dots separate
/// qualifiers).
fn check_qualifier(q: &str) -> Result<(), String> {
    let q = q.trim();
    if q.is_empty() || q == "*" {
        return Ok(());
    }
    if q.contains('.') {
        return Err("a qualifier cannot contain '.' (dots separate qualifiers)".to_string());
    }
    Location::parse(q)
        .map(|_| ())
        .map_err(|_| "a qualifier holds letters, digits, spaces and - _ & ' , only".to_string())
}

// ---------------------------------------------------------------------------
// MaxMind databases

/// Reads every network of a MaxMind database (any schema [`mmdb`] knows).
fn mmdb_file(
    path: &Path,
    files: &FileAccess,
    b: &mut LocationDbBuilder,
    errs: &mut FileErrors<'_>,
) {
    let bytes = match files.read(path, FileKind::Location) {
        Ok(bytes) => bytes,
        Err(e) => return errs.error(0, read_error(&e)),
    };
    if let Err(e) = mmdb::read(bytes, b) {
        errs.error(0, e.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(line: &str) -> Result<Vec<String>, String> {
        let mut v = Vec::new();
        split_fields(line, &mut v).map(|()| v)
    }

    #[test]
    fn splitting() {
        assert_eq!(
            fields(r#"1.2.3.4, "1.2.3.9" ,"North America","US",,x"#).unwrap(),
            ["1.2.3.4", "1.2.3.9", "North America", "US", "", "x"]
        );
        assert_eq!(fields(r#""a,b","c""d""#).unwrap(), ["a,b", "c\"d"]);
        assert_eq!(fields("a,").unwrap(), ["a", ""]);
        assert!(fields(r#""open"#).unwrap_err().contains("not closed"));
        assert!(
            fields(r#""a"b"#)
                .unwrap_err()
                .contains("after the closing quote")
        );
    }

    #[test]
    fn entries() {
        let e = |s: &str| netscaler_entry(&fields(s).unwrap());
        let (from, to, p) = e("167772160,167772415,Europe,UK,*,London,,,-0.12,51.5").unwrap();
        assert_eq!(from, "10.0.0.0".parse::<IpAddr>().unwrap());
        assert_eq!(to, "10.0.0.255".parse::<IpAddr>().unwrap());
        assert_eq!(p.location.to_string(), "europe.uk.*.london");
        assert_eq!(
            p.coordinates,
            Some(Coordinates {
                latitude: 51.5,
                longitude: -0.12
            })
        );
        let (_, _, p) = e("::1,::2,Asia").unwrap();
        assert_eq!(p.location.to_string(), "asia");
        assert_eq!(p.coordinates, None);
        assert!(e("1.2.3.4").unwrap_err().contains("1 field found"));
        assert!(e("1.2.3.x,1.2.3.4,a").unwrap_err().starts_with("from-IP"));
        assert!(e("4294967296,1,a").unwrap_err().contains("too large"));
        assert!(
            e("1,2,a,b,c,d,e,f,1")
                .unwrap_err()
                .contains("longitude needs latitude")
        );
        assert!(
            e("1,2,a,b,c,d,e,f,1,99")
                .unwrap_err()
                .contains("latitude is out of range")
        );
        assert!(
            e("1,2,a,b,c,d,e,f,x,1")
                .unwrap_err()
                .starts_with("longitude")
        );
        assert!(e("1,2,a.b").unwrap_err().contains("cannot contain '.'"));
        assert!(e("1,2,a$").unwrap_err().starts_with("continent"));
        assert!(
            e("1,2,a,b,c,d,e,f,1,2,3")
                .unwrap_err()
                .contains("11 fields")
        );
    }
}
