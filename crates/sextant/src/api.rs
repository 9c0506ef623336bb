//! The read-only REST API (`/v1/...`).

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use sextant_api::{ApiError, DnsCounters, Site, Status};
use sextant_core::SiteKind;

use crate::serve::Daemon;

pub fn router(daemon: Arc<Daemon>) -> Router {
    Router::new()
        .route("/v1/status", get(status))
        .route("/v1/services", get(services))
        .route("/v1/sites", get(sites))
        .route("/v1/explain", get(explain))
        .fallback(not_found)
        .with_state(daemon)
}

async fn not_found() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "no such endpoint; try /v1/status, /v1/services, /v1/sites or /v1/explain?name=..&client=..",
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

async fn status(State(d): State<Arc<Daemon>>) -> Json<Status> {
    let snap = d.dns.snapshot.load();
    let model = snap.model();
    let c = d.dns.stats.snapshot();
    Json(Status {
        version: env!("CARGO_PKG_VERSION").to_string(),
        local_site: model.local_site.map(|s| model.site(s).name.clone()),
        generation: snap.generation(),
        config_file: d.config_file.display().to_string(),
        uptime_seconds: d.started.elapsed().as_secs(),
        last_reload_error: d.last_reload_error.read().ok().and_then(|e| e.clone()),
        dns: DnsCounters {
            queries_udp: c.queries_udp,
            queries_tcp: c.queries_tcp,
            noerror: c.noerror,
            nxdomain: c.nxdomain,
            refused: c.refused,
            formerr: c.formerr,
            servfail: c.servfail,
            notimp: c.notimp,
            badvers: c.badvers,
            truncated: c.truncated,
            tcp_rejected: c.tcp_rejected,
            dropped: c.dropped,
        },
    })
}

async fn services(State(d): State<Arc<Daemon>>) -> Response {
    match d.book.read() {
        Ok(book) => Json(book.views()).into_response(),
        Err(_) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "health state unavailable",
        ),
    }
}

async fn sites(State(d): State<Arc<Daemon>>) -> Json<Vec<Site>> {
    let snap = d.dns.snapshot.load();
    let model = snap.model();
    let has_children = model.sites.iter().any(|s| s.parent.is_some());
    Json(
        model
            .sites
            .iter()
            .map(|s| Site {
                name: s.name.clone(),
                ip: s.ip.to_string(),
                public_ip: s.public_ip.map(|ip| ip.to_string()),
                role: match s.kind {
                    SiteKind::Local => "local",
                    SiteKind::Remote => "remote",
                }
                .to_string(),
                kind: if s.parent.is_some() {
                    "child"
                } else if has_children {
                    "parent"
                } else {
                    "flat"
                }
                .to_string(),
                parent: s.parent.map(|p| model.site(p).name.clone()),
                // Metric exchange is not running yet: no site has a MEP state.
                mep: "n/a".to_string(),
            })
            .collect(),
    )
}

#[derive(Debug, Deserialize)]
struct ExplainParams {
    name: String,
    client: IpAddr,
    #[serde(rename = "type")]
    qtype: Option<String>,
    ecs: Option<String>,
}

async fn explain(State(d): State<Arc<Daemon>>, Query(p): Query<ExplainParams>) -> Response {
    let snap = d.dns.snapshot.load_full();
    match crate::explain::explain(
        &snap,
        &d.dns.sessions,
        &p.name,
        p.qtype.as_deref().unwrap_or("A"),
        p.client,
        p.ecs.as_deref(),
    ) {
        Ok(e) => Json(e).into_response(),
        Err(e) => error(StatusCode::BAD_REQUEST, format!("{e:#}")),
    }
}
