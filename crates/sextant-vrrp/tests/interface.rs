//! The per-interface driver with a recording link: two nodes' drivers joined
//! by a simulated wire (each advert one sends is a frame the other reads,
//! at the same `now`), time advanced to the earliest wake. What the links
//! were asked to do, and the notices for the edge, are checked in order.

use std::cell::RefCell;
use std::net::{IpAddr, Ipv4Addr};
use std::rc::Rc;
use std::time::Duration;

use sextant_vrrp::interface::{
    ANNOUNCE_BURST, BackupMode, Binding, Frame, Interface, LATE_ANNOUNCES, Notice,
};
use sextant_vrrp::link::{Link, Vip};
use sextant_vrrp::machine::{Config, State};
use sextant_vrrp::packet::ChecksumMode;
use sextant_vrrp::router::{RouterConfig, Routers, Tracked};
use sextant_vrrp::tracking::Tracking;

/// What a link was asked to do, with `now` of the step.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Advert,
    Take,
    Release,
    Announce,
}

#[derive(Debug, thiserror::Error)]
#[error("the recording link refuses")]
struct Refused;

/// A [`Link`] that records every call; adverts also go on the wire.
#[derive(Debug, Clone)]
struct Recording {
    ops: Rc<RefCell<Vec<Op>>>,
    wire: Rc<RefCell<Vec<Vec<u8>>>>,
    refuse_take: bool,
}

impl Link for Recording {
    type Error = Refused;
    fn send_advert(&mut self, packet: &[u8]) -> Result<(), Refused> {
        self.ops.borrow_mut().push(Op::Advert);
        self.wire.borrow_mut().push(packet.to_vec());
        Ok(())
    }
    fn take_addresses(&mut self, _: &[Vip]) -> Result<(), Refused> {
        self.ops.borrow_mut().push(Op::Take);
        if self.refuse_take {
            return Err(Refused);
        }
        Ok(())
    }
    fn release_addresses(&mut self, _: &[Vip]) -> Result<(), Refused> {
        self.ops.borrow_mut().push(Op::Release);
        Ok(())
    }
    fn announce(&mut self, _: &[Vip]) -> Result<(), Refused> {
        self.ops.borrow_mut().push(Op::Announce);
        Ok(())
    }
}

const VIP: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 100));

struct Node {
    driver: Interface<Recording>,
    ops: Rc<RefCell<Vec<Op>>>,
    wire: Rc<RefCell<Vec<Vec<u8>>>>,
    notices: Vec<Notice>,
    ip: IpAddr,
}

impl Node {
    fn new(last: u8, priority: u8, sharing: bool) -> Node {
        let ip = IpAddr::V4(Ipv4Addr::new(192, 0, 2, last));
        let config = RouterConfig {
            machine: Config::configured(10, priority),
            addresses: vec![VIP],
            tracking: Tracking::None,
            checksum: ChecksumMode::PseudoHeader,
        };
        let routers = Routers::new(vec![config], Some(ip), None).expect("routers");
        let ops = Rc::new(RefCell::new(Vec::new()));
        let wire = Rc::new(RefCell::new(Vec::new()));
        let link = Recording {
            ops: Rc::clone(&ops),
            wire: Rc::clone(&wire),
            refuse_take: false,
        };
        let binding = Binding {
            link,
            vips: vec![Vip::host(VIP)],
            sharing,
        };
        Node {
            driver: Interface::new(routers, vec![binding], true),
            ops,
            wire,
            notices: Vec::new(),
            ip,
        }
    }

    fn state(&self) -> Option<State> {
        self.driver.routers().state(0)
    }

    fn take_ops(&self) -> Vec<Op> {
        std::mem::take(&mut *self.ops.borrow_mut())
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Runs both nodes until `until`: timers at their wake, every advert read
/// by the other node at the same instant (as the base interface reads it,
/// and a second time through the virtual-MAC reader when `twice`).
fn run(nodes: &mut [Node; 2], from: Duration, until: Duration, twice: bool) -> Duration {
    let mut now = from;
    loop {
        deliver(nodes, now, twice);
        let Some(next) = nodes.iter().filter_map(|n| n.driver.next_wake()).min() else {
            return now;
        };
        if next > until {
            return now;
        }
        now = next.max(now);
        for n in nodes.iter_mut() {
            if n.driver.next_wake().is_some_and(|w| w <= now) {
                let mut out = Vec::new();
                n.driver.timer(now, &mut |x| out.push(x));
                n.notices.extend(out);
            }
        }
    }
}

fn deliver(nodes: &mut [Node; 2], now: Duration, twice: bool) {
    for from in 0..2 {
        let frames: Vec<Vec<u8>> = std::mem::take(&mut *nodes[from].wire.borrow_mut());
        let src = nodes[from].ip;
        let to = &mut nodes[1 - from];
        for payload in frames {
            for via_vmac in [false, true].into_iter().take(if twice { 2 } else { 1 }) {
                let frame = Frame {
                    payload: payload.clone(),
                    from: src,
                    to: None,
                    ttl: 255,
                    via_vmac,
                };
                let mut out = Vec::new();
                to.driver.received(&frame, now, &mut |x| out.push(x));
                to.notices.extend(out);
            }
        }
    }
}

fn start(nodes: &mut [Node; 2]) {
    for n in nodes.iter_mut() {
        let mut out = Vec::new();
        n.driver.startup(Duration::ZERO, &mut |x| out.push(x));
        n.notices.extend(out);
    }
}

#[test]
fn the_higher_priority_takes_the_vip_with_a_burst_and_late_announcements() {
    let mut nodes = [Node::new(1, 200, false), Node::new(2, 100, true)];
    start(&mut nodes);
    let now = run(&mut nodes, Duration::ZERO, ms(5_000), false);
    assert_eq!(nodes[0].state(), Some(State::Master));
    assert_eq!(nodes[1].state(), Some(State::Backup));
    let ops = nodes[0].take_ops();
    let took = ops
        .iter()
        .position(|o| *o == Op::Take)
        .expect("took the VIP");
    // Take, the advert, the burst, the five late single announcements, and
    // the second burst one advert interval later, before that advert.
    assert_eq!(ops[took + 1], Op::Advert);
    let announces = ops[took + 2..]
        .iter()
        .take_while(|o| **o == Op::Announce)
        .count();
    assert_eq!(announces, 2 * ANNOUNCE_BURST + LATE_ANNOUNCES.len());
    assert!(nodes[0].notices.contains(&Notice::ListenOnVmac { id: 0 }));
    assert!(nodes[0].notices.contains(&Notice::Took { id: 0 }));
    // The backup shares (-sharing): told so when it became Backup.
    assert!(nodes[1].notices.contains(&Notice::BackupTraffic {
        id: 0,
        mode: BackupMode::Share
    }));
    assert!(now >= ms(3_000));
}

#[test]
fn a_frame_heard_on_both_readers_counts_once() {
    let mut nodes = [Node::new(1, 200, false), Node::new(2, 100, false)];
    start(&mut nodes);
    run(&mut nodes, Duration::ZERO, ms(10_000), true);
    let once = nodes[1].driver.routers().status(0).expect("status");
    let mut single = [Node::new(1, 200, false), Node::new(2, 100, false)];
    start(&mut single);
    run(&mut single, Duration::ZERO, ms(10_000), false);
    let reference = single[1].driver.routers().status(0).expect("status");
    assert!(once.adverts_received > 5);
    assert_eq!(once.adverts_received, reference.adverts_received);
}

#[test]
fn a_lost_link_gives_the_vip_up_and_its_return_rejoins_as_backup() {
    let mut nodes = [Node::new(1, 200, false), Node::new(2, 100, false)];
    start(&mut nodes);
    let now = run(&mut nodes, Duration::ZERO, ms(5_000), false);
    nodes[0].take_ops();
    let mut out = Vec::new();
    nodes[0]
        .driver
        .link(Err("no carrier".into()), now, &mut |x| out.push(x));
    assert_eq!(
        out[0],
        Notice::Link {
            up: Err("no carrier".into())
        }
    );
    assert_eq!(nodes[0].state(), Some(State::Fault));
    // The edge hears it is releasing before the link removes the VIPs.
    assert!(out.contains(&Notice::Releasing { id: 0 }));
    assert_eq!(nodes[0].take_ops().first(), Some(&Op::Release));
    // The same state again changes nothing.
    let mut again = Vec::new();
    nodes[0]
        .driver
        .link(Err("still no carrier".into()), now, &mut |x| again.push(x));
    assert!(again.is_empty());
    let mut back = Vec::new();
    nodes[0]
        .driver
        .link(Ok(()), now + ms(10), &mut |x| back.push(x));
    assert_eq!(back[0], Notice::Link { up: Ok(()) });
    assert_eq!(nodes[0].state(), Some(State::Backup));
}

#[test]
fn tracking_down_hands_over_and_shutdown_gives_up_gracefully() {
    let mut nodes = [Node::new(1, 200, false), Node::new(2, 100, false)];
    start(&mut nodes);
    let now = run(&mut nodes, Duration::ZERO, ms(5_000), false);
    let mut out = Vec::new();
    nodes[0].driver.track(
        0,
        vec![Tracked::required("dns 192.0.2.100:53", false)],
        now,
        &mut |x| out.push(x),
    );
    nodes[0].notices.extend(out);
    let now = run(&mut nodes, now, now + ms(5_000), false);
    assert_eq!(nodes[1].state(), Some(State::Master));
    assert_eq!(nodes[0].state(), Some(State::Backup));
    // Without -sharing, a backup with send-to-master forwards (IPv4).
    assert!(nodes[0].notices.contains(&Notice::BackupTraffic {
        id: 0,
        mode: BackupMode::ToMaster
    }));
    let mut out = Vec::new();
    nodes[1].driver.shutdown(now, &mut |x| out.push(x));
    assert!(out.contains(&Notice::Releasing { id: 0 }));
    assert_eq!(
        out.last(),
        Some(&Notice::BackupTraffic {
            id: 0,
            mode: BackupMode::Drop
        })
    );
}

#[test]
fn a_link_that_refuses_the_addresses_is_reported_and_opens_no_reader() {
    let mut node = Node::new(1, 200, false);
    let routers = Routers::new(
        vec![RouterConfig {
            machine: Config::configured(10, 255),
            addresses: vec![VIP],
            tracking: Tracking::None,
            checksum: ChecksumMode::PseudoHeader,
        }],
        Some(node.ip),
        None,
    )
    .expect("routers");
    let link = Recording {
        ops: Rc::clone(&node.ops),
        wire: Rc::clone(&node.wire),
        refuse_take: true,
    };
    node.driver = Interface::new(
        routers,
        vec![Binding {
            link,
            vips: vec![Vip::host(VIP)],
            sharing: false,
        }],
        false,
    );
    // 255 is the owner: master at once.
    let mut out = Vec::new();
    node.driver.startup(Duration::ZERO, &mut |x| out.push(x));
    assert_eq!(node.state(), Some(State::Master));
    assert!(out.iter().any(|n| matches!(
        n,
        Notice::Failed {
            action: "take the addresses",
            ..
        }
    )));
    assert!(!out.contains(&Notice::ListenOnVmac { id: 0 }));
}

#[test]
fn the_backup_mode_follows_the_settings_and_the_family() {
    use sextant_vrrp::packet::Family;
    assert_eq!(BackupMode::of(true, true, Family::V4), BackupMode::Share);
    assert_eq!(
        BackupMode::of(false, true, Family::V4),
        BackupMode::ToMaster
    );
    assert_eq!(BackupMode::of(false, true, Family::V6), BackupMode::Drop);
    assert_eq!(BackupMode::of(false, false, Family::V4), BackupMode::Drop);
    assert!(Config::configured(1, 255).owner);
    assert!(!Config::configured(1, 254).owner);
}
