//! The dynamic RTT method end to end (seed 003, SPEC §5): real `sextant
//! serve` processes, one per parent site, each on its own loopback address,
//! probing a client's local DNS resolver (the LDNS: the *source address* of
//! the DNS query) and exchanging the round-trip times over metric exchange.
//!
//! The LDNS is an [`LdnsEmulator`]: a DNS responder over UDP and TCP that
//! holds its answers back by a delay chosen per source address. Every site
//! probes from its own IP, so the emulator makes each site's "distance" to
//! the LDNS. The test's DNS queries are sent *from the emulator's address*,
//! so the query's source is the LDNS the sites probe. On loopback a PING to
//! any 127.x answers at once, so the tests in which the DNS probe must give
//! the RTT use `-ldnsProbeOrder DNS PING TCP`; the probe-order test blocks
//! PING with iptables in a network namespace of its own instead.
//!
//! Nothing asserts wall-clock time: every wait is "eventually, within a
//! generous deadline". RTTs are checked only against lower bounds the
//! emulator guarantees (an answer held back 200 ms takes at least 200 ms).
//! Processes are ended by pid (the harness does it), namespaces deleted on
//! drop.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

/// The RTT domain.
const NAME: &str = "www.example.com";
/// Deadline for RTTs to be measured, exchanged and used.
const CONVERGE: Duration = Duration::from_secs(30);
/// The LDNS probe monitors: a cycle per second, 500 ms to answer.
const PROBE_TIMING: &str = "-interval 1 SEC -resptimeout 500 MSEC";
/// The DNS probe first: on loopback PING answers at once.
const DNS_FIRST: &str = "set gslb parameter -ldnsProbeOrder DNS PING TCP\n";
/// The wording of the fallback (crates/sextant-core/src/trace.rs).
const NO_RTT: &str = "no round-trip time to this LDNS is known yet";

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The dashboard of `at` (its RTT view, in headless chromium) shows the
/// LDNS group `group` with each site's RTT, as `/v1/ldns` has them: fra
/// about 40 ms, nyc about 120, sgp about 200.
fn dashboard_shows_the_rtts(at: &SiteServer, group: &str) {
    let folder = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("screenshots")
        .join("dashboard")
        .join("rtt");
    let Some(mut browser) = sextant_test_support::browser::Browser::launch(&folder) else {
        return;
    };
    browser.open(&format!("http://{}/ui/#rtt", at.api_addr));
    for (site, least) in [("fra", 40.0), ("nyc", 120.0), ("sgp", 200.0)] {
        let cell = format!("tr[data-ldns=\"{group}\"] td[data-site=\"{site}\"]");
        let text = browser.wait_for_text(&cell, EVENTUALLY, "an RTT in ms", |t| t.contains(" ms"));
        let shown: f64 = text
            .split(" ms")
            .next()
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("{site}'s cell: {text:?}"));
        assert!(
            (least..least + 60.0).contains(&shown),
            "{site}'s RTT in the page is {shown} ms, want about {least}"
        );
    }
    browser.screenshot("rtt");
}

// ---------------------------------------------------------------------------
// Configuration text
// ---------------------------------------------------------------------------

type Layout = Sites;

/// The RTT tests' files on top of the common preamble.
trait RttConf {
    fn conf(
        &self,
        me: usize,
        ldns_port: u16,
        params: &str,
        site_opts: &str,
        services: &str,
        vs_opts: &str,
    ) -> String;
    fn unmonitored_services(&self) -> String;
}

impl RttConf for Sites {
    /// Site `me`'s file, as an operator writes it: its ADNS service, every
    /// site in the same order (itself `-siteType LOCAL`, each with
    /// `site_opts`), the zone, the LDNS monitors on the emulator's port,
    /// `params` (more `set gslb parameter` lines), then `services` and an
    /// RTT vserver over every site's service (`vs_opts` on its add line).
    fn conf(
        &self,
        me: usize,
        ldns_port: u16,
        params: &str,
        site_opts: &str,
        services: &str,
        vs_opts: &str,
    ) -> String {
        let mut c = self.preamble(me, "rtt", site_opts);
        c += &format!(
            "set lb monitor ldns-ping LDNS-PING {PROBE_TIMING}\n\
             set lb monitor ldns-dns LDNS-DNS -destPort {ldns_port} {PROBE_TIMING}\n\
             set lb monitor ldns-tcp LDNS-TCP -destPort {ldns_port} {PROBE_TIMING}\n"
        );
        c += params;
        c += services;
        c += &format!("add gslb vserver vs HTTP -lbMethod RTT{vs_opts}\n");
        for name in &self.names {
            c += &format!("bind gslb vserver vs -serviceName web-{name}\n");
        }
        c += &format!("bind gslb vserver vs -domainName {NAME} -TTL 5\n");
        c
    }

    /// One service per site, no monitor: its state comes from its own site
    /// over metric exchange (UP while nothing says otherwise).
    fn unmonitored_services(&self) -> String {
        self.names
            .iter()
            .zip(&self.svc)
            .map(|(name, ip)| {
                format!("add gslb service web-{name} {ip} HTTP 80 -siteName {name}\n")
            })
            .collect()
    }
}

/// Starts every site of `layout` with `conf(k)` as its file.
fn start_sites(
    scratch: &Scratch,
    layout: &Layout,
    conf: impl Fn(usize) -> String,
) -> Vec<SiteServer> {
    layout.start(SEXTANT, scratch, conf)
}

// ---------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------

/// `n` queries from `ldns` to `at` in a row are all answered exactly
/// `[want]` (the service at site `want_site`).
fn steadily(
    at: &SiteServer,
    ldns: Ipv4Addr,
    layout: &Layout,
    want_site: &str,
    n: usize,
) -> Result<(), String> {
    let want = layout.svc_of(want_site);
    for i in 0..n {
        let got = at.try_query_a_from(ldns, NAME)?;
        if got != [want] {
            let sites: Vec<&str> = got.iter().map(|ip| layout.site_of(*ip)).collect();
            return Err(format!(
                "at {}: query {} of {n} from the LDNS {ldns} answered {got:?} (sites {sites:?}), \
                 want [{want}] (web-{want_site})",
                at.name,
                i + 1
            ));
        }
    }
    Ok(())
}

/// Every address `at` answers over `n` queries from `ldns`.
fn sample(at: &SiteServer, ldns: Ipv4Addr, n: usize) -> Result<Vec<Ipv4Addr>, String> {
    let mut all = Vec::new();
    for _ in 0..n {
        all.extend(at.try_query_a_from(ldns, NAME)?);
    }
    Ok(all)
}

/// The `/v1/ldns` entry of `ldns` at `at`.
fn ldns_entry(at: &SiteServer, ldns: Ipv4Addr) -> Result<LdnsEntry, String> {
    let table = at.try_ldns()?;
    find_ldns(&table, &ldns.to_string())
        .cloned()
        .ok_or_else(|| format!("at {}: /v1/ldns has no entry {ldns}: {table:?}", at.name))
}

/// Site `site`'s RTT to `ldns` as `at` shows it, in ms (`None`: unknown).
fn rtt_at(at: &SiteServer, ldns: Ipv4Addr, site: &str) -> Result<Option<f64>, String> {
    let e = ldns_entry(at, ldns)?;
    let cell = ldns_site(&e, site).ok_or_else(|| {
        format!(
            "at {}: the entry of {ldns} has no site {site}: {e:?}",
            at.name
        )
    })?;
    Ok(cell.rtt_ms)
}

/// `at` shows an RTT to `ldns` of at least `min_ms` for every `(site,
/// min_ms)` (the emulator holds each site's answers back that long).
fn rtts_at_least(at: &SiteServer, ldns: Ipv4Addr, want: &[(&str, u64)]) -> Result<(), String> {
    let e = ldns_entry(at, ldns)?;
    for (site, min) in want {
        let cell = ldns_site(&e, site).ok_or_else(|| {
            format!(
                "at {}: the entry of {ldns} has no site {site}: {e:?}",
                at.name
            )
        })?;
        match cell.rtt_ms {
            Some(r) if r >= *min as f64 => {}
            other => {
                return Err(format!(
                    "at {}: {site}'s RTT to {ldns} is {other:?} ms, want at least {min} ms: {e:?}",
                    at.name
                ));
            }
        }
    }
    Ok(())
}

/// `at` shows, for every `(site, hops, ttl)`, those path figures towards
/// `ldns` (no loss, and a MOS): the reply TTL that site's DNS probes saw,
/// measured there and exchanged.
fn paths_at(at: &SiteServer, ldns: Ipv4Addr, want: &[(&str, u8, u8)]) -> Result<(), String> {
    let e = ldns_entry(at, ldns)?;
    for (site, hops, ttl) in want {
        let cell = ldns_site(&e, site).ok_or_else(|| {
            format!(
                "at {}: the entry of {ldns} has no site {site}: {e:?}",
                at.name
            )
        })?;
        let got = (cell.hops, cell.ttl, cell.packet_loss_percent);
        if got != (Some(*hops), Some(*ttl), Some(0.0))
            || !cell.mos.is_some_and(|m| (1.0..=4.5).contains(&m))
        {
            return Err(format!(
                "at {}: {site}'s path to {ldns} is {got:?} (hops, ttl, loss %) with MOS {:?}, \
                 want {hops} hops, TTL {ttl}, no loss: {e:?}",
                at.name, cell.mos
            ));
        }
    }
    Ok(())
}

/// The explanation at `at` of the answer to a query from `ldns`.
fn explain(at: &SiteServer, ldns: Ipv4Addr) -> Result<Explain, String> {
    at.try_api(&explain_path(NAME, &ldns.to_string()))
}

/// The explanation must contain every one of `lines` (substrings of its
/// reason or of one trace line each) and none of `not`.
fn explains(at: &SiteServer, ldns: Ipv4Addr, lines: &[&str], not: &[&str]) -> Result<(), String> {
    let e = explain(at, ldns)?;
    let text = format!("reason: {}\n{}", e.reason, e.trace.join("\n"));
    for want in lines {
        if !text.contains(want) {
            return Err(format!(
                "at {}: the explanation of a query from {ldns} does not say {want:?}:\n{text}",
                at.name
            ));
        }
    }
    for bad in not {
        if text.contains(bad) {
            return Err(format!(
                "at {}: the explanation of a query from {ldns} says {bad:?}:\n{text}",
                at.name
            ));
        }
    }
    Ok(())
}

/// This site's RTT message counters: (messages, entries) sent.
fn rtt_sent(at: &SiteServer) -> Result<(u64, u64), String> {
    let t = at.try_ldns()?;
    Ok((t.rtt_messages_sent, t.rtt_entries_sent))
}

/// The emulator's LDNS, with a delay for each site's probes.
fn emulator(ldns: Ipv4Addr, layout: &Layout, delays: &[(&str, u64)]) -> LdnsEmulator {
    let emu = LdnsEmulator::start(SocketAddr::new(IpAddr::V4(ldns), 0));
    set_delays(&emu, layout, delays);
    emu
}

fn set_delays(emu: &LdnsEmulator, layout: &Layout, delays: &[(&str, u64)]) {
    for (site, d) in delays {
        emu.set_delay(layout.ip(site), ms(*d));
    }
}

// ---------------------------------------------------------------------------
// 1. The smallest RTT wins, and the answer follows a change
// ---------------------------------------------------------------------------

/// Three parents; the emulator is 40 ms from fra, 120 ms from nyc and
/// 200 ms from sgp. Queries from the LDNS go to nyc only: every parent
/// probes the LDNS (the others because nyc says its clients use it), the
/// RTTs are exchanged, and every parent answers fra's service. Then fra
/// moves to 250 ms and sgp to 10 ms: every parent answers sgp's.
#[test]
fn the_answer_is_the_site_with_the_smallest_rtt_and_follows_a_change() {
    let net = Net::for_sites("rtt_best", 3);
    let scratch = net.scratch();
    let layout = Layout::host(&net, &["fra", "nyc", "sgp"]);
    let ldns = net.client_ip(0);
    let emu = emulator(ldns, &layout, &[("fra", 40), ("nyc", 120), ("sgp", 200)]);
    // The resolver's answers reach each site across a different number of
    // routers (the path figures of datacenter mode's Client Based).
    for (site, ttl) in [("fra", 60), ("nyc", 57), ("sgp", 50)] {
        emu.set_ttl(layout.ip(site), Some(ttl));
    }
    let services = layout.unmonitored_services();
    let sites = start_sites(&scratch, &layout, |k| {
        layout.conf(k, emu.addr().port(), DNS_FIRST, "", &services, "")
    });
    let [fra, nyc, sgp] = &sites[..] else {
        unreachable!()
    };
    wait_mesh_up(&sites);

    eventually_ok(CONVERGE, "nyc answers fra's service by RTT", || {
        steadily(nyc, ldns, &layout, "fra", 5)
    });
    // Every site probed the LDNS from its own address, and nyc holds all
    // three RTTs (its own measured by the DNS probe).
    for s in &sites {
        assert!(
            emu.queries_from(IpAddr::V4(s.ip)) > 0,
            "the LDNS got no probe from {} ({})",
            s.name,
            s.ip
        );
    }
    eventually_ok(CONVERGE, "nyc holds every site's RTT", || {
        rtts_at_least(nyc, ldns, &[("fra", 40), ("nyc", 120), ("sgp", 200)])
    });
    // The reply TTLs of the DNS probes became path figures, nyc's own and
    // the others' through the exchange.
    eventually_ok(CONVERGE, "nyc holds every site's path figures", || {
        paths_at(
            nyc,
            ldns,
            &[("fra", 4, 60), ("nyc", 7, 57), ("sgp", 14, 50)],
        )
    });
    let e = ldns_entry(nyc, ldns).unwrap_or_else(|e| panic!("{e}"));
    let own = ldns_site(&e, "nyc").expect("nyc's own cell");
    dashboard_shows_the_rtts(nyc, &format!("{}/{}", e.ldns, e.prefix_len));
    assert_eq!(
        own.probe.as_deref(),
        Some("ldns-dns"),
        "nyc's own RTT should come from the DNS probe (-ldnsProbeOrder DNS PING TCP): {e:?}"
    );
    eventually_ok(EVENTUALLY, "nyc explains the RTT choice", || {
        explains(
            nyc,
            ldns,
            &[
                "chosen by RTT",
                "at site fra: RTT to the LDNS",
                "at site nyc: RTT to the LDNS",
                "at site sgp: RTT to the LDNS",
                "RTT: the smallest is",
            ],
            &[NO_RTT],
        )
    });
    // `sextant explain --server` shows the same comparison from the command
    // line, live.
    let out = SEXTANT.run(&[
        "explain",
        "--server",
        &nyc.api_addr.to_string(),
        "--client",
        &ldns.to_string(),
        NAME,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "live, from the server at",
        "reason:  chosen by RTT",
        "at site fra: RTT to the LDNS",
        "RTT: the smallest is",
    ] {
        assert!(
            stdout.contains(want),
            "`sextant explain --server` lacks {want:?}:\n{stdout}"
        );
    }
    // The LDNS is the query's source, never the EDNS Client Subnet: a query
    // from the same LDNS carrying another client subnet is answered by the
    // same RTTs, and the subnet gets no entry of its own.
    let ecs_client: IpAddr = "198.51.100.7".parse().unwrap();
    let q = with_ecs(build_query(NAME, RecordType::A, Some(1232)), ecs_client, 32);
    for _ in 0..5 {
        let got = a_records(&nyc.dns.udp_from(Some(ldns), &q));
        assert_eq!(
            got,
            [layout.svc_of("fra")],
            "a query from the LDNS {ldns} with ECS {ecs_client}/32 is not answered by the LDNS's RTTs"
        );
    }
    let t = nyc.ldns();
    assert!(
        t.entries
            .iter()
            .all(|e| e.ldns != "198.51.100.7" && e.ldns != "198.51.100.0"),
        "the ECS address became an LDNS entry: {t:?}"
    );
    // The other parents have the RTTs too and answer the same.
    for s in [fra, sgp] {
        eventually_ok(
            CONVERGE,
            &format!("{} answers fra's service", s.name),
            || steadily(s, ldns, &layout, "fra", 5),
        );
    }

    // sgp becomes the nearest, fra the farthest.
    set_delays(&emu, &layout, &[("fra", 250), ("sgp", 10)]);
    for s in &sites {
        eventually_ok(
            CONVERGE,
            &format!("{} follows the change to sgp", s.name),
            || steadily(s, ldns, &layout, "sgp", 5),
        );
    }
    eventually_ok(CONVERGE, "sgp sees fra's new RTT", || {
        rtts_at_least(sgp, ldns, &[("fra", 250), ("nyc", 120)])
    });
    drop(sites);
    drop(scratch);
}

// ---------------------------------------------------------------------------
// 2. No RTT yet: the backup method answers, and explain says so
// ---------------------------------------------------------------------------

/// `-ldnsProbeOrder DNS TCP` (no PING, which loopback would answer at once)
/// and an emulator that holds every answer back 3 s, beyond the probes'
/// 500 ms: no site can measure the new LDNS. Its first answer, and every
/// one while the probes fail, is round robin (the default backup method)
/// over all three sites, and `/v1/explain` says that no RTT is known. Once
/// the emulator answers in time (nyc nearest), the answer is nyc's by RTT.
#[test]
fn without_an_rtt_for_a_new_ldns_the_backup_method_answers_and_explain_says_so() {
    let net = Net::for_sites("rtt_fallback", 3);
    let scratch = net.scratch();
    let layout = Layout::host(&net, &["fra", "nyc", "sgp"]);
    let ldns = net.client_ip(0);
    let emu = emulator(
        ldns,
        &layout,
        &[("fra", 3000), ("nyc", 3000), ("sgp", 3000)],
    );
    let services = layout.unmonitored_services();
    let params = "set gslb parameter -ldnsProbeOrder DNS TCP\n";
    let sites = start_sites(&scratch, &layout, |k| {
        layout.conf(k, emu.addr().port(), params, "", &services, "")
    });
    let fra = &sites[0];
    wait_mesh_up(&sites);

    // Before any query: nothing is known about this LDNS.
    explains(fra, ldns, &[NO_RTT, "ROUNDROBIN"], &["chosen by RTT"]).unwrap_or_else(|e| {
        panic!("{e}");
    });
    // The first query from the new LDNS.
    let first = fra
        .try_query_a_from(ldns, NAME)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first.len(), 1, "one address per answer: {first:?}");
    assert!(
        layout.svc.contains(&first[0]),
        "the first answer {first:?} is none of the services {:?}",
        layout.svc
    );
    explains(fra, ldns, &[NO_RTT, "ROUNDROBIN"], &["chosen by RTT"]).unwrap_or_else(|e| {
        panic!("right after the first query: {e}");
    });

    // fra made an entry and probes it, and every probe cycle fails.
    eventually_ok(EVENTUALLY, "fra's probes of the LDNS fail", || {
        let t = fra.try_ldns()?;
        let e = find_ldns(&t, &ldns.to_string())
            .ok_or_else(|| format!("no entry for {ldns} at fra: {t:?}"))?;
        if t.probe_failures == 0 {
            return Err(format!("no failed probe cycle yet: {t:?}"));
        }
        if let Some(c) = e.sites.iter().find(|c| c.rtt_ms.is_some()) {
            panic!(
                "an RTT to {ldns} is known although the emulator answers no probe in time: {c:?} in {e:?}"
            );
        }
        Ok(())
    });
    assert!(
        emu.queries_from(IpAddr::V4(fra.ip)) > 0,
        "fra never probed the LDNS"
    );
    // Still no RTT: round robin over every site, and explain says why.
    let got = sample(fra, ldns, 12).unwrap_or_else(|e| panic!("{e}"));
    for site in &layout.names {
        assert!(
            got.contains(&layout.svc_of(site)),
            "12 answers by round robin (no RTT known) never gave web-{site}: {got:?}"
        );
    }
    explains(
        fra,
        ldns,
        &[
            NO_RTT,
            "ROUNDROBIN",
            "at site fra: no RTT to the LDNS",
            "at site nyc: no RTT to the LDNS",
            "at site sgp: no RTT to the LDNS",
        ],
        &["chosen by RTT"],
    )
    .unwrap_or_else(|e| panic!("while every probe fails: {e}"));

    // The LDNS answers in time now: nyc is nearest.
    set_delays(&emu, &layout, &[("fra", 150), ("nyc", 30), ("sgp", 90)]);
    eventually_ok(CONVERGE, "fra answers nyc's service by RTT", || {
        steadily(fra, ldns, &layout, "nyc", 5)
    });
    eventually_ok(EVENTUALLY, "fra explains the RTT choice", || {
        explains(
            fra,
            ldns,
            &["chosen by RTT", "RTT: the smallest is"],
            &[NO_RTT],
        )
    });
    drop(sites);
    drop(scratch);
}

/// `set gslb parameter -dropLdnsReq ENABLED`: while no site has an RTT to
/// a new LDNS (every probe times out), its queries get no response at
/// all (no round robin), the drops are counted, and the LDNS is probed
/// all the same; once it answers in time its queries are answered by RTT.
/// Another resolver with an RTT is answered throughout.
#[test]
fn drop_ldns_requests_sends_no_response_until_the_ldns_has_an_rtt() {
    let net = Net::for_sites("rtt_drop", 3);
    let scratch = net.scratch();
    let layout = Layout::host(&net, &["fra", "nyc", "sgp"]);
    let slow = net.client_ip(0);
    let known = net.client_ip(1);
    let emu_slow = emulator(
        slow,
        &layout,
        &[("fra", 3000), ("nyc", 3000), ("sgp", 3000)],
    );
    // On the same port (the probes' -destPort), at its own address.
    let emu_known = LdnsEmulator::start(SocketAddr::new(IpAddr::V4(known), emu_slow.addr().port()));
    set_delays(
        &emu_known,
        &layout,
        &[("fra", 20), ("nyc", 120), ("sgp", 200)],
    );
    let services = layout.unmonitored_services();
    let params = "set gslb parameter -ldnsProbeOrder DNS TCP -dropLdnsReq ENABLED\n";
    let sites = start_sites(&scratch, &layout, |k| {
        layout.conf(k, emu_slow.addr().port(), params, "", &services, "")
    });
    let fra = &sites[0];
    wait_mesh_up(&sites);

    // The measured resolver: fra is nearest.
    let _ = fra.try_query_a_from(known, NAME);
    eventually_ok(
        CONVERGE,
        "the known LDNS is answered fra's service by RTT",
        || steadily(fra, known, &layout, "fra", 3),
    );

    let q = build_query(NAME, RecordType::A, None)
        .to_vec()
        .expect("encode");
    let dropped_before = fra.status().dns.dropped;
    for i in 0..3 {
        let got = fra
            .in_ns(|| fra.dns.raw_udp_from(Some(slow), &q, Duration::from_secs(1)))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            got.is_none(),
            "query {} from {slow} (no RTT, -dropLdnsReq ENABLED) got a response: {:?}",
            i + 1,
            got.map(|b| Message::from_vec(&b))
        );
        // The measured resolver is still answered.
        steadily(fra, known, &layout, "fra", 1).unwrap_or_else(|e| panic!("{e}"));
    }
    let dropped = fra.status().dns.dropped - dropped_before;
    assert!(
        dropped >= 3,
        "3 queries dropped, the counter says {dropped}"
    );
    eventually_ok(EVENTUALLY, "fra probes the dropped LDNS", || {
        (emu_slow.queries_from(IpAddr::V4(fra.ip)) > 0)
            .then_some(())
            .ok_or_else(|| format!("no probe of {slow} from fra yet"))
    });
    explains(
        fra,
        slow,
        &["-dropLdnsReq ENABLED"],
        &["ROUNDROBIN", "chosen by"],
    )
    .unwrap_or_else(|e| panic!("{e}"));

    // It answers in time now: sgp is nearest, and its queries are answered.
    set_delays(
        &emu_slow,
        &layout,
        &[("fra", 150), ("nyc", 90), ("sgp", 30)],
    );
    eventually_ok(
        CONVERGE,
        "the LDNS is answered sgp's service by RTT",
        || steadily(fra, slow, &layout, "sgp", 3),
    );
    drop(sites);
    drop(scratch);
}

// ---------------------------------------------------------------------------
// 3. -tolerance at selection
// ---------------------------------------------------------------------------

/// `-tolerance 40` on the vserver; fra is 40 ms from the LDNS, nyc 55 ms,
/// sgp 200 ms. The answers balance between fra and nyc (within 40 ms of
/// the best) and never give sgp.
#[test]
fn tolerance_balances_among_the_sites_within_it_and_never_the_farther_one() {
    let net = Net::for_sites("rtt_tolerance", 3);
    let scratch = net.scratch();
    let layout = Layout::host(&net, &["fra", "nyc", "sgp"]);
    let ldns = net.client_ip(0);
    let emu = emulator(ldns, &layout, &[("fra", 40), ("nyc", 55), ("sgp", 200)]);
    let services = layout.unmonitored_services();
    let sites = start_sites(&scratch, &layout, |k| {
        layout.conf(
            k,
            emu.addr().port(),
            DNS_FIRST,
            "",
            &services,
            " -tolerance 40",
        )
    });
    let fra = &sites[0];
    wait_mesh_up(&sites);

    let _ = fra.try_query_a_from(ldns, NAME);
    eventually_ok(CONVERGE, "fra holds every site's RTT", || {
        rtts_at_least(fra, ldns, &[("fra", 40), ("nyc", 55), ("sgp", 200)])
    });
    let (web_fra, web_nyc, web_sgp) = (
        layout.svc_of("fra"),
        layout.svc_of("nyc"),
        layout.svc_of("sgp"),
    );
    eventually_ok(CONVERGE, "answers balance between fra and nyc", || {
        let got = sample(fra, ldns, 20)?;
        if got.contains(&web_fra) && got.contains(&web_nyc) && !got.contains(&web_sgp) {
            Ok(())
        } else {
            Err(format!(
                "20 answers {got:?}: want both web-fra ({web_fra}) and web-nyc ({web_nyc}), never web-sgp ({web_sgp})"
            ))
        }
    });
    let got = sample(fra, ldns, 60).unwrap_or_else(|e| panic!("{e}"));
    let count = |ip: Ipv4Addr| got.iter().filter(|g| **g == ip).count();
    assert_eq!(
        count(web_sgp),
        0,
        "sgp is 160 ms beyond the best, far outside -tolerance 40, yet answered: {got:?}"
    );
    assert!(
        count(web_fra) > 0 && count(web_nyc) > 0,
        "60 answers should balance between fra and nyc: {got:?}"
    );
    explains(
        fra,
        ldns,
        &[
            "chosen by RTT",
            "with the tolerance of 40.0 ms",
            "passed over web-sgp",
        ],
        &[NO_RTT],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    drop(sites);
    drop(scratch);
}

// ---------------------------------------------------------------------------
// 4. -RTTTolerance at exchange
// ---------------------------------------------------------------------------

/// `-RTTTolerance 25`. nyc is 100 ms from the LDNS. Once the RTTs are
/// exchanged and nyc's counters have settled, nyc's delay wiggles within
/// the tolerance (108, 94, 104, 97 ms): nyc measures the new values but
/// sends nothing (`rtt_messages_sent` and `rtt_entries_sent` stay put) and
/// the peers keep the RTT they had. Then it jumps to 190 ms: nyc sends it,
/// and the peers show it.
#[test]
fn an_rtt_is_sent_to_the_other_sites_only_when_it_moves_beyond_rtt_tolerance() {
    let net = Net::for_sites("rtt_exchange", 3);
    let scratch = net.scratch();
    let layout = Layout::host(&net, &["fra", "nyc", "sgp"]);
    let ldns = net.client_ip(0);
    let emu = emulator(ldns, &layout, &[("fra", 40), ("nyc", 100), ("sgp", 160)]);
    let services = layout.unmonitored_services();
    let params = format!("{DNS_FIRST}set gslb parameter -RTTTolerance 25\n");
    let sites = start_sites(&scratch, &layout, |k| {
        layout.conf(k, emu.addr().port(), &params, "", &services, "")
    });
    let [fra, nyc, sgp] = &sites[..] else {
        unreachable!()
    };
    wait_mesh_up(&sites);

    let _ = fra.try_query_a_from(ldns, NAME);
    for s in &sites {
        eventually_ok(CONVERGE, &format!("{} holds every RTT", s.name), || {
            rtts_at_least(s, ldns, &[("fra", 40), ("nyc", 100), ("sgp", 160)])
        });
    }
    // nyc's counters settle: unchanged over three probe cycles of nyc's.
    let mut before = (0, 0);
    eventually_ok(CONVERGE, "nyc's RTT counters settle", || {
        let start = rtt_sent(nyc)?;
        let samples = nyc.try_ldns()?.probe_samples;
        if !wait_until(EVENTUALLY, || {
            nyc.try_ldns().is_ok_and(|t| t.probe_samples >= samples + 3)
        }) {
            return Err("nyc takes no more samples".into());
        }
        let end = rtt_sent(nyc)?;
        before = end;
        if start == end {
            Ok(())
        } else {
            Err(format!("nyc's counters moved from {start:?} to {end:?}"))
        }
    });
    assert!(
        before.0 > 0 && before.1 > 0,
        "nyc has sent no RTT message at all, yet fra and sgp hold its RTT: {before:?}"
    );
    let seen_by = |s: &SiteServer| rtt_at(s, ldns, "nyc").unwrap_or_else(|e| panic!("{e}"));
    let fra_view = seen_by(fra);
    let sgp_view = seen_by(sgp);

    let mut failures = Vec::new();
    for wiggle in [108u64, 94, 104, 97] {
        set_delays(&emu, &layout, &[("nyc", wiggle)]);
        let samples = nyc.ldns().probe_samples;
        eventually(
            CONVERGE,
            &format!("nyc samples the LDNS twice at {wiggle} ms"),
            || nyc.try_ldns().is_ok_and(|t| t.probe_samples >= samples + 2),
        );
        if wiggle == 108 {
            // nyc itself uses what it measured (at least the new delay).
            eventually_ok(CONVERGE, "nyc measures 108 ms", || {
                rtts_at_least(nyc, ldns, &[("nyc", 108)])
            });
        }
        let now = rtt_sent(nyc).unwrap_or_else(|e| panic!("{e}"));
        if now != before {
            failures.push(format!(
                "at {wiggle} ms (within -RTTTolerance 25 of 100 ms) nyc's (rtt_messages_sent, \
                 rtt_entries_sent) went from {before:?} to {now:?}"
            ));
            before = now;
        }
        for (s, view) in [(fra, fra_view), (sgp, sgp_view)] {
            let got = seen_by(s);
            if got != view {
                failures.push(format!(
                    "at {wiggle} ms {} shows nyc's RTT {got:?} ms, not the {view:?} ms it had \
                     (a change within the tolerance is not sent)",
                    s.name
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // Beyond the tolerance: sent, and the peers show it.
    set_delays(&emu, &layout, &[("nyc", 190)]);
    eventually_ok(CONVERGE, "nyc sends its new RTT", || {
        let now = rtt_sent(nyc)?;
        if now.0 > before.0 && now.1 > before.1 {
            Ok(())
        } else {
            Err(format!("nyc's counters {now:?}, before {before:?}"))
        }
    });
    for s in [fra, sgp] {
        eventually_ok(CONVERGE, &format!("{} shows nyc's 190 ms", s.name), || {
            rtts_at_least(s, ldns, &[("nyc", 190)])
        });
    }
    drop(sites);
    drop(scratch);
}

// ---------------------------------------------------------------------------
// 5. Probe order: PING blocked by iptables
// ---------------------------------------------------------------------------

/// A site in a network namespace of the test's own, with the default probe
/// order (PING, DNS, TCP) and two LDNS emulators on the same port. ICMP
/// echo requests to LDNS b are dropped by iptables: its RTT comes from
/// `ldns-dns` (at least the 30 ms its emulator holds DNS answers), while
/// LDNS a answers PING (`ldns-ping`). Once the rule is deleted, b's RTT
/// comes from `ldns-ping` again.
#[test]
fn with_ping_blocked_the_default_order_falls_back_to_the_dns_probe() {
    let Some(ns) = Netns::create("rttping") else {
        return;
    };
    let scratch = Scratch::new("rtt_ping_order");
    let layout = Layout::new(
        &["fra"],
        vec![Ipv4Addr::new(127, 0, 1, 1)],
        vec![Ipv4Addr::new(127, 0, 3, 1)],
    );
    let (a, b) = (Ipv4Addr::new(127, 0, 5, 1), Ipv4Addr::new(127, 0, 5, 2));
    let port = 5353;
    let (emu_a, emu_b) = ns.run(|| {
        (
            LdnsEmulator::start(SocketAddr::new(IpAddr::V4(a), port)),
            LdnsEmulator::start(SocketAddr::new(IpAddr::V4(b), port)),
        )
    });
    emu_b.set_delay(layout.ip("fra"), ms(30));
    let conf = layout.conf(0, port, "", "", &layout.unmonitored_services(), "");
    let site = SiteServer::start(
        SEXTANT,
        &scratch.0,
        "fra",
        layout.ips[0],
        &conf,
        Some(Arc::clone(&ns)),
    );
    ns.exec_ok(&[
        "iptables",
        "-w",
        "-A",
        "INPUT",
        "-p",
        "icmp",
        "--icmp-type",
        "echo-request",
        "-d",
        &format!("{b}/32"),
        "-j",
        "DROP",
    ]);
    let probe_of = |ldns: Ipv4Addr| -> Result<(Option<String>, Option<f64>), String> {
        let e = ldns_entry(&site, ldns)?;
        let c = ldns_site(&e, "fra").ok_or_else(|| format!("no cell of fra: {e:?}"))?;
        Ok((c.probe.clone(), c.rtt_ms))
    };
    let expect = |ldns: Ipv4Addr, probe: &str, min_ms: f64| -> Result<(), String> {
        // Queries keep the entry queried.
        site.try_query_a_from(ldns, NAME)?;
        match probe_of(ldns)? {
            (Some(p), Some(r)) if p == probe && r >= min_ms => Ok(()),
            got => Err(format!(
                "fra's RTT to {ldns} is {got:?} (probe, ms), want {probe} with at least {min_ms} ms; \
                 iptables INPUT:\n{}",
                ns.rules_in_force()
            )),
        }
    };
    eventually_ok(CONVERGE, "LDNS a is measured by ldns-ping", || {
        expect(a, "ldns-ping", 0.0)
    });
    eventually_ok(
        CONVERGE,
        "LDNS b (PING dropped) is measured by ldns-dns",
        || expect(b, "ldns-dns", 30.0),
    );
    assert!(
        emu_b.queries_from(layout.ip("fra")) > 0,
        "LDNS b's emulator got no DNS probe from fra"
    );
    ns.exec_ok(&[
        "iptables",
        "-w",
        "-D",
        "INPUT",
        "-p",
        "icmp",
        "--icmp-type",
        "echo-request",
        "-d",
        &format!("{b}/32"),
        "-j",
        "DROP",
    ]);
    eventually_ok(
        CONVERGE,
        "LDNS b is measured by ldns-ping once PING passes",
        || expect(b, "ldns-ping", 0.0),
    );
    drop(site);
    drop((emu_a, emu_b));
    drop(scratch);
    drop(ns);
}

// ---------------------------------------------------------------------------
// 6. Expiry
// ---------------------------------------------------------------------------

/// `-ldnsEntryTimeout 3`. While the LDNS keeps querying fra (for longer
/// than the timeout) every site keeps its entry; once the queries stop the
/// entry disappears at every site, each counts it as expired, and nobody
/// probes the LDNS any more.
#[test]
fn an_ldns_entry_expires_at_every_site_once_its_queries_stop() {
    let net = Net::for_sites("rtt_expiry", 3);
    let scratch = net.scratch();
    let layout = Layout::host(&net, &["fra", "nyc", "sgp"]);
    let ldns = net.client_ip(0);
    let emu = emulator(ldns, &layout, &[("fra", 20), ("nyc", 30), ("sgp", 40)]);
    let services = layout.unmonitored_services();
    let params = format!("{DNS_FIRST}set gslb parameter -ldnsEntryTimeout 3\n");
    let sites = start_sites(&scratch, &layout, |k| {
        layout.conf(k, emu.addr().port(), &params, "", &services, "")
    });
    let fra = &sites[0];
    wait_mesh_up(&sites);

    let _ = fra.try_query_a_from(ldns, NAME);
    for s in &sites {
        eventually_ok(CONVERGE, &format!("{} holds every RTT", s.name), || {
            rtts_at_least(s, ldns, &[("fra", 20), ("nyc", 30), ("sgp", 40)])
        });
    }
    // Queries for twice the timeout: the entry stays everywhere.
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(6) {
        fra.try_query_a_from(ldns, NAME)
            .unwrap_or_else(|e| panic!("{e}"));
        for s in &sites {
            let t = s.ldns();
            assert!(
                find_ldns(&t, &ldns.to_string()).is_some() && t.expired == 0,
                "{} lost (or expired) the entry of {ldns} while it still queries fra every 300 ms \
                 (-ldnsEntryTimeout 3): {t:?}",
                s.name
            );
        }
        thread::sleep(ms(300));
    }
    // The queries stop.
    for s in &sites {
        eventually_ok(CONVERGE, &format!("{} expires the entry", s.name), || {
            let t = s.try_ldns()?;
            match find_ldns(&t, &ldns.to_string()) {
                Some(e) => Err(format!("the entry is still there: {e:?}")),
                None if t.expired == 0 => Err(format!("gone, but not counted expired: {t:?}")),
                None => Ok(()),
            }
        });
    }
    // Nobody probes it any more (after a probe cycle in flight).
    thread::sleep(Duration::from_secs(1));
    let counts: Vec<u64> = sites
        .iter()
        .map(|s| emu.queries_from(IpAddr::V4(s.ip)))
        .collect();
    thread::sleep(Duration::from_secs(3));
    for (s, before) in sites.iter().zip(&counts) {
        let now = emu.queries_from(IpAddr::V4(s.ip));
        assert_eq!(
            now, *before,
            "{} still probes {ldns} after its entry expired everywhere",
            s.name
        );
    }
    drop(sites);
    drop(scratch);
}

// ---------------------------------------------------------------------------
// 7. A site whose metric exchange is DOWN is not used
// ---------------------------------------------------------------------------

/// fra is nearest to the LDNS. Each site's service has a live backend and a
/// TCP monitor, and every site is `-triggerMonitor MEPDOWN`: when fra's
/// process is killed, nyc and sgp probe web-fra themselves and see it UP.
/// Yet once metric exchange with fra is DOWN, fra's RTT is stale: they
/// never pick web-fra by RTT, but nyc's service (the next nearest). When
/// fra comes back, web-fra is answered again.
#[test]
fn a_site_whose_metric_exchange_is_down_is_not_used_for_rtt() {
    let net = Net::for_sites("rtt_mep_down", 3);
    let scratch = net.scratch();
    let layout = Layout::host(&net, &["fra", "nyc", "sgp"]);
    let backends: Vec<Backend> = layout.svc.iter().map(|ip| Backend::tcp(*ip)).collect();
    let ldns = net.client_ip(0);
    let emu = emulator(ldns, &layout, &[("fra", 20), ("nyc", 80), ("sgp", 150)]);
    let mut services = String::from(
        "add lb monitor tcp-fast TCP -interval 200 MSEC -resptimeout 100 MSEC -retries 2\n",
    );
    for (name, b) in layout.names.iter().zip(&backends) {
        services += &format!(
            "add gslb service web-{name} {} TCP {} -siteName {name}\n\
             bind gslb service web-{name} -monitorName tcp-fast\n",
            b.ip(),
            b.port()
        );
    }
    let params = format!("{DNS_FIRST}set gslb parameter -MEPKeepAliveTimeout 2\n");
    let mut sites = start_sites(&scratch, &layout, |k| {
        layout.conf(
            k,
            emu.addr().port(),
            &params,
            " -triggerMonitor MEPDOWN",
            &services,
            "",
        )
    });
    wait_mesh_up(&sites);
    for s in &sites[1..] {
        eventually_ok(CONVERGE, &format!("{} answers web-fra", s.name), || {
            steadily(s, ldns, &layout, "fra", 5)
        });
    }

    sites[0].kill();
    for s in &sites[1..] {
        eventually_ok(
            EVENTUALLY,
            &format!("{} sees metric exchange with fra DOWN", s.name),
            || s.expect_mep("fra", "DOWN").map(|_| ()),
        );
    }
    for s in &sites[1..] {
        // web-fra is UP by the site's own monitor: only RTT keeps it out.
        eventually_ok(
            EVENTUALLY,
            &format!("{} sees web-fra UP by its own monitor", s.name),
            || s.expect_service("web-fra", State::Up).map(|_| ()),
        );
        eventually_ok(
            CONVERGE,
            &format!("{} answers web-nyc, the nearest site up", s.name),
            || steadily(s, ldns, &layout, "nyc", 5),
        );
        let got = sample(s, ldns, 30).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !got.contains(&layout.svc_of("fra")),
            "{} answered web-fra by RTT while metric exchange with fra is DOWN: {got:?}",
            s.name
        );
        explains(
            s,
            ldns,
            &[
                "chosen by RTT",
                "at site fra: no RTT to the LDNS",
                "at site nyc: RTT to the LDNS",
            ],
            &[],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let fra_rtt = rtt_at(s, ldns, "fra").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            fra_rtt, None,
            "{}: /v1/ldns still shows fra's RTT while metric exchange with fra is DOWN",
            s.name
        );
    }

    // fra comes back: it is the nearest again.
    sites[0].restart();
    wait_mesh_up(&sites);
    for s in &sites {
        eventually_ok(
            CONVERGE,
            &format!("{} answers web-fra again", s.name),
            || steadily(s, ldns, &layout, "fra", 5),
        );
    }
    drop(sites);
    drop(backends);
    drop(scratch);
}

// ---------------------------------------------------------------------------
// 8. A flood of spoofed sources
// ---------------------------------------------------------------------------

/// A parent started with `--ldns-new-per-second 20 --ldns-max-entries 30`
/// gets one query from each of 1,250 distinct loopback sources within a
/// few seconds: it makes at most about 20 new entries per second (counting
/// the others as rate limited or dropped), keeps at most 30, and answers
/// normally afterwards.
#[test]
fn a_flood_of_spoofed_sources_makes_a_bounded_number_of_entries() {
    let net = Net::for_sites("rtt_flood", 1);
    let scratch = net.scratch();
    let layout = Layout::host(&net, &["fra"]);
    let ldns = net.client_ip(0);
    let emu = emulator(ldns, &layout, &[("fra", 10)]);
    let conf = layout.conf(
        0,
        emu.addr().port(),
        DNS_FIRST,
        "",
        &layout.unmonitored_services(),
        "",
    );
    let site = SiteServer::start_with(
        SEXTANT,
        &scratch.0,
        "fra",
        layout.ips[0],
        &conf,
        None,
        &["--ldns-new-per-second", "20", "--ldns-max-entries", "30"],
    );
    let sources: Vec<Ipv4Addr> = (0..5u8)
        .flat_map(|a| (1..=250u8).map(move |b| Ipv4Addr::new(127, 60 + a, net.x, b)))
        .collect();
    let q = build_query(NAME, RecordType::A, None);
    // 100 new sources every ~150 ms: about 2 s in all, long enough for the
    // rate to allow more entries than --ldns-max-entries keeps.
    let t0 = Instant::now();
    let mut answered = 0;
    for chunk in sources.chunks(100) {
        answered += site
            .dns
            .flood_from(chunk, &q, 100, Duration::from_millis(500))
            .unwrap_or_else(|e| panic!("{e}"));
        thread::sleep(ms(150));
    }
    let flood = t0.elapsed().as_secs_f64();
    // Every answered query's source is accounted for once the engine has
    // drained the DNS path's queue (it sweeps every 250 ms).
    let mut t = site.ldns();
    eventually_ok(EVENTUALLY, "every flooded source is accounted for", || {
        t = site.try_ldns()?;
        let seen = t.created + t.rate_limited + t.queue_dropped + t.ignored;
        if seen >= answered as u64 {
            Ok(())
        } else {
            Err(format!(
                "{seen} sources counted (created, rate limited, dropped, ignored), {answered} answered: {t:?}"
            ))
        }
    });
    let elapsed = t0.elapsed().as_secs_f64();
    eprintln!(
        "flood: {} sources, {answered} answered, in {flood:.2} s; after {elapsed:.2} s: created {}, \
         rate_limited {}, queue_dropped {}, evicted {}, entries {}",
        sources.len(),
        t.created,
        t.rate_limited,
        t.queue_dropped,
        t.evicted,
        t.entries.len()
    );
    let bound = 20.0 * (elapsed + 1.0) + 20.0;
    assert!(
        (t.created as f64) <= bound,
        "{} entries created in {elapsed:.2} s with --ldns-new-per-second 20 (bound {bound}): {t:?}",
        t.created
    );
    assert!(t.created > 0, "the flood made no entry at all: {t:?}");
    assert!(
        t.rate_limited + t.queue_dropped > 0,
        "{} new sources in {elapsed:.2} s and nothing was refused: {t:?}",
        sources.len()
    );
    assert!(
        t.entries.len() <= 30,
        "{} entries with --ldns-max-entries 30",
        t.entries.len()
    );
    assert!(
        t.evicted >= t.created.saturating_sub(30),
        "{} created, at most 30 kept, but only {} evicted",
        t.created,
        t.evicted
    );
    assert!(
        answered * 2 >= sources.len(),
        "only {answered} of {} flood queries were answered",
        sources.len()
    );
    // It still answers, the flooded sources and the real LDNS alike.
    site.expect_answer(NAME, &[layout.svc[0]])
        .unwrap_or_else(|e| panic!("after the flood: {e}"));
    let again = site
        .try_query_a_from(sources[0], NAME)
        .unwrap_or_else(|e| panic!("after the flood: {e}"));
    assert_eq!(again, [layout.svc[0]]);
    eventually_ok(
        CONVERGE,
        "the real LDNS gets an RTT after the flood",
        || {
            let _ = site.try_query_a_from(ldns, NAME)?;
            rtts_at_least(&site, ldns, &[("fra", 10)])
        },
    );
    drop(site);
    drop(scratch);
}

// ---------------------------------------------------------------------------
// 9. Error replies are RTT samples
// ---------------------------------------------------------------------------

/// Two independent single-site parents, one probing by DNS over UDP only
/// (`-ldnsProbeOrder DNS`), the other by DNS over TCP only (`TCP`). LDNS a
/// is an emulator that answers REFUSED after 30 ms; LDNS b has nothing
/// listening on the probe port. Both sites measure both: REFUSED is a DNS
/// error reply, b gives an ICMP port unreachable (UDP) or a TCP reset, and
/// each counts as a sample (seed 003).
#[test]
fn dns_errors_port_unreachable_and_tcp_resets_count_as_rtt_samples() {
    let net = Net::for_sites("rtt_errors", 2);
    let scratch = net.scratch();
    let (a, b) = (net.client_ip(0), net.client_ip(1));
    let emu = LdnsEmulator::start(SocketAddr::new(IpAddr::V4(a), 0));
    emu.set_rcode(5);
    let mut sites = Vec::new();
    for (k, (name, order, probe)) in [("udp", "DNS", "ldns-dns"), ("tcp", "TCP", "ldns-tcp")]
        .into_iter()
        .enumerate()
    {
        let layout = Layout::new(
            &[name],
            vec![net.site_ip(k as u8)],
            vec![net.svc_ip(k as u8)],
        );
        emu.set_delay(layout.ip(name), ms(30));
        let params = format!("set gslb parameter -ldnsProbeOrder {order}\n");
        let conf = layout.conf(
            0,
            emu.addr().port(),
            &params,
            "",
            &layout.unmonitored_services(),
            "",
        );
        let site = SiteServer::start(SEXTANT, &scratch.0, name, layout.ips[0], &conf, None);
        sites.push((site, probe));
    }
    for (site, probe) in &sites {
        for (ldns, min_ms, what) in [
            (a, 30.0, "a REFUSED answer after 30 ms"),
            (b, 0.0, "nothing listening on the probe port"),
        ] {
            eventually_ok(
                CONVERGE,
                &format!("{} measures {ldns} ({what}) by {probe}", site.name),
                || {
                    site.try_query_a_from(ldns, NAME)?;
                    let e = ldns_entry(site, ldns)?;
                    let c = ldns_site(&e, &site.name)
                        .ok_or_else(|| format!("no cell of {}: {e:?}", site.name))?;
                    match (c.probe.as_deref(), c.rtt_ms) {
                        (Some(p), Some(r)) if p == *probe && r >= min_ms => Ok(()),
                        got => Err(format!(
                            "{}'s RTT to {ldns} is {got:?} (probe, ms), want {probe} with at \
                             least {min_ms} ms; /v1/ldns: {:?}",
                            site.name,
                            site.try_ldns()
                        )),
                    }
                },
            );
        }
        assert!(
            emu.queries_from(IpAddr::V4(site.ip)) > 0,
            "the emulator got no probe from {}",
            site.name
        );
    }
    drop(sites);
    drop(scratch);
}

// ---------------------------------------------------------------------------
// Each LDNS monitor at its own interval, and -retries
// ---------------------------------------------------------------------------

/// Seed 003's own line, `set lb monitor ldns-tcp LDNS-TCP -interval 10 sec
/// -resptimeout 5 sec`, takes effect: a resolver that only the TCP probe
/// reaches is probed every 10 s, although the first kind of the order
/// (ldns-dns, every second here) would repeat sooner. And `-retries 2` on
/// ldns-dns asks twice before the cycle moves on to TCP.
///
/// One site; `-ldnsProbeOrder DNS TCP` (loopback would answer a PING at
/// once); ldns-dns goes to a UDP socket on the LDNS's address that reads and
/// never answers (a closed port would answer with a port unreachable, which
/// counts as a sample), ldns-tcp to the emulator. When the first RTT by
/// ldns-tcp is known, exactly two UDP queries and one TCP query have come
/// from the site; for the next 6 s no other cycle starts. (A slow machine
/// only delays cycles, so load cannot make these counts larger.)
#[test]
fn each_ldns_monitor_probes_at_its_own_interval_and_retries() {
    let net = Net::for_sites("rtt_monitor_interval", 1);
    let scratch = net.scratch();
    let layout = Layout::host(&net, &["fra"]);
    let ldns = net.client_ip(0);
    let emu = emulator(ldns, &layout, &[("fra", 0)]);
    let silent = std::net::UdpSocket::bind((ldns, 0)).expect("bind the silent UDP socket");
    let silent_port = silent.local_addr().expect("local address").port();
    silent
        .set_nonblocking(true)
        .expect("a non-blocking silent socket");
    let fra_ip = layout.ip("fra");
    let udp_queries_from_fra = || {
        let mut buf = [0u8; 512];
        let mut n = 0;
        while let Ok((_, from)) = silent.recv_from(&mut buf) {
            if from.ip() == fra_ip {
                n += 1;
            }
        }
        n
    };
    let services = layout.unmonitored_services();
    let params = format!(
        "set gslb parameter -ldnsProbeOrder DNS TCP\n\
         set lb monitor ldns-dns LDNS-DNS -destPort {silent_port} -interval 1 SEC -resptimeout 200 MSEC -retries 2\n\
         set lb monitor ldns-tcp LDNS-TCP -interval 10 sec -resptimeout 5 sec\n"
    );
    let sites = start_sites(&scratch, &layout, |k| {
        layout.conf(k, emu.addr().port(), &params, "", &services, "")
    });
    let fra = &sites[0];
    fra.try_query_a_from(ldns, NAME)
        .unwrap_or_else(|e| panic!("{e}"));

    eventually_ok(CONVERGE, "fra measures the LDNS by ldns-tcp", || {
        let t = fra.try_ldns()?;
        let e = find_ldns(&t, &ldns.to_string())
            .ok_or_else(|| format!("no entry for {ldns} at fra: {t:?}"))?;
        match e.sites.first() {
            Some(c) if c.rtt_ms.is_some() && c.probe.as_deref() == Some("ldns-tcp") => Ok(()),
            other => Err(format!("no RTT by ldns-tcp yet: {other:?}")),
        }
    });
    let mut udp = udp_queries_from_fra();
    let tcp = emu.queries_from(fra_ip);
    assert_eq!(
        (udp, tcp),
        (2, 1),
        "the first cycle: ldns-dns twice (-retries 2), then ldns-tcp once"
    );
    thread::sleep(Duration::from_secs(6));
    udp += udp_queries_from_fra();
    assert_eq!(
        (udp, emu.queries_from(fra_ip)),
        (2, 1),
        "no other cycle within 6 s: the resolver answered by ldns-tcp is probed at its -interval 10 sec"
    );
    drop(sites);
    drop(scratch);
}
