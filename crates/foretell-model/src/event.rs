//! Events and actions: what a step executes.
//!
//! An [`Action`] is the engine-side name of an enabled event: small, `Copy`, and valid only for
//! the world it was enumerated from (it holds indices into that world). An [`Event`] is the
//! self-describing form written into traces (the message, the timer, the input themselves); a
//! replay finds the enabled action whose event equals the recorded one, so traces do not depend
//! on the order in which events are enumerated.

use crate::NodeId;
use serde::{Deserialize, Serialize};

/// An enabled event of one particular world, by index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Deliver the message at this index of the network.
    Deliver(u32),
    /// Deliver the pending transport error at this index.
    TransportError(u32),
    /// Fire a node's armed timer, by its index among the node's timers.
    Timer(NodeId, u32),
    /// Give one-shot driver input number `i`.
    Input(u32),
    /// Give spontaneous driver input number `i`.
    Spontaneous(u32),
    /// Reset the node (crash and restart).
    Reset(NodeId),
    /// Lose the message at this index.
    Drop(u32),
    /// Duplicate the message at this index.
    Duplicate(u32),
    /// Break the open connection at this index (a bidirectional socket error).
    SocketError(u32),
}

impl Action {
    /// Whether this action is a fault injected by the environment.
    pub fn is_fault(self) -> bool {
        matches!(self, Action::Reset(_) | Action::Drop(_) | Action::Duplicate(_) | Action::SocketError(_))
    }
}

/// A self-describing event, as traces record it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event<M, T, I> {
    /// `to` receives `msg` from `from`.
    Deliver {
        /// Sender.
        from: NodeId,
        /// Receiver.
        to: NodeId,
        /// Payload.
        msg: M,
    },
    /// `node` learns that its connection to `peer` broke.
    TransportError {
        /// The node that observes the error.
        node: NodeId,
        /// The peer whose connection broke.
        peer: NodeId,
    },
    /// A timer of `node` fires.
    Timer {
        /// The node.
        node: NodeId,
        /// The timer.
        timer: T,
    },
    /// The driver gives `node` a one-shot input.
    Input {
        /// The node.
        node: NodeId,
        /// The input.
        input: I,
    },
    /// The driver gives `node` a spontaneous input.
    Spontaneous {
        /// The node.
        node: NodeId,
        /// The input.
        input: I,
    },
    /// `node` crashes and restarts.
    Reset {
        /// The node.
        node: NodeId,
    },
    /// The network loses a message.
    Drop {
        /// Sender.
        from: NodeId,
        /// Receiver.
        to: NodeId,
        /// Payload.
        msg: M,
    },
    /// The network duplicates a message.
    Duplicate {
        /// Sender.
        from: NodeId,
        /// Receiver.
        to: NodeId,
        /// Payload.
        msg: M,
    },
    /// The connection between `node` and `peer` breaks in both directions: the messages in
    /// flight on it are lost and each side will observe a transport error.
    SocketError {
        /// The lower-numbered end.
        node: NodeId,
        /// The other end.
        peer: NodeId,
    },
}

impl<M, T, I> Event<M, T, I> {
    /// The node the event happens at: the receiver for network events.
    pub fn node(&self) -> NodeId {
        match self {
            Event::Deliver { to, .. } | Event::Drop { to, .. } | Event::Duplicate { to, .. } => *to,
            Event::TransportError { node, .. }
            | Event::Timer { node, .. }
            | Event::Input { node, .. }
            | Event::Spontaneous { node, .. }
            | Event::Reset { node }
            | Event::SocketError { node, .. } => *node,
        }
    }

    /// A short name of the event's kind.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Event::Deliver { .. } => "deliver",
            Event::TransportError { .. } => "transport_error",
            Event::Timer { .. } => "timer",
            Event::Input { .. } => "input",
            Event::Spontaneous { .. } => "spontaneous",
            Event::Reset { .. } => "reset",
            Event::Drop { .. } => "drop",
            Event::Duplicate { .. } => "duplicate",
            Event::SocketError { .. } => "socket_error",
        }
    }
}
