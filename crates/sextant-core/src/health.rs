//! Health hysteresis: how probe results become UP/DOWN transitions.
//!
//! A monitor's raw results flap; operators expect the appliance's rule that
//! `retries` consecutive failures take a service DOWN and `success_retries`
//! consecutive successes bring it back UP. The first result after start
//! decides the state at once, so a dead backend is never answered for
//! several intervals after a (re)start.

/// The state a tally has settled on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    Up,
    Down,
}

/// Counts consecutive probe results for one (monitor, service) pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthTally {
    retries: u32,
    success_retries: u32,
    /// `None` until the first probe result arrives.
    state: Option<Transition>,
    consecutive_failures: u32,
    consecutive_successes: u32,
}

impl HealthTally {
    pub fn new(retries: u32, success_retries: u32) -> Self {
        HealthTally {
            retries: retries.max(1),
            success_retries: success_retries.max(1),
            state: None,
            consecutive_failures: 0,
            consecutive_successes: 0,
        }
    }

    /// The same settings with no result yet, so the next result decides.
    pub fn fresh(&self) -> Self {
        HealthTally::new(self.retries, self.success_retries)
    }

    /// The settled state; `None` before the first probe result.
    pub fn state(&self) -> Option<Transition> {
        self.state
    }

    /// Failures in a row so far (0 after a success).
    pub fn consecutive_failures(&self) -> u32 {
        self.consecutive_failures
    }

    /// Feeds one probe result; returns the new state when it changes.
    pub fn observe(&mut self, success: bool) -> Option<Transition> {
        if success {
            self.consecutive_successes = self.consecutive_successes.saturating_add(1);
            self.consecutive_failures = 0;
        } else {
            self.consecutive_failures = self.consecutive_failures.saturating_add(1);
            self.consecutive_successes = 0;
        }
        let next = match self.state {
            None => Some(if success {
                Transition::Up
            } else {
                Transition::Down
            }),
            Some(Transition::Up) if self.consecutive_failures >= self.retries => {
                Some(Transition::Down)
            }
            Some(Transition::Down) if self.consecutive_successes >= self.success_retries => {
                Some(Transition::Up)
            }
            _ => None,
        };
        if let Some(state) = next {
            self.state = Some(state);
        }
        next
    }
}

/// Whether a service is UP by its bound monitors, as the appliance combines
/// them: each binding has a weight (`bind gslb service S -monitorName M
/// -weight W`, default 1); with `-monThreshold 0` (the default) every bound
/// monitor must be UP, with `-monThreshold T > 0` the weights of the UP
/// monitors must add up to at least `T`. A monitor with no result yet
/// counts as UP (it has not said DOWN): the state is kept until a probe
/// says otherwise. `states` and `weights` are per binding, in the same
/// order; a missing weight is 1.
pub fn monitors_up(states: &[Option<Transition>], weights: &[u32], threshold: u32) -> bool {
    let up = |s: &Option<Transition>| *s != Some(Transition::Down);
    if threshold == 0 {
        return states.iter().all(up);
    }
    let sum: u64 = states
        .iter()
        .enumerate()
        .filter(|(_, s)| up(s))
        .map(|(i, _)| u64::from(weights.get(i).copied().unwrap_or(1)))
        .sum();
    sum >= u64::from(threshold)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monitors_combine_by_threshold_and_weight() {
        use Transition::{Down, Up};
        // -monThreshold 0: every monitor must be UP.
        assert!(monitors_up(&[Some(Up), Some(Up)], &[1, 1], 0));
        assert!(!monitors_up(&[Some(Up), Some(Down)], &[1, 1], 0));
        assert!(monitors_up(&[Some(Up), None], &[1, 1], 0));
        // -monThreshold 1: one UP monitor of weight 1 is enough.
        assert!(monitors_up(
            &[Some(Down), Some(Up), Some(Down)],
            &[1, 1, 1],
            1
        ));
        assert!(!monitors_up(&[Some(Down), Some(Down)], &[1, 1], 1));
        // Weights add up.
        assert!(!monitors_up(
            &[Some(Up), Some(Down), Some(Up)],
            &[1, 5, 1],
            3
        ));
        assert!(monitors_up(
            &[Some(Down), Some(Up), Some(Up)],
            &[1, 5, 1],
            3
        ));
        assert!(monitors_up(&[Some(Up), Some(Up), Some(Up)], &[1, 1, 1], 3));
        // A threshold above every weight together: never UP.
        assert!(!monitors_up(&[Some(Up)], &[2], 3));
        // A missing weight is 1.
        assert!(monitors_up(&[Some(Up), Some(Down)], &[], 1));
    }
    use proptest::prelude::*;

    #[test]
    fn first_result_decides() {
        let mut t = HealthTally::new(3, 1);
        assert_eq!(t.observe(false), Some(Transition::Down));
        let mut t = HealthTally::new(3, 1);
        assert_eq!(t.observe(true), Some(Transition::Up));
    }

    #[test]
    fn retries_failures_take_it_down_successes_bring_it_up() {
        let mut t = HealthTally::new(3, 2);
        t.observe(true);
        assert_eq!(t.observe(false), None);
        assert_eq!(t.observe(false), None);
        assert_eq!(t.observe(false), Some(Transition::Down));
        assert_eq!(t.observe(true), None);
        assert_eq!(t.observe(false), None);
        assert_eq!(t.observe(true), None);
        assert_eq!(t.observe(true), Some(Transition::Up));
    }

    proptest! {
        /// The state only changes after the configured run of equal results.
        #[test]
        fn transitions_need_a_full_run(results in proptest::collection::vec(any::<bool>(), 1..200),
                                       retries in 1u32..6, succ in 1u32..6) {
            let mut t = HealthTally::new(retries, succ);
            let mut run_fail = 0u32;
            let mut run_ok = 0u32;
            for (i, r) in results.iter().enumerate() {
                if *r { run_ok += 1; run_fail = 0 } else { run_fail += 1; run_ok = 0 }
                match t.observe(*r) {
                    Some(Transition::Down) => prop_assert!(i == 0 || run_fail == retries),
                    Some(Transition::Up) => prop_assert!(i == 0 || run_ok == succ),
                    None => {}
                }
            }
        }
    }
}
