//! The visited set of the stateful engines, whichever way it stores worlds: 64-bit
//! fingerprints in a [`FingerprintSet`] (exact, compacted or bitstate) or, for a search on one
//! thread, exactly in a [`PackedSet`]; full 128-bit fingerprints; or, for a depth-bounded
//! depth-first search, each world's smallest depth.
//! Under a declared symmetry a world is stored under its orbit's canonical fingerprint, so
//! the counts are those of orbits, the same in any order and on any thread count.

use super::sharded_map::{self, split, ShardedMap};
use crate::fingerprint_set::{FingerprintSet, MemoryMode};
use crate::packed_set::PackedSet;
use crate::{CheckOptions, FingerprintBits};
use foretell_model::{Delta, Fingerprint, Protocol, Simulator, StepViolation, Successor, Unbuilt, World};
use std::collections::hash_map::Entry;
use std::sync::{Mutex, MutexGuard};

/// Which worlds were seen: fingerprints only, or (with a depth bound) each one's smallest
/// depth.
pub(crate) enum Seen {
    Set(FingerprintSet),
    /// Made for one thread only: its worker visits it through `&mut` ([`Seen::visit_owned`]).
    Packed(PackedSet),
    Wide(ShardedMap<()>),
    Depths(ShardedMap<u32>),
}

/// What [`Seen::visit`] found.
pub(crate) enum Visit {
    /// A world never seen: count it, check it, expand it.
    New,
    /// A world seen before only at a greater depth: expand it again (depth bound only).
    Reopened,
    /// Nothing to do.
    Seen,
}

impl Seen {
    /// The set `options` ask for, for a search on `threads` threads; `depths` keeps each
    /// world's smallest depth (for a depth-bounded search whose order is not breadth-first).
    pub(crate) fn new(options: &CheckOptions, depths: bool, threads: usize) -> Self {
        match (depths, options.fingerprint_bits, options.memory.mode()) {
            (true, _, _) => Seen::Depths(ShardedMap::default()),
            (false, FingerprintBits::B128, _) => Seen::Wide(ShardedMap::default()),
            (false, FingerprintBits::B64, MemoryMode::Exact) if threads == 1 => {
                Seen::Packed(PackedSet::new())
            }
            (false, FingerprintBits::B64, mode) => Seen::Set(FingerprintSet::new(mode)),
        }
    }

    /// Worlds inserted as new.
    pub(crate) fn len(&self) -> u64 {
        match self {
            Seen::Set(set) => set.len(),
            Seen::Packed(set) => set.len(),
            Seen::Wide(set) => set.len(),
            Seen::Depths(map) => map.len(),
        }
    }

    /// Heap bytes the set holds (for the hash maps, from their capacity).
    pub(crate) fn bytes(&self) -> u64 {
        match self {
            Seen::Set(set) => set.bytes(),
            Seen::Packed(set) => set.bytes(),
            Seen::Wide(set) => set.bytes(),
            Seen::Depths(map) => map.bytes(),
        }
    }

    /// For a lossy set, its estimate of the worlds it may have missed.
    pub(crate) fn omission(&self) -> Option<crate::Omission> {
        match self {
            Seen::Set(set) => set
                .omission()
                .map(|o| crate::Omission { per_state: o.per_state, expected_missed: o.expected_missed }),
            Seen::Packed(_) | Seen::Wide(_) | Seen::Depths(_) => None,
        }
    }

    /// Starts loading the memory a visit of `fingerprint` will read (see
    /// [`FingerprintSet::prefetch`]); the hash-map sets, used only with 128-bit fingerprints or
    /// depth bounds, have no such hint.
    #[inline]
    pub(crate) fn prefetch(&self, fingerprint: Fingerprint) {
        match self {
            Seen::Set(set) => set.prefetch(fingerprint.short()),
            Seen::Packed(set) => set.prefetch(fingerprint.short()),
            Seen::Wide(_) | Seen::Depths(_) => {}
        }
    }

    /// Visits `fingerprint` for the set's only user: a search's one worker, or any search
    /// before its workers start.
    #[inline(always)]
    pub(crate) fn visit_owned(
        &mut self,
        fingerprint: Fingerprint,
        bits: FingerprintBits,
        depth: u32,
    ) -> Visit {
        let new = match self {
            Seen::Set(set) => set.insert_mut(fingerprint.short()),
            Seen::Packed(set) => set.insert(fingerprint.short()),
            Seen::Wide(_) | Seen::Depths(_) => return Seen::visit(self, fingerprint, bits, depth),
        };
        if new {
            Visit::New
        } else {
            Visit::Seen
        }
    }

    /// Visits `fingerprint` for one of several workers that share the set.
    fn visit(&self, fingerprint: Fingerprint, bits: FingerprintBits, depth: u32) -> Visit {
        let key = sharded_map::stored_key(fingerprint, bits);
        let new = match self {
            Seen::Set(set) => set.insert(fingerprint.short()),
            Seen::Packed(_) => unreachable!("a packed set is made for one thread, which owns it"),
            Seen::Wide(set) => set.shard(key).insert(split(key), ()).is_none(),
            Seen::Depths(map) => match map.shard(key).entry(split(key)) {
                Entry::Vacant(entry) => {
                    entry.insert(depth);
                    true
                }
                Entry::Occupied(mut entry) if *entry.get() > depth => {
                    entry.insert(depth);
                    return Visit::Reopened;
                }
                Entry::Occupied(_) => false,
            },
        };
        if new {
            Visit::New
        } else {
            Visit::Seen
        }
    }
}

/// A worker's way into the visited set: shared with other workers (`&Seen`: a key found absent
/// is inserted under its shard's lock), or owned by the only one (`&mut Seen`: no lock, no
/// locked instruction, and in the exact and compact tables one probe per key instead of a
/// lookup and then an insert; the hash maps of 128-bit fingerprints and of depths keep their
/// locks).
pub(crate) trait Visitor {
    /// The set itself, for [`keyed_successors`]' hints.
    fn set(&self) -> &Seen;

    /// [`Seen::visit`].
    fn visit(&mut self, fingerprint: Fingerprint, bits: FingerprintBits, depth: u32) -> Visit;
}

impl Visitor for &Seen {
    fn set(&self) -> &Seen {
        self
    }

    #[inline(always)]
    fn visit(&mut self, fingerprint: Fingerprint, bits: FingerprintBits, depth: u32) -> Visit {
        Seen::visit(self, fingerprint, bits, depth)
    }
}

impl Visitor for &mut Seen {
    fn set(&self) -> &Seen {
        self
    }

    #[inline(always)]
    fn visit(&mut self, fingerprint: Fingerprint, bits: FingerprintBits, depth: u32) -> Visit {
        self.visit_owned(fingerprint, bits, depth)
    }
}

/// Locks `mutex`, ignoring poisoning: the sets stay consistent whatever a panicking thread did.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A successor on its way to the visited set, with the key it is stored under: the canonical
/// fingerprint of its orbit when the model declares a symmetry (which needs the world built),
/// otherwise the fingerprint the simulator computed without building it. It does not borrow its
/// parent, so that one buffer of them serves a worker's worlds one after another.
pub(crate) struct Keyed<P: Protocol> {
    pub(crate) key: Fingerprint,
    pub(crate) ordinal: u32,
    /// The violation the step caused, if any.
    pub(crate) violation: Option<Box<StepViolation>>,
    /// Built (boxed: only symmetric models build worlds before the lookup, and a small `Keyed`
    /// moves cheaply through the buffer), or still to be built.
    successor: Result<Box<World<P>>, Unbuilt<P>>,
}

impl<P: Protocol> Keyed<P> {
    #[inline(always)] // once per successor, where a user's crate instantiates the search
    pub(crate) fn new(sim: Simulator<'_, P>, mut successor: Successor<'_, P>) -> Self {
        let (ordinal, violation) = (successor.ordinal, successor.violation.take());
        match sim.model().symmetry_ref() {
            Some(symmetry) => {
                let world = successor.into_world();
                let key = symmetry.canonical_fingerprint(&world);
                Keyed { key, ordinal, violation, successor: Ok(Box::new(world)) }
            }
            None => Keyed {
                key: successor.fingerprint(),
                ordinal,
                violation,
                successor: Err(successor.unbuilt()),
            },
        }
    }

    /// The successor's world; `parent` is the world it is a successor of.
    pub(crate) fn into_world(self, parent: &World<P>) -> World<P> {
        match self.successor {
            Ok(world) => *world,
            Err(unbuilt) => unbuilt.build(parent),
        }
    }

    /// The successor as the parts of `parent` it replaces (see [`Delta`]).
    pub(crate) fn into_delta(self, parent: &World<P>) -> Delta<P> {
        match self.successor {
            Ok(world) => Delta::whole(*world),
            Err(unbuilt) => unbuilt.delta(parent),
        }
    }
}

/// Every successor of `world`, keyed, in canonical order, in `keyed` (emptied first), with the
/// memory `seen` will read for their keys already on its way: a large visited set costs a cache
/// miss per lookup, and one world's lookups, hinted together, wait for their misses side by side
/// rather than in turn.
pub(crate) fn keyed_successors<P: Protocol>(
    sim: Simulator<'_, P>,
    world: &World<P>,
    seen: &Seen,
    keyed: &mut Vec<Keyed<P>>,
) {
    keyed.clear();
    sim.successors(world, |successor| {
        let successor = Keyed::new(sim, successor);
        seen.prefetch(successor.key);
        keyed.push(successor);
    });
}

/// The key `world` is stored under (see [`Keyed`]).
pub(crate) fn key_of<P: Protocol>(sim: Simulator<'_, P>, world: &World<P>) -> Fingerprint {
    sim.model().symmetry_ref().map_or(world.fingerprint(), |symmetry| symmetry.canonical_fingerprint(world))
}
