//! Selection methods over the eligible bindings of one vserver.
//!
//! Each method takes the bindings and an `eligible` predicate (UP and of the
//! queried address family) and returns the index of the chosen binding.

use std::net::IpAddr;

use crate::model::Binding;

/// Weighted round robin over the eligible bindings of a vserver.
///
/// `turn` counts the vserver's answers so far. See [`nth_weighted`]: the
/// cost depends on the number of bindings only, never on their weights or
/// on how many are down, and a DOWN service's share is spread over the
/// others in proportion to their weights.
pub fn weighted_round_robin(
    bindings: &[Binding],
    turn: u64,
    eligible: impl Fn(usize) -> bool,
) -> Option<usize> {
    nth_weighted(bindings.len(), |i| bindings[i].weight, turn, eligible)
}

/// Slot `turn mod W` (W: the eligible items' total weight) of the
/// Sainte-Laguë order of the eligible items, without tabulating it.
///
/// Item `i` of weight `w` owns the `w` slots whose keys are
/// `(2k + 1) / 2w` for `k = 0..w`; the order is by key, then by index. Every
/// `W` consecutive turns therefore give item `i` exactly `w` answers, spread
/// as evenly as the weights allow (weights 3 and 1 give `0 0 1 0`; equal
/// weights take turns in index order), whichever items are eligible.
///
/// The slot is found arithmetically: counting each item's keys below
/// `(2p + 1) / 2W` lands within a few slots of position `p` (usually on it
/// or next to it), and the remaining steps compare keys. No table, so
/// nothing to rebuild when weights or health change, no memory that grows
/// with the weights, and a cost that depends on the number of items only.
pub fn nth_weighted(
    len: usize,
    weight: impl Fn(usize) -> u32,
    turn: u64,
    eligible: impl Fn(usize) -> bool,
) -> Option<usize> {
    let w = |i: usize| u64::from(weight(i).max(1));
    let mut total = 0u64;
    let mut count = 0usize;
    let mut uniform = Some(0u64);
    for i in (0..len).filter(|i| eligible(*i)) {
        let wi = w(i);
        total += wi;
        count += 1;
        uniform = match uniform {
            Some(0) => Some(wi),
            Some(u) if u == wi => Some(u),
            _ => None,
        };
    }
    if total == 0 {
        return None;
    }
    if uniform.is_some() {
        // Equal weights: the order is the index order.
        let target = (turn % count as u64) as usize;
        return (0..len).filter(|i| eligible(*i)).nth(target);
    }
    let p = turn % total;
    let x = Key {
        odd: 2 * p + 1,
        weight: total,
        item: usize::MAX,
    };
    if count <= SLOTS {
        nth_by_slots(len, &w, &eligible, x, p)
    } else {
        nth_by_passes(len, &w, &eligible, x, p)
    }
}

/// How many eligible items [`nth_weighted`] keeps on the stack.
const SLOTS: usize = 64;

/// One eligible item and how many of its slots lie below the search point.
#[derive(Debug, Clone, Copy, Default)]
struct Slots {
    item: u32,
    weight: u32,
    below: u32,
}

impl Slots {
    fn key(&self, k: u32) -> Key {
        Key::of(self.item as usize, u64::from(k), u64::from(self.weight))
    }
}

/// [`nth_weighted`] for at most [`SLOTS`] eligible items: one pass counts,
/// then each step moves one item's boundary.
fn nth_by_slots(
    len: usize,
    w: &impl Fn(usize) -> u64,
    eligible: &impl Fn(usize) -> bool,
    x: Key,
    p: u64,
) -> Option<usize> {
    let mut slots = [Slots::default(); SLOTS];
    let mut kept = 0;
    let mut below = 0u64;
    let div = Divisor::new(x.weight);
    for i in (0..len).filter(|i| eligible(*i)) {
        let wi = w(i);
        let n = div.keys_below(x.odd, wi);
        below += n;
        *slots.get_mut(kept)? = Slots {
            item: i as u32,
            weight: wi as u32,
            below: n as u32,
        };
        kept += 1;
    }
    let slots = &mut slots[..kept];
    if below > p {
        // Slot p is the (below - 1 - p)-th key below x, counting down.
        let mut steps = below - 1 - p;
        loop {
            let (j, _) = slots
                .iter()
                .enumerate()
                .filter(|(_, s)| s.below > 0)
                .map(|(j, s)| (j, s.key(s.below - 1)))
                .reduce(|a, b| if a.1.before(&b.1) { b } else { a })?;
            if steps == 0 {
                return Some(slots[j].item as usize);
            }
            slots[j].below -= 1;
            steps -= 1;
        }
    } else {
        // Slot p is the (p - below)-th key from x up.
        let mut steps = p - below;
        loop {
            let (j, _) = slots
                .iter()
                .enumerate()
                .filter(|(_, s)| s.below < s.weight)
                .map(|(j, s)| (j, s.key(s.below)))
                .reduce(|a, b| if b.1.before(&a.1) { b } else { a })?;
            if steps == 0 {
                return Some(slots[j].item as usize);
            }
            slots[j].below += 1;
            steps -= 1;
        }
    }
}

/// [`nth_weighted`] for many eligible items, keeping nothing: each step
/// is a pass that finds every item's nearest slot beyond the last one.
fn nth_by_passes(
    len: usize,
    w: &impl Fn(usize) -> u64,
    eligible: &impl Fn(usize) -> bool,
    x: Key,
    p: u64,
) -> Option<usize> {
    let mut below = 0u64;
    let mut last_below: Option<Key> = None;
    let mut first_above: Option<Key> = None;
    for i in (0..len).filter(|i| eligible(*i)) {
        let wi = w(i);
        let n = keys_below(x.odd, x.weight, wi, false);
        below += n;
        if n > 0 {
            let k = Key::of(i, n - 1, wi);
            if last_below.is_none_or(|b| b.before(&k)) {
                last_below = Some(k);
            }
        }
        if n < wi {
            let k = Key::of(i, n, wi);
            if first_above.is_none_or(|a| k.before(&a)) {
                first_above = Some(k);
            }
        }
    }
    if below > p {
        let mut at = last_below?;
        for _ in 0..below - 1 - p {
            at = (0..len)
                .filter(|i| eligible(*i))
                .filter_map(|i| {
                    let n = keys_below(at.odd, at.weight, w(i), i < at.item);
                    (n > 0).then(|| Key::of(i, n - 1, w(i)))
                })
                .reduce(|a, b| if a.before(&b) { b } else { a })?;
        }
        Some(at.item)
    } else {
        let mut at = first_above?;
        for _ in 0..p - below {
            at = (0..len)
                .filter(|i| eligible(*i))
                .filter_map(|i| {
                    let n = keys_below(at.odd, at.weight, w(i), i <= at.item);
                    (n < w(i)).then(|| Key::of(i, n, w(i)))
                })
                .reduce(|a, b| if b.before(&a) { b } else { a })?;
        }
        Some(at.item)
    }
}

/// One slot of the Sainte-Laguë order: key `odd / 2·weight` of `item`.
#[derive(Debug, Clone, Copy)]
struct Key {
    odd: u64,
    weight: u64,
    item: usize,
}

impl Key {
    fn of(item: usize, k: u64, weight: u64) -> Key {
        Key {
            odd: 2 * k + 1,
            weight,
            item,
        }
    }

    /// Whether `self` comes before `other` (by key, then by item).
    #[inline]
    fn before(&self, other: &Key) -> bool {
        let a = u128::from(self.odd) * u128::from(other.weight);
        let b = u128::from(other.odd) * u128::from(self.weight);
        a < b || (a == b && self.item < other.item)
    }
}

/// How many keys `(2k + 1) / 2w` (`k < w`) lie below `odd / 2·weight` (or
/// at it, when `ties` is set): the odd numbers `o` with `o·weight < odd·w`.
fn keys_below(odd: u64, weight: u64, w: u64, ties: bool) -> u64 {
    let target = u128::from(odd) * u128::from(w) - u128::from(!ties);
    let m = target / u128::from(weight);
    (m.div_ceil(2) as u64).min(w)
}

/// Division by one divisor, many times over: a multiply by its reciprocal
/// and at most two corrections instead of a division per item.
struct Divisor {
    d: u64,
    reciprocal: u64,
}

impl Divisor {
    fn new(d: u64) -> Self {
        Divisor {
            d,
            reciprocal: u64::MAX / d,
        }
    }

    fn quotient(&self, n: u64) -> u64 {
        let mut q = ((u128::from(n) * u128::from(self.reciprocal)) >> 64) as u64;
        while u128::from(q + 1) * u128::from(self.d) <= u128::from(n) {
            q += 1;
        }
        q
    }

    /// [`keys_below`] with this divisor as `weight`, strictly below.
    #[inline]
    fn keys_below(&self, odd: u64, w: u64) -> u64 {
        match odd.checked_mul(w) {
            Some(target) => (self.quotient(target - 1).div_ceil(2)).min(w),
            None => keys_below(odd, self.d, w, false),
        }
    }
}

/// Rendezvous (highest random weight) hashing of a client key: a client
/// keeps its service while that service stays eligible, and only the clients
/// of a service that goes down move.
pub fn source_ip_hash(
    bindings: &[Binding],
    key: IpAddr,
    eligible: impl Fn(usize) -> bool,
) -> Option<usize> {
    let key = ip_key(key);
    (0..bindings.len())
        .filter(|i| eligible(*i))
        .max_by_key(|i| mix(key ^ mix(u64::from(bindings[*i].service.raw()) + 1)))
}

/// Keeps the first `prefix` bits of an address.
pub fn mask_ip(addr: IpAddr, v4_prefix: u8, v6_prefix: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let p = u32::from(v4_prefix.min(32));
            let bits = u32::from(a);
            let masked = if p == 0 {
                0
            } else {
                bits & (u32::MAX << (32 - p))
            };
            IpAddr::V4(masked.into())
        }
        IpAddr::V6(a) => {
            let p = u32::from(v6_prefix.min(128));
            let bits = u128::from(a);
            let masked = if p == 0 {
                0
            } else {
                bits & (u128::MAX << (128 - p))
            };
            IpAddr::V6(masked.into())
        }
    }
}

fn ip_key(addr: IpAddr) -> u64 {
    match addr {
        IpAddr::V4(a) => mix(u64::from(u32::from(a))),
        IpAddr::V6(a) => {
            let b = u128::from(a);
            mix((b >> 64) as u64) ^ mix(b as u64 ^ 0x9e37_79b9_7f4a_7c15)
        }
    }
}

/// SplitMix64 finaliser: a cheap, well-spread 64-bit mix.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ServiceId;

    fn b(service: u32, weight: u32) -> Binding {
        Binding {
            service: ServiceId::new(service),
            weight,
        }
    }

    #[test]
    fn round_robin_skips_down_without_doubling_a_neighbour() {
        let bindings = [b(0, 1), b(1, 1), b(2, 1), b(3, 1)];
        let picks: Vec<_> = (0..6)
            .map(|turn| weighted_round_robin(&bindings, turn, |i| i != 1).unwrap())
            .collect();
        assert_eq!(picks, vec![0, 2, 3, 0, 2, 3]);
    }

    /// The order spelled out: every slot's key, sorted by key then item.
    fn sorted_slots(weights: &[u32], eligible: impl Fn(usize) -> bool) -> Vec<usize> {
        let mut slots: Vec<(u64, u64, usize)> = Vec::new();
        for (i, w) in weights.iter().enumerate().filter(|(i, _)| eligible(*i)) {
            let w = u64::from((*w).max(1));
            slots.extend((0..w).map(|k| (2 * k + 1, w, i)));
        }
        slots.sort_by(|a, b| {
            (u128::from(a.0) * u128::from(b.1))
                .cmp(&(u128::from(b.0) * u128::from(a.1)))
                .then(a.2.cmp(&b.2))
        });
        slots.into_iter().map(|s| s.2).collect()
    }

    fn picks(
        weights: &[u32],
        turns: std::ops::Range<u64>,
        eligible: impl Fn(usize) -> bool + Copy,
    ) -> Vec<usize> {
        turns
            .map(|t| nth_weighted(weights.len(), |i| weights[i], t, eligible).unwrap())
            .collect()
    }

    #[test]
    fn weights_spread_as_evenly_as_they_allow() {
        assert_eq!(picks(&[5, 1, 1], 0..7, |_| true), vec![0, 0, 0, 1, 2, 0, 0]);
        assert_eq!(picks(&[3, 1], 0..4, |_| true), vec![0, 0, 1, 0]);
        assert_eq!(picks(&[1, 1, 1], 0..6, |_| true), vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(
            picks(&[2, 2, 4], 0..8, |_| true),
            vec![2, 0, 1, 2, 2, 0, 1, 2]
        );
    }

    #[test]
    fn every_slot_is_the_sorted_order_whatever_the_weights_and_health() {
        // A deterministic spread of weight sets, with every subset of the
        // first items down, against the order written out and sorted.
        let mut seed = 7u64;
        for case in 0..300 {
            seed = mix(seed);
            // Mostly small vservers; every tenth one beyond the stack's 64.
            let n = if case % 10 == 9 {
                65 + (seed % 40) as usize
            } else {
                2 + (seed % 9) as usize
            };
            let weights: Vec<u32> = (0..n)
                .map(|i| {
                    let r = mix(seed ^ i as u64);
                    match case % 3 {
                        0 => 1 + (r % 100) as u32,
                        1 => 1 + (r % 7) as u32,
                        _ => [1, 100, 37, 64, 99][(r % 5) as usize],
                    }
                })
                .collect();
            let down = mix(seed ^ 0xdead);
            let eligible = |i: usize| down >> (i % 64) & 1 == 0 || i.is_multiple_of(7);
            let expected = sorted_slots(&weights, eligible);
            if expected.is_empty() {
                assert_eq!(nth_weighted(n, |i| weights[i], 0, eligible), None);
                continue;
            }
            let total = expected.len() as u64;
            // Two periods, starting anywhere: the order repeats exactly.
            let start = mix(seed) % 1_000_000;
            for t in start..start + 2 * total {
                let got = nth_weighted(n, |i| weights[i], t, eligible);
                assert_eq!(
                    got,
                    Some(expected[(t % total) as usize]),
                    "{weights:?} down {down:b} turn {t}"
                );
            }
        }
    }

    #[test]
    fn heavy_weights_keep_exact_shares_in_every_window() {
        // Weights far beyond what a table could hold, one item down.
        let weights = [1_000_000u32, 999_983, 3, 250_000, 1];
        let total: u64 = 1_000_000 + 250_000 + 3 + 1;
        let eligible = |i: usize| i != 1;
        let mut counts = [0u64; 5];
        for t in 0..total {
            counts[nth_weighted(5, |i| weights[i], t, eligible).unwrap()] += 1;
        }
        assert_eq!(counts, [1_000_000, 0, 3, 250_000, 1]);
    }

    #[test]
    fn a_down_service_share_goes_to_the_others_by_weight() {
        let bindings = [b(0, 60), b(1, 40), b(2, 100)];
        let mut counts = [0; 3];
        for turn in 0..100 {
            counts[weighted_round_robin(&bindings, turn, |i| i != 2).unwrap()] += 1;
        }
        assert_eq!(counts, [60, 40, 0]);
        assert_eq!(weighted_round_robin(&bindings, 5, |_| false), None);
    }

    #[test]
    fn hash_is_stable_when_another_service_fails() {
        let bindings = [b(0, 1), b(1, 1), b(2, 1), b(3, 1)];
        for last in 0..=255u8 {
            let ip = IpAddr::from([10, 0, 0, last]);
            let before = source_ip_hash(&bindings, ip, |_| true).unwrap();
            let down = (before + 1) % 4;
            let after = source_ip_hash(&bindings, ip, |i| i != down).unwrap();
            assert_eq!(before, after);
        }
    }

    #[test]
    fn masks() {
        assert_eq!(
            mask_ip("10.1.2.3".parse().unwrap(), 24, 64),
            "10.1.2.0".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            mask_ip("2001:db8::1".parse().unwrap(), 24, 32),
            "2001:db8::".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            mask_ip("10.1.2.3".parse().unwrap(), 0, 0),
            "0.0.0.0".parse::<IpAddr>().unwrap()
        );
    }
}
