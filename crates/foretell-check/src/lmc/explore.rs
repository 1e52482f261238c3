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
//! A node keeps its predecessor pointers in one list, chained per state, and what they and its
//! states hold of variable length (the messages a step produced, the choices made, a state's
//! history) in pools, one allocation each per node rather than a few per state; the tables of
//! what the first paths sent are interned, since few paths differ in them.
//!
//! Channel order (`LmcOptions::channel_order`, off by default), the augmentation section 5
//! proposes for TCP ("reordered messages in a connection will eventually be rejected by TCP
//! and could, hence, be ignored"): on FIFO channels or inboxes that do not duplicate messages,
//! a node receives a sender's messages in the order that sender sent them, so no run delivers
//! a message after a later one from the same sender. Each message then carries its place on
//! its channel (how many messages its path had sent there before it); each local state
//! counts, per channel, what its path sent there and the place after the last message it took
//! from there; a message is applied only to the states that have not taken one after it. The
//! counts are part of a state's identity (two paths reaching one protocol state with different
//! counts continue differently), so a step that sends is never a self-reference; a delivery
//! that changes nothing and sends nothing still is one and counts nothing (the channel's later
//! messages may follow it, and whether it was taken does not matter to them). Taking a message
//! while earlier ones wait stays allowed (as if they were lost), so the rule cuts only
//! deliveries no run has and keeps every state a run reaches. Whether it pays depends on the
//! protocol: it cuts the out-of-order states a chatty protocol's local exploration drowns in,
//! and the counts split states that any order would merge (docs/BENCHMARKS.md).
//!
//! Departures, as in the paper's prototype: an event that leaves the state unchanged is not
//! followed (self-references); a local assertion or a panic discards the state it would have
//! produced. A message sent again by the same path gets a copy number; copies beyond the
//! duplicate limit stay out of `I+` (they still count in soundness verification, where a FIFO
//! channel must hold them).
//!
//! A self-reference that sent messages adds them to `I+` and keeps a predecessor pointer from
//! its state to itself, which soundness verification may take: without it such a message has
//! no producer on any path (a retransmission whose timer is armed again as it was, Mace's
//! transport's duplicated SYN), and every violation that needs it is refuted.
//!
//! Copy numbers count a state's first path, but other paths into the state may have sent a
//! message more often: round a cycle (a timer's self-reference that sends, two flips back to a
//! state met before) or along a path that meets the first. A state some path reached with
//! more sendings keeps how many more ([`LocalSpace::follow`]), the copies those paths send go
//! into `I+` too, and the raise is carried on to the states after it; round a cycle the count
//! climbs to every copy the duplicate limit allows and one beyond, kept out. A delivery that
//! changes nothing but replies raises its state's count of the reply once per copy of the
//! request, not round and round (which made P#'s ReplicatingStorage eighty times larger).
//! Without these, a receiver took a message only as often as first paths sent it, and a run
//! that said it had explored every reachable world had not.

use super::Stopper;
use foretell_model::{
    ChoiceOdometer, Chooser, Envelope, FingerprintHasher, LocalAction, LocalEvent, LocalState, NetworkKind,
    NodeId, Protocol, Simulator, StepViolation, SystemState, World,
};
use rustc_hash::{FxHashMap, FxHashSet};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Instant;

/// Index of a message in `I+`.
pub(crate) type MsgId = u32;
/// Index of a local state in its node's list.
pub(crate) type StateId = u32;
/// Index of a predecessor pointer in its node's list.
pub(crate) type PredId = u32;
/// No pointer: where every state's chain of pointers into it ends (at once for a start state).
const NO_PRED: PredId = PredId::MAX;

/// The handler runs probing the duplicate limit's cut may always make, however few the
/// exploration made: a probe follows each reply it sends, so it can take more runs than a
/// small exploration did.
const PROBE_RUNS_AT_LEAST: u64 = 10_000;

/// Index of a table of sendings in its node's [`SentTables`].
type SentId = u32;

/// A message of `I+`.
pub(crate) struct Message<M> {
    pub(crate) envelope: Envelope<M>,
    /// Whether local exploration delivers it (false for a copy beyond the duplicate limit).
    pub(crate) delivered: bool,
    /// The first message of `I+` with the same envelope (itself if it is the first): what a
    /// path's count of sendings is kept by.
    first: MsgId,
    /// Whether some state's first path took it.
    taken: bool,
    /// Its place on its channel under channel order (0 otherwise).
    place: u32,
    /// How many states of the destination it has been applied to (or skipped).
    applied: usize,
}

/// What a predecessor's event was.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Step {
    /// The delivery of a message of `I+`.
    Deliver(MsgId),
    /// A timer or an input.
    Local(LocalAction),
}

/// A stretch of one of a node's pools: where it starts and how long it is.
#[derive(Clone, Copy, Default)]
struct Span {
    start: u32,
    len: u32,
}

impl Span {
    /// Appends `items` to `pool` and returns where they are. (A pool of 2^32 items would
    /// follow hundreds of millions of a node's states, beyond any memory.)
    fn append<T: Copy>(pool: &mut Vec<T>, items: &[T]) -> Span {
        let start = u32::try_from(pool.len()).expect("a pool of fewer than 2^32 items");
        pool.extend_from_slice(items);
        Span { start, len: items.len() as u32 }
    }

    /// The items of `pool` it names.
    fn of<T>(self, pool: &[T]) -> &[T] {
        &pool[self.start as usize..][..self.len as usize]
    }
}

/// A predecessor pointer: the state before and after, the event, and where the messages it
/// produced and the choices made are kept in the node's pools.
pub(crate) struct Pred {
    pub(crate) from: StateId,
    pub(crate) to: StateId,
    pub(crate) step: Step,
    produced: Span,
    choices: Span,
    /// The pointer into the same state added before this one ([`NO_PRED`] for its first).
    earlier: PredId,
    /// The pointer out of the same state added after this one ([`NO_PRED`] for its last).
    later_out: PredId,
}

/// A forward pointer, and one event of a node's sequence: the state it leads to and the
/// predecessor pointer into it that it is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SeqEvent {
    pub(crate) to: StateId,
    pub(crate) pred: PredId,
}

/// A visited local state.
pub(crate) struct LocalNode<P: Protocol> {
    pub(crate) local: LocalState<P>,
    /// The last predecessor pointer added into this state; the others are chained from it
    /// ([`Pred::earlier`]).
    last_pred: PredId,
    /// The first and last predecessor pointers added out of this state, turned round: its
    /// forward pointers, chained in the order added ([`Pred::later_out`]).
    first_out: PredId,
    last_out: PredId,
    /// The messages consumed on the first path here, sorted: `history_len` items of the
    /// node's histories from `history_at` (which, unlike the other pools, may outgrow `u32`).
    history_at: usize,
    history_len: u32,
    /// How often each message was sent on the first path here.
    sent: SentId,
    /// Local events on the first path here.
    local_events: u32,
    /// Events on the first path here.
    pub(crate) depth: u32,
}

/// The distinct tables of sendings of a node's first paths: how often each message (by its
/// first copy) was sent, sorted. Paths differ far less in what they sent than in what they
/// received (about a thousand tables for a million states of two proposals), so a state
/// names its table.
struct SentTables {
    tables: Vec<Arc<[(MsgId, u32)]>>,
    index: FxHashMap<Arc<[(MsgId, u32)]>, SentId>,
}

impl SentTables {
    /// Holding only the empty table, as [`SentId`] 0.
    fn new() -> Self {
        let mut tables = SentTables { tables: Vec::new(), index: FxHashMap::default() };
        tables.intern(&[]);
        tables
    }

    /// The number of `table`, added if new.
    fn intern(&mut self, table: &[(MsgId, u32)]) -> SentId {
        if let Some(&id) = self.index.get(table) {
            return id;
        }
        let id = self.tables.len() as SentId;
        let table: Arc<[(MsgId, u32)]> = table.into();
        self.index.insert(Arc::clone(&table), id);
        self.tables.push(table);
        id
    }

    /// Table `id`.
    fn get(&self, id: SentId) -> &[(MsgId, u32)] {
        &self.tables[id as usize]
    }
}

/// One node's visited states, the predecessor pointers between them, and the pools these
/// keep their lists in (one allocation each for the whole node, not one per state).
pub(crate) struct NodeStates<P: Protocol> {
    pub(crate) states: Vec<LocalNode<P>>,
    /// Under channel order, every state's channel counts ([`Channels::width`] each, in state
    /// order) and the key it is indexed by (its hash with its counts mixed in); both empty
    /// otherwise, where a state's key is its hash.
    counts: Vec<u32>,
    keys: Vec<u128>,
    /// Every predecessor pointer, in the order added.
    preds: Vec<Pred>,
    index: FxHashMap<u128, StateId>,
    produced: Vec<MsgId>,
    choices: Vec<usize>,
    histories: Vec<MsgId>,
    sent: SentTables,
    /// For the states some path reached with more sendings of a message than its first path
    /// made: how many more (sorted by the message's first copy), as far as one beyond the
    /// duplicate limit ([`LocalSpace::follow`]).
    surplus: FxHashMap<StateId, Vec<(MsgId, u32)>>,
    /// States whose local events have been tried.
    locals_done: usize,
    /// Predecessor pointers added to states visited before (merges, and self-references that
    /// sent messages).
    pub(crate) merges: u64,
}

impl<P: Protocol> NodeStates<P> {
    /// The predecessor pointer `pred`.
    pub(crate) fn pred(&self, pred: PredId) -> &Pred {
        &self.preds[pred as usize]
    }

    /// How many predecessor pointers there are; they are numbered in the order added.
    pub(crate) fn pred_count(&self) -> usize {
        self.preds.len()
    }

    /// The predecessor pointers into `state`, the last added first.
    pub(crate) fn preds_into(&self, state: StateId) -> impl Iterator<Item = &Pred> {
        let mut at = self.states[state as usize].last_pred;
        std::iter::from_fn(move || {
            let pred = self.preds.get(at as usize)?;
            at = pred.earlier;
            Some(pred)
        })
    }

    /// The forward pointer out of `state` that follows `after` (the first for `None`), in the
    /// order added: one event of a sequence through `state`.
    pub(crate) fn next_out(&self, state: StateId, after: Option<PredId>) -> Option<SeqEvent> {
        let pred = match after {
            None => self.states[state as usize].first_out,
            Some(after) => self.preds[after as usize].later_out,
        };
        self.preds.get(pred as usize).map(|p| SeqEvent { to: p.to, pred })
    }

    /// The messages `pred`'s event produced, in order.
    pub(crate) fn produced(&self, pred: &Pred) -> &[MsgId] {
        pred.produced.of(&self.produced)
    }

    /// The choices `pred`'s handler was given.
    pub(crate) fn choices(&self, pred: &Pred) -> &[usize] {
        pred.choices.of(&self.choices)
    }

    /// State `id`'s channel counts, `width` of them.
    fn counts(&self, id: StateId, width: usize) -> &[u32] {
        &self.counts[id as usize * width..][..width]
    }

    /// The key state `id` is indexed by, with channel order `ORDERED`.
    fn key<const ORDERED: bool>(&self, id: StateId) -> u128 {
        match ORDERED {
            true => self.keys[id as usize],
            false => self.states[id as usize].local.hash(),
        }
    }

    /// The messages consumed on the first path to `state`, sorted.
    fn history(&self, state: &LocalNode<P>) -> &[MsgId] {
        &self.histories[state.history_at..][..state.history_len as usize]
    }

    /// How often `state`'s first path sent the message whose first copy is `first`.
    fn sendings(&self, state: &LocalNode<P>, first: MsgId) -> Option<u32> {
        let table = self.sent.get(state.sent);
        table.binary_search_by_key(&first, |&(f, _)| f).ok().map(|at| table[at].1)
    }

    /// Adds a predecessor pointer from `from` into `to`; returns its number.
    fn add_pred(
        &mut self,
        from: StateId,
        to: StateId,
        step: Step,
        produced: &[MsgId],
        choices: &[usize],
    ) -> PredId {
        let id = PredId::try_from(self.preds.len())
            .ok()
            .filter(|&id| id != NO_PRED)
            .expect("a node has fewer than 2^32 - 1 pointers");
        let produced = Span::append(&mut self.produced, produced);
        let choices = Span::append(&mut self.choices, choices);
        let earlier = std::mem::replace(&mut self.states[to as usize].last_pred, id);
        self.preds.push(Pred { from, to, step, produced, choices, earlier, later_out: NO_PRED });
        let source = &mut self.states[from as usize];
        match std::mem::replace(&mut source.last_out, id) {
            NO_PRED => source.first_out = id,
            before => self.preds[before as usize].later_out = id,
        }
        id
    }
}

/// Counts of local exploration.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counts {
    pub(crate) transitions: u64,
    pub(crate) discarded: u64,
    pub(crate) duplicates_suppressed: u64,
}

/// Channel order: how many counts a local state keeps — per node, the messages its path sent to
/// it, then the messages its path received from it — or none when channel order is off.
#[derive(Clone, Copy)]
pub(crate) struct Channels {
    nodes: usize,
    on: bool,
}

impl Channels {
    /// Channel order for `nodes` nodes, `on` or off.
    pub(crate) fn new(nodes: usize, on: bool) -> Self {
        Channels { nodes, on }
    }

    /// The number of counts a state keeps.
    fn width(self) -> usize {
        if self.on {
            2 * self.nodes
        } else {
            0
        }
    }

    /// [`Self::width`] where the caller is compiled for channel order `ORDERED`, the same as
    /// [`Self::on`]: a constant without it.
    #[inline]
    fn width_if<const ORDERED: bool>(self) -> usize {
        debug_assert_eq!(ORDERED, self.on);
        match ORDERED {
            true => self.width(),
            false => 0,
        }
    }

    /// Counts one more message sent to `to` in a state's `counts` and returns its place on
    /// the channel (0 when channel order is off and `counts` is empty).
    #[inline]
    fn send(self, counts: &mut [u32], to: NodeId) -> u32 {
        match counts.get_mut(to.index()) {
            Some(sent) => {
                *sent += 1;
                *sent - 1
            }
            None => 0,
        }
    }

    /// Where the count of messages received from `from` sits.
    fn received(self, from: NodeId) -> usize {
        self.nodes + from.index()
    }

    /// The key of a state with `hash` and `counts`.
    #[inline]
    fn key(self, hash: u128, counts: &[u32]) -> u128 {
        match counts {
            [] => hash,
            _ => FingerprintHasher::mix(FingerprintHasher::hash(counts) as u64, hash),
        }
    }
}

/// The local states of every node and the shared network.
pub(crate) struct LocalSpace<'s, 'm, P: Protocol> {
    sim: &'s Simulator<'m, P>,
    pub(crate) nodes: Vec<NodeStates<P>>,
    pub(crate) messages: Vec<Message<P::Msg>>,
    /// `I+`'s index: (envelope hash, copy, place) to message.
    message_index: FxHashMap<(u128, u32, u32), MsgId>,
    /// Under channel order, the first message of each envelope (by hash); without it, that is
    /// the envelope's copy 0 at place 0, found in `message_index`.
    envelopes: FxHashMap<u128, MsgId>,
    channels: Channels,
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
    /// Reused by every step: the local events enabled, and the table of sendings of a new
    /// state, which is interned only if no state had it before.
    actions: Vec<LocalAction>,
    sendings: Vec<(MsgId, u32)>,
    /// Reused by every step: the next state's channel counts.
    next_counts: Vec<u32>,
    /// Whether copy numbers count what paths other than a state's first sent
    /// ([`Self::follow`]): not under channel order, where each sending has its own place and
    /// the copy number only decides what the duplicate limit keeps out, nor on a grow-only
    /// network, which holds one of each message however often sent.
    counts_copies: bool,
}

impl<'s, 'm, P: Protocol> LocalSpace<'s, 'm, P> {
    /// The space whose only states are `start`'s (one per node), with `in_flight` (the start
    /// world's messages) in `I+`.
    pub(crate) fn new(
        sim: &'s Simulator<'m, P>,
        start: Vec<LocalState<P>>,
        in_flight: Vec<Envelope<P::Msg>>,
        bound: Option<u32>,
        duplicates: u32,
        channels: Channels,
    ) -> Self {
        let width = channels.width();
        // Under channel order the messages in flight hold the first places of their channels,
        // and their senders go on from there.
        let mut start_counts = vec![vec![0u32; width]; start.len()];
        let mut places = Vec::with_capacity(in_flight.len());
        for envelope in &in_flight {
            places.push(channels.send(&mut start_counts[envelope.from.index()], envelope.to));
        }
        let nodes = start
            .into_iter()
            .zip(start_counts)
            .map(|(local, counts)| {
                let key = channels.key(local.hash(), &counts);
                let mut index = FxHashMap::default();
                index.insert(key, 0);
                let keys = if width > 0 { vec![key] } else { Vec::new() };
                let root = LocalNode {
                    local,
                    last_pred: NO_PRED,
                    first_out: NO_PRED,
                    last_out: NO_PRED,
                    history_at: 0,
                    history_len: 0,
                    sent: 0,
                    local_events: 0,
                    depth: 0,
                };
                NodeStates {
                    states: vec![root],
                    counts,
                    keys,
                    preds: Vec::new(),
                    index,
                    produced: Vec::new(),
                    choices: Vec::new(),
                    histories: Vec::new(),
                    sent: SentTables::new(),
                    surplus: FxHashMap::default(),
                    locals_done: 0,
                    merges: 0,
                }
            })
            .collect();
        let mut space = LocalSpace {
            sim,
            nodes,
            messages: Vec::new(),
            message_index: FxHashMap::default(),
            envelopes: FxHashMap::default(),
            channels,
            initial_messages: Vec::new(),
            bound,
            duplicates,
            bounded: false,
            counts: Counts::default(),
            discarded_example: None,
            network_reader: None,
            actions: Vec::new(),
            sendings: Vec::new(),
            next_counts: Vec::new(),
            counts_copies: !channels.on && sim.model().network_kind() != NetworkKind::GrowOnly,
        };
        let mut copies: Vec<(u128, u32)> = Vec::new();
        let mut sent: Vec<Vec<(MsgId, u32)>> = vec![Vec::new(); space.nodes.len()];
        for (envelope, place) in in_flight.into_iter().zip(places) {
            let copy = bump(&mut copies, envelope.hash());
            let from = envelope.from.index();
            let id = space.intern(envelope, copy, place);
            space.initial_messages.push(id);
            bump(&mut sent[from], space.messages[id as usize].first);
        }
        // The start world's messages were sent on the way to their senders' start states: a
        // sender that sends one again sends its next copy.
        for (node, table) in space.nodes.iter_mut().zip(sent) {
            node.states[0].sent = node.sent.intern(&table);
        }
        space
    }

    /// The message for `envelope`'s `copy`-th sending on a path, at `place` on its channel,
    /// added to `I+` if new.
    fn intern(&mut self, envelope: Envelope<P::Msg>, copy: u32, place: u32) -> MsgId {
        let key = (envelope.hash(), copy, place);
        if let Some(&id) = self.message_index.get(&key) {
            return id;
        }
        let id = self.messages.len() as MsgId;
        let delivered = copy <= self.duplicates;
        if !delivered {
            self.counts.duplicates_suppressed += 1;
        }
        let first = match (self.channels.width(), copy) {
            (0, 0) => id,
            // A copy is sent only after the copies before it on the same path, so the first is in.
            (0, _) => self.message_index[&(key.0, 0, 0)],
            _ => *self.envelopes.entry(key.0).or_insert(id),
        };
        self.messages.push(Message { envelope, delivered, first, taken: false, place, applied: 0 });
        self.message_index.insert(key, id);
        id
    }

    /// The message soundness verification puts in flight for message `m`: the first of `I+`
    /// with its envelope. Copies of one envelope are one message on the wire, so any of them
    /// a path sent may be the one a delivery of another takes.
    pub(crate) fn token(&self, m: MsgId) -> MsgId {
        self.messages[m as usize].first
    }

    /// The first message of `I+` with the envelope whose hash is `hash`, if any.
    fn first_of<const ORDERED: bool>(&self, hash: u128) -> Option<MsgId> {
        match ORDERED {
            false => self.message_index.get(&(hash, 0, 0)),
            true => self.envelopes.get(&hash),
        }
        .copied()
    }

    /// Whether the duplicate limit kept out a copy that could have led anywhere new. A copy
    /// beyond the limit does what the limit's last copy of its envelope does at every state
    /// that did not take that one (copies differ only in which a state has taken), so it
    /// matters only if some state took the last copy; and there, only if delivering it
    /// reaches a state or sends a message local exploration does not have
    /// ([`Self::leads_anywhere_new`]). Under channel order, where copies also differ in their
    /// places, any copy kept out counts.
    pub(crate) fn duplicates_cut(&self) -> bool {
        if self.counts.duplicates_suppressed == 0 {
            return false;
        }
        if self.channels.on {
            return true;
        }
        // Probing costs handler runs; past as many as the exploration made (or a few
        // milliseconds' worth, where it made fewer), the cut is assumed to matter.
        let mut budget = self.counts.transitions.max(PROBE_RUNS_AT_LEAST);
        let mut probed = FxHashSet::default();
        self.messages.iter().filter(|m| !m.delivered).any(|kept_out| {
            self.beyond_matters(&kept_out.envelope, Some(kept_out.first), &mut budget, &mut probed)
        })
    }

    /// Whether a copy of `envelope` that `I+` does not have (whose first copy is `first`, if
    /// it has one) — one beyond the duplicate limit, the next one a probe's reply would add,
    /// or a reply no path sent — could lead anywhere new: only if the last copy `I+` has, if
    /// any, was taken somewhere (everywhere else the new one does what that one does), and
    /// then as [`Self::leads_anywhere_new`] finds.
    /// `probed` holds the envelopes probed so far, each once: one whose probe is under way is
    /// assumed to lead nowhere new, the assumption that probe decides, and one whose probe
    /// ended leads nowhere new (a probe that finds a copy matters ends them all).
    fn beyond_matters(
        &self,
        envelope: &Envelope<P::Msg>,
        first: Option<MsgId>,
        budget: &mut u64,
        probed: &mut FxHashSet<u128>,
    ) -> bool {
        let hash = envelope.hash();
        let last = (0..=self.duplicates).rev().find_map(|copy| self.message_index.get(&(hash, copy, 0)));
        if !last.is_none_or(|&id| self.messages[id as usize].taken) || !probed.insert(hash) {
            return false;
        }
        self.leads_anywhere_new(envelope, first, budget, probed)
    }

    /// Whether delivering a copy of `envelope` that `I+` does not have, to a state of its
    /// destination that has taken every copy `I+` has (or that taking one leaves as it was),
    /// could visit a state that is not in the node's set, or send a copy `I+` does not have of
    /// a message that matters in its turn, as [`Self::beyond_matters`] finds. A handler
    /// does not see copy numbers, so where no such step does, the copies kept out change only
    /// how often known messages are sent, never a node's set of states: the sets are closed
    /// under every delivery a real run makes, and the run is as complete as without a limit.
    /// The dining philosophers' forks, locked and released round and round by copies of the
    /// same requests, are the case in point. A probe that needs more than `budget` handler
    /// runs, reads the network, or runs out of choices to try counts as leading somewhere.
    fn leads_anywhere_new(
        &self,
        envelope: &Envelope<P::Msg>,
        first: Option<MsgId>,
        budget: &mut u64,
        probed: &mut FxHashSet<u128>,
    ) -> bool {
        let (to, hash) = (envelope.to, envelope.hash());
        let copies: Vec<MsgId> = (0..=self.duplicates)
            .filter_map(|copy| self.message_index.get(&(hash, copy, 0)).copied())
            .collect();
        // A message to itself is taken only by states whose path sent it; one that no path
        // sent reaches the state a probe made it at, which the probe does not follow.
        let sent_to_itself = match first {
            None if envelope.from == to => return true,
            first => first.filter(|_| envelope.from == to),
        };
        let states = &self.nodes[to.index()];
        for (id, state) in states.states.iter().enumerate() {
            if sent_to_itself.is_some_and(|first| states.sendings(state, first).is_none()) {
                continue;
            }
            let history = states.history(state);
            // A state that has not taken every copy the limit allows could take one of those
            // instead, which does the same — unless taking it leaves the state as it was: then
            // the copy kept out is one repetition more, whose replies count.
            let took_all = copies.iter().all(|id| history.binary_search(id).is_ok());
            let mut odometer = ChoiceOdometer::new();
            loop {
                if *budget == 0 {
                    return true;
                }
                *budget -= 1;
                let outcome =
                    self.sim.local_step(to, &state.local, LocalEvent::Deliver(envelope), &mut odometer);
                if outcome.read_network {
                    return true;
                }
                let stays = states.index.get(&outcome.next.hash()) == Some(&(id as StateId));
                if outcome.violation.is_none() && (took_all || stays) {
                    if !states.index.contains_key(&outcome.next.hash()) {
                        return true;
                    }
                    for sent in &outcome.sent {
                        let sent_hash = sent.hash();
                        if self.message_index.contains_key(&(sent_hash, self.duplicates + 1, 0)) {
                            continue; // kept out already, and probed in its turn
                        }
                        let sent_first = self.message_index.get(&(sent_hash, 0, 0)).copied();
                        if self.beyond_matters(sent, sent_first, budget, probed) {
                            return true;
                        }
                    }
                }
                if !odometer.advance() {
                    break;
                }
            }
        }
        false
    }

    /// Ends the space, whose run started at `started`: its local states and `I+`, millions of
    /// allocations after a long run, are dropped off the report's path
    /// ([`crate::teardown::release`]).
    pub(crate) fn release(self, started: Instant) {
        crate::teardown::release((self.nodes, self.messages, self.message_index), started);
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
    /// re-pointed at the states after ([`SystemState::repoint`]), which costs a fraction of a
    /// world built per combination.
    #[inline]
    pub(crate) fn world_in<'a, 'w>(
        &'a self,
        reused: &'w mut Option<SystemState<'a, P>>,
        states: &[StateId],
    ) -> &'w World<P> {
        let locals = states.iter().enumerate().map(|(n, &s)| &self.nodes[n].states[s as usize].local);
        match reused {
            Some(system) => {
                system.repoint(locals);
                system.world()
            }
            None => reused.insert(SystemState::new(self.sim, locals)).world(),
        }
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
    /// the run; `stopper` is asked before every event, since a stretch of a round may visit no
    /// new state for a long time. Returns whether anything new was visited or produced.
    pub(crate) fn round(
        &mut self,
        stopper: &Stopper,
        fresh: &mut impl FnMut(&Self, NodeId, StateId) -> ControlFlow<()>,
    ) -> ControlFlow<(), bool> {
        // Compiled once with channel order and once without, so that the loops without it test
        // nothing of it.
        match self.channels.on {
            true => self.round_in::<true>(stopper, fresh),
            false => self.round_in::<false>(stopper, fresh),
        }
    }

    /// [`Self::round`], with channel order `ORDERED` (the space's own).
    fn round_in<const ORDERED: bool>(
        &mut self,
        stopper: &Stopper,
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
            // A message a node sends itself is produced on its own path, or not at all (one in
            // flight at the start counts as sent on the way to its start state).
            let to_itself = self.messages[m].envelope.from == to;
            let (width, place) = (self.channels.width_if::<ORDERED>(), self.messages[m].place);
            let turn = self.channels.received(self.messages[m].envelope.from);
            for s in start..end {
                let states = &self.nodes[to.index()];
                if width > 0 && states.counts(s as StateId, width)[turn] > place {
                    continue; // a later message on its channel was taken already
                }
                let state = &states.states[s];
                if states.history(state).binary_search(&(m as MsgId)).is_ok() {
                    continue;
                }
                if to_itself && states.sendings(state, first).is_none() {
                    continue;
                }
                self.transition::<ORDERED>(to, s as StateId, Step::Deliver(m as MsgId), stopper, fresh)?;
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
                    self.transition::<ORDERED>(node, s as StateId, Step::Local(action), stopper, fresh)?;
                }
            }
        }
        ControlFlow::Continue(self.state_count() > states_before || self.messages.len() > messages_before)
    }

    /// Runs `step` on state `from` of `node` with every choice vector, adding what it produces.
    fn transition<const ORDERED: bool>(
        &mut self,
        node: NodeId,
        from: StateId,
        step: Step,
        stopper: &Stopper,
        fresh: &mut impl FnMut(&Self, NodeId, StateId) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        if stopper.stopped() {
            return ControlFlow::Break(());
        }
        let mut odometer = ChoiceOdometer::new();
        loop {
            self.transition_with::<ORDERED>(node, from, step, &mut odometer, fresh)?;
            if !odometer.advance() {
                return ControlFlow::Continue(());
            }
        }
    }

    fn transition_with<const ORDERED: bool>(
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
        // The next state's channel counts: the source's, with this step's sendings and
        // delivery.
        let (channels, width) = (self.channels, self.channels.width_if::<ORDERED>());
        let mut counts = std::mem::take(&mut self.next_counts);
        if ORDERED {
            counts.clear();
            counts.extend_from_slice(self.nodes[node.index()].counts(from, width));
        }
        // A message's copy number counts its sendings on the source's first path and earlier
        // in this step; its place, the sendings on its channel.
        let mut produced = Vec::with_capacity(outcome.sent.len());
        for envelope in outcome.sent {
            let hash = envelope.hash();
            let states = &self.nodes[node.index()];
            let source = &states.states[from as usize];
            let before =
                self.first_of::<ORDERED>(hash).map_or(0, |first| states.sendings(source, first).unwrap_or(0));
            let earlier =
                produced.iter().filter(|&&id| self.messages[id as usize].envelope.hash() == hash).count();
            let place = channels.send(&mut counts[..width], envelope.to);
            produced.push(self.intern(envelope, before + earlier as u32, place));
        }
        // A delivery that changed nothing stays a self-reference: the channel's next messages
        // may follow it or not, so it need not be counted.
        if let (true, Step::Deliver(m)) = (ORDERED, step) {
            let source = &self.nodes[node.index()].states[from as usize];
            if outcome.next.hash() != source.local.hash() || !produced.is_empty() {
                let message = &self.messages[m as usize];
                counts[channels.received(message.envelope.from)] = message.place + 1;
            }
        }
        let key = match ORDERED {
            true => channels.key(outcome.next.hash(), &counts),
            false => outcome.next.hash(),
        };
        self.next_counts = counts;
        let choices = &outcome.choices[..];
        let states = &mut self.nodes[node.index()];
        if key == states.key::<ORDERED>(from) {
            // A self-reference: nothing new to follow. One that sent something is kept as a
            // pointer from the state to itself, for soundness verification to take: the
            // messages it sent have no other producer.
            if !produced.is_empty() {
                states.add_pred(from, from, step, &produced, choices);
                states.merges += 1;
                if self.counts_copies {
                    match step {
                        Step::Local(_) => self.follow(node, from, from, &produced),
                        Step::Deliver(m) => self.repeat_replies(node, from, m, &produced),
                    }
                }
            }
            return ControlFlow::Continue(());
        }
        if let Some(&existing) = states.index.get(&key) {
            // A state meets each event, with each choice vector, once (messages remember how
            // far they were applied, states how far their local events were), so the pointer
            // is new: no need to look through the state's others.
            states.add_pred(from, existing, step, &produced, choices);
            states.merges += 1;
            if self.counts_copies {
                self.follow(node, from, existing, &produced);
            }
            return ControlFlow::Continue(());
        }
        let source = &states.states[from as usize];
        let sent = if produced.is_empty() {
            source.sent
        } else {
            let sendings = &mut self.sendings;
            sendings.clear();
            sendings.extend_from_slice(states.sent.get(source.sent));
            for &id in &produced {
                bump(sendings, self.messages[id as usize].first);
            }
            states.sent.intern(sendings)
        };
        // The history is the source's, with the consumed message in its place.
        let (at, len) = (source.history_at, source.history_len as usize);
        let consumed = match step {
            Step::Deliver(m) => Some(m),
            Step::Local(_) => None,
        };
        let split = consumed.map_or(len, |m| states.history(source).binary_search(&m).unwrap_err());
        let history_at = states.histories.len();
        states.histories.extend_from_within(at..at + split);
        states.histories.extend(consumed);
        states.histories.extend_from_within(at + split..at + len);
        let history_len = (len + usize::from(consumed.is_some())) as u32;
        if ORDERED {
            states.counts.extend_from_slice(&self.next_counts);
            states.keys.push(key);
        }
        let visited = LocalNode {
            local: outcome.next.into_local(&source.local),
            last_pred: NO_PRED,
            first_out: NO_PRED,
            last_out: NO_PRED,
            history_at,
            history_len,
            sent,
            local_events: source.local_events + u32::from(matches!(step, Step::Local(_))),
            depth: source.depth + 1,
        };
        let id = states.states.len() as StateId;
        states.states.push(visited);
        states.add_pred(from, id, step, &produced, choices);
        states.index.insert(key, id);
        if let Some(m) = consumed {
            self.messages[m as usize].taken = true;
        }
        if self.counts_copies && states.surplus.contains_key(&from) {
            self.follow(node, from, id, &produced);
        }
        fresh(self, node, id)
    }

    /// After a pointer from state `from` of `node` into `to` that sent `produced`: the paths
    /// through it may have sent a message more often than `to`'s first path did — round a
    /// cycle (a timer that retransmits and leaves its state as it was, two flips back to a
    /// state met before) or along another path that meets it — and those paths send the
    /// next copies. So `to` keeps the most sendings of each message any of its paths is known
    /// to have made, beyond its first path's ([`NodeStates::surplus`], up to one beyond the
    /// duplicate limit), the copies those paths send are put into `I+` ([`Self::fill`]), and
    /// a raised count is carried on to every state after `to` ([`Self::spread`]). Round a
    /// cycle the count climbs to its cap: every copy the duplicate limit allows, and one kept
    /// out. Without it, a receiver took a cycle's message only as often as the first path
    /// sent it, and a run that said every reachable world was explored had not explored them.
    fn follow(&mut self, node: NodeId, from: StateId, to: StateId, produced: &[MsgId]) {
        if self.raise(node, from, to, produced) {
            self.spread(node, to);
        }
    }

    /// [`Self::follow`] without carrying a raise on: whether `to`'s counts were raised.
    fn raise(&mut self, node: NodeId, from: StateId, to: StateId, produced: &[MsgId]) -> bool {
        let cap = self.duplicates + 2;
        let states = &self.nodes[node.index()];
        let (source, target) = (&states.states[from as usize], &states.states[to as usize]);
        let surplus = states.surplus.get(&from);
        if surplus.is_none()
            && produced.is_empty()
            && source.sent == target.sent
            && !states.surplus.contains_key(&to)
        {
            return false;
        }
        // The most sendings of each message on the paths through `from` and this step.
        let most = &mut self.sendings;
        most.clear();
        most.extend_from_slice(states.sent.get(source.sent));
        for &(first, more) in surplus.map_or(&[][..], Vec::as_slice) {
            add(most, first, more);
        }
        for &id in produced {
            add(most, self.messages[id as usize].first, 1);
        }
        let target_sent = states.sent.get(target.sent);
        let target_surplus = states.surplus.get(&to).map_or(&[][..], Vec::as_slice);
        // The common merge: two paths that sent the same, neither beyond its first path.
        // Nothing to raise, and no copies to fill.
        if surplus.is_none() && target_surplus.is_empty() && most[..] == *target_sent {
            return false;
        }
        let count = |table: &[(MsgId, u32)], first: MsgId| {
            table.binary_search_by_key(&first, |&(f, _)| f).map_or(0, |at| table[at].1)
        };
        let mut raised = Vec::new();
        for &(first, sent) in most.iter() {
            let (sent, first_path) = (sent.min(cap), count(target_sent, first));
            if sent > first_path + count(target_surplus, first) {
                raised.push((first, sent - first_path));
            }
        }
        // The copies this step sent on the paths that sent the most.
        if surplus.is_some() {
            let mut fills = Vec::new();
            for &id in produced {
                let first = self.messages[id as usize].first;
                fills.push((first, count(most, first)));
            }
            for (first, sent) in fills {
                self.fill(first, sent);
            }
        }
        if raised.is_empty() {
            return false;
        }
        let surplus = self.nodes[node.index()].surplus.entry(to).or_default();
        for (first, more) in raised {
            match surplus.binary_search_by_key(&first, |&(f, _)| f) {
                Ok(at) => surplus[at].1 = more,
                Err(at) => surplus.insert(at, (first, more)),
            }
        }
        true
    }

    /// Carries a raise of `start`'s counts on to the states after it, as far as it raises
    /// theirs. A delivery that left a state as it was and replied is not followed round: each
    /// copy of its request is taken there once ([`Self::repeat_replies`]), and its replies'
    /// copies are only filled.
    fn spread(&mut self, node: NodeId, start: StateId) {
        let mut work = vec![start];
        let mut produced = Vec::new();
        while let Some(state) = work.pop() {
            let mut out = self.nodes[node.index()].next_out(state, None);
            while let Some(SeqEvent { to, pred }) = out {
                let states = &self.nodes[node.index()];
                let p = states.pred(pred);
                produced.clear();
                produced.extend_from_slice(states.produced(p));
                if to == state && matches!(p.step, Step::Deliver(_)) {
                    let surplus = states.surplus.get(&state).map_or(&[][..], Vec::as_slice).to_vec();
                    let source = &states.states[state as usize];
                    let fills: Vec<(MsgId, u32)> = produced
                        .iter()
                        .map(|&id| {
                            let first = self.messages[id as usize].first;
                            let first_path = states.sendings(source, first).unwrap_or(0);
                            let more = surplus
                                .binary_search_by_key(&first, |&(f, _)| f)
                                .map_or(0, |at| surplus[at].1);
                            (first, first_path + more)
                        })
                        .collect();
                    for (first, sent) in fills {
                        self.fill(first, sent);
                    }
                } else if self.raise(node, state, to, &produced) {
                    work.push(to);
                }
                out = self.nodes[node.index()].next_out(state, Some(pred));
            }
        }
    }

    /// After a delivery of `m` that left state `from` of `node` as it was but sent `produced`
    /// (a reply to a request that changes nothing): the state takes every other copy of the
    /// request the same way, and each time sends its replies once more. So each such delivery
    /// raises the state's counts of its replies by what it sent, once — exactly as many times
    /// as there are copies of the requests, where following it round as a timer's
    /// self-reference gave P#'s ReplicatingStorage eighty times the states. The request
    /// counts as taken: a copy of it beyond the duplicate limit would have sent one more reply.
    fn repeat_replies(&mut self, node: NodeId, from: StateId, m: MsgId, produced: &[MsgId]) {
        self.messages[m as usize].taken = true;
        let cap = self.duplicates + 2;
        let states = &mut self.nodes[node.index()];
        let first_path = states.sent.get(states.states[from as usize].sent).to_vec();
        let surplus = states.surplus.entry(from).or_default();
        let mut fills = Vec::new();
        for &id in produced {
            let first = self.messages[id as usize].first;
            let sent = first_path.binary_search_by_key(&first, |&(f, _)| f).map_or(0, |at| first_path[at].1);
            let more = match surplus.binary_search_by_key(&first, |&(f, _)| f) {
                Ok(at) => {
                    surplus[at].1 = (surplus[at].1 + 1).min(cap.saturating_sub(sent));
                    surplus[at].1
                }
                Err(at) => {
                    surplus.insert(at, (first, 1.min(cap.saturating_sub(sent))));
                    surplus[at].1
                }
            };
            fills.push((first, sent + more));
        }
        for (first, sent) in fills {
            self.fill(first, sent);
        }
        self.spread(node, from);
    }

    /// Puts the first `sent` copies of the message whose first copy is `first` into `I+`, as
    /// far as one beyond the duplicate limit (which stays out, and bounds the run where the
    /// limit's last copy was taken).
    fn fill(&mut self, first: MsgId, sent: u32) {
        let hash = self.messages[first as usize].envelope.hash();
        for copy in 1..sent.min(self.duplicates + 2) {
            if !self.message_index.contains_key(&(hash, copy, 0)) {
                let envelope = self.messages[first as usize].envelope.clone();
                self.intern(envelope, copy, 0);
            }
        }
    }
}

/// Adds `more` sendings of the message `key` stands for to the sorted `counts`.
fn add<K: Ord + Copy>(counts: &mut Vec<(K, u32)>, key: K, more: u32) {
    match counts.binary_search_by_key(&key, |&(k, _)| k) {
        Ok(at) => counts[at].1 += more,
        Err(at) => counts.insert(at, (key, more)),
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

#[cfg(test)]
mod tests {
    //! Channel order against the global search: every local state a run reaches is still
    //! visited, and the states only a delivery after a later message makes are not.

    use super::*;
    use crate::stop::Stop;
    use foretell_model::{Driver, Model, NetworkKind, Out};
    use serde::{Deserialize, Serialize};
    use std::cell::{Cell, RefCell};
    use std::collections::{BTreeSet, HashSet};
    use std::time::Instant;

    /// Node 0, on its input, sends `A` then `B` to nodes 1 and 2. Node 1 passes `A` on to
    /// node 2. Node 2 answers its first message with `C` then `D` to node 1, which ignores `C`
    /// once it has `B` (a delivery that changes nothing, after which `D` is still its turn).
    /// Every node logs what it takes in, in order.
    struct Gossip;

    #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
    enum Msg {
        A,
        B,
        C,
        D,
    }

    type Log = Vec<(u32, Msg)>;

    impl Protocol for Gossip {
        type State = Log;
        type Msg = Msg;
        type Timer = ();
        type Input = ();

        fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> Log {
            Vec::new()
        }

        fn on_input(&self, _: NodeId, _: &mut Log, _: &(), out: &mut Out<'_, Self>) {
            out.broadcast([NodeId(1), NodeId(2)], Msg::A);
            out.broadcast([NodeId(1), NodeId(2)], Msg::B);
        }

        fn on_message(&self, me: NodeId, log: &mut Log, from: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
            if me == NodeId(1) && *msg == Msg::C && log.iter().any(|(_, m)| *m == Msg::B) {
                return;
            }
            if me == NodeId(1) && *msg == Msg::A {
                out.send(NodeId(2), Msg::A);
            }
            if me == NodeId(2) && log.is_empty() {
                out.send(NodeId(1), Msg::C);
                out.send(NodeId(1), Msg::D);
            }
            log.push((from.0, msg.clone()));
        }
    }

    /// Each node's local states (by hash) in the worlds the global search reaches.
    fn reached(sim: &Simulator<'_, Gossip>) -> Vec<BTreeSet<u128>> {
        let mut worlds = Vec::new();
        sim.initial_worlds(|_, world, _| worlds.push(world));
        let mut seen: HashSet<_> = worlds.iter().map(World::fingerprint).collect();
        let mut locals = vec![BTreeSet::new(); 3];
        let mut actions = Vec::new();
        while let Some(world) = worlds.pop() {
            for (node, local) in sim.local_states(&world).iter().enumerate() {
                locals[node].insert(local.hash());
            }
            sim.actions(&world, &mut actions);
            for &action in &actions {
                let next = sim.step(&world, action, &mut ChoiceOdometer::new(), false).world;
                if seen.insert(next.fingerprint()) {
                    worlds.push(next);
                }
            }
        }
        locals
    }

    /// Each node's local states (by hash) that local exploration visits, and node 2's logs.
    fn explored(sim: &Simulator<'_, Gossip>, channel_order: bool) -> (Vec<BTreeSet<u128>>, Vec<Log>) {
        let mut start = None;
        sim.initial_worlds(|_, world, _| start = Some(world));
        let start = start.expect("one initial world");
        let in_flight = start.messages().cloned().collect();
        let channels = Channels::new(3, channel_order);
        let mut space = LocalSpace::new(sim, sim.local_states(&start), in_flight, None, 0, channels);
        let stopper = Stopper {
            limits: Stop::new(Instant::now(), None, None),
            memory_max: None,
            calls: Cell::new(0),
            stop: Cell::new(None),
            refusal: RefCell::new(None),
        };
        let mut fresh = |_: &LocalSpace<'_, '_, Gossip>, _, _| ControlFlow::Continue(());
        while space.round(&stopper, &mut fresh) == ControlFlow::Continue(true) {}
        let hashes = space.nodes.iter().map(|n| n.states.iter().map(|s| s.local.hash()).collect()).collect();
        let logs = space.nodes[2].states.iter().map(|s| s.local.state().clone()).collect();
        (hashes, logs)
    }

    #[test]
    fn channel_order_keeps_every_reachable_local_state_and_no_out_of_turn_one() {
        // Node 2 took A from node 0 after B from node 0.
        let out_of_turn = |log: &Log| {
            let at = |msg: Msg| log.iter().position(|e| *e == (0, msg.clone()));
            at(Msg::B).is_some_and(|b| at(Msg::A).is_some_and(|a| b < a))
        };
        for kind in [NetworkKind::FifoChannels, NetworkKind::FifoInbox] {
            let model = Model::new(Gossip).nodes(3).network(kind).driver(Driver::new().input(NodeId(0), ()));
            let sim = Simulator::new(&model).unwrap();
            let runs = reached(&sim);
            let (ordered, ordered_logs) = explored(&sim, true);
            let (unordered, unordered_logs) = explored(&sim, false);
            for node in 0..3 {
                assert!(
                    runs[node].is_subset(&ordered[node]),
                    "{kind:?}: node {node} misses a reachable state"
                );
                assert!(runs[node].is_subset(&unordered[node]), "{kind:?}: node {node} (unordered)");
            }
            // Out of turn, node 2 takes A from node 0 after B: only without channel order.
            assert!(unordered_logs.iter().any(out_of_turn), "{kind:?}");
            assert!(!ordered_logs.iter().any(out_of_turn), "{kind:?}");
            let count = |sets: &[BTreeSet<u128>]| sets.iter().map(BTreeSet::len).sum::<usize>();
            assert!(count(&ordered) < count(&unordered), "{kind:?}");
        }
    }
}
