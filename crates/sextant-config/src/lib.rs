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
pub mod edit;
mod error;
pub mod files;
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
use files::{FileAccess, FileKind};

/// Reads and validates a configuration file. The extension picks the
/// syntax: `.conf` is the appliance's command syntax, `.toml` the native one.
/// The model's `warnings` list each use of a setting without effect. The
/// file and those it names are read as the operator's own
/// ([`FileAccess::operator`]).
pub fn load_file(path: &Path) -> Result<Model, ConfigErrors> {
    load_file_with(path, &FileAccess::operator())
}

/// [`load_file`], reading the files the configuration names as `files`
/// allows.
pub fn load_file_with(path: &Path, files: &FileAccess) -> Result<Model, ConfigErrors> {
    syntax_of(path)?;
    let text = read_config_file(path)?;
    parse_as_with(path, &text, files)
}

/// Reads a configuration file's text: a regular file of at most
/// [`files::MAX_CONFIGURATION_FILE`] bytes (a typo naming a device fails
/// at once).
pub fn read_config_file(path: &Path) -> Result<String, ConfigErrors> {
    FileAccess::operator()
        .read_text(path, FileKind::Configuration)
        .map_err(|why| {
            ConfigErrors::whole_file(
                &path.display().to_string(),
                format!("cannot read the configuration file: {why}"),
            )
        })
}

/// Reads and validates `text` as the content of the configuration file
/// `path` (its extension picks the syntax, its name is in the errors, its
/// directory is where relative location files are read from): what
/// [`load_file`] does with the text it reads, for a text that is not on
/// disk yet (`PUT /v1/config`).
pub fn parse_as(path: &Path, text: &str) -> Result<Model, ConfigErrors> {
    parse_as_with(path, text, &FileAccess::operator())
}

/// [`parse_as`], reading the files the text names as `files` allows (a
/// configuration received over config sync: [`FileAccess::received`]).
pub fn parse_as_with(path: &Path, text: &str, files: &FileAccess) -> Result<Model, ConfigErrors> {
    let parse = syntax_of(path)?;
    parse(text, &path.display().to_string(), files)
}

type Parser = fn(&str, &str, &FileAccess) -> Result<Model, ConfigErrors>;

/// The parser for `path`'s extension.
fn syntax_of(path: &Path) -> Result<Parser, ConfigErrors> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("conf") => Ok(parse_appliance_with),
        Some("toml") => Ok(parse_toml_with),
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
    parse_appliance_with(text, file, &FileAccess::operator())
}

/// [`parse_appliance`], reading the files the text names as `files` allows.
pub fn parse_appliance_with(
    text: &str,
    file: &str,
    files: &FileAccess,
) -> Result<Model, ConfigErrors> {
    let text = strip_bom(text);
    let mut diag = Diag::new(file);
    let draft = appliance::read(text, &mut diag);
    let model = validate::build(draft, Syntax::Appliance, files, &mut diag);
    diag.finish(model)
}

/// Reads configuration in Sextant's native TOML syntax. `file` names the
/// text in error messages, and its directory is where relative location
/// file paths (`[[location_file]]`) are read from.
pub fn parse_toml(text: &str, file: &str) -> Result<Model, ConfigErrors> {
    parse_toml_with(text, file, &FileAccess::operator())
}

/// [`parse_toml`], reading the files the text names as `files` allows.
pub fn parse_toml_with(text: &str, file: &str, files: &FileAccess) -> Result<Model, ConfigErrors> {
    let text = strip_bom(text);
    let mut diag = Diag::new(file);
    let Some(draft) = native::read(text, &mut diag) else {
        return diag.finish(Model::default());
    };
    let model = validate::build(draft, Syntax::Toml, files, &mut diag);
    diag.finish(model)
}

/// Editors on some systems start UTF-8 files with a byte-order mark; it is
/// not part of the first command.
fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}
