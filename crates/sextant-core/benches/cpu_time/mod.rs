//! A criterion measurement of the benchmark thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`) instead of wall time: on a machine shared
//! with other work (two cores, several builds), the time the thread waits
//! for a core is not counted, so the curves show the cost of the code and
//! not the machine's load. Caches and memory bandwidth are still shared, so
//! a loaded machine still reads somewhat slower than a quiet one.
//!
//! Used by the scale benches (`sextant-core --bench scale`,
//! `sextant-state --bench rebuild`); values are nanoseconds, printed like
//! criterion's wall times.

use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter, WallTime};

/// CPU time of the calling thread.
pub struct ThreadCpuTime {
    /// Only its formatter is used: both measure nanoseconds.
    wall: WallTime,
}

impl Default for ThreadCpuTime {
    fn default() -> Self {
        ThreadCpuTime { wall: WallTime }
    }
}

/// The calling thread's CPU time so far, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Measurement for ThreadCpuTime {
    type Intermediate = u64;
    type Value = Duration;

    fn start(&self) -> u64 {
        thread_cpu_ns()
    }

    fn end(&self, start: u64) -> Duration {
        Duration::from_nanos(thread_cpu_ns().saturating_sub(start))
    }

    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }

    fn zero(&self) -> Duration {
        Duration::ZERO
    }

    fn to_f64(&self, value: &Duration) -> f64 {
        value.as_nanos() as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        self.wall.formatter()
    }
}
