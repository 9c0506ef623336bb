//! DNSSEC chains across zones (issue 40), end to end against the real
//! `sextant serve`, validated by real validators (BIND's delv, Unbound):
//! a signed `example.com` with
//!
//! * `signed.example.com`, a signed zone on the same server, chained by a
//!   DS in the parent pasted from `sextant dnssec ds --format conf`;
//! * `plain.example.com`, an unsigned zone on the same server (the parent
//!   proves it has no DS: an insecure delegation);
//! * `away.example.com`, delegated to a second `sextant serve` (another
//!   loopback address) that signs it, with its DS in the parent;
//! * `bare.example.com`, delegated to that second server, unsigned there,
//!   without DS.
//!
//! Answers under a signed child validate as secure, under an unsigned one
//! as insecure, never bogus; DS queries are answered by the parent side.
//! Also: a query for type NSEC or RRSIG gets a proof that does not list
//! the type it denies.

use std::fs;
use std::net::SocketAddr;
use std::path::Path;

use sextant_test_support::prelude::*;
use sextant_test_support::resolver;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

/// `sextant dnssec keygen ARGS -K DIR`: the key's base path.
fn keygen(dir: &Path, args: &[&str]) -> String {
    let d = dir.display().to_string();
    let mut all = vec!["dnssec", "keygen", "-K", &d];
    all.extend_from_slice(args);
    let out = SEXTANT.run(&all);
    assert!(out.status.success(), "{}", output_text(&out));
    let base = String::from_utf8_lossy(&out.stdout).trim().to_string();
    dir.join(base).display().to_string()
}

/// What `sextant dnssec ds ZONE ARGS` prints.
fn ds(zone: &str, args: &[&str]) -> String {
    let mut all = vec!["dnssec", "ds", zone];
    all.extend_from_slice(args);
    let out = SEXTANT.run(&all);
    assert!(out.status.success(), "{}", output_text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The keys of the three signed zones, as an operator makes them: a KSK
/// and a ZSK for example.com, one combined key (CSK) for each child.
struct Keys {
    ksk: String,
    zsk: String,
    signed: String,
    away: String,
}

fn make_keys(dir: &Path) -> Keys {
    Keys {
        ksk: keygen(dir, &["--ksk", "example.com"]),
        zsk: keygen(dir, &["example.com"]),
        signed: keygen(dir, &["--ksk", "signed.example.com"]),
        away: keygen(
            dir,
            &["--ksk", "--algorithm", "ED25519", "away.example.com"],
        ),
    }
}

/// The parent's server: example.com signed, two child zones of its own,
/// two delegations to `away`. `ds_lines` are pasted as printed.
fn parent_config(net: &Net, away: std::net::Ipv4Addr, k: &Keys, ds_lines: &str) -> String {
    format!(
        "{}add dns addRec ns1.example.com {server}\n\
         add dns addRec www.example.com 192.0.2.1\n\
         add dns soaRec signed.example.com -originServer ns1.example.com -contact hostmaster.example.com\n\
         add dns nsRec signed.example.com ns1.example.com\n\
         add dns addRec www.signed.example.com 192.0.2.2\n\
         add dns key signed.example.com.csk {signed}.key {signed}.private\n\
         sign dns zone signed.example.com -keyName signed.example.com.csk\n\
         add dns soaRec plain.example.com -originServer ns1.example.com -contact hostmaster.example.com\n\
         add dns nsRec plain.example.com ns1.example.com\n\
         add dns addRec www.plain.example.com 192.0.2.3\n\
         add dns nsRec away.example.com ns.away.example.com\n\
         add dns addRec ns.away.example.com {away}\n\
         add dns nsRec bare.example.com ns.bare.example.com\n\
         add dns addRec ns.bare.example.com {away}\n\
         {ds_lines}\
         add dns key example.com.ksk {ksk}.key {ksk}.private\n\
         add dns key example.com.zsk {zsk}.key {zsk}.private\n\
         add dns zone example.com -proxyMode NO -keyName example.com.ksk example.com.zsk\n",
        net.conf_preamble(),
        server = net.server_ip(),
        signed = k.signed,
        ksk = k.ksk,
        zsk = k.zsk,
    )
}

/// The other server: away.example.com signed, bare.example.com not.
fn away_config(net: &Net, k: &Keys) -> String {
    let ip = net.server_ip();
    format!(
        "add service adns1 {ip} ADNS {DNS_PORT}\n\
         add gslb site site1 {ip} -siteType LOCAL\n\
         add dns soaRec away.example.com -originServer ns.away.example.com -contact hostmaster.example.com\n\
         add dns nsRec away.example.com ns.away.example.com\n\
         add dns addRec ns.away.example.com {ip}\n\
         add dns addRec www.away.example.com 192.0.2.4\n\
         add dns key away.example.com.csk {away}.key {away}.private\n\
         sign dns zone away.example.com -keyName away.example.com.csk\n\
         add dns soaRec bare.example.com -originServer ns.bare.example.com -contact hostmaster.example.com\n\
         add dns nsRec bare.example.com ns.bare.example.com\n\
         add dns addRec ns.bare.example.com {ip}\n\
         add dns addRec www.bare.example.com 192.0.2.5\n",
        away = k.away,
    )
}

/// Both servers running, and the trust anchor of example.com.
struct Chain {
    parent_net: Net,
    away_net: Net,
    _scratch: Scratch,
    dir: std::path::PathBuf,
    _parent: Server,
    _away: Server,
    anchor: String,
    /// example.com's key-signing key, as a DNSKEY record (DNSViz's trust
    /// anchor).
    dnskey: String,
}

fn start_chain(name: &str) -> Chain {
    start_chain_on(name, DNS_PORT)
}

/// Both servers with DNS on `port` of their own addresses (53 for DNSViz,
/// which follows delegations to glue addresses on port 53).
fn start_chain_on(name: &str, port: u16) -> Chain {
    let parent_net = Net::new(name);
    let away_net = Net::new(&format!("{name}_away"));
    let scratch = parent_net.scratch();
    let dir = scratch.0.clone();
    let k = make_keys(&dir);
    // The DS lines, pasted into the parent's configuration as printed.
    let mut ds_lines = ds(
        "signed.example.com",
        &[
            "--key-file",
            &format!("{}.key", k.signed),
            "--format",
            "conf",
        ],
    );
    ds_lines.push_str(&ds(
        "away.example.com",
        &["--key-file", &format!("{}.key", k.away), "--format", "conf"],
    ));
    assert!(
        ds_lines.starts_with("add dns dsRec signed.example.com -keyTag "),
        "{ds_lines}"
    );
    let on = |net: &Net| SocketAddr::from((net.server_ip(), port));
    let away = Server::start_dns_on(
        SEXTANT,
        &away_net,
        Syntax::Conf,
        &away_config(&away_net, &k),
        on(&away_net),
    );
    let text = parent_config(&parent_net, away_net.server_ip(), &k, &ds_lines);
    let parent = Server::start_dns_on(SEXTANT, &parent_net, Syntax::Conf, &text, on(&parent_net));
    let out = SEXTANT.run(&[
        "dnssec",
        "ds",
        "example.com",
        "--config",
        parent.config.to_str().expect("utf-8 path"),
    ]);
    assert!(out.status.success(), "{}", output_text(&out));
    let anchor = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let dnskey = fs::read_to_string(format!("{}.key", k.ksk))
        .expect("read the KSK's .key file")
        .lines()
        .filter(|l| !l.starts_with(';'))
        .collect::<Vec<_>>()
        .join("\n");
    Chain {
        parent_net,
        away_net,
        _scratch: scratch,
        dir,
        _parent: parent,
        _away: away,
        anchor,
        dnskey,
    }
}

fn delv(c: &Chain, name: &str, rtype: &str) -> Delv {
    resolver::delv(
        c.parent_net.dns_addr(),
        "example.com",
        &c.anchor,
        name,
        rtype,
    )
}

/// delv, asking the parent's server with example.com's DS as the trust
/// anchor: the signed child is fully validated through the DS its parent
/// serves, the unsigned child is proved insecure, the DS of the delegated
/// children validate (present or proved absent), and NSEC and RRSIG
/// queries get proofs that validate.
#[test]
fn delv_validates_children_signed_unsigned_and_delegated() {
    if !resolver::tools_present() {
        return;
    }
    let c = start_chain("dnssec_chain_delv");
    for (name, rtype, want) in [
        ("www.signed.example.com", "A", "192.0.2.2"),
        ("signed.example.com", "DS", "IN\tDS\t"),
        ("signed.example.com", "SOA", "ns1.example.com."),
        ("away.example.com", "DS", "IN\tDS\t"),
        ("www.example.com", "A", "192.0.2.1"),
        // A type NSEC query: the name's NSEC, signed.
        (
            "www.example.com",
            "NSEC",
            "NSEC\t\\000.www.example.com. A RRSIG NSEC",
        ),
        ("www.signed.example.com", "NSEC", "A RRSIG NSEC"),
        ("example.com", "NSEC", "NS SOA RRSIG NSEC DNSKEY"),
        ("nosuch.example.com", "NSEC", "RRSIG NSEC TYPE128"),
    ] {
        let d = delv(&c, name, rtype);
        assert!(
            d.stdout.contains("; fully validated") && d.stdout.contains(want),
            "delv {name} {rtype}:\n{}",
            d.text()
        );
    }
    // Proved absent by the parent: the unsigned children's DS; and a type
    // RRSIG query (the proof must not list the type it denies).
    for (name, rtype) in [
        ("plain.example.com", "DS"),
        ("bare.example.com", "DS"),
        ("www.example.com", "RRSIG"),
        ("www.signed.example.com", "RRSIG"),
        ("nosuch.signed.example.com", "RRSIG"),
    ] {
        let d = delv(&c, name, rtype);
        assert!(
            d.stdout.contains("; negative response, fully validated"),
            "delv {name} {rtype}:\n{}",
            d.text()
        );
    }
    // The unsigned child here: insecure, never bogus.
    let d = delv(&c, "www.plain.example.com", "A");
    assert!(
        d.stdout.contains("; unsigned answer") && d.stdout.contains("192.0.2.3"),
        "delv www.plain.example.com A:\n{}",
        d.text()
    );
}

/// drill (ldns), the third validator: `drill -S` chases each answer's
/// signatures up to example.com's key-signing key, through the DS the
/// parent serves for a signed child, and proves the unsigned and the
/// delegated children's DS absent or signed by the parent.
#[test]
fn drill_chases_every_chain_to_the_trust_anchor() {
    if !have_program("drill") {
        cannot_run("drill is needed (ldnsutils; scripts/setup.sh installs it)");
        return;
    }
    let c = start_chain("dnssec_chain_drill");
    let anchor = c.dir.join("example.com.dnskey");
    fs::write(&anchor, format!("{}\n", c.dnskey)).expect("write the trust anchor");
    let server = c.parent_net.dns_addr();
    let drill = |name: &str, rtype: &str| {
        let out = std::process::Command::new("drill")
            .args(["-S", "-k"])
            .arg(&anchor)
            .args(["-p", &server.port().to_string()])
            .arg(format!("@{}", server.ip()))
            .args([name, rtype])
            .output()
            .expect("run drill");
        output_text(&out)
    };
    for (name, rtype, via) in [
        (
            "www.signed.example.com",
            "A",
            "signed.example.com. (DS keytag",
        ),
        ("signed.example.com", "DS", "example.com. (DNSKEY"),
        ("away.example.com", "DS", "example.com. (DNSKEY"),
        ("www.example.com", "A", "example.com. (DNSKEY"),
    ] {
        let text = drill(name, rtype);
        assert!(
            text.contains(";; Chase successful") && text.contains(via),
            "drill -S {name} {rtype}:\n{text}"
        );
    }
    // Denied by the parent, signed: the unsigned children's DS (the proof
    // of an insecure delegation) and a name that does not exist.
    for (name, rtype) in [
        ("plain.example.com", "DS"),
        ("bare.example.com", "DS"),
        ("nosuch.example.com", "A"),
    ] {
        let text = drill(name, rtype);
        assert!(
            text.contains("Existence denied or verifiably insecure")
                && text.contains(";; Chase successful"),
            "drill -S {name} {rtype}:\n{text}"
        );
    }
}

/// The DS of a child comes from the parent side: the parent's SOA in a
/// NODATA, or the DS signed by the parent's key; a referral carries the
/// signed DS; a type NSEC or RRSIG query gets a bitmap without that type.
#[test]
fn ds_is_answered_by_the_parent_and_proofs_do_not_deny_themselves() {
    if !have_program("dig") {
        cannot_run("dig is needed (bind9-dnsutils; scripts/setup.sh installs it)");
        return;
    }
    let c = start_chain("dnssec_chain_dig");
    let dns = c.parent_net.dns_addr();
    let q = |args: &[&str]| {
        let mut all = vec!["+dnssec", "+norec"];
        all.extend_from_slice(args);
        dig(None, dns, &all)
    };
    // The unsigned child's DS: the parent's NODATA (its SOA, an NSEC of
    // the cut listing NS and not DS or SOA).
    let out = q(&["plain.example.com", "DS"]);
    assert!(
        out.contains("status: NOERROR")
            && out.contains("flags: qr aa;")
            && out.contains("example.com.\t\t5\tIN\tSOA\tns1.example.com.")
            && out.contains("NSEC\t\\000.plain.example.com. NS RRSIG NSEC")
            && out.contains("RRSIG\tNSEC 13 3 "),
        "{out}"
    );
    // The signed child's DS: signed by example.com's ZSK.
    let out = q(&["signed.example.com", "DS"]);
    assert!(
        out.contains("IN\tDS\t")
            && out.contains("RRSIG\tDS 13 3 ")
            && out.contains(" example.com. "),
        "{out}"
    );
    // ANY at the signed child's apex: the child's SOA, not the parent's DS.
    let out = q(&["signed.example.com", "ANY"]);
    assert!(
        out.contains("IN\tSOA\tns1.example.com.") && !out.contains("IN\tDS\t"),
        "{out}"
    );
    // A referral to a signed child elsewhere: NS, then DS and its RRSIG.
    let out = q(&["www.away.example.com", "A"]);
    assert!(
        out.contains("flags: qr;")
            && out.contains("NS\tns.away.example.com.")
            && out.contains("IN\tDS\t")
            && out.contains("RRSIG\tDS 13 3 ")
            && !out.contains("NSEC"),
        "{out}"
    );
    // A type NSEC query: the name's NSEC is the answer. A type RRSIG
    // query: NODATA whose bitmap lists what the name has but not RRSIG.
    let out = q(&["www.example.com", "NSEC"]);
    assert!(
        out.contains("ANSWER: 2, AUTHORITY: 0")
            && out.contains("NSEC\t\\000.www.example.com. A RRSIG NSEC\n"),
        "{out}"
    );
    let out = q(&["www.example.com", "RRSIG"]);
    assert!(
        out.contains("NSEC\t\\000.www.example.com. A NSEC\n"),
        "{out}"
    );
}

/// Unbound as the LDNS, with the child served elsewhere at its own
/// address: secure answers under the signed children (here and
/// elsewhere), insecure under the unsigned ones, none bogus.
#[test]
fn unbound_follows_the_chain_into_every_child() {
    if !resolver::tools_present() {
        return;
    }
    let c = start_chain("dnssec_chain_unbound");
    let ip = c.parent_net.client_ip(2);
    let listen = SocketAddr::from((ip, free_port(ip.into())));
    let away = c.away_net.dns_addr();
    let u = Unbound::start_with_stubs(
        &c.dir.join("unbound"),
        listen,
        "example.com",
        c.parent_net.dns_addr(),
        &c.anchor,
        &[("away.example.com", away), ("bare.example.com", away)],
    );
    for (name, secure) in [
        ("www.example.com", true),
        ("www.signed.example.com", true),
        ("www.away.example.com", true),
        ("www.plain.example.com", false),
        ("www.bare.example.com", false),
    ] {
        let m = u.ask(name, RecordType::A);
        assert!(
            resolver::rcode(&m) == ResponseCode::NoError
                && resolver::authentic(&m) == secure
                && m.answers.iter().any(|r| r.record_type() == RecordType::A),
            "{name} A (secure: {secure}): {m:?}\n{}",
            u.log()
        );
    }
    for (name, rtype) in [
        ("www.example.com", RecordType::NSEC),
        ("plain.example.com", RecordType::DS),
        ("signed.example.com", RecordType::DS),
    ] {
        let m = u.ask(name, rtype);
        assert!(
            resolver::rcode(&m) == ResponseCode::NoError && resolver::authentic(&m),
            "{name} {rtype}: {m:?}\n{}",
            u.log()
        );
    }
}

/// DNSViz (`dnsviz probe` of the authoritative servers, then `dnsviz
/// grok` and `dnsviz print` with example.com's KSK as the trust anchor):
/// no error and no warning anywhere; the signed parent and both signed
/// children (here and elsewhere) secure, both unsigned children (here and
/// elsewhere) insecure, nothing bogus. The servers answer on port 53 of
/// their own loopback addresses, where DNSViz follows the delegations'
/// glue.
#[test]
fn dnsviz_finds_no_error_in_any_chain() {
    let Some(dnsviz) = resolver::dnsviz() else {
        return;
    };
    let c = start_chain_on("dnssec_chain_dnsviz", 53);
    let v = resolver::dnsviz_check(
        &dnsviz,
        &c.dir.join("dnsviz"),
        "example.com",
        c.parent_net.server_ip().into(),
        &c.dnskey,
        &[
            "www.example.com",
            "nosuch.example.com",
            "www.signed.example.com",
            "nosuch.signed.example.com",
            "www.plain.example.com",
            "www.away.example.com",
            "www.bare.example.com",
        ],
    );
    assert!(v.problems.is_empty(), "{:#?}\n{}", v.problems, v.print);
    // The zones' lines: `NAME [zone status] [delegation status]`.
    for line in [
        "example.com [.]",
        "signed.example.com [.] [.]",
        "away.example.com [.] [.]",
        "plain.example.com [-] [-]",
        "bare.example.com [-] [-]",
        "  [.]  A: 192.0.2.2",
        "  [.]  A: 192.0.2.4",
        "  [-]  A: 192.0.2.3",
        "  [-]  A: 192.0.2.5",
        "  [.]      NSEC: plain.example.com. \\000.plain.example.com. NS RRSIG NSEC",
    ] {
        assert!(
            v.print.lines().any(|l| l == line),
            "no line {line:?} in dnsviz print:\n{}",
            v.print
        );
    }
    assert!(
        !v.print.contains("[!]") && !v.print.contains("[?]"),
        "{}",
        v.print
    );
}

/// `sextant check` says where the chain of trust breaks: a signed child
/// without a DS in its signed parent (TOML here, with the DS pasted from
/// `--format toml`, which clears the warning), or a DS for a child that is
/// not signed.
#[test]
fn check_warns_where_the_chain_breaks() {
    let scratch = Scratch::new("dnssec_chain_check");
    let dir = &scratch.0;
    let ksk = keygen(dir, &["--ksk", "example.com"]);
    let child = keygen(dir, &["--ksk", "signed.example.com"]);
    let net = Net::new("dnssec_chain_check");
    let with_key = format!(
        "{}\n[[zone.dnssec_key]]\nfile = \"{ksk}\"\n\n\
         [[zone]]\napex = \"signed.example.com\"\nns = [\"ns1.example.com\"]\n\n\
         [[zone.dnssec_key]]\nfile = \"{child}\"\n\n\
         [[record]]\nname = \"ns1.example.com\"\ntype = \"A\"\naddresses = [\"192.0.2.53\"]\n",
        net.toml_preamble()
    );
    let conf = dir.join("site.toml");
    fs::write(&conf, &with_key).expect("write config");
    let check = || {
        let out = SEXTANT.run(&["check", conf.to_str().expect("utf-8")]);
        assert!(out.status.success(), "{}", output_text(&out));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let warned = check();
    assert!(
        warned.contains("zone signed.example.com: the chain of trust breaks at signed.example.com: its parent zone example.com is signed here but has no DS record for it"),
        "{warned}\n{with_key}"
    );
    let pasted = ds(
        "signed.example.com",
        &[
            "--config",
            conf.to_str().expect("utf-8"),
            "--format",
            "toml",
        ],
    );
    assert!(
        pasted.starts_with("[[record]]\nname = \"signed.example.com\"\ntype = \"DS\"\n"),
        "{pasted}"
    );
    fs::write(&conf, format!("{with_key}\n{pasted}")).expect("write config");
    let clean = check();
    assert!(!clean.contains("chain of trust"), "{clean}");
    // A DS for another key: it matches no key of the child.
    let wrong = keygen(dir, &["--ksk", "signed.example.com"]);
    let other = ds(
        "signed.example.com",
        &["--key-file", &format!("{wrong}.key"), "--format", "toml"],
    );
    fs::write(&conf, format!("{with_key}\n{other}")).expect("write config");
    let mismatched = check();
    assert!(
        mismatched.contains("no DS record of it in its parent zone example.com matches a key-signing key of signed.example.com"),
        "{mismatched}"
    );
    // A DS at a name that is no zone cut: refused, with its line.
    let stray = pasted.replace("signed.example.com", "www.example.com");
    fs::write(&conf, format!("{with_key}\n{stray}")).expect("write config");
    let out = SEXTANT.run(&["check", conf.to_str().expect("utf-8")]);
    let text = output_text(&out);
    assert!(
        !out.status.success()
            && text.contains("a DS record belongs to the parent side of a zone cut; \"www.example.com\" is not a delegation"),
        "{text}"
    );
}
