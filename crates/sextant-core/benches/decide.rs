//! How long one decision takes on a large configuration: 10k domains, each
//! with its own vserver of 10 services (100k services in all).

use std::hint::black_box;
use std::net::IpAddr;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use sextant_core::*;

fn big_model(domains: usize, per_vserver: usize) -> Model {
    let mut m = Model::default();
    m.sites
        .push(Site::new("site1", IpAddr::from([10, 0, 0, 1])));
    m.set_local_site(0);
    for d in 0..domains {
        let mut vs = VServer::new(format!("vs{d}"), ServiceProtocol::Http);
        vs.method = LbMethod::RoundRobin;
        for k in 0..per_vserver {
            let id = m.services.len() as u32;
            m.services.push(Service {
                name: format!("svc{d}-{k}"),
                ip: IpAddr::from((0x0a00_0000u32 + id).to_be_bytes()),
                port: 80,
                protocol: ServiceProtocol::Http,
                site: 0,
                public_ip: None,
                public_port: None,
                max_clients: 0,
                monitors: vec![],
                load_source: LoadSource::Monitors,
            });
            vs.bindings.push(Binding {
                service: id,
                weight: 1 + (k as u32 % 3),
            });
        }
        m.vservers.push(vs);
        m.domains.push(Domain {
            name: format!("app{d}.example.com"),
            vserver: d as u32,
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

fn bench(c: &mut Criterion) {
    let mut model = big_model(10_000, 10);
    let hash_vs = 4242;
    model.vservers[hash_vs].method = LbMethod::SourceIpHash;
    let least_vs = 777;
    model.vservers[least_vs].method = LbMethod::LeastConnection;
    let snap = Snapshot::new(Arc::new(model), 1);
    // A third of the services DOWN, so selection has to skip.
    let states: Vec<_> = (0..snap.model().services.len())
        .map(|i| ServiceState { up: i % 3 != 0 })
        .collect();
    // Connection counts for every service, so LEASTCONNECTION decides.
    let metrics: Vec<_> = (0..snap.model().services.len() as u64)
        .map(|i| ServiceMetrics {
            connections: Some(i.wrapping_mul(0x9e37_79b9) % 97),
            ..ServiceMetrics::default()
        })
        .collect();
    let snap = snap.with_states(states.into()).with_metrics(metrics.into());
    let mut cursor = Cursor::new(1);
    let mut out = AnswerBuf::default();
    let source = IpAddr::from([198, 51, 100, 7]);

    let mut group = c.benchmark_group("decide");
    for (label, name, qtype) in [
        ("round_robin_A", "app1234.example.com", QueryType::A),
        ("source_ip_hash_A", "app4242.example.com", QueryType::A),
        ("least_connection_A", "app777.example.com", QueryType::A),
        ("nxdomain", "nothing.example.com", QueryType::A),
        ("refused", "www.example.org", QueryType::A),
    ] {
        group.bench_function(label, |b| {
            b.iter(|| {
                let q = Query {
                    name: black_box(name),
                    qtype,
                    source,
                    ecs: None,
                };
                black_box(decide(
                    &snap,
                    &q,
                    &mut cursor,
                    &NoSessions,
                    &mut out,
                    &mut NoTrace,
                ))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
