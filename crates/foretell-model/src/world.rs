//! `World`: the global state — every node's local state, the network, the driver's pending
//! inputs and the faults used.
//!
//! Local states are shared between worlds behind `Arc` (copy-on-write): a step clones the
//! pointers, replaces the one node it touched, and so costs one state clone whatever the node
//! count. Each node caches the stable hash of its local state tagged with its position; the
//! world fingerprint is the sum of the part hashes (nodes, network, driver and faults), so a
//! step computes its successor's fingerprint from the parts it changed, before (and often
//! instead of) building the successor world.

use crate::cache_hint::prefetch;
use crate::idle_events::IdleEvents;
use crate::network::Network;
use crate::{Envelope, Fingerprint, FingerprintHasher, NodeId, Protocol};
use serde::Serialize;
use std::cell::Cell;
use std::sync::Arc;

/// One node's local state: protocol state, armed timers and monotone clock.
pub(crate) struct NodeSlot<P: Protocol> {
    pub(crate) state: P::State,
    pub(crate) timers: Vec<P::Timer>,
    pub(crate) clock: u64,
    pub(crate) hash: u128,
    /// The local events this slot is known to ignore.
    pub(crate) idle: IdleEvents,
}

impl<P: Protocol> NodeSlot<P> {
    /// The slot of node `index`; its hash includes the position, so equal states at different
    /// nodes contribute differently to the fingerprint.
    pub(crate) fn new(index: usize, state: P::State, timers: Vec<P::Timer>, clock: u64) -> Self {
        let hash = FingerprintHasher::hash(&(index as u32, &state, &timers, clock));
        NodeSlot { state, timers, clock, hash, idle: IdleEvents::default() }
    }
}

/// Faults injected so far, for the kinds whose budget is limited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct FaultsUsed {
    pub(crate) resets: u32,
    pub(crate) drops: u32,
    pub(crate) duplicates: u32,
    pub(crate) socket_errors: u32,
}

/// The fingerprint term of the driver's pending inputs and the faults used.
pub(crate) fn rest_term(pending: u64, faults: FaultsUsed) -> u128 {
    let mut bytes = [0u8; 24];
    bytes[..8].copy_from_slice(&pending.to_le_bytes());
    bytes[8..12].copy_from_slice(&faults.resets.to_le_bytes());
    bytes[12..16].copy_from_slice(&faults.drops.to_le_bytes());
    bytes[16..20].copy_from_slice(&faults.duplicates.to_le_bytes());
    bytes[20..].copy_from_slice(&faults.socket_errors.to_le_bytes());
    FingerprintHasher::mix(u64::MAX, xxhash_rust::xxh3::xxh3_128(&bytes))
}

/// A global state of a model.
pub struct World<P: Protocol> {
    pub(crate) nodes: Vec<Arc<NodeSlot<P>>>,
    /// Shared between worlds until a step changes it (most steps only touch a node).
    pub(crate) network: Arc<Network<P::Msg>>,
    /// Bit `i` is set while one-shot input `i` of the driver has not been given.
    pub(crate) pending: u64,
    pub(crate) faults_used: FaultsUsed,
    pub(crate) fingerprint: Fingerprint,
}

impl<P: Protocol> Clone for World<P> {
    fn clone(&self) -> Self {
        World {
            nodes: self.nodes.clone(),
            network: self.network.clone(),
            pending: self.pending,
            faults_used: self.faults_used,
            fingerprint: self.fingerprint,
        }
    }
}

/// A read-only view of one node in a world.
#[derive(Debug)]
pub struct NodeView<'w, P: Protocol> {
    /// The protocol state.
    pub state: &'w P::State,
    /// The armed timers, in order.
    pub timers: &'w [P::Timer],
    /// The monotone clock's last value.
    pub clock: u64,
}

impl<P: Protocol> World<P> {
    /// The world's stable fingerprint.
    pub fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }

    /// The node count.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Node `node`'s protocol state.
    ///
    /// # Panics
    /// If the node does not exist.
    pub fn state(&self, node: NodeId) -> &P::State {
        &self.nodes[node.index()].state
    }

    /// Every node's protocol state, in node order.
    pub fn states(&self) -> impl ExactSizeIterator<Item = &P::State> + Clone {
        self.nodes.iter().map(|n| &n.state)
    }

    /// Node `node`'s state, timers and clock.
    ///
    /// # Panics
    /// If the node does not exist.
    pub fn node(&self, node: NodeId) -> NodeView<'_, P> {
        let slot = &self.nodes[node.index()];
        NodeView { state: &slot.state, timers: &slot.timers, clock: slot.clock }
    }

    /// Whether `timer` is armed at `node`.
    pub fn timer_armed(&self, node: NodeId, timer: &P::Timer) -> bool {
        self.nodes[node.index()].timers.binary_search(timer).is_ok()
    }

    /// The messages the network holds, in canonical order (for a grow-only network: every
    /// message ever sent).
    pub fn messages(&self) -> impl ExactSizeIterator<Item = &Envelope<P::Msg>> + Clone {
        NETWORK_READ.set(true);
        self.network.messages().iter().map(|e| &**e)
    }

    /// The pending transport errors as (observing node, broken peer).
    pub fn pending_transport_errors(&self) -> &[(NodeId, NodeId)] {
        NETWORK_READ.set(true);
        self.network.errors()
    }

    /// How many one-shot driver inputs have not been given yet.
    pub fn pending_input_count(&self) -> u32 {
        self.pending.count_ones()
    }

    /// An equal world that shares no memory with this one: its node slots, network and
    /// messages are copies. Worlds share what a step did not change, behind reference counts,
    /// and a thread that raises and drops counts another thread's worlds also raise and drop
    /// waits for the cache line at each one; so an engine's worker detaches a world it takes
    /// from another worker, and the worlds it builds from it then count only among themselves.
    pub fn detached(&self) -> World<P> {
        let nodes = self
            .nodes
            .iter()
            .map(|slot| {
                let NodeSlot { state, timers, clock, hash, idle } = &**slot;
                Arc::new(NodeSlot {
                    state: state.clone(),
                    timers: timers.clone(),
                    clock: *clock,
                    hash: *hash,
                    idle: idle.copy(),
                })
            })
            .collect();
        World {
            nodes,
            network: Arc::new(self.network.detached()),
            pending: self.pending,
            faults_used: self.faults_used,
            fingerprint: self.fingerprint,
        }
    }

    /// Starts loading what expanding this world reads first and finds only behind pointers:
    /// its node array and its network. A breadth-first search expands worlds that were built
    /// long before, whose parts have left the cache; hinting a few worlds ahead overlaps those
    /// misses with the work on the current one. Pair with [`World::prefetch_messages`] a little
    /// later. A hint only: it changes nothing.
    #[inline]
    pub fn prefetch(&self) {
        prefetch(self.nodes.as_ptr());
        prefetch(Arc::as_ptr(&self.network));
    }

    /// Starts loading the network's message list, the second level behind [`World::prefetch`]
    /// (which should have brought the network in by now).
    #[inline]
    pub fn prefetch_messages(&self) {
        prefetch(self.network.messages().as_ptr());
    }

    /// The world with its fingerprint recomputed from the cached part hashes (debug checks).
    pub(crate) fn sealed(mut self) -> Self {
        self.seal();
        self
    }

    /// Recomputes the fingerprint from the cached part hashes.
    pub(crate) fn seal(&mut self) {
        let nodes = self.nodes.iter().fold(0u128, |sum, node| sum.wrapping_add(node.hash));
        let sum =
            nodes.wrapping_add(self.network.hash()).wrapping_add(rest_term(self.pending, self.faults_used));
        self.fingerprint = Fingerprint(sum);
    }
}

impl<P: Protocol> std::fmt::Debug for World<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = f.debug_struct("World");
        s.field("fingerprint", &format_args!("{}", self.fingerprint));
        for (i, node) in self.nodes.iter().enumerate() {
            s.field(&format!("n{i}"), &node.state);
        }
        s.field("messages", &self.network.messages().len());
        s.finish()
    }
}

thread_local! {
    /// Whether this thread read a world's network through [`World::messages`] or
    /// [`World::pending_transport_errors`] since [`reads_network`] last cleared it.
    static NETWORK_READ: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` and says whether it read a world's network (its messages or pending transport
/// errors) on this thread: how local model checking, whose system states have no network,
/// learns that a property needs one.
pub fn reads_network<R>(f: impl FnOnce() -> R) -> (R, bool) {
    let before = NETWORK_READ.replace(false);
    let result = f();
    let read = NETWORK_READ.replace(before);
    (result, read)
}
