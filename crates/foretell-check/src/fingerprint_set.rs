//! The visited set of the stateful engines: which 64-bit state fingerprints have been seen.
//! (A search on one thread in the exact mode keeps them in [`crate::packed_set`] instead, in a
//! quarter less memory; this set is the one threads share, and the lossy modes'.)
//!
//! A stateful search asks one question per successor — "insert this fingerprint; was it new?" —
//! tens of millions of times a second, and the set's size is usually what bounds the search. So
//! the set stores nothing but fingerprints, and offers SPIN's three memory modes ([`MemoryMode`]):
//!
//! * **Exact**: every fingerprint kept, 8 bytes a slot and nothing else. Fingerprints are
//!   uniformly distributed and already mixed, so they are their own hash: the top [`SHARD_BITS`]
//!   bits pick one of 64 shards and the next bits a home bucket — one cache line of 8 slots — in
//!   the shard's open-addressing table of `u64`, probed linearly bucket by bucket, with 0 as the
//!   empty slot (fingerprint 0 itself is a flag beside the table). A lookup reads the table
//!   without a lock, and settles most of a search's inserts, those of states already seen; only
//!   a fingerprint it found absent is inserted under the shard's [`Mutex`]. Each shard doubles
//!   on its own when 7/8 full, so many threads can insert at once and a resize holds one shard's
//!   lock, not the whole set's; the outgrown table's memory goes back to the system while a
//!   lookup still reading it finds nothing false there (see `Table`).
//! * **Compact** (SPIN's hash compaction, `-DHC4`): the same tables with 32-bit slots, half the
//!   memory, holding only fingerprint bits 57..26 — the 32 bits under the shard bits. Two
//!   fingerprints that agree on those 38 bits (shard included) are one state to the set, so a
//!   state may be wrongly reported as seen and its subtree omitted.
//! * **Bitstate** (SPIN's bitstate hashing / supertrace, `-DBITSTATE`): a Bloom filter of a fixed
//!   number of bits, `k` bits per state, set lock-free with `fetch_or`. It never grows; as it
//!   fills, ever more new states look seen.
//!
//! For the two lossy modes, [`FingerprintSet::omission`] estimates how much was lost:
//!
//! * Compact, after Wolper and Leroy, "Reliable hashing without collision detection" (CAV 1993),
//!   the analysis behind SPIN's hash-compact mode: a new state is wrongly reported seen exactly
//!   when a stored state of its shard has the same 32-bit signature, with probability at most
//!   `n_s / 2^32` for `n_s` states in the shard (union bound over uniform signatures). Summed over
//!   the inserts this gives `sum_s n_s (n_s - 1) / 2^33`, about `n^2 / 2^39` — their `n^2 / 2^(b+1)`
//!   with `b = 32` stored bits plus the 6 shard bits the position implies. Stern and Dill's
//!   sharper bound for a fixed table ("Improved probabilistic verification by hash compaction",
//!   CHARME 1995), where the slot index adds its bits, does not apply: a table that grows must be
//!   able to recompute every stored state's slot from the stored bits alone, so the index bits
//!   are among the 32 stored ones rather than on top of them.
//! * Bitstate, as in Holzmann, "An analysis of bitstate hashing" (FMSD 1998): with a fraction `ρ`
//!   of the `m` bits set, a new state is wrongly reported seen when its `k` bits are all set,
//!   probability `ρ^k` (Bloom, 1970). The `k` bit positions come from the one fingerprint by
//!   double hashing, `h1 + i·h2 mod m` with `h2` odd, which Kirsch and Mitzenmacher ("Less
//!   hashing, same performance", ESA 2006) show costs nothing in false-positive rate.

use crate::zeroed_pages::ZeroedPages;
use foretell_model::prefetch_once;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering::Acquire, Ordering::Relaxed, Ordering::Release};
use std::sync::{Mutex, PoisonError};

/// How many top fingerprint bits pick a shard (or, for the Bloom filter, a counter stripe).
pub(crate) const SHARD_BITS: u32 = 6;

/// Shards per exact or compact set, and counter stripes per Bloom filter.
const SHARDS: usize = 1 << SHARD_BITS;

/// Slots in a shard's initial table: a page of `u64`s.
const INITIAL_SLOTS: usize = 512;

/// How the set spends memory, after SPIN's exhaustive, hash-compact and bitstate storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemoryMode {
    /// Every fingerprint kept: no state is ever lost to the set. 8 bytes a slot, at most 7/8 of
    /// the slots used.
    Exact,
    /// 32 bits kept per state: half the memory of [`MemoryMode::Exact`], at a small, reported
    /// risk of omitting states (see [`FingerprintSet::omission`]).
    Compact,
    /// A Bloom filter of `bytes` bytes, rounded down to a power of two (and up to at least 8),
    /// allocated up front and never grown, setting `hashes` bits per state (1 to 16; SPIN uses
    /// [`MemoryMode::DEFAULT_HASHES`]).
    Bitstate {
        /// The memory budget for the filter, in bytes.
        bytes: u64,
        /// The number of bits set per state, `k`.
        hashes: u32,
    },
}

impl MemoryMode {
    /// The usual number of bits per state in [`MemoryMode::Bitstate`], as in SPIN's `-k3`.
    pub(crate) const DEFAULT_HASHES: u32 = 3;
}

/// How many states a lossy set may have omitted, from [`FingerprintSet::omission`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Omission {
    /// The probability that a new state inserted now would be wrongly reported as seen: `ρ^k`
    /// for a Bloom filter with a fraction `ρ` of its bits set, and `n / 64 / 2^32` for hash
    /// compaction with `n` states stored.
    pub(crate) per_state: f64,
    /// The expected number of distinct states wrongly reported as seen so far, and so omitted
    /// together with whatever only they lead to. The probability that at least one state was
    /// omitted is at most this (and about `1 - e^-expected_missed`). It is `+∞` once a Bloom
    /// filter has every bit set.
    pub(crate) expected_missed: f64,
}

/// A set of 64-bit state fingerprints in one of the [`MemoryMode`]s, shared by any number of
/// threads ([`FingerprintSet::insert`]) or owned by one ([`FingerprintSet::insert_mut`]).
pub(crate) struct FingerprintSet {
    store: Store,
}

/// The storage behind each [`MemoryMode`].
enum Store {
    /// Whole fingerprints.
    Exact(Sharded<u64>),
    /// 32-bit signatures.
    Compact(Sharded<u32>),
    /// A Bloom filter.
    Bitstate(Bloom),
}

impl FingerprintSet {
    /// An empty set.
    ///
    /// # Panics
    ///
    /// If a [`MemoryMode::Bitstate`] asks for fewer than 1 or more than 16 hashes.
    pub(crate) fn new(mode: MemoryMode) -> Self {
        let store = match mode {
            MemoryMode::Exact => Store::Exact(Sharded::new()),
            MemoryMode::Compact => Store::Compact(Sharded::new()),
            MemoryMode::Bitstate { bytes, hashes } => Store::Bitstate(Bloom::new(bytes, hashes)),
        };
        FingerprintSet { store }
    }

    /// Adds `fp` and tells whether it was new. Safe to call from many threads at once.
    ///
    /// In [`MemoryMode::Bitstate`], two threads inserting the same new fingerprint at the same
    /// moment may both be told it is new; the state is then explored twice, which costs time but
    /// loses nothing.
    #[inline]
    pub(crate) fn insert(&self, fp: u64) -> bool {
        match &self.store {
            Store::Exact(set) => set.insert(fp),
            Store::Compact(set) => set.insert(fp),
            Store::Bitstate(filter) => filter.insert(fp),
        }
    }

    /// Starts loading the memory an insert of `fp` will read first, so that the cache misses of
    /// several inserts overlap instead of following one another. It changes nothing, and the
    /// insert is correct without it.
    #[inline]
    pub(crate) fn prefetch(&self, fp: u64) {
        match &self.store {
            Store::Exact(set) => set.prefetch(fp),
            Store::Compact(set) => set.prefetch(fp),
            Store::Bitstate(filter) => filter.prefetch(fp),
        }
    }

    /// [`FingerprintSet::insert`] for a single owner: no locks and no atomic operations.
    /// Inlined into the one-thread searches' successor loops, where it runs once a transition:
    /// as a call it cost two-phase commit 1.8% more instructions.
    #[inline(always)]
    pub(crate) fn insert_mut(&mut self, fp: u64) -> bool {
        match &mut self.store {
            Store::Exact(set) => set.insert_mut(fp),
            Store::Compact(set) => set.insert_mut(fp),
            Store::Bitstate(filter) => filter.insert_mut(fp),
        }
    }

    /// Whether `fp` would be reported as seen. Exact for [`MemoryMode::Exact`]; the lossy modes
    /// never answer `false` for an inserted fingerprint but may answer `true` for another.
    #[cfg(test)]
    pub(crate) fn contains(&self, fp: u64) -> bool {
        match &self.store {
            Store::Exact(set) => set.contains(fp),
            Store::Compact(set) => set.contains(fp),
            Store::Bitstate(filter) => filter.contains(fp),
        }
    }

    /// How many inserts reported a new state.
    pub(crate) fn len(&self) -> u64 {
        match &self.store {
            Store::Exact(set) => set.len(),
            Store::Compact(set) => set.len(),
            Store::Bitstate(filter) => filter.len(),
        }
    }

    /// Heap bytes held now by the set's tables and counters, including, during a shard's
    /// resize, both its old and its new table.
    pub(crate) fn bytes(&self) -> u64 {
        match &self.store {
            Store::Exact(set) => set.bytes(),
            Store::Compact(set) => set.bytes(),
            Store::Bitstate(filter) => filter.bytes(),
        }
    }

    /// How likely states were omitted so far; `None` in [`MemoryMode::Exact`], which omits none.
    pub(crate) fn omission(&self) -> Option<Omission> {
        match &self.store {
            Store::Exact(_) => None,
            Store::Compact(set) => Some(set.omission()),
            Store::Bitstate(filter) => Some(filter.omission()),
        }
    }
}

/// What a table slot holds: a whole fingerprint (`u64`) or a 32-bit signature (`u32`).
///
/// Either way the slot's value determines its home bucket at every table size, so a table can
/// be rebuilt at twice the size from its slots alone. A bucket is one cache line of eight
/// atomic words, holding eight `u64` slots or sixteen `u32` ones (two to a word, the lower half
/// first), so that a lookup reads it without a lock while an insert writes it.
trait Key: Copy + Eq {
    /// The empty slot.
    const EMPTY: Self;
    /// The key's width in bits.
    const BITS: u32;
    /// Slots per bucket: one 64-byte cache line.
    const LINE: usize = 64 / std::mem::size_of::<Self>();
    /// The largest table, as log2 of its buckets, whose home buckets the key still determines.
    const MAX_BITS: u32;

    /// The key that stands for fingerprint `fp`.
    fn of(fp: u64) -> Self;

    /// The home bucket in a table of `2^(BITS - shift)` buckets: the bits right under the
    /// shard's.
    fn home(self, shift: u32) -> usize;

    /// Whether `bucket` holds `key`, and how many of its slots are used.
    ///
    /// Written per type so that it compiles without a branch per slot: a branch on which slot
    /// matched is mispredicted at about every other seen state, and each misprediction stalls
    /// the processor on the cache miss that feeds it, where it could overlap that miss with the
    /// next insert's.
    fn scan(bucket: &Bucket, key: Self) -> (bool, usize);

    /// Whether `bucket` holds `key`: [`Key::scan`]'s first half alone, for lookups, which need
    /// no count (a bucket is full exactly when its last slot is used, see [`View::holds`]).
    fn found(bucket: &Bucket, key: Self) -> bool;

    /// Whether every slot of `bucket` is used: its last one is, since buckets fill from the
    /// front.
    fn full(bucket: &Bucket) -> bool;

    /// How many slots of `bucket` are used: the index of its first free one.
    fn used(bucket: &Bucket) -> usize;

    /// Stores `key` in slot `index` of `bucket`, which is free. Only a shard's writer stores,
    /// one at a time.
    fn put(bucket: &Bucket, index: usize, key: Self);

    /// The keys `bucket` holds.
    fn keys(bucket: &Bucket) -> impl Iterator<Item = Self>;
}

/// A bucket: one cache line of slots.
type Bucket = [AtomicU64; 8];

/// The eight words of `bucket`, each read atomically (the bucket as a whole may be mid-insert).
#[inline(always)]
fn words(bucket: &Bucket) -> [u64; 8] {
    std::array::from_fn(|i| bucket[i].load(Relaxed))
}

impl Key for u64 {
    const EMPTY: u64 = 0;
    const BITS: u32 = 64;
    const MAX_BITS: u32 = 64 - SHARD_BITS;

    /// The fingerprint itself; 0, the empty slot, is kept by a flag beside the table.
    fn of(fp: u64) -> u64 {
        fp
    }

    fn home(self, shift: u32) -> usize {
        ((self << SHARD_BITS) >> shift) as usize
    }

    /// Counting the matches: a bare "any slot equals" of 64-bit words becomes one branch per
    /// slot on x86-64.
    #[inline(always)]
    fn scan(bucket: &Bucket, key: u64) -> (bool, usize) {
        let (mut matches, mut used) = (0, 0);
        for slot in words(bucket) {
            matches += usize::from(slot == key);
            used += usize::from(slot != 0);
        }
        (matches != 0, used)
    }

    /// Whether the smallest difference (XOR) of a slot from the key is zero, taken pairwise:
    /// conditional moves, no branch. An OR of the comparisons becomes a branch per slot, and
    /// the branch of the slot a seen key sits in is mispredicted on nearly every lookup.
    #[inline(always)]
    fn found(bucket: &Bucket, key: u64) -> bool {
        let [a, b, c, d, e, f, g, h] = words(bucket).map(|slot| slot ^ key);
        a.min(b).min(c.min(d)).min(e.min(f).min(g.min(h))) == 0
    }

    #[inline(always)]
    fn full(bucket: &Bucket) -> bool {
        bucket[7].load(Relaxed) != 0
    }

    #[inline(always)]
    fn used(bucket: &Bucket) -> usize {
        words(bucket).iter().map(|&slot| usize::from(slot != 0)).sum()
    }

    fn put(bucket: &Bucket, index: usize, key: u64) {
        bucket[index].store(key, Relaxed);
    }

    fn keys(bucket: &Bucket) -> impl Iterator<Item = u64> {
        words(bucket).into_iter().filter(|&key| key != 0)
    }
}

impl Key for u32 {
    const EMPTY: u32 = 0;
    const BITS: u32 = 32;
    const MAX_BITS: u32 = 32;

    /// Fingerprint bits 57..26, with 0 (the empty slot) read as 1: 0 and 1 are one signature.
    fn of(fp: u64) -> u32 {
        (((fp << SHARD_BITS) >> 32) as u32).max(1)
    }

    fn home(self, shift: u32) -> usize {
        (self >> shift) as usize
    }

    #[inline(always)]
    fn scan(bucket: &Bucket, key: u32) -> (bool, usize) {
        let (mut found, mut used) = (false, 0);
        for word in words(bucket) {
            let (low, high) = (word as u32, (word >> 32) as u32);
            found |= (low == key) | (high == key);
            used += usize::from(low != 0) + usize::from(high != 0);
        }
        (found, used)
    }

    #[inline(always)]
    fn found(bucket: &Bucket, key: u32) -> bool {
        words(bucket)
            .iter()
            .fold(false, |found, &word| found | (word as u32 == key) | ((word >> 32) as u32 == key))
    }

    #[inline(always)]
    fn full(bucket: &Bucket) -> bool {
        bucket[7].load(Relaxed) >> 32 != 0
    }

    #[inline(always)]
    fn used(bucket: &Bucket) -> usize {
        words(bucket).iter().map(|&word| usize::from(word as u32 != 0) + usize::from(word >> 32 != 0)).sum()
    }

    fn put(bucket: &Bucket, index: usize, key: u32) {
        let word = &bucket[index / 2];
        let shifted = u64::from(key) << (32 * (index % 2));
        word.store(word.load(Relaxed) | shifted, Relaxed);
    }

    fn keys(bucket: &Bucket) -> impl Iterator<Item = u32> {
        words(bucket).into_iter().flat_map(|word| [word as u32, (word >> 32) as u32]).filter(|&key| key != 0)
    }
}

/// A table's buckets, zeroed ([`ZeroedPages`]: on large pages where the system has them), which
/// can be handed back to the system while they stay addressable ([`Region::release`]).
struct Region {
    pages: ZeroedPages,
}

impl Region {
    /// `len` zeroed buckets.
    fn zeroed(len: usize) -> Region {
        let bytes =
            len.checked_mul(std::mem::size_of::<Bucket>()).expect("a table fits in the address space");
        Region { pages: ZeroedPages::new(bytes) }
    }

    /// Bucket `index`.
    #[inline(always)]
    fn bucket(&self, index: usize) -> &Bucket {
        debug_assert!(index < self.pages.len() / std::mem::size_of::<Bucket>());
        // SAFETY: `index` is in bounds, the block is aligned for buckets, and its memory lives
        // as long as `self`.
        unsafe { &*self.buckets().add(index) }
    }

    fn buckets(&self) -> *const Bucket {
        self.pages.as_ptr().cast_const().cast()
    }

    fn bytes(&self) -> u64 {
        self.pages.len() as u64
    }

    /// Gives the region's whole pages back to the system while keeping them addressable: a
    /// lookup still on its way through a table that was just replaced may read them, and reads
    /// zeros (empty slots) or the old contents, which were all inserted. Either answer is safe
    /// (see [`Table`]).
    fn release(&self) {
        self.pages.release();
    }
}

/// One shard's table: open addressing with linear probing over buckets of one cache line
/// (Knuth, TAOCP 6.4, "bucket" variant).
///
/// A key goes to the first free slot of the first bucket, from its home bucket on, that has
/// one. Nothing is ever removed, so every bucket a key's probe passed stays full: a search stops
/// at the first bucket with a free slot. A bucket is read whole ([`Key::scan`]), so the common
/// insert — one bucket, seen or not — costs one cache miss and one well-predicted branch, and
/// the processor can overlap the misses of consecutive inserts.
///
/// Any thread may search a table while its shard's writer adds to it ([`View::holds`]). Such
/// a lookup can only err towards "absent": a slot it reads is empty, or holds a key that was
/// inserted. So "present" is final, and "absent" is confirmed under the shard's lock.
struct Table<K> {
    region: Region,
    /// `K::BITS - log2(buckets)`: what [`Key::home`] shifts by.
    shift: u32,
    /// Buckets minus 1.
    bucket_mask: usize,
    key: PhantomData<K>,
}

impl<K: Key> Table<K> {
    /// An empty table of `2^bits` buckets.
    fn with_bits(bits: u32) -> Self {
        let buckets = 1usize << bits;
        Table {
            region: Region::zeroed(buckets),
            shift: K::BITS - bits,
            bucket_mask: buckets - 1,
            key: PhantomData,
        }
    }

    /// An empty table of [`INITIAL_SLOTS`] slots.
    fn initial() -> Self {
        Table::with_bits((INITIAL_SLOTS / K::LINE).trailing_zeros())
    }

    /// log2 of the number of buckets.
    fn bits(&self) -> u32 {
        K::BITS - self.shift
    }

    /// Slots in the table.
    fn capacity(&self) -> usize {
        (self.bucket_mask + 1) * K::LINE
    }

    /// `Err` if `key` is in the table, else the bucket and slot where it belongs. `key` must not
    /// be [`Key::EMPTY`].
    #[inline(always)]
    fn vacancy(&self, key: K) -> Result<(usize, usize), ()> {
        let mut bucket = key.home(self.shift);
        loop {
            let (found, used) = K::scan(self.region.bucket(bucket), key);
            if found {
                return Err(());
            }
            // Buckets fill from the front, so the used slots are the first ones.
            if used < K::LINE {
                return Ok((bucket, used));
            }
            bucket = (bucket + 1) & self.bucket_mask;
        }
    }

    /// The same keys in a table of twice the buckets, not yet shared with any other thread.
    fn doubled(&self) -> Table<K> {
        let bits = self.bits() + 1;
        assert!(bits <= K::MAX_BITS, "a fingerprint set shard outgrew 2^{} buckets", K::MAX_BITS);
        let grown = Table::with_bits(bits);
        // The keys are distinct, so each only needs the first bucket with room from its home,
        // found from a count per bucket (a 64th of the new table, for the rebuild only) rather
        // than by reading the bucket. Taken in slot order, the keys' new homes nearly ascend,
        // so the writes stream.
        let mut used = vec![0u8; grown.bucket_mask + 1];
        for bucket in 0..=self.bucket_mask {
            for key in K::keys(self.region.bucket(bucket)) {
                let mut home = key.home(grown.shift);
                while usize::from(used[home]) == K::LINE {
                    home = (home + 1) & grown.bucket_mask;
                }
                K::put(grown.region.bucket(home), usize::from(used[home]), key);
                used[home] += 1;
            }
        }
        grown
    }
}

/// A table as lookups see it, in one word: a pointer to its first bucket, with the table's
/// shift in the low six bits, which the buckets' cache-line alignment leaves zero. The words of
/// all 64 shards lie side by side ([`Sharded`]), so a lookup finds its table with one read from
/// eight cache lines that every lookup touches, rather than a pointer to the table and then the
/// table's fields, two reads from lines that a large set's traffic keeps evicting (about 6% of
/// two-phase commit's time went to them; docs/BENCHMARKS.md).
///
/// A view may be read while the shard's writer inserts into its table, or after the table was
/// outgrown: lookups through it can only err towards "absent" (see [`Table`]).
#[derive(Clone, Copy)]
struct View<K> {
    tagged: *const Bucket,
    key: PhantomData<K>,
}

impl<K: Key> View<K> {
    /// The low bits that hold the shift.
    const SHIFT_MASK: usize = 63;

    /// `table` as lookups see it, to be published with [`View::publish`].
    fn of(table: &Table<K>) -> Self {
        let buckets = table.region.buckets();
        debug_assert_eq!(buckets.addr() & Self::SHIFT_MASK, 0, "buckets are aligned to a cache line");
        debug_assert!(table.shift as usize <= Self::SHIFT_MASK);
        View { tagged: buckets.map_addr(|address| address | table.shift as usize), key: PhantomData }
    }

    /// A slot holding this view, for lookups to load ([`View::load`]).
    fn into_slot(self) -> AtomicPtr<Bucket> {
        AtomicPtr::new(self.tagged.cast_mut())
    }

    /// Makes this view the one `slot` holds: a lookup that loads it ([`View::load`]) sees the
    /// keys the table held when it was published.
    fn publish(self, slot: &AtomicPtr<Bucket>) {
        slot.store(self.tagged.cast_mut(), Release);
    }

    /// The view `slot` holds.
    #[inline(always)]
    fn load(slot: &AtomicPtr<Bucket>) -> Self {
        View { tagged: slot.load(Acquire).cast_const(), key: PhantomData }
    }

    #[inline(always)]
    fn buckets(self) -> *const Bucket {
        self.tagged.map_addr(|address| address & !Self::SHIFT_MASK)
    }

    #[inline(always)]
    fn shift(self) -> u32 {
        (self.tagged.addr() & Self::SHIFT_MASK) as u32
    }

    /// Where `key`'s home bucket is, for a prefetch (which may name any address).
    #[inline(always)]
    fn home_address(self, key: K) -> *const Bucket {
        self.buckets().wrapping_add(key.home(self.shift()))
    }

    /// Whether `key` (not [`Key::EMPTY`]) is in the table; safe while the writer inserts (see
    /// [`Table`]).
    #[inline(always)]
    fn holds(self, key: K) -> bool {
        self.room(key).is_none()
    }

    /// `None` if the table holds `key` (not [`Key::EMPTY`]), else the first bucket from its
    /// home with a free slot, where it belongs; safe while the writer inserts (see [`Table`]).
    #[inline(always)]
    fn room(self, key: K) -> Option<usize> {
        let bucket_mask = (1usize << (K::BITS - self.shift())) - 1;
        let mut bucket = key.home(self.shift());
        loop {
            // SAFETY: `bucket` is below the table's bucket count, and every table a view was
            // made of stays allocated, zeroed or holding keys that were inserted, until its set
            // is dropped (see `Writer::retired`).
            let slots = unsafe { &*self.buckets().add(bucket) };
            if K::found(slots, key) {
                return None;
            }
            // A bucket with room would have held the key. A key being inserted meanwhile may be
            // missed here; "absent" is settled under the lock, and "present" is only ever a key
            // that was stored.
            if !K::full(slots) {
                return Some(bucket);
            }
            bucket = (bucket + 1) & bucket_mask;
        }
    }
}

/// What only the thread holding a shard's lock touches: the shard's tables and their counts.
struct Writer<K> {
    /// The table inserts go to, which the shard's [`View`] shows.
    table: Box<Table<K>>,
    /// Tables outgrown, their memory released ([`Region::release`]) but kept addressable until
    /// the set is dropped, for lookups that were still reading them through an old view.
    #[allow(clippy::vec_box)] // boxed so that a table stays where lookups found it
    retired: Vec<Box<Table<K>>>,
    /// Slots in use.
    occupied: usize,
    /// [`Writer::occupied`] at which the table doubles: 7/8 of the slots.
    limit: usize,
    /// Whether the key equal to [`Key::EMPTY`], which no slot can hold, is in the set.
    empty_key: bool,
}

impl<K: Key> Writer<K> {
    fn new() -> Self {
        let table = Box::new(Table::initial());
        let capacity = table.capacity();
        Writer { table, retired: Vec::new(), occupied: 0, limit: capacity - capacity / 8, empty_key: false }
    }

    /// Keys in the table.
    fn len(&self) -> u64 {
        self.occupied as u64 + u64::from(self.empty_key)
    }

    /// Adds `key`, telling whether it was new. A resize is added to `bytes`, published to
    /// `view`, and the old table's bytes subtracted.
    #[inline(always)]
    fn insert(&mut self, key: K, bytes: &AtomicU64, view: &AtomicPtr<Bucket>) -> bool {
        if key == K::EMPTY {
            return !std::mem::replace(&mut self.empty_key, true);
        }
        let Ok((bucket, slot)) = self.table.vacancy(key) else {
            return false;
        };
        self.fill(bucket, slot, key, bytes, view);
        true
    }

    /// Adds `key`, which the table does not hold and [`View::room`] placed in `bucket`: only
    /// the writer adds keys, so for the set's one owner nothing can have taken the room since.
    #[inline(always)]
    fn insert_at(&mut self, bucket: usize, key: K, bytes: &AtomicU64, view: &AtomicPtr<Bucket>) {
        let slot = K::used(self.table.region.bucket(bucket));
        self.fill(bucket, slot, key, bytes, view);
    }

    /// Stores `key` in free `slot` of `bucket`, doubling the table if that filled it to its
    /// limit.
    #[inline(always)]
    fn fill(&mut self, bucket: usize, slot: usize, key: K, bytes: &AtomicU64, view: &AtomicPtr<Bucket>) {
        K::put(self.table.region.bucket(bucket), slot, key);
        self.occupied += 1;
        if self.occupied >= self.limit {
            self.grow(bytes, view);
        }
    }

    /// Replaces the table with one of twice the size.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, bytes: &AtomicU64, view: &AtomicPtr<Bucket>) {
        let grown = Box::new(self.table.doubled());
        bytes.fetch_add(grown.region.bytes(), Relaxed);
        let capacity = grown.capacity();
        self.limit = capacity - capacity / 8;
        View::of(&grown).publish(view);
        let old = std::mem::replace(&mut self.table, grown);
        old.region.release();
        bytes.fetch_sub(old.region.bytes(), Relaxed);
        self.retired.push(old);
    }
}

/// The 64 shards of an exact or compact set.
struct Sharded<K> {
    /// Each shard's table as lookups see it, indexed like `shards` (boxed, to keep a visited
    /// set small where it is an enum's variant).
    views: Box<Views>,
    /// Indexed by the fingerprint's top [`SHARD_BITS`] bits.
    shards: Box<[Shard<K>]>,
    /// Heap bytes of the shard array and the tables, kept current across resizes.
    bytes: AtomicU64,
}

/// The shards' [`View`]s, side by side on eight cache lines of their own, which change only when
/// a shard's table doubles.
#[repr(align(64))]
struct Views([AtomicPtr<Bucket>; SHARDS]);

/// A value on cache lines of its own (two: Intel's prefetcher fetches lines in pairs), so that
/// writes to its neighbours do not evict it from other cores.
#[repr(align(128))]
struct OwnLines<T>(T);

/// One shard: the lock and counts that only inserts touch, on lines of their own so that the
/// inserts of one thread do not slow the lookups of another. Lookups read the shard's table
/// through its [`View`].
struct Shard<K> {
    /// Locked by [`FingerprintSet::insert`] to add a key found absent, borrowed by
    /// [`FingerprintSet::insert_mut`]; with the count of keys, readable without the lock.
    writer: OwnLines<(Mutex<Writer<K>>, AtomicU64)>,
}

impl<K: Key> Shard<K> {
    /// The shard of `writer`, whose table's view is published apart ([`Views`]).
    fn holding(writer: Writer<K>) -> Self {
        Shard { writer: OwnLines((Mutex::new(writer), AtomicU64::new(0))) }
    }

    /// The table's length, readable without the lock.
    fn len(&self) -> u64 {
        self.writer.0 .1.load(Relaxed)
    }

    /// Adds `key` under the lock, publishing a doubled table to `view`.
    fn insert_locked(&self, key: K, bytes: &AtomicU64, view: &AtomicPtr<Bucket>) -> bool {
        // A panic under the lock (only the size assertion in `Table::doubled`) leaves the old,
        // consistent table in place, so a poisoned writer is still good.
        let mut writer = self.writer.0 .0.lock().unwrap_or_else(PoisonError::into_inner);
        let new = writer.insert(key, bytes, view);
        if new {
            self.writer.0 .1.store(writer.len(), Relaxed);
        }
        new
    }
}

impl<K: Key> Sharded<K> {
    /// 64 empty shards.
    fn new() -> Self {
        let writers: Vec<Writer<K>> = (0..SHARDS).map(|_| Writer::new()).collect();
        let table_bytes: u64 = writers.iter().map(|writer| writer.table.region.bytes()).sum();
        // A writer's table is boxed, so the views stay right as the writers move into shards.
        let views = Box::new(Views(std::array::from_fn(|i| View::of(&writers[i].table).into_slot())));
        let shards: Box<[Shard<K>]> = writers.into_iter().map(Shard::holding).collect();
        let bytes = (std::mem::size_of_val(&*shards) + std::mem::size_of::<Views>()) as u64 + table_bytes;
        Sharded { views, shards, bytes: AtomicU64::new(bytes) }
    }

    /// The shard that holds `fp`.
    fn shard(fp: u64) -> usize {
        (fp >> (64 - SHARD_BITS)) as usize
    }

    /// The view of shard `index`'s table.
    #[inline(always)]
    fn view(&self, index: usize) -> View<K> {
        View::load(&self.views.0[index])
    }

    /// [`FingerprintSet::insert`]: a lookup without the lock, which settles every key already
    /// present (most of a search's), then, for one found absent, an insert under it.
    #[inline(always)]
    fn insert(&self, fp: u64) -> bool {
        let index = Self::shard(fp);
        let key = K::of(fp);
        if key != K::EMPTY && self.view(index).holds(key) {
            return false;
        }
        self.shards[index].insert_locked(key, &self.bytes, &self.views.0[index])
    }

    /// [`FingerprintSet::prefetch`]: the home bucket of `fp`.
    #[inline(always)]
    fn prefetch(&self, fp: u64) {
        prefetch_once(self.view(Self::shard(fp)).home_address(K::of(fp)));
    }

    /// [`FingerprintSet::insert_mut`]: the same lookup as [`Sharded::insert`] (through the
    /// view, one read from the views' lines rather than the shard's and then its table's), which
    /// for a key found absent also finds its place, then the insert there, with the lock
    /// borrowed rather than taken.
    #[inline(always)]
    fn insert_mut(&mut self, fp: u64) -> bool {
        let index = Self::shard(fp);
        let key = K::of(fp);
        if key == K::EMPTY {
            return self.insert_owned(index, key, None);
        }
        match self.view(index).room(key) {
            Some(bucket) => self.insert_owned(index, key, Some(bucket)),
            None => false,
        }
    }

    /// Adds `key` to shard `index`, which this owner alone can reach: in `bucket`, the room
    /// [`View::room`] found for it, or, for [`Key::EMPTY`], by the writer's flag.
    #[inline(never)]
    fn insert_owned(&mut self, index: usize, key: K, bucket: Option<usize>) -> bool {
        let shard = &mut self.shards[index];
        let writer = shard.writer.0 .0.get_mut().unwrap_or_else(PoisonError::into_inner);
        let new = match bucket {
            Some(bucket) => {
                writer.insert_at(bucket, key, &self.bytes, &self.views.0[index]);
                true
            }
            None => writer.insert(key, &self.bytes, &self.views.0[index]),
        };
        *shard.writer.0 .1.get_mut() = writer.len();
        new
    }

    /// [`FingerprintSet::contains`].
    #[cfg(test)]
    fn contains(&self, fp: u64) -> bool {
        let writer = self.shards[Self::shard(fp)].writer.0 .0.lock().unwrap_or_else(PoisonError::into_inner);
        let key = K::of(fp);
        if key == K::EMPTY {
            writer.empty_key
        } else {
            View::of(&writer.table).holds(key)
        }
    }

    /// Keys per shard.
    fn shard_lens(&self) -> impl Iterator<Item = u64> + '_ {
        self.shards.iter().map(Shard::len)
    }

    /// [`FingerprintSet::len`].
    fn len(&self) -> u64 {
        self.shard_lens().sum()
    }

    /// [`FingerprintSet::bytes`].
    fn bytes(&self) -> u64 {
        self.bytes.load(Relaxed)
    }

    /// [`FingerprintSet::omission`] for 32-bit signatures (see the module documentation): a
    /// new state in a shard of `n_s` collides with probability `n_s / 2^32`, and the `j`-th
    /// state stored in a shard did with probability `(j - 1) / 2^32`. Signatures are read as
    /// uniform over `2^32` values; folding 0 into 1 makes that optimistic by one part in `2^31`.
    fn omission(&self) -> Omission {
        let signatures = 2f64.powi(32);
        let (mut stored, mut pairs) = (0.0, 0.0);
        for n in self.shard_lens().map(|n| n as f64) {
            stored += n;
            pairs += n * (n - 1.0).max(0.0) / 2.0;
        }
        Omission { per_state: stored / SHARDS as f64 / signatures, expected_missed: pairs / signatures }
    }
}

/// A Bloom filter of `AtomicU64` words.
struct Bloom {
    /// The filter's `m` bits, a power of two of them, in words ([`ZeroedPages::words`]).
    words: ZeroedPages,
    /// `m - 1`.
    mask: u64,
    /// Bits per state, `k`.
    hashes: u32,
    /// Counters of states stored and bits set, spread by fingerprint so that threads seldom
    /// share one.
    stripes: Box<[Stripe]>,
}

/// One stripe of a [`Bloom`]'s counters, on cache lines of its own.
#[repr(align(128))]
#[derive(Default)]
struct Stripe {
    /// Inserts that set at least one bit: states stored.
    states: AtomicU64,
    /// Bits those inserts set.
    bits: AtomicU64,
}

/// The `k = hashes` bits of `fp` in a filter of `mask + 1` bits, each as (word index, bit in
/// the word): positions `h1 + i·h2 mod m`, with `h1` the fingerprint and `h2` its halves
/// swapped, made odd so that the positions are distinct. For filters up to `2^32` bits (512
/// MiB) the two draw on disjoint fingerprint bits. A free function, not a method, so that an
/// owner may hold the filter's words mutably while it iterates.
fn filter_bits(fp: u64, mask: u64, hashes: u32) -> impl Iterator<Item = (usize, u64)> {
    let (h1, h2) = (fp, fp.rotate_left(32) | 1);
    (0..u64::from(hashes)).map(move |i| {
        let position = h1.wrapping_add(i.wrapping_mul(h2)) & mask;
        ((position >> 6) as usize, 1 << (position & 63))
    })
}

impl Bloom {
    /// An empty filter of `bytes` bytes (rounded down to a power of two, at least 8) and
    /// `hashes` bits per state.
    fn new(bytes: u64, hashes: u32) -> Self {
        assert!((1..=16).contains(&hashes), "bitstate hashing takes 1 to 16 hashes, not {hashes}");
        let bits = bytes.saturating_mul(8).max(64);
        let bits = 1u64 << (63 - bits.leading_zeros());
        let bytes = usize::try_from(bits / 8).expect("a Bloom filter fits in the address space");
        let words = ZeroedPages::new(bytes);
        let stripes = (0..SHARDS).map(|_| Stripe::default()).collect();
        Bloom { words, mask: bits - 1, hashes, stripes }
    }

    /// [`filter_bits`] of `fp` in this filter.
    fn bits(&self, fp: u64) -> impl Iterator<Item = (usize, u64)> {
        filter_bits(fp, self.mask, self.hashes)
    }

    /// The counters `fp` updates.
    fn stripe(fp: u64) -> usize {
        (fp >> (64 - SHARD_BITS)) as usize
    }

    /// [`FingerprintSet::prefetch`]: the words of `fp`'s bits.
    #[inline]
    fn prefetch(&self, fp: u64) {
        let words = self.words.words();
        for (word, _) in self.bits(fp) {
            prefetch_once(&words[word]);
        }
    }

    /// [`FingerprintSet::insert`]: lock-free. A bit is read before it is set, so that inserting
    /// a seen state writes nothing.
    #[inline]
    fn insert(&self, fp: u64) -> bool {
        let (words, mut fresh) = (self.words.words(), 0);
        for (word, bit) in self.bits(fp) {
            let word = &words[word];
            if word.load(Relaxed) & bit == 0 && word.fetch_or(bit, Relaxed) & bit == 0 {
                fresh += 1;
            }
        }
        if fresh == 0 {
            return false;
        }
        let stripe = &self.stripes[Self::stripe(fp)];
        stripe.states.fetch_add(1, Relaxed);
        stripe.bits.fetch_add(fresh, Relaxed);
        true
    }

    /// [`FingerprintSet::insert_mut`].
    #[inline]
    fn insert_mut(&mut self, fp: u64) -> bool {
        let mut fresh = 0;
        let bits = filter_bits(fp, self.mask, self.hashes);
        let words = self.words.words_mut();
        for (word, bit) in bits {
            let word = words[word].get_mut();
            fresh += u64::from(*word & bit == 0);
            *word |= bit;
        }
        if fresh == 0 {
            return false;
        }
        let stripe = &mut self.stripes[Self::stripe(fp)];
        *stripe.states.get_mut() += 1;
        *stripe.bits.get_mut() += fresh;
        true
    }

    /// [`FingerprintSet::contains`].
    #[cfg(test)]
    fn contains(&self, fp: u64) -> bool {
        let words = self.words.words();
        self.bits(fp).all(|(word, bit)| words[word].load(Relaxed) & bit != 0)
    }

    /// [`FingerprintSet::len`].
    fn len(&self) -> u64 {
        self.stripes.iter().map(|stripe| stripe.states.load(Relaxed)).sum()
    }

    /// [`FingerprintSet::bytes`]: fixed.
    fn bytes(&self) -> u64 {
        (self.words.len() + std::mem::size_of_val(&*self.stripes)) as u64
    }

    /// [`FingerprintSet::omission`].
    ///
    /// `per_state` is `ρ^k` for the fraction `ρ` of bits set now. For `expected_missed`, a
    /// state stored at fill `ρ` stands for `p / (1 - p)` omitted ones, `p = ρ^k`: new states
    /// arriving at that fill are each omitted with probability `p` until one gets through. Rather
    /// than keep a running sum on the hot path, the sum is integrated over the fill: a state
    /// stored at fill `ρ` sets on average `k (1 - ρ) / (1 - ρ^k)` new bits, so the sum is about
    /// `(m / k) ∫₀^ρ t^k / (1 - t) dt = (m / k) Σ_{i > k} ρ^i / i`, from the count of set bits
    /// alone. It assumes the search keeps producing new states, and is `+∞` at `ρ = 1`.
    fn omission(&self) -> Omission {
        let m = (self.mask + 1) as f64;
        let set: u64 = self.stripes.iter().map(|stripe| stripe.bits.load(Relaxed)).sum();
        let rho = set as f64 / m;
        let k = self.hashes;
        let expected_missed = if rho >= 1.0 { f64::INFINITY } else { m / f64::from(k) * tail(rho, k) };
        Omission { per_state: rho.powi(k as i32), expected_missed }
    }
}

/// `Σ_{i > k} ρ^i / i` for `0 ≤ ρ < 1`: summed term by term where that converges fast, and
/// otherwise as `-ln(1 - ρ) - Σ_{i ≤ k} ρ^i / i`, which cancels badly only for small `ρ`.
fn tail(rho: f64, k: u32) -> f64 {
    if rho <= 0.5 {
        let (mut power, mut sum) = (rho.powi(k as i32 + 1), 0.0);
        for i in k + 1.. {
            let term = power / f64::from(i);
            sum += term;
            if term <= sum * f64::EPSILON {
                break;
            }
            power *= rho;
        }
        sum
    } else {
        let head: f64 = (1..=k).map(|i| rho.powi(i as i32) / f64::from(i)).sum();
        -(-rho).ln_1p() - head
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::HashSet;

    /// SplitMix64: distinct, well-mixed outputs for distinct counters.
    pub(crate) fn splitmix(counter: u64) -> u64 {
        let mut z = counter.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `n` distinct pseudo-random fingerprints from stream `seed`.
    fn fingerprints(seed: u64, n: u64) -> impl Iterator<Item = u64> {
        (0..n).map(move |i| splitmix((seed << 40) + i + 1))
    }

    /// Fingerprints that share a home slot or sit at a shard's edges: long clusters that wrap.
    fn awkward() -> Vec<u64> {
        let shard_end = u64::MAX >> SHARD_BITS;
        let mut fps = vec![0, 1, u64::MAX, u64::MAX - 1, shard_end, shard_end + 1, 1 << 63];
        fps.extend((0..3000).map(|i| i * 7));
        fps.extend((0..3000).map(|i| shard_end - i));
        fps.extend((0..3000).map(|i| (u64::MAX - i) ^ (1 << 20)));
        fps
    }

    #[test]
    fn is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<FingerprintSet>();
    }

    #[test]
    fn exact_never_loses_or_duplicates() {
        let mut set = FingerprintSet::new(MemoryMode::Exact);
        let mut reference = HashSet::new();
        let all: Vec<u64> = awkward().into_iter().chain(fingerprints(1, 1_000_000)).collect();
        for (i, &fp) in all.iter().enumerate() {
            let new = if i % 2 == 0 { set.insert_mut(fp) } else { set.insert(fp) };
            assert_eq!(new, reference.insert(fp), "fingerprint {fp:#x}");
        }
        assert_eq!(set.len(), reference.len() as u64);
        assert!(set.omission().is_none());
        for &fp in &all {
            assert!(set.contains(fp), "lost {fp:#x}");
            assert!(!set.insert(fp));
            assert!(!set.insert_mut(fp));
        }
        for fp in fingerprints(2, 100_000) {
            assert_eq!(set.contains(fp), reference.contains(&fp));
        }
        assert_eq!(set.len(), reference.len() as u64);
    }

    #[test]
    fn exact_zero_is_a_fingerprint() {
        let mut set = FingerprintSet::new(MemoryMode::Exact);
        assert!(!set.contains(0));
        assert!(set.insert_mut(0));
        assert!(set.contains(0));
        assert!(!set.insert(0));
        assert_eq!(set.len(), 1);
        assert!(!set.contains(1) && !set.contains(1 << 58));
    }

    #[test]
    fn exact_concurrent_inserts_count_each_state_once() {
        // Four threads over overlapping quarters: thread t takes counters [t·250k, t·250k + 500k).
        let set = FingerprintSet::new(MemoryMode::Exact);
        let news: u64 = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..4u64)
                .map(|t| {
                    let set = &set;
                    scope.spawn(move || {
                        (t * 250_000..t * 250_000 + 500_000).filter(|&i| set.insert(splitmix(i))).count()
                            as u64
                    })
                })
                .collect();
            threads.into_iter().map(|thread| thread.join().unwrap()).sum()
        });
        assert_eq!(news, 1_250_000);
        assert_eq!(set.len(), 1_250_000);
        assert!((0..1_250_000).all(|i| set.contains(splitmix(i))));
        assert!(!set.contains(splitmix(1_250_000)));
    }

    /// A shard alone, with the slot its view is published to.
    fn lone_shard<K: Key>() -> (Shard<K>, AtomicPtr<Bucket>) {
        let writer = Writer::new();
        let slot = View::of(&writer.table).into_slot();
        (Shard::holding(writer), slot)
    }

    /// A lookup may still be reading a table its shard has outgrown (its memory released). What
    /// it finds there is never a key that was not inserted, so "present" stays a safe answer.
    #[test]
    fn an_outgrown_table_finds_no_key_that_was_not_inserted() {
        let ((shard, slot), bytes) = (lone_shard::<u64>(), AtomicU64::new(0));
        let outgrown = View::<u64>::load(&slot);
        let mut inserted = 0;
        while std::ptr::eq(View::<u64>::load(&slot).tagged, outgrown.tagged) {
            inserted += 1;
            assert!(shard.insert_locked(splitmix(inserted), &bytes, &slot));
        }
        assert!((inserted + 1..inserted + 100_000).all(|i| !outgrown.holds(splitmix(i))));
        let grown = View::<u64>::load(&slot);
        assert!(grown.shift() < outgrown.shift(), "the grown table has more buckets");
        assert!((1..=inserted).all(|i| grown.holds(splitmix(i))));
        assert!((1..=inserted).all(|i| !shard.insert_locked(splitmix(i), &bytes, &slot)));
    }

    /// The lock-free lookup stops at the first bucket with room: keys that overflowed their
    /// full home bucket into the next ones are still found, and keys never inserted are not,
    /// for both slot widths.
    #[test]
    fn lookups_follow_clusters_past_full_buckets() {
        fn check<K: Key>(keys: &[u64]) {
            let ((shard, slot), bytes) = (lone_shard::<K>(), AtomicU64::new(0));
            let first = View::<K>::load(&slot);
            for &fp in keys {
                assert!(shard.insert_locked(K::of(fp), &bytes, &slot));
            }
            let view = View::<K>::load(&slot);
            assert!(std::ptr::eq(view.tagged, first.tagged), "the cluster fits the first table");
            assert!(keys.iter().all(|&fp| view.holds(K::of(fp))));
            assert!(keys.iter().all(|&fp| !view.holds(K::of(fp + (1 << 40)))));
        }
        // 40 keys with one home bucket: it and the next four fill, the sixth has room.
        check::<u64>(&(1..=40).collect::<Vec<_>>());
        // 40 signatures (bits 57..26) with one home bucket of 16 slots.
        check::<u32>(&(1..=40).map(|i| i << 26).collect::<Vec<_>>());
    }

    #[test]
    fn exact_bytes_grow_with_the_set() {
        let mut set = FingerprintSet::new(MemoryMode::Exact);
        let empty = set.bytes();
        assert!(empty < 1 << 20, "{empty} bytes when empty");
        let mut last = empty;
        for (i, fp) in fingerprints(3, 1_000_000).enumerate() {
            set.insert_mut(fp);
            if i % 100_000 == 99_999 {
                let bytes = set.bytes();
                assert!(bytes >= last);
                // At most 7/8 full, at least 7/16 full but for shards still at their initial size.
                assert!(bytes >= set.len() * 8 * 8 / 7, "{bytes} bytes for {} states", set.len());
                assert!(bytes <= set.len() * 8 * 16 / 7 + empty, "{bytes} bytes for {} states", set.len());
                last = bytes;
            }
        }
        assert!(last > 8 * 1_000_000);
    }

    #[test]
    fn compact_counts_and_estimates() {
        let n = 200_000u64;
        let mut compact = FingerprintSet::new(MemoryMode::Compact);
        let mut exact = FingerprintSet::new(MemoryMode::Exact);
        // Signatures that share a home slot or sit at a shard's edges, then random ones.
        let shard_end = u64::MAX >> SHARD_BITS;
        let awkward: Vec<u64> =
            (1..3000).map(|i| i << 26).chain((0..3000).map(|i| shard_end - (i << 26))).collect();
        for &fp in awkward.iter().chain(&fingerprints(4, n).collect::<Vec<_>>()) {
            compact.insert_mut(fp);
            exact.insert_mut(fp);
        }
        // About n^2 / 2^39 ≈ 0.07 collisions expected among the random ones: none with this seed.
        assert_eq!(compact.len(), exact.len());
        for fp in awkward.into_iter().chain(fingerprints(4, n)) {
            assert!(compact.contains(fp));
            assert!(!compact.insert(fp));
        }
        let omission = compact.omission().unwrap();
        let stored = compact.len() as f64;
        assert!((omission.per_state - stored / 2f64.powi(38)).abs() < 1e-15);
        let rough = stored * stored / 2f64.powi(39);
        assert!(omission.expected_missed > rough * 0.9 && omission.expected_missed < rough * 1.2);
        // Half the memory of the exact set, give or take the fixed shard array.
        let ratio = compact.bytes() as f64 / exact.bytes() as f64;
        assert!(ratio > 0.45 && ratio < 0.55, "compact / exact bytes = {ratio}");
    }

    #[test]
    fn compact_merges_fingerprints_with_one_signature() {
        let mut set = FingerprintSet::new(MemoryMode::Compact);
        assert!(set.insert_mut(0x1234_5678_9abc_def0));
        // Bits 25..0 are not kept.
        assert!(!set.insert_mut(0x1234_5678_9abc_def0 ^ 0x3ff_ffff));
        assert!(set.insert_mut(0x1234_5678_9abc_def0 ^ (1 << 26)));
        // Signature 0 is read as 1.
        assert!(set.insert(0));
        assert!(set.contains(0) && set.contains(1 << 26));
        assert!(!set.insert(1 << 26));
        assert_eq!(set.len(), 3);
        // Shard 4 holds two states: one pair that could have collided.
        assert_eq!(set.omission().unwrap().expected_missed, 2f64.powi(-32));
    }

    #[test]
    fn compact_concurrent_inserts_count_each_state_once() {
        let set = FingerprintSet::new(MemoryMode::Compact);
        let news: u64 = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..4u64)
                .map(|t| {
                    let set = &set;
                    scope.spawn(move || {
                        (t * 25_000..t * 25_000 + 50_000).filter(|&i| set.insert(splitmix(i))).count() as u64
                    })
                })
                .collect();
            threads.into_iter().map(|thread| thread.join().unwrap()).sum()
        });
        assert_eq!(news, 125_000);
        assert_eq!(set.len(), 125_000);
    }

    #[test]
    fn bitstate_with_room_misses_nothing() {
        let mut set = FingerprintSet::new(MemoryMode::Bitstate { bytes: 16 << 20, hashes: 3 });
        let bytes = set.bytes();
        for fp in fingerprints(5, 100_000) {
            assert!(set.insert_mut(fp));
        }
        assert_eq!(set.len(), 100_000);
        assert!(fingerprints(5, 100_000).all(|fp| set.contains(fp) && !set.insert(fp)));
        assert_eq!(set.bytes(), bytes);
        let omission = set.omission().unwrap();
        assert!(omission.per_state > 0.0 && omission.per_state < 1e-6, "{omission:?}");
        assert!(omission.expected_missed > 0.0 && omission.expected_missed < 1e-2, "{omission:?}");
    }

    #[test]
    fn bitstate_when_crowded_misses_and_says_so() {
        let mut set = FingerprintSet::new(MemoryMode::Bitstate { bytes: 1024, hashes: 3 });
        let bytes = set.bytes();
        assert_eq!(bytes, 1024 + (SHARDS * std::mem::size_of::<Stripe>()) as u64);
        let news = fingerprints(6, 20_000).filter(|&fp| set.insert_mut(fp)).count() as u64;
        assert_eq!(set.len(), news);
        assert!(news < 20_000);
        // No false negatives, ever.
        assert!(fingerprints(6, 20_000).all(|fp| set.contains(fp)));
        assert_eq!(set.bytes(), bytes);
        let omission = set.omission().unwrap();
        assert!(omission.per_state > 0.5, "{omission:?}");
        assert!(omission.expected_missed > 1000.0, "{omission:?}");
    }

    #[test]
    fn bitstate_estimate_tracks_actual_misses() {
        // Fill 2^20 bits to between a third and most of the way, and compare the estimate with
        // the states actually omitted (all fingerprints are distinct).
        for (hashes, n) in [(1, 300_000), (3, 200_000), (3, 400_000), (8, 150_000)] {
            let mut set = FingerprintSet::new(MemoryMode::Bitstate { bytes: 1 << 17, hashes });
            let mut stored = 0u64;
            let mut reported_sum = 0.0;
            for fp in fingerprints(7, n) {
                // The running sum the estimate stands in for.
                let p = set.omission().unwrap().per_state;
                if set.insert_mut(fp) {
                    stored += 1;
                    reported_sum += p / (1.0 - p);
                }
            }
            let missed = (n - stored) as f64;
            let estimate = set.omission().unwrap().expected_missed;
            assert!(
                (estimate / missed - 1.0).abs() < 0.1 && (reported_sum / missed - 1.0).abs() < 0.1,
                "k = {hashes}, n = {n}: missed {missed}, estimated {estimate}, running sum {reported_sum}"
            );
        }
    }

    #[test]
    fn bitstate_concurrent_inserts() {
        let set = FingerprintSet::new(MemoryMode::Bitstate { bytes: 8 << 20, hashes: 4 });
        std::thread::scope(|scope| {
            for t in 0..4 {
                let set = &set;
                scope.spawn(move || fingerprints(8 + t, 50_000).for_each(|fp| assert!(set.insert(fp))));
            }
        });
        assert_eq!(set.len(), 200_000);
        assert!((0..4).all(|t| fingerprints(8 + t, 50_000).all(|fp| set.contains(fp))));
    }

    #[test]
    fn bitstate_sizes_round_down_to_powers_of_two() {
        let stripes = (SHARDS * std::mem::size_of::<Stripe>()) as u64;
        let bytes = |budget| {
            FingerprintSet::new(MemoryMode::Bitstate { bytes: budget, hashes: MemoryMode::DEFAULT_HASHES })
                .bytes()
                - stripes
        };
        assert_eq!(bytes(1000), 512);
        assert_eq!(bytes(1024), 1024);
        assert_eq!(bytes(0), 8);
        assert_eq!(bytes(3 << 20), 2 << 20);
    }

    #[test]
    fn tail_agrees_between_its_two_forms() {
        for k in [1, 3, 16] {
            for rho in [0.3f64, 0.5, 0.7] {
                let series: f64 = (k + 1..10_000).map(|i| rho.powi(i as i32) / f64::from(i)).sum();
                assert!((tail(rho, k) / series - 1.0).abs() < 1e-9, "k = {k}, ρ = {rho}");
            }
        }
        assert_eq!(tail(0.0, 3), 0.0);
    }

    #[test]
    #[should_panic(expected = "1 to 16 hashes")]
    fn bitstate_rejects_zero_hashes() {
        FingerprintSet::new(MemoryMode::Bitstate { bytes: 1024, hashes: 0 });
    }

    #[test]
    #[should_panic(expected = "1 to 16 hashes")]
    fn bitstate_rejects_seventeen_hashes() {
        FingerprintSet::new(MemoryMode::Bitstate { bytes: 1024, hashes: 17 });
    }
}
