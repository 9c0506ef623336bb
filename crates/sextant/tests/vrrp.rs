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
