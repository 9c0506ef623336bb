//! Runtime maintenance, as the appliance offers it (`enable|disable gslb
//! service|vserver|site`, drain): the changes go to the state task as
//! inputs, and the answer comes once the new snapshot is published and the
//! state file written, so a query right after it sees the change.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Json, body::Bytes};
use sextant_api::{AdminEntry, AdminRequest};
use sextant_core::{AdminKind, AdminMark, AdminState, Snapshot};
use sextant_state::{AdminChange, AdminError, AdminRecord};
use tokio::sync::oneshot;

use super::{error, rfc3339};
use crate::serve::{Daemon, Input};

/// The API's shape of one mark.
pub fn admin_entry(r: &AdminRecord) -> AdminEntry {
    entry(r.kind, &r.name, &r.mark)
}

fn entry(kind: AdminKind, name: &str, mark: &AdminMark) -> AdminEntry {
    let enabled = mark.state == AdminState::Enabled;
    AdminEntry {
        kind: kind.as_str().to_string(),
        name: name.to_string(),
        state: mark.state.as_str().to_string(),
        reason: mark
            .reason
            .as_deref()
            .filter(|_| !enabled)
            .map(str::to_string),
        since: (!enabled).then(|| rfc3339(crate::admin_state::wall(mark.since_unix_ms))),
    }
}

/// `GET /v1/maintenance`: every site, vserver and service that is not
/// enabled, from the published snapshot.
#[utoipa::path(get, path = "/v1/maintenance", tag = "read",
    responses((status = 200, description = "every object not enabled", body = Vec<AdminEntry>)))]
pub(super) async fn list(State(d): State<Arc<Daemon>>) -> Json<Vec<AdminEntry>> {
    let snap = d.dns.snapshot.load();
    Json(entries(&snap))
}

pub(super) fn entries(snap: &Snapshot) -> Vec<AdminEntry> {
    let model = snap.model();
    let admin = snap.admin();
    if admin.is_empty() {
        return Vec::new();
    }
    let sites = model
        .sites
        .iter_enumerated()
        .filter_map(|(id, s)| Some(entry(AdminKind::Site, &s.name, admin.site_mark(id)?)));
    let vservers = model
        .vservers
        .iter_enumerated()
        .filter_map(|(id, v)| Some(entry(AdminKind::VServer, &v.name, admin.vserver_mark(id)?)));
    let services = model
        .services
        .iter_enumerated()
        .filter_map(|(id, s)| Some(entry(AdminKind::Service, &s.name, admin.service_mark(id)?)));
    sites.chain(vservers).chain(services).collect()
}

macro_rules! endpoint {
    ($name:ident, $kind:expr, $state:expr, $path:literal, $what:literal) => {
        #[doc = $what]
        #[utoipa::path(post, path = $path, tag = "write",
            params(("name" = String, Path, description = "the object's name")),
            request_body(content = Option<AdminRequest>, description = "optional: {\"reason\": TEXT}"),
            responses((status = 200, description = "in force (and saved)", body = AdminEntry),
                (status = 400, description = "not the JSON expected, or drain of a vserver or site", body = sextant_api::ApiError),
                (status = 401, description = "no token, or a wrong one (nothing changes)", body = sextant_api::ApiError),
                (status = 403, description = "writes are disabled: the server has no token file", body = sextant_api::ApiError),
                (status = 404, description = "no such object; the error names the nearest", body = sextant_api::ApiError)))]
        pub(super) async fn $name(
            State(d): State<Arc<Daemon>>,
            Path(name): Path<String>,
            body: Bytes,
        ) -> Response {
            change(&d, $kind, name, $state, &body).await
        }
    };
}

endpoint!(
    disable_service,
    AdminKind::Service,
    AdminState::Disabled,
    "/v1/services/{name}/disable",
    "Stops answering with a service (kept across restarts and reloads)."
);
endpoint!(
    enable_service,
    AdminKind::Service,
    AdminState::Enabled,
    "/v1/services/{name}/enable",
    "Answers with a service again."
);
endpoint!(
    drain_service,
    AdminKind::Service,
    AdminState::Draining,
    "/v1/services/{name}/drain",
    "No new clients for a service; persistent ones stay until their sessions expire."
);
endpoint!(
    disable_vserver,
    AdminKind::VServer,
    AdminState::Disabled,
    "/v1/vservers/{name}/disable",
    "Answers a vserver's domains as if none of its services were UP."
);
endpoint!(
    enable_vserver,
    AdminKind::VServer,
    AdminState::Enabled,
    "/v1/vservers/{name}/enable",
    "Answers for a vserver again."
);
endpoint!(
    disable_site,
    AdminKind::Site,
    AdminState::Disabled,
    "/v1/sites/{name}/disable",
    "Stops answering with every service of a site."
);
endpoint!(
    enable_site,
    AdminKind::Site,
    AdminState::Enabled,
    "/v1/sites/{name}/enable",
    "Answers with a site's services again."
);

async fn change(
    d: &Daemon,
    kind: AdminKind,
    name: String,
    state: AdminState,
    body: &[u8],
) -> Response {
    let request: AdminRequest = if body.iter().all(u8::is_ascii_whitespace) {
        AdminRequest::default()
    } else {
        match serde_json::from_slice(body) {
            Ok(r) => r,
            Err(e) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "body: {e}; expected nothing, or JSON like {{\"reason\": \"kernel patch\"}}"
                    ),
                );
            }
        }
    };
    // Who: the token's name is in the log line the auth layer writes for
    // every authenticated write.
    if let Some(missing) = unknown(&d.dns.snapshot.load(), kind, &name) {
        return missing;
    }
    let (reply, answer) = oneshot::channel();
    let change = AdminChange {
        kind,
        name,
        state,
        reason: request.reason,
        at_unix_ms: crate::admin_state::unix_ms(d.clock.wall_now()),
    };
    if d.inputs.send(Input::Admin { change, reply }).await.is_err() {
        return error(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping");
    }
    let Ok(outcome) = answer.await else {
        return error(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping");
    };
    match (outcome.result, outcome.save_error) {
        (Ok(record), None) => Json(admin_entry(&record)).into_response(),
        (Ok(_), Some(e)) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the change is in force but was not saved (a restart would lose it): {e}"),
        ),
        (Err(e @ AdminError::DrainNotService { .. }), _) => {
            error(StatusCode::BAD_REQUEST, e.to_string())
        }
        // Gone in a reload between the check and the change.
        (Err(e @ AdminError::Unknown { .. }), _) => error(StatusCode::NOT_FOUND, e.to_string()),
    }
}

/// A 404 naming the nearest existing name, when `name` is not configured.
fn unknown(snap: &Snapshot, kind: AdminKind, name: &str) -> Option<Response> {
    let model = snap.model();
    let names: Vec<&str> = match kind {
        AdminKind::Service => {
            if snap.service_by_name(name).is_some() {
                return None;
            }
            model.services.iter().map(|s| s.name.as_str()).collect()
        }
        AdminKind::VServer => model.vservers.iter().map(|v| v.name.as_str()).collect(),
        AdminKind::Site => model.sites.iter().map(|s| s.name.as_str()).collect(),
    };
    if names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
        return None;
    }
    let what = kind.as_str();
    // The name is the client's: quoted at most in part, compared within
    // bounds (crate::suggest).
    let shown = shown_name(name);
    let message = match crate::suggest::nearest(name, names.iter().copied()) {
        Some(near) => format!("no {what} named {shown}; did you mean {near:?}?"),
        None if names.is_empty() => format!("no {what} named {shown}; none is configured"),
        None => format!("no {what} named {shown}"),
    };
    Some(error(StatusCode::NOT_FOUND, message))
}

/// A name as an error quotes it: the first 100 characters of a longer
/// one, with how long it was.
fn shown_name(name: &str) -> String {
    match name.char_indices().nth(100) {
        Some((at, _)) => format!("{:?}... ({} bytes)", &name[..at], name.len()),
        None => format!("{name:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_name_is_quoted_in_part() {
        assert_eq!(shown_name("web-1"), "\"web-1\"");
        let long = "x".repeat(100_000);
        let shown = shown_name(&long);
        assert!(
            shown.starts_with(&format!("\"{}\"...", "x".repeat(100))),
            "{shown}"
        );
        assert!(shown.ends_with("(100000 bytes)"), "{shown}");
    }
}
