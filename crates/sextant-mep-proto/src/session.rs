//! The session state machine of one MEP connection (pure).
//!
//! No sockets, no clock, no randomness: the driver passes in the time
//! (`now`, a monotonic [`Duration`] since any fixed origin), the frames it
//! received and the data it wants to send, plus the nonce it drew; the
//! session answers with [`Action`]s — frames to send, events, and at most one
//! close, always last.
//!
//! ```text
//!   new() ──▶ Connecting ──connected()──▶ HelloSent ──peer Hello ok──▶ Authenticating
//!                 │          (send Hello)     │  (initiator: send AuthProof) │
//!                 │                           │                   peer AuthProof ok
//!                 │                           │          (acceptor: send AuthProof)
//!                 │                           │                               ▼
//!                 └──── timeout / error / Reject / EOF ──────────▶ Closed ◀── Up
//! ```
//!
//! * Both ends send [`Hello`] as soon as the connection is established, each
//!   with a fresh 32-byte nonce.
//! * On the peer's Hello each end checks it (protocol version, site name and
//!   IP expected for this connection, a well-formed nonce that is not its
//!   own). The initiator (the end that dialled) then proves itself over the
//!   transcript of both Hellos; the acceptor proves itself only once the
//!   initiator's proof checks out (see [`crate::handshake`]): nobody can
//!   make a node sign a challenge it did not take part in. Without a secret
//!   the proof is the empty string, and a non-empty proof is then refused
//!   too: both ends must agree on whether the link has a secret.
//! * On the peer's valid AuthProof the session is Up, and sends a first
//!   Keepalive at once (so the link RTT is known within one round trip).
//!   From then on every frame in both directions is sealed
//!   ([`Action::SendSealed`], [`Session::on_frame_bytes`]): a frame that
//!   fails its integrity check ends the session.
//! * Before Up no frame may be longer than [`HANDSHAKE_MAX_FRAME`]
//!   ([`Session::frame_limit`]).
//! * A peer of an older protocol is told so in a frame of its own version
//!   ([`Action::SendLegacy`]) and the session closes with a clear reason.
//! * Up: a Keepalive every `keepalive_timeout / 3`, each answered with a
//!   KeepaliveAck echoing its `sent_at_ms`; the RTT is the time from sending
//!   the keepalive to receiving its echo.
//! * Keepalive loss: a keepalive is counted lost when its successor is due
//!   and its echo has not come, and when the session closes with one
//!   outstanding for a whole keepalive interval or more (its successor was
//!   due). Each one sent and each one lost is an event too, for the
//!   driver's per-site totals (datacenter mode's packet loss).
//! * In every state but Closed: no frame at all for `keepalive_timeout`
//!   closes the session (in Connecting: from its creation).
//! * Any unexpected message, a malformed frame or a failed check sends
//!   `Reject{reason}` and closes; a received Reject closes.

use std::net::IpAddr;
use std::time::Duration;

use crate::frame::{self, FrameError, HANDSHAKE_MAX_FRAME, HEADER_LEN};
use crate::handshake::{self, Direction, FrameKeys, Transcript};
use crate::message::{
    AuthProof, Hello, Keepalive, KeepaliveAck, Kind, Message, PROTOCOL_VERSION, Reject, Role,
};

/// The reason a session sends to a peer whose proof is wrong.
pub const AUTH_FAILED: &str = "authentication failed";

/// Where a session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Waiting for the connection (TCP, and TLS if secure) to be ready.
    Connecting,
    /// Our Hello is sent; waiting for the peer's.
    HelloSent,
    /// Our AuthProof is sent; waiting for the peer's.
    Authenticating,
    /// Exchanging data and keepalives.
    Up,
    /// Finished; every further input is ignored.
    Closed,
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            State::Connecting => "connecting",
            State::HelloSent => "hello-sent",
            State::Authenticating => "authenticating",
            State::Up => "up",
            State::Closed => "closed",
        })
    }
}

/// Who we are and whom we expect on this connection.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    pub local_name: String,
    pub local_ip: IpAddr,
    pub role: Role,
    pub generation: u64,
    /// The site we expect at the other end (name compared ignoring case).
    pub peer_name: String,
    /// Its site IP; the peer's Hello must announce this address.
    pub peer_ip: IpAddr,
    /// The link's shared secret: the accepting site's `-sitePassword`,
    /// else the rpcNode password configured for the accepting side's site
    /// IP. `None`: no authentication.
    pub secret: Option<Vec<u8>>,
    /// Our challenge (fresh random bytes per connection).
    pub nonce: [u8; 32],
    /// Set when we connect as a backup parent to adopt a child of this
    /// parent.
    pub acting_for: Option<String>,
    pub keepalive_timeout: Duration,
    /// We dialled this connection (the initiator proves itself first).
    pub initiator: bool,
}

/// Why a session closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    /// The connection was never established in time.
    ConnectTimeout(Duration),
    /// No frame at all for the keepalive timeout (during the handshake or
    /// once Up).
    Timeout(Duration),
    /// The peer closed the connection.
    PeerClosed,
    /// A frame could not be decoded.
    Malformed(FrameError),
    /// The peer broke the protocol (unexpected message, bad Hello, ...).
    Protocol(String),
    /// The peer's proof was wrong.
    AuthFailed(String),
    /// The peer sent Reject.
    RejectedByPeer(String),
    /// We ended the session (the driver's reason).
    Local(String),
}

impl std::fmt::Display for CloseReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CloseReason::ConnectTimeout(t) => write!(f, "not connected within {t:?}"),
            CloseReason::Timeout(t) => write!(f, "no message for {t:?} (keepalive timeout)"),
            CloseReason::PeerClosed => f.write_str("connection closed by peer"),
            CloseReason::Malformed(e) => write!(f, "malformed frame: {e}"),
            CloseReason::Protocol(s) => write!(f, "protocol error: {s}"),
            CloseReason::AuthFailed(s) => write!(f, "{AUTH_FAILED}: {s}"),
            CloseReason::RejectedByPeer(s) => write!(f, "rejected by peer: {s}"),
            CloseReason::Local(s) => f.write_str(s),
        }
    }
}

/// Why a received frame could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error("{0}")]
    Malformed(FrameError),
    #[error("{0}")]
    Seal(handshake::SealError),
    #[error("a frame of protocol version {0}")]
    OtherVersion(u8, Option<Kind>),
}

/// Something the session tells the driver.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEvent {
    /// The handshake completed; `peer` is the peer's Hello.
    Up { peer: Hello },
    /// A data message from an Up peer (ServiceStates, SiteMetrics, LdnsRtt,
    /// Sessions, BackupParents, AcceptParent, ChildReport, ResyncRequest,
    /// and the config sync messages).
    Received(Message),
    /// A new link RTT measurement.
    Rtt(Duration),
    /// A keepalive went out (one more in [`Session::keepalives_sent`]).
    KeepaliveSent,
    /// A keepalive's echo never came (one more in
    /// [`Session::keepalives_lost`]).
    KeepaliveLost,
    /// The peer failed authentication (log and count it); a Close follows.
    AuthFailed { reason: String },
}

/// What the driver must do, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send a frame as is (the handshake, before keys exist).
    Send(Message),
    /// Send a frame sealed with [`Session::seal`] (every frame once Up).
    SendSealed(Message),
    /// Send a frame in the version of an older peer (a Reject that tells it
    /// why, in words it can read).
    SendLegacy {
        msg: Message,
        version: u8,
    },
    Event(SessionEvent),
    /// Close the connection (after sending the frames before it). Always
    /// the last action; the session is Closed.
    Close(CloseReason),
}

impl Action {
    /// The message this action sends, whatever its framing.
    pub fn sent(&self) -> Option<&Message> {
        match self {
            Action::Send(m) | Action::SendSealed(m) | Action::SendLegacy { msg: m, .. } => Some(m),
            _ => None,
        }
    }
}

/// One MEP session.
#[derive(Debug)]
pub struct Session {
    cfg: SessionConfig,
    state: State,
    created: Duration,
    last_rx: Duration,
    /// Set when this end ran late (see [`Session::tick`]): the peer is not
    /// judged silent before then. Cleared by the next frame.
    grace_until: Option<Duration>,
    next_keepalive: Duration,
    /// The keepalive in flight: its `sent_at_ms` and when it was sent.
    pending_keepalive: Option<(u64, Duration)>,
    rtt: Option<Duration>,
    /// Keepalives sent, and those of them counted lost (see
    /// [`Session::keepalives_lost`]).
    keepalives_sent: u64,
    keepalives_lost: u64,
    peer: Option<Hello>,
    /// TLS exporter bytes mixed into the proofs, when the link is TLS.
    binding: Option<Vec<u8>>,
    /// The Hello we sent.
    own_hello: Option<Hello>,
    /// Both Hellos hashed, once the peer's is in.
    transcript: Option<Transcript>,
    /// The sealing keys, from Up on.
    keys: Option<FrameKeys>,
}

impl Session {
    /// A session in `Connecting`, created at `now`.
    pub fn new(cfg: SessionConfig, now: Duration) -> Self {
        Session {
            cfg,
            state: State::Connecting,
            created: now,
            last_rx: now,
            grace_until: None,
            next_keepalive: now,
            pending_keepalive: None,
            rtt: None,
            keepalives_sent: 0,
            keepalives_lost: 0,
            peer: None,
            binding: None,
            own_hello: None,
            transcript: None,
            keys: None,
        }
    }

    pub fn state(&self) -> State {
        self.state
    }

    pub fn config(&self) -> &SessionConfig {
        &self.cfg
    }

    /// The peer's Hello, once received and accepted.
    pub fn peer(&self) -> Option<&Hello> {
        self.peer.as_ref()
    }

    /// The last measured link RTT.
    pub fn rtt(&self) -> Option<Duration> {
        self.rtt
    }

    /// Keepalives this session sent.
    pub fn keepalives_sent(&self) -> u64 {
        self.keepalives_sent
    }

    /// Keepalives this session sent whose echo never came: counted when the
    /// next one is due with the previous still unanswered, and when the
    /// session closes with one outstanding for a keepalive interval or more.
    /// Never more than [`Session::keepalives_sent`].
    pub fn keepalives_lost(&self) -> u64 {
        self.keepalives_lost
    }

    /// When the last frame arrived.
    pub fn last_received(&self) -> Duration {
        self.last_rx
    }

    /// The keepalive interval: a third of the timeout (at least 1 ms).
    pub fn keepalive_interval(&self) -> Duration {
        (self.cfg.keepalive_timeout / 3).max(Duration::from_millis(1))
    }

    /// The latest time at which [`Session::tick`] must be called.
    pub fn next_deadline(&self) -> Option<Duration> {
        let timeout = self.cfg.keepalive_timeout;
        match self.state {
            State::Closed => None,
            State::Connecting => Some(self.created + timeout),
            State::HelloSent | State::Authenticating => Some(self.last_rx + timeout),
            State::Up => Some(self.silent_at().min(self.next_keepalive)),
        }
    }

    /// When an Up session's peer counts as silent: a keepalive timeout
    /// after its last frame, or the end of a grace after this end ran late.
    fn silent_at(&self) -> Duration {
        let at = self.last_rx + self.cfg.keepalive_timeout;
        self.grace_until.map_or(at, |g| at.max(g))
    }

    /// The connection is ready: sends our Hello. `binding` is the TLS
    /// exporter value when the connection is TLS (see `docs/mep.md`).
    pub fn connected(&mut self, now: Duration, binding: Option<Vec<u8>>) -> Vec<Action> {
        if self.state != State::Connecting {
            return Vec::new();
        }
        self.binding = binding;
        self.last_rx = now;
        self.state = State::HelloSent;
        let hello = Hello {
            site: self.cfg.local_name.clone(),
            ip: self.cfg.local_ip,
            role: self.cfg.role,
            generation: self.cfg.generation,
            nonce: hex(&self.cfg.nonce),
            acting_for: self.cfg.acting_for.clone(),
            protocol: PROTOCOL_VERSION,
        };
        self.own_hello = Some(hello.clone());
        vec![Action::Send(Message::Hello(hello))]
    }

    /// The largest frame `length` to accept next: [`HANDSHAKE_MAX_FRAME`]
    /// until the peer is authenticated, `max_frame` after.
    pub fn frame_limit(&self, max_frame: usize) -> usize {
        if self.state == State::Up {
            max_frame
        } else {
            HANDSHAKE_MAX_FRAME.min(max_frame)
        }
    }

    /// Seals the frame of an [`Action::SendSealed`] encoded at
    /// `out[start..]` (the next sequence number of our direction).
    pub fn seal(&mut self, out: &mut Vec<u8>, start: usize) {
        if let Some(k) = &mut self.keys {
            k.seal(out, start);
        }
    }

    /// Appends the frame of a send action to `out`: sealed for
    /// [`Action::SendSealed`], in the peer's version for
    /// [`Action::SendLegacy`]. Other actions write nothing. On an error
    /// (a message over `max_frame`) `out` is as it was.
    pub fn encode(
        &mut self,
        action: &Action,
        max_frame: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), FrameError> {
        let start = out.len();
        match action {
            Action::Send(m) => frame::encode(m, max_frame, out),
            Action::SendSealed(m) => {
                // The tag counts in the frame's length, which stays within
                // `max_frame`.
                frame::encode(m, max_frame.saturating_sub(handshake::TAG_LEN), out)?;
                self.seal(out, start);
                Ok(())
            }
            Action::SendLegacy { msg, version } => {
                frame::encode_version(msg, *version, max_frame, out)
            }
            Action::Event(_) | Action::Close(_) => Ok(()),
        }
    }

    /// Reads one whole frame off the wire (`[length][version][kind] body`,
    /// as [`frame::FrameReader::next_frame`] returns it): once Up its seal
    /// is checked (and the receive sequence advances), then it is decoded.
    pub fn open(&mut self, bytes: &[u8]) -> Result<Message, OpenError> {
        let (version, kind) = frame::parse_header(bytes).map_err(OpenError::Malformed)?;
        if version != PROTOCOL_VERSION {
            return Err(OpenError::OtherVersion(version, kind));
        }
        let Some(kind) = kind else {
            unreachable!("parse_header checks the kind of the current version");
        };
        let body = match &mut self.keys {
            Some(keys) if self.state == State::Up => keys.open(bytes).map_err(OpenError::Seal)?,
            _ => &bytes[HEADER_LEN..],
        };
        frame::parse_body(kind, body).map_err(OpenError::Malformed)
    }

    /// One whole frame arrived off the wire: [`Session::open`]ed and
    /// handled. A frame that fails its seal ends the session.
    pub fn on_frame_bytes(&mut self, bytes: &[u8], now: Duration) -> Vec<Action> {
        if matches!(self.state, State::Closed | State::Connecting) {
            return Vec::new();
        }
        match self.open(bytes) {
            Ok(msg) => self.on_frame(msg, now),
            Err(OpenError::Malformed(e)) => self.on_decode_error(e, now),
            Err(OpenError::OtherVersion(version, kind)) => {
                self.on_other_version(version, kind, bytes, now)
            }
            Err(OpenError::Seal(e)) => {
                self.last_rx = now;
                let why = e.to_string();
                let mut out = vec![Action::Event(SessionEvent::AuthFailed {
                    reason: why.clone(),
                })];
                out.extend(self.protocol_error(why, now));
                out
            }
        }
    }

    /// A frame of another protocol version: a peer that speaks an older
    /// protocol is told, in a Reject of its own version, and its Reject is
    /// read; anything else is a malformed frame.
    fn on_other_version(
        &mut self,
        version: u8,
        kind: Option<Kind>,
        bytes: &[u8],
        now: Duration,
    ) -> Vec<Action> {
        let msg = match kind {
            Some(k @ (Kind::Hello | Kind::Reject)) if self.state != State::Up => {
                frame::parse_body(k, &bytes[HEADER_LEN..]).ok()
            }
            _ => None,
        };
        match msg {
            Some(Message::Reject(r)) => {
                self.last_rx = now;
                self.close(
                    CloseReason::RejectedByPeer(format!(
                        "{} (the peer speaks MEP protocol {version}, this node {PROTOCOL_VERSION})",
                        r.reason
                    )),
                    now,
                )
            }
            Some(Message::Hello(h)) => {
                self.last_rx = now;
                let why = format!(
                    "site {} speaks MEP protocol {version} but this node requires protocol \
                     {PROTOCOL_VERSION} (mutual authentication and sealed frames): upgrade \
                     every node of the GSLB to the same release",
                    h.site
                );
                let mut out = vec![Action::SendLegacy {
                    msg: Message::Reject(Reject {
                        reason: why.clone(),
                    }),
                    version,
                }];
                out.extend(self.close(CloseReason::Protocol(why), now));
                out
            }
            _ => self.on_decode_error(FrameError::UnknownVersion(version), now),
        }
    }

    /// A message arrived. The driver passes frames to
    /// [`Session::on_frame_bytes`], which checks their seal; this entry is
    /// for simulations that carry messages, not bytes.
    pub fn on_frame(&mut self, msg: Message, now: Duration) -> Vec<Action> {
        if matches!(self.state, State::Closed | State::Connecting) {
            return Vec::new();
        }
        self.last_rx = now;
        self.grace_until = None;
        if let Message::Reject(r) = msg {
            if self.state == State::Authenticating && self.cfg.initiator && r.reason == AUTH_FAILED
            {
                // Our proof was refused: the operator here needs to know
                // as much as the one at the other end.
                let why = "the peer refused this node's proof (the passwords differ, or none is \
                           configured there)";
                return [Action::Event(SessionEvent::AuthFailed {
                    reason: why.into(),
                })]
                .into_iter()
                .chain(self.close(CloseReason::AuthFailed(why.into()), now))
                .collect();
            }
            return self.close(CloseReason::RejectedByPeer(r.reason), now);
        }
        match self.state {
            State::HelloSent => match msg {
                Message::Hello(h) => self.on_hello(h, now),
                other => self.protocol_error(format!("expected Hello, got {}", other.kind()), now),
            },
            State::Authenticating => match msg {
                Message::AuthProof(p) => self.on_proof(p, now),
                other => {
                    self.protocol_error(format!("expected AuthProof, got {}", other.kind()), now)
                }
            },
            State::Up => match msg {
                Message::Keepalive(k) => {
                    vec![Action::SendSealed(Message::KeepaliveAck(KeepaliveAck {
                        echo: k.sent_at_ms,
                    }))]
                }
                Message::KeepaliveAck(a) => match self.pending_keepalive {
                    Some((ms, sent)) if ms == a.echo => {
                        self.pending_keepalive = None;
                        let rtt = now.saturating_sub(sent);
                        self.rtt = Some(rtt);
                        vec![Action::Event(SessionEvent::Rtt(rtt))]
                    }
                    // A late echo of an older keepalive: still proof of life
                    // (it counts as a frame), but that keepalive was counted
                    // lost when its successor went out and stays counted: a
                    // keepalive answered after a whole interval is as good
                    // as lost for the link's quality.
                    _ => Vec::new(),
                },
                m @ (Message::Hello(_) | Message::AuthProof(_)) => {
                    self.protocol_error(format!("unexpected {} after the handshake", m.kind()), now)
                }
                data => vec![Action::Event(SessionEvent::Received(data))],
            },
            State::Connecting | State::Closed => unreachable!("handled above"),
        }
    }

    /// A frame could not be decoded: the stream is lost, so is the session.
    pub fn on_decode_error(&mut self, err: FrameError, now: Duration) -> Vec<Action> {
        if self.state == State::Closed {
            return Vec::new();
        }
        let mut out = Vec::new();
        if self.state != State::Connecting {
            out.push(self.framed(Message::Reject(Reject {
                reason: format!("malformed frame: {err}"),
            })));
        }
        out.extend(self.close(CloseReason::Malformed(err), now));
        out
    }

    /// The peer closed the connection (EOF or a reset).
    pub fn on_eof(&mut self, now: Duration) -> Vec<Action> {
        if self.state == State::Closed {
            return Vec::new();
        }
        self.close(CloseReason::PeerClosed, now)
    }

    /// The driver lost the connection itself (a write failed or blocked):
    /// closes without a frame for the peer, which could not be sent.
    pub fn abort(&mut self, reason: CloseReason, now: Duration) -> Vec<Action> {
        if self.state == State::Closed {
            return Vec::new();
        }
        self.close(reason, now)
    }

    /// Time passed: timeouts and keepalives. A tick a keepalive interval
    /// or more after [`Session::next_deadline`] means this end did not
    /// run (a starved process, a paused VM): it does not time the peer
    /// out then, but sends a keepalive and waits one more interval to hear
    /// from it, once until it does.
    pub fn tick(&mut self, now: Duration) -> Vec<Action> {
        let timeout = self.cfg.keepalive_timeout;
        match self.state {
            State::Closed => Vec::new(),
            State::Connecting => {
                if now >= self.created + timeout {
                    self.close(CloseReason::ConnectTimeout(timeout), now)
                } else {
                    Vec::new()
                }
            }
            State::Up if self.grace_until.is_none() && self.ran_late(now) => {
                // This end ran a keepalive interval or more past its own
                // deadline (a starved process, a paused VM), so the
                // silence may have been ours: the peer's frames can be
                // waiting unread, or it could not send either. A keepalive
                // now, and one interval for the peer to be heard, once
                // until it is heard again.
                self.grace_until = Some(now + self.keepalive_interval());
                self.keepalive_due(now)
            }
            State::Up if now >= self.silent_at() => self.close(CloseReason::Timeout(timeout), now),
            State::HelloSent | State::Authenticating if now >= self.last_rx + timeout => {
                self.close(CloseReason::Timeout(timeout), now)
            }
            State::Up if now >= self.next_keepalive => self.keepalive_due(now),
            _ => Vec::new(),
        }
    }

    /// Sends a data message if the session is Up (dropped otherwise: the
    /// driver sends the full current state when a session comes up).
    pub fn send(&mut self, msg: Message) -> Vec<Action> {
        if self.state == State::Up {
            vec![Action::SendSealed(msg)]
        } else {
            Vec::new()
        }
    }

    /// We end the session: tells the peer why (if connected) and closes.
    pub fn reject(&mut self, reason: impl Into<String>, now: Duration) -> Vec<Action> {
        let reason = reason.into();
        let mut out = Vec::new();
        match self.state {
            State::Closed => return out,
            State::Connecting => {}
            _ => out.push(self.framed(Message::Reject(Reject {
                reason: reason.clone(),
            }))),
        }
        out.extend(self.close(CloseReason::Local(reason), now));
        out
    }

    fn on_hello(&mut self, h: Hello, now: Duration) -> Vec<Action> {
        if h.protocol != PROTOCOL_VERSION {
            return self.protocol_error(
                format!(
                    "protocol version {} not supported (this node speaks {PROTOCOL_VERSION})",
                    h.protocol
                ),
                now,
            );
        }
        if !h.site.eq_ignore_ascii_case(&self.cfg.peer_name) {
            return self.protocol_error(
                format!(
                    "this connection is for site {} but the peer says it is {}",
                    self.cfg.peer_name, h.site
                ),
                now,
            );
        }
        if h.ip != self.cfg.peer_ip {
            return self.protocol_error(
                format!(
                    "site {} announces IP {} but is configured as {}",
                    h.site, h.ip, self.cfg.peer_ip
                ),
                now,
            );
        }
        let Some(peer_nonce) = unhex32(&h.nonce) else {
            return self.protocol_error("the Hello nonce is not 32 bytes of hex".into(), now);
        };
        if peer_nonce == self.cfg.nonce {
            return self.protocol_error("the peer echoed our own nonce".into(), now);
        }
        let Some(own) = &self.own_hello else {
            unreachable!("HelloSent has sent our Hello");
        };
        let transcript = if self.cfg.initiator {
            Transcript::new(own, &h, self.binding.as_deref())
        } else {
            Transcript::new(&h, own, self.binding.as_deref())
        };
        self.transcript = Some(transcript);
        self.peer = Some(h);
        self.state = State::Authenticating;
        if self.cfg.initiator {
            let hmac = handshake::proof(
                self.cfg.secret.as_deref(),
                &transcript,
                Direction::Initiator,
            );
            vec![Action::Send(Message::AuthProof(AuthProof { hmac }))]
        } else {
            // The acceptor proves nothing until the initiator has.
            Vec::new()
        }
    }

    fn on_proof(&mut self, p: AuthProof, now: Duration) -> Vec<Action> {
        let (Some(peer), Some(transcript)) = (self.peer.clone(), self.transcript) else {
            unreachable!("Authenticating has the peer's Hello and the transcript");
        };
        let (me, them) = if self.cfg.initiator {
            (Direction::Initiator, Direction::Acceptor)
        } else {
            (Direction::Acceptor, Direction::Initiator)
        };
        let secret = self.cfg.secret.as_deref();
        if let Err(why) = handshake::verify(secret, &transcript, them, &p.hmac) {
            let mut out = vec![
                Action::Event(SessionEvent::AuthFailed {
                    reason: why.to_string(),
                }),
                Action::Send(Message::Reject(Reject {
                    reason: AUTH_FAILED.into(),
                })),
            ];
            out.extend(self.close(CloseReason::AuthFailed(why.into()), now));
            return out;
        }
        let mut out = Vec::new();
        if me == Direction::Acceptor {
            let hmac = handshake::proof(secret, &transcript, me);
            out.push(Action::Send(Message::AuthProof(AuthProof { hmac })));
        }
        self.keys = Some(FrameKeys::new(secret, &transcript, me));
        self.state = State::Up;
        out.push(Action::Event(SessionEvent::Up { peer }));
        out.extend(self.keepalive(now));
        out
    }

    /// A message framed for the session's state: sealed once Up.
    fn framed(&self, msg: Message) -> Action {
        if self.state == State::Up {
            Action::SendSealed(msg)
        } else {
            Action::Send(msg)
        }
    }

    /// Sends a keepalive: the frame, then the event that counts it.
    /// Whether `now` is a keepalive interval or more past the deadline
    /// this session asked to be ticked at.
    fn ran_late(&self, now: Duration) -> bool {
        self.next_deadline()
            .is_some_and(|d| now >= d + self.keepalive_interval())
    }

    /// The next keepalive; the one before it, if its echo has not come,
    /// counts lost.
    fn keepalive_due(&mut self, now: Duration) -> Vec<Action> {
        let mut out = Vec::new();
        if self.pending_keepalive.take().is_some() {
            // Its successor is due and its echo has not come.
            self.keepalives_lost += 1;
            out.push(Action::Event(SessionEvent::KeepaliveLost));
        }
        out.extend(self.keepalive(now));
        out
    }

    fn keepalive(&mut self, now: Duration) -> [Action; 2] {
        let ms = now.as_millis() as u64;
        self.pending_keepalive = Some((ms, now));
        self.next_keepalive = now + self.keepalive_interval();
        self.keepalives_sent += 1;
        [
            Action::SendSealed(Message::Keepalive(Keepalive { sent_at_ms: ms })),
            Action::Event(SessionEvent::KeepaliveSent),
        ]
    }

    fn protocol_error(&mut self, why: String, now: Duration) -> Vec<Action> {
        let mut out = vec![self.framed(Message::Reject(Reject {
            reason: why.clone(),
        }))];
        out.extend(self.close(CloseReason::Protocol(why), now));
        out
    }

    /// Closes; a keepalive outstanding for a whole interval or more (its
    /// successor was due) is counted lost first.
    fn close(&mut self, reason: CloseReason, now: Duration) -> Vec<Action> {
        let mut out = Vec::new();
        if let Some((_, sent)) = self.pending_keepalive.take()
            && now.saturating_sub(sent) >= self.keepalive_interval()
        {
            self.keepalives_lost += 1;
            out.push(Action::Event(SessionEvent::KeepaliveLost));
        }
        self.state = State::Closed;
        out.push(Action::Close(reason));
        out
    }
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

pub(crate) fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    s.as_bytes()
        .chunks(2)
        .map(|p| {
            let hi = (p[0] as char).to_digit(16)?;
            let lo = (p[1] as char).to_digit(16)?;
            Some((hi * 16 + lo) as u8)
        })
        .collect()
}

fn unhex32(s: &str) -> Option<[u8; 32]> {
    unhex(s)?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::*;

    const T: Duration = Duration::from_millis(900);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn cfg(local: &str, peer: &str, secret: Option<&str>, nonce: u8) -> SessionConfig {
        let ip = |n: &str| -> IpAddr {
            match n {
                "a" => "127.0.0.1".parse().unwrap(),
                _ => "127.0.0.2".parse().unwrap(),
            }
        };
        SessionConfig {
            local_name: local.into(),
            local_ip: ip(local),
            role: Role::Flat,
            generation: 1,
            peer_name: peer.into(),
            peer_ip: ip(peer),
            secret: secret.map(|s| s.as_bytes().to_vec()),
            nonce: [nonce; 32],
            acting_for: None,
            keepalive_timeout: T,
            // "a" dials, "b" accepts.
            initiator: local == "a",
        }
    }

    fn sends(actions: &[Action]) -> Vec<Message> {
        actions.iter().filter_map(|a| a.sent().cloned()).collect()
    }

    fn closed(actions: &[Action]) -> Option<CloseReason> {
        match actions.last() {
            Some(Action::Close(r)) => Some(r.clone()),
            _ => None,
        }
    }

    fn events(actions: &[Action]) -> Vec<SessionEvent> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Event(e) => Some(e.clone()),
                _ => None,
            })
            .collect()
    }

    /// Delivers every frame of `out` to `to`; returns `to`'s actions.
    fn deliver(out: &[Action], to: &mut Session, now: Duration) -> Vec<Action> {
        let mut all = Vec::new();
        for m in sends(out) {
            // Through the codec, as on the wire.
            let bytes = crate::frame::encode_to_vec(&m, 1 << 20).unwrap();
            let (m, _) = crate::frame::decode(&bytes, 1 << 20).unwrap().unwrap();
            all.extend(to.on_frame(m, now));
        }
        all
    }

    /// Runs a full handshake, `a` dialling; returns (a, b, a's actions on
    /// b's answer, b's actions on a's proof).
    fn handshake(
        ca: SessionConfig,
        cb: SessionConfig,
    ) -> (Session, Session, Vec<Action>, Vec<Action>) {
        handshake_bound(ca, cb, None, None)
    }

    /// [`handshake`] with each end's TLS exporter value.
    fn handshake_bound(
        ca: SessionConfig,
        cb: SessionConfig,
        bind_a: Option<Vec<u8>>,
        bind_b: Option<Vec<u8>>,
    ) -> (Session, Session, Vec<Action>, Vec<Action>) {
        let mut a = Session::new(ca, ms(0));
        let mut b = Session::new(cb, ms(0));
        assert_eq!(a.state(), State::Connecting);
        let ha = a.connected(ms(1), bind_a);
        let hb = b.connected(ms(1), bind_b);
        assert_eq!(a.state(), State::HelloSent);
        assert!(matches!(&sends(&ha)[..], [Message::Hello(_)]));
        // The acceptor answers the initiator's Hello with nothing: it
        // proves itself only once the initiator has.
        assert!(deliver(&ha, &mut b, ms(2)).is_empty());
        let pa = deliver(&hb, &mut a, ms(2)); // a gets b's hello -> a's proof
        assert!(matches!(&sends(&pa)[..], [Message::AuthProof(_)]));
        assert_eq!(a.state(), State::Authenticating);
        assert_eq!(b.state(), State::Authenticating);
        let rb = deliver(&pa, &mut b, ms(3));
        // b's proof (or refusal), without the keepalive that follows it.
        let answer: Vec<Action> = rb
            .iter()
            .filter(|x| matches!(x.sent(), Some(Message::AuthProof(_) | Message::Reject(_))))
            .cloned()
            .collect();
        let ra = deliver(&answer, &mut a, ms(3));
        (a, b, ra, rb)
    }

    #[test]
    fn handshake_without_secret_comes_up() {
        let (a, b, ra, rb) = handshake(cfg("a", "b", None, 1), cfg("b", "a", None, 2));
        assert_eq!(a.state(), State::Up);
        assert_eq!(b.state(), State::Up);
        let ev = events(&ra);
        assert!(matches!(&ev[0], SessionEvent::Up { peer } if peer.site == "b"));
        // First keepalive right away.
        assert!(matches!(&sends(&ra)[..], [Message::Keepalive(_)]));
        assert!(matches!(&events(&rb)[0], SessionEvent::Up { peer } if peer.site == "a"));
        assert_eq!(a.peer().unwrap().nonce, hex(&[2; 32]));
    }

    #[test]
    fn handshake_with_the_same_secret_comes_up() {
        let (a, b, _, _) = handshake(
            cfg("a", "b", Some("s3cret"), 1),
            cfg("b", "a", Some("s3cret"), 2),
        );
        assert_eq!(a.state(), State::Up);
        assert_eq!(b.state(), State::Up);
    }

    #[test]
    fn a_placeholder_secret_never_authenticates() {
        // Both ends with the same, publicly known placeholder.
        let placeholder = "SEXTANT-REENTER-rpcNode-10.0.0.2";
        let (a, b, ra, rb) = handshake(
            cfg("a", "b", Some(placeholder), 1),
            cfg("b", "a", Some(placeholder), 2),
        );
        assert_eq!((a.state(), b.state()), (State::Closed, State::Closed));
        assert!(
            matches!(closed(&rb), Some(CloseReason::AuthFailed(s)) if s.contains("placeholder")),
            "{rb:?}"
        );
        assert!(
            matches!(closed(&ra), Some(CloseReason::AuthFailed(s)) if s.contains("refused this node's proof"))
        );
    }

    #[test]
    fn wrong_secret_fails_at_the_acceptor_which_proves_nothing() {
        let (a, b, ra, rb) =
            handshake(cfg("a", "b", Some("one"), 1), cfg("b", "a", Some("two"), 2));
        assert_eq!((a.state(), b.state()), (State::Closed, State::Closed));
        assert!(matches!(&events(&rb)[0], SessionEvent::AuthFailed { .. }));
        assert_eq!(
            sends(&rb),
            vec![Message::Reject(Reject {
                reason: AUTH_FAILED.into()
            })],
            "no proof of the acceptor's goes out"
        );
        assert!(matches!(closed(&rb), Some(CloseReason::AuthFailed(_))));
        // The initiator says so too.
        assert!(matches!(&events(&ra)[0], SessionEvent::AuthFailed { .. }));
        assert!(
            matches!(closed(&ra), Some(CloseReason::AuthFailed(s)) if s.contains("refused this node's proof"))
        );
    }

    #[test]
    fn a_wrong_acceptor_proof_fails_at_the_initiator() {
        let mut a = Session::new(cfg("a", "b", Some("k"), 1), ms(0));
        a.connected(ms(0), None);
        let mut b = Session::new(cfg("b", "a", Some("k"), 2), ms(0));
        let hb = b.connected(ms(0), None);
        deliver(&hb, &mut a, ms(1));
        // The initiator's own proof, reflected back as the acceptor's.
        let mine = a
            .transcript
            .map(|t| crate::handshake::proof(Some(b"k"), &t, Direction::Initiator));
        let r = a.on_frame(
            Message::AuthProof(AuthProof {
                hmac: mine.unwrap(),
            }),
            ms(2),
        );
        assert!(
            matches!(closed(&r), Some(CloseReason::AuthFailed(s)) if s.contains("wrong proof"))
        );
    }

    #[test]
    fn secret_on_one_side_only_fails() {
        let (a, b, _, rb) = handshake(cfg("a", "b", Some("one"), 1), cfg("b", "a", None, 2));
        assert_eq!((a.state(), b.state()), (State::Closed, State::Closed));
        assert!(
            matches!(closed(&rb), Some(CloseReason::AuthFailed(s)) if s.contains("none is configured"))
        );
        let (a, b, ra, rb) = handshake(cfg("a", "b", None, 1), cfg("b", "a", Some("one"), 2));
        assert_eq!((a.state(), b.state()), (State::Closed, State::Closed));
        assert!(matches!(closed(&rb), Some(CloseReason::AuthFailed(s)) if s.contains("no proof")));
        assert!(matches!(closed(&ra), Some(CloseReason::AuthFailed(_))));
    }

    #[test]
    fn tls_binding_must_match() {
        // A man in the middle terminating two TLS sessions sees two bindings.
        let (a, b, _, rb) = handshake_bound(
            cfg("a", "b", Some("k"), 1),
            cfg("b", "a", Some("k"), 2),
            Some(vec![1; 32]),
            Some(vec![2; 32]),
        );
        assert_eq!((a.state(), b.state()), (State::Closed, State::Closed));
        assert!(matches!(closed(&rb), Some(CloseReason::AuthFailed(_))));
        // The same binding on both ends works.
        let (a, b, _, _) = handshake_bound(
            cfg("a", "b", Some("k"), 1),
            cfg("b", "a", Some("k"), 2),
            Some(vec![3; 32]),
            Some(vec![3; 32]),
        );
        assert_eq!((a.state(), b.state()), (State::Up, State::Up));
    }

    #[test]
    fn malformed_proof_is_an_auth_failure() {
        let mut a = Session::new(cfg("a", "b", Some("k"), 1), ms(0));
        let mut b = Session::new(cfg("b", "a", Some("k"), 2), ms(0));
        a.connected(ms(0), None);
        let hb = b.connected(ms(0), None);
        deliver(&hb, &mut a, ms(1));
        let r = a.on_frame(Message::AuthProof(AuthProof { hmac: "zz".into() }), ms(2));
        assert!(matches!(closed(&r), Some(CloseReason::AuthFailed(s)) if s.contains("not hex")));
    }

    fn hello_from_b() -> Hello {
        Hello {
            site: "b".into(),
            ip: "127.0.0.2".parse().unwrap(),
            role: Role::Flat,
            generation: 1,
            nonce: hex(&[2; 32]),
            acting_for: None,
            protocol: PROTOCOL_VERSION,
        }
    }

    fn after_hello_sent() -> Session {
        let mut a = Session::new(cfg("a", "b", None, 1), ms(0));
        a.connected(ms(0), None);
        a
    }

    #[test]
    fn bad_hellos_are_rejected() {
        let cases: Vec<(Hello, &str)> = vec![
            (
                Hello {
                    protocol: 3,
                    ..hello_from_b()
                },
                "protocol version 3",
            ),
            (
                Hello {
                    site: "c".into(),
                    ..hello_from_b()
                },
                "for site b",
            ),
            (
                Hello {
                    ip: "127.0.0.9".parse().unwrap(),
                    ..hello_from_b()
                },
                "announces IP",
            ),
            (
                Hello {
                    nonce: "abc".into(),
                    ..hello_from_b()
                },
                "nonce",
            ),
            (
                Hello {
                    nonce: hex(&[1; 32]),
                    ..hello_from_b()
                },
                "our own nonce",
            ),
        ];
        for (h, want) in cases {
            let mut a = after_hello_sent();
            let r = a.on_frame(Message::Hello(h), ms(1));
            assert!(matches!(&sends(&r)[..], [Message::Reject(_)]), "{want}");
            assert!(
                matches!(closed(&r), Some(CloseReason::Protocol(s)) if s.contains(want)),
                "{want}: {r:?}"
            );
            assert_eq!(a.state(), State::Closed);
        }
        // The name is compared ignoring case.
        let mut a = after_hello_sent();
        a.on_frame(
            Message::Hello(Hello {
                site: "B".into(),
                ..hello_from_b()
            }),
            ms(1),
        );
        assert_eq!(a.state(), State::Authenticating);
    }

    #[test]
    fn unexpected_messages_close_in_every_state() {
        let data = Message::SiteMetrics(SiteMetrics::default());
        // HelloSent: anything but Hello.
        let mut a = after_hello_sent();
        let r = a.on_frame(data.clone(), ms(1));
        assert!(
            matches!(closed(&r), Some(CloseReason::Protocol(s)) if s.contains("expected Hello"))
        );
        // Authenticating: anything but AuthProof.
        let mut a = after_hello_sent();
        a.on_frame(Message::Hello(hello_from_b()), ms(1));
        let r = a.on_frame(data.clone(), ms(2));
        assert!(
            matches!(closed(&r), Some(CloseReason::Protocol(s)) if s.contains("expected AuthProof"))
        );
        // Up: a second Hello.
        let (mut a, _, _, _) = handshake(cfg("a", "b", None, 1), cfg("b", "a", None, 2));
        let r = a.on_frame(Message::Hello(hello_from_b()), ms(5));
        assert!(
            matches!(closed(&r), Some(CloseReason::Protocol(s)) if s.contains("after the handshake"))
        );
        // Closed: ignored.
        assert!(a.on_frame(data.clone(), ms(6)).is_empty());
        assert!(a.tick(ms(10_000)).is_empty());
        assert!(a.on_eof(ms(6)).is_empty());
        assert!(a.send(data).is_empty());
    }

    #[test]
    fn reject_closes_in_every_state() {
        let rej = || {
            Message::Reject(Reject {
                reason: "go away".into(),
            })
        };
        let mut a = after_hello_sent();
        let r = a.on_frame(rej(), ms(1));
        assert_eq!(
            r,
            vec![Action::Close(CloseReason::RejectedByPeer("go away".into()))]
        );
        let mut a = after_hello_sent();
        a.on_frame(Message::Hello(hello_from_b()), ms(1));
        let r = a.on_frame(rej(), ms(1));
        assert!(matches!(closed(&r), Some(CloseReason::RejectedByPeer(_))));
        let (mut a, _, _, _) = handshake(cfg("a", "b", None, 1), cfg("b", "a", None, 2));
        let r = a.on_frame(rej(), ms(5));
        assert!(matches!(closed(&r), Some(CloseReason::RejectedByPeer(_))));
    }

    #[test]
    fn data_flows_when_up_only() {
        let data = Message::ServiceStates(ServiceStates::default());
        let mut a = after_hello_sent();
        assert!(a.send(data.clone()).is_empty());
        let (mut a, mut b, _, _) = handshake(cfg("a", "b", None, 1), cfg("b", "a", None, 2));
        let out = a.send(data.clone());
        assert_eq!(out, vec![Action::SendSealed(data.clone())]);
        let r = deliver(&out, &mut b, ms(10));
        assert_eq!(r, vec![Action::Event(SessionEvent::Received(data))]);
    }

    #[test]
    fn config_sync_messages_are_data() {
        let version = ConfigVersion {
            incarnation: 3,
            origin: "a".into(),
            digest: "sha256:00".into(),
        };
        let msgs = [
            Message::ConfigOffer(ConfigOffer {
                version: version.clone(),
                software: "0.1.0".into(),
                sync_protocol: 1,
                syntax: "toml".into(),
                automatic: true,
            }),
            Message::ConfigUpdate(ConfigUpdate {
                transfer: 1,
                version: version.clone(),
                base: None,
                part: 0,
                last: true,
                text: "[[site]]\n".into(),
                ops: Vec::new(),
                forced: false,
                files: Vec::new(),
                lineage: Vec::new(),
            }),
            Message::ConfigResult(ConfigResult {
                transfer: 1,
                version: version.clone(),
                outcome: ConfigOutcome::Applied,
                errors: Vec::new(),
                warnings: Vec::new(),
                running: version,
            }),
        ];
        for m in msgs {
            // Not before the handshake, either way.
            let mut a = after_hello_sent();
            assert!(a.send(m.clone()).is_empty());
            let r = a.on_frame(m.clone(), ms(1));
            assert!(
                matches!(closed(&r), Some(CloseReason::Protocol(s)) if s.contains("expected Hello"))
            );
            // Up: delivered as they came.
            let (mut a, mut b, _, _) = handshake(cfg("a", "b", None, 1), cfg("b", "a", None, 2));
            let out = a.send(m.clone());
            assert_eq!(out, vec![Action::SendSealed(m.clone())]);
            let r = deliver(&out, &mut b, ms(10));
            assert_eq!(r, vec![Action::Event(SessionEvent::Received(m))]);
            assert_eq!(b.state(), State::Up);
        }
    }

    #[test]
    fn keepalives_measure_rtt_and_repeat() {
        let (mut a, mut b, ra, _) = handshake(cfg("a", "b", None, 1), cfg("b", "a", None, 2));
        // a's first keepalive (sent at 3 ms) reaches b at 4 ms, the echo a at 10 ms.
        let ack = deliver(&ra, &mut b, ms(4));
        assert_eq!(
            sends(&ack),
            vec![Message::KeepaliveAck(KeepaliveAck { echo: 3 })]
        );
        let r = deliver(&ack, &mut a, ms(10));
        assert_eq!(r, vec![Action::Event(SessionEvent::Rtt(ms(7)))]);
        assert_eq!(a.rtt(), Some(ms(7)));
        // A stale echo is ignored.
        assert!(
            a.on_frame(Message::KeepaliveAck(KeepaliveAck { echo: 1 }), ms(11))
                .is_empty()
        );
        // Next keepalive at 3 + 300 ms.
        assert_eq!(a.keepalive_interval(), ms(300));
        assert_eq!(a.next_deadline(), Some(ms(303)));
        assert!(a.tick(ms(302)).is_empty());
        let k = a.tick(ms(303));
        assert_eq!(
            sends(&k),
            vec![Message::Keepalive(Keepalive { sent_at_ms: 303 })]
        );
        assert_eq!(a.next_deadline(), Some(ms(603)));
    }

    #[test]
    fn silence_for_the_timeout_closes_up_sessions() {
        let (mut a, _, _, _) = handshake(cfg("a", "b", None, 1), cfg("b", "a", None, 2));
        // Last frame at 3 ms; keepalives go out but nothing comes back.
        let mut t = 3;
        let mut closed_at = None;
        while t < 2000 {
            t += 50;
            let r = a.tick(ms(t));
            if let Some(reason) = closed(&r) {
                assert_eq!(reason, CloseReason::Timeout(T));
                closed_at = Some(t);
                break;
            }
        }
        assert_eq!(closed_at, Some(903));
        assert_eq!(a.state(), State::Closed);
        assert_eq!(a.next_deadline(), None);
    }

    #[test]
    fn a_tick_that_comes_late_gives_the_peer_one_interval_once() {
        let hs = || handshake(cfg("a", "b", None, 1), cfg("b", "a", None, 2)).0;
        // Last frame at 3 ms, deadline 303 (the next keepalive); this end
        // runs again only at 2,000 ms, long past the timeout (903).
        let mut a = hs();
        let r = a.tick(ms(2000));
        assert_eq!(closed(&r), None, "{r:?}");
        assert_eq!(
            sends(&r),
            vec![Message::Keepalive(Keepalive { sent_at_ms: 2000 })]
        );
        // The keepalive from before the stall was never echoed.
        assert_eq!(events(&r)[0], SessionEvent::KeepaliveLost);
        assert_eq!(a.next_deadline(), Some(ms(2300)));
        // Nothing heard within the interval: closed at its end.
        assert!(a.tick(ms(2299)).is_empty());
        assert_eq!(closed(&a.tick(ms(2300))), Some(CloseReason::Timeout(T)));

        // Heard within it: the session goes on, on the usual deadlines,
        // and a later stall gets its interval again.
        let mut a = hs();
        a.tick(ms(2000));
        a.on_frame(Message::KeepaliveAck(KeepaliveAck { echo: 2000 }), ms(2005));
        assert_eq!(a.next_deadline(), Some(ms(2300)));
        assert_eq!(closed(&a.tick(ms(2300))), None);
        assert_eq!(a.next_deadline(), Some(ms(2600)));
        let r = a.tick(ms(5000));
        assert_eq!(closed(&r), None, "{r:?}");
        assert_eq!(a.state(), State::Up);

        // Late again before the peer was heard: no second interval.
        let mut a = hs();
        a.tick(ms(2000));
        assert_eq!(closed(&a.tick(ms(4000))), Some(CloseReason::Timeout(T)));

        // A tick late by less than an interval judges as before: ticked
        // on time until the timeout's deadline (903), then 197 ms late.
        let mut a = hs();
        a.tick(ms(303));
        a.tick(ms(603));
        assert_eq!(a.next_deadline(), Some(ms(903)));
        assert_eq!(closed(&a.tick(ms(1100))), Some(CloseReason::Timeout(T)));
    }

    #[test]
    fn any_frame_keeps_the_session_alive() {
        let (mut a, _, _, _) = handshake(cfg("a", "b", None, 1), cfg("b", "a", None, 2));
        for t in (100..3000).step_by(100) {
            a.on_frame(Message::SiteMetrics(SiteMetrics::default()), ms(t));
            assert!(closed(&a.tick(ms(t + 50))).is_none());
        }
        assert_eq!(a.state(), State::Up);
    }

    #[test]
    fn handshake_timeouts() {
        // Never connected.
        let mut a = Session::new(cfg("a", "b", None, 1), ms(100));
        assert_eq!(a.next_deadline(), Some(ms(1000)));
        assert!(a.tick(ms(999)).is_empty());
        assert_eq!(
            a.tick(ms(1000)),
            vec![Action::Close(CloseReason::ConnectTimeout(T))]
        );
        // Connected, no Hello from the peer.
        let mut a = after_hello_sent();
        assert_eq!(closed(&a.tick(ms(900))), Some(CloseReason::Timeout(T)));
        // Hello, no proof.
        let mut a = after_hello_sent();
        a.on_frame(Message::Hello(hello_from_b()), ms(100));
        assert!(a.tick(ms(999)).is_empty());
        assert_eq!(closed(&a.tick(ms(1000))), Some(CloseReason::Timeout(T)));
    }

    #[test]
    fn garbage_and_eof_close() {
        let mut a = after_hello_sent();
        let r = a.on_decode_error(FrameError::UnknownKind(99), ms(1));
        assert!(matches!(&sends(&r)[..], [Message::Reject(_)]));
        assert_eq!(
            closed(&r),
            Some(CloseReason::Malformed(FrameError::UnknownKind(99)))
        );
        let (mut a, _, _, _) = handshake(cfg("a", "b", None, 1), cfg("b", "a", None, 2));
        assert_eq!(
            a.on_eof(ms(5)),
            vec![Action::Close(CloseReason::PeerClosed)]
        );
    }

    #[test]
    fn local_reject_tells_the_peer() {
        let (mut a, mut b, _, _) = handshake(cfg("a", "b", None, 1), cfg("b", "a", None, 2));
        let r = a.reject("parent P1 is back", ms(5));
        assert_eq!(
            closed(&r),
            Some(CloseReason::Local("parent P1 is back".into()))
        );
        let rb = deliver(&r, &mut b, ms(5));
        assert_eq!(
            rb,
            vec![Action::Close(CloseReason::RejectedByPeer(
                "parent P1 is back".into()
            ))]
        );
        // Before connecting there is nobody to tell.
        let mut c = Session::new(cfg("a", "b", None, 1), ms(0));
        assert_eq!(
            c.reject("bye", ms(0)),
            vec![Action::Close(CloseReason::Local("bye".into()))]
        );
    }

    #[test]
    fn acting_for_travels_in_the_hello() {
        let mut ca = cfg("a", "b", None, 1);
        ca.acting_for = Some("P1".into());
        let (_, b, _, rb) = handshake(ca, cfg("b", "a", None, 2));
        assert_eq!(b.peer().unwrap().acting_for.as_deref(), Some("P1"));
        assert!(
            matches!(&events(&rb)[0], SessionEvent::Up { peer } if peer.acting_for.as_deref() == Some("P1"))
        );
    }

    #[test]
    fn frames_before_connected_are_ignored() {
        let mut a = Session::new(cfg("a", "b", None, 1), ms(0));
        assert!(a.on_frame(Message::Hello(hello_from_b()), ms(1)).is_empty());
        assert_eq!(a.state(), State::Connecting);
        assert!(a.connected(ms(1), None).len() == 1);
        assert!(a.connected(ms(2), None).is_empty());
    }

    /// Delivers `a`'s frames in `out` to `b` and `b`'s answers back to `a`,
    /// all at `now`; returns `a`'s actions.
    fn round_trip(out: &[Action], a: &mut Session, b: &mut Session, now: Duration) -> Vec<Action> {
        let answers = deliver(out, b, now);
        deliver(&answers, a, now)
    }

    fn count(actions: &[Action], e: SessionEvent) -> usize {
        events(actions).iter().filter(|x| **x == e).count()
    }

    #[test]
    fn answered_keepalives_are_not_lost() {
        let (mut a, mut b, ra, _) = handshake(cfg("a", "b", None, 1), cfg("b", "a", None, 2));
        // The first keepalive (at 3 ms) is counted as it goes out.
        assert_eq!(count(&ra, SessionEvent::KeepaliveSent), 1);
        assert_eq!((a.keepalives_sent(), a.keepalives_lost()), (1, 0));
        round_trip(&ra, &mut a, &mut b, ms(5));
        for t in (303..3000).step_by(300) {
            let k = a.tick(ms(t));
            assert_eq!(count(&k, SessionEvent::KeepaliveSent), 1, "at {t} ms");
            assert_eq!(count(&k, SessionEvent::KeepaliveLost), 0, "at {t} ms");
            let r = round_trip(&k, &mut a, &mut b, ms(t + 2));
            assert_eq!(r, vec![Action::Event(SessionEvent::Rtt(ms(2)))]);
        }
        assert_eq!((a.keepalives_sent(), a.keepalives_lost()), (10, 0));
        // Closing with every keepalive answered loses none either.
        let r = a.on_eof(ms(2950));
        assert_eq!(r, vec![Action::Close(CloseReason::PeerClosed)]);
        assert_eq!((a.keepalives_sent(), a.keepalives_lost()), (10, 0));
    }

    #[test]
    fn each_unanswered_keepalive_counts_once_its_successor_is_due() {
        let (mut a, mut b, _, _) = handshake(cfg("a", "b", None, 1), cfg("b", "a", None, 2));
        // b's echoes never come; other frames keep the session up.
        for (i, t) in [303u64, 603, 903, 1203].into_iter().enumerate() {
            a.on_frame(Message::SiteMetrics(SiteMetrics::default()), ms(t - 1));
            assert!(a.tick(ms(t - 1)).is_empty(), "nothing is due before {t} ms");
            let k = a.tick(ms(t));
            // The loss first, then the new keepalive and its count.
            assert_eq!(
                k,
                vec![
                    Action::Event(SessionEvent::KeepaliveLost),
                    Action::SendSealed(Message::Keepalive(Keepalive { sent_at_ms: t })),
                    Action::Event(SessionEvent::KeepaliveSent),
                ]
            );
            assert_eq!(a.keepalives_lost(), i as u64 + 1);
            assert_eq!(a.keepalives_sent(), i as u64 + 2);
        }
        // The echoes come again: no more losses.
        let k = a.tick(ms(1503));
        assert_eq!(count(&k, SessionEvent::KeepaliveLost), 1);
        round_trip(&k, &mut a, &mut b, ms(1505));
        let k = a.tick(ms(1803));
        assert_eq!(count(&k, SessionEvent::KeepaliveLost), 0);
        assert_eq!((a.keepalives_sent(), a.keepalives_lost()), (7, 5));
    }

    #[test]
    fn a_late_echo_does_not_uncount_a_loss() {
        let (mut a, _, _, _) = handshake(cfg("a", "b", None, 1), cfg("b", "a", None, 2));
        a.on_frame(Message::SiteMetrics(SiteMetrics::default()), ms(300));
        let k = a.tick(ms(303));
        assert_eq!(count(&k, SessionEvent::KeepaliveLost), 1);
        // The echo of the keepalive of 3 ms arrives after its successor went
        // out: proof of life, no RTT, and the loss stays.
        let late = a.on_frame(Message::KeepaliveAck(KeepaliveAck { echo: 3 }), ms(310));
        assert!(late.is_empty(), "{late:?}");
        assert_eq!(a.rtt(), None);
        assert_eq!((a.keepalives_sent(), a.keepalives_lost()), (2, 1));
        // Nor does it answer the keepalive in flight (of 303 ms), which is
        // lost in turn when the next one is due.
        let k = a.tick(ms(603));
        assert_eq!(count(&k, SessionEvent::KeepaliveLost), 1);
        // An echo in time still measures the RTT and counts nothing.
        let r = a.on_frame(Message::KeepaliveAck(KeepaliveAck { echo: 603 }), ms(610));
        assert_eq!(r, vec![Action::Event(SessionEvent::Rtt(ms(7)))]);
        assert_eq!((a.keepalives_sent(), a.keepalives_lost()), (3, 2));
    }

    #[test]
    fn closing_counts_a_keepalive_outstanding_for_an_interval() {
        // Outstanding for less than the interval: not lost (its successor
        // was not due yet).
        let (mut a, _, _, _) = handshake(cfg("a", "b", None, 1), cfg("b", "a", None, 2));
        assert_eq!(
            a.on_eof(ms(302)),
            vec![Action::Close(CloseReason::PeerClosed)]
        );
        assert_eq!((a.keepalives_sent(), a.keepalives_lost()), (1, 0));
        // Outstanding for the interval or more (a late tick): lost, and said
        // so before the close.
        let (mut a, _, _, _) = handshake(cfg("a", "b", None, 1), cfg("b", "a", None, 2));
        assert_eq!(
            a.on_eof(ms(303)),
            vec![
                Action::Event(SessionEvent::KeepaliveLost),
                Action::Close(CloseReason::PeerClosed)
            ]
        );
        assert_eq!((a.keepalives_sent(), a.keepalives_lost()), (1, 1));
        // Every way of closing counts it.
        let (mut a, _, _, _) = handshake(cfg("a", "b", None, 1), cfg("b", "a", None, 2));
        let r = a.reject("bye", ms(400));
        assert_eq!(count(&r, SessionEvent::KeepaliveLost), 1);
        assert!(matches!(closed(&r), Some(CloseReason::Local(_))));
        let (mut a, _, _, _) = handshake(cfg("a", "b", None, 1), cfg("b", "a", None, 2));
        let r = a.abort(CloseReason::Local("write failed".into()), ms(400));
        assert_eq!(count(&r, SessionEvent::KeepaliveLost), 1);
        assert_eq!(sends(&r), vec![]);
        assert!(a.abort(CloseReason::PeerClosed, ms(500)).is_empty());
        assert_eq!((a.keepalives_sent(), a.keepalives_lost()), (1, 1));
        // A silent peer: every keepalive is lost, the last one at the
        // timeout (sent 300 ms before it, when its successor is due).
        let (mut a, _, _, _) = handshake(cfg("a", "b", None, 1), cfg("b", "a", None, 2));
        let mut all = Vec::new();
        for t in [303, 603, 903] {
            all.extend(a.tick(ms(t)));
        }
        assert_eq!(closed(&all), Some(CloseReason::Timeout(T)));
        assert_eq!(count(&all, SessionEvent::KeepaliveLost), 3);
        assert_eq!((a.keepalives_sent(), a.keepalives_lost()), (3, 3));
        // Before Up nothing is sent, so nothing is lost.
        let mut c = after_hello_sent();
        assert_eq!(
            c.on_eof(ms(5000)),
            vec![Action::Close(CloseReason::PeerClosed)]
        );
        assert_eq!((c.keepalives_sent(), c.keepalives_lost()), (0, 0));
    }
}
