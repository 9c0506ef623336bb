//! The REST API (`/v1/...`): the router, and the error shape every
//! endpoint shares. Reads are in [`views`], writes in [`push`]; who may
//! call them is decided in [`auth`], before any handler runs.

pub mod auth;
mod config;
mod config_sync;
mod events;
mod maintenance;
pub mod metrics;
mod objects;
mod openapi;
mod params;
mod probes;
mod push;
mod stats;
pub mod tls;
mod ui;
mod views;

pub use maintenance::admin_entry;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use sextant_api::ApiError;
use utoipa::OpenApi as _;

use crate::serve::Daemon;

pub fn router(daemon: Arc<Daemon>) -> Router {
    Router::new()
        .route("/v1/status", get(views::status))
        .route("/v1/services", get(views::services))
        .route("/v1/services/{name}/metrics", post(push::push_metrics))
        .route("/v1/sites", get(views::sites))
        .route("/v1/explain", get(views::explain))
        .route("/v1/ldns", get(views::ldns))
        .route("/v1/records", get(views::records))
        .route("/v1/site/figures", post(push::push_site_figures))
        .route("/v1/vrrp", get(views::vrrp))
        .route("/v1/vservers", get(objects::vservers))
        .route("/v1/domains", get(objects::domains))
        .route("/v1/openapi.json", get(openapi::openapi))
        .route(
            "/v1/config",
            get(config::get_config)
                .put(config::put_config)
                // A whole configuration file (100,000 services is some MB).
                .layer(axum::extract::DefaultBodyLimit::max(256 * 1024 * 1024)),
        )
        .route("/v1/config/sync", post(config_sync::sync))
        .route("/v1/maintenance", get(maintenance::list))
        .route(
            "/v1/services/{name}/disable",
            post(maintenance::disable_service),
        )
        .route(
            "/v1/services/{name}/enable",
            post(maintenance::enable_service),
        )
        .route(
            "/v1/services/{name}/drain",
            post(maintenance::drain_service),
        )
        .route(
            "/v1/vservers/{name}/disable",
            post(maintenance::disable_vserver),
        )
        .route(
            "/v1/vservers/{name}/enable",
            post(maintenance::enable_vserver),
        )
        .route("/v1/sites/{name}/disable", post(maintenance::disable_site))
        .route("/v1/sites/{name}/enable", post(maintenance::enable_site))
        .route("/v1/services/{name}/history", get(events::history))
        .route("/v1/events", get(events::stream))
        .route("/metrics", get(metrics::metrics))
        .route("/v1/stats", get(stats::stats))
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&daemon.api_access),
            auth::require,
        ))
        // After the auth layer: the dashboard's assets and the supervisor's
        // probes are always served.
        .merge(ui::routes())
        .merge(probes::routes())
        // Outermost: a misspelt parameter is refused before anything runs.
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(params::Accepted::from_openapi(&openapi::ApiDoc::openapi())),
            params::refuse_unknown,
        ))
        .with_state(daemon)
}

async fn not_found() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "no such endpoint; try /v1/status, /v1/services, /v1/vservers, /v1/domains, /v1/sites, /v1/ldns, /v1/records, /v1/vrrp, /v1/openapi.json or /v1/explain?name=..&client=..",
    )
}

fn error(code: StatusCode, message: impl Into<String>) -> Response {
    (
        code,
        Json(ApiError {
            error: message.into(),
        }),
    )
        .into_response()
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
