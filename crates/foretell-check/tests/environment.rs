//! The environment MaceMC simulated, as every engine sees it: startup inputs given again after a
//! reset, bidirectional socket errors, bounded FIFO queues, and searches that start from a
//! scenario's world.

use foretell_check::{Check, CheckOptions, DynModel, EngineKind};
use foretell_model::{
    Budget, Driver, Event, Faults, Model, ModelError, NetworkKind, NodeId, Out, Protocol, Scenario,
    Simulator, World,
};
use serde::{Deserialize, Serialize};

/// A node joins by greeting a peer; a greeted node counts greetings (up to three) and answers
/// the first; a broken connection is remembered. `Init` and `Join` are the application's
/// startup events, in that order.
struct Greeter;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Node {
    started: bool,
    joined: bool,
    greetings: u8,
    errors: u8,
    refused: u8,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Input {
    Init,
    Join(NodeId),
    Flood(NodeId),
}

impl Protocol for Greeter {
    type State = Node;
    type Msg = u8;
    type Timer = ();
    type Input = Input;

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> Node {
        Node::default()
    }

    fn on_message(&self, _: NodeId, node: &mut Node, from: NodeId, hello: &u8, out: &mut Out<'_, Self>) {
        node.greetings = (node.greetings + 1).min(3);
        if *hello == 0 {
            out.send(from, 1);
        }
    }

    fn on_input(&self, _: NodeId, node: &mut Node, input: &Input, out: &mut Out<'_, Self>) {
        match input {
            Input::Init => node.started = true,
            Input::Join(peer) => {
                out.require(node.started, "init before join");
                node.joined = true;
                out.send(*peer, 0);
            }
            Input::Flood(peer) => {
                for _ in 0..3 {
                    if out.try_send(*peer, 2).is_err() {
                        node.refused += 1;
                    }
                }
            }
        }
    }

    fn on_transport_error(&self, _: NodeId, node: &mut Node, _: NodeId, _: &mut Out<'_, Self>) {
        node.errors = (node.errors + 1).min(3);
    }
}

fn startup(nodes: usize) -> Driver<Greeter> {
    let mut driver = Driver::new();
    for n in 0..nodes {
        let peer = NodeId::new((n + 1) % nodes);
        driver = driver.startup(NodeId::new(n), Input::Init).startup(NodeId::new(n), Input::Join(peer));
    }
    driver
}

fn greeters(nodes: usize) -> Model<Greeter> {
    Model::new(Greeter).nodes(nodes).network(NetworkKind::FifoChannels).driver(startup(nodes))
}

/// A node's startup inputs come in order, are given again after the node resets, and a node
/// is not reset before it has started.
#[test]
fn startup_inputs_come_in_order_and_again_after_a_reset() {
    let model = greeters(2)
        .faults(Faults::none().resets(Budget::at_most(1)))
        .sometimes("rejoined", |w: &World<Greeter>| {
            w.state(NodeId(0)).joined && w.state(NodeId(1)).errors > 0
        });
    let sim = Simulator::new(&model).unwrap();
    let mut init = None;
    sim.initial_worlds(|_, world, _| init = Some(world));
    let init = init.unwrap();
    let enabled = |world: &World<Greeter>| {
        let mut actions = Vec::new();
        sim.actions(world, &mut actions);
        actions.iter().map(|a| sim.event(world, *a)).collect::<Vec<_>>()
    };
    // Only each node's first startup input is enabled, and no reset: no node has started.
    let first = enabled(&init);
    assert_eq!(first.len(), 2, "{first:?}");
    assert!(first.iter().all(|e| matches!(e, Event::Input { input: Input::Init, .. })), "{first:?}");
    let report = Check::bfs(&model).run();
    // `Join` never runs before `Init` (its `require` would be a violation).
    assert!(report.violations.is_empty(), "{report}");
    report.assert_covered("rejoined");
    // The shortest way to a rejoined node 0: both start, 0 joins (opening the connection),
    // 0 resets (1 sees the error), then 0 starts and joins again.
    let rejoined = Model::new(Greeter)
        .nodes(2)
        .network(NetworkKind::FifoChannels)
        .driver(startup(2))
        .faults(Faults::none().resets(Budget::at_most(1)))
        .always("not rejoined", |w: &World<Greeter>| {
            !(w.state(NodeId(0)).joined && w.state(NodeId(1)).errors > 0)
        });
    let trace = Check::bfs(&rejoined).run().assert_violated("not rejoined").trace.clone();
    let kinds: Vec<&str> = trace.steps.iter().map(|s| s.event["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["input", "input", "reset", "transport_error", "input", "input"],
        "{}",
        trace.to_text(false)
    );
    Simulator::new(&rejoined).unwrap().replay(&trace).unwrap();
}

/// A reset loses the node's messages to itself, as MaceMC's simulated TCP clears the local
/// queue: no message of an earlier incarnation reaches the next one.
#[test]
fn a_reset_loses_the_nodes_messages_to_itself() {
    let driver = Driver::new().startup(NodeId(0), Input::Init).startup(NodeId(0), Input::Join(NodeId(0)));
    let model = Model::new(Greeter)
        .network(NetworkKind::FifoChannels)
        .driver(driver)
        .faults(Faults::none().resets(Budget::at_most(1)))
        .always("nothing in flight across a reset", |w: &World<Greeter>| {
            w.pending_input_count() < 2 || w.messages().len() == 0
        })
        .sometimes("greeted itself twice", |w: &World<Greeter>| w.state(NodeId(0)).greetings == 1);
    let report = Check::bfs(&model).run();
    report.assert_holds("nothing in flight across a reset").assert_covered("greeted itself twice");
}

/// A socket error breaks a connection both ways: both ends observe a transport error and the
/// messages in flight on it are lost. The budget bounds how many happen.
#[test]
fn socket_errors_break_connections_both_ways() {
    let model = greeters(2)
        .faults(Faults::none().socket_errors(Budget::at_most(1)))
        .always("no errors", |w: &World<Greeter>| w.states().all(|n| n.errors == 0))
        .sometimes("both ends saw it", |w: &World<Greeter>| w.states().all(|n| n.errors == 1));
    let report = Check::bfs(&model).run();
    let trace = &report.assert_violated("no errors").trace;
    let broken = trace.steps.iter().find(|s| s.event["kind"] == "socket_error").expect("a socket error step");
    assert_eq!(broken.event["node"], 0);
    assert_eq!(broken.event["peer"], 1);
    assert!(trace.to_text(false).contains("socket error"), "{}", trace.to_text(false));

    let counting = greeters(2)
        .faults(Faults::none().socket_errors(Budget::at_most(1)))
        .always("at most one per end", |w: &World<Greeter>| w.states().all(|n| n.errors <= 1))
        .sometimes("both ends saw it", |w: &World<Greeter>| w.states().all(|n| n.errors == 1))
        .sometimes("greeting lost", |w: &World<Greeter>| {
            w.states().all(|n| n.joined && n.greetings == 0) && w.messages().len() == 0
        });
    Check::bfs(&counting)
        .run()
        .assert_holds("at most one per end")
        .assert_covered("both ends saw it")
        .assert_covered("greeting lost");

    let unordered = Model::new(Greeter).nodes(2).faults(Faults::none().socket_errors(Budget::at_most(1)));
    assert_eq!(Simulator::new(&unordered).err(), Some(ModelError::SocketErrorsWithoutConnections));
}

/// A send that finds its queue full fails: `try_send` tells the sender, and the message is not
/// sent. Earlier sends of the same handler count.
#[test]
fn bounded_queues_refuse_sends_beyond_their_capacity() {
    let driver = || Driver::new().input(NodeId(0), Input::Flood(NodeId(1)));
    let model = Model::new(Greeter)
        .nodes(2)
        .network(NetworkKind::FifoChannels)
        .queue_capacity(2)
        .driver(driver())
        .always("queue bounded", |w: &World<Greeter>| w.messages().len() <= 2)
        .sometimes("one refused", |w: &World<Greeter>| w.state(NodeId(0)).refused == 1);
    Check::bfs(&model).run().assert_holds("queue bounded").assert_covered("one refused");

    let unbounded = Model::new(Greeter)
        .nodes(2)
        .network(NetworkKind::FifoChannels)
        .driver(driver())
        .always("none refused", |w: &World<Greeter>| w.state(NodeId(0)).refused == 0)
        .sometimes("three queued", |w: &World<Greeter>| w.messages().len() == 3);
    Check::bfs(&unbounded).run().assert_holds("none refused").assert_covered("three queued");

    let zero = Model::new(Greeter).nodes(2).network(NetworkKind::FifoChannels).queue_capacity(0);
    assert_eq!(Simulator::new(&zero).err(), Some(ModelError::ZeroCapacity));
    let udp = Model::new(Greeter).nodes(2).queue_capacity(1);
    assert_eq!(Simulator::new(&udp).err(), Some(ModelError::CapacityWithoutQueues));
}

/// Both nodes started and joined, both greetings delivered.
fn greeted(nodes: usize) -> Scenario<Greeter> {
    let mut scenario = Scenario::new("greeted");
    for n in 0..nodes {
        let (node, peer) = (NodeId::new(n), NodeId::new((n + 1) % nodes));
        scenario = scenario
            .then(Event::Input { node, input: Input::Init })
            .then(Event::Input { node, input: Input::Join(peer) });
    }
    for n in 0..nodes {
        let (from, to) = (NodeId::new(n), NodeId::new((n + 1) % nodes));
        scenario = scenario.then(Event::Deliver { from, to, msg: 0 });
    }
    scenario
}

/// Every engine starts from the scenario's world and counts depth from it; the traces begin at
/// the initial world with the scenario's steps first, and replay under the ordinary simulator.
#[test]
fn every_engine_starts_from_a_scenario() {
    let model = greeters(2)
        .start_from(greeted(2))
        .always("fewer than three greetings", |w: &World<Greeter>| w.states().all(|n| n.greetings < 2));
    for engine in EngineKind::GLOBAL {
        let options = CheckOptions { engine, ..Default::default() };
        let report = model.check(&options).unwrap();
        let violation = report.violation("fewer than three greetings").unwrap_or_else(|| panic!("{report}"));
        let trace = &violation.trace;
        let scenario = trace.scenario.as_ref().expect("the trace names its scenario");
        assert_eq!((scenario.name.as_str(), scenario.steps), ("greeted", 6));
        // From the scenario, one answer delivered gives a node its second greeting.
        assert_eq!(trace.steps.len(), 7, "{engine}: {}", trace.to_text(false));
        assert_eq!(trace.verdict.as_ref().unwrap().step, 7);
        let text = trace.to_text(false);
        let marker =
            text.lines().position(|l| l.contains("the search started here, at scenario \"greeted\""));
        assert_eq!(marker, Some(6), "{text}");
        // The replay starts at the initial world, with or without the scenario in the model.
        Simulator::new(&model).unwrap().replay(trace).unwrap();
        let plain = greeters(2)
            .always("fewer than three greetings", |w: &World<Greeter>| w.states().all(|n| n.greetings < 2));
        Simulator::new(&plain).unwrap().replay(trace).unwrap();
    }
    // From the scenario, the space is what follows it: fewer worlds than from the start.
    let from_scenario = Check::bfs(&greeters(2).start_from(greeted(2))).run();
    let from_start = Check::bfs(&greeters(2)).run();
    assert!(from_scenario.stats.unique_states < from_start.stats.unique_states);
    assert_eq!(from_scenario.stats.max_depth, 2, "{from_scenario}");
}

/// A scenario can be the first steps of a saved trace, and a scenario that does not run is a
/// clear model error.
#[test]
fn scenarios_from_traces_and_bad_scenarios() {
    let model = greeters(2)
        .always("fewer than three greetings", |w: &World<Greeter>| w.states().all(|n| n.greetings < 2));
    let trace = Check::bfs(&model).run().assert_violated("fewer than three greetings").trace.clone();
    let sim = Simulator::new(&model).unwrap();
    let prefix = Scenario::from_trace(&sim, "saved", &trace, 4).unwrap();
    assert_eq!(prefix.steps().len(), 4);
    let resumed = greeters(2)
        .start_from(prefix)
        .always("fewer than three greetings", |w: &World<Greeter>| w.states().all(|n| n.greetings < 2));
    let again = Check::bfs(&resumed).run();
    let found = &again.assert_violated("fewer than three greetings").trace;
    assert_eq!(found.steps.len(), trace.steps.len(), "BFS from a prefix of a shortest trace is as short");

    let not_enabled =
        Scenario::new("too early").then(Event::Deliver { from: NodeId(0), to: NodeId(1), msg: 0 });
    let err = Simulator::new(&greeters(2).start_from(not_enabled)).err().expect("the scenario does not run");
    let text = err.to_string();
    assert!(text.contains("\"too early\", step 1") && text.contains("not enabled"), "{text}");

    let violating = greeters(2)
        .start_from(greeted(2))
        .always("never joined", |w: &World<Greeter>| !w.state(NodeId(0)).joined);
    let text = Simulator::new(&violating).err().unwrap().to_string();
    assert!(text.contains("step 2") && text.contains("never joined"), "{text}");

    let wrong_type: foretell_model::Trace = {
        let mut t = trace.clone();
        t.steps[0].event = serde_json::json!({"kind": "input", "node": 0, "input": "Dance"});
        t
    };
    let err = Scenario::from_trace(&sim, "bad", &wrong_type, 2).unwrap_err();
    assert!(err.starts_with("step 1: the event does not fit this system"), "{err}");
}
