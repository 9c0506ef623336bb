//! The metric-driven methods (LEASTCONNECTION, LEASTRESPONSETIME,
//! LEASTBANDWIDTH, LEASTPACKETS, CUSTOMLOAD) on hand-built snapshots: the
//! lowest figure wins (per unit of weight for LEAST*), ties rotate, a
//! missing figure hands over to the backup method, visibly.

use std::net::IpAddr;
use std::sync::Arc;

use proptest::prelude::*;
use sextant_core::*;
use sextant_test_support::alloc::{Counting, allocations};
use sextant_test_support::model::{ip, with_down, www_model as model};

// The "decide does not allocate" test counts this thread's allocations.
#[global_allocator]
static GLOBAL: Counting = Counting;

const THREE: &[(&str, &str, u32)] = &[
    ("a", "192.0.2.1", 1),
    ("b", "192.0.2.2", 1),
    ("c", "192.0.2.3", 1),
];

/// The method of each load kind.
const METHODS: [(LbMethod, LoadKind); 5] = [
    (LbMethod::LeastConnection, LoadKind::Connections),
    (LbMethod::LeastResponseTime, LoadKind::ResponseTime),
    (LbMethod::LeastBandwidth, LoadKind::Bandwidth),
    (LbMethod::LeastPackets, LoadKind::Packets),
    (LbMethod::CustomLoad, LoadKind::CustomLoad),
];

/// A snapshot whose services have `figures` (one per service, `None` =
/// missing) for `kind` and nothing else.
fn snap_with(m: Model, kind: LoadKind, figures: &[Option<u64>]) -> Snapshot {
    let s = Snapshot::new(Arc::new(m), 1);
    s.with_metrics(metrics(kind, figures))
}

fn metrics(kind: LoadKind, figures: &[Option<u64>]) -> Arc<[ServiceMetrics]> {
    figures
        .iter()
        .map(|f| {
            let mut m = ServiceMetrics::default();
            m.set(kind, *f);
            m
        })
        .collect()
}

fn query() -> Query<'static> {
    Query {
        name: "www.example.com",
        qtype: QueryType::A,
        source: ip("198.51.100.1"),
        ecs: None,
    }
}

fn ask(s: &Snapshot, cursor: &mut Cursor) -> (Decision, Vec<IpAddr>) {
    let mut out = AnswerBuf::default();
    let d = decide(s, &query(), cursor, &NoSessions, &mut out, &mut NoTrace);
    (d, out.addrs)
}

fn explain(s: &Snapshot) -> Vec<String> {
    let mut out = AnswerBuf::default();
    let mut t = VecTrace::default();
    decide(
        s,
        &query(),
        &mut Cursor::peeking(0),
        &NoSessions,
        &mut out,
        &mut t,
    );
    t.0.iter().map(|e| e.describe(s.model())).collect()
}

// -- tests

#[test]
fn each_method_picks_the_lowest_figure() {
    for (method, kind) in METHODS {
        let s = snap_with(model(THREE, method), kind, &[Some(30), Some(10), Some(20)]);
        let mut c = Cursor::new(7);
        for _ in 0..5 {
            let (d, addrs) = ask(&s, &mut c);
            assert_eq!(d.reason, Reason::Method(method), "{method}");
            assert_eq!(addrs, vec![ip("192.0.2.2")], "{method}");
            assert_eq!(d.ecs_scope, 0);
        }
        // The lowest goes DOWN: the next lowest answers.
        let down = with_down(&s, &[ServiceId::new(1)]);
        assert_eq!(ask(&down, &mut c).1, vec![ip("192.0.2.3")], "{method}");
    }
}

#[test]
fn least_methods_divide_by_weight_and_customload_does_not() {
    let services: &[(&str, &str, u32)] = &[("a", "192.0.2.1", 5), ("b", "192.0.2.2", 1)];
    // a: 10 / 5 = 2 per unit of weight; b: 3 / 1 = 3.
    for (method, kind) in METHODS {
        let s = snap_with(model(services, method), kind, &[Some(10), Some(3)]);
        let want = if method == LbMethod::CustomLoad {
            "192.0.2.2" // 3 < 10: weights do not count
        } else {
            "192.0.2.1"
        };
        let (d, addrs) = ask(&s, &mut Cursor::new(0));
        assert_eq!(d.reason, Reason::Method(method));
        assert_eq!(addrs, vec![ip(want)], "{method}");
    }
    // Exact comparison: 7/3 < 5/2 even though both round to 2.
    let services: &[(&str, &str, u32)] = &[("a", "192.0.2.1", 2), ("b", "192.0.2.2", 3)];
    let s = snap_with(
        model(services, LbMethod::LeastConnection),
        LoadKind::Connections,
        &[Some(5), Some(7)],
    );
    assert_eq!(ask(&s, &mut Cursor::new(0)).1, vec![ip("192.0.2.2")]);
}

#[test]
fn ties_rotate_among_the_tied_only() {
    for (method, kind) in METHODS {
        let s = snap_with(model(THREE, method), kind, &[Some(5), Some(9), Some(5)]);
        let mut c = Cursor::new(3);
        let got: Vec<IpAddr> = (0..6).map(|_| ask(&s, &mut c).1[0]).collect();
        let a = got.iter().filter(|x| **x == ip("192.0.2.1")).count();
        let c3 = got.iter().filter(|x| **x == ip("192.0.2.3")).count();
        assert_eq!((a, c3), (3, 3), "{method}: {got:?}");
        assert!(got.windows(2).all(|w| w[0] != w[1]), "{method}: {got:?}");
    }
    // Equal per unit of weight: 4/2 and 2/1 tie, shared by weight (2:1).
    let services: &[(&str, &str, u32)] = &[("a", "192.0.2.1", 2), ("b", "192.0.2.2", 1)];
    let s = snap_with(
        model(services, LbMethod::LeastConnection),
        LoadKind::Connections,
        &[Some(4), Some(2)],
    );
    let mut c = Cursor::new(0);
    let got: Vec<IpAddr> = (0..6).map(|_| ask(&s, &mut c).1[0]).collect();
    assert_eq!(got.iter().filter(|x| **x == ip("192.0.2.1")).count(), 4);
}

#[test]
fn one_missing_figure_falls_back_with_the_reason() {
    for (method, kind) in METHODS {
        let mut m = model(THREE, method);
        m.vservers[VServerId::new(0)].backup_method = Some(LbMethod::SourceIpHash);
        let s = snap_with(m, kind, &[Some(1), None, Some(2)]);
        let (d, addrs) = ask(&s, &mut Cursor::new(0));
        assert_eq!(
            d.reason,
            Reason::Fallback {
                method,
                backup: LbMethod::SourceIpHash,
                why: FallbackWhy::NoLoadMetrics
            }
        );
        assert_eq!(addrs.len(), 1);
        let steps = explain(&s).join("\n");
        assert!(
            steps.contains("b (192.0.2.2:80) has no"),
            "{method}: {steps}"
        );
        assert!(
            steps.contains(&format!("method {method} cannot decide")),
            "{steps}"
        );
        assert!(
            steps.contains("backup method SOURCEIPHASH decides"),
            "{steps}"
        );
        assert!(steps.contains("SOURCEIPHASH picked"), "{steps}");
    }
}

#[test]
fn no_metrics_at_all_falls_back_to_round_robin() {
    let s = Snapshot::new(Arc::new(model(THREE, LbMethod::LeastConnection)), 1);
    let (d, _) = ask(&s, &mut Cursor::new(0));
    assert_eq!(
        d.reason,
        Reason::Fallback {
            method: LbMethod::LeastConnection,
            backup: LbMethod::RoundRobin,
            why: FallbackWhy::NoLoadMetrics
        }
    );
}

#[test]
fn only_candidates_need_figures() {
    // b lacks the figure but is DOWN: the method still decides.
    let s = snap_with(
        model(THREE, LbMethod::LeastConnection),
        LoadKind::Connections,
        &[Some(8), None, Some(4)],
    );
    let s = with_down(&s, &[ServiceId::new(1)]);
    let (d, addrs) = ask(&s, &mut Cursor::new(0));
    assert_eq!(d.reason, Reason::Method(LbMethod::LeastConnection));
    assert_eq!(addrs, vec![ip("192.0.2.3")]);
    // Another figure than the method's does not help.
    let s = snap_with(
        model(THREE, LbMethod::LeastConnection),
        LoadKind::ResponseTime,
        &[Some(8), Some(1), Some(4)],
    );
    assert!(matches!(
        ask(&s, &mut Cursor::new(0)).0.reason,
        Reason::Fallback { .. }
    ));
}

#[test]
fn a_backup_method_can_decide_by_load() {
    let mut m = model(THREE, LbMethod::Rtt);
    m.vservers[VServerId::new(0)].backup_method = Some(LbMethod::LeastResponseTime);
    let s = snap_with(
        m,
        LoadKind::ResponseTime,
        &[Some(900), Some(1200), Some(300)],
    );
    let (d, addrs) = ask(&s, &mut Cursor::new(0));
    assert_eq!(
        d.reason,
        Reason::Fallback {
            method: LbMethod::Rtt,
            backup: LbMethod::LeastResponseTime,
            why: FallbackWhy::NoRtt
        }
    );
    assert_eq!(addrs, vec![ip("192.0.2.3")]);
}

#[test]
fn multi_ip_response_is_unaffected() {
    for (method, kind) in METHODS {
        let mut m = model(THREE, method);
        m.vservers[VServerId::new(0)].multi_ip_response = true;
        let s = snap_with(m, kind, &[Some(30), Some(10), Some(20)]);
        let (d, addrs) = ask(&s, &mut Cursor::new(0));
        assert_eq!(d.reason, Reason::MultiIp);
        assert_eq!(
            addrs,
            ["192.0.2.1", "192.0.2.2", "192.0.2.3"].map(ip).to_vec()
        );
        let down = with_down(&s, &[ServiceId::new(0)]);
        assert_eq!(ask(&down, &mut Cursor::new(0)).1.len(), 2);
    }
}

#[test]
fn persistence_keeps_working() {
    struct Kept(ServiceId);
    impl Sessions for Kept {
        fn lookup(&self, _: VServerId, _: IpAddr) -> Option<ServiceId> {
            Some(self.0)
        }
    }
    let mut m = model(THREE, LbMethod::LeastConnection);
    m.vservers[VServerId::new(0)].persistence = Some(Persistence {
        timeout: std::time::Duration::from_secs(60),
        v4_mask: 32,
        v6_mask: 128,
    });
    let s = snap_with(m, LoadKind::Connections, &[Some(30), Some(10), Some(20)]);
    let mut out = AnswerBuf::default();
    let d = decide(
        &s,
        &query(),
        &mut Cursor::new(0),
        &Kept(ServiceId::new(0)),
        &mut out,
        &mut NoTrace,
    );
    assert_eq!(d.reason, Reason::Persistence);
    assert_eq!(out.addrs, vec![ip("192.0.2.1")]);
    // A new client gets the least loaded, and sticks to it.
    let d = decide(
        &s,
        &query(),
        &mut Cursor::new(0),
        &NoSessions,
        &mut out,
        &mut NoTrace,
    );
    assert_eq!(d.reason, Reason::Method(LbMethod::LeastConnection));
    assert_eq!(d.stick.map(|st| st.service), Some(ServiceId::new(1)));
}

#[test]
fn explain_describes_every_figure() {
    let services: &[(&str, &str, u32)] = &[
        ("web-1", "192.0.2.1", 1),
        ("web-2", "192.0.2.2", 2),
        ("web-3", "192.0.2.3", 1),
    ];
    let s = snap_with(
        model(services, LbMethod::LeastConnection),
        LoadKind::Connections,
        &[Some(12), Some(10), Some(5)],
    );
    let steps = explain(&s);
    let text = steps.join("\n");
    for want in [
        "web-1 (192.0.2.1:80) has 12 connections",
        "web-2 (192.0.2.2:80) has 10 connections, weight 2: 5 per unit of weight",
        "web-3 (192.0.2.3:80) has 5 connections",
        "LEASTCONNECTION: 2 candidates share the lowest connections per unit of weight; round robin among them",
        "passed over web-1 (192.0.2.1:80): higher connections per unit of weight than the lowest",
        "LEASTCONNECTION picked web-2 (192.0.2.2:80)",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }

    let samples: [(LbMethod, LoadKind, u64, &str); 4] = [
        (
            LbMethod::LeastResponseTime,
            LoadKind::ResponseTime,
            1_250,
            "web-1 (192.0.2.1:80) responds in 1.2ms",
        ),
        (
            LbMethod::LeastBandwidth,
            LoadKind::Bandwidth,
            12_500_000,
            "web-1 (192.0.2.1:80) uses 12.5 Mbit/s",
        ),
        (
            LbMethod::LeastPackets,
            LoadKind::Packets,
            500,
            "web-1 (192.0.2.1:80) handles 500 packets/s",
        ),
        (
            LbMethod::CustomLoad,
            LoadKind::CustomLoad,
            40,
            "web-1 (192.0.2.1:80) has custom load 40",
        ),
    ];
    for (method, kind, figure, want) in samples {
        let s = snap_with(model(&services[..1], method), kind, &[Some(figure)]);
        let text = explain(&s).join("\n");
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
        assert!(
            text.contains(&format!("{method}: one candidate has the lowest")),
            "{text}"
        );
    }

    let s = snap_with(
        model(services, LbMethod::LeastConnection),
        LoadKind::Connections,
        &[Some(12), None, Some(5)],
    );
    let text = explain(&s).join("\n");
    assert!(
        text.contains("web-2 (192.0.2.2:80) has no connection count yet"),
        "{text}"
    );
    assert!(
        text.contains("method LEASTCONNECTION cannot decide (an UP candidate has no figure for this method yet"),
        "{text}"
    );
}

#[test]
fn states_and_metrics_are_kept_by_each_other() {
    let s = snap_with(
        model(THREE, LbMethod::LeastConnection),
        LoadKind::Connections,
        &[Some(1), Some(2), Some(3)],
    );
    let down = with_down(&s, &[ServiceId::new(0)]);
    assert_eq!(down.metrics(ServiceId::new(0)).connections, Some(1));
    assert_eq!(down.metrics(ServiceId::new(2)).connections, Some(3));
    assert!(!down.is_up(ServiceId::new(0)));
    let again = down.with_metrics(metrics(LoadKind::Connections, &[Some(9), None, None]));
    assert!(!again.is_up(ServiceId::new(0)));
    assert!(again.is_up(ServiceId::new(1)));
    assert_eq!(again.metrics(ServiceId::new(0)).connections, Some(9));
    assert_eq!(again.metrics(ServiceId::new(1)), &ServiceMetrics::default());
    // Out of range reads as "no figures".
    assert!(again.metrics(ServiceId::new(99)).is_empty());
    assert_eq!(again.metrics_table().len(), 3);
    // A fresh snapshot has no figures.
    let fresh = Snapshot::new(Arc::new(model(THREE, LbMethod::RoundRobin)), 1);
    assert!(fresh.metrics_table().iter().all(|m| m.is_empty()));
}

#[test]
fn deciding_by_load_does_not_allocate() {
    for (method, kind) in METHODS {
        for figures in [
            [Some(3), Some(1), Some(2)],
            [Some(1), Some(1), Some(2)],
            [Some(3), None, Some(2)],
        ] {
            let s = snap_with(model(THREE, method), kind, &figures);
            let q = query();
            let mut cursor = Cursor::new(1);
            let mut out = AnswerBuf::default();
            // Warm up: the answer buffer grows once.
            decide(&s, &q, &mut cursor, &NoSessions, &mut out, &mut NoTrace);
            let before = allocations();
            for _ in 0..100 {
                std::hint::black_box(decide(
                    &s,
                    &q,
                    &mut cursor,
                    &NoSessions,
                    &mut out,
                    &mut NoTrace,
                ));
            }
            assert_eq!(allocations(), before, "{method} {figures:?}");
        }
    }
}

proptest! {
    /// Whatever the figures, weights and health, the answer has the lowest
    /// figure per unit of weight among the UP services.
    #[test]
    fn answer_is_always_a_lowest(figures in proptest::collection::vec(0u64..50, 5),
                                 weights in proptest::collection::vec(1u32..5, 5),
                                 down in proptest::collection::vec(any::<bool>(), 5),
                                 seed in any::<u64>()) {
        let addrs: Vec<String> = (1..=5).map(|i| format!("192.0.2.{i}")).collect();
        let names = ["a", "b", "c", "d", "e"];
        let svcs: Vec<(&str, &str, u32)> =
            (0..5).map(|i| (names[i], addrs[i].as_str(), weights[i])).collect();
        let figs: Vec<Option<u64>> = figures.iter().map(|f| Some(*f)).collect();
        let s = snap_with(model(&svcs, LbMethod::LeastConnection), LoadKind::Connections, &figs);
        let down_ids: Vec<ServiceId> = (0..5).filter(|i| down[*i]).map(ServiceId::from_index).collect();
        prop_assume!(down_ids.len() < 5);
        let s = with_down(&s, &down_ids);
        let (_, got) = ask(&s, &mut Cursor::new(seed));
        prop_assert_eq!(got.len(), 1);
        let idx = addrs.iter().position(|a| ip(a) == got[0]).unwrap();
        prop_assert!(!down[idx]);
        for j in 0..5 {
            if !down[j] {
                // figures[idx] / weights[idx] <= figures[j] / weights[j]
                prop_assert!(figures[idx] * u64::from(weights[j]) <= figures[j] * u64::from(weights[idx]));
            }
        }
    }
}
