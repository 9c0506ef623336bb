//! Parent-child topology and backup parents over real sockets (seed 001),
//! several sites in one process on 127.78.N.x. Links are cut at
//! configuration time with mismatched passwords (a link whose proofs fail is
//! never UP), and sites fail by being stopped.
//!
//! The drivers run on tokio timers, so the tests run on paused time: the
//! takeover bounds (measured with `tokio::time::Instant`) are virtual time,
//! not the machine's speed.

mod support;

use std::time::Duration;

use sextant_mep::{MepEvent, MepState};
use support::*;
use tokio::net::TcpListener;
use tokio::time::Instant;

const KA: Duration = Duration::from_millis(600);
const WAIT: Duration = Duration::from_secs(5);

#[tokio::test(start_paused = true)]
async fn the_parent_initiates_from_its_site_ip() {
    // The child has the lower IP: in a mesh it would dial; as a child it
    // must not.
    let specs = [
        site("C", "127.78.1.1").child_of("P"),
        site("P", "127.78.1.2"),
    ];
    let raw_p = TcpListener::bind(specs[1].addr()).await.unwrap();
    let mut c = Node::start(&specs, "C", KA);
    assert!(
        tokio::time::timeout(Duration::from_millis(1500), raw_p.accept())
            .await
            .is_err(),
        "the child dialed its parent"
    );
    drop(raw_p);
    c.close().await;

    let raw_c = TcpListener::bind(specs[0].addr()).await.unwrap();
    let mut p = Node::start(&specs, "P", KA);
    let (_s, from) = tokio::time::timeout(WAIT, raw_c.accept())
        .await
        .expect("the parent dials its child")
        .unwrap();
    assert_eq!(from.ip(), specs[1].ip, "from the parent's site IP");
    drop(raw_c);
    drop(_s);

    // The raw listener is gone; the real child takes the address.
    let mut c = Node::start(&specs, "C", KA);
    c.wait_parent(Some("P"), WAIT).await;
    p.wait_up("C", WAIT).await;
    c.publish("svcC", "10.1.0.1", 4);
    assert_eq!(p.wait_services("C", "svcC", 4, WAIT).await, None);
    // The parent does not send its own services to its child.
    p.publish("svcP", "10.1.0.2", 1);
    c.drain_for(Duration::from_millis(500)).await;
    assert!(
        !c.seen
            .iter()
            .any(|e| matches!(e, MepEvent::Services { .. })),
        "{:?}",
        c.seen
    );

    let st = p.handle().status();
    let sc = st.iter().find(|s| s.name == "C").unwrap();
    assert_eq!(
        (sc.kind, sc.link, sc.state),
        ("child", Some("to-child"), MepState::Up)
    );
    assert_eq!(sc.current_parent.as_deref(), Some("P"));
    let st = c.handle().status();
    let sp = st.iter().find(|s| s.name == "P").unwrap();
    assert_eq!((sp.link, sp.state), (Some("to-parent"), MepState::Up));
    assert_eq!(c.handle().current_parent().as_deref(), Some("P"));
}

/// Seed 001, scenario 1: SiteP1 goes DOWN; SiteP2 (first backup) takes
/// child_site1 over; SiteP3 assumes SiteP2 has it; SiteP1 comes back and the
/// child returns to it.
#[tokio::test(start_paused = true)]
async fn scenario_1_takeover_and_return() {
    let specs = [
        site("P1", "127.78.2.1").backups(&["P2", "P3"]),
        site("P2", "127.78.2.2").backups(&["P3", "P1"]),
        site("P3", "127.78.2.3").backups(&["P1", "P2"]),
        site("C1", "127.78.2.4").child_of("P1"),
    ];
    let mut p1 = Node::start(&specs, "P1", KA);
    let mut p2 = Node::start(&specs, "P2", KA);
    let mut p3 = Node::start(&specs, "P3", KA);
    let mut c1 = Node::start(&specs, "C1", KA);
    c1.wait_parent(Some("P1"), WAIT).await;
    c1.publish("svcC1", "10.2.0.4", 1);
    assert_eq!(p1.wait_services("C1", "svcC1", 1, WAIT).await, None);
    // The other parents learn the child's services through P1.
    assert_eq!(
        p2.wait_services("C1", "svcC1", 1, WAIT).await.as_deref(),
        Some("P1")
    );
    assert_eq!(
        p3.wait_services("C1", "svcC1", 1, WAIT).await.as_deref(),
        Some("P1")
    );
    let st = p3.handle().status();
    let sc = st.iter().find(|s| s.name == "C1").unwrap();
    assert_eq!((sc.state, sc.via.as_deref()), (MepState::Up, Some("P1")));
    assert_eq!(sc.current_parent.as_deref(), Some("P1"));

    // P1 fails.
    let t0 = Instant::now();
    p1.stop();
    p2.wait(WAIT, "Adopted C1", |e| {
        matches!(e, MepEvent::Adopted { child, for_parent } if child == "C1" && for_parent == "P1")
    })
    .await;
    c1.wait_parent(Some("P2"), WAIT).await;
    let takeover = t0.elapsed();
    eprintln!("scenario 1: takeover after the parent stopped: {takeover:?}");
    assert!(takeover < 2 * KA + Duration::from_secs(1), "{takeover:?}");
    // The child's services are back on every parent: directly on P2,
    // relayed by P2 on P3.
    c1.publish("svcC1", "10.2.0.4", 2);
    assert_eq!(p2.wait_services("C1", "svcC1", 2, WAIT).await, None);
    assert_eq!(
        p3.wait_services("C1", "svcC1", 2, WAIT).await.as_deref(),
        Some("P2")
    );
    let st = p2.handle().status();
    let sc = st.iter().find(|s| s.name == "C1").unwrap();
    assert_eq!(
        (sc.state, sc.link, sc.adopted_for.as_deref()),
        (MepState::Up, Some("adopted"), Some("P1"))
    );
    assert_eq!(sc.current_parent.as_deref(), Some("P2"));
    let st = p3.handle().status();
    let sc = st.iter().find(|s| s.name == "C1").unwrap();
    assert_eq!(
        sc.current_parent.as_deref(),
        Some("P2"),
        "P3 assumes P2 has it"
    );
    assert!(
        !p3.seen
            .iter()
            .any(|e| matches!(e, MepEvent::Adopted { .. }))
    );

    // P1 comes back: the child returns to it.
    let t1 = Instant::now();
    let mut p1 = Node::start(&specs, "P1", KA);
    c1.wait_parent(Some("P1"), WAIT).await;
    let back = t1.elapsed();
    eprintln!("scenario 1: child back with its parent after the restart: {back:?}");
    p2.wait(
        WAIT,
        "Released C1",
        |e| matches!(e, MepEvent::Released { child, .. } if child == "C1"),
    )
    .await;
    c1.publish("svcC1", "10.2.0.4", 3);
    assert_eq!(p1.wait_services("C1", "svcC1", 3, WAIT).await, None);
    assert_eq!(
        p2.wait_services("C1", "svcC1", 3, WAIT).await.as_deref(),
        Some("P1")
    );
    assert_eq!(
        p3.wait_services("C1", "svcC1", 3, WAIT).await.as_deref(),
        Some("P1")
    );
    // P2 stops trying once it sees P1 again.
    tokio::time::sleep(Duration::from_millis(300)).await;
    p2.forget();
    p2.drain_for(Duration::from_millis(1500)).await;
    assert!(
        !p2.seen.iter().any(|e| matches!(
            e,
            MepEvent::AdoptionRefused { .. } | MepEvent::Adopted { .. }
        )),
        "{:?}",
        p2.seen
    );
}

/// Seed 001, scenario 2: only the MEP connection between SiteP1 and SiteP2
/// is DOWN; child_site1 refuses SiteP2 because its parent SiteP1 is UP.
#[tokio::test(start_paused = true)]
async fn scenario_2_child_refuses_while_its_parent_is_up() {
    let specs = [
        site("P1", "127.78.3.1").backups(&["P2"]),
        site("P2", "127.78.3.2").backups(&["P1"]),
        site("C1", "127.78.3.3").child_of("P1"),
    ];
    // P1 dials P2 (lower IP) and must prove P2's password; they disagree.
    let mut m1 = model(&specs, "P1", KA);
    rpc(&mut m1, specs[1].ip, Some("p2-old"), false);
    let mut m2 = model(&specs, "P2", KA);
    rpc(&mut m2, specs[1].ip, Some("p2-new"), false);
    let _p1 = Node::start_model(m1, "P1");
    let mut p2 = Node::start_model(m2, "P2");
    let mut c1 = Node::start(&specs, "C1", KA);
    c1.wait_parent(Some("P1"), WAIT).await;
    let e = p2
        .wait(WAIT, "AdoptionRefused", |e| {
            matches!(e, MepEvent::AdoptionRefused { .. })
        })
        .await;
    match e {
        MepEvent::AdoptionRefused {
            child,
            for_parent,
            reason,
        } => {
            assert_eq!((child.as_str(), for_parent.as_str()), ("C1", "P1"));
            assert!(reason.contains("my parent P1 is UP"), "{reason}");
        }
        _ => unreachable!(),
    }
    // It stays refused, and the child never leaves P1.
    c1.drain_for(Duration::from_millis(1500)).await;
    let parents: Vec<_> = c1
        .seen
        .iter()
        .filter_map(|e| match e {
            MepEvent::ParentChanged { new_parent } => Some(new_parent.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(parents, vec![Some("P1".to_owned())]);
    assert!(
        !p2.seen
            .iter()
            .any(|e| matches!(e, MepEvent::Adopted { .. }))
    );
    assert!(
        !p2.seen
            .iter()
            .any(|e| matches!(e, MepEvent::PeerUp { site, via: None } if site == "C1"))
    );
}

/// Seed 001, scenario 3: SiteP3 and child_site1 see SiteP1 DOWN, and
/// SiteP3–SiteP2 is DOWN, while SiteP2 still sees SiteP1 UP. SiteP3 adopts
/// the child; SiteP2 takes no action. Then SiteP2 loses SiteP1 too, finds
/// itself the most preferred backup, and the child migrates from SiteP3 to
/// SiteP2.
#[tokio::test(start_paused = true)]
async fn scenario_3_partial_partition() {
    let specs = [
        site("P1", "127.78.4.1").backups(&["P2", "P3"]),
        site("P2", "127.78.4.2").backups(&["P3", "P1"]),
        site("P3", "127.78.4.3").backups(&["P1", "P2"]),
        site("C1", "127.78.4.4").child_of("P1"),
    ];
    let p3ip = specs[2].ip;
    // Cut P1–P3 and P2–P3 from the start: both dial P3 (the higher IP) and
    // must prove P3's password, which they have wrong.
    let with_cuts = |name| {
        let mut m = model(&specs, name, KA);
        rpc(
            &mut m,
            p3ip,
            Some(if name == "P3" { "p3" } else { "wrong" }),
            false,
        );
        m
    };
    let mut p1 = Node::start_model(with_cuts("P1"), "P1");
    let mut p2 = Node::start_model(with_cuts("P2"), "P2");
    let mut p3 = Node::start_model(with_cuts("P3"), "P3");
    let mut c1 = Node::start(&specs, "C1", KA);
    p2.wait_up("P1", WAIT).await;
    c1.wait_parent(Some("P1"), WAIT).await;
    // P3 sees P1 DOWN and offers; the child still has P1 and refuses.
    p3.wait(
        WAIT,
        "AdoptionRefused",
        |e| matches!(e, MepEvent::AdoptionRefused { reason, .. } if reason.contains("P1 is UP")),
    )
    .await;

    // Now cut P1–C1 as well: P1's configuration drops the child, so P1
    // closes the link and never dials it again, and the child sees P1 DOWN.
    let mut m1 = with_cuts("P1");
    m1.sites = m1
        .sites
        .iter()
        .filter(|s| !s.name.eq_ignore_ascii_case("C1"))
        .cloned()
        .collect();
    p1.handle().reload(std::sync::Arc::new(m1), 2);
    c1.wait_parent(None, WAIT).await;
    // P3 takes the child over; the child accepts.
    p3.wait(WAIT, "Adopted C1", |e| {
        matches!(e, MepEvent::Adopted { child, for_parent } if child == "C1" && for_parent == "P1")
    })
    .await;
    c1.wait_parent(Some("P3"), WAIT).await;
    // P2 takes no action: it sees P1 UP.
    p2.drain_for(Duration::from_millis(1000)).await;
    assert!(
        !p2.seen.iter().any(|e| matches!(
            e,
            MepEvent::Adopted { .. } | MepEvent::AdoptionRefused { .. }
        )),
        "{:?}",
        p2.seen
    );
    // The child reports to its new parent.
    c1.publish("svcC1", "10.4.0.4", 7);
    assert_eq!(p3.wait_services("C1", "svcC1", 7, WAIT).await, None);

    // Now the connection between P1 and P2 goes DOWN (P1 fails).
    let t0 = Instant::now();
    p1.stop();
    p2.wait(
        WAIT,
        "Adopted C1",
        |e| matches!(e, MepEvent::Adopted { child, .. } if child == "C1"),
    )
    .await;
    c1.wait_parent(Some("P2"), WAIT).await;
    eprintln!(
        "scenario 3: child migrated from P3 to P2 in {:?}",
        t0.elapsed()
    );
    p3.wait(
        WAIT,
        "Released C1",
        |e| matches!(e, MepEvent::Released { child, .. } if child == "C1"),
    )
    .await;
    c1.publish("svcC1", "10.4.0.4", 8);
    assert_eq!(p2.wait_services("C1", "svcC1", 8, WAIT).await, None);
    // P3 keeps offering (it cannot see P2) and the child keeps refusing.
    p3.wait(WAIT, "AdoptionRefused", |e| {
        matches!(e, MepEvent::AdoptionRefused { reason, .. } if reason.contains("more preferred"))
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn cold_start_without_the_parent_then_takeover() {
    // The child meets P1 (and learns its backup list, with P2's address),
    // then P1 dies, then P2 starts: P1 is unknown to P2 until one keepalive
    // timeout after its start, then DOWN, and P2 adopts.
    let specs = [
        site("P1", "127.78.5.1").backups(&["P2"]),
        site("P2", "127.78.5.2").backups(&["P1"]),
        site("C1", "127.78.5.3").child_of("P1"),
    ];
    let mut c1 = Node::start(&specs, "C1", KA);
    let mut p1 = Node::start(&specs, "P1", KA);
    c1.wait_parent(Some("P1"), WAIT).await;
    // The backup list reaches the child (P1 sends it once the link is up,
    // after its proof).
    let deadline = Instant::now() + WAIT;
    while !c1.handle().status().iter().any(|s| s.name == "P2") {
        assert!(Instant::now() < deadline, "{:?}", c1.handle().status());
        c1.drain_for(Duration::from_millis(10)).await;
    }
    p1.stop();
    c1.wait_parent(None, WAIT).await;
    // P2 starts only now: P1 is unknown to it until one keepalive timeout.
    let t0 = Instant::now();
    let mut p2 = Node::start(&specs, "P2", KA);
    c1.wait_parent(Some("P2"), WAIT).await;
    let took = t0.elapsed();
    eprintln!("cold start: P2 adopted C1 {took:?} after starting");
    assert!(took >= KA - Duration::from_millis(100), "{took:?}");
    p2.wait(WAIT, "Adopted", |e| matches!(e, MepEvent::Adopted { .. }))
        .await;
}

/// A parent that stops answering without closing its connections (a hung
/// host or a partition): the backup parent and the child both notice only
/// by the keepalive timeout. Takeover must complete within
/// 2 × keepalive timeout + 1 s of the parent's last message.
#[tokio::test(start_paused = true)]
async fn takeover_after_a_silent_parent_within_the_bound() {
    use sextant_mep::message::{BackupParents, Message, SiteAddr};
    let specs = [
        site("P1", "127.78.6.1").backups(&["P2"]),
        site("P2", "127.78.6.2").backups(&["P1"]),
        site("C1", "127.78.6.3").child_of("P1"),
    ];
    let mut p2 = Node::start(&specs, "P2", KA);
    let mut c1 = Node::start(&specs, "C1", KA);
    // P1 is a hand-driven fake: it dials P2 (lower IP) and its child, then
    // falls silent with both connections open.
    let mut to_p2 = Fake::new(
        connect_from(specs[0].ip, specs[1].addr()).await,
        &specs[0],
        &specs[1],
        None,
        KA,
    );
    to_p2.handshake().await;
    let mut to_c1 = Fake::new(
        connect_from(specs[0].ip, specs[2].addr()).await,
        &specs[0],
        &specs[2],
        None,
        KA,
    );
    to_c1.handshake().await;
    to_c1
        .send(Message::BackupParents(BackupParents {
            parent: "P1".into(),
            list: vec![SiteAddr {
                name: "P2".into(),
                ip: specs[1].ip,
            }],
        }))
        .await;
    let silent = Instant::now();
    c1.wait_parent(Some("P1"), WAIT).await;
    p2.wait_up("P1", WAIT).await;

    c1.wait_parent(Some("P2"), Duration::from_secs(4)).await;
    let took = silent.elapsed();
    eprintln!("takeover after a silent parent: {took:?} (keepalive timeout {KA:?})");
    assert!(took >= KA - Duration::from_millis(50), "{took:?}");
    assert!(took < 2 * KA + Duration::from_secs(1), "{took:?}");
    p2.wait(WAIT, "Adopted", |e| matches!(e, MepEvent::Adopted { .. }))
        .await;
    drop((to_p2, to_c1));
}

fn state_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("sextant-mep-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

async fn wait_file_contains(path: &std::path::Path, what: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        if std::fs::read_to_string(path).is_ok_and(|s| s.contains(what)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} never contained {what}",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Issue: a child keeps the last backup-parent list it received in a state
/// file, so that a child restarted while its parent is down can still be
/// adopted.
#[tokio::test]
async fn a_child_restarted_while_its_parent_is_down_is_adopted_thanks_to_its_state_file() {
    use sextant_mep::Options;
    let specs = [
        site("P1", "127.78.7.1").backups(&["P2"]),
        site("P2", "127.78.7.2").backups(&["P1"]),
        site("C1", "127.78.7.3").child_of("P1"),
    ];
    let dir = state_dir("state");
    let path = dir.join("c1.mep-state.json");
    let with_file = || Options {
        state_file: Some(path.clone()),
        ..Default::default()
    };
    // An earlier run: the child meets its parent and learns the list.
    let mut c1 = Node::start_with(model(&specs, "C1", KA), "C1", with_file());
    let mut p1 = Node::start(&specs, "P1", KA);
    c1.wait_parent(Some("P1"), WAIT).await;
    wait_file_contains(&path, "127.78.7.2").await;
    c1.close().await;
    p1.close().await;
    drop((c1, p1));

    // Without the file, a restarted child does not know P2 and refuses it.
    let mut bare = Node::start(&specs, "C1", KA);
    let mut p2 = Node::start(&specs, "P2", KA);
    bare.wait(
        WAIT,
        "Refused P2",
        |e| matches!(e, MepEvent::Refused { peer, .. } if peer.ip() == specs[1].ip),
    )
    .await;
    bare.stop();
    p2.stop();
    drop((bare, p2));
    tokio::time::sleep(Duration::from_millis(200)).await;

    // With it, the child (parent still DOWN) accepts P2's takeover.
    let t0 = Instant::now();
    let mut c1 = Node::start_with(model(&specs, "C1", KA), "C1", with_file());
    let mut p2 = Node::start(&specs, "P2", KA);
    c1.wait_parent(Some("P2"), WAIT).await;
    p2.wait(WAIT, "Adopted C1", |e| {
        matches!(e, MepEvent::Adopted { child, for_parent } if child == "C1" && for_parent == "P1")
    })
    .await;
    eprintln!("restarted child adopted {:?} after start", t0.elapsed());
    c1.publish("svcC1", "10.7.0.3", 5);
    assert_eq!(p2.wait_services("C1", "svcC1", 5, WAIT).await, None);
    drop((c1, p2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A corrupt state file is ignored (logged), never a crash, and is replaced
/// by a good one once a list arrives.
#[tokio::test]
async fn a_corrupt_state_file_is_ignored_and_replaced() {
    use sextant_mep::Options;
    let specs = [
        site("P1", "127.78.8.1").backups(&["P2"]),
        site("P2", "127.78.8.2").backups(&["P1"]),
        site("C1", "127.78.8.3").child_of("P1"),
    ];
    let dir = state_dir("corrupt");
    let path = dir.join("c1.mep-state.json");
    std::fs::write(&path, b"{\"version\":1,\"site\":\"C1\",\"backup_lists\":[{").unwrap();
    let mut c1 = Node::start_with(
        model(&specs, "C1", KA),
        "C1",
        Options {
            state_file: Some(path.clone()),
            ..Default::default()
        },
    );
    let _p1 = Node::start(&specs, "P1", KA);
    c1.wait_parent(Some("P1"), WAIT).await;
    wait_file_contains(&path, "127.78.8.2").await;
    let st: sextant_mep::state::StateFile =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(st.site, "C1");
    assert_eq!(st.backup_lists.len(), 1);
    assert_eq!(st.backup_lists[0].parent, "P1");
    let _ = std::fs::remove_dir_all(&dir);
}
