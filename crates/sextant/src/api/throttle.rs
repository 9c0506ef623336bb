//! Rate-limited logging of refusals: a flood of refused requests or
//! connections must not become a flood of log lines (the disk, journald,
//! the operator's attention), yet every refusal is counted.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often one kind of refusal is logged at most.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// One kind of refusal: at most one log line per `every`, the line saying
/// how many of that kind were not logged since the last one.
#[derive(Debug)]
pub struct LogThrottle {
    every: Duration,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    last: Option<Instant>,
    held_back: u64,
}

impl LogThrottle {
    pub const fn new(every: Duration) -> LogThrottle {
        LogThrottle {
            every,
            state: Mutex::new(State {
                last: None,
                held_back: 0,
            }),
        }
    }

    /// One refusal at `now`: `Some(n)` when it is to be logged (`n` of the
    /// same kind were not logged since the last line), `None` when it is
    /// only counted.
    pub fn admit(&self, now: Instant) -> Option<u64> {
        let Ok(mut s) = self.state.lock() else {
            // A panic elsewhere while logging: log rather than lose it.
            return Some(0);
        };
        let due = s
            .last
            .is_none_or(|last| now.saturating_duration_since(last) >= self.every);
        if due {
            s.last = Some(now);
            Some(std::mem::take(&mut s.held_back))
        } else {
            s.held_back = s.held_back.saturating_add(1);
            None
        }
    }
}

impl Default for LogThrottle {
    fn default() -> Self {
        LogThrottle::new(LOG_EVERY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_period_with_the_count_held_back() {
        let t = LogThrottle::new(Duration::from_secs(10));
        let t0 = Instant::now();
        assert_eq!(t.admit(t0), Some(0));
        for i in 1..=999 {
            assert_eq!(t.admit(t0 + Duration::from_millis(i)), None);
        }
        assert_eq!(t.admit(t0 + Duration::from_secs(10)), Some(999));
        assert_eq!(t.admit(t0 + Duration::from_secs(11)), None);
        assert_eq!(t.admit(t0 + Duration::from_secs(25)), Some(1));
        // A clock that does not move forward logs nothing more.
        assert_eq!(t.admit(t0), None);
    }
}
