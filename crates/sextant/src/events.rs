//! What happened, for dashboards and scripts: each service's recent
//! transitions (`/v1/services/{name}/history`) and a broadcast of every
//! event (`/v1/events`).
//!
//! The history is kept here, at the edge, rather than in the state engine:
//! it is a record of what the engine decided, not an input of any decision,
//! so keeping it out of the engine keeps the published snapshot (copied on
//! every publication) and the replays free of it; the state task writes it
//! from the engine's `Transition` effects, by service name, so a reload
//! keeps it as it keeps the service.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use sextant_api::HistoryEntry;
use tokio::sync::broadcast;

/// Transitions kept per service.
pub const HISTORY_PER_SERVICE: usize = 100;

/// Events a slow `/v1/events` client may fall behind before it misses some.
const BROADCAST_CAPACITY: usize = 1024;

/// One event: its name (`transition`, `maintenance`, `reload`, `mep`,
/// `vrrp`) and its data, one JSON object.
#[derive(Debug, Clone)]
pub struct ApiEvent {
    pub name: &'static str,
    pub data: serde_json::Value,
}

/// The broadcast every `/v1/events` client subscribes to. Sending never
/// waits: a client that falls behind by more than the capacity misses the
/// oldest events and is told how many.
#[derive(Debug, Clone)]
pub struct Events {
    tx: broadcast::Sender<Arc<ApiEvent>>,
}

impl Default for Events {
    fn default() -> Self {
        Events {
            tx: broadcast::channel(BROADCAST_CAPACITY).0,
        }
    }
}

impl Events {
    /// Sends `data` to every client connected now (none: dropped).
    pub fn send(&self, name: &'static str, data: serde_json::Value) {
        let _ = self.tx.send(Arc::new(ApiEvent { name, data }));
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<ApiEvent>> {
        self.tx.subscribe()
    }
}

/// The last [`HISTORY_PER_SERVICE`] transitions of each service, by
/// lower-case name.
#[derive(Debug, Default)]
pub struct History {
    services: Mutex<HashMap<String, VecDeque<HistoryEntry>>>,
}

impl History {
    pub fn record(&self, service: &str, entry: HistoryEntry) {
        let Ok(mut map) = self.services.lock() else {
            return;
        };
        let ring = map.entry(service.to_ascii_lowercase()).or_default();
        if ring.len() == HISTORY_PER_SERVICE {
            ring.pop_front();
        }
        ring.push_back(entry);
    }

    /// Oldest first.
    pub fn get(&self, service: &str) -> Vec<HistoryEntry> {
        self.services
            .lock()
            .ok()
            .and_then(|m| m.get(&service.to_ascii_lowercase()).cloned())
            .map(Vec::from)
            .unwrap_or_default()
    }

    /// After a reload: forgets the services no longer configured.
    pub fn retain<'a>(&self, names: impl Iterator<Item = &'a str>) {
        let keep: HashSet<String> = names.map(str::to_ascii_lowercase).collect();
        if let Ok(mut map) = self.services.lock() {
            map.retain(|k, _| keep.contains(k));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: usize) -> HistoryEntry {
        HistoryEntry {
            time: format!("t{i}"),
            from: "UP".into(),
            to: "DOWN".into(),
            reason: format!("r{i}"),
        }
    }

    #[test]
    fn history_is_bounded_newest_last_and_follows_reloads() {
        let h = History::default();
        for i in 0..HISTORY_PER_SERVICE + 5 {
            h.record("Web-1", entry(i));
        }
        let got = h.get("web-1");
        assert_eq!(got.len(), HISTORY_PER_SERVICE);
        assert_eq!(got[0].time, "t5");
        assert_eq!(
            got.last().map(|e| e.time.as_str()),
            Some(format!("t{}", HISTORY_PER_SERVICE + 4).as_str())
        );
        h.retain(["other"].into_iter());
        assert!(h.get("web-1").is_empty());
    }

    #[test]
    fn a_lagging_subscriber_is_told_how_many_it_missed() {
        let events = Events::default();
        let mut rx = events.subscribe();
        for _ in 0..BROADCAST_CAPACITY + 3 {
            events.send("reload", serde_json::json!({}));
        }
        assert!(matches!(
            rx.try_recv(),
            Err(broadcast::error::TryRecvError::Lagged(3))
        ));
    }
}
