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

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts allocations (not deallocations) of the calling thread.
pub struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: forwards every call unchanged to the system allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Allocations the calling thread made so far (only counted while
/// [`Counting`] is the global allocator).
pub fn allocations() -> u64 {
    ALLOCATIONS.with(|c| c.get())
}
