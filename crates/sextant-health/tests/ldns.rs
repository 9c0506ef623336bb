//! LDNS probes over real loopback sockets, against the LDNS emulator.
//!
//! Every test owns a few addresses 127.77.0.N (N unique per test): the
//! resolver, and the "site" addresses probes are sent from. The end-to-end
//! tests' own addresses (`sextant_test_support::net`) are 127.77.X.Y with
//! X >= 1, so these never collide with them either. Per-site distance is
//! the emulator's per-source delay. Bounds on RTTs are generous (a lower
//! bound from the delay, an upper bound far above it), and every wait is
//! bounded.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::time::Duration;

use sextant_core::{GslbParams, LdnsMonitor, LdnsProbe};
use sextant_health::ldns::{LdnsOutcome, LdnsProber, LdnsProberConfig, LdnsSample};
use sextant_health::ping;
use sextant_test_support::ci::cannot_run;
use sextant_test_support::ldns::LdnsEmulator;
use tokio::sync::mpsc;

/// Cycle period of the tests: a few cycles per second.
const INTERVAL: Duration = Duration::from_millis(300);
/// How long a test waits for one sample.
const WAIT: Duration = Duration::from_secs(10);
/// At most this many samples are read while waiting for one kind of sample.
const MAX_SAMPLES: usize = 30;

fn ip(n: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 77, 0, n))
}

/// Probes from `source` in `order`, every kind on `port`, 1 s timeouts.
fn config(source: IpAddr, order: &[LdnsProbe], port: u16) -> LdnsProberConfig {
    let monitor = LdnsMonitor {
        interval: INTERVAL,
        timeout: Duration::from_secs(1),
        dest_port: Some(port),
        retries: 1,
    };
    LdnsProberConfig {
        source: Some(source),
        order: order.to_vec(),
        ping: monitor,
        dns: monitor,
        tcp: monitor,
        probes_per_second: 1000,
    }
}

async fn recv(rx: &mut mpsc::Receiver<LdnsSample>) -> LdnsSample {
    tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("a sample within the wait")
        .expect("the prober keeps the channel open")
}

/// The next RTT sample for `ldns`; panics with the last failure if none
/// comes within [`MAX_SAMPLES`] samples.
async fn next_rtt(rx: &mut mpsc::Receiver<LdnsSample>, ldns: IpAddr) -> (Duration, LdnsProbe) {
    let (rtt, kind, _ttl) = next_reply(rx, ldns).await;
    (rtt, kind)
}

/// [`next_rtt`] with the reply's TTL.
async fn next_reply(
    rx: &mut mpsc::Receiver<LdnsSample>,
    ldns: IpAddr,
) -> (Duration, LdnsProbe, Option<u8>) {
    let mut last = String::from("no sample");
    for _ in 0..MAX_SAMPLES {
        let sample = recv(rx).await;
        assert_eq!(sample.ldns, ldns);
        match sample.outcome {
            LdnsOutcome::Rtt { rtt, kind, ttl } => return (rtt, kind, ttl),
            LdnsOutcome::Failed { detail } => last = detail,
        }
    }
    panic!("no RTT sample for {ldns}; last failure: {last}");
}

/// The TTL this host's packets leave with (Linux's default 64).
fn default_ttl() -> u8 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_default_ttl")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(64)
}

/// A UDP port on `ip` that nothing listens on (bound, then closed).
fn closed_udp_port(ip: IpAddr) -> u16 {
    let s = UdpSocket::bind((ip, 0)).expect("bind a UDP port");
    s.local_addr().expect("local address").port()
}

/// A TCP port on `ip` that nothing listens on (bound, then closed).
fn closed_tcp_port(ip: IpAddr) -> u16 {
    let l = TcpListener::bind((ip, 0)).expect("bind a TCP port");
    l.local_addr().expect("local address").port()
}

#[tokio::test]
async fn udp_rtt_follows_the_per_source_delay() {
    let (ldns, far, near) = (ip(10), ip(11), ip(12));
    let emu = LdnsEmulator::start(SocketAddr::new(ldns, 0));
    emu.set_delay(far, Duration::from_millis(150));
    let port = emu.addr().port();
    let (far_tx, mut far_rx) = mpsc::channel(16);
    let (near_tx, mut near_rx) = mpsc::channel(16);
    let mut far_prober = LdnsProber::start(config(far, &[LdnsProbe::DnsUdp], port), far_tx);
    let mut near_prober = LdnsProber::start(config(near, &[LdnsProbe::DnsUdp], port), near_tx);
    far_prober.add(ldns);
    near_prober.add(ldns);

    let mut far_rtts = Vec::new();
    let mut near_rtts = Vec::new();
    for _ in 0..2 {
        let (rtt, kind) = next_rtt(&mut far_rx, ldns).await;
        assert_eq!(kind, LdnsProbe::DnsUdp);
        far_rtts.push(rtt);
        let (rtt, kind) = next_rtt(&mut near_rx, ldns).await;
        assert_eq!(kind, LdnsProbe::DnsUdp);
        near_rtts.push(rtt);
    }
    for &rtt in &far_rtts {
        assert!(
            rtt >= Duration::from_millis(150) && rtt < Duration::from_millis(1500),
            "far RTT {rtt:?} should be the emulator's 150 ms delay plus a little"
        );
    }
    let nearest = near_rtts.iter().min().copied().expect("two samples");
    let farthest = far_rtts.iter().min().copied().expect("two samples");
    assert!(
        nearest < farthest,
        "the undelayed site ({near_rtts:?}) is nearer than the delayed one ({far_rtts:?})"
    );
    // The probes were sent from the configured source addresses.
    assert!(emu.queries_from(far) >= 2);
    assert!(emu.queries_from(near) >= 2);
    let c = far_prober.counters();
    assert!(c.probes_sent >= 2 && c.samples >= 2, "{c:?}");
    assert_eq!(c.failures, 0, "{c:?}");
}

#[tokio::test]
async fn error_rcodes_still_give_samples() {
    let (ldns, udp_site, tcp_site) = (ip(20), ip(21), ip(22));
    let emu = LdnsEmulator::start(SocketAddr::new(ldns, 0));
    emu.set_rcode(5); // REFUSED, what a resolver tells a stranger
    let port = emu.addr().port();
    let (tx, mut rx) = mpsc::channel(16);
    let mut udp = LdnsProber::start(config(udp_site, &[LdnsProbe::DnsUdp], port), tx);
    udp.add(ldns);
    let (_, kind) = next_rtt(&mut rx, ldns).await;
    assert_eq!(kind, LdnsProbe::DnsUdp);
    drop(udp);

    let (tx, mut rx) = mpsc::channel(16);
    let mut tcp = LdnsProber::start(config(tcp_site, &[LdnsProbe::DnsTcp], port), tx);
    tcp.add(ldns);
    let (_, kind) = next_rtt(&mut rx, ldns).await;
    assert_eq!(kind, LdnsProbe::DnsTcp);
    // Answered over TCP, not refused: the emulator saw the query.
    assert!(emu.queries_from(tcp_site) >= 1);
    assert!(emu.queries_from(udp_site) >= 1);
}

#[tokio::test]
async fn icmp_port_unreachable_gives_a_udp_sample() {
    let (ldns, site) = (ip(30), ip(31));
    let port = closed_udp_port(ldns);
    let (tx, mut rx) = mpsc::channel(16);
    let mut prober = LdnsProber::start(config(site, &[LdnsProbe::DnsUdp], port), tx);
    prober.add(ldns);
    let (rtt, kind) = next_rtt(&mut rx, ldns).await;
    assert_eq!(kind, LdnsProbe::DnsUdp);
    assert!(
        rtt < Duration::from_secs(1),
        "{rtt:?} is within the timeout"
    );
}

#[tokio::test]
async fn tcp_reset_gives_a_tcp_sample() {
    let (ldns, site) = (ip(40), ip(41));
    let port = closed_tcp_port(ldns);
    let (tx, mut rx) = mpsc::channel(16);
    let mut prober = LdnsProber::start(config(site, &[LdnsProbe::DnsTcp], port), tx);
    prober.add(ldns);
    let (rtt, kind) = next_rtt(&mut rx, ldns).await;
    assert_eq!(kind, LdnsProbe::DnsTcp);
    assert!(
        rtt < Duration::from_secs(1),
        "{rtt:?} is within the timeout"
    );
}

#[tokio::test]
async fn the_order_is_followed_and_falls_through() {
    let (ldns, site) = (ip(50), ip(51));
    let emu = LdnsEmulator::start(SocketAddr::new(ldns, 0));
    // UDP goes to a socket that reads and never answers.
    let silent = UdpSocket::bind((ldns, 0)).expect("bind the silent socket");
    silent
        .set_read_timeout(Some(WAIT))
        .expect("read timeout on the silent socket");
    let mut cfg = config(
        site,
        &[LdnsProbe::DnsUdp, LdnsProbe::DnsTcp],
        emu.addr().port(),
    );
    cfg.dns.dest_port = Some(silent.local_addr().expect("local address").port());
    cfg.dns.timeout = Duration::from_millis(200);
    let (tx, mut rx) = mpsc::channel(16);
    let mut prober = LdnsProber::start(cfg, tx);
    prober.add(ldns);

    let (_, kind) = next_rtt(&mut rx, ldns).await;
    assert_eq!(kind, LdnsProbe::DnsTcp);
    // UDP was tried first, from the site's address.
    let mut buf = [0u8; 512];
    let (n, from) = silent.recv_from(&mut buf).expect("the UDP query came");
    assert!(n >= 12, "a DNS query");
    assert_eq!(from.ip(), site);
    assert!(emu.queries_from(site) >= 1, "TCP was answered");
    let c = prober.counters();
    assert!(c.probes_sent >= 2, "{c:?}");
}

#[tokio::test]
async fn failures_say_why_and_reconfigure_applies() {
    let (ldns, site) = (ip(60), ip(61));
    let silent = UdpSocket::bind((ldns, 0)).expect("bind the silent socket");
    let mut cfg = config(
        site,
        &[LdnsProbe::DnsUdp],
        silent.local_addr().expect("local address").port(),
    );
    cfg.dns.timeout = Duration::from_millis(200);
    let (tx, mut rx) = mpsc::channel(16);
    let mut prober = LdnsProber::start(cfg.clone(), tx);
    prober.add(ldns);
    match recv(&mut rx).await.outcome {
        LdnsOutcome::Failed { detail } => {
            assert_eq!(detail, "ldns-dns: no response within 200ms");
        }
        other => panic!("a silent resolver gives no sample: {other:?}"),
    }
    let c = prober.counters();
    assert!(c.failures >= 1 && c.samples == 0, "{c:?}");

    // Pointed at a real resolver, the running target starts giving samples.
    let emu = LdnsEmulator::start(SocketAddr::new(ldns, 0));
    cfg.dns.dest_port = Some(emu.addr().port());
    prober.reconfigure(cfg);
    let (_, kind) = next_rtt(&mut rx, ldns).await;
    assert_eq!(kind, LdnsProbe::DnsUdp);
    assert_eq!(prober.len(), 1);
}

#[tokio::test]
async fn ping_gives_a_ping_sample() {
    let (ldns, site) = (ip(70), ip(71));
    if let Err(e) = ping::check_privilege(ldns) {
        cannot_run(&format!("PING needs an ICMP socket: {e}"));
        return;
    }
    // PING comes first; should it fail, the TCP fallback (a reset from the
    // closed port 9) would give a DnsTcp sample instead.
    let (tx, mut rx) = mpsc::channel(16);
    let mut prober = LdnsProber::start(config(site, &[LdnsProbe::Ping, LdnsProbe::DnsTcp], 9), tx);
    prober.add(ldns);
    let (rtt, kind, ttl) = next_reply(&mut rx, ldns).await;
    assert_eq!(kind, LdnsProbe::Ping);
    assert!(
        rtt < Duration::from_secs(1),
        "{rtt:?} is within the timeout"
    );
    // The kernel's echo reply on loopback leaves with the default TTL and
    // crosses no router.
    assert_eq!(ttl, Some(default_ttl()), "the echo reply's TTL");
}

#[tokio::test]
async fn remove_stops_probing() {
    let (ldns, site) = (ip(80), ip(81));
    let emu = LdnsEmulator::start(SocketAddr::new(ldns, 0));
    let (tx, mut rx) = mpsc::channel(16);
    let mut prober = LdnsProber::start(config(site, &[LdnsProbe::DnsUdp], emu.addr().port()), tx);
    assert!(prober.is_empty());
    prober.add(ldns);
    prober.add(ldns);
    assert_eq!(prober.len(), 1, "add is idempotent");
    for _ in 0..2 {
        next_rtt(&mut rx, ldns).await;
    }
    let c = prober.counters();
    assert!(c.probes_sent >= 2 && c.samples >= 2, "{c:?}");
    prober.remove(ldns);
    prober.remove(ldns);
    assert!(prober.is_empty());
    // Let a query in flight land, then nothing more comes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let seen = emu.queries_from(site);
    let sent = prober.counters().probes_sent;
    tokio::time::sleep(INTERVAL * 4).await;
    assert_eq!(emu.queries_from(site), seen, "no probes after remove");
    assert_eq!(prober.counters().probes_sent, sent);
}

#[tokio::test]
async fn a_full_channel_drops_and_counts() {
    let (ldns, site) = (ip(90), ip(91));
    let emu = LdnsEmulator::start(SocketAddr::new(ldns, 0));
    let (tx, _rx) = mpsc::channel(1); // never read
    let mut prober = LdnsProber::start(config(site, &[LdnsProbe::DnsUdp], emu.addr().port()), tx);
    prober.add(ldns);
    let mut dropped = 0;
    for _ in 0..100 {
        dropped = prober.counters().dropped;
        if dropped > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(dropped > 0, "{:?}", prober.counters());
    // And the prober kept probing.
    assert!(emu.queries_from(site) >= 2);
}

#[tokio::test]
async fn the_rate_cap_makes_probes_wait() {
    let site = ip(103);
    let targets = [ip(100), ip(101), ip(102)];
    let port = closed_udp_port(targets[0]);
    let mut cfg = LdnsProberConfig::from_params(&GslbParams::default(), Some(site));
    cfg.order = vec![LdnsProbe::DnsUdp];
    cfg.dns = LdnsMonitor {
        interval: INTERVAL,
        timeout: Duration::from_millis(200),
        dest_port: Some(port),
        retries: 1,
    };
    cfg.probes_per_second = 1;
    let (tx, mut rx) = mpsc::channel(16);
    let mut prober = LdnsProber::start(cfg, tx);
    for t in targets {
        prober.add(t);
    }
    // One token a second for three targets: the later ones wait.
    for _ in 0..3 {
        recv(&mut rx).await;
    }
    let c = prober.counters();
    assert!(c.rate_limited >= 1, "{c:?}");
}

#[tokio::test]
async fn a_source_that_is_not_ours_fails_every_kind() {
    let ldns = ip(120);
    let foreign: IpAddr = "192.0.2.1".parse().expect("an address");
    if UdpSocket::bind((foreign, 0)).is_ok() {
        cannot_run("this host can bind 192.0.2.1 (ip_nonlocal_bind?)");
        return;
    }
    let order = [LdnsProbe::Ping, LdnsProbe::DnsUdp, LdnsProbe::DnsTcp];
    let (tx, mut rx) = mpsc::channel(16);
    let mut prober = LdnsProber::start(config(foreign, &order, 53), tx);
    prober.add(ldns);
    let LdnsOutcome::Failed { detail } = recv(&mut rx).await.outcome else {
        panic!("no kind can send from a foreign address");
    };
    let parts: Vec<&str> = detail.split("; ").collect();
    assert_eq!(parts.len(), 3, "{detail}");
    for (part, kind) in parts.iter().zip(order) {
        assert!(part.starts_with(kind.monitor_name()), "{detail}");
    }
    let says_why = "cannot send from 192.0.2.1";
    assert!(
        parts[1].contains(says_why) && parts[2].contains(says_why),
        "{detail}"
    );
    if ping::check_privilege(ldns).is_ok() {
        assert!(parts[0].contains(says_why), "{detail}");
    }
    assert_eq!(prober.counters().failures, 1);
}

#[tokio::test]
async fn an_ipv6_resolver_is_probed_from_the_kernels_choice() {
    let site = ip(130); // an IPv4 source cannot reach an IPv6 resolver
    let ldns: IpAddr = "::1".parse().expect("an address");
    if let Err(e) = UdpSocket::bind((ldns, 0)) {
        cannot_run(&format!("this test needs an IPv6 loopback: {e}"));
        return;
    }
    let emu = LdnsEmulator::start(SocketAddr::new(ldns, 0));
    let (tx, mut rx) = mpsc::channel(16);
    let order = [LdnsProbe::DnsUdp, LdnsProbe::DnsTcp];
    let mut prober = LdnsProber::start(config(site, &order, emu.addr().port()), tx);
    prober.add(ldns);
    // The hop limit the reply left with comes back with the sample.
    emu.set_ttl(ldns, Some(44));
    let (_, kind, ttl) = next_reply(&mut rx, ldns).await;
    assert_eq!(kind, LdnsProbe::DnsUdp);
    assert_eq!(ttl, Some(44), "the reply's hop limit");
    assert!(emu.queries_from(ldns) >= 1);
}

#[tokio::test]
async fn a_dns_probe_reports_the_ttl_its_reply_arrived_with() {
    let (ldns, far, near, tcp_site) = (ip(140), ip(141), ip(142), ip(143));
    let emu = LdnsEmulator::start(SocketAddr::new(ldns, 0));
    // "far" is 7 hops from the resolver (a Linux host's 64, less 7).
    emu.set_ttl(far, Some(57));
    emu.set_ttl(tcp_site, Some(57));
    let port = emu.addr().port();
    let (far_tx, mut far_rx) = mpsc::channel(16);
    let (near_tx, mut near_rx) = mpsc::channel(16);
    let (tcp_tx, mut tcp_rx) = mpsc::channel(16);
    let mut far_prober = LdnsProber::start(config(far, &[LdnsProbe::DnsUdp], port), far_tx);
    let mut near_prober = LdnsProber::start(config(near, &[LdnsProbe::DnsUdp], port), near_tx);
    let mut tcp_prober = LdnsProber::start(config(tcp_site, &[LdnsProbe::DnsTcp], port), tcp_tx);
    far_prober.add(ldns);
    near_prober.add(ldns);
    tcp_prober.add(ldns);
    for _ in 0..2 {
        let (_, kind, ttl) = next_reply(&mut far_rx, ldns).await;
        assert_eq!((kind, ttl), (LdnsProbe::DnsUdp, Some(57)));
        let (_, kind, ttl) = next_reply(&mut near_rx, ldns).await;
        assert_eq!((kind, ttl), (LdnsProbe::DnsUdp, Some(default_ttl())));
        // TCP cannot see the TTL, whatever the reply left with.
        let (_, kind, ttl) = next_reply(&mut tcp_rx, ldns).await;
        assert_eq!((kind, ttl), (LdnsProbe::DnsTcp, None));
    }
    // A new route: the next reply says so.
    emu.set_ttl(far, Some(120));
    let mut seen = Vec::new();
    for _ in 0..MAX_SAMPLES {
        let (_, _, ttl) = next_reply(&mut far_rx, ldns).await;
        seen.push(ttl);
        if ttl == Some(120) {
            break;
        }
    }
    assert_eq!(seen.last(), Some(&Some(120)), "{seen:?}");
}

#[tokio::test]
async fn a_port_unreachable_gives_no_ttl() {
    let (ldns, site) = (ip(150), ip(151));
    let port = closed_udp_port(ldns);
    let (tx, mut rx) = mpsc::channel(16);
    let mut prober = LdnsProber::start(config(site, &[LdnsProbe::DnsUdp], port), tx);
    prober.add(ldns);
    let (_, kind, ttl) = next_reply(&mut rx, ldns).await;
    assert_eq!((kind, ttl), (LdnsProbe::DnsUdp, None));
}

#[tokio::test]
async fn a_lossy_resolver_fails_its_share_of_cycles() {
    let (ldns, site) = (ip(160), ip(161));
    let emu = LdnsEmulator::start(SocketAddr::new(ldns, 0));
    emu.set_loss(site, 500); // every second query unanswered
    let mut cfg = config(site, &[LdnsProbe::DnsUdp], emu.addr().port());
    cfg.dns.timeout = Duration::from_millis(200);
    let (tx, mut rx) = mpsc::channel(16);
    let mut prober = LdnsProber::start(cfg, tx);
    prober.add(ldns);
    let mut outcomes = Vec::new();
    for _ in 0..4 {
        let s = recv(&mut rx).await;
        outcomes.push(matches!(s.outcome, LdnsOutcome::Rtt { .. }));
    }
    assert_eq!(outcomes, [true, false, true, false], "answered, lost, ...");
    assert_eq!(emu.dropped_from(site), 2);
    let c = prober.counters();
    assert_eq!((c.samples, c.failures), (2, 2), "{c:?}");
}

/// `-retries 2` on ldns-dns: a query lost is asked again in the same
/// cycle, so a resolver that drops every second query still gives a sample
/// every cycle (with one attempt, every second cycle fails: the test above).
#[tokio::test]
async fn retries_ask_again_before_the_cycle_fails() {
    let (ldns, site) = (ip(170), ip(171));
    let emu = LdnsEmulator::start(SocketAddr::new(ldns, 0));
    emu.set_loss(site, 500); // every second query unanswered
    let mut cfg = config(site, &[LdnsProbe::DnsUdp], emu.addr().port());
    cfg.dns.timeout = Duration::from_millis(200);
    cfg.dns.retries = 2;
    let (tx, mut rx) = mpsc::channel(16);
    let mut prober = LdnsProber::start(cfg, tx);
    prober.add(ldns);
    for n in 1..=4 {
        match recv(&mut rx).await.outcome {
            LdnsOutcome::Rtt { kind, .. } => assert_eq!(kind, LdnsProbe::DnsUdp),
            LdnsOutcome::Failed { detail } => panic!("cycle {n} failed: {detail}"),
        }
    }
    assert!(emu.dropped_from(site) >= 3, "queries 2, 4 and 6 were lost");
    let c = prober.counters();
    assert!(c.failures == 0 && c.samples >= 4, "{c:?}");
}

/// Every attempt of a silent kind is tried, and the failure says how many.
#[tokio::test]
async fn a_failed_kind_says_how_many_attempts_it_made() {
    let (ldns, site) = (ip(172), ip(173));
    let silent = UdpSocket::bind((ldns, 0)).expect("bind the silent socket");
    let mut cfg = config(
        site,
        &[LdnsProbe::DnsUdp],
        silent.local_addr().expect("local address").port(),
    );
    cfg.dns.timeout = Duration::from_millis(100);
    cfg.dns.retries = 3;
    let (tx, mut rx) = mpsc::channel(16);
    let mut prober = LdnsProber::start(cfg, tx);
    prober.add(ldns);
    match recv(&mut rx).await.outcome {
        LdnsOutcome::Failed { detail } => {
            assert_eq!(detail, "ldns-dns: no response within 100ms (3 attempts)");
        }
        other => panic!("a silent resolver gives no sample: {other:?}"),
    }
    silent
        .set_nonblocking(true)
        .expect("a non-blocking read of the silent socket");
    let mut buf = [0u8; 512];
    let mut queries = 0;
    while silent.recv_from(&mut buf).is_ok() {
        queries += 1;
    }
    assert!(queries >= 3, "3 attempts in the first cycle, got {queries}");
}

/// Seed 003's `set lb monitor ldns-tcp LDNS-TCP -interval 10 sec`: a
/// resolver that only the TCP probe reaches is probed at ldns-tcp's
/// interval, not at that of the first kind of the order. Here the UDP probe
/// (first, every 300 ms) goes unanswered and TCP answers (every 4 s): after
/// the first sample no other cycle starts for seconds. (A slow machine
/// only delays cycles, so the count below cannot be reached by load.)
#[tokio::test]
async fn a_resolver_answered_by_a_later_kind_is_probed_at_that_kinds_interval() {
    let (ldns, site) = (ip(174), ip(175));
    let emu = LdnsEmulator::start(SocketAddr::new(ldns, 0));
    let silent = UdpSocket::bind((ldns, 0)).expect("bind the silent socket");
    let mut cfg = config(
        site,
        &[LdnsProbe::DnsUdp, LdnsProbe::DnsTcp],
        emu.addr().port(),
    );
    cfg.dns.dest_port = Some(silent.local_addr().expect("local address").port());
    cfg.dns.timeout = Duration::from_millis(100);
    cfg.tcp.interval = Duration::from_secs(4);
    let (tx, mut rx) = mpsc::channel(16);
    let mut prober = LdnsProber::start(cfg, tx);
    prober.add(ldns);

    let (_, kind) = next_rtt(&mut rx, ldns).await;
    assert_eq!(kind, LdnsProbe::DnsTcp);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        emu.queries_from(site),
        1,
        "one TCP probe in the first 1.5 s: the next cycle is 4 s after the first"
    );
    assert_eq!(prober.counters().samples, 1);
    // And the next cycle comes, by TCP again.
    let (_, kind) = next_rtt(&mut rx, ldns).await;
    assert_eq!(kind, LdnsProbe::DnsTcp);
}
