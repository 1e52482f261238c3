//! Idle events: the events a node slot is known to ignore, remembered in the slot itself, so
//! that a search skips them with a load or two where it would otherwise look them up in the
//! [`crate::step_memo`].
//!
//! Most of a world's enabled events change nothing: in two-phase commit with six resource
//! managers, a world has about 14 spontaneous inputs and 9 deliveries, and 5 of them are
//! successors. The step memo knows the rest are no-ops, but asking it means building the step's
//! key and probing a table for every one of them, in every world, and on a large search the
//! probed entry is often out of the cache. A slot is shared (`Arc`) by every world that holds it,
//! so what one world learned about it serves them all.
//!
//! Facts are kept by the event's part of the memo key ([`EventKey`]): one bit per spontaneous
//! input and per armed timer (by index), one bit per numbered message (a grow-only model's
//! messages, [`crate::message_numbers`]), and a small table of other delivered messages (by
//! hash). The bits let the step loop skip a world's known inputs and deliveries together: the
//! union of its slots' bits says which, since a slot learns facts only about its own node's
//! events ([`IdleFacts`]). A
//! delivery is a no-op only in a network that does not consume it (grow-only), where a
//! message stays deliverable after its receipt: a TM that recorded an RM's `Prepared` meets it
//! again in every later world. In any network, a delivery the handler declared not enabled
//! leaves its message waiting, to be met again (Stateright's actor Paxos declares most of its
//! ignored messages so). A fact is recorded only where the memo recalled the event as a no-op or as not enabled,
//! so it holds the memo's facts and makes its assumptions (a handler is a deterministic
//! function of the slot and the event). Input and timer indices and the meaning of a message
//! hold only under one model, so the facts belong to the first simulator that records one, and
//! any other simulator ignores them.
//!
//! The message table is direct-mapped with one neighbour: a message whose two entries are taken
//! is not recorded, and is looked up in the memo as before. Every entry is written once, with
//! the whole 62-bit key, so a reader sees either nothing or a true fact.

use crate::message_numbers::NumberSet;
use crate::step_memo::EventKey;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The idle events of one slot, under one simulator.
#[derive(Debug, Default)]
pub(crate) struct IdleEvents {
    /// The simulator the facts hold for; 0 (no simulator) until one records a fact, then fixed.
    simulator: AtomicU64,
    /// Bit `i`: spontaneous input `i` changes nothing.
    inputs: AtomicU64,
    /// Bit `t`: firing the slot's `t`-th timer changes nothing.
    timers: AtomicU64,
    /// Bit `k` (of a [`NumberSet`]): delivering the message numbered `k` changes nothing.
    numbered: [AtomicU64; 2],
    /// Delivered messages without a number that change nothing.
    messages: IdleMessages,
}

/// What a world's slots know to change nothing, together: the union of their facts. A slot
/// learns facts only about its own node's events (an input is the acting node's, a message is
/// addressed to it), and stays at its node's position, so the union needs no mask per node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct IdleFacts {
    /// Bit `i`: spontaneous input `i` (of the first 64).
    pub(crate) inputs: u64,
    /// The numbered messages.
    pub(crate) messages: NumberSet,
}

/// Message keys (the envelope hash's low 62 bits), each in the entry its low bits pick or the
/// next one; 0 marks an empty entry. Not aligned to a cache line: that alignment would pass to
/// the slot, and every slot allocation would take the allocator's slower aligned path (3.6% of
/// a local model checking run, which allocates a slot per handler run).
#[derive(Debug, Default)]
struct IdleMessages([AtomicU64; IdleMessages::LEN]);

impl IdleMessages {
    const LEN: usize = 8;

    #[inline]
    fn entries(&self, key: u64) -> [&AtomicU64; 2] {
        let at = key as usize % Self::LEN;
        [&self.0[at], &self.0[(at + 1) % Self::LEN]]
    }

    /// Whether `key` is recorded; never for 0, which only marks empty entries.
    #[inline]
    fn holds(&self, key: u64) -> bool {
        key != 0 && self.entries(key).iter().any(|entry| entry.load(Relaxed) == key)
    }

    /// Records `key` in the first of its entries that is empty; if both are taken, not at all.
    fn record(&self, key: u64) {
        if key == 0 || self.holds(key) {
            return;
        }
        for entry in self.entries(key) {
            match entry.compare_exchange(0, key, Relaxed, Relaxed) {
                Ok(_) => return,
                Err(held) if held == key => return,
                Err(_) => {}
            }
        }
    }

    fn copy(&self) -> Self {
        IdleMessages(std::array::from_fn(|i| AtomicU64::new(self.0[i].load(Relaxed))))
    }
}

impl IdleEvents {
    /// Whether `event` is known to change nothing at this slot under `simulator`.
    #[inline]
    pub(crate) fn knows(&self, simulator: u64, event: EventKey) -> bool {
        let known = match event {
            EventKey::Delivery { key, number } => match NumberSet::place(number) {
                Some((word, bit)) => self.numbered[word].load(Relaxed) & bit != 0,
                None => self.messages.holds(key),
            },
            EventKey::Input(i) => Self::has_bit(&self.inputs, i),
            EventKey::Timer(t) => Self::has_bit(&self.timers, t),
        };
        known && self.simulator.load(Relaxed) == simulator
    }

    /// The spontaneous inputs and numbered messages known to change nothing at this slot
    /// under `simulator` (the bits [`IdleEvents::knows`] tests one at a time).
    #[inline]
    pub(crate) fn facts(&self, simulator: u64) -> IdleFacts {
        if self.simulator.load(Relaxed) != simulator {
            return IdleFacts::default();
        }
        IdleFacts { inputs: self.inputs.load(Relaxed), messages: self.numbered_set() }
    }

    /// The numbered messages known to change nothing, whoever's facts they are.
    #[inline]
    fn numbered_set(&self) -> NumberSet {
        NumberSet(self.numbered.each_ref().map(|word| word.load(Relaxed)))
    }

    /// Records that `event` changes nothing at this slot under `simulator`, unless the slot's
    /// facts belong to another simulator.
    pub(crate) fn learn(&self, simulator: u64, event: EventKey) {
        // Read first: a failed compare-and-swap still takes the cache line from other threads.
        let owner = match self.simulator.load(Relaxed) {
            0 => match self.simulator.compare_exchange(0, simulator, Relaxed, Relaxed) {
                Ok(_) => simulator,
                Err(owner) => owner,
            },
            owner => owner,
        };
        if owner != simulator {
            return;
        }
        // Written once per fact: a slot shared across threads is then only read.
        let set = |bits: &AtomicU64, bit: u64| {
            if bits.load(Relaxed) & bit == 0 {
                bits.fetch_or(bit, Relaxed);
            }
        };
        let set_bit = |bits: &AtomicU64, index: u32| {
            if index < 64 {
                set(bits, 1 << index);
            }
        };
        match event {
            EventKey::Delivery { key, number } => match NumberSet::place(number) {
                Some((word, bit)) => set(&self.numbered[word], bit),
                None => self.messages.record(key),
            },
            EventKey::Input(i) => set_bit(&self.inputs, i),
            EventKey::Timer(t) => set_bit(&self.timers, t),
        }
    }

    /// A copy, for a slot copied to share no memory with the original.
    pub(crate) fn copy(&self) -> Self {
        IdleEvents {
            simulator: AtomicU64::new(self.simulator.load(Relaxed)),
            inputs: AtomicU64::new(self.inputs.load(Relaxed)),
            timers: AtomicU64::new(self.timers.load(Relaxed)),
            numbered: self.numbered.each_ref().map(|word| AtomicU64::new(word.load(Relaxed))),
            messages: self.messages.copy(),
        }
    }

    #[inline]
    fn has_bit(bits: &AtomicU64, index: u32) -> bool {
        index < 64 && bits.load(Relaxed) & 1 << index != 0
    }
}

#[cfg(test)]
mod tests {
    use super::IdleMessages;
    use crate::message_numbers::NumberSet;
    use crate::step_memo::EventKey;
    use crate::{
        Action, Budget, Driver, Faults, Model, NetworkKind, NodeId, Out, Protocol, Simulator, World,
    };
    use serde::{Deserialize, Serialize};
    use std::sync::atomic::Ordering::Relaxed;

    /// One counter that `Bump` raises to 2; `Idle` never changes it. Both come as inputs, and
    /// as the messages (`mail`) the node sends itself at the start.
    struct Counter {
        mail: Vec<Input>,
        /// Whether an `Idle` message is declared not enabled rather than ignored.
        disable_idle: bool,
    }

    #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
    enum Input {
        Bump,
        Idle,
    }

    fn bump(count: &mut u8, event: &Input) {
        if *event == Input::Bump && *count < 2 {
            *count += 1;
        }
    }

    impl Protocol for Counter {
        type State = u8;
        type Msg = Input;
        type Timer = ();
        type Input = Input;

        fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> u8 {
            for msg in &self.mail {
                out.send(me, msg.clone());
            }
            0
        }

        fn on_message(&self, _: NodeId, count: &mut u8, _: NodeId, msg: &Input, out: &mut Out<'_, Self>) {
            if self.disable_idle && *msg == Input::Idle {
                out.disable();
            }
            bump(count, msg);
        }

        fn on_input(&self, _: NodeId, count: &mut u8, input: &Input, _: &mut Out<'_, Self>) {
            bump(count, input);
        }
    }

    fn counter(inputs: [Input; 2]) -> Model<Counter> {
        let [first, second] = inputs;
        let driver = Driver::new().spontaneous(NodeId(0), first).spontaneous(NodeId(0), second);
        Model::new(Counter { mail: Vec::new(), disable_idle: false }).nodes(1).driver(driver)
    }

    fn start(sim: &Simulator<'_, Counter>) -> World<Counter> {
        let mut start = None;
        sim.initial_worlds(|_, world, _| start = Some(world));
        start.unwrap()
    }

    fn successor_count(sim: &Simulator<'_, Counter>, world: &World<Counter>) -> usize {
        let mut count = 0;
        sim.successors(world, |_| count += 1);
        count
    }

    /// The successors of `world` as (ordinal, action).
    fn successor_steps(sim: &Simulator<'_, Counter>, world: &World<Counter>) -> Vec<(u32, Action)> {
        let mut steps = Vec::new();
        sim.successors(world, |s| steps.push((s.ordinal, s.action)));
        steps
    }

    /// Each step's ordinal names the same action to [`Simulator::successor_step`], which traces
    /// use to replay a path.
    fn assert_steps_replay(sim: &Simulator<'_, Counter>, world: &World<Counter>, steps: &[(u32, Action)]) {
        for &(ordinal, action) in steps {
            assert_eq!(sim.successor_step(world, ordinal).map(|(a, _)| a), Some(action));
        }
    }

    #[test]
    fn a_slot_learns_the_inputs_it_ignores_and_keeps_taking_the_others() {
        let model = counter([Input::Bump, Input::Idle]);
        let sim = Simulator::new(&model).unwrap();
        let start = start(&sim);
        // The first expansion runs the handlers; the second recalls them and learns.
        assert_eq!(successor_count(&sim, &start), 1);
        assert_eq!(successor_count(&sim, &start), 1);
        assert_eq!(start.nodes[0].idle.inputs.load(Relaxed), 0b10, "input 1 (Idle) is idle");
        assert_eq!(successor_count(&sim, &start), 1, "Bump is still taken");
    }

    #[test]
    fn known_idle_inputs_are_skipped_in_their_places() {
        // Inputs 1 and 2 bump nodes 0 and 1; inputs 0 and 3 change nothing there. A reset
        // budget puts faults after the inputs, so known inputs sit before, between and after
        // taken actions.
        let driver = Driver::new()
            .spontaneous(NodeId(0), Input::Idle)
            .spontaneous(NodeId(0), Input::Bump)
            .spontaneous(NodeId(1), Input::Bump)
            .spontaneous(NodeId(1), Input::Idle);
        let counter = Counter { mail: Vec::new(), disable_idle: false };
        let faults = Faults::default().resets(Budget::at_most(1));
        let model = Model::new(counter).nodes(2).driver(driver).faults(faults);
        let sim = Simulator::new(&model).unwrap();
        let start = start(&sim);
        let steps = || successor_steps(&sim, &start);
        let ran = steps();
        let expected = [
            (1, Action::Spontaneous(1)),
            (2, Action::Spontaneous(2)),
            (4, Action::Reset(NodeId(0))),
            (5, Action::Reset(NodeId(1))),
        ];
        assert_eq!(ran, expected);
        assert_eq!(sim.idle_facts(&start).inputs, 0, "nothing is known before the memo recalls a step");
        assert_eq!(steps(), ran, "recalled");
        assert_eq!(start.nodes[0].idle.inputs.load(Relaxed), 0b0001);
        assert_eq!(start.nodes[1].idle.inputs.load(Relaxed), 0b1000);
        assert_eq!(sim.idle_facts(&start).inputs, 0b1001, "each node's facts, under its own inputs");
        assert_eq!(steps(), ran, "skipped without a lookup, under the same ordinals");
        assert_steps_replay(&sim, &start, &ran);
    }

    #[test]
    fn inputs_past_the_64th_are_stepped_under_their_ordinals() {
        // 66 inputs: only 64 and 65 bump. The first 64 fit the slot's bit set and are skipped
        // once known; the last two are always looked up.
        let driver = (0..66).fold(Driver::new(), |driver, i| {
            driver.spontaneous(NodeId(0), if i < 64 { Input::Idle } else { Input::Bump })
        });
        let model = Model::new(Counter { mail: Vec::new(), disable_idle: false }).nodes(1).driver(driver);
        let sim = Simulator::new(&model).unwrap();
        let start = start(&sim);
        let steps = || successor_steps(&sim, &start);
        let expected = vec![(64, Action::Spontaneous(64)), (65, Action::Spontaneous(65))];
        assert_eq!(steps(), expected);
        assert_eq!(steps(), expected, "recalled");
        assert_eq!(sim.idle_facts(&start).inputs, u64::MAX, "every input of the bit set is known idle");
        assert_eq!(steps(), expected, "skipped without a lookup, under the same ordinals");
        assert_steps_replay(&sim, &start, &expected);
    }

    #[test]
    fn another_model_numbering_the_inputs_otherwise_ignores_the_facts() {
        let model = counter([Input::Bump, Input::Idle]);
        let reordered = counter([Input::Idle, Input::Bump]);
        let sim = Simulator::new(&model).unwrap();
        let start = start(&sim);
        successor_count(&sim, &start);
        successor_count(&sim, &start);
        assert_ne!(start.nodes[0].idle.inputs.load(Relaxed), 0, "the slot learned a fact");
        // Under `reordered`, input 1 is Bump: the slot's facts about input 1 are not its own.
        let other = Simulator::new(&reordered).unwrap();
        assert_eq!(successor_count(&other, &start), 1);
        assert_eq!(successor_count(&other, &start), 1);
    }

    /// What the mail model's slot learned: the message keys of its table, and its numbered
    /// messages.
    struct Learned {
        keys: Vec<u64>,
        numbers: NumberSet,
    }

    /// The successors of the mail model's start, counted on three expansions (the first runs
    /// the handlers, the later ones recall them), what its slot then knows, and the `Idle`
    /// message's event.
    fn mail_expansions(network: NetworkKind, disable_idle: bool) -> ([usize; 3], Learned, EventKey) {
        let mail = vec![Input::Bump, Input::Idle];
        let model = Model::new(Counter { mail, disable_idle }).nodes(1).network(network);
        let sim = Simulator::new(&model).unwrap();
        let start = start(&sim);
        let counts = [(); 3].map(|()| successor_count(&sim, &start));
        let idle = &start.nodes[0].idle;
        let entries = idle.messages.0.iter().map(|entry| entry.load(Relaxed));
        let learned =
            Learned { keys: entries.filter(|&key| key != 0).collect(), numbers: idle.numbered_set() };
        let message = start.network.messages().iter().find(|envelope| envelope.msg == Input::Idle).unwrap();
        (counts, learned, EventKey::delivery(message))
    }

    #[test]
    fn a_slot_learns_the_messages_of_a_grow_only_network_it_ignores() {
        let (counts, learned, idle) = mail_expansions(NetworkKind::GrowOnly, false);
        assert_eq!(counts, [1, 1, 1], "Bump is still delivered");
        // A grow-only model numbers its messages: the fact is the number's bit.
        let EventKey::Delivery { number, .. } = idle else { unreachable!("a delivery") };
        let mut expected = NumberSet::default();
        assert!(expected.insert(number), "the Idle message has a number");
        assert_eq!(learned.numbers, expected, "only the Idle message is idle");
        assert!(learned.keys.is_empty(), "a numbered message takes no entry of the table");
    }

    /// Two nodes, each mailing itself `Bump` and `Idle` over a grow-only set: once the slots
    /// know their `Idle` messages, the step loop passes over those deliveries by their numbers
    /// and still gives each successor the ordinal that names it.
    #[test]
    fn known_idle_deliveries_are_skipped_in_their_places() {
        let mail = vec![Input::Bump, Input::Idle];
        let counter = Counter { mail, disable_idle: false };
        let model = Model::new(counter).nodes(2).network(NetworkKind::GrowOnly);
        let sim = Simulator::new(&model).unwrap();
        let start = start(&sim);
        let messages = start.network.messages();
        let position = |to: usize, msg: Input| {
            messages.iter().position(|e| e.to == NodeId::new(to) && e.msg == msg).expect("mailed") as u32
        };
        let expected = vec![
            (position(0, Input::Bump), Action::Deliver(position(0, Input::Bump))),
            (position(1, Input::Bump), Action::Deliver(position(1, Input::Bump))),
        ];
        let idle = [position(0, Input::Idle), position(1, Input::Idle)];
        assert!(idle.iter().any(|&i| i < expected[1].0), "an idle delivery comes before a taken one");
        let steps = || successor_steps(&sim, &start);
        assert_eq!(steps(), expected);
        assert_eq!(sim.idle_facts(&start).messages, NumberSet::default(), "nothing known before a recall");
        assert_eq!(steps(), expected, "recalled");
        let mut known = NumberSet::default();
        for i in idle {
            assert!(known.insert(messages[i as usize].number), "grow-only messages are numbered");
        }
        assert_eq!(sim.idle_facts(&start).messages, known, "each node's Idle, from its own slot");
        assert_eq!(steps(), expected, "skipped by number, under the same ordinals");
        assert_steps_replay(&sim, &start, &expected);
    }

    #[test]
    fn a_consumed_message_is_a_step_unless_it_is_not_enabled() {
        // Delivering Idle consumes it: a successor, and no fact.
        let (counts, learned, _) = mail_expansions(NetworkKind::Unordered, false);
        assert_eq!(counts, [2, 2, 2]);
        assert!(learned.keys.is_empty(), "a consumed message is never idle");
        // Declared not enabled, it stays in the network and is idle in any network.
        let (counts, learned, idle) = mail_expansions(NetworkKind::Unordered, true);
        assert_eq!(counts, [1, 1, 1]);
        assert_eq!(learned.keys, [idle.bits()], "an unnumbered message, in the table");
        assert_eq!(learned.numbers, NumberSet::default());
    }

    #[test]
    fn a_message_whose_entries_are_taken_is_not_recorded() {
        let table = IdleMessages::default();
        let len = IdleMessages::LEN as u64;
        let [first, second, third] = [len, 2 * len, 3 * len]; // all pick entry 0
        for key in [first, second, third] {
            table.record(key);
        }
        assert!(table.holds(first) && table.holds(second));
        assert!(!table.holds(third), "both of its entries were taken");
        table.record(0);
        assert!(!table.holds(0), "0 marks empty entries and is never a fact");
        assert!(!IdleMessages::default().holds(0));
    }
}
