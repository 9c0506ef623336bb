//! The topology logic as a pure simulation: one `Topology` per site, a matrix
//! of cut links, and a step function that plays the MEP driver (sessions come
//! up and go down, backup lists travel, adoptions are offered and answered)
//! until nothing changes. Scenarios 1, 2 and 3 of seed 001 are checked exactly
//! as the seed tells them.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::net::IpAddr;

use sextant_core::{Model, SiteId};
use sextant_mep::topology::{
    Accept, LinkKind, MAX_BACKUP_PARENTS, PeerState, Role, SiteRef, Topology, TopologyError,
};
use sextant_test_support::model::{LinkedSite, ModelBuilder};

// ---------------------------------------------------------------------------
// Configurations
// ---------------------------------------------------------------------------

#[derive(Clone)]
struct Spec {
    name: String,
    ip: IpAddr,
    parent: Option<String>,
    backups: Vec<String>,
}

fn spec(name: &str, ip: &str, parent: Option<&str>, backups: &[&str]) -> Spec {
    Spec {
        name: name.to_owned(),
        ip: ip.parse().unwrap(),
        parent: parent.map(str::to_owned),
        backups: backups.iter().map(|s| (*s).to_owned()).collect(),
    }
}

/// A model holding `specs` (in order), running as `local`.
fn model_of(specs: &[&Spec], local: &str) -> Model {
    let backups: Vec<Vec<&str>> = specs
        .iter()
        .map(|s| s.backups.iter().map(String::as_str).collect())
        .collect();
    let sites: Vec<LinkedSite<'_>> = specs
        .iter()
        .zip(&backups)
        .map(|(s, backups)| LinkedSite {
            name: &s.name,
            ip: s.ip,
            parent: s.parent.as_deref(),
            backups,
        })
        .collect();
    let mut b = ModelBuilder::new();
    b.add_linked_sites(&sites);
    b.set_local(local);
    b.build()
}

/// What `site` has in its configuration: everything for a parent or a mesh
/// member; only itself and its parent (without backup list, which "can be done
/// only on the parent site") for a child.
fn config_for(specs: &[Spec], site: &str) -> Model {
    let me = specs.iter().find(|s| s.name == site).unwrap();
    match &me.parent {
        None => model_of(&specs.iter().collect::<Vec<_>>(), site),
        Some(p) => {
            let mut parent = specs.iter().find(|s| &s.name == p).unwrap().clone();
            parent.backups.clear();
            model_of(&[me, &parent], site)
        }
    }
}

/// Seed 001: SiteP1..3 (10.0.0.1..3), child_site1..3 of P1..3, backups
/// P1: [P2, P3], P2: [P3, P1], P3: [P1, P2].
fn seed001() -> Vec<Spec> {
    vec![
        spec("SiteP1", "10.0.0.1", None, &["SiteP2", "SiteP3"]),
        spec("SiteP2", "10.0.0.2", None, &["SiteP3", "SiteP1"]),
        spec("SiteP3", "10.0.0.3", None, &["SiteP1", "SiteP2"]),
        spec("child_site1", "10.0.1.1", Some("SiteP1"), &[]),
        spec("child_site2", "10.0.1.2", Some("SiteP2"), &[]),
        spec("child_site3", "10.0.1.3", Some("SiteP3"), &[]),
    ]
}

/// 32 parents (P00..P31, 10.0.0.1..32), 1024 children (C0000..C1023, child j
/// of parent j % 32), backups of Pi: [P(i+1), P(i+2)].
fn scale() -> Vec<Spec> {
    let p = |i: usize| format!("P{:02}", i % 32);
    let mut v: Vec<Spec> = (0..32)
        .map(|i| Spec {
            name: p(i),
            ip: format!("10.0.0.{}", i + 1).parse().unwrap(),
            parent: None,
            backups: vec![p(i + 1), p(i + 2)],
        })
        .collect();
    for j in 0..1024 {
        v.push(Spec {
            name: format!("C{j:04}"),
            ip: format!("10.1.{}.{}", j / 256, j % 256).parse().unwrap(),
            parent: Some(p(j % 32)),
            backups: vec![],
        });
    }
    v
}

// ---------------------------------------------------------------------------
// The simulator
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Offer {
    from: String,
    to: String,
    for_parent: String,
    answer: Accept,
}

struct Sim {
    specs: Vec<Spec>,
    names: Vec<String>,
    idx: HashMap<String, usize>,
    nodes: Vec<Topology>,
    /// Cut links (unordered pairs) and isolated sites (every link cut).
    cut: HashSet<(usize, usize)>,
    isolated: HashSet<usize>,
    /// Established MEP sessions (unordered pairs).
    conns: BTreeSet<(usize, usize)>,
    /// (observer, peer): the observer's driver gave up on a link it could not
    /// bring up (the keepalive timeout) and reported it DOWN.
    reported_down: HashSet<(usize, usize)>,
    /// Every adoption offer (and the original parents' connects) since the
    /// last `settle`.
    offers: Vec<Offer>,
}

fn pair(a: usize, b: usize) -> (usize, usize) {
    (a.min(b), a.max(b))
}

impl Sim {
    fn new(specs: Vec<Spec>) -> Sim {
        let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
        let idx = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.to_ascii_lowercase(), i))
            .collect();
        let nodes = names
            .iter()
            .map(|n| Topology::new(&config_for(&specs, n)).unwrap())
            .collect();
        Sim {
            specs,
            names,
            idx,
            nodes,
            cut: HashSet::new(),
            isolated: HashSet::new(),
            conns: BTreeSet::new(),
            reported_down: HashSet::new(),
            offers: Vec::new(),
        }
    }

    fn i(&self, name: &str) -> usize {
        self.idx[&name.to_ascii_lowercase()]
    }

    fn node(&self, name: &str) -> &Topology {
        &self.nodes[self.i(name)]
    }

    fn is_cut(&self, a: usize, b: usize) -> bool {
        self.cut.contains(&pair(a, b)) || self.isolated.contains(&a) || self.isolated.contains(&b)
    }

    fn cut(&mut self, a: &str, b: &str) {
        let p = pair(self.i(a), self.i(b));
        self.cut.insert(p);
    }

    fn heal(&mut self, a: &str, b: &str) {
        let p = pair(self.i(a), self.i(b));
        self.cut.remove(&p);
    }

    fn heal_all(&mut self) {
        self.cut.clear();
        self.isolated.clear();
    }

    fn isolate(&mut self, a: &str) {
        let a = self.i(a);
        self.isolated.insert(a);
    }

    fn rejoin(&mut self, a: &str) {
        let a = self.i(a);
        self.isolated.remove(&a);
    }

    /// The process of `name` restarts with its configuration and no state.
    /// Call it while the site is isolated (its sessions are gone).
    fn restart(&mut self, name: &str) {
        let a = self.i(name);
        assert!(self.conns.iter().all(|&(x, y)| x != a && y != a));
        self.nodes[a] = Topology::new(&config_for(&self.specs, name)).unwrap();
        self.reported_down.retain(|&(o, _)| o != a);
    }

    fn connect(&mut self, a: usize, b: usize) {
        self.conns.insert(pair(a, b));
        let (na, nb) = (self.names[a].clone(), self.names[b].clone());
        self.nodes[a].peer_up(&nb);
        self.nodes[b].peer_up(&na);
        self.reported_down.remove(&(a, b));
        self.reported_down.remove(&(b, a));
    }

    fn link_peers(&self, a: usize) -> HashSet<usize> {
        self.nodes[a]
            .links()
            .iter()
            .map(|l| self.i(&l.peer.name))
            .collect()
    }

    /// One round of the driver on every site. Returns whether anything
    /// changed (a session came up or went down, a peer was judged DOWN).
    fn step(&mut self) -> bool {
        let mut changed = false;

        // 1. Sessions end: a cut link (keepalive timeout on both ends), or a
        //    side that no longer lists the other in links() closes it.
        loop {
            let wants: Vec<HashSet<usize>> =
                (0..self.nodes.len()).map(|a| self.link_peers(a)).collect();
            let drop: Vec<(usize, usize)> = self
                .conns
                .iter()
                .copied()
                .filter(|&(a, b)| {
                    self.is_cut(a, b) || !wants[a].contains(&b) || !wants[b].contains(&a)
                })
                .collect();
            if drop.is_empty() {
                break;
            }
            for (a, b) in drop {
                self.conns.remove(&(a, b));
                let (na, nb) = (self.names[a].clone(), self.names[b].clone());
                self.nodes[a].peer_down(&nb);
                self.nodes[b].peer_down(&na);
                self.reported_down.insert((a, b));
                self.reported_down.insert((b, a));
                changed = true;
            }
        }

        // 2. Links that cannot come up are reported DOWN (once).
        for a in 0..self.nodes.len() {
            for b in self.link_peers(a) {
                if !self.conns.contains(&pair(a, b))
                    && self.is_cut(a, b)
                    && self.reported_down.insert((a, b))
                {
                    let nb = self.names[b].clone();
                    self.nodes[a].peer_down(&nb);
                    changed = true;
                }
            }
        }

        // 3. Sessions start: peers first, then parents to their children,
        //    then adoptions (as a real driver would see them, peers being
        //    long-lived).
        for kind in [LinkKind::Peer, LinkKind::ToChild, LinkKind::Adopted] {
            for a in 0..self.nodes.len() {
                let links = self.nodes[a].links();
                let adoptions = self.nodes[a].adoptions();
                for l in links.into_iter().filter(|l| l.kind == kind && l.initiate) {
                    let b = self.i(&l.peer.name);
                    if self.conns.contains(&pair(a, b)) || self.is_cut(a, b) {
                        continue;
                    }
                    let (na, nb) = (self.names[a].clone(), self.names[b].clone());
                    match kind {
                        LinkKind::Peer => {
                            let back = self.nodes[b]
                                .links()
                                .into_iter()
                                .find(|x| x.peer.name == na)
                                .unwrap_or_else(|| panic!("{nb} has no link to {na}"));
                            assert_eq!(back.kind, LinkKind::Peer);
                            assert!(!back.initiate, "{na} and {nb} both initiate");
                            self.connect(a, b);
                            let (la, lb) = (
                                self.nodes[a].own_backup_list(),
                                self.nodes[b].own_backup_list(),
                            );
                            self.nodes[b].set_backup_list(&na, la);
                            self.nodes[a].set_backup_list(&nb, lb);
                            changed = true;
                        }
                        LinkKind::ToChild | LinkKind::Adopted => {
                            assert_eq!(self.nodes[b].role(), Role::Child);
                            let for_parent = if kind == LinkKind::ToChild {
                                na.clone()
                            } else {
                                adoptions
                                    .iter()
                                    .find(|(c, _)| c.name == nb)
                                    .expect("an Adopted link is an adoption")
                                    .1
                                    .clone()
                            };
                            // The offer carries the list of the parent it acts for.
                            let list = self.nodes[a].backup_list(&for_parent);
                            self.nodes[b].set_backup_list(&for_parent, list);
                            let answer = self.nodes[b].offer_parent(&na, &for_parent);
                            self.offers.push(Offer {
                                from: na.clone(),
                                to: nb.clone(),
                                for_parent,
                                answer: answer.clone(),
                            });
                            if answer == Accept::Yes {
                                self.connect(a, b);
                                if kind == LinkKind::Adopted {
                                    self.nodes[a].adopted(&nb, true);
                                }
                                changed = true;
                            } else if kind == LinkKind::Adopted {
                                self.nodes[a].adopted(&nb, false);
                            }
                        }
                        LinkKind::ToParent => panic!("{na}: a child never initiates"),
                    }
                }
            }
        }
        changed
    }

    /// Steps until nothing changes; offers are recorded from here on.
    fn settle(&mut self) {
        self.offers.clear();
        for _ in 0..50 {
            if !self.step() {
                self.check_consistent();
                return;
            }
        }
        panic!("the simulation does not settle");
    }

    fn current(&self, child: &str) -> Option<&str> {
        self.node(child).current_parent()
    }

    fn adopts(&self, parent: &str) -> Vec<(String, String)> {
        self.node(parent)
            .adoptions()
            .into_iter()
            .map(|(c, p)| (c.name, p))
            .collect()
    }

    fn offers_from(&self, from: &str, to: &str) -> Vec<&Offer> {
        self.offers
            .iter()
            .filter(|o| o.from == from && o.to == to)
            .collect()
    }

    /// What `viewer` shows as the current parent of `child` in /v1/sites.
    fn believed(&self, viewer: &str, child: &str) -> Option<String> {
        self.node(viewer)
            .view()
            .into_iter()
            .find(|v| v.name == child)
            .unwrap()
            .current_parent
    }

    /// Invariants that hold in every settled state.
    fn check_consistent(&self) {
        for (a, t) in self.nodes.iter().enumerate() {
            let links = t.links();
            let adoptions = t.adoptions();
            // Adopted links are exactly the adoptions.
            let adopted: BTreeSet<String> = links
                .iter()
                .filter(|l| l.kind == LinkKind::Adopted)
                .map(|l| l.peer.name.clone())
                .collect();
            let adopting: BTreeSet<String> =
                adoptions.iter().map(|(c, _)| c.name.clone()).collect();
            assert_eq!(adopted, adopting, "{}", self.names[a]);
            // An adopted child is never also my own child, and no site twice.
            let mut seen = HashSet::new();
            for l in &links {
                assert!(seen.insert(l.peer.name.clone()), "{}: {l:?}", self.names[a]);
                let b = self.i(&l.peer.name);
                match l.kind {
                    LinkKind::Peer => {
                        let back = self.nodes[b]
                            .links()
                            .into_iter()
                            .find(|x| x.peer.name == self.names[a])
                            .unwrap();
                        assert_eq!(back.kind, LinkKind::Peer);
                        assert_ne!(l.initiate, back.initiate);
                        assert_eq!(l.initiate, self.specs[a].ip < self.specs[b].ip);
                    }
                    LinkKind::ToChild => {
                        assert!(l.initiate);
                        assert_eq!(
                            self.specs[b].parent.as_deref(),
                            Some(self.names[a].as_str())
                        );
                    }
                    LinkKind::Adopted => {
                        assert!(l.initiate);
                        assert_ne!(
                            self.specs[b].parent.as_deref(),
                            Some(self.names[a].as_str())
                        );
                    }
                    LinkKind::ToParent => assert!(!l.initiate),
                }
            }
            // A connected child has exactly its current parent's session
            // (plus, possibly, its original parent's while adopted: never).
            if t.role() == Role::Child {
                let parents: Vec<usize> = self
                    .conns
                    .iter()
                    .filter_map(|&(x, y)| {
                        if x == a {
                            Some(y)
                        } else if y == a {
                            Some(x)
                        } else {
                            None
                        }
                    })
                    .collect();
                match t.current_parent() {
                    Some(p) => assert_eq!(parents, vec![self.i(p)], "{}", self.names[a]),
                    None => assert!(parents.is_empty(), "{}", self.names[a]),
                }
            }
        }
    }
}

fn some(s: &str) -> Option<&str> {
    Some(s)
}

// ---------------------------------------------------------------------------
// Seed 001
// ---------------------------------------------------------------------------

#[test]
fn steady_state_every_child_with_its_parent() {
    let mut sim = Sim::new(seed001());
    sim.settle();
    for (c, p) in [
        ("child_site1", "SiteP1"),
        ("child_site2", "SiteP2"),
        ("child_site3", "SiteP3"),
    ] {
        assert_eq!(sim.current(c), some(p));
    }
    for p in ["SiteP1", "SiteP2", "SiteP3"] {
        assert!(sim.adopts(p).is_empty());
        assert_eq!(sim.node(p).role(), Role::Parent);
    }
    // 3 parent-parent sessions and 3 parent-child sessions.
    assert_eq!(sim.conns.len(), 6);
    // Children learned their parent's backup list over MEP.
    let list: Vec<String> = sim
        .node("child_site1")
        .backup_list("SiteP1")
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(list, ["SiteP2", "SiteP3"]);
    // Only the original parents connected to their children: no adoption.
    assert_eq!(sim.offers.len(), 3);
    for o in &sim.offers {
        let to = &sim.specs[sim.i(&o.to)];
        assert_eq!(to.parent.as_deref(), Some(o.from.as_str()));
        assert_eq!(
            (o.for_parent.as_str(), &o.answer),
            (o.from.as_str(), &Accept::Yes)
        );
    }
}

#[test]
fn who_initiates_in_seed_001() {
    let sim = Sim::new(seed001());
    let p1 = sim.node("SiteP1").links();
    let by = |links: &[sextant_mep::topology::Link], n: &str| {
        links.iter().find(|l| l.peer.name == n).cloned().unwrap()
    };
    // Parent-parent: the lower IP initiates.
    assert!(by(&p1, "SiteP2").initiate);
    assert!(by(&p1, "SiteP3").initiate);
    assert!(!by(&sim.node("SiteP3").links(), "SiteP1").initiate);
    // Parent to child: the parent initiates, although the child's IP is
    // higher or lower ("the parent sites initiate connections to the child
    // sites, and not the other way around").
    let l = by(&p1, "child_site1");
    assert_eq!((l.kind, l.initiate), (LinkKind::ToChild, true));
    let c1 = sim.node("child_site1").links();
    assert_eq!(
        c1.len(),
        1,
        "a child site communicates only with its parent site"
    );
    assert_eq!(
        (c1[0].peer.name.as_str(), c1[0].kind, c1[0].initiate),
        ("SiteP1", LinkKind::ToParent, false)
    );
    // P1 has no link to other parents' children.
    assert!(p1.iter().all(|l| l.peer.name != "child_site2"));
}

/// Scenario 1: SiteP1 goes DOWN. SiteP2 is higher in the backup list of
/// SiteP1 and connects to child_site1, which accepts; SiteP3 assumes
/// child_site1 is now SiteP2's. When SiteP1 is up again, its request takes
/// precedence and child_site1 migrates back to SiteP1.
#[test]
fn scenario_1_parent_down_and_back() {
    for restart in [false, true] {
        let mut sim = Sim::new(seed001());
        sim.settle();

        sim.isolate("SiteP1");
        sim.settle();
        assert_eq!(
            sim.adopts("SiteP2"),
            [("child_site1".to_owned(), "SiteP1".to_owned())]
        );
        assert!(sim.adopts("SiteP3").is_empty(), "SiteP3 sees SiteP2 UP");
        assert!(sim.offers_from("SiteP3", "child_site1").is_empty());
        assert_eq!(sim.current("child_site1"), some("SiteP2"));
        let offer = &sim.offers_from("SiteP2", "child_site1")[0];
        assert_eq!(
            (offer.for_parent.as_str(), &offer.answer),
            ("SiteP1", &Accept::Yes)
        );
        // /v1/sites on each remaining parent.
        assert_eq!(
            sim.believed("SiteP2", "child_site1").as_deref(),
            some("SiteP2")
        );
        assert_eq!(
            sim.believed("SiteP3", "child_site1").as_deref(),
            some("SiteP2")
        );
        let v = sim.node("SiteP2").view();
        let c1 = v.iter().find(|v| v.name == "child_site1").unwrap();
        assert_eq!(c1.configured_parent.as_deref(), some("SiteP1"));
        assert_eq!(c1.mep_up, Some(true));
        let p1 = v.iter().find(|v| v.name == "SiteP1").unwrap();
        assert_eq!((p1.kind, p1.mep_up), ("parent", Some(false)));
        // The other children are untouched.
        assert_eq!(sim.current("child_site2"), some("SiteP2"));
        assert_eq!(sim.current("child_site3"), some("SiteP3"));

        if restart {
            sim.restart("SiteP1");
        }
        sim.rejoin("SiteP1");
        sim.settle();
        assert_eq!(sim.current("child_site1"), some("SiteP1"));
        assert!(sim.adopts("SiteP2").is_empty(), "the adoption ended");
        assert_eq!(
            sim.believed("SiteP2", "child_site1").as_deref(),
            some("SiteP1")
        );
        assert_eq!(
            sim.believed("SiteP1", "child_site1").as_deref(),
            some("SiteP1")
        );
        assert_eq!(sim.conns.len(), 6);
    }
}

/// Scenario 2: only the MEP connection between SiteP1 and SiteP2 is DOWN.
/// child_site1 rejects the connection request from SiteP2, because its
/// parent, SiteP1, is still UP.
#[test]
fn scenario_2_only_p1_p2_down() {
    let mut sim = Sim::new(seed001());
    sim.settle();
    sim.cut("SiteP1", "SiteP2");
    sim.settle();

    assert_eq!(
        sim.adopts("SiteP2"),
        [("child_site1".to_owned(), "SiteP1".to_owned())],
        "SiteP2 sees SiteP1 DOWN and is first in its backup list"
    );
    let offers = sim.offers_from("SiteP2", "child_site1");
    assert!(!offers.is_empty());
    for o in offers {
        let Accept::No(reason) = &o.answer else {
            panic!("child_site1 accepted SiteP2")
        };
        assert!(reason.contains("SiteP1 is UP"), "{reason}");
    }
    assert_eq!(sim.current("child_site1"), some("SiteP1"));
    // SiteP1 sees SiteP2 DOWN, but SiteP3 (first in SiteP2's list) is UP:
    // SiteP1 does not touch child_site2. SiteP3 sees everyone UP.
    assert!(sim.adopts("SiteP1").is_empty());
    assert!(sim.adopts("SiteP3").is_empty());
    assert_eq!(sim.current("child_site2"), some("SiteP2"));
    // SiteP2 does not claim the child it was refused.
    assert_eq!(sim.believed("SiteP2", "child_site1"), None);
    assert_eq!(
        sim.believed("SiteP3", "child_site1").as_deref(),
        some("SiteP1")
    );

    sim.heal("SiteP1", "SiteP2");
    sim.settle();
    assert!(sim.adopts("SiteP2").is_empty());
    assert!(
        sim.offers
            .iter()
            .all(|o| o.from != "SiteP2" || o.to != "child_site1")
    );
}

/// Scenario 3: SiteP3 and child_site1 see SiteP1 DOWN, and SiteP3–SiteP2 is
/// DOWN; SiteP2 still sees SiteP1 UP. SiteP2 takes no action; SiteP3 finds
/// SiteP2 (more preferred) DOWN and connects to child_site1, which accepts.
/// Then SiteP1–SiteP2 goes DOWN: SiteP2 finds itself the most preferred
/// backup and connects; child_site1 migrates from SiteP3 to SiteP2.
#[test]
fn scenario_3_partial_partition() {
    let mut sim = Sim::new(seed001());
    sim.settle();
    sim.cut("SiteP1", "SiteP3");
    sim.cut("SiteP1", "child_site1");
    sim.cut("SiteP3", "SiteP2");
    sim.settle();

    assert_eq!(sim.node("SiteP2").peer_state("SiteP1"), PeerState::Up);
    assert_eq!(sim.node("SiteP3").peer_state("SiteP1"), PeerState::Down);
    assert_eq!(
        sim.node("child_site1").peer_state("SiteP1"),
        PeerState::Down
    );
    assert!(sim.adopts("SiteP2").is_empty(), "SiteP2 takes no action");
    assert!(sim.offers.iter().all(|o| o.from != "SiteP2"));
    // SiteP3 sees SiteP1 and SiteP2 DOWN: it takes child_site1 (SiteP2, more
    // preferred, is DOWN from its view) and, being first in SiteP2's list,
    // offers itself to child_site2 too, which refuses: its parent is UP.
    assert_eq!(
        sim.adopts("SiteP3"),
        [
            ("child_site1".to_owned(), "SiteP1".to_owned()),
            ("child_site2".to_owned(), "SiteP2".to_owned())
        ]
    );
    assert_eq!(sim.current("child_site1"), some("SiteP3"));
    assert_eq!(sim.current("child_site2"), some("SiteP2"));
    assert!(
        sim.offers_from("SiteP3", "child_site2")
            .iter()
            .all(|o| matches!(&o.answer, Accept::No(r) if r.contains("SiteP2 is UP")))
    );
    assert_eq!(
        sim.believed("SiteP3", "child_site1").as_deref(),
        some("SiteP3")
    );
    // SiteP2 sees SiteP1 UP and believes the child is still SiteP1's.
    assert_eq!(
        sim.believed("SiteP2", "child_site1").as_deref(),
        some("SiteP1")
    );
    // SiteP1 sees SiteP3 DOWN and is first in SiteP3's list: it offers
    // itself to child_site3, which refuses (its parent is UP) as in scenario 2.
    assert_eq!(sim.current("child_site3"), some("SiteP3"));
    assert!(
        sim.offers_from("SiteP1", "child_site3")
            .iter()
            .all(|o| matches!(&o.answer, Accept::No(r) if r.contains("SiteP3 is UP")))
    );

    sim.cut("SiteP1", "SiteP2");
    sim.settle();
    assert_eq!(sim.node("SiteP2").peer_state("SiteP1"), PeerState::Down);
    // SiteP2 is first in SiteP1's list. It also sees SiteP3 DOWN, and SiteP1
    // (first in SiteP3's list) DOWN, so it offers itself to child_site3,
    // which refuses: its parent SiteP3 is UP.
    assert_eq!(
        sim.adopts("SiteP2"),
        [
            ("child_site1".to_owned(), "SiteP1".to_owned()),
            ("child_site3".to_owned(), "SiteP3".to_owned())
        ]
    );
    assert_eq!(sim.current("child_site3"), some("SiteP3"));
    assert_eq!(sim.current("child_site1"), some("SiteP2"));
    let accepted: Vec<_> = sim
        .offers_from("SiteP2", "child_site1")
        .into_iter()
        .filter(|o| o.answer == Accept::Yes)
        .collect();
    assert_eq!(accepted.len(), 1);
    // SiteP3 still sees SiteP1 and SiteP2 DOWN and keeps offering; the
    // child refuses, its current parent being more preferred.
    let p3 = sim.offers_from("SiteP3", "child_site1");
    assert!(!p3.is_empty());
    for o in p3 {
        let Accept::No(reason) = &o.answer else {
            panic!("child_site1 went back to SiteP3")
        };
        assert!(reason.contains("SiteP2 is more preferred"), "{reason}");
    }
    assert_eq!(
        sim.believed("SiteP2", "child_site1").as_deref(),
        some("SiteP2")
    );
    assert_eq!(sim.believed("SiteP3", "child_site1"), None);

    // Everything heals: the original parent wins.
    sim.heal_all();
    sim.settle();
    assert_eq!(sim.current("child_site1"), some("SiteP1"));
    for p in ["SiteP1", "SiteP2", "SiteP3"] {
        assert!(sim.adopts(p).is_empty());
    }
}

/// The original parent returning always wins, even while other parents
/// still see it DOWN and would keep the child.
#[test]
fn original_parent_always_wins() {
    let mut sim = Sim::new(seed001());
    sim.settle();
    sim.isolate("SiteP1");
    sim.settle();
    assert_eq!(sim.current("child_site1"), some("SiteP2"));

    // SiteP1 comes back, but reaches only its child.
    sim.rejoin("SiteP1");
    sim.cut("SiteP1", "SiteP2");
    sim.cut("SiteP1", "SiteP3");
    sim.settle();
    assert_eq!(sim.current("child_site1"), some("SiteP1"));
    // SiteP2 still sees SiteP1 DOWN and keeps trying; refused (scenario 2).
    assert!(!sim.adopts("SiteP2").is_empty());
    assert!(
        sim.offers_from("SiteP2", "child_site1")
            .iter()
            .all(|o| o.answer != Accept::Yes)
    );

    // Directly: whatever the state, the original parent's offer is accepted.
    let specs = seed001();
    let mut child = Topology::new(&config_for(&specs, "child_site1")).unwrap();
    assert_eq!(child.offer_parent("SiteP1", "SiteP1"), Accept::Yes);
    child.peer_down("SiteP1");
    child.set_backup_list("SiteP1", refs(&specs, &["SiteP2", "SiteP3"]));
    assert_eq!(child.offer_parent("SiteP3", "SiteP1"), Accept::Yes);
    assert_eq!(child.offer_parent("SiteP2", "SiteP1"), Accept::Yes);
    assert_eq!(child.current_parent(), some("SiteP2"));
    assert_eq!(child.links().len(), 2);
    // Even before the child has seen it UP again, and with any claim.
    assert_eq!(child.offer_parent("sitep1", "whatever"), Accept::Yes);
    assert_eq!(child.current_parent(), some("SiteP1"));
    assert_eq!(
        child.links().len(),
        1,
        "the adopter's session is to be closed"
    );
}

// ---------------------------------------------------------------------------
// The child's decision, rule by rule
// ---------------------------------------------------------------------------

fn refs(specs: &[Spec], names: &[&str]) -> Vec<SiteRef> {
    names
        .iter()
        .map(|n| {
            let s = specs.iter().find(|s| s.name == *n).unwrap();
            SiteRef {
                name: s.name.clone(),
                ip: s.ip,
            }
        })
        .collect()
}

fn no(a: Accept) -> String {
    match a {
        Accept::No(r) => r,
        Accept::Yes => panic!("accepted"),
    }
}

#[test]
fn child_rejections_say_why() {
    let specs = seed001();
    let mut c = Topology::new(&config_for(&specs, "child_site1")).unwrap();
    assert_eq!(c.role(), Role::Child);
    assert!(c.own_backup_list().is_empty());
    assert!(c.adoptions().is_empty());

    // Parent never heard from: not known to be DOWN.
    let r = no(c.offer_parent("SiteP2", "SiteP1"));
    assert!(r.contains("not been reached yet"), "{r}");
    // Parent UP.
    c.peer_up("SiteP1");
    assert_eq!(c.current_parent(), some("SiteP1"));
    let r = no(c.offer_parent("SiteP2", "SiteP1"));
    assert_eq!(r, "my parent SiteP1 is UP");
    // Parent DOWN, but no list known.
    c.peer_down("SiteP1");
    assert_eq!(c.current_parent(), None);
    let r = no(c.offer_parent("SiteP2", "SiteP1"));
    assert!(r.contains("no backup parent list of SiteP1"), "{r}");
    // Acting for someone else.
    c.set_backup_list("SiteP1", refs(&specs, &["SiteP2", "SiteP3"]));
    let r = no(c.offer_parent("SiteP2", "SiteP3"));
    assert!(r.contains("but my parent is SiteP1"), "{r}");
    // Not in the list.
    let r = no(c.offer_parent("child_site2", "SiteP1"));
    assert!(
        r.contains("not in the backup parent list of SiteP1 (SiteP2, SiteP3)"),
        "{r}"
    );
    // Learned sites show in the view, with their IPs, as parents.
    let v = c.view();
    let p3 = v.iter().find(|v| v.name == "SiteP3").unwrap();
    assert_eq!((p3.kind, p3.ip), ("parent", "10.0.0.3".parse().unwrap()));
    // Least preferred first: accepted; then the more preferred: accepted;
    // then the less preferred again: refused.
    assert_eq!(c.offer_parent("SiteP3", "SiteP1"), Accept::Yes);
    assert_eq!(c.offer_parent("SiteP2", "SiteP1"), Accept::Yes);
    let r = no(c.offer_parent("SiteP3", "SiteP1"));
    assert!(
        r.contains("my current parent SiteP2 is more preferred than SiteP3"),
        "{r}"
    );
    // The same adopter again (a reconnect): accepted.
    assert_eq!(c.offer_parent("SiteP2", "SiteP1"), Accept::Yes);
    // The adopter is lost: the less preferred one is welcome.
    c.peer_down("SiteP2");
    assert_eq!(c.current_parent(), None);
    assert_eq!(c.offer_parent("SiteP3", "SiteP1"), Accept::Yes);
    let me = c
        .view()
        .into_iter()
        .find(|v| v.name == "child_site1")
        .unwrap();
    assert_eq!(
        (
            me.kind,
            me.configured_parent.as_deref(),
            me.current_parent.as_deref(),
            me.mep_up
        ),
        ("child", some("SiteP1"), some("SiteP3"), None)
    );
    // A parent is not a child.
    let mut p = Topology::new(&config_for(&specs, "SiteP1")).unwrap();
    assert!(no(p.offer_parent("SiteP2", "SiteP1")).contains("not a child"));
}

#[test]
fn backup_lists_received_are_cleaned() {
    let specs = seed001();
    let mut c = Topology::new(&config_for(&specs, "child_site1")).unwrap();
    let mut list = refs(&specs, &["SiteP1", "SiteP2", "SiteP2", "SiteP3"]);
    for i in 0..6 {
        list.push(SiteRef {
            name: format!("X{i}"),
            ip: format!("10.9.9.{i}").parse().unwrap(),
        });
    }
    c.set_backup_list("sitep1", list);
    let got: Vec<String> = c
        .backup_list("SiteP1")
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(got, ["SiteP2", "SiteP3", "X0", "X1", "X2"]);
    assert_eq!(got.len(), MAX_BACKUP_PARENTS);
    // A parent's own list is its configuration.
    let mut p = Topology::new(&config_for(&specs, "SiteP1")).unwrap();
    p.set_backup_list("SiteP1", vec![]);
    let own: Vec<String> = p.own_backup_list().into_iter().map(|s| s.name).collect();
    assert_eq!(own, ["SiteP2", "SiteP3"]);
    // unset on a peer: an empty list clears it; SiteP1 then never adopts
    // for SiteP2 (but still for SiteP3, whose list starts with SiteP1).
    p.set_backup_list("SiteP2", vec![]);
    p.peer_down("SiteP2");
    p.peer_down("SiteP3");
    let a: Vec<String> = p.adoptions().into_iter().map(|(c, _)| c.name).collect();
    assert_eq!(a, ["child_site3"]);
}

// ---------------------------------------------------------------------------
// Takeover decisions, cold start
// ---------------------------------------------------------------------------

#[test]
fn cold_start_adopts_nothing_until_a_peer_is_judged_down() {
    let specs = seed001();
    let mut p2 = Topology::new(&config_for(&specs, "SiteP2")).unwrap();
    assert!(p2.adoptions().is_empty(), "nobody is known DOWN yet");
    assert!(p2.links().iter().all(|l| l.kind != LinkKind::Adopted));
    p2.peer_up("SiteP3");
    p2.mark_unreached_down();
    assert_eq!(p2.peer_state("SiteP1"), PeerState::Down);
    assert_eq!(p2.peer_state("SiteP3"), PeerState::Up);
    // SiteP1 DOWN: SiteP2 is first in its list. SiteP3 UP: no action for it.
    let a: Vec<(String, String)> = p2
        .adoptions()
        .into_iter()
        .map(|(c, p)| (c.name, p))
        .collect();
    assert_eq!(a, [("child_site1".to_owned(), "SiteP1".to_owned())]);
    let l = p2
        .links()
        .into_iter()
        .find(|l| l.peer.name == "child_site1")
        .unwrap();
    assert_eq!((l.kind, l.initiate), (LinkKind::Adopted, true));
    assert_eq!(l.peer.ip, "10.0.1.1".parse::<IpAddr>().unwrap());
    // Offered, not yet accepted: not claimed in the view.
    let believed = |t: &Topology| {
        t.view()
            .into_iter()
            .find(|v| v.name == "child_site1")
            .unwrap()
            .current_parent
    };
    assert_eq!(believed(&p2), None);
    p2.adopted("child_site1", true);
    assert_eq!(believed(&p2).as_deref(), some("SiteP2"));
    p2.adopted("child_site1", false);
    assert_eq!(believed(&p2), None);
    p2.adopted("child_site1", true);
    // SiteP1 back: the adoption ends.
    p2.peer_up("SiteP1");
    assert!(p2.adoptions().is_empty());
    assert_eq!(believed(&p2).as_deref(), some("SiteP1"));
    p2.peer_down("SiteP1");
    assert_eq!(believed(&p2), None, "a new adoption must be accepted again");
}

#[test]
fn a_backup_is_skipped_only_when_unreachable() {
    let specs = seed001();
    let mut p3 = Topology::new(&config_for(&specs, "SiteP3")).unwrap();
    p3.peer_down("SiteP1");
    // SiteP2 never reached: not reachable, so SiteP3 decides.
    assert_eq!(p3.adoptions().len(), 1);
    p3.peer_up("SiteP2");
    assert!(p3.adoptions().is_empty());
    let c1 = p3
        .view()
        .into_iter()
        .find(|v| v.name == "child_site1")
        .unwrap();
    assert_eq!(
        c1.current_parent.as_deref(),
        some("SiteP2"),
        "SiteP3 assumes"
    );
    // Names are case-insensitive. SiteP2 DOWN too: SiteP3 is then first
    // reachable in SiteP1's list and first in SiteP2's.
    p3.peer_down("SITEP2");
    let a: Vec<(String, String)> = p3
        .adoptions()
        .into_iter()
        .map(|(c, p)| (c.name, p))
        .collect();
    assert_eq!(
        a,
        [
            ("child_site1".to_owned(), "SiteP1".to_owned()),
            ("child_site2".to_owned(), "SiteP2".to_owned())
        ]
    );
}

// ---------------------------------------------------------------------------
// Flat mesh
// ---------------------------------------------------------------------------

#[test]
fn flat_mesh_one_initiator_per_pair() {
    // Numeric, not textual, order (10.0.0.10 > 10.0.0.9); IPv4 below IPv6.
    let specs = vec![
        spec("east", "10.0.0.10", None, &[]),
        spec("west", "10.0.0.9", None, &[]),
        spec("v6", "2001:db8::1", None, &[]),
        spec("south", "192.168.1.1", None, &[]),
    ];
    let mut sim = Sim::new(specs.clone());
    for n in ["east", "west", "v6", "south"] {
        let t = sim.node(n);
        assert_eq!(t.role(), Role::Flat);
        assert_eq!(t.links().len(), 3);
        assert!(t.links().iter().all(|l| l.kind == LinkKind::Peer));
        assert!(t.view().iter().all(|v| v.kind == "flat"));
    }
    let mut initiators = HashMap::new();
    for n in ["east", "west", "v6", "south"] {
        for l in sim.node(n).links().into_iter().filter(|l| l.initiate) {
            let mut k = [n.to_owned(), l.peer.name.clone()];
            k.sort();
            assert!(
                initiators.insert(k, n.to_owned()).is_none(),
                "two initiators"
            );
        }
    }
    assert_eq!(initiators.len(), 6, "every pair has one initiator");
    let lower = |n: &str| specs.iter().find(|s| s.name == n).unwrap().ip;
    for (k, who) in &initiators {
        let other = if k[0] == *who { &k[1] } else { &k[0] };
        assert!(lower(who) < lower(other), "{who} initiates to {other}");
    }
    assert_eq!(initiators[&["east".to_owned(), "west".to_owned()]], "west");
    assert!(initiators.values().all(|w| w != "v6"));
    sim.settle();
    assert_eq!(sim.conns.len(), 6);
    // A peer DOWN in a mesh adopts nothing.
    sim.isolate("east");
    sim.settle();
    assert!(sim.nodes.iter().all(|t| t.adoptions().is_empty()));
}

#[test]
fn same_ip_still_one_initiator() {
    let specs = [
        spec("b", "10.0.0.1", None, &[]),
        spec("a", "10.0.0.1", None, &[]),
    ];
    let r: Vec<&Spec> = specs.iter().collect();
    let a = Topology::new(&model_of(&r, "a")).unwrap();
    let b = Topology::new(&model_of(&r, "b")).unwrap();
    assert!(a.links()[0].initiate);
    assert!(!b.links()[0].initiate);
}

// ---------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------

#[test]
fn invalid_configurations_are_refused() {
    let err = |specs: &[Spec], local: &str, f: &dyn Fn(&mut Model)| {
        let mut m = model_of(&specs.iter().collect::<Vec<_>>(), local);
        f(&mut m);
        Topology::new(&m).unwrap_err()
    };
    let base = seed001();

    let e = err(&base, "SiteP1", &|m| m.local_site = None);
    assert_eq!(e, TopologyError::NoLocalSite);
    let e = err(&base, "SiteP1", &|m| m.local_site = Some(SiteId::new(99)));
    assert_eq!(e, TopologyError::BadLocalSite(SiteId::new(99)));

    // Six backups.
    let mut many = base.clone();
    for i in 4..=7 {
        many.push(spec(
            &format!("SiteP{i}"),
            &format!("10.0.0.{i}"),
            None,
            &[],
        ));
    }
    many[0].backups = ["SiteP2", "SiteP3", "SiteP4", "SiteP5", "SiteP6", "SiteP7"]
        .map(str::to_owned)
        .to_vec();
    let e = err(&many, "SiteP2", &|_| {}).to_string();
    assert_eq!(
        e,
        "site \"SiteP1\": backup parents: 6 given; at most 5 are allowed"
    );

    let e = err(&base, "SiteP2", &|m| {
        m.sites[SiteId::new(0)].backup_parents = vec![SiteId::new(3)]
    })
    .to_string();
    assert!(
        e.contains("\"child_site1\" is a child site; only parent sites can be backup parents"),
        "{e}"
    );
    let e = err(&base, "SiteP2", &|m| {
        m.sites[SiteId::new(0)].backup_parents = vec![SiteId::new(0)]
    })
    .to_string();
    assert!(e.contains("cannot be its own backup parent"), "{e}");
    let e = err(&base, "SiteP2", &|m| {
        m.sites[SiteId::new(0)].backup_parents = vec![SiteId::new(1), SiteId::new(1)]
    })
    .to_string();
    assert!(e.contains("\"SiteP2\" is listed twice"), "{e}");
    let e = err(&base, "SiteP2", &|m| {
        m.sites[SiteId::new(0)].backup_parents = vec![SiteId::new(42)]
    })
    .to_string();
    assert!(e.contains("index 42 is not a site"), "{e}");
    let e = err(&base, "SiteP2", &|m| {
        m.sites[SiteId::new(3)].backup_parents = vec![SiteId::new(1)]
    })
    .to_string();
    assert!(e.contains("only parent sites have backup parents"), "{e}");
    let e = err(&base, "SiteP2", &|m| {
        m.sites[SiteId::new(4)].parent = Some(SiteId::new(3))
    })
    .to_string();
    assert!(e.contains("is itself a child"), "{e}");
    let e = err(&base, "SiteP2", &|m| {
        m.sites[SiteId::new(4)].parent = Some(SiteId::new(4))
    })
    .to_string();
    assert!(e.contains("cannot be its own parent"), "{e}");
    let e = err(&base, "SiteP2", &|m| {
        m.sites[SiteId::new(5)].name = "CHILD_SITE1".into()
    });
    assert_eq!(e, TopologyError::DuplicateSite("CHILD_SITE1".into()));
}

// ---------------------------------------------------------------------------
// Scale: 32 parents, 1024 children
// ---------------------------------------------------------------------------

#[test]
fn scale_32_parents_1024_children() {
    let mut sim = Sim::new(scale());
    sim.settle();
    let parents: Vec<String> = (0..32).map(|i| format!("P{i:02}")).collect();
    let children_of = |p: usize| -> BTreeSet<String> {
        (0..1024)
            .filter(|j| j % 32 == p)
            .map(|j| format!("C{j:04}"))
            .collect()
    };
    for (i, p) in parents.iter().enumerate() {
        let links = sim.node(p).links();
        assert_eq!(
            links.iter().filter(|l| l.kind == LinkKind::Peer).count(),
            31
        );
        let own: BTreeSet<String> = links
            .iter()
            .filter(|l| l.kind == LinkKind::ToChild)
            .map(|l| l.peer.name.clone())
            .collect();
        assert_eq!(own, children_of(i));
        assert!(sim.adopts(p).is_empty());
    }
    assert_eq!(sim.conns.len(), 32 * 31 / 2 + 1024);
    for j in 0..1024 {
        assert_eq!(
            sim.current(&format!("C{j:04}")),
            Some(parents[j % 32].as_str())
        );
    }

    // P05 fails: its first backup P06 is reachable and takes all 32.
    sim.isolate("P05");
    sim.settle();
    let adopted: BTreeSet<String> = sim.adopts("P06").into_iter().map(|(c, _)| c).collect();
    assert_eq!(adopted, children_of(5));
    for c in &children_of(5) {
        assert_eq!(sim.current(c), some("P06"));
        // Every other parent agrees on where the child is.
        for p in parents.iter().filter(|p| *p != "P05") {
            assert_eq!(sim.believed(p, c).as_deref(), some("P06"), "{p} on {c}");
        }
    }
    for p in parents
        .iter()
        .filter(|p| !["P05", "P06"].contains(&p.as_str()))
    {
        assert!(sim.adopts(p).is_empty(), "{p}");
    }
    // Nothing else moved.
    for j in (0..1024).filter(|j| j % 32 != 5) {
        assert_eq!(
            sim.current(&format!("C{j:04}")),
            Some(parents[j % 32].as_str())
        );
    }

    // P06 fails too: P05's children go to P07 (P06 unreachable), and so
    // do P06's (P07 first in its list).
    sim.isolate("P06");
    sim.settle();
    let adopted: BTreeSet<String> = sim.adopts("P07").into_iter().map(|(c, _)| c).collect();
    let expect: BTreeSet<String> = children_of(5).into_iter().chain(children_of(6)).collect();
    assert_eq!(adopted, expect);
    for c in &expect {
        assert_eq!(sim.current(c), some("P07"));
    }

    // Both come back: every child is home, no adoption left.
    sim.rejoin("P05");
    sim.rejoin("P06");
    sim.settle();
    for j in 0..1024 {
        assert_eq!(
            sim.current(&format!("C{j:04}")),
            Some(parents[j % 32].as_str())
        );
    }
    assert!(parents.iter().all(|p| sim.adopts(p).is_empty()));
    assert_eq!(sim.conns.len(), 32 * 31 / 2 + 1024);
}
