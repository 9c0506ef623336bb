//! One node's virtual routers together: received packets are checked and
//! handed to the VRID they belong to, health tracking sets each VRID's
//! priority, and what happened is kept for the API (state, counters, the
//! last transitions with their reasons). Still pure: bytes, object states
//! and `now` in, [`Action`]s out.

use std::collections::{BTreeMap, VecDeque};
use std::net::IpAddr;
use std::time::Duration;

use crate::machine::{Action, Config, ConfigError, Heard, Machine, State};
use crate::packet::{Advert, ChecksumMode, Family};
use crate::tracking::{Tracking, effective_priority};

/// How many transitions each router remembers for the API.
pub const TRANSITIONS_KEPT: usize = 32;

/// A virtual router as configured on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouterConfig {
    /// The state machine's settings (VRID, base priority, interval, preemption).
    pub machine: Config,
    /// The virtual addresses, all of one family.
    pub addresses: Vec<IpAddr>,
    /// How tracked objects set the effective priority.
    pub tracking: Tracking,
    /// The checksum this node sends (both are accepted for IPv4).
    pub checksum: ChecksumMode,
}

/// A tracked object and whether it is UP, as the state engine says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tracked {
    /// What it is, for people: `dns 10.0.0.53:53`, `vserver vs_www`, ...
    pub name: String,
    pub up: bool,
    /// DOWN sets the effective priority to 0 whatever the tracking mode:
    /// the node's own DNS listener on the VIP (a node that cannot answer
    /// must give the VIP up) and tracked interfaces. The others count in
    /// the mode's N and k.
    pub required: bool,
}

impl Tracked {
    /// An object counted by the tracking mode.
    pub fn counted(name: impl Into<String>, up: bool) -> Tracked {
        Tracked {
            name: name.into(),
            up,
            required: false,
        }
    }

    /// An object whose DOWN gives the VIP up.
    pub fn required(name: impl Into<String>, up: bool) -> Tracked {
        Tracked {
            name: name.into(),
            up,
            required: true,
        }
    }
}

/// A state change, kept for the API and logged by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransitionRecord {
    /// `now` when it happened.
    pub at: Duration,
    pub from: State,
    pub to: State,
    pub reason: String,
}

/// What the API shows about one virtual router.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouterStatus {
    pub vrid: u8,
    pub family: Family,
    pub state: State,
    pub base_priority: u8,
    pub effective_priority: u8,
    pub tracking: Tracking,
    /// Who is master: this node (its address) when Master, the last
    /// advertiser when Backup.
    pub master: Option<IpAddr>,
    pub master_adver_interval: Duration,
    pub addresses: Vec<IpAddr>,
    pub tracked: Vec<Tracked>,
    /// Oldest first, at most [`TRANSITIONS_KEPT`].
    pub transitions: Vec<TransitionRecord>,
    /// Every transition since the router started (`transitions` keeps
    /// only the last ones).
    pub transitions_total: u64,
    /// Adverts accepted for this VRID.
    pub adverts_received: u64,
    /// Adverts whose address list differs from ours (accepted, as RFC 5798
    /// §7.1 allows, but a sign of a configuration mismatch).
    pub address_mismatches: u64,
    /// The checksum mode the last accepted advert used.
    pub peer_checksum: Option<ChecksumMode>,
}

/// One virtual router: the machine plus what the API shows about it.
#[derive(Debug, Clone)]
struct Router {
    cfg: RouterConfig,
    machine: Machine,
    tracked: Vec<Tracked>,
    transitions: VecDeque<TransitionRecord>,
    transitions_total: u64,
    adverts_received: u64,
    address_mismatches: u64,
    peer_checksum: Option<ChecksumMode>,
}

/// Why a node's routers could not be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouterError {
    #[error("VRID {vrid}: {source}")]
    Machine {
        vrid: u8,
        #[source]
        source: ConfigError,
    },
    #[error("VRID {vrid}: no virtual address")]
    NoAddress { vrid: u8 },
    #[error("VRID {vrid}: {addr} is not of the same family as the local address {local}")]
    Family {
        vrid: u8,
        addr: IpAddr,
        local: IpAddr,
    },
    #[error("VRID {vrid} is configured twice for {family}")]
    Duplicate { vrid: u8, family: Family },
}

/// Every virtual router of one node on one link.
#[derive(Debug, Clone)]
pub struct Routers {
    routers: Vec<Router>,
    /// Packets dropped before they reached a router, by reason
    /// ([`AdvertError::kind`](crate::packet::AdvertError::kind), or
    /// `other_vrid` for a VRID this node does not run).
    dropped: BTreeMap<&'static str, u64>,
}

/// Names a router by its index in [`Routers`]; stable for its lifetime.
pub type RouterId = usize;

impl Routers {
    /// The routers of `configs`, with `local_v4` / `local_v6` as this node's
    /// primary address on the link for each family.
    pub fn new(
        configs: Vec<RouterConfig>,
        local_v4: Option<IpAddr>,
        local_v6: Option<IpAddr>,
    ) -> Result<Routers, RouterError> {
        let mut routers: Vec<Router> = Vec::with_capacity(configs.len());
        for cfg in configs {
            let vrid = cfg.machine.vrid;
            let first = *cfg
                .addresses
                .first()
                .ok_or(RouterError::NoAddress { vrid })?;
            let family = Family::of(first);
            let local = match family {
                Family::V4 => local_v4,
                Family::V6 => local_v6,
            }
            .unwrap_or(first);
            if let Some(&addr) = cfg
                .addresses
                .iter()
                .find(|a| Family::of(**a) != Family::of(local))
            {
                return Err(RouterError::Family { vrid, addr, local });
            }
            if routers
                .iter()
                .any(|r| r.cfg.machine.vrid == vrid && r.family() == family)
            {
                return Err(RouterError::Duplicate { vrid, family });
            }
            let machine = Machine::new(cfg.machine.clone(), local)
                .map_err(|source| RouterError::Machine { vrid, source })?;
            routers.push(Router {
                cfg,
                machine,
                tracked: Vec::new(),
                transitions: VecDeque::new(),
                transitions_total: 0,
                adverts_received: 0,
                address_mismatches: 0,
                peer_checksum: None,
            });
        }
        Ok(Routers {
            routers,
            dropped: BTreeMap::new(),
        })
    }

    pub fn len(&self) -> usize {
        self.routers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.routers.is_empty()
    }

    pub fn ids(&self) -> std::ops::Range<RouterId> {
        0..self.routers.len()
    }

    pub fn config(&self, id: RouterId) -> Option<&RouterConfig> {
        self.routers.get(id).map(|r| &r.cfg)
    }

    pub fn state(&self, id: RouterId) -> Option<State> {
        self.routers.get(id).map(|r| r.machine.state())
    }

    /// The earliest instant at which [`Routers::timer`] has work for `id`.
    pub fn next_timer(&self, id: RouterId) -> Option<Duration> {
        self.routers.get(id).and_then(|r| r.machine.next_timer())
    }

    /// Starts one router (RFC 5798 Startup).
    pub fn startup(&mut self, id: RouterId, now: Duration) -> Vec<Action> {
        self.with(id, now, |m| m.startup(now))
    }

    /// Stops one router gracefully (priority 0 when Master).
    pub fn shutdown(&mut self, id: RouterId, now: Duration) -> Vec<Action> {
        self.with(id, now, |m| m.shutdown(now))
    }

    /// The link of `id` went down (`why`: no carrier, set down, gone).
    pub fn link_down(&mut self, id: RouterId, now: Duration, why: &str) -> Vec<Action> {
        self.with(id, now, |m| m.link_down(now, why))
    }

    /// The link of `id` is back.
    pub fn link_up(&mut self, id: RouterId, now: Duration) -> Vec<Action> {
        self.with(id, now, |m| m.link_up(now))
    }

    /// `id`'s timer fired.
    pub fn timer(&mut self, id: RouterId, now: Duration) -> Vec<Action> {
        self.with(id, now, |m| m.timer(now))
    }

    /// The tracked objects of `id` now: recomputes its effective priority.
    pub fn track(&mut self, id: RouterId, tracked: Vec<Tracked>, now: Duration) -> Vec<Action> {
        let Some(r) = self.routers.get_mut(id) else {
            return Vec::new();
        };
        let counted = tracked.iter().filter(|t| !t.required);
        let total = counted.clone().count();
        let down = counted.filter(|t| !t.up).count();
        let ep = if tracked.iter().any(|t| t.required && !t.up) {
            0
        } else {
            effective_priority(r.cfg.tracking, r.cfg.machine.priority(), total, down)
        };
        r.tracked = tracked;
        self.with(id, now, |m| m.set_priority(ep, now))
    }

    /// A packet from the link (the IP payload, with the TTL / hop limit and
    /// addresses of its IP header). Invalid packets and other VRIDs are
    /// counted and dropped; otherwise the router it belongs to and its
    /// actions.
    pub fn received(
        &mut self,
        bytes: &[u8],
        ttl: u8,
        src: IpAddr,
        dst: IpAddr,
        now: Duration,
    ) -> Option<(RouterId, Vec<Action>)> {
        let decoded = match Advert::decode(bytes, ttl, src, dst) {
            Ok(d) => d,
            Err(e) => {
                *self.dropped.entry(e.kind()).or_default() += 1;
                return None;
            }
        };
        let family = Family::of(src);
        let advert = decoded.advert;
        let Some(id) = self
            .routers
            .iter()
            .position(|r| r.cfg.machine.vrid == advert.vrid && r.family() == family)
        else {
            *self.dropped.entry("other_vrid").or_default() += 1;
            return None;
        };
        let r = &mut self.routers[id];
        r.adverts_received += 1;
        r.peer_checksum = Some(decoded.checksum);
        if !same_addresses(&advert.addrs, &r.cfg.addresses) {
            r.address_mismatches += 1;
        }
        let heard = Heard {
            from: src,
            priority: advert.priority,
            interval: Duration::from_millis(u64::from(advert.max_advert_int_cs) * 10),
        };
        Some((id, self.with(id, now, |m| m.heard(heard, now))))
    }

    /// The advertisement `id` sends with `priority`, encoded for the wire.
    pub fn advert(&self, id: RouterId, priority: u8) -> Option<Vec<u8>> {
        let r = self.routers.get(id)?;
        let cs = r.cfg.machine.advert_interval.as_millis() / 10;
        let advert = Advert {
            vrid: r.cfg.machine.vrid,
            priority,
            max_advert_int_cs: u16::try_from(cs).unwrap_or(crate::packet::MAX_ADVER_INT_MAX),
            addrs: r.cfg.addresses.clone(),
        };
        let local = r.machine.local_address();
        Some(advert.encode(r.cfg.checksum, local, r.family().group()))
    }

    /// Packets dropped before reaching a router, by reason.
    pub fn dropped(&self) -> &BTreeMap<&'static str, u64> {
        &self.dropped
    }

    pub fn status(&self, id: RouterId) -> Option<RouterStatus> {
        let r = self.routers.get(id)?;
        Some(RouterStatus {
            vrid: r.cfg.machine.vrid,
            family: r.family(),
            state: r.machine.state(),
            base_priority: r.cfg.machine.priority(),
            effective_priority: r.machine.priority(),
            tracking: r.cfg.tracking,
            master: r.machine.master_address(),
            master_adver_interval: r.machine.master_adver_interval(),
            addresses: r.cfg.addresses.clone(),
            tracked: r.tracked.clone(),
            transitions: r.transitions.iter().cloned().collect(),
            transitions_total: r.transitions_total,
            adverts_received: r.adverts_received,
            address_mismatches: r.address_mismatches,
            peer_checksum: r.peer_checksum,
        })
    }

    /// Runs `f` on router `id`'s machine and records its transitions.
    fn with(
        &mut self,
        id: RouterId,
        now: Duration,
        f: impl FnOnce(&mut Machine) -> Vec<Action>,
    ) -> Vec<Action> {
        let Some(r) = self.routers.get_mut(id) else {
            return Vec::new();
        };
        let actions = f(&mut r.machine);
        for a in &actions {
            if let Action::Transition { from, to, reason } = a {
                r.transitions_total += 1;
                if r.transitions.len() == TRANSITIONS_KEPT {
                    r.transitions.pop_front();
                }
                r.transitions.push_back(TransitionRecord {
                    at: now,
                    from: *from,
                    to: *to,
                    reason: reason.clone(),
                });
            }
        }
        actions
    }
}

impl Router {
    fn family(&self) -> Family {
        Family::of(self.machine.local_address())
    }
}

fn same_addresses(a: &[IpAddr], b: &[IpAddr]) -> bool {
    a.len() == b.len() && a.iter().all(|x| b.contains(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS1: &str = "10.0.0.1";
    const NS2: &str = "10.0.0.2";

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    fn config(vrid: u8, priority: u8, tracking: Tracking) -> RouterConfig {
        RouterConfig {
            machine: Config::new(vrid, priority),
            addresses: vec![ip("10.0.0.100")],
            tracking,
            checksum: ChecksumMode::PseudoHeader,
        }
    }

    fn node(local: &str, configs: Vec<RouterConfig>) -> Routers {
        Routers::new(configs, Some(ip(local)), None).expect("routers")
    }

    fn sends(actions: &[Action]) -> Vec<u8> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::SendAdvert { priority } => Some(*priority),
                _ => None,
            })
            .collect()
    }

    /// Two nodes, one VRID: NS1 (101) becomes master, NS2 (99) hears it and
    /// stays backup; one of NS1's two tracked vservers goes DOWN and, with
    /// PROGRESSIVE, NS1 advertises 50, so NS2 preempts (the seed's example).
    #[test]
    fn tracking_hands_the_vip_over_through_the_wire_format() {
        let mut ns1 = node(NS1, vec![config(1, 101, Tracking::Progressive)]);
        let mut ns2 = node(NS2, vec![config(1, 99, Tracking::Progressive)]);
        let t0 = Duration::ZERO;
        ns1.startup(0, t0);
        ns2.startup(0, t0);
        // NS1's Master_Down_Timer fires first (higher priority, shorter skew).
        let mut now = Duration::from_millis(3_700);
        let a = ns1.timer(0, now);
        assert_eq!(ns1.state(0), Some(State::Master), "{a:?}");
        let packet = ns1.advert(0, 101).expect("advert");
        let (_, b) = ns2
            .received(&packet, 255, ip(NS1), ip("224.0.0.18"), now)
            .expect("for VRID 1");
        assert!(sends(&b).is_empty());
        assert_eq!(ns2.state(0), Some(State::Backup));

        let tracked = vec![
            Tracked::required("dns 10.0.0.100:53", true),
            Tracked::counted("vserver a", true),
            Tracked::counted("vserver b", false),
        ];
        now += Duration::from_millis(10);
        let a = ns1.track(0, tracked, now);
        assert_eq!(sends(&a), vec![50]);
        let st = ns1.status(0).expect("status");
        assert_eq!((st.base_priority, st.effective_priority), (101, 50));
        assert_eq!(st.tracked.len(), 3);
        // NS2 hears 50 < 99: with preemption it ignores it and takes over
        // when its Master_Down_Timer runs out.
        let packet = ns1.advert(0, 50).expect("advert");
        ns2.received(&packet, 255, ip(NS1), ip("224.0.0.18"), now);
        let deadline = ns2.next_timer(0).expect("timer");
        let a = ns2.timer(0, deadline);
        assert_eq!(ns2.state(0), Some(State::Master), "{a:?}");
        let st = ns2.status(0).expect("status");
        assert_eq!(st.transitions.last().map(|t| t.to), Some(State::Master));
        assert_eq!(st.adverts_received, 2);
    }

    #[test]
    fn bad_packets_and_other_vrids_are_counted_not_heard() {
        let mut ns2 = node(NS2, vec![config(1, 99, Tracking::None)]);
        ns2.startup(0, Duration::ZERO);
        let before = ns2.next_timer(0);
        let other = node(NS1, vec![config(7, 200, Tracking::None)]);
        let good_other = other.advert(0, 200).expect("advert");
        let now = Duration::from_millis(5);
        let group = ip("224.0.0.18");
        assert!(
            ns2.received(&good_other, 255, ip(NS1), group, now)
                .is_none()
        );
        let mine = node(NS1, vec![config(1, 200, Tracking::None)])
            .advert(0, 200)
            .expect("advert");
        assert!(ns2.received(&mine, 254, ip(NS1), group, now).is_none());
        let mut corrupt = mine.clone();
        corrupt[9] ^= 0xff;
        assert!(ns2.received(&corrupt, 255, ip(NS1), group, now).is_none());
        assert!(ns2.received(&mine[..5], 255, ip(NS1), group, now).is_none());
        let d = ns2.dropped();
        assert_eq!(d.get("other_vrid"), Some(&1));
        assert_eq!(d.get("bad_ttl"), Some(&1));
        assert_eq!(d.get("bad_checksum"), Some(&1));
        assert_eq!(d.get("short"), Some(&1));
        assert_eq!(ns2.next_timer(0), before, "no drop touched the timer");
        assert_eq!(ns2.status(0).expect("status").adverts_received, 0);
    }

    #[test]
    fn a_different_address_list_is_accepted_and_counted() {
        let mut ns2 = node(NS2, vec![config(1, 99, Tracking::None)]);
        ns2.startup(0, Duration::ZERO);
        let mut other = config(1, 200, Tracking::None);
        other.addresses = vec![ip("10.0.0.100"), ip("10.0.0.101")];
        let packet = node(NS1, vec![other]).advert(0, 200).expect("advert");
        assert!(
            ns2.received(&packet, 255, ip(NS1), ip("224.0.0.18"), Duration::ZERO)
                .is_some()
        );
        assert_eq!(ns2.status(0).expect("status").address_mismatches, 1);
    }

    #[test]
    fn configuration_errors_name_the_vrid() {
        let mut bad = config(3, 99, Tracking::None);
        bad.addresses = vec![];
        assert_eq!(
            Routers::new(vec![bad], Some(ip(NS1)), None).err(),
            Some(RouterError::NoAddress { vrid: 3 })
        );
        let e = Routers::new(
            vec![config(3, 99, Tracking::None), config(3, 98, Tracking::None)],
            Some(ip(NS1)),
            None,
        )
        .expect_err("duplicate");
        assert!(e.to_string().contains("VRID 3"), "{e}");
        let e = Routers::new(vec![config(4, 255, Tracking::None)], Some(ip(NS1)), None)
            .expect_err("priority");
        assert!(e.to_string().starts_with("VRID 4: priority 255"), "{e}");
    }

    /// A required object DOWN gives the VIP up in every mode, NONE too.
    #[test]
    fn a_broken_dns_listener_gives_the_vip_up() {
        let mut r = node(NS1, vec![config(1, 100, Tracking::None)]);
        r.startup(0, Duration::ZERO);
        // No master heard: the Master_Down_Timer makes it master.
        let now = r.next_timer(0).expect("armed");
        r.timer(0, now);
        assert_eq!(r.state(0), Some(State::Master));
        let a = r.track(
            0,
            vec![
                Tracked::required("dns 10.0.0.100:53", false),
                Tracked::counted("vserver a", true),
            ],
            now,
        );
        assert!(a.contains(&Action::ReleaseAddresses), "{a:?}");
        assert_eq!(sends(&a), vec![0]);
        assert_eq!(r.state(0), Some(State::Backup));
        assert_eq!(r.status(0).expect("status").effective_priority, 0);
    }

    #[test]
    fn transitions_are_bounded() {
        let mut r = node(NS1, vec![config(1, 100, Tracking::All)]);
        r.startup(0, Duration::ZERO);
        let down = vec![Tracked::counted("x", false)];
        let up = vec![Tracked::counted("x", true)];
        let mut now = Duration::ZERO;
        for _ in 0..(TRANSITIONS_KEPT * 2) {
            // On time: the timer the machine asked for.
            now = r.next_timer(0).expect("armed").max(now);
            r.timer(0, now);
            r.track(0, down.clone(), now);
            r.track(0, up.clone(), now);
        }
        let st = r.status(0).expect("status");
        assert_eq!(st.transitions.len(), TRANSITIONS_KEPT);
        assert!(
            st.transitions_total > TRANSITIONS_KEPT as u64,
            "the total counts the forgotten ones too: {}",
            st.transitions_total
        );
    }
}
