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
//! [`Snapshot`]: crate::Snapshot

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::model::{LdnsProbe, SiteId};
use crate::snapshot::FnvMap;

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
    rows: FnvMap<IpAddr, u32>,
    keys: Box<[IpAddr]>,
    info: Box<[RttRowInfo]>,
    stats: LdnsStats,
    sites: usize,
    /// `keys.len() × sites` RTTs in µs; [`UNKNOWN`] where none is usable.
    rtt_us: Box<[u32]>,
    /// The same cells with their probe kind and age, for the API.
    cells: Box<[Option<RttCell>]>,
    queried: Box<[AtomicBool]>,
}

/// A cell without a usable RTT.
const UNKNOWN: u32 = u32::MAX;

impl RttTable {
    /// An empty table for `sites` sites.
    pub fn builder(sites: usize) -> RttTableBuilder {
        RttTableBuilder {
            table: RttTable {
                sites,
                ..RttTable::default()
            },
            keys: Vec::new(),
            info: Vec::new(),
            rtt_us: Vec::new(),
            cells: Vec::new(),
        }
    }

    /// The row of an LDNS group (its masked address).
    pub fn row(&self, ldns: IpAddr) -> Option<u32> {
        self.rows.get(&ldns).copied()
    }

    /// The RTT from `site` to the LDNS of `row`, in µs, if usable.
    pub fn rtt_us(&self, row: u32, site: SiteId) -> Option<u32> {
        let i = (row as usize)
            .checked_mul(self.sites)?
            .checked_add(site as usize)?;
        if site as usize >= self.sites {
            return None;
        }
        self.rtt_us.get(i).copied().filter(|v| *v != UNKNOWN)
    }

    /// Notes that the LDNS of `row` queried a domain that uses RTT.
    pub fn mark_queried(&self, row: u32) {
        if let Some(flag) = self.queried.get(row as usize)
            && !flag.load(Ordering::Relaxed)
        {
            flag.store(true, Ordering::Relaxed);
        }
    }

    /// The LDNS groups queried since the last call (clearing their marks).
    pub fn take_queried(&self) -> Vec<IpAddr> {
        self.queried
            .iter()
            .zip(self.keys.iter())
            // Read first: most rows are not marked, and a read writes no
            // cache line the DNS workers share.
            .filter(|(flag, _)| flag.load(Ordering::Relaxed) && flag.swap(false, Ordering::Relaxed))
            .map(|(_, key)| *key)
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

/// Builds an [`RttTable`] row by row.
#[derive(Debug)]
pub struct RttTableBuilder {
    table: RttTable,
    keys: Vec<IpAddr>,
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
        if self.table.rows.contains_key(&ldns) {
            return self;
        }
        self.table.rows.insert(ldns, self.keys.len() as u32);
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
        self.table.rows.reserve(rows);
        self.keys.reserve(rows);
        self.info.reserve(rows);
        self.rtt_us.reserve(rows * self.table.sites);
        self.cells.reserve(rows * self.table.sites);
        self
    }

    pub fn build(self) -> RttTable {
        let n = self.keys.len();
        RttTable {
            keys: self.keys.into(),
            info: self.info.into(),
            rtt_us: self.rtt_us.into(),
            cells: self.cells.into(),
            queried: (0..n).map(|_| AtomicBool::new(false)).collect(),
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
