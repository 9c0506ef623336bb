//! A counting global allocator, per thread (so the test harness's own
//! threads do not interfere), wrapping the system one. A test binary that
//! checks "does not allocate" installs it:
//!
//! ```ignore
//! use sextant_test_support::alloc::{Counting, allocations};
//!
//! #[global_allocator]
//! static GLOBAL: Counting = Counting;
//!
//! let before = allocations();
//! hot_path();
//! assert_eq!(allocations() - before, 0);
//! ```
//!
//! It also keeps the calling thread's live heap bytes ([`live_bytes`]:
//! allocated minus freed), so a bench can say how much memory a structure
//! holds: the difference before and after building it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts allocations (not deallocations) of the calling thread.
pub struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    static LIVE_BYTES: Cell<i64> = const { Cell::new(0) };
}

fn count() {
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

/// Adds `delta` to the calling thread's live bytes (freeing counts
/// negative, so memory freed by another thread makes this one's go down).
fn bytes(delta: i64) {
    let _ = LIVE_BYTES.try_with(|c| c.set(c.get().wrapping_add(delta)));
}

// SAFETY: forwards every call unchanged to the system allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        bytes(layout.size() as i64);
        // SAFETY: the caller's contract for `alloc`, passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        bytes(layout.size() as i64);
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        bytes(new_size as i64 - layout.size() as i64);
        // SAFETY: `ptr` came from this allocator, which is `System`'s.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        bytes(-(layout.size() as i64));
        // SAFETY: `ptr` came from this allocator, which is `System`'s.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Allocations the calling thread made so far (only counted while
/// [`Counting`] is the global allocator).
pub fn allocations() -> u64 {
    ALLOCATIONS.with(|c| c.get())
}

/// Heap bytes the calling thread holds: requested sizes allocated minus
/// freed since it started (only counted while [`Counting`] is the global
/// allocator; the allocator's own overhead per block is not included).
pub fn live_bytes() -> i64 {
    LIVE_BYTES.with(|c| c.get())
}
