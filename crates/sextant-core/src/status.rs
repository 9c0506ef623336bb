//! Why each service has its state, published together with the state.
//!
//! The REST API and `explain` read the same [`crate::Snapshot`] as the DNS
//! path, so a reason shown to an operator always belongs to the answers of
//! that moment. The table is stored in chunks that are shared between
//! snapshots: a publication copies only the chunks that changed, so its cost
//! follows the number of changes, not the number of services.

use std::sync::Arc;
use std::time::Duration;

use crate::health::Transition;

/// Services per shared chunk.
pub const STATUS_CHUNK: usize = 256;

/// What one monitor bound to a service last said.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MonitorStatus {
    /// The settled state; `None` before the first result.
    pub state: Option<Transition>,
    /// The last probe's verdict, e.g. `TCP connect refused`.
    pub last_detail: Option<Arc<str>>,
    /// How long the last successful probe took.
    pub last_response: Option<Duration>,
}

/// Why a service is UP or DOWN, and since when.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ServiceStatus {
    /// Operator-readable reason, e.g. `monitor tcp: connection refused`.
    pub reason: Arc<str>,
    /// Wall-clock time (since the UNIX epoch) of the last change of state.
    pub last_change: Option<Duration>,
    /// One entry per bound monitor, in `Service::monitors` order.
    pub monitors: Box<[MonitorStatus]>,
}

/// Every service's [`ServiceStatus`], indexed by `ServiceId`; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct StatusTable {
    chunks: Arc<[Arc<[ServiceStatus]>]>,
    len: usize,
}

impl StatusTable {
    /// The status of one service, if the table has it.
    pub fn get(&self, service: crate::ServiceId) -> Option<&ServiceStatus> {
        let i = service.index();
        self.chunks.get(i / STATUS_CHUNK)?.get(i % STATUS_CHUNK)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = &ServiceStatus> {
        self.chunks.iter().flat_map(|c| c.iter())
    }
}

/// The writer's side of a [`StatusTable`]: edits in place, publishes by
/// sharing the chunks that did not change since the last publication.
#[derive(Debug, Clone, Default)]
pub struct StatusBuilder {
    master: Vec<Vec<ServiceStatus>>,
    published: Vec<Arc<[ServiceStatus]>>,
    dirty: Vec<bool>,
    len: usize,
}

impl StatusBuilder {
    /// A builder holding `statuses`, all of them still to publish.
    pub fn new(statuses: Vec<ServiceStatus>) -> Self {
        let len = statuses.len();
        let mut master = Vec::with_capacity(len.div_ceil(STATUS_CHUNK));
        let mut it = statuses.into_iter();
        loop {
            let chunk: Vec<ServiceStatus> = it.by_ref().take(STATUS_CHUNK).collect();
            if chunk.is_empty() {
                break;
            }
            master.push(chunk);
        }
        let n = master.len();
        StatusBuilder {
            master,
            published: Vec::new(),
            dirty: vec![true; n],
            len,
        }
    }

    pub fn get(&self, service: crate::ServiceId) -> Option<&ServiceStatus> {
        let i = service.index();
        self.master.get(i / STATUS_CHUNK)?.get(i % STATUS_CHUNK)
    }

    /// The status of one service, to change; its chunk is republished.
    pub fn get_mut(&mut self, service: crate::ServiceId) -> Option<&mut ServiceStatus> {
        let i = service.index();
        let c = i / STATUS_CHUNK;
        let entry = self.master.get_mut(c)?.get_mut(i % STATUS_CHUNK)?;
        self.dirty[c] = true;
        Some(entry)
    }

    /// Whether anything changed since the last [`StatusBuilder::publish`].
    pub fn is_dirty(&self) -> bool {
        self.dirty.iter().any(|d| *d)
    }

    /// The table as it is now; unchanged chunks are shared with the last one.
    pub fn publish(&mut self) -> StatusTable {
        if self.published.len() != self.master.len() {
            self.published = self
                .master
                .iter()
                .map(|c| Arc::from(c.clone().into_boxed_slice()))
                .collect();
        } else {
            for (c, dirty) in self.dirty.iter().enumerate() {
                if *dirty {
                    self.published[c] = Arc::from(self.master[c].clone().into_boxed_slice());
                }
            }
        }
        self.dirty.iter_mut().for_each(|d| *d = false);
        StatusTable {
            chunks: self.published.clone().into(),
            len: self.len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ServiceId;

    fn status(reason: &str) -> ServiceStatus {
        ServiceStatus {
            reason: reason.into(),
            ..Default::default()
        }
    }

    #[test]
    fn publication_shares_unchanged_chunks() {
        let n = STATUS_CHUNK * 3 + 5;
        let mut b = StatusBuilder::new((0..n).map(|i| status(&i.to_string())).collect());
        let first = b.publish();
        assert_eq!(first.len(), n);
        assert_eq!(
            &*first.get(ServiceId::from_index(n - 1)).unwrap().reason,
            &*(n - 1).to_string()
        );
        assert!(first.get(ServiceId::from_index(n)).is_none());
        assert!(!b.is_dirty());
        b.get_mut(ServiceId::from_index(STATUS_CHUNK + 1))
            .unwrap()
            .reason = "changed".into();
        let second = b.publish();
        assert_eq!(
            &*second
                .get(ServiceId::from_index(STATUS_CHUNK + 1))
                .unwrap()
                .reason,
            "changed"
        );
        assert_eq!(
            &*first
                .get(ServiceId::from_index(STATUS_CHUNK + 1))
                .unwrap()
                .reason,
            &*(STATUS_CHUNK + 1).to_string()
        );
        assert!(Arc::ptr_eq(&first.chunks[0], &second.chunks[0]));
        assert!(!Arc::ptr_eq(&first.chunks[1], &second.chunks[1]));
        assert_eq!(second.iter().count(), n);
    }
}
