//! Cuts: the changes that take whole queues out of a FIFO network, with connections and
//! transport errors — a node's reset, a socket error, a transport error's delivery — made in
//! place and undone, or seen through a [`super::NetworkView`] without being made.
//!
//! A reset breaks every connection of its node: the messages in flight over them are lost, and
//! each peer will observe a transport error, as when a TCP connection is reset; the node's
//! messages to itself are lost too (MaceMC's simulated TCP clears the local queue on a reset).
//! A socket error breaks one connection, and both its ends will observe the error. A delivered
//! transport error leaves the pending errors and, where errors are queued behind the messages
//! their observer sent ([`ErrorOrder::Queued`]), takes what it sent to the broken peer since.
//! Made on a copy, each cost a search one reference count per message the network holds, up
//! and down, for every such successor: half of a depth-first search of `randtree`, whose
//! channels hold thousands. A view answers the successor's fingerprint and its handler's reads
//! without the copy, and a delta makes the cut in the walking world's own network and takes it
//! back, keeping only what the cut took out.

use super::{connection_term, error_term, Envelope, Network, NetworkKind};
use crate::{ErrorOrder, NodeId};
use serde::Serialize;
use std::ops::Range;
use std::sync::Arc;

/// A change that takes whole queues out of a FIFO network. Only FIFO channels have connections
/// to break (a reset of a node on another kind changes no network), and only they lose a queue
/// with a delivered error; on another kind, a delivered error is only taken out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cut {
    /// A reset of this node: its queue to itself and its connections' queues are lost, its
    /// connections break, and each peer's transport error is queued.
    Reset(NodeId),
    /// A socket error on the open connection at this index: the queues both ways over it are
    /// lost, and both ends' transport errors are queued.
    Connection(u32),
    /// The delivery of the transport error at this index of the pending errors; `queued`
    /// where it also takes the queue its observer sent to the broken peer since.
    Error { index: u32, queued: bool },
}

impl Cut {
    /// The delivery of `network`'s pending error `index` under `order`.
    pub(crate) fn error<M>(network: &Network<M>, index: u32, order: ErrorOrder) -> Self {
        let queued = order == ErrorOrder::Queued && network.kind == NetworkKind::FifoChannels;
        Cut::Error { index, queued }
    }

    /// The transport errors breaking connection `pair` queues.
    fn errors(self, (a, b): (NodeId, NodeId)) -> impl Iterator<Item = (NodeId, NodeId)> {
        let (first, second) = match self {
            Cut::Reset(node) if a == node => ((b, node), None),
            Cut::Reset(node) => ((a, node), None),
            Cut::Connection(_) | Cut::Error { .. } => ((a, b), Some((b, a))),
        };
        std::iter::once(first).chain(second)
    }
}

/// What [`Network::cut_in_place`] took out of a network, to put back.
pub(crate) struct CutTaken<M> {
    /// The lost queues' index ranges before the cut, ascending ([`Network::lost_ranges`]).
    ranges: Vec<Range<usize>>,
    /// Their messages, in order.
    messages: Vec<Arc<Envelope<M>>>,
    restore: Restore,
}

/// What a cut did besides losing messages.
enum Restore {
    /// A reset or a socket error broke these connections, and queued their errors.
    Connections { cut: Cut, broken: Vec<(NodeId, NodeId)> },
    /// A delivery took this error from this index.
    Error { index: u32, error: (NodeId, NodeId) },
}

impl<M: Serialize> Network<M> {
    /// Whether `cut` loses the queue from `from` to `to`.
    pub(super) fn loses(&self, cut: Cut, from: NodeId, to: NodeId) -> bool {
        self.lost_queues(cut).any(|queue| queue == (from, to))
    }

    /// The queues (sender, destination) `cut` loses: a reset node's queue to itself, both ways
    /// over each broken connection, and a queued error's channel.
    fn lost_queues(&self, cut: Cut) -> impl Iterator<Item = (NodeId, NodeId)> + '_ {
        let own = match cut {
            Cut::Reset(node) => Some((node, node)),
            Cut::Error { index, queued: true } => Some(self.errors[index as usize]),
            Cut::Connection(_) | Cut::Error { queued: false, .. } => None,
        };
        own.into_iter().chain(self.broken(cut).flat_map(|(a, b)| [(a, b), (b, a)]))
    }

    /// Whether `cut` breaks connection `pair` (lower node first), open here.
    pub(super) fn breaks(&self, cut: Cut, pair: (NodeId, NodeId)) -> bool {
        self.broken(cut).any(|broken| broken == pair)
    }

    /// The connections `cut` breaks.
    fn broken(&self, cut: Cut) -> impl Iterator<Item = (NodeId, NodeId)> + '_ {
        let connections = match cut {
            Cut::Reset(_) => &self.connections[..],
            Cut::Connection(index) => &self.connections[index as usize..=index as usize],
            Cut::Error { .. } => &[],
        };
        connections.iter().copied().filter(move |&pair| match cut {
            Cut::Reset(node) => touches(pair, node),
            Cut::Connection(_) | Cut::Error { .. } => true,
        })
    }

    /// The index ranges of the queues `cut` loses, ascending, each a whole queue: found by
    /// search, as a network of thousands of messages loses a few queues.
    pub(super) fn lost_ranges(&self, cut: Cut) -> Vec<Range<usize>> {
        let queue = |(from, to): (NodeId, NodeId)| {
            let start = self.messages.partition_point(|e| (e.from, e.to) < (from, to));
            start..start + self.messages[start..].partition_point(|e| (e.from, e.to) == (from, to))
        };
        let mut ranges: Vec<_> = self.lost_queues(cut).map(queue).filter(|range| !range.is_empty()).collect();
        ranges.sort_unstable_by_key(|range| range.start);
        ranges
    }

    /// The hash of this network after `cut`, from the terms it removes and adds: no copy, and
    /// only the lost queues' terms hashed.
    pub(super) fn hash_after(&self, cut: Cut) -> u128 {
        self.hash_after_losing(cut, &self.lost_ranges(cut))
    }

    /// [`Network::hash_after`], given `cut`'s [`Network::lost_ranges`].
    fn hash_after_losing(&self, cut: Cut, lost: &[Range<usize>]) -> u128 {
        let mut hash = self.hash;
        for range in lost.iter().cloned() {
            for (position, e) in self.messages[range].iter().enumerate() {
                hash = hash.wrapping_sub(self.message_term(position, e));
            }
        }
        for pair in self.broken(cut) {
            hash = cut.errors(pair).fold(hash.wrapping_sub(connection_term(pair)), |hash, error| {
                hash.wrapping_add(error_term(error))
            });
        }
        if let Cut::Error { index, .. } = cut {
            hash = hash.wrapping_sub(error_term(self.errors[index as usize]));
        }
        hash
    }

    /// Makes `cut` here, so that [`Network::undo_cut`] can take it back: returns what it took
    /// out. Copies no message: the kept ones close up, the lost ones move out.
    pub(crate) fn cut_in_place(&mut self, cut: Cut) -> CutTaken<M> {
        let ranges = self.lost_ranges(cut);
        let hash = self.hash_after_losing(cut, &ranges);
        // Sorted out from the first lost message on.
        let first = ranges.first().map_or(self.messages.len(), |range| range.start);
        let tail = self.messages.split_off(first);
        let mut messages = Vec::with_capacity(ranges.iter().map(Range::len).sum());
        let mut lost = ranges.iter().peekable();
        for (at, e) in (first..).zip(tail) {
            while lost.next_if(|range| range.end <= at).is_some() {}
            match lost.peek() {
                Some(range) if range.start <= at => messages.push(e),
                _ => self.messages.push(e),
            }
        }
        let restore = match cut {
            Cut::Reset(_) | Cut::Connection(_) => {
                let broken: Vec<_> = self.broken(cut).collect();
                self.connections.retain(|pair| !broken.contains(pair));
                for &pair in &broken {
                    cut.errors(pair).for_each(|error| self.insert_error(error));
                }
                Restore::Connections { cut, broken }
            }
            Cut::Error { index, .. } => Restore::Error { index, error: self.errors.remove(index as usize) },
        };
        self.hash = hash;
        self.debug_check();
        CutTaken { ranges, messages, restore }
    }

    /// Makes `cut` on this network, a copy, which keeps nothing to undo it.
    pub(crate) fn cut(&mut self, cut: Cut) {
        drop(self.cut_in_place(cut));
    }

    /// Takes back [`Network::cut_in_place`]: its errors out (or back), its connections and
    /// messages back where they were; and sets the hash back to `hash`.
    pub(crate) fn undo_cut(&mut self, taken: CutTaken<M>, hash: u128) {
        let CutTaken { ranges, messages, restore } = taken;
        match restore {
            Restore::Connections { cut, broken } => {
                for pair in broken {
                    for error in cut.errors(pair) {
                        let at = self.errors.binary_search(&error).expect("the cut queued the error");
                        self.errors.remove(at);
                    }
                    let at =
                        self.connections.binary_search(&pair).expect_err("a broken connection stays closed");
                    self.connections.insert(at, pair);
                }
            }
            Restore::Error { index, error } => self.errors.insert(index as usize, error),
        }
        if let Some(first) = ranges.first() {
            // Merged back from the first lost message's place on.
            let (mut kept, mut lost) =
                (self.messages.split_off(first.start).into_iter(), messages.into_iter());
            for range in &ranges {
                self.messages.extend(kept.by_ref().take(range.start - self.messages.len()));
                self.messages.extend(lost.by_ref().take(range.len()));
            }
            self.messages.extend(kept);
        }
        self.hash = hash;
        self.debug_check();
    }
}

/// Whether `node` is one end of `pair`.
fn touches((a, b): (NodeId, NodeId), node: NodeId) -> bool {
    a == node || b == node
}
