//! The VRRP lab with keepalived alone, so that the harness is known to be
//! right before Sextant's VRRP runs in it: exactly one owner of the VIP,
//! the client's ARP entry points at it, and a graceful stop moves the VIP
//! fast (priority 0), as the pinger sees it.
//!
//! Needs root and keepalived (scripts/setup.sh); without them the tests
//! print SKIPPED, and fail under CI=true.

use std::net::IpAddr;
use std::time::Duration;

use sextant_test_support::vrrp_lab::*;
use sextant_test_support::wait::{eventually_ok, wait_until};

const VRID: u8 = 51;
/// Short enough for a quick test, long enough for a loaded 2-core machine.
const ADVERT: Duration = Duration::from_millis(300);

fn vip0() -> IpAddr {
    IpAddr::V4(vip(0))
}

#[test]
fn the_lab_connects_every_host_and_a_cut_link_isolates_a_node() {
    let Some(lab) = Lab::new("basic", 2) else {
        return;
    };
    for i in 0..lab.len() {
        assert!(
            lab.ping_once(node_ip(i), Duration::from_secs(2)).is_some(),
            "the client reaches node {i}"
        );
        assert_eq!(
            lab.client_neigh(IpAddr::V4(node_ip(i))),
            Some(lab.mac_of(i)),
            "the client's ARP entry for node {i} is its eth0"
        );
    }
    assert_ne!(lab.mac_of(0), lab.mac_of(1));
    assert_eq!(lab.owners(IpAddr::V4(node_ip(1))), vec![1]);
    let arp_accept = lab
        .client()
        .exec_ok(&["sysctl", "-n", "net.ipv4.conf.all.arp_accept"]);
    assert_eq!(String::from_utf8_lossy(&arp_accept.stdout).trim(), "0");

    lab.link_down(0);
    assert!(
        lab.ping_once(node_ip(0), Duration::from_millis(300))
            .is_none(),
        "node 0 is cut off"
    );
    assert!(lab.ping_once(node_ip(1), Duration::from_secs(2)).is_some());
    lab.link_up(0);
    assert!(
        wait_until(Duration::from_secs(5), || lab
            .ping_once(node_ip(0), Duration::from_millis(200))
            .is_some()),
        "node 0 is back"
    );

    // A spawned process runs in the node's namespace and is ended on drop.
    let mut child = lab.node(1).spawn(&["sleep", "30"]);
    assert!(child.is_running());
    child.terminate(Duration::from_secs(2));
    assert!(!child.is_running());
}

/// Only node `owner` answers ARP for the VIP, with `mac`; the client's
/// neighbour entry is `mac` too, except that with keepalived's virtual MAC
/// it may be the owner's own MAC: the owner's ARP requests for the client
/// (to send it the echo reply, out of `eth0`) carry the VIP as sender
/// address and `eth0`'s MAC, and the client takes that as an update.
fn expect_client_sees(lab: &Lab, owner: usize, mac: [u8; 6], vmac: bool) {
    eventually_ok(
        Duration::from_secs(5),
        &format!("only node {owner} answers ARP, with {}", fmt_mac(mac)),
        || match lab
            .client_arp(vip(0), Duration::from_millis(200))
            .as_slice()
        {
            [m] if *m == mac => Ok(()),
            other => Err(format!(
                "ARP answers {:?}",
                other.iter().copied().map(fmt_mac).collect::<Vec<_>>()
            )),
        },
    );
    let neigh = lab.client_neigh(vip0());
    eprintln!(
        "client's neighbour entry for the VIP: {:?} (node {owner}: eth0 {}, virtual {})",
        neigh.map(fmt_mac),
        fmt_mac(lab.mac_of(owner)),
        fmt_mac(virtual_mac(VRID))
    );
    if vmac {
        assert!(
            neigh == Some(mac) || neigh == Some(lab.mac_of(owner)),
            "client's entry {:?}",
            neigh.map(fmt_mac)
        );
    } else {
        eventually_ok(
            Duration::from_secs(5),
            &format!("the client's ARP entry is node {owner}'s"),
            || match lab.client_neigh(vip0()) {
                Some(m) if m == mac => Ok(()),
                other => Err(format!("client has {:?}", other.map(fmt_mac))),
            },
        );
    }
}

/// Two keepalived nodes, priorities 200 and 100: the 200 owns the VIP and
/// the client's ARP entry points at the owner's MAC (`vmac`: the virtual
/// MAC); SIGTERM to the master moves the VIP to the backup within about a
/// skew time (priority 0), and the client's gap is printed.
fn two_nodes_graceful_failover(tag: &str, vmac: bool) {
    let Some(lab) = Lab::new(tag, 2) else {
        return;
    };
    if !have_keepalived() {
        return;
    }
    let inst = |prio| Instance::new(VRID, prio, ADVERT, vip0()).vmac(vmac);
    let mut master = Keepalived::start(&lab, 0, &[inst(200)]);
    let backup = Keepalived::start(&lab, 1, &[inst(100)]);
    let logs = |m: &Keepalived, b: &Keepalived| {
        format!("--- node 0 ---\n{}--- node 1 ---\n{}", m.log(), b.log())
    };

    let want_mac = |i: usize| {
        if vmac {
            virtual_mac(VRID)
        } else {
            lab.mac_of(i)
        }
    };
    eventually_ok(
        Duration::from_secs(10),
        "node 0 alone owns the VIP",
        || match lab.owners(vip0()).as_slice() {
            [0] => Ok(()),
            other => Err(format!("owners {other:?}\n{}", logs(&master, &backup))),
        },
    );
    expect_client_sees(&lab, 0, want_mac(0), vmac);
    // Still exactly one after a few adverts (no dual master).
    std::thread::sleep(ADVERT * 3);
    assert_eq!(lab.owners(vip0()), vec![0], "{}", logs(&master, &backup));

    let pinger = Pinger::start(
        &lab,
        vip(0),
        Duration::from_millis(5),
        Duration::from_secs(8),
    );
    std::thread::sleep(Duration::from_millis(300));
    master.stop();
    eventually_ok(
        Duration::from_secs(5),
        "node 1 alone owns the VIP",
        || match lab.owners(vip0()).as_slice() {
            [1] => Ok(()),
            other => Err(format!("owners {other:?}")),
        },
    );
    std::thread::sleep(Duration::from_millis(500));
    let report = pinger.stop();
    let backup_inst = inst(100);
    eprintln!(
        "graceful failover (advert {ADVERT:?}, vmac {vmac}): longest gap {:?} at {:?}, \
         {} sent, {} lost; skew {:?}, Master_Down_Interval {:?}",
        report.longest_gap,
        report.longest_gap_at,
        report.sent,
        report.lost(),
        backup_inst.skew(),
        backup_inst.master_down_interval()
    );
    assert!(report.received > 0, "the pinger got replies");
    // With priority 0 the backup takes over after its skew time, not after
    // Master_Down_Interval: a gap that long means the resignation was lost.
    assert!(
        report.longest_gap < backup_inst.master_down_interval(),
        "gap {:?} is not shorter than Master_Down_Interval {:?}\n{}",
        report.longest_gap,
        backup_inst.master_down_interval(),
        logs(&master, &backup)
    );
    expect_client_sees(&lab, 1, want_mac(1), vmac);
    assert!(
        master.log().contains("priority 0") || backup.log().contains("priority 0"),
        "a priority 0 advert was logged\n{}",
        logs(&master, &backup)
    );
    for k in [&master, &backup] {
        assert_eq!(k.checksum_errors(), Vec::<String>::new(), "node {}", k.node);
    }
}

#[test]
fn keepalived_two_nodes_one_master_and_graceful_failover() {
    two_nodes_graceful_failover("ka", false);
}

#[test]
fn keepalived_two_nodes_with_the_virtual_mac() {
    two_nodes_graceful_failover("kavmac", true);
}
