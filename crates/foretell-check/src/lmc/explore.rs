//! Local exploration: LMC's `findBugs` and `addNextState` (section 4, Figure 9, and the
//! implementation notes of section 4.2).
//!
//! Each node has the set of its visited local states; one shared, monotone network `I+` holds
//! every message ever produced and never loses one. A round applies every message to the states
//! of its destination that it has not met yet (each message remembers how far into that list it
//! got), then every local event (timers, inputs) to the states added since the last round.
//! Messages a round produces are applied from the next round on. A message is not applied to a
//! state whose own history consumed it (rule (i) and (ii): the history is inherited from the
//! first path that reached the state). A state records every predecessor (state, event, the
//! messages the event produced, the handler's choices) — several when several paths reach it.
//!
//! One pruning the paper does not name, sound and complete: a message a node sends itself
//! (after the start) is applied only to states whose path sent it, since in any real run its
//! sending precedes its delivery on that node's own sequence. Without it, a node that
//! "receives" its own future message (a Paxos leader its own prepare, before it proposes)
//! starts rounds no run has, and their messages snowball.
//!
//! Departures, as in the paper's prototype: an event that leaves the state unchanged adds its
//! messages to `I+` but no predecessor pointer (self-references are not followed); a local
//! assertion or a panic discards the state it would have produced. A message sent again by the
//! same path gets a copy number; copies beyond the duplicate limit stay out of `I+` (they still
//! count in soundness verification, where a FIFO channel must hold them).

use foretell_model::{
    ChoiceOdometer, Chooser, Envelope, LocalAction, LocalEvent, LocalState, NodeId, Protocol, Simulator,
    StepViolation, World,
};
use rustc_hash::FxHashMap;
use std::ops::ControlFlow;

/// Index of a message in `I+`.
pub(crate) type MsgId = u32;
/// Index of a local state in its node's list.
pub(crate) type StateId = u32;

/// A message of `I+`.
pub(crate) struct Message<M> {
    pub(crate) envelope: Envelope<M>,
    /// Whether local exploration delivers it (false for a copy beyond the duplicate limit).
    pub(crate) delivered: bool,
    /// The first copy of the same envelope (itself if it is the first): what a path's count of
    /// sendings is kept by.
    first: MsgId,
    /// How many states of the destination it has been applied to (or skipped).
    applied: usize,
}

/// What a predecessor's event was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The delivery of a message of `I+`.
    Deliver(MsgId),
    /// A timer or an input.
    Local(LocalAction),
}

/// A predecessor pointer: the state before, the event, what it produced and the choices made.
pub(crate) struct Pred {
    pub(crate) from: StateId,
    pub(crate) step: Step,
    pub(crate) produced: Box<[MsgId]>,
    pub(crate) choices: Box<[usize]>,
}

/// A forward pointer, and one event of a node's sequence: the state it leads to and which of
/// that state's predecessor pointers it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct SeqEvent {
    pub(crate) to: StateId,
    pub(crate) pred: u32,
}

/// A visited local state.
pub(crate) struct LocalNode<P: Protocol> {
    pub(crate) local: LocalState<P>,
    pub(crate) preds: Vec<Pred>,
    /// The predecessor pointers that leave this state, turned round, in the order of the
    /// state they lead to and then of its pointers.
    pub(crate) succs: Vec<SeqEvent>,
    /// The messages consumed on the first path here, sorted.
    history: Vec<MsgId>,
    /// How often each message (by its first copy) was sent on the first path here, sorted.
    sent: Vec<(MsgId, u32)>,
    /// Local events on the first path here.
    local_events: u32,
    /// Events on the first path here.
    pub(crate) depth: u32,
}

/// One node's visited states.
pub(crate) struct NodeStates<P: Protocol> {
    pub(crate) states: Vec<LocalNode<P>>,
    index: FxHashMap<u128, StateId>,
    /// States whose local events have been tried.
    locals_done: usize,
    /// Predecessor pointers added to states visited before (merges).
    pub(crate) merges: u64,
    /// Every predecessor pointer as (from, to), in the order added: what keeps a backward
    /// closure over the growing graph current ([`super::reach::Closure`]).
    pub(crate) edges: Vec<(StateId, StateId)>,
}

/// Counts of local exploration.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counts {
    pub(crate) transitions: u64,
    pub(crate) discarded: u64,
    pub(crate) duplicates_suppressed: u64,
}

/// The local states of every node and the shared network.
pub(crate) struct LocalSpace<'s, 'm, P: Protocol> {
    sim: &'s Simulator<'m, P>,
    pub(crate) nodes: Vec<NodeStates<P>>,
    pub(crate) messages: Vec<Message<P::Msg>>,
    /// `I+`'s index: (envelope hash, copy) to message.
    message_index: FxHashMap<(u128, u32), MsgId>,
    /// The messages in flight in the start world, in their network order.
    pub(crate) initial_messages: Vec<MsgId>,
    /// Local events a state may have on its first path (`None`: any number).
    bound: Option<u32>,
    duplicates: u32,
    /// Whether the bound stopped some local event.
    pub(crate) bounded: bool,
    pub(crate) counts: Counts,
    /// The first local violation that discarded a state, for the report.
    pub(crate) discarded_example: Option<StepViolation>,
    /// The first node whose handler looked at the network, which local steps show empty: the
    /// exploration stops there, since what it finds would stand for no real run.
    pub(crate) network_reader: Option<NodeId>,
    actions: Vec<LocalAction>,
}

impl<'s, 'm, P: Protocol> LocalSpace<'s, 'm, P> {
    /// The space whose only states are `start`'s (one per node), with `in_flight` (the start
    /// world's messages) in `I+`.
    pub(crate) fn new(
        sim: &'s Simulator<'m, P>,
        start: Vec<LocalState<P>>,
        in_flight: impl Iterator<Item = Envelope<P::Msg>>,
        bound: Option<u32>,
        duplicates: u32,
    ) -> Self {
        let nodes = start
            .into_iter()
            .map(|local| {
                let mut index = FxHashMap::default();
                index.insert(local.hash(), 0);
                let root = LocalNode {
                    local,
                    preds: Vec::new(),
                    succs: Vec::new(),
                    history: Vec::new(),
                    sent: Vec::new(),
                    local_events: 0,
                    depth: 0,
                };
                NodeStates { states: vec![root], index, locals_done: 0, merges: 0, edges: Vec::new() }
            })
            .collect();
        let mut space = LocalSpace {
            sim,
            nodes,
            messages: Vec::new(),
            message_index: FxHashMap::default(),
            initial_messages: Vec::new(),
            bound,
            duplicates,
            bounded: false,
            counts: Counts::default(),
            discarded_example: None,
            network_reader: None,
            actions: Vec::new(),
        };
        let mut copies: Vec<(u128, u32)> = Vec::new();
        for envelope in in_flight {
            let copy = bump(&mut copies, envelope.hash());
            let id = space.intern(envelope, copy);
            space.initial_messages.push(id);
        }
        space
    }

    /// The message for `envelope`'s `copy`-th sending, added to `I+` if new.
    fn intern(&mut self, envelope: Envelope<P::Msg>, copy: u32) -> MsgId {
        let key = (envelope.hash(), copy);
        if let Some(&id) = self.message_index.get(&key) {
            return id;
        }
        let id = self.messages.len() as MsgId;
        let delivered = copy <= self.duplicates;
        if !delivered {
            self.counts.duplicates_suppressed += 1;
        }
        // A copy is sent only after the copies before it on the same path, so the first is in.
        let first = if copy == 0 { id } else { self.message_index[&(key.0, 0)] };
        self.messages.push(Message { envelope, delivered, first, applied: 0 });
        self.message_index.insert(key, id);
        id
    }

    /// Predecessor pointers added to states visited before, over all nodes.
    pub(crate) fn merges(&self) -> u64 {
        self.nodes.iter().map(|n| n.merges).sum()
    }

    /// The total number of local states.
    pub(crate) fn state_count(&self) -> u64 {
        self.nodes.iter().map(|n| n.states.len() as u64).sum()
    }

    /// The system state of `states` (one per node), in `reused`: built there the first time,
    /// re-pointed at the states after ([`Simulator::rejoin`]), which costs a fraction of a
    /// world built per combination.
    #[inline]
    pub(crate) fn world_in<'w>(&self, reused: &'w mut Option<World<P>>, states: &[StateId]) -> &'w World<P> {
        match reused {
            Some(world) => {
                self.sim.rejoin(world, self.locals(states));
                world
            }
            None => reused.insert(self.sim.join(self.locals(states))),
        }
    }

    /// The local states `states` (one per node) name.
    fn locals<'a>(&'a self, states: &'a [StateId]) -> impl ExactSizeIterator<Item = &'a LocalState<P>> {
        states.iter().enumerate().map(|(n, &s)| &self.nodes[n].states[s as usize].local)
    }

    /// Calls `fresh` on every start state, as on a newly visited one.
    pub(crate) fn visit_roots(
        &self,
        fresh: &mut impl FnMut(&Self, NodeId, StateId) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        for node in NodeId::all(self.nodes.len()) {
            fresh(self, node, 0)?;
        }
        ControlFlow::Continue(())
    }

    /// One round: every message on the states it has not met, every local event on the states
    /// added since the last round. `fresh` is called on each newly visited state and may stop
    /// the run. Returns whether anything new was visited or produced.
    pub(crate) fn round(
        &mut self,
        fresh: &mut impl FnMut(&Self, NodeId, StateId) -> ControlFlow<()>,
    ) -> ControlFlow<(), bool> {
        let (states_before, messages_before) = (self.state_count(), self.messages.len());
        for m in 0..messages_before {
            if !self.messages[m].delivered {
                continue;
            }
            let to = self.messages[m].envelope.to;
            let end = self.nodes[to.index()].states.len();
            let start = std::mem::replace(&mut self.messages[m].applied, end);
            let first = self.messages[m].first;
            // A message a node sends itself is produced on its own path, or not at all (unless
            // it was in flight at the start).
            let to_itself = self.messages[m].envelope.from == to && m >= self.initial_messages.len();
            for s in start..end {
                let state = &self.nodes[to.index()].states[s];
                if state.history.binary_search(&(m as MsgId)).is_ok() {
                    continue;
                }
                if to_itself && state.sent.binary_search_by_key(&first, |&(f, _)| f).is_err() {
                    continue;
                }
                self.transition(to, s as StateId, Step::Deliver(m as MsgId), fresh)?;
            }
        }
        for node in NodeId::all(self.nodes.len()) {
            let end = self.nodes[node.index()].states.len();
            let start = std::mem::replace(&mut self.nodes[node.index()].locals_done, end);
            for s in start..end {
                let state = &self.nodes[node.index()].states[s];
                self.sim.local_actions(node, &state.local, &mut self.actions);
                if self.actions.is_empty() {
                    continue;
                }
                if self.bound.is_some_and(|bound| state.local_events >= bound) {
                    self.bounded = true;
                    continue;
                }
                for action in std::mem::take(&mut self.actions) {
                    self.transition(node, s as StateId, Step::Local(action), fresh)?;
                }
            }
        }
        ControlFlow::Continue(self.state_count() > states_before || self.messages.len() > messages_before)
    }

    /// Runs `step` on state `from` of `node` with every choice vector, adding what it produces.
    fn transition(
        &mut self,
        node: NodeId,
        from: StateId,
        step: Step,
        fresh: &mut impl FnMut(&Self, NodeId, StateId) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let mut odometer = ChoiceOdometer::new();
        loop {
            self.transition_with(node, from, step, &mut odometer, fresh)?;
            if !odometer.advance() {
                return ControlFlow::Continue(());
            }
        }
    }

    fn transition_with(
        &mut self,
        node: NodeId,
        from: StateId,
        step: Step,
        chooser: &mut dyn Chooser,
        fresh: &mut impl FnMut(&Self, NodeId, StateId) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let source = &self.nodes[node.index()].states[from as usize];
        let event = match step {
            Step::Deliver(m) => LocalEvent::Deliver(&self.messages[m as usize].envelope),
            Step::Local(action) => action.event(),
        };
        let outcome = self.sim.local_step(node, &source.local, event, chooser);
        self.counts.transitions += 1;
        if outcome.read_network {
            self.network_reader = Some(node);
            return ControlFlow::Break(());
        }
        if let Some(violation) = outcome.violation {
            // A local assertion marks the state invalid (section 4.2, "Local assertions").
            self.counts.discarded += 1;
            self.discarded_example.get_or_insert(violation);
            return ControlFlow::Continue(());
        }
        let unchanged = outcome.next.hash() == source.local.hash();
        // A message's copy number counts its sendings on the source's first path and earlier
        // in this step.
        let mut produced = Vec::with_capacity(outcome.sent.len());
        for envelope in outcome.sent {
            let hash = envelope.hash();
            let source = &self.nodes[node.index()].states[from as usize];
            let sendings = |first| {
                source.sent.binary_search_by_key(&first, |&(f, _)| f).map_or(0, |at| source.sent[at].1)
            };
            let before = self.message_index.get(&(hash, 0)).map_or(0, |&first| sendings(first));
            let earlier =
                produced.iter().filter(|&&id| self.messages[id as usize].envelope.hash() == hash).count();
            produced.push(self.intern(envelope, before + earlier as u32));
        }
        if unchanged {
            return ControlFlow::Continue(()); // a self-reference: not followed
        }
        let next_hash = outcome.next.hash();
        let produced = produced.into_boxed_slice();
        let pred = Pred { from, step, produced, choices: outcome.choices.into_boxed_slice() };
        let states = &mut self.nodes[node.index()];
        if let Some(&existing) = states.index.get(&next_hash) {
            let preds = &mut states.states[existing as usize].preds;
            if !preds.iter().any(|p| p.from == pred.from && p.step == pred.step && p.choices == pred.choices)
            {
                let succ = SeqEvent { to: existing, pred: preds.len() as u32 };
                preds.push(pred);
                states.edges.push((from, existing));
                let succs = &mut states.states[from as usize].succs;
                let at = succs.binary_search(&succ).unwrap_err();
                succs.insert(at, succ);
                states.merges += 1;
            }
            return ControlFlow::Continue(());
        }
        let source = &states.states[from as usize];
        // Room for what this step adds, so that the insertions do not reallocate.
        let mut sent = Vec::with_capacity(source.sent.len() + pred.produced.len());
        sent.extend_from_slice(&source.sent);
        for &id in &*pred.produced {
            bump(&mut sent, self.messages[id as usize].first);
        }
        let mut history = Vec::with_capacity(source.history.len() + 1);
        history.extend_from_slice(&source.history);
        if let Step::Deliver(m) = step {
            let at = history.binary_search(&m).unwrap_err();
            history.insert(at, m);
        }
        let visited = LocalNode {
            local: outcome.next,
            preds: vec![pred],
            succs: Vec::new(),
            history,
            sent,
            local_events: source.local_events + u32::from(matches!(step, Step::Local(_))),
            depth: source.depth + 1,
        };
        let id = states.states.len() as StateId;
        states.edges.push((from, id));
        states.states[from as usize].succs.push(SeqEvent { to: id, pred: 0 });
        states.states.push(visited);
        states.index.insert(next_hash, id);
        fresh(self, node, id)
    }
}

/// Counts one more sending of the message `key` stands for in the sorted `counts`; returns its
/// copy number (0 for the first).
fn bump<K: Ord + Copy>(counts: &mut Vec<(K, u32)>, key: K) -> u32 {
    match counts.binary_search_by_key(&key, |&(k, _)| k) {
        Ok(at) => {
            counts[at].1 += 1;
            counts[at].1 - 1
        }
        Err(at) => {
            counts.insert(at, (key, 1));
            0
        }
    }
}
