//! `POST /v1/config/sync`: the appliance's `sync gslb config` with its
//! `-preview`, `-forceSync SITE` and `-debug`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use sextant_api::{ConfigSyncAnswer, ConfigSyncRequest, SyncPeerOutcome, SyncPreview, SyncVersion};
use sextant_config_sync::{PeerState, Status};
use sextant_mep::message::ConfigVersion;
use tracing::info;

use super::auth::Caller;
use super::{error, rfc3339};
use crate::serve::Daemon;

/// How long a sync waits for the peers' answers before it reports.
const WAIT: Duration = Duration::from_secs(15);

fn version(v: &ConfigVersion) -> SyncVersion {
    SyncVersion {
        incarnation: v.incarnation,
        origin: v.origin.clone(),
        digest: v.digest.clone(),
    }
}

/// `sync gslb config`: makes this node's configuration the newest and sends
/// it to every peer parent (`force_site`: the whole text to that one only),
/// even where automatic sync is off; or, with `preview`, shows what each
/// would get.
#[utoipa::path(post, path = "/v1/config/sync", tag = "write",
    request_body(content = sextant_api::ConfigSyncRequest, description = "preview, force_site, debug: each optional"),
    responses((status = 200, description = "the preview, or where each peer parent stands after the sync", body = sextant_api::ConfigSyncAnswer),
        (status = 400, description = "force_site is not a peer parent of this node, or the body is not the JSON expected (an unknown field is refused)", body = sextant_api::ApiError),
        (status = 401, description = "no token, or a wrong one (nothing changes)", body = sextant_api::ApiError),
        (status = 403, description = "writes are disabled: the server has no token file", body = sextant_api::ApiError),
        (status = 409, description = "this node syncs with no parent (a child, or a single site), or force_site's link is down", body = sextant_api::ApiError),
        (status = 503, description = "config sync has not started yet, or the server is stopping", body = sextant_api::ApiError)))]
pub(super) async fn sync(
    State(d): State<Arc<Daemon>>,
    caller: Option<Extension<Caller>>,
    body: axum::body::Bytes,
) -> Response {
    // Read whatever the Content-Type: a body sent as a form (`curl -d`)
    // must not become an empty request, that is a real sync.
    let req: ConfigSyncRequest = if body.iter().all(u8::is_ascii_whitespace) {
        ConfigSyncRequest::default()
    } else {
        match super::push::json_body(
            &body,
            "{\"preview\": true} (fields: preview, force_site, debug; each optional)",
        ) {
            Ok(r) => r,
            Err(e) => return error(StatusCode::BAD_REQUEST, e),
        }
    };
    let status = d.config_sync.status();
    let Some(status) = status.as_ref().as_ref() else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "config sync has not started yet",
        );
    };
    if status.peers.is_empty() {
        return error(
            StatusCode::CONFLICT,
            "this node syncs its configuration with no other parent (it is a child site, or the only parent); nothing to do",
        );
    }
    if req.preview {
        let preview = d.config_sync.preview().await.unwrap_or_default();
        let answer = ConfigSyncAnswer {
            version: version(&status.version),
            preview: Some(
                preview
                    .into_iter()
                    .map(|p| SyncPreview {
                        site: p.site,
                        version: p.version.as_ref().map(version),
                        transfer: p.transfer,
                        diff: p.diff,
                    })
                    .collect(),
            ),
            peers: Vec::new(),
            exchange: None,
        };
        return Json(answer).into_response();
    }
    let targets: Vec<String> = match &req.force_site {
        Some(site) => {
            let Some(p) = status
                .peers
                .iter()
                .find(|p| p.site.eq_ignore_ascii_case(site))
            else {
                let known: Vec<&str> = status.peers.iter().map(|p| p.site.as_str()).collect();
                return error(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "-forceSync {site}: not a peer parent of this node (they are: {})",
                        known.join(", ")
                    ),
                );
            };
            if !p.up {
                return error(
                    StatusCode::CONFLICT,
                    format!(
                        "-forceSync {}: its metric exchange link is down; nothing was sent",
                        p.site
                    ),
                );
            }
            vec![p.site.clone()]
        }
        None => status.peers.iter().map(|p| p.site.clone()).collect(),
    };
    let Some(since) = d.config_sync.manual(req.force_site.clone()).await else {
        return error(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping");
    };
    info!(
        token = caller.as_ref().map(|c| c.0.0.as_str()).unwrap_or("-"),
        to = %targets.join(","),
        "config sync: manual sync over the API"
    );
    // Wait for the answers (or the timeout), so the reply says how it went.
    let started = Instant::now();
    let last = loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let st = d.config_sync.status();
        let Some(st) = st.as_ref().clone() else {
            continue;
        };
        let pending = st.peers.iter().any(|p| {
            targets.iter().any(|t| t.eq_ignore_ascii_case(&p.site))
                && p.up
                && p.state == PeerState::Sending
        });
        if !pending || started.elapsed() >= WAIT {
            break st;
        }
    };
    let exchange = if req.debug {
        let lines = d
            .config_sync
            .exchange_since(since)
            .await
            .unwrap_or_default();
        Some(
            lines
                .into_iter()
                .map(|e| {
                    format!(
                        "{} {} {} {}",
                        rfc3339(d.clock.wall(e.at)),
                        e.direction,
                        e.site,
                        e.text
                    )
                })
                .collect(),
        )
    } else {
        None
    };
    Json(answer_for(&last, &targets, exchange)).into_response()
}

fn answer_for(st: &Status, targets: &[String], exchange: Option<Vec<String>>) -> ConfigSyncAnswer {
    ConfigSyncAnswer {
        version: version(&st.version),
        preview: None,
        peers: st
            .peers
            .iter()
            .filter(|p| targets.iter().any(|t| t.eq_ignore_ascii_case(&p.site)))
            .map(|p| SyncPeerOutcome {
                site: p.site.clone(),
                state: if p.up {
                    p.state.as_str().to_string()
                } else {
                    "down".to_string()
                },
                incarnation: p.version.as_ref().map(|v| v.incarnation),
                last_error: p.last_error.clone(),
            })
            .collect(),
        exchange,
    }
}
