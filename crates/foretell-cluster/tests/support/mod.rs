//! The test protocol of the cluster tests and of the `cluster-test-node` binary they launch.
//!
//! `Relay` spreads the largest value around a ring over FIFO channels, with an `init` choice
//! (two initial worlds), a timer, one-shot inputs and one node reset, so that the worlds shipped
//! between workers carry messages, timers, connections and transport errors. With `bug`, a
//! node that relays a value adds one to it, and `always "below three"` breaks a few steps in.

use foretell_model::{Budget, Driver, Faults, Model, NetworkKind, NodeId, Out, Protocol, World};
use serde::{Deserialize, Serialize};

/// The ring protocol; `bug` plants the violation.
pub struct Relay {
    pub bug: bool,
}

/// A node's state: its value and how many times it forwarded one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub value: u8,
    pub forwarded: u8,
}

/// The only timer: send my value to the next node.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Share;

impl Relay {
    fn next(me: NodeId, out: &Out<'_, Self>) -> NodeId {
        NodeId::new((me.index() + 1) % out.node_count())
    }
}

impl Protocol for Relay {
    type State = State;
    type Msg = u8;
    type Timer = Share;
    type Input = ();

    fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> State {
        out.set_timer(Share, 10);
        let value = if me.0 == 0 { out.choose(2) as u8 } else { 0 };
        State { value, forwarded: 0 }
    }

    fn on_message(&self, me: NodeId, state: &mut State, _: NodeId, msg: &u8, out: &mut Out<'_, Self>) {
        let incoming = if self.bug { (msg + 1).min(3) } else { *msg };
        if incoming > state.value {
            state.value = incoming;
            if state.forwarded < 2 {
                state.forwarded += 1;
                out.send(Self::next(me, out), state.value);
            }
        }
    }

    fn on_timer(&self, me: NodeId, state: &mut State, _: &Share, out: &mut Out<'_, Self>) {
        out.send(Self::next(me, out), state.value);
    }

    fn on_input(&self, _: NodeId, state: &mut State, _: &(), _: &mut Out<'_, Self>) {
        state.value = (state.value + 1).min(2);
    }

    fn on_transport_error(&self, _: NodeId, state: &mut State, _: NodeId, _: &mut Out<'_, Self>) {
        state.forwarded = 2;
    }
}

/// The model: `nodes` nodes in a ring, one reset, a bump at nodes 0 and 2.
pub fn model(nodes: usize, bug: bool) -> Model<Relay> {
    Model::new(Relay { bug })
        .nodes(nodes)
        .network(NetworkKind::FifoChannels)
        .faults(Faults::none().resets(Budget::at_most(1)))
        .driver(Driver::new().input(NodeId(0), ()).input(NodeId(2), ()))
        .always("below three", |w: &World<Relay>| w.states().all(|s| s.value < 3))
        .sometimes("all two", |w: &World<Relay>| w.states().all(|s| s.value == 2))
}
