//! The maintenance state file: the operator's enable/disable/drain marks,
//! next to the configuration (`DIR/NAME.admin-state.json` for
//! `DIR/NAME.conf`), so that a restart keeps a disabled service disabled.
//!
//! Written whole on every change through a temporary file, fsync and
//! rename (`sextant_mep::state::write_atomically`): a crash leaves the old
//! file or the new one. A file that cannot be read stops the start rather
//! than starting with nothing disabled: a service taken out for
//! maintenance must not silently come back into the answers.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use sextant_core::{AdminKind, AdminMark, AdminState};
use sextant_state::AdminRecord;

/// The file's format version.
const VERSION: u32 = 1;

#[derive(Debug, Serialize, Deserialize)]
struct File {
    version: u32,
    marks: Vec<Mark>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Mark {
    /// "service", "vserver" or "site".
    kind: String,
    name: String,
    /// "disabled" or "draining".
    state: String,
    #[serde(default)]
    reason: Option<String>,
    /// When the operator set it, for people (RFC 3339; not read back).
    #[serde(default)]
    since: Option<String>,
    /// The same in milliseconds since the UNIX epoch: what is read back.
    since_unix_ms: u64,
}

/// The marks saved in `path`; `None` when there is no file (a first start:
/// the configuration's own `disable` lines then apply).
pub fn load(path: &Path) -> anyhow::Result<Option<Vec<AdminRecord>>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(e).with_context(|| {
                format!("cannot read the maintenance state file {}", path.display())
            });
        }
    };
    parse(&text).map(Some).with_context(|| {
        format!(
            "the maintenance state file {} is not valid; fix it, or remove it to start with \
             every service, vserver and site enabled",
            path.display()
        )
    })
}

fn parse(text: &str) -> anyhow::Result<Vec<AdminRecord>> {
    let file: File = serde_json::from_str(text)?;
    if file.version != VERSION {
        anyhow::bail!(
            "version {} (this server reads version {VERSION})",
            file.version
        );
    }
    file.marks
        .into_iter()
        .map(|m| {
            let kind = AdminKind::parse(&m.kind).with_context(|| {
                format!(
                    "{}: kind {:?}: expected service, vserver or site",
                    m.name, m.kind
                )
            })?;
            let state = AdminState::parse(&m.state)
                .filter(|s| *s != AdminState::Enabled)
                .with_context(|| {
                    format!(
                        "{} {}: state {:?}: expected disabled or draining",
                        m.kind, m.name, m.state
                    )
                })?;
            Ok(AdminRecord {
                kind,
                name: m.name,
                mark: AdminMark {
                    state,
                    since_unix_ms: m.since_unix_ms,
                    reason: m.reason.map(Arc::from),
                },
            })
        })
        .collect()
}

/// Writes every mark to `path` (atomically).
pub fn save(path: &Path, records: &[AdminRecord]) -> anyhow::Result<()> {
    let file = File {
        version: VERSION,
        marks: records
            .iter()
            .map(|r| Mark {
                kind: r.kind.as_str().to_string(),
                name: r.name.clone(),
                state: r.mark.state.as_str().to_string(),
                reason: r.mark.reason.as_deref().map(str::to_string),
                since: Some(crate::api::rfc3339(wall(r.mark.since_unix_ms))),
                since_unix_ms: r.mark.since_unix_ms,
            })
            .collect(),
    };
    let mut bytes = serde_json::to_vec_pretty(&file)?;
    bytes.push(b'\n');
    sextant_mep::state::write_atomically(path, &bytes)
        .with_context(|| format!("cannot write the maintenance state file {}", path.display()))
}

/// Milliseconds since the UNIX epoch as a time.
pub fn wall(unix_ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(unix_ms)
}

/// `now` (the wall clock, from [`crate::clock::Clock::wall_now`]) in
/// milliseconds since the UNIX epoch: when an operator acts.
pub fn unix_ms(now: SystemTime) -> u64 {
    now.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_round_trip_and_bad_files_say_why() {
        let dir = std::env::temp_dir().join(format!("sextant-admin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.admin-state.json");
        let records = vec![AdminRecord {
            kind: AdminKind::Service,
            name: "web-1".into(),
            mark: AdminMark {
                state: AdminState::Draining,
                since_unix_ms: 1_800_000_000_123,
                reason: Some(Arc::from("kernel patch")),
            },
        }];
        save(&path, &records).unwrap();
        assert_eq!(load(&path).unwrap(), Some(records));
        std::fs::write(&path, "{\"version\":1,\"marks\":[{").unwrap();
        let e = format!("{:#}", load(&path).unwrap_err());
        assert!(
            e.contains("s.admin-state.json") && e.contains("not valid"),
            "{e}"
        );
        std::fs::write(
            &path,
            r#"{"version":1,"marks":[{"kind":"pool","name":"x","state":"disabled","since_unix_ms":0}]}"#,
        )
        .unwrap();
        let e = format!("{:#}", load(&path).unwrap_err());
        assert!(e.contains("kind \"pool\""), "{e}");
        assert!(load(&dir.join("missing.json")).unwrap().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
