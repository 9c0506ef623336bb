//! The daemon's record of service health.
//!
//! Monitors report raw probe results; this book runs them through the
//! core's hysteresis ([`HealthTally`]), decides each service's state (UP
//! when no bound monitor says DOWN) and remembers why, for logs and the API.
//! It is owned by one task, so it needs no lock.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use sextant_core::{HealthTally, Model, ServiceId, ServiceState, Transition};
use sextant_health::Observation;

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

#[derive(Debug)]
pub struct HealthBook {
    model: Arc<Model>,
    /// Per service, one entry per bound monitor, in `Service::monitors` order.
    pairs: Vec<Vec<Pair>>,
    services: Vec<ServiceHealth>,
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
        HealthBook {
            model,
            pairs,
            services,
        }
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
            let up = book.compute_up(new_id);
            let old_health = &old.services[old_id as usize];
            if up == old_health.up {
                book.services[new_id] = old_health.clone();
            } else {
                book.services[new_id].up = up;
            }
        }
        book
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
        let up = self.compute_up(service);
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

    fn compute_up(&self, service: usize) -> bool {
        self.pairs[service]
            .iter()
            .all(|p| p.tally.state() != Some(Transition::Down))
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
