//! This node's own figures (CPU and memory use), sent to the other sites in
//! metric exchange reports. Read from Linux's /proc; elsewhere they are
//! simply missing.

use sextant_mep::message::SiteMetrics;

/// CPU time counters from /proc/stat, to compute use between two samples.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuSample {
    busy: u64,
    total: u64,
}

/// Samples the machine: CPU use since `previous`, and memory use now.
pub fn sample(previous: &mut Option<CpuSample>) -> SiteMetrics {
    let cpu = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| parse_cpu(&s));
    let cpu_percent = match (cpu, previous.replace(cpu.unwrap_or_default())) {
        (Some(now), Some(before)) if now.total > before.total => Some(
            (now.busy.saturating_sub(before.busy)) as f64 * 100.0
                / (now.total - before.total) as f64,
        ),
        _ => None,
    };
    let memory_percent = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| parse_memory(&s));
    SiteMetrics {
        cpu_percent,
        memory_percent,
        ..Default::default()
    }
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
    }
}
