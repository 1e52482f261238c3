//! Zeroed memory for the visited set's tables and Bloom filters, on large pages where the
//! system offers them.
//!
//! A visited set is read at a random place per successor, so a table of many 4 KiB pages costs a
//! TLB miss, and a page walk, on nearly every lookup once it outgrows the TLB's reach (a few
//! MiB). On Linux a block of at least [`LARGE_PAGE`] bytes is mapped on its own, aligned to a
//! large page, and offered to transparent huge pages (`MADV_HUGEPAGE`, which takes effect when
//! `/sys/kernel/mm/transparent_hugepage/enabled` says `madvise` or `always`), so that one TLB
//! entry covers 2 MiB of it. Fresh anonymous pages read as zeros, so nothing is written until a
//! slot is used. Blocks from 128 KiB to 3 MiB share such pages with blocks of their size
//! ([`shared_large_pages`]): a set's 64 shard tables of 1 MiB are 64 MiB on 32 large pages.
//! Smaller blocks, and other systems, come from the global allocator, and give their pages
//! back before they are freed. A block may also ask for base pages of its own mapping
//! ([`ZeroedPages::on_base_pages`]), resident a page at a time as it is written.

mod shared_large_pages;

use shared_large_pages::SharedLargePages;
use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::AtomicU64;

/// The size and alignment of a large page (x86-64 and AArch64 with 4 KiB base pages): blocks
/// of at least this many bytes are mapped on their own.
const LARGE_PAGE: usize = 2 << 20;

/// A block of zeroed bytes, aligned to at least a cache line, that can be handed back to the
/// system while it stays addressable ([`ZeroedPages::release`]).
pub(crate) struct ZeroedPages {
    start: NonNull<u8>,
    layout: Layout,
    origin: Origin,
}

/// Where a block's memory came from, and so where it goes back to.
enum Origin {
    /// A mapping of its own, of at least a large page.
    Mapping,
    /// A mapping of its own on base pages.
    BaseMapping,
    /// A block of this many bytes in a large page shared with blocks of the same size.
    Shared(usize),
    /// The global allocator.
    Allocator,
}

// SAFETY: the block is plain memory owned by this value; what is stored in it, and how threads
// share it, is its users' business (they store atomics).
unsafe impl Send for ZeroedPages {}
// SAFETY: as above.
unsafe impl Sync for ZeroedPages {}

impl ZeroedPages {
    /// `bytes` zeroed bytes (at least 1), aligned to 64.
    pub(crate) fn new(bytes: usize) -> Self {
        let layout = Layout::from_size_align(bytes.max(1), 64).expect("a block's size is a valid layout");
        let mapped = match SharedLargePages::block_size(layout.size()) {
            Some(size) => shared_large_pages::shared().take(size).map(|start| (start, Origin::Shared(size))),
            None if layout.size() >= LARGE_PAGE => {
                map_large(layout.size()).map(|start| (start, Origin::Mapping))
            }
            None => None,
        };
        if let Some((start, origin)) = mapped {
            return ZeroedPages { start, layout, origin };
        }
        Self::allocated(layout)
    }

    /// `bytes` zeroed bytes (at least 1), aligned to 64, on base pages even where a large page
    /// would take them: a large page is resident whole from its first write, a base page one
    /// page at a time. On Linux a mapping of its own, whose memory goes back to the system when
    /// it is dropped (a block of the global allocator may stay resident in its free lists).
    pub(crate) fn on_base_pages(bytes: usize) -> Self {
        let layout = Layout::from_size_align(bytes.max(1), 64).expect("a block's size is a valid layout");
        match map_base(layout.size()) {
            Some(start) => ZeroedPages { start, layout, origin: Origin::BaseMapping },
            None => Self::allocated(layout),
        }
    }

    /// A zeroed block of the global allocator.
    fn allocated(layout: Layout) -> Self {
        // SAFETY: the layout is not empty.
        let start = unsafe { std::alloc::alloc_zeroed(layout) };
        let Some(start) = NonNull::new(start) else {
            std::alloc::handle_alloc_error(layout);
        };
        ZeroedPages { start, layout, origin: Origin::Allocator }
    }

    /// The first byte.
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.start.as_ptr()
    }

    /// The block as atomic words (all-zero bytes are a valid word).
    pub(crate) fn words(&self) -> &[AtomicU64] {
        // SAFETY: the block is aligned to 64, holds `len / 8` whole words, is initialized (to
        // zeros, then by atomic stores only), and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.start.as_ptr().cast(), self.len() / 8) }
    }

    /// [`ZeroedPages::words`], for their one owner.
    pub(crate) fn words_mut(&mut self) -> &mut [AtomicU64] {
        // SAFETY: as in `words`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.start.as_ptr().cast(), self.len() / 8) }
    }

    /// The block's size in bytes, as asked for.
    pub(crate) fn len(&self) -> usize {
        self.layout.size()
    }

    /// Gives the block's whole pages back to the system while keeping them addressable: from
    /// then on they read as zeros (or, for a reader already on its way, the old contents).
    pub(crate) fn release(&self) {
        release_whole_pages(self.start.as_ptr() as usize, self.len());
    }
}

impl Drop for ZeroedPages {
    fn drop(&mut self) {
        match self.origin {
            Origin::Mapping => unmap(self.start.as_ptr() as usize, self.len().next_multiple_of(LARGE_PAGE)),
            Origin::BaseMapping => unmap(self.start.as_ptr() as usize, self.len()),
            Origin::Shared(size) => shared_large_pages::shared().give_back(self.start, size),
            Origin::Allocator => {
                // The allocator may keep the block in its free lists, resident: its whole pages
                // go back to the system first (a packed visited set's small tables, freed as it
                // grew, stayed resident in glibc's heap: 7.9 MB at two-phase commit N = 8).
                self.release();
                // SAFETY: allocated by the global allocator with this layout, and no longer
                // referred to.
                unsafe { std::alloc::dealloc(self.start.as_ptr(), self.layout) }
            }
        }
    }
}

/// A mapping of its own of `bytes` (at least [`LARGE_PAGE`]) rounded up to large pages, aligned
/// to a large page and offered to transparent huge pages, on Linux; `None` elsewhere, or if the
/// system refuses the mapping (the global allocator then has its say, and its own failure
/// handling).
#[cfg(target_os = "linux")]
fn map_large(bytes: usize) -> Option<NonNull<u8>> {
    let bytes = bytes.next_multiple_of(LARGE_PAGE);
    let reserved = bytes + LARGE_PAGE;
    let raw = map_anonymous(reserved)?;
    let start = raw.next_multiple_of(LARGE_PAGE);
    let (head, tail) = (start - raw, raw + reserved - (start + bytes));
    // SAFETY: the head and tail lie inside the mapping just made, outside the aligned block
    // kept; unmapping them leaves the block whole. The advice only concerns the block.
    unsafe {
        if head > 0 {
            libc::munmap(raw as *mut libc::c_void, head);
        }
        if tail > 0 {
            libc::munmap((start + bytes) as *mut libc::c_void, tail);
        }
        libc::madvise(start as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE);
    }
    NonNull::new(start as *mut u8)
}

#[cfg(not(target_os = "linux"))]
fn map_large(_: usize) -> Option<NonNull<u8>> {
    None
}

/// A mapping of its own of `bytes` on base pages, on Linux; `None` elsewhere, or if the system
/// refuses the mapping.
#[cfg(target_os = "linux")]
fn map_base(bytes: usize) -> Option<NonNull<u8>> {
    NonNull::new(map_anonymous(bytes)? as *mut u8)
}

/// The address of a fresh private anonymous mapping of `bytes`, read and write; `None` if the
/// system refuses it.
#[cfg(target_os = "linux")]
fn map_anonymous(bytes: usize) -> Option<usize> {
    // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    (raw != libc::MAP_FAILED).then_some(raw as usize)
}

#[cfg(not(target_os = "linux"))]
fn map_base(_: usize) -> Option<NonNull<u8>> {
    None
}

/// Unmaps the `bytes` at `start`, mapped by [`map_large`] (then a multiple of [`LARGE_PAGE`])
/// or [`map_base`], and no longer referred to.
#[cfg(target_os = "linux")]
fn unmap(start: usize, bytes: usize) {
    // SAFETY: mapped by `map_large` or `map_base` with this length, and no longer referred to.
    unsafe { libc::munmap(start as *mut libc::c_void, bytes) };
}

#[cfg(not(target_os = "linux"))]
fn unmap(_: usize, _: usize) {
    unreachable!("only Linux maps blocks of their own")
}

/// Gives the whole pages among the `len` bytes at `start` back to the system while keeping them
/// addressable: from then on they read as zeros. Their owner writes them no more.
fn release_whole_pages(start: usize, len: usize) {
    #[cfg(unix)]
    {
        // SAFETY: `sysconf` only reads a constant of the system.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096).max(1);
        let first = start.next_multiple_of(page);
        let end = (start + len) / page * page;
        if end > first {
            // SAFETY: the pages lie inside a block whose owner writes it no more;
            // `MADV_DONTNEED` makes private anonymous pages read as zeros from now on (and the
            // allocator assumes nothing of a live block's contents).
            unsafe { libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_DONTNEED) };
        }
    }
    #[cfg(not(unix))]
    let _ = (start, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_of_either_kind_are_zeroed_writable_and_aligned() {
        for bytes in [
            1,
            64,
            4096,
            128 << 10,
            48 << 12,
            (1 << 20) - 64,
            LARGE_PAGE - 64,
            LARGE_PAGE,
            3 << 20,
            3 * LARGE_PAGE + 64,
        ] {
            let block = ZeroedPages::new(bytes);
            assert_eq!(block.len(), bytes);
            assert_eq!(block.as_ptr() as usize % 64, 0, "{bytes} bytes");
            if cfg!(target_os = "linux") {
                match SharedLargePages::block_size(bytes) {
                    Some(size) => {
                        assert!(matches!(block.origin, Origin::Shared(s) if s == size), "{bytes} bytes")
                    }
                    None if bytes >= LARGE_PAGE => {
                        assert!(matches!(block.origin, Origin::Mapping), "{bytes} bytes");
                        assert_eq!(block.as_ptr() as usize % LARGE_PAGE, 0, "{bytes} bytes");
                    }
                    None => assert!(matches!(block.origin, Origin::Allocator), "{bytes} bytes"),
                }
            }
            // SAFETY: the block holds `bytes` bytes.
            let slice = unsafe { std::slice::from_raw_parts_mut(block.as_ptr(), bytes) };
            assert!(slice.iter().all(|&b| b == 0), "{bytes} bytes start zeroed");
            slice.fill(7);
            assert_eq!(slice[bytes - 1], 7);
        }
    }

    #[test]
    fn blocks_on_base_pages_are_zeroed_writable_and_aligned() {
        for bytes in [1, 48 << 12, 3 << 20, (48 << 15) + 100] {
            let block = ZeroedPages::on_base_pages(bytes);
            assert_eq!(block.len(), bytes);
            assert_eq!(block.as_ptr() as usize % 64, 0, "{bytes} bytes");
            if cfg!(target_os = "linux") {
                assert!(matches!(block.origin, Origin::BaseMapping), "{bytes} bytes");
            }
            // SAFETY: the block holds `bytes` bytes.
            let slice = unsafe { std::slice::from_raw_parts_mut(block.as_ptr(), bytes) };
            assert!(slice.iter().all(|&b| b == 0), "{bytes} bytes start zeroed");
            slice.fill(7);
            assert_eq!(slice[bytes - 1], 7);
        }
    }

    #[test]
    fn a_released_block_reads_as_zeros_and_stays_addressable() {
        let bytes = LARGE_PAGE + 8192;
        let block = ZeroedPages::new(bytes);
        // SAFETY: the block holds `bytes` bytes.
        unsafe { std::slice::from_raw_parts_mut(block.as_ptr(), bytes) }.fill(1);
        block.release();
        // SAFETY: as above; a released block stays mapped.
        let slice = unsafe { std::slice::from_raw_parts(block.as_ptr(), bytes) };
        assert!(slice.iter().all(|&b| b == 0 || b == 1));
        if cfg!(unix) {
            assert_eq!(slice[4096], 0, "whole pages are given back");
        }
    }
}
