//! Soundness verification: LMC's `isStateSound` and `isSequenceValid` (section 4, and the
//! hash-based check of section 4.2).
//!
//! A combination of local states may be no world any run reaches. It is sound if each node can
//! follow predecessor pointers (forwards) from its start state to its state in the combination,
//! the nodes' events interleaved so that every delivery consumes a message some earlier event
//! produced. As in the paper, no simulator runs: an event carries the identity (hash) of the
//! message it consumes and of those it produces, and a delivery is enabled when its message is
//! in the set of produced, unconsumed ones.
//!
//! Where the paper enumerates every node's event sequences and then, for each combination of
//! sequences, looks for an interleaving greedily, this searches the combinations and the
//! interleavings together: a depth-first search whose position is each node's current local
//! state and the messages in flight, restricted to the states from which a node can still reach
//! its target, and memoized on that position. It answers the same question (over every
//! predecessor pointer, not only the first path's) without enumerating sequences whose count
//! grows exponentially with depth — the cost the paper names as LMC's bottleneck (section 5.3).
//!
//! Verifications follow one another by the hundred thousand on the harder spaces, so the
//! [`Verifier`] keeps what does not change between them: a free node's forward edges (until the
//! node gains states or pointers) and each message's queue. A position's memo key mixes raw
//! numbers rather than a canonical encoding, since it never leaves the search, and the
//! network's part of it is kept current by each change ([`super::in_flight`]).
//!
//! The network discipline is the model's: an unordered network is a multiset; a FIFO channel
//! (or inbox) offers only its oldest message; a grow-only network never loses one.

use super::explore::{LocalSpace, StateId, Step};
use super::in_flight::{step, InFlight, SEED};
use super::Stopper;
use foretell_model::{NetworkKind, NodeId, Protocol};
use rustc_hash::{FxHashMap, FxHashSet};
use std::ops::Range;
use std::rc::Rc;

/// One event of a node: the state it leads to and which of that state's predecessors it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SeqEvent {
    pub(crate) to: StateId,
    pub(crate) pred: u32,
}

/// The outcome of verifying one combination.
pub(crate) enum Soundness {
    /// A valid interleaving: (node, event) in order.
    Sound(Vec<(NodeId, SeqEvent)>),
    /// No run reaches the combination.
    Unsound,
    /// The search budget (or the run's time) ran out first.
    Abandoned,
}

/// Counts of soundness verification.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SoundnessCounts {
    pub(crate) checks: u64,
    /// Positions (node states and messages in flight) the searches examined.
    pub(crate) positions: u64,
}

/// Soundness verification across the preliminary violations of one exploration: its counts,
/// and what stays valid from one verification to the next while the local space does not
/// change (the forward edges of free nodes, the queue of each message).
#[derive(Default)]
pub(crate) struct Verifier {
    pub(crate) counts: SoundnessCounts,
    /// Per node: every forward edge, for the node when it is free, with the space's version
    /// it was built for.
    free: Vec<Option<(SpaceVersion, Rc<Edges>)>>,
    /// Per message of `I+`: the queue it waits in (destination, and sender on FIFO channels).
    queues: Vec<u32>,
}

impl Verifier {
    /// A verifier that goes on from `counts`.
    pub(crate) fn new(counts: SoundnessCounts) -> Self {
        Verifier { counts, ..Verifier::default() }
    }

    /// Whether some real run reaches the combination `targets` — one state per node, or `None`
    /// for a free node, which may be in any state — in a world where `goal` (given every node's
    /// state) holds, examining at most `budget` positions.
    pub(crate) fn verify<P: Protocol>(
        &mut self,
        space: &LocalSpace<'_, '_, P>,
        kind: NetworkKind,
        targets: &[Option<StateId>],
        goal: &dyn Fn(&[StateId]) -> bool,
        budget: u64,
        stopper: &Stopper,
    ) -> Soundness {
        self.counts.checks += 1;
        // Per node, the forward edges among the states that can still reach the target.
        let mut forward = Vec::with_capacity(targets.len());
        for (node, &target) in targets.iter().enumerate() {
            let edges = match target {
                Some(target) => forward_edges(space, node, Some(target)).map(Rc::new),
                None => Some(self.free_edges(space, node)),
            };
            match edges {
                Some(edges) => forward.push(edges),
                None => return Soundness::Unsound, // the target is not reachable from the start
            }
        }
        self.update_queues(space, kind);
        let mut search = Search {
            space,
            targets,
            goal,
            forward,
            seen: FxHashSet::default(),
            budget,
            examined: 0,
            stopper,
            order: Vec::new(),
            out_of_budget: false,
        };
        let mut positions = vec![0 as StateId; targets.len()];
        let mut net = InFlight::new(kind, &self.queues, &space.initial_messages);
        let found = search.go(&mut positions, &mut net);
        self.counts.positions += search.examined;
        if found {
            Soundness::Sound(search.order)
        } else if search.out_of_budget {
            Soundness::Abandoned
        } else {
            Soundness::Unsound
        }
    }

    /// Every forward edge of `node`, built again only when the node has new states or the
    /// space new predecessor pointers.
    fn free_edges<P: Protocol>(&mut self, space: &LocalSpace<'_, '_, P>, node: usize) -> Rc<Edges> {
        let version = (space.nodes[node].states.len(), space.counts.merges);
        if self.free.len() <= node {
            self.free.resize_with(node + 1, || None);
        }
        match &self.free[node] {
            Some((built, edges)) if *built == version => Rc::clone(edges),
            _ => {
                let edges = Rc::new(forward_edges(space, node, None).expect("a free node reaches itself"));
                self.free[node] = Some((version, Rc::clone(&edges)));
                edges
            }
        }
    }

    /// Extends the queue of each message to the messages `I+` gained.
    fn update_queues<P: Protocol>(&mut self, space: &LocalSpace<'_, '_, P>, kind: NetworkKind) {
        let nodes = space.nodes.len() as u32;
        let by_channel = kind == NetworkKind::FifoChannels;
        let new = space.messages[self.queues.len()..].iter().map(|m| {
            let e = &m.envelope;
            e.to.index() as u32 * nodes + if by_channel { e.from.index() as u32 } else { 0 }
        });
        self.queues.extend(new);
    }
}

/// What a node's predecessor pointers depend on: its number of states, and the predecessor
/// pointers added to states already visited.
type SpaceVersion = (usize, u64);

/// The forward edges of one node's states: for each source state, the events that leave it.
pub(crate) struct Edges {
    /// Source state to its range in `events`.
    by_source: FxHashMap<StateId, (u32, u32)>,
    events: Vec<SeqEvent>,
}

impl Edges {
    /// The range in `events` of the events that leave `state`.
    fn from(&self, state: StateId) -> Range<usize> {
        self.by_source.get(&state).map_or(0..0, |&(start, end)| start as usize..end as usize)
    }
}

/// The forward edges, by source state, among the states of `node` from which `target` can be
/// reached along predecessor pointers (every state for a free node); `None` if the start state
/// is not one of them.
fn forward_edges<P: Protocol>(
    space: &LocalSpace<'_, '_, P>,
    node: usize,
    target: Option<StateId>,
) -> Option<Edges> {
    let states = &space.nodes[node].states;
    let mut reaching = FxHashSet::default();
    let mut stack = Vec::new();
    match target {
        Some(target) => {
            reaching.insert(target);
            stack.push(target);
        }
        None => reaching.extend(0..states.len() as StateId),
    }
    while let Some(state) = stack.pop() {
        for pred in &states[state as usize].preds {
            if reaching.insert(pred.from) {
                stack.push(pred.from);
            }
        }
    }
    if !reaching.contains(&0) {
        return None;
    }
    let mut sourced: Vec<(StateId, SeqEvent)> = Vec::new();
    for &to in &reaching {
        for (i, pred) in states[to as usize].preds.iter().enumerate() {
            sourced.push((pred.from, SeqEvent { to, pred: i as u32 }));
        }
    }
    // A canonical order (the set's iteration order is not), so that searches are repeatable.
    sourced.sort_unstable_by_key(|&(from, e)| (from, e.to, e.pred));
    let mut by_source = FxHashMap::default();
    let mut start = 0;
    for (i, &(from, _)) in sourced.iter().enumerate() {
        if i + 1 == sourced.len() || sourced[i + 1].0 != from {
            by_source.insert(from, (start as u32, i as u32 + 1));
            start = i + 1;
        }
    }
    Some(Edges { by_source, events: sourced.into_iter().map(|(_, e)| e).collect() })
}

/// The joint search of one verification.
struct Search<'a, 's, 'm, P: Protocol> {
    space: &'a LocalSpace<'s, 'm, P>,
    targets: &'a [Option<StateId>],
    goal: &'a dyn Fn(&[StateId]) -> bool,
    forward: Vec<Rc<Edges>>,
    /// Positions already explored without success.
    seen: FxHashSet<u128>,
    budget: u64,
    examined: u64,
    stopper: &'a Stopper,
    /// The events taken so far (the interleaving, once found).
    order: Vec<(NodeId, SeqEvent)>,
    out_of_budget: bool,
}

impl<P: Protocol> Search<'_, '_, '_, P> {
    /// Whether the targets are reachable from `positions` with `net` in flight.
    fn go(&mut self, positions: &mut Vec<StateId>, net: &mut InFlight<'_>) -> bool {
        let placed = positions.iter().zip(self.targets).all(|(p, t)| t.is_none_or(|t| *p == t));
        if placed && (self.goal)(positions) {
            return true;
        }
        if !self.seen.insert(position_key(positions, net)) {
            return false;
        }
        self.examined += 1;
        if self.examined > self.budget || self.stopper.stopped() {
            self.out_of_budget = true;
            return false;
        }
        for node in 0..positions.len() {
            let at = positions[node];
            if self.targets[node] == Some(at) {
                continue;
            }
            for i in self.forward[node].from(at) {
                let event = self.forward[node].events[i];
                let pred = &self.space.nodes[node].states[event.to as usize].preds[event.pred as usize];
                let consumed = match pred.step {
                    Step::Deliver(m) => match net.take(m) {
                        Some(at) => Some((m, at)),
                        None => continue,
                    },
                    Step::Local(_) => None,
                };
                for &m in &*pred.produced {
                    net.push(m);
                }
                positions[node] = event.to;
                self.order.push((NodeId::new(node), event));
                if self.go(positions, net) {
                    return true;
                }
                self.order.pop();
                positions[node] = at;
                for _ in 0..pred.produced.len() {
                    net.pop();
                }
                if let Some((m, at)) = consumed {
                    net.put_back(at, m);
                }
                if self.out_of_budget {
                    return false;
                }
            }
        }
        false
    }
}

/// The memo key of a position: the node states in order and the key of the messages in flight
/// (already mixed). Up to four nodes the states are the digits of one 128-bit number, which is
/// exact; beyond, they are chained through the mixer.
fn position_key(positions: &[StateId], net: &InFlight<'_>) -> u128 {
    let placed = if positions.len() <= 4 {
        positions.iter().fold(0u128, |h, &state| (h << 32) | u128::from(state))
    } else {
        positions.iter().fold(SEED, |h, &state| step(h, state.into()))
    };
    placed ^ net.key()
}
