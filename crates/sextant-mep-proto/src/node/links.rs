//! Connections and links: registration, arbitration, adoption offers, what
//! goes UP and DOWN, what is dialled, reloads and the backup lists kept.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use sextant_core::{Model, SitePassword};

use super::{
    Attempt, Cfg, ChildData, Conn, ConnId, DialPlan, Dialer, Keys, MepEvent, Node, Output,
    from_wire, key, to_wire, wire_role,
};
use crate::message::{AcceptParent, BackupParents, ChildReport, Hello, Message};
use crate::session::{CloseReason, SessionConfig};
use crate::state::{self, StateFile};
use crate::sync::StreamReceiver;
use crate::topology::{Accept, LinkKind, PeerState, Role, SiteRef, Topology};

/// Inbound connections from one address that may be waiting to
/// authenticate at once.
pub const MAX_PENDING_PER_ADDRESS: usize = 4;
/// Inbound connections that may be waiting to authenticate at once, in all.
pub const MAX_PENDING: usize = 64;

impl Node {
    fn site_by_ip(&self, ip: std::net::IpAddr) -> Option<SiteRef> {
        let me = key(&self.cfg.local.name);
        self.topo
            .view()
            .into_iter()
            .find(|v| v.ip == ip && key(&v.name) != me)
            .map(|v| SiteRef {
                name: v.name,
                ip: v.ip,
            })
    }

    /// An inbound connection arrived at a listener.
    pub(super) fn accept(&mut self, conn: ConnId, addr: SocketAddr, secure: bool, keys: Keys) {
        let Some(site) = self.site_by_ip(addr.ip()) else {
            tracing::debug!(peer = %addr, "MEP connection from an address that is no known site: closed");
            self.emit(MepEvent::Refused {
                peer: addr,
                reason: "not the IP of a known site".into(),
            });
            return;
        };
        // Connections that have not authenticated yet cost memory and a
        // descriptor each and prove nothing: a few per address, and a few
        // dozen in all, are enough for every honest peer (one link each,
        // plus a reconnect racing the old one).
        let pending_from = |ip| {
            self.conns
                .values()
                .filter(|c| !c.outbound && !c.up && c.addr.ip() == ip)
                .count()
        };
        let pending = self.conns.values().filter(|c| !c.outbound && !c.up).count();
        if pending_from(addr.ip()) >= MAX_PENDING_PER_ADDRESS || pending >= MAX_PENDING {
            self.emit(MepEvent::Refused {
                peer: addr,
                reason: format!(
                    "too many connections not yet authenticated ({} from this address, {pending} \
                     in all; at most {MAX_PENDING_PER_ADDRESS} and {MAX_PENDING})",
                    pending_from(addr.ip())
                ),
            });
            return;
        }
        if !secure && self.cfg.local_requires_tls() {
            tracing::debug!(peer = %addr, site = %site.name, "plain MEP connection refused: this site requires the secure port");
            self.emit(MepEvent::Refused {
                peer: addr,
                reason: "this site accepts only secure MEP".into(),
            });
            return;
        }
        self.register(conn, site, addr, false, secure, None, None, keys);
    }

    /// A dial connected.
    pub(super) fn dialled(&mut self, conn: ConnId, token: u64, addr: SocketAddr, keys: Keys) {
        let Some(plan) = self
            .dialers
            .values()
            .find(|d| d.token == token)
            .map(|d| d.plan.clone())
        else {
            return;
        };
        self.register(
            conn,
            plan.site,
            addr,
            true,
            plan.secure,
            plan.acting_for,
            Some(token),
            keys,
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn register(
        &mut self,
        id: ConnId,
        site: SiteRef,
        addr: SocketAddr,
        outbound: bool,
        secure: bool,
        acting_for: Option<String>,
        dialer: Option<u64>,
        keys: Keys,
    ) {
        // The link's secret is the accepting side's: its site's
        // -sitePassword, else the rpcNode password of its IP.
        let (acceptor, acceptor_ip) = if outbound {
            (&site.name, site.ip)
        } else {
            (&self.cfg.local.name, self.cfg.local.ip)
        };
        let site_password = self
            .cfg
            .model
            .sites
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(acceptor))
            .and_then(|s| s.password.as_ref());
        let secret = match site_password {
            Some(SitePassword::Clear(p)) => Some(p.as_bytes().to_vec()),
            // No secret is known yet: one that matches nothing, so the link
            // fails to authenticate instead of using a guessable one.
            Some(SitePassword::Placeholder) => Some(keys.placeholder.to_vec()),
            None => self
                .cfg
                .rpc(acceptor_ip)
                .and_then(|n| n.password.as_ref())
                .map(|p| p.as_bytes().to_vec()),
        };
        let config = SessionConfig {
            local_name: self.cfg.local.name.clone(),
            local_ip: self.cfg.local.ip,
            role: wire_role(self.topo.role()),
            generation: self.cfg.generation,
            peer_name: site.name.clone(),
            peer_ip: site.ip,
            secret,
            nonce: keys.nonce,
            acting_for: acting_for.clone(),
            keepalive_timeout: self.cfg.timeout,
            initiator: outbound,
        };
        self.conns.insert(
            id,
            Conn {
                key: key(&site.name),
                site,
                addr,
                outbound,
                secure,
                dialer,
                up: false,
                confirmed: false,
                acting_for,
                offer: None,
                stream: StreamReceiver::new(),
                relayed: HashMap::new(),
                resync_answered: HashMap::new(),
            },
        );
        self.out.push(Output::Start {
            conn: id,
            config: Box::new(config),
        });
    }

    pub(super) fn on_up(&mut self, id: ConnId, hello: Hello) {
        let role = self.topo.role();
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        c.up = true;
        let k = c.key.clone();
        let name = c.site.name.clone();
        tracing::debug!(site = %name, peer = %c.addr, outbound = c.outbound, generation = hello.generation, "MEP handshake complete");
        if role == Role::Child {
            let is_original = self.cfg.original_parent.as_deref() == Some(k.as_str());
            if let Some(for_parent) = hello.acting_for.filter(|_| !is_original) {
                // Wait for the adopter's BackupParents, then decide.
                c.offer = Some(for_parent);
                return;
            }
        } else if c.outbound
            && let Some(for_parent) = c.acting_for.clone()
        {
            let list = to_wire(self.topo.backup_list(&for_parent));
            tracing::debug!(child = %name, %for_parent, "offering to adopt the child");
            self.send(
                id,
                Message::BackupParents(BackupParents {
                    parent: for_parent,
                    list,
                }),
            );
            return;
        }
        if !self.links.contains_key(&k) {
            let reason = format!(
                "{} has no MEP link with {name} in its configuration",
                self.cfg.local.name
            );
            self.reject(id, reason);
            return;
        }
        self.confirm(id);
    }

    /// Makes connection `id` the site's MEP link.
    fn confirm(&mut self, id: ConnId) {
        let Some(c) = self.conns.get(&id) else { return };
        let (k, name, outbound) = (c.key.clone(), c.site.name.clone(), c.outbound);
        let (addr, secure) = (c.addr, c.secure);
        let mut replaced = false;
        if let Some(&old) = self.active.get(&k)
            && old != id
        {
            // A site restarted (same direction: the old one is stale), or
            // the two ends disagree on who initiates (keep the one the
            // topology expects).
            let keep_new = match self.conns.get(&old) {
                None => true,
                Some(o) if o.outbound == outbound => true,
                Some(_) => self.links.get(&k).is_none_or(|l| l.initiate == outbound),
            };
            if keep_new {
                self.reject(
                    old,
                    "replaced by a newer connection from the same site".into(),
                );
                replaced = true;
            } else {
                self.reject(id, "a MEP connection with this site already exists".into());
                return;
            }
        }
        if let Some(c) = self.conns.get_mut(&id) {
            c.confirmed = true;
        }
        self.active.insert(k.clone(), id);
        self.links_touched = true;
        self.topo.peer_up(&name);
        // A child whose parent reconnected: no ParentChanged follows, so
        // the new session gets its snapshot here.
        if replaced
            && self.topo.role() == Role::Child
            && self.topo.current_parent().map(key).as_deref() == Some(k.as_str())
        {
            self.send_report_to(id);
        }
        self.site_info(&k, &name).rtt = None;
        if !replaced {
            tracing::debug!(site = %name, peer = %addr, secure, "MEP is UP");
        }
        let role = self.topo.role();
        let kind = self.links.get(&k).map(|l| l.kind);
        if role == Role::Parent && matches!(kind, Some(LinkKind::Peer | LinkKind::ToChild)) {
            let list = to_wire(self.topo.own_backup_list());
            self.send(
                id,
                Message::BackupParents(BackupParents {
                    parent: self.cfg.local.name.clone(),
                    list,
                }),
            );
        }
        if role != Role::Child && kind == Some(LinkKind::Peer) {
            self.send_report_to(id);
            let keys: Vec<String> = self.children.keys().cloned().collect();
            for ck in keys {
                self.send_child_snapshot(id, &ck);
            }
        }
        if role == Role::Parent
            && matches!(kind, Some(LinkKind::ToChild | LinkKind::Adopted))
            && !self.children.contains_key(&k)
        {
            self.children
                .insert(k.clone(), ChildData::new(name.clone()));
            self.relay(ChildReport {
                child: name,
                up: true,
                services: None,
                states: None,
                site_metrics: None,
            });
        }
        self.announce(&k);
        self.after_change();
    }

    pub(super) fn on_received(&mut self, id: ConnId, msg: Message) {
        let Some(c) = self.conns.get(&id) else { return };
        let (k, name, confirmed) = (c.key.clone(), c.site.name.clone(), c.confirmed);
        let role = self.topo.role();
        match msg {
            Message::BackupParents(b) => {
                let list = from_wire(b.list);
                if role != Role::Child {
                    tracing::debug!(from = %name, parent = %b.parent, "backup list from a peer ignored (the configuration is authoritative)");
                    return;
                }
                let offer = self.conns.get(&id).and_then(|c| c.offer.clone());
                match offer {
                    Some(for_parent) if !confirmed => {
                        if key(&b.parent) == key(&for_parent) {
                            self.remember_list(&b.parent, list);
                        }
                        self.decide_offer(id, &name, &for_parent);
                    }
                    _ if confirmed && key(&b.parent) == k => {
                        tracing::debug!(parent = %name, backups = list.len(), "backup parent list received");
                        self.remember_list(&b.parent, list);
                        self.after_change();
                    }
                    _ => {
                        tracing::debug!(from = %name, parent = %b.parent, "unexpected backup list ignored");
                    }
                }
            }
            Message::AcceptParent(_) => {
                let Some(c) = self.conns.get(&id) else { return };
                let Some(for_parent) = c.acting_for.clone().filter(|_| c.outbound && !confirmed)
                else {
                    tracing::debug!(from = %name, "unexpected AcceptParent ignored");
                    return;
                };
                tracing::debug!(child = %name, %for_parent, "took over the child (backup parent)");
                self.topo.adopted(&name, true);
                self.adopted.insert(k.clone(), for_parent.clone());
                self.emit(MepEvent::Adopted {
                    child: name,
                    for_parent,
                });
                self.confirm(id);
            }
            _ if !confirmed => {
                tracing::debug!(from = %name, kind = %msg.kind(), "data before the link is confirmed ignored");
            }
            other => self.on_data(id, &k, &name, other),
        }
    }

    fn remember_list(&mut self, parent: &str, list: Vec<SiteRef>) {
        let entry = (parent.to_owned(), list.clone());
        let old = self.received_lists.insert(key(parent), entry.clone());
        self.topo.set_backup_list(parent, list);
        if old.as_ref() != Some(&entry) {
            self.save_state();
        }
    }

    /// (Child) Seeds the topology with the backup lists of the state file.
    pub(super) fn restore(&mut self, st: StateFile) {
        if key(&st.site) != key(&self.cfg.local.name) {
            tracing::warn!(file_site = %st.site, site = %self.cfg.local.name, "MEP state file of another site ignored");
            return;
        }
        if self.topo.role() != Role::Child {
            tracing::debug!("MEP state file ignored: not a child site");
            return;
        }
        let n = st.backup_lists.len();
        for b in st.backup_lists {
            let list = from_wire(b.list);
            self.received_lists
                .insert(key(&b.parent), (b.parent.clone(), list.clone()));
            self.topo.set_backup_list(&b.parent, list);
        }
        tracing::info!(
            lists = n,
            "backup parent lists restored from the MEP state file"
        );
    }

    /// (Child) Asks for the backup lists held to be written to the state
    /// file. Lists change rarely (when a parent's configuration does).
    fn save_state(&mut self) {
        let mut lists: Vec<BackupParents> = self
            .received_lists
            .values()
            .map(|(parent, list)| BackupParents {
                parent: parent.clone(),
                list: to_wire(list.clone()),
            })
            .collect();
        lists.sort_by_key(|b| key(&b.parent));
        self.out.push(Output::SaveState(StateFile {
            version: state::STATE_VERSION,
            site: self.cfg.local.name.clone(),
            backup_lists: lists,
        }));
    }

    /// Child: decides the adoption offer on connection `id`.
    fn decide_offer(&mut self, id: ConnId, from: &str, for_parent: &str) {
        match self.topo.offer_parent(from, for_parent) {
            Accept::Yes => {
                tracing::info!(new_parent = %from, original = %for_parent, "accepted a backup parent's takeover");
                self.accepted_offer = Some((from.to_owned(), for_parent.to_owned()));
                if let Some(c) = self.conns.get_mut(&id) {
                    c.offer = None;
                }
                self.send(
                    id,
                    Message::AcceptParent(AcceptParent {
                        parent: from.to_owned(),
                    }),
                );
                self.confirm(id);
            }
            Accept::No(reason) => {
                let k = format!("offer:{}", key(from));
                if self.refusals.get(&k) != Some(&reason) {
                    tracing::info!(from = %from, original = %for_parent, %reason, "refused a backup parent's takeover");
                    self.refusals.insert(k, reason.clone());
                } else {
                    tracing::debug!(from = %from, original = %for_parent, %reason, "refused a backup parent's takeover");
                }
                self.reject(id, reason);
            }
        }
    }

    /// A connection ended.
    pub(super) fn closed(&mut self, id: ConnId, reason: CloseReason) {
        let Some(c) = self.conns.remove(&id) else {
            return;
        };
        let why = reason.to_string();
        let name = c.site.name.clone();
        if matches!(reason, CloseReason::Malformed(_) | CloseReason::Protocol(_)) {
            tracing::debug!(site = %name, peer = %c.addr, reason = %why, "MEP session closed: protocol error");
            self.emit(MepEvent::BadFrame {
                peer: c.addr,
                site: name.clone(),
                reason: why.clone(),
            });
        } else if !c.confirmed {
            tracing::debug!(site = %name, peer = %c.addr, reason = %why, "MEP connection closed before it was up");
        }
        // Adopter side.
        if c.outbound
            && let Some(for_parent) = c.acting_for.clone()
        {
            if c.confirmed && self.adopted.remove(&c.key).is_some() {
                self.topo.adopted(&name, false);
                tracing::debug!(child = %name, %for_parent, reason = %why, "adoption ended");
                self.emit(MepEvent::Released {
                    child: name.clone(),
                    reason: why.clone(),
                });
            } else if let CloseReason::RejectedByPeer(r) = &reason {
                tracing::debug!(child = %name, %for_parent, reason = %r, "child refused the takeover");
                self.emit(MepEvent::AdoptionRefused {
                    child: name.clone(),
                    for_parent,
                    reason: r.clone(),
                });
            }
        }
        if self.active.get(&c.key) != Some(&id) {
            return;
        }
        self.active.remove(&c.key);
        self.links_touched = true;
        if self
            .accepted_offer
            .as_ref()
            .is_some_and(|(from, _)| key(from) == c.key)
        {
            self.accepted_offer = None;
        }
        self.topo.peer_down(&name);
        {
            let info = self.site_info(&c.key, &name);
            info.rtt = None;
            info.down_reason = Some(why.clone());
        }
        tracing::debug!(site = %name, peer = %c.addr, reason = %why, "MEP is DOWN");
        if self.children.remove(&c.key).is_some() {
            self.relay(ChildReport {
                child: name.clone(),
                up: false,
                services: None,
                states: None,
                site_metrics: None,
            });
        }
        // Children this peer relayed are no longer reachable through it.
        let mut lost = Vec::new();
        for (k, info) in &mut self.sites {
            if info.via.remove(&c.key) {
                info.down_reason = Some(format!("MEP with {name}, which relayed it, is DOWN"));
                lost.push(k.clone());
            }
        }
        for k in lost {
            self.announce(&k);
        }
        self.announce(&c.key);
        self.after_change();
    }

    /// Emits PeerUp/PeerDown when a site's reachability changed.
    pub(super) fn announce(&mut self, k: &str) {
        let direct = self.active.contains_key(k);
        let Some(info) = self.sites.get_mut(k) else {
            return;
        };
        let up = direct || !info.via.is_empty();
        if up == info.announced {
            return;
        }
        info.announced = up;
        let site = info.name.clone();
        let e = if up {
            let via = if direct {
                None
            } else {
                info.via.iter().min().cloned()
            };
            let via = via.map(|v| self.sites.get(&v).map_or(v.clone(), |i| i.name.clone()));
            MepEvent::PeerUp { site, via }
        } else {
            MepEvent::PeerDown {
                site,
                reason: info.down_reason.clone().unwrap_or_default(),
            }
        };
        self.emit(e);
    }

    /// After anything that may change the topology's answers.
    pub(super) fn after_change(&mut self) {
        if self.topo.role() == Role::Child {
            let cur = self.topo.current_parent().map(str::to_owned);
            if cur != self.last_parent {
                match &cur {
                    Some(p) => tracing::debug!(parent = %p, "current parent"),
                    None => tracing::debug!("no parent reachable"),
                }
                self.emit(MepEvent::ParentChanged {
                    new_parent: cur.clone(),
                });
                self.last_parent = cur.clone();
                if let Some(p) = cur
                    && let Some(&id) = self.active.get(&key(&p))
                {
                    self.send_report_to(id);
                }
            }
        }
        self.reconcile();
    }

    /// Dials the links the topology wants, rejects those it no longer wants.
    fn reconcile(&mut self) {
        let adoptions: HashMap<String, String> = self
            .topo
            .adoptions()
            .into_iter()
            .map(|(c, p)| (key(&c.name), p))
            .collect();
        self.links = self
            .topo
            .links()
            .into_iter()
            .map(|l| (key(&l.peer.name), l))
            .collect();
        self.links_touched = true;
        let mut wanted: HashMap<String, DialPlan> = HashMap::new();
        for (k, l) in &self.links {
            if !l.initiate {
                continue;
            }
            let acting_for = if l.kind == LinkKind::Adopted {
                adoptions.get(k).cloned()
            } else {
                None
            };
            let secure = self.cfg.secure_to(l.peer.ip);
            wanted.insert(
                k.clone(),
                DialPlan {
                    site: l.peer.clone(),
                    acting_for,
                    secure,
                    port: if secure {
                        self.cfg.secure_port
                    } else {
                        self.cfg.port
                    },
                },
            );
        }
        let mut stopped = Vec::new();
        self.dialers.retain(|k, d| {
            let keep = wanted.get(k).is_some_and(|p| *p == d.plan);
            if !keep {
                stopped.push(d.token);
            }
            keep
        });
        for token in stopped {
            self.out.push(Output::StopDial { token });
        }
        for (k, plan) in wanted {
            if self.dialers.contains_key(&k) {
                continue;
            }
            let token = self.next_token;
            self.next_token += 1;
            tracing::debug!(site = %plan.site.name, acting_for = ?plan.acting_for, "dialing");
            self.dialers.insert(
                k,
                Dialer {
                    token,
                    plan,
                    attempt: None,
                },
            );
        }
        // Each dial's attempt follows the configuration (source IP,
        // timeout) even when its plan is unchanged.
        let mut dials = Vec::new();
        for d in self.dialers.values_mut() {
            let a = attempt(&self.cfg, &d.plan);
            if d.attempt.as_ref() != Some(&a) {
                d.attempt = Some(a.clone());
                dials.push(Output::Dial {
                    token: d.token,
                    attempt: a,
                });
            }
        }
        self.out.extend(dials);
        let parent_now = (self.topo.role() == Role::Child)
            .then(|| self.topo.current_parent().map(str::to_owned))
            .flatten();
        let mut rejects = Vec::new();
        for (&id, c) in &self.conns {
            if let Some(t) = c.dialer
                && self.dialers.get(&c.key).map(|d| d.token) != Some(t)
            {
                rejects.push((
                    id,
                    format!(
                        "{} no longer links with {}",
                        self.cfg.local.name, c.site.name
                    ),
                ));
                continue;
            }
            if !c.up || (c.offer.is_some() && !c.confirmed) {
                continue;
            }
            match self.links.get(&c.key) {
                None => rejects.push((
                    id,
                    match &parent_now {
                        Some(p) => format!("{p} is now my parent"),
                        None => format!(
                            "{} no longer links with {}",
                            self.cfg.local.name, c.site.name
                        ),
                    },
                )),
                Some(l) if l.peer.ip != c.site.ip => {
                    rejects.push((id, format!("the IP of {} changed", c.site.name)));
                }
                _ => {}
            }
        }
        for (id, why) in rejects {
            self.reject(id, why);
        }
    }

    pub(super) fn reload(&mut self, model: Arc<Model>, generation: u64) {
        let mut topo = match Topology::new(&model) {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(error = %e, "MEP keeps the previous topology: the new configuration is unusable");
                return;
            }
        };
        let old_local = self.cfg.local.clone();
        let old_own = self.topo.own_backup_list();
        let cfg = Cfg::new(model, generation, &topo, self.cfg.max_frame);
        if key(&cfg.local.name) != key(&old_local.name) || cfg.local.ip != old_local.ip {
            tracing::warn!(old = %old_local.name, new = %cfg.local.name, "the local site changed: every MEP session restarts");
            let ids: Vec<ConnId> = self.conns.keys().copied().collect();
            for id in ids {
                self.reject(id, "the site's identity changed".into());
            }
        } else {
            // Carry what this node has observed over to the new topology.
            for (parent, list) in self.received_lists.values() {
                topo.set_backup_list(parent, list.clone());
            }
            for c in self.active.values().filter_map(|id| self.conns.get(id)) {
                topo.peer_up(&c.site.name);
            }
            for v in self.topo.view() {
                if self.topo.peer_state(&v.name) == PeerState::Down {
                    topo.peer_down(&v.name);
                }
            }
            if let Some((from, for_parent)) = &self.accepted_offer
                && topo.offer_parent(from, for_parent) != Accept::Yes
            {
                self.accepted_offer = None;
            }
            for child in self.adopted.keys() {
                topo.adopted(child, true);
            }
        }
        self.topo = topo;
        self.cfg = cfg;
        self.out.push(Output::Listen(self.listen_addrs()));
        self.unreached_at = Some(self.now + self.cfg.timeout);
        let own = self.topo.own_backup_list();
        if own != old_own && self.topo.role() == Role::Parent {
            let msg = Message::BackupParents(BackupParents {
                parent: self.cfg.local.name.clone(),
                list: to_wire(own),
            });
            let ids: Vec<ConnId> = self.active.values().copied().collect();
            for id in ids {
                self.send(id, msg.clone());
            }
        }
        self.after_change();
    }
}

/// The try of `plan` under `cfg`: `set ns rpcNode PEER -srcIP IP` picks the
/// source address towards that peer; the site IP otherwise.
fn attempt(cfg: &Cfg, plan: &DialPlan) -> Attempt {
    let local_ip = cfg
        .rpc(plan.site.ip)
        .and_then(|n| n.source_ip)
        .unwrap_or(cfg.local.ip);
    Attempt {
        site: plan.site.clone(),
        acting_for: plan.acting_for.clone(),
        secure: plan.secure,
        port: plan.port,
        local_ip,
        timeout: cfg.timeout,
    }
}
