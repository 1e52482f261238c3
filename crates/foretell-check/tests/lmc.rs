//! Local model checking on small protocols: preliminary violations that no run reaches are
//! rejected by soundness verification (under each network discipline), sound ones are
//! reported with a trace the simulator replays (found beside endless interleavings too), local
//! assertions discard states, models the engine cannot check are refused with a reason, a
//! violation soundness verification could not decide is reported as undecided, never as
//! holding, a system state re-pointed at other local states is the one joined from them, and a
//! run stops when told to even while no new local state comes.

use foretell_check::{Check, Completion, Interrupt, LmcMode, LmcOptions, Report, Status};
use foretell_model::{
    Budget, ChoiceOdometer, Driver, Faults, LocalEvent, LocalState, Model, ModelError, NetworkKind, NodeId,
    Out, Projection, Protocol, Simulator, SystemState, World,
};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU32, Ordering};

/// Node 0, on its input, sends `A` then `B` to node 1, which records what it received, in
/// order. With `strict`, node 1 asserts that `B` comes after `A`.
struct Relay {
    strict: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
enum Msg {
    A,
    B,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct State {
    sent: bool,
    received: Vec<Msg>,
}

impl Protocol for Relay {
    type State = State;
    type Msg = Msg;
    type Timer = ();
    type Input = ();

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> State {
        State { sent: false, received: Vec::new() }
    }

    fn on_input(&self, _: NodeId, state: &mut State, _: &(), out: &mut Out<'_, Self>) {
        state.sent = true;
        out.send(NodeId(1), Msg::A);
        out.send(NodeId(1), Msg::B);
    }

    fn on_message(&self, _: NodeId, state: &mut State, _: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
        if self.strict && *msg == Msg::B {
            out.require(state.received.contains(&Msg::A), "B after A");
        }
        state.received.push(msg.clone());
    }
}

fn relay(network: NetworkKind, strict: bool) -> Model<Relay> {
    Model::new(Relay { strict }).nodes(2).network(network).driver(Driver::new().input(NodeId(0), ()))
}

fn receiver(world: &World<Relay>) -> &State {
    world.state(NodeId(1))
}

fn lmc<P: Protocol>(model: &Model<P>, mode: LmcMode) -> Report {
    let report = Check::lmc(model).lmc_options(LmcOptions { mode, ..LmcOptions::default() }).run();
    println!("{report}");
    report
}

/// A system state re-pointed at other local states ([`SystemState::repoint`], what the general
/// form checks each combination in) is the world joined from them: the same states, pending
/// inputs and fingerprint, and back again.
#[test]
fn a_repointed_system_state_is_the_joined_world() {
    let model = relay(NetworkKind::FifoChannels, false);
    let sim = Simulator::new(&model).unwrap();
    let mut start = None;
    sim.initial_worlds(|_, world, _| start = Some(world));
    let start = sim.local_states(&start.unwrap());
    let step = |node: usize, local: &LocalState<Relay>, event| {
        sim.local_step(NodeId(node as u32), local, event, &mut ChoiceOdometer::new())
    };
    // Node 0 gives its input (and sends A and B); node 1 receives A.
    let proposed = step(0, &start[0], LocalEvent::Input(0));
    let received = step(1, &start[1], LocalEvent::Deliver(&proposed.sent[0])).next.into_local(&start[1]);
    let proposed = proposed.next.into_local(&start[0]);
    let describe = |world: &World<Relay>| {
        (world.fingerprint(), world.states().cloned().collect::<Vec<_>>(), world.pending_input_count())
    };
    let mut system = SystemState::new(&sim, start.iter());
    let original = describe(system.world());
    assert_eq!(original, describe(&sim.join(start.iter())));
    for locals in [[&proposed, &start[1]], [&proposed, &received], [&start[0], &received]] {
        system.repoint(locals.into_iter());
        assert_eq!(describe(system.world()), describe(&sim.join(locals.into_iter())));
        assert_ne!(describe(system.world()), original);
    }
    system.repoint(start.iter());
    assert_eq!(describe(system.world()), original);
}

/// Node 1 holding a message while node 0 has not sent it is a combination of local states
/// that no run reaches: a preliminary violation that soundness verification rejects.
#[test]
fn an_impossible_combination_is_rejected() {
    let model = relay(NetworkKind::Unordered, false)
        .always("received only what was sent", |w| w.state(NodeId(0)).sent || receiver(w).received.is_empty())
        .projection("received only what was sent", Projection::flagged(|s: &State| !s.received.is_empty()));
    for mode in [LmcMode::General, LmcMode::Projected] {
        let report = lmc(&model, mode);
        assert_eq!(report.completion, Completion::Exhausted);
        assert!(report.violations.is_empty(), "{report}");
        let stats = report.lmc.as_ref().expect("lmc statistics");
        assert!(stats.preliminary_violations >= 1, "{report}");
        assert_eq!(stats.unsound, stats.preliminary_violations, "{report}");
        assert_eq!(stats.undecided, 0);
    }
    // The global search agrees that the property holds.
    Check::bfs(&model).run().assert_holds("received only what was sent");
}

/// Locally, node 1 may take `B` before `A` whatever the network (channel order or not: `A`
/// might have been lost). On FIFO channels no run does, and soundness verification (which
/// follows the model's discipline) says so; on an unordered network it is a real violation,
/// reported with a trace that replays.
#[test]
fn soundness_follows_the_network_discipline() {
    let in_order = |w: &World<Relay>| receiver(w).received.first() != Some(&Msg::B);
    let fifo = relay(NetworkKind::FifoChannels, false).always("in order", in_order);
    for channel_order in [true, false] {
        let options = LmcOptions { mode: LmcMode::General, channel_order, ..LmcOptions::default() };
        let report = Check::lmc(&fifo).lmc_options(options).run();
        assert!(report.violations.is_empty(), "{report}");
        assert!(report.lmc.as_ref().unwrap().unsound >= 1, "{report}");
    }
    Check::bfs(&fifo).run().assert_holds("in order");

    let udp = relay(NetworkKind::Unordered, false).always("in order", in_order);
    let report = lmc(&udp, LmcMode::General);
    let violation = report.assert_violated("in order");
    assert_eq!(violation.trace.engine.as_deref(), Some("lmc"));
    assert_eq!(violation.trace.steps.len(), 2, "{}", violation.trace.to_text(false));
    Simulator::new(&udp).unwrap().replay(&violation.trace).expect("the trace replays");
}

/// A local state whose handler fails an assertion is discarded and counted, not reported
/// (section 4.2: under LMC's delivery it most often means the state is invalid).
#[test]
fn a_failed_local_assertion_discards_the_state() {
    let model = relay(NetworkKind::FifoChannels, true);
    for channel_order in [true, false] {
        let options = LmcOptions { mode: LmcMode::General, channel_order, ..LmcOptions::default() };
        let report = Check::lmc(&model).lmc_options(options).run();
        assert_eq!(report.completion, Completion::Exhausted);
        assert!(report.violations.is_empty(), "{report}");
        let stats = report.lmc.as_ref().unwrap();
        assert!(stats.discarded >= 1, "{report}");
        assert!(stats.discarded_example.as_deref().is_some_and(|e| e.contains("B after A")), "{report}");
        // Every local state of node 1 that survives has A first.
        assert_eq!(stats.local_states, vec![2, 3]);
    }
}

/// A bound on local events cuts the space and says so; the iterative bound raises it until
/// nothing is cut. (Node 0 sends `A` twice on one path: the duplicate limit must allow it.)
#[test]
fn local_event_bounds_cut_and_iterate() {
    let model = relay(NetworkKind::Unordered, false)
        .driver(Driver::new().input(NodeId(0), ()).input(NodeId(0), ()))
        .always("at most one A", |w| receiver(w).received.iter().filter(|m| **m == Msg::A).count() <= 1);
    let bounded = Check::lmc(&model)
        .lmc_options(LmcOptions { local_events: Some(1), duplicates: 1, ..LmcOptions::default() })
        .run();
    println!("{bounded}");
    assert_eq!(bounded.completion, Completion::DepthBound);
    assert!(bounded.violations.is_empty());
    let iterative = Check::lmc(&model)
        .lmc_options(LmcOptions { iterative: true, duplicates: 1, ..LmcOptions::default() })
        .run();
    println!("{iterative}");
    let violation = iterative.assert_violated("at most one A");
    Simulator::new(&model).unwrap().replay(&violation.trace).expect("the trace replays");
    assert_eq!(iterative.lmc.as_ref().unwrap().bound, Some(2));
}

/// What needs the network, which local states do not have, is refused with a reason: resets,
/// a queue capacity, a property that reads the messages in flight, a handler that reads its
/// mailbox (the last two found when they first do); and channel order where the network
/// reorders or duplicates messages.
#[test]
fn unsupported_models_are_refused() {
    fn refused<P: Protocol>(model: &Model<P>, reason: &str) {
        let error = Check::lmc(model).try_run().expect_err(reason);
        assert!(matches!(error, ModelError::EngineUnsupported { engine: "lmc", .. }), "{error}");
        assert!(error.to_string().contains(reason), "{error}");
    }
    refused(
        &relay(NetworkKind::Unordered, false).faults(Faults::none().resets(Budget::at_most(1))),
        "resets",
    );
    refused(&relay(NetworkKind::FifoChannels, false).queue_capacity(1), "queue capacity");
    let in_flight =
        relay(NetworkKind::Unordered, false).always("at most one in flight", |w| w.messages().len() <= 1);
    refused(&in_flight, "reads the network");
    let peeker =
        Model::new(Peeker).nodes(2).driver(Driver::new().input(NodeId(0), ()).spontaneous(NodeId(1), ()));
    refused(&peeker, "read its mailbox");
    // Channel order is kept only where the network keeps it.
    let in_order = |model: &Model<Relay>| {
        let options = LmcOptions { channel_order: true, ..LmcOptions::default() };
        Check::lmc(model).lmc_options(options).try_run()
    };
    for (model, reason) in [
        (relay(NetworkKind::Unordered, false), "delivers in any order"),
        (relay(NetworkKind::GrowOnly, false), "delivers in any order"),
        (
            relay(NetworkKind::FifoChannels, false).faults(Faults::none().duplicates(Budget::at_most(1))),
            "duplicate",
        ),
    ] {
        let error = in_order(&model).expect_err(reason);
        assert!(matches!(error, ModelError::EngineUnsupported { engine: "lmc", .. }), "{error}");
        assert!(error.to_string().contains(reason), "{error}");
    }
    assert!(in_order(&relay(NetworkKind::FifoInbox, false)).is_ok());
    // The global search sees the network and checks both.
    Check::bfs(&in_flight).run().assert_violated("at most one in flight");
    Check::bfs(&peeker).run();
}

/// Node 0 sends `A` to node 1, which counts the messages in its mailbox when it feels like it.
struct Peeker;

impl Protocol for Peeker {
    type State = usize;
    type Msg = Msg;
    type Timer = ();
    type Input = ();

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> usize {
        0
    }

    fn on_input(&self, me: NodeId, seen: &mut usize, _: &(), out: &mut Out<'_, Self>) {
        if me == NodeId(0) {
            out.send(NodeId(1), Msg::A);
        } else {
            *seen = out.mailbox().count();
        }
    }

    fn on_message(&self, _: NodeId, _: &mut usize, _: NodeId, _: &Msg, _: &mut Out<'_, Self>) {}
}

/// Node 0 sends `A` then `B` to node 1 on its first input and only counts the later ones;
/// node 1 records what it received, in order.
struct Counter;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Counted {
    inputs: u32,
    received: Vec<Msg>,
}

impl Protocol for Counter {
    type State = Counted;
    type Msg = Msg;
    type Timer = ();
    type Input = ();

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> Counted {
        Counted { inputs: 0, received: Vec::new() }
    }

    fn on_input(&self, _: NodeId, state: &mut Counted, _: &(), out: &mut Out<'_, Self>) {
        if state.inputs == 0 {
            out.send(NodeId(1), Msg::A);
            out.send(NodeId(1), Msg::B);
        }
        state.inputs += 1;
    }

    fn on_message(&self, _: NodeId, state: &mut Counted, _: NodeId, msg: &Msg, _: &mut Out<'_, Self>) {
        state.received.push(msg.clone());
    }
}

/// Counter on FIFO channels with three inputs for node 0 and the agreement-style invariant
/// "not (node 0 had all three inputs and node 1 `received` what `bad` says)", projected: node 0
/// keyed once it had them, node 1 keyed by `bad`.
fn counter(name: &'static str, bad: fn(&[Msg]) -> bool) -> Model<Counter> {
    let driver = (0..3).fold(Driver::new(), |driver, _| driver.input(NodeId(0), ()));
    let key = move |s: &Counted| match (s.inputs == 3, bad(&s.received)) {
        (true, _) => Some(0),
        (false, true) => Some(1),
        (false, false) => None,
    };
    Model::new(Counter)
        .nodes(2)
        .network(NetworkKind::FifoChannels)
        .driver(driver)
        .always(name, move |w| !(w.state(NodeId(0)).inputs == 3 && bad(&w.state(NodeId(1)).received)))
        .projection(name, Projection::conflict(key))
}

/// Without channel order (the default), node 0's third input comes a round after node 1 could hold `[B]`,
/// `[A, B]` and `[B, A]`, so the new state meets all three at once (one key group, projected),
/// and one soundness check answers for the three combinations: it finds the one a run reaches
/// (`[A, B]`; FIFO channels rule out the others) when the group has it, and rejects the group
/// when it has none.
#[test]
fn one_check_answers_for_a_group_of_combinations() {
    let holds_b = counter("no B after three inputs", |received| received.contains(&Msg::B));
    let b_first = counter("B not first after three inputs", |received| received.first() == Some(&Msg::B));
    for mode in [LmcMode::General, LmcMode::Projected] {
        let report = lmc(&holds_b, mode);
        let violation = report.assert_violated("no B after three inputs");
        let replayed = Simulator::new(&holds_b).unwrap().replay(&violation.trace).expect("the trace replays");
        let last = replayed.worlds.last().expect("the initial world at least");
        assert_eq!(last.state(NodeId(1)).received, [Msg::A, Msg::B]);
        let stats = report.lmc.as_ref().unwrap();
        assert!(stats.preliminary_violations >= 3, "{report}");
        assert!(stats.soundness_checks < stats.preliminary_violations, "grouped: {report}");

        let report = lmc(&b_first, mode);
        assert_eq!(report.completion, Completion::Exhausted);
        assert!(report.violations.is_empty(), "{report}");
        let stats = report.lmc.as_ref().unwrap();
        assert!(stats.preliminary_violations >= 2, "{report}");
        assert_eq!(stats.unsound, stats.preliminary_violations, "{report}");
    }
    Check::bfs(&b_first).run().assert_holds("B not first after three inputs");
}

/// Node 0 counts its ticks up to `LENGTH`, and at the last one tells node 1, which then raises
/// its flag: the one run to the flag is `LENGTH` ticks long, so soundness verification must
/// follow node 0 that deep.
struct Countdown;

const LENGTH: u32 = 100_000;

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Done;

impl Protocol for Countdown {
    type State = u32;
    type Msg = Done;
    type Timer = ();
    type Input = ();

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> u32 {
        0
    }

    fn on_input(&self, me: NodeId, ticks: &mut u32, _: &(), out: &mut Out<'_, Self>) {
        if me == NodeId(0) && *ticks < LENGTH {
            *ticks += 1;
            if *ticks == LENGTH {
                out.send(NodeId(1), Done);
            }
        } else {
            out.disable();
        }
    }

    fn on_message(&self, _: NodeId, flag: &mut u32, _: NodeId, _: &Done, _: &mut Out<'_, Self>) {
        *flag = 1;
    }
}

fn countdown() -> Model<Countdown> {
    Model::new(Countdown)
        .nodes(2)
        .network(NetworkKind::Unordered)
        .driver(Driver::new().spontaneous(NodeId(0), ()))
        .always("flag down", |w| *w.state(NodeId(1)) == 0)
}

/// The search for an interleaving goes as deep as the run it finds (here 100,001 events), far
/// deeper than a thread's stack would hold a recursion (a test thread has 2 MiB): it keeps its
/// path on the heap.
#[test]
fn soundness_verification_follows_a_run_deeper_than_the_stack() {
    let report = lmc(&countdown(), LmcMode::General);
    let violation = report.assert_violated("flag down");
    assert_eq!(violation.trace.steps.len(), LENGTH as usize + 1);
}

/// Node 0 flips between 0 and 1 on a spontaneous input, pinging node 1 each time; node 1 takes
/// no ping. Node 2 counts its own spontaneous inputs up to `COUNT`. Node 0's cycle and the
/// pings piling up in the network make the interleavings endless, the first ones a search tries
/// (node 0's events come first) among them, while the violation takes `COUNT` events of node 2.
struct Chatter;

const COUNT: u8 = 3;

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Ping;

impl Protocol for Chatter {
    type State = u8;
    type Msg = Ping;
    type Timer = ();
    type Input = ();

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> u8 {
        0
    }

    fn on_input(&self, me: NodeId, count: &mut u8, _: &(), out: &mut Out<'_, Self>) {
        match me.index() {
            0 => {
                *count ^= 1;
                out.send(NodeId(1), Ping);
            }
            _ if *count < COUNT => *count += 1,
            _ => out.disable(),
        }
    }

    fn on_message(&self, _: NodeId, _: &mut u8, _: NodeId, _: &Ping, out: &mut Out<'_, Self>) {
        out.disable();
    }
}

/// `Chatter`'s model, with `property` on node 2's count.
fn chatter(name: &'static str, property: fn(u8) -> bool) -> Model<Chatter> {
    Model::new(Chatter)
        .nodes(3)
        .network(NetworkKind::Unordered)
        .driver(Driver::new().spontaneous(NodeId(0), ()).spontaneous(NodeId(2), ()))
        .always(name, move |w| property(*w.state(NodeId(2))))
}

/// Node 0's second flip sends a second ping on its path, a copy beyond the default duplicate
/// limit. Node 1 takes no ping, so the copy kept out could lead nowhere the first did not: the
/// space is exhausted, the copy still counted. Where the receiver takes every copy (node 1 of
/// `Retransmit`), the copy kept out could, and the run that ends without a violation explored
/// what its limit allows, not every reachable world, and says so, as under a local-event bound.
#[test]
fn a_copy_beyond_the_duplicate_limit_bounds_the_run_where_the_last_one_was_taken() {
    let model = chatter("node 2 at most its count", |count| count <= COUNT);
    let report = lmc(&model, LmcMode::General);
    report.assert_holds("node 2 at most its count");
    assert!(report.lmc.as_ref().expect("lmc statistics").duplicates_suppressed > 0, "{report}");
    assert_eq!(report.completion, Completion::Exhausted, "{report}");
    for duplicates in [0, 1, 2] {
        let options = LmcOptions { duplicates, ..LmcOptions::default() };
        let report = Check::lmc(&retransmit(u8::MAX)).lmc_options(options).run();
        report.assert_holds("fewer deliveries");
        assert_eq!(report.completion, Completion::DepthBound, "{report}");
    }
}

/// The search for an interleaving deepens step by step: it finds node 2's run rather than
/// following node 0 round its cycle for as long as its budget lasts (which it did before, and
/// left the violation undecided).
#[test]
fn soundness_verification_finds_a_short_run_beside_endless_ones() {
    let model = chatter("node 2 below its count", |count| count < COUNT);
    for mode in [LmcMode::General, LmcMode::Projected] {
        let report = lmc(&model, mode);
        let violation = report.assert_violated("node 2 below its count");
        assert_eq!(violation.trace.steps.len(), COUNT as usize, "{}", violation.trace.to_text(false));
        Simulator::new(&model).unwrap().replay(&violation.trace).expect("the trace replays");
        let stats = report.lmc.as_ref().expect("lmc statistics");
        assert!(stats.positions < 1_000, "{} positions examined", stats.positions);
    }
}

/// Node 0, on its input, arms a retransmission timer; each time it fires, node 0 sends `Data`
/// to node 1 and arms it again, its state as it was: a self-reference that sends. Node 1
/// counts what it takes. Only repeating the self-reference puts a second copy, or a third, in
/// flight.
struct Retransmit;

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Data;

impl Protocol for Retransmit {
    type State = u8;
    type Msg = Data;
    type Timer = ();
    type Input = ();

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> u8 {
        0
    }

    fn on_input(&self, _: NodeId, _: &mut u8, _: &(), out: &mut Out<'_, Self>) {
        out.set_timer((), 100);
    }

    fn on_timer(&self, _: NodeId, _: &mut u8, _: &(), out: &mut Out<'_, Self>) {
        out.send(NodeId(1), Data);
        out.set_timer((), 100);
    }

    fn on_message(&self, _: NodeId, taken: &mut u8, _: NodeId, _: &Data, _: &mut Out<'_, Self>) {
        *taken += 1;
    }
}

/// `Retransmit`'s model: node 1 takes `Data` fewer than `times` times.
fn retransmit(times: u8) -> Model<Retransmit> {
    Model::new(Retransmit)
        .nodes(2)
        .network(NetworkKind::Unordered)
        .driver(Driver::new().input(NodeId(0), ()))
        .always("fewer deliveries", move |w| *w.state(NodeId(1)) < times)
}

/// A self-reference that sends is a step of real runs, and may be taken again: the messages it
/// sent have a producer in soundness verification (before, none, and every violation needing
/// one was refuted), each copy the duplicate limit allows is delivered, and the next copy
/// bounds the run rather than letting it claim every reachable world.
#[test]
fn a_self_reference_that_sends_produces_every_copy_the_limit_allows() {
    for (times, duplicates) in [(1, 0), (2, 1), (3, 2)] {
        let model = retransmit(times);
        for mode in [LmcMode::General, LmcMode::Projected] {
            let options = LmcOptions { mode, duplicates, ..LmcOptions::default() };
            let report = Check::lmc(&model).lmc_options(options).run();
            let violation = report.assert_violated("fewer deliveries");
            // The input, a timer per copy (the search may take one more) and a delivery of each.
            let text = violation.trace.to_text(false);
            let steps = &violation.trace.steps;
            let deliveries = steps.iter().filter(|step| step.node == NodeId(1)).count();
            let timers = steps.iter().filter(|step| step.node == NodeId(0)).count() - 1;
            assert_eq!(deliveries, times as usize, "{text}");
            assert!(timers >= deliveries && timers <= deliveries + 1, "{text}");
            Simulator::new(&model).unwrap().replay(&violation.trace).expect("the trace replays");
        }
    }
    // One copy more than the limit allows is needed: no violation, and no claim of completeness.
    let options = LmcOptions { duplicates: 1, ..LmcOptions::default() };
    let report = Check::lmc(&retransmit(3)).lmc_options(options).run();
    report.assert_holds("fewer deliveries");
    assert!(report.lmc.as_ref().expect("lmc statistics").duplicates_suppressed > 0, "{report}");
    assert_eq!(report.completion, Completion::DepthBound, "{report}");
}

/// Node 0's spontaneous input flips it between two states, and each flip up sends node 1 a
/// `Ping`: a cycle of two local states that sends, which the path round it repeats. Node 1
/// counts what it takes. The flip down leads back to the start state, whose first path sent no
/// ping, so the copies of the next round are numbered as the first round's were: only a
/// second copy put in flight where that cycle closes lets node 1 take two.
struct Flipper;

impl Protocol for Flipper {
    type State = u8;
    type Msg = Ping;
    type Timer = ();
    type Input = ();

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> u8 {
        0
    }

    fn on_input(&self, _: NodeId, up: &mut u8, _: &(), out: &mut Out<'_, Self>) {
        *up ^= 1;
        if *up == 1 {
            out.send(NodeId(1), Ping);
        }
    }

    fn on_message(&self, _: NodeId, taken: &mut u8, _: NodeId, _: &Ping, _: &mut Out<'_, Self>) {
        *taken += 1;
    }
}

/// `Flipper`'s model: node 1 takes a ping fewer than `times` times.
fn flipper(times: u8) -> Model<Flipper> {
    Model::new(Flipper)
        .nodes(2)
        .network(NetworkKind::Unordered)
        .driver(Driver::new().spontaneous(NodeId(0), ()))
        .always("fewer pings", move |w| *w.state(NodeId(1)) < times)
}

/// Node 0 retransmits `Req` to node 1 on a timer (a self-reference that sends); node 1 answers
/// each with `Ack` to node 2 and stays as it was (a delivery that changes nothing but replies);
/// node 2 counts the acks. Each copy of the request node 1 takes sends one more ack.
struct Echo;

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
enum EchoMsg {
    Req,
    Ack,
}

impl Protocol for Echo {
    type State = u8;
    type Msg = EchoMsg;
    type Timer = ();
    type Input = ();

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> u8 {
        0
    }

    fn on_input(&self, _: NodeId, _: &mut u8, _: &(), out: &mut Out<'_, Self>) {
        out.set_timer((), 100);
    }

    fn on_timer(&self, _: NodeId, _: &mut u8, _: &(), out: &mut Out<'_, Self>) {
        out.send(NodeId(1), EchoMsg::Req);
        out.set_timer((), 100);
    }

    fn on_message(&self, me: NodeId, acks: &mut u8, _: NodeId, msg: &EchoMsg, out: &mut Out<'_, Self>) {
        match (me.index(), msg) {
            (1, EchoMsg::Req) => out.send(NodeId(2), EchoMsg::Ack),
            (2, EchoMsg::Ack) => *acks += 1,
            _ => out.disable(),
        }
    }
}

/// `Echo`'s model: node 2 takes an ack fewer than `times` times.
fn echo(times: u8) -> Model<Echo> {
    Model::new(Echo)
        .nodes(3)
        .network(NetworkKind::Unordered)
        .driver(Driver::new().input(NodeId(0), ()))
        .always("fewer acks", move |w| *w.state(NodeId(2)) < times)
}

/// Messages sent round a cycle of several local states, and the replies of a delivery that
/// changes nothing, are sent again by the runs that go round again: each copy the duplicate
/// limit allows is put in flight, so a violation needing them is found (before, the receiver
/// was given one copy and the run said the property held in every reachable world), and where
/// the limit keeps a copy out the run says it was bounded.
#[test]
fn copies_sent_round_cycles_and_by_replies_reach_their_receivers() {
    fn found<P: Protocol>(model: &Model<P>, property: &str, duplicates: u32) -> usize {
        let mut lengths = Vec::new();
        for mode in [LmcMode::General, LmcMode::Projected] {
            let options = LmcOptions { mode, duplicates, ..LmcOptions::default() };
            let report = Check::lmc(model).lmc_options(options).run();
            let violation = report.assert_violated(property);
            Simulator::new(model).unwrap().replay(&violation.trace).expect("the trace replays");
            lengths.push(violation.trace.steps.len());
        }
        lengths[0]
    }
    fn bounded<P: Protocol>(model: &Model<P>, property: &str, duplicates: u32) {
        let options = LmcOptions { duplicates, ..LmcOptions::default() };
        let report = Check::lmc(model).lmc_options(options).run();
        println!("{report}");
        report.assert_holds(property);
        assert_eq!(report.completion, Completion::DepthBound, "{report}");
    }
    for (times, duplicates) in [(2, 1), (3, 2)] {
        // Two flips a ping, and its delivery.
        assert!(found(&flipper(times), "fewer pings", duplicates) >= 3 * times as usize - 1);
        // The input, then a timer, a request's delivery and an ack's per ack.
        assert!(found(&echo(times), "fewer acks", duplicates) > 3 * times as usize);
    }
    bounded(&flipper(2), "fewer pings", 0);
    bounded(&echo(2), "fewer acks", 0);
    bounded(&flipper(3), "fewer pings", 1);
    bounded(&echo(3), "fewer acks", 1);
}

/// Node 0 grants a lock to its first request and answers `Busy` to every later one; node 1
/// asks, and asks again once granted. A `patient` client ignores `Busy`; the other gives up.
struct Lock {
    patient: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
enum LockMsg {
    Req,
    Grant,
    Busy,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
enum LockState {
    Server { held: bool },
    Waiting,
    Granted,
    Refused,
}

impl Protocol for Lock {
    type State = LockState;
    type Msg = LockMsg;
    type Timer = ();
    type Input = ();

    fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> LockState {
        if me.index() == 0 {
            LockState::Server { held: false }
        } else {
            out.send(NodeId(0), LockMsg::Req);
            LockState::Waiting
        }
    }

    fn on_message(
        &self,
        _: NodeId,
        state: &mut LockState,
        from: NodeId,
        msg: &LockMsg,
        out: &mut Out<'_, Self>,
    ) {
        match (&mut *state, msg) {
            (LockState::Server { held }, LockMsg::Req) => {
                out.send(from, if *held { LockMsg::Busy } else { LockMsg::Grant });
                *held = true;
            }
            (LockState::Waiting, LockMsg::Grant) => {
                out.send(NodeId(0), LockMsg::Req);
                *state = LockState::Granted;
            }
            (_, LockMsg::Busy) if !self.patient => *state = LockState::Refused,
            (_, LockMsg::Busy) => {}
            _ => out.disable(),
        }
    }
}

/// `Lock`'s model: the client is never refused.
fn lock(patient: bool) -> Model<Lock> {
    Model::new(Lock { patient })
        .nodes(2)
        .network(NetworkKind::Unordered)
        .always("never refused", |w| *w.state(NodeId(1)) != LockState::Refused)
}

/// The server's held state keeps the path that took the client's first request, so under
/// the default duplicate limit the second request (a copy beyond it) is never delivered there
/// and no `Busy` is ever sent. The probe of that copy makes one, a message `I+` has no copy of,
/// and probes it in its turn: where the client gives up on it, that is a state the client does
/// not have, the run is bounded, and a limit of 1 finds the refusal; where the client ignores
/// it, the client's states are closed and the run is exhausted.
#[test]
fn a_reply_no_path_sent_is_probed_at_its_receiver() {
    let run = |patient, duplicates| {
        let options = LmcOptions { duplicates, ..LmcOptions::default() };
        let report = Check::lmc(&lock(patient)).lmc_options(options).run();
        println!("{report}");
        report
    };
    let bounded = run(false, 0);
    bounded.assert_holds("never refused");
    assert_eq!(bounded.completion, Completion::DepthBound, "{bounded}");
    let found = run(false, 1);
    let violation = found.assert_violated("never refused");
    Simulator::new(&lock(false)).unwrap().replay(&violation.trace).expect("the trace replays");
    let closed = run(true, 0);
    closed.assert_holds("never refused");
    assert_eq!(closed.completion, Completion::Exhausted, "{closed}");
}

/// With a soundness budget smaller than the one run to the violation, verification gives up:
/// the property is reported undecided (and the verdict says so), not as holding.
#[test]
fn a_violation_left_undecided_is_not_reported_as_holding() {
    let options = LmcOptions { soundness_budget: 1_000, ..LmcOptions::default() };
    let report = Check::lmc(&countdown()).lmc_options(options).run();
    println!("{report}");
    assert!(report.violations.is_empty(), "{report}");
    assert_eq!(report.status("flag down"), Some(Status::Undecided), "{report}");
    assert_eq!(report.verdict(), "undecided");
    let stats = report.lmc.as_ref().expect("lmc statistics");
    assert!(stats.undecided >= 1 && stats.unsound == 0, "{report}");
    let holds = std::panic::catch_unwind(|| {
        report.assert_holds("flag down");
    });
    assert!(holds.is_err(), "assert_holds accepted an undecided property");
}

/// Node 0, on its input, sends node 1 `FLOOD` different numbers, which node 1 ignores; node 1's
/// `RAISE_AT`-th message raises `interrupt`. After node 0's input, no event visits a new state.
struct Flood {
    handled: AtomicU32,
    interrupt: Interrupt,
}

const FLOOD: u32 = 20_000;
const RAISE_AT: u32 = 100;

impl Protocol for Flood {
    type State = bool;
    type Msg = u32;
    type Timer = ();
    type Input = ();

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> bool {
        false
    }

    fn on_input(&self, _: NodeId, sent: &mut bool, _: &(), out: &mut Out<'_, Self>) {
        *sent = true;
        (0..FLOOD).for_each(|n| out.send(NodeId(1), n));
    }

    fn on_message(&self, _: NodeId, _: &mut bool, _: NodeId, _: &u32, _: &mut Out<'_, Self>) {
        if self.handled.fetch_add(1, Ordering::Relaxed) + 1 == RAISE_AT {
            self.interrupt.raise();
        }
    }
}

/// A run stops when told to even where no new local state comes for a long time: the flood's
/// deliveries all leave node 1 as it was, and the run, interrupted at the 100th, ends within a
/// few hundred more of the 20,000 (the stop is polled every 256 events), not after all of them.
#[test]
fn a_run_stops_between_new_states() {
    let interrupt = Interrupt::new();
    let model = Model::new(Flood { handled: AtomicU32::new(0), interrupt: interrupt.clone() })
        .nodes(2)
        .driver(Driver::new().input(NodeId(0), ()))
        .always("true", |_| true);
    let report = Check::lmc(&model).interrupt(interrupt).run();
    println!("{report}");
    assert_eq!(report.completion, Completion::Interrupted, "{report}");
    let handled = model.protocol().handled.load(Ordering::Relaxed);
    assert!((RAISE_AT..RAISE_AT + 1_000).contains(&handled), "{handled} deliveries: {report}");
}
