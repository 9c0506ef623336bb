//! Selection methods over the eligible bindings of one vserver.
//!
//! Each method takes the bindings and an `eligible` predicate (UP and of the
//! queried address family) and returns the index of the chosen binding.

use std::net::IpAddr;

use crate::model::Binding;

/// Smooth weighted round robin along a precomputed schedule.
///
/// `turn` counts the vserver's answers so far; the answer is the
/// `turn`-th eligible slot of the schedule (cyclically). Counting only
/// eligible slots keeps the shares exact when some services are down: a
/// DOWN service's share is spread over the others rather than handed to
/// its neighbour. When the schedule is empty (total weight too large to
/// tabulate), a weighted random pick from `random` is used instead.
pub fn weighted_round_robin(
    bindings: &[Binding],
    schedule: &[u32],
    turn: u64,
    random: u64,
    eligible: impl Fn(usize) -> bool,
) -> Option<usize> {
    if schedule.is_empty() {
        return weighted_random(bindings, random, eligible);
    }
    let open = schedule.iter().filter(|b| eligible(**b as usize)).count() as u64;
    if open == 0 {
        return None;
    }
    let target = (turn % open) as usize;
    schedule
        .iter()
        .map(|b| *b as usize)
        .filter(|b| eligible(*b))
        .nth(target)
}

/// A weighted random pick among the eligible bindings.
pub fn weighted_random(
    bindings: &[Binding],
    random: u64,
    eligible: impl Fn(usize) -> bool,
) -> Option<usize> {
    let total: u64 = (0..bindings.len())
        .filter(|i| eligible(*i))
        .map(|i| u64::from(bindings[i].weight.max(1)))
        .sum();
    if total == 0 {
        return None;
    }
    let mut target = random % total;
    for (i, b) in bindings.iter().enumerate() {
        if !eligible(i) {
            continue;
        }
        let w = u64::from(b.weight.max(1));
        if target < w {
            return Some(i);
        }
        target -= w;
    }
    None
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
        .max_by_key(|i| mix(key ^ mix(u64::from(bindings[*i].service) + 1)))
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

    fn b(service: u32, weight: u32) -> Binding {
        Binding { service, weight }
    }

    #[test]
    fn round_robin_skips_down_without_doubling_a_neighbour() {
        let bindings = [b(0, 1), b(1, 1), b(2, 1), b(3, 1)];
        let schedule = [0, 1, 2, 3];
        let picks: Vec<_> = (0..6)
            .map(|turn| weighted_round_robin(&bindings, &schedule, turn, 0, |i| i != 1).unwrap())
            .collect();
        assert_eq!(picks, vec![0, 2, 3, 0, 2, 3]);
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
