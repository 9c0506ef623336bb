//! A reload never drops a listener (issue 38, item 5).
//!
//! * Metric exchange: two parent sites turn secure MEP on by SIGHUP, as
//!   docs/mep.md says an operator can. Before the fix both lost their MEP
//!   port until a restart (the old accept task still held the socket when
//!   the new one was bound: "Address already in use"). Now the plain port
//!   keeps answering throughout, the secure port opens, and the link comes
//!   back UP over TLS without a restart; off and on again, too.
//! * A reload whose new MEP port cannot be bound fails, is logged, and the
//!   old listener keeps running.
//! * DNS and the REST API keep answering across a reload that changes the
//!   DNS listen line (it takes effect at the next restart, with a warning)
//!   and across a reload that fails (a bad line: the old configuration
//!   keeps running).
//!
//! Every site runs in the host's network namespace on its own loopback
//! address ([`Net::for_sites`]).

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

/// Whether something accepts TCP connections at `ip:port` (a connect, then
/// closed at once: the node refuses a stranger's connection).
fn listening(ip: Ipv4Addr, port: u16) -> Result<(), String> {
    let addr = SocketAddr::from((ip, port));
    TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map(drop)
        .map_err(|e| format!("nothing listens on {addr}: {e}"))
}

/// Site `me`'s file: both sites with a password on their rpcNodes, secure
/// or not, and a short keepalive timeout so a lost link shows soon.
fn site_file(sites: &Sites, me: usize, secure: bool) -> String {
    let mut c = sites.preamble(me, "reload listeners", "");
    c += "set gslb parameter -MEPKeepAliveTimeout 1\n";
    for ip in &sites.ips {
        c += &format!(
            "set ns rpcNode {ip} -password reload-s3cret{}\n",
            if secure { " -secure YES" } else { "" }
        );
    }
    c
}

/// `at` sees metric exchange with `other` UP, over TLS or not.
fn expect_link(at: &SiteServer, other: &str, secure: bool) -> Result<(), String> {
    let e = at.expect_mep(other, "UP")?;
    if e.link_secure != Some(secure) {
        return Err(format!(
            "at {}: the link with {other} is UP but link_secure is {:?}, want {secure}",
            at.name, e.link_secure
        ));
    }
    Ok(())
}

/// Connects to every `(ip, port)` every 50 ms while it runs (bounded: at
/// most 60 s); the first connect that failed, if any.
struct Watch {
    stop: Arc<AtomicBool>,
    thread: thread::JoinHandle<Option<String>>,
}

impl Watch {
    fn start(targets: Vec<(Ipv4Addr, u16)>) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = thread::spawn(move || {
            for _ in 0..1200 {
                if flag.load(Ordering::Relaxed) {
                    return None;
                }
                for &(ip, port) in &targets {
                    if let Err(e) = listening(ip, port) {
                        return Some(e);
                    }
                }
                thread::sleep(Duration::from_millis(50));
            }
            None
        });
        Watch { stop, thread }
    }

    fn finish(self) -> Option<String> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("watch thread")
    }
}

#[test]
fn turning_secure_mep_on_by_reload_keeps_the_port_and_brings_the_link_up_over_tls() {
    let net = Net::for_sites("reload_secure_mep", 2);
    let scratch = net.scratch();
    let sites = Sites::host(&net, &["a", "b"]);
    let running = sites.start(SEXTANT, &scratch, |k| site_file(&sites, k, false));
    eventually_ok(EVENTUALLY, "plain MEP UP both ways", || {
        expect_link(&running[0], "b", false)?;
        expect_link(&running[1], "a", false)
    });
    let plain: Vec<(Ipv4Addr, u16)> = sites.ips.iter().map(|ip| (*ip, MEP_PORT)).collect();

    // The attack on availability that needs no attacker: the operator's
    // own reload. The plain port must answer throughout.
    let watch = Watch::start(plain.clone());
    for (k, s) in running.iter().enumerate() {
        s.reload(&site_file(&sites, k, true));
    }
    eventually_ok(
        EVENTUALLY,
        "MEP UP over TLS both ways after the reload",
        || {
            expect_link(&running[0], "b", true)?;
            expect_link(&running[1], "a", true)
        },
    );
    if let Some(e) = watch.finish() {
        panic!("a MEP port stopped listening during the reload: {e}");
    }
    for ip in &sites.ips {
        listening(*ip, MEP_PORT).expect("the plain port after the reload");
        listening(*ip, MEP_SECURE_PORT).expect("the secure port after the reload");
    }
    for s in &running {
        assert!(
            !s.log().contains("Address already in use"),
            "site {}: a listener could not be bound:\n{}",
            s.name,
            s.log()
        );
    }

    // Off and on again at once: the secure port is closed, and bound again
    // by the next reload (the closed one must not hold the address).
    let watch = Watch::start(plain);
    for (k, s) in running.iter().enumerate() {
        s.reload(&site_file(&sites, k, false));
    }
    eventually_ok(EVENTUALLY, "plain MEP UP again", || {
        expect_link(&running[0], "b", false)?;
        expect_link(&running[1], "a", false)
    });
    for (k, s) in running.iter().enumerate() {
        s.reload(&site_file(&sites, k, true));
    }
    eventually_ok(EVENTUALLY, "MEP UP over TLS again", || {
        expect_link(&running[0], "b", true)?;
        expect_link(&running[1], "a", true)
    });
    if let Some(e) = watch.finish() {
        panic!("a MEP port stopped listening during the second reloads: {e}");
    }
    for ip in &sites.ips {
        listening(*ip, MEP_SECURE_PORT).expect("the secure port after the second reloads");
    }
}

#[test]
fn a_reload_whose_new_mep_port_is_taken_fails_and_keeps_the_old_listener() {
    let net = Net::for_sites("reload_mep_port_taken", 2);
    let scratch = net.scratch();
    let sites = Sites::host(&net, &["a", "b"]);
    let running = sites.start(SEXTANT, &scratch, |k| site_file(&sites, k, false));
    eventually_ok(EVENTUALLY, "plain MEP UP both ways", || {
        expect_link(&running[0], "b", false)?;
        expect_link(&running[1], "a", false)
    });
    // Something else holds b's secure port.
    let squatter = TcpListener::bind((sites.ips[1], MEP_SECURE_PORT)).expect("take b's port");
    running[1].reload(&site_file(&sites, 1, true));
    eventually_ok(
        EVENTUALLY,
        "b logs that its listeners did not change",
        || {
            let log = running[1].log();
            if log.contains("MEP listeners not changed") && log.contains("Address already in use") {
                Ok(())
            } else {
                Err("no such line yet".into())
            }
        },
    );
    // b keeps its plain port and keeps running.
    for _ in 0..10 {
        listening(sites.ips[1], MEP_PORT).expect("b's plain port after the failed change");
        running[1].status();
        thread::sleep(Duration::from_millis(100));
    }
    // Once the port is free, the next reload binds it, and with a secure
    // a the link comes UP over TLS.
    drop(squatter);
    running[1].reload(&site_file(&sites, 1, true));
    running[0].reload(&site_file(&sites, 0, true));
    eventually_ok(EVENTUALLY, "MEP UP over TLS both ways", || {
        expect_link(&running[0], "b", true)?;
        expect_link(&running[1], "a", true)
    });
    listening(sites.ips[1], MEP_SECURE_PORT).expect("b's secure port");
}

/// One parent site's file as an operator writes it: DNS on `dns_port`
/// (the ADNS service line), one unmonitored service answered for
/// www.example.com.
fn dns_site_file(ip: Ipv4Addr, svc: Ipv4Addr, dns_port: u16, extra: &str) -> String {
    format!(
        "add service adns1 {ip} ADNS {dns_port}\n\
         add gslb site s1 {ip}\n\
         add dns soaRec example.com -originServer ns1.example.com -contact hostmaster.example.com\n\
         add dns nsRec example.com ns1.example.com\n\
         add gslb service web {svc} HTTP 80 -siteName s1\n\
         add gslb vserver vs HTTP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs -serviceName web\n\
         bind gslb vserver vs -domainName www.example.com -TTL 5\n\
         {extra}"
    )
}

#[test]
fn dns_and_the_api_keep_answering_across_reloads_that_change_or_break_their_lines() {
    let net = Net::for_sites("reload_dns_api", 1);
    let scratch = net.scratch();
    let ip = net.site_ip(0);
    let svc = net.svc_ip(0);
    let site = SiteServer::start_as_written(
        SEXTANT,
        &scratch.0,
        "s1",
        ip,
        SocketAddr::from((ip, DNS_PORT)),
        &dns_site_file(ip, svc, DNS_PORT, ""),
        None,
    );
    assert_eq!(site.query_a("www.example.com"), vec![svc]);
    let g1 = site.status().generation;

    // The DNS listen line moves to another port: applied at the next
    // restart (docs/config.md), with a warning; the old one keeps
    // answering, and so does the API.
    let moved = dns_site_file(
        ip,
        svc,
        DNS_PORT + 1,
        "add gslb service web2 127.0.0.9 HTTP 80 -siteName s1\n",
    );
    site.reload(&moved);
    eventually_ok(EVENTUALLY, "the changed file is in force", || {
        let g = site.try_status()?.generation;
        if g > g1 {
            Ok(())
        } else {
            Err(format!("generation {g}"))
        }
    });
    assert!(
        site.log().contains(
            "DNS listen addresses changed in the file; they take effect at the next restart"
        ),
        "no warning about the moved DNS listener:\n{}",
        site.log()
    );
    assert_eq!(site.query_a("www.example.com"), vec![svc]);
    assert!(
        site.try_service("web2").is_ok(),
        "the rest of the reload was applied"
    );
    let g2 = site.status().generation;

    // A reload that fails: a line with an error. The running configuration
    // stays, DNS and the API answer as before.
    let broken = dns_site_file(
        ip,
        svc,
        DNS_PORT,
        "add gslb service broken 127.0.0.10 HTTP notaport -siteName s1\n",
    );
    site.reload(&broken);
    eventually_ok(EVENTUALLY, "the failed reload is reported", || {
        match site.try_status()?.last_reload_error {
            Some(e) => {
                eprintln!("the reload was refused: {e}");
                Ok(())
            }
            None => Err("no reload error in /v1/status yet".into()),
        }
    });
    for _ in 0..5 {
        assert_eq!(site.query_a("www.example.com"), vec![svc]);
        assert_eq!(site.status().generation, g2);
        thread::sleep(Duration::from_millis(100));
    }
    assert!(
        site.try_service("web2").is_ok(),
        "the old configuration runs"
    );
}
