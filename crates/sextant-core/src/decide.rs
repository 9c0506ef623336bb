//! `decide`: one query in, one answer and its reason out.

use std::net::IpAddr;

use crate::admin::AdminState;
use crate::choose::{Client, Eligible, Work, choose};
use crate::location::Location;
use crate::model::{DomainId, LbMethod, ServiceId, VServerId, ZoneId};
use crate::policy::{DnsActionKind, Goto, RequestFacts};
use crate::records::{MAX_CNAME_CHAIN, NodeId, RecordData, TYPE_ANY, TYPE_CNAME, TYPE_DS};
use crate::select::{mix, weighted_round_robin};
use crate::snapshot::Snapshot;
use crate::trace::{FallbackWhy, MatchPass, SkipWhy, TraceEvent, Tracer};

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

    /// Parses `A`, `AAAA`, `NS`, `SOA`, `ANY`, the static record types
    /// (`CNAME`, `MX`, `TXT`, `SRV`) or `TYPEnn`.
    pub fn parse(s: &str) -> Option<Self> {
        let up = s.to_ascii_uppercase();
        Some(match up.as_str() {
            "A" => QueryType::A,
            "AAAA" => QueryType::Aaaa,
            "NS" => QueryType::Ns,
            "SOA" => QueryType::Soa,
            "ANY" => QueryType::Any,
            "CNAME" => QueryType::Other(crate::records::TYPE_CNAME),
            "MX" => QueryType::Other(crate::records::TYPE_MX),
            "TXT" => QueryType::Other(crate::records::TYPE_TXT),
            "SRV" => QueryType::Other(crate::records::TYPE_SRV),
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
    /// CNAME-based GSLB: a CNAME from the GSLB domain to the name `service`
    /// stands for (`Service::cname`).
    GslbCname {
        domain: DomainId,
        ttl: u32,
        service: ServiceId,
    },
    /// The addresses in the [`AnswerBuf`] answer a datacenter-mode record.
    DcAddresses {
        record: crate::dc::DcRecordId,
        ttl: u32,
    },
    /// The name exists but has no data of this type (SOA of `zone` in the
    /// authority section when there is one).
    NoData { zone: Option<ZoneId> },
    /// The name does not exist in `zone`.
    NxDomain { zone: ZoneId },
    /// The SOA record of the zone apex.
    ZoneSoa { zone: ZoneId },
    /// The NS records of the zone apex.
    ZoneNs { zone: ZoneId },
    /// Static records (after the CNAMEs in [`AnswerBuf::chain`], if any),
    /// or the end of a CNAME chain.
    Static { end: ChainEnd },
    /// The name is at or below a delegated child zone: a referral (no AA,
    /// the child's NS records in authority, glue in additional).
    Referral { cut: NodeId },
    /// Not authoritative for the name.
    Refused,
    /// A DNS policy with a DROP action matched: send nothing.
    Drop,
}

/// What follows the CNAMEs of an [`Outcome::Static`] answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainEnd {
    /// The records of type `rtype` ([`TYPE_ANY`]: all) owned by `node`.
    Records { node: NodeId, rtype: u16 },
    /// A GSLB domain's addresses, in [`AnswerBuf::addrs`].
    Addresses { domain: DomainId, ttl: u32 },
    /// The last name exists with no data of the type: SOA of `zone`.
    NoData { zone: ZoneId },
    /// The last name does not exist in `zone` (RFC 6604: the RCODE is the
    /// last name's).
    NxDomain { zone: ZoneId },
    /// The chain leaves the zones we serve, enters a delegation, loops or
    /// reaches its length limit: the CNAMEs alone.
    Cnames,
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
    /// A DNS policy's preferred locations decided, in this pass.
    PreferredLocation {
        pass: MatchPass,
    },
    /// A DNS policy's DROP action matched.
    Dropped,
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
    /// This node is a child site; only parent sites answer DNS.
    ChildSite,
    /// The RTT method had no RTT to the LDNS yet and `-dropLdnsReq` is
    /// ENABLED: no response (the resolver retries once it is measured).
    NoRttDropped,
    /// A datacenter-mode record: its ranked datacenters' healthy addresses.
    Datacenter,
    /// Static records of a zone we serve (maybe after CNAMEs).
    Static,
    /// The domain's vserver is disabled by the operator and neither a
    /// backup vserver nor a backup IP answers (NODATA).
    AdminDisabled,
    /// A referral to a delegated child zone.
    Referral,
    /// A datacenter-mode record with no healthy address: its fail-safe
    /// records.
    FailSafe,
    /// A datacenter-mode record with no healthy address and no fail-safe
    /// records (NODATA).
    NoHealthyRecords,
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
    /// Set when the RTT method looked the LDNS up.
    pub ldns: Option<LdnsUse>,
}

/// What the RTT method found of the query's LDNS in the RTT table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LdnsUse {
    /// Its row: the DNS path marks it queried (entries expire unqueried).
    Known(u32),
    /// Not in the table: this LDNS group is new, for the prober.
    Unknown(IpAddr),
}

/// Where the chosen addresses go; reused across queries so the hot path
/// does not allocate.
#[derive(Debug, Default, Clone)]
pub struct AnswerBuf {
    pub addrs: Vec<IpAddr>,
    /// CNAME-based GSLB: the first chosen service that stands for a name
    /// (`-cnameEntry`); the answer is a CNAME to its name.
    pub cname_service: Option<ServiceId>,
    /// The CNAME records answered before the final data, as indices into
    /// `Model::records`, in chain order.
    pub chain: Vec<u32>,
    /// The services whose answers are in `addrs`, in the same order (a
    /// backup IP or a datacenter-mode address is no service): what the
    /// per-service answer counters count.
    pub services: Vec<ServiceId>,
    /// The GSLB domain answered (after CNAMEs), if any.
    pub domain: Option<DomainId>,
    /// The vserver that answered the domain: its own, or the backup
    /// vserver whose services were chosen.
    pub vserver: Option<VServerId>,
    /// The zone the query's name is in, if it is in one we serve.
    pub zone: Option<ZoneId>,
}

impl AnswerBuf {
    /// Adds a chosen service's answer: its address, and for CNAME-based
    /// GSLB the service itself. Inlined: it runs for every service of
    /// every answer (out of line it cost some 20 instructions a call).
    #[inline]
    pub(crate) fn push_service(&mut self, model: &crate::Model, service: ServiceId) {
        let svc = model.service(service);
        self.addrs.push(svc.answer_ip());
        self.services.push(service);
        if svc.cname.is_some() && self.cname_service.is_none() {
            self.cname_service = Some(service);
        }
    }
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

    pub(crate) fn peeks(&self) -> bool {
        self.peek
    }

    pub(crate) fn next_random(&mut self) -> u64 {
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
    out.chain.clear();
    out.services.clear();
    out.cname_service = None;
    out.domain = None;
    out.vserver = None;
    out.zone = None;
    if snap.is_child_site() {
        trace.record(TraceEvent::ChildSite);
        return plain(Outcome::Refused, Reason::ChildSite);
    }
    let model = snap.model();
    let (domain, zone) = snap.find_domain_and_zone(query.name);
    out.zone = zone;
    let mut client = client_of(snap, query, domain);
    // Looked up this early so that the RTT table's cache miss overlaps with
    // the policy and zone lookups instead of stalling the method.
    if domain.is_some_and(|d| model.vserver(model.domain(d).vserver).uses_rtt()) {
        client.rtt_row(snap);
    }

    let verdict = run_policies(snap, query, &mut client, trace);
    if verdict == Verdict::Drop {
        trace.record(TraceEvent::Dropped);
        return plain(Outcome::Drop, Reason::Dropped);
    }

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

    // DS is the parent's at a zone cut (RFC 4035 §3.1.4.1), whether the
    // child is delegated or one of our zones.
    if query.qtype == QueryType::Other(TYPE_DS)
        && let Some(z) = zone
        && let Some(decision) = ds_at_cut(snap, query.name, z, trace)
    {
        return decision;
    }

    if domain.is_none()
        && let Some(r) = snap.find_dc_record(query.name)
    {
        let v6 = match query.qtype {
            QueryType::A | QueryType::Any => false,
            QueryType::Aaaa => true,
            _ => {
                trace.record(TraceEvent::NoData);
                return plain(Outcome::NoData { zone }, Reason::NoData);
            }
        };
        let preferred = preferred_of(snap, verdict);
        let mut decision = crate::dc_answer::answer_dc_record(
            snap,
            r,
            v6,
            &mut client,
            preferred,
            cursor,
            out,
            trace,
        );
        if let Outcome::NoData { .. } = decision.outcome {
            decision.outcome = Outcome::NoData { zone };
        }
        return decision;
    }

    if let Some(domain) = domain {
        let cname_vs = snap
            .model()
            .vserver(snap.model().domain(domain).vserver)
            .cname;
        let family = match cname_vs {
            // A CNAME answers every address query, and CNAME queries.
            true => matches!(
                query.qtype,
                QueryType::A | QueryType::Aaaa | QueryType::Any | QueryType::Other(TYPE_CNAME)
            )
            .then_some(Family::Name),
            false => Family::of(query.qtype),
        };
        let Some(family) = family else {
            // Other types at a GSLB name: its static records (TXT, MX...).
            return match zone {
                Some(z) => answer_static(
                    snap,
                    query,
                    z,
                    &mut client,
                    verdict,
                    cursor,
                    sessions,
                    out,
                    trace,
                ),
                None => {
                    trace.record(TraceEvent::NoData);
                    plain(Outcome::NoData { zone }, Reason::NoData)
                }
            };
        };
        return answer_gslb(
            snap,
            domain,
            family,
            &mut client,
            verdict,
            zone,
            cursor,
            sessions,
            out,
            trace,
        );
    }

    match zone {
        Some(z) => answer_static(
            snap,
            query,
            z,
            &mut client,
            verdict,
            cursor,
            sessions,
            out,
            trace,
        ),
        None => {
            trace.record(TraceEvent::NotAuthoritative);
            plain(Outcome::Refused, Reason::NotAuthoritative)
        }
    }
}

/// A GSLB domain's answer: its vserver's choice, else its backup IP, else
/// the last resort; NODATA (SOA of `zone`) when nothing answers.
#[allow(clippy::too_many_arguments)]
fn answer_gslb<T: Tracer, S: Sessions>(
    snap: &Snapshot,
    domain: DomainId,
    family: Family,
    client: &mut Client,
    verdict: Verdict,
    zone: Option<ZoneId>,
    cursor: &mut Cursor,
    sessions: &S,
    out: &mut AnswerBuf,
    trace: &mut T,
) -> Decision {
    let model = snap.model();
    let d = model.domain(domain);
    trace.record(TraceEvent::Domain {
        domain,
        vserver: d.vserver,
    });
    out.domain = Some(domain);
    out.vserver = Some(d.vserver);
    let preferred = preferred_of(snap, verdict);
    let mut decision = answer_domain(
        snap,
        family,
        d.vserver,
        client,
        preferred,
        Work {
            cursor,
            sessions,
            out,
            trace,
        },
    );
    if decision.reason == Reason::NoRttDropped {
        return decision;
    }
    if out.addrs.is_empty() && decision.reason != Reason::NoAddressOfFamily {
        if let Some(ip) = d
            .backup_ip
            .filter(|ip| family != Family::Name && family.matches(*ip))
        {
            trace.record(TraceEvent::BackupIp { addr: ip });
            out.addrs.push(ip);
            decision.reason = Reason::BackupIp;
        } else if let Some(last) = last_resort(snap, family, d.vserver, cursor, out, trace) {
            decision.reason = last;
        }
    }
    decision.outcome = match out.cname_service {
        Some(service) => Outcome::GslbCname {
            domain,
            ttl: d.ttl,
            service,
        },
        None if out.addrs.is_empty() => Outcome::NoData { zone },
        None => Outcome::Addresses { domain, ttl: d.ttl },
    };
    decision
}

/// A name of zone `zone` that is not answered as a GSLB domain of this
/// type: a referral below a delegation, its static records, NODATA for a
/// name that exists (owner or empty non-terminal), NXDOMAIN otherwise. A
/// CNAME is followed through the zones we serve, to static records and to
/// GSLB domains (answered by the GSLB decision), at most
/// [`MAX_CNAME_CHAIN`] links; the CNAMEs are in `out.chain`.
#[allow(clippy::too_many_arguments)]
fn answer_static<T: Tracer, S: Sessions>(
    snap: &Snapshot,
    query: &Query<'_>,
    zone: ZoneId,
    client: &mut Client,
    verdict: Verdict,
    cursor: &mut Cursor,
    sessions: &S,
    out: &mut AnswerBuf,
    trace: &mut T,
) -> Decision {
    let model = snap.model();
    let table = snap.records();
    let qtype = query.qtype.code();
    let mut name = query.name;
    let mut zone = zone;
    loop {
        let apex = model.zone(zone).apex.as_str();
        if let Some(cut) = table.find_cut(name, apex) {
            if out.chain.is_empty() {
                trace.record(TraceEvent::Referral {
                    record: table.node(cut).start,
                });
                return plain(Outcome::Referral { cut }, Reason::Referral);
            }
            // A CNAME into a delegated child: the resolver asks the child.
            return chained(ChainEnd::Cnames);
        }
        let Some(node_id) = table.find(name) else {
            if name == apex {
                if !out.chain.is_empty() {
                    return chained(ChainEnd::NoData { zone });
                }
                if qtype == TYPE_ANY {
                    // RFC 8482: one RRset is a full answer to ANY.
                    trace.record(TraceEvent::ZoneApex { zone });
                    return plain(Outcome::ZoneSoa { zone }, Reason::Zone);
                }
                trace.record(TraceEvent::NoData);
                return plain(Outcome::NoData { zone: Some(zone) }, Reason::NoData);
            }
            trace.record(TraceEvent::NxDomain { zone });
            if out.chain.is_empty() {
                return plain(Outcome::NxDomain { zone }, Reason::NxDomain);
            }
            return chained(ChainEnd::NxDomain { zone });
        };
        let node = table.node(node_id);
        let records = table.records(model, node_id);
        if node.cname && qtype != TYPE_CNAME && qtype != TYPE_ANY {
            let index = node.start;
            let Some(RecordData::Cname(target)) = records.first().map(|r| &r.data) else {
                return chained(ChainEnd::Cnames);
            };
            trace.record(TraceEvent::Cname { record: index });
            if out.chain.contains(&index) || out.chain.len() >= MAX_CNAME_CHAIN {
                return chained(ChainEnd::Cnames);
            }
            out.chain.push(index);
            name = target.as_str();
            let (target_domain, target_zone) = snap.find_domain_and_zone(name);
            if let Some(domain) = target_domain
                && let Some(family) = Family::of(query.qtype)
            {
                *client = client_of(snap, query, Some(domain));
                let mut decision = answer_gslb(
                    snap,
                    domain,
                    family,
                    client,
                    verdict,
                    target_zone,
                    cursor,
                    sessions,
                    out,
                    trace,
                );
                decision.outcome = match decision.outcome {
                    Outcome::Addresses { domain, ttl } => Outcome::Static {
                        end: ChainEnd::Addresses { domain, ttl },
                    },
                    Outcome::NoData { zone: Some(zone) } => Outcome::Static {
                        end: ChainEnd::NoData { zone },
                    },
                    Outcome::NoData { zone: None } => Outcome::Static {
                        end: ChainEnd::Cnames,
                    },
                    other => other,
                };
                return decision;
            }
            match target_zone {
                Some(z) if snap.find_dc_record(name).is_none() => {
                    zone = z;
                    continue;
                }
                // Outside our zones (or a datacenter-mode name, which the
                // resolver asks for next): the CNAMEs alone.
                _ => return chained(ChainEnd::Cnames),
            }
        }
        // ANY: the name's own records; a DS at the apex of a zone of ours
        // is its parent's (asked for by type, above).
        let count = if qtype == TYPE_ANY {
            records.iter().filter(|r| r.data.rtype() != TYPE_DS).count()
        } else {
            records.iter().filter(|r| r.data.rtype() == qtype).count()
        };
        if count == 0 && qtype == TYPE_ANY && name == apex && out.chain.is_empty() {
            // RFC 8482: one RRset is a full answer to ANY.
            trace.record(TraceEvent::ZoneApex { zone });
            return plain(Outcome::ZoneSoa { zone }, Reason::Zone);
        }
        if count == 0 {
            trace.record(TraceEvent::NoData);
            if out.chain.is_empty() {
                return plain(Outcome::NoData { zone: Some(zone) }, Reason::NoData);
            }
            return chained(ChainEnd::NoData { zone });
        }
        trace.record(TraceEvent::StaticRecords {
            rtype: qtype,
            count: count as u32,
        });
        let end = ChainEnd::Records {
            node: node_id,
            rtype: qtype,
        };
        return plain(Outcome::Static { end }, Reason::Static);
    }
}

/// A DS query for a zone cut, answered from the parent side: the DS
/// records there, or NODATA with the parent's SOA. `zone` is the closest
/// zone of `name`: the child when it is one of ours (then the parent is
/// the closest zone above it), else the zone that delegates `name`.
/// `None` when `name` is no cut of a zone served here.
fn ds_at_cut<T: Tracer>(
    snap: &Snapshot,
    name: &str,
    zone: ZoneId,
    trace: &mut T,
) -> Option<Decision> {
    let model = snap.model();
    let table = snap.records();
    let node = table.find(name);
    let parent = if model.zone(zone).apex == name {
        snap.find_zone(&name[name.find('.')? + 1..])?
    } else if node.is_some_and(|n| table.node(n).cut) {
        zone
    } else {
        return None;
    };
    let count = node.map_or(0, |n| {
        table
            .records(model, n)
            .iter()
            .filter(|r| r.data.rtype() == TYPE_DS)
            .count()
    });
    match node {
        Some(node) if count > 0 => {
            trace.record(TraceEvent::StaticRecords {
                rtype: TYPE_DS,
                count: count as u32,
            });
            let end = ChainEnd::Records {
                node,
                rtype: TYPE_DS,
            };
            Some(plain(Outcome::Static { end }, Reason::Static))
        }
        _ => {
            trace.record(TraceEvent::NoData);
            Some(plain(
                Outcome::NoData { zone: Some(parent) },
                Reason::NoData,
            ))
        }
    }
}

/// The end of a CNAME chain whose links are in the answer buffer.
fn chained(end: ChainEnd) -> Decision {
    plain(Outcome::Static { end }, Reason::Static)
}

/// The client address: the ECS address where the domain's vserver enables
/// ECS and the query carries one, else the LDNS source address.
fn client_of(snap: &Snapshot, query: &Query<'_>, domain: Option<DomainId>) -> Client {
    let ecs_enabled = domain
        .map(|d| snap.model().vserver(snap.model().domain(d).vserver).ecs)
        .unwrap_or(false);
    match query.ecs {
        Some(ecs) if ecs_enabled => Client::new(ecs.addr, true, ecs.source_prefix, query.source),
        _ => Client::new(query.source, false, 0, query.source),
    }
}

/// The preferred locations a policy's action chose, if it chose some.
fn preferred_of(
    snap: &Snapshot,
    verdict: Verdict,
) -> Option<(crate::policy::DnsActionId, &[Location])> {
    match verdict {
        Verdict::Prefer(action) => match &snap.model().dns_actions[action].kind {
            DnsActionKind::PreferredLocations(list) => Some((action, list.as_slice())),
            _ => None,
        },
        _ => None,
    }
}

/// What the global DNS policies decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// No policy with an effect matched.
    Continue,
    /// Use this GslbPrefLoc action's preferred locations.
    Prefer(crate::policy::DnsActionId),
    Drop,
}

/// Evaluates the policies bound at the global request bind point, in
/// priority order. A matching policy applies its action; `END` stops the
/// walk, `NEXT` goes on to the next policy. The first preferred-location
/// action that matches is the one used; a DROP ends everything.
fn run_policies<T: Tracer>(
    snap: &Snapshot,
    query: &Query<'_>,
    client: &mut Client,
    trace: &mut T,
) -> Verdict {
    let model = snap.model();
    if model.dns_global_bindings.is_empty() {
        return Verdict::Continue;
    }
    if T::ENABLED && snap.policies_need_location() {
        trace.record(TraceEvent::ClientLocation {
            addr: client.addr,
            place: client.place(snap),
        });
    }
    let facts = RequestFacts {
        client: client.addr,
        // Looked up (once) only when a rule reaches MATCHES_LOCATION.
        client_location: None,
        qname: query.name,
        qtype: query.qtype,
    };
    let mut matches_location = |pattern: &Location| {
        client
            .place(snap)
            .is_some_and(|p| pattern.matches_perfectly(&model.locations.place(p).location))
    };
    let mut verdict = Verdict::Continue;
    for binding in &model.dns_global_bindings {
        let policy = &model.dns_policies[binding.policy];
        let matched = policy.rule.eval_with(&facts, &mut matches_location);
        trace.record(TraceEvent::Policy {
            policy: binding.policy,
            matched,
        });
        if !matched {
            continue;
        }
        match model.dns_actions[policy.action].kind {
            DnsActionKind::Drop => return Verdict::Drop,
            DnsActionKind::PreferredLocations(_) if verdict == Verdict::Continue => {
                verdict = Verdict::Prefer(policy.action);
            }
            _ => {}
        }
        if binding.goto == Goto::End {
            break;
        }
    }
    verdict
}

fn plain(outcome: Outcome, reason: Reason) -> Decision {
    Decision {
        outcome,
        reason,
        ecs_scope: 0,
        stick: None,
        ldns: None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    V4,
    V6,
    /// A CNAME-based vserver's answer: any service, whatever its address.
    Name,
}

impl Family {
    /// The family a query type asks a GSLB domain for (ANY: IPv4).
    fn of(qtype: QueryType) -> Option<Family> {
        match qtype {
            QueryType::A | QueryType::Any => Some(Family::V4),
            QueryType::Aaaa => Some(Family::V6),
            _ => None,
        }
    }

    fn matches(self, ip: IpAddr) -> bool {
        matches!(
            (self, ip),
            (Family::V4, IpAddr::V4(_)) | (Family::V6, IpAddr::V6(_)) | (Family::Name, _)
        )
    }
}

/// Chooses among a vserver's services, following its backup vservers when
/// none is UP. Leaves `out` empty when nothing UP can answer.
fn answer_domain<T: Tracer, S: Sessions>(
    snap: &Snapshot,
    family: Family,
    first: VServerId,
    client: &mut Client,
    preferred: Option<(crate::policy::DnsActionId, &[Location])>,
    w: Work<'_, S, T>,
) -> Decision {
    let model = snap.model();
    let mut vs_id = first;
    let mut any_of_family = false;
    let admin = snap.admin();
    for depth in 0..=MAX_BACKUP_DEPTH {
        let vs = model.vserver(vs_id);
        let vs_disabled = admin.vserver_disabled(vs_id);
        let eligible = Eligible::new(vs.bindings.len(), |i: usize| {
            let s = vs.bindings[i].service;
            !vs_disabled && family.matches(model.service(s).answer_ip()) && snap.answers(s)
        });
        if vs_disabled {
            w.trace
                .record(TraceEvent::VServerDisabled { vserver: vs_id });
        } else if admin.any_draining()
            && let Some(service) = drain_persisted(snap, family, vs_id, client, &w)
        {
            // The client's entry points at a draining service: it keeps it
            // until the entry expires. The entry is not refreshed (no
            // `stick`), so a drain ends within the persistence timeout.
            w.trace.record(TraceEvent::PersistedDraining { service });
            w.out.push_service(model, service);
            return Decision {
                outcome: Outcome::NoData { zone: None },
                reason: Reason::Persistence,
                ecs_scope: client.scope,
                stick: None,
                ldns: None,
            };
        }
        if T::ENABLED && !vs_disabled {
            for b in &vs.bindings {
                let ip = model.service(b.service).answer_ip();
                let event = if !family.matches(ip) {
                    TraceEvent::Skipped {
                        service: b.service,
                        why: SkipWhy::WrongFamily,
                    }
                } else if admin.service(b.service) == AdminState::Disabled {
                    TraceEvent::Skipped {
                        service: b.service,
                        why: SkipWhy::Disabled,
                    }
                } else if admin.service(b.service) == AdminState::Draining {
                    TraceEvent::Skipped {
                        service: b.service,
                        why: SkipWhy::Draining,
                    }
                } else if !snap.is_up(b.service) {
                    TraceEvent::Skipped {
                        service: b.service,
                        why: SkipWhy::Down,
                    }
                } else {
                    TraceEvent::Candidate {
                        service: b.service,
                        weight: b.weight,
                    }
                };
                w.trace.record(event);
            }
        }
        if eligible.any(vs.bindings.len()) {
            w.out.vserver = Some(vs_id);
            let mut decision = choose(snap, vs_id, client, preferred, &eligible, w);
            if depth > 0 && matches!(decision.reason, Reason::Method(_) | Reason::Fallback { .. }) {
                decision.reason = Reason::BackupVServer;
            }
            return decision;
        }
        any_of_family |= vs
            .bindings
            .iter()
            .any(|b| family.matches(model.service(b.service).answer_ip()));
        if !vs_disabled {
            w.trace.record(TraceEvent::AllDown { vserver: vs_id });
        }
        match vs.backup_vserver {
            Some(next) if depth < MAX_BACKUP_DEPTH && model.vservers.get(next).is_some() => {
                w.trace.record(TraceEvent::BackupVServer {
                    from: vs_id,
                    to: next,
                });
                vs_id = next;
            }
            _ => break,
        }
    }
    if !any_of_family {
        w.trace.record(TraceEvent::NoAddressOfFamily);
        return plain(Outcome::NoData { zone: None }, Reason::NoAddressOfFamily);
    }
    plain(Outcome::NoData { zone: None }, Reason::LastResort)
}

/// The answer for a client whose persistence entry on `vs_id` points at a
/// draining service that is UP and of the queried family: drained services
/// take no new clients but keep the ones they have until their entries
/// expire. `None` when there is no such entry.
fn drain_persisted<S: Sessions, T: Tracer>(
    snap: &Snapshot,
    family: Family,
    vs_id: VServerId,
    client: &Client,
    w: &Work<'_, S, T>,
) -> Option<ServiceId> {
    let model = snap.model();
    let vs = model.vserver(vs_id);
    let p = vs.persistence?;
    let key = crate::select::mask_ip(client.addr, p.v4_mask, p.v6_mask);
    let service = w.sessions.lookup(vs_id, key)?;
    let kept = vs.bindings.iter().any(|b| b.service == service)
        && snap.admin().service(service) == AdminState::Draining
        && snap.is_up(service)
        && family.matches(model.service(service).answer_ip());
    kept.then_some(service)
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
    let admin = snap.admin();
    if admin.vserver_disabled(vs_id) {
        // The operator took the vserver out: no last resort from it.
        return Some(Reason::AdminDisabled);
    }
    // Regardless of health, but never what the operator took out.
    let pick = weighted_round_robin(&vs.bindings, snap.turn(vs_id, cursor.peek), |i| {
        let s = vs.bindings[i].service;
        family.matches(model.service(s).answer_ip()) && admin.service(s) == AdminState::Enabled
    })?;
    let service = vs.bindings[pick].service;
    trace.record(TraceEvent::LastResort { service });
    out.push_service(model, service);
    Some(Reason::LastResort)
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
            Reason::PreferredLocation { pass } => match pass {
                MatchPass::Perfect => "a preferred location matched perfectly".to_string(),
                MatchPass::Partial => "a preferred location matched partially".to_string(),
                MatchPass::Remaining => {
                    "no preferred location matched an UP service; balanced over the rest"
                        .to_string()
                }
            },
            Reason::Dropped => "a DNS policy's DROP action matched: no response".to_string(),
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
            Reason::ChildSite => {
                "this node is a child site; only parent sites answer DNS (REFUSED)".to_string()
            }
            Reason::NoRttDropped => {
                "no RTT to this LDNS yet and -dropLdnsReq is ENABLED: no response".to_string()
            }
            Reason::Static => "static records of the zone".to_string(),
            Reason::AdminDisabled => {
                "the vserver is disabled by the operator and no backup answers (NODATA)"
                    .to_string()
            }
            Reason::Referral => "the name is in a delegated child zone: referral".to_string(),
            Reason::Datacenter => {
                "datacenter mode: the healthy addresses of the first ranked datacenters"
                    .to_string()
            }
            Reason::FailSafe => {
                "datacenter mode: no healthy address in any datacenter; the fail-safe records"
                    .to_string()
            }
            Reason::NoHealthyRecords => {
                "datacenter mode: no healthy address in any datacenter and no fail-safe records (NODATA)"
                    .to_string()
            }
        }
    }
}
