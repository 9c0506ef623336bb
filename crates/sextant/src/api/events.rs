//! What happened: each service's recent transitions and the server-sent
//! event stream of transitions, maintenance changes, reloads, metric
//! exchange links and VRRP states (see [`crate::events`]).

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use tokio::sync::Semaphore;
use tokio::sync::broadcast::error::RecvError;

use super::error;
use crate::serve::Daemon;

/// `GET /v1/services/{name}/history`: the last transitions, newest last.
#[utoipa::path(get, path = "/v1/services/{name}/history", tag = "read",
    params(("name" = String, Path, description = "the service's name")),
    responses((status = 200, description = "the last transitions (at most 100), newest last", body = Vec<sextant_api::HistoryEntry>),
        (status = 404, description = "no such service", body = sextant_api::ApiError)))]
pub(super) async fn history(State(d): State<Arc<Daemon>>, Path(name): Path<String>) -> Response {
    let snap = d.dns.snapshot.load();
    if snap.service_by_name(&name).is_none() {
        return error(
            StatusCode::NOT_FOUND,
            format!("no service named {name:?}; GET /v1/services lists them"),
        );
    }
    Json(d.history.get(&name)).into_response()
}

/// The `/v1/events` streams open at once: each holds a permit while its
/// client is connected, so the subscribers are capped.
#[derive(Clone)]
pub(super) struct Streams {
    permits: Arc<Semaphore>,
    max: usize,
}

impl Streams {
    pub(super) fn new(max: usize) -> Streams {
        Streams {
            permits: Arc::new(Semaphore::new(max)),
            max,
        }
    }
}

/// `GET /v1/events`: `text/event-stream`, one event per change, named
/// `transition`, `maintenance`, `reload`, `mep` or `vrrp`, its data one
/// JSON object, its `id` `EPOCH-N` (this process, its number). A client is first sent the recent
/// events (the last 100 of the last 10 minutes; after `Last-Event-ID` when
/// it reconnects with one). A client that falls behind gets a `lagged` event with the
/// number it missed; it never holds anyone up. At most
/// `--api-max-event-streams` are open at once; one more is answered 503.
#[utoipa::path(get, path = "/v1/events", tag = "read",
    responses((status = 200, description = "server-sent events: transition, maintenance, reload, mep, vrrp, lagged",
        content_type = "text/event-stream", body = String),
        (status = 503, description = "as many event streams are open as the server allows (--api-max-event-streams)", body = sextant_api::ApiError)))]
pub(super) async fn stream(
    State(d): State<Arc<Daemon>>,
    Extension(streams): Extension<Streams>,
    headers: axum::http::HeaderMap,
) -> Response {
    let Ok(permit) = Arc::clone(&streams.permits).try_acquire_owned() else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "{} event streams are open, as many as this server allows (--api-max-event-streams); close one, or poll /v1/services/NAME/history",
                streams.max
            ),
        );
    };
    // A client that reconnects names the last event it saw: it is sent
    // only those after it. An unreadable one counts as none.
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| d.events.parse_id(v));
    let (rx, replay) = d.events.subscribe_replaying(after);
    let replay: std::collections::VecDeque<_> = replay.into();
    // The first thing sent is a comment: once a client reads it, it is
    // subscribed and sees every later event. Then the recent events it
    // missed (the last 100, of the last 10 minutes), then each new one.
    // The permit goes with the stream and is given back when the client
    // goes.
    let ids = Arc::new(d.events.clone());
    let stream = futures_util::stream::unfold(
        (rx, true, replay, permit),
        move |(mut rx, first, mut replay, permit)| {
            let ids = Arc::clone(&ids);
            let sse = move |e: &crate::events::ApiEvent| {
                Event::default()
                    .id(ids.sse_id(e))
                    .event(e.name)
                    .data(e.data.to_string())
            };
            async move {
                if first {
                    return Some((
                        Ok::<_, Infallible>(Event::default().comment("subscribed")),
                        (rx, false, replay, permit),
                    ));
                }
                if let Some(e) = replay.pop_front() {
                    return Some((Ok(sse(&e)), (rx, false, replay, permit)));
                }
                let event = match rx.recv().await {
                    Ok(e) => sse(&e),
                    Err(RecvError::Lagged(missed)) => Event::default()
                        .event("lagged")
                        .data(serde_json::json!({ "missed": missed }).to_string()),
                    Err(RecvError::Closed) => return None,
                };
                Some((Ok(event), (rx, false, replay, permit)))
            }
        },
    );
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}
