//! Running the probes of a whole model on a schedule.
//!
//! One tokio task per (service, monitor) binding. Each task waits a small
//! deterministic jitter (so a reload does not fire every probe in the same
//! millisecond), probes right away, then once per interval. With
//! `MissedTickBehavior::Delay` a probe that takes longer than the interval
//! pushes the next one back instead of bursting to catch up. Tasks live in a
//! `JoinSet`, so dropping [`Monitors`] aborts them all at their next await.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sextant_core::{Model, Monitor, MonitorId, MonitorKind, ServiceId};
use tokio::sync::mpsc::Sender;
use tokio::task::JoinSet;
use tokio::time::MissedTickBehavior;

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
}

impl Drop for Monitors {
    fn drop(&mut self) {
        self.tasks.abort_all();
    }
}

/// Per service: whether its monitors probe right now. A remote service
/// whose state metric exchange reports is not probed (`-triggerMonitor`);
/// the binary opens and closes its gate as metric exchange comes and goes.
#[derive(Debug, Clone)]
pub struct Gates(Arc<[AtomicBool]>);

impl Gates {
    /// Every gate open: every binding probes.
    pub fn open(services: usize) -> Self {
        Gates((0..services).map(|_| AtomicBool::new(true)).collect())
    }

    pub fn set(&self, service: ServiceId, open: bool) {
        if let Some(g) = self.0.get(service as usize) {
            g.store(open, Ordering::Relaxed);
        }
    }

    pub fn is_open(&self, service: ServiceId) -> bool {
        self.0
            .get(service as usize)
            .is_none_or(|g| g.load(Ordering::Relaxed))
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
    let mut tasks = JoinSet::new();
    let mut pairs = 0;
    let monitors: Vec<Arc<Monitor>> = model.monitors.iter().cloned().map(Arc::new).collect();
    let mut ping_checked = [false; 2];
    for (service_id, service) in model.services.iter().enumerate() {
        let service_id = service_id as ServiceId;
        for &monitor_id in &service.monitors {
            let Some(monitor) = model.monitors.get(monitor_id as usize) else {
                tracing::warn!(
                    service = %service.name,
                    monitor_id,
                    "service is bound to a monitor that does not exist; not probing it"
                );
                continue;
            };
            if monitor.kind == MonitorKind::Ping {
                check_ping_once(&mut ping_checked, service.ip);
            }
            let target = SocketAddr::new(service.ip, monitor.dest_port.unwrap_or(service.port));
            let job = Job {
                service: service_id,
                monitor_id,
                monitor: Arc::clone(&monitors[monitor_id as usize]),
                target,
                generation,
                jitter: jitter(service_id, monitor_id, monitor.interval),
                gates: gates.clone(),
            };
            tasks.spawn(job.run(tx.clone()));
            pairs += 1;
        }
    }
    tracing::debug!(generation, pairs, "health monitors started");
    Monitors { tasks, pairs }
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
    service: ServiceId,
    monitor_id: MonitorId,
    /// Shared by every pair of the monitor.
    monitor: Arc<Monitor>,
    target: SocketAddr,
    generation: u64,
    jitter: Duration,
    gates: Gates,
}

impl Job {
    async fn run(self, tx: Sender<Observation>) {
        tokio::time::sleep(self.jitter).await;
        let mut ticks = tokio::time::interval(self.monitor.interval.max(MIN_INTERVAL));
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            // The first tick completes at once: the first probe is immediate.
            ticks.tick().await;
            if !self.gates.is_open(self.service) {
                continue;
            }
            // Boxed: the probe's future is about 6 KB, and a task that held
            // it inline would keep that between probes too (at 100,000
            // services, half the daemon's memory).
            let result = Box::pin(probe(&self.monitor, self.target)).await;
            let observation = Observation {
                service: self.service,
                monitor: self.monitor_id,
                success: result.success,
                detail: result.detail,
                response_time: result.response_time,
                generation: self.generation,
            };
            if tx.send(observation).await.is_err() {
                return; // nobody listens any more
            }
        }
    }
}

/// A deterministic delay in `[0, min(interval, 1s))` from the pair's ids,
/// so the same configuration always spreads its probes the same way.
pub(crate) fn jitter(service: ServiceId, monitor: MonitorId, interval: Duration) -> Duration {
    let span = interval.min(MAX_JITTER).as_millis() as u64;
    if span == 0 {
        return Duration::ZERO;
    }
    let h = splitmix64((u64::from(service) << 32) | u64::from(monitor));
    Duration::from_millis(h % span)
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
        assert_eq!(jitter(1, 2, i), jitter(1, 2, i));
        assert_ne!(jitter(1, 2, i), jitter(2, 1, i));
        for s in 0..200 {
            assert!(jitter(s, 0, i) < MAX_JITTER);
            assert!(jitter(s, 3, Duration::from_millis(100)) < Duration::from_millis(100));
        }
        assert_eq!(jitter(1, 1, Duration::ZERO), Duration::ZERO);
    }
}
