//! The XDP path (`--xdp-interface`) end to end: the real binary in a
//! network namespace of the test's own, reached over a veth pair from a
//! client namespace, the way it runs behind a NIC. UDP queries to the DNS
//! address are answered from the AF_XDP socket (counted in `queries_xdp`);
//! TCP, other ports and ICMP still reach the kernel; garbage does not stop
//! it; the program goes when the process does; a second process cannot
//! take the interface over.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));
const SERVER_V4: Ipv4Addr = Ipv4Addr::new(10, 77, 50, 1);
const CLIENT_V4: Ipv4Addr = Ipv4Addr::new(10, 77, 50, 2);
const SERVER_V6: &str = "fd77:50::1";
const CLIENT_V6: &str = "fd77:50::2";
/// The site's DNS port (SiteServer's `--dns-listen SITE_IP:DNS_PORT`).
const DNS_PORT_SITE: u16 = DNS_PORT;

/// One site: two UP services and one whose TCP monitor fails (its address
/// is not routed from the namespace), round robin.
fn config() -> String {
    format!(
        "add gslb site dc1 {SERVER_V4} -siteType LOCAL -metricExchange DISABLED
add gslb service a1 198.51.100.1 HTTP 80 -siteName dc1
add gslb service a2 198.51.100.2 HTTP 80 -siteName dc1
add gslb service a3 198.51.100.3 TCP 8080 -siteName dc1
bind gslb service a3 -monitorName tcp
add gslb vserver gv HTTP -lbMethod ROUNDROBIN
bind gslb vserver gv -serviceName a1
bind gslb vserver gv -serviceName a2
bind gslb vserver gv -serviceName a3
bind gslb vserver gv -domainName app.example.com -TTL 30
"
    )
}

/// The server and client namespaces joined by `eth0`, with IPv4 and IPv6
/// addresses at both ends.
fn lab(tag: &str) -> Option<(Arc<Netns>, Arc<Netns>)> {
    let server = Netns::create(&format!("{tag}-s"))?;
    let client = Netns::create(&format!("{tag}-c"))?;
    server.veth_to(
        &client,
        "eth0",
        &[&format!("{SERVER_V4}/24"), &format!("{SERVER_V6}/64")],
        &[&format!("{CLIENT_V4}/24"), &format!("{CLIENT_V6}/64")],
    );
    Some((server, client))
}

fn start(server: &Arc<Netns>, scratch: &Scratch, extra: &[&str]) -> SiteServer {
    SiteServer::start_with(
        SEXTANT,
        &scratch.0,
        "dc1",
        SERVER_V4,
        &config(),
        Some(Arc::clone(server)),
        extra,
    )
}

/// Waits until `dns` answers a UDP query from the client namespace.
fn wait_answering(client: &Netns, dns: SocketAddr) {
    let q = build_query("app.example.com", RecordType::A, None);
    assert!(
        wait_until(READY, || client
            .run(|| Dns::new(dns).try_udp_from_ip(client_ip(dns), &q))
            .is_ok()),
        "{dns} never answered"
    );
}

fn client_ip(dns: SocketAddr) -> IpAddr {
    match dns {
        SocketAddr::V4(_) => IpAddr::V4(CLIENT_V4),
        SocketAddr::V6(_) => IpAddr::V6(CLIENT_V6.parse().unwrap()),
    }
}

/// What `ip link show eth0` says in `ns`.
fn link(ns: &Netns) -> String {
    String::from_utf8_lossy(&ns.exec_ok(&["ip", "link", "show", "eth0"]).stdout).into_owned()
}

/// `n` UDP queries for app.example.com from the client namespace; the
/// addresses answered.
fn ask(client: &Netns, dns: SocketAddr, n: usize) -> BTreeSet<Ipv4Addr> {
    client.run(|| {
        let dns = Dns::new(dns);
        let q = build_query("app.example.com", RecordType::A, Some(1232));
        (0..n)
            .flat_map(|_| a_records(&dns.udp_from_ip(client_ip(dns.server), &q)))
            .collect()
    })
}

/// [`ask`] `n` times: the answers are exactly the UP services, and every
/// query went through the XDP path. Returns the counters after.
fn ask_through_xdp(site: &SiteServer, client: &Netns, dns: SocketAddr, n: u64) -> DnsCounters {
    let before = site.status().dns;
    assert_eq!(ask(client, dns, n as usize), up_services());
    let after = site.status().dns;
    assert!(
        after.queries_xdp >= before.queries_xdp + n,
        "queries did not go through the XDP path: {before:?} -> {after:?}"
    );
    after
}

fn up_services() -> BTreeSet<Ipv4Addr> {
    [
        Ipv4Addr::new(198, 51, 100, 1),
        Ipv4Addr::new(198, 51, 100, 2),
    ]
    .into()
}

#[test]
fn xdp_answers_udp_and_leaves_the_rest_to_the_kernel() {
    let Some((server, client)) = lab("xdp4") else {
        return;
    };
    let scratch = Scratch::new("xdp4");
    let mut site = start(&server, &scratch, &["--xdp-interface", "eth0"]);
    let dns = SocketAddr::new(IpAddr::V4(SERVER_V4), DNS_PORT_SITE);
    let shown = link(&server);
    assert!(
        shown.contains("prog/xdp") || shown.contains(" xdp "),
        "no XDP program on eth0: {shown}"
    );
    assert!(
        wait_until(EVENTUALLY, || site
            .expect_service("a3", State::Down)
            .is_ok()),
        "a3's monitor never failed"
    );
    wait_answering(&client, dns);

    // UDP: every answer is an UP service, both are seen, all through XDP.
    let before = site.status().dns;
    let after = ask_through_xdp(&site, &client, dns, 40);
    assert!(after.queries_udp >= before.queries_udp + 40);
    assert!(site.log().contains("DNS answering UDP through XDP"));

    // TCP is the kernel's: answered by the TCP listener, not counted by XDP.
    let tcp = client.run(|| {
        let q = build_query("app.example.com", RecordType::A, None);
        a_records(&Dns::new(dns).tcp(&q))
            .into_iter()
            .collect::<BTreeSet<_>>()
    });
    assert!(!tcp.is_empty() && tcp.is_subset(&up_services()), "{tcp:?}");
    let now = site.status().dns;
    assert!(now.queries_tcp > after.queries_tcp);
    assert_eq!(now.queries_xdp, after.queries_xdp, "TCP went through XDP");

    // Another UDP port on the same address, and ICMP: still the kernel's.
    let echo = server.run(|| UdpSocket::bind((SERVER_V4, 5454)).expect("bind echo"));
    echo.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let echoed = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        let (n, from) = echo.recv_from(&mut buf).expect("echo receives");
        echo.send_to(&buf[..n], from).expect("echo sends");
    });
    let reply = client.run(|| {
        let s = UdpSocket::bind((CLIENT_V4, 0)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.send_to(b"not dns", (SERVER_V4, 5454)).unwrap();
        let mut buf = [0u8; 64];
        let (n, _) = s.recv_from(&mut buf).expect("the echo answers");
        buf[..n].to_vec()
    });
    echoed.join().unwrap();
    assert_eq!(reply, b"not dns");
    let ping = client.exec(&["ping", "-c", "1", "-W", "2", &SERVER_V4.to_string()]);
    assert!(ping.status.success(), "ping: {ping:?}");

    // Garbage to the DNS port: dropped or answered with an error, never
    // stopping the path.
    client.run(|| {
        let s = UdpSocket::bind((CLIENT_V4, 0)).unwrap();
        for i in 0..500u32 {
            let junk: Vec<u8> = (0..(i % 70)).map(|k| (k * 31 + i) as u8).collect();
            let _ = s.send_to(&junk, dns);
        }
    });
    assert_eq!(ask(&client, dns, 10), up_services());
    assert!(site.is_running());

    // The program goes with the process.
    site.signal(libc::SIGTERM);
    assert!(
        site.wait_exit(Duration::from_secs(10)).is_some(),
        "did not stop"
    );
    let shown = link(&server);
    assert!(!shown.contains("prog/xdp"), "still attached: {shown}");
}

#[test]
fn xdp_answers_over_ipv6() {
    let Some((server, client)) = lab("xdp6") else {
        return;
    };
    let scratch = Scratch::new("xdp6");
    // DNS only where the file's ADNS service says: IPv6.
    let dns: SocketAddr = format!("[{SERVER_V6}]:53").parse().unwrap();
    let config = format!("{}add service adns6 {SERVER_V6} ADNS 53\n", config());
    let site = SiteServer::start_as_written_with(
        SEXTANT,
        &scratch.0,
        "dc1",
        SERVER_V4,
        dns,
        &config,
        Some(Arc::clone(&server)),
        &["--xdp-interface", "eth0"],
    );
    wait_answering(&client, dns);
    ask_through_xdp(&site, &client, dns, 30);
}

/// A burst larger than a batch (200 queries in one sendmmsg) is answered
/// at once. In copy mode the kernel sends at most 32 frames per kick; when
/// the path kicked once per batch, the rest of a burst's answers waited
/// for the next query or the idle poll's second. The window is under that
/// second, and three bursts get the chance, so a slow machine does not
/// fail it while the old behaviour did every time.
#[test]
fn a_burst_is_answered_at_once() {
    let Some((server, client)) = lab("xdpb") else {
        return;
    };
    let scratch = Scratch::new("xdpb");
    let site = start(&server, &scratch, &["--xdp-interface", "eth0"]);
    let dns = SocketAddr::new(IpAddr::V4(SERVER_V4), DNS_PORT_SITE);
    wait_answering(&client, dns);
    let q = build_query("app.example.com", RecordType::A, Some(1232));
    let before = site.status().dns;
    let answered: Vec<usize> = (0..3)
        .map(|_| {
            client.run(|| {
                Dns::new(dns)
                    .burst_from(IpAddr::V4(CLIENT_V4), &q, 200, Duration::from_millis(700))
                    .expect("burst")
            })
        })
        .collect();
    assert!(
        answered.contains(&200),
        "answered of 200 per burst: {answered:?}"
    );
    let after = site.status().dns;
    assert!(
        after.queries_xdp >= before.queries_xdp + 200,
        "the bursts did not go through the XDP path: {before:?} -> {after:?}"
    );
}

#[test]
fn a_second_process_cannot_take_the_interface() {
    let Some((server, client)) = lab("xdp2") else {
        return;
    };
    let scratch = Scratch::new("xdp2");
    let first = start(&server, &scratch, &["--xdp-interface", "eth0"]);
    let dns = SocketAddr::new(IpAddr::V4(SERVER_V4), DNS_PORT_SITE);
    wait_answering(&client, dns);
    assert_eq!(ask(&client, dns, 10), up_services());
    // Another instance on another port of the same interface.
    let out = std::process::Command::new("ip")
        .args([
            "netns",
            "exec",
            &server.name,
            SEXTANT.0,
            "serve",
            "--config",
        ])
        .arg(scratch.write("second.conf", &config()))
        .args(["--local-site", "dc1", "--api-listen", "127.0.0.1:8181"])
        .args(["--dns-listen", "10.77.50.1:5301", "--xdp-interface", "eth0"])
        .output()
        .expect("run the second sextant");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the second one started: {err}");
    assert!(
        err.contains("--xdp-interface eth0: cannot start the XDP path")
            && (err.contains("busy") || err.contains("another XDP program")),
        "{err}"
    );
    // The first still answers through XDP.
    ask_through_xdp(&first, &client, dns, 10);
}

#[test]
fn an_unknown_interface_is_a_clear_error() {
    let net = Net::new("xdp_unknown_interface");
    let scratch = Scratch::new("xdp-unknown");
    let dns = format!("{}:{}", net.server_ip(), DNS_PORT);
    let api = net.api_addr().to_string();
    let out = SEXTANT.run(&[
        "serve",
        "--config",
        &scratch.write("site.conf", &config()),
        "--local-site",
        "dc1",
        "--dns-listen",
        &dns,
        "--api-listen",
        &api,
        "--xdp-interface",
        "no-such-if0",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("no network interface named \"no-such-if0\""),
        "{err}"
    );
}

#[test]
fn xdp_options_need_the_interface() {
    let scratch = Scratch::new("xdp-options");
    let config = scratch.write("site.conf", &config());
    for flag in ["--xdp-attach", "--xdp-bind"] {
        let value = if flag == "--xdp-attach" {
            "native"
        } else {
            "copy"
        };
        let out = SEXTANT.run(&["serve", "--config", &config, flag, value]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flag} alone was accepted");
        assert!(err.contains("--xdp-interface"), "{flag}: {err}");
    }
}
