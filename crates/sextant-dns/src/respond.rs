//! One query in, one response out: parse → snapshot load → decide → build.
//!
//! This is the hot path shared by the UDP and TCP loops. It takes no lock
//! (except the persistence table, and only for vservers with persistence),
//! awaits nothing and allocates nothing once the worker's buffers have
//! grown to their working size.

use std::net::IpAddr;

use sextant_core::records::{RecordData, StaticRecord, TYPE_ANY, TYPE_CNAME, TYPE_DS, TYPE_NS};
use sextant_core::{ChainEnd, LdnsUse, NoTrace, Outcome, Query, Snapshot, ZoneId, decide};

use std::sync::Arc;

use crate::cookie::{self, CookieStatus};
use crate::dnssec::{DnssecWorker, Signing};
use crate::querylog::QueryLogEntry;
use crate::rrl::Verdict;
use crate::stats::Counter;
use crate::wire::Rcode;
use crate::wire::build::{BadName, OptOut, ResponseWriter, Section};
use crate::wire::parse::{
    Edns, FLAG_AA, FLAG_CD, FLAG_QR, FLAG_RD, HEADER_LEN, Header, ParseError, ParseErrorKind,
    ParsedQuery, parse_query,
};
use crate::{DnsShared, Transport, Worker};
use sextant_dnssec::TYPE_NSEC;

/// The largest DNS message (TCP's two-octet length prefix).
pub const MAX_MESSAGE: usize = 65535;
/// UDP size without EDNS (RFC 1035 §4.2.1), and the floor with it.
const CLASSIC_UDP: usize = 512;
/// We never send UDP responses larger than this, whatever the client offers:
/// the DNS Flag Day 2020 size, which fits the common 1280-octet IPv6 MTU
/// with its headers, so no answer is fragmented (fragments are dropped by
/// many middleboxes and make off-path spoofing of the tail possible).
/// Larger answers get TC=1 and the client retries over TCP.
pub const MAX_UDP: usize = 1232;

const CLASS_IN: u16 = 1;
const CLASS_ANY: u16 = 255;
const TYPE_IXFR: u16 = 251;
const TYPE_AXFR: u16 = 252;

/// Parses `request`, decides with the current snapshot and writes the
/// response into `out` (cleared first).
///
/// Returns false when the packet must be dropped: shorter than a header, or
/// itself a response (QR=1). `out` is then empty.
pub fn respond(
    shared: &DnsShared,
    worker: &mut Worker,
    request: &[u8],
    source: IpAddr,
    transport: Transport,
    out: &mut Vec<u8>,
) -> bool {
    let stats = &shared.stats;
    let shard = worker.shard;
    stats.incr(
        shard,
        match transport {
            Transport::Udp => Counter::QueriesUdp,
            Transport::Tcp => Counter::QueriesTcp,
        },
    );
    let (rcode, truncated) = match parse_query(request, &mut worker.name_buf) {
        Ok(q) => {
            worker.counters.query_type(&shared.answers, q.qtype);
            let snapshot = shared.snapshot.load();
            let settings = &snapshot.model().dns;
            let mut extras = Extras::default();
            let mut cookie_valid = false;
            if let Some(e) = q.edns.as_ref() {
                if e.nsid {
                    extras.nsid = settings.nsid.as_deref();
                }
                if settings.cookies.is_some()
                    && let Some(c) = e.cookie.as_ref()
                {
                    let now = crate::wall_secs();
                    let secrets = shared.cookie_secrets.load();
                    match cookie::check(&secrets, c, source, now) {
                        CookieStatus::Valid => {
                            cookie_valid = true;
                            stats.incr(shard, Counter::CookieValid);
                        }
                        CookieStatus::Invalid => stats.incr(shard, Counter::CookieInvalid),
                        CookieStatus::ClientOnly => {}
                    }
                    // Always a fresh cookie (RFC 9018 §4.3 allows it; it
                    // also renews one that is about to expire).
                    extras.cookie = Some(cookie::response_cookie(&secrets, &c.client, source, now));
                }
            }
            // One branch when rate limiting is off; TCP and valid cookies
            // are never limited (the source address is then proven).
            if settings.rrl.is_some() && transport == Transport::Udp && !cookie_valid {
                match rate_limit(shared, &mut worker.limited, shard, source) {
                    Verdict::Pass => {}
                    Verdict::Drop => {
                        out.clear();
                        return false;
                    }
                    Verdict::Slip => {
                        let opt = q.edns.map(|e| extras.opt(&e));
                        let mut w = ResponseWriter::start(
                            out,
                            q.id(),
                            response_flags(&q.header, false),
                            q.question,
                            CLASSIC_UDP,
                            0,
                        );
                        w.truncate();
                        w.finish(Rcode::NoError, opt);
                        return true;
                    }
                }
            }
            let mut ctx = Answering {
                shared,
                snapshot: &snapshot,
                worker_cursor: &mut worker.cursor,
                worker_answers: &mut worker.answers,
                worker_counters: &mut worker.counters,
                worker_dnssec: &mut worker.dnssec,
                reason: None,
            };
            let answered = ctx.answer(&q, source, transport, extras, out);
            let reason = ctx.reason;
            if !snapshot.model().dnssec.is_empty() {
                worker.dnssec.count(stats, shard);
            }
            if let Some(log) = shared.query_log.get()
                && log.sampled(&mut worker.log_turn)
            {
                let answers = &worker.answers;
                log.offer(QueryLogEntry::new(
                    source,
                    q.client_subnet().map(|e| (e.addr, e.source_prefix)),
                    q.qname,
                    q.qtype,
                    answered.map(|(rcode, _)| rcode),
                    if reason.is_some() {
                        &answers.addrs
                    } else {
                        &[]
                    },
                    answers.vserver.filter(|_| reason.is_some()),
                    Arc::as_ptr(snapshot.model_arc()) as usize,
                    reason,
                ));
            }
            match answered {
                Some(answered) => answered,
                None => {
                    // A DNS policy's DROP action: no response at all.
                    out.clear();
                    stats.incr(shard, Counter::Dropped);
                    return false;
                }
            }
        }
        Err(e) if e.is_drop() => {
            out.clear();
            stats.incr(shard, Counter::Dropped);
            return false;
        }
        Err(e) => {
            // Error responses count against the limit too (a flood of
            // malformed queries reflects as well as a valid one), but are
            // never slipped: there is no answer to retry for.
            if transport == Transport::Udp
                && shared.snapshot.load().model().dns.rrl.is_some()
                && rate_limit(shared, &mut worker.limited, shard, source) != Verdict::Pass
            {
                out.clear();
                return false;
            }
            error_response(&e, request, out)
        }
    };
    stats.incr(
        shard,
        match rcode {
            Rcode::NoError => Counter::NoError,
            Rcode::NxDomain => Counter::NxDomain,
            Rcode::Refused => Counter::Refused,
            Rcode::FormErr => Counter::FormErr,
            Rcode::ServFail => Counter::ServFail,
            Rcode::NotImp => Counter::NotImp,
            Rcode::BadVers => Counter::BadVers,
        },
    );
    if truncated {
        stats.incr(shard, Counter::Truncated);
    }
    true
}

/// What a response's OPT carries besides DO and Client Subnet.
#[derive(Debug, Clone, Copy, Default)]
struct Extras<'a> {
    nsid: Option<&'a [u8]>,
    cookie: Option<[u8; 24]>,
}

impl<'a> Extras<'a> {
    fn opt(&self, e: &Edns) -> OptOut<'a> {
        OptOut {
            dnssec_ok: e.dnssec_ok,
            ecs: None,
            nsid: self.nsid,
            cookie: self.cookie,
        }
    }
}

/// Charges one UDP response to `source`, counting what is limited.
fn rate_limit(shared: &DnsShared, limited: &mut u64, shard: usize, source: IpAddr) -> Verdict {
    let guard = shared.rrl.load();
    let Some(limiter) = guard.as_deref() else {
        return Verdict::Pass;
    };
    let verdict = limiter.check(source, shared.now_us(), *limited);
    if verdict != Verdict::Pass {
        *limited += 1;
        shared.stats.incr(shard, Counter::RateLimited);
        if verdict == Verdict::Slip {
            shared.stats.incr(shard, Counter::Slipped);
            shared.stats.incr(shard, Counter::Truncated);
        }
    }
    verdict
}

/// The UDP response size a query allows (RFC 6891 §6.2.5).
pub fn udp_limit(edns: Option<&Edns>) -> usize {
    match edns {
        Some(e) => usize::from(e.udp_payload).clamp(CLASSIC_UDP, MAX_UDP),
        None => CLASSIC_UDP,
    }
}

/// Header flags of a response: QR, the request's opcode, RD and CD.
fn response_flags(request: &Header, authoritative: bool) -> u16 {
    let mut flags = FLAG_QR | (request.flags & (0x7800 | FLAG_RD | FLAG_CD));
    if authoritative {
        flags |= FLAG_AA;
    }
    flags
}

/// What answering a well-formed query borrows.
struct Answering<'a> {
    shared: &'a DnsShared,
    snapshot: &'a Snapshot,
    worker_cursor: &'a mut sextant_core::Cursor,
    worker_answers: &'a mut sextant_core::AnswerBuf,
    worker_counters: &'a mut crate::counters::WorkerCounters,
    worker_dnssec: &'a mut DnssecWorker,
    /// The decision's reason, once `decide` ran (for the query log).
    reason: Option<sextant_core::Reason>,
}

impl Answering<'_> {
    /// Returns the RCODE sent and whether the response was truncated, or
    /// `None` when a policy says to drop the query.
    fn answer(
        &mut self,
        q: &ParsedQuery<'_>,
        source: IpAddr,
        transport: Transport,
        extras: Extras<'_>,
        out: &mut Vec<u8>,
    ) -> Option<(Rcode, bool)> {
        let limit = match transport {
            Transport::Udp => udp_limit(q.edns.as_ref()),
            Transport::Tcp => MAX_MESSAGE,
        };
        let mut opt = q.edns.map(|e| OptOut {
            ecs: e.ecs.map(|ecs| (ecs, 0)),
            ..extras.opt(&e)
        });
        let refuse = |out: &mut Vec<u8>, opt| {
            let w = ResponseWriter::start(
                out,
                q.id(),
                response_flags(&q.header, false),
                q.question,
                limit,
                0,
            );
            Some((Rcode::Refused, w.finish(Rcode::Refused, opt)))
        };
        // CHAOS and the like are not ours; zone transfers are not offered.
        if !matches!(q.qclass, CLASS_IN | CLASS_ANY) || matches!(q.qtype, TYPE_AXFR | TYPE_IXFR) {
            return refuse(out, opt);
        }

        let query = Query {
            name: q.qname,
            qtype: q.query_type(),
            source,
            ecs: q.client_subnet(),
        };
        let decision = decide(
            self.snapshot,
            &query,
            self.worker_cursor,
            &self.shared.sessions,
            self.worker_answers,
            &mut NoTrace,
        );
        self.worker_counters.decision(
            &self.shared.answers,
            self.snapshot,
            &decision.reason,
            self.worker_answers,
        );
        self.reason = Some(decision.reason);
        match decision.ldns {
            Some(LdnsUse::Known(row)) => self.snapshot.rtt().mark_queried(row),
            Some(LdnsUse::Unknown(group)) => self.shared.ldns.offer(group),
            None => {}
        }
        let model = self.snapshot.model();
        if let Some(stick) = decision.stick {
            let persistence = model
                .vservers
                .get(stick.vserver)
                .and_then(|v| v.persistence);
            if let Some(p) = persistence {
                self.shared
                    .sessions
                    .record(stick.vserver, stick.key, stick.service, p.timeout);
            }
        }
        if let Some(o) = opt.as_mut() {
            o.ecs = o.ecs.map(|(ecs, _)| (ecs, decision.ecs_scope));
        }
        match decision.outcome {
            Outcome::Refused => return refuse(out, opt),
            Outcome::Drop => return None,
            _ => {}
        }
        let outcome = decision.outcome;
        let signed_zones = !model.dnssec.is_empty();
        if signed_zones {
            self.worker_dnssec.sync(self.snapshot);
        }
        let signing = signed_zones && q.edns.is_some_and(|e| e.dnssec_ok);

        let opt_len = opt.map(|o| o.len()).unwrap_or(0);
        // A referral is not an authoritative answer (RFC 1034 §4.3.2).
        let authoritative = !matches!(outcome, Outcome::Referral { .. });
        let mut w = ResponseWriter::start(
            out,
            q.id(),
            response_flags(&q.header, authoritative),
            q.question,
            limit,
            opt_len,
        );
        let now = if signed_zones {
            u64::from(crate::wall_secs())
        } else {
            0
        };
        match self.write_records(&mut w, q.qname, q.qtype, outcome, signing, now) {
            Ok(rcode) => {
                let truncated = w.finish(rcode, opt);
                Some((rcode, truncated))
            }
            Err(_) => {
                // A configured name that cannot be encoded: say so rather
                // than send a half-built answer (`w` is done with `out`).
                let w = ResponseWriter::start(
                    out,
                    q.id(),
                    response_flags(&q.header, false),
                    q.question,
                    limit,
                    0,
                );
                Some((Rcode::ServFail, w.finish(Rcode::ServFail, opt)))
            }
        }
    }

    fn write_records(
        &mut self,
        w: &mut ResponseWriter<'_>,
        qname: &str,
        qtype: u16,
        outcome: Outcome,
        signing: bool,
        now: u64,
    ) -> Result<Rcode, BadName> {
        let snapshot = self.snapshot;
        let model = snapshot.model();
        let answers = &*self.worker_answers;
        let mut sig = Signing {
            dnssec: &mut *self.worker_dnssec,
            snapshot,
            now,
            on: signing,
        };
        let zone = |id: ZoneId| model.zones.get(id).ok_or(BadName("unknown zone"));
        let record = |id: u32| {
            model
                .records
                .get(id as usize)
                .ok_or(BadName("unknown record"))
        };
        // RFC 2308 §3: the negative-caching TTL is the lesser of the two.
        // Signed, the SOA is signed and an NSEC made for the name proves
        // the negative answer (compact denial, RFC 9824: a name that does
        // not exist is then NOERROR with the NXNAME type).
        let negative = |w: &mut ResponseWriter<'_>,
                        sig: &mut Signing<'_>,
                        id: ZoneId,
                        name: &str,
                        nxdomain: bool|
         -> Result<Rcode, BadName> {
            let z = zone(id)?;
            let ttl = z.soa.ttl.min(z.soa.minimum);
            if qtype == TYPE_NSEC && name == qname && sig.on && sig.signed(id) {
                sig.nsec_answer(w, id, qname, nxdomain, ttl)?;
                return Ok(Rcode::NoError);
            }
            w.soa(Section::Authority, &z.apex, qname, ttl, &z.soa)?;
            let proved = sig.soa(w, id, &z.apex, qname, ttl, &z.soa)?;
            if proved {
                sig.deny(w, id, name, qname, qtype, nxdomain, ttl)?;
            }
            Ok(if nxdomain && !proved {
                Rcode::NxDomain
            } else {
                Rcode::NoError
            })
        };
        match outcome {
            Outcome::Addresses { ttl, .. } | Outcome::DcAddresses { ttl, .. } => {
                for addr in &answers.addrs {
                    w.address(Section::Answer, ttl, *addr);
                }
                sig.addresses(w, qname, qname, ttl, &answers.addrs)?;
                Ok(Rcode::NoError)
            }
            Outcome::GslbCname { ttl, service, .. } => {
                let target = model
                    .services
                    .get(service)
                    .and_then(|s| s.cname.as_deref())
                    .ok_or(BadName(
                        "a CNAME answer names a service without -cnameEntry",
                    ))?;
                w.cname(Section::Answer, qname, qname, ttl, target)?;
                sig.rrset(
                    w,
                    Section::Answer,
                    qname,
                    qname,
                    TYPE_CNAME,
                    ttl,
                    None,
                    |s| s.push_name(target),
                )?;
                Ok(Rcode::NoError)
            }
            Outcome::NoData { zone: Some(z) } => {
                if let Some(written) = sig.apex_keys(w, z, qname, qtype, &zone(z)?.apex)? {
                    return Ok(written);
                }
                negative(w, &mut sig, z, qname, false)
            }
            Outcome::NoData { zone: None } => Ok(Rcode::NoError),
            Outcome::NxDomain { zone: z } => negative(w, &mut sig, z, qname, true),
            Outcome::ZoneSoa { zone: z } => {
                let zn = zone(z)?;
                w.soa(Section::Answer, &zn.apex, qname, zn.soa.ttl, &zn.soa)?;
                sig.on = sig.on && sig.signed(z);
                if sig.on {
                    sig.soa_in(w, Section::Answer, z, &zn.apex, qname, zn.soa.ttl, &zn.soa)?;
                }
                Ok(Rcode::NoError)
            }
            Outcome::ZoneNs { zone: z } => {
                let zn = zone(z)?;
                for target in &zn.ns {
                    w.ns(Section::Answer, &zn.apex, qname, zn.ns_ttl, target)?;
                }
                if zn.ns.is_empty() {
                    return negative(w, &mut sig, z, qname, false);
                }
                sig.rrset(
                    w,
                    Section::Answer,
                    &zn.apex,
                    qname,
                    TYPE_NS,
                    zn.ns_ttl,
                    Some(z),
                    |s| zn.ns.iter().try_for_each(|t| s.push_name(t)),
                )?;
                for target in &zn.ns {
                    self_additional(snapshot, w, qname, target)?;
                }
                Ok(Rcode::NoError)
            }
            Outcome::Static { end } => {
                let mut owner = qname;
                for index in &answers.chain {
                    let rec = record(*index)?;
                    w.static_record(Section::Answer, qname, rec)?;
                    sig.rrset(
                        w,
                        Section::Answer,
                        &rec.name,
                        qname,
                        rec.data.rtype(),
                        rec.ttl,
                        None,
                        |s| s.push_record(&rec.data),
                    )?;
                    if let RecordData::Cname(target) = &rec.data {
                        owner = target;
                    }
                }
                match end {
                    ChainEnd::Records { node, rtype } => {
                        let records = snapshot.records().records(model, node);
                        // ANY leaves out a DS (at a zone apex, the parent's).
                        let wanted = |r: &&StaticRecord| {
                            let t = r.data.rtype();
                            t == rtype || (rtype == TYPE_ANY && t != TYPE_DS)
                        };
                        for rec in records.iter().filter(wanted) {
                            w.static_record(Section::Answer, qname, rec)?;
                        }
                        // One RRset per type (the records are sorted by type).
                        let mut rest = records;
                        while let Some(first) = rest.first() {
                            let t = first.data.rtype();
                            let n = rest.iter().take_while(|r| r.data.rtype() == t).count();
                            let (same, after) = rest.split_at(n);
                            rest = after;
                            if t != rtype && (rtype != TYPE_ANY || t == TYPE_DS) {
                                continue;
                            }
                            sig.rrset(
                                w,
                                Section::Answer,
                                &first.name,
                                qname,
                                t,
                                first.ttl,
                                None,
                                |s| same.iter().try_for_each(|r| s.push_record(&r.data)),
                            )?;
                        }
                        let mut done: Option<&str> = None;
                        for rec in records.iter().filter(wanted) {
                            if let Some(target) = rec.data.additional_target()
                                && done != Some(target)
                            {
                                self_additional(snapshot, w, qname, target)?;
                                done = Some(target);
                            }
                        }
                        Ok(Rcode::NoError)
                    }
                    ChainEnd::Addresses { ttl, .. } => {
                        for addr in &answers.addrs {
                            w.address_of(Section::Answer, owner, qname, ttl, *addr)?;
                        }
                        sig.addresses(w, owner, qname, ttl, &answers.addrs)?;
                        Ok(Rcode::NoError)
                    }
                    ChainEnd::NoData { zone: z } => negative(w, &mut sig, z, owner, false),
                    ChainEnd::NxDomain { zone: z } => negative(w, &mut sig, z, owner, true),
                    ChainEnd::Cnames => Ok(Rcode::NoError),
                }
            }
            Outcome::Referral { cut } => {
                let table = snapshot.records();
                let ns = table.records(model, cut);
                let child = ns.first().map(|r| r.name.as_str()).unwrap_or("");
                // The NS records (a DS at the cut goes with its signature,
                // below, or not at all when unsigned).
                for rec in ns.iter().filter(|r| r.data.rtype() == TYPE_NS) {
                    w.static_record(Section::Authority, qname, rec)?;
                }
                // Signed, the referral carries the child's DS records with
                // their signature (a secure delegation), or proves it has
                // none (insecure): the cut's NSEC lists NS only.
                let ds = ns.iter().filter(|r| r.data.rtype() == TYPE_DS);
                if let Some(z) = snapshot.find_zone(child)
                    && sig.on
                    && sig.signed(z)
                    && let Some(first) = ds.clone().next()
                {
                    for rec in ds.clone() {
                        w.static_record(Section::Authority, qname, rec)?;
                    }
                    sig.rrset(
                        w,
                        Section::Authority,
                        child,
                        qname,
                        TYPE_DS,
                        first.ttl,
                        Some(z),
                        |s| ds.clone().try_for_each(|r| s.push_record(&r.data)),
                    )?;
                } else if let Some(z) = snapshot.find_zone(child)
                    && sig.on
                    && sig.signed(z)
                {
                    let zn = zone(z)?;
                    sig.deny(
                        w,
                        z,
                        child,
                        qname,
                        sextant_dnssec::TYPE_DS,
                        false,
                        zn.soa.ttl.min(zn.soa.minimum),
                    )?;
                }
                for rec in ns {
                    let Some(target) = rec.data.additional_target() else {
                        continue;
                    };
                    // Glue: addresses below the cut, or in a zone we serve.
                    let below = is_at_or_below(target, child);
                    if !below && snapshot.find_zone(target).is_none() {
                        continue;
                    }
                    for a in table.records_of(model, target) {
                        let addr = match a.data {
                            RecordData::A(v4) => IpAddr::V4(v4),
                            RecordData::Aaaa(v6) => IpAddr::V6(v6),
                            _ => continue,
                        };
                        w.glue(&a.name, qname, a.ttl, addr)?;
                    }
                }
                Ok(Rcode::NoError)
            }
            // Both are answered before any record is written.
            Outcome::Refused | Outcome::Drop => Ok(Rcode::Refused),
        }
    }
}

/// The static A and AAAA records of `target` in the additional section
/// (names in our zones only: the table holds nothing else). GSLB domains
/// are not expanded here: their answer depends on the client and on
/// health, and the resolver asks for it. Not signed: a validator asks for
/// what it uses.
fn self_additional(
    snapshot: &Snapshot,
    w: &mut ResponseWriter<'_>,
    qname: &str,
    target: &str,
) -> Result<(), BadName> {
    let model = snapshot.model();
    for rec in snapshot.records().records_of(model, target) {
        if matches!(rec.data, RecordData::A(_) | RecordData::Aaaa(_)) {
            w.static_record(Section::Additional, qname, rec)?;
        }
    }
    Ok(())
}

/// Whether `name` is `parent` or a name below it (both lower case).
fn is_at_or_below(name: &str, parent: &str) -> bool {
    name == parent
        || (name.len() > parent.len()
            && name.ends_with(parent)
            && name.as_bytes()[name.len() - parent.len() - 1] == b'.')
}

/// FORMERR, NOTIMP or BADVERS: ID, opcode, RD and, when it parsed, the
/// question echoed; OPT included when the query had one (RFC 6891 §7).
fn error_response(e: &ParseError, request: &[u8], out: &mut Vec<u8>) -> (Rcode, bool) {
    let rcode = match e.kind {
        ParseErrorKind::NotImplemented(_) => Rcode::NotImp,
        ParseErrorKind::BadVersion(_) => Rcode::BadVers,
        _ => Rcode::FormErr,
    };
    let question = request
        .get(HEADER_LEN..HEADER_LEN + e.question_len)
        .unwrap_or(&[]);
    let opt = e.edns.map(|edns| OptOut {
        dnssec_ok: edns.dnssec_ok,
        ..OptOut::default()
    });
    let w = ResponseWriter::start(
        out,
        e.header.id,
        response_flags(&e.header, false),
        question,
        MAX_MESSAGE,
        0,
    );
    (rcode, w.finish(rcode, opt))
}
