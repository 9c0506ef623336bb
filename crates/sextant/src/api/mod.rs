//! The REST API (`/v1/...`): the router, and the error shape every
//! endpoint shares. Reads are in [`views`], writes in [`push`]; who may
//! call them is decided in [`auth`], before any handler runs.

pub mod auth;
mod config;
mod config_sync;
mod etag;
mod events;
pub mod listen;
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

use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use sextant_api::ApiError;
use utoipa::OpenApi as _;

use crate::serve::Daemon;

/// The body of any request but `PUT /v1/config`: the JSON of a metric or
/// figures push, a maintenance reason, a config sync request.
pub const MAX_BODY: usize = 64 * 1024;

/// The body of `PUT /v1/config`: a whole configuration file (100,000
/// services is some MB), as large as config sync transfers one.
pub const MAX_CONFIG_BODY: usize = sextant_config_sync::MAX_TRANSFER_BYTES;

/// The Content-Security-Policy of every answer: the dashboard's modules,
/// style sheet and API calls come from this node alone; no inline script
/// or style, no frame may hold it, no form posts elsewhere.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

pub fn router(daemon: Arc<Daemon>, limits: &listen::Limits) -> Router {
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
                .layer(DefaultBodyLimit::max(MAX_CONFIG_BODY)),
        )
        .route("/v1/config/sync", post(config_sync::sync))
        .route("/v1/config/commands", post(config::post_command))
        .route("/v1/config/save", post(config::save_config))
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
        .route(
            "/v1/events",
            get(events::stream).layer(axum::Extension(events::Streams::new(
                limits.max_event_streams,
            ))),
        )
        .route("/metrics", get(metrics::metrics))
        .route("/v1/stats", get(stats::stats))
        .fallback(not_found)
        // Inside the auth layer: a refusal never carries a tag.
        .layer(axum::middleware::from_fn(etag::tag))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&daemon.api_access),
            auth::require,
        ))
        // After the auth layer: the dashboard's assets and the supervisor's
        // probes are always served.
        .merge(ui::routes())
        .merge(probes::routes())
        .layer(DefaultBodyLimit::max(MAX_BODY))
        // A misspelt parameter is refused before anything else runs.
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(params::Accepted::from_openapi(&openapi::ApiDoc::openapi())),
            params::refuse_unknown,
        ))
        // Outermost: every answer carries the security headers, refusals
        // included.
        .layer(axum::middleware::map_response(security_headers))
        // gzip for a client that asks for it (`Accept-Encoding`); never the
        // event stream (`text/event-stream`), which tower-http's default
        // predicate leaves alone, nor bodies under 32 bytes.
        .layer(tower_http::compression::CompressionLayer::new())
        .with_state(daemon)
}

/// Every answer, the dashboard's and the API's, errors included: no frame
/// may hold it (clickjacking), no type is guessed from its content, and
/// the page runs only this node's own code.
async fn security_headers(r: Response) -> Response {
    // axum's own refusal of a body over its bound is plain text; every
    // error of the API is JSON.
    let mut r = if r.status() == StatusCode::PAYLOAD_TOO_LARGE
        && r.headers().get(header::CONTENT_TYPE)
            != Some(&HeaderValue::from_static("application/json"))
    {
        error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the request body is larger than this endpoint takes ({} KiB; PUT /v1/config: {} MiB)",
                MAX_BODY / 1024,
                MAX_CONFIG_BODY >> 20
            ),
        )
    } else {
        r
    };
    let h = r.headers_mut();
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    r
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
