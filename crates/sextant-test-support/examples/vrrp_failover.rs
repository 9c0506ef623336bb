//! The driver of bench/vrrp-failover.sh: failover and failback as the
//! client sees them, the longest gap in echo replies from the VIP pinged
//! every 5 ms, in the VRRP lab (two nodes and a client on a bridge).
//!
//! Node 0 has priority 200, node 1 priority 100, one VRID and one VIP.
//! Each trial:
//! * failover: node 0 fails while the client pings; the gap ends when node
//!   1 answers. `graceful`: the implementation's graceful stop (keepalived:
//!   SIGTERM, priority 0). `hard`: node 0's cable is cut (`ip link set
//!   down` of its bridge port) and its process SIGKILLed; its VIP is then
//!   removed from it (what its reboot does);
//! * failback: node 0 comes back (`hard`: cable first) and its
//!   implementation starts again; with preemption it takes the VIP back.
//!
//! Environment: IMPL (keepalived), TRIALS (3), INTERVALS (seconds, "1,0.1"),
//! FAILURES ("graceful,hard"), VMAC ("off,on"), PING_MS (5).
//!
//! Run as root: `cargo run --release -p sextant-test-support --example vrrp_failover`.

use std::net::IpAddr;
use std::thread;
use std::time::{Duration, Instant};

use sextant_test_support::vrrp_lab::*;

const VRID: u8 = 51;

#[derive(Clone, Copy, PartialEq)]
enum Failure {
    Graceful,
    Hard,
}

impl Failure {
    fn name(self) -> &'static str {
        match self {
            Failure::Graceful => "graceful",
            Failure::Hard => "hard",
        }
    }
}

struct Row {
    interval: Duration,
    failure: Failure,
    vmac: bool,
    failover: Vec<Duration>,
    failback: Vec<Duration>,
    note: String,
}

fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn main() {
    let impl_name = std::env::var("IMPL").unwrap_or_else(|_| "keepalived".into());
    let Some(imp) = implementation(&impl_name) else {
        eprintln!("vrrp_failover: IMPL={impl_name} is not one of {IMPLEMENTATIONS:?}");
        std::process::exit(2);
    };
    let trials: usize = std::env::var("TRIALS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let ping = Duration::from_millis(
        std::env::var("PING_MS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(5),
    );
    let intervals: Vec<Duration> = env_list("INTERVALS", "1,0.1")
        .iter()
        .map(|s| Duration::from_secs_f64(s.parse().expect("INTERVALS: seconds")))
        .collect();
    let failures: Vec<Failure> = env_list("FAILURES", "graceful,hard")
        .iter()
        .map(|s| match s.as_str() {
            "graceful" => Failure::Graceful,
            "hard" => Failure::Hard,
            other => panic!("FAILURES: graceful or hard, not {other}"),
        })
        .collect();
    let vmacs: Vec<bool> = env_list("VMAC", "off,on")
        .iter()
        .map(|s| s == "on")
        .collect();
    if !sextant_test_support::ci::is_root() {
        eprintln!("vrrp_failover: run as root (network namespaces, raw sockets)");
        std::process::exit(1);
    }
    if imp.name() == "keepalived" && keepalived_program().is_none() {
        eprintln!("vrrp_failover: keepalived is missing (scripts/setup.sh)");
        std::process::exit(1);
    }

    let mut rows = Vec::new();
    for &interval in &intervals {
        for &failure in &failures {
            for &vmac in &vmacs {
                eprintln!(
                    "== {} interval {:?} {} vmac {}: {trials} trials",
                    imp.name(),
                    interval,
                    failure.name(),
                    if vmac { "on" } else { "off" }
                );
                let row = match run_row(&*imp, interval, failure, vmac, trials, ping) {
                    Ok(row) => row,
                    Err(e) => {
                        eprintln!("   failed: {e}");
                        Row {
                            interval,
                            failure,
                            vmac,
                            failover: vec![],
                            failback: vec![],
                            note: "FAILED (see stderr)".into(),
                        }
                    }
                };
                rows.push(row);
            }
        }
    }
    print_table(imp.name(), trials, ping, &rows);
    if let Ok(path) = std::env::var("SUMMARY") {
        write_summary(&path, &rows);
    }
    if rows.iter().any(|r| r.note.starts_with("FAILED")) {
        std::process::exit(1);
    }
}

fn wait_owner(lab: &Lab, vip: IpAddr, want: usize, deadline: Duration) -> Result<(), String> {
    let end = Instant::now() + deadline;
    loop {
        let owners = lab.owners(vip);
        if owners == [want] {
            return Ok(());
        }
        if Instant::now() >= end {
            return Err(format!(
                "node {want} did not become the only owner within {deadline:?} (owners {owners:?})"
            ));
        }
        thread::sleep(Duration::from_millis(20));
    }
}

fn run_row(
    imp: &dyn VrrpImpl,
    interval: Duration,
    failure: Failure,
    vmac: bool,
    trials: usize,
    ping: Duration,
) -> Result<Row, String> {
    let lab = Lab::new("bench", 2).ok_or("cannot build the lab here")?;
    let vip4 = vip(0);
    let vip = IpAddr::V4(vip4);
    let inst = |prio| Instance::new(VRID, prio, interval, vip).vmac(vmac);
    let (primary, secondary) = (inst(200), inst(100));
    let converge = primary.master_down_interval() * 3 + Duration::from_secs(10);
    // Settling after the new owner has the VIP: long enough to catch a loss
    // that comes a few adverts later (the old owner's ARP with the shared
    // virtual MAC).
    let settle_over = Duration::from_secs(1) + interval * 2;
    let settle_back = Duration::from_secs(1) + interval * 3;
    let max_run = converge + Duration::from_secs(10);

    let mut backup = imp.start(&lab, 1, std::slice::from_ref(&secondary));
    let mut master = imp.start(&lab, 0, std::slice::from_ref(&primary));
    let logs = |m: &dyn VrrpNode, b: &dyn VrrpNode| {
        format!("--- node 0 ---\n{}--- node 1 ---\n{}", m.log(), b.log())
    };
    wait_owner(&lab, vip, 0, converge).map_err(|e| format!("{e}\n{}", logs(&*master, &*backup)))?;
    thread::sleep(interval * 2);
    lab.ping_once(vip4, Duration::from_secs(1))
        .ok_or("the VIP does not answer the client")?;

    let (mut failover, mut failback) = (Vec::new(), Vec::new());
    for trial in 0..trials {
        // Failover.
        let pinger = Pinger::start(&lab, vip4, ping, max_run);
        thread::sleep(Duration::from_millis(300));
        match failure {
            Failure::Graceful => master.stop_graceful(),
            Failure::Hard => {
                lab.link_down(0);
                master.stop_hard();
                lab.remove_addr(0, vip);
            }
        }
        wait_owner(&lab, vip, 1, converge)
            .map_err(|e| format!("failover, trial {trial}: {e}\n{}", logs(&*master, &*backup)))?;
        thread::sleep(settle_over);
        let over = pinger.stop();
        // Failback.
        let pinger = Pinger::start(&lab, vip4, ping, max_run);
        thread::sleep(Duration::from_millis(300));
        if failure == Failure::Hard {
            lab.link_up(0);
        }
        master = imp.start(&lab, 0, std::slice::from_ref(&primary));
        wait_owner(&lab, vip, 0, converge)
            .map_err(|e| format!("failback, trial {trial}: {e}\n{}", logs(&*master, &*backup)))?;
        thread::sleep(settle_back);
        let back = pinger.stop();
        eprintln!(
            "   trial {trial}: failover gap {:.3} s ({} of {} lost), failback gap {:.3} s ({} of {} lost)",
            over.longest_gap.as_secs_f64(),
            over.lost(),
            over.sent,
            back.longest_gap.as_secs_f64(),
            back.lost(),
            back.sent
        );
        failover.push(over.longest_gap);
        failback.push(back.longest_gap);
    }
    let checksum_errors = [&*master, &*backup]
        .iter()
        .map(|n| {
            n.log()
                .lines()
                .filter(|l| l.contains("Invalid VRRPv") || l.contains("Checksum ERROR"))
                .count()
        })
        .sum::<usize>();
    master.stop_graceful();
    backup.stop_graceful();
    Ok(Row {
        interval,
        failure,
        vmac,
        failover,
        failback,
        note: if checksum_errors > 0 {
            format!("{checksum_errors} checksum errors logged")
        } else {
            String::new()
        },
    })
}

/// One line per case for bench/vrrp-failover.sh to put implementations
/// side by side: interval, failure, vmac, then the median and the worst
/// trial of failover and of failback, in seconds (`-` if it failed).
fn write_summary(path: &str, rows: &[Row]) {
    let mut out = String::new();
    for r in rows {
        let worst = |v: &[Duration]| fmt_opt(v.iter().max().copied());
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
            r.interval.as_secs_f64(),
            r.failure.name(),
            if r.vmac { "on" } else { "off" },
            fmt_opt(median(&r.failover)),
            worst(&r.failover),
            fmt_opt(median(&r.failback)),
            worst(&r.failback),
        ));
    }
    if let Err(e) = std::fs::write(path, out) {
        eprintln!("vrrp_failover: cannot write {path}: {e}");
    }
}

fn median(v: &[Duration]) -> Option<Duration> {
    let mut v = v.to_vec();
    v.sort();
    match v.len() {
        0 => None,
        n if n % 2 == 1 => Some(v[n / 2]),
        n => Some((v[n / 2 - 1] + v[n / 2]) / 2),
    }
}

fn fmt_list(v: &[Duration]) -> String {
    v.iter()
        .map(|d| format!("{:.3}", d.as_secs_f64()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn fmt_opt(d: Option<Duration>) -> String {
    d.map_or("-".into(), |d| format!("{:.3}", d.as_secs_f64()))
}

fn print_table(name: &str, trials: usize, ping: Duration, rows: &[Row]) {
    println!(
        "{name}: longest gap in echo replies from the VIP (s), pinged every {} ms, {trials} trials; node 0 priority 200, node 1 priority 100",
        ping.as_millis()
    );
    println!(
        "{:>8}  {:<8}  {:<4}  {:>9}  {:<24}  {:>9}  {:<24}  note",
        "interval", "failure", "vmac", "failover", "(trials)", "failback", "(trials)"
    );
    for r in rows {
        println!(
            "{:>8}  {:<8}  {:<4}  {:>9}  {:<24}  {:>9}  {:<24}  {}",
            format!("{}s", r.interval.as_secs_f64()),
            r.failure.name(),
            if r.vmac { "on" } else { "off" },
            fmt_opt(median(&r.failover)),
            fmt_list(&r.failover),
            fmt_opt(median(&r.failback)),
            fmt_list(&r.failback),
            r.note
        );
    }
    println!("failover and failback columns: median of the trials; (trials): each trial");
}
