//! This node's own DNS listeners on its VRRP VIPs (seed 004: a node whose
//! DNS service is broken must give its VIPs up). The binary asks each
//! listener a real query through the VIP every half second and reports what
//! happened; the verdict, with its hysteresis, is decided here like every
//! other health verdict, and published for VRRP's tracking.
//!
//! DOWN after [`FAILURES_DOWN`] failed probes in a row; an answer makes it
//! UP at once. Where the VIP is not on this host (a backup) the listener
//! cannot be probed: the last verdict then holds for [`HOLD_DOWN`] after
//! the last failure, so a node that just gave a VIP up because its DNS
//! failed does not take it back at once.

use std::net::SocketAddr;
use std::time::Duration;

use sextant_core::Model;

/// Consecutive failed probes that make a listener DOWN.
pub const FAILURES_DOWN: u32 = 3;
/// How long a DOWN verdict holds once the listener can no longer be probed.
pub const HOLD_DOWN: Duration = Duration::from_secs(30);

/// What one self-probe of a listener found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenerProbe {
    /// A response came back.
    Answered,
    /// No (matching) response: why.
    Failed(String),
    /// Not probed: the VIP is not on this host, or DNS does not serve yet.
    Unprobed,
}

#[derive(Debug, Clone)]
struct Listener {
    addr: SocketAddr,
    failures: u32,
    /// Failed its last [`FAILURES_DOWN`] probes and has not answered since.
    down: bool,
    /// When it was last found DOWN (the start of the hold-down).
    down_at: Option<Duration>,
    /// As last published.
    up: bool,
}

impl Listener {
    fn up(&self, now: Duration) -> bool {
        !self.down && self.down_at.is_none_or(|t| now > t + HOLD_DOWN)
    }
}

/// Every listener of this node on a VRRP VIP.
#[derive(Debug, Clone, Default)]
pub(crate) struct Listeners {
    list: Vec<Listener>,
}

/// A listener's verdict changed: for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListenerChange {
    pub addr: SocketAddr,
    pub up: bool,
    pub reason: String,
}

impl Listeners {
    /// The listeners of `model` on its VIPs, keeping what `old` knew of
    /// the same addresses.
    pub fn new(model: &Model, old: Option<&Listeners>) -> Listeners {
        let list = vip_listeners(model)
            .map(|addr| {
                old.and_then(|o| o.list.iter().find(|l| l.addr == addr))
                    .cloned()
                    .unwrap_or(Listener {
                        addr,
                        failures: 0,
                        down: false,
                        down_at: None,
                        up: true,
                    })
            })
            .collect();
        Listeners { list }
    }

    /// One probe's result; the change of verdict, if any.
    pub fn probe(
        &mut self,
        addr: SocketAddr,
        probe: ListenerProbe,
        now: Duration,
    ) -> Option<ListenerChange> {
        let l = self.list.iter_mut().find(|l| l.addr == addr)?;
        let reason = match probe {
            ListenerProbe::Answered => {
                l.failures = 0;
                l.down = false;
                l.down_at = None;
                "the listener answers".to_string()
            }
            ListenerProbe::Failed(why) => {
                l.failures = l.failures.saturating_add(1);
                if l.failures >= FAILURES_DOWN {
                    l.down = true;
                    l.down_at = Some(now);
                }
                format!(
                    "the listener does not answer ({why}; {} failed probe{} in a row)",
                    l.failures,
                    if l.failures == 1 { "" } else { "s" }
                )
            }
            ListenerProbe::Unprobed => {
                l.failures = 0;
                l.down = false;
                format!(
                    "the VIP is not on this node: the last failure holds for {}s",
                    HOLD_DOWN.as_secs()
                )
            }
        };
        let up = l.up(now);
        if up == l.up {
            return None;
        }
        l.up = up;
        Some(ListenerChange {
            addr,
            up,
            reason: if up {
                "the listener answers again, or its hold-down is over".to_string()
            } else {
                reason
            },
        })
    }

    /// Every listener with its published verdict.
    pub fn published(&self) -> Vec<(SocketAddr, bool)> {
        self.list.iter().map(|l| (l.addr, l.up)).collect()
    }
}

/// This node's DNS listen addresses that are VRRP VIPs.
pub fn vip_listeners(model: &Model) -> impl Iterator<Item = SocketAddr> + '_ {
    model.dns_listen.iter().copied().filter(|a| {
        model
            .vrrp
            .vrids
            .iter()
            .any(|v| v.addresses.iter().any(|vip| vip.ip == a.ip()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book() -> (Listeners, SocketAddr) {
        let addr: SocketAddr = "192.0.2.53:53".parse().expect("addr");
        let book = Listeners {
            list: vec![Listener {
                addr,
                failures: 0,
                down: false,
                down_at: None,
                up: true,
            }],
        };
        (book, addr)
    }

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn three_failures_make_it_down_and_an_answer_up_at_once() {
        let (mut b, a) = book();
        let fail = || ListenerProbe::Failed("timed out".into());
        assert_eq!(b.probe(a, fail(), s(1)), None);
        assert_eq!(b.probe(a, fail(), s(2)), None);
        let down = b.probe(a, fail(), s(3)).expect("DOWN");
        assert!(!down.up);
        assert!(
            down.reason.contains("3 failed probes in a row"),
            "{}",
            down.reason
        );
        let up = b.probe(a, ListenerProbe::Answered, s(4)).expect("UP");
        assert!(up.up);
    }

    #[test]
    fn a_down_verdict_holds_while_it_cannot_be_probed_again() {
        let (mut b, a) = book();
        for t in 1..=3 {
            b.probe(a, ListenerProbe::Failed("refused".into()), s(t));
        }
        assert_eq!(b.published(), vec![(a, false)]);
        // The VIP went away with the failure: still DOWN for 30 s.
        assert_eq!(b.probe(a, ListenerProbe::Unprobed, s(4)), None);
        assert_eq!(b.probe(a, ListenerProbe::Unprobed, s(33)), None);
        let over = b
            .probe(a, ListenerProbe::Unprobed, s(34))
            .expect("hold over");
        assert!(over.up);
    }

    #[test]
    fn unknown_addresses_are_ignored() {
        let (mut b, _) = book();
        let other: SocketAddr = "192.0.2.54:53".parse().expect("addr");
        assert_eq!(b.probe(other, ListenerProbe::Answered, s(1)), None);
    }
}
