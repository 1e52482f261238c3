//! The network: messages in flight, pending transport errors, and open connections.
//!
//! One flat, canonically ordered vector of envelopes serves every network kind; the kind decides
//! the order, which messages are deliverable, and whether delivery consumes a message:
//!
//! | kind | order of the vector | deliverable | delivery |
//! | --- | --- | --- | --- |
//! | `Unordered` (UDP-like multiset) | by destination, then message hash | every distinct message | consumes one copy |
//! | `FifoChannels` (TCP-like) | by (source, destination), then send order | the head of each channel | consumes it |
//! | `FifoInbox` (P#-like) | by destination, then send order | the head of each inbox | consumes it |
//! | `GrowOnly` (TLA+ message set, LMC's I+) | by destination, then message hash, no duplicates | every message | never consumes |
//!
//! Envelopes are shared (`Arc`) between worlds, and each carries the stable hash of its source,
//! destination and payload, computed once when it is sent.

use crate::{FingerprintHasher, NodeId};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// How the network orders, keeps and delivers messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkKind {
    /// An unordered multiset: any message in flight may be delivered next (UDP-like).
    Unordered,
    /// FIFO per directed channel (TCP-like). A reset breaks the reset node's connections: its
    /// peers observe a transport error and the messages in flight between them are lost.
    FifoChannels,
    /// One FIFO inbox per destination (P#-like): messages to a node arrive in send order.
    FifoInbox,
    /// A grow-only set: a sent message stays forever and may be delivered any number of times
    /// (the TLA+ style, and LMC's shared monotone network).
    GrowOnly,
}

impl NetworkKind {
    /// Whether delivering a message removes it from the network.
    pub fn consumes(self) -> bool {
        self != NetworkKind::GrowOnly
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
}

impl<M: Serialize> Envelope<M> {
    pub(crate) fn new(from: NodeId, to: NodeId, msg: M) -> Self {
        let hash = FingerprintHasher::hash(&(from, to, &msg));
        Envelope { from, to, msg, hash }
    }
}

/// The state of the network: part of every world.
#[derive(Clone, Debug)]
pub(crate) struct Network<M> {
    kind: NetworkKind,
    messages: Vec<Arc<Envelope<M>>>,
    /// Pending transport errors as (node that observes it, broken peer), sorted.
    errors: Vec<(NodeId, NodeId)>,
    /// Open connections as (lower node, higher node), sorted; kept for `FifoChannels` only.
    connections: Vec<(NodeId, NodeId)>,
}

impl<M: Serialize> Network<M> {
    pub(crate) fn new(kind: NetworkKind) -> Self {
        Network { kind, messages: Vec::new(), errors: Vec::new(), connections: Vec::new() }
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

    /// Indices of the messages that may be delivered next.
    pub(crate) fn deliverable(&self) -> impl Iterator<Item = usize> + '_ {
        let kind = self.kind;
        let messages = &self.messages;
        (0..messages.len()).filter(move |&i| {
            i == 0 || {
                let (prev, this) = (&messages[i - 1], &messages[i]);
                match kind {
                    NetworkKind::Unordered => prev.hash != this.hash || prev.to != this.to,
                    NetworkKind::GrowOnly => true,
                    NetworkKind::FifoChannels => (prev.from, prev.to) != (this.from, this.to),
                    NetworkKind::FifoInbox => prev.to != this.to,
                }
            }
        })
    }

    /// Indices of distinct pending transport errors.
    pub(crate) fn deliverable_errors(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.errors.len()).filter(move |&i| i == 0 || self.errors[i - 1] != self.errors[i])
    }

    pub(crate) fn send(&mut self, envelope: Envelope<M>) {
        let (from, to, hash) = (envelope.from, envelope.to, envelope.hash);
        let at = match self.kind {
            NetworkKind::Unordered => self.messages.partition_point(|e| (e.to, e.hash) <= (to, hash)),
            NetworkKind::GrowOnly => {
                match self.messages.binary_search_by(|e| (e.to, e.hash).cmp(&(to, hash))) {
                    Ok(_) => return,
                    Err(at) => at,
                }
            }
            NetworkKind::FifoChannels => {
                if from != to {
                    let pair = (from.min(to), from.max(to));
                    if let Err(at) = self.connections.binary_search(&pair) {
                        self.connections.insert(at, pair);
                    }
                }
                self.messages.partition_point(|e| (e.from, e.to) <= (from, to))
            }
            NetworkKind::FifoInbox => self.messages.partition_point(|e| e.to <= to),
        };
        self.messages.insert(at, Arc::new(envelope));
    }

    /// Takes message `index` for delivery; it stays in a grow-only network.
    pub(crate) fn deliver(&mut self, index: usize) -> Arc<Envelope<M>> {
        if self.kind.consumes() {
            self.messages.remove(index)
        } else {
            Arc::clone(&self.messages[index])
        }
    }

    /// Loses message `index` (a fault).
    pub(crate) fn drop_message(&mut self, index: usize) -> Arc<Envelope<M>> {
        self.messages.remove(index)
    }

    /// Duplicates message `index` (a fault): the copy sits right behind the original.
    pub(crate) fn duplicate(&mut self, index: usize) {
        let copy = Arc::clone(&self.messages[index]);
        self.messages.insert(index + 1, copy);
    }

    /// Takes pending transport error `index`.
    pub(crate) fn take_error(&mut self, index: usize) -> (NodeId, NodeId) {
        self.errors.remove(index)
    }

    /// Node `node` reset: its connections break. Each peer with an open connection to it will
    /// observe a transport error, and the messages in flight between the two are lost, as when
    /// a TCP connection is reset.
    pub(crate) fn reset(&mut self, node: NodeId) {
        if self.kind != NetworkKind::FifoChannels {
            return;
        }
        let mut broken = Vec::new();
        self.connections.retain(|&(a, b)| {
            let peer = if a == node {
                b
            } else if b == node {
                a
            } else {
                return true;
            };
            broken.push(peer);
            false
        });
        for peer in broken {
            self.messages.retain(|e| !((e.from == node && e.to == peer) || (e.from == peer && e.to == node)));
            let error = (peer, node);
            let at = self.errors.partition_point(|e| *e <= error);
            self.errors.insert(at, error);
        }
    }

    /// The network's contribution to the world fingerprint.
    pub(crate) fn hash(&self) -> u128 {
        let mut sum = 0u128;
        match self.kind {
            NetworkKind::Unordered | NetworkKind::GrowOnly => {
                for e in &self.messages {
                    sum = sum.wrapping_add(e.hash);
                }
            }
            NetworkKind::FifoChannels | NetworkKind::FifoInbox => {
                let mut position = 0u64;
                for (i, e) in self.messages.iter().enumerate() {
                    let same_queue = i > 0 && {
                        let prev = &self.messages[i - 1];
                        match self.kind {
                            NetworkKind::FifoChannels => (prev.from, prev.to) == (e.from, e.to),
                            _ => prev.to == e.to,
                        }
                    };
                    position = if same_queue { position + 1 } else { 0 };
                    sum = sum.wrapping_add(FingerprintHasher::mix(position, e.hash));
                }
            }
        }
        for &(node, peer) in &self.errors {
            sum = sum.wrapping_add(FingerprintHasher::mix(1 << 62, FingerprintHasher::hash(&(node, peer))));
        }
        for &(a, b) in &self.connections {
            sum = sum.wrapping_add(FingerprintHasher::mix(1 << 63, FingerprintHasher::hash(&(a, b))));
        }
        sum
    }
}
