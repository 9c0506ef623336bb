//! One virtual router (VRID) of one node: the RFC 5798 §6 state machine,
//! with the RFC 9568 clarifications, plus seed 004's model (run-time priority
//! from health tracking, preemption delay). RFC 9568 says Active where RFC
//! 5798 says Master (Active_Adver_Interval, Active_Down_Timer, ...); this
//! module keeps RFC 5798's names. Section numbers are the same in both.
//!
//! The machine is pure: every input carries `now` (a monotonic instant as a
//! [`Duration`] since any fixed origin) and returns the [`Action`]s for the
//! edges, in the order they must be performed. It never panics.
//!
//! # Timers
//!
//! The machine needs one timer from its caller. Whenever its earliest
//! deadline changes it returns [`Action::ArmTimer`], which *replaces* any
//! timer armed before; after a [`Machine::timer`] call it always re-arms if
//! anything is still pending. Behind that one timer there are three
//! deadlines: the Adver_Timer (Master), the Master_Down_Timer (Backup) and
//! the second announcement burst (Master, see below). A deadline may go away
//! without a new `ArmTimer` (e.g. on shutdown); calling [`Machine::timer`]
//! when nothing is due is harmless and returns no action.
//!
//! # Announcements
//!
//! On becoming Master the machine returns [`Action::Announce`] (a gratuitous
//! ARP / unsolicited NA burst) at once, and a second `Announce` one
//! Advertisement_Interval later (from the timer), so that a neighbour that
//! lost the first burst still learns the new owner of the addresses. The
//! second burst is dropped if the machine leaves Master before it is due.
//!
//! # Action order
//!
//! Becoming Master: `Transition`, `TakeAddresses`, `SendAdvert`, `Announce`,
//! `ArmTimer`. Leaving Master: `ReleaseAddresses` first (stop answering ARP/ND
//! for the VIPs before anybody else may take them), then the priority-0
//! `SendAdvert` when the departure is graceful, then `Transition` and
//! `ArmTimer`.

use std::net::IpAddr;
use std::time::Duration;

/// One centisecond, the resolution of VRRPv3 intervals (RFC 5798 §5.2.7).
const CENTISECOND: Duration = Duration::from_millis(10);
/// The largest interval the 12-bit Max Adver Int field can carry: 40.95 s.
const MAX_INTERVAL_CS: u64 = 4095;
/// The priority of the address owner (RFC 5798 §5.2.4).
pub const OWNER_PRIORITY: u8 = 255;

/// One virtual router's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The virtual router identifier (1–255; the caller demultiplexes by it).
    pub vrid: u8,
    /// The configured priority, 1–254. Ignored when `owner` is set.
    pub base_priority: u8,
    /// This node owns the virtual addresses: its priority is 255.
    pub owner: bool,
    /// Advertisement_Interval, in whole centiseconds, 10 ms to 40.95 s.
    pub advert_interval: Duration,
    /// Preempt_Mode: a higher-priority backup takes over from a lower master.
    /// The owner always preempts, whatever this says (RFC 5798 §6.1).
    pub preempt: bool,
    /// How long a backup with `preempt` keeps deferring to a lower-priority
    /// master it hears before it lets its Master_Down_Timer take over (seed
    /// 004; see [`Machine::heard`]).
    pub preempt_delay: Duration,
    /// Accept_Mode (RFC 5798 §6.1): the edge accepts packets addressed to the
    /// VIPs while Master even when it does not own them. Carried for the
    /// edge; it does not change the state machine.
    pub accept_mode: bool,
}

impl Config {
    /// A non-owner with the defaults: 1 s interval, preempt on, no delay,
    /// accept mode off.
    pub fn new(vrid: u8, base_priority: u8) -> Self {
        Config {
            vrid,
            base_priority,
            owner: false,
            advert_interval: Duration::from_secs(1),
            preempt: true,
            preempt_delay: Duration::ZERO,
            accept_mode: false,
        }
    }

    /// The address owner (priority 255) with the defaults.
    pub fn owner(vrid: u8) -> Self {
        Config {
            owner: true,
            base_priority: OWNER_PRIORITY,
            ..Config::new(vrid, OWNER_PRIORITY)
        }
    }

    /// A router as an operator configures it: 255, the highest priority the
    /// seed and the appliance allow, is the address owner's in RFC 5798, and
    /// a node configured with it behaves as one (docs/vrrp.md); any other
    /// priority is a non-owner's.
    pub fn configured(vrid: u8, priority: u8) -> Self {
        if priority == OWNER_PRIORITY {
            Config::owner(vrid)
        } else {
            Config::new(vrid, priority)
        }
    }

    /// The priority the machine starts with: 255 for the owner, else
    /// `base_priority`.
    pub fn priority(&self) -> u8 {
        if self.owner {
            OWNER_PRIORITY
        } else {
            self.base_priority
        }
    }
}

/// Why a [`Config`] was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// VRIDs are 1 to 255 (RFC 5798 §5.2.3).
    #[error("VRID 0 is not valid: VRIDs are 1 to 255")]
    Vrid,
    /// 0 means "give up" and 255 is reserved for the owner (RFC 5798 §5.2.4).
    #[error("priority {0} is out of range: a non-owner's priority is 1 to 254")]
    Priority(u8),
    /// Not a whole number of centiseconds from 1 to 4095 (RFC 5798 §5.2.7).
    #[error(
        "advertisement interval {0:?} is not a whole number of centiseconds from 10 ms to 40.95 s"
    )]
    Interval(Duration),
}

/// A received advertisement, as far as the machine needs it (the packet codec
/// has already checked version, type, VRID, checksum and TTL/hop limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Heard {
    /// The sender's primary address (the IP source address).
    pub from: IpAddr,
    /// The advertised priority; 0 means the sender is giving up.
    pub priority: u8,
    /// The advertised Max Adver Int.
    pub interval: Duration,
}

/// The RFC 5798 §6.4 states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    Initialize,
    Backup,
    Master,
    /// The link is down (the interface lost its carrier or was set down):
    /// nothing can be sent or heard, so the node holds no address and
    /// waits for the link, as keepalived's FAULT state does. Not an RFC
    /// 5798 state: the RFC assumes a working link.
    Fault,
}

/// What the edge must do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Multicast an advertisement with this priority and our interval.
    SendAdvert { priority: u8 },
    /// Add the VIPs and answer ARP/ND for them.
    TakeAddresses,
    /// Stop answering ARP/ND for the VIPs and remove them.
    ReleaseAddresses,
    /// Send a gratuitous ARP / unsolicited NA burst for the VIPs.
    Announce,
    /// Call [`Machine::timer`] at (or after) `at`; replaces any earlier timer.
    ArmTimer { at: Duration },
    /// A state change, for the log.
    Transition {
        from: State,
        to: State,
        reason: String,
    },
}

/// Skew_Time = ((256 − Priority) × Master_Adver_Interval) / 256
/// (RFC 5798 §6.1), computed exactly in nanoseconds.
pub fn skew_time(priority: u8, master_adver_interval: Duration) -> Duration {
    let nanos = master_adver_interval.as_nanos() * (256 - u128::from(priority)) / 256;
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// Master_Down_Interval = 3 × Master_Adver_Interval + Skew_Time
/// (RFC 5798 §6.1).
pub fn master_down_interval(priority: u8, master_adver_interval: Duration) -> Duration {
    master_adver_interval
        .saturating_mul(3)
        .saturating_add(skew_time(priority, master_adver_interval))
}

/// An advertised interval as the machine adopts it: truncated to whole
/// centiseconds and clamped to 1–4095 cs, so that a malformed 0 cannot make
/// the Master_Down_Timer fire at once.
fn sanitize_interval(interval: Duration) -> Duration {
    let cs = (interval.as_millis() / 10).clamp(1, u128::from(MAX_INTERVAL_CS));
    // At most 4095, so the cast is exact.
    CENTISECOND.saturating_mul(cs as u32)
}

/// One virtual router of one node.
#[derive(Debug, Clone)]
pub struct Machine {
    config: Config,
    local: IpAddr,
    state: State,
    /// The effective priority (health tracking may change it; 0 = give up).
    priority: u8,
    /// Master_Adver_Interval (RFC 5798 §6.1): ours until a master is heard.
    master_adver_interval: Duration,
    /// Who we believe is master.
    master: Option<IpAddr>,
    /// Adver_Timer (Master) or Master_Down_Timer (Backup).
    deadline: Option<Duration>,
    /// The second announcement burst (Master).
    announce_at: Option<Duration>,
    /// When a backup with preempt and a preemption delay first heard a
    /// lower-priority master (seed 004).
    lower_since: Option<Duration>,
    /// The deadline the caller was last asked to arm.
    armed: Option<Duration>,
    /// A Backup whose Master_Down_Timer ran late was given one more
    /// interval (see [`Machine::timer`]); cleared by the next advert.
    late_grace: bool,
}

impl Machine {
    /// A machine in Initialize, with `local` as its primary address (the
    /// tie-break on equal priority, RFC 5798 §6.4.3).
    pub fn new(config: Config, local: IpAddr) -> Result<Machine, ConfigError> {
        if config.vrid == 0 {
            return Err(ConfigError::Vrid);
        }
        if !config.owner && !(1..=254).contains(&config.base_priority) {
            return Err(ConfigError::Priority(config.base_priority));
        }
        let cs = config.advert_interval.as_nanos() / CENTISECOND.as_nanos();
        if !config
            .advert_interval
            .as_nanos()
            .is_multiple_of(CENTISECOND.as_nanos())
            || !(1..=u128::from(MAX_INTERVAL_CS)).contains(&cs)
        {
            return Err(ConfigError::Interval(config.advert_interval));
        }
        Ok(Machine {
            priority: config.priority(),
            master_adver_interval: config.advert_interval,
            config,
            local,
            state: State::Initialize,
            master: None,
            deadline: None,
            announce_at: None,
            lower_since: None,
            armed: None,
            late_grace: false,
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn local_address(&self) -> IpAddr {
        self.local
    }

    pub fn state(&self) -> State {
        self.state
    }

    /// The effective priority.
    pub fn priority(&self) -> u8 {
        self.priority
    }

    /// Master_Adver_Interval: ours, or the one the current master advertises.
    pub fn master_adver_interval(&self) -> Duration {
        self.master_adver_interval
    }

    /// Skew_Time for the local priority and Master_Adver_Interval.
    pub fn skew_time(&self) -> Duration {
        skew_time(self.priority, self.master_adver_interval)
    }

    /// Master_Down_Interval for the local priority and Master_Adver_Interval.
    pub fn master_down_interval(&self) -> Duration {
        master_down_interval(self.priority, self.master_adver_interval)
    }

    /// Who this node believes is master: itself when Master, the sender of
    /// the last advertisement heard when Backup, else unknown.
    pub fn master_address(&self) -> Option<IpAddr> {
        match self.state {
            State::Master => Some(self.local),
            State::Backup => self.master,
            State::Initialize | State::Fault => None,
        }
    }

    /// The earliest instant at which [`Machine::timer`] has something to do.
    pub fn next_timer(&self) -> Option<Duration> {
        match (self.deadline, self.announce_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The Startup event (RFC 5798 §6.4.1). Ignored unless in Initialize.
    pub fn startup(&mut self, now: Duration) -> Vec<Action> {
        let mut out = Vec::new();
        if self.state != State::Initialize {
            return out;
        }
        self.start(now, "startup", &mut out);
        self.rearm(&mut out);
        out
    }

    /// §6.4.1's Startup, with `why` in the transition's reason.
    fn start(&mut self, now: Duration, why: &str, out: &mut Vec<Action>) {
        self.master_adver_interval = self.config.advert_interval;
        if self.priority == OWNER_PRIORITY {
            // §6.4.1: the owner sends an advertisement, broadcasts gratuitous
            // ARP / unsolicited NA, sets the Adver_Timer and becomes Master.
            self.become_master(now, &format!("{why} as address owner (priority 255)"), out);
        } else {
            // §6.4.1: Master_Adver_Interval = Advertisement_Interval,
            // Master_Down_Timer = Master_Down_Interval, then Backup.
            self.enter_backup(now, why, out);
        }
    }

    /// The link went down (`why` says how: no carrier, set down): a Master
    /// releases its addresses at once (no priority-0 advert: nothing can be
    /// sent), so that no node holds them with no one to answer for them, and
    /// when the link returns two nodes never hold the same address; every
    /// state but Initialize goes to [`State::Fault`]. A machine not started
    /// yet goes to Fault too, and starts when the link comes up.
    pub fn link_down(&mut self, _now: Duration, why: &str) -> Vec<Action> {
        let mut out = Vec::new();
        if self.state == State::Fault {
            return out;
        }
        if self.state == State::Master {
            out.push(Action::ReleaseAddresses);
        }
        self.clear_timers();
        self.master = None;
        self.late_grace = false;
        self.transition(State::Fault, &format!("link down: {why}"), &mut out);
        self.rearm(&mut out);
        out
    }

    /// The link is back: the machine starts again as at Startup (§6.4.1):
    /// Backup, or the owner Master; the adverts it then hears and preemption
    /// decide who is master.
    pub fn link_up(&mut self, now: Duration) -> Vec<Action> {
        let mut out = Vec::new();
        if self.state != State::Fault {
            return out;
        }
        self.start(now, "link up", &mut out);
        self.rearm(&mut out);
        out
    }

    /// The Shutdown event (RFC 5798 §6.4.2, §6.4.3): as Master release the
    /// addresses and send a priority-0 advertisement; then Initialize.
    pub fn shutdown(&mut self, _now: Duration) -> Vec<Action> {
        let mut out = Vec::new();
        match self.state {
            State::Initialize => {}
            State::Backup | State::Fault => {
                self.clear_timers();
                self.transition(State::Initialize, "shutdown", &mut out);
            }
            State::Master => {
                self.clear_timers();
                out.push(Action::ReleaseAddresses);
                out.push(Action::SendAdvert { priority: 0 });
                self.transition(State::Initialize, "shutdown", &mut out);
            }
        }
        self.master = None;
        self.armed = None;
        out
    }

    /// The caller's timer fired (at or after the instant asked for).
    ///
    /// A Backup's Master_Down_Timer that fires a Master_Adver_Interval or
    /// more after its deadline means this node did not run (a starved
    /// process, a paused VM): the master's adverts may be waiting unread,
    /// so it waits one more interval to hear them before it takes over,
    /// once until an advert comes. Otherwise every stall longer than
    /// Master_Down_Interval made a backup master for a moment, and its
    /// gratuitous ARP pulled the VIP's traffic away from the real master.
    pub fn timer(&mut self, now: Duration) -> Vec<Action> {
        let mut out = Vec::new();
        // The caller's timer is spent: re-arm below if anything is pending.
        self.armed = None;
        match self.state {
            State::Initialize | State::Fault => {}
            State::Backup => {
                let late = self
                    .deadline
                    .is_some_and(|d| now >= d.saturating_add(self.master_adver_interval));
                if late && !self.late_grace {
                    self.late_grace = true;
                    self.deadline = Some(now.saturating_add(self.master_adver_interval));
                } else if self.deadline.is_some_and(|d| d <= now) {
                    // §6.4.2: the Master_Down_Timer fired.
                    let reason = match self.master {
                        Some(m) => format!("Master_Down_Timer expired (last master heard: {m})"),
                        None => "Master_Down_Timer expired (no master heard)".to_string(),
                    };
                    self.become_master(now, &reason, &mut out);
                }
            }
            State::Master => {
                if self.announce_at.is_some_and(|d| d <= now) {
                    self.announce_at = None;
                    out.push(Action::Announce);
                }
                if self.deadline.is_some_and(|d| d <= now) {
                    // §6.4.3: the Adver_Timer fired.
                    self.send_advert(now, &mut out);
                }
            }
        }
        self.rearm(&mut out);
        out
    }

    /// A received advertisement for this VRID (RFC 5798 §6.4.2, §6.4.3).
    ///
    /// Adverts from the local address (our own, looped back) and from the
    /// other address family (a separate virtual router, RFC 5798 §1) are
    /// ignored, as is everything in Initialize.
    ///
    /// On equal priority the higher primary address wins (RFC 9568 §6.4.3:
    /// an unsigned comparison in network byte order, which is `IpAddr`'s
    /// order within one family).
    ///
    /// Preemption delay (seed 004), when the node preempts (`preempt` on,
    /// or the owner) and `preempt_delay` is not zero: the first advert a Backup hears with a
    /// priority below its own (and above 0) starts the delay; until it has
    /// run out such adverts are treated as if preempt were off (they reset
    /// the Master_Down_Timer); from then on they are ignored as RFC 5798
    /// says, so the Master_Down_Timer fires at most one
    /// Master_Down_Interval after the delay ran out. The delay restarts
    /// after an advert with priority 0 or at least our own, and on every
    /// state change.
    pub fn heard(&mut self, advert: Heard, now: Duration) -> Vec<Action> {
        let mut out = Vec::new();
        if advert.from == self.local || advert.from.is_ipv4() != self.local.is_ipv4() {
            return out;
        }
        match self.state {
            State::Initialize | State::Fault => {}
            State::Backup => self.backup_heard(advert, now),
            State::Master => self.master_heard(advert, now, &mut out),
        }
        self.rearm(&mut out);
        out
    }

    /// A new effective priority (health tracking; seed 004). 255 is kept
    /// only by the owner (a non-owner gets 254). As Master, 0 is a graceful
    /// handover (release, priority-0 advert, Backup); another value is
    /// advertised at once. As Backup the Master_Down_Timer keeps its
    /// deadline, and the next advertisements are judged against the new
    /// priority (so a raised priority with preempt on lets the timer take
    /// over); a Backup with priority 0 never takes over, so its timer is
    /// disarmed, and armed again (a full Master_Down_Interval) when the
    /// priority comes back.
    pub fn set_priority(&mut self, priority: u8, now: Duration) -> Vec<Action> {
        let mut out = Vec::new();
        let priority = if priority == OWNER_PRIORITY && !self.config.owner {
            OWNER_PRIORITY - 1
        } else {
            priority
        };
        if priority == self.priority {
            return out;
        }
        let old = self.priority;
        self.priority = priority;
        match self.state {
            State::Initialize | State::Fault => {}
            State::Backup => {
                if priority == 0 {
                    self.deadline = None;
                } else if old == 0 {
                    self.deadline = Some(now.saturating_add(self.master_down_interval()));
                }
            }
            State::Master => {
                if priority == 0 {
                    out.push(Action::ReleaseAddresses);
                    out.push(Action::SendAdvert { priority: 0 });
                    self.master = None;
                    self.enter_backup(now, "priority set to 0: handing over", &mut out);
                } else {
                    self.send_advert(now, &mut out);
                }
            }
        }
        self.rearm(&mut out);
        out
    }

    fn backup_heard(&mut self, advert: Heard, now: Duration) {
        if advert.priority == 0 {
            // §6.4.2: the master is leaving: Master_Down_Timer = Skew_Time.
            self.lower_since = None;
            if self.master == Some(advert.from) {
                self.master = None;
            }
            if self.priority > 0 {
                self.deadline = Some(now.saturating_add(self.skew_time()));
            }
            return;
        }
        self.master = Some(advert.from);
        self.late_grace = false;
        // RFC 5798 §6.1: the owner always preempts.
        let preempt = self.config.preempt || self.config.owner;
        let defer = if !preempt || advert.priority >= self.priority {
            self.lower_since = None;
            true
        } else if self.config.preempt_delay.is_zero() {
            false
        } else {
            // Seed 004's preemption delay (see `heard`).
            let since = *self.lower_since.get_or_insert(now);
            now < since.saturating_add(self.config.preempt_delay)
        };
        if defer {
            // §6.4.2: adopt the master's interval (Master_Adver_Interval),
            // recompute Skew_Time and Master_Down_Interval, reset the timer.
            self.master_adver_interval = sanitize_interval(advert.interval);
            if self.priority > 0 {
                self.deadline = Some(now.saturating_add(self.master_down_interval()));
            }
        }
        // Otherwise §6.4.2: discard, so the Master_Down_Timer will fire.
    }

    fn master_heard(&mut self, advert: Heard, now: Duration, out: &mut Vec<Action>) {
        if advert.priority == 0 {
            // §6.4.3: another router is leaving: advertise at once and reset
            // the Adver_Timer.
            self.send_advert(now, out);
            return;
        }
        let higher = advert.priority > self.priority
            || (advert.priority == self.priority && advert.from > self.local);
        if higher {
            // §6.4.3: cancel the Adver_Timer, adopt the interval, set the
            // Master_Down_Timer, go Backup; addresses released first.
            out.push(Action::ReleaseAddresses);
            self.master_adver_interval = sanitize_interval(advert.interval);
            self.master = Some(advert.from);
            let reason = format!(
                "advertisement from {} with priority {} beats ours ({})",
                advert.from, advert.priority, self.priority
            );
            self.enter_backup_keep_interval(now, &reason, out);
        } else {
            // RFC 9568 §6.4.3 ("new Active Router logic"): discard it, and
            // send an advertisement at once to assert ourselves to the
            // sender (and to learning bridges). The RFC does not reset the
            // Adver_Timer here, so the regular cadence is kept.
            out.push(Action::SendAdvert {
                priority: self.priority,
            });
        }
    }

    fn become_master(&mut self, now: Duration, reason: &str, out: &mut Vec<Action>) {
        self.transition(State::Master, reason, out);
        self.late_grace = false;
        self.lower_since = None;
        self.master = None;
        self.master_adver_interval = self.config.advert_interval;
        // The addresses first, then the advert that makes the old master
        // let go, then the announcement: the VIP is never without an owner
        // (two for a moment is harmless), and the advert already leaves
        // from the virtual MAC. Bringing a virtual-MAC interface up takes
        // milliseconds, measured as lost pings on failback when the advert
        // went first.
        out.push(Action::TakeAddresses);
        self.send_advert(now, out);
        out.push(Action::Announce);
        self.announce_at = Some(now.saturating_add(self.config.advert_interval));
    }

    /// Backup with Master_Adver_Interval = Advertisement_Interval.
    fn enter_backup(&mut self, now: Duration, reason: &str, out: &mut Vec<Action>) {
        self.master_adver_interval = self.config.advert_interval;
        self.enter_backup_keep_interval(now, reason, out);
    }

    fn enter_backup_keep_interval(&mut self, now: Duration, reason: &str, out: &mut Vec<Action>) {
        self.clear_timers();
        if self.priority > 0 {
            self.deadline = Some(now.saturating_add(self.master_down_interval()));
        }
        self.transition(State::Backup, reason, out);
    }

    /// An advertisement now, and the Adver_Timer reset (Master only).
    fn send_advert(&mut self, now: Duration, out: &mut Vec<Action>) {
        out.push(Action::SendAdvert {
            priority: self.priority,
        });
        self.deadline = Some(now.saturating_add(self.config.advert_interval));
    }

    fn clear_timers(&mut self) {
        self.deadline = None;
        self.announce_at = None;
        self.lower_since = None;
    }

    fn transition(&mut self, to: State, reason: &str, out: &mut Vec<Action>) {
        let from = self.state;
        self.state = to;
        out.push(Action::Transition {
            from,
            to,
            reason: reason.to_string(),
        });
    }

    fn rearm(&mut self, out: &mut Vec<Action>) {
        let next = self.next_timer();
        if next != self.armed {
            if let Some(at) = next {
                out.push(Action::ArmTimer { at });
            }
            self.armed = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn ip(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(192, 0, 2, last))
    }

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn timer_arithmetic_at_known_points() {
        assert_eq!(skew_time(100, S), Duration::from_micros(609_375));
        assert_eq!(
            master_down_interval(100, S),
            Duration::from_micros(3_609_375)
        );
        assert_eq!(skew_time(255, S), Duration::from_nanos(3_906_250));
        assert_eq!(skew_time(0, S), S);
        assert_eq!(skew_time(1, Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn config_checks() {
        let ok = |c: Config| Machine::new(c, ip(1)).is_ok();
        assert!(ok(Config::new(1, 1)));
        assert!(!ok(Config::new(0, 100)));
        assert!(ok(Config::new(255, 100)));
        assert!(ok(Config::new(1, 254)));
        assert!(!ok(Config::new(1, 0)));
        assert!(!ok(Config::new(1, 255)));
        assert!(ok(Config::owner(1)));
        let mut c = Config::new(1, 100);
        c.advert_interval = Duration::from_millis(15);
        assert!(!ok(c.clone()));
        c.advert_interval = Duration::ZERO;
        assert!(!ok(c.clone()));
        c.advert_interval = Duration::from_millis(40_950);
        assert!(ok(c.clone()));
        c.advert_interval = Duration::from_millis(40_960);
        assert!(!ok(c));
    }

    #[test]
    fn a_down_timer_that_fires_late_waits_one_interval_to_hear_the_master() {
        let master = |priority| Heard {
            from: ip(2),
            priority,
            interval: S,
        };
        let backup = || {
            let mut m = Machine::new(Config::new(7, 100), ip(1)).unwrap();
            m.startup(Duration::ZERO);
            m.heard(master(200), Duration::ZERO);
            m
        };
        let down = master_down_interval(100, S);
        // On time (or late by less than an interval): master, as the RFC says.
        let mut m = backup();
        m.timer(down + S / 2);
        assert_eq!(m.state(), State::Master);

        // This node did not run for 10 s: one more interval first.
        let mut m = backup();
        let t = Duration::from_secs(10);
        let a = m.timer(t);
        assert_eq!(m.state(), State::Backup, "{a:?}");
        assert_eq!(a, vec![Action::ArmTimer { at: t + S }]);
        // The master's advert that waited in the socket arrives: it stays
        // Backup, on the usual Master_Down_Timer.
        m.heard(master(200), t + Duration::from_millis(1));
        assert_eq!(m.next_timer(), Some(t + Duration::from_millis(1) + down));
        assert_eq!(m.state(), State::Backup);

        // Nothing comes in that interval: master at its end.
        let mut m = backup();
        m.timer(t);
        m.timer(t + S);
        assert_eq!(m.state(), State::Master);

        // Late again before an advert came: no second interval.
        let mut m = backup();
        m.timer(t);
        m.timer(t + 5 * S);
        assert_eq!(m.state(), State::Master);

        // After an advert, a later stall gets its interval again.
        let mut m = backup();
        m.timer(t);
        m.heard(master(200), t);
        m.timer(Duration::from_secs(60));
        assert_eq!(m.state(), State::Backup);
    }

    #[test]
    fn backup_startup_arms_down_timer_and_adopts_interval() {
        let mut m = Machine::new(Config::new(7, 100), ip(1)).unwrap();
        let a = m.startup(Duration::ZERO);
        assert_eq!(m.state(), State::Backup);
        assert_eq!(
            a.last(),
            Some(&Action::ArmTimer {
                at: Duration::from_micros(3_609_375)
            })
        );
        let t = Duration::from_secs(1);
        let a = m.heard(
            Heard {
                from: ip(2),
                priority: 200,
                interval: Duration::from_secs(2),
            },
            t,
        );
        assert_eq!(m.master_adver_interval(), Duration::from_secs(2));
        assert_eq!(m.skew_time(), Duration::from_micros(1_218_750));
        assert_eq!(m.master_down_interval(), Duration::from_micros(7_218_750));
        assert_eq!(
            a,
            vec![Action::ArmTimer {
                at: t + Duration::from_micros(7_218_750)
            }]
        );
        assert_eq!(m.master_address(), Some(ip(2)));
        // Priority 0: Master_Down_Timer = Skew_Time (of the adopted interval).
        let a = m.heard(
            Heard {
                from: ip(2),
                priority: 0,
                interval: Duration::from_secs(2),
            },
            t * 2,
        );
        assert_eq!(
            a,
            vec![Action::ArmTimer {
                at: t * 2 + Duration::from_micros(1_218_750)
            }]
        );
        let a = m.timer(t * 2 + Duration::from_micros(1_218_750));
        assert_eq!(m.state(), State::Master);
        assert!(a.contains(&Action::TakeAddresses));
        assert_eq!(m.master_adver_interval(), Duration::from_secs(1));
    }

    #[test]
    fn owner_starts_as_master_and_announces_twice() {
        let mut m = Machine::new(Config::owner(1), ip(1)).unwrap();
        let a = m.startup(Duration::ZERO);
        assert_eq!(m.state(), State::Master);
        assert!(matches!(
            a[0],
            Action::Transition {
                from: State::Initialize,
                to: State::Master,
                ..
            }
        ));
        assert_eq!(
            a[1..],
            [
                Action::TakeAddresses,
                Action::SendAdvert { priority: 255 },
                Action::Announce,
                Action::ArmTimer { at: S }
            ]
        );
        assert_eq!(
            m.timer(S),
            vec![
                Action::Announce,
                Action::SendAdvert { priority: 255 },
                Action::ArmTimer { at: S * 2 }
            ]
        );
        assert_eq!(
            m.timer(S * 2),
            vec![
                Action::SendAdvert { priority: 255 },
                Action::ArmTimer { at: S * 3 }
            ]
        );
    }

    #[test]
    fn master_shutdown_releases_then_sends_priority_zero() {
        let mut m = Machine::new(Config::owner(1), ip(1)).unwrap();
        m.startup(Duration::ZERO);
        let a = m.shutdown(S);
        assert_eq!(a[0], Action::ReleaseAddresses);
        assert_eq!(a[1], Action::SendAdvert { priority: 0 });
        assert!(matches!(
            a[2],
            Action::Transition {
                to: State::Initialize,
                ..
            }
        ));
        assert_eq!(m.state(), State::Initialize);
        assert_eq!(m.next_timer(), None);
        assert!(m.timer(S * 2).is_empty());
    }

    #[test]
    fn master_answers_priority_zero_and_lower_and_yields_to_higher() {
        let mut m = Machine::new(Config::owner(1), ip(1)).unwrap();
        m.startup(Duration::ZERO);
        let hd = |p, from| Heard {
            from,
            priority: p,
            interval: S,
        };
        let half = Duration::from_millis(500);
        assert_eq!(
            m.heard(hd(0, ip(2)), half),
            vec![Action::SendAdvert { priority: 255 }]
        );
        // The second announcement (due at 1 s) stays the earliest deadline;
        // the Adver_Timer was reset to 1.5 s.
        assert_eq!(
            m.timer(S),
            vec![Action::Announce, Action::ArmTimer { at: S + half }]
        );
        assert_eq!(m.state(), State::Master);
        m.set_priority(100, S);
        assert_eq!(m.priority(), 100);
        // Lower: assert at once (RFC 9568 §6.4.3), Adver_Timer unchanged.
        let a = m.heard(hd(50, ip(2)), S);
        assert_eq!(a, vec![Action::SendAdvert { priority: 100 }]);
        assert_eq!(m.next_timer(), Some(S * 2));
        assert_eq!(m.state(), State::Master);
        // Equal priority from a lower address: stay.
        m.heard(hd(100, ip(0)), S);
        assert_eq!(m.state(), State::Master);
        // Equal priority from a higher address: yield, release first.
        let a = m.heard(hd(100, ip(9)), S);
        assert_eq!(a[0], Action::ReleaseAddresses);
        assert!(!a.iter().any(|x| matches!(x, Action::SendAdvert { .. })));
        assert_eq!(m.state(), State::Backup);
        assert_eq!(m.master_address(), Some(ip(9)));
    }

    #[test]
    fn foreign_family_and_own_adverts_are_ignored() {
        let mut m = Machine::new(Config::new(1, 100), ip(1)).unwrap();
        m.startup(Duration::ZERO);
        let v6 = Heard {
            from: "2001:db8::1".parse().unwrap(),
            priority: 254,
            interval: S,
        };
        assert!(m.heard(v6, S).is_empty());
        let own = Heard {
            from: ip(1),
            priority: 254,
            interval: S,
        };
        assert!(m.heard(own, S).is_empty());
        assert_eq!(m.master_address(), None);
    }

    #[test]
    fn backup_with_priority_zero_never_takes_over() {
        let mut m = Machine::new(Config::new(1, 100), ip(1)).unwrap();
        m.startup(Duration::ZERO);
        m.set_priority(0, S);
        assert_eq!(m.next_timer(), None);
        assert!(m.timer(S * 10).is_empty());
        assert_eq!(m.state(), State::Backup);
        let a = m.set_priority(100, S * 10);
        assert_eq!(
            a,
            vec![Action::ArmTimer {
                at: S * 10 + Duration::from_micros(3_609_375)
            }]
        );
    }

    #[test]
    fn owner_preempts_even_with_preempt_off() {
        let mut c = Config::owner(1);
        c.preempt = false;
        let mut m = Machine::new(c, ip(1)).unwrap();
        // Degraded by tracking before startup: starts as Backup.
        m.set_priority(100, Duration::ZERO);
        m.startup(Duration::ZERO);
        assert_eq!(m.state(), State::Backup);
        m.set_priority(255, Duration::ZERO);
        let lower = Heard {
            from: ip(2),
            priority: 200,
            interval: S,
        };
        // A lower master's adverts do not hold the owner back.
        let deadline = m.next_timer().unwrap();
        assert!(m.heard(lower, S).is_empty());
        assert_eq!(m.next_timer(), Some(deadline));
        m.timer(deadline);
        assert_eq!(m.state(), State::Master);

        // A non-owner with preempt off defers to the lower master.
        let mut c = Config::new(1, 250);
        c.preempt = false;
        let mut m = Machine::new(c, ip(1)).unwrap();
        m.startup(Duration::ZERO);
        m.heard(lower, S);
        assert_eq!(m.next_timer(), Some(S + master_down_interval(250, S)));
    }

    /// A master whose link goes down releases its addresses at once and
    /// goes to Fault; adverts and timers do nothing there; the link back,
    /// it starts as Backup and preemption decides.
    #[test]
    fn a_lost_link_is_a_fault_until_it_returns() {
        let t = Duration::from_millis;
        let advert = |last, priority| Heard {
            from: ip(last),
            priority,
            interval: S,
        };
        let mut m = Machine::new(Config::new(1, 200), ip(1)).unwrap();
        m.startup(t(0));
        let a = m.timer(m.next_timer().unwrap());
        assert!(a.contains(&Action::TakeAddresses), "{a:?}");
        assert_eq!(m.state(), State::Master);
        let a = m.link_down(t(6000), "no carrier");
        assert_eq!(a[0], Action::ReleaseAddresses, "{a:?}");
        assert!(
            !a.iter().any(|x| matches!(x, Action::SendAdvert { .. })),
            "nothing is sent on a dead link: {a:?}"
        );
        assert!(a.contains(&Action::Transition {
            from: State::Master,
            to: State::Fault,
            reason: "link down: no carrier".into(),
        }));
        assert_eq!(m.state(), State::Fault);
        assert_eq!(m.next_timer(), None);
        // Adverts and timers change nothing in Fault.
        assert!(m.heard(advert(2, 100), t(6100)).is_empty());
        assert!(m.timer(t(9000)).is_empty());
        assert!(m.set_priority(150, t(9100)).is_empty());
        assert_eq!(m.state(), State::Fault);
        // A second link-down is nothing new.
        assert!(m.link_down(t(9200), "no carrier").is_empty());
        // Back: Backup, waiting Master_Down_Interval; a lower master's
        // adverts are ignored (preempt on), so it takes over then.
        let a = m.link_up(t(10_000));
        assert!(a.contains(&Action::Transition {
            from: State::Fault,
            to: State::Backup,
            reason: "link up".into(),
        }));
        assert_eq!(m.state(), State::Backup);
        assert!(m.next_timer().is_some());
        m.heard(advert(2, 100), t(10_100));
        let a = m.timer(m.next_timer().unwrap());
        assert!(a.contains(&Action::TakeAddresses), "{a:?}");
        // A backup's link loss: Fault, nothing to release.
        let mut b = Machine::new(Config::new(1, 100), ip(1)).unwrap();
        b.startup(t(0));
        let a = b.link_down(t(100), "set down");
        assert!(!a.contains(&Action::ReleaseAddresses), "{a:?}");
        assert_eq!(b.state(), State::Fault);
        // The owner comes back as master at once.
        let mut o = Machine::new(Config::owner(1), ip(1)).unwrap();
        o.startup(t(0));
        o.link_down(t(100), "no carrier");
        let a = o.link_up(t(200));
        assert!(a.contains(&Action::TakeAddresses), "{a:?}");
        assert_eq!(o.state(), State::Master);
    }
}
