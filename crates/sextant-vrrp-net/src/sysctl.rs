//! Writing sysctls, and the reference-counted changes to an interface's
//! settings that several virtual routers on one parent share.

use std::collections::HashMap;
use std::fs;
use std::sync::{LazyLock, Mutex};

use crate::NetError;

fn full_path(path: &str) -> String {
    if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/proc/sys/{path}")
    }
}

/// Writes `value` to a sysctl: `path` is under /proc/sys
/// (`net/ipv4/conf/eth0/arp_ignore`) or absolute. Interface names keep
/// their dots (`net/ipv4/conf/vrrp.7/arp_ignore`): this is the file, not
/// sysctl(8)'s dotted notation. The sysctls under `net/` are those of the
/// calling thread's network namespace.
pub fn set_sysctl(path: &str, value: &str) -> Result<(), NetError> {
    let full = full_path(path);
    fs::write(&full, value).map_err(|source| NetError::Sysctl {
        path: full,
        value: value.to_owned(),
        source,
    })
}

/// Reads a sysctl, trimmed; None if it cannot be read.
pub(crate) fn get_sysctl(path: &str) -> Option<String> {
    fs::read_to_string(full_path(path))
        .ok()
        .map(|s| s.trim().to_owned())
}

/// The calling thread's network namespace (the inode of its ns file), as
/// /proc/sys/net resolves paths in it; 0 if unknown.
pub(crate) fn netns_id() -> u64 {
    use std::os::unix::fs::MetadataExt;
    fs::metadata("/proc/thread-self/ns/net")
        .map(|m| m.ino())
        .unwrap_or(0)
}

/// Original value and number of holders of each sysctl a [`Shared`] set,
/// by network namespace and path.
static SHARED: LazyLock<Mutex<HashMap<String, (String, usize)>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// A sysctl on an interface we do not own (the parent), set while at least
/// one virtual router needs it and restored to its original value when the
/// last one lets go (as keepalived does), so that two VRIDs on one parent
/// do not undo each other's settings.
#[derive(Debug)]
pub struct Shared {
    path: String,
    netns: u64,
}

impl Shared {
    /// Sets `path` to `value` (the path as for [`set_sysctl`]) while the
    /// returned guard lives; the original comes back when the last guard
    /// on that path is dropped.
    pub fn set(path: &str, value: &str) -> Result<Shared, NetError> {
        let netns = netns_id();
        let key = format!("{netns}:{path}");
        let mut map = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        match map.get_mut(&key) {
            Some((_, holders)) => *holders += 1,
            None => {
                let original = get_sysctl(path).unwrap_or_default();
                if original != value {
                    set_sysctl(path, value)?;
                }
                map.insert(key, (original, 1));
            }
        }
        Ok(Shared {
            path: path.to_owned(),
            netns,
        })
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let key = format!("{}:{}", self.netns, self.path);
        let mut map = SHARED.lock().unwrap_or_else(|e| e.into_inner());
        let Some((original, holders)) = map.get_mut(&key) else {
            return;
        };
        *holders -= 1;
        if *holders == 0 {
            let original = original.clone();
            map.remove(&key);
            if netns_id() != self.netns {
                // /proc/sys/net would name another namespace's interface.
                tracing::warn!(
                    path = %self.path,
                    "not restoring a sysctl: released from another network namespace"
                );
                return;
            }
            if !original.is_empty()
                && let Err(e) = set_sysctl(&self.path, &original)
            {
                tracing::warn!(error = %e, "cannot restore a sysctl");
            }
        }
    }
}
