//! The `foretell` command's allocator: mimalloc, called at its unaligned entry points whenever
//! the alignment asked for is one mimalloc gives every block anyway. Public, so that a binary
//! embedding foretell's engines (a user's own checker, the Stateright benchmark) can use it too.
//!
//! A search allocates and frees a world's parts per new state; mimalloc's thread-local free
//! lists make that markedly cheaper than the system allocator (see docs/BENCHMARKS.md). The
//! `mimalloc` crate's own `GlobalAlloc` sends every request through `mi_malloc_aligned`, whose
//! alignment handling costs about as much again as the allocation itself; nearly every Rust
//! allocation asks for at most 16 bytes of alignment, which `mi_malloc` guarantees.
//!
//! Before `main`, the module also turns off mimalloc 3's eager commit of its arenas (unless the
//! environment sets `MIMALLOC_ARENA_EAGER_COMMIT`). On Linux that default maps each 1 GiB arena
//! committed and advised onto transparent huge pages, so the first touch of any block brings in
//! its whole 2 MiB page: a search's small allocations spread over many such pages, and its peak
//! resident memory nearly doubled (two-phase commit N = 8: 47.6 MB against 26.5 MB;
//! docs/BENCHMARKS.md). Committed on demand, arena memory comes in base pages as it is used.

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc, mi_zalloc_aligned,
};
use std::alloc::{GlobalAlloc, Layout};
use std::ffi::{c_long, c_void};

/// The largest alignment every mimalloc block has (`MI_MAX_ALIGN_SIZE` on 64-bit targets).
const GUARANTEED_ALIGN: usize = 16;

/// mimalloc's `mi_option_arena_eager_commit` (`mimalloc.h`; the same index in mimalloc 2 and 3).
const ARENA_EAGER_COMMIT: i32 = 4;

extern "C" {
    /// Sets an option's value unless the environment set it (`mimalloc.h`). `libmimalloc-sys`
    /// declares it only with its `extended` feature, whose option indices are mimalloc 2's.
    fn mi_option_set_default(option: i32, value: c_long);
}

/// Runs before `main`, and so before the first allocation reserves an arena (the Rust runtime
/// allocates before `main`, too late to set it there).
#[ctor::ctor(unsafe)]
fn commit_arenas_on_demand() {
    // SAFETY: mimalloc reads options lazily and allows setting their defaults before any use;
    // nothing else runs yet.
    unsafe { mi_option_set_default(ARENA_EAGER_COMMIT, 0) };
}

/// mimalloc, with a fast path for ordinary alignments: a `#[global_allocator]`.
#[derive(Debug)]
pub struct Mimalloc;

// SAFETY: each method forwards to the mimalloc function with the same contract; the unaligned
// ones are used only when the layout's alignment is one mimalloc's blocks always have.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= GUARANTEED_ALIGN {
            mi_malloc(layout.size()).cast()
        } else {
            mi_malloc_aligned(layout.size(), layout.align()).cast()
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= GUARANTEED_ALIGN {
            mi_zalloc(layout.size()).cast()
        } else {
            mi_zalloc_aligned(layout.size(), layout.align()).cast()
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        mi_free(ptr.cast::<c_void>());
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= GUARANTEED_ALIGN {
            mi_realloc(ptr.cast::<c_void>(), new_size).cast()
        } else {
            mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
        }
    }
}
