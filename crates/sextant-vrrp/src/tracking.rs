//! Health tracking (seed 004): the effective priority (EP) a node
//! advertises for a VIP, from its base priority (BP) and the tracked
//! objects on that VIP (N in all, k of them DOWN).

/// How the tracked objects change the effective priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Tracking {
    /// EP = BP, whatever the tracked objects say.
    #[default]
    None,
    /// EP = BP while every tracked object is UP, else 0.
    All,
    /// EP = BP while at least one tracked object is UP, else 0.
    One,
    /// EP = BP × (1 − k/N): BP with all UP, 0 with all DOWN.
    Progressive,
}

/// The effective priority for `base` with `down` of `total` tracked
/// objects DOWN.
///
/// PROGRESSIVE rounds BP × (N − k) / N *down*, so that any DOWN object
/// lowers the priority below a peer of equal BP, but never below 1 while
/// something is still UP: 0 means "give the VIP up" on the wire, which the
/// seed reserves for all DOWN. With nothing tracked (`total` 0) every mode
/// gives BP. `down` above `total` counts as all DOWN.
pub fn effective_priority(mode: Tracking, base: u8, total: usize, down: usize) -> u8 {
    let down = down.min(total);
    if total == 0 || down == 0 {
        return base;
    }
    match mode {
        Tracking::None => base,
        Tracking::All => 0,
        Tracking::One if down < total => base,
        Tracking::One => 0,
        Tracking::Progressive if down == total => 0,
        Tracking::Progressive => {
            let up = (total - down) as u128;
            let ep = u128::from(base) * up / total as u128;
            // ep < base ≤ 255, so the cast is exact.
            (ep as u8).max(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The seed's example: 101 on NS1, 99 on NS2, two vservers on the VIP
    /// at NS1 and one goes DOWN: NS1's EP must fall below 99.
    #[test]
    fn the_seed_example_hands_the_vip_to_ns2() {
        let ns2 = 99;
        for mode in [Tracking::All, Tracking::Progressive] {
            let ns1 = effective_priority(mode, 101, 2, 1);
            assert!(ns1 < ns2, "{mode:?}: {ns1}");
        }
        assert_eq!(effective_priority(Tracking::Progressive, 101, 2, 1), 50);
        assert_eq!(effective_priority(Tracking::None, 101, 2, 1), 101);
        assert_eq!(effective_priority(Tracking::One, 101, 2, 1), 101);
    }

    #[test]
    fn each_mode_as_the_seed_defines_it() {
        use Tracking::*;
        // (mode, N, k, EP for BP 200)
        let cases = [
            (None, 3, 3, 200),
            (All, 3, 0, 200),
            (All, 3, 1, 0),
            (One, 3, 2, 200),
            (One, 3, 3, 0),
            (Progressive, 4, 0, 200),
            (Progressive, 4, 1, 150),
            (Progressive, 3, 1, 133),
            (Progressive, 3, 2, 66),
            (Progressive, 4, 4, 0),
        ];
        for (mode, n, k, ep) in cases {
            assert_eq!(
                effective_priority(mode, 200, n, k),
                ep,
                "{mode:?} N={n} k={k}"
            );
        }
    }

    #[test]
    fn progressive_keeps_one_while_anything_is_up() {
        assert_eq!(effective_priority(Tracking::Progressive, 1, 3, 1), 1);
        assert_eq!(effective_priority(Tracking::Progressive, 2, 100, 99), 1);
        assert_eq!(effective_priority(Tracking::Progressive, 2, 100, 100), 0);
    }

    #[test]
    fn nothing_tracked_means_base() {
        for mode in [
            Tracking::None,
            Tracking::All,
            Tracking::One,
            Tracking::Progressive,
        ] {
            assert_eq!(effective_priority(mode, 77, 0, 0), 77);
            assert_eq!(effective_priority(mode, 77, 0, 5), 77);
        }
    }

    proptest! {
        /// EP never exceeds BP, more DOWN never raises it, and it is 0
        /// exactly when the mode's condition for giving up holds.
        #[test]
        fn monotone_and_bounded(base in 1u8..=254, total in 1usize..50, a in 0usize..60, b in 0usize..60) {
            for mode in [Tracking::None, Tracking::All, Tracking::One, Tracking::Progressive] {
                let (lo, hi) = (a.min(b), a.max(b));
                let ep_lo = effective_priority(mode, base, total, lo);
                let ep_hi = effective_priority(mode, base, total, hi);
                prop_assert!(ep_lo <= base);
                prop_assert!(ep_hi <= ep_lo);
                let all_down = hi >= total;
                let zero = match mode {
                    Tracking::None => false,
                    Tracking::All => hi > 0,
                    Tracking::One | Tracking::Progressive => all_down,
                };
                prop_assert_eq!(ep_hi == 0, zero, "{:?} N={} k={}", mode, total, hi);
            }
        }
    }
}
