//! The REST API against clients that try to exhaust the node, end to end:
//! the real `sextant serve`, attacked over real sockets on loopback.
//!
//! * a flood of idle connections and half-sent request heads under a low
//!   descriptor limit: the connections over the caps are closed at once,
//!   the others after the header timeout, and all along the monitored
//!   backend stays UP and DNS answers it;
//! * the same against the API over TLS, whose handshake has its timeout;
//! * event-stream subscribers capped (503 with the reason);
//! * request bodies bounded (413);
//! * a 60 kB name costs no "did you mean" computation;
//! * every answer, the API's and the dashboard's, carries the security
//!   headers.

#![allow(unsafe_code)] // setrlimit(2) of the test process itself

use std::fs;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use sextant_test_support::prelude::*;
use socket2::{Domain, Socket, Type};

/// The binary under test.
const SEXTANT: Bin = Bin(env!("CARGO_BIN_EXE_sextant"));

/// The server's limit on open files (soft and hard, so it cannot raise
/// it): the API's default cap is an eighth of it (32 connections, 8 per
/// client address).
const NOFILE: u64 = 256;

/// One site, one HTTP backend with a monitor an operator would write, one
/// domain.
fn config(net: &Net, backend: &Backend) -> String {
    format!(
        "{}add lb monitor mon-web HTTP -httpRequest \"GET /health\" -interval 500 MSEC -resptimeout 250 MSEC -retries 2\n\
         add gslb service web1 {} HTTP {} -siteName site1\n\
         bind gslb service web1 -monitorName mon-web\n\
         add gslb vserver vs1 HTTP -lbMethod ROUNDROBIN\n\
         bind gslb vserver vs1 -serviceName web1\n\
         bind gslb vserver vs1 -domainName www.example.com -TTL 5\n",
        net.conf_preamble(),
        backend.ip(),
        backend.port()
    )
}

/// Opens `n` TCP connections from `from` to `to`, each sending `send` at
/// once (nothing if empty). Connections that cannot be made are counted,
/// not retried; after 10 failures in a row (a server that no longer
/// accepts, its backlog full) the rest are counted as failed too.
fn open_from(from: Ipv4Addr, to: SocketAddr, n: usize, send: &[u8]) -> (Vec<TcpStream>, usize) {
    let mut conns = Vec::with_capacity(n);
    let mut failed = 0;
    let mut in_a_row = 0;
    for _ in 0..n {
        if in_a_row >= 10 {
            failed += 1;
            continue;
        }
        let made = (|| {
            let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
            s.bind(&SocketAddr::new(from.into(), 0).into())?;
            s.connect_timeout(&to.into(), Duration::from_millis(500))?;
            let mut c: TcpStream = s.into();
            if !send.is_empty() {
                c.write_all(send)?;
            }
            c.set_nonblocking(true)?;
            Ok::<_, std::io::Error>(c)
        })();
        match made {
            Ok(c) => {
                conns.push(c);
                in_a_row = 0;
            }
            Err(_) => {
                failed += 1;
                in_a_row += 1;
            }
        }
    }
    (conns, failed)
}

/// Whether the server has closed `c` (EOF or a reset; what it sent before
/// is read and dropped). `c` is non-blocking: an open, silent connection
/// answers WouldBlock.
fn closed_by_server(mut c: &TcpStream) -> bool {
    let mut buf = [0u8; 1024];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return true,
        }
    }
}

/// How many of `conns` the server has not closed.
fn still_open(conns: &[TcpStream]) -> usize {
    conns.iter().filter(|c| !closed_by_server(c)).count()
}

/// One check of what the attack must not disturb: web1 UP in
/// `/v1/services` (with the token, from the node's own address) and DNS
/// answering the backend's address.
fn healthy(s: &Server, backend: Ipv4Addr) -> Result<(), String> {
    let list: Vec<Service> = api_get_as(
        s.net.api_addr(),
        SERVICES,
        s.token.as_deref(),
        Duration::from_secs(1),
    )?;
    let web1 = list
        .iter()
        .find(|x| x.name == "web1")
        .ok_or_else(|| format!("no web1 in {list:?}"))?;
    if web1.state != State::Up {
        return Err(format!("web1 is {:?}: {web1:?}", web1.state));
    }
    let answer = s
        .dns
        .try_udp_from(None, &build_query("www.example.com", RecordType::A, None))?;
    let addrs = a_records(&answer);
    if addrs != vec![backend] {
        return Err(format!("DNS answered {addrs:?}, not [{backend}]"));
    }
    Ok(())
}

/// What an attacker on the network does to the API: 512 idle connections
/// (twice the node's descriptor limit) from one address and 64 half-sent
/// request heads from another, against a node started with 256 open files
/// (soft and hard). Before the fix they all stayed open for minutes, the
/// node ran out of descriptors, the API stopped answering and the monitor
/// failed with "Too many open files". Now the connections over the caps
/// are closed at once, the ones within them after the header timeout, and
/// all along web1 stays UP, the API answers and DNS answers web1.
#[test]
fn idle_and_half_sent_api_connections_do_not_starve_the_node() {
    const IDLE: usize = 2 * NOFILE as usize;
    const HALF_SENT: usize = 64;
    raise_own_open_files(4 * (IDLE + HALF_SENT) as u64);
    let net = Net::new("api_limits_flood");
    let backend = Backend::http(net.svc_ip(0));
    let s = Server::start_with_nofile(
        SEXTANT,
        &net,
        Syntax::Conf,
        &config(&net, &backend),
        &[],
        NOFILE,
    );
    eventually_ok(EVENTUALLY, "web1 UP and answered", || {
        healthy(&s, backend.ip())
    });

    let api = net.api_addr();
    let (idle, idle_failed) = open_from(net.client_ip(1), api, IDLE, b"");
    let (half, half_failed) = open_from(
        net.client_ip(2),
        api,
        HALF_SENT,
        b"GET /v1/status HTTP/1.1\r\nHost: sextant\r\nUser-Agent: slow",
    );
    let opened = Instant::now();
    eprintln!(
        "opened {} idle ({idle_failed} failed) and {} half-sent ({half_failed} failed) connections to {api}",
        idle.len(),
        half.len()
    );

    // Every 200 ms until the server has closed every one of them (bounded
    // by EVENTUALLY): the node's health, as the operator sees it.
    let mut failures = Vec::new();
    let mut samples = 0;
    let mut first_count = None;
    loop {
        thread::sleep(Duration::from_millis(200));
        let (idle_open, half_open) = (still_open(&idle), still_open(&half));
        if first_count.is_none() && opened.elapsed() >= Duration::from_secs(1) {
            first_count = Some((idle_open, half_open));
        }
        samples += 1;
        let ms = opened.elapsed().as_millis();
        if let Err(e) = healthy(&s, backend.ip()) {
            failures.push(format!("{ms} ms: {e}"));
        }
        if idle_open + half_open == 0 || opened.elapsed() > EVENTUALLY {
            break;
        }
    }
    let (idle_open, half_open) = (still_open(&idle), still_open(&half));
    let emfile = s
        .log()
        .lines()
        .filter(|l| l.contains("Too many open files"))
        .count();
    eprintln!(
        "{samples} samples, {} failed; open after 1 s: {first_count:?}; open at the end: idle {idle_open}, half-sent {half_open}; {emfile} log lines say 'Too many open files'",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "with {IDLE} idle and {HALF_SENT} half-sent API connections, {} of {samples} checks failed:\n{}\n--- log ---\n{}",
        failures.len(),
        failures.join("\n"),
        s.log()
    );
    // Over the caps: closed at once (8 connections per address, 32 in all).
    let (idle_first, half_first) = first_count.expect("sampled past 1 s");
    assert!(
        idle_first <= 8 && half_first <= 8,
        "a second after they were opened, {idle_first} idle and {half_first} half-sent connections were still open"
    );
    // Within the caps: closed by the server after the header timeout.
    assert_eq!(
        (idle_open, half_open),
        (0, 0),
        "connections the server kept open past {EVENTUALLY:?}"
    );
    assert_eq!(emfile, 0, "{}", s.log());
    // The refusals are logged, at most one line per kind in 10 s.
    let refused = s
        .log()
        .lines()
        .filter(|l| l.contains("connection refused"))
        .count();
    assert!(
        (1..=4).contains(&refused),
        "{refused} refusal lines:\n{}",
        s.log()
    );
}

/// The API over TLS under the same flood: 64 clients from one address
/// that open a connection and never start their handshake, against a node
/// with 256 open files. Those over the caps are closed at once, the
/// others when their handshake time is up; HTTPS answers throughout.
/// (Before, each stalled handshake held its descriptor for 10 s.)
#[test]
fn stalled_tls_handshakes_are_capped_and_closed() {
    if !have_program("curl") {
        return cannot_run("curl is not installed");
    }
    const STALLED: usize = 64;
    raise_own_open_files(4 * STALLED as u64);
    let net = Net::new("api_limits_tls");
    let scratch = net.scratch();
    let ip = net.server_ip();
    let cert = rcgen::generate_simple_self_signed(vec![ip.to_string()]).expect("certificate");
    let cert_file = scratch.0.join("api.crt");
    let key_file = scratch.0.join("api.key");
    fs::write(&cert_file, cert.cert.pem()).unwrap();
    fs::write(&key_file, cert.signing_key.serialize_pem()).unwrap();
    fs::set_permissions(&key_file, fs::Permissions::from_mode(0o600)).unwrap();
    let tokens = scratch.0.join("api-tokens");
    write_token_file(&tokens);
    let backend = Backend::http(net.svc_ip(0));
    let conf = scratch.0.join("site.conf");
    fs::write(&conf, config(&net, &backend)).unwrap();
    let log = scratch.0.join("server.log");
    let mut command = SEXTANT.command();
    limit_open_files(&mut command, NOFILE);
    let mut child = command
        .args(["serve", "--config"])
        .arg(&conf)
        .args(["--api-listen", &net.api_addr().to_string()])
        .args(["--dns-listen", &net.dns_addr().to_string()])
        .arg("--api-token-file")
        .arg(&tokens)
        .arg("--api-tls-cert")
        .arg(&cert_file)
        .arg("--api-tls-key")
        .arg(&key_file)
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .expect("spawn sextant");
    let url = format!("https://{ip}:{API_PORT}{STATUS}");
    let curl = || {
        let out = Command::new("curl")
            .args(["-sS", "-o", "/dev/null", "--max-time", "2", "--cacert"])
            .arg(&cert_file)
            .args(["-w", "%{http_code}", &url])
            .output()
            .expect("run curl");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let result = std::panic::catch_unwind(|| {
        assert!(
            wait_until(READY, || curl() == "200"),
            "the API did not answer over TLS"
        );
        let (stalled, failed) = open_from(net.client_ip(1), net.api_addr(), STALLED, b"");
        let opened = Instant::now();
        assert_eq!(failed, 0, "could not open the connections");
        let mut failures = Vec::new();
        let mut first = None;
        loop {
            thread::sleep(Duration::from_millis(200));
            let open = still_open(&stalled);
            if first.is_none() && opened.elapsed() >= Duration::from_secs(1) {
                first = Some(open);
            }
            let code = curl();
            if code != "200" {
                failures.push(format!(
                    "{} ms: HTTPS answered {code}",
                    opened.elapsed().as_millis()
                ));
            }
            if open == 0 || opened.elapsed() > EVENTUALLY {
                break;
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        // 32 connections at most, 8 per address: the rest closed at once.
        let first = first.expect("sampled past 1 s");
        assert!(first <= 8, "{first} stalled handshakes open after 1 s");
        assert_eq!(still_open(&stalled), 0, "stalled handshakes kept open");
    });
    // SAFETY: kill(2) on the pid of our own child, not yet reaped.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let _ = child.wait();
    if let Err(e) = result {
        eprintln!(
            "--- server log ---\n{}",
            fs::read_to_string(&log).unwrap_or_default()
        );
        std::panic::resume_unwind(e);
    }
}

/// Reads an event stream's answer head: the status line's code.
fn subscribe(s: &Server) -> (TcpStream, u16, String) {
    let mut c = TcpStream::connect(s.net.api_addr()).expect("connect");
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let token = s.token.clone().expect("token");
    write!(
        c,
        "GET /v1/events HTTP/1.1\r\nHost: sextant\r\nAuthorization: Bearer {token}\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match c.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            other => panic!("reading the answer head: {other:?}"),
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (c, code, head)
}

/// At most `--api-max-event-streams` subscribers (32 by default): the
/// next is answered 503 with the reason, and one that leaves makes room.
#[test]
fn event_stream_subscribers_are_capped() {
    let net = Net::new("api_limits_events");
    let backend = Backend::http(net.svc_ip(0));
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net, &backend));
    let mut streams: Vec<TcpStream> = Vec::new();
    for i in 0..32 {
        let (c, code, head) = subscribe(&s);
        assert_eq!(code, 200, "stream {i}: {head}");
        streams.push(c);
    }
    let r = s.request("GET", "/v1/events", &[], "");
    assert_eq!(r.status, 503, "{r:?}");
    assert!(r.body.contains("--api-max-event-streams"), "{}", r.body);
    drop(streams.pop());
    eventually(EVENTUALLY, "a stream that left makes room", || {
        subscribe(&s).1 == 200
    });
}

/// Bodies are bounded: 64 KiB for JSON, the configuration's own bound for
/// `PUT /v1/config`; over it, 413 and nothing changes.
#[test]
fn request_bodies_are_bounded() {
    let net = Net::new("api_limits_bodies");
    let backend = Backend::http(net.svc_ip(0));
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net, &backend));
    let padding = " ".repeat(70 * 1024);
    let big = format!("{{\"cpu_percent\": 42.5{padding}}}");
    let r = s.request(
        "POST",
        SITE_FIGURES,
        &[("Content-Type", "application/json")],
        &big,
    );
    assert_eq!(r.status, 413, "{}", r.body);
    let e: ApiError = serde_json::from_str(&r.body).expect("a JSON error");
    assert!(e.error.contains("64 KiB"), "{}", e.error);
    let small = s.request(
        "POST",
        SITE_FIGURES,
        &[("Content-Type", "application/json")],
        r#"{"cpu_percent": 42.5}"#,
    );
    assert_eq!(small.status, 204, "{}", small.body);
    // Without a token, a large body is refused before it is read.
    let r = s.request(
        "PUT",
        "/v1/config",
        &[("Authorization", "Bearer wrong-token-0123456789abcdef")],
        &"x".repeat(1024 * 1024),
    );
    assert_eq!(r.status, 401, "{}", r.body);
}

/// A 60 kB name (as long as a request line takes) against a node with
/// 2,000 services: the 404 comes at once (within the client's ordinary
/// 5 s timeout) and suggests nothing; before, every name was compared
/// with it in full, for seconds of CPU per request.
#[test]
fn a_huge_name_gets_a_prompt_answer_and_no_suggestion() {
    let net = Net::new("api_limits_suggest");
    let mut conf = net.conf_preamble();
    for i in 0..2000 {
        conf.push_str(&format!(
            "add gslb service web-{i} {} HTTP 80 -siteName site1\n",
            net.svc_ip(1)
        ));
    }
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &conf);
    // A near name still gets its suggestion.
    let r = s.request("POST", "/v1/services/web-1x/disable", &[], "");
    assert_eq!(r.status, 404, "{r:?}");
    assert!(r.body.contains("did you mean"), "{}", r.body);
    let huge = "w".repeat(60_000);
    for _ in 0..3 {
        let r = s.request("POST", &format!("/v1/services/{huge}/disable"), &[], "");
        let start = &r.body[..r.body.len().min(300)];
        assert_eq!(r.status, 404, "{start}");
        assert!(!r.body.contains("did you mean"), "{start}");
        assert!(r.body.len() < 1000, "the error quotes the whole name");
    }
    assert!(healthy_api(&s), "the API answers after them");
}

fn healthy_api(s: &Server) -> bool {
    matches!(http_get(s.net.api_addr(), "/v1/live"), Ok((200, _)))
}

/// The headers every answer carries: on the API, on its errors and on the
/// dashboard.
#[test]
fn every_answer_carries_the_security_headers() {
    let net = Net::new("api_limits_headers");
    let backend = Backend::http(net.svc_ip(0));
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net, &backend));
    for (path, want) in [
        (STATUS, 200),
        ("/ui/", 200),
        ("/ui/app.js", 200),
        ("/v1/nothing", 404),
        ("/v1/config", 401),
    ] {
        let r = http_request(s.net.api_addr(), "GET", path, &[], "").expect("answer");
        assert_eq!(r.status, want, "{path}: {r:?}");
        assert_eq!(r.header("X-Frame-Options"), Some("DENY"), "{path}");
        assert_eq!(
            r.header("X-Content-Type-Options"),
            Some("nosniff"),
            "{path}"
        );
        let csp = r.header("Content-Security-Policy").unwrap_or_default();
        for directive in [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            "frame-ancestors 'none'",
            "base-uri 'none'",
        ] {
            assert!(csp.contains(directive), "{path}: {csp}");
        }
        assert!(
            !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
            "{path}: {csp}"
        );
    }
}

/// 100 requests with a wrong token in a burst: each is refused (401), the
/// log has one line for them (the next comes 10 s after it, with how many
/// were not logged; two if the burst took that long), and never the token
/// presented.
#[test]
fn refused_requests_are_logged_at_a_bounded_rate() {
    let net = Net::new("api_limits_refusal_log");
    let backend = Backend::http(net.svc_ip(0));
    let s = Server::start(SEXTANT, &net, Syntax::Conf, &config(&net, &backend));
    let wrong = "wrong-token-5a7c0e1d9b3f2468";
    let bearer = format!("Bearer {wrong}");
    for _ in 0..100 {
        let r = s.request_raw(
            "POST",
            SITE_FIGURES,
            &[("Authorization", bearer.as_str())],
            r#"{"cpu_percent": 42.5}"#,
        );
        assert_eq!(r.status, 401, "{r:?}");
    }
    let log = s.log();
    let lines = log
        .lines()
        .filter(|l| l.contains("API request refused") && l.contains("not one of the API tokens"))
        .count();
    assert!(
        (1..=2).contains(&lines),
        "{lines} lines for 100 refusals:\n{log}"
    );
    assert!(!log.contains(wrong), "the log holds the presented token");
}

/// Clients that ask for a large answer and never read it, from one
/// address, against a node with 256 open files (8 connections per client
/// address): while they hold their connections that address is refused
/// at once; once the writes have stalled for the write timeout (twice the
/// header timeout, 10 s) the server drops them and the address is served
/// again. (Without the write timeout they held their connections, and the
/// address's share, for as long as they liked.)
#[test]
fn clients_that_stop_reading_lose_their_connections() {
    const PER_ADDRESS: usize = 8;
    let net = Net::new("api_limits_stalled_reader");
    let mut conf = net.conf_preamble();
    for i in 0..20_000 {
        conf.push_str(&format!(
            "add gslb service web-{i} {} HTTP 80 -siteName site1\n",
            net.svc_ip(1)
        ));
    }
    let s = Server::start_with_nofile(SEXTANT, &net, Syntax::Conf, &conf, &[], NOFILE);
    let api = net.api_addr();
    let from = net.client_ip(3);
    // Each asks for /v1/services (some hundreds of kB) with a small
    // receive buffer, and reads nothing.
    let mut stalled = Vec::new();
    for _ in 0..PER_ADDRESS {
        let sock = Socket::new(Domain::IPV4, Type::STREAM, None).expect("socket");
        sock.set_recv_buffer_size(4096).expect("SO_RCVBUF");
        sock.bind(&SocketAddr::new(from.into(), 0).into())
            .expect("bind");
        sock.connect_timeout(&api.into(), Duration::from_secs(2))
            .expect("connect");
        let mut c: TcpStream = sock.into();
        c.write_all(b"GET /v1/services HTTP/1.1\r\nHost: sextant\r\n\r\n")
            .expect("send");
        stalled.push(c);
    }
    // One more from the same address: its share is taken.
    let served_from = || -> Result<u16, String> {
        let sock = Socket::new(Domain::IPV4, Type::STREAM, None).map_err(|e| e.to_string())?;
        sock.bind(&SocketAddr::new(from.into(), 0).into())
            .map_err(|e| e.to_string())?;
        sock.connect_timeout(&api.into(), Duration::from_secs(2))
            .map_err(|e| e.to_string())?;
        let mut c: TcpStream = sock.into();
        c.set_read_timeout(Some(Duration::from_secs(2)))
            .map_err(|e| e.to_string())?;
        let _ = c.write_all(b"GET /v1/live HTTP/1.1\r\nHost: sextant\r\nConnection: close\r\n\r\n");
        let mut answer = Vec::new();
        let _ = c.read_to_end(&mut answer);
        let text = String::from_utf8_lossy(&answer);
        text.split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| format!("no answer: {text:?}"))
    };
    let first = served_from();
    assert!(
        !matches!(first, Ok(200)),
        "the address's share is taken by the readers that stalled, yet it was served: {first:?}"
    );
    // Another address is served all along.
    assert!(healthy_api(&s), "the API answers other addresses");
    eventually(
        EVENTUALLY,
        "the stalled readers are dropped and their address is served again",
        || served_from() == Ok(200),
    );
    drop(stalled);
}
