//! `ETag` and `If-None-Match` on the JSON read endpoints: a dashboard that
//! polls `/v1/services` every 2 s downloads it again only when it changed,
//! and is answered `304 Not Modified` (no body) otherwise.
//!
//! The tag is a hash of the JSON body, so it changes exactly when the body
//! does; it is weak (`W/"…"`) because the same JSON is sent gzip-compressed
//! or not, as the client asks.

use std::hash::{Hash, Hasher};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The largest body tagged: a `/v1/services` of 100,000 services is some
/// tens of MB; anything larger is sent untagged, as it was.
const MAX_TAGGED: usize = 256 << 20;

/// Tags every successful `GET` answered with JSON; answers `304` when the
/// request's `If-None-Match` names the tag the body has now.
pub(super) async fn tag(request: Request, next: Next) -> Response {
    if request.method() != Method::GET {
        return next.run(request).await;
    }
    let asked = request.headers().get(header::IF_NONE_MATCH).cloned();
    let response = next.run(request).await;
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|t| t.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    if response.status() != StatusCode::OK || !json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_TAGGED).await else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    let etag = format!("W/\"{:016x}-{:x}\"", hasher.finish(), bytes.len());
    let Ok(value) = HeaderValue::from_str(&etag) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    parts.headers.insert(header::ETAG, value.clone());
    // The dashboard revalidates every poll.
    parts
        .headers
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if asked.is_some_and(|a| matches(&a, &etag)) {
        parts.status = StatusCode::NOT_MODIFIED;
        parts.headers.remove(header::CONTENT_TYPE);
        parts.headers.remove(header::CONTENT_LENGTH);
        return Response::from_parts(parts, Body::empty());
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// Whether `If-None-Match` names `etag` (weak comparison: `W/` ignored).
fn matches(asked: &HeaderValue, etag: &str) -> bool {
    let Ok(asked) = asked.to_str() else {
        return false;
    };
    let bare = |t: &str| t.trim().trim_start_matches("W/").to_string();
    let want = bare(etag);
    asked.split(',').any(|t| t.trim() == "*" || bare(t) == want)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_none_match_compares_weakly_and_takes_lists() {
        let tag = "W/\"00ab-10\"";
        let m = |s: &'static str| matches(&HeaderValue::from_static(s), tag);
        assert!(m("W/\"00ab-10\""));
        assert!(m("\"00ab-10\""));
        assert!(m("\"other\", W/\"00ab-10\""));
        assert!(m("*"));
        assert!(!m("W/\"00ab-11\""));
        assert!(!m(""));
    }
}
