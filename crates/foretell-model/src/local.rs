//! Node-local steps: one node's handler run on its local state alone, with no world around it —
//! the handlers `H'_M` and `H'_A` of local model checking (LMC, "Local Model Checking of
//! Distributed Systems", section 4, Figure 8), which need only the node's state and, for a
//! message, the message.
//!
//! A [`LocalState`] is a node's slot (protocol state, timers, clock) and the node's own one-shot
//! driver inputs not yet given. [`Simulator::local_step`] runs the same handler code the global
//! engines run, through the same [`Out`](crate::Out), so a protocol is written once for both; it
//! returns the next local state (hashed, and made a shared [`LocalState`] only if the caller
//! keeps it) and the messages sent. [`Simulator::join`] builds a system state
//! (a world with an empty network) from one local state per node, to check invariants on;
//! [`crate::SystemState`] is the same world re-pointed in place at combination after
//! combination.
//!
//! What a local step cannot see: the network. A handler that reads its mailbox
//! ([`Out::mailbox`](crate::Out::mailbox)) sees it empty (and its outcome says it looked), and
//! faults that act on the network (resets on FIFO channels, drops, duplicates, socket errors)
//! have no local form.

use crate::network::{Network, NetworkView};
use crate::simulator::{Call, EventOf, Simulator, StepViolation};
use crate::world::NodeSlot;
use crate::{catch_panic, Chooser, Envelope, Event, FingerprintHasher, NodeId, Protocol, SystemState, World};
use std::sync::Arc;

/// One node's local state, apart from any world.
pub struct LocalState<P: Protocol> {
    slot: Arc<NodeSlot<P>>,
    /// Bit `i` is set while one-shot input `i`, which belongs to this node, has not been given.
    pending: u64,
    hash: u128,
}

impl<P: Protocol> Clone for LocalState<P> {
    fn clone(&self) -> Self {
        LocalState { slot: Arc::clone(&self.slot), pending: self.pending, hash: self.hash }
    }
}

impl<P: Protocol> std::fmt::Debug for LocalState<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalState").field("state", &self.slot.state).field("pending", &self.pending).finish()
    }
}

impl<P: Protocol> LocalState<P> {
    fn new(slot: Arc<NodeSlot<P>>, pending: u64) -> Self {
        let hash = local_hash(&slot, pending);
        LocalState { slot, pending, hash }
    }

    /// The protocol state.
    pub fn state(&self) -> &P::State {
        &self.slot.state
    }

    /// The armed timers, in order.
    pub fn timers(&self) -> &[P::Timer] {
        &self.slot.timers
    }

    /// The stable hash of everything a handler can see of the node: state, timers, clock and
    /// pending inputs.
    pub fn hash(&self) -> u128 {
        self.hash
    }

    /// The node's slot, which a system state of this local state holds.
    pub(crate) fn slot(&self) -> &Arc<NodeSlot<P>> {
        &self.slot
    }

    /// The node's one-shot inputs not yet given, as bits of the driver's list.
    pub(crate) fn pending(&self) -> u64 {
        self.pending
    }
}

/// The hash of a local state of `slot` with `pending` inputs.
fn local_hash<P: Protocol>(slot: &NodeSlot<P>, pending: u64) -> u128 {
    FingerprintHasher::mix(pending, slot.hash)
}

/// An event a node handles on its own.
#[derive(Clone, Copy, Debug)]
pub enum LocalEvent<'a, M> {
    /// A message to the node.
    Deliver(&'a Envelope<M>),
    /// The node's armed timer at this position.
    Timer(u32),
    /// The driver's one-shot input with this index.
    Input(u32),
    /// The driver's spontaneous input with this index.
    Spontaneous(u32),
}

/// A local event without the message it delivers: what local exploration enumerates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LocalAction {
    /// The node's armed timer at this position.
    Timer(u32),
    /// The driver's one-shot input with this index.
    Input(u32),
    /// The driver's spontaneous input with this index.
    Spontaneous(u32),
}

impl LocalAction {
    /// The local event of this action.
    pub fn event<M>(self) -> LocalEvent<'static, M> {
        match self {
            LocalAction::Timer(t) => LocalEvent::Timer(t),
            LocalAction::Input(i) => LocalEvent::Input(i),
            LocalAction::Spontaneous(i) => LocalEvent::Spontaneous(i),
        }
    }
}

/// The local state a step led to, hashed but not yet shared: a [`LocalState`] is made of it
/// ([`NextLocal::into_local`]) only when it is kept, so a step that only finds a known state
/// again allocates nothing for it.
pub struct NextLocal<P: Protocol> {
    /// `None` when the step left the state as it was.
    changed: Option<(NodeSlot<P>, u64)>,
    hash: u128,
}

impl<P: Protocol> NextLocal<P> {
    /// The hash the local state will have ([`LocalState::hash`]).
    pub fn hash(&self) -> u128 {
        self.hash
    }

    /// The local state, given the one the step ran on (`source`, kept when nothing changed).
    pub fn into_local(self, source: &LocalState<P>) -> LocalState<P> {
        match self.changed {
            Some((slot, pending)) => LocalState { slot: Arc::new(slot), pending, hash: self.hash },
            None => source.clone(),
        }
    }
}

/// What a local step did.
pub struct LocalOutcome<P: Protocol> {
    /// The next local state (the same as before when nothing changed).
    pub next: NextLocal<P>,
    /// The messages the handler sent, in order.
    pub sent: Vec<Envelope<P::Msg>>,
    /// The choice values the handler was given.
    pub choices: Vec<usize>,
    /// The handler's violation: a panic, a failed `require`, a send to no node.
    pub violation: Option<StepViolation>,
    /// Whether the handler looked at the network (its mailbox, or a queue's length), which a
    /// local step shows empty: what it did may then be no step of any real run.
    pub read_network: bool,
}

impl<P: Protocol> Simulator<'_, P> {
    /// The local state of every node of `world`, in node order.
    pub fn local_states(&self, world: &World<P>) -> Vec<LocalState<P>> {
        let driver = self.model().input_driver();
        NodeId::all(world.nodes.len())
            .map(|node| {
                LocalState::new(
                    Arc::clone(&world.nodes[node.index()]),
                    world.pending & driver.inputs_of(node),
                )
            })
            .collect()
    }

    /// The local events (timers and inputs) enabled at `node` in `local`, in canonical order.
    pub fn local_actions(&self, node: NodeId, local: &LocalState<P>, into: &mut Vec<LocalAction>) {
        into.clear();
        into.extend((0..local.slot.timers.len() as u32).map(LocalAction::Timer));
        let driver = self.model().input_driver();
        let mine = |&(i, (n, _)): &(usize, &(NodeId, P::Input))| {
            *n == node && local.pending & (1 << i) != 0 && driver.may_give(i, local.pending)
        };
        into.extend(driver.once.iter().enumerate().filter(mine).map(|(i, _)| LocalAction::Input(i as u32)));
        let spontaneous = driver.spontaneous.iter().enumerate().filter(|(_, (n, _))| *n == node);
        into.extend(spontaneous.map(|(i, _)| LocalAction::Spontaneous(i as u32)));
    }

    /// The global event that `event` at `node` in `local` is, for traces and replay.
    pub fn local_event(
        &self,
        node: NodeId,
        local: &LocalState<P>,
        event: LocalEvent<'_, P::Msg>,
    ) -> EventOf<P> {
        let driver = self.model().input_driver();
        match event {
            LocalEvent::Deliver(e) => Event::Deliver { from: e.from, to: e.to, msg: e.msg.clone() },
            LocalEvent::Timer(t) => Event::Timer { node, timer: local.slot.timers[t as usize].clone() },
            LocalEvent::Input(i) => Event::Input { node, input: driver.once[i as usize].1.clone() },
            LocalEvent::Spontaneous(i) => {
                Event::Spontaneous { node, input: driver.spontaneous[i as usize].1.clone() }
            }
        }
    }

    /// Runs `event` at `node` on `local` alone, asking `chooser` for the handler's choices.
    ///
    /// # Panics
    /// If `event` does not belong to `node`: a message to another node, a timer the node has not
    /// armed, an input of another node.
    pub fn local_step(
        &self,
        node: NodeId,
        local: &LocalState<P>,
        event: LocalEvent<'_, P::Msg>,
        chooser: &mut dyn Chooser,
    ) -> LocalOutcome<P> {
        let driver = self.model().input_driver();
        let slot = &local.slot;
        let mut pending = local.pending;
        let mut timers = slot.timers.clone();
        let call = match event {
            LocalEvent::Deliver(envelope) => {
                assert_eq!(envelope.to, node, "a message is delivered to its destination");
                Call::<P>::Message(envelope)
            }
            LocalEvent::Timer(t) => Call::Timer(timers.remove(t as usize)),
            LocalEvent::Input(i) => {
                let (owner, input) = &driver.once[i as usize];
                assert_eq!(*owner, node, "an input is given to its node");
                pending &= !(1 << i);
                Call::Input(input)
            }
            LocalEvent::Spontaneous(i) => Call::Input(&driver.spontaneous[i as usize].1),
        };
        let protocol = self.model().protocol();
        let mut state = slot.state.clone();
        let mut clock = slot.clock;
        let nothing = Network::new(self.model().network_kind());
        let mut out =
            self.out(node, &mut timers, &mut clock, chooser, false, NetworkView::new(&nothing, None));
        let result = catch_panic(|| match call {
            Call::Message(envelope) => {
                protocol.on_message(node, &mut state, envelope.from, &envelope.msg, &mut out)
            }
            Call::Timer(timer) => protocol.on_timer(node, &mut state, &timer, &mut out),
            Call::Input(input) => protocol.on_input(node, &mut state, input, &mut out),
            Call::TransportError(_) | Call::Restart => unreachable!("no local event makes these calls"),
        });
        let (sends, violation) = self.finish_handler(node, &mut out, &result, &mut Vec::new());
        let choices = std::mem::take(&mut out.choices);
        let disabled = out.disabled && result.is_ok();
        let read_network = out.read_network.get();
        drop(out);
        let unchanged = NextLocal { changed: None, hash: local.hash };
        if disabled {
            return LocalOutcome { next: unchanged, sent: Vec::new(), choices, violation, read_network };
        }
        let sent = sends.into_iter().map(|(to, msg)| Envelope::new(node, to, msg)).collect();
        let changed =
            pending != local.pending || clock != slot.clock || timers != slot.timers || state != slot.state;
        let next = if changed {
            let slot = NodeSlot::new(node.index(), state, timers, clock);
            NextLocal { hash: local_hash(&slot, pending), changed: Some((slot, pending)) }
        } else {
            unchanged
        };
        LocalOutcome { next, sent, choices, violation, read_network }
    }

    /// The system state of `locals` (one per node, in node order): their slots, an empty network
    /// and the inputs none of them has been given, as a world of its own (the world of a
    /// [`SystemState`], counted).
    ///
    /// # Panics
    /// If `locals` does not hold one state per node.
    pub fn join<'l>(&self, locals: impl ExactSizeIterator<Item = &'l LocalState<P>>) -> World<P>
    where
        P: 'l,
    {
        SystemState::new(self, locals).world().clone()
    }
}
