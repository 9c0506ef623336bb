//! Log lines that anyone on the network can cause (a refused connection or
//! request, a failed handshake) or that come in floods (every probe failing
//! for want of descriptors), at most once per kind per period, so that a
//! flood cannot fill the disk or drown the lines that matter. The lines held
//! back are counted and the count goes with the next line of that kind; the
//! counters of /v1/status and /metrics still count every one. Pure: `now`
//! comes in (the daemon passes its one monotonic clock's).

use std::sync::Mutex;
use std::time::Duration;

/// How often one kind of line is logged at most.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// One kind of line: at most one per `every`, each saying how many of that
/// kind were not logged since the last one.
#[derive(Debug)]
pub struct LogThrottle {
    every: Duration,
    /// When the last line was logged, and how many were held back since.
    state: Mutex<(Option<Duration>, u64)>,
}

impl Default for LogThrottle {
    fn default() -> Self {
        LogThrottle::new(LOG_EVERY)
    }
}

impl LogThrottle {
    pub const fn new(every: Duration) -> LogThrottle {
        LogThrottle {
            every,
            state: Mutex::new((None, 0)),
        }
    }

    /// One occurrence at `now`: `Some(n)` when it is to be logged (`n` of the
    /// same kind were not logged since the last line), `None` when it is
    /// only counted.
    pub fn admit(&self, now: Duration) -> Option<u64> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (last, held_back) = &mut *s;
        if last.is_some_and(|t| now.saturating_sub(t) < self.every) {
            *held_back = held_back.saturating_add(1);
            return None;
        }
        *last = Some(now);
        Some(std::mem::take(held_back))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_period_with_the_count_held_back() {
        let t = LogThrottle::new(Duration::from_secs(10));
        let s = Duration::from_secs;
        assert_eq!(t.admit(s(0)), Some(0));
        for i in 1..=999 {
            assert_eq!(t.admit(Duration::from_millis(i)), None);
        }
        assert_eq!(t.admit(s(10)), Some(999));
        assert_eq!(t.admit(s(11)), None);
        assert_eq!(t.admit(s(25)), Some(1));
        // A clock that does not move forward logs nothing more.
        assert_eq!(t.admit(s(0)), None);
    }

    #[test]
    fn kinds_are_apart() {
        let (a, b) = (LogThrottle::default(), LogThrottle::default());
        assert_eq!(a.admit(Duration::ZERO), Some(0));
        assert_eq!(a.admit(Duration::from_secs(1)), None);
        assert_eq!(b.admit(Duration::from_secs(1)), Some(0));
    }
}
