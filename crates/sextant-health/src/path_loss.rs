//! Packet loss on the path from this site to another datacenter, for
//! datacenter mode's DC Based PACKET_LOSS (seed 002): a burst of ICMP echo
//! requests from this site's IP to the other site's IP, and the share that
//! got no reply. ICMP needs no listener at the other end (its kernel
//! answers), so any site IP can be measured, and it crosses the same
//! network as the site's traffic, unlike the metric exchange's keepalives,
//! which TCP retransmits (so they are almost never "lost").
//!
//! Which sites to measure and when is the state engine's business; this
//! module only measures. A burst is bounded: `count` probes, one every
//! `spacing`, each waiting at most `timeout`.

use std::net::IpAddr;
use std::time::Duration;

use tokio::task::JoinSet;

use crate::{ProbeError, ping};

/// How one burst is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Burst {
    /// Echo requests per burst.
    pub count: u16,
    /// Between two requests.
    pub spacing: Duration,
    /// How long each request waits for its reply before it counts as lost.
    pub timeout: Duration,
}

impl Burst {
    /// 20 requests 25 ms apart, 1 s each: about 1.5 s per burst, loss in
    /// steps of 5 %.
    pub const DEFAULT: Burst = Burst {
        count: 20,
        spacing: Duration::from_millis(25),
        timeout: Duration::from_secs(1),
    };
}

/// What one burst measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathLoss {
    pub sent: u16,
    pub lost: u16,
}

/// Sends one burst to `target` from `source` (`None`: the kernel's choice)
/// and counts the replies. An error only when ICMP cannot be used here at
/// all (no privilege for an ICMP socket): then nothing was measured.
///
/// # Panics
///
/// Outside a tokio runtime.
pub async fn measure(
    target: IpAddr,
    source: Option<IpAddr>,
    burst: Burst,
) -> Result<PathLoss, ProbeError> {
    let mut probes = JoinSet::new();
    for k in 0..burst.count {
        let delay = burst.spacing * u32::from(k);
        probes.spawn(async move {
            tokio::time::sleep(delay).await;
            tokio::time::timeout(burst.timeout, ping::probe_from(target, source)).await
        });
    }
    let mut lost = 0u16;
    while let Some(done) = probes.join_next().await {
        match done {
            Ok(Ok(Ok(_))) => {}
            Ok(Ok(Err(e @ ProbeError::PingPermission(_)))) => return Err(e),
            // No reply in time, an ICMP error, or a task that died: lost.
            _ => lost += 1,
        }
    }
    Ok(PathLoss {
        sent: burst.count,
        lost,
    })
}
