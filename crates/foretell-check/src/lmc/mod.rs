//! Local model checking: explore nodes, not worlds (LMC, "Local Model Checking of Distributed
//! Systems": section 4's algorithm, section 4.2's implementation and LMC-OPT).
//!
//! The engine keeps each node's visited local states apart and one shared, monotone network of
//! every message ever sent ([`explore`]); builds system states only to check invariants, and
//! only with a newly visited local state ([`combine`]); and reports a violation only once its
//! combination of local states is shown reachable by a real run ([`soundness`], in batches
//! verified as exploration goes: [`verdicts`]; each node kept to the states that can reach its
//! targets: [`reach`]), with a global trace that the ordinary simulator replays.
//!
//! Run it with [`crate::Check::lmc`] or `foretell check SYSTEM --engine lmc`. It starts from the
//! model's one start world — its initial world or a scenario's end — so it can be restarted
//! from live snapshots. It stops at the first sound violation, at a time budget, at a bound on
//! local states ([`crate::Check::states_max`]), or when the local space is exhausted. Local
//! events per node may be bounded, and the bound raised round by round from scratch (the
//! paper's iterative bound); a message sent again on one path is explored at most `duplicates`
//! more times (the paper's limit, 0 by default).
//!
//! Not supported, and refused with the reason: node resets and socket errors (they act on the
//! network, which local states do not have), queue capacities (a send's fate depends on a
//! queue), handlers that read their mailbox and properties that read the network (both would
//! see it empty; found when they first do, which ends the run in the refusal), and channel
//! order on a network that reorders or duplicates messages. Lost messages
//! need no fault, since a local state never has to consume one. `sometimes` and `eventually`
//! properties are not checked.

mod combine;
mod explore;
mod in_flight;
mod reach;
mod soundness;
mod state_set;
mod verdicts;

pub use combine::LmcMode;

use crate::report::kind_name;
use crate::stop::Stop;
use crate::{CheckOptions, Completion, EngineKind, PropertyReport, Report, Stats, Status, Violation};
use combine::{Combiner, Preliminary};
use explore::{Channels, LocalSpace, StateId, Step};
use foretell_model::{
    catch_panic, reads_network, Action, FixedChoices, LocalEvent, ModelError, NetworkKind, NodeId, Property,
    PropertyKind, Protocol, Simulator, Trace, TraceVerdict, World,
};
use serde::{Deserialize, Serialize};
use soundness::{SeqEvent, SoundnessCounts};
use std::cell::{Cell, RefCell};
use std::ops::ControlFlow;
use std::time::Instant;
use verdicts::{Context, Verdicts};

/// What the limits of one exploration cut: whether the local-event bound stopped a local
/// event, and whether the duplicate limit kept a copy of a message out of `I+`. Either makes
/// an exploration that ends without a violation cover less than every reachable local state.
#[derive(Clone, Copy)]
struct Cuts {
    local_events: bool,
    duplicates: bool,
}

/// What local model checking is asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LmcOptions {
    /// How system states are built.
    pub mode: LmcMode,
    /// The most local events (timers, inputs) on a node's path to a state; `None`: no bound.
    pub local_events: Option<u32>,
    /// Raise the local-event bound from 1 round by round, from scratch, up to `local_events`
    /// (or until nothing is bounded).
    pub iterative: bool,
    /// How many more times a message sent again on one path is explored.
    pub duplicates: u32,
    /// The most positions (node states and messages in flight) one soundness verification
    /// examines before it gives up.
    pub soundness_budget: u64,
    /// Never deliver a message after a later one from the same sender (the paper's TCP
    /// augmentation; see `explore`). Only where the network keeps their order and duplicates
    /// nothing: elsewhere the run is refused. Off (the default), local exploration delivers
    /// them in any order and soundness verification alone applies the channels' order.
    #[serde(default)]
    pub channel_order: bool,
}

impl Default for LmcOptions {
    fn default() -> Self {
        LmcOptions {
            mode: LmcMode::General,
            local_events: None,
            iterative: false,
            duplicates: 0,
            soundness_budget: 1 << 20,
            channel_order: false,
        }
    }
}

/// The counts of a local model checking run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LmcStats {
    /// How system states were built.
    pub mode: LmcMode,
    /// Local states visited, per node.
    pub local_states: Vec<u64>,
    /// Messages in the shared network.
    pub messages: u64,
    /// System states built and checked.
    pub system_states: u64,
    /// System states a property was false in.
    pub preliminary_violations: u64,
    /// Preliminary violations shown unreachable.
    pub unsound: u64,
    /// Preliminary violations neither shown reachable nor unreachable: their search ran out of
    /// the soundness budget, or the run stopped (at a bound, or at a sound violation) before
    /// it was verified against the space as it last grew.
    pub undecided: u64,
    /// Soundness verifications run (re-verifications included); one answers for a batch of
    /// preliminary violations (see `verdicts`).
    pub soundness_checks: u64,
    /// Positions (node states and messages in flight) soundness verification examined.
    pub positions: u64,
    /// Handler executions on local states.
    pub transitions: u64,
    /// Local states discarded because their handler failed a local assertion or panicked.
    pub discarded: u64,
    /// The first such failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discarded_example: Option<String>,
    /// Messages sent again on a path beyond the duplicate limit.
    pub duplicates_suppressed: u64,
    /// The local-event bound of the last round (`None`: unbounded).
    pub bound: Option<u32>,
    /// Rounds of the iterative bound run.
    pub rounds: u32,
    /// The longest path to a local state, in events.
    pub deepest_local: u32,
    /// The sum over nodes of their longest path: the longest event sequence a system state
    /// built here could stand for.
    pub deepest_sequence: u32,
}

/// Runs local model checking of `sim`'s model with `options`.
pub(crate) fn run<P: Protocol>(sim: &Simulator<'_, P>, options: &CheckOptions) -> Result<Report, ModelError> {
    crate::prepare_peak();
    let started = Instant::now();
    let model = sim.model();
    let unsupported = |reason: &str| ModelError::EngineUnsupported { engine: "lmc", reason: reason.into() };
    let faults = model.fault_budget();
    if faults.resets.allows(0) || faults.socket_errors.allows(0) {
        return Err(unsupported(
            "node resets and socket errors are not explored locally (set their budget to 0)",
        ));
    }
    if model.queue_capacity_limit().is_some() {
        return Err(unsupported(
            "a queue capacity needs the network's queues, which local steps do not have",
        ));
    }
    if options.lmc.channel_order {
        if let Some(reason) =
            channel_order_refusal(model.network_kind(), model.fault_budget().duplicates.allows(0))
        {
            return Err(unsupported(reason));
        }
    }
    let mut starts = Vec::new();
    sim.initial_worlds(|choices, world, violation| starts.push((choices, world, violation)));
    if starts.len() != 1 {
        return Err(unsupported(&format!(
            "it starts from one world, and this model has {} initial worlds (start it from a scenario)",
            starts.len()
        )));
    }
    let (init_choices, start, init_violation) = starts.pop().expect("one start world");
    let combiner = || {
        Combiner::new(model.properties(), model.projections(), options.lmc.mode, model.node_count())
            .map_err(|reason| unsupported(&reason))
    };
    combiner()?;
    let mut run = Run {
        sim,
        options,
        started,
        init_choices,
        start,
        stats: LmcStats { mode: options.lmc.mode, ..LmcStats::default() },
        soundness: SoundnessCounts::default(),
        stopper: Stopper {
            limits: Stop::new(started, options.timeout, options.interrupt.clone()),
            memory_max: options.memory_max,
            calls: Cell::new(0),
            stop: Cell::new(None),
            refusal: RefCell::new(None),
        },
        undecided: Vec::new(),
    };
    if let Some(violation) = init_violation.or_else(|| sim.violated_invariant(&run.start)) {
        let trace = run.trace(&[]);
        let found = Violation {
            property: violation.property,
            kind: violation.kind,
            message: violation.message,
            trace,
        };
        return Ok(run.report(Some(found), false));
    }
    // The iterative bound starts at 1 and grows until nothing is cut (or its maximum).
    let (mut bound, max) = match options.lmc.iterative {
        true => (Some(1), options.lmc.local_events.unwrap_or(u32::MAX)),
        false => (options.lmc.local_events, 0),
    };
    let (found, cuts) = loop {
        let mut combiner = combiner()?;
        run.stats.rounds += 1;
        run.stats.bound = bound;
        let (found, cuts) = run.explore(bound, &mut combiner);
        if let Some(reason) = run.stopper.refusal.take() {
            return Err(unsupported(&reason));
        }
        let last = bound.is_none_or(|b| b >= max);
        if found.is_some() || run.stopper.stop.get().is_some() || !cuts.local_events || last {
            break (found, cuts);
        }
        bound = bound.map(|b| b + 1);
    };
    Ok(run.report(found, cuts.local_events || cuts.duplicates))
}

/// Why local exploration cannot keep channel order ([`explore`]) on `network`, where
/// `duplicates` says whether the model may duplicate a message; `None` where it can. It is
/// sound only where a sender's messages to one node arrive in the order sent (FIFO channels or
/// inboxes) and none is duplicated.
fn channel_order_refusal(network: NetworkKind, duplicates: bool) -> Option<&'static str> {
    match network {
        NetworkKind::Unordered | NetworkKind::GrowOnly => {
            Some("channel order needs FIFO channels or inboxes, and this network delivers in any order")
        }
        NetworkKind::FifoChannels | NetworkKind::FifoInbox if duplicates => Some(
            "channel order cannot be kept where the network may duplicate a message (set its budget to 0)",
        ),
        NetworkKind::FifoChannels | NetworkKind::FifoInbox => None,
    }
}

/// One run's state besides the local space.
struct Run<'r, 's, 'm, P: Protocol> {
    sim: &'s Simulator<'m, P>,
    options: &'r CheckOptions,
    started: Instant,
    init_choices: Vec<usize>,
    start: World<P>,
    stats: LmcStats,
    soundness: SoundnessCounts,
    stopper: Stopper,
    /// Per property: whether the last exploration left a preliminary violation of it undecided.
    undecided: Vec<bool>,
}

impl<P: Protocol> Run<'_, '_, '_, P> {
    /// Explores the local space with local-event `bound` until it is exhausted, a sound
    /// violation is found or the run is stopped. Returns the violation and what the limits
    /// cut.
    fn explore(&mut self, bound: Option<u32>, combiner: &mut Combiner<P>) -> (Option<Violation>, Cuts) {
        // An earlier round's space is dropped before this one starts: the memory budget sees
        // this round's own.
        crate::teardown::settle();
        let sim = self.sim;
        let in_flight = self.start.messages().cloned().collect::<Vec<_>>();
        let locals = sim.local_states(&self.start);
        let channels = Channels::new(sim.model().node_count(), self.options.lmc.channel_order);
        let mut space = LocalSpace::new(sim, locals, in_flight, bound, self.options.lmc.duplicates, channels);
        let budget = self.options.lmc.soundness_budget.max(1);
        let verdicts = RefCell::new(Verdicts::new(self.soundness));
        let stopper = &self.stopper;
        let states_max = self.options.states_max;
        let combiner = RefCell::new(combiner);
        let mut fresh = |space: &LocalSpace<'_, '_, P>, node: NodeId, state: StateId| -> ControlFlow<()> {
            if states_max.is_some_and(|max| space.state_count() > max) {
                stopper.stop.set(Some(Completion::StatesBound));
            }
            if stopper.stopped() {
                return ControlFlow::Break(());
            }
            combiner.borrow_mut().visit(
                space,
                sim,
                node,
                state,
                stopper,
                &mut |candidate: Preliminary| {
                    verdicts.borrow_mut().note(candidate);
                    ControlFlow::Continue(())
                },
            )?;
            let combiner = &combiner.borrow();
            let work = exploration_work(space, combiner);
            let mut verdicts = verdicts.borrow_mut();
            if !verdicts.due(work) {
                return ControlFlow::Continue(());
            }
            verdicts.verify_fresh(&Context { space, sim, combiner, budget, work, stopper })
        };
        let mut flow = space.visit_roots(&mut fresh);
        let mut merges = space.merges();
        while flow.is_continue() {
            match space.round(stopper, &mut fresh) {
                ControlFlow::Break(()) => flow = ControlFlow::Break(()),
                ControlFlow::Continue(progress) => {
                    // The round's preliminary violations are verified, and the earlier ones
                    // again: new states and predecessor pointers may make one sound (the
                    // re-verification section 4.2 calls for).
                    if progress || space.merges() != merges {
                        merges = space.merges();
                        let combiner = &combiner.borrow();
                        let work = exploration_work(&space, combiner);
                        let cx = Context { space: &space, sim, combiner, budget, work, stopper };
                        if verdicts.borrow_mut().verify_all(&cx).is_break() {
                            break;
                        }
                    }
                    if !progress {
                        break;
                    }
                }
            }
        }
        if let Some(node) = space.network_reader {
            self.stopper
                .refuse(format!("a handler of {node} read its mailbox, which local steps do not have"));
        }
        let verdicts = verdicts.into_inner();
        self.soundness = verdicts.verifier.counts;
        self.stats.preliminary_violations += verdicts.preliminary;
        self.undecided = vec![false; sim.model().properties().len()];
        for batch in verdicts.batches() {
            if batch.undecided {
                self.undecided[batch.property] = true;
                self.stats.undecided += batch.combinations;
            } else {
                self.stats.unsound += batch.combinations;
            }
        }
        self.note_space(&space, combiner.into_inner());
        let violation = verdicts.sound.map(|order| self.violation(&space, &order));
        let cuts = Cuts { local_events: space.bounded, duplicates: space.duplicates_cut() };
        space.release(self.started);
        (violation, cuts)
    }

    /// Records the space's counts in the statistics.
    fn note_space(&mut self, space: &LocalSpace<'_, '_, P>, combiner: &Combiner<P>) {
        let s = &mut self.stats;
        s.local_states = space.nodes.iter().map(|n| n.states.len() as u64).collect();
        s.messages = space.messages.len() as u64;
        s.transitions += space.counts.transitions;
        s.discarded += space.counts.discarded;
        s.duplicates_suppressed += space.counts.duplicates_suppressed;
        if s.discarded_example.is_none() {
            s.discarded_example = space.discarded_example.as_ref().map(|v| v.message.clone());
        }
        let deepest: Vec<u32> =
            space.nodes.iter().map(|n| n.states.iter().map(|s| s.depth).max().unwrap_or(0)).collect();
        s.deepest_local = s.deepest_local.max(deepest.iter().copied().max().unwrap_or(0));
        s.deepest_sequence = s.deepest_sequence.max(deepest.iter().sum());
        s.system_states += combiner.built;
    }

    /// The violation soundness verification found, with the global trace of its `order`
    /// re-executed by the ordinary simulator. Soundness verification follows the simulator's
    /// own semantics, so an order that does not re-execute into a violation means that a
    /// handler is not a function of its state, event and choices: that is the finding then.
    fn violation(&mut self, space: &LocalSpace<'_, '_, P>, order: &[(NodeId, SeqEvent)]) -> Violation {
        let sim = self.sim;
        let mut world = self.start.clone();
        let mut steps: Vec<(Action, Vec<usize>)> = Vec::with_capacity(order.len());
        let mut parted = None;
        for &(node, event) in order {
            let states = &space.nodes[node.index()];
            let pred = states.pred(event.pred);
            let local_event = match pred.step {
                Step::Deliver(m) => LocalEvent::Deliver(&space.messages[m as usize].envelope),
                Step::Local(action) => action.event(),
            };
            let global = sim.local_event(node, &states.states[pred.from as usize].local, local_event);
            let Some(action) = sim.find_action(&world, &global) else {
                parted = Some("its event is not enabled in the world the steps before it reach".to_string());
                break;
            };
            let choices = states.choices(pred);
            let mut chooser = FixedChoices::new(choices);
            let outcome = sim.step(&world, action, &mut chooser, false);
            if let Err(problem) = chooser.finish() {
                parted = Some(format!("its handler chose differently: {problem}"));
                break;
            }
            world = outcome.world;
            steps.push((action, choices.to_vec()));
        }
        let mut trace = self.trace(&steps);
        // A violation the re-executed steps reach stands; otherwise the order parted.
        if trace.verdict.is_none() {
            trace.verdict = Some(match parted {
                Some(problem) => TraceVerdict::parted(steps.len() + 1, &problem),
                None => TraceVerdict::parted(steps.len(), "the order reaches no violation"),
            });
        }
        let verdict = trace.verdict.as_ref().expect("a verdict was just made sure of");
        Violation {
            property: verdict.property.clone(),
            kind: verdict.kind,
            message: verdict.message.clone(),
            trace,
        }
    }

    /// The trace of `steps` from the start world.
    fn trace(&self, steps: &[(Action, Vec<usize>)]) -> Trace {
        let mut trace = self.sim.record(&self.init_choices, steps);
        trace.engine = Some(EngineKind::Lmc.name().into());
        trace
    }

    /// The report, with the sound violation `found` if any; `bounded` when a limit cut the
    /// exploration ([`Cuts`]).
    fn report(mut self, found: Option<Violation>, bounded: bool) -> Report {
        let seconds = self.started.elapsed().as_secs_f64();
        self.stats.soundness_checks = self.soundness.checks;
        self.stats.positions = self.soundness.positions;
        let completion = match (&found, self.stopper.stop.get()) {
            (Some(_), _) => Completion::Violation,
            (None, Some(stop)) => stop,
            (None, None) if bounded => Completion::DepthBound,
            (None, None) => Completion::Exhausted,
        };
        let violations: Vec<Violation> = found.into_iter().collect();
        let model = self.sim.model();
        let mut properties = PropertyReport::for_search(model.properties(), &[], &violations);
        for (i, (line, property)) in properties.iter_mut().zip(model.properties()).enumerate() {
            if property.kind() != PropertyKind::Always {
                line.status = Status::NotChecked;
            } else if self.undecided.get(i) == Some(&true) && line.status == Status::Holds {
                line.status = Status::Undecided;
            }
            debug_assert_eq!(line.kind, kind_name(property.kind()));
        }
        let stats = Stats {
            unique_states: self.stats.local_states.iter().sum(),
            transitions: self.stats.transitions,
            max_depth: self.stats.deepest_local as usize,
            visited_bytes: 0,
            seconds,
            peak_memory: crate::peak_resident_bytes(),
        };
        Report {
            engine: EngineKind::Lmc,
            completion,
            properties,
            violations,
            stats,
            omission: None,
            lmc: Some(self.stats),
        }
    }
}

/// How much work local exploration has done: its transitions and the system states it built.
fn exploration_work<P: Protocol>(space: &LocalSpace<'_, '_, P>, combiner: &Combiner<P>) -> u64 {
    space.counts.transitions + combiner.worlds
}

/// Whether `property` is false in `world` (a predicate that panics counts as false, as in the
/// global engines). A property that reads the network, which system states here do not have,
/// would be judged on an empty one: the run is refused (through `stopper`) instead.
pub(crate) fn is_false<P: Protocol>(property: &Property<P>, world: &World<P>, stopper: &Stopper) -> bool {
    let (holds, read) = reads_network(|| catch_panic(|| property.holds(world)));
    if read {
        stopper.refuse(format!(
            "the property {:?} reads the network, which local model checking's system states do not have",
            property.name()
        ));
    }
    !holds.unwrap_or(false)
}

/// Stops a run at its time budget, at its memory budget or when it is interrupted: asked often,
/// it looks at the clock and the process's memory (a recent reading, [`crate::over_budget`])
/// once in a while.
pub(crate) struct Stopper {
    /// The time budget and the interrupt, as every engine asks them.
    limits: Stop,
    memory_max: Option<u64>,
    calls: Cell<u32>,
    stop: Cell<Option<Completion>>,
    /// Why the model turned out to be one this engine cannot check, found during the run.
    refusal: RefCell<Option<String>>,
}

impl Stopper {
    /// Stops the run because the model needs what this engine does not have: the run ends in
    /// an error saying `reason`, not a report.
    pub(crate) fn refuse(&self, reason: String) {
        self.refusal.borrow_mut().get_or_insert(reason);
        self.stop.set(Some(Completion::Interrupted));
    }

    /// Whether the run must stop.
    pub(crate) fn stopped(&self) -> bool {
        if self.stop.get().is_some() {
            return true;
        }
        let calls = self.calls.get().wrapping_add(1);
        self.calls.set(calls);
        if calls % 256 != 0 {
            return false;
        }
        if let Some(reason) = self.limits.poll() {
            self.stop.set(Some(reason));
        } else if crate::over_budget(self.memory_max) {
            self.stop.set(Some(Completion::MemoryBound));
        }
        self.stop.get().is_some()
    }
}

impl std::fmt::Display for LmcStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mode = match self.mode {
            LmcMode::General => "general",
            LmcMode::Projected => "projected",
        };
        let per_node: Vec<String> = self.local_states.iter().map(u64::to_string).collect();
        write!(
            f,
            "lmc ({mode}): local states {} per node, {} messages, {} system states, {} preliminary violations \
             ({} unsound), {} soundness checks over {} positions",
            per_node.join("/"),
            self.messages,
            self.system_states,
            self.preliminary_violations,
            self.unsound,
            self.soundness_checks,
            self.positions,
        )?;
        if self.undecided > 0 {
            write!(
                f,
                " ({} preliminary violations undecided: out of budget, or not verified when the run stopped)",
                self.undecided
            )?;
        }
        write!(f, ", longest local path {}, longest sequence {}", self.deepest_local, self.deepest_sequence)?;
        if let Some(bound) = self.bound {
            write!(f, ", local-event bound {bound} (round {})", self.rounds)?;
        }
        if self.discarded > 0 {
            write!(f, "\nlocal states discarded by a failed local assertion: {}", self.discarded)?;
            if let Some(example) = &self.discarded_example {
                write!(f, " (first: {example})")?;
            }
        }
        if self.duplicates_suppressed > 0 {
            write!(f, "\nduplicate messages beyond the limit: {}", self.duplicates_suppressed)?;
        }
        Ok(())
    }
}
