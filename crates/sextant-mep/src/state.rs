//! What a child keeps across restarts: the backup-parent lists it received.
//!
//! A child learns who may adopt it only from its parent. Without a record, a
//! child restarted while its parent is down would refuse every backup
//! parent (it does not know their addresses) and stay orphaned until the
//! parent returns. So the driver writes the lists it holds to a small JSON
//! file next to the configuration whenever one changes, and reads it back at
//! start. The file is replaced atomically (temporary file in the same
//! directory, written, fsynced, renamed, directory fsynced): a crash leaves
//! the old file or the new one, never half of one.
//!
//! Format (version 1):
//!
//! ```json
//! {"version":1,"site":"child_site1",
//!  "backup_lists":[{"parent":"SiteP1","list":[{"name":"SiteP2","ip":"10.0.0.2"}]}]}
//! ```
//!
//! `site` is the local site the lists were received by: a file written
//! under another site name (a copied configuration) is ignored.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

pub use sextant_mep_proto::state::{STATE_VERSION, StateFile};

/// Why the state file cannot be read or written. Never fatal: the driver
/// logs it (with the path) and goes on without the file.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} is not a MEP state file: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{path} has version {version}; this node reads version {STATE_VERSION}")]
    Version { path: PathBuf, version: u32 },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Reads the state file; `Ok(None)` if there is none (a first start).
pub fn load(path: &Path) -> Result<Option<StateFile>, StateError> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(StateError::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    let state: StateFile = serde_json::from_slice(&bytes).map_err(|source| StateError::Parse {
        path: path.to_owned(),
        source,
    })?;
    if state.version != STATE_VERSION {
        return Err(StateError::Version {
            path: path.to_owned(),
            version: state.version,
        });
    }
    Ok(Some(state))
}

/// Replaces the state file atomically and durably.
pub fn save(path: &Path, state: &StateFile) -> Result<(), StateError> {
    let werr = |source| StateError::Write {
        path: path.to_owned(),
        source,
    };
    let mut bytes = serde_json::to_vec_pretty(state).map_err(|e| werr(io::Error::other(e)))?;
    bytes.push(b'\n');
    write_atomically(path, &bytes).map_err(werr)
}

/// Writes `bytes` to `path` through a temporary file in the same
/// directory, fsync and rename, so that a crash leaves the old file or the
/// new one, never part of one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("the path has no file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)?;
        // The rename is durable only once the directory is.
        File::open(&dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::BackupParents;
    use crate::message::SiteAddr;

    fn dir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("sextant-mep-state-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn saves_and_loads_and_tolerates_absence() {
        let d = dir("rt");
        let p = d.join("site.mep-state.json");
        assert!(load(&p).unwrap().is_none());
        let s = StateFile {
            version: STATE_VERSION,
            site: "C1".into(),
            backup_lists: vec![BackupParents {
                parent: "P1".into(),
                list: vec![SiteAddr {
                    name: "P2".into(),
                    ip: "10.0.0.2".parse().unwrap(),
                }],
            }],
        };
        save(&p, &s).unwrap();
        assert_eq!(load(&p).unwrap(), Some(s.clone()));
        // Replaced, and no temporary file is left behind.
        let s2 = StateFile {
            backup_lists: Vec::new(),
            ..s
        };
        save(&p, &s2).unwrap();
        assert_eq!(load(&p).unwrap(), Some(s2));
        assert_eq!(fs::read_dir(&d).unwrap().count(), 1);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn corrupt_files_are_errors_naming_the_path() {
        let d = dir("bad");
        let p = d.join("x.json");
        fs::write(&p, b"{\"version\":1,\"site\":").unwrap();
        let e = load(&p).unwrap_err();
        assert!(matches!(e, StateError::Parse { .. }));
        assert!(e.to_string().contains("x.json"), "{e}");
        fs::write(&p, br#"{"version":9,"site":"a","backup_lists":[]}"#).unwrap();
        assert!(matches!(
            load(&p),
            Err(StateError::Version { version: 9, .. })
        ));
        // A directory where the file should be.
        let e = save(
            &d,
            &StateFile {
                version: 1,
                site: "a".into(),
                backup_lists: vec![],
            },
        );
        assert!(e.is_err());
        let _ = fs::remove_dir_all(&d);
    }
}
