//! The dashboard under `/ui/`: static assets compiled into the binary so the
//! page works offline (no CDN, nothing fetched at run time). The assets are
//! served without the API's read check — they hold no data; every call the
//! page makes goes through the ordinary API and its rules.

use axum::Router;
use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

/// Every asset: path under `/ui/` → (content type, bytes).
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "index.html",
        "text/html; charset=utf-8",
        include_str!("../../ui/index.html"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_str!("../../ui/app.js"),
    ),
    (
        "api.js",
        "text/javascript; charset=utf-8",
        include_str!("../../ui/api.js"),
    ),
    (
        "dom.js",
        "text/javascript; charset=utf-8",
        include_str!("../../ui/dom.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../../ui/style.css"),
    ),
    (
        "views/topology.js",
        "text/javascript; charset=utf-8",
        include_str!("../../ui/views/topology.js"),
    ),
    (
        "views/services.js",
        "text/javascript; charset=utf-8",
        include_str!("../../ui/views/services.js"),
    ),
    (
        "views/domains.js",
        "text/javascript; charset=utf-8",
        include_str!("../../ui/views/domains.js"),
    ),
    (
        "views/rtt.js",
        "text/javascript; charset=utf-8",
        include_str!("../../ui/views/rtt.js"),
    ),
    (
        "views/vrrp.js",
        "text/javascript; charset=utf-8",
        include_str!("../../ui/views/vrrp.js"),
    ),
    (
        "views/explain.js",
        "text/javascript; charset=utf-8",
        include_str!("../../ui/views/explain.js"),
    ),
    (
        "favicon.svg",
        "image/svg+xml",
        include_str!("../../ui/favicon.svg"),
    ),
];

pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        // The node's address typed into a browser opens the dashboard; a
        // temporary redirect, so that `/` stays free for later use.
        .route("/", get(|| async { Redirect::temporary("/ui/") }))
        .route(
            "/favicon.ico",
            get(|| async { Redirect::temporary("/ui/favicon.svg") }),
        )
        .route("/ui", get(|| async { Redirect::permanent("/ui/") }))
        .route("/ui/", get(|| async { asset("index.html") }))
        .route(
            "/ui/{*file}",
            get(|Path(file): Path<String>| async move { asset(&file) }),
        )
}

fn asset(file: &str) -> Response {
    match ASSETS.iter().find(|(path, _, _)| *path == file) {
        Some((_, content_type, body)) => (
            [
                (header::CONTENT_TYPE, *content_type),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            *body,
        )
            .into_response(),
        None => super::error(StatusCode::NOT_FOUND, format!("no dashboard file {file}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_has_a_type_and_references_nothing_remote() {
        for (path, content_type, body) in ASSETS {
            let expected = match path.rsplit('.').next() {
                Some("html") => "text/html",
                Some("js") => "text/javascript",
                Some("css") => "text/css",
                Some("svg") => "image/svg+xml",
                other => panic!("{path}: unexpected extension {other:?}"),
            };
            assert!(content_type.starts_with(expected), "{path}: {content_type}");
            // The SVG namespace is a name, never fetched.
            let body = body.replace("\"http://www.w3.org/2000/svg\"", "");
            assert!(
                !body.contains("http://") && !body.contains("https://"),
                "{path} references a remote address"
            );
        }
    }

    /// The quoted paths a file loads: `src="…"`/`href="…"` in HTML,
    /// `from "…"` in modules, resolved against the file's folder.
    fn loaded_by(path: &str, body: &str) -> Vec<String> {
        let folder = path.rsplit_once('/').map_or("", |(dir, _)| dir);
        let markers: &[&str] = if path.ends_with(".html") {
            &["src=\"", "href=\""]
        } else {
            &["from \""]
        };
        let mut out = Vec::new();
        for marker in markers {
            for piece in body.split(marker).skip(1) {
                let Some((target, _)) = piece.split_once('"') else {
                    continue;
                };
                if target.starts_with('#') {
                    continue;
                }
                let mut parts: Vec<&str> = folder.split('/').filter(|p| !p.is_empty()).collect();
                for step in target.split('/') {
                    match step {
                        "." | "" => {}
                        ".." => {
                            parts.pop();
                        }
                        name => parts.push(name),
                    }
                }
                out.push(parts.join("/"));
            }
        }
        out
    }

    #[test]
    fn every_asset_is_loaded_and_everything_loaded_is_an_asset() {
        let mut loaded = vec!["index.html".to_string()];
        for (path, _, body) in ASSETS {
            for target in loaded_by(path, body) {
                assert!(
                    ASSETS.iter().any(|(p, _, _)| *p == target),
                    "{path} loads {target}, which the table does not serve"
                );
                loaded.push(target);
            }
        }
        for (path, _, _) in ASSETS {
            assert!(
                loaded.iter().any(|l| l == path),
                "{path} is served but nothing loads it"
            );
        }
    }

    #[test]
    fn serves_assets_and_refuses_unknown_files() {
        assert_eq!(asset("app.js").status(), StatusCode::OK);
        let css = asset("style.css");
        assert_eq!(
            css.headers()[header::CONTENT_TYPE],
            "text/css; charset=utf-8"
        );
        assert_eq!(asset("../Cargo.toml").status(), StatusCode::NOT_FOUND);
    }
}
