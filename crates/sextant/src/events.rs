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

/// Events a new `/v1/events` client is sent first, the newest of them, so
/// that a page opened after an incident shows what already happened.
pub const REPLAYED: usize = 100;

/// ... and none older than this.
pub const REPLAY_AGE: std::time::Duration = std::time::Duration::from_secs(600);

/// One event: its number (from 1, the SSE `id`), its name (`transition`,
/// `maintenance`, `reload`, `mep`, `vrrp`) and its data, one JSON object
/// (with the RFC 3339 `time` it was sent, when it had none of its own).
#[derive(Debug, Clone)]
pub struct ApiEvent {
    pub id: u64,
    pub name: &'static str,
    pub data: serde_json::Value,
    at: std::time::Instant,
}

/// The broadcast every `/v1/events` client subscribes to, and the last
/// [`REPLAYED`] events for those that connect later. Sending never waits:
/// a client that falls behind by more than the capacity misses the oldest
/// events and is told how many.
#[derive(Debug, Clone)]
pub struct Events {
    tx: broadcast::Sender<Arc<ApiEvent>>,
    recent: Arc<Mutex<(u64, VecDeque<Arc<ApiEvent>>)>>,
    /// When this process started (ms since the epoch): the SSE ids are
    /// `EPOCH-N`, so a client that reconnects to a restarted server (whose
    /// numbers start again) is sent all its recent events.
    epoch: u64,
}

impl Default for Events {
    fn default() -> Self {
        let epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        Events {
            tx: broadcast::channel(BROADCAST_CAPACITY).0,
            recent: Arc::default(),
            epoch,
        }
    }
}

impl Events {
    /// The SSE id of `event`: `EPOCH-N` (hexadecimal epoch).
    pub fn sse_id(&self, event: &ApiEvent) -> String {
        format!("{:x}-{}", self.epoch, event.id)
    }

    /// The event number a client's `Last-Event-ID` names, if it names one
    /// of this process; `None` (replay all) otherwise.
    pub fn parse_id(&self, last: &str) -> Option<u64> {
        let (epoch, n) = last.trim().split_once('-')?;
        (u64::from_str_radix(epoch, 16).ok()? == self.epoch)
            .then(|| n.parse().ok())
            .flatten()
    }

    /// Sends `data` to every client connected now and keeps it for those
    /// that connect within [`REPLAY_AGE`].
    pub fn send(&self, name: &'static str, mut data: serde_json::Value) {
        if let Some(o) = data.as_object_mut()
            && !o.contains_key("time")
        {
            o.insert(
                "time".to_string(),
                crate::api::rfc3339(std::time::SystemTime::now()).into(),
            );
        }
        // A poisoned lock holds only events: go on with them.
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        recent.0 += 1;
        let event = Arc::new(ApiEvent {
            id: recent.0,
            name,
            data,
            at: std::time::Instant::now(),
        });
        if recent.1.len() == REPLAYED {
            recent.1.pop_front();
        }
        recent.1.push_back(Arc::clone(&event));
        // Under the lock: a subscriber sees each event once, replayed or
        // received.
        let _ = self.tx.send(event);
    }

    #[cfg(test)]
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<ApiEvent>> {
        self.tx.subscribe()
    }

    /// Subscribes, with the kept events after `after` (the SSE
    /// `Last-Event-ID` a client reconnects with; all kept events without
    /// one) that are younger than [`REPLAY_AGE`], oldest first.
    pub fn subscribe_replaying(
        &self,
        after: Option<u64>,
    ) -> (broadcast::Receiver<Arc<ApiEvent>>, Vec<Arc<ApiEvent>>) {
        let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        let rx = self.tx.subscribe();
        let now = std::time::Instant::now();
        let replay = recent
            .1
            .iter()
            .filter(|e| after.is_none_or(|a| e.id > a))
            .filter(|e| now.duration_since(e.at) < REPLAY_AGE)
            .cloned()
            .collect();
        (rx, replay)
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
    fn a_late_subscriber_gets_the_recent_events_first_and_each_once() {
        let events = Events::default();
        for i in 0..REPLAYED + 2 {
            events.send("reload", serde_json::json!({ "n": i }));
        }
        let (mut rx, replay) = events.subscribe_replaying(None);
        assert_eq!(replay.len(), REPLAYED);
        assert_eq!(replay[0].data["n"], 2);
        assert!(replay[0].data["time"].is_string());
        let (_, after) = events.subscribe_replaying(Some(REPLAYED as u64));
        assert_eq!(after.len(), 2, "only those after Last-Event-ID");
        let last = events.sse_id(&replay[REPLAYED - 1]);
        assert_eq!(events.parse_id(&last), Some(REPLAYED as u64 + 2));
        // Another process's id (a restarted server): everything again.
        assert_eq!(events.parse_id(&format!("1-{REPLAYED}")), None);
        assert_eq!(events.parse_id("garbage"), None);
        events.send("reload", serde_json::json!({ "n": "new" }));
        assert_eq!(
            rx.try_recv().map(|e| e.data["n"].clone()).ok(),
            Some("new".into())
        );
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
