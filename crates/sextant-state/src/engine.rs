//! The state engine: the one place where a site's state is decided.

use std::collections::HashMap as StdHashMap;
use std::hash::BuildHasherDefault;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use sextant_core::{
    HealthTally, IdVec, Model, MonitorId, MonitorStatus, PeerLink, ServiceId, ServiceMetrics,
    ServiceState, ServiceStatus, SiteId, Snapshot, StatusBuilder, Transition, TriggerMonitor,
    VServerId,
};

/// Maps keyed by configured names and addresses: FNV is several times
/// faster than SipHash on these short keys, and the network only looks keys
/// up here, it never adds them (so it cannot flood a map).
type HashMap<K, V> = StdHashMap<K, V, BuildHasherDefault<sextant_core::snapshot::FnvHasher>>;

use crate::admin::AdminBook;
use crate::dc::DcBook;
use crate::effect::{Effect, InstallSession, LocalReport, Renumbering};
use crate::event::{
    Event, LocalSession, PeerServices, Probe, ReportedService, SharedSession, SiteFigures,
};
use crate::ldns::{self, LdnsBook, LdnsOut};
use crate::listeners::Listeners;

/// The longest new load figures and probe details wait before they are
/// published (a state change is published at once).
pub const FIGURES_FLUSH: Duration = Duration::from_millis(200);

/// Margin on top of the monitors' first-probe window before DNS answers
/// anyway (see `Engine::first_probe_window`).
const READY_SLACK: Duration = Duration::from_millis(250);

/// The monitors spread their first probes over at most this much (see
/// `sextant_health`'s jitter).
const FIRST_PROBE_SPREAD: Duration = Duration::from_secs(1);

/// What a metric exchange peer last said about a service.
#[derive(Debug, Clone)]
struct Report {
    up: bool,
    metrics: ServiceMetrics,
}

/// What the engine knows of one service besides its published status.
#[derive(Debug, Clone)]
struct Svc {
    /// One tally per bound monitor, in `Service::monitors` order.
    tallies: Vec<HealthTally>,
    up: bool,
    /// The latest report from the service's own site over metric exchange.
    report: Option<Report>,
    /// Load figures measured here (load sources, REST push).
    local_metrics: ServiceMetrics,
    gate_open: bool,
}

/// What the engine knows of another site over metric exchange.
#[derive(Debug, Clone, Default)]
struct Peer {
    up: bool,
    /// A complete report arrived since the site came up.
    reported: bool,
    via: Option<String>,
    /// Metric exchange went down and `-GSLBSvcStateDelayTime` holds the
    /// state of its unmonitored services until then.
    hold_until: Option<Duration>,
    /// Metric exchange came up and `-SvcStateLearningTime` leaves what the
    /// site reports unhonoured until then.
    learning_until: Option<Duration>,
}

/// Per site: whether a [`Peer`] timer freezes its services now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct SiteTimers {
    holding: bool,
    learning: bool,
}

/// Lookups the engine needs per event; all maps, never scans.
#[derive(Debug, Default, Clone)]
struct Index {
    /// (site, answer IP, answer port) → service: public address where set.
    by_answer: HashMap<(SiteId, IpAddr, u16), ServiceId>,
    /// (site, IP, port) → service.
    by_address: HashMap<(SiteId, IpAddr, u16), ServiceId>,
    /// Lower-case site name → site.
    sites: HashMap<String, SiteId>,
    /// Per site: its services.
    site_services: IdVec<SiteId, Vec<ServiceId>>,
    /// Lower-case vserver name → vserver.
    vservers: HashMap<String, VServerId>,
    /// Per service: its name, shared with every report.
    names: IdVec<ServiceId, Arc<str>>,
}

impl Index {
    fn new(model: &Model) -> Self {
        let n = model.services.len();
        let mut ix = Index {
            site_services: model.sites.iter().map(|_| Vec::new()).collect(),
            names: model
                .services
                .iter()
                .map(|s| Arc::from(s.name.as_str()))
                .collect(),
            ..Default::default()
        };
        ix.by_answer.reserve(n);
        ix.by_address.reserve(n);
        for (i, site) in model.sites.iter_enumerated() {
            ix.sites.insert(site.name.to_ascii_lowercase(), i);
        }
        for (i, v) in model.vservers.iter_enumerated() {
            ix.vservers.insert(v.name.to_ascii_lowercase(), i);
        }
        for (id, s) in model.services.iter_enumerated() {
            ix.by_answer
                .entry((s.site, s.answer_ip(), s.public_port.unwrap_or(s.port)))
                .or_insert(id);
            ix.by_address.entry((s.site, s.ip, s.port)).or_insert(id);
            if let Some(list) = ix.site_services.get_mut(s.site) {
                list.push(id);
            }
        }
        ix
    }

    fn site(&self, name: &str) -> Option<SiteId> {
        self.sites.get(&name.to_ascii_lowercase()).copied()
    }

    /// The service of `site` that a reported entry describes: matched by
    /// the public address where either side has one, else by IP and port.
    fn reported(
        &self,
        site: SiteId,
        ip: IpAddr,
        port: u16,
        public: Option<(IpAddr, u16)>,
    ) -> Option<ServiceId> {
        let answer = public.unwrap_or((ip, port));
        self.by_answer
            .get(&(site, answer.0, answer.1))
            .or_else(|| self.by_address.get(&(site, ip, port)))
            .or_else(|| self.by_address.get(&(site, answer.0, answer.1)))
            .copied()
    }
}

/// A configuration made ready for the engine: its lookup tables built and
/// a fresh engine for it. This is the costly part of taking a configuration
/// in, and it is pure, so the edges build it off the state task
/// ([`Prepared::new`]) and the engine's reload only carries state over.
#[derive(Debug, Clone)]
pub struct Prepared {
    engine: Box<Engine>,
    /// When it was read (wall clock, milliseconds since the UNIX epoch,
    /// from the edge): the time of the marks its new `disable` lines make.
    at_unix_ms: u64,
}

/// Two prepared configurations are equal when their configurations are.
impl PartialEq for Prepared {
    fn eq(&self, other: &Self) -> bool {
        self.engine.model == other.engine.model
    }
}

impl Prepared {
    /// Builds the tables of `model` (off the state task: the engine's reload
    /// then only carries state over).
    pub fn new(model: Arc<Model>) -> Prepared {
        let base = Snapshot::new(Arc::clone(&model), 0);
        let index = Index::new(&model);
        Prepared {
            engine: Box::new(Engine::fresh(model, base, index, 0)),
            at_unix_ms: 0,
        }
    }

    /// The wall-clock time (milliseconds since the UNIX epoch) the
    /// configuration was read at, for the marks its new `disable` lines
    /// make on reload.
    pub fn at(mut self, unix_ms: u64) -> Prepared {
        self.at_unix_ms = unix_ms;
        self
    }
}

/// A site's state engine: events in, effects out. Pure: `now` (wall-clock
/// time since the UNIX epoch) is passed in, nothing here reads a clock,
/// opens a socket or draws a random number.
#[derive(Debug, Clone)]
pub struct Engine {
    model: Arc<Model>,
    generation: u64,
    /// The configuration's lookup tables; health is replaced on publish.
    base: Snapshot,
    index: Index,
    services: IdVec<ServiceId, Svc>,
    /// Per service: the load figures the decision core sees, kept up to
    /// date as their inputs change, so a publication only copies them.
    figures: IdVec<ServiceId, ServiceMetrics>,
    status: StatusBuilder,
    /// Lower-case site name → what metric exchange says of it.
    peers: HashMap<String, Peer>,
    /// (site, the sender's IP and port) → the service its entry matched,
    /// so a removal by the sender's key finds it.
    matched: HashMap<(SiteId, IpAddr, u16), ServiceId>,
    own_site: SiteFigures,
    /// VRRP says this node is master of the site IP's VIP.
    site_ip_master: bool,
    /// Every site's metric exchange state as last published; `None`: to be
    /// gathered again at the next publication.
    peer_links: Option<Arc<[PeerLink]>>,
    /// This node's DNS listeners on VIPs and their self-probe verdicts.
    listeners: Listeners,
    /// Every site's figures as last published; `None`: to be gathered
    /// again at the next publication.
    site_figures: Option<Arc<[Option<SiteFigures>]>>,
    states_dirty: bool,
    figures_dirty: bool,
    last_publish: Option<Duration>,
    last_report: Option<Arc<LocalReport>>,
    report_dirty: bool,
    /// DNS may answer (every monitored service has its first result, or
    /// `ready_deadline` passed).
    ready: bool,
    ready_deadline: Duration,
    /// (service, monitor slot) pairs with an open gate and no result yet.
    awaiting_first: usize,
    /// The LDNS table of the RTT method.
    ldns: LdnsBook,
    /// RTTs to send to the other parents with the next publication.
    pending_rtt: Vec<crate::event::SharedRtt>,
    /// Per site: metric exchange with it is up ([`Engine::refresh_peers_up`]).
    peers_up: IdVec<SiteId, bool>,
    /// Per site: its delay or learning timer runs (same refresh).
    site_timers: IdVec<SiteId, SiteTimers>,
    /// The earliest `hold_until` / `learning_until` of any peer.
    next_site_deadline: Option<Duration>,
    /// Datacenter mode: what is known of each datacenter, the rankings.
    dc: DcBook,
    /// The operator's enable/disable/drain marks, by name.
    admin: AdminBook,
    /// The same by id of this configuration, as published.
    admin_table: Arc<sextant_core::AdminTable>,
}

impl Engine {
    /// An engine for `model` (generation `generation`) starting at `now`,
    /// with what the edges must do first: set the gates, publish, and
    /// maybe answer at once.
    pub fn new(model: Arc<Model>, generation: u64, now: Duration) -> (Engine, Vec<Effect>) {
        let base = Snapshot::new(Arc::clone(&model), generation);
        let index = Index::new(&model);
        let mut engine = Engine::fresh(model, base, index, generation);
        engine.settle_everything(now, None);
        engine.dc = DcBook::new(&engine.model, None);
        engine.with_dc(|book, ctx| book.tick(now, ctx));
        engine.ready_deadline = now + engine.first_probe_window();
        engine.awaiting_first = engine.count_awaiting();
        engine.ready = engine.awaiting_first == 0;
        let mut effects: Vec<Effect> = engine
            .closed_gates()
            .into_iter()
            .map(|service| Effect::Gate {
                service,
                open: false,
            })
            .collect();
        engine.publish(now, &mut effects);
        if engine.ready {
            effects.push(Effect::Ready);
        }
        (engine, effects)
    }

    fn fresh(model: Arc<Model>, base: Snapshot, index: Index, generation: u64) -> Engine {
        let listeners = Listeners::new(&model, None);
        let services: IdVec<ServiceId, Svc> = model
            .services
            .iter()
            .map(|s| Svc {
                tallies: s
                    .monitors
                    .iter()
                    .map(|m| {
                        let mon = model.monitor(*m);
                        HealthTally::new(mon.retries, mon.success_retries)
                    })
                    .collect(),
                up: true,
                report: None,
                local_metrics: ServiceMetrics::NONE,
                gate_open: true,
            })
            .collect();
        let status = StatusBuilder::new(
            model
                .services
                .iter()
                .map(|s| ServiceStatus {
                    reason: Arc::from(""),
                    last_change: None,
                    monitors: vec![MonitorStatus::default(); s.monitors.len()].into(),
                })
                .collect(),
        );
        Engine {
            model,
            generation,
            base,
            index,
            figures: services.iter().map(|_| ServiceMetrics::NONE).collect(),
            services,
            status,
            peers: HashMap::default(),
            matched: HashMap::default(),
            own_site: SiteFigures::default(),
            site_ip_master: false,
            peer_links: None,
            site_figures: None,
            states_dirty: true,
            figures_dirty: true,
            last_publish: None,
            last_report: None,
            report_dirty: true,
            ready: false,
            ready_deadline: Duration::ZERO,
            awaiting_first: 0,
            ldns: LdnsBook::default(),
            pending_rtt: Vec::new(),
            peers_up: IdVec::new(),
            site_timers: IdVec::new(),
            next_site_deadline: None,
            listeners,
            dc: DcBook::default(),
            admin: AdminBook::default(),
            admin_table: Arc::default(),
        }
    }

    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }

    /// Whether this node runs metric exchange now: the local site has it on
    /// and there is another site, and the site IP is this node's — always,
    /// unless it is a VRRP VIP; then while this node is master for it
    /// ([`Event::SiteIpMaster`]).
    pub fn runs_metric_exchange(&self) -> bool {
        metric_exchange_configured(&self.model)
            && (site_ip_vip(&self.model).is_none() || self.site_ip_master)
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether the local site shares persistence sessions with the other
    /// parents (`-sessionExchange`; never on a child, seed 001).
    pub fn session_exchange(&self) -> bool {
        self.local_site().is_some_and(|l| {
            let site = self.model.site(l);
            site.session_exchange && site.metric_exchange && site.parent.is_none()
        }) && self.model.sites.len() > 1
    }

    /// How often the edges should hand over new local persistence entries:
    /// twice per keepalive interval, so a peer parent honours an entry
    /// within one interval.
    pub fn session_share_interval(&self) -> Duration {
        (self.model.params.mep_keepalive_timeout / 6).max(Duration::from_millis(50))
    }

    /// When the engine wants a [`Event::Tick`] next, if ever.
    pub fn next_wake(&self) -> Option<Duration> {
        let flush = (self.figures_dirty || self.states_dirty).then(|| {
            self.last_publish
                .map_or(Duration::ZERO, |t| t + FIGURES_FLUSH)
        });
        let flush = flush.or_else(|| {
            self.ldns.dirty.then(|| {
                self.last_publish
                    .map_or(Duration::ZERO, |t| t + FIGURES_FLUSH)
            })
        });
        let ready = (!self.ready).then_some(self.ready_deadline);
        [
            flush,
            ready,
            self.next_site_deadline,
            self.ldns.next_wake(),
            self.dc.next_wake(&self.model),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Applies one event at `now`; returns what the edges must do, in order.
    pub fn apply(&mut self, event: Event, now: Duration) -> Vec<Effect> {
        self.apply_all(std::iter::once(event), now)
    }

    /// Applies events that arrived together at `now`, in order, and
    /// publishes once after the last: the same effects as one [`apply`]
    /// per event, without the intermediate publications (each costs time
    /// linear in the number of services, so a burst of N probe results,
    /// such as every service's first result at start, would cost N²).
    ///
    /// [`apply`]: Engine::apply
    pub fn apply_all(
        &mut self,
        events: impl IntoIterator<Item = Event>,
        now: Duration,
    ) -> Vec<Effect> {
        let mut effects = Vec::new();
        self.expire_site_timers(now, &mut effects);
        for event in events {
            self.handle(event, now, &mut effects);
        }
        // Rankings due (an access period over, a reload, a site's first
        // figures) are worked out once for the whole batch.
        self.with_dc(|book, ctx| book.tick(now, ctx));
        if let Some(targets) = self.dc.take_loss_targets(&self.model) {
            effects.push(Effect::MeasurePathLoss(targets));
        }
        if !self.ready && (self.awaiting_first == 0 || now >= self.ready_deadline) {
            self.ready = true;
            effects.push(Effect::Ready);
            // Publish (and report) at once.
            self.states_dirty = true;
        }
        let flush_due = self.last_publish.is_none_or(|t| now >= t + FIGURES_FLUSH);
        if self.states_dirty
            || self.dc.dirty
            || ((self.figures_dirty || self.ldns.dirty) && flush_due)
        {
            self.publish(now, &mut effects);
        }
        effects
    }

    fn handle(&mut self, event: Event, now: Duration, effects: &mut Vec<Effect>) {
        match event {
            Event::Probe(p) => self.probe(p, now, effects),
            Event::ProbeLocalError {
                service,
                monitor,
                detail,
            } => self.probe_local_error(service, monitor, &detail),
            Event::LocalFigures { service, metrics } => {
                if let Some(svc) = self.services.get_mut(service) {
                    svc.local_metrics = metrics;
                    self.refresh_figures(service);
                    self.figures_dirty = true;
                    self.report_dirty = true;
                }
            }
            Event::PeerUp { site, via } => {
                let learning = self.model.params.svc_state_learning;
                let peer = self.peers.entry(site.to_ascii_lowercase()).or_default();
                peer.up = true;
                peer.reported = false;
                peer.via = via;
                // Back within the delay: the services were never affected.
                peer.hold_until = None;
                peer.learning_until = (!learning.is_zero()).then_some(now + learning);
                self.peer_links = None;
                self.states_dirty = true;
                self.refresh_peers_up();
                self.dc.reachability_changed();
                if let Some(id) = self.index.site(&site) {
                    let touched = self.index.site_services[id].clone();
                    self.settle_all(&touched, now, effects);
                }
                self.with_ldns(effects, |book, ctx, out| book.peer_up(now, ctx, out));
            }
            Event::PeerDown { site, .. } => {
                let delay = self.model.params.svc_state_delay;
                let peer = self.peers.entry(site.to_ascii_lowercase()).or_default();
                peer.up = false;
                peer.reported = false;
                peer.learning_until = None;
                peer.hold_until = (!delay.is_zero()).then_some(now + delay);
                self.peer_links = None;
                self.states_dirty = true;
                self.refresh_peers_up();
                self.dc.reachability_changed();
                if let Some(id) = self.index.site(&site) {
                    let touched = self.index.site_services[id].clone();
                    for s in &touched {
                        // With a delay, a service no monitor decides keeps
                        // what its site last said until the delay is over.
                        if delay.is_zero() || !self.model.services[*s].monitors.is_empty() {
                            self.services[*s].report = None;
                        }
                    }
                    self.figures_dirty = true;
                    self.settle_all(&touched, now, effects);
                    self.ldns.peer_down(id);
                }
            }
            Event::PeerServices(report) => self.peer_services(report, now, effects),
            Event::OwnSiteFigures(f) => {
                if f != self.own_site {
                    self.own_site = f;
                    self.site_figures = None;
                    self.report_dirty = true;
                    // Sent with the next publication, within FIGURES_FLUSH.
                    self.figures_dirty = true;
                }
            }
            Event::PeerSiteFigures { site, figures } => {
                if let Some(id) = self.index.site(&site) {
                    self.dc.reported(id, figures);
                    // Shown in `/v1/sites` from the next publication.
                    self.site_figures = None;
                    self.figures_dirty = true;
                }
            }
            Event::PathLoss { site, sent, lost } => {
                if let Some(id) = self.index.site(&site) {
                    self.dc.path_loss(id, sent, lost);
                }
            }
            Event::LocalSessions(entries) => self.share_sessions(entries, effects),
            Event::PeerSessions { site, entries } => self.install_sessions(&site, entries, effects),
            Event::Reload(prepared) => self.reload(*prepared, now, effects),
            Event::LdnsQueried(groups) => {
                self.with_ldns(effects, |book, ctx, out| {
                    book.queried(&groups, now, ctx, out)
                });
            }
            Event::LdnsSample { group, sample, ttl } => {
                self.with_ldns(effects, |book, ctx, out| {
                    book.own_sample(group, sample, ttl, now, ctx, out)
                });
            }
            Event::PeerRtt { site, entries } => {
                if let Some(id) = self.index.site(&site) {
                    self.with_ldns(effects, |book, ctx, out| {
                        book.peer(id, &entries, now, ctx, out)
                    });
                }
            }
            Event::ListenerProbe { addr, probe } => {
                if let Some(c) = self.listeners.probe(addr, probe, now) {
                    effects.push(Effect::ListenerState {
                        addr: c.addr,
                        up: c.up,
                        reason: c.reason,
                    });
                    self.states_dirty = true;
                }
            }
            Event::SiteIpMaster(master) => {
                let ran = self.runs_metric_exchange();
                self.site_ip_master = master;
                let run = self.runs_metric_exchange();
                if run != ran {
                    effects.push(Effect::MetricExchange { run });
                }
            }
            Event::Admin(change) => {
                let result = self.admin.apply(&self.model, &self.base, change);
                if result.is_ok() {
                    self.admin_changed(effects);
                }
                effects.push(Effect::Admin(result));
            }
            Event::AdminRestore(records) => {
                let dropped = self.admin.restore(&self.model, &self.base, records);
                if !dropped.is_empty() {
                    effects.push(Effect::AdminDropped(dropped));
                }
                self.admin_changed(effects);
            }
            Event::Tick => {
                self.with_ldns(effects, |book, ctx, out| book.tick(now, ctx, out));
                self.with_dc(|book, ctx| book.tick(now, ctx));
            }
        }
    }

    // ---- maintenance -----------------------------------------------------

    /// The marks changed: rebuild the published table, publish at once and
    /// save them.
    fn admin_changed(&mut self, effects: &mut Vec<Effect>) {
        self.admin_table = Arc::new(self.admin.table(&self.model, &self.base));
        self.states_dirty = true;
        effects.push(Effect::SaveAdmin(self.admin.records()));
    }

    /// Every mark that is not `enabled`, by name.
    pub fn admin_records(&self) -> Vec<crate::admin::AdminRecord> {
        self.admin.records()
    }

    // ---- probes -------------------------------------------------------

    fn probe(&mut self, p: Probe, now: Duration, effects: &mut Vec<Effect>) {
        let i = p.service;
        let Some(slot) = self
            .model
            .services
            .get(i)
            .and_then(|s| s.monitors.iter().position(|m| *m == p.monitor))
        else {
            return;
        };
        let svc = &mut self.services[i];
        let first = svc.tallies[slot].state().is_none();
        let was_down = svc.tallies[slot].state() == Some(Transition::Down);
        let transition = svc.tallies[slot].observe(p.success);
        let failures = svc.tallies[slot].consecutive_failures();
        let tally_state = svc.tallies[slot].state();
        let gate_open = svc.gate_open;
        let down = tally_state == Some(Transition::Down);
        if down != was_down && self.model.monitor(p.monitor).down_time.is_some() {
            effects.push(Effect::ProbePace {
                service: p.service,
                slot,
                slow: down,
            });
        }
        if first && gate_open && !self.ready {
            self.awaiting_first = self.awaiting_first.saturating_sub(1);
        }
        let detail: Arc<str> = Arc::from(p.detail.as_str());
        if let Some(m) = self
            .status
            .get_mut(p.service)
            .and_then(|s| s.monitors.get_mut(slot))
        {
            *m = MonitorStatus {
                state: tally_state,
                last_detail: Some(Arc::clone(&detail)),
                last_response: p.response_time,
            };
        }
        self.refresh_figures(i);
        self.figures_dirty = true;
        if self.is_local(i) {
            self.report_dirty = true;
        }
        if !self.monitors_decide(i) {
            // A remote service whose state metric exchange reports: the
            // result is shown but does not decide.
            return;
        }
        let (up, settled) = self.verdict(i);
        if transition.is_none() && up == self.services[i].up {
            return;
        }
        let reason: Arc<str> = if up == self.services[i].up {
            // This monitor settled, but another one still decides.
            settled
        } else {
            let monitor = &self.model.monitor(p.monitor).name;
            match transition {
                Some(Transition::Down) => format!(
                    "monitor {monitor}: {detail} ({failures} consecutive failure{})",
                    if failures == 1 { "" } else { "s" }
                )
                .into(),
                _ => format!("monitor {monitor}: {detail}").into(),
            }
        };
        self.set_state(i, up, reason, now, effects);
    }

    /// A probe that could not be made here ([`Event::ProbeLocalError`]):
    /// shown as the monitor's last result, counted nowhere. The tally, the
    /// state and the readiness count are untouched, as if the probe had
    /// not been due.
    fn probe_local_error(&mut self, service: ServiceId, monitor: MonitorId, detail: &str) {
        let Some(slot) = self
            .model
            .services
            .get(service)
            .and_then(|s| s.monitors.iter().position(|m| *m == monitor))
        else {
            return;
        };
        if let Some(m) = self
            .status
            .get_mut(service)
            .and_then(|s| s.monitors.get_mut(slot))
        {
            m.last_detail = Some(Arc::from(format!(
                "local error, not counted (the state is kept): {detail}"
            )));
            self.figures_dirty = true;
        }
    }

    // ---- metric exchange ----------------------------------------------

    fn peer_services(&mut self, r: PeerServices, now: Duration, effects: &mut Vec<Effect>) {
        let Some(site) = self.index.site(&r.site) else {
            return;
        };
        if !self.site_uses_metric_exchange(site) {
            return;
        }
        let peer = self.peers.entry(r.site.to_ascii_lowercase()).or_default();
        peer.up = true;
        if r.via.is_some() {
            peer.via = r.via.clone();
        }
        // A report means metric exchange is back: the delay is over.
        let was_holding = peer.hold_until.take().is_some();
        if r.full {
            peer.reported = true;
        }
        if was_holding {
            self.refresh_peers_up();
        }
        let mut touched = Vec::new();
        if r.full {
            self.matched.retain(|k, _| k.0 != site);
            for s in &self.index.site_services[site] {
                if self.services[*s].report.take().is_some() {
                    touched.push(*s);
                }
            }
        }
        for e in &r.entries {
            if let Some(id) = self.match_entry(site, e) {
                self.matched.insert((site, e.ip, e.port), id);
                self.services[id].report = Some(Report {
                    up: e.up,
                    metrics: e.metrics,
                });
                touched.push(id);
            }
        }
        for (ip, port) in &r.removed {
            let id = self
                .matched
                .remove(&(site, *ip, *port))
                .or_else(|| self.index.reported(site, *ip, *port, None));
            if let Some(id) = id
                && self.services[id].report.take().is_some()
            {
                touched.push(id);
            }
        }
        if r.full {
            // Services of this site it did not report: their reasons say so.
            touched.extend(self.index.site_services[site].iter().copied());
        }
        touched.sort_unstable();
        touched.dedup();
        self.figures_dirty = true;
        self.settle_all(&touched, now, effects);
    }

    fn match_entry(&self, site: SiteId, e: &ReportedService) -> Option<ServiceId> {
        let public = match (e.public_ip, e.public_port) {
            (None, None) => None,
            (ip, port) => Some((ip.unwrap_or(e.ip), port.unwrap_or(e.port))),
        };
        self.index.reported(site, e.ip, e.port, public)
    }

    fn local_site(&self) -> Option<SiteId> {
        self.model.local_site
    }

    /// Works out, per site, whether metric exchange with it is up: when a
    /// peer comes or goes and at a reload, not per LDNS event.
    fn refresh_peers_up(&mut self) {
        let peers: Vec<Option<&Peer>> = self
            .model
            .sites
            .iter()
            .map(|s| self.peers.get(&s.name.to_ascii_lowercase()))
            .collect();
        self.peers_up = peers.iter().map(|p| p.is_some_and(|p| p.up)).collect();
        self.site_timers = peers
            .iter()
            .map(|p| SiteTimers {
                holding: p.is_some_and(|p| p.hold_until.is_some()),
                learning: p.is_some_and(|p| p.learning_until.is_some()),
            })
            .collect();
        self.next_site_deadline = self
            .peers
            .values()
            .flat_map(|p| [p.hold_until, p.learning_until])
            .flatten()
            .min();
    }

    /// Ends the delay (`-GSLBSvcStateDelayTime`) and learning
    /// (`-SvcStateLearningTime`) timers that are due, and re-derives the
    /// states of their sites' services.
    fn expire_site_timers(&mut self, now: Duration, effects: &mut Vec<Effect>) {
        if self.next_site_deadline.is_none_or(|t| now < t) {
            return;
        }
        let mut sites = Vec::new();
        for (name, p) in self.peers.iter_mut() {
            let held = p.hold_until.is_some_and(|t| now >= t);
            if held {
                p.hold_until = None;
            }
            let learnt = p.learning_until.is_some_and(|t| now >= t);
            if learnt {
                p.learning_until = None;
            }
            if held || learnt {
                sites.push((name.clone(), held && !p.up));
            }
        }
        self.refresh_peers_up();
        for (name, drop_reports) in sites {
            if let Some(id) = self.index.site(&name) {
                let touched = self.index.site_services[id].clone();
                if drop_reports {
                    // The delay is over: what the site said no longer holds.
                    for s in &touched {
                        self.services[*s].report = None;
                    }
                }
                self.figures_dirty = true;
                self.settle_all(&touched, now, effects);
            }
        }
    }

    fn site_timers(&self, site: SiteId) -> SiteTimers {
        self.site_timers.get(site).copied().unwrap_or_default()
    }

    /// Runs one step of the datacenter book with what it reads of the engine.
    fn with_dc<R>(&mut self, step: impl FnOnce(&mut DcBook, &crate::dc::Ctx<'_>) -> R) -> R {
        let services = &self.services;
        let up = |i: ServiceId| services.get(i).is_some_and(|s| s.up);
        let ctx = crate::dc::Ctx {
            model: &self.model,
            own: self.own_site,
            peers_up: &self.peers_up,
            service_up: &up,
            service_metrics: &self.figures,
        };
        step(&mut self.dc, &ctx)
    }

    /// Runs one step of the LDNS book and turns what it decided into effects.
    fn with_ldns(
        &mut self,
        effects: &mut Vec<Effect>,
        step: impl FnOnce(&mut LdnsBook, &ldns::Ctx<'_>, &mut LdnsOut),
    ) {
        let ctx = ldns::Ctx {
            model: &self.model,
            peers_up: &self.peers_up,
        };
        let mut out = LdnsOut::default();
        step(&mut self.ldns, &ctx, &mut out);
        if !out.probe_add.is_empty() || !out.probe_remove.is_empty() {
            effects.push(Effect::ProbeLdns {
                add: out.probe_add,
                remove: out.probe_remove,
            });
        }
        if !out.share.is_empty() {
            // Sent with the next publication (within FIGURES_FLUSH), one
            // message for every change meanwhile.
            self.pending_rtt.extend(out.share);
            self.ldns.dirty = true;
        }
    }

    fn is_local(&self, service: ServiceId) -> bool {
        Some(self.model.services[service].site) == self.local_site()
    }

    /// Whether metric exchange between this node and `site` carries state.
    fn site_uses_metric_exchange(&self, site: SiteId) -> bool {
        let Some(local) = self.local_site() else {
            return false;
        };
        site != local
            && self.model.site(local).metric_exchange
            && self.model.site(site).metric_exchange
    }

    fn uses_metric_exchange(&self, service: ServiceId) -> bool {
        self.site_uses_metric_exchange(self.model.services[service].site)
    }

    /// Whether the bound monitors decide the state now (`-triggerMonitor`);
    /// otherwise metric exchange does.
    fn monitors_decide(&self, service: ServiceId) -> bool {
        if !self.uses_metric_exchange(service) {
            return true;
        }
        let svc = &self.model.services[service];
        if svc.monitors.is_empty() {
            return false;
        }
        if self.site_timers(svc.site).learning {
            // What the site reports is not honoured yet: the monitors
            // bound here decide meanwhile.
            return true;
        }
        let report = self.services[service].report.as_ref();
        match self.model.site(svc.site).trigger_monitor {
            TriggerMonitor::Always => true,
            TriggerMonitor::MepDown => report.is_none(),
            TriggerMonitor::MepDownSvcDown => report.is_none_or(|r| !r.up),
        }
    }

    /// The service's state and why, from whichever source decides.
    fn verdict(&self, service: ServiceId) -> (bool, Arc<str>) {
        let svc = &self.services[service];
        let conf = &self.model.services[service];
        if self.monitors_decide(service) {
            if conf.monitors.is_empty() {
                return (true, Arc::from(NO_MONITOR));
            }
            if svc.tallies.iter().all(|t| t.state().is_none()) {
                // Nothing probed yet (at start, or monitors just took over
                // from metric exchange): keep the state until the first result.
                return (svc.up, Arc::from("waiting for the first probe result"));
            }
            let states: Vec<Option<Transition>> = svc.tallies.iter().map(|t| t.state()).collect();
            let up = sextant_core::monitors_up(&states, &conf.monitor_weights, conf.mon_threshold);
            return (up, self.monitor_reason(service, up));
        }
        let site = self.model.site(conf.site);
        let timers = self.site_timers(conf.site);
        let params = &self.model.params;
        if timers.learning {
            return (
                svc.up,
                format!(
                    "metric exchange: learning; what site {} reports is not honoured for {} after metric exchange came up (-SvcStateLearningTime), so the service keeps its state",
                    site.name,
                    seconds(params.svc_state_learning)
                )
                .into(),
            );
        }
        if let (true, Some(r)) = (timers.holding, &svc.report) {
            return (
                r.up,
                format!(
                    "metric exchange with site {} is down: keeping what it last reported ({}) for {} in case it comes back (-GSLBSvcStateDelayTime)",
                    site.name,
                    if r.up { "UP" } else { "DOWN" },
                    seconds(params.svc_state_delay)
                )
                .into(),
            );
        }
        match &svc.report {
            Some(r) if r.up => (
                true,
                format!("metric exchange: site {} reports it UP", site.name).into(),
            ),
            Some(_) => (
                false,
                format!("metric exchange: site {} reports it DOWN", site.name).into(),
            ),
            None => (false, self.unreported_reason(service).into()),
        }
    }

    /// Why a service whose state metric exchange should give has none.
    fn unreported_reason(&self, service: ServiceId) -> String {
        let conf = &self.model.services[service];
        let site = self.model.site(conf.site);
        let peer = self.peers.get(&site.name.to_ascii_lowercase());
        let addr = match (conf.public_ip, conf.public_port) {
            (None, None) => format!("{}:{}", conf.ip, conf.port),
            (ip, port) => format!(
                "{}:{} (public {}:{})",
                conf.ip,
                conf.port,
                ip.unwrap_or(conf.ip),
                port.unwrap_or(conf.port)
            ),
        };
        match peer {
            Some(p) if p.up && p.reported => format!(
                "site {site} is UP over metric exchange but reports no service at {addr}; \
                 add the service at site {site} (`add gslb service {name} {ip} {proto} {port} -siteName {site}`), \
                 or bind a monitor to it here (`bind gslb service {name} -monitorName MONITOR`)",
                site = site.name,
                name = conf.name,
                ip = conf.ip,
                proto = conf.protocol.as_str(),
                port = conf.port,
            ),
            Some(p) if p.up => format!(
                "metric exchange: waiting for site {}'s first report (no monitor bound here)",
                site.name
            ),
            _ => format!(
                "metric exchange: site {} is not reachable over metric exchange and no monitor is bound here \
                 (bind one to decide without it: `bind gslb service {} -monitorName MONITOR`)",
                site.name, conf.name
            ),
        }
    }

    /// The monitors' reason: the first DOWN monitor's last verdict, else
    /// the first one's; for a service UP by its `-monThreshold` while some
    /// of its monitors are DOWN, the first UP one's, with the count.
    fn monitor_reason(&self, service: ServiceId, up: bool) -> Arc<str> {
        let conf = &self.model.services[service];
        let svc = &self.services[service];
        let is_down = |t: &sextant_core::HealthTally| t.state() == Some(Transition::Down);
        let down = svc.tallies.iter().filter(|t| is_down(t)).count();
        let pick = if up && conf.mon_threshold > 0 {
            svc.tallies.iter().position(|t| !is_down(t))
        } else {
            svc.tallies.iter().position(is_down)
        }
        .unwrap_or(0);
        if conf.mon_threshold > 0 && down > 0 {
            let name = &self.model.monitor(conf.monitors[pick]).name;
            let detail = self
                .status
                .get(service)
                .and_then(|s| s.monitors.get(pick))
                .and_then(|m| m.last_detail.clone())
                .unwrap_or_else(|| Arc::from("no result yet"));
            let n = svc.tallies.len();
            return format!(
                "{} of {n} monitors UP (-monThreshold {}): monitor {name}: {detail}",
                n - down,
                conf.mon_threshold
            )
            .into();
        }
        let name = &self.model.monitor(conf.monitors[pick]).name;
        let detail = self
            .status
            .get(service)
            .and_then(|s| s.monitors.get(pick))
            .and_then(|m| m.last_detail.clone());
        match detail {
            Some(d) => format!("monitor {name}: {d}").into(),
            None => format!("monitor {name}: no result yet").into(),
        }
    }

    fn set_state(
        &mut self,
        i: ServiceId,
        up: bool,
        reason: Arc<str>,
        now: Duration,
        effects: &mut Vec<Effect>,
    ) {
        let changed = self.services[i].up != up;
        if let Some(st) = self.status.get_mut(i) {
            if st.reason != reason {
                // Published with the next figures (a new state goes at once).
                st.reason = Arc::clone(&reason);
                self.figures_dirty = true;
            }
            if changed {
                st.last_change = Some(now);
            }
        }
        if changed {
            self.services[i].up = up;
            self.states_dirty = true;
            if self.is_local(i) {
                self.report_dirty = true;
            }
            effects.push(Effect::Transition {
                service: i,
                up,
                reason,
            });
        }
    }

    /// Moves the touched services' gates, then re-derives their states.
    fn settle_all(&mut self, touched: &[ServiceId], now: Duration, effects: &mut Vec<Effect>) {
        for s in touched {
            self.refresh_gate(*s, effects);
            self.refresh_figures(*s);
        }
        for s in touched {
            let (up, reason) = self.verdict(*s);
            self.set_state(*s, up, reason, now, effects);
        }
    }

    /// Opens the gate when the monitors decide, closes it otherwise. Monitors
    /// that take over again start afresh: their first result decides.
    fn refresh_gate(&mut self, i: ServiceId, effects: &mut Vec<Effect>) {
        let open = self.monitors_decide(i);
        let svc = &mut self.services[i];
        if open == svc.gate_open {
            return;
        }
        if open {
            for t in &mut svc.tallies {
                *t = t.fresh();
            }
        }
        svc.gate_open = open;
        if self.model.services[i].monitors.is_empty() {
            return;
        }
        effects.push(Effect::Gate { service: i, open });
    }

    /// Every service's gate and state from scratch (start, reload). `old_up`
    /// holds, per service, its state before a reload, if it had one.
    fn settle_everything(
        &mut self,
        now: Duration,
        old_up: Option<&IdVec<ServiceId, Option<bool>>>,
    ) {
        for i in self.services.ids() {
            self.refresh_figures(i);
            self.services[i].gate_open = self.monitors_decide(i);
            let (up, reason) = self.verdict(i);
            let was = old_up.and_then(|o| o.get(i).copied().flatten());
            self.services[i].up = up;
            if let Some(st) = self.status.get_mut(i) {
                if was.is_some_and(|w| w != up) {
                    st.last_change = Some(now);
                }
                st.reason = reason;
            }
        }
        self.states_dirty = true;
        self.figures_dirty = true;
        self.report_dirty = true;
    }

    /// The bindings that probe at their monitor's `-downTime`.
    fn slow_probes(&self) -> Vec<(ServiceId, usize)> {
        let model = &self.model;
        self.services
            .iter_enumerated()
            .flat_map(|(i, svc)| {
                svc.tallies.iter().enumerate().filter_map(move |(slot, t)| {
                    let monitor = model.monitor(*model.services[i].monitors.get(slot)?);
                    (monitor.down_time.is_some() && t.state() == Some(Transition::Down))
                        .then_some((i, slot))
                })
            })
            .collect()
    }

    fn closed_gates(&self) -> Vec<ServiceId> {
        self.services
            .ids()
            .filter(|i| {
                !self.services[*i].gate_open && !self.model.services[*i].monitors.is_empty()
            })
            .collect()
    }

    /// (service, monitor) pairs that probe and have no result yet.
    fn count_awaiting(&self) -> usize {
        self.services
            .iter()
            .filter(|s| s.gate_open)
            .map(|s| s.tallies.iter().filter(|t| t.state().is_none()).count())
            .sum()
    }

    /// How long the monitors need for every first result: the spread of
    /// first probes plus the slowest response timeout.
    fn first_probe_window(&self) -> Duration {
        self.model
            .services
            .iter()
            .flat_map(|s| s.monitors.iter())
            .map(|m| {
                let mon = self.model.monitor(*m);
                mon.interval.min(FIRST_PROBE_SPREAD) + mon.response_timeout
            })
            .max()
            .map_or(Duration::ZERO, |w| w + READY_SLACK)
    }

    // ---- reload ---------------------------------------------------------

    /// A new configuration, keeping what is still true: the state of every
    /// service whose address is unchanged (matched by name), the tally of
    /// every monitor whose definition is unchanged, what peers reported.
    fn reload(&mut self, prepared: Prepared, now: Duration, effects: &mut Vec<Effect>) {
        self.site_figures = None;
        let ran = self.runs_metric_exchange();
        let at_unix_ms = prepared.at_unix_ms;
        let mut fresh = *prepared.engine;
        fresh.site_ip_master = self.site_ip_master;
        fresh.listeners = Listeners::new(&fresh.model, Some(&self.listeners));
        fresh.generation = self.generation + 1;
        fresh.base = fresh.base.with_generation(fresh.generation);
        let model = Arc::clone(&fresh.model);
        let old = std::mem::replace(self, fresh);
        self.peers = old.peers;
        // Sender keys stay valid only where the service kept its id.
        self.matched = old
            .matched
            .into_iter()
            .filter(|(k, id)| {
                model.services.get(*id).is_some_and(|s| {
                    old.model
                        .services
                        .get(*id)
                        .is_some_and(|o| o.name == s.name && o.site == s.site && k.0 == s.site)
                })
            })
            .collect();
        self.own_site = old.own_site;
        self.ready = old.ready;
        self.ready_deadline = old.ready_deadline;
        self.last_publish = old.last_publish;
        self.last_report = old.last_report;
        self.ldns = old.ldns.reloaded(&old.model, &model);
        self.dc = DcBook::new(&model, Some((&old.dc, &old.model)));
        self.pending_rtt = old.pending_rtt;
        // The operator's marks stay by name; those whose object is gone go.
        self.admin = old.admin;
        let dropped = self.admin.retain_configured(&model, &self.base);
        // A `disable` line the running configuration did not have takes
        // its object out, unless the operator already marked it.
        let added: Vec<_> = crate::admin::new_config_records(&old.model, &model, at_unix_ms)
            .into_iter()
            .filter(|r| !self.admin.has(r.kind, &r.name))
            .collect();
        let marked = !added.is_empty();
        self.admin.restore(&model, &self.base, added);
        self.admin_table = Arc::new(self.admin.table(&model, &self.base));
        let save = marked || !dropped.is_empty();
        if !dropped.is_empty() {
            effects.push(Effect::AdminDropped(dropped));
        }
        if save {
            effects.push(Effect::SaveAdmin(self.admin.records()));
        }
        self.refresh_peers_up();
        let old_monitors: HashMap<String, MonitorId> = old
            .model
            .monitors
            .iter_enumerated()
            .map(|(i, m)| (m.name.to_ascii_lowercase(), i))
            .collect();
        // New monitor → the old monitor of the same name and definition.
        let same_monitor: IdVec<MonitorId, Option<MonitorId>> = model
            .monitors
            .iter()
            .map(|m| {
                old_monitors
                    .get(&m.name.to_ascii_lowercase())
                    .copied()
                    .filter(|o| old.model.monitor(*o) == m)
            })
            .collect();
        let mut old_up: IdVec<ServiceId, Option<bool>> =
            model.services.iter().map(|_| None).collect();
        // Old id → new id of every service whose name both have (names are
        // unique, case-insensitively, in a valid configuration).
        let mut renumbered_services: IdVec<ServiceId, Option<ServiceId>> =
            old.model.services.iter().map(|_| None).collect();
        for (new_id, s) in model.services.iter_enumerated() {
            if let Some(old_id) = old.base.service_by_name(&s.name)
                && let Some(slot) = renumbered_services.get_mut(old_id)
            {
                *slot = Some(new_id);
            }
        }
        let same_name = renumbered_services
            .iter_enumerated()
            .filter_map(|(old_id, new_id)| Some(((*new_id)?, old_id)));
        for (new_id, old_id) in same_name {
            let service = &model.services[new_id];
            let old_service = old.model.service(old_id);
            if old_service.ip != service.ip
                || old_service.port != service.port
                || old_service.site != service.site
                    && old.model.site(old_service.site).name != model.site(service.site).name
            {
                continue;
            }
            let o = &old.services[old_id];
            let old_status = old.status.get(old_id);
            for (slot, mon_id) in service.monitors.iter().enumerate() {
                let Some(old_mon) = same_monitor[*mon_id] else {
                    continue;
                };
                if let Some(old_slot) = old_service.monitors.iter().position(|m| *m == old_mon) {
                    self.services[new_id].tallies[slot] = o.tallies[old_slot].clone();
                    if let (Some(st), Some(os)) = (self.status.get_mut(new_id), old_status)
                        && let (Some(m), Some(om)) =
                            (st.monitors.get_mut(slot), os.monitors.get(old_slot))
                    {
                        *m = om.clone();
                    }
                }
            }
            self.services[new_id].report = o.report.clone();
            self.services[new_id].local_metrics = o.local_metrics;
            self.services[new_id].up = o.up;
            old_up[new_id] = Some(o.up);
            if let (Some(st), Some(os)) = (self.status.get_mut(new_id), old_status) {
                st.last_change = os.last_change;
            }
        }
        // A monitored service the reload adds (or whose address changed) was
        // never seen UP: it is DOWN until its first result, so DNS, which
        // answers already, never points at it unprobed.
        for (i, was) in old_up.iter_enumerated() {
            if was.is_none()
                && (!model.services[i].monitors.is_empty() || self.uses_metric_exchange(i))
            {
                self.services[i].up = false;
            }
        }
        self.settle_everything(now, Some(&old_up));
        if !self.ready {
            self.awaiting_first = self.count_awaiting();
        }
        // First, so that what follows is read against the new configuration.
        let renumber = Renumbering {
            vservers: old
                .model
                .vservers
                .iter()
                .map(|v| {
                    self.index
                        .vservers
                        .get(&v.name.to_ascii_lowercase())
                        .copied()
                })
                .collect(),
            services: renumbered_services,
        };
        effects.push(Effect::Restart {
            model,
            generation: self.generation,
            closed_gates: self.closed_gates(),
            slow_probes: self.slow_probes(),
            renumber,
        });
        let run = self.runs_metric_exchange();
        if run != ran {
            effects.push(Effect::MetricExchange { run });
        }
        for (i, was) in old_up.iter_enumerated() {
            if let Some(was) = was
                && *was != self.services[i].up
            {
                effects.push(Effect::Transition {
                    service: i,
                    up: self.services[i].up,
                    reason: self
                        .status
                        .get(i)
                        .map(|s| Arc::clone(&s.reason))
                        .unwrap_or_else(|| Arc::from("")),
                });
            }
        }
        // A reloaded configuration is published at once.
        self.states_dirty = true;
    }

    // ---- sessions ------------------------------------------------------------

    fn share_sessions(&mut self, entries: Vec<LocalSession>, effects: &mut Vec<Effect>) {
        if !self.session_exchange() || entries.is_empty() {
            return;
        }
        let shared: Vec<SharedSession> = entries
            .iter()
            .filter_map(|e| {
                let v = self.model.vservers.get(e.vserver)?;
                let p = v.persistence?;
                let service = self.model.services.get(e.service)?;
                Some(SharedSession {
                    vserver: v.name.clone(),
                    key: e.key,
                    prefix: if e.key.is_ipv4() {
                        p.v4_mask
                    } else {
                        p.v6_mask
                    },
                    service: service.name.clone(),
                    remaining: e.remaining,
                })
            })
            .collect();
        if !shared.is_empty() {
            effects.push(Effect::ShareSessions(shared));
        }
    }

    fn install_sessions(
        &mut self,
        site: &str,
        entries: Vec<SharedSession>,
        effects: &mut Vec<Effect>,
    ) {
        if !self.session_exchange() {
            return;
        }
        let Some(from) = self.index.site(site) else {
            return;
        };
        let from_site = self.model.site(from);
        if !from_site.session_exchange || from_site.parent.is_some() {
            return;
        }
        let installs: Vec<InstallSession> = entries
            .iter()
            .filter_map(|e| {
                let vid = *self.index.vservers.get(&e.vserver.to_ascii_lowercase())?;
                let v = self.model.vserver(vid);
                let p = v.persistence?;
                let prefix = if e.key.is_ipv4() {
                    p.v4_mask
                } else {
                    p.v6_mask
                };
                if prefix != e.prefix {
                    return None;
                }
                let service = v
                    .bindings
                    .iter()
                    .map(|b| b.service)
                    .find(|s| self.model.service(*s).name.eq_ignore_ascii_case(&e.service))?;
                Some(InstallSession {
                    vserver: vid,
                    key: e.key,
                    service,
                    remaining: e.remaining.min(p.timeout),
                })
            })
            .collect();
        if !installs.is_empty() {
            effects.push(Effect::InstallSessions(installs));
        }
    }

    // ---- publication ---------------------------------------------------------

    /// Per site: this site's own figures, the others' as reported.
    fn gather_site_figures(&self) -> Arc<[Option<SiteFigures>]> {
        self.model
            .sites
            .ids()
            .map(|i| {
                if self.model.local_site == Some(i) {
                    Some(self.own_site).filter(SiteFigures::is_known)
                } else {
                    self.dc.reported_figures(i)
                }
            })
            .collect()
    }

    fn publish(&mut self, now: Duration, effects: &mut Vec<Effect>) {
        let states: Arc<[ServiceState]> = self
            .services
            .iter()
            .map(|s| ServiceState { up: s.up })
            .collect();
        let metrics: Arc<[ServiceMetrics]> = Arc::from(self.figures.as_slice());
        let status = self.status.publish();
        let rtt = self.ldns.table(&ldns::Ctx {
            model: &self.model,
            peers_up: &self.peers_up,
        });
        let dc_orders = self.with_dc(|book, ctx| book.publish(ctx));
        let peer_links = match &self.peer_links {
            Some(p) => Arc::clone(p),
            None => {
                let p: Arc<[PeerLink]> = self
                    .model
                    .sites
                    .iter()
                    .map(|s| {
                        let peer = self.peers.get(&s.name.to_ascii_lowercase());
                        PeerLink {
                            up: peer.is_some_and(|p| p.up),
                            via: peer.and_then(|p| p.via.as_deref()).map(Arc::from),
                        }
                    })
                    .collect();
                self.peer_links = Some(Arc::clone(&p));
                p
            }
        };
        let site_figures = match &self.site_figures {
            Some(f) => Arc::clone(f),
            None => {
                let f = self.gather_site_figures();
                self.site_figures = Some(Arc::clone(&f));
                f
            }
        };
        let snapshot = self
            .base
            .with_health(states, metrics, status)
            .with_rtt(rtt)
            .with_dc_orders(dc_orders)
            .with_site_figures(site_figures)
            .with_peer_links(peer_links)
            .with_listeners(self.listeners.published().into())
            .with_admin(Arc::clone(&self.admin_table));
        if !self.pending_rtt.is_empty() {
            // The latest of each group only.
            let mut seen = std::collections::HashSet::new();
            let mut list: Vec<_> = std::mem::take(&mut self.pending_rtt)
                .into_iter()
                .rev()
                .filter(|r| seen.insert(r.group))
                .collect();
            list.reverse();
            effects.push(Effect::ShareRtt(list));
        }
        self.states_dirty = false;
        self.figures_dirty = false;
        self.last_publish = Some(now);
        effects.push(Effect::Publish(Arc::new(snapshot)));
        // Nothing is reported before every monitored service has its first
        // result: a peer must not answer with a backend never seen UP.
        if self.report_dirty && self.ready {
            self.report_dirty = false;
            if let Some(report) = self.local_report()
                && self.last_report.as_deref() != Some(&report)
            {
                let report = Arc::new(report);
                self.last_report = Some(Arc::clone(&report));
                effects.push(Effect::Report(report));
            }
        }
    }

    /// Re-derives the load figures the decision core sees for one service:
    /// measured here for local services (the monitors' response time
    /// standing in when no source gives one), reported by the owning site for
    /// remote ones.
    fn refresh_figures(&mut self, i: ServiceId) {
        let svc = &self.services[i];
        let m = if self.uses_metric_exchange(i) {
            if self.site_timers(self.model.services[i].site).learning {
                ServiceMetrics::NONE
            } else {
                svc.report.as_ref().map(|r| r.metrics).unwrap_or_default()
            }
        } else {
            let mut m = svc.local_metrics;
            if m.response_time_us.is_none() {
                m.response_time_us = self
                    .status
                    .get(i)
                    .and_then(|s| s.monitors.iter().filter_map(|m| m.last_response).max())
                    .map(|d| d.as_micros() as u64);
            }
            m
        };
        self.figures[i] = m;
    }

    /// This site's report, when it takes part in metric exchange.
    fn local_report(&self) -> Option<LocalReport> {
        let local = self.local_site()?;
        if !self.model.site(local).metric_exchange || self.model.sites.len() < 2 {
            return None;
        }
        let metrics = &self.figures;
        Some(LocalReport {
            services: self.index.site_services[local]
                .iter()
                .map(|&i| {
                    let s = &self.model.services[i];
                    ReportedService {
                        name: Arc::clone(&self.index.names[i]),
                        ip: s.ip,
                        port: s.port,
                        public_ip: s.public_ip,
                        public_port: s.public_port,
                        up: self.services[i].up,
                        metrics: metrics[i],
                    }
                })
                .collect(),
            site: self.own_site,
        })
    }
}

/// `N s` for a whole number of seconds, else `N.NNN s`.
fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.3} s", d.as_secs_f64())
    }
}

/// The reason of a service that no monitor and no peer decides.
pub const NO_MONITOR: &str = "no monitor bound: UP until something says otherwise";

/// The local site has metric exchange on and another site to talk to.
pub fn metric_exchange_configured(model: &Model) -> bool {
    model
        .local_site
        .is_some_and(|l| model.site(l).metric_exchange && model.sites.len() > 1)
}

/// The local site's IP when it is one of this node's VRRP VIPs (seed 004):
/// metric exchange then runs on the node that is master for it.
pub fn site_ip_vip(model: &Model) -> Option<IpAddr> {
    let ip = model.site(model.local_site?).ip;
    model
        .vrrp
        .vrids
        .iter()
        .any(|v| v.addresses.iter().any(|a| a.ip == ip))
        .then_some(ip)
}
