//! The service state stream over real sockets: big lists split under the
//! frame limit, deltas, a lost delta healed by a resync, relays of a big
//! child through its parent, and hostile streams (127.79.N.x, one N per
//! test).

mod support;

use std::time::Duration;

use sextant_mep::message::{Message, ResyncRequest, ServiceStates};
use sextant_mep::{LocalReport, MepEvent, MepState};
use support::*;
use tokio::io::AsyncReadExt;

/// The default keepalive timeout: debug builds on a loaded machine move
/// megabytes of JSON slowly, and a session whose writes block for the
/// keepalive timeout is closed.
const KA: Duration = Duration::from_secs(10);
const WAIT: Duration = Duration::from_secs(60);

fn local(services: Vec<sextant_mep::message::ServiceEntry>) -> LocalReport {
    LocalReport {
        services,
        site: Default::default(),
    }
}

async fn big_list_arrives(net: u8, n: usize) {
    let a_ip = format!("127.79.{net}.1");
    let b_ip = format!("127.79.{net}.2");
    let specs = [site("A", &a_ip), site("B", &b_ip)];
    let a = Node::start(&specs, "A", KA);
    let mut b = Node::start(&specs, "B", KA);
    b.wait_up("A", WAIT).await;
    let t0 = std::time::Instant::now();
    let list = many(n, 1, 100);
    a.handle().publish(local(list.clone()));
    b.wait_view("A", &list, WAIT).await;
    eprintln!("{n} services: in sync after {:?}", t0.elapsed());
    // A full snapshot came (split), never an oversized frame.
    let bad: Vec<_> = b
        .seen
        .iter()
        .filter(|e| matches!(e, MepEvent::BadFrame { .. } | MepEvent::PeerDown { .. }))
        .collect();
    assert!(bad.is_empty(), "{bad:?}");
    // 1 % change: a delta, not a second snapshot.
    b.forget();
    let next = many(n, 2, 100);
    a.handle().publish(local(next.clone()));
    b.wait_view("A", &next, WAIT).await;
    let fulls = b
        .seen
        .iter()
        .filter(|e| matches!(e, MepEvent::Services { full: true, .. }))
        .count();
    assert_eq!(fulls, 0, "{:?}", b.seen);
    // Removals travel too.
    let fewer: Vec<_> = next[..n - 10].to_vec();
    a.handle().publish(local(fewer.clone()));
    b.wait_view("A", &fewer, WAIT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_thousand_services_are_reported_and_received() {
    big_list_arrives(1, 30_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_services_are_reported_and_received() {
    big_list_arrives(2, 100_000).await;
}

#[tokio::test]
async fn a_lost_delta_is_noticed_and_healed_by_a_resync() {
    let ka = Duration::from_millis(600);
    let specs = [site("A", "127.79.3.1"), site("B", "127.79.3.2")];
    let a = Node::start(&specs, "A", ka);
    let mut b = Node::start(&specs, "B", ka);
    b.wait_up("A", WAIT).await;
    let v1 = many(50, 1, 5);
    a.handle().publish(local(v1.clone()));
    b.wait_view("A", &v1, WAIT).await;
    b.forget();
    // The next delta is lost; nothing else changes, so only the sequence
    // heartbeat (every keepalive/3) can reveal the gap.
    a.handle().lose_next_delta();
    let v2 = many(50, 2, 5);
    let t0 = std::time::Instant::now();
    a.handle().publish(local(v2.clone()));
    b.wait_view("A", &v2, Duration::from_secs(3)).await;
    let took = t0.elapsed();
    eprintln!("lost delta healed after {took:?}");
    assert!(took < ka, "{took:?}");
    // It came back as a fresh snapshot, and the session stayed up.
    assert!(
        b.seen
            .iter()
            .any(|e| matches!(e, MepEvent::Services { full: true, .. })),
        "{:?}",
        b.seen
    );
    assert!(
        !b.seen
            .iter()
            .any(|e| matches!(e, MepEvent::PeerDown { .. }))
    );
    // And deltas flow again afterwards.
    b.forget();
    let v3 = many(50, 3, 5);
    a.handle().publish(local(v3.clone()));
    b.wait_view("A", &v3, Duration::from_secs(2)).await;
    assert!(
        !b.seen
            .iter()
            .any(|e| matches!(e, MepEvent::Services { full: true, .. }))
    );
}

/// A hand-driven peer: a gap makes the node ask for a snapshot; the node
/// answers a ResyncRequest with one; parts out of order close the session
/// (only it).
#[tokio::test]
async fn gaps_requests_and_hostile_parts_over_the_wire() {
    let ka = Duration::from_millis(900);
    let specs = [site("A", "127.79.4.1"), site("B", "127.79.4.2")];
    let listener = tokio::net::TcpListener::bind(specs[1].addr())
        .await
        .unwrap();
    let mut a = Node::start(&specs, "A", ka);
    let (stream, _) = listener.accept().await.unwrap();
    let mut fake = Fake::new(stream, &specs[1], &specs[0], None, ka);
    fake.handshake().await;
    a.wait_up("B", WAIT).await;
    let list = many(20, 1, 1);
    fake.send(Message::ServiceStates(ServiceStates {
        seq: 41,
        full: true,
        part: 0,
        last: false,
        entries: list[..10].to_vec(),
        removed: vec![],
    }))
    .await;
    fake.send(Message::ServiceStates(ServiceStates {
        seq: 41,
        full: true,
        part: 1,
        last: true,
        entries: list[10..].to_vec(),
        removed: vec![],
    }))
    .await;
    a.wait_view("B", &list, WAIT).await;
    // seq 42 is skipped: A must ask for a snapshot.
    fake.send(Message::ServiceStates(ServiceStates {
        seq: 43,
        full: false,
        entries: many(20, 9, 1)[..1].to_vec(),
        ..Default::default()
    }))
    .await;
    let got = read_until(&mut fake, |m| matches!(m, Message::ResyncRequest(_))).await;
    assert_eq!(
        got,
        Message::ResyncRequest(ResyncRequest {
            child: None,
            have: Some(41)
        })
    );
    // A ignored that delta: its view is unchanged.
    a.drain_for(Duration::from_millis(200)).await;
    assert!(a.views["B"].matches(&list));

    // A answers our ResyncRequest with a snapshot of its own services.
    let mine = many(5, 3, 1);
    a.handle().publish(local(mine.clone()));
    let first = read_until(&mut fake, |m| matches!(m, Message::ServiceStates(_))).await;
    assert!(matches!(
        first,
        Message::ServiceStates(ServiceStates { full: true, .. })
    ));
    fake.send(Message::ResyncRequest(ResyncRequest::default()))
        .await;
    let again = read_until(
        &mut fake,
        |m| matches!(m, Message::ServiceStates(s) if s.full),
    )
    .await;
    match again {
        Message::ServiceStates(s) => {
            assert!(s.last);
            assert_eq!(s.entries, mine);
        }
        _ => unreachable!(),
    }

    // A snapshot part out of order: BadFrame, and that session closes.
    fake.send(Message::ServiceStates(ServiceStates {
        seq: 50,
        full: true,
        part: 3,
        last: true,
        entries: vec![],
        removed: vec![],
    }))
    .await;
    a.wait(
        WAIT,
        "BadFrame",
        |e| matches!(e, MepEvent::BadFrame { reason, .. } if reason.contains("part 3")),
    )
    .await;
    a.wait_down("B", WAIT).await;
    let st = a.handle().status();
    assert_eq!(
        st.iter().find(|s| s.name == "B").unwrap().state,
        MepState::Down
    );
}

/// Reads frames from the fake's stream (answering keepalives through its
/// session) until one matches.
async fn read_until(fake: &mut Fake, pred: impl Fn(&Message) -> bool) -> Message {
    let mut buf = vec![0u8; 64 * 1024];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        while let Some(m) = fake.next_message() {
            if pred(&m) {
                return m;
            }
            if let Message::Keepalive(_) = m {
                let now = fake.origin.elapsed();
                let acts = fake.session.on_frame(m, now);
                for a in acts {
                    if let Some(reply) = a.sent() {
                        fake.send(reply.clone()).await;
                    }
                }
            }
        }
        let n = tokio::time::timeout_at(deadline, fake.stream.read(&mut buf))
            .await
            .expect("a matching frame in time")
            .unwrap();
        assert!(n > 0, "closed");
        fake.reader.push(&buf[..n]);
    }
}

/// A child with 30,000 services: its parent relays them to the peer parent,
/// snapshot then deltas, each frame under the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_of_thirty_thousand_child_services() {
    let specs = [
        site("P1", "127.79.5.1").backups(&["P2"]),
        site("P2", "127.79.5.2").backups(&["P1"]),
        site("C1", "127.79.5.3").child_of("P1"),
    ];
    let mut p1 = Node::start(&specs, "P1", KA);
    let mut p2 = Node::start(&specs, "P2", KA);
    let mut c1 = Node::start(&specs, "C1", KA);
    c1.wait_parent(Some("P1"), WAIT).await;
    p2.wait_up("P1", WAIT).await;
    let list = many(30_000, 1, 100);
    let t0 = std::time::Instant::now();
    c1.handle().publish(local(list.clone()));
    p1.wait_view("C1", &list, WAIT).await;
    p2.wait_view("C1", &list, WAIT).await;
    eprintln!("30,000 child services relayed in {:?}", t0.elapsed());
    assert!(
        !p2.seen
            .iter()
            .any(|e| matches!(e, MepEvent::BadFrame { .. } | MepEvent::PeerDown { .. })),
        "{:?}",
        p2.seen
    );
    // 1 % changes and a few removals travel as deltas through the relay.
    p2.forget();
    let mut next = many(30_000, 2, 100);
    next.truncate(29_990);
    c1.handle().publish(local(next.clone()));
    p2.wait_view("C1", &next, WAIT).await;
    assert!(
        !p2.seen
            .iter()
            .any(|e| matches!(e, MepEvent::Services { full: true, .. })),
        "{:?}",
        p2.seen
    );
    // A peer parent that connects later gets the relay's snapshot.
    p2.close().await;
    let mut p2 = Node::start(&specs, "P2", KA);
    p2.wait_view("C1", &next, WAIT).await;
    assert!(
        p2.seen
            .iter()
            .any(|e| matches!(e, MepEvent::Services { full: true, .. }))
    );
    drop(p1);
}
