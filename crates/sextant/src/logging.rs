//! Structured logs on stderr.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Human-readable lines.
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}

/// Logs at `info` unless `SEXTANT_LOG` (or `RUST_LOG`) says otherwise,
/// e.g. `SEXTANT_LOG=sextant=debug`.
pub fn init(format: Format) {
    let filter = std::env::var("SEXTANT_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .and_then(|s| EnvFilter::try_new(s).ok())
        .unwrap_or_else(|| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false);
    match format {
        Format::Text => builder.init(),
        Format::Json => builder.json().init(),
    }
}
