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
//! one of its targets, and memoized on that position. A node's targets are a set
//! ([`Place`]): one search answers for a group of combinations at once (see
//! [`super::combine`]). It answers the same question (over every
//! predecessor pointer, not only the first path's) without enumerating sequences whose count
//! grows exponentially with depth — the cost the paper names as LMC's bottleneck (section 5.3).
//!
//! The search deepens iteratively: each pass takes at most a bound of events, the first as
//! many as the nodes' first paths to their nearest targets take together, each next one a
//! quarter more, until a pass finds an interleaving or ends without the bound cutting any
//! position (then none exists). Without a bound, a depth-first search whose nodes can go round
//! cycles of local states, each round sending messages that pile up in the network, follows
//! such a cycle for as long as its budget lasts and may never come back to the short run
//! beside it (RandTree's recovery timers did this to its `update-sibling` violation, which was
//! left undecided after millions of positions). The passes' memo keeps, per position, the most
//! events it had left when explored, so a position met again with more left is explored again.
//!
//! A search costs what it examines, not the size of the space: local exploration keeps each
//! state's forward pointers ([`super::explore::NodeStates::next_out`]), a node's place comes with
//! the states that can reach its targets, kept current from one verification to the next
//! rather than walked afresh ([`super::reach`]), and the [`Verifier`] keeps each message's
//! queue from one verification to the next. A position's memo key mixes raw numbers rather
//! than a canonical encoding, since it never leaves the search, and the network's part of it
//! is kept current by each change, in constant time ([`super::in_flight`]).
//!
//! The network discipline is the model's: an unordered network is a multiset; a FIFO channel
//! (or inbox) offers only its oldest message; a grow-only network never loses one. What is in
//! flight are envelopes, not copies: local exploration numbers the copies of an envelope a
//! path sends (so that a node may take it more than once), but on the wire they are one
//! message, and a delivery of any copy takes whichever is there
//! ([`super::explore::LocalSpace::token`]).

use super::combine::Place;
pub(crate) use super::explore::SeqEvent;
use super::explore::{LocalSpace, MsgId, PredId, StateId, Step};
use super::in_flight::{step, InFlight, SEED};
use super::state_set::StateSet;
use super::Stopper;
use foretell_model::{NetworkKind, NodeId, Protocol};
use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;

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
/// the queue of each message (which does not change), and room reused from one verification
/// to the next.
#[derive(Default)]
pub(crate) struct Verifier {
    pub(crate) counts: SoundnessCounts,
    /// Per message of `I+`: the queue it waits in (destination, and sender on FIFO channels).
    queues: Vec<u32>,
    /// The positions one search has examined, each with the most events it had left to take
    /// there, kept (emptied) for the next one's.
    seen: FxHashMap<u128, u32>,
}

impl Verifier {
    /// A verifier that goes on from `counts`.
    pub(crate) fn new(counts: SoundnessCounts) -> Self {
        Verifier { counts, ..Verifier::default() }
    }

    /// Whether some real run reaches a combination of `targets` — each node in one of the
    /// states its place allows, moving only through the states its place says can reach
    /// them — in a world where `goal` (given every node's state) holds, examining at most
    /// `budget` positions.
    pub(crate) fn verify<P: Protocol>(
        &mut self,
        space: &LocalSpace<'_, '_, P>,
        kind: NetworkKind,
        targets: &[Place],
        goal: &dyn Fn(&[StateId]) -> bool,
        budget: u64,
        stopper: &Stopper,
    ) -> Soundness {
        self.counts.checks += 1;
        let reaching: Vec<Option<&StateSet>> = targets.iter().map(Place::reach).collect();
        // A node none of whose targets is reachable from its start: no run at all.
        if !reaching.iter().all(|reach| reach.is_none_or(|reach| reach.contains(0))) {
            return Soundness::Unsound;
        }
        self.update_queues(space, kind);
        let initial: Vec<MsgId> = space.initial_messages.iter().map(|&m| space.token(m)).collect();
        let mut examined = 0;
        let mut bound = first_bound(space, targets);
        let verdict = loop {
            self.seen.clear();
            let mut search = Search {
                space,
                targets,
                goal,
                reaching: &reaching,
                seen: &mut self.seen,
                budget: budget.saturating_sub(examined),
                examined: 0,
                bound,
                cut: false,
                stopper,
                order: Vec::new(),
                out_of_budget: false,
            };
            let mut positions = vec![0 as StateId; targets.len()];
            let mut net = InFlight::new(kind, &self.queues, &initial);
            let found = search.go(&mut positions, &mut net);
            examined += search.examined;
            if found {
                break Soundness::Sound(search.order);
            } else if search.out_of_budget {
                break Soundness::Abandoned;
            } else if !search.cut {
                break Soundness::Unsound;
            }
            bound = deeper(bound);
        };
        self.counts.positions += examined;
        verdict
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

/// The joint search of one verification.
struct Search<'a, 's, 'm, P: Protocol> {
    space: &'a LocalSpace<'s, 'm, P>,
    targets: &'a [Place],
    goal: &'a dyn Fn(&[StateId]) -> bool,
    /// Per node with targets, the states that can still reach one: only events into them are
    /// taken. A node without targets takes every event.
    reaching: &'a [Option<&'a StateSet>],
    /// Positions already explored without success, with the most events left to take there.
    seen: &'a mut FxHashMap<u128, u32>,
    budget: u64,
    examined: u64,
    /// The most events an interleaving may have in this pass.
    bound: u32,
    /// Whether the bound stopped some position from being explored.
    cut: bool,
    stopper: &'a Stopper,
    /// The events taken so far (the interleaving, once found).
    order: Vec<(NodeId, SeqEvent)>,
    out_of_budget: bool,
}

/// How [`Search::enter`] left a position.
enum Entered {
    /// Every node is placed and the goal holds: the search is over.
    Found,
    /// Nothing to explore from here: seen before, or the budget ran out.
    Closed,
    /// To be explored.
    Open,
}

/// A position on the search's path: which of its events comes next, and how to take back the
/// one being explored below it.
struct Frame {
    /// The node whose events are being tried, and the last of them tried (a forward pointer
    /// of the node's state; `None` before the first).
    node: usize,
    tried: Option<PredId>,
    taken: Option<Taken>,
}

/// What taking an event changed: the node's state before it, the messages it produced (pushed
/// last), and the message it consumed.
struct Taken {
    node: usize,
    from: StateId,
    produced: usize,
    consumed: Option<MsgId>,
}

impl<P: Protocol> Search<'_, '_, '_, P> {
    /// Whether the targets are reachable from `positions` with `net` in flight.
    ///
    /// A node placed in a target state may still move on, to another target or (round a cycle)
    /// back, sending what others may need; a node whose graph has no cycle has no edge left at
    /// its last target, since the forward edges lead only to states that reach a target.
    ///
    /// The path is a stack of [`Frame`]s on the heap, not the call stack: its depth is bounded
    /// only by the pass's bound, which can be far deeper than a thread's stack allows.
    /// When it answers `false`, `positions` and `net` are left wherever the search stopped.
    fn go(&mut self, positions: &mut [StateId], net: &mut InFlight<'_>) -> bool {
        match self.enter(positions, net, 0) {
            Entered::Found => return true,
            Entered::Closed => return false,
            Entered::Open => {}
        }
        let mut path = vec![self.frame()];
        while let Some(frame) = path.last_mut() {
            if let Some(taken) = frame.taken.take() {
                self.take_back(taken, positions, net);
                if self.out_of_budget {
                    return false;
                }
            }
            let Some(taken) = self.take_next(frame, positions, net) else {
                path.pop();
                continue;
            };
            frame.taken = Some(taken);
            match self.enter(positions, net, path.len() as u32) {
                Entered::Found => return true,
                Entered::Closed => {}
                Entered::Open => path.push(self.frame()),
            }
        }
        false
    }

    /// A position's frame, before its first event.
    fn frame(&self) -> Frame {
        Frame { node: 0, tried: None, taken: None }
    }

    /// Counts a position reached after `depth` events, and says whether to explore it.
    fn enter(&mut self, positions: &[StateId], net: &InFlight<'_>, depth: u32) -> Entered {
        // A position explored before with at least as many events left was no success then,
        // nor below it.
        let left = self.bound.saturating_sub(depth);
        match self.seen.entry(position_key(positions, net)) {
            Entry::Occupied(entry) if *entry.get() >= left => return Entered::Closed,
            Entry::Occupied(mut entry) => *entry.get_mut() = left,
            Entry::Vacant(entry) => {
                entry.insert(left);
            }
        }
        let placed = positions.iter().zip(self.targets).all(|(&p, t)| t.admits(p));
        if placed && (self.goal)(positions) {
            return Entered::Found;
        }
        self.examined += 1;
        if self.examined > self.budget || self.stopper.stopped() {
            self.out_of_budget = true;
            return Entered::Closed;
        }
        if left == 0 {
            self.cut = true;
            return Entered::Closed;
        }
        Entered::Open
    }

    /// Takes the next enabled event of `frame`'s position (nodes in order, each node's events
    /// in order), moving the cursor past it; `None` when none is left.
    fn take_next(
        &mut self,
        frame: &mut Frame,
        positions: &mut [StateId],
        net: &mut InFlight<'_>,
    ) -> Option<Taken> {
        while frame.node < positions.len() {
            let node = frame.node;
            let at = positions[node];
            let states = &self.space.nodes[node];
            let reaching = self.reaching[node];
            while let Some(event) = states.next_out(at, frame.tried) {
                frame.tried = Some(event.pred);
                if reaching.is_some_and(|reach| !reach.contains(event.to)) {
                    continue;
                }
                let pred = states.pred(event.pred);
                let consumed = match pred.step {
                    Step::Deliver(m) => match self.space.token(m) {
                        token if net.take(token) => Some(token),
                        _ => continue,
                    },
                    Step::Local(_) => None,
                };
                let produced = states.produced(pred);
                for &m in produced {
                    net.push(self.space.token(m));
                }
                positions[node] = event.to;
                self.order.push((NodeId::new(node), event));
                return Some(Taken { node, from: at, produced: produced.len(), consumed });
            }
            frame.node += 1;
            frame.tried = None;
        }
        None
    }

    /// Undoes `taken`, in the reverse order of [`Search::take_next`].
    fn take_back(&mut self, taken: Taken, positions: &mut [StateId], net: &mut InFlight<'_>) {
        self.order.pop();
        positions[taken.node] = taken.from;
        for _ in 0..taken.produced {
            net.pop();
        }
        if let Some(m) = taken.consumed {
            net.put_back(m);
        }
    }
}

/// The bound of the first pass: as many events as the first paths to the nearest targets take
/// together, the length of the run in which each node follows its first path (if their events
/// interleave).
fn first_bound<P: Protocol>(space: &LocalSpace<'_, '_, P>, targets: &[Place]) -> u32 {
    let nearest = |(node, place): (usize, &Place)| match place {
        Place::Free => 0,
        Place::AnyOf { targets, .. } => {
            let states = &space.nodes[node].states;
            targets.iter().map(|state| states[state as usize].depth).min().unwrap_or(0)
        }
    };
    targets.iter().enumerate().map(nearest).fold(0, u32::saturating_add).max(1)
}

/// The bound of the pass after one with `bound` that the bound cut: a quarter deeper, so that
/// the passes' cost is dominated by the last one's and an interleaving found is longer than the
/// shortest by at most about a quarter (or than the first pass's bound).
fn deeper(bound: u32) -> u32 {
    bound.saturating_add(1 + bound / 4)
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
