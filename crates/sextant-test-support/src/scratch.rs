//! Scratch directories of a test.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU16, Ordering};
use std::thread;

/// A fresh, empty directory `sextant-e2e-TAG-PID-SEQ` in the temp dir.
pub fn tempdir(tag: &str) -> PathBuf {
    static SEQ: AtomicU16 = AtomicU16::new(0);
    let d = std::env::temp_dir().join(format!(
        "sextant-e2e-{}-{}-{}",
        tag.replace("::", "_"),
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).expect("create tempdir");
    d
}

/// A directory that is removed on drop, unless the test is failing.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A fresh scratch directory (see [`tempdir`]).
    pub fn new(tag: &str) -> Scratch {
        Scratch(tempdir(tag))
    }

    /// Writes `text` to `name` inside; returns the path as a string.
    pub fn write(&self, name: &str, text: &str) -> String {
        let p = self.0.join(name);
        fs::write(&p, text).expect("write scratch file");
        p.to_str().expect("utf-8 path").to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if thread::panicking() {
            eprintln!("scratch files kept in {}", self.0.display());
        } else {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}
