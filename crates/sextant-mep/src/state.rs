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

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
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
/// new one, never part of one. The file keeps the mode of the one it
/// replaces (a configuration may hold secrets), else gets 0600.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mode = fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o600);
    write_atomically_with_mode(path, bytes, mode)
}

/// [`write_atomically`] with the new file's mode given. The temporary file
/// ([`temp_name`]) is created new (`O_EXCL`, so never through a link left
/// in its place) with mode 0600, so that until the rename nobody else can
/// read what it holds; it takes `mode` just before the rename, and is
/// removed on every error.
pub fn write_atomically_with_mode(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("the path has no file name"))?;
    let tmp = dir.join(temp_name(name, std::process::id()));
    // One of ours left by a crashed process that had this PID.
    match fs::remove_file(&tmp) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    let written = (|| {
        f.write_all(bytes)?;
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        // The rename is durable only once the directory is.
        File::open(&dir)?.sync_all()
    })();
    drop(f);
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// The temporary file [`write_atomically`] writes `name` through:
/// `.NAME.tmpPID`, hidden, beside it.
pub fn temp_name(name: &OsStr, pid: u32) -> OsString {
    let mut tmp = OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".tmp{pid}"));
    tmp
}

/// Whether `candidate` is a temporary file [`write_atomically`] made for
/// `name` (by any process).
pub fn is_temp_of(candidate: &OsStr, name: &OsStr) -> bool {
    let (Some(c), Some(n)) = (candidate.to_str(), name.to_str()) else {
        return false;
    };
    c.strip_prefix('.')
        .and_then(|c| c.strip_prefix(n))
        .and_then(|c| c.strip_prefix(".tmp"))
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// Removes the temporary files [`write_atomically`] left in `dir` for the
/// files `names` (a crash between create and rename leaves one, which may
/// hold a copy of a configuration's secrets). Call it at start, before
/// this process writes any of them. Answers each file found and whether
/// it could be removed.
pub fn remove_stale_temps(dir: &Path, names: &[&OsStr]) -> Vec<(PathBuf, io::Result<()>)> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let file = entry.file_name();
        if !names.iter().any(|n| is_temp_of(&file, n)) {
            continue;
        }
        // Only files: never follow or remove anything else of that name.
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if !is_file {
            continue;
        }
        let path = entry.path();
        let result = fs::remove_file(&path);
        removed.push((path, result));
    }
    removed.sort_by(|a, b| a.0.cmp(&b.0));
    removed
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
    fn temporary_files_are_private_named_and_found() {
        let d = dir("tmp");
        let f = d.join("site.conf");
        fs::write(&f, "old\n").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o640)).unwrap();
        // A stale one of this very PID (a crashed process had it) is replaced.
        let own = d.join(temp_name(OsStr::new("site.conf"), std::process::id()));
        fs::write(&own, "stale").unwrap();
        write_atomically(&f, b"new\n").unwrap();
        assert_eq!(fs::read_to_string(&f).unwrap(), "new\n");
        assert_eq!(
            fs::metadata(&f).unwrap().permissions().mode() & 0o7777,
            0o640
        );
        assert_eq!(
            fs::read_dir(&d).unwrap().count(),
            1,
            "a temporary file is left"
        );
        let fresh = d.join("new.json");
        write_atomically(&fresh, b"{}").unwrap();
        assert_eq!(
            fs::metadata(&fresh).unwrap().permissions().mode() & 0o7777,
            0o600
        );

        let name = OsStr::new("site.conf");
        assert!(is_temp_of(OsStr::new(".site.conf.tmp4242"), name));
        for not in [
            ".site.conf.tmp",
            ".site.conf.tmp12x",
            "site.conf.tmp1",
            ".site.conf",
            ".other.conf.tmp1",
        ] {
            assert!(!is_temp_of(OsStr::new(not), name), "{not}");
        }
        fs::write(d.join(".site.conf.tmp4242"), "secret").unwrap();
        fs::write(d.join(".site.conf.tmpx"), "not ours").unwrap();
        fs::create_dir(d.join(".site.conf.tmp7")).unwrap();
        let removed = remove_stale_temps(&d, &[name]);
        assert_eq!(removed.len(), 1, "{removed:?}");
        assert_eq!(removed[0].0, d.join(".site.conf.tmp4242"));
        assert!(removed[0].1.is_ok());
        assert!(!d.join(".site.conf.tmp4242").exists());
        assert!(d.join(".site.conf.tmpx").exists() && d.join(".site.conf.tmp7").is_dir());
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
