//! The running configuration's changes not saved to the file yet.
//!
//! A configuration command (`sextant cli add ...`, `POST
//! /v1/config/commands`) changes the running configuration at once, as on
//! the appliance, and the file only on `save ns config` (`POST
//! /v1/config/save`). Until then the running text is also kept beside the
//! file as `NAME.conf.running` (written atomically, mode 0600: it holds the
//! file's secrets), so that a restart without a save can say what it
//! dropped: at start, a `NAME.conf.running` that differs from the file is
//! logged (the lines it held and the file does not, and the reverse) and
//! renamed `NAME.conf.unsaved`, where the operator finds it; the file is
//! what runs. A save, a `PUT /v1/config`, a SIGHUP reload and a
//! configuration received over config sync each write or re-read the file,
//! and end the unsaved state.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use tracing::warn;

/// What runs and is not in the file.
#[derive(Debug, Default)]
pub struct Unsaved {
    /// The commands applied since the file was last written, oldest first.
    pub commands: Vec<String>,
    /// When the first was applied.
    pub since: Option<SystemTime>,
    /// The file's text as last read or written (the running text before
    /// the first unsaved command).
    pub saved: Option<Arc<str>>,
}

impl Unsaved {
    /// Notes one more command applied; `before` is the running text it
    /// changed.
    pub fn record(&mut self, command: String, before: &Arc<str>, now: SystemTime) {
        if self.commands.is_empty() {
            self.since = Some(now);
            self.saved = Some(Arc::clone(before));
        }
        self.commands.push(command);
    }

    /// The file now holds what runs: the commands taken, the state ended.
    pub fn clear(&mut self) -> Vec<String> {
        self.since = None;
        self.saved = None;
        std::mem::take(&mut self.commands)
    }
}

/// `NAME.conf.running`: the running text while it differs from the file.
pub fn running_file(config: &Path) -> PathBuf {
    beside(config, "running")
}

/// `NAME.conf.unsaved`: where a start puts the running text an earlier run
/// did not save.
pub fn dropped_file(config: &Path) -> PathBuf {
    beside(config, "unsaved")
}

fn beside(config: &Path, suffix: &str) -> PathBuf {
    let mut name = config
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| "sextant.conf".into());
    name.push(".");
    name.push(suffix);
    config.with_file_name(name)
}

/// Keeps the running text beside the file (atomically, 0600).
pub fn keep(config: &Path, text: &str) -> std::io::Result<()> {
    sextant_mep::state::write_atomically_with_mode(&running_file(config), text.as_bytes(), 0o600)
}

/// Removes `NAME.conf.running` (the file holds what runs).
pub fn forget(config: &Path) {
    let path = running_file(config);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            warn!(file = %path.display(), "cannot remove the unsaved running configuration: {e}")
        }
    }
}

/// The lines `a` holds that `b` does not (as many times as they are
/// missing), in `a`'s order.
fn missing_lines<'t>(a: &'t str, b: &str) -> Vec<&'t str> {
    let mut left: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for l in b.lines() {
        *left.entry(l).or_default() += 1;
    }
    a.lines()
        .filter(|l| match left.get_mut(l) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => !l.trim().is_empty(),
        })
        .collect()
}

/// What a start found of an earlier run's unsaved changes.
#[derive(Debug, PartialEq, Eq)]
pub struct Dropped {
    /// Lines the unsaved running text had and the file has not.
    pub added: Vec<String>,
    /// Lines the file has and the unsaved running text had not.
    pub removed: Vec<String>,
    /// Where the unsaved text is kept now.
    pub kept: PathBuf,
}

/// At start: an earlier run's unsaved running text (`NAME.conf.running`)
/// that differs from the file is reported and renamed
/// `NAME.conf.unsaved`; one equal to it is removed.
pub fn recover(config: &Path, file_text: &str) -> Option<Dropped> {
    let path = running_file(config);
    let running = std::fs::read_to_string(&path).ok()?;
    if running == file_text {
        forget(config);
        return None;
    }
    let kept = dropped_file(config);
    if let Err(e) = std::fs::rename(&path, &kept) {
        warn!(file = %path.display(), "cannot rename the unsaved running configuration to {}: {e}", kept.display());
    }
    let dropped = Dropped {
        added: missing_lines(&running, file_text)
            .into_iter()
            .map(str::to_string)
            .collect(),
        removed: missing_lines(file_text, &running)
            .into_iter()
            .map(str::to_string)
            .collect(),
        kept,
    };
    let lines: Vec<String> = dropped
        .added
        .iter()
        .map(|l| format!("+ {l}"))
        .chain(dropped.removed.iter().map(|l| format!("- {l}")))
        .collect();
    warn!(
        file = %config.display(),
        kept = %dropped.kept.display(),
        "the last run had configuration changes that were never saved (`save ns config`); they are dropped, the file runs: {} line(s) differ: {}",
        lines.len(),
        lines.join(" | ")
    );
    Some(dropped)
}

/// Logs what a reload or replace of the file dropped of the unsaved
/// commands.
pub fn log_dropped(commands: &[String], why: &str) {
    if commands.is_empty() {
        return;
    }
    warn!(
        commands = commands.len(),
        "{why}: {} unsaved configuration command(s) dropped: {}",
        commands.len(),
        commands.join(" | ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_reports_and_keeps_what_an_earlier_run_did_not_save() {
        let dir = std::env::temp_dir().join(format!("sextant-unsaved-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("site.conf");
        let file = "add gslb site a 10.0.0.1\nadd gslb service s1 10.0.0.2 HTTP 80 -siteName a\n";
        let running =
            "add gslb site a 10.0.0.1\nadd gslb service s2 10.0.0.3 HTTP 80 -siteName a\n";
        assert_eq!(recover(&config, file), None);
        keep(&config, running).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(running_file(&config))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let d = recover(&config, file).unwrap();
        assert_eq!(
            d.added,
            ["add gslb service s2 10.0.0.3 HTTP 80 -siteName a"]
        );
        assert_eq!(
            d.removed,
            ["add gslb service s1 10.0.0.2 HTTP 80 -siteName a"]
        );
        assert_eq!(d.kept, dir.join("site.conf.unsaved"));
        assert_eq!(std::fs::read_to_string(&d.kept).unwrap(), running);
        assert!(!running_file(&config).exists());
        // The same text as the file: nothing dropped, nothing kept.
        keep(&config, file).unwrap();
        assert_eq!(recover(&config, file), None);
        assert!(!running_file(&config).exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
