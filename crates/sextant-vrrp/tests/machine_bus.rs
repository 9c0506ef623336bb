//! Several machines of one VRID wired to a simulated bus: each
//! `SendAdvert` reaches every other running node at the same `now`, and time
//! advances to the earliest armed timer. All timers due at the same instant
//! fire before the adverts they produce are delivered (they cross on the
//! wire), so simultaneous takeovers are modelled as they happen.

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use sextant_vrrp::machine::{
    Action, Config, Heard, Machine, State, master_down_interval, skew_time,
};

const S: Duration = Duration::from_secs(1);

fn ip(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(192, 0, 2, last))
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

struct Node {
    m: Machine,
    running: bool,
    armed: Option<Duration>,
    holding: bool,
    /// When the node took the addresses, each time.
    took: Vec<Duration>,
    /// When the node sent an advert, and with which priority.
    sent: Vec<(Duration, u8)>,
}

struct Bus {
    nodes: Vec<Node>,
    now: Duration,
}

impl Bus {
    fn new(nodes: Vec<(Config, IpAddr)>) -> Bus {
        Bus {
            nodes: nodes
                .into_iter()
                .map(|(c, a)| Node {
                    m: Machine::new(c, a).unwrap(),
                    running: false,
                    armed: None,
                    holding: false,
                    took: Vec::new(),
                    sent: Vec::new(),
                })
                .collect(),
            now: Duration::ZERO,
        }
    }

    /// Every node at priority `p[i]`, addresses .1, .2, ...
    fn with_priorities(p: &[u8]) -> Bus {
        Bus::new(
            p.iter()
                .enumerate()
                .map(|(i, &p)| (Config::new(1, p), ip(i as u8 + 1)))
                .collect(),
        )
    }

    /// Perform a node's actions; returns the adverts it sent.
    fn apply(&mut self, i: usize, actions: Vec<Action>, out: &mut VecDeque<(usize, u8)>) {
        let now = self.now;
        let n = &mut self.nodes[i];
        for a in actions {
            match a {
                Action::SendAdvert { priority } => {
                    n.sent.push((now, priority));
                    out.push_back((i, priority));
                }
                Action::TakeAddresses => {
                    assert!(!n.holding, "node {i} took the addresses twice");
                    n.holding = true;
                    n.took.push(now);
                }
                Action::ReleaseAddresses => {
                    assert!(n.holding, "node {i} released addresses it did not hold");
                    n.holding = false;
                }
                Action::ArmTimer { at } => {
                    assert!(at >= now, "timer armed in the past");
                    n.armed = Some(at);
                }
                Action::Announce | Action::Transition { .. } => {}
            }
        }
        assert_eq!(n.holding, n.m.state() == State::Master);
    }

    fn deliver(&mut self, mut queue: VecDeque<(usize, u8)>) {
        while let Some((from, priority)) = queue.pop_front() {
            let heard = Heard {
                from: self.nodes[from].m.local_address(),
                priority,
                interval: self.nodes[from].m.config().advert_interval,
            };
            for j in 0..self.nodes.len() {
                if j != from && self.nodes[j].running {
                    let a = self.nodes[j].m.heard(heard, self.now);
                    self.apply(j, a, &mut queue);
                }
            }
        }
    }

    fn input(&mut self, i: usize, f: impl FnOnce(&mut Machine, Duration) -> Vec<Action>) {
        let mut q = VecDeque::new();
        let a = f(&mut self.nodes[i].m, self.now);
        self.apply(i, a, &mut q);
        self.deliver(q);
    }

    fn start(&mut self, i: usize) {
        self.nodes[i].running = true;
        self.input(i, |m, now| m.startup(now));
    }

    fn start_all(&mut self) {
        let mut q = VecDeque::new();
        for i in 0..self.nodes.len() {
            self.nodes[i].running = true;
            let a = self.nodes[i].m.startup(self.now);
            self.apply(i, a, &mut q);
        }
        self.deliver(q);
    }

    fn shutdown(&mut self, i: usize) {
        self.input(i, |m, now| m.shutdown(now));
        self.nodes[i].running = false;
        self.nodes[i].armed = None;
    }

    /// The node dies without a word: no advert, its addresses gone with it.
    fn kill(&mut self, i: usize) {
        let n = &mut self.nodes[i];
        n.running = false;
        n.armed = None;
        n.holding = false;
    }

    /// A dead node comes back with a fresh machine and starts up.
    fn revive(&mut self, i: usize, config: Config) {
        let addr = self.nodes[i].m.local_address();
        self.nodes[i].m = Machine::new(config, addr).unwrap();
        self.nodes[i].holding = false;
        self.start(i);
    }

    fn set_priority(&mut self, i: usize, p: u8) {
        self.input(i, |m, now| m.set_priority(p, now));
    }

    fn next_event(&self) -> Option<Duration> {
        self.nodes
            .iter()
            .filter(|n| n.running)
            .filter_map(|n| n.armed)
            .min()
    }

    /// Run every timer due up to `until`, calling `check` after each
    /// instant; then set the clock to `until`.
    fn run_until(&mut self, until: Duration, mut check: impl FnMut(&Bus)) {
        while let Some(t) = self.next_event().filter(|&t| t <= until) {
            self.now = t;
            let mut q = VecDeque::new();
            for i in 0..self.nodes.len() {
                if self.nodes[i].running && self.nodes[i].armed == Some(t) {
                    self.nodes[i].armed = None;
                    let a = self.nodes[i].m.timer(t);
                    self.apply(i, a, &mut q);
                }
            }
            self.deliver(q);
            check(self);
        }
        self.now = until;
    }

    fn run(&mut self, until: Duration) {
        self.run_until(until, |_| {});
    }

    fn masters(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].running && self.nodes[i].holding)
            .collect()
    }

    fn master(&self) -> usize {
        let m = self.masters();
        assert_eq!(m.len(), 1, "masters: {m:?}");
        m[0]
    }

    fn exactly_one(b: &Bus) {
        b.master();
    }

    fn at_most_one(b: &Bus) {
        assert!(b.masters().len() <= 1, "masters: {:?}", b.masters());
    }

    fn last_take(&self, i: usize) -> Duration {
        *self.nodes[i].took.last().expect("never took over")
    }
}

#[test]
fn highest_priority_wins_and_stays_alone() {
    let mut b = Bus::with_priorities(&[100, 200, 150]);
    b.start_all();
    b.run(S * 5);
    assert_eq!(b.master(), 1);
    // The first to fire is the highest: its down interval is the shortest.
    assert_eq!(b.last_take(1), master_down_interval(200, S));
    b.run_until(S * 60, Bus::exactly_one);
    assert_eq!(b.master(), 1);
    for i in [0, 2] {
        assert_eq!(b.nodes[i].m.state(), State::Backup);
        assert_eq!(b.nodes[i].m.master_address(), Some(ip(2)));
        assert_eq!(b.nodes[i].took, vec![]);
    }
    assert_eq!(b.nodes[1].m.master_address(), Some(ip(2)));
}

#[test]
fn staggered_start_still_converges_on_the_highest() {
    let mut b = Bus::with_priorities(&[100, 200, 150]);
    b.start(0);
    b.run(S * 10);
    assert_eq!(b.master(), 0);
    b.start(2);
    b.run(S * 20);
    assert_eq!(b.master(), 2);
    b.start(1);
    b.run(S * 30);
    assert_eq!(b.master(), 1);
    b.run_until(S * 90, Bus::exactly_one);
}

#[test]
fn equal_priority_higher_address_wins() {
    let mut b = Bus::with_priorities(&[100, 100, 100]);
    b.start_all();
    // All three fire together, all become master, the adverts cross and the
    // two lower addresses step down (RFC 5798 §6.4.3).
    b.run(S * 5);
    assert_eq!(b.master(), 2);
    assert_eq!(b.nodes[0].took.len(), 1);
    assert_eq!(b.nodes[1].took.len(), 1);
    b.run_until(S * 60, Bus::exactly_one);
    assert_eq!(b.master(), 2);
}

#[test]
fn master_shutdown_hands_over_within_skew_time() {
    let mut b = Bus::with_priorities(&[200, 150, 100]);
    b.start_all();
    b.run(S * 10);
    assert_eq!(b.master(), 0);
    b.run(S * 10 + ms(300));
    let t = b.now;
    b.shutdown(0);
    assert_eq!(b.nodes[0].sent.last(), Some(&(t, 0)));
    assert_eq!(b.masters(), vec![]);
    b.run_until(S * 60, Bus::at_most_one);
    assert_eq!(b.master(), 1);
    let took = b.last_take(1) - t;
    assert_eq!(took, skew_time(150, S));
    assert!(took < S * 3);
    assert!(b.nodes[2].took.is_empty());
}

#[test]
fn master_silent_death_takes_master_down_interval() {
    let mut b = Bus::with_priorities(&[200, 150, 100]);
    b.start_all();
    b.run(S * 10 + ms(500));
    assert_eq!(b.master(), 0);
    let last = b.nodes[0].sent.last().unwrap().0;
    b.kill(0);
    b.run_until(S * 60, Bus::at_most_one);
    assert_eq!(b.master(), 1);
    assert_eq!(b.last_take(1), last + master_down_interval(150, S));
    assert!(b.nodes[2].took.is_empty());
}

#[test]
fn preempt_on_recovering_higher_node_takes_back() {
    let mut b = Bus::with_priorities(&[200, 150, 100]);
    b.start_all();
    b.run(S * 10);
    b.kill(0);
    b.run(S * 20);
    assert_eq!(b.master(), 1);
    let t = S * 20 + ms(250);
    b.run(t);
    b.revive(0, Config::new(1, 200));
    assert_eq!(b.nodes[0].m.state(), State::Backup);
    b.run_until(S * 60, Bus::at_most_one);
    assert_eq!(b.master(), 0);
    // The lower master's adverts do not reset its timer: it fires a full
    // Master_Down_Interval after startup.
    assert_eq!(b.last_take(0), t + master_down_interval(200, S));
    assert_eq!(b.nodes[1].m.state(), State::Backup);
}

#[test]
fn preempt_off_recovering_higher_node_stays_backup() {
    let mut b = Bus::with_priorities(&[200, 150, 100]);
    b.start_all();
    b.run(S * 10);
    b.kill(0);
    b.run(S * 20);
    assert_eq!(b.master(), 1);
    let mut c = Config::new(1, 200);
    c.preempt = false;
    b.revive(0, c);
    b.run_until(S * 120, Bus::exactly_one);
    assert_eq!(b.master(), 1);
    assert_eq!(b.nodes[0].m.state(), State::Backup);
    assert_eq!(b.nodes[0].m.master_address(), Some(ip(2)));
}

#[test]
fn preemption_delay_is_honoured() {
    let mut b = Bus::with_priorities(&[200, 150, 100]);
    b.start_all();
    b.run(S * 10);
    b.kill(0);
    b.run(S * 20);
    assert_eq!(b.master(), 1);
    let t = b.now;
    let delay = S * 10;
    let mut c = Config::new(1, 200);
    c.preempt_delay = delay;
    b.revive(0, c);
    // Not before the delay has run out ...
    b.run_until(t + delay, Bus::exactly_one);
    assert_eq!(b.master(), 1);
    // ... and at most a Master_Down_Interval after it.
    b.run_until(t + delay + master_down_interval(200, S), Bus::at_most_one);
    assert_eq!(b.master(), 0);
    let took = b.last_take(0);
    assert!(took > t + delay, "{took:?}");
    // The last reset is the last lower advert heard before the delay ran
    // out (one every second from node 1).
    let first_heard = b.nodes[1]
        .sent
        .iter()
        .map(|&(at, _)| at)
        .find(|&at| at >= t)
        .unwrap();
    let last_reset = b.nodes[1]
        .sent
        .iter()
        .map(|&(at, _)| at)
        .filter(|&at| at < first_heard + delay)
        .max()
        .unwrap();
    assert_eq!(took, last_reset + master_down_interval(200, S));
    b.run_until(S * 90, Bus::exactly_one);
    assert_eq!(b.master(), 0);
}

#[test]
fn lowering_the_master_below_a_backup_hands_over() {
    let mut b = Bus::with_priorities(&[200, 150, 100]);
    b.start_all();
    b.run(S * 10 + ms(400));
    assert_eq!(b.master(), 0);
    let last_200 = b.nodes[0].sent.last().unwrap().0;
    b.set_priority(0, 120);
    // Advertised at once with the new priority.
    assert_eq!(b.nodes[0].sent.last(), Some(&(b.now, 120)));
    b.run_until(S * 60, Bus::at_most_one);
    assert_eq!(b.master(), 1);
    assert_eq!(b.last_take(1), last_200 + master_down_interval(150, S));
    assert_eq!(b.nodes[0].m.state(), State::Backup);
    assert_eq!(b.nodes[0].m.master_address(), Some(ip(2)));
    assert!(b.nodes[2].took.is_empty());
}

#[test]
fn priority_zero_is_a_graceful_handover() {
    let mut b = Bus::with_priorities(&[200, 150, 100]);
    b.start_all();
    b.run(S * 10 + ms(400));
    let t = b.now;
    b.set_priority(0, 0);
    assert_eq!(b.nodes[0].m.state(), State::Backup);
    assert_eq!(b.nodes[0].sent.last(), Some(&(t, 0)));
    b.run_until(S * 60, Bus::at_most_one);
    assert_eq!(b.master(), 1);
    assert_eq!(b.last_take(1) - t, skew_time(150, S));
    // Priority back: it takes over again (preempt on).
    b.set_priority(0, 200);
    b.run_until(S * 120, Bus::at_most_one);
    assert_eq!(b.master(), 0);
    assert_eq!(
        b.last_take(0),
        S * 60 + master_down_interval(200, S),
        "a full Master_Down_Interval after the priority came back"
    );
}

#[test]
fn raising_a_backup_above_the_master_takes_over() {
    let mut b = Bus::with_priorities(&[200, 150, 100]);
    b.start_all();
    b.run(S * 10 + ms(400));
    assert_eq!(b.master(), 0);
    let last_reset = b.nodes[0].sent.last().unwrap().0;
    b.set_priority(1, 250);
    b.run_until(S * 60, Bus::at_most_one);
    assert_eq!(b.master(), 1);
    // The deadline set by the last advert that still counted, with the
    // skew of the priority in force then.
    assert_eq!(b.last_take(1), last_reset + master_down_interval(150, S));
    assert_eq!(b.nodes[0].m.state(), State::Backup);
}

#[test]
fn backup_adopts_the_masters_interval() {
    let mut fast = Config::new(1, 200);
    fast.advert_interval = ms(300);
    let mut b = Bus::new(vec![(fast, ip(1)), (Config::new(1, 100), ip(2))]);
    b.start_all();
    b.run(S * 10);
    assert_eq!(b.master(), 0);
    assert_eq!(b.nodes[1].m.master_adver_interval(), ms(300));
    let last = b.nodes[0].sent.last().unwrap().0;
    b.kill(0);
    b.run(S * 20);
    assert_eq!(b.master(), 1);
    assert_eq!(b.last_take(1), last + master_down_interval(100, ms(300)));
    // As master it advertises its own interval again.
    assert_eq!(b.nodes[1].m.master_adver_interval(), S);
}

#[test]
fn owner_takes_over_at_once() {
    let mut b = Bus::new(vec![
        (Config::new(1, 200), ip(1)),
        (Config::owner(1), ip(2)),
    ]);
    b.start(0);
    b.run(S * 10);
    assert_eq!(b.master(), 0);
    b.start(1);
    // The owner is master at startup; its advert makes node 0 step down at
    // the same instant.
    assert_eq!(b.master(), 1);
    assert_eq!(b.last_take(1), S * 10);
    b.run_until(S * 60, Bus::exactly_one);
}

/// Seed 004's figure: three name servers, four VIPs (one VRID each). VIP1
/// and VIP2 are master on NS1, VIP3 on NS2, VIP4 on NS3; when NS1 dies
/// VIP1 moves to NS3 and VIP2 to NS2.
#[test]
fn seed_004_figure() {
    // Priorities per VRID for [NS1, NS2, NS3].
    let table: [(u8, [u8; 3]); 4] = [
        (1, [200, 100, 150]),
        (2, [200, 150, 100]),
        (3, [150, 200, 100]),
        (4, [150, 100, 200]),
    ];
    let mut buses: Vec<Bus> = table
        .iter()
        .map(|&(vrid, p)| {
            Bus::new(
                (0..3)
                    .map(|i| (Config::new(vrid, p[i]), ip(i as u8 + 1)))
                    .collect(),
            )
        })
        .collect();
    for b in &mut buses {
        b.start_all();
        b.run_until(S * 30, Bus::at_most_one);
    }
    let masters: Vec<usize> = buses.iter().map(|b| b.master()).collect();
    assert_eq!(masters, vec![0, 0, 1, 2]);
    for b in &mut buses {
        b.kill(0);
        b.run_until(S * 60, Bus::at_most_one);
    }
    let masters: Vec<usize> = buses.iter().map(|b| b.master()).collect();
    assert_eq!(masters, vec![2, 1, 1, 2]);
    // NS1 comes back: with preempt on, everything returns to the figure.
    for (b, &(vrid, p)) in buses.iter_mut().zip(&table) {
        b.revive(0, Config::new(vrid, p[0]));
        b.run_until(S * 90, Bus::at_most_one);
    }
    let masters: Vec<usize> = buses.iter().map(|b| b.master()).collect();
    assert_eq!(masters, vec![0, 0, 1, 2]);
}
