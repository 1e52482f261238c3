//! Idle events: the local events a node slot is known to ignore, remembered in the slot itself,
//! so that a search skips them with one load where it would otherwise look them up in the
//! [`crate::step_memo`].
//!
//! Most of a world's enabled events change nothing: in two-phase commit with six resource
//! managers, a world has about 14 spontaneous inputs and 9 deliveries, and 5 of them are
//! successors. The step memo knows the rest are no-ops, but asking it means building the step's
//! key and probing a table for every one of them, in every world, and on a large search the
//! probed entry is often out of the cache. A slot is shared (`Arc`) by every world that holds it,
//! so what one world learned about it serves them all.
//!
//! Only local events are remembered, by their index: spontaneous driver input `i` and the slot's
//! `t`-th armed timer, whose step memo keys depend on the slot and the index alone. A bit is set
//! only where the memo recalled the event as a no-op or as not enabled, so it holds the memo's
//! facts and makes its assumptions (a handler is a deterministic function of the slot and the
//! event). The indices mean something only under one model, so the facts belong to the first
//! simulator that records one, and any other simulator ignores them.

use crate::Action;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The idle local events of one slot, under one simulator.
#[derive(Debug, Default)]
pub(crate) struct IdleEvents {
    /// The simulator the facts hold for; 0 (no simulator) until one records a fact, then fixed.
    simulator: AtomicU64,
    /// Bit `i`: spontaneous input `i` changes nothing.
    inputs: AtomicU64,
    /// Bit `t`: firing the slot's `t`-th timer changes nothing.
    timers: AtomicU64,
}

impl IdleEvents {
    /// Whether `action` is known to change nothing at this slot under `simulator`.
    #[inline]
    pub(crate) fn knows(&self, simulator: u64, action: Action) -> bool {
        match self.bit(action) {
            Some((bits, mask)) => bits.load(Relaxed) & mask != 0 && self.simulator.load(Relaxed) == simulator,
            None => false,
        }
    }

    /// Records that `action` changes nothing at this slot under `simulator`, unless the slot's
    /// facts belong to another simulator.
    #[inline] // called for every recalled no-op; most are deliveries, which it skips
    pub(crate) fn learn(&self, simulator: u64, action: Action) {
        if let Some((bits, mask)) = self.bit(action) {
            self.record(simulator, bits, mask);
        }
    }

    fn record(&self, simulator: u64, bits: &AtomicU64, mask: u64) {
        let owner = match self.simulator.compare_exchange(0, simulator, Relaxed, Relaxed) {
            Ok(_) => simulator,
            Err(owner) => owner,
        };
        // Written once per fact: a slot shared across threads is then only read.
        if owner == simulator && bits.load(Relaxed) & mask == 0 {
            bits.fetch_or(mask, Relaxed);
        }
    }

    /// A copy, for a slot copied to share no memory with the original.
    pub(crate) fn copy(&self) -> Self {
        IdleEvents {
            simulator: AtomicU64::new(self.simulator.load(Relaxed)),
            inputs: AtomicU64::new(self.inputs.load(Relaxed)),
            timers: AtomicU64::new(self.timers.load(Relaxed)),
        }
    }

    #[inline]
    fn bit(&self, action: Action) -> Option<(&AtomicU64, u64)> {
        let (bits, index) = match action {
            Action::Spontaneous(i) => (&self.inputs, i),
            Action::Timer(_, t) => (&self.timers, t),
            _ => return None,
        };
        (index < 64).then(|| (bits, 1u64 << index))
    }
}

#[cfg(test)]
mod tests {
    use crate::{Driver, Model, NodeId, Out, Protocol, Simulator, World};
    use serde::{Deserialize, Serialize};
    use std::sync::atomic::Ordering::Relaxed;

    /// One counter that `Bump` raises to 2; `Idle` never changes it.
    struct Counter;

    #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
    enum Input {
        Bump,
        Idle,
    }

    impl Protocol for Counter {
        type State = u8;
        type Msg = ();
        type Timer = ();
        type Input = Input;

        fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> u8 {
            0
        }

        fn on_message(&self, _: NodeId, _: &mut u8, _: NodeId, _: &(), _: &mut Out<'_, Self>) {}

        fn on_input(&self, _: NodeId, count: &mut u8, input: &Input, _: &mut Out<'_, Self>) {
            if *input == Input::Bump && *count < 2 {
                *count += 1;
            }
        }
    }

    fn counter(inputs: [Input; 2]) -> Model<Counter> {
        let [first, second] = inputs;
        let driver = Driver::new().spontaneous(NodeId(0), first).spontaneous(NodeId(0), second);
        Model::new(Counter).nodes(1).driver(driver)
    }

    fn successor_count(sim: &Simulator<'_, Counter>, world: &World<Counter>) -> usize {
        let mut count = 0;
        sim.successors(world, |_| count += 1);
        count
    }

    #[test]
    fn a_slot_learns_the_inputs_it_ignores_and_keeps_taking_the_others() {
        let model = counter([Input::Bump, Input::Idle]);
        let sim = Simulator::new(&model).unwrap();
        let mut start = None;
        sim.initial_worlds(|_, world, _| start = Some(world));
        let start = start.unwrap();
        // The first expansion runs the handlers; the second recalls them and learns.
        assert_eq!(successor_count(&sim, &start), 1);
        assert_eq!(successor_count(&sim, &start), 1);
        assert_eq!(start.nodes[0].idle.inputs.load(Relaxed), 0b10, "input 1 (Idle) is idle");
        assert_eq!(successor_count(&sim, &start), 1, "Bump is still taken");
    }

    #[test]
    fn another_model_numbering_the_inputs_otherwise_ignores_the_facts() {
        let model = counter([Input::Bump, Input::Idle]);
        let reordered = counter([Input::Idle, Input::Bump]);
        let sim = Simulator::new(&model).unwrap();
        let mut start = None;
        sim.initial_worlds(|_, world, _| start = Some(world));
        let start = start.unwrap();
        successor_count(&sim, &start);
        successor_count(&sim, &start);
        assert_ne!(start.nodes[0].idle.inputs.load(Relaxed), 0, "the slot learned a fact");
        // Under `reordered`, input 1 is Bump: the slot's facts about input 1 are not its own.
        let other = Simulator::new(&reordered).unwrap();
        assert_eq!(successor_count(&other, &start), 1);
        assert_eq!(successor_count(&other, &start), 1);
    }
}
