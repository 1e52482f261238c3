//! The visited set of a search on one thread: every 64-bit fingerprint kept, exactly, in a
//! quarter less memory than whole fingerprints once the set is large.
//!
//! A fingerprint's top [`SHARD_BITS`] bits pick one of 64 shards; the remaining 58 bits are the
//! shard's key. A shard's table has `2^b` buckets of eight slots, and its format depends on `b`:
//!
//! * **Wide** ([`Linear`]), below [`NARROW_FROM`] bucket bits: 8-byte slots holding whole keys,
//!   one bucket a cache line, linear probing bucket by bucket (Knuth, TAOCP 6.4), as in
//!   [`crate::fingerprint_set`]'s exact table. A lookup reads one cache line.
//! * **Narrow** ([`Cuckoo`]), from [`NARROW_FROM`] bucket bits on: 6-byte slots, 48-byte
//!   buckets, two-choice cuckoo placement (Pagh and Rodler, "Cuckoo hashing", ESA 2001; buckets
//!   of several slots after Dietzfelbinger and Weidling, "Balanced allocation and dictionaries
//!   with tightly packed constant size bins", TCS 2007). A key's first bucket is its top `b`
//!   bits; its second is the first XORed with a function of its low `58 - b` bits, the part a
//!   slot stores (the "partial key" of Fan et al.'s cuckoo filter, CoNEXT 2014). A slot also
//!   holds a two-bit tag, 01 in the first bucket and 10 in the second (00 is empty), so the key
//!   is recovered exactly from the slot and its bucket. Linear probing cannot do this in 48
//!   bits: a slot would need the distance from its home, and at 7/8 full that distance reaches
//!   40 and more (docs/BENCHMARKS.md, "A packed visited set, spiked").
//!
//! Nothing is lost in either format, and a shard doubles by re-placing the keys it recovers.
//! Two-phase commit's 1.7 million states at N = 8 take 12 MiB instead of the exact table's
//! 16 MiB. A narrow lookup reads both of a key's buckets, without a branch on which one matched:
//! such a branch is mispredicted on a large share of lookups, and each misprediction waits for
//! the cache miss that feeds it (a build with `||` between the two ran 11% slower). Entries move
//! when a cuckoo path evicts them, so the set has one owner and no lock-free readers; a search
//! on several threads keeps [`crate::fingerprint_set::FingerprintSet`].

use crate::zeroed_pages::ZeroedPages;
use foretell_model::prefetch_once;

/// How many top fingerprint bits pick a shard.
const SHARD_BITS: u32 = 6;

/// The bits of a fingerprint under the shard's: a shard's key.
const KEY_BITS: u32 = 64 - SHARD_BITS;

/// Bucket bits of a shard's first table: 64 buckets, 512 slots.
const INITIAL_BITS: u32 = 6;

/// Bucket bits from which a table is [`Cuckoo`]: the stored `KEY_BITS - b` bits and the tag
/// then fit in 48 bits.
const NARROW_FROM: u32 = KEY_BITS + 2 - 48;

/// Slots per bucket.
const SLOTS: usize = 8;

/// Evictions a cuckoo path may take before the shard doubles instead.
const MAX_EVICTIONS: usize = 500;

/// A narrow slot's tag in its key's first bucket.
const FIRST: u64 = 1;
/// A narrow slot's tag in its key's second bucket.
const SECOND: u64 = 2;
/// Where a narrow slot's tag starts: above the most stored bits a narrow table has.
const TAG_AT: u32 = KEY_BITS - NARROW_FROM;

// A narrow slot is its stored bits and a 2-bit tag in 48 bits; a bucket, eight of them.
const _: () = assert!(TAG_AT + 2 == 48 && std::mem::size_of::<NarrowBucket>() == 48);

/// A set of 64-bit fingerprints with one owner.
pub(crate) struct PackedSet {
    shards: Box<[Shard]>,
    len: u64,
    /// The state of the xorshift generator that picks whom a cuckoo path evicts.
    random: u64,
}

impl PackedSet {
    /// An empty set.
    pub(crate) fn new() -> Self {
        let shards = (0..1 << SHARD_BITS).map(|_| Shard::new()).collect();
        PackedSet { shards, len: 0, random: 0x9e37_79b9_7f4a_7c15 }
    }

    /// Adds `fp` and tells whether it was new.
    #[inline(always)]
    pub(crate) fn insert(&mut self, fp: u64) -> bool {
        let (shard, key) = split(fp);
        let new = self.shards[shard].insert(key, &mut self.random);
        self.len += u64::from(new);
        new
    }

    /// Starts loading the memory an insert of `fp` will read (see
    /// [`crate::fingerprint_set::FingerprintSet::prefetch`]).
    #[inline(always)]
    pub(crate) fn prefetch(&self, fp: u64) {
        let (shard, key) = split(fp);
        self.shards[shard].table.prefetch(key);
    }

    /// Whether `fp` is in the set.
    #[cfg(test)]
    pub(crate) fn contains(&self, fp: u64) -> bool {
        let (shard, key) = split(fp);
        self.shards[shard].table.contains(key)
    }

    /// How many fingerprints the set holds.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Heap bytes held by the tables.
    pub(crate) fn bytes(&self) -> u64 {
        self.shards.iter().map(|shard| shard.table.bytes()).sum()
    }
}

/// A fingerprint's shard and its key in the shard.
#[inline(always)]
fn split(fp: u64) -> (usize, u64) {
    ((fp >> KEY_BITS) as usize, fp & ((1 << KEY_BITS) - 1))
}

/// One shard: its table and how many keys it holds.
struct Shard {
    table: Table,
    len: u64,
}

impl Shard {
    fn new() -> Self {
        Shard { table: Table::empty(INITIAL_BITS), len: 0 }
    }

    /// Adds `key` and tells whether it was new. The lookup is inlined where the search runs;
    /// adding a new key is not (see [`Shard::add`]).
    #[inline(always)]
    fn insert(&mut self, key: u64, random: &mut u64) -> bool {
        let room = match &self.table {
            Table::Wide(table) => match table.room(key) {
                Some(bucket) => Some(bucket),
                None => return false,
            },
            Table::Narrow(table) if table.contains(key) => return false,
            Table::Narrow(_) => None,
        };
        self.add(key, room, random);
        true
    }

    /// Adds `key`, which is absent (in a wide table, to bucket `room`), doubling the table when
    /// it is more than 7/8 full or when a cuckoo path finds no room.
    #[inline(never)]
    fn add(&mut self, key: u64, room: Option<usize>, random: &mut u64) {
        let placed = match (&mut self.table, room) {
            (Table::Wide(table), Some(bucket)) => {
                table.put(bucket, key);
                Ok(())
            }
            (table, _) => table.place(key, random),
        };
        self.len += 1;
        match placed {
            Err(homeless) => self.table = self.table.grown(Some(homeless), random),
            Ok(()) if self.len * 8 > self.table.slots() * 7 => self.table = self.table.grown(None, random),
            Ok(()) => {}
        }
    }
}

/// A shard's table in the format its size allows.
enum Table {
    Wide(Linear),
    Narrow(Cuckoo),
}

impl Table {
    /// An empty table of `2^bits` buckets.
    fn empty(bits: u32) -> Self {
        if bits < NARROW_FROM {
            Table::Wide(Linear::empty(bits))
        } else {
            Table::Narrow(Cuckoo::empty(bits))
        }
    }

    #[cfg(test)]
    fn contains(&self, key: u64) -> bool {
        match self {
            Table::Wide(table) => table.room(key).is_none(),
            Table::Narrow(table) => table.contains(key),
        }
    }

    #[inline(always)]
    fn prefetch(&self, key: u64) {
        match self {
            Table::Wide(table) => table.prefetch(key),
            Table::Narrow(table) => table.prefetch(key),
        }
    }

    /// Places `key`, which is absent, in a table below its fill limit; `Err` with the key a
    /// full cuckoo path left without a place (every other key is in the table).
    fn place(&mut self, key: u64, random: &mut u64) -> Result<(), u64> {
        match self {
            Table::Wide(table) => {
                let bucket = table.room(key).expect("the key is absent");
                table.put(bucket, key);
                Ok(())
            }
            Table::Narrow(table) => table.place(key, random),
        }
    }

    /// Calls `f` on every key in the table while it returns true; whether it always did.
    fn all_keys(&self, f: impl FnMut(u64) -> bool) -> bool {
        match self {
            Table::Wide(table) => table.all_keys(f),
            Table::Narrow(table) => table.all_keys(f),
        }
    }

    fn bits(&self) -> u32 {
        match self {
            Table::Wide(table) => table.bits,
            Table::Narrow(table) => table.bits,
        }
    }

    fn slots(&self) -> u64 {
        (SLOTS as u64) << self.bits()
    }

    fn bytes(&self) -> u64 {
        match self {
            Table::Wide(table) => table.pages.len() as u64,
            Table::Narrow(table) => table.pages.len() as u64,
        }
    }

    /// A table twice the size (or larger, should a key find no place) holding this one's keys
    /// and `extra`.
    fn grown(&self, extra: Option<u64>, random: &mut u64) -> Table {
        let mut bits = self.bits() + 1;
        loop {
            let mut table = Table::empty(bits);
            let mut place = |key| table.place(key, random).is_ok();
            if self.all_keys(&mut place) && extra.is_none_or(place) {
                return table;
            }
            bits += 1;
        }
    }
}

/// A wide table: `2^bits` buckets of eight whole keys, each key stored with a marker bit above
/// it (0 is an empty slot), in the first bucket with a free slot from the key's home bucket on.
/// Buckets fill from the front and nothing is removed, so a lookup stops at the first bucket
/// whose last slot is free.
struct Linear {
    pages: ZeroedPages,
    bits: u32,
}

/// A wide slot's marker: set in every used slot.
const USED: u64 = 1 << KEY_BITS;

impl Linear {
    fn empty(bits: u32) -> Self {
        Linear { pages: ZeroedPages::new(std::mem::size_of::<[u64; SLOTS]>() << bits), bits }
    }

    #[inline(always)]
    fn home(&self, key: u64) -> usize {
        (key >> (KEY_BITS - self.bits)) as usize
    }

    #[inline(always)]
    fn bucket(&self, index: usize) -> &[u64; SLOTS] {
        debug_assert!(index < 1 << self.bits);
        // SAFETY: `index` is below the `2^bits` buckets the block holds; the block is aligned
        // to 64, zeroed or written through `bucket_mut` only (any bits are valid integers), and
        // lives as long as `self`.
        unsafe { &*self.pages.as_ptr().cast::<[u64; SLOTS]>().add(index) }
    }

    #[inline(always)]
    fn bucket_mut(&mut self, index: usize) -> &mut [u64; SLOTS] {
        debug_assert!(index < 1 << self.bits);
        // SAFETY: as in `bucket`, and `&mut self` makes the access exclusive.
        unsafe { &mut *self.pages.as_ptr().cast::<[u64; SLOTS]>().add(index) }
    }

    /// `None` if the table holds `key`, else the first bucket from its home with a free slot,
    /// where it belongs.
    #[inline(always)]
    fn room(&self, key: u64) -> Option<usize> {
        let (slot, mask) = (key | USED, (1 << self.bits) - 1);
        let mut index = self.home(key);
        loop {
            let bucket = self.bucket(index);
            // Whether the smallest difference (XOR) of a slot from the key is zero, taken
            // pairwise: conditional moves, no branch per slot (see `NarrowBucket::holds`).
            let [a, b, c, d, e, f, g, h] = bucket.map(|s| s ^ slot);
            if a.min(b).min(c.min(d)).min(e.min(f).min(g.min(h))) == 0 {
                return None;
            }
            if bucket[SLOTS - 1] == 0 {
                return Some(index);
            }
            index = (index + 1) & mask;
        }
    }

    /// Puts `key` in the first free slot of bucket `index`, which has one.
    fn put(&mut self, index: usize, key: u64) {
        let bucket = self.bucket_mut(index);
        let free = bucket.iter().position(|&s| s == 0).expect("the bucket has room");
        bucket[free] = key | USED;
    }

    #[inline(always)]
    fn prefetch(&self, key: u64) {
        prefetch_once(self.bucket(self.home(key)));
    }

    fn all_keys(&self, mut f: impl FnMut(u64) -> bool) -> bool {
        (0..1usize << self.bits)
            .all(|index| self.bucket(index).iter().take_while(|&&s| s != 0).all(|&s| f(s & !USED)))
    }
}

/// A narrow table: `2^bits` buckets of eight 48-bit slots, two-choice cuckoo placement.
struct Cuckoo {
    pages: ZeroedPages,
    bits: u32,
}

/// A bucket of narrow slots: slot `i` is `low[i] | high[i] << 32`; 48 bytes.
#[repr(C)]
struct NarrowBucket {
    low: [u32; SLOTS],
    high: [u16; SLOTS],
}

impl NarrowBucket {
    #[inline(always)]
    fn get(&self, index: usize) -> u64 {
        u64::from(self.low[index]) | u64::from(self.high[index]) << 32
    }

    fn set(&mut self, index: usize, slot: u64) {
        self.low[index] = slot as u32;
        self.high[index] = (slot >> 32) as u16;
    }

    /// Whether some slot is `slot`, without a branch per slot: which slot holds a seen key is
    /// random, and a branch on it would be mispredicted about once a lookup.
    #[inline(always)]
    fn holds(&self, slot: u64) -> bool {
        let (low, high) = (slot as u32, (slot >> 32) as u16);
        let mut found = false;
        for i in 0..SLOTS {
            found |= (self.low[i] == low) & (self.high[i] == high);
        }
        found
    }

    /// The first empty slot.
    fn free(&self) -> Option<usize> {
        (0..SLOTS).find(|&index| self.get(index) == 0)
    }
}

impl Cuckoo {
    fn empty(bits: u32) -> Self {
        let bytes = std::mem::size_of::<NarrowBucket>() << bits;
        // The first narrow tables replace wide ones shard by shard. On large pages, shared in
        // groups, each would make 2 MiB resident at its first write while the wide tables are
        // still there: two-phase commit at N = 8, which ends with these tables, peaked at
        // 30.3 MB against 21.7 MB on base pages (docs/BENCHMARKS.md, "A packed visited set").
        let pages =
            if bits == NARROW_FROM { ZeroedPages::on_base_pages(bytes) } else { ZeroedPages::new(bytes) };
        Cuckoo { pages, bits }
    }

    /// The stored bits of a key: its low `KEY_BITS - bits`, which with the bucket give it back.
    #[inline(always)]
    fn stored(&self, key: u64) -> u64 {
        key & ((1 << (KEY_BITS - self.bits)) - 1)
    }

    /// A key's first bucket.
    #[inline(always)]
    fn first(&self, key: u64) -> usize {
        (key >> (KEY_BITS - self.bits)) as usize
    }

    /// What the first bucket is XORed with for the second: never 0, so the two differ.
    #[inline(always)]
    fn other(&self, stored: u64) -> usize {
        (stored.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - self.bits)) as usize | 1
    }

    /// The key that `slot` in bucket `index` stands for.
    fn key(&self, index: usize, slot: u64) -> u64 {
        let stored = slot & ((1 << TAG_AT) - 1);
        let first = if slot >> TAG_AT == FIRST { index } else { index ^ self.other(stored) };
        (first as u64) << (KEY_BITS - self.bits) | stored
    }

    #[inline(always)]
    fn bucket(&self, index: usize) -> &NarrowBucket {
        debug_assert!(index < 1 << self.bits);
        // SAFETY: `index` is below the `2^bits` buckets the block holds; the block is aligned
        // to 64 (more than a bucket needs), zeroed or written through `bucket_mut` only (any
        // bits are valid integers), and lives as long as `self`.
        unsafe { &*self.pages.as_ptr().cast::<NarrowBucket>().add(index) }
    }

    #[inline(always)]
    fn bucket_mut(&mut self, index: usize) -> &mut NarrowBucket {
        debug_assert!(index < 1 << self.bits);
        // SAFETY: as in `bucket`, and `&mut self` makes the access exclusive.
        unsafe { &mut *self.pages.as_ptr().cast::<NarrowBucket>().add(index) }
    }

    /// A key's two buckets and its stored bits.
    #[inline(always)]
    fn places(&self, key: u64) -> (usize, usize, u64) {
        let (first, stored) = (self.first(key), self.stored(key));
        (first, first ^ self.other(stored), stored)
    }

    #[inline(always)]
    fn contains(&self, key: u64) -> bool {
        let (first, second, stored) = self.places(key);
        self.bucket(first).holds(stored | FIRST << TAG_AT)
            | self.bucket(second).holds(stored | SECOND << TAG_AT)
    }

    #[inline(always)]
    fn prefetch(&self, key: u64) {
        let (first, second, _) = self.places(key);
        for index in [first, second] {
            let start: *const u8 = (self.bucket(index) as *const NarrowBucket).cast();
            prefetch_once(start);
            // A 48-byte bucket may end in the next cache line.
            prefetch_once(start.wrapping_add(std::mem::size_of::<NarrowBucket>() - 1));
        }
    }

    /// Places `key` in its first bucket, else its second, else evicts along a cuckoo path:
    /// a random slot of the bucket makes room, and its key goes to its own other bucket.
    fn place(&mut self, key: u64, random: &mut u64) -> Result<(), u64> {
        let (first, second, stored) = self.places(key);
        for (index, tag) in [(first, FIRST), (second, SECOND)] {
            if let Some(free) = self.bucket(index).free() {
                self.bucket_mut(index).set(free, stored | tag << TAG_AT);
                return Ok(());
            }
        }
        let (mut index, mut slot) = (first, stored | FIRST << TAG_AT);
        for _ in 0..MAX_EVICTIONS {
            let victim = xorshift(random) as usize % SLOTS;
            let evicted = self.bucket(index).get(victim);
            self.bucket_mut(index).set(victim, slot);
            let key = self.key(index, evicted);
            let (first, second, stored) = self.places(key);
            let (next, tag) = if evicted >> TAG_AT == FIRST { (second, SECOND) } else { (first, FIRST) };
            (index, slot) = (next, stored | tag << TAG_AT);
            if let Some(free) = self.bucket(index).free() {
                self.bucket_mut(index).set(free, slot);
                return Ok(());
            }
        }
        Err(self.key(index, slot))
    }

    fn all_keys(&self, mut f: impl FnMut(u64) -> bool) -> bool {
        (0..1usize << self.bits).all(|index| {
            let bucket = self.bucket(index);
            (0..SLOTS)
                .map(|slot| bucket.get(slot))
                .filter(|&slot| slot != 0)
                .all(|slot| f(self.key(index, slot)))
        })
    }
}

/// The next number of Marsaglia's xorshift64 generator.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint_set::tests::splitmix;
    use std::collections::HashSet;

    #[test]
    fn keeps_every_fingerprint_through_both_formats() {
        let mut set = PackedSet::new();
        let mut reference = HashSet::new();
        // Random fingerprints, fingerprints whose low 20 bits are zero (their stored bits are
        // nearly all zero), and the edges of the range.
        let edges = [0, 1, u64::MAX, u64::MAX - 1, 1 << 63, (1 << KEY_BITS) - 1, 1 << KEY_BITS];
        let fps = edges.into_iter().chain((1..2_000_000).map(|i| {
            let z = splitmix(i);
            if i % 3 == 0 {
                z >> 20 << 20
            } else {
                z
            }
        }));
        for fp in fps {
            assert_eq!(set.insert(fp), reference.insert(fp), "fingerprint {fp:#x}");
            assert!(!set.insert(fp), "fingerprint {fp:#x} found right after its insert");
        }
        assert_eq!(set.len(), reference.len() as u64);
        assert!(
            set.shards.iter().all(|shard| matches!(shard.table, Table::Narrow(_))),
            "the tables grew narrow"
        );
        assert!(reference.iter().all(|&fp| set.contains(fp) && !set.insert(fp)));
        assert!((2_000_000..2_100_000).map(splitmix).all(|fp| !set.contains(fp)));
        assert_eq!(set.len(), reference.len() as u64);
    }

    /// Keys that share their home bucket at every table size: one long cluster while the
    /// shard is wide, then a full first bucket whose keys go to their second buckets and evict
    /// one another along cuckoo paths. None is lost or duplicated.
    #[test]
    fn keys_crowding_one_bucket_are_all_kept() {
        // The same shard and the same top 32 bits of the key.
        let crowded = |i: u64| 7 << KEY_BITS | 0x2bad_cafe << 26 | splitmix(i) >> 38;
        let (mut set, mut crowd) = (PackedSet::new(), HashSet::new());
        for fp in (0..40_000).map(crowded) {
            assert_eq!(set.insert(fp), crowd.insert(fp), "fingerprint {fp:#x}");
        }
        assert_eq!(set.len(), crowd.len() as u64);
        assert!(matches!(set.shards[7].table, Table::Narrow(_)), "the crowded shard grew narrow");
        assert!(crowd.iter().all(|&fp| set.contains(fp) && !set.insert(fp)));
        assert!((40_000..50_000).map(crowded).filter(|fp| !crowd.contains(fp)).all(|fp| !set.contains(fp)));
    }

    #[test]
    fn a_narrow_slot_gives_back_its_key() {
        for bits in [NARROW_FROM, NARROW_FROM + 3] {
            let table = Cuckoo::empty(bits);
            for key in (1..10_000).map(|i| splitmix(i) >> SHARD_BITS) {
                let (first, second, stored) = table.places(key);
                assert_ne!(first, second);
                assert_eq!(table.key(first, stored | FIRST << TAG_AT), key);
                assert_eq!(table.key(second, stored | SECOND << TAG_AT), key);
            }
        }
    }

    #[test]
    fn bytes_follow_the_tables() {
        let mut set = PackedSet::new();
        assert_eq!(set.bytes(), 64 * 64 * 64, "64 shards of 64 buckets of 64 bytes");
        let tables = |set: &PackedSet| set.shards.iter().map(|shard| shard.table.bytes()).sum::<u64>();
        for i in 1..=200_000 {
            set.insert(splitmix(i));
        }
        // All wide: 8 bytes a slot, at most 7/8 and, but for the doubling, at least 7/16 full.
        assert_eq!(set.bytes(), tables(&set));
        assert!(set.bytes() >= 200_000 * 8 * 8 / 7 && set.bytes() <= 200_000 * 8 * 16 / 7);
        for i in 200_001..=1_000_000 {
            set.insert(splitmix(i));
        }
        // All narrow: 6 bytes a slot, at most 7/8 and, but for the doubling, at least 7/16 full.
        assert_eq!(set.bytes(), tables(&set));
        assert!(set.shards.iter().all(|shard| matches!(shard.table, Table::Narrow(_))));
        assert!(set.bytes() >= 1_000_000 * 6 * 8 / 7 && set.bytes() <= 1_000_000 * 6 * 16 / 7);
    }
}
