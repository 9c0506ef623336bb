//! The configuration over the API: `GET /v1/config` shows the running
//! file's text, `PUT /v1/config` checks a whole new text with the parser
//! and checks a SIGHUP uses, shows what it changes, and (without
//! `?dry_run=1`) writes it to the configuration file atomically and swaps
//! it in exactly as a SIGHUP reload does (health carried over).
//!
//! Control-plane mistakes lose nothing: a text that would leave the node
//! answering nothing (no local site, or no zone, service and vserver left;
//! what an empty body is) is refused unless `?allow_empty=1` says it is
//! meant; a text whose new listeners this host cannot open is refused; and
//! the file replaced is kept as `NAME.conf.prev`.

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
    allow_empty: Option<String>,
}

/// `PUT /v1/config[?dry_run=1][&allow_empty=1]`: validates a whole
/// configuration file, answers its difference against the running one
/// and, without `dry_run`, keeps the file as `NAME.conf.prev`, writes the
/// new one atomically and swaps it in as a reload does.
#[utoipa::path(put, path = "/v1/config", tag = "write",
    params(("dry_run" = Option<String>, Query, description = "1: validate and diff only; nothing is written"),
        ("allow_empty" = Option<String>, Query, description = "1: accept a text that leaves no local site, or no zone, service or vserver (refused otherwise: an empty body is a mistake far more often than a wish)"),
        ("If-Match" = Option<String>, Header, description = "the generation the change is made against")),
    request_body(content = String, content_type = "text/plain", description = "the whole configuration file"),
    responses((status = 200, description = "validated (and applied unless dry_run); warnings name what could not be checked", body = sextant_api::ConfigApply),
        (status = 401, description = "no token, or a wrong one (nothing changes)", body = sextant_api::ApiError),
        (status = 403, description = "writes are disabled: the server has no token file", body = sextant_api::ApiError),
        (status = 400, description = "not a valid configuration: every error as FILE:LINE: reason", body = sextant_api::ConfigRejected),
        (status = 409, description = "If-Match names another generation", body = sextant_api::ApiError),
        (status = 422, description = "a valid configuration refused: it would leave the node answering nothing (without allow_empty), or this host cannot open a listener it names; every reason listed, nothing changes", body = sextant_api::ConfigRejected)))]
pub(super) async fn put_config(
    State(d): State<Arc<Daemon>>,
    Query(q): Query<PutQuery>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let (dry_run, allow_empty) = match (
        flag("dry_run", q.dry_run.as_deref()),
        flag("allow_empty", q.allow_empty.as_deref()),
    ) {
        (Ok(dry), Ok(allow)) => (dry, allow),
        (Err(e), _) | (_, Err(e)) => return error(StatusCode::BAD_REQUEST, e),
    };
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
    let checked = match check(&d, running.model(), text, allow_empty).await {
        Ok(c) => c,
        Err(refused) => return refused.into_response(),
    };
    if dry_run {
        return answer(generation, false, checked.diff, checked.warnings);
    }

    // The file it replaces is kept as NAME.conf.prev, for a way back.
    if let Err(e) = save_text(&d, &checked.text).await {
        return e.into_response();
    }
    let (new_generation, diff, warnings) = match swap(&d, checked).await {
        Ok(done) => done,
        Err(e) => return e.into_response(),
    };
    // The whole file replaces what runs, unsaved commands included.
    let dropped = d.unsaved.lock().map(|mut u| u.clear()).unwrap_or_default();
    crate::unsaved::log_dropped(&dropped, "PUT /v1/config replaced the configuration");
    crate::unsaved::forget(&d.config_file);
    info!(
        token = caller.as_ref().map(|c| c.0.0.as_str()).unwrap_or("-"),
        generation = new_generation,
        added = diff.added.len(),
        removed = diff.removed.len(),
        changed = diff.changed.len(),
        "configuration applied over the API"
    );
    answer(new_generation, true, diff, warnings)
}

/// A configuration text that passed every check, ready to swap in.
pub(crate) struct Checked {
    model: sextant_core::Model,
    text: String,
    diff: ConfigDiff,
    warnings: Vec<String>,
    parse: Duration,
    started: Instant,
}

/// Why a text was not applied: the status and the reasons.
pub(crate) struct Refused {
    status: StatusCode,
    error: String,
    errors: Vec<String>,
}

impl Refused {
    fn one(status: StatusCode, why: impl Into<String>) -> Refused {
        let why = why.into();
        Refused {
            status,
            error: why.clone(),
            errors: vec![why],
        }
    }

    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            return error(self.status, self.error);
        }
        (
            self.status,
            Json(ConfigRejected {
                error: self.error,
                errors: self.errors,
            }),
        )
            .into_response()
    }
}

/// Validates `text` with the reader and the checks of a reload, and the
/// refusals of an API write: a text that leaves nothing (unless
/// `allow_empty`), listeners this host cannot open.
async fn check(
    d: &Arc<Daemon>,
    running: &sextant_core::Model,
    text: String,
    allow_empty: bool,
) -> Result<Checked, Refused> {
    let overrides = d.overrides.clone();
    let started = Instant::now();
    let checked = tokio::task::spawn_blocking(move || {
        crate::serve::load_text(&overrides, &text).map(|model| (model, text))
    })
    .await;
    let (model, text) = match checked {
        Ok(Ok(checked)) => checked,
        Ok(Err(errors)) => {
            return Err(Refused {
                status: StatusCode::BAD_REQUEST,
                error: format!(
                    "{} error(s) in the configuration; nothing was changed",
                    errors.len()
                ),
                errors,
            });
        }
        Err(e) => {
            return Err(Refused::one(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("validation failed: {e}"),
            ));
        }
    };
    let parse = started.elapsed();
    let diff = sextant_config::diff(running, &model);
    let diff = ConfigDiff {
        added: diff.added,
        removed: diff.removed,
        changed: diff.changed,
    };
    let mut refused = if allow_empty {
        Vec::new()
    } else {
        leaves_nothing(running, &model)
    };
    let default_api = crate::serve::DEFAULT_API_LISTEN
        .parse()
        .unwrap_or_else(|_| std::net::SocketAddr::from(([127, 0, 0, 1], 8053)));
    let held = crate::listen_check::listeners(running, default_api);
    let wanted = crate::listen_check::listeners(&model, default_api);
    let listeners = tokio::task::spawn_blocking(move || {
        crate::listen_check::check(&held, &wanted, crate::listen_check::try_bind)
    })
    .await
    .unwrap_or_else(|e| crate::listen_check::Checked {
        refused: vec![format!("the listeners could not be checked: {e}")],
        warnings: Vec::new(),
    });
    refused.extend(listeners.refused);
    if !refused.is_empty() {
        return Err(Refused {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            error: format!(
                "the configuration is valid but refused ({} reason(s)); nothing was changed",
                refused.len()
            ),
            errors: refused,
        });
    }
    Ok(Checked {
        model,
        text,
        diff,
        warnings: listeners.warnings,
        parse,
        started,
    })
}

/// Writes `text` to the configuration file with the one atomic writer,
/// keeping the file it replaces as `NAME.conf.prev`.
async fn save_text(d: &Arc<Daemon>, text: &str) -> Result<(), Refused> {
    let files = d.state_files.clone();
    let bytes = text.to_string();
    let written = tokio::task::spawn_blocking(move || files.replace_config(bytes.as_bytes())).await;
    match written {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(Refused::one(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{e:#}; nothing was changed"),
        )),
        Err(e) => Err(Refused::one(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("write failed: {e}"),
        )),
    }
}

/// Swaps a checked configuration in as a SIGHUP reload does (health
/// carried over, config sync told): the generation it got, with what
/// changed and the warnings, for the answer.
async fn swap(
    d: &Arc<Daemon>,
    checked: Checked,
) -> Result<(u64, ConfigDiff, Vec<String>), Refused> {
    let Checked {
        model,
        text,
        diff,
        warnings,
        parse,
        started,
    } = checked;
    let (done_tx, done_rx) = oneshot::channel();
    let input = prepared_input(
        d,
        model,
        Arc::from(text),
        parse,
        started,
        Some(done_tx),
        sextant_config_sync::Cause::Reload,
    );
    if d.inputs.send(input).await.is_err() {
        return Err(Refused::one(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is stopping",
        ));
    }
    match tokio::time::timeout(SWAP_TIMEOUT, done_rx).await {
        Ok(Ok(Ok(g))) => Ok((g, diff, warnings)),
        Ok(Ok(Err(e))) => Err(Refused::one(StatusCode::INTERNAL_SERVER_ERROR, e)),
        _ => Err(Refused::one(
            StatusCode::SERVICE_UNAVAILABLE,
            "the change is made but the swap did not finish in time; see /v1/status",
        )),
    }
}

fn running_text(d: &Daemon) -> Arc<str> {
    d.running_config
        .read()
        .map(|t| Arc::clone(&t))
        .unwrap_or_else(|_| Arc::from(""))
}

/// `POST /v1/config/commands`: one appliance configuration command (`add`,
/// `set`, `unset`, `rm`, `bind`, `unbind`) applied to the running
/// configuration's text, checked as a whole new file is and swapped in as
/// `PUT /v1/config` does, without writing the file: `POST
/// /v1/config/save` does (`save ns config`).
#[utoipa::path(post, path = "/v1/config/commands", tag = "write",
    request_body(content = sextant_api::ConfigCommand, description = "the command as typed at the appliance"),
    responses((status = 200, description = "applied: the running configuration holds it (not saved yet)", body = sextant_api::ConfigCommandDone),
        (status = 401, description = "no token, or a wrong one (nothing changes)", body = sextant_api::ApiError),
        (status = 403, description = "writes are disabled: the server has no token file", body = sextant_api::ApiError),
        (status = 400, description = "not applied: `error` is the reason as the appliance says it after ERROR:, `errors` every reason; nothing changes", body = sextant_api::ConfigRejected),
        (status = 422, description = "a valid result refused: this host cannot open a listener it names; nothing changes", body = sextant_api::ConfigRejected)))]
pub(super) async fn post_command(
    State(d): State<Arc<Daemon>>,
    caller: Option<Extension<Caller>>,
    body: axum::body::Bytes,
) -> Response {
    let req: sextant_api::ConfigCommand = match super::push::json_body(
        &body,
        "{\"command\": \"add gslb service web-3 10.0.0.3 HTTP 80 -siteName fra\"}",
    ) {
        Ok(r) => r,
        Err(e) => return Refused::one(StatusCode::BAD_REQUEST, e).into_response(),
    };
    let _writer = d.config_writer.lock().await;
    let running = d.dns.snapshot.load_full();
    let before = running_text(&d);
    let edited = match sextant_config::edit::apply(&before, &req.command) {
        Ok(e) => e,
        Err(e) => return Refused::one(StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    let command = edited.command.clone();
    // Deliberate, one at a time: a command may remove the last service.
    let checked = match check(&d, running.model(), edited.text, true).await {
        Ok(c) => c,
        Err(mut refused) => {
            // The reader's reasons about the command's own line are the
            // command's; others keep their FILE:LINE.
            let own = edited
                .line
                .map(|l| format!("{}:{l}:", d.config_file.display()));
            let reasons: Vec<String> = refused
                .errors
                .iter()
                .map(|e| match own.as_deref().and_then(|p| e.strip_prefix(p)) {
                    Some(rest) => rest
                        .split_once(": ")
                        .filter(|(col, _)| col.chars().all(|c| c.is_ascii_digit()))
                        .map_or(rest.trim_start(), |(_, r)| r)
                        .to_string(),
                    None => e.clone(),
                })
                .collect();
            if refused.status == StatusCode::BAD_REQUEST {
                refused.error = match edited.line {
                    Some(_) => reasons.join("; "),
                    // `rm`, `unbind`: what the removal would leave behind.
                    None => format!("`{command}` would leave: {}", reasons.join("; ")),
                };
            }
            refused.errors = reasons;
            return refused.into_response();
        }
    };
    let running_now = checked.text.clone();
    let (generation, diff, warnings) = match swap(&d, checked).await {
        Ok(done) => done,
        Err(e) => return e.into_response(),
    };
    let unsaved = match d.unsaved.lock() {
        Ok(mut u) => {
            u.record(command.clone(), &before, d.clock.wall_now());
            unsaved_view(&u)
        }
        Err(_) => sextant_api::UnsavedConfig::default(),
    };
    if let Err(e) = crate::unsaved::keep(&d.config_file, &running_now) {
        tracing::warn!(
            "cannot keep the unsaved running configuration beside {}: {e}",
            d.config_file.display()
        );
    }
    info!(
        token = caller.as_ref().map(|c| c.0.0.as_str()).unwrap_or("-"),
        generation,
        command = %command,
        "configuration command applied (not saved)"
    );
    Json(sextant_api::ConfigCommandDone {
        generation,
        command,
        diff,
        unsaved,
        warnings,
    })
    .into_response()
}

/// The unsaved state as the API shows it.
pub(crate) fn unsaved_view(u: &crate::unsaved::Unsaved) -> sextant_api::UnsavedConfig {
    sextant_api::UnsavedConfig {
        commands: u.commands.clone(),
        since: u.since.map(super::rfc3339),
    }
}

/// `POST /v1/config/save`: writes the running configuration to the file
/// (`save ns config`), with the same atomic writer as `PUT /v1/config`,
/// keeping the file it replaces as `NAME.conf.prev`.
#[utoipa::path(post, path = "/v1/config/save", tag = "write",
    responses((status = 200, description = "the file holds the running configuration", body = sextant_api::ConfigSaved),
        (status = 401, description = "no token, or a wrong one (nothing changes)", body = sextant_api::ApiError),
        (status = 403, description = "writes are disabled: the server has no token file", body = sextant_api::ApiError),
        (status = 500, description = "the file could not be written; it is as it was", body = sextant_api::ApiError)))]
pub(super) async fn save_config(
    State(d): State<Arc<Daemon>>,
    caller: Option<Extension<Caller>>,
) -> Response {
    let _writer = d.config_writer.lock().await;
    let text = running_text(&d);
    let generation = d.dns.snapshot.load().generation();
    if let Err(e) = save_text(&d, &text).await {
        return e.into_response();
    }
    let saved = d.unsaved.lock().map(|mut u| u.clear()).unwrap_or_default();
    crate::unsaved::forget(&d.config_file);
    info!(
        token = caller.as_ref().map(|c| c.0.0.as_str()).unwrap_or("-"),
        generation,
        commands = saved.len(),
        "configuration saved over the API"
    );
    Json(sextant_api::ConfigSaved {
        file: d.config_file.display().to_string(),
        generation,
        saved_commands: saved,
    })
    .into_response()
}

/// A yes/no query parameter: `1`, `true`, `yes` or nothing after `=`
/// for yes; `0`, `false`, `no` for no; anything else is refused rather
/// than guessed.
fn flag(name: &str, value: Option<&str>) -> Result<bool, String> {
    match value {
        None => Ok(false),
        Some("" | "1" | "true" | "yes") => Ok(true),
        Some("0" | "false" | "no") => Ok(false),
        Some(other) => Err(format!(
            "{name}={}: expected 1 (or true, yes) or 0 (or false, no)",
            other.chars().take(32).collect::<String>()
        )),
    }
}

/// Why `new` would leave this node answering nothing that `running`
/// answers: no local site any more, or no zone, GSLB service or vserver
/// left. What an empty body (`curl --data-binary @missing-file`) or a
/// truncated file gives; `?allow_empty=1` says it is meant.
fn leaves_nothing(running: &sextant_core::Model, new: &sextant_core::Model) -> Vec<String> {
    let mut why = Vec::new();
    let hint = "send allow_empty=1 if this is meant";
    if running.local_site.is_some() && new.local_site.is_none() {
        why.push(format!(
            "the text names no local site (add gslb site NAME IP -siteType LOCAL): this node \
             would answer nothing; {hint}"
        ));
    }
    let serves = |m: &sextant_core::Model| {
        !(m.zones.is_empty() && m.services.is_empty() && m.vservers.is_empty())
    };
    if serves(running) && !serves(new) {
        why.push(format!(
            "the text removes every zone, GSLB service and vserver ({} zone(s), {} service(s), \
             {} vserver(s) now): this node would answer nothing; {hint}",
            running.zones.len(),
            running.services.len(),
            running.vservers.len()
        ));
    }
    why
}

fn answer(generation: u64, applied: bool, diff: ConfigDiff, warnings: Vec<String>) -> Response {
    let mut r = Json(ConfigApply {
        generation,
        applied,
        diff,
        warnings,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

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
    fn flags_are_read_strictly() {
        assert_eq!(flag("dry_run", None), Ok(false));
        for yes in ["", "1", "true", "yes"] {
            assert_eq!(flag("dry_run", Some(yes)), Ok(true));
        }
        for no in ["0", "false", "no"] {
            assert_eq!(flag("dry_run", Some(no)), Ok(false));
        }
        let e = flag("dry_run", Some("ture")).unwrap_err();
        assert!(e.starts_with("dry_run=ture: expected 1"), "{e}");
    }

    #[test]
    fn an_empty_text_leaves_nothing_and_says_so() {
        let running = sextant_config::parse_as(
            Path::new("site.conf"),
            "add gslb site site1 10.0.0.1 -siteType LOCAL\n\
             add gslb service web1 10.0.0.10 HTTP 80 -siteName site1\n\
             add gslb vserver vs1 HTTP\n\
             bind gslb vserver vs1 -serviceName web1\n\
             bind gslb vserver vs1 -domainName www.example.com\n",
        )
        .unwrap();
        let empty = sextant_config::parse_as(Path::new("site.conf"), "").unwrap();
        let why = leaves_nothing(&running, &empty);
        assert_eq!(why.len(), 2, "{why:?}");
        assert!(why[0].contains("no local site"), "{why:?}");
        assert!(why[1].contains("1 service(s)"), "{why:?}");
        assert!(leaves_nothing(&running, &running).is_empty());
        // Nothing to lose: an empty node may stay empty.
        assert!(leaves_nothing(&empty, &empty).is_empty());
    }
}
