//! Running the probes of a whole model on a schedule.
//!
//! One tokio task per (service, monitor) binding. Each task waits a small
//! deterministic jitter (so a reload does not fire every probe in the same
//! millisecond), probes right away, then once per interval, or once per
//! `down_time` while the state engine has its monitor DOWN (it says so
//! through the service's [`Gates`]; the task keeps no hysteresis). A probe
//! that takes longer than the interval pushes the next one back instead of
//! bursting to catch up. Tasks live in a
//! `JoinSet`, so dropping [`Monitors`] aborts them all at their next await.
//! A reload ([`Monitors::restart`]) keeps the task of every binding whose
//! target and monitor definition are unchanged (it only learns its new ids,
//! generation and gates), so a large configuration is not re-probed from
//! scratch, and nothing new is spawned for it.

use std::collections::hash_map::Entry;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sextant_core::snapshot::FnvMap;
use sextant_core::{IdVec, Model, Monitor, MonitorId, MonitorKind, ServiceId};
use tokio::sync::mpsc::Sender;
use tokio::task::{AbortHandle, JoinSet};
use tokio::time::Instant;

use crate::{Observation, ping, probe};

/// The shortest interval we schedule, so a zero interval cannot spin.
const MIN_INTERVAL: Duration = Duration::from_millis(10);
/// The jitter is below `min(interval, MAX_JITTER)`.
const MAX_JITTER: Duration = Duration::from_secs(1);

/// The running probes of one configuration generation. Dropping it (or
/// calling [`Monitors::stop`]) aborts every probe task.
#[derive(Debug)]
pub struct Monitors {
    tasks: JoinSet<()>,
    pairs: usize,
    /// Every running binding by its target, service and monitor names, for
    /// reloads.
    jobs: FnvMap<JobKey, Running>,
    /// Bindings whose key another already has (only two services whose
    /// names differ in case alone, which validation rejects): they run, and
    /// a reload restarts them.
    unkeyed: Vec<Running>,
    tx: Sender<Observation>,
}

/// What makes a binding the same across a reload: the address it probes,
/// and the service's and the monitor's names (lower case). The state engine
/// keeps a service's health by the same names and address, so a binding
/// that keeps running is one whose results the engine keeps too.
type JobKey = (SocketAddr, Box<str>, Arc<str>);

/// One running binding: its definition and the ids it reports under.
#[derive(Debug)]
struct Running {
    monitor: Arc<Monitor>,
    slot: Arc<Slot>,
    task: AbortHandle,
}

/// What a binding's task reads at every tick, so a reload can renumber it
/// without stopping it.
#[derive(Debug)]
struct Slot {
    /// The raw [`ServiceId`] and [`MonitorId`].
    service: AtomicU32,
    monitor: AtomicU32,
    /// The monitor's position in the service's list (its pace flag).
    position: AtomicU32,
    generation: AtomicU64,
    gates: Mutex<Gates>,
}

impl Slot {
    fn gates(&self) -> Gates {
        self.gates.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Monitors {
    /// Stops all probes now (the same as dropping the handle).
    pub fn stop(self) {
        drop(self);
    }

    /// The number of (service, monitor) pairs being probed.
    pub fn len(&self) -> usize {
        self.pairs
    }

    pub fn is_empty(&self) -> bool {
        self.pairs == 0
    }

    /// The probes of a reloaded configuration: a binding whose target,
    /// service name and monitor (name and definition) are unchanged keeps
    /// running, under its new ids, `generation` and `gates`; the others
    /// stop, new ones start.
    /// Returns the probes and how many bindings kept running.
    pub fn restart(
        mut self,
        model: Arc<Model>,
        generation: u64,
        gates: Gates,
    ) -> (Monitors, usize) {
        let mut old = std::mem::take(&mut self.jobs);
        let tasks = std::mem::replace(&mut self.tasks, JoinSet::new());
        let tx = self.tx.clone();
        let mut next = Monitors {
            tasks,
            pairs: 0,
            jobs: FnvMap::default(),
            unkeyed: Vec::new(),
            tx,
        };
        let mut kept = 0;
        next.spawn_all(&model, generation, &gates, |key, monitor| {
            if old.get(key).is_none_or(|r| *r.monitor != *monitor) {
                return None;
            }
            kept += 1;
            old.remove(key)
        });
        for r in old.into_values().chain(std::mem::take(&mut self.unkeyed)) {
            r.task.abort();
        }
        (next, kept)
    }

    /// Starts (or, through `reuse`, renumbers) the task of every binding.
    fn spawn_all(
        &mut self,
        model: &Model,
        generation: u64,
        gates: &Gates,
        mut reuse: impl FnMut(&JobKey, &Monitor) -> Option<Running>,
    ) {
        let monitors: IdVec<MonitorId, Arc<Monitor>> =
            model.monitors.iter().cloned().map(Arc::new).collect();
        let monitor_keys: IdVec<MonitorId, Arc<str>> = model
            .monitors
            .iter()
            .map(|m| m.name.to_ascii_lowercase().into())
            .collect();
        self.jobs.reserve(model.services.len());
        let mut ping_checked = [false; 2];
        for (service_id, service) in model.services.iter_enumerated() {
            for (position, &monitor_id) in service.monitors.iter().enumerate() {
                let Some(monitor) = monitors.get(monitor_id) else {
                    tracing::warn!(
                        service = %service.name,
                        monitor_id = monitor_id.raw(),
                        "service is bound to a monitor that does not exist; not probing it"
                    );
                    continue;
                };
                let target = monitor.target(service.ip, service.port);
                if monitor.kind == MonitorKind::Ping {
                    check_ping_once(&mut ping_checked, target.ip());
                }
                let key = (
                    target,
                    service.name.to_ascii_lowercase().into_boxed_str(),
                    Arc::clone(&monitor_keys[monitor_id]),
                );
                let running = match reuse(&key, monitor) {
                    Some(r) => {
                        r.slot.service.store(service_id.raw(), Ordering::Relaxed);
                        r.slot.monitor.store(monitor_id.raw(), Ordering::Relaxed);
                        r.slot.position.store(position as u32, Ordering::Relaxed);
                        r.slot.generation.store(generation, Ordering::Relaxed);
                        *r.slot.gates.lock().unwrap_or_else(|p| p.into_inner()) = gates.clone();
                        r
                    }
                    None => {
                        let slot = Arc::new(Slot {
                            service: AtomicU32::new(service_id.raw()),
                            monitor: AtomicU32::new(monitor_id.raw()),
                            position: AtomicU32::new(position as u32),
                            generation: AtomicU64::new(generation),
                            gates: Mutex::new(gates.clone()),
                        });
                        let job = Job {
                            monitor: Arc::clone(monitor),
                            target,
                            jitter: jitter(service_id, monitor_id, monitor.interval),
                            slot: Arc::clone(&slot),
                        };
                        let task = self.tasks.spawn(job.run(self.tx.clone()));
                        Running {
                            monitor: Arc::clone(monitor),
                            slot,
                            task,
                        }
                    }
                };
                match self.jobs.entry(key) {
                    Entry::Vacant(slot) => {
                        slot.insert(running);
                    }
                    Entry::Occupied(_) => self.unkeyed.push(running),
                }
                self.pairs += 1;
            }
        }
        tracing::debug!(generation, pairs = self.pairs, "health monitors started");
    }
}

impl Drop for Monitors {
    fn drop(&mut self) {
        self.tasks.abort_all();
    }
}

/// Per service: whether its monitors probe right now, and which of them
/// probe at their `-downTime` pace. Both are the state engine's word
/// (`Effect::Gate`, `Effect::ProbePace`): a remote service whose state
/// metric exchange reports is not probed (`-triggerMonitor`), and a monitor
/// the engine has DOWN probes every `-downTime`.
#[derive(Debug, Clone)]
pub struct Gates(Arc<[Gate]>);

#[derive(Debug)]
struct Gate {
    open: AtomicBool,
    /// Bit `i`: the service's `i`-th monitor probes at its `-downTime`
    /// (positions from 64 on always probe at their interval).
    slow: AtomicU64,
}

impl Gates {
    /// Every gate open: every binding probes, at its interval.
    pub fn open(services: usize) -> Self {
        Gates(
            (0..services)
                .map(|_| Gate {
                    open: AtomicBool::new(true),
                    slow: AtomicU64::new(0),
                })
                .collect(),
        )
    }

    /// Opens or closes a service's gate; one that opens starts its
    /// monitors afresh, at their interval (the engine starts their
    /// hysteresis afresh too).
    pub fn set(&self, service: ServiceId, open: bool) {
        if let Some(g) = self.0.get(service.index()) {
            if open && !g.open.load(Ordering::Relaxed) {
                g.slow.store(0, Ordering::Relaxed);
            }
            g.open.store(open, Ordering::Relaxed);
        }
    }

    pub fn is_open(&self, service: ServiceId) -> bool {
        self.0
            .get(service.index())
            .is_none_or(|g| g.open.load(Ordering::Relaxed))
    }

    /// Sets whether the service's monitor at `position` probes at its
    /// `-downTime`.
    pub fn set_slow(&self, service: ServiceId, position: usize, slow: bool) {
        let (Some(g), Some(bit)) = (
            self.0.get(service.index()),
            1u64.checked_shl(position as u32),
        ) else {
            return;
        };
        if slow {
            g.slow.fetch_or(bit, Ordering::Relaxed);
        } else {
            g.slow.fetch_and(!bit, Ordering::Relaxed);
        }
    }

    pub fn is_slow(&self, service: ServiceId, position: u32) -> bool {
        let Some(bit) = 1u64.checked_shl(position) else {
            return false;
        };
        self.0
            .get(service.index())
            .is_some_and(|g| g.slow.load(Ordering::Relaxed) & bit != 0)
    }
}

/// Probes every (service, monitor) binding of `model` (those in
/// `Service::monitors`) at each monitor's interval, sending each result on
/// `tx`, tagged with `generation`.
///
/// Must be called inside a tokio runtime (it spawns tasks). A binding that
/// names a monitor the model does not have is skipped with a warning. A
/// task ends by itself when the receiver of `tx` is dropped.
pub fn start(model: Arc<Model>, generation: u64, tx: Sender<Observation>) -> Monitors {
    let gates = Gates::open(model.services.len());
    start_gated(model, generation, tx, gates)
}

/// [`start`], probing a binding only while its service's gate is open (a
/// closed gate skips the tick: no probe, no observation).
pub fn start_gated(
    model: Arc<Model>,
    generation: u64,
    tx: Sender<Observation>,
    gates: Gates,
) -> Monitors {
    let mut monitors = Monitors {
        tasks: JoinSet::new(),
        pairs: 0,
        jobs: FnvMap::default(),
        unkeyed: Vec::new(),
        tx,
    };
    monitors.spawn_all(&model, generation, &gates, |_, _| None);
    monitors
}

/// Logs, once per address family and start, that PING cannot work here.
/// Probes still run and report the same reason, so the state is visible
/// per service too.
fn check_ping_once(checked: &mut [bool; 2], ip: IpAddr) {
    let family = usize::from(ip.is_ipv6());
    if checked[family] {
        return;
    }
    checked[family] = true;
    if let Err(e) = ping::check_privilege(ip) {
        tracing::error!("{e}");
    }
}

/// The schedule of one (service, monitor) pair.
struct Job {
    /// Shared by every pair of the monitor.
    monitor: Arc<Monitor>,
    target: SocketAddr,
    jitter: Duration,
    /// The ids and gates it reports under, renumbered by reloads.
    slot: Arc<Slot>,
}

impl Job {
    async fn run(self, tx: Sender<Observation>) {
        tokio::time::sleep(self.jitter).await;
        let shortest = pace(&self.monitor, false).min(pace(&self.monitor, true));
        // The first probe is immediate.
        let mut due = Instant::now();
        // When the previous probe was due.
        let mut last: Option<Instant> = None;
        loop {
            tokio::time::sleep_until(due).await;
            let gates = self.slot.gates();
            let service = ServiceId::new(self.slot.service.load(Ordering::Relaxed));
            let slow = gates.is_slow(service, self.slot.position.load(Ordering::Relaxed));
            // The wake was planned at the shorter pace, before the engine
            // had seen the last result; its pace now may say to wait on.
            if let Some(last) = last {
                let paced = last + pace(&self.monitor, slow);
                if paced > due {
                    due = paced;
                    continue;
                }
            }
            last = Some(due);
            if !gates.is_open(service) {
                due = next_due(due, Instant::now(), shortest);
                continue;
            }
            // Boxed: the probe's future is about 6 KB, and a task that held
            // it inline would keep that between probes too (at 100,000
            // services, half the daemon's memory).
            let result = Box::pin(probe(&self.monitor, self.target)).await;
            due = next_due(due, Instant::now(), shortest);
            let observation = Observation {
                service: ServiceId::new(self.slot.service.load(Ordering::Relaxed)),
                monitor: MonitorId::new(self.slot.monitor.load(Ordering::Relaxed)),
                success: result.success,
                detail: result.detail,
                response_time: result.response_time,
                local_error: result.local_error,
                generation: self.slot.generation.load(Ordering::Relaxed),
            };
            if tx.send(observation).await.is_err() {
                return; // nobody listens any more
            }
        }
    }
}

/// How often one binding probes: every `-interval`, or every `-downTime`
/// while the state engine has its monitor DOWN (`slow`).
pub(crate) fn pace(monitor: &Monitor, slow: bool) -> Duration {
    match (slow, monitor.down_time) {
        (true, Some(down)) => down.max(MIN_INTERVAL),
        _ => monitor.interval.max(MIN_INTERVAL),
    }
}

/// When the probe after the one due at `due` is due, `pace` later; a probe
/// that overran its slot is followed at once (tokio's
/// `MissedTickBehavior::Delay`: the schedule slips instead of bursting).
pub(crate) fn next_due(due: Instant, now: Instant, pace: Duration) -> Instant {
    (due + pace).max(now)
}

/// A deterministic delay in `[0, min(interval, 1s))` from the pair's ids,
/// so the same configuration always spreads its probes the same way.
pub(crate) fn jitter(service: ServiceId, monitor: MonitorId, interval: Duration) -> Duration {
    jitter_of(
        (u64::from(service.raw()) << 32) | u64::from(monitor.raw()),
        interval,
    )
}

/// A deterministic delay in `[0, min(interval, 1s))` from any stable key.
pub(crate) fn jitter_of(key: u64, interval: Duration) -> Duration {
    let span = interval.min(MAX_JITTER).as_millis() as u64;
    if span == 0 {
        return Duration::ZERO;
    }
    Duration::from_millis(splitmix64(key) % span)
}

/// SplitMix64's finalizer: a cheap, well-mixed, stable hash of a `u64`.
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_is_deterministic_and_bounded() {
        let i = Duration::from_secs(5);
        assert_eq!(
            jitter(ServiceId::new(1), MonitorId::new(2), i),
            jitter(ServiceId::new(1), MonitorId::new(2), i)
        );
        assert_ne!(
            jitter(ServiceId::new(1), MonitorId::new(2), i),
            jitter(ServiceId::new(2), MonitorId::new(1), i)
        );
        for s in 0..200 {
            assert!(jitter(ServiceId::new(s), MonitorId::new(0), i) < MAX_JITTER);
            assert!(
                jitter(
                    ServiceId::new(s),
                    MonitorId::new(3),
                    Duration::from_millis(100)
                ) < Duration::from_millis(100)
            );
        }
        assert_eq!(
            jitter(ServiceId::new(1), MonitorId::new(1), Duration::ZERO),
            Duration::ZERO
        );
    }
}
