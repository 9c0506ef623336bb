//! Every probe kind against real sockets on 127.0.0.1.

mod common;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use sextant_core::{DnsCheck, DnsQueryType, HttpCheck, MonitorKind, UdpCheck};
use sextant_health::probe;
use sextant_test_support::ci::cannot_run;
use tokio::net::TcpListener;

fn http(request: &str, codes: &[(u16, u16)], body: Option<&str>) -> HttpCheck {
    HttpCheck {
        request: request.into(),
        status_codes: codes.to_vec(),
        body_contains: body.map(str::to_string),
        custom_headers: String::new(),
    }
}

// ---------------------------------------------------------------- TCP

#[tokio::test]
async fn tcp_up_then_down() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let m = monitor(MonitorKind::Tcp, 500);

    let up = probe(&m, addr).await;
    assert!(up.success, "{up:?}");
    assert!(up.response_time.is_some());
    assert!(
        up.detail.starts_with(&format!("TCP connect to {addr} in ")),
        "{}",
        up.detail
    );

    drop(listener);
    let down = probe(&m, addr).await;
    assert!(!down.success);
    assert_eq!(down.detail, format!("TCP connect to {addr} refused"));
    assert_eq!(down.response_time, None);
}

// ---------------------------------------------------------------- HTTP

#[tokio::test]
async fn http_200_passes_and_sends_the_request() {
    let (addr, seen) = http_server(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").await;
    let r = probe(
        &monitor(MonitorKind::Http(http("GET /health", &[], None)), 500),
        addr,
    )
    .await;
    assert!(r.success, "{r:?}");
    assert!(r.detail.starts_with("HTTP 200 in "), "{}", r.detail);
    let req = seen.lock().unwrap()[0].clone();
    assert_eq!(
        req,
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nUser-Agent: sextant-monitor\r\n\r\n"
    );
}

#[tokio::test]
async fn http_503_fails() {
    let (addr, _) = http_server(b"HTTP/1.1 503 Service Unavailable\r\n\r\n").await;
    let r = probe(&monitor(MonitorKind::Http(http("", &[], None)), 500), addr).await;
    assert!(!r.success);
    assert_eq!(r.detail, "HTTP 503 not in 200");
}

#[tokio::test]
async fn http_expected_ranges() {
    let (addr, _) = http_server(b"HTTP/1.1 302 Found\r\nLocation: /x\r\n\r\n").await;
    let in_range = monitor(MonitorKind::Http(http("GET /", &[(300, 399)], None)), 500);
    assert!(probe(&in_range, addr).await.success);
    let default = monitor(MonitorKind::Http(http("GET /", &[], None)), 500);
    assert_eq!(probe(&default, addr).await.detail, "HTTP 302 not in 200");
    let others = monitor(
        MonitorKind::Http(http("GET /", &[(200, 200), (400, 499)], None)),
        500,
    );
    assert_eq!(
        probe(&others, addr).await.detail,
        "HTTP 302 not in 200,400-499"
    );
}

#[tokio::test]
async fn http_body_match_and_mismatch() {
    let (addr, _) =
        http_server(b"HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\nstatus: ready\n").await;
    let ok = monitor(MonitorKind::Http(http("GET /", &[], Some("ready"))), 500);
    let r = probe(&ok, addr).await;
    assert!(r.success, "{r:?}");
    let bad = monitor(MonitorKind::Http(http("GET /", &[], Some("healthy"))), 500);
    let r = probe(&bad, addr).await;
    assert!(!r.success);
    assert_eq!(r.detail, "HTTP 200 body does not contain \"healthy\"");
}

#[tokio::test]
async fn http_chunked_body_is_decoded() {
    // "rea" + "dy" split across chunks.
    let (addr, _) = http_server(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nrea\r\n2\r\ndy\r\n0\r\n\r\n",
    )
    .await;
    let m = monitor(MonitorKind::Http(http("GET /", &[], Some("ready"))), 500);
    let r = probe(&m, addr).await;
    assert!(r.success, "{r:?}");
}

#[tokio::test]
async fn http_garbage_and_empty_replies_fail() {
    let (addr, _) = http_server(b"SSH-2.0-OpenSSH_9.6\r\n").await;
    let m = monitor(MonitorKind::Http(http("GET /", &[], None)), 500);
    let r = probe(&m, addr).await;
    assert!(!r.success);
    assert!(
        r.detail
            .starts_with("malformed HTTP response: bad status line"),
        "{}",
        r.detail
    );

    let (addr, _) = http_server(b"").await;
    let r = probe(&m, addr).await;
    assert!(!r.success);
    assert_eq!(
        r.detail,
        "malformed HTTP response: connection closed without a response"
    );
}

/// The probe's timeout is a tokio timer: on paused time it fires after
/// exactly 300 ms of virtual time, however loaded the machine is.
#[tokio::test(start_paused = true)]
async fn http_timeout_when_the_server_never_answers() {
    let addr = silent_tcp_server().await;
    let m = monitor(MonitorKind::Http(http("GET /", &[], None)), 300);
    let started = tokio::time::Instant::now();
    let r = probe(&m, addr).await;
    assert!(!r.success);
    assert_eq!(r.detail, "no response within 300ms");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(290) && took < Duration::from_secs(2),
        "{took:?}"
    );
}

// ---------------------------------------------------------------- HTTPS

/// A TLS server with a freshly generated self-signed certificate that
/// answers each request with `response`.
async fn https_server(response: &'static [u8]) -> SocketAddr {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let key = rcgen::generate_simple_self_signed(vec!["backend.example".to_string()]).unwrap();
    let cert = CertificateDer::from(key.cert.der().to_vec());
    let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.signing_key.serialize_der()));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert], private)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(mut tls) = acceptor.accept(tcp).await {
                    answer(&mut tls, response, &Seen::default()).await;
                }
            });
        }
    });
    addr
}

#[tokio::test]
async fn https_with_self_signed_certificate() {
    let addr = https_server(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").await;
    let m = monitor(MonitorKind::Https(http("GET /", &[], Some("ok"))), 2000);
    let r = probe(&m, addr).await;
    assert!(r.success, "{r:?}");
    assert!(r.detail.starts_with("HTTP 200 in "), "{}", r.detail);

    let addr = https_server(b"HTTP/1.1 500 Internal Server Error\r\n\r\n").await;
    let m = monitor(MonitorKind::Https(http("GET /", &[], None)), 2000);
    assert_eq!(probe(&m, addr).await.detail, "HTTP 500 not in 200");
}

#[tokio::test]
async fn https_against_plain_http_fails_the_handshake() {
    use tokio::io::AsyncWriteExt;
    // A plaintext server that talks first (it cannot parse a ClientHello).
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
        }
    });
    let m = monitor(MonitorKind::Https(http("GET /", &[], None)), 1000);
    let r = probe(&m, addr).await;
    assert!(!r.success);
    assert!(
        r.detail
            .starts_with(&format!("TLS handshake with {addr} failed")),
        "{}",
        r.detail
    );
}

// ---------------------------------------------------------------- DNS

fn dns_check(expect_addresses: &[&str], expect_rcodes: &[u8]) -> DnsCheck {
    DnsCheck {
        query: "gslb.example.com".into(),
        query_type: DnsQueryType::A,
        expect_addresses: expect_addresses
            .iter()
            .map(|a| a.parse().unwrap())
            .collect(),
        expect_rcodes: expect_rcodes.to_vec(),
    }
}

/// Answers a query with `rcode` and A records for `answers`, the owner
/// names compressed to the question.
fn dns_reply(query: &[u8], rcode: u8, answers: &[IpAddr]) -> Vec<u8> {
    let mut out = query.to_vec();
    out[2] = 0x84;
    out[3] = rcode;
    out[6..8].copy_from_slice(&(answers.len() as u16).to_be_bytes());
    for a in answers {
        let IpAddr::V4(v4) = a else { unreachable!() };
        out.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4]);
        out.extend_from_slice(&v4.octets());
    }
    out
}

#[tokio::test]
async fn dns_rcode_and_address_checks() {
    let good: IpAddr = "192.0.2.10".parse().unwrap();
    let addr = udp_server(move |q| {
        assert_eq!(q[2] & 0x01, 0, "RD must be 0");
        Some(dns_reply(q, 0, &[good]))
    })
    .await;
    let m = |c| monitor(MonitorKind::Dns(c), 500);

    let r = probe(&m(dns_check(&[], &[])), addr).await;
    assert!(r.success, "{r:?}");
    assert!(r.detail.starts_with("DNS NOERROR in "), "{}", r.detail);

    let r = probe(&m(dns_check(&["192.0.2.99", "192.0.2.10"], &[])), addr).await;
    assert!(r.success, "{r:?}");
    assert!(
        r.detail.starts_with("DNS NOERROR with 192.0.2.10 in "),
        "{}",
        r.detail
    );

    let r = probe(&m(dns_check(&["192.0.2.99"], &[])), addr).await;
    assert!(!r.success);
    assert_eq!(r.detail, "DNS answer [192.0.2.10] has none of [192.0.2.99]");

    let nx = udp_server(|q| Some(dns_reply(q, 3, &[]))).await;
    let r = probe(&m(dns_check(&[], &[])), nx).await;
    assert_eq!(r.detail, "DNS rcode NXDOMAIN not in NOERROR");
    let r = probe(&m(dns_check(&[], &[0, 3])), nx).await;
    assert!(r.success, "{r:?}");
}

#[tokio::test]
async fn dns_garbage_replies_fail_without_panicking() {
    // The right id followed by junk.
    let junk = udp_server(|q| {
        let mut out = q[..2].to_vec();
        out.extend_from_slice(&[0x84, 0x00, 0x00, 0x01, 0xff, 0xff, 0x3f]);
        Some(out)
    })
    .await;
    let m = monitor(MonitorKind::Dns(dns_check(&[], &[])), 300);
    let r = probe(&m, junk).await;
    assert!(!r.success);
    assert!(
        r.detail.starts_with("malformed DNS response"),
        "{}",
        r.detail
    );

    // Replies with the wrong id are ignored: the probe times out.
    let wrong_id = udp_server(|q| {
        let mut out = dns_reply(q, 0, &[]);
        out[0] ^= 0xff;
        Some(out)
    })
    .await;
    let r = probe(&m, wrong_id).await;
    assert_eq!(r.detail, "no response within 300ms");

    // A one-byte datagram.
    let tiny = udp_server(|_| Some(vec![0])).await;
    assert!(!probe(&m, tiny).await.success);
}

#[tokio::test]
async fn dns_closed_port_is_unreachable() {
    let addr = closed_udp_port().await;
    let m = monitor(MonitorKind::Dns(dns_check(&[], &[])), 500);
    let r = probe(&m, addr).await;
    assert!(!r.success);
    assert_eq!(
        r.detail,
        format!("DNS to {addr} refused (ICMP port unreachable)")
    );
}

// ---------------------------------------------------------------- UDP

fn udp(send: &str, receive: Option<&str>) -> MonitorKind {
    MonitorKind::Udp(UdpCheck {
        send: send.into(),
        receive: receive.map(str::to_string),
    })
}

#[tokio::test]
async fn udp_with_expected_reply() {
    let echo = udp_server(|d| Some([b"pong:", d].concat())).await;
    let r = probe(&monitor(udp("ping", Some("pong:ping")), 300), echo).await;
    assert!(r.success, "{r:?}");
    assert!(r.response_time.is_some());

    let r = probe(&monitor(udp("ping", Some("other")), 300), echo).await;
    assert!(!r.success);
    assert_eq!(r.detail, "UDP reply does not contain \"other\"");

    let silent = udp_server(|_| None).await;
    let r = probe(&monitor(udp("ping", Some("pong")), 300), silent).await;
    assert_eq!(r.detail, "no response within 300ms");
}

#[tokio::test]
async fn udp_without_expected_reply_succeeds_on_silence() {
    let silent = udp_server(|_| None).await;
    let r = probe(&monitor(udp("", None), 200), silent).await;
    assert!(r.success, "{r:?}");
    assert_eq!(r.response_time, None, "silence is not a response time");
    assert!(
        r.detail.contains("no ICMP port unreachable"),
        "{}",
        r.detail
    );

    let echo = udp_server(|d| Some(d.to_vec())).await;
    let r = probe(&monitor(udp("hi", None), 200), echo).await;
    assert!(r.success);
    assert!(r.response_time.is_some());
}

#[tokio::test]
async fn udp_closed_port_fails() {
    let addr = closed_udp_port().await;
    for receive in [None, Some("x")] {
        let r = probe(&monitor(udp("", receive), 500), addr).await;
        assert!(!r.success, "{r:?}");
        assert_eq!(
            r.detail,
            format!("UDP to {addr} refused (ICMP port unreachable)")
        );
    }
}

// ---------------------------------------------------------------- PING

#[tokio::test]
async fn ping_localhost() {
    let ip: IpAddr = "127.0.0.1".parse().unwrap();
    if let Err(e) = sextant_health::ping::check_privilege(ip) {
        cannot_run(&format!("ping_localhost needs ping sockets or root: {e}"));
        return;
    }
    let m = monitor(MonitorKind::Ping, 1000);
    // Several in parallel: each must match its own reply.
    let probes = (0..4).map(|_| {
        let m = m.clone();
        async move { probe(&m, SocketAddr::new(ip, 0)).await }
    });
    for r in futures_join(probes).await {
        assert!(r.success, "{r:?}");
        assert!(
            r.detail.starts_with("ICMP echo reply from 127.0.0.1 in "),
            "{}",
            r.detail
        );
        assert!(r.response_time.is_some());
    }
}

#[tokio::test]
async fn ping_v6_localhost_when_available() {
    let ip: IpAddr = "::1".parse().unwrap();
    // CI has an IPv6 loopback (::1 on lo) and runs as root: there this
    // test must run.
    if let Err(e) = std::net::UdpSocket::bind("[::1]:0") {
        cannot_run(&format!("ping_v6_localhost needs an IPv6 loopback: {e}"));
        return;
    }
    if let Err(e) = sextant_health::ping::check_privilege(ip) {
        cannot_run(&format!(
            "ping_v6_localhost needs ping sockets or root: {e}"
        ));
        return;
    }
    let r = probe(&monitor(MonitorKind::Ping, 1000), SocketAddr::new(ip, 0)).await;
    assert!(r.success, "{r:?}");
}

/// Runs futures concurrently as tasks (no extra dependency).
async fn futures_join<F>(futs: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futs.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

// ------------------------------------------------- custom headers, reverse

/// `-customHeaders`: the extra header lines reach the backend as written,
/// and a `Host` among them replaces the address Sextant would send.
#[tokio::test]
async fn custom_headers_are_sent_and_host_is_not_doubled() {
    let (addr, seen) = http_server(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").await;
    let mut check = http("GET /health", &[], None);
    check.custom_headers = "Host: www.example.com\r\nX-Probe: sextant\r\n".into();
    let r = probe(&monitor(MonitorKind::Http(check), 1000), addr).await;
    assert!(r.success, "{r:?}");
    let req = seen.lock().unwrap()[0].clone();
    assert!(
        req.starts_with("GET /health HTTP/1.1\r\nHost: www.example.com\r\nX-Probe: sextant\r\n"),
        "{req:?}"
    );
    assert_eq!(req.matches("Host:").count(), 1, "{req:?}");
    assert!(req.ends_with("\r\n\r\n"));
}

/// An HTTP-ECV `-send` written as a whole request is sent byte for byte.
#[tokio::test]
async fn a_whole_request_is_sent_verbatim() {
    let (addr, seen) = http_server(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK").await;
    let send = "GET /health HTTP/1.1\r\nHost: app.example.com\r\n\r\n";
    let m = monitor(
        MonitorKind::Http(http(send, &[(100, 599)], Some("OK"))),
        1000,
    );
    let r = probe(&m, addr).await;
    assert!(r.success, "{r:?}");
    assert_eq!(seen.lock().unwrap()[0], send);
}

/// A reverse monitor's verdict is the opposite of its probe, for one-off
/// probes too.
#[tokio::test]
async fn reverse_applies_to_single_probes() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut m = monitor(MonitorKind::Tcp, 500);
    m.reverse = true;
    let r = probe(&m, addr).await;
    assert!(
        !r.success && r.detail.contains("successful probe means DOWN"),
        "{r:?}"
    );
    drop(listener);
    let r = probe(&m, addr).await;
    assert!(
        r.success && r.detail.contains("failed probe means UP"),
        "{r:?}"
    );
}
