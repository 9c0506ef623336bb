//! The MEP driver over real sockets: several sites in one process, each on
//! its own loopback address (127.77.N.x, one N per test). The drivers run
//! on tokio timers, so the tests run on paused time: keepalive timeouts,
//! backoffs and "within" bounds are virtual time, not the machine's speed.

mod support;

use std::time::Duration;

use sextant_core::SitePassword;
use sextant_mep::message::{ConfigOffer, ConfigUpdate, ConfigVersion, Message, Reject};
use sextant_mep::{MepEvent, MepState, Options};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const KA: Duration = Duration::from_millis(600);
const WAIT: Duration = Duration::from_secs(5);

#[tokio::test(start_paused = true)]
async fn two_sites_exchange_service_states() {
    let specs = [site("A", "127.77.1.1"), site("B", "127.77.1.2")];
    let mut a = Node::start(&specs, "A", KA);
    let mut b = Node::start(&specs, "B", KA);
    a.publish("svcA", "10.0.0.1", 5);
    b.publish("svcB", "10.0.0.2", 7);
    a.wait_up("B", WAIT).await;
    b.wait_up("A", WAIT).await;
    assert_eq!(a.wait_services("B", "svcB", 7, WAIT).await, None);
    assert_eq!(b.wait_services("A", "svcA", 5, WAIT).await, None);
    b.wait(WAIT, "SiteMetrics from A", |e| {
        matches!(e, MepEvent::SiteMetrics { from_site, metrics, .. } if from_site == "A" && metrics.cpu_percent == Some(10.0))
    })
    .await;

    // A change travels at once.
    a.publish("svcA", "10.0.0.1", 42);
    b.wait_services("A", "svcA", 42, Duration::from_millis(500))
        .await;

    // Status: B is UP with a last message and an RTT from the keepalives.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let st = a.handle().status();
    let sb = st.iter().find(|s| s.name == "B").unwrap();
    assert_eq!(sb.state, MepState::Up);
    assert_eq!(sb.link, Some("peer"));
    assert!(sb.last_message.is_some());
    assert!(
        sb.link_rtt.is_some_and(|r| r < Duration::from_millis(100)),
        "{sb:?}"
    );
    assert!(!sb.secure);
    let sa = st.iter().find(|s| s.name == "A").unwrap();
    assert_eq!(sa.state, MepState::Local);
}

#[tokio::test(start_paused = true)]
async fn three_sites_full_mesh() {
    let specs = [
        site("A", "127.77.2.1"),
        site("B", "127.77.2.2"),
        site("C", "127.77.2.3"),
    ];
    let mut nodes: Vec<Node> = ["A", "B", "C"]
        .iter()
        .map(|n| Node::start(&specs, n, KA))
        .collect();
    for (i, n) in nodes.iter().enumerate() {
        n.publish(
            &format!("svc{}", n.name),
            &format!("10.0.0.{}", i + 1),
            i as u64 + 1,
        );
    }
    for i in 0..3 {
        for j in 0..3 {
            if i == j {
                continue;
            }
            let from = nodes[j].name;
            nodes[i]
                .wait_services(from, &format!("svc{from}"), j as u64 + 1, WAIT)
                .await;
        }
    }
    // No periodic resend of unchanged services (only a sequence heartbeat,
    // which raises no event); a change still travels at once.
    nodes[0].forget();
    nodes[0].drain_for(Duration::from_millis(700)).await;
    assert!(
        !nodes[0]
            .seen
            .iter()
            .any(|e| matches!(e, MepEvent::Services { .. })),
        "{:?}",
        nodes[0].seen
    );
    nodes[2].publish("svcC", "10.0.0.3", 33);
    nodes[0]
        .wait_services("C", "svcC", 33, Duration::from_millis(500))
        .await;
}

#[tokio::test(start_paused = true)]
async fn stopped_peer_is_down_at_once_and_back_after_restart() {
    let specs = [site("A", "127.77.3.1"), site("B", "127.77.3.2")];
    let mut a = Node::start(&specs, "A", KA);
    let mut b = Node::start(&specs, "B", KA);
    a.wait_up("B", WAIT).await;
    b.stop();
    // The connection closes: no need to wait for the keepalive timeout.
    let reason = a.wait_down("B", Duration::from_millis(500)).await;
    assert!(reason.contains("closed"), "{reason}");
    let st = a.handle().status();
    assert_eq!(
        st.iter().find(|s| s.name == "B").unwrap().state,
        MepState::Down
    );
    // B restarts on the same address; A (the lower IP) reconnects within
    // its backoff (at most 1 s).
    let mut b = Node::start(&specs, "B", KA);
    a.wait_up("B", Duration::from_secs(3)).await;
    b.wait_up("A", WAIT).await;
}

#[tokio::test(start_paused = true)]
async fn silent_peer_is_down_after_the_keepalive_timeout() {
    // A (lower IP) dials B; B is a fake that completes the handshake and
    // then never sends another byte, while keeping the connection open.
    let specs = [site("A", "127.77.4.1"), site("B", "127.77.4.2")];
    let listener = tokio::net::TcpListener::bind(specs[1].addr())
        .await
        .unwrap();
    let mut a = Node::start(&specs, "A", KA);
    let (stream, from) = listener.accept().await.unwrap();
    // The connection comes from A's site IP.
    assert_eq!(from.ip(), specs[0].ip);
    let mut fake = Fake::new(stream, &specs[1], &specs[0], None, KA);
    fake.handshake().await;
    let silent_since = tokio::time::Instant::now();
    a.wait_up("B", WAIT).await;
    let reason = a.wait_down("B", Duration::from_secs(3)).await;
    let took = silent_since.elapsed();
    assert!(reason.contains("keepalive timeout"), "{reason}");
    assert!(
        took >= KA - Duration::from_millis(50) && took < KA + Duration::from_millis(800),
        "DOWN after {took:?}, timeout {KA:?}"
    );
    // A answered keepalives? It sent some: B's socket has them unread.
    let mut buf = [0u8; 4096];
    let n = fake.stream.read(&mut buf).await.unwrap();
    assert!(n > 0);
}

#[tokio::test(start_paused = true)]
async fn wrong_secret_is_refused_and_reported() {
    // The link's secret is the password configured for the acceptor's IP
    // (B, the higher IP). A and B disagree on it.
    let specs = [site("A", "127.77.5.1"), site("B", "127.77.5.2")];
    let mut ma = model(&specs, "A", KA);
    rpc(&mut ma, specs[1].ip, Some("alpha"), false);
    let mut mb = model(&specs, "B", KA);
    rpc(&mut mb, specs[1].ip, Some("bravo"), false);
    let mut a = Node::start_model(ma, "A");
    let mut b = Node::start_model(mb, "B");
    let e = b
        .wait(WAIT, "AuthFailed", |e| {
            matches!(e, MepEvent::AuthFailed { .. })
        })
        .await;
    match e {
        MepEvent::AuthFailed { peer, site, reason } => {
            assert_eq!(peer.ip(), specs[0].ip);
            assert_eq!(site, "A");
            assert!(reason.contains("wrong proof"), "{reason}");
        }
        _ => unreachable!(),
    }
    a.wait(
        WAIT,
        "AuthFailed",
        |e| matches!(e, MepEvent::AuthFailed { site, .. } if site == "B"),
    )
    .await;
    // Retries keep failing; never UP.
    a.drain_for(Duration::from_millis(1500)).await;
    b.drain_for(Duration::from_millis(100)).await;
    for n in [&a, &b] {
        assert!(
            !n.seen.iter().any(|e| matches!(e, MepEvent::PeerUp { .. })),
            "{}: {:?}",
            n.name,
            n.seen
        );
        assert!(
            n.seen
                .iter()
                .filter(|e| matches!(e, MepEvent::AuthFailed { .. }))
                .count()
                >= 2,
            "{}: retried: {:?}",
            n.name,
            n.seen
        );
    }
}

#[tokio::test(start_paused = true)]
async fn same_secret_comes_up_and_missing_secret_does_not() {
    let specs = [
        site("A", "127.77.6.1"),
        site("B", "127.77.6.2"),
        site("C", "127.77.6.3"),
    ];
    // A-B share B's password; A-C: C has a password for itself, A has none.
    let mut ma = model(&specs, "A", KA);
    rpc(&mut ma, specs[1].ip, Some("s3cret"), false);
    let mut mb = model(&specs, "B", KA);
    rpc(&mut mb, specs[1].ip, Some("s3cret"), false);
    let mut mc = model(&specs, "C", KA);
    rpc(&mut mc, specs[2].ip, Some("other"), false);
    let mut a = Node::start_model(ma, "A");
    let mut b = Node::start_model(mb, "B");
    let mut c = Node::start_model(mc, "C");
    a.wait_up("B", WAIT).await;
    b.wait_up("A", WAIT).await;
    let e = c
        .wait(
            WAIT,
            "AuthFailed from A",
            |e| matches!(e, MepEvent::AuthFailed { site, .. } if site == "A"),
        )
        .await;
    assert!(matches!(e, MepEvent::AuthFailed { reason, .. } if reason.contains("no proof")));
    // B and C have no secret between them (C's password protects C as the
    // acceptor: B < C, so B dials C and must prove C's password).
    c.wait(
        WAIT,
        "AuthFailed from B",
        |e| matches!(e, MepEvent::AuthFailed { site, .. } if site == "B"),
    )
    .await;
    assert!(!c.seen.iter().any(|e| matches!(e, MepEvent::PeerUp { .. })));
}

#[tokio::test(start_paused = true)]
async fn garbage_and_oversized_frames_close_only_their_session() {
    let specs = [
        site("A", "127.77.7.1"),
        site("B", "127.77.7.2"),
        site("C", "127.77.7.3"),
    ];
    let mut a = Node::start(&specs, "A", KA);
    let b = Node::start(&specs, "B", KA);
    a.wait_up("B", WAIT).await;

    // C is a configured site but not running: a raw stream from its
    // address gets past the listener's address check.
    let c_ip = specs[2].ip;
    // 1. Plain garbage.
    let mut s = connect_from(c_ip, specs[0].addr()).await;
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let closed = read_to_close(&mut s).await;
    assert!(closed.iter().any(|m| matches!(m, Message::Hello(_))));
    assert!(
        closed.iter().any(|m| matches!(m, Message::Reject(Reject { reason }) if reason.contains("malformed frame"))),
        "{closed:?}"
    );
    a.wait(
        WAIT,
        "BadFrame",
        |e| matches!(e, MepEvent::BadFrame { site, .. } if site == "C"),
    )
    .await;

    // 2. An oversized length, refused before its body arrives.
    let mut s = connect_from(c_ip, specs[0].addr()).await;
    s.write_all(&(64u32 << 20).to_be_bytes()).await.unwrap();
    s.write_all(&[1, 1]).await.unwrap();
    read_to_close(&mut s).await;
    let e = a
        .wait(
            WAIT,
            "BadFrame oversized",
            |e| matches!(e, MepEvent::BadFrame { reason, .. } if reason.contains("exceeds")),
        )
        .await;
    assert!(matches!(e, MepEvent::BadFrame { peer, .. } if peer.ip() == c_ip));

    // 3. A valid frame header with JSON of the wrong shape.
    let mut s = connect_from(c_ip, specs[0].addr()).await;
    let body = br#"{"site":42}"#;
    let mut f = ((body.len() + 2) as u32).to_be_bytes().to_vec();
    f.extend_from_slice(&[sextant_mep::message::PROTOCOL_VERSION, 1]);
    f.extend_from_slice(body);
    s.write_all(&f).await.unwrap();
    read_to_close(&mut s).await;
    a.wait(
        WAIT,
        "BadFrame json",
        |e| matches!(e, MepEvent::BadFrame { reason, .. } if reason.contains("malformed Hello")),
    )
    .await;

    // 4. Unknown kind and version.
    for header in [[sextant_mep::message::PROTOCOL_VERSION, 99], [7u8, 1]] {
        let mut s = connect_from(c_ip, specs[0].addr()).await;
        s.write_all(&[0, 0, 0, 4]).await.unwrap();
        s.write_all(&header).await.unwrap();
        s.write_all(b"{}").await.unwrap();
        read_to_close(&mut s).await;
    }
    a.wait(WAIT, "BadFrame kind", |e| matches!(e, MepEvent::BadFrame { reason, .. } if reason.contains("unknown message kind 99")))
        .await;
    a.wait(WAIT, "BadFrame version", |e| matches!(e, MepEvent::BadFrame { reason, .. } if reason.contains("unsupported protocol version 7")))
        .await;

    // 5. An unknown address is refused before any frame.
    let mut s = connect_from("127.77.7.99".parse().unwrap(), specs[0].addr()).await;
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(WAIT, s.read(&mut buf))
        .await
        .unwrap()
        .unwrap_or(0);
    assert_eq!(n, 0, "closed without a word");
    a.wait(
        WAIT,
        "Refused",
        |e| matches!(e, MepEvent::Refused { peer, .. } if peer.ip().to_string() == "127.77.7.99"),
    )
    .await;

    // A and B never noticed.
    assert!(
        !a.seen
            .iter()
            .any(|e| matches!(e, MepEvent::PeerDown { .. }))
    );
    b.publish("svcB", "10.0.0.2", 3);
    a.wait_services("B", "svcB", 3, WAIT).await;
    let st = a.handle().status();
    assert_eq!(
        st.iter().find(|s| s.name == "B").unwrap().state,
        MepState::Up
    );
}

#[tokio::test(start_paused = true)]
async fn oversized_frame_from_an_up_peer_closes_that_session() {
    // A small frame limit on B; A sends a report bigger than it.
    let specs = [site("A", "127.77.8.1"), site("B", "127.77.8.2")];
    let mut a = Node::start(&specs, "A", KA);
    let mut b = Node::start_with(
        model(&specs, "B", KA),
        "B",
        Options {
            max_frame: 2048,
            ..Default::default()
        },
    );
    a.wait_up("B", WAIT).await;
    b.wait_up("A", WAIT).await;
    let mut big = report("svcA", "10.0.0.1", 1);
    big.services = (0..100)
        .map(|i| {
            let mut e = big.services[0].clone();
            e.service = format!("service-number-{i}");
            e.port = 1000 + i;
            e
        })
        .collect();
    a.handle().publish(big);
    let e = b
        .wait(WAIT, "BadFrame", |e| matches!(e, MepEvent::BadFrame { .. }))
        .await;
    assert!(
        matches!(e, MepEvent::BadFrame { reason, .. } if reason.contains("exceeds the limit of 2048"))
    );
    b.wait_down("A", WAIT).await;
    let reason = a.wait_down("B", WAIT).await;
    assert!(
        reason.contains("rejected by peer: malformed frame"),
        "{reason}"
    );
}

#[tokio::test(start_paused = true)]
async fn tls_variant_with_password() {
    let specs = [site("A", "127.77.9.1"), site("B", "127.77.9.2")];
    let mut ma = model(&specs, "A", KA);
    rpc(&mut ma, specs[1].ip, Some("tls-pass"), true);
    let mut mb = model(&specs, "B", KA);
    rpc(&mut mb, specs[1].ip, Some("tls-pass"), true);
    let mut a = Node::start_model(ma, "A");
    let mut b = Node::start_model(mb, "B");
    a.publish("svcA", "10.0.0.1", 9);
    a.wait_up("B", WAIT).await;
    b.wait_services("A", "svcA", 9, WAIT).await;
    let st = a.handle().status();
    assert!(st.iter().find(|s| s.name == "B").unwrap().secure);

    // B requires TLS: a plain connection to its MEP port is refused.
    let mut s = connect_from(specs[0].ip, specs[1].addr()).await;
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(WAIT, s.read(&mut buf))
        .await
        .unwrap()
        .unwrap_or(0);
    assert_eq!(n, 0);
    b.wait(
        WAIT,
        "Refused plain",
        |e| matches!(e, MepEvent::Refused { reason, .. } if reason.contains("secure")),
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn tls_with_wrong_password_fails_auth() {
    let specs = [site("A", "127.77.10.1"), site("B", "127.77.10.2")];
    let mut ma = model(&specs, "A", KA);
    rpc(&mut ma, specs[1].ip, Some("one"), true);
    let mut mb = model(&specs, "B", KA);
    rpc(&mut mb, specs[1].ip, Some("two"), true);
    let _a = Node::start_model(ma, "A");
    let mut b = Node::start_model(mb, "B");
    b.wait(WAIT, "AuthFailed", |e| {
        matches!(e, MepEvent::AuthFailed { .. })
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn reload_keeps_sessions_of_remaining_sites_and_drops_others() {
    let specs = [
        site("A", "127.77.11.1"),
        site("B", "127.77.11.2"),
        site("C", "127.77.11.3"),
    ];
    let mut a = Node::start(&specs, "A", KA);
    let b = Node::start(&specs, "B", KA);
    let mut c = Node::start(&specs, "C", KA);
    a.wait_up("B", WAIT).await;
    a.wait_up("C", WAIT).await;
    // A's new configuration no longer has C.
    let fewer = [specs[0].clone(), specs[1].clone()];
    a.handle()
        .reload(std::sync::Arc::new(model(&fewer, "A", KA)), 2);
    a.wait_down("C", WAIT).await;
    c.wait_down("A", WAIT).await;
    a.forget();
    a.drain_for(Duration::from_millis(1500)).await;
    assert!(
        !a.seen
            .iter()
            .any(|e| matches!(e, MepEvent::PeerDown { site, .. } if site == "B")),
        "{:?}",
        a.seen
    );
    // C keeps trying (its configuration still has A) and is refused.
    assert!(
        !a.seen
            .iter()
            .any(|e| matches!(e, MepEvent::PeerUp { site, .. } if site == "C")),
        "{:?}",
        a.seen
    );
    b.publish("svcB", "10.0.0.2", 11);
    a.wait_services("B", "svcB", 11, WAIT).await;
}

#[tokio::test(start_paused = true)]
async fn keepalive_losses_add_up_per_site_across_reconnects() {
    // A (lower IP) dials B, a fake that answers for a while, then goes
    // silent; then a second session that answers, ended by B closing.
    let specs = [site("A", "127.77.12.1"), site("B", "127.77.12.2")];
    let listener = tokio::net::TcpListener::bind(specs[1].addr())
        .await
        .unwrap();
    let mut a = Node::start(&specs, "A", KA);
    let counts = |a: &Node| {
        let st = a.handle().status();
        let b = st.iter().find(|s| s.name == "B").unwrap();
        (b.keepalives_sent, b.keepalives_lost)
    };
    assert_eq!(counts(&a), (0, 0));

    // First session: every keepalive (one per KA/3 = 200 ms) answered.
    let (stream, _) = listener.accept().await.unwrap();
    let mut fake = Fake::new(stream, &specs[1], &specs[0], None, KA);
    fake.handshake().await;
    a.wait_up("B", WAIT).await;
    fake.serve_for(Duration::from_millis(1000)).await;
    let (sent1, lost1) = counts(&a);
    assert!((5..=7).contains(&sent1), "sent {sent1}");
    assert_eq!(lost1, 0);

    // Silence: A's keepalives go unanswered until the keepalive timeout
    // (600 ms) closes the session; each counts once its successor is due,
    // the last one at the close.
    let reason = a.wait_down("B", Duration::from_secs(2)).await;
    assert!(reason.contains("keepalive timeout"), "{reason}");
    let (sent2, lost2) = counts(&a);
    assert!(sent2 >= sent1 + 2, "sent {sent1} then {sent2}");
    // Every keepalive sent in the silence is lost (and perhaps the one in
    // flight when B stopped answering), the last one included.
    let silent = sent2 - sent1;
    assert!(
        lost2 >= 2 && (silent..=silent + 1).contains(&lost2),
        "lost {lost2}, {silent} sent in silence"
    );
    drop(fake);

    // A reconnects: the totals go on from there, they do not reset.
    let (stream, _) = listener.accept().await.unwrap();
    let mut fake = Fake::new(stream, &specs[1], &specs[0], None, KA);
    fake.handshake().await;
    a.wait_up("B", WAIT).await;
    let (sent, lost) = counts(&a);
    assert!(sent > sent2, "sent {sent2} then {sent}");
    assert_eq!(lost, lost2);
    fake.serve_for(Duration::from_millis(1000)).await;
    // B closes: the keepalive in flight is younger than an interval, so
    // not lost; the totals stay after the site is DOWN.
    drop(fake);
    a.wait_down("B", Duration::from_millis(500)).await;
    let st = a.handle().status();
    let sb = st.iter().find(|s| s.name == "B").unwrap();
    assert_eq!(sb.state, MepState::Down);
    assert!(sb.keepalives_sent >= sent2 + 5, "{sb:?}");
    assert_eq!(sb.keepalives_lost, lost2, "{sb:?}");
    assert_eq!(sb.link_rtt, None);
}

/// A stall of the whole machine (a paused VM, a host that starves both
/// processes) longer than the keepalive timeout: when the two ends run
/// again, each finds its deadline long past, the other's last frame (if
/// any) unread, and no more sent, since neither could send. Neither was
/// silent, so the session stays up: an end that ran late sends a
/// keepalive and gives the peer an interval to be heard. (Before, both
/// ended the session with "keepalive timeout" within a millisecond of
/// each other, as one soak run on a loaded machine saw; 20 stalls in a
/// row stand for all of them.)
#[tokio::test(start_paused = true)]
async fn a_stall_of_both_ends_longer_than_the_timeout_keeps_the_session() {
    let specs = [site("A", "127.77.13.1"), site("B", "127.77.13.2")];
    let listener = tokio::net::TcpListener::bind(specs[1].addr())
        .await
        .unwrap();
    let mut a = Node::start(&specs, "A", KA);
    let (stream, _) = listener.accept().await.unwrap();
    // As the driver's own sockets: no Nagle, so each frame leaves at once.
    stream.set_nodelay(true).unwrap();
    let mut fake = Fake::new(stream, &specs[1], &specs[0], None, KA);
    fake.handshake().await;
    a.wait_up("B", WAIT).await;
    for _ in 0..20 {
        fake.serve_for(Duration::from_millis(100)).await;
        // B's frame reaches A's socket (the blocking sleep gives the
        // kernel real time for it without running A's task), then the
        // clock jumps past both ends' keepalive timeouts at once.
        fake.send(Message::SiteMetrics(Default::default())).await;
        std::thread::sleep(Duration::from_millis(2));
        tokio::time::advance(KA + Duration::from_millis(100)).await;
    }
    fake.serve_for(Duration::from_millis(100)).await;
    let downs: Vec<String> = a
        .drain_for(Duration::from_millis(10))
        .await
        .iter()
        .filter_map(|e| match e {
            MepEvent::PeerDown { site, reason, .. } if site == "B" => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert!(downs.is_empty(), "B went DOWN after a stall: {downs:?}");
}

/// Reads frames until the peer closes; returns them.
async fn read_to_close(s: &mut tokio::net::TcpStream) -> Vec<Message> {
    let mut reader = sextant_mep::FrameReader::new(sextant_mep::DEFAULT_MAX_FRAME);
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(WAIT, s.read(&mut buf))
            .await
            .expect("the session closes")
            .unwrap_or(0);
        if n == 0 {
            return out;
        }
        reader.push(&buf[..n]);
        while let Ok(Some(m)) = reader.next_message() {
            out.push(m);
        }
    }
}

#[tokio::test(start_paused = true)]
async fn rpc_node_source_ip_is_where_connections_come_from() {
    // A dials B (the higher IP accepts). With `set ns rpcNode B -srcIP X`
    // A's connections come from X, which B does not know as a site.
    let specs = [site("A", "127.77.40.1"), site("B", "127.77.40.2")];
    let other: std::net::IpAddr = "127.77.40.3".parse().unwrap();
    let mut ma = model(&specs, "A", KA);
    rpc(&mut ma, specs[1].ip, None, false);
    ma.rpc_nodes[0].source_ip = Some(other);
    let mut a = Node::start_model(ma, "A");
    let mut b = Node::start(&specs, "B", KA);
    let e = b
        .wait(WAIT, "Refused", |e| matches!(e, MepEvent::Refused { .. }))
        .await;
    match e {
        MepEvent::Refused { peer, .. } => assert_eq!(peer.ip(), other),
        _ => unreachable!(),
    }
    // From its own site IP (the default, or -srcIP naming it) it comes up.
    let mut ma = model(&specs, "A", KA);
    rpc(&mut ma, specs[1].ip, None, false);
    ma.rpc_nodes[0].source_ip = Some(specs[0].ip);
    a.close().await;
    let mut a = Node::start_model(ma, "A");
    a.wait_up("B", WAIT).await;
}

#[tokio::test(start_paused = true)]
async fn the_import_placeholder_password_never_authenticates() {
    // Both ends imported from appliance files: the same placeholder, which
    // anyone reading the import's output knows.
    let specs = [site("A", "127.77.41.1"), site("B", "127.77.41.2")];
    let placeholder = "SEXTANT-REENTER-rpcNode-127.77.41.2";
    let mut ma = model(&specs, "A", KA);
    rpc(&mut ma, specs[1].ip, Some(placeholder), false);
    let mut mb = model(&specs, "B", KA);
    rpc(&mut mb, specs[1].ip, Some(placeholder), false);
    let _a = Node::start_model(ma, "A");
    let mut b = Node::start_model(mb, "B");
    let e = b
        .wait(WAIT, "AuthFailed", |e| {
            matches!(e, MepEvent::AuthFailed { .. })
        })
        .await;
    match e {
        MepEvent::AuthFailed { reason, .. } => {
            assert!(reason.contains("placeholder"), "{reason}")
        }
        _ => unreachable!(),
    }
    b.drain_for(Duration::from_millis(1500)).await;
    assert!(
        !b.seen.iter().any(|e| matches!(e, MepEvent::PeerUp { .. })),
        "{:?}",
        b.seen
    );
}

/// The status is a publication: a reader holding it (as the API does) sees
/// the link come up without the driver, "not running" once the driver
/// stops, and a driver stopped late does not hide one started after it on
/// the same publication (a site IP's VIP that moves away and back).
#[tokio::test(start_paused = true)]
async fn the_status_is_published_for_readers_and_cleared_at_the_stop() {
    let specs = [site("A", "127.77.14.1"), site("B", "127.77.14.2")];
    let board = std::sync::Arc::<arc_swap::ArcSwap<sextant_mep::MepStatus>>::default();
    assert!(!board.load().running);
    let options = || Options {
        status: std::sync::Arc::clone(&board),
        ..Default::default()
    };
    let mut a = Node::start_with(model(&specs, "A", KA), "A", options());
    let _b = Node::start(&specs, "B", KA);
    a.wait_up("B", WAIT).await;
    let published = board.load_full();
    assert!(published.running);
    let b = published.peers.iter().find(|p| p.name == "B").unwrap();
    assert_eq!(b.state, MepState::Up);
    assert_eq!(published.peers, a.handle().status());

    // Another driver starts on the same publication, then the first one
    // stops (no await between: nothing else runs): the newer status stays.
    let other = [site("C", "127.77.14.3"), site("D", "127.77.14.4")];
    let mut c = Node::start_with(model(&other, "C", KA), "C", options());
    a.stop();
    let now = board.load_full();
    assert!(now.running);
    assert!(now.peers.iter().any(|p| p.name == "C"), "{now:?}");

    c.close().await;
    assert!(!board.load().running, "{:?}", board.load());
}

/// Config sync over real sockets: parents whose links authenticate with
/// their `-sitePassword`s exchange `ConfigOffer`s through `send_to`, and
/// each sees the other's as a `ConfigSync` event. A parent whose link does
/// not authenticate gets nothing through, and a child is sent nothing.
#[tokio::test(start_paused = true)]
async fn parents_exchange_config_offers_over_authenticated_links() {
    let specs = [
        site("P1", "127.77.15.1"),
        site("P2", "127.77.15.2"),
        site("P3", "127.77.15.3"),
        site("C1", "127.77.15.4").child_of("P1"),
    ];
    // Every parent knows every site's password; P3 has changed its own and
    // the others do not know it yet.
    let with_passwords = |local: &str, p3: &str| {
        let mut m = model(&specs, local, KA);
        for s in m.sites.iter_mut() {
            let pw = match s.name.as_str() {
                "P3" => p3.to_owned(),
                n => format!("{}-secret", n.to_lowercase()),
            };
            s.password = Some(SitePassword::Clear(pw));
        }
        m
    };
    let mut p1 = Node::start_model(with_passwords("P1", "p3-secret"), "P1");
    let mut p2 = Node::start_model(with_passwords("P2", "p3-secret"), "P2");
    let mut p3 = Node::start_model(with_passwords("P3", "p3-new"), "P3");
    p1.wait_up("P2", WAIT).await;
    p2.wait_up("P1", WAIT).await;
    p3.wait(
        WAIT,
        "AuthFailed",
        |e| matches!(e, MepEvent::AuthFailed { site, .. } if site == "P2"),
    )
    .await;

    let offer = |incarnation: u64, origin: &str| {
        Message::ConfigOffer(ConfigOffer {
            version: ConfigVersion {
                incarnation,
                origin: origin.to_owned(),
                digest: format!("sha256:{incarnation:064x}"),
            },
            software: "0.1.0".into(),
            sync_protocol: 1,
            syntax: "appliance".into(),
            automatic: true,
        })
    };
    let (from_p1, from_p2, from_p3) = (offer(7, "P1"), offer(6, "P2"), offer(9, "P3"));
    p1.handle().send_to("P2", from_p1.clone());
    p1.handle().send_to("C1", from_p1.clone());
    p2.handle().send_to("P1", from_p2.clone());
    p3.handle().send_to("P2", from_p3.clone());
    let got = p2
        .wait(
            WAIT,
            "ConfigSync from P1",
            |e| matches!(e, MepEvent::ConfigSync { from_site, .. } if from_site == "P1"),
        )
        .await;
    assert_eq!(
        got,
        MepEvent::ConfigSync {
            from_site: "P1".into(),
            msg: from_p1
        }
    );
    let got = p1
        .wait(WAIT, "ConfigSync from P2", |e| {
            matches!(e, MepEvent::ConfigSync { .. })
        })
        .await;
    assert_eq!(
        got,
        MepEvent::ConfigSync {
            from_site: "P2".into(),
            msg: from_p2
        }
    );
    // Nothing from P3 (its link never came up), nothing more at all.
    p2.drain_for(Duration::from_millis(1500)).await;
    p1.drain_for(Duration::from_millis(100)).await;
    for n in [&p1, &p2] {
        let syncs = n
            .seen
            .iter()
            .filter(|e| matches!(e, MepEvent::ConfigSync { .. }))
            .count();
        assert_eq!(syncs, 1, "{}: {:#?}", n.name, n.seen);
    }
    // The link is the authenticated peer link, counted as one session.
    let st = p2.handle().status();
    let s1 = st.iter().find(|s| s.name == "P1").unwrap();
    assert_eq!(
        (s1.state, s1.link, s1.sessions_up),
        (MepState::Up, Some("peer"), 1)
    );
    assert!(s1.messages_received >= 1, "{s1:?}");

    // A big transfer counts in the byte figures at both ends (keepalives
    // could not account for this much).
    let sent_before = p1
        .handle()
        .status()
        .into_iter()
        .find(|s| s.name == "P2")
        .unwrap();
    let text = "add gslb service svc-0 10.9.0.1 HTTP 80 -siteName P1\n".repeat(4000);
    let update = Message::ConfigUpdate(ConfigUpdate {
        transfer: 1,
        version: ConfigVersion {
            incarnation: 8,
            origin: "P1".into(),
            digest: "sha256:08".into(),
        },
        base: None,
        part: 0,
        last: true,
        text: text.clone(),
        ops: Vec::new(),
        forced: false,
        files: Vec::new(),
        lineage: Vec::new(),
    });
    p1.handle().send_to("P2", update.clone());
    let got = p2
        .wait(WAIT, "the ConfigUpdate", |e| {
            matches!(
                e,
                MepEvent::ConfigSync {
                    msg: Message::ConfigUpdate(_),
                    ..
                }
            )
        })
        .await;
    assert_eq!(
        got,
        MepEvent::ConfigSync {
            from_site: "P1".into(),
            msg: update
        }
    );
    let received = p2
        .handle()
        .status()
        .into_iter()
        .find(|s| s.name == "P1")
        .unwrap();
    let sent = p1
        .handle()
        .status()
        .into_iter()
        .find(|s| s.name == "P2")
        .unwrap();
    let len = text.len() as u64;
    assert!(
        received.bytes_received >= s1.bytes_received + len,
        "{s1:?} then {received:?}"
    );
    assert_eq!(received.messages_received, s1.messages_received + 1);
    assert!(
        sent.bytes_sent >= sent_before.bytes_sent + len,
        "{sent_before:?} then {sent:?}"
    );
    assert_eq!(sent.messages_sent, sent_before.messages_sent + 1);
}

/// Accepted connections are capped (`Options::max_inbound`, the share of
/// the descriptor limit the binary gives metric exchange): one over the cap
/// is closed as soon as it is accepted, the ones under it are untouched,
/// and a slot is free again when its connection ends. Connections that
/// never say Hello are the cheapest way to hold descriptors.
#[tokio::test(start_paused = true)]
async fn connections_over_the_cap_are_closed_at_once() {
    let specs = [site("A", "127.77.42.1"), site("B", "127.77.42.2")];
    let _b = Node::start_with(
        model(&specs, "B", KA),
        "B",
        Options {
            max_inbound: 3,
            ..Default::default()
        },
    );
    let from = specs[0].ip;
    let to = specs[1].addr();
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(connect_from(from, to).await);
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    let mut over = connect_from(from, to).await;
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(Duration::from_millis(100), over.read(&mut buf))
        .await
        .expect("the connection over the cap is closed at once")
        .unwrap_or(0);
    assert_eq!(n, 0, "closed without a word");
    // The ones under the cap are still open (waiting for the handshake).
    let open = |r: &Result<std::io::Result<usize>, _>| !matches!(r, Ok(Ok(0)) | Ok(Err(_)));
    let r = tokio::time::timeout(Duration::from_millis(100), held[0].read(&mut buf)).await;
    assert!(open(&r), "a connection under the cap was closed: {r:?}");
    // Their slots come back when they end.
    held.clear();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let mut again = connect_from(from, to).await;
    let r = tokio::time::timeout(Duration::from_millis(100), again.read(&mut buf)).await;
    assert!(
        open(&r),
        "a connection under the cap again was closed: {r:?}"
    );
}
