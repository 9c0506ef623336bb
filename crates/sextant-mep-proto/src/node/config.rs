//! Config sync messages (kinds 14–16): carried between peer parents and
//! mesh peers, refused by and to children. What they mean is decided by the
//! config sync machine (`sextant-config-sync`, docs/config-sync.md); the
//! node only delivers them on the right links and answers a child's part.

use super::{ConnId, MepEvent, Node, key};
use crate::message::{ConfigOutcome, ConfigResult, Message};
use crate::topology::{LinkKind, Role};

/// Whether `msg` is one of the config sync messages.
pub fn is_config_sync(msg: &Message) -> bool {
    matches!(
        msg,
        Message::ConfigOffer(_) | Message::ConfigUpdate(_) | Message::ConfigResult(_)
    )
}

impl Node {
    /// A config sync message on the confirmed connection `id` with site `k`.
    ///
    /// Between peer parents (or mesh peers) it goes to the binary as it is.
    /// A child never takes part (seed 001: "the configuration of the child
    /// sites consists only of the details of their own site and their parent
    /// site"): on a link where either end is a child, an update is answered
    /// `Refused` (once per transfer, on its last part, as the sync machine
    /// answers) so that the sender stops and shows why; offers and results
    /// are dropped.
    pub(super) fn on_config(&mut self, id: ConnId, k: &str, name: &str, msg: Message) {
        let role = self.topo.role();
        let kind = self.links.get(k).map(|l| l.kind);
        if role != Role::Child && kind == Some(LinkKind::Peer) {
            self.emit(MepEvent::ConfigSync {
                from_site: name.to_owned(),
                msg,
            });
            return;
        }
        let child = if role == Role::Child {
            self.cfg.local.name.clone()
        } else if matches!(kind, Some(LinkKind::ToChild | LinkKind::Adopted)) {
            name.to_owned()
        } else {
            // A link the topology no longer wants (being closed).
            tracing::debug!(from = %name, kind = %msg.kind(), "config sync message on a link that is no peer link ignored");
            return;
        };
        let Message::ConfigUpdate(u) = msg else {
            tracing::debug!(from = %name, kind = %msg.kind(), "config sync message to or from a child site ignored");
            return;
        };
        if !u.last {
            return;
        }
        let reason = format!(
            "{child} is a child site: a child's configuration is never synchronised (seed 001)"
        );
        tracing::debug!(from = %name, transfer = u.transfer, %reason, "config update refused");
        self.send(
            id,
            Message::ConfigResult(ConfigResult {
                transfer: u.transfer,
                version: u.version.clone(),
                outcome: ConfigOutcome::Refused,
                errors: vec![reason.clone()],
                warnings: Vec::new(),
                running: u.version,
            }),
        );
        self.emit(MepEvent::ConfigSyncRefused {
            from_site: name.to_owned(),
            reason,
        });
    }

    /// Sends a config sync message to peer parent (or mesh peer) `site` on
    /// this node's confirmed link with it. Anything else (another kind, a
    /// child, a site that is down or unknown, this node being a child) is
    /// dropped: the sync machine retries on its own schedule and learns of
    /// the link's return from `PeerUp`.
    pub(super) fn send_to(&mut self, site: &str, msg: Message) {
        if !is_config_sync(&msg) {
            tracing::debug!(%site, kind = %msg.kind(), "send_to: not a config sync message: dropped");
            return;
        }
        if self.topo.role() == Role::Child {
            tracing::debug!(%site, kind = %msg.kind(), "send_to: a child site takes no part in config sync: dropped");
            return;
        }
        let k = key(site);
        if self.links.get(&k).map(|l| l.kind) != Some(LinkKind::Peer) {
            tracing::debug!(%site, kind = %msg.kind(), "send_to: not a peer parent or mesh peer of this site: dropped");
            return;
        }
        let Some(&id) = self.active.get(&k) else {
            tracing::debug!(%site, kind = %msg.kind(), "send_to: MEP with the site is not UP: dropped");
            return;
        };
        self.send(id, msg);
    }
}
