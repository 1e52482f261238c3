//! Symmetry reduction with a true canonical form.
//!
//! # What
//!
//! A [`Symmetry`] names a set `S` of interchangeable nodes (the resource managers of two-phase
//! commit, the acceptors of Paxos) and says how to rename node ids inside a state, a message, a
//! timer and a driver input under a [`Permutation`] of `S`. The group `G` is every permutation
//! of `S` (nodes outside `S` stay put). A permutation `π` acts on a world by moving the node at
//! position `n` to position `π(n)` with its state and timers renamed, renaming the sender,
//! receiver and payload of every message in flight, the two ends of every pending transport
//! error, and the node and payload of every pending one-shot input.
//! [`Symmetry::canonical_fingerprint`] gives every world of one orbit `{π(w) : π ∈ G}` the same
//! fingerprint, and worlds of different orbits different ones, so a search that stores canonical
//! fingerprints visits each orbit once — whatever the exploration order or thread count.
//!
//! (Stateright's reduction sorts the nodes by state and renames accordingly. Sorting is not a
//! canonical form when two nodes with equal states differ in what the rest of the world says
//! about them, so which representative is stored depends on which member of the orbit is met
//! first: its counts vary with the search order and the thread count.)
//!
//! # Algorithm
//!
//! Let `F(w)` be the hash of the world's *content*, a wrapping sum of domain-tagged terms: one
//! per node (position, state, timers, clock), one per message (sender, receiver, payload, and
//! its position in its queue for the FIFO network kinds: the per-channel or per-inbox order is
//! kept, the unordered kinds are multisets), one per pending transport error, one per pending
//! one-shot input (node, input) and one for the faults used. `F`
//! determines the world (up to hash collisions) and `F(π(w))` is computed by renaming while
//! hashing, without building `π(w)`. The canonical fingerprint is `min F(π(w))` over a set
//! `Π(w)` of permutations computed as follows.
//!
//! 1. **Fixed parts.** A part (a node's state and timers, a payload, an input) is *fixed* if
//!    every renaming leaves it unchanged. It is enough to try the two generators of `G` — the
//!    transposition of the first two nodes of `S` and the cycle through all of `S` — and compare
//!    canonical encodings byte for byte. A part without a rewrite function is fixed. A fixed
//!    part is hashed once; only moving parts are rewritten per permutation.
//! 2. **Colours.** Each node of `S` gets a colour that every renaming carries along (`colour of
//!    π(i) in π(w)` = `colour of i in w`): the hash of its own part when fixed (else only its
//!    clock and timer count), plus the multiset of its incident messages, transport errors
//!    and pending inputs, each described by direction, queue position, payload hash
//!    when fixed, and the other end when it lies outside `S` (nodes outside `S` never move). The
//!    colours are then refined like the 1-dimensional Weisfeiler–Leman algorithm: each round
//!    adds the multiset of the neighbours' colours along links between nodes of `S`, until the
//!    number of colour classes stops growing.
//! 3. **Interchangeable blocks.** Nodes `i` and `j` are *interchangeable* in `w` if the
//!    transposition `(i j)` maps `w` to itself; this is an equivalence relation (the
//!    transpositions in the stabiliser of `w` compose: `(i k) = (i j)(j k)(i j)`) and renaming
//!    carries it along. Within each colour class it is computed by testing `F((i j)(w)) = F(w)`
//!    against one representative per block found so far. The test is skipped when it provably
//!    succeeds: when every part of the world is fixed and no message or error links
//!    two nodes of `S`, two nodes of equal colour have equal parts and equal incident items, so
//!    swapping them changes nothing. Block sizes, which renaming preserves too, then split the
//!    colour classes further.
//! 4. **Enumeration.** `Π(w)` is the set of permutations that put the classes on `S`'s positions
//!    in colour order (the smallest colour on the lowest ids). Members of one block are
//!    interchangeable, so only the *arrangements* of the blocks over their class's positions
//!    are enumerated: `m! / (b!)^(m/b)` for a class of `m` nodes in blocks of `b` (one, when a
//!    class is a single block — the common case).
//!
//! # Why it is exact
//!
//! Colours, blocks and their order are functions of the world that renaming carries along, so
//! for every `σ ∈ G` the sorting permutations of `σ(w)` are those of `w` composed with `σ⁻¹`:
//! `{π(σ(w)) : π ∈ Π(σ(w))} = {π(w) : π ∈ Π(w)}`. The minimum is therefore the same for every
//! member of an orbit, whatever order the search meets them in. Conversely equal minima mean
//! `F(π(w)) = F(π'(w'))`, so `π(w) = π'(w')` and `w, w'` share an orbit. Skipping the
//! rearrangements within a block loses nothing: if `β` permutes a block then `β(w) = w` and
//! `πβ(w) = π(w)`. The only approximations are the ones every fingerprint makes — 128-bit hash
//! collisions, here also in the interchangeability test — and two worlds that differ only in
//! *which* of two identical one-shot inputs is pending are identified (they are bisimilar).
//!
//! The open connections a `FifoChannels` network tracks are not read: they matter only when a
//! node resets, and a world that differs from another only in them behaves the same without
//! resets. [`crate::Model::validate`] therefore rejects a symmetry on a `FifoChannels` network
//! with resets.
//!
//! The reduction is sound only if `G` really is a symmetry of the model: the rewrite functions
//! must be renamings (identity for the identity permutation, and rewriting by `π` then by `σ`
//! equals rewriting by `σ ∘ π`), handlers and properties must commute with renaming, and the
//! initial worlds must be closed under it. [`crate::Model::validate`] checks what it can: that
//! the nodes exist and are distinct, and that the driver and the resettable nodes are
//! invariant.
//!
//! # Cost
//!
//! Per world, with `n` nodes, `M` messages and `k = |S|`: two rewrites and three encodings per
//! part that has a rewrite function (one encoding otherwise), `O(n + M)` small hashes per
//! refinement round (at most `k` rounds, usually none), up to `k` transposition tests per block
//! when the fast path does not apply, and one evaluation of `F` per arrangement. An evaluation
//! rewrites only the moving parts. The worst case — every node of `S` distinguishable only
//! through moving parts — is `k!` evaluations; exactness is never traded for speed. Buffers
//! live in a thread-local scratch area, so a call allocates only what rewrite functions return.

use crate::world::NodeSlot;
use crate::{
    Budget, Driver, Fingerprint, FingerprintHasher, Model, ModelError, NetworkKind, NodeId, Protocol, World,
};
use serde::Serialize;
use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;
use xxhash_rust::xxh3::xxh3_128;

/// A bijection on node ids. Nodes it was not built for (ids past its length) map to themselves.
///
/// # Examples
/// ```
/// use foretell_model::{NodeId, Permutation};
/// let swap = Permutation::from_images(vec![NodeId(0), NodeId(2), NodeId(1)]).unwrap();
/// assert_eq!(swap.apply(NodeId(1)), NodeId(2));
/// assert_eq!(swap.inverse(NodeId(1)), NodeId(2));
/// assert_eq!(swap.apply(NodeId(7)), NodeId(7));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permutation {
    images: Vec<NodeId>,
    inverse: Vec<NodeId>,
}

impl Permutation {
    /// The identity on `nodes` nodes.
    pub fn identity(nodes: usize) -> Self {
        let mut permutation = Permutation::default();
        permutation.reset(nodes);
        permutation
    }

    /// The permutation that maps node `i` to `images[i]`, or `None` if `images` is not a
    /// bijection on `0..images.len()`.
    pub fn from_images(images: Vec<NodeId>) -> Option<Self> {
        let mut inverse = vec![NodeId(u32::MAX); images.len()];
        for (i, image) in images.iter().enumerate() {
            let slot = inverse.get_mut(image.index())?;
            if slot.0 != u32::MAX {
                return None;
            }
            *slot = NodeId::new(i);
        }
        Some(Permutation { images, inverse })
    }

    /// Where `node` goes.
    pub fn apply(&self, node: NodeId) -> NodeId {
        self.images.get(node.index()).copied().unwrap_or(node)
    }

    /// Which node goes to `node`.
    pub fn inverse(&self, node: NodeId) -> NodeId {
        self.inverse.get(node.index()).copied().unwrap_or(node)
    }

    /// Becomes the identity on `nodes` nodes, keeping the buffers.
    fn reset(&mut self, nodes: usize) {
        self.images.clear();
        self.images.extend(NodeId::all(nodes));
        self.inverse.clone_from(&self.images);
    }

    /// Maps `from` to `to`; the caller keeps the images a bijection, then calls `sync_inverse`.
    fn set_image(&mut self, from: NodeId, to: NodeId) {
        self.images[from.index()] = to;
    }

    /// Recomputes the inverse after `set_image` calls.
    fn sync_inverse(&mut self) {
        for (i, image) in self.images.iter().enumerate() {
            self.inverse[image.index()] = NodeId::new(i);
        }
    }
}

impl fmt::Display for Permutation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let moved: Vec<String> = NodeId::all(self.images.len())
            .filter(|n| self.apply(*n) != *n)
            .map(|n| format!("{n}->{}", self.apply(n)))
            .collect();
        if moved.is_empty() {
            f.write_str("identity")
        } else {
            f.write_str(&moved.join(" "))
        }
    }
}

/// A renaming function for values of type `T`.
type Rewrite<T> = Arc<dyn Fn(&T, &Permutation) -> T + Send + Sync>;

/// A set of interchangeable nodes and how to rename node ids inside the protocol's values.
///
/// Give it to a model with [`crate::Model::symmetry`]; engines then store
/// [`Symmetry::canonical_fingerprint`]s and visit each orbit of worlds once. A value type
/// without a rewrite function is taken to hold no ids of nodes in the set.
///
/// # Examples
/// ```
/// # use foretell_model::*;
/// # use serde::{Deserialize, Serialize};
/// # struct Vote;
/// # impl Protocol for Vote {
/// #     type State = Option<NodeId>; type Msg = (); type Timer = (); type Input = NodeId;
/// #     fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> Option<NodeId> { None }
/// #     fn on_message(&self, _: NodeId, _: &mut Option<NodeId>, _: NodeId, _: &(), _: &mut Out<'_, Self>) {}
/// #     fn on_input(&self, _: NodeId, s: &mut Option<NodeId>, i: &NodeId, _: &mut Out<'_, Self>) { s.get_or_insert(*i); }
/// # }
/// // Every node may vote for any other; the nodes are interchangeable.
/// let mut driver = Driver::new();
/// for (a, b) in [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)] {
///     driver = driver.spontaneous(NodeId(a), NodeId(b));
/// }
/// let symmetry = Symmetry::among(NodeId::all(3))
///     .states(|vote: &Option<NodeId>, p: &Permutation| vote.map(|n| p.apply(n)))
///     .inputs(|candidate: &NodeId, p: &Permutation| p.apply(*candidate));
/// let model = Model::new(Vote).nodes(3).driver(driver).symmetry(symmetry);
/// assert!(model.validate().is_ok());
/// ```
pub struct Symmetry<P: Protocol> {
    nodes: Vec<NodeId>,
    states: Option<Rewrite<P::State>>,
    messages: Option<Rewrite<P::Msg>>,
    timers: Option<Rewrite<P::Timer>>,
    inputs: Option<Rewrite<P::Input>>,
    /// The model's one-shot inputs, which the pending-input bits of a world index.
    one_shot: Vec<(NodeId, P::Input)>,
}

impl<P: Protocol> Clone for Symmetry<P> {
    fn clone(&self) -> Self {
        Symmetry {
            nodes: self.nodes.clone(),
            states: self.states.clone(),
            messages: self.messages.clone(),
            timers: self.timers.clone(),
            inputs: self.inputs.clone(),
            one_shot: self.one_shot.clone(),
        }
    }
}

impl<P: Protocol> fmt::Debug for Symmetry<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Symmetry")
            .field("nodes", &self.nodes)
            .field("states", &self.states.is_some())
            .field("messages", &self.messages.is_some())
            .field("timers", &self.timers.is_some())
            .field("inputs", &self.inputs.is_some())
            .finish()
    }
}

impl<P: Protocol> Symmetry<P> {
    /// The symmetry that makes `nodes` interchangeable, with no rewrite functions yet: states,
    /// messages, timers and inputs are taken to hold no ids of these nodes.
    pub fn among(nodes: impl IntoIterator<Item = NodeId>) -> Self {
        let mut nodes: Vec<NodeId> = nodes.into_iter().collect();
        nodes.sort_unstable();
        Symmetry { nodes, states: None, messages: None, timers: None, inputs: None, one_shot: Vec::new() }
    }

    /// Sets how to rename the node ids inside a node's state (a vector indexed by node must be
    /// permuted: entry `i` moves to `p.apply(i)`).
    pub fn states(
        mut self,
        rewrite: impl Fn(&P::State, &Permutation) -> P::State + Send + Sync + 'static,
    ) -> Self {
        self.states = Some(Arc::new(rewrite));
        self
    }

    /// Sets how to rename the node ids inside a message payload (sender and receiver are
    /// renamed by the checker).
    pub fn messages(
        mut self,
        rewrite: impl Fn(&P::Msg, &Permutation) -> P::Msg + Send + Sync + 'static,
    ) -> Self {
        self.messages = Some(Arc::new(rewrite));
        self
    }

    /// Sets how to rename the node ids inside a timer.
    pub fn timers(
        mut self,
        rewrite: impl Fn(&P::Timer, &Permutation) -> P::Timer + Send + Sync + 'static,
    ) -> Self {
        self.timers = Some(Arc::new(rewrite));
        self
    }

    /// Sets how to rename the node ids inside a driver input.
    pub fn inputs(
        mut self,
        rewrite: impl Fn(&P::Input, &Permutation) -> P::Input + Send + Sync + 'static,
    ) -> Self {
        self.inputs = Some(Arc::new(rewrite));
        self
    }

    /// The interchangeable nodes, in increasing order.
    pub fn nodes(&self) -> &[NodeId] {
        &self.nodes
    }

    /// Records the model's one-shot inputs (called by the model's builder).
    pub(crate) fn bind(&mut self, driver: &Driver<P>) {
        self.one_shot.clone_from(&driver.once);
    }

    /// Checks that the nodes exist and are distinct, that the driver and the resettable nodes
    /// are invariant under the group (checking its two generators suffices), and that the
    /// network does not need connections renamed.
    pub(crate) fn check(&self, model: &Model<P>) -> Result<(), ModelError> {
        let (nodes, driver, faults) = (model.node_count(), model.input_driver(), model.fault_budget());
        if let Some(node) = self.nodes.iter().find(|n| n.index() >= nodes) {
            return Err(ModelError::UnknownNode { node: *node, nodes });
        }
        if let Some(pair) = self.nodes.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(ModelError::DuplicateSymmetricNode(pair[0]));
        }
        if model.network_kind() == NetworkKind::FifoChannels && faults.resets != Budget::Off {
            return Err(ModelError::NotSymmetric(
                "resets on a fifo-channels network are not supported (open connections are not renamed)"
                    .into(),
            ));
        }
        if driver.startup != 0 {
            return Err(ModelError::NotSymmetric("startup inputs are not supported".into()));
        }
        let mut generators = Vec::new();
        self.generators(nodes, &mut generators);
        for g in &generators {
            self.invariant_inputs(&driver.once, g, "one-shot")?;
            self.invariant_inputs(&driver.spontaneous, g, "spontaneous")?;
            for node in faults.resettable.iter().flatten() {
                let image = g.apply(*node);
                if !faults.resettable.iter().flatten().any(|n| *n == image) {
                    return Err(ModelError::NotSymmetric(format!("{node} may reset but {image} may not")));
                }
            }
        }
        Ok(())
    }

    fn invariant_inputs(
        &self,
        inputs: &[(NodeId, P::Input)],
        g: &Permutation,
        kind: &str,
    ) -> Result<(), ModelError> {
        let mut matched = vec![false; inputs.len()];
        for (node, input) in inputs {
            let image = (g.apply(*node), self.rewrite_input(input, g));
            let found =
                (0..inputs.len()).find(|&j| !matched[j] && inputs[j].0 == image.0 && inputs[j].1 == image.1);
            match found {
                Some(j) => matched[j] = true,
                None => {
                    return Err(ModelError::NotSymmetric(format!(
                        "the driver has the {kind} input {input:?} at {node} but not {:?} at {}",
                        image.1, image.0
                    )))
                }
            }
        }
        Ok(())
    }

    /// The two generators of the group on `nodes` nodes: the transposition of the first two
    /// symmetric nodes and the cycle through all of them (one generator for two nodes, none
    /// for fewer).
    fn generators(&self, nodes: usize, into: &mut Vec<Permutation>) {
        let k = self.nodes.len();
        into.resize_with(
            match k {
                0 | 1 => 0,
                2 => 1,
                _ => 2,
            },
            Permutation::default,
        );
        for (g, permutation) in into.iter_mut().enumerate() {
            permutation.reset(nodes);
            if g == 0 {
                permutation.set_image(self.nodes[0], self.nodes[1]);
                permutation.set_image(self.nodes[1], self.nodes[0]);
            } else {
                for (i, node) in self.nodes.iter().enumerate() {
                    permutation.set_image(*node, self.nodes[(i + 1) % k]);
                }
            }
            permutation.sync_inverse();
        }
    }

    fn rewrite_input(&self, input: &P::Input, p: &Permutation) -> P::Input {
        self.inputs.as_ref().map_or_else(|| input.clone(), |f| f(input, p))
    }

    fn rewrite_msg(&self, msg: &P::Msg, p: &Permutation) -> P::Msg {
        self.messages.as_ref().map_or_else(|| msg.clone(), |f| f(msg, p))
    }

    /// A node's state and timers renamed by `p` (timers re-sorted: armed timers are a set).
    fn rewrite_node(&self, slot: &NodeSlot<P>, p: &Permutation) -> (P::State, Vec<P::Timer>, u64) {
        let state = self.states.as_ref().map_or_else(|| slot.state.clone(), |f| f(&slot.state, p));
        let timers = match &self.timers {
            Some(f) => {
                let mut timers: Vec<P::Timer> = slot.timers.iter().map(|t| f(t, p)).collect();
                timers.sort();
                timers
            }
            None => slot.timers.clone(),
        };
        (state, timers, slot.clock)
    }

    /// The canonical fingerprint of `world`: equal for two worlds exactly when one is the other
    /// with the symmetric nodes renamed, whatever order a search meets them in. It differs from
    /// [`World::fingerprint`].
    ///
    /// It is the minimum, over a set of renamings, of a hash of the renamed world's content.
    /// The set is computed from the world alone and moves with it: the renamings that sort the
    /// symmetric nodes by a colour that renaming preserves (their own state when no renaming
    /// changes it, and the messages, errors and inputs that involve them, refined along links
    /// between them), arranging ties in every way except among nodes whose exchange leaves the
    /// world unchanged. Every world of an orbit therefore yields the same set of renamed worlds
    /// and the same minimum. A call costs a few hashes per node and message, plus a rewrite of
    /// each part that renaming changes per renaming tried — one renaming when colours separate
    /// the nodes, `k!` in the worst case for `k` symmetric nodes. The source of this module
    /// gives the algorithm and the argument in full.
    ///
    /// `world` must come from the model this symmetry was given to.
    ///
    /// # Panics
    /// If a rewrite function panics, or if the world has fewer nodes than the symmetry names.
    pub fn canonical_fingerprint(&self, world: &World<P>) -> Fingerprint {
        if world.nodes.is_empty() {
            return world.fingerprint(); // poisoned by a panicking init: nothing to rename
        }
        assert!(
            self.nodes.last().is_none_or(|n| n.index() < world.nodes.len()),
            "the symmetry names nodes the world does not have"
        );
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut scratch) => self.canonical(world, &mut scratch),
            // A rewrite function that itself asks for a canonical fingerprint.
            Err(_) => self.canonical(world, &mut Scratch::default()),
        })
    }

    fn canonical(&self, world: &World<P>, s: &mut Scratch) -> Fingerprint {
        let n = world.nodes.len();
        let k = self.nodes.len();
        self.generators(n, &mut s.generators);
        self.hash_parts(world, s);
        s.perm.reset(n);
        if k < 2 {
            return Fingerprint(self.evaluate(world, &s.parts, &s.perm));
        }
        let links = self.colours(world, s);
        let classes = self.blocks(world, s, links);
        // Walk every arrangement of blocks within classes, odometer style.
        let mut best = u128::MAX;
        loop {
            s.perm.reset(n);
            for (p, &member) in s.order.iter().enumerate() {
                s.perm.set_image(self.nodes[member as usize], self.nodes[p]);
            }
            for &(start, end, size) in &classes {
                s.count.clear();
                s.count.resize((end - start) / size, 0);
                for p in start..end {
                    let label = s.labels[p] as usize;
                    let member = s.order[start + label * size + s.count[label]] as usize;
                    s.count[label] += 1;
                    s.perm.set_image(self.nodes[member], self.nodes[p]);
                }
            }
            s.perm.sync_inverse();
            best = best.min(self.evaluate(world, &s.parts, &s.perm));
            let advanced =
                classes.iter().rev().any(|&(start, end, _)| next_arrangement(&mut s.labels[start..end]));
            if !advanced {
                break;
            }
        }
        s.classes = classes;
        Fingerprint(best)
    }

    /// Step 1: hashes every part once, noting which parts no renaming moves.
    fn hash_parts(&self, world: &World<P>, s: &mut Scratch) {
        let Scratch { parts, generators, bytes, .. } = s;
        parts.nodes.clear();
        let moves = self.states.is_some() || self.timers.is_some();
        for slot in &world.nodes {
            let value = (&slot.state, slot.timers.as_slice(), slot.clock);
            parts.nodes.push(fixed_hash(&value, moves, |g| self.rewrite_node(slot, g), generators, bytes));
        }
        let messages = world.network.messages();
        parts.payloads.clear();
        parts.queues.clear();
        let mut position = 0u64;
        for (i, e) in messages.iter().enumerate() {
            let moves = self.messages.is_some();
            parts.payloads.push(fixed_hash(
                &e.msg,
                moves,
                |g| self.rewrite_msg(&e.msg, g),
                generators,
                bytes,
            ));
            let same_queue = i > 0 && {
                let prev = &messages[i - 1];
                match world.network.kind() {
                    NetworkKind::FifoChannels => (prev.from, prev.to) == (e.from, e.to),
                    NetworkKind::FifoInbox => prev.to == e.to,
                    NetworkKind::Unordered | NetworkKind::GrowOnly => false,
                }
            };
            position = if same_queue { position + 1 } else { 0 };
            parts.queues.push(position);
        }
        parts.pending.clear();
        for i in (0..64).filter(|i| world.pending & (1 << i) != 0) {
            let entry = self.one_shot.get(i).map(|(_, input)| {
                let moves = self.inputs.is_some();
                fixed_hash(input, moves, |g| self.rewrite_input(input, g), generators, bytes)
            });
            parts.pending.push((i, entry.flatten()));
        }
        let f = world.faults_used;
        parts.constant =
            term(b'F', u64::from(f.resets), u64::from(f.drops) << 32 | u64::from(f.duplicates), 0);
    }

    /// `F(p(world))`: the hash of the world renamed by `p`, rewriting only moving parts.
    fn evaluate(&self, world: &World<P>, parts: &Parts, p: &Permutation) -> u128 {
        let mut sum = parts.constant;
        for (n, slot) in world.nodes.iter().enumerate() {
            let part = parts.nodes[n].unwrap_or_else(|| FingerprintHasher::hash(&self.rewrite_node(slot, p)));
            sum = sum.wrapping_add(term(b'N', u64::from(p.apply(NodeId::new(n)).0), 0, part));
        }
        for (i, e) in world.network.messages().iter().enumerate() {
            let payload =
                parts.payloads[i].unwrap_or_else(|| FingerprintHasher::hash(&self.rewrite_msg(&e.msg, p)));
            let ends = pair(p.apply(e.from), p.apply(e.to));
            sum = sum.wrapping_add(term(b'M', parts.queues[i], ends, payload));
        }
        for &(node, peer) in world.network.errors() {
            sum = sum.wrapping_add(term(b'E', 0, pair(p.apply(node), p.apply(peer)), 0));
        }
        for &(i, fixed) in &parts.pending {
            let (node, hash) = match self.one_shot.get(i) {
                Some((node, input)) => (
                    p.apply(*node),
                    fixed.unwrap_or_else(|| FingerprintHasher::hash(&self.rewrite_input(input, p))),
                ),
                None => (NodeId(u32::MAX), i as u128), // a world of another model; keep the bit
            };
            sum = sum.wrapping_add(term(b'P', u64::from(node.0), 0, hash));
        }
        sum
    }

    /// Step 2: the colour of each symmetric node, refined along links between symmetric nodes.
    /// Returns whether any such link exists.
    fn colours(&self, world: &World<P>, s: &mut Scratch) -> bool {
        let n = world.nodes.len();
        let k = self.nodes.len();
        s.slot.clear();
        s.slot.resize(n, NONE);
        for (a, node) in self.nodes.iter().enumerate() {
            s.slot[node.index()] = a as u32;
        }
        let slot = &s.slot;
        let member =
            |node: NodeId| slot.get(node.index()).copied().filter(|a| *a != NONE).map(|a| a as usize);
        // How `me` sees the other end of a link: itself, another symmetric node, or a fixed node.
        let other = |node: NodeId, me: NodeId| {
            if node == me {
                SELF
            } else if member(node).is_some() {
                PEER
            } else {
                u64::from(node.0)
            }
        };
        let (colour, next) = (&mut s.colour, &mut s.next);
        colour.clear();
        next.clear();
        next.resize(k, 0);
        for node in &self.nodes {
            let slot = &world.nodes[node.index()];
            colour.push(
                s.parts.nodes[node.index()]
                    .unwrap_or_else(|| term(b'm', slot.clock, slot.timers.len() as u64, MOVING)),
            );
        }
        let mut links = false;
        s.descriptions.clear();
        for (i, e) in world.network.messages().iter().enumerate() {
            let description = term(b'd', s.parts.queues[i], 0, s.parts.payloads[i].unwrap_or(MOVING));
            s.descriptions.push(description);
            if let Some(a) = member(e.from) {
                next[a] = next[a].wrapping_add(term(b'o', other(e.to, e.from), 0, description));
            }
            if let Some(a) = member(e.to) {
                next[a] = next[a].wrapping_add(term(b'i', other(e.from, e.to), 0, description));
            }
            links |= e.from != e.to && member(e.from).is_some() && member(e.to).is_some();
        }
        for &(node, peer) in world.network.errors() {
            if let Some(a) = member(node) {
                next[a] = next[a].wrapping_add(term(b'e', other(peer, node), 0, 0));
            }
            if let Some(a) = member(peer) {
                next[a] = next[a].wrapping_add(term(b'r', other(node, peer), 0, 0));
            }
            links |= node != peer && member(node).is_some() && member(peer).is_some();
        }
        for &(i, hash) in &s.parts.pending {
            if let Some(a) = self.one_shot.get(i).and_then(|(node, _)| member(*node)) {
                next[a] = next[a].wrapping_add(term(b'p', 0, 0, hash.unwrap_or(MOVING)));
            }
        }
        for (c, incident) in colour.iter_mut().zip(next.iter()) {
            *c = combine(*c, *incident);
        }
        if !links {
            return false;
        }
        let mut classes = distinct(colour, &mut s.sorted);
        while classes < k {
            next.iter_mut().for_each(|x| *x = 0);
            let mut link = |tag: u8, from: NodeId, to: NodeId, description: u128| {
                if let (Some(a), Some(b)) = (member(from), member(to)) {
                    if a != b {
                        next[a] = next[a].wrapping_add(term(tag, 0, 0, combine(description, colour[b])));
                        next[b] = next[b].wrapping_add(term(tag + 1, 0, 0, combine(description, colour[a])));
                    }
                }
            };
            for (e, description) in world.network.messages().iter().zip(&s.descriptions) {
                link(b'O', e.from, e.to, *description);
            }
            for &(node, peer) in world.network.errors() {
                link(b'R', node, peer, 0);
            }
            for (c, incident) in colour.iter_mut().zip(next.iter()) {
                *c = combine(*c, *incident);
            }
            let refined = distinct(colour, &mut s.sorted);
            if refined == classes {
                break;
            }
            classes = refined;
        }
        true
    }

    /// Step 3: interchangeable blocks within colour classes, the final order of the symmetric
    /// nodes, and the first arrangement. Returns the classes with more than one block as
    /// (start, end, block size) ranges of `order`.
    fn blocks(&self, world: &World<P>, s: &mut Scratch, links: bool) -> Vec<(usize, usize, usize)> {
        let k = self.nodes.len();
        let colour = &s.colour;
        s.order.clear();
        s.order.extend(0..k as u32);
        s.order.sort_unstable_by_key(|&a| (colour[a as usize], a));
        s.block.clear();
        s.block.resize(k, NONE);
        let provable = !links
            && s.parts.nodes.iter().all(Option::is_some)
            && s.parts.payloads.iter().all(Option::is_some)
            && s.parts.pending.iter().all(|(_, hash)| hash.is_some());
        let base = if provable { 0 } else { self.evaluate(world, &s.parts, &s.perm) };
        let mut start = 0;
        while start < k {
            let c = colour[s.order[start] as usize];
            let end = start + s.order[start..].iter().take_while(|&&a| colour[a as usize] == c).count();
            for i in start..end {
                let a = s.order[i] as usize;
                if provable {
                    s.block[a] = s.order[start];
                    continue;
                }
                let mut found = None;
                for j in start..i {
                    let rep = s.order[j] as usize;
                    if s.block[rep] as usize != rep {
                        continue;
                    }
                    s.perm.set_image(self.nodes[a], self.nodes[rep]);
                    s.perm.set_image(self.nodes[rep], self.nodes[a]);
                    s.perm.sync_inverse();
                    let same = self.evaluate(world, &s.parts, &s.perm) == base;
                    s.perm.set_image(self.nodes[a], self.nodes[a]);
                    s.perm.set_image(self.nodes[rep], self.nodes[rep]);
                    s.perm.sync_inverse();
                    if same {
                        found = Some(rep as u32);
                        break;
                    }
                }
                s.block[a] = found.unwrap_or(a as u32);
            }
            start = end;
        }
        s.size.clear();
        s.size.resize(k, 0);
        for &b in &s.block {
            s.size[b as usize] += 1;
        }
        let (block, size) = (&s.block, &s.size);
        let key = |a: usize| (colour[a], size[block[a] as usize], block[a], a);
        s.order.sort_unstable_by_key(|&a| key(a as usize));
        // Classes are runs of equal (colour, block size); label each block within its class.
        let mut classes = std::mem::take(&mut s.classes);
        classes.clear();
        s.labels.clear();
        let mut start = 0;
        while start < k {
            let (c, b, _, _) = key(s.order[start] as usize);
            let end = start
                + s.order[start..]
                    .iter()
                    .take_while(|&&a| key(a as usize).0 == c && key(a as usize).1 == b)
                    .count();
            for i in start..end {
                s.labels.push(((i - start) / b as usize) as u32);
            }
            if (end - start) > b as usize {
                classes.push((start, end, b as usize));
            }
            start = end;
        }
        classes
    }
}

/// Marks a node outside the symmetric set in `Scratch::slot`, and a block not yet assigned.
const NONE: u32 = u32::MAX;
/// The other end of a link is the node itself.
const SELF: u64 = u64::MAX;
/// The other end of a link is another symmetric node.
const PEER: u64 = u64::MAX - 1;
/// The colour of a part that some renaming changes.
const MOVING: u128 = u128::MAX;

/// The per-world hashes of the parts, computed once per canonical fingerprint.
#[derive(Default)]
struct Parts {
    /// Per node: the hash of (state, timers, clock) if fixed.
    nodes: Vec<Option<u128>>,
    /// Per message: the payload's hash if fixed.
    payloads: Vec<Option<u128>>,
    /// Per message: its position in its FIFO queue (0 for the unordered kinds).
    queues: Vec<u64>,
    /// Per pending one-shot input: its index and, if fixed, its hash.
    pending: Vec<(usize, Option<u128>)>,
    /// The term of the faults used, which renaming does not change.
    constant: u128,
}

/// Reusable buffers, one set per thread.
#[derive(Default)]
struct Scratch {
    parts: Parts,
    perm: Permutation,
    generators: Vec<Permutation>,
    bytes: [Vec<u8>; 2],
    /// Per node: its index among the symmetric nodes, or `NONE`.
    slot: Vec<u32>,
    colour: Vec<u128>,
    next: Vec<u128>,
    sorted: Vec<u128>,
    descriptions: Vec<u128>,
    /// Symmetric-node indices in canonical order.
    order: Vec<u32>,
    /// Per symmetric node: the representative of its interchangeable block.
    block: Vec<u32>,
    /// Per representative: its block's size.
    size: Vec<u32>,
    /// Per position of `order`: the label of the block placed there.
    labels: Vec<u32>,
    count: Vec<usize>,
    classes: Vec<(usize, usize, usize)>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The hash of `value`'s encoding if every generator leaves it unchanged (then the whole group
/// does), else `None`. `rewritten` gives the value renamed by a generator; `moves` is whether
/// there is a rewrite function at all.
fn fixed_hash<V: Serialize, W: Serialize>(
    value: &V,
    moves: bool,
    rewritten: impl Fn(&Permutation) -> W,
    generators: &[Permutation],
    [bytes, other]: &mut [Vec<u8>; 2],
) -> Option<u128> {
    encode(value, bytes);
    if moves {
        for g in generators {
            encode(&rewritten(g), other);
            if bytes != other {
                return None;
            }
        }
    }
    Some(xxh3_128(bytes))
}

fn encode<T: Serialize + ?Sized>(value: &T, bytes: &mut Vec<u8>) {
    let mut taken = std::mem::take(bytes);
    taken.clear();
    *bytes = postcard::to_extend(value, taken).expect("canonical encoding of a model value cannot fail");
}

/// A domain-tagged term of `F`.
fn term(tag: u8, a: u64, b: u64, part: u128) -> u128 {
    let mut bytes = [0u8; 33];
    bytes[0] = tag;
    bytes[1..9].copy_from_slice(&a.to_le_bytes());
    bytes[9..17].copy_from_slice(&b.to_le_bytes());
    bytes[17..].copy_from_slice(&part.to_le_bytes());
    xxh3_128(&bytes)
}

fn combine(a: u128, b: u128) -> u128 {
    let mut bytes = [0u8; 32];
    bytes[..16].copy_from_slice(&a.to_le_bytes());
    bytes[16..].copy_from_slice(&b.to_le_bytes());
    xxh3_128(&bytes)
}

fn pair(a: NodeId, b: NodeId) -> u64 {
    u64::from(a.0) << 32 | u64::from(b.0)
}

/// How many distinct values `values` holds.
fn distinct(values: &[u128], sorted: &mut Vec<u128>) -> usize {
    sorted.clear();
    sorted.extend_from_slice(values);
    sorted.sort_unstable();
    sorted.dedup();
    sorted.len()
}

/// Steps `labels` to the next distinct arrangement in lexicographic order; at the last one,
/// wraps around to the sorted first one and returns `false`.
fn next_arrangement(labels: &mut [u32]) -> bool {
    let Some(i) = labels.windows(2).rposition(|w| w[0] < w[1]) else {
        labels.reverse();
        return false;
    };
    let j = labels.iter().rposition(|&x| x > labels[i]).expect("a larger label follows");
    labels.swap(i, j);
    labels[i + 1..].reverse();
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChoiceOdometer, EventOf, Faults, Out, Simulator};
    use serde::Deserialize;
    use std::collections::{HashMap, HashSet, VecDeque};

    /// Node 0 is a hub, nodes 1..=members gossip: once awake, a member greets one other member
    /// (`Hi` carries its id) and re-sends on a timer; the first greeting a member hears it
    /// reports to the hub, which tallies greetings per greeter and keeps the set of (reporter,
    /// greeter) pairs. Ids sit in states (an index-addressed tally, a sorted set of pairs,
    /// optional ids), messages, timers and inputs.
    struct Gossip {
        members: usize,
    }

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    enum State {
        Hub { tally: Vec<u8>, reports: Vec<(NodeId, NodeId)> },
        Member { awake: bool, greeted: Option<NodeId>, heard: Option<NodeId> },
    }

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    enum Msg {
        Hi(NodeId),
        Report(NodeId),
    }

    #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
    enum Timer {
        Retry(NodeId),
    }

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    enum Input {
        Wake,
        Greet(NodeId),
    }

    const HUB: NodeId = NodeId(0);

    impl Protocol for Gossip {
        type State = State;
        type Msg = Msg;
        type Timer = Timer;
        type Input = Input;

        fn init(&self, me: NodeId, _: &mut Out<'_, Self>) -> State {
            if me == HUB {
                State::Hub { tally: vec![0; self.members], reports: Vec::new() }
            } else {
                State::Member { awake: false, greeted: None, heard: None }
            }
        }

        fn on_message(&self, _: NodeId, state: &mut State, from: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
            match (state, msg) {
                (State::Hub { tally, reports }, Msg::Report(x)) => {
                    tally[x.index() - 1] = (tally[x.index() - 1] + 1).min(2);
                    if let Err(at) = reports.binary_search(&(from, *x)) {
                        reports.insert(at, (from, *x));
                    }
                }
                (State::Member { heard: heard @ None, .. }, Msg::Hi(x)) => {
                    *heard = Some(*x);
                    out.send(HUB, Msg::Report(*x));
                }
                _ => {}
            }
        }

        fn on_timer(&self, me: NodeId, state: &mut State, timer: &Timer, out: &mut Out<'_, Self>) {
            let (State::Member { heard, .. }, Timer::Retry(peer)) = (state, timer) else { return };
            if *heard != Some(*peer) {
                out.send(*peer, Msg::Hi(me));
            }
        }

        fn on_input(&self, me: NodeId, state: &mut State, input: &Input, out: &mut Out<'_, Self>) {
            match (state, input) {
                (State::Member { awake, .. }, Input::Wake) => *awake = true,
                (State::Member { awake: true, greeted: greeted @ None, .. }, Input::Greet(peer)) => {
                    *greeted = Some(*peer);
                    out.send(*peer, Msg::Hi(me));
                    out.set_timer(Timer::Retry(*peer), 10);
                }
                _ => {}
            }
        }
    }

    fn rename_state(state: &State, p: &Permutation) -> State {
        match state {
            State::Hub { tally, reports } => {
                let mut renamed = vec![0; tally.len()];
                for (i, count) in tally.iter().enumerate() {
                    renamed[p.apply(NodeId::new(i + 1)).index() - 1] = *count;
                }
                let mut reports: Vec<_> = reports.iter().map(|(a, b)| (p.apply(*a), p.apply(*b))).collect();
                reports.sort();
                State::Hub { tally: renamed, reports }
            }
            State::Member { awake, greeted, heard } => State::Member {
                awake: *awake,
                greeted: greeted.map(|n| p.apply(n)),
                heard: heard.map(|n| p.apply(n)),
            },
        }
    }

    fn rename_msg(msg: &Msg, p: &Permutation) -> Msg {
        match msg {
            Msg::Hi(n) => Msg::Hi(p.apply(*n)),
            Msg::Report(n) => Msg::Report(p.apply(*n)),
        }
    }

    fn rename_timer(Timer::Retry(n): &Timer, p: &Permutation) -> Timer {
        Timer::Retry(p.apply(*n))
    }

    fn rename_input(input: &Input, p: &Permutation) -> Input {
        match input {
            Input::Wake => Input::Wake,
            Input::Greet(n) => Input::Greet(p.apply(*n)),
        }
    }

    fn symmetry(members: usize) -> Symmetry<Gossip> {
        Symmetry::among(NodeId::all(members + 1).skip(1))
            .states(rename_state)
            .messages(rename_msg)
            .timers(rename_timer)
            .inputs(rename_input)
    }

    fn driver(members: usize) -> Driver<Gossip> {
        let mut driver = Driver::new();
        for a in NodeId::all(members + 1).skip(1) {
            driver = driver.input(a, Input::Wake);
            for b in NodeId::all(members + 1).skip(1).filter(|b| *b != a) {
                driver = driver.spontaneous(a, Input::Greet(b));
            }
        }
        driver
    }

    fn model(members: usize, kind: NetworkKind, faults: Faults) -> Model<Gossip> {
        // The symmetry is declared before the driver: the model keeps them bound either way.
        Model::new(Gossip { members })
            .nodes(members + 1)
            .symmetry(symmetry(members))
            .network(kind)
            .faults(faults)
            .driver(driver(members))
    }

    /// The configurations the exactness tests cover: every network kind, faults where allowed.
    fn configurations() -> Vec<(NetworkKind, Faults)> {
        let one = Budget::at_most(1);
        vec![
            (NetworkKind::Unordered, Faults::none().resets(one).resettable(NodeId::all(4).skip(1))),
            (NetworkKind::FifoInbox, Faults::none().duplicates(one)),
            (NetworkKind::FifoChannels, Faults::none().drops(one)),
            (NetworkKind::GrowOnly, Faults::none()),
        ]
    }

    /// Every reachable world (by plain fingerprint) with the events of a shortest path to it.
    fn reachable(model: &Model<Gossip>) -> Vec<(World<Gossip>, Vec<EventOf<Gossip>>)> {
        let sim = Simulator::new(model).expect("valid model");
        let mut seen = HashSet::new();
        let mut worlds = Vec::new();
        sim.initial_worlds(|_, world, _| {
            if seen.insert(world.fingerprint()) {
                worlds.push((world, Vec::new()));
            }
        });
        let mut actions = Vec::new();
        let mut next = 0;
        while next < worlds.len() {
            sim.actions(&worlds[next].0, &mut actions);
            for &action in &actions {
                let (world, path) = &worlds[next];
                let event = sim.event(world, action);
                let successor = sim.step(world, action, &mut ChoiceOdometer::new(), false).world;
                if seen.insert(successor.fingerprint()) {
                    let mut path = path.clone();
                    path.push(event);
                    worlds.push((successor, path));
                }
            }
            next += 1;
        }
        worlds
    }

    /// A BFS that stores canonical fingerprints: the number of orbits it visits.
    fn orbits<P: Protocol>(model: &Model<P>, reverse: bool) -> usize {
        let sim = Simulator::new(model).expect("valid model");
        let symmetry = model.symmetry_ref().expect("a symmetry");
        let mut seen = HashSet::new();
        let mut queue = VecDeque::new();
        sim.initial_worlds(|_, world, _| {
            if seen.insert(symmetry.canonical_fingerprint(&world)) {
                queue.push_back(world);
            }
        });
        let mut actions = Vec::new();
        while let Some(world) = queue.pop_front() {
            sim.actions(&world, &mut actions);
            if reverse {
                actions.reverse();
            }
            for &action in &actions {
                let successor = sim.step(&world, action, &mut ChoiceOdometer::new(), false).world;
                if seen.insert(symmetry.canonical_fingerprint(&successor)) {
                    queue.push_back(successor);
                }
            }
        }
        seen.len()
    }

    /// Every permutation of the symmetric nodes, as permutations of all `nodes` nodes.
    fn group(symmetric: &[NodeId], nodes: usize) -> Vec<Permutation> {
        let mut labels: Vec<u32> = (0..symmetric.len() as u32).collect();
        let mut all = Vec::new();
        loop {
            let mut p = Permutation::identity(nodes);
            for (i, &l) in labels.iter().enumerate() {
                p.set_image(symmetric[i], symmetric[l as usize]);
            }
            p.sync_inverse();
            all.push(p);
            if !next_arrangement(&mut labels) {
                return all;
            }
        }
    }

    /// `F(p(world))` for each `p`, from scratch.
    fn renamed_hashes(symmetry: &Symmetry<Gossip>, world: &World<Gossip>, ps: &[Permutation]) -> Vec<u128> {
        let mut scratch = Scratch::default();
        symmetry.generators(world.node_count(), &mut scratch.generators);
        symmetry.hash_parts(world, &mut scratch);
        ps.iter().map(|p| symmetry.evaluate(world, &scratch.parts, p)).collect()
    }

    fn rename_event(event: &EventOf<Gossip>, p: &Permutation) -> EventOf<Gossip> {
        use crate::Event::*;
        match event.clone() {
            Deliver { from, to, msg } => {
                Deliver { from: p.apply(from), to: p.apply(to), msg: rename_msg(&msg, p) }
            }
            Drop { from, to, msg } => Drop { from: p.apply(from), to: p.apply(to), msg: rename_msg(&msg, p) },
            Duplicate { from, to, msg } => {
                Duplicate { from: p.apply(from), to: p.apply(to), msg: rename_msg(&msg, p) }
            }
            TransportError { node, peer } => TransportError { node: p.apply(node), peer: p.apply(peer) },
            Timer { node, timer } => Timer { node: p.apply(node), timer: rename_timer(&timer, p) },
            Input { node, input } => Input { node: p.apply(node), input: rename_input(&input, p) },
            Spontaneous { node, input } => {
                Spontaneous { node: p.apply(node), input: rename_input(&input, p) }
            }
            Reset { node } => Reset { node: p.apply(node) },
            SocketError { node, peer } => {
                let (a, b) = (p.apply(node), p.apply(peer));
                SocketError { node: a.min(b), peer: a.max(b) }
            }
        }
    }

    /// Runs `events` from the initial world, finding each among the enabled ones.
    fn run(model: &Model<Gossip>, events: &[EventOf<Gossip>]) -> World<Gossip> {
        let sim = Simulator::new(model).expect("valid model");
        let mut world = None;
        sim.initial_worlds(|_, w, _| world = Some(w));
        let mut world = world.expect("an initial world");
        for event in events {
            let action = sim.find_action(&world, event).unwrap_or_else(|| panic!("{event:?} is not enabled"));
            world = sim.step(&world, action, &mut ChoiceOdometer::new(), false).world;
        }
        world
    }

    #[test]
    fn permutations_are_bijections() {
        assert!(Permutation::from_images(vec![NodeId(1), NodeId(1)]).is_none());
        assert!(Permutation::from_images(vec![NodeId(0), NodeId(2)]).is_none());
        let p = Permutation::from_images(vec![NodeId(1), NodeId(2), NodeId(0)]).expect("a bijection");
        for n in NodeId::all(4) {
            assert_eq!(p.inverse(p.apply(n)), n);
        }
        assert_eq!(p.to_string(), "n0->n1 n1->n2 n2->n0");
        assert_eq!(Permutation::identity(3).to_string(), "identity");
    }

    #[test]
    fn validation_rejects_what_is_not_a_symmetry() {
        let one = Budget::at_most(1);
        let check = |model: Model<Gossip>| model.validate();
        assert_eq!(check(model(3, NetworkKind::Unordered, Faults::none())), Ok(()));
        let unknown = model(3, NetworkKind::Unordered, Faults::none()).symmetry(Symmetry::among([NodeId(4)]));
        assert_eq!(check(unknown), Err(ModelError::UnknownNode { node: NodeId(4), nodes: 4 }));
        let twice =
            model(3, NetworkKind::Unordered, Faults::none()).symmetry(Symmetry::among([NodeId(1); 2]));
        assert_eq!(check(twice), Err(ModelError::DuplicateSymmetricNode(NodeId(1))));
        let lopsided = model(3, NetworkKind::Unordered, Faults::none())
            .driver(driver(3).spontaneous(NodeId(1), Input::Greet(NodeId(2))));
        assert!(matches!(check(lopsided), Err(ModelError::NotSymmetric(_))));
        // Without the input rewrite function, `Greet(n)` looks id-free, which it is not.
        let blind = model(3, NetworkKind::Unordered, Faults::none())
            .symmetry(Symmetry::among(NodeId::all(4).skip(1)).states(rename_state));
        assert!(matches!(check(blind), Err(ModelError::NotSymmetric(_))));
        let resets = Faults::none().resets(one).resettable([NodeId(0), NodeId(1)]);
        assert!(matches!(check(model(3, NetworkKind::Unordered, resets)), Err(ModelError::NotSymmetric(_))));
        let channels = model(3, NetworkKind::FifoChannels, Faults::none().resets(one));
        assert!(matches!(check(channels), Err(ModelError::NotSymmetric(_))));
    }

    #[test]
    fn renamed_runs_share_a_canonical_fingerprint_and_different_ones_do_not() {
        let model = model(3, NetworkKind::Unordered, Faults::none());
        let symmetry = model.symmetry_ref().expect("a symmetry");
        let wake = |n: u32| EventOf::<Gossip>::Input { node: NodeId(n), input: Input::Wake };
        let greet = |a: u32, b: u32| EventOf::<Gossip>::Spontaneous {
            node: NodeId(a),
            input: Input::Greet(NodeId(b)),
        };
        let one_greets_two = run(&model, &[wake(1), greet(1, 2)]);
        let three_greets_one = run(&model, &[wake(3), greet(3, 1)]);
        let one_greets_three = run(&model, &[wake(1), greet(1, 3)]);
        let one_woke = run(&model, &[wake(1)]);
        assert_ne!(one_greets_two.fingerprint(), three_greets_one.fingerprint());
        let canonical = |w: &World<Gossip>| symmetry.canonical_fingerprint(w);
        assert_eq!(canonical(&one_greets_two), canonical(&three_greets_one));
        assert_eq!(canonical(&one_greets_two), canonical(&one_greets_three));
        assert_ne!(canonical(&one_greets_two), canonical(&one_woke));
        // The hub's tally is indexed by member: who was greeted, not just how many, must match.
        let deliver = |a: u32, b: u32| EventOf::<Gossip>::Deliver {
            from: NodeId(a),
            to: NodeId(b),
            msg: Msg::Hi(NodeId(a)),
        };
        let report = |a: u32, x: u32| EventOf::<Gossip>::Deliver {
            from: NodeId(a),
            to: HUB,
            msg: Msg::Report(NodeId(x)),
        };
        let two_greeted = run(&model, &[wake(1), greet(1, 2), deliver(1, 2), report(2, 1)]);
        let three_greeted = run(&model, &[wake(2), greet(2, 3), deliver(2, 3), report(3, 2)]);
        assert_eq!(canonical(&two_greeted), canonical(&three_greeted));
        let tallied_other = run(&model, &[wake(1), greet(1, 2), deliver(1, 2), wake(3), greet(3, 2)]);
        assert_ne!(canonical(&two_greeted), canonical(&tallied_other));
    }

    /// The canonical fingerprint agrees with the definition — the minimum over the whole group —
    /// on every reachable world of every network kind, the hash of a renamed world computed
    /// without building it equals the hash of the world a renamed run reaches, and every
    /// renamed run reaches the same canonical fingerprint.
    #[test]
    #[cfg_attr(debug_assertions, ignore = "45 s in a debug build; runs in the release-mode test command")]
    fn canonical_fingerprints_are_exact_on_every_network_kind() {
        for (kind, faults) in configurations() {
            let model = model(3, kind, faults);
            let symmetry = model.symmetry_ref().expect("a symmetry");
            let group = group(symmetry.nodes(), 4);
            let identity = [Permutation::identity(4)];
            let worlds = reachable(&model);
            let mut by_fast = HashMap::new();
            let mut by_slow = HashMap::new();
            for (index, (world, path)) in worlds.iter().enumerate() {
                let fast = symmetry.canonical_fingerprint(world);
                let renamed = renamed_hashes(symmetry, world, &group);
                let slow = *renamed.iter().min().expect("a non-empty group");
                assert_eq!(
                    *by_fast.entry(fast).or_insert(slow),
                    slow,
                    "{kind:?}: one canonical form, two orbits"
                );
                assert_eq!(
                    *by_slow.entry(slow).or_insert(fast),
                    fast,
                    "{kind:?}: one orbit, two canonical forms"
                );
                if index % 8 == 0 {
                    for (p, expected) in group.iter().zip(&renamed) {
                        let events: Vec<_> = path.iter().map(|e| rename_event(e, p)).collect();
                        let twin = run(&model, &events);
                        assert_eq!(
                            renamed_hashes(symmetry, &twin, &identity)[0],
                            *expected,
                            "{kind:?} under {p}"
                        );
                        assert_eq!(symmetry.canonical_fingerprint(&twin), fast, "{kind:?} under {p}");
                    }
                }
            }
            let count = by_fast.len();
            assert!(
                count * 6 >= worlds.len() && count < worlds.len(),
                "{kind:?}: {count} of {}",
                worlds.len()
            );
            assert_eq!(orbits(&model, false), count, "{kind:?}");
            assert_eq!(orbits(&model, true), count, "{kind:?}");
        }
    }

    /// With a single symmetric node, or none, the canonical form still identifies exactly equal
    /// worlds: orbits are single worlds.
    #[test]
    fn a_trivial_group_counts_every_world() {
        let model = Model::new(Gossip { members: 2 })
            .nodes(3)
            .driver(driver(2))
            .symmetry(Symmetry::among([NodeId(1)]).states(rename_state));
        assert_eq!(orbits(&model, false), reachable(&model).len());
    }
}
