//! The query log's hand-over: DNS workers put fixed-size entries on a
//! bounded queue and never wait; a writer thread (in the binary) formats
//! and writes them. A full queue drops the entry and counts it.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::SystemTime;

use sextant_core::{Reason, VServerId};

use crate::wire::Rcode;

/// Addresses kept per entry; an answer with more says how many it had.
pub const MAX_LOGGED_ADDRESSES: usize = 8;

/// One logged query, copied without allocation.
#[derive(Debug, Clone, Copy)]
pub struct QueryLogEntry {
    pub time: SystemTime,
    pub client: IpAddr,
    /// The EDNS Client Subnet address and source prefix, if any.
    pub ecs: Option<(IpAddr, u8)>,
    name: [u8; 255],
    name_len: u8,
    pub qtype: u16,
    /// None when no response was sent (a DNS policy's DROP).
    pub rcode: Option<Rcode>,
    addrs: [Option<IpAddr>; MAX_LOGGED_ADDRESSES],
    /// How many addresses the answer had (may exceed the ones kept).
    pub answer_count: u32,
    pub vserver: Option<VServerId>,
    /// The model the vserver id belongs to (its address; the writer names
    /// the vserver only when the model it has is the same).
    pub model: usize,
    pub reason: Option<Reason>,
}

impl QueryLogEntry {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        client: IpAddr,
        ecs: Option<(IpAddr, u8)>,
        name: &str,
        qtype: u16,
        rcode: Option<Rcode>,
        answers: &[IpAddr],
        vserver: Option<VServerId>,
        model: usize,
        reason: Option<Reason>,
    ) -> Self {
        let mut buf = [0u8; 255];
        let len = name.len().min(buf.len());
        buf[..len].copy_from_slice(&name.as_bytes()[..len]);
        let mut addrs = [None; MAX_LOGGED_ADDRESSES];
        for (slot, a) in addrs.iter_mut().zip(answers) {
            *slot = Some(*a);
        }
        QueryLogEntry {
            time: SystemTime::now(),
            client,
            ecs,
            name: buf,
            name_len: len as u8,
            qtype,
            rcode,
            addrs,
            answer_count: answers.len() as u32,
            vserver,
            model,
            reason,
        }
    }

    /// The query name (lower case, no trailing dot).
    pub fn name(&self) -> &str {
        std::str::from_utf8(&self.name[..usize::from(self.name_len)]).unwrap_or("")
    }

    /// The answer's addresses (the first [`MAX_LOGGED_ADDRESSES`]).
    pub fn addresses(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.addrs.iter().flatten().copied()
    }
}

/// The DNS side of the query log.
#[derive(Debug)]
pub struct QueryLog {
    queue: SyncSender<QueryLogEntry>,
    /// Log one query in `sample` (per worker).
    sample: u64,
    dropped: AtomicU64,
    /// Set on SIGHUP: the writer reopens its file (logrotate).
    pub reopen: AtomicBool,
}

impl QueryLog {
    /// A log of one query in `sample` (0 is taken as 1) over a queue of
    /// `capacity` entries, and the writer's end.
    pub fn new(sample: u64, capacity: usize) -> (Self, Receiver<QueryLogEntry>) {
        let (queue, rx) = sync_channel(capacity);
        (
            QueryLog {
                queue,
                sample: sample.max(1),
                dropped: AtomicU64::new(0),
                reopen: AtomicBool::new(false),
            },
            rx,
        )
    }

    /// Entries dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Whether this query is one to log; `turn` is the worker's own count.
    #[inline]
    pub(crate) fn sampled(&self, turn: &mut u64) -> bool {
        *turn += 1;
        (*turn).is_multiple_of(self.sample)
    }

    /// Hands an entry over, never waiting.
    pub(crate) fn offer(&self, entry: QueryLogEntry) {
        match self.queue.try_send(entry) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_queue_drops_and_counts() {
        let (log, rx) = QueryLog::new(1, 2);
        let e = QueryLogEntry::new(
            "192.0.2.1".parse().unwrap(),
            None,
            "www.example.com",
            1,
            Some(Rcode::NoError),
            &["10.0.0.1".parse().unwrap()],
            None,
            0,
            None,
        );
        for _ in 0..5 {
            log.offer(e);
        }
        assert_eq!(log.dropped(), 3);
        let got = rx.try_recv().unwrap();
        assert_eq!(got.name(), "www.example.com");
        assert_eq!(got.addresses().count(), 1);
    }

    #[test]
    fn samples_one_in_n() {
        let (log, _rx) = QueryLog::new(4, 1);
        let mut turn = 0;
        let n = (0..100).filter(|_| log.sampled(&mut turn)).count();
        assert_eq!(n, 25);
    }
}
