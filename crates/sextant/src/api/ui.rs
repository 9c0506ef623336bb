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
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../../ui/style.css"),
    ),
];

pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
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
                other => panic!("{path}: unexpected extension {other:?}"),
            };
            assert!(content_type.starts_with(expected), "{path}: {content_type}");
            assert!(
                !body.contains("http://") && !body.contains("https://"),
                "{path} references a remote address"
            );
        }
    }

    #[test]
    fn index_loads_every_script_and_stylesheet_it_names_from_the_table() {
        let index = ASSETS[0].2;
        for (path, _, _) in &ASSETS[1..] {
            assert!(
                index.contains(&format!("\"{path}\"")),
                "index.html does not load {path}"
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
