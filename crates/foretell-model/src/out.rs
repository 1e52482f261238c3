//! `Out`: everything a handler may do besides changing its own state.
//!
//! A handler sends messages, arms and cancels timers, asks for non-deterministic choices, reads
//! its monotone clock, logs, and states local assertions — all through `Out`, so that the
//! simulator (or the live runtime) decides what these mean. [`Out::choose`] is the handler's
//! side of the one seam: the [`Chooser`] behind it is an exhaustive odometer under search, a
//! seeded generator on a walk, a fixed list on replay.

use crate::{network::NetworkView, NodeId, Protocol};
use std::cell::Cell;
use std::fmt::Display;
use std::panic::Location;

/// Answers a handler's `choose(n)` questions.
pub trait Chooser {
    /// A value in `0..n`; `n` is at least 1.
    fn choose(&mut self, n: usize) -> usize;

    /// A value in `0..n` for the `choose` call at `site` in the protocol's source. Engines that
    /// reason about choice sites (lasso detection's fairness: every site in a cycle takes each
    /// of its values) override this; the default ignores the site.
    fn choose_at(&mut self, n: usize, site: &'static Location<'static>) -> usize {
        let _ = site;
        self.choose(n)
    }
}

/// The handler's window on the world: sends, timers, choices, clock, log and assertions.
pub struct Out<'a, P: Protocol> {
    pub(crate) me: NodeId,
    pub(crate) node_count: usize,
    pub(crate) sends: Vec<(NodeId, P::Msg)>,
    pub(crate) timers: &'a mut Vec<P::Timer>,
    pub(crate) clock: &'a mut u64,
    pub(crate) chooser: &'a mut dyn Chooser,
    pub(crate) choices: Vec<usize>,
    pub(crate) log: Option<Vec<String>>,
    pub(crate) failed: Vec<String>,
    pub(crate) disabled: bool,
    /// Whether the handler read the network ([`Out::mailbox`]): its effect then depends on more
    /// than its node's state and the event.
    pub(crate) read_network: Cell<bool>,
    /// The network as the handler's event left it.
    pub(crate) network: NetworkView<'a, P::Msg>,
    /// The most messages a FIFO queue holds ([`crate::Model::queue_capacity`]).
    pub(crate) queue_capacity: Option<usize>,
}

/// A send that found its queue full: the message was not sent (MaceMC's `route()` returning
/// false when the simulated TCP queue is full).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the queue to {to} is full")]
pub struct QueueFull {
    /// The destination.
    pub to: NodeId,
}

impl<'a, P: Protocol> Out<'a, P> {
    /// The node running the handler.
    pub fn me(&self) -> NodeId {
        self.me
    }

    /// How many nodes the model has; nodes are `0..node_count()`.
    pub fn node_count(&self) -> usize {
        self.node_count
    }

    /// Every node of the model, in order.
    pub fn nodes(&self) -> impl Iterator<Item = NodeId> + Clone {
        NodeId::all(self.node_count)
    }

    /// Every node but this one.
    pub fn peers(&self) -> impl Iterator<Item = NodeId> + Clone {
        let me = self.me;
        NodeId::all(self.node_count).filter(move |n| *n != me)
    }

    /// Declares that this event is not enabled in the current state, like a false guard of a
    /// TLA+ action: the step does not happen, the world stays as it was, and a delivered
    /// message is not consumed. Whatever the handler changed or sent is discarded.
    pub fn disable(&mut self) {
        self.disabled = true;
    }

    /// Sends `msg` to `to`. Delivery, order, loss and duplication are the network's business.
    /// A message that finds its queue full is lost; [`Out::try_send`] tells the sender.
    pub fn send(&mut self, to: NodeId, msg: P::Msg) {
        let _ = self.try_send(to, msg);
    }

    /// Sends `msg` to `to`, or fails if its FIFO queue holds as many messages as the model's
    /// [`crate::Model::queue_capacity`] allows (counting this handler's earlier sends).
    ///
    /// # Errors
    /// [`QueueFull`] when the queue is full; the message is not sent.
    pub fn try_send(&mut self, to: NodeId, msg: P::Msg) -> Result<(), QueueFull> {
        if let Some(capacity) = self.queue_capacity {
            self.read_network.set(true);
            let earlier = self.sends.iter().filter(|(dest, _)| *dest == to).count();
            if self.network.queue_len(self.me, to) + earlier >= capacity {
                return Err(QueueFull { to });
            }
        }
        self.sends.push((to, msg));
        Ok(())
    }

    /// Sends `msg` to every node in `to`.
    pub fn broadcast(&mut self, to: impl IntoIterator<Item = NodeId>, msg: P::Msg) {
        for node in to {
            self.send(node, msg.clone());
        }
    }

    /// Arms `timer`. Arming an armed timer changes nothing: a timer is armed or not. The model
    /// lets an armed timer fire at any point (time is abstract); the live runtime uses
    /// `after_ms` as the delay.
    pub fn set_timer(&mut self, timer: P::Timer, after_ms: u64) {
        let _ = after_ms;
        if let Err(at) = self.timers.binary_search(&timer) {
            self.timers.insert(at, timer);
        }
    }

    /// Disarms `timer` if it is armed.
    pub fn cancel_timer(&mut self, timer: &P::Timer) {
        if let Ok(at) = self.timers.binary_search(timer) {
            self.timers.remove(at);
        }
    }

    /// Whether `timer` is armed.
    pub fn timer_armed(&self, timer: &P::Timer) -> bool {
        self.timers.binary_search(timer).is_ok()
    }

    /// A non-deterministic value in `0..n`. Under exhaustive search every value is explored; on
    /// a walk one is drawn from the seed; on replay the recorded one is returned.
    ///
    /// # Panics
    /// If `n` is 0 (there is nothing to choose from); under a checker the panic is reported as
    /// a violation of the handler.
    #[track_caller]
    pub fn choose(&mut self, n: usize) -> usize {
        assert!(n > 0, "choose(0): nothing to choose from");
        let value = self.chooser.choose_at(n, Location::caller());
        assert!(value < n, "chooser answered {value} to choose({n})");
        self.choices.push(value);
        value
    }

    /// Chooses one element of `items`; `None` if it is empty.
    #[track_caller]
    pub fn choose_from<'t, T>(&mut self, items: &'t [T]) -> Option<&'t T> {
        if items.is_empty() {
            None
        } else {
            Some(&items[self.choose(items.len())])
        }
    }

    /// The node's monotone clock (MaceMC's MonotoneTime, NSDI'07 section 3.3): every call returns
    /// a larger value than the last, and the clock survives resets, so a new incarnation's
    /// timestamps are larger than the old one's. Its value is part of the local state.
    pub fn monotone_now(&mut self) -> u64 {
        *self.clock += 1;
        *self.clock
    }

    /// Records a log line for the trace. The line is only formatted when a trace is recorded.
    pub fn log(&mut self, line: impl Display) {
        if let Some(log) = self.log.as_mut() {
            log.push(line.to_string());
        }
    }

    /// A local assertion: if `condition` is false, the step violates the property named `what`.
    /// The handler goes on running; the checker reports the violation with its trace.
    pub fn require(&mut self, condition: bool, what: impl Display) {
        if !condition {
            self.failed.push(what.to_string());
        }
    }

    /// The messages addressed to this node that the network holds now. Under
    /// [`crate::NetworkKind::GrowOnly`] that is every message ever sent to it, which lets a
    /// faithful encoding of a TLA+ action read the message set as the spec does (Paxos.tla's
    /// `Phase2a`, for one). Protocols meant to run live should react to deliveries instead.
    pub fn mailbox(&self) -> impl Iterator<Item = (NodeId, &P::Msg)> + '_ {
        let me = self.me;
        self.read_network.set(true);
        self.network.messages().filter(move |e| e.to == me).map(|e| (e.from, &e.msg))
    }
}
