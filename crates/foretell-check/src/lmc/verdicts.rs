//! Preliminary violations on their way through soundness verification: which are verified
//! together, and when (LMC section 4.2: verification of preliminary violations, and their
//! re-verification as the local space grows).
//!
//! **Together.** The preliminary violations of one property whose free nodes are the same form
//! one [`Batch`], verified by one search that places each other node in the union of their
//! picks. The search succeeds only in a world where the property is false, so what it finds is
//! a sound violation whichever preliminary violation's it is; and when it finds none, no
//! combination of the union is one, so none of theirs is. The union's positions are those of
//! the single searches and the combinations across them, each walked once: searched one by one,
//! the groups shared most of their positions and walked them again each time (on Paxos with two
//! proposals, about 1,300 positions a search over tens of thousands of searches;
//! docs/BENCHMARKS.md). A key group is named by its key, not copied: it is verified as it is
//! then, a superset of what it was when the preliminary violation was found, which a union may
//! be.
//!
//! **When.** New preliminary violations wait in *fresh* batches. They are verified once local
//! exploration has done as much work since the last verification (transitions and system
//! states built) as that verification did (positions examined), so that neither side starves
//! the other: exploration cannot run rounds
//! ahead of what has been verified, and verification does not run once per new state. Shown
//! unreachable, a fresh batch joins the *settled* one of its kind, which is verified again at
//! the end of each round that added states or predecessor pointers, since those may make it
//! sound. Verdicts follow from counts, not the clock, so a run is repeatable.

use super::combine::{Combiner, Pick, Place, Preliminary};
use super::explore::{LocalSpace, StateId};
use super::reach::{walk_back, Closure};
use super::soundness::{SeqEvent, Soundness, SoundnessCounts, Verifier};
use super::state_set::StateSet;
use super::{is_false, Stopper};
use foretell_model::{NodeId, Protocol, Simulator};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::ops::ControlFlow;

/// The preliminary violations of one exploration and what soundness verification made of them.
#[derive(Default)]
pub(super) struct Verdicts {
    pub(super) verifier: Verifier,
    /// Preliminary violations found.
    pub(super) preliminary: u64,
    /// Not verified yet.
    fresh: Vec<Batch>,
    /// Verified at least once, not shown reachable.
    settled: Vec<Batch>,
    /// The interleaving that reaches the first sound one.
    pub(super) sound: Option<Vec<(NodeId, SeqEvent)>>,
    /// The backward closure of each key group a batch has named, by (property, node, key),
    /// kept current from one verification to the next.
    closures: FxHashMap<(usize, usize, u64), Closure>,
    /// Local exploration's work (transitions, and worlds the general form built) when
    /// verification last ran, and the positions it examined then.
    last: (u64, u64),
}

/// The preliminary violations of one property whose free nodes are the same.
pub(super) struct Batch {
    pub(super) property: usize,
    /// Per node: `None` if free, else where it may be placed.
    members: Vec<Option<Union>>,
    /// How many preliminary violations it stands for.
    pub(super) combinations: u64,
    /// Whether its last verification ran out of budget or time (or it has had none).
    pub(super) undecided: bool,
}

/// The union of a node's picks: states and key groups.
#[derive(Default)]
struct Union {
    states: StateSet,
    keys: BTreeSet<u64>,
}

impl Union {
    fn absorb(&mut self, other: Union) {
        self.states.union_with(&other.states);
        self.keys.extend(other.keys);
    }
}

impl Batch {
    /// An empty batch for preliminary violations like `candidate`.
    fn like(candidate: &Preliminary) -> Self {
        Batch {
            property: candidate.property,
            members: candidate.picks.iter().map(|pick| (*pick != Pick::Free).then(Union::default)).collect(),
            combinations: 0,
            undecided: true,
        }
    }

    /// Which nodes are free, in node order.
    fn free_nodes(&self) -> impl Iterator<Item = bool> + '_ {
        self.members.iter().map(Option::is_none)
    }

    /// Whether `candidate` belongs here: the same property, and the same free nodes.
    fn holds_like(&self, candidate: &Preliminary) -> bool {
        self.property == candidate.property
            && self.free_nodes().eq(candidate.picks.iter().map(|pick| *pick == Pick::Free))
    }

    /// Adds `candidate`, whose free nodes are this batch's.
    fn add(&mut self, candidate: Preliminary) {
        for (union, pick) in self.members.iter_mut().zip(candidate.picks) {
            match (union, pick) {
                (Some(union), Pick::AnyOf(states)) => {
                    for state in states {
                        union.states.insert(state);
                    }
                }
                (Some(union), Pick::Keyed(key)) => {
                    union.keys.insert(key);
                }
                (None, Pick::Free) => {}
                (Some(_), Pick::Free) | (None, _) => unreachable!("a batch holds its own kind"),
            }
        }
        self.combinations += candidate.combinations;
    }

    /// Adds every preliminary violation of `other`, a batch of the same kind.
    fn absorb(&mut self, other: Batch) {
        for (union, theirs) in self.members.iter_mut().zip(other.members) {
            if let (Some(union), Some(theirs)) = (union, theirs) {
                union.absorb(theirs);
            }
        }
        self.combinations += other.combinations;
        self.undecided |= other.undecided;
    }

    /// Whether `other` holds preliminary violations of the same kind.
    fn same_kind(&self, other: &Batch) -> bool {
        self.property == other.property && self.free_nodes().eq(other.free_nodes())
    }

    /// Per node, the states of the union (`None` for a free node), with `key_group(node,
    /// key)` giving a key group's states as they are now.
    fn targets<'g>(&self, key_group: impl Fn(usize, u64) -> &'g StateSet) -> Vec<Option<StateSet>> {
        let targets = |(node, union): (usize, &Option<Union>)| {
            let union = union.as_ref()?;
            let mut all = union.states.clone();
            for &key in &union.keys {
                all.union_with(key_group(node, key));
            }
            Some(all)
        };
        self.members.iter().enumerate().map(targets).collect()
    }
}

/// What a run gives verification: the space, the model, the key groups, the budget, the work
/// done so far, the stopper.
pub(super) struct Context<'c, 's, 'm, P: Protocol> {
    pub(super) space: &'c LocalSpace<'s, 'm, P>,
    pub(super) sim: &'c Simulator<'m, P>,
    pub(super) combiner: &'c Combiner<P>,
    /// The most positions one search may examine.
    pub(super) budget: u64,
    /// Local exploration's work so far (transitions, and worlds the general form built).
    pub(super) work: u64,
    pub(super) stopper: &'c Stopper,
}

impl Verdicts {
    /// No verdicts yet; verification goes on from `counts`.
    pub(super) fn new(counts: SoundnessCounts) -> Self {
        Verdicts { verifier: Verifier::new(counts), ..Verdicts::default() }
    }

    /// Takes a new preliminary violation, to be verified with its batch.
    pub(super) fn note(&mut self, candidate: Preliminary) {
        self.preliminary += candidate.combinations;
        let at = match self.fresh.iter().position(|batch| batch.holds_like(&candidate)) {
            Some(at) => at,
            None => {
                self.fresh.push(Batch::like(&candidate));
                self.fresh.len() - 1
            }
        };
        self.fresh[at].add(candidate);
    }

    /// Whether the fresh batches are due: exploration has done, since verification last ran,
    /// at least as much `work` as the positions that verification examined.
    pub(super) fn due(&self, work: u64) -> bool {
        !self.fresh.is_empty() && work - self.last.0 >= self.last.1
    }

    /// Verifies the fresh batches; stops the run at a sound violation.
    pub(super) fn verify_fresh<P: Protocol>(&mut self, cx: &Context<'_, '_, '_, P>) -> ControlFlow<()> {
        let positions = self.verifier.counts.positions;
        let flow = self.verify_fresh_batches(cx);
        self.last = (cx.work, self.verifier.counts.positions - positions);
        flow
    }

    fn verify_fresh_batches<P: Protocol>(&mut self, cx: &Context<'_, '_, '_, P>) -> ControlFlow<()> {
        while let Some(mut batch) = self.fresh.pop() {
            let flow = self.settle(&mut batch, cx);
            let like =
                |settled: &&mut Batch| settled.same_kind(&batch) && settled.undecided == batch.undecided;
            match self.settled.iter_mut().find(like) {
                Some(settled) => settled.absorb(batch),
                None => self.settled.push(batch),
            }
            flow?;
        }
        ControlFlow::Continue(())
    }

    /// Verifies the fresh batches and the settled ones again (the end of a round that added
    /// states or predecessor pointers); stops the run at a sound violation.
    pub(super) fn verify_all<P: Protocol>(&mut self, cx: &Context<'_, '_, '_, P>) -> ControlFlow<()> {
        let positions = self.verifier.counts.positions;
        let mut flow = self.verify_fresh_batches(cx);
        if flow.is_continue() {
            let mut settled = std::mem::take(&mut self.settled);
            for batch in &mut settled {
                flow = self.settle(batch, cx);
                if flow.is_break() {
                    break;
                }
            }
            self.settled = settled;
        }
        self.last = (cx.work, self.verifier.counts.positions - positions);
        flow
    }

    /// Verifies `batch` in one search and records the verdict; stops the run if the search
    /// finds a sound violation or the run is stopped. A verification the run's stop cuts short
    /// leaves the verdict as it was (undecided for a fresh batch, the last one for a settled
    /// batch), as one the stop comes before does.
    fn settle<P: Protocol>(&mut self, batch: &mut Batch, cx: &Context<'_, '_, '_, P>) -> ControlFlow<()> {
        if cx.stopper.stopped() {
            return ControlFlow::Break(());
        }
        let property = &cx.sim.model().properties()[batch.property];
        let reused = RefCell::new(None);
        let goal = |states: &[StateId]| {
            is_false(property, cx.space.world_in(&mut reused.borrow_mut(), states), cx.stopper)
        };
        let kind = cx.sim.model().network_kind();
        let places = self.places(batch, cx);
        match self.verifier.verify(cx.space, kind, &places, &goal, cx.budget, cx.stopper) {
            Soundness::Sound(order) => {
                self.sound = Some(order);
                ControlFlow::Break(())
            }
            Soundness::Unsound => {
                batch.undecided = false;
                ControlFlow::Continue(())
            }
            Soundness::Abandoned if cx.stopper.stopped() => ControlFlow::Break(()),
            Soundness::Abandoned => {
                batch.undecided = true;
                ControlFlow::Continue(())
            }
        }
    }

    /// Where verification may place each node for `batch`: the union's states, and their
    /// backward closure, made of the key groups' closures (brought up to date) and a walk
    /// from the union's own states.
    fn places<P: Protocol>(&mut self, batch: &Batch, cx: &Context<'_, '_, '_, P>) -> Vec<Place> {
        for (node, union) in batch.members.iter().enumerate() {
            for &key in union.iter().flat_map(|union| &union.keys) {
                let closure = self.closures.entry((batch.property, node, key)).or_default();
                closure.update(&cx.space.nodes[node], cx.combiner.key_group(batch.property, node, key));
            }
        }
        let closure = |node, key| &self.closures[&(batch.property, node, key)];
        let targets = batch.targets(|node, key| closure(node, key).targets());
        let place = |(node, (union, targets)): (usize, (&Option<Union>, Option<StateSet>))| {
            let (Some(union), Some(targets)) = (union, targets) else { return Place::Free };
            let mut reach = StateSet::default();
            for &key in &union.keys {
                reach.union_with(closure(node, key).reach());
            }
            let from: Vec<StateId> = union.states.iter().filter(|&state| reach.insert(state)).collect();
            walk_back(&cx.space.nodes[node], &mut reach, from);
            Place::AnyOf { targets, reach }
        };
        batch.members.iter().zip(targets).enumerate().map(place).collect()
    }

    /// Every batch, fresh or settled.
    pub(super) fn batches(&self) -> impl Iterator<Item = &Batch> {
        self.settled.iter().chain(&self.fresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(picks: Vec<Pick>, combinations: u64) -> Preliminary {
        Preliminary { picks, property: 0, combinations }
    }

    fn members(targets: &Option<StateSet>) -> Option<Vec<StateId>> {
        targets.as_ref().map(|set| set.iter().collect())
    }

    #[test]
    fn a_batch_places_each_node_in_the_union_of_its_picks() {
        let first = candidate(vec![Pick::AnyOf(vec![3]), Pick::Keyed(7), Pick::Free], 4);
        let mut batch = Batch::like(&first);
        batch.add(first);
        let second = candidate(vec![Pick::AnyOf(vec![1, 70]), Pick::AnyOf(vec![2]), Pick::Free], 2);
        assert!(batch.holds_like(&second));
        batch.add(second);
        assert!(!batch.holds_like(&candidate(vec![Pick::Free, Pick::Keyed(7), Pick::AnyOf(vec![0])], 1)));
        assert!(!batch.holds_like(&Preliminary {
            property: 1,
            ..candidate(vec![Pick::AnyOf(vec![3]), Pick::Keyed(7), Pick::Free], 1)
        }));
        assert_eq!(batch.combinations, 6);
        // Key group 7 of node 1 has grown to 2, 5 and 9 by the time the batch is verified.
        let mut group = StateSet::default();
        for state in [2, 5, 9] {
            group.insert(state);
        }
        let targets = batch.targets(|node, key| {
            assert_eq!((node, key), (1, 7));
            &group
        });
        assert_eq!(members(&targets[0]), Some(vec![1, 3, 70]));
        assert_eq!(members(&targets[1]), Some(vec![2, 5, 9]));
        assert_eq!(members(&targets[2]), None);
    }

    #[test]
    fn absorbing_a_batch_keeps_both_and_an_undecided_one_taints_the_verdict() {
        let like = |state| candidate(vec![Pick::AnyOf(vec![state]), Pick::Free], 1);
        let mut settled = Batch::like(&like(0));
        settled.add(like(0));
        settled.undecided = false;
        let mut fresh = Batch::like(&like(100));
        fresh.add(like(100));
        assert!(settled.same_kind(&fresh));
        settled.absorb(fresh);
        let none = StateSet::default();
        assert_eq!(members(&settled.targets(|_, _| &none)[0]), Some(vec![0, 100]));
        assert_eq!(settled.combinations, 2);
        assert!(settled.undecided, "the fresh batch was never verified");
    }

    #[test]
    fn verification_is_due_after_as_much_exploration_as_it_examined_positions() {
        let mut verdicts = Verdicts::default();
        assert!(!verdicts.due(10), "nothing to verify");
        verdicts.note(candidate(vec![Pick::AnyOf(vec![1])], 1));
        assert!(verdicts.due(0), "the first verification is due at once");
        verdicts.last = (100, 50);
        assert!(!verdicts.due(149));
        assert!(verdicts.due(150));
        assert_eq!(verdicts.preliminary, 1);
    }
}
