//! The daemon's record of service health.
//!
//! Monitors report raw probe results; this book runs them through the
//! core's hysteresis ([`HealthTally`]), decides each service's state (UP
//! when no bound monitor says DOWN) and remembers why, for logs and the API.
//! It is owned by one task, so it needs no lock.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use sextant_core::{
    HealthTally, Model, ServiceId, ServiceMetrics, ServiceState, Transition, TriggerMonitor,
};
use sextant_health::{Gates, Observation};

/// The hysteresis state and last verdict of one (service, monitor) pair.
#[derive(Debug, Clone)]
struct Pair {
    tally: HealthTally,
    last_detail: Option<String>,
    last_response: Option<Duration>,
}

/// What the book knows about one service.
#[derive(Debug, Clone)]
pub struct ServiceHealth {
    pub up: bool,
    pub last_change: Option<SystemTime>,
    pub reason: String,
}

/// A service changed state.
#[derive(Debug, Clone)]
pub struct Change {
    pub service: ServiceId,
    pub up: bool,
    pub reason: String,
}

/// What a metric exchange peer last said about a service.
#[derive(Debug, Clone)]
struct Report {
    peer: String,
    up: bool,
    metrics: ServiceMetrics,
}

#[derive(Debug)]
pub struct HealthBook {
    model: Arc<Model>,
    /// Per service, one entry per bound monitor, in `Service::monitors` order.
    pairs: Vec<Vec<Pair>>,
    services: Vec<ServiceHealth>,
    /// Per service: the latest report from a metric exchange peer that is UP.
    reports: Vec<Option<Report>>,
    /// Per service: load figures measured here (load sources, REST push).
    local_metrics: Vec<ServiceMetrics>,
    /// Per service: whether its monitors probe now (shared with the running
    /// monitors), and what the book last set there.
    gates: Gates,
    gate_open: Vec<bool>,
}

impl HealthBook {
    /// Every service starts UP; monitored ones settle on their first result.
    pub fn new(model: Arc<Model>) -> Self {
        let pairs = model
            .services
            .iter()
            .map(|s| {
                s.monitors
                    .iter()
                    .map(|m| {
                        let mon = model.monitor(*m);
                        Pair {
                            tally: HealthTally::new(mon.retries, mon.success_retries),
                            last_detail: None,
                            last_response: None,
                        }
                    })
                    .collect()
            })
            .collect();
        let services = model
            .services
            .iter()
            .map(|s| ServiceHealth {
                up: true,
                last_change: None,
                reason: if s.monitors.is_empty() {
                    "no monitor bound: UP until something says otherwise".to_string()
                } else {
                    "waiting for the first probe result".to_string()
                },
            })
            .collect();
        let n = model.services.len();
        let mut book = HealthBook {
            model,
            pairs,
            services,
            reports: vec![None; n],
            local_metrics: vec![ServiceMetrics::default(); n],
            gates: Gates::open(n),
            gate_open: vec![true; n],
        };
        book.refresh_gates();
        for i in 0..n {
            let (up, reason) = book.verdict(i);
            if !up || book.uses_metric_exchange(i) {
                book.services[i].up = up;
                book.services[i].reason = reason;
            }
        }
        book
    }

    /// A book for a reloaded configuration that keeps what is still true:
    /// the state of every service whose address is unchanged and the tally
    /// of every monitor whose definition is unchanged.
    pub fn carry_over(model: Arc<Model>, old: &HealthBook) -> Self {
        let mut book = HealthBook::new(Arc::clone(&model));
        for (new_id, service) in model.services.iter().enumerate() {
            let Some(old_id) = old.model.service_by_name(&service.name) else {
                continue;
            };
            let old_service = old.model.service(old_id);
            if old_service.ip != service.ip || old_service.port != service.port {
                continue;
            }
            for (slot, mon_id) in service.monitors.iter().enumerate() {
                let monitor = model.monitor(*mon_id);
                let kept = old_service.monitors.iter().position(|m| {
                    let old_monitor = old.model.monitor(*m);
                    old_monitor == monitor
                });
                if let Some(old_slot) = kept {
                    book.pairs[new_id][slot] = old.pairs[old_id as usize][old_slot].clone();
                }
            }
            book.reports[new_id] = old.reports[old_id as usize].clone();
            book.local_metrics[new_id] = old.local_metrics[old_id as usize];
            let (up, _) = book.verdict(new_id);
            let old_health = &old.services[old_id as usize];
            if up == old_health.up {
                book.services[new_id] = old_health.clone();
            } else {
                book.services[new_id].up = up;
            }
        }
        book.refresh_gates();
        book
    }

    /// The monitors' gates, for `sextant_health::start_gated`.
    pub fn gates(&self) -> &Gates {
        &self.gates
    }

    /// Opens the gates of the services whose monitors decide and closes the
    /// others. A service whose monitors take over again starts afresh: its
    /// first probe result decides, and until then it keeps its state.
    fn refresh_gates(&mut self) {
        for i in 0..self.gate_open.len() {
            let open = self.monitors_decide(i);
            if open && !self.gate_open[i] {
                for pair in &mut self.pairs[i] {
                    pair.tally = pair.tally.fresh();
                }
            }
            self.gate_open[i] = open;
            self.gates.set(i as ServiceId, open);
        }
    }

    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }

    /// Feeds one probe result; returns the service's change of state, if any.
    pub fn observe(&mut self, obs: &Observation, now: SystemTime) -> Option<Change> {
        let service = obs.service as usize;
        let slot = self
            .model
            .services
            .get(service)?
            .monitors
            .iter()
            .position(|m| *m == obs.monitor)?;
        let pair = self.pairs.get_mut(service)?.get_mut(slot)?;
        pair.last_detail = Some(obs.detail.clone());
        pair.last_response = obs.response_time;
        let transition = pair.tally.observe(obs.success);
        let failures = pair.tally.consecutive_failures();
        if !self.monitors_decide(service) {
            // A remote service whose state metric exchange reports: the
            // probe result is kept for the API but does not decide.
            return None;
        }
        let (up, _) = self.verdict(service);
        let health = &mut self.services[service];
        if transition.is_none() && up == health.up {
            return None;
        }
        let monitor = &self.model.monitor(obs.monitor).name;
        health.reason = match transition {
            Some(Transition::Down) => format!(
                "monitor {monitor}: {} ({failures} consecutive failure{})",
                obs.detail,
                if failures == 1 { "" } else { "s" }
            ),
            _ => format!("monitor {monitor}: {}", obs.detail),
        };
        if up == health.up {
            return None;
        }
        health.up = up;
        health.last_change = Some(now);
        Some(Change {
            service: obs.service,
            up,
            reason: health.reason.clone(),
        })
    }

    /// The reason monitors give: the first DOWN monitor's last verdict, else
    /// the first one's.
    fn monitor_reason(&self, service: usize) -> String {
        let svc = self.model.service(service as u32);
        if svc.monitors.is_empty() {
            return "no monitor bound: UP until something says otherwise".to_string();
        }
        let pairs = &self.pairs[service];
        let pick = pairs
            .iter()
            .position(|p| p.tally.state() == Some(Transition::Down))
            .unwrap_or(0);
        let name = &self.model.monitor(svc.monitors[pick]).name;
        match pairs.get(pick).and_then(|p| p.last_detail.as_deref()) {
            Some(detail) => format!("monitor {name}: {detail}"),
            None => format!("monitor {name}: no result yet"),
        }
    }

    fn monitors_say_up(&self, service: usize) -> bool {
        self.pairs[service]
            .iter()
            .all(|p| p.tally.state() != Some(Transition::Down))
    }

    /// Whether the service's state comes from metric exchange at all: a
    /// service of another site, with metric exchange on at both sites.
    fn uses_metric_exchange(&self, service: usize) -> bool {
        let model = &self.model;
        let svc = model.service(service as u32);
        let Some(local) = model.local_site else {
            return false;
        };
        svc.site != local
            && model.site(local).metric_exchange
            && model.site(svc.site).metric_exchange
    }

    /// Whether the bound monitors decide the state right now
    /// (`-triggerMonitor`); otherwise metric exchange does.
    fn monitors_decide(&self, service: usize) -> bool {
        if !self.uses_metric_exchange(service) {
            return true;
        }
        let svc = self.model.service(service as u32);
        if svc.monitors.is_empty() {
            return false;
        }
        let report = self.reports[service].as_ref();
        match self.model.site(svc.site).trigger_monitor {
            TriggerMonitor::Always => true,
            TriggerMonitor::MepDown => report.is_none(),
            TriggerMonitor::MepDownSvcDown => report.is_none_or(|r| !r.up),
        }
    }

    /// The service's state and why, from whichever source decides.
    fn verdict(&self, service: usize) -> (bool, String) {
        if self.monitors_decide(service) {
            let pairs = &self.pairs[service];
            if !pairs.is_empty() && pairs.iter().all(|p| p.tally.state().is_none()) {
                // Nothing probed yet (at start, or monitors just took over
                // from metric exchange): keep the state until the first result.
                return (
                    self.services[service].up,
                    "waiting for the first probe result".to_string(),
                );
            }
            return (self.monitors_say_up(service), self.monitor_reason(service));
        }
        match &self.reports[service] {
            Some(r) if r.up => (
                true,
                format!("metric exchange: site {} reports it UP", r.peer),
            ),
            Some(r) => (
                false,
                format!("metric exchange: site {} reports it DOWN", r.peer),
            ),
            None => (
                false,
                format!(
                    "metric exchange: no peer that is UP reports it (site {})",
                    self.model
                        .site(self.model.service(service as u32).site)
                        .name
                ),
            ),
        }
    }

    /// Re-derives one service's state after its inputs changed.
    fn settle(&mut self, service: usize, now: SystemTime) -> Option<Change> {
        let (up, reason) = self.verdict(service);
        let health = &mut self.services[service];
        health.reason = reason;
        if up == health.up {
            return None;
        }
        health.up = up;
        health.last_change = Some(now);
        Some(Change {
            service: service as u32,
            up,
            reason: health.reason.clone(),
        })
    }

    /// A metric exchange peer reported services (by name): its whole view of
    /// their state and load, replacing what it reported before.
    pub fn peer_report(
        &mut self,
        peer: &str,
        entries: impl IntoIterator<Item = (String, bool, ServiceMetrics)>,
        now: SystemTime,
    ) -> Vec<Change> {
        let mut touched = vec![false; self.reports.len()];
        for (name, up, metrics) in entries {
            let Some(id) = self.model.service_by_name(&name) else {
                continue;
            };
            let i = id as usize;
            if !self.uses_metric_exchange(i) {
                continue;
            }
            touched[i] = true;
            self.reports[i] = Some(Report {
                peer: peer.to_string(),
                up,
                metrics,
            });
        }
        // A service this peer reported before and left out now: unreported.
        let dropped: Vec<bool> = (0..self.reports.len())
            .map(|i| !touched[i] && self.reports[i].as_ref().is_some_and(|r| r.peer == peer))
            .collect();
        for (i, gone) in dropped.iter().enumerate() {
            if *gone {
                self.reports[i] = None;
                touched[i] = true;
            }
        }
        self.settle_all(&touched, now)
    }

    /// Metric exchange with `peer` went down: what it reported no longer holds.
    pub fn peer_down(&mut self, peer: &str, now: SystemTime) -> Vec<Change> {
        let mut touched = vec![false; self.reports.len()];
        for (i, report) in self.reports.iter_mut().enumerate() {
            if report.as_ref().is_some_and(|r| r.peer == peer) {
                *report = None;
                touched[i] = true;
            }
        }
        self.settle_all(&touched, now)
    }

    /// Re-derives the touched services' states, after moving the monitor
    /// gates (so monitors that take over start afresh).
    fn settle_all(&mut self, touched: &[bool], now: SystemTime) -> Vec<Change> {
        self.refresh_gates();
        (0..touched.len())
            .filter(|i| touched[*i])
            .filter_map(|i| self.settle(i, now))
            .collect()
    }

    /// Load figures measured here for a local service.
    pub fn set_local_metrics(&mut self, service: ServiceId, metrics: ServiceMetrics) {
        if let Some(m) = self.local_metrics.get_mut(service as usize) {
            *m = metrics;
        }
    }

    /// The load figures the decision core sees: measured here for local
    /// services (the monitors' response time standing in when no source
    /// gives one), reported by an UP peer for remote ones.
    pub fn metrics(&self) -> Arc<[ServiceMetrics]> {
        (0..self.model.services.len())
            .map(|i| {
                if self.uses_metric_exchange(i) {
                    return self.reports[i]
                        .as_ref()
                        .map(|r| r.metrics)
                        .unwrap_or_default();
                }
                let mut m = self.local_metrics[i];
                if m.response_time_us.is_none() {
                    m.response_time_us = self.pairs[i]
                        .iter()
                        .filter_map(|p| p.last_response)
                        .max()
                        .map(|d| d.as_micros() as u64);
                }
                m
            })
            .collect()
    }

    /// The states the decision core sees.
    pub fn states(&self) -> Arc<[ServiceState]> {
        self.services
            .iter()
            .map(|s| ServiceState { up: s.up })
            .collect()
    }

    /// The API's view of every service.
    pub fn views(&self) -> Vec<sextant_api::Service> {
        let model = &self.model;
        model
            .services
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let health = &self.services[i];
                sextant_api::Service {
                    name: s.name.clone(),
                    site: model.site(s.site).name.clone(),
                    ip: s.ip.to_string(),
                    port: s.port,
                    public_ip: s.public_ip.map(|ip| ip.to_string()),
                    state: if health.up {
                        sextant_api::State::Up
                    } else {
                        sextant_api::State::Down
                    },
                    last_change: health.last_change.map(rfc3339),
                    reason: health.reason.clone(),
                    monitors: s
                        .monitors
                        .iter()
                        .zip(&self.pairs[i])
                        .map(|(m, pair)| {
                            let monitor = model.monitor(*m);
                            sextant_api::MonitorState {
                                name: monitor.name.clone(),
                                kind: monitor.kind.type_name().to_string(),
                                state: match pair.tally.state() {
                                    Some(Transition::Up) => "UP",
                                    Some(Transition::Down) => "DOWN",
                                    None => "UNKNOWN",
                                }
                                .to_string(),
                                last_detail: pair.last_detail.clone(),
                                last_response_ms: pair
                                    .last_response
                                    .map(|d| d.as_secs_f64() * 1000.0),
                            }
                        })
                        .collect(),
                }
            })
            .collect()
    }
}

/// Formats a time as RFC 3339 in UTC, e.g. `2026-11-30T09:30:47.123Z`.
pub fn rfc3339(t: SystemTime) -> String {
    let since = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    let secs = since.as_secs();
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_instants() {
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_031_047_123);
        assert_eq!(rfc3339(t), "2026-11-30T09:30:47.123Z");
        let leap = SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
    }
}
