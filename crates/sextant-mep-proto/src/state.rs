//! The format of what a child keeps across restarts: the backup-parent
//! lists it received (see `sextant_mep::state` for the file itself, which
//! the driver reads and writes).

use serde::{Deserialize, Serialize};

use crate::message::BackupParents;

/// The version this code writes and reads.
pub const STATE_VERSION: u32 = 1;

/// The content of the state file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateFile {
    pub version: u32,
    /// The local site that received the lists.
    pub site: String,
    /// Every backup list held, by the parent it belongs to, sorted by
    /// parent name (so an unchanged state writes the same bytes).
    pub backup_lists: Vec<BackupParents>,
}
