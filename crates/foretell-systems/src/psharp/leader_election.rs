//! Leader election on a unidirectional ring (Dolev, Klawe and Rodeh; Peterson), the bug-free P#
//! liveness benchmark of FMCAD'17 "Lasso Detection using Partial-State Caching" (section VI,
//! Table II), ported from `shared/specs/psharp-benchmarks.md`, section 6 (P#'s port of SPIN's
//! `leader` model, `LivenessBenchmarks/SpinBenchmarks/LeaderElection`).
//!
//! Every ring node starts active with its own number as its maximum and sends it on (`one`).
//! An active node compares the maximum of its active neighbour behind it (`one`) with the one
//! behind that (`two`): it survives, taking its neighbour's number, only if that number is a
//! local maximum; otherwise it turns passive and just forwards. The survivor that gets its own
//! maximum back knows the winner — the highest number — and announces it (`winner`) around the
//! ring. The node whose number won counts itself with the `LeaderCount` machine, checks that it
//! is the only leader and tells the monitor. Every run ends with one leader and the monitor
//! cold, so there is no liveness bug (the paper reports 0% for both techniques).
//!
//! # Nodes
//! Node 0 is the `Environment`; its `InitOnEntry` (creating the machines and wiring the ring)
//! is [`Protocol::init`], which sends every ring node its `SetNeighbours`. Nodes `1..=n` are the
//! ring nodes numbered `1..=n` (P#'s `Initialize(leaderCount, myNumber)`, which creates them, is
//! their `init`); node `i` sends to node `i - 1` and node 1 to node `n`, so messages flow
//! `1 → n → … → 2 → 1`. Node `n + 1` is the `LeaderCount` machine.
//!
//! # Encoding
//! Every node has a P# inbox ([`NetworkKind::FifoInbox`]). A ring node's `SetNeighbours`
//! handler raises `StartElection`, which sends `one` and sends the node itself
//! `ContinueElection`; that self-message moves it to `SecondPhase`, so other nodes can run in
//! between, as in P#. `Init` defers election messages: the node keeps them in its state and
//! handles them, in order, when `SecondPhase` is entered. `SecondPhase`'s entry is a loop of
//! `Receive(Message)`; each iteration is the handling of one delivery, and the loop's `break`
//! after a `winner` ends the election for the node (state `Finished`). The winner's blocking
//! `Receive(ValueResp)` after `UpdateLeadercount` and `ValueReq` is the state `AwaitingCount`,
//! which keeps election messages that arrive meanwhile for the loop. Requests carry no sender
//! field: `ValueReq`'s target is the envelope's `from`. The spec's assertions are local ones: a
//! node that gets its own maximum back asserts that it is `n` (the spec's `nr == 5`), and the
//! leader that `LeaderCount` answers 1. P#'s unhandled-event error, which a finished node would
//! raise on a further message, is the local assertion `"unhandled event"`. No handler needs
//! P#'s preemption inside it, so every handler runs whole.
//!
//! # Phases
//! [`Protocol::phase`] is the control location of a ring node — `Init`, the receive loop, the
//! wait for `ValueResp`, finished — and 0 for the environment and `LeaderCount`. Activity,
//! maxima and numbers are left out, as in P#'s default hash; so are the deferred messages,
//! whose names P# would see in the inbox.
//!
//! # Monitor
//! [`Elected`] is the spec's `LivenessMonitor`: hot `NoLeaderElected` until the step in which
//! a ring node becomes the leader (P#'s `NotifyLeaderElected`, after its assertion), then cold
//! `LeaderElected`.

use foretell_model::{Model, Monitor, NetworkKind, NodeId, Observation, Out, Protocol, Temperature, World};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The environment, which wires the ring.
pub const ENVIRONMENT: NodeId = NodeId(0);

/// The kind of an election message (SPIN's `mtype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    /// An active node's maximum, on its way to the next active node.
    One,
    /// The maximum of the active node before the sender's.
    Two,
    /// The announcement of the winning number.
    Winner,
}

/// The P# events between machines.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Msg {
    /// Environment to a ring node: its neighbours.
    SetNeighbours {
        /// The node messages come from (stored by P#, never used).
        input: NodeId,
        /// The node messages go to.
        output: NodeId,
    },
    /// A ring node to itself: enter the second phase.
    ContinueElection,
    /// An election message (P#'s `Message`).
    Message {
        /// Its kind.
        kind: Kind,
        /// The number it carries.
        nr: u32,
    },
    /// The leader to `LeaderCount`: count one more leader.
    UpdateLeaderCount,
    /// The leader to `LeaderCount`: how many leaders are there?
    ValueReq,
    /// `LeaderCount`'s answer.
    ValueResp {
        /// The number of leaders.
        value: u32,
    },
}

/// The control location of a ring node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Control {
    /// P#'s `Init`: before `ContinueElection`.
    Init,
    /// `SecondPhase`'s receive loop.
    Electing,
    /// The winner, blocked in `Receive(ValueResp)`.
    AwaitingCount,
    /// Out of the loop: the election is over for this node.
    Finished,
}

/// A ring node's state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RingNode {
    control: Control,
    number: u32,
    output: Option<NodeId>,
    active: bool,
    know_winner: bool,
    maximum: u32,
    neighbour_r: u32,
    /// Whether this node became the leader.
    leader: bool,
    /// Election messages kept while the node is in `Init` or awaits `ValueResp`.
    deferred: VecDeque<(Kind, u32)>,
}

/// A node's state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum State {
    /// The environment, idle once the ring is wired.
    Environment,
    /// A ring node.
    Ring(RingNode),
    /// The `LeaderCount` machine: how many leaders counted themselves.
    LeaderCount(u32),
}

/// Configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The number of ring nodes.
    pub nodes: usize,
}

impl Default for Config {
    /// The benchmark's five-node ring.
    fn default() -> Self {
        Config { nodes: 5 }
    }
}

/// One-sentence description.
pub const ABOUT: &str = "P# leader election on a unidirectional ring (Dolev-Klawe-Rodeh and \
    Peterson, after SPIN's leader model): always elects the highest number, no liveness bug";

/// The protocol: the code of the environment, the ring nodes and `LeaderCount`.
#[derive(Clone, Debug)]
pub struct LeaderElection {
    nodes: usize,
}

/// The model of `config`.
///
/// # Panics
/// If the ring has no node.
pub fn model(config: &Config) -> Model<LeaderElection> {
    assert!(config.nodes > 0, "a ring needs a node");
    Model::new(LeaderElection { nodes: config.nodes })
        .nodes(config.nodes + 2)
        .network(NetworkKind::FifoInbox)
        .monitor(Elected)
}

impl LeaderElection {
    /// The `LeaderCount` machine.
    pub fn leader_count(&self) -> NodeId {
        NodeId::new(self.nodes + 1)
    }

    /// The ring node with number `i`, counting from 1 and wrapping around.
    fn ring_node(&self, i: usize) -> NodeId {
        NodeId::new((i + self.nodes - 1) % self.nodes + 1)
    }

    fn on_ring(&self, me: NodeId, node: &mut RingNode, msg: &Msg, out: &mut Out<'_, Self>) {
        match (node.control, msg) {
            (Control::Init, Msg::SetNeighbours { output, .. }) => {
                node.output = Some(*output);
                out.send(*output, Msg::Message { kind: Kind::One, nr: node.number });
                out.send(me, Msg::ContinueElection);
            }
            (Control::Init | Control::AwaitingCount, Msg::Message { kind, nr }) => {
                node.deferred.push_back((*kind, *nr))
            }
            (Control::Init, Msg::ContinueElection) => {
                node.control = Control::Electing;
                self.receive_deferred(node, out);
            }
            (Control::Electing, Msg::Message { kind, nr }) => self.elect(node, *kind, *nr, out),
            (Control::AwaitingCount, Msg::ValueResp { value }) => {
                out.require(*value == 1, "one leader");
                node.leader = true;
                Self::announce(node, node.number, out);
                self.receive_deferred(node, out);
            }
            _ => out.require(false, "unhandled event"),
        }
    }

    /// Runs the receive loop over the deferred messages while the node is in it. Those left
    /// when the node finishes would be unhandled events in P#.
    fn receive_deferred(&self, node: &mut RingNode, out: &mut Out<'_, Self>) {
        while node.control == Control::Electing {
            let Some((kind, nr)) = node.deferred.pop_front() else { return };
            self.elect(node, kind, nr, out);
        }
        if node.control == Control::Finished {
            out.require(node.deferred.is_empty(), "unhandled event");
        }
    }

    /// One iteration of `SecondPhase`'s receive loop.
    fn elect(&self, node: &mut RingNode, kind: Kind, nr: u32, out: &mut Out<'_, Self>) {
        let next = node.output.expect("the neighbours are set before the second phase");
        match kind {
            Kind::One if !node.active => out.send(next, Msg::Message { kind: Kind::One, nr }),
            Kind::One if nr != node.maximum => {
                out.send(next, Msg::Message { kind: Kind::Two, nr });
                node.neighbour_r = nr;
            }
            Kind::One => {
                out.require(nr as usize == self.nodes, "the winner is the highest number");
                node.know_winner = true;
                out.send(next, Msg::Message { kind: Kind::Winner, nr });
            }
            Kind::Two if !node.active => out.send(next, Msg::Message { kind: Kind::Two, nr }),
            Kind::Two if node.neighbour_r > nr && node.neighbour_r > node.maximum => {
                node.maximum = node.neighbour_r;
                out.send(next, Msg::Message { kind: Kind::One, nr: node.neighbour_r });
            }
            Kind::Two => node.active = false,
            Kind::Winner if nr == node.number => {
                out.send(self.leader_count(), Msg::UpdateLeaderCount);
                out.send(self.leader_count(), Msg::ValueReq);
                node.control = Control::AwaitingCount;
            }
            Kind::Winner => Self::announce(node, nr, out),
        }
    }

    /// The end of a `winner` iteration: pass the announcement on unless this node started it,
    /// and leave the loop.
    fn announce(node: &mut RingNode, nr: u32, out: &mut Out<'_, Self>) {
        if !node.know_winner {
            let next = node.output.expect("the neighbours are set");
            out.send(next, Msg::Message { kind: Kind::Winner, nr });
        }
        node.control = Control::Finished;
    }
}

impl Protocol for LeaderElection {
    type State = State;
    type Msg = Msg;
    type Timer = ();
    type Input = ();

    fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> State {
        if me == ENVIRONMENT {
            for i in 1..=self.nodes {
                let wiring =
                    Msg::SetNeighbours { input: self.ring_node(i + 1), output: self.ring_node(i - 1) };
                out.send(self.ring_node(i), wiring);
            }
            State::Environment
        } else if me == self.leader_count() {
            State::LeaderCount(0)
        } else {
            State::Ring(RingNode {
                control: Control::Init,
                number: me.0,
                output: None,
                active: true,
                know_winner: false,
                maximum: me.0,
                neighbour_r: 0,
                leader: false,
                deferred: VecDeque::new(),
            })
        }
    }

    fn on_message(&self, me: NodeId, state: &mut State, from: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
        match (state, msg) {
            (State::Ring(node), _) => self.on_ring(me, node, msg, out),
            (State::LeaderCount(leaders), Msg::UpdateLeaderCount) => *leaders += 1,
            (State::LeaderCount(leaders), Msg::ValueReq) => {
                out.send(from, Msg::ValueResp { value: *leaders })
            }
            _ => out.require(false, "unhandled event"),
        }
    }

    fn phase(&self, state: &State) -> u64 {
        match state {
            State::Ring(node) => node.control as u64,
            State::Environment | State::LeaderCount(_) => 0,
        }
    }
}

/// Whether `node` is a ring node that became the leader.
fn is_leader(world: &World<LeaderElection>, node: NodeId) -> bool {
    matches!(world.state(node), State::Ring(RingNode { leader: true, .. }))
}

/// The spec's liveness monitor: hot until a leader is elected.
#[derive(Clone, Copy, Debug)]
pub struct Elected;

/// [`Elected`]'s state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ElectedState {
    /// No leader yet (hot).
    NoLeaderElected,
    /// A leader was elected (cold).
    LeaderElected,
}

impl Monitor<LeaderElection> for Elected {
    type State = ElectedState;

    fn name(&self) -> &str {
        "LivenessMonitor"
    }

    fn init(&self, _: &World<LeaderElection>) -> ElectedState {
        ElectedState::NoLeaderElected
    }

    fn observe(&self, state: &mut ElectedState, step: &Observation<'_, LeaderElection>) {
        let node = step.event.node();
        if !is_leader(step.before, node) && is_leader(step.after, node) {
            *state = ElectedState::LeaderElected;
        }
    }

    fn temperature(&self, state: &ElectedState) -> Temperature {
        match state {
            ElectedState::NoLeaderElected => Temperature::Hot,
            ElectedState::LeaderElected => Temperature::Cold,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::script::{hottest, monitored_space, Rng, Script};
    use super::*;
    use foretell_check::{Check, Completion};

    #[test]
    fn bfs_finds_no_violation() {
        // Exhaustive search of rings of 1 to 5 nodes: no assertion fails (the winner is the
        // highest number, there is one leader, no event goes unhandled).
        for (nodes, states) in [(1, 8), (2, 32), (3, 211), (4, 1_383), (5, 8_838)] {
            let report = Check::bfs(&model(&Config { nodes })).run();
            assert_eq!(report.completion, Completion::Exhausted, "{report}");
            assert!(report.violations.is_empty(), "{report}");
            assert_eq!(report.stats.unique_states, states, "{nodes} nodes");
        }
    }

    /// Asserts that `world` is the end of an election won by the highest number.
    fn assert_elected(config: &Config, world: &World<LeaderElection>) {
        let protocol = LeaderElection { nodes: config.nodes };
        let ring = || (1..=config.nodes).map(NodeId::new);
        let leaders: Vec<NodeId> = ring().filter(|n| is_leader(world, *n)).collect();
        assert_eq!(leaders, [NodeId::new(config.nodes)], "{world:?}");
        assert_eq!(world.state(protocol.leader_count()), &State::LeaderCount(1));
        for node in ring() {
            assert!(matches!(world.state(node), State::Ring(RingNode { control: Control::Finished, .. })));
        }
    }

    #[test]
    fn every_execution_ends_with_one_leader_and_the_monitor_cold() {
        // The whole state space is finite; every world without an enabled action has exactly
        // the highest-numbered node as leader, every node out of the election and the monitor
        // cold. The end is the same world whatever the schedule.
        for (nodes, pairs) in [(1, 8), (3, 211), (5, 8_838)] {
            let config = Config { nodes };
            let model = model(&config);
            let (seen, terminal) = monitored_space(&model);
            assert_eq!(seen, pairs, "{nodes} nodes");
            assert_eq!(terminal.len(), 1, "{nodes} nodes");
            for (world, monitors) in &terminal {
                assert_elected(&config, world);
                assert_eq!(hottest(&model, monitors), Temperature::Cold);
            }
        }
    }

    #[test]
    fn smoke() {
        // 300 random executions of up to 500 steps violate no assertion and all end elected,
        // with the monitor cold.
        let config = Config::default();
        let model = model(&config);
        let mut script = Script::new(&model);
        let mut rng = Rng::new(0x2545_f491_4f6c_dd1d);
        for _ in 0..300 {
            script.reset().random_steps(&mut rng, 500);
            assert!(script.events().is_empty(), "the election ends within 500 steps");
            assert_elected(&config, &script.world);
            assert_eq!(script.temperature(), Temperature::Cold);
        }
    }
}
