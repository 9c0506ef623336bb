//! The cryptography of the MEP handshake and of sealed frames (pure).
//!
//! Protocol 2's handshake is a mutual challenge-response over a transcript:
//!
//! ```text
//!   initiator (dialled)                      acceptor
//!        ── Hello{nonce_i, site_i, role_i, v} ──▶
//!        ◀── Hello{nonce_a, site_a, role_a, v} ──
//!   T = SHA-256(label || Hello_i || Hello_a [|| TLS exporter])
//!        ── AuthProof{HMAC(K, "initiator proof" || T)} ──▶   acceptor verifies
//!        ◀── AuthProof{HMAC(K, "acceptor proof" || T)} ──    only then proves
//!   keys: HMAC(K, "initiator-to-acceptor frames" || T), and the reverse
//! ```
//!
//! * Each proof binds both nonces, both site names, IPs and roles, the
//!   protocol version, who is proving (initiator or acceptor) and, over TLS,
//!   the connection's exporter value. A proof taken from one connection is
//!   worth nothing on another (other nonces), nor in the other direction
//!   (other label).
//! * The acceptor proves nothing before the initiator has proven itself, so
//!   anyone may connect but nobody can make a node sign a challenge of
//!   their choosing: the relay of docs/security.md fails.
//! * After the handshake every frame carries a tag, `HMAC(key of its
//!   direction, sequence || frame)` cut to [`TAG_LEN`] bytes, with an
//!   implicit sequence number per direction: a frame injected, altered,
//!   replayed, dropped or reordered by someone on the path fails the next
//!   check and ends the session.
//! * `K` is the link's secret (the accepting site's password). Without one
//!   the proofs are empty and the keys are derived from the empty key: the
//!   tags then catch corruption, not an attacker.

use ring::{digest, hmac};

use crate::frame::HEADER_LEN;
use crate::message::{Hello, Role};

/// Bytes of the tag at the end of a sealed frame (128 bits).
pub const TAG_LEN: usize = 16;

const TRANSCRIPT_LABEL: &[u8] = b"sextant-mep/2 transcript";
const INITIATOR_PROOF: &[u8] = b"sextant-mep/2 initiator proof";
const ACCEPTOR_PROOF: &[u8] = b"sextant-mep/2 acceptor proof";
const INITIATOR_FRAMES: &[u8] = b"sextant-mep/2 initiator-to-acceptor frames";
const ACCEPTOR_FRAMES: &[u8] = b"sextant-mep/2 acceptor-to-initiator frames";

/// Which end of the connection: the one that dialled, or the one that
/// accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Initiator,
    Acceptor,
}

impl Direction {
    fn proof_label(self) -> &'static [u8] {
        match self {
            Direction::Initiator => INITIATOR_PROOF,
            Direction::Acceptor => ACCEPTOR_PROOF,
        }
    }

    fn frames_label(self) -> &'static [u8] {
        match self {
            Direction::Initiator => INITIATOR_FRAMES,
            Direction::Acceptor => ACCEPTOR_FRAMES,
        }
    }

    fn other(self) -> Direction {
        match self {
            Direction::Initiator => Direction::Acceptor,
            Direction::Acceptor => Direction::Initiator,
        }
    }
}

/// The hash of everything both ends said before proving anything.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Transcript([u8; 32]);

impl std::fmt::Debug for Transcript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Transcript({})", crate::session::hex(&self.0[..4]))
    }
}

impl Transcript {
    /// Both Hellos as sent, the initiator's first, and the TLS exporter
    /// value when the connection is TLS. Every field is length-prefixed, so
    /// no two different transcripts hash the same bytes.
    pub fn new(initiator: &Hello, acceptor: &Hello, binding: Option<&[u8]>) -> Self {
        let mut ctx = digest::Context::new(&digest::SHA256);
        field(&mut ctx, TRANSCRIPT_LABEL);
        hello(&mut ctx, initiator);
        hello(&mut ctx, acceptor);
        match binding {
            Some(b) => {
                ctx.update(&[1]);
                field(&mut ctx, b);
            }
            None => ctx.update(&[0]),
        }
        let mut t = [0u8; 32];
        t.copy_from_slice(ctx.finish().as_ref());
        Transcript(t)
    }
}

fn field(ctx: &mut digest::Context, bytes: &[u8]) {
    ctx.update(&(bytes.len() as u32).to_be_bytes());
    ctx.update(bytes);
}

fn hello(ctx: &mut digest::Context, h: &Hello) {
    ctx.update(&[h.protocol]);
    field(ctx, h.site.as_bytes());
    field(ctx, h.ip.to_string().as_bytes());
    field(
        ctx,
        match h.role {
            Role::Parent => b"parent",
            Role::Child => b"child",
            Role::Flat => b"flat",
        },
    );
    ctx.update(&h.generation.to_be_bytes());
    field(ctx, h.nonce.as_bytes());
    match &h.acting_for {
        Some(a) => {
            ctx.update(&[1]);
            field(ctx, a.as_bytes());
        }
        None => ctx.update(&[0]),
    }
}

fn mac(secret: &[u8], label: &[u8], t: &Transcript) -> hmac::Tag {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let mut ctx = hmac::Context::with_key(&key);
    ctx.update(label);
    ctx.update(&t.0);
    ctx.sign()
}

/// The proof `who` sends: `HMAC-SHA256(secret, label(who) || T)` as
/// lowercase hex; the empty string without a secret.
pub fn proof(secret: Option<&[u8]>, t: &Transcript, who: Direction) -> String {
    match secret {
        Some(s) => crate::session::hex(mac(s, who.proof_label(), t).as_ref()),
        None => String::new(),
    }
}

/// Checks, in constant time, the proof the peer sent as `who`.
pub fn verify(
    secret: Option<&[u8]>,
    t: &Transcript,
    who: Direction,
    got: &str,
) -> Result<(), &'static str> {
    let Some(secret) = secret else {
        return if got.is_empty() {
            Ok(())
        } else {
            Err("the peer proves a password but none is configured for this link")
        };
    };
    if secret.starts_with(sextant_core::SECRET_PLACEHOLDER_PREFIX.as_bytes()) {
        return Err(
            "this link's password is the placeholder `sextant import` wrote; enter the real password (set ns rpcNode)",
        );
    }
    if got.is_empty() {
        return Err("the peer sent no proof (no password configured there?)");
    }
    let Some(tag) = crate::session::unhex(got) else {
        return Err("the proof is not hex");
    };
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let mut msg = Vec::with_capacity(who.proof_label().len() + 32);
    msg.extend_from_slice(who.proof_label());
    msg.extend_from_slice(&t.0);
    hmac::verify(&key, &msg, &tag).map_err(|_| "wrong proof (the passwords differ)")
}

/// Why a sealed frame was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("frame too short to carry its integrity tag")]
    NoTag,
    #[error(
        "frame {0} failed its integrity check (altered, injected, replayed or reordered on the way)"
    )]
    BadTag(u64),
}

/// The per-direction keys and sequence numbers of an authenticated
/// session.
pub struct FrameKeys {
    send: hmac::Key,
    recv: hmac::Key,
    sent: u64,
    received: u64,
}

impl std::fmt::Debug for FrameKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameKeys")
            .field("sent", &self.sent)
            .field("received", &self.received)
            .finish_non_exhaustive()
    }
}

impl FrameKeys {
    /// The keys of the end `me` of the session whose transcript is `t`.
    pub fn new(secret: Option<&[u8]>, t: &Transcript, me: Direction) -> Self {
        let secret = secret.unwrap_or(&[]);
        let derive = |d: Direction| {
            hmac::Key::new(hmac::HMAC_SHA256, mac(secret, d.frames_label(), t).as_ref())
        };
        FrameKeys {
            send: derive(me),
            recv: derive(me.other()),
            sent: 0,
            received: 0,
        }
    }

    /// Seals the frame encoded at `out[start..]`: its length grows by
    /// [`TAG_LEN`] and the tag of the next send sequence number is appended.
    pub fn seal(&mut self, out: &mut Vec<u8>, start: usize) {
        let Some(len) = out.get(start..start + 4) else {
            return;
        };
        let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize + TAG_LEN;
        out[start..start + 4].copy_from_slice(&(len as u32).to_be_bytes());
        let tag = tag(&self.send, self.sent, &out[start..]);
        out.extend_from_slice(&tag.as_ref()[..TAG_LEN]);
        self.sent += 1;
    }

    /// Checks the tag of one whole received frame (`[length][version][kind]
    /// body tag`) against the next receive sequence number; returns the
    /// frame's body without its tag.
    pub fn open<'a>(&mut self, frame: &'a [u8]) -> Result<&'a [u8], SealError> {
        if frame.len() < HEADER_LEN + TAG_LEN {
            return Err(SealError::NoTag);
        }
        let (sealed, got) = frame.split_at(frame.len() - TAG_LEN);
        let seq = self.received;
        // The tag was computed over the header with the sealed length.
        let want = tag(&self.recv, seq, sealed);
        if !constant_time_eq(&want.as_ref()[..TAG_LEN], got) {
            return Err(SealError::BadTag(seq));
        }
        self.received += 1;
        Ok(&sealed[HEADER_LEN..])
    }
}

fn tag(key: &hmac::Key, seq: u64, frame: &[u8]) -> hmac::Tag {
    let mut ctx = hmac::Context::with_key(key);
    ctx.update(&seq.to_be_bytes());
    ctx.update(frame);
    ctx.sign()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame;
    use crate::message::{Keepalive, Message};

    fn hello(site: &str, nonce: u8) -> Hello {
        Hello {
            site: site.into(),
            ip: "127.0.0.1".parse().unwrap(),
            role: Role::Parent,
            generation: 1,
            nonce: crate::session::hex(&[nonce; 32]),
            acting_for: None,
            protocol: crate::message::PROTOCOL_VERSION,
        }
    }

    #[test]
    fn each_proof_binds_direction_names_and_nonces() {
        let s = Some(&b"pw"[..]);
        let t = Transcript::new(&hello("p1", 1), &hello("p2", 2), None);
        let p = proof(s, &t, Direction::Initiator);
        assert!(verify(s, &t, Direction::Initiator, &p).is_ok());
        assert!(verify(s, &t, Direction::Acceptor, &p).is_err(), "reflected");
        for other in [
            Transcript::new(&hello("p2", 2), &hello("p1", 1), None),
            Transcript::new(&hello("p1", 1), &hello("p3", 2), None),
            Transcript::new(&hello("p1", 1), &hello("p2", 3), None),
            Transcript::new(&hello("p1", 1), &hello("p2", 2), Some(b"tls")),
        ] {
            assert!(verify(s, &other, Direction::Initiator, &p).is_err());
        }
        assert!(verify(Some(b"other"), &t, Direction::Initiator, &p).is_err());
    }

    #[test]
    fn sealed_frames_open_once_and_in_order() {
        let s = Some(&b"pw"[..]);
        let t = Transcript::new(&hello("p1", 1), &hello("p2", 2), None);
        let mut i = FrameKeys::new(s, &t, Direction::Initiator);
        let mut a = FrameKeys::new(s, &t, Direction::Acceptor);
        let frame = |n: u64, keys: &mut FrameKeys| {
            let mut out = Vec::new();
            let m = Message::Keepalive(Keepalive { sent_at_ms: n });
            frame::encode(&m, 1 << 20, &mut out).unwrap();
            keys.seal(&mut out, 0);
            out
        };
        let f0 = frame(0, &mut i);
        let f1 = frame(1, &mut i);
        assert!(a.open(&f1).is_err(), "reordered");
        assert!(a.open(&f0).is_ok());
        assert!(a.open(&f0).is_err(), "replayed");
        assert!(a.open(&f1).is_ok());
        // The acceptor's own frame is not valid in its own direction.
        let mut a2 = FrameKeys::new(s, &t, Direction::Acceptor);
        let back = frame(0, &mut a2);
        let mut a3 = FrameKeys::new(s, &t, Direction::Acceptor);
        assert!(a3.open(&back).is_err(), "reflected frame");
        let mut tampered = frame(2, &mut i);
        let n = tampered.len();
        tampered[n - TAG_LEN - 2] ^= 1;
        assert!(a.open(&tampered).is_err());
    }
}
