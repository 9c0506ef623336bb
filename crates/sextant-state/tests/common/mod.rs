//! Shared by the state engine's integration tests and benches (benches
//! include it with `#[path]`).

use std::time::Duration;

use sextant_core::{MonitorId, ServiceId};
use sextant_state::{Event, Probe};

/// A TCP monitor's result for `service` (its only monitor, the model's
/// first), as the monitors report it.
pub fn probe(service: ServiceId, success: bool) -> Event {
    Event::Probe(Probe {
        service,
        monitor: MonitorId::new(0),
        success,
        detail: if success {
            "TCP connect in 0.2ms"
        } else {
            "TCP connect refused"
        }
        .into(),
        response_time: success.then_some(Duration::from_micros(200)),
    })
}
