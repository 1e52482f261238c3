//! The `Protocol` trait: the code of one node, written once and run under every engine.
//!
//! Handlers run to completion and never block (Mace's event-driven, non-blocking handlers are
//! what let MaceMC use whole handlers as the unit of execution: NSDI'07, section 3.2). They must
//! be deterministic functions of the local state, the event and the answers of [`Out::choose`]:
//! no wall clock, no thread-local randomness, no `HashMap` iteration order. Everything a handler
//! does to the outside world — sending, arming timers, logging — goes through [`Out`].

use crate::{NodeId, Out};
use serde::{de::DeserializeOwned, Serialize};
use std::fmt::Debug;

/// One node's protocol: its local state type, the messages, timers and application inputs it
/// understands, and a handler for each kind of event.
///
/// All four associated types serialize: the canonical encoding is what fingerprints hash and
/// what traces show. States compare with `PartialEq`, so that a step that changes nothing is
/// recognised without hashing. Use `BTreeMap`/`BTreeSet` rather than hash maps inside them, so that equal
/// values encode to equal bytes.
pub trait Protocol: Sized + Send + Sync + 'static {
    /// The node's local state.
    type State: Clone + Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static;
    /// A message between nodes.
    type Msg: Clone + Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static;
    /// A timer name. Armed timers are a set, ordered by `Ord` for a canonical encoding.
    type Timer: Clone + Debug + Ord + Serialize + DeserializeOwned + Send + Sync + 'static;
    /// An application input from the driver (a client request, `joinOverlay`, ...).
    type Input: Clone + Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static;

    /// The state of node `me` when it starts.
    fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> Self::State;

    /// The state of node `me` when it restarts after a reset (a crash and reboot). `crashed` is
    /// the state it had; a protocol with stable storage keeps the durable part of it. The
    /// default keeps nothing: the node starts afresh, as MaceMC's `maceReset` did.
    fn restart(&self, me: NodeId, crashed: &Self::State, out: &mut Out<'_, Self>) -> Self::State {
        let _ = crashed;
        self.init(me, out)
    }

    /// Node `me` receives `msg` from `from`.
    fn on_message(
        &self,
        me: NodeId,
        state: &mut Self::State,
        from: NodeId,
        msg: &Self::Msg,
        out: &mut Out<'_, Self>,
    );

    /// Timer `timer` of node `me` fires. It was disarmed before the call; re-arm it with
    /// [`Out::set_timer`] to keep it (a recurring timer).
    fn on_timer(&self, me: NodeId, state: &mut Self::State, timer: &Self::Timer, out: &mut Out<'_, Self>) {
        let _ = (me, state, timer, out);
    }

    /// The driver gives node `me` an application input.
    fn on_input(&self, me: NodeId, state: &mut Self::State, input: &Self::Input, out: &mut Out<'_, Self>) {
        let _ = (me, state, input, out);
    }

    /// The coarse control state of `state` — P#'s machine state — that lasso detection's
    /// default partial hash remembers ([`crate::PartialHash::Default`]). Leave out what grows
    /// forever (round numbers, counters): a cycle of phases is then found even though the full
    /// state never repeats. The default, 0, says nothing about the state.
    fn phase(&self, state: &Self::State) -> u64 {
        let _ = state;
        0
    }

    /// The transport tells node `me` that its connection to `peer` broke (the peer reset, or a
    /// socket error): what a TCP RST looks like to the application.
    fn on_transport_error(&self, me: NodeId, state: &mut Self::State, peer: NodeId, out: &mut Out<'_, Self>) {
        let _ = (me, state, peer, out);
    }
}
