//! The attacker's moves against the MEP handshake and sealed frames,
//! replayed on the pure session without sockets.
//!
//! The set-up of docs/security.md: two parents P1 and P2 share one
//! password. The attacker X knows no password, can open connections from
//! either site's address (so each honest node accepts it as the other), and
//! sits on the path of a genuine connection that P1 dials to P2: every
//! frame any session sends reaches X, and X decides what each session
//! receives, in any order, any number of times, plus frames of its own.
//!
//! What must hold whatever X does: the session P2 accepted from X (the
//! target) only ever delivers data that P1 really sent, in order, each once;
//! and no acceptor ever proves itself to someone who has not proven first.

use std::net::IpAddr;
use std::time::Duration;

use proptest::prelude::*;
use sextant_mep_proto::frame;
use sextant_mep_proto::message::{
    AuthProof, ConfigUpdate, ConfigVersion, Hello, Message, PROTOCOL_VERSION, Reject, Role,
};
use sextant_mep_proto::session::{
    AUTH_FAILED, Action, CloseReason, Session, SessionConfig, SessionEvent, State,
};

const PASSWORD: &[u8] = b"one password for both parents";
const MAX: usize = 1 << 20;

fn ip(site: &str) -> IpAddr {
    match site {
        "P1" => "127.0.0.11".parse().unwrap(),
        _ => "127.0.0.12".parse().unwrap(),
    }
}

fn cfg(local: &str, peer: &str, initiator: bool, nonce: u8) -> SessionConfig {
    SessionConfig {
        local_name: local.into(),
        local_ip: ip(local),
        role: Role::Parent,
        generation: 1,
        peer_name: peer.into(),
        peer_ip: ip(peer),
        secret: Some(PASSWORD.to_vec()),
        nonce: [nonce; 32],
        acting_for: None,
        keepalive_timeout: Duration::from_secs(3600),
        initiator,
    }
}

/// A forced configuration push: what X wants a parent to accept.
fn config_update(text: &str) -> Message {
    Message::ConfigUpdate(ConfigUpdate {
        transfer: 1,
        version: ConfigVersion {
            incarnation: 99,
            origin: "P1".into(),
            digest: "sha256:00".into(),
        },
        base: None,
        part: 0,
        last: true,
        text: text.into(),
        ops: Vec::new(),
        forced: true,
        files: Vec::new(),
        lineage: Vec::new(),
    })
}

fn hello(site: &str, nonce: u8) -> Message {
    Message::Hello(Hello {
        site: site.into(),
        ip: ip(site),
        role: Role::Parent,
        generation: 1,
        nonce: sextant_mep_proto::session::hex(&[nonce; 32]),
        acting_for: None,
        protocol: PROTOCOL_VERSION,
    })
}

fn plain(m: &Message) -> Vec<u8> {
    frame::encode_to_vec(m, MAX).unwrap()
}

/// One honest session and everything it did.
struct Honest {
    session: Session,
    /// The frames it sent, as bytes on the wire.
    sent: Vec<Vec<u8>>,
    /// The data messages it sent once Up, in order.
    data_sent: Vec<Message>,
    /// The data messages it delivered to its node, in order.
    received: Vec<Message>,
    /// Whether it ever sent an AuthProof.
    proved: bool,
}

impl Honest {
    fn new(cfg: SessionConfig) -> Self {
        let mut h = Honest {
            session: Session::new(cfg, Duration::ZERO),
            sent: Vec::new(),
            data_sent: Vec::new(),
            received: Vec::new(),
            proved: false,
        };
        let acts = h.session.connected(Duration::ZERO, None);
        h.carry(acts);
        h
    }

    fn carry(&mut self, acts: Vec<Action>) {
        for a in acts {
            if let Some(Message::AuthProof(_)) = a.sent() {
                self.proved = true;
            }
            let mut bytes = Vec::new();
            self.session.encode(&a, MAX, &mut bytes).unwrap();
            if !bytes.is_empty() {
                self.sent.push(bytes);
            }
            if let Action::Event(SessionEvent::Received(m)) = a {
                self.received.push(m);
            }
        }
    }

    fn deliver(&mut self, bytes: &[u8]) {
        let acts = self.session.on_frame_bytes(bytes, Duration::from_millis(1));
        self.carry(acts);
    }

    /// Sends one more data message if Up.
    fn send_data(&mut self, n: usize) {
        let m = config_update(&format!("{} #{n}", self.session.config().local_name));
        let acts = self.session.send(m.clone());
        if !acts.is_empty() {
            self.data_sent.push(m);
        }
        self.carry(acts);
    }
}

/// The honest sessions of the set-up.
struct World {
    /// P2 accepting a connection that X opened as P1.
    target: Honest,
    /// P1 accepting a connection that X opened as P2.
    p1_accepting: Honest,
    /// P1 dialling P2, X on the path.
    p1_dialling: Honest,
    /// P2 accepting P1's dial (what X lets through of it).
    p2_accepting: Honest,
    /// Frames X made up.
    forged: Vec<Vec<u8>>,
    /// Per (from, to): how many of `from`'s frames X has relayed to `to`.
    relayed: [[usize; 4]; 4],
}

impl World {
    fn new() -> Self {
        World {
            target: Honest::new(cfg("P2", "P1", false, 0x21)),
            p1_accepting: Honest::new(cfg("P1", "P2", false, 0x11)),
            p1_dialling: Honest::new(cfg("P1", "P2", true, 0x12)),
            p2_accepting: Honest::new(cfg("P2", "P1", false, 0x22)),
            forged: vec![
                plain(&hello("P1", 0x66)),
                plain(&hello("P2", 0x66)),
                plain(&Message::AuthProof(AuthProof {
                    hmac: "00".repeat(32),
                })),
                plain(&Message::AuthProof(AuthProof {
                    hmac: String::new(),
                })),
                plain(&config_update("X's address")),
                plain(&Message::Reject(Reject { reason: "x".into() })),
            ],
            relayed: [[0; 4]; 4],
        }
    }

    fn session(&mut self, i: usize) -> &mut Honest {
        match i % 4 {
            0 => &mut self.target,
            1 => &mut self.p1_accepting,
            2 => &mut self.p1_dialling,
            _ => &mut self.p2_accepting,
        }
    }

    /// Every frame X has: all the honest sessions sent, and its own.
    fn pool(&self) -> Vec<Vec<u8>> {
        let mut all = self.forged.clone();
        for h in [
            &self.target,
            &self.p1_accepting,
            &self.p1_dialling,
            &self.p2_accepting,
        ] {
            all.extend(h.sent.iter().cloned());
        }
        all
    }

    fn play(&mut self, mv: &Move) {
        match *mv {
            Move::Deliver { to, frame } => {
                let pool = self.pool();
                let bytes = pool[frame % pool.len()].clone();
                self.session(to).deliver(&bytes);
            }
            Move::Tamper { to, frame, byte } => {
                let pool = self.pool();
                let mut bytes = pool[frame % pool.len()].clone();
                let at = 6 + byte % (bytes.len() - 6).max(1);
                if at < bytes.len() {
                    bytes[at] ^= 0x01;
                }
                self.session(to).deliver(&bytes);
            }
            Move::Relay { from, to } => {
                let (from, to) = (from % 4, to % 4);
                let next = self.relayed[from][to];
                if let Some(bytes) = self.session(from).sent.get(next).cloned() {
                    self.relayed[from][to] += 1;
                    self.session(to).deliver(&bytes);
                }
            }
            Move::Send { from, n } => self.session(from).send_data(n),
        }
    }

    /// What must hold after every move.
    fn check(&self) {
        // The target delivers only what P1 sent on the one connection P1
        // dialled, in order and each once.
        let t = &self.target.received;
        let p1 = &self.p1_dialling.data_sent;
        assert!(
            t.len() <= p1.len() && t[..] == p1[..t.len()],
            "the target accepted data P1 did not send: {t:?} vs {p1:?}"
        );
        // P1's acceptor never proves itself: nobody but X connected to it,
        // and X cannot prove anything.
        assert!(!self.p1_accepting.proved, "P1 proved itself to X");
        assert_ne!(self.p1_accepting.session.state(), State::Up);
        // Likewise P1's acceptor receives nothing.
        assert!(self.p1_accepting.received.is_empty());
    }
}

#[derive(Debug, Clone)]
enum Move {
    /// X hands session `to` a frame it has (seen or forged).
    Deliver { to: usize, frame: usize },
    /// ... with one bit of its body flipped.
    Tamper {
        to: usize,
        frame: usize,
        byte: usize,
    },
    /// X passes on the next frame of `from` that it has not yet passed to
    /// `to`, as a faithful relay would (so that genuine and crossed
    /// handshakes come up often).
    Relay { from: usize, to: usize },
    /// An honest session sends data if it is Up.
    Send { from: usize, n: usize },
}

fn moves() -> impl Strategy<Value = Vec<Move>> {
    let mv = prop_oneof![
        4 => (0usize..4, any::<usize>()).prop_map(|(to, frame)| Move::Deliver { to, frame }),
        6 => (0usize..4, 0usize..4).prop_map(|(from, to)| Move::Relay { from, to }),
        1 => (0usize..4, any::<usize>(), any::<usize>())
            .prop_map(|(to, frame, byte)| Move::Tamper { to, frame, byte }),
        2 => (0usize..4, 0usize..1000).prop_map(|(from, n)| Move::Send { from, n }),
    ];
    prop::collection::vec(mv, 1..80)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Relay, reflection, replay, reorder, tampering and lying about names,
    /// in any mix: the target never delivers a frame P1 did not send.
    #[test]
    fn no_move_of_the_attacker_gets_data_accepted(prefix in 0usize..3, moves in moves()) {
        let mut w = World::new();
        // Often start from a session X relayed faithfully: P1's dial to
        // P2's genuine acceptor, or crossed to the target (so the target is
        // Up, believing P1, and X tries to add to it).
        let relay = |from, to| Move::Relay { from, to };
        let start: Vec<Move> = match prefix {
            1 => vec![relay(2, 3), relay(3, 2), relay(2, 3), relay(3, 2), relay(3, 2)],
            2 => vec![relay(2, 0), relay(0, 2), relay(2, 0), relay(0, 2), relay(0, 2)],
            _ => Vec::new(),
        };
        for mv in &start {
            w.play(mv);
            w.check();
        }
        if prefix == 2 {
            prop_assert_eq!(w.target.session.state(), State::Up);
        }
        for mv in &moves {
            w.play(mv);
            w.check();
        }
    }
}

/// The attack that worked against protocol 1, step by step: X asks P1 for
/// a proof of P2's nonce and relays it to P2. P1, as acceptor, proves
/// nothing to a peer that has not proven itself, so X has nothing to relay.
#[test]
fn the_protocol_1_relay_gets_no_proof_to_relay() {
    let mut w = World::new();
    // P2's Hello (with its nonce) handed to P1 as if X were P2: accepted as
    // a Hello, but P1 answers nothing.
    let p2_hello = w.target.sent[0].clone();
    let before = w.p1_accepting.sent.len();
    w.p1_accepting.deliver(&p2_hello);
    assert_eq!(w.p1_accepting.session.state(), State::Authenticating);
    assert_eq!(w.p1_accepting.sent.len(), before, "P1 sent a proof");
    // P1's Hello handed to P2 as X's: P2 waits for the initiator's proof.
    let p1_hello = w.p1_accepting.sent[0].clone();
    w.target.deliver(&p1_hello);
    assert_eq!(w.target.session.state(), State::Authenticating);
    // Nothing X has is a proof P2 takes; each ends the session.
    for forged in w.forged.clone() {
        let mut t = Honest::new(cfg("P2", "P1", false, 0x21));
        t.deliver(&p1_hello);
        t.deliver(&forged);
        assert_ne!(t.session.state(), State::Up);
    }
}

/// X on the path of a genuine session cannot add a frame to it: a
/// ConfigUpdate of its own, sealed with any tag, ends the session.
#[test]
fn an_injected_config_update_ends_a_genuine_session() {
    let mut i = Honest::new(cfg("P1", "P2", true, 1));
    let mut a = Honest::new(cfg("P2", "P1", false, 2));
    // The genuine handshake, relayed faithfully.
    let (mut ni, mut na) = (0, 0);
    for _ in 0..6 {
        for f in &i.sent[ni..] {
            a.deliver(f);
        }
        ni = i.sent.len();
        for f in &a.sent[na..] {
            i.deliver(f);
        }
        na = a.sent.len();
    }
    assert_eq!(
        (i.session.state(), a.session.state()),
        (State::Up, State::Up)
    );
    // The injected frame: X's ConfigUpdate, with a tag of zeros.
    let mut injected = plain(&config_update("X's address"));
    let len = u32::from_be_bytes(injected[..4].try_into().unwrap()) + 16;
    injected[..4].copy_from_slice(&len.to_be_bytes());
    injected.extend_from_slice(&[0; 16]);
    let acts = a
        .session
        .on_frame_bytes(&injected, Duration::from_millis(5));
    assert!(
        acts.iter()
            .any(|x| matches!(x, Action::Event(SessionEvent::AuthFailed { reason }) if reason.contains("integrity"))),
        "{acts:?}"
    );
    assert!(matches!(
        acts.last(),
        Some(Action::Close(CloseReason::Protocol(_)))
    ));
    assert!(a.received.is_empty());
}

/// A node of protocol 1 and one of protocol 2: each end says why, the old
/// one in words of its own version.
#[test]
fn an_older_peer_is_refused_with_a_clear_reason_at_both_ends() {
    let mut new = Honest::new(cfg("P2", "P1", false, 2));
    // Protocol 1's Hello, framed as version 1.
    let old_hello = Message::Hello(Hello {
        protocol: 1,
        ..match hello("P1", 1) {
            Message::Hello(h) => h,
            _ => unreachable!(),
        }
    });
    let mut bytes = Vec::new();
    frame::encode_version(&old_hello, 1, MAX, &mut bytes).unwrap();
    let acts = new.session.on_frame_bytes(&bytes, Duration::from_millis(1));
    let Some(Action::Close(CloseReason::Protocol(why))) = acts.last() else {
        panic!("{acts:?}");
    };
    assert!(
        why.contains("speaks MEP protocol 1") && why.contains("upgrade"),
        "{why}"
    );
    // The Reject goes out in version 1, which the old node reads.
    let reject = acts
        .iter()
        .find_map(|a| match a {
            Action::SendLegacy { msg, version: 1 } => Some(msg.clone()),
            _ => None,
        })
        .expect("a version 1 reject");
    assert!(matches!(reject, Message::Reject(r) if r.reason.contains("protocol 2")));
    // And a Reject from an old node reads as the old node's words.
    let mut new = Honest::new(cfg("P1", "P2", true, 1));
    let mut bytes = Vec::new();
    let why = "malformed frame: unsupported protocol version 2 (this node speaks 1)";
    frame::encode_version(
        &Message::Reject(Reject { reason: why.into() }),
        1,
        MAX,
        &mut bytes,
    )
    .unwrap();
    let acts = new.session.on_frame_bytes(&bytes, Duration::from_millis(1));
    assert!(
        matches!(acts.last(), Some(Action::Close(CloseReason::RejectedByPeer(r))) if r.contains(why) && r.contains("protocol 1")),
        "{acts:?}"
    );
}

/// Before authentication a frame may be a few kilobytes, not a megabyte.
#[test]
fn unauthenticated_frames_are_small() {
    let s = Session::new(cfg("P2", "P1", false, 2), Duration::ZERO);
    assert_eq!(s.frame_limit(MAX), frame::HANDSHAKE_MAX_FRAME);
    let mut reader = frame::FrameReader::new(MAX);
    reader.push(&(512u32 * 1024).to_be_bytes());
    assert!(matches!(
        reader.next_frame(s.frame_limit(MAX)),
        Err(frame::FrameError::Oversized { .. })
    ));
}

/// A wrong password: the acceptor refuses and says why, proving nothing.
#[test]
fn a_wrong_password_gets_a_refusal_and_no_proof() {
    let mut i = Honest::new(SessionConfig {
        secret: Some(b"guess".to_vec()),
        ..cfg("P1", "P2", true, 1)
    });
    let mut a = Honest::new(cfg("P2", "P1", false, 2));
    i.deliver(&a.sent[0].clone());
    a.deliver(&i.sent[0].clone());
    a.deliver(&i.sent[1].clone());
    assert!(!a.proved);
    assert_eq!(a.session.state(), State::Closed);
    i.deliver(a.sent.last().unwrap());
    assert_eq!(i.session.state(), State::Closed);
    assert!(
        matches!(a.sent.last().map(|b| frame::decode(b, MAX)), Some(Ok(Some((Message::Reject(r), _)))) if r.reason == AUTH_FAILED)
    );
}
