//! An event's shape (`Simulator::event_shape`) is the event without its message's payload:
//! equal for two messages of one variant on one channel, different across variants, channels,
//! event kinds and timers.

use foretell_model::{Action, Model, NodeId, Out, Protocol, Simulator, World};
use serde::{Deserialize, Serialize};

/// At start, node 0 sends `Ping(1)`, `Ping(2)` and `Pong(1)` to node 2, node 1 sends `Ping(1)`
/// to node 2, and node 2 arms two timers.
struct Pinger;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
enum Msg {
    Ping(u32),
    Pong(u32),
}

impl Protocol for Pinger {
    type State = ();
    type Msg = Msg;
    type Timer = u8;
    type Input = ();

    fn init(&self, me: NodeId, out: &mut Out<'_, Self>) {
        match me.0 {
            0 => {
                out.send(NodeId(2), Msg::Ping(1));
                out.send(NodeId(2), Msg::Ping(2));
                out.send(NodeId(2), Msg::Pong(1));
            }
            1 => out.send(NodeId(2), Msg::Ping(1)),
            _ => {
                out.set_timer(1, 1);
                out.set_timer(2, 1);
            }
        }
    }

    fn on_message(&self, _: NodeId, _: &mut (), _: NodeId, _: &Msg, _: &mut Out<'_, Self>) {}
}

/// The shape of the first enabled event `event` shows as `text` (its `Debug` form).
fn shape_of(sim: &Simulator<'_, Pinger>, world: &World<Pinger>, text: &str) -> u64 {
    let mut actions = Vec::new();
    sim.actions(world, &mut actions);
    let action: Action = actions
        .into_iter()
        .find(|&action| format!("{:?}", sim.event(world, action)) == text)
        .unwrap_or_else(|| panic!("no event {text}"));
    sim.event_shape(world, action)
}

#[test]
fn a_shape_keeps_the_channel_and_the_variant_and_drops_the_payload() {
    let model = Model::new(Pinger).nodes(3);
    let sim = Simulator::new(&model).expect("a valid model");
    let mut world = None;
    sim.initial_worlds(|_, w, _| world = world.take().or(Some(w)));
    let world = world.expect("an initial world");
    let deliver =
        |from: u32, msg: &str| format!("Deliver {{ from: NodeId({from}), to: NodeId(2), msg: {msg} }}");
    let ping_1 = shape_of(&sim, &world, &deliver(0, "Ping(1)"));
    assert_eq!(
        ping_1,
        shape_of(&sim, &world, &deliver(0, "Ping(2)")),
        "payloads differ, the variant does not"
    );
    assert_ne!(ping_1, shape_of(&sim, &world, &deliver(0, "Pong(1)")), "another variant");
    assert_ne!(ping_1, shape_of(&sim, &world, &deliver(1, "Ping(1)")), "another sender");
    let timer = |t: u8| format!("Timer {{ node: NodeId(2), timer: {t} }}");
    let timer_1 = shape_of(&sim, &world, &timer(1));
    assert_ne!(timer_1, shape_of(&sim, &world, &timer(2)), "another timer");
    assert_ne!(timer_1, ping_1);
}
