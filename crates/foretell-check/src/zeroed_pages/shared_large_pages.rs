//! Blocks from [`SMALLEST`] bytes up to half a large page, carved from large pages that blocks of
//! one size share.
//!
//! A visited set has 64 shards, and each shard's table stays below a large page for most of a
//! search of a few million states: two-phase commit with N = 9 spends 70% of its run with 64
//! tables of 1 MiB. Each on its own allocation, those 64 MiB lie on base pages, and nearly every
//! lookup walks the page tables. Sixteen tables of 128 KiB, or two of 1 MiB, share a 2 MiB
//! large page here instead, so 64 MiB of tables take 32 TLB entries. The shards of a set grow at
//! about the same time (fingerprints are uniform), so the blocks of one size fill their pages.
//!
//! A block is a power of two of bytes, at a multiple of its size inside its page. Blocks come
//! zeroed: a fresh page reads as zeros, and a block given back is zeroed by the system
//! (`MADV_DONTNEED`) before another owner may take it; a page whose blocks are all given back
//! is unmapped. Giving back a block whose page still holds others, or releasing an outgrown
//! table's block ([`super::ZeroedPages::release`]), splits that large page into base pages; the
//! other tables of the page are outgrown at about the same time, so the split is short-lived.

use super::{release_whole_pages, LARGE_PAGE};
use std::ptr::NonNull;
use std::sync::{Mutex, PoisonError};

/// The smallest block that shares a large page: below it, a whole set of 64 tables is within
/// the TLB's reach on base pages, and a large page would hold more tables than one set has
/// shards of that size.
pub(super) const SMALLEST: usize = 128 << 10;

/// Block sizes, one per power of two from [`SMALLEST`] to half a large page.
const SIZES: usize = (LARGE_PAGE / SMALLEST).trailing_zeros() as usize;

/// The blocks every set of the process draws from.
static SHARED: Mutex<SharedLargePages> = Mutex::new(SharedLargePages::new());

/// Large pages, by the size of the blocks they are cut into.
pub(super) struct SharedLargePages {
    pages: [Vec<Page>; SIZES],
}

/// One large page and which of its blocks are taken.
struct Page {
    start: usize,
    /// Bit `i` for block `i`; a page holds at most `LARGE_PAGE / SMALLEST` (16) blocks.
    taken: u16,
}

impl SharedLargePages {
    const fn new() -> Self {
        SharedLargePages { pages: [const { Vec::new() }; SIZES] }
    }

    /// The size of the block that serves `bytes`, if blocks of that size share large pages.
    pub(super) fn block_size(bytes: usize) -> Option<usize> {
        let size = bytes.checked_next_power_of_two()?;
        (bytes >= SMALLEST && size <= LARGE_PAGE / 2).then_some(size)
    }

    /// A zeroed block of `size` bytes (a [`SharedLargePages::block_size`]), from a page that
    /// has room or a new one; `None` if the system gives no new page.
    pub(super) fn take(&mut self, size: usize) -> Option<NonNull<u8>> {
        let blocks = LARGE_PAGE / size;
        let full = u16::MAX >> (16 - blocks);
        let pages = &mut self.pages[Self::index(size)];
        let page = match pages.iter_mut().find(|page| page.taken != full) {
            Some(page) => page,
            None => {
                pages.push(Page { start: super::map_large(LARGE_PAGE)?.as_ptr() as usize, taken: 0 });
                pages.last_mut().expect("just pushed")
            }
        };
        let block = page.taken.trailing_ones() as usize;
        page.taken |= 1 << block;
        NonNull::new((page.start + block * size) as *mut u8)
    }

    /// Gives back the block of `size` bytes at `start`, taken from here and no longer referred
    /// to: zeroed for its next owner, or unmapped with its page if it was the page's last.
    pub(super) fn give_back(&mut self, start: NonNull<u8>, size: usize) {
        let start = start.as_ptr() as usize;
        let pages = &mut self.pages[Self::index(size)];
        let at = pages
            .iter()
            .position(|page| (page.start..page.start + LARGE_PAGE).contains(&start))
            .expect("a shared block is given back to the page it was taken from");
        let page = &mut pages[at];
        page.taken &= !(1 << ((start - page.start) / size));
        if page.taken == 0 {
            super::unmap_large(page.start, LARGE_PAGE);
            pages.swap_remove(at);
        } else {
            release_whole_pages(start, size);
        }
    }

    fn index(size: usize) -> usize {
        (size / SMALLEST).trailing_zeros() as usize
    }

    /// Pages in use for blocks of `size` bytes.
    #[cfg(test)]
    fn pages(&self, size: usize) -> usize {
        self.pages[Self::index(size)].len()
    }
}

/// Locks the process's shared pages, ignoring poisoning: a panic elsewhere cannot leave the
/// page list half changed (no method panics between its changes but on a broken invariant).
pub(super) fn shared() -> std::sync::MutexGuard<'static, SharedLargePages> {
    SHARED.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn bytes_of(start: NonNull<u8>, size: usize) -> &'static mut [u8] {
        // SAFETY: the tests only pass blocks they took, of that size, and still hold.
        unsafe { std::slice::from_raw_parts_mut(start.as_ptr(), size) }
    }

    #[test]
    fn block_sizes_are_powers_of_two_from_the_smallest_to_half_a_large_page() {
        assert_eq!(SharedLargePages::block_size(SMALLEST - 1), None);
        assert_eq!(SharedLargePages::block_size(SMALLEST), Some(SMALLEST));
        assert_eq!(SharedLargePages::block_size(SMALLEST + 1), Some(2 * SMALLEST));
        assert_eq!(SharedLargePages::block_size(LARGE_PAGE / 2), Some(LARGE_PAGE / 2));
        assert_eq!(SharedLargePages::block_size(LARGE_PAGE / 2 + 1), None);
        assert_eq!(SharedLargePages::block_size(usize::MAX), None);
    }

    #[test]
    fn blocks_of_one_size_fill_a_large_page_before_the_next_is_mapped() {
        let mut pages = SharedLargePages::new();
        let size = 4 * SMALLEST;
        let blocks: Vec<_> = (0..LARGE_PAGE / size + 1).map(|_| pages.take(size).expect("mapped")).collect();
        assert_eq!(pages.pages(size), 2);
        let first = blocks[0].as_ptr() as usize;
        assert_eq!(first % LARGE_PAGE, 0);
        for (i, block) in blocks[..LARGE_PAGE / size].iter().enumerate() {
            assert_eq!(block.as_ptr() as usize, first + i * size, "block {i} in the first page");
        }
        for block in blocks {
            pages.give_back(block, size);
        }
        assert_eq!(pages.pages(size), 0, "pages whose blocks all came back are unmapped");
    }

    #[test]
    fn a_block_given_back_is_zeroed_before_it_is_taken_again() {
        let mut pages = SharedLargePages::new();
        let size = SMALLEST;
        let (kept, reused) = (pages.take(size).expect("mapped"), pages.take(size).expect("mapped"));
        for block in [kept, reused] {
            assert!(bytes_of(block, size).iter().all(|&b| b == 0));
            bytes_of(block, size).fill(9);
        }
        pages.give_back(reused, size);
        let again = pages.take(size).expect("mapped");
        assert_eq!(again, reused, "the free block is taken again");
        assert!(bytes_of(again, size).iter().all(|&b| b == 0), "and reads as zeros");
        assert!(bytes_of(kept, size).iter().all(|&b| b == 9), "its neighbour keeps its contents");
        pages.give_back(again, size);
        pages.give_back(kept, size);
        assert_eq!(pages.pages(size), 0);
    }
}
