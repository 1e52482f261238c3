//! A set of one node's local states, one bit per state: what soundness verification keeps of
//! the states it may place a node in, and of the states that can still reach them.

use super::explore::StateId;

/// A set of local states of one node (by id), as bits.
#[derive(Clone, Debug, Default)]
pub(crate) struct StateSet {
    words: Vec<u64>,
}

impl StateSet {
    /// Adds `state`; whether it was not there before.
    #[inline]
    pub(crate) fn insert(&mut self, state: StateId) -> bool {
        let (word, bit) = (state as usize / 64, state % 64);
        if self.words.len() <= word {
            self.words.resize(word + 1, 0);
        }
        let before = self.words[word];
        self.words[word] = before | 1 << bit;
        before & 1 << bit == 0
    }

    /// Whether `state` is in the set.
    #[inline]
    pub(crate) fn contains(&self, state: StateId) -> bool {
        self.words.get(state as usize / 64).is_some_and(|word| word >> (state % 64) & 1 != 0)
    }

    /// Adds every state of `other`.
    pub(crate) fn union_with(&mut self, other: &StateSet) {
        if self.words.len() < other.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (word, bits) in self.words.iter_mut().zip(&other.words) {
            *word |= bits;
        }
    }

    /// The states, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = StateId> + '_ {
        self.words.iter().enumerate().flat_map(|(word, &bits)| {
            let mut left = bits;
            std::iter::from_fn(move || {
                (left != 0).then(|| {
                    let bit = left.trailing_zeros();
                    left &= left - 1;
                    word as StateId * 64 + bit
                })
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::StateSet;

    #[test]
    fn a_set_holds_its_states_in_order_once_each() {
        let mut set = StateSet::default();
        assert!(set.insert(130));
        assert!(set.insert(3));
        assert!(!set.insert(130), "already there");
        assert!(set.insert(64));
        assert!(set.contains(3) && set.contains(64) && set.contains(130));
        assert!(!set.contains(4) && !set.contains(1_000), "beyond the last word is outside");
        assert_eq!(set.iter().collect::<Vec<_>>(), [3, 64, 130]);

        let mut other = StateSet::default();
        other.insert(5);
        other.insert(200);
        other.union_with(&set);
        assert_eq!(other.iter().collect::<Vec<_>>(), [3, 5, 64, 130, 200]);
    }
}
