//! A hash map from full 128-bit fingerprints, in shards that grow one at a time: the visited
//! set of a stateful search with 128-bit fingerprints (values `()`) or a depth bound (each
//! world's smallest depth), and the stateless search's explored worlds (their depths).
//!
//! A single hash map doubles by allocating its new table while the old one is still alive, so
//! at each doubling the process briefly holds three times the old table. A memory budget is
//! polled between steps and cannot see that peak: one map passed a 300 MiB budget by 62% (BFS
//! with 128-bit fingerprints) and 22% (DFS with a depth bound). In [`SHARDS`] shards chosen by
//! the key's high bits, a shard doubles alone, holding 1/[`SHARDS`] of the map twice; and the
//! threads of a parallel search seldom wait for the same shard's lock.

use super::seen::lock;
use crate::fingerprint_set::SHARD_BITS;
use crate::FingerprintBits;
use foretell_model::Fingerprint;
use rustc_hash::FxHashMap;
use std::sync::{Mutex, MutexGuard};

/// How many shards: as many as the 64-bit visited set has.
const SHARDS: usize = 1 << SHARD_BITS;

/// A 128-bit key as two words: as a `u128` it would be aligned to 16 bytes, and an entry
/// with a `u32` value would take 32 bytes instead of 24.
type Key = (u64, u64);

/// Fingerprint → `V`, in [`SHARDS`] locked shards.
pub(crate) struct ShardedMap<V> {
    shards: Box<[Mutex<FxHashMap<Key, V>>]>,
}

impl<V> Default for ShardedMap<V> {
    fn default() -> Self {
        ShardedMap { shards: (0..SHARDS).map(|_| Mutex::default()).collect() }
    }
}

impl<V> ShardedMap<V> {
    /// The shard that holds `key`, locked.
    pub(crate) fn shard(&self, key: u128) -> MutexGuard<'_, FxHashMap<Key, V>> {
        lock(&self.shards[index(key)])
    }

    /// The shard that holds `key`, for the map's one owner: no lock is taken.
    pub(crate) fn shard_mut(&mut self, key: u128) -> &mut FxHashMap<Key, V> {
        let shard = &mut self.shards[index(key)];
        shard.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Keys in the map.
    pub(crate) fn len(&self) -> u64 {
        self.shards.iter().map(|shard| lock(shard).len() as u64).sum()
    }

    /// Heap bytes of the shards' tables: per bucket an entry and a control byte.
    pub(crate) fn bytes(&self) -> u64 {
        let bucket = size_of::<(Key, V)>() as u64 + 1;
        self.shards.iter().map(|shard| lock(shard).capacity() as u64 * bucket).sum()
    }
}

/// The key `fingerprint` is stored under: its low 64 bits, or all of them.
pub(crate) fn stored_key(fingerprint: Fingerprint, bits: FingerprintBits) -> u128 {
    match bits {
        FingerprintBits::B64 => u128::from(fingerprint.short()),
        FingerprintBits::B128 => fingerprint.0,
    }
}

/// The index of `key`'s shard. A 64-bit key (high word zero) is spread by its own high bits;
/// fingerprints are uniformly distributed, so either word's bits will do.
fn index(key: u128) -> usize {
    let (low, high) = split(key);
    ((low ^ high) >> (64 - SHARD_BITS)) as usize
}

/// `key` as its (low, high) words, the map's [`Key`].
pub(crate) fn split(key: u128) -> Key {
    (key as u64, (key >> 64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys spread over every shard whether they are 64-bit (high word zero) or 128-bit, and
    /// each is found again in its shard.
    #[test]
    fn keys_of_either_width_spread_over_the_shards_and_are_found() {
        // SplitMix64's finalizer: uniformly distributed words, as fingerprints are.
        let mix = |i: u64| {
            let z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        for wide in [false, true] {
            let mut map = ShardedMap::<u32>::default();
            let key = |i: u64| {
                if wide {
                    u128::from(mix(i)) << 64 | u128::from(mix(i + (1 << 40)))
                } else {
                    u128::from(mix(i))
                }
            };
            for i in 0..10_000 {
                if i % 2 == 0 {
                    map.shard(key(i)).insert(split(key(i)), i as u32);
                } else {
                    map.shard_mut(key(i)).insert(split(key(i)), i as u32);
                }
            }
            assert_eq!(map.len(), 10_000);
            assert!(map.shards.iter().all(|shard| lock(shard).len() > 100), "wide: {wide}");
            assert!((0..10_000).all(|i| map.shard(key(i)).get(&split(key(i))) == Some(&(i as u32))));
            assert!(map.bytes() >= 10_000 * 25);
        }
    }
}
