//! A cache hint, so that a batch of queries can overlap the memory misses
//! of its table lookups instead of paying them one after another.

/// Asks the CPU to start loading the cache line of `value`. Only a hint: it
/// never faults and changes nothing, and is a no-op where it is not
/// available.
#[inline(always)]
pub(crate) fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let p = std::ptr::from_ref(value).cast::<i8>();
        // SAFETY: PREFETCHT0 is a hint that never faults, whatever the
        // address; `p` comes from a live reference anyway.
        #[allow(unused_unsafe)]
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(p)
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
