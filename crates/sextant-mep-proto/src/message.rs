//! The messages of the metric exchange protocol.
//!
//! Every message travels in one frame (see [`crate::frame`]): the frame's
//! kind byte says which message it is, and the payload is the message body
//! as JSON. The bodies are plain serde structs, so the JSON field names below
//! are the wire format; `docs/mep.md` lists them.
//!
//! Receivers ignore JSON fields they do not know, so a later version may add
//! optional fields without breaking older peers; a change of meaning needs a
//! new protocol version.
//!
//! Optional figures are `Option`s and are omitted from the JSON when absent:
//! a figure that a site does not measure is *missing*, never zero, so the
//! methods that need it fall back to their backup method.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// The protocol version carried in every frame header and in [`Hello`].
/// Version 2: mutual challenge-response over the transcript of both Hellos
/// and sealed frames after it (see [`crate::handshake`]); version 1's
/// one-sided proofs could be relayed.
pub const PROTOCOL_VERSION: u8 = 2;

/// One protocol message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Hello(Hello),
    AuthProof(AuthProof),
    ServiceStates(ServiceStates),
    SiteMetrics(SiteMetrics),
    LdnsRtt(LdnsRtt),
    Sessions(Sessions),
    BackupParents(BackupParents),
    Keepalive(Keepalive),
    KeepaliveAck(KeepaliveAck),
    Reject(Reject),
    AcceptParent(AcceptParent),
    ChildReport(ChildReport),
    ResyncRequest(ResyncRequest),
    ConfigOffer(ConfigOffer),
    ConfigUpdate(ConfigUpdate),
    ConfigResult(ConfigResult),
}

/// The kind byte of each message in the frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    Hello = 1,
    AuthProof = 2,
    ServiceStates = 3,
    SiteMetrics = 4,
    LdnsRtt = 5,
    Sessions = 6,
    BackupParents = 7,
    Keepalive = 8,
    KeepaliveAck = 9,
    Reject = 10,
    AcceptParent = 11,
    ChildReport = 12,
    ResyncRequest = 13,
    ConfigOffer = 14,
    ConfigUpdate = 15,
    ConfigResult = 16,
}

impl Kind {
    pub const ALL: [Kind; 16] = [
        Kind::Hello,
        Kind::AuthProof,
        Kind::ServiceStates,
        Kind::SiteMetrics,
        Kind::LdnsRtt,
        Kind::Sessions,
        Kind::BackupParents,
        Kind::Keepalive,
        Kind::KeepaliveAck,
        Kind::Reject,
        Kind::AcceptParent,
        Kind::ChildReport,
        Kind::ResyncRequest,
        Kind::ConfigOffer,
        Kind::ConfigUpdate,
        Kind::ConfigResult,
    ];

    /// The kind with this header byte, if any.
    pub fn from_byte(b: u8) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| *k as u8 == b)
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Hello => "Hello",
            Kind::AuthProof => "AuthProof",
            Kind::ServiceStates => "ServiceStates",
            Kind::SiteMetrics => "SiteMetrics",
            Kind::LdnsRtt => "LdnsRtt",
            Kind::Sessions => "Sessions",
            Kind::BackupParents => "BackupParents",
            Kind::Keepalive => "Keepalive",
            Kind::KeepaliveAck => "KeepaliveAck",
            Kind::Reject => "Reject",
            Kind::AcceptParent => "AcceptParent",
            Kind::ChildReport => "ChildReport",
            Kind::ResyncRequest => "ResyncRequest",
            Kind::ConfigOffer => "ConfigOffer",
            Kind::ConfigUpdate => "ConfigUpdate",
            Kind::ConfigResult => "ConfigResult",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Message {
    pub fn kind(&self) -> Kind {
        match self {
            Message::Hello(_) => Kind::Hello,
            Message::AuthProof(_) => Kind::AuthProof,
            Message::ServiceStates(_) => Kind::ServiceStates,
            Message::SiteMetrics(_) => Kind::SiteMetrics,
            Message::LdnsRtt(_) => Kind::LdnsRtt,
            Message::Sessions(_) => Kind::Sessions,
            Message::BackupParents(_) => Kind::BackupParents,
            Message::Keepalive(_) => Kind::Keepalive,
            Message::KeepaliveAck(_) => Kind::KeepaliveAck,
            Message::Reject(_) => Kind::Reject,
            Message::AcceptParent(_) => Kind::AcceptParent,
            Message::ChildReport(_) => Kind::ChildReport,
            Message::ResyncRequest(_) => Kind::ResyncRequest,
            Message::ConfigOffer(_) => Kind::ConfigOffer,
            Message::ConfigUpdate(_) => Kind::ConfigUpdate,
            Message::ConfigResult(_) => Kind::ConfigResult,
        }
    }

    /// The body as JSON.
    pub fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        match self {
            Message::Hello(m) => serde_json::to_vec(m),
            Message::AuthProof(m) => serde_json::to_vec(m),
            Message::ServiceStates(m) => serde_json::to_vec(m),
            Message::SiteMetrics(m) => serde_json::to_vec(m),
            Message::LdnsRtt(m) => serde_json::to_vec(m),
            Message::Sessions(m) => serde_json::to_vec(m),
            Message::BackupParents(m) => serde_json::to_vec(m),
            Message::Keepalive(m) => serde_json::to_vec(m),
            Message::KeepaliveAck(m) => serde_json::to_vec(m),
            Message::Reject(m) => serde_json::to_vec(m),
            Message::AcceptParent(m) => serde_json::to_vec(m),
            Message::ChildReport(m) => serde_json::to_vec(m),
            Message::ResyncRequest(m) => serde_json::to_vec(m),
            Message::ConfigOffer(m) => serde_json::to_vec(m),
            Message::ConfigUpdate(m) => serde_json::to_vec(m),
            Message::ConfigResult(m) => serde_json::to_vec(m),
        }
    }

    /// Parses the JSON body of a message of `kind`.
    pub fn from_json(kind: Kind, body: &[u8]) -> serde_json::Result<Message> {
        Ok(match kind {
            Kind::Hello => Message::Hello(serde_json::from_slice(body)?),
            Kind::AuthProof => Message::AuthProof(serde_json::from_slice(body)?),
            Kind::ServiceStates => Message::ServiceStates(serde_json::from_slice(body)?),
            Kind::SiteMetrics => Message::SiteMetrics(serde_json::from_slice(body)?),
            Kind::LdnsRtt => Message::LdnsRtt(serde_json::from_slice(body)?),
            Kind::Sessions => Message::Sessions(serde_json::from_slice(body)?),
            Kind::BackupParents => Message::BackupParents(serde_json::from_slice(body)?),
            Kind::Keepalive => Message::Keepalive(serde_json::from_slice(body)?),
            Kind::KeepaliveAck => Message::KeepaliveAck(serde_json::from_slice(body)?),
            Kind::Reject => Message::Reject(serde_json::from_slice(body)?),
            Kind::AcceptParent => Message::AcceptParent(serde_json::from_slice(body)?),
            Kind::ChildReport => Message::ChildReport(serde_json::from_slice(body)?),
            Kind::ResyncRequest => Message::ResyncRequest(serde_json::from_slice(body)?),
            Kind::ConfigOffer => Message::ConfigOffer(serde_json::from_slice(body)?),
            Kind::ConfigUpdate => Message::ConfigUpdate(serde_json::from_slice(body)?),
            Kind::ConfigResult => Message::ConfigResult(serde_json::from_slice(body)?),
        })
    }
}

/// A site's place in the topology, as it announces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A parent site (it has children, or is configured as one's parent).
    Parent,
    /// A site with `-parentSite`.
    Child,
    /// A site in a flat mesh (no parent-child configuration at all).
    Flat,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::Parent => "parent",
            Role::Child => "child",
            Role::Flat => "flat",
        })
    }
}

/// The first message on every connection, in both directions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The sender's site name.
    pub site: String,
    /// The sender's site IP (the source address of the connection).
    pub ip: IpAddr,
    pub role: Role,
    /// The sender's configuration generation (informational).
    pub generation: u64,
    /// 32 random bytes as 64 lowercase hex digits: the challenge the
    /// receiver must answer in its [`AuthProof`].
    pub nonce: String,
    /// Set by a backup parent that connects to adopt a child of this
    /// (original) parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acting_for: Option<String>,
    /// [`PROTOCOL_VERSION`] of the sender.
    pub protocol: u8,
}

/// The sender's proof over the transcript of both Hellos:
/// `HMAC-SHA256(secret, label || transcript)` as lowercase hex (the label
/// says whether the initiator or the acceptor proves; see
/// [`crate::handshake`]), or the empty string when the link has no secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthProof {
    pub hmac: String,
}

/// The state and load figures of the sender's local services, as one step
/// of a sequenced stream (see `docs/mep.md`, "Service state stream").
///
/// A full list of 30,000 services does not fit in one frame, and resending
/// everything every few seconds costs more than what changes; so a stream
/// starts with a snapshot (`full`, possibly split into `part`s, applied only
/// once the `last` part is in) and continues with numbered deltas (`seq`
/// one more each time). A receiver that sees a gap asks for a new snapshot
/// with [`ResyncRequest`]. A non-full message without entries or removals
/// whose `seq` is the latest one is a heartbeat: it lets a receiver notice a
/// lost delta without waiting for the next change.
///
/// Every field but `entries` defaults so that the body of protocol 1 before
/// the stream (`{"entries":[...]}`) still decodes, as a complete snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceStates {
    /// The sender's sequence number of this step of the stream. All parts
    /// of one snapshot carry the same number; the first delta after it
    /// carries the next one.
    #[serde(default)]
    pub seq: u64,
    /// A snapshot (the entries replace everything known of the stream),
    /// not a delta.
    #[serde(default = "yes")]
    pub full: bool,
    /// Index of this part of a snapshot split over several frames, from 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub part: u32,
    /// This is the last part of its snapshot (always true for a delta).
    #[serde(default = "yes")]
    pub last: bool,
    /// New or changed entries (a delta), or the entries of this part (a
    /// snapshot).
    #[serde(default)]
    pub entries: Vec<ServiceEntry>,
    /// Keys of the entries gone since the previous step (deltas only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<ServiceKey>,
}

impl Default for ServiceStates {
    fn default() -> Self {
        ServiceStates {
            seq: 0,
            full: true,
            part: 0,
            last: true,
            entries: Vec::new(),
            removed: Vec::new(),
        }
    }
}

fn yes() -> bool {
    true
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Identity of an entry within one site's report: the sender's (ip, port).
///
/// Names are local to each site's configuration, so the receiver matches a
/// report to its own configured service by address, never by name; the key
/// is the sender's `ip` and `port` (the private ones: `public_ip` and
/// `public_port` are what the receiver compares with its configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ServiceKey {
    pub ip: IpAddr,
    pub port: u16,
}

/// One local service of the sender.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceEntry {
    /// The service name as configured at the sender (informational: the
    /// receiver matches by address, see [`ServiceKey`]).
    pub service: String,
    pub ip: IpAddr,
    pub port: u16,
    /// The address clients reach the service at, when it differs from
    /// `ip` (NAT): the receiving site configures remote services by their
    /// public address, so it matches on this when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_ip: Option<IpAddr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_port: Option<u16>,
    pub state: ServiceState,
    #[serde(default)]
    pub metrics: LoadMetrics,
}

impl ServiceEntry {
    /// The entry's identity within its site's stream.
    pub fn key(&self) -> ServiceKey {
        ServiceKey {
            ip: self.ip,
            port: self.port,
        }
    }
}

/// A service's health as its own site sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ServiceState {
    #[serde(rename = "UP")]
    Up,
    #[serde(rename = "DOWN")]
    Down,
}

/// Load figures of one service; each is missing when not measured.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LoadMetrics {
    /// Active connections (LEASTCONNECTION).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u64>,
    /// Response time in milliseconds (LEASTRESPONSETIME).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_time_ms: Option<f64>,
    /// Bits per second (LEASTBANDWIDTH).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_bps: Option<u64>,
    /// Packets per second (LEASTPACKETS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets_ps: Option<u64>,
    /// An operator-defined load figure (CUSTOMLOAD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_load: Option<u64>,
    /// The service's own CPU and memory use, percent (datacenter mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_percent: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_percent: Option<u32>,
    /// Requests and new sessions per second (datacenter mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_ps: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_sessions_ps: Option<u64>,
    /// Healthy backends behind the service (datacenter mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthy_backends: Option<u64>,
}

/// Figures of the sender's site as a whole.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SiteMetrics {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_percent: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_percent: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_bps: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packet_loss_percent: Option<f64>,
    /// The sender's own direct MEP links and whether each is up, so that
    /// every site can draw the whole graph (the dashboard's topology).
    /// Empty from senders that do not report them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<PeerLink>,
}

/// One of the sender's direct MEP links.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerLink {
    /// The site at the other end.
    pub site: String,
    /// The sender's side of it: `peer`, `to-child`, `adopted` or `to-parent`.
    pub kind: String,
    /// Its session is up.
    pub up: bool,
}

/// The most links a received report keeps (a site has one per other site
/// at most; this bounds what a peer can make us store).
pub const MAX_REPORTED_LINKS: usize = 1024;

/// The longest site name a reported link keeps, in characters: the
/// appliance's rule for object names (1 to 127), which every configured
/// site name follows.
pub const MAX_SITE_NAME_CHARS: usize = 127;

/// The words a link's `kind` may be (the `link` words of `/v1/sites`).
pub const LINK_KINDS: [&str; 4] = ["peer", "to-child", "adopted", "to-parent"];

impl PeerLink {
    /// A link a receiver keeps: a site name that could be configured and a
    /// kind it knows.
    pub fn is_well_formed(&self) -> bool {
        let chars = self.site.chars().count();
        (1..=MAX_SITE_NAME_CHARS).contains(&chars) && LINK_KINDS.contains(&self.kind.as_str())
    }
}

/// What a receiver keeps of a report's links: the well-formed ones, at most
/// [`MAX_REPORTED_LINKS`], so a peer cannot make it store unbounded or
/// meaningless data.
pub fn accepted_links(links: &[PeerLink]) -> Vec<PeerLink> {
    links
        .iter()
        .filter(|l| l.is_well_formed())
        .take(MAX_REPORTED_LINKS)
        .cloned()
        .collect()
}

/// The sender's measured round-trip times to local DNS resolvers (used by
/// the dynamic RTT method; carried, not interpreted, by this crate).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LdnsRtt {
    pub entries: Vec<LdnsRttEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LdnsRttEntry {
    /// The LDNS group, as a prefix (`198.51.100.0/24`, `2001:db8::/56`).
    pub prefix: String,
    /// The sender's RTT to it; absent when it cannot measure it (every
    /// probe failed) or has not yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<u64>,
    /// The probe that measured it (`ping`, `dns`, `tcp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<String>,
    /// The sender's path figures towards the group, for datacenter mode's
    /// Client Based selection: router hops (from the reply's TTL), the
    /// reply's IP TTL, the share of recent probe cycles lost (per mille,
    /// 0 to 1000) and the mean opinion score × 100 (100 to 450). All four
    /// or none; absent from senders that do not measure them. Wider than
    /// their range on purpose: an out-of-range value is the receiver's to
    /// reject, not a reason to refuse the whole message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hops: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_permille: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mos_centi: Option<u32>,
    /// The sender's clients query through this LDNS (keeps the entry alive
    /// at the other sites, which probe it too).
    #[serde(default)]
    pub queried: bool,
    /// The sender dropped the group.
    #[serde(default)]
    pub removed: bool,
}

/// Persistence sessions the sender created (carried, not interpreted, by
/// this crate).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Sessions {
    pub entries: Vec<SessionEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionEntry {
    pub vserver: String,
    /// The persistence key of the client (its address masked to the
    /// vserver's persistence prefix), e.g. `198.51.100.0/24`.
    pub client: String,
    pub service: String,
    pub expires_in_s: u64,
}

/// A parent's ordered backup parent list (most preferred first).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct BackupParents {
    /// The parent whose backups these are.
    pub parent: String,
    pub list: Vec<SiteAddr>,
}

/// A site's name and IP, as carried in [`BackupParents`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SiteAddr {
    pub name: String,
    pub ip: IpAddr,
}

/// Sent every keepalive interval; the receiver echoes `sent_at_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Keepalive {
    /// The sender's monotonic clock in milliseconds (meaningful only to
    /// the sender).
    pub sent_at_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeepaliveAck {
    /// The `sent_at_ms` of the keepalive being answered.
    pub echo: u64,
}

/// The sender refuses or ends the session; it closes the connection right
/// after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reject {
    pub reason: String,
}

/// A child accepts a backup parent's adoption (the answer to a [`Hello`]
/// with `acting_for`); a refusal is a [`Reject`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcceptParent {
    /// The accepting child's new parent (the receiver).
    pub parent: String,
}

/// A parent relays what it knows of one of its children (its own or an
/// adopted one) to its peer parents, which have no link with the child:
/// "Each parent site exchanges health information with the child sites and
/// with other parent sites."
///
/// Sent when the child's link comes up (`up`, nothing else), for each step
/// of the sender's relay stream of the child's services and when its site
/// figures change (`up`, with `states` and/or `site_metrics`), as a relay
/// heartbeat (`up`, `states` empty), and when the link goes down (`up:
/// false`, nothing else).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildReport {
    pub child: String,
    /// MEP between the sender and the child is UP.
    pub up: bool,
    /// The child's complete service list, as sent before the sequenced
    /// stream; still accepted (as an unsequenced snapshot), never sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub services: Option<Vec<ServiceEntry>>,
    /// One step of the sender's relay stream of the child's services: the
    /// relaying parent numbers it itself (one stream per child and sender),
    /// with the same rules as [`ServiceStates`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub states: Option<ServiceStates>,
    /// The child's last [`SiteMetrics`], when included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site_metrics: Option<SiteMetrics>,
}

/// The receiver of a stream saw a gap (or a delta before any snapshot) and
/// asks for a fresh snapshot; the sender answers on the same connection.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ResyncRequest {
    /// `None`: the sender's own services; `Some(child)`: the sender's relay
    /// of that child ([`ChildReport`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child: Option<String>,
    /// The last `seq` the receiver applied, if any (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub have: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(site: &str, kind: &str) -> PeerLink {
        PeerLink {
            site: site.into(),
            kind: kind.into(),
            up: true,
        }
    }

    /// A receiver keeps configured-looking links only, and a bounded number.
    #[test]
    fn received_links_are_checked_and_capped() {
        let longest = "s".repeat(MAX_SITE_NAME_CHARS);
        let sent = vec![
            link("ams", "peer"),
            link("", "peer"),
            link(&longest, "to-parent"),
            link(&format!("{longest}s"), "peer"),
            link("nyc", "sibling"),
            link("child_site1", "adopted"),
        ];
        let kept: Vec<String> = accepted_links(&sent).into_iter().map(|l| l.site).collect();
        assert_eq!(kept, ["ams", longest.as_str(), "child_site1"]);

        let flood: Vec<PeerLink> = (0..MAX_REPORTED_LINKS + 10)
            .map(|i| link(&format!("s{i}"), "peer"))
            .collect();
        let kept = accepted_links(&flood);
        assert_eq!(kept.len(), MAX_REPORTED_LINKS);
        assert_eq!(kept[0].site, "s0");
    }

    #[test]
    fn kinds_round_trip_through_their_byte() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_byte(k as u8), Some(k));
        }
        assert_eq!(Kind::from_byte(0), None);
        assert_eq!(Kind::from_byte(200), None);
    }

    #[test]
    fn wire_names_are_stable() {
        let e = ServiceEntry {
            service: "svc".into(),
            ip: "10.0.0.1".parse().unwrap(),
            port: 80,
            public_ip: None,
            public_port: None,
            state: ServiceState::Up,
            metrics: LoadMetrics {
                connections: Some(3),
                ..Default::default()
            },
        };
        let j = serde_json::to_string(&e).unwrap();
        assert_eq!(
            j,
            r#"{"service":"svc","ip":"10.0.0.1","port":80,"state":"UP","metrics":{"connections":3}}"#
        );
        let e2 = ServiceEntry {
            public_ip: Some("192.0.2.1".parse().unwrap()),
            public_port: Some(8080),
            ..e.clone()
        };
        let j = serde_json::to_string(&e2).unwrap();
        assert_eq!(
            j,
            r#"{"service":"svc","ip":"10.0.0.1","port":80,"public_ip":"192.0.2.1","public_port":8080,"state":"UP","metrics":{"connections":3}}"#
        );
        assert_eq!(serde_json::from_str::<ServiceEntry>(&j).unwrap(), e2);
        // The body of protocol 1 before the stream is a complete snapshot.
        let old: ServiceStates = serde_json::from_str(
            r#"{"entries":[{"service":"svc","ip":"10.0.0.1","port":80,"state":"UP","metrics":{"connections":3}}]}"#,
        )
        .unwrap();
        assert_eq!(
            old,
            ServiceStates {
                entries: vec![e],
                ..Default::default()
            }
        );
        let d = ServiceStates {
            seq: 7,
            full: false,
            removed: vec![ServiceKey {
                ip: "10.0.0.2".parse().unwrap(),
                port: 443,
            }],
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_string(&d).unwrap(),
            r#"{"seq":7,"full":false,"last":true,"entries":[],"removed":[{"ip":"10.0.0.2","port":443}]}"#
        );
        let h = Hello {
            site: "a".into(),
            ip: "127.0.0.1".parse().unwrap(),
            role: Role::Parent,
            generation: 2,
            nonce: "00".into(),
            acting_for: None,
            protocol: 1,
        };
        assert_eq!(
            serde_json::to_string(&h).unwrap(),
            r#"{"site":"a","ip":"127.0.0.1","role":"parent","generation":2,"nonce":"00","protocol":1}"#
        );
    }

    #[test]
    fn unknown_fields_are_ignored_missing_ones_are_errors() {
        // A newer peer may add optional fields without a version change.
        let k: Keepalive = serde_json::from_str(r#"{"sent_at_ms":1,"x":2}"#).unwrap();
        assert_eq!(k.sent_at_ms, 1);
        assert!(serde_json::from_str::<Keepalive>(r#"{}"#).is_err());
    }

    #[test]
    fn ldns_rtt_path_figures_are_optional_both_ways() {
        // An older peer's entry: no path figures.
        let old = r#"{"prefix":"198.51.100.0/24","rtt_us":1234,"probe":"dns","queried":true}"#;
        let e: LdnsRttEntry = serde_json::from_str(old).unwrap();
        assert_eq!(
            (e.hops, e.ttl, e.loss_permille, e.mos_centi),
            (None, None, None, None)
        );
        // Without figures this side writes what an older peer writes.
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"prefix":"198.51.100.0/24","rtt_us":1234,"probe":"dns","queried":true,"removed":false}"#
        );
        let with = LdnsRttEntry {
            hops: Some(3),
            ttl: Some(61),
            loss_permille: Some(100),
            mos_centi: Some(412),
            ..e
        };
        let json = serde_json::to_string(&with).unwrap();
        assert_eq!(
            json,
            r#"{"prefix":"198.51.100.0/24","rtt_us":1234,"probe":"dns","hops":3,"ttl":61,"loss_permille":100,"mos_centi":412,"queried":true,"removed":false}"#
        );
        assert_eq!(serde_json::from_str::<LdnsRttEntry>(&json).unwrap(), with);
        // Out-of-range figures still parse (the receiver rejects them, the
        // message's other entries stand).
        let wild = r#"{"prefix":"198.51.100.0/24","hops":300,"ttl":999,"loss_permille":5000,"mos_centi":9}"#;
        let e: LdnsRttEntry = serde_json::from_str(wild).unwrap();
        assert_eq!((e.hops, e.loss_permille), (Some(300), Some(5000)));
    }
}

/// One version of the GSLB configuration that parents share (config sync,
/// docs/config-sync.md). Versions are ordered by `incarnation`, then by
/// `origin` (the site whose name sorts first wins a tie); two versions with
/// the same `digest` hold the same text, whatever their labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ConfigVersion {
    /// The sync counter (the appliance's `-incarnation`): every change
    /// takes one more than the highest the site has seen.
    pub incarnation: u64,
    /// The site where the change was made.
    pub origin: String,
    /// `sha256:` and the hex SHA-256 of the shared text.
    pub digest: String,
}

/// Config sync: the version the sender runs, sent to each peer parent when
/// the link comes up and after every change of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigOffer {
    pub version: ConfigVersion,
    /// The sender's software version (`0.1.0`): parents sync only with
    /// parents that run the same one (seed 001).
    pub software: String,
    /// The config sync protocol's version (1).
    pub sync_protocol: u32,
    /// The syntax of the sender's configuration file: `appliance` or
    /// `toml`; parents sync only within one syntax.
    pub syntax: String,
    /// Automatic config sync is enabled at the sender.
    pub automatic: bool,
}

/// One step of a line delta, applied to the base text from its start: keep
/// the next `n` lines, delete the next `n`, or insert these lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LineOp {
    Keep(u32),
    Delete(u32),
    Insert(Vec<String>),
}

/// The digest of a file the shared configuration names but does not hold
/// (a location file), so that a receiver can tell whether its copy differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDigest {
    /// The path as the configuration writes it.
    pub path: String,
    /// `sha256:` and the hex SHA-256 of the file, or absent when the sender
    /// cannot read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// Config sync: one part of a transfer of the shared configuration, either
/// the whole text (`base` absent) or a line delta from `base`. A transfer
/// too big for one frame is split into parts (`part` 0, 1, ..., `last` on
/// the final one), applied only when all are in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigUpdate {
    /// Names the transfer in the receiver's [`ConfigResult`].
    pub transfer: u64,
    /// The version the receiver runs once it applies the transfer.
    pub version: ConfigVersion,
    /// The version a delta applies to; absent for the whole text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<ConfigVersion>,
    #[serde(default)]
    pub part: u32,
    #[serde(default = "yes")]
    pub last: bool,
    /// The whole text: this part of it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// A delta: this part of its steps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ops: Vec<LineOp>,
    /// Sent by an operator's manual sync: applied even where automatic
    /// sync is disabled, and even when the receiver runs a newer version.
    #[serde(default)]
    pub forced: bool,
    /// The files the configuration names, with their digests at the sender.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileDigest>,
    /// The changes this version builds on, newest first (at most 64): a
    /// receiver whose own change is not among them knows it is undone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lineage: Vec<ConfigLabel>,
}

/// Where and at which incarnation a change was made (a version without its
/// digest).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ConfigLabel {
    pub incarnation: u64,
    pub origin: String,
}

/// What became of a transfer at its receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfigOutcome {
    /// Validated, written and in force.
    Applied,
    /// Not a valid configuration here: `errors` say why; the receiver keeps
    /// its running configuration.
    Rejected,
    /// A delta whose base the receiver does not run: send the whole text.
    NeedFull,
    /// The receiver takes no configuration from the sender (a child site,
    /// another software version or syntax, automatic sync disabled).
    Refused,
    /// The receiver runs a version that beats this one.
    Superseded,
}

/// Config sync: the receiver's answer to a transfer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigResult {
    pub transfer: u64,
    /// The version the transfer carried.
    pub version: ConfigVersion,
    pub outcome: ConfigOutcome,
    /// Why it was rejected or refused, each error as `FILE:LINE: reason`
    /// where it has a line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// Applied, with these remarks (a location file that differs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The version the receiver runs after the transfer.
    pub running: ConfigVersion,
}
