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
