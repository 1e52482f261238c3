//! The visited set with compact parent pointers.
//!
//! Stateful engines store, per distinct world, its fingerprint (64 or 128 bits) in a hash map
//! that points into a vector of parent records: the parent's record index, the successor
//! ordinal that leads from the parent to the world, and the world's depth — 12 bytes. A trace
//! is rebuilt by walking the records to a root and re-executing the ordinals, so worlds
//! themselves are never stored.

use crate::FingerprintBits;
use foretell_model::Fingerprint;
use rustc_hash::FxHashMap;

/// A record's index.
pub(crate) type RecordId = u32;

const ROOT: RecordId = RecordId::MAX;

#[derive(Clone, Copy, Debug)]
struct Record {
    parent: RecordId,
    /// The successor ordinal from the parent, or the initial world's index for roots.
    ordinal: u32,
    depth: u32,
}

enum Keys {
    Short(FxHashMap<u64, RecordId>),
    Full(FxHashMap<u128, RecordId>),
}

/// What [`Visited::visit`] found.
pub(crate) enum Visit {
    /// A world never seen before.
    New(RecordId),
    /// A world seen before at a greater depth; its record now holds the shorter path.
    Shallower(RecordId),
    /// A world seen before at the same or a smaller depth.
    Seen,
}

/// Distinct worlds and how each was first reached.
pub(crate) struct Visited {
    keys: Keys,
    records: Vec<Record>,
}

impl Visited {
    pub(crate) fn new(bits: FingerprintBits) -> Self {
        let keys = match bits {
            FingerprintBits::B64 => Keys::Short(FxHashMap::default()),
            FingerprintBits::B128 => Keys::Full(FxHashMap::default()),
        };
        Visited { keys, records: Vec::new() }
    }

    /// Distinct worlds recorded.
    pub(crate) fn len(&self) -> usize {
        match &self.keys {
            Keys::Short(m) => m.len(),
            Keys::Full(m) => m.len(),
        }
    }

    fn push(&mut self, record: Record) -> RecordId {
        let id = RecordId::try_from(self.records.len()).expect("fewer than 4 billion records");
        self.records.push(record);
        id
    }

    /// Records a world reached from `parent` (None for an initial world, whose index is
    /// `ordinal`) at `depth`.
    pub(crate) fn visit(
        &mut self,
        fingerprint: Fingerprint,
        parent: Option<RecordId>,
        ordinal: u32,
        depth: u32,
    ) -> Visit {
        let record = Record { parent: parent.unwrap_or(ROOT), ordinal, depth };
        let existing = match &self.keys {
            Keys::Short(m) => m.get(&fingerprint.short()).copied(),
            Keys::Full(m) => m.get(&fingerprint.0).copied(),
        };
        match existing {
            Some(id) if self.records[id as usize].depth <= depth => Visit::Seen,
            Some(id) => {
                self.records[id as usize] = record;
                Visit::Shallower(id)
            }
            None => {
                let id = self.push(record);
                match &mut self.keys {
                    Keys::Short(m) => m.insert(fingerprint.short(), id),
                    Keys::Full(m) => m.insert(fingerprint.0, id),
                };
                Visit::New(id)
            }
        }
    }

    /// Records a step that is not a distinct world of its own (a violating step into a world
    /// already seen), so that its path can still be rebuilt.
    pub(crate) fn record_step(&mut self, parent: RecordId, ordinal: u32) -> RecordId {
        let depth = self.records[parent as usize].depth + 1;
        self.push(Record { parent, ordinal, depth })
    }

    pub(crate) fn depth(&self, id: RecordId) -> u32 {
        self.records[id as usize].depth
    }

    /// The path to record `id`: the initial world's index and the successor ordinals.
    pub(crate) fn path(&self, mut id: RecordId) -> (u32, Vec<u32>) {
        let mut ordinals = Vec::new();
        loop {
            let record = self.records[id as usize];
            if record.parent == ROOT {
                ordinals.reverse();
                return (record.ordinal, ordinals);
            }
            ordinals.push(record.ordinal);
            id = record.parent;
        }
    }
}
