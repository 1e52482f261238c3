//! A handler that is not a function of its state, event and choices makes a search's path fail
//! to re-execute into a trace. Every engine then reports that finding, with the trace up to
//! where the re-execution parted from the search, instead of panicking.

use foretell_check::{Check, CheckOptions, EngineKind, Liveness, LivenessVerdict, Report};
use foretell_model::{Driver, Model, NodeId, Out, Protocol, Simulator, ViolationKind, World};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::ThreadId;

/// Counts to 3 on a spontaneous input while `honest` says so — most tests make it false once the
/// search is over, before its finding is recorded as a trace. After that, `Drift::Count` still
/// counts but also sends itself a message it never sent during the search, and
/// `Drift::Silence` stops counting and stops sending the message each count used to send.
///
/// The handler makes a choice (of one value): a step that chooses is never recalled from the
/// step memo, so every re-execution an engine makes runs the handler again and meets the drift.
struct Flaky {
    honest: Box<dyn Fn() -> bool + Send + Sync>,
    drift: Drift,
}

#[derive(Clone, Copy)]
enum Drift {
    /// Later runs do what the search saw, and send an extra message.
    Count,
    /// Later runs change nothing and send nothing.
    Silence,
}

impl Protocol for Flaky {
    type State = u32;
    type Msg = ();
    type Timer = ();
    type Input = ();

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> u32 {
        0
    }

    fn on_message(&self, _: NodeId, _: &mut u32, _: NodeId, _: &(), _: &mut Out<'_, Self>) {}

    fn on_input(&self, me: NodeId, count: &mut u32, _: &(), out: &mut Out<'_, Self>) {
        out.choose(1);
        let honest = (self.honest)();
        match (honest, self.drift) {
            (true, Drift::Silence) => {
                *count += 1;
                out.send(me, ());
            }
            (true, Drift::Count) => *count += 1,
            (false, Drift::Count) => {
                *count += 1;
                out.send(me, ());
            }
            (false, Drift::Silence) => {}
        }
    }
}

fn model(drifted: &'static AtomicBool, drift: Drift) -> Model<Flaky> {
    flaky(Box::new(|| !drifted.load(Ordering::Relaxed)), drift)
}

fn flaky(honest: Box<dyn Fn() -> bool + Send + Sync>, drift: Drift) -> Model<Flaky> {
    Model::new(Flaky { honest, drift })
        .driver(Driver::new().spontaneous(NodeId(0), ()))
        .always("below 3", |w: &World<Flaky>| w.states().all(|c| *c < 3))
}

/// Runs `engine` with honest handlers; when `drift` is set, they drift once the search is over
/// (the engine reports its final progress before it records the finding's trace).
fn check(drifted: &'static AtomicBool, drift: Option<Drift>, engine: EngineKind) -> Report {
    drifted.store(false, Ordering::Relaxed);
    let done = drift.is_some().then(|| {
        Arc::new(move |progress: &foretell_check::Progress| {
            if progress.queue == 0 {
                drifted.store(true, Ordering::Relaxed);
            }
        }) as foretell_check::ProgressSink
    });
    let options = CheckOptions { engine, progress: done, ..CheckOptions::default() };
    let model = model(drifted, drift.unwrap_or(Drift::Count));
    Check::with_options(&model, options).try_run().expect("a valid model")
}

/// The honest model violates "below 3" after three inputs, under every engine.
#[test]
fn an_honest_handler_is_found_violating_the_invariant() {
    static DRIFTED: AtomicBool = AtomicBool::new(false);
    for engine in [EngineKind::Bfs, EngineKind::Dfs, EngineKind::Stateless] {
        let report = check(&DRIFTED, None, engine);
        let violation = &report.violations[0];
        assert_eq!(violation.property, "below 3", "{report}");
        assert_eq!(violation.trace.steps.len(), 3, "{report}");
    }
}

/// After the search, a handler sends a message it did not send during the search: the path
/// still re-executes, into worlds with other fingerprints, and reaches the violation, so the
/// report stands. (Engines keep no fingerprints along a path, so recording cannot tell this
/// drift; the trace's own fingerprints are those of its re-execution, which replay checks.)
#[test]
fn a_handler_that_changes_what_it_sends_still_yields_a_trace() {
    static DRIFTED: AtomicBool = AtomicBool::new(false);
    for engine in [EngineKind::Bfs, EngineKind::Dfs, EngineKind::Stateless] {
        let report = check(&DRIFTED, Some(Drift::Count), engine);
        let violation = &report.violations[0];
        assert_eq!(violation.property, "below 3", "{engine:?}: {report}");
        assert_eq!(violation.trace.verdict.as_ref().map(|v| v.kind), Some(ViolationKind::Invariant));
    }
}

/// After the search, a handler stops doing what it did: the recorded path reaches no
/// violation, or a delivery of a message that was never sent. Each engine reports
/// nondeterminism with the trace up to that point instead of panicking.
#[test]
fn a_handler_that_stops_doing_what_it_did_is_reported_as_nondeterministic() {
    static DRIFTED: AtomicBool = AtomicBool::new(false);
    for engine in [EngineKind::Bfs, EngineKind::Dfs, EngineKind::Stateless] {
        let report = check(&DRIFTED, Some(Drift::Silence), engine);
        let violation = &report.violations[0];
        assert_eq!(violation.kind, ViolationKind::Nondeterminism, "{engine:?}: {report}");
        assert!(violation.message.contains("not a function of its state"), "{}", violation.message);
        let verdict = violation.trace.verdict.as_ref().expect("a verdict");
        assert_eq!(verdict.kind, ViolationKind::Nondeterminism);
        assert!(violation.trace.steps.len() <= 3);
        // The trace is still a document `show` prints.
        let text = violation.trace.to_text(true);
        assert!(text.contains("nondeterminism") || text.contains("deterministic handlers"), "{text}");
    }
}

/// Whenever a handler starts to drift — before the search, during it, while it re-executes a
/// path, or after it — no engine panics: each reports the honest violation or nondeterminism,
/// and some moment of drift is caught as nondeterminism by the search itself (the stateless
/// search re-executes paths as it goes and checks each step's world against its expansion).
#[test]
fn a_handler_that_drifts_at_any_moment_never_crashes_a_search() {
    static CALLS: AtomicU32 = AtomicU32::new(0);
    static HONEST_CALLS: AtomicU32 = AtomicU32::new(0);
    let honest = || CALLS.fetch_add(1, Ordering::Relaxed) < HONEST_CALLS.load(Ordering::Relaxed);
    for engine in [EngineKind::Bfs, EngineKind::Dfs, EngineKind::Stateless] {
        let mut kinds = Vec::new();
        for honest_calls in 0..24 {
            CALLS.store(0, Ordering::Relaxed);
            HONEST_CALLS.store(honest_calls, Ordering::Relaxed);
            let model = flaky(Box::new(honest), Drift::Silence);
            let options = CheckOptions { engine, ..CheckOptions::default() };
            let report = Check::with_options(&model, options).try_run().expect("a valid model");
            let kind = report.violations.first().map(|v| v.kind);
            assert!(
                matches!(kind, None | Some(ViolationKind::Invariant | ViolationKind::Nondeterminism)),
                "{engine:?} drifting after {honest_calls} calls: {report}"
            );
            kinds.push(kind);
        }
        assert!(kinds.contains(&Some(ViolationKind::Nondeterminism)), "{engine:?}: {kinds:?}");
        assert!(kinds.contains(&Some(ViolationKind::Invariant)), "{engine:?}: {kinds:?}");
    }
}

/// Recording a path whose delivery no longer exists ends the trace at that step instead of
/// indexing past the network.
#[test]
fn recording_a_step_that_is_not_enabled_ends_the_trace() {
    static DRIFTED: AtomicBool = AtomicBool::new(false);
    let model = model(&DRIFTED, Drift::Silence);
    let simulator = Simulator::new(&model).expect("valid");
    let mut world = None;
    simulator.initial_worlds(|_, w, _| world = Some(w));
    let world = world.expect("an initial world");
    let mut actions = Vec::new();
    simulator.actions(&world, &mut actions);
    let input = actions[0];
    let mut chooser = foretell_model::FixedChoices::new(&[0]);
    let after = simulator.step(&world, input, &mut chooser, false).world;
    simulator.actions(&after, &mut actions);
    let delivery = actions[0];
    assert_ne!(delivery, input, "the honest run sent a message");
    // Recording re-runs the input handler, which now sends nothing: the delivery is gone.
    DRIFTED.store(true, Ordering::Relaxed);
    let trace = simulator.record(&[], &[(input, vec![0]), (delivery, vec![])]);
    assert_eq!(trace.steps.len(), 1);
    let verdict = trace.verdict.expect("a verdict");
    assert_eq!((verdict.kind, verdict.step), (ViolationKind::Nondeterminism, 2));
}

/// A mailbox that counts deliveries until a spontaneous `Jam` stops it; a spontaneous `Post`
/// sends the node a letter — but only on the thread that is not `coordinator`. The liveness
/// engine walks on worker threads and re-executes what they walked on the thread that runs it,
/// so there a walk's deliveries have no letter to deliver.
struct Mailbox {
    coordinator: &'static OnceLock<ThreadId>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Letters {
    read: u8,
    jammed: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Lid {
    Post,
    Jam,
}

impl Protocol for Mailbox {
    type State = Letters;
    type Msg = ();
    type Timer = ();
    type Input = Lid;

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> Letters {
        Letters::default()
    }

    fn on_message(&self, _: NodeId, letters: &mut Letters, _: NodeId, _: &(), _: &mut Out<'_, Self>) {
        if !letters.jammed {
            letters.read = (letters.read + 1).min(2);
        }
    }

    fn on_input(&self, me: NodeId, letters: &mut Letters, lid: &Lid, out: &mut Out<'_, Self>) {
        match lid {
            Lid::Post if self.coordinator.get() != Some(&std::thread::current().id()) => out.send(me, ()),
            Lid::Post => {}
            Lid::Jam => letters.jammed = true,
        }
    }
}

/// The liveness engine re-executes a suspect walk on its own thread, where the handler no longer
/// sends what the walk delivered: it reports nondeterminism with the trace up to that step
/// instead of indexing past the network.
#[test]
fn liveness_reports_a_walk_that_does_not_re_execute() {
    static COORDINATOR: OnceLock<ThreadId> = OnceLock::new();
    COORDINATOR.get_or_init(|| std::thread::current().id());
    let model = Model::new(Mailbox { coordinator: &COORDINATOR })
        .driver(Driver::new().spontaneous(NodeId(0), Lid::Post).spontaneous(NodeId(0), Lid::Jam))
        .eventually("two letters read", |w: &World<Mailbox>| w.state(NodeId(0)).read == 2);
    let report = Liveness::new(Arc::new(model))
        .depth(1)
        .dmax(40)
        .walks(16)
        .seed(7)
        .threads(2)
        .run()
        .expect("a valid model");
    let trace = report.trace.as_ref().expect("a trace");
    let verdict = trace.verdict.as_ref().expect("a verdict");
    assert_eq!(verdict.kind, ViolationKind::Nondeterminism, "{report:?}");
    assert_eq!(verdict.property, "deterministic handlers");
    assert!(verdict.message.contains("Deliver(0) is not enabled"), "{}", verdict.message);
    // The trace holds the steps before the one that parted: the posts that sent nothing here.
    assert_eq!(trace.steps.len() + 1, verdict.step, "{report:?}");
    assert_eq!(report.verdict, LivenessVerdict::SafetyViolation, "{report:?}");
}
