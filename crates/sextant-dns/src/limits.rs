//! The process's file descriptor limit, as it bounds TCP DNS clients.

/// At most half of the process's file descriptors go to TCP DNS clients,
/// so idle or slow clients can never take the descriptors that monitors,
/// metric exchange and the API need. The limit is read at each accepted
/// connection, since it can change under a running process (`prlimit`).
pub(crate) fn connection_cap(max: usize) -> usize {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let Some(current) = limit.current else {
        return max; // unlimited
    };
    let half = usize::try_from(current / 2).unwrap_or(usize::MAX);
    max.min(half).max(1)
}
