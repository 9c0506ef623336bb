//! The location database in both syntaxes: custom entries, location files
//! in the appliance's format, MaxMind databases built by the test itself,
//! and how problems in them are reported.

mod mmdb_writer;

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use mmdb_writer::{Writer, city_record, country_record};
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
    assert!(e.errors[0].message.contains("10.0.1.x"), "{e}");
    let conf_line = format!("location file loaded by {}:3", conf.display());
    assert!(e.errors[0].message.contains(&conf_line), "{e}");
    assert_eq!(e.errors[1].line, 4);
    assert!(
        e.errors[1]
            .message
            .starts_with("range 10.0.2.9 - 10.0.2.1: start after end"),
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
