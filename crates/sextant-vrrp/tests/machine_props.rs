//! Random input sequences: the machine never panics, never takes the
//! addresses twice without releasing them in between, holds them exactly
//! when Master, and never asks for a timer in the past.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use proptest::prelude::*;
use sextant_vrrp::machine::{Action, Config, Heard, Machine, State};

#[derive(Debug, Clone)]
enum Op {
    Startup,
    Shutdown,
    Heard {
        from: IpAddr,
        priority: u8,
        interval: Duration,
    },
    /// Fire the timer at the instant the machine asked for (if any).
    TimerDue,
    /// Fire the timer at the current instant, whatever was asked for.
    TimerNow,
    SetPriority(u8),
    Advance(Duration),
}

fn address() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        (0u8..8).prop_map(|n| IpAddr::V4(Ipv4Addr::new(192, 0, 2, n))),
        any::<u32>().prop_map(|n| IpAddr::V4(Ipv4Addr::from(n))),
        any::<u128>().prop_map(|n| IpAddr::V6(Ipv6Addr::from(n))),
    ]
}

fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        (0u64..5_000).prop_map(Duration::from_millis),
        (0u64..50_000).prop_map(Duration::from_millis),
        (any::<u64>(), 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => Just(Op::Startup),
        1 => Just(Op::Shutdown),
        6 => (address(), any::<u8>(), duration())
            .prop_map(|(from, priority, interval)| Op::Heard { from, priority, interval }),
        4 => Just(Op::TimerDue),
        1 => Just(Op::TimerNow),
        2 => any::<u8>().prop_map(Op::SetPriority),
        3 => duration().prop_map(Op::Advance),
    ]
}

fn config() -> impl Strategy<Value = Config> {
    (
        1u8..=255,
        prop_oneof![1 => Just(None), 4 => (1u8..=254).prop_map(Some)],
        1u32..=4095,
        any::<bool>(),
        prop_oneof![
            Just(Duration::ZERO),
            (0u64..20_000).prop_map(Duration::from_millis)
        ],
        any::<bool>(),
    )
        .prop_map(
            |(vrid, priority, cs, preempt, preempt_delay, accept_mode)| {
                let mut c = match priority {
                    None => Config::owner(vrid),
                    Some(p) => Config::new(vrid, p),
                };
                c.advert_interval = Duration::from_millis(10) * cs;
                c.preempt = preempt;
                c.preempt_delay = preempt_delay;
                c.accept_mode = accept_mode;
                c
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_inputs_keep_the_invariants(
        cfg in config(),
        local in address(),
        ops in proptest::collection::vec(op(), 0..200),
    ) {
        let mut m = Machine::new(cfg, local).unwrap();
        let mut now = Duration::ZERO;
        let mut holding = false;
        let mut armed: Option<Duration> = None;
        for op in ops {
            let actions = match op {
                Op::Startup => m.startup(now),
                Op::Shutdown => m.shutdown(now),
                Op::Heard { from, priority, interval } => {
                    m.heard(Heard { from, priority, interval }, now)
                }
                Op::TimerDue => match armed.take() {
                    Some(at) => {
                        now = now.max(at);
                        m.timer(now)
                    }
                    None => Vec::new(),
                },
                Op::TimerNow => {
                    armed = None;
                    m.timer(now)
                }
                Op::SetPriority(p) => m.set_priority(p, now),
                Op::Advance(d) => {
                    now = now.saturating_add(d);
                    Vec::new()
                }
            };
            for a in &actions {
                match a {
                    Action::TakeAddresses => {
                        prop_assert!(!holding, "TakeAddresses twice: {actions:?}");
                        holding = true;
                    }
                    Action::ReleaseAddresses => {
                        prop_assert!(holding, "ReleaseAddresses while not holding");
                        holding = false;
                    }
                    Action::ArmTimer { at } => {
                        prop_assert!(*at >= now, "timer in the past");
                        armed = Some(*at);
                    }
                    Action::SendAdvert { priority } => {
                        prop_assert!(
                            m.state() != State::Backup || *priority == 0,
                            "a backup advertising a non-zero priority"
                        );
                    }
                    Action::Announce => prop_assert!(holding, "announcing addresses not held"),
                    Action::Transition { from, to, .. } => prop_assert_ne!(from, to),
                }
            }
            prop_assert_eq!(holding, m.state() == State::Master);
            if m.state() == State::Master {
                prop_assert!(m.next_timer().is_some());
                prop_assert_eq!(m.master_address(), Some(local));
            }
            if m.state() == State::Initialize {
                prop_assert_eq!(m.master_address(), None);
            }
            // The timer the caller holds is the machine's earliest deadline
            // (or a stale one, which is harmless).
            if let Some(next) = m.next_timer() {
                prop_assert!(armed == Some(next) || armed.is_some_and(|a| a <= next),
                    "armed {armed:?}, next {next:?}");
            }
        }
    }
}

/// A minimal bus for the convergence property (see `machine_bus.rs` for the
/// full one): adverts reach the others at once; timers due at the same
/// instant fire together before their adverts are delivered.
fn converge(machines: &mut [Machine], until: Duration) -> Result<(), TestCaseError> {
    let mut armed: Vec<Option<Duration>> = vec![None; machines.len()];
    let mut queue = Vec::new();
    let apply = |i: usize,
                 actions: Vec<Action>,
                 armed: &mut Vec<Option<Duration>>,
                 queue: &mut Vec<(usize, u8)>| {
        for a in actions {
            match a {
                Action::SendAdvert { priority } => queue.push((i, priority)),
                Action::ArmTimer { at } => armed[i] = Some(at),
                _ => {}
            }
        }
    };
    for (i, m) in machines.iter_mut().enumerate() {
        let a = m.startup(Duration::ZERO);
        apply(i, a, &mut armed, &mut queue);
    }
    let mut now = Duration::ZERO;
    loop {
        while !queue.is_empty() {
            let batch: Vec<(usize, u8)> = std::mem::take(&mut queue);
            for (from, priority) in batch {
                let heard = Heard {
                    from: machines[from].local_address(),
                    priority,
                    interval: machines[from].config().advert_interval,
                };
                for (j, m) in machines.iter_mut().enumerate() {
                    if j != from {
                        let a = m.heard(heard, now);
                        apply(j, a, &mut armed, &mut queue);
                    }
                }
            }
        }
        let Some(t) = armed
            .iter()
            .flatten()
            .copied()
            .min()
            .filter(|&t| t <= until)
        else {
            break;
        };
        now = t;
        for i in 0..machines.len() {
            if armed[i] == Some(t) {
                armed[i] = None;
                let a = machines[i].timer(t);
                apply(i, a, &mut armed, &mut queue);
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any priorities, one advertisement interval, any preempt settings:
    /// after a minute exactly one master, the highest (priority, address)
    /// pair, and every backup knows it. (With different intervals the first
    /// to fire may win an equal-priority race, or keep a higher backup with
    /// preempt off at bay: RFC 5798 §6.4.2 resets a backup's timer on an
    /// advert of equal priority, whatever the address.)
    #[test]
    fn election_converges_on_the_highest(
        nodes in proptest::collection::btree_map(1u8..=254, (1u8..=254, any::<bool>()), 2..5),
        cs in 1u32..=400,
    ) {
        let mut machines: Vec<Machine> = nodes
            .iter()
            .map(|(&last, &(p, preempt))| {
                let mut c = Config::new(9, p);
                c.advert_interval = Duration::from_millis(10) * cs;
                c.preempt = preempt;
                Machine::new(c, IpAddr::V4(Ipv4Addr::new(198, 51, 100, last))).unwrap()
            })
            .collect();
        converge(&mut machines, Duration::from_secs(600))?;
        let masters: Vec<usize> = (0..machines.len())
            .filter(|&i| machines[i].state() == State::Master)
            .collect();
        prop_assert_eq!(masters.len(), 1, "{:?}", machines.iter().map(|m| m.state()).collect::<Vec<_>>());
        let best = (0..machines.len())
            .max_by_key(|&i| (machines[i].priority(), machines[i].local_address()))
            .unwrap();
        // All start together, so the highest fires first (or ties, and the
        // tie-break settles it), whatever the preempt settings.
        prop_assert_eq!(masters[0], best);
        let addr = machines[best].local_address();
        for m in &machines {
            prop_assert_eq!(m.master_address(), Some(addr));
        }
    }
}

proptest! {
    /// Any configuration is accepted or refused, never a panic.
    #[test]
    fn any_config_is_checked(
        vrid in any::<u8>(),
        base_priority in any::<u8>(),
        owner in any::<bool>(),
        secs in any::<u64>(),
        nanos in 0u32..1_000_000_000,
        local in address(),
    ) {
        let mut c = Config::new(vrid, base_priority);
        c.owner = owner;
        c.advert_interval = Duration::new(secs, nanos);
        if let Ok(mut m) = Machine::new(c, local) {
            m.startup(Duration::MAX);
            m.timer(Duration::MAX);
            m.shutdown(Duration::MAX);
        }
    }
}

/// Events on a three-node bus for `churn_settles_on_one_master`.
#[derive(Debug, Clone)]
enum Event {
    Kill(usize),
    Revive(usize),
    Shutdown(usize),
    SetPriority(usize, u8),
    Wait(Duration),
}

struct Lan {
    machines: Vec<Machine>,
    configs: Vec<Config>,
    running: Vec<bool>,
    armed: Vec<Option<Duration>>,
    holding: Vec<bool>,
    now: Duration,
}

impl Lan {
    fn apply(&mut self, i: usize, actions: Vec<Action>, queue: &mut Vec<(usize, u8)>) {
        for a in actions {
            match a {
                Action::SendAdvert { priority } => queue.push((i, priority)),
                Action::ArmTimer { at } => self.armed[i] = Some(at),
                Action::TakeAddresses => {
                    assert!(!self.holding[i], "took twice");
                    self.holding[i] = true;
                }
                Action::ReleaseAddresses => self.holding[i] = false,
                _ => {}
            }
        }
    }

    fn deliver(&mut self, mut queue: Vec<(usize, u8)>) {
        while !queue.is_empty() {
            for (from, priority) in std::mem::take(&mut queue) {
                let heard = Heard {
                    from: self.machines[from].local_address(),
                    priority,
                    interval: self.machines[from].config().advert_interval,
                };
                for j in 0..self.machines.len() {
                    if j != from && self.running[j] {
                        let a = self.machines[j].heard(heard, self.now);
                        self.apply(j, a, &mut queue);
                    }
                }
            }
        }
    }

    fn input(&mut self, i: usize, f: impl FnOnce(&mut Machine, Duration) -> Vec<Action>) {
        let mut q = Vec::new();
        let a = f(&mut self.machines[i], self.now);
        self.apply(i, a, &mut q);
        self.deliver(q);
    }

    fn run(&mut self, until: Duration) {
        loop {
            let next = (0..self.machines.len())
                .filter(|&i| self.running[i])
                .filter_map(|i| self.armed[i])
                .min()
                .filter(|&t| t <= until);
            let Some(t) = next else { break };
            self.now = t;
            let mut q = Vec::new();
            for i in 0..self.machines.len() {
                if self.running[i] && self.armed[i] == Some(t) {
                    self.armed[i] = None;
                    let a = self.machines[i].timer(t);
                    self.apply(i, a, &mut q);
                }
            }
            self.deliver(q);
        }
        self.now = until;
    }
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        1 => (0usize..3).prop_map(Event::Kill),
        1 => (0usize..3).prop_map(Event::Revive),
        1 => (0usize..3).prop_map(Event::Shutdown),
        1 => (0usize..3, any::<u8>()).prop_map(|(i, p)| Event::SetPriority(i, p)),
        3 => (0u64..20_000).prop_map(|ms| Event::Wait(Duration::from_millis(ms))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Nodes die, come back, shut down and change priority at random; after
    /// a quiet minute exactly one running node is master, unless every
    /// running node has priority 0 (then none is), and every running node
    /// agrees on who it is.
    #[test]
    fn churn_settles_on_one_master(
        nodes in proptest::collection::vec(
            (1u8..=254, any::<bool>(), prop_oneof![Just(0u64), 0u64..10_000]),
            3,
        ),
        cs in 1u32..=200,
        events in proptest::collection::vec(event(), 0..40),
    ) {
        let configs: Vec<Config> = nodes
            .iter()
            .map(|&(p, preempt, delay_ms)| {
                let mut c = Config::new(5, p);
                c.advert_interval = Duration::from_millis(10) * cs;
                c.preempt = preempt;
                c.preempt_delay = Duration::from_millis(delay_ms);
                c
            })
            .collect();
        let mut lan = Lan {
            machines: configs
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    Machine::new(c.clone(), IpAddr::V4(Ipv4Addr::new(203, 0, 113, i as u8 + 1)))
                        .unwrap()
                })
                .collect(),
            configs,
            running: vec![true; 3],
            armed: vec![None; 3],
            holding: vec![false; 3],
            now: Duration::ZERO,
        };
        let mut q = Vec::new();
        for i in 0..3 {
            let a = lan.machines[i].startup(Duration::ZERO);
            lan.apply(i, a, &mut q);
        }
        lan.deliver(q);
        for e in events {
            match e {
                Event::Kill(i) => {
                    lan.running[i] = false;
                    lan.armed[i] = None;
                    lan.holding[i] = false;
                }
                Event::Revive(i) => {
                    if !lan.running[i] {
                        let addr = lan.machines[i].local_address();
                        lan.machines[i] = Machine::new(lan.configs[i].clone(), addr).unwrap();
                        lan.running[i] = true;
                        lan.input(i, |m, now| m.startup(now));
                    }
                }
                Event::Shutdown(i) => {
                    if lan.running[i] {
                        lan.input(i, |m, now| m.shutdown(now));
                        lan.running[i] = false;
                        lan.armed[i] = None;
                    }
                }
                Event::SetPriority(i, p) => {
                    if lan.running[i] {
                        lan.input(i, |m, now| m.set_priority(p, now));
                    }
                }
                Event::Wait(d) => {
                    let until = lan.now + d;
                    lan.run(until);
                }
            }
            for i in 0..3 {
                prop_assert_eq!(
                    lan.holding[i],
                    lan.running[i] && lan.machines[i].state() == State::Master
                );
            }
        }
        let until = lan.now + Duration::from_secs(60);
        lan.run(until);
        let running: Vec<usize> = (0..3).filter(|&i| lan.running[i]).collect();
        let masters: Vec<usize> = running.iter().copied().filter(|&i| lan.holding[i]).collect();
        let willing = running.iter().any(|&i| lan.machines[i].priority() > 0);
        prop_assert_eq!(masters.len(), usize::from(willing), "masters {:?}", masters);
        if let Some(&m) = masters.first() {
            let addr = lan.machines[m].local_address();
            for &i in &running {
                prop_assert_eq!(lan.machines[i].master_address(), Some(addr));
            }
        }
    }
}
