//! A small hand-built model shared by the tests and the fuzz target.
//!
//! Zone example.com (SOA + two NS) with four GSLB domains:
//! - www.example.com: round robin over one IPv4 and one IPv6 service
//! - big.example.com: multi-IP response over 40 IPv4 services (> 512 octets)
//! - ecs.example.com: source IP hash using the ECS address, two services
//! - sticky.example.com: round robin with source-IP persistence (/24)
//! - huge.example.com: multi-IP response over 80 IPv4 services (> 1232 octets)

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use sextant_core::{
    Binding, Domain, LbMethod, Model, Persistence, Service, ServiceId, ServiceProtocol, Site,
    SiteId, Snapshot, Soa, VServer, VServerId, Zone,
};

pub const WWW_V4: [u8; 4] = [192, 0, 2, 10];
pub const WWW_V6: &str = "2001:db8::10";
pub const BIG_SERVICES: usize = 40;
/// Services of `huge.example.com`: 80 A records (16 octets each) do not
/// fit 1232 octets, so UDP truncates whatever EDNS size is offered.
pub const HUGE_SERVICES: usize = 80;

fn service(name: &str, ip: IpAddr) -> Service {
    Service {
        name: name.into(),
        ip,
        port: 80,
        protocol: ServiceProtocol::Http,
        site: SiteId::new(0),
        public_ip: None,
        public_port: None,
        max_clients: 0,
        monitors: Vec::new(),
        monitor_weights: Vec::new(),
        mon_threshold: 0,
        load_source: Default::default(),
        cname: None,
        health_monitor: true,
    }
}

fn vserver(name: &str, method: LbMethod, services: std::ops::Range<usize>) -> VServer {
    let mut v = VServer::new(name, ServiceProtocol::Http);
    v.method = method;
    v.bindings = services
        .map(|s| Binding {
            service: ServiceId::from_index(s),
            weight: 1,
        })
        .collect();
    v
}

pub fn model() -> Model {
    let mut m = Model::default();
    m.sites.push(Site::new("dc1", IpAddr::from([10, 0, 0, 1])));

    m.services.push(service("www-v4", IpAddr::from(WWW_V4)));
    m.services.push(service("www-v6", WWW_V6.parse().unwrap()));
    for i in 0..BIG_SERVICES {
        m.services.push(service(
            &format!("big-{i}"),
            IpAddr::from([198, 51, 100, 1 + i as u8]),
        ));
    }
    let ecs_first = m.services.len();
    m.services
        .push(service("ecs-1", IpAddr::from([203, 0, 113, 1])));
    m.services
        .push(service("ecs-2", IpAddr::from([203, 0, 113, 2])));
    let sticky_first = m.services.len();
    m.services
        .push(service("sticky-1", IpAddr::from([203, 0, 113, 11])));
    m.services
        .push(service("sticky-2", IpAddr::from([203, 0, 113, 12])));

    let huge_first = m.services.len();
    for i in 0..HUGE_SERVICES {
        m.services.push(service(
            &format!("huge-{i}"),
            IpAddr::from([198, 51, 101, 1 + i as u8]),
        ));
    }

    m.vservers
        .push(vserver("vs-www", LbMethod::RoundRobin, 0..2));
    let mut big = vserver("vs-big", LbMethod::RoundRobin, 2..2 + BIG_SERVICES);
    big.multi_ip_response = true;
    m.vservers.push(big);
    let mut ecs = vserver("vs-ecs", LbMethod::SourceIpHash, ecs_first..ecs_first + 2);
    ecs.ecs = true;
    m.vservers.push(ecs);
    let mut sticky = vserver(
        "vs-sticky",
        LbMethod::RoundRobin,
        sticky_first..sticky_first + 2,
    );
    sticky.persistence = Some(Persistence {
        timeout: Duration::from_secs(60),
        v4_mask: 24,
        v6_mask: 64,
    });
    m.vservers.push(sticky);
    let mut huge = vserver(
        "vs-huge",
        LbMethod::RoundRobin,
        huge_first..huge_first + HUGE_SERVICES,
    );
    huge.multi_ip_response = true;
    m.vservers.push(huge);

    for (name, vs, ttl) in [
        ("www.example.com", 0, 30),
        ("big.example.com", 1, 60),
        ("ecs.example.com", 2, 20),
        ("sticky.example.com", 3, 10),
        ("huge.example.com", 4, 60),
    ] {
        m.domains.push(Domain {
            name: name.into(),
            vserver: VServerId::new(vs),
            ttl,
            backup_ip: None,
        });
    }
    m.zones.push(Zone {
        apex: "example.com".into(),
        soa: Soa {
            origin_server: "ns1.example.com".into(),
            contact: "hostmaster.example.com".into(),
            serial: 2024010101,
            refresh: 3600,
            retry: 600,
            expire: 86400,
            minimum: 300,
            ttl: 3600,
        },
        ns: vec!["ns1.example.com".into(), "ns2.example.net".into()],
        ns_ttl: 86400,
    });
    m
}

pub fn snapshot() -> Snapshot {
    Snapshot::new(Arc::new(model()), 1)
}
