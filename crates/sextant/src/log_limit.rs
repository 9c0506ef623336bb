//! Log lines that anyone on the network can cause (a refused connection, a
//! failed handshake) at most once per kind per interval, so that a flood
//! cannot fill the disk or drown the lines that matter. The lines held back
//! are counted and the count goes with the next line of that kind; the
//! counters of /v1/status and /metrics still count every one.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// How often one kind of line may be logged.
pub const LOG_INTERVAL: Duration = Duration::from_secs(10);

#[derive(Debug)]
pub struct LogLimiter {
    interval: Duration,
    /// Per kind: when it was last logged, and how many were held back since.
    kinds: Mutex<HashMap<&'static str, (Duration, u64)>>,
}

impl Default for LogLimiter {
    fn default() -> Self {
        LogLimiter::new(LOG_INTERVAL)
    }
}

impl LogLimiter {
    pub fn new(interval: Duration) -> Self {
        LogLimiter {
            interval,
            kinds: Mutex::new(HashMap::new()),
        }
    }

    /// Whether a line of `kind` may be logged at `now` (monotonic): `Some`
    /// with the number held back since the last one, or `None` (counted).
    pub fn check(&self, kind: &'static str, now: Duration) -> Option<u64> {
        let mut kinds = self.kinds.lock().unwrap_or_else(|e| e.into_inner());
        match kinds.get_mut(kind) {
            Some((last, held)) if now < *last + self.interval => {
                *held += 1;
                None
            }
            Some((last, held)) => {
                let n = std::mem::take(held);
                *last = now;
                Some(n)
            }
            None => {
                kinds.insert(kind, (now, 0));
                Some(0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_kind_per_interval_with_the_count_held_back() {
        let l = LogLimiter::new(Duration::from_secs(10));
        let s = Duration::from_secs;
        assert_eq!(l.check("a", s(0)), Some(0));
        assert_eq!(l.check("a", s(1)), None);
        assert_eq!(l.check("a", s(9)), None);
        assert_eq!(l.check("b", s(9)), Some(0), "kinds are apart");
        assert_eq!(l.check("a", s(10)), Some(2));
        assert_eq!(l.check("a", s(11)), None);
        assert_eq!(l.check("a", s(30)), Some(1));
    }
}
