//! The lasso engine: liveness violations as hot, fair lassos (Mudduluru, Deligiannis, Desai,
//! Lal and Qadeer, "Lasso Detection using Partial-State Caching", FMCAD'17), with an exact
//! fair-cycle search beside the paper's two sampling methods.
//!
//! The model's specification monitors (and its `eventually` properties, each a monitor that is
//! hot where its predicate does not hold) say which worlds are *hot*. A liveness violation is an
//! infinite execution that stays hot and is fair. Three methods look for one:
//!
//! - [`LassoMethod::Caching`]: many executions under a [`scheduler`] (or a portfolio of them,
//!   on all cores), each watched by partial-state caching and confirmed by replay
//!   ([`execution`], Algorithms 1, 3 and 4);
//! - [`LassoMethod::Temperature`]: the same executions, reported after `TT` consecutive hot
//!   steps (Algorithm 2);
//! - [`LassoMethod::Exact`]: the whole state graph and its fair strongly connected components
//!   ([`exact`], [`fair_cycle`]).
//!
//! Every execution is reproducible from (scheduler, seed, execution number), and the engine's
//! report is the same whatever the number of threads.

mod exact;
mod execution;
mod fair_cycle;
mod report;
mod scheduler;

pub use execution::Method as SamplingMethod;
pub use report::{LassoCompletion, LassoFindingReport, LassoReport, SchedulerStats};
pub use scheduler::{SchedulerKind, Schedulers, PORTFOLIO};

use crate::stop::Stop;
use crate::{Completion, Interrupt};
use execution::{cools_down, cycle_holds, Executed, Executor, Found, Sites};
use foretell_model::{
    DynMonitor, LassoFinding, Model, ModelError, PartialHash, PropertyKind, Protocol, Simulator, Temperature,
    Trace, TraceVerdict, ViolationKind,
};
use scheduler::Scheduler;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How the lasso engine looks for liveness violations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LassoMethod {
    /// Partial-state caching with replay.
    Caching,
    /// The temperature threshold.
    Temperature,
    /// Fair cycles of the explored state graph.
    Exact,
}

impl fmt::Display for LassoMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LassoMethod::Caching => "caching",
            LassoMethod::Temperature => "temperature",
            LassoMethod::Exact => "exact",
        })
    }
}

impl FromStr for LassoMethod {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "caching" => Ok(LassoMethod::Caching),
            "temperature" => Ok(LassoMethod::Temperature),
            "exact" => Ok(LassoMethod::Exact),
            _ => Err(format!("unknown method {text:?} (known: caching, temperature, exact)")),
        }
    }
}

/// Which hash partial-state caching compares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HashChoice {
    /// The model's partial hash ([`Model::partial_hash`]; P#'s default unless it says otherwise).
    #[default]
    Partial,
    /// The full fingerprint.
    Full,
}

impl FromStr for HashChoice {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "partial" => Ok(HashChoice::Partial),
            "full" => Ok(HashChoice::Full),
            _ => Err(format!("unknown hash {text:?} (known: partial, full)")),
        }
    }
}

/// How a lasso run searches.
#[derive(Clone, Debug)]
pub struct LassoOptions {
    /// The method.
    pub method: LassoMethod,
    /// The scheduler or portfolio (sampling methods).
    pub schedulers: Schedulers,
    /// Executions to run (`N`; sampling methods).
    pub executions: u64,
    /// The longest execution, in steps (`B`).
    pub max_steps: usize,
    /// Steps an unfair scheduler decides before the random scheduler takes over.
    pub unfair_steps: usize,
    /// Consecutive hot steps the temperature method reports (`TT`).
    pub temperature_threshold: usize,
    /// Times a candidate cycle is replayed before it is reported (`RT`).
    pub replays: usize,
    /// The hash that caching compares.
    pub hash: HashChoice,
    /// Whether each report is checked for a false positive: a lasso by replaying its cycle
    /// [`CONFIRM_ITERATIONS`] more times, a temperature report by continuing the execution.
    pub confirm: bool,
    /// The seed.
    pub seed: u64,
    /// Worker threads.
    pub threads: usize,
    /// The most worlds the exact method keeps.
    pub max_worlds: usize,
    /// Stops the run (Ctrl-C) with a partial report.
    pub interrupt: Option<Interrupt>,
    /// Stops the run after this long with a partial report.
    pub timeout: Option<Duration>,
}

/// Iterations of a reported cycle replayed to confirm it (the paper checked its reports by
/// replaying 10K iterations by hand).
pub const CONFIRM_ITERATIONS: usize = 1000;

impl Default for LassoOptions {
    /// The paper's settings (section VI): 500 steps, `TT` 250, `RT` 10, with a portfolio.
    fn default() -> Self {
        LassoOptions {
            method: LassoMethod::Caching,
            schedulers: Schedulers::Portfolio,
            executions: 1000,
            max_steps: 500,
            unfair_steps: 100,
            temperature_threshold: 250,
            replays: 10,
            hash: HashChoice::Partial,
            confirm: false,
            seed: 0,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            max_worlds: 2_000_000,
            interrupt: None,
            timeout: None,
        }
    }
}

/// Why a lasso run cannot start.
#[derive(Debug, thiserror::Error)]
pub enum LassoError {
    /// The model is invalid.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// Nothing can be hot.
    #[error("the model has no monitor and no eventually property: nothing can be hot")]
    NoMonitor,
    /// Too many nodes for the schedulers' process bitmaps (the environment is a process too).
    #[error("lasso detection handles up to 63 nodes; the model has {0}")]
    TooManyNodes(usize),
    /// An option is out of range.
    #[error("{0}")]
    Option(String),
}

/// A lasso run of one model.
pub struct Lasso<'m, P: Protocol> {
    model: &'m Model<P>,
    options: LassoOptions,
}

impl<'m, P: Protocol> Lasso<'m, P> {
    /// A run with the default options.
    pub fn new(model: &'m Model<P>) -> Self {
        Lasso { model, options: LassoOptions::default() }
    }

    /// Replaces the options.
    pub fn options(mut self, options: LassoOptions) -> Self {
        self.options = options;
        self
    }

    /// Runs the search.
    ///
    /// # Errors
    /// A [`LassoError`] when the model is invalid, has nothing to be hot, or an option is out
    /// of range.
    pub fn run(&self) -> Result<LassoReport, LassoError> {
        let options = &self.options;
        let sim = Simulator::new(self.model)?;
        if self.model.node_count() > 63 {
            return Err(LassoError::TooManyNodes(self.model.node_count()));
        }
        if options.max_steps == 0 || options.replays == 0 || options.temperature_threshold == 0 {
            return Err(LassoError::Option("max steps, RT and TT must be at least 1".into()));
        }
        let monitors = monitors_of(self.model);
        if monitors.is_empty() {
            return Err(LassoError::NoMonitor);
        }
        let hash = match options.hash {
            HashChoice::Partial => self.model.lasso_hash().clone(),
            HashChoice::Full => PartialHash::Full,
        };
        let method = match options.method {
            LassoMethod::Temperature => SamplingMethod::Temperature,
            _ => SamplingMethod::Caching,
        };
        let exec =
            Executor { sim: &sim, model: self.model, monitors: &monitors, hash: &hash, options, method };
        let started = Instant::now();
        let limits = Stop::new(started, options.timeout, options.interrupt.clone());
        let mut report = LassoReport::new(options, monitors.iter().map(|m| m.name().to_string()).collect());
        if options.method == LassoMethod::Exact {
            self.run_exact(&exec, &limits, &mut report);
        } else {
            self.run_sampling(&exec, &limits, &mut report);
        }
        report.elapsed = started.elapsed();
        if report.completion == LassoCompletion::Finished {
            if let Some(reason) = limits.poll() {
                report.completion = stopped(reason);
            }
        }
        Ok(report)
    }

    fn run_exact(&self, exec: &Executor<'_, 'm, P>, limits: &Stop, report: &mut LassoReport) {
        let explored = exec.explore_exact(self.options.max_worlds, &|| limits.poll().is_some());
        report.exact = Some(report::ExactStats {
            worlds: explored.worlds,
            edges: explored.edges,
            complete: explored.complete,
            components: explored.stats.components,
            refinements: explored.stats.refinements,
        });
        if !explored.complete {
            report.completion = limits.poll().map_or(LassoCompletion::WorldsBound, stopped);
        }
        if let Some(found) = explored.found {
            let kind = match found.kind {
                exact::ExactKind::Lasso { cycle_start } => {
                    let cycle = found.steps.len() - cycle_start;
                    FoundKind::Lasso { cycle_start, cycle_length: cycle }
                }
                exact::ExactKind::EndsHot => FoundKind::EndsHot,
                exact::ExactKind::Safety(v) => FoundKind::Safety(v),
            };
            let trace = self.trace_of(exec, &found.init_choices, &found.steps, &kind, "exact");
            report.record(0, None, kind, trace, None);
        }
    }

    fn run_sampling(&self, exec: &Executor<'_, 'm, P>, limits: &Stop, report: &mut LassoReport) {
        let options = &self.options;
        let members = options.schedulers.members();
        let threads = options.threads.max(1);
        // A stream is a member's executions in order: `first`, `first + stride`, ...
        let streams: Vec<(scheduler::SchedulerKind, u64, u64)> = match &options.schedulers {
            Schedulers::Portfolio => {
                let k = members.len() as u64;
                members.iter().enumerate().map(|(j, kind)| (*kind, j as u64, k)).collect()
            }
            Schedulers::One(SchedulerKind::Dfs) => vec![(SchedulerKind::Dfs, 0, 1)],
            Schedulers::One(kind) => (0..threads as u64).map(|t| (*kind, t, threads as u64)).collect(),
        };
        let mut initial = Vec::new();
        exec.sim.initial_worlds(|choices, world, _| initial.push((choices, world)));
        let processes = exec.model.node_count() as u32 + 1;
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<StreamResult>> = Mutex::new(Vec::new());
        let exhausted = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..threads.min(streams.len()) {
                scope.spawn(|| {
                    // Each worker steps through its own simulator.
                    let sim = Simulator::new(self.model).expect("validated");
                    let exec = Executor { sim: &sim, ..*exec };
                    let mut sites = Sites::default();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&(kind, first, stride)) = streams.get(index) else { break };
                        let mut scheduler =
                            Scheduler::new(kind, options.seed, processes, options.unfair_steps);
                        let mut result = StreamResult::new(kind);
                        let mut execution = first;
                        while execution < options.executions {
                            if limits.poll().is_some() {
                                break;
                            }
                            if !scheduler.start(execution) {
                                exhausted.fetch_add(1, Ordering::Relaxed);
                                break;
                            }
                            let (choices, world) = &initial[(execution as usize) % initial.len()];
                            let executed = exec.execute((choices, world), &mut scheduler, &mut sites);
                            result.add(self, &exec, execution, executed);
                            execution += stride;
                        }
                        results.lock().expect("no worker panics").push(result);
                    }
                });
            }
        });
        let mut results = results.into_inner().expect("no worker panics");
        results.sort_by_key(|r| members.iter().position(|m| *m == r.kind));
        for result in results {
            report.merge(result, &members);
        }
        if exhausted.load(Ordering::Relaxed) == streams.len() && report.executions < options.executions {
            report.completion = LassoCompletion::SchedulesExhausted;
        }
    }

    /// The trace of a finding, with its lasso and verdict.
    fn trace_of(
        &self,
        exec: &Executor<'_, 'm, P>,
        init_choices: &[usize],
        steps: &execution::Steps,
        kind: &FoundKind,
        method: &str,
    ) -> Trace {
        let mut trace = exec.sim.record(init_choices, steps);
        trace.engine = Some(format!("lasso ({method})"));
        trace.seed = Some(self.options.seed);
        if trace.parted() {
            return trace; // the execution did not re-execute: that is the finding
        }
        let offset = trace.scenario.as_ref().map_or(0, |s| s.steps);
        let last = trace.steps.len();
        let (cycle_start, cycle_length, method, message) = match kind {
            FoundKind::Lasso { cycle_start, cycle_length } => (
                offset + cycle_start,
                *cycle_length,
                method,
                format!(
                    "a hot, fair cycle of {cycle_length} steps repeats forever after step {}",
                    offset + cycle_start
                ),
            ),
            FoundKind::TooHot => (
                last,
                0,
                "temperature",
                format!("hot for {} consecutive steps", self.options.temperature_threshold),
            ),
            FoundKind::EndsHot => {
                (last, 0, "ends-hot", "the execution stops in a hot world: nothing is enabled".into())
            }
            FoundKind::Safety(_) => return trace,
        };
        let monitors = monitors_after(exec, init_choices, steps);
        let hot: Vec<(String, String)> = exec
            .monitors
            .iter()
            .zip(&monitors)
            .filter(|(m, s)| m.temperature(s) == Temperature::Hot)
            .map(|(m, s)| (m.name().to_string(), m.describe(s)))
            .collect();
        trace.verdict = Some(TraceVerdict {
            property: hot.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>().join(", "),
            kind: ViolationKind::Liveness,
            step: last,
            message,
        });
        trace.lasso = Some(LassoFinding { method: method.to_string(), cycle_start, cycle_length, hot });
        trace
    }
}

/// The monitors' states at the end of `steps`, or where a step stops re-executing (a
/// nondeterministic handler).
fn monitors_after<P: Protocol>(
    exec: &Executor<'_, '_, P>,
    init_choices: &[usize],
    steps: &execution::Steps,
) -> Vec<foretell_model::MonitorState> {
    let mut start = None;
    exec.sim.initial_worlds(|choices, world, _| {
        if choices == init_choices && start.is_none() {
            start = Some(world);
        }
    });
    let mut world = start.expect("the execution's initial world");
    let mut monitors: Vec<_> = exec.monitors.iter().map(|m| m.init(&world)).collect();
    for (action, choices) in steps {
        // The trace re-executed these steps just before; a handler that drifted since parts here.
        if !exec.sim.is_enabled(&world, *action) {
            break;
        }
        let mut chooser = foretell_model::FixedChoices::new(choices);
        let Ok(stepped) = exec.step(&world, &monitors, *action, &mut chooser) else { break };
        world = stepped.world;
        monitors = stepped.monitors;
    }
    monitors
}

/// The monitors lasso detection watches: the model's, then one per `eventually` property.
fn monitors_of<P: Protocol>(model: &Model<P>) -> Vec<DynMonitor<P>> {
    let eventually = model.properties().iter().filter(|p| p.kind() == PropertyKind::Eventually);
    model.monitors().iter().cloned().chain(eventually.cloned().map(DynMonitor::eventually)).collect()
}

/// How a run [`Stop`] ended reads in a lasso report.
fn stopped(reason: Completion) -> LassoCompletion {
    match reason {
        Completion::Interrupted => LassoCompletion::Interrupted,
        _ => LassoCompletion::TimeBound,
    }
}

/// What a finding is, for reports.
#[derive(Clone, Debug, PartialEq)]
pub enum FoundKind {
    /// A hot, fair cycle after `cycle_start` steps.
    Lasso {
        /// Stem steps.
        cycle_start: usize,
        /// Cycle steps.
        cycle_length: usize,
    },
    /// Hot for `TT` consecutive steps.
    TooHot,
    /// Stopped in a hot world.
    EndsHot,
    /// A safety violation.
    Safety(foretell_model::StepViolation),
}

/// The executions of one stream, summed, with its first finding of each kind.
struct StreamResult {
    kind: SchedulerKind,
    executions: u64,
    buggy: u64,
    safety: u64,
    false_positives: u64,
    discarded: u64,
    steps: u64,
    trace_lengths: u64,
    cycle_lengths: u64,
    cycles: u64,
    /// The first liveness finding and the first safety violation, by execution number.
    first_bug: Option<(u64, FoundKind, Trace, Option<bool>)>,
    first_safety: Option<(u64, FoundKind, Trace)>,
}

impl StreamResult {
    fn new(kind: SchedulerKind) -> Self {
        StreamResult {
            kind,
            executions: 0,
            buggy: 0,
            safety: 0,
            false_positives: 0,
            discarded: 0,
            steps: 0,
            trace_lengths: 0,
            cycle_lengths: 0,
            cycles: 0,
            first_bug: None,
            first_safety: None,
        }
    }

    fn add<P: Protocol>(
        &mut self,
        lasso: &Lasso<'_, P>,
        exec: &Executor<'_, '_, P>,
        execution: u64,
        executed: Executed<P>,
    ) {
        self.executions += 1;
        self.steps += executed.executed;
        self.discarded += executed.discarded;
        let Some(found) = executed.found else { return };
        let options = &lasso.options;
        let (kind, false_positive) = match found {
            Found::Safety(v) => {
                self.safety += 1;
                if self.first_safety.is_none() {
                    let kind = FoundKind::Safety(v);
                    let trace = lasso.trace_of(exec, &executed.init_choices, &executed.steps, &kind, "");
                    self.first_safety = Some((execution, kind, trace));
                }
                return;
            }
            Found::Lasso { cycle_start, cycle } => {
                let fp = options.confirm.then(|| {
                    let (world, monitors) = executed.last.clone().expect("a finding keeps its world");
                    let mut random = confirm_scheduler(options, execution, exec);
                    !cycle_holds(exec, world, monitors, &cycle, CONFIRM_ITERATIONS, &mut random)
                });
                self.cycle_lengths += cycle.len() as u64;
                self.cycles += 1;
                (FoundKind::Lasso { cycle_start, cycle_length: cycle.len() }, fp)
            }
            Found::TooHot => {
                let fp = options.confirm.then(|| {
                    let (world, monitors) = executed.last.clone().expect("a finding keeps its world");
                    let mut random = confirm_scheduler(options, execution, exec);
                    cools_down(exec, world, monitors, 10 * options.temperature_threshold, &mut random)
                });
                (FoundKind::TooHot, fp)
            }
            Found::EndsHot => (FoundKind::EndsHot, options.confirm.then_some(false)),
        };
        self.buggy += 1;
        self.false_positives += u64::from(false_positive == Some(true));
        self.trace_lengths += executed.steps.len() as u64;
        if self.first_bug.is_none() {
            let method = options.method.to_string();
            let trace = lasso.trace_of(exec, &executed.init_choices, &executed.steps, &kind, &method);
            self.first_bug = Some((execution, kind, trace, false_positive));
        }
    }
}

/// The fair random scheduler that confirms a report of execution `execution`.
fn confirm_scheduler<P: Protocol>(
    options: &LassoOptions,
    execution: u64,
    exec: &Executor<'_, '_, P>,
) -> Scheduler {
    let mut random =
        Scheduler::new(SchedulerKind::Random, options.seed ^ 0x5eed, exec.model.node_count() as u32 + 1, 0);
    random.start(execution);
    random
}
