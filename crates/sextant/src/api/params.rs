//! Unknown query parameters are refused on every endpoint (400, naming the
//! parameter and listing the accepted ones), so that a misspelt switch
//! (`?dryrun=1` for `?dry_run=1`) is an error and never a real apply.
//!
//! The parameters an endpoint accepts are read from the API's own OpenAPI
//! description ([`super::openapi::ApiDoc`]), so the check and the
//! description cannot disagree: a parameter is accepted exactly when it is
//! documented. Paths the description does not know (the dashboard's
//! files, the 404 fallback) and methods it does not list are left to the
//! router.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use utoipa::openapi::OpenApi;
use utoipa::openapi::path::{Operation, ParameterIn, PathItem};

use super::error;

/// The query parameters each documented operation accepts.
#[derive(Debug, Default)]
pub struct Accepted {
    routes: Vec<Route>,
}

#[derive(Debug)]
struct Route {
    method: Method,
    /// The path template split at `/`; `None` for a `{param}` segment.
    segments: Vec<Option<String>>,
    names: Vec<String>,
}

impl Accepted {
    /// Reads every operation's query parameters from `doc`.
    pub fn from_openapi(doc: &OpenApi) -> Accepted {
        let mut routes = Vec::new();
        for (template, item) in &doc.paths.paths {
            let segments: Vec<Option<String>> = template
                .split('/')
                .map(|s| (!(s.starts_with('{') && s.ends_with('}'))).then(|| s.to_string()))
                .collect();
            for (method, op) in operations(item) {
                let mut names: Vec<String> = item
                    .parameters
                    .iter()
                    .chain(op.parameters.iter())
                    .flatten()
                    .filter(|p| matches!(p.parameter_in, ParameterIn::Query))
                    .map(|p| p.name.clone())
                    .collect();
                names.sort();
                names.dedup();
                routes.push(Route {
                    method,
                    segments: segments.clone(),
                    names,
                });
            }
        }
        Accepted { routes }
    }

    /// The documented operation `method path` is, preferring literal
    /// segments over `{param}` ones.
    fn route(&self, method: &Method, path: &str) -> Option<&Route> {
        let method = if method == Method::HEAD {
            &Method::GET
        } else {
            method
        };
        let parts: Vec<&str> = path.split('/').collect();
        self.routes
            .iter()
            .filter(|r| r.method == *method && r.segments.len() == parts.len())
            .filter(|r| {
                r.segments
                    .iter()
                    .zip(&parts)
                    .all(|(s, p)| s.as_deref().is_none_or(|s| s == *p))
            })
            .max_by_key(|r| r.segments.iter().filter(|s| s.is_some()).count())
    }

    /// Why `query` is refused for `method path`, if it is.
    pub fn check(&self, method: &Method, path: &str, query: Option<&str>) -> Result<(), String> {
        let Some(query) = query.filter(|q| !q.is_empty()) else {
            return Ok(());
        };
        let Some(route) = self.route(method, path) else {
            return Ok(());
        };
        let pairs: Vec<(String, String)> = serde_urlencoded_pairs(query)?;
        let Some(unknown) = pairs
            .iter()
            .map(|(name, _)| name)
            .find(|name| !route.names.iter().any(|n| n == *name))
        else {
            return Ok(());
        };
        // Echo a bounded, quoted copy: the name is the caller's text.
        let shown: String = unknown.chars().take(64).collect();
        let accepted = if route.names.is_empty() {
            "it accepts none".to_string()
        } else {
            format!("accepted: {}", route.names.join(", "))
        };
        Err(format!(
            "unknown query parameter {shown:?} for {method} {path}; {accepted}; nothing was done"
        ))
    }
}

fn operations(item: &PathItem) -> Vec<(Method, &Operation)> {
    [
        (Method::GET, &item.get),
        (Method::PUT, &item.put),
        (Method::POST, &item.post),
        (Method::DELETE, &item.delete),
        (Method::PATCH, &item.patch),
    ]
    .into_iter()
    .filter_map(|(m, op)| op.as_ref().map(|op| (m, op)))
    .collect()
}

/// The query's name/value pairs, decoded as a form (what `Query` reads).
fn serde_urlencoded_pairs(query: &str) -> Result<Vec<(String, String)>, String> {
    let uri: axum::http::Uri = format!("/?{query}")
        .parse()
        .map_err(|_| "the query string is not a valid URI query".to_string())?;
    axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&uri)
        .map(|q| q.0)
        .map_err(|e| format!("the query string cannot be read: {e}"))
}

/// The middleware: answers 400 before any handler runs.
pub async fn refuse_unknown(
    State(accepted): State<Arc<Accepted>>,
    request: Request,
    next: Next,
) -> Response {
    let uri = request.uri();
    if let Err(e) = accepted.check(request.method(), uri.path(), uri.query()) {
        return error(StatusCode::BAD_REQUEST, e);
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use utoipa::OpenApi as _;

    fn accepted() -> Accepted {
        Accepted::from_openapi(&super::super::openapi::ApiDoc::openapi())
    }

    #[test]
    fn documented_parameters_pass_and_others_are_named() {
        let a = accepted();
        assert_eq!(
            a.check(&Method::PUT, "/v1/config", Some("dry_run=1")),
            Ok(())
        );
        assert_eq!(
            a.check(&Method::PUT, "/v1/config", Some("dry_run=1&allow_empty=1")),
            Ok(())
        );
        let e = a
            .check(&Method::PUT, "/v1/config", Some("dryrun=1"))
            .unwrap_err();
        assert_eq!(
            e,
            "unknown query parameter \"dryrun\" for PUT /v1/config; accepted: allow_empty, dry_run; nothing was done"
        );
        let e = a.check(&Method::GET, "/v1/status", Some("x")).unwrap_err();
        assert!(e.contains("\"x\"") && e.contains("it accepts none"), "{e}");
        // Path parameters are matched; HEAD is GET.
        let e = a
            .check(&Method::POST, "/v1/services/web-1/disable", Some("force=1"))
            .unwrap_err();
        assert!(e.contains("\"force\""), "{e}");
        assert!(a.check(&Method::HEAD, "/v1/status", Some("y")).is_err());
        assert_eq!(
            a.check(
                &Method::GET,
                "/v1/explain",
                Some("name=a.example&client=192.0.2.1&type=AAAA")
            ),
            Ok(())
        );
        // Percent-encoded names are decoded before the comparison.
        assert_eq!(
            a.check(&Method::PUT, "/v1/config", Some("dry%5Frun=1")),
            Ok(())
        );
        // Unknown paths and methods are the router's business.
        assert_eq!(a.check(&Method::GET, "/ui/app.js", Some("v=2")), Ok(()));
        assert_eq!(a.check(&Method::DELETE, "/v1/config", Some("x=1")), Ok(()));
        assert_eq!(a.check(&Method::GET, "/v1/status", Some("")), Ok(()));
    }

    #[test]
    fn a_long_name_is_shown_bounded() {
        let long = "a".repeat(10_000);
        let e = accepted()
            .check(&Method::GET, "/v1/status", Some(&long))
            .unwrap_err();
        assert!(e.len() < 200, "{}", e.len());
    }
}
