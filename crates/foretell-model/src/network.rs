//! The network: messages in flight, pending transport errors, and open connections.
//!
//! One flat, canonically ordered vector of envelopes serves every network kind; the kind decides
//! the order, which messages are deliverable, and whether delivery consumes a message:
//!
//! | kind | order of the vector | deliverable | delivery |
//! | --- | --- | --- | --- |
//! | `Unordered` (UDP-like multiset) | by destination, then message hash | every distinct message | consumes one copy |
//! | `FifoChannels` (TCP-like) | by (source, destination), then send order | the head of each channel (that no pending transport error holds back, under [`ErrorOrder::Queued`]) | consumes it |
//! | `FifoInbox` (P#-like) | by destination, then send order | the head of each inbox | consumes it |
//! | `GrowOnly` (TLA+ message set, LMC's I+) | by destination, then message hash, no duplicates | every message | never consumes |
//!
//! Envelopes are shared (`Arc`) between worlds, and each carries the stable hash of its source,
//! destination and payload, computed once when it is sent. The network keeps its own
//! contribution to the world fingerprint up to date as it changes: a send or a delivery adjusts
//! one term (or, for the FIFO kinds, the terms of one queue), so no step rehashes the network.

use crate::message_numbers::{HeldNumbers, MessageNumbers, UNNUMBERED};
use crate::{FingerprintHasher, NodeId};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

mod cut;
pub(crate) use cut::{Cut, CutTaken};

/// How the network orders, keeps and delivers messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkKind {
    /// An unordered multiset: any message in flight may be delivered next (UDP-like).
    Unordered,
    /// FIFO per directed channel (TCP-like). A reset breaks the reset node's connections: its
    /// peers observe a transport error and the messages in flight between them are lost. How
    /// the error is ordered with later messages between the two is the model's [`ErrorOrder`].
    FifoChannels,
    /// One FIFO inbox per destination (P#-like): messages to a node arrive in send order.
    FifoInbox,
    /// A grow-only set: a sent message stays forever and may be delivered any number of times
    /// (the TLA+ style, and LMC's shared monotone network).
    GrowOnly,
}

/// How a broken connection's transport error is ordered with the messages its two nodes send
/// each other afterwards (`FifoChannels` only; the other kinds have no connections).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorOrder {
    /// As over real TCP, where a reset node comes back on a new connection: the error is an
    /// event of its own, so the node's new incarnation may be heard from before the peer learns
    /// that the old connection broke (the order CrystalBall's live deployments met).
    #[default]
    Independent,
    /// As MaceMC's simulated TCP (`SimulatorTCP.cc`), one queue per pair of nodes: the error
    /// heads the broken peer's channel to its observer, so it arrives before anything sent
    /// after the break; the observer's own channel to the peer waits until the error is
    /// handled, and what waited is then discarded (it was written to the broken connection).
    Queued,
}

impl NetworkKind {
    /// Whether delivering a message removes it from the network.
    pub fn consumes(self) -> bool {
        self != NetworkKind::GrowOnly
    }

    /// Whether messages wait in FIFO queues, so that their positions matter.
    fn is_fifo(self) -> bool {
        matches!(self, NetworkKind::FifoChannels | NetworkKind::FifoInbox)
    }
}

/// A message in flight.
#[derive(Clone, Debug, Serialize)]
pub struct Envelope<M> {
    /// The sender.
    pub from: NodeId,
    /// The destination.
    pub to: NodeId,
    /// The payload.
    pub msg: M,
    #[serde(skip)]
    pub(crate) hash: u128,
    /// The model's number for this message ([`MessageNumbers`]), or [`UNNUMBERED`].
    #[serde(skip)]
    pub(crate) number: u32,
}

impl<M> Envelope<M> {
    /// The stable hash of (sender, destination, payload): the message's identity.
    pub fn hash(&self) -> u128 {
        self.hash
    }
}

impl<M: Serialize> Envelope<M> {
    pub(crate) fn new(from: NodeId, to: NodeId, msg: M) -> Self {
        let hash = FingerprintHasher::hash(&(from, to, &msg));
        Envelope { from, to, msg, hash, number: UNNUMBERED }
    }

    /// This envelope with the number `numbers` gives its message.
    pub(crate) fn numbered(mut self, numbers: &MessageNumbers) -> Self {
        self.number = numbers.number(self.to, self.hash);
        self
    }
}

/// A network less the message a step's event consumes, if any, or as a cut ([`Cut`]: a reset,
/// a socket error, a transport error) leaves it, without the copy that making the change
/// takes: what the step's handler sees and where its sends go. The copy is made only when the
/// step's next world is built, which a search does only for worlds it has not seen.
pub(crate) struct NetworkView<'n, M> {
    network: &'n Network<M>,
    hidden: Hidden,
}

/// What a [`NetworkView`] leaves out of its network.
#[derive(Clone, Copy)]
enum Hidden {
    Nothing,
    /// The message at this index.
    Message(usize),
    /// What this cut takes out, with what it adds.
    Cut(Cut),
}

impl<M> Clone for NetworkView<'_, M> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M> Copy for NetworkView<'_, M> {}

impl<'n, M: Serialize> NetworkView<'n, M> {
    /// `network` less message `removed`.
    pub(crate) fn new(network: &'n Network<M>, removed: Option<usize>) -> Self {
        NetworkView { network, hidden: removed.map_or(Hidden::Nothing, Hidden::Message) }
    }

    /// `network` as `cut` leaves it.
    pub(crate) fn cut(network: &'n Network<M>, cut: Cut) -> Self {
        NetworkView { network, hidden: Hidden::Cut(cut) }
    }

    /// The messages in flight, in canonical order.
    pub(crate) fn messages(self) -> impl Iterator<Item = &'n Arc<Envelope<M>>> {
        let (network, hidden) = (self.network, self.hidden);
        network
            .messages
            .iter()
            .enumerate()
            .filter(move |&(i, e)| match hidden {
                Hidden::Nothing => true,
                Hidden::Message(at) => i != at,
                Hidden::Cut(cut) => !network.loses(cut, e.from, e.to),
            })
            .map(|(_, e)| e)
    }

    /// [`Network::queue_len`] of this view.
    pub(crate) fn queue_len(self, from: NodeId, to: NodeId) -> usize {
        let network = self.network;
        match self.hidden {
            Hidden::Nothing => network.queue_len(from, to),
            Hidden::Message(at) => {
                let gone = network.in_queue(&network.messages[at], from, to);
                network.queue_len(from, to) - usize::from(gone)
            }
            Hidden::Cut(cut) if network.loses(cut, from, to) => 0,
            Hidden::Cut(_) => network.queue_len(from, to),
        }
    }

    /// Whether connection `pair` is open in this view.
    fn connected(self, pair: (NodeId, NodeId)) -> bool {
        let broken = matches!(self.hidden, Hidden::Cut(cut) if self.network.breaks(cut, pair));
        !broken && self.network.connections.binary_search(&pair).is_ok()
    }

    /// What sending `sends` to this view, in order, adds to the network's hash, and whether it
    /// changes the network at all (a grow-only network ignores a message it holds): known
    /// before the network is copied, so a step whose successor turns out to be seen copies
    /// nothing. [`Network::send_all`] makes the sends.
    ///
    /// Every recalled step asks, and most send nothing: they are answered here, inline, without
    /// the call (2.8% of a two-phase commit search's instructions, 1.7% of its time).
    #[inline(always)]
    pub(crate) fn sends_term(self, sends: &[Arc<Envelope<M>>]) -> (u128, bool) {
        if sends.is_empty() {
            return (0, false);
        }
        self.some_sends_term(sends)
    }

    /// [`NetworkView::sends_term`] of at least one send.
    fn some_sends_term(self, sends: &[Arc<Envelope<M>>]) -> (u128, bool) {
        let mut term = 0u128;
        let mut lands = false;
        for (k, envelope) in sends.iter().enumerate() {
            if let Some(added) = self.send_term(&sends[..k], envelope) {
                term = term.wrapping_add(added);
                lands = true;
            }
        }
        (term, lands)
    }

    /// The hash term [`Network::send`] would add for `envelope`, sent after `earlier`; `None`
    /// if a grow-only network would ignore it.
    fn send_term(self, earlier: &[Arc<Envelope<M>>], envelope: &Envelope<M>) -> Option<u128> {
        let network = self.network;
        let (from, to, hash) = (envelope.from, envelope.to, envelope.hash);
        match network.kind {
            NetworkKind::GrowOnly => {
                let sent = |e: &Arc<Envelope<M>>| (e.to, e.hash) == (to, hash);
                (!network.holds(envelope) && !earlier.iter().any(sent)).then_some(hash)
            }
            NetworkKind::Unordered => Some(hash),
            NetworkKind::FifoChannels | NetworkKind::FifoInbox => {
                let mut term = 0u128;
                if network.kind == NetworkKind::FifoChannels && from != to {
                    let pair = connection(envelope);
                    let opened = |e: &Arc<Envelope<M>>| connection(e) == pair;
                    if !self.connected(pair) && !earlier.iter().any(opened) {
                        term = connection_term(pair);
                    }
                }
                let queued = earlier.iter().filter(|e| network.same_queue(e, envelope)).count();
                let position = self.queue_len(from, to) + queued;
                Some(term.wrapping_add(FingerprintHasher::mix(position as u64, hash)))
            }
        }
    }

    /// The view's contribution to the world fingerprint.
    pub(crate) fn hash(self) -> u128 {
        match self.hidden {
            Hidden::Nothing => self.network.hash,
            Hidden::Message(at) => self.network.hash_without(at),
            Hidden::Cut(cut) => self.network.hash_after(cut),
        }
    }
}

/// The indices of a network's messages at the head of their queues, in order: every message of
/// a grow-only set, and the head of each queue of the others (the first of equal messages in an
/// unordered multiset). They may be delivered next unless a pending transport error holds
/// their channel back ([`Network::holds_back`]).
pub(crate) struct Deliverable<'n, M> {
    kind: NetworkKind,
    messages: &'n [Arc<Envelope<M>>],
    next: usize,
}

impl<M> Iterator for Deliverable<'_, M> {
    type Item = usize;

    #[inline] // a search lists every world's deliveries: this keeps the loop free of calls
    fn next(&mut self) -> Option<usize> {
        while self.next < self.messages.len() {
            let i = self.next;
            self.next += 1;
            if i == 0 {
                return Some(i);
            }
            let (prev, this) = (&self.messages[i - 1], &self.messages[i]);
            let heads = match self.kind {
                NetworkKind::Unordered => prev.hash != this.hash || prev.to != this.to,
                NetworkKind::GrowOnly => true,
                NetworkKind::FifoChannels => (prev.from, prev.to) != (this.from, this.to),
                NetworkKind::FifoInbox => prev.to != this.to,
            };
            if heads {
                return Some(i);
            }
        }
        None
    }
}

/// The state of the network: part of every world.
#[derive(Debug)]
pub(crate) struct Network<M> {
    kind: NetworkKind,
    messages: Vec<Arc<Envelope<M>>>,
    /// Pending transport errors as (node that observes it, broken peer), sorted.
    errors: Vec<(NodeId, NodeId)>,
    /// Open connections as (lower node, higher node), sorted; kept for `FifoChannels` only.
    connections: Vec<(NodeId, NodeId)>,
    /// The network's contribution to the world fingerprint, kept current by every change.
    hash: u128,
    /// A one-word Bloom filter of the messages ever added ([`bloom_bit`]): a message whose bit
    /// is clear is not held, so [`Network::holds`] searches the messages only for one that may
    /// be. A removal leaves its bit set, which keeps the filter a superset.
    may_hold: u64,
    /// For a grow-only network, the numbers of the messages it holds, which answer
    /// [`Network::holds`] without the search where they can; empty for the other kinds.
    held: HeldNumbers,
}

/// A copy is [`Network::clone_with_room`] with no room to spare: one way to copy a network.
impl<M> Clone for Network<M> {
    fn clone(&self) -> Self {
        self.clone_with_room(0)
    }
}

impl<M> Network<M> {
    /// A copy with room for `more` messages beyond this network's. A step that sends builds
    /// its next network as a copy of its parent's plus the sends; a plain copy's list is
    /// exactly full, so the first send reallocated it (1.5% of a 2PC N = 6 search's
    /// instructions, in `realloc`).
    pub(crate) fn clone_with_room(&self, more: usize) -> Self {
        let mut messages = Vec::with_capacity(self.messages.len() + more);
        messages.extend(self.messages.iter().cloned());
        Network {
            kind: self.kind,
            messages,
            errors: self.errors.clone(),
            connections: self.connections.clone(),
            hash: self.hash,
            may_hold: self.may_hold,
            held: self.held,
        }
    }
}

/// A message's bit in [`Network::may_hold`].
fn bloom_bit(hash: u128) -> u64 {
    1 << (hash as u32 & 63)
}

impl<M: Serialize> Network<M> {
    pub(crate) fn new(kind: NetworkKind) -> Self {
        Network {
            kind,
            messages: Vec::new(),
            errors: Vec::new(),
            connections: Vec::new(),
            hash: 0,
            may_hold: 0,
            held: HeldNumbers::default(),
        }
    }

    /// A copy whose messages are copies too (see [`crate::World::detached`]).
    pub(crate) fn detached(&self) -> Self
    where
        M: Clone,
    {
        let messages = self.messages.iter().map(|envelope| Arc::new((**envelope).clone())).collect();
        Network { messages, ..self.clone() }
    }

    pub(crate) fn kind(&self) -> NetworkKind {
        self.kind
    }

    /// The messages in flight, in canonical order.
    pub(crate) fn messages(&self) -> &[Arc<Envelope<M>>] {
        &self.messages
    }

    pub(crate) fn errors(&self) -> &[(NodeId, NodeId)] {
        &self.errors
    }

    /// The open connections as (lower node, higher node), sorted (`FifoChannels` only).
    pub(crate) fn connections(&self) -> &[(NodeId, NodeId)] {
        &self.connections
    }

    /// Indices of the messages at the head of their queues: those that may be delivered next
    /// (and so also dropped or duplicated), unless [`Network::holds_back`] their channel.
    pub(crate) fn deliverable(&self) -> Deliverable<'_, M> {
        Deliverable { kind: self.kind, messages: &self.messages, next: 0 }
    }

    /// Whether some channel is held back by a pending transport error under `order`: only then
    /// must the messages [`Network::deliverable`] lists be checked with [`Network::held`] (a
    /// rare case, kept out of the loop that lists every world's deliveries).
    pub(crate) fn holds_back(&self, order: ErrorOrder) -> bool {
        order == ErrorOrder::Queued && self.kind == NetworkKind::FifoChannels && !self.errors.is_empty()
    }

    /// Whether message `index`'s channel is held back by a pending transport error, when
    /// [`Network::holds_back`] says channels are: an error at its destination about its sender
    /// heads the channel, so nothing behind it (a reset node's new incarnation's messages, say)
    /// arrives first; and while its sender has an error about its destination still to handle,
    /// the sender's channel to it waits, to be discarded when the error is handled
    /// ([`Network::take_error`]).
    pub(crate) fn held(&self, index: usize) -> bool {
        let e = &self.messages[index];
        self.errors.iter().any(|&error| error == (e.to, e.from) || error == (e.from, e.to))
    }

    /// Indices of distinct pending transport errors.
    pub(crate) fn deliverable_errors(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.errors.len()).filter(move |&i| i == 0 || self.errors[i - 1] != self.errors[i])
    }

    /// How many messages wait in the queue a message from `from` to `to` joins: its channel
    /// (`FifoChannels`) or its destination's inbox (`FifoInbox`); 0 for the unqueued kinds.
    pub(crate) fn queue_len(&self, from: NodeId, to: NodeId) -> usize {
        let messages = &self.messages;
        let span = |before: &dyn Fn(&Envelope<M>) -> bool, within: &dyn Fn(&Envelope<M>) -> bool| {
            messages.partition_point(|e| within(e)) - messages.partition_point(|e| before(e))
        };
        match self.kind {
            NetworkKind::FifoChannels => {
                span(&|e| (e.from, e.to) < (from, to), &|e| (e.from, e.to) <= (from, to))
            }
            NetworkKind::FifoInbox => span(&|e| e.to < to, &|e| e.to <= to),
            NetworkKind::Unordered | NetworkKind::GrowOnly => 0,
        }
    }

    /// Whether sending `envelope` would change nothing: a grow-only network holds it already.
    ///
    /// The filter answers first: in a small network most messages not held have their bit
    /// clear. The numbers answer next, where the filter is full: in a large one. Only then is
    /// the list searched.
    #[inline]
    pub(crate) fn holds(&self, envelope: &Envelope<M>) -> bool {
        if self.kind != NetworkKind::GrowOnly || self.may_hold & bloom_bit(envelope.hash) == 0 {
            return false;
        }
        if let Some(held) = self.held.holds(envelope.number) {
            debug_assert_eq!(held, self.search(envelope).is_ok(), "the held numbers disagree");
            return held;
        }
        self.search(envelope).is_ok()
    }

    pub(crate) fn send(&mut self, envelope: Envelope<M>) {
        self.send_shared(Arc::new(envelope));
    }

    /// [`Network::send`] for an envelope that other worlds may hold too.
    pub(crate) fn send_shared(&mut self, envelope: Arc<Envelope<M>>) {
        let hash = envelope.hash;
        let at = match self.kind {
            NetworkKind::GrowOnly => match self.search(&envelope) {
                Ok(_) => return,
                Err(at) => at,
            },
            NetworkKind::FifoChannels => {
                if let Some(pair) = self.open(&envelope) {
                    self.hash = self.hash.wrapping_add(connection_term(pair));
                }
                self.post_at(&envelope)
            }
            NetworkKind::Unordered | NetworkKind::FifoInbox => self.post_at(&envelope),
        };
        let term = match self.kind {
            NetworkKind::Unordered | NetworkKind::GrowOnly => hash,
            // Appended at the end of its queue: its position is the number of messages before it.
            NetworkKind::FifoChannels | NetworkKind::FifoInbox => {
                FingerprintHasher::mix((at - self.queue_start(at, &envelope)) as u64, hash)
            }
        };
        self.place(at, envelope, term);
    }

    /// Where a consuming network puts `envelope` when it is sent: behind its equals (unordered)
    /// or at the end of its queue (FIFO).
    #[inline]
    fn post_at(&self, envelope: &Envelope<M>) -> usize {
        let (from, to, hash) = (envelope.from, envelope.to, envelope.hash);
        match self.kind {
            NetworkKind::Unordered | NetworkKind::GrowOnly => {
                self.messages.partition_point(|e| (e.to, e.hash) <= (to, hash))
            }
            NetworkKind::FifoChannels => self.messages.partition_point(|e| (e.from, e.to) <= (from, to)),
            NetworkKind::FifoInbox => self.messages.partition_point(|e| e.to <= to),
        }
    }

    /// Opens the connection a message sent over FIFO channels needs, if it is not open (a
    /// node's messages to itself need none); the pair opened, if any.
    #[inline]
    fn open(&mut self, envelope: &Envelope<M>) -> Option<(NodeId, NodeId)> {
        if envelope.from == envelope.to {
            return None;
        }
        let pair = connection(envelope);
        let at = self.connections.binary_search(&pair).err()?;
        self.connections.insert(at, pair);
        Some(pair)
    }

    /// Makes a step's changes to this consuming network in place: takes message `consumed`
    /// (if any), posts `sends`, and sets the hash to `hash`, which the step's fingerprint
    /// already had to know, so that no queue is hashed again. Returns the message taken and, in
    /// bit `k`, whether send `k` opened a connection; [`Network::undo_in_place`] undoes it.
    pub(crate) fn edit_in_place(
        &mut self,
        consumed: Option<usize>,
        sends: &[Arc<Envelope<M>>],
        hash: u128,
    ) -> (Option<Arc<Envelope<M>>>, u64) {
        debug_assert!(self.kind.consumes() && sends.len() < 64, "in place: a consuming network");
        let taken = consumed.map(|index| self.messages.remove(index));
        let mut opened = 0;
        for (k, envelope) in sends.iter().enumerate() {
            if self.kind == NetworkKind::FifoChannels && self.open(envelope).is_some() {
                opened |= 1 << k;
            }
            self.may_hold |= bloom_bit(envelope.hash);
            let at = self.post_at(envelope);
            self.messages.insert(at, Arc::clone(envelope));
        }
        self.hash = hash;
        self.debug_check();
        (taken, opened)
    }

    /// Undoes [`Network::edit_in_place`]: takes back `sends`, last first, each from where it
    /// was posted (the end of its queue, or of its run of equals), with the connections
    /// `opened`; puts `taken` back at `consumed`; and sets the hash back to `hash`.
    pub(crate) fn undo_in_place(
        &mut self,
        consumed: Option<usize>,
        taken: Option<Arc<Envelope<M>>>,
        sends: &[Arc<Envelope<M>>],
        opened: u64,
        hash: u128,
    ) {
        for (k, envelope) in sends.iter().enumerate().rev() {
            let at = self.post_at(envelope) - 1;
            debug_assert_eq!(self.messages[at].hash, envelope.hash, "a send ends its queue");
            self.messages.remove(at);
            if opened & (1 << k) != 0 {
                let at = self.connections.binary_search(&connection(envelope)).expect("the send opened it");
                self.connections.remove(at);
            }
        }
        if let (Some(index), Some(taken)) = (consumed, taken) {
            self.messages.insert(index, taken);
        }
        self.hash = hash;
        self.debug_check();
    }

    /// Puts `envelope` at index `at`, adding `term` to the network's hash.
    #[inline]
    fn place(&mut self, at: usize, envelope: Arc<Envelope<M>>, term: u128) {
        self.hash = self.hash.wrapping_add(term);
        self.may_hold |= bloom_bit(envelope.hash);
        if self.kind == NetworkKind::GrowOnly {
            self.held.add(envelope.number);
        }
        self.messages.insert(at, envelope);
        self.debug_check();
    }

    /// Where a grow-only or unordered network, ordered by destination and then hash, keeps
    /// `envelope`: `Ok` with the index of a copy it holds, else `Err` with where it would go.
    fn search(&self, envelope: &Envelope<M>) -> Result<usize, usize> {
        self.messages.binary_search_by(|e| (e.to, e.hash).cmp(&(envelope.to, envelope.hash)))
    }

    /// Adds `envelope` to this grow-only network in place unless it holds it already; whether
    /// it added it. [`Network::take_back`] undoes it.
    pub(crate) fn add(&mut self, envelope: &Arc<Envelope<M>>) -> bool {
        debug_assert_eq!(self.kind, NetworkKind::GrowOnly, "only a grow-only network adds in place");
        match self.search(envelope) {
            Ok(_) => false,
            Err(at) => {
                self.place(at, Arc::clone(envelope), envelope.hash);
                true
            }
        }
    }

    /// Removes `envelope`, which [`Network::add`] added, from this grow-only network. Its bit
    /// stays in the filter, which only needs to be a superset.
    pub(crate) fn take_back(&mut self, envelope: &Envelope<M>) {
        let at = self.search(envelope).expect("the envelope was added");
        let taken = self.messages.remove(at);
        self.held.remove(taken.number);
        self.hash = self.hash.wrapping_sub(envelope.hash);
    }

    /// Sends `sends`, in order, sharing their envelopes.
    pub(crate) fn send_all(&mut self, sends: &[Arc<Envelope<M>>]) {
        for envelope in sends {
            self.send_shared(Arc::clone(envelope));
        }
    }

    /// The hash this network would have without message `index` (one copy of it), computed
    /// without the copy that removing it takes (see [`NetworkView`]).
    fn hash_without(&self, index: usize) -> u128 {
        let anchor = &self.messages[index];
        if !self.kind.is_fifo() {
            return self.hash.wrapping_sub(anchor.hash);
        }
        // The messages ahead of it keep their positions; those behind it move up by one.
        let offset = index - self.queue_start(index, anchor);
        let queue = self.messages[index..].iter().take_while(|e| self.same_queue(anchor, e));
        let (before, after) = queue.enumerate().fold((0u128, 0u128), |(before, after), (k, e)| {
            let before = before.wrapping_add(self.message_term(offset + k, e));
            let after = if k == 0 { after } else { after.wrapping_add(self.message_term(offset + k - 1, e)) };
            (before, after)
        });
        self.hash.wrapping_sub(before).wrapping_add(after)
    }

    /// Takes message `index` for delivery; it stays in a grow-only network.
    pub(crate) fn deliver(&mut self, index: usize) -> Arc<Envelope<M>> {
        if self.kind.consumes() {
            self.remove(index)
        } else {
            Arc::clone(&self.messages[index])
        }
    }

    /// Duplicates message `index` (a fault): the copy sits right behind the original.
    pub(crate) fn duplicate(&mut self, index: usize) {
        let copy = Arc::clone(&self.messages[index]);
        self.may_hold |= bloom_bit(copy.hash);
        self.edit(index, |messages| messages.insert(index + 1, copy));
    }

    fn remove(&mut self, index: usize) -> Arc<Envelope<M>> {
        self.edit(index, |messages| messages.remove(index))
    }

    /// Applies `edit`, which adds or removes one copy of message `index` within its queue, and
    /// adjusts the hash: by that message's term for the unordered kinds, by the queue's terms
    /// before and after for the FIFO kinds (positions behind the edit shift).
    fn edit<R>(&mut self, index: usize, edit: impl FnOnce(&mut Vec<Arc<Envelope<M>>>) -> R) -> R {
        let anchor = Arc::clone(&self.messages[index]);
        let result = if self.kind.is_fifo() {
            let start = self.queue_start(index, &anchor);
            let before = self.queue_terms(start, &anchor);
            let result = edit(&mut self.messages);
            let after = self.queue_terms(start, &anchor);
            self.hash = self.hash.wrapping_sub(before).wrapping_add(after);
            result
        } else {
            let len = self.messages.len();
            let result = edit(&mut self.messages);
            self.hash = if self.messages.len() > len {
                self.hash.wrapping_add(anchor.hash)
            } else {
                self.hash.wrapping_sub(anchor.hash)
            };
            result
        };
        self.debug_check();
        result
    }

    /// Queues transport error `error` in its sorted place.
    fn insert_error(&mut self, error: (NodeId, NodeId)) {
        let at = self.errors.partition_point(|e| *e <= error);
        self.errors.insert(at, error);
    }

    /// Whether message `e` sits in the queue a message from `from` to `to` joins (FIFO kinds
    /// only).
    fn in_queue(&self, e: &Envelope<M>, from: NodeId, to: NodeId) -> bool {
        match self.kind {
            NetworkKind::FifoChannels => (e.from, e.to) == (from, to),
            NetworkKind::FifoInbox => e.to == to,
            NetworkKind::Unordered | NetworkKind::GrowOnly => false,
        }
    }

    /// Whether messages `a` and `b` sit in the same queue (FIFO kinds only).
    fn same_queue(&self, a: &Envelope<M>, b: &Envelope<M>) -> bool {
        self.in_queue(a, b.from, b.to)
    }

    /// The index of the first message of `anchor`'s queue, searching back from `index`.
    fn queue_start(&self, index: usize, anchor: &Envelope<M>) -> usize {
        let mut start = index;
        while start > 0 && self.same_queue(&self.messages[start - 1], anchor) {
            start -= 1;
        }
        start
    }

    /// The sum of the terms of `anchor`'s queue, which starts at `start`.
    fn queue_terms(&self, start: usize, anchor: &Envelope<M>) -> u128 {
        let queue = self.messages[start..].iter().take_while(|e| self.same_queue(anchor, e));
        queue.enumerate().fold(0u128, |sum, (position, e)| sum.wrapping_add(self.message_term(position, e)))
    }

    fn message_term(&self, position: usize, e: &Envelope<M>) -> u128 {
        match self.kind {
            NetworkKind::Unordered | NetworkKind::GrowOnly => e.hash,
            NetworkKind::FifoChannels | NetworkKind::FifoInbox => {
                FingerprintHasher::mix(position as u64, e.hash)
            }
        }
    }

    fn debug_check(&self) {
        debug_assert_eq!(self.hash, self.compute_hash(), "the incremental network hash drifted");
        debug_assert!(
            self.messages.iter().all(|e| self.may_hold & bloom_bit(e.hash) != 0),
            "the filter of held messages misses one"
        );
        debug_assert!(
            self.kind != NetworkKind::GrowOnly || self.held == Self::held_numbers(&self.messages),
            "the held numbers drifted"
        );
    }

    /// The index of `messages`, those of a grow-only network.
    fn held_numbers(messages: &[Arc<Envelope<M>>]) -> HeldNumbers {
        messages.iter().fold(HeldNumbers::default(), |mut held, e| {
            held.add(e.number);
            held
        })
    }

    /// The network's contribution to the world fingerprint.
    pub(crate) fn hash(&self) -> u128 {
        self.hash
    }

    /// The network's contribution to the world fingerprint, from scratch.
    fn compute_hash(&self) -> u128 {
        let mut sum = 0u128;
        let mut position = 0usize;
        for (i, e) in self.messages.iter().enumerate() {
            position = if i > 0 && self.same_queue(&self.messages[i - 1], e) { position + 1 } else { 0 };
            sum = sum.wrapping_add(self.message_term(position, e));
        }
        for &error in &self.errors {
            sum = sum.wrapping_add(error_term(error));
        }
        for &pair in &self.connections {
            sum = sum.wrapping_add(connection_term(pair));
        }
        sum
    }
}

fn error_term((node, peer): (NodeId, NodeId)) -> u128 {
    FingerprintHasher::mix(1 << 62, pair_hash(node, peer))
}

fn connection_term((a, b): (NodeId, NodeId)) -> u128 {
    FingerprintHasher::mix(1 << 63, pair_hash(a, b))
}

/// The connection a message travels over: its two ends, lower node first.
fn connection<M>(envelope: &Envelope<M>) -> (NodeId, NodeId) {
    (envelope.from.min(envelope.to), envelope.from.max(envelope.to))
}

fn pair_hash(a: NodeId, b: NodeId) -> u128 {
    u128::from(a.0) << 32 | u128::from(b.0)
}

// ---- Support for `crate::world_bytes` (world serialization for cluster mode). ----------------
impl<M: Serialize> Network<M> {
    /// A network made of exactly these parts, its hash computed from scratch. The caller checks
    /// that the parts are canonical (messages in the kind's order, errors and connections sorted).
    pub(crate) fn from_parts(
        kind: NetworkKind,
        messages: Vec<Arc<Envelope<M>>>,
        errors: Vec<(NodeId, NodeId)>,
        connections: Vec<(NodeId, NodeId)>,
    ) -> Self {
        let may_hold = messages.iter().fold(0, |bits, e| bits | bloom_bit(e.hash));
        let held = if kind == NetworkKind::GrowOnly {
            Self::held_numbers(&messages)
        } else {
            HeldNumbers::default()
        };
        let mut network = Network { kind, messages, errors, connections, hash: 0, may_hold, held };
        network.hash = network.compute_hash();
        network
    }
}
// ---- End of support for `crate::world_bytes`. -----------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: [NetworkKind; 4] =
        [NetworkKind::Unordered, NetworkKind::FifoChannels, NetworkKind::FifoInbox, NetworkKind::GrowOnly];

    /// A network with several queues of several messages, a self-send among them.
    fn busy(kind: NetworkKind) -> Network<u8> {
        let mut network = Network::new(kind);
        for (from, to, msg) in [(0, 1, 7), (2, 1, 8), (0, 1, 9), (1, 1, 3), (1, 0, 4), (0, 1, 7), (2, 1, 5)] {
            network.send(Envelope::new(NodeId::new(from), NodeId::new(to), msg));
        }
        network
    }

    #[test]
    fn a_queued_error_heads_its_channels_and_clears_what_its_observer_sent_meanwhile() {
        let (p, r, q) = (NodeId::new(0), NodeId::new(1), NodeId::new(2));
        let heads = |network: &Network<u8>, order| -> Vec<(NodeId, NodeId, u8)> {
            let deliverable =
                network.deliverable().filter(|&i| !network.holds_back(order) || !network.held(i));
            deliverable.map(|i| network.messages()[i].as_ref()).map(|e| (e.from, e.to, e.msg)).collect()
        };
        let mut network = Network::new(NetworkKind::FifoChannels);
        network.send(Envelope::new(p, r, 1));
        network.send(Envelope::new(q, p, 2));
        network.cut(Cut::Reset(r));
        assert_eq!(network.errors(), [(p, r)]);
        // The new incarnation of r writes to p, p (not yet told) writes to r, and q to p.
        network.send(Envelope::new(r, p, 3));
        network.send(Envelope::new(p, r, 4));
        network.send(Envelope::new(q, p, 5));
        let every_head = [(p, r, 4), (r, p, 3), (q, p, 2)];
        assert_eq!(heads(&network, ErrorOrder::Independent), every_head);
        assert_eq!(heads(&network, ErrorOrder::Queued), [(q, p, 2)], "both channels wait for the error");

        let mut independent = network.clone();
        independent.cut(Cut::error(&independent, 0, ErrorOrder::Independent));
        assert!(independent.errors().is_empty());
        assert_eq!(heads(&independent, ErrorOrder::Independent), every_head, "nothing is discarded");
        let mut queued = network;
        queued.cut(Cut::error(&queued, 0, ErrorOrder::Queued));
        assert!(queued.errors().is_empty());
        let after = [(r, p, 3), (q, p, 2)];
        assert_eq!(heads(&queued, ErrorOrder::Queued), after, "p's message to the old r is discarded");
        assert_eq!(queued.messages().len(), 3);
        assert_eq!(queued.hash(), queued.compute_hash());
    }

    #[test]
    fn a_message_left_out_leaves_the_hash_its_removal_would() {
        for kind in KINDS.into_iter().filter(|kind| kind.consumes()) {
            let network = busy(kind);
            for index in 0..network.messages().len() {
                let mut removed = network.clone();
                removed.remove(index);
                assert_eq!(network.hash_without(index), removed.hash(), "{kind:?}, message {index}");
            }
        }
    }

    #[test]
    fn a_view_without_a_delivered_message_reads_as_the_network_after_it() {
        for kind in KINDS {
            let network = busy(kind);
            for index in network.deliverable().collect::<Vec<_>>() {
                let removed = kind.consumes().then_some(index);
                let view = NetworkView::new(&network, removed);
                let mut delivered = network.clone();
                delivered.deliver(index);
                let hashes = |messages: &mut dyn Iterator<Item = &Arc<Envelope<u8>>>| {
                    messages.map(|e| e.hash).collect::<Vec<_>>()
                };
                assert_eq!(
                    hashes(&mut view.messages()),
                    hashes(&mut delivered.messages().iter()),
                    "{kind:?}"
                );
                assert_eq!(view.hash(), delivered.hash(), "{kind:?}, message {index}");
                for (from, to) in [(0, 1), (1, 1), (2, 1), (1, 0), (2, 0)] {
                    let (from, to) = (NodeId::new(from), NodeId::new(to));
                    assert_eq!(
                        view.queue_len(from, to),
                        delivered.queue_len(from, to),
                        "{kind:?} {from}->{to}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_grow_only_network_holds_what_it_was_sent_whatever_its_filter_shares() {
        let envelope = |msg: u8| Envelope::new(NodeId::new(usize::from(msg % 3)), NodeId::new(1), msg);
        let mut network = Network::new(NetworkKind::GrowOnly);
        for msg in (0..=254).step_by(2) {
            assert!(!network.holds(&envelope(msg)));
            network.send(envelope(msg));
        }
        let maybe = |msg: u8| network.may_hold & bloom_bit(envelope(msg).hash) != 0;
        let unsent = || (1..=255).step_by(2);
        assert!(unsent().any(maybe), "some message never sent shares a bit with one sent");
        assert!(unsent().any(|msg| !maybe(msg)), "and some other does not");
        for msg in 0..=255 {
            assert_eq!(network.holds(&envelope(msg)), msg % 2 == 0, "message {msg}");
        }
        let parts =
            Network::from_parts(NetworkKind::GrowOnly, network.messages.clone(), Vec::new(), Vec::new());
        assert_eq!(parts.may_hold, network.may_hold);
    }

    /// Messages numbered by the model, messages without a number (read back from bytes, say),
    /// and messages past the last number, mixed in one grow-only network: `holds` answers as
    /// the search does for each, before and after the unnumbered ones come and go.
    #[test]
    fn a_grow_only_network_holds_the_same_with_numbered_and_unnumbered_messages() {
        let numbers = MessageNumbers::default();
        let plain = |msg: u16| Envelope::new(NodeId::new(usize::from(msg % 3)), NodeId::new(1), msg);
        let numbered = |msg: u16| plain(msg).numbered(&numbers);
        // Numbers for 0..100 in order, so that 1000.. come after the last number.
        let sent: Vec<u16> = (0..100).chain(1000..1100).collect();
        for &msg in &sent {
            numbered(msg);
        }
        assert_eq!(numbered(1099).number, UNNUMBERED, "numbers ran out");
        let mut network = Network::new(NetworkKind::GrowOnly);
        for &msg in sent.iter().step_by(2) {
            network.send(numbered(msg));
        }
        let answers_as_searched = |network: &Network<u16>| {
            for msg in sent.iter().copied().chain(2000..2010) {
                for envelope in [plain(msg), numbered(msg)] {
                    assert_eq!(network.holds(&envelope), network.search(&envelope).is_ok(), "message {msg}");
                }
            }
        };
        answers_as_searched(&network);
        assert!(network.holds(&numbered(0)) && !network.holds(&numbered(1)));
        // An unnumbered copy of message 1 makes "number 1 is absent" unknowable from the index.
        let unnumbered = Arc::new(plain(1));
        assert!(network.add(&unnumbered));
        assert!(network.holds(&numbered(1)), "held, though not by its number");
        answers_as_searched(&network);
        network.take_back(&unnumbered);
        assert!(!network.holds(&numbered(1)));
        answers_as_searched(&network);
        let parts =
            Network::from_parts(NetworkKind::GrowOnly, network.messages.clone(), Vec::new(), Vec::new());
        assert_eq!(parts.held, network.held);
    }

    #[test]
    fn sends_posted_beside_a_pending_delivery_hash_as_if_it_were_made() {
        // New messages, some twice and to a queue of their own; then only messages `busy` holds
        // (which a grow-only network ignores).
        let lists: [&[(usize, usize, u8)]; 2] =
            [&[(1, 1, 6), (1, 2, 6), (2, 1, 6), (1, 1, 2), (1, 2, 6)], &[(0, 1, 7), (2, 1, 5), (0, 1, 7)]];
        for (kind, sends) in KINDS.into_iter().flat_map(|kind| lists.map(|sends| (kind, sends))) {
            let network = busy(kind);
            for index in network.deliverable().collect::<Vec<_>>() {
                let sends: Vec<_> = sends
                    .iter()
                    .map(|&(from, to, msg)| Arc::new(Envelope::new(NodeId::new(from), NodeId::new(to), msg)))
                    .collect();
                let view = NetworkView::new(&network, kind.consumes().then_some(index));
                let (term, lands) = view.sends_term(&sends);
                let before_sends = if kind.consumes() { network.hash_without(index) } else { network.hash() };
                let predicted = before_sends.wrapping_add(term);
                let mut delivered = network.clone();
                delivered.deliver(index);
                let mut built = delivered.clone();
                built.send_all(&sends);
                let grew = built.messages().len() != delivered.messages().len();
                assert_eq!(lands, grew, "{kind:?}, message {index}, {} sends", sends.len());
                assert_eq!(lands, kind != NetworkKind::GrowOnly || sends.len() == 5, "{kind:?}");
                assert_eq!(predicted, built.hash(), "{kind:?}, message {index}");
                assert_eq!(built.hash(), built.compute_hash(), "{kind:?}, message {index}");
            }
        }
    }

    /// `cut` made the plain way, on a copy: every part filtered from scratch and the hash
    /// computed again.
    fn cut_rebuilt(network: &Network<u8>, cut: Cut) -> Network<u8> {
        let mut copy = network.clone();
        match cut {
            Cut::Reset(node) => {
                copy.messages.retain(|e| !(e.from == node && e.to == node));
                let broken: Vec<_> =
                    copy.connections.iter().copied().filter(|&(a, b)| a == node || b == node).collect();
                copy.connections.retain(|pair| !broken.contains(pair));
                for (a, b) in broken {
                    let peer = if a == node { b } else { a };
                    copy.messages
                        .retain(|e| !((e.from, e.to) == (node, peer) || (e.from, e.to) == (peer, node)));
                    copy.errors.push((peer, node));
                }
                copy.errors.sort();
            }
            Cut::Connection(index) => {
                let (a, b) = copy.connections.remove(index as usize);
                copy.messages.retain(|e| !((e.from, e.to) == (a, b) || (e.from, e.to) == (b, a)));
                copy.errors.extend([(a, b), (b, a)]);
                copy.errors.sort();
            }
            Cut::Error { index, queued } => {
                let error = copy.errors.remove(index as usize);
                if queued {
                    copy.messages.retain(|e| (e.from, e.to) != error);
                }
            }
        }
        copy.hash = copy.compute_hash();
        copy
    }

    /// A cut made in place leaves the network the plain cut of a copy would, and its undo the
    /// network it was; a view of the cut reads, and hashes sends, as that network does. Every
    /// node's reset, every connection's socket error and every pending error's delivery,
    /// queued and not, of a FIFO network with
    /// connections among three nodes, errors pending, a queue to itself, and a broken
    /// connection's end sending again, behind its error.
    #[test]
    fn a_cut_in_place_or_in_view_is_the_cut_of_a_copy_and_undoes() {
        let ids = |network: &Network<u8>| -> Vec<(NodeId, NodeId, u8)> {
            network.messages().iter().map(|e| (e.from, e.to, e.msg)).collect()
        };
        let mut network = busy(NetworkKind::FifoChannels);
        network.cut(Cut::Connection(0));
        network.send(Envelope::new(NodeId::new(1), NodeId::new(0), 6));
        network.send(Envelope::new(NodeId::new(0), NodeId::new(1), 2));
        network.send(Envelope::new(NodeId::new(2), NodeId::new(2), 1));
        assert_eq!(network.errors().len(), 2);
        let sends: Vec<_> = [(1, 0, 2), (2, 1, 3), (1, 1, 4), (0, 2, 5)]
            .map(|(from, to, msg)| Arc::new(Envelope::new(NodeId::new(from), NodeId::new(to), msg)))
            .into();
        let resets = (0..3).map(|node| Cut::Reset(NodeId::new(node)));
        let sockets = (0..network.connections().len() as u32).map(Cut::Connection);
        let errors = (0..2).flat_map(|index| [true, false].map(|queued| Cut::Error { index, queued }));
        let mut lost = 0;
        for cut in resets.chain(sockets).chain(errors) {
            let copy = cut_rebuilt(&network, cut);
            lost += network.messages().len() - copy.messages().len();
            let view = NetworkView::cut(&network, cut);
            assert_eq!(view.hash(), copy.hash(), "{cut:?}");
            let viewed: Vec<_> = view.messages().map(|e| (e.from, e.to, e.msg)).collect();
            assert_eq!(viewed, ids(&copy), "{cut:?}");
            for (from, to) in (0..3).flat_map(|a| (0..3).map(move |b| (NodeId::new(a), NodeId::new(b)))) {
                assert_eq!(view.queue_len(from, to), copy.queue_len(from, to), "{cut:?}: {from:?} to {to:?}");
            }
            let mut sent = copy.clone();
            sent.send_all(&sends);
            assert_eq!(copy.hash().wrapping_add(view.sends_term(&sends).0), sent.hash(), "{cut:?}");

            let mut in_place = network.clone();
            let taken = in_place.cut_in_place(cut);
            assert_eq!(ids(&in_place), ids(&copy), "{cut:?}");
            assert_eq!((in_place.errors(), in_place.connections()), (copy.errors(), copy.connections()));
            assert_eq!(in_place.hash(), copy.hash(), "{cut:?}");
            in_place.undo_cut(taken, network.hash());
            assert_eq!(ids(&in_place), ids(&network), "{cut:?}");
            assert_eq!(
                (in_place.errors(), in_place.connections()),
                (network.errors(), network.connections())
            );
            assert_eq!(in_place.hash(), in_place.compute_hash(), "{cut:?}");
        }
        assert!(lost >= 5, "the cuts lose messages ({lost})");
    }
}
