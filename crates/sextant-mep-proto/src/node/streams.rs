//! The service streams: this site's own reports, the children's reports a
//! parent relays to its peer parents, resyncs and heartbeats.

use super::{
    ConnId, LocalReport, MAX_RELAYED_STREAMS, MepEvent, Node, key, own_budget, relay_budget,
};
use crate::message::{ChildReport, Message, ResyncRequest, SiteMetrics, accepted_links};
use crate::sync::{Step, StreamError};
use crate::topology::{LinkKind, Role};

impl Node {
    /// A data message on the confirmed connection `id` with site `k`.
    pub(super) fn on_data(&mut self, id: ConnId, k: &str, name: &str, msg: Message) {
        let name = name.to_owned();
        match msg {
            Message::ServiceStates(s) => {
                let Some(c) = self.conns.get_mut(&id) else {
                    return;
                };
                let step = match c.stream.on_states(s) {
                    Ok(step) => step,
                    Err(e) => return self.stream_error(id, None, e),
                };
                let (full, entries, removed) = match step {
                    Step::Nothing => return,
                    Step::Resync { have } => {
                        tracing::debug!(from = %name, ?have, "gap in the service stream: asking for a snapshot");
                        self.send(
                            id,
                            Message::ResyncRequest(ResyncRequest { child: None, have }),
                        );
                        return;
                    }
                    Step::Full(entries) => (true, entries, Vec::new()),
                    Step::Delta { entries, removed } => (false, entries, removed),
                };
                if let Some(child) = self.children.get_mut(k) {
                    let diff = if full {
                        child.relay.set(&entries)
                    } else {
                        child.relay.apply(entries.clone(), &removed)
                    };
                    let budget = relay_budget(self.cfg.max_frame, &child.name);
                    let steps = child.relay.changes(diff, budget);
                    child.outbox.extend(steps);
                }
                if full || !entries.is_empty() || !removed.is_empty() {
                    self.emit(MepEvent::Services {
                        from_site: name,
                        via: None,
                        full,
                        entries,
                        removed,
                    });
                }
            }
            Message::ResyncRequest(r) => self.on_resync_request(id, &name, r),
            Message::SiteMetrics(m) => {
                self.note_links(k, &name, &m);
                if let Some(child) = self.children.get_mut(k)
                    && child.metrics.as_ref() != Some(&m)
                {
                    child.metrics = Some(m.clone());
                    child.metrics_dirty = true;
                }
                self.emit(MepEvent::SiteMetrics {
                    from_site: name,
                    via: None,
                    metrics: m,
                });
            }
            Message::LdnsRtt(r) => self.emit(MepEvent::LdnsRtt {
                from_site: name,
                entries: r.entries,
            }),
            Message::Sessions(s) => self.emit(MepEvent::Sessions {
                from_site: name,
                entries: s.entries,
            }),
            Message::ChildReport(r) => self.on_child_report(id, k, &name, r),
            m @ (Message::ConfigOffer(_) | Message::ConfigUpdate(_) | Message::ConfigResult(_)) => {
                self.on_config(id, k, &name, m)
            }
            other => {
                tracing::debug!(from = %name, kind = %other.kind(), "message ignored");
            }
        }
    }

    /// A peer broke the rules of a service stream: its session cannot be
    /// trusted to converge, so it is closed (the peer reconnects and starts
    /// afresh with a snapshot).
    fn stream_error(&mut self, id: ConnId, child: Option<&str>, e: StreamError) {
        let Some(c) = self.conns.get(&id) else { return };
        let reason = match child {
            None => format!("protocol error: service stream: {e}"),
            Some(ch) => format!("protocol error: relay stream of {ch}: {e}"),
        };
        tracing::debug!(site = %c.site.name, peer = %c.addr, %reason, "MEP session closed");
        let e = MepEvent::BadFrame {
            peer: c.addr,
            site: c.site.name.clone(),
            reason: reason.clone(),
        };
        self.emit(e);
        self.reject(id, reason);
    }

    /// A peer asks for a fresh snapshot of one of our streams.
    fn on_resync_request(&mut self, id: ConnId, from: &str, r: ResyncRequest) {
        tracing::debug!(%from, child = ?r.child, have = ?r.have, "snapshot requested");
        let now = self.now;
        let interval = self.cfg.interval();
        let stream = r.child.as_deref().map(key).unwrap_or_default();
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        if c.resync_answered.len() > MAX_RELAYED_STREAMS {
            c.resync_answered.clear();
        }
        if c.resync_answered
            .get(&stream)
            .is_some_and(|&t| now < t + interval)
        {
            tracing::debug!(%from, child = ?r.child, "snapshot requested again too soon: ignored");
            return;
        }
        c.resync_answered.insert(stream, now);
        match r.child {
            None => {
                if self.report_targets().contains(&id) {
                    self.send_report_to(id);
                }
            }
            Some(child) => {
                let is_peer = self
                    .conns
                    .get(&id)
                    .and_then(|c| self.links.get(&c.key))
                    .is_some_and(|l| l.kind == LinkKind::Peer);
                if is_peer && self.topo.role() == Role::Parent {
                    self.send_child_snapshot(id, &key(&child));
                }
            }
        }
    }

    /// Sends connection `id` (a peer parent) the relay snapshot of child
    /// `ck`, with its site metrics.
    pub(super) fn send_child_snapshot(&mut self, id: ConnId, ck: &str) {
        let Some(child) = self.children.get_mut(ck) else {
            return;
        };
        let budget = relay_budget(self.cfg.max_frame, &child.name);
        let parts = child.relay.snapshot(budget);
        let (name, metrics) = (child.name.clone(), child.metrics.clone());
        for (i, st) in parts.into_iter().enumerate() {
            self.send(
                id,
                Message::ChildReport(ChildReport {
                    child: name.clone(),
                    up: true,
                    services: None,
                    states: Some(st),
                    site_metrics: metrics.clone().filter(|_| i == 0),
                }),
            );
        }
    }

    /// Parent: a peer parent relays one of its children.
    fn on_child_report(&mut self, id: ConnId, from_key: &str, from: &str, r: ChildReport) {
        if self.topo.role() == Role::Child
            || self.links.get(from_key).map(|l| l.kind) != Some(LinkKind::Peer)
        {
            tracing::debug!(%from, child = %r.child, "child report from a site that is not a peer parent ignored");
            return;
        }
        let ck = key(&r.child);
        if ck == key(&self.cfg.local.name) {
            return;
        }
        // The relay stream: followed even while we reach the child directly,
        // so its numbering holds when we no longer do.
        let mut services = None;
        if let Some(c) = self.conns.get_mut(&id) {
            if !r.up {
                c.relayed.remove(&ck);
            } else if let Some(st) = r.states {
                if !c.relayed.contains_key(&ck) && c.relayed.len() >= MAX_RELAYED_STREAMS {
                    return self.stream_error(
                        id,
                        Some(&r.child),
                        StreamError::TooManyStreams(MAX_RELAYED_STREAMS),
                    );
                }
                match c.relayed.entry(ck.clone()).or_default().on_states(st) {
                    Err(e) => return self.stream_error(id, Some(&r.child), e),
                    Ok(Step::Nothing) => {}
                    Ok(Step::Resync { have }) => {
                        tracing::debug!(%from, child = %r.child, ?have, "gap in a relay stream: asking for a snapshot");
                        self.send(
                            id,
                            Message::ResyncRequest(ResyncRequest {
                                child: Some(r.child.clone()),
                                have,
                            }),
                        );
                    }
                    Ok(Step::Full(entries)) => services = Some((true, entries, Vec::new())),
                    Ok(Step::Delta { entries, removed }) => {
                        services = Some((false, entries, removed))
                    }
                }
            } else if let Some(entries) = r.services {
                // A sender from before the stream: a complete list.
                services = Some((true, entries, Vec::new()));
            }
        }
        let now = self.now;
        let info = self.site_info(&ck, &r.child);
        if r.up {
            info.via.insert(from_key.to_owned());
            info.last_message = Some(now);
        } else if info.via.remove(from_key) {
            info.down_reason = Some(format!("{from} lost its MEP link with it"));
        }
        let direct = self.active.contains_key(&ck);
        self.announce(&ck);
        if r.up && !direct {
            if let Some((full, entries, removed)) = services
                && (full || !entries.is_empty() || !removed.is_empty())
            {
                self.emit(MepEvent::Services {
                    from_site: r.child.clone(),
                    via: Some(from.to_owned()),
                    full,
                    entries,
                    removed,
                });
            }
            if let Some(metrics) = r.site_metrics {
                self.note_links(&ck, &r.child, &metrics);
                self.emit(MepEvent::SiteMetrics {
                    from_site: r.child,
                    via: Some(from.to_owned()),
                    metrics,
                });
            }
        }
    }

    /// Sends a child report to every confirmed peer parent (encoded once).
    pub(super) fn relay(&mut self, r: ChildReport) {
        if self.topo.role() != Role::Parent {
            return;
        }
        let peers = self.peer_conns();
        self.broadcast(peers, Message::ChildReport(r));
    }

    /// Relays what changed of the child on connection `id` since its last
    /// relay: the relay steps of its services, the site metrics in the
    /// first. Called once the events of one read are handled, so a child's
    /// ServiceStates and SiteMetrics, which it writes together, usually go
    /// out as one message.
    pub(super) fn flush_relay(&mut self, id: ConnId) {
        let Some(c) = self.conns.get(&id).filter(|c| c.confirmed) else {
            return;
        };
        let Some(child) = self.children.get_mut(&c.key) else {
            return;
        };
        if child.outbox.is_empty() && !child.metrics_dirty {
            return;
        }
        let name = child.name.clone();
        let mut metrics = child
            .metrics
            .clone()
            .filter(|_| std::mem::take(&mut child.metrics_dirty));
        let steps = std::mem::take(&mut child.outbox);
        let mut reports = Vec::with_capacity(steps.len().max(1));
        for st in steps {
            reports.push(ChildReport {
                child: name.clone(),
                up: true,
                services: None,
                states: Some(st),
                site_metrics: metrics.take(),
            });
        }
        if let Some(m) = metrics {
            reports.push(ChildReport {
                child: name,
                up: true,
                services: None,
                states: None,
                site_metrics: Some(m),
            });
        }
        for r in reports {
            self.relay(r);
        }
    }

    /// Confirmed connections with peer parents / mesh peers.
    pub(super) fn peer_conns(&self) -> Vec<ConnId> {
        self.active
            .iter()
            .filter(|(k, _)| self.links.get(*k).is_some_and(|l| l.kind == LinkKind::Peer))
            .map(|(_, &id)| id)
            .collect()
    }

    /// Where our own report goes: peers (parent, flat), or the current
    /// parent (child).
    fn report_targets(&self) -> Vec<ConnId> {
        if self.topo.role() == Role::Child {
            self.topo
                .current_parent()
                .and_then(|p| self.active.get(&key(p)).copied())
                .into_iter()
                .collect()
        } else {
            self.peer_conns()
        }
    }

    /// Sends connection `id` a snapshot of our services and our site
    /// figures (a new receiver, or one that asked for it).
    pub(super) fn send_report_to(&mut self, id: ConnId) {
        let Some(site) = self.own_site_message() else {
            return;
        };
        let budget = own_budget(self.cfg.max_frame);
        for st in self.own.snapshot(budget) {
            self.send(id, Message::ServiceStates(st));
        }
        self.send(id, site);
    }

    /// Our site figures as last published, with our links as they are now
    /// (remembered as the links last reported); `None` before the first
    /// publish.
    fn own_site_message(&mut self) -> Option<Message> {
        let mut site = self.site_metrics.clone()?;
        site.links = self.own_links();
        self.links_reported = site.links.clone();
        Some(Message::SiteMetrics(site))
    }

    /// Tells the report targets at once when one of our links went up or
    /// down since we last reported them, so that every site's picture of
    /// the graph follows a partition within one message.
    pub(super) fn report_links_if_changed(&mut self) {
        // Most inputs (data, keepalives) touch no link: no list to build.
        if !std::mem::take(&mut self.links_touched)
            || self.site_metrics.is_none()
            || self.own_links() == self.links_reported
        {
            return;
        }
        let targets = self.report_targets();
        if let Some(site) = self.own_site_message() {
            self.broadcast(targets, site);
        }
    }

    /// What site `name` (key `k`) reported of its own links; a report
    /// without links (an older sender) leaves what we had.
    fn note_links(&mut self, k: &str, name: &str, m: &SiteMetrics) {
        if m.links.is_empty() {
            return;
        }
        let now = self.now;
        let links = accepted_links(&m.links);
        self.site_info(k, name).reported_links = Some((links, now));
    }

    pub(super) fn publish(&mut self, report: LocalReport) {
        let diff = self.own.set(&report.services);
        let site_changed = self.site_metrics.as_ref() != Some(&report.site);
        self.site_metrics = Some(report.site);
        let targets = self.report_targets();
        let budget = own_budget(self.cfg.max_frame);
        let was_started = self.own.started();
        let steps = self.own.changes(diff, budget);
        if !steps.is_empty() && site_changed {
            self.report_sent = self.now;
        }
        for (i, st) in steps.into_iter().enumerate() {
            if i == 0 && was_started && std::mem::take(&mut self.lose_next_delta) {
                tracing::debug!(seq = st.seq, "test hook: delta not sent");
                continue;
            }
            self.broadcast(targets.clone(), Message::ServiceStates(st));
        }
        if site_changed && let Some(site) = self.own_site_message() {
            self.broadcast(targets, site);
        }
    }

    pub(super) fn tick(&mut self) {
        let now = self.now;
        if let Some(t) = self.unreached_at
            && now >= t
        {
            self.unreached_at = None;
            self.topo.mark_unreached_down();
            self.after_change();
        }
        if self.site_metrics.is_some() && now >= self.report_sent + self.cfg.interval() {
            // No periodic resend of the services: a heartbeat (the latest
            // seq, nothing else) lets receivers notice a lost delta; the
            // site figures are small and complete, so they are resent.
            self.report_sent = now;
            let targets = self.report_targets();
            let beat = self.own.heartbeat();
            self.broadcast(targets.clone(), Message::ServiceStates(beat));
            if let Some(site) = self.own_site_message() {
                self.broadcast(targets, site);
            }
            // Relay heartbeats: one frame per child and peer parent, so they
            // go every keepalive timeout only (a third of the rate), which
            // still reveals a lost relay delta within T.
            if self.topo.role() == Role::Parent && now >= self.relay_beat_at {
                self.relay_beat_at = now + self.cfg.timeout;
                let peers = self.peer_conns();
                let beats: Vec<Message> = self
                    .children
                    .values()
                    .filter(|c| c.relay.started())
                    .map(|c| {
                        Message::ChildReport(ChildReport {
                            child: c.name.clone(),
                            up: true,
                            services: None,
                            states: Some(c.relay.heartbeat()),
                            site_metrics: None,
                        })
                    })
                    .collect();
                for m in beats {
                    self.broadcast(peers.clone(), m);
                }
            }
        }
    }
}
