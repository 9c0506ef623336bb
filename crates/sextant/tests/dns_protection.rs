//! DNS protections of the real server over real sockets: the EDNS and
//! header rules, NSID, cookies, response rate limiting and the TCP limits
//! (idle and half-open connections closed, a connection cap, pipelining,
//! garbage), checked with dig and raw packets, and applied by a reload.

use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

/// app.example.com: round robin over two UP services, plus `extra` lines.
fn config(net: &Net, extra: &str) -> String {
    let mut c = net.conf_preamble();
    for i in [1u8, 2] {
        c.push_str(&format!(
            "add gslb service s{i} {} HTTP 80 -siteName site1\n",
            net.svc_ip(i)
        ));
    }
    c.push_str("add gslb vserver vs HTTP -lbMethod ROUNDROBIN\n");
    c.push_str("bind gslb vserver vs -serviceName s1\n");
    c.push_str("bind gslb vserver vs -serviceName s2\n");
    c.push_str("bind gslb vserver vs -domainName app.example.com -TTL 30\n");
    c.push_str(extra);
    c
}

fn dig(s: SocketAddr, args: &[&str]) -> String {
    sextant_test_support::dns::dig(None, s, args)
}

/// A raw query for app.example.com A with `additional` (ARCOUNT `ar`).
fn raw_query(id: u16, flags: u16, ar: u16, additional: &[u8]) -> Vec<u8> {
    let mut m = id.to_be_bytes().to_vec();
    m.extend_from_slice(&flags.to_be_bytes());
    m.extend_from_slice(&[0, 1, 0, 0, 0, 0]);
    m.extend_from_slice(&ar.to_be_bytes());
    m.extend_from_slice(b"\x03app\x07example\x03com\x00\x00\x01\x00\x01");
    m.extend_from_slice(additional);
    m
}

fn opt(options: &[u8]) -> Vec<u8> {
    let mut o = vec![0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0];
    o.extend_from_slice(&(options.len() as u16).to_be_bytes());
    o.extend_from_slice(options);
    o
}

#[test]
fn edns_and_header_rules_hold_on_the_wire() {
    let net = Net::new("prot_edns");
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net, ""));
    let at = net.dns_addr();
    let noedns = dig(at, &["+noedns", "app.example.com", "A"]);
    assert!(noedns.contains("status: NOERROR"), "{noedns}");
    assert!(
        !noedns.contains("OPT PSEUDOSECTION"),
        "no OPT in, none out:\n{noedns}"
    );
    let v1 = dig(
        at,
        &["+edns=1", "+noednsnegotiation", "app.example.com", "A"],
    );
    assert!(v1.contains("status: BADVERS"), "{v1}");
    assert!(v1.contains("EDNS: version: 0"), "{v1}");
    let unknown = dig(
        at,
        &[
            "+ednsopt=65001:abcd",
            "+ednsflags=0x7fff",
            "app.example.com",
            "A",
        ],
    );
    assert!(unknown.contains("status: NOERROR"), "{unknown}");
    let pseudo = unknown
        .split("OPT PSEUDOSECTION")
        .nth(1)
        .and_then(|p| p.split("QUESTION SECTION").next())
        .unwrap_or_else(|| panic!("no OPT in the answer:\n{unknown}"));
    assert!(
        !pseudo.contains("65001") && !pseudo.contains("OPT="),
        "unknown option echoed:\n{unknown}"
    );
    assert!(
        unknown.contains("EDNS: version: 0, flags:;"),
        "flags echoed:\n{unknown}"
    );
    let op15 = dig(at, &["+opcode=15", "app.example.com", "A"]);
    assert!(op15.contains("status: NOTIMP"), "{op15}");
    let t = dig(at, &["app.example.com", "TYPE65280"]);
    assert!(t.contains("status: NOERROR") && t.contains(" aa"), "{t}");
    assert!(
        t.contains("ANSWER: 0") && t.contains("SOA"),
        "NODATA with SOA:\n{t}"
    );
    // Two OPT records: FORMERR.
    let two = [opt(&[]), opt(&[])].concat();
    let r = s
        .dns
        .raw_udp(&raw_query(7, 0x0100, 2, &two), Duration::from_secs(2))
        .unwrap()
        .expect("answered");
    assert_eq!(r[3] & 0x0f, 1, "FORMERR");
}

#[test]
fn nsid_cookies_and_a_reload_with_dig() {
    let net = Net::new("prot_nsid");
    let extra = "set dns parameter -nsid node-a -dnsCookie ENABLED\n";
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net, extra));
    let at = net.dns_addr();
    let out = dig(at, &["+nsid", "app.example.com", "A"]);
    assert!(out.contains("NSID") && out.contains("node-a"), "{out}");
    let out = dig(at, &["app.example.com", "A"]);
    assert!(!out.contains("NSID"), "not asked, not sent:\n{out}");

    // dig +cookie: a server cookie comes back; sent again, it is valid.
    let out = dig(at, &["+cookie", "app.example.com", "A"]);
    let line = out
        .lines()
        .find(|l| l.contains("COOKIE:"))
        .unwrap_or_else(|| panic!("no COOKIE in:\n{out}"));
    assert!(line.contains("(good)"), "{line}");
    let hex = line
        .split_whitespace()
        .nth(2)
        .expect("cookie hex")
        .to_string();
    assert_eq!(hex.len(), 48, "client 8 + server 16 octets: {line}");
    assert_eq!(&hex[16..18], "01", "RFC 9018 version 1: {line}");
    let before = s.status().dns.cookie_valid;
    let again = dig(at, &[&format!("+cookie={hex}"), "app.example.com", "A"]);
    assert!(again.contains("status: NOERROR"), "{again}");
    assert_eq!(s.status().dns.cookie_valid, before + 1);
    // A forged server cookie: answered, with a fresh cookie, not valid.
    let mut forged = hex.clone();
    forged.replace_range(40..42, if &hex[40..42] == "00" { "11" } else { "00" });
    let f = dig(at, &[&format!("+cookie={forged}"), "app.example.com", "A"]);
    assert!(
        f.contains("status: NOERROR") && f.contains("COOKIE:"),
        "{f}"
    );
    assert_eq!(s.status().dns.cookie_invalid, 1);
    // Malformed: FORMERR.
    let bad = s
        .dns
        .raw_udp(
            &raw_query(9, 0x0100, 1, &opt(&[0, 10, 0, 5, 1, 2, 3, 4, 5])),
            Duration::from_secs(2),
        )
        .unwrap()
        .expect("answered");
    assert_eq!(bad[3] & 0x0f, 1, "FORMERR for a 5-octet cookie");

    // A reload changes the NSID.
    let generation = s.generation();
    s.reload(&config(&net, "set dns parameter -nsid node-b\n"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while s.generation() == generation && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = dig(at, &["+nsid", "+cookie", "app.example.com", "A"]);
    assert!(out.contains("node-b"), "{out}");
    assert!(
        !out.contains("COOKIE:"),
        "cookies off after the reload:\n{out}"
    );
}

/// Sends `n` copies of `q` (ids 0..n) from `source` as fast as it can, then
/// collects replies for a second; returns (answered, truncated, how long
/// the sending took).
fn flood(server: SocketAddr, source: Ipv4Addr, q: &[u8], n: u16) -> (usize, usize, Duration) {
    let sock = UdpSocket::bind((source, 0)).expect("bind");
    sock.connect(server).expect("connect");
    let start = Instant::now();
    for id in 0..n {
        let mut m = q.to_vec();
        m[..2].copy_from_slice(&id.to_be_bytes());
        sock.send(&m).expect("send");
    }
    let sent = start.elapsed();
    let (mut answered, mut truncated) = (0, 0);
    let end = Instant::now() + Duration::from_secs(1);
    let mut buf = [0u8; 2048];
    sock.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    while Instant::now() < end {
        match sock.recv(&mut buf) {
            Ok(len) if len >= 12 => {
                if buf[2] & 0x02 != 0 {
                    assert_eq!(&buf[6..8], &[0, 0], "a slipped answer has no records");
                    truncated += 1;
                } else {
                    assert_eq!(&buf[6..8], &[0, 1], "one answer record");
                    answered += 1;
                }
            }
            Ok(_) => {}
            Err(_) => {}
        }
    }
    (answered, truncated, sent)
}

#[test]
fn a_flood_is_held_to_the_limit_but_not_exempt_or_cookie_clients() {
    let net = Net::new("prot_rrl");
    let extra = "set dns parameter -rrlResponsesPerSecond 5 -rrlSlip 2 -rrlExempt 127.201.0.0/16 -dnsCookie ENABLED\n";
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net, extra));
    let at = net.dns_addr();
    let plain = raw_query(0, 0x0100, 0, &[]);
    let (answered, truncated, sent) = flood(at, net.client_ip(0), &plain, 300);
    // The bucket holds 5 and refills at 5 per second while the flood lasts.
    let allowed = 5 + (sent.as_secs_f64() * 5.0).ceil() as usize + 1;
    assert!(
        (5..=allowed).contains(&answered),
        "{answered} answered, at most {allowed} allowed"
    );
    let st = s.status().dns;
    let limited = st.rate_limited as usize;
    eprintln!(
        "flood of 300 from one /24 at 5/s slip 2: {answered} answered, {truncated} truncated, {limited} limited, sent in {sent:?}"
    );
    assert_eq!(
        limited + answered,
        300,
        "every query answered or limited: {st:?}"
    );
    assert_eq!(st.slipped as usize, truncated, "{st:?}");
    assert!(
        truncated.abs_diff(limited / 2) <= 1,
        "slip 2: half the limited ones truncated ({truncated} of {limited})"
    );

    // An exempt client is never limited.
    let (answered, truncated, _) = flood(at, net.client_ip(1), &plain, 200);
    assert_eq!((answered, truncated), (200, 0));

    // A client with a valid cookie is never limited: learn one over TCP
    // (never limited), then flood with it.
    let src = net.client_ip(2);
    let first = raw_query(1, 0x0100, 1, &opt(&[0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8]));
    let sock = UdpSocket::bind((src, 0)).unwrap();
    sock.connect(at).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    sock.send(&first).unwrap();
    let mut buf = [0u8; 2048];
    let n = sock
        .recv(&mut buf)
        .expect("the first query is within the limit");
    let reply = &buf[..n];
    let at_cookie = reply
        .windows(4)
        .rposition(|w| w == [0, 10, 0, 24])
        .expect("a 24-octet COOKIE option in the reply");
    let cookie = reply[at_cookie + 4..at_cookie + 28].to_vec();
    let mut option = vec![0, 10, 0, 24];
    option.extend_from_slice(&cookie);
    let with_cookie = raw_query(0, 0x0100, 1, &opt(&option));
    let (answered, truncated, _) = flood(at, src, &with_cookie, 200);
    assert_eq!(
        (answered, truncated),
        (200, 0),
        "valid cookie: never limited"
    );
    // The same client without its server cookie is limited.
    let client_only = raw_query(0, 0x0100, 1, &opt(&[0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8]));
    let (answered, _, sent) = flood(at, src, &client_only, 100);
    assert!(
        answered <= 5 + (sent.as_secs_f64() * 5.0).ceil() as usize + 1,
        "{answered}"
    );
    // TCP is never limited.
    for _ in 0..20 {
        let r = s
            .dns
            .tcp(&build_query("app.example.com", RecordType::A, None));
        assert_eq!(r.answers.len(), 1);
    }
}

/// Reads until EOF or `limit`; true when the server closed the connection.
fn closed_within(stream: &mut TcpStream, limit: Duration) -> bool {
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 512];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn tcp_idle_half_open_cap_pipelining_and_garbage() {
    let net = Net::new("prot_tcp");
    let extra = "set dns parameter -tcpIdleTimeout 1 SEC -maxTCPConnections 4\n";
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net, extra));
    let at = net.dns_addr();

    // Pipelining: 1,000 queries in one write, all answered, in order.
    let mut batch = Vec::new();
    for id in 0..1000u16 {
        let q = raw_query(id, 0x0100, 0, &[]);
        batch.extend_from_slice(&(q.len() as u16).to_be_bytes());
        batch.extend_from_slice(&q);
    }
    let mut c = TcpStream::connect(at).unwrap();
    c.write_all(&batch).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    for id in 0..1000u16 {
        let mut len = [0u8; 2];
        c.read_exact(&mut len).unwrap();
        let mut msg = vec![0u8; usize::from(u16::from_be_bytes(len))];
        c.read_exact(&mut msg).unwrap();
        assert_eq!(u16::from_be_bytes([msg[0], msg[1]]), id, "in order");
        assert_eq!(msg[3] & 0x0f, 0);
    }
    drop(c);

    // Idle (nothing sent) and half-open (a partial query, then silence)
    // connections are closed after the idle timeout, while UDP answers.
    let mut idle = TcpStream::connect(at).unwrap();
    let mut half = TcpStream::connect(at).unwrap();
    half.write_all(&[0, 40, 0, 1, 2, 3, 4]).unwrap();
    assert_eq!(s.dns.query_a("app.example.com").len(), 1, "UDP meanwhile");
    assert!(
        closed_within(&mut idle, Duration::from_secs(10)),
        "idle closed"
    );
    assert!(
        closed_within(&mut half, Duration::from_secs(10)),
        "half-open closed"
    );
    assert!(s.status().dns.tcp_idle_closed >= 2);

    // The cap: four held open, the fifth is closed at once (counted), and
    // UDP keeps answering.
    let held: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(at).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut fifth = TcpStream::connect(at).unwrap();
    assert!(closed_within(&mut fifth, Duration::from_secs(10)));
    assert!(s.status().dns.tcp_rejected >= 1, "{:?}", s.status().dns);
    assert_eq!(s.dns.query_a("app.example.com").len(), 1, "UDP meanwhile");
    drop(held);

    // Garbage in a length-prefixed message: FORMERR or closed; then a
    // valid query on a new connection is answered.
    let mut g = TcpStream::connect(at).unwrap();
    g.write_all(&[0, 20]).unwrap();
    g.write_all(&[0xde; 20]).unwrap();
    g.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut len = [0u8; 2];
    if g.read_exact(&mut len).is_ok() {
        let mut msg = vec![0u8; usize::from(u16::from_be_bytes(len))];
        g.read_exact(&mut msg).unwrap();
        assert_eq!(msg[3] & 0x0f, 1, "FORMERR");
    }
    drop(g);
    // The server counts a connection until it has seen it close: the four
    // held ones and the garbage one may still fill the cap for a moment,
    // and a connection over the cap is reset, as checked above.
    let q = build_query("app.example.com", RecordType::A, None);
    eventually_ok(EVENTUALLY, "a valid query over TCP answered", || {
        let r = s.dns.try_tcp(&q)?;
        match r.answers.len() {
            1 => Ok(()),
            n => Err(format!("{n} answers")),
        }
    });
}

/// The native syntax: `[dns]` with `[dns.rrl]` (slip 1: every limited
/// answer truncated) and `[dns.cookies]`, on the zone apex's SOA.
#[test]
fn native_toml_settings_take_effect() {
    let net = Net::new("prot_toml");
    let mut c = net.toml_preamble();
    c.push_str(
        "\n[dns]\nnsid_hex = \"6e6f64652d74\"\ntcp_idle_timeout = \"2s\"\n\n\
         [dns.rrl]\nresponses_per_second = 5\nslip = 1\n\n\
         [dns.cookies]\nsecret_rotation = \"10m\"\n",
    );
    let _s = Server::start(SEXTANT, &net, Syntax::Toml, &c);
    let at = net.dns_addr();
    let out = dig(at, &["+nsid", "+cookie", "example.com", "SOA"]);
    assert!(out.contains("node-t"), "{out}");
    assert!(out.contains("COOKIE:") && out.contains("(good)"), "{out}");
    // 100 plain queries from one address: at most the burst and refill
    // answered, every other one truncated (slip 1), none dropped.
    let mut q = Vec::from(&b"\x00\x00\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"[..]);
    q.extend_from_slice(b"\x07example\x03com\x00\x00\x06\x00\x01");
    let (answered, truncated, sent) = flood(at, net.client_ip(3), &q, 100);
    let allowed = 5 + (sent.as_secs_f64() * 5.0).ceil() as usize + 1;
    assert!(
        answered <= allowed,
        "{answered} answered, {allowed} allowed"
    );
    assert_eq!(answered + truncated, 100, "slip 1 drops nothing");
}
