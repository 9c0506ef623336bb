//! Hands LDNS groups that the RTT method does not know yet from the DNS
//! workers to the state engine, without allocation, lock or await on the
//! query path: a bounded queue that drops (and counts) what does not fit.

use std::net::IpAddr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};

/// New LDNS groups waiting for the engine.
#[derive(Debug)]
pub struct LdnsQueue {
    tx: SyncSender<IpAddr>,
    /// Only the edge that drains the queue locks it, never a DNS worker.
    rx: Mutex<Receiver<IpAddr>>,
    dropped: AtomicU64,
}

/// How many new LDNS groups may wait. Beyond this a flood of new sources is
/// shed here, before it costs anything else.
pub const LDNS_QUEUE: usize = 4096;

impl Default for LdnsQueue {
    fn default() -> Self {
        LdnsQueue::with_capacity(LDNS_QUEUE)
    }
}

impl LdnsQueue {
    pub fn with_capacity(capacity: usize) -> Self {
        let (tx, rx) = sync_channel(capacity);
        LdnsQueue {
            tx,
            rx: Mutex::new(rx),
            dropped: AtomicU64::new(0),
        }
    }

    /// Offers a new group (the query path: never blocks).
    pub fn offer(&self, group: IpAddr) {
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = self.tx.try_send(group)
        {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Everything waiting, each group once.
    pub fn drain(&self) -> Vec<IpAddr> {
        let Ok(rx) = self.rx.lock() else {
            return Vec::new();
        };
        let mut groups: Vec<IpAddr> = rx.try_iter().collect();
        groups.sort_unstable();
        groups.dedup();
        groups
    }

    /// Groups dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_queue_drops_and_counts_and_drain_dedups() {
        let q = LdnsQueue::with_capacity(3);
        let a: IpAddr = "192.0.2.1".parse().expect("ip");
        let b: IpAddr = "192.0.2.2".parse().expect("ip");
        for ip in [a, b, a, b, b] {
            q.offer(ip);
        }
        assert_eq!(q.dropped(), 2);
        assert_eq!(q.drain(), vec![a, b]);
        assert!(q.drain().is_empty());
    }
}
