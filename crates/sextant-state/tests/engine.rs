//! Engine properties that the replay files do not show one by one.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use sextant_core::{Model, Monitor, MonitorId, MonitorKind, ServiceId, SiteId};
use sextant_state::{Effect, Engine, Event, PeerServices, Prepared, Probe, ReportedService};
use sextant_test_support::model::{ModelBuilder, ip, service};

const T0: Duration = Duration::from_secs(1_800_000_000);

/// A local site `l` and a remote site `r`, `n` services each, every local
/// one with a TCP monitor.
fn model(n: usize) -> Arc<Model> {
    let mut b = ModelBuilder::new();
    b.add_site("l", ip("127.0.0.1"));
    b.add_site("r", ip("127.0.0.2"));
    b.set_local("l");
    b.model.monitors.push(Monitor::new("tcp", MonitorKind::Tcp));
    for site in 0..2u32 {
        for i in 0..n {
            let mut s = service(
                &format!("s{site}-{i}"),
                IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + (site << 20) + i as u32)),
            );
            s.site = SiteId::new(site);
            if site == 0 {
                s.monitors = vec![MonitorId::new(0)];
            }
            b.push_service(s);
        }
    }
    Arc::new(b.build())
}

fn states(effects: &[Effect]) -> Option<Vec<bool>> {
    effects.iter().rev().find_map(|e| match e {
        Effect::Publish(s) => Some(
            (0..s.model().services.len() as u32)
                .map(|i| s.is_up(ServiceId::new(i)))
                .collect(),
        ),
        _ => None,
    })
}

#[test]
fn hostile_ids_and_unknown_sites_change_nothing() {
    let (mut e, _) = Engine::new(model(3), 1, T0);
    let t = T0 + Duration::from_secs(1);
    for event in [
        Event::Probe(Probe {
            service: ServiceId::new(99),
            monitor: MonitorId::new(0),
            success: false,
            detail: "x".into(),
            response_time: None,
        }),
        Event::Probe(Probe {
            service: ServiceId::new(0),
            monitor: MonitorId::new(42),
            success: false,
            detail: "x".into(),
            response_time: None,
        }),
        Event::LocalFigures {
            service: ServiceId::new(u32::MAX),
            metrics: Default::default(),
        },
        Event::PeerDown {
            site: "nowhere".into(),
            reason: "?".into(),
        },
        Event::PeerServices(PeerServices {
            site: "nowhere".into(),
            via: None,
            full: true,
            entries: Vec::new(),
            removed: vec![(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0)],
        }),
    ] {
        let effects = e.apply(event, t);
        assert!(
            effects
                .iter()
                .all(|e| matches!(e, Effect::Publish(_) | Effect::Ready)),
            "{effects:?}"
        );
    }
}

#[test]
fn a_reload_of_the_same_configuration_keeps_every_state_and_logs_no_transition() {
    let m = model(500);
    let (mut e, first) = Engine::new(Arc::clone(&m), 1, T0);
    let mut last = states(&first);
    let mut t = T0;
    for i in 0..500u32 {
        t += Duration::from_millis(1);
        let fx = e.apply(
            Event::Probe(Probe {
                service: ServiceId::new(i),
                monitor: MonitorId::new(0),
                success: i % 3 != 0,
                detail: "probe".into(),
                response_time: None,
            }),
            t,
        );
        last = states(&fx).or(last);
    }
    let fx = e.apply(
        Event::PeerServices(PeerServices {
            site: "r".into(),
            via: None,
            full: true,
            entries: (0..500)
                .filter(|i| i % 2 == 0)
                .map(|i| ReportedService {
                    name: format!("remote name {i}").into(),
                    ip: m.services[ServiceId::new(500 + i)].ip,
                    port: 80,
                    public_ip: None,
                    public_port: None,
                    up: i % 4 == 0,
                    metrics: Default::default(),
                })
                .collect(),
            removed: Vec::new(),
        }),
        t,
    );
    last = states(&fx).or(last);
    let before = states(&e.apply(Event::Tick, t + Duration::from_secs(1)))
        .or(last)
        .expect("published");
    let effects = e.apply(
        Event::Reload(Box::new(Prepared::new(Arc::clone(&m)))),
        t + Duration::from_secs(2),
    );
    assert!(
        !effects
            .iter()
            .any(|e| matches!(e, Effect::Transition { .. })),
        "{:?}",
        effects
            .iter()
            .filter(|e| matches!(e, Effect::Transition { .. }))
            .collect::<Vec<_>>()
    );
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Restart { generation: 2, .. }))
    );
    assert_eq!(
        states(&effects).expect("a reload publishes at once"),
        before
    );
    assert_eq!(before.iter().filter(|up| !**up).count(), 167 + 375);
}

#[test]
fn a_publication_shares_what_did_not_change() {
    let (mut e, first) = Engine::new(model(2000), 1, T0);
    let Some(Effect::Publish(a)) = first
        .iter()
        .find(|e| matches!(e, Effect::Publish(_)))
        .cloned()
    else {
        panic!("no first publication")
    };
    let effects = e.apply(
        Event::Probe(Probe {
            service: ServiceId::new(0),
            monitor: MonitorId::new(0),
            success: false,
            detail: "refused".into(),
            response_time: None,
        }),
        T0 + Duration::from_secs(1),
    );
    let Some(Effect::Publish(b)) = effects
        .iter()
        .find(|e| matches!(e, Effect::Publish(_)))
        .cloned()
    else {
        panic!("a transition is published at once: {effects:?}")
    };
    assert!(!b.is_up(ServiceId::new(0)) && a.is_up(ServiceId::new(0)));
    assert_eq!(
        &*b.status().get(ServiceId::new(0)).expect("status").reason,
        "monitor tcp: refused (1 consecutive failure)"
    );
    // Unchanged services' statuses are the same allocations in both.
    let (sa, sb) = (
        a.status().get(ServiceId::new(1999)).expect("a"),
        b.status().get(ServiceId::new(1999)).expect("b"),
    );
    assert!(std::ptr::eq(sa, sb));
}

/// Probes that fail for a reason of this host (`Event::ProbeLocalError`)
/// are shown as the monitor's last result and counted nowhere: however
/// many come, the service stays UP.
#[test]
fn local_probe_errors_are_shown_and_never_counted() {
    let (mut e, _) = Engine::new(model(1), 1, T0);
    let s0 = ServiceId::new(0);
    let mut t = T0 + Duration::from_secs(1);
    let mut all = e.apply(
        Event::Probe(Probe {
            service: s0,
            monitor: MonitorId::new(0),
            success: true,
            detail: "TCP connect in 0.2ms".into(),
            response_time: Some(Duration::from_micros(200)),
        }),
        t,
    );
    for _ in 0..50 {
        t += Duration::from_secs(1);
        let effects = e.apply(
            Event::ProbeLocalError {
                service: s0,
                monitor: MonitorId::new(0),
                detail: "TCP connect to 10.0.0.0:80 failed: Too many open files (os error 24)"
                    .into(),
            },
            t,
        );
        assert!(
            !effects
                .iter()
                .any(|e| matches!(e, Effect::Transition { .. })),
            "{effects:?}"
        );
        all.extend(effects);
    }
    all.extend(e.apply(Event::Tick, t + Duration::from_secs(60)));
    let published = all
        .iter()
        .rev()
        .find_map(|e| match e {
            Effect::Publish(s) => Some(s.clone()),
            _ => None,
        })
        .expect("a publication");
    assert!(published.is_up(s0));
    let status = published.status().get(s0).expect("status");
    let detail = status.monitors[0].last_detail.as_deref().unwrap_or("");
    assert!(
        detail.starts_with("local error, not counted") && detail.contains("Too many open files"),
        "{detail}"
    );
}

/// `-monThreshold 1` with three monitors of weight 1 (what `sextant
/// import` writes for an LB vserver's backends): the service stays UP while
/// one monitor is UP, and goes DOWN when the last one fails; with the
/// default threshold 0 one DOWN monitor takes it DOWN.
#[test]
fn a_monitor_threshold_keeps_a_service_up_while_enough_monitors_are_up() {
    for threshold in [0u32, 1] {
        let mut b = ModelBuilder::new();
        b.add_site("l", ip("127.0.0.1"));
        b.set_local("l");
        for n in 0..3 {
            let mut m = Monitor::new(format!("m{n}"), MonitorKind::Tcp);
            m.retries = 1;
            b.model.monitors.push(m);
        }
        let mut s = service("s", ip("10.0.0.1"));
        s.monitors = (0..3).map(MonitorId::new).collect();
        s.monitor_weights = vec![1, 1, 1];
        s.mon_threshold = threshold;
        b.push_service(s);
        let (mut e, _) = Engine::new(Arc::new(b.build()), 1, T0);
        let mut up = None;
        let mut probe = |e: &mut Engine, m: u32, success: bool, at: u64| {
            let effects = e.apply(
                Event::Probe(Probe {
                    service: ServiceId::new(0),
                    monitor: MonitorId::new(m),
                    success,
                    detail: if success { "ok" } else { "refused" }.into(),
                    response_time: None,
                }),
                T0 + Duration::from_secs(at),
            );
            if let Some(s) = states(&effects) {
                up = Some(s[0]);
            }
            up
        };
        probe(&mut e, 0, true, 1);
        probe(&mut e, 1, true, 1);
        probe(&mut e, 2, true, 1);
        assert_eq!(probe(&mut e, 0, false, 2), Some(threshold > 0));
        assert_eq!(probe(&mut e, 1, false, 3), Some(threshold > 0));
        assert_eq!(probe(&mut e, 2, false, 4), Some(false));
        // One monitor back: UP again with the threshold, not without.
        assert_eq!(probe(&mut e, 1, true, 5), Some(threshold > 0));
    }
}

/// A `disable` line the running configuration did not have marks its
/// object on reload (reason: the line); one it already had does not come
/// back after the operator enabled the object; a mark the operator set is
/// not replaced.
#[test]
fn a_reload_applies_only_the_disable_lines_that_are_new() {
    use sextant_core::{AdminKind, AdminState, ConfigDisabled};
    use sextant_state::AdminChange;
    let plain = model(2);
    let mut with_line = (*plain).clone();
    with_line.config_disabled = vec![ConfigDisabled {
        kind: AdminKind::Service,
        name: "s0-1".into(),
        line: 7,
    }];
    let with_line = Arc::new(with_line);
    let (mut e, _) = Engine::new(Arc::clone(&plain), 1, T0);
    let reload = |e: &mut Engine, m: &Arc<Model>, at: Duration| {
        e.apply(
            Event::Reload(Box::new(Prepared::new(Arc::clone(m)).at(1_000))),
            at,
        )
    };
    let effects = reload(&mut e, &with_line, T0 + Duration::from_secs(1));
    let marks = e.admin_records();
    assert_eq!(marks.len(), 1, "{marks:?}");
    assert_eq!(
        (marks[0].kind, marks[0].name.as_str(), marks[0].mark.state),
        (AdminKind::Service, "s0-1", AdminState::Disabled)
    );
    assert_eq!(
        marks[0].mark.reason.as_deref(),
        Some("disabled in the configuration (line 7)")
    );
    assert_eq!(marks[0].mark.since_unix_ms, 1_000);
    assert!(
        effects
            .iter()
            .any(|f| matches!(f, Effect::SaveAdmin(r) if r == &marks)),
        "the new mark is saved"
    );
    // The operator enables it: the same configuration reloaded keeps it
    // enabled.
    e.apply(
        Event::Admin(AdminChange {
            kind: AdminKind::Service,
            name: "s0-1".into(),
            state: AdminState::Enabled,
            reason: None,
            at_unix_ms: 2_000,
        }),
        T0 + Duration::from_secs(2),
    );
    assert!(e.admin_records().is_empty());
    reload(&mut e, &with_line, T0 + Duration::from_secs(3));
    assert!(e.admin_records().is_empty(), "{:?}", e.admin_records());
    // Removed and added back: new again, so it applies; but a drain the
    // operator set stays as it is.
    reload(&mut e, &plain, T0 + Duration::from_secs(4));
    e.apply(
        Event::Admin(AdminChange {
            kind: AdminKind::Service,
            name: "s0-1".into(),
            state: AdminState::Draining,
            reason: Some("moving".into()),
            at_unix_ms: 3_000,
        }),
        T0 + Duration::from_secs(5),
    );
    reload(&mut e, &with_line, T0 + Duration::from_secs(6));
    let marks = e.admin_records();
    assert_eq!(marks.len(), 1, "{marks:?}");
    assert_eq!(marks[0].mark.state, AdminState::Draining);
    assert_eq!(marks[0].mark.reason.as_deref(), Some("moving"));
}
