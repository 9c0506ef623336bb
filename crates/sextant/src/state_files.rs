//! Where the server keeps its state files: the maintenance marks, a child's
//! backup-parent lists and the config sync version. In `--state-dir DIR`
//! when given (the package's `/var/lib/sextant`), else beside the
//! configuration file; named after it either way (`NAME.admin-state.json`
//! for `NAME.conf`), so that several servers can share one directory.

use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct StateFiles {
    dir: PathBuf,
    stem: String,
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
        StateFiles { dir, stem }
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
    }
}
