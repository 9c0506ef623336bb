//! "Eventually, within a generous deadline": polls, never a wall-clock bound.

use std::thread;
use std::time::{Duration, Instant};

/// Deadline for anything that must happen "eventually".
pub const EVENTUALLY: Duration = Duration::from_secs(15);
/// Deadline for a server to become ready.
pub const READY: Duration = Duration::from_secs(30);

/// Polls `cond` until it holds or `deadline` passes; returns whether it held.
pub fn wait_until(deadline: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + deadline;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// Like [`wait_until`] but panics with `what` when the deadline passes.
#[track_caller]
pub fn eventually(deadline: Duration, what: &str, cond: impl FnMut() -> bool) {
    assert!(
        wait_until(deadline, cond),
        "not true within {deadline:?}: {what}"
    );
}

/// Like [`eventually`], for a check that says why it does not hold yet: the
/// last reason is in the panic message.
#[track_caller]
pub fn eventually_ok(
    deadline: Duration,
    what: &str,
    mut check: impl FnMut() -> Result<(), String>,
) {
    let mut last = String::from("never checked");
    let ok = wait_until(deadline, || match check() {
        Ok(()) => true,
        Err(e) => {
            last = e;
            false
        }
    });
    assert!(
        ok,
        "not true within {deadline:?}: {what}\nlast check: {last}"
    );
}
