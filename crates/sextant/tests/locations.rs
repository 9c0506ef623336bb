//! Locations end to end: the location database (custom entries, location
//! files, IPv4 and IPv6), STATICPROXIMITY, DNS policies with preferred
//! locations (seed 000's worked example, played out with real backends
//! going down one by one), ECS-driven client locations, DROP, and
//! `sextant explain` / `GET /v1/explain`.
//!
//! Every test starts the real `sextant serve` and queries it over real UDP
//! (one test also over TCP). The client's location comes from the source
//! address the query is sent from: the harness's per-test client addresses
//! (127.(200+k).X.Y) are given locations with `add location`.
//!
//! What the answers must be is docs/locations.md; the syntax is
//! docs/config.md.

use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// The TCP monitor every monitored service here uses: fast, so a killed
/// backend is DOWN within a second or so.
const MONITOR: &str = "add lb monitor mon_tcp TCP -interval 200 MSEC -resptimeout 100 MSEC -retries 2 -successRetries 1\n";

/// Queries per "which services answer" sample. Round robin among 2-3
/// services shows each of them many times over this many queries.
const SAMPLE: usize = 24;

/// `add location IP IP "LOC"` for one address.
fn location_line(ip: impl std::fmt::Display, loc: &str) -> String {
    format!("add location {ip} {ip} \"{loc}\"\n")
}

/// A GSLB service on `ip`, monitored by `mon_tcp` on a real TCP backend.
fn monitored_service(name: &str, backend: &Backend) -> String {
    format!(
        "add gslb service {name} {} TCP {} -siteName site1\nbind gslb service {name} -monitorName mon_tcp\n",
        backend.ip(),
        backend.port()
    )
}

/// An unmonitored GSLB service (UP: the local site's own services are UP
/// without a monitor).
fn plain_service(name: &str, ip: impl std::fmt::Display) -> String {
    format!("add gslb service {name} {ip} HTTP 80 -siteName site1\n")
}

/// A vserver `vs` with `opts`, the services bound in order, and `domain`.
fn vserver(vs: &str, opts: &str, services: &[&str], domain: &str) -> String {
    let mut c = format!("add gslb vserver {vs} TCP {opts}\n");
    for s in services {
        writeln!(c, "bind gslb vserver {vs} -serviceName {s}").unwrap();
    }
    writeln!(c, "bind gslb vserver {vs} -domainName {domain} -TTL 5").unwrap();
    c
}

/// `n` A queries for `name` from `source`; every address seen, counted.
/// Each answer must hold exactly one address.
fn sample_from(s: &Server, source: Ipv4Addr, name: &str, n: usize) -> BTreeMap<Ipv4Addr, usize> {
    let mut m = BTreeMap::new();
    for _ in 0..n {
        let got = s.dns.query_a_from(source, name);
        assert_eq!(
            got.len(),
            1,
            "{name} from {source}: want one address per answer, got {got:?}"
        );
        *m.entry(got[0]).or_insert(0) += 1;
    }
    m
}

/// Asserts that over [`SAMPLE`] queries from `source` exactly the services
/// `want` answer (each at least once, nothing else).
fn assert_answers(s: &Server, source: Ipv4Addr, name: &str, want: &[(&str, Ipv4Addr)], step: &str) {
    let got = sample_from(s, source, name, SAMPLE);
    let want_set: BTreeSet<Ipv4Addr> = want.iter().map(|(_, ip)| *ip).collect();
    let got_set: BTreeSet<Ipv4Addr> = got.keys().copied().collect();
    if got_set != want_set {
        let trace = s.explain(name, &source.to_string());
        panic!(
            "{step}: {name} from {source} over {SAMPLE} queries: want exactly {want:?}, got {got:?}\n\
             --- /v1/explain ---\n{trace}"
        );
    }
}

// ---------------------------------------------------------------------------
// 1. Seed 000, the worked example
// ---------------------------------------------------------------------------

/// The eight services of seed 000, in the seed's order and spelling.
const SEED_SERVICES: [(&str, &str); 8] = [
    ("asia-in", "Asia.in"),
    ("asia-jpn", "Asia.JPN"),
    ("asia-hk", "Asia.hk"),
    ("europe-uk", "Europe.uk"),
    ("europe-ru", "Europe.ru"),
    ("europe-eg", "Europe.eg"),
    ("africa-sd", "Africa.sd"),
    ("africa-zmb", "Africa.ZMB"),
];

/// The seed's action, policy and binding, exactly as written there.
const SEED_POLICY: &str = r#"add dns action prefLoc11 GslbPrefLoc -preferredLocList "Asia.HK" "Europe.UK"
add dns policy dnsPolPrefLoc "CLIENT.IP.SRC.MATCHES_LOCATION("\*.ZMB.\*.*")" prefLoc11
bind dns global dnsPolPrefLoc 100
"#;

#[test]
fn seed_000_preferred_locations() {
    let net = Net::new("loc_seed000");
    let client = net.client_ip(0);
    let mut backends: Vec<Option<Backend>> =
        (0..8).map(|i| Some(Backend::tcp(net.svc_ip(i)))).collect();
    let ip = |i: usize| net.svc_ip(i as u8);

    let mut c = net.conf_preamble();
    c.push_str(MONITOR);
    c.push_str(&location_line(client, "Africa.ZMB.*.*"));
    for (i, (name, loc)) in SEED_SERVICES.iter().enumerate() {
        c.push_str(&location_line(ip(i), loc));
        c.push_str(&monitored_service(name, backends[i].as_ref().unwrap()));
    }
    let names: Vec<&str> = SEED_SERVICES.iter().map(|(n, _)| *n).collect();
    c.push_str(&vserver(
        "gv-app",
        "-lbMethod STATICPROXIMITY",
        &names,
        "app.example.com",
    ));
    c.push_str(SEED_POLICY);

    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);
    for name in &names {
        s.wait_state(name, State::Up);
    }
    let svc = |i: usize| (SEED_SERVICES[i].0, ip(i));
    let name = "app.example.com";
    let mut kill = |i: usize| {
        backends[i].take().expect("backend still running").kill();
        s.wait_state(SEED_SERVICES[i].0, State::Down);
    };

    // Step 1: everything UP: the perfect match of the first preferred
    // location, Asia.HK, and only it.
    assert_answers(&s, client, name, &[svc(2)], "step 1 (all UP)");

    // Step 2: Asia.HK down: the perfect match of Europe.UK.
    kill(2);
    assert_answers(&s, client, name, &[svc(3)], "step 2 (Asia.HK DOWN)");

    // Step 3: Europe.UK down too: no perfect match is UP; the partial
    // matches of Asia.HK, balanced.
    kill(3);
    assert_answers(
        &s,
        client,
        name,
        &[svc(0), svc(1)],
        "step 3 (Asia.HK, Europe.UK DOWN)",
    );
    let trace = s.explain(name, &client.to_string());
    assert!(
        trace.contains("dnsPolPrefLoc"),
        "step 3: /v1/explain does not name the policy:\n{trace}"
    );
    assert!(
        trace.contains("partial pass"),
        "step 3: /v1/explain does not say the partial pass decided:\n{trace}"
    );
    // ... and with Asia.IN down, the one UP partial match of Asia.HK.
    kill(0);
    assert_answers(
        &s,
        client,
        name,
        &[svc(1)],
        "step 3 (Asia.HK, Europe.UK, Asia.IN DOWN)",
    );

    // Step 4: every partial match of Asia.HK down: the partial matches of
    // Europe.UK, balanced.
    kill(1);
    assert_answers(
        &s,
        client,
        name,
        &[svc(4), svc(5)],
        "step 4 (all of Asia and Europe.UK DOWN)",
    );

    // Step 5: those down too: the remaining UP services, balanced.
    kill(4);
    kill(5);
    assert_answers(
        &s,
        client,
        name,
        &[svc(6), svc(7)],
        "step 5 (all of Asia and Europe DOWN)",
    );
    let trace = s.explain(name, &client.to_string());
    assert!(
        trace.contains("remaining"),
        "step 5: /v1/explain does not say the remaining services decided:\n{trace}"
    );
}

// ---------------------------------------------------------------------------
// 2. Wildcard preferred location: several perfect matches, balanced
// ---------------------------------------------------------------------------

#[test]
fn wildcard_perfect_matches_are_balanced() {
    let net = Net::new("loc_wildcard");
    let client = net.client_ip(0);
    // A fourth European service, DOWN: a perfect match, but not UP.
    let dead = Net::closed_port(net.svc_ip(3));
    let services = [
        ("eu-uk", "Europe.UK.London"),
        ("eu-fr", "Europe.FR.Paris"),
        ("eu-de", "Europe.DE.Berlin"),
        ("eu-dead", "Europe.IT.Rome"),
        ("asia-jp", "Asia.JP.Tokyo"),
        ("africa-zmb", "Africa.ZMB.Lusaka"),
    ];
    let mut c = net.conf_preamble();
    c.push_str(MONITOR);
    // The client is in Asia: proximity alone would answer asia-jp.
    c.push_str(&location_line(client, "Asia.JP.Osaka"));
    for (i, (name, loc)) in services.iter().enumerate() {
        let ip = net.svc_ip(i as u8);
        c.push_str(&location_line(ip, loc));
        if *name == "eu-dead" {
            writeln!(
                c,
                "add gslb service {name} {ip} TCP {dead} -siteName site1\nbind gslb service {name} -monitorName mon_tcp"
            )
            .unwrap();
        } else {
            c.push_str(&plain_service(name, ip));
        }
    }
    let names: Vec<&str> = services.iter().map(|(n, _)| *n).collect();
    c.push_str(&vserver(
        "gv-eu",
        "-lbMethod STATICPROXIMITY",
        &names,
        "eu.example.com",
    ));
    writeln!(
        c,
        "add dns action preferEurope GslbPrefLoc -preferredLocList \"Europe.*.*.*\" \"Asia.JP\"\n\
         add dns policy polEurope 'CLIENT.IP.SRC.IN_SUBNET({client}/32)' preferEurope\n\
         bind dns global polEurope 10"
    )
    .unwrap();

    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);
    s.wait_state("eu-dead", State::Down);
    let ip = |i: u8| net.svc_ip(i);
    let want = [("eu-uk", ip(0)), ("eu-fr", ip(1)), ("eu-de", ip(2))];
    assert_answers(&s, client, "eu.example.com", &want, "Europe.*.*.*");
    // Balanced: over many queries each gets a fair share.
    let m = sample_from(&s, client, "eu.example.com", 300);
    for (name, ip) in want {
        let n = m.get(&ip).copied().unwrap_or(0);
        assert!(
            (60..=140).contains(&n),
            "perfect matches not balanced: {name} got {n} of 300: {m:?}"
        );
    }
    let trace = s.explain("eu.example.com", &client.to_string());
    assert!(
        trace.contains("perfect pass"),
        "/v1/explain does not say the perfect pass decided:\n{trace}"
    );
}

// ---------------------------------------------------------------------------
// 3. IPv6
// ---------------------------------------------------------------------------

#[test]
fn ipv6_locations_choose_aaaa_answers() {
    let net = Net::new("loc_ipv6");
    let lo6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
    let dns = SocketAddr::new(lo6, free_port(lo6));
    let uk: Ipv6Addr = "2001:db8:a::10".parse().unwrap();
    let jp: Ipv6Addr = "2001:db8:b::10".parse().unwrap();
    let za: Ipv6Addr = "2001:db8:c::10".parse().unwrap();
    let mut c = net.conf_preamble();
    // Service locations by IPv6 range; the client ::1 by a single address.
    c.push_str(
        "add location 2001:db8:a:: 2001:db8:a:ffff:ffff:ffff:ffff:ffff \"Europe.UK.London\"\n\
         add location 2001:db8:b:: 2001:db8:b:ffff:ffff:ffff:ffff:ffff \"Asia.JP.Tokyo\"\n\
         add location 2001:db8:c:: 2001:db8:c:ffff:ffff:ffff:ffff:ffff \"Africa.ZMB.Lusaka\"\n",
    );
    c.push_str(&location_line("::1", "Asia.JP.Osaka"));
    // ECS subnets (IPv6) in two places.
    c.push_str(
        "add location 2001:db8:100:: 2001:db8:100:ffff:ffff:ffff:ffff:ffff \"Europe.UK.Leeds\"\n\
         add location 2001:db8:200:: 2001:db8:200:ffff:ffff:ffff:ffff:ffff \"Africa.ZMB.Ndola\"\n",
    );
    for (name, ip) in [("v6-uk", uk), ("v6-jp", jp), ("v6-za", za)] {
        c.push_str(&plain_service(name, ip));
    }
    let names = ["v6-uk", "v6-jp", "v6-za"];
    c.push_str(&vserver(
        "gv-v6",
        "-lbMethod STATICPROXIMITY",
        &names,
        "v6.example.com",
    ));
    c.push_str(&vserver(
        "gv-v6-ecs",
        "-lbMethod STATICPROXIMITY -ECS ENABLED",
        &names,
        "v6ecs.example.com",
    ));
    let s = Server::start_dns_on(SEXTANT, &net, Syntax::Conf, &c, dns);

    let aaaa = |name: &str, ecs: Option<(&str, u8)>| -> (Vec<Ipv6Addr>, Option<u8>) {
        let mut q = build_query(name, RecordType::AAAA, Some(1232));
        if let Some((subnet, prefix)) = ecs {
            q = with_ecs(q, subnet.parse().unwrap(), prefix);
        }
        let r = s.dns.udp_from_ip(lo6, &q);
        assert_eq!(r.metadata.response_code, ResponseCode::NoError, "{r:?}");
        (aaaa_records(&r), ecs_of(&r).map(|e| e.scope_prefix()))
    };

    // From ::1 (Asia.JP.Osaka): the Asian service, every time.
    for _ in 0..SAMPLE {
        let (got, _) = aaaa("v6.example.com", None);
        assert_eq!(
            got,
            vec![jp],
            "AAAA from ::1 (Asia.JP.Osaka) by proximity\n{}",
            s.explain("v6.example.com&type=AAAA", "::1")
        );
    }
    // ECS from an IPv6 subnet decides on the ECS vserver.
    for (subnet, want) in [("2001:db8:100::", uk), ("2001:db8:200::", za)] {
        for _ in 0..8 {
            let (got, scope) = aaaa("v6ecs.example.com", Some((subnet, 48)));
            assert_eq!(
                got,
                vec![want],
                "AAAA with ECS {subnet}/48 from ::1\n{}",
                s.explain(
                    &format!("v6ecs.example.com&type=AAAA&ecs={subnet}/48"),
                    "::1"
                )
            );
            assert_eq!(scope, Some(48), "ECS scope of a location-based answer");
        }
    }
    // ... and not on the vserver without ECS: the LDNS (::1) decides.
    let (got, _) = aaaa("v6.example.com", Some(("2001:db8:100::", 48)));
    assert_eq!(got, vec![jp], "vserver without ECS follows the LDNS ::1");
}

// ---------------------------------------------------------------------------
// 4. ECS-driven location
// ---------------------------------------------------------------------------

#[test]
fn ecs_subnet_decides_the_client_location() {
    let net = Net::new("loc_ecs");
    let ldns_uk = net.client_ip(1);
    let ldns_zmb = net.client_ip(2);
    let zmb_subnet = Ipv4Addr::new(203, 0, 113, 0);
    let uk_subnet = Ipv4Addr::new(198, 18, 7, 0);
    let services = [
        ("asia-hk", "Asia.HK.*.*"),
        ("europe-uk", "Europe.UK.*.*"),
        ("africa-zmb", "Africa.ZMB.*.*"),
    ];
    let mut c = net.conf_preamble();
    c.push_str(&location_line(ldns_uk, "Europe.UK.*.*"));
    c.push_str(&location_line(ldns_zmb, "Africa.ZMB.*.*"));
    // 127.0.0.1: where the TCP query comes from (the kernel's source
    // address for the test's loopback address).
    c.push_str(&location_line(Ipv4Addr::LOCALHOST, "Europe.UK.*.*"));
    c.push_str("add location 203.0.113.0 203.0.113.255 \"Africa.ZMB.*.*\"\n");
    c.push_str("add location 198.18.7.0 198.18.7.255 \"Europe.UK.*.*\"\n");
    for (i, (name, loc)) in services.iter().enumerate() {
        c.push_str(&location_line(net.svc_ip(i as u8), loc));
        c.push_str(&plain_service(name, net.svc_ip(i as u8)));
    }
    let names: Vec<&str> = services.iter().map(|(n, _)| *n).collect();
    c.push_str(&vserver(
        "gv-ecs",
        "-lbMethod STATICPROXIMITY -ECS ENABLED",
        &names,
        "ecs.example.com",
    ));
    c.push_str(&vserver(
        "gv-plain",
        "-lbMethod STATICPROXIMITY",
        &names,
        "plain.example.com",
    ));
    c.push_str(SEED_POLICY);
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);
    let hk = net.svc_ip(0);
    let uk = net.svc_ip(1);

    let ask = |name: &str, ldns: Ipv4Addr, subnet: Ipv4Addr| -> (Vec<Ipv4Addr>, u8) {
        let q = with_ecs(
            build_query(name, RecordType::A, Some(1232)),
            IpAddr::V4(subnet),
            24,
        );
        let r = s.dns.udp_from(Some(ldns), &q);
        let scope = ecs_of(&r)
            .unwrap_or_else(|| panic!("{name}: ECS not echoed: {r:?}"))
            .scope_prefix();
        (a_records(&r), scope)
    };
    let why = |name: &str, ldns: Ipv4Addr, subnet: Ipv4Addr| {
        s.explain(&format!("{name}&ecs={subnet}/24"), &ldns.to_string())
    };

    for _ in 0..8 {
        // ECS in Zambia from an LDNS in the UK: the ZMB policy's answer,
        // scope = source prefix.
        let (got, scope) = ask("ecs.example.com", ldns_uk, zmb_subnet);
        assert_eq!(
            got,
            vec![hk],
            "ECS vserver, ECS in ZMB, LDNS in UK: the policy's Asia.HK\n{}",
            why("ecs.example.com", ldns_uk, zmb_subnet)
        );
        assert_eq!(scope, 24, "ECS scope equals the source prefix");
        // The same query to the vserver without ECS: the LDNS (UK) decides.
        let (got, scope) = ask("plain.example.com", ldns_uk, zmb_subnet);
        assert_eq!(
            got,
            vec![uk],
            "vserver without ECS, LDNS in UK: proximity's Europe.UK\n{}",
            why("plain.example.com", ldns_uk, zmb_subnet)
        );
        assert_eq!(scope, 0, "ECS not used: scope 0");

        // The other way round: ECS in the UK from an LDNS in Zambia.
        let (got, scope) = ask("ecs.example.com", ldns_zmb, uk_subnet);
        assert_eq!(
            got,
            vec![uk],
            "ECS vserver, ECS in UK, LDNS in ZMB: no policy, proximity's Europe.UK\n{}",
            why("ecs.example.com", ldns_zmb, uk_subnet)
        );
        assert_eq!(scope, 24, "ECS scope equals the source prefix");
        let (got, _) = ask("plain.example.com", ldns_zmb, uk_subnet);
        assert_eq!(
            got,
            vec![hk],
            "vserver without ECS, LDNS in ZMB: the policy's Asia.HK\n{}",
            why("plain.example.com", ldns_zmb, uk_subnet)
        );
    }

    // Over TCP (from 127.0.0.1, located in the UK) the same.
    let q = with_ecs(
        build_query("ecs.example.com", RecordType::A, Some(1232)),
        IpAddr::V4(zmb_subnet),
        24,
    );
    let r = s.dns.tcp(&q);
    assert_eq!(a_records(&r), vec![hk], "over TCP, ECS in ZMB: {r:?}");
    assert_eq!(ecs_of(&r).map(|e| e.scope_prefix()), Some(24));
    let q = with_ecs(
        build_query("plain.example.com", RecordType::A, Some(1232)),
        IpAddr::V4(zmb_subnet),
        24,
    );
    let r = s.dns.tcp(&q);
    assert_eq!(
        a_records(&r),
        vec![uk],
        "over TCP without ECS: the LDNS 127.0.0.1 (UK) decides: {r:?}"
    );

    let trace = why("ecs.example.com", ldns_uk, zmb_subnet);
    assert!(
        trace.contains("EDNS Client Subnet") && trace.contains("dnsPolPrefLoc"),
        "/v1/explain with ECS names neither the ECS client nor the policy:\n{trace}"
    );
}

// ---------------------------------------------------------------------------
// 5. Static proximity: longest shared prefix
// ---------------------------------------------------------------------------

#[test]
fn static_proximity_prefers_longest_shared_prefix() {
    let net = Net::new("loc_proximity");
    let client = net.client_ip(0);
    let services = [
        ("uk-leeds", "Europe.UK.Leeds"),
        ("fr-paris", "Europe.FR.Paris"),
        ("jp-tokyo", "Asia.JP.Tokyo"),
    ];
    let mut backends: Vec<Option<Backend>> =
        (0..3).map(|i| Some(Backend::tcp(net.svc_ip(i)))).collect();
    let mut c = net.conf_preamble();
    c.push_str(MONITOR);
    c.push_str(&location_line(client, "Europe.UK.London"));
    for (i, (name, loc)) in services.iter().enumerate() {
        c.push_str(&location_line(net.svc_ip(i as u8), loc));
        c.push_str(&monitored_service(name, backends[i].as_ref().unwrap()));
    }
    let names: Vec<&str> = services.iter().map(|(n, _)| *n).collect();
    // Listed Tokyo first, so "the first service" is never the right answer.
    let order = [names[2], names[1], names[0]];
    c.push_str(&vserver(
        "gv-prox",
        "-lbMethod STATICPROXIMITY",
        &order,
        "prox.example.com",
    ));
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);
    for n in &names {
        s.wait_state(n, State::Up);
    }
    let svc = |i: u8| (services[i as usize].0, net.svc_ip(i));
    let name = "prox.example.com";

    // Europe.UK.London shares two qualifiers with Leeds, one with Paris.
    assert_answers(&s, client, name, &[svc(0)], "all UP");
    let trace = s.explain(name, &client.to_string());
    assert!(
        trace.contains("static proximity"),
        "/v1/explain does not say static proximity decided:\n{trace}"
    );

    // Leeds down: Paris shares the continent.
    backends[0].take().unwrap().kill();
    s.wait_state("uk-leeds", State::Down);
    assert_answers(&s, client, name, &[svc(1)], "Leeds DOWN");

    // Paris down too: nothing shares a qualifier and there are no
    // coordinates: the backup method (round robin) answers the UP one.
    backends[1].take().unwrap().kill();
    s.wait_state("fr-paris", State::Down);
    assert_answers(&s, client, name, &[svc(2)], "Leeds and Paris DOWN");
    let trace = s.explain(name, &client.to_string());
    assert!(
        trace.to_ascii_lowercase().contains("backup"),
        "/v1/explain does not say the backup method decided:\n{trace}"
    );
}

// ---------------------------------------------------------------------------
// 6. Custom entries override a location file
// ---------------------------------------------------------------------------

#[test]
fn custom_location_overrides_location_file() {
    let net = Net::new("loc_custom_over_file");
    let scratch = net.scratch();
    let moved = net.client_ip(0); // in the file: Asia; custom entry: Europe
    let filed = net.client_ip(1); // in the file only: Asia
    let (uk, jp, za) = (net.svc_ip(0), net.svc_ip(1), net.svc_ip(2));
    // The appliance's default (netscaler) format: from, to, six
    // qualifiers, longitude, latitude. The services' locations come only
    // from the file, so the file must have been read for proximity to work.
    let file = scratch.write(
        "locations.csv",
        &format!(
            "# test location file\n\
             {moved},{moved},Asia,JP,Kanto,Tokyo,*,*,139.69,35.69\n\
             {filed},{filed},Asia,JP,Kanto,Tokyo,*,*,139.69,35.69\n\
             {uk},{uk},Europe,UK,England,London,*,*,-0.13,51.51\n\
             {jp},{jp},Asia,JP,Kanto,Tokyo,*,*,139.69,35.69\n\
             {za},{za},Africa,ZMB,Lusaka,Lusaka,*,*,28.28,-15.39\n"
        ),
    );
    let mut c = net.conf_preamble();
    writeln!(c, "add locationFile {file} -format netscaler").unwrap();
    c.push_str(&location_line(moved, "Europe.UK.England.London"));
    for (name, ip) in [("svc-uk", uk), ("svc-jp", jp), ("svc-za", za)] {
        c.push_str(&plain_service(name, ip));
    }
    c.push_str(&vserver(
        "gv-file",
        "-lbMethod STATICPROXIMITY",
        &["svc-za", "svc-jp", "svc-uk"],
        "file.example.com",
    ));
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);
    let name = "file.example.com";
    assert_answers(
        &s,
        moved,
        name,
        &[("svc-uk", uk)],
        "client in the file (Asia) and in a custom entry (Europe)",
    );
    assert_answers(
        &s,
        filed,
        name,
        &[("svc-jp", jp)],
        "client only in the file (Asia)",
    );
    let trace = s.explain(name, &moved.to_string());
    assert!(
        trace.to_ascii_lowercase().contains("europe.uk"),
        "/v1/explain does not show the custom entry's location for {moved}:\n{trace}"
    );
}

// ---------------------------------------------------------------------------
// 7. A policy that does not match leaves the vserver's method in charge
// ---------------------------------------------------------------------------

#[test]
fn unmatched_policy_leaves_vserver_method_in_charge() {
    let net = Net::new("loc_policy_nomatch");
    let zmb = net.client_ip(0);
    let uk = net.client_ip(1);
    let services = [
        ("asia-hk", "Asia.HK.*.*"),
        ("europe-uk", "Europe.UK.*.*"),
        ("africa-sd", "Africa.SD.*.*"),
        ("asia-in", "Asia.IN.*.*"),
    ];
    let mut c = net.conf_preamble();
    c.push_str(&location_line(zmb, "Africa.ZMB.*.*"));
    c.push_str(&location_line(uk, "Europe.UK.*.*"));
    for (i, (name, loc)) in services.iter().enumerate() {
        c.push_str(&location_line(net.svc_ip(i as u8), loc));
        c.push_str(&plain_service(name, net.svc_ip(i as u8)));
    }
    let names: Vec<&str> = services.iter().map(|(n, _)| *n).collect();
    c.push_str(&vserver(
        "gv-prox",
        "-lbMethod STATICPROXIMITY",
        &names,
        "prox.example.com",
    ));
    c.push_str(&vserver(
        "gv-rr",
        "-lbMethod ROUNDROBIN",
        &names,
        "rr.example.com",
    ));
    c.push_str(SEED_POLICY);
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);
    let svc = |i: u8| (services[i as usize].0, net.svc_ip(i));

    // The policy matches the Zambian client: Asia.HK on both vservers.
    assert_answers(
        &s,
        zmb,
        "prox.example.com",
        &[svc(0)],
        "ZMB, STATICPROXIMITY",
    );
    assert_answers(&s, zmb, "rr.example.com", &[svc(0)], "ZMB, ROUNDROBIN");

    // It does not match the UK client: proximity's answer ...
    assert_answers(&s, uk, "prox.example.com", &[svc(1)], "UK, STATICPROXIMITY");
    let trace = s.explain("prox.example.com", &uk.to_string());
    assert!(
        trace.contains("dnsPolPrefLoc") && trace.contains("did not match"),
        "/v1/explain does not say the policy did not match:\n{trace}"
    );
    // ... and round robin's rotation over every service.
    assert_answers(
        &s,
        uk,
        "rr.example.com",
        &[svc(0), svc(1), svc(2), svc(3)],
        "UK, ROUNDROBIN",
    );
}

// ---------------------------------------------------------------------------
// 8. sextant explain on the shipped example; DROP
// ---------------------------------------------------------------------------

#[test]
fn explain_cli_on_the_seed_example() {
    let conf =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/prefloc.conf");
    let conf = conf.to_str().unwrap();
    let out = SEXTANT.run(&[
        "explain",
        "--config",
        conf,
        "--client",
        "192.0.2.53",
        "app.example.com",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "sextant explain failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    for want in ["dnsPolPrefLoc", "perfect pass", "asia-hk", "198.51.100.3"] {
        assert!(
            stdout.contains(want),
            "sextant explain output lacks {want:?}:\n{stdout}"
        );
    }
    let answers: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("answer:"))
        .collect();
    assert_eq!(answers.len(), 1, "one answer expected:\n{stdout}");
    assert!(
        answers[0].contains("198.51.100.3"),
        "the answer is asia-hk's 198.51.100.3:\n{stdout}"
    );
}

#[test]
fn drop_policy_sends_no_response() {
    let net = Net::new("loc_drop");
    let dropped = net.client_ip(3);
    let other = net.client_ip(4);
    let mut c = net.conf_preamble();
    c.push_str(&plain_service("s0", net.svc_ip(0)));
    c.push_str(&vserver(
        "gv-d",
        "-lbMethod ROUNDROBIN",
        &["s0"],
        "d.example.com",
    ));
    writeln!(
        c,
        "add dns action d DROP\n\
         add dns policy pdrop \"CLIENT.IP.SRC.IN_SUBNET({dropped}/32)\" d\n\
         bind dns global pdrop 10"
    )
    .unwrap();
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);

    // The other client is answered (also proves the server is up).
    assert_eq!(
        s.dns.query_a_from(other, "d.example.com"),
        vec![net.svc_ip(0)]
    );
    // The dropped client gets nothing, several times over.
    let q = build_query("d.example.com", RecordType::A, None)
        .to_vec()
        .unwrap();
    for _ in 0..3 {
        let got = s
            .dns
            .raw_udp_from(Some(dropped), &q, Duration::from_secs(2))
            .expect("UDP exchange");
        assert!(
            got.is_none(),
            "DROP policy: {dropped} got a response: {:?}",
            got.map(|b| Message::from_vec(&b))
        );
    }
    // ... while the other client still is answered.
    for _ in 0..5 {
        assert_eq!(
            s.dns.query_a_from(other, "d.example.com"),
            vec![net.svc_ip(0)]
        );
    }
}

// ---------------------------------------------------------------------------
// The same in native TOML: [[location]], [[location_file]], [[dns_action]],
// [[dns_policy]]; coordinates break a proximity tie
// ---------------------------------------------------------------------------

#[test]
fn toml_locations_policy_and_coordinates() {
    let net = Net::new("loc_toml");
    let scratch = net.scratch();
    let zmb = net.client_ip(0);
    let madrid = net.client_ip(1);
    let hk_backend = Backend::tcp(net.svc_ip(0));
    let (uk, paris, berlin) = (net.svc_ip(1), net.svc_ip(2), net.svc_ip(3));
    // Paris and Berlin (with coordinates) come from a location file.
    let file = scratch.write(
        "geo.csv",
        &format!(
            "#NSGEO1.0\n\
             \"{paris}\",\"{paris}\",\"Europe\",\"FR\",\"IDF\",\"Paris\",\"\",\"\",2.3522,48.8566\n\
             {berlin},{berlin},Europe,DE,BE,Berlin,,,13.4050,52.5200\n"
        ),
    );
    let mut c = net.toml_preamble();
    write!(
        c,
        r#"
[[monitor]]
name = "mon_tcp"
type = "tcp"
interval = "200ms"
response_timeout = "100ms"
retries = 2
success_retries = 1

[[location]]
from = "{zmb}"
to = "{zmb}"
location = "Africa.ZMB.*.*"

[[location]]
from = "{madrid}"
to = "{madrid}"
location = "Europe.ES.MD.Madrid"
longitude = -3.7038
latitude = 40.4168

[[location]]
from = "{hk}"
to = "{hk}"
location = "Asia.hk"

[[location]]
from = "{uk}"
to = "{uk}"
location = "Europe.UK.ENG.London"
longitude = -0.1278
latitude = 51.5074

[[location_file]]
path = "{file}"

[[service]]
name = "asia-hk"
ip = "{hk}"
port = {hk_port}
protocol = "TCP"
site = "site1"
monitors = ["mon_tcp"]

[[service]]
name = "europe-uk"
ip = "{uk}"
port = 80
protocol = "HTTP"
site = "site1"

[[service]]
name = "europe-fr"
ip = "{paris}"
port = 80
protocol = "HTTP"
site = "site1"

[[service]]
name = "europe-de"
ip = "{berlin}"
port = 80
protocol = "HTTP"
site = "site1"

[[vserver]]
name = "gv-app"
protocol = "HTTP"
lb_method = "STATICPROXIMITY"
services = [{{ name = "europe-de" }}, {{ name = "europe-uk" }}, {{ name = "asia-hk" }}, {{ name = "europe-fr" }}]
domains = [{{ name = "app.example.com", ttl = 5 }}]

[[dns_action]]
name = "prefLoc11"
type = "GslbPrefLoc"
preferred_locations = ["Asia.HK", "Europe.UK"]

[[dns_policy]]
name = "dnsPolPrefLoc"
rule = 'CLIENT.IP.SRC.MATCHES_LOCATION("*.ZMB.*.*")'
action = "prefLoc11"
bind = {{ priority = 100, goto = "END" }}
"#,
        hk = hk_backend.ip(),
        hk_port = hk_backend.port(),
    )
    .unwrap();
    let s = Server::start(SEXTANT, &net, Syntax::Toml, &c);
    s.wait_state("asia-hk", State::Up);
    let name = "app.example.com";

    // The seed's policy from TOML: Asia.HK, then Europe.UK.
    assert_answers(
        &s,
        zmb,
        name,
        &[("asia-hk", hk_backend.ip())],
        "TOML, all UP",
    );
    // Madrid shares only the continent with London, Paris and Berlin;
    // the coordinates decide: Paris is nearest.
    assert_answers(&s, madrid, name, &[("europe-fr", paris)], "TOML, Madrid");
    hk_backend.kill();
    s.wait_state("asia-hk", State::Down);
    assert_answers(&s, zmb, name, &[("europe-uk", uk)], "TOML, Asia.HK DOWN");
}
