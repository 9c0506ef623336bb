//! Choosing among the UP services of one vserver: persistence, preferred
//! locations, the selection method and multi-IP response.
//!
//! Every way of choosing comes down to a [`Plan`]: which services are in
//! the running (a [`Set`]) and how one of them is picked (a [`Pick`]). One
//! common tail then answers one pick, or the whole set under multi-IP
//! response, and records persistence.

use std::net::IpAddr;

use crate::decide::{AnswerBuf, Cursor, Decision, LdnsUse, Outcome, Reason, Sessions, Stick};
use crate::load::LoadKind;
use crate::location::{Coordinates, LocationCode};
use crate::location_db::PlaceId;
use crate::model::{Binding, LbMethod, VServer, VServerId};
use crate::policy::DnsActionId;
use crate::select::{mask_ip, source_ip_hash, weighted_round_robin};
use crate::snapshot::Snapshot;
use crate::trace::{FallbackWhy, MatchPass, OutWhy, TraceEvent, Tracer};

/// Services within this many kilometres of the nearest count as equally near.
const SAME_DISTANCE_KM: f64 = 1.0;

/// The client as the decision sees it, with its location looked up at most once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Client {
    pub addr: IpAddr,
    pub from_ecs: bool,
    /// The ECS source prefix when the address came from ECS, else 0.
    pub scope: u8,
    /// The LDNS: the query's source address, never the ECS address (the
    /// RTT method measures the path to the resolver).
    pub ldns: IpAddr,
    place: Option<Option<PlaceId>>,
    /// The LDNS group and its row in the RTT table, once looked up.
    rtt_row: Option<(IpAddr, Option<u32>)>,
}

impl Client {
    pub fn new(addr: IpAddr, from_ecs: bool, scope: u8, ldns: IpAddr) -> Self {
        Client {
            addr,
            from_ecs,
            scope,
            ldns,
            place: None,
            rtt_row: None,
        }
    }

    /// The LDNS's row in the RTT table.
    pub fn rtt_row(&mut self, snap: &Snapshot) -> Option<u32> {
        let ldns = self.ldns;
        self.rtt_row
            .get_or_insert_with(|| {
                let group = snap.ldns_group(ldns);
                (group, snap.rtt().row(group))
            })
            .1
    }

    /// What the RTT method needed of the LDNS, for the DNS path (which
    /// marks a known row queried and hands an unknown group to the prober).
    pub fn ldns_use(&self) -> Option<LdnsUse> {
        self.rtt_row.map(|(group, row)| match row {
            Some(row) => LdnsUse::Known(row),
            None => LdnsUse::Unknown(group),
        })
    }

    /// The client's place in the location database.
    pub fn place(&mut self, snap: &Snapshot) -> Option<PlaceId> {
        *self
            .place
            .get_or_insert_with(|| snap.model().locations.lookup_id(self.addr))
    }

    /// The client's location as qualifier ids, if it was looked up and
    /// found.
    fn code<'s>(&self, snap: &'s Snapshot) -> Option<&'s LocationCode> {
        Some(snap.model().locations.code(self.place.flatten()?))
    }

    /// The client's coordinates, if it was looked up and has some.
    fn coordinates(&self, snap: &Snapshot) -> Option<Coordinates> {
        snap.model()
            .locations
            .place(self.place.flatten()?)
            .coordinates
    }
}

/// Which bindings of a vserver may answer (UP and of the queried family).
/// For a vserver of at most 64 bindings this is worked out once per
/// decision as a bit mask, so that round robin and the RTT method test
/// bits instead of reading service records per binding.
pub(crate) struct Eligible<F> {
    mask: Option<u64>,
    test: F,
}

impl<F: Fn(usize) -> bool> Eligible<F> {
    pub fn new(bindings: usize, test: F) -> Self {
        let mask = (bindings <= 64).then(|| {
            (0..bindings)
                .filter(|i| test(*i))
                .fold(0u64, |m, i| m | 1 << i)
        });
        Eligible { mask, test }
    }

    #[inline]
    pub fn has(&self, i: usize) -> bool {
        match self.mask {
            Some(m) => i < 64 && m >> i & 1 == 1,
            None => (self.test)(i),
        }
    }

    /// Whether any of the first `bindings` bindings may answer.
    pub fn any(&self, bindings: usize) -> bool {
        match self.mask {
            Some(m) => m != 0,
            None => (0..bindings).any(&self.test),
        }
    }

    /// The mask, when the vserver is small enough to have one.
    fn mask(&self) -> Option<u64> {
        self.mask
    }
}

/// The bits of `mask` for which `keep` holds.
#[inline]
fn filter_bits(mask: u64, keep: impl Fn(usize) -> bool) -> u64 {
    let (mut rest, mut bits) = (mask, 0u64);
    while rest != 0 {
        let i = rest.trailing_zeros() as usize;
        rest &= rest - 1;
        if keep(i) {
            bits |= 1 << i;
        }
    }
    bits
}

/// The mutable parts a choice works with.
pub(crate) struct Work<'a, S, T> {
    pub cursor: &'a mut Cursor,
    pub sessions: &'a S,
    pub out: &'a mut AnswerBuf,
    pub trace: &'a mut T,
}

/// Which bindings are in the running (always intersected with "UP and of
/// the queried family").
#[derive(Debug, Clone, Copy, PartialEq)]
enum Set {
    All,
    /// Perfect matches of preferred location `n`.
    Perfect(usize),
    /// Partial matches of preferred location `n`.
    Partial(usize),
    /// Services sharing exactly this many leading qualifiers with the client.
    Shared(usize),
    /// Services whose figure of `kind`, divided by their weight for the
    /// LEAST* methods, is `num / den` (the lowest; compared exactly).
    Least {
        kind: LoadKind,
        num: u64,
        den: u32,
    },
    /// Services whose site's RTT to the LDNS (row `row` of the table) is at
    /// most `max_us`: the smallest plus the vserver's tolerance.
    Rtt {
        vserver: VServerId,
        row: u32,
        max_us: u32,
    },
    /// The same for a vserver of at most 64 bindings, worked out once: bit
    /// `i` is binding `i`.
    RttBits {
        bits: u64,
    },
}

/// How one service of the set is picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pick {
    RoundRobin,
    SourceHash,
    /// The nearest by coordinates, round robin among equally near ones
    /// (round robin over the set when coordinates are missing).
    Nearest,
}

#[derive(Debug, Clone, Copy)]
struct Plan {
    set: Set,
    pick: Pick,
    method: LbMethod,
    /// The answer depends on the client address (so the ECS scope is the
    /// client's prefix).
    per_client: bool,
    /// The set's eligible bindings as a mask (bit `i`: binding `i`), when
    /// the plan already worked it out for a vserver of at most 64
    /// bindings; `None` when `contains` decides.
    bits: Option<u64>,
}

/// Picks among the UP services (`eligible`) of one vserver.
pub(crate) fn choose<S: Sessions, T: Tracer>(
    snap: &Snapshot,
    vs_id: VServerId,
    client: &mut Client,
    preferred: Option<(DnsActionId, &[crate::location::Location])>,
    eligible: &Eligible<impl Fn(usize) -> bool>,
    w: Work<'_, S, T>,
) -> Decision {
    let mut decision = choose_among(snap, vs_id, client, preferred, eligible, w);
    // An answer that did not reach the RTT method (a persistence entry, a
    // preferred location) on a vserver that uses it still keeps the LDNS
    // in use: its entry must not expire while its clients are persisted.
    let vs = snap.model().vserver(vs_id);
    if decision.ldns.is_none() && vs.uses_rtt() {
        client.rtt_row(snap);
    }
    decision.ldns = client.ldns_use();
    decision
}

fn choose_among<S: Sessions, T: Tracer>(
    snap: &Snapshot,
    vs_id: VServerId,
    client: &mut Client,
    preferred: Option<(DnsActionId, &[crate::location::Location])>,
    eligible: &Eligible<impl Fn(usize) -> bool>,
    w: Work<'_, S, T>,
) -> Decision {
    let model = snap.model();
    let vs = model.vserver(vs_id);
    w.trace.record(TraceEvent::Client {
        addr: client.addr,
        from_ecs: client.from_ecs,
    });
    let mut decision = Decision {
        outcome: Outcome::NoData { zone: None },
        reason: Reason::Method(vs.method),
        ecs_scope: 0,
        stick: None,
        ldns: None,
    };

    let persist_key = vs
        .persistence
        .map(|p| mask_ip(client.addr, p.v4_mask, p.v6_mask));
    if let Some(key) = persist_key {
        let kept = w.sessions.lookup(vs_id, key).and_then(|service| {
            vs.bindings
                .iter()
                .position(|b| b.service == service)
                .filter(|i| eligible.has(*i))
        });
        if let Some(i) = kept {
            let service = vs.bindings[i].service;
            w.trace.record(TraceEvent::Persisted { service });
            w.out.push_service(model, service);
            decision.reason = Reason::Persistence;
            decision.ecs_scope = client.scope;
            decision.stick = Some(Stick {
                vserver: vs_id,
                key,
                service,
            });
            return decision;
        }
    }

    let plan = match preferred {
        Some((action, _)) => {
            let (pass, set, bits) = preferred_pass(snap, vs, action, eligible, w.trace);
            decision.reason = Reason::PreferredLocation { pass };
            Plan {
                set,
                pick: Pick::RoundRobin,
                method: LbMethod::RoundRobin,
                per_client: true,
                bits,
            }
        }
        None => {
            let (plan, reason) = method_plan(snap, vs_id, client, eligible, w.trace);
            if reason == Reason::NoRttDropped {
                decision.outcome = Outcome::Drop;
                decision.reason = reason;
                return decision;
            }
            decision.reason = reason;
            plan
        }
    };
    let client_code = client.code(snap);
    let prefs = preferred.map_or(&[][..], |(action, _)| snap.preferred_codes(action));
    // Load figures pick one service; a multi-IP response still answers
    // every candidate.
    let plan = match plan.set {
        Set::Least { .. } if vs.multi_ip_response => Plan {
            set: Set::All,
            bits: None,
            ..plan
        },
        _ => plan,
    };
    // The set as one bit mask when the vserver has at most 64 bindings,
    // worked out once, so that the pick tests bits rather than calling
    // `contains` (location matches, load figures) per binding and turn.
    let set_mask = match (eligible.mask(), plan.set) {
        (Some(m), Set::All) => Some(m),
        (Some(m), Set::RttBits { bits, .. }) => Some(m & bits),
        (Some(m), _) if let Some(bits) = plan.bits => Some(m & bits),
        (Some(m), set) => Some(filter_bits(m, |i| {
            contains(snap, vs, set, prefs, client_code, i)
        })),
        _ => None,
    };
    let in_set = |i: usize| match set_mask {
        Some(m) => i < 64 && m >> i & 1 == 1,
        None => eligible.has(i) && contains(snap, vs, plan.set, prefs, client_code, i),
    };
    if plan.per_client {
        decision.ecs_scope = client.scope;
    }
    if T::ENABLED && plan.set != Set::All {
        let action = preferred.map_or(DnsActionId::new(0), |(a, _)| a);
        for (i, b) in vs.bindings.iter().enumerate() {
            if eligible.has(i) && !in_set(i) {
                let why = match plan.set {
                    Set::Perfect(p) => OutWhy::NotPerfect {
                        action,
                        index: p as u8,
                    },
                    Set::Partial(p) => OutWhy::NotPartial {
                        action,
                        index: p as u8,
                    },
                    Set::Shared(n) => OutWhy::FartherThan { shared: n as u8 },
                    Set::Least { kind, .. } => OutWhy::MoreLoaded { kind },
                    Set::Rtt { .. } | Set::RttBits { .. } => {
                        let site = model.service(b.service).site;
                        let row = client.ldns_use().and_then(|u| match u {
                            LdnsUse::Known(row) => Some(row),
                            LdnsUse::Unknown(_) => None,
                        });
                        if row.is_some_and(|row| snap.rtt().rtt_us(row, site).is_some()) {
                            OutWhy::FartherByRtt
                        } else {
                            OutWhy::NoRtt
                        }
                    }
                    Set::All => continue,
                };
                w.trace.record(TraceEvent::OutOfSet {
                    service: b.service,
                    why,
                });
            }
        }
    }

    if vs.multi_ip_response {
        for (i, b) in vs.bindings.iter().enumerate() {
            if in_set(i) {
                w.out.push_service(model, b.service);
            }
        }
        w.trace.record(TraceEvent::MultiIp {
            count: w.out.addrs.len() as u32,
        });
        if matches!(decision.reason, Reason::Method(_)) {
            decision.reason = Reason::MultiIp;
        }
        return decision;
    }

    let pick = match plan.pick {
        Pick::SourceHash => source_ip_hash(
            &vs.bindings,
            mask_ip(client.addr, vs.hash_v4_mask, vs.hash_v6_mask),
            in_set,
        ),
        Pick::Nearest => {
            let here = client.coordinates(snap);
            match here.and_then(|h| Some((h, nearest_distance(snap, vs, h, &in_set)?))) {
                Some((here, d)) => {
                    let near = |i: usize| {
                        in_set(i)
                            && distance(snap, vs, here, i)
                                .is_some_and(|x| x <= d + SAME_DISTANCE_KM)
                    };
                    match set_mask {
                        Some(m) => {
                            let bits = filter_bits(m, near);
                            round_robin(snap, vs_id, w.cursor, |i| i < 64 && bits >> i & 1 == 1)
                        }
                        None => round_robin(snap, vs_id, w.cursor, near),
                    }
                }
                None => round_robin(snap, vs_id, w.cursor, in_set),
            }
        }
        Pick::RoundRobin => round_robin(snap, vs_id, w.cursor, in_set),
    };
    if let Some(i) = pick {
        let service = vs.bindings[i].service;
        w.trace.record(TraceEvent::Picked {
            service,
            method: plan.method,
        });
        w.out.push_service(model, service);
        if let Some(key) = persist_key {
            decision.ecs_scope = client.scope;
            decision.stick = Some(Stick {
                vserver: vs_id,
                key,
                service,
            });
        }
    }
    decision
}

fn round_robin(
    snap: &Snapshot,
    vs_id: VServerId,
    cursor: &mut Cursor,
    in_set: impl Fn(usize) -> bool,
) -> Option<usize> {
    let vs = snap.model().vserver(vs_id);
    weighted_round_robin(&vs.bindings, snap.turn(vs_id, cursor.peeks()), in_set)
}

/// Whether binding `i` is in `set`.
fn contains(
    snap: &Snapshot,
    vs: &VServer,
    set: Set,
    prefs: &[LocationCode],
    client_code: Option<&LocationCode>,
    i: usize,
) -> bool {
    // Looked up only by the sets that need it: `All` is the common case on
    // the hot path.
    let code = || snap.service_code(vs.bindings[i].service);
    match set {
        Set::All => true,
        Set::Perfect(p) => code().is_some_and(|c| prefs[p].matches_perfectly(c)),
        Set::Partial(p) => code().is_some_and(|c| prefs[p].matches_partially(c)),
        Set::Shared(n) => match (code(), client_code) {
            (Some(c), Some(cl)) => cl.shared_prefix(c) == n,
            _ => false,
        },
        Set::Least { kind, num, den } => {
            let b = &vs.bindings[i];
            snap.metrics(b.service)
                .get(kind)
                .is_some_and(|f| per_weight_cmp(f, load_weight(kind, b), num, den).is_eq())
        }
        Set::Rtt {
            vserver,
            row,
            max_us,
        } => snap
            .rtt()
            .rtt_us(row, snap.binding_site(vserver, i))
            .is_some_and(|r| r <= max_us),
        Set::RttBits { bits, .. } => i < 64 && bits >> i & 1 == 1,
    }
}

/// The preferred-locations algorithm of seed 000 for a vserver: the first
/// preferred location (in priority order) with an UP perfect match; else
/// the first with an UP partial match; else every UP service.
fn preferred_pass<T: Tracer>(
    snap: &Snapshot,
    vs: &VServer,
    action: DnsActionId,
    eligible: &Eligible<impl Fn(usize) -> bool>,
    trace: &mut T,
) -> (MatchPass, Set, Option<u64>) {
    // The action's locations and the services' as qualifier ids: integer
    // compares, no string.
    let prefs = snap.preferred_codes(action);
    let matches = |pass: MatchPass, p: usize, i: usize| {
        snap.service_code(vs.bindings[i].service)
            .is_some_and(|c| match pass {
                MatchPass::Perfect => prefs[p].matches_perfectly(c),
                _ => prefs[p].matches_partially(c),
            })
    };
    match preferred_match(
        action,
        prefs.len(),
        vs.bindings.len(),
        matches,
        |i| eligible.has(i),
        trace,
    ) {
        Some((p, MatchPass::Perfect, bits)) => (MatchPass::Perfect, Set::Perfect(p), Some(bits)),
        Some((p, _, bits)) => (MatchPass::Partial, Set::Partial(p), Some(bits)),
        None => (MatchPass::Remaining, Set::All, None),
    }
}

/// Seed 000's passes over `n` candidates and `prefs` preferred locations,
/// `matches(pass, p, i)` telling whether candidate `i` matches preferred
/// location `p` in that pass: the first preferred location (in priority
/// order) with a perfect match that can answer, else the first with a
/// partial one, with the mask of its matches that can answer (of the first
/// 64 candidates); `None` when none matches (every candidate stays). Each
/// preferred location's count is traced.
pub(crate) fn preferred_match<T: Tracer>(
    action: DnsActionId,
    prefs: usize,
    n: usize,
    matches: impl Fn(MatchPass, usize, usize) -> bool,
    can_answer: impl Fn(usize) -> bool,
    trace: &mut T,
) -> Option<(usize, MatchPass, u64)> {
    for pass in [MatchPass::Perfect, MatchPass::Partial] {
        for p in 0..prefs {
            let (mut up, mut down, mut bits) = (0u32, 0u32, 0u64);
            for i in 0..n {
                if matches(pass, p, i) {
                    if can_answer(i) {
                        up += 1;
                        if i < 64 {
                            bits |= 1 << i;
                        }
                    } else {
                        down += 1;
                    }
                }
            }
            trace.record(TraceEvent::PreferredLocation {
                action,
                pass,
                index: p as u8,
                up,
                down,
            });
            if up > 0 {
                return Some((p, pass, bits));
            }
        }
    }
    trace.record(TraceEvent::PreferredRemaining);
    None
}

/// The plan of the vserver's method, or of its backup method when the
/// method lacks its inputs.
fn method_plan<T: Tracer>(
    snap: &Snapshot,
    vs_id: VServerId,
    client: &mut Client,
    eligible: &Eligible<impl Fn(usize) -> bool>,
    trace: &mut T,
) -> (Plan, Reason) {
    let vs = snap.model().vserver(vs_id);
    match plan_for(snap, vs_id, vs.method, client, eligible, trace) {
        Ok(plan) => (plan, Reason::Method(vs.method)),
        // `-dropLdnsReq`: no answer rather than the backup method's.
        Err(FallbackWhy::NoRtt)
            if vs.method == LbMethod::Rtt && snap.model().params.drop_ldns_requests =>
        {
            trace.record(TraceEvent::NoRttDropped);
            (round_robin_plan(), Reason::NoRttDropped)
        }
        Err(why) => {
            let wanted = vs.backup_method.unwrap_or(LbMethod::RoundRobin);
            let (backup, plan) = match plan_for(snap, vs_id, wanted, client, eligible, trace) {
                Ok(plan) if wanted != vs.method => (wanted, plan),
                _ => (LbMethod::RoundRobin, round_robin_plan()),
            };
            trace.record(TraceEvent::MethodFallback {
                vserver: vs_id,
                method: vs.method,
                backup,
                why,
            });
            (
                plan,
                Reason::Fallback {
                    method: vs.method,
                    backup,
                    why,
                },
            )
        }
    }
}

fn round_robin_plan() -> Plan {
    Plan {
        set: Set::All,
        pick: Pick::RoundRobin,
        method: LbMethod::RoundRobin,
        per_client: false,
        bits: None,
    }
}

/// How `method` would choose, or why it cannot.
fn plan_for<T: Tracer>(
    snap: &Snapshot,
    vs_id: VServerId,
    method: LbMethod,
    client: &mut Client,
    eligible: &Eligible<impl Fn(usize) -> bool>,
    trace: &mut T,
) -> Result<Plan, FallbackWhy> {
    let vs = snap.model().vserver(vs_id);
    match method {
        LbMethod::RoundRobin => Ok(round_robin_plan()),
        LbMethod::SourceIpHash => Ok(Plan {
            set: Set::All,
            pick: Pick::SourceHash,
            method,
            per_client: true,
            bits: None,
        }),
        LbMethod::StaticProximity => {
            let (shared, tied, bits) = proximity(snap, vs, client, eligible)?;
            trace.record(TraceEvent::Proximity {
                shared: shared as u8,
                tied,
            });
            Ok(Plan {
                set: Set::Shared(shared),
                pick: Pick::Nearest,
                method,
                per_client: true,
                bits: Some(bits),
            })
        }
        LbMethod::LeastConnection => {
            least_plan(snap, vs, method, LoadKind::Connections, eligible, trace)
        }
        LbMethod::LeastResponseTime => {
            least_plan(snap, vs, method, LoadKind::ResponseTime, eligible, trace)
        }
        LbMethod::LeastBandwidth => {
            least_plan(snap, vs, method, LoadKind::Bandwidth, eligible, trace)
        }
        LbMethod::LeastPackets => least_plan(snap, vs, method, LoadKind::Packets, eligible, trace),
        LbMethod::CustomLoad => least_plan(snap, vs, method, LoadKind::CustomLoad, eligible, trace),
        LbMethod::Rtt => rtt_plan(snap, vs_id, client, eligible, trace),
    }
}

/// The RTT method (seed 003): the services at the site with the smallest
/// RTT to the query's LDNS, and with `-tolerance N` those at every site
/// within N ms of it; round robin among them. Cannot decide while no
/// candidate's site has an RTT to this LDNS. The answer depends on the
/// resolver, not on the client subnet, so it is not per client.
fn rtt_plan<T: Tracer>(
    snap: &Snapshot,
    vs_id: VServerId,
    client: &mut Client,
    eligible: &Eligible<impl Fn(usize) -> bool>,
    trace: &mut T,
) -> Result<Plan, FallbackWhy> {
    let Some(row) = client.rtt_row(snap) else {
        return Err(FallbackWhy::NoRtt);
    };
    let rtts = snap.rtt().site_rtts(row);
    let vs = snap.model().vserver(vs_id);
    if T::ENABLED {
        for (i, b) in vs.bindings.iter().enumerate() {
            if eligible.has(i) {
                let site = snap.binding_site(vs_id, i);
                trace.record(TraceEvent::Rtt {
                    service: b.service,
                    site,
                    rtt_us: rtts.get(site),
                });
            }
        }
    }
    let tolerance_us = u32::try_from(vs.rtt_tolerance.as_micros()).unwrap_or(u32::MAX);
    let groups = snap.site_groups(vs_id);
    let set = match eligible.mask() {
        // At most 64 bindings: one RTT per site, the bindings by mask.
        Some(up) if !groups.is_empty() => {
            let best = groups
                .iter()
                .filter(|g| g.bindings & up != 0)
                .filter_map(|g| rtts.get(g.site))
                .min()
                .ok_or(FallbackWhy::NoRtt)?;
            let max_us = best.saturating_add(tolerance_us);
            trace.record(TraceEvent::RttBest {
                best_us: best,
                tolerance_us,
            });
            let bits = groups
                .iter()
                .filter(|g| g.bindings & up != 0)
                .filter(|g| rtts.get(g.site).is_some_and(|r| r <= max_us))
                .fold(0, |bits, g| bits | g.bindings);
            Set::RttBits { bits }
        }
        _ => {
            let best = (0..vs.bindings.len())
                .filter(|i| eligible.has(*i))
                .filter_map(|i| rtts.get(snap.binding_site(vs_id, i)))
                .min()
                .ok_or(FallbackWhy::NoRtt)?;
            let max_us = best.saturating_add(tolerance_us);
            trace.record(TraceEvent::RttBest {
                best_us: best,
                tolerance_us,
            });
            Set::Rtt {
                vserver: vs_id,
                row,
                max_us,
            }
        }
    };
    Ok(Plan {
        set,
        pick: Pick::RoundRobin,
        method: LbMethod::Rtt,
        per_client: false,
        bits: None,
    })
}

/// What a binding's figure is divided by: its weight (at least 1) for the
/// LEAST* methods, 1 for CUSTOMLOAD.
fn load_weight(kind: LoadKind, b: &Binding) -> u32 {
    if kind.per_weight() {
        b.weight.max(1)
    } else {
        1
    }
}

/// Compares `a / wa` with `b / wb` exactly (no rounding, no overflow).
fn per_weight_cmp(a: u64, wa: u32, b: u64, wb: u32) -> std::cmp::Ordering {
    (u128::from(a) * u128::from(wb)).cmp(&(u128::from(b) * u128::from(wa)))
}

/// A metric-driven method: the candidates with the lowest figure (per
/// unit of weight for the LEAST* methods), round robin among ties. Cannot
/// decide while any candidate lacks the figure. Every candidate's figure
/// is traced, so an explanation shows what the choice (or the fallback)
/// was based on.
fn least_plan<T: Tracer>(
    snap: &Snapshot,
    vs: &VServer,
    method: LbMethod,
    kind: LoadKind,
    eligible: &Eligible<impl Fn(usize) -> bool>,
    trace: &mut T,
) -> Result<Plan, FallbackWhy> {
    // (figure, weight, tied) of the lowest so far.
    let mut best: Option<(u64, u32, u32)> = None;
    let mut missing = false;
    for (i, b) in vs.bindings.iter().enumerate() {
        if !eligible.has(i) {
            continue;
        }
        let figure = snap.metrics(b.service).get(kind);
        let weight = load_weight(kind, b);
        trace.record(TraceEvent::Load {
            service: b.service,
            kind,
            figure,
            weight,
        });
        let Some(f) = figure else {
            if !T::ENABLED {
                return Err(FallbackWhy::NoLoadMetrics);
            }
            missing = true;
            continue;
        };
        best = match best {
            None => Some((f, weight, 1)),
            Some((bf, bw, tied)) => match per_weight_cmp(f, weight, bf, bw) {
                std::cmp::Ordering::Less => Some((f, weight, 1)),
                std::cmp::Ordering::Equal => Some((bf, bw, tied + 1)),
                std::cmp::Ordering::Greater => Some((bf, bw, tied)),
            },
        };
    }
    if missing {
        return Err(FallbackWhy::NoLoadMetrics);
    }
    let Some((num, den, tied)) = best else {
        // No candidate at all: nothing to choose from either way.
        return Ok(Plan {
            method,
            ..round_robin_plan()
        });
    };
    trace.record(TraceEvent::LeastLoad { method, tied });
    Ok(Plan {
        set: Set::Least { kind, num, den },
        pick: Pick::RoundRobin,
        method,
        per_client: false,
        bits: None,
    })
}

/// Static proximity: the most leading qualifiers any UP service shares
/// with the client, how many services share that many, and which (bit `i`:
/// binding `i`, of the first 64). Undecidable
/// when the client or every UP service has no location, or when no
/// service shares even the first qualifier and coordinates cannot help.
fn proximity(
    snap: &Snapshot,
    vs: &VServer,
    client: &mut Client,
    eligible: &Eligible<impl Fn(usize) -> bool>,
) -> Result<(usize, u32, u64), FallbackWhy> {
    client.place(snap).ok_or(FallbackWhy::NoClientLocation)?;
    // Qualifier ids: integer compares, no string.
    let client_code = client.code(snap).ok_or(FallbackWhy::NoClientLocation)?;
    let mut best: Option<(usize, u32)> = None;
    let mut bits = 0u64;
    for (i, b) in vs.bindings.iter().enumerate() {
        if !eligible.has(i) {
            continue;
        }
        let Some(code) = snap.service_code(b.service) else {
            continue;
        };
        let shared = client_code.shared_prefix(code);
        let bit = if i < 64 { 1 << i } else { 0 };
        best = match best {
            Some((n, count)) if n == shared => {
                bits |= bit;
                Some((n, count + 1))
            }
            Some((n, count)) if n > shared => Some((n, count)),
            _ => {
                bits = bit;
                Some((shared, 1))
            }
        };
    }
    match best {
        None => Err(FallbackWhy::NoServiceLocation),
        // Coordinates can still decide when no qualifier is shared: read
        // only then (the places are a cache line apart from the ids).
        Some((0, _)) => {
            let with_coordinates = vs.bindings.iter().enumerate().any(|(i, b)| {
                eligible.has(i)
                    && snap
                        .service_place(b.service)
                        .is_some_and(|p| p.coordinates.is_some())
            });
            if with_coordinates && client.coordinates(snap).is_some() {
                Ok((0, best.map_or(0, |(_, c)| c), bits))
            } else {
                Err(FallbackWhy::NoSharedLocation)
            }
        }
        Some((shared, tied)) => Ok((shared, tied, bits)),
    }
}

/// Distance from `here` (the client) to binding `i`, when it has
/// coordinates.
fn distance(snap: &Snapshot, vs: &VServer, here: Coordinates, i: usize) -> Option<f64> {
    let there = snap.service_place(vs.bindings[i].service)?.coordinates?;
    Some(here.distance_km(&there))
}

fn nearest_distance(
    snap: &Snapshot,
    vs: &VServer,
    here: Coordinates,
    in_set: &impl Fn(usize) -> bool,
) -> Option<f64> {
    (0..vs.bindings.len())
        .filter(|i| in_set(*i))
        .filter_map(|i| distance(snap, vs, here, i))
        .min_by(f64::total_cmp)
}
