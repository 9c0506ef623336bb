//! Response rate limiting (as Knot's mod-rrl and NSD's rrl): a token
//! bucket per client prefix, in a fixed-size table of hashed buckets.
//!
//! A spoofed UDP flood aims our answers at a victim's addresses; the limit
//! caps what any one prefix receives, and `slip` sends every Nth limited
//! answer truncated (TC=1, no records) so a real client behind the prefix
//! retries over TCP, which cannot be spoofed. TCP is never limited, nor are
//! exempt ranges or queries with a valid server cookie (the caller checks
//! those).
//!
//! The table never grows: `table_size` buckets (a power of two), indexed
//! by a keyed hash (SipHash-2-4 with a random key made at start) of the
//! prefix, so an attacker cannot pick prefixes that share a victim's
//! bucket. Each bucket is one `AtomicU64` updated with compare-and-swap:
//! a 16-bit tag (more hash bits) naming the prefix that owns it and the
//! 48-bit "theoretical arrival time" of the generic cell rate algorithm, in
//! microseconds. A prefix that finds another's tag takes the bucket over
//! with a full allowance, as Knot does on collision. Pure: the time is
//! passed in.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use sextant_core::RrlSettings;

use crate::cookie::siphash24;

/// What to do with one response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Within the limit, or not limited at all.
    Pass,
    /// Over the limit: send nothing.
    Drop,
    /// Over the limit, but this one goes out truncated (TC=1).
    Slip,
}

const TIME_BITS: u32 = 48;
const TIME_MASK: u64 = (1 << TIME_BITS) - 1;

/// The limiter: settings and the bucket table.
#[derive(Debug)]
pub struct RateLimiter {
    settings: RrlSettings,
    buckets: Box<[AtomicU64]>,
    mask: u64,
    key: [u8; 16],
    /// Microseconds between two responses at the configured rate.
    interval: u64,
    /// How far ahead of now the arrival time may run: one second's worth
    /// of responses less one interval (so `rate` responses may burst).
    tolerance: u64,
}

impl RateLimiter {
    /// `key` keys the bucket hash; give it random bytes from the OS.
    pub fn new(settings: RrlSettings, key: [u8; 16]) -> Self {
        let size = settings.table_size.clamp(1, 1 << 26).next_power_of_two();
        let rate = u64::from(settings.responses_per_second.max(1));
        let interval = 1_000_000 / rate;
        RateLimiter {
            buckets: (0..size).map(|_| AtomicU64::new(0)).collect(),
            mask: size as u64 - 1,
            key,
            interval,
            tolerance: (interval * rate).saturating_sub(interval),
            settings,
        }
    }

    pub fn settings(&self) -> &RrlSettings {
        &self.settings
    }

    /// Whether `ip` is in an exempt range.
    pub fn exempt(&self, ip: IpAddr) -> bool {
        self.settings
            .exempt
            .iter()
            .any(|(net, len)| prefix_key(ip, *len) == prefix_key(*net, *len))
    }

    /// Charges one response to `ip`'s prefix at `now_us` (microseconds on
    /// any monotonic clock, the same for every call). `limited_before` is
    /// how many responses the caller has already limited (its own count):
    /// every `slip`th limited one is a [`Verdict::Slip`].
    pub fn check(&self, ip: IpAddr, now_us: u64, limited_before: u64) -> Verdict {
        if self.exempt(ip) {
            return Verdict::Pass;
        }
        let len = match ip {
            IpAddr::V4(_) => self.settings.ipv4_prefix,
            IpAddr::V6(_) => self.settings.ipv6_prefix,
        };
        let hash = siphash24(&self.key, &prefix_key(ip, len));
        let tag = hash >> TIME_BITS;
        let Some(bucket) = self.buckets.get((hash & self.mask) as usize) else {
            return Verdict::Pass;
        };
        // Time 0 is reserved for "never used".
        let now = (now_us & TIME_MASK).max(1);
        let mut old = bucket.load(Ordering::Relaxed);
        loop {
            let tat = if old >> TIME_BITS == tag && old & TIME_MASK != 0 {
                (old & TIME_MASK).max(now)
            } else {
                now
            };
            if tat > now + self.tolerance {
                let n = limited_before + 1;
                return match self.settings.slip {
                    0 => Verdict::Drop,
                    s if n.is_multiple_of(u64::from(s)) => Verdict::Slip,
                    _ => Verdict::Drop,
                };
            }
            let next = (tag << TIME_BITS) | ((tat + self.interval) & TIME_MASK);
            match bucket.compare_exchange_weak(old, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Verdict::Pass,
                Err(current) => old = current,
            }
        }
    }
}

/// The prefix of `ip` as hash input: family octet, length, masked address.
fn prefix_key(ip: IpAddr, len: u8) -> [u8; 18] {
    let mut k = [0u8; 18];
    let (family, octets, max): (u8, [u8; 16], u8) = match ip {
        IpAddr::V4(a) => {
            let mut o = [0u8; 16];
            o[..4].copy_from_slice(&a.octets());
            (4, o, 32)
        }
        IpAddr::V6(a) => (6, a.octets(), 128),
    };
    let len = len.min(max);
    k[0] = family;
    k[1] = len;
    for (i, b) in octets.iter().enumerate() {
        let bits = usize::from(len).saturating_sub(i * 8).min(8);
        let mask = if bits == 0 { 0 } else { 0xffu8 << (8 - bits) };
        k[2 + i] = b & mask;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(rate: u32, slip: u32) -> RrlSettings {
        RrlSettings {
            responses_per_second: rate,
            slip,
            ipv4_prefix: 24,
            ipv6_prefix: 56,
            exempt: vec![
                ("10.0.0.0".parse().unwrap(), 8),
                ("::1".parse().unwrap(), 128),
            ],
            table_size: 1024,
        }
    }

    /// Sends `n` responses to `ip` at `now`, counting the verdicts as a
    /// worker does (its own limited count drives the slip).
    fn flood(l: &RateLimiter, ip: &str, now: u64, n: u64, limited: &mut u64) -> [u64; 3] {
        let ip: IpAddr = ip.parse().unwrap();
        let mut counts = [0u64; 3];
        for _ in 0..n {
            match l.check(ip, now, *limited) {
                Verdict::Pass => counts[0] += 1,
                Verdict::Drop => {
                    *limited += 1;
                    counts[1] += 1
                }
                Verdict::Slip => {
                    *limited += 1;
                    counts[2] += 1
                }
            }
        }
        counts
    }

    #[test]
    fn a_burst_of_one_second_then_the_rate() {
        let l = RateLimiter::new(settings(5, 2), [7; 16]);
        let mut limited = 0;
        let t0 = 10_000_000;
        // 100 at one instant: 5 pass, the other 95 limited, half slipped.
        assert_eq!(flood(&l, "192.0.2.1", t0, 100, &mut limited), [5, 48, 47]);
        // The whole /24 shares the bucket.
        assert_eq!(flood(&l, "192.0.2.200", t0, 10, &mut limited)[0], 0);
        // Another /24 has its own.
        assert_eq!(flood(&l, "192.0.3.1", t0, 10, &mut limited)[0], 5);
        // One interval (200 ms) later, one more; a second later, five.
        assert_eq!(flood(&l, "192.0.2.1", t0 + 200_000, 10, &mut limited)[0], 1);
        assert_eq!(
            flood(&l, "192.0.2.1", t0 + 1_200_000, 10, &mut limited)[0],
            5
        );
        // 10 simulated seconds at 1,000 queries per second: the burst of 5,
        // then one every 200 ms (at 0.2 s, 0.4 s, ... 9.8 s).
        let mut passed = 0;
        for ms in 0..10_000u64 {
            passed += flood(&l, "198.51.100.9", 50_000_000 + ms * 1000, 1, &mut limited)[0];
        }
        assert_eq!(passed, 5 + 49);
    }

    #[test]
    fn slip_zero_drops_all_and_one_truncates_all() {
        let mut limited = 0;
        let l = RateLimiter::new(settings(5, 0), [1; 16]);
        assert_eq!(flood(&l, "192.0.2.1", 1, 50, &mut limited), [5, 45, 0]);
        let mut limited = 0;
        let l = RateLimiter::new(settings(5, 1), [1; 16]);
        assert_eq!(flood(&l, "192.0.2.1", 1, 50, &mut limited), [5, 0, 45]);
        let mut limited = 0;
        let l = RateLimiter::new(settings(5, 3), [1; 16]);
        assert_eq!(flood(&l, "192.0.2.1", 1, 50, &mut limited), [5, 30, 15]);
    }

    #[test]
    fn exempt_ranges_and_ipv6_prefixes() {
        let l = RateLimiter::new(settings(5, 2), [3; 16]);
        let mut limited = 0;
        assert_eq!(flood(&l, "10.1.2.3", 1, 100, &mut limited)[0], 100);
        assert_eq!(flood(&l, "::1", 1, 100, &mut limited)[0], 100);
        // 2001:db8:0:ff::/56 is one bucket; 2001:db8:0:100:: is the next /56.
        assert_eq!(flood(&l, "2001:db8:0:ff::1", 1, 20, &mut limited)[0], 5);
        assert_eq!(flood(&l, "2001:db8:0:1::9", 1, 20, &mut limited)[0], 0);
        assert_eq!(flood(&l, "2001:db8:0:100::1", 1, 20, &mut limited)[0], 5);
    }

    #[test]
    fn the_table_stays_its_size_under_many_prefixes() {
        let l = RateLimiter::new(settings(5, 2), [5; 16]);
        assert_eq!(l.buckets.len(), 1024);
        let mut limited = 0;
        // 100,000 distinct /24s: the table does not grow, and a prefix
        // still gets its allowance after others took buckets over.
        for i in 0..100_000u32 {
            let ip = IpAddr::from((0x0b00_0000u32 + (i << 8)).to_be_bytes());
            l.check(ip, 1, limited);
        }
        assert_eq!(l.buckets.len(), 1024);
        assert_eq!(flood(&l, "192.0.2.1", 2, 10, &mut limited)[0], 5);
        // The bucket hash is keyed: two keys place prefixes differently.
        let a = RateLimiter::new(settings(5, 2), [1; 16]);
        let b = RateLimiter::new(settings(5, 2), [2; 16]);
        let place = |l: &RateLimiter, i: u32| {
            let ip = IpAddr::from((0xc000_0000u32 + (i << 8)).to_be_bytes());
            let len = l.settings.ipv4_prefix;
            siphash24(&l.key, &prefix_key(ip, len)) & l.mask
        };
        assert!((0..64).any(|i| place(&a, i) != place(&b, i)));
    }

    #[test]
    fn prefix_keys_mask_the_host_bits() {
        let k = |ip: &str, len| prefix_key(ip.parse().unwrap(), len);
        assert_eq!(k("192.0.2.1", 24), k("192.0.2.254", 24));
        assert_ne!(k("192.0.2.1", 24), k("192.0.3.1", 24));
        assert_eq!(k("192.0.2.1", 20), k("192.0.15.1", 20));
        assert_eq!(k("192.0.2.1", 0), k("8.8.8.8", 0));
        assert_ne!(k("0.0.0.0", 0), k("::", 0), "families differ");
    }
}
