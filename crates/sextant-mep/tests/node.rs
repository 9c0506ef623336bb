//! Seed 001 replayed on the pure node: several [`Node`]s joined by an
//! in-memory network that carries each connection through two real (pure)
//! [`Session`]s, with no sockets, tasks or timers. Sites fail by being
//! stopped (their peers see the connections close) and links by being cut
//! (both ends time out; dials across a cut fail until it heals). Time moves
//! only when the test says so, so the assertions are on events and
//! messages, never on timings.

mod support;

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use sextant_core::Model;
use sextant_mep::frame::DEFAULT_MAX_FRAME;
use sextant_mep::frame::FrameReader;
use sextant_mep::message::{
    BackupParents, ChildReport, ConfigOffer, ConfigOutcome, ConfigResult, ConfigUpdate,
    ConfigVersion, Keepalive, Kind, LdnsRtt, LineOp, Message, ServiceStates,
};
use sextant_mep::message::{Hello, Role};
use sextant_mep::node::{Attempt, ConnId, Input, Keys, Node, Output};
use sextant_mep::session::{Action, CloseReason, Session, SessionEvent, State};
use sextant_mep::state::StateFile;
use sextant_mep::sync::View;
use sextant_mep::{MepEvent, MepState};
use support::{Spec, model, report, site};

const KA: Duration = Duration::from_secs(3);

/// One end of a connection.
struct End {
    session: Session,
    peer: Option<(usize, ConnId)>,
    /// The dial that opened it (dialling side).
    token: Option<u64>,
}

/// A site of the network: its node (while running) and what it emitted.
struct SiteH {
    name: &'static str,
    model: Arc<Model>,
    node: Option<Node>,
    events: Vec<MepEvent>,
    /// The state file, as last written (kept across restarts).
    saved: Option<StateFile>,
}

// Messages are moved by value through the test network's queue; boxing
// them would only obscure the replay.
#[allow(clippy::large_enum_variant)]
enum Work {
    Dial(usize, u64),
    Deliver(usize, ConnId, Message),
    Eof(usize, ConnId),
}

/// A message that went over the network.
#[derive(Debug, Clone)]
struct Sent {
    from: &'static str,
    to: &'static str,
    msg: Message,
}

struct Net {
    sites: Vec<SiteH>,
    ends: HashMap<(usize, ConnId), End>,
    dials: HashMap<(usize, u64), Attempt>,
    /// Dials that failed or whose connection closed: tried again at the
    /// next [`Net::run`] round (the driver's backoff).
    waiting: BTreeSet<(usize, u64)>,
    queue: VecDeque<Work>,
    cuts: HashSet<(usize, usize)>,
    now: Duration,
    next_conn: ConnId,
    log: Vec<Sent>,
}

fn keys(conn: ConnId) -> Keys {
    let mut nonce = [0u8; 32];
    for (i, b) in nonce.iter_mut().enumerate() {
        *b = (conn as u8).wrapping_mul(31).wrapping_add(i as u8);
    }
    Keys {
        nonce,
        placeholder: [0xa5; 32],
    }
}

impl Net {
    /// Every site of `specs` with the configuration seed 001 gives it; none
    /// is running yet.
    fn new(specs: &[Spec]) -> Net {
        let sites = specs
            .iter()
            .map(|s| SiteH {
                name: s.name,
                model: Arc::new(model(specs, s.name, KA)),
                node: None,
                events: Vec::new(),
                saved: None,
            })
            .collect();
        Net {
            sites,
            ends: HashMap::new(),
            dials: HashMap::new(),
            waiting: BTreeSet::new(),
            queue: VecDeque::new(),
            cuts: HashSet::new(),
            now: Duration::from_secs(1),
            next_conn: 1,
            log: Vec::new(),
        }
    }

    /// Every site of `specs`, started, and run until settled.
    fn up(specs: &[Spec]) -> Net {
        let mut net = Net::new(specs);
        for s in specs {
            net.start(s.name);
        }
        net.run();
        net
    }

    fn idx(&self, name: &str) -> usize {
        self.sites
            .iter()
            .position(|s| s.name == name)
            .unwrap_or_else(|| panic!("no site {name}"))
    }

    fn node(&self, name: &str) -> &Node {
        self.sites[self.idx(name)].node.as_ref().expect("running")
    }

    fn events(&self, name: &str) -> &[MepEvent] {
        &self.sites[self.idx(name)].events
    }

    fn start(&mut self, name: &str) {
        let n = self.idx(name);
        let node = Node::new(self.sites[n].model.clone(), 1, DEFAULT_MAX_FRAME)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        self.sites[n].node = Some(node);
        let saved = self.sites[n].saved.clone();
        self.input(n, Input::Start { saved });
    }

    /// The site fails: its node is gone, its peers see its connections
    /// close.
    fn stop(&mut self, name: &str) {
        let n = self.idx(name);
        self.input(n, Input::Stop);
        self.sites[n].node = None;
        let mine: Vec<(usize, ConnId)> = self.ends.keys().filter(|k| k.0 == n).copied().collect();
        for k in mine {
            if let Some(e) = self.ends.remove(&k)
                && let Some(p) = e.peer
            {
                self.queue.push_back(Work::Eof(p.0, p.1));
            }
        }
        self.dials.retain(|k, _| k.0 != n);
        self.waiting.retain(|k| k.0 != n);
    }

    /// Cuts the network between two sites: both ends of their connections
    /// time out, and dials between them fail until [`Net::heal`].
    fn cut(&mut self, a: &str, b: &str) {
        let (a, b) = (self.idx(a), self.idx(b));
        self.cuts.insert((a.min(b), a.max(b)));
        let across: Vec<(usize, ConnId)> = self
            .ends
            .iter()
            .filter(|(k, e)| {
                e.peer
                    .is_some_and(|p| (k.0 == a && p.0 == b) || (k.0 == b && p.0 == a))
            })
            .map(|(k, _)| *k)
            .collect();
        for k in &across {
            if let Some(e) = self.ends.get_mut(k) {
                e.peer = None;
            }
        }
        for (n, c) in across {
            let now = self.now;
            if let Some(e) = self.ends.get_mut(&(n, c)) {
                let acts = e.session.abort(CloseReason::Timeout(KA), now);
                self.actions(n, c, acts);
            }
        }
        self.settle();
    }

    fn heal(&mut self, a: &str, b: &str) {
        let (a, b) = (self.idx(a), self.idx(b));
        self.cuts.remove(&(a.min(b), a.max(b)));
    }

    fn publish(&mut self, name: &str, service: &str, ip: &str, connections: u64) {
        let n = self.idx(name);
        self.input(n, Input::Publish(report(service, ip, connections)));
        self.settle();
    }

    /// Lets the network settle, then a few rounds of one second each: a
    /// tick on every node and one more try of every waiting dial.
    fn run(&mut self) {
        self.settle();
        for _ in 0..6 {
            self.now += Duration::from_secs(1);
            for n in 0..self.sites.len() {
                self.input(n, Input::Tick);
            }
            let waiting = std::mem::take(&mut self.waiting);
            for (n, t) in waiting {
                self.queue.push_back(Work::Dial(n, t));
            }
            self.settle();
        }
    }

    fn settle(&mut self) {
        let mut budget = 200_000;
        while let Some(w) = self.queue.pop_front() {
            budget -= 1;
            assert!(budget > 0, "the network does not settle");
            match w {
                Work::Dial(n, t) => self.dial(n, t),
                Work::Deliver(n, c, m) => {
                    let now = self.now;
                    let Some(e) = self.ends.get_mut(&(n, c)) else {
                        continue;
                    };
                    let acts = e.session.on_frame(m, now);
                    self.input(n, Input::Data { conn: c, bytes: 0 });
                    self.actions(n, c, acts);
                }
                Work::Eof(n, c) => {
                    let now = self.now;
                    if let Some(e) = self.ends.get_mut(&(n, c)) {
                        let acts = e.session.on_eof(now);
                        self.actions(n, c, acts);
                    }
                }
            }
        }
    }

    fn input(&mut self, n: usize, input: Input) {
        let now = self.now;
        let Some(node) = self.sites[n].node.as_mut() else {
            return;
        };
        let outs = node.on(input, now);
        for o in outs {
            self.output(n, o);
        }
    }

    fn output(&mut self, n: usize, o: Output) {
        let now = self.now;
        match o {
            Output::Start { conn, .. } => panic!("unexpected session start for {conn}"),
            Output::Send { conn, msg } => {
                if let Some(e) = self.ends.get_mut(&(n, conn)) {
                    let acts = e.session.send(msg);
                    self.actions(n, conn, acts);
                }
            }
            Output::Broadcast { conns, msg } => {
                for conn in conns {
                    if let Some(e) = self.ends.get(&(n, conn))
                        && e.session.state() == State::Up
                    {
                        self.transmit(n, conn, msg.clone());
                    }
                }
            }
            Output::Reject { conn, reason } => {
                if let Some(e) = self.ends.get_mut(&(n, conn)) {
                    let acts = e.session.reject(reason, now);
                    self.actions(n, conn, acts);
                }
            }
            Output::Event(e) => self.sites[n].events.push(e),
            Output::Dial { token, attempt } => {
                if self.dials.insert((n, token), attempt).is_none() {
                    self.queue.push_back(Work::Dial(n, token));
                }
            }
            Output::StopDial { token } => {
                self.dials.remove(&(n, token));
                self.waiting.remove(&(n, token));
            }
            Output::SaveState(st) => self.sites[n].saved = Some(st),
            Output::Listen(_) => {}
        }
    }

    fn transmit(&mut self, n: usize, conn: ConnId, msg: Message) {
        let Some(p) = self.ends.get(&(n, conn)).and_then(|e| e.peer) else {
            return;
        };
        self.log.push(Sent {
            from: self.sites[n].name,
            to: self.sites[p.0].name,
            msg: msg.clone(),
        });
        self.queue.push_back(Work::Deliver(p.0, p.1, msg));
    }

    /// Carries out a session's actions, as the driver's connection task
    /// does: its frames out, then its events to the node, then its close.
    fn actions(&mut self, n: usize, conn: ConnId, acts: Vec<Action>) {
        let mut events = Vec::new();
        let mut sends = Vec::new();
        let mut close = None;
        for a in acts {
            match a {
                Action::Send(m) | Action::SendSealed(m) | Action::SendLegacy { msg: m, .. } => {
                    sends.push(m)
                }
                Action::Event(e) => events.push(e),
                Action::Close(r) => close = Some(r),
            }
        }
        // The session's own frames are written before anything the node
        // sends on hearing its events (that goes through the connection's
        // queue), as in the driver: an acceptor's proof precedes the data.
        for m in sends {
            self.transmit(n, conn, m);
        }
        if !events.is_empty() {
            self.input(n, Input::Session { conn, events });
        }
        if let Some(reason) = close
            && let Some(e) = self.ends.remove(&(n, conn))
        {
            if let Some(p) = e.peer {
                self.queue.push_back(Work::Eof(p.0, p.1));
            }
            if let Some(t) = e.token
                && self.dials.contains_key(&(n, t))
            {
                self.waiting.insert((n, t));
            }
            self.input(n, Input::Closed { conn, reason });
        }
    }

    /// One try of dial `token` of site `n`.
    fn dial(&mut self, n: usize, token: u64) {
        let Some(a) = self.dials.get(&(n, token)).cloned() else {
            return;
        };
        let target = self.sites.iter().position(|s| {
            s.node.is_some()
                && s.model
                    .sites
                    .iter()
                    .any(|x| x.ip == a.site.ip && x.name == s.name)
        });
        let Some(m) = target.filter(|&m| !self.cuts.contains(&(n.min(m), n.max(m)))) else {
            self.waiting.insert((n, token));
            return;
        };
        let (cn, cm) = (self.next_conn, self.next_conn + 1);
        self.next_conn += 2;
        let now = self.now;
        let Some(mine) = self.register(
            n,
            cn,
            Input::Dialled {
                conn: cn,
                token,
                addr: a.addr(),
                keys: keys(cn),
            },
        ) else {
            return;
        };
        let from = SocketAddr::new(a.local_ip, 40_000 + (cn % 20_000) as u16);
        let theirs = self.register(
            m,
            cm,
            Input::Accepted {
                conn: cm,
                addr: from,
                secure: a.secure,
                keys: keys(cm),
            },
        );
        let mut mine = End {
            session: mine,
            peer: theirs.as_ref().map(|_| (m, cm)),
            token: Some(token),
        };
        let acts = mine.session.connected(now, None);
        self.ends.insert((n, cn), mine);
        match theirs {
            Some(s) => {
                let mut theirs = End {
                    session: s,
                    peer: Some((n, cn)),
                    token: None,
                };
                let theirs_acts = theirs.session.connected(now, None);
                self.ends.insert((m, cm), theirs);
                self.actions(n, cn, acts);
                self.actions(m, cm, theirs_acts);
            }
            // Refused: the listener drops the connection.
            None => {
                self.actions(n, cn, acts);
                self.queue.push_back(Work::Eof(n, cn));
            }
        }
    }

    /// A new connection for site `n`'s node: its session, if it wants one.
    fn register(&mut self, n: usize, conn: ConnId, input: Input) -> Option<Session> {
        let now = self.now;
        let outs = self.sites[n].node.as_mut()?.on(input, now);
        let mut session = None;
        for o in outs {
            match o {
                Output::Start { conn: c, config } if c == conn => {
                    session = Some(Session::new(*config, now));
                }
                o => self.output(n, o),
            }
        }
        session
    }

    // --- what the tests look at ---

    fn parent_of(&self, child: &str) -> Option<String> {
        self.node(child).current_parent().map(str::to_owned)
    }

    fn status(&self, at: &str, of: &str) -> sextant_mep::PeerStatus {
        self.node(at)
            .status()
            .into_iter()
            .find(|s| s.name == of)
            .unwrap_or_else(|| panic!("{at} does not know {of}"))
    }

    /// `at`'s view of `of`'s services, from its Services events in order,
    /// and the `via` of the last one.
    fn services(&self, at: &str, of: &str) -> (View, Option<String>) {
        let mut view = View::default();
        let mut via = None;
        for e in self.events(at) {
            match e {
                MepEvent::Services {
                    from_site,
                    via: v,
                    full,
                    entries,
                    removed,
                } if from_site == of => {
                    view.apply(*full, entries, removed);
                    via = v.clone();
                }
                MepEvent::PeerDown { site, .. } if site == of => view = View::default(),
                _ => {}
            }
        }
        (view, via)
    }

    /// `at` knows `of`'s service `svc` with `connections` (through `via`).
    fn assert_services(
        &self,
        at: &str,
        of: &str,
        svc: &str,
        ip: &str,
        connections: u64,
        via: Option<&str>,
    ) {
        let (view, v) = self.services(at, of);
        assert!(
            view.matches(&report(svc, ip, connections).services),
            "{at}'s view of {of}: {:?}; events: {:#?}",
            view,
            self.events(at)
        );
        assert_eq!(v.as_deref(), via, "{at} learns {of}'s services via");
    }

    fn count(&self, at: &str, pred: impl Fn(&MepEvent) -> bool) -> usize {
        self.events(at).iter().filter(|e| pred(e)).count()
    }

    fn adopted(&self, at: &str, child: &str, parent: &str) -> usize {
        self.count(at, |e| {
            matches!(e, MepEvent::Adopted { child: c, for_parent } if c == child && for_parent == parent)
        })
    }

    fn refused(&self, at: &str, child: &str, because: &str) -> usize {
        self.count(at, |e| {
            matches!(e, MepEvent::AdoptionRefused { child: c, reason, .. } if c == child && reason.contains(because))
        })
    }

    fn released(&self, at: &str, child: &str) -> usize {
        self.count(
            at,
            |e| matches!(e, MepEvent::Released { child: c, .. } if c == child),
        )
    }

    fn parent_changes(&self, child: &str) -> Vec<Option<String>> {
        self.events(child)
            .iter()
            .filter_map(|e| match e {
                MepEvent::ParentChanged { new_parent } => Some(new_parent.clone()),
                _ => None,
            })
            .collect()
    }

    /// Messages from `from` to `to` since log index `since`.
    fn sent(&self, since: usize, from: &str, to: &str) -> Vec<&Message> {
        self.log[since..]
            .iter()
            .filter(|s| s.from == from && s.to == to)
            .map(|s| &s.msg)
            .collect()
    }

    fn forget_events(&mut self) {
        for s in &mut self.sites {
            s.events.clear();
        }
    }

    /// Hands `name`'s node one input; returns its outputs, which are
    /// carried out as usual.
    fn on(&mut self, name: &str, input: Input) -> Vec<Output> {
        let n = self.idx(name);
        let now = self.now;
        let outs = self.sites[n].node.as_mut().expect("running").on(input, now);
        for o in outs.clone() {
            self.output(n, o);
        }
        self.settle();
        outs
    }

    /// `from`'s config sync machine sends `msg` to `to` (`MepHandle::send_to`).
    fn send_to(&mut self, from: &str, to: &str, msg: Message) -> Vec<Output> {
        self.on(
            from,
            Input::SendTo {
                site: to.to_owned(),
                msg,
            },
        )
    }

    /// `from`'s confirmed connection with `to`.
    fn link(&self, from: &str, to: &str) -> ConnId {
        let (n, m) = (self.idx(from), self.idx(to));
        let node = self.node(from);
        self.ends
            .iter()
            .find(|(k, e)| k.0 == n && e.peer.is_some_and(|p| p.0 == m) && node.is_confirmed(k.1))
            .map(|(k, _)| k.1)
            .unwrap_or_else(|| panic!("{from} has no MEP link with {to}"))
    }

    /// `from` writes `msg` on its link with `to` whatever its node would
    /// do (a misconfigured or foreign peer).
    fn inject(&mut self, from: &str, to: &str, msg: Message) {
        let conn = self.link(from, to);
        self.transmit(self.idx(from), conn, msg);
        self.settle();
    }

    /// `from` writes a frame of `kind` with `body` on its link with `to`,
    /// and `to`'s session reads it through the frame codec.
    fn inject_frame(&mut self, from: &str, to: &str, kind: Kind, body: &[u8]) {
        let theirs = self.link(from, to);
        let (n, m) = (self.idx(from), self.idx(to));
        let (_, conn) = self.ends[&(n, theirs)].peer.expect("connected");
        let mut frame = ((body.len() + 2) as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(&[sextant_mep::message::PROTOCOL_VERSION, kind as u8]);
        frame.extend_from_slice(body);
        let mut reader = FrameReader::new(DEFAULT_MAX_FRAME);
        reader.push(&frame);
        let now = self.now;
        let e = self.ends.get_mut(&(m, conn)).expect("the receiving end");
        let acts = match reader.next_message() {
            Ok(Some(msg)) => e.session.on_frame(msg, now),
            Ok(None) => panic!("a whole frame"),
            Err(err) => e.session.on_decode_error(err, now),
        };
        self.actions(m, conn, acts);
        self.settle();
    }

    /// The config sync messages `at` delivered, with their sender.
    fn config_sync(&self, at: &str) -> Vec<(String, Message)> {
        self.events(at)
            .iter()
            .filter_map(|e| match e {
                MepEvent::ConfigSync { from_site, msg } => Some((from_site.clone(), msg.clone())),
                _ => None,
            })
            .collect()
    }

    fn peer_downs(&self, at: &str) -> Vec<String> {
        self.events(at)
            .iter()
            .filter_map(|e| match e {
                MepEvent::PeerDown { site, .. } => Some(site.clone()),
                _ => None,
            })
            .collect()
    }
}

fn names(list: &BackupParents) -> Vec<&str> {
    list.list.iter().map(|s| s.name.as_str()).collect()
}

fn is_relay_of(m: &Message, child: &str) -> bool {
    matches!(m, Message::ChildReport(ChildReport { child: c, states: Some(ServiceStates { .. }), .. }) if c == child)
}

/// Seed 001's configuration: three parents with backup lists and a child
/// of SiteP1.
fn seed_001() -> Vec<Spec> {
    vec![
        site("P1", "10.1.0.1").backups(&["P2", "P3"]),
        site("P2", "10.1.0.2").backups(&["P3", "P1"]),
        site("P3", "10.1.0.3").backups(&["P1", "P2"]),
        site("C1", "10.1.0.4").child_of("P1"),
    ]
}

#[test]
fn a_child_reports_through_its_parent_to_the_other_parents() {
    let specs = vec![
        site("P1", "10.2.0.1"),
        site("P2", "10.2.0.2"),
        site("C1", "10.2.0.3").child_of("P1"),
        site("C2", "10.2.0.4").child_of("P2"),
    ];
    let mut net = Net::up(&specs);
    assert_eq!(net.parent_of("C1").as_deref(), Some("P1"));
    assert_eq!(net.parent_of("C2").as_deref(), Some("P2"));
    // The parents dial their children (even where the child's IP is
    // lower); parent to parent, the lower IP dials.
    let dialled: Vec<(&str, &str)> = net
        .dials
        .iter()
        .map(|((n, _), a)| (net.sites[*n].name, a.site.name.as_str()))
        .collect();
    for pair in [("P1", "C1"), ("P2", "C2"), ("P1", "P2")] {
        assert!(dialled.contains(&pair), "{pair:?} not in {dialled:?}");
    }
    assert_eq!(dialled.len(), 3, "{dialled:?}");

    let mark = net.log.len();
    net.publish("C1", "svcC1", "10.2.1.3", 4);
    net.publish("C2", "svcC2", "10.2.1.4", 5);
    net.publish("P1", "svcP1", "10.2.1.1", 1);
    // Each parent has its child's services directly and the other child's
    // through the other parent.
    net.assert_services("P1", "C1", "svcC1", "10.2.1.3", 4, None);
    net.assert_services("P2", "C1", "svcC1", "10.2.1.3", 4, Some("P1"));
    net.assert_services("P1", "C2", "svcC2", "10.2.1.4", 5, Some("P2"));
    net.assert_services("P2", "P1", "svcP1", "10.2.1.1", 1, None);
    // A child talks only to its parent, and hears no other site's services.
    assert!(net.sent(mark, "C1", "P2").is_empty());
    assert!(
        net.sent(mark, "P1", "C1").is_empty(),
        "the parent's own services reach its child"
    );
    assert_eq!(
        net.count("C1", |e| matches!(e, MepEvent::Services { .. })),
        0
    );
    assert!(
        net.sent(mark, "P1", "P2")
            .iter()
            .any(|m| is_relay_of(m, "C1"))
    );

    let st = net.status("P2", "C1");
    assert_eq!(
        (st.state, st.via.as_deref(), st.link),
        (MepState::Up, Some("P1"), None)
    );
    let st = net.status("P1", "C1");
    assert_eq!((st.state, st.link), (MepState::Up, Some("to-child")));
    let st = net.status("C1", "P1");
    assert_eq!((st.state, st.link), (MepState::Up, Some("to-parent")));
    // The figures per peer: one session each, C1's services went to P1.
    let (to_p1, at_p1) = (net.status("C1", "P1"), net.status("P1", "C1"));
    assert_eq!((to_p1.sessions_up, at_p1.sessions_up), (1, 1));
    assert!(to_p1.messages_sent >= 1, "{to_p1:?}");
    assert!(
        at_p1.messages_received >= to_p1.messages_sent.min(1),
        "{at_p1:?}"
    );
    // P2 reaches C1 only through P1: no session, no message of its own.
    let via = net.status("P2", "C1");
    assert_eq!((via.messages_sent, via.sessions_up), (0, 0), "{via:?}");

    // A change is relayed as a delta, and the child's services stay
    // known to the other parent.
    net.publish("C1", "svcC1", "10.2.1.3", 9);
    net.assert_services("P2", "C1", "svcC1", "10.2.1.3", 9, Some("P1"));
}

/// Seed 001, scenario 1 (first half): SiteP1 goes DOWN; SiteP2, first in
/// its backup list, offers to adopt child_site1 with SiteP1's list; the
/// child accepts and reports through SiteP2; SiteP3 assumes SiteP2 has it.
#[test]
fn scenario_1_the_first_backup_adopts_the_child() {
    let mut net = Net::up(&seed_001());
    net.publish("C1", "svcC1", "10.1.1.4", 1);
    net.assert_services("P3", "C1", "svcC1", "10.1.1.4", 1, Some("P1"));
    // The child holds P1's backup list, received from P1.
    let lists = &net.sites[net.idx("C1")]
        .saved
        .as_ref()
        .expect("state written")
        .backup_lists;
    assert_eq!(names(&lists[0]), ["P2", "P3"]);

    let mark = net.log.len();
    net.stop("P1");
    net.run();

    // P2 offered with P1's list (P2, P3), the child accepted.
    let offer = net.sent(mark, "P2", "C1");
    let bp = offer
        .iter()
        .find_map(|m| match m {
            Message::BackupParents(b) => Some(b),
            _ => None,
        })
        .expect("P2 sends P1's backup list");
    assert_eq!((bp.parent.as_str(), names(bp)), ("P1", vec!["P2", "P3"]));
    assert!(
        net.sent(mark, "C1", "P2")
            .iter()
            .any(|m| matches!(m, Message::AcceptParent(a) if a.parent == "P2"))
    );
    assert_eq!(net.adopted("P2", "C1", "P1"), 1);
    assert_eq!(net.adopted("P3", "C1", "P1"), 0);
    assert!(
        net.sent(mark, "P3", "C1").is_empty(),
        "P3 leaves the child to P2"
    );
    assert_eq!(net.parent_of("C1").as_deref(), Some("P2"));
    assert_eq!(
        net.parent_changes("C1"),
        [Some("P1".to_owned()), None, Some("P2".to_owned())]
    );
    let st = net.status("P2", "C1");
    assert_eq!(
        (st.link, st.adopted_for.as_deref()),
        (Some("adopted"), Some("P1"))
    );
    let st = net.status("P3", "C1");
    assert_eq!((st.state, st.via.as_deref()), (MepState::Up, Some("P2")));
    assert_eq!(st.current_parent.as_deref(), Some("P2"));

    // The child reports through its new parent.
    net.publish("C1", "svcC1", "10.1.1.4", 2);
    net.assert_services("P2", "C1", "svcC1", "10.1.1.4", 2, None);
    net.assert_services("P3", "C1", "svcC1", "10.1.1.4", 2, Some("P2"));
}

/// Seed 001, scenario 1 (end): when SiteP1 is up again it connects to its
/// child, which returns to it; SiteP2 releases the child.
#[test]
fn scenario_1_the_original_parent_takes_its_child_back() {
    let mut net = Net::up(&seed_001());
    net.stop("P1");
    net.run();
    assert_eq!(net.parent_of("C1").as_deref(), Some("P2"));
    net.forget_events();

    let mark = net.log.len();
    net.start("P1");
    net.run();
    assert_eq!(net.parent_of("C1").as_deref(), Some("P1"));
    assert_eq!(net.parent_changes("C1"), [Some("P1".to_owned())]);
    // The child's link with P1 came up twice: once at the start, once
    // after P1's restart (a reconnect).
    assert_eq!(net.status("C1", "P1").sessions_up, 2);
    assert_eq!(net.released("P2", "C1"), 1);
    assert!(net.status("P2", "C1").adopted_for.is_none());
    // P1 does not offer (it is the parent): its Hello acts for no one, and
    // it sends its own backup list.
    assert!(net.sent(mark, "P1", "C1").iter().any(
        |m| matches!(m, Message::BackupParents(b) if b.parent == "P1" && names(b) == ["P2", "P3"])
    ));
    assert!(
        !net.sent(mark, "C1", "P1")
            .iter()
            .any(|m| matches!(m, Message::AcceptParent(_)))
    );
    // Nobody offers again while P1 is UP.
    assert_eq!(
        net.adopted("P2", "C1", "P1") + net.adopted("P3", "C1", "P1"),
        0
    );

    net.publish("C1", "svcC1", "10.1.1.4", 3);
    net.assert_services("P1", "C1", "svcC1", "10.1.1.4", 3, None);
    net.assert_services("P2", "C1", "svcC1", "10.1.1.4", 3, Some("P1"));
    net.assert_services("P3", "C1", "svcC1", "10.1.1.4", 3, Some("P1"));
}

/// Seed 001, scenario 2: only the MEP connection between SiteP1 and SiteP2
/// is DOWN; child_site1 rejects SiteP2 because its parent SiteP1 is UP.
#[test]
fn scenario_2_the_child_refuses_while_its_parent_is_up() {
    let mut net = Net::up(&seed_001());
    net.cut("P1", "P2");
    net.run();
    assert!(
        net.refused("P2", "C1", "my parent P1 is UP") >= 1,
        "{:#?}",
        net.events("P2")
    );
    assert_eq!(net.adopted("P2", "C1", "P1"), 0);
    assert_eq!(net.parent_of("C1").as_deref(), Some("P1"));
    assert_eq!(net.parent_changes("C1"), [Some("P1".to_owned())]);
    // A refused offer is no UP/DOWN flap on the child.
    assert_eq!(
        net.count(
            "C1",
            |e| matches!(e, MepEvent::PeerUp { site, .. } if site == "P2")
        ),
        0
    );
    // P3 sees P1 UP: it takes no action.
    assert_eq!(
        net.count("P3", |e| matches!(e, MepEvent::AdoptionRefused { .. })),
        0
    );

    // The link heals: P2 sees P1 again and stops offering.
    net.heal("P1", "P2");
    net.run();
    assert_eq!(net.status("P2", "P1").state, MepState::Up);
    let refusals = net.refused("P2", "C1", "");
    net.run();
    assert_eq!(net.refused("P2", "C1", ""), refusals);
    assert_eq!(net.parent_of("C1").as_deref(), Some("P1"));
}

/// Seed 001, scenario 3: SiteP3 and child_site1 see SiteP1 DOWN and the
/// connection SiteP3–SiteP2 is DOWN, while SiteP2 sees SiteP1 UP. SiteP2
/// takes no action; SiteP3 finds SiteP2 (more preferred) DOWN and adopts
/// the child. Then SiteP1–SiteP2 goes DOWN: SiteP2 finds itself the most
/// preferred backup and the child migrates from SiteP3 to SiteP2.
#[test]
fn scenario_3_partial_partition() {
    let specs = seed_001();
    let mut net = Net::new(&specs);
    net.cut("P1", "P3");
    net.cut("P2", "P3");
    for s in &specs {
        net.start(s.name);
    }
    net.run();
    assert_eq!(net.parent_of("C1").as_deref(), Some("P1"));
    // P3 sees P1 DOWN (never reached); the child still has P1 and refuses.
    assert!(
        net.refused("P3", "C1", "my parent P1 is UP") >= 1,
        "{:#?}",
        net.events("P3")
    );

    net.cut("P1", "C1");
    net.run();
    assert_eq!(net.adopted("P3", "C1", "P1"), 1, "{:#?}", net.events("P3"));
    assert_eq!(net.parent_of("C1").as_deref(), Some("P3"));
    // P2 takes no action: it sees P1 UP.
    assert_eq!(
        net.count("P2", |e| matches!(
            e,
            MepEvent::Adopted { .. } | MepEvent::AdoptionRefused { .. }
        )),
        0
    );
    net.publish("C1", "svcC1", "10.1.1.4", 7);
    net.assert_services("P3", "C1", "svcC1", "10.1.1.4", 7, None);

    // Now the connection between P1 and P2 goes DOWN.
    let mark = net.log.len();
    net.cut("P1", "P2");
    net.run();
    assert_eq!(net.adopted("P2", "C1", "P1"), 1, "{:#?}", net.events("P2"));
    assert_eq!(net.parent_of("C1").as_deref(), Some("P2"));
    assert!(
        net.sent(mark, "C1", "P2")
            .iter()
            .any(|m| matches!(m, Message::AcceptParent(_)))
    );
    assert_eq!(net.released("P3", "C1"), 1);
    assert_eq!(
        net.parent_changes("C1"),
        [
            Some("P1".to_owned()),
            None,
            Some("P3".to_owned()),
            Some("P2".to_owned())
        ]
    );
    net.publish("C1", "svcC1", "10.1.1.4", 8);
    net.assert_services("P2", "C1", "svcC1", "10.1.1.4", 8, None);
    // P3 cannot see P2 and keeps offering; the child keeps refusing.
    net.run();
    assert!(
        net.refused("P3", "C1", "more preferred") >= 1,
        "{:#?}",
        net.events("P3")
    );
    assert_eq!(net.parent_of("C1").as_deref(), Some("P2"));
}

/// A backup-parent chain: SiteP1 and its first backup SiteP2 are both
/// DOWN; SiteP3, second in SiteP1's list, adopts the child. When SiteP2
/// returns it takes the child over from SiteP3 (more preferred).
#[test]
fn the_second_backup_adopts_when_the_first_is_down_too() {
    let mut net = Net::up(&seed_001());
    net.publish("C1", "svcC1", "10.1.1.4", 1);
    net.stop("P2");
    net.run();
    assert_eq!(net.parent_of("C1").as_deref(), Some("P1"));
    net.stop("P1");
    net.run();
    assert_eq!(net.adopted("P3", "C1", "P1"), 1, "{:#?}", net.events("P3"));
    assert_eq!(net.parent_of("C1").as_deref(), Some("P3"));
    assert_eq!(net.status("P3", "C1").adopted_for.as_deref(), Some("P1"));
    net.publish("C1", "svcC1", "10.1.1.4", 2);
    net.assert_services("P3", "C1", "svcC1", "10.1.1.4", 2, None);

    // The first backup returns (P1 still DOWN): it is more preferred.
    net.start("P2");
    net.run();
    assert_eq!(net.adopted("P2", "C1", "P1"), 1, "{:#?}", net.events("P2"));
    assert_eq!(net.parent_of("C1").as_deref(), Some("P2"));
    assert_eq!(net.released("P3", "C1"), 1);
    net.publish("C1", "svcC1", "10.1.1.4", 3);
    net.assert_services("P3", "C1", "svcC1", "10.1.1.4", 3, Some("P2"));
}

/// A child restarted while its parent is down is adopted thanks to the
/// backup lists it saved.
#[test]
fn a_restarted_child_uses_its_saved_backup_lists() {
    let mut net = Net::up(&seed_001());
    net.stop("C1");
    net.stop("P1");
    net.run();
    net.start("C1");
    net.run();
    assert_eq!(net.adopted("P2", "C1", "P1"), 1, "{:#?}", net.events("P2"));
    assert_eq!(net.parent_of("C1").as_deref(), Some("P2"));

    // Without the saved lists, the child does not even know P2's address
    // (its configuration holds itself and P1 only): it refuses P2.
    let mut net = Net::up(&seed_001());
    net.stop("C1");
    net.stop("P1");
    net.run();
    let c1 = net.idx("C1");
    net.sites[c1].saved = None;
    net.start("C1");
    net.run();
    assert_eq!(net.parent_of("C1"), None);
    assert_eq!(net.adopted("P2", "C1", "P1"), 0);
    assert!(
        net.count(
            "C1",
            |e| matches!(e, MepEvent::Refused { peer, .. } if peer.ip().to_string() == "10.1.0.2")
        ) >= 1,
        "{:#?}",
        net.events("C1")
    );
}

/// A connection from an address that is no site is refused before any
/// session.
#[test]
fn unknown_addresses_are_refused() {
    let mut net = Net::up(&seed_001());
    let p1 = net.idx("P1");
    let now = net.now;
    let outs = net.sites[p1].node.as_mut().expect("running").on(
        Input::Accepted {
            conn: 9999,
            addr: "10.9.9.9:5000".parse().expect("addr"),
            secure: false,
            keys: keys(9999),
        },
        now,
    );
    assert!(
        matches!(&outs[..], [Output::Event(MepEvent::Refused { reason, .. })] if reason.contains("not the IP of a known site")),
        "{outs:?}"
    );
}

// --- config sync messages (kinds 14-16) ---

fn version(incarnation: u64, origin: &str) -> ConfigVersion {
    ConfigVersion {
        incarnation,
        origin: origin.to_owned(),
        digest: format!("sha256:{incarnation:064x}"),
    }
}

fn offer(incarnation: u64, origin: &str) -> Message {
    Message::ConfigOffer(ConfigOffer {
        version: version(incarnation, origin),
        software: "0.1.0".into(),
        sync_protocol: 1,
        syntax: "appliance".into(),
        automatic: true,
    })
}

fn update(transfer: u64, incarnation: u64, origin: &str, part: u32, last: bool) -> Message {
    Message::ConfigUpdate(ConfigUpdate {
        transfer,
        version: version(incarnation, origin),
        base: Some(version(incarnation - 1, origin)),
        part,
        last,
        text: String::new(),
        ops: vec![
            LineOp::Keep(12),
            LineOp::Delete(1),
            LineOp::Insert(vec![
                "bind gslb vserver vs1 -serviceName svc1 -weight 30".into(),
            ]),
        ],
        forced: false,
        files: Vec::new(),
        lineage: Vec::new(),
    })
}

fn result(transfer: u64, incarnation: u64, origin: &str, outcome: ConfigOutcome) -> Message {
    Message::ConfigResult(ConfigResult {
        transfer,
        version: version(incarnation, origin),
        outcome,
        errors: Vec::new(),
        warnings: Vec::new(),
        running: version(incarnation, origin),
    })
}

/// The answer of a node that takes no configuration because `child` is a
/// child site.
fn refusal(transfer: u64, incarnation: u64, origin: &str, child: &str) -> Message {
    Message::ConfigResult(ConfigResult {
        transfer,
        version: version(incarnation, origin),
        outcome: ConfigOutcome::Refused,
        errors: vec![format!(
            "{child} is a child site: a child's configuration is never synchronised (seed 001)"
        )],
        warnings: Vec::new(),
        running: version(incarnation, origin),
    })
}

/// What one parent's config sync machine sends another arrives there as a
/// `ConfigSync` event, in order, both ways, and counts in the per-site
/// message figures; the child hears none of it.
#[test]
fn config_sync_messages_travel_between_parents_both_ways() {
    let specs = vec![
        site("P1", "10.3.0.1"),
        site("P2", "10.3.0.2"),
        site("C1", "10.3.0.3").child_of("P1"),
    ];
    let mut net = Net::up(&specs);
    net.forget_events();
    let mark = net.log.len();
    let (sent, received) = (
        net.status("P1", "P2").messages_sent,
        net.status("P2", "P1").messages_received,
    );

    let (o, u, r) = (
        offer(4, "P1"),
        update(7, 5, "P2", 0, true),
        result(7, 5, "P2", ConfigOutcome::Applied),
    );
    net.send_to("P1", "P2", o.clone());
    net.send_to("P2", "P1", u.clone());
    net.send_to("P1", "P2", r.clone());

    assert_eq!(
        net.config_sync("P2"),
        [("P1".to_owned(), o.clone()), ("P1".to_owned(), r.clone())]
    );
    assert_eq!(net.config_sync("P1"), [("P2".to_owned(), u.clone())]);
    assert_eq!(net.sent(mark, "P1", "P2"), [&o, &r]);
    assert_eq!(net.sent(mark, "P2", "P1"), [&u]);
    assert_eq!(net.status("P1", "P2").messages_sent, sent + 2);
    assert_eq!(net.status("P2", "P1").messages_received, received + 2);
    // Nothing for the child, and nothing closed.
    assert!(net.sent(mark, "P1", "C1").is_empty());
    assert!(net.events("C1").is_empty(), "{:#?}", net.events("C1"));
    for at in ["P1", "P2"] {
        assert!(net.peer_downs(at).is_empty(), "{:#?}", net.events(at));
    }
}

/// In a flat mesh every site is a peer of every other: config sync goes
/// between any two.
#[test]
fn config_sync_messages_travel_in_a_flat_mesh() {
    let specs = vec![
        site("A", "10.4.0.1"),
        site("B", "10.4.0.2"),
        site("C", "10.4.0.3"),
    ];
    let mut net = Net::up(&specs);
    net.forget_events();
    let o = offer(2, "A");
    net.send_to("A", "B", o.clone());
    net.send_to("A", "C", o.clone());
    let u = update(1, 3, "C", 0, true);
    net.send_to("C", "B", u.clone());
    assert_eq!(
        net.config_sync("B"),
        [("A".into(), o.clone()), ("C".into(), u)]
    );
    assert_eq!(net.config_sync("C"), [("A".into(), o)]);
    assert!(net.config_sync("A").is_empty());
}

/// A child never takes part (seed 001): an update its parent writes to it
/// anyway is answered `Refused` with the reason on the same link, and
/// offers and results are dropped; the parent never delivers a child's
/// config messages either. Both links stay UP.
#[test]
fn a_child_refuses_config_updates_and_its_parent_takes_none_from_it() {
    let mut net = Net::up(&seed_001());
    net.forget_events();
    let mark = net.log.len();

    // A transfer in two parts: answered once, after the last.
    net.inject("P1", "C1", update(3, 9, "P1", 0, false));
    assert!(net.sent(mark, "C1", "P1").is_empty());
    net.inject("P1", "C1", update(3, 9, "P1", 1, true));
    assert_eq!(net.sent(mark, "C1", "P1"), [&refusal(3, 9, "P1", "C1")]);
    let reason =
        "C1 is a child site: a child's configuration is never synchronised (seed 001)".to_owned();
    assert_eq!(
        net.events("C1"),
        [MepEvent::ConfigSyncRefused {
            from_site: "P1".into(),
            reason: reason.clone(),
        }]
    );
    // P1 got the refusal from its child: not for its sync machine.
    assert!(net.config_sync("P1").is_empty(), "{:#?}", net.events("P1"));

    // Offers and results: dropped without a word.
    let mark = net.log.len();
    net.inject("P1", "C1", offer(9, "P1"));
    net.inject("P1", "C1", result(3, 9, "P1", ConfigOutcome::Applied));
    assert!(net.sent(mark, "C1", "P1").is_empty());
    assert_eq!(net.events("C1").len(), 1, "{:#?}", net.events("C1"));

    // The child writes config messages to its parent: the parent refuses
    // the update and delivers none of them.
    let mark = net.log.len();
    net.inject("C1", "P1", offer(1, "C1"));
    net.inject("C1", "P1", update(5, 1, "C1", 0, true));
    net.inject("C1", "P1", result(3, 9, "P1", ConfigOutcome::Applied));
    assert_eq!(net.sent(mark, "P1", "C1"), [&refusal(5, 1, "C1", "C1")]);
    assert!(net.config_sync("P1").is_empty(), "{:#?}", net.events("P1"));
    assert_eq!(
        net.count("P1", |e| matches!(e, MepEvent::ConfigSyncRefused { from_site, reason: r } if from_site == "C1" && *r == reason)),
        1
    );
    // The other parents heard nothing of it.
    for at in ["P2", "P3"] {
        assert!(net.events(at).is_empty(), "{at}: {:#?}", net.events(at));
    }
    for at in ["P1", "C1"] {
        assert!(net.peer_downs(at).is_empty(), "{:#?}", net.events(at));
    }
    assert_eq!(net.status("P1", "C1").state, MepState::Up);
}

/// A backup parent treats the child it adopted as a child: it refuses its
/// updates, delivers nothing of it, and sends it nothing.
#[test]
fn an_adopted_child_takes_no_part_in_config_sync() {
    let mut net = Net::up(&seed_001());
    net.stop("P1");
    net.run();
    assert_eq!(net.parent_of("C1").as_deref(), Some("P2"));
    net.forget_events();
    let mark = net.log.len();
    net.inject("C1", "P2", update(2, 4, "C1", 0, true));
    assert_eq!(net.sent(mark, "P2", "C1"), [&refusal(2, 4, "C1", "C1")]);
    assert!(net.config_sync("P2").is_empty(), "{:#?}", net.events("P2"));
    assert!(net.send_to("P2", "C1", offer(4, "P2")).is_empty());
    // The child refuses its new parent's updates as it did its own's.
    let mark = net.log.len();
    net.inject("P2", "C1", update(8, 5, "P2", 0, true));
    assert_eq!(net.sent(mark, "C1", "P2"), [&refusal(8, 5, "P2", "C1")]);
    // P2 and P3 still sync with each other.
    net.send_to("P2", "P3", offer(5, "P2"));
    assert_eq!(net.config_sync("P3"), [("P2".into(), offer(5, "P2"))]);
}

/// `SendTo` sends only a config sync message, only to an UP peer parent
/// (or mesh peer), and only from a parent; anything else produces no
/// output at all.
#[test]
fn send_to_sends_nothing_but_config_messages_to_up_peer_parents() {
    let mut net = Net::up(&seed_001());
    // The control: to an UP peer parent (site names are case-insensitive).
    let outs = net.send_to("P1", "p2", offer(1, "P1"));
    assert!(
        matches!(&outs[..], [Output::Send { msg, .. }] if *msg == offer(1, "P1")),
        "{outs:?}"
    );
    assert_eq!(net.config_sync("P2"), [("P1".into(), offer(1, "P1"))]);

    let mark = net.log.len();
    let cases: [(&str, &str, Message); 6] = [
        // A child, of its own parent and of another.
        ("P1", "C1", offer(1, "P1")),
        ("P2", "C1", update(1, 2, "P2", 0, true)),
        // An unknown site, and the site itself.
        ("P1", "P9", offer(1, "P1")),
        ("P1", "P1", offer(1, "P1")),
        // Other kinds, to an UP peer parent.
        ("P1", "P2", Message::LdnsRtt(LdnsRtt::default())),
        ("P1", "P2", Message::Keepalive(Keepalive { sent_at_ms: 1 })),
    ];
    for (from, to, msg) in cases {
        let outs = net.send_to(from, to, msg.clone());
        assert!(outs.is_empty(), "{from} -> {to} {msg:?}: {outs:?}");
    }
    // From the child to its parent.
    let outs = net.send_to("C1", "P1", result(1, 2, "P2", ConfigOutcome::Applied));
    assert!(outs.is_empty(), "{outs:?}");
    // A site that is DOWN.
    net.stop("P3");
    net.run();
    assert_eq!(net.status("P1", "P3").state, MepState::Down);
    let mark_down = net.log.len();
    let outs = net.send_to("P1", "P3", offer(1, "P1"));
    assert!(outs.is_empty(), "{outs:?}");
    assert!(net.log[mark_down..].iter().all(|s| !matches!(
        s.msg,
        Message::ConfigOffer(_) | Message::ConfigUpdate(_) | Message::ConfigResult(_)
    )));
    assert!(
        net.log[mark..].iter().all(|s| !matches!(
            s.msg,
            Message::ConfigOffer(_) | Message::ConfigUpdate(_) | Message::ConfigResult(_)
        )),
        "config messages went out"
    );
    assert_eq!(net.config_sync("P2").len(), 1);
    assert!(net.events("C1").iter().all(|e| !matches!(
        e,
        MepEvent::ConfigSync { .. } | MepEvent::ConfigSyncRefused { .. }
    )));
}

/// A `ConfigUpdate` whose body does not decode ends the session it came
/// on, like any malformed frame, and nothing else: the other links stay
/// UP, and the two sites reconnect and sync again.
#[test]
fn a_malformed_config_update_closes_only_its_session() {
    let mut net = Net::up(&seed_001());
    net.forget_events();
    net.inject_frame(
        "P1",
        "P2",
        Kind::ConfigUpdate,
        br#"{"transfer":1,"version":{"incarnation":2,"origin":"P1","digest":"sha256:00"},"ops":[{"swap":3}]}"#,
    );
    assert!(
        net.count("P2", |e| matches!(e, MepEvent::BadFrame { site, reason, .. } if site == "P1" && reason.contains("malformed ConfigUpdate"))) == 1,
        "{:#?}",
        net.events("P2")
    );
    // P2 reached C1 only through P1's relay.
    let mut downs = net.peer_downs("P2");
    downs.sort();
    assert_eq!(downs, ["C1", "P1"]);
    assert_eq!(net.peer_downs("P1"), ["P2"]);
    assert_eq!(net.status("P2", "P3").state, MepState::Up);
    assert!(net.config_sync("P2").is_empty());
    for at in ["P3", "C1"] {
        assert!(net.peer_downs(at).is_empty(), "{at}: {:#?}", net.events(at));
    }

    net.run();
    assert_eq!(net.status("P2", "P1").state, MepState::Up);
    assert_eq!(net.status("P2", "P1").sessions_up, 2);
    net.send_to("P1", "P2", offer(3, "P1"));
    assert_eq!(net.config_sync("P2"), [("P1".into(), offer(3, "P1"))]);
}

/// A config message on a connection that is not (yet) the site's MEP link,
/// here a backup parent's adoption offer the child has not decided on, is
/// dropped: no answer, no event, the offer goes on as before.
#[test]
fn config_messages_on_an_unconfirmed_connection_are_dropped() {
    let mut net = Net::up(&seed_001());
    net.forget_events();
    let c1 = net.idx("C1");
    let now = net.now;
    let node = net.sites[c1].node.as_mut().expect("running");
    // P2 (known to the child from P1's backup list) connects to adopt it.
    let outs = node.on(
        Input::Accepted {
            conn: 9001,
            addr: "10.1.0.2:40001".parse().expect("addr"),
            secure: false,
            keys: keys(9001),
        },
        now,
    );
    assert!(
        matches!(&outs[..], [Output::Start { conn: 9001, .. }]),
        "{outs:?}"
    );
    let hello = Hello {
        site: "P2".into(),
        ip: "10.1.0.2".parse().expect("ip"),
        role: Role::Parent,
        generation: 1,
        nonce: "ab".repeat(32),
        acting_for: Some("P1".into()),
        protocol: 1,
    };
    let outs = node.on(
        Input::Session {
            conn: 9001,
            events: vec![SessionEvent::Up { peer: hello }],
        },
        now,
    );
    assert!(outs.is_empty(), "{outs:?}");
    assert!(!node.is_confirmed(9001));
    for msg in [
        update(1, 3, "P2", 0, true),
        offer(3, "P2"),
        result(1, 3, "P2", ConfigOutcome::Applied),
    ] {
        let outs = node.on(
            Input::Session {
                conn: 9001,
                events: vec![SessionEvent::Received(msg.clone())],
            },
            now,
        );
        assert!(outs.is_empty(), "{msg:?}: {outs:?}");
    }
    // Nor can the node send on it.
    let outs = node.on(
        Input::SendTo {
            site: "P2".into(),
            msg: offer(1, "C1"),
        },
        now,
    );
    assert!(outs.is_empty(), "{outs:?}");
    assert!(net.events("C1").is_empty(), "{:#?}", net.events("C1"));
}

/// What `site` last reported of its links, as `at` sees it: (other end, up).
fn reported_links(net: &Net, at: &str, site: &str) -> Option<Vec<(String, bool)>> {
    let status = net.node(at).status();
    let peer = status.iter().find(|p| p.name == site)?;
    peer.reported_links
        .as_ref()
        .map(|(links, _)| links.iter().map(|l| (l.site.clone(), l.up)).collect())
}

/// Every site tells the others its own links with its site figures, and at
/// once when one goes down or up: A, which is an end of neither, learns
/// that B–C is cut before any time passes (no periodic report needed),
/// from both ends, and that it healed.
#[test]
fn sites_report_their_own_links_at_once_when_one_changes() {
    let specs = vec![
        site("A", "10.5.0.1"),
        site("B", "10.5.0.2"),
        site("C", "10.5.0.3"),
    ];
    let mut net = Net::up(&specs);
    for s in ["A", "B", "C"] {
        net.publish(s, &format!("svc{s}"), "10.5.1.1", 1);
    }
    net.run();
    let both_up = |other: &str, me: &str| {
        let mut want = vec![(other.to_string(), true), (me.to_string(), true)];
        want.sort();
        want
    };
    assert_eq!(reported_links(&net, "A", "B"), Some(both_up("A", "C")));
    assert_eq!(reported_links(&net, "A", "C"), Some(both_up("A", "B")));
    assert_eq!(
        reported_links(&net, "A", "A"),
        None,
        "a node does not report to itself"
    );

    // The cut closes B–C's sessions; nothing else happens (no tick).
    net.cut("B", "C");
    assert_eq!(
        reported_links(&net, "A", "B"),
        Some(vec![("A".into(), true), ("C".into(), false)])
    );
    assert_eq!(
        reported_links(&net, "A", "C"),
        Some(vec![("A".into(), true), ("B".into(), false)])
    );
    let kinds: Vec<String> = net
        .node("A")
        .status()
        .iter()
        .find(|p| p.name == "B")
        .and_then(|p| p.reported_links.clone())
        .map(|(links, _)| links.into_iter().map(|l| l.kind).collect())
        .unwrap_or_default();
    assert_eq!(kinds, ["peer", "peer"]);

    net.heal("B", "C");
    net.run();
    assert_eq!(reported_links(&net, "A", "B"), Some(both_up("A", "C")));
    assert_eq!(reported_links(&net, "A", "C"), Some(both_up("A", "B")));
}

/// A child's links reach the parents it has no link with through its
/// parent's relay, as its figures do.
#[test]
fn a_childs_links_are_relayed_to_the_other_parents() {
    let mut net = Net::up(&seed_001());
    net.publish("C1", "svcC1", "10.1.1.4", 1);
    net.run();
    for at in ["P2", "P3"] {
        let status = net.node(at).status();
        let c1 = status.iter().find(|p| p.name == "C1").expect("C1");
        let links: Vec<(String, String, bool)> = c1
            .reported_links
            .as_ref()
            .map(|(links, _)| {
                links
                    .iter()
                    .map(|l| (l.site.clone(), l.kind.clone(), l.up))
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(
            links,
            [("P1".to_string(), "to-parent".to_string(), true)],
            "at {at}"
        );
    }
}
