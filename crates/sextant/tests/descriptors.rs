//! Descriptor exhaustion must not turn healthy backends DOWN (issue 38,
//! item 3).
//!
//! The attack: idle connections take every descriptor the server has left,
//! so each health probe fails to make its socket ("Too many open files").
//! Before the fix each such failure counted towards `-retries` and every
//! healthy backend went DOWN. Now it is a local error: reported (the
//! monitor's last result, a counter, a rate-limited log line) and not
//! counted, so the service keeps its state.
//!
//! The test leaves the running server a handful of free descriptors (it
//! lowers the server's limit with prlimit(2) to what it has open plus a
//! few) and takes them with idle DNS-over-TCP connections: the cheapest
//! thing anyone who can reach the DNS port can do, and one the API's and
//! metric exchange's own caps do not cover.

use std::net::TcpStream;
use std::thread;
use std::time::Duration;

use sextant_test_support::prelude::*;

const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

/// The value of the `/metrics` sample whose line starts with `series`
/// (name and labels, as written), 0 if there is none.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(series))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

#[test]
fn exhausted_descriptors_are_a_local_error_and_never_take_a_healthy_backend_down() {
    let net = Net::new("descriptors_exhausted");
    let backend = Backend::tcp(net.svc_ip(0));
    // A fast monitor: DOWN after 2 failed probes 200 ms apart.
    let config = format!(
        "{}add lb monitor tcp-fast TCP -interval 200 MSEC -resptimeout 100 MSEC -retries 2\n\
         add gslb service web {} TCP {} -siteName site1\n\
         bind gslb service web -monitorName tcp-fast\n\
         add gslb vserver vs TCP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs -serviceName web\n\
         bind gslb vserver vs -domainName www.example.com -TTL 5\n",
        net.conf_preamble(),
        backend.ip(),
        backend.port()
    );
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &config);
    s.wait_state("web", State::Up);
    assert_eq!(s.dns.query_a("www.example.com"), vec![backend.ip()]);
    let metrics = || {
        http_get_as(
            net.api_addr(),
            "/metrics",
            s.token.as_deref(),
            Duration::from_secs(5),
        )
        .map(|(_, body)| body)
    };
    let downs_before = sample(
        &metrics().expect("/metrics"),
        "sextant_service_transitions_total{service=\"web\",to=\"down\"}",
    );
    assert_eq!(downs_before, 0.0);

    // A few descriptors left, then taken by idle DNS-over-TCP clients
    // (bounded: at most 64 connections).
    let pid = s.pid();
    let open = open_files(pid) as u64;
    set_open_files_limit(pid, open + 4);
    let mut idle = Vec::new();
    for _ in 0..64 {
        match TcpStream::connect_timeout(&s.dns.server, Duration::from_secs(2)) {
            Ok(c) => idle.push(c),
            Err(_) => break,
        }
    }
    eventually_ok(EVENTUALLY, "the server's descriptors are exhausted", || {
        let n = open_files(pid) as u64;
        if n >= open + 4 {
            Ok(())
        } else {
            Err(format!("{n} open of {}", open + 4))
        }
    });
    // Probes fail to make sockets for a while: many monitor intervals.
    // DNS over UDP (its sockets are already open) keeps answering with
    // the backend every time.
    for _ in 0..20 {
        assert_eq!(
            s.dns.query_a("www.example.com"),
            vec![backend.ip()],
            "the healthy backend left the answers while descriptors were exhausted\n{}",
            s.log()
        );
        thread::sleep(Duration::from_millis(100));
    }
    drop(idle);

    // The API answers again once the connections are gone (the server
    // closes them as they end).
    let text = {
        let mut last = String::new();
        eventually_ok(EVENTUALLY, "/metrics answers again", || {
            last = metrics()?;
            Ok(())
        });
        last
    };
    let downs = sample(
        &text,
        "sextant_service_transitions_total{service=\"web\",to=\"down\"}",
    );
    let local = sample(
        &text,
        "sextant_monitor_probes_total{monitor=\"tcp-fast\",result=\"local_error\"}",
    );
    assert_eq!(downs, 0.0, "web was marked DOWN:\n{}", s.log());
    assert!(local > 0.0, "no local error counted:\n{text}");
    assert_eq!(s.service_state("web"), Some(State::Up));
    assert!(
        s.log()
            .contains("health probes failed for a reason of this host"),
        "no local error in the log:\n{}",
        s.log()
    );
    eprintln!("local probe errors counted: {local}; transitions to DOWN: {downs}");
}
