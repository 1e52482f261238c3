//! Numbers for the distinct messages of a grow-only model, so that a network tells whether it
//! holds a message with a bit test rather than a search.
//!
//! Every step of a search asks whether the messages its handler sent are new to the world's
//! grow-only network (a TLA+-style message set): a step whose sends are all held changes nothing
//! there. Answered by a binary search through the network's shared envelopes, the question
//! took 10% of the instructions of a Paxos.tla search, whose networks hold dozens of messages
//! and whose leaders re-send the same broadcasts from world after world.
//!
//! A model numbers the first [`MessageNumbers::CAPACITY`] distinct messages its handlers send
//! ([`MessageNumbers::number`]), and each grow-only network keeps the set of numbers it holds
//! ([`HeldNumbers`]). Envelopes made elsewhere (a world read back from bytes) carry no number;
//! a network holding any such envelope answers from its search as before, so the index is an
//! exact shortcut and never a guess.

use crate::NodeId;
use std::sync::{Mutex, PoisonError};

/// The number of an envelope that has none.
pub(crate) const UNNUMBERED: u32 = u32::MAX;

/// The numbers a model has given its messages, by destination and hash (the identity by which
/// a grow-only network keeps one copy of a message). Shared by every thread of a check.
#[derive(Debug)]
pub(crate) struct MessageNumbers {
    table: Mutex<Table>,
}

/// An open-addressing table of twice as many slots as there are numbers, probed linearly from
/// the hash's low bits (the hash is uniform already): a few lines of code, where a `HashMap`
/// brought its hasher's code into every search's resident pages.
#[derive(Debug)]
struct Table {
    slots: Vec<Given>,
    /// Numbers given so far: the next one.
    given: u32,
}

/// A slot of [`Table`]: the message numbered `number`, or empty where that is [`UNNUMBERED`].
#[derive(Clone, Copy, Debug)]
struct Given {
    to: NodeId,
    hash: u128,
    number: u32,
}

impl Default for MessageNumbers {
    fn default() -> Self {
        let empty = Given { to: NodeId::new(0), hash: 0, number: UNNUMBERED };
        MessageNumbers { table: Mutex::new(Table { slots: vec![empty; Self::SLOTS], given: 0 }) }
    }
}

impl MessageNumbers {
    /// How many distinct messages get numbers: as many as a network's index has bits.
    pub(crate) const CAPACITY: u32 = NumberSet::BITS;

    /// Slots of the table: at most half of them are ever used.
    const SLOTS: usize = 2 * Self::CAPACITY as usize;

    /// The number of the message to `to` with hash `hash`: the one it was given before, a new
    /// one while numbers last, else [`UNNUMBERED`]. Out of line: it runs only where a handler
    /// does, and the search's loop stays as it was without it.
    #[inline(never)]
    pub(crate) fn number(&self, to: NodeId, hash: u128) -> u32 {
        // Only a handler that actually runs sends (a search recalls most steps), so the lock is
        // taken rarely.
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        let mut at = hash as usize % Self::SLOTS;
        loop {
            let slot = table.slots[at];
            if slot.number == UNNUMBERED {
                if table.given == Self::CAPACITY {
                    return UNNUMBERED;
                }
                let number = table.given;
                table.slots[at] = Given { to, hash, number };
                table.given += 1;
                return number;
            }
            if (slot.to, slot.hash) == (to, hash) {
                return slot.number;
            }
            at = (at + 1) % Self::SLOTS;
        }
    }
}

/// A set of message numbers, one bit each: the held messages of a network ([`HeldNumbers`]),
/// or the messages a node slot is known to ignore ([`crate::idle_events`]). Unnumbered
/// messages are never in it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct NumberSet(pub(crate) [u64; 2]);

impl NumberSet {
    /// Numbers the set has room for: enough for Paxos.tla's messages (at most 72 with three
    /// acceptors and ballots 0..2) or two-phase commit's (27 with nine resource managers), and
    /// few enough that a network stays small to copy (at 256, moving one became a `memcpy`).
    pub(crate) const BITS: u32 = 128;

    /// Adds `number`; false (and nothing added) if it is not one.
    #[inline(always)]
    pub(crate) fn insert(&mut self, number: u32) -> bool {
        let Some((word, bit)) = Self::place(number) else {
            return false;
        };
        self.0[word] |= bit;
        true
    }

    /// Removes `number`; false if it is not one.
    #[inline(always)]
    pub(crate) fn remove(&mut self, number: u32) -> bool {
        let Some((word, bit)) = Self::place(number) else {
            return false;
        };
        self.0[word] &= !bit;
        true
    }

    /// Whether `number` is in the set, or `None` if it is not a number.
    #[inline(always)]
    pub(crate) fn get(&self, number: u32) -> Option<bool> {
        let (word, bit) = Self::place(number)?;
        Some(self.0[word] & bit != 0)
    }

    /// Whether `number` is in the set (never an unnumbered message).
    #[inline(always)]
    pub(crate) fn contains(&self, number: u32) -> bool {
        self.get(number) == Some(true)
    }

    /// The numbers in either set.
    #[inline(always)]
    pub(crate) fn union(self, other: NumberSet) -> NumberSet {
        NumberSet([self.0[0] | other.0[0], self.0[1] | other.0[1]])
    }

    /// The word and bit of `number`, if it is one.
    #[inline(always)]
    pub(crate) fn place(number: u32) -> Option<(usize, u64)> {
        (number < Self::BITS).then(|| ((number / 64) as usize, 1 << (number % 64)))
    }
}

/// The numbers of the messages a grow-only network holds, and how many of its messages have
/// none. A grow-only network holds one copy of each message, so a number is held or not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct HeldNumbers {
    numbers: NumberSet,
    unnumbered: u32,
}

impl HeldNumbers {
    /// Records a message numbered `number` ([`UNNUMBERED`] or not) as held.
    pub(crate) fn add(&mut self, number: u32) {
        if !self.numbers.insert(number) {
            self.unnumbered += 1;
        }
    }

    /// Records a held message numbered `number` as gone.
    pub(crate) fn remove(&mut self, number: u32) {
        if !self.numbers.remove(number) {
            self.unnumbered -= 1;
        }
    }

    /// Whether a message numbered `number` is held, where the index can tell: not for an
    /// unnumbered message, nor for an absent number while some held message has none.
    #[inline(always)]
    pub(crate) fn holds(&self, number: u32) -> Option<bool> {
        match self.numbers.get(number)? {
            true => Some(true),
            false => (self.unnumbered == 0).then_some(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_keeps_its_number_and_numbers_run_out_at_capacity() {
        let numbers = MessageNumbers::default();
        let (p, q) = (NodeId::new(0), NodeId::new(1));
        assert_eq!(numbers.number(p, 7), 0);
        assert_eq!(numbers.number(q, 7), 1, "the destination is part of the identity");
        assert_eq!(numbers.number(p, 7), 0);
        for hash in 100..100 + u128::from(MessageNumbers::CAPACITY) - 2 {
            assert_ne!(numbers.number(p, hash), UNNUMBERED);
        }
        assert_eq!(numbers.number(p, 99), UNNUMBERED, "every number is given");
        assert_eq!(numbers.number(q, 7), 1, "numbers given stay");
    }

    #[test]
    fn the_index_answers_only_what_it_knows() {
        let mut held = HeldNumbers::default();
        held.add(3);
        held.add(100);
        assert_eq!(held.holds(3), Some(true));
        assert_eq!(held.holds(100), Some(true));
        assert_eq!(held.holds(4), Some(false));
        assert_eq!(held.holds(UNNUMBERED), None, "an unnumbered message needs the search");
        held.add(UNNUMBERED);
        assert_eq!(held.holds(4), None, "an unnumbered message held might be this one");
        assert_eq!(held.holds(3), Some(true));
        held.remove(UNNUMBERED);
        held.remove(3);
        assert_eq!(held.holds(3), Some(false));
        assert_eq!(held, {
            let mut only = HeldNumbers::default();
            only.add(100);
            only
        });
    }
}
