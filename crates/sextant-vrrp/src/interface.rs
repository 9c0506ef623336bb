//! One interface's virtual routers driven through their [`Link`]s: what
//! the daemon's VRRP task used to decide itself, kept pure so that it is
//! tested with a recording link and no socket.
//!
//! On top of [`Routers`] it decides: which copy of a frame heard twice
//! (base interface and virtual-MAC interface) counts ([`Twins`]); when each
//! router's timer fires (from the machine's [`Action::ArmTimer`]); the
//! announcement schedule of a new master (a burst per `Announce`, then
//! single announcements within the first 50 ms, [`LATE_ANNOUNCES`]); what a
//! Backup does with traffic for its VIPs ([`BackupMode`]); and when the link
//! state puts every router in FAULT or back. What only the edge can do
//! (sysctls, `lo` addresses, reader sockets, logging) comes out as
//! [`Notice`]s, in order, through a sink.

use std::collections::VecDeque;
use std::net::IpAddr;
use std::time::Duration;

use crate::link::{Link, Vip};
use crate::machine::{Action, State};
use crate::packet::Family;
use crate::router::{RouterId, Routers, Tracked};

/// Gratuitous ARPs / unsolicited NAs per announcement (a second burst
/// follows one advert interval later, see [`crate::machine`]).
pub const ANNOUNCE_BURST: usize = 3;

/// After taking a VIP, single gratuitous ARPs / NAs this long after the
/// burst. The old master lets go within a few milliseconds of our advert,
/// but what it sends from the shared virtual MAC in that time (an advert,
/// replies to traffic already on its way) teaches the switch its port
/// again; these undo that within milliseconds instead of an advert
/// interval, so the first come densely.
pub const LATE_ANNOUNCES: [Duration; 5] = [
    Duration::from_millis(2),
    Duration::from_millis(5),
    Duration::from_millis(10),
    Duration::from_millis(20),
    Duration::from_millis(50),
];

/// How long a frame read on one side (base interface or virtual-MAC
/// interface) waits for its twin from the other.
pub const TWIN_WINDOW: Duration = Duration::from_millis(50);

/// A received advert: the VRRP part and its IP header's facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub payload: Vec<u8>,
    pub from: IpAddr,
    /// The destination address, where the socket reports it.
    pub to: Option<IpAddr>,
    pub ttl: u8,
    /// Read on a virtual-MAC interface (a master listens there too: a peer
    /// master sending from the same virtual MAC is heard only there).
    pub via_vmac: bool,
}

/// What a Backup does with traffic that reaches it for its VIPs (seed 004):
/// sharing answers it (the VIP on `lo`, ARP answered only for the
/// interface's own addresses, so the master still owns the VIP on the
/// link); otherwise send-to-master routes it on to the master (IPv4
/// forwarding); otherwise it is dropped (the VIP is not local).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackupMode {
    Drop,
    Share,
    ToMaster,
}

impl BackupMode {
    /// The mode of a Backup with these settings; `ToMaster` is IPv4 only.
    pub fn of(sharing: bool, send_to_master: bool, family: Family) -> BackupMode {
        if sharing {
            BackupMode::Share
        } else if send_to_master && family == Family::V4 {
            BackupMode::ToMaster
        } else {
            BackupMode::Drop
        }
    }
}

/// What the edge must do or know, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A state change, for the log.
    Transition {
        id: RouterId,
        from: State,
        to: State,
        reason: String,
    },
    /// The router holds its VIPs now (they were just added).
    Took { id: RouterId },
    /// The router is about to remove its VIPs (sent before the link does).
    Releasing { id: RouterId },
    /// The router is Master at the end of a step in which it took its
    /// VIPs: listen on its virtual-MAC interface too.
    ListenOnVmac { id: RouterId },
    /// Traffic for the router's VIPs while it is not Master: `Drop` when it
    /// leaves Backup (undo what the previous mode set up).
    BackupTraffic { id: RouterId, mode: BackupMode },
    /// The link is lost (`Err(why)`) or back: every router follows.
    Link { up: Result<(), String> },
    /// The link refused an action; the machine goes on (each link action
    /// is idempotent, so the next step repeats what is still needed).
    Failed {
        id: RouterId,
        action: &'static str,
        error: String,
    },
}

/// Per router: how it is set up on this interface.
#[derive(Debug, Clone)]
pub struct Binding<L> {
    pub link: L,
    pub vips: Vec<Vip>,
    /// `-sharing`: a Backup answers traffic for the VIPs too.
    pub sharing: bool,
}

/// One interface's routers and links.
#[derive(Debug)]
pub struct Interface<L: Link> {
    routers: Routers,
    bindings: Vec<Binding<L>>,
    send_to_master: bool,
    twins: Twins,
    /// Per router: when the machine asked to be called ([`Action::ArmTimer`]).
    armed: Vec<Option<Duration>>,
    /// Single announcements still due after a takeover, by deadline.
    late: Vec<(Duration, RouterId)>,
    link_up: bool,
}

impl<L: Link> Interface<L> {
    /// `bindings[i]` belongs to router `i` of `routers`.
    pub fn new(routers: Routers, bindings: Vec<Binding<L>>, send_to_master: bool) -> Self {
        let n = routers.len();
        Interface {
            routers,
            bindings,
            send_to_master,
            twins: Twins::default(),
            armed: vec![None; n],
            late: Vec::new(),
            link_up: true,
        }
    }

    pub fn routers(&self) -> &Routers {
        &self.routers
    }

    pub fn binding(&self, id: RouterId) -> Option<&Binding<L>> {
        self.bindings.get(id)
    }

    /// Every router starts (after the first tracking, so that a node that
    /// cannot serve starts at priority 0).
    pub fn startup(&mut self, now: Duration, out: &mut dyn FnMut(Notice)) {
        for id in self.routers.ids() {
            let actions = self.routers.startup(id, now);
            self.perform(id, actions, now, out);
        }
    }

    /// Every router gives its VIPs up gracefully (priority 0).
    pub fn shutdown(&mut self, now: Duration, out: &mut dyn FnMut(Notice)) {
        for id in self.routers.ids() {
            let actions = self.routers.shutdown(id, now);
            self.perform(id, actions, now, out);
        }
        for id in self.routers.ids() {
            out(Notice::BackupTraffic {
                id,
                mode: BackupMode::Drop,
            });
        }
    }

    /// A frame from either reader; the second copy of a frame is dropped.
    pub fn received(&mut self, frame: &Frame, now: Duration, out: &mut dyn FnMut(Notice)) {
        if self.twins.is_twin(frame, now) {
            return;
        }
        let dst = frame.to.unwrap_or_else(|| Family::of(frame.from).group());
        if let Some((id, actions)) =
            self.routers
                .received(&frame.payload, frame.ttl, frame.from, dst, now)
        {
            self.perform(id, actions, now, out);
        }
    }

    /// When to call [`Interface::timer`] next.
    pub fn next_wake(&self) -> Option<Duration> {
        self.armed
            .iter()
            .flatten()
            .chain(self.late.iter().map(|(at, _)| at))
            .min()
            .copied()
    }

    /// Fires what is due at `now`: late announcements, then the routers'
    /// timers.
    pub fn timer(&mut self, now: Duration, out: &mut dyn FnMut(Notice)) {
        let (due, later): (Vec<_>, Vec<_>) = self.late.drain(..).partition(|(at, _)| *at <= now);
        self.late = later;
        for (_, id) in due {
            if self.routers.state(id) != Some(State::Master) {
                continue;
            }
            if let Some(b) = self.bindings.get_mut(id)
                && let Err(e) = b.link.announce(&b.vips)
            {
                out(failed(id, "announce", &e));
            }
        }
        for id in self.routers.ids() {
            if self.armed[id].is_some_and(|at| at <= now) {
                self.armed[id] = None;
                let actions = self.routers.timer(id, now);
                self.perform(id, actions, now, out);
            }
        }
    }

    /// The objects router `id` tracks, as they are now.
    pub fn track(
        &mut self,
        id: RouterId,
        tracked: Vec<Tracked>,
        now: Duration,
        out: &mut dyn FnMut(Notice),
    ) {
        let actions = self.routers.track(id, tracked, now);
        self.perform(id, actions, now, out);
    }

    /// The interface's link as the edge sees it now: a change puts every
    /// router in FAULT (`Err(why)`) or back to Backup.
    pub fn link(&mut self, state: Result<(), String>, now: Duration, out: &mut dyn FnMut(Notice)) {
        if state.is_ok() == self.link_up {
            return;
        }
        self.link_up = state.is_ok();
        out(Notice::Link { up: state.clone() });
        for id in self.routers.ids() {
            let actions = match &state {
                Err(why) => self.routers.link_down(id, now, why),
                Ok(()) => self.routers.link_up(id, now),
            };
            self.perform(id, actions, now, out);
        }
    }

    fn perform(
        &mut self,
        id: RouterId,
        actions: Vec<Action>,
        now: Duration,
        out: &mut dyn FnMut(Notice),
    ) {
        let mut took = false;
        for action in actions {
            let Some(b) = self.bindings.get_mut(id) else {
                return;
            };
            match action {
                Action::SendAdvert { priority } => {
                    if let Some(packet) = self.routers.advert(id, priority)
                        && let Err(e) = b.link.send_advert(&packet)
                    {
                        out(failed(id, "send an advert", &e));
                    }
                }
                Action::TakeAddresses => match b.link.take_addresses(&b.vips) {
                    Ok(()) => {
                        took = true;
                        out(Notice::Took { id });
                    }
                    Err(e) => out(failed(id, "take the addresses", &e)),
                },
                Action::ReleaseAddresses => {
                    out(Notice::Releasing { id });
                    if let Err(e) = b.link.release_addresses(&b.vips) {
                        out(failed(id, "release the addresses", &e));
                    }
                }
                Action::Announce => {
                    for _ in 0..ANNOUNCE_BURST {
                        if let Err(e) = b.link.announce(&b.vips) {
                            out(failed(id, "announce", &e));
                            break;
                        }
                    }
                }
                Action::ArmTimer { at } => self.armed[id] = Some(at),
                Action::Transition { from, to, reason } => {
                    out(Notice::Transition {
                        id,
                        from,
                        to,
                        reason,
                    });
                    let family = b.vips.first().map_or(Family::V4, |v| Family::of(v.ip));
                    let mode = if to == State::Backup {
                        BackupMode::of(b.sharing, self.send_to_master, family)
                    } else {
                        BackupMode::Drop
                    };
                    if from == State::Backup || to == State::Backup {
                        out(Notice::BackupTraffic { id, mode });
                    }
                }
            }
        }
        if took {
            self.late
                .extend(LATE_ANNOUNCES.iter().map(|d| (now + *d, id)));
            // Still master (a later action may have given the VIPs up).
            if self.routers.state(id) == Some(State::Master) {
                out(Notice::ListenOnVmac { id });
            }
        }
    }
}

fn failed(id: RouterId, action: &'static str, e: &impl std::fmt::Display) -> Notice {
    Notice::Failed {
        id,
        action,
        error: e.to_string(),
    }
}

/// Pairs the copies of one frame: a frame from another MAC reaches both
/// the base interface and a master's macvlan (which joined the group), a
/// frame from our own virtual MAC (a competing master) only the macvlan.
/// Each frame cancels at most one identical frame read on the other side
/// within [`TWIN_WINDOW`], so each is heard, and counted, once.
#[derive(Debug, Default)]
pub struct Twins {
    /// Unmatched recent frames per side: `[base, vmac]`.
    recent: [VecDeque<(Duration, IpAddr, Vec<u8>)>; 2],
}

impl Twins {
    /// Whether `f` is the second copy of a frame already heard.
    pub fn is_twin(&mut self, f: &Frame, now: Duration) -> bool {
        let (mine, other) = if f.via_vmac { (1, 0) } else { (0, 1) };
        for q in &mut self.recent {
            while q
                .front()
                .is_some_and(|(at, ..)| now.saturating_sub(*at) > TWIN_WINDOW)
            {
                q.pop_front();
            }
        }
        if let Some(i) = self.recent[other]
            .iter()
            .position(|(_, from, bytes)| *from == f.from && *bytes == f.payload)
        {
            self.recent[other].remove(i);
            return true;
        }
        let q = &mut self.recent[mine];
        if q.len() == 256 {
            q.pop_front();
        }
        q.push_back((now, f.from, f.payload.clone()));
        false
    }
}
