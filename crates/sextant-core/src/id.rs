//! Typed identifiers and the tables they index.
//!
//! Every cross reference of the model is an index into one of its tables.
//! Each kind of index is its own type ([`SiteId`], [`ServiceId`], ...), so a
//! site id cannot index the services, and an [`IdVec`] is indexed only by
//! its own kind of id. Both compile to the plain `u32` and `Vec` indexing
//! they wrap (no unsafe code: the pure crates forbid it).

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

// `index()` widens a `u32` to `usize`: lossless on every target Sextant
// builds for.
const _: () = assert!(usize::BITS >= 32);

/// An id that indexes an [`IdVec`].
pub trait Idx: Copy + Eq + Ord + fmt::Debug {
    /// The id of position `index`. Panics if `index` does not fit in a
    /// `u32`, which no table position can (see [`IdVec::push`]).
    fn from_index(index: usize) -> Self;
    /// The position this id stands for.
    fn index(self) -> usize;
}

macro_rules! ids {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
        #[repr(transparent)]
        pub struct $name(u32);

        impl $name {
            pub const fn new(raw: u32) -> Self {
                $name(raw)
            }

            /// The id of position `index`. Panics if it does not fit in a
            /// `u32`, which no table position can (see [`IdVec::push`]).
            pub const fn from_index(index: usize) -> Self {
                assert!(index <= u32::MAX as usize, "id out of range");
                $name(index as u32)
            }

            pub const fn index(self) -> usize {
                self.0 as usize
            }

            pub const fn raw(self) -> u32 {
                self.0
            }
        }

        impl Idx for $name {
            #[inline]
            fn from_index(index: usize) -> Self {
                $name::from_index(index)
            }

            #[inline]
            fn index(self) -> usize {
                $name::index(self)
            }
        }

        /// The bare number, as logs and messages showed the plain `u32`.
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }
    )*};
}

ids! {
    /// Index of a [`Site`](crate::Site) in [`Model::sites`](crate::Model::sites).
    SiteId;
    /// Index of a [`Service`](crate::Service) in [`Model::services`](crate::Model::services).
    ServiceId;
    /// Index of a [`VServer`](crate::VServer) in [`Model::vservers`](crate::Model::vservers).
    VServerId;
    /// Index of a [`Domain`](crate::Domain) in [`Model::domains`](crate::Model::domains).
    DomainId;
    /// Index of a [`Zone`](crate::Zone) in [`Model::zones`](crate::Model::zones).
    ZoneId;
    /// Index of a [`Monitor`](crate::Monitor) in [`Model::monitors`](crate::Model::monitors).
    MonitorId;
    /// Index of a datacenter-mode record in [`Model::dc_records`](crate::Model::dc_records).
    DcRecordId;
    /// Index of a DNS action in [`Model::dns_actions`](crate::Model::dns_actions).
    DnsActionId;
    /// Index of a DNS policy in [`Model::dns_policies`](crate::Model::dns_policies).
    DnsPolicyId;
    /// Index of a distinct place in a [`LocationDb`](crate::LocationDb).
    PlaceId;
    /// Index of a name in a [`RecordTable`](crate::RecordTable).
    NodeId;
}

/// A `Vec<T>` indexed by one kind of id `I` instead of `usize`.
pub struct IdVec<I, T> {
    raw: Vec<T>,
    _id: PhantomData<fn(I) -> I>,
}

impl<I: Idx, T> IdVec<I, T> {
    pub const fn new() -> Self {
        IdVec {
            raw: Vec::new(),
            _id: PhantomData,
        }
    }

    /// Appends `value` and returns its id.
    ///
    /// Panics when the table already holds `u32::MAX` entries, so that
    /// every position of a table fits in an id (and `u32::MAX` is never
    /// one, free to mark "none" in packed tables). Tables hold what a
    /// configuration or location file describes, each entry tens of bytes
    /// at least: 4 billion of them could not be held in memory to begin
    /// with, so this is an invariant, not an input check.
    pub fn push(&mut self, value: T) -> I {
        let id = self.next_id();
        self.raw.push(value);
        id
    }

    /// The id the next [`push`](Self::push) returns.
    pub fn next_id(&self) -> I {
        assert!(self.raw.len() < u32::MAX as usize, "table full");
        I::from_index(self.raw.len())
    }

    pub fn len(&self) -> usize {
        self.raw.len()
    }

    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.raw.capacity()
    }

    pub fn shrink_to_fit(&mut self) {
        self.raw.shrink_to_fit();
    }

    pub fn reserve_exact(&mut self, additional: usize) {
        self.raw.reserve_exact(additional);
    }

    #[inline]
    pub fn get(&self, id: I) -> Option<&T> {
        self.raw.get(id.index())
    }

    #[inline]
    pub fn get_mut(&mut self, id: I) -> Option<&mut T> {
        self.raw.get_mut(id.index())
    }

    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.raw.iter()
    }

    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.raw.iter_mut()
    }

    /// Every entry with its id, in id order.
    pub fn iter_enumerated(
        &self,
    ) -> impl DoubleEndedIterator<Item = (I, &T)> + ExactSizeIterator + Clone {
        // Positions fit in an id: `push` and `from` keep the length in range.
        self.raw
            .iter()
            .enumerate()
            .map(|(i, v)| (I::from_index(i), v))
    }

    /// Every entry with its id, to change them.
    pub fn iter_enumerated_mut(
        &mut self,
    ) -> impl DoubleEndedIterator<Item = (I, &mut T)> + ExactSizeIterator {
        self.raw
            .iter_mut()
            .enumerate()
            .map(|(i, v)| (I::from_index(i), v))
    }

    /// Every id of the table, in order.
    pub fn ids(
        &self,
    ) -> impl DoubleEndedIterator<Item = I> + ExactSizeIterator + Clone + use<I, T> {
        (0..self.raw.len()).map(I::from_index)
    }

    /// The id of the first entry that `pred` accepts.
    pub fn position(&self, pred: impl FnMut(&T) -> bool) -> Option<I> {
        self.raw.iter().position(pred).map(I::from_index)
    }

    pub fn as_slice(&self) -> &[T] {
        &self.raw
    }
}

impl<I: Idx, T> Index<I> for IdVec<I, T> {
    type Output = T;

    #[inline]
    fn index(&self, id: I) -> &T {
        &self.raw[id.index()]
    }
}

impl<I: Idx, T> IndexMut<I> for IdVec<I, T> {
    #[inline]
    fn index_mut(&mut self, id: I) -> &mut T {
        &mut self.raw[id.index()]
    }
}

impl<I: Idx, T> From<Vec<T>> for IdVec<I, T> {
    /// Panics past `u32::MAX` entries, as [`IdVec::push`] does.
    fn from(raw: Vec<T>) -> Self {
        assert!(raw.len() <= u32::MAX as usize, "table too large");
        IdVec {
            raw,
            _id: PhantomData,
        }
    }
}

impl<I: Idx, T> FromIterator<T> for IdVec<I, T> {
    fn from_iter<It: IntoIterator<Item = T>>(iter: It) -> Self {
        Vec::from_iter(iter).into()
    }
}

impl<'a, I: Idx, T> IntoIterator for &'a IdVec<I, T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.raw.iter()
    }
}

impl<'a, I: Idx, T> IntoIterator for &'a mut IdVec<I, T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.raw.iter_mut()
    }
}

impl<I, T> Default for IdVec<I, T> {
    fn default() -> Self {
        IdVec {
            raw: Vec::new(),
            _id: PhantomData,
        }
    }
}

impl<I, T: Clone> Clone for IdVec<I, T> {
    fn clone(&self) -> Self {
        IdVec {
            raw: self.raw.clone(),
            _id: PhantomData,
        }
    }
}

impl<I, T: PartialEq> PartialEq for IdVec<I, T> {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

impl<I, T: Eq> Eq for IdVec<I, T> {}

/// As the `Vec` it wraps, so a model's `Debug` output is unchanged.
impl<I, T: fmt::Debug> fmt::Debug for IdVec<I, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.raw.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_index_their_own_table_and_display_as_numbers() {
        let mut t: IdVec<SiteId, &str> = IdVec::new();
        let a = t.push("a");
        let b = t.push("b");
        assert_eq!((a, b), (SiteId::new(0), SiteId::from_index(1)));
        assert_eq!((t[b], t.get(SiteId::new(2))), ("b", None));
        assert_eq!(t.ids().collect::<Vec<_>>(), [a, b]);
        assert_eq!(t.iter_enumerated().last(), Some((b, &"b")));
        assert_eq!(t.position(|s| *s == "b"), Some(b));
        assert_eq!((b.index(), b.raw(), b.to_string()), (1, 1, "1".to_string()));
        assert_eq!(format!("{t:?}"), r#"["a", "b"]"#);
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    #[should_panic(expected = "id out of range")]
    fn an_index_past_u32_is_refused() {
        let _ = ServiceId::from_index(u32::MAX as usize + 1);
    }
}
