//! The simulator: enabled events of a world, and deterministic steps.
//!
//! This is MaceMC's simulator loop (NSDI'07, section 3.1, Algorithm 1) turned inside out: the
//! simulator only answers "which events are enabled here" and "what world does this event, with
//! these choice values, lead to"; the engine decides which event runs next. A step runs the
//! handler on a copy of the one node it touches, catches a panic as a violation, applies the
//! sends to the network and reseals the fingerprint — or, when the same node slot met the same
//! event before, recalls what the handler did from the [`crate::step_memo`].
//!
//! Choices made inside handlers ([`crate::Out::choose`]) are enumerated by a [`ChoiceOdometer`]:
//! the handler is re-run with each choice vector in lexicographic order (VeriSoft-style
//! re-execution within one step), so one action can have several successors.

use crate::delta::{Edit, NetworkPart, NOT_ADDED};
use crate::idle_events::IdleFacts;
use crate::network::{Cut, Network, NetworkView};
use crate::out::Chooser;
use crate::scenario::Resolved;
use crate::step_memo::{self, EventKey, Outcome, Ran, StepMemo};
use crate::world::{rest_term, FaultsUsed, NodeSlot};
use crate::{
    catch_panic, Action, Delta, Envelope, Event, Fingerprint, FingerprintHasher, Model, ModelError,
    NetworkKind, NodeId, Out, PropertyKind, Protocol, World,
};
use serde::{Deserialize, Serialize};
use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The event type of protocol `P`.
pub type EventOf<P> = Event<<P as Protocol>::Msg, <P as Protocol>::Timer, <P as Protocol>::Input>;

/// How a step or a world violates a property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ViolationKind {
    /// An `always` property is false in the world.
    Invariant,
    /// A handler's local assertion ([`crate::Out::require`]) failed.
    Assertion,
    /// A handler panicked.
    Panic,
    /// The path reached a world from which no live world is reachable (a liveness engine's
    /// finding; replay checks the path, not the verdict).
    Liveness,
    /// A handler did not return (a liveness engine's finding: the trace ends before the step
    /// that hung, which is named in the verdict).
    Divergence,
    /// The path a search found did not re-execute as it was explored: some handler (or `init`)
    /// is not a function of its node's state, its event and its choices — it read a clock, a
    /// random generator, a `HashMap`'s iteration order or a global. The trace ends where the
    /// re-execution parted from the search.
    Nondeterminism,
}

impl fmt::Display for ViolationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ViolationKind::Invariant => "invariant",
            ViolationKind::Assertion => "assertion",
            ViolationKind::Panic => "panic",
            ViolationKind::Liveness => "liveness",
            ViolationKind::Divergence => "divergence",
            ViolationKind::Nondeterminism => "nondeterminism",
        })
    }
}

/// A property violated by a step or a world.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepViolation {
    /// How it was violated.
    pub kind: ViolationKind,
    /// The property: an `always` property's name, a `require`'s description, or `"panic"`.
    pub property: String,
    /// A human-readable detail (the panic message, for one).
    pub message: String,
}

/// What a recorded step did, for traces.
#[derive(Debug)]
pub struct StepRecord<P: Protocol> {
    /// The event.
    pub event: EventOf<P>,
    /// The messages the handler sent.
    pub sent: Vec<(NodeId, P::Msg)>,
    /// The handler's log lines.
    pub log: Vec<String>,
}

/// How much of a step is recorded.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Recording {
    /// Nothing: the search's case.
    Off,
    /// The event and the messages sent.
    Events,
    /// The event, the messages sent and the log lines: a trace's step.
    Full,
}

/// The result of one step.
#[derive(Debug)]
pub struct StepOutcome<P: Protocol> {
    /// The next world.
    pub world: World<P>,
    /// The choice values the handler was given.
    pub choices: Vec<usize>,
    /// The violation the handler caused, if any (invariants are checked separately).
    pub violation: Option<StepViolation>,
    /// What the step did, when recording was asked for.
    pub record: Option<StepRecord<P>>,
}

/// What a step changes in its parent world: applied to the parent, it gives the next world.
/// Small and unboxed: a search makes one for every successor, seen or new, and builds the next
/// world from it only for the new ones.
struct Change<P: Protocol> {
    fingerprint: Fingerprint,
    /// The acting node's handler run; `None` for a fault.
    step: Option<HandlerStep<P>>,
    /// What the event itself does to the network (a delivery that consumes its message, say).
    network: NetworkEdit<P::Msg>,
    /// The driver's pending inputs and the faults used, where the step changes them (a one-shot
    /// input, a fault): rare, so boxed.
    rest: Option<Box<(u64, FaultsUsed)>>,
}

/// The handler run of a [`Change`]. Its flag sits in the padding beside the node's index: as a
/// field of `Change` of its own, the byte left seven bytes of padding that LLVM copied with two
/// overlapping 4-byte moves each time a change moved, and the second load of each such copy
/// waited on a store it could not forward from (`perf annotate`, 2PC N = 8 DFS).
struct HandlerStep<P: Protocol> {
    /// The acting node's index.
    node: u32,
    /// Whether the handler's sends change the network (a grow-only one may hold them all).
    lands: bool,
    /// What the handler did, shared with the step memo (a recalled step allocates nothing of
    /// its own). The memo is this thread's, so the count is not atomic: most successors of a
    /// search are seen and dropped, and a locked instruction to raise the count and another to
    /// drop it cost each of them more than the rest of its change (2PC N = 8 DFS, `perf`).
    ran: Rc<Ran<P>>,
}

/// What the event itself does to the network, before the handler's sends.
enum NetworkEdit<M> {
    /// Nothing.
    None,
    /// It consumes (delivers or loses) the message at this index, which stays in the parent's
    /// network until the next world is built (see [`NetworkView`]).
    Consume(u32),
    /// It cuts queues out of the network (a reset, a socket error, a transport error; FIFO
    /// channels), which stay in the parent's network until the next world is built.
    Cut(Cut),
    /// It leaves this network (a duplicate).
    Rebuilt(Box<Network<M>>),
}

impl<M: Serialize> NetworkEdit<M> {
    /// The network the event leaves, which the handler sees and its sends go to: `parent`
    /// edited.
    fn view<'n>(&'n self, parent: &'n Network<M>) -> NetworkView<'n, M> {
        match self {
            NetworkEdit::None => NetworkView::new(parent, None),
            NetworkEdit::Consume(index) => NetworkView::new(parent, Some(*index as usize)),
            NetworkEdit::Cut(cut) => NetworkView::cut(parent, *cut),
            NetworkEdit::Rebuilt(network) => NetworkView::new(network, None),
        }
    }

    fn is_none(&self) -> bool {
        matches!(self, NetworkEdit::None)
    }
}

impl<P: Protocol> Change<P> {
    fn apply(mut self, parent: &World<P>) -> World<P> {
        let mut nodes = parent.nodes.clone();
        if let Some((node, slot)) = self.next_slot() {
            nodes[node as usize] = Arc::clone(slot);
        }
        let network = match self.next_network(&parent.network) {
            Some(network) => Arc::new(network),
            None => Arc::clone(&parent.network),
        };
        let (pending, faults_used) = self.rest.map_or((parent.pending, parent.faults_used), |rest| *rest);
        let world = World { nodes, network, pending, faults_used, fingerprint: self.fingerprint };
        debug_assert_eq!(world.fingerprint, world.clone().sealed().fingerprint, "incremental fingerprint");
        world
    }

    /// The change as the parts of `parent` it replaces.
    fn delta(mut self, parent: &World<P>) -> Delta<P> {
        let network = match self.in_place(&parent.network) {
            Some(part) => part,
            None => self
                .next_network(&parent.network)
                .map_or(NetworkPart::Unchanged, |network| NetworkPart::Whole(Arc::new(network))),
        };
        let node = self.next_slot().map(|(node, slot)| (node, Arc::clone(slot)));
        Delta::changed(self.fingerprint, node, network, self.rest)
    }

    /// The step's changes to `parent` as a delta makes them in place rather than in a copy:
    /// where the step only consumes a message or cuts queues out ([`Cut`]), and posts its
    /// handler's sends (a grow-only network consumes nothing), and the network holds at least
    /// eight messages per change, plus eight. A copy counts every message held up once and, when dropped, down once, and
    /// keeps the whole network for as long as the delta waits; an edit in place makes and
    /// undoes each change twice over (to examine the new world, then to walk through it), each
    /// time with a search and a shift of the list (and, grow-only, a count), and checks the
    /// network is not shared. Below that size neither way measured faster on grow-only
    /// networks (two-phase commit, whose networks hold at most two messages per resource
    /// manager); Paxos.tla, with dozens, ran 14% faster in place (docs/BENCHMARKS.md,
    /// "Grow-only sends added in place", and "Consuming networks edited in place").
    fn in_place(&self, parent: &Network<P::Msg>) -> Option<NetworkPart<P>> {
        // Most networks are too small for any change: asked first, as every new world asks.
        if parent.messages().len() < 16 {
            return None;
        }
        let ran = match &self.step {
            Some(HandlerStep { lands: true, ran, .. }) => Some(ran),
            _ => None,
        };
        let sends = ran.map_or(0, |ran| ran.sends.len());
        let (consumed, cut) = match self.network {
            NetworkEdit::None => (None, None),
            NetworkEdit::Consume(index) => (Some(index), None),
            NetworkEdit::Cut(cut) => (None, Some(cut)),
            NetworkEdit::Rebuilt(_) => return None,
        };
        let changes = sends + usize::from(consumed.is_some() || cut.is_some());
        if changes == 0 || sends >= 64 || parent.messages().len() < 8 * (changes + 1) {
            return None;
        }
        let ran = ran.map(Rc::clone);
        Some(match parent.kind() {
            NetworkKind::GrowOnly if consumed.is_none() => NetworkPart::Sends { ran: ran?, added: NOT_ADDED },
            NetworkKind::GrowOnly => return None,
            _ => {
                // The network's hash after the step, worked out again as the fingerprint was:
                // once per delta, where keeping it through each edit would hash the changed
                // queue at every swap.
                let view = self.network.view(parent);
                let sends = ran.as_ref().map_or(&[][..], |ran| &ran.sends[..]);
                let hash = view.hash().wrapping_add(view.sends_term(sends).0);
                NetworkPart::Edit(Box::new(Edit::new(consumed, cut, ran, hash)))
            }
        })
    }

    /// The acting node's index and its next slot, where the handler changed it.
    fn next_slot(&self) -> Option<(u32, &Arc<NodeSlot<P>>)> {
        let step = self.step.as_ref()?;
        Some((step.node, step.ran.slot.as_ref()?))
    }

    /// The network after the step, if it changes `parent`'s: the event's own edit, then the
    /// handler's sends. Takes the edit out of the change.
    fn next_network(&mut self, parent: &Network<P::Msg>) -> Option<Network<P::Msg>> {
        let sends = match &self.step {
            Some(HandlerStep { lands: true, ran, .. }) => ran.sends.len(),
            _ => 0,
        };
        let edited = match std::mem::replace(&mut self.network, NetworkEdit::None) {
            NetworkEdit::None => None,
            NetworkEdit::Consume(index) => {
                let mut network = parent.clone_with_room(sends);
                network.deliver(index as usize);
                Some(network)
            }
            NetworkEdit::Cut(cut) => {
                let mut network = parent.clone_with_room(sends);
                network.cut(cut);
                Some(network)
            }
            NetworkEdit::Rebuilt(network) => Some(*network),
        };
        match (edited, &self.step) {
            (edited, Some(HandlerStep { lands: true, ran, .. })) => {
                let mut network = edited.unwrap_or_else(|| parent.clone_with_room(sends));
                network.send_all(&ran.sends);
                Some(network)
            }
            (edited, _) => edited,
        }
    }
}

/// A step's effect, computed without building the next world.
struct Effect<P: Protocol> {
    /// `None` when the world does not change: the handler changed nothing and sent nothing,
    /// or it declared the event not enabled ([`Out::disable`]).
    change: Option<Change<P>>,
    choices: Vec<usize>,
    // Boxed: rare or recording-only, and an effect is moved on every step.
    violation: Option<Box<StepViolation>>,
    record: Option<Box<StepRecord<P>>>,
}

impl<P: Protocol> Effect<P> {
    /// The effect of a step that changes nothing and violates nothing.
    fn unchanged() -> Self {
        Effect { change: None, choices: Vec::new(), violation: None, record: None }
    }
}

/// One successor of a world: an action with one vector of choice values, whose fingerprint is
/// known before the world is built ([`Successor::into_world`]), so that an engine builds only
/// the worlds it has not seen.
pub struct Successor<'w, P: Protocol> {
    /// Its position in the world's canonical step order: with the world, it names the step
    /// (engines store it as the parent pointer's label).
    pub ordinal: u32,
    /// The action.
    pub action: Action,
    /// The choice values.
    pub choices: Vec<usize>,
    /// The violation the handler caused, if any.
    pub violation: Option<Box<StepViolation>>,
    parent: &'w World<P>,
    change: Option<Change<P>>,
}

impl<P: Protocol> Successor<'_, P> {
    /// The next world's fingerprint.
    pub fn fingerprint(&self) -> Fingerprint {
        self.change.as_ref().map_or(self.parent.fingerprint, |c| c.fingerprint)
    }

    /// Builds the next world.
    pub fn into_world(self) -> World<P> {
        let parent = self.parent;
        self.unbuilt().build(parent)
    }

    /// The next world, not built yet and no longer borrowing its parent: what an engine keeps
    /// while it looks the fingerprint up, in a buffer that serves world after world.
    pub fn unbuilt(self) -> Unbuilt<P> {
        Unbuilt { change: self.change }
    }
}

/// A successor's next world, not built yet: [`Successor::unbuilt`]. Like the successor, it
/// stays on the thread that stepped its parent, whose step memo it shares.
pub struct Unbuilt<P: Protocol> {
    change: Option<Change<P>>,
}

impl<P: Protocol> Unbuilt<P> {
    /// Builds the next world from `parent`, which must be the world whose successor it is: the
    /// change applies to that world only (debug builds check the built world's fingerprint).
    pub fn build(self, parent: &World<P>) -> World<P> {
        match self.change {
            Some(change) => change.apply(parent),
            None => parent.clone(),
        }
    }

    /// The next world as the parts of `parent` it replaces, to swap into `parent` in place
    /// ([`Delta::swap`]); `parent` must be the world whose successor it is.
    pub fn delta(self, parent: &World<P>) -> Delta<P> {
        match self.change {
            Some(change) => change.delta(parent),
            None => Delta::changed(parent.fingerprint, None, NetworkPart::Unchanged, None),
        }
    }
}

impl<P: Protocol> fmt::Debug for Successor<'_, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Successor")
            .field("ordinal", &self.ordinal)
            .field("action", &self.action)
            .field("choices", &self.choices)
            .field("fingerprint", &self.fingerprint())
            .field("violation", &self.violation)
            .finish()
    }
}

/// Enumerates every choice vector of a handler, depth first, by re-execution.
#[derive(Debug, Default)]
pub struct ChoiceOdometer {
    values: Vec<usize>,
    bounds: Vec<usize>,
    position: usize,
}

impl ChoiceOdometer {
    /// An odometer at the first choice vector.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves to the next choice vector after a run; `false` when every vector has been run (the
    /// odometer is then back at the start).
    pub fn advance(&mut self) -> bool {
        self.values.truncate(self.position);
        self.bounds.truncate(self.position);
        self.position = 0;
        while let (Some(value), Some(&bound)) = (self.values.last_mut(), self.bounds.last()) {
            if *value + 1 < bound {
                *value += 1;
                return true;
            }
            self.values.pop();
            self.bounds.pop();
        }
        false
    }
}

impl Chooser for ChoiceOdometer {
    fn choose(&mut self, n: usize) -> usize {
        let at = self.position;
        self.position += 1;
        if at < self.values.len() {
            self.bounds[at] = n;
            // A handler that asks different questions on re-execution is non-deterministic;
            // clamp so the run stays well defined (replay reports the fingerprint mismatch).
            self.values[at].min(n - 1)
        } else {
            self.values.push(0);
            self.bounds.push(n);
            0
        }
    }
}

/// Answers choices from a recorded list, noting any disagreement.
#[derive(Debug)]
pub struct FixedChoices<'a> {
    values: &'a [usize],
    position: usize,
    problem: Option<String>,
}

impl<'a> FixedChoices<'a> {
    /// A chooser that answers `values` in order.
    pub fn new(values: &'a [usize]) -> Self {
        FixedChoices { values, position: 0, problem: None }
    }

    /// Whether the handler asked exactly the recorded questions with answers in range.
    ///
    /// # Errors
    /// A sentence saying how the run disagreed with the record.
    pub fn finish(self) -> Result<(), String> {
        if let Some(problem) = self.problem {
            return Err(problem);
        }
        if self.position != self.values.len() {
            return Err(format!(
                "the handler made {} choices but {} are recorded",
                self.position,
                self.values.len()
            ));
        }
        Ok(())
    }
}

impl Chooser for FixedChoices<'_> {
    fn choose(&mut self, n: usize) -> usize {
        let at = self.position;
        self.position += 1;
        match self.values.get(at) {
            Some(&v) if v < n => v,
            Some(&v) => {
                self.problem.get_or_insert(format!("choice {at} is {v}, out of range 0..{n}"));
                0
            }
            None => {
                self.problem
                    .get_or_insert(format!("the handler asked for choice {at}, which is not recorded"));
                0
            }
        }
    }
}

/// What a handler-running step asks the protocol to do.
pub(crate) enum Call<'w, P: Protocol> {
    Message(&'w Envelope<P::Msg>),
    Timer(P::Timer),
    Input(&'w P::Input),
    TransportError(NodeId),
    Restart,
}

thread_local! {
    /// The enabled actions of the world being expanded, reused from world to world.
    static ACTIONS: RefCell<Vec<Action>> = const { RefCell::new(Vec::new()) };
}

/// The model's semantics: initial worlds, enabled actions, steps.
pub struct Simulator<'m, P: Protocol> {
    model: &'m Model<P>,
    /// Distinguishes this simulator's entries in the thread-local step memo and the facts it
    /// left in node slots ([`crate::idle_events`]).
    id: u64,
}

impl<P: Protocol> Clone for Simulator<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P: Protocol> Copy for Simulator<'_, P> {}

impl<'m, P: Protocol> Simulator<'m, P> {
    /// A simulator for `model`.
    ///
    /// # Errors
    /// The model's [`ModelError`] if it does not validate.
    pub fn new(model: &'m Model<P>) -> Result<Self, ModelError> {
        model.validate()?;
        // From 1: a slot's idle events name their simulator, and 0 names none.
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let sim = Simulator { model, id: NEXT_ID.fetch_add(1, Ordering::Relaxed) };
        if let Some(Err(reason)) = model.resolved_start(&sim) {
            return Err(ModelError::Scenario(reason));
        }
        Ok(sim)
    }

    /// The model's start scenario, resolved: its steps from the initial world and the world
    /// they reach.
    pub(crate) fn start(&self) -> Option<&'m Resolved<P>> {
        self.model.resolved_start(self).and_then(Result::ok)
    }

    /// The model.
    pub fn model(&self) -> &'m Model<P> {
        self.model
    }

    /// Every world a search starts from, with the `init` choices that lead to it and the
    /// violation an `init` caused: one per choice vector of the nodes' `init` handlers (run in
    /// node order, sharing one vector), or the one world the model's start scenario reaches.
    pub fn initial_worlds(&self, mut each: impl FnMut(Vec<usize>, World<P>, Option<StepViolation>)) {
        if let Some(start) = self.start() {
            return each(start.init_choices.clone(), start.world.clone(), None);
        }
        let mut odometer = ChoiceOdometer::new();
        loop {
            let (world, choices, violation, _) = self.init_with(&mut odometer, false);
            each(choices, world, violation);
            if !odometer.advance() {
                break;
            }
        }
    }

    /// The initial world for one choice vector, with the log lines when `record` is set.
    pub fn init_with(
        &self,
        chooser: &mut dyn Chooser,
        record: bool,
    ) -> (World<P>, Vec<usize>, Option<StepViolation>, Vec<String>) {
        let model = self.model;
        let empty = Network::new(model.network_kind());
        let mut network = Network::new(model.network_kind());
        let mut nodes = Vec::with_capacity(model.node_count());
        let mut choices = Vec::new();
        let mut violation = None;
        let mut log = Vec::new();
        for me in NodeId::all(model.node_count()) {
            let mut timers = Vec::new();
            let mut clock = 0;
            let mut out =
                self.out(me, &mut timers, &mut clock, chooser, record, NetworkView::new(&empty, None));
            let result = catch_panic(|| model.protocol().init(me, &mut out));
            let (sends, failure) = self.finish_handler(me, &mut out, &result, &mut log);
            choices.extend(out.choices);
            violation = violation.or(failure);
            let state = match result {
                Ok(state) => state,
                // No state exists when init panics; the world is terminal, so any state will do:
                // run init once more with no choices beyond the first answers.
                Err(_) => return self.poisoned_init(choices, violation, log),
            };
            nodes.push(Arc::new(NodeSlot::new(me.index(), state, timers, clock)));
            for (to, msg) in sends {
                network.send(self.envelope(me, to, msg));
            }
        }
        let pending = low_bits(model.input_driver().once.len());
        let mut world = World {
            nodes,
            network: Arc::new(network),
            pending,
            faults_used: FaultsUsed::default(),
            fingerprint: Default::default(),
        };
        world.seal();
        (world, choices, violation, log)
    }

    fn poisoned_init(
        &self,
        choices: Vec<usize>,
        violation: Option<StepViolation>,
        log: Vec<String>,
    ) -> (World<P>, Vec<usize>, Option<StepViolation>, Vec<String>) {
        let world = World {
            nodes: Vec::new(),
            network: Arc::new(Network::new(self.model.network_kind())),
            pending: 0,
            faults_used: FaultsUsed::default(),
            fingerprint: Default::default(),
        };
        (world, choices, violation, log)
    }

    pub(crate) fn out<'a>(
        &self,
        me: NodeId,
        timers: &'a mut Vec<P::Timer>,
        clock: &'a mut u64,
        chooser: &'a mut dyn Chooser,
        record: bool,
        network: NetworkView<'a, P::Msg>,
    ) -> Out<'a, P> {
        Out {
            me,
            node_count: self.model.node_count(),
            sends: Vec::new(),
            timers,
            clock,
            chooser,
            choices: Vec::new(),
            log: record.then(Vec::new),
            failed: Vec::new(),
            disabled: false,
            read_network: Cell::new(false),
            network,
            queue_capacity: self.model.queue_capacity_limit(),
        }
    }

    /// The envelope of a message `from` sends `to`, with the model's number for it where the
    /// network indexes messages by number ([`crate::message_numbers`]).
    fn envelope(&self, from: NodeId, to: NodeId, msg: P::Msg) -> Envelope<P::Msg> {
        let envelope = Envelope::new(from, to, msg);
        match self.model.message_numbers() {
            Some(numbers) => envelope.numbered(numbers),
            None => envelope,
        }
    }

    /// Collects a finished handler's sends and its violation (panic, failed assertion, or a send
    /// to a node that does not exist).
    pub(crate) fn finish_handler<R>(
        &self,
        me: NodeId,
        out: &mut Out<'_, P>,
        result: &Result<R, String>,
        log: &mut Vec<String>,
    ) -> (Vec<(NodeId, P::Msg)>, Option<StepViolation>) {
        if let Some(lines) = out.log.take() {
            log.extend(lines);
        }
        let mut violation = match result {
            Err(message) => Some(StepViolation {
                kind: ViolationKind::Panic,
                property: "panic".into(),
                message: format!("{me} panicked: {message}"),
            }),
            Ok(_) => out.failed.first().map(|what| StepViolation {
                kind: ViolationKind::Assertion,
                property: what.clone(),
                message: format!("{me} failed its assertion: {what}"),
            }),
        };
        let mut sends = std::mem::take(&mut out.sends);
        let node_count = self.model.node_count();
        if let Some((to, _)) = sends.iter().find(|(to, _)| to.index() >= node_count) {
            violation.get_or_insert(StepViolation {
                kind: ViolationKind::Panic,
                property: "panic".into(),
                message: format!("{me} sent a message to {to}, which does not exist"),
            });
            sends.retain(|(to, _)| to.index() < node_count);
        }
        (sends, violation)
    }

    /// The actions enabled in `world`, in canonical order: deliveries, transport errors, timers,
    /// one-shot inputs, spontaneous inputs, then faults.
    pub fn actions(&self, world: &World<P>, into: &mut Vec<Action>) {
        self.collect_actions(world, into, true);
    }

    /// [`Simulator::actions`] into `into`, with the spontaneous inputs listed or, for the step
    /// loop, left out; either way, the index at which they stand (or would stand). `None` for a
    /// world poisoned by a panicking init, which is terminal.
    fn collect_actions(&self, world: &World<P>, into: &mut Vec<Action>, spontaneous: bool) -> Option<usize> {
        into.clear();
        if world.nodes.is_empty() {
            return None;
        }
        let network = &world.network;
        let order = self.model.transport_error_order();
        let driver = self.model.input_driver();
        // Room for the usual actions up front: the pushes below then never reallocate.
        into.reserve(network.messages().len() + network.errors().len() + driver.spontaneous.len() + 8);
        let holds_back = network.holds_back(order);
        if network.kind() == NetworkKind::GrowOnly {
            // Every message of a set is deliverable: a counted loop, no test per message.
            into.extend((0..network.messages().len() as u32).map(Action::Deliver));
        } else if holds_back {
            into.extend(
                network.deliverable().filter(|&i| !network.held(i)).map(|i| Action::Deliver(i as u32)),
            );
        } else {
            for i in network.deliverable() {
                into.push(Action::Deliver(i as u32));
            }
        }
        for i in network.deliverable_errors() {
            into.push(Action::TransportError(i as u32));
        }
        for (n, node) in world.nodes.iter().enumerate() {
            for t in 0..node.timers.len() {
                into.push(Action::Timer(NodeId::new(n), t as u32));
            }
        }
        let pending = world.pending;
        let given =
            (0..driver.once.len()).filter(|&i| pending & (1 << i) != 0 && driver.may_give(i, pending));
        into.extend(given.map(|i| Action::Input(i as u32)));
        let spontaneous_at = into.len();
        if spontaneous {
            into.extend((0..driver.spontaneous.len()).map(|i| Action::Spontaneous(i as u32)));
        }
        let faults = self.model.fault_budget();
        if faults.resets.allows(world.faults_used.resets) {
            // A node whose startup inputs are not all given has not started: it is not reset.
            let started = |n: &NodeId| pending & driver.startup_of(*n) == 0;
            let nodes = NodeId::all(world.nodes.len()).filter(|n| faults.may_reset(*n) && started(n));
            into.extend(nodes.map(Action::Reset));
        }
        if network.kind().consumes() {
            // The messages that may be delivered next, which are also those a fault may hit.
            let heads = || network.deliverable().filter(|&i| !holds_back || !network.held(i));
            if faults.drops.allows(world.faults_used.drops) {
                into.extend(heads().map(|i| Action::Drop(i as u32)));
            }
            if faults.duplicates.allows(world.faults_used.duplicates) {
                into.extend(heads().map(|i| Action::Duplicate(i as u32)));
            }
        }
        if faults.socket_errors.allows(world.faults_used.socket_errors) {
            into.extend((0..network.connections().len()).map(|i| Action::SocketError(i as u32)));
        }
        Some(spontaneous_at)
    }

    /// The node whose handler `action` runs in `world`, or `None` for a fault the environment
    /// injects: what a scheduler that picks processes sees of an action.
    pub fn process_of(&self, world: &World<P>, action: Action) -> Option<NodeId> {
        match action {
            Action::Deliver(i) => Some(world.network.messages()[i as usize].to),
            Action::TransportError(i) => Some(world.network.errors()[i as usize].0),
            Action::Timer(node, _) => Some(node),
            Action::Input(i) => Some(self.model.input_driver().once[i as usize].0),
            Action::Spontaneous(i) => Some(self.model.input_driver().spontaneous[i as usize].0),
            Action::Reset(_) | Action::Drop(_) | Action::Duplicate(_) | Action::SocketError(_) => None,
        }
    }

    /// The self-describing event of `action` in `world`.
    pub fn event(&self, world: &World<P>, action: Action) -> EventOf<P> {
        let message = |i: u32| &world.network.messages()[i as usize];
        let driver = self.model.input_driver();
        match action {
            Action::Deliver(i) => {
                let e = message(i);
                Event::Deliver { from: e.from, to: e.to, msg: e.msg.clone() }
            }
            Action::Drop(i) => {
                let e = message(i);
                Event::Drop { from: e.from, to: e.to, msg: e.msg.clone() }
            }
            Action::Duplicate(i) => {
                let e = message(i);
                Event::Duplicate { from: e.from, to: e.to, msg: e.msg.clone() }
            }
            Action::TransportError(i) => {
                let (node, peer) = world.network.errors()[i as usize];
                Event::TransportError { node, peer }
            }
            Action::Timer(node, t) => {
                Event::Timer { node, timer: world.nodes[node.index()].timers[t as usize].clone() }
            }
            Action::Input(i) => {
                let (node, input) = &driver.once[i as usize];
                Event::Input { node: *node, input: input.clone() }
            }
            Action::Spontaneous(i) => {
                let (node, input) = &driver.spontaneous[i as usize];
                Event::Spontaneous { node: *node, input: input.clone() }
            }
            Action::Reset(node) => Event::Reset { node },
            Action::SocketError(i) => {
                let (node, peer) = world.network.connections()[i as usize];
                Event::SocketError { node, peer }
            }
        }
    }

    /// The *shape* of `action`'s event in `world`: its kind, node and peer, and the enum
    /// variant of its message, or its timer or input — the event without a message's payload.
    /// Engines that match events across worlds whose payloads differ (the lasso engine's replay,
    /// and the event sources it owes fairness to) compare shapes. Nothing is cloned; shapes
    /// compare within one process, not across runs.
    pub fn event_shape(&self, world: &World<P>, action: Action) -> u64 {
        fn tag(kind: u8, node: NodeId, peer: NodeId, detail: u64) -> u64 {
            let mut bytes = [0u8; 17];
            bytes[0] = kind;
            bytes[1..5].copy_from_slice(&node.0.to_le_bytes());
            bytes[5..9].copy_from_slice(&peer.0.to_le_bytes());
            bytes[9..].copy_from_slice(&detail.to_le_bytes());
            xxhash_rust::xxh3::xxh3_64(&bytes)
        }
        let message = |kind: u8, i: u32| {
            let e = &world.network.messages()[i as usize];
            let mut variant = xxhash_rust::xxh3::Xxh3::new();
            std::hash::Hash::hash(&std::mem::discriminant(&e.msg), &mut variant);
            tag(kind, e.from, e.to, std::hash::Hasher::finish(&variant))
        };
        let none = NodeId(0);
        let driver = self.model.input_driver();
        match action {
            Action::Deliver(i) => message(0, i),
            Action::Drop(i) => message(1, i),
            Action::Duplicate(i) => message(2, i),
            Action::TransportError(i) => {
                let (node, peer) = world.network.errors()[i as usize];
                tag(3, node, peer, 0)
            }
            Action::SocketError(i) => {
                let (node, peer) = world.network.connections()[i as usize];
                tag(4, node, peer, 0)
            }
            Action::Timer(node, t) => {
                let timer = &world.nodes[node.index()].timers[t as usize];
                tag(5, node, none, FingerprintHasher::hash(timer) as u64)
            }
            Action::Input(i) => {
                let (node, input) = &driver.once[i as usize];
                tag(6, *node, none, FingerprintHasher::hash(input) as u64)
            }
            Action::Spontaneous(i) => {
                let (node, input) = &driver.spontaneous[i as usize];
                tag(7, *node, none, FingerprintHasher::hash(input) as u64)
            }
            Action::Reset(node) => tag(8, node, none, 0),
        }
    }

    /// The enabled action whose event equals `event`, if any.
    pub fn find_action(&self, world: &World<P>, event: &EventOf<P>) -> Option<Action> {
        let mut actions = Vec::new();
        self.actions(world, &mut actions);
        actions.into_iter().find(|a| self.event(world, *a) == *event)
    }

    /// Executes `action` on `world`, asking `chooser` for the handler's choices. A step that
    /// changes nothing (or whose handler declared the event not enabled) returns a copy of
    /// `world`.
    pub fn step(
        &self,
        world: &World<P>,
        action: Action,
        chooser: &mut dyn Chooser,
        record: bool,
    ) -> StepOutcome<P> {
        let recording = if record { Recording::Full } else { Recording::Off };
        self.step_recording(world, action, chooser, recording)
    }

    /// Executes `action` like [`Simulator::step`], recording the event and the messages sent
    /// but not the log lines: what a specification monitor observes, at a fraction of a
    /// recorded step's cost.
    pub fn observed_step(
        &self,
        world: &World<P>,
        action: Action,
        chooser: &mut dyn Chooser,
    ) -> StepOutcome<P> {
        self.step_recording(world, action, chooser, Recording::Events)
    }

    fn step_recording(
        &self,
        world: &World<P>,
        action: Action,
        chooser: &mut dyn Chooser,
        recording: Recording,
    ) -> StepOutcome<P> {
        let effect = self.effect(world, action, chooser, recording);
        let next = match effect.change {
            Some(change) => change.apply(world),
            None => world.clone(),
        };
        StepOutcome {
            world: next,
            choices: effect.choices,
            violation: effect.violation.map(|v| *v),
            record: effect.record.map(|r| *r),
        }
    }

    /// What `action` does to `world`, with the next fingerprint computed from the changed
    /// parts only.
    fn effect(
        &self,
        world: &World<P>,
        action: Action,
        chooser: &mut dyn Chooser,
        recording: Recording,
    ) -> Effect<P> {
        if recording != Recording::Off {
            return self.run_effect(world, action, chooser, recording).0;
        }
        step_memo::with_memo(self.id, |memo| match memo {
            Some(memo) => {
                self.memoized_effect(world, action, chooser, memo).unwrap_or_else(Effect::unchanged)
            }
            // A handler that explores a model of its own re-enters here: no memo for it.
            None => self.run_effect(world, action, chooser, Recording::Off).0,
        })
    }

    /// The effect of `action`, recalled from `memo` or run and remembered there; `None` when
    /// the memo knows that it changes nothing.
    #[inline(always)] // most steps of a search end in the first lines: known no-ops
    fn memoized_effect(
        &self,
        world: &World<P>,
        action: Action,
        chooser: &mut dyn Chooser,
        memo: &mut StepMemo<P>,
    ) -> Option<Effect<P>> {
        let Some((me, event)) = self.acting_event(world, action) else {
            return Some(self.run_effect(world, action, chooser, Recording::Off).0);
        };
        let acting = &world.nodes[me.index()];
        if acting.idle.knows(self.id, event) {
            return None;
        }
        // A recalled no-op: no successor, and a fact for the acting slot's idle events.
        let idle = || {
            acting.idle.learn(self.id, event);
            None
        };
        let key = (acting.hash, event.bits());
        match memo.recall(key) {
            Some(Outcome::Disabled) => idle(),
            Some(Outcome::Ran(ran))
                if ran.slot.is_none() && ran.sends.is_empty() && !consumes(world, action) =>
            {
                idle()
            }
            Some(Outcome::Ran(ran)) => self.recalled_effect(world, action, me, ran),
            None => {
                let (effect, outcome) = self.run_effect(world, action, chooser, Recording::Off);
                if let Some(outcome) = outcome {
                    memo.remember(key, outcome);
                }
                Some(effect)
            }
        }
    }

    /// The acting node of `action` and its event's part of the step memo's key, for the actions
    /// whose effect depends on nothing else unless the handler reads the network or chooses.
    /// Actions that always change the world (one-shot inputs, transport errors, faults) have
    /// none.
    fn acting_event(&self, world: &World<P>, action: Action) -> Option<(NodeId, EventKey)> {
        match action {
            Action::Deliver(i) => {
                let envelope = &world.network.messages()[i as usize];
                Some((envelope.to, EventKey::delivery(envelope)))
            }
            Action::Timer(node, t) => Some((node, EventKey::Timer(t))),
            Action::Spontaneous(i) => {
                Some((self.model.input_driver().spontaneous[i as usize].0, EventKey::Input(i)))
            }
            _ => None,
        }
    }

    /// The effect of a keyed `action` of node `me` whose handler the memo recalls: the node's
    /// next slot and the sends, posted to this world's network; `None` if it changes nothing.
    #[inline(always)] // into the step loop: 2.7% fewer instructions (2PC N = 6 DFS, callgrind)
    fn recalled_effect(
        &self,
        world: &World<P>,
        action: Action,
        me: NodeId,
        ran: &Rc<Ran<P>>,
    ) -> Option<Effect<P>> {
        let rest = (world.pending, world.faults_used);
        let change = self.handler_change(world, me, ran, consumed(world, action), rest)?;
        Some(Effect { change: Some(change), choices: Vec::new(), violation: None, record: None })
    }

    fn run_effect(
        &self,
        world: &World<P>,
        action: Action,
        chooser: &mut dyn Chooser,
        recording: Recording,
    ) -> (Effect<P>, Option<Outcome<P>>) {
        let event = (recording != Recording::Off).then(|| self.event(world, action));
        let budget = self.model.fault_budget();
        let mut pending = world.pending;
        let mut faults = world.faults_used;
        let mut network = NetworkEdit::None;
        let (node, call) = match action {
            Action::Drop(i) => {
                // Lost like a delivered message is consumed: copied without it only if new.
                faults.drops += u32::from(budget.drops.counted());
                return (self.network_effect(world, NetworkEdit::Consume(i), faults, event), None);
            }
            Action::Duplicate(i) => {
                let mut next = (*world.network).clone();
                next.duplicate(i as usize);
                faults.duplicates += u32::from(budget.duplicates.counted());
                let network = NetworkEdit::Rebuilt(Box::new(next));
                return (self.network_effect(world, network, faults, event), None);
            }
            Action::SocketError(i) => {
                faults.socket_errors += u32::from(budget.socket_errors.counted());
                let network = NetworkEdit::Cut(Cut::Connection(i));
                return (self.network_effect(world, network, faults, event), None);
            }
            Action::Deliver(i) => {
                // The handler borrows the message from the world's network; a network that
                // consumes it is copied without it only if the next world is built.
                network = consumed(world, action);
                let envelope = &world.network.messages()[i as usize];
                (envelope.to, Call::Message(envelope))
            }
            Action::TransportError(i) => {
                let (node, peer) = world.network.errors()[i as usize];
                network = NetworkEdit::Cut(Cut::error(&world.network, i, self.model.transport_error_order()));
                (node, Call::TransportError(peer))
            }
            Action::Timer(node, t) => {
                let timer = world.nodes[node.index()].timers[t as usize].clone();
                (node, Call::Timer(timer))
            }
            Action::Input(i) => {
                pending &= !(1u64 << i);
                let (node, input) = &self.model.input_driver().once[i as usize];
                (*node, Call::Input(input))
            }
            Action::Spontaneous(i) => {
                let (node, input) = &self.model.input_driver().spontaneous[i as usize];
                (*node, Call::Input(input))
            }
            Action::Reset(node) => {
                faults.resets += u32::from(budget.resets.counted());
                // The application restarts with its node: its startup inputs are due again.
                pending |= self.model.input_driver().startup_of(node);
                if world.network.kind() == NetworkKind::FifoChannels {
                    network = NetworkEdit::Cut(Cut::Reset(node));
                }
                (node, Call::Restart)
            }
        };
        let logs = recording == Recording::Full;
        self.handler_effect(world, network, pending, faults, node, call, chooser, event, logs)
    }

    fn network_effect(
        &self,
        world: &World<P>,
        network: NetworkEdit<P::Msg>,
        faults_used: FaultsUsed,
        event: Option<EventOf<P>>,
    ) -> Effect<P> {
        let fingerprint = world
            .fingerprint
            .0
            .wrapping_sub(world.network.hash())
            .wrapping_add(network.view(&world.network).hash())
            .wrapping_sub(rest_term(world.pending, world.faults_used))
            .wrapping_add(rest_term(world.pending, faults_used));
        let change = Change {
            fingerprint: Fingerprint(fingerprint),
            step: None,
            network,
            rest: Some(Box::new((world.pending, faults_used))),
        };
        let record = event.map(|event| Box::new(StepRecord { event, sent: Vec::new(), log: Vec::new() }));
        Effect { change: Some(change), choices: Vec::new(), violation: None, record }
    }

    #[allow(clippy::too_many_arguments)] // the parts of a step, threaded from `effect`
    fn handler_effect(
        &self,
        world: &World<P>,
        network: NetworkEdit<P::Msg>,
        pending: u64,
        faults_used: FaultsUsed,
        me: NodeId,
        call: Call<'_, P>,
        chooser: &mut dyn Chooser,
        event: Option<EventOf<P>>,
        logs: bool,
    ) -> (Effect<P>, Option<Outcome<P>>) {
        let protocol = self.model.protocol();
        let slot = &world.nodes[me.index()];
        let mut state = slot.state.clone();
        let mut timers = match &call {
            Call::Restart => Vec::new(),
            _ => slot.timers.clone(),
        };
        if let Call::Timer(timer) = &call {
            if let Ok(at) = timers.binary_search(timer) {
                timers.remove(at);
            }
        }
        let mut clock = slot.clock;
        // The handler sees the network after its event (a delivered message has left it).
        let view = network.view(&world.network);
        let mut out = self.out(me, &mut timers, &mut clock, chooser, logs, view);
        let result = catch_panic(|| match call {
            Call::Message(envelope) => {
                protocol.on_message(me, &mut state, envelope.from, &envelope.msg, &mut out)
            }
            Call::Timer(timer) => protocol.on_timer(me, &mut state, &timer, &mut out),
            Call::Input(input) => protocol.on_input(me, &mut state, input, &mut out),
            Call::TransportError(peer) => protocol.on_transport_error(me, &mut state, peer, &mut out),
            Call::Restart => state = protocol.restart(me, &slot.state, &mut out),
        });
        let mut log = Vec::new();
        let (sends, violation) = self.finish_handler(me, &mut out, &result, &mut log);
        let violation = violation.map(Box::new);
        let choices = std::mem::take(&mut out.choices);
        let disabled = out.disabled && result.is_ok();
        // The outcome is the slot's and the event's alone (see `step_memo`) unless the handler
        // read the network, chose, or failed.
        let memoizable = !out.read_network.get() && choices.is_empty() && violation.is_none();
        drop(out);
        let record = event.map(|event| Box::new(StepRecord { event, sent: sends.clone(), log }));
        if disabled {
            let outcome = memoizable.then_some(Outcome::Disabled);
            return (Effect { change: None, choices, violation, record }, outcome);
        }
        let sends: Box<[Arc<Envelope<P::Msg>>]> =
            sends.into_iter().map(|(to, msg)| Arc::new(self.envelope(me, to, msg))).collect();
        let node_changed = clock != slot.clock || timers != slot.timers || state != slot.state;
        let node = node_changed.then(|| Arc::new(NodeSlot::new(me.index(), state, timers, clock)));
        let ran = Rc::new(Ran { slot: node, sends });
        let outcome = memoizable.then(|| Outcome::Ran(Rc::clone(&ran)));
        let change = self.handler_change(world, me, &ran, network, (pending, faults_used));
        (Effect { change, choices, violation, record }, outcome)
    }

    /// The change of a step in which `me`'s handler did `ran`, after the event's own `network`
    /// edit, leaving the driver's pending inputs and the faults used at `rest`: the next
    /// fingerprint from the changed terms alone. `None` if the world stays the same.
    #[inline(always)] // on every recalled successor: its fingerprint and change stay in registers
    fn handler_change(
        &self,
        world: &World<P>,
        me: NodeId,
        ran: &Rc<Ran<P>>,
        network: NetworkEdit<P::Msg>,
        rest: (u64, FaultsUsed),
    ) -> Option<Change<P>> {
        let view = network.view(&world.network);
        let (sends_term, lands) = view.sends_term(&ran.sends);
        let rest_changed = rest != (world.pending, world.faults_used);
        if ran.slot.is_none() && network.is_none() && !lands && !rest_changed {
            return None;
        }
        let mut fingerprint = world.fingerprint.0.wrapping_add(sends_term);
        if let Some(next) = &ran.slot {
            fingerprint = fingerprint.wrapping_sub(world.nodes[me.index()].hash).wrapping_add(next.hash);
        }
        if !network.is_none() {
            fingerprint = fingerprint.wrapping_sub(world.network.hash()).wrapping_add(view.hash());
        }
        if rest_changed {
            fingerprint = fingerprint
                .wrapping_sub(rest_term(world.pending, world.faults_used))
                .wrapping_add(rest_term(rest.0, rest.1));
        }
        Some(Change {
            fingerprint: Fingerprint(fingerprint),
            step: Some(HandlerStep { node: me.0, lands, ran: Rc::clone(ran) }),
            network,
            rest: rest_changed.then(|| Box::new(rest)),
        })
    }

    /// Runs every step of `world` in canonical order — each enabled action with each of its
    /// choice vectors — numbering them with ordinals.
    fn each_step(&self, world: &World<P>, mut each: impl FnMut(u32, Action, Effect<P>) -> bool) {
        ACTIONS.with(|actions| {
            step_memo::with_memo(self.id, |memo| match (actions.try_borrow_mut(), memo) {
                (Ok(mut actions), Some(memo)) => {
                    self.each_step_with(world, &mut actions, Some(memo), &mut each)
                }
                // A handler that explores a model of its own re-enters here; give it fresh
                // buffers and no memo.
                _ => self.each_step_with(world, &mut Vec::new(), None, &mut each),
            })
        });
    }

    /// The step loop: every step of `world` to `each`, with `actions` as its buffer.
    ///
    /// The spontaneous inputs are counted rather than listed ([`StepActions`]): most of a
    /// world's are known to change nothing ([`Simulator::idle_facts`]), so the loop steps only
    /// the others, taken from a bit set, and counts an ordinal for each one it passes over, as
    /// if it had been listed. In two-phase commit with seven resource managers a world has 16
    /// spontaneous inputs, of which a few change anything; listing them all to skip the rest
    /// one by one was 2.3% of a search's instructions (docs/BENCHMARKS.md). Deliveries of
    /// numbered messages known to change nothing are passed over with a bit test of the same
    /// facts, before any lookup through their node.
    fn each_step_with(
        &self,
        world: &World<P>,
        actions: &mut Vec<Action>,
        mut memo: Option<&mut StepMemo<P>>,
        each: &mut impl FnMut(u32, Action, Effect<P>) -> bool,
    ) {
        let Some(spontaneous_at) = self.collect_actions(world, actions, false) else {
            return;
        };
        let spontaneous = self.model.input_driver().spontaneous.len() as u32;
        let messages = world.network.messages();
        let idle = if memo.is_some() { self.idle_facts(world) } else { IdleFacts::default() };
        let (before, after) = actions.split_at(spontaneous_at);
        let step_actions = StepActions {
            before: before.iter(),
            active: low_bits(spontaneous as usize) & !idle.inputs,
            next: 0,
            in_bits: spontaneous.min(64),
            beyond: 64..spontaneous,
            after: after.iter(),
        };
        let mut odometer = ChoiceOdometer::new();
        let mut ordinal = 0u32;
        for (passed, action) in step_actions {
            ordinal += passed;
            if matches!(action, Action::Deliver(i) if idle.messages.contains(messages[i as usize].number)) {
                ordinal += 1;
                continue;
            }
            loop {
                let effect = match memo.as_deref_mut() {
                    Some(memo) => match self.memoized_effect(world, action, &mut odometer, memo) {
                        Some(effect) => effect,
                        // Known to change nothing: no successor, and no effect to build.
                        None => {
                            ordinal += 1;
                            break;
                        }
                    },
                    None => self.run_effect(world, action, &mut odometer, Recording::Off).0,
                };
                if !each(ordinal, action, effect) {
                    return;
                }
                ordinal += 1;
                if !odometer.advance() {
                    break;
                }
            }
        }
    }

    /// The spontaneous inputs (of the first 64) and the numbered messages that `world`'s node
    /// slots know to change nothing ([`IdleFacts`]): read once per node, where the step loop
    /// would otherwise look each event's fact up through its node in turn. In two-phase commit
    /// with six resource managers, about 12 of a world's 14 spontaneous inputs are such no-ops,
    /// and most of its deliveries: a message of the grow-only set stays deliverable after it
    /// was received.
    pub(crate) fn idle_facts(&self, world: &World<P>) -> IdleFacts {
        world.nodes.iter().fold(IdleFacts::default(), |idle, slot| {
            let facts = slot.idle.facts(self.id);
            IdleFacts { inputs: idle.inputs | facts.inputs, messages: idle.messages.union(facts.messages) }
        })
    }

    /// Every successor of `world`, in canonical order. Steps that change nothing are not
    /// successors unless they violate a handler property (a panic, a failed `require`).
    pub fn successors<'w>(&self, world: &'w World<P>, mut each: impl FnMut(Successor<'w, P>)) {
        self.each_step(world, |ordinal, action, effect| {
            if effect.change.is_some() || effect.violation.is_some() {
                let Effect { change, choices, violation, .. } = effect;
                each(Successor { ordinal, action, choices, violation, parent: world, change });
            }
            true
        });
    }

    /// The step of `world` with the given ordinal, as (action, choices).
    pub fn successor_step(&self, world: &World<P>, ordinal: u32) -> Option<(Action, Vec<usize>)> {
        let mut found = None;
        // Enumerating to the ordinal re-executes earlier steps; traces are short, and this
        // keeps stored parent pointers at four bytes.
        self.each_step(world, |at, action, effect| {
            if at == ordinal {
                found = Some((action, effect.choices));
            }
            at < ordinal
        });
        found
    }

    /// Whether `action` is one of `world`'s enabled actions.
    pub fn is_enabled(&self, world: &World<P>, action: Action) -> bool {
        let mut actions = Vec::new();
        self.actions(world, &mut actions);
        actions.contains(&action)
    }

    /// The first `always` property that `world` violates.
    pub fn violated_invariant(&self, world: &World<P>) -> Option<StepViolation> {
        self.model.properties().iter().filter(|p| p.kind() == PropertyKind::Always).find_map(|p| {
            match catch_panic(|| p.holds(world)) {
                Ok(true) => None,
                Ok(false) => Some(StepViolation {
                    kind: ViolationKind::Invariant,
                    property: p.name().to_string(),
                    message: format!("always {:?} is false", p.name()),
                }),
                Err(message) => Some(StepViolation {
                    kind: ViolationKind::Invariant,
                    property: p.name().to_string(),
                    message: format!("the predicate panicked: {message}"),
                }),
            }
        })
    }
}

/// Whether `action` takes a message out of `world`'s network: a delivery, where delivery
/// consumes.
fn consumes<P: Protocol>(world: &World<P>, action: Action) -> bool {
    matches!(action, Action::Deliver(_)) && world.network.kind().consumes()
}

/// What `action` itself does to `world`'s network when it is a delivery or a local event.
fn consumed<P: Protocol>(world: &World<P>, action: Action) -> NetworkEdit<P::Msg> {
    match action {
        Action::Deliver(i) if consumes(world, action) => NetworkEdit::Consume(i),
        _ => NetworkEdit::None,
    }
}

/// A world's actions as the step loop takes them ([`Simulator::each_step_with`]): the listed
/// ones before the spontaneous inputs, the spontaneous inputs not known to be idle, then the
/// listed ones after; each with the number of idle inputs passed over since the action before,
/// which the loop still counts an ordinal each.
struct StepActions<'a> {
    before: std::slice::Iter<'a, Action>,
    /// The inputs among the first 64 still to step, one bit each.
    active: u64,
    /// The first input of the bit set not stepped or passed over yet.
    next: u32,
    /// The inputs the bit set covers: the first 64 at most.
    in_bits: u32,
    /// The inputs past the 64th, always stepped.
    beyond: std::ops::Range<u32>,
    after: std::slice::Iter<'a, Action>,
}

impl Iterator for StepActions<'_> {
    type Item = (u32, Action);

    #[inline(always)]
    fn next(&mut self) -> Option<(u32, Action)> {
        if let Some(&action) = self.before.next() {
            return Some((0, action));
        }
        if self.active != 0 {
            let i = self.active.trailing_zeros();
            self.active &= self.active - 1;
            let passed = i - self.next;
            self.next = i + 1;
            return Some((passed, Action::Spontaneous(i)));
        }
        let passed = self.in_bits - self.next;
        self.next = self.in_bits;
        if let Some(i) = self.beyond.next() {
            return Some((passed, Action::Spontaneous(i)));
        }
        self.after.next().map(|&action| (passed, action))
    }
}

fn low_bits(count: usize) -> u64 {
    if count >= 64 {
        u64::MAX
    } else {
        (1u64 << count) - 1
    }
}
