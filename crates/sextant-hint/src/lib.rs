//! A cache hint, so that a batch of queries can overlap the memory misses
//! of its table lookups instead of paying them one after another.
//!
//! The one unsafe call the decision core needs lives here, in a crate of its
//! own, so that `sextant-core` can `forbid(unsafe_code)`.

#![allow(unsafe_code)]

/// Asks the CPU to start loading the cache line of `value`. Only a hint: it
/// never faults and changes nothing, and is a no-op where it is not
/// available.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let p = std::ptr::from_ref(value).cast::<i8>();
        // SAFETY: PREFETCHT0 is a hint that never faults, whatever the
        // address; SSE is part of the x86_64 baseline; `p` comes from a
        // live reference anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
