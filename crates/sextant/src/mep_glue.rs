//! Between the metric exchange driver and the health book: what peers
//! report becomes service state and load, and what this site measures
//! becomes its report. Every MEP event is logged and counted here.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use sextant_core::ServiceMetrics;
use sextant_mep::message::{LoadMetrics, ServiceEntry, ServiceState};
use sextant_mep::{LocalReport, MepEvent};
use tracing::{info, warn};

use crate::health_book::{Change, HealthBook};

/// Totals since start, for `/v1/status`.
#[derive(Debug, Default)]
pub struct MepCounters {
    pub peer_up: AtomicU64,
    pub peer_down: AtomicU64,
    pub adopted: AtomicU64,
    pub released: AtomicU64,
    pub adoption_refused: AtomicU64,
    pub parent_changed: AtomicU64,
    pub auth_failed: AtomicU64,
    pub bad_frames: AtomicU64,
    pub refused_connections: AtomicU64,
}

impl MepCounters {
    pub fn view(&self) -> sextant_api::MepCounters {
        let c = |a: &AtomicU64| a.load(Ordering::Relaxed);
        sextant_api::MepCounters {
            peer_up: c(&self.peer_up),
            peer_down: c(&self.peer_down),
            adopted: c(&self.adopted),
            released: c(&self.released),
            adoption_refused: c(&self.adoption_refused),
            parent_changed: c(&self.parent_changed),
            auth_failed: c(&self.auth_failed),
            bad_frames: c(&self.bad_frames),
            refused_connections: c(&self.refused_connections),
        }
    }
}

fn bump(a: &AtomicU64) {
    a.fetch_add(1, Ordering::Relaxed);
}

/// Applies one driver event; returns the services whose state changed.
pub fn apply(
    event: MepEvent,
    book: &mut HealthBook,
    counters: &MepCounters,
    now: SystemTime,
) -> Vec<Change> {
    match event {
        MepEvent::PeerUp { site, via } => {
            bump(&counters.peer_up);
            match via {
                Some(parent) => info!(%site, via = %parent, "metric exchange UP (relayed)"),
                None => info!(%site, "metric exchange UP"),
            }
            Vec::new()
        }
        MepEvent::PeerDown { site, reason } => {
            bump(&counters.peer_down);
            warn!(%site, %reason, "metric exchange DOWN");
            book.peer_down(&site, now)
        }
        MepEvent::Services {
            from_site, entries, ..
        } => book.peer_report(
            &from_site,
            entries
                .into_iter()
                .map(|e| (e.service, e.state == ServiceState::Up, to_core(&e.metrics))),
            now,
        ),
        MepEvent::AuthFailed { peer, site, reason } => {
            bump(&counters.auth_failed);
            warn!(%peer, %site, %reason, "metric exchange authentication failed");
            Vec::new()
        }
        MepEvent::BadFrame { peer, site, reason } => {
            bump(&counters.bad_frames);
            warn!(%peer, %site, %reason, "metric exchange session closed: bad frame");
            Vec::new()
        }
        MepEvent::Refused { peer, reason } => {
            bump(&counters.refused_connections);
            warn!(%peer, %reason, "metric exchange connection refused");
            Vec::new()
        }
        MepEvent::ParentChanged { new_parent } => {
            bump(&counters.parent_changed);
            match new_parent {
                Some(p) => info!(parent = %p, "this child site's parent is now {p}"),
                None => warn!("this child site has no parent connected"),
            }
            Vec::new()
        }
        MepEvent::Adopted { child, for_parent } => {
            bump(&counters.adopted);
            info!(%child, %for_parent, "took over child site {child} as backup parent for {for_parent}");
            Vec::new()
        }
        MepEvent::Released { child, reason } => {
            bump(&counters.released);
            info!(%child, %reason, "adopted child site {child} released");
            Vec::new()
        }
        MepEvent::AdoptionRefused {
            child,
            for_parent,
            reason,
        } => {
            bump(&counters.adoption_refused);
            info!(%child, %for_parent, %reason, "child site refused the takeover");
            Vec::new()
        }
        MepEvent::SiteMetrics { .. } | MepEvent::LdnsRtt { .. } | MepEvent::Sessions { .. } => {
            Vec::new()
        }
    }
}

/// This site's report: its own services with their state and load.
pub fn local_report(book: &HealthBook) -> LocalReport {
    let model = book.model();
    let metrics = book.metrics();
    let states = book.states();
    LocalReport {
        services: model
            .services
            .iter()
            .enumerate()
            .filter(|(_, s)| Some(s.site) == model.local_site)
            .map(|(i, s)| ServiceEntry {
                service: s.name.clone(),
                ip: s.ip,
                port: s.port,
                state: if states[i].up {
                    ServiceState::Up
                } else {
                    ServiceState::Down
                },
                metrics: to_wire(&metrics[i]),
            })
            .collect(),
        site: Default::default(),
    }
}

/// Wire figures to the core's.
pub fn to_core(m: &LoadMetrics) -> ServiceMetrics {
    ServiceMetrics {
        connections: m.connections,
        response_time_us: m
            .response_time_ms
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .map(|ms| (ms * 1000.0) as u64),
        bandwidth_bps: m.bandwidth_bps,
        packets_ps: m.packets_ps,
        custom_load: m.custom_load.map(|l| l.min(u64::from(u32::MAX)) as u32),
    }
}

/// The core's figures to the wire's.
pub fn to_wire(m: &ServiceMetrics) -> LoadMetrics {
    LoadMetrics {
        connections: m.connections,
        response_time_ms: m.response_time_us.map(|us| us as f64 / 1000.0),
        bandwidth_bps: m.bandwidth_bps,
        packets_ps: m.packets_ps,
        custom_load: m.custom_load.map(u64::from),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_round_trip() {
        let m = ServiceMetrics {
            connections: Some(12),
            response_time_us: Some(1500),
            bandwidth_bps: None,
            packets_ps: Some(9),
            custom_load: Some(40),
        };
        assert_eq!(to_core(&to_wire(&m)), m);
        let hostile = LoadMetrics {
            response_time_ms: Some(f64::NAN),
            custom_load: Some(u64::MAX),
            ..Default::default()
        };
        let c = to_core(&hostile);
        assert_eq!(c.response_time_us, None);
        assert_eq!(c.custom_load, Some(u32::MAX));
    }
}
