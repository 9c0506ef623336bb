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
use sextant_vrrp::link::{Link, Vip};
use sextant_vrrp::machine::{Action, Config, State};
use sextant_vrrp::packet::{ChecksumMode, Family};
use sextant_vrrp::router::{RouterConfig, RouterId, RouterStatus, Routers, Tracked};
use sextant_vrrp::tracking::Tracking;
use sextant_vrrp_net::{AdvertSocket, Interface, LinuxLink, LinuxLinkOptions};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{error, info, warn};

/// Gratuitous ARPs / unsolicited NAs per announcement (a second burst
/// follows one advert interval later, see `sextant_vrrp::machine`).
const ANNOUNCE_BURST: usize = 3;
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
    /// The DNS listen addresses on this VRID's VIPs.
    dns: Vec<SocketAddr>,
    vservers: Vec<(String, VServerId)>,
    services: Vec<(String, ServiceId)>,
    interfaces: Vec<String>,
}

/// What woke an interface's task.
enum Wake {
    V4(std::io::Result<sextant_vrrp_net::Received>),
    V6(std::io::Result<sextant_vrrp_net::Received>),
    Timer,
    Track,
    Stop,
}

/// One interface's routers and links.
struct InterfaceRun {
    iface: Interface,
    v4: Option<AdvertSocket>,
    v6: Option<AdvertSocket>,
    routers: Routers,
    links: Vec<LinuxLink>,
    vips: Vec<Vec<Vip>>,
    track: Vec<TrackSpec>,
    flags: Vec<(bool, bool)>,
}

/// Starts VRRP for `model`'s VRIDs, or returns None when it has none.
/// `dns_serving` says whether this node's DNS listeners are answering.
pub fn start(
    model: &Model,
    dns: Arc<DnsShared>,
    dns_serving: Arc<AtomicBool>,
    view: Arc<VrrpView>,
) -> anyhow::Result<Option<VrrpHandle>> {
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
        let run = InterfaceRun::new(model, settings, &name, &vrids)
            .with_context(|| format!("cannot start VRRP on {name}"))?;
        tasks.push(tokio::spawn(run.serve(
            Arc::clone(&dns),
            Arc::clone(&dns_serving),
            Arc::clone(&view),
            stop_rx.clone(),
        )));
    }
    Ok(Some(VrrpHandle {
        stop: stop_tx,
        tasks,
    }))
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
            let mut machine = Config::new(v.id, v.priority.min(254));
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
                    .filter_map(|n| {
                        model
                            .vservers
                            .iter()
                            .position(|vs| vs.name.eq_ignore_ascii_case(n))
                            .map(|id| (n.clone(), id as VServerId))
                    })
                    .collect(),
                services: v
                    .track_services
                    .iter()
                    .filter_map(|n| {
                        model
                            .services
                            .iter()
                            .position(|s| s.name.eq_ignore_ascii_case(n))
                            .map(|id| (n.clone(), id as ServiceId))
                    })
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
        let v4 = if want_v4 {
            Some(AdvertSocket::open_v4(&iface)?)
        } else {
            None
        };
        let v6 = if want_v6 {
            Some(AdvertSocket::open_v6(&iface)?)
        } else {
            None
        };
        Ok(InterfaceRun {
            iface,
            v4,
            v6,
            routers,
            links,
            vips,
            track,
            flags,
        })
    }

    async fn serve(
        mut self,
        dns: Arc<DnsShared>,
        dns_serving: Arc<AtomicBool>,
        view: Arc<VrrpView>,
        mut stop: watch::Receiver<bool>,
    ) {
        let origin = Instant::now();
        let now = || origin.elapsed();
        // Tracked states first, so that a node that cannot answer yet
        // starts with priority 0 and never takes a VIP it cannot serve.
        self.track_all(&dns.snapshot.load(), &dns_serving, now());
        for id in self.routers.ids() {
            let actions = self.routers.startup(id, now());
            self.perform(id, actions);
        }
        self.publish(&view);
        let mut buf = vec![0u8; 2048];
        let mut buf6 = vec![0u8; 2048];
        let mut track_tick = tokio::time::interval(TRACK_EVERY);
        loop {
            let next = self
                .routers
                .ids()
                .filter_map(|id| self.routers.next_timer(id))
                .min();
            let wake = tokio::select! {
                r = recv(self.v4.as_ref(), &mut buf) => Wake::V4(r),
                r = recv(self.v6.as_ref(), &mut buf6) => Wake::V6(r),
                () = sleep_until(next.map(|d| origin + d)) => Wake::Timer,
                _ = track_tick.tick() => Wake::Track,
                _ = stop.changed() => Wake::Stop,
            };
            match wake {
                Wake::V4(r) => self.received(r, &buf, now()),
                Wake::V6(r) => self.received(r, &buf6, now()),
                Wake::Timer => {
                    let t = now();
                    for id in self.routers.ids() {
                        if self.routers.next_timer(id).is_some_and(|d| d <= t) {
                            let actions = self.routers.timer(id, t);
                            self.perform(id, actions);
                        }
                    }
                }
                Wake::Track => self.track_all(&dns.snapshot.load(), &dns_serving, now()),
                Wake::Stop => break,
            }
            self.publish(&view);
        }
        for id in self.routers.ids() {
            let actions = self.routers.shutdown(id, now());
            self.perform(id, actions);
        }
        self.publish(&view);
        info!(interface = %self.iface.name, "VRRP stopped: VIPs given up");
    }

    fn received(
        &mut self,
        r: std::io::Result<sextant_vrrp_net::Received>,
        buf: &[u8],
        now: Duration,
    ) {
        let received = match r {
            Ok(r) => r,
            Err(e) => {
                warn!(interface = %self.iface.name, error = %e, "VRRP receive failed");
                return;
            }
        };
        let Some(payload) = buf.get(received.payload.clone()) else {
            return;
        };
        let dst = received
            .to
            .unwrap_or_else(|| Family::of(received.from).group());
        if let Some((id, actions)) =
            self.routers
                .received(payload, received.ttl, received.from, dst, now)
        {
            self.perform(id, actions);
        }
    }

    fn track_all(&mut self, snap: &Snapshot, dns_serving: &AtomicBool, now: Duration) {
        let serving = dns_serving.load(Ordering::Acquire);
        for id in self.routers.ids() {
            let Some(spec) = self.track.get(id) else {
                continue;
            };
            let mut tracked = Vec::new();
            for a in &spec.dns {
                tracked.push(Tracked::required(format!("dns {a}"), serving));
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
            let actions = self.routers.track(id, tracked, now);
            self.perform(id, actions);
        }
    }

    fn perform(&mut self, id: RouterId, actions: Vec<Action>) {
        let vrid = self.routers.config(id).map_or(0, |c| c.machine.vrid);
        let iface = self.iface.name.clone();
        for action in actions {
            let (Some(link), Some(vips)) = (self.links.get_mut(id), self.vips.get(id)) else {
                return;
            };
            let result = match &action {
                Action::SendAdvert { priority } => match self.routers.advert(id, *priority) {
                    Some(packet) => link.send_advert(&packet),
                    None => Ok(()),
                },
                Action::TakeAddresses => link.take_addresses(vips),
                Action::ReleaseAddresses => link.release_addresses(vips),
                Action::Announce => (0..ANNOUNCE_BURST).try_for_each(|_| link.announce(vips)),
                Action::ArmTimer { .. } => Ok(()),
                Action::Transition { from, to, reason } => {
                    info!(
                        interface = %iface,
                        vrid,
                        from = state_name(*from),
                        to = state_name(*to),
                        reason = %reason,
                        "VRRP VRID {vrid} {} -> {}: {reason}",
                        state_name(*from),
                        state_name(*to)
                    );
                    Ok(())
                }
            };
            if let Err(e) = result {
                error!(interface = %iface, vrid, error = %e, "VRRP {action:?} failed");
            }
        }
    }

    fn publish(&self, view: &VrrpView) {
        let routers = self
            .routers
            .ids()
            .filter_map(|id| {
                let (p, s) = self.flags.get(id).copied().unwrap_or((true, false));
                self.routers.status(id).map(|st| (st, p, s))
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
                dropped: self.routers.dropped().clone(),
            },
        );
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

async fn recv(
    socket: Option<&AdvertSocket>,
    buf: &mut [u8],
) -> std::io::Result<sextant_vrrp_net::Received> {
    match socket {
        Some(s) => s.recv(buf).await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
