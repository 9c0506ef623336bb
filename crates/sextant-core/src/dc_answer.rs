//! Answering a datacenter-mode record (seed 002): keep the datacenters
//! with a healthy address, take them in ranked order, let topology rules
//! choose among them (not with Client Based), cut after the first
//! `total_dcs` (Client Based: the best one for the client, or all with
//! `-balance ALL`), balance among the remaining healthy addresses; with
//! none at all, the fail-safe records (not with Client Based).
//!
//! Nothing here sorts or allocates: the ranking by DC or service figures is
//! published in the snapshot, and Client Based ranks at most
//! [`MAX_DC_GROUPS`] groups on the stack.

use std::net::IpAddr;

use crate::choose::{Client, preferred_match};
use crate::dc::{Balance, DcHealth, DcRecord, DcRecordId, MAX_DC_GROUPS, RecordStatus};
use crate::decide::{AnswerBuf, Cursor, Decision, Outcome, Reason};
use crate::location::Location;
use crate::policy::DnsActionId;
use crate::select::nth_weighted;
use crate::snapshot::Snapshot;
use crate::trace::{DcVerdict, MatchPass, TraceEvent, Tracer};

/// Addresses within this many kilometres of the nearest count as equally
/// near (as for static proximity).
const SAME_DISTANCE_KM: f64 = 1.0;

/// Whether address `a` of `rec` is healthy (its HC condition), whatever its
/// family and weight.
pub fn address_healthy(snap: &Snapshot, rec: &DcRecord, a: usize) -> bool {
    let Some(addr) = rec.addresses.get(a) else {
        return false;
    };
    let site_ok = || {
        rec.groups
            .get(addr.group as usize)
            .is_some_and(|g| snap.site_reachable(g.site))
    };
    match addr.health {
        DcHealth::Always => true,
        DcHealth::Service(s) => snap.answers(s),
        DcHealth::SiteReachable => site_ok(),
        DcHealth::ServiceAndSite(s) => snap.answers(s) && site_ok(),
    }
}

/// The record's status: OK, Partially OK, No healthy records or Fail-safe
/// (by health and weight, any family: a datacenter serves when it has a
/// healthy address of weight above 0).
pub fn record_status(snap: &Snapshot, r: DcRecordId) -> RecordStatus {
    let rec = &snap.model().dc_records[r];
    let (mut with_addresses, mut healthy) = (0u64, 0u64);
    for (a, addr) in rec.addresses.iter().enumerate() {
        let bit = 1u64 << (addr.group as usize % MAX_DC_GROUPS);
        with_addresses |= bit;
        // A datacenter serves only through a healthy address it answers
        // with: one whose healthy addresses are all drained (weight 0)
        // serves nothing.
        if addr.weight > 0 && address_healthy(snap, rec, a) {
            healthy |= bit;
        }
    }
    match healthy {
        0 if !rec.fail_safe.is_empty() && !rec.selection.is_client_based() => {
            RecordStatus::FailSafe
        }
        0 => RecordStatus::NoHealthyRecords,
        h if h == with_addresses => RecordStatus::Ok,
        _ => RecordStatus::PartiallyOk,
    }
}

/// The answer for record `r` in the family `v4`/`v6` of the query.
#[allow(clippy::too_many_arguments)]
pub(crate) fn answer_dc_record<T: Tracer>(
    snap: &Snapshot,
    r: DcRecordId,
    v6: bool,
    client: &mut Client,
    preferred: Option<(DnsActionId, &[Location])>,
    cursor: &mut Cursor,
    out: &mut AnswerBuf,
    trace: &mut T,
) -> Decision {
    let rec = &snap.model().dc_records[r];
    let client_based = rec.selection.is_client_based();
    if T::ENABLED {
        trace.record(TraceEvent::DcRecord {
            record: r,
            status: record_status(snap, r),
        });
    }
    let family_ok = |ip: IpAddr| ip.is_ipv6() == v6;
    // Answerable: healthy, of the family, not drained.
    let answerable = |a: usize| {
        rec.addresses[a].weight > 0
            && family_ok(rec.addresses[a].ip)
            && address_healthy(snap, rec, a)
    };

    // Per group: how many answerable addresses it has.
    let groups = rec.groups.len().min(MAX_DC_GROUPS);
    let mut healthy_in = [0u16; MAX_DC_GROUPS];
    for (a, addr) in rec.addresses.iter().enumerate() {
        if (addr.group as usize) < groups && answerable(a) {
            healthy_in[addr.group as usize] += 1;
        }
    }

    // The ranking: published (DC / Service Based), per query (Client
    // Based), or the configured order.
    let mut order = [0u8; MAX_DC_GROUPS];
    let mut figures = [None; MAX_DC_GROUPS];
    match (client_based, snap.dc_order(r)) {
        (true, _) => {
            for (g, f) in figures.iter_mut().enumerate().take(groups) {
                *f = crate::dc_client::figure(snap, rec, g, client);
            }
            for (i, o) in order.iter_mut().enumerate().take(groups) {
                *o = i as u8;
            }
            let direction = rec.selection.direction();
            if let Some(direction) = direction {
                // Insertion sort: stable, at most 64 groups, no allocation.
                for i in 1..groups {
                    let mut j = i;
                    while j > 0
                        && crate::dc::compare(
                            figures[order[j] as usize],
                            figures[order[j - 1] as usize],
                            direction,
                        )
                        .is_lt()
                    {
                        order.swap(j, j - 1);
                        j -= 1;
                    }
                }
            }
        }
        (false, Some(published)) if published.groups.len() == groups => {
            order[..groups].copy_from_slice(&published.groups);
            // The figures are only for the explanation.
            if T::ENABLED {
                for (g, f) in figures.iter_mut().enumerate().take(groups) {
                    *f = published.figures.get(g).copied().flatten();
                }
            }
        }
        _ => {
            for (i, o) in order.iter_mut().enumerate().take(groups) {
                *o = i as u8;
            }
        }
    }

    // Topology rules (preferred locations) choose among every datacenter's
    // answerable addresses, before the cut: a client whose location matches
    // a datacenter gets that one, whatever N is. Not with Client Based.
    let topology = match preferred {
        Some((action, prefs)) if !client_based => preferred_match(
            action,
            prefs.len(),
            rec.addresses.len(),
            |pass, p, a| {
                snap.dc_address_place(r, a).is_some_and(|pl| match pass {
                    MatchPass::Perfect => prefs[p].matches_perfectly(&pl.location),
                    _ => prefs[p].matches_partially(&pl.location),
                })
            },
            answerable,
            trace,
        )
        .map(|(p, pass, _)| (p, pass)),
        _ => None,
    };
    let matches = |a: usize| {
        answerable(a)
            && match topology {
                Some((p, MatchPass::Perfect)) => snap
                    .dc_address_place(r, a)
                    .is_some_and(|pl| prefs_of(preferred)[p].matches_perfectly(&pl.location)),
                Some((p, MatchPass::Partial)) => snap
                    .dc_address_place(r, a)
                    .is_some_and(|pl| prefs_of(preferred)[p].matches_partially(&pl.location)),
                _ => true,
            }
    };
    let mut matching_in = [0u16; MAX_DC_GROUPS];
    if topology.is_some() {
        for (a, addr) in rec.addresses.iter().enumerate() {
            if (addr.group as usize) < groups && matches(a) {
                matching_in[addr.group as usize] += 1;
            }
        }
    } else {
        matching_in = healthy_in;
    }

    // Keep the groups with a matching address, in ranked order; cut after
    // the first N. Client Based has no N (seed 002): with `-balance ALL` it
    // answers every datacenter, best first; otherwise the best one for this
    // client, or, while no datacenter has a figure for it, all of them (as
    // the RTT method balances while no RTT is known).
    let cut = if client_based {
        let known = figures[..groups].iter().any(Option::is_some);
        if rec.balance == Balance::All || !known {
            groups
        } else {
            1
        }
    } else {
        (rec.total_dcs.max(1) as usize).min(groups)
    };
    let mut taken = 0u64;
    let mut count = 0;
    for (rank, g) in order[..groups].iter().enumerate() {
        let g = *g as usize;
        let healthy = u32::from(healthy_in[g]);
        let verdict = if healthy == 0 {
            DcVerdict::NoHealthy
        } else if matching_in[g] == 0 {
            DcVerdict::OffTopology
        } else if count >= cut {
            if client_based {
                DcVerdict::NotBestForClient
            } else {
                DcVerdict::BeyondCut
            }
        } else {
            DcVerdict::Taken
        };
        if verdict == DcVerdict::Taken {
            taken |= 1 << g;
            count += 1;
        }
        trace.record(TraceEvent::DcGroup {
            record: r,
            group: g as u8,
            rank: rank as u8,
            figure: figures[g],
            healthy,
            verdict,
        });
    }

    if taken == 0 {
        if !client_based && !rec.fail_safe.is_empty() {
            out.addrs
                .extend(rec.fail_safe.iter().copied().filter(|ip| family_ok(*ip)));
            trace.record(TraceEvent::DcFailSafe {
                count: out.addrs.len() as u32,
            });
            return with_ldns(
                dc_decision(
                    if out.addrs.is_empty() {
                        Outcome::NoData { zone: None }
                    } else {
                        Outcome::DcAddresses {
                            record: r,
                            ttl: rec.ttl,
                        }
                    },
                    Reason::FailSafe,
                ),
                client_based,
                client,
                snap,
            );
        }
        trace.record(TraceEvent::DcNoHealthy);
        return with_ldns(
            dc_decision(Outcome::NoData { zone: None }, Reason::NoHealthyRecords),
            client_based,
            client,
            snap,
        );
    }

    let in_taken = |a: usize| taken >> (rec.addresses[a].group as usize % MAX_DC_GROUPS) & 1 == 1;
    let chosen = |a: usize| in_taken(a) && matches(a);

    let n = rec.addresses.len();
    let pick = match rec.balance {
        Balance::All => {
            // Best datacenter first: with every address in the answer, the
            // ranking is the order (and, for Client Based, which has no
            // cut, the only effect of the criterion).
            for g in &order[..groups] {
                out.addrs.extend(
                    (0..n)
                        .filter(|a| rec.addresses[*a].group == *g && chosen(*a))
                        .map(|a| rec.addresses[a].ip),
                );
            }
            None
        }
        Balance::RoundRobin => {
            let open = (0..n).filter(|a| chosen(*a)).count() as u64;
            let turn = snap.dc_turn(r, cursor.peeks());
            nth_of(n, &chosen, turn, open)
        }
        Balance::Random => {
            let open = (0..n).filter(|a| chosen(*a)).count() as u64;
            nth_of(n, &chosen, cursor.next_random(), open)
        }
        Balance::WeightedRoundRobin => {
            let turn = snap.dc_turn(r, cursor.peeks());
            nth_weighted(n, |a| rec.addresses[a].weight, turn, chosen)
        }
        Balance::WeightedRandom => weighted_random(rec, cursor.next_random(), &chosen),
        Balance::Closest => {
            let here = client
                .place(snap)
                .and_then(|p| snap.model().locations.place(p).coordinates);
            let distance = |a: usize| {
                let there = snap.dc_address_place(r, a)?.coordinates?;
                Some(here?.distance_km(&there))
            };
            let nearest = (0..n)
                .filter(|a| chosen(*a))
                .filter_map(distance)
                .min_by(f64::total_cmp);
            let turn = snap.dc_turn(r, cursor.peeks());
            match nearest {
                Some(d) => {
                    let near = |a: usize| {
                        chosen(a) && distance(a).is_some_and(|x| x <= d + SAME_DISTANCE_KM)
                    };
                    let open = (0..n).filter(|a| near(*a)).count() as u64;
                    nth_of(n, &near, turn, open)
                }
                None => {
                    let open = (0..n).filter(|a| chosen(*a)).count() as u64;
                    nth_of(n, &chosen, turn, open)
                }
            }
        }
    };
    if let Some(a) = pick {
        out.addrs.push(rec.addresses[a].ip);
    }
    trace.record(TraceEvent::DcAnswered {
        balance: rec.balance,
        count: out.addrs.len() as u32,
    });
    let outcome = if out.addrs.is_empty() {
        Outcome::NoData { zone: None }
    } else {
        Outcome::DcAddresses {
            record: r,
            ttl: rec.ttl,
        }
    };
    let reason = match topology {
        Some((_, pass)) => Reason::PreferredLocation { pass },
        None => Reason::Datacenter,
    };
    with_ldns(dc_decision(outcome, reason), client_based, client, snap)
}

fn dc_decision(outcome: Outcome, reason: Reason) -> Decision {
    Decision {
        outcome,
        reason,
        ecs_scope: 0,
        stick: None,
        ldns: None,
    }
}

/// A Client Based record needs its client's LDNS measured: the DNS path
/// marks a known row queried and hands a new group to the prober, as for
/// the RTT method.
fn with_ldns(
    mut d: Decision,
    client_based: bool,
    client: &mut Client,
    snap: &Snapshot,
) -> Decision {
    if client_based {
        client.rtt_row(snap);
        d.ldns = client.ldns_use();
    }
    d
}

fn prefs_of(preferred: Option<(DnsActionId, &[Location])>) -> &[Location] {
    preferred.map(|(_, list)| list).unwrap_or(&[])
}

/// The `k`-th (cyclically) of the `open` addresses that pass `test`.
fn nth_of(n: usize, test: &impl Fn(usize) -> bool, k: u64, open: u64) -> Option<usize> {
    if open == 0 {
        return None;
    }
    (0..n).filter(|a| test(*a)).nth((k % open) as usize)
}

/// A weighted random pick among the addresses that pass `test`.
fn weighted_random(rec: &DcRecord, random: u64, test: &impl Fn(usize) -> bool) -> Option<usize> {
    let total: u64 = (0..rec.addresses.len())
        .filter(|a| test(*a))
        .map(|a| u64::from(rec.addresses[a].weight))
        .sum();
    if total == 0 {
        return None;
    }
    let mut target = random % total;
    for (a, addr) in rec.addresses.iter().enumerate() {
        if !test(a) {
            continue;
        }
        let w = u64::from(addr.weight);
        if target < w {
            return Some(a);
        }
        target -= w;
    }
    None
}
