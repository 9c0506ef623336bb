//! Health probes for Sextant: PING, TCP, HTTP, HTTPS, DNS and UDP.
//!
//! This crate is an *edge*: it opens sockets and reads clocks so that the
//! pure core does not have to. It only reports raw probe results
//! ([`Observation`]s); the binary feeds them to
//! [`sextant_core::HealthTally`], which owns the retries / success-retries
//! hysteresis, and publishes the resulting state. Keeping hysteresis out of
//! here means a probe result is never "interpreted" twice.
//!
//! Monitors probe the service's *real* address (`Service::ip` and
//! `Service::port`, or the monitor's `dest_ip` / `dest_port` where set, see
//! [`sextant_core::Monitor::target`]), never its public (NAT) address,
//! because the public address is usually not reachable from inside the site.
//!
//! Every probe is bounded by the monitor's `response_timeout`; a probe that
//! runs out of time fails with the detail `no response within …` (except the
//! plain UDP probe, for which silence is success, see [`udp`]).
//!
//! The crate also runs the local *load sources* ([`load`]): Prometheus
//! endpoints scraped for the load figures of the metric-driven methods.
//!
//! And it measures the round trip from this site to clients' local DNS
//! resolvers ([`ldns`]) for the dynamic RTT method: PING, DNS over UDP, DNS
//! over TCP, in the configured order, sent from the site's own address.

use std::net::SocketAddr;
use std::time::Duration;

use sextant_core::{Monitor, MonitorId, MonitorKind, ServiceId};
use tokio::time::Instant;

pub mod dns;
mod error;
pub mod http;
pub mod ldns;
pub mod load;
pub mod path_loss;
#[allow(unsafe_code)] // system calls; each block says why it is sound
pub mod ping;
mod schedule;
pub mod tcp;
pub mod tls;
mod ttl;
pub mod udp;

pub use error::ProbeError;

/// Entry points for the fuzz targets (`fuzz/`): the monitors' pure response
/// judges, exactly as the probes call them, with the verdict as text
/// because [`Success`] is internal. Not a stable API.
#[doc(hidden)]
pub mod fuzzing {
    use sextant_core::{DnsCheck, HttpCheck};

    /// The DNS monitor's verdict on one datagram received for query `id`:
    /// `None` when it is not a reply to that query (the probe waits on).
    pub fn dns_datagram(check: &DnsCheck, id: u16, msg: &[u8]) -> Option<Result<String, String>> {
        let qtype = crate::dns::qtype(check.query_type);
        crate::dns::judge_datagram(check, id, qtype, msg).map(verdict)
    }

    /// The HTTP(S) monitor's verdict on the bytes received so far; always
    /// `Some` when `closed` (no more bytes will come).
    pub fn http_response(
        check: &HttpCheck,
        buf: &[u8],
        closed: bool,
    ) -> Option<Result<String, String>> {
        crate::http::judge_response(check, buf, closed).map(verdict)
    }

    fn verdict(r: Result<crate::Success, crate::ProbeError>) -> Result<String, String> {
        r.map(|s| s.what).map_err(|e| e.to_string())
    }
}
pub use load::{LoadObservation, LoadSources, start_load_sources};
pub use schedule::{Gates, Monitors, start, start_gated};

/// One probe result.
#[derive(Debug, Clone)]
pub struct Observation {
    pub service: ServiceId,
    pub monitor: MonitorId,
    pub success: bool,
    /// Operator-readable reason, e.g. `TCP connect to 127.0.0.1:8081
    /// refused`, `HTTP 503 not in 200`, `no response within 2s`,
    /// `HTTP 200 in 1.2ms`.
    pub detail: String,
    /// Time the probe took, for successful probes that got a response.
    pub response_time: Option<Duration>,
    /// The probe could not be made for a reason of this host, not of the
    /// target (see [`ProbeResult::local_error`]); `success` is false and
    /// means nothing.
    pub local_error: bool,
    /// The configuration generation the probe belongs to, so the binary can
    /// drop results that arrive after a reload.
    pub generation: u64,
}

/// The outcome of one probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeResult {
    pub success: bool,
    /// Operator-readable reason (see [`Observation::detail`]).
    pub detail: String,
    /// Time from the start of the probe to the response that decided it;
    /// `None` for failures and for a UDP probe that succeeded by silence.
    pub response_time: Option<Duration>,
    /// The probe failed for a reason of this host (out of descriptors or
    /// buffers: `EMFILE`, `ENFILE`, `ENOBUFS`, `ENOMEM`), so it says
    /// nothing about the target: the state engine keeps the service's
    /// state instead of counting a failure (whoever exhausts this host's
    /// descriptors must not be able to turn its backends DOWN).
    pub local_error: bool,
}

/// What a successful probe tells: a short description and whether a
/// response was actually timed.
#[derive(Debug)]
pub(crate) struct Success {
    /// e.g. `HTTP 200`, `TCP connect to 127.0.0.1:80`.
    pub what: String,
    /// `false` when success was inferred from silence (plain UDP).
    pub timed: bool,
}

impl Success {
    pub(crate) fn timed(what: impl Into<String>) -> Self {
        Success {
            what: what.into(),
            timed: true,
        }
    }
}

/// Runs a single probe of `monitor` against `target` (for tests and for an
/// operator's one-off check). Never panics on network input; every failure
/// becomes `success: false` with a readable detail. A reverse monitor
/// (`Monitor::reverse`) reports the opposite of what the probe found, so
/// every consumer sees the monitor's verdict, not the raw probe.
pub async fn probe(monitor: &Monitor, target: SocketAddr) -> ProbeResult {
    let raw = probe_raw(monitor, target).await;
    if monitor.reverse { reversed(raw) } else { raw }
}

/// The verdict of a reverse monitor from what its probe found. Neither
/// side carries a response time: a reversed success timed nothing useful
/// for LEASTRESPONSETIME.
fn reversed(raw: ProbeResult) -> ProbeResult {
    if raw.local_error {
        // Nothing was probed: nothing to reverse.
        return raw;
    }
    ProbeResult {
        success: !raw.success,
        detail: if raw.success {
            format!(
                "reverse monitor: {} (a successful probe means DOWN)",
                raw.detail
            )
        } else {
            format!("reverse monitor: {} (a failed probe means UP)", raw.detail)
        },
        response_time: None,
        local_error: false,
    }
}

/// [`probe`] without the reverse setting applied.
async fn probe_raw(monitor: &Monitor, target: SocketAddr) -> ProbeResult {
    let timeout = monitor.response_timeout;
    let start = Instant::now();
    let outcome = match &monitor.kind {
        // The plain UDP probe succeeds on silence, so it owns its deadline.
        MonitorKind::Udp(check) => udp::probe(check, target, timeout).await,
        kind => match tokio::time::timeout(timeout, run(kind, target, timeout)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(ProbeError::Timeout(timeout)),
        },
    };
    let elapsed = start.elapsed();
    match outcome {
        Ok(ok) if ok.timed => ProbeResult {
            success: true,
            detail: format!("{} in {}", ok.what, fmt_duration(elapsed)),
            response_time: Some(elapsed),
            local_error: false,
        },
        Ok(ok) => ProbeResult {
            success: true,
            detail: ok.what,
            response_time: None,
            local_error: false,
        },
        Err(e) => ProbeResult {
            success: false,
            local_error: e.is_local(),
            detail: e.to_string(),
            response_time: None,
        },
    }
}

/// Dispatches to the probe of one monitor kind; the caller bounds it by
/// `timeout` (only UDP needs to know it).
async fn run(
    kind: &MonitorKind,
    target: SocketAddr,
    timeout: Duration,
) -> Result<Success, ProbeError> {
    match kind {
        MonitorKind::Ping => ping::probe(target.ip()).await,
        MonitorKind::Tcp => tcp::probe(target).await,
        MonitorKind::Http(check) => http::probe(check, target).await,
        MonitorKind::Https(check) => tls::probe(check, target).await,
        MonitorKind::Dns(check) => dns::probe(check, target).await,
        MonitorKind::Udp(check) => udp::probe(check, target, timeout).await,
    }
}

/// Formats a response time for operators: `0.3ms`, `12.5ms`, `1.25s`.
pub(crate) fn fmt_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{:.1}ms", d.as_secs_f64() * 1000.0)
    } else {
        format!("{:.2}s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_well() {
        assert_eq!(fmt_duration(Duration::from_micros(1234)), "1.2ms");
        assert_eq!(fmt_duration(Duration::from_millis(1250)), "1.25s");
    }
}
