//! The configuration over the API: `GET /v1/config` shows the running
//! file's text, `PUT /v1/config` checks a whole new text with the parser
//! and checks a SIGHUP uses, shows what it changes, and (without
//! `?dry_run=1`) writes it to the configuration file atomically and swaps
//! it in exactly as a SIGHUP reload does (health carried over).

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use sextant_api::{ConfigApply, ConfigDiff, ConfigRejected};
use tokio::sync::oneshot;
use tracing::info;

use super::auth::Caller;
use super::error;
use crate::serve::{Daemon, prepared_input};

/// How long a PUT waits for the state task to swap the configuration in.
const SWAP_TIMEOUT: Duration = Duration::from_secs(60);

/// `GET /v1/config`: the running configuration's text, its generation as
/// the ETag.
#[utoipa::path(get, path = "/v1/config", tag = "read",
    responses((status = 200, description = "the configuration file in force, its generation as the ETag",
        content_type = "text/plain", body = String),
        (status = 401, description = "no token, or a wrong one: the text may hold secrets", body = sextant_api::ApiError),
        (status = 403, description = "no token file: the configuration is not served", body = sextant_api::ApiError)))]
pub(super) async fn get_config(State(d): State<Arc<Daemon>>) -> Response {
    let text = d
        .running_config
        .read()
        .map(|t| Arc::clone(&t))
        .unwrap_or_else(|_| Arc::from(""));
    let generation = d.dns.snapshot.load().generation();
    (
        [
            (
                header::CONTENT_TYPE,
                "text/plain; charset=utf-8".to_string(),
            ),
            (header::ETAG, etag(generation)),
        ],
        text.to_string(),
    )
        .into_response()
}

#[derive(Debug, Deserialize)]
pub(super) struct PutQuery {
    dry_run: Option<String>,
}

/// `PUT /v1/config[?dry_run=1]`: validates a whole configuration file,
/// answers its difference against the running one and, without
/// `dry_run`, writes it atomically and swaps it in as a reload does.
#[utoipa::path(put, path = "/v1/config", tag = "write",
    params(("dry_run" = Option<String>, Query, description = "1: validate and diff only"),
        ("If-Match" = Option<String>, Header, description = "the generation the change is made against")),
    request_body(content = String, content_type = "text/plain", description = "the whole configuration file"),
    responses((status = 200, description = "validated (and applied unless dry_run)", body = sextant_api::ConfigApply),
        (status = 401, description = "no token, or a wrong one (nothing changes)", body = sextant_api::ApiError),
        (status = 403, description = "writes are disabled: the server has no token file", body = sextant_api::ApiError),
        (status = 400, description = "not a valid configuration: every error as FILE:LINE: reason", body = sextant_api::ConfigRejected),
        (status = 409, description = "If-Match names another generation", body = sextant_api::ApiError)))]
pub(super) async fn put_config(
    State(d): State<Arc<Daemon>>,
    Query(q): Query<PutQuery>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let dry_run = q
        .dry_run
        .as_deref()
        .is_some_and(|v| !matches!(v, "0" | "false" | "no"));
    let Ok(text) = String::from_utf8(body.to_vec()) else {
        return error(
            StatusCode::BAD_REQUEST,
            "the body is not UTF-8 text; send the whole configuration file",
        );
    };
    let if_match = match headers.get(header::IF_MATCH).map(if_match) {
        None => None,
        Some(Ok(g)) => g,
        Some(Err(())) => {
            return error(
                StatusCode::BAD_REQUEST,
                "If-Match: expected the generation as an ETag, e.g. If-Match: \"3\" (GET /v1/config gives it)",
            );
        }
    };
    // One writer at a time: the generation checked is the one replaced.
    let _writer = d.config_writer.lock().await;
    let running = d.dns.snapshot.load_full();
    let generation = running.generation();
    if let Some(want) = if_match
        && want != generation
    {
        return error(
            StatusCode::CONFLICT,
            format!(
                "If-Match: generation {want} is not the running one ({generation}); nothing was changed (GET /v1/config for the running text)"
            ),
        );
    }
    let overrides = d.overrides.clone();
    let started = Instant::now();
    let checked = tokio::task::spawn_blocking(move || {
        crate::serve::load_text(&overrides, &text).map(|model| (model, text))
    })
    .await;
    let (model, text) = match checked {
        Ok(Ok(checked)) => checked,
        Ok(Err(errors)) => {
            return (
                StatusCode::BAD_REQUEST,
                Json(ConfigRejected {
                    error: format!(
                        "{} error(s) in the configuration; nothing was changed",
                        errors.len()
                    ),
                    errors,
                }),
            )
                .into_response();
        }
        Err(e) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("validation failed: {e}"),
            );
        }
    };
    let parse = started.elapsed();
    let diff = sextant_config::diff(running.model(), &model);
    let diff = ConfigDiff {
        added: diff.added,
        removed: diff.removed,
        changed: diff.changed,
    };
    if dry_run {
        return answer(generation, false, diff);
    }

    let file = d.config_file.clone();
    let bytes = text.clone();
    let written =
        tokio::task::spawn_blocking(move || write_atomically(&file, bytes.as_bytes())).await;
    match written {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!(
                    "cannot write {}: {e}; nothing was changed",
                    d.config_file.display()
                ),
            );
        }
        Err(e) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("write failed: {e}"),
            );
        }
    }
    let (done_tx, done_rx) = oneshot::channel();
    let input = prepared_input(
        &d,
        model,
        Arc::from(text),
        parse,
        started,
        Some(done_tx),
        sextant_config_sync::Cause::Reload,
    );
    if d.inputs.send(input).await.is_err() {
        return error(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping");
    }
    let new_generation = match tokio::time::timeout(SWAP_TIMEOUT, done_rx).await {
        Ok(Ok(Ok(g))) => g,
        Ok(Ok(Err(e))) => return error(StatusCode::INTERNAL_SERVER_ERROR, e),
        _ => {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                "the file is written but the swap did not finish in time; see /v1/status",
            );
        }
    };
    info!(
        token = caller.as_ref().map(|c| c.0.0.as_str()).unwrap_or("-"),
        generation = new_generation,
        added = diff.added.len(),
        removed = diff.removed.len(),
        changed = diff.changed.len(),
        "configuration applied over the API"
    );
    answer(new_generation, true, diff)
}

fn answer(generation: u64, applied: bool, diff: ConfigDiff) -> Response {
    let mut r = Json(ConfigApply {
        generation,
        applied,
        diff,
    })
    .into_response();
    if let Ok(v) = HeaderValue::from_str(&etag(generation)) {
        r.headers_mut().insert(header::ETAG, v);
    }
    r
}

fn etag(generation: u64) -> String {
    format!("\"{generation}\"")
}

/// The generation an `If-Match` names: `"3"`, `W/"3"` or `3`; `*` (any)
/// is `None`.
fn if_match(v: &HeaderValue) -> Result<Option<u64>, ()> {
    let v = v.to_str().map_err(|_| ())?.trim();
    if v == "*" {
        return Ok(None);
    }
    let v = v.strip_prefix("W/").unwrap_or(v);
    let v = v
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(v);
    v.parse().map(Some).map_err(|_| ())
}

/// Replaces `path` with `bytes` so that a crash leaves either the old file
/// or the new one: a temporary file in the same directory (with the old
/// file's permissions, since a configuration may hold secrets), fsync,
/// rename, fsync of the directory.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("the path has no file name"))?;
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o600);
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)?;
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(&dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_match_forms() {
        let h = |s: &'static str| HeaderValue::from_static(s);
        assert_eq!(if_match(&h("\"3\"")), Ok(Some(3)));
        assert_eq!(if_match(&h("W/\"12\"")), Ok(Some(12)));
        assert_eq!(if_match(&h("7")), Ok(Some(7)));
        assert_eq!(if_match(&h("*")), Ok(None));
        assert_eq!(if_match(&h("\"abc\"")), Err(()));
    }

    #[test]
    fn the_file_is_replaced_with_its_mode_kept() {
        let dir = std::env::temp_dir().join(format!("sextant-config-put-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("site.conf");
        std::fs::write(&f, "old\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomically(&f, b"new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "new\n");
        let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o640);
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "a temporary file is left"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
