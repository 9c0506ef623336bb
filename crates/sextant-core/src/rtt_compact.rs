//! The IPv4 rows of the RTT table in a compact layout: a 16-byte slot per
//! LDNS group (its address, then one 16-bit RTT per site, in units of
//! [`UNIT_US`]), four slots to a cache line, in a table at most three
//! quarters full.
//!
//! Why: with queries spread over many resolvers each RTT lookup is one
//! random read, and whether that read waits for memory depends on the
//! table's size against the cache. At 100,000 rows × 3 sites the wide
//! layout (key, index, mark and 32-bit RTTs, at most half full) is 10 MB;
//! this one is about 2 MB (docs/benchmarks.md, `rtt_ratio`). Query marks and
//! the rows' dense indices, which the DNS path does not read per lookup,
//! sit in arrays of their own.

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, Ordering};

/// Sites one slot has room for (the wide layout serves more).
pub const COMPACT_SITES: usize = 6;

/// The RTT unit: 10 µs, so that a 16-bit cell reaches 655 ms; longer RTTs
/// read as 655.34 ms (they still rank after every shorter one).
pub const UNIT_US: u32 = 10;

/// A cell without a usable RTT.
const UNKNOWN: u32 = 0xFFFF;

/// One slot: word 0 the address (0: empty; 0.0.0.0 is never an LDNS), words
/// 1-3 two RTTs each.
#[repr(C, align(16))]
#[derive(Debug, Default)]
pub struct Slot([AtomicU32; 4]);

impl Slot {
    /// The RTT from `site`, in µs, if usable.
    #[inline]
    pub fn rtt_us(&self, site: usize) -> Option<u32> {
        let word = self.0.get(1 + site / 2)?.load(Ordering::Relaxed);
        let v = (word >> ((site % 2) * 16)) & 0xFFFF;
        (v != UNKNOWN).then_some(v * UNIT_US)
    }
}

#[derive(Debug, Default)]
pub struct Compact {
    slots: Box<[Slot]>,
    /// Per slot: the query mark.
    marks: Box<[AtomicU32]>,
    /// Per slot: the row's index in the table's `keys`.
    index: Box<[u32]>,
}

fn start(key: u32, capacity: usize) -> usize {
    let h = u64::from(key).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    ((u128::from(h) * capacity as u128) >> 64) as usize
}

impl Compact {
    /// A table of `rows` (address, dense index, RTTs in µs per site, `None`
    /// unknown), `rows` having distinct non-zero addresses.
    pub fn build(rows: &[(Ipv4Addr, u32, &[Option<u32>])]) -> Compact {
        if rows.is_empty() {
            return Compact::default();
        }
        let capacity = rows.len() + rows.len() / 3 + 1;
        let slots: Box<[Slot]> = (0..capacity).map(|_| Slot::default()).collect();
        let mut index = vec![u32::MAX; capacity];
        for (addr, i, rtts) in rows {
            let key = u32::from(*addr);
            let mut s = start(key, capacity);
            while slots[s].0[0].load(Ordering::Relaxed) != 0 {
                s = if s + 1 == capacity { 0 } else { s + 1 };
            }
            let slot = &slots[s].0;
            slot[0].store(key, Ordering::Relaxed);
            for w in 0..3 {
                let half = |site: usize| {
                    rtts.get(site)
                        .copied()
                        .flatten()
                        .map_or(UNKNOWN, |us| (us / UNIT_US).min(UNKNOWN - 1))
                };
                slot[1 + w].store(half(2 * w) | half(2 * w + 1) << 16, Ordering::Relaxed);
            }
            index[s] = *i;
        }
        Compact {
            slots,
            marks: (0..capacity).map(|_| AtomicU32::new(0)).collect(),
            index: index.into(),
        }
    }

    /// The slot of an address, if it has a row.
    #[inline]
    pub fn find(&self, addr: Ipv4Addr) -> Option<u32> {
        let key = u32::from(addr);
        let capacity = self.slots.len();
        if capacity == 0 || key == 0 {
            return None;
        }
        let mut s = start(key, capacity);
        // At most three quarters full: an empty slot ends every probe.
        for _ in 0..capacity {
            match self.slots[s].0[0].load(Ordering::Relaxed) {
                0 => return None,
                k if k == key => return Some(s as u32),
                _ => s = if s + 1 == capacity { 0 } else { s + 1 },
            }
        }
        None
    }

    /// Starts loading the slot (and query mark) where the probe for `addr`
    /// begins; see [`RttTable::prefetch`](crate::RttTable::prefetch).
    #[inline]
    pub fn prefetch(&self, addr: Ipv4Addr) {
        let s = start(u32::from(addr), self.slots.len());
        if let (Some(slot), Some(mark)) = (self.slots.get(s), self.marks.get(s)) {
            sextant_hint::prefetch(slot);
            sextant_hint::prefetch(mark);
        }
    }

    pub fn slot(&self, s: u32) -> Option<&Slot> {
        self.slots.get(s as usize)
    }

    /// The dense index of slot `s`'s row.
    pub fn index(&self, s: u32) -> Option<usize> {
        self.index
            .get(s as usize)
            .filter(|i| **i != u32::MAX)
            .map(|i| *i as usize)
    }

    pub fn mark(&self, s: u32) {
        if let Some(m) = self.marks.get(s as usize)
            && m.load(Ordering::Relaxed) == 0
        {
            m.store(1, Ordering::Relaxed);
        }
    }

    /// The dense indices of the rows marked since the last call, clearing
    /// the marks.
    pub fn take_marked(&self) -> impl Iterator<Item = usize> + '_ {
        self.marks
            .iter()
            .enumerate()
            // Read first: most rows are not marked, and a read writes no
            // cache line the DNS workers share.
            .filter(|(_, m)| m.load(Ordering::Relaxed) != 0 && m.swap(0, Ordering::Relaxed) != 0)
            .filter_map(|(s, _)| self.index(s as u32))
    }
}
