//! The process's file descriptor limit, as it bounds TCP DNS clients.
#![allow(unsafe_code)]

/// At most half of the process's file descriptors go to TCP DNS clients,
/// so idle or slow clients can never take the descriptors that monitors,
/// metric exchange and the API need. The limit is read at each accepted
/// connection, since it can change under a running process (`prlimit`).
pub(crate) fn connection_cap(max: usize) -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) writes one rlimit into the valid, exclusively
    // borrowed struct and has no other effect.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return max;
    }
    let half = usize::try_from(limit.rlim_cur / 2).unwrap_or(usize::MAX);
    max.min(half).max(1)
}
