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
//! key and the per-site RTTs side by side, so that one query touches one
//! slot however large the table: with a map from group to row and the RTTs
//! in a separate array, a table of 100,000 resolvers cost two cache misses
//! per query, and the RTT answer 2.3–3.7 times a weighted round robin one.
//! IPv4 rows of a table of up to six sites live in a compact table of
//! 16-byte slots (16-bit RTTs in 10 µs units, `rtt_compact.rs`), 2 MB at
//! 100,000 rows against 10 MB for the wide slots that IPv6 rows use (key in
//! four words, row index, query mark, 32-bit RTTs); docs/benchmarks.md has
//! what each layout costs per query.
//!
//! [`Snapshot`]: crate::Snapshot

use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::model::{LdnsProbe, SiteId};
use crate::rtt_compact::{COMPACT_SITES, Compact, Slot};

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
    /// The wide slots, `capacity × stride` words: per slot [`TAG`] (0:
    /// empty), the key in four words, the row's index in `keys`, the query
    /// mark, then one RTT (µs, [`UNKNOWN`] where none is usable) per site.
    /// A row handle is its slot's number with [`WIDE`] set.
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
    /// The IPv4 rows, when there are at most [`COMPACT_SITES`] sites (the
    /// wide slots then hold only the IPv6 ones). Their row handles are
    /// their slot numbers; the wide slots' carry [`WIDE`].
    compact: Compact,
}

/// Marks a row handle as a wide slot's.
const WIDE: u32 = 1 << 31;

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

    /// Whether the IPv4 rows are in the compact table.
    fn compact_v4(&self) -> bool {
        self.sites <= COMPACT_SITES
    }

    /// The row of an LDNS group (its masked address).
    #[inline]
    pub fn row(&self, ldns: IpAddr) -> Option<u32> {
        match ldns {
            IpAddr::V4(a) if self.compact_v4() && !a.is_unspecified() => self.compact.find(a),
            _ => self.wide_row(ldns).map(|s| s | WIDE),
        }
    }

    /// Starts loading the cache lines that [`row`](Self::row) and
    /// [`mark_queried`](Self::mark_queried) will read for `ldns`. A server
    /// calls it for every source of a received batch before answering any,
    /// so that the misses of a table larger than the cache overlap.
    #[inline]
    pub fn prefetch(&self, ldns: IpAddr) {
        match ldns {
            IpAddr::V4(a) if self.compact_v4() && !a.is_unspecified() => self.compact.prefetch(a),
            _ if self.slots.is_empty() => {}
            _ => {
                let (tag, key) = key_words(ldns);
                let slot = slot_hash(tag, &key) & self.mask;
                if let Some(word) = self.slots.get(slot * self.stride) {
                    sextant_hint::prefetch(word);
                }
            }
        }
    }

    fn wide_row(&self, ldns: IpAddr) -> Option<u32> {
        if self.slots.is_empty() {
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
        self.site_rtts(row).get(site)
    }

    /// Every site's RTT to the LDNS of `row` ([`RttTable::rtt_us`] for a
    /// loop over sites, with the row found once).
    #[inline]
    pub(crate) fn site_rtts(&self, row: u32) -> SiteRtts<'_> {
        if row & WIDE == 0 {
            return match self.compact.slot(row) {
                Some(slot) => SiteRtts::Compact(slot, self.sites),
                None => SiteRtts::Wide(&[]),
            };
        }
        let slot = (row & !WIDE) as usize;
        let start = slot * self.stride + RTTS;
        SiteRtts::Wide(
            self.slots
                .get(start..start + self.sites)
                .filter(|_| self.word(slot, TAG) != 0)
                .unwrap_or(&[]),
        )
    }

    /// The dense index of the row behind a handle.
    fn index_of(&self, row: u32) -> Option<usize> {
        if row & WIDE == 0 {
            return self.compact.index(row);
        }
        let slot = (row & !WIDE) as usize;
        (self.word(slot, TAG) != 0).then(|| self.word(slot, INDEX) as usize)
    }

    /// Site `site`'s measurement of the LDNS of `row` (its RTT, probe kind,
    /// age and path figures).
    pub fn cell(&self, row: u32, site: SiteId) -> Option<&RttCell> {
        if site.index() >= self.sites {
            return None;
        }
        let index = self.index_of(row)?;
        self.cells.get(index * self.sites + site.index())?.as_ref()
    }

    /// Notes that the LDNS of `row` queried a domain that uses RTT.
    pub fn mark_queried(&self, row: u32) {
        if row & WIDE == 0 {
            return self.compact.mark(row);
        }
        let slot = (row & !WIDE) as usize;
        if let Some(mark) = self.slots.get(slot * self.stride + MARK)
            && mark.load(Ordering::Relaxed) == 0
        {
            mark.store(1, Ordering::Relaxed);
        }
    }

    /// The LDNS groups queried since the last call (clearing their marks).
    pub fn take_queried(&self) -> Vec<IpAddr> {
        let wide = (0..self.slots.len() / self.stride.max(1))
            .filter(|s| self.word(*s, TAG) != 0)
            // Read first: most rows are not marked, and a read writes no
            // cache line the DNS workers share.
            .filter(|s| {
                self.word(*s, MARK) != 0
                    && self.slots[*s * self.stride + MARK].swap(0, Ordering::Relaxed) != 0
            })
            .map(|s| self.word(s, INDEX) as usize);
        wide.chain(self.compact.take_marked())
            .filter_map(|i| self.keys.get(i).copied())
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
pub(crate) enum SiteRtts<'a> {
    Wide(&'a [AtomicU32]),
    /// A compact slot and the number of sites.
    Compact(&'a Slot, usize),
}

impl SiteRtts<'_> {
    /// The RTT from `site`, in µs, if usable.
    #[inline]
    pub fn get(&self, site: SiteId) -> Option<u32> {
        match self {
            SiteRtts::Wide(words) => words
                .get(site.index())
                .map(|w| w.load(Ordering::Relaxed))
                .filter(|r| *r != UNKNOWN),
            SiteRtts::Compact(slot, sites) if site.index() < *sites => slot.rtt_us(site.index()),
            SiteRtts::Compact(..) => None,
        }
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
        // IPv4 rows go to the compact table when it has room for the sites.
        let compact_rows: Vec<(std::net::Ipv4Addr, u32, Vec<Option<u32>>)> =
            if sites <= COMPACT_SITES {
                self.keys
                    .iter()
                    .enumerate()
                    .filter_map(|(i, ip)| match ip {
                        IpAddr::V4(a) if !a.is_unspecified() => Some((*a, i as u32)),
                        _ => None,
                    })
                    .map(|(a, i)| {
                        let rtts = self.rtt_us[i as usize * sites..(i as usize + 1) * sites]
                            .iter()
                            .map(|r| (*r != UNKNOWN).then_some(*r))
                            .collect();
                        (a, i, rtts)
                    })
                    .collect()
            } else {
                Vec::new()
            };
        let compact = Compact::build(
            &compact_rows
                .iter()
                .map(|(a, i, r)| (*a, *i, r.as_slice()))
                .collect::<Vec<_>>(),
        );
        let in_compact = |ip: &IpAddr| {
            sites <= COMPACT_SITES && matches!(ip, IpAddr::V4(a) if !a.is_unspecified())
        };
        let wide_rows = self.keys.iter().filter(|ip| !in_compact(ip)).count();
        let capacity = if wide_rows == 0 {
            0
        } else {
            (wide_rows * 2).next_power_of_two().max(2)
        };
        let mut words = vec![0u32; capacity * stride];
        let mask = capacity.saturating_sub(1);
        for (index, ip) in self.keys.iter().enumerate() {
            if in_compact(ip) {
                continue;
            }
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
            compact,
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
        assert_eq!(t.rtt_us(ra, SiteId::new(0)), Some(10_000));
        assert_eq!(t.rtt_us(ra, SiteId::new(1)), None);
        assert_eq!(t.rtt_us(ra, SiteId::new(2)), Some(30_000));
        assert_eq!(t.rtt_us(rb, SiteId::new(0)), Some(5_000));
        assert_eq!(t.rtt_us(rb, SiteId::new(2)), None);
        assert_eq!(t.rtt_us(ra, SiteId::new(3)), None, "no such site");
        assert_eq!(t.row("192.0.2.1".parse().expect("ip")), None);
        assert!(t.take_queried().is_empty());
        t.mark_queried(rb);
        t.mark_queried(rb);
        assert_eq!(t.take_queried(), vec![b]);
        assert!(t.take_queried().is_empty());
        assert_eq!(t.rows().count(), 2);
    }

    /// A prefetch is only a hint: any address, on any table (empty,
    /// compact, wide), is fine and leaves the lookups as they were.
    #[test]
    fn prefetch_is_harmless_on_every_kind_of_table() {
        let v4: IpAddr = "198.51.100.0".parse().expect("ip");
        let v6: IpAddr = "2001:db8:1::".parse().expect("ip");
        let others: [IpAddr; 4] = [
            "0.0.0.0".parse().expect("ip"),
            "255.255.255.255".parse().expect("ip"),
            "::".parse().expect("ip"),
            "203.0.113.9".parse().expect("ip"),
        ];
        RttTable::builder(3).build().prefetch(v4);
        for sites in [3usize, 12] {
            let mut b = RttTable::builder(sites);
            b.row(v4, &[cell(10)]).row(v6, &[cell(20)]);
            let t = b.build();
            for ip in others.iter().chain([&v4, &v6]) {
                t.prefetch(*ip);
            }
            assert_eq!(
                t.row(v4).and_then(|r| t.rtt_us(r, SiteId::new(0))),
                Some(10_000)
            );
            assert_eq!(
                t.row(v6).and_then(|r| t.rtt_us(r, SiteId::new(0))),
                Some(20_000)
            );
            assert_eq!(t.row(others[3]), None);
        }
    }

    fn cell_us(us: u64) -> Option<RttCell> {
        Some(RttCell {
            rtt: Duration::from_micros(us),
            kind: None,
            at: Duration::ZERO,
            path: None,
        })
    }

    /// IPv4 rows of a table of up to six sites are compact (RTTs in 10 µs
    /// units, 655.34 ms at most); IPv6 rows, 0.0.0.0 and tables of more
    /// sites use the wide slots (µs). Both kinds of row are found, marked
    /// and described the same way.
    #[test]
    fn compact_and_wide_rows_answer_alike() {
        let v4: IpAddr = "198.51.100.0".parse().expect("ip");
        let v6: IpAddr = "2001:db8:1::".parse().expect("ip");
        let zero: IpAddr = "0.0.0.0".parse().expect("ip");
        for sites in [3usize, 6, 7, 12] {
            let mut b = RttTable::builder(sites);
            let mut cells = vec![None; sites];
            cells[0] = cell_us(12_345);
            cells[sites - 1] = cell_us(900_000);
            for ip in [v4, v6, zero] {
                b.row(ip, &cells);
            }
            let t = b.build();
            let compact = sites <= COMPACT_SITES;
            for ip in [v4, v6, zero] {
                let row = t
                    .row(ip)
                    .unwrap_or_else(|| panic!("{sites} sites: no row {ip}"));
                let small = if compact && ip == v4 { 12_340 } else { 12_345 };
                let big = if compact && ip == v4 {
                    655_340
                } else {
                    900_000
                };
                assert_eq!(
                    t.rtt_us(row, SiteId::new(0)),
                    Some(small),
                    "{sites} sites, {ip}"
                );
                assert_eq!(
                    t.rtt_us(row, SiteId::from_index(sites - 1)),
                    Some(big),
                    "{sites} sites, {ip}"
                );
                assert_eq!(t.rtt_us(row, SiteId::new(1)), None);
                assert_eq!(
                    t.rtt_us(row, SiteId::from_index(sites)),
                    None,
                    "no such site"
                );
                // The API cell keeps the exact measurement.
                assert_eq!(
                    t.cell(row, SiteId::new(0)).map(|c| c.rtt),
                    Some(Duration::from_micros(12_345))
                );
                t.mark_queried(row);
            }
            let mut queried = t.take_queried();
            queried.sort();
            let mut want = vec![v4, v6, zero];
            want.sort();
            assert_eq!(queried, want, "{sites} sites");
            assert!(t.take_queried().is_empty());
            assert_eq!(t.row("198.51.100.1".parse().expect("ip")), None);
            assert_eq!(t.row("2001:db8:2::".parse().expect("ip")), None);
        }
        // Many IPv4 rows: every one is found, none is confused.
        let mut b = RttTable::builder(3);
        for i in 0..5_000u32 {
            b.row(
                IpAddr::from((0x0a00_0000 + i * 7).to_be_bytes()),
                &[cell_us(u64::from(i) * 10), None, None],
            );
        }
        let t = b.build();
        for i in 0..5_000u32 {
            let row = t
                .row(IpAddr::from((0x0a00_0000 + i * 7).to_be_bytes()))
                .expect("row");
            assert_eq!(t.rtt_us(row, SiteId::new(0)), Some((i * 10).min(655_340)));
            assert_eq!(
                t.row(IpAddr::from((0x0a00_0000 + i * 7 + 1).to_be_bytes())),
                None
            );
        }
    }
}
