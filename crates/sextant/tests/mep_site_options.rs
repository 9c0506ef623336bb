//! Metric exchange settings that saved appliance configurations carry
//! (issue 11, item 3), end to end with two `sextant serve` processes on
//! their own loopback addresses ([`Net::for_sites`]):
//!
//! * `set gslb parameter -GSLBSvcStateDelayTime N`: when metric exchange
//!   with a site is lost, its service that no monitor decides keeps its
//!   state for N s; back within them, it never changes; lost for good, it
//!   is DOWN after them.
//! * `add gslb site ... -sitePassword`: the secret of the links the site
//!   accepts, ahead of `set ns rpcNode -password`; different passwords never
//!   bring the link up (the failure is counted and logged), equal ones do.
//!
//! Only generous "eventually" deadlines are asserted; the time the delay
//! held the state is printed.

use std::thread;
use std::time::{Duration, Instant};

use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

/// The delay under test: long enough that a restarted site is back within
/// it, short enough for a test.
const DELAY_S: u64 = 6;

fn zone() -> &'static str {
    "add dns soaRec example.com -originServer ns1.example.com -contact hostmaster.example.com\n\
     add dns nsRec example.com ns1.example.com\n"
}

/// Sites a and b; b owns `far`, a service no monitor decides, so a learns
/// its state over metric exchange only.
fn delay_config(net: &Net) -> String {
    format!(
        "set gslb parameter -MEPKeepAliveTimeout 1 -GSLBSvcStateDelayTime {DELAY_S}\n\
         add gslb site a {}\n\
         add gslb site b {}\n{}\
         add gslb service far {} HTTP 80 -siteName b\n\
         add gslb vserver vs HTTP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs -serviceName far\n\
         bind gslb vserver vs -domainName www.example.com -TTL 5\n",
        net.site_ip(0),
        net.site_ip(1),
        zone(),
        net.svc_ip(0),
    )
}

fn far_at(a: &SiteServer) -> Result<Service, String> {
    a.try_service("far")
}

#[test]
fn svc_state_delay_holds_a_lost_sites_service_then_marks_it_down() {
    let net = Net::for_sites("mep_delay", 2);
    let scratch = net.scratch();
    let config = delay_config(&net);
    let a = SiteServer::start(SEXTANT, &scratch.0, "a", net.site_ip(0), &config, None);
    let mut b = SiteServer::start(SEXTANT, &scratch.0, "b", net.site_ip(1), &config, None);
    eventually_ok(EVENTUALLY, "a learns far UP from b", || {
        let s = far_at(&a)?;
        if s.state == State::Up {
            Ok(())
        } else {
            Err(format!("far at a: {s:?}"))
        }
    });

    // 1. b goes away and comes back within the delay: far never changes.
    b.kill();
    eventually_ok(EVENTUALLY, "a sees metric exchange with b DOWN", || {
        let e = a.try_site("b")?;
        if e.mep == "DOWN" {
            Ok(())
        } else {
            Err(format!("b at a: {e:?}"))
        }
    });
    let s = far_at(&a).expect("far at a");
    assert_eq!(s.state, State::Up, "far DOWN at once: {s:?}");
    assert!(
        s.reason.contains("-GSLBSvcStateDelayTime"),
        "the reason does not name the delay: {s:?}"
    );
    b.restart();
    eventually_ok(EVENTUALLY, "metric exchange with b UP again", || {
        let e = a.try_site("b")?;
        let s = far_at(&a)?;
        // Checked on every poll: far stays UP all along.
        assert_eq!(
            s.state,
            State::Up,
            "far went DOWN during a short outage: {s:?}"
        );
        if e.mep == "UP" && s.reason.contains("reports it UP") {
            Ok(())
        } else {
            Err(format!("b at a: {e:?}; far: {s:?}"))
        }
    });

    // 2. b goes away for good: far keeps its state while the delay runs,
    // then is DOWN.
    b.kill();
    let mut mep_down_at = None;
    let mut held_seen = false;
    let end = Instant::now() + Duration::from_secs(DELAY_S) + EVENTUALLY;
    let down_at = loop {
        assert!(
            Instant::now() < end,
            "far not DOWN {DELAY_S} s after metric exchange with b was lost: {:?}",
            far_at(&a)
        );
        let mep = a.try_site("b").map(|e| e.mep).unwrap_or_default();
        let s = far_at(&a).expect("far at a");
        if mep == "DOWN" && mep_down_at.is_none() {
            mep_down_at = Some(Instant::now());
        }
        match (mep_down_at, s.state) {
            (Some(_), State::Up) => held_seen = true,
            (Some(_), State::Down) => {
                assert!(
                    s.reason.contains("not reachable over metric exchange"),
                    "{s:?}"
                );
                break Instant::now();
            }
            (None, State::Down) => panic!("far DOWN before a saw metric exchange go: {s:?}"),
            _ => {}
        }
        thread::sleep(Duration::from_millis(100));
    };
    assert!(
        held_seen,
        "far was never seen UP while metric exchange was down"
    );
    let held = down_at - mep_down_at.expect("seen DOWN");
    eprintln!(
        "far held UP for {} ms after metric exchange was lost (delay {DELAY_S} s)",
        held.as_millis()
    );
    assert!(
        held >= Duration::from_secs(DELAY_S / 2),
        "far went DOWN {} ms after metric exchange was lost; the delay is {DELAY_S} s",
        held.as_millis()
    );
    drop((a, b));
    drop(scratch);
}

/// Sites a and b with b's `-sitePassword` as `password` (b has the higher
/// IP, so it accepts and its site's password is the link's secret), and
/// equal rpcNode passwords that the site password takes precedence over.
fn password_config(net: &Net, password: &str) -> String {
    format!(
        "set gslb parameter -MEPKeepAliveTimeout 500 MSEC\n\
         add gslb site a {}\n\
         add gslb site b {} -sitePassword {password}\n\
         set ns rpcNode {} -password same-everywhere\n{}",
        net.site_ip(0),
        net.site_ip(1),
        net.site_ip(1),
        zone()
    )
}

#[test]
fn site_password_is_the_links_secret() {
    let net = Net::for_sites("mep_sitepw", 2);
    let scratch = net.scratch();
    let a = SiteServer::start(
        SEXTANT,
        &scratch.0,
        "a",
        net.site_ip(0),
        &password_config(&net, "alpha-secret"),
        None,
    );
    let b = SiteServer::start(
        SEXTANT,
        &scratch.0,
        "b",
        net.site_ip(1),
        &password_config(&net, "bravo-secret"),
        None,
    );
    // a dials b about every second: for 4 s neither may show the other UP,
    // although their rpcNode passwords are equal.
    let end = Instant::now() + Duration::from_secs(4);
    while Instant::now() < end {
        for (at, other) in [(&a, "b"), (&b, "a")] {
            let e = at.site(other);
            assert_ne!(
                e.mep, "UP",
                "{} shows {other} UP with different site passwords: {e:?}",
                at.name
            );
        }
        thread::sleep(Duration::from_millis(100));
    }
    eventually_ok(EVENTUALLY, "the acceptor counts the failure", || {
        let n = b.mep().auth_failed;
        if n > 0 {
            Ok(())
        } else {
            Err(format!("b: mep counters {:?}", b.mep()))
        }
    });
    assert!(
        b.log().contains("authentication failed"),
        "b's log does not say authentication failed:\n{}",
        b.log()
    );

    // Equal site passwords: the link comes UP.
    b.reload(&password_config(&net, "alpha-secret"));
    eventually_ok(EVENTUALLY, "MEP UP with equal site passwords", || {
        for (at, other) in [(&a, "b"), (&b, "a")] {
            let e = at.try_site(other)?;
            if e.mep != "UP" {
                return Err(format!("{} shows {other}: {e:?}", at.name));
            }
        }
        Ok(())
    });

    drop((a, b));

    // A placeholder written by `sextant import` never authenticates, even
    // when both sides carry the same one (a fresh start: a reload keeps the
    // sessions that are up).
    let dir = scratch.0.join("placeholder");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let config = password_config(&net, &format!("{}b", sextant_config::REENTER_PREFIX));
    let a = SiteServer::start(SEXTANT, &dir, "a", net.site_ip(0), &config, None);
    let b = SiteServer::start(SEXTANT, &dir, "b", net.site_ip(1), &config, None);
    eventually_ok(EVENTUALLY, "placeholders fail to authenticate", || {
        if b.mep().auth_failed > 0 {
            Ok(())
        } else {
            Err(format!("b: mep counters {:?}", b.mep()))
        }
    });
    for (at, other) in [(&a, "b"), (&b, "a")] {
        let e = at.site(other);
        assert_ne!(
            e.mep, "UP",
            "{} shows {other} UP with placeholder passwords: {e:?}",
            at.name
        );
    }
    assert!(
        a.log().contains("placeholder password") || b.log().contains("placeholder password"),
        "neither log warns about the placeholder:\n{}",
        b.log()
    );
    drop((a, b));
    drop(scratch);
}
