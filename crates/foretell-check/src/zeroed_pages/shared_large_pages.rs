//! Blocks of [`SMALLEST`] bytes and more, below a few large pages, carved from groups of large
//! pages that blocks of one size share.
//!
//! A visited set has 64 shards, and each shard's table stays below a large page for most of a
//! search of a few million states: two-phase commit with N = 9 spends 70% of its run with 64
//! tables of 1 MiB. Each on its own allocation, those 64 MiB lie on base pages, and nearly every
//! lookup walks the page tables. Sixteen tables of 128 KiB, or two of 1 MiB, share a 2 MiB
//! large page here instead, so 64 MiB of tables take 32 TLB entries. The shards of a set grow at
//! about the same time (fingerprints are uniform), so the blocks of one size fill their groups.
//!
//! A block is a power of two of bytes, up to half a large page, and its group is one large
//! page; or three times a power of two (the packed visited set's 48-byte buckets), up to one and
//! a half large pages, and its group is three large pages, which such blocks fill exactly. A
//! block lies at a multiple of its size inside its group. Blocks come zeroed: a fresh page reads
//! as zeros, and a block given back is zeroed by the system (`MADV_DONTNEED`) before another
//! owner may take it; a group whose blocks are all given back is unmapped. Giving back a block
//! whose group still holds others, or releasing an outgrown table's block
//! ([`super::ZeroedPages::release`]), splits its large pages into base pages; the other tables
//! of the group are outgrown at about the same time, so the split is short-lived.

use super::{release_whole_pages, LARGE_PAGE};
use std::ptr::NonNull;
use std::sync::{Mutex, PoisonError};

/// The smallest block that shares a large page: below it, a whole set of 64 tables is within
/// the TLB's reach on base pages, and a large page would hold more tables than one set has
/// shards of that size.
pub(super) const SMALLEST: usize = 128 << 10;

/// Block sizes, smallest first: the powers of two from [`SMALLEST`] to half a large page, and
/// three times the powers of two from half of [`SMALLEST`] to half a large page.
const SIZES: [usize; 9] = [
    SMALLEST,
    3 * SMALLEST / 2,
    2 * SMALLEST,
    3 * SMALLEST,
    4 * SMALLEST,
    6 * SMALLEST,
    8 * SMALLEST,
    12 * SMALLEST,
    24 * SMALLEST,
];

/// The blocks every set of the process draws from.
static SHARED: Mutex<SharedLargePages> = Mutex::new(SharedLargePages::new());

/// Groups of large pages, by the size of the blocks they are cut into.
pub(super) struct SharedLargePages {
    groups: [Vec<Group>; SIZES.len()],
}

/// One group of large pages and which of its blocks are taken.
struct Group {
    start: usize,
    /// Bit `i` for block `i`; a group holds at most 32 blocks (of `3 * SMALLEST / 2` bytes).
    taken: u32,
}

impl SharedLargePages {
    const fn new() -> Self {
        SharedLargePages { groups: [const { Vec::new() }; SIZES.len()] }
    }

    /// The size of the block that serves `bytes`, if blocks of that size share large pages: the
    /// smallest block size at least `bytes`, if it is below the whole large pages `bytes`
    /// would take on their own.
    pub(super) fn block_size(bytes: usize) -> Option<usize> {
        let own = bytes.checked_next_multiple_of(LARGE_PAGE)?;
        SIZES.into_iter().find(|&size| size >= bytes).filter(|&size| bytes >= SMALLEST && size < own)
    }

    /// The bytes of a group of blocks of `size` bytes: three large pages for three times a
    /// power of two, else one.
    fn group_bytes(size: usize) -> usize {
        if size.is_power_of_two() {
            LARGE_PAGE
        } else {
            3 * LARGE_PAGE
        }
    }

    /// A zeroed block of `size` bytes (a [`SharedLargePages::block_size`]), from a group that
    /// has room or a new one; `None` if the system gives no new pages.
    pub(super) fn take(&mut self, size: usize) -> Option<NonNull<u8>> {
        let group_bytes = Self::group_bytes(size);
        let full = u32::MAX >> (32 - group_bytes / size);
        let groups = &mut self.groups[Self::index(size)];
        let group = match groups.iter_mut().find(|group| group.taken != full) {
            Some(group) => group,
            None => {
                groups.push(Group { start: super::map_large(group_bytes)?.as_ptr() as usize, taken: 0 });
                groups.last_mut().expect("just pushed")
            }
        };
        let block = group.taken.trailing_ones() as usize;
        group.taken |= 1 << block;
        NonNull::new((group.start + block * size) as *mut u8)
    }

    /// Gives back the block of `size` bytes at `start`, taken from here and no longer referred
    /// to: zeroed for its next owner, or unmapped with its group if it was the group's last.
    pub(super) fn give_back(&mut self, start: NonNull<u8>, size: usize) {
        let (start, group_bytes) = (start.as_ptr() as usize, Self::group_bytes(size));
        let groups = &mut self.groups[Self::index(size)];
        let at = groups
            .iter()
            .position(|group| (group.start..group.start + group_bytes).contains(&start))
            .expect("a shared block is given back to the group it was taken from");
        let group = &mut groups[at];
        group.taken &= !(1 << ((start - group.start) / size));
        if group.taken == 0 {
            super::unmap(group.start, group_bytes);
            groups.swap_remove(at);
        } else {
            release_whole_pages(start, size);
        }
    }

    fn index(size: usize) -> usize {
        SIZES.iter().position(|&s| s == size).expect("a block size")
    }

    /// Groups in use for blocks of `size` bytes.
    #[cfg(test)]
    fn groups(&self, size: usize) -> usize {
        self.groups[Self::index(size)].len()
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
    fn block_sizes_are_the_smallest_that_fit() {
        assert_eq!(SharedLargePages::block_size(SMALLEST - 1), None);
        assert_eq!(SharedLargePages::block_size(SMALLEST), Some(SMALLEST));
        assert_eq!(SharedLargePages::block_size(SMALLEST + 1), Some(3 * SMALLEST / 2));
        assert_eq!(SharedLargePages::block_size(48 << 12), Some(48 << 12), "a packed table of 2^12 buckets");
        assert_eq!(SharedLargePages::block_size(LARGE_PAGE / 2), Some(LARGE_PAGE / 2));
        assert_eq!(SharedLargePages::block_size(LARGE_PAGE / 2 + 1), Some(3 * LARGE_PAGE / 4));
        assert_eq!(
            SharedLargePages::block_size(LARGE_PAGE - 64),
            None,
            "no better than a large page of its own"
        );
        assert_eq!(SharedLargePages::block_size(LARGE_PAGE), None, "a whole large page");
        assert_eq!(SharedLargePages::block_size(3 * LARGE_PAGE / 2), Some(3 * LARGE_PAGE / 2));
        assert_eq!(SharedLargePages::block_size(3 * LARGE_PAGE / 2 + 1), None);
        assert_eq!(SharedLargePages::block_size(usize::MAX), None);
    }

    #[test]
    fn blocks_of_one_size_fill_a_group_before_the_next_is_mapped() {
        for size in [4 * SMALLEST, 3 * SMALLEST] {
            let mut pages = SharedLargePages::new();
            let per_group = SharedLargePages::group_bytes(size) / size;
            assert_eq!(per_group * size, SharedLargePages::group_bytes(size), "blocks fill their group");
            let blocks: Vec<_> = (0..per_group + 1).map(|_| pages.take(size).expect("mapped")).collect();
            assert_eq!(pages.groups(size), 2);
            let first = blocks[0].as_ptr() as usize;
            assert_eq!(first % LARGE_PAGE, 0);
            for (i, block) in blocks[..per_group].iter().enumerate() {
                assert_eq!(block.as_ptr() as usize, first + i * size, "block {i} in the first group");
            }
            for block in blocks {
                pages.give_back(block, size);
            }
            assert_eq!(pages.groups(size), 0, "groups whose blocks all came back are unmapped");
        }
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
        assert_eq!(pages.groups(size), 0);
    }
}
