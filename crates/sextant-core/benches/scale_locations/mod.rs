//! The location databases of the scale benches (`scale`, `scale_memory`):
//! IPv4 ranges over the whole address space, flat or nested, with places
//! as a city-level GeoIP database has them.

#![allow(dead_code)]

use std::net::{IpAddr, Ipv4Addr};

use sextant_core::{Location, LocationDb, LocationDbBuilder, Place, PlaceId, Source};

/// splitmix64: deterministic, no dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// `count` distinct places (continent.country.region.city), about as a
/// city-level GeoIP database has them: few continents, 250 countries.
pub fn places(count: u64) -> Vec<Place> {
    (0..count)
        .map(|i| Place {
            location: Location::from_qualifiers([
                ["Europe", "Asia", "Africa", "North America"][(i % 4) as usize],
                &format!("c{}", i % 250),
                &format!("r{}", i % 5000),
                &format!("city{i}"),
            ]),
            coordinates: None,
        })
        .collect()
}

/// How the ranges of a database lie.
#[derive(Debug, Clone, Copy)]
pub enum Layout {
    /// Disjoint ranges with gaps between them (a GeoIP file).
    Flat,
    /// Groups of four: a block, a range inside it, one inside that, and a
    /// second range inside the block (custom entries refining a file's
    /// blocks); the smallest covering range decides.
    Nested,
}

/// A database of `ranges` IPv4 ranges over the whole space, with
/// `ranges / 20` places (at least 4).
pub fn location_db(ranges: u64, layout: Layout) -> LocationDb {
    location_builder(ranges, layout).build()
}

/// The ranges of [`location_db`], not built yet.
pub fn location_builder(ranges: u64, layout: Layout) -> LocationDbBuilder {
    let mut rng = Rng(42);
    let mut b = LocationDb::builder();
    let ids: Vec<PlaceId> = places((ranges / 20).max(4))
        .into_iter()
        .map(|p| b.intern(p))
        .collect();
    let add = |b: &mut LocationDbBuilder, rng: &mut Rng, from: u64, to: u64| {
        let place = ids[(rng.next() % ids.len() as u64) as usize];
        b.add_interned(
            IpAddr::V4(Ipv4Addr::from(from as u32)),
            IpAddr::V4(Ipv4Addr::from(to as u32)),
            place,
            Source::File,
        )
        .expect("valid range");
    };
    match layout {
        Layout::Flat => {
            // Slot k of the space holds one range starting and ending at
            // random points inside it: no overlap, gaps between.
            let slot = (1u64 << 32) / ranges;
            for k in 0..ranges {
                let start = k * slot + rng.next() % (slot / 2);
                let end = start + rng.next() % (slot / 2);
                add(&mut b, &mut rng, start, end);
            }
        }
        Layout::Nested => {
            let groups = ranges / 4;
            let slot = (1u64 << 32) / groups;
            for k in 0..groups {
                let base = k * slot;
                // The block: most of the slot; then a range in its first
                // half and one inside that, and one in its second half.
                let block = (base, base + slot * 7 / 8);
                let half = slot * 7 / 16;
                let inner = (base + half / 8, base + half / 8 + half / 2);
                let core = (inner.0 + half / 8, inner.0 + half / 4);
                let second = (base + half + half / 4, base + half + half / 2);
                for (from, to) in [block, inner, core, second] {
                    add(&mut b, &mut rng, from, to);
                }
            }
        }
    }
    b
}
