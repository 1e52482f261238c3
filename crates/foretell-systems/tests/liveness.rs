//! The liveness engine (`foretell_check::Liveness`, MaceMC's search for dead states and their
//! critical transition) on the Mace systems: each liveness variant of RandTree, Chord and
//! MaceTransport is found as a dead path (case C1) whose critical step is checked against the
//! bug's story in the worlds the dead path replays through, with a nearest live path that
//! follows the dead path up to the critical step and a non-empty per-node difference; and each
//! fixed version, searched from the same start with the same bounds, raises no suspect over more
//! than a thousand walks.
//!
//! Every run is a pure function of its seed and options (the walks are seeded; the pool returns
//! them in job order), so the seeds below give the same reports on every machine and with any
//! number of threads. What each search meets in these encodings, measured, is said at each test;
//! in short:
//! - RandTree: these tests found a liveness bug in the first fixed design: its fix for
//!   CrystalBall's children/siblings bug filtered a node's own children out of every sibling
//!   list it adopted, so a node that still listed a former child (whose `remove` was on its way)
//!   when the root's list naming that child arrived dropped it from its siblings for good, and
//!   `siblingsMatch` never held again. The fix now keeps the parent's last report and gives such
//!   a sibling back when the child leaves; the fixed-version tests of RT3's and RT10's starts
//!   check it. The RT3 and RT10 tests name their seeds, measured when that bug still competed
//!   for the first dead world of a suspect path.
//! - Chord: the critical transition of the partition is the second side's transport error, not
//!   the socket error that queued it.
//! - MaceTransport: from `fig5` the dead state needs both the receiver re-opened by the stale
//!   SYN and the sender's new SYN acknowledged; whichever of the two comes second on the path is
//!   the critical transition, so the ACK of 201 is it exactly on Figure 5's order of events.
//! - Two tests pin engine behaviour these tests first found wrong: an undecided report's counts
//!   cover the whole run, and every reported critical step is re-probed with more walks.

use foretell_check::{Liveness, LivenessOptions, LivenessProgress, LivenessReport, LivenessVerdict};
use foretell_model::{
    ErrorOrder, Event, Model, NodeId, PropertyKind, Protocol, Scenario, Simulator, Trace, World,
};
use foretell_systems::{chord, mace_transport, randtree};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Worker threads for the walks: the machine has two cores.
const THREADS: usize = 2;

/// No handler of these systems loops, so a divergence report could only come from a worker
/// starved of CPU on a loaded machine; the watchdog is made generous enough that it cannot.
const WATCHDOG: Duration = Duration::from_secs(10);

/// The fewest walks each fixed version must finish without a suspect.
const FIXED_WALKS: u64 = 1_000;

/// The search bounds of one system's tests.
#[derive(Clone, Copy, Debug)]
struct Bounds {
    /// Depth `d` of the exhaustive part.
    depth: usize,
    /// Walk depth `dmax`.
    dmax: usize,
    /// Walks `k` per probe of FindCriticalTransition.
    walks: usize,
}

/// A liveness run of `model` with `bounds` and `seed`. `always` properties are left to the safety
/// engines: RT3 violates `timers` from its first lost recovery timer on and the old
/// MaceTransport design also delivers twice, and either would end the search before it looked
/// for a dead state.
fn run<P: Protocol>(model: &Arc<Model<P>>, bounds: Bounds, seed: u64) -> LivenessReport {
    let report = Liveness::new(Arc::clone(model))
        .depth(bounds.depth)
        .dmax(bounds.dmax)
        .walks(bounds.walks)
        .seed(seed)
        .threads(THREADS)
        .watchdog(WATCHDOG)
        .invariants(false)
        .run()
        .expect("the run starts");
    let finding = report.trace.as_ref().and_then(|t| t.liveness.as_ref());
    println!(
        "seed {seed}: {:?}, critical step {:?} of a {:?}-step path, {} walks, periphery {}, {:.3} s",
        report.verdict,
        report.critical_step(),
        finding.map(|f| f.path_length),
        report.stats.walks,
        report.stats.periphery,
        report.stats.seconds
    );
    report
}

/// Whether every `eventually` property of `model` holds in `world`.
fn live<P: Protocol>(model: &Model<P>, world: &World<P>) -> bool {
    let mut liveness = model.properties().iter().filter(|p| p.kind() == PropertyKind::Eventually);
    liveness.all(|p| p.holds(world))
}

/// What every dead path must show: a C1 verdict whose trace replays, a nearest live path that
/// follows the dead path up to the world just before the critical step, leaves it there and
/// replays to a live world, and a per-node difference that is not empty. Returns the critical
/// step and the dead path's worlds (index `i`: the world after step `i`).
fn assert_dead_path<P: Protocol>(model: &Model<P>, report: &LivenessReport) -> (usize, Vec<World<P>>) {
    let trace = report.assert_dead();
    let finding = trace.liveness.as_ref().expect("a dead path carries its finding");
    assert_eq!(finding.case, "C1", "{report}");
    assert!(!finding.not_live.is_empty(), "{report}");
    let critical = report.critical_step().expect("a dead path has a critical step");
    assert!((1..=trace.steps.len()).contains(&critical), "{report}");
    let sim = Simulator::new(model).expect("the model validates");
    let dead = sim.replay(trace).unwrap_or_else(|e| panic!("the dead path does not replay: {e}\n{report}"));
    assert!(!live(model, &dead.worlds[critical]), "the critical step leads to a live world\n{report}");

    let nearest = finding.nearest_live.as_ref().unwrap_or_else(|| panic!("no nearest live path\n{report}"));
    assert_eq!(nearest.shared, critical - 1, "the nearest live path leaves the dead one elsewhere\n{report}");
    let departure = nearest.steps.first().expect("a live path takes a step of its own");
    assert_eq!(departure.step, critical, "{report}");
    assert_ne!(departure.fingerprint, trace.steps[critical - 1].fingerprint, "{report}");
    let shared = trace.steps[..nearest.shared].iter().cloned();
    let steps = shared.chain(nearest.steps.iter().cloned()).collect();
    let live_trace = Trace { steps, verdict: None, liveness: None, ..trace.clone() };
    let live_path = sim
        .replay(&live_trace)
        .unwrap_or_else(|e| panic!("the nearest live path does not replay: {e}\n{report}"));
    let end = live_path.worlds.last().expect("a path has a world");
    assert!(live(model, end), "the nearest live path does not end live\n{report}");

    assert!(!finding.diff.is_empty(), "no per-node difference\n{report}");
    (critical, dead.worlds)
}

/// The node id an event's JSON holds in one of its fields (`value` is that field's
/// `as_u64()`).
fn id(value: Option<u64>) -> NodeId {
    NodeId(value.and_then(|n| u32::try_from(n).ok()).expect("a node id"))
}

/// A scenario of the same events as `scenario` without its last `drop` steps.
fn without_last<P: Protocol>(scenario: &Scenario<P>, drop: usize, name: &str) -> Scenario<P> {
    let keep = scenario.steps().len() - drop;
    let steps = scenario.steps()[..keep].iter();
    steps.fold(Scenario::new(name), |s, (event, choices)| s.then_choosing(event.clone(), choices.clone()))
}

/// Runs the fixed version over seeds 0, 1, ... until at least [`FIXED_WALKS`] walks have run,
/// asserting that no run raises a suspect.
fn assert_no_suspect<P: Protocol>(model: &Arc<Model<P>>, bounds: Bounds) {
    let (mut walks, mut seeds) = (0, 0);
    while walks < FIXED_WALKS {
        let report = run(model, bounds, seeds);
        assert_eq!(report.verdict, LivenessVerdict::NoSuspect, "seed {seeds}\n{report}");
        assert!(report.stats.walks > 0, "{report}");
        walks += report.stats.walks;
        seeds += 1;
    }
    println!("{walks} walks over {seeds} seeds, no suspect");
}

// ---------------------------------------------------------------------------------------------
// RandTree
// ---------------------------------------------------------------------------------------------

/// Three nodes joining their next node (MaceMC's harness), no faults: every dead state below
/// comes from the protocol alone.
fn randtree_config() -> randtree::Config {
    randtree::Config { resets: 0, ..randtree::Config::default() }
}

const RT3_BOUNDS: Bounds = Bounds { depth: 4, dmax: 2_000, walks: 64 };

/// RT3 from the initial world: a node's recovery timer fires while it is joining and is never
/// armed again. The critical transition the paper names is that firing, at the moment it takes
/// the last recovery timer of the system: from then on nothing probes across trees, and two
/// trees never merge (`oneRoot`, `rootMatch`).
///
/// The seeds are the two among the first 64 whose suspect path ends that way. On the others the
/// engine reports a dead state too, but another first dead world: on about half (30 of 64) the
/// path reaches the siblings-filter dead state of the fixed design (see the module comment); on
/// the rest the recovery timers are lost while the trees can still meet by joins, and the first
/// dead world is the later event by which the last joining node settles into a tree of its own
/// (most often the `RootForce` reply that makes it a root, or a stale `Join` accepted by a node
/// that stops joining). Seeds 2 and 58 report the same step with `k` from 16 to 256.
#[test]
fn randtree_recovery_timer_dies_when_the_last_recovery_timer_fires_while_joining() {
    use randtree::{Phase, Timer};
    let model = Arc::new(randtree::model(randtree_config(), randtree::Bug::RecoveryTimer));
    for (seed, expected) in [(2, 13), (58, 15)] {
        let report = run(&model, RT3_BOUNDS, seed);
        let (critical, worlds) = assert_dead_path(&model, &report);
        println!("{report}");
        assert_eq!(critical, expected, "seed {seed}\n{report}");
        let event = report.critical_event().expect("a dead path has a critical event");
        assert_eq!(event["kind"], "timer", "{report}");
        assert_eq!(event["timer"], "Recovery", "{report}");
        let joiner = id(event["node"].as_u64());
        let (before, after) = (&worlds[critical - 1], &worlds[critical]);
        assert_eq!(before.state(joiner).phase, Phase::Joining, "{report}");
        assert!(before.timer_armed(joiner, &Timer::Recovery));
        assert!(!after.timer_armed(joiner, &Timer::Recovery), "the recovery timer was re-armed");
        // It was the system's last recovery timer: the others were lost the same way earlier.
        let nodes = NodeId::all(after.node_count());
        assert!(nodes.clone().all(|n| !after.timer_armed(n, &Timer::Recovery)), "{report}");
        assert!(nodes.filter(|&n| n != joiner).all(|n| !before.timer_armed(n, &Timer::Recovery)));
        let finding = report.trace.as_ref().and_then(|t| t.liveness.as_ref()).expect("a finding");
        assert!(finding.not_live.iter().any(|p| p == "oneRoot"), "{report}");
        assert!(finding.not_live.iter().any(|p| p == "rootMatch"), "{report}");
    }
}

const RT10_BOUNDS: Bounds = Bounds { depth: 4, dmax: 2_000, walks: 64 };

/// The `rt10` scenario less its last event: node 2's `remove` is on its way to node 1, which
/// still lists node 2 as a child and is busy joining node 0.
fn before_remove(config: randtree::Config) -> Scenario<randtree::RandTree> {
    let rt10 = randtree::scenario("rt10", config).expect("rt10 is defined on three nodes");
    without_last(&rt10, 1, "rt10 before the remove")
}

/// RT10: a parent busy joining drops its child's `remove` and keeps the child for good, so
/// `kidsMatch` never holds again (there are no faults to break the stale connection).
///
/// The `rt10` scenario ends with that delivery, so a search from it starts in a dead world: no
/// probe recovers even at the path's start, and Algorithm 2 answers C2 (no critical transition
/// on the path: it lies at or before its start). The engine says exactly that. Started one event
/// earlier, with the `remove` still in flight, the engine finds the delivery itself as the
/// critical transition. That start is a race: the `JoinReply` that makes node 1 a child of node
/// 0 may arrive first (with the first fixed design's siblings filter, about 8% of walks from it
/// reached a live world). The suspect paths of seeds 0 to 4, 6 and 7 take the `remove` first;
/// `k` = 64 and 256 report the `remove` on all of them (for `k` = 16, see the next test).
#[test]
#[cfg_attr(debug_assertions, ignore = "about 40 s in a debug build; runs in the release-mode test command")]
fn randtree_remove_while_joining_dies_when_the_joining_parent_receives_the_remove() {
    let config = randtree_config();
    let bug = randtree::Bug::RemoveWhileJoining;
    let rt10 = randtree::scenario("rt10", config).expect("rt10 is defined on three nodes");
    let scenario_steps = rt10.steps().len();

    let from_rt10 = Arc::new(randtree::model(config, bug).start_from(rt10));
    let report = Liveness::new(Arc::clone(&from_rt10))
        .depth(RT10_BOUNDS.depth)
        .dmax(RT10_BOUNDS.dmax)
        .walks(RT10_BOUNDS.walks)
        .raises(1)
        .threads(THREADS)
        .watchdog(WATCHDOG)
        .invariants(false)
        .run()
        .expect("the run starts");
    println!("{report}");
    assert_eq!(report.verdict, LivenessVerdict::Inconclusive, "{report}");
    assert_eq!(report.critical_step(), None, "{report}");
    let finding = report.trace.as_ref().and_then(|t| t.liveness.as_ref()).expect("a finding");
    assert_eq!((finding.case.as_str(), finding.critical_step), ("C2", scenario_steps), "{report}");
    assert!(finding.nearest_live.is_none(), "{report}");
    assert!(finding.not_live.iter().any(|p| p == "kidsMatch"), "{report}");

    let model = Arc::new(randtree::model(config, bug).start_from(before_remove(config)));
    for (seed, expected) in [(0, 17), (1, 16), (2, 16), (3, 15)] {
        let report = run(&model, RT10_BOUNDS, seed);
        assert_remove_while_joining(&model, &report);
        assert_eq!(report.critical_step(), Some(expected), "seed {seed}\n{report}");
    }
}

/// RT10's dead path: its critical event is node 2's `remove` reaching node 1 while node 1 is
/// joining, and node 1 keeps node 2 as a child while node 2's parent is another node.
fn assert_remove_while_joining(model: &Model<randtree::RandTree>, report: &LivenessReport) {
    println!("{report}");
    let event = report.critical_event().unwrap_or_else(|| panic!("no critical event\n{report}"));
    assert_eq!(event["kind"], "deliver", "{report}");
    assert_eq!(event["msg"], "Remove", "{report}");
    let (child, parent) = (id(event["from"].as_u64()), id(event["to"].as_u64()));
    assert_eq!((child, parent), (NodeId(2), NodeId(1)), "{report}");
    let (critical, worlds) = assert_dead_path(model, report);
    let (before, after) = (&worlds[critical - 1], &worlds[critical]);
    assert_eq!(before.state(parent).phase, randtree::Phase::Joining, "{report}");
    assert!(after.state(parent).children.contains(&child), "the remove was honoured\n{report}");
    assert_ne!(after.state(child).parent, Some(parent), "{report}");
    let finding = report.trace.as_ref().and_then(|t| t.liveness.as_ref()).expect("a finding");
    assert!(finding.not_live.iter().any(|p| p == "kidsMatch"), "{report}");
}

/// RT10 with the default `k` = 16. On seeds 1 to 4 the exponential phase's first world that 16
/// walks cannot bring back is early on the path, and before the engine re-probed every reported
/// step with four times the walks, it reported that world's step (a sibling list arriving, which
/// changes nothing in the race) as the critical transition. With the re-probe the search goes on
/// past it and finds the `remove`.
#[test]
fn randtree_remove_while_joining_with_the_default_walks_per_probe() {
    let config = randtree_config();
    let model = Arc::new(
        randtree::model(config, randtree::Bug::RemoveWhileJoining).start_from(before_remove(config)),
    );
    for seed in 1..=4 {
        let report = run(&model, Bounds { walks: 16, ..RT10_BOUNDS }, seed);
        assert_remove_while_joining(&model, &report);
    }
}

/// An Inconclusive report comes after the scan has looked at more suspects for a dead path (up to
/// eight after the first undecided one), and its counts must cover them: the progress sink has
/// already announced its totals, and a report kept from the first undecided path must not carry
/// the counts and time of that moment instead.
#[test]
fn randtree_rt10_inconclusive_report_counts_the_whole_run() {
    let config = randtree_config();
    let rt10 = randtree::scenario("rt10", config).expect("rt10 is defined on three nodes");
    let model = Arc::new(randtree::model(config, randtree::Bug::RemoveWhileJoining).start_from(rt10));
    let announced: Arc<Mutex<Option<LivenessProgress>>> = Arc::default();
    let sink = Arc::clone(&announced);
    let options = LivenessOptions {
        depth: RT10_BOUNDS.depth,
        dmax: RT10_BOUNDS.dmax,
        walks: RT10_BOUNDS.walks,
        threads: THREADS,
        raises: 1,
        watchdog: WATCHDOG,
        invariants: false,
        progress: Some(Arc::new(move |p: &LivenessProgress| {
            *sink.lock().unwrap_or_else(|e| e.into_inner()) = Some(p.clone());
        })),
        ..LivenessOptions::default()
    };
    let report = Liveness::with_options(model, options).run().expect("the run starts");
    assert_eq!(report.verdict, LivenessVerdict::Inconclusive, "{report}");
    let announced = announced.lock().unwrap_or_else(|e| e.into_inner()).clone().expect("progress");
    println!(
        "report: {} walks, {} suspects; announced: {announced:?}",
        report.stats.walks, report.stats.suspects
    );
    assert!(report.stats.walks >= announced.walks, "{report}");
    assert!(report.stats.suspects >= announced.suspects, "{report}");
    assert!(report.stats.seconds >= announced.elapsed.as_secs_f64(), "{report}");
}

const RT13_BOUNDS: Bounds = Bounds { depth: 6, dmax: 20_000, walks: 64 };

/// RT13 (the MaceMC paper's section 6 case study) on three nodes with one reset: a node's `Join`
/// is accepted after the node has reset, and the acceptance reaches it back in init, where
/// r1116 ignores it. The acceptor keeps a child that does not know it, and `kidsMatch` never
/// holds again. The critical transition the paper names is that delivery; seed 1 is the first
/// whose walks reach a dead world from this start.
#[test]
fn randtree_early_join_reply_dies_when_a_node_back_in_init_ignores_its_acceptance() {
    let config = randtree::Config::default();
    assert_eq!((config.nodes, config.resets), (3, 1));
    let model = Arc::new(randtree::model(config, randtree::Bug::EarlyJoinReply));
    let report = run(&model, RT13_BOUNDS, 1);
    println!("{report}");
    let (critical, worlds) = assert_dead_path(&model, &report);
    let event = report.critical_event().expect("a dead path has a critical event");
    assert_eq!(event["kind"], "deliver", "{report}");
    assert_eq!(event["msg"]["JoinReply"]["status"], "Accepted", "{report}");
    let (acceptor, node) = (id(event["from"].as_u64()), id(event["to"].as_u64()));
    let (before, after) = (&worlds[critical - 1], &worlds[critical]);
    assert_eq!(before.state(node).phase, randtree::Phase::Init, "{report}");
    assert_eq!(after.state(node).phase, randtree::Phase::Init, "{report}");
    assert!(after.state(acceptor).children.contains(&node), "{report}");
    let steps = &report.trace.as_ref().expect("a dead path has a trace").steps[..critical];
    assert!(steps.iter().any(|step| step.event["kind"] == "reset"), "no reset before it\n{report}");
    let finding = report.trace.as_ref().and_then(|t| t.liveness.as_ref()).expect("a finding");
    assert!(finding.not_live.iter().any(|p| p == "kidsMatch"), "{report}");
}

/// The fixed version under one reset, which sends `remove` for an acceptance that reaches it in
/// init: no suspect on three nodes from the same start and bounds as RT13's test, nor on four
/// and five nodes with the default depth, with transport errors ordered as MaceMC's simulated
/// TCP orders them (the default).
#[test]
fn randtree_fixed_version_is_live_under_a_reset() {
    for (nodes, depth) in [(3, RT13_BOUNDS.depth), (4, 4), (5, 4)] {
        let config = randtree::Config { nodes, ..randtree::Config::default() };
        let model = Arc::new(randtree::model(config, randtree::Bug::None));
        assert_no_suspect(&model, Bounds { depth, ..RT13_BOUNDS });
    }
}

/// With real TCP's order (`errors=independent`) the same fixed version has dead paths under one
/// reset: a peer hears from the reset node's new incarnation before it handles the old
/// connection's error, and the error then undoes what the new incarnation did (the parent drops
/// a child that has rejoined). Same start, bounds and seed as the first run of the test above.
#[test]
fn randtree_fixed_version_dies_when_an_old_connection_s_error_comes_late() {
    let config = randtree::Config { errors: ErrorOrder::Independent, ..randtree::Config::default() };
    let model = Arc::new(randtree::model(config, randtree::Bug::None));
    let report = run(&model, RT13_BOUNDS, 0);
    println!("{report}");
    let (critical, _) = assert_dead_path(&model, &report);
    let steps = &report.trace.as_ref().expect("a dead path has a trace").steps[..critical];
    let reset = steps.iter().position(|step| step.event["kind"] == "reset").expect("a reset");
    let late_error = steps[reset..].iter().any(|step| step.event["kind"] == "transport_error");
    assert!(late_error, "no transport error between the reset and the critical step\n{report}");
}

// ---------------------------------------------------------------------------------------------
// Chord
// ---------------------------------------------------------------------------------------------

/// Two nodes, one socket error, no reset, from the `ring` scenario (a whole ring).
fn chord_config(bug: chord::Bug) -> chord::Config {
    chord::Config { nodes: 2, resets: 0, socket_errors: 1, bug, ..chord::Config::default() }
}

const CHORD_BOUNDS: Bounds = Bounds { depth: 4, dmax: 2_000, walks: 64 };

/// Whether `node` names `peer` as its predecessor, in a finger or in its successor list.
fn knows(world: &World<chord::Chord>, node: NodeId, peer: NodeId) -> bool {
    let s = world.state(node);
    s.predecessor == Some(peer) || s.fingers.contains(&peer) || s.successors.contains(&peer)
}

/// MaceMC's Pastry 2 pattern on Chord (`partition`): a socket error breaks the ring's
/// connection, each side's `error` upcall erases the other from its tables, and without
/// `recovery` nothing ever contacts a node that is not in them.
///
/// The socket error itself is not the critical transition: it only queues a transport error at
/// each end, and until a node has handled its own it still knows the other and its `stabilize`
/// can re-introduce itself (the nearest live paths do exactly that). The critical transition is
/// the second of the two transport errors: after it neither node names the other anywhere. A
/// recovery from before it needs a `stabilize` to fire before the pending error is handled, which
/// biased walks seldom do: with `k` = 16 one of the first 40 seeds finds no recovery even at the
/// start of its path and answers C2, while `k` = 64 reports the second error on all 40.
#[test]
fn chord_partition_dies_when_the_second_side_forgets_the_first() {
    let config = chord_config(chord::Bug::Partition);
    let ring = chord::scenario("ring", config).expect("the ring forms");
    let model = Arc::new(chord::model(config).start_from(ring));
    let (a, b) = (NodeId(0), NodeId(1));
    for seed in 0..5 {
        let report = run(&model, CHORD_BOUNDS, seed);
        let (critical, worlds) = assert_dead_path(&model, &report);
        if seed == 0 {
            println!("{report}");
        }
        let trace = report.trace.as_ref().expect("a dead path has a trace");
        let event = report.critical_event().expect("a dead path has a critical event");
        assert_eq!(event["kind"], "transport_error", "{report}");
        let split = trace.steps[..critical - 1].iter().filter(|s| s.event["kind"] == "socket_error").count();
        assert_eq!(split, 1, "the socket error comes before the critical step\n{report}");
        let (before, after) = (&worlds[critical - 1], &worlds[critical]);
        assert!(knows(before, a, b) || knows(before, b, a), "{report}");
        assert!(!knows(after, a, b) && !knows(after, b, a), "{report}");
        let finding = trace.liveness.as_ref().expect("a finding");
        for property in ["allNodes", "predecessorNonNull", "successorReflexive", "allNodesReachable"] {
            assert!(finding.not_live.iter().any(|p| p == property), "{property}\n{report}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// MaceTransport
// ---------------------------------------------------------------------------------------------

fn transport_config(bug: mace_transport::Bug) -> mace_transport::Config {
    mace_transport::Config { bug, ..mace_transport::Config::default() }
}

/// `dmax` is small because a recovery from these worlds takes a few dozen steps at most, while
/// every walk from a dead world runs to `dmax` (the sender retransmits forever); `k` is large
/// because the recovery before the ACK of 201 needs the retransmission timer of 201 to fire
/// before that ACK arrives, which biased walks seldom do: from Figure 5's fourth step, with `k` = 4
/// the probes call that world dead on 3 of the first 8 seeds and report the ignored ACK of 101
/// just before it as the critical transition (`k` = 16 is right on those 8, 128 leaves a margin).
const TRANSPORT_BOUNDS: Bounds = Bounds { depth: 2, dmax: 500, walks: 128 };

fn fig5() -> Scenario<mace_transport::MaceTransport> {
    mace_transport::scenario("fig5", transport_config(mace_transport::Bug::StaleSyn).messages)
        .expect("fig5 is a scenario")
}

/// Figure 5 up to its critical transition: from `fig5`, the new SYN (201) reaches the receiver,
/// then the stale one (101) re-opens its connection at 101.
fn fig5_stale_syn_delivered() -> Scenario<mace_transport::MaceTransport> {
    let (sender, receiver) = (mace_transport::SENDER, mace_transport::RECEIVER);
    let deliver = |msg| Event::Deliver { from: sender, to: receiver, msg };
    fig5().then(deliver(mace_transport::syn_packet(2, 1))).then(deliver(mace_transport::syn_packet(1, 0)))
}

/// The dead condition of `stale-syn`: the sender has the ACK of its new connection's SYN, the
/// receiver's connection is open at an older connection's sequence numbers, and no copy of the
/// new SYN is on its way to set it right.
fn desynchronised(world: &World<mace_transport::MaceTransport>) -> bool {
    use mace_transport::{Msg, RECEIVER, SENDER};
    let Some(c) = world.state(SENDER).out.get(&RECEIVER) else { return false };
    let Some(r) = world.state(RECEIVER).inc.get(&SENDER) else { return false };
    let first = c.first_seq();
    let new_syn = world
        .messages()
        .any(|e| e.to == RECEIVER && matches!(e.msg, Msg::Data { seq, syn, .. } if syn != 0 && seq >= first));
    c.last >= first && !r.expect_syn && r.next < first && !new_syn
}

/// Figure 6 in the per-node difference: on the dead path the sender's window holds 202 (201 was
/// acknowledged); on the live path 201 is still in flight with its retransmission timer armed.
fn assert_figure_6_diff(report: &LivenessReport) {
    let finding = report.trace.as_ref().and_then(|t| t.liveness.as_ref()).expect("a finding");
    let sender = finding.diff.iter().find(|d| d.node == mace_transport::SENDER);
    let sender = sender.unwrap_or_else(|| panic!("the sender's state does not differ\n{report}"));
    let has = |lines: &[String], prefix: &str| lines.iter().any(|l| l.starts_with(prefix));
    assert!(has(&sender.dead, "state.out.1.inflight.202."), "{report}");
    assert!(has(&sender.live, "state.out.1.inflight.201."), "{report}");
    assert!(has(&sender.live, "timers.0.seq = 201"), "{report}");
}

/// MaceTransport 3 (Figure 5) from `fig5`: after the sender resets, its old incarnation's SYN
/// (101) reaches the receiver after the new one (201) and re-opens the receiver's connection at
/// 101; once the sender also has the ACK of 201 it never sends a SYN again, and the receiver
/// buffers 202 and on for good.
///
/// Figure 6 names the ACK of 201 as the critical transition, on Figure 5's order of events, where
/// the stale SYN has already arrived. On the other order (the ACK first, the stale SYN later), the
/// world after the ACK is not dead: 202 can still be delivered and acknowledged before 101
/// arrives, which is a live world, so the critical transition is the stale SYN's delivery. The
/// test asserts that rule on every seed: the critical step is the first step after which the
/// sender has the ACK of 201 while the receiver is open at 101 and no copy of SYN 201 is in
/// flight, and it is one of those two deliveries. Seeds take one order or the other (which do
/// depends on the fingerprints that steer the walks), so the test runs seeds until both orders
/// have been seen; on Figure 5's the critical event is the ACK and the per-node difference is
/// Figure 6's.
#[test]
#[cfg_attr(debug_assertions, ignore = "5 to 10 s in a debug build; runs in the release-mode test command")]
fn mace_transport_stale_syn_dies_at_the_later_of_the_ack_of_201_and_the_stale_syn() {
    let model =
        Arc::new(mace_transport::model(transport_config(mace_transport::Bug::StaleSyn)).start_from(fig5()));
    let (mut figure_5_order, mut other_order) = (Vec::new(), Vec::new());
    for seed in 0..64 {
        if !figure_5_order.is_empty() && !other_order.is_empty() {
            break;
        }
        let report = run(&model, TRANSPORT_BOUNDS, seed);
        let (critical, worlds) = assert_dead_path(&model, &report);
        assert!(!desynchronised(&worlds[critical - 1]), "{report}");
        assert!(desynchronised(&worlds[critical]), "{report}");
        let event = report.critical_event().expect("a dead path has a critical event");
        assert_eq!(event["kind"], "deliver", "{report}");
        if event["msg"]["Ack"]["seq"] == 201 {
            assert_eq!(id(event["to"].as_u64()), mace_transport::SENDER, "{report}");
            assert_figure_6_diff(&report);
            println!("{report}");
            figure_5_order.push(seed);
        } else {
            let stale_syn = &event["msg"]["Data"];
            assert!(stale_syn["seq"] == 101 && stale_syn["syn"] == 1, "{report}");
            assert_eq!(id(event["to"].as_u64()), mace_transport::RECEIVER, "{report}");
            other_order.push(seed);
        }
    }
    assert!(!figure_5_order.is_empty(), "no seed of 64 took Figure 5's order");
    assert!(!other_order.is_empty(), "no seed of 64 took the other order");
    println!("Figure 5's order: seeds {figure_5_order:?}; the other: {other_order:?}");
}

/// Figure 6 proper: from Figure 5's first four steps (the stale SYN has re-opened the receiver),
/// the critical transition is the ACK of 201 whatever the path, and the nearest live path
/// retransmits SYN 201 before that ACK arrives.
#[test]
#[cfg_attr(debug_assertions, ignore = "5 to 10 s in a debug build; runs in the release-mode test command")]
fn mace_transport_stale_syn_from_figure_5_dies_at_the_ack_of_201() {
    let model = Arc::new(
        mace_transport::model(transport_config(mace_transport::Bug::StaleSyn))
            .start_from(fig5_stale_syn_delivered()),
    );
    for seed in 0..5 {
        let report = run(&model, TRANSPORT_BOUNDS, seed);
        let (critical, worlds) = assert_dead_path(&model, &report);
        if seed == 0 {
            println!("{report}");
        }
        assert!(!desynchronised(&worlds[critical - 1]) && desynchronised(&worlds[critical]), "{report}");
        let event = report.critical_event().expect("a dead path has a critical event");
        assert_eq!(event["msg"]["Ack"]["seq"], 201, "{report}");
        assert_eq!(id(event["to"].as_u64()), mace_transport::SENDER, "{report}");
        assert_figure_6_diff(&report);
    }
}

// ---------------------------------------------------------------------------------------------
// The fixed versions
// ---------------------------------------------------------------------------------------------

#[test]
fn chord_fixed_raises_no_suspect_after_a_socket_error() {
    let config = chord_config(chord::Bug::None);
    let ring = chord::scenario("ring", config).expect("the ring forms");
    let model = Arc::new(chord::model(config).start_from(ring));
    assert_no_suspect(&model, CHORD_BOUNDS);
}

#[test]
fn mace_transport_fixed_raises_no_suspect_from_fig5() {
    let fixed = || mace_transport::model(transport_config(mace_transport::Bug::None));
    assert_no_suspect(&Arc::new(fixed().start_from(fig5())), TRANSPORT_BOUNDS);
    assert_no_suspect(&Arc::new(fixed().start_from(fig5_stale_syn_delivered())), TRANSPORT_BOUNDS);
}

/// From `rt10` the fixed parent has honoured the `remove`: every walk reaches a live world.
#[test]
fn randtree_fixed_raises_no_suspect_from_rt10() {
    let config = randtree_config();
    let rt10 = randtree::scenario("rt10", config).expect("rt10 is defined on three nodes");
    let model = Arc::new(randtree::model(config, randtree::Bug::None).start_from(rt10));
    assert_no_suspect(&model, RT10_BOUNDS);
}

/// The fixed version from RT10's start with the `remove` in flight. The fixed parent honours
/// the `remove` whenever it arrives, but if node 0's `JoinReply` and sibling list (both naming
/// {1, 2}) reach node 1 before it, node 1 still has node 2 as a child and filters it out of its
/// siblings, and node 0 never sends another sibling list: once node 2 has adopted {1, 2},
/// `siblingsMatch` never holds again.
#[test]
fn randtree_fixed_raises_no_suspect_before_the_remove() {
    let config = randtree_config();
    let model = Arc::new(randtree::model(config, randtree::Bug::None).start_from(before_remove(config)));
    assert_no_suspect(&model, RT10_BOUNDS);
}

/// The fixed version from the initial world, in RT3's configuration.
#[test]
fn randtree_fixed_raises_no_suspect_from_the_initial_world() {
    let model = Arc::new(randtree::model(randtree_config(), randtree::Bug::None));
    assert_no_suspect(&model, RT3_BOUNDS);
}
