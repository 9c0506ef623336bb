//! Per-worker answer counters: by query type, by decision, and per zone,
//! GSLB domain, vserver and service.
//!
//! Each DNS worker owns its counters (its own allocations, so no cache
//! line is shared with another worker) and is their only writer: a count
//! is a Relaxed load and store, no locked add. A scrape sums the workers'
//! counters under the registry's lock, which a worker takes only when it
//! starts and when a reload brings a new model.
//!
//! The per-object arrays are sized by one model. When a reload publishes a
//! new one, the worker starts zeroed arrays for it and hands the old ones
//! to the registry, which folds them into totals kept by name: a counter
//! never goes backwards for a name the new configuration keeps.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use sextant_core::{
    AnswerBuf, DomainId, FallbackWhy, IdVec, LbMethod, Model, Reason, ServiceId, Snapshot,
    VServerId, ZoneId,
};

/// Adds one to a counter only this thread writes: no locked instruction.
#[inline]
fn bump(c: &AtomicU64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
}

/// The query types counted one by one; every other type is `other`.
pub const QUERY_TYPES: [&str; 12] = [
    "A", "AAAA", "CNAME", "MX", "NS", "SOA", "TXT", "SRV", "PTR", "CAA", "ANY", "other",
];

fn query_type_slot(code: u16) -> usize {
    match code {
        1 => 0,
        28 => 1,
        5 => 2,
        15 => 3,
        2 => 4,
        6 => 5,
        16 => 6,
        33 => 7,
        12 => 8,
        257 => 9,
        255 => 10,
        _ => 11,
    }
}

/// The `reason` label of every [`Reason`], in slot order.
pub const REASONS: [&str; 23] = [
    "method",
    "fallback",
    "persistence",
    "preferred_location",
    "dropped",
    "multi_ip",
    "backup_vserver",
    "backup_ip",
    "empty_down_response",
    "last_resort",
    "no_address_of_family",
    "zone",
    "nxdomain",
    "nodata",
    "not_authoritative",
    "child_site",
    "no_rtt_dropped",
    "datacenter",
    "static",
    "referral",
    "fail_safe",
    "no_healthy_records",
    "admin_disabled",
];

/// The short label of a reason (as `/metrics` and the query log show it).
pub fn reason_label(r: &Reason) -> &'static str {
    REASONS[reason_slot(r)]
}

fn reason_slot(r: &Reason) -> usize {
    match r {
        Reason::Method(_) => 0,
        Reason::Fallback { .. } => 1,
        Reason::Persistence => 2,
        Reason::PreferredLocation { .. } => 3,
        Reason::Dropped => 4,
        Reason::MultiIp => 5,
        Reason::BackupVServer => 6,
        Reason::BackupIp => 7,
        Reason::EmptyDownResponse => 8,
        Reason::LastResort => 9,
        Reason::NoAddressOfFamily => 10,
        Reason::Zone => 11,
        Reason::NxDomain => 12,
        Reason::NoData => 13,
        Reason::NotAuthoritative => 14,
        Reason::ChildSite => 15,
        Reason::NoRttDropped => 16,
        Reason::Datacenter => 17,
        Reason::Static => 18,
        Reason::Referral => 19,
        Reason::FailSafe => 20,
        Reason::NoHealthyRecords => 21,
        Reason::AdminDisabled => 22,
    }
}

/// The `why` label of every [`FallbackWhy`], in slot order.
pub const FALLBACK_WHYS: [&str; 5] = [
    "no_load_metrics",
    "no_client_location",
    "no_service_location",
    "no_shared_location",
    "no_rtt",
];

fn why_slot(w: FallbackWhy) -> usize {
    match w {
        FallbackWhy::NoLoadMetrics => 0,
        FallbackWhy::NoClientLocation => 1,
        FallbackWhy::NoServiceLocation => 2,
        FallbackWhy::NoSharedLocation => 3,
        FallbackWhy::NoRtt => 4,
    }
}

const METHODS: usize = LbMethod::ALL.len();

fn method_slot(m: LbMethod) -> usize {
    LbMethod::ALL.iter().position(|(_, x)| *x == m).unwrap_or(0)
}

/// Counters that do not depend on the configuration.
#[derive(Default)]
struct FixedCounters {
    query_types: [AtomicU64; QUERY_TYPES.len()],
    reasons: [AtomicU64; REASONS.len()],
    /// Decided by the vserver's own method, by method.
    method_decided: [AtomicU64; METHODS],
    /// The method could not decide and its backup method did, by method.
    method_fell_back: [AtomicU64; METHODS],
    fallback_whys: [AtomicU64; FALLBACK_WHYS.len()],
}

/// Counters of the objects of one model.
struct ModelCounters {
    model: Arc<Model>,
    zones: IdVec<ZoneId, AtomicU64>,
    domains: IdVec<DomainId, AtomicU64>,
    vserver_hits: IdVec<VServerId, AtomicU64>,
    services: IdVec<ServiceId, AtomicU64>,
    /// Per domain: each service its vserver or a backup vserver of its
    /// chain binds, sorted by id, with the answers of that domain that
    /// carried it. A vserver's services are counted for the domain asked,
    /// so a backup vserver's own domains never add to another's share.
    domain_services: IdVec<DomainId, Vec<(ServiceId, AtomicU64)>>,
}

/// Per-domain service counters a worker keeps for one model at most (16
/// bytes each: 16 MB).
pub const DOMAIN_SERVICE_BUDGET: usize = 1_000_000;

/// The services `domain`'s answers may carry: its vserver's and those of
/// the backup vservers after it (a loop stops the walk), by id.
fn chain_services(model: &Model, vserver: VServerId) -> Vec<ServiceId> {
    let mut seen: Vec<VServerId> = Vec::new();
    let mut out: Vec<ServiceId> = Vec::new();
    let mut at = Some(vserver);
    while let Some(v) = at {
        let Some(vs) = model.vservers.get(v).filter(|_| !seen.contains(&v)) else {
            break;
        };
        seen.push(v);
        out.extend(vs.bindings.iter().map(|b| b.service));
        at = vs.backup_vserver;
    }
    out.sort_unstable();
    out.dedup();
    out
}

impl ModelCounters {
    fn new(model: &Arc<Model>) -> Self {
        Self::within(model, DOMAIN_SERVICE_BUDGET)
    }

    /// Counters for `model`, with at most `budget` per-domain service ones.
    fn within(model: &Arc<Model>, budget: usize) -> Self {
        fn zeros<I: sextant_core::Idx>(n: usize) -> IdVec<I, AtomicU64> {
            (0..n).map(|_| AtomicU64::new(0)).collect()
        }
        ModelCounters {
            model: model.clone(),
            zones: zeros(model.zones.len()),
            domains: zeros(model.domains.len()),
            vserver_hits: zeros(model.vservers.len()),
            services: zeros(model.services.len()),
            domain_services: {
                // Bounded: many domains on vservers of many services could
                // otherwise make this domains × services; the domains past
                // the budget have no per-service counts.
                let mut left = budget;
                model
                    .domains
                    .iter()
                    .map(|d| {
                        let list = chain_services(model, d.vserver);
                        if list.len() > left {
                            return Vec::new();
                        }
                        left -= list.len();
                        list.into_iter().map(|s| (s, AtomicU64::new(0))).collect()
                    })
                    .collect()
            },
        }
    }
}

/// Totals by object name (and by fixed label), summed over the workers.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct AnswerTotals {
    /// By [`QUERY_TYPES`] slot.
    pub query_types: [u64; QUERY_TYPES.len()],
    /// By [`REASONS`] slot.
    pub reasons: [u64; REASONS.len()],
    /// By method (in [`LbMethod::ALL`] order): decided by it.
    pub method_decided: [u64; METHODS],
    /// By method: it could not decide, its backup method did.
    pub method_fell_back: [u64; METHODS],
    /// By [`FALLBACK_WHYS`] slot.
    pub fallback_whys: [u64; FALLBACK_WHYS.len()],
    /// Answers by zone apex.
    pub zones: HashMap<String, u64>,
    /// Answers by GSLB domain name.
    pub domains: HashMap<String, u64>,
    /// Hits by vserver name.
    pub vserver_hits: HashMap<String, u64>,
    /// Times each service (by name) was in an answer.
    pub services: HashMap<String, u64>,
    /// By GSLB domain name: times each service (by name) was in an answer
    /// for that domain (services never answered for it are left out).
    pub domain_services: HashMap<String, HashMap<String, u64>>,
}

impl AnswerTotals {
    fn add_model(&mut self, m: &ModelCounters) {
        let model = &m.model;
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        for (id, c) in m.zones.iter_enumerated() {
            *self.zones.entry(model.zone(id).apex.clone()).or_default() += load(c);
        }
        for (id, c) in m.domains.iter_enumerated() {
            *self
                .domains
                .entry(model.domain(id).name.clone())
                .or_default() += load(c);
        }
        for (id, c) in m.vserver_hits.iter_enumerated() {
            *self
                .vserver_hits
                .entry(model.vserver(id).name.clone())
                .or_default() += load(c);
        }
        for (id, c) in m.services.iter_enumerated() {
            *self
                .services
                .entry(model.service(id).name.clone())
                .or_default() += load(c);
        }
        for (id, list) in m.domain_services.iter_enumerated() {
            for (service, c) in list {
                let n = load(c);
                if n == 0 {
                    continue;
                }
                *self
                    .domain_services
                    .entry(model.domain(id).name.clone())
                    .or_default()
                    .entry(model.service(*service).name.clone())
                    .or_default() += n;
            }
        }
    }

    fn add_fixed(&mut self, f: &FixedCounters) {
        fn add<const N: usize>(into: &mut [u64; N], from: &[AtomicU64; N]) {
            for (i, c) in into.iter_mut().zip(from) {
                *i += c.load(Ordering::Relaxed);
            }
        }
        add(&mut self.query_types, &f.query_types);
        add(&mut self.reasons, &f.reasons);
        add(&mut self.method_decided, &f.method_decided);
        add(&mut self.method_fell_back, &f.method_fell_back);
        add(&mut self.fallback_whys, &f.fallback_whys);
    }
}

#[derive(Default)]
struct Registered {
    /// Each worker's fixed counters and the per-object counters it writes now.
    workers: Vec<(Arc<FixedCounters>, Option<Arc<ModelCounters>>)>,
    /// Per-object counters a worker has left for a newer model, not yet
    /// folded into `carried`.
    retired: Vec<Arc<ModelCounters>>,
    /// The totals of retired counters, by name.
    carried: AnswerTotals,
}

/// Where the workers' counters are found at scrape time.
pub struct AnswerCounters {
    /// Unique in the process: a thread's worker may serve several servers
    /// one after the other (tests do), and must register with each.
    id: u64,
    inner: Mutex<Registered>,
}

impl Default for AnswerCounters {
    fn default() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        AnswerCounters {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            inner: Mutex::default(),
        }
    }
}

impl std::fmt::Debug for AnswerCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnswerCounters").finish_non_exhaustive()
    }
}

impl AnswerCounters {
    fn lock(&self) -> MutexGuard<'_, Registered> {
        // A panic while holding the lock leaves only counts behind: go on.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Everything counted so far, summed over the workers (and the models
    /// they counted under before, by name).
    pub fn totals(&self) -> AnswerTotals {
        let mut reg = self.lock();
        let reg = &mut *reg;
        for old in reg.retired.drain(..) {
            reg.carried.add_model(&old);
        }
        let mut totals = reg.carried.clone();
        for (fixed, current) in &reg.workers {
            totals.add_fixed(fixed);
            if let Some(m) = current {
                totals.add_model(m);
            }
        }
        totals
    }
}

/// One worker's handle on its counters.
#[derive(Default)]
pub(crate) struct WorkerCounters {
    /// The registry this worker is registered with (its id; 0: none).
    owner: u64,
    slot: usize,
    fixed: Option<Arc<FixedCounters>>,
    model: Option<Arc<ModelCounters>>,
}

impl std::fmt::Debug for WorkerCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerCounters")
            .field("slot", &self.slot)
            .finish_non_exhaustive()
    }
}

impl WorkerCounters {
    /// The fixed counters, registering with `registry` the first time.
    #[inline]
    fn fixed(&mut self, registry: &AnswerCounters) -> &FixedCounters {
        let owner = registry.id;
        if self.owner != owner || self.fixed.is_none() {
            self.register(registry, owner);
        }
        match &self.fixed {
            Some(f) => f,
            None => unreachable!("registered above"),
        }
    }

    #[cold]
    fn register(&mut self, registry: &AnswerCounters, owner: u64) {
        let fixed = Arc::new(FixedCounters::default());
        let mut reg = registry.lock();
        self.slot = reg.workers.len();
        reg.workers.push((fixed.clone(), None));
        self.owner = owner;
        self.fixed = Some(fixed);
        self.model = None;
    }

    /// The per-object counters for `snap`'s model, starting new ones (and
    /// retiring the old) when a reload brought another model.
    #[inline]
    fn model(&mut self, registry: &AnswerCounters, snap: &Snapshot) -> &ModelCounters {
        let current = snap.model_arc();
        let fresh = matches!(&self.model, Some(m) if Arc::ptr_eq(&m.model, current));
        if !fresh {
            self.switch_model(registry, current);
        }
        match &self.model {
            Some(m) => m,
            None => unreachable!("switched above"),
        }
    }

    #[cold]
    fn switch_model(&mut self, registry: &AnswerCounters, model: &Arc<Model>) {
        let next = Arc::new(ModelCounters::new(model));
        let mut reg = registry.lock();
        if let Some((_, slot)) = reg.workers.get_mut(self.slot) {
            let old = slot.replace(next.clone());
            if let Some(old) = old {
                reg.retired.push(old);
            }
        }
        self.model = Some(next);
    }

    /// Counts one parsed query's type.
    #[inline]
    pub(crate) fn query_type(&mut self, registry: &AnswerCounters, qtype: u16) {
        bump(&self.fixed(registry).query_types[query_type_slot(qtype)]);
    }

    /// Counts one decision and what it answered.
    #[inline]
    pub(crate) fn decision(
        &mut self,
        registry: &AnswerCounters,
        snap: &Snapshot,
        reason: &Reason,
        answers: &AnswerBuf,
    ) {
        let fixed = self.fixed(registry);
        bump(&fixed.reasons[reason_slot(reason)]);
        match reason {
            Reason::Method(m) => bump(&fixed.method_decided[method_slot(*m)]),
            Reason::Fallback { method, why, .. } => {
                bump(&fixed.method_fell_back[method_slot(*method)]);
                bump(&fixed.fallback_whys[why_slot(*why)]);
            }
            _ => {}
        }
        if answers.zone.is_none() && answers.domain.is_none() {
            return;
        }
        let m = self.model(registry, snap);
        if let Some(c) = answers.zone.and_then(|z| m.zones.get(z)) {
            bump(c);
        }
        if let Some(d) = answers.domain {
            if let Some(c) = m.domains.get(d) {
                bump(c);
            }
            if let Some(list) = m.domain_services.get(d) {
                for s in &answers.services {
                    if let Ok(i) = list.binary_search_by_key(s, |(id, _)| *id)
                        && let Some((_, c)) = list.get(i)
                    {
                        bump(c);
                    }
                }
            }
        }
        if let Some(c) = answers.vserver.and_then(|v| m.vserver_hits.get(v)) {
            bump(c);
        }
        for s in &answers.services {
            if let Some(c) = m.services.get(*s) {
                bump(c);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sextant_test_support::model::www_model;

    fn model(services: &[&str]) -> Arc<Model> {
        let addrs = ["10.1.0.1", "10.1.0.2", "10.1.0.3"];
        let list: Vec<(&str, &str, u32)> = services
            .iter()
            .zip(addrs)
            .map(|(name, addr)| (*name, addr, 1))
            .collect();
        Arc::new(www_model(&list, LbMethod::RoundRobin))
    }

    fn answer(m: &Model, service: &str) -> AnswerBuf {
        let s = m.service_by_name(service).unwrap();
        AnswerBuf {
            services: vec![s],
            domain: Some(DomainId::from_index(0)),
            vserver: Some(VServerId::from_index(0)),
            zone: Some(ZoneId::from_index(0)),
            ..AnswerBuf::default()
        }
    }

    #[test]
    fn workers_sum_and_reloads_carry_totals_over_by_name() {
        let registry = AnswerCounters::default();
        let first = Snapshot::new(model(&["a", "b"]), 1);
        let method = Reason::Method(LbMethod::RoundRobin);
        let mut w1 = WorkerCounters::default();
        let mut w2 = WorkerCounters::default();
        for _ in 0..3 {
            w1.decision(&registry, &first, &method, &answer(first.model(), "a"));
        }
        w2.decision(&registry, &first, &method, &answer(first.model(), "b"));
        w2.query_type(&registry, 28);
        w2.query_type(&registry, 99);
        // A worker that served another server before registers here too.
        let other = AnswerCounters::default();
        let mut w3 = WorkerCounters::default();
        w3.query_type(&other, 1);
        w3.query_type(&registry, 1);
        let t = registry.totals();
        assert_eq!(t.services["a"], 3);
        assert_eq!(t.services["b"], 1);
        assert_eq!(t.vserver_hits["vs"], 4);
        assert_eq!(t.domains["www.example.com"], 4);
        assert_eq!(t.zones["example.com"], 4);
        assert_eq!(t.reasons[0], 4);
        assert_eq!(t.method_decided[0], 4);
        assert_eq!(
            (t.query_types[0], t.query_types[1], t.query_types[11]),
            (1, 1, 1)
        );
        assert_eq!(other.totals().query_types[0], 1);

        // A reload drops "b" and adds "c", in another order: "a" goes on
        // from 3 whatever its new id, on every worker.
        let second = Snapshot::new(model(&["c", "a"]), 2);
        w1.decision(&registry, &second, &method, &answer(second.model(), "a"));
        let t = registry.totals();
        assert_eq!(t.services["a"], 4);
        assert_eq!(t.services["c"], 0);
        assert_eq!(t.vserver_hits["vs"], 5);
        w2.decision(&registry, &second, &method, &answer(second.model(), "c"));
        let t = registry.totals();
        assert_eq!((t.services["a"], t.services["c"]), (4, 1));
        assert_eq!(t.vserver_hits["vs"], 6);
        // Totals taken twice in a row agree (folding is not counting twice).
        assert_eq!(registry.totals(), t);
    }

    #[test]
    fn a_domain_counts_only_the_answers_given_for_it() {
        let registry = AnswerCounters::default();
        let snap = Snapshot::new(model(&["a", "b"]), 1);
        let m = snap.model();
        let method = Reason::Method(LbMethod::RoundRobin);
        let mut w = WorkerCounters::default();
        w.decision(&registry, &snap, &method, &answer(m, "a"));
        w.decision(&registry, &snap, &method, &answer(m, "a"));
        w.decision(&registry, &snap, &method, &answer(m, "b"));
        // The same service answered without a domain is not the domain's.
        let mut bare = answer(m, "b");
        bare.domain = None;
        w.decision(&registry, &snap, &method, &bare);
        let t = registry.totals();
        let www = &t.domain_services["www.example.com"];
        assert_eq!((www["a"], www["b"]), (2, 1));
        assert_eq!(t.services["b"], 2);
    }

    #[test]
    fn per_domain_service_counters_stay_within_their_budget() {
        let m = model(&["a", "b"]);
        let full = ModelCounters::within(&m, 10);
        assert_eq!(full.domain_services.iter().map(Vec::len).sum::<usize>(), 2);
        // A domain whose services do not all fit gets none (not some).
        let tight = ModelCounters::within(&m, 1);
        assert_eq!(tight.domain_services.iter().map(Vec::len).sum::<usize>(), 0);
    }

    #[test]
    fn fallbacks_count_by_method_and_why() {
        let registry = AnswerCounters::default();
        let snap = Snapshot::new(model(&["a"]), 1);
        let mut w = WorkerCounters::default();
        let reason = Reason::Fallback {
            method: LbMethod::Rtt,
            backup: LbMethod::RoundRobin,
            why: FallbackWhy::NoRtt,
        };
        w.decision(&registry, &snap, &reason, &AnswerBuf::default());
        let t = registry.totals();
        assert_eq!(t.method_fell_back[method_slot(LbMethod::Rtt)], 1);
        assert_eq!(t.fallback_whys[4], 1);
        assert_eq!(t.reasons[1], 1);
        assert!(t.services.is_empty(), "no model counters without a zone");
    }
}
