//! System states of local states, built without taking references to their slots: what local
//! model checking (LMC, "Local Model Checking of Distributed Systems", section 4,
//! `checkSystemInvariant`) builds for every combination of local states it checks invariants
//! on, hundreds of millions of times in a run.
//!
//! A world holds its node slots as `Arc`s. Re-pointing one world at each combination
//! (replacing the slots that changed and adjusting the fingerprint by them) already costs a
//! fraction of a world built per combination, but each replaced slot is still an atomic
//! increment of the new slot's count and an atomic decrement of the old one's: three quarters
//! of the re-pointing, and half of a general-form run (a profile of the live Paxos state,
//! docs/BENCHMARKS.md). A [`SystemState`] borrows the local states for its whole life instead,
//! so its world may hold their slots uncounted: the local states keep the slots alive, and the
//! system state never drops what it did not count.
//!
//! The one rule that makes this sound, kept by every method here: every slot in the world is
//! uncounted and belongs to a local state borrowed for `'l`; such a slot is forgotten when it
//! is replaced and when the system state is dropped, never dropped. What the world is lent out
//! as (`&World`) cannot replace or take a slot; a clone of it counts its slots as any world
//! does, so it may outlive the system state.

use crate::network::Network;
use crate::world::{rest_term, FaultsUsed, NodeSlot};
use crate::{Fingerprint, LocalState, Protocol, Simulator, World};
use std::marker::PhantomData;
use std::sync::Arc;

/// The system state of one local state per node, re-pointed in place at other local states.
pub struct SystemState<'l, P: Protocol> {
    /// The world; its slots are the borrowed local states', uncounted (see the module's notes).
    world: World<P>,
    locals: PhantomData<&'l LocalState<P>>,
}

/// `local`'s slot, uncounted: an `Arc` that must be forgotten, never dropped.
fn uncounted<P: Protocol>(local: &LocalState<P>) -> Arc<NodeSlot<P>> {
    // SAFETY: the pointer comes from a live `Arc` of the same type. The result does not own a
    // count, and every caller puts it into a `SystemState`'s world, which forgets it.
    unsafe { Arc::from_raw(Arc::as_ptr(local.slot())) }
}

impl<'l, P: Protocol> SystemState<'l, P> {
    /// The system state of `locals` (one per node, in node order): their slots, an empty
    /// network and the inputs none of them has been given.
    ///
    /// # Panics
    /// If `locals` does not hold one state per node.
    pub fn new(sim: &Simulator<'_, P>, locals: impl ExactSizeIterator<Item = &'l LocalState<P>>) -> Self {
        assert_eq!(locals.len(), sim.model().node_count(), "one local state per node");
        let world = World {
            nodes: Vec::with_capacity(locals.len()),
            network: Arc::new(Network::new(sim.model().network_kind())),
            pending: 0,
            faults_used: FaultsUsed::default(),
            fingerprint: Fingerprint::default(),
        };
        // From here on the drop forgets whatever slots the world holds.
        let mut system = SystemState { world, locals: PhantomData };
        for local in locals {
            system.world.pending |= local.pending();
            system.world.nodes.push(uncounted(local));
        }
        system.world.seal();
        system
    }

    /// The world, to check properties in.
    pub fn world(&self) -> &World<P> {
        &self.world
    }

    /// Makes this the system state of `locals` (one per node, in node order): the slots that
    /// changed are replaced and the fingerprint adjusted by them.
    ///
    /// # Panics
    /// If `locals` does not hold one state per node.
    pub fn repoint(&mut self, locals: impl ExactSizeIterator<Item = &'l LocalState<P>>) {
        let world = &mut self.world;
        assert_eq!(locals.len(), world.nodes.len(), "one local state per node");
        let mut fingerprint = world.fingerprint.0;
        let mut pending = 0;
        for (slot, local) in world.nodes.iter_mut().zip(locals) {
            pending |= local.pending();
            if !Arc::ptr_eq(slot, local.slot()) {
                fingerprint = fingerprint.wrapping_sub(slot.hash).wrapping_add(local.slot().hash);
                std::mem::forget(std::mem::replace(slot, uncounted(local)));
            }
        }
        if pending != world.pending {
            fingerprint = fingerprint
                .wrapping_sub(rest_term(world.pending, world.faults_used))
                .wrapping_add(rest_term(pending, world.faults_used));
            world.pending = pending;
        }
        world.fingerprint = Fingerprint(fingerprint);
        debug_assert_eq!(world.fingerprint, world.clone().sealed().fingerprint, "the sum of the parts");
    }
}

impl<P: Protocol> Drop for SystemState<'_, P> {
    fn drop(&mut self) {
        for slot in self.world.nodes.drain(..) {
            std::mem::forget(slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChoiceOdometer, LocalEvent, Model, NodeId, Out};
    use serde::{Deserialize, Serialize};

    /// Each node counts its inputs, up to two.
    struct Counter;

    #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
    struct Bump;

    impl Protocol for Counter {
        type State = u8;
        type Msg = ();
        type Timer = ();
        type Input = Bump;

        fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> u8 {
            0
        }

        fn on_message(&self, _: NodeId, _: &mut u8, _: NodeId, _: &(), _: &mut Out<'_, Self>) {}

        fn on_input(&self, _: NodeId, count: &mut u8, _: &Bump, _: &mut Out<'_, Self>) {
            *count = (*count + 1).min(2);
        }
    }

    /// Node `n`'s local states: its start state and its states after one and two bumps.
    fn local_states(sim: &Simulator<'_, Counter>) -> Vec<Vec<LocalState<Counter>>> {
        let mut start = None;
        sim.initial_worlds(|_, world, _| start = Some(world));
        let starts = sim.local_states(&start.expect("one initial world"));
        let bump = |node: usize, local: &LocalState<Counter>| {
            sim.local_step(
                NodeId(node as u32),
                local,
                LocalEvent::Spontaneous(node as u32),
                &mut ChoiceOdometer::new(),
            )
            .next
            .into_local(local)
        };
        starts
            .into_iter()
            .enumerate()
            .map(|(node, start)| {
                let once = bump(node, &start);
                let twice = bump(node, &once);
                vec![start, once, twice]
            })
            .collect()
    }

    fn describe(world: &World<Counter>) -> (Fingerprint, Vec<u8>, u32) {
        (world.fingerprint(), world.states().copied().collect(), world.pending_input_count())
    }

    /// Re-pointed at any combination, the system state is the one built afresh from it (its
    /// fingerprint summed anew), and the local states' slots are counted as before: once each,
    /// by their local states, and once more by each clone of the world while it lives.
    #[test]
    fn a_repointed_system_state_is_a_fresh_one_and_leaves_the_counts_alone() {
        let driver = crate::Driver::new().spontaneous(NodeId(0), Bump).spontaneous(NodeId(1), Bump);
        let model = Model::new(Counter).nodes(2).driver(driver);
        let sim = Simulator::new(&model).unwrap();
        let locals = local_states(&sim);
        let counts = || locals.iter().flatten().map(|l| Arc::strong_count(l.slot())).collect::<Vec<_>>();
        let before = counts();
        let mut system = SystemState::new(&sim, [&locals[0][0], &locals[1][0]].into_iter());
        assert_eq!(counts(), before);
        for a in 0..3 {
            for b in 0..3 {
                let pair = [&locals[0][a], &locals[1][b]];
                system.repoint(pair.into_iter());
                assert_eq!(describe(system.world()), describe(&sim.join(pair.into_iter())));
                assert_eq!(counts(), before);
                let clone = system.world().clone();
                assert_eq!(Arc::strong_count(locals[0][a].slot()), before[a] + 1);
                drop(clone);
            }
        }
        // A call that panics (here, one local state short) leaves the slots as they were, and
        // the drop forgets them all.
        let short = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            system.repoint([&locals[0][1]].into_iter());
        }));
        assert!(short.is_err());
        drop(system);
        assert_eq!(counts(), before);
    }
}
