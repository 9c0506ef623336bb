//! Path figures for datacenter mode's Client Based selection (seed 002):
//! what this site's recent LDNS probe cycles tell about its path to one
//! LDNS group — router hops, the reply's TTL, packet loss, and a mean
//! opinion score (MOS).
//!
//! Every entry keeps its last [`PATH_WINDOW`] probe cycles, each an answer
//! (RTT, and the reply's TTL when the probe could see it) or a failure.
//! From them:
//!
//! * `loss_permille`: failed cycles × 1000 / cycles in the window;
//! * jitter: the mean absolute difference of consecutive answered RTTs in
//!   the window (failures in between are skipped; 0 with fewer than two);
//! * `ttl`: the TTL of the latest answered cycle that had one; `hops` from
//!   it ([`hops_from_ttl`]);
//! * `mos_centi`: 100 × [`mos`] of the latest RTT, the jitter and the loss.
//!
//! There are figures only while the window holds an answered cycle with a
//! TTL: hops and TTL cannot be guessed, and a path with loss and MOS but no
//! hops would rank under some criteria and not others. A site that only
//! gets TCP answers (no TTL) has no path figures.

use std::time::Duration;

use sextant_core::PathFigures;

/// Probe cycles the figures are computed over.
pub(crate) const PATH_WINDOW: usize = 10;
/// A site sends its path again when its loss moved by this much since it
/// last sent (per mille)...
pub(crate) const SHARE_LOSS_PERMILLE: u16 = 50;
/// ...or its MOS by this much (× 100), or its hops or TTL changed at all.
pub(crate) const SHARE_MOS_CENTI: u16 = 10;

/// The initial TTLs senders use (Linux and most Unix: 64; Windows: 128;
/// network gear: 255).
const INITIAL_TTLS: [u8; 3] = [64, 128, 255];

/// Router hops from a reply's arrival TTL: the smallest common initial TTL
/// (64, 128, 255) at or above it, less the TTL. A reply that arrives with
/// 64, 128 or 255 crossed no router; 57 crossed 7 from a Linux host; 116
/// crossed 12 from a Windows one.
pub fn hops_from_ttl(ttl: u8) -> u8 {
    let initial = INITIAL_TTLS
        .iter()
        .copied()
        .find(|&i| i >= ttl)
        .unwrap_or(u8::MAX);
    initial - ttl
}

/// The mean opinion score (1 to 4.5) of a path, by the usual simplification
/// of the ITU-T G.107 E-model (the one VoIP monitors use):
///
/// * effective latency `Le = RTT/2 + 2·jitter + 10` ms (RTT/2 is the one-way
///   latency, 10 ms for the codec);
/// * `R = 93.2 − Le/40` when `Le < 160`, else `R = 93.2 − (Le − 120)/10`;
/// * `R −= 2.5 · loss_percent`;
/// * `MOS = 1` when `R < 0`, `4.5` when `R > 100`, else
///   `1 + 0.035·R + 0.000007·R·(R − 60)·(100 − R)`.
///
/// `rtt_ms` and `jitter_ms` in milliseconds, `loss_percent` 0 to 100.
/// The cubic dips just under 1 for `0 < R < 6.5` (to 0.99); the score is
/// kept at 1 there, so it never rises with more latency or loss.
/// Non-finite input gives the worst score.
pub fn mos(rtt_ms: f64, jitter_ms: f64, loss_percent: f64) -> f64 {
    let le = rtt_ms / 2.0 + 2.0 * jitter_ms + 10.0;
    let mut r = if le < 160.0 {
        93.2 - le / 40.0
    } else {
        93.2 - (le - 120.0) / 10.0
    };
    r -= 2.5 * loss_percent;
    if !r.is_finite() || r < 0.0 {
        1.0
    } else if r > 100.0 {
        4.5
    } else {
        (1.0 + 0.035 * r + 0.000_007 * r * (r - 60.0) * (100.0 - r)).max(1.0)
    }
}

/// [`mos`] × 100, rounded, within 100..=450.
fn mos_centi(rtt_ms: f64, jitter_ms: f64, loss_percent: f64) -> u16 {
    let centi = (mos(rtt_ms, jitter_ms, loss_percent) * 100.0).round();
    // Within 100..=450 by the formula's clamps; the clamp keeps the cast
    // exact all the same.
    centi.clamp(100.0, 450.0) as u16
}

/// Whether figures moved enough since they were last sent to send them
/// again: hops or TTL changed, loss by [`SHARE_LOSS_PERMILLE`] or more, MOS
/// by [`SHARE_MOS_CENTI`] or more; or they appeared or went away.
pub(crate) fn noticeably_changed(sent: Option<PathFigures>, now: Option<PathFigures>) -> bool {
    match (sent, now) {
        (None, None) => false,
        (Some(a), Some(b)) => {
            a.hops != b.hops
                || a.ttl != b.ttl
                || a.loss_permille.abs_diff(b.loss_permille) >= SHARE_LOSS_PERMILLE
                || a.mos_centi.abs_diff(b.mos_centi) >= SHARE_MOS_CENTI
        }
        _ => true,
    }
}

/// One probe cycle in the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cycle {
    /// Answered in this many µs, with the reply's TTL when known.
    Answered {
        rtt_us: u32,
        ttl: Option<u8>,
    },
    Failed,
}

/// The last [`PATH_WINDOW`] probe cycles of this site to one LDNS group, in
/// a fixed ring (no allocation per entry).
#[derive(Debug, Clone)]
pub(crate) struct PathWindow {
    cycles: [Cycle; PATH_WINDOW],
    /// Where the next cycle goes.
    next: u8,
    /// How many cycles it holds (up to [`PATH_WINDOW`]).
    len: u8,
}

impl Default for PathWindow {
    fn default() -> Self {
        PathWindow {
            cycles: [Cycle::Failed; PATH_WINDOW],
            next: 0,
            len: 0,
        }
    }
}

impl PathWindow {
    /// Adds one cycle: `Some((rtt, ttl))` answered, `None` failed. The
    /// oldest falls out of a full window.
    pub fn push(&mut self, cycle: Option<(Duration, Option<u8>)>) {
        let cycle = match cycle {
            Some((rtt, ttl)) => Cycle::Answered {
                rtt_us: u32::try_from(rtt.as_micros()).unwrap_or(u32::MAX),
                ttl,
            },
            None => Cycle::Failed,
        };
        let next = usize::from(self.next) % PATH_WINDOW;
        self.cycles[next] = cycle;
        self.next = ((next + 1) % PATH_WINDOW) as u8;
        self.len = (usize::from(self.len) + 1).min(PATH_WINDOW) as u8;
    }

    /// The cycles, oldest first.
    fn iter(&self) -> impl Iterator<Item = Cycle> + '_ {
        let len = usize::from(self.len);
        let start = (usize::from(self.next) + PATH_WINDOW - len) % PATH_WINDOW;
        (0..len).map(move |i| self.cycles[(start + i) % PATH_WINDOW])
    }

    /// Cycles in the window.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Failed cycles × 1000 / cycles (0 for an empty window).
    pub fn loss_permille(&self) -> u16 {
        let len = self.len();
        if len == 0 {
            return 0;
        }
        let failed = self.iter().filter(|c| *c == Cycle::Failed).count();
        (failed * 1000 / len) as u16
    }

    /// The mean absolute difference of consecutive answered RTTs, in ms
    /// (0 with fewer than two).
    pub fn jitter_ms(&self) -> f64 {
        let mut previous: Option<u32> = None;
        let (mut sum, mut steps) = (0u64, 0u32);
        for c in self.iter() {
            if let Cycle::Answered { rtt_us, .. } = c {
                if let Some(p) = previous {
                    sum += u64::from(p.abs_diff(rtt_us));
                    steps += 1;
                }
                previous = Some(rtt_us);
            }
        }
        if steps == 0 {
            0.0
        } else {
            sum as f64 / f64::from(steps) / 1000.0
        }
    }

    /// The figures, if the window holds an answered cycle with a TTL (see
    /// the module doc); MOS from the latest answered RTT.
    pub fn figures(&self) -> Option<PathFigures> {
        let ttl = self
            .iter()
            .filter_map(|c| match c {
                Cycle::Answered { ttl, .. } => ttl,
                Cycle::Failed => None,
            })
            .last()?;
        let rtt_us = self
            .iter()
            .filter_map(|c| match c {
                Cycle::Answered { rtt_us, .. } => Some(rtt_us),
                Cycle::Failed => None,
            })
            .last()?;
        let loss_permille = self.loss_permille();
        Some(PathFigures {
            hops: hops_from_ttl(ttl),
            ttl,
            loss_permille,
            mos_centi: mos_centi(
                f64::from(rtt_us) / 1000.0,
                self.jitter_ms(),
                f64::from(loss_permille) / 10.0,
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn mos_at_known_points() {
        // 20 ms, no jitter, no loss: Le = 20, R = 92.7, MOS 4.40.
        let good = mos(20.0, 0.0, 0.0);
        assert!((good - 4.399).abs() < 0.001, "{good}");
        // Nothing at all: Le = 10, R = 92.95, just under the best.
        assert!((mos(0.0, 0.0, 0.0) - 4.404).abs() < 0.001);
        // 200 ms RTT and 20 ms jitter: Le = 150, R = 89.45, MOS 4.33.
        assert!((mos(200.0, 20.0, 0.0) - 4.325).abs() < 0.001);
        // Past 160 ms of effective latency the score falls faster:
        // 400 ms RTT, Le = 210, R = 84.2, MOS 4.17.
        assert!((mos(400.0, 0.0, 0.0) - 4.172).abs() < 0.001);
        // 10 % loss costs 25 points of R: 20 ms, R = 67.7, MOS 3.49.
        assert!((mos(20.0, 0.0, 10.0) - 3.487).abs() < 0.001);
        // Where the cubic would dip under 1 (R = 1): 1.
        assert_eq!(mos(20.0, 0.0, 36.68), 1.0);
        // Heavy loss: R below 0, the worst score.
        assert_eq!(mos(20.0, 0.0, 50.0), 1.0);
        assert_eq!(mos(20.0, 0.0, 100.0), 1.0);
        // Very long paths: R below 0 too.
        assert_eq!(mos(3_000.0, 0.0, 0.0), 1.0);
        // More latency, jitter or loss never scores better.
        let mut last = f64::INFINITY;
        for rtt in (0..2_000).step_by(10) {
            let m = mos(f64::from(rtt), 5.0, 1.0);
            assert!(m <= last && (1.0..=4.5).contains(&m), "{rtt}: {m}");
            last = m;
        }
        assert_eq!(mos(f64::NAN, 0.0, 0.0), 1.0);
        assert_eq!(mos_centi(20.0, 0.0, 0.0), 440);
        assert_eq!(mos_centi(20.0, 0.0, 100.0), 100);
    }

    #[test]
    fn hops_from_the_nearest_initial_ttl() {
        assert_eq!(hops_from_ttl(64), 0);
        assert_eq!(hops_from_ttl(57), 7);
        assert_eq!(hops_from_ttl(1), 63);
        assert_eq!(hops_from_ttl(0), 64);
        assert_eq!(hops_from_ttl(65), 63);
        assert_eq!(hops_from_ttl(116), 12);
        assert_eq!(hops_from_ttl(128), 0);
        assert_eq!(hops_from_ttl(129), 126);
        assert_eq!(hops_from_ttl(250), 5);
        assert_eq!(hops_from_ttl(255), 0);
    }

    #[test]
    fn the_window_counts_loss_over_its_last_ten_cycles() {
        let mut w = PathWindow::default();
        assert_eq!(w.loss_permille(), 0);
        assert_eq!(w.figures(), None, "nothing yet");
        w.push(None);
        assert_eq!(w.loss_permille(), 1000);
        assert_eq!(w.figures(), None, "no answer, no TTL");
        w.push(Some((ms(20), Some(60))));
        assert_eq!(w.loss_permille(), 500);
        for _ in 0..8 {
            w.push(Some((ms(20), Some(60))));
        }
        assert_eq!(w.len(), PATH_WINDOW);
        assert_eq!(w.loss_permille(), 100, "one failure in ten");
        w.push(Some((ms(20), Some(60))));
        assert_eq!(w.len(), PATH_WINDOW, "the oldest fell out");
        assert_eq!(w.loss_permille(), 0);
        for _ in 0..3 {
            w.push(None);
        }
        assert_eq!(w.loss_permille(), 300);
        // A window of failures only has no figures any more.
        for _ in 0..PATH_WINDOW {
            w.push(None);
        }
        assert_eq!(w.loss_permille(), 1000);
        assert_eq!(w.figures(), None);
    }

    #[test]
    fn jitter_ttl_and_mos_from_the_window() {
        let mut w = PathWindow::default();
        w.push(Some((ms(20), Some(57))));
        assert_eq!(w.jitter_ms(), 0.0, "one RTT: no jitter");
        let f = w.figures().expect("figures");
        assert_eq!(
            (f.hops, f.ttl, f.loss_permille, f.mos_centi),
            (7, 57, 0, 440)
        );
        w.push(Some((ms(30), Some(57))));
        w.push(None); // skipped between answers
        w.push(Some((ms(10), None))); // TCP: no TTL
        // |30-20| and |10-30|: 15 ms on average.
        assert_eq!(w.jitter_ms(), 15.0);
        let f = w.figures().expect("figures");
        assert_eq!(f.ttl, 57, "the latest TTL known");
        assert_eq!(f.loss_permille, 250);
        // MOS of the latest RTT (10 ms), 15 ms of jitter, 25 % loss.
        let want = (mos(10.0, 15.0, 25.0) * 100.0).round() as u16;
        assert_eq!(f.mos_centi, want);
        w.push(Some((ms(10), Some(120))));
        assert_eq!(w.figures().map(|f| (f.ttl, f.hops)), Some((120, 8)));
        // Only TCP answers: no TTL, no figures.
        let mut tcp = PathWindow::default();
        tcp.push(Some((ms(5), None)));
        assert_eq!(tcp.figures(), None);
    }

    #[test]
    fn what_counts_as_a_noticeable_change() {
        let a = PathFigures {
            hops: 3,
            ttl: 61,
            loss_permille: 100,
            mos_centi: 400,
        };
        assert!(!noticeably_changed(None, None));
        assert!(noticeably_changed(None, Some(a)));
        assert!(noticeably_changed(Some(a), None));
        assert!(!noticeably_changed(Some(a), Some(a)));
        let with = |f: fn(&mut PathFigures)| {
            let mut b = a;
            f(&mut b);
            noticeably_changed(Some(a), Some(b))
        };
        assert!(with(|b| b.hops = 4));
        assert!(with(|b| b.ttl = 60));
        assert!(!with(|b| b.loss_permille = 149));
        assert!(with(|b| b.loss_permille = 150));
        assert!(with(|b| b.loss_permille = 50));
        assert!(!with(|b| b.mos_centi = 409));
        assert!(with(|b| b.mos_centi = 410));
        assert!(with(|b| b.mos_centi = 390));
    }
}
