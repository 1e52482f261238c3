//! A vector kept in segments of a fixed size, so that it grows without copying.
//!
//! A `Vec` grows by allocating a buffer twice its size, copying into it and only then freeing
//! the old one, so for a moment its contents are resident twice. The searches keep vectors of
//! millions of entries: the stacks of a depth-first search of an unbounded model, the parent
//! records of a breadth-first one. One doubling of a 180 MiB stack took the process 17% past
//! its `--max-memory` budget before the next poll could see it. A segmented vector only ever
//! adds one segment, and keeps one emptied segment in reserve so that a stack moving up and
//! down across a segment's edge does not allocate each time.

/// Bytes in a segment: large enough that a segment boundary is rare, small enough to be no
/// matter against any memory budget.
const SEGMENT_BYTES: usize = 256 << 10;

/// A vector in segments of [`SEGMENT_BYTES`], grown and shrunk at its end.
pub(crate) struct SegmentedVec<T> {
    /// Full segments, first first, before `top`; each holds exactly [`Self::SEGMENT`] entries.
    below: Vec<Vec<T>>,
    /// The last segment, pushed to and popped from.
    top: Vec<T>,
    /// An emptied segment, kept for the next one the vector needs.
    spare: Vec<T>,
}

impl<T> SegmentedVec<T> {
    /// Entries in a segment.
    const SEGMENT: usize = {
        assert!(size_of::<T>() > 0, "a vector of zero-sized entries has no segments to keep");
        let entries = SEGMENT_BYTES / size_of::<T>();
        if entries == 0 {
            1
        } else {
            entries
        }
    };

    /// An empty vector; it allocates on its first push.
    pub(crate) fn new() -> Self {
        SegmentedVec { below: Vec::new(), top: Vec::new(), spare: Vec::new() }
    }

    /// Entries in the vector.
    pub(crate) fn len(&self) -> usize {
        self.below.len() * Self::SEGMENT + self.top.len()
    }

    /// Appends `item`.
    #[inline]
    pub(crate) fn push(&mut self, item: T) {
        if self.top.len() == self.top.capacity() {
            self.next_segment();
        }
        self.top.push(item);
    }

    /// Removes the last entry.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<T> {
        if self.top.is_empty() {
            self.previous_segment()?;
        }
        self.top.pop()
    }

    /// The entry at `index`, if there is one.
    pub(crate) fn get(&self, index: usize) -> Option<&T> {
        let (segment, offset) = Self::position(index);
        match segment.cmp(&self.below.len()) {
            std::cmp::Ordering::Less => Some(&self.below[segment][offset]),
            std::cmp::Ordering::Equal => self.top.get(offset),
            std::cmp::Ordering::Greater => None,
        }
    }

    /// The entry at `index`, to change in place, if there is one.
    pub(crate) fn get_mut(&mut self, index: usize) -> Option<&mut T> {
        let (segment, offset) = Self::position(index);
        match segment.cmp(&self.below.len()) {
            std::cmp::Ordering::Less => Some(&mut self.below[segment][offset]),
            std::cmp::Ordering::Equal => self.top.get_mut(offset),
            std::cmp::Ordering::Greater => None,
        }
    }

    /// The segment and the offset in it of the entry at `index`.
    fn position(index: usize) -> (usize, usize) {
        (index / Self::SEGMENT, index % Self::SEGMENT)
    }

    /// Removes every entry, keeping one segment.
    pub(crate) fn clear(&mut self) {
        self.below.truncate(1);
        if let Some(first) = self.below.pop() {
            self.top = first;
        }
        self.top.clear();
    }

    /// The entries, first to last.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.below.iter().flatten().chain(&self.top)
    }

    /// Starts a segment after a full (or never allocated) last one.
    #[cold]
    fn next_segment(&mut self) {
        let next = match std::mem::take(&mut self.spare) {
            spare if spare.capacity() > 0 => spare,
            // `with_capacity` allocates exactly the capacity asked for, so a full segment
            // holds `SEGMENT` entries, as `len` and `get` count on.
            _ => Vec::with_capacity(Self::SEGMENT),
        };
        let full = std::mem::replace(&mut self.top, next);
        if full.capacity() > 0 {
            self.below.push(full);
        }
    }

    /// Goes back to the segment before an empty last one; `None` if there is none.
    #[cold]
    fn previous_segment(&mut self) -> Option<()> {
        let below = self.below.pop()?;
        self.spare = std::mem::replace(&mut self.top, below);
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_is_a_stack_and_a_vector_across_many_segments() {
        let mut vec = SegmentedVec::new();
        let n = 3 * SegmentedVec::<u64>::SEGMENT + 7;
        for i in 0..n as u64 {
            vec.push(i);
        }
        assert_eq!(vec.len(), n);
        assert!(vec.iter().copied().eq(0..n as u64));
        assert!((0..n).all(|i| vec.get(i) == Some(&(i as u64))));
        assert_eq!(vec.get(n), None);
        assert_eq!(vec.get(10 * n), None);
        for i in (0..n as u64).rev() {
            assert_eq!(vec.pop(), Some(i));
            assert_eq!(vec.len(), i as usize);
        }
        assert_eq!(vec.pop(), None);
    }

    #[test]
    fn an_entry_changes_in_place_in_any_segment() {
        let mut vec = SegmentedVec::new();
        let n = 2 * SegmentedVec::<u64>::SEGMENT + 3;
        for i in 0..n as u64 {
            vec.push(i);
        }
        for index in [0, SegmentedVec::<u64>::SEGMENT + 1, n - 1] {
            *vec.get_mut(index).unwrap() += 1000;
            assert_eq!(vec.get(index), Some(&(index as u64 + 1000)));
        }
        assert_eq!(vec.get_mut(n), None);
        assert_eq!(vec.len(), n);
    }

    #[test]
    fn no_segment_ever_grows_past_its_size() {
        let mut vec = SegmentedVec::new();
        let segment = SegmentedVec::<[u8; 24]>::SEGMENT;
        // Up and down across a segment's edge, then far above it.
        for _ in 0..3 {
            for _ in 0..segment + 1 {
                vec.push([0u8; 24]);
            }
            for _ in 0..2 {
                vec.pop();
            }
        }
        for _ in 0..4 * segment {
            vec.push([0u8; 24]);
        }
        let segments = vec.below.iter().chain([&vec.top, &vec.spare]);
        assert!(segments.into_iter().all(|s| s.capacity() <= segment));
        assert_eq!(vec.len(), 3 * (segment - 1) + 4 * segment);
    }

    #[test]
    fn clearing_keeps_it_usable() {
        let mut vec = SegmentedVec::new();
        for i in 0..2 * SegmentedVec::<u32>::SEGMENT as u32 {
            vec.push(i);
        }
        vec.clear();
        assert_eq!(vec.len(), 0);
        assert_eq!(vec.pop(), None);
        vec.push(5);
        assert_eq!(vec.iter().copied().collect::<Vec<_>>(), [5]);
        assert_eq!(vec.get(0), Some(&5));
    }

    #[test]
    fn a_segment_holds_at_least_one_entry() {
        assert_eq!(SegmentedVec::<[u8; SEGMENT_BYTES + 1]>::SEGMENT, 1);
        assert_eq!(SegmentedVec::<u64>::SEGMENT, SEGMENT_BYTES / 8);
    }
}
