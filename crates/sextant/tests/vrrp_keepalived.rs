//! VRRP interoperability with keepalived 2.2.7 (VRRPv3, same VRID), in the
//! namespace lab of `sextant_test_support::vrrp_lab`: node 0 (priority 200)
//! and node 1 (priority 100) share one VIP, one of them Sextant and the
//! other keepalived, with and without the virtual MAC on both sides.
//!
//! Each test elects node 0, then runs two cycles in which node 0 (the
//! higher priority) stops and comes back:
//!
//! * it stops gracefully (SIGTERM: priority 0) or hard (SIGKILL and its
//!   cable cut; the "reboot" removes the VIP it left behind and plugs the
//!   cable back in) and node 1 takes over;
//! * it comes back with preemption on (first cycle) and takes the VIP back,
//!   or with preemption off (second cycle) and leaves it on node 1.
//!
//! The virtual-MAC tests stop gracefully then hard, the others hard then
//! gracefully, so every side sees all four (stop, preemption) pairs.
//!
//! After every change: within Master_Down_Interval (3 × interval + skew)
//! plus a margin, exactly one node holds the VIP (of the nodes on the
//! link), and it keeps holding it alone for a while; the expected states
//! are reported (Sextant's `/v1/vrrp`, keepalived's log); the client's ARP
//! for the VIP gets exactly one answer, with the virtual MAC or the
//! master's own. A Sextant backup reports the keepalived master's address
//! as `master`. At the end keepalived logged no checksum error, and every
//! Sextant reported `peer_checksum` = `pseudo-header` and no `bad_checksum`
//! drop. Needs root; under CI a missing namespace or keepalived fails.

use std::net::IpAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use sextant_test_support::vrrp_lab::{
    Instance, Keepalived, Lab, Preempt, fmt_mac, have_keepalived, node_ip, vip, virtual_mac,
};
use sextant_test_support::vrrp_sextant::{SextantNode, always, eventually, node_config};

const BIN: &str = env!("CARGO_BIN_EXE_sextant");
const INTERVAL: Duration = Duration::from_millis(100);
const VRID: u8 = 1;
/// Added to Master_Down_Interval for process start, polling (`ip netns
/// exec` per node) and a loaded machine.
const MARGIN: Duration = Duration::from_secs(1);
/// How long the settled state must then hold (several advert intervals).
const HOLD: Duration = Duration::from_millis(400);
/// How long a returning node with preemption off is watched not to take
/// the VIP: well over its Master_Down_Interval.
const NO_PREEMPT_WATCH: Duration = Duration::from_millis(1200);

fn the_vip() -> IpAddr {
    IpAddr::V4(vip(1))
}

/// The priorities of nodes 0 and 1 in most tests.
const PRIORITIES: [u8; 2] = [200, 100];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Side {
    Sextant,
    Keepalived,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Stop {
    /// SIGTERM: the node resigns with priority 0 and removes its VIP.
    Graceful,
    /// SIGKILL and `link_down`: nothing sent, the VIP stays on the node.
    Hard,
}

enum Running {
    Sextant(SextantNode),
    Keepalived(Keepalived),
}

/// What a stopped implementation left for the final checks.
struct Finished {
    what: String,
    log: String,
    /// keepalived: its checksum error lines.
    checksum_errors: Vec<String>,
    /// Sextant: `/v1/vrrp` just before it stopped.
    vrrp: Option<sextant_api::Vrrp>,
}

/// Two nodes of the lab, node 0 running `high`, node 1 the other side.
struct Pair<'a> {
    lab: &'a Lab,
    high: Side,
    vmac: bool,
    /// Node 0's and node 1's base priority (node 0's is the higher).
    priorities: [u8; 2],
    nodes: [Option<Running>; 2],
    /// Whose cable is cut.
    cut: [bool; 2],
    finished: Vec<Finished>,
    /// Times a Sextant backup was seen reporting keepalived as its master.
    sextant_saw_keepalived_master: u32,
    t0: Instant,
}

impl<'a> Pair<'a> {
    fn new(lab: &'a Lab, high: Side, vmac: bool, priorities: [u8; 2]) -> Pair<'a> {
        Pair {
            lab,
            high,
            vmac,
            priorities,
            nodes: [None, None],
            cut: [false; 2],
            finished: Vec::new(),
            sextant_saw_keepalived_master: 0,
            t0: Instant::now(),
        }
    }

    fn side(&self, node: usize) -> Side {
        match (node, self.high) {
            (0, s) => s,
            (_, Side::Sextant) => Side::Keepalived,
            (_, Side::Keepalived) => Side::Sextant,
        }
    }

    fn instance(&self, node: usize, preempt: Preempt) -> Instance {
        Instance::new(VRID, self.priorities[node], INTERVAL, the_vip())
            .vmac(self.vmac)
            .preempt(preempt)
    }

    fn note(&self, what: &str) {
        eprintln!("[{:>7.3}s] {what}", self.t0.elapsed().as_secs_f64());
    }

    fn start(&mut self, node: usize, preempt: Preempt) {
        let inst = self.instance(node, preempt);
        let running = match self.side(node) {
            Side::Sextant => Running::Sextant(SextantNode::start(
                self.lab,
                Path::new(BIN),
                node,
                &node_config(&[inst], ""),
            )),
            Side::Keepalived => Running::Keepalived(Keepalived::start(self.lab, node, &[inst])),
        };
        assert!(self.nodes[node].is_none(), "node {node} already runs");
        self.nodes[node] = Some(running);
        self.note(&format!(
            "node {node} ({:?}, priority {}, preempt {preempt:?}) started",
            self.side(node),
            self.priorities[node]
        ));
    }

    fn stop(&mut self, node: usize, how: Stop) {
        let running = self.nodes[node].take().expect("node runs");
        let finished = match running {
            Running::Sextant(mut s) => {
                let vrrp = s.vrrp(self.lab).ok();
                match how {
                    Stop::Graceful => s.stop_graceful(),
                    Stop::Hard => s.kill(),
                }
                Finished {
                    what: format!("node {node} sextant"),
                    log: s.log(),
                    checksum_errors: Vec::new(),
                    vrrp,
                }
            }
            Running::Keepalived(mut k) => {
                match how {
                    Stop::Graceful => {
                        k.stop();
                    }
                    Stop::Hard => {
                        k.kill();
                    }
                }
                Finished {
                    what: format!("node {node} keepalived"),
                    log: k.log(),
                    checksum_errors: k.checksum_errors(),
                    vrrp: None,
                }
            }
        };
        self.finished.push(finished);
        if how == Stop::Hard {
            self.lab.link_down(node);
            self.cut[node] = true;
        }
        self.note(&format!("node {node} stopped ({how:?})"));
    }

    /// After a hard stop: what a reboot does (the VIP the killed process
    /// left is gone) and the cable back in.
    fn reboot(&mut self, node: usize) {
        self.lab.remove_addr(node, the_vip());
        self.lab.link_up(node);
        self.cut[node] = false;
        self.note(&format!("node {node} rebooted, cable back in"));
    }

    /// `MASTER`, `BACKUP`, ... as the node reports it: Sextant's
    /// `/v1/vrrp`, keepalived's last "Entering ... STATE" log line.
    fn state(&self, node: usize) -> Option<String> {
        match self.nodes[node].as_ref()? {
            Running::Sextant(s) => s.state(self.lab, VRID),
            Running::Keepalived(k) => keepalived_state(&k.log()),
        }
    }

    /// The nodes with the VIP on an interface, among those on the link.
    fn owners(&self) -> Vec<usize> {
        self.lab
            .owners(the_vip())
            .into_iter()
            .filter(|&i| !self.cut[i])
            .collect()
    }

    fn mdi(&self, node: usize) -> Duration {
        self.instance(node, Preempt::On).master_down_interval()
    }

    /// The settled state with `master` as master: its state MASTER, the
    /// other node (if running) BACKUP, the VIP on `master` alone.
    fn settled(&self, master: usize) -> Result<(), String> {
        let other = 1 - master;
        let owners = self.owners();
        let ms = self.state(master);
        let os = self.state(other);
        let other_ok = self.nodes[other].is_none() || os.as_deref() == Some("BACKUP");
        if owners == [master] && ms.as_deref() == Some("MASTER") && other_ok {
            Ok(())
        } else {
            Err(format!(
                "owners {owners:?}, node {master} {ms:?}, node {other} {os:?}"
            ))
        }
    }

    /// Waits (up to `from_node`'s Master_Down_Interval + [`MARGIN`]) until
    /// `master` alone holds the VIP, checks that this holds for [`HOLD`],
    /// that the client's ARP gets one answer with the right MAC, and that
    /// a Sextant backup names the master.
    fn expect_master(&mut self, master: usize, what: &str) {
        let bound = self.mdi(master) + MARGIN;
        let took = eventually(bound, what, || self.settled(master), || self.logs());
        self.note(&format!("{what}: node {master} master after {took:?}"));
        always(HOLD, what, || self.settled(master), || self.logs());
        self.check_arp(master, what);
        self.check_backup_sees(master, what);
    }

    /// `master` holds the VIP and keeps it for [`NO_PREEMPT_WATCH`] while
    /// `returning` (preemption off, higher priority) stays backup.
    fn expect_no_preemption(&mut self, master: usize, what: &str) {
        let returning = 1 - master;
        // It first has to hear the master and settle as backup.
        let bound = self.mdi(returning) + MARGIN;
        let took = eventually(bound, what, || self.settled(master), || self.logs());
        self.note(&format!(
            "{what}: node {returning} backup after {took:?}, watching {NO_PREEMPT_WATCH:?}"
        ));
        always(
            NO_PREEMPT_WATCH,
            what,
            || self.settled(master),
            || self.logs(),
        );
        self.check_arp(master, what);
        self.check_backup_sees(master, what);
    }

    fn check_arp(&self, master: usize, what: &str) {
        let want = if self.vmac {
            virtual_mac(VRID)
        } else {
            self.lab.mac_of(master)
        };
        let arp = self.lab.client_arp(vip(1), Duration::from_millis(300));
        assert_eq!(
            arp,
            vec![want],
            "{what}: the client's ARP for the VIP gets one answer, {} (node {master}); got {:?}\n{}",
            fmt_mac(want),
            arp.iter().map(|m| fmt_mac(*m)).collect::<Vec<_>>(),
            self.logs()
        );
    }

    /// A running Sextant backup reports `master`'s address as master.
    fn check_backup_sees(&mut self, master: usize, what: &str) {
        let backup = 1 - master;
        let Some(Running::Sextant(s)) = self.nodes[backup].as_ref() else {
            return;
        };
        let want = node_ip(master).to_string();
        let lab = self.lab;
        eventually(
            Duration::from_secs(1),
            &format!("{what}: sextant backup (node {backup}) names node {master} as master"),
            || match s.vrid(lab, VRID) {
                Some(v) if v.state == "BACKUP" && v.master.as_deref() == Some(&want) => Ok(()),
                other => Err(format!("{other:?}")),
            },
            || self.logs(),
        );
        if self.side(master) == Side::Keepalived {
            self.sextant_saw_keepalived_master += 1;
        }
    }

    fn logs(&self) -> String {
        let mut out = String::new();
        for f in &self.finished {
            out += &format!("--- {} (stopped) ---\n{}\n", f.what, f.log);
        }
        for (i, n) in self.nodes.iter().enumerate() {
            match n {
                Some(Running::Sextant(s)) => {
                    out += &format!(
                        "--- node {i} sextant ---\n{}\n/v1/vrrp: {:?}\n",
                        s.log(),
                        s.vrrp(self.lab)
                    );
                }
                Some(Running::Keepalived(k)) => {
                    out += &format!("--- node {i} keepalived ---\n{}\n", k.log());
                }
                None => {}
            }
        }
        for i in 0..2 {
            let link = self.lab.node(i).exec(&["ip", "-s", "-d", "link", "show"]);
            let addr = self.lab.node(i).exec(&["ip", "-br", "addr", "show"]);
            out += &format!(
                "--- node {i}: ip -s -d link / ip -br addr ---\n{}{}",
                String::from_utf8_lossy(&link.stdout),
                String::from_utf8_lossy(&addr.stdout)
            );
        }
        out
    }

    /// keepalived logged no checksum error; every Sextant heard its peer
    /// with the pseudo-header checksum and dropped nothing as
    /// `bad_checksum`; a Sextant backup saw keepalived as master.
    fn final_checks(&self) {
        let mut errors = Vec::new();
        let mut vrrps = Vec::new();
        for f in &self.finished {
            errors.extend(f.checksum_errors.iter().cloned());
            if let Some(v) = &f.vrrp {
                vrrps.push((f.what.clone(), v.clone()));
            }
        }
        for (i, n) in self.nodes.iter().enumerate() {
            match n {
                Some(Running::Keepalived(k)) => errors.extend(k.checksum_errors()),
                Some(Running::Sextant(s)) => {
                    let v = s.vrrp(self.lab).expect("running sextant's /v1/vrrp");
                    vrrps.push((format!("node {i} sextant"), v));
                }
                None => {}
            }
        }
        assert!(
            errors.is_empty(),
            "keepalived logged checksum errors: {errors:#?}\n{}",
            self.logs()
        );
        assert!(!vrrps.is_empty(), "no Sextant /v1/vrrp to check");
        let mut heard = 0;
        for (what, v) in &vrrps {
            let r = v
                .vrids
                .iter()
                .find(|r| r.vrid == VRID && r.family == "ipv4")
                .unwrap_or_else(|| panic!("{what}: VRID {VRID} in {v:?}"));
            // A Sextant that was master all its life heard no advert (a
            // keepalived backup is silent): no peer_checksum to check.
            if r.adverts_received > 0 {
                heard += 1;
                assert_eq!(
                    r.peer_checksum.as_deref(),
                    Some("pseudo-header"),
                    "{what}: keepalived checksums with the IPv4 pseudo-header: {v:?}"
                );
            }
            let bad: u64 = v
                .dropped
                .iter()
                .filter(|d| d.reason == "bad_checksum")
                .map(|d| d.count)
                .sum();
            assert_eq!(bad, 0, "{what}: bad_checksum drops: {v:?}");
            eprintln!(
                "{what}: peer_checksum {:?}, adverts_received {}, dropped {:?}, transitions {}",
                r.peer_checksum,
                r.adverts_received,
                v.dropped
                    .iter()
                    .map(|d| (d.reason.as_str(), d.count))
                    .collect::<Vec<_>>(),
                r.transitions.len()
            );
        }
        assert!(heard > 0, "no Sextant heard keepalived: {vrrps:?}");
        // A Sextant at 255 (the address owner) is never backup while it runs.
        let sextant_can_be_backup = !(self.high == Side::Sextant && self.priorities[0] == 255);
        assert!(
            self.sextant_saw_keepalived_master > 0 || !sextant_can_be_backup,
            "never saw a Sextant backup reporting keepalived as master"
        );
    }
}

/// keepalived's state from its log: the last `(VI_n) Entering X STATE`.
fn keepalived_state(log: &str) -> Option<String> {
    log.lines().rev().find_map(|l| {
        let rest = &l[l.find("Entering ")? + "Entering ".len()..];
        let state = rest.split_whitespace().next()?;
        rest.contains("STATE").then(|| state.to_string())
    })
}

/// Elects node 0, then runs `cycles`: node 0 stops (graceful or hard),
/// node 1 takes over, node 0 comes back with that preemption (on: it takes
/// the VIP back; off: node 1 keeps it, so an `Off` cycle is the last).
fn interop(tag: &str, high: Side, vmac: bool, cycles: &[(Stop, Preempt)]) {
    interop_at(tag, high, vmac, PRIORITIES, cycles);
}

/// [`interop`] with other priorities.
fn interop_at(tag: &str, high: Side, vmac: bool, priorities: [u8; 2], cycles: &[(Stop, Preempt)]) {
    assert!(
        cycles[..cycles.len() - 1]
            .iter()
            .all(|(_, p)| *p == Preempt::On),
        "only the last cycle may leave node 1 master"
    );
    let Some(lab) = Lab::new(tag, 2) else {
        return;
    };
    if !have_keepalived() {
        return;
    }
    let t = Instant::now();
    let mut p = Pair::new(&lab, high, vmac, priorities);
    p.note(&format!(
        "node 0 {:?} ({}), node 1 {:?} ({}), virtual MAC {vmac}",
        p.side(0),
        priorities[0],
        p.side(1),
        priorities[1]
    ));

    // Election: node 0 first, alone; then node 1 joins as backup.
    p.start(0, Preempt::On);
    p.expect_master(0, "node 0 alone");
    p.start(1, Preempt::On);
    p.expect_master(0, "node 1 joins");

    for (k, &(stop, preempt)) in cycles.iter().enumerate() {
        let c = k + 1;
        p.stop(0, stop);
        p.expect_master(1, &format!("cycle {c}: node 0 stopped ({stop:?})"));
        if stop == Stop::Hard {
            p.reboot(0);
            p.expect_master(1, &format!("cycle {c}: node 0 rebooted (not running)"));
        }
        p.start(0, preempt);
        match preempt {
            Preempt::Off => {
                p.expect_no_preemption(1, &format!("cycle {c}: node 0 back, preemption off"));
            }
            _ => p.expect_master(0, &format!("cycle {c}: node 0 back, preemption on")),
        }
    }

    p.final_checks();
    p.note(&format!("done in {:?}", t.elapsed()));
}

use Preempt::{Off, On};
use Stop::{Graceful, Hard};

#[test]
fn sextant_master_keepalived_backup_vmac() {
    interop("kas1", Side::Sextant, true, &[(Graceful, On), (Hard, Off)]);
}

#[test]
fn sextant_master_keepalived_backup_own_mac() {
    interop("kas2", Side::Sextant, false, &[(Hard, On), (Graceful, Off)]);
}

/// Fails (a Sextant bug, see the report): once Sextant is master with the
/// virtual MAC, it never hears keepalived's adverts, which come from the
/// same virtual MAC; the macvlan takes them and Sextant's socket on eth0
/// never sees them. Both stay MASTER.
#[test]
fn keepalived_master_sextant_backup_vmac() {
    interop(
        "kak1",
        Side::Keepalived,
        true,
        &[(Graceful, On), (Hard, Off)],
    );
}

/// The cycle the test above cannot reach, on its own.
#[test]
fn keepalived_master_sextant_backup_vmac_no_preemption() {
    interop("kak3", Side::Keepalived, true, &[(Hard, Off)]);
}

#[test]
fn keepalived_master_sextant_backup_own_mac() {
    interop(
        "kak2",
        Side::Keepalived,
        false,
        &[(Hard, On), (Graceful, Off)],
    );
}

/// Priority 255, the appliance's default and the highest (seed 004: 1–255),
/// against keepalived at 254: Sextant at 255 runs as RFC 5798's address
/// owner, is master, and takes the VIP back the moment it returns.
/// (Rewriting 255 as 254 would tie with keepalived, and the higher address
/// would win instead.)
#[test]
fn sextant_at_255_is_master_over_keepalived_at_254() {
    interop_at(
        "ka255s",
        Side::Sextant,
        false,
        [255, 254],
        &[(Graceful, On), (Hard, On)],
    );
}

/// And the other way round: keepalived at 255 (its address owner), Sextant
/// at 254 backs it up.
#[test]
fn keepalived_at_255_is_master_over_sextant_at_254() {
    interop_at(
        "ka255k",
        Side::Keepalived,
        false,
        [255, 254],
        &[(Graceful, On), (Hard, On)],
    );
}

#[test]
fn keepalived_state_from_its_log() {
    let log = "Mon ... (VI_1) Entering BACKUP STATE (init)\n\
               Mon ... (VI_1) received lower priority (100) advert from 10.77.0.11 - discarding\n\
               Mon ... (VI_1) Entering MASTER STATE\n\
               Mon ... (VI_1) sent 0 priority\n";
    assert_eq!(keepalived_state(log).as_deref(), Some("MASTER"));
    assert_eq!(keepalived_state("nothing"), None);
}

/// Not keepalived, a control for `keepalived_master_sextant_backup_vmac`:
/// the same failure between two Sextant nodes with the virtual MAC (the
/// default). Node 0's cable is cut, node 1 takes over, the cable comes
/// back: both are MASTER with their macvlan up, each one's adverts leave
/// from 00:00:5e:00:01:01, and the other's macvlan (mode private) takes
/// them before its advert socket on eth0 sees them. Fails while that
/// holds: both keep the VIP. The same without the virtual MAC passes.
#[test]
fn two_sextants_vmac_reunite_after_a_cut_link() {
    reunite("kass", true);
}

#[test]
fn two_sextants_own_mac_reunite_after_a_cut_link() {
    reunite("kasm", false);
}

fn reunite(tag: &str, vmac: bool) {
    let Some(lab) = Lab::new(tag, 2) else {
        return;
    };
    let bin = Path::new(BIN);
    let inst = |prio| Instance::new(VRID, prio, INTERVAL, the_vip()).vmac(vmac);
    let n0 = SextantNode::start(&lab, bin, 0, &node_config(&[inst(200)], ""));
    let logs = || {
        let mut out = format!("--- node 0 ---\n{}\n{:?}\n", n0.log(), n0.vrrp(&lab));
        for i in 0..2 {
            let link = lab.node(i).exec(&["ip", "-s", "-d", "link", "show"]);
            out += &format!(
                "--- node {i}: ip -s -d link ---\n{}",
                String::from_utf8_lossy(&link.stdout)
            );
        }
        out
    };
    let mdi = inst(100).master_down_interval();
    eventually(
        mdi + MARGIN,
        "node 0 master alone",
        || match (
            lab.owners(the_vip()).as_slice(),
            n0.state(&lab, VRID).as_deref(),
        ) {
            ([0], Some("MASTER")) => Ok(()),
            other => Err(format!("{other:?}")),
        },
        logs,
    );
    let n1 = SextantNode::start(&lab, bin, 1, &node_config(&[inst(100)], ""));
    let logs = || {
        format!(
            "{}--- node 1 ---\n{}\n{:?}\n",
            logs(),
            n1.log(),
            n1.vrrp(&lab)
        )
    };
    let state = || {
        (
            lab.owners(the_vip()),
            n0.state(&lab, VRID),
            n1.state(&lab, VRID),
        )
    };
    let node0_master = || match state() {
        (o, Some(a), Some(b)) if o == [0] && a == "MASTER" && b == "BACKUP" => Ok(()),
        other => Err(format!("{other:?}")),
    };
    eventually(mdi + MARGIN, "node 1 joins as backup", node0_master, logs);
    lab.link_down(0);
    eventually(
        mdi + MARGIN,
        "node 1 takes over from the cut-off node 0",
        || match n1.state(&lab, VRID).as_deref() {
            Some("MASTER") => Ok(()),
            other => Err(format!("{other:?}")),
        },
        logs,
    );
    lab.link_up(0);
    // Two masters hear each other: node 1 (lower) steps down at once.
    let took = eventually(
        mdi + MARGIN,
        "one master after the cable is back",
        node0_master,
        logs,
    );
    eprintln!("one master {took:?} after the cable came back");
    always(
        HOLD,
        "one master after the cable is back",
        node0_master,
        logs,
    );
}
