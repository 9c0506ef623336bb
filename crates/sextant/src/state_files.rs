//! Where the server keeps its state files: the maintenance marks, a child's
//! backup-parent lists and the config sync version. In `--state-dir DIR`
//! when given (the package's `/var/lib/sextant`), else beside the
//! configuration file; named after it either way (`NAME.admin-state.json`
//! for `NAME.conf`), so that several servers can share one directory.
//!
//! Also the configuration file's own companions: `NAME.conf.prev`, the
//! file as it was before the last change the server wrote (an operator's
//! way back), and the temporary files every atomic write goes through,
//! which a crash can leave behind and the next start removes.

use std::ffi::OsStr;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::Context;
use sextant_mep::state::{remove_stale_temps, write_atomically, write_atomically_with_mode};

#[derive(Debug, Clone)]
pub struct StateFiles {
    dir: PathBuf,
    stem: String,
    config: PathBuf,
}

impl StateFiles {
    pub fn new(config: &Path, state_dir: Option<&Path>) -> StateFiles {
        let stem = config
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "sextant".to_string());
        let dir = match state_dir {
            Some(dir) => dir.to_path_buf(),
            None => config.parent().map(Path::to_path_buf).unwrap_or_default(),
        };
        StateFiles {
            dir,
            stem,
            config: config.to_path_buf(),
        }
    }

    fn named(&self, suffix: &str) -> PathBuf {
        self.dir.join(format!("{}.{suffix}", self.stem))
    }

    /// The operator's maintenance marks (runtime enable / disable / drain).
    pub fn admin(&self) -> PathBuf {
        self.named("admin-state.json")
    }

    /// A child's last backup-parent lists (seed 001).
    pub fn mep(&self) -> PathBuf {
        self.named("mep-state.json")
    }

    /// The configuration version this parent runs (config sync).
    pub fn config_sync(&self) -> PathBuf {
        self.named("config-sync.json")
    }

    /// The configuration file as it was before the server last replaced
    /// it (`PUT /v1/config`, config sync): `NAME.conf.prev` beside it.
    pub fn previous_config(&self) -> PathBuf {
        let mut name = self
            .config
            .file_name()
            .unwrap_or_else(|| OsStr::new("sextant.conf"))
            .to_os_string();
        name.push(".prev");
        self.config.with_file_name(name)
    }

    /// Replaces the configuration file with `text`, first keeping the file
    /// it replaces as [`StateFiles::previous_config`] (same mode: it holds
    /// the same secrets). Both through the atomic writer; if the copy
    /// cannot be kept, nothing is replaced.
    pub fn replace_config(&self, text: &[u8]) -> anyhow::Result<()> {
        match std::fs::read(&self.config) {
            Ok(old) => {
                let mode = std::fs::metadata(&self.config)
                    .map(|m| m.permissions().mode() & 0o7777)
                    .unwrap_or(0o600);
                let prev = self.previous_config();
                write_atomically_with_mode(&prev, &old, mode).with_context(|| {
                    format!(
                        "cannot keep the previous file as {}; nothing was changed",
                        prev.display()
                    )
                })?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(e).with_context(|| {
                    format!(
                        "cannot read {} to keep it; nothing was changed",
                        self.config.display()
                    )
                });
            }
        }
        write_atomically(&self.config, text)
            .with_context(|| format!("cannot write {}", self.config.display()))
    }

    /// Removes the temporary files a crash left beside the configuration
    /// and the state files (each may hold a copy of the configuration's
    /// secrets), and logs each. Called at start, before anything is written.
    pub fn remove_stale_temps(&self) {
        let name = |p: PathBuf| p.file_name().map(OsStr::to_os_string);
        let config_dir = self
            .config
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let beside_config: Vec<_> = [
            self.config.clone(),
            self.previous_config(),
            crate::unsaved::running_file(&self.config),
            crate::unsaved::dropped_file(&self.config),
        ]
        .into_iter()
        .filter_map(name)
        .collect();
        let state: Vec<_> = [self.admin(), self.mep(), self.config_sync()]
            .into_iter()
            .filter_map(name)
            .collect();
        let mut sets = vec![(config_dir.clone(), beside_config)];
        if self.dir == config_dir {
            sets[0].1.extend(state);
        } else {
            sets.push((self.dir.clone(), state));
        }
        for (dir, names) in sets {
            let dir = if dir.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                dir
            };
            let names: Vec<&OsStr> = names.iter().map(|n| n.as_os_str()).collect();
            for (path, removed) in remove_stale_temps(&dir, &names) {
                match removed {
                    Ok(()) => tracing::warn!(
                        file = %path.display(),
                        "removed a temporary file an earlier run left (it stopped while writing)"
                    ),
                    Err(e) => tracing::error!(
                        file = %path.display(),
                        "cannot remove a temporary file an earlier run left: {e}"
                    ),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beside_the_configuration_or_in_the_state_dir() {
        let beside = StateFiles::new(Path::new("/etc/sextant/site1.conf"), None);
        assert_eq!(
            beside.admin(),
            PathBuf::from("/etc/sextant/site1.admin-state.json")
        );
        assert_eq!(
            beside.mep(),
            PathBuf::from("/etc/sextant/site1.mep-state.json")
        );
        let state = StateFiles::new(
            Path::new("/etc/sextant/sextant.conf"),
            Some(Path::new("/var/lib/sextant")),
        );
        assert_eq!(
            state.config_sync(),
            PathBuf::from("/var/lib/sextant/sextant.config-sync.json")
        );
        let bare = StateFiles::new(Path::new("site.conf"), None);
        assert_eq!(bare.admin(), PathBuf::from("site.admin-state.json"));
        assert_eq!(
            state.previous_config(),
            PathBuf::from("/etc/sextant/sextant.conf.prev")
        );
        assert_eq!(bare.previous_config(), PathBuf::from("site.conf.prev"));
    }

    #[test]
    fn a_replaced_configuration_is_kept_as_prev_with_its_mode() {
        let dir = std::env::temp_dir().join(format!("sextant-state-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let conf = dir.join("site.conf");
        std::fs::write(&conf, "old\n").unwrap();
        std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(0o640)).unwrap();
        let files = StateFiles::new(&conf, None);
        files.replace_config(b"new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&conf).unwrap(), "new\n");
        let prev = files.previous_config();
        assert_eq!(std::fs::read_to_string(&prev).unwrap(), "old\n");
        for f in [&conf, &prev] {
            let mode = std::fs::metadata(f).unwrap().permissions().mode() & 0o7777;
            assert_eq!(mode, 0o640, "{}", f.display());
        }
        files.replace_config(b"newer\n").unwrap();
        assert_eq!(std::fs::read_to_string(&prev).unwrap(), "new\n");
        // Stale temporaries of every file of ours go; others stay.
        for stale in [
            ".site.conf.tmp1",
            ".site.conf.prev.tmp2",
            ".site.admin-state.json.tmp3",
        ] {
            std::fs::write(dir.join(stale), "x").unwrap();
        }
        std::fs::write(dir.join(".other.conf.tmp4"), "x").unwrap();
        files.remove_stale_temps();
        let mut left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, [".other.conf.tmp4", "site.conf", "site.conf.prev"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
