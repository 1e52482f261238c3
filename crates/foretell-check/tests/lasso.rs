//! The lasso engine on small models, one mechanism each: a livelock whose full state never
//! repeats (found by the partial hash, not the full one), unfair cycles (a starved node, a
//! choice that always answers the same) that must not be reported, an execution that stops hot,
//! a handler panic, and reports that do not depend on the thread count.

use foretell_check::{
    FoundKind, HashChoice, Lasso, LassoMethod, LassoOptions, LassoReport, SchedulerKind, Schedulers,
};
use foretell_model::{
    Driver, Model, Monitor, NetworkKind, NodeId, Observation, Out, Protocol, Simulator, Temperature, World,
};
use serde::{Deserialize, Serialize};

/// Two nodes bat a ball back and forth, each hit raising the round, until one of them catches
/// it — which only a `choose` can decide, and `catch` says whether catching is possible at all.
struct Rally {
    catch: bool,
    /// Rounds wrap at this value (`None`: they grow forever).
    wrap: Option<u32>,
}

/// The ball, with the round of the hit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Ball(u32);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Player {
    Playing { round: u32 },
    Caught,
}

impl Protocol for Rally {
    type State = Player;
    type Msg = Ball;
    type Timer = ();
    type Input = ();

    fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> Player {
        if me == NodeId(0) {
            out.send(NodeId(1), Ball(1));
        }
        Player::Playing { round: 0 }
    }

    fn on_message(
        &self,
        _: NodeId,
        state: &mut Player,
        from: NodeId,
        Ball(round): &Ball,
        out: &mut Out<'_, Self>,
    ) {
        if self.catch && out.choose(2) == 1 {
            *state = Player::Caught;
            return;
        }
        let next = match self.wrap {
            Some(wrap) => (round + 1) % wrap,
            None => round + 1,
        };
        *state = Player::Playing { round: next };
        out.send(from, Ball(next));
    }

    fn phase(&self, state: &Player) -> u64 {
        match state {
            Player::Playing { .. } => 0,
            Player::Caught => 1,
        }
    }
}

fn rally(catch: bool, wrap: Option<u32>) -> Model<Rally> {
    Model::new(Rally { catch, wrap })
        .nodes(2)
        .network(NetworkKind::FifoInbox)
        .eventually("caught", |w: &World<Rally>| w.states().any(|s| *s == Player::Caught))
}

fn options(method: LassoMethod) -> LassoOptions {
    LassoOptions {
        method,
        schedulers: Schedulers::One(SchedulerKind::Random),
        executions: 200,
        max_steps: 200,
        threads: 2,
        ..LassoOptions::default()
    }
}

fn run<P: Protocol>(model: &Model<P>, options: LassoOptions) -> LassoReport {
    let report = Lasso::new(model).options(options).run().expect("runs");
    println!("{report}");
    report
}

/// Asserts that `report` found a lasso whose trace replays.
fn assert_lasso<P: Protocol>(model: &Model<P>, report: &LassoReport) -> (usize, usize) {
    let finding = report.finding.as_ref().expect("a finding");
    let FoundKind::Lasso { cycle_start, cycle_length } = finding.kind else {
        panic!("not a lasso: {:?}", finding.kind)
    };
    let lasso = finding.trace.lasso.as_ref().expect("the trace marks its lasso");
    assert_eq!((lasso.cycle_start, lasso.cycle_length), (cycle_start, cycle_length));
    assert_eq!(finding.trace.steps.len(), cycle_start + cycle_length);
    Simulator::new(model).unwrap().replay(&finding.trace).expect("the lasso's trace replays");
    (cycle_start, cycle_length)
}

/// Asserts that caching under three schedulers, and exact, find nothing in `model`.
fn assert_no_finding<P: Protocol>(model: &Model<P>) {
    for method in [LassoMethod::Caching, LassoMethod::Exact] {
        for scheduler in [SchedulerKind::Random, SchedulerKind::Pct { depth: 1 }, SchedulerKind::Dfs] {
            let options = LassoOptions { schedulers: Schedulers::One(scheduler), ..options(method) };
            let report = run(model, options);
            assert!(report.finding.is_none(), "{method} {scheduler}");
        }
    }
}

#[test]
fn a_livelock_whose_round_grows_is_found_by_the_partial_hash_but_not_the_full_one() {
    let model = rally(false, None);
    let partial = run(&model, options(LassoMethod::Caching));
    let (_, cycle) = assert_lasso(&model, &partial);
    assert_eq!(cycle, 2, "one hit each");
    assert_eq!(partial.buggy, partial.executions, "every execution is the livelock");
    let full = run(&model, LassoOptions { hash: HashChoice::Full, ..options(LassoMethod::Caching) });
    assert_eq!(full.buggy, 0, "the full state never repeats");
    assert!(full.finding.is_none());
}

#[test]
fn exact_finds_the_livelock_when_the_graph_is_finite_and_reports_an_incomplete_graph_otherwise() {
    let model = rally(false, Some(4));
    let report = run(&model, options(LassoMethod::Exact));
    let (stem, cycle) = assert_lasso(&model, &report);
    assert_eq!(cycle, 4, "the rounds wrap after four hits");
    assert_eq!(stem, 2, "the first world of the cycle is the first that repeats");
    assert!(report.exact.unwrap().complete);

    let unbounded = rally(false, None);
    let report = run(&unbounded, LassoOptions { max_worlds: 500, ..options(LassoMethod::Exact) });
    assert!(report.finding.is_none());
    assert!(!report.exact.unwrap().complete, "the bound on worlds was reached");

    // A bound that leaves out even the initial world leaves nothing complete either.
    let report = run(&model, LassoOptions { max_worlds: 0, ..options(LassoMethod::Exact) });
    assert!(report.finding.is_none());
    assert!(!report.exact.unwrap().complete, "no world was explored");
}

#[test]
fn a_choice_that_must_eventually_answer_otherwise_makes_the_cycle_unfair() {
    // Catching is possible: a cycle that never catches takes only one value of the choice.
    let model = rally(true, Some(3));
    for method in [LassoMethod::Caching, LassoMethod::Exact] {
        let report = run(&model, options(method));
        assert!(report.finding.is_none(), "{method}: no fair lasso");
    }
}

/// Node 0 spins on a timer, flipping a flag each time; node 1 finishes the work when its one
/// input arrives. The spin is hot but unfair to node 1.
struct Spin;

impl Protocol for Spin {
    type State = bool;
    type Msg = ();
    type Timer = ();
    type Input = ();

    fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> bool {
        if me == NodeId(0) {
            out.set_timer((), 1);
        }
        false
    }

    fn on_message(&self, _: NodeId, _: &mut bool, _: NodeId, _: &(), _: &mut Out<'_, Self>) {}

    fn on_timer(&self, _: NodeId, flag: &mut bool, _: &(), out: &mut Out<'_, Self>) {
        *flag = !*flag;
        out.set_timer((), 1);
    }

    fn on_input(&self, _: NodeId, done: &mut bool, _: &(), _: &mut Out<'_, Self>) {
        *done = true;
    }
}

/// A monitor that is hot until the node's flag is set (the work is done).
struct Done(NodeId);

impl<P: Protocol<State = bool>> Monitor<P> for Done {
    type State = bool;

    fn name(&self) -> &str {
        "done"
    }

    fn init(&self, _: &World<P>) -> bool {
        false
    }

    fn observe(&self, done: &mut bool, step: &Observation<'_, P>) {
        *done |= *step.after.state(self.0);
    }

    fn temperature(&self, done: &bool) -> Temperature {
        if *done {
            Temperature::Cold
        } else {
            Temperature::Hot
        }
    }
}

fn spin() -> Model<Spin> {
    Model::new(Spin).nodes(2).driver(Driver::new().input(NodeId(1), ())).monitor(Done(NodeId(1)))
}

#[test]
fn a_cycle_that_starves_an_enabled_node_is_not_a_violation() {
    let model = spin();
    for scheduler in [SchedulerKind::Random, SchedulerKind::Pct { depth: 1 }, SchedulerKind::Dfs] {
        let report = run(
            &model,
            LassoOptions { schedulers: Schedulers::One(scheduler), ..options(LassoMethod::Caching) },
        );
        assert!(report.finding.is_none(), "{scheduler}");
    }
    let report = run(&model, options(LassoMethod::Exact));
    assert!(report.finding.is_none());
    assert!(report.exact.unwrap().complete);
}

#[test]
fn the_temperature_method_reports_a_starving_scheduler_as_a_false_positive() {
    // PCT with one priority level runs the spinning node for all of the unfair steps.
    let model = spin();
    let options = LassoOptions {
        schedulers: Schedulers::One(SchedulerKind::Pct { depth: 1 }),
        temperature_threshold: 50,
        confirm: true,
        executions: 50,
        ..options(LassoMethod::Temperature)
    };
    let report = run(&model, options);
    assert!(report.buggy > 0, "the spin stays hot for 50 steps");
    assert_eq!(report.false_positives, Some(report.buggy), "and every report cools down when continued");
}

/// A node that gives up: its only event leaves the world hot with nothing enabled.
struct GiveUp;

impl Protocol for GiveUp {
    type State = u8;
    type Msg = ();
    type Timer = ();
    type Input = ();

    fn init(&self, _: NodeId, out: &mut Out<'_, Self>) -> u8 {
        out.set_timer((), 1);
        0
    }

    fn on_message(&self, _: NodeId, _: &mut u8, _: NodeId, _: &(), _: &mut Out<'_, Self>) {}

    fn on_timer(&self, _: NodeId, state: &mut u8, _: &(), _: &mut Out<'_, Self>) {
        *state = 1;
    }
}

#[test]
fn an_execution_that_stops_hot_is_reported_by_every_method() {
    let model = Model::new(GiveUp).eventually("done", |w: &World<GiveUp>| *w.state(NodeId(0)) == 2);
    for method in [LassoMethod::Caching, LassoMethod::Temperature, LassoMethod::Exact] {
        let report = run(&model, options(method));
        let finding = report.finding.as_ref().expect("found");
        assert_eq!(finding.kind, FoundKind::EndsHot, "{method}");
        assert_eq!(finding.trace.steps.len(), 1);
    }
}

/// A panicking handler is a safety violation with its trace.
struct Crash;

impl Protocol for Crash {
    type State = ();
    type Msg = ();
    type Timer = ();
    type Input = ();

    fn init(&self, _: NodeId, out: &mut Out<'_, Self>) {
        out.set_timer((), 1);
    }

    fn on_message(&self, _: NodeId, _: &mut (), _: NodeId, _: &(), _: &mut Out<'_, Self>) {}

    fn on_timer(&self, _: NodeId, _: &mut (), _: &(), _: &mut Out<'_, Self>) {
        panic!("the handler broke");
    }
}

#[test]
fn a_handler_panic_is_a_safety_violation_with_its_trace() {
    let model = Model::new(Crash).eventually("never", |_: &World<Crash>| false);
    for method in [LassoMethod::Caching, LassoMethod::Exact] {
        let report = run(&model, options(method));
        let violation = report.violation.as_ref().expect("a violation");
        assert!(matches!(violation.kind, FoundKind::Safety(_)), "{method}");
        let verdict = violation.trace.verdict.as_ref().expect("a verdict");
        assert!(verdict.message.contains("the handler broke"), "{}", verdict.message);
    }
}

#[test]
fn a_portfolio_report_is_the_same_on_one_thread_and_on_two() {
    let model = rally(true, Some(3));
    let run_with = |threads| {
        let options = LassoOptions {
            schedulers: Schedulers::Portfolio,
            executions: 160,
            threads,
            ..options(LassoMethod::Caching)
        };
        run(&model, options)
    };
    let (one, two) = (run_with(1), run_with(2));
    assert_eq!(one.executions, 160);
    assert_eq!(
        (one.executions, one.buggy, one.discarded, one.steps),
        (two.executions, two.buggy, two.discarded, two.steps)
    );
    assert_eq!(one.by_scheduler, two.by_scheduler);
}

#[test]
fn a_model_without_anything_to_be_hot_is_refused() {
    let model = Model::new(GiveUp);
    let error = Lasso::new(&model).run().expect_err("refused");
    assert!(error.to_string().contains("nothing can be hot"), "{error}");
}

/// Node 0 waits on a heartbeat timer that only re-arms itself: an idle event, no step. With
/// `finish`, its one-shot `Finish` input ends the work; with `flipper`, node 1 flips a switch
/// for ever (a livelock of real steps beside node 0's idling).
struct Idler;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Cmd {
    Finish,
    Flip,
}

impl Protocol for Idler {
    type State = bool;
    type Msg = ();
    type Timer = ();
    type Input = Cmd;

    fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> bool {
        if me == NodeId(0) {
            out.set_timer((), 1);
        }
        false
    }

    fn on_message(&self, _: NodeId, _: &mut bool, _: NodeId, _: &(), _: &mut Out<'_, Self>) {}

    fn on_timer(&self, _: NodeId, _: &mut bool, _: &(), out: &mut Out<'_, Self>) {
        out.set_timer((), 1);
    }

    fn on_input(&self, _: NodeId, state: &mut bool, cmd: &Cmd, _: &mut Out<'_, Self>) {
        match cmd {
            Cmd::Finish => *state = true,
            Cmd::Flip => *state = !*state,
        }
    }
}

fn idler(finish: bool, flipper: bool) -> Model<Idler> {
    let mut driver = Driver::new();
    if finish {
        driver = driver.input(NodeId(0), Cmd::Finish);
    }
    if flipper {
        driver = driver.spontaneous(NodeId(1), Cmd::Flip);
    }
    Model::new(Idler).nodes(2).driver(driver).monitor(Done(NodeId(0)))
}

/// The heartbeat that changes nothing does not schedule node 0: firing it for ever while
/// `Finish` waits is no fair cycle (it used to be reported as a one-step lasso by every method
/// and scheduler).
#[test]
fn an_idle_heartbeat_does_not_make_a_starving_node_scheduled() {
    assert_no_finding(&idler(true, false));
}

/// With nothing but the heartbeat, no event changes the hot world: the execution stops there,
/// hot, by every method.
#[test]
fn a_hot_world_that_only_idle_events_reach_ends_hot() {
    let model = idler(false, false);
    for method in [LassoMethod::Caching, LassoMethod::Temperature, LassoMethod::Exact] {
        let report = run(&model, options(method));
        let finding = report.finding.as_ref().expect("found");
        assert_eq!(finding.kind, FoundKind::EndsHot, "{method}");
        assert!(finding.trace.steps.is_empty(), "{method}");
    }
}

/// Node 1 flipping for ever is a fair livelock although node 0, enabled by its heartbeat, is
/// never scheduled in it: none of node 0's events changes anything.
#[test]
fn a_livelock_beside_a_node_with_only_idle_events_is_a_fair_lasso() {
    let model = idler(false, true);
    for method in [LassoMethod::Caching, LassoMethod::Exact] {
        let report = run(&model, options(method));
        let (stem, cycle) = assert_lasso(&model, &report);
        let trace = &report.finding.as_ref().unwrap().trace;
        assert!(trace.steps[stem..stem + cycle].iter().all(|s| s.node == NodeId(1)), "{method}");
    }
}

/// Node 0's heartbeat flips its phase at every firing (a real step, unlike [`Idler`]'s) while
/// its one-shot `Finish` input waits. With `finish_works`, `Finish` ends the work; without, it
/// only pings node 1, and the work never ends.
struct Beating {
    finish_works: bool,
}

impl Protocol for Beating {
    type State = bool;
    type Msg = ();
    type Timer = bool;
    type Input = ();

    fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> bool {
        if me == NodeId(0) {
            out.set_timer(false, 1);
        }
        false
    }

    fn on_message(&self, _: NodeId, _: &mut bool, _: NodeId, _: &(), _: &mut Out<'_, Self>) {}

    fn on_timer(&self, _: NodeId, _: &mut bool, phase: &bool, out: &mut Out<'_, Self>) {
        out.set_timer(!*phase, 1);
    }

    fn on_input(&self, _: NodeId, done: &mut bool, _: &(), out: &mut Out<'_, Self>) {
        if self.finish_works {
            *done = true;
        } else {
            out.send(NodeId(1), ());
        }
    }
}

fn beating(finish_works: bool) -> Model<Beating> {
    Model::new(Beating { finish_works })
        .nodes(2)
        .driver(Driver::new().input(NodeId(0), ()))
        .monitor(Done(NodeId(0)))
}

/// Fairness is owed to each of a node's event sources, not to the node: the heartbeat firing
/// for ever takes node 0 at every step, but its `Finish` input, enabled all along, is never
/// taken, so the cycle is unfair (with fairness per node it was reported as a lasso).
#[test]
fn a_node_taking_one_event_for_ever_while_another_waits_is_not_fair() {
    assert_no_finding(&beating(true));
}

/// Once `Finish` has been taken (and did not finish), the heartbeat alone is a fair cycle.
#[test]
fn a_heartbeat_after_a_useless_finish_is_a_fair_lasso() {
    let model = beating(false);
    for method in [LassoMethod::Caching, LassoMethod::Exact] {
        let report = run(&model, options(method));
        let (stem, cycle) = assert_lasso(&model, &report);
        let steps = &report.finding.as_ref().unwrap().trace.steps;
        assert!(steps[..stem].iter().any(|s| s.node == NodeId(0) && s.event["kind"] == "input"), "{method}");
        assert!(steps[stem..stem + cycle].iter().all(|s| s.event["kind"] == "timer"), "{method}");
    }
}

/// A graph cut by the bound on worlds still knows what each explored world enables: `Finish`
/// stays owed in the heartbeat's worlds even where the world it leads to was left out, so no
/// bound makes the heartbeat a fair cycle.
#[test]
fn a_step_the_bound_on_worlds_cut_off_still_counts_as_enabled() {
    let model = beating(true);
    for max_worlds in 1..=6 {
        let report = run(&model, LassoOptions { max_worlds, ..options(LassoMethod::Exact) });
        assert!(report.finding.is_none(), "bound {max_worlds}");
    }
}
