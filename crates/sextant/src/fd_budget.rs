//! The descriptor budget: how many of the process's file descriptors each
//! kind of connection may hold, so that connections anyone can open (the
//! REST API, metric exchange before authentication) can never take the
//! descriptors the health monitors and DNS over TCP need (issue 38, item 3;
//! `docs/operations.md`, "File descriptors").
//!
//! Out of the limit `L` (the soft `RLIMIT_NOFILE`, raised to the hard one
//! at start):
//!
//! | share | who | bounds |
//! |---|---|---|
//! | `L/2` | DNS over TCP clients | also `dns.tcp_max_connections` (`sextant_dns`) |
//! | `L/8` | REST API connections | at least 16, at most 4096 |
//! | `L/16` | accepted metric exchange connections | at least 8, at most 1024 |
//! | the rest, `5L/16` or more | health probes, LDNS probes, UDP sockets, listeners, files | |
//!
//! Connections over their share are closed as soon as they are accepted.
//! The probes get what is left, at least 5/16 of the limit: 320 at the
//! usual soft limit of 1024, 27,648 at the packaged unit's 65,536.

use std::time::Duration;

/// Smallest share of the API: an operator can always get in.
pub const API_MIN: usize = 16;
/// The API never needs more than this (every request is short).
pub const API_MAX: usize = 4096;
/// Smallest share of metric exchange: room for the links of a small
/// deployment (a site accepts at most one link per other site).
pub const MEP_MIN: usize = 8;
/// Metric exchange never needs more: 1024 sites are far beyond any
/// deployment (32 parents and their children).
pub const MEP_MAX: usize = 1024;
/// Below this many descriptors left for probes, listeners and files, the
/// start warns that the limit is too low.
pub const RESERVE_MIN: u64 = 128;

/// The shares of one descriptor limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// The limit they are shares of (`None`: unlimited).
    pub limit: Option<u64>,
    /// DNS over TCP clients at most (before `dns.tcp_max_connections`).
    pub dns_tcp: u64,
    /// REST API connections at most.
    pub api: usize,
    /// Accepted metric exchange connections at most.
    pub mep: usize,
    /// What is left for health probes, LDNS probes, UDP sockets,
    /// listeners and files.
    pub reserved: u64,
}

/// The budget of descriptor limit `limit` (`None`: unlimited). Pure.
pub fn budget(limit: Option<u64>) -> Budget {
    let Some(l) = limit else {
        return Budget {
            limit: None,
            dns_tcp: u64::MAX,
            api: API_MAX,
            mep: MEP_MAX,
            reserved: u64::MAX,
        };
    };
    let share = |div: u64, min: usize, max: usize| {
        usize::try_from(l / div)
            .unwrap_or(usize::MAX)
            .clamp(min, max)
    };
    let dns_tcp = (l / 2).max(1);
    let api = share(8, API_MIN, API_MAX);
    let mep = share(16, MEP_MIN, MEP_MAX);
    let reserved = l
        .saturating_sub(dns_tcp)
        .saturating_sub(api as u64)
        .saturating_sub(mep as u64);
    Budget {
        limit,
        dns_tcp,
        api,
        mep,
        reserved,
    }
}

impl Budget {
    /// What the operator must hear at start, if anything: a limit that
    /// leaves too little for the probes (`monitor_bindings`: pairs of a
    /// service and a monitor, each holding at most one socket at a time).
    pub fn warning(&self, monitor_bindings: usize) -> Option<String> {
        let limit = self.limit?;
        let need = RESERVE_MIN.max(monitor_bindings as u64);
        (self.reserved < need).then(|| {
            format!(
                "the file descriptor limit ({limit}) leaves {} descriptors for {monitor_bindings} \
                 monitor bindings, listeners and files (want at least {need}): raise it \
                 (LimitNOFILE= in the systemd unit, or `ulimit -n`); a probe that finds no \
                 descriptor is reported as a local error and keeps the service's state",
                self.reserved
            )
        })
    }
}

/// The budget of the limit in force now.
pub fn current() -> Budget {
    budget(rustix::process::getrlimit(rustix::process::Resource::Nofile).current)
}

/// Raises the soft limit on open files to the hard one (a daemon that holds
/// many TCP DNS clients, probes and peers should not stop at the usual
/// soft 1024) and logs the limits and the budget in force.
pub fn raise_limit() -> Budget {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let before = getrlimit(Resource::Nofile);
    let mut now = before;
    let mut error = None;
    if let Some(max) = before.maximum
        && before.current.is_some_and(|cur| cur < max)
    {
        let raised = Rlimit {
            current: Some(max),
            maximum: Some(max),
        };
        match setrlimit(Resource::Nofile, raised) {
            Ok(()) => now = raised,
            Err(e) => error = Some(e),
        }
    }
    let b = budget(now.current);
    let shown = |v: Option<u64>| v.map_or_else(|| "unlimited".to_string(), |n| n.to_string());
    match error {
        None => tracing::info!(
            soft_before = %shown(before.current),
            soft = %shown(now.current),
            hard = %shown(now.maximum),
            dns_tcp = b.dns_tcp,
            api = b.api,
            mep = b.mep,
            reserved = b.reserved,
            "file descriptor limit and budget (connections over their share are closed at once)"
        ),
        Some(e) => tracing::warn!(
            soft = %shown(now.current),
            hard = %shown(now.maximum),
            error = %e,
            dns_tcp = b.dns_tcp,
            api = b.api,
            mep = b.mep,
            reserved = b.reserved,
            "cannot raise the file descriptor limit to the hard one; budget of the soft one"
        ),
    }
    b
}

/// Logs probes that failed for a reason of this host at most once per
/// [`sextant_core::log_throttle::LOG_EVERY`], with how many there were since: under
/// descriptor exhaustion every probe fails so, and one line each would
/// flood the log.
#[derive(Debug, Default)]
pub struct LocalErrorLog(sextant_core::log_throttle::LogThrottle);

impl LocalErrorLog {
    /// One local error at `now` (the daemon's clock); logs it if due.
    pub fn note(&mut self, detail: &str, now: Duration) {
        if let Some(held_back) = self.0.admit(now) {
            tracing::warn!(
                errors = held_back + 1,
                last = detail,
                "health probes failed for a reason of this host (out of descriptors or buffers); \
                 not counted: the services keep their state"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_usual_soft_limit_leaves_the_probes_a_third() {
        let b = budget(Some(1024));
        assert_eq!(b.dns_tcp, 512);
        assert_eq!(b.api, 128);
        assert_eq!(b.mep, 64);
        assert_eq!(b.reserved, 320);
        assert_eq!(b.warning(100), None);
    }

    #[test]
    fn a_high_limit_caps_api_and_mep() {
        let b = budget(Some(524_288));
        assert_eq!(b.api, API_MAX);
        assert_eq!(b.mep, MEP_MAX);
        assert_eq!(b.dns_tcp, 262_144);
        assert!(b.reserved > 250_000);
        assert_eq!(budget(None).api, API_MAX);
        assert_eq!(budget(None).warning(1_000_000), None);
    }

    #[test]
    fn shares_never_exceed_the_limit_and_the_rest_is_at_least_five_sixteenths() {
        for l in [256u64, 300, 1000, 1024, 4096, 65_536, 1 << 20] {
            let b = budget(Some(l));
            let used = b.dns_tcp + b.api as u64 + b.mep as u64;
            assert!(used + b.reserved == l, "{l}: {b:?}");
            assert!(b.reserved * 16 >= l * 5, "{l}: {b:?}");
        }
    }

    #[test]
    fn a_low_limit_keeps_the_minimums_and_warns() {
        let b = budget(Some(64));
        assert_eq!(b.api, API_MIN);
        assert_eq!(b.mep, MEP_MIN);
        assert_eq!(b.reserved, 8);
        let w = b.warning(2).expect("a warning");
        assert!(w.contains("(64)") && w.contains("raise it"), "{w}");
        // More bindings than the reserve: warned even at 1024.
        assert!(budget(Some(1024)).warning(1000).is_some());
    }
}
