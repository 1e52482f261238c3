//! One execution of a program under a scheduler, watched for liveness violations: P#'s
//! `EXECPROGRAM` with `CHECKTEMP`, `CHECKLASSO` and `REPLAYCYCLE` (FMCAD'17 "Lasso Detection
//! using Partial-State Caching", section III, Algorithms 1 to 4).
//!
//! Each step appends a trace event — the scheduled process, the event's shape, the sources
//! enabled in the source world, whether it was hot, and its partial hash (the model's
//! [`PartialHash`] with the monitors' states) — plus the choice sites its handler used. The
//! temperature method reports `TT` consecutive hot worlds. The caching method looks up each new
//! world's hash among the trace's earlier ones; a repeat proposes the segment since as a cycle,
//! which is considered only if it is hot and fair — every source enabled in it is taken in it,
//! and every choice site used in it takes each of its values — and is then *replayed* `RT`
//! times: the cycle's processes are scheduled again (each with an event of the same shape, its
//! handler given the same choices), and every world must match the cycle's enabled sources, stay
//! hot and hash the same. A replay that fails is a discarded cycle (the paper's `D`); the
//! execution goes on from where the replay stopped, as the paper's does. Candidates are tried
//! most recent first (the shortest cycle first) where the paper tries them in random order.
//!
//! Fairness is owed to event *sources*, not to whole processes as in the paper: a source is an
//! event's shape (its node, and its timer, its input, or the peer and kind of its message), so
//! a node that takes one of its timers for ever while a message to it waits is not fairly
//! scheduled. P# owes fairness to machines because a machine takes its inbox in order; a node
//! here chooses among its events, as an unordered network lets it. Faults are owed nothing.
//!
//! Both methods also report an execution that stops, with nothing enabled, in a hot world.
//!
//! Only steps that change something are steps. An event whose handler leaves the world and the
//! monitors as they were without choosing (one it declares not enabled, or a timer that only
//! re-arms itself) is no step: the scheduler picks again among the rest, and a world that no
//! event changes is where the execution stops. Such an event does not take its source. A source
//! enabled in a candidate cycle but never taken in it leaves the cycle fair only if none of its
//! events changes any world of the cycle (its only events are idle ones, as a heartbeat timer's
//! that only re-arms itself): the replay's first pass tries them.

use super::scheduler::Scheduler;
use super::LassoOptions;
use foretell_model::{
    Action, Chooser, FingerprintHasher, Model, MonitorState, Observation, PartialHash, Protocol, Simulator,
    StepViolation, Temperature, World,
};
use rustc_hash::FxHashMap;
use std::panic::Location;

/// The steps of an execution, replayable: each action with its handler's choice values.
pub(crate) type Steps = Vec<(Action, Vec<usize>)>;

/// How lasso detection decides that an execution violates liveness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Partial-state caching with replay (Algorithms 3 and 4).
    Caching,
    /// The temperature threshold (Algorithm 2).
    Temperature,
}

/// What one execution found.
pub(crate) enum Found {
    /// A hot, fair cycle confirmed by replay: the steps are the stem and one iteration; `cycle`
    /// is the iteration as the replay matches it.
    Lasso { cycle_start: usize, cycle: Vec<CycleStep> },
    /// `TT` consecutive hot worlds.
    TooHot,
    /// The execution stopped in a hot world with nothing enabled.
    EndsHot,
    /// A step violated a safety property.
    Safety(StepViolation),
}

/// One execution's result.
pub(crate) struct Executed<P: Protocol> {
    /// The initial world's choices.
    pub(crate) init_choices: Vec<usize>,
    /// The steps up to the finding (for a lasso: the stem and one cycle iteration).
    pub(crate) steps: Steps,
    pub(crate) found: Option<Found>,
    /// Steps executed, replays included.
    pub(crate) executed: u64,
    /// Hot, fair candidate cycles whose replay failed.
    pub(crate) discarded: u64,
    /// The world and monitors at the finding, to confirm it.
    pub(crate) last: Option<(World<P>, Vec<MonitorState>)>,
}

/// A step of a cycle as a replay matches it: the event's shape, its process and its handler's
/// choices.
pub(crate) type CycleStep = (u64, u32, Vec<usize>);

/// The world fingerprint combined with the monitors' states: equal before and after a step
/// that changed nothing.
pub(crate) fn fingerprint<P: Protocol>(world: &World<P>, monitors: &[MonitorState]) -> u128 {
    monitors.iter().fold(world.fingerprint().0, |acc, state| {
        FingerprintHasher::mix(acc as u64 ^ (acc >> 64) as u64, xxhash_rust::xxh3::xxh3_128(state.bytes()))
    })
}

/// Whether a step from the world whose [`fingerprint`] is `here` that made `choices` and
/// reached `world` with `monitors` was an idle event: no change, no choice — no step.
pub(crate) fn is_idle<P: Protocol>(
    here: u128,
    choices: &[usize],
    world: &World<P>,
    monitors: &[MonitorState],
) -> bool {
    choices.is_empty() && fingerprint(world, monitors) == here
}

/// Process number of the environment (faults), after the nodes.
pub(crate) fn environment(model_nodes: usize) -> u32 {
    model_nodes as u32
}

/// A trace event of Algorithm 1, with what the fairness check and the replay need.
struct TraceEvent {
    process: u32,
    /// The shape of the event (its kind, node, peer, and message kind or timer), which the
    /// replay matches instead of its exact payload; for a node's event, also its source.
    shape: u64,
    choices: Vec<usize>,
    /// Choice sites used, as (site, value, arity).
    sites: Vec<(u32, u32, u32)>,
    /// The sources enabled in the world the step left, by [`EnabledSets`] id.
    enabled: u32,
    hash: u64,
}

/// Sets of enabled sources, each stored once per execution: consecutive worlds mostly enable
/// the same sources, and the replay compares sets by id.
#[derive(Default)]
struct EnabledSets {
    sets: Vec<Vec<u64>>,
    ids: FxHashMap<Vec<u64>, u32>,
}

impl EnabledSets {
    /// The id of `set` (sorted, without duplicates).
    fn id(&mut self, set: &[u64]) -> u32 {
        if let Some(&id) = self.ids.get(set) {
            return id;
        }
        let id = self.sets.len() as u32;
        self.sets.push(set.to_vec());
        self.ids.insert(set.to_vec(), id);
        id
    }

    fn get(&self, id: u32) -> &[u64] {
        &self.sets[id as usize]
    }
}

/// Interns choice sites as small numbers. A site is the source location of a `choose` call
/// as one process runs it: each node's coin is owed fairness of its own (two timers running
/// the same code are two sites).
#[derive(Default)]
pub(crate) struct Sites(FxHashMap<(u32, &'static str, u32, u32), u32>);

impl Sites {
    pub(crate) fn id(&mut self, process: u32, site: &'static Location<'static>) -> u32 {
        let next = self.0.len() as u32;
        *self.0.entry((process, site.file(), site.line(), site.column())).or_insert(next)
    }
}

/// The chooser of a step: the scheduler's answers (or a cycle's recorded ones on replay),
/// with the sites noted.
struct StepChooser<'a> {
    scheduler: &'a mut Scheduler,
    /// The process whose handler runs.
    process: u32,
    sites: &'a mut Sites,
    replay: Option<&'a [usize]>,
    /// The replay asked something the cycle did not record.
    diverged: bool,
    used: Vec<(u32, u32, u32)>,
}

impl Chooser for StepChooser<'_> {
    fn choose(&mut self, n: usize) -> usize {
        self.scheduler.next_choice(n)
    }

    fn choose_at(&mut self, n: usize, site: &'static Location<'static>) -> usize {
        let value = match self.replay.and_then(|values| values.get(self.used.len())) {
            Some(&value) if value < n => value,
            recorded => {
                self.diverged |= recorded.is_some() || self.replay.is_some();
                self.scheduler.next_choice(n)
            }
        };
        let site = self.sites.id(self.process, site);
        self.used.push((site, value as u32, n as u32));
        value
    }
}

/// A step taken and observed.
pub(crate) struct Stepped<P: Protocol> {
    pub(crate) world: World<P>,
    pub(crate) monitors: Vec<MonitorState>,
    pub(crate) choices: Vec<usize>,
}

/// A world with what the engine knows of it.
struct Current<P: Protocol> {
    world: World<P>,
    monitors: Vec<MonitorState>,
    hot: bool,
    hash: u64,
}

/// The per-model part of every execution: simulator, monitors, hash.
pub(crate) struct Executor<'s, 'm, P: Protocol> {
    pub(crate) sim: &'s Simulator<'m, P>,
    pub(crate) model: &'m Model<P>,
    pub(crate) monitors: &'s [foretell_model::DynMonitor<P>],
    pub(crate) hash: &'s PartialHash<P>,
    pub(crate) options: &'s LassoOptions,
    pub(crate) method: Method,
}

impl<P: Protocol> Executor<'_, '_, P> {
    /// Whether `monitors` are hot.
    pub(crate) fn hot(&self, monitors: &[MonitorState]) -> bool {
        self.monitors.iter().zip(monitors).any(|(m, s)| m.temperature(s) == Temperature::Hot)
    }

    fn current(&self, world: World<P>, monitors: Vec<MonitorState>) -> Current<P> {
        let hot = self.hot(&monitors);
        let mut hash = self.hash.of(self.model.protocol(), &world);
        for state in &monitors {
            hash = FingerprintHasher::mix(hash, xxhash_rust::xxh3::xxh3_128(state.bytes())) as u64;
        }
        Current { world, monitors, hot, hash }
    }

    /// The enabled actions of `world` with their processes.
    pub(crate) fn enabled(&self, world: &World<P>, actions: &mut Vec<Action>, processes: &mut Vec<u32>) {
        self.sim.actions(world, actions);
        processes.clear();
        let env = environment(self.model.node_count());
        processes
            .extend(actions.iter().map(|&action| self.sim.process_of(world, action).map_or(env, |n| n.0)));
    }

    /// The sources owed fairness among `actions` of `world`, into `sources`, sorted and without
    /// duplicates.
    fn enabled_sources(&self, world: &World<P>, actions: &[Action], sources: &mut Vec<u64>) {
        sources.clear();
        sources.extend(actions.iter().filter_map(|&action| self.source(world, action)));
        sources.sort_unstable();
        sources.dedup();
    }

    /// The source `action` takes in `world`: its shape, or `None` for a fault, which is owed no
    /// fairness.
    pub(crate) fn source(&self, world: &World<P>, action: Action) -> Option<u64> {
        self.sim.process_of(world, action).map(|_| self.sim.event_shape(world, action))
    }

    /// Runs `action` with `chooser` and observes it: the next world and monitors, or the
    /// violation it caused.
    pub(crate) fn step(
        &self,
        world: &World<P>,
        monitors: &[MonitorState],
        action: Action,
        chooser: &mut dyn Chooser,
    ) -> Result<Stepped<P>, StepViolation> {
        let outcome = self.sim.observed_step(world, action, chooser);
        if let Some(violation) = outcome.violation {
            return Err(violation);
        }
        if let Some(violation) = self.sim.violated_invariant(&outcome.world) {
            return Err(violation);
        }
        let record = outcome.record.expect("an observed step records its event");
        let observation =
            Observation { before: world, event: &record.event, sent: &record.sent, after: &outcome.world };
        let mut next = monitors.to_vec();
        for (monitor, state) in self.monitors.iter().zip(&mut next) {
            monitor.observe(state, &observation);
        }
        Ok(Stepped { world: outcome.world, monitors: next, choices: outcome.choices })
    }

    /// The action of `process` among `actions` (with their `processes`) whose event in `world`
    /// has `shape`: the step a replay takes.
    fn matching(
        &self,
        world: &World<P>,
        actions: &[Action],
        processes: &[u32],
        process: u32,
        shape: u64,
    ) -> Option<Action> {
        actions.iter().zip(processes).find_map(|(&action, &p)| {
            (p == process && self.sim.event_shape(world, action) == shape).then_some(action)
        })
    }

    /// Runs one execution (Algorithm 1) from `init` under `scheduler`.
    pub(crate) fn execute(
        &self,
        init: (&[usize], &World<P>),
        scheduler: &mut Scheduler,
        sites: &mut Sites,
    ) -> Executed<P> {
        let monitors = self.monitors.iter().map(|m| m.init(init.1)).collect();
        let mut run = Run {
            exec: self,
            current: self.current(init.1.clone(), monitors),
            trace: Vec::new(),
            steps: Vec::new(),
            seen: FxHashMap::default(),
            last_cold: None,
            temperature: 0,
            executed: 0,
            discarded: 0,
            actions: Vec::new(),
            processes: Vec::new(),
            enabled_sets: EnabledSets::default(),
            sources: Vec::new(),
            idle: FxHashMap::default(),
        };
        let found = run.go(scheduler, sites);
        let last = found.is_some().then(|| (run.current.world.clone(), run.current.monitors.clone()));
        let steps = match &found {
            Some(Found::Lasso { cycle_start, cycle }) => {
                run.steps.truncate(cycle_start + cycle.len());
                run.steps
            }
            _ => run.steps,
        };
        Executed {
            init_choices: init.0.to_vec(),
            steps,
            found,
            executed: run.executed,
            discarded: run.discarded,
            last,
        }
    }
}

/// The state of one execution.
struct Run<'e, 's, 'm, P: Protocol> {
    exec: &'e Executor<'s, 'm, P>,
    current: Current<P>,
    trace: Vec<TraceEvent>,
    steps: Steps,
    /// Trace positions by hash.
    seen: FxHashMap<u64, Vec<u32>>,
    /// The last trace position whose world was not hot.
    last_cold: Option<usize>,
    temperature: usize,
    executed: u64,
    discarded: u64,
    actions: Vec<Action>,
    processes: Vec<u32>,
    enabled_sets: EnabledSets,
    /// The sources of the world last listed, as [`Executor::enabled_sources`] leaves them.
    sources: Vec<u64>,
    /// Whether a source has only idle events in a world (by [`fingerprint`]), as tried.
    idle: FxHashMap<(u128, u64), bool>,
}

/// Why a step could not be taken as asked.
enum StepError {
    Violation(StepViolation),
    /// A replayed step found no matching event, or its handler asked other choices.
    Mismatch,
    /// The event changed nothing and chose nothing: no step (not recorded).
    Idle,
}

impl<P: Protocol> Run<'_, '_, '_, P> {
    fn go(&mut self, scheduler: &mut Scheduler, sites: &mut Sites) -> Option<Found> {
        let options = self.exec.options;
        for _ in 0..options.max_steps {
            let enabled = self.enabled();
            loop {
                if self.actions.is_empty() {
                    return self.current.hot.then_some(Found::EndsHot);
                }
                let pick = scheduler.next_event(&self.processes);
                match self.take(self.actions[pick], enabled, None, scheduler, sites) {
                    Err(StepError::Idle) => {
                        self.actions.remove(pick);
                        self.processes.remove(pick);
                    }
                    Err(StepError::Violation(v)) => return Some(Found::Safety(v)),
                    Ok(()) | Err(StepError::Mismatch) => break,
                }
            }
            match self.exec.method {
                Method::Temperature => {
                    if self.current.hot {
                        self.temperature += 1;
                        if self.temperature == options.temperature_threshold {
                            return Some(Found::TooHot);
                        }
                    } else {
                        self.temperature = 0;
                    }
                }
                Method::Caching => {
                    if let Some(found) = self.check_lasso(scheduler, sites) {
                        return Some(found);
                    }
                }
            }
        }
        self.enabled();
        (self.actions.is_empty() && self.current.hot).then_some(Found::EndsHot)
    }

    /// Refreshes the enabled actions: the id of the set of sources they enable.
    fn enabled(&mut self) -> u32 {
        let world = &self.current.world;
        self.exec.enabled(world, &mut self.actions, &mut self.processes);
        // Only the caching method's fairness check and replay read the sources.
        match self.exec.method {
            Method::Caching => self.exec.enabled_sources(world, &self.actions, &mut self.sources),
            Method::Temperature => self.sources.clear(),
        }
        self.enabled_sets.id(&self.sources)
    }

    /// Takes `action` (whose world's enabled sources are the set `enabled`), recording its
    /// trace event; `replay` gives the choices a replayed step must make.
    fn take(
        &mut self,
        action: Action,
        enabled: u32,
        replay: Option<&[usize]>,
        scheduler: &mut Scheduler,
        sites: &mut Sites,
    ) -> Result<(), StepError> {
        let process = self
            .exec
            .sim
            .process_of(&self.current.world, action)
            .map_or(environment(self.exec.model.node_count()), |n| n.0);
        let mut chooser =
            StepChooser { scheduler, process, sites, replay, diverged: false, used: Vec::new() };
        let stepped = self.exec.step(&self.current.world, &self.current.monitors, action, &mut chooser);
        self.executed += 1;
        let Stepped { world, monitors, choices } = match stepped {
            Ok(stepped) => stepped,
            Err(violation) => {
                // The violating step ends the trace.
                self.steps.push((action, chooser.used.iter().map(|&(_, value, _)| value as usize).collect()));
                return Err(StepError::Violation(violation));
            }
        };
        let here = fingerprint(&self.current.world, &self.current.monitors);
        if replay.is_none() && is_idle(here, &choices, &world, &monitors) {
            return Err(StepError::Idle);
        }
        let diverged = chooser.diverged || replay.is_some_and(|values| values.len() != choices.len());
        let used = chooser.used;
        let shape = self.exec.sim.event_shape(&self.current.world, action);
        let position = self.trace.len();
        if !self.current.hot {
            self.last_cold = Some(position);
        }
        self.seen.entry(self.current.hash).or_default().push(position as u32);
        self.trace.push(TraceEvent {
            process,
            shape,
            choices: choices.clone(),
            sites: used,
            enabled,
            hash: self.current.hash,
        });
        self.steps.push((action, choices));
        self.current = self.exec.current(world, monitors);
        if diverged {
            Err(StepError::Mismatch)
        } else {
            Ok(())
        }
    }

    /// Algorithm 3: a hash repeat that closes a hot, fair segment is replayed.
    fn check_lasso(&mut self, scheduler: &mut Scheduler, sites: &mut Sites) -> Option<Found> {
        let candidates = self.seen.get(&self.current.hash)?;
        // The most recent candidate that takes every source it enables, else the most recent
        // whose untaken sources may prove idle.
        let mut fallback = None;
        for &i in candidates.iter().rev() {
            match self.hot_and_fair(i as usize) {
                Some(untaken) if untaken.is_empty() => {
                    return self.replay_cycle(i as usize, &[], scheduler, sites)
                }
                Some(untaken) => fallback = fallback.or(Some((i as usize, untaken))),
                None => {}
            }
        }
        let (start, untaken) = fallback?;
        self.replay_cycle(start, &untaken, scheduler, sites)
    }

    /// Whether the trace segment from `start` is hot and its choices fair: the sources enabled
    /// in it but not taken (sorted), which the replay must find only idle events for.
    fn hot_and_fair(&self, start: usize) -> Option<Vec<u64>> {
        if self.last_cold.is_some_and(|cold| cold >= start) {
            return None;
        }
        let segment = &self.trace[start..];
        let mut enabled_ids: Vec<u32> = Vec::new();
        let mut taken: Vec<u64> = Vec::new();
        let mut values: FxHashMap<u32, (u64, u32)> = FxHashMap::default();
        for event in segment {
            enabled_ids.push(event.enabled);
            taken.push(event.shape);
            for &(site, value, arity) in &event.sites {
                let entry = values.entry(site).or_insert((0, arity));
                if value < 64 {
                    entry.0 |= 1 << value;
                }
            }
        }
        // Every value of every site with at most 64 values: larger sites (a random integer)
        // cannot be expected to take all of them.
        if !values.values().all(|&(seen, arity)| arity > 64 || seen.count_ones() == arity) {
            return None;
        }
        enabled_ids.sort_unstable();
        enabled_ids.dedup();
        taken.sort_unstable();
        let mut untaken: Vec<u64> = enabled_ids
            .iter()
            .flat_map(|&id| self.enabled_sets.get(id))
            .copied()
            .filter(|source| taken.binary_search(source).is_err())
            .collect();
        untaken.sort_unstable();
        untaken.dedup();
        Some(untaken)
    }

    /// Whether every event of `source` in the current world is idle: it changes nothing and
    /// chooses nothing. Tried on copies, once per world.
    fn only_idle(&mut self, source: u64) -> bool {
        let here = fingerprint(&self.current.world, &self.current.monitors);
        if let Some(&idle) = self.idle.get(&(here, source)) {
            return idle;
        }
        let (exec, world, monitors) = (self.exec, &self.current.world, &self.current.monitors);
        let idle = self.actions.iter().filter(|&&action| exec.source(world, action) == Some(source)).all(
            |&action| {
                let mut chooser = foretell_model::ChoiceOdometer::new();
                exec.step(world, monitors, action, &mut chooser)
                    .is_ok_and(|s| is_idle(here, &s.choices, &s.world, &s.monitors))
            },
        );
        self.idle.insert((here, source), idle);
        idle
    }

    /// Algorithm 4: replays the cycle `trace[start..]` `RT` times. The first pass also checks
    /// that the `untaken` sources (sorted) have only idle events wherever they are enabled; one
    /// that has another leaves the cycle unfair (not a discarded replay).
    fn replay_cycle(
        &mut self,
        start: usize,
        untaken: &[u64],
        scheduler: &mut Scheduler,
        sites: &mut Sites,
    ) -> Option<Found> {
        let cycle: Vec<(u32, u64, Vec<usize>, u32, u64)> = self.trace[start..]
            .iter()
            .map(|e| (e.process, e.shape, e.choices.clone(), e.enabled, e.hash))
            .collect();
        let length = cycle.len();
        let stem_and_cycle = self.steps.len();
        for j in 0..self.exec.options.replays * length {
            let (process, shape, choices, _, _) = &cycle[j % length];
            let enabled = self.enabled();
            if j < length {
                let owed: Vec<u64> = (self.enabled_sets.get(enabled).iter())
                    .filter(|source| untaken.binary_search(source).is_ok())
                    .copied()
                    .collect();
                if !owed.into_iter().all(|source| self.only_idle(source)) {
                    return None;
                }
            }
            let action =
                self.exec.matching(&self.current.world, &self.actions, &self.processes, *process, *shape);
            let Some(action) = action else {
                self.discarded += 1;
                return None;
            };
            match self.take(action, enabled, Some(choices), scheduler, sites) {
                Ok(()) => {}
                Err(StepError::Violation(v)) => return Some(Found::Safety(v)),
                Err(StepError::Mismatch | StepError::Idle) => {
                    self.discarded += 1;
                    return None;
                }
            }
            let (_, _, _, next_enabled, next_hash) = cycle[(j + 1) % length];
            if self.enabled() != next_enabled || !self.current.hot || self.current.hash != next_hash {
                self.discarded += 1;
                return None;
            }
        }
        self.steps.truncate(stem_and_cycle);
        let cycle =
            cycle.into_iter().map(|(process, shape, choices, _, _)| (shape, process, choices)).collect();
        Some(Found::Lasso { cycle_start: start, cycle })
    }
}

/// An execution continued past a finding, to confirm it.
struct Continuation<'e, 's, 'm, P: Protocol> {
    exec: &'e Executor<'s, 'm, P>,
    world: World<P>,
    monitors: Vec<MonitorState>,
    actions: Vec<Action>,
    processes: Vec<u32>,
    sites: Sites,
}

impl<'e, 's, 'm, P: Protocol> Continuation<'e, 's, 'm, P> {
    fn new(exec: &'e Executor<'s, 'm, P>, world: World<P>, monitors: Vec<MonitorState>) -> Self {
        Continuation {
            exec,
            world,
            monitors,
            actions: Vec::new(),
            processes: Vec::new(),
            sites: Sites::default(),
        }
    }

    /// Refreshes the enabled actions.
    fn enabled(&mut self) {
        self.exec.enabled(&self.world, &mut self.actions, &mut self.processes);
    }

    /// Takes `action` of `process` (with `replay`'s choices, if given): whether it ran without
    /// a violation and, on replay, made the recorded choices — and was a step, not an idle
    /// event (`None`: the world is as it was).
    fn take(
        &mut self,
        action: Action,
        process: u32,
        replay: Option<&[usize]>,
        scheduler: &mut Scheduler,
    ) -> Option<bool> {
        let mut chooser = StepChooser {
            scheduler,
            process,
            sites: &mut self.sites,
            replay,
            diverged: false,
            used: Vec::new(),
        };
        match self.exec.step(&self.world, &self.monitors, action, &mut chooser) {
            Ok(stepped) if !chooser.diverged => {
                let here = fingerprint(&self.world, &self.monitors);
                if is_idle(here, &stepped.choices, &stepped.world, &stepped.monitors) {
                    return None;
                }
                self.world = stepped.world;
                self.monitors = stepped.monitors;
                Some(true)
            }
            _ => Some(false),
        }
    }
}

/// Replays `cycle` `iterations` more times from `world`, where a confirmed replay ended:
/// whether every replayed step finds its event and the monitors stay hot. The reporting
/// engine's check for a false positive.
pub(crate) fn cycle_holds<P: Protocol>(
    exec: &Executor<'_, '_, P>,
    world: World<P>,
    monitors: Vec<MonitorState>,
    cycle: &[CycleStep],
    iterations: usize,
    scheduler: &mut Scheduler,
) -> bool {
    let mut run = Continuation::new(exec, world, monitors);
    for _ in 0..iterations {
        for (shape, process, choices) in cycle {
            run.enabled();
            let Some(action) = exec.matching(&run.world, &run.actions, &run.processes, *process, *shape)
            else {
                return false;
            };
            if run.take(action, *process, Some(choices), scheduler) != Some(true) || !exec.hot(&run.monitors)
            {
                return false;
            }
        }
    }
    true
}

/// Continues from `world` under the random tail of `scheduler` for `steps` steps (idle events
/// drawn again, as in an execution): whether the monitors cool down (then a temperature report
/// was premature: a false positive).
pub(crate) fn cools_down<P: Protocol>(
    exec: &Executor<'_, '_, P>,
    world: World<P>,
    monitors: Vec<MonitorState>,
    steps: usize,
    scheduler: &mut Scheduler,
) -> bool {
    let mut run = Continuation::new(exec, world, monitors);
    for _ in 0..steps {
        if !exec.hot(&run.monitors) {
            return true;
        }
        run.enabled();
        loop {
            if run.actions.is_empty() {
                return false;
            }
            let pick = scheduler.next_event(&run.processes);
            match run.take(run.actions[pick], run.processes[pick], None, scheduler) {
                Some(true) => break,
                Some(false) => return false,
                None => {
                    run.actions.remove(pick);
                    run.processes.remove(pick);
                }
            }
        }
    }
    !exec.hot(&run.monitors)
}
