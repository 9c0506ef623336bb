//! DNSSEC end to end: keys made with `sextant dnssec keygen` as an operator
//! makes them, a signed zone served by the real `sextant serve`, and its
//! answers validated by real validators (BIND's delv; Unbound as the LDNS
//! in front of Sextant): GSLB names, static names, CNAME chains, NXDOMAIN
//! and NODATA (compact denial), the DNSKEY RRset, an unsigned delegation.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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

/// A KSK (ECDSA P-256, the default) and a ZSK (Ed25519), as an operator
/// makes them; their base paths.
fn keys(dir: &Path) -> (String, String) {
    let ksk = keygen(dir, &["--ksk", "example.com"]);
    let zsk = keygen(dir, &["--algorithm", "ED25519", "example.com"]);
    (ksk, zsk)
}

/// The zone as an operator writes it: a GSLB name with two sites'
/// services, a CNAME to it, static records, a delegated unsigned child,
/// signed by the two keys.
fn config(net: &Net, ksk: &str, zsk: &str) -> String {
    format!(
        "{}add dns addRec ns1.example.com {server}\n\
         add dns cnameRec www.example.com app.example.com\n\
         add dns txtRec example.com \"v=spf1 -all\"\n\
         add dns txtRec big.example.com {big}\n\
         add dns mxRec example.com -mx mail.example.com -pref 10\n\
         add dns addRec mail.example.com 192.0.2.25\n\
         add dns nsRec child.example.com ns.child.example.com\n\
         add dns addRec ns.child.example.com 192.0.2.53\n\
         add gslb service web1 {} HTTP 80 -siteName site1\n\
         add gslb service web2 {} HTTP 80 -siteName site1\n\
         add gslb vserver vs_app HTTP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs_app -serviceName web1\n\
         bind gslb vserver vs_app -serviceName web2\n\
         bind gslb vserver vs_app -domainName app.example.com -TTL 30\n\
         add dns key example.com.ksk {ksk}.key {ksk}.private\n\
         add dns key example.com.zsk {zsk}.key {zsk}.private\n\
         add dns zone example.com -proxyMode NO -dnssecOffload ENABLED -nsec ENABLED -keyName example.com.ksk example.com.zsk\n",
        net.conf_preamble(),
        net.svc_ip(1),
        net.svc_ip(2),
        server = net.server_ip(),
        big = big_txt(),
    )
}

/// Five 220-byte strings: an RRset that fits 1232 bytes of UDP unsigned
/// (about 1,160 bytes of answer), and not with its signature.
fn big_txt() -> String {
    (0..5)
        .map(|i| format!("\"{}\"", char::from(b'a' + i).to_string().repeat(220)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The DS lines `sextant dnssec ds` prints for the zone of `conf`.
fn ds_lines(conf: &Path) -> Vec<String> {
    let out = SEXTANT.run(&[
        "dnssec",
        "ds",
        "example.com",
        "--config",
        conf.to_str().expect("utf-8 path"),
    ]);
    assert!(out.status.success(), "{}", output_text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The trust anchor: the DS lines the parent would publish.
fn anchor(ds: &[String]) -> String {
    ds.join("\n")
}

/// BIND's delv (the shared harness) asking `server` for `name` `rtype`
/// with `anchor` as example.com's trust anchor: its whole output.
fn validate(server: std::net::SocketAddr, anchor: &str, name: &str, rtype: &str) -> String {
    let d = resolver::delv(server, "example.com", anchor, name, rtype);
    format!("{}{}", d.stdout, d.stderr)
}

#[test]
fn keygen_writes_bind_key_files_and_ds_reads_them() {
    let scratch = Scratch::new("dnssec_keygen");
    let dir = &scratch.0;
    let (ksk, zsk) = keys(dir);
    let ksk_key = fs::read_to_string(format!("{ksk}.key")).expect("KSK .key");
    assert!(ksk_key.contains("IN DNSKEY 257 3 13 "), "{ksk_key}");
    let zsk_key = fs::read_to_string(format!("{zsk}.key")).expect("ZSK .key");
    assert!(zsk_key.contains("IN DNSKEY 256 3 15 "), "{zsk_key}");
    for base in [&ksk, &zsk] {
        let private = format!("{base}.private");
        let mode = fs::metadata(&private)
            .expect("private")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600, "{private}");
        let text = fs::read_to_string(&private).expect("read private");
        assert!(text.starts_with("Private-key-format: v1.3\n"), "{text}");
    }
    // The file names carry the zone, the algorithm and the key tag.
    let name = Path::new(&ksk)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    assert!(name.starts_with("Kexample.com.+013+"), "{name}");
    let tag: u16 = name.rsplit('+').next().unwrap().parse().expect("tag");

    // `ds` from the .key file and from a configuration agree, and name
    // the KSK only.
    let net = Net::new("dnssec_keygen");
    let conf = dir.join("site.conf");
    fs::write(&conf, config(&net, &ksk, &zsk)).expect("write config");
    let from_config = ds_lines(&conf);
    assert_eq!(from_config.len(), 1, "{from_config:?}");
    assert!(
        from_config[0].starts_with(&format!("example.com. IN DS {tag} 13 2 ")),
        "{from_config:?}"
    );
    let out = SEXTANT.run(&[
        "dnssec",
        "ds",
        "example.com",
        "--key-file",
        &format!("{ksk}.key"),
    ]);
    assert!(out.status.success(), "{}", output_text(&out));
    let from_file = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        from_file.trim(),
        from_config[0].replacen(" IN DS", " 3600 IN DS", 1)
    );

    // A ZSK that signs only from 2030: valid, with a warning that nothing
    // signs the zone's records until then.
    let later = config(&net, &ksk, &zsk).replace(
        &format!("{zsk}.private\n"),
        &format!("{zsk}.private -activate 20300101000000\n"),
    );
    fs::write(&conf, &later).expect("write config");
    let out = SEXTANT.run(&["check", conf.to_str().unwrap()]);
    assert!(out.status.success(), "{}", output_text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "zone example.com: no key signs its records now (the first activates at 20300101000000 UTC)"
        ),
        "{}",
        output_text(&out)
    );

    // A key file whose halves are not one pair: the configuration line and
    // the reason.
    let other = keygen(dir, &["--algorithm", "ED25519", "example.com"]);
    let bad =
        config(&net, &ksk, &zsk).replace(&format!("{zsk}.private"), &format!("{other}.private"));
    fs::write(&conf, &bad).expect("write bad config");
    let out = SEXTANT.run(&["check", conf.to_str().unwrap()]);
    assert!(!out.status.success(), "{}", output_text(&out));
    let line = bad
        .lines()
        .position(|l| l.starts_with("add dns key example.com.zsk"))
        .unwrap()
        + 1;
    let text = output_text(&out);
    assert!(
        text.contains(&format!("site.conf:{line}: add dns key example.com.zsk"))
            && text.contains("the private key does not match the public key"),
        "{text}"
    );
    assert!(
        !text.contains("PrivateKey"),
        "no key material in messages: {text}"
    );
}

#[test]
fn delv_fully_validates_every_kind_of_answer() {
    if !resolver::tools_present() {
        return;
    }
    let net = Net::new("dnssec_delv");
    let scratch = net.scratch();
    let dir = &scratch.0;
    let (ksk, zsk) = keys(dir);
    let text = config(&net, &ksk, &zsk);
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &text);
    let anchors = anchor(&ds_lines(&s.config));
    let dns = net.dns_addr();
    for (name, rtype, want) in [
        ("app.example.com", "A", "app.example.com."),
        ("www.example.com", "A", "CNAME\tapp.example.com."),
        ("example.com", "TXT", "v=spf1 -all"),
        ("example.com", "MX", "10 mail.example.com."),
        (
            "example.com",
            "SOA",
            "ns1.example.com. hostmaster.example.com.",
        ),
        ("example.com", "NS", "NS\tns1.example.com."),
        ("example.com", "DNSKEY", "DNSKEY\t257 3 13"),
        ("mail.example.com", "A", "192.0.2.25"),
    ] {
        let out = validate(dns, &anchors, name, rtype);
        assert!(
            out.contains("; fully validated") && out.contains(want),
            "delv {name} {rtype}:\n{out}"
        );
    }
    // Negative answers: NXDOMAIN and NODATA, each proved.
    for (name, rtype) in [
        ("nosuch.example.com", "A"),
        ("app.example.com", "MX"),
        ("app.example.com", "AAAA"),
        ("example.com", "CDS"),
    ] {
        let out = validate(dns, &anchors, name, rtype);
        assert!(
            out.contains("; negative response, fully validated"),
            "delv {name} {rtype}:\n{out}"
        );
    }
    // A CNAME to a name without the type: the CNAME, then the proof.
    let out = validate(dns, &anchors, "www.example.com", "TXT");
    assert!(
        out.contains("; fully validated")
            && out.contains("NSEC \\000.app.example.com. A AAAA RRSIG NSEC")
            && out.contains("ncache nxrrset"),
        "delv www.example.com TXT:\n{out}"
    );
    // The delegated child is proved unsigned.
    let out = validate(dns, &anchors, "child.example.com", "DS");
    assert!(
        out.contains("; negative response, fully validated"),
        "delv child.example.com DS:\n{out}"
    );
    // Without DO nothing changes for a client that does not validate.
    let plain = dig(None, dns, &["app.example.com", "A"]);
    assert!(!plain.contains("RRSIG"), "{plain}");
    let nx = dig(None, dns, &["nosuch.example.com", "A"]);
    assert!(nx.contains("status: NXDOMAIN"), "{nx}");
    // Signed responses and the signatures made are counted; the caches
    // answered the rest.
    let metrics = s.request("GET", "/metrics", &[], "").body;
    let value = |series: &str| -> u64 {
        metrics
            .lines()
            .find(|l| l.starts_with(series))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {series} in /metrics:\n{metrics}"))
    };
    let (signed, made) = (
        value("sextant_dnssec_signed_responses_total "),
        value("sextant_dnssec_signatures_total "),
    );
    assert!(
        signed >= 15 && made > 0 && made <= 2 * signed,
        "{signed} signed responses, {made} signatures made"
    );
    // An answer that fits UDP unsigned but not signed: TC, as any answer
    // too big (the resolver retries over TCP, where it fits).
    let unsigned_big = dig(None, dns, &["+ignore", "big.example.com", "TXT"]);
    assert!(
        unsigned_big.contains("flags: qr aa;") && unsigned_big.contains("ANSWER: 1,"),
        "{unsigned_big}"
    );
    let signed_big = dig(None, dns, &["+ignore", "+dnssec", "big.example.com", "TXT"]);
    assert!(signed_big.contains("flags: qr aa tc;"), "{signed_big}");
    let out = validate(dns, &anchors, "big.example.com", "TXT");
    assert!(out.contains("; fully validated"), "over TCP:\n{out}");
    let signed_nx = dig(None, dns, &["+dnssec", "nosuch.example.com", "A"]);
    assert!(
        signed_nx.contains("status: NOERROR")
            && signed_nx.contains("NSEC\t\\000.nosuch.example.com. RRSIG NSEC TYPE128"),
        "compact denial (RFC 9824):\n{signed_nx}"
    );
}

/// The native syntax: `[[zone.dnssec_key]]` tables sign the zone as the
/// appliance's lines do.
#[test]
fn toml_zone_keys_sign_the_zone() {
    if !resolver::tools_present() {
        return;
    }
    let net = Net::new("dnssec_toml");
    let scratch = net.scratch();
    let dir = &scratch.0;
    let (ksk, zsk) = keys(dir);
    let text = format!(
        "{}\n[[zone.dnssec_key]]\nfile = \"{ksk}\"\n\n[[zone.dnssec_key]]\nfile = \"{zsk}.key\"\nttl = 600\n\n\
         [[service]]\nname = \"web1\"\nip = \"{}\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"site1\"\n\n\
         [[vserver]]\nname = \"vs_app\"\nprotocol = \"HTTP\"\nlb_method = \"ROUNDROBIN\"\n\
         services = [{{ name = \"web1\" }}]\ndomains = [{{ name = \"app.example.com\", ttl = 30 }}]\n",
        net.toml_preamble(),
        net.svc_ip(1)
    );
    let s = Server::start(SEXTANT, &net, Syntax::Toml, &text);
    let anchors = anchor(&ds_lines(&s.config));
    let out = validate(net.dns_addr(), &anchors, "app.example.com", "A");
    assert!(out.contains("; fully validated"), "{out}");
    // The DNSKEY RRset's TTL is the first key's (its .key file's 3600).
    let keys = dig(
        None,
        net.dns_addr(),
        &["+noall", "+answer", "example.com", "DNSKEY"],
    );
    assert!(
        keys.contains("example.com.\t\t3600\tIN\tDNSKEY\t257 3 13"),
        "{keys}"
    );
}

/// Two parent sites sign with the same key files: their DNSKEY RRsets are
/// one, and each one's answers (which differ: each site has its own
/// service) validate with the one DS the parent holds.
#[test]
fn parent_sites_sign_alike() {
    if !resolver::tools_present() {
        return;
    }
    let net = Net::for_sites("dnssec_parents", 2);
    let scratch = net.scratch();
    let (ksk, zsk) = keys(&scratch.0);
    let sites = Sites::host(&net, &["fra", "ams"]);
    let conf = |k: usize| {
        let mut c = sites.preamble(k, "dnssec", "");
        for name in &sites.names {
            c += &format!(
                "add gslb service web-{name} {} HTTP 80 -siteName {name}\n",
                sites.svc_of(name)
            );
        }
        c += "add gslb vserver vs_app HTTP -lbMethod ROUNDROBIN\n\
              bind gslb vserver vs_app -serviceName web-fra\n\
              bind gslb vserver vs_app -serviceName web-ams\n\
              bind gslb vserver vs_app -domainName app.example.com -TTL 30\n";
        c += &format!(
            "add dns key ksk {ksk}.key {ksk}.private\n\
             add dns key zsk {zsk}.key {zsk}.private\n\
             sign dns zone example.com -keyName ksk zsk\n"
        );
        c
    };
    let servers = sites.start(SEXTANT, &scratch, conf);
    wait_mesh_up(&servers);
    let anchors = anchor(&ds_lines(&servers[0].config));
    assert_eq!(
        ds_lines(&servers[0].config),
        ds_lines(&servers[1].config),
        "one DS for both"
    );
    let key_sets: Vec<Vec<String>> = servers
        .iter()
        .map(|s| {
            let mut keys: Vec<String> = dig(
                None,
                s.dns.server,
                &["+noall", "+answer", "example.com", "DNSKEY"],
            )
            .lines()
            .map(str::to_string)
            .collect();
            keys.sort();
            keys
        })
        .collect();
    assert_eq!(key_sets[0].len(), 2, "{key_sets:?}");
    assert_eq!(key_sets[0], key_sets[1], "the same DNSKEY RRset at both");
    let mut seen = std::collections::BTreeSet::new();
    for s in &servers {
        eventually_ok(
            EVENTUALLY,
            &format!("{} answers app.example.com", s.name),
            || {
                let out = validate(s.dns.server, &anchors, "app.example.com", "A");
                if !out.contains("; fully validated") {
                    return Err(out);
                }
                seen.extend(
                    out.lines()
                        .filter(|l| l.contains("\tA\t"))
                        .map(|l| l.rsplit('\t').next().unwrap_or("").to_string()),
                );
                Ok(())
            },
        );
    }
    assert!(!seen.is_empty(), "answers seen: {seen:?}");
}

/// A signature altered on the wire (a relay flips one bit of each RRSIG)
/// fails validation: the checks above can fail.
#[test]
fn a_broken_signature_fails_validation() {
    if !resolver::tools_present() {
        return;
    }
    let net = Net::new("dnssec_broken");
    let scratch = net.scratch();
    let dir = &scratch.0;
    let (ksk, zsk) = keys(dir);
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net, &ksk, &zsk));
    let anchors = anchor(&ds_lines(&s.config));
    let relay = SignatureBreaker::start(
        std::net::SocketAddr::from((net.client_ip(1), 0)),
        net.dns_addr(),
    );
    let out = validate(relay.addr, &anchors, "app.example.com", "A");
    assert!(
        out.contains("; fully validated"),
        "through the relay, untouched:\n{out}"
    );
    relay.set_breaking(true);
    for (name, rtype) in [("app.example.com", "A"), ("nosuch.example.com", "A")] {
        let out = validate(relay.addr, &anchors, name, rtype);
        assert!(
            !out.contains("fully validated") && out.contains("resolution failed"),
            "delv {name} {rtype} with broken signatures:\n{out}"
        );
    }
}

/// A ZSK rollover by pre-publication, compressed into seconds: the new key
/// is published 4 s after the start, signs from 8 s (when the old one
/// stops), the old one leaves at 12 s, all by the times of `add dns key`
/// (unix seconds here), with a DNSKEY TTL of 2 s. Every half second delv
/// checks an answer and the DNSKEY RRset, and Unbound (which caches the
/// DNSKEY RRset for its TTL) a name never asked before, whose proof is
/// signed at that moment: never a failure, and both keys sign in turn.
#[test]
fn zsk_rollover_validates_at_every_step() {
    if !resolver::tools_present() {
        return;
    }
    let net = Net::new("dnssec_rollover");
    let scratch = net.scratch();
    let dir = &scratch.0;
    let (ksk, zsk) = keys(dir);
    let zsk2 = keygen(dir, &["example.com"]);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let (publish, switch, delete) = (now + 4, now + 8, now + 12);
    let text = config(&net, &ksk, &zsk)
        .replace(
            &format!("{zsk}.private\n"),
            &format!("{zsk}.private -inactive {switch} -delete {delete}\n"),
        )
        .replace(
            "add dns zone example.com",
            &format!(
                "add dns key example.com.zsk2 {zsk2}.key {zsk2}.private -publish {publish} -activate {switch}\n\
                 add dns zone example.com"
            ),
        )
        .replace("example.com.ksk example.com.zsk\n", "example.com.ksk example.com.zsk example.com.zsk2\n")
        .replace(&format!("{ksk}.private\n"), &format!("{ksk}.private -TTL 2\n"));
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &text);
    let anchors = anchor(&ds_lines(&s.config));
    let v = validating(&net, dir, &s);
    let mut step = 0;
    let tag = |base: &str| {
        base.rsplit('+')
            .next()
            .unwrap()
            .trim_start_matches('0')
            .to_string()
    };
    let (old_tag, new_tag) = (tag(&zsk), tag(&zsk2));
    let mut signers = Vec::new();
    let mut key_counts = Vec::new();
    let end = Instant::now() + Duration::from_secs(delete - now + 2);
    while Instant::now() < end {
        let answer = validate(net.dns_addr(), &anchors, "app.example.com", "A");
        assert!(
            answer.contains("; fully validated"),
            "at +{}s:\n{answer}",
            elapsed(now)
        );
        let signer = answer
            .lines()
            .find(|l| l.contains("RRSIG\tA "))
            .and_then(|l| l.split_whitespace().nth(10))
            .unwrap_or_default()
            .to_string();
        if signers.last() != Some(&signer) {
            signers.push(signer);
        }
        let keys = validate(net.dns_addr(), &anchors, "example.com", "DNSKEY");
        assert!(
            keys.contains("; fully validated"),
            "at +{}s:\n{keys}",
            elapsed(now)
        );
        let count = keys.lines().filter(|l| l.contains("\tDNSKEY\t")).count();
        step += 1;
        let fresh = v
            .unbound
            .ask(&format!("step{step}.example.com"), RecordType::A);
        assert!(
            resolver::authentic(&fresh),
            "Unbound at +{}s: {fresh:?}\n{}",
            elapsed(now),
            v.unbound.log()
        );
        if key_counts.last() != Some(&count) {
            key_counts.push(count);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(
        signers,
        vec![old_tag, new_tag],
        "the ZSKs that signed, in turn"
    );
    assert_eq!(key_counts, vec![2, 3, 2], "DNSKEY RRset sizes, in turn");
}

/// Seconds since `start` (unix seconds), for messages.
fn elapsed(start: u64) -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs().saturating_sub(start))
        .unwrap_or(0)
}

/// Unbound, as the LDNS of the clients, in front of Sextant (through a
/// relay that can break signatures), with the DS as its trust anchor.
struct Validating {
    unbound: Unbound,
    relay: SignatureBreaker,
}

fn validating(net: &Net, dir: &Path, server: &Server) -> Validating {
    let relay = SignatureBreaker::start(
        std::net::SocketAddr::from((net.client_ip(1), 0)),
        net.dns_addr(),
    );
    let ip = net.client_ip(2);
    let listen = std::net::SocketAddr::from((ip, free_port(ip.into())));
    let unbound = Unbound::start(
        &dir.join("unbound"),
        listen,
        "example.com",
        relay.addr,
        &anchor(&ds_lines(&server.config)),
    );
    Validating { unbound, relay }
}

/// Unbound validates Sextant's answers (AD) for every kind of name, and
/// fails them (SERVFAIL, the reason in its log) once the signatures are
/// broken on the wire; mended, AD again.
#[test]
fn unbound_validates_answers_and_refuses_broken_signatures() {
    if !resolver::tools_present() {
        return;
    }
    let net = Net::new("dnssec_unbound");
    let scratch = net.scratch();
    let dir = &scratch.0;
    let (ksk, zsk) = keys(dir);
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net, &ksk, &zsk));
    let v = validating(&net, dir, &s);
    let ask = |name: &str, rtype: RecordType| v.unbound.ask(name, rtype);
    // Positive answers: a GSLB name, a CNAME to it, static names.
    for (name, rtype, records) in [
        ("app.example.com", RecordType::A, 1),
        ("www.example.com", RecordType::A, 2),
        ("example.com", RecordType::TXT, 1),
        ("example.com", RecordType::MX, 1),
        ("mail.example.com", RecordType::A, 1),
        ("example.com", RecordType::DNSKEY, 2),
    ] {
        let m = ask(name, rtype);
        assert!(
            resolver::authentic(&m) && resolver::rcode(&m) == ResponseCode::NoError,
            "{name} {rtype}: {m:?}\n{}",
            v.unbound.log()
        );
        let got = m
            .answers
            .iter()
            .filter(|r| r.record_type() != RecordType::RRSIG)
            .count();
        assert!(got >= records, "{name} {rtype}: {got} records: {m:?}");
    }
    // Negative answers, proved: a name that does not exist (compact
    // denial: NOERROR, no records) and types a name does not have.
    for (name, rtype) in [
        ("nosuch.example.com", RecordType::A),
        ("app.example.com", RecordType::MX),
        ("app.example.com", RecordType::AAAA),
        ("www.example.com", RecordType::TXT),
    ] {
        let m = ask(name, rtype);
        assert!(
            resolver::authentic(&m)
                && resolver::rcode(&m) == ResponseCode::NoError
                && m.answers
                    .iter()
                    .all(|r| r.record_type() == RecordType::CNAME
                        || r.record_type() == RecordType::RRSIG),
            "{name} {rtype}: {m:?}\n{}",
            v.unbound.log()
        );
    }
    // The unsigned child: an insecure delegation, answered without AD (the
    // referral is followed to a server that is not there: SERVFAIL, but
    // never bogus).
    let m = ask("child.example.com", RecordType::DS);
    assert!(
        resolver::authentic(&m) && m.answers.is_empty(),
        "child.example.com DS, proved absent: {m:?}\n{}",
        v.unbound.log()
    );

    // Broken on the wire: bogus, SERVFAIL, and the log says why.
    v.relay.set_breaking(true);
    v.unbound.flush("example.com");
    for name in ["app.example.com", "other.example.com"] {
        let m = ask(name, RecordType::A);
        assert_eq!(resolver::rcode(&m), ResponseCode::ServFail, "{name}: {m:?}");
    }
    eventually(EVENTUALLY, "unbound logs the failed validation", || {
        let log = v.unbound.log();
        log.contains("validation failure") || log.contains("signature crypto failed")
    });
    // Mended: validated again.
    v.relay.set_breaking(false);
    v.unbound.flush("example.com");
    let m = ask("app.example.com", RecordType::A);
    assert!(resolver::authentic(&m), "{m:?}\n{}", v.unbound.log());
}
