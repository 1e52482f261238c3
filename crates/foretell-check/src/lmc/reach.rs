//! Which of a node's local states can still reach a soundness search's targets: the backward
//! closure of the targets over predecessor pointers (LMC section 4, `isSequenceValid`, walks
//! the pointers back from a target; the search takes only events into these states).
//!
//! A walk costs the states it flags, and a key group's closure holds most of its node's
//! states: walked afresh for every verification, these walks were most of a long
//! two-proposal run (docs/BENCHMARKS.md). Key groups and the local graph only grow, so a
//! [`Closure`] keeps each key group's closure and brings it up to date with what was added
//! since: walks from the group's new members, and from the new pointers that lead into a
//! state already in the closure. Each state is flagged once and each pointer looked at once
//! over a whole run.

use super::explore::{NodeStates, StateId};
use super::state_set::StateSet;
use foretell_model::Protocol;

/// A node's local graph, as far as closures need it.
pub(crate) trait Graph {
    /// How many predecessor pointers there are.
    fn edge_count(&self) -> usize;
    /// Predecessor pointer `index` (in the order added) as (from, to).
    fn edge(&self, index: usize) -> (StateId, StateId);
    /// Calls `each` with the source of every pointer into `state`.
    fn sources(&self, state: StateId, each: impl FnMut(StateId));
}

impl<P: Protocol> Graph for NodeStates<P> {
    fn edge_count(&self) -> usize {
        self.pred_count()
    }

    fn edge(&self, index: usize) -> (StateId, StateId) {
        let pred = self.pred(index as u32);
        (pred.from, pred.to)
    }

    #[inline]
    fn sources(&self, state: StateId, each: impl FnMut(StateId)) {
        self.preds_into(state).map(|pred| pred.from).for_each(each);
    }
}

/// The states of one node from which a growing target set can be reached, over the node's
/// growing graph, and the targets themselves.
#[derive(Default)]
pub(crate) struct Closure {
    targets: StateSet,
    reach: StateSet,
    /// How many of the targets (in the order they were added) are in.
    targets_in: usize,
    /// How many of the graph's pointers ([`Graph::edge`]) have been looked at.
    edges_in: usize,
}

impl Closure {
    /// Brings the closure up to date with `targets` (every target so far, in the order added:
    /// the ones before the last call's length are taken as seen) and `graph` as it is now.
    pub(crate) fn update(&mut self, graph: &impl Graph, targets: &[StateId]) {
        let mut stack: Vec<StateId> = Vec::new();
        for &target in &targets[self.targets_in..] {
            self.targets.insert(target);
            if self.reach.insert(target) {
                stack.push(target);
            }
        }
        self.targets_in = targets.len();
        // A pointer added since, into a state in the closure, brings its source in. (A state
        // that comes in by a walk brings in all its pointers' sources, the new ones too.)
        let edges = graph.edge_count();
        for (from, to) in (self.edges_in..edges).map(|index| graph.edge(index)) {
            if self.reach.contains(to) && self.reach.insert(from) {
                stack.push(from);
            }
        }
        self.edges_in = edges;
        walk_back(graph, &mut self.reach, stack);
    }

    /// The targets, as of the last update.
    pub(crate) fn targets(&self) -> &StateSet {
        &self.targets
    }

    /// The states from which a target can be reached, as of the last update.
    pub(crate) fn reach(&self) -> &StateSet {
        &self.reach
    }
}

/// Adds to `reach` every state from which one of `stack`'s states (already in `reach`) can be
/// reached along predecessor pointers, stopping at states already in `reach`, whose
/// predecessors are taken to be in too.
pub(crate) fn walk_back(graph: &impl Graph, reach: &mut StateSet, mut stack: Vec<StateId>) {
    while let Some(state) = stack.pop() {
        graph.sources(state, |from| {
            if reach.insert(from) {
                stack.push(from);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A graph grown pointer by pointer.
    #[derive(Default)]
    struct Grown {
        preds: Vec<Vec<StateId>>,
        edges: Vec<(StateId, StateId)>,
    }

    impl Graph for Grown {
        fn edge_count(&self) -> usize {
            self.edges.len()
        }

        fn edge(&self, index: usize) -> (StateId, StateId) {
            self.edges[index]
        }

        fn sources(&self, state: StateId, each: impl FnMut(StateId)) {
            self.preds[state as usize].iter().copied().for_each(each);
        }
    }

    /// Random graphs and target sets grown a step at a time, cycles and pointers into old
    /// states included: the kept closure is, after every update, the one walked afresh.
    #[test]
    fn a_kept_closure_is_the_one_walked_afresh() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..50 {
            let mut graph = Grown { preds: vec![Vec::new()], ..Grown::default() };
            let mut targets: Vec<StateId> = Vec::new();
            let mut closure = Closure::default();
            for _ in 0..60 {
                let states = graph.preds.len() as u64;
                match next(4) {
                    // A new state, reached from an old one.
                    0 | 1 => {
                        let from = next(states) as StateId;
                        graph.preds.push(vec![from]);
                        graph.edges.push((from, states as StateId));
                    }
                    // A new pointer between old states (a merge; it may close a cycle).
                    2 => {
                        let (from, to) = (next(states) as StateId, next(states) as StateId);
                        graph.preds[to as usize].push(from);
                        graph.edges.push((from, to));
                    }
                    _ => targets.push(next(states) as StateId),
                }
                let mut afresh = StateSet::default();
                let from: Vec<StateId> = targets.iter().copied().filter(|&t| afresh.insert(t)).collect();
                walk_back(&graph, &mut afresh, from);
                closure.update(&graph, &targets);
                assert_eq!(closure.reach().iter().collect::<Vec<_>>(), afresh.iter().collect::<Vec<_>>());
                let mut distinct = targets.clone();
                distinct.sort_unstable();
                distinct.dedup();
                assert_eq!(closure.targets().iter().collect::<Vec<_>>(), distinct);
            }
        }
    }
}
