//! Cache hints, for the hot loops of the model and the engines: start loading a line of memory
//! that a few steps from now will read, so that its miss overlaps other work.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{_MM_HINT_NTA as ONE_READ, _MM_HINT_T0 as EVERY_LEVEL};

// Elsewhere the hints are no-ops, and their kind means nothing.
#[cfg(not(target_arch = "x86_64"))]
const EVERY_LEVEL: i32 = 0;
#[cfg(not(target_arch = "x86_64"))]
const ONE_READ: i32 = 0;

/// Hints the processor to load the cache line at `address` into every level of the cache. No
/// access is made, so an invalid or dangling address is harmless, and nothing changes but
/// timing. A no-op on targets other than x86-64.
#[inline(always)]
pub fn prefetch<T>(address: *const T) {
    hint::<EVERY_LEVEL, T>(address);
}

/// Hints the processor to load the cache line at `address` for one read soon, with as little
/// room in the outer caches as the processor gives such lines (`prefetchnta`): for the visited
/// set's buckets, read at random and once per lookup, which would otherwise push out lines the
/// search reads again (node slots, the step memo). Harmless like [`prefetch`].
#[inline(always)]
pub fn prefetch_once<T>(address: *const T) {
    hint::<ONE_READ, T>(address);
}

/// `prefetcht0` or `prefetchnta` of `address`, as `KIND` says.
#[inline(always)]
fn hint<const KIND: i32, T>(address: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints the cache; it reads nothing architecturally and never
    // faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<KIND>(address.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}
