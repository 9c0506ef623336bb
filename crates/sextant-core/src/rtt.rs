//! The LDNS round-trip-time table that the RTT method reads (seed 003).
//!
//! One row per LDNS group (the query's source address masked with
//! `-ldnsMask` / `-v6ldnsMaskLen`), one cell per site: the RTT from that
//! site to the LDNS, in microseconds, or unknown. The state engine builds a
//! new table when RTTs change and publishes it in the [`Snapshot`]; DNS
//! workers only look rows up and mark them queried (a relaxed atomic flag
//! per row, set only when it is not set yet, so a busy row is not a shared
//! cache line written per query). The edges sweep the flags to tell the
//! engine which LDNS are still in use (entries expire without queries).
//!
//! The lookup is a hand-written open-addressing table whose slot holds the
//! key, the per-site RTTs and the query mark side by side, so that one query
//! touches one slot (one or two cache lines) however large the table: with a
//! map from group to row and the RTTs in a separate array, a table of
//! 100,000 resolvers cost two cache misses per query, and the RTT answer
//! 2.3–3.7 times a weighted round robin one (docs/benchmarks.md).
//!
//! [`Snapshot`]: crate::Snapshot

use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::model::{LdnsProbe, SiteId};

/// One site's measurement of one LDNS, as the API shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RttCell {
    pub rtt: Duration,
    /// The probe that measured it (only known for this site's own samples
    /// and for peers that say).
    pub kind: Option<LdnsProbe>,
    /// When it was measured or received (the engine's clock, since the
    /// Unix epoch).
    pub at: Duration,
    /// The path's figures for datacenter mode's Client Based selection,
    /// when measured.
    pub path: Option<PathFigures>,
}

/// What one site's probes tell about its path to an LDNS (seed 002's
/// Client Based criteria).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathFigures {
    /// Router hops: the initial TTL the reply most likely started with
    /// (64, 128 or 255) less the TTL it arrived with.
    pub hops: u8,
    /// The reply's IP TTL as it arrived.
    pub ttl: u8,
    /// Share of the recent probe cycles that got no reply, per mille.
    pub loss_permille: u16,
    /// Mean opinion score × 100 (100 to 450), from latency, jitter and loss.
    pub mos_centi: u16,
}

/// About one row, for the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RttRowInfo {
    /// When this site last saw a query from the LDNS (engine clock).
    pub last_query: Option<Duration>,
    /// Whether another site still reports queries from it.
    pub peers_interested: bool,
}

/// How the LDNS table has been kept bounded, for the API and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LdnsStats {
    /// Entries made for new LDNS groups.
    pub created: u64,
    /// New groups refused because more than the allowed number per second
    /// arrived.
    pub rate_limited: u64,
    /// Entries removed to make room (the least recently queried).
    pub evicted: u64,
    /// Entries removed because no site queried them for the entry timeout.
    pub expired: u64,
    /// Sources never probed (unspecified, multicast, broadcast, this site's
    /// own address).
    pub ignored: u64,
}

/// The published RTT table.
#[derive(Debug, Default)]
pub struct RttTable {
    /// `capacity × stride` words: per slot [`TAG`] (0: empty), the key in
    /// four words, the row's index in `keys`, the query mark, then one RTT
    /// (µs, [`UNKNOWN`] where none is usable) per site. A row handle is
    /// its slot's number.
    slots: Box<[AtomicU32]>,
    /// `capacity - 1`; capacity is a power of two, at least twice the rows.
    mask: usize,
    stride: usize,
    keys: Box<[IpAddr]>,
    info: Box<[RttRowInfo]>,
    stats: LdnsStats,
    sites: usize,
    /// `keys.len() × sites` cells with their probe kind and age, for the API.
    cells: Box<[Option<RttCell>]>,
}

/// A cell without a usable RTT.
const UNKNOWN: u32 = u32::MAX;

/// Word offsets in a slot.
const TAG: usize = 0;
const KEY: usize = 1;
const INDEX: usize = 5;
const MARK: usize = 6;
const RTTS: usize = 7;

/// The tag and key words of an address.
fn key_words(ip: IpAddr) -> (u32, [u32; 4]) {
    match ip {
        IpAddr::V4(a) => (4, [u32::from(a), 0, 0, 0]),
        IpAddr::V6(a) => {
            let b = u128::from(a);
            (
                6,
                [
                    (b >> 96) as u32,
                    (b >> 64) as u32,
                    (b >> 32) as u32,
                    b as u32,
                ],
            )
        }
    }
}

fn slot_hash(tag: u32, key: &[u32; 4]) -> usize {
    let h = (u64::from(key[0]) << 32 | u64::from(key[1])) ^ u64::from(tag);
    let l = u64::from(key[2]) << 32 | u64::from(key[3]);
    let h = (h.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ l).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    (h ^ (h >> 29)) as usize
}

impl RttTable {
    /// An empty table for `sites` sites.
    pub fn builder(sites: usize) -> RttTableBuilder {
        RttTableBuilder {
            table: RttTable {
                sites,
                ..RttTable::default()
            },
            keys: Vec::new(),
            seen: Default::default(),
            info: Vec::new(),
            rtt_us: Vec::new(),
            cells: Vec::new(),
        }
    }

    fn word(&self, slot: usize, offset: usize) -> u32 {
        self.slots
            .get(slot * self.stride + offset)
            .map_or(0, |w| w.load(Ordering::Relaxed))
    }

    /// The row of an LDNS group (its masked address).
    pub fn row(&self, ldns: IpAddr) -> Option<u32> {
        if self.keys.is_empty() {
            return None;
        }
        let (tag, key) = key_words(ldns);
        let mut slot = slot_hash(tag, &key) & self.mask;
        // The table is at most half full, so an empty slot ends every probe.
        for _ in 0..=self.mask {
            let words = self
                .slots
                .get(slot * self.stride..slot * self.stride + INDEX)?;
            let word = |i: usize| words[i].load(Ordering::Relaxed);
            match word(TAG) {
                0 => return None,
                t if t == tag
                    && word(KEY) == key[0]
                    && word(KEY + 1) == key[1]
                    && word(KEY + 2) == key[2]
                    && word(KEY + 3) == key[3] =>
                {
                    return Some(slot as u32);
                }
                _ => slot = (slot + 1) & self.mask,
            }
        }
        None
    }

    /// The RTT from `site` to the LDNS of `row`, in µs, if usable.
    pub fn rtt_us(&self, row: u32, site: SiteId) -> Option<u32> {
        if site as usize >= self.sites {
            return None;
        }
        let rtt = self.word(row as usize, RTTS + site as usize);
        (self.word(row as usize, TAG) != 0 && rtt != UNKNOWN).then_some(rtt)
    }

    /// Every site's RTT to the LDNS of `row` ([`RttTable::rtt_us`] for a
    /// loop over sites, with the row found once).
    pub(crate) fn site_rtts(&self, row: u32) -> SiteRtts<'_> {
        let start = row as usize * self.stride + RTTS;
        SiteRtts(
            self.slots
                .get(start..start + self.sites)
                .filter(|_| self.word(row as usize, TAG) != 0)
                .unwrap_or(&[]),
        )
    }

    /// Site `site`'s measurement of the LDNS of `row` (its RTT, probe kind,
    /// age and path figures).
    pub fn cell(&self, row: u32, site: SiteId) -> Option<&RttCell> {
        if self.word(row as usize, TAG) == 0 || site as usize >= self.sites {
            return None;
        }
        let index = self.word(row as usize, INDEX) as usize;
        self.cells.get(index * self.sites + site as usize)?.as_ref()
    }

    /// Notes that the LDNS of `row` queried a domain that uses RTT.
    pub fn mark_queried(&self, row: u32) {
        if let Some(mark) = self.slots.get(row as usize * self.stride + MARK)
            && mark.load(Ordering::Relaxed) == 0
        {
            mark.store(1, Ordering::Relaxed);
        }
    }

    /// The LDNS groups queried since the last call (clearing their marks).
    pub fn take_queried(&self) -> Vec<IpAddr> {
        (0..=self.mask)
            .filter(|s| !self.slots.is_empty() && self.word(*s, TAG) != 0)
            // Read first: most rows are not marked, and a read writes no
            // cache line the DNS workers share.
            .filter(|s| {
                self.word(*s, MARK) != 0
                    && self.slots[*s * self.stride + MARK].swap(0, Ordering::Relaxed) != 0
            })
            .filter_map(|s| self.keys.get(self.word(s, INDEX) as usize).copied())
            .collect()
    }

    /// How many LDNS groups the table has.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Every row: the LDNS group, what is known of it, and each site's cell.
    pub fn rows(&self) -> impl Iterator<Item = (IpAddr, RttRowInfo, &[Option<RttCell>])> + '_ {
        self.keys.iter().enumerate().map(|(i, k)| {
            (
                *k,
                self.info.get(i).copied().unwrap_or_default(),
                &self.cells[i * self.sites..(i + 1) * self.sites],
            )
        })
    }

    /// How the table was kept bounded.
    pub fn stats(&self) -> LdnsStats {
        self.stats
    }
}

/// One row's RTTs, by site.
pub(crate) struct SiteRtts<'a>(&'a [AtomicU32]);

impl SiteRtts<'_> {
    /// The RTT from `site`, in µs, if usable.
    #[inline]
    pub fn get(&self, site: SiteId) -> Option<u32> {
        self.0
            .get(site as usize)
            .map(|w| w.load(Ordering::Relaxed))
            .filter(|r| *r != UNKNOWN)
    }
}

/// Builds an [`RttTable`] row by row.
#[derive(Debug)]
pub struct RttTableBuilder {
    table: RttTable,
    keys: Vec<IpAddr>,
    seen: std::collections::HashSet<IpAddr>,
    info: Vec<RttRowInfo>,
    rtt_us: Vec<u32>,
    cells: Vec<Option<RttCell>>,
}

impl RttTableBuilder {
    /// Adds the row of `ldns` (a masked address; a repeated one is
    /// ignored): `cells[site]` is each site's usable measurement. Missing
    /// trailing sites read as unknown.
    pub fn row(&mut self, ldns: IpAddr, cells: &[Option<RttCell>]) -> &mut Self {
        self.row_with(ldns, RttRowInfo::default(), cells)
    }

    /// [`RttTableBuilder::row`] with what the API shows about the row.
    pub fn row_with(
        &mut self,
        ldns: IpAddr,
        info: RttRowInfo,
        cells: &[Option<RttCell>],
    ) -> &mut Self {
        if !self.seen.insert(ldns) {
            return self;
        }
        self.keys.push(ldns);
        self.info.push(info);
        for site in 0..self.table.sites {
            let cell = cells.get(site).copied().flatten();
            self.rtt_us.push(cell.map_or(UNKNOWN, |c| {
                u32::try_from(c.rtt.as_micros()).unwrap_or(UNKNOWN - 1)
            }));
            self.cells.push(cell);
        }
        self
    }

    /// The counters to publish with the table.
    pub fn stats(&mut self, stats: LdnsStats) -> &mut Self {
        self.table.stats = stats;
        self
    }

    /// Room for `rows` rows.
    pub fn reserve(&mut self, rows: usize) -> &mut Self {
        self.seen.reserve(rows);
        self.keys.reserve(rows);
        self.info.reserve(rows);
        self.rtt_us.reserve(rows * self.table.sites);
        self.cells.reserve(rows * self.table.sites);
        self
    }

    pub fn build(self) -> RttTable {
        let sites = self.table.sites;
        let stride = RTTS + sites;
        let capacity = (self.keys.len() * 2).next_power_of_two().max(2);
        let mut words = vec![0u32; capacity * stride];
        let mask = capacity - 1;
        for (index, ip) in self.keys.iter().enumerate() {
            let (tag, key) = key_words(*ip);
            let mut slot = slot_hash(tag, &key) & mask;
            while words[slot * stride + TAG] != 0 {
                slot = (slot + 1) & mask;
            }
            let w = &mut words[slot * stride..(slot + 1) * stride];
            w[TAG] = tag;
            w[KEY..KEY + 4].copy_from_slice(&key);
            w[INDEX] = index as u32;
            w[RTTS..].copy_from_slice(&self.rtt_us[index * sites..(index + 1) * sites]);
        }
        RttTable {
            slots: words.into_iter().map(AtomicU32::new).collect(),
            mask,
            stride,
            keys: self.keys.into(),
            info: self.info.into(),
            cells: self.cells.into(),
            ..self.table
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(ms: u64) -> Option<RttCell> {
        Some(RttCell {
            rtt: Duration::from_millis(ms),
            kind: Some(LdnsProbe::DnsUdp),
            at: Duration::ZERO,
            path: None,
        })
    }

    #[test]
    fn rows_cells_and_query_marks() {
        let a: IpAddr = "192.0.2.0".parse().expect("ip");
        let b: IpAddr = "2001:db8::".parse().expect("ip");
        let mut builder = RttTable::builder(3);
        builder
            .row(a, &[cell(10), None, cell(30)])
            .row(b, &[cell(5)]);
        let t = builder.build();
        let ra = t.row(a).expect("row a");
        let rb = t.row(b).expect("row b");
        assert_eq!(t.rtt_us(ra, 0), Some(10_000));
        assert_eq!(t.rtt_us(ra, 1), None);
        assert_eq!(t.rtt_us(ra, 2), Some(30_000));
        assert_eq!(t.rtt_us(rb, 0), Some(5_000));
        assert_eq!(t.rtt_us(rb, 2), None);
        assert_eq!(t.rtt_us(ra, 3), None, "no such site");
        assert_eq!(t.row("192.0.2.1".parse().expect("ip")), None);
        assert!(t.take_queried().is_empty());
        t.mark_queried(rb);
        t.mark_queried(rb);
        assert_eq!(t.take_queried(), vec![b]);
        assert!(t.take_queried().is_empty());
        assert_eq!(t.rows().count(), 2);
    }
}
