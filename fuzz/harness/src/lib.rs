//! The bodies of Sextant's fuzz targets.
//!
//! Each function takes arbitrary bytes, hands them to the parser the server
//! really runs on that input, and asserts what must hold whatever the bytes:
//! no panic, and the invariants listed on each function. A violated
//! invariant panics, which libFuzzer reports as a crash with the input
//! saved. The libFuzzer binaries in `fuzz/fuzz_targets/` are one line each;
//! `tests/corpus.rs` runs every checked-in seed and regression input through
//! the same functions in the normal test suite.
//!
//! Panicking is the point here, so this crate asserts freely.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, OnceLock};

#[path = "../../../crates/sextant-dns/tests/common/model.rs"]
#[allow(dead_code)]
mod model;

/// A target's body: arbitrary bytes in, a panic when something is wrong.
pub type Target = fn(&[u8]);

/// Every target: its name (the binary, and the directory under
/// `fuzz/corpus/` and `fuzz/regressions/`) and its body.
pub const TARGETS: &[(&str, Target)] = &[
    ("dns_query", dns_query),
    ("dns_respond", dns_respond),
    ("config_appliance", config_appliance),
    ("config_native", config_native),
    ("policy_expr", policy_expr),
    ("mep_frames", mep_frames),
    ("mep_handshake", mep_handshake),
    ("config_sync_transfer", config_sync_transfer),
    ("prometheus", prometheus),
    ("monitor_dns", monitor_dns),
    ("monitor_http", monitor_http),
    ("vrrp_advert", vrrp_advert),
    ("xdp_frame", xdp_frame),
];

// ---------------------------------------------------------------------------
// DNS server

/// The query parser alone (`sextant_dns::parse_query`). On success: the
/// header is the packet's, a query (QR=0, opcode 0, one question, no
/// answer or authority records); the question slice lies inside the packet
/// right after the header; the dotted name turns back into exactly the wire
/// labels (lower-cased, '.' and non-ASCII bytes as NUL); type and class are
/// the question's; an EDNS version other than 0 never gets through; a
/// Client Subnet is consistent (prefix within its family, as many address
/// octets as the prefix needs, scope 0). On failure: dropped exactly when
/// shorter than a header or QR=1, and the question length to echo lies
/// inside the packet.
pub fn dns_query(data: &[u8]) {
    use sextant_dns::wire::parse::{HEADER_LEN, MAX_LABEL, MAX_NAME_WIRE};
    use sextant_dns::{Header, ParseErrorKind, parse_query};

    let mut name_buf = [0u8; 256];
    let is_qr = data.len() >= HEADER_LEN && data[2] & 0x80 != 0;
    match parse_query(data, &mut name_buf) {
        Ok(q) => {
            assert_eq!(Some(q.header), Header::parse(data));
            assert!(!q.header.is_response());
            assert_eq!(q.header.opcode(), 0);
            assert_eq!(q.header.qdcount, 1);
            assert_eq!((q.header.ancount, q.header.nscount), (0, 0));
            let len = q.question.len();
            assert!((5..=MAX_NAME_WIRE + 4).contains(&len), "question of {len}");
            assert_eq!(data.get(HEADER_LEN..HEADER_LEN + len), Some(q.question));
            // The name round-trips to the wire labels.
            let mut wire = Vec::with_capacity(len);
            if !q.qname.is_empty() {
                for label in q.qname.split('.') {
                    assert!(
                        !label.is_empty() && label.len() <= MAX_LABEL,
                        "{:?}",
                        q.qname
                    );
                    wire.push(label.len() as u8);
                    wire.extend_from_slice(label.as_bytes());
                }
            }
            wire.push(0);
            let name_len = len - 4;
            assert_eq!(wire.len(), name_len, "{:?}", q.qname);
            let folded: Vec<u8> = q.question[..name_len]
                .iter()
                .zip(&wire)
                .map(|(&b, &w)| match b {
                    // Length octets stay, label bytes fold.
                    _ if b == w => b,
                    b'.' | 0x80..=0xff => 0,
                    c => c.to_ascii_lowercase(),
                })
                .collect();
            assert_eq!(folded, wire, "{:?}", q.qname);
            assert!(q.qname.len() <= 253);
            let fixed = &q.question[name_len..];
            assert_eq!(q.qtype, u16::from_be_bytes([fixed[0], fixed[1]]));
            assert_eq!(q.qclass, u16::from_be_bytes([fixed[2], fixed[3]]));
            if let Some(edns) = q.edns {
                assert_eq!(edns.version, 0);
                if let Some(ecs) = edns.ecs {
                    let max = match (ecs.family, ecs.addr) {
                        (1, IpAddr::V4(_)) => 32,
                        (2, IpAddr::V6(_)) => 128,
                        other => panic!("ECS family and address disagree: {other:?}"),
                    };
                    assert!(ecs.source_prefix <= max);
                    assert_eq!(ecs.scope_prefix, 0);
                    assert_eq!(
                        ecs.address_bytes().len(),
                        usize::from(ecs.source_prefix).div_ceil(8)
                    );
                }
            }
        }
        Err(e) => {
            assert_eq!(e.is_drop(), data.len() < HEADER_LEN || is_qr, "{e}");
            assert_eq!(
                e.kind == ParseErrorKind::TooShort,
                data.len() < HEADER_LEN,
                "{e}"
            );
            assert!(e.question_len == 0 || HEADER_LEN + e.question_len <= data.len());
            if let Some(edns) = e.edns {
                assert!(edns.ecs.is_none() || edns.version == 0);
            }
        }
    }
}

struct Responder {
    shared: sextant_dns::DnsShared,
    worker: sextant_dns::Worker,
    out: Vec<u8>,
}

fn responder() -> &'static Mutex<Responder> {
    static STATE: OnceLock<Mutex<Responder>> = OnceLock::new();
    STATE.get_or_init(|| {
        Mutex::new(Responder {
            shared: sextant_dns::DnsShared::new(signed(model::snapshot())),
            worker: sextant_dns::Worker::new(1),
            out: Vec::with_capacity(sextant_dns::MAX_MESSAGE),
        })
    })
}

/// The model with its zone signed (a KSK and a ZSK, ECDSA P-256), so that
/// queries with DO run the signing path too.
fn signed(snapshot: sextant_core::Snapshot) -> sextant_core::Snapshot {
    use sextant_dnssec::key::{Algorithm, from_files, generate};
    let rng = ring::rand::SystemRandom::new();
    let mut model = snapshot.model().clone();
    let keys = [true, false]
        .into_iter()
        .filter_map(|ksk| {
            let k = generate(
                "example.com",
                Algorithm::EcdsaP256Sha256,
                ksk,
                3600,
                0,
                &rng,
            )
            .ok()?;
            let (_, mut key, _) = from_files("k", &k.key_file, &k.private_file).ok()?;
            key.timing = Default::default();
            Some(key)
        })
        .collect();
    model.dnssec.push(sextant_core::dnssec::SignedZone {
        zone: sextant_core::ZoneId::new(0),
        keys,
        dnskey_ttl: 3600,
    });
    sextant_core::Snapshot::new(Arc::new(model), 1)
}

/// The whole answer path (`sextant_dns::respond`, as the UDP and TCP loops
/// call it) over the model of the sextant-dns tests (a zone, round robin,
/// multi-IP over 40 services, ECS hashing, persistence), signed. Over both
/// transports: no reply to a packet shorter than a header or with QR=1;
/// a reply carries the query's ID and opcode and has QR set; over UDP it
/// is at most 512 bytes without EDNS and at most `udp_limit` (the cap
/// whatever the client offers: 4096 today, lowered to 1232 by issue 12)
/// with it, and never over 4096; over TCP at most 65535.
pub fn dns_respond(data: &[u8]) {
    use sextant_dns::{Transport, parse_query, respond, udp_limit};

    let mut guard = responder().lock().unwrap_or_else(|p| p.into_inner());
    let Responder {
        shared,
        worker,
        out,
    } = &mut *guard;
    let mut name_buf = [0u8; 256];
    let edns = match parse_query(data, &mut name_buf) {
        Ok(q) => q.edns,
        Err(e) => e.edns,
    };
    let must_drop = data.len() < 12 || data[2] & 0x80 != 0;
    let source = IpAddr::from([192, 0, 2, 1]);
    for transport in [Transport::Udp, Transport::Tcp] {
        let answered = respond(shared, worker, data, source, transport, out);
        if !answered {
            assert!(out.is_empty());
            continue;
        }
        assert!(!must_drop, "replied to a response or a runt");
        assert!(out.len() >= 12);
        assert_eq!(out[..2], data[..2], "reply ID");
        assert_eq!(out[2] & 0x80, 0x80, "reply without QR");
        assert_eq!(out[2] & 0x78, data[2] & 0x78, "reply opcode");
        match transport {
            Transport::Udp => {
                let limit = udp_limit(edns.as_ref());
                assert!(out.len() <= limit, "{} > {limit}", out.len());
                assert!(out.len() <= 4096);
                if edns.is_none() {
                    assert!(out.len() <= 512, "{} bytes without EDNS", out.len());
                }
            }
            Transport::Tcp => assert!(out.len() <= sextant_dns::MAX_MESSAGE),
        }
    }
}

// ---------------------------------------------------------------------------
// Configuration

/// Texts naming device or kernel files are skipped: a location file
/// directive pointing at `/dev/zero` would make the parser read without end
/// (an operator's configuration is trusted to name real files; the fuzzer
/// only needs the syntax). Relative paths resolve in examples/, where
/// the example configurations find their location file.
fn config_text(data: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(data).ok()?;
    let lower = text.to_ascii_lowercase();
    if ["/dev", "/proc", "/sys", "/run"]
        .iter()
        .any(|p| lower.contains(p))
    {
        return None;
    }
    Some(text)
}

const BASE_CONF: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/fuzz.conf");
const BASE_TOML: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/fuzz.toml");

/// A model that validated must make a snapshot (what the server then
/// answers from) without panicking.
fn check_model(model: sextant_core::Model) {
    let snapshot = sextant_core::Snapshot::new(Arc::new(model), 1);
    assert_eq!(snapshot.generation(), 1);
}

/// The appliance command syntax (`sextant_config::parse_appliance`):
/// errors are fine, panics are not; a valid configuration builds a
/// snapshot.
pub fn config_appliance(data: &[u8]) {
    if let Some(text) = config_text(data)
        && let Ok(model) = sextant_config::parse_appliance(text, BASE_CONF)
    {
        check_model(model);
    }
}

/// The native TOML syntax (`sextant_config::parse_toml`): errors are fine,
/// panics are not; a valid configuration builds a snapshot.
pub fn config_native(data: &[u8]) {
    if let Some(text) = config_text(data)
        && let Ok(model) = sextant_config::parse_toml(text, BASE_TOML)
    {
        check_model(model);
    }
}

/// The DNS policy expression parser (`sextant_core::Expr::parse`, which
/// both configuration syntaxes call): a parsed rule prints as canonical
/// text that parses back to the same rule, and evaluates without panicking;
/// an error's column lies within the text (or just past its end).
pub fn policy_expr(data: &[u8]) {
    use sextant_core::policy::RequestFacts;
    use sextant_core::{Expr, QueryType};

    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Expr::parse(text) {
        Ok(expr) => {
            let printed = expr.to_string();
            assert_eq!(Expr::parse(&printed).as_ref(), Ok(&expr), "{printed:?}");
            for (client, qname) in [
                (IpAddr::from([10, 1, 2, 3]), "www.example.com"),
                (IpAddr::from([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1]), ""),
            ] {
                let facts = RequestFacts {
                    client,
                    client_location: None,
                    qname,
                    qtype: QueryType::from_code(1),
                };
                let _ = expr.eval(&facts);
            }
            let _ = expr.needs_location();
        }
        Err(e) => {
            let chars = text.chars().count();
            assert!(
                e.column >= 1 && e.column <= chars + 1,
                "column {} of {chars}: {}",
                e.column,
                e.message
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Metric exchange

/// The MEP frame decoder (`sextant_mep::frame`), on a byte stream cut in
/// two at the first byte's offset: the `FrameReader` fed in two pieces
/// yields exactly the messages (and the error, if any) that `decode` reads
/// from the whole stream, and every message decoded encodes to a frame
/// that decodes again, whole, to a message of the same kind.
pub fn mep_frames(data: &[u8]) {
    use sextant_mep::frame::{FrameReader, decode, encode_to_vec};

    const MAX: usize = 64 * 1024;
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let mut whole = Vec::new();
    let mut whole_failed = false;
    let mut pos = 0;
    loop {
        match decode(&rest[pos..], MAX) {
            Ok(Some((msg, n))) => {
                assert!(n >= sextant_mep::frame::HEADER_LEN && pos + n <= rest.len());
                pos += n;
                whole.push(msg);
            }
            Ok(None) => break,
            Err(_) => {
                whole_failed = true;
                break;
            }
        }
    }

    let cut = usize::from(split).min(rest.len());
    let mut reader = FrameReader::new(MAX);
    let mut pieces = Vec::new();
    let mut pieces_failed = false;
    'outer: for piece in [&rest[..cut], &rest[cut..]] {
        reader.push(piece);
        loop {
            match reader.next_message() {
                Ok(Some(msg)) => pieces.push(msg),
                Ok(None) => break,
                Err(_) => {
                    pieces_failed = true;
                    break 'outer;
                }
            }
        }
    }
    assert_eq!(pieces, whole);
    assert_eq!(pieces_failed, whole_failed);

    // The undecoded frames the driver reads (`next_frame`) are the same
    // frames: each one's header and body decode to the same message.
    let mut raw = FrameReader::new(MAX);
    raw.push(rest);
    for msg in &whole {
        let f = raw
            .next_frame(MAX)
            .expect("a frame decode read")
            .expect("whole")
            .to_vec();
        let (version, kind) = sextant_mep::frame::parse_header(&f).expect("its header");
        assert_eq!(version, sextant_mep::message::PROTOCOL_VERSION);
        let kind = kind.expect("a known kind");
        let again = sextant_mep::frame::parse_body(kind, &f[sextant_mep::frame::HEADER_LEN..])
            .expect("its body");
        assert_eq!(&again, msg);
    }

    for msg in &whole {
        if let Ok(frame) = encode_to_vec(msg, MAX) {
            match decode(&frame, MAX) {
                Ok(Some((again, n))) => {
                    assert_eq!(n, frame.len());
                    assert_eq!(again.kind(), msg.kind());
                }
                other => panic!("re-encoded {msg:?} does not decode: {other:?}"),
            }
        }
    }
}

/// Bytes read off the front of a fuzz input, zero once it is used up.
struct Script<'a>(&'a [u8]);

impl Script<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let n = n.min(self.0.len());
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head.to_vec()
    }

    fn done(&self) -> bool {
        self.0.is_empty()
    }
}

/// The MEP handshake and sealed frames (`sextant_mep::session`), with an
/// attacker on the path: two honest sessions with one password (P1 dials,
/// P2 accepts); the input decides, step by step, whether the path passes
/// the next frame on, drops it, tampers with it, replays an old one, or
/// hands either end a frame or raw bytes of its own; the honest ends send
/// data and time passes. Whatever the input: no panic; each end delivers
/// only data the other really sent, in order, each once; an acceptor
/// proves itself only to an initiator that proved itself first; nothing is
/// accepted before authentication beyond the handshake frame limit; and a
/// closed session stays closed.
pub fn mep_handshake(data: &[u8]) {
    use std::time::Duration;

    use sextant_mep::frame::{FrameReader, HANDSHAKE_MAX_FRAME};
    use sextant_mep::message::{AuthProof, Hello, Keepalive, Message, Reject, Role};
    use sextant_mep::session::{Action, SessionConfig, SessionEvent};
    use sextant_mep::{Session, State};

    const MAX: usize = 64 * 1024;

    struct End {
        session: Session,
        reader: FrameReader,
        /// Frames it sent, in order, as bytes.
        sent: Vec<Vec<u8>>,
        /// How many of them the path has dealt with.
        next: usize,
        data_sent: Vec<Message>,
        received: Vec<Message>,
        proved: bool,
        closed: bool,
    }

    impl End {
        fn carry(&mut self, acts: Vec<Action>) {
            for (i, a) in acts.iter().enumerate() {
                assert!(!self.closed, "a closed session acted: {a:?}");
                if let Some(Message::AuthProof(_)) = a.sent() {
                    self.proved = true;
                }
                let mut bytes = Vec::new();
                self.session
                    .encode(a, MAX, &mut bytes)
                    .expect("the session's frames fit");
                assert!(bytes.len() <= MAX + 4);
                if !bytes.is_empty() {
                    self.sent.push(bytes);
                }
                match a {
                    Action::Event(SessionEvent::Received(m)) => self.received.push(m.clone()),
                    Action::Close(_) => {
                        assert_eq!(i + 1, acts.len(), "Close is the last action");
                        self.closed = true;
                    }
                    _ => {}
                }
            }
        }

        /// Bytes off the wire, through the reader as the driver does.
        fn feed(&mut self, bytes: &[u8], now: Duration) {
            if self.closed {
                return;
            }
            self.reader.push(bytes);
            loop {
                let limit = self.session.frame_limit(MAX);
                let acts = match self.reader.next_frame(limit) {
                    Ok(Some(f)) => {
                        assert!(f.len() <= limit + 4);
                        let f = f.to_vec();
                        if self.session.state() != State::Up {
                            assert!(f.len() <= HANDSHAKE_MAX_FRAME + 4);
                        }
                        self.session.on_frame_bytes(&f, now)
                    }
                    Ok(None) => return,
                    Err(e) => self.session.on_decode_error(e, now),
                };
                let stop = acts.iter().any(|a| matches!(a, Action::Close(_)));
                self.carry(acts);
                if stop || self.closed {
                    return;
                }
            }
        }
    }

    let ip = |last: u8| -> IpAddr { IpAddr::from([127, 0, 0, last]) };
    let cfg = |me: &str, peer: &str, initiator: bool, nonce: u8| SessionConfig {
        local_name: me.into(),
        local_ip: ip(if me == "P1" { 1 } else { 2 }),
        role: Role::Parent,
        generation: 1,
        peer_name: peer.into(),
        peer_ip: ip(if peer == "P1" { 1 } else { 2 }),
        secret: Some(b"one password".to_vec()),
        nonce: [nonce; 32],
        acting_for: None,
        keepalive_timeout: Duration::from_secs(3),
        initiator,
    };
    let start = |c: SessionConfig| {
        let mut e = End {
            session: Session::new(c, Duration::ZERO),
            reader: FrameReader::new(MAX),
            sent: Vec::new(),
            next: 0,
            data_sent: Vec::new(),
            received: Vec::new(),
            proved: false,
            closed: false,
        };
        let acts = e.session.connected(Duration::ZERO, None);
        e.carry(acts);
        e
    };
    let mut ends = [
        start(cfg("P1", "P2", true, 1)),
        start(cfg("P2", "P1", false, 2)),
    ];
    let mut now = Duration::ZERO;
    let mut script = Script(data);
    let mut steps = 0;
    while !script.done() && steps < 512 {
        steps += 1;
        let op = script.byte();
        let (from, to) = if op & 0x80 == 0 { (0, 1) } else { (1, 0) };
        match op & 0x0f {
            // Pass the next frame on, as a faithful path does.
            0..=4 => {
                let e = &mut ends[from];
                if let Some(f) = e.sent.get(e.next).cloned() {
                    e.next += 1;
                    ends[to].feed(&f, now);
                }
            }
            // Drop it.
            5 => ends[from].next += 1,
            // Flip one bit of it.
            6 => {
                let e = &mut ends[from];
                if let Some(mut f) = e.sent.get(e.next).cloned() {
                    e.next += 1;
                    let at = script.byte() as usize % f.len();
                    f[at] ^= 1 << (script.byte() % 8);
                    ends[to].feed(&f, now);
                }
            }
            // Replay a frame either end sent before.
            7 => {
                let e = &ends[script.byte() as usize % 2];
                if !e.sent.is_empty() {
                    let f = e.sent[script.byte() as usize % e.sent.len()].clone();
                    ends[to].feed(&f, now);
                }
            }
            // A message of the attacker's own, framed plainly (perhaps
            // with a made-up tag).
            8 => {
                let m = match script.byte() % 5 {
                    0 => Message::Hello(Hello {
                        site: if script.byte().is_multiple_of(2) {
                            "P1"
                        } else {
                            "P2"
                        }
                        .into(),
                        ip: ip(script.byte() % 3),
                        role: Role::Parent,
                        generation: 1,
                        nonce: sextant_mep::session::hex(&[script.byte(); 32]),
                        acting_for: None,
                        protocol: sextant_mep::message::PROTOCOL_VERSION,
                    }),
                    1 => Message::AuthProof(AuthProof {
                        hmac: sextant_mep::session::hex(&script.bytes(32)),
                    }),
                    2 => Message::Keepalive(Keepalive {
                        sent_at_ms: u64::from(script.byte()),
                    }),
                    3 => Message::Reject(Reject { reason: "x".into() }),
                    _ => Message::ResyncRequest(Default::default()),
                };
                let mut f =
                    sextant_mep::frame::encode_to_vec(&m, MAX).expect("a small message fits");
                if script.byte().is_multiple_of(2) {
                    let tag = script.bytes(16);
                    let len = u32::from_be_bytes([f[0], f[1], f[2], f[3]]) + tag.len() as u32;
                    f[..4].copy_from_slice(&len.to_be_bytes());
                    f.extend_from_slice(&tag);
                }
                ends[to].feed(&f, now);
            }
            // Raw bytes.
            9 => {
                let n = script.byte() as usize;
                let raw = script.bytes(n);
                ends[to].feed(&raw, now);
            }
            // The honest end sends data.
            10 | 11 => {
                let e = &mut ends[from];
                if !e.closed {
                    let m = Message::ResyncRequest(sextant_mep::message::ResyncRequest {
                        child: Some(format!("{from}#{steps}")),
                        have: None,
                    });
                    let acts = e.session.send(m.clone());
                    if !acts.is_empty() {
                        e.data_sent.push(m);
                    }
                    e.carry(acts);
                }
            }
            // Time passes.
            _ => {
                now += Duration::from_millis(u64::from(script.byte()) * 20);
                for e in &mut ends {
                    if !e.closed {
                        let acts = e.session.tick(now);
                        e.carry(acts);
                    }
                }
            }
        }
        for (me, other) in [(0, 1), (1, 0)] {
            let got = &ends[me].received;
            let sent = &ends[other].data_sent;
            // Keepalives and acks are the session's own; data is what the
            // node sent.
            let got: Vec<&Message> = got.iter().collect();
            assert!(
                got.len() <= sent.len() && got.iter().zip(sent).all(|(a, b)| *a == b),
                "end {me} accepted data the other end did not send: {got:?} vs {sent:?}"
            );
        }
        // The acceptor proves itself only once the initiator has proven.
        if ends[1].proved {
            assert!(ends[0].proved, "the acceptor proved itself first");
        }
    }
}

/// The config-sync transfer (`sextant_config_sync::Syncer`): a parent
/// running a configuration receives, from a peer parent, a sequence of
/// ConfigOffer, ConfigUpdate (whole texts and deltas, in parts, in any
/// order) and ConfigResult messages made from the input, with time passing
/// and links going down and up. Whatever the input: no panic; a text is
/// applied only with the digest its version announces; never a version
/// that names this node as its origin; at most one apply per whole
/// transfer received.
pub fn config_sync_transfer(data: &[u8]) {
    use std::time::Duration;

    use sextant_config_sync::{Cause, Input, Output, Settings, Syncer};
    use sextant_mep::message::{
        ConfigOffer, ConfigOutcome, ConfigResult, ConfigUpdate, ConfigVersion, LineOp, Message,
    };

    let settings = Settings {
        local_site: "P2".into(),
        software: "0.1.0".into(),
        syntax: "appliance".into(),
        automatic: true,
        peers: vec!["P1".into(), "P3".into()],
    };
    let texts = [
        "add gslb site P1 10.0.0.1\nadd gslb site P2 10.0.0.2\n",
        "add gslb site P1 10.0.0.1\nadd gslb site P2 10.0.0.2\nadd gslb vserver v HTTP\n",
        "",
        "add gslb site P2 10.0.0.2\n",
    ];
    let mut syncer = Syncer::new(settings.clone());
    let mut now = Duration::ZERO;
    let check = |outs: Vec<Output>| {
        for o in outs {
            if let Output::Apply {
                version, shared, ..
            } = o
            {
                assert_eq!(
                    sextant_config_sync::digest(&shared),
                    version.digest,
                    "applied a text whose digest is not its version's"
                );
                assert!(
                    !version.origin.eq_ignore_ascii_case("P2"),
                    "applied a version that names this node as its origin: {version:?}"
                );
            }
        }
    };
    check(syncer.on(
        Input::Loaded {
            settings,
            shared: texts[0].into(),
            files: Vec::new(),
            file_incarnation: None,
            cause: Cause::Start {
                saved: None,
                header: None,
            },
        },
        now,
    ));
    check(syncer.on(Input::PeerUp { site: "P1".into() }, now));
    let mut script = Script(data);
    let mut steps = 0;
    while !script.done() && steps < 256 {
        steps += 1;
        let site = if script.byte().is_multiple_of(4) {
            "P3"
        } else {
            "P1"
        }
        .to_string();
        let version = |s: &mut Script| {
            let text = texts[s.byte() as usize % texts.len()];
            ConfigVersion {
                // Small, and now and then the largest there is (a hostile
                // peer's, which the next local change must not overflow).
                incarnation: match s.byte() {
                    255 => u64::MAX,
                    b => u64::from(b % 8),
                },
                origin: ["P1", "P2", "P3", "p2"][s.byte() as usize % 4].into(),
                digest: if s.byte().is_multiple_of(8) {
                    "sha256:00".into()
                } else {
                    sextant_config_sync::digest(text)
                },
            }
        };
        let op = script.byte() % 8;
        let input = match op {
            0 => Input::Received {
                site,
                msg: Message::ConfigOffer(ConfigOffer {
                    version: version(&mut script),
                    software: if script.byte().is_multiple_of(8) {
                        "9.9"
                    } else {
                        "0.1.0"
                    }
                    .into(),
                    sync_protocol: 1,
                    syntax: "appliance".into(),
                    automatic: script.byte() % 4 != 0,
                }),
            },
            1..=3 => {
                let v = version(&mut script);
                let text = texts[script.byte() as usize % texts.len()];
                let cut = (script.byte() as usize).min(text.len());
                let delta = script.byte().is_multiple_of(3);
                let base = delta.then(|| version(&mut script));
                let ops = if delta {
                    (0..script.byte() % 4)
                        .map(|_| match script.byte() % 3 {
                            0 => LineOp::Keep(u32::from(script.byte())),
                            1 => LineOp::Delete(u32::from(script.byte())),
                            _ => LineOp::Insert(vec!["add gslb vserver w HTTP".into()]),
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                Input::Received {
                    site,
                    msg: Message::ConfigUpdate(ConfigUpdate {
                        transfer: u64::from(script.byte() % 4),
                        version: v,
                        base,
                        part: u32::from(script.byte() % 3),
                        last: script.byte().is_multiple_of(2),
                        text: if delta {
                            String::new()
                        } else if script.byte().is_multiple_of(2) {
                            text[..cut].to_string()
                        } else {
                            text.to_string()
                        },
                        ops,
                        forced: script.byte().is_multiple_of(4),
                        files: Vec::new(),
                        lineage: Vec::new(),
                    }),
                }
            }
            4 => Input::Received {
                site,
                msg: Message::ConfigResult(ConfigResult {
                    transfer: u64::from(script.byte() % 4),
                    version: version(&mut script),
                    outcome: [
                        ConfigOutcome::Applied,
                        ConfigOutcome::Rejected,
                        ConfigOutcome::Refused,
                        ConfigOutcome::NeedFull,
                        ConfigOutcome::Superseded,
                    ][script.byte() as usize % 5],
                    errors: Vec::new(),
                    warnings: Vec::new(),
                    running: version(&mut script),
                }),
            },
            5 => {
                if script.byte().is_multiple_of(2) {
                    Input::PeerDown { site }
                } else {
                    Input::PeerUp { site }
                }
            }
            6 => {
                now += Duration::from_millis(u64::from(script.byte()) * 250);
                Input::Tick
            }
            _ => Input::Manual { force_site: None },
        };
        check(syncer.on(input, now));
    }
}

// ---------------------------------------------------------------------------
// Health

/// The Prometheus text exposition parser (`sextant_health::load::
/// parse_exposition`, fed each scrape's body): no more samples plus
/// skipped lines than lines; every sample's metric and label names are
/// valid names; every declared type is for a name of the text.
pub fn prometheus(data: &[u8]) {
    use sextant_core::load::{is_label_name, is_metric_name};

    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let e = sextant_health::load::parse_exposition(text);
    assert!(e.samples.len() + e.skipped <= text.lines().count());
    for s in &e.samples {
        assert!(is_metric_name(s.name), "{:?}", s.name);
        assert!(s.labels.iter().all(|(l, _)| is_label_name(l)));
        let _ = e.type_of(s.name);
    }
    for name in e.types.keys() {
        assert!(text.contains(name));
    }
}

/// The DNS monitor's judge of one datagram (`sextant_health::dns`, via
/// `fuzzing::dns_datagram`). The first byte picks the monitor's settings
/// (query type, expected addresses, accepted rcodes) and whether the
/// expected query ID is the datagram's own or another one; the rest is the
/// datagram. A datagram with another ID is never judged; a success is a
/// response (QR=1) with an accepted rcode.
pub fn monitor_dns(data: &[u8]) {
    use sextant_core::{DnsCheck, DnsQueryType};

    let Some((&sel, msg)) = data.split_first() else {
        return;
    };
    let check = DnsCheck {
        query: "www.example.com".into(),
        query_type: match sel & 3 {
            0 => DnsQueryType::A,
            1 => DnsQueryType::Aaaa,
            _ => DnsQueryType::Soa,
        },
        expect_addresses: if sel & 4 != 0 {
            vec![
                IpAddr::from([192, 0, 2, 1]),
                IpAddr::from([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1]),
            ]
        } else {
            Vec::new()
        },
        expect_rcodes: if sel & 8 != 0 { vec![0, 3] } else { Vec::new() },
    };
    let msg_id = msg.get(..2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    let id = match (sel & 0x80 != 0, msg_id) {
        (true, Some(own)) => own,
        _ => 0x5e47,
    };
    let verdict = sextant_health::fuzzing::dns_datagram(&check, id, msg);
    if msg_id != Some(id) {
        assert_eq!(verdict, None, "judged a datagram with another ID");
    }
    if let Some(Ok(what)) = &verdict {
        assert!(what.starts_with("DNS "), "{what}");
        assert_eq!(msg[2] & 0x80, 0x80, "success on a query");
        let rcode = msg[3] & 0x0f;
        assert!(rcode == 0 || (sel & 8 != 0 && rcode == 3), "rcode {rcode}");
    }
}

/// The HTTP(S) monitor's judge of a response (`sextant_health::http`, via
/// `fuzzing::http_response`). The first byte picks the monitor's settings
/// (accepted statuses, a body text to find) and the second where the
/// response is cut, as if it arrived in two reads. Judging the first piece
/// and then the whole (as the monitor does, stopping at the first
/// verdict) ends in a verdict once the peer has closed; a success is an
/// `HTTP/1.x` status line with an accepted status.
pub fn monitor_http(data: &[u8]) {
    use sextant_core::HttpCheck;

    let [sel, cut, response @ ..] = data else {
        return;
    };
    let check = HttpCheck {
        request: "GET /health".into(),
        status_codes: if sel & 1 != 0 {
            vec![(200, 299), (301, 302)]
        } else {
            Vec::new()
        },
        body_contains: (sel & 2 != 0).then(|| "alive".to_string()),
        custom_headers: String::new(),
    };
    let cut = (usize::from(*cut) * 4).min(response.len());
    let judge = |buf, closed| sextant_health::fuzzing::http_response(&check, buf, closed);
    let verdict = judge(&response[..cut], false)
        .or_else(|| judge(response, false))
        .or_else(|| judge(response, true));
    let Some(verdict) = verdict else {
        panic!("no verdict after the peer closed");
    };
    if let Ok(what) = verdict {
        assert!(response.starts_with(b"HTTP/1."));
        let status: u16 = what
            .strip_prefix("HTTP ")
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("success {what:?}"));
        let accepted = if check.status_codes.is_empty() {
            status == 200
        } else {
            check
                .status_codes
                .iter()
                .any(|&(lo, hi)| (lo..=hi).contains(&status))
        };
        assert!(accepted, "status {status} accepted");
    }
}

// ---------------------------------------------------------------------------
// VRRP

/// The internet checksum over `bytes` with the checksum field (6..8)
/// counted as zero, preceded by the pseudo-header when asked: written here
/// independently of sextant-vrrp, so the fuzzer can reach past the
/// checksum check.
fn vrrp_checksum(bytes: &[u8], pseudo: Option<(IpAddr, IpAddr)>) -> u16 {
    fn words(sum: &mut u64, b: &[u8]) {
        for pair in b.chunks(2) {
            let hi = u64::from(pair[0]) << 8;
            let lo = pair.get(1).map_or(0, |&l| u64::from(l));
            *sum += hi | lo;
        }
    }
    let mut sum = 0u64;
    let mut zeroed = bytes.to_vec();
    if let Some(field) = zeroed.get_mut(6..8) {
        field.fill(0);
    }
    words(&mut sum, &zeroed);
    if let Some((src, dst)) = pseudo {
        for a in [src, dst] {
            match a {
                IpAddr::V4(v4) => words(&mut sum, &v4.octets()),
                IpAddr::V6(v6) => words(&mut sum, &v6.octets()),
            }
        }
        let len = bytes.len() as u64;
        sum += (len >> 16) + (len & 0xffff) + 112;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The XDP path's frame reader and answer writer
/// (`sextant_dns::xdp::frame`), on a frame as it comes off the wire. A
/// frame that reads has its payload inside it, after the headers, and a
/// source port other than 0. Writing an answer (the payload reversed) into
/// the frame's 2048-byte buffer gives a frame that reads back with the
/// addresses and ports swapped and exactly that answer.
pub fn xdp_frame(data: &[u8]) {
    use sextant_dns::xdp::frame;
    let Some(query) = frame::parse(data) else {
        return;
    };
    assert!(query.payload.start >= 42 && query.payload.end <= data.len());
    assert_ne!(query.source.port(), 0);
    let answer: Vec<u8> = data[query.payload.clone()].iter().rev().copied().collect();
    let mut buf = data.to_vec();
    buf.resize(buf.len().max(2048), 0);
    let Some(len) = frame::write_reply(&mut buf, &query, &answer) else {
        assert!(query.payload.start + answer.len() > buf.len());
        return;
    };
    if query.destination.port() == 0 {
        return; // the answer's source port: it does not read back
    }
    let back = frame::parse(&buf[..len]).expect("an answer frame reads back");
    assert_eq!(
        (back.source, back.destination),
        (query.destination, query.source)
    );
    assert_eq!(&buf[back.payload], &answer[..]);
}

/// The VRRPv3 advertisement decoder (`sextant_vrrp::packet::Advert::
/// decode`). The first byte picks the family (IPv4 or IPv6 link-local
/// source to the VRRP group), whether the TTL is 255 or the second byte,
/// and whether the checksum is left as sent or recomputed (with or without
/// the pseudo-header) so that the checks after it are reached; the rest is
/// the VRRP message. A decoded advert passes `Advert::check`, has the
/// message's VRID, priority, interval and addresses, and encodes (in the
/// mode it was received in) to a message that decodes to the same advert.
pub fn vrrp_advert(data: &[u8]) {
    use sextant_vrrp::packet::{Advert, ChecksumMode, Family, HEADER_LEN, VRRP_TTL};

    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let (ttl, rest) = match (sel & 2 != 0, rest.split_first()) {
        (true, Some((&ttl, rest))) => (ttl, rest),
        _ => (VRRP_TTL, rest),
    };
    let (src, dst, family) = if sel & 1 == 0 {
        (
            IpAddr::from([192, 0, 2, 1]),
            IpAddr::from([224, 0, 0, 18]),
            Family::V4,
        )
    } else {
        (
            IpAddr::from([0xfe80, 0, 0, 0, 0, 0, 0, 1]),
            IpAddr::from([0xff02, 0, 0, 0, 0, 0, 0, 0x12]),
            Family::V6,
        )
    };
    let mut bytes = rest.to_vec();
    if sel & 4 != 0 && bytes.len() >= HEADER_LEN {
        let pseudo = (sel & 8 != 0 || family == Family::V6).then_some((src, dst));
        let sum = vrrp_checksum(&bytes, pseudo);
        bytes[6..8].copy_from_slice(&sum.to_be_bytes());
    }
    let Ok(decoded) = Advert::decode(&bytes, ttl, src, dst) else {
        return;
    };
    let advert = &decoded.advert;
    assert_eq!(ttl, VRRP_TTL);
    assert_eq!(advert.check(family), Ok(()));
    assert_eq!((advert.vrid, advert.priority), (bytes[1], bytes[2]));
    assert_eq!(advert.addrs.len(), usize::from(bytes[3]));
    assert_eq!(
        advert.max_advert_int_cs,
        u16::from_be_bytes([bytes[4], bytes[5]]) & 0x0fff
    );
    let addr_len = family.addr_len();
    for (i, addr) in advert.addrs.iter().enumerate() {
        let at = HEADER_LEN + i * addr_len;
        let wire = &bytes[at..at + addr_len];
        match addr {
            IpAddr::V4(a) => assert_eq!(&a.octets()[..], wire),
            IpAddr::V6(a) => assert_eq!(&a.octets()[..], wire),
        }
    }
    let mode = match family {
        Family::V4 => decoded.checksum,
        Family::V6 => ChecksumMode::PseudoHeader,
    };
    let again = advert.encode(mode, src, dst);
    match Advert::decode(&again, VRRP_TTL, src, dst) {
        Ok(d) => assert_eq!(&d.advert, advert),
        Err(e) => panic!("re-encoded advert does not decode: {e}"),
    }
}
