//! `/v1/ready` and `/v1/live`: the questions a supervisor asks (Kubernetes'
//! readiness and liveness probes, a load balancer's health check). They are
//! answered without a token, even where reads need one: a probe cannot
//! carry a secret, and the answer tells nothing but yes or no.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::sync::oneshot;

use super::error;
use crate::serve::{Daemon, Input};

/// How long `/v1/live` waits for the state task (below the probes' usual
/// timeout of a few seconds, so the answer is a 503 rather than a timeout).
pub const LIVE_WAIT: Duration = Duration::from_secs(2);

pub fn routes() -> Router<Arc<Daemon>> {
    Router::new()
        .route("/v1/ready", get(ready))
        .route("/v1/live", get(live))
}

/// Ready: DNS is answering. Until the first health results are in (the
/// start-up gate) the API answers but DNS does not: send no traffic yet.
#[utoipa::path(get, path = "/v1/ready", tag = "read",
    responses(
        (status = 200, description = "DNS is answering", body = sextant_api::Probe),
        (status = 503, description = "DNS is not answering yet", body = sextant_api::ApiError)))]
pub(super) async fn ready(State(d): State<Arc<Daemon>>) -> Response {
    if d.dns_serving.load(Ordering::Acquire) {
        Json(sextant_api::Probe {
            generation: d.dns.snapshot.load().generation(),
        })
        .into_response()
    } else {
        error(
            StatusCode::SERVICE_UNAVAILABLE,
            "DNS is not answering yet: waiting for the first health results (the start-up gate)",
        )
    }
}

/// Alive: the state task (health, metric exchange, reloads) takes inputs,
/// as the systemd watchdog checks it. A stuck task fails this; restart.
#[utoipa::path(get, path = "/v1/live", tag = "read",
    responses(
        (status = 200, description = "the state task answers", body = sextant_api::Probe),
        (status = 503, description = "the state task did not answer in time", body = sextant_api::ApiError)))]
pub(super) async fn live(State(d): State<Arc<Daemon>>) -> Response {
    let (reply, answered) = oneshot::channel();
    let asked =
        async { d.inputs.send(Input::Alive(reply)).await.is_ok() && answered.await.is_ok() };
    if tokio::time::timeout(LIVE_WAIT, asked).await == Ok(true) {
        Json(sextant_api::Probe {
            generation: d.dns.snapshot.load().generation(),
        })
        .into_response()
    } else {
        error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the state task did not answer within {} s: health, metric exchange and reloads are stuck",
                LIVE_WAIT.as_secs()
            ),
        )
    }
}
