//! Hand-built `sextant_core::Model`s for the core, DNS and MEP tests.
//!
//! [`ModelBuilder`] adds sites, services, vservers, domains and zones with
//! the defaults every test used (HTTP services on port 80 at site 0, zone
//! `example.com` served by `ns1.example.com`); [`www_model`] is the most
//! common model: one vserver on `www.example.com`.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use sextant_core::{
    Binding, Domain, LbMethod, LdnsProbe, LoadSource, Model, Monitor, RttCell, RttTable, Service,
    ServiceId, ServiceProtocol, ServiceState, Site, SiteId, Snapshot, Soa, VServer, VServerId,
    Zone,
};

/// Parses an address; panics on a typo.
pub fn ip(s: &str) -> IpAddr {
    s.parse()
        .unwrap_or_else(|e| panic!("bad IP address {s:?}: {e}"))
}

/// An HTTP service on port 80 at site 0, without monitors.
pub fn service(name: &str, ip: IpAddr) -> Service {
    Service {
        name: name.to_string(),
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
        load_source: LoadSource::Monitors,
        cname: None,
        health_monitor: true,
    }
}

/// The SOA of `example.com`: `ns1.example.com`, `hostmaster.example.com`,
/// and the given timers.
pub fn soa(serial: u32, refresh: u32, retry: u32, expire: u32, minimum: u32, ttl: u32) -> Soa {
    Soa {
        origin_server: "ns1.example.com".into(),
        contact: "hostmaster.example.com".into(),
        serial,
        refresh,
        retry,
        expire,
        minimum,
        ttl,
    }
}

/// A site for [`ModelBuilder::add_linked_sites`]: its parent and backup
/// parents by name.
#[derive(Clone, Debug)]
pub struct LinkedSite<'a> {
    pub name: &'a str,
    pub ip: IpAddr,
    pub parent: Option<&'a str>,
    pub backups: &'a [&'a str],
}

/// Builds a [`Model`] piece by piece; every `add_*` returns the id of
/// what it added.
#[derive(Debug, Default)]
pub struct ModelBuilder {
    pub model: Model,
}

impl ModelBuilder {
    /// An empty model.
    pub fn new() -> ModelBuilder {
        ModelBuilder::default()
    }

    /// A model with one site, `site1` at 10.0.0.1, that is the local site.
    pub fn local_site1() -> ModelBuilder {
        let mut b = ModelBuilder::new();
        let s = b.add_site("site1", ip("10.0.0.1"));
        b.model.set_local_site(s);
        b
    }

    pub fn add_site(&mut self, name: &str, ip: IpAddr) -> SiteId {
        self.model.sites.push(Site::new(name, ip))
    }

    /// Adds the sites of a parent-child or mesh topology, in order, then
    /// links each to its parent and backup parents by name (all of which
    /// must be among the sites).
    pub fn add_linked_sites(&mut self, sites: &[LinkedSite<'_>]) {
        let added: Vec<SiteId> = sites.iter().map(|s| self.add_site(s.name, s.ip)).collect();
        let id = |m: &Model, name: &str| {
            m.site_by_name(name)
                .unwrap_or_else(|| panic!("no site {name} in the model"))
        };
        for (s, added) in sites.iter().zip(added) {
            let parent = s.parent.map(|p| id(&self.model, p));
            let backups = s.backups.iter().map(|b| id(&self.model, b)).collect();
            let site = &mut self.model.sites[added];
            site.parent = parent;
            site.backup_parents = backups;
        }
    }

    /// Makes the site `name` the local one.
    pub fn set_local(&mut self, name: &str) {
        let id = self
            .model
            .site_by_name(name)
            .unwrap_or_else(|| panic!("no site {name} in the model"));
        self.model.set_local_site(id);
    }

    /// Adds [`service`]`(name, ip)`.
    pub fn add_service(&mut self, name: &str, ip: IpAddr) -> ServiceId {
        self.push_service(service(name, ip))
    }

    /// Adds [`service`]`(name, ip)` at site `site`.
    pub fn add_service_at(&mut self, name: &str, ip: IpAddr, site: SiteId) -> ServiceId {
        self.push_service(Service {
            site,
            ..service(name, ip)
        })
    }

    pub fn push_service(&mut self, s: Service) -> ServiceId {
        self.model.services.push(s)
    }

    /// Adds an HTTP vserver with `method` and bindings (service, weight);
    /// returns it for further settings.
    pub fn add_vserver(
        &mut self,
        name: &str,
        method: LbMethod,
        bindings: impl IntoIterator<Item = (ServiceId, u32)>,
    ) -> &mut VServer {
        let mut vs = VServer::new(name, ServiceProtocol::Http);
        vs.method = method;
        vs.bindings = bindings
            .into_iter()
            .map(|(service, weight)| Binding { service, weight })
            .collect();
        let id = self.model.vservers.push(vs);
        &mut self.model.vservers[id]
    }

    /// Adds a GSLB domain of vserver `vserver`.
    pub fn add_domain(&mut self, name: &str, vserver: VServerId, ttl: u32) {
        self.model.domains.push(Domain {
            name: name.into(),
            vserver,
            ttl,
            backup_ip: None,
        });
    }

    /// Adds a zone with its SOA and name servers.
    pub fn add_zone(&mut self, apex: &str, soa: Soa, ns: &[&str], ns_ttl: u32) {
        self.model.zones.push(Zone {
            apex: apex.into(),
            soa,
            ns: ns.iter().map(|n| n.to_string()).collect(),
            ns_ttl,
        });
    }

    pub fn build(self) -> Model {
        self.model
    }
}

/// One local site (`site1`, 10.0.0.1), zone `example.com` (NS
/// `ns1.example.com`), and one vserver `vs` with `method` on
/// `www.example.com` (TTL 30) over the given services (name, ip, weight).
pub fn www_model(services: &[(&str, &str, u32)], method: LbMethod) -> Model {
    let mut b = ModelBuilder::local_site1();
    let bindings: Vec<(ServiceId, u32)> = services
        .iter()
        .map(|&(name, addr, weight)| (b.add_service(name, ip(addr)), weight))
        .collect();
    b.add_vserver("vs", method, bindings);
    b.add_domain("www.example.com", VServerId::new(0), 30);
    b.add_zone(
        "example.com",
        soa(1, 3600, 3, 3600, 5, 3600),
        &["ns1.example.com"],
        3600,
    );
    b.build()
}

/// A local site `local` (127.0.0.1) with `n` services (`svc0`, ... on
/// 10.0.0.0/8), each bound to `monitor`, the model's only monitor.
pub fn monitored_site(n: usize, monitor: Monitor) -> Model {
    let mut b = ModelBuilder::new();
    b.add_site("local", ip("127.0.0.1"));
    b.set_local("local");
    let monitor = b.model.monitors.push(monitor);
    for i in 0..n {
        let mut s = service(
            &format!("svc{i}"),
            IpAddr::from((0x0a00_0000 + i as u32).to_be_bytes()),
        );
        s.monitors = vec![monitor];
        b.push_service(s);
    }
    b.build()
}

/// A snapshot of generation 1 of `m`.
pub fn snapshot(m: Model) -> Snapshot {
    Snapshot::new(Arc::new(m), 1)
}

/// `s` with the services in `down` DOWN, all others UP.
pub fn with_down(s: &Snapshot, down: &[ServiceId]) -> Snapshot {
    let states: Vec<_> = s
        .model()
        .services
        .ids()
        .map(|i| ServiceState {
            up: !down.contains(&i),
        })
        .collect();
    s.with_states(states.into())
}

/// An RTT measurement of `ms` milliseconds (by DNS over UDP, at time 0).
pub fn rtt_ms(ms: u64) -> RttCell {
    RttCell {
        rtt: Duration::from_millis(ms),
        kind: Some(LdnsProbe::DnsUdp),
        at: Duration::ZERO,
        path: None,
    }
}

/// An RTT table for `sites` sites: one row per (LDNS group, each site's
/// RTT in ms or `None` for unknown).
pub fn rtt_table(sites: usize, rows: &[(IpAddr, &[Option<u64>])]) -> Arc<RttTable> {
    let mut b = RttTable::builder(sites);
    for (group, cells) in rows {
        let cells: Vec<Option<RttCell>> = cells.iter().map(|c| c.map(rtt_ms)).collect();
        b.row(*group, &cells);
    }
    Arc::new(b.build())
}
