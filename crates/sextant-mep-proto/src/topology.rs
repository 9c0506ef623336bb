//! Who talks to whom over MEP, who opens each connection, and who is whose
//! parent right now: the pure topology logic of metric exchange.
//!
//! This module has no sockets, no clock and no tokio. The MEP driver tells it
//! what it observes ([`Topology::peer_up`], [`Topology::peer_down`], backup
//! lists received, adoption offers received, adoption answers) and asks it
//! what to do ([`Topology::links`], [`Topology::adoptions`],
//! [`Topology::offer_parent`]). Everything here follows seed 001 ("Deploying a
//! parent-child topology using the MEP protocol"); the quotes below are from
//! its English translation.
//!
//! Sites are identified by **name** (compared case-insensitively, reported in
//! their configured spelling), not by model indices: a child's configuration
//! holds only itself and its parent ("The configuration of the child sites
//! consists only of the details of their own site and their parent site"),
//! so a child learns the backup parents, with their IPs, over MEP.
//!
//! # Roles
//!
//! * **Child**: the local site has a parent (`-parentSite`). "A child site
//!   communicates only with its parent site."
//! * **Parent**: the local site has no parent and some site in the
//!   configuration does. Parents hold every site: "For each parent site,
//!   configure all child sites, the peer parent sites, and the child sites
//!   that are associated with the peer sites".
//! * **Flat**: no site has a parent: every site is a mesh member.
//!
//! # Links and who initiates them
//!
//! * Parent–parent and flat mesh ([`LinkKind::Peer`]): "In a parent-parent
//!   connection, the site metric exchange is still initiated by the lower of
//!   two IP addresses." IPs compare as [`IpAddr`] does (every IPv4 address
//!   below every IPv6 address); two sites with the same IP (a configuration
//!   mistake) are ordered by name so that exactly one of them still initiates.
//! * Parent → its own children ([`LinkKind::ToChild`]): "the parent sites
//!   initiate connections to the child sites, and not the other way around.
//!   This is because the parent sites contain information about all the child
//!   sites in the GSLB setup."
//! * Child → parent ([`LinkKind::ToParent`]): the child never initiates; it
//!   accepts its original parent always and an adopting backup parent when
//!   [`Topology::offer_parent`] says so.
//! * Backup parent → adopted child ([`LinkKind::Adopted`]): "The new parent
//!   then connects to the child site." An adoption in progress (offered, not
//!   yet accepted) is already a link: the adopter must open it to offer.
//!
//! The driver reconciles: it opens every link of [`Topology::links`] with
//! `initiate`, accepts the others, and closes any session whose site is no
//! longer in `links()` (a child that accepted a new parent drops the old
//! adopter that way; a backup parent whose adoption ended drops the child).
//!
//! # Peer state: UP, DOWN and not yet known
//!
//! A peer is UP after [`Topology::peer_up`], DOWN after
//! [`Topology::peer_down`], and *unknown* before either. An unknown peer is not
//! reachable, but it is not DOWN either: nobody takes over the children of a
//! parent nobody has judged DOWN yet, and a child does not leave a parent it
//! has not heard from yet. That keeps a cold start (every site starting at
//! once, no session up yet) from turning into a storm of adoptions. The seed
//! says a parent is DOWN when "MEP for that parent site is DOWN", i.e. after
//! the keepalive timeout, so the driver reports `peer_down` for a site it
//! could not reach within the keepalive timeout, or calls
//! [`Topology::mark_unreached_down`] once, one keepalive timeout after start.
//!
//! # Backup parents: takeover ([`Topology::adoptions`])
//!
//! "When a parent site is DOWN, the other parent sites in the GSLB setup learn
//! through MEP that this particular parent site is DOWN [...] look up the
//! backup chain of the peer parent. The parent site with the highest
//! preference takes over the child sites of the parent site that is DOWN."
//!
//! Each parent decides alone, from its own view: for each parent P that is
//! DOWN as it sees it, it walks P's backup list in order; the first entry that
//! is either itself or UP (as it sees it) decides. If it is itself, it adopts
//! P's children; otherwise it assumes that entry has them ("SiteP3 assumes
//! that child_site1 is now the child site of parent SiteP2"). So in scenario
//! 3, SiteP3, which sees SiteP1 and SiteP2 DOWN, adopts; SiteP2, which sees
//! SiteP1 UP, "takes no action"; and when SiteP2 later loses SiteP1 it "finds
//! itself as the most preferred backup" and adopts as well.
//!
//! # Backup parents: the child's decision ([`Topology::offer_parent`])
//!
//! "A child site can accept or reject the connection after evaluating its
//! existing connections and the information in the backup list." A child
//! accepts an offer from `from`, acting for `for_parent`:
//!
//! 1. always when `from` is its original parent ("The new request takes
//!    precedence, and child_Site 1 migrates to SiteP1"); this ends any
//!    adoption;
//! 2. otherwise only if `for_parent` is its original parent, the original
//!    parent is DOWN as the child sees it ("child_site1 rejects the connection
//!    request from SiteP2, because the parent, SiteP1, is still UP"), `from`
//!    is in the original parent's backup list ("child_site1 uses the list to
//!    decide whether to accept or reject"), and `from` is at least as
//!    preferred in that list as the child's current adopter, if any
//!    ("finds SiteP2 to be the most preferred backup, so it migrates from
//!    SiteP3 to SiteP2"). A child cannot see whether other backups are
//!    reachable (it talks only to its parent), so "most preferred" is judged
//!    among the offers it has: the current adopter and the new one.
//!
//! The list the child judges with is the one it last received: from its
//! parent ("The parent site sends the backup parent list to the child sites in
//! the MEP messages") or from the adopter along with its offer ("SiteP2 sends
//! the backup parent list of SiteP1 (SiteP2 and SiteP3) to child_Site1").
//! The driver feeds either to [`Topology::set_backup_list`] before calling
//! `offer_parent`.
//!
//! # Return of the original parent
//!
//! "When the original parent site is up again, it tries to connect to its
//! child sites that were migrated to another parent site. If a connection
//! attempt succeeds, the child site is assigned back to its original parent
//! site." The original parent's [`LinkKind::ToChild`] links never go away, the
//! child always accepts it, and a backup parent that sees the original parent
//! UP again no longer lists the adoption.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use sextant_core::{Model, SiteId};

/// At most this many backup parents per parent site (`-backupParentlist`
/// takes `<bkp_site1> ... <bkp_site5>`).
pub const MAX_BACKUP_PARENTS: usize = 5;

/// A site as MEP knows it: its name and the IP its Sextant uses for MEP.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SiteRef {
    pub name: String,
    pub ip: IpAddr,
}

/// The role of this node in the topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// A site without a parent in a configuration where some site has one.
    Parent,
    /// A site with a parent (`-parentSite`).
    Child,
    /// A mesh member: no site of the configuration has a parent.
    Flat,
}

/// What a link is, seen from this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkKind {
    /// Parent ↔ parent, or flat mesh; the lower IP initiates.
    Peer,
    /// I am the child's original (configured) parent; I initiate.
    ToChild,
    /// I am a backup parent taking the child over (offered or accepted); I
    /// initiate.
    Adopted,
    /// I am the child; I never initiate.
    ToParent,
}

/// One MEP link this node should have.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Link {
    pub peer: SiteRef,
    pub kind: LinkKind,
    /// This node opens the connection; otherwise it only accepts it.
    pub initiate: bool,
}

/// A child's answer to a parent that wants to become its parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Accept {
    Yes,
    /// Rejected, with an operator-readable reason.
    No(String),
}

/// What a peer's MEP state is, as this node sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PeerState {
    /// Never reported UP or DOWN (see the module documentation).
    #[default]
    Unknown,
    Up,
    Down,
}

/// One site of this node's view, for `GET /v1/sites`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteView {
    pub name: String,
    pub ip: IpAddr,
    /// `"parent"`, `"child"` or `"flat"`.
    pub kind: &'static str,
    /// The configured parent of a child site.
    pub configured_parent: Option<String>,
    /// The parent a child site has right now, as far as this node knows.
    pub current_parent: Option<String>,
    /// MEP with this site is UP as this node sees it; `None` for this node.
    pub mep_up: Option<bool>,
}

/// A configuration this module cannot work with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    #[error("no local site: the configuration must say which site this node runs as")]
    NoLocalSite,
    #[error("the local site index {0} is not a site of the configuration")]
    BadLocalSite(SiteId),
    #[error("site \"{0}\" is defined twice (site names are case-insensitive)")]
    DuplicateSite(String),
    #[error("site \"{site}\": {problem}")]
    Parent { site: String, problem: String },
    #[error("site \"{site}\": backup parents: {problem}")]
    BackupParents { site: String, problem: String },
}

/// The lookup key of a site name: names are case-insensitive.
fn key(name: &str) -> String {
    name.to_ascii_lowercase()
}

/// Whether `a` opens the peer link to `b`: the lower IP, then the lower name.
fn lower(a: &SiteRef, b: &SiteRef) -> bool {
    (a.ip, key(&a.name)) < (b.ip, key(&b.name))
}

#[derive(Debug, Clone)]
struct Known {
    site: SiteRef,
    /// `key(&site.name)`.
    key: String,
    /// Key of the configured parent, for a child site.
    parent: Option<String>,
    /// From this node's configuration (otherwise learned from a backup list).
    configured: bool,
}

/// The MEP topology as one node sees it. See the module documentation.
#[derive(Debug, Clone)]
pub struct Topology {
    role: Role,
    /// Key of the local site.
    me: String,
    /// Every site known: configured ones in configuration order, then the
    /// ones learned from backup lists.
    sites: Vec<Known>,
    by_key: HashMap<String, usize>,
    /// Parent key → indices of its configured children, in configuration order.
    children: HashMap<String, Vec<usize>>,
    /// Parent key → its ordered backup list (as configured or last received).
    backups: HashMap<String, Vec<SiteRef>>,
    /// This node's own configured backup list (parents only).
    own_backups: Vec<SiteRef>,
    peers: HashMap<String, PeerState>,
    /// Child only: key of the current parent (original or adopter).
    current: Option<String>,
    /// Parent only: child key → original parent key, for adoptions the child
    /// accepted.
    accepted: HashMap<String, String>,
}

impl Topology {
    /// From this node's configuration: `model.local_site` must be set.
    pub fn new(model: &Model) -> Result<Self, TopologyError> {
        let local = model.local_site.ok_or(TopologyError::NoLocalSite)?;
        if model.sites.get(local).is_none() {
            return Err(TopologyError::BadLocalSite(local));
        }
        validate(model)?;

        let mut sites = Vec::with_capacity(model.sites.len());
        let mut by_key = HashMap::with_capacity(model.sites.len());
        let mut children: HashMap<String, Vec<usize>> = HashMap::new();
        let mut backups = HashMap::new();
        for (i, s) in model.sites.iter().enumerate() {
            let parent = s.parent.map(|p| key(&model.sites[p].name));
            if let Some(p) = &parent {
                children.entry(p.clone()).or_default().push(i);
            }
            if !s.backup_parents.is_empty() {
                let list = s
                    .backup_parents
                    .iter()
                    .map(|&b| {
                        let b = &model.sites[b];
                        SiteRef {
                            name: b.name.clone(),
                            ip: b.ip,
                        }
                    })
                    .collect();
                backups.insert(key(&s.name), list);
            }
            by_key.insert(key(&s.name), i);
            sites.push(Known {
                key: key(&s.name),
                site: SiteRef {
                    name: s.name.clone(),
                    ip: s.ip,
                },
                parent,
                configured: true,
            });
        }
        let me_site = &model.sites[local];
        let role = if me_site.parent.is_some() {
            Role::Child
        } else if model.sites.iter().any(|s| s.parent.is_some()) {
            Role::Parent
        } else {
            Role::Flat
        };
        let me = key(&me_site.name);
        let own_backups = if role == Role::Child {
            Vec::new()
        } else {
            backups.get(&me).cloned().unwrap_or_default()
        };
        Ok(Topology {
            role,
            me,
            sites,
            by_key,
            children,
            backups,
            own_backups,
            peers: HashMap::new(),
            current: None,
            accepted: HashMap::new(),
        })
    }

    pub fn role(&self) -> Role {
        self.role
    }

    /// This node's own site.
    pub fn local(&self) -> &SiteRef {
        &self.known(&self.me).expect("the local site is known").site
    }

    /// Every link this node should have right now, and whether this node
    /// opens it:
    /// * flat and parent peers: the lower IP initiates;
    /// * a parent to its own children: the parent initiates;
    /// * a child to its parent (original or adopter): the child only accepts;
    /// * a backup parent to the children it adopts (offered or accepted):
    ///   the adopting parent initiates.
    pub fn links(&self) -> Vec<Link> {
        let me = self.local();
        let mut out = Vec::new();
        match self.role {
            Role::Flat | Role::Parent => {
                for k in &self.sites {
                    if !k.configured || k.parent.is_some() || k.key == self.me {
                        continue;
                    }
                    out.push(Link {
                        peer: k.site.clone(),
                        kind: LinkKind::Peer,
                        initiate: lower(me, &k.site),
                    });
                }
                for &c in self
                    .children
                    .get(&self.me)
                    .map(Vec::as_slice)
                    .unwrap_or(&[])
                {
                    out.push(Link {
                        peer: self.sites[c].site.clone(),
                        kind: LinkKind::ToChild,
                        initiate: true,
                    });
                }
                for (child, _) in self.adoptions() {
                    out.push(Link {
                        peer: child,
                        kind: LinkKind::Adopted,
                        initiate: true,
                    });
                }
            }
            Role::Child => {
                let original = self.original_parent().expect("a child has a parent");
                out.push(Link {
                    peer: self.sites[original].site.clone(),
                    kind: LinkKind::ToParent,
                    initiate: false,
                });
                let adopter = self
                    .current
                    .as_deref()
                    .and_then(|c| self.known(c))
                    .filter(|k| k.key != self.sites[original].key);
                if let Some(k) = adopter {
                    out.push(Link {
                        peer: k.site.clone(),
                        kind: LinkKind::ToParent,
                        initiate: false,
                    });
                }
            }
        }
        out
    }

    /// MEP with `site` came up, as this node sees it. For a child, its
    /// original parent coming up makes it the current parent again.
    pub fn peer_up(&mut self, site: &str) {
        let k = key(site);
        if self.role == Role::Child && Some(&k) == self.original_key().as_ref() {
            self.current = Some(k.clone());
        }
        // A parent that is back ends the adoptions of its children.
        self.accepted.retain(|_, original| *original != k);
        self.peers.insert(k, PeerState::Up);
    }

    /// MEP with `site` went down (or could not be brought up within the
    /// keepalive timeout), as this node sees it.
    pub fn peer_down(&mut self, site: &str) {
        let k = key(site);
        if self.current.as_ref() == Some(&k) {
            self.current = None;
        }
        self.accepted.remove(&k);
        self.peers.insert(k, PeerState::Down);
    }

    /// Every site this node should link with (see [`Topology::links`]) that
    /// was never reported UP or DOWN becomes DOWN. Call it once, one keepalive
    /// timeout after start, if the driver does not report failed first
    /// connections through [`Topology::peer_down`] itself.
    pub fn mark_unreached_down(&mut self) {
        for l in self.links() {
            let k = key(&l.peer.name);
            let state = self.peers.entry(k).or_default();
            if *state == PeerState::Unknown {
                *state = PeerState::Down;
            }
        }
    }

    /// The MEP state of `site` as this node sees it.
    pub fn peer_state(&self, site: &str) -> PeerState {
        self.state(&key(site))
    }

    /// A parent told us (or, as a parent, we know from configuration) the
    /// ordered backup list of parent `parent`. The list replaces the one
    /// known; entries naming `parent` itself and repeated entries are dropped
    /// and at most [`MAX_BACKUP_PARENTS`] are kept. This node's own list is
    /// its configuration and is not replaced.
    pub fn set_backup_list(&mut self, parent: &str, list: Vec<SiteRef>) {
        let pk = key(parent);
        if pk == self.me {
            return;
        }
        let mut seen = HashSet::new();
        let mut clean = Vec::with_capacity(list.len().min(MAX_BACKUP_PARENTS));
        for s in list {
            let k = key(&s.name);
            if k == pk || !seen.insert(k.clone()) {
                continue;
            }
            if !self.by_key.contains_key(&k) {
                self.by_key.insert(k.clone(), self.sites.len());
                self.sites.push(Known {
                    key: k.clone(),
                    site: s.clone(),
                    parent: None,
                    configured: false,
                });
            }
            clean.push(s);
            if clean.len() == MAX_BACKUP_PARENTS {
                break;
            }
        }
        self.backups.insert(pk, clean);
    }

    /// The backup list of `parent` as this node knows it (empty if none).
    /// An adopting parent sends it along with its offer.
    pub fn backup_list(&self, parent: &str) -> Vec<SiteRef> {
        let k = key(parent);
        if k == self.me {
            return self.own_backups.clone();
        }
        self.backups.get(&k).cloned().unwrap_or_default()
    }

    /// The backup list this node (a parent) sends to its children and peers:
    /// its own configured list.
    pub fn own_backup_list(&self) -> Vec<SiteRef> {
        self.own_backups.clone()
    }

    /// As a child: a parent-role peer `from` wants to become my parent,
    /// claiming to act for `for_parent` (my original parent). See the module
    /// documentation for the rules. On [`Accept::Yes`] the current parent
    /// becomes `from`; the driver then closes the old parent's session (it is
    /// no longer in [`Topology::links`]).
    pub fn offer_parent(&mut self, from: &str, for_parent: &str) -> Accept {
        let Some(original) = self.original_parent() else {
            return Accept::No(format!(
                "this site ({}) is not a child site; only a child accepts a parent",
                self.local().name
            ));
        };
        let orig_name = self.sites[original].site.name.clone();
        let ok = key(&orig_name);
        let fk = key(from);
        if fk == ok {
            self.current = Some(ok);
            return Accept::Yes;
        }
        if key(for_parent) != ok {
            return Accept::No(format!(
                "{from} offers to act for {for_parent}, but my parent is {orig_name}"
            ));
        }
        match self.state(&ok) {
            PeerState::Up => {
                return Accept::No(format!("my parent {orig_name} is UP"));
            }
            PeerState::Unknown => {
                return Accept::No(format!(
                    "my parent {orig_name} has not been reached yet (not known to be DOWN)"
                ));
            }
            PeerState::Down => {}
        }
        let Some(list) = self.backups.get(&ok).filter(|l| !l.is_empty()) else {
            return Accept::No(format!(
                "no backup parent list of {orig_name} is known to this site"
            ));
        };
        let names = || {
            list.iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let Some(rank) = list.iter().position(|s| key(&s.name) == fk) else {
            return Accept::No(format!(
                "{from} is not in the backup parent list of {orig_name} ({})",
                names()
            ));
        };
        let cur_rank = self
            .current
            .as_ref()
            .and_then(|cur| list.iter().position(|s| key(&s.name) == *cur));
        if let Some(cur_rank) = cur_rank.filter(|&c| c < rank) {
            return Accept::No(format!(
                "my current parent {} is more preferred than {from} in the backup parent list of {orig_name} ({})",
                list[cur_rank].name,
                names()
            ));
        }
        self.current = Some(fk);
        Accept::Yes
    }

    /// As a child: who my parent is right now (original or adopter), if
    /// connected.
    pub fn current_parent(&self) -> Option<&str> {
        let c = self.current.as_deref()?;
        self.known(c).map(|k| k.site.name.as_str())
    }

    /// As a parent: children of other parents that I should adopt now, with
    /// their original parent. For each parent P that is DOWN as I see it, I
    /// walk P's backup list in order; the first entry that is either me or
    /// UP as I see it decides: if it is me, I adopt P's children (those of my
    /// configuration: parents hold every site).
    pub fn adoptions(&self) -> Vec<(SiteRef, String)> {
        let mut out = Vec::new();
        if self.role != Role::Parent {
            return out;
        }
        for k in &self.sites {
            let pk = &k.key;
            if !k.configured || k.parent.is_some() || *pk == self.me {
                continue;
            }
            if self.state(pk) != PeerState::Down {
                continue;
            }
            if self.decider(pk).as_deref() != Some(self.me.as_str()) {
                continue;
            }
            for &c in self.children.get(pk).map(Vec::as_slice).unwrap_or(&[]) {
                out.push((self.sites[c].site.clone(), k.site.name.clone()));
            }
        }
        out
    }

    /// A child accepted my adoption (`accepted`), or rejected or dropped it:
    /// bookkeeping for [`Topology::view`].
    pub fn adopted(&mut self, child: &str, accepted: bool) {
        let ck = key(child);
        if !accepted {
            self.accepted.remove(&ck);
            return;
        }
        let original = self
            .known(&ck)
            .and_then(|k| k.parent.clone())
            .unwrap_or_default();
        self.accepted.insert(ck, original);
    }

    /// For `/v1/sites`: each site this node knows, its relationship, and the
    /// current parent of each child as far as this node knows.
    pub fn view(&self) -> Vec<SiteView> {
        let adopting: HashSet<String> = self
            .adoptions()
            .into_iter()
            .map(|(c, _)| key(&c.name))
            .collect();
        self.sites
            .iter()
            .map(|k| {
                let sk = &k.key;
                let is_me = *sk == self.me;
                let kind = if k.parent.is_some() {
                    "child"
                } else if self.role == Role::Flat && k.configured {
                    "flat"
                } else {
                    "parent"
                };
                let configured_parent = k
                    .parent
                    .as_deref()
                    .and_then(|p| self.known(p))
                    .map(|p| p.site.name.clone());
                let current_parent = match (&k.parent, is_me) {
                    (Some(_), true) => self.current_parent().map(str::to_owned),
                    (Some(p), false) if self.role == Role::Parent => {
                        self.believed_parent(sk, p, &adopting)
                    }
                    _ => None,
                };
                SiteView {
                    name: k.site.name.clone(),
                    ip: k.site.ip,
                    kind,
                    configured_parent,
                    current_parent,
                    mep_up: (!is_me).then(|| self.state(sk) == PeerState::Up),
                }
            })
            .collect()
    }

    // --- internals ---

    fn known(&self, k: &str) -> Option<&Known> {
        self.by_key.get(k).map(|&i| &self.sites[i])
    }

    fn state(&self, k: &str) -> PeerState {
        self.peers.get(k).copied().unwrap_or_default()
    }

    /// Child only: index of the configured parent.
    fn original_parent(&self) -> Option<usize> {
        if self.role != Role::Child {
            return None;
        }
        let me = self.known(&self.me)?;
        self.by_key.get(me.parent.as_deref()?).copied()
    }

    fn original_key(&self) -> Option<String> {
        self.original_parent().map(|i| self.sites[i].key.clone())
    }

    /// For a parent `pk`: the first entry of its backup list that is me or
    /// UP as I see it (the one that takes its children when it is DOWN).
    fn decider(&self, pk: &str) -> Option<String> {
        self.backups.get(pk)?.iter().find_map(|s| {
            let k = key(&s.name);
            (k == self.me || self.state(&k) == PeerState::Up).then_some(k)
        })
    }

    /// Parent only: who child `ck` (configured parent `pk`) has as parent, as
    /// far as this node knows.
    fn believed_parent(&self, ck: &str, pk: &str, adopting: &HashSet<String>) -> Option<String> {
        let name = |k: &str| self.known(k).map(|s| s.site.name.clone());
        if pk == self.me {
            return (self.state(ck) == PeerState::Up)
                .then(|| name(pk))
                .flatten();
        }
        match self.state(pk) {
            PeerState::Up => name(pk),
            PeerState::Unknown => None,
            PeerState::Down => match self.decider(pk) {
                Some(d) if d == self.me => (adopting.contains(ck)
                    && self.accepted.contains_key(ck))
                .then(|| name(&self.me))
                .flatten(),
                Some(d) => name(&d),
                None => None,
            },
        }
    }
}

/// The rules `sextant-config` also checks, repeated so that a hand-built
/// model cannot put the topology in a state it cannot reason about.
fn validate(model: &Model) -> Result<(), TopologyError> {
    let mut seen = HashSet::new();
    for s in &model.sites {
        if !seen.insert(key(&s.name)) {
            return Err(TopologyError::DuplicateSite(s.name.clone()));
        }
    }
    for (i, s) in model.sites.iter_enumerated() {
        if let Some(p) = s.parent {
            let problem = match model.sites.get(p) {
                None => Some(format!(
                    "parent index {p} is not a site of the configuration"
                )),
                Some(_) if p == i => Some("a site cannot be its own parent".to_owned()),
                Some(parent) => parent.parent.map(|g| {
                    let g = model.sites.get(g).map_or("?", |g| g.name.as_str());
                    format!(
                        "parent \"{}\" is itself a child (of \"{g}\"); parent-child topologies have two levels",
                        parent.name
                    )
                }),
            };
            if let Some(problem) = problem {
                return Err(TopologyError::Parent {
                    site: s.name.clone(),
                    problem,
                });
            }
        }
        if s.backup_parents.is_empty() {
            continue;
        }
        let err = |problem: String| TopologyError::BackupParents {
            site: s.name.clone(),
            problem,
        };
        if s.parent.is_some() {
            return Err(err(
                "only parent sites have backup parents, and this site is a child".to_owned(),
            ));
        }
        if s.backup_parents.len() > MAX_BACKUP_PARENTS {
            return Err(err(format!(
                "{} given; at most {MAX_BACKUP_PARENTS} are allowed",
                s.backup_parents.len()
            )));
        }
        let mut listed = HashSet::new();
        for &b in &s.backup_parents {
            let Some(bs) = model.sites.get(b) else {
                return Err(err(format!("index {b} is not a site of the configuration")));
            };
            if b == i {
                return Err(err("a site cannot be its own backup parent".to_owned()));
            }
            if bs.parent.is_some() {
                return Err(err(format!(
                    "\"{}\" is a child site; only parent sites can be backup parents",
                    bs.name
                )));
            }
            if !listed.insert(b) {
                return Err(err(format!("\"{}\" is listed twice", bs.name)));
            }
        }
    }
    Ok(())
}
