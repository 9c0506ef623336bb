//! Selection methods end to end: weighted round robin, source-IP
//! persistence, SOURCEIPHASH (with and without ECS), MIR, and methods that
//! answer by their backup method (visible in /v1/explain).
//!
//! The server may run several UDP workers, each with its own rotation, so
//! proportions are asserted approximately over many queries.

use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr};

/// `n` unmonitored services s0..s{n-1} on svc_ip(0..n), bound to vserver
/// `vs` with `vs_opts`, weights from `weights` (if given), domain `domain`.
fn vserver(net: &Net, vs: &str, vs_opts: &str, n: u8, weights: &[u32], domain: &str) -> String {
    let mut c = String::new();
    for i in 0..n {
        writeln!(
            c,
            "add gslb service {vs}_s{i} {} HTTP 80 -siteName site1",
            net.svc_ip(i)
        )
        .unwrap();
    }
    writeln!(c, "add gslb vserver {vs} HTTP {vs_opts}").unwrap();
    for i in 0..n {
        match weights.get(i as usize) {
            Some(w) => writeln!(
                c,
                "bind gslb vserver {vs} -serviceName {vs}_s{i} -weight {w}"
            ),
            None => writeln!(c, "bind gslb vserver {vs} -serviceName {vs}_s{i}"),
        }
        .unwrap();
    }
    writeln!(c, "bind gslb vserver {vs} -domainName {domain} -TTL 5").unwrap();
    c
}

fn counts(ips: &[Ipv4Addr]) -> BTreeMap<Ipv4Addr, usize> {
    let mut m = BTreeMap::new();
    for ip in ips {
        *m.entry(*ip).or_insert(0) += 1;
    }
    m
}

fn within(count: usize, expected: f64, tolerance: f64) -> bool {
    let c = count as f64;
    c >= expected * (1.0 - tolerance) && c <= expected * (1.0 + tolerance)
}

#[test]
fn weighted_round_robin_honours_weights() {
    let net = Net::new("sel_weights");
    let mut c = net.conf_preamble();
    c.push_str(&vserver(
        &net,
        "vs_w",
        "-lbMethod ROUNDROBIN",
        2,
        &[3, 1],
        "w.example.com",
    ));
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);
    let ips = s.dns.sample_a("w.example.com", 400);
    assert_eq!(ips.len(), 400, "one address per answer");
    let m = counts(&ips);
    let heavy = m.get(&net.svc_ip(0)).copied().unwrap_or(0);
    let light = m.get(&net.svc_ip(1)).copied().unwrap_or(0);
    assert_eq!(heavy + light, 400, "only bound services answered: {m:?}");
    assert!(
        within(heavy, 300.0, 0.15) && within(light, 100.0, 0.45),
        "3:1 weights over 400 queries gave {heavy}:{light}"
    );
}

#[test]
fn round_robin_spreads_evenly() {
    let net = Net::new("sel_rr");
    let mut c = net.conf_preamble();
    c.push_str(&vserver(
        &net,
        "vs_rr",
        "-lbMethod ROUNDROBIN",
        3,
        &[],
        "rr.example.com",
    ));
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);
    let m = counts(&s.dns.sample_a("rr.example.com", 300));
    assert_eq!(m.len(), 3, "every UP service appears: {m:?}");
    for i in 0..3 {
        let n = m.get(&net.svc_ip(i)).copied().unwrap_or(0);
        assert!(within(n, 100.0, 0.15), "uneven round robin: {m:?}");
    }
}

#[test]
fn source_ip_persistence_keeps_client_on_its_service() {
    let net = Net::new("sel_persist");
    let mut c = net.conf_preamble();
    c.push_str(&vserver(
        &net,
        "vs_p",
        "-lbMethod ROUNDROBIN -persistenceType SOURCEIP -timeout 2",
        4,
        &[],
        "p.example.com",
    ));
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);
    let mut firsts = BTreeSet::new();
    for k in 0..8 {
        let client = net.client_ip(k);
        let first = s.dns.query_a_from(client, "p.example.com");
        assert_eq!(first.len(), 1);
        firsts.insert(first[0]);
        for _ in 0..10 {
            assert_eq!(
                s.dns.query_a_from(client, "p.example.com"),
                first,
                "client {client} moved off its persistent service"
            );
        }
    }
    assert!(
        firsts.len() > 1,
        "8 clients all on one service under round robin: {firsts:?}"
    );
}

#[test]
fn persistence_moves_client_when_its_service_goes_down() {
    let net = Net::new("sel_persist_down");
    let backends: Vec<Backend> = (0..3).map(|i| Backend::tcp(net.svc_ip(i))).collect();
    let mut c = net.conf_preamble();
    c.push_str(
        "add lb monitor mon_tcp TCP -interval 200 MSEC -resptimeout 100 MSEC -retries 2 -successRetries 1\n",
    );
    for (i, b) in backends.iter().enumerate() {
        writeln!(
            c,
            "add gslb service s{i} {} TCP {} -siteName site1\nbind gslb service s{i} -monitorName mon_tcp",
            b.ip(),
            b.port()
        )
        .unwrap();
    }
    c.push_str(
        "add gslb vserver vs_p TCP -lbMethod ROUNDROBIN -persistenceType SOURCEIP -timeout 5\n",
    );
    for i in 0..3 {
        writeln!(c, "bind gslb vserver vs_p -serviceName s{i}").unwrap();
    }
    c.push_str("bind gslb vserver vs_p -domainName p.example.com -TTL 5\n");
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);
    for i in 0..3 {
        s.wait_state(&format!("s{i}"), State::Up);
    }
    let client = net.client_ip(3);
    let first = s.dns.query_a_from(client, "p.example.com")[0];
    let idx = backends
        .iter()
        .position(|b| b.ip() == first)
        .expect("known");
    let mut backends = backends;
    drop(backends.remove(idx));
    s.wait_state(&format!("s{idx}"), State::Down);
    let mut now = Vec::new();
    eventually(EVENTUALLY, "client leaves its DOWN service", || {
        now = s.dns.query_a_from(client, "p.example.com");
        now.len() == 1 && now[0] != first
    });
    for _ in 0..10 {
        assert_eq!(
            s.dns.query_a_from(client, "p.example.com"),
            now,
            "client persists on its new service"
        );
    }
}

#[test]
fn source_ip_hash_is_stable_per_client() {
    let net = Net::new("sel_hash");
    let mut c = net.conf_preamble();
    c.push_str(&vserver(
        &net,
        "vs_h",
        "-lbMethod SOURCEIPHASH",
        4,
        &[],
        "h.example.com",
    ));
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);
    let mut distinct = BTreeSet::new();
    for k in 0..30 {
        let client = net.client_ip(k);
        let first = s.dns.query_a_from(client, "h.example.com");
        assert_eq!(first.len(), 1);
        distinct.insert(first[0]);
        for _ in 0..4 {
            assert_eq!(
                s.dns.query_a_from(client, "h.example.com"),
                first,
                "SOURCEIPHASH not stable for {client}"
            );
        }
    }
    assert!(
        distinct.len() >= 2,
        "30 clients hashed to one service: {distinct:?}"
    );
}

#[test]
fn source_ip_hash_uses_ecs_address_when_enabled() {
    let net = Net::new("sel_hash_ecs");
    let mut c = net.conf_preamble();
    c.push_str(&vserver(
        &net,
        "vs_e",
        "-lbMethod SOURCEIPHASH -ECS ENABLED",
        4,
        &[],
        "e.example.com",
    ));
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);
    let ask = |src: Ipv4Addr, ecs: Ipv4Addr| -> Vec<Ipv4Addr> {
        let q = with_ecs(
            build_query("e.example.com", RecordType::A, Some(1232)),
            IpAddr::V4(ecs),
            24,
        );
        a_records(&s.dns.udp_from(Some(src), &q))
    };
    let mut distinct = BTreeSet::new();
    for k in 0..30u8 {
        // Subnets that differ in every octet, so no mask folds them.
        let subnet = Ipv4Addr::new(11 + k * 7, 3 + k * 5, 17 + k * 3, 0);
        let from_a = ask(net.client_ip(0), subnet);
        assert_eq!(from_a.len(), 1);
        distinct.insert(from_a[0]);
        // The same ECS subnet from another LDNS: same service.
        assert_eq!(
            ask(net.client_ip(1 + k % 10), subnet),
            from_a,
            "ECS {subnet}/24 hashed differently from another resolver"
        );
    }
    assert!(
        distinct.len() >= 2,
        "30 ECS subnets from one resolver all gave one service: {distinct:?} (is the LDNS address hashed instead of ECS?)"
    );
}

#[test]
fn mir_answers_every_up_service() {
    let net = Net::new("sel_mir");
    let live: Vec<Backend> = (0..3).map(|i| Backend::tcp(net.svc_ip(i))).collect();
    let dead_port = Net::closed_port(net.svc_ip(3));
    let mut c = net.conf_preamble();
    c.push_str(
        "add lb monitor mon_tcp TCP -interval 200 MSEC -resptimeout 100 MSEC -retries 2 -successRetries 1\n",
    );
    for (i, b) in live.iter().enumerate() {
        writeln!(
            c,
            "add gslb service m{i} {} TCP {} -siteName site1\nbind gslb service m{i} -monitorName mon_tcp",
            b.ip(),
            b.port()
        )
        .unwrap();
    }
    writeln!(
        c,
        "add gslb service m3 {} TCP {dead_port} -siteName site1\nbind gslb service m3 -monitorName mon_tcp",
        net.svc_ip(3)
    )
    .unwrap();
    c.push_str("add gslb vserver vs_mir TCP -lbMethod ROUNDROBIN -MIR ENABLED\n");
    for i in 0..4 {
        writeln!(c, "bind gslb vserver vs_mir -serviceName m{i}").unwrap();
    }
    c.push_str("bind gslb vserver vs_mir -domainName mir.example.com -TTL 5\n");
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);
    s.wait_state("m3", State::Down);
    let want: BTreeSet<Ipv4Addr> = live.iter().map(|b| b.ip()).collect();
    let mut last = BTreeSet::new();
    let ok = wait_until(EVENTUALLY, || {
        last = s.dns.query_a("mir.example.com").into_iter().collect();
        last == want
    });
    assert!(
        ok,
        "MIR: want exactly the UP services {want:?}, got {last:?}"
    );
    for _ in 0..10 {
        let got = s.dns.query_a("mir.example.com");
        assert_eq!(got.len(), 3, "no duplicates: {got:?}");
        assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), want);
    }
}

#[test]
fn least_connection_falls_back_to_backup_method_visibly() {
    let net = Net::new("sel_leastconn");
    let mut c = net.conf_preamble();
    c.push_str(&vserver(
        &net,
        "vs_lc",
        "-lbMethod LEASTCONNECTION -backupLBMethod ROUNDROBIN",
        2,
        &[],
        "lc.example.com",
    ));
    c.push_str(&vserver(
        &net,
        "vs_lrt",
        "-lbMethod LEASTRESPONSETIME",
        2,
        &[],
        "lrt.example.com",
    ));
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);
    for name in ["lc.example.com", "lrt.example.com"] {
        let m = counts(&s.dns.sample_a(name, 40));
        assert_eq!(
            m.keys().copied().collect::<Vec<_>>(),
            vec![net.svc_ip(0), net.svc_ip(1)],
            "{name}: the backup method (round robin) answers every UP service: {m:?}"
        );
        let trace = s.explain(name, "127.0.0.1");
        assert!(
            trace.to_ascii_lowercase().contains("backup"),
            "{name}: /v1/explain trace does not say the backup method answered:\n{trace}"
        );
    }
}

#[test]
fn every_documented_method_is_accepted_and_answers() {
    let net = Net::new("sel_methods");
    let mut c = net.conf_preamble();
    let methods = [
        "ROUNDROBIN",
        "LEASTCONNECTION",
        "LEASTRESPONSETIME",
        "LEASTBANDWIDTH",
        "LEASTPACKETS",
        "SOURCEIPHASH",
        "CUSTOMLOAD",
        "RTT",
        "STATICPROXIMITY",
    ];
    for (i, m) in methods.iter().enumerate() {
        writeln!(
            c,
            "add gslb service m{i} {} HTTP 80 -siteName site1\n\
             add gslb vserver vs{i} HTTP -lbMethod {m}\n\
             bind gslb vserver vs{i} -serviceName m{i}\n\
             bind gslb vserver vs{i} -domainName m{i}.example.com -TTL 5",
            net.svc_ip(i as u8)
        )
        .unwrap();
    }
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);
    for (i, m) in methods.iter().enumerate() {
        assert_eq!(
            s.dns.query_a(&format!("m{i}.example.com")),
            vec![net.svc_ip(i as u8)],
            "method {m}"
        );
    }
}

#[test]
fn explain_trace_names_the_vserver() {
    let net = Net::new("sel_explain");
    let mut c = net.conf_preamble();
    c.push_str(&vserver(
        &net,
        "vs_x",
        "-lbMethod ROUNDROBIN",
        2,
        &[],
        "x.example.com",
    ));
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &c);
    // A typed read: the trace is an array of strings.
    let v = s.explain_full("x.example.com", "127.0.0.1");
    assert!(!v.trace.is_empty(), "empty trace: {v:?}");
    let text = s.explain("x.example.com", "127.0.0.1");
    assert!(
        text.contains("vs_x"),
        "trace does not name the vserver:\n{text}"
    );
    // `format=text` (the dashboard's) is what `sextant explain --server` prints.
    let api = net.api_addr();
    let (code, page) = http_get(
        api,
        "/v1/explain?name=x.example.com&client=127.0.0.1&type=A&format=text",
    )
    .expect("explain as text");
    assert_eq!(code, 200, "{page}");
    let out = SEXTANT.run(&[
        "explain",
        "--server",
        &api.to_string(),
        "--client",
        "127.0.0.1",
        "x.example.com",
        "A",
    ]);
    assert!(out.status.success(), "{}", output_text(&out));
    assert_eq!(page, String::from_utf8_lossy(&out.stdout));
    let (code, body) = http_get(
        api,
        "/v1/explain?name=x.example.com&client=127.0.0.1&format=xml",
    )
    .expect("explain as xml");
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("use json (the default) or text"), "{body}");
}

/// Weights, persistence, ECS hashing and MIR from a native TOML file.
#[test]
fn toml_weights_persistence_hash_and_mir() {
    let net = Net::new("sel_toml");
    let mut c = net.toml_preamble();
    for i in 0..4u8 {
        write!(
            c,
            "\n[[service]]\nname = \"t{i}\"\nip = \"{}\"\nport = 80\nprotocol = \"HTTP\"\nsite = \"site1\"\n",
            net.svc_ip(i)
        )
        .unwrap();
    }
    c.push_str(
        r#"
[[vserver]]
name = "vs_w"
protocol = "HTTP"
lb_method = "ROUNDROBIN"
services = [{ name = "t0", weight = 3 }, { name = "t1", weight = 1 }]
domains = [{ name = "w.example.com", ttl = 5 }]

[[vserver]]
name = "vs_p"
protocol = "HTTP"
lb_method = "ROUNDROBIN"
persistence = { type = "SOURCEIP", timeout = "2m" }
services = [{ name = "t0" }, { name = "t1" }, { name = "t2" }, { name = "t3" }]
domains = [{ name = "p.example.com" }]

[[vserver]]
name = "vs_h"
protocol = "HTTP"
lb_method = "SOURCEIPHASH"
ecs = true
services = [{ name = "t0" }, { name = "t1" }, { name = "t2" }, { name = "t3" }]
domains = [{ name = "h.example.com" }]

[[vserver]]
name = "vs_mir"
protocol = "HTTP"
lb_method = "ROUNDROBIN"
multi_ip_response = true
services = [{ name = "t0" }, { name = "t1" }, { name = "t2" }, { name = "t3" }]
domains = [{ name = "mir.example.com" }]
"#,
    );
    let s = Server::start(SEXTANT, &net, Syntax::Toml, &c);

    let m = counts(&s.dns.sample_a("w.example.com", 400));
    let heavy = m.get(&net.svc_ip(0)).copied().unwrap_or(0);
    assert_eq!(m.values().sum::<usize>(), 400, "{m:?}");
    assert!(within(heavy, 300.0, 0.15), "3:1 from TOML gave {m:?}");

    let mut firsts = BTreeSet::new();
    for k in 0..6 {
        let first = s.dns.query_a_from(net.client_ip(k), "p.example.com");
        firsts.insert(first[0]);
        for _ in 0..5 {
            assert_eq!(s.dns.query_a_from(net.client_ip(k), "p.example.com"), first);
        }
    }
    assert!(firsts.len() > 1, "{firsts:?}");

    let subnet = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 0));
    let q = with_ecs(
        build_query("h.example.com", RecordType::A, Some(1232)),
        subnet,
        24,
    );
    let first = a_records(&s.dns.udp_from(Some(net.client_ip(0)), &q));
    for k in 1..6 {
        let r = s.dns.udp_from(Some(net.client_ip(k)), &q);
        assert_eq!(a_records(&r), first, "ECS hash independent of the LDNS");
        let ecs = ecs_of(&r).expect("ECS echoed");
        assert_eq!(ecs.scope_prefix(), 24, "hash on ECS: scope = source prefix");
    }

    let mut all: Vec<Ipv4Addr> = s.dns.query_a("mir.example.com");
    all.sort();
    assert_eq!(all, (0..4).map(|i| net.svc_ip(i)).collect::<Vec<_>>());
}
