//! Stable fingerprints of worlds and of their parts.
//!
//! A fingerprint must be the same in every process and on every machine, so that a trace made on
//! one machine replays on another and a distributed search can partition states by owner. It is
//! therefore computed from a *canonical encoding* of the value ([`crate::hash_encoding`]: the
//! serde data model in fixed-width little-endian, no padding, no pointers) hashed with a
//! fixed-key hasher (xxh3-128). `std`'s `Hash` output is not used: it is not promised to be
//! stable across platforms or Rust versions.
//!
//! A world's fingerprint is not one hash of the whole world: each node's local state is hashed
//! once, when a step changes it, and the world fingerprint combines the cached per-part hashes
//! (see [`crate::World`]). A step that touches one node therefore rehashes one node.

use crate::hash_encoding;
use serde::Serialize;
use std::cell::RefCell;
use std::fmt;
use xxhash_rust::xxh3::xxh3_128;

/// A 128-bit stable fingerprint. Engines store either all 128 bits or the low 64
/// ([`Fingerprint::short`]), a choice that trades memory for collision probability.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Fingerprint(pub u128);

impl Fingerprint {
    /// The low 64 bits, the default width stored by engines.
    pub fn short(self) -> u64 {
        self.0 as u64
    }

    /// Parses the 32-digit hexadecimal form written by [`fmt::Display`].
    pub fn from_hex(text: &str) -> Option<Self> {
        if text.is_empty() || text.len() > 32 {
            return None;
        }
        u128::from_str_radix(text, 16).ok().map(Fingerprint)
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

/// Hashes values through their canonical encoding.
///
/// # Examples
/// ```
/// use foretell_model::FingerprintHasher;
/// let a = FingerprintHasher::hash(&(1u8, "x"));
/// assert_eq!(a, FingerprintHasher::hash(&(1u8, "x")));
/// assert_ne!(a, FingerprintHasher::hash(&(2u8, "x")));
/// ```
pub struct FingerprintHasher;

thread_local! {
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl FingerprintHasher {
    /// The stable 128-bit hash of `value`'s canonical encoding.
    ///
    /// # Panics
    /// If `value`'s `Serialize` implementation fails, which derived implementations never do;
    /// a hand-written one that returns an error is a bug in the protocol's types.
    pub fn hash<T: Serialize + ?Sized>(value: &T) -> u128 {
        BUFFER.with(|buffer| {
            // A handler may hash while another hash is on the stack (a Serialize impl that calls
            // hash); fall back to a fresh buffer rather than panicking on the RefCell.
            match buffer.try_borrow_mut() {
                Ok(mut bytes) => {
                    bytes.clear();
                    Self::encode_into(value, &mut bytes);
                    xxh3_128(&bytes)
                }
                Err(_) => {
                    let mut bytes = Vec::new();
                    Self::encode_into(value, &mut bytes);
                    xxh3_128(&bytes)
                }
            }
        })
    }

    fn encode_into<T: Serialize + ?Sized>(value: &T, bytes: &mut Vec<u8>) {
        hash_encoding::encode(value, bytes).expect("canonical encoding of a model value cannot fail");
    }

    /// Combines a part's hash with a tag that says where the part sits (a node index, a
    /// position), so that equal parts in different places contribute differently.
    pub fn mix(tag: u64, part: u128) -> u128 {
        let mut bytes = [0u8; 24];
        bytes[..8].copy_from_slice(&tag.to_le_bytes());
        bytes[8..].copy_from_slice(&part.to_le_bytes());
        xxh3_128(&bytes)
    }
}
