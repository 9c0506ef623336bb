//! Sextant's configuration: reads either the appliance's command syntax
//! (`.conf`, NetScaler-style `add gslb ...` lines, so existing
//! configurations import as they are) or Sextant's native TOML (`.toml`),
//! and produces one validated [`sextant_core::Model`].
//!
//! Both syntaxes are read into the same intermediate form and checked by the
//! same code, so they accept the same configurations and build equal models.
//! Every error is reported with `FILE:LINE: reason`, all of them at once.
//! A valid file's settings that are accepted but have no effect (one table,
//! `no_effect::NO_EFFECT`) come back as warnings, `FILE:LINE: text`, in
//! [`Model::warnings`](sextant_core::Model::warnings), as does a Service
//! Based datacenter-mode record's datacenter without the measured service.
//! docs/config.md describes both syntaxes.

mod appliance;
mod builtin_monitors;
pub mod diff;
mod dns_policy;
mod dns_settings;
mod dnssec;
mod draft;
mod duration;
mod error;
pub mod import;
mod lexer;
mod local_site;
mod locations;
mod native;
mod no_effect;
mod scalar;
mod scope;
pub mod secrets;
mod static_records;
pub mod sync_text;
mod validate;
mod vrrp;

use std::path::Path;

use sextant_core::Model;

pub use diff::{ConfigDiff, diff};
pub use error::{ConfigError, ConfigErrors};
pub use local_site::{LocalSiteError, settle_local_site};
pub use secrets::REENTER_PREFIX;

use draft::Syntax;
use error::Diag;

/// Reads and validates a configuration file. The extension picks the
/// syntax: `.conf` is the appliance's command syntax, `.toml` the native one.
/// The model's `warnings` list each use of a setting without effect.
pub fn load_file(path: &Path) -> Result<Model, ConfigErrors> {
    let file = path.display().to_string();
    syntax_of(path)?;
    let text = std::fs::read_to_string(path).map_err(|e| {
        let why = match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".to_string(),
            std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
            std::io::ErrorKind::InvalidData => "the file is not valid UTF-8 text".to_string(),
            _ => e.to_string(),
        };
        ConfigErrors::whole_file(&file, format!("cannot read the configuration file: {why}"))
    })?;
    parse_as(path, &text)
}

/// Reads and validates `text` as the content of the configuration file
/// `path` (its extension picks the syntax, its name is in the errors, its
/// directory is where relative location files are read from): what
/// [`load_file`] does with the text it reads, for a text that is not on
/// disk yet (`PUT /v1/config`).
pub fn parse_as(path: &Path, text: &str) -> Result<Model, ConfigErrors> {
    let parse = syntax_of(path)?;
    parse(text, &path.display().to_string())
}

type Parser = fn(&str, &str) -> Result<Model, ConfigErrors>;

/// The parser for `path`'s extension.
fn syntax_of(path: &Path) -> Result<Parser, ConfigErrors> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("conf") => Ok(parse_appliance),
        Some("toml") => Ok(parse_toml),
        _ => Err(ConfigErrors::whole_file(
            &path.display().to_string(),
            "unknown configuration file type; name the file *.conf for the appliance command syntax or *.toml for the native TOML syntax",
        )),
    }
}

/// Reads configuration in the appliance's command syntax. `file` names the
/// text in error messages, and its directory is where relative location
/// file paths (`add locationFile`) are read from.
pub fn parse_appliance(text: &str, file: &str) -> Result<Model, ConfigErrors> {
    let text = strip_bom(text);
    let mut diag = Diag::new(file);
    let draft = appliance::read(text, &mut diag);
    let model = validate::build(draft, Syntax::Appliance, &mut diag);
    diag.finish(model)
}

/// Reads configuration in Sextant's native TOML syntax. `file` names the
/// text in error messages, and its directory is where relative location
/// file paths (`[[location_file]]`) are read from.
pub fn parse_toml(text: &str, file: &str) -> Result<Model, ConfigErrors> {
    let text = strip_bom(text);
    let mut diag = Diag::new(file);
    let Some(draft) = native::read(text, &mut diag) else {
        return diag.finish(Model::default());
    };
    let model = validate::build(draft, Syntax::Toml, &mut diag);
    diag.finish(model)
}

/// Editors on some systems start UTF-8 files with a byte-order mark; it is
/// not part of the first command.
fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}
