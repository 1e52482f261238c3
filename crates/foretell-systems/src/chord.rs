//! Chord as Mace implemented it (`services/Chord/Chord.mac` at r1116, the file MaceMC model
//! checked and CrystalBall ran; spec section 4 of `mace-systems-and-state-counts.md`), with the
//! predecessor-is-self bug of CrystalBall (NSDI'09, section 4.2.2) and MaceMC's PASTRY 2
//! partition (NSDI'07, section 7.4) as variants.
//!
//! # Identifiers
//! Mace hashes each address with SHA-1 onto a 32-bit ring; here node `i` has the fixed key
//! [`IDS`]`[i]` on a [`BITS`]` = 5`-bit ring (32 positions): nodes 0, 1, 2 at 0, 13, 26, node 3
//! at 6 (between nodes 0 and 1) and node 4 at 19 (between nodes 1 and 2), so later joiners
//! insert themselves inside the ring. Finger tables keep `BITS` entries (`fingerKeys[i] = key +
//! 2^i`) and the successor list [`MAX_SUCCESSORS`]` = 2` (4 in Mace). Mace's
//! `KeyRange::containsKey(k, s, e)` (here [`in_arc`]) takes `s == e` as the whole ring, which
//! the code relies on for a lone node but which also fires when a node sits exactly on another
//! node's finger key or right after its predecessor: on a 32-bit ring that practically never
//! happens; on a 3-bit ring the `ring` schedule never stabilized four nodes (node 0's first
//! finger, exactly on node 3's key, was taken over at every registration). The keys above differ
//! pairwise by no `±2^i`; 5 bits is the smallest ring that has five such keys.
//!
//! # Handlers
//! `maceInit` is [`Protocol::init`] (predecessor and every finger the node itself, the arc the
//! whole ring) and also runs after a reset. `joinOverlay` is the `JoinOverlay` startup input:
//! MaceMC's `SimOverlayRouterApp` with `RANDOM_LESSER` lets node 0 start the ring alone and each
//! node `i > 0` join through a random node `j < i`; here `j` is always node 0 (so node 0 is every
//! node's `source_`). The `deliver` upcalls are [`Protocol::on_message`], in Mace's transition
//! order: `find_pred` (while not joined, answer `remove` unless it is a join straight from its
//! asker; route it when joined; queue the join request otherwise), `remove`, `find_pred_reply` (joining:
//! take the replier as predecessor, send `update_pred` to its successor, join; joined: learn
//! the replier, correct it, Chord17), `get_pred`, `get_pred_reply` (from the successor only) and
//! `update_pred`. The `error` upcall is [`Protocol::on_transport_error`] (and `remove`): the
//! node forgets the peer in its predecessor, successor list and fingers (each finger naming it
//! takes the next finger's node, the top one the node itself) and refills the successor list.
//! Timers: `stabilize` (asks the successor for its predecessor), `fix_fingers` (looks up a
//! finger key chosen by [`Out::choose`] among the `BITS`), `recovery` (asks `source_` again)
//! and the one-shot `join`; the first three are Mace `recur` timers, re-armed whether or not
//! their guard holds. Mace's `ASSERT` in `nexthop` is the local assertion
//! `"nexthop finds a finger"`.
//!
//! # Environment
//! MaceMC's TCP: [`NetworkKind::FifoChannels`], each channel holding at most `queue` messages
//! (a send to a full channel is lost, as MaceMC's `route()` refusing it beyond `queue_size`;
//! MaceMC's Chord tests used 100000, which would make the space infinite here because recurring
//! timers keep sending). At most `resets` node resets and `socket-errors` bidirectional socket
//! errors; any node may reset (a reset also loses the node's messages to itself, as MaceMC's
//! `maceReset` clears the local queue).
//!
//! # Properties
//! Chord.mac's: safety `successorAndPredecessor` (a node that is its own predecessor is its own
//! successor) and `predecessorNonNullSafety` (a node's arc starts just after its predecessor);
//! liveness `nodesJoined`, `allNodes` (the successor chain from every node visits every node),
//! `predecessorNonNull`, `successorReflexive` (every node is its successor's predecessor) and
//! `allNodesReachable` (routing from every node reaches every node).
//!
//! # Variants
//! - `pred-self` (CrystalBall 4.2.2): the `update_pred` guard accepts any sender while the
//!   predecessor is null, the node itself included. A node C that resets and rejoins through A
//!   before A has handled the RST gets A's reply naming C (its old incarnation) as A's successor,
//!   so C sends `update_pred` to itself; a socket error then makes C forget A (predecessor null,
//!   fingers all C), `recovery` makes C learn A again as its successor, and the loopback
//!   `update_pred` makes C its own predecessor: `successorAndPredecessor` fails. The fix
//!   (default) adds to the guard: not from the node itself unless its successor is itself.
//! - `partition` (MaceMC's PASTRY 2 on Chord): after socket errors each side's `error` upcall
//!   erases every predecessor, finger and successor-list entry naming the other side, and the
//!   maintenance timers only contact nodes in those tables (`stabilize` the successor,
//!   `fix_fingers` a finger's `nexthop`; `join` only runs while joining). Chord.mac's `recovery`
//!   transition, which sends `find_pred` to `source_` whatever the tables say, is the only way
//!   back; the variant is the joining `find_pred_reply` transition not arming `recovery`, so the
//!   sides stay apart for good: `allNodes`, `predecessorNonNull`, `successorReflexive` and
//!   `allNodesReachable` never hold again (`nodesJoined` still does).
//!
//! # Simplified
//! A finger is the node it names (its hash is the node's key), and `max_successor` is computed
//! from the successor list rather than stored. `findQueue` is a set, emptied once replayed
//! (Mace keeps the replayed entries, which nothing reads again). The debugging `printer` timer
//! and Mace's soft `EXPECT` are left out.
//!
//! # Scenarios
//! `ring`: every node joins in node order and then stabilizes, each step's messages delivered
//! at once, until every liveness property holds (6, 13, 19 and 26 steps for 2 to 5 nodes).
//! `crystalball`: CrystalBall's starting state, the ring of A, B, C (nodes 0, 1, 2) after B
//! resets and A and C handle its RST, so that A's successor is C; with two nodes the ring of A
//! and C already is that state. BFS finds `pred-self` ten steps from either.

use crate::{Param, ScenarioInfo, Settings, System, Variant};
use foretell_check::DynModel;
use foretell_model::{
    Action, Budget, Driver, Event, EventOf, Faults, FixedChoices, Model, NetworkKind, NodeId, Out, Protocol,
    Scenario, Simulator, World,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A position on the identifier ring: `0..RING`.
pub type Key = u8;

/// The identifier length in bits (Mace's `BITS`, 32 there): the ring has `2^BITS` positions and a
/// finger table has `BITS` entries.
pub const BITS: usize = 5;

/// The number of ring positions.
const RING: u8 = 1 << BITS;

/// The fixed key of each node (Mace hashes the address with SHA-1): no two differ by `±2^i`,
/// nodes 0, 1, 2 sit at thirds of the ring, node 3 between nodes 0 and 1, node 4 between nodes
/// 1 and 2.
pub const IDS: [Key; 5] = [0, 13, 26, 6, 19];

/// The length of the successor list (Mace's `MAX_SUCCESSORS`, 4 there).
pub const MAX_SUCCESSORS: usize = 2;

/// The identifier of `node`.
pub fn key_of(node: NodeId) -> Key {
    IDS[node.index()]
}

/// `key + offset` on the ring.
fn add(key: Key, offset: u8) -> Key {
    (key + offset) % RING
}

/// Mace's `KeyRange::containsKey(key, start, end)`: the half-open arc `[start, end)` walked
/// clockwise; `start == end` is the whole ring.
pub fn in_arc(key: Key, start: Key, end: Key) -> bool {
    match start.cmp(&end) {
        std::cmp::Ordering::Equal => true,
        std::cmp::Ordering::Less => start <= key && key < end,
        std::cmp::Ordering::Greater => key >= start || key < end,
    }
}

/// `fingerKeys[i]` of `node`: the key its finger `i` should be responsible for.
fn finger_key(node: NodeId, i: usize) -> Key {
    add(key_of(node), 1 << i)
}

/// Where a node is in joining the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Status {
    /// Started, `joinOverlay` not yet called.
    Init,
    /// Looking for its predecessor through the bootstrap node.
    Joining,
    /// In the ring.
    Joined,
}

/// A `find_pred` request: who wants the predecessor of which key, and whether it is a join.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Lookup {
    /// The key whose predecessor is wanted.
    pub id: Key,
    /// The node that asked.
    pub who: NodeId,
    /// Whether the asker is joining.
    pub joining: bool,
}

/// A node's state (Mace's state variables; a finger is the node it names, its hash being the
/// node's fixed identifier).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// `state`.
    pub status: Status,
    /// `source_`: the bootstrap node (`None` before `joinOverlay`).
    pub source: Option<NodeId>,
    /// `predecessor` (`None` is Mace's null finger).
    pub predecessor: Option<NodeId>,
    /// `myfinger`: `fingers[0]` is the successor.
    pub fingers: [NodeId; BITS],
    /// `successor_list`, at most [`MAX_SUCCESSORS`] nodes.
    pub successors: BTreeSet<NodeId>,
    /// `myRange.first`: the node's arc of the ring is `[range_first, own key)`.
    pub range_first: Key,
    /// `findQueue`: join requests that reached the node before it joined.
    pub find_queue: BTreeSet<Lookup>,
}

/// Messages (Mace's, with fingers as node names).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Msg {
    /// `find_pred`: routed towards the predecessor of a key.
    FindPred(Lookup),
    /// `find_pred_reply`: the predecessor's key (`None` in a correction) and its successor.
    FindPredReply {
        /// `predId`: the replier's key.
        pred_id: Option<Key>,
        /// `echoId`: the key that was looked up.
        echo_id: Key,
        /// `successor`: the replier's successor.
        successor: NodeId,
    },
    /// `get_pred`: stabilization asks the successor for its predecessor.
    GetPred {
        /// The asker's key.
        id: Key,
    },
    /// `get_pred_reply`: the predecessor, the successor list and a likely successor of the asker.
    GetPredReply {
        /// `predecessor` (`None` for a null finger).
        predecessor: Option<NodeId>,
        /// `successors`.
        successors: BTreeSet<NodeId>,
        /// `likelySuccessor`.
        likely_successor: NodeId,
    },
    /// `update_pred`: the sender may be the receiver's predecessor.
    UpdatePred {
        /// The sender's key.
        id: Key,
    },
    /// `remove`: forget the sender.
    Remove,
}

/// Timers, in Mace's declaration order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Timer {
    /// `stabilize` (recurring, 100 ms).
    Stabilize,
    /// `fix_fingers` (recurring, 200 ms).
    FixFingers,
    /// `recovery` (recurring, 60 s).
    Recovery,
    /// `join` (one-shot, 500 ms, re-armed while joining).
    Join,
}

/// Mace's timer periods, in milliseconds (foretell's time is abstract: any armed timer may fire).
const STABILIZE_MS: u64 = 100;
const FIX_FINGERS_MS: u64 = 200;
const RECOVERY_MS: u64 = 60_000;
const JOIN_MS: u64 = 500;

/// Driver inputs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Input {
    /// `joinOverlay(peers)`: the first peer is the bootstrap node; none means "start the ring".
    JoinOverlay(Vec<NodeId>),
}

/// The bug variants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Bug {
    /// The fixed protocol.
    #[default]
    None,
    /// `update_pred` from the node itself is accepted when the predecessor is null.
    PredSelf,
    /// No `recovery` timer: a partition is never healed.
    Partition,
}

/// The protocol.
#[derive(Clone, Debug)]
pub struct Chord {
    bug: Bug,
}

impl State {
    /// `getSuccessor()`.
    pub fn successor(&self) -> NodeId {
        self.fingers[0]
    }

    /// Mace's `nexthop(target, strictlyPred)` at node `me`: the node to route a lookup for
    /// `target` to (with `strictly_pred`, the node to ask for the predecessor of `target`).
    /// `None` where Mace asserts that a finger must lie before the target.
    pub fn next_hop(&self, me: NodeId, target: Key, strictly_pred: bool) -> Option<NodeId> {
        let mine = key_of(me);
        if in_arc(target, self.range_first, mine) {
            if !strictly_pred {
                return Some(me);
            }
            if let Some(pred) = self.predecessor {
                return Some(pred);
            }
            return Some(self.fingers.iter().rev().copied().find(|f| *f != me).unwrap_or(me));
        }
        if in_arc(target, add(mine, 1), add(key_of(self.successor()), 1)) {
            return Some(if strictly_pred { me } else { self.successor() });
        }
        self.fingers.iter().rev().copied().find(|f| in_arc(key_of(*f), add(mine, 1), target))
    }

    /// `getLikelySuccessor(key)`: walks the fingers down from the top while `key` lies between
    /// the candidate and the next finger, starting from the predecessor.
    fn likely_successor(&self, key: Key) -> NodeId {
        let mut candidate = self.predecessor.unwrap_or(self.fingers[BITS - 1]);
        for &finger in self.fingers.iter().rev() {
            if !in_arc(key, key_of(candidate), key_of(finger)) {
                break;
            }
            candidate = finger;
        }
        candidate
    }

    /// `max_successor`: the successor-list entry farthest along the ring from `me`.
    fn max_successor(&self, me: NodeId) -> Option<NodeId> {
        let distance = |n: &NodeId| (key_of(*n) + RING - add(key_of(me), 1)) % RING;
        self.successors.iter().copied().max_by_key(distance)
    }

    /// `update_successor_list(peer)`.
    fn update_successor_list(&mut self, me: NodeId, peer: NodeId) {
        if self.successors.contains(&peer) {
            return;
        }
        if self.successors.len() < MAX_SUCCESSORS {
            self.successors.insert(peer);
        } else if let Some(max) = self.max_successor(me) {
            if in_arc(key_of(peer), add(key_of(me), 1), key_of(max)) {
                self.successors.remove(&max);
                self.successors.insert(peer);
            }
        }
    }

    /// `register_knowledge(peer)`: the successor list, then every finger `peer` is a better
    /// match for.
    fn register(&mut self, me: NodeId, peer: NodeId) {
        self.update_successor_list(me, peer);
        let (start, end) = (add(key_of(me), 1), add(key_of(peer), 1));
        for i in (0..BITS).take_while(|&i| in_arc(finger_key(me, i), start, end)) {
            if in_arc(key_of(peer), finger_key(me, i), key_of(self.fingers[i])) {
                self.fingers[i] = peer;
            }
        }
    }

    /// The `error` upcall (also run on `remove`): forget `peer` everywhere, let each finger
    /// that named it take the next finger's node, and refill the successor list.
    fn forget(&mut self, me: NodeId, peer: NodeId) {
        let mut register_predecessor = true;
        if self.predecessor == Some(peer) {
            self.predecessor = None;
            register_predecessor = false;
        }
        self.successors.remove(&peer);
        if self.fingers[BITS - 1] == peer {
            self.fingers[BITS - 1] = me;
        }
        for i in (0..BITS - 1).rev() {
            if self.fingers[i] == peer {
                self.fingers[i] = self.fingers[i + 1];
            }
        }
        if let Some(pred) = self.predecessor.filter(|_| register_predecessor) {
            self.register(me, pred);
        }
        for i in 0..BITS {
            if self.fingers[i] == me || self.successors.len() >= MAX_SUCCESSORS {
                break;
            }
            self.successors.insert(self.fingers[i]);
        }
        for node in self.successors.clone() {
            self.register(me, node);
        }
    }
}

impl Chord {
    /// A `find_pred` for the node's own key, joining or not.
    fn own_lookup(me: NodeId, joining: bool) -> Msg {
        Msg::FindPred(Lookup { id: key_of(me), who: me, joining })
    }

    /// `find_pred` at a joined node: answer the asker if this node is the key's predecessor,
    /// otherwise forward the request.
    fn route_lookup(me: NodeId, state: &State, lookup: Lookup, out: &mut Out<'_, Self>) {
        let hop = state.next_hop(me, lookup.id, true);
        out.require(hop.is_some(), "nexthop finds a finger");
        let hop = hop.unwrap_or(me);
        if hop != me {
            out.send(hop, Msg::FindPred(lookup));
        } else if lookup.who != me {
            let successor = state.successor();
            out.send(
                lookup.who,
                Msg::FindPredReply { pred_id: Some(key_of(me)), echo_id: lookup.id, successor },
            );
        }
    }

    /// The three `find_pred` transitions: a node that is not joined tells anyone but a joining
    /// asker to remove it; a joined node routes; a node not yet joined queues the join request.
    fn on_find_pred(me: NodeId, state: &mut State, from: NodeId, lookup: Lookup, out: &mut Out<'_, Self>) {
        if state.status != Status::Joined && (!lookup.joining || lookup.who != from) {
            out.send(from, Msg::Remove);
        } else if state.status == Status::Joined {
            Self::route_lookup(me, state, lookup, out);
        } else {
            state.find_queue.insert(lookup);
        }
    }

    /// `find_pred_reply` while joining: the replier is the predecessor. Tell its successor about
    /// this node with `update_pred` (a loopback when that successor is this node itself), join,
    /// arm the maintenance timers and serve the join requests queued meanwhile.
    fn on_join_reply(
        &self,
        me: NodeId,
        state: &mut State,
        from: NodeId,
        pred_id: Key,
        successor: NodeId,
        out: &mut Out<'_, Self>,
    ) {
        state.register(me, successor);
        out.send(successor, Msg::UpdatePred { id: key_of(me) });
        state.predecessor = Some(from);
        state.register(me, from);
        state.range_first = add(pred_id, 1);
        state.status = Status::Joined;
        if self.bug != Bug::Partition {
            out.set_timer(Timer::Recovery, RECOVERY_MS);
        }
        out.set_timer(Timer::Stabilize, STABILIZE_MS);
        out.set_timer(Timer::FixFingers, FIX_FINGERS_MS);
        for lookup in std::mem::take(&mut state.find_queue) {
            Self::route_lookup(me, state, lookup, out);
        }
    }

    /// `find_pred_reply` at a joined node (a `fix_fingers` or `recovery` answer, or a
    /// correction): learn the replier, correct a replier that has the wrong successor for this
    /// node's key, and clear a self-predecessor once another node is known (Chord17).
    fn on_lookup_reply(
        me: NodeId,
        state: &mut State,
        from: NodeId,
        pred_id: Option<Key>,
        echo_id: Key,
        successor: NodeId,
        out: &mut Out<'_, Self>,
    ) {
        if pred_id.is_some() {
            if state.predecessor == Some(me) {
                state.predecessor = None;
            }
            state.register(me, from);
        }
        if echo_id == key_of(me) {
            if successor == me {
                return;
            }
            out.send(from, Msg::FindPredReply { pred_id: None, echo_id: key_of(me), successor: me });
        }
        if state.predecessor == Some(me) && successor != me {
            state.predecessor = None;
            state.register(me, successor);
        }
    }

    /// `get_pred_reply` from the successor: learn its successor list; unless it already names
    /// this node as its predecessor, learn its predecessor and likely successor and send
    /// `update_pred` to the (possibly new) successor.
    fn on_stabilize_reply(
        me: NodeId,
        state: &mut State,
        predecessor: Option<NodeId>,
        successors: &BTreeSet<NodeId>,
        likely_successor: NodeId,
        out: &mut Out<'_, Self>,
    ) {
        for &node in successors {
            state.register(me, node);
        }
        if predecessor == Some(me) {
            return;
        }
        state.register(me, likely_successor);
        if let Some(pred) = predecessor {
            state.register(me, pred);
        }
        out.send(state.successor(), Msg::UpdatePred { id: key_of(me) });
    }

    /// The `update_pred` guard: joined, and the predecessor is null or the sender's key lies
    /// between the predecessor and this node. The fix adds: not from this node itself unless
    /// its successor is itself too.
    fn accepts_update_pred(&self, me: NodeId, state: &State, from: NodeId, id: Key) -> bool {
        let closer = state.predecessor.is_none_or(|p| in_arc(id, add(key_of(p), 1), key_of(me)));
        let from_self_ok = self.bug == Bug::PredSelf || from != me || state.successor() == me;
        state.status == Status::Joined && closer && from_self_ok
    }

    /// `update_pred`, accepted: tell the old predecessor about the new one, and take the sender.
    fn on_update_pred(me: NodeId, state: &mut State, from: NodeId, id: Key, out: &mut Out<'_, Self>) {
        if let Some(old) = state.predecessor {
            let reply = Msg::GetPredReply {
                predecessor: Some(from),
                successors: state.successors.clone(),
                likely_successor: state.likely_successor(key_of(old)),
            };
            out.send(old, reply);
        }
        state.predecessor = Some(from);
        state.range_first = add(id, 1);
        state.register(me, from);
    }
}

impl Protocol for Chord {
    type State = State;
    type Msg = Msg;
    type Timer = Timer;
    type Input = Input;

    /// `maceInit`: the node is its own predecessor and every finger; its arc is the whole ring.
    fn init(&self, me: NodeId, _: &mut Out<'_, Self>) -> State {
        State {
            status: Status::Init,
            source: None,
            predecessor: Some(me),
            fingers: [me; BITS],
            successors: BTreeSet::new(),
            range_first: key_of(me),
            find_queue: BTreeSet::new(),
        }
    }

    /// `joinOverlay` (in `init` only): with no peer (or itself first) the node starts the ring;
    /// otherwise it asks the first peer for its predecessor and arms `join` to ask again.
    fn on_input(&self, me: NodeId, state: &mut State, input: &Input, out: &mut Out<'_, Self>) {
        let Input::JoinOverlay(peers) = input;
        if state.status != Status::Init {
            return;
        }
        let source = peers.first().copied().unwrap_or(me);
        state.source = Some(source);
        if source == me {
            state.status = Status::Joined;
            out.set_timer(Timer::Stabilize, STABILIZE_MS);
            out.set_timer(Timer::FixFingers, FIX_FINGERS_MS);
        } else {
            state.status = Status::Joining;
            out.send(source, Self::own_lookup(me, true));
            out.set_timer(Timer::Join, JOIN_MS);
        }
    }

    fn on_timer(&self, me: NodeId, state: &mut State, timer: &Timer, out: &mut Out<'_, Self>) {
        let joined = state.status == Status::Joined;
        match timer {
            Timer::Join => {
                if let (Status::Joining, Some(source)) = (state.status, state.source) {
                    out.send(source, Self::own_lookup(me, true));
                    out.set_timer(Timer::Join, JOIN_MS);
                }
            }
            Timer::Recovery => {
                out.set_timer(Timer::Recovery, RECOVERY_MS);
                if let Some(source) = state.source.filter(|s| joined && *s != me) {
                    out.send(source, Self::own_lookup(me, false));
                }
            }
            Timer::Stabilize => {
                out.set_timer(Timer::Stabilize, STABILIZE_MS);
                if joined && state.successor() != me {
                    out.send(state.successor(), Msg::GetPred { id: key_of(me) });
                }
            }
            Timer::FixFingers => {
                out.set_timer(Timer::FixFingers, FIX_FINGERS_MS);
                if joined && state.predecessor != Some(me) && state.successor() != me {
                    let key = finger_key(me, out.choose(BITS));
                    let hop = state.next_hop(me, key, true);
                    out.require(hop.is_some(), "nexthop finds a finger");
                    if let Some(hop) = hop.filter(|h| *h != me) {
                        out.send(hop, Msg::FindPred(Lookup { id: key, who: me, joining: false }));
                    }
                }
            }
        }
    }

    fn on_message(&self, me: NodeId, state: &mut State, from: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
        let joined = state.status == Status::Joined;
        match msg {
            Msg::FindPred(lookup) => Self::on_find_pred(me, state, from, *lookup, out),
            Msg::Remove => state.forget(me, from),
            &Msg::FindPredReply { pred_id, echo_id, successor } => match (state.status, pred_id) {
                (Status::Joining, Some(pred_id)) => {
                    self.on_join_reply(me, state, from, pred_id, successor, out)
                }
                (Status::Joined, _) => {
                    Self::on_lookup_reply(me, state, from, pred_id, echo_id, successor, out)
                }
                _ => {}
            },
            &Msg::GetPred { id } => {
                if joined {
                    let reply = Msg::GetPredReply {
                        predecessor: state.predecessor,
                        successors: state.successors.clone(),
                        likely_successor: state.likely_successor(id),
                    };
                    out.send(from, reply);
                }
            }
            Msg::GetPredReply { predecessor, successors, likely_successor } => {
                if joined && from == state.successor() {
                    Self::on_stabilize_reply(me, state, *predecessor, successors, *likely_successor, out);
                }
            }
            &Msg::UpdatePred { id } => {
                if self.accepts_update_pred(me, state, from, id) {
                    Self::on_update_pred(me, state, from, id, out);
                }
            }
        }
    }

    /// The transport's `error` upcall, for a reset peer or a socket error.
    fn on_transport_error(&self, me: NodeId, state: &mut State, peer: NodeId, _: &mut Out<'_, Self>) {
        state.forget(me, peer);
    }
}

/// The nodes the successor chain from `from` visits (Mace's `n.(getSuccessor().getId())*`).
fn successor_closure(world: &World<Chord>, from: NodeId) -> BTreeSet<NodeId> {
    let mut seen = BTreeSet::new();
    let mut node = from;
    while seen.insert(node) {
        node = world.state(node).successor();
    }
    seen
}

/// Whether routing a lookup for `to`'s key hop by hop (`getNextHop`) from `from` reaches `to`.
fn routes_to(world: &World<Chord>, from: NodeId, to: NodeId) -> bool {
    let mut seen = BTreeSet::new();
    let mut node = from;
    while node != to {
        if !seen.insert(node) {
            return false;
        }
        let state = world.state(node);
        if state.status == Status::Joined {
            node = state.next_hop(node, key_of(to), false).unwrap_or(node);
        }
    }
    true
}

/// Every node with its state.
fn nodes(world: &World<Chord>) -> impl Iterator<Item = (NodeId, &State)> {
    world.states().enumerate().map(|(i, s)| (NodeId::new(i), s))
}

/// `successorAndPredecessor`: a node that is its own predecessor is its own successor.
fn successor_and_predecessor(world: &World<Chord>) -> bool {
    nodes(world).all(|(n, s)| s.predecessor != Some(n) || s.successor() == n)
}

/// `predecessorNonNullSafety`: a joined node's arc starts just after its predecessor.
fn predecessor_matches_range(world: &World<Chord>) -> bool {
    nodes(world).all(|(n, s)| match s.predecessor {
        Some(pred) if pred != n && s.status != Status::Init => add(key_of(pred), 1) == s.range_first,
        _ => true,
    })
}

/// `nodesJoined`.
fn nodes_joined(world: &World<Chord>) -> bool {
    world.states().all(|s| s.status == Status::Joined)
}

/// `allNodes`: the successor chain from every node visits every node.
fn all_nodes(world: &World<Chord>) -> bool {
    NodeId::all(world.node_count()).all(|n| successor_closure(world, n).len() == world.node_count())
}

/// `predecessorNonNull`.
fn predecessor_non_null(world: &World<Chord>) -> bool {
    world.states().all(|s| s.predecessor.is_some())
}

/// `successorReflexive`: every node is its successor's predecessor.
fn successor_reflexive(world: &World<Chord>) -> bool {
    nodes(world).all(|(n, s)| world.state(s.successor()).predecessor == Some(n))
}

/// `allNodesReachable`: from every node, routing reaches every node.
fn all_nodes_reachable(world: &World<Chord>) -> bool {
    let all = NodeId::all(world.node_count());
    all.clone().all(|from| all.clone().all(|to| routes_to(world, from, to)))
}

/// Whether every liveness property holds: the ring is whole and consistent.
pub fn live(world: &World<Chord>) -> bool {
    nodes_joined(world)
        && all_nodes(world)
        && predecessor_non_null(world)
        && successor_reflexive(world)
        && all_nodes_reachable(world)
}

/// A configuration of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// The node count, 2 to 5.
    pub nodes: usize,
    /// Node resets allowed.
    pub resets: u32,
    /// Bidirectional socket errors allowed.
    pub socket_errors: u32,
    /// The messages each FIFO channel holds (MaceMC's TCP `queue_size`).
    pub queue: usize,
    /// The variant.
    pub bug: Bug,
}

impl Default for Config {
    fn default() -> Self {
        Config { nodes: 2, resets: 1, socket_errors: 1, queue: 1, bug: Bug::None }
    }
}

/// The `joinOverlay` peers of `node`: none for node 0, which starts the ring; node 0 for every
/// other node (MaceMC's `RANDOM_LESSER` bootstrap, with the lesser node fixed to 0).
pub fn bootstrap_peers(node: NodeId) -> Vec<NodeId> {
    if node.index() == 0 {
        Vec::new()
    } else {
        vec![NodeId(0)]
    }
}

/// The model: `config.nodes` nodes over FIFO channels of capacity `config.queue`, each node's
/// `joinOverlay` a startup input, at most `config.resets` node resets and
/// `config.socket_errors` socket errors; the safety properties `successorAndPredecessor` and
/// `predecessorNonNullSafety`, and the liveness properties `nodesJoined`, `allNodes`,
/// `predecessorNonNull`, `successorReflexive` and `allNodesReachable`.
pub fn model(config: Config) -> Model<Chord> {
    let driver = NodeId::all(config.nodes)
        .fold(Driver::new(), |driver, n| driver.startup(n, Input::JoinOverlay(bootstrap_peers(n))));
    let faults = Faults::none()
        .resets(Budget::at_most(config.resets))
        .socket_errors(Budget::at_most(config.socket_errors));
    Model::new(Chord { bug: config.bug })
        .nodes(config.nodes)
        .network(NetworkKind::FifoChannels)
        .queue_capacity(config.queue)
        .faults(faults)
        .driver(driver)
        .always("successorAndPredecessor", successor_and_predecessor)
        .always("predecessorNonNullSafety", predecessor_matches_range)
        .eventually("nodesJoined", nodes_joined)
        .eventually("allNodes", all_nodes)
        .eventually("predecessorNonNull", predecessor_non_null)
        .eventually("successorReflexive", successor_reflexive)
        .eventually("allNodesReachable", all_nodes_reachable)
}

/// The most stabilization rounds the `ring` schedule runs.
const RING_ROUNDS: usize = 8;

/// The most deliveries one flush of the `ring` schedule makes.
const FLUSH_LIMIT: usize = 200;

/// A fixed schedule run on a fault-free copy of a model, recording the events it takes.
struct Schedule<'m> {
    sim: Simulator<'m, Chord>,
    world: World<Chord>,
    events: Vec<EventOf<Chord>>,
    actions: Vec<Action>,
}

impl<'m> Schedule<'m> {
    fn new(model: &'m Model<Chord>) -> Option<Self> {
        let sim = Simulator::new(model).ok()?;
        let (world, ..) = sim.init_with(&mut FixedChoices::new(&[]), false);
        Some(Schedule { sim, world, events: Vec::new(), actions: Vec::new() })
    }

    /// Takes `event` (whose handler makes no choice), then delivers the messages in flight, the
    /// first deliverable one first, until none is left. `None` if an event is not enabled or the
    /// messages never run out.
    fn run(&mut self, event: EventOf<Chord>) -> Option<()> {
        self.take(event)?;
        for _ in 0..FLUSH_LIMIT {
            self.sim.actions(&self.world, &mut self.actions);
            let Some(&deliver) = self.actions.iter().find(|a| matches!(a, Action::Deliver(_))) else {
                return Some(());
            };
            self.take(self.sim.event(&self.world, deliver))?;
        }
        None
    }

    fn take(&mut self, event: EventOf<Chord>) -> Option<()> {
        let action = self.sim.find_action(&self.world, &event)?;
        self.world = self.sim.step(&self.world, action, &mut FixedChoices::new(&[]), false).world;
        self.events.push(event);
        Some(())
    }
}

/// The events of the `ring` scenario: each node in turn gets `joinOverlay` and the messages it
/// causes are delivered; then, round by round, every node's `stabilize` fires (its messages
/// delivered likewise) until every liveness property holds. `None` if that never happens
/// within [`RING_ROUNDS`] rounds.
fn ring_events(config: Config) -> Option<Vec<EventOf<Chord>>> {
    let model = model(Config { resets: 0, socket_errors: 0, ..config });
    let mut schedule = Schedule::new(&model)?;
    for node in NodeId::all(config.nodes) {
        schedule.run(Event::Input { node, input: Input::JoinOverlay(bootstrap_peers(node)) })?;
    }
    for _ in 0..RING_ROUNDS {
        if live(&schedule.world) {
            break;
        }
        for node in NodeId::all(config.nodes) {
            schedule.run(Event::Timer { node, timer: Timer::Stabilize })?;
        }
    }
    live(&schedule.world).then_some(schedule.events)
}

/// Scenario `name` of a model with this configuration (`ring` or `crystalball`), or `None`.
pub fn scenario(name: &str, config: Config) -> Option<Scenario<Chord>> {
    let after_ring = match name {
        "ring" => Vec::new(),
        "crystalball" => crystalball_events(config.nodes),
        _ => return None,
    };
    let events = ring_events(config)?.into_iter().chain(after_ring);
    Some(events.fold(Scenario::new(name), Scenario::then))
}

/// CrystalBall's B (node 1) resets and its ring neighbours A (node 0) and C (node 2) take the
/// RST, so that A, with three nodes, has C as its successor. Nothing with two nodes, whose ring
/// already is A and C.
fn crystalball_events(nodes: usize) -> Vec<EventOf<Chord>> {
    if nodes < 3 {
        return Vec::new();
    }
    let (a, b, c) = (NodeId(0), NodeId(1), NodeId(2));
    vec![
        Event::Reset { node: b },
        Event::TransportError { node: a, peer: b },
        Event::TransportError { node: c, peer: b },
    ]
}

const PARAMS: &[Param] = &[
    Param {
        name: "nodes",
        default: "2",
        help: "nodes (2 to 5); node 0 starts the ring, the others join through it",
    },
    Param { name: "resets", default: "1", help: "node resets (0 to 3)" },
    Param { name: "socket-errors", default: "1", help: "bidirectional socket errors (0 to 3)" },
    Param {
        name: "queue",
        default: "1",
        help: "messages each FIFO channel holds; a send to a full one is lost (1 to 4)",
    },
];

const VARIANTS: &[Variant] = &[
    Variant {
        name: "pred-self",
        help:
            "update_pred from the node itself is accepted while the predecessor is null (CrystalBall 4.2.2)",
    },
    Variant {
        name: "partition",
        help: "no recovery timer: after socket errors split the ring, the sides never find each other again",
    },
];

const SCENARIOS: &[ScenarioInfo] = &[
    ScenarioInfo {
        needs: &[],
        name: "ring",
        help: "every node joined, in a correct, stable ring (a live world)",
    },
    ScenarioInfo {
        needs: &[],
        name: "crystalball",
        help: "CrystalBall 4.2.2's start: the ring, then (3+ nodes) node 1's reset, seen by nodes 0 and 2",
    },
];

/// The model `settings` describe, with its protocol type (what the registry's `build` erases,
/// and what cluster mode needs).
///
/// # Errors
/// A [`crate::ConfigError`] for a bad parameter or an unknown scenario.
pub fn from_settings(settings: &Settings) -> Result<Model<Chord>, crate::ConfigError> {
    let bug = if settings.is("pred-self") {
        Bug::PredSelf
    } else if settings.is("partition") {
        Bug::Partition
    } else {
        Bug::None
    };
    let config = Config {
        nodes: settings.number("nodes", 2..=5)?,
        resets: settings.number("resets", 0..=3)? as u32,
        socket_errors: settings.number("socket-errors", 0..=3)? as u32,
        queue: settings.number("queue", 1..=4)?,
        bug,
    };
    crate::apply_scenario(model(config), settings, |name| scenario(name, config))
}

fn build(settings: &Settings) -> Result<Box<dyn DynModel>, crate::ConfigError> {
    Ok(Box::new(from_settings(settings)?))
}

/// The registry entry.
pub fn system() -> System {
    System {
        name: "chord",
        about: "Mace's Chord on a 5-bit ring over TCP-like channels with resets and socket errors",
        params: PARAMS,
        variants: VARIANTS,
        scenarios: SCENARIOS,
        build,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use foretell_check::{Check, CheckOptions, Completion, Report, Status};
    use foretell_model::Trace;

    const LIVENESS: [&str; 5] =
        ["nodesJoined", "allNodes", "predecessorNonNull", "successorReflexive", "allNodesReachable"];

    fn config(nodes: usize, resets: u32, socket_errors: u32, bug: Bug) -> Config {
        Config { nodes, resets, socket_errors, bug, ..Config::default() }
    }

    fn from(name: &str, config: Config) -> Model<Chord> {
        model(config).start_from(scenario(name, config).expect("the scenario exists"))
    }

    fn bfs(model: &Model<Chord>, depth: Option<usize>) -> Report {
        let check = Check::bfs(model);
        let report = match depth {
            Some(depth) => check.depth_max(depth).run(),
            None => check.run(),
        };
        println!("{report}");
        report
    }

    /// Asserts a violation of `property` whose trace has `steps` steps (a scenario's included)
    /// and replays; returns the trace.
    fn assert_found(model: &Model<Chord>, report: &Report, property: &str, steps: usize) -> Trace {
        let violation = report.assert_violated(property);
        println!("{}", violation.trace.to_text(false));
        assert_eq!(violation.trace.steps.len(), steps);
        Simulator::new(model).unwrap().replay(&violation.trace).expect("replays");
        violation.trace.clone()
    }

    /// Whether the joined nodes fall into two or more groups that know nothing of each other
    /// (no predecessor, finger or successor-list entry names a node of another group) while
    /// nothing is in flight.
    fn forgotten(world: &World<Chord>) -> bool {
        let mut group: Vec<usize> = (0..world.node_count()).collect();
        let root = |group: &[usize], mut n: usize| {
            while group[n] != n {
                n = group[n];
            }
            n
        };
        for (n, state) in nodes(world) {
            let known =
                state.predecessor.into_iter().chain(state.fingers).chain(state.successors.iter().copied());
            for m in known {
                let (a, b) = (root(&group, n.index()), root(&group, m.index()));
                group[a] = b;
            }
        }
        let groups = (0..world.node_count()).filter(|&n| root(&group, n) == n).count();
        nodes_joined(world)
            && groups > 1
            && world.messages().len() == 0
            && world.pending_transport_errors().is_empty()
    }

    /// CrystalBall's trace on two nodes from the initial world: C (node 1) joins through A
    /// (node 0), resets and rejoins before A handles the RST, so A names C as its successor and
    /// C sends `update_pred` to itself; a socket error makes C forget A (predecessor null, every
    /// finger itself), `recovery` makes it learn A again as its successor, and the loopback then
    /// makes C its own predecessor.
    #[test]
    fn pred_self_is_found_from_the_initial_world() {
        let model = model(config(2, 1, 1, Bug::PredSelf));
        let report = bfs(&model, Some(15));
        assert_found(&model, &report, "successorAndPredecessor", 15);
        assert_eq!(report.stats.unique_states, 30_304);
    }

    /// The fix rejects the loopback: nothing within the same bound.
    #[test]
    fn fixed_version_holds_within_the_pred_self_bound() {
        let report = bfs(&model(Config::default()), Some(15));
        report.assert_holds("successorAndPredecessor").assert_holds("predecessorNonNullSafety");
        assert_eq!(report.stats.unique_states, 43_513);
    }

    /// The default configuration's whole space: every liveness property is reachable and no
    /// safety property is violated.
    #[test]
    #[cfg_attr(debug_assertions, ignore = "6 s in a debug build; runs in the release-mode test command")]
    fn fixed_version_holds_in_the_whole_default_space() {
        let report = bfs(&model(Config::default()), None);
        assert_eq!(report.completion, Completion::Exhausted);
        report.assert_holds("successorAndPredecessor").assert_holds("predecessorNonNullSafety");
        for property in LIVENESS {
            report.assert_covered(property);
        }
        assert_eq!((report.stats.unique_states, report.stats.max_depth), (209_006, 33));
    }

    /// Without faults the two-node space is small, whole rings are reachable, and nothing is
    /// violated.
    #[test]
    fn liveness_is_reachable_without_faults() {
        let report = bfs(&model(config(2, 0, 0, Bug::None)), None);
        assert_eq!(report.completion, Completion::Exhausted);
        report.assert_holds("successorAndPredecessor").assert_holds("predecessorNonNullSafety");
        for property in LIVENESS {
            report.assert_covered(property);
        }
        assert_eq!((report.stats.unique_states, report.stats.max_depth), (2_080, 22));
    }

    /// CrystalBall 4.2.2 from its starting state: with two nodes (A, C) that is the ring, with
    /// three (A, B, C) the ring after B's reset; C resets and the same ten steps follow. The
    /// fixed version holds within the same bound.
    #[test]
    fn pred_self_is_found_from_crystalball() {
        for (nodes, resets, ring, states, fixed_states) in
            [(2, 1, 6, 6_527, 7_357), (3, 2, 16, 153_662, 156_576)]
        {
            let config = config(nodes, resets, 1, Bug::PredSelf);
            let model = from("crystalball", config);
            let report = bfs(&model, Some(10));
            let trace = assert_found(&model, &report, "successorAndPredecessor", ring + 10);
            assert_eq!(trace.scenario.as_ref().map(|s| s.steps), Some(ring));
            assert_eq!(report.stats.unique_states, states, "{nodes} nodes");
            let report = bfs(&from("crystalball", Config { bug: Bug::None, ..config }), Some(10));
            report.assert_holds("successorAndPredecessor");
            assert_eq!(report.stats.unique_states, fixed_states, "{nodes} nodes, fixed");
        }
    }

    /// MaceMC's PASTRY 2 on Chord: a socket error splits the two-node ring and each node forgets
    /// the other. Without `recovery` nothing ever joins them again (the whole space from there
    /// never has a whole ring); with it, the ring is whole again.
    #[test]
    fn partition_is_forgotten_for_good_without_recovery() {
        let config = config(2, 0, 1, Bug::Partition);
        let model = from("ring", config).always("sides remember each other", |w| !forgotten(w));
        let report = bfs(&model, None);
        let trace = assert_found(&model, &report, "sides remember each other", 9);
        let split =
            Scenario::from_trace(&Simulator::new(&model).unwrap(), "split", &trace, trace.steps.len())
                .unwrap();
        let dead = model_from(config, &split);
        let report = bfs(&dead, None);
        assert_eq!(report.completion, Completion::Exhausted);
        assert_eq!(report.status("ring whole again"), Some(Status::NotCovered));
        for property in ["allNodes", "predecessorNonNull", "successorReflexive", "allNodesReachable"] {
            assert_ne!(report.status(property), Some(Status::Covered), "{property} holds again");
        }
        assert_eq!(report.stats.unique_states, 2);
        let report = bfs(&model_from(Config { bug: Bug::None, ..config }, &split), None);
        report.assert_covered("ring whole again");
        assert_eq!(report.stats.unique_states, 294);
    }

    fn model_from(config: Config, start: &Scenario<Chord>) -> Model<Chord> {
        model(config).start_from(start.clone()).sometimes("ring whole again", all_nodes)
    }

    /// The schedule reaches a live ring for every node count; `crystalball` adds B's reset for
    /// three nodes or more and needs a reset in the budget.
    #[test]
    fn scenarios_resolve_and_the_ring_is_live() {
        for (nodes, ring_steps) in [(2, 6), (3, 13), (4, 19), (5, 26)] {
            let config = config(nodes, 1, 0, Bug::None);
            assert_eq!(scenario("ring", config).unwrap().steps().len(), ring_steps);
            let extra = if nodes >= 3 { 3 } else { 0 };
            assert_eq!(scenario("crystalball", config).unwrap().steps().len(), ring_steps + extra);
            let report = bfs(&from("ring", config), Some(0));
            for property in LIVENESS {
                report.assert_covered(property);
            }
            Simulator::new(&from("crystalball", config)).expect("resolves");
        }
        let no_reset = config(3, 0, 0, Bug::None);
        assert!(Simulator::new(&from("crystalball", no_reset)).is_err());
        assert!(scenario("nope", Config::default()).is_none());
    }

    #[test]
    fn registry_builds_every_variant_and_scenario_and_rejects_bad_settings() {
        let system = system();
        for variant in [None, Some("pred-self"), Some("partition")] {
            let settings = system.settings(variant, &[]).unwrap();
            assert!((system.build)(&settings).is_ok());
        }
        for info in SCENARIOS {
            let mut settings = system.settings(None, &[("resets".into(), "2".into())]).unwrap();
            settings.start = Some(system.scenario_start(info.name).unwrap());
            let model = (system.build)(&settings).unwrap();
            assert_eq!(model.summary().start.as_deref(), Some(info.name));
            let options = CheckOptions { depth_max: Some(0), ..CheckOptions::default() };
            assert!(model.check(&options).is_ok());
        }
        assert!(matches!(system.scenario_start("nope"), Err(crate::ConfigError::UnknownScenario { .. })));
        let settings = system.settings(None, &[("nodes".into(), "6".into())]).unwrap();
        assert!(matches!((system.build)(&settings), Err(crate::ConfigError::BadValue { .. })));
    }
}
