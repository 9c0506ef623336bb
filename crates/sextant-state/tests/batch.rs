//! `Engine::apply_all`: the same outcome as one `apply` per event, with one
//! publication for the whole batch.

mod common;

use common::probe;
use std::sync::Arc;
use std::time::Duration;

use sextant_core::{Model, Monitor, MonitorKind, ServiceId};
use sextant_state::{Effect, Engine};
use sextant_test_support::model::monitored_site;

/// A local site with `n` services, each with one TCP monitor.
fn model(n: usize) -> Arc<Model> {
    Arc::new(monitored_site(n, Monitor::new("tcp", MonitorKind::Tcp)))
}

/// Everything but the publications, comparable across the two runs.
fn summary(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Publish(_) => None,
            Effect::Transition {
                service,
                up,
                reason,
            } => Some(format!("transition {service} {up} {reason}")),
            Effect::Ready => Some("ready".into()),
            other => Some(format!("{other:?}")),
        })
        .collect()
}

fn publications(effects: &[Effect]) -> usize {
    effects
        .iter()
        .filter(|e| matches!(e, Effect::Publish(_)))
        .count()
}

#[test]
fn a_batch_has_the_effects_of_its_events_and_one_publication() {
    let n = 50;
    let start = Duration::from_secs(1_800_000_000);
    let now = start + Duration::from_millis(10);
    let m = model(n);
    // Every service's first result, half of them failing.
    let events = || (0..n as u32).map(|i| probe(ServiceId::new(i), i % 2 == 0));

    let (mut one_by_one, _) = Engine::new(Arc::clone(&m), 1, start);
    let mut sequential = Vec::new();
    for e in events() {
        sequential.extend(one_by_one.apply(e, now));
    }
    let (mut batched, _) = Engine::new(Arc::clone(&m), 1, start);
    let batch = batched.apply_all(events(), now);

    assert_eq!(summary(&batch), summary(&sequential));
    assert!(summary(&batch).iter().any(|s| s == "ready"));
    // Half the first results are failures, each a transition published at
    // once; a first success changes only the reason (published later).
    assert_eq!(
        publications(&sequential),
        n / 2,
        "one publication per transition"
    );
    assert_eq!(publications(&batch), 1);
    let Some(Effect::Publish(last)) = batch.iter().rev().find(|e| matches!(e, Effect::Publish(_)))
    else {
        unreachable!()
    };
    let Some(Effect::Publish(want)) = sequential
        .iter()
        .rev()
        .find(|e| matches!(e, Effect::Publish(_)))
    else {
        unreachable!()
    };
    for i in 0..n as u32 {
        assert_eq!(
            last.is_up(ServiceId::new(i)),
            want.is_up(ServiceId::new(i)),
            "service {i}"
        );
        assert_eq!(last.is_up(ServiceId::new(i)), i % 2 == 0, "service {i}");
    }
    assert!(batched.apply_all(Vec::new(), now).is_empty());
}
