//! The exploration core every engine shares: property checks on new worlds, coverage, bounds,
//! interruption, progress, statistics, and turning a found violation into a report with a trace.
//!
//! An engine owns only its frontier (a queue, a stack, a re-executed path) and calls
//! [`Exploration::examine`] on each new world and [`Exploration::should_stop`] between worlds.

use crate::stop::Stop;
use crate::{
    over_budget, CheckOptions, Completion, Omission, Progress, PropertyReport, Report, Stats, Violation,
};
use foretell_model::{
    Action, FixedChoices, PropertyKind, Protocol, Simulator, StepViolation, Trace, TraceVerdict, World,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How often (in examined worlds or steps) the clock, the interrupt flag and the bounds are
/// polled (here, and on the liveness engine's walks); progress is reported at most every
/// `PROGRESS_EVERY`.
pub(crate) const POLL_EVERY: u64 = 1 << 10;
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// The steps of a path: each action with its handler's choice values.
pub(crate) type Steps = Vec<(Action, Vec<usize>)>;

/// A violation and the path that reaches it: the initial world's choices and the steps.
pub(crate) type Found = (StepViolation, Vec<usize>, Steps);

pub(crate) struct Exploration<'m, 'o, P: Protocol> {
    pub(crate) sim: Simulator<'m, P>,
    pub(crate) options: &'o CheckOptions,
    pub(crate) stats: Stats,
    started: Instant,
    /// The time budget and the interrupt, as every engine asks them.
    limits: Stop,
    last_progress: Mutex<Instant>,
    polls: u64,
    covered: Vec<bool>,
    stop: OnceLock<Completion>,
    depth_cut: AtomicBool,
    omission: Option<Omission>,
}

/// What one worker of a parallel search found: counts and `sometimes` coverage, merged into
/// the [`Exploration`] at the end ([`Exploration::absorb`]).
pub(crate) struct Tally {
    pub(crate) unique: u64,
    pub(crate) transitions: u64,
    max_depth: usize,
    covered: Vec<bool>,
}

impl Tally {
    pub(crate) fn new(properties: usize) -> Self {
        Tally { unique: 0, transitions: 0, max_depth: 0, covered: vec![false; properties] }
    }

    /// Counts a new distinct world at `depth` and checks it, as [`Exploration::examine`].
    pub(crate) fn examine<P: Protocol>(
        &mut self,
        sim: Simulator<'_, P>,
        world: &World<P>,
        depth: usize,
        step: Option<StepViolation>,
    ) -> Option<StepViolation> {
        self.unique += 1;
        self.max_depth = self.max_depth.max(depth);
        check_world(sim, &mut self.covered, world, step)
    }
}

/// The violation `world` shows, the step's own (panic, assertion) first; if none, marks the
/// `sometimes` properties it covers and the `eventually` properties that hold in it.
fn check_world<P: Protocol>(
    sim: Simulator<'_, P>,
    covered: &mut [bool],
    world: &World<P>,
    step: Option<StepViolation>,
) -> Option<StepViolation> {
    let violation = step.or_else(|| sim.violated_invariant(world));
    if violation.is_none() {
        let properties = sim.model().properties();
        for (property, covered) in properties.iter().zip(covered.iter_mut()) {
            let reachable = matches!(property.kind(), PropertyKind::Sometimes | PropertyKind::Eventually);
            if !*covered && reachable && property.holds(world) {
                *covered = true;
            }
        }
    }
    violation
}

impl<'m, 'o, P: Protocol> Exploration<'m, 'o, P> {
    pub(crate) fn new(sim: Simulator<'m, P>, options: &'o CheckOptions) -> Self {
        crate::prepare_peak();
        let now = Instant::now();
        Exploration {
            sim,
            options,
            stats: Stats::default(),
            started: now,
            limits: Stop::new(now, options.timeout, options.interrupt.clone()),
            last_progress: Mutex::new(now),
            polls: 0,
            covered: vec![false; sim.model().properties().len()],
            stop: OnceLock::new(),
            depth_cut: AtomicBool::new(false),
            omission: None,
        }
    }

    /// Counts a new distinct world at `depth` and checks it; returns the violation it shows,
    /// the step's own (panic, assertion) first.
    pub(crate) fn examine(
        &mut self,
        world: &World<P>,
        depth: usize,
        step: Option<StepViolation>,
    ) -> Option<StepViolation> {
        self.stats.unique_states += 1;
        self.stats.max_depth = self.stats.max_depth.max(depth);
        check_world(self.sim, &mut self.covered, world, step)
    }

    /// Adds a worker's counts and coverage.
    pub(crate) fn absorb(&mut self, tally: &Tally) {
        self.stats.unique_states += tally.unique;
        self.stats.transitions += tally.transitions;
        self.stats.max_depth = self.stats.max_depth.max(tally.max_depth);
        for (mine, theirs) in self.covered.iter_mut().zip(&tally.covered) {
            *mine |= *theirs;
        }
    }

    /// Notes the visited set's estimate of states it may have missed (lossy memory modes).
    pub(crate) fn note_omission(&mut self, omission: Omission) {
        self.omission = Some(omission);
    }

    /// Notes that a world at the depth bound was not expanded.
    pub(crate) fn note_depth_cut(&self) {
        self.depth_cut.store(true, Ordering::Relaxed);
    }

    /// Whether `depth` is at the depth bound, so the world's successors are not explored.
    /// Notes the cut, which makes the completion `DepthBound` rather than `Exhausted`.
    pub(crate) fn at_depth_bound(&self, depth: usize) -> bool {
        let cut = self.options.depth_max.is_some_and(|max| depth >= max);
        if cut {
            self.note_depth_cut();
        }
        cut
    }

    /// Whether the run must stop now; `queue` is the frontier's size, for progress. Polls the
    /// bounds every `POLL_EVERY` calls (and on the first, so that a run interrupted before it
    /// starts stops at once).
    pub(crate) fn should_stop(&mut self, queue: usize) -> bool {
        if self.stop.get().is_some() {
            return true;
        }
        self.polls += 1;
        if (self.polls - 1) % POLL_EVERY != 0 {
            return false;
        }
        self.poll(self.stats.unique_states, queue)
    }

    /// Checks the bounds, the interrupt and the memory budget now, and reports progress if it
    /// is time; callable from any worker thread. Returns whether the run must stop.
    pub(crate) fn poll(&self, unique: u64, queue: usize) -> bool {
        if self.stop.get().is_some() {
            return true;
        }
        let now = Instant::now();
        let stop = if let Some(reason) = self.limits.poll() {
            Some(reason)
        } else if self.options.states_max.is_some_and(|max| unique >= max) {
            Some(Completion::StatesBound)
        } else if over_budget(self.options.memory_max) {
            Some(Completion::MemoryBound)
        } else {
            None
        };
        if let Some(sink) = &self.options.progress {
            let mut last = self.last_progress.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if now - *last >= PROGRESS_EVERY {
                *last = now;
                drop(last);
                sink(&self.progress(unique, self.stats.transitions, queue));
            }
        }
        if let Some(stop) = stop {
            let _ = self.stop.set(stop);
        }
        self.stop.get().is_some()
    }

    fn progress(&self, unique: u64, transitions: u64, queue: usize) -> Progress {
        Progress {
            unique_states: unique,
            transitions,
            max_depth: self.stats.max_depth,
            queue,
            elapsed: self.started.elapsed(),
        }
    }

    /// The finding of `violation` at the end of the path that follows successor `ordinals` from
    /// initial world `root`: the violation with the path's steps (action, choices). Where the
    /// re-executed path has no successor with the recorded ordinal, the steps end there; the
    /// report then finds that they reach no violation (see [`Exploration::finish`]).
    pub(crate) fn found_at(&self, violation: StepViolation, root: u32, ordinals: &[u32]) -> Found {
        let mut init = None;
        let mut index = 0u32;
        self.sim.initial_worlds(|choices, world, _| {
            if index == root {
                init = Some((choices, world));
            }
            index += 1;
        });
        let (init_choices, mut world) = init.expect("a recorded root is an initial world");
        let mut steps = Vec::with_capacity(ordinals.len());
        for &ordinal in ordinals {
            let Some((action, choices)) = self.sim.successor_step(&world, ordinal) else { break };
            let mut chooser = FixedChoices::new(&choices);
            world = self.sim.step(&world, action, &mut chooser, false).world;
            steps.push((action, choices));
        }
        (violation, init_choices, steps)
    }

    /// When the run started.
    pub(crate) fn started(&self) -> Instant {
        self.started
    }

    /// The report, with `found` (the violation and the steps that reach it) if any.
    pub(crate) fn finish(mut self, found: Option<Found>) -> Report {
        self.stats.seconds = self.started.elapsed().as_secs_f64();
        self.stats.peak_memory = crate::peak_resident_bytes();
        if let Some(sink) = &self.options.progress {
            sink(&self.progress(self.stats.unique_states, self.stats.transitions, 0));
        }
        let completion = match (&found, self.stop.get().copied()) {
            (Some(_), _) => Completion::Violation,
            (None, Some(stop)) => stop,
            (None, None) if self.depth_cut.load(Ordering::Relaxed) => Completion::DepthBound,
            (None, None) => Completion::Exhausted,
        };
        let mut violations = Vec::new();
        if let Some((mut violation, init_choices, steps)) = found {
            let mut trace = self.sim.record(&init_choices, &steps);
            trace.engine = Some(self.options.engine.name().to_string());
            diverged(&mut violation, &mut trace);
            violations.push(Violation {
                property: violation.property,
                kind: violation.kind,
                message: violation.message,
                trace,
            });
        }
        let properties =
            PropertyReport::for_search(self.sim.model().properties(), &self.covered, &violations);
        Report {
            engine: self.options.engine,
            completion,
            properties,
            violations,
            stats: self.stats,
            omission: self.omission,
            lmc: None,
        }
    }
}

/// Makes a finding whose path does not re-execute into its violation a finding of
/// nondeterminism: the recording parted from the search, or the path reaches no violation.
fn diverged(violation: &mut StepViolation, trace: &mut Trace) {
    let verdict = match &trace.verdict {
        Some(v) if trace.parted() => v.clone(),
        Some(_) => return,
        None => {
            let problem = format!(
                "the steps re-executed reach no violation, where the search found {:?}",
                violation.property
            );
            trace.verdict.insert(TraceVerdict::parted(trace.steps.len(), &problem)).clone()
        }
    };
    *violation = verdict.into();
}
