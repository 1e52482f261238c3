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
//! The network discipline is the model's: an unordered network is a multiset; a FIFO channel
//! (or inbox) offers only its oldest message; a grow-only network never loses one.

use super::explore::{LocalSpace, MsgId, StateId, Step};
use super::Stopper;
use foretell_model::{FingerprintHasher, NetworkKind, NodeId, Protocol};
use rustc_hash::{FxHashMap, FxHashSet};

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

/// Whether some real run reaches the combination `targets` — one state per node, or `None` for a
/// free node, which may be in any state — in a world where `goal` (given every node's state)
/// holds, examining at most `budget` positions.
pub(crate) fn verify<P: Protocol>(
    space: &LocalSpace<'_, '_, P>,
    kind: NetworkKind,
    targets: &[Option<StateId>],
    goal: &dyn Fn(&[StateId]) -> bool,
    budget: u64,
    stopper: &Stopper,
    counts: &mut SoundnessCounts,
) -> Soundness {
    counts.checks += 1;
    // Per node, the forward edges among the states that can still reach the target.
    let mut forward = Vec::with_capacity(targets.len());
    for (node, &target) in targets.iter().enumerate() {
        match forward_edges(space, node, target) {
            Some(edges) => forward.push(edges),
            None => return Soundness::Unsound, // the target is not reachable from the start
        }
    }
    let mut search = Search {
        space,
        kind,
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
    let mut net: Vec<MsgId> = space.initial_messages.clone();
    let found = search.go(&mut positions, &mut net);
    counts.positions += search.examined;
    if found {
        Soundness::Sound(search.order)
    } else if search.out_of_budget {
        Soundness::Abandoned
    } else {
        Soundness::Unsound
    }
}

/// The forward edges, by source state, among the states of `node` from which `target` can be
/// reached along predecessor pointers (every state for a free node); `None` if the start state
/// is not one of them.
fn forward_edges<P: Protocol>(
    space: &LocalSpace<'_, '_, P>,
    node: usize,
    target: Option<StateId>,
) -> Option<FxHashMap<StateId, Vec<SeqEvent>>> {
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
    let mut edges: FxHashMap<StateId, Vec<SeqEvent>> = FxHashMap::default();
    for &to in &reaching {
        for (i, pred) in states[to as usize].preds.iter().enumerate() {
            edges.entry(pred.from).or_default().push(SeqEvent { to, pred: i as u32 });
        }
    }
    Some(edges)
}

/// The joint search of one verification.
struct Search<'a, 's, 'm, P: Protocol> {
    space: &'a LocalSpace<'s, 'm, P>,
    kind: NetworkKind,
    targets: &'a [Option<StateId>],
    goal: &'a dyn Fn(&[StateId]) -> bool,
    forward: Vec<FxHashMap<StateId, Vec<SeqEvent>>>,
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
    fn go(&mut self, positions: &mut Vec<StateId>, net: &mut Vec<MsgId>) -> bool {
        let placed = positions.iter().zip(self.targets).all(|(p, t)| t.is_none_or(|t| *p == t));
        if placed && (self.goal)(positions) {
            return true;
        }
        if !self.seen.insert(self.position_key(positions, net)) {
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
            let Some(edges) = self.forward[node].get(&at) else { continue };
            for event in edges.clone() {
                let pred = &self.space.nodes[node].states[event.to as usize].preds[event.pred as usize];
                let consumed = match pred.step {
                    Step::Deliver(m) => match self.take(net, m) {
                        Some(at) => Some((m, at)),
                        None => continue,
                    },
                    Step::Local(_) => None,
                };
                let produced = pred.produced.len();
                net.extend_from_slice(&pred.produced);
                positions[node] = event.to;
                self.order.push((NodeId::new(node), event));
                if self.go(positions, net) {
                    return true;
                }
                self.order.pop();
                positions[node] = at;
                net.truncate(net.len() - produced);
                if let Some((m, at)) = consumed {
                    if self.kind.consumes() {
                        net.insert(at, m);
                    }
                }
                if self.out_of_budget {
                    return false;
                }
            }
        }
        false
    }

    /// Consumes `m` from `net` if the discipline offers it; the position it was taken from.
    fn take(&self, net: &mut Vec<MsgId>, m: MsgId) -> Option<usize> {
        let envelope = &self.space.messages[m as usize].envelope;
        let at = match self.kind {
            NetworkKind::Unordered | NetworkKind::GrowOnly => net.iter().position(|&x| x == m)?,
            NetworkKind::FifoChannels | NetworkKind::FifoInbox => {
                let by_channel = self.kind == NetworkKind::FifoChannels;
                let same_queue = |x: MsgId| {
                    let e = &self.space.messages[x as usize].envelope;
                    e.to == envelope.to && (!by_channel || e.from == envelope.from)
                };
                let head = net.iter().position(|&x| same_queue(x))?;
                (net[head] == m).then_some(head)?
            }
        };
        if self.kind.consumes() {
            net.remove(at);
        }
        Some(at)
    }

    /// The memo key of a position: the node states and the messages in flight, in a canonical
    /// order (a multiset sorted; FIFO queues keep their order).
    fn position_key(&self, positions: &[StateId], net: &[MsgId]) -> u128 {
        let mut canonical = net.to_vec();
        match self.kind {
            NetworkKind::Unordered | NetworkKind::GrowOnly => canonical.sort_unstable(),
            NetworkKind::FifoChannels | NetworkKind::FifoInbox => canonical.sort_by_key(|&m| {
                let e = &self.space.messages[m as usize].envelope;
                (e.to, if self.kind == NetworkKind::FifoChannels { e.from } else { e.to })
            }),
        }
        if self.kind == NetworkKind::GrowOnly {
            canonical.dedup();
        }
        FingerprintHasher::hash(&(positions, canonical))
    }
}
