//! The liveness engine (MaceMC, NSDI'07: section 4's search for dead states and Algorithm 2's
//! critical transition, section 3.1's divergence check, section 4.3's prefix-based search) on
//! toy protocols whose answers are known in advance: a gauge jammed by a one-shot `Break`, a
//! token ring that loses its token, philosophers who never eat, a handler that never returns,
//! and a treadmill whose walks take minutes (for a run that must stop in the middle of one).
//!
//! The toys are small enough that the exhaustive part and the walks take milliseconds, and the
//! probabilities the engine relies on (that some of `k` walks from a recoverable world recover)
//! are close enough to 1 that the fixed seeds are not what makes the tests pass.

use foretell_check::{
    Completion, Interrupt, Liveness, LivenessError, LivenessOptions, LivenessProgress, LivenessReport,
    LivenessVerdict, Prefix,
};
use foretell_model::{
    Budget, Driver, Event, Faults, Model, ModelError, NodeId, Out, Protocol, Scenario, Simulator, Trace,
    TraceStep, ViolationKind, Weights, World,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// Toys
// ---------------------------------------------------------------------------------------------

/// A gauge that fills one `Bump` at a time up to [`FULL`], until a one-shot `Break` jams it for
/// good: after `Break` no bump moves it. Live: the gauge is full. With `guarded`, the lever only
/// breaks once the gauge has moved (a `Break` at 0 is not enabled), so the dead path has a
/// recoverable non-live world before its critical transition.
///
/// Guarded, the exhaustive search to depth 2 reaches "bump, break" (jammed at 1) and "bump,
/// bump" (full): the only non-live world of the periphery is jammed, and the critical transition
/// is step 2 whatever the weights or the threads.
struct Gauge {
    guarded: bool,
}

const FULL: u8 = 2;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Dial {
    count: u8,
    jammed: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Lever {
    Bump,
    Break,
}

impl Protocol for Gauge {
    type State = Dial;
    type Msg = ();
    type Timer = ();
    type Input = Lever;

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> Dial {
        Dial::default()
    }

    fn on_message(&self, _: NodeId, _: &mut Dial, _: NodeId, _: &(), _: &mut Out<'_, Self>) {}

    fn on_input(&self, _: NodeId, dial: &mut Dial, lever: &Lever, out: &mut Out<'_, Self>) {
        if !pull(dial, lever, self.guarded) {
            out.disable();
        }
    }
}

/// Pulls `lever` on `dial`; false when the pull is not enabled (a guarded `Break` at 0).
fn pull(dial: &mut Dial, lever: &Lever, guarded: bool) -> bool {
    match lever {
        Lever::Bump if !dial.jammed => dial.count = (dial.count + 1).min(FULL),
        Lever::Bump => {}
        Lever::Break if guarded && dial.count == 0 => return false,
        Lever::Break => dial.jammed = true,
    }
    true
}

fn gauge() -> Model<Gauge> {
    lever(true)
}

fn lever(guarded: bool) -> Model<Gauge> {
    Model::new(Gauge { guarded })
        .driver(Driver::new().input(NodeId(0), Lever::Break).spontaneous(NodeId(0), Lever::Bump))
        .eventually("full", |w: &World<Gauge>| w.state(NodeId(0)).count == FULL)
}

/// The guarded gauge, from a batch where some are fragile: `init` chooses (`choose(2)`) whether
/// this one is, and only a fragile gauge breaks. The model has two initial worlds; from the first
/// (sturdy) nothing goes wrong, from the second the gauge can jam exactly as [`Gauge`] does.
struct Batch;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Unit {
    fragile: bool,
    dial: Dial,
}

impl Protocol for Batch {
    type State = Unit;
    type Msg = ();
    type Timer = ();
    type Input = Lever;

    fn init(&self, _: NodeId, out: &mut Out<'_, Self>) -> Unit {
        Unit { fragile: out.choose(2) == 1, dial: Dial::default() }
    }

    fn on_message(&self, _: NodeId, _: &mut Unit, _: NodeId, _: &(), _: &mut Out<'_, Self>) {}

    fn on_input(&self, _: NodeId, unit: &mut Unit, lever: &Lever, out: &mut Out<'_, Self>) {
        let sturdy = *lever == Lever::Break && !unit.fragile;
        if sturdy || !pull(&mut unit.dial, lever, true) {
            out.disable();
        }
    }
}

fn batch() -> Model<Batch> {
    Model::new(Batch)
        .driver(Driver::new().input(NodeId(0), Lever::Break).spontaneous(NodeId(0), Lever::Bump))
        .eventually("full", |w: &World<Batch>| w.state(NodeId(0)).dial.count == FULL)
}

/// A token ring: node 0 mints the token (a one-shot input); whoever holds it passes it to the
/// next node when its `Pass` timer fires; a node counts the times it received it (up to 2).
/// A dropped token is lost for good: nothing is ever enabled again. Live: the token is home at
/// node 0 and has come back to it twice.
struct Relay;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Holder {
    holding: bool,
    seen: u8,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Note {
    Token,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
enum Alarm {
    Pass,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Cmd {
    Mint,
}

impl Protocol for Relay {
    type State = Holder;
    type Msg = Note;
    type Timer = Alarm;
    type Input = Cmd;

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> Holder {
        Holder::default()
    }

    fn on_message(&self, _: NodeId, holder: &mut Holder, _: NodeId, _: &Note, out: &mut Out<'_, Self>) {
        holder.holding = true;
        holder.seen = (holder.seen + 1).min(2);
        out.set_timer(Alarm::Pass, 10);
    }

    fn on_timer(&self, me: NodeId, holder: &mut Holder, _: &Alarm, out: &mut Out<'_, Self>) {
        holder.holding = false;
        let next = NodeId::new((me.index() + 1) % out.node_count());
        out.send(next, Note::Token);
    }

    fn on_input(&self, _: NodeId, holder: &mut Holder, _: &Cmd, out: &mut Out<'_, Self>) {
        holder.holding = true;
        out.set_timer(Alarm::Pass, 10);
    }
}

fn relay() -> Model<Relay> {
    Model::new(Relay)
        .nodes(2)
        .driver(Driver::new().input(NodeId(0), Cmd::Mint))
        .faults(Faults::none().drops(Budget::at_most(1)))
        .eventually("token home twice", |w: &World<Relay>| {
            let home = w.state(NodeId(0));
            home.holding && home.seen == 2
        })
}

/// Dining philosophers at one table (a single node; philosopher `i` is spontaneous input
/// `Hungry(i)`). A hungry philosopher picks up her left fork; hungry again while holding it, she
/// looks at her right fork: free, she eats and puts her fork down; taken, she puts her fork back.
/// With `looks_left` she looks at her left fork instead — the one in her hand, always taken — so
/// she picks it up and puts it back forever and nobody ever eats: a livelock from the very
/// first world, with no transition that causes it. Live: everyone has eaten.
struct Table {
    looks_left: bool,
}

const PHILOSOPHERS: usize = 3;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Seats {
    /// Philosopher `i` holds fork `i`, her left one.
    holding: Vec<bool>,
    ate: Vec<bool>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Hunger {
    Hungry(usize),
}

impl Protocol for Table {
    type State = Seats;
    type Msg = ();
    type Timer = ();
    type Input = Hunger;

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> Seats {
        Seats { holding: vec![false; PHILOSOPHERS], ate: vec![false; PHILOSOPHERS] }
    }

    fn on_message(&self, _: NodeId, _: &mut Seats, _: NodeId, _: &(), _: &mut Out<'_, Self>) {}

    fn on_input(&self, _: NodeId, seats: &mut Seats, input: &Hunger, _: &mut Out<'_, Self>) {
        let Hunger::Hungry(i) = *input;
        if !seats.holding[i] {
            seats.holding[i] = true;
            return;
        }
        let right = if self.looks_left { i } else { (i + 1) % PHILOSOPHERS };
        if !seats.holding[right] {
            seats.ate[i] = true;
        }
        seats.holding[i] = false;
    }
}

fn table(looks_left: bool) -> Model<Table> {
    let driver = (0..PHILOSOPHERS).fold(Driver::new(), |d, i| d.spontaneous(NodeId(0), Hunger::Hungry(i)));
    Model::new(Table { looks_left })
        .driver(driver)
        .eventually("everyone ate", |w: &World<Table>| w.state(NodeId(0)).ate.iter().all(|a| *a))
}

/// A counter (`Inc`, up to [`TOP`]) with a `Poll` handler that spins without returning once the
/// count has reached `hang_at`. The spin ends only when the test releases it ([`Release`]), long
/// after the checker had to give up on it, so the threads the checker abandons do not burn a core
/// for the rest of the test run. Live: the count is at the top (far enough that a walk polls
/// long before it gets there: about 2^-22 for a walk from 2 not to).
struct Spinner {
    hang_at: Option<u8>,
    released: Arc<AtomicBool>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Knob {
    Inc,
    Poll,
    /// Does nothing: no step, wherever it is drawn.
    Wait(u8),
}

impl Protocol for Spinner {
    type State = u8;
    type Msg = ();
    type Timer = ();
    type Input = Knob;

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> u8 {
        0
    }

    fn on_message(&self, _: NodeId, _: &mut u8, _: NodeId, _: &(), _: &mut Out<'_, Self>) {}

    fn on_input(&self, _: NodeId, count: &mut u8, knob: &Knob, _: &mut Out<'_, Self>) {
        match knob {
            Knob::Inc => *count = (*count + 1).min(TOP),
            Knob::Poll => {
                if self.hang_at.is_some_and(|at| *count >= at) {
                    while !self.released.load(Ordering::Acquire) {
                        std::hint::spin_loop();
                    }
                }
            }
            Knob::Wait(_) => {}
        }
    }
}

const TOP: u8 = 24;

/// Releases a [`Spinner`]'s spinning handlers when dropped (at the end of the test, or when it
/// fails).
struct Release(Arc<AtomicBool>);

impl Drop for Release {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

fn spinner(hang_at: Option<u8>) -> (Model<Spinner>, Release) {
    waiting_spinner(hang_at, 0)
}

/// A [`Spinner`] with `waits` more knobs that do nothing.
fn waiting_spinner(hang_at: Option<u8>, waits: u8) -> (Model<Spinner>, Release) {
    let released = Arc::new(AtomicBool::new(false));
    let driver = Driver::new().spontaneous(NodeId(0), Knob::Inc).spontaneous(NodeId(0), Knob::Poll);
    let driver = (0..waits).fold(driver, |d, i| d.spontaneous(NodeId(0), Knob::Wait(i)));
    let model = Model::new(Spinner { hang_at, released: Arc::clone(&released) })
        .driver(driver)
        .eventually("top", |w: &World<Spinner>| *w.state(NodeId(0)) == TOP);
    (model, Release(released))
}

/// A runner on a treadmill: every stride takes a little wall-clock time (a sleep of 50 µs, so
/// about 10,000 strides a second, as a system with real handlers might) and none gets anywhere:
/// no world is live. Every walk runs to `dmax`, so with a large `dmax` a walk takes minutes
/// (and memory stays small: a million steps are a few tens of megabytes).
struct Treadmill;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Stride;

impl Protocol for Treadmill {
    type State = u64;
    type Msg = ();
    type Timer = ();
    type Input = Stride;

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> u64 {
        0
    }

    fn on_message(&self, _: NodeId, _: &mut u64, _: NodeId, _: &(), _: &mut Out<'_, Self>) {}

    fn on_input(&self, _: NodeId, strides: &mut u64, _: &Stride, _: &mut Out<'_, Self>) {
        std::thread::sleep(Duration::from_micros(50));
        *strides += 1;
    }
}

fn treadmill() -> Model<Treadmill> {
    Model::new(Treadmill)
        .driver(Driver::new().spontaneous(NodeId(0), Stride))
        .eventually("arrived", |_: &World<Treadmill>| false)
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A run with small bounds, two threads and a watchdog generous enough that a loaded machine
/// does not pass for a diverging handler.
fn liveness<P: Protocol>(model: Model<P>) -> Liveness<P> {
    Liveness::new(Arc::new(model))
        .depth(2)
        .dmax(60)
        .walks(32)
        .seed(7)
        .threads(2)
        .watchdog(Duration::from_secs(5))
}

/// Runs `run` on a thread of its own and fails the test if it does not return within `limit`
/// (an uncaught divergence would otherwise hang the test binary).
fn run_within<P: Protocol>(limit: Duration, run: Liveness<P>) -> LivenessReport {
    let (done, report) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(run.run());
    });
    match report.recv_timeout(limit) {
        Ok(result) => result.expect("the run starts"),
        Err(_) => panic!("the liveness run did not return within {limit:?}"),
    }
}

fn kind(step: &TraceStep) -> &str {
    step.event["kind"].as_str().unwrap_or_default()
}

fn is_fault(step: &TraceStep) -> bool {
    matches!(kind(step), "reset" | "drop" | "duplicate" | "socket_error")
}

/// The worlds a trace passes through: its initial world, then the world after each step.
fn replay<P: Protocol>(model: &Model<P>, trace: &Trace) -> Vec<World<P>> {
    match Simulator::new(model).unwrap().replay(trace) {
        Ok(replayed) => replayed.worlds,
        Err(e) => panic!("the trace does not replay: {e}\n{}", trace.to_text(true)),
    }
}

/// The nearest live path as a trace of its own: the dead path's shared prefix, then its steps.
fn nearest_live_trace(trace: &Trace) -> Trace {
    let live = trace.liveness.as_ref().and_then(|l| l.nearest_live.as_ref()).expect("a nearest live path");
    let mut steps = trace.steps[..live.shared].to_vec();
    steps.extend(live.steps.iter().cloned());
    Trace { steps, verdict: None, liveness: None, ..trace.clone() }
}

/// The lines of the report's text that mark a step as the critical one.
fn marked(report: &LivenessReport) -> Vec<String> {
    report.to_string().lines().filter(|l| l.starts_with(">>")).map(str::to_string).collect()
}

/// What a dead path with a critical transition must show, whatever the toy: case C1 at the
/// given step, a trace that replays, a nearest live path that follows the dead path up to just
/// before the critical step and then reaches a live world, a per-node difference, and the step
/// marked in the report's text. Returns the replayed worlds.
fn check_dead<P: Protocol>(
    model: &Model<P>,
    report: &LivenessReport,
    live: impl Fn(&World<P>) -> bool,
) -> Vec<World<P>> {
    let trace = report.assert_dead();
    let finding = trace.liveness.as_ref().expect("a dead path carries its finding");
    let step = report.critical_step().expect("a critical step");
    assert_eq!(finding.case, "C1", "{report}");
    assert_eq!(finding.critical_step, step);
    assert!((1..=trace.steps.len()).contains(&step), "{report}");
    assert_eq!(report.critical_event(), Some(&trace.steps[step - 1].event));
    let verdict = trace.verdict.as_ref().expect("a verdict");
    assert_eq!((verdict.kind, verdict.step), (ViolationKind::Liveness, step), "{report}");
    assert!(finding.path_length >= trace.steps.len(), "{report}");
    // The trace replays, and is not live from just before the critical step on (Algorithm 2
    // puts the critical transition after the path's last live world).
    let worlds = replay(model, trace);
    assert!(worlds[step - 1..].iter().all(|w| !live(w)), "{report}");
    // The nearest live path shares every step before the critical one, then goes its own way
    // and reaches a live world.
    let nearest = finding.nearest_live.as_ref().expect("a nearest live path");
    assert_eq!(nearest.shared, step - 1, "{report}");
    assert!(!nearest.steps.is_empty(), "{report}");
    assert_eq!(nearest.steps[0].step, nearest.shared + 1);
    assert_ne!(nearest.steps[0].event, trace.steps[step - 1].event, "{report}");
    let live_worlds = replay(model, &nearest_live_trace(trace));
    assert!(live(live_worlds.last().unwrap()), "the nearest live path ends live\n{report}");
    assert!(live_worlds[nearest.shared..live_worlds.len() - 1].iter().all(|w| !live(w)));
    assert!(!finding.diff.is_empty(), "{report}");
    // The text marks the critical step, and only it.
    let marks = marked(report);
    assert_eq!(marks.len(), 1, "{report}");
    let number: usize = marks[0][2..].split_whitespace().next().unwrap().parse().unwrap();
    assert_eq!(number, step, "{report}");
    assert!(report.to_string().contains(&format!("critical transition at step {step}")), "{report}");
    worlds
}

// ---------------------------------------------------------------------------------------------
// 1. A dead path and its critical transition
// ---------------------------------------------------------------------------------------------

/// The gauge jammed before it filled: C1, with the critical transition exactly at `Break`, the
/// world before it still able to fill and the world after it jammed; the nearest live path
/// bumps instead, and the difference names the jammed dial.
#[test]
fn the_critical_transition_is_the_irreversible_break() {
    let model = gauge();
    let report = liveness(gauge()).run().unwrap();
    let worlds = check_dead(&model, &report, |w| w.state(NodeId(0)).count == FULL);
    let trace = report.assert_dead();
    assert_eq!(report.critical_step(), Some(2), "{report}");
    assert_eq!(report.critical_event(), Some(&json!({"kind": "input", "node": 0, "input": "Break"})));
    let breaks: Vec<usize> =
        trace.steps.iter().filter(|s| s.event["input"] == "Break").map(|s| s.step).collect();
    assert_eq!(breaks, [2], "{report}");
    assert!(!worlds[1].state(NodeId(0)).jammed && worlds[2].state(NodeId(0)).jammed);
    let finding = trace.liveness.as_ref().unwrap();
    assert_eq!(finding.not_live, ["full"]);
    // The dead path is trimmed to a few steps past the critical one.
    assert_eq!(trace.steps.len(), (2 + 5).min(finding.path_length), "{report}");
    // A bump of the jammed gauge changes nothing: no step. The walk ends where it jammed, a
    // deadlock, instead of bumping on to `dmax`.
    assert_eq!(finding.path_length, 2, "{report}");
    // The nearest live path: the same first bump, then a second bump that fills the gauge.
    let nearest = finding.nearest_live.as_ref().unwrap();
    assert_eq!(nearest.steps[0].event["input"], "Bump", "{report}");
    let dial = finding.diff.iter().find(|d| d.node == NodeId(0)).expect("node 0 differs");
    assert!(dial.dead.contains(&"state.jammed = true".to_string()), "{dial:?}");
    assert!(dial.live.contains(&"state.jammed = false".to_string()), "{dial:?}");
    let text = report.to_string();
    assert!(marked(&report)[0].contains("input \"Break\""), "{text}");
    assert!(text.contains("n0 after step 2 (- dead path, + live path):"), "{text}");
    assert!(text.contains("  - state.jammed = true"), "{text}");
    assert_eq!(report.properties, ["full"]);
    assert!(report.stats.suspects >= 1 && report.stats.walks > 0, "{report}");
}

/// A token dropped in flight, in the middle of a random walk (the exhaustive part is only the
/// mint): whenever a seed finds a dead path, its critical transition is the drop, which is the
/// path's last step (nothing is enabled after it), past the exhaustive depth. Seeds whose walk
/// happened to bring the token home twice find no suspect; no seed gives anything else.
#[test]
fn a_token_lost_in_a_walk_is_the_critical_transition() {
    let model = relay();
    let live = |w: &World<Relay>| w.state(NodeId(0)).holding && w.state(NodeId(0)).seen == 2;
    let mut dead = 0;
    for seed in 0..10 {
        let report = liveness(relay()).depth(1).seed(seed).walks(16).run().unwrap();
        match report.verdict {
            LivenessVerdict::NoSuspect => assert!(report.trace.is_none()),
            LivenessVerdict::Dead => {
                dead += 1;
                let worlds = check_dead(&model, &report, live);
                let trace = report.assert_dead();
                let step = report.critical_step().unwrap();
                assert_eq!(kind(&trace.steps[step - 1]), "drop", "seed {seed}: {report}");
                assert_eq!(step, trace.steps.len(), "seed {seed}: the path ends at the drop\n{report}");
                assert!(step > 1, "seed {seed}: the drop is on the walk, past the exhaustive part");
                assert!(trace.steps[..step - 1].iter().all(|s| !is_fault(s)));
                assert_eq!(worlds[step - 1].messages().len(), 1);
                assert_eq!(worlds[step].messages().len(), 0);
                // The nearest live path delivers the token that the dead path dropped.
                let nearest = trace.liveness.as_ref().unwrap().nearest_live.as_ref().unwrap();
                assert_eq!(kind(&nearest.steps[0]), "deliver", "seed {seed}: {report}");
                let finding = trace.liveness.as_ref().unwrap();
                assert!(
                    finding.diff.iter().any(|d| d.dead.iter().any(|l| l.contains("holding"))),
                    "{report}"
                );
            }
            _ => panic!("seed {seed}: neither dead nor without suspect\n{report}"),
        }
    }
    assert!(dead >= 1, "no seed lost the token");
}

// ---------------------------------------------------------------------------------------------
// 2. A livelock with no critical transition
// ---------------------------------------------------------------------------------------------

/// Philosophers who pick up a fork and put it back forever are never live, from the very first
/// world: there is no critical transition to find, and the engine must not make one up. Algorithm
/// 2 ends in case C2 at every try; dmax is doubled the allowed number of times; the verdict is
/// Inconclusive, with no critical event, no nearest live path and no marked step.
#[test]
fn a_livelock_from_the_start_is_inconclusive_not_dead() {
    for raises in [3, 1] {
        let report = liveness(table(true)).raises(raises).run().unwrap();
        assert_eq!(report.verdict, LivenessVerdict::Inconclusive, "{report}");
        assert_eq!(report.dmax, 60 << raises, "dmax doubled {raises} times\n{report}");
        let trace = report.trace.as_ref().expect("the undecided path");
        let finding = trace.liveness.as_ref().unwrap();
        assert_eq!(finding.case, "C2", "{report}");
        assert_eq!(report.critical_event(), None, "{report}");
        assert!(finding.nearest_live.is_none() && finding.diff.is_empty(), "{report}");
        assert_eq!(finding.not_live, ["everyone ate"]);
        assert!(marked(&report).is_empty(), "no step is marked critical\n{report}");
        let verdict = trace.verdict.as_ref().unwrap();
        assert_eq!(verdict.kind, ViolationKind::Liveness);
        assert!(verdict.message.contains(&format!("raised {raises} times")), "{}", verdict.message);
        assert!(report.stats.suspects >= 1 && report.stats.false_suspects == 0, "{report}");
        assert_eq!(report.stats.confirm_seconds, None, "nothing was confirmed\n{report}");
        // The path is a real one: it replays and nobody eats on it.
        let worlds = replay(&table(true), trace);
        assert!(worlds.iter().all(|w| w.state(NodeId(0)).ate.iter().all(|a| !a)));
    }
}

/// Philosophers who look at their right fork eat: every walk from the periphery becomes live
/// (a walk too short to see everyone eat is a suspect that recovers when extended).
#[test]
fn philosophers_who_can_eat_raise_no_suspect() {
    let report = liveness(table(false)).depth(3).dmax(300).run().unwrap();
    assert_eq!(report.verdict, LivenessVerdict::NoSuspect, "{report}");
    assert!(report.trace.is_none());
    assert_eq!(report.stats.suspects, report.stats.false_suspects, "{report}");
    assert!(report.stats.periphery > 0 && report.stats.walks >= report.stats.periphery, "{report}");
}

// ---------------------------------------------------------------------------------------------
// 3. Divergence
// ---------------------------------------------------------------------------------------------

/// A handler that never returns on a random walk is reported within the watchdog: the trace
/// ends just before the step that hung (its last world is one where `Poll` hangs, and no earlier
/// step hung), the verdict names the event, and the run returns while the handler still spins.
#[test]
fn a_handler_that_hangs_on_a_walk_is_a_divergence() {
    let (model, release) = spinner(Some(2));
    let started = Instant::now();
    let run = liveness(model).depth(1).watchdog(Duration::from_millis(200));
    let report = run_within(Duration::from_secs(20), run);
    let elapsed = started.elapsed();
    assert_eq!(report.verdict, LivenessVerdict::Divergence, "{report}");
    assert!(elapsed < Duration::from_secs(5), "reported after {elapsed:?}");
    let trace = report.trace.as_ref().expect("the path to the divergence");
    let verdict = trace.verdict.as_ref().unwrap();
    assert_eq!(verdict.kind, ViolationKind::Divergence);
    assert_eq!(verdict.step, trace.steps.len() + 1, "{report}");
    let poll = r#"{"input":"Poll","kind":"spontaneous","node":0}"#;
    assert!(verdict.message.contains(poll) && verdict.message.contains("did not return"), "{report}");
    assert!(verdict.message.contains("200ms"), "{}", verdict.message);
    assert!(trace.steps.len() > 1, "the exhaustive part is one step deep: the hang is on the walk");
    // No step of the trace is a `Poll` at a count of 2 or more (replaying it would hang).
    let mut count = 0;
    for step in &trace.steps {
        assert!(!(step.event["input"] == "Poll" && count >= 2), "step {} hangs\n{report}", step.step);
        count = step.state.as_ref().and_then(Value::as_u64).unwrap();
    }
    assert!(count >= 2, "the trace ends where Poll hangs\n{report}");
    let (model, _) = spinner(Some(2));
    let worlds = replay(&model, trace);
    assert!(*worlds.last().unwrap().state(NodeId(0)) >= 2);
    // The checker keeps going: the same engine, on a model that does not hang, concludes.
    let (fine, _fine_release) = spinner(None);
    let report = liveness(fine).depth(1).dmax(200).watchdog(Duration::from_millis(200)).run().unwrap();
    assert_eq!(report.verdict, LivenessVerdict::NoSuspect, "{report}");
    drop(release);
}

/// Knobs that do nothing are no steps: a walk draws again in the same world. When the handler
/// that hangs was drawn after some of them, the report still names it (and not a knob the walk
/// drew before it), and no step of the trace is a knob that does nothing. With nine such knobs
/// of eleven, some of the seeds draw them first where `Poll` hangs.
#[test]
fn a_handler_that_hangs_after_draws_that_were_no_step_is_the_one_named() {
    for seed in 0..4 {
        let (model, release) = waiting_spinner(Some(2), 9);
        let run = liveness(model).depth(1).seed(seed).watchdog(Duration::from_millis(200));
        let report = run_within(Duration::from_secs(20), run);
        assert_eq!(report.verdict, LivenessVerdict::Divergence, "{report}");
        let trace = report.trace.as_ref().expect("the path to the divergence");
        let poll = r#"{"input":"Poll","kind":"spontaneous","node":0}"#;
        assert!(trace.verdict.as_ref().unwrap().message.contains(poll), "seed {seed}\n{report}");
        assert!(trace.steps.iter().all(|s| s.event["input"] == "Inc"), "seed {seed}\n{report}");
        drop(release);
    }
}

/// A handler that hangs within the exhaustive depth is caught there: the search's own watchdog
/// names the world it was expanding and the event that does not return.
#[test]
fn a_handler_that_hangs_in_the_exhaustive_search_is_a_divergence() {
    let (model, release) = spinner(Some(2));
    let started = Instant::now();
    let run = liveness(model).depth(3).dmax(10).watchdog(Duration::from_millis(200));
    let report = run_within(Duration::from_secs(20), run);
    assert!(started.elapsed() < Duration::from_secs(5), "reported after {:?}", started.elapsed());
    assert_eq!(report.verdict, LivenessVerdict::Divergence, "{report}");
    assert_eq!(report.stats.walks, 0, "no walk ran: the search never finished\n{report}");
    let trace = report.trace.as_ref().unwrap();
    // The only world two steps deep: two increments. Polling there hangs.
    let inputs: Vec<&Value> = trace.steps.iter().map(|s| &s.event["input"]).collect();
    assert_eq!(inputs, ["Inc", "Inc"], "{report}");
    let verdict = trace.verdict.as_ref().unwrap();
    assert_eq!((verdict.kind, verdict.step), (ViolationKind::Divergence, 3));
    let poll = r#"{"input":"Poll","kind":"spontaneous","node":0}"#;
    assert!(
        verdict.message.starts_with("n0 did not return from") && verdict.message.contains(poll),
        "{report}"
    );
    let (model, _) = spinner(Some(2));
    replay(&model, trace);
    drop(release);
}

// ---------------------------------------------------------------------------------------------
// 4. Determinism
// ---------------------------------------------------------------------------------------------

/// The same seed gives the same dead path, critical step and nearest live path on one thread or
/// two, on the gauge and on a token lost in a walk; other weights find the gauge's same
/// critical step.
#[test]
fn the_seed_decides_the_report_whatever_the_threads() {
    let same = |a: &LivenessReport, b: &LivenessReport| {
        assert_eq!(a.verdict, b.verdict, "{a}\n{b}");
        assert_eq!(a.trace, b.trace, "{a}\n{b}");
        assert_eq!(a.dmax, b.dmax);
        assert_eq!(a.critical_step(), b.critical_step());
    };
    let one = liveness(gauge()).threads(1).run().unwrap();
    let two = liveness(gauge()).threads(2).run().unwrap();
    one.assert_dead();
    same(&one, &two);
    same(&two, &liveness(gauge()).threads(2).run().unwrap());
    // The model's weights are the biased ones: saying so changes nothing.
    same(&two, &liveness(gauge()).weights(Weights::BIASED).run().unwrap());

    // A dead path found on a walk, where more depends on the walks.
    let seed = (0..20)
        .find(|s| liveness(relay()).depth(1).seed(*s).run().unwrap().verdict == LivenessVerdict::Dead)
        .expect("some seed loses the token");
    let lost_one = liveness(relay()).depth(1).seed(seed).threads(1).run().unwrap();
    let lost_two = liveness(relay()).depth(1).seed(seed).threads(2).run().unwrap();
    lost_one.assert_dead();
    same(&lost_one, &lost_two);

    // Other weights, other walks: the same critical step on the gauge.
    let uniform = liveness(gauge()).weights(Weights::UNIFORM).run().unwrap();
    let biased = two;
    uniform.assert_dead();
    assert_eq!(uniform.critical_step(), Some(2), "{uniform}");
    assert_eq!(uniform.critical_step(), biased.critical_step());
    assert_eq!(uniform.critical_event(), biased.critical_event());
    assert_eq!(uniform.critical_event(), Some(&json!({"kind": "input", "node": 0, "input": "Break"})));
}

// ---------------------------------------------------------------------------------------------
// 5. Errors and safety on the way
// ---------------------------------------------------------------------------------------------

/// Options out of range, a model without a liveness property, and a model that does not
/// validate are errors, before anything runs.
#[test]
fn bad_options_and_models_are_errors() {
    let bad = |run: Liveness<Gauge>| match run.run() {
        Err(LivenessError::BadOption(message)) => message,
        other => panic!("expected a bad option, got {other:?}"),
    };
    assert!(bad(liveness(gauge()).walks(0)).contains("walks 0"));
    assert!(bad(liveness(gauge()).dmax(0)).contains("dmax 0"));
    let message = bad(liveness(gauge()).depth(8).dmax(8));
    assert!(message.contains("dmax above the depth"), "{message}");
    assert!(liveness(gauge()).depth(8).dmax(9).run().is_ok());

    let safety_only = Model::new(Gauge { guarded: true })
        .driver(Driver::new().spontaneous(NodeId(0), Lever::Bump))
        .always("below three", |w: &World<Gauge>| w.state(NodeId(0)).count < 3)
        .sometimes("full", |w: &World<Gauge>| w.state(NodeId(0)).count == FULL);
    assert_eq!(liveness(safety_only).run().err(), Some(LivenessError::NoLivenessProperty));

    let no_nodes = gauge().nodes(0);
    assert_eq!(liveness(no_nodes).run().err(), Some(LivenessError::Model(ModelError::NoNodes)));
}

/// An `always` property violated within the exhaustive depth is a safety violation, with its
/// trace; with `invariants(false)` it is not checked and the gauge's dead path is found instead.
#[test]
fn a_safety_violation_in_the_search_is_reported_unless_invariants_are_off() {
    let model = || gauge().always("below two", |w: &World<Gauge>| w.state(NodeId(0)).count < 2);
    let report = liveness(model()).run().unwrap();
    assert_eq!(report.verdict, LivenessVerdict::SafetyViolation, "{report}");
    let trace = report.trace.as_ref().unwrap();
    let verdict = trace.verdict.as_ref().unwrap();
    assert_eq!(
        (verdict.property.as_str(), verdict.kind, verdict.step),
        ("below two", ViolationKind::Invariant, 2)
    );
    assert!(trace.steps.iter().all(|s| s.event["input"] == "Bump"), "{report}");
    assert_eq!(report.stats.walks, 0, "found by the exhaustive part\n{report}");
    replay(&model(), trace);

    let report = liveness(model()).invariants(false).run().unwrap();
    check_dead(&model(), &report, |w| w.state(NodeId(0)).count == FULL);
    assert_eq!(report.critical_step(), Some(2), "{report}");
}

/// An `always` property violated only on a walk, past the exhaustive depth, is a safety
/// violation whose trace ends at the violating step; with `invariants(false)` the walks go on
/// and become live.
#[test]
fn a_safety_violation_on_a_walk_is_reported_unless_invariants_are_off() {
    let model = || {
        let (model, release) = spinner(None);
        (model.always("below five", |w: &World<Spinner>| *w.state(NodeId(0)) < 5), release)
    };
    let (checked, _release) = model();
    let report = liveness(checked).run().unwrap();
    assert_eq!(report.verdict, LivenessVerdict::SafetyViolation, "{report}");
    let trace = report.trace.as_ref().unwrap();
    let verdict = trace.verdict.as_ref().unwrap();
    assert_eq!((verdict.property.as_str(), verdict.kind), ("below five", ViolationKind::Invariant));
    assert_eq!(verdict.step, trace.steps.len(), "the trace ends at the violation\n{report}");
    let incs = trace.steps.iter().filter(|s| s.event["input"] == "Inc").count();
    assert_eq!(incs, 5, "{report}");
    assert!(report.stats.walks > 0, "found on a walk\n{report}");
    let (again, _release) = model();
    let worlds = replay(&again, trace);
    assert_eq!(*worlds.last().unwrap().state(NodeId(0)), 5);

    let (unchecked, _release) = model();
    let report = liveness(unchecked).invariants(false).dmax(200).run().unwrap();
    assert_eq!(report.verdict, LivenessVerdict::NoSuspect, "{report}");
}

/// A safety violation that the engine's own walks meet while they probe a suspect path is still a
/// safety violation. The unguarded gauge may not reach two, so every walk that would fill it
/// violates that first. At depth 1 the periphery is "break" (jammed: the suspect, walked and
/// confirmed first) and "bump", whose walk meets the violation; FindCriticalTransition's probes
/// (`Recovers`) from the initial world meet it too, in about half their walks.
#[test]
fn a_safety_violation_met_while_probing_a_suspect_is_reported() {
    let model = || lever(false).always("below two", |w: &World<Gauge>| w.state(NodeId(0)).count < 2);
    let report = liveness(model()).depth(1).run().unwrap();
    assert_eq!(report.verdict, LivenessVerdict::SafetyViolation, "{report}");
    let trace = report.trace.as_ref().unwrap();
    assert_eq!(trace.verdict.as_ref().unwrap().property, "below two", "{report}");
    replay(&model(), trace);
}

// ---------------------------------------------------------------------------------------------
// 6. Where the search starts
// ---------------------------------------------------------------------------------------------

/// The nine fault-free steps that first bring the token home twice.
const RING: [(&str, u32); 9] = [
    ("input", 0),
    ("timer", 0),
    ("deliver", 1),
    ("timer", 1),
    ("deliver", 0),
    ("timer", 0),
    ("deliver", 1),
    ("timer", 1),
    ("deliver", 0),
];

/// Prefix-based search: a walk without faults first brings the ring to a live world (the token
/// home twice), and the search starts there, faults enabled again: the dead path loses the
/// token after the prefix. The trace begins with the prefix, which has no fault in it.
#[test]
fn a_live_prefix_walked_without_faults_starts_the_search() {
    let model = relay();
    let live = |w: &World<Relay>| w.state(NodeId(0)).holding && w.state(NodeId(0)).seen == 2;
    let report = liveness(relay()).prefix(Prefix::Live { faults: false }).run().unwrap();
    let worlds = check_dead(&model, &report, live);
    let trace = report.assert_dead();
    let prefix: Vec<(&str, u32)> = trace.steps[..9].iter().map(|s| (kind(s), s.node.0)).collect();
    assert_eq!(prefix, RING, "{report}");
    assert!(trace.steps[..9].iter().all(|s| !is_fault(s)));
    assert!(live(&worlds[9]) && worlds[..9].iter().all(|w| !live(w)));
    // The search starts at the live world: the critical transition (the drop) comes after it.
    let step = report.critical_step().unwrap();
    assert!(step > 10, "{report}");
    assert_eq!(kind(&trace.steps[step - 1]), "drop", "{report}");
    assert!(trace.steps[9..step - 1].iter().all(|s| !is_fault(s)), "{report}");
    assert!(trace.scenario.is_none());
    // `check_dead` replays the dead path from step 0: the live world at step 9 is on it, and the
    // engine still reports the path as dead only from the critical step on.
    let finding = trace.liveness.as_ref().unwrap();
    assert!(finding.nearest_live.as_ref().unwrap().shared >= 9);

    // Faults weighted heavily: a prefix walk that may inject them loses the token before it is
    // ever home twice; one that may not reaches the live world all the same.
    let heavy = Weights { fault: 1000, ..Weights::BIASED };
    let lost = liveness(relay()).weights(heavy).prefix(Prefix::Live { faults: true }).run().unwrap();
    assert_eq!(lost.verdict, LivenessVerdict::NoLivePrefix, "{lost}");
    assert!(lost.trace.is_none());
    let kept = liveness(relay()).weights(heavy).prefix(Prefix::Live { faults: false }).run().unwrap();
    let trace = kept.trace.as_ref().expect("a path from the live prefix");
    let prefix: Vec<(&str, u32)> = trace.steps[..9].iter().map(|s| (kind(s), s.node.0)).collect();
    assert_eq!(prefix, RING, "{kept}");
    assert!(trace.steps[..9].iter().all(|s| !is_fault(s)));
    // With faults that heavy after the prefix too, no probe brings a token in flight home (each
    // delivery has 8 chances in 1008): Algorithm 2 stops at the first non-live world after the
    // prefix, the pass at step 10, in case C2, as the paper's second corner case does.
    assert_eq!(kept.verdict, LivenessVerdict::Inconclusive, "{kept}");
    assert_eq!(trace.liveness.as_ref().unwrap().case, "C2");
    // C2 confirms no critical transition; the step where the probes stopped is only recorded.
    assert_eq!(kept.critical_step(), None, "{kept}");
    assert_eq!(trace.liveness.as_ref().unwrap().critical_step, 10, "{kept}");
    assert_eq!(kept.dmax, 60 << 3);
}

/// The token handed to node 1 and passed back: four steps.
fn handed_back() -> Scenario<Relay> {
    let (n0, n1) = (NodeId(0), NodeId(1));
    Scenario::new("handed back")
        .then(Event::Input { node: n0, input: Cmd::Mint })
        .then(Event::Timer { node: n0, timer: Alarm::Pass })
        .then(Event::Deliver { from: n0, to: n1, msg: Note::Token })
        .then(Event::Timer { node: n1, timer: Alarm::Pass })
}

/// A model's start scenario is where the search starts: the trace begins with the scenario's
/// steps, the critical step counts them, and the dead path loses the token the scenario left
/// in flight. With a live prefix too, the prefix walk starts at the scenario's world.
#[test]
fn the_search_starts_from_the_models_start_scenario() {
    let live = |w: &World<Relay>| w.state(NodeId(0)).holding && w.state(NodeId(0)).seen == 2;
    let model = relay().start_from(handed_back());
    let report = liveness(relay().start_from(handed_back())).run().unwrap();
    check_dead(&model, &report, live);
    let trace = report.assert_dead();
    let scenario = trace.scenario.as_ref().expect("the trace names its scenario");
    assert_eq!((scenario.name.as_str(), scenario.steps), ("handed back", 4));
    let first: Vec<(&str, u32)> = trace.steps[..4].iter().map(|s| (kind(s), s.node.0)).collect();
    assert_eq!(first, RING[..4], "{report}");
    // From the scenario's world the token is in flight: dropping it at once is the first thing
    // the search tries, and the critical transition, step 4 + 1.
    assert_eq!(report.critical_step(), Some(5), "{report}");
    assert_eq!(report.critical_event(), Some(&json!({"kind": "drop", "from": 1, "to": 0, "msg": "Token"})));
    assert_eq!(trace.liveness.as_ref().unwrap().nearest_live.as_ref().unwrap().shared, 4);
    assert!(report.to_string().contains("the search started here, at scenario \"handed back\""), "{report}");
    // The trace replays without the scenario in the model too.
    replay(&relay(), trace);

    // A live prefix from the scenario's world: five more fault-free steps bring the token home
    // twice, and the search starts there.
    let report =
        liveness(relay().start_from(handed_back())).prefix(Prefix::Live { faults: false }).run().unwrap();
    let worlds = check_dead(&model, &report, live);
    let trace = report.assert_dead();
    assert_eq!(trace.scenario.as_ref().unwrap().steps, 4);
    let walked: Vec<(&str, u32)> = trace.steps[..9].iter().map(|s| (kind(s), s.node.0)).collect();
    assert_eq!(walked, RING, "{report}");
    assert!(live(&worlds[9]));
    let step = report.critical_step().unwrap();
    assert!(step > 10 && kind(&trace.steps[step - 1]) == "drop", "{report}");
}

/// A model whose `init` makes a choice has several initial worlds, and the search starts from
/// each (as the exhaustive engines' do): the fragile gauge of the second initial world jams at
/// step 2, as the plain gauge does.
#[test]
fn every_initial_world_is_searched() {
    let sim_roots = {
        let model = batch();
        let mut roots = 0;
        Simulator::new(&model).unwrap().initial_worlds(|_, _, _| roots += 1);
        roots
    };
    assert_eq!(sim_roots, 2);
    // From the fragile initial world alone (a scenario of no steps with its `init` choice), the
    // engine finds the dead path.
    let fragile = {
        let model = batch();
        let sim = Simulator::new(&model).unwrap();
        Scenario::from_trace(&sim, "fragile", &sim.record(&[1], &[]), 0).unwrap()
    };
    let alone = liveness(batch().start_from(fragile)).run().unwrap();
    assert_eq!(alone.critical_step(), Some(2), "{alone}");
    assert_eq!(alone.assert_dead().initial.choices, [1]);
    // From the model's own initial worlds, it must find it too.
    let model = batch();
    let report = liveness(batch()).run().unwrap();
    check_dead(&model, &report, |w| w.state(NodeId(0)).dial.count == FULL);
    let trace = report.assert_dead();
    assert_eq!(trace.initial.choices, [1], "{report}");
    assert_eq!(report.critical_step(), Some(2), "{report}");
}

// ---------------------------------------------------------------------------------------------
// 7. Stopping
// ---------------------------------------------------------------------------------------------

/// Options as [`liveness`] sets them, with an interrupt that the progress sink raises once
/// `suspects` suspects are known (the run reports progress as each suspect is found, before it
/// is examined).
fn interrupted_at_suspect(suspects: u64) -> LivenessOptions {
    let interrupt = Interrupt::new();
    let raise = interrupt.clone();
    LivenessOptions {
        depth: 2,
        dmax: 60,
        walks: 32,
        seed: 7,
        threads: 2,
        watchdog: Duration::from_secs(5),
        interrupt: Some(interrupt),
        progress: Some(Arc::new(move |p: &LivenessProgress| {
            if p.suspects >= suspects {
                raise.raise();
            }
        })),
        ..LivenessOptions::default()
    }
}

/// A run out of time stops within about a thousand steps, whatever `dmax`: in the middle of the
/// one periphery walk of the treadmill, and in the middle of its prefix walk, each of which would
/// take minutes. The report says why, keeps the walk statistics (the walk cut short counts, with
/// its steps), and has no suspect: a walk cut short says nothing about where it started.
#[test]
fn a_run_out_of_time_stops_in_the_middle_of_a_long_walk() {
    for prefix in [Prefix::Start, Prefix::Live { faults: false }] {
        let run = liveness(treadmill()).dmax(1_000_000).prefix(prefix).timeout(Duration::from_millis(300));
        let report = run_within(Duration::from_secs(10), run);
        assert_eq!(report.verdict, LivenessVerdict::Stopped(Completion::TimeBound), "{prefix:?}: {report}");
        assert!(report.trace.is_none(), "{report}");
        assert_eq!((report.stats.suspects, report.stats.unconfirmed), (0, 0), "{report}");
        assert!(report.stats.seconds >= 0.3, "{report}");
        assert!(report.to_string().starts_with("verdict: stopped at the time bound"), "{report}");
        if prefix == Prefix::Start {
            assert_eq!(report.stats.periphery, 1, "{report}");
            assert_eq!(report.stats.walks, 1, "{report}");
            assert!((1..1_000_000).contains(&report.stats.walk_steps), "{report}");
        } else {
            // Stopped on the way to the search's root: nothing searched, no periphery walk.
            assert_eq!((report.stats.search_states, report.stats.walks), (0, 0), "{report}");
        }
    }
}

/// A stop while a suspect is being confirmed leaves it unconfirmed. The gauge's one suspect is a
/// real dead path, but the interrupt raised as soon as it is known cuts FindCriticalTransition's
/// first probe short: the report says the run was interrupted, counts the suspect as neither
/// confirmed nor refuted, and claims no dead path and no critical step.
#[test]
fn a_suspect_whose_confirmation_was_interrupted_is_not_reported_dead() {
    let report = Liveness::with_options(Arc::new(gauge()), interrupted_at_suspect(1)).run().unwrap();
    assert_eq!(report.verdict, LivenessVerdict::Stopped(Completion::Interrupted), "{report}");
    assert!(report.trace.is_none(), "{report}");
    assert_eq!(report.critical_step(), None);
    assert_eq!((report.stats.suspects, report.stats.unconfirmed), (1, 1), "{report}");
    assert_eq!(report.stats.confirm_seconds, None, "{report}");
    assert!(
        report.stats.walks >= 1,
        "the periphery walk is counted
{report}"
    );
    let text = report.to_string();
    assert!(text.contains("1 suspect(s) neither confirmed nor refuted when the run stopped"), "{text}");
}

/// An undecided (C2) path kept before the stop is still reported — a finding the run had made —
/// under the verdict that says the run was stopped; the suspect whose examination the stop cut
/// short, and those after it, are only counted. Philosophers who never eat: the first suspect
/// ends in C2 (dmax raised once), the stop comes as the second is found.
#[test]
fn an_undecided_path_kept_before_a_stop_is_reported_with_it() {
    let options = LivenessOptions { raises: 1, ..interrupted_at_suspect(2) };
    let report = Liveness::with_options(Arc::new(table(true)), options).run().unwrap();
    assert_eq!(report.verdict, LivenessVerdict::Stopped(Completion::Interrupted), "{report}");
    let trace = report.trace.as_ref().expect("the undecided path kept");
    assert_eq!(trace.liveness.as_ref().unwrap().case, "C2", "{report}");
    assert_eq!(report.critical_step(), None, "{report}");
    assert_eq!(report.dmax, 120, "{report}");
    let s = &report.stats;
    assert!(s.suspects >= 2 && s.unconfirmed == s.suspects - 1, "{report}");
    assert!(report.to_string().contains("undecided path (C2)"), "{report}");
    replay(&table(true), trace);
}
