//! Source-IP persistence entries (`-persistenceType SOURCEIP`).
//!
//! Only vservers with persistence touch this table, so sharded mutexes are
//! an acceptable cost there while every other query stays lock-free. The
//! table keeps its own coarse monotonic clock (whole seconds since it was
//! created): the edge may read the clock, the decision core may not.
//! Expired entries are ignored by lookups and purged opportunistically as
//! the table grows; a size cap keeps a flood of distinct (possibly ECS-
//! spoofed) client addresses from growing memory without bound.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::net::IpAddr;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sextant_core::{ServiceId, Sessions, VServerId};

/// Number of independently locked shards.
const SHARDS: usize = 64;
/// Default cap on live entries across the table.
pub const DEFAULT_MAX_ENTRIES: usize = 1 << 20;
/// New entries a shard takes between sweeps, at least.
const MIN_SWEEP_INTERVAL: usize = 1024;

type Key = (VServerId, IpAddr);

#[derive(Debug, Clone, Copy)]
struct Entry {
    service: ServiceId,
    /// Seconds since the table's epoch after which the entry is dead.
    expires: u32,
    /// Listed in the shard's journal, to be handed to session exchange.
    journaled: bool,
}

#[derive(Debug, Default)]
struct Shard {
    map: HashMap<Key, Entry>,
    new_since_sweep: usize,
    /// Entries made or refreshed here since the last [`SessionTable::drain_journal`].
    journal: Vec<Key>,
}

/// One live persistence entry, as exported for session exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionEntry {
    pub vserver: VServerId,
    /// The client address masked with the vserver's persistence mask.
    pub key: IpAddr,
    pub service: ServiceId,
    /// Time left before the entry expires (whole seconds).
    pub remaining: Duration,
}

/// Client → service persistence, keyed by vserver and masked client address.
#[derive(Debug)]
pub struct SessionTable {
    shards: Box<[Mutex<Shard>]>,
    hasher: RandomState,
    epoch: Instant,
    max_per_shard: usize,
    /// Session exchange is on: new entries are journaled for it.
    sharing: std::sync::atomic::AtomicBool,
}

impl Default for SessionTable {
    fn default() -> Self {
        Self::new()
    }
}

impl SessionTable {
    pub fn new() -> Self {
        Self::with_max_entries(DEFAULT_MAX_ENTRIES)
    }

    /// A table holding at most about `max_entries` live entries; past that,
    /// new clients are simply not made persistent until entries expire.
    pub fn with_max_entries(max_entries: usize) -> Self {
        SessionTable {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            hasher: RandomState::new(),
            epoch: Instant::now(),
            max_per_shard: max_entries.div_ceil(SHARDS).max(1),
            sharing: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Seconds since the table was created (the table's clock).
    fn now(&self) -> u32 {
        u32::try_from(self.epoch.elapsed().as_secs()).unwrap_or(u32::MAX)
    }

    fn shard(&self, key: &Key) -> MutexGuard<'_, Shard> {
        let i = (self.hasher.hash_one(key) as usize) % SHARDS;
        // A panic while holding a shard cannot leave an entry half-written;
        // keep serving from a poisoned lock.
        self.shards[i].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Creates or refreshes the entry, to expire `timeout` from now.
    pub fn record(&self, vserver: VServerId, key: IpAddr, service: ServiceId, timeout: Duration) {
        self.record_at(self.now(), vserver, key, service, timeout);
    }

    fn record_at(
        &self,
        now: u32,
        vserver: VServerId,
        key: IpAddr,
        service: ServiceId,
        timeout: Duration,
    ) {
        let secs = timeout
            .as_secs()
            .saturating_add(u64::from(timeout.subsec_nanos() > 0));
        let expires = now.saturating_add(u32::try_from(secs).unwrap_or(u32::MAX));
        self.put(now, (vserver, key), service, expires, true);
    }

    /// Stores an entry; `journal`: made here, so session exchange shares it.
    fn put(&self, now: u32, k: Key, service: ServiceId, expires: u32, journal: bool) {
        let journal = journal && self.sharing.load(std::sync::atomic::Ordering::Relaxed);
        let mut shard = self.shard(&k);
        if let Some(e) = shard.map.get_mut(&k) {
            let listed = e.journaled;
            *e = Entry {
                service,
                expires,
                journaled: listed || journal,
            };
            if journal && !listed {
                shard.journal.push(k);
            }
            return;
        }
        let sweep_due = shard.new_since_sweep >= MIN_SWEEP_INTERVAL.max(shard.map.len() / 2);
        if sweep_due || shard.map.len() >= self.max_per_shard {
            shard.map.retain(|_, e| e.expires > now);
            shard.new_since_sweep = 0;
        }
        if shard.map.len() >= self.max_per_shard {
            return;
        }
        shard.map.insert(
            k,
            Entry {
                service,
                expires,
                journaled: journal,
            },
        );
        if journal {
            shard.journal.push(k);
        }
        shard.new_since_sweep += 1;
    }

    /// Turns the journal for session exchange on or off (off: nothing is
    /// kept for [`SessionTable::drain_journal`]).
    pub fn set_sharing(&self, on: bool) {
        self.sharing.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Records an entry made at another parent (session exchange), to
    /// expire `remaining` from now; it is not shared again.
    pub fn install(
        &self,
        vserver: VServerId,
        key: IpAddr,
        service: ServiceId,
        remaining: Duration,
    ) {
        let now = self.now();
        let secs = remaining
            .as_secs()
            .saturating_add(u64::from(remaining.subsec_nanos() > 0));
        let expires = now.saturating_add(u32::try_from(secs).unwrap_or(u32::MAX));
        self.put(now, (vserver, key), service, expires, false);
    }

    /// The live entries made or refreshed here since the last call, for
    /// session exchange; each is listed once per call however often it was
    /// refreshed.
    pub fn drain_journal(&self) -> Vec<SessionEntry> {
        let now = self.now();
        let mut out = Vec::new();
        for s in self.shards.iter() {
            let mut shard = s.lock().unwrap_or_else(|p| p.into_inner());
            let keys = std::mem::take(&mut shard.journal);
            for k in keys {
                if let Some(e) = shard.map.get_mut(&k) {
                    e.journaled = false;
                    if e.expires > now {
                        out.push(SessionEntry {
                            vserver: k.0,
                            key: k.1,
                            service: e.service,
                            remaining: Duration::from_secs(u64::from(e.expires - now)),
                        });
                    }
                }
            }
        }
        out
    }

    /// The live entry's service, if any.
    pub fn get(&self, vserver: VServerId, key: IpAddr) -> Option<ServiceId> {
        self.get_at(self.now(), vserver, key)
    }

    fn get_at(&self, now: u32, vserver: VServerId, key: IpAddr) -> Option<ServiceId> {
        let k = (vserver, key);
        let shard = self.shard(&k);
        shard
            .map
            .get(&k)
            .filter(|e| e.expires > now)
            .map(|e| e.service)
    }

    /// Removes every expired entry (for a periodic housekeeping task).
    pub fn purge_expired(&self) {
        let now = self.now();
        for s in self.shards.iter() {
            let mut shard = s.lock().unwrap_or_else(|p| p.into_inner());
            shard.map.retain(|_, e| e.expires > now);
            shard.new_since_sweep = 0;
        }
    }

    /// Carries the entries over a reload that renumbers vservers and
    /// services: `vserver` and `service` map an old id to the new one, or to
    /// `None` when it is gone (its entries are dropped). Entries whose
    /// service is no longer bound there are left to the decision core, which
    /// ignores a sticky service that is not a candidate.
    pub fn renumber(
        &self,
        vserver: impl Fn(VServerId) -> Option<VServerId>,
        service: impl Fn(ServiceId) -> Option<ServiceId>,
    ) {
        let mut moved = Vec::new();
        for s in self.shards.iter() {
            let mut shard = s.lock().unwrap_or_else(|p| p.into_inner());
            moved.extend(shard.map.drain());
            shard.journal.clear();
            shard.new_since_sweep = 0;
        }
        let now = self.now();
        for ((v, key), e) in moved {
            if e.expires <= now {
                continue;
            }
            if let (Some(v), Some(svc)) = (vserver(v), service(e.service)) {
                self.put(now, (v, key), svc, e.expires, false);
            }
        }
    }

    /// Drops every entry.
    pub fn clear(&self) {
        for s in self.shards.iter() {
            let mut shard = s.lock().unwrap_or_else(|p| p.into_inner());
            shard.map.clear();
            shard.journal.clear();
            shard.new_since_sweep = 0;
        }
    }

    /// Entries stored, expired ones not yet purged included.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).map.len())
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of the live entries (for session exchange and the API).
    pub fn entries(&self) -> Vec<SessionEntry> {
        let now = self.now();
        let mut all = Vec::new();
        for s in self.shards.iter() {
            let shard = s.lock().unwrap_or_else(|p| p.into_inner());
            all.extend(shard.map.iter().filter(|(_, e)| e.expires > now).map(
                |((vserver, key), e)| SessionEntry {
                    vserver: *vserver,
                    key: *key,
                    service: e.service,
                    remaining: Duration::from_secs(u64::from(e.expires - now)),
                },
            ));
        }
        all
    }
}

impl Sessions for SessionTable {
    fn lookup(&self, vserver: VServerId, key: IpAddr) -> Option<ServiceId> {
        self.get(vserver, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([192, 0, 2, last])
    }

    fn vs(id: u32) -> VServerId {
        VServerId::new(id)
    }

    fn svc(id: u32) -> ServiceId {
        ServiceId::new(id)
    }

    #[test]
    fn entries_expire_and_refresh() {
        let t = SessionTable::new();
        let ttl = Duration::from_secs(10);
        t.record_at(100, vs(0), ip(1), svc(7), ttl);
        assert_eq!(t.get_at(105, vs(0), ip(1)), Some(svc(7)));
        assert_eq!(t.get_at(110, vs(0), ip(1)), None);
        assert_eq!(t.get_at(105, vs(1), ip(1)), None, "keyed by vserver too");
        // Refreshing moves the expiry and may change the service.
        t.record_at(108, vs(0), ip(1), svc(8), ttl);
        assert_eq!(t.get_at(115, vs(0), ip(1)), Some(svc(8)));
    }

    #[test]
    fn sub_second_timeouts_round_up() {
        let t = SessionTable::new();
        t.record_at(5, vs(0), ip(1), svc(1), Duration::from_millis(1));
        assert_eq!(t.get_at(5, vs(0), ip(1)), Some(svc(1)));
        assert_eq!(t.get_at(6, vs(0), ip(1)), None);
    }

    #[test]
    fn cap_holds_and_expired_entries_make_room() {
        let t = SessionTable::with_max_entries(SHARDS);
        let ttl = Duration::from_secs(1);
        for i in 0..=255u8 {
            t.record_at(0, vs(0), ip(i), svc(1), ttl);
        }
        assert!(t.len() <= SHARDS);
        // Once those expire, new clients get in again.
        for i in 0..=255u8 {
            t.record_at(10, vs(1), ip(i), svc(2), ttl);
        }
        assert!(t.len() <= SHARDS);
        assert!((0..=255u8).any(|i| t.get_at(10, vs(1), ip(i)) == Some(svc(2))));
    }

    #[test]
    fn journal_lists_made_and_refreshed_entries_once_and_not_installed_ones() {
        let t = SessionTable::new();
        let ttl = Duration::from_secs(60);
        t.record(vs(0), ip(1), svc(1), ttl);
        assert!(
            t.drain_journal().is_empty(),
            "nothing is journaled unless sharing"
        );
        t.set_sharing(true);
        t.record(vs(0), ip(1), svc(1), ttl);
        t.record(vs(0), ip(1), svc(1), ttl);
        t.record(vs(0), ip(2), svc(2), ttl);
        t.install(vs(0), ip(3), svc(3), ttl);
        let mut j: Vec<_> = t
            .drain_journal()
            .iter()
            .map(|e| (e.key, e.service))
            .collect();
        j.sort();
        assert_eq!(j, vec![(ip(1), svc(1)), (ip(2), svc(2))]);
        assert!(t.drain_journal().is_empty());
        assert_eq!(t.get(vs(0), ip(3)), Some(svc(3)));
        t.record(vs(0), ip(3), svc(4), ttl);
        assert_eq!(t.drain_journal().len(), 1, "a local refresh is shared");
    }

    #[test]
    fn a_renumbering_moves_entries_and_drops_what_is_gone() {
        let t = SessionTable::new();
        let ttl = Duration::from_secs(60);
        t.record(vs(0), ip(1), svc(10), ttl);
        t.record(vs(1), ip(2), svc(11), ttl);
        t.record(vs(2), ip(3), svc(12), ttl);
        t.renumber(
            |v| [Some(5), Some(6), None][v.index()].map(vs),
            |s| (s != svc(11)).then(|| svc(s.raw() + 100)),
        );
        assert_eq!(t.get(vs(5), ip(1)), Some(svc(110)));
        assert_eq!(t.get(vs(6), ip(2)), None, "its service is gone");
        assert_eq!(t.get(vs(2), ip(3)), None, "its vserver is gone");
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn entries_lists_live_ones() {
        let t = SessionTable::new();
        t.record(vs(3), ip(9), svc(4), Duration::from_secs(60));
        let e = t.entries();
        assert_eq!(e.len(), 1);
        assert_eq!(
            (e[0].vserver, e[0].key, e[0].service),
            (vs(3), ip(9), svc(4))
        );
        assert!(e[0].remaining <= Duration::from_secs(60));
        t.clear();
        assert!(t.is_empty());
    }
}
