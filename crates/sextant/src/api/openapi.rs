//! `GET /v1/openapi.json`: the API's OpenAPI 3.1 description, generated
//! from the handlers' `#[utoipa::path]` attributes and the sextant-api
//! types, so it cannot drift from what the server does. The end-to-end
//! test `openapi` walks every path of it against a running server.

use axum::Json;
use utoipa::OpenApi;

use super::{
    config, config_sync, events, maintenance, metrics, objects, probes, push, stats, views,
};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Sextant REST API",
        description = "Reads of the published state, and authenticated writes. See docs/api.md."
    ),
    paths(
        views::status,
        probes::ready,
        probes::live,
        views::services,
        views::sites,
        views::explain,
        views::ldns,
        views::records,
        views::vrrp,
        objects::vservers,
        objects::domains,
        push::push_metrics,
        push::push_site_figures,
        config::get_config,
        config::put_config,
        config_sync::sync,
        maintenance::list,
        maintenance::disable_service,
        maintenance::enable_service,
        maintenance::drain_service,
        maintenance::disable_vserver,
        maintenance::enable_vserver,
        maintenance::disable_site,
        maintenance::enable_site,
        events::history,
        events::stream,
        stats::stats,
        metrics::metrics,
        openapi,
    ),
    tags(
        (name = "read", description = "the published state"),
        (name = "write", description = "changes; need an API token"),
    )
)]
pub struct ApiDoc;

/// This description.
#[utoipa::path(get, path = "/v1/openapi.json", tag = "read",
    responses((status = 200, description = "the OpenAPI description of this API")))]
pub(super) async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
