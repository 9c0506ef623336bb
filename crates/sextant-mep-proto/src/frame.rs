//! The frame codec (pure).
//!
//! ```text
//! +----------------+---------+------+------------------------+
//! | length: u32 BE | version | kind | payload (JSON body)    |
//! +----------------+---------+------+------------------------+
//!                  |<---------------- length --------------->|
//! ```
//!
//! `length` counts the bytes after itself (version, kind and payload), so it
//! is at least 2. The version is [`PROTOCOL_VERSION`]; the kind is a
//! [`Kind`] byte; the payload is the message body as JSON.
//!
//! A decoder never reads past a frame and never allocates more than the
//! limit: the length is checked against the limit as soon as its four bytes
//! are in, and the version and kind as soon as theirs are, before the
//! payload arrives. Every error is fatal for the session that produced it
//! (the stream cannot be resynchronised) and for nothing else.

use crate::message::{Kind, Message, PROTOCOL_VERSION};

/// Bytes before the payload: length (4), version (1), kind (1).
pub const HEADER_LEN: usize = 6;

/// The default limit of `length` (1 MiB).
pub const DEFAULT_MAX_FRAME: usize = 1 << 20;

/// The limit of `length` before a session is authenticated: a Hello, an
/// AuthProof or a Reject is a few hundred bytes, so nobody who has not
/// proven a password can make a node buffer more than this.
pub const HANDSHAKE_MAX_FRAME: usize = 4096;

/// Why a frame cannot be decoded (or encoded).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("frame of {len} bytes exceeds the limit of {max} bytes")]
    Oversized { len: usize, max: usize },
    #[error("frame length {0} is shorter than the version and kind bytes")]
    TooShort(u32),
    #[error("unsupported protocol version {0} (this node speaks {PROTOCOL_VERSION})")]
    UnknownVersion(u8),
    #[error("unknown message kind {0}")]
    UnknownKind(u8),
    #[error("malformed {kind} message: {error}")]
    BadJson { kind: Kind, error: String },
}

/// Appends the frame of `msg` to `out`.
///
/// Fails (leaving `out` as it was) if the frame would exceed `max`.
pub fn encode(msg: &Message, max: usize, out: &mut Vec<u8>) -> Result<(), FrameError> {
    encode_version(msg, PROTOCOL_VERSION, max, out)
}

/// [`encode`] with another version byte: a Reject to a peer of an older
/// protocol is framed in its version, so that it can read why.
pub fn encode_version(
    msg: &Message,
    version: u8,
    max: usize,
    out: &mut Vec<u8>,
) -> Result<(), FrameError> {
    let body = msg.to_json().map_err(|e| FrameError::BadJson {
        kind: msg.kind(),
        error: e.to_string(),
    })?;
    let len = body.len() + 2;
    if len > max || len > u32::MAX as usize {
        return Err(FrameError::Oversized { len, max });
    }
    out.reserve(4 + len);
    out.extend_from_slice(&(len as u32).to_be_bytes());
    out.push(version);
    out.push(msg.kind() as u8);
    out.extend_from_slice(&body);
    Ok(())
}

/// The frame of `msg` as a new buffer.
pub fn encode_to_vec(msg: &Message, max: usize) -> Result<Vec<u8>, FrameError> {
    let mut out = Vec::new();
    encode(msg, max, &mut out)?;
    Ok(out)
}

/// Decodes the first frame of `buf`.
///
/// `Ok(None)` means "need more bytes"; `Ok(Some((msg, n)))` means the first
/// `n` bytes of `buf` were one frame carrying `msg`.
pub fn decode(buf: &[u8], max: usize) -> Result<Option<(Message, usize)>, FrameError> {
    let Some(total) = frame_len(buf, max)? else {
        // Not whole yet: the version and kind are refused as soon as their
        // bytes are in, before the payload arrives.
        if buf.len() >= 5 && buf[4] != PROTOCOL_VERSION {
            return Err(FrameError::UnknownVersion(buf[4]));
        }
        if let Some(&b) = buf.get(5) {
            Kind::from_byte(b).ok_or(FrameError::UnknownKind(b))?;
        }
        return Ok(None);
    };
    let frame = &buf[..total];
    match parse_header(frame)? {
        (PROTOCOL_VERSION, Some(kind)) => {
            parse_body(kind, &frame[HEADER_LEN..]).map(|m| Some((m, total)))
        }
        (version, _) => Err(FrameError::UnknownVersion(version)),
    }
}

/// The length of the first frame of `buf` (header included), once its
/// length field is in and within `max`; `Ok(None)` means "need more bytes".
/// Version and kind are not looked at: see [`parse_header`].
pub fn frame_len(buf: &[u8], max: usize) -> Result<Option<usize>, FrameError> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let len32 = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    let len = len32 as usize;
    if len > max {
        return Err(FrameError::Oversized { len, max });
    }
    if len < 2 {
        return Err(FrameError::TooShort(len32));
    }
    Ok((buf.len() >= 4 + len).then_some(4 + len))
}

/// The version byte and kind of a whole frame. The kind is checked only
/// for the current version (an older one's kinds are read by the caller).
pub fn parse_header(frame: &[u8]) -> Result<(u8, Option<Kind>), FrameError> {
    let (Some(&version), Some(&kind)) = (frame.get(4), frame.get(5)) else {
        return Err(FrameError::TooShort(frame.len().saturating_sub(4) as u32));
    };
    if version != PROTOCOL_VERSION {
        return Ok((version, Kind::from_byte(kind)));
    }
    Ok((
        version,
        Some(Kind::from_byte(kind).ok_or(FrameError::UnknownKind(kind))?),
    ))
}

/// The message of a frame's body (the JSON after the header).
pub fn parse_body(kind: Kind, body: &[u8]) -> Result<Message, FrameError> {
    Message::from_json(kind, body).map_err(|e| FrameError::BadJson {
        kind,
        error: e.to_string(),
    })
}

/// Reassembles frames from a byte stream.
#[derive(Debug)]
pub struct FrameReader {
    buf: Vec<u8>,
    /// Bytes of `buf` already decoded (dropped lazily).
    start: usize,
    max: usize,
}

impl FrameReader {
    pub fn new(max: usize) -> Self {
        FrameReader {
            buf: Vec::new(),
            start: 0,
            max,
        }
    }

    /// Adds received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete message, `Ok(None)` when more bytes are needed.
    /// After an error the reader must be dropped with its session.
    pub fn next_message(&mut self) -> Result<Option<Message>, FrameError> {
        match decode(&self.buf[self.start..], self.max)? {
            None => {
                if self.start > 0 {
                    self.buf.drain(..self.start);
                    self.start = 0;
                }
                Ok(None)
            }
            Some((msg, n)) => {
                self.start += n;
                Ok(Some(msg))
            }
        }
    }

    /// The next whole frame's bytes (header included), undecoded, if its
    /// length is within `max`; `Ok(None)` when more bytes are needed. The
    /// session decides how to read it (sealed or not, which version).
    pub fn next_frame(&mut self, max: usize) -> Result<Option<&[u8]>, FrameError> {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
        match frame_len(&self.buf[self.start..], max)? {
            None => {
                if self.start > 0 {
                    self.buf.drain(..self.start);
                    self.start = 0;
                }
                Ok(None)
            }
            Some(n) => {
                let at = self.start;
                self.start += n;
                Ok(Some(&self.buf[at..at + n]))
            }
        }
    }

    /// Bytes received but not yet decoded.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::*;

    fn samples() -> Vec<Message> {
        vec![
            Message::Hello(Hello {
                site: "siteA".into(),
                ip: "127.0.0.1".parse().unwrap(),
                role: Role::Flat,
                generation: 7,
                nonce: "ab".repeat(32),
                acting_for: Some("P1".into()),
                protocol: 1,
            }),
            Message::AuthProof(AuthProof {
                hmac: "00ff".into(),
            }),
            Message::ServiceStates(ServiceStates {
                seq: 3,
                full: false,
                part: 0,
                last: true,
                removed: vec![ServiceKey {
                    ip: "10.0.0.9".parse().unwrap(),
                    port: 8080,
                }],
                entries: vec![ServiceEntry {
                    service: "s1".into(),
                    ip: "::1".parse().unwrap(),
                    port: 443,
                    public_ip: Some("2001:db8::1".parse().unwrap()),
                    public_port: Some(8443),
                    state: ServiceState::Down,
                    metrics: LoadMetrics {
                        connections: Some(1),
                        response_time_ms: Some(2.5),
                        bandwidth_bps: Some(3),
                        packets_ps: Some(4),
                        custom_load: Some(5),
                        cpu_percent: Some(6),
                        memory_percent: Some(7),
                        requests_ps: Some(8),
                        new_sessions_ps: Some(9),
                        healthy_backends: Some(10),
                    },
                }],
            }),
            Message::SiteMetrics(SiteMetrics {
                cpu_percent: Some(12.5),
                memory_percent: None,
                bandwidth_bps: Some(1_000_000),
                packet_loss_percent: Some(0.1),
                links: vec![PeerLink {
                    site: "ams".into(),
                    kind: "peer".into(),
                    up: false,
                }],
            }),
            Message::LdnsRtt(LdnsRtt {
                entries: vec![LdnsRttEntry {
                    prefix: "198.51.100.0/24".into(),
                    rtt_us: Some(1234),
                    probe: None,
                    hops: Some(3),
                    ttl: Some(61),
                    loss_permille: Some(100),
                    mos_centi: Some(412),
                    queried: true,
                    removed: false,
                }],
            }),
            Message::Sessions(Sessions {
                entries: vec![SessionEntry {
                    vserver: "vs".into(),
                    client: "198.51.100.0/24".into(),
                    service: "s1".into(),
                    expires_in_s: 60,
                }],
            }),
            Message::BackupParents(BackupParents {
                parent: "P1".into(),
                list: vec![SiteAddr {
                    name: "P2".into(),
                    ip: "127.0.0.2".parse().unwrap(),
                }],
            }),
            Message::Keepalive(Keepalive { sent_at_ms: 99 }),
            Message::KeepaliveAck(KeepaliveAck { echo: 99 }),
            Message::Reject(Reject {
                reason: "no".into(),
            }),
            Message::AcceptParent(AcceptParent {
                parent: "P2".into(),
            }),
            Message::ChildReport(ChildReport {
                child: "c1".into(),
                up: true,
                services: Some(vec![]),
                states: Some(ServiceStates {
                    seq: 1,
                    full: true,
                    part: 2,
                    last: false,
                    entries: vec![],
                    removed: vec![],
                }),
                site_metrics: Some(SiteMetrics::default()),
            }),
            Message::ResyncRequest(ResyncRequest {
                child: Some("c1".into()),
                have: Some(41),
            }),
            Message::ConfigOffer(ConfigOffer {
                version: version(9, "SiteP1"),
                software: "0.1.0".into(),
                sync_protocol: 1,
                syntax: "appliance".into(),
                automatic: true,
            }),
            // A whole text (unicode, JSON escapes, no trailing newline) in
            // the middle part of a transfer, with location file digests.
            Message::ConfigUpdate(ConfigUpdate {
                transfer: 4,
                version: version(10, "SiteP2"),
                base: None,
                part: 1,
                last: false,
                text: "add gslb site Zürich 10.0.0.1 -publicIP 10.0.0.1\n\
                       # 東京 \"quoted\" \\ tab\there\n\
                       add gslb vserver vs-ü HTTP"
                    .into(),
                ops: Vec::new(),
                forced: true,
                files: vec![
                    FileDigest {
                        path: "/var/sextant/locations/ort-ä.csv".into(),
                        digest: Some(format!("sha256:{}", "ab".repeat(32))),
                    },
                    FileDigest {
                        path: "missing.csv".into(),
                        digest: None,
                    },
                ],
                lineage: Vec::new(),
            }),
            // A delta with a step of each kind, its lines in unicode.
            Message::ConfigUpdate(ConfigUpdate {
                transfer: 5,
                version: version(11, "SiteP2"),
                base: Some(version(10, "SiteP2")),
                part: 0,
                last: true,
                text: String::new(),
                ops: vec![
                    LineOp::Keep(3),
                    LineOp::Delete(1),
                    LineOp::Insert(vec![
                        "bind gslb service svc-π -weight 42".into(),
                        String::new(),
                        "# Ωmega \u{1F310}".into(),
                    ]),
                    LineOp::Keep(0),
                    LineOp::Delete(2),
                ],
                forced: false,
                files: Vec::new(),
                lineage: Vec::new(),
            }),
            Message::ConfigResult(ConfigResult {
                transfer: 5,
                version: version(11, "SiteP2"),
                outcome: ConfigOutcome::Rejected,
                errors: vec!["sextant.conf:12: unknown site «Zürich»".into()],
                warnings: vec!["ort-ä.csv differs".into()],
                running: version(10, "SiteP2"),
            }),
        ]
    }

    fn version(incarnation: u64, origin: &str) -> ConfigVersion {
        ConfigVersion {
            incarnation,
            origin: origin.into(),
            digest: format!("sha256:{:064x}", incarnation),
        }
    }

    /// Site figures from a version that reports no links decode (no links),
    /// and an older receiver's shape ignores the new field.
    #[test]
    fn site_metrics_without_links_still_decode() {
        let old = br#"{"cpu_percent":12.5}"#;
        let m = Message::from_json(Kind::SiteMetrics, old).unwrap();
        assert_eq!(
            m,
            Message::SiteMetrics(SiteMetrics {
                cpu_percent: Some(12.5),
                ..Default::default()
            })
        );
        let new = Message::SiteMetrics(SiteMetrics {
            links: vec![PeerLink {
                site: "ams".into(),
                kind: "peer".into(),
                up: true,
            }],
            ..Default::default()
        });
        let json = new.to_json().unwrap();
        assert!(
            String::from_utf8_lossy(&json)
                .contains(r#""links":[{"site":"ams","kind":"peer","up":true}]"#),
            "{}",
            String::from_utf8_lossy(&json)
        );
        // What a receiver without the field reads: the figures it knows.
        #[derive(serde::Deserialize)]
        struct OldSiteMetrics {
            cpu_percent: Option<f64>,
        }
        let old: OldSiteMetrics = serde_json::from_slice(&json).unwrap();
        assert_eq!(old.cpu_percent, None);
    }

    #[test]
    fn every_message_round_trips() {
        let samples = samples();
        let kinds: std::collections::HashSet<Kind> = samples.iter().map(Message::kind).collect();
        assert_eq!(kinds.len(), Kind::ALL.len(), "a sample of every kind");
        for m in samples {
            let bytes = encode_to_vec(&m, DEFAULT_MAX_FRAME).unwrap();
            assert_eq!(bytes[4], PROTOCOL_VERSION);
            assert_eq!(bytes[5], m.kind() as u8);
            assert_eq!(
                u32::from_be_bytes(bytes[..4].try_into().unwrap()) as usize,
                bytes.len() - 4
            );
            let (back, n) = decode(&bytes, DEFAULT_MAX_FRAME).unwrap().unwrap();
            assert_eq!(n, bytes.len());
            assert_eq!(back, m);
        }
    }

    #[test]
    fn every_prefix_needs_more() {
        for m in samples() {
            let bytes = encode_to_vec(&m, DEFAULT_MAX_FRAME).unwrap();
            for cut in 0..bytes.len() {
                assert_eq!(
                    decode(&bytes[..cut], DEFAULT_MAX_FRAME),
                    Ok(None),
                    "{m:?} cut {cut}"
                );
            }
        }
    }

    #[test]
    fn reader_splits_and_joins() {
        let mut stream = Vec::new();
        for m in samples() {
            encode(&m, DEFAULT_MAX_FRAME, &mut stream).unwrap();
        }
        // Byte by byte.
        let mut r = FrameReader::new(DEFAULT_MAX_FRAME);
        let mut got = Vec::new();
        for b in &stream {
            r.push(std::slice::from_ref(b));
            while let Some(m) = r.next_message().unwrap() {
                got.push(m);
            }
        }
        assert_eq!(got, samples());
        assert_eq!(r.buffered(), 0);
        // All at once.
        let mut r = FrameReader::new(DEFAULT_MAX_FRAME);
        r.push(&stream);
        let mut got = Vec::new();
        while let Some(m) = r.next_message().unwrap() {
            got.push(m);
        }
        assert_eq!(got, samples());
    }

    #[test]
    fn oversized_length_is_refused_before_the_body_arrives() {
        let header = (2u32 << 20).to_be_bytes();
        assert_eq!(
            decode(&header, DEFAULT_MAX_FRAME),
            Err(FrameError::Oversized {
                len: 2 << 20,
                max: DEFAULT_MAX_FRAME
            })
        );
        // A configurable limit.
        let m = Message::Reject(Reject {
            reason: "x".repeat(100),
        });
        let bytes = encode_to_vec(&m, DEFAULT_MAX_FRAME).unwrap();
        assert!(matches!(
            decode(&bytes, 50),
            Err(FrameError::Oversized { max: 50, .. })
        ));
        assert!(matches!(
            encode_to_vec(&m, 50),
            Err(FrameError::Oversized { max: 50, .. })
        ));
    }

    #[test]
    fn bad_headers_are_errors() {
        assert_eq!(
            decode(&[0, 0, 0, 1, 1], DEFAULT_MAX_FRAME),
            Err(FrameError::TooShort(1))
        );
        assert_eq!(
            decode(&[0, 0, 0, 4, 1], DEFAULT_MAX_FRAME),
            Err(FrameError::UnknownVersion(1))
        );
        assert_eq!(
            decode(&[0, 0, 0, 4, PROTOCOL_VERSION, 0], DEFAULT_MAX_FRAME),
            Err(FrameError::UnknownKind(0))
        );
        assert_eq!(
            decode(&[0, 0, 0, 4, PROTOCOL_VERSION, 77], DEFAULT_MAX_FRAME),
            Err(FrameError::UnknownKind(77))
        );
    }

    #[test]
    fn bad_json_is_an_error() {
        let mut f = vec![0, 0, 0, 0, PROTOCOL_VERSION, Kind::Keepalive as u8];
        f.extend_from_slice(b"{not json");
        let len = (f.len() - 4) as u32;
        f[..4].copy_from_slice(&len.to_be_bytes());
        assert!(matches!(
            decode(&f, DEFAULT_MAX_FRAME),
            Err(FrameError::BadJson {
                kind: Kind::Keepalive,
                ..
            })
        ));
        // Valid JSON of the wrong shape.
        let mut f = vec![0, 0, 0, 0, PROTOCOL_VERSION, Kind::Hello as u8];
        f.extend_from_slice(br#"{"sent_at_ms":1}"#);
        let len = (f.len() - 4) as u32;
        f[..4].copy_from_slice(&len.to_be_bytes());
        assert!(matches!(
            decode(&f, DEFAULT_MAX_FRAME),
            Err(FrameError::BadJson {
                kind: Kind::Hello,
                ..
            })
        ));
        // Config sync bodies: a step of a kind that does not exist, a
        // version without its digest.
        for body in [
            &br#"{"transfer":1,"version":{"incarnation":2,"origin":"P1","digest":"sha256:00"},"ops":[{"swap":3}]}"#[..],
            &br#"{"transfer":1,"version":{"incarnation":2,"origin":"P1"},"text":"x"}"#[..],
        ] {
            let mut f = vec![0, 0, 0, 0, PROTOCOL_VERSION, Kind::ConfigUpdate as u8];
            f.extend_from_slice(body);
            let len = (f.len() - 4) as u32;
            f[..4].copy_from_slice(&len.to_be_bytes());
            assert!(matches!(
                decode(&f, DEFAULT_MAX_FRAME),
                Err(FrameError::BadJson {
                    kind: Kind::ConfigUpdate,
                    ..
                })
            ));
        }
    }

    #[test]
    fn config_sync_bodies_are_as_documented() {
        // docs/mep.md shows these bodies.
        let offer = Message::ConfigOffer(ConfigOffer {
            version: ConfigVersion {
                incarnation: 9,
                origin: "SiteP1".into(),
                digest: "sha256:3f2a".into(),
            },
            software: "0.1.0".into(),
            sync_protocol: 1,
            syntax: "appliance".into(),
            automatic: true,
        });
        assert_eq!(
            String::from_utf8(offer.to_json().unwrap()).unwrap(),
            r#"{"version":{"incarnation":9,"origin":"SiteP1","digest":"sha256:3f2a"},"software":"0.1.0","sync_protocol":1,"syntax":"appliance","automatic":true}"#
        );
        let delta = Message::ConfigUpdate(ConfigUpdate {
            transfer: 3,
            version: ConfigVersion {
                incarnation: 10,
                origin: "SiteP1".into(),
                digest: "sha256:9c41".into(),
            },
            base: Some(ConfigVersion {
                incarnation: 9,
                origin: "SiteP1".into(),
                digest: "sha256:3f2a".into(),
            }),
            part: 0,
            last: true,
            text: String::new(),
            ops: vec![
                LineOp::Keep(41),
                LineOp::Delete(1),
                LineOp::Insert(vec![
                    "bind gslb vserver vs1 -serviceName svc2 -weight 30".into(),
                ]),
            ],
            forced: false,
            files: Vec::new(),
            lineage: Vec::new(),
        });
        assert_eq!(
            String::from_utf8(delta.to_json().unwrap()).unwrap(),
            r#"{"transfer":3,"version":{"incarnation":10,"origin":"SiteP1","digest":"sha256:9c41"},"base":{"incarnation":9,"origin":"SiteP1","digest":"sha256:3f2a"},"part":0,"last":true,"ops":[{"keep":41},{"delete":1},{"insert":["bind gslb vserver vs1 -serviceName svc2 -weight 30"]}],"forced":false}"#
        );
        let refused = Message::ConfigResult(ConfigResult {
            transfer: 3,
            version: ConfigVersion {
                incarnation: 10,
                origin: "SiteP1".into(),
                digest: "sha256:9c41".into(),
            },
            outcome: ConfigOutcome::Refused,
            errors: vec![
                "child_site1 is a child site: a child's configuration is never synchronised (seed 001)".into(),
            ],
            warnings: Vec::new(),
            running: ConfigVersion {
                incarnation: 10,
                origin: "SiteP1".into(),
                digest: "sha256:9c41".into(),
            },
        });
        assert_eq!(
            String::from_utf8(refused.to_json().unwrap()).unwrap(),
            r#"{"transfer":3,"version":{"incarnation":10,"origin":"SiteP1","digest":"sha256:9c41"},"outcome":"refused","errors":["child_site1 is a child site: a child's configuration is never synchronised (seed 001)"],"running":{"incarnation":10,"origin":"SiteP1","digest":"sha256:9c41"}}"#
        );
        // A receiver fills in what an older or terser sender leaves out.
        let terse: ConfigUpdate = serde_json::from_str(
            r#"{"transfer":1,"version":{"incarnation":1,"origin":"P1","digest":"sha256:00"},"text":"x"}"#,
        )
        .unwrap();
        assert_eq!(
            (
                terse.part,
                terse.last,
                terse.forced,
                terse.base,
                terse.ops.len()
            ),
            (0, true, false, None, 0)
        );
    }
}
