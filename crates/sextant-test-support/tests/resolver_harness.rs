//! The resolver harness (`sextant_test_support::resolver`) proven against a
//! real online signer: Knot DNS with `mod-onlinesign` (keys made by Knot
//! itself, ECDSA P-256), its key given to Unbound and delv as the trust
//! anchor. What a signed Sextant will be checked with must say "secure" for
//! a signer the world already trusts, and "bogus" when the anchor is wrong.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use sextant_test_support::ci::cannot_run;
use sextant_test_support::prelude::*;
use sextant_test_support::resolver::{authentic, rcode, tools_present};

const ZONE: &str = "signed.test";

const ZONE_FILE: &str = "$ORIGIN signed.test.\n\
$TTL 60\n\
@    IN SOA ns1.signed.test. hostmaster.signed.test. 1 3600 600 86400 60\n\
@    IN NS  ns1.signed.test.\n\
ns1  IN A   127.0.0.1\n\
www  IN A   192.0.2.10\n";

/// Knot DNS signing `signed.test` online (`mod-onlinesign`) with a CSK it
/// generates itself in the KASP directory `DIR/kasp`. Ended by its PID on
/// drop; its log is printed when the test is failing.
struct Knot {
    child: Child,
    addr: SocketAddr,
    dir: std::path::PathBuf,
}

impl Knot {
    fn start(dir: &Path, addr: SocketAddr) -> Knot {
        std::fs::create_dir_all(dir.join("kasp")).unwrap();
        std::fs::write(dir.join("signed.test.zone"), ZONE_FILE).unwrap();
        let d = dir.display();
        let conf = format!(
            "server:\n    rundir: \"{d}\"\n    listen: {ip}@{port}\n    udp-workers: 1\n    \
             tcp-workers: 1\n    background-workers: 1\n\
             log:\n  - target: stderr\n    any: info\n\
             database:\n    storage: \"{d}\"\n    kasp-db: \"{d}/kasp\"\n\
             policy:\n  - id: p256\n    algorithm: ecdsap256sha256\n    single-type-signing: on\n\
             mod-onlinesign:\n  - id: online\n    policy: p256\n\
             template:\n  - id: default\n    storage: \"{d}\"\n    zonefile-sync: -1\n    \
             journal-content: none\n\
             zone:\n  - domain: {ZONE}\n    file: \"{d}/signed.test.zone\"\n    \
             module: mod-onlinesign/online\n",
            ip = addr.ip(),
            port = addr.port()
        );
        std::fs::write(dir.join("knot.conf"), conf).unwrap();
        let log = std::fs::File::create(dir.join("knot.log")).unwrap();
        let child = Command::new(knotd())
            .arg("-c")
            .arg(dir.join("knot.conf"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start knotd");
        let knot = Knot {
            child,
            addr,
            dir: dir.to_path_buf(),
        };
        // Ready once it serves the zone's signed DNSKEY set.
        let dns = Dns::new(addr);
        eventually_ok(READY, "knotd serves the signed DNSKEY set", || {
            let m = dns.try_udp_from(None, &build_query(ZONE, RecordType::DNSKEY, Some(1232)))?;
            if m.answers.is_empty() {
                return Err(format!("no DNSKEY yet: {m:?}\n{}", knot.log()));
            }
            Ok(())
        });
        knot
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("knot.log")).unwrap_or_default()
    }

    /// The DS records (SHA-256) of the zone's key, from Knot's own KASP.
    fn ds(&self) -> String {
        keymgr_ds(&self.dir.join("kasp"))
    }

    /// The zone's DNSKEY (the CSK), from Knot's own KASP.
    fn dnskey(&self) -> String {
        keymgr(&self.dir.join("kasp"), &["dnskey"])
    }
}

impl Drop for Knot {
    fn drop(&mut self) {
        let _ = self.child.kill(); // by its PID
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("===== knotd log =====\n{}===== end =====", self.log());
        }
    }
}

fn knotd() -> &'static str {
    if have_program("knotd") {
        "knotd"
    } else {
        "/usr/sbin/knotd"
    }
}

fn keymgr(kasp: &Path, args: &[&str]) -> String {
    let program = if have_program("keymgr") {
        "keymgr"
    } else {
        "/usr/sbin/keymgr"
    };
    let out = Command::new(program)
        .arg("-D")
        .arg(kasp)
        .arg(ZONE)
        .args(args)
        .output()
        .expect("run keymgr");
    assert!(out.status.success(), "keymgr {args:?}: {out:?}");
    String::from_utf8(out.stdout).expect("keymgr prints text")
}

/// The SHA-256 DS lines (digest type 2) of the keys in `kasp`.
fn keymgr_ds(kasp: &Path) -> String {
    let ds: String = keymgr(kasp, &["ds"])
        .lines()
        .filter(|l| l.split_whitespace().nth(4) == Some("2"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(!ds.is_empty(), "keymgr printed no SHA-256 DS");
    ds
}

/// A DS for another key of the same zone and algorithm, which did not
/// sign anything: a wrong trust anchor.
fn other_key_ds(dir: &Path) -> String {
    let kasp = dir.join("other-kasp");
    std::fs::create_dir_all(&kasp).unwrap();
    keymgr(&kasp, &["generate", "algorithm=ecdsap256sha256", "ksk=yes"]);
    keymgr_ds(&kasp)
}

/// Knot and the resolver tools are installed (else SKIPPED, or a failure
/// under CI).
fn lab_tools() -> bool {
    if !tools_present() {
        return false;
    }
    let knot_missing = !have_program("knotd") && !Path::new("/usr/sbin/knotd").exists();
    let keymgr_missing = !have_program("keymgr") && !Path::new("/usr/sbin/keymgr").exists();
    if knot_missing || keymgr_missing {
        cannot_run("the resolver harness's test needs knotd and keymgr (Debian package knot)");
        return false;
    }
    true
}

/// Knot on the test's own address, an Unbound in front of it on a port of
/// the test's client address.
fn lab(net: &Net, scratch: &Scratch, anchor: impl FnOnce(&Knot) -> String) -> (Knot, Unbound) {
    let knot = Knot::start(&scratch.0.join("knot"), net.dns_addr());
    let anchor = anchor(&knot);
    let ip = IpAddr::V4(net.client_ip(0));
    let listen = SocketAddr::new(ip, free_port(ip));
    let unbound = Unbound::start(&scratch.0.join("unbound"), listen, ZONE, knot.addr, &anchor);
    (knot, unbound)
}

#[test]
fn unbound_validates_knots_online_signed_answers() {
    if !lab_tools() {
        return;
    }
    let net = Net::new("unbound_validates_knot");
    let scratch = net.scratch();
    let (_knot, unbound) = lab(&net, &scratch, Knot::ds);

    let a = unbound.ask("www.signed.test", RecordType::A);
    assert_eq!(rcode(&a), ResponseCode::NoError, "{a:?}");
    assert_eq!(a_records(&a), vec![std::net::Ipv4Addr::new(192, 0, 2, 10)]);
    assert!(authentic(&a), "A answer not validated (AD=0): {a:?}");

    // Knot's "black lies": a name that does not exist is NOERROR with an
    // NSEC that leaves only NSEC and RRSIG at the name (RFC 9824 compact
    // denial); Unbound validates it as NODATA. Plain NXDOMAIN is as good.
    let nx = unbound.ask("nosuch.signed.test", RecordType::A);
    assert!(
        [ResponseCode::NXDomain, ResponseCode::NoError].contains(&rcode(&nx)),
        "{nx:?}"
    );
    assert!(nx.answers.is_empty(), "{nx:?}");
    assert!(authentic(&nx), "denial not validated (AD=0): {nx:?}");

    let nodata = unbound.ask("www.signed.test", RecordType::TXT);
    assert_eq!(rcode(&nodata), ResponseCode::NoError, "{nodata:?}");
    assert!(nodata.answers.is_empty(), "{nodata:?}");
    assert!(
        authentic(&nodata),
        "NODATA not validated (AD=0): {nodata:?}"
    );

    // After a flush the answer is validated afresh from the authority.
    unbound.flush(ZONE);
    assert!(authentic(&unbound.ask("www.signed.test", RecordType::A)));
    assert!(
        !unbound.log().contains("validation failure"),
        "{}",
        unbound.log()
    );
}

#[test]
fn delv_fully_validates_knots_answers() {
    if !lab_tools() {
        return;
    }
    let net = Net::new("delv_validates_knot");
    let scratch = net.scratch();
    let (knot, unbound) = lab(&net, &scratch, Knot::ds);

    // Straight from the authority, with the DS and with the DNSKEY as the
    // anchor, and through Unbound.
    for (server, anchor) in [
        (knot.addr, knot.ds()),
        (knot.addr, knot.dnskey()),
        (unbound.addr, knot.ds()),
    ] {
        let d = delv(server, ZONE, &anchor, "www.signed.test", "A");
        assert!(d.fully_validated(), "anchor {anchor}\n{}", d.text());
        assert!(
            d.records()
                .iter()
                .any(|r| r.starts_with("www.signed.test.") && r.ends_with("A\t192.0.2.10")),
            "{}",
            d.text()
        );
    }
    let neg = delv(knot.addr, ZONE, &knot.ds(), "nosuch.signed.test", "A");
    assert!(neg.fully_validated(), "{}", neg.text());
    let nodata = delv(knot.addr, ZONE, &knot.ds(), "www.signed.test", "TXT");
    assert!(nodata.fully_validated(), "{}", nodata.text());

    // The verdict can fail: another key as the anchor is not validated.
    let wrong = delv(
        knot.addr,
        ZONE,
        &other_key_ds(&scratch.0),
        "www.signed.test",
        "A",
    );
    assert!(!wrong.fully_validated(), "{}", wrong.text());
    assert!(
        wrong.stderr.contains("resolution failed"),
        "{}",
        wrong.text()
    );
}

#[test]
fn unbound_answers_servfail_with_a_wrong_trust_anchor_and_says_why() {
    if !lab_tools() {
        return;
    }
    let net = Net::new("unbound_wrong_anchor");
    let scratch = net.scratch();
    let other = other_key_ds(&scratch.0);
    let (_knot, unbound) = lab(&net, &scratch, |_| other);

    let a = unbound.ask("www.signed.test", RecordType::A);
    assert_eq!(rcode(&a), ResponseCode::ServFail, "{a:?}");
    assert!(!authentic(&a));
    assert!(a.answers.is_empty(), "{a:?}");
    let log = unbound.log();
    assert!(
        log.contains("validation failure <www.signed.test. A IN>"),
        "the log does not say why:\n{log}"
    );
}
