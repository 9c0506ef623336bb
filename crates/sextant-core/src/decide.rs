//! `decide`: one query in, one answer and its reason out.

use std::net::IpAddr;

use crate::model::{DomainId, LbMethod, ServiceId, VServerId, ZoneId};
use crate::select::{mask_ip, mix, source_ip_hash, weighted_round_robin};
use crate::snapshot::Snapshot;
use crate::trace::{FallbackWhy, SkipWhy, TraceEvent, Tracer};

/// The query types the core distinguishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryType {
    A,
    Aaaa,
    Ns,
    Soa,
    Any,
    Other(u16),
}

impl QueryType {
    pub fn from_code(code: u16) -> Self {
        match code {
            1 => QueryType::A,
            28 => QueryType::Aaaa,
            2 => QueryType::Ns,
            6 => QueryType::Soa,
            255 => QueryType::Any,
            other => QueryType::Other(other),
        }
    }

    pub fn code(self) -> u16 {
        match self {
            QueryType::A => 1,
            QueryType::Aaaa => 28,
            QueryType::Ns => 2,
            QueryType::Soa => 6,
            QueryType::Any => 255,
            QueryType::Other(c) => c,
        }
    }

    /// Parses `A`, `AAAA`, `NS`, `SOA`, `ANY` or `TYPEnn`.
    pub fn parse(s: &str) -> Option<Self> {
        let up = s.to_ascii_uppercase();
        Some(match up.as_str() {
            "A" => QueryType::A,
            "AAAA" => QueryType::Aaaa,
            "NS" => QueryType::Ns,
            "SOA" => QueryType::Soa,
            "ANY" => QueryType::Any,
            _ => QueryType::from_code(up.strip_prefix("TYPE")?.parse().ok()?),
        })
    }
}

/// The client subnet of an EDNS Client Subnet option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientSubnet {
    pub addr: IpAddr,
    pub source_prefix: u8,
}

/// One question, as the core sees it.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    /// Lower case, no trailing dot; the root is "".
    pub name: &'a str,
    pub qtype: QueryType,
    /// The LDNS address the query came from.
    pub source: IpAddr,
    pub ecs: Option<ClientSubnet>,
}

/// What kind of response to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The addresses in the [`AnswerBuf`] answer a GSLB domain.
    Addresses { domain: DomainId, ttl: u32 },
    /// The name exists but has no data of this type (SOA of `zone` in the
    /// authority section when there is one).
    NoData { zone: Option<ZoneId> },
    /// The name does not exist in `zone`.
    NxDomain { zone: ZoneId },
    /// The SOA record of the zone apex.
    ZoneSoa { zone: ZoneId },
    /// The NS records of the zone apex.
    ZoneNs { zone: ZoneId },
    /// Not authoritative for the name.
    Refused,
}

/// The short reason of a decision, cheap enough for every query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The vserver's method decided.
    Method(LbMethod),
    /// The method could not decide; its backup method did.
    Fallback {
        method: LbMethod,
        backup: LbMethod,
        why: FallbackWhy,
    },
    Persistence,
    MultiIp,
    BackupVServer,
    BackupIp,
    EmptyDownResponse,
    LastResort,
    NoAddressOfFamily,
    Zone,
    NxDomain,
    NoData,
    NotAuthoritative,
}

/// A persistence entry the edge should create or refresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stick {
    pub vserver: VServerId,
    /// The client address masked with the persistence mask.
    pub key: IpAddr,
    pub service: ServiceId,
}

/// The result of [`decide`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub outcome: Outcome,
    pub reason: Reason,
    /// ECS scope prefix for the response: the source prefix when the answer
    /// depended on the client address, 0 otherwise.
    pub ecs_scope: u8,
    pub stick: Option<Stick>,
}

/// Where the chosen addresses go; reused across queries so the hot path
/// does not allocate.
#[derive(Debug, Default, Clone)]
pub struct AnswerBuf {
    pub addrs: Vec<IpAddr>,
}

/// Per-worker selection state: a random stream, and whether this decision
/// only looks (explain) or really answers.
///
/// Each DNS worker owns one, so selection needs no lock; `decide` stays a
/// function of its arguments.
#[derive(Debug, Clone)]
pub struct Cursor {
    random: u64,
    peek: bool,
}

impl Cursor {
    pub fn new(seed: u64) -> Self {
        Cursor {
            random: seed,
            peek: false,
        }
    }

    /// A cursor that does not advance round-robin rotations, for explaining
    /// the next answer without changing it.
    pub fn peeking(seed: u64) -> Self {
        Cursor {
            random: seed,
            peek: true,
        }
    }

    fn next_random(&mut self) -> u64 {
        self.random = self.random.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.random)
    }
}

/// Looks up source-IP persistence entries kept by the edge.
pub trait Sessions {
    fn lookup(&self, vserver: VServerId, key: IpAddr) -> Option<ServiceId>;
}

/// No persistence entries at all.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoSessions;

impl Sessions for NoSessions {
    fn lookup(&self, _vserver: VServerId, _key: IpAddr) -> Option<ServiceId> {
        None
    }
}

/// How deep backup vserver chains are followed (guards against cycles).
const MAX_BACKUP_DEPTH: usize = 4;

/// Answers one query from one snapshot.
pub fn decide<T: Tracer, S: Sessions>(
    snap: &Snapshot,
    query: &Query<'_>,
    cursor: &mut Cursor,
    sessions: &S,
    out: &mut AnswerBuf,
    trace: &mut T,
) -> Decision {
    out.addrs.clear();
    let model = snap.model();
    let zone = snap.find_zone(query.name);
    let apex = zone.filter(|z| model.zone(*z).apex == query.name);

    if let (Some(z), QueryType::Soa | QueryType::Ns) = (apex, query.qtype) {
        trace.record(TraceEvent::ZoneApex { zone: z });
        let outcome = if query.qtype == QueryType::Soa {
            Outcome::ZoneSoa { zone: z }
        } else {
            Outcome::ZoneNs { zone: z }
        };
        return plain(outcome, Reason::Zone);
    }

    if let Some(domain) = snap.find_domain(query.name) {
        let family = match query.qtype {
            QueryType::A | QueryType::Any => Family::V4,
            QueryType::Aaaa => Family::V6,
            _ => {
                trace.record(TraceEvent::NoData);
                return plain(Outcome::NoData { zone }, Reason::NoData);
            }
        };
        let d = model.domain(domain);
        trace.record(TraceEvent::Domain {
            domain,
            vserver: d.vserver,
        });
        let mut decision =
            answer_domain(snap, query, family, d.vserver, cursor, sessions, out, trace);
        if out.addrs.is_empty() && decision.reason != Reason::NoAddressOfFamily {
            if let Some(ip) = d.backup_ip.filter(|ip| family.matches(*ip)) {
                trace.record(TraceEvent::BackupIp { addr: ip });
                out.addrs.push(ip);
                decision.reason = Reason::BackupIp;
            } else if let Some(last) = last_resort(snap, family, d.vserver, cursor, out, trace) {
                decision.reason = last;
            }
        }
        decision.outcome = if out.addrs.is_empty() {
            Outcome::NoData { zone }
        } else {
            Outcome::Addresses { domain, ttl: d.ttl }
        };
        return decision;
    }

    match zone {
        Some(_) if apex.is_some() => {
            trace.record(TraceEvent::NoData);
            plain(Outcome::NoData { zone }, Reason::NoData)
        }
        Some(z) => {
            trace.record(TraceEvent::NxDomain { zone: z });
            plain(Outcome::NxDomain { zone: z }, Reason::NxDomain)
        }
        None => {
            trace.record(TraceEvent::NotAuthoritative);
            plain(Outcome::Refused, Reason::NotAuthoritative)
        }
    }
}

fn plain(outcome: Outcome, reason: Reason) -> Decision {
    Decision {
        outcome,
        reason,
        ecs_scope: 0,
        stick: None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    V4,
    V6,
}

impl Family {
    fn matches(self, ip: IpAddr) -> bool {
        matches!(
            (self, ip),
            (Family::V4, IpAddr::V4(_)) | (Family::V6, IpAddr::V6(_))
        )
    }
}

/// Chooses among a vserver's services, following its backup vservers when
/// none is UP. Leaves `out` empty when nothing UP can answer.
#[allow(clippy::too_many_arguments)]
fn answer_domain<T: Tracer, S: Sessions>(
    snap: &Snapshot,
    query: &Query<'_>,
    family: Family,
    first: VServerId,
    cursor: &mut Cursor,
    sessions: &S,
    out: &mut AnswerBuf,
    trace: &mut T,
) -> Decision {
    let model = snap.model();
    let mut vs_id = first;
    let mut any_of_family = false;
    for depth in 0..=MAX_BACKUP_DEPTH {
        let vs = model.vserver(vs_id);
        let eligible = |i: usize| {
            let s = vs.bindings[i].service;
            family.matches(model.service(s).answer_ip()) && snap.is_up(s)
        };
        if T::ENABLED {
            for b in &vs.bindings {
                let ip = model.service(b.service).answer_ip();
                if !family.matches(ip) {
                    trace.record(TraceEvent::Skipped {
                        service: b.service,
                        why: SkipWhy::WrongFamily,
                    });
                } else if !snap.is_up(b.service) {
                    trace.record(TraceEvent::Skipped {
                        service: b.service,
                        why: SkipWhy::Down,
                    });
                } else {
                    trace.record(TraceEvent::Candidate {
                        service: b.service,
                        weight: b.weight,
                    });
                }
            }
        }
        any_of_family |= vs
            .bindings
            .iter()
            .any(|b| family.matches(model.service(b.service).answer_ip()));
        let up_count = (0..vs.bindings.len()).filter(|i| eligible(*i)).count();
        if up_count > 0 {
            let mut decision = choose(snap, query, vs_id, &eligible, cursor, sessions, out, trace);
            if depth > 0 && matches!(decision.reason, Reason::Method(_) | Reason::Fallback { .. }) {
                decision.reason = Reason::BackupVServer;
            }
            return decision;
        }
        trace.record(TraceEvent::AllDown { vserver: vs_id });
        match vs.backup_vserver {
            Some(next) if depth < MAX_BACKUP_DEPTH && (next as usize) < model.vservers.len() => {
                trace.record(TraceEvent::BackupVServer {
                    from: vs_id,
                    to: next,
                });
                vs_id = next;
            }
            _ => break,
        }
    }
    if !any_of_family {
        trace.record(TraceEvent::NoAddressOfFamily);
        return plain(Outcome::NoData { zone: None }, Reason::NoAddressOfFamily);
    }
    plain(Outcome::NoData { zone: None }, Reason::LastResort)
}

/// Everything is down: NODATA under empty down response, otherwise one
/// bound service of the right family regardless of its state.
fn last_resort<T: Tracer>(
    snap: &Snapshot,
    family: Family,
    vs_id: VServerId,
    cursor: &mut Cursor,
    out: &mut AnswerBuf,
    trace: &mut T,
) -> Option<Reason> {
    let model = snap.model();
    let vs = model.vserver(vs_id);
    if vs.empty_down_response {
        trace.record(TraceEvent::EmptyDownResponse);
        return Some(Reason::EmptyDownResponse);
    }
    let random = cursor.next_random();
    let pick = weighted_round_robin(
        &vs.bindings,
        snap.schedule(vs_id),
        snap.turn(vs_id, cursor.peek),
        random,
        |i| family.matches(model.service(vs.bindings[i].service).answer_ip()),
    )?;
    let service = vs.bindings[pick].service;
    trace.record(TraceEvent::LastResort { service });
    out.addrs.push(model.service(service).answer_ip());
    Some(Reason::LastResort)
}

/// Picks among the UP services of one vserver.
#[allow(clippy::too_many_arguments)]
fn choose<T: Tracer, S: Sessions>(
    snap: &Snapshot,
    query: &Query<'_>,
    vs_id: VServerId,
    eligible: &impl Fn(usize) -> bool,
    cursor: &mut Cursor,
    sessions: &S,
    out: &mut AnswerBuf,
    trace: &mut T,
) -> Decision {
    let model = snap.model();
    let vs = model.vserver(vs_id);
    let (client, from_ecs) = match query.ecs {
        Some(ecs) if vs.ecs => (ecs.addr, true),
        _ => (query.source, false),
    };
    trace.record(TraceEvent::Client {
        addr: client,
        from_ecs,
    });
    let client_scope = if from_ecs {
        query.ecs.map(|e| e.source_prefix).unwrap_or(0)
    } else {
        0
    };
    let mut decision = Decision {
        outcome: Outcome::NoData { zone: None },
        reason: Reason::Method(vs.method),
        ecs_scope: 0,
        stick: None,
    };

    if vs.multi_ip_response {
        for (i, b) in vs.bindings.iter().enumerate() {
            if eligible(i) {
                out.addrs.push(model.service(b.service).answer_ip());
            }
        }
        trace.record(TraceEvent::MultiIp {
            count: out.addrs.len() as u32,
        });
        decision.reason = Reason::MultiIp;
        return decision;
    }

    let persist_key = vs
        .persistence
        .map(|p| mask_ip(client, p.v4_mask, p.v6_mask));
    if let Some(key) = persist_key {
        let kept = sessions.lookup(vs_id, key).and_then(|service| {
            vs.bindings
                .iter()
                .position(|b| b.service == service)
                .filter(|i| eligible(*i))
        });
        if let Some(i) = kept {
            let service = vs.bindings[i].service;
            trace.record(TraceEvent::Persisted { service });
            out.addrs.push(model.service(service).answer_ip());
            decision.reason = Reason::Persistence;
            decision.ecs_scope = client_scope;
            decision.stick = Some(Stick {
                vserver: vs_id,
                key,
                service,
            });
            return decision;
        }
    }

    let (method, reason) = match usable(vs.method) {
        Ok(m) => (m, Reason::Method(m)),
        Err(why) => {
            let backup = vs
                .backup_method
                .and_then(|b| usable(b).ok())
                .unwrap_or(LbMethod::RoundRobin);
            trace.record(TraceEvent::MethodFallback {
                vserver: vs_id,
                method: vs.method,
                backup,
                why,
            });
            (
                backup,
                Reason::Fallback {
                    method: vs.method,
                    backup,
                    why,
                },
            )
        }
    };
    decision.reason = reason;
    let pick = match method {
        LbMethod::SourceIpHash => {
            decision.ecs_scope = client_scope;
            source_ip_hash(
                &vs.bindings,
                mask_ip(client, vs.hash_v4_mask, vs.hash_v6_mask),
                eligible,
            )
        }
        _ => {
            let random = cursor.next_random();
            weighted_round_robin(
                &vs.bindings,
                snap.schedule(vs_id),
                snap.turn(vs_id, cursor.peek),
                random,
                eligible,
            )
        }
    };
    if let Some(i) = pick {
        let service = vs.bindings[i].service;
        trace.record(TraceEvent::Picked { service, method });
        out.addrs.push(model.service(service).answer_ip());
        if let Some(key) = persist_key {
            decision.ecs_scope = client_scope;
            decision.stick = Some(Stick {
                vserver: vs_id,
                key,
                service,
            });
        }
    }
    decision
}

/// Whether a method can decide with the inputs this build has; if not, why.
fn usable(method: LbMethod) -> Result<LbMethod, FallbackWhy> {
    match method {
        LbMethod::RoundRobin | LbMethod::SourceIpHash => Ok(method),
        LbMethod::LeastConnection
        | LbMethod::LeastResponseTime
        | LbMethod::LeastBandwidth
        | LbMethod::LeastPackets
        | LbMethod::CustomLoad => Err(FallbackWhy::NoLoadMetrics),
        LbMethod::StaticProximity => Err(FallbackWhy::NoLocation),
        LbMethod::Rtt => Err(FallbackWhy::NoRtt),
    }
}

impl Reason {
    /// One line for an operator.
    pub fn describe(&self) -> String {
        match self {
            Reason::Method(m) => format!("chosen by {m}"),
            Reason::Fallback {
                method,
                backup,
                why,
            } => format!(
                "{method} could not decide ({}); chosen by backup method {backup}",
                why.describe()
            ),
            Reason::Persistence => "kept by source-IP persistence".to_string(),
            Reason::MultiIp => "multi-IP response: every UP service".to_string(),
            Reason::BackupVServer => "no service UP; answered by the backup vserver".to_string(),
            Reason::BackupIp => "no service UP; answered the domain's backup IP".to_string(),
            Reason::EmptyDownResponse => "no service UP; empty down response (NODATA)".to_string(),
            Reason::LastResort => {
                "no service UP and no backup configured; last-resort answer".to_string()
            }
            Reason::NoAddressOfFamily => {
                "no bound service has an address of this family (NODATA)".to_string()
            }
            Reason::Zone => "zone apex record".to_string(),
            Reason::NxDomain => "name does not exist in the zone (NXDOMAIN)".to_string(),
            Reason::NoData => "no records of this type (NODATA)".to_string(),
            Reason::NotAuthoritative => "not authoritative for this name (REFUSED)".to_string(),
        }
    }
}
