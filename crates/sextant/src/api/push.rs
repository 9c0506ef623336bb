//! The write endpoints: load figures pushed for a service or for this
//! site, handed to the state task as inputs.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use sextant_api::PushMetrics;

use super::error;
use crate::serve::{Daemon, Input};

/// Sets this site's own figures (datacenter mode's DC Based criteria),
/// standing in for the measured ones; sent to the other sites at once.
#[utoipa::path(post, path = "/v1/site/figures", tag = "write",
    request_body = sextant_api::SiteFiguresPush,
    responses((status = 204, description = "taken"),
        (status = 401, description = "no token, or a wrong one (nothing changes)", body = sextant_api::ApiError),
        (status = 403, description = "writes are disabled: the server has no token file", body = sextant_api::ApiError),
        (status = 400, description = "a figure out of range", body = sextant_api::ApiError)))]
pub(super) async fn push_site_figures(
    State(d): State<Arc<Daemon>>,
    body: axum::body::Bytes,
) -> Response {
    let push: sextant_api::SiteFiguresPush = match serde_json::from_slice(&body) {
        Ok(p) => p,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!(
                    "body: {e}; expected JSON like {{\"cpu_percent\": 35.5, \"memory_percent\": 60, \"bandwidth_bytes_ps\": 1250000}} (null or missing: measured)"
                ),
            );
        }
    };
    let bad = [
        ("cpu_percent", push.cpu_percent, 100.0),
        ("memory_percent", push.memory_percent, 100.0),
        ("bandwidth_bytes_ps", push.bandwidth_bytes_ps, f64::MAX),
    ]
    .into_iter()
    .find(|(_, v, max)| v.is_some_and(|v| !v.is_finite() || !(0.0..=*max).contains(&v)));
    if let Some((name, v, max)) = bad {
        return error(
            StatusCode::BAD_REQUEST,
            format!("{name}: {v:?} is out of range (0 to {max})"),
        );
    }
    if let Ok(mut o) = d.site_overrides.lock() {
        *o = crate::site_metrics::Overrides {
            cpu_percent: push.cpu_percent,
            memory_percent: push.memory_percent,
            bandwidth_bytes_ps: push.bandwidth_bytes_ps,
        };
    }
    match d.inputs.send(Input::SiteFigures).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(_) => error(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping"),
    }
}

/// Load figures of a local service, for services with `-loadSource PUSH`
/// (accepted for any local service).
#[utoipa::path(post, path = "/v1/services/{name}/metrics", tag = "write",
    params(("name" = String, Path, description = "the service's name")),
    request_body = PushMetrics,
    responses((status = 204, description = "taken"),
        (status = 401, description = "no token, or a wrong one (nothing changes)", body = sextant_api::ApiError),
        (status = 403, description = "writes are disabled: the server has no token file", body = sextant_api::ApiError),
        (status = 400, description = "not the JSON expected", body = sextant_api::ApiError),
        (status = 404, description = "no such service", body = sextant_api::ApiError),
        (status = 409, description = "the service belongs to another site", body = sextant_api::ApiError)))]
pub(super) async fn push_metrics(
    State(d): State<Arc<Daemon>>,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let push: PushMetrics = match serde_json::from_slice(&body) {
        Ok(p) => p,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!(
                    "body: {e}; expected JSON like {{\"connections\": 12, \"response_time_ms\": 3.5, \"bandwidth_bps\": 1000, \"packets_ps\": 80, \"custom_load\": 40}}"
                ),
            );
        }
    };
    let snap = d.dns.snapshot.load();
    let model = snap.model();
    let Some(id) = snap.service_by_name(&name) else {
        return error(StatusCode::NOT_FOUND, format!("no service named {name:?}"));
    };
    if Some(model.service(id).site) != model.local_site {
        return error(
            StatusCode::CONFLICT,
            format!(
                "service {name:?} belongs to another site; its figures come from that site over metric exchange"
            ),
        );
    }
    let metrics = from_push(&push);
    match d.inputs.send(Input::Figures(id, metrics)).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(_) => error(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping"),
    }
}

/// A pushed body as the core's figures (a negative or non-finite response
/// time is no figure; percentages are capped at 100).
fn from_push(push: &PushMetrics) -> sextant_core::ServiceMetrics {
    sextant_core::ServiceMetrics {
        connections: push.connections,
        response_time_us: push
            .response_time_ms
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .map(|ms| (ms * 1000.0) as u64),
        bandwidth_bps: push.bandwidth_bps,
        packets_ps: push.packets_ps,
        custom_load: push.custom_load,
        cpu_percent: push.cpu_percent.map(|p| p.min(100)),
        memory_percent: push.memory_percent.map(|p| p.min(100)),
        requests_ps: push.requests_ps,
        new_sessions_ps: push.new_sessions_ps,
        healthy_backends: push.healthy_backends,
    }
}

/// The core's figures in the shape a push takes (`GET /v1/services` `load`).
pub(super) fn to_push(m: &sextant_core::ServiceMetrics) -> PushMetrics {
    PushMetrics {
        connections: m.connections,
        response_time_ms: m.response_time_us.map(|us| us as f64 / 1000.0),
        bandwidth_bps: m.bandwidth_bps,
        packets_ps: m.packets_ps,
        custom_load: m.custom_load,
        cpu_percent: m.cpu_percent,
        memory_percent: m.memory_percent,
        requests_ps: m.requests_ps,
        new_sessions_ps: m.new_sessions_ps,
        healthy_backends: m.healthy_backends,
    }
}
