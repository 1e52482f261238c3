//! Engine behaviour on small hand-written protocols: every kind of violation is found with a
//! trace that replays, edited traces are rejected at the right step, handler choices and faults
//! are explored, and the engines agree.

use foretell_check::{Check, Completion, EngineKind, Interrupt, LmcOptions, Status};
use foretell_model::*;
use serde::{Deserialize, Serialize};

/// A node counts the tokens it receives; a token is passed on with a chosen increment.
struct Relay {
    panic_at: Option<u8>,
    require_below: Option<u8>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Token(u8);

impl Protocol for Relay {
    type State = u8;
    type Msg = Token;
    type Timer = ();
    type Input = ();

    fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> u8 {
        if me == NodeId(0) {
            out.send(NodeId(1), Token(0));
        }
        0
    }

    fn on_message(&self, me: NodeId, count: &mut u8, _: NodeId, token: &Token, out: &mut Out<'_, Self>) {
        *count = token.0;
        if self.panic_at == Some(*count) {
            panic!("count reached {count}");
        }
        if let Some(limit) = self.require_below {
            out.require(*count < limit, "count stays small");
        }
        if token.0 < 4 {
            let step = 1 + out.choose(2) as u8;
            let next = NodeId::new(1 - me.index());
            out.send(next, Token(token.0 + step));
        }
    }
}

fn relay(panic_at: Option<u8>, require_below: Option<u8>) -> Model<Relay> {
    Model::new(Relay { panic_at, require_below }).nodes(2)
}

/// Every engine finds a panicking handler, reports it as a violation that says where the
/// handler panicked, and the trace replays.
#[test]
fn a_panicking_handler_is_a_violation_with_a_replayable_trace() {
    let model = relay(Some(3), None);
    for engine in EngineKind::GLOBAL {
        let options = foretell_check::CheckOptions { engine, ..Default::default() };
        let report = foretell_check::DynModel::check(&model, &options).unwrap();
        let violation = report.assert_violated("panic");
        assert_eq!(violation.kind, ViolationKind::Panic);
        assert!(violation.message.contains("count reached 3"), "{}", violation.message);
        assert!(violation.message.contains("engines.rs:"), "{}", violation.message);
        let sim = Simulator::new(&model).unwrap();
        let replayed = sim.replay(&violation.trace).expect("the trace replays");
        assert_eq!(replayed.verdict.unwrap().property, "panic");
    }
}

/// BFS finds the shortest panic: 0 -> 1 -> 3 takes two deliveries with choice 0 then 1.
#[test]
fn bfs_counterexamples_are_shortest() {
    let report = Check::bfs(&relay(Some(3), None)).run();
    let trace = &report.assert_violated("panic").trace;
    assert_eq!(trace.steps.len(), 3);
    assert_eq!(report.completion, Completion::Violation);
}

/// A failed `require` is reported under its description, with a trace that replays.
#[test]
fn a_failed_local_assertion_is_a_violation() {
    let model = relay(None, Some(2));
    let report = Check::dfs(&model).run();
    let violation = report.assert_violated("count stays small");
    assert_eq!(violation.kind, ViolationKind::Assertion);
    Simulator::new(&model).unwrap().replay(&violation.trace).expect("replays");
    assert_eq!(report.status("count stays small"), Some(Status::Violated));
}

/// Without faults the relay is correct, and all engines explore the same worlds.
#[test]
fn engines_agree_and_choices_are_explored() {
    let model = relay(None, None).always("bounded", |w: &World<Relay>| w.states().all(|c| *c <= 5));
    let counts: Vec<u64> = EngineKind::GLOBAL
        .into_iter()
        .map(|engine| {
            let options = foretell_check::CheckOptions { engine, ..Default::default() };
            let report = foretell_check::DynModel::check(&model, &options).unwrap();
            report.assert_holds("bounded");
            report.stats.unique_states
        })
        .collect();
    assert!(counts.iter().all(|c| *c == counts[0]), "{counts:?}");
    // Both increments are explored: counts 1 and 2 are each reachable as the first delivery.
    let reached_two = Check::bfs(&model.sometimes("two", |w: &World<Relay>| *w.state(NodeId(1)) == 2)).run();
    reached_two.assert_covered("two");
}

/// An invariant violation found at depth D is reported at step D, and editing the trace makes
/// replay fail at the edited step.
#[test]
fn edited_traces_fail_at_the_edited_step() {
    let model = relay(None, None).always("below 3", |w: &World<Relay>| w.states().all(|c| *c < 3));
    let report = Check::bfs(&model).run();
    let violation = report.assert_violated("below 3");
    assert_eq!(violation.trace.verdict.as_ref().unwrap().step, violation.trace.steps.len());
    let sim = Simulator::new(&model).unwrap();

    let mut wrong_fingerprint = violation.trace.clone();
    wrong_fingerprint.steps[1].fingerprint = "0".repeat(32);
    let error = sim.replay(&wrong_fingerprint).unwrap_err();
    assert_eq!(error.step, 2);
    assert!(error.to_string().starts_with("step 2: fingerprint differs"), "{error}");

    let mut wrong_choice = violation.trace.clone();
    let last = wrong_choice.steps.len() - 1;
    wrong_choice.steps[last].choices = vec![7];
    let error = sim.replay(&wrong_choice).unwrap_err();
    assert_eq!(error.step, last + 1);
    assert!(error.reason.contains("out of range"), "{error}");

    let mut wrong_event = violation.trace.clone();
    wrong_event.steps[0].event = serde_json::json!({"kind": "deliver", "from": 1, "to": 0, "msg": 9});
    let error = sim.replay(&wrong_event).unwrap_err();
    assert_eq!(error.step, 1);
    assert!(error.reason.contains("not enabled"), "{error}");
}

/// A trace survives JSON and is rejected with a clear error when it is not a trace.
#[test]
fn trace_files_round_trip_and_bad_ones_are_rejected() {
    let model = relay(Some(2), None);
    let trace = Check::bfs(&model).run().assert_violated("panic").trace.clone();
    let read = Trace::from_json(&trace.to_json()).unwrap();
    assert_eq!(read, trace);
    assert!(matches!(Trace::from_json("{"), Err(TraceError::Malformed(_))));
    assert!(matches!(Trace::from_json(r#"{"format":"x","version":1}"#), Err(TraceError::WrongFormat(_))));
    assert!(matches!(
        Trace::from_json(r#"{"format":"foretell-trace","version":9}"#),
        Err(TraceError::UnsupportedVersion(9))
    ));
}

/// An interrupted run stops cleanly with a partial report.
#[test]
fn an_interrupted_run_returns_a_partial_report() {
    let interrupt = Interrupt::new();
    interrupt.raise();
    let model = relay(None, None);
    let report = Check::bfs(&model).interrupt(interrupt).run();
    assert_eq!(report.completion, Completion::Interrupted);
    assert!(report.violations.is_empty());
}

/// A time budget longer than the clock can count is no budget: every engine runs to the end
/// (LMC with room for the copies the relay sends again on one path).
#[test]
fn an_unreachable_time_budget_never_runs_out() {
    let model = relay(None, None);
    let lmc = Check::lmc(&model).lmc_options(LmcOptions { duplicates: 2, ..LmcOptions::default() });
    for check in [Check::bfs(&model), Check::dfs(&model), Check::stateless(&model), lmc] {
        let report = check.timeout(std::time::Duration::MAX).run();
        assert_eq!(report.completion, Completion::Exhausted, "{report}");
    }
}

/// A protocol over TCP-like channels: a reset breaks connections, peers see a transport error,
/// and the monotone clock survives the reset.
struct Pinger;

impl Protocol for Pinger {
    type State = (u64, bool);
    type Msg = u64;
    type Timer = ();
    type Input = ();

    fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> (u64, bool) {
        let stamp = out.monotone_now();
        if me == NodeId(0) {
            out.send(NodeId(1), stamp);
        }
        (stamp, false)
    }

    fn on_message(&self, _: NodeId, _: &mut (u64, bool), _: NodeId, _: &u64, _: &mut Out<'_, Self>) {}

    fn on_transport_error(&self, _: NodeId, state: &mut (u64, bool), _: NodeId, _: &mut Out<'_, Self>) {
        state.1 = true;
    }
}

#[test]
fn resets_break_connections_and_keep_the_clock() {
    let model = Model::new(Pinger)
        .nodes(2)
        .network(NetworkKind::FifoChannels)
        .faults(Faults::none().resets(Budget::at_most(1)).resettable([NodeId(0)]))
        .always("no transport error", |w: &World<Pinger>| !w.state(NodeId(1)).1)
        .sometimes("restarted with a later stamp", |w: &World<Pinger>| w.state(NodeId(0)).0 == 2);
    let report = Check::bfs(&model).run();
    let violation = report.assert_violated("no transport error");
    let events: Vec<&str> = violation.trace.steps.iter().map(|s| s.event["kind"].as_str().unwrap()).collect();
    assert_eq!(events, ["reset", "transport_error"]);
    let holds = Check::bfs(
        &Model::new(Pinger)
            .nodes(2)
            .network(NetworkKind::FifoChannels)
            .faults(Faults::none().resets(Budget::at_most(1)).resettable([NodeId(0)]))
            .sometimes("restarted with a later stamp", |w: &World<Pinger>| w.state(NodeId(0)).0 == 2),
    )
    .run();
    holds.assert_covered("restarted with a later stamp");
}

/// Depth-bounded search explores the same worlds whichever engine runs it: DFS and stateless
/// search re-open a world first reached by a longer path when a shorter one turns up.
#[test]
fn depth_bounded_engines_agree() {
    let model = relay(None, None);
    for depth in 1..=4 {
        let counts: Vec<u64> = EngineKind::GLOBAL
            .into_iter()
            .map(|engine| {
                let options =
                    foretell_check::CheckOptions { engine, depth_max: Some(depth), ..Default::default() };
                let report = foretell_check::DynModel::check(&model, &options).unwrap();
                assert!(report.completion.is_complete());
                report.stats.unique_states
            })
            .collect();
        assert!(counts.iter().all(|c| *c == counts[0]), "depth {depth}: {counts:?}");
    }
}

/// Loss and duplication on an unordered network are explored within their budgets.
#[test]
fn drops_and_duplicates_are_budgeted_faults() {
    let lossy = relay(None, None)
        .faults(Faults::none().drops(Budget::at_most(1)))
        .sometimes("token lost", |w: &World<Relay>| w.messages().len() == 0 && w.states().all(|c| *c < 4));
    let report = Check::bfs(&lossy).run();
    report.assert_covered("token lost");
    let reliable = relay(None, None)
        .sometimes("token lost", |w: &World<Relay>| w.messages().len() == 0 && w.states().all(|c| *c < 4));
    assert_eq!(Check::bfs(&reliable).run().status("token lost"), Some(Status::NotCovered));

    let duplicating = relay(None, None)
        .faults(Faults::none().duplicates(Budget::at_most(1)))
        .always("one token", |w: &World<Relay>| w.messages().len() <= 1);
    let violation = Check::bfs(&duplicating).run().assert_violated("one token").trace.clone();
    assert_eq!(violation.steps.last().unwrap().event["kind"], "duplicate");
}

/// Node 0 announces itself on a grow-only network without changing its own state; node 1
/// counts the announcements it hears (up to two).
struct Announce;

impl Protocol for Announce {
    type State = u8;
    type Msg = ();
    type Timer = ();
    type Input = ();

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> u8 {
        0
    }

    fn on_message(&self, _: NodeId, heard: &mut u8, _: NodeId, _: &(), _: &mut Out<'_, Self>) {
        *heard = (*heard + 1).min(2);
    }

    fn on_input(&self, _: NodeId, _: &mut u8, _: &(), out: &mut Out<'_, Self>) {
        out.send(NodeId(1), ());
    }
}

/// A step that changes nothing in one world (the announcement is already in the grow-only
/// network) changes the world elsewhere (before it was sent): the simulator's step memo must
/// not carry the first answer over to the second, whatever order the worlds are met in.
#[test]
fn a_send_that_changes_nothing_here_still_changes_the_world_elsewhere() {
    let model = Model::new(Announce)
        .nodes(2)
        .network(NetworkKind::GrowOnly)
        .driver(Driver::new().spontaneous(NodeId(0), ()));
    let sim = Simulator::new(&model).unwrap();
    let mut initial = None;
    sim.initial_worlds(|_, world, _| initial = Some(world));
    let initial = initial.unwrap();
    let announce = Action::Spontaneous(0);
    let sent = sim.step(&initial, announce, &mut FixedChoices::new(&[]), false).world;
    assert_ne!(sent.fingerprint(), initial.fingerprint());
    let again = sim.step(&sent, announce, &mut FixedChoices::new(&[]), false).world;
    assert_eq!(again.fingerprint(), sent.fingerprint(), "announcing twice changes nothing");
    let first_again = sim.step(&initial, announce, &mut FixedChoices::new(&[]), false).world;
    assert_eq!(first_again.fingerprint(), sent.fingerprint(), "the first announcement still sends");
    for engine in EngineKind::GLOBAL {
        let options = foretell_check::CheckOptions { engine, ..Default::default() };
        let report = foretell_check::DynModel::check(&model, &options).unwrap();
        assert_eq!(report.stats.unique_states, 4, "{engine}: initial, sent, heard once, heard twice");
    }
}
