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
        config::post_command,
        config::save_config,
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
    ),
    modifiers(&UnknownParameters)
)]
pub struct ApiDoc;

/// Every operation refuses a query parameter it does not document
/// ([`super::params`]): its 400 says so.
struct UnknownParameters;

const UNKNOWN_PARAMETER: &str =
    "an unknown query parameter (the error names it and lists the accepted ones; nothing is done)";

impl utoipa::Modify for UnknownParameters {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::schema::{OneOfBuilder, Schema};
        use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};
        let api_error = || RefOr::Ref(Ref::from_schema_name("ApiError"));
        for item in doc.paths.paths.values_mut() {
            for op in [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ]
            .into_iter()
            .flatten()
            {
                match op.responses.responses.get_mut("400") {
                    Some(RefOr::T(r)) => {
                        r.description = format!("{}; or {UNKNOWN_PARAMETER}", r.description);
                        // The refusal is an ApiError whatever else a 400 is.
                        for c in r.content.values_mut() {
                            let other = match c.schema.take() {
                                Some(RefOr::Ref(r)) if r.ref_location.ends_with("/ApiError") => {
                                    c.schema = Some(RefOr::Ref(r));
                                    continue;
                                }
                                other => other,
                            };
                            let mut one_of = OneOfBuilder::new();
                            if let Some(other) = other {
                                one_of = one_of.item(other);
                            }
                            c.schema =
                                Some(RefOr::T(Schema::OneOf(one_of.item(api_error()).build())));
                        }
                    }
                    Some(RefOr::Ref(_)) => {}
                    None => {
                        let r = ResponseBuilder::new()
                            .description(UNKNOWN_PARAMETER)
                            .content(
                                "application/json",
                                ContentBuilder::new().schema(Some(api_error())).build(),
                            )
                            .build();
                        op.responses.responses.insert("400".into(), RefOr::T(r));
                    }
                }
            }
        }
    }
}

/// This description.
#[utoipa::path(get, path = "/v1/openapi.json", tag = "read",
    responses((status = 200, description = "the OpenAPI description of this API")))]
pub(super) async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_documents_the_unknown_parameter_refusal() {
        let doc = serde_json::to_value(ApiDoc::openapi()).unwrap();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let r = &op["responses"]["400"];
                assert!(
                    r["description"]
                        .as_str()
                        .is_some_and(|d| d.contains("unknown query parameter")),
                    "{method} {path}: {op}"
                );
            }
        }
    }
}
