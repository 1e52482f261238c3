//! Chord with a lookup of an out-of-range key, the P# liveness benchmark of FMCAD'17 "Lasso
//! Detection using Partial-State Caching" (section VI, Table II), ported from
//! `shared/specs/psharp-benchmarks.md`, section 2 (P#'s `LivenessBenchmarks/BuggyBenchmarks/Chord`).
//!
//! A cluster manager configures a three-node Chord ring (ids 0, 1 and 3 of an 8-id space,
//! stored keys 1, 2 and 6) and a client makes up to five requests: a lookup of a random key
//! (the manager hands it to the ring), the creation of a new node, or the termination of one.
//! The buggy client also looks up key 17, which lies outside the id space: the nodes with ids 0
//! and 3 then forward the lookup to each other forever, and the client never gets its answer.
//!
//! # Nodes
//! Node 0 is the `ClusterManager` (also P#'s environment: its `InitOnEntry` is
//! [`Protocol::init`], which sends each ring node its `Config` and the client its `Config`, here
//! `ClientConfig`).
//! Nodes 1, 2 and 3 are the `ChordNode`s with ids 0, 1 and 3 (the manager's `ChordNodes[0..3]`).
//! Node 4 is the `Client`. Node 5 is a spare `ChordNode` slot: foretell has a fixed node
//! count, so P#'s `CreateMachine(ChordNode)` on `CreateNewNode` takes the spare slot, which
//! waits unconfigured (as a created node does) and nothing addresses before the manager sends
//! it `Join`. One spare is enough: the client stays in `Waiting` for good after it asks for a
//! new node or a termination (nothing answers those requests), so it asks at most once.
//!
//! # Encoding
//! Every node has a P# inbox ([`NetworkKind::FifoInbox`]). A sender field that always equals
//! the message's source (`QueryId`, `FindPredecessor`, `NotifySuccessor`, `AskForKeys`,
//! `JoinAck`, and the manager in `Config` and `Join`) is the envelope's `from`; `FindSuccessor`
//! keeps its `sender` because forwarding preserves it. P#'s unhandled-event error is the local
//! assertion `"unhandled event"`; a halted node drops whatever reaches it. The finger table is
//! a vector in insertion order, the enumeration order of the C# dictionary, which decides
//! which finger a lookup picks. A `ChordNode` in `Init` defers `AskForKeys`, `NotifySuccessor`
//! and `Stabilize` by keeping them in its state; `Config` (P#'s raise of `Local`, a goto to
//! `Waiting`) handles them in order in the same step. As in P#, `Join` does not leave `Init`,
//! so a joined node defers those events for good; its key set, which P# leaves null, is empty.
//! No handler needs P#'s preemption inside it, so every handler runs whole.
//!
//! P#'s `Random()` is `choose(2) == 0`. The client's `GetNextQueryKey` (a coin per key, the
//! first heads wins, rescanned until one wins) is cut after [`SCANS_MAX`] scans, when it takes
//! the last key: a cut with probability 2^-32. The manager's picks toss a coin per candidate
//! and keep the *last* heads, rescanning until it names a free id (`CreateNewNode`) or an
//! index that is also a node id (`TerminateNode`: the P# code compares an index of
//! `ChordNodes` with the ids, so only `ChordNodes[0]` and `[1]` can be terminated). Their
//! outcome is candidate `i` with probability proportional to `2^i`, which one `choose` over
//! those weights draws exactly: no cut, and a few successors instead of the `2^8` coin
//! vectors per scan of a literal encoding.
//!
//! # Phases
//! [`Protocol::phase`] is the P# machine state: the manager's one state, the ring node's
//! `Init`, `Waiting` or halted, the client's `Init` or `Waiting` (`Querying` is left at once
//! by a raise). Keys, fingers and the query counter are left out, as in P#'s default hash; so
//! are the deferred events, whose names P# would see in the inbox.
//!
//! # Monitor
//! [`LookupAnswered`] is the spec's `LivenessMonitor`: the client's step that sends
//! `FindSuccessor` to the manager is `NotifyClientRequest` (cold `Responded` to hot
//! `Requested`), and its delivery of `FindSuccessorResp` is `NotifyClientResponse` (back to
//! `Responded`).
//!
//! # Variants
//! - `bug: true` (the benchmark): the client's key list holds 17 besides 1, 2 and 6. A lookup
//!   of 17 ping-pongs between the nodes with ids 0 and 3 while the monitor stays hot: a fair
//!   cycle whose world repeats exactly.
//! - `bug: false`: the fixed twin, which leaves 17 out of the key list.

use foretell_model::{
    Event, Model, Monitor, NetworkKind, NodeId, Observation, Out, Protocol, Temperature, World,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, VecDeque};

/// The cluster manager.
pub const MANAGER: NodeId = NodeId(0);

/// The client.
pub const CLIENT: NodeId = NodeId(4);

/// The spare `ChordNode` slot that the manager's `CreateNewNode` takes.
pub const SPARE: NodeId = NodeId(5);

/// The ids of the initial ring nodes, nodes `1..=3` in order (the manager's `NodeIds`).
pub const NODE_IDS: [u32; 3] = [0, 1, 3];

/// The keys stored in the ring, which the client also looks up.
pub const STORED_KEYS: [u32; 3] = [1, 2, 6];

/// The key outside the id space that the buggy client looks up.
pub const OUT_OF_RANGE_KEY: u32 = 17;

/// The most requests the client makes.
pub const QUERIES_MAX: u32 = 5;

/// The most scans of the client's key choice before it takes the last key.
pub const SCANS_MAX: usize = 8;

/// The ring node with P# index `i` in the manager's initial `ChordNodes`.
pub fn ring_node(i: usize) -> NodeId {
    NodeId::new(1 + i)
}

/// A finger: the circular interval `[start, end)` of ids and the node responsible for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finger {
    start: u32,
    end: u32,
    node: NodeId,
}

impl Finger {
    /// Whether `key` lies in the finger's interval (an empty interval holds nothing).
    fn holds(&self, key: u32) -> bool {
        if self.start > self.end {
            self.start <= key || key < self.end
        } else {
            self.start <= key && key < self.end
        }
    }
}

/// The cluster manager's state (its `Waiting` state; `Init` is over before the first step).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manager {
    num_ids: u32,
    /// `ChordNodes`: the live ring nodes, in the order the manager knows them.
    nodes: Vec<NodeId>,
    /// `NodeIds`, parallel to `nodes` until a termination mixes them up (as in P#).
    node_ids: Vec<u32>,
    /// Whether the spare slot was taken.
    spare_taken: bool,
}

/// The P# state of a ring node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RingPhase {
    /// Created, waiting for `Config` (or after `Join`, for good).
    Init,
    /// Serving lookups and stabilization.
    Waiting,
    /// Terminated.
    Halted,
}

/// A `ChordNode`'s state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ring {
    phase: RingPhase,
    id: u32,
    num_ids: u32,
    keys: BTreeSet<u32>,
    fingers: Vec<Finger>,
    predecessor: Option<NodeId>,
    /// The events deferred in `Init`, with their senders, in arrival order.
    deferred: VecDeque<(NodeId, Msg)>,
}

/// The P# state of the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientPhase {
    /// Created, waiting for its `Config`.
    Init,
    /// Waiting for an answer (after a create or terminate request, or the last query: for good).
    Waiting,
}

/// The client's state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Client {
    phase: ClientPhase,
    keys: Vec<u32>,
    queries: u32,
}

/// A node's state: the manager's, a ring node's or the client's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum State {
    /// The cluster manager.
    Manager(Manager),
    /// A `ChordNode`.
    Ring(Ring),
    /// The client.
    Client(Client),
}

/// The P# events between machines.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Msg {
    /// Manager to an initial ring node: its place in the ring.
    Config {
        /// The node's id.
        id: u32,
        /// The keys it stores.
        keys: BTreeSet<u32>,
        /// The ring nodes.
        nodes: Vec<NodeId>,
        /// Their ids.
        node_ids: Vec<u32>,
    },
    /// Manager to a new node: join the ring.
    Join {
        /// The node's id.
        id: u32,
        /// The ring nodes, the new one included.
        nodes: Vec<NodeId>,
        /// Their ids.
        node_ids: Vec<u32>,
        /// The size of the id space.
        num_ids: u32,
    },
    /// Manager to the client: the keys to look up.
    ClientConfig {
        /// The stored keys.
        keys: Vec<u32>,
    },
    /// Find the node responsible for `key` and tell `sender`.
    FindSuccessor {
        /// Who asked first.
        sender: NodeId,
        /// The key.
        key: u32,
    },
    /// `node` is responsible for `key`.
    FindSuccessorResp {
        /// The node.
        node: NodeId,
        /// The key.
        key: u32,
    },
    /// Ask a node for its predecessor.
    FindPredecessor,
    /// The receiver's successor's predecessor.
    FindPredecessorResp {
        /// The predecessor.
        node: NodeId,
    },
    /// Ask a node for its id.
    QueryId,
    /// A node's id.
    QueryIdResp {
        /// The id.
        id: u32,
    },
    /// A new predecessor asks for the keys up to its id.
    AskForKeys {
        /// The asking node's id.
        id: u32,
    },
    /// The keys handed over.
    AskForKeysResp {
        /// The keys.
        keys: Vec<u32>,
    },
    /// The sender is the receiver's predecessor now.
    NotifySuccessor,
    /// A new node joined.
    JoinAck,
    /// Manager to ring nodes: repair the fingers.
    Stabilize,
    /// Manager to a ring node: halt.
    Terminate,
    /// Client to manager: add a node.
    CreateNewNode,
    /// Client to manager: remove a node.
    TerminateNode,
}

/// Configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Whether the client also looks up the out-of-range key 17 (the benchmark's bug).
    pub bug: bool,
}

impl Default for Config {
    /// The paper's configuration: the buggy client.
    fn default() -> Self {
        Config { bug: true }
    }
}

/// One-sentence description.
pub const ABOUT: &str = "P# Chord: a client looks up keys in a three-node ring of an 8-id space \
    while nodes may join or leave (FMCAD'17 lasso detection benchmark)";

/// The liveness bug.
pub const BUG: &str = "a lookup of key 17, outside the id space, is forwarded back and forth \
    between the nodes with ids 0 and 3 forever, so the client never gets its answer";

/// The protocol: the code of the manager, the ring nodes and the client.
#[derive(Clone, Debug)]
pub struct ChordLookup {
    bug: bool,
}

/// The model of `config`.
pub fn model(config: &Config) -> Model<ChordLookup> {
    Model::new(ChordLookup { bug: config.bug })
        .nodes(SPARE.index() + 1)
        .network(NetworkKind::FifoInbox)
        .monitor(LookupAnswered)
}

/// P#'s `for (i = 0; i < n; i++) if (Random()) pick = i;`, repeated until `pick` is valid, as
/// one choice: a scan's last heads is `i` with probability `2^(i - n)`, so the loop ends with a
/// valid `i` with probability proportional to `2^i`. `None` if no `i` is valid (where P# would
/// spin forever or fail its assertion).
fn last_heads(out: &mut Out<'_, ChordLookup>, n: usize, valid: impl Fn(usize) -> bool) -> Option<usize> {
    let candidates: Vec<usize> = (0..n).filter(|i| valid(*i)).collect();
    let weights: usize = candidates.iter().map(|i| 1 << i).sum();
    if weights == 0 {
        return None;
    }
    let mut ticket = out.choose(weights);
    candidates.into_iter().rev().find(|i| match ticket.checked_sub(1 << i) {
        Some(rest) => {
            ticket = rest;
            false
        }
        None => true,
    })
}

/// The index in `node_ids` of the first id at or after `start` on the ring (P#'s
/// `GetSuccessorNodeId`).
fn successor_index(start: u32, node_ids: &[u32]) -> usize {
    let after = node_ids.iter().filter(|id| **id >= start).min();
    let id = after.or_else(|| node_ids.iter().min()).expect("a ring has nodes");
    node_ids.iter().position(|n| n == id).expect("the id is in the list")
}

/// The finger table of node `id`: one finger per ring node, as P# builds it.
fn finger_table(id: u32, num_ids: u32, nodes: &[NodeId], node_ids: &[u32]) -> Vec<Finger> {
    let finger = |i: usize| {
        let start = (id + (1 << (i - 1))) % num_ids;
        let end = (id + (1 << i)) % num_ids;
        Finger { start, end, node: nodes[successor_index(start, node_ids)] }
    };
    (1..=nodes.len()).map(finger).collect()
}

/// Which initial node stores each key (P#'s `AssignKeysToNodes`): the first node, in list
/// order, whose id is at least the key, else the first node. Parallel to `node_ids`.
fn assign_keys(keys: &[u32], node_ids: &[u32]) -> Vec<BTreeSet<u32>> {
    let mut assigned = vec![BTreeSet::new(); node_ids.len()];
    for key in keys.iter().rev() {
        let at = node_ids.iter().position(|id| key <= id).unwrap_or(0);
        assigned[at].insert(*key);
    }
    assigned
}

impl Manager {
    /// P#'s `InitOnEntry`: configure the ring and create the client.
    fn start(out: &mut Out<'_, ChordLookup>) -> Self {
        let nodes: Vec<NodeId> = (0..NODE_IDS.len()).map(ring_node).collect();
        let node_ids = NODE_IDS.to_vec();
        let num_ids = 1 << nodes.len();
        for ((node, id), keys) in nodes.iter().zip(&node_ids).zip(assign_keys(&STORED_KEYS, &node_ids)) {
            let config = Msg::Config { id: *id, keys, nodes: nodes.clone(), node_ids: node_ids.clone() };
            out.send(*node, config);
        }
        out.send(CLIENT, Msg::ClientConfig { keys: STORED_KEYS.to_vec() });
        Manager { num_ids, nodes, node_ids, spare_taken: false }
    }

    fn on_message(&mut self, msg: &Msg, out: &mut Out<'_, ChordLookup>) {
        match msg {
            Msg::FindSuccessor { .. } => out.send(self.nodes[0], msg.clone()),
            Msg::CreateNewNode => self.create_node(out),
            Msg::TerminateNode => self.terminate_node(out),
            Msg::JoinAck => out.broadcast(self.nodes.clone(), Msg::Stabilize),
            _ => out.require(false, "unhandled event"),
        }
    }

    fn create_node(&mut self, out: &mut Out<'_, ChordLookup>) {
        let used = self.node_ids.clone();
        let free = last_heads(out, self.num_ids as usize, |id| !used.contains(&(id as u32)));
        let Some(id) = free else {
            return out.require(false, "Cannot create a new node, no ids available");
        };
        if self.spare_taken {
            return out.require(false, "a spare node slot is left");
        }
        self.spare_taken = true;
        self.nodes.push(SPARE);
        self.node_ids.push(id as u32);
        let join = Msg::Join {
            id: id as u32,
            nodes: self.nodes.clone(),
            node_ids: self.node_ids.clone(),
            num_ids: self.num_ids,
        };
        out.send(SPARE, join);
    }

    fn terminate_node(&mut self, out: &mut Out<'_, ChordLookup>) {
        let ids = self.node_ids.clone();
        // P# compares an index of `ChordNodes` with the ids, and removes the id equal to it.
        let Some(index) = last_heads(out, self.nodes.len(), |i| ids.contains(&(i as u32))) else {
            return out.require(false, "Cannot find a node to terminate");
        };
        let node = self.nodes.remove(index);
        self.node_ids.retain(|id| *id != index as u32);
        out.send(node, Msg::Terminate);
    }
}

impl Ring {
    fn new() -> Self {
        Ring {
            phase: RingPhase::Init,
            id: 0,
            num_ids: 0,
            keys: BTreeSet::new(),
            fingers: Vec::new(),
            predecessor: None,
            deferred: VecDeque::new(),
        }
    }

    fn finger(&self, start: u32) -> Option<&Finger> {
        self.fingers.iter().find(|f| f.start == start)
    }

    fn finger_mut(&mut self, start: u32) -> &mut Finger {
        self.fingers.iter_mut().find(|f| f.start == start).expect("a finger with this start")
    }

    /// The start of the successor's finger, `(id + 1) mod NumOfIds`.
    fn successor_start(&self) -> u32 {
        (self.id + 1) % self.num_ids
    }

    fn successor(&self) -> NodeId {
        self.finger(self.successor_start()).expect("the successor finger").node
    }

    fn on_message(&mut self, me: NodeId, from: NodeId, msg: &Msg, out: &mut Out<'_, ChordLookup>) {
        match (self.phase, msg) {
            (RingPhase::Init, Msg::Config { id, keys, nodes, node_ids }) => {
                self.configure(*id, keys, nodes, node_ids);
                self.phase = RingPhase::Waiting;
                while let Some((from, msg)) = self.deferred.pop_front() {
                    self.serve(me, from, &msg, out);
                }
            }
            (RingPhase::Init, Msg::Join { id, nodes, node_ids, num_ids }) => {
                self.id = *id;
                self.num_ids = *num_ids;
                self.fingers = finger_table(*id, *num_ids, nodes, node_ids);
                out.send(from, Msg::JoinAck);
                out.send(self.successor(), Msg::NotifySuccessor);
            }
            (RingPhase::Init, Msg::AskForKeys { .. } | Msg::NotifySuccessor | Msg::Stabilize) => {
                self.deferred.push_back((from, msg.clone()))
            }
            (RingPhase::Waiting, _) => self.serve(me, from, msg, out),
            (RingPhase::Halted, _) => {}
            (RingPhase::Init, _) => out.require(false, "unhandled event"),
        }
    }

    fn configure(&mut self, id: u32, keys: &BTreeSet<u32>, nodes: &[NodeId], node_ids: &[u32]) {
        self.id = id;
        self.keys = keys.clone();
        self.num_ids = 1 << nodes.len();
        self.fingers = finger_table(id, self.num_ids, nodes, node_ids);
        if let Some(at) = node_ids.iter().position(|n| *n == id) {
            self.predecessor = Some(nodes[(at + node_ids.len() - 1) % node_ids.len()]);
        }
    }

    /// The handlers of the `Waiting` state.
    fn serve(&mut self, me: NodeId, from: NodeId, msg: &Msg, out: &mut Out<'_, ChordLookup>) {
        match msg {
            Msg::FindSuccessor { sender, key } => self.find_successor(me, *sender, *key, out),
            Msg::FindSuccessorResp { node, key } => match self.fingers.iter_mut().find(|f| f.start == *key) {
                Some(finger) => finger.node = *node,
                None => out.require(false, "Finger table does not contain the key"),
            },
            Msg::FindPredecessor => {
                if let Some(node) = self.predecessor {
                    out.send(from, Msg::FindPredecessorResp { node });
                }
            }
            Msg::FindPredecessorResp { node } if *node != me => {
                let start = self.successor_start();
                self.finger_mut(start).node = *node;
                out.send(*node, Msg::NotifySuccessor);
                out.send(*node, Msg::AskForKeys { id: self.id });
            }
            Msg::FindPredecessorResp { .. } => {}
            Msg::QueryId => out.send(from, Msg::QueryIdResp { id: self.id }),
            Msg::AskForKeys { id } => {
                out.require(self.predecessor == Some(from), "Predecessor is corrupted");
                let handed: Vec<u32> = self.keys.iter().copied().filter(|key| key <= id).collect();
                if !handed.is_empty() {
                    self.keys.retain(|key| key > id);
                    out.send(from, Msg::AskForKeysResp { keys: handed });
                }
            }
            Msg::AskForKeysResp { keys } => self.keys.extend(keys),
            Msg::NotifySuccessor if from != me => self.predecessor = Some(from),
            Msg::NotifySuccessor => {}
            Msg::Stabilize => {
                let successor = self.successor();
                out.send(successor, Msg::FindPredecessor);
                for finger in self.fingers.iter().filter(|f| f.node != successor) {
                    out.send(successor, Msg::FindSuccessor { sender: me, key: finger.start });
                }
            }
            Msg::Terminate => self.phase = RingPhase::Halted,
            _ => out.require(false, "unhandled event"),
        }
    }

    /// P#'s `ProcessFindSuccessor`: answer if this node knows the key's node, else forward.
    fn find_successor(&self, me: NodeId, sender: NodeId, key: u32, out: &mut Out<'_, ChordLookup>) {
        if self.keys.contains(&key) {
            return out.send(sender, Msg::FindSuccessorResp { node: me, key });
        }
        if let Some(finger) = self.finger(key) {
            return out.send(sender, Msg::FindSuccessorResp { node: finger.node, key });
        }
        if key == self.id {
            return out.send(sender, Msg::FindSuccessorResp { node: self.successor(), key });
        }
        let holding = self.fingers.iter().rev().find(|f| f.holds(key));
        let mut ask = holding.map_or_else(|| self.successor_start(), |f| f.start);
        if self.finger(ask).expect("a finger to ask").node == me {
            // The finger that ends where the one pointing here starts (or one before).
            let before = self.fingers.iter().find(|f| f.end == ask || Some(f.end) == ask.checked_sub(1));
            if let Some(finger) = before {
                ask = finger.start;
            }
        }
        let next = self.finger(ask).expect("a finger to ask").node;
        out.require(next != me, "Cannot locate successor");
        if next != me {
            out.send(next, Msg::FindSuccessor { sender, key });
        }
    }
}

impl Client {
    fn on_message(&mut self, bug: bool, msg: &Msg, out: &mut Out<'_, ChordLookup>) {
        match (self.phase, msg) {
            (ClientPhase::Init, Msg::ClientConfig { keys }) => {
                self.keys = keys.clone();
                if bug {
                    self.keys.push(OUT_OF_RANGE_KEY);
                }
                self.query(out);
            }
            (ClientPhase::Waiting, Msg::FindSuccessorResp { node, .. }) => out.send(*node, Msg::QueryId),
            (ClientPhase::Waiting, Msg::QueryIdResp { .. }) => self.query(out),
            _ => out.require(false, "unhandled event"),
        }
    }

    /// P#'s `Querying` entry, then the raise of `Local` to `Waiting`.
    fn query(&mut self, out: &mut Out<'_, ChordLookup>) {
        if self.queries < QUERIES_MAX {
            if out.choose(2) == 0 {
                let key = self.next_query_key(out);
                out.send(MANAGER, Msg::FindSuccessor { sender: CLIENT, key });
            } else if out.choose(2) == 0 {
                out.send(MANAGER, Msg::CreateNewNode);
            } else {
                out.send(MANAGER, Msg::TerminateNode);
            }
            self.queries += 1;
        }
        self.phase = ClientPhase::Waiting;
    }

    /// P#'s `GetNextQueryKey`: a coin per key, the first heads wins, cut after [`SCANS_MAX`]
    /// scans by taking the last key.
    fn next_query_key(&self, out: &mut Out<'_, ChordLookup>) -> u32 {
        for _ in 0..SCANS_MAX {
            if let Some(key) = self.keys.iter().find(|_| out.choose(2) == 0) {
                return *key;
            }
        }
        *self.keys.last().expect("the client has keys")
    }
}

impl Protocol for ChordLookup {
    type State = State;
    type Msg = Msg;
    type Timer = ();
    type Input = ();

    fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> State {
        match me {
            MANAGER => State::Manager(Manager::start(out)),
            CLIENT => State::Client(Client { phase: ClientPhase::Init, keys: Vec::new(), queries: 0 }),
            _ => State::Ring(Ring::new()),
        }
    }

    fn on_message(&self, me: NodeId, state: &mut State, from: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
        match state {
            State::Manager(manager) => manager.on_message(msg, out),
            State::Ring(ring) => ring.on_message(me, from, msg, out),
            State::Client(client) => client.on_message(self.bug, msg, out),
        }
    }

    fn phase(&self, state: &State) -> u64 {
        match state {
            State::Manager(_) => 0,
            State::Ring(ring) => ring.phase as u64,
            State::Client(client) => client.phase as u64,
        }
    }
}

/// The spec's liveness monitor: hot from the client's request until its answer.
#[derive(Clone, Copy, Debug)]
pub struct LookupAnswered;

/// [`LookupAnswered`]'s state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LookupState {
    /// No request is outstanding (cold).
    Responded,
    /// The client waits for an answer (hot).
    Requested,
}

impl Monitor<ChordLookup> for LookupAnswered {
    type State = LookupState;

    fn name(&self) -> &str {
        "LivenessMonitor"
    }

    fn init(&self, _: &World<ChordLookup>) -> LookupState {
        LookupState::Responded
    }

    fn observe(&self, state: &mut LookupState, step: &Observation<'_, ChordLookup>) {
        if let Event::Deliver { to: CLIENT, msg: Msg::FindSuccessorResp { .. }, .. } = step.event {
            *state = LookupState::Responded;
        }
        let request = |(to, msg): &(NodeId, Msg)| *to == MANAGER && matches!(msg, Msg::FindSuccessor { .. });
        if step.event.node() == CLIENT && step.sent.iter().any(request) {
            *state = LookupState::Requested;
        }
    }

    fn temperature(&self, state: &LookupState) -> Temperature {
        match state {
            LookupState::Responded => Temperature::Cold,
            LookupState::Requested => Temperature::Hot,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::script::{monitored_space, Rng, Script};
    use super::*;
    use foretell_check::{Check, Completion};
    use foretell_model::{Envelope, EventOf, MonitorState};

    /// A delivery of the lookup of key 17 to `node`.
    fn lookup_17_at(node: NodeId) -> impl Fn(&EventOf<ChordLookup>) -> bool {
        move |event| {
            matches!(event, Event::Deliver { to, msg: Msg::FindSuccessor { key: OUT_OF_RANGE_KEY, .. }, .. }
                if *to == node)
        }
    }

    /// The script after the three ring nodes took their `Config`.
    fn configured(model: &Model<ChordLookup>) -> Script<'_, ChordLookup> {
        let mut script = Script::new(model);
        for i in 0..NODE_IDS.len() {
            let node = ring_node(i);
            script.step(|e| matches!(e, Event::Deliver { to, msg: Msg::Config { .. }, .. } if *to == node));
        }
        script
    }

    /// The only message in flight, as (from, to, message).
    fn only_message(script: &Script<'_, ChordLookup>) -> (NodeId, NodeId, Msg) {
        let messages: Vec<_> = script.world.messages().map(|e| (e.from, e.to, e.msg.clone())).collect();
        assert_eq!(messages.len(), 1, "{messages:?}");
        messages.into_iter().next().expect("one message")
    }

    #[test]
    fn a_lookup_of_17_ping_pongs_between_ids_0_and_3_hot_and_fair() {
        // The spec's lasso: the client asks for 17, the manager hands it to id 0, and ids 0 and
        // 3 forward it to each other; one round trip repeats the world with the monitor hot.
        let model = model(&Config { bug: true });
        let mut script = configured(&model);
        // Query (heads), then tails for keys 1, 2 and 6 and heads for 17.
        script.step_with(&[0, 1, 1, 1, 0], |e| matches!(e, Event::Deliver { to: CLIENT, .. }));
        assert_eq!(script.temperature(), Temperature::Hot);
        script.step(|e| matches!(e, Event::Deliver { to: MANAGER, msg: Msg::FindSuccessor { .. }, .. }));
        script.step(lookup_17_at(ring_node(0)));
        let lookup = Msg::FindSuccessor { sender: CLIENT, key: OUT_OF_RANGE_KEY };
        assert_eq!(only_message(&script), (ring_node(0), ring_node(2), lookup.clone()), "id 0 asks id 3");

        script.assert_fair_cycle(|script| {
            script.step(lookup_17_at(ring_node(2)));
            assert_eq!(only_message(script), (ring_node(2), ring_node(0), lookup), "id 3 asks id 0");
            assert_eq!(script.temperature(), Temperature::Hot);
            script.step(lookup_17_at(ring_node(0)));
            assert_eq!(script.temperature(), Temperature::Hot);
        });
        // The client waits and the manager is idle: only the two ring nodes are enabled.
        assert_eq!(script.enabled, BTreeSet::from([ring_node(0).0, ring_node(2).0]));
    }

    #[test]
    fn the_fixed_client_gets_its_answer() {
        // Without key 17 a lookup is answered: the monitor goes hot at the request and cold at
        // the answer, and the client goes on with its next request.
        let model = model(&Config { bug: false });
        let mut script = configured(&model);
        // Query (heads), then tails for keys 1 and 2 and heads for 6, which id 0 stores.
        script.step_with(&[0, 1, 1, 0], |e| matches!(e, Event::Deliver { to: CLIENT, .. }));
        assert_eq!(script.temperature(), Temperature::Hot);
        script.step(|e| matches!(e, Event::Deliver { to: MANAGER, .. }));
        script.step(|e| matches!(e, Event::Deliver { msg: Msg::FindSuccessor { key: 6, .. }, .. }));
        let answer = Msg::FindSuccessorResp { node: ring_node(0), key: 6 };
        assert_eq!(only_message(&script), (ring_node(0), CLIENT, answer));
        script.step(|e| matches!(e, Event::Deliver { to: CLIENT, .. }));
        assert_eq!(script.temperature(), Temperature::Cold);
        script.step(|e| matches!(e, Event::Deliver { msg: Msg::QueryId, .. }));
        // The second request: a new node.
        script.step_with(&[1, 0], |e| matches!(e, Event::Deliver { to: CLIENT, .. }));
        assert_eq!(only_message(&script), (CLIENT, MANAGER, Msg::CreateNewNode));
        assert_eq!(script.temperature(), Temperature::Cold);
    }

    /// How random executions ended: whether an action was still enabled, and whether the
    /// monitor was hot.
    #[derive(Debug, Default)]
    struct Endings {
        quiescent_cold: u32,
        quiescent_hot: u32,
        running_cold: u32,
        running_hot: u32,
    }

    /// Runs 300 random executions of up to 500 steps; no step may violate an assertion, and an
    /// execution still running at the end is the ping-pong of key 17.
    fn smoke(config: &Config) -> Endings {
        let model = model(config);
        let mut script = Script::new(&model);
        let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
        let mut endings = Endings::default();
        for _ in 0..300 {
            script.reset().random_steps(&mut rng, 500);
            let quiescent = script.events().is_empty();
            let hot = script.temperature() == Temperature::Hot;
            let world = &script.world;
            if !quiescent {
                let ping_pong =
                    |e: &&Envelope<Msg>| matches!(e.msg, Msg::FindSuccessor { key: OUT_OF_RANGE_KEY, .. });
                assert!(world.messages().len() == 1 && world.messages().all(|e| ping_pong(&e)), "{world:?}");
            }
            *match (quiescent, hot) {
                (true, false) => &mut endings.quiescent_cold,
                (true, true) => &mut endings.quiescent_hot,
                (false, false) => &mut endings.running_cold,
                (false, true) => &mut endings.running_hot,
            } += 1;
        }
        endings
    }

    #[test]
    fn smoke_buggy() {
        // Random executions of the benchmark violate no assertion; those still running after
        // 500 steps are in the hot ping-pong, about the spec's 6.1% of them.
        let endings = smoke(&Config { bug: true });
        println!("buggy: {endings:?}");
        assert_eq!(endings.quiescent_hot, 0);
        assert_eq!(endings.running_cold, 0);
        assert!((5..=40).contains(&endings.running_hot), "{endings:?}");
    }

    #[test]
    fn smoke_fixed() {
        // Random executions of the fixed variant violate no assertion and all come to rest with
        // the monitor cold.
        let endings = smoke(&Config { bug: false });
        println!("fixed: {endings:?}");
        assert_eq!(endings.quiescent_cold, 300, "{endings:?}");
    }

    #[test]
    fn bfs_finds_no_assertion_failure() {
        // Exhaustive search: no reachable step fails an assertion or hits an unhandled event,
        // with or without key 17 (the ping-pong world repeats, so the search ends).
        for (bug, states) in [(false, 22_218), (true, 22_296)] {
            let report = Check::bfs(&model(&Config { bug })).run();
            assert_eq!(report.completion, Completion::Exhausted, "{report}");
            assert!(report.violations.is_empty(), "{report}");
            assert_eq!(report.stats.unique_states, states, "bug {bug}");
        }
    }

    #[test]
    fn no_execution_comes_to_rest_hot() {
        // Every execution that comes to rest does so with the client answered: in the fixed
        // variant that is every execution, in the buggy one every execution but the ping-pong.
        let responded = format!("{:?}", LookupState::Responded);
        for bug in [false, true] {
            let model = model(&Config { bug });
            let (_, terminal) = monitored_space(&model);
            assert!(!terminal.is_empty());
            let answered =
                |monitors: &[MonitorState]| model.monitors()[0].describe(&monitors[0]) == responded;
            assert!(terminal.iter().all(|(_, monitors)| answered(monitors)), "bug {bug}");
        }
    }
}
