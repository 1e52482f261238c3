//! The exploration core every engine shares: property checks on new worlds, coverage, bounds,
//! interruption, progress, statistics, and turning a found violation into a report with a trace.
//!
//! An engine owns only its frontier (a queue, a stack, a re-executed path) and calls
//! [`Exploration::examine`] on each new world and [`Exploration::should_stop`] between worlds.

use crate::report::kind_name;
use crate::{CheckOptions, Completion, Progress, PropertyReport, Report, Stats, Status, Violation};
use foretell_model::{Action, FixedChoices, PropertyKind, Protocol, Simulator, StepViolation, World};
use std::time::{Duration, Instant};

/// How often (in examined worlds or steps) the clock, the interrupt flag and the bounds are
/// polled; progress is reported at most every `PROGRESS_EVERY`.
const POLL_EVERY: u64 = 1 << 10;
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
    last_progress: Instant,
    polls: u64,
    covered: Vec<bool>,
    stop: Option<Completion>,
    depth_cut: bool,
}

impl<'m, 'o, P: Protocol> Exploration<'m, 'o, P> {
    pub(crate) fn new(sim: Simulator<'m, P>, options: &'o CheckOptions) -> Self {
        let now = Instant::now();
        Exploration {
            sim,
            options,
            stats: Stats::default(),
            started: now,
            last_progress: now,
            polls: 0,
            covered: vec![false; sim.model().properties().len()],
            stop: None,
            depth_cut: false,
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
        let violation = step.or_else(|| self.sim.violated_invariant(world));
        if violation.is_none() {
            self.cover(world);
        }
        violation
    }

    fn cover(&mut self, world: &World<P>) {
        let properties = self.sim.model().properties();
        for (property, covered) in properties.iter().zip(self.covered.iter_mut()) {
            if !*covered && property.kind() == PropertyKind::Sometimes && property.holds(world) {
                *covered = true;
            }
        }
    }

    /// Whether `depth` is at the depth bound, so the world's successors are not explored.
    /// Notes the cut, which makes the completion `DepthBound` rather than `Exhausted`.
    pub(crate) fn at_depth_bound(&mut self, depth: usize) -> bool {
        let cut = self.options.depth_max.is_some_and(|max| depth >= max);
        self.depth_cut |= cut;
        cut
    }

    /// Whether the run must stop now; `queue` is the frontier's size, for progress.
    pub(crate) fn should_stop(&mut self, queue: usize) -> bool {
        if self.stop.is_some() {
            return true;
        }
        self.polls += 1;
        // Poll on the first call too, so that a run interrupted before it starts stops at once.
        if (self.polls - 1) % POLL_EVERY != 0 {
            return false;
        }
        if let Some(max) = self.options.states_max {
            if self.stats.unique_states >= max {
                self.stop = Some(Completion::StatesBound);
            }
        }
        let now = Instant::now();
        if self.options.timeout.is_some_and(|t| now - self.started >= t) {
            self.stop = Some(Completion::TimeBound);
        }
        if self.options.interrupt.as_ref().is_some_and(|i| i.is_raised()) {
            self.stop = Some(Completion::Interrupted);
        }
        if let Some(sink) = &self.options.progress {
            if now - self.last_progress >= PROGRESS_EVERY {
                self.last_progress = now;
                sink(&self.progress(queue));
            }
        }
        self.stop.is_some()
    }

    fn progress(&self, queue: usize) -> Progress {
        Progress {
            unique_states: self.stats.unique_states,
            transitions: self.stats.transitions,
            max_depth: self.stats.max_depth,
            queue,
            elapsed: self.started.elapsed(),
        }
    }

    /// The steps (action, choices) that follow successor `ordinals` from initial world `root`.
    pub(crate) fn steps_from_ordinals(&self, root: u32, ordinals: &[u32]) -> (Vec<usize>, Steps) {
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
            let (action, choices) =
                self.sim.successor_step(&world, ordinal).expect("a recorded ordinal names a successor");
            let mut chooser = FixedChoices::new(&choices);
            world = self.sim.step(&world, action, &mut chooser, false).world;
            steps.push((action, choices));
        }
        (init_choices, steps)
    }

    /// The report, with `found` (the violation and the steps that reach it) if any.
    pub(crate) fn finish(mut self, found: Option<Found>) -> Report {
        self.stats.seconds = self.started.elapsed().as_secs_f64();
        if let Some(sink) = &self.options.progress {
            sink(&self.progress(0));
        }
        let completion = match (&found, self.stop) {
            (Some(_), _) => Completion::Violation,
            (None, Some(stop)) => stop,
            (None, None) if self.depth_cut => Completion::DepthBound,
            (None, None) => Completion::Exhausted,
        };
        let mut violations = Vec::new();
        if let Some((violation, init_choices, steps)) = found {
            let mut trace = self.sim.record(&init_choices, &steps);
            trace.engine = Some(self.options.engine.name().to_string());
            violations.push(Violation {
                property: violation.property,
                kind: violation.kind,
                message: violation.message,
                trace,
            });
        }
        let mut properties: Vec<PropertyReport> = self
            .sim
            .model()
            .properties()
            .iter()
            .zip(&self.covered)
            .map(|(p, &covered)| {
                let violated = violations.iter().any(|v| v.property == p.name());
                let status = match p.kind() {
                    PropertyKind::Always if violated => Status::Violated,
                    PropertyKind::Always => Status::Holds,
                    PropertyKind::Sometimes if covered => Status::Covered,
                    PropertyKind::Sometimes => Status::NotCovered,
                    PropertyKind::Eventually => Status::NotChecked,
                };
                PropertyReport { name: p.name().to_string(), kind: kind_name(p.kind()).into(), status }
            })
            .collect();
        for v in &violations {
            if !properties.iter().any(|p| p.name == v.property) {
                properties.push(PropertyReport {
                    name: v.property.clone(),
                    kind: v.kind.to_string(),
                    status: Status::Violated,
                });
            }
        }
        Report { engine: self.options.engine, completion, properties, violations, stats: self.stats }
    }
}
