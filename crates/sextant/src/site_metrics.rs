//! This node's own figures (CPU, memory and bandwidth use), sent to the
//! other sites in metric exchange reports and ranked by datacenter mode's
//! DC Based selection. Read from Linux's /proc; elsewhere they are simply
//! missing. An operator (or a test) may set any of them through
//! `POST /v1/site/figures`, which then stands in for the measurement.

use std::time::Instant;

use sextant_mep::message::SiteMetrics;

/// CPU time counters from /proc/stat, to compute use between two samples.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuSample {
    busy: u64,
    total: u64,
}

/// What the previous sample saw, to turn counters into rates.
#[derive(Debug, Default)]
pub struct Sampler {
    cpu: Option<CpuSample>,
    /// Bytes received and sent through the non-loopback interfaces, and when.
    net: Option<(u64, Instant)>,
}

/// Figures an operator set (`POST /v1/site/figures`); each stands in for
/// the measured one while it is set.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Overrides {
    pub cpu_percent: Option<f64>,
    pub memory_percent: Option<f64>,
    pub bandwidth_bytes_ps: Option<f64>,
}

/// Samples the machine: CPU use and bandwidth since the previous sample,
/// memory use now; the operator's figures where set.
pub fn sample(previous: &mut Sampler, overrides: Overrides) -> SiteMetrics {
    let cpu = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| parse_cpu(&s));
    let cpu_percent = match (cpu, previous.cpu.replace(cpu.unwrap_or_default())) {
        (Some(now), Some(before)) if now.total > before.total => Some(
            (now.busy.saturating_sub(before.busy)) as f64 * 100.0
                / (now.total - before.total) as f64,
        ),
        _ => None,
    };
    let memory_percent = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| parse_memory(&s));
    let now = Instant::now();
    let bytes = std::fs::read_to_string("/proc/net/dev")
        .ok()
        .and_then(|s| parse_net_bytes(&s));
    let bandwidth = match (bytes, previous.net) {
        (Some(b), Some((before, at))) if now > at => {
            Some(b.saturating_sub(before) as f64 / now.duration_since(at).as_secs_f64())
        }
        _ => None,
    };
    previous.net = bytes.map(|b| (b, now));
    SiteMetrics {
        cpu_percent: overrides.cpu_percent.or(cpu_percent),
        memory_percent: overrides.memory_percent.or(memory_percent),
        // On the wire in bits per second.
        bandwidth_bps: overrides
            .bandwidth_bytes_ps
            .or(bandwidth)
            .map(|b| (b * 8.0) as u64),
        ..Default::default()
    }
}

/// Bytes received plus sent through every interface but `lo`, from
/// /proc/net/dev (`iface: rx_bytes ... (8 fields) tx_bytes ...`).
fn parse_net_bytes(dev: &str) -> Option<u64> {
    let mut total = 0u64;
    let mut any = false;
    for line in dev.lines().skip(2) {
        let Some((name, fields)) = line.split_once(':') else {
            continue;
        };
        if name.trim() == "lo" {
            continue;
        }
        let f: Vec<u64> = fields
            .split_whitespace()
            .filter_map(|v| v.parse().ok())
            .collect();
        if let (Some(rx), Some(tx)) = (f.first(), f.get(8)) {
            total = total.saturating_add(*rx).saturating_add(*tx);
            any = true;
        }
    }
    any.then_some(total)
}

/// The first line of /proc/stat: `cpu user nice system idle iowait irq softirq steal ...`.
fn parse_cpu(stat: &str) -> Option<CpuSample> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|f| f.parse().ok())
        .collect();
    if fields.len() < 4 {
        return None;
    }
    let total: u64 = fields.iter().sum();
    let idle = fields[3] + fields.get(4).copied().unwrap_or(0);
    Some(CpuSample {
        busy: total.saturating_sub(idle),
        total,
    })
}

/// Memory in use: 100 × (1 − MemAvailable / MemTotal).
fn parse_memory(meminfo: &str) -> Option<f64> {
    let field = |name: &str| {
        meminfo
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
    };
    let total = field("MemTotal:")?;
    let available = field("MemAvailable:")?;
    (total > 0.0).then(|| 100.0 * (1.0 - available / total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_files() {
        let cpu = parse_cpu("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4\n").unwrap();
        assert_eq!((cpu.busy, cpu.total), (150, 1000));
        assert!(parse_cpu("garbage").is_none());
        let mem = parse_memory("MemTotal: 1000 kB\nMemFree: 100 kB\nMemAvailable: 250 kB\n");
        assert_eq!(mem, Some(75.0));
        assert_eq!(parse_memory("MemTotal: 0 kB\nMemAvailable: 0 kB\n"), None);
        let dev = "Inter-|   Receive    |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets\n    lo: 900 9 0 0 0 0 0 0 900 9 0 0 0 0 0 0\n  eth0: 1000 10 0 0 0 0 0 0 500 5 0 0 0 0 0 0\n  eth1: 20 1 0 0 0 0 0 0 30 1 0 0 0 0 0 0\n";
        assert_eq!(parse_net_bytes(dev), Some(1550));
        assert_eq!(
            parse_net_bytes("Inter-|\n face |\n    lo: 1 2 3 4 5 6 7 8 9\n"),
            None
        );
    }
}
