//! VRRP (seed 004) wired to the rest: one task per interface drives that
//! interface's virtual routers ([`sextant_vrrp::router::Routers`]) with a
//! raw advert socket per family and one [`LinuxLink`] per VRID; what each
//! VRID tracks (the node's DNS listener on its VIPs, tracked vservers,
//! services and interfaces) is read from the published snapshot.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use sextant_core::vrrp::{Tracking as ConfTracking, VrrpChecksum, VrrpSettings};
use sextant_core::{Model, ServiceId, Snapshot, VServerId};
use sextant_dns::DnsShared;
use sextant_vrrp::interface::{BackupMode, Binding, Frame, Interface as Driver, Notice};
use sextant_vrrp::link::Vip;
use sextant_vrrp::machine::{Config, State};
use sextant_vrrp::packet::{ChecksumMode, Family};
use sextant_vrrp::router::{RouterConfig, RouterId, RouterStatus, Routers, Tracked};
use sextant_vrrp::tracking::Tracking;
use sextant_vrrp_net::{AdvertSocket, Interface, LinuxLink, LinuxLinkOptions};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{error, info, warn};

use crate::clock::Clock;

/// How often tracked objects and tracked interfaces are looked at.
const TRACK_EVERY: Duration = Duration::from_millis(100);

/// What `/v1/vrrp` reads.
#[derive(Debug, Default)]
pub struct VrrpView {
    /// Per interface: its routers' status and its drop counters.
    interfaces: Mutex<BTreeMap<String, InterfaceView>>,
}

#[derive(Debug, Default, Clone)]
struct InterfaceView {
    routers: Vec<(RouterStatus, bool, bool)>,
    dropped: BTreeMap<&'static str, u64>,
}

impl VrrpView {
    /// The API's shape of everything.
    pub fn api(&self) -> sextant_api::Vrrp {
        let map = self
            .interfaces
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out = sextant_api::Vrrp::default();
        for (iface, view) in map.iter() {
            for (st, preemption, sharing) in &view.routers {
                out.vrids.push(api_vrid(iface, st, *preemption, *sharing));
            }
            for (reason, count) in &view.dropped {
                out.dropped.push(sextant_api::VrrpDropped {
                    interface: iface.clone(),
                    reason: (*reason).to_string(),
                    count: *count,
                });
            }
        }
        out.vrids
            .sort_by(|a, b| (a.vrid, &a.family).cmp(&(b.vrid, &b.family)));
        out
    }
}

fn state_name(s: State) -> &'static str {
    match s {
        State::Initialize => "INITIALIZE",
        State::Backup => "BACKUP",
        State::Master => "MASTER",
        State::Fault => "FAULT",
    }
}

fn tracking_name(t: Tracking) -> &'static str {
    match t {
        Tracking::None => "NONE",
        Tracking::All => "ALL",
        Tracking::One => "ONE",
        Tracking::Progressive => "PROGRESSIVE",
    }
}

fn family_name(f: Family) -> &'static str {
    match f {
        Family::V4 => "ipv4",
        Family::V6 => "ipv6",
    }
}

fn checksum_name(c: ChecksumMode) -> &'static str {
    match c {
        ChecksumMode::PseudoHeader => "pseudo-header",
        ChecksumMode::NoPseudoHeader => "rfc9568",
    }
}

fn api_vrid(
    iface: &str,
    st: &RouterStatus,
    preemption: bool,
    sharing: bool,
) -> sextant_api::VrrpVrid {
    sextant_api::VrrpVrid {
        vrid: st.vrid,
        family: family_name(st.family).to_string(),
        interface: iface.to_string(),
        state: state_name(st.state).to_string(),
        base_priority: st.base_priority,
        effective_priority: st.effective_priority,
        tracking: tracking_name(st.tracking).to_string(),
        master: st.master.map(|m| m.to_string()),
        master_adver_interval_ms: st.master_adver_interval.as_millis() as u64,
        preemption,
        sharing,
        addresses: st.addresses.iter().map(ToString::to_string).collect(),
        tracked: st
            .tracked
            .iter()
            .map(|t| sextant_api::VrrpTracked {
                name: t.name.clone(),
                up: t.up,
                required: t.required,
            })
            .collect(),
        transitions: st
            .transitions
            .iter()
            .map(|t| sextant_api::VrrpTransition {
                at_seconds: t.at.as_secs_f64(),
                from: state_name(t.from).to_string(),
                to: state_name(t.to).to_string(),
                reason: t.reason.clone(),
            })
            .collect(),
        transitions_total: st.transitions_total,
        adverts_received: st.adverts_received,
        address_mismatches: st.address_mismatches,
        peer_checksum: st.peer_checksum.map(|c| checksum_name(c).to_string()),
    }
}

/// The running VRRP tasks.
pub struct VrrpHandle {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl VrrpHandle {
    /// Gives every VIP up gracefully (priority 0, so backups take over
    /// after Skew_Time rather than Master_Down_Interval) and waits for it.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

/// What one VRID tracks, resolved against the model.
#[derive(Debug, Clone, Default)]
struct TrackSpec {
    /// The DNS listeners on this VRID's VIPs (their self-probe verdicts
    /// are in the snapshot).
    dns: Vec<SocketAddr>,
    vservers: Vec<(String, VServerId)>,
    services: Vec<(String, ServiceId)>,
    interfaces: Vec<String>,
}

/// Reads `socket` into `tx` until the task is aborted or the interface's
/// task is gone.
fn spawn_reader(socket: AdvertSocket, tx: mpsc::Sender<Frame>, via_vmac: bool) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut buf = vec![0u8; 2048];
        let mut errors = 0u32;
        loop {
            match socket.recv(&mut buf).await {
                Ok(r) => {
                    errors = 0;
                    let Some(payload) = buf.get(r.payload.clone()) else {
                        continue;
                    };
                    let packet = Frame {
                        payload: payload.to_vec(),
                        from: r.from,
                        to: r.to,
                        ttl: r.ttl,
                        via_vmac,
                    };
                    // Full: the interface task is behind; VRRP tolerates
                    // a lost advert (three make a master down).
                    if let Err(mpsc::error::TrySendError::Closed(_)) = tx.try_send(packet) {
                        return;
                    }
                }
                Err(e) => {
                    errors += 1;
                    if errors == 1 || errors.is_power_of_two() {
                        warn!(interface = socket.interface(), error = %e, errors, "VRRP receive failed");
                    }
                    if errors > 16 {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
        }
    })
}

/// What is set up on this host for a Backup's traffic, as
/// [`BackupMode`] (decided in `sextant-vrrp`) says: for sharing, the VIPs
/// on `lo` and ARP for them off on the interface; for send-to-master, IPv4
/// forwarding on it.
#[derive(Debug, Default)]
enum BackupTraffic {
    /// Not Backup, or dropping.
    #[default]
    Off,
    Sharing {
        on_lo: Vec<Vip>,
        _arp: Vec<sextant_vrrp_net::SharedSysctl>,
    },
    ToMaster {
        _forwarding: Vec<sextant_vrrp_net::SharedSysctl>,
    },
}

impl BackupTraffic {
    /// Takes the VIPs off `lo`; the sysctls come back as the guards drop.
    fn stop(&mut self) {
        if let BackupTraffic::Sharing { on_lo, .. } = self {
            for vip in on_lo.iter() {
                if let Err(e) = sextant_vrrp_net::remove_local_address("lo", vip) {
                    warn!(error = %e, "VRRP sharing: cannot remove {vip} from lo");
                }
            }
        }
        *self = BackupTraffic::Off;
    }
}

fn shared_sysctls(
    settings: &[(String, &str)],
) -> Result<Vec<sextant_vrrp_net::SharedSysctl>, sextant_vrrp_net::NetError> {
    settings
        .iter()
        .map(|(path, value)| sextant_vrrp_net::SharedSysctl::set(path, value))
        .collect()
}

/// What woke an interface's task.
enum Wake {
    Packet(Frame),
    Timer,
    Track,
    Stop,
}

/// One interface's routers and links: the decisions in
/// [`sextant_vrrp::interface::Interface`], the sockets, readers and host
/// settings here.
struct InterfaceRun {
    iface: Interface,
    /// The base interface's advert sockets, opened at start.
    sockets: Vec<AdvertSocket>,
    /// Where every reader task hands its frames.
    packets: mpsc::Sender<Frame>,
    inbox: Option<mpsc::Receiver<Frame>>,
    driver: Driver<LinuxLink>,
    edge: Edge,
    /// The daemon's time base: `now` and every timer are on it.
    clock: Clock,
    track: Vec<TrackSpec>,
    flags: Vec<(bool, bool)>,
}

/// What the notices of the driver act on.
struct Edge {
    /// The daemon's time base (events show the wall-clock time).
    clock: Clock,
    iface: String,
    /// Per router: its VRID and VIPs.
    vrids: Vec<u8>,
    vips: Vec<Vec<Vip>>,
    /// Per router, while it holds its VIPs on a virtual-MAC interface: the
    /// reader of that interface. A peer that is master at the same time
    /// (after a partition heals) sends from the same virtual MAC, and the
    /// kernel's macvlan hands such frames to the macvlan only, never to the
    /// base interface; without this reader the two masters would never
    /// hear each other.
    vmac_readers: Vec<Option<JoinHandle<()>>>,
    /// Per router, what is set up for its traffic while Backup.
    backup: Vec<BackupTraffic>,
    /// The site IP, when it is a VIP, and who to tell when this node takes
    /// or gives it up (metric exchange follows it).
    site_ip: Option<Arc<(IpAddr, watch::Sender<bool>)>>,
    /// Routers that became master in the step just done: their virtual-MAC
    /// readers open once the step is over.
    listen: Vec<RouterId>,
    /// Where state changes go for `/v1/events`.
    events: Option<crate::events::Events>,
}

impl Edge {
    fn notice(&mut self, n: Notice) {
        match n {
            Notice::Transition {
                id,
                from,
                to,
                reason,
            } => {
                let vrid = self.vrids.get(id).copied().unwrap_or(0);
                info!(
                    interface = %self.iface,
                    vrid,
                    from = state_name(from),
                    to = state_name(to),
                    reason = %reason,
                    "VRRP VRID {vrid} {} -> {}: {reason}",
                    state_name(from),
                    state_name(to)
                );
                if let Some(events) = &self.events {
                    events.send(
                        "vrrp",
                        serde_json::json!({
                            "time": crate::api::rfc3339(self.clock.wall_now()),
                            "interface": self.iface,
                            "vrid": vrid,
                            "from": state_name(from),
                            "to": state_name(to),
                            "reason": reason.to_string(),
                        }),
                    );
                }
            }
            Notice::Took { id } => self.site_ip_held(id, true),
            Notice::Releasing { id } => {
                self.site_ip_held(id, false);
                if let Some(Some(r)) = self.vmac_readers.get_mut(id).map(Option::take) {
                    r.abort();
                }
            }
            Notice::ListenOnVmac { id } => self.listen.push(id),
            Notice::BackupTraffic { id, mode } => {
                if let (Some(b), Some(vips)) = (self.backup.get_mut(id), self.vips.get(id)) {
                    b.stop();
                    *b = backup_traffic(&self.iface, vips, mode);
                }
            }
            Notice::Link { up: Err(why) } => {
                warn!(interface = %self.iface, reason = %why, "VRRP link lost: every VRID on it goes to FAULT and gives its VIPs up");
            }
            Notice::Link { up: Ok(()) } => {
                info!(interface = %self.iface, "VRRP link back: every VRID on it rejoins as backup");
            }
            Notice::Failed { id, action, error } => {
                let vrid = self.vrids.get(id).copied().unwrap_or(0);
                error!(interface = %self.iface, vrid, %error, "VRRP: cannot {action}");
            }
        }
    }

    /// Tells metric exchange whether this node holds the site IP.
    fn site_ip_held(&self, id: RouterId, held: bool) {
        if let (Some(site), Some(vips)) = (self.site_ip.as_deref(), self.vips.get(id))
            && vips.iter().any(|v| v.ip == site.0)
        {
            let _ = site.1.send(held);
        }
    }
}

/// Starts VRRP for `model`'s VRIDs, or returns None when it has none.
/// `dns_serving` says whether this node's DNS listeners are answering.
pub fn start(
    model: &Arc<Model>,
    dns: Arc<DnsShared>,
    dns_serving: Arc<AtomicBool>,
    view: Arc<VrrpView>,
    site_ip: Option<(IpAddr, watch::Sender<bool>)>,
    clock: Clock,
    events: crate::events::Events,
) -> anyhow::Result<Option<VrrpHandle>> {
    let site_ip = site_ip.map(Arc::new);
    let settings = &model.vrrp;
    if settings.vrids.is_empty() {
        return Ok(None);
    }
    let mut by_iface: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, v) in settings.vrids.iter().enumerate() {
        let Some(name) = v.interfaces.first() else {
            continue;
        };
        if v.interfaces.len() > 1 {
            warn!(
                vrid = v.id,
                "VRID {} is bound to several interfaces; VRRP runs on the first, {name}", v.id
            );
        }
        by_iface.entry(name.clone()).or_default().push(i);
    }
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = Vec::new();
    for (name, vrids) in by_iface {
        let first = InterfaceRun::new(model, settings, &name, &vrids, clock);
        let pending = match first {
            Ok(run) => Ok(run),
            // An IPv6 link-local address still in DAD (just after boot or
            // link up): wait for it rather than refuse to start.
            Err(e) if address_not_ready(&e) => {
                warn!(interface = %name, error = %format!("{e:#}"), "VRRP waits for the interface's address (IPv6 DAD?)");
                Err(Arc::clone(model))
            }
            Err(e) => return Err(e.context(format!("cannot start VRRP on {name}"))),
        };
        let (dns, dns_serving, view, stop) = (
            Arc::clone(&dns),
            Arc::clone(&dns_serving),
            Arc::clone(&view),
            stop_rx.clone(),
        );
        let site_ip = site_ip.clone();
        let events = events.clone();
        tasks.push(tokio::spawn(async move {
            let mut run = match pending {
                Ok(run) => run,
                Err(model) => match retry_until_ready(&model, &name, &vrids, clock).await {
                    Some(run) => run,
                    None => return,
                },
            };
            run.edge.site_ip = site_ip;
            run.edge.events = Some(events);
            run.serve(dns, dns_serving, view, stop).await;
        }));
    }
    Ok(Some(VrrpHandle {
        stop: stop_tx,
        tasks,
    }))
}

/// How long VRRP waits for an interface's address to become usable.
const ADDRESS_WAIT: Duration = Duration::from_secs(30);

/// Whether `e` is an address that is not usable yet (EADDRNOTAVAIL).
fn address_not_ready(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::AddrNotAvailable)
    })
}

/// Builds the interface's routers again every 200 ms until its address is
/// usable; None (logged) after [`ADDRESS_WAIT`] or another error.
async fn retry_until_ready(
    model: &Model,
    name: &str,
    vrids: &[usize],
    clock: Clock,
) -> Option<InterfaceRun> {
    let start = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        match InterfaceRun::new(model, &model.vrrp, name, vrids, clock) {
            Ok(run) => {
                info!(interface = name, waited = ?start.elapsed(), "VRRP starting: the interface's address is ready");
                return Some(run);
            }
            Err(e) if address_not_ready(&e) && start.elapsed() < ADDRESS_WAIT => {}
            Err(e) => {
                error!(interface = name, error = %format!("{e:#}"), "VRRP cannot start on this interface: its VIPs stay with the other nodes");
                return None;
            }
        }
    }
}

fn checksum(c: VrrpChecksum) -> ChecksumMode {
    match c {
        VrrpChecksum::PseudoHeader => ChecksumMode::PseudoHeader,
        VrrpChecksum::Rfc9568 => ChecksumMode::NoPseudoHeader,
    }
}

fn tracking(t: ConfTracking) -> Tracking {
    match t {
        ConfTracking::None => Tracking::None,
        ConfTracking::All => Tracking::All,
        ConfTracking::One => Tracking::One,
        ConfTracking::Progressive => Tracking::Progressive,
    }
}

impl InterfaceRun {
    fn new(
        model: &Model,
        settings: &VrrpSettings,
        name: &str,
        vrids: &[usize],
        clock: Clock,
    ) -> anyhow::Result<InterfaceRun> {
        let iface = sextant_vrrp_net::interface(name)?;
        let mut configs = Vec::new();
        let mut links = Vec::new();
        let mut vips = Vec::new();
        let mut track = Vec::new();
        let mut flags = Vec::new();
        let (mut want_v4, mut want_v6) = (false, false);
        for &i in vrids {
            let v = &settings.vrids[i];
            let addresses: Vec<IpAddr> = v.addresses.iter().map(|a| a.ip).collect();
            if addresses.is_empty() {
                continue;
            }
            let family = Family::of(addresses[0]);
            match family {
                Family::V4 => want_v4 = true,
                Family::V6 => want_v6 = true,
            }
            let mut machine = Config::configured(v.id, v.priority);
            machine.advert_interval = settings.params.hello_interval;
            machine.preempt = v.preemption;
            machine.preempt_delay = v.preemption_delay;
            configs.push(RouterConfig {
                machine,
                addresses: addresses.clone(),
                tracking: tracking(v.tracking),
                checksum: checksum(settings.params.checksum),
            });
            let vip: Vec<Vip> = v
                .addresses
                .iter()
                .map(|a| Vip {
                    ip: a.ip,
                    prefix_len: a.prefix_len,
                })
                .collect();
            links.push(
                LinuxLink::new(
                    &iface,
                    v.id,
                    family,
                    LinuxLinkOptions {
                        virtual_mac: settings.params.virtual_mac,
                    },
                )
                .with_context(|| format!("VRID {}", v.id))?,
            );
            vips.push(vip);
            track.push(TrackSpec {
                dns: model
                    .dns_listen
                    .iter()
                    .filter(|a| addresses.contains(&a.ip()))
                    .copied()
                    .collect(),
                vservers: v
                    .track_vservers
                    .iter()
                    .filter_map(|n| model.vserver_by_name(n).map(|id| (n.clone(), id)))
                    .collect(),
                services: v
                    .track_services
                    .iter()
                    .filter_map(|n| model.service_by_name(n).map(|id| (n.clone(), id)))
                    .collect(),
                interfaces: v.track_interfaces.clone(),
            });
            flags.push((v.preemption, v.sharing));
        }
        let local_v4 = iface.ipv4.map(IpAddr::V4);
        let local_v6 = iface.ipv6_link_local.map(IpAddr::V6);
        if want_v4 && local_v4.is_none() {
            anyhow::bail!(
                "{name} has no IPv4 address: VRRP sends its adverts from the interface's own address"
            );
        }
        let routers = Routers::new(configs, local_v4, local_v6)?;
        let mut sockets = Vec::new();
        if want_v4 {
            sockets.push(AdvertSocket::open_v4(&iface)?);
        }
        if want_v6 {
            sockets.push(AdvertSocket::open_v6(&iface)?);
        }
        let (packets, inbox) = mpsc::channel(256);
        let edge = Edge {
            clock,
            iface: iface.name.clone(),
            vrids: routers
                .ids()
                .map(|id| routers.config(id).map_or(0, |c| c.machine.vrid))
                .collect(),
            vips: vips.clone(),
            vmac_readers: (0..links.len()).map(|_| None).collect(),
            backup: (0..links.len()).map(|_| BackupTraffic::Off).collect(),
            site_ip: None,
            listen: Vec::new(),
            events: None,
        };
        let bindings = links
            .into_iter()
            .zip(vips)
            .zip(&flags)
            .map(|((link, vips), &(_, sharing))| Binding {
                link,
                vips,
                sharing,
            })
            .collect();
        Ok(InterfaceRun {
            driver: Driver::new(routers, bindings, settings.params.send_to_master),
            edge,
            clock,
            iface,
            sockets,
            packets,
            inbox: Some(inbox),
            track,
            flags,
        })
    }

    /// Runs `step` on the driver with this edge's notices, then opens the
    /// virtual-MAC readers of the routers that became master in it.
    fn step(&mut self, step: impl FnOnce(&mut Driver<LinuxLink>, &mut dyn FnMut(Notice))) {
        let edge = &mut self.edge;
        step(&mut self.driver, &mut |n| edge.notice(n));
        for id in std::mem::take(&mut self.edge.listen) {
            if let (Some(b), Some(slot)) =
                (self.driver.binding(id), self.edge.vmac_readers.get_mut(id))
            {
                if let Some(old) = slot.take() {
                    old.abort();
                }
                *slot = vmac_reader(&b.link, &self.iface, &self.packets);
            }
        }
    }

    /// Whether the interface has its link now, and if not why (the reason
    /// for the log and the FAULT transition).
    fn link_state(&self) -> Result<(), String> {
        match sextant_vrrp_net::interface(&self.iface.name) {
            Ok(i) if i.up => Ok(()),
            Ok(_) => Err(format!(
                "interface {} is down or has no carrier",
                self.iface.name
            )),
            Err(e) => Err(format!("interface {}: {e}", self.iface.name)),
        }
    }

    /// Follows the interface's link: every VRID on it goes to FAULT when it
    /// is lost (a master gives its VIPs up at once) and starts again as
    /// backup when it returns.
    fn follow_link(&mut self, now: Duration) {
        let state = self.link_state();
        self.step(|d, out| d.link(state, now, out));
    }

    async fn serve(
        mut self,
        dns: Arc<DnsShared>,
        dns_serving: Arc<AtomicBool>,
        view: Arc<VrrpView>,
        mut stop: watch::Receiver<bool>,
    ) {
        let clock = self.clock;
        let now = || clock.now();
        // Tracked states first, so that a node that cannot answer yet
        // starts with priority 0 and never takes a VIP it cannot serve.
        self.track_all(&dns.snapshot.load(), &dns_serving, now());
        self.step(|d, out| d.startup(now(), out));
        // An interface without its link at start: FAULT until it comes.
        self.follow_link(now());
        self.publish(&view);
        let Some(mut inbox) = self.inbox.take() else {
            return;
        };
        let readers: Vec<JoinHandle<()>> = std::mem::take(&mut self.sockets)
            .into_iter()
            .map(|s| spawn_reader(s, self.packets.clone(), false))
            .collect();
        let mut track_tick = tokio::time::interval(TRACK_EVERY);
        loop {
            let next = self.driver.next_wake();
            let wake = tokio::select! {
                Some(p) = inbox.recv() => Wake::Packet(p),
                () = sleep_until(next.map(|d| clock.deadline(d))) => Wake::Timer,
                _ = track_tick.tick() => Wake::Track,
                _ = stop.changed() => Wake::Stop,
            };
            match wake {
                Wake::Packet(p) => self.step(|d, out| d.received(&p, now(), out)),
                Wake::Timer => self.step(|d, out| d.timer(now(), out)),
                Wake::Track => {
                    self.follow_link(now());
                    self.track_all(&dns.snapshot.load(), &dns_serving, now());
                }
                Wake::Stop => break,
            }
            self.publish(&view);
        }
        self.step(|d, out| d.shutdown(now(), out));
        self.publish(&view);
        for r in readers
            .iter()
            .chain(self.edge.vmac_readers.iter().flatten())
        {
            r.abort();
        }
        info!(interface = %self.iface.name, "VRRP stopped: VIPs given up");
    }

    fn track_all(&mut self, snap: &Snapshot, dns_serving: &AtomicBool, now: Duration) {
        let serving = dns_serving.load(Ordering::Acquire);
        for id in self.driver.routers().ids() {
            let Some(spec) = self.track.get(id) else {
                continue;
            };
            let mut tracked = Vec::new();
            for addr in &spec.dns {
                tracked.push(Tracked::required(
                    format!("dns {addr}"),
                    serving && snap.listener_up(*addr),
                ));
            }
            for name in &spec.interfaces {
                let up = sextant_vrrp_net::interface(name).is_ok_and(|i| i.up);
                tracked.push(Tracked::required(format!("interface {name}"), up));
            }
            for (name, vs) in &spec.vservers {
                tracked.push(Tracked::counted(
                    format!("vserver {name}"),
                    vserver_up(snap, *vs),
                ));
            }
            for (name, s) in &spec.services {
                tracked.push(Tracked::counted(format!("service {name}"), snap.is_up(*s)));
            }
            self.step(|d, out| d.track(id, tracked, now, out));
        }
    }

    fn publish(&self, view: &VrrpView) {
        let r = self.driver.routers();
        let routers = r
            .ids()
            .filter_map(|id| {
                let (p, s) = self.flags.get(id).copied().unwrap_or((true, false));
                r.status(id).map(|st| (st, p, s))
            })
            .collect();
        let mut map = view
            .interfaces
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.insert(
            self.iface.name.clone(),
            InterfaceView {
                routers,
                dropped: r.dropped().clone(),
            },
        );
    }
}

/// Sets up what `mode` needs on this host for a Backup's traffic for
/// `vips` (see [`BackupTraffic`]); failures are logged and leave it
/// dropping.
fn backup_traffic(iface: &str, vips: &[Vip], mode: BackupMode) -> BackupTraffic {
    let v4 = vips.iter().any(|v| v.ip.is_ipv4());
    match mode {
        BackupMode::Drop => BackupTraffic::Off,
        BackupMode::Share => {
            let arp = if v4 {
                shared_sysctls(&[
                    (format!("net/ipv4/conf/{iface}/arp_ignore"), "1"),
                    (format!("net/ipv4/conf/{iface}/arp_announce"), "2"),
                ])
            } else {
                Ok(Vec::new())
            };
            let arp = match arp {
                Ok(a) => a,
                Err(e) => {
                    warn!(error = %e, "VRRP sharing needs ARP for lo addresses off on {iface}; not sharing");
                    return BackupTraffic::Off;
                }
            };
            let mut on_lo = Vec::new();
            for vip in vips {
                let host = Vip::host(vip.ip);
                match sextant_vrrp_net::add_local_address("lo", &host) {
                    Ok(()) => on_lo.push(host),
                    Err(e) => warn!(error = %e, "VRRP sharing: cannot add {host} to lo"),
                }
            }
            BackupTraffic::Sharing { on_lo, _arp: arp }
        }
        BackupMode::ToMaster => match shared_sysctls(&[
            (format!("net/ipv4/conf/{iface}/forwarding"), "1"),
            (format!("net/ipv4/conf/{iface}/send_redirects"), "0"),
            ("net/ipv4/conf/all/send_redirects".to_string(), "0"),
        ]) {
            Ok(f) => BackupTraffic::ToMaster { _forwarding: f },
            Err(e) => {
                warn!(error = %e, "VRRP send-to-master needs forwarding on {iface}; dropping instead");
                BackupTraffic::Off
            }
        },
    }
}

/// A reader of `link`'s virtual-MAC interface, when it has one (see
/// `InterfaceRun::vmac_readers`); None without a virtual MAC, or when the
/// socket cannot be opened (logged: the node then only hears a competing
/// master once it steps down).
fn vmac_reader(
    link: &LinuxLink,
    base: &Interface,
    tx: &mpsc::Sender<Frame>,
) -> Option<JoinHandle<()>> {
    let name = link.vip_interface();
    if name == base.name {
        return None;
    }
    let opened = sextant_vrrp_net::interface(name).and_then(|mut i| {
        // The socket only listens; the base's address stands in if the
        // macvlan has none of this family yet.
        i.ipv4 = i.ipv4.or(base.ipv4);
        i.ipv6_link_local = i.ipv6_link_local.or(base.ipv6_link_local);
        match link.family() {
            Family::V4 => AdvertSocket::open_v4(&i),
            Family::V6 => AdvertSocket::open_v6(&i),
        }
    });
    match opened {
        Ok(socket) => Some(spawn_reader(socket, tx.clone(), true)),
        Err(e) => {
            warn!(interface = name, error = %e, "cannot listen for VRRP on the virtual MAC interface");
            None
        }
    }
}

/// A vserver is UP while at least one of its services is.
fn vserver_up(snap: &Snapshot, vs: VServerId) -> bool {
    snap.model()
        .vserver(vs)
        .bindings
        .iter()
        .any(|b| snap.is_up(b.service))
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
