//! The location database: IP ranges mapped to [`Location`]s (and, when
//! known, coordinates), for static proximity and `MATCHES_LOCATION`.
//!
//! Ranges come from custom entries (`add location`) and from location files
//! (the appliance's CSV format, MaxMind DB files); `sextant-config` reads
//! those and feeds them to a [`LocationDbBuilder`]. Ranges may overlap. The
//! range that decides an address is, in this order:
//!
//! 1. a [`Source::Custom`] range over any [`Source::File`] range;
//! 2. within one source, the most specific (smallest) range containing the
//!    address;
//! 3. among ranges of the same source and size, the one added last.
//!
//! [`LocationDbBuilder::build`] flattens the ranges into disjoint intervals
//! with a sweep, so that a lookup is one short binary search over sorted
//! interval starts (one table for IPv4, one for IPv6, each start paired with
//! a [`PlaceId`] or "no location" for a gap), narrowed first by a radix
//! index on the high bits. Adjacent intervals with the same place are
//! merged. An IPv4 interval costs 8 bytes, an IPv6 one 24, plus about half a
//! byte of index each. Identical places are stored once.
//!
//! IPv4-mapped IPv6 addresses (`::ffff:192.0.2.1`) are looked up as the IPv4
//! address they carry; an IPv6 range that covers part of `::ffff:0:0/96`
//! applies to the IPv4 addresses it covers there too, with the specificity
//! of the whole IPv6 range.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};
use std::fmt;
use std::net::IpAddr;

use crate::location::{Coordinates, Location, LocationCode, QUALIFIERS, UNKNOWN_QUALIFIER};

use crate::id::IdVec;
pub use crate::id::PlaceId;

/// What an address range maps to: a location and, when known, coordinates.
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    pub location: Location,
    pub coordinates: Option<Coordinates>,
}

/// Where a range came from. Custom entries win over files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `add location` / `[[location]]`.
    Custom,
    /// A location file or a MaxMind database.
    File,
}

/// A range that cannot be added.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    #[error("range {from} - {to}: start after end")]
    StartAfterEnd { from: IpAddr, to: IpAddr },
    #[error("range {from} - {to}: mixes IPv4 and IPv6")]
    MixedFamilies { from: IpAddr, to: IpAddr },
}

/// Marks a gap (no location) in the interval tables.
const NONE: PlaceId = PlaceId::new(u32::MAX);

/// The built, immutable location database. Cheap to share behind an `Arc`.
#[derive(Default, Clone, PartialEq)]
pub struct LocationDb {
    v4: Table<Slot4>,
    v6: Table<Slot6>,
    places: IdVec<PlaceId, Place>,
    /// Per place: its location as qualifier ids, so that the hot path
    /// compares integers rather than strings.
    codes: IdVec<PlaceId, LocationCode>,
    /// The qualifier ids: every name of a place's location, lower case.
    qualifier_ids: HashMap<Box<str>, u32>,
    /// How many ranges were added.
    ranges: usize,
}

impl LocationDb {
    pub fn builder() -> LocationDbBuilder {
        LocationDbBuilder::default()
    }

    /// The place of `ip`, if any range covers it. One binary search, no
    /// allocation.
    #[inline]
    pub fn lookup_id(&self, ip: IpAddr) -> Option<PlaceId> {
        let id = match ip {
            IpAddr::V4(v4) => self.v4.get(u32::from(v4)),
            IpAddr::V6(v6) => {
                let bits = u128::from(v6);
                if bits >> 32 == 0xffff {
                    // ::ffff:a.b.c.d
                    self.v4.get(bits as u32)
                } else {
                    self.v6.get(bits)
                }
            }
        };
        (id != NONE).then_some(id)
    }

    /// The place of `ip`, if any range covers it.
    #[inline]
    pub fn lookup(&self, ip: IpAddr) -> Option<&Place> {
        self.lookup_id(ip).map(|id| self.place(id))
    }

    /// The place with this id. Panics on an id this database did not hand out.
    #[inline]
    pub fn place(&self, id: PlaceId) -> &Place {
        &self.places[id]
    }

    /// The location of place `id` as qualifier ids. Panics on an id this
    /// database did not hand out.
    #[inline]
    pub fn code(&self, id: PlaceId) -> &LocationCode {
        &self.codes[id]
    }

    /// `location` as this database's qualifier ids (a name no place has
    /// becomes an id no place has), for matching against its places'
    /// [`code`](Self::code)s.
    pub fn encode(&self, location: &Location) -> LocationCode {
        LocationCode(std::array::from_fn(|i| {
            location.qualifier(i).map_or(0, |q| {
                self.qualifier_ids
                    .get(q)
                    .copied()
                    .unwrap_or(UNKNOWN_QUALIFIER)
            })
        }))
    }

    /// Starts loading the cache lines a [`lookup_id`](Self::lookup_id) of
    /// `ip` reads (the index entry is read, its bucket prefetched), so
    /// that a batch's lookups overlap their misses.
    #[inline]
    pub fn prefetch(&self, ip: IpAddr) {
        match ip {
            IpAddr::V4(v4) => self.v4.prefetch(u32::from(v4)),
            IpAddr::V6(v6) => {
                let bits = u128::from(v6);
                if bits >> 32 == 0xffff {
                    self.v4.prefetch(bits as u32)
                } else {
                    self.v6.prefetch(bits)
                }
            }
        }
    }

    /// Every distinct place.
    pub fn places(&self) -> &IdVec<PlaceId, Place> {
        &self.places
    }

    /// How many ranges were added (before overlaps were resolved).
    pub fn ranges(&self) -> usize {
        self.ranges
    }

    /// How many disjoint intervals (gaps included) the lookup tables hold.
    pub fn intervals(&self) -> usize {
        self.v4.len() + self.v6.len()
    }

    /// True when no range was added.
    pub fn is_empty(&self) -> bool {
        self.ranges == 0
    }

    /// Heap bytes of the lookup tables and the places (the qualifier strings
    /// included).
    pub fn memory_bytes(&self) -> usize {
        let strings: usize = self
            .places
            .iter()
            .map(|p| {
                (0..QUALIFIERS)
                    .filter_map(|i| p.location.qualifier(i))
                    .map(str::len)
                    .sum::<usize>()
            })
            .sum();
        let ids: usize = self
            .qualifier_ids
            .keys()
            .map(|k| k.len() + std::mem::size_of::<(Box<str>, u32)>())
            .sum();
        self.v4.memory_bytes()
            + self.v6.memory_bytes()
            + self.places.capacity() * std::mem::size_of::<Place>()
            + strings
            + self.codes.capacity() * std::mem::size_of::<LocationCode>()
            + ids
    }
}

impl fmt::Debug for LocationDb {
    /// A summary: a full dump of a million ranges helps nobody.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("LocationDb");
        d.field("ranges", &self.ranges)
            .field("v4_intervals", &self.v4.len())
            .field("v6_intervals", &self.v6.len());
        if self.places.len() <= 16 {
            let places: Vec<String> = self.places.iter().map(|p| p.location.to_string()).collect();
            d.field("places", &places);
        } else {
            d.field("places", &self.places.len());
        }
        d.finish()
    }
}

fn heap<T>(v: &Vec<T>) -> usize {
    v.capacity() * std::mem::size_of::<T>()
}

/// The lookup table of one address family: disjoint intervals, each from
/// its start to the next start minus one (the last to the end of the
/// space), with a radix index over the starts.
///
/// Each interval is one [`Slot`]: its start and its place side by side, so
/// that the place is read from a cache line the search has already loaded.
/// The index splits the span of the starts into equal buckets by their high
/// bits (about 8 intervals per bucket, at most 2^20 buckets) and records
/// where each bucket's intervals begin, so a lookup binary-searches only the
/// one cache line or so of its bucket: about two cache misses in all (the
/// index, then the bucket), however many ranges there are.
#[derive(Debug, Clone, PartialEq)]
struct Table<S: Slot> {
    /// Sorted by start, starts distinct.
    slots: Vec<S>,
    /// `index[b]` is the number of slots in buckets before `b`; one entry
    /// per bucket plus one (empty for an empty table).
    index: Vec<u32>,
    /// The first start: addresses before it have no location.
    first: S::Addr,
    /// Bucket of `x`: `(x - first) >> shift`.
    shift: u32,
}

impl<S: Slot> Default for Table<S> {
    fn default() -> Self {
        Table {
            slots: Vec::new(),
            index: Vec::new(),
            first: S::Addr::default(),
            shift: 0,
        }
    }
}

/// Most index bits; 2^20 buckets cost 4 MiB (for 8M intervals and more).
const MAX_INDEX_BITS: u32 = 20;

/// An interval in a [`Table`]: its start address and its place ([`NONE`]
/// for a gap).
trait Slot: Copy + PartialEq + fmt::Debug {
    type Addr: Addr;
    fn new(start: Self::Addr, place: PlaceId) -> Self;
    fn start(self) -> Self::Addr;
    fn place(self) -> PlaceId;
}

/// An IPv4 interval in 8 bytes: the start in the high half (so slots sort
/// and compare by start), the place in the low half.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot4(u64);

impl Slot for Slot4 {
    type Addr = u32;
    #[inline]
    fn new(start: u32, place: PlaceId) -> Self {
        Slot4(u64::from(start) << 32 | u64::from(place.raw()))
    }
    #[inline]
    fn start(self) -> u32 {
        (self.0 >> 32) as u32
    }
    #[inline]
    fn place(self) -> PlaceId {
        PlaceId::new(self.0 as u32)
    }
}

/// An IPv6 interval in 24 bytes (two halves of the start, the place).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot6 {
    hi: u64,
    lo: u64,
    place: PlaceId,
}

impl Slot for Slot6 {
    type Addr = u128;
    #[inline]
    fn new(start: u128, place: PlaceId) -> Self {
        Slot6 {
            hi: (start >> 64) as u64,
            lo: start as u64,
            place,
        }
    }
    #[inline]
    fn start(self) -> u128 {
        u128::from(self.hi) << 64 | u128::from(self.lo)
    }
    #[inline]
    fn place(self) -> PlaceId {
        self.place
    }
}

impl<S: Slot> Table<S> {
    fn new(starts: Vec<S::Addr>, places: Vec<PlaceId>) -> Self {
        let (Some(&first), Some(&last)) = (starts.first(), starts.last()) else {
            return Table::default();
        };
        // About 8 intervals per bucket.
        let bits = (usize::BITS - starts.len().leading_zeros())
            .saturating_sub(3)
            .min(MAX_INDEX_BITS);
        let span_bits = u128::BITS - last.offset(first).leading_zeros();
        let shift = span_bits.saturating_sub(bits).min(u128::BITS - 1);
        let buckets = (last.offset(first) >> shift) as usize + 1;
        let mut index = Vec::with_capacity(buckets + 1);
        let mut i = 0;
        for b in 0..buckets {
            while i < starts.len() && ((starts[i].offset(first) >> shift) as usize) < b {
                i += 1;
            }
            index.push(i as u32);
        }
        index.push(starts.len() as u32);
        let slots = starts
            .into_iter()
            .zip(places)
            .map(|(s, p)| S::new(s, p))
            .collect();
        Table {
            slots,
            index,
            first,
            shift,
        }
    }

    fn len(&self) -> usize {
        self.slots.len()
    }

    /// Reads the index entry of `x` and prefetches its bucket's first slots.
    #[inline]
    fn prefetch(&self, x: S::Addr) {
        if self.slots.is_empty() || x < self.first {
            return;
        }
        let buckets = self.index.len() - 1;
        let b = (x.offset(self.first) >> self.shift).min(buckets as u128 - 1) as usize;
        let lo = (self.index[b] as usize).max(1) - 1;
        if let Some(slot) = self.slots.get(lo) {
            sextant_hint::prefetch(slot);
        }
    }

    /// The place of the interval containing `x`: the last start `<= x`.
    #[inline]
    fn get(&self, x: S::Addr) -> PlaceId {
        if self.slots.is_empty() || x < self.first {
            return NONE;
        }
        let buckets = self.index.len() - 1;
        let b = (x.offset(self.first) >> self.shift).min(buckets as u128 - 1) as usize;
        // The last slot before bucket `b` (or the first slot) starts at or
        // before x, and no slot after bucket `b` does.
        let lo = (self.index[b] as usize).max(1) - 1;
        let hi = self.index[b + 1] as usize;
        let slots = &self.slots[lo..hi];
        // Branch-free halving; invariant: slots[base] starts at or before x.
        let mut base = 0;
        let mut len = slots.len();
        while len > 1 {
            let half = len / 2;
            // Arithmetic rather than `if`, so that it compiles to no branch
            // (a mispredicted branch per step costs more than the compare).
            base += half * usize::from(slots[base + half].start() <= x);
            len -= half;
        }
        slots[base].place()
    }

    fn memory_bytes(&self) -> usize {
        heap(&self.slots) + heap(&self.index)
    }
}

/// Collects ranges and builds a [`LocationDb`].
#[derive(Debug, Default)]
pub struct LocationDbBuilder {
    v4: Vec<Entry<u32>>,
    v6: Vec<Entry<u128>>,
    places: IdVec<PlaceId, Place>,
    interned: HashMap<PlaceKey, PlaceId>,
    ranges: usize,
}

/// A place as a hash key (coordinates by their bits).
type PlaceKey = (Location, Option<(u64, u64)>);

#[derive(Debug, Clone, Copy)]
struct Entry<A> {
    from: A,
    to: A,
    place: PlaceId,
    rank: Rank,
}

/// Which of two overlapping ranges decides: the greater rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Rank {
    custom: bool,
    /// Size of the whole range as added, minus one: smaller wins.
    span: Reverse<u128>,
    /// Order of adding: later wins.
    seq: u32,
}

impl LocationDbBuilder {
    /// Adds the range `from..=to`. Both ends must be of one family (two
    /// IPv4-mapped IPv6 addresses make an IPv4 range) and `from <= to`.
    pub fn add(
        &mut self,
        from: IpAddr,
        to: IpAddr,
        place: Place,
        source: Source,
    ) -> Result<(), RangeError> {
        check_range(from, to)?;
        let id = self.intern(place);
        self.add_interned(from, to, id, source)
    }

    /// Adds the range `from..=to` with a place already [interned](Self::intern):
    /// a file whose many ranges share few places (a MaxMind database) then
    /// pays one id copy per range instead of a place clone and hash.
    /// `place` must be an id this builder handed out.
    pub fn add_interned(
        &mut self,
        from: IpAddr,
        to: IpAddr,
        place: PlaceId,
        source: Source,
    ) -> Result<(), RangeError> {
        debug_assert!(self.places.get(place).is_some(), "foreign place id");
        check_range(from, to)?;
        let mut rank = Rank {
            custom: source == Source::Custom,
            span: Reverse(0),
            seq: self.ranges as u32,
        };
        match (from, to) {
            (IpAddr::V4(a), IpAddr::V4(b)) => {
                let (a, b) = (u32::from(a), u32::from(b));
                rank.span = Reverse(u128::from(b - a));
                self.v4.push(Entry {
                    from: a,
                    to: b,
                    place,
                    rank,
                });
            }
            (IpAddr::V6(a), IpAddr::V6(b)) => {
                let (a, b) = (u128::from(a), u128::from(b));
                rank.span = Reverse(b - a);
                // The part inside ::ffff:0:0/96 is what IPv4 lookups see.
                const MAPPED: u128 = 0xffff_0000_0000;
                const MAPPED_END: u128 = 0xffff_ffff_ffff;
                let (lo, hi) = (a.max(MAPPED), b.min(MAPPED_END));
                if lo <= hi {
                    self.v4.push(Entry {
                        from: (lo - MAPPED) as u32,
                        to: (hi - MAPPED) as u32,
                        place,
                        rank,
                    });
                }
                if a < MAPPED || b > MAPPED_END {
                    self.v6.push(Entry {
                        from: a,
                        to: b,
                        place,
                        rank,
                    });
                }
            }
            _ => return Err(RangeError::MixedFamilies { from, to }),
        }
        self.ranges += 1;
        Ok(())
    }

    /// How many ranges were added so far.
    pub fn ranges(&self) -> usize {
        self.ranges
    }

    /// The id of `place` in the database being built, adding it if it is
    /// new (identical places share one id).
    pub fn intern(&mut self, place: Place) -> PlaceId {
        let key: PlaceKey = (
            place.location.clone(),
            place
                .coordinates
                .map(|c| (c.latitude.to_bits(), c.longitude.to_bits())),
        );
        *self
            .interned
            .entry(key)
            .or_insert_with(|| self.places.push(place))
    }

    /// Resolves overlaps and builds the lookup tables.
    pub fn build(self) -> LocationDb {
        let (v4_starts, v4_places) = flatten(self.v4);
        let (v6_starts, v6_places) = flatten(self.v6);
        let (v4, v6) = (
            Table::<Slot4>::new(v4_starts, v4_places),
            Table::<Slot6>::new(v6_starts, v6_places),
        );
        let mut places = self.places;
        places.shrink_to_fit();
        let mut qualifier_ids: HashMap<Box<str>, u32> = HashMap::new();
        let codes = places
            .iter()
            .map(|p| {
                LocationCode(std::array::from_fn(|i| {
                    p.location.qualifier(i).map_or(0, |q| {
                        let next = qualifier_ids.len() as u32 + 1;
                        *qualifier_ids.entry(q.into()).or_insert(next)
                    })
                }))
            })
            .collect();
        qualifier_ids.shrink_to_fit();
        LocationDb {
            v4,
            v6,
            places,
            codes,
            qualifier_ids,
            ranges: self.ranges,
        }
    }
}

/// Checks that `from..=to` is one family and in order.
fn check_range(from: IpAddr, to: IpAddr) -> Result<(), RangeError> {
    let in_order = match (from, to) {
        (IpAddr::V4(a), IpAddr::V4(b)) => a <= b,
        (IpAddr::V6(a), IpAddr::V6(b)) => a <= b,
        _ => return Err(RangeError::MixedFamilies { from, to }),
    };
    if in_order {
        Ok(())
    } else {
        Err(RangeError::StartAfterEnd { from, to })
    }
}

/// An address type of one family.
trait Addr: Copy + Ord + Default {
    /// The next address, `None` after the last one.
    fn succ(self) -> Option<Self>;
    /// `self - base`, for `base <= self`.
    fn offset(self, base: Self) -> u128;
}

impl Addr for u32 {
    #[inline]
    fn succ(self) -> Option<Self> {
        self.checked_add(1)
    }
    #[inline]
    fn offset(self, base: Self) -> u128 {
        u128::from(self - base)
    }
}

impl Addr for u128 {
    #[inline]
    fn succ(self) -> Option<Self> {
        self.checked_add(1)
    }
    #[inline]
    fn offset(self, base: Self) -> u128 {
        self - base
    }
}

/// A range in the sweep's heap, ordered by rank alone.
struct Active<A> {
    rank: Rank,
    to: A,
    place: PlaceId,
}

impl<A> PartialEq for Active<A> {
    fn eq(&self, other: &Self) -> bool {
        self.rank == other.rank
    }
}
impl<A> Eq for Active<A> {}
impl<A> PartialOrd for Active<A> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<A> Ord for Active<A> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank.cmp(&other.rank)
    }
}

/// Sweeps over every point where the set of covering ranges changes (each
/// start, and each address after an end) and records which range ranks
/// highest from there on. Ranges that have ended are dropped from the heap
/// lazily, when they reach its top. O(n log n).
fn flatten<A: Addr>(mut entries: Vec<Entry<A>>) -> (Vec<A>, Vec<PlaceId>) {
    entries.sort_unstable_by_key(|e| e.from);
    let mut ends: Vec<A> = entries.iter().filter_map(|e| e.to.succ()).collect();
    ends.sort_unstable();
    let mut starts: Vec<A> = Vec::with_capacity(entries.len());
    let mut places: Vec<PlaceId> = Vec::with_capacity(entries.len());
    let mut heap: BinaryHeap<Active<A>> = BinaryHeap::new();
    let (mut i, mut j) = (0, 0);
    loop {
        let point = match (entries.get(i), ends.get(j)) {
            (None, None) => break,
            (Some(e), None) => e.from,
            (None, Some(&end)) => end,
            (Some(e), Some(&end)) => e.from.min(end),
        };
        while let Some(e) = entries.get(i).filter(|e| e.from == point) {
            heap.push(Active {
                rank: e.rank,
                to: e.to,
                place: e.place,
            });
            i += 1;
        }
        while ends.get(j) == Some(&point) {
            j += 1;
        }
        while heap.peek().is_some_and(|top| top.to < point) {
            heap.pop();
        }
        let place = heap.peek().map_or(NONE, |top| top.place);
        if places.last().copied().unwrap_or(NONE) != place {
            starts.push(point);
            places.push(place);
        }
    }
    starts.shrink_to_fit();
    places.shrink_to_fit();
    (starts, places)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn v4(ip: u32) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(ip))
    }

    fn v6(ip: u128) -> IpAddr {
        IpAddr::V6(Ipv6Addr::from(ip))
    }

    fn place(s: &str) -> Place {
        Place {
            location: Location::parse(s).unwrap(),
            coordinates: None,
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn at(db: &LocationDb, s: &str) -> Option<String> {
        db.lookup(ip(s)).map(|p| p.location.to_string())
    }

    fn build(entries: &[(&str, &str, &str, Source)]) -> LocationDb {
        let mut b = LocationDb::builder();
        for (from, to, loc, src) in entries {
            b.add(ip(from), ip(to), place(loc), *src).unwrap();
        }
        b.build()
    }

    #[test]
    fn qualifier_ids_match_as_the_locations_do() {
        let texts = [
            "Europe.UK.*.*",
            "Europe.UK.London",
            "europe.uk.leeds",
            "Europe.DE",
            "Asia.HK",
            "Asia.IN",
            "*.UK",
            "America.US.*.*.isp1.org",
            "",
        ];
        let mut b = LocationDb::builder();
        for (k, t) in texts.iter().enumerate() {
            let a = ip(&format!("10.0.{k}.0"));
            b.add(a, a, place(t), Source::Custom).unwrap();
        }
        let db = b.build();
        // Patterns: the places' own locations, and names no place has.
        let patterns: Vec<Location> = texts
            .iter()
            .chain(&[
                "Europe.FR",
                "Oceania",
                "*.HK",
                "Asia.HK.kowloon",
                "*.*.london",
            ])
            .map(|t| Location::parse(t).unwrap())
            .collect();
        for (id, p) in db.places().iter_enumerated() {
            let code = db.code(id);
            assert_eq!(db.encode(&p.location), *code);
            for (other, q) in db.places().iter_enumerated() {
                assert_eq!(
                    code.shared_prefix(db.code(other)),
                    p.location.shared_prefix(&q.location),
                    "{} / {}",
                    p.location,
                    q.location
                );
            }
            for pattern in &patterns {
                let pc = db.encode(pattern);
                assert_eq!(
                    pc.matches_perfectly(code),
                    pattern.matches_perfectly(&p.location),
                    "{pattern} / {}",
                    p.location
                );
                assert_eq!(
                    pc.matches_partially(code),
                    pattern.matches_partially(&p.location),
                    "{pattern} / {}",
                    p.location
                );
            }
        }
    }

    #[test]
    fn empty() {
        let db = LocationDb::default();
        assert!(db.is_empty());
        assert_eq!(db.lookup(ip("1.2.3.4")), None);
        assert_eq!(db.lookup(ip("::1")), None);
        let db = LocationDb::builder().build();
        assert_eq!(db, LocationDb::default());
        assert_eq!(db.memory_bytes(), 0);
    }

    #[test]
    fn v4_ranges_and_gaps() {
        let db = build(&[
            ("10.0.0.0", "10.0.0.255", "Europe.UK", Source::File),
            ("10.0.2.0", "10.0.2.255", "Asia.HK", Source::File),
        ]);
        assert_eq!(db.ranges(), 2);
        assert_eq!(at(&db, "9.255.255.255"), None);
        assert_eq!(at(&db, "10.0.0.0").as_deref(), Some("europe.uk"));
        assert_eq!(at(&db, "10.0.0.255").as_deref(), Some("europe.uk"));
        assert_eq!(at(&db, "10.0.1.0"), None);
        assert_eq!(at(&db, "10.0.2.7").as_deref(), Some("asia.hk"));
        assert_eq!(at(&db, "10.0.3.0"), None);
        assert_eq!(at(&db, "255.255.255.255"), None);
        // IPv4 ranges do not answer for IPv6 addresses outside the mapped block.
        assert_eq!(at(&db, "::a00:1"), None);
    }

    #[test]
    fn whole_v4_space_boundaries() {
        let db = build(&[
            ("0.0.0.0", "0.0.0.0", "a", Source::File),
            ("0.0.0.1", "255.255.255.254", "b", Source::File),
            ("255.255.255.255", "255.255.255.255", "c", Source::File),
        ]);
        assert_eq!(at(&db, "0.0.0.0").as_deref(), Some("a"));
        assert_eq!(at(&db, "0.0.0.1").as_deref(), Some("b"));
        assert_eq!(at(&db, "128.0.0.0").as_deref(), Some("b"));
        assert_eq!(at(&db, "255.255.255.254").as_deref(), Some("b"));
        assert_eq!(at(&db, "255.255.255.255").as_deref(), Some("c"));
        let all = db_all_v4();
        assert_eq!(at(&all, "0.0.0.0").as_deref(), Some("earth"));
        assert_eq!(at(&all, "255.255.255.255").as_deref(), Some("earth"));
    }

    fn db_all_v4() -> LocationDb {
        build(&[("0.0.0.0", "255.255.255.255", "Earth", Source::File)])
    }

    #[test]
    fn v6_ranges_and_boundaries() {
        let db = build(&[
            ("2001:db8::", "2001:db8::ffff", "Europe.DE", Source::File),
            ("::", "::", "zero", Source::File),
            (
                "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                "top",
                Source::File,
            ),
        ]);
        assert_eq!(at(&db, "2001:db8::1").as_deref(), Some("europe.de"));
        assert_eq!(at(&db, "2001:db8::1:0"), None);
        assert_eq!(at(&db, "2001:db7:ffff::"), None);
        assert_eq!(at(&db, "::").as_deref(), Some("zero"));
        assert_eq!(at(&db, "::1"), None);
        assert_eq!(
            at(&db, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff").as_deref(),
            Some("top")
        );
        assert_eq!(at(&db, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe"), None);
        // IPv6 ranges do not answer for IPv4 addresses.
        assert_eq!(at(&db, "0.0.0.0"), None);
        let all = db_all(&[("::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "Earth")]);
        assert_eq!(at(&all, "::").as_deref(), Some("earth"));
        assert_eq!(
            at(&all, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff").as_deref(),
            Some("earth")
        );
        // It covers ::ffff:0:0/96, so every IPv4 address too.
        assert_eq!(at(&all, "192.0.2.1").as_deref(), Some("earth"));
    }

    fn db_all(entries: &[(&str, &str, &str)]) -> LocationDb {
        let e: Vec<_> = entries
            .iter()
            .map(|(a, b, c)| (*a, *b, *c, Source::File))
            .collect();
        build(&e)
    }

    #[test]
    fn mapped_addresses_look_up_as_v4() {
        let db = build(&[
            ("192.0.2.0", "192.0.2.255", "Europe.UK", Source::File),
            (
                "::ffff:198.51.100.0",
                "::ffff:198.51.100.255",
                "Asia.HK",
                Source::File,
            ),
        ]);
        assert_eq!(at(&db, "::ffff:192.0.2.9").as_deref(), Some("europe.uk"));
        // A mapped range is an IPv4 range.
        assert_eq!(at(&db, "198.51.100.9").as_deref(), Some("asia.hk"));
        assert_eq!(at(&db, "::ffff:198.51.100.9").as_deref(), Some("asia.hk"));
        assert_eq!(db.intervals(), 4);
    }

    #[test]
    fn most_specific_wins_and_later_wins_ties() {
        let db = build(&[
            ("10.0.0.0", "10.255.255.255", "Europe", Source::File),
            ("10.1.0.0", "10.1.255.255", "Europe.UK", Source::File),
            (
                "10.1.2.0",
                "10.1.2.255",
                "Europe.UK.England.London",
                Source::File,
            ),
            (
                "10.1.2.0",
                "10.1.2.255",
                "Europe.UK.England.Leeds",
                Source::File,
            ),
        ]);
        assert_eq!(at(&db, "10.0.0.1").as_deref(), Some("europe"));
        assert_eq!(at(&db, "10.1.0.1").as_deref(), Some("europe.uk"));
        assert_eq!(
            at(&db, "10.1.2.3").as_deref(),
            Some("europe.uk.england.leeds")
        );
        assert_eq!(at(&db, "10.1.3.0").as_deref(), Some("europe.uk"));
        assert_eq!(at(&db, "10.2.0.0").as_deref(), Some("europe"));
        // The wide range added after the narrow one still loses inside it.
        let db = db_all(&[
            ("10.1.0.0", "10.1.255.255", "Europe.UK"),
            ("10.0.0.0", "10.255.255.255", "Europe"),
        ]);
        assert_eq!(at(&db, "10.1.0.1").as_deref(), Some("europe.uk"));
        assert_eq!(at(&db, "10.3.0.1").as_deref(), Some("europe"));
    }

    #[test]
    fn custom_beats_file() {
        let db = build(&[
            ("10.0.0.0", "10.255.255.255", "Asia.HK", Source::Custom),
            ("10.1.2.0", "10.1.2.255", "Europe.UK", Source::File),
            ("10.1.2.3", "10.1.2.3", "Africa.ZMB", Source::File),
            ("2001:db8::", "2001:db8::ff", "Europe.DE", Source::File),
            ("2001::", "2001:ffff::", "Europe.FR", Source::Custom),
        ]);
        assert_eq!(at(&db, "10.1.2.3").as_deref(), Some("asia.hk"));
        assert_eq!(at(&db, "10.1.2.4").as_deref(), Some("asia.hk"));
        assert_eq!(at(&db, "2001:db8::1").as_deref(), Some("europe.fr"));
        // Custom ranges rank among themselves as files do.
        let db = build(&[
            ("10.0.0.0", "10.255.255.255", "Asia", Source::Custom),
            ("10.1.0.0", "10.1.0.255", "Asia.HK", Source::Custom),
            ("10.1.0.0", "10.1.0.255", "Europe", Source::File),
        ]);
        assert_eq!(at(&db, "10.1.0.5").as_deref(), Some("asia.hk"));
    }

    #[test]
    fn places_are_interned_and_coordinates_kept() {
        let london = Place {
            location: Location::parse("Europe.UK.*.London").unwrap(),
            coordinates: Some(Coordinates {
                latitude: 51.5,
                longitude: -0.12,
            }),
        };
        let mut b = LocationDb::builder();
        b.add(ip("10.0.0.0"), ip("10.0.0.9"), london.clone(), Source::File)
            .unwrap();
        b.add(ip("10.0.1.0"), ip("10.0.1.9"), london.clone(), Source::File)
            .unwrap();
        b.add(
            ip("10.0.0.10"),
            ip("10.0.0.19"),
            place("europe.uk.*.LONDON"),
            Source::File,
        )
        .unwrap();
        let db = b.build();
        assert_eq!(db.places().len(), 2);
        assert_eq!(db.lookup(ip("10.0.1.5")), Some(&london));
        assert_eq!(db.lookup_id(ip("10.0.0.5")), db.lookup_id(ip("10.0.1.5")));
        assert_ne!(db.lookup_id(ip("10.0.0.5")), db.lookup_id(ip("10.0.0.15")));
    }

    #[test]
    fn adjacent_intervals_with_one_place_merge() {
        let db = db_all(&[
            ("10.0.0.0", "10.0.0.255", "a"),
            ("10.0.1.0", "10.0.1.255", "a"),
            ("10.0.2.0", "10.0.2.255", "b"),
        ]);
        // 10.0.0.0 (a), 10.0.2.0 (b), 10.0.3.0 (gap).
        assert_eq!(db.intervals(), 3);
        assert_eq!(db.ranges(), 3);
        assert!(db.memory_bytes() >= 3 * 8);
    }

    #[test]
    fn bad_ranges() {
        let mut b = LocationDb::builder();
        let e = b
            .add(ip("10.0.0.9"), ip("10.0.0.1"), place("a"), Source::File)
            .unwrap_err();
        assert_eq!(e.to_string(), "range 10.0.0.9 - 10.0.0.1: start after end");
        let e = b
            .add(ip("10.0.0.1"), ip("::1"), place("a"), Source::File)
            .unwrap_err();
        assert_eq!(e.to_string(), "range 10.0.0.1 - ::1: mixes IPv4 and IPv6");
        let e = b
            .add(ip("::2"), ip("::1"), place("a"), Source::File)
            .unwrap_err();
        assert_eq!(e.to_string(), "range ::2 - ::1: start after end");
        assert_eq!(b.ranges(), 0);
        assert!(b.build().is_empty());
    }

    #[test]
    fn debug_is_a_summary() {
        let db = db_all(&[("10.0.0.0", "10.0.0.255", "Europe.UK")]);
        let s = format!("{db:?}");
        assert!(s.contains("ranges: 1"), "{s}");
        assert!(s.contains("europe.uk"), "{s}");
    }

    // -- the same rules as a linear scan, for the property test

    struct Naive {
        ranges: Vec<(IpAddr, IpAddr, usize, Source)>,
    }

    /// An address as (is IPv6 outside the mapped block, value); mapped
    /// addresses become IPv4.
    fn norm(ip: IpAddr) -> (bool, u128) {
        match ip {
            IpAddr::V4(a) => (false, u128::from(u32::from(a))),
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(m) => (false, u128::from(u32::from(m))),
                None => (true, u128::from(a)),
            },
        }
    }

    fn raw(ip: IpAddr) -> (bool, u128) {
        match ip {
            IpAddr::V4(a) => (false, u128::from(u32::from(a))),
            IpAddr::V6(a) => (true, u128::from(a)),
        }
    }

    impl Naive {
        fn lookup(&self, ip: IpAddr) -> Option<usize> {
            let (is6, x) = norm(ip);
            let mut best: Option<(bool, Reverse<u128>, usize, usize)> = None;
            for (seq, (from, to, place, src)) in self.ranges.iter().enumerate() {
                let ((f6, f), (_, t)) = (raw(*from), raw(*to));
                let hit = if f6 {
                    // An IPv6 range: the address as IPv6 (a mapped one as
                    // ::ffff:a.b.c.d; a plain IPv4 address likewise).
                    let y = if is6 { x } else { 0xffff_0000_0000 | x };
                    f <= y && y <= t
                } else {
                    !is6 && f <= x && x <= t
                };
                if hit {
                    let key = (*src == Source::Custom, Reverse(t - f), seq, *place);
                    if best.is_none_or(|b| (key.0, key.1, key.2) > (b.0, b.1, b.2)) {
                        best = Some(key);
                    }
                }
            }
            best.map(|b| b.3)
        }
    }

    /// Small address universes, so that ranges overlap a lot: IPv4 addresses
    /// near 0, near the top, and IPv6 around the mapped block and the top.
    fn addr() -> impl Strategy<Value = IpAddr> {
        prop_oneof![
            (0u32..40).prop_map(v4),
            (0u32..40).prop_map(|x| v4(u32::MAX - x)),
            (0u128..40).prop_map(v6),
            (0u128..40).prop_map(|x| v6(0xffff_0000_0000 + x)),
            (0u128..40).prop_map(|x| v6(0xffff_ffff_ffff - x)),
            (0u128..40).prop_map(|x| v6(u128::MAX - x)),
        ]
    }

    fn range() -> impl Strategy<Value = (IpAddr, IpAddr, usize, bool)> {
        (addr(), addr(), 0usize..5, any::<bool>())
    }

    /// Enough ranges for a many-bucket index, spread over whole families,
    /// checked at every range's edges and at random addresses.
    #[test]
    fn large_tables_agree_with_a_linear_scan() {
        let mut state = 7u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state >> 11
        };
        let names = ["a", "b", "c", "d", "e"];
        let mut b = LocationDb::builder();
        let mut naive = Naive { ranges: Vec::new() };
        let mut probes = Vec::new();
        for i in 0..1500 {
            let (from, to) = if i % 3 == 0 {
                let a = u128::from(next()) << 64 | u128::from(next());
                let len = u128::from(next()) << (next() % 100);
                (v6(a), v6(a.saturating_add(len)))
            } else {
                let a = next() as u32;
                let len = (next() as u32) >> (next() % 32);
                (v4(a), v4(a.saturating_add(len)))
            };
            let p = (next() % 5) as usize;
            let src = if next() % 8 == 0 {
                Source::Custom
            } else {
                Source::File
            };
            b.add(from, to, place(names[p]), src).unwrap();
            naive.ranges.push((from, to, p, src));
            for edge in [from, to] {
                match edge {
                    IpAddr::V4(a) => {
                        let a = u32::from(a);
                        probes.extend([a.wrapping_sub(1), a, a.wrapping_add(1)].map(v4));
                    }
                    IpAddr::V6(a) => {
                        let a = u128::from(a);
                        probes.extend([a.wrapping_sub(1), a, a.wrapping_add(1)].map(v6));
                    }
                }
            }
        }
        for _ in 0..2000 {
            probes.push(v4(next() as u32));
            probes.push(v6(u128::from(next()) << 64 | u128::from(next())));
        }
        let db = b.build();
        assert!(db.v4.index.len() > 8, "{}", db.v4.index.len());
        for ip in probes {
            let got = db.lookup(ip).map(|p| p.location.to_string());
            let want = naive.lookup(ip).map(|p| names[p].to_string());
            assert_eq!(got, want, "at {ip}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn agrees_with_a_linear_scan(
            ranges in proptest::collection::vec(range(), 0..24),
            probes in proptest::collection::vec(addr(), 1..64),
        ) {
            let names = ["a", "b", "c", "d", "e"];
            let mut b = LocationDb::builder();
            let mut naive = Naive { ranges: Vec::new() };
            for (from, to, p, custom) in ranges {
                let src = if custom { Source::Custom } else { Source::File };
                let r = b.add(from, to, place(names[p]), src);
                let ok = matches!(
                    (raw(from), raw(to)),
                    ((f6, f), (t6, t)) if f6 == t6 && f <= t
                );
                prop_assert_eq!(r.is_ok(), ok);
                if ok {
                    naive.ranges.push((from, to, p, src));
                }
            }
            let db = b.build();
            prop_assert_eq!(db.ranges(), naive.ranges.len());
            for ip in probes {
                let got = db.lookup(ip).map(|p| p.location.to_string());
                let want = naive.lookup(ip).map(|p| names[p].to_string());
                prop_assert_eq!(got, want, "at {}", ip);
            }
        }
    }
}
