//! `sextant import` on whole saved appliance configurations (the corpus in
//! tests/appliance-configs/, written in the appliance's saved format), as a
//! migrating operator runs it: import each site's ns.conf untouched, compare
//! the report and the written file with the golden ones, check the result,
//! enter the secrets the report names, and serve both sites as separate
//! processes on the files' own addresses, in a network namespace of the
//! test's own, with real backends; then ask with dig and with hickory:
//! once from that namespace over loopback, and once from a client
//! namespace behind a veth pair per ADNS site, each site answering UDP
//! through its XDP path (`--xdp-interface`), as it would behind a NIC.
//!
//! `UPDATE_GOLDEN=1 cargo nextest run -p sextant --test import` rewrites the
//! golden files after a deliberate change; review the diff.

use std::collections::BTreeMap;
use std::fs;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use sextant_test_support::prelude::*;
use sextant_test_support::scratch::tempdir;

const BIN: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/appliance-configs")
}

/// Runs `sextant import NAME -o OUT` in the corpus directory (so the report
/// names the file as the operator typed it); returns the exit code and the
/// report without its last line (which names OUT).
fn import(name: &str, out: &Path, extra: &[&str]) -> (i32, String) {
    let output = Command::new(BIN.0)
        .current_dir(corpus())
        .args(["import", name, "-o"])
        .arg(out)
        .args(extra)
        .output()
        .expect("run sextant import");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let report: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("Written to "))
        .collect();
    assert!(
        output.stderr.is_empty(),
        "import wrote to stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code().unwrap_or(-1), report.join("\n") + "\n")
}

/// Compares `actual` with the golden file `name` in the corpus, or rewrites
/// it under UPDATE_GOLDEN=1.
fn golden(name: &str, actual: &str) {
    let path = corpus().join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        fs::write(&path, actual).expect("write golden file");
        return;
    }
    let expected = fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (create it with UPDATE_GOLDEN=1)", path.display()));
    if expected != actual {
        let diff = expected
            .lines()
            .zip(actual.lines())
            .enumerate()
            .find(|(_, (e, a))| e != a)
            .map(|(i, (e, a))| format!("first difference at line {}:\n- {e}\n+ {a}", i + 1))
            .unwrap_or_else(|| "one is a prefix of the other".to_string());
        panic!(
            "{} differs from this run ({diff}); rerun with UPDATE_GOLDEN=1 if the change is meant\n--- actual ---\n{actual}",
            path.display()
        );
    }
}

struct Imported {
    config: String,
}

/// Imports one corpus file, checks it against its golden files and with
/// `sextant check`.
fn import_site(dir: &Path, stem: &str) -> Imported {
    let out = dir.join(format!("{stem}.conf"));
    let (code, report) = import(&format!("{stem}-ns.conf"), &out, &[]);
    golden(&format!("{stem}.report"), &report);
    assert_eq!(code, 0, "import of {stem}-ns.conf failed:\n{report}");
    let config = fs::read_to_string(&out).expect("read the written configuration");
    golden(&format!("{stem}.sextant.conf"), &config);
    let check = BIN.run(&["check", out.to_str().expect("utf-8 path")]);
    assert!(
        check.status.success(),
        "sextant check rejects the imported file:\n{}",
        output_text(&check)
    );
    Imported { config }
}

/// What the migration guide says to do with the report's secrets: enter
/// the real rpcNode password (the same one on both sites).
fn enter_secrets(config: &str) -> String {
    let mut out = config.to_string();
    for ip in ["10.20.0.11", "10.30.0.11", "10.40.0.11"] {
        out = out.replace(
            &format!("SEXTANT-REENTER-rpcNode-{ip}"),
            "correct-horse-battery-staple",
        );
    }
    assert!(
        !out.contains("SEXTANT-REENTER-"),
        "a placeholder is left:\n{out}"
    );
    out
}

#[test]
fn the_reports_name_what_was_left_out_and_why() {
    let dir = tempdir("import-report");
    let out = dir.join("dc1.conf");
    let (code, report) = import("dc1-ns.conf", &out, &[]);
    assert_eq!(code, 0, "{report}");
    for expected in [
        // One line per command, with the count and the lines.
        "add lb vserver                      9  load balancing: lines 106-114",
        "add ssl certKey                     3  SSL/TLS offload: lines 101-103",
        // Root hints are the resolver's.
        "root hints",
        // The local site, decided as the appliance does.
        "-siteType LOCAL added: the appliance owns its IP 10.20.0.11",
        // Secrets.
        "set ns rpcNode 10.20.0.11 -password: the appliance saved it encrypted",
        // Site persistence has no DNS-level equivalent but source-IP persistence.
        "-persistenceType SOURCEIP",
        "Result: a valid Sextant configuration",
    ] {
        assert!(
            report.contains(expected),
            "report lacks {expected:?}:\n{report}"
        );
    }
    // --local-site overrides the owned address.
    let (code, report) = import("dc1-ns.conf", &out, &["--local-site", "site_dc2"]);
    assert_eq!(code, 0, "{report}");
    assert!(
        report.contains("add gslb site site_dc2: -siteType LOCAL (--local-site site_dc2)"),
        "{report}"
    );
    let written = fs::read_to_string(&out).expect("written");
    assert!(
        written.contains("add gslb site site_dc2 10.30.0.11 -publicIP 10.30.0.11 -siteType LOCAL"),
        "{written}"
    );
    // A site the file does not have is an error, exit 1.
    let (code, report) = import("dc1-ns.conf", &out, &["--local-site", "site_dc9"]);
    assert_eq!(code, 1, "{report}");
    assert!(report.contains("--local-site site_dc9: the file has no site of that name"));
}

/// dc3-ns.conf holds a line of every kind a saved file may have outside
/// Sextant's scope: config-sync GSLB parameters, resolver records outside
/// every zone, a proxied zone with its records, monitors Sextant cannot
/// probe (LDAP, RADIUS, MYSQL, a USER script) and their bindings, responder
/// lines that do not tokenize (an unterminated quote, a wrapped line),
/// `add ns rpcNode`, operational commands, and a GSLB service naming a
/// server the file does not define. Each is left out or taken, and
/// reported; the rest imports into a valid configuration (golden files).
#[test]
fn a_saved_file_with_lines_of_every_kind_outside_scope_imports() {
    let dir = tempdir("import-kinds");
    let Imported { config } = import_site(&dir, "dc3");
    let report = fs::read_to_string(corpus().join("dc3.report")).expect("the golden report");
    for expected in [
        "add dns addRec                   1  the appliance's DNS resolver and cache; a name outside every zone the file serves",
        "line 72: add dns zone partners.example.net -proxyMode YES: the appliance passed this zone's queries on to its back-end DNS servers",
        "(lines 73-75) are left out",
        "line 61: gslb service gs_dir_dc3 loses its monitor mon_ldap (type LDAP: Sextant has no LDAP probe); with no monitor left nothing probes it",
        "line 59: gslb service gs_www_dc3 loses its monitor mon_script (type USER: Sextant has no USER probe); it is still probed by mon_www",
        "add lb monitor                   1  load balancing; bound to no GSLB service: lines 33",
        "the line cannot be read (an unterminated quote, or a line a copy cut short): lines 25, 28",
        "(the rest of a wrapped line)     1  HTTP traffic policies; does not start with a command",
        "line 14: add ns rpcNode 10.20.0.11 -password: the appliance saved it encrypted",
        "sync gslb config                 1  operational commands",
        "show gslb runningConfig          1  operational commands",
        "line 41: gslb service gs_portal_dc3 names the server srv_portal, which the file does not define",
        "bind gslb vserver                1  load balancing; binds a GSLB service that was left out",
        "Result: a valid Sextant configuration",
    ] {
        assert!(
            report.contains(expected),
            "report lacks {expected:?}:\n{report}"
        );
    }
    for left_out in [
        "partners.example.net",
        "fileserver.corp.example.net",
        "mon_ldap",
        "mon_radius",
        "mon_script",
        "gs_portal_dc3",
        "act_maint",
        "sync gslb",
    ] {
        assert!(
            !config.contains(left_out),
            "{left_out} was written:\n{config}"
        );
    }
    for written in [
        "add ns rpcNode 10.20.0.11 -password SEXTANT-REENTER-rpcNode-10.20.0.11 -srcIP 10.50.0.11",
        "bind gslb service gs_www_dc3 -monitorName mon_www",
        "add gslb service gs_dir_dc3 10.50.1.40 TCP 389",
        "add dns addRec mail.gslb.example.net 10.50.1.25",
        // Taken as it is: config sync's counter (issue 27), not warned about.
        "set gslb parameter -ldnsprobeOrder PING DNS TCP -incarnation 12",
    ] {
        assert!(
            config.contains(written),
            "{written:?} was not written:\n{config}"
        );
    }
}

#[test]
fn a_saved_file_is_refused_by_check_with_a_pointer_to_import() {
    let saved = corpus().join("dc1-ns.conf");
    let out = BIN.run(&["check", saved.to_str().expect("utf-8")]);
    assert!(!out.status.success());
    let text = output_text(&out);
    assert!(
        text.contains("dc1-ns.conf:3: unknown command \"set ns config\": it configures system settings, outside Sextant's scope"),
        "{text}"
    );
    assert!(
        text.contains("run `sextant import FILE -o OUT.conf`"),
        "{text}"
    );
    assert!(
        text.contains("encrypted with the appliance's own key"),
        "{text}"
    );
}

/// The addresses the two saved files give their sites, VIPs and ADNS
/// services, added to the namespace's loopback.
const ADDRESSES: &[&str] = &[
    "10.20.0.11",
    "10.20.1.20",
    "10.20.1.21",
    "10.20.1.22",
    "10.30.0.11",
    "10.30.1.20",
    "10.30.1.21",
    "10.30.1.22",
    "10.40.0.11",
    "10.40.1.20",
];

fn v4(s: &str) -> Ipv4Addr {
    s.parse().expect("IPv4 address")
}

/// `dig @server name type +short` inside the namespace; each line.
fn dig(ns: &Netns, server: &str, name: &str, rtype: &str, tcp: bool) -> Vec<String> {
    let server = SocketAddr::new(server.parse().expect("server address"), 53);
    let transport = if tcp { "+tcp" } else { "+notcp" };
    let out = sextant_test_support::dns::dig_output(
        Some(ns),
        server,
        &[name, rtype, "+short", transport],
    );
    assert!(out.status.success(), "dig failed: {}", output_text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Where the test's DNS client asks from.
enum Client {
    /// In the sites' own namespace, from 127.0.0.1: DNS through the
    /// kernel's sockets.
    Loopback,
    /// In a namespace of its own, joined to the sites' by one veth pair per
    /// ADNS site (`xdp1` for site_dc1, `xdp2` for site_dc2), each site
    /// serving with `--xdp-interface` on its own: UDP through the XDP path.
    Xdp(Arc<Netns>),
}

/// The client namespace's address on the veth pair towards each ADNS
/// address, and the pair's name (the server end's address is .1).
const XDP_LINKS: &[(&str, &str, &str)] = &[
    ("10.20.0.11", "xdp1", "10.77.61.2"),
    ("10.30.0.11", "xdp2", "10.77.62.2"),
];

impl Client {
    /// The namespace the client's queries leave from.
    fn ns<'a>(&'a self, sites: &'a Arc<Netns>) -> &'a Arc<Netns> {
        match self {
            Client::Loopback => sites,
            Client::Xdp(client) => client,
        }
    }

    /// The source address of queries to `server`.
    fn source(&self, server: IpAddr) -> IpAddr {
        match self {
            Client::Loopback => IpAddr::V4(Ipv4Addr::LOCALHOST),
            Client::Xdp(_) => XDP_LINKS
                .iter()
                .find(|(adns, _, _)| server == IpAddr::V4(v4(adns)))
                .map(|(_, _, me)| IpAddr::V4(v4(me)))
                .unwrap_or_else(|| panic!("no veth pair towards {server}")),
        }
    }

    /// The `--xdp-interface` argument for the site whose ADNS address is
    /// `adns`, if the client reaches it through XDP.
    fn serve_args(&self, adns: &str) -> Vec<&'static str> {
        match self {
            Client::Loopback => Vec::new(),
            Client::Xdp(_) => XDP_LINKS
                .iter()
                .find(|(a, _, _)| *a == adns)
                .map(|(_, link, _)| vec!["--xdp-interface", *link])
                .unwrap_or_default(),
        }
    }
}

#[test]
fn imported_sites_serve_their_gslb_names_as_the_appliance_would() {
    serve_imported_sites("import", |_| Some(Client::Loopback));
}

/// The same files, the same checks, with the client behind veth pairs and
/// both ADNS sites answering UDP from their XDP path: what the path
/// answers for a whole migrated configuration (weights, CNAME records, a
/// child's service, a DNS policy that drops, zone data, a failing
/// backend) is what the kernel's sockets answer.
#[test]
fn imported_sites_serve_the_same_through_xdp() {
    serve_imported_sites("import-xdp", |sites| {
        let client = Netns::create("import-xdp-c")?;
        for (adns, link, me) in XDP_LINKS {
            let prefix = me.rsplit_once('.').map(|(p, _)| p).expect("IPv4");
            sites.veth_to(
                &client,
                link,
                &[&format!("{prefix}.1/24")],
                &[&format!("{me}/24")],
            );
            client.exec_ok(&[
                "ip",
                "route",
                "add",
                &format!("{adns}/32"),
                "via",
                &format!("{prefix}.1"),
            ]);
        }
        Some(Client::Xdp(client))
    });
}

/// Imports the corpus's three sites, serves them as separate processes in
/// a namespace tagged `tag`, and checks their answers to the client that
/// `client` makes (None: no namespaces here, and the test has said why).
fn serve_imported_sites(tag: &str, client: impl FnOnce(&Arc<Netns>) -> Option<Client>) {
    if !have_program("dig") {
        sextant_test_support::ci::cannot_run(
            "this test needs dig (scripts/setup.sh installs bind9-dnsutils)",
        );
        return;
    }
    let dir = tempdir(&format!("{tag}-serve"));
    let dc1 = import_site(&dir, "dc1");
    let dc2 = import_site(&dir, "dc2");
    let child = import_site(&dir, "child-eu");
    let Some(ns) = Netns::create(tag) else {
        return;
    };
    for a in ADDRESSES {
        ns.exec_ok(&["ip", "addr", "add", &format!("{a}/32"), "dev", "lo"]);
    }
    // The backends behind the GSLB services: the LB VIPs of each site
    // (HTTP on 80 for www, monitored by mon_www's GET /health; TCP on 8080
    // for api, monitored by the built-in tcp monitor).
    let mut www: BTreeMap<&str, Backend> = BTreeMap::new();
    let mut api = Vec::new();
    ns.run(|| {
        for vip in ["10.20.1.20", "10.30.1.20", "10.40.1.20"] {
            www.insert(
                vip,
                Backend::http_at(SocketAddr::new(IpAddr::V4(v4(vip)), 80)),
            );
        }
        for vip in ["10.20.1.21", "10.30.1.21"] {
            api.push(Backend::tcp_at(SocketAddr::new(IpAddr::V4(v4(vip)), 8080)));
        }
    });
    let Some(client) = client(&ns) else {
        return;
    };
    let adns = |ip: &str| SocketAddr::new(IpAddr::V4(v4(ip)), 53);
    let site1 = SiteServer::start_as_written_with(
        BIN,
        &dir,
        "site_dc1",
        v4("10.20.0.11"),
        adns("10.20.0.11"),
        &enter_secrets(&dc1.config),
        Some(ns.clone()),
        &client.serve_args("10.20.0.11"),
    );
    let site2 = SiteServer::start_as_written_with(
        BIN,
        &dir,
        "site_dc2",
        v4("10.30.0.11"),
        adns("10.30.0.11"),
        &enter_secrets(&dc2.config),
        Some(ns.clone()),
        &client.serve_args("10.30.0.11"),
    );
    // The child site (seed 001): no ADNS service, so it answers no DNS; it
    // reports its service to its parent, site_dc1.
    let child = SiteServer::start_as_written(
        BIN,
        &dir,
        "child_eu",
        v4("10.40.0.11"),
        adns("10.40.0.11"),
        &enter_secrets(&child.config),
        Some(ns.clone()),
    );

    // Weighted 60/40 between the two sites' www VIPs, from either site's
    // ADNS service, over UDP and TCP.
    for site in [&site1, &site2] {
        eventually(Duration::from_secs(20), "both www services UP", || {
            client.ns(&ns).run(|| {
                let seen: std::collections::BTreeSet<Ipv4Addr> = (0..20)
                    .flat_map(|_| {
                        a_records(&site.dns.udp_from_ip(
                            client.source(site.dns.server.ip()),
                            &build_query("www.gslb.example.net", RecordType::A, None),
                        ))
                    })
                    .collect();
                seen.len() == 2
            })
        });
        let counts = client.ns(&ns).run(|| {
            let mut counts: BTreeMap<Ipv4Addr, usize> = BTreeMap::new();
            for _ in 0..100 {
                for a in a_records(&site.dns.udp_from_ip(
                    client.source(site.dns.server.ip()),
                    &build_query("www.gslb.example.net", RecordType::A, None),
                )) {
                    *counts.entry(a).or_default() += 1;
                }
            }
            counts
        });
        assert_eq!(counts.get(&v4("10.20.1.20")), Some(&60), "{counts:?}");
        assert_eq!(counts.get(&v4("10.30.1.20")), Some(&40), "{counts:?}");
        let server = site.dns.server.ip().to_string();
        for tcp in [false, true] {
            let answer = dig(client.ns(&ns), &server, "www.gslb.example.net", "A", tcp);
            assert!(
                answer.len() == 1 && ["10.20.1.20", "10.30.1.20"].contains(&answer[0].as_str()),
                "{answer:?}"
            );
        }
        // The zone's own data: SOA, NS, and the name servers' addresses.
        let soa = dig(client.ns(&ns), &server, "gslb.example.net", "SOA", false);
        assert!(
            soa[0].starts_with("ns1.gslb.example.net. hostmaster.example.net. 2026120101 "),
            "{soa:?}"
        );
        let mut nsrr = dig(client.ns(&ns), &server, "gslb.example.net", "NS", false);
        nsrr.sort();
        assert_eq!(nsrr, ["ns1.gslb.example.net.", "ns2.gslb.example.net."]);
        assert_eq!(
            dig(client.ns(&ns), &server, "ns1.gslb.example.net", "A", false),
            ["10.20.0.11"]
        );
        assert_eq!(
            dig(client.ns(&ns), &server, "ns2.gslb.example.net", "A", true),
            ["10.30.0.11"]
        );
        // pol_no_any drops ANY queries (dns_default_act_Drop), as on the
        // appliance: no answer at all.
        let any = client.ns(&ns).run(|| {
            site.dns.try_udp_from_ip(
                client.source(site.dns.server.ip()),
                &build_query("www.gslb.example.net", RecordType::ANY, None),
            )
        });
        assert!(any.is_err(), "an ANY query was answered: {any:?}");
        // Root hints were left out: the root is not ours.
        let root = client.ns(&ns).run(|| {
            site.dns.udp_from_ip(
                client.source(site.dns.server.ip()),
                &build_query(".", RecordType::NS, None),
            )
        });
        assert_eq!(root.metadata.response_code, ResponseCode::Refused);
    }

    // CNAME-based GSLB (-dnsRecordType CNAME, -cnameEntry): a CNAME to
    // each site's name in turn, for A queries and CNAME queries alike.
    for site in [&site1, &site2] {
        let server = site.dns.server.ip().to_string();
        eventually(
            Duration::from_secs(30),
            &format!("{} answers cdn with both sites' names", site.name),
            || {
                let seen: std::collections::BTreeSet<String> = (0..6)
                    .flat_map(|_| dig(client.ns(&ns), &server, "cdn.gslb.example.net", "A", false))
                    .collect();
                seen == [
                    "cdn-dc1.example.org.".to_string(),
                    "cdn-dc2.example.org.".to_string(),
                ]
                .into()
            },
        );
        let m = client.ns(&ns).run(|| {
            site.dns.udp_from_ip(
                client.source(site.dns.server.ip()),
                &build_query("cdn.gslb.example.net", RecordType::CNAME, None),
            )
        });
        assert_eq!(m.metadata.response_code, ResponseCode::NoError);
        assert!(m.metadata.authoritative);
        assert_eq!(m.answers.len(), 1, "{m:?}");
        assert!(matches!(&m.answers[0].data, RData::CNAME(_)), "{m:?}");
        assert_eq!(m.answers[0].ttl, 5);
    }

    // The child's shop service, answered by both parents.
    for site in [&site1, &site2] {
        eventually(
            Duration::from_secs(30),
            &format!("{} answers shop from the child", site.name),
            || {
                client.ns(&ns).run(|| {
                    a_records(&site.dns.udp_from_ip(
                        client.source(site.dns.server.ip()),
                        &build_query("shop.gslb.example.net", RecordType::A, None),
                    )) == [v4("10.40.1.20")]
                })
            },
        );
    }
    let child_dns = child.in_ns(|| {
        child.dns.try_udp_from(
            None,
            &build_query("shop.gslb.example.net", RecordType::A, None),
        )
    });
    assert!(child_dns.is_err(), "the child answered DNS: {child_dns:?}");

    // The DC2 www backend fails: mon_www (GET /health, every 2 s, DOWN
    // after 3 failures) takes it out of both sites' answers.
    let dead = www.remove("10.30.1.20").expect("backend").kill();
    for site in [&site1, &site2] {
        eventually(
            Duration::from_secs(30),
            &format!("{} answers only DC1 after {dead} died", site.name),
            || {
                client.ns(&ns).run(|| {
                    (0..10).all(|_| {
                        a_records(&site.dns.udp_from_ip(
                            client.source(site.dns.server.ip()),
                            &build_query("www.gslb.example.net", RecordType::A, None),
                        )) == [v4("10.20.1.20")]
                    })
                })
            },
        );
    }
    // Through XDP, every UDP query the ADNS sites counted came through the
    // path, not the kernel's socket that shares the address.
    if let Client::Xdp(_) = client {
        for site in [&site1, &site2] {
            let dns = site.status().dns;
            assert!(
                dns.queries_udp > 100 && dns.queries_xdp == dns.queries_udp,
                "{}: not every UDP query came through the XDP path: {dns:?}",
                site.name
            );
        }
    }
    drop(api);
}

#[test]
fn without_an_output_file_the_configuration_goes_to_stdout_and_the_report_to_stderr() {
    let out = Command::new(BIN.0)
        .current_dir(corpus())
        .args(["import", "child-eu-ns.conf"])
        .output()
        .expect("run sextant import");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.starts_with("# The GSLB and DNS part of child-eu-ns.conf"),
        "{stdout}"
    );
    assert!(!stdout.contains("Left out"), "{stdout}");
    assert!(
        stderr.starts_with("child-eu-ns.conf: 137 lines"),
        "{stderr}"
    );
    // An output name that check would not read as the appliance syntax is
    // refused, and nothing is written.
    let dir = tempdir("import-output-name");
    for name in ["sextant.txt", "sextant.toml", "sextant"] {
        let path = dir.join(name);
        let refused = Command::new(BIN.0)
            .current_dir(corpus())
            .args(["import", "child-eu-ns.conf", "-o"])
            .arg(&path)
            .output()
            .expect("run sextant import");
        let text = output_text(&refused);
        assert_eq!(refused.status.code(), Some(1), "{name}: {text}");
        assert!(
            text.contains("name the output *.conf") && text.contains(&path.display().to_string()),
            "{name}: {text}"
        );
        assert!(!path.exists(), "{name} was written although refused");
    }
    let good = dir.join("sextant.conf");
    let written = Command::new(BIN.0)
        .current_dir(corpus())
        .args(["import", "child-eu-ns.conf", "-o"])
        .arg(&good)
        .output()
        .expect("run sextant import");
    assert!(written.status.success(), "{}", output_text(&written));
    let check = BIN.run(&["check", &good.display().to_string()]);
    assert!(check.status.success(), "{}", output_text(&check));
    let _ = std::fs::remove_dir_all(&dir);
    // A file that is not there.
    let missing = BIN.run(&["import", "/nonexistent/ns.conf"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(output_text(&missing).contains("cannot read /nonexistent/ns.conf"));
    // --help names the command.
    let help = BIN.run(&["--help"]);
    assert!(
        output_text(&help).contains("import"),
        "{}",
        output_text(&help)
    );
}

/// Saved files as they reach a migrating operator, awkward: one mailed
/// (CRLF line ends, a duplicate `add gslb service`, a line wrapped mid-option
/// by the mail client), one an excerpt whose binds name services, sites and
/// monitors defined elsewhere. The appliance loads such a file line by line
/// and rejects the lines it cannot take; so does the import, listing each
/// with its number and reason, writing the rest (which `sextant check`
/// accepts) and exiting 3. `--strict` refuses the file (exit 1).
#[test]
fn awkward_saved_files_load_as_the_appliance_loads_them() {
    let dir = tempdir("import-awkward");
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "awkward/dc6-mailed-ns.conf",
            &[
                "29 lines, 27 commands: 19 written, 3 left out, 5 rejected",
                "Rejected, as the appliance would (5 lines; the rest is loaded, as the appliance loads it):",
                "  line 17: add gslb service: service \"gs_www_dc6\" is already defined on line 15 (names are case-insensitive)",
                "  line 18: add gslb service gs_api_dc6: option -siteName needs a value",
                "  line 19: site_dc6: unknown command \"site_dc6\"",
                "  line 23: bind gslb vserver gv_api: service \"gs_api_dc6\" is not defined",
                "  line 26: bind gslb service gs_api_dc6: service \"gs_api_dc6\" is not defined",
                "Result: a valid Sextant configuration (2 sites, 2 services, 2 vservers, 2 domains, 1 monitors), without the 5 rejected lines above",
            ],
            // The first of the duplicates is the one the appliance keeps.
            "add gslb service gs_www_dc6 srv_gslb_www HTTP 80 -publicIP 10.60.1.20",
        ),
        (
            "awkward/dc6-excerpt-ns.conf",
            &[
                "12 lines, 10 commands: 5 written, 0 left out, 5 rejected",
                "  line 7: bind gslb vserver gv_www: service \"gs_www_dc7\" is not defined",
                "  line 9: bind gslb service gs_www_dc6: monitor \"mon_www\" is not defined",
                "  line 10: bind gslb service gs_www_dc7: service \"gs_www_dc7\" is not defined",
                "  line 11: add gslb service gs_api_dc7: site \"site_dc7\" is not defined",
                // Rejected in turn: its vserver's line was never in the excerpt.
                "  line 12: bind gslb vserver gv_api: vserver \"gv_api\" is not defined",
            ],
            "bind gslb vserver gv_www -serviceName gs_www_dc6 -weight 60",
        ),
    ];
    for (name, expected, kept) in cases {
        let out = dir.join("awkward.conf");
        let (code, report) = import(name, &out, &[]);
        assert_eq!(code, 3, "{name}:\n{report}");
        for line in *expected {
            assert!(
                report.contains(line),
                "{name}: report lacks {line:?}:\n{report}"
            );
        }
        let written = fs::read_to_string(&out).expect("written");
        assert!(
            written.contains(kept),
            "{name}: {kept:?} not written:\n{written}"
        );
        let check = BIN.run(&["check", out.to_str().expect("utf-8 path")]);
        assert!(
            check.status.success(),
            "{name}: sextant check rejects the imported file:\n{}",
            output_text(&check)
        );
        // All or nothing: the same lines are errors, the import fails.
        let (code, report) = import(name, &out, &["--strict"]);
        assert_eq!(code, 1, "{name} --strict:\n{report}");
        assert!(
            !report.contains("Rejected, as the appliance would"),
            "{report}"
        );
        assert!(report.contains("Result: not valid"), "{report}");
        let first = expected
            .iter()
            .find_map(|l| l.trim().strip_prefix("line "))
            .and_then(|l| l.split(':').next())
            .expect("a rejected line");
        assert!(
            report.contains(&format!("{name}:{first}: ")),
            "{name} --strict: no error at line {first}:\n{report}"
        );
    }
    // A clean file still exits 0.
    let (code, report) = import("child-eu-ns.conf", &dir.join("child.conf"), &[]);
    assert_eq!(code, 0, "{report}");
}

/// lb-health/dc9-ns.conf: GSLB services at the VIPs of local LB vservers
/// with no monitor of their own, as most appliances have them. The import
/// carries over what the appliance checks — the vservers' backends, each
/// by its own monitor (gs_web_dc9: serviceGroup sg_web's members by
/// mon_web) or by the appliance's default (gs_api_dc9: svc_api1, no
/// monitor bound, so tcp-default) — and the served result follows the
/// backends: UP and answered while one is alive, DOWN and not answered when
/// all are dead, although nothing listens at the VIPs themselves.
#[test]
fn a_gslb_service_at_an_lb_vip_follows_the_vservers_backends() {
    let dir = tempdir("import-lb-health");
    let out = dir.join("dc9.conf");
    let (code, report) = import("lb-health/dc9-ns.conf", &out, &[]);
    assert_eq!(code, 0, "{report}");
    for expected in [
        "line 26: gslb service gs_web_dc9: no monitor is bound to it and it is at the VIP of lb vserver vs_web (line 19), whose state it takes on the appliance; written with a monitor per backend (127.0.39.101:8080 by mon_web, 127.0.39.102:8080 by mon_web), each bound with -weight 1, and -monThreshold 1",
        "line 27: gslb service gs_api_dc9: no monitor is bound to it and it is at the VIP of lb vserver vs_api (line 20), whose state it takes on the appliance; written with a monitor per backend (127.0.39.111:9000 by tcp-default)",
        "add lb vserver           1  load balancing; read for the health of GSLB service gs_web_dc9: lines 19",
        "bind serviceGroup        3  load balancing; read for the health of GSLB service gs_web_dc9: lines 36-38",
    ] {
        assert!(
            report.contains(expected),
            "report lacks {expected:?}:\n{report}"
        );
    }
    let config = fs::read_to_string(&out).expect("written");
    // The remote site's service stays as it is: metric exchange decides.
    assert!(
        config.contains("add gslb service gs_web_dc8 127.0.38.50 HTTP 80 -publicIP 127.0.38.50 -publicPort 80 -maxClient 0 -siteName site_dc8 -cltTimeout 180 -svrTimeout 360 -downStateFlush ENABLED\n"),
        "{config}"
    );
    let config = config.replace(
        "SEXTANT-REENTER-rpcNode-127.0.39.1",
        "correct-horse-battery-staple",
    );
    let config = config.replace(
        "SEXTANT-REENTER-rpcNode-127.0.38.1",
        "correct-horse-battery-staple",
    );
    let Some(ns) = Netns::create("import-lbh") else {
        return;
    };
    let at = |ip: &str, port: u16| SocketAddr::new(IpAddr::V4(v4(ip)), port);
    // One of sg_web's two members alive; svc_api1 alive.
    let (web1, api1) = ns.run(|| {
        (
            Backend::http_at(at("127.0.39.101", 8080)),
            Backend::tcp_at(at("127.0.39.111", 9000)),
        )
    });
    let site = SiteServer::start_as_written(
        BIN,
        &dir,
        "site_dc9",
        v4("127.0.39.1"),
        at("127.0.39.1", 53),
        &config,
        Some(ns.clone()),
    );
    let state = |name: &str| site.try_service(name).ok().map(|s| s.state);
    let answers = || {
        site.in_ns(|| {
            a_records(&site.dns.udp_from(
                None,
                &build_query("www.gslb.example.net", RecordType::A, None),
            ))
        })
    };
    eventually(Duration::from_secs(20), "gs_web_dc9 UP, answered", || {
        state("gs_web_dc9") == Some(State::Up) && answers() == [v4("127.0.39.50")]
    });
    let reason = site.service("gs_web_dc9").reason;
    assert!(
        reason.contains("1 of 2 monitors UP (-monThreshold 1)"),
        "{reason}"
    );
    eventually(Duration::from_secs(20), "gs_api_dc9 UP", || {
        state("gs_api_dc9") == Some(State::Up)
    });

    // The last live member dies: DOWN within mon_web's time (every 1 s,
    // DOWN after 2 failures), and the VIP is no longer answered.
    web1.kill();
    eventually(
        Duration::from_secs(20),
        "gs_web_dc9 DOWN, not answered",
        || state("gs_web_dc9") == Some(State::Down) && !answers().contains(&v4("127.0.39.50")),
    );
    // The other member comes up: UP again at mon_web's -downTime 2.
    let web2 = ns.run(|| Backend::http_at(at("127.0.39.102", 8080)));
    eventually(Duration::from_secs(20), "gs_web_dc9 UP again", || {
        state("gs_web_dc9") == Some(State::Up) && answers() == [v4("127.0.39.50")]
    });
    assert!(
        !web2.requests().is_empty(),
        "mon_web's probes reached the member"
    );

    // tcp-default, the appliance's default for a TCP service: DOWN when
    // svc_api1's backend dies (every 5 s, DOWN after 3 failures).
    api1.kill();
    eventually(Duration::from_secs(40), "gs_api_dc9 DOWN", || {
        state("gs_api_dc9") == Some(State::Down)
    });
}
