//! The immutable view the decision core answers from.
//!
//! The edges publish a new `Snapshot` whenever configuration or health
//! changes (one `Arc` swapped atomically), so a query always sees one
//! consistent state. Lookup tables derived from the configuration are built
//! once per configuration and shared between snapshots that differ only in
//! health.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::admin::{AdminState, AdminTable};
use crate::dc::{DcOrder, DcOrders, DcRecordId};
use crate::id::IdVec;
use crate::load::{ServiceMetrics, SiteFigures};
use crate::location::LocationCode;
use crate::location_db::{Place, PlaceId};
use crate::model::{DomainId, Model, ServiceId, SiteId, VServerId, ZoneId};
use crate::policy::{DnsActionId, DnsActionKind};
use crate::records::RecordTable;
use crate::rtt::RttTable;
use crate::status::StatusTable;

/// The health the core sees for one service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceState {
    pub up: bool,
}

impl Default for ServiceState {
    /// A service nobody has said anything about is UP.
    fn default() -> Self {
        ServiceState { up: true }
    }
}

/// FNV-1a: fast for short DNS names and needs no random seed.
#[derive(Default)]
pub struct FnvHasher(u64);

impl Hasher for FnvHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// A map hashed with [`FnvHasher`], for keys that are names or ids from the
/// configuration (the operator's own, so no collision attack to fear).
pub type FnvMap<K, V> = HashMap<K, V, BuildHasherDefault<FnvHasher>>;

/// The location databases whose client lookups a batch prefetches: from
/// 2^20 intervals (8 MiB of IPv4 slots, a city-level GeoIP database),
/// where a lookup waits for memory. Below that the table is in L2 or L3
/// and the hint costs more than it saves: at 100,000 ranges it took 3 % off
/// a static-proximity answer and added 7 % of instructions to every other
/// answer (`benches/location_ratio.rs`, docs/performance.md).
const PREFETCH_MIN_INTERVALS: usize = 1 << 20;

/// Per-configuration tables, shared by every snapshot of one configuration.
#[derive(Debug)]
struct Compiled {
    model: Arc<Model>,
    /// Each GSLB domain with its closest enclosing zone, so that a query for
    /// a domain finds both with one lookup (the zone walk costs a hash
    /// lookup per label: about 1 % of a query's time in the peers profile).
    domains: FnvMap<Box<str>, (DomainId, Option<ZoneId>)>,
    zones: FnvMap<Box<str>, ZoneId>,
    /// Names of the static records (looked up only after the domains).
    records: RecordTable,
    /// Per vserver: how many round-robin turns have been taken. Shared by
    /// every worker so consecutive queries rotate, whichever thread answers.
    turns: IdVec<VServerId, AtomicU64>,
    /// Service names, lower case, for the API and reloads (never scanned).
    services_by_name: FnvMap<Box<str>, ServiceId>,
    /// Per service: its place in the location database (by answer address).
    service_places: IdVec<ServiceId, Option<PlaceId>>,
    /// Per vserver, per binding: the site of the bound service, flat
    /// (`binding_site_start[v]..` for vserver `v`), so that the RTT method
    /// reads one short array instead of every bound service's record.
    binding_sites: Box<[SiteId]>,
    binding_site_start: IdVec<VServerId, u32>,
    /// Per vserver that uses the RTT method and has at most 64 bindings:
    /// its sites, each with the bit mask of its bindings there, flat
    /// (`site_group_start[v]..site_group_start[v + 1]`), so that the
    /// method reads one RTT per site rather than one per binding.
    site_groups: Box<[SiteBindings]>,
    site_group_start: Box<[u32]>,
    /// Datacenter-mode records by name, their round-robin state and the
    /// places of their addresses.
    dc: DcTables,
    /// Per DNS action (by id): its preferred locations as the location
    /// database's qualifier ids (empty for other actions).
    preferred_codes: IdVec<DnsActionId, Box<[LocationCode]>>,
    /// Whether any bound DNS policy looks at the client's location.
    policies_need_location: bool,
    /// Whether an answer may look the client's location up (a policy or a
    /// vserver's method or backup method needs it), so that a batch
    /// prefetches it.
    uses_client_location: bool,
    /// This node is a child site: only parents answer DNS.
    child: bool,
}

/// Per-configuration tables of the datacenter-mode records.
#[derive(Debug, Default)]
struct DcTables {
    by_name: FnvMap<Box<str>, DcRecordId>,
    /// Per record: round-robin turns taken (shared by every worker).
    turns: IdVec<DcRecordId, AtomicU64>,
    /// Per record, per address: its place in the location database.
    places: IdVec<DcRecordId, Box<[Option<PlaceId>]>>,
}

impl DcTables {
    fn new(model: &Model) -> Self {
        let records = &model.dc_records;
        DcTables {
            by_name: records
                .iter_enumerated()
                .map(|(i, r)| (r.name.clone().into_boxed_str(), i))
                .collect(),
            turns: records.iter().map(|_| AtomicU64::new(0)).collect(),
            places: records
                .iter()
                .map(|r| {
                    r.addresses
                        .iter()
                        .map(|a| model.locations.lookup_id(a.ip))
                        .collect()
                })
                .collect(),
        }
    }
}

/// The site of a binding to a service the model does not have: an id no
/// table reaches (see [`IdVec::push`]), so every lookup by it finds nothing.
const NO_SITE: SiteId = SiteId::new(u32::MAX);

/// The bindings of one vserver at one site.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SiteBindings {
    pub site: SiteId,
    /// Bit `i`: binding `i` is at this site.
    pub bindings: u64,
}

/// Configuration plus health at one instant.
#[derive(Debug, Clone)]
pub struct Snapshot {
    compiled: Arc<Compiled>,
    states: Arc<[ServiceState]>,
    /// Per service: its load figures (all `None` until an edge says more).
    metrics: Arc<[ServiceMetrics]>,
    /// Per service: why it has its state (empty until an edge says).
    status: StatusTable,
    /// Round-trip times from the sites to the LDNS that query (RTT method).
    rtt: Arc<RttTable>,
    /// Datacenter mode: each record's ranking and which sites this node
    /// reaches, as the engine last worked them out.
    dc_orders: Arc<DcOrders>,
    /// Per site (by id): its figures as last measured (this site) or
    /// reported over metric exchange.
    site_figures: Arc<[Option<SiteFigures>]>,
    /// This node's DNS listeners on VRRP VIPs, and whether each answers
    /// its self-probe (VRRP tracks them).
    listeners: Arc<[(std::net::SocketAddr, bool)]>,
    /// Per site (by id): its metric exchange state as the engine has it.
    peer_links: Arc<[PeerLink]>,
    /// What the operator disabled or drained (runtime maintenance).
    admin: Arc<AdminTable>,
    generation: u64,
}

/// Another site's metric exchange state as the state engine has it: the
/// state its services were decided with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerLink {
    pub up: bool,
    /// Reached only through this parent's relay.
    pub via: Option<Arc<str>>,
}

/// The zone of `name` (lower case) in `zones`: its longest apex suffix.
fn closest_zone(zones: &FnvMap<Box<str>, ZoneId>, name: &str) -> Option<ZoneId> {
    let mut rest = name;
    loop {
        if let Some(z) = zones.get(rest) {
            return Some(*z);
        }
        match rest.find('.') {
            Some(dot) => rest = &rest[dot + 1..],
            None => return zones.get("").copied(),
        }
    }
}

impl Snapshot {
    /// Builds the lookup tables for `model`; every service starts UP.
    pub fn new(model: Arc<Model>, generation: u64) -> Self {
        let zones: FnvMap<Box<str>, ZoneId> = model
            .zones
            .iter_enumerated()
            .map(|(i, z)| (z.apex.clone().into_boxed_str(), i))
            .collect();
        let domains = model
            .domains
            .iter_enumerated()
            .map(|(i, d)| {
                let zone = closest_zone(&zones, &d.name);
                (d.name.clone().into_boxed_str(), (i, zone))
            })
            .collect();
        let records = RecordTable::new(&model, |name| closest_zone(&zones, name));
        let states = vec![ServiceState::default(); model.services.len()].into();
        let metrics = vec![ServiceMetrics::NONE; model.services.len()].into();
        let turns = model.vservers.iter().map(|_| AtomicU64::new(0)).collect();
        let child = model
            .local_site
            .and_then(|s| model.sites.get(s))
            .is_some_and(|s| s.parent.is_some());
        let mut binding_site_start = IdVec::new();
        let mut binding_sites = Vec::new();
        for vs in &model.vservers {
            binding_site_start.push(binding_sites.len() as u32);
            binding_sites.extend(
                vs.bindings
                    .iter()
                    .map(|b| model.services.get(b.service).map_or(NO_SITE, |s| s.site)),
            );
        }
        let mut site_group_start = Vec::with_capacity(model.vservers.len() + 1);
        let mut site_groups: Vec<SiteBindings> = Vec::new();
        for (v, vs) in model.vservers.iter_enumerated() {
            site_group_start.push(site_groups.len() as u32);
            if !vs.uses_rtt() || vs.bindings.len() > 64 {
                continue;
            }
            let first = site_groups.len();
            let start = binding_site_start[v] as usize;
            for (i, site) in binding_sites[start..start + vs.bindings.len()]
                .iter()
                .enumerate()
            {
                match site_groups[first..].iter_mut().find(|g| g.site == *site) {
                    Some(g) => g.bindings |= 1 << i,
                    None => site_groups.push(SiteBindings {
                        site: *site,
                        bindings: 1 << i,
                    }),
                }
            }
        }
        site_group_start.push(site_groups.len() as u32);
        let service_places = model
            .services
            .iter()
            .map(|s| model.locations.lookup_id(s.answer_ip()))
            .collect();
        let services_by_name = model
            .services
            .iter_enumerated()
            .map(|(i, s)| (s.name.to_ascii_lowercase().into_boxed_str(), i))
            .collect();
        let dc = DcTables::new(&model);
        let policies_need_location = model.dns_global_bindings.iter().any(|b| {
            model
                .dns_policies
                .get(b.policy)
                .is_some_and(|p| p.rule.needs_location())
        });
        let preferred_codes = model
            .dns_actions
            .iter()
            .map(|a| match &a.kind {
                DnsActionKind::PreferredLocations(list) => {
                    list.iter().map(|l| model.locations.encode(l)).collect()
                }
                _ => Box::default(),
            })
            .collect();
        // A smaller table stays in the cache: prefetching it would mostly
        // add instructions.
        let uses_client_location = model.locations.intervals() >= PREFETCH_MIN_INTERVALS
            && (policies_need_location
                || !model.dc_records.is_empty()
                || model.vservers.iter().any(|v| {
                    v.method == crate::model::LbMethod::StaticProximity
                        || v.backup_method == Some(crate::model::LbMethod::StaticProximity)
                }));
        Snapshot {
            compiled: Arc::new(Compiled {
                model,
                domains,
                zones,
                records,
                turns,
                service_places,
                binding_sites: binding_sites.into(),
                binding_site_start,
                site_groups: site_groups.into(),
                site_group_start: site_group_start.into(),
                services_by_name,
                dc,
                preferred_codes,
                policies_need_location,
                uses_client_location,
                child,
            }),
            states,
            metrics,
            status: StatusTable::default(),
            rtt: Arc::default(),
            dc_orders: Arc::default(),
            site_figures: Arc::default(),
            listeners: Arc::default(),
            peer_links: Arc::default(),
            admin: Arc::default(),
            generation,
        }
    }

    /// The same configuration and load figures with other service states.
    ///
    /// `states` must have one entry per service of the model.
    pub fn with_states(&self, states: Arc<[ServiceState]>) -> Self {
        debug_assert_eq!(states.len(), self.compiled.model.services.len());
        Snapshot {
            states,
            ..self.clone()
        }
    }

    /// The same configuration and service states with other load figures.
    ///
    /// `metrics` has one entry per service of the model, indexed by
    /// `ServiceId`; a missing entry reads as "no figures".
    pub fn with_metrics(&self, metrics: Arc<[ServiceMetrics]>) -> Self {
        debug_assert_eq!(metrics.len(), self.compiled.model.services.len());
        Snapshot {
            metrics,
            ..self.clone()
        }
    }

    /// The same configuration with other health: states, load figures and
    /// the reasons behind them, all from one moment.
    pub fn with_health(
        &self,
        states: Arc<[ServiceState]>,
        metrics: Arc<[ServiceMetrics]>,
        status: StatusTable,
    ) -> Self {
        debug_assert_eq!(states.len(), self.compiled.model.services.len());
        debug_assert_eq!(metrics.len(), self.compiled.model.services.len());
        Snapshot {
            states,
            metrics,
            status,
            ..self.clone()
        }
    }

    /// The same, with the datacenter rankings the engine worked out.
    pub fn with_dc_orders(&self, dc_orders: Arc<DcOrders>) -> Self {
        Snapshot {
            dc_orders,
            ..self.clone()
        }
    }

    /// The same, with every site's figures as the engine knows them.
    pub fn with_site_figures(&self, site_figures: Arc<[Option<SiteFigures>]>) -> Self {
        Snapshot {
            site_figures,
            ..self.clone()
        }
    }

    /// The same, with every site's metric exchange state.
    pub fn with_peer_links(&self, peer_links: Arc<[PeerLink]>) -> Self {
        Snapshot {
            peer_links,
            ..self.clone()
        }
    }

    /// The same, with the operator's enable/disable/drain marks.
    pub fn with_admin(&self, admin: Arc<AdminTable>) -> Self {
        Snapshot {
            admin,
            ..self.clone()
        }
    }

    /// The operator's marks (runtime maintenance).
    pub fn admin(&self) -> &Arc<AdminTable> {
        &self.admin
    }

    /// Whether a new answer may name the service: UP and enabled (neither
    /// it nor its site disabled, and it is not draining).
    #[inline]
    pub fn answers(&self, service: ServiceId) -> bool {
        self.is_up(service) && self.admin.service(service) == AdminState::Enabled
    }

    /// Site `site`'s metric exchange state (`None`: never heard of).
    pub fn peer_link(&self, site: SiteId) -> Option<&PeerLink> {
        self.peer_links.get(site.index())
    }

    /// The same, with the self-probe verdicts of this node's listeners.
    pub fn with_listeners(&self, listeners: Arc<[(std::net::SocketAddr, bool)]>) -> Self {
        Snapshot {
            listeners,
            ..self.clone()
        }
    }

    /// Whether this node's DNS listener on `addr` answers its self-probe
    /// (a listener never probed counts as answering).
    pub fn listener_up(&self, addr: std::net::SocketAddr) -> bool {
        self.listeners
            .iter()
            .find(|(a, _)| *a == addr)
            .is_none_or(|(_, up)| *up)
    }

    /// Site `site`'s figures, if it measured or reported any.
    pub fn site_figures(&self, site: SiteId) -> Option<SiteFigures> {
        self.site_figures.get(site.index()).copied().flatten()
    }

    pub fn dc_orders(&self) -> &Arc<DcOrders> {
        &self.dc_orders
    }

    /// The datacenter-mode record of a lower-case name.
    pub fn find_dc_record(&self, name: &str) -> Option<DcRecordId> {
        if self.compiled.dc.by_name.is_empty() {
            return None;
        }
        self.compiled.dc.by_name.get(name).copied()
    }

    /// Record `r`'s ranking of its groups, if one was worked out.
    pub fn dc_order(&self, r: DcRecordId) -> Option<&DcOrder> {
        self.dc_orders.orders.get(r)?.as_ref()
    }

    /// Whether this node reaches `site` (metric exchange UP; the local
    /// site, and any site not reported, count as reachable).
    pub fn site_reachable(&self, site: SiteId) -> bool {
        self.dc_orders
            .site_reachable
            .get(site)
            .copied()
            .unwrap_or(true)
    }

    pub(crate) fn dc_turn(&self, r: DcRecordId, peek: bool) -> u64 {
        match self.compiled.dc.turns.get(r) {
            Some(t) if peek => t.load(Ordering::Relaxed),
            Some(t) => t.fetch_add(1, Ordering::Relaxed),
            None => 0,
        }
    }

    /// The location of address `a` of record `r`, if known.
    pub fn dc_address_place(&self, r: DcRecordId, a: usize) -> Option<&Place> {
        let id = (*self.compiled.dc.places.get(r)?.get(a)?)?;
        Some(self.compiled.model.locations.place(id))
    }

    /// The same configuration and health with another RTT table.
    pub fn with_rtt(&self, rtt: Arc<RttTable>) -> Self {
        Snapshot {
            rtt,
            ..self.clone()
        }
    }

    /// The RTTs from the sites to the LDNS that queried (RTT method).
    pub fn rtt(&self) -> &Arc<RttTable> {
        &self.rtt
    }

    /// The LDNS group of a query's source address (`-ldnsMask`,
    /// `-v6ldnsMaskLen`): the key of the RTT table.
    pub fn ldns_group(&self, source: IpAddr) -> IpAddr {
        let p = &self.compiled.model.params;
        crate::select::mask_ip(source, p.ldns_v4_mask, p.ldns_v6_mask)
    }

    /// Prefetches what answering a query from `source` will look up in
    /// the large tables: the RTT row of its LDNS group when RTT is in use
    /// (see [`RttTable::prefetch`]), and its place in the location
    /// database when an answer may need the client's location (see
    /// [`LocationDb::prefetch`](crate::LocationDb::prefetch)); cheap and
    /// harmless otherwise.
    #[inline]
    pub fn prefetch_ldns(&self, source: IpAddr) {
        if !self.rtt.is_empty() {
            self.rtt.prefetch(self.ldns_group(source));
        }
        if self.compiled.uses_client_location {
            self.compiled.model.locations.prefetch(source);
        }
    }

    /// The same tables and health under another generation number.
    pub fn with_generation(&self, generation: u64) -> Self {
        Snapshot {
            generation,
            ..self.clone()
        }
    }

    /// Why each service has its state, from the same moment as its state.
    pub fn status(&self) -> &StatusTable {
        &self.status
    }

    pub fn model(&self) -> &Model {
        &self.compiled.model
    }

    pub fn model_arc(&self) -> &Arc<Model> {
        &self.compiled.model
    }

    /// Configuration generation: bumps on every successful (re)load.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn states(&self) -> &Arc<[ServiceState]> {
        &self.states
    }

    /// The load figures of one service (all `None` when unknown).
    pub fn metrics(&self, service: ServiceId) -> &ServiceMetrics {
        self.metrics
            .get(service.index())
            .unwrap_or(&ServiceMetrics::NONE)
    }

    /// Every service's load figures, indexed by `ServiceId`.
    pub fn metrics_table(&self) -> &Arc<[ServiceMetrics]> {
        &self.metrics
    }

    pub fn is_up(&self, service: ServiceId) -> bool {
        self.states
            .get(service.index())
            .map(|s| s.up)
            .unwrap_or(false)
    }

    /// Finds a service by name, case-insensitively.
    pub fn service_by_name(&self, name: &str) -> Option<ServiceId> {
        match self.compiled.services_by_name.get(name) {
            Some(id) => Some(*id),
            None => self
                .compiled
                .services_by_name
                .get(name.to_ascii_lowercase().as_str())
                .copied(),
        }
    }

    /// Finds a GSLB domain by lower-case name without trailing dot.
    pub fn find_domain(&self, name: &str) -> Option<DomainId> {
        self.compiled.domains.get(name).map(|(d, _)| *d)
    }

    /// Finds a GSLB domain (as [`find_domain`](Self::find_domain)) and the
    /// closest enclosing zone of `name`, whether or not it is a domain:
    /// precomputed for domains, walked for other names.
    pub fn find_domain_and_zone(&self, name: &str) -> (Option<DomainId>, Option<ZoneId>) {
        match self.compiled.domains.get(name) {
            Some((d, zone)) => (Some(*d), *zone),
            None => (None, self.find_zone(name)),
        }
    }

    /// Finds the closest enclosing zone of a lower-case name.
    pub fn find_zone(&self, name: &str) -> Option<ZoneId> {
        closest_zone(&self.compiled.zones, name)
    }

    /// The static records' name table.
    pub fn records(&self) -> &RecordTable {
        &self.compiled.records
    }
}

impl Snapshot {
    /// The site of binding `i` of vserver `vs` (an id of no site when
    /// there is no such binding).
    pub fn binding_site(&self, vs: VServerId, i: usize) -> SiteId {
        let c = &self.compiled;
        c.binding_site_start
            .get(vs)
            .and_then(|start| c.binding_sites.get(*start as usize + i))
            .copied()
            .unwrap_or(NO_SITE)
    }

    /// The sites of an RTT vserver's bindings, each with the mask of its
    /// bindings there; empty for a vserver of more than 64 bindings or one
    /// that does not use the RTT method.
    pub(crate) fn site_groups(&self, vs: VServerId) -> &[SiteBindings] {
        let c = &self.compiled;
        let v = vs.index();
        match (c.site_group_start.get(v), c.site_group_start.get(v + 1)) {
            (Some(a), Some(b)) => c.site_groups.get(*a as usize..*b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// The location of a service (of its public IP, or its IP), if known.
    pub fn service_place(&self, service: ServiceId) -> Option<&Place> {
        let id = (*self.compiled.service_places.get(service)?)?;
        Some(self.compiled.model.locations.place(id))
    }

    /// The location of a service as qualifier ids (see
    /// [`LocationDb::code`](crate::LocationDb::code)), if known.
    #[inline]
    pub fn service_code(&self, service: ServiceId) -> Option<&LocationCode> {
        let id = (*self.compiled.service_places.get(service)?)?;
        Some(self.compiled.model.locations.code(id))
    }

    /// The preferred locations of DNS action `action` as qualifier ids, in
    /// its order (empty for an action of another kind).
    #[inline]
    pub fn preferred_codes(&self, action: DnsActionId) -> &[LocationCode] {
        self.compiled
            .preferred_codes
            .get(action)
            .map_or(&[], |c| &c[..])
    }

    /// Whether this node runs as a child site, which answers no DNS.
    pub fn is_child_site(&self) -> bool {
        self.compiled.child
    }

    /// Whether evaluating the DNS policies needs the client's location.
    pub fn policies_need_location(&self) -> bool {
        self.compiled.policies_need_location
    }

    /// Takes the vserver's next round-robin turn (or, with `peek`, reads it
    /// without taking it, so `explain` shows the next live answer).
    pub fn turn(&self, vserver: VServerId, peek: bool) -> u64 {
        match self.compiled.turns.get(vserver) {
            Some(t) if peek => t.load(Ordering::Relaxed),
            Some(t) => t.fetch_add(1, Ordering::Relaxed),
            None => 0,
        }
    }
}
