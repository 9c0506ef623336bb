//! `start`: every binding is probed on schedule, and stopping stops it.
//!
//! The schedule runs on tokio timers, so these tests run on paused time:
//! the clock jumps to the next timer whenever every task waits, and the
//! "within 1.5 s" bounds below are virtual time, not the machine's speed.
//! The probes still talk to real loopback sockets, whose answers are
//! there by the time the runtime looks (a connect on `lo` completes or is
//! refused within the system call).

mod common;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use sextant_core::{Model, Monitor, MonitorId, MonitorKind, Service, ServiceId, ServiceProtocol};
use sextant_health::{Gates, Observation, start, start_gated};
use sextant_test_support::model;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::time::timeout;

fn service(name: &str, ip: IpAddr, port: u16, monitors: Vec<MonitorId>) -> Service {
    Service {
        port,
        protocol: ServiceProtocol::Tcp,
        public_ip: Some("203.0.113.1".parse().unwrap()),
        public_port: Some(1),
        monitors,
        ..model::service(name, ip)
    }
}

fn tcp_monitor(dest_port: Option<u16>) -> Monitor {
    let mut m = Monitor::new("tcp", MonitorKind::Tcp);
    m.interval = Duration::from_millis(100);
    m.response_timeout = Duration::from_millis(200);
    m.dest_port = dest_port;
    m
}

#[tokio::test(start_paused = true)]
async fn probes_every_binding_and_stops() {
    let up = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let up_port = up.local_addr().unwrap().port();
    let down_port = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let lo: IpAddr = "127.0.0.1".parse().unwrap();

    let model = Model {
        // Monitor 1 overrides the port, so it probes the live listener even
        // for the service whose own port is closed.
        monitors: vec![tcp_monitor(None), tcp_monitor(Some(up_port))].into(),
        services: vec![
            service("a", lo, up_port, vec![MonitorId::new(0)]),
            service(
                "b",
                lo,
                down_port,
                vec![MonitorId::new(0), MonitorId::new(1)],
            ),
            service("c", lo, down_port, vec![]),
            service("dangling", lo, down_port, vec![MonitorId::new(7)]),
        ]
        .into(),
        ..Model::default()
    };

    let (tx, mut rx) = mpsc::channel::<Observation>(64);
    let monitors = start(Arc::new(model), 42, tx);
    assert_eq!(monitors.len(), 3);

    let mut counts: HashMap<(u32, u32), (usize, bool)> = HashMap::new();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(1500);
    while counts.len() < 3 || counts.values().any(|(n, _)| *n < 3) {
        let obs = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .expect("every pair observed 3 times within 1.5s")
            .unwrap();
        assert_eq!(obs.generation, 42);
        let e = counts
            .entry((obs.service.raw(), obs.monitor.raw()))
            .or_default();
        e.0 += 1;
        e.1 = obs.success;
        if obs.success {
            assert!(obs.response_time.is_some());
        } else {
            assert!(obs.detail.ends_with("refused"), "{}", obs.detail);
        }
    }
    assert!(counts[&(0, 0)].1, "a: live port");
    assert!(!counts[&(1, 0)].1, "b: closed service port");
    assert!(counts[&(1, 1)].1, "b: dest_port override");

    monitors.stop();
    // All senders are gone once the tasks are aborted: the channel drains
    // and closes instead of delivering more probes.
    let closed = timeout(Duration::from_millis(500), async {
        let mut late = 0;
        while rx.recv().await.is_some() {
            late += 1;
        }
        late
    })
    .await
    .expect("channel closes promptly after stop()");
    assert!(closed <= 3, "at most the in-flight observations: {closed}");
    drop(up);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_handle_stops_and_closed_receiver_ends_tasks() {
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    let model = Arc::new(Model {
        monitors: vec![tcp_monitor(None)].into(),
        services: vec![service("a", lo, 9, vec![MonitorId::new(0)])].into(),
        ..Model::default()
    });
    let (tx, mut rx) = mpsc::channel(8);
    let monitors = start(model.clone(), 1, tx);
    assert!(
        timeout(Duration::from_secs(1), rx.recv())
            .await
            .unwrap()
            .is_some()
    );
    drop(monitors);
    let rest = timeout(Duration::from_millis(500), async {
        while rx.recv().await.is_some() {}
    })
    .await;
    assert!(rest.is_ok(), "channel closes after drop");

    // A dropped receiver ends the tasks on their next send.
    let (tx, rx) = mpsc::channel(1);
    let monitors = start(model, 2, tx);
    drop(rx);
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(monitors);
}

/// A reload keeps the task of a binding whose target, service and monitor
/// are unchanged (it reports under its new ids and generation), stops the
/// bindings that are gone and starts the new ones.
#[tokio::test(start_paused = true)]
async fn a_restart_keeps_unchanged_bindings_and_renumbers_them() {
    let up = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = up.local_addr().unwrap().port();
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    let first = Model {
        monitors: vec![tcp_monitor(None)].into(),
        services: vec![
            service("kept", lo, port, vec![MonitorId::new(0)]),
            service("gone", lo, port, vec![MonitorId::new(0)]),
        ]
        .into(),
        ..Model::default()
    };
    let (tx, mut rx) = mpsc::channel::<Observation>(64);
    let monitors = start(Arc::new(first), 1, tx);
    // Both probe at least once under generation 1.
    let mut seen = HashMap::new();
    while seen.len() < 2 {
        let o = timeout(Duration::from_secs(2), rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(o.generation, 1);
        seen.insert(o.service, ());
    }
    // The reload puts a new service first (so "kept" becomes id 1) and a
    // second monitor, an identical definition, at index 0.
    let mut slower = tcp_monitor(None);
    slower.name = "other".into();
    let second = Model {
        monitors: vec![slower, tcp_monitor(None)].into(),
        services: vec![
            service("new", lo, port, vec![MonitorId::new(0)]),
            service("kept", lo, port, vec![MonitorId::new(1)]),
        ]
        .into(),
        ..Model::default()
    };
    let gates = sextant_health::Gates::open(2);
    let (monitors, kept) = monitors.restart(Arc::new(second), 2, gates);
    assert_eq!(kept, 1, "only (kept, tcp) is the same binding");
    assert_eq!(monitors.len(), 2);
    // From now on only generation 2 under the new numbering: (new, 0) and
    // (kept, 1); nothing of "gone" (which was id 1, monitor 0).
    let mut after = HashMap::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while after.len() < 2 {
        let o = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .unwrap()
            .unwrap();
        if o.generation == 1 {
            continue; // sent before the restart
        }
        assert_eq!(o.generation, 2);
        assert!(
            matches!((o.service.raw(), o.monitor.raw()), (0, 0) | (1, 1)),
            "an observation under the old numbering: {o:?}"
        );
        after.insert((o.service, o.monitor), ());
    }
    drop(monitors);
}

/// Counts the observations of service 0 within `window` (virtual time).
async fn observations_within(
    rx: &mut mpsc::Receiver<Observation>,
    window: Duration,
) -> Vec<Observation> {
    let deadline = tokio::time::Instant::now() + window;
    let mut seen = Vec::new();
    while let Ok(Some(o)) = tokio::time::timeout_at(deadline, rx.recv()).await {
        seen.push(o);
    }
    seen
}

/// `-downTime`: while the engine has a binding's monitor DOWN (its word
/// comes through the gates, `Effect::ProbePace`), the binding is probed
/// every `down_time` instead of every `interval`; the others keep the
/// interval, and the binding itself does again once the engine says UP.
/// (Paused time: the counts do not depend on the machine.)
#[tokio::test(start_paused = true)]
async fn a_binding_the_engine_has_down_is_probed_at_the_down_time_pace() {
    let up = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let up_port = up.local_addr().unwrap().port();
    let down_port = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    let mut paced = tcp_monitor(None);
    paced.interval = Duration::from_millis(200);
    paced.down_time = Some(Duration::from_secs(2));
    let model = Model {
        monitors: vec![paced].into(),
        services: vec![
            service("down", lo, down_port, vec![MonitorId::new(0)]),
            service("up", lo, up_port, vec![MonitorId::new(0)]),
        ]
        .into(),
        ..Model::default()
    };
    let (tx, mut rx) = mpsc::channel::<Observation>(256);
    let gates = Gates::open(2);
    let monitors = start_gated(Arc::new(model), 1, tx, gates.clone());
    // The engine's verdict on the first result: DOWN.
    let first = rx.recv().await.unwrap();
    let mut seen = vec![first.clone()];
    if first.service == ServiceId::new(0) {
        assert!(!first.success);
    }
    gates.set_slow(ServiceId::new(0), 0, true);
    seen.extend(observations_within(&mut rx, Duration::from_millis(5_500)).await);
    let down = seen
        .iter()
        .filter(|o| o.service == ServiceId::new(0))
        .count();
    let up_count = seen
        .iter()
        .filter(|o| o.service == ServiceId::new(1))
        .count();
    // The first probe (t < 1 s of jitter), then every 2 s: 3 or 4 probes in
    // about 6 s; at the 200 ms interval it would be about 30.
    assert!((2..=4).contains(&down), "DOWN probes: {down}");
    assert!(up_count >= 20, "UP probes keep the interval: {up_count}");
    // The engine says UP again: back to the interval (after the 2 s wait
    // already planned at most).
    gates.set_slow(ServiceId::new(0), 0, false);
    let again = observations_within(&mut rx, Duration::from_millis(4_000)).await;
    let down_again = again
        .iter()
        .filter(|o| o.service == ServiceId::new(0))
        .count();
    assert!(
        down_again >= 9,
        "back at the interval: {down_again} probes in 4 s"
    );
    drop(monitors);
    drop(up);
}

/// Without `down_time` a DOWN service keeps the interval (Sextant's
/// default; the appliance's 30 s is written out by saved files).
#[tokio::test(start_paused = true)]
async fn without_down_time_a_down_service_keeps_the_interval() {
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    let down_port = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut m = tcp_monitor(None);
    m.interval = Duration::from_millis(200);
    let model = Model {
        monitors: vec![m].into(),
        services: vec![service("down", lo, down_port, vec![MonitorId::new(0)])].into(),
        ..Model::default()
    };
    let (tx, mut rx) = mpsc::channel::<Observation>(256);
    let monitors = start(Arc::new(model), 1, tx);
    let seen = observations_within(&mut rx, Duration::from_millis(5_500)).await;
    assert!(seen.len() >= 20, "{} probes", seen.len());
    drop(monitors);
}

/// `-reverse YES`: a listening backend is DOWN, a closed port UP, and the
/// detail says why.
#[tokio::test(start_paused = true)]
async fn a_reverse_monitor_reports_the_opposite() {
    let up = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let up_port = up.local_addr().unwrap().port();
    let down_port = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    let mut m = tcp_monitor(None);
    m.reverse = true;
    let model = Model {
        monitors: vec![m].into(),
        services: vec![
            service("listening", lo, up_port, vec![MonitorId::new(0)]),
            service("closed", lo, down_port, vec![MonitorId::new(0)]),
        ]
        .into(),
        ..Model::default()
    };
    let (tx, mut rx) = mpsc::channel::<Observation>(64);
    let monitors = start(Arc::new(model), 1, tx);
    let seen = observations_within(&mut rx, Duration::from_millis(1_500)).await;
    let listening: Vec<_> = seen
        .iter()
        .filter(|o| o.service == ServiceId::new(0))
        .collect();
    let closed: Vec<_> = seen
        .iter()
        .filter(|o| o.service == ServiceId::new(1))
        .collect();
    assert!(!listening.is_empty() && !closed.is_empty(), "{seen:?}");
    for o in &listening {
        assert!(!o.success, "{o:?}");
        assert!(o.detail.contains("reverse monitor"), "{}", o.detail);
        assert!(o.response_time.is_none());
    }
    for o in &closed {
        assert!(o.success, "{o:?}");
        assert!(o.detail.contains("refused"), "{}", o.detail);
    }
    drop(monitors);
    drop(up);
}

/// `-destIP` / `-destPort`: the monitor probes another address than the
/// service's (here a listener on 127.0.0.2, while the service's own
/// address has nothing listening).
#[tokio::test(start_paused = true)]
async fn dest_ip_probes_another_address() {
    let other: IpAddr = "127.0.0.2".parse().unwrap();
    let Ok(listener) = TcpListener::bind((other, 0)).await else {
        panic!("127.0.0.2 is not a loopback address here; the test needs 127.0.0.0/8 on lo");
    };
    let port = listener.local_addr().unwrap().port();
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    let closed = TcpListener::bind((lo, 0))
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut m = tcp_monitor(Some(port));
    m.dest_ip = Some(other);
    let model = Model {
        monitors: vec![m, tcp_monitor(None)].into(),
        services: vec![service(
            "svc",
            lo,
            closed,
            vec![MonitorId::new(0), MonitorId::new(1)],
        )]
        .into(),
        ..Model::default()
    };
    let (tx, mut rx) = mpsc::channel::<Observation>(64);
    let monitors = start(Arc::new(model), 1, tx);
    let seen = observations_within(&mut rx, Duration::from_millis(1_500)).await;
    let via_dest: Vec<_> = seen
        .iter()
        .filter(|o| o.monitor == MonitorId::new(0))
        .collect();
    let own: Vec<_> = seen
        .iter()
        .filter(|o| o.monitor == MonitorId::new(1))
        .collect();
    assert!(!via_dest.is_empty() && !own.is_empty(), "{seen:?}");
    assert!(via_dest.iter().all(|o| o.success), "{via_dest:?}");
    assert!(
        via_dest[0].detail.contains(&format!("127.0.0.2:{port}")),
        "{}",
        via_dest[0].detail
    );
    assert!(own.iter().all(|o| !o.success), "{own:?}");
    drop(monitors);
    drop(listener);
}
