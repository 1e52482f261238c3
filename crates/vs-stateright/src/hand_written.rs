//! The practical limit for two-phase commit on this machine: a plain breadth-first search
//! written for this one model, as an engineer would write it by hand — no model API, no
//! handlers, no network — over 64-bit fingerprints. foretell's figures are measured against it
//! in the same run (issue 3 asks for foretell within 2x of it).
//!
//! A state of TLA+'s `TwoPhase` with `N` resource managers packs into one `u64`:
//!
//! | bits | field |
//! |---|---|
//! | `2r..2r+2` | `rmState[r]`: 0 working, 1 prepared, 2 committed, 3 aborted |
//! | `2N..2N+2` | `tmState`: 0 init, 1 committed, 2 aborted |
//! | `2N+2+r` | `tmPrepared` holds `r` |
//! | `3N+2+r` | `msgs` holds `Prepared(r)` |
//! | `4N+2`, `4N+3` | `msgs` holds `Commit`, `Abort` |
//!
//! The fingerprint is a bijective mix of the packed state, so the visited set holds 64 bits a
//! state and no two states share one. Successors follow the spec's seven actions; every new
//! state is checked against the invariant `consistent`.

use rustc_hash::FxHashSet;

const WORKING: u64 = 0;
const PREPARED: u64 = 1;
const COMMITTED: u64 = 2;
const ABORTED: u64 = 3;
const TM_INIT: u64 = 0;
const TM_COMMITTED: u64 = 1;
const TM_ABORTED: u64 = 2;

/// The bit layout for `rms` resource managers.
#[derive(Clone, Copy, Debug)]
struct Layout {
    rms: u32,
}

impl Layout {
    fn rm(self, state: u64, r: u32) -> u64 {
        state >> (2 * r) & 0b11
    }

    fn with_rm(self, state: u64, r: u32, value: u64) -> u64 {
        state & !(0b11 << (2 * r)) | value << (2 * r)
    }

    fn tm(self, state: u64) -> u64 {
        state >> (2 * self.rms) & 0b11
    }

    fn with_tm(self, state: u64, value: u64) -> u64 {
        state & !(0b11 << (2 * self.rms)) | value << (2 * self.rms)
    }

    fn tm_prepared(self, r: u32) -> u64 {
        1 << (2 * self.rms + 2 + r)
    }

    fn all_tm_prepared(self) -> u64 {
        ((1 << self.rms) - 1) << (2 * self.rms + 2)
    }

    fn msg_prepared(self, r: u32) -> u64 {
        1 << (3 * self.rms + 2 + r)
    }

    fn msg_commit(self) -> u64 {
        1 << (4 * self.rms + 2)
    }

    fn msg_abort(self) -> u64 {
        1 << (4 * self.rms + 3)
    }

    /// Every successor of `state`, in the spec's action order.
    fn successors(self, state: u64, mut each: impl FnMut(u64)) {
        if self.tm(state) == TM_INIT {
            if state & self.all_tm_prepared() == self.all_tm_prepared() {
                each(self.with_tm(state, TM_COMMITTED) | self.msg_commit());
            }
            each(self.with_tm(state, TM_ABORTED) | self.msg_abort());
        }
        for r in 0..self.rms {
            if self.tm(state) == TM_INIT && state & self.msg_prepared(r) != 0 {
                each(state | self.tm_prepared(r));
            }
            if self.rm(state, r) == WORKING {
                each(self.with_rm(state, r, PREPARED) | self.msg_prepared(r));
                each(self.with_rm(state, r, ABORTED));
            }
            if state & self.msg_commit() != 0 {
                each(self.with_rm(state, r, COMMITTED));
            }
            if state & self.msg_abort() != 0 {
                each(self.with_rm(state, r, ABORTED));
            }
        }
    }

    /// `consistent`: no resource manager committed while another aborted.
    fn consistent(self, state: u64) -> bool {
        let rms = (0..self.rms).map(|r| self.rm(state, r));
        let (mut committed, mut aborted) = (false, false);
        for rm in rms {
            committed |= rm == COMMITTED;
            aborted |= rm == ABORTED;
        }
        !(committed && aborted)
    }
}

/// A bijection on 64-bit values that spreads every input bit over the output (the finalizer
/// of SplitMix64): the state's fingerprint.
fn fingerprint(state: u64) -> u64 {
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What the search found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Distinct states, the initial one included.
    pub states: u64,
    /// Whether every state satisfied `consistent`.
    pub consistent: bool,
}

/// Breadth-first search of two-phase commit with `rms` resource managers (1 to 12), level by
/// level.
///
/// # Panics
/// If `rms` is outside 1..=12 (the state must fit in 64 bits).
pub fn two_phase_commit(rms: usize) -> Outcome {
    assert!((1..=12).contains(&rms), "the hand-written search packs 1 to 12 resource managers");
    let layout = Layout { rms: rms as u32 };
    let initial = 0u64; // every field's first value is 0
    let mut seen = FxHashSet::default();
    seen.insert(fingerprint(initial));
    let (mut level, mut next) = (vec![initial], Vec::new());
    let mut consistent = layout.consistent(initial);
    while !level.is_empty() {
        for &state in &level {
            layout.successors(state, |successor| {
                if seen.insert(fingerprint(successor)) {
                    consistent &= layout.consistent(successor);
                    next.push(successor);
                }
            });
        }
        std::mem::swap(&mut level, &mut next);
        next.clear();
    }
    Outcome { states: seen.len() as u64, consistent }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_published_counts() {
        // TLC's distinct-state counts for TwoPhase.
        for (rms, states) in [(3, 288), (4, 1_568), (5, 8_832), (6, 50_816)] {
            assert_eq!(two_phase_commit(rms), Outcome { states, consistent: true }, "{rms} RMs");
        }
    }

    #[test]
    fn the_invariant_can_fail() {
        let layout = Layout { rms: 2 };
        let split = layout.with_rm(layout.with_rm(0, 0, COMMITTED), 1, ABORTED);
        assert!(!layout.consistent(split));
        assert!(layout.consistent(layout.with_rm(0, 0, COMMITTED)));
    }
}
