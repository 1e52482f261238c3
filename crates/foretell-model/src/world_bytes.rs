//! World serialization: the bytes a distributed search ships between processes.
//!
//! Cluster mode (`foretell-cluster`) partitions the worlds of a breadth-first search among
//! workers by fingerprint, as distributed TLC and PReach do, so a world found by one worker is
//! sent, as bytes, to the worker that owns it. [`World::to_bytes`] encodes a plain mirror of the
//! world's parts with postcard: each node's (state, timers, clock), the network's kind, its
//! messages (from, to, payload) in canonical order, pending transport errors and open
//! connections, the pending driver inputs, the faults used, and the fingerprint.
//!
//! [`World::from_bytes`] rebuilds the world exactly as the simulator would have built it: node
//! slots through `NodeSlot::new` (which hashes each node with its position), envelopes through
//! `Envelope::new`, the network by replaying `send` in the stored order (so the network's own
//! code decides the canonical order, and a stored order that differs is rejected), and the
//! fingerprint through `seal`. The encoded fingerprint is then compared with the rebuilt one,
//! which catches corrupted bytes and processes built from different code. Bytes are input from
//! another process: every malformed, truncated or inconsistent encoding is an error, never a
//! panic.

use crate::network::Network;
use crate::world::{FaultsUsed, NodeSlot};
use crate::{Budget, Envelope, Fingerprint, Model, NetworkKind, NodeId, Protocol, World};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// The encoding's version, the first byte of every encoded world.
const FORMAT: u8 = 1;

/// The parts of a world: sequences written straight from the world's own vectors when encoded
/// ([`Encoded`]), vectors when decoded ([`Decoded`]); postcard writes both alike.
#[derive(Serialize, Deserialize)]
struct Parts<Nodes, Messages, Pairs> {
    format: u8,
    nodes: Nodes,
    kind: NetworkKind,
    messages: Messages,
    errors: Pairs,
    connections: Pairs,
    pending: u64,
    faults_used: [u32; 4],
    fingerprint: u128,
}

/// The parts of `World<P>` as encoded, borrowed from the world.
type Encoded<'w, P> = Parts<NodesOf<'w, P>, MessagesOf<'w, P>, &'w [(NodeId, NodeId)]>;

/// The parts of `World<P>` as decoded.
type Decoded<P> = Parts<
    Vec<NodeParts<<P as Protocol>::State, Vec<<P as Protocol>::Timer>>>,
    Vec<(NodeId, NodeId, <P as Protocol>::Msg)>,
    Vec<(NodeId, NodeId)>,
>;

/// A world's nodes, serialized as a sequence of [`NodeParts`] without collecting them.
struct NodesOf<'w, P: Protocol>(&'w [Arc<NodeSlot<P>>]);

impl<P: Protocol> Serialize for NodesOf<'_, P> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|n| NodeParts {
            state: &n.state,
            timers: &n.timers[..],
            clock: n.clock,
        }))
    }
}

/// A world's messages, serialized as a sequence of (from, to, payload) without collecting them.
struct MessagesOf<'w, P: Protocol>(&'w [Arc<Envelope<P::Msg>>]);

impl<P: Protocol> Serialize for MessagesOf<'_, P> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|e| (e.from, e.to, &e.msg)))
    }
}

thread_local! {
    /// The buffer worlds are encoded into, reused from world to world.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// One node's parts.
#[derive(Serialize, Deserialize)]
struct NodeParts<S, T> {
    state: S,
    timers: T,
    clock: u64,
}

/// Why bytes do not decode to a world of a model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WorldBytesError {
    /// The bytes are not an encoded world of this protocol (truncated, or of other types).
    #[error("not an encoded world of this protocol: {0}")]
    Malformed(String),
    /// Bytes follow the encoded world.
    #[error("{0} unexpected bytes follow the encoded world")]
    TrailingBytes(usize),
    /// The encoding's version is not one this build reads.
    #[error("world encoding format {0} is not supported (this build reads format {FORMAT})")]
    UnsupportedFormat(u8),
    /// The world has another node count than the model.
    #[error("the encoded world has {found} nodes, the model has {expected}")]
    WrongNodeCount {
        /// The encoded world's node count.
        found: usize,
        /// The model's.
        expected: usize,
    },
    /// The world's network is of another kind than the model's.
    #[error("the encoded world's network is {found:?}, the model's is {expected:?}")]
    WrongNetworkKind {
        /// The encoded world's network kind.
        found: NetworkKind,
        /// The model's.
        expected: NetworkKind,
    },
    /// The parts decode but no step of the model could produce them.
    #[error("the encoded world is not a world of this model: {0}")]
    Invalid(String),
    /// The rebuilt world's fingerprint differs from the encoded one: the bytes were altered, or
    /// the encoding process computes fingerprints differently (another build of the protocol).
    #[error("the rebuilt world's fingerprint is {rebuilt}, the encoding says {encoded}")]
    FingerprintMismatch {
        /// The fingerprint recomputed from the decoded parts.
        rebuilt: Fingerprint,
        /// The fingerprint in the bytes.
        encoded: Fingerprint,
    },
}

impl<P: Protocol> World<P> {
    /// The world as bytes, for [`World::from_bytes`] in another process.
    ///
    /// # Panics
    /// If a protocol type's `Serialize` implementation fails, which derived implementations never
    /// do (the fingerprint, computed from the same encoding, would have panicked first).
    pub fn to_bytes(&self) -> Vec<u8> {
        let parts: Encoded<'_, P> = Parts {
            format: FORMAT,
            nodes: NodesOf(&self.nodes),
            kind: self.network.kind(),
            messages: MessagesOf(self.network.messages()),
            errors: self.network.errors(),
            connections: self.network.connections(),
            pending: self.pending,
            faults_used: [
                self.faults_used.resets,
                self.faults_used.drops,
                self.faults_used.duplicates,
                self.faults_used.socket_errors,
            ],
            fingerprint: self.fingerprint.0,
        };
        let encode = |buffer: Vec<u8>| {
            postcard::to_extend(&parts, buffer).expect("canonical encoding of a model value cannot fail")
        };
        // Encoding into a reused buffer and copying out allocates the result once, at its size.
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut scratch) => {
                let mut buffer = encode(std::mem::take(&mut *scratch));
                let bytes = buffer.clone();
                buffer.clear();
                *scratch = buffer;
                bytes
            }
            // A protocol type whose Serialize encodes a world itself.
            Err(_) => encode(Vec::new()),
        })
    }

    /// The world `bytes` encode ([`World::to_bytes`]), rebuilt for `model` with every cached
    /// hash recomputed, so that its fingerprint is the encoded world's. To decode many worlds,
    /// a [`WorldDecoder`] shares their equal parts.
    ///
    /// # Errors
    /// A [`WorldBytesError`] if the bytes are malformed or truncated, are not a world of `model`
    /// (node count, network kind, node ids, canonical order, driver inputs, fault budget), or
    /// rebuild to another fingerprint.
    pub fn from_bytes(model: &Model<P>, bytes: &[u8]) -> Result<World<P>, WorldBytesError> {
        WorldDecoder::new(model).decode(bytes)
    }
}

/// The most parts of each kind a [`WorldDecoder`] remembers; it forgets them all when full.
const SHARED_MAX: usize = 1 << 16;

/// Decodes the worlds of one model, sharing the parts that repeat between them.
///
/// The simulator shares node slots and networks between the worlds it builds (`Arc`), so a
/// world costs little more than what its step changed; worlds decoded one by one would each own
/// every part, many times the memory. A decoder remembers the parts it rebuilt — node slots and
/// networks, by hash — and hands out the remembered one when a later world has an equal part
/// (compared by value, hash included), so that received worlds share their parts as built ones
/// do. Every hash is still recomputed from the decoded values.
pub struct WorldDecoder<'m, P: Protocol> {
    model: &'m Model<P>,
    nodes: HashMap<u64, Arc<NodeSlot<P>>, BuildHasherDefault<KeyHasher>>,
    networks: HashMap<u64, Arc<Network<P::Msg>>, BuildHasherDefault<KeyHasher>>,
}

impl<P: Protocol> fmt::Debug for WorldDecoder<'_, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorldDecoder")
            .field("nodes", &self.nodes.len())
            .field("networks", &self.networks.len())
            .finish()
    }
}

impl<'m, P: Protocol> WorldDecoder<'m, P> {
    /// A decoder of worlds of `model` that remembers nothing yet.
    pub fn new(model: &'m Model<P>) -> Self {
        WorldDecoder { model, nodes: HashMap::default(), networks: HashMap::default() }
    }

    /// [`World::from_bytes`], sharing parts with the worlds decoded before.
    ///
    /// # Errors
    /// As [`World::from_bytes`].
    pub fn decode(&mut self, bytes: &[u8]) -> Result<World<P>, WorldBytesError> {
        let model = self.model;
        match bytes.first() {
            // The format is a `u8`, which postcard writes as one raw byte.
            Some(&format) if format != FORMAT => return Err(WorldBytesError::UnsupportedFormat(format)),
            _ => {}
        }
        let (parts, rest): (Decoded<P>, &[u8]) =
            postcard::take_from_bytes(bytes).map_err(|e| WorldBytesError::Malformed(e.to_string()))?;
        if !rest.is_empty() {
            return Err(WorldBytesError::TrailingBytes(rest.len()));
        }
        let count = model.node_count();
        if parts.nodes.len() != count {
            return Err(WorldBytesError::WrongNodeCount { found: parts.nodes.len(), expected: count });
        }
        if parts.kind != model.network_kind() {
            return Err(WorldBytesError::WrongNetworkKind {
                found: parts.kind,
                expected: model.network_kind(),
            });
        }
        let invalid = |what: String| WorldBytesError::Invalid(what);
        let known = |node: NodeId| node.index() < count;
        let mut nodes = Vec::with_capacity(count);
        for (index, node) in parts.nodes.into_iter().enumerate() {
            if !node.timers.windows(2).all(|pair| pair[0] < pair[1]) {
                return Err(invalid(format!("node {index}'s timers are not a sorted set")));
            }
            nodes.push(self.share_node(NodeSlot::new(index, node.state, node.timers, node.clock)));
        }
        let network = rebuild_network(parts.kind, parts.messages, parts.errors, parts.connections, known)?;
        let once = model.input_driver().one_shot_inputs().len();
        if once < 64 && parts.pending >> once != 0 {
            return Err(invalid(format!(
                "pending inputs {:#x} name inputs beyond the {once} declared",
                parts.pending
            )));
        }
        let [resets, drops, duplicates, socket_errors] = parts.faults_used;
        let budget = model.fault_budget();
        for (what, used, budget) in [
            ("resets", resets, budget.resets),
            ("drops", drops, budget.drops),
            ("duplicates", duplicates, budget.duplicates),
            ("socket errors", socket_errors, budget.socket_errors),
        ] {
            let within = match budget {
                Budget::Limited(max) => used <= max,
                Budget::Off | Budget::Unbounded => used == 0,
            };
            if !within {
                return Err(invalid(format!("{used} {what} used, beyond the budget of {budget}")));
            }
        }
        let mut world = World {
            nodes,
            network: self.share_network(network),
            pending: parts.pending,
            faults_used: FaultsUsed { resets, drops, duplicates, socket_errors },
            fingerprint: Fingerprint::default(),
        };
        world.seal();
        let encoded = Fingerprint(parts.fingerprint);
        if world.fingerprint != encoded {
            return Err(WorldBytesError::FingerprintMismatch { rebuilt: world.fingerprint, encoded });
        }
        Ok(world)
    }

    /// The remembered slot equal to `slot`, or `slot`, now remembered.
    fn share_node(&mut self, slot: NodeSlot<P>) -> Arc<NodeSlot<P>> {
        let key = slot.hash as u64;
        if let Some(known) = self.nodes.get(&key) {
            let same = known.hash == slot.hash
                && known.clock == slot.clock
                && known.timers == slot.timers
                && known.state == slot.state;
            if same {
                return Arc::clone(known);
            }
        }
        if self.nodes.len() >= SHARED_MAX {
            self.nodes.clear();
        }
        let slot = Arc::new(slot);
        self.nodes.insert(key, Arc::clone(&slot));
        slot
    }

    /// The remembered network equal to `network`, or `network`, now remembered.
    fn share_network(&mut self, network: Network<P::Msg>) -> Arc<Network<P::Msg>> {
        let key = network.hash() as u64;
        if let Some(known) = self.networks.get(&key) {
            let same_messages = known.messages().len() == network.messages().len()
                && known
                    .messages()
                    .iter()
                    .zip(network.messages())
                    .all(|(a, b)| (a.from, a.to, a.hash) == (b.from, b.to, b.hash) && a.msg == b.msg);
            let same = known.hash() == network.hash()
                && same_messages
                && known.errors() == network.errors()
                && known.connections() == network.connections();
            if same {
                return Arc::clone(known);
            }
        }
        if self.networks.len() >= SHARED_MAX {
            self.networks.clear();
        }
        let network = Arc::new(network);
        self.networks.insert(key, Arc::clone(&network));
        network
    }
}

/// Hashes the decoder's keys, which are already stable hashes, by passing them through.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// The network of the decoded parts: messages replayed through `send` (which puts them in the
/// kind's canonical order and, for FIFO channels, opens their connections), then the errors and
/// connections set. Rejects parts that are not in canonical order or name unknown nodes.
fn rebuild_network<M: Serialize>(
    kind: NetworkKind,
    messages: Vec<(NodeId, NodeId, M)>,
    errors: Vec<(NodeId, NodeId)>,
    connections: Vec<(NodeId, NodeId)>,
    known: impl Fn(NodeId) -> bool,
) -> Result<Network<M>, WorldBytesError> {
    let invalid = |what: &str| Err(WorldBytesError::Invalid(what.to_string()));
    let mut network = Network::new(kind);
    let mut stored = Vec::with_capacity(messages.len());
    for (from, to, msg) in messages {
        if !known(from) || !known(to) {
            return invalid("a message names a node the model does not have");
        }
        let envelope = Envelope::new(from, to, msg);
        stored.push((from, to, envelope.hash));
        network.send(envelope);
    }
    let canonical = network.messages().iter().map(|e| (e.from, e.to, e.hash));
    if network.messages().len() != stored.len() || !canonical.eq(stored.iter().copied()) {
        return invalid("the messages are not in the network's canonical order");
    }
    if kind != NetworkKind::FifoChannels && !(errors.is_empty() && connections.is_empty()) {
        return invalid("only FIFO channels have transport errors and connections");
    }
    if !errors.iter().all(|&(node, peer)| known(node) && known(peer))
        || !errors.windows(2).all(|pair| pair[0] <= pair[1])
    {
        return invalid("the transport errors are not sorted pairs of known nodes");
    }
    if !connections.iter().all(|&(a, b)| a < b && known(b)) || !connections.windows(2).all(|p| p[0] < p[1]) {
        return invalid("the connections are not a sorted set of pairs of known nodes");
    }
    if !network.connections().iter().all(|pair| connections.binary_search(pair).is_ok()) {
        return invalid("a message is in flight on a connection that is not open");
    }
    Ok(Network::from_parts(kind, network.messages().to_vec(), errors, connections))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Driver, Faults, Out, Simulator};

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct State {
        value: u8,
        heard: Vec<u8>,
    }

    #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
    enum Timer {
        Ping,
        Bump,
    }

    /// A protocol that uses every part of a world: init choices, messages both ways, timers,
    /// the clock, one-shot and spontaneous inputs, transport errors and restarts.
    struct Chatty;

    impl Protocol for Chatty {
        type State = State;
        type Msg = u8;
        type Timer = Timer;
        type Input = u8;

        fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> State {
            out.set_timer(Timer::Ping, 10);
            let value = if me.0 == 0 { out.choose(2) as u8 } else { 0 };
            State { value, heard: Vec::new() }
        }

        fn on_message(&self, _: NodeId, state: &mut State, from: NodeId, msg: &u8, out: &mut Out<'_, Self>) {
            if state.heard.len() < 2 {
                state.heard.push(*msg);
            }
            if *msg < 2 {
                out.send(from, msg + 1);
            }
        }

        fn on_timer(&self, me: NodeId, state: &mut State, timer: &Timer, out: &mut Out<'_, Self>) {
            match timer {
                Timer::Ping => {
                    let next = NodeId::new((me.index() + 1) % out.node_count());
                    out.send(next, state.value);
                    out.set_timer(Timer::Bump, 5);
                }
                Timer::Bump => {
                    out.monotone_now();
                    state.value = (state.value + 1).min(2);
                }
            }
        }

        fn on_input(&self, _: NodeId, state: &mut State, input: &u8, out: &mut Out<'_, Self>) {
            state.value = *input;
            let peers: Vec<NodeId> = out.peers().collect();
            out.broadcast(peers, *input);
        }

        fn on_transport_error(&self, _: NodeId, state: &mut State, peer: NodeId, _: &mut Out<'_, Self>) {
            if state.heard.len() < 2 {
                state.heard.push(100 + peer.0 as u8);
            }
        }
    }

    fn model(kind: NetworkKind) -> Model<Chatty> {
        let faults = Faults::none().resets(Budget::at_most(1));
        let faults = if kind.consumes() {
            faults.drops(Budget::at_most(1)).duplicates(Budget::at_most(1))
        } else {
            faults
        };
        Model::new(Chatty)
            .nodes(3)
            .network(kind)
            .faults(faults)
            .driver(Driver::new().input(NodeId(1), 2).input(NodeId(2), 1).spontaneous(NodeId(0), 0))
    }

    const KINDS: [NetworkKind; 4] =
        [NetworkKind::Unordered, NetworkKind::FifoChannels, NetworkKind::FifoInbox, NetworkKind::GrowOnly];

    /// A deterministic generator for the walks (splitmix64).
    fn next(seed: &mut u64) -> u64 {
        *seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Worlds reached by random walks from every initial world.
    fn reachable(model: &Model<Chatty>, walks: usize, steps: usize) -> Vec<World<Chatty>> {
        let sim = Simulator::new(model).unwrap();
        let mut roots = Vec::new();
        sim.initial_worlds(|_, world, _| roots.push(world));
        let mut seed = 7;
        let mut found = Vec::new();
        for walk in 0..walks {
            let mut world = roots[walk % roots.len()].clone();
            for _ in 0..steps {
                found.push(world.clone());
                let mut successors = Vec::new();
                sim.successors(&world, |s| successors.push(s.into_world()));
                if successors.is_empty() {
                    break;
                }
                let pick = next(&mut seed) as usize % successors.len();
                world = successors.swap_remove(pick);
            }
        }
        found
    }

    fn successor_fingerprints(sim: &Simulator<'_, Chatty>, world: &World<Chatty>) -> Vec<Fingerprint> {
        let mut all = Vec::new();
        sim.successors(world, |s| all.push(s.fingerprint()));
        all
    }

    #[test]
    fn round_trip_keeps_fingerprint_and_behaviour_on_every_network_kind() {
        for kind in KINDS {
            let model = model(kind);
            let sim = Simulator::new(&model).unwrap();
            let worlds = reachable(&model, 40, 25);
            let mut covered = [false; 5]; // messages, errors, connections, timers, used faults
            for world in &worlds {
                let bytes = world.to_bytes();
                let back = World::from_bytes(&model, &bytes).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
                assert_eq!(back.fingerprint(), world.fingerprint(), "{kind:?}");
                assert_eq!(back.to_bytes(), bytes, "{kind:?}: re-encoding differs");
                assert_eq!(successor_fingerprints(&sim, &back), successor_fingerprints(&sim, world));
                covered[0] |= world.messages().len() > 1;
                covered[1] |= !world.pending_transport_errors().is_empty();
                covered[2] |= !world.network.connections().is_empty();
                covered[3] |= world.nodes.iter().any(|n| n.timers.len() > 1 || n.clock > 0);
                covered[4] |= world.faults_used != FaultsUsed::default();
            }
            let fifo = kind == NetworkKind::FifoChannels;
            assert_eq!(covered, [true, fifo, fifo, true, true], "{kind:?}: the walks miss a part");
        }
    }

    #[test]
    fn a_decoder_shares_equal_parts_between_the_worlds_it_decodes() {
        for kind in KINDS {
            let model = model(kind);
            let worlds = reachable(&model, 20, 20);
            let mut decoder = WorldDecoder::new(&model);
            let decoded: Vec<World<Chatty>> =
                worlds.iter().map(|w| decoder.decode(&w.to_bytes()).unwrap()).collect();
            for (world, back) in worlds.iter().zip(&decoded) {
                assert_eq!(back.fingerprint(), world.fingerprint(), "{kind:?}");
            }
            // Node 2 starts in the same state in every initial world, and often stays there.
            let shared = decoded.windows(2).filter(|w| Arc::ptr_eq(&w[0].nodes[2], &w[1].nodes[2])).count();
            assert!(shared > 0, "{kind:?}: no node slot is shared");
            let same_network =
                decoded.windows(2).filter(|w| Arc::ptr_eq(&w[0].network, &w[1].network)).count();
            let equal_network =
                worlds.windows(2).filter(|w| w[0].network.hash() == w[1].network.hash()).count();
            assert_eq!(same_network, equal_network, "{kind:?}: equal networks are shared");
        }
    }

    #[test]
    fn truncated_or_extended_bytes_are_errors() {
        let model = model(NetworkKind::FifoChannels);
        for world in reachable(&model, 5, 12) {
            let bytes = world.to_bytes();
            for len in 0..bytes.len() {
                assert!(World::from_bytes(&model, &bytes[..len]).is_err(), "prefix of {len} bytes accepted");
            }
            let mut longer = bytes.clone();
            longer.push(0);
            assert_eq!(World::from_bytes(&model, &longer).unwrap_err(), WorldBytesError::TrailingBytes(1));
        }
    }

    #[test]
    fn worlds_of_another_model_are_rejected() {
        let world = reachable(&model(NetworkKind::Unordered), 1, 3).pop().unwrap();
        let bytes = world.to_bytes();
        let err = World::from_bytes(&model(NetworkKind::Unordered).nodes(4), &bytes).unwrap_err();
        assert_eq!(err, WorldBytesError::WrongNodeCount { found: 3, expected: 4 });
        let err = World::from_bytes(&model(NetworkKind::FifoInbox), &bytes).unwrap_err();
        assert!(matches!(err, WorldBytesError::WrongNetworkKind { .. }), "{err}");
        let no_inputs = model(NetworkKind::Unordered).driver(Driver::new());
        assert!(matches!(World::from_bytes(&no_inputs, &bytes), Err(WorldBytesError::Invalid(_))));
    }

    #[test]
    fn altered_bytes_are_errors_or_rebuild_a_valid_world() {
        let model = model(NetworkKind::FifoChannels);
        let sim = Simulator::new(&model).unwrap();
        let mut seed = 11;
        for world in reachable(&model, 10, 15) {
            let bytes = world.to_bytes();
            for _ in 0..50 {
                let mut altered = bytes.clone();
                let at = next(&mut seed) as usize % altered.len();
                altered[at] ^= 1 << (next(&mut seed) % 8);
                // Whatever decodes passed every check, including the fingerprint: it must
                // behave as a world of the model.
                if let Ok(back) = World::from_bytes(&model, &altered) {
                    successor_fingerprints(&sim, &back);
                }
            }
        }
        let err = World::from_bytes(&model, &[FORMAT + 1]).unwrap_err();
        assert_eq!(err, WorldBytesError::UnsupportedFormat(FORMAT + 1));
    }

    #[test]
    fn a_stored_order_that_is_not_canonical_is_rejected() {
        let model = model(NetworkKind::Unordered);
        let world = reachable(&model, 20, 10).into_iter().find(|w| {
            let m: Vec<_> = w.messages().collect();
            m.len() >= 2 && (m[0].to, m[0].hash) != (m[1].to, m[1].hash)
        });
        let world = world.expect("a world with two different messages");
        let mut parts: Decoded<Chatty> = postcard::from_bytes(&world.to_bytes()).unwrap();
        parts.messages.swap(0, 1);
        let err = World::from_bytes(&model, &postcard::to_allocvec(&parts).unwrap()).unwrap_err();
        assert!(matches!(err, WorldBytesError::Invalid(_)), "{err}");
    }
}
