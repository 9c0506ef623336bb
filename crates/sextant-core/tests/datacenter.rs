//! Datacenter mode (seed 002) in the decision core: the ranking of every DC
//! Selection × Selection Criterion as golden tables, the cut after Total
//! DCs, health, fail-safe records and record status, every balance
//! algorithm's shares over many answers, topology rules, and Client Based
//! (no cut, no topology, no fail-safe; figures per query).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use sextant_core::dc::{DcFacts, ServiceFacts, rank_record};
use sextant_core::dc_answer::record_status;
use sextant_core::*;
use sextant_test_support::alloc::{Counting, allocations};
use sextant_test_support::model::{ModelBuilder, ip, soa};

#[global_allocator]
static GLOBAL: Counting = Counting;

const NAME: &str = "www.example.com";
/// Four datacenters, in configured order.
const DCS: [&str; 4] = ["fra", "ams", "nyc", "sgp"];

/// The model's one datacenter-mode record.
const RECORD: DcRecordId = DcRecordId::new(0);

/// Sites fra (local), ams, nyc, sgp; one service per site (`web-SITE`,
/// 10.0.k.10, id k); the record over four groups with two addresses each
/// (10.0.k.10 by service, 10.0.k.11 always healthy), weights 1 and 3.
fn model(selection: DcSelection, total_dcs: u32, balance: Balance) -> Model {
    let mut b = ModelBuilder::new();
    for (k, dc) in DCS.iter().enumerate() {
        b.add_site(dc, IpAddr::from([10, 0, k as u8, 1]));
    }
    b.model.set_local_site(SiteId::new(0));
    for (k, dc) in DCS.iter().enumerate() {
        b.add_service_at(
            &format!("web-{dc}"),
            IpAddr::from([10, 0, k as u8, 10]),
            SiteId::from_index(k),
        );
    }
    b.add_zone(
        "example.com",
        soa(1, 3600, 3, 3600, 5, 3600),
        &["ns1.example.com"],
        3600,
    );
    let mut m = b.build();
    let mut rec = DcRecord {
        name: NAME.into(),
        ttl: 30,
        selection,
        total_dcs,
        balance,
        groups: Vec::new(),
        addresses: Vec::new(),
        fail_safe: vec![ip("192.0.2.99")],
    };
    for k in 0..DCS.len() {
        rec.groups.push(DcGroup {
            site: SiteId::from_index(k),
            service: Some(ServiceId::from_index(k)),
        });
        rec.addresses.push(DcAddress {
            group: k as u8,
            ip: IpAddr::from([10, 0, k as u8, 10]),
            weight: 1,
            health: DcHealth::Service(ServiceId::from_index(k)),
        });
        rec.addresses.push(DcAddress {
            group: k as u8,
            ip: IpAddr::from([10, 0, k as u8, 11]),
            weight: 3,
            health: DcHealth::Always,
        });
    }
    m.dc_records.push(rec);
    m
}

fn addr(dc: usize, host: u8) -> IpAddr {
    IpAddr::from([10, 0, dc as u8, host])
}

/// The DC (group index) an answered address belongs to.
fn dc_of(a: IpAddr) -> usize {
    match a {
        IpAddr::V4(v4) => usize::from(v4.octets()[2]),
        IpAddr::V6(_) => usize::MAX,
    }
}

/// Facts per DC for the golden tables: every criterion orders them
/// differently, and one DC's figure is missing for most.
fn facts(g: usize) -> DcFacts {
    let svc = |up: bool, m: ServiceMetrics| {
        Some(ServiceFacts {
            up,
            metrics: Some(m),
        })
    };
    let metrics = |cpu, mem, bw, req, conn, new, healthy| ServiceMetrics {
        cpu_percent: cpu,
        memory_percent: mem,
        bandwidth_bps: bw,
        requests_ps: req,
        connections: conn,
        new_sessions_ps: new,
        healthy_backends: healthy,
        ..ServiceMetrics::NONE
    };
    match g {
        // fra
        0 => DcFacts {
            reachable: true,
            cpu_percent: Some(40.0),
            memory_percent: Some(70.0),
            bandwidth_bytes_ps: Some(3e6),
            packet_loss_percent: Some(0.0),
            service: svc(
                true,
                metrics(
                    Some(50),
                    Some(20),
                    Some(900),
                    Some(300),
                    Some(30),
                    Some(9),
                    Some(2),
                ),
            ),
        },
        // ams
        1 => DcFacts {
            reachable: true,
            cpu_percent: Some(10.0),
            memory_percent: None,
            bandwidth_bytes_ps: Some(1e6),
            packet_loss_percent: Some(2.5),
            service: svc(
                true,
                metrics(
                    Some(20),
                    None,
                    Some(100),
                    Some(100),
                    Some(90),
                    Some(3),
                    Some(8),
                ),
            ),
        },
        // nyc: not reachable (its figures are stale: unknown)
        2 => DcFacts {
            reachable: false,
            service: Some(ServiceFacts {
                up: false,
                metrics: None,
            }),
            ..DcFacts::default()
        },
        // sgp
        _ => DcFacts {
            reachable: true,
            cpu_percent: Some(25.0),
            memory_percent: Some(30.0),
            bandwidth_bytes_ps: None,
            packet_loss_percent: Some(0.5),
            service: svc(
                false,
                metrics(None, Some(60), Some(500), None, Some(10), Some(1), Some(5)),
            ),
        },
    }
}

fn names(order: &[u8]) -> Vec<&'static str> {
    order.iter().map(|g| DCS[*g as usize]).collect()
}

#[test]
fn every_dc_based_and_service_based_criterion_ranks_as_its_table_says() {
    use DcCriterion as D;
    use ServiceCriterion as S;
    let svc = |criterion| DcSelection::ServiceBased {
        criterion,
        service: "web".into(),
    };
    let golden: Vec<(DcSelection, [&str; 4])> = vec![
        (DcSelection::AllDcRecords, ["fra", "ams", "nyc", "sgp"]),
        // Lowest first; nyc (unreadable) last.
        (DcSelection::DcBased(D::Cpu), ["ams", "sgp", "fra", "nyc"]),
        (
            DcSelection::DcBased(D::Memory),
            ["sgp", "fra", "ams", "nyc"],
        ),
        (
            DcSelection::DcBased(D::Bandwidth),
            ["ams", "fra", "nyc", "sgp"],
        ),
        // Reachable first, in configured order.
        (
            DcSelection::DcBased(D::Status),
            ["fra", "ams", "sgp", "nyc"],
        ),
        (
            DcSelection::DcBased(D::PacketLoss),
            ["fra", "sgp", "ams", "nyc"],
        ),
        (svc(S::Cpu), ["ams", "fra", "nyc", "sgp"]),
        (svc(S::Memory), ["fra", "sgp", "ams", "nyc"]),
        (svc(S::Bandwidth), ["ams", "sgp", "fra", "nyc"]),
        (svc(S::Requests), ["ams", "fra", "nyc", "sgp"]),
        (svc(S::Connections), ["sgp", "fra", "ams", "nyc"]),
        (svc(S::NewSessions), ["sgp", "ams", "fra", "nyc"]),
        // UP first (fra, ams), then DOWN (nyc, sgp), configured order.
        (svc(S::Status), ["fra", "ams", "nyc", "sgp"]),
        // Most first.
        (svc(S::HealthyBackends), ["ams", "sgp", "fra", "nyc"]),
    ];
    for (selection, want) in golden {
        let m = model(selection.clone(), 1, Balance::RoundRobin);
        let order = rank_record(&m.dc_records[RECORD], facts, Duration::from_secs(7));
        assert_eq!(names(&order.groups), want, "{selection:?}");
        assert_eq!(order.at, Duration::from_secs(7));
        assert_eq!(order.figures.len(), 4);
    }
    assert_eq!(
        DcCriterion::ALL.len() + ServiceCriterion::ALL.len() + 1,
        14,
        "a new criterion needs a row in the table above"
    );
}

/// A snapshot of `m` with `down` services DOWN and the ranking of the
/// golden facts published under DC Based CPU (ams, sgp, fra, nyc).
fn snap(m: Model, down: &[ServiceId]) -> Snapshot {
    let order = rank_record(&m.dc_records[RECORD], facts, Duration::ZERO);
    let states: Vec<ServiceState> = m
        .services
        .ids()
        .map(|i| ServiceState {
            up: !down.contains(&i),
        })
        .collect();
    Snapshot::new(Arc::new(m), 1)
        .with_states(states.into())
        .with_dc_orders(Arc::new(DcOrders {
            orders: vec![Some(order)].into(),
            site_reachable: vec![true; 4].into(),
        }))
}

fn query(source: &str) -> Query<'static> {
    Query {
        name: NAME,
        qtype: QueryType::A,
        source: ip(source),
        ecs: None,
    }
}

fn ask(s: &Snapshot, cursor: &mut Cursor) -> (Decision, Vec<IpAddr>) {
    let mut out = AnswerBuf::default();
    let d = decide(
        s,
        &query("198.51.100.1"),
        cursor,
        &NoSessions,
        &mut out,
        &mut NoTrace,
    );
    (d, out.addrs)
}

/// `n` answers counted per address.
fn shares(s: &Snapshot, n: usize) -> HashMap<IpAddr, usize> {
    let mut cursor = Cursor::new(7);
    let mut counts = HashMap::new();
    for _ in 0..n {
        let (_, addrs) = ask(s, &mut cursor);
        for a in addrs {
            *counts.entry(a).or_insert(0) += 1;
        }
    }
    counts
}

fn dcs_answered(counts: &HashMap<IpAddr, usize>) -> Vec<&'static str> {
    let mut v: Vec<usize> = counts.keys().map(|a| dc_of(*a)).collect();
    v.sort();
    v.dedup();
    v.into_iter().map(|g| DCS[g]).collect()
}

#[test]
fn the_first_ranked_dcs_answer_and_a_dc_without_healthy_addresses_drops_out() {
    let cpu = DcSelection::DcBased(DcCriterion::Cpu);
    // Total DCs 1: ams (lowest CPU) alone.
    let s = snap(model(cpu.clone(), 1, Balance::RoundRobin), &[]);
    let (d, _) = ask(&s, &mut Cursor::new(1));
    assert_eq!(d.reason, Reason::Datacenter);
    assert_eq!(
        d.outcome,
        Outcome::DcAddresses {
            record: RECORD,
            ttl: 30
        }
    );
    assert_eq!(dcs_answered(&shares(&s, 40)), ["ams"]);
    // Total DCs 2: ams and sgp.
    let s = snap(model(cpu.clone(), 2, Balance::RoundRobin), &[]);
    assert_eq!(dcs_answered(&shares(&s, 40)), ["ams", "sgp"]);
    // ams's service DOWN: its always-healthy address still keeps it in.
    let s = snap(model(cpu.clone(), 1, Balance::All), &[ServiceId::new(1)]);
    let (_, addrs) = ask(&s, &mut Cursor::new(1));
    assert_eq!(addrs, vec![addr(1, 11)]);
    // Every ams address unanswerable (service DOWN, the other drained):
    // ams drops out and sgp, next in the ranking, answers.
    let mut m = model(cpu, 1, Balance::All);
    m.dc_records[RECORD].addresses[3].weight = 0;
    let s = snap(m, &[ServiceId::new(1)]);
    let (_, addrs) = ask(&s, &mut Cursor::new(1));
    assert_eq!(addrs, vec![addr(3, 10), addr(3, 11)]);
}

#[test]
fn with_no_healthy_address_the_fail_safe_records_answer_and_the_status_says_so() {
    let mut m = model(DcSelection::AllDcRecords, 1, Balance::RoundRobin);
    // Only the service-health addresses, so that DOWN services empty a DC.
    m.dc_records[RECORD]
        .addresses
        .retain(|a| a.health != DcHealth::Always);
    let s = snap(m.clone(), &[]);
    assert_eq!(record_status(&s, RECORD), RecordStatus::Ok);
    let s = snap(m.clone(), &[ServiceId::new(2)]);
    assert_eq!(record_status(&s, RECORD), RecordStatus::PartiallyOk);
    let s = snap(
        m.clone(),
        &[
            ServiceId::new(0),
            ServiceId::new(1),
            ServiceId::new(2),
            ServiceId::new(3),
        ],
    );
    assert_eq!(record_status(&s, RECORD), RecordStatus::FailSafe);
    let (d, addrs) = ask(&s, &mut Cursor::new(1));
    assert_eq!(d.reason, Reason::FailSafe);
    assert_eq!(addrs, vec![ip("192.0.2.99")]);
    // Without fail-safe records: NODATA (with the zone's SOA).
    m.dc_records[RECORD].fail_safe.clear();
    let s = snap(
        m,
        &[
            ServiceId::new(0),
            ServiceId::new(1),
            ServiceId::new(2),
            ServiceId::new(3),
        ],
    );
    assert_eq!(record_status(&s, RECORD), RecordStatus::NoHealthyRecords);
    let (d, addrs) = ask(&s, &mut Cursor::new(1));
    assert_eq!(d.reason, Reason::NoHealthyRecords);
    assert_eq!(
        d.outcome,
        Outcome::NoData {
            zone: Some(ZoneId::new(0))
        }
    );
    assert!(addrs.is_empty());
}

#[test]
fn an_address_with_the_site_condition_follows_the_reachability_of_its_dc() {
    let mut m = model(DcSelection::AllDcRecords, 1, Balance::All);
    for a in &mut m.dc_records[RECORD].addresses {
        a.health = DcHealth::SiteReachable;
    }
    let s = snap(m, &[]);
    let (_, addrs) = ask(&s, &mut Cursor::new(1));
    assert_eq!(addrs, vec![addr(0, 10), addr(0, 11)]);
    // fra unreachable (not the local site in this table): ams answers.
    let s = s.with_dc_orders(Arc::new(DcOrders {
        orders: s.dc_orders().orders.clone(),
        site_reachable: vec![false, true, true, true].into(),
    }));
    let (_, addrs) = ask(&s, &mut Cursor::new(1));
    assert_eq!(addrs, vec![addr(1, 10), addr(1, 11)]);
}

#[test]
fn every_balance_algorithm_shares_the_answers_as_it_says() {
    let all_dcs = |balance| snap(model(DcSelection::AllDcRecords, 2, balance), &[]);
    // fra and ams: addresses 10.0.0.10 (w1), .11 (w3), 10.0.1.10 (w1), .11 (w3).
    let four = [addr(0, 10), addr(0, 11), addr(1, 10), addr(1, 11)];

    // ALL: every address of the taken DCs in each answer.
    let (_, addrs) = ask(&all_dcs(Balance::All), &mut Cursor::new(1));
    assert_eq!(addrs, four);

    // ROUNDROBIN: one at a time, equal shares, weights ignored.
    let c = shares(&all_dcs(Balance::RoundRobin), 400);
    for a in four {
        assert_eq!(c[&a], 100, "{a}: {c:?}");
    }
    // WEIGHTED_ROUNDROBIN: exactly by weight over whole cycles (1:3:1:3).
    let c = shares(&all_dcs(Balance::WeightedRoundRobin), 800);
    assert_eq!(four.map(|a| c[&a]), [100, 300, 100, 300], "{c:?}");
    // RANDOM: about equal (8,000 draws; within 15 %).
    let c = shares(&all_dcs(Balance::Random), 8_000);
    for a in four {
        assert!((1_700..=2_300).contains(&c[&a]), "{a}: {c:?}");
    }
    // WEIGHTED_RANDOM: about by weight.
    let c = shares(&all_dcs(Balance::WeightedRandom), 8_000);
    for (a, want) in four.iter().zip([1_000, 3_000, 1_000, 3_000]) {
        let got = c[a] as i64;
        assert!((got - want).abs() <= want / 5, "{a}: {c:?}");
    }
    // Weight 0 drains an address under every algorithm.
    for balance in Balance::ALL {
        let mut m = model(DcSelection::AllDcRecords, 2, balance);
        m.dc_records[RECORD].addresses[1].weight = 0;
        let c = shares(&snap(m, &[]), 200);
        assert!(!c.contains_key(&addr(0, 11)), "{balance:?}: {c:?}");
        assert!(c.contains_key(&addr(0, 10)), "{balance:?}: {c:?}");
    }
}

/// A location database with coordinates: the client in Frankfurt; fra's
/// addresses in Frankfurt and Madrid, ams's in Amsterdam.
fn with_coordinates(m: &mut Model) {
    let at = |lat, lon| Place {
        location: Location::parse("Europe.*").expect("location"),
        coordinates: Some(Coordinates {
            latitude: lat,
            longitude: lon,
        }),
    };
    let mut db = LocationDb::builder();
    let mut add = |a: IpAddr, p: Place| db.add(a, a, p, Source::Custom).expect("range");
    add(ip("198.51.100.1"), at(50.1, 8.7)); // client: Frankfurt
    add(addr(0, 10), at(40.4, -3.7)); // Madrid
    add(addr(0, 11), at(50.1, 8.6)); // Frankfurt
    add(addr(1, 10), at(52.4, 4.9)); // Amsterdam
    add(addr(1, 11), at(52.4, 4.9));
    m.locations = Arc::new(db.build());
}

#[test]
fn closest_answers_the_nearest_address_and_round_robin_without_coordinates() {
    let mut m = model(DcSelection::AllDcRecords, 2, Balance::Closest);
    with_coordinates(&mut m);
    let c = shares(&snap(m, &[]), 20);
    assert_eq!(
        c.keys().copied().collect::<Vec<_>>(),
        vec![addr(0, 11)],
        "{c:?}"
    );
    // No location database: round robin over the candidates.
    let c = shares(
        &snap(model(DcSelection::AllDcRecords, 2, Balance::Closest), &[]),
        40,
    );
    assert_eq!(c.len(), 4, "{c:?}");
}

/// A GslbPrefLoc policy for every client preferring `Europe.NL`.
fn with_topology(m: &mut Model) {
    let rule = "CLIENT.IP.SRC.IN_SUBNET(198.51.100.0/24)";
    m.dns_actions.push(DnsAction {
        name: "preferNL".into(),
        kind: DnsActionKind::PreferredLocations(vec![
            Location::parse("Europe.NL").expect("location"),
        ]),
    });
    m.dns_policies.push(DnsPolicy {
        name: "pol".into(),
        rule: Expr::parse(rule).expect("rule"),
        rule_text: rule.into(),
        action: DnsActionId::new(0),
    });
    m.dns_global_bindings.push(PolicyBinding {
        policy: DnsPolicyId::new(0),
        priority: 100,
        goto: Goto::End,
    });
    let nl = Place {
        location: Location::parse("Europe.NL.Amsterdam").expect("location"),
        coordinates: None,
    };
    let mut db = LocationDb::builder();
    for host in [10, 11] {
        db.add(addr(1, host), addr(1, host), nl.clone(), Source::Custom)
            .expect("range");
    }
    m.locations = Arc::new(db.build());
}

#[test]
fn topology_rules_narrow_the_chosen_dcs_addresses_except_with_client_based() {
    let mut m = model(DcSelection::AllDcRecords, 2, Balance::RoundRobin);
    with_topology(&mut m);
    let (d, _) = ask(&snap(m.clone(), &[]), &mut Cursor::new(1));
    assert_eq!(
        d.reason,
        Reason::PreferredLocation {
            pass: MatchPass::Perfect
        }
    );
    assert_eq!(dcs_answered(&shares(&snap(m, &[]), 40)), ["ams"]);
    // Client Based ignores them (and ranks without figures: configured order).
    let mut m = model(
        DcSelection::ClientBased(ClientCriterion::Hops),
        1,
        Balance::RoundRobin,
    );
    m.dc_records[RECORD].fail_safe.clear();
    with_topology(&mut m);
    let s = snap(m, &[]);
    let (d, _) = ask(&s, &mut Cursor::new(1));
    assert_eq!(d.reason, Reason::Datacenter);
    assert_eq!(dcs_answered(&shares(&s, 80)), DCS);
}

/// An RTT table with one row for the LDNS 198.51.100.1 whose cells carry
/// path figures per site: (hops, ttl, loss ‰, MOS × 100); `None`: unknown.
fn path_table(paths: [Option<(u8, u8, u16, u16)>; 4]) -> Arc<RttTable> {
    let cells: Vec<Option<RttCell>> = paths
        .iter()
        .map(|p| {
            p.map(|(hops, ttl, loss_permille, mos_centi)| RttCell {
                rtt: Duration::from_millis(20),
                kind: Some(LdnsProbe::DnsUdp),
                at: Duration::ZERO,
                path: Some(PathFigures {
                    hops,
                    ttl,
                    loss_permille,
                    mos_centi,
                }),
            })
        })
        .collect();
    let mut b = RttTable::builder(4);
    b.row(ip("198.51.100.1"), &cells);
    Arc::new(b.build())
}

#[test]
fn client_based_ranks_per_query_by_each_criterion_with_no_cut_and_no_fail_safe() {
    // (hops, ttl, loss ‰, MOS × 100) per site; sgp unmeasured.
    let table = path_table([
        Some((12, 52, 0, 420)),
        Some((4, 60, 80, 380)),
        Some((20, 108, 10, 300)),
        None,
    ]);
    for (criterion, first) in [
        (ClientCriterion::Hops, "ams"),
        (ClientCriterion::Mos, "fra"),
        (ClientCriterion::PacketLoss, "fra"),
        (ClientCriterion::Ttl, "nyc"),
    ] {
        let m = model(DcSelection::ClientBased(criterion), 1, Balance::All);
        let s = snap(m, &[]).with_rtt(Arc::clone(&table));
        let mut out = AnswerBuf::default();
        let mut t = VecTrace::default();
        let d = decide(
            &s,
            &query("198.51.100.1"),
            &mut Cursor::new(1),
            &NoSessions,
            &mut out,
            &mut t,
        );
        assert_eq!(d.reason, Reason::Datacenter, "{criterion:?}");
        // No cut: every DC with a healthy address answers (Balance ALL),
        // the first ranked first.
        assert_eq!(out.addrs.len(), 8, "{criterion:?}: {:?}", out.addrs);
        // In ranked order: the best datacenter's addresses first.
        assert_eq!(
            DCS[dc_of(out.addrs[0])],
            first,
            "{criterion:?}: {:?}",
            out.addrs
        );
        assert_eq!(
            DCS[dc_of(out.addrs[7])],
            "sgp",
            "{criterion:?}: {:?}",
            out.addrs
        );
        let ranked: Vec<&str> =
            t.0.iter()
                .filter_map(|e| match e {
                    TraceEvent::DcGroup { group, .. } => Some(DCS[*group as usize]),
                    _ => None,
                })
                .collect();
        assert_eq!(ranked[0], first, "{criterion:?}: {ranked:?}");
        assert_eq!(ranked[3], "sgp", "unmeasured ranks last: {ranked:?}");
        // The LDNS is marked as in use, so that it stays probed.
        assert!(matches!(d.ldns, Some(LdnsUse::Known(_))), "{d:?}");
    }
    // An LDNS not in the table: configured order, and it is handed over.
    let m = model(
        DcSelection::ClientBased(ClientCriterion::Mos),
        1,
        Balance::All,
    );
    let s = snap(m.clone(), &[]).with_rtt(Arc::clone(&table));
    let mut out = AnswerBuf::default();
    let d = decide(
        &s,
        &query("203.0.113.9"),
        &mut Cursor::new(1),
        &NoSessions,
        &mut out,
        &mut NoTrace,
    );
    assert_eq!(d.ldns, Some(LdnsUse::Unknown(ip("203.0.113.9"))));
    // Nothing healthy: no fail-safe with Client Based, NODATA.
    let mut m = m;
    m.dc_records[RECORD].fail_safe = vec![ip("192.0.2.99")];
    m.dc_records[RECORD]
        .addresses
        .retain(|a| a.health != DcHealth::Always);
    let s = snap(
        m,
        &[
            ServiceId::new(0),
            ServiceId::new(1),
            ServiceId::new(2),
            ServiceId::new(3),
        ],
    )
    .with_rtt(table);
    let (d, addrs) = ask(&s, &mut Cursor::new(1));
    assert_eq!(d.reason, Reason::NoHealthyRecords);
    assert!(addrs.is_empty());
    assert_eq!(record_status(&s, RECORD), RecordStatus::NoHealthyRecords);
}

#[test]
fn the_explanation_lists_each_dc_with_its_rank_figure_and_verdict() {
    let s = snap(
        model(DcSelection::DcBased(DcCriterion::Cpu), 2, Balance::All),
        &[],
    );
    let mut out = AnswerBuf::default();
    let mut t = VecTrace::default();
    decide(
        &s,
        &query("198.51.100.1"),
        &mut Cursor::peeking(1),
        &NoSessions,
        &mut out,
        &mut t,
    );
    let lines: Vec<String> = t.0.iter().map(|e| e.describe(s.model())).collect();
    let text = lines.join("\n");
    for want in [
        "www.example.com is a datacenter-mode record (status OK): DC_BASED by CPU; the first 2 datacenter(s) with a healthy address; balance ALL",
        "rank 1: DC 2 (site ams), CPU 10, 2 healthy address(es): taken",
        "rank 2: DC 4 (site sgp), CPU 25, 2 healthy address(es): taken",
        "rank 3: DC 1 (site fra), CPU 40, 2 healthy address(es): beyond Total DCs to Select from, left out",
        "rank 4: DC 3 (site nyc), CPU unknown (ranks last), 2 healthy address(es): beyond Total DCs to Select from, left out",
        "balance ALL: 4 address(es) answered",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
}

#[test]
fn answering_a_record_does_not_allocate() {
    let table = path_table([Some((12, 52, 0, 420)), Some((4, 60, 80, 380)), None, None]);
    for selection in [
        DcSelection::DcBased(DcCriterion::Cpu),
        DcSelection::ClientBased(ClientCriterion::Hops),
    ] {
        for balance in Balance::ALL {
            let s = snap(model(selection.clone(), 2, balance), &[ServiceId::new(1)])
                .with_rtt(Arc::clone(&table));
            let mut out = AnswerBuf::default();
            out.addrs.reserve(16);
            let mut cursor = Cursor::new(3);
            let q = query("198.51.100.1");
            decide(&s, &q, &mut cursor, &NoSessions, &mut out, &mut NoTrace);
            let before = allocations();
            for _ in 0..100 {
                decide(&s, &q, &mut cursor, &NoSessions, &mut out, &mut NoTrace);
            }
            assert_eq!(allocations(), before, "{selection:?} {balance:?}");
        }
    }
}

#[test]
fn the_local_site_chosen_at_start_is_always_a_group() {
    let mut m = model(DcSelection::AllDcRecords, 1, Balance::All);
    m.sites.push(Site::new("lon", ip("10.0.9.1")));
    m.set_local_site(SiteId::new(4));
    let groups: Vec<u32> = m.dc_records[RECORD]
        .groups
        .iter()
        .map(|g| g.site.raw())
        .collect();
    assert_eq!(groups, [0, 1, 2, 3, 4]);
    // Already a group: not added twice.
    m.set_local_site(SiteId::new(1));
    assert_eq!(m.dc_records[RECORD].groups.len(), 5);
}

/// Issue 24: topology rules choose among every healthy datacenter before
/// the cut, so with the default N = 1 a client whose location matches a
/// datacenter gets that one (before, the cut left fra alone and the rule
/// could not steer), and the explanation says why the others are out.
#[test]
fn topology_rules_choose_among_the_dcs_before_the_cut() {
    let mut m = model(DcSelection::AllDcRecords, 1, Balance::RoundRobin);
    with_topology(&mut m);
    let s = snap(m, &[]);
    assert_eq!(dcs_answered(&shares(&s, 40)), ["ams"]);
    let mut out = AnswerBuf::default();
    let mut t = VecTrace::default();
    let d = decide(
        &s,
        &query("198.51.100.1"),
        &mut Cursor::peeking(1),
        &NoSessions,
        &mut out,
        &mut t,
    );
    assert_eq!(
        d.reason,
        Reason::PreferredLocation {
            pass: MatchPass::Perfect
        }
    );
    let text: Vec<String> = t.0.iter().map(|e| e.describe(s.model())).collect();
    let text = text.join("\n");
    for want in [
        "preferred location 1 (europe.nl): 2 UP matches, 0 not UP",
        "rank 1: DC 1 (site fra), configured order, 2 healthy address(es): no address in the preferred location, left out",
        "rank 2: DC 2 (site ams), configured order, 2 healthy address(es): taken",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    // With ams DOWN (its service) and its always-healthy address drained,
    // nothing matches: the configured order and the cut as without a rule.
    let mut m = model(DcSelection::AllDcRecords, 1, Balance::RoundRobin);
    with_topology(&mut m);
    m.dc_records[RECORD].addresses[3].weight = 0;
    assert_eq!(
        dcs_answered(&shares(&snap(m, &[ServiceId::new(1)]), 40)),
        ["fra"]
    );
}

/// Issue 24: Client Based without `-balance ALL` answers the best
/// datacenter for the client's resolver (not round robin over all of
/// them); while no datacenter has a figure for it, all of them, as the RTT
/// method balances while no RTT is known.
#[test]
fn client_based_answers_the_best_dc_for_each_client() {
    let table = path_table([
        Some((12, 52, 0, 420)),
        Some((4, 60, 80, 380)),
        Some((20, 108, 10, 300)),
        None,
    ]);
    for (criterion, best) in [
        (ClientCriterion::Mos, "fra"),
        (ClientCriterion::Hops, "ams"),
        (ClientCriterion::Ttl, "nyc"),
    ] {
        let m = model(DcSelection::ClientBased(criterion), 1, Balance::RoundRobin);
        let s = snap(m, &[]).with_rtt(Arc::clone(&table));
        assert_eq!(dcs_answered(&shares(&s, 40)), [best], "{criterion:?}");
    }
    // Its best datacenter down: the next best.
    let m = model(
        DcSelection::ClientBased(ClientCriterion::Mos),
        1,
        Balance::RoundRobin,
    );
    let mut down = m.clone();
    down.dc_records[RECORD]
        .addresses
        .retain(|a| !(dc_of(a.ip) == 0 && a.health == DcHealth::Always));
    let s = snap(down, &[ServiceId::new(0)]).with_rtt(Arc::clone(&table));
    assert_eq!(dcs_answered(&shares(&s, 40)), ["ams"]);
    // A resolver nothing is known of: every datacenter.
    let s = snap(m, &[]).with_rtt(table);
    let mut cursor = Cursor::new(3);
    let mut seen = std::collections::HashSet::new();
    for _ in 0..80 {
        let mut out = AnswerBuf::default();
        decide(
            &s,
            &query("203.0.113.9"),
            &mut cursor,
            &NoSessions,
            &mut out,
            &mut NoTrace,
        );
        seen.extend(out.addrs.iter().map(|a| dc_of(*a)));
    }
    assert_eq!(seen.len(), 4, "{seen:?}");
}

/// Issue 24: a datacenter whose only healthy addresses have weight 0 is
/// not serving: the status is Partially OK (or, with none serving, as if
/// nothing were healthy), never OK.
#[test]
fn a_dc_serving_only_through_drained_addresses_is_not_ok() {
    let mut m = model(
        DcSelection::DcBased(DcCriterion::Cpu),
        1,
        Balance::RoundRobin,
    );
    for a in m.dc_records[RECORD]
        .addresses
        .iter_mut()
        .filter(|a| dc_of(a.ip) == 1)
    {
        a.weight = 0;
    }
    let s = snap(m.clone(), &[]);
    assert_eq!(record_status(&s, RECORD), RecordStatus::PartiallyOk);
    // And it does not answer: ams (lowest CPU) is drained, sgp next.
    assert_eq!(dcs_answered(&shares(&s, 40)), ["sgp"]);
    for a in m.dc_records[RECORD].addresses.iter_mut() {
        a.weight = 0;
    }
    assert_eq!(record_status(&snap(m, &[]), RECORD), RecordStatus::FailSafe);
}
