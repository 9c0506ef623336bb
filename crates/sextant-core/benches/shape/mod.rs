//! The benchmark configuration shared by the decision benches: 10,000
//! domains, each with its own vserver of 10 weighted services over three
//! sites, a third of the services DOWN; RTT tables of any size and query
//! sources spread over them in three ways.

#![allow(dead_code)]

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use sextant_core::*;
use sextant_test_support::model::rtt_ms;

/// The services' sites: service `k` of a vserver is at site `k % SITES`.
pub const SITES: usize = 3;

pub fn big_model(domains: usize, per_vserver: usize) -> Model {
    let mut m = Model::default();
    for s in 0..SITES {
        m.sites.push(Site::new(
            format!("site{}", s + 1),
            IpAddr::from([10, 0, s as u8, 1]),
        ));
    }
    m.set_local_site(SiteId::new(0));
    for d in 0..domains {
        let mut vs = VServer::new(format!("vs{d}"), ServiceProtocol::Http);
        vs.method = LbMethod::RoundRobin;
        for k in 0..per_vserver {
            let id = m.services.next_id();
            m.services.push(Service {
                name: format!("svc{d}-{k}"),
                ip: IpAddr::from((0x0a00_0000u32 + id.raw()).to_be_bytes()),
                port: 80,
                protocol: ServiceProtocol::Http,
                site: SiteId::from_index(k % SITES),
                public_ip: None,
                public_port: None,
                max_clients: 0,
                monitors: vec![],
                monitor_weights: vec![],
                mon_threshold: 0,
                load_source: LoadSource::Monitors,
                cname: None,
                health_monitor: true,
            });
            vs.bindings.push(Binding {
                service: id,
                weight: 1 + (k as u32 % 3),
            });
        }
        let vserver = m.vservers.push(vs);
        m.domains.push(Domain {
            name: format!("app{d}.example.com"),
            vserver,
            ttl: 30,
            backup_ip: None,
        });
    }
    m.zones.push(Zone {
        apex: "example.com".into(),
        soa: Soa {
            origin_server: "ns1.example.com".into(),
            contact: "hostmaster.example.com".into(),
            serial: 1,
            refresh: 3600,
            retry: 3,
            expire: 3600,
            minimum: 5,
            ttl: 3600,
        },
        ns: vec!["ns1.example.com".into()],
        ns_ttl: 3600,
    });
    m
}

/// A third of the services DOWN, so selection has to skip; connection
/// counts for every service, so LEASTCONNECTION decides.
pub fn health(snap: Snapshot) -> Snapshot {
    let states: Vec<_> = (0..snap.model().services.len())
        .map(|i| ServiceState { up: i % 3 != 0 })
        .collect();
    let metrics: Vec<_> = (0..snap.model().services.len() as u64)
        .map(|i| ServiceMetrics {
            connections: Some(i.wrapping_mul(0x9e37_79b9) % 97),
            ..ServiceMetrics::default()
        })
        .collect();
    snap.with_states(states.into()).with_metrics(metrics.into())
}

/// The first LDNS group of the RTT table; row `r` is this plus `r`.
pub const LDNS_BASE: u32 = 0x6440_0000; // 100.64.0.0

/// An RTT table of `rows` LDNS (/32 groups from [`LDNS_BASE`]) × the
/// sites: 1..=200 ms per cell; one in 16 of the last site's cells unknown.
pub fn rtt_rows(rows: u32) -> Arc<RttTable> {
    let mut b = RttTable::builder(SITES);
    for r in 0..rows {
        let cells: [Option<RttCell>; SITES] = std::array::from_fn(|s| {
            let h = (u64::from(r) * SITES as u64 + s as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            (s + 1 < SITES || h >> 60 != 0).then(|| rtt_ms(1 + (h >> 32) % 200))
        });
        b.row(IpAddr::from((LDNS_BASE + r).to_be_bytes()), &cells);
    }
    Arc::new(b.build())
}

/// The source of query `i`: a row of a `rows`-row table, spread so that
/// consecutive queries hit rows far apart.
pub fn spread_source(i: u64, rows: u32) -> IpAddr {
    let r = (i.wrapping_mul(0x9e37_79b1) % u64::from(rows)) as u32;
    IpAddr::from((LDNS_BASE + r).to_be_bytes())
}

/// The source of query `i` when a few resolvers send most queries, as on
/// the Internet: row `rows^u - 1` for `u` spread over [0, 1) (log-uniform,
/// about Zipf's law: the first 1% of rows get half the queries).
pub fn skewed_source(i: u64, rows: u32) -> IpAddr {
    let u = (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 11) as f64 / (1u64 << 53) as f64;
    let r = (f64::from(rows).powf(u) as u32)
        .saturating_sub(1)
        .min(rows - 1);
    IpAddr::from((LDNS_BASE + r).to_be_bytes())
}

/// The domain of an RTT vserver (`-tolerance 20`) of the model.
pub const RTT_NAME: &str = "app2024.example.com";
/// The domain of a weighted round-robin vserver of the same shape and
/// health (the three services at site2 DOWN, 7 of 10 UP in both).
pub const WRR_NAME: &str = "app2027.example.com";

/// The model with [`RTT_NAME`]'s vserver on the RTT method; no RTT table.
pub fn rtt_snapshot() -> Snapshot {
    let mut model = big_model(10_000, 10);
    let rtt_vs = VServerId::new(2024);
    model.vservers[rtt_vs].method = LbMethod::Rtt;
    model.vservers[rtt_vs].rtt_tolerance = Duration::from_millis(20);
    assert_eq!(
        model.vservers[VServerId::new(2027)].method,
        LbMethod::RoundRobin
    );
    health(Snapshot::new(Arc::new(model), 1))
}

/// The median of a set of round timings (sorts them).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The smallest of a set of round timings.
pub fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

/// The largest of a set of round timings.
pub fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::max)
}
