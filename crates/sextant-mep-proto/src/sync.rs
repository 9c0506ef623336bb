//! The service state stream (pure): snapshot, numbered deltas, resync.
//!
//! A site with tens of thousands of services can neither fit its whole list
//! in one frame nor afford to resend it every few seconds. So each stream of
//! [`ServiceStates`] (a site's own services to a peer, or a parent's relay of
//! one child to a peer parent) is:
//!
//! * a **snapshot** when it starts (or on request): the whole list, split
//!   into parts that each fit in a frame, all carrying the stream's current
//!   `seq`, applied by the receiver only once the `last` part is in;
//! * then **deltas**: the entries that are new or changed and the keys of
//!   those gone, each with `seq` one more than the one before, also split to
//!   fit (each piece is a delta of its own with its own `seq`);
//! * and a **heartbeat** now and then: a delta with nothing in it and the
//!   latest `seq`, so that a receiver notices a lost delta without waiting
//!   for the next change.
//!
//! A receiver that sees a gap, or a delta before any snapshot, asks for a
//! fresh snapshot ([`crate::message::ResyncRequest`]) and ignores deltas
//! until it arrives. A `seq` names a state of the sender's list: a snapshot
//! does not advance it, a delta moves it from `seq - 1` to `seq`.
//!
//! [`StreamSender`] keeps the sender's list and numbers the steps;
//! [`StreamReceiver`] checks the numbering and assembles split snapshots;
//! [`Merged`] folds consecutive steps into one (the driver's event queue
//! uses it so that a slow consumer costs one pending report per site).

use std::collections::{HashMap, HashSet};

use crate::message::{ServiceEntry, ServiceKey, ServiceStates};

/// The most entries a snapshot may hold in total. A hostile peer could
/// otherwise send parts forever without a `last` one and fill our memory.
pub const SNAPSHOT_MAX_ENTRIES: usize = 1 << 20;

/// Bytes of a `ServiceStates` body that are not entries or keys (field
/// names, `seq`, `part`, brackets), with room to spare.
const STATES_OVERHEAD: usize = 160;

/// What changed between two versions of a list. Entries and removed keys
/// are disjoint.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Diff {
    /// New or changed entries.
    pub entries: Vec<ServiceEntry>,
    /// Keys of the entries gone.
    pub removed: Vec<ServiceKey>,
}

impl Diff {
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.removed.is_empty()
    }
}

/// The sending end of one stream: the list as last sent, and its `seq`.
#[derive(Debug, Default)]
pub struct StreamSender {
    seq: u64,
    /// A snapshot went out to the stream's receivers; from now on changes
    /// go out as deltas.
    started: bool,
    entries: Vec<ServiceEntry>,
    index: HashMap<ServiceKey, usize>,
}

impl StreamSender {
    pub fn new() -> Self {
        Self::default()
    }

    /// The state the receivers have once they applied everything sent.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    pub fn started(&self) -> bool {
        self.started
    }

    /// The list as last set (one entry per key, in the order given).
    pub fn entries(&self) -> &[ServiceEntry] {
        &self.entries
    }

    /// Replaces the list; returns what changed. Entries with the same key
    /// as an earlier one replace it (a key is a service's identity).
    pub fn set(&mut self, list: &[ServiceEntry]) -> Diff {
        let mut entries: Vec<ServiceEntry> = Vec::with_capacity(list.len());
        let mut index: HashMap<ServiceKey, usize> = HashMap::with_capacity(list.len());
        for e in list {
            match index.get(&e.key()) {
                Some(&i) => entries[i] = e.clone(),
                None => {
                    index.insert(e.key(), entries.len());
                    entries.push(e.clone());
                }
            }
        }
        let mut diff = Diff::default();
        for e in &entries {
            let same = self
                .index
                .get(&e.key())
                .is_some_and(|&i| self.entries[i] == *e);
            if !same {
                diff.entries.push(e.clone());
            }
        }
        for e in &self.entries {
            if !index.contains_key(&e.key()) {
                diff.removed.push(e.key());
            }
        }
        self.entries = entries;
        self.index = index;
        diff
    }

    /// Applies a delta received from elsewhere (a parent relaying its
    /// child); returns what it actually changed.
    pub fn apply(&mut self, entries: Vec<ServiceEntry>, removed: &[ServiceKey]) -> Diff {
        let mut diff = Diff::default();
        let mut changed: HashSet<ServiceKey> = HashSet::new();
        for e in entries {
            let k = e.key();
            match self.index.get(&k) {
                Some(&i) if self.entries[i] == e => {}
                Some(&i) => {
                    self.entries[i] = e;
                    changed.insert(k);
                }
                None => {
                    self.index.insert(k, self.entries.len());
                    self.entries.push(e);
                    changed.insert(k);
                }
            }
        }
        for k in removed {
            let Some(i) = self.index.remove(k) else {
                continue;
            };
            self.entries.swap_remove(i);
            if let Some(moved) = self.entries.get(i) {
                self.index.insert(moved.key(), i);
            }
            changed.remove(k);
            diff.removed.push(*k);
        }
        diff.entries = self
            .entries
            .iter()
            .filter(|e| changed.contains(&e.key()))
            .cloned()
            .collect();
        diff
    }

    /// The steps that carry `diff` to the receivers, each body at most
    /// `max_body` bytes of JSON. Before the stream started this is a
    /// snapshot instead (a receiver cannot apply a delta without one).
    pub fn changes(&mut self, diff: Diff, max_body: usize) -> Vec<ServiceStates> {
        if !self.started {
            return self.snapshot(max_body);
        }
        if diff.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (entries, removed) in chunk(diff.entries, diff.removed, max_body) {
            self.seq = self.seq.wrapping_add(1);
            out.push(ServiceStates {
                seq: self.seq,
                full: false,
                part: 0,
                last: true,
                entries,
                removed,
            });
        }
        out
    }

    /// The whole list as a snapshot at the current `seq`, in parts of at
    /// most `max_body` bytes of JSON each. Starts the stream.
    pub fn snapshot(&mut self, max_body: usize) -> Vec<ServiceStates> {
        self.started = true;
        let parts = chunk(self.entries.clone(), Vec::new(), max_body);
        let n = parts.len();
        parts
            .into_iter()
            .enumerate()
            .map(|(i, (entries, _))| ServiceStates {
                seq: self.seq,
                full: true,
                part: u32::try_from(i).unwrap_or(u32::MAX),
                last: i + 1 == n,
                entries,
                removed: Vec::new(),
            })
            .collect()
    }

    /// A delta with nothing in it at the current `seq`: lets receivers
    /// check they missed nothing.
    pub fn heartbeat(&self) -> ServiceStates {
        ServiceStates {
            seq: self.seq,
            full: false,
            part: 0,
            last: true,
            entries: Vec::new(),
            removed: Vec::new(),
        }
    }
}

/// JSON size of a value (0 if it cannot be encoded, which plain data
/// cannot fail to be).
fn json_len<T: serde::Serialize>(v: &T) -> usize {
    serde_json::to_vec(v).map_or(0, |b| b.len())
}

/// Splits entries and keys into pieces whose `ServiceStates` body stays
/// within `max_body` bytes, measured by encoded size (names and figures
/// vary, so a fixed count would either waste frames or overflow them).
/// Always at least one piece. An entry too big for any frame on its own is
/// dropped with an error: no receiver could accept it.
fn chunk(
    entries: Vec<ServiceEntry>,
    removed: Vec<ServiceKey>,
    max_body: usize,
) -> Vec<(Vec<ServiceEntry>, Vec<ServiceKey>)> {
    let budget = max_body.saturating_sub(STATES_OVERHEAD).max(1);
    let mut out = Vec::new();
    let mut cur: (Vec<ServiceEntry>, Vec<ServiceKey>) = (Vec::new(), Vec::new());
    let mut used = 0usize;
    for e in entries {
        let n = json_len(&e) + 1;
        if n > budget {
            tracing::error!(service = %e.service, ip = %e.ip, port = e.port, bytes = n, "MEP entry too large for a frame: not sent");
            continue;
        }
        if used + n > budget {
            out.push(std::mem::take(&mut cur));
            used = 0;
        }
        used += n;
        cur.0.push(e);
    }
    for k in removed {
        let n = json_len(&k) + 1;
        if used + n > budget {
            out.push(std::mem::take(&mut cur));
            used = 0;
        }
        used += n;
        cur.1.push(k);
    }
    if !cur.0.is_empty() || !cur.1.is_empty() || out.is_empty() {
        out.push(cur);
    }
    out
}

/// What the receiver must do with one step.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Nothing to apply: a heartbeat in sequence, a part of a snapshot not
    /// complete yet, or a delta ignored while a resync is pending.
    Nothing,
    /// A complete snapshot: replace everything known of the stream.
    Full(Vec<ServiceEntry>),
    /// The next delta, in sequence.
    Delta {
        entries: Vec<ServiceEntry>,
        removed: Vec<ServiceKey>,
    },
    /// The stream is behind (a gap, or a delta before any snapshot): ask
    /// the sender for a snapshot. `have` is the last `seq` applied.
    Resync { have: Option<u64> },
}

/// A step that breaks the stream's rules: the session is closed (it cannot
/// be trusted to converge).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    #[error("snapshot part {got} of seq {seq} arrived, expected part {expected}")]
    PartOutOfOrder { seq: u64, expected: u32, got: u32 },
    #[error("snapshot part {part} has seq {got}, its first part had {expected}")]
    SnapshotSeqChanged { part: u32, expected: u64, got: u64 },
    #[error("a delta arrived in the middle of a snapshot")]
    DeltaInSnapshot,
    #[error("snapshot of more than {SNAPSHOT_MAX_ENTRIES} entries")]
    SnapshotTooLarge,
    #[error("more than {0} relayed streams on one connection")]
    TooManyStreams(usize),
}

#[derive(Debug)]
struct Partial {
    seq: u64,
    next_part: u32,
    entries: Vec<ServiceEntry>,
}

/// The receiving end of one stream.
#[derive(Debug, Default)]
pub struct StreamReceiver {
    /// The last `seq` applied (a snapshot's, or the last delta's).
    seq: Option<u64>,
    partial: Option<Partial>,
    /// A resync was asked for; deltas are ignored until a snapshot comes.
    resyncing: bool,
}

impl StreamReceiver {
    pub fn new() -> Self {
        Self::default()
    }

    /// The last `seq` applied.
    pub fn seq(&self) -> Option<u64> {
        self.seq
    }

    /// A resync was asked for and no snapshot has come since.
    pub fn resyncing(&self) -> bool {
        self.resyncing
    }

    /// Takes one step of the stream.
    pub fn on_states(&mut self, m: ServiceStates) -> Result<Step, StreamError> {
        if m.full {
            return self.on_snapshot_part(m);
        }
        if self.partial.is_some() {
            return Err(StreamError::DeltaInSnapshot);
        }
        let empty = m.entries.is_empty() && m.removed.is_empty();
        let Some(have) = self.seq else {
            // Nothing to apply a delta to. Ask once; a heartbeat asks again
            // (the request or its answer may have been lost).
            if !self.resyncing || empty {
                self.resyncing = true;
                return Ok(Step::Resync { have: None });
            }
            return Ok(Step::Nothing);
        };
        if self.resyncing {
            return Ok(if empty {
                Step::Resync { have: Some(have) }
            } else {
                Step::Nothing
            });
        }
        // Senders never send an empty delta, so an empty step is a
        // heartbeat: it names the state the sender is at.
        if empty && m.seq == have {
            return Ok(Step::Nothing);
        }
        if !empty && have.checked_add(1) == Some(m.seq) {
            self.seq = Some(m.seq);
            return Ok(Step::Delta {
                entries: m.entries,
                removed: m.removed,
            });
        }
        self.resyncing = true;
        Ok(Step::Resync { have: Some(have) })
    }

    fn on_snapshot_part(&mut self, m: ServiceStates) -> Result<Step, StreamError> {
        let mut p = match self.partial.take() {
            // A new snapshot starts (a previous unfinished one is dropped:
            // the sender never interleaves, so it was abandoned).
            _ if m.part == 0 => Partial {
                seq: m.seq,
                next_part: 0,
                entries: Vec::new(),
            },
            Some(p) if p.next_part != m.part => {
                return Err(StreamError::PartOutOfOrder {
                    seq: m.seq,
                    expected: p.next_part,
                    got: m.part,
                });
            }
            Some(p) if p.seq != m.seq => {
                return Err(StreamError::SnapshotSeqChanged {
                    part: m.part,
                    expected: p.seq,
                    got: m.seq,
                });
            }
            Some(p) => p,
            None => {
                return Err(StreamError::PartOutOfOrder {
                    seq: m.seq,
                    expected: 0,
                    got: m.part,
                });
            }
        };
        if p.entries.len().saturating_add(m.entries.len()) > SNAPSHOT_MAX_ENTRIES {
            return Err(StreamError::SnapshotTooLarge);
        }
        p.entries.extend(m.entries);
        if !m.last {
            p.next_part = p
                .next_part
                .checked_add(1)
                .ok_or(StreamError::SnapshotTooLarge)?;
            self.partial = Some(p);
            return Ok(Step::Nothing);
        }
        self.seq = Some(p.seq);
        self.resyncing = false;
        Ok(Step::Full(p.entries))
    }
}

/// Consecutive steps of one stream folded into one: a snapshot followed by
/// deltas is a snapshot with the deltas applied; deltas after deltas are
/// one delta. Applying the result has the same effect as applying the
/// steps in order.
#[derive(Debug, Clone, Default)]
pub struct Merged {
    full: bool,
    /// Entries in first-seen order; `None` once removed again.
    entries: Vec<Option<ServiceEntry>>,
    index: HashMap<ServiceKey, usize>,
    /// Keys to remove (deltas only; disjoint from the live entries).
    removed: HashSet<ServiceKey>,
}

impl Merged {
    /// Starts from a snapshot (`full`) or a delta.
    pub fn new(full: bool, entries: Vec<ServiceEntry>, removed: Vec<ServiceKey>) -> Merged {
        let mut m = Merged {
            full,
            ..Default::default()
        };
        m.apply_delta(entries, removed);
        m
    }

    pub fn is_full(&self) -> bool {
        self.full
    }

    /// Folds a later step in.
    pub fn push(&mut self, full: bool, entries: Vec<ServiceEntry>, removed: Vec<ServiceKey>) {
        if full {
            *self = Merged::new(true, entries, removed);
        } else {
            self.apply_delta(entries, removed);
        }
    }

    fn apply_delta(&mut self, entries: Vec<ServiceEntry>, removed: Vec<ServiceKey>) {
        for e in entries {
            let k = e.key();
            self.removed.remove(&k);
            match self.index.get(&k) {
                Some(&i) => self.entries[i] = Some(e),
                None => {
                    self.index.insert(k, self.entries.len());
                    self.entries.push(Some(e));
                }
            }
        }
        for k in removed {
            if let Some(i) = self.index.remove(&k) {
                self.entries[i] = None;
            }
            if !self.full {
                self.removed.insert(k);
            }
        }
        // Keep tombstones from piling up under a stream of changes.
        if self.entries.len() > 64 && self.index.len() < self.entries.len() / 2 {
            self.entries.retain(Option::is_some);
            self.index = self
                .entries
                .iter()
                .enumerate()
                .filter_map(|(i, e)| e.as_ref().map(|e| (e.key(), i)))
                .collect();
        }
    }

    /// `(full, entries, removed)`; `removed` is sorted.
    pub fn into_parts(self) -> (bool, Vec<ServiceEntry>, Vec<ServiceKey>) {
        let mut removed: Vec<ServiceKey> = self.removed.into_iter().collect();
        removed.sort_unstable();
        (
            self.full,
            self.entries.into_iter().flatten().collect(),
            removed,
        )
    }
}

/// A receiver's picture of one site's services: what applying the stream's
/// steps (or the driver's `Services` events) in order yields. Used by tests
/// and the benchmark to check that a receiver ends up with the sender's list.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct View {
    pub entries: HashMap<ServiceKey, ServiceEntry>,
}

impl View {
    pub fn apply(&mut self, full: bool, entries: &[ServiceEntry], removed: &[ServiceKey]) {
        if full {
            self.entries.clear();
        }
        for e in entries {
            self.entries.insert(e.key(), e.clone());
        }
        for k in removed {
            self.entries.remove(k);
        }
    }

    /// Whether the view holds exactly `list` (one entry per key).
    pub fn matches(&self, list: &[ServiceEntry]) -> bool {
        let want: HashMap<ServiceKey, &ServiceEntry> = list.iter().map(|e| (e.key(), e)).collect();
        want.len() == self.entries.len()
            && want
                .iter()
                .all(|(k, e)| self.entries.get(k).is_some_and(|x| x == *e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{LoadMetrics, ServiceState};
    use proptest::prelude::*;

    fn entry(i: u32, conns: u64) -> ServiceEntry {
        ServiceEntry {
            service: format!("service-{i}"),
            ip: std::net::IpAddr::from([10, (i >> 16) as u8, (i >> 8) as u8, i as u8]),
            port: 80 + (i % 3) as u16,
            public_ip: None,
            public_port: None,
            state: if conns.is_multiple_of(2) {
                ServiceState::Up
            } else {
                ServiceState::Down
            },
            metrics: LoadMetrics {
                connections: Some(conns),
                ..Default::default()
            },
        }
    }

    fn list(n: u32, conns: u64) -> Vec<ServiceEntry> {
        (0..n).map(|i| entry(i, conns)).collect()
    }

    fn body_len(m: &ServiceStates) -> usize {
        serde_json::to_vec(m).unwrap().len()
    }

    fn feed(r: &mut StreamReceiver, view: &mut View, msgs: Vec<ServiceStates>) -> Vec<Step> {
        let mut steps = Vec::new();
        for m in msgs {
            let s = r.on_states(m).unwrap();
            match &s {
                Step::Full(e) => view.apply(true, e, &[]),
                Step::Delta { entries, removed } => view.apply(false, entries, removed),
                _ => {}
            }
            steps.push(s);
        }
        steps
    }

    #[test]
    fn a_big_list_is_split_under_the_limit_and_applied_at_the_last_part() {
        let max = 64 * 1024;
        let mut s = StreamSender::new();
        let l = list(30_000, 1);
        let d = s.set(&l);
        assert_eq!(d.entries.len(), 30_000);
        let parts = s.changes(d, max);
        assert!(parts.len() > 10, "{}", parts.len());
        for p in &parts {
            assert!(body_len(p) <= max, "{}", body_len(p));
            assert!(p.full && p.seq == 0);
        }
        assert!(parts.last().unwrap().last);
        assert!(parts[..parts.len() - 1].iter().all(|p| !p.last));
        let mut r = StreamReceiver::new();
        let mut v = View::default();
        let steps = feed(&mut r, &mut v, parts);
        assert!(steps[..steps.len() - 1].iter().all(|s| *s == Step::Nothing));
        assert!(matches!(steps.last(), Some(Step::Full(e)) if e.len() == 30_000));
        assert!(v.matches(&l));
    }

    #[test]
    fn deltas_carry_only_what_changed() {
        let mut s = StreamSender::new();
        let mut l = list(100, 1);
        let snap = {
            let d = s.set(&l);
            s.changes(d, 1 << 20)
        };
        let mut r = StreamReceiver::new();
        let mut v = View::default();
        feed(&mut r, &mut v, snap);
        l[5] = entry(5, 2);
        l.remove(7);
        l.push(entry(500, 1));
        let d = s.set(&l);
        assert_eq!(d.entries.len(), 2);
        assert_eq!(d.removed, vec![entry(7, 1).key()]);
        let msgs = s.changes(d, 1 << 20);
        assert_eq!(msgs.len(), 1);
        assert_eq!((msgs[0].seq, msgs[0].full), (1, false));
        feed(&mut r, &mut v, msgs);
        assert!(v.matches(&l));
        // Nothing changed: nothing to send; the heartbeat is in sequence.
        let d = s.set(&l);
        assert!(s.changes(d, 1 << 20).is_empty());
        assert_eq!(r.on_states(s.heartbeat()), Ok(Step::Nothing));
    }

    #[test]
    fn a_gap_asks_for_a_snapshot_and_deltas_wait_for_it() {
        let mut s = StreamSender::new();
        let mut r = StreamReceiver::new();
        let mut v = View::default();
        let d = s.set(&list(10, 1));
        feed(&mut r, &mut v, s.changes(d, 1 << 20));
        let d = s.set(&list(10, 2));
        let lost = s.changes(d, 1 << 20);
        assert_eq!(lost.len(), 1);
        let d = s.set(&list(10, 3));
        let next = s.changes(d, 1 << 20);
        assert_eq!(
            r.on_states(next[0].clone()),
            Ok(Step::Resync { have: Some(0) })
        );
        assert!(r.resyncing());
        // Later deltas are ignored until the snapshot.
        let d = s.set(&list(11, 3));
        assert_eq!(
            r.on_states(s.changes(d, 1 << 20)[0].clone()),
            Ok(Step::Nothing)
        );
        // A heartbeat repeats the request.
        assert_eq!(
            r.on_states(s.heartbeat()),
            Ok(Step::Resync { have: Some(0) })
        );
        feed(&mut r, &mut v, s.snapshot(1 << 20));
        assert!(!r.resyncing());
        assert!(v.matches(&list(11, 3)));
        // And the stream goes on.
        let d = s.set(&list(12, 3));
        feed(&mut r, &mut v, s.changes(d, 1 << 20));
        assert!(v.matches(&list(12, 3)));
        // A heartbeat that is ahead is a gap too, even by one.
        let mut hb = s.heartbeat();
        hb.seq += 1;
        assert!(matches!(r.on_states(hb), Ok(Step::Resync { .. })));
    }

    #[test]
    fn a_delta_before_any_snapshot_asks_for_one() {
        let mut r = StreamReceiver::new();
        let d = ServiceStates {
            seq: 9,
            full: false,
            entries: list(1, 1),
            ..Default::default()
        };
        assert_eq!(r.on_states(d.clone()), Ok(Step::Resync { have: None }));
        assert_eq!(r.on_states(d), Ok(Step::Nothing));
    }

    #[test]
    fn hostile_steps_are_errors_or_resyncs_never_panics() {
        let part = |seq, part, last| ServiceStates {
            seq,
            full: true,
            part,
            last,
            entries: list(2, 1),
            removed: Vec::new(),
        };
        let mut r = StreamReceiver::new();
        assert!(matches!(
            r.on_states(part(1, 3, true)),
            Err(StreamError::PartOutOfOrder { .. })
        ));
        let mut r = StreamReceiver::new();
        r.on_states(part(1, 0, false)).unwrap();
        assert!(matches!(
            r.on_states(part(1, 2, true)),
            Err(StreamError::PartOutOfOrder { .. })
        ));
        let mut r = StreamReceiver::new();
        r.on_states(part(1, 0, false)).unwrap();
        assert!(matches!(
            r.on_states(part(2, 1, true)),
            Err(StreamError::SnapshotSeqChanged { .. })
        ));
        let mut r = StreamReceiver::new();
        r.on_states(part(1, 0, false)).unwrap();
        assert_eq!(
            r.on_states(ServiceStates {
                full: false,
                ..Default::default()
            }),
            Err(StreamError::DeltaInSnapshot)
        );
        // Absurd sequence numbers: a resync, no overflow.
        let mut r = StreamReceiver::new();
        assert!(matches!(
            r.on_states(part(u64::MAX, 0, true)),
            Ok(Step::Full(_))
        ));
        let d = ServiceStates {
            seq: 0,
            full: false,
            entries: list(1, 1),
            ..Default::default()
        };
        assert!(matches!(r.on_states(d), Ok(Step::Resync { .. })));
        // Removing keys nobody has is harmless.
        let mut s = StreamSender::new();
        s.set(&list(3, 1));
        let d = s.apply(Vec::new(), &[entry(99, 1).key()]);
        assert!(d.is_empty());
    }

    #[test]
    fn duplicate_keys_keep_the_last_entry() {
        let mut s = StreamSender::new();
        let mut a = entry(1, 1);
        let b = ServiceEntry {
            service: "other-name".into(),
            ..entry(1, 2)
        };
        a.service = "first".into();
        s.set(&[a, b.clone()]);
        assert_eq!(s.entries(), &[b]);
    }

    #[test]
    fn merged_steps_equal_the_steps_applied_in_order() {
        let (a, b, c) = (entry(1, 1), entry(2, 1), entry(3, 1));
        let mut m = Merged::new(false, vec![a.clone()], vec![b.key()]);
        m.push(false, vec![b.clone()], vec![a.key(), c.key()]);
        let (full, e, r) = m.into_parts();
        assert!(!full);
        assert_eq!(e, vec![b.clone()]);
        let mut want = vec![a.key(), c.key()];
        want.sort();
        assert_eq!(r, want);
        let mut m = Merged::new(true, vec![a.clone(), b.clone()], vec![]);
        m.push(false, vec![c.clone()], vec![a.key()]);
        let (full, e, r) = m.into_parts();
        assert!(full && r.is_empty());
        assert_eq!(e, vec![b, c]);
    }

    fn arb_step() -> impl Strategy<Value = (bool, Vec<(u32, u64)>, Vec<u32>)> {
        (
            prop::bool::weighted(0.15),
            prop::collection::vec((0u32..40, 0u64..4), 0..12),
            prop::collection::vec(0u32..40, 0..6),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Folding any sequence of steps gives the same view as applying
        /// them one by one.
        #[test]
        fn merging_is_applying(steps in prop::collection::vec(arb_step(), 1..12)) {
            let mut seq_view = View::default();
            let mut merged: Option<Merged> = None;
            let mut base = View::default();
            for (i, k) in (0..40).step_by(3).enumerate() {
                base.apply(false, &[entry(k, i as u64)], &[]);
            }
            seq_view.clone_from(&base);
            for (full, es, rs) in steps {
                let es: Vec<ServiceEntry> = es.into_iter().map(|(i, c)| entry(i, c)).collect();
                let rs: Vec<ServiceKey> = rs.into_iter().map(|i| entry(i, 0).key()).collect();
                seq_view.apply(full, &es, &rs);
                match &mut merged {
                    None => merged = Some(Merged::new(full, es, rs)),
                    Some(m) => m.push(full, es, rs),
                }
            }
            let (full, es, rs) = merged.unwrap().into_parts();
            let mut v = base;
            v.apply(full, &es, &rs);
            prop_assert_eq!(v, seq_view);
        }

        /// Any sequence of lists reaches the receiver intact, whatever the
        /// frame limit, and no body exceeds it.
        #[test]
        fn any_lists_arrive_intact(
            lists in prop::collection::vec(prop::collection::vec((0u32..300, 0u64..3), 0..300), 1..6),
            max in 400usize..6000,
        ) {
            let mut s = StreamSender::new();
            let mut r = StreamReceiver::new();
            let mut v = View::default();
            for l in lists {
                let l: Vec<ServiceEntry> = l.into_iter().map(|(i, c)| entry(i, c)).collect();
                let d = s.set(&l);
                let msgs = s.changes(d, max);
                for m in &msgs {
                    prop_assert!(body_len(m) <= max, "{} > {}", body_len(m), max);
                }
                for step in feed(&mut r, &mut v, msgs) {
                    let resync = matches!(step, Step::Resync { .. });
                    prop_assert!(!resync, "unexpected resync");
                }
                prop_assert!(v.matches(s.entries()));
                prop_assert_eq!(r.seq(), Some(s.seq()));
            }
        }

        /// A relay that applies the deltas it receives and forwards them
        /// keeps its receivers equal to the source.
        #[test]
        fn relaying_deltas_keeps_the_copy_equal(
            lists in prop::collection::vec(prop::collection::vec((0u32..100, 0u64..3), 0..100), 1..6),
        ) {
            let mut src = StreamSender::new();
            let mut mid = StreamReceiver::new();
            let mut relay = StreamSender::new();
            let mut far = StreamReceiver::new();
            let mut v = View::default();
            for l in lists {
                let l: Vec<ServiceEntry> = l.into_iter().map(|(i, c)| entry(i, c)).collect();
                let d = src.set(&l);
                for m in src.changes(d, 2000) {
                    let d = match mid.on_states(m).unwrap() {
                        Step::Full(e) => relay.set(&e),
                        Step::Delta { entries, removed } => relay.apply(entries, &removed),
                        _ => continue,
                    };
                    let out = relay.changes(d, 2000);
                    feed(&mut far, &mut v, out);
                }
                prop_assert!(v.matches(&l));
            }
        }
    }
}
