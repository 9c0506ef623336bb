//! The write endpoints: load figures pushed for a service or for this
//! site, handed to the state task as inputs.
//!
//! Every figure is checked before it is taken: a value out of its range
//! (a negative or non-finite response time, a percentage over 100) is
//! refused with a 400 naming the field and the range, never clamped or
//! dropped in silence. JSON has no NaN or Infinity; `NaN` in a body is a
//! syntax error and `1e999` a number out of range, both refused naming
//! the field.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
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
    let push: sextant_api::SiteFiguresPush = match json_body(
        &body,
        "{\"cpu_percent\": 35.5, \"memory_percent\": 60, \"bandwidth_bytes_ps\": 1250000} (null or missing: measured)",
    ) {
        Ok(p) => p,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    let bad = [
        ("cpu_percent", push.cpu_percent, 100.0, "0 to 100"),
        ("memory_percent", push.memory_percent, 100.0, "0 to 100"),
        (
            "bandwidth_bytes_ps",
            push.bandwidth_bytes_ps,
            f64::MAX,
            "0 or more, finite",
        ),
    ]
    .into_iter()
    .find(|(_, v, max, _)| v.is_some_and(|v| !v.is_finite() || !(0.0..=*max).contains(&v)));
    if let Some((name, Some(v), _, range)) = bad {
        return error(
            StatusCode::BAD_REQUEST,
            format!("{name}: {v} is out of range ({range}); nothing was changed"),
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
        (status = 400, description = "not the JSON expected, or a figure out of its range (response_time_ms 0 to 3600000, percentages 0 to 100); the error names the field", body = sextant_api::ApiError),
        (status = 404, description = "no such service", body = sextant_api::ApiError),
        (status = 409, description = "the service belongs to another site", body = sextant_api::ApiError)))]
pub(super) async fn push_metrics(
    State(d): State<Arc<Daemon>>,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    let push: PushMetrics = match json_body(
        &body,
        "{\"connections\": 12, \"response_time_ms\": 3.5, \"bandwidth_bps\": 1000, \"packets_ps\": 80, \"custom_load\": 40}",
    ) {
        Ok(p) => p,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    if let Err(e) = check_push(&push) {
        return error(StatusCode::BAD_REQUEST, format!("{e}; nothing was changed"));
    }
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

/// The longest response time a push may give: an hour. Anything longer is
/// a unit mistake (microseconds for milliseconds), not a measurement.
const MAX_RESPONSE_TIME_MS: f64 = 3_600_000.0;

/// Why a pushed body's figures are out of range, naming the field.
fn check_push(push: &PushMetrics) -> Result<(), String> {
    if let Some(ms) = push.response_time_ms
        && !(ms.is_finite() && (0.0..=MAX_RESPONSE_TIME_MS).contains(&ms))
    {
        return Err(format!(
            "response_time_ms: {ms} is out of range (0 to {MAX_RESPONSE_TIME_MS} ms)"
        ));
    }
    for (name, v) in [
        ("cpu_percent", push.cpu_percent),
        ("memory_percent", push.memory_percent),
    ] {
        if let Some(v) = v
            && v > 100
        {
            return Err(format!("{name}: {v} is out of range (0 to 100)"));
        }
    }
    Ok(())
}

/// Reads a JSON body; otherwise the 400's message, naming the field that
/// is wrong.
pub(super) fn json_body<T: DeserializeOwned>(body: &[u8], example: &str) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let (field, inner) = match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Ok(v) => match de.end() {
            Ok(()) => return Ok(v),
            Err(e) => (String::new(), e),
        },
        Err(e) => {
            let field = e.path().to_string();
            let field = if field == "." { String::new() } else { field };
            (field, e.into_inner())
        }
    };
    let at = if field.is_empty() {
        String::new()
    } else {
        format!("{field}: ")
    };
    let hint = if inner.classify() == serde_json::error::Category::Syntax {
        " (JSON numbers are finite: NaN and Infinity are not JSON)"
    } else {
        ""
    };
    Err(format!(
        "body: {at}{inner}{hint}; expected JSON like {example}; nothing was changed"
    ))
}

/// A pushed body, checked by [`check_push`], as the core's figures.
fn from_push(push: &PushMetrics) -> sextant_core::ServiceMetrics {
    sextant_core::ServiceMetrics {
        connections: push.connections,
        response_time_us: push.response_time_ms.map(|ms| (ms * 1000.0) as u64),
        bandwidth_bps: push.bandwidth_bps,
        packets_ps: push.packets_ps,
        custom_load: push.custom_load,
        cpu_percent: push.cpu_percent,
        memory_percent: push.memory_percent,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(body: &str) -> String {
        json_body::<PushMetrics>(body.as_bytes(), "{}").unwrap_err()
    }

    #[test]
    fn a_bad_body_names_its_field() {
        let e = refusal(r#"{"connections": 1, "response_time_ms": NaN}"#);
        assert!(
            e.contains("response_time_ms: ") && e.contains("NaN and Infinity"),
            "{e}"
        );
        let e = refusal(r#"{"response_time_ms": 1e999}"#);
        assert!(e.contains("response_time_ms: number out of range"), "{e}");
        let e = refusal(r#"{"cpu_percent": -1}"#);
        assert!(e.contains("cpu_percent: invalid value"), "{e}");
        let e = refusal(r#"{"connections": 1} trailing"#);
        assert!(e.contains("trailing characters"), "{e}");
    }

    #[test]
    fn figures_out_of_range_are_named_with_the_range() {
        let push = |ms: f64| PushMetrics {
            response_time_ms: Some(ms),
            ..PushMetrics::default()
        };
        assert_eq!(check_push(&push(3.5)), Ok(()));
        assert_eq!(check_push(&push(0.0)), Ok(()));
        assert_eq!(
            check_push(&push(-1.0)).unwrap_err(),
            "response_time_ms: -1 is out of range (0 to 3600000 ms)"
        );
        assert!(check_push(&push(f64::NAN)).is_err());
        assert!(check_push(&push(f64::INFINITY)).is_err());
        let cpu = PushMetrics {
            cpu_percent: Some(101),
            ..PushMetrics::default()
        };
        assert_eq!(
            check_push(&cpu).unwrap_err(),
            "cpu_percent: 101 is out of range (0 to 100)"
        );
    }
}
