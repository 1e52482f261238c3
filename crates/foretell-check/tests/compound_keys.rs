//! Protocol values that plain JSON has no form for — maps keyed by compound values, in a node's
//! state and in its messages — through everything that shows or reads them: a search's trace,
//! the trace file, replay, a search started from a trace's first steps, and the liveness
//! engine's difference between a dead and a live path.
//! (serde_json refuses such a map; the bundled Paxos counts its learners in one.)

use foretell_check::{Check, Liveness};
use foretell_model::{Driver, Model, NetworkKind, NodeId, Out, Protocol, Scenario, Simulator, Trace, World};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Node 0 sends node 1 two batches of marks keyed by `(sender, batch number)`; node 1 keeps
/// every mark it receives until a one-shot `Stop`, which it takes once it has some.
struct Tally;

type Marks = BTreeMap<(u8, u8), u8>;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Ledger {
    sent: u8,
    stopped: bool,
    marks: Marks,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Cmd {
    Send,
    Stop,
}

impl Protocol for Tally {
    type State = Ledger;
    type Msg = Marks;
    type Timer = ();
    type Input = Cmd;

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> Ledger {
        Ledger::default()
    }

    fn on_message(&self, _: NodeId, ledger: &mut Ledger, _: NodeId, marks: &Marks, _: &mut Out<'_, Self>) {
        if !ledger.stopped {
            ledger.marks.extend(marks);
        }
    }

    fn on_input(&self, _: NodeId, ledger: &mut Ledger, cmd: &Cmd, out: &mut Out<'_, Self>) {
        match cmd {
            Cmd::Send if ledger.sent == 2 => out.disable(),
            Cmd::Send => {
                ledger.sent += 1;
                out.send(NodeId(1), BTreeMap::from([((0, ledger.sent), 10 * ledger.sent)]));
            }
            Cmd::Stop if ledger.marks.is_empty() => out.disable(),
            Cmd::Stop => ledger.stopped = true,
        }
    }
}

fn heard_twice(w: &World<Tally>) -> bool {
    w.state(NodeId(1)).marks.len() == 2
}

fn tally() -> Model<Tally> {
    Model::new(Tally)
        .nodes(2)
        .network(NetworkKind::FifoChannels)
        .driver(Driver::new().spontaneous(NodeId(0), Cmd::Send).input(NodeId(1), Cmd::Stop))
}

/// The trace shows each map as `[key, value]` pairs, its file reads back, it replays, and a
/// search starts from its first steps: the delivery of a batch, whose event cannot be read back
/// as the protocol's type, is matched against the events enabled at that step. An edited batch
/// matches none.
#[test]
fn a_trace_shows_and_replays_maps_with_compound_keys() {
    let model = tally().always("heard at most once", |w: &World<Tally>| !heard_twice(w));
    let trace = Check::bfs(&model).run().assert_violated("heard at most once").trace.clone();
    let last = trace.steps.last().expect("a violation takes steps");
    assert_eq!(last.event["kind"], "deliver");
    assert_eq!(last.event["msg"], json!([[[0, 2], 20]]), "{}", trace.to_json());
    assert_eq!(last.state.as_ref().unwrap()["marks"], json!([[[0, 1], 10], [[0, 2], 20]]));
    assert!(!trace.to_json().contains("unserializable"));

    let read = Trace::from_json(&trace.to_json()).expect("the file reads back");
    let sim = Simulator::new(&model).unwrap();
    let replayed = sim.replay(&read).unwrap_or_else(|e| panic!("{e}\n{}", read.to_text(true)));
    assert_eq!(replayed.verdict.expect("the violation replays").property, "heard at most once");
    assert!(heard_twice(replayed.worlds.last().unwrap()));

    // A search can start from the trace's first steps (`--from FILE:3`), deliveries included.
    let prefix = Scenario::from_trace(&sim, "saved", &read, 3).expect("the prefix re-executes");
    assert_eq!(prefix.steps().len(), 3);
    assert!(read.steps[..3].iter().any(|s| s.event["kind"] == "deliver"), "{}", read.to_json());
    let resumed = tally().start_from(prefix).always("heard at most once", |w: &World<Tally>| !heard_twice(w));
    let again = Check::bfs(&resumed).run();
    let found = &again.assert_violated("heard at most once").trace;
    assert_eq!(found.steps.len(), trace.steps.len(), "{again}");
    assert!(sim.replay(found).is_ok());

    let mut edited = read;
    let step = edited.steps.len();
    edited.steps[step - 1].event["msg"] = json!([[[0, 2], 21]]);
    let err = sim.replay(&edited).expect_err("no enabled event carries that batch");
    assert_eq!(err.step, step);
    assert!(err.reason.contains("does not fit this system"), "{err}");
}

/// Node 1's `Stop` after the first batch is the critical transition of a dead path. Every
/// world the difference compares holds a mark in node 1's state, and the live one a second batch
/// in flight: both are read, and the batch is listed as pairs, not as a placeholder.
#[test]
fn a_liveness_difference_lists_maps_with_compound_keys() {
    let model = tally().eventually("heard twice", heard_twice);
    let report = Liveness::new(Arc::new(model))
        .depth(3)
        .dmax(40)
        .walks(16)
        .seed(3)
        .threads(2)
        .watchdog(Duration::from_secs(5))
        .run()
        .unwrap();
    let trace = report.assert_dead();
    let step = report.critical_step().expect("a critical step");
    let critical = &trace.steps[step - 1];
    assert_eq!((critical.node, &critical.event["input"]), (NodeId(1), &json!("Stop")), "{report}");
    assert_eq!(critical.state.as_ref().unwrap()["marks"], json!([[[0, 1], 10]]), "{report}");
    let finding = trace.liveness.as_ref().unwrap();
    let node1 = finding.diff.iter().find(|d| d.node == NodeId(1)).expect("node 1 differs");
    assert!(node1.dead.contains(&"state.stopped = true".to_string()), "{report}");
    assert!(node1.live.contains(&"in flight from n0 = [[[0,2],20]]".to_string()), "{report}");
    let lines = finding.diff.iter().flat_map(|d| d.dead.iter().chain(&d.live));
    assert!(lines.clone().all(|l| !l.contains("unserializable") && !l.ends_with("= null")), "{report}");
}
