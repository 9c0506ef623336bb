//! VRRP (seed 004) end to end: `sextant serve` nodes in network namespaces
//! on one bridge (the lab of `sextant_test_support::vrrp_lab`), a client
//! namespace that asks who answers, by ARP and by DNS over the VIP, and
//! keepalived as a peer. Needs root; under CI a missing namespace fails.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::{Duration, Instant};

use sextant_test_support::dns::{Dns, RecordType, a_records, build_query};
use sextant_test_support::vrrp_lab::{CLIENT_IP, Instance, Lab, vip, virtual_mac};
use sextant_test_support::vrrp_sextant::{SextantNode, WWW, WWW_ANSWER, node_config};

const BIN: &str = env!("CARGO_BIN_EXE_sextant");
const INTERVAL: Duration = Duration::from_millis(100);

fn bin() -> &'static Path {
    Path::new(BIN)
}

fn v(k: u8) -> IpAddr {
    IpAddr::V4(vip(k))
}

/// Waits until `check` holds, or panics with the last reason and the logs.
fn eventually(
    within: Duration,
    what: &str,
    mut check: impl FnMut() -> Result<(), String>,
    logs: impl Fn() -> String,
) {
    let start = Instant::now();
    let mut last;
    loop {
        match check() {
            Ok(()) => return,
            Err(e) => last = e,
        }
        if start.elapsed() > within {
            panic!("{what}: still not after {within:?}: {last}\n{}", logs());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The client asks for www over DNS to `vip`, from inside its namespace.
fn dns_answer(lab: &Lab, vip: IpAddr) -> Result<Vec<Ipv4Addr>, String> {
    lab.client().run(|| {
        let dns = Dns::new(SocketAddr::new(vip, 53));
        dns.try_udp_from(Some(CLIENT_IP), &build_query(WWW, RecordType::A, None))
            .map(|m| a_records(&m))
    })
}

fn logs(nodes: &[&SextantNode]) -> String {
    nodes
        .iter()
        .map(|n| format!("--- node {} ---\n{}", n.node, n.log()))
        .collect()
}

/// Two nodes, one VIP: the higher priority becomes master and alone holds
/// the VIP; the client's ARP gets one answer, the virtual MAC; DNS over the
/// VIP answers. SIGTERM on the master hands the VIP over at once (priority
/// 0): the backup takes it within Skew_Time, not Master_Down_Interval.
#[test]
fn two_nodes_elect_one_master_and_hand_over_on_shutdown() {
    let Some(lab) = Lab::new("vr2", 2) else {
        return;
    };
    let a = Instance::new(1, 200, INTERVAL, v(1)).vmac(true);
    let b = Instance::new(1, 100, INTERVAL, v(1)).vmac(true);
    let mut n0 = SextantNode::start(&lab, bin(), 0, &node_config(&[a], ""));
    let n1 = SextantNode::start(&lab, bin(), 1, &node_config(&[b], ""));
    let logs = || logs(&[&n0, &n1]);
    eventually(
        Duration::from_secs(5),
        "node 0 master",
        || match (
            lab.owners(v(1)).as_slice(),
            n0.state(&lab, 1).as_deref(),
            n1.state(&lab, 1).as_deref(),
        ) {
            ([0], Some("MASTER"), Some("BACKUP")) => Ok(()),
            other => Err(format!("{other:?}")),
        },
        logs,
    );
    let arp = lab.client_arp(vip(1), Duration::from_millis(300));
    assert_eq!(arp, vec![virtual_mac(1)], "one ARP answer, the virtual MAC");
    assert_eq!(
        dns_answer(&lab, v(1)),
        Ok(vec![WWW_ANSWER.parse().unwrap()]),
        "{}",
        logs()
    );

    n0.stop_graceful();
    let t0 = Instant::now();
    eventually(
        Duration::from_secs(3),
        "node 1 takes over",
        || match (lab.owners(v(1)).as_slice(), n1.state(&lab, 1).as_deref()) {
            ([1], Some("MASTER")) => Ok(()),
            other => Err(format!("{other:?}")),
        },
        || n1.log(),
    );
    eprintln!("graceful handover seen after {:?}", t0.elapsed());
    assert_eq!(
        dns_answer(&lab, v(1)),
        Ok(vec![WWW_ANSWER.parse().unwrap()])
    );
}

/// Who should be master of VIP `k` (1-based) for each node set.
fn owners_now(lab: &Lab, vips: &[u8]) -> Vec<Vec<usize>> {
    vips.iter().map(|&k| lab.owners(v(k))).collect()
}

/// Waits until every VIP `k` in `expect` is held by exactly the node given,
/// its node says MASTER, the client's ARP gets one answer (the VRID's
/// virtual MAC) and DNS over the VIP answers.
fn expect_masters(lab: &Lab, nodes: &[&SextantNode], expect: &[(u8, usize)], within: Duration) {
    let logs = || logs(nodes);
    eventually(
        within,
        "masters",
        || {
            for &(k, owner) in expect {
                // A killed node keeps its VIPs on its (cut) interface.
                let held: Vec<usize> = lab
                    .owners(v(k))
                    .into_iter()
                    .filter(|i| nodes.iter().any(|n| n.node == *i))
                    .collect();
                if held != [owner] {
                    return Err(format!("VIP{k} held by {held:?}, want [{owner}]"));
                }
                let node = nodes
                    .iter()
                    .find(|n| n.node == owner)
                    .ok_or("no such node")?;
                let state = node.state(lab, k);
                if state.as_deref() != Some("MASTER") {
                    return Err(format!("VIP{k}: node {owner} says {state:?}"));
                }
            }
            Ok(())
        },
        logs,
    );
    for &(k, _) in expect {
        let arp = lab.client_arp(vip(k), Duration::from_millis(200));
        assert_eq!(
            arp,
            vec![virtual_mac(k)],
            "VIP{k}: one ARP answer\n{}",
            logs()
        );
        assert_eq!(
            dns_answer(lab, v(k)),
            Ok(vec![WWW_ANSWER.parse().unwrap()]),
            "DNS over VIP{k}\n{}",
            logs()
        );
    }
}

/// The seed's figure: three nodes and four VIPs, VIP1 and VIP2 on NS1,
/// VIP3 on NS2, VIP4 on NS3, by their priorities. When NS1 dies (killed,
/// its link cut), VIP1 moves to NS3 and VIP2 to NS2, following the
/// priorities; VIP3 and VIP4 stay. When NS1 comes back, it preempts.
#[test]
fn the_seed_figure_no_node_idles_and_ns1_failing_moves_its_vips_by_priority() {
    let Some(lab) = Lab::new("seed", 3) else {
        return;
    };
    // Base priorities per node for VRIDs 1..=4 (VIP k has VRID k).
    let prio: [[u8; 4]; 3] = [
        [200, 200, 100, 100], // NS1
        [100, 150, 200, 150], // NS2
        [150, 100, 150, 200], // NS3
    ];
    let config = |node: usize| {
        let instances: Vec<Instance> = (1..=4u8)
            .map(|k| Instance::new(k, prio[node][k as usize - 1], INTERVAL, v(k)).vmac(true))
            .collect();
        node_config(&instances, "")
    };
    let mut ns1 = SextantNode::start(&lab, bin(), 0, &config(0));
    let ns2 = SextantNode::start(&lab, bin(), 1, &config(1));
    let ns3 = SextantNode::start(&lab, bin(), 2, &config(2));
    expect_masters(
        &lab,
        &[&ns1, &ns2, &ns3],
        &[(1, 0), (2, 0), (3, 1), (4, 2)],
        Duration::from_secs(5),
    );

    // NS1 dies: no priority 0, its link goes with it.
    lab.link_down(0);
    ns1.kill();
    let t0 = Instant::now();
    expect_masters(
        &lab,
        &[&ns2, &ns3],
        &[(1, 2), (2, 1), (3, 1), (4, 2)],
        Duration::from_secs(3),
    );
    eprintln!(
        "NS1 failure: VIPs moved and checked (ARP, DNS) within {:?}",
        t0.elapsed()
    );
    // Its VIPs stayed on its (dead) interfaces; a real reboot clears them.
    for k in [1, 2] {
        lab.remove_addr(0, v(k));
    }
    lab.link_up(0);
    let ns1 = SextantNode::start(&lab, bin(), 0, &config(0));
    expect_masters(
        &lab,
        &[&ns1, &ns2, &ns3],
        &[(1, 0), (2, 0), (3, 1), (4, 2)],
        Duration::from_secs(5),
    );
    assert_eq!(
        owners_now(&lab, &[1, 2, 3, 4]),
        vec![vec![0], vec![0], vec![1], vec![2]]
    );
}

/// The effective priority node `n` reports for VRID `k`.
fn effective(lab: &Lab, n: &SextantNode, k: u8) -> Option<u8> {
    let v = n.vrrp(lab).ok()?;
    v.vrids
        .iter()
        .find(|r| r.vrid == k)
        .map(|r| r.effective_priority)
}

/// Cuts (or heals) node `i`'s monitor probes to `port` on the client with
/// an iptables rule in the node's own namespace: only that node sees the
/// service DOWN, as when one node's path to a backend breaks.
fn block_probe(lab: &Lab, i: usize, port: u16, cut: bool) {
    let port = port.to_string();
    let client = CLIENT_IP.to_string();
    let op = if cut { "-A" } else { "-D" };
    lab.node(i).exec_ok(&[
        "iptables",
        op,
        "OUTPUT",
        "-p",
        "tcp",
        "-d",
        &client,
        "--dport",
        &port,
        "-j",
        "REJECT",
        "--reject-with",
        "tcp-reset",
    ]);
}

/// Health tracking (seed 004) in each mode, on one node: NS1 (BP 200)
/// tracks two vservers on each of four VIPs, one VIP per mode; NS2 (BP
/// 150) tracks nothing. With one of the two vservers DOWN on NS1 only:
/// NONE keeps 200, ALL gives 0, ONE keeps 200, PROGRESSIVE gives
/// 200 × (1 − 1/2) = 100, so NS2 takes VIP2 (ALL) and VIP4 (PROGRESSIVE).
/// With both DOWN, ONE gives 0 too. When they come back NS1 preempts.
#[test]
fn health_tracking_in_each_mode_moves_exactly_the_vips_it_should() {
    let Some(lab) = Lab::new("trk", 2) else {
        return;
    };
    let (svc_a, svc_b) = lab.client().run(|| {
        (
            sextant_test_support::backend::Backend::tcp(CLIENT_IP),
            sextant_test_support::backend::Backend::tcp(CLIENT_IP),
        )
    });
    let modes = ["NONE", "ALL", "ONE", "PROGRESSIVE"];
    let gslb = format!(
        "add lb monitor m_tcp TCP -interval 200 MSEC -resptimeout 100 MSEC -retries 1\n\
         add gslb service svc_a {CLIENT_IP} TCP {} -siteName dc1\n\
         add gslb service svc_b {CLIENT_IP} TCP {} -siteName dc1\n\
         bind gslb service svc_a -monitorName m_tcp\n\
         bind gslb service svc_b -monitorName m_tcp\n\
         add gslb vserver vs_a TCP\n\
         add gslb vserver vs_b TCP\n\
         bind gslb vserver vs_a -serviceName svc_a\n\
         bind gslb vserver vs_b -serviceName svc_b\n",
        svc_a.port(),
        svc_b.port()
    );
    let config = |node: usize| {
        let bp = if node == 0 { 200 } else { 150 };
        let instances: Vec<Instance> = (1..=4u8)
            .map(|k| Instance::new(k, bp, INTERVAL, v(k)).vmac(true))
            .collect();
        let mut extra = gslb.clone();
        if node == 0 {
            for (k, mode) in (1..=4u8).zip(modes) {
                extra.push_str(&format!(
                    "set vrid {k} -tracking {mode}\nbind vrid {k} -trackVserver vs_a vs_b\n"
                ));
            }
        }
        node_config(&instances, &extra)
    };
    let ns1 = SextantNode::start(&lab, bin(), 0, &config(0));
    let ns2 = SextantNode::start(&lab, bin(), 1, &config(1));
    let all_on_ns1 = [(1, 0), (2, 0), (3, 0), (4, 0)];
    expect_masters(&lab, &[&ns1, &ns2], &all_on_ns1, Duration::from_secs(5));
    let eps = |want: [u8; 4]| {
        eventually(
            Duration::from_secs(3),
            "effective priorities",
            || {
                let got: Vec<Option<u8>> = (1..=4).map(|k| effective(&lab, &ns1, k)).collect();
                if got == want.map(Some) {
                    Ok(())
                } else {
                    Err(format!("NS1 EPs {got:?}, want {want:?}"))
                }
            },
            || logs(&[&ns1, &ns2]),
        )
    };
    eps([200, 200, 200, 200]);

    block_probe(&lab, 0, svc_a.port(), true);
    eps([200, 0, 200, 100]);
    expect_masters(
        &lab,
        &[&ns1, &ns2],
        &[(1, 0), (2, 1), (3, 0), (4, 1)],
        Duration::from_secs(3),
    );

    block_probe(&lab, 0, svc_b.port(), true);
    eps([200, 0, 0, 0]);
    expect_masters(
        &lab,
        &[&ns1, &ns2],
        &[(1, 0), (2, 1), (3, 1), (4, 1)],
        Duration::from_secs(3),
    );
    let tracked = ns1.vrrp(&lab).expect("vrrp");
    let vrid4 = tracked.vrids.iter().find(|r| r.vrid == 4).expect("VRID 4");
    let names: Vec<(&str, bool, bool)> = vrid4
        .tracked
        .iter()
        .map(|t| (t.name.as_str(), t.up, t.required))
        .collect();
    assert_eq!(
        names,
        vec![
            ("dns 10.77.0.204:53", true, true),
            ("vserver vs_a", false, false),
            ("vserver vs_b", false, false)
        ]
    );

    block_probe(&lab, 0, svc_a.port(), false);
    block_probe(&lab, 0, svc_b.port(), false);
    eps([200, 200, 200, 200]);
    expect_masters(&lab, &[&ns1, &ns2], &all_on_ns1, Duration::from_secs(3));
    drop((svc_a, svc_b));
}
