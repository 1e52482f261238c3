//! The liveness engine: MaceMC's search for dead states and their critical transition
//! (Killian, Anderson, Jhala and Vahdat, "Life, Death, and the Critical Transition", NSDI'07:
//! section 4, Algorithm 2, section 4.2's biased walks, section 4.3's prefix-based search and
//! section 3.1's divergence check).
//!
//! A world is *live* when every `eventually` property holds in it. The engine searches
//! exhaustively to a small depth `d` ([`periphery`]), then from every non-live world at that
//! periphery takes one long random walk ([`walk`]) towards depth `dmax`; a walk that never
//! reaches a live world is a *suspect*. FindCriticalTransition ([`critical`]) then probes the
//! suspect path with `k` walks per world to find the first world that never recovers: case C1
//! reports the dead path, trimmed a little past that step, with the nearest live path and the
//! per-node difference between the two; case C2 (the walks may have been too short) doubles
//! `dmax`, extends the suspect walk and tries again, up to a bound, and then says so. Walks run
//! on a [`pool`] of worker threads whose heartbeats catch a handler that never returns.
//!
//! The run stops when it is interrupted or out of time ([`stop`]): the exhaustive part, every
//! walk (on the pool or the prefix walk), the replay of a suspect path and each probe of
//! FindCriticalTransition poll the same stop condition, so a run ends promptly whatever `dmax`
//! and `k`, with a [`LivenessVerdict::Stopped`] report of what it had found. A finding already
//! made stands (a safety violation, a divergence, a confirmed dead path, the undecided path
//! kept); a suspect whose confirmation was cut short is counted as unconfirmed and never
//! reported as a violation.

mod critical;
mod periphery;
mod pool;
mod report;
mod walk;

pub use critical::Case;
pub use report::{describe, LivenessReport, LivenessStats, LivenessVerdict};

use crate::stop::Stop;
use crate::Interrupt;
use critical::{find_critical_transition, Critical, ProbeError};
use foretell_model::{
    catch_panic, json_view, EventOf, Model, ModelError, PropertyKind, Protocol, Simulator, Trace,
    TraceVerdict, ViolationKind, Weights, World,
};
use periphery::{Periphery, SearchBeat};
use pool::{Job, Pool, Stalled};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
pub(crate) use walk::WalkRng;
use walk::{Steps, WalkEnd, Walked, Walker};

/// Where the liveness search starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Prefix {
    /// At the model's start: its initial world, or its start scenario's world.
    #[default]
    Start,
    /// At the first live world a walk from the start reaches (MaceMC's prefix-based search,
    /// section 4.3), with node failures and other faults left out of that walk unless
    /// `faults` is set; faults are enabled again for the search that follows.
    Live {
        /// Whether the prefix walk may inject faults.
        faults: bool,
    },
}

/// A progress snapshot of a liveness run.
#[derive(Clone, Debug, PartialEq)]
pub struct LivenessProgress {
    /// Walks finished.
    pub walks: u64,
    /// Suspect paths found so far.
    pub suspects: u64,
    /// The current walk depth bound.
    pub dmax: usize,
    /// Time since the run started.
    pub elapsed: Duration,
}

/// A progress sink.
pub type LivenessSink = Arc<dyn Fn(&LivenessProgress) + Send + Sync>;

/// How a liveness run searches.
#[derive(Clone)]
pub struct LivenessOptions {
    /// Depth `d` of the exhaustive search whose periphery the walks start from.
    pub depth: usize,
    /// Depth `dmax` the walks go to, counted from the search's root.
    pub dmax: usize,
    /// Walks `k` per probe of FindCriticalTransition.
    pub walks: usize,
    /// Event weights; `None` takes the model's.
    pub weights: Option<Weights>,
    /// The seed every walk derives from.
    pub seed: u64,
    /// Worker threads for the walks.
    pub threads: usize,
    /// Where the search starts.
    pub prefix: Prefix,
    /// How many times case C2 may double `dmax` before the run says it cannot tell.
    pub raises: u32,
    /// How long a handler may run before it is reported as a divergence.
    pub watchdog: Duration,
    /// Whether `always` properties are checked during the search and the walks (a run that
    /// looks only for liveness violations turns this off; handler assertions and panics are
    /// always reported).
    pub invariants: bool,
    /// Steps kept on the dead path after the critical transition.
    pub tail: usize,
    /// Stops cleanly after this long.
    pub timeout: Option<Duration>,
    /// Stops cleanly when raised.
    pub interrupt: Option<Interrupt>,
    /// Receives progress snapshots.
    pub progress: Option<LivenessSink>,
}

impl Default for LivenessOptions {
    fn default() -> Self {
        LivenessOptions {
            depth: 4,
            dmax: 20_000,
            walks: 16,
            weights: None,
            seed: 0,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            prefix: Prefix::Start,
            raises: 3,
            watchdog: Duration::from_secs(1),
            invariants: true,
            tail: 5,
            timeout: None,
            interrupt: None,
            progress: None,
        }
    }
}

/// The properties that make a world live: every `eventually` property of the model.
#[derive(Clone, Debug)]
pub(crate) struct LiveSet(Arc<[usize]>);

impl LiveSet {
    fn of<P: Protocol>(model: &Model<P>) -> Self {
        let properties = model.properties().iter().enumerate();
        LiveSet(properties.filter(|(_, p)| p.kind() == PropertyKind::Eventually).map(|(i, _)| i).collect())
    }

    /// Whether every liveness property holds in `world` (a predicate that panics does not).
    pub(crate) fn holds<P: Protocol>(&self, model: &Model<P>, world: &World<P>) -> bool {
        self.0.iter().all(|&i| holds(model, i, world))
    }

    /// The names of the liveness properties that do not hold in `world`.
    fn not_live<P: Protocol>(&self, model: &Model<P>, world: &World<P>) -> Vec<String> {
        let properties = model.properties();
        self.0
            .iter()
            .filter(|&&i| !holds(model, i, world))
            .map(|&i| properties[i].name().to_string())
            .collect()
    }
}

fn holds<P: Protocol>(model: &Model<P>, property: usize, world: &World<P>) -> bool {
    catch_panic(|| model.properties()[property].holds(world)).unwrap_or(false)
}

/// Why a liveness run cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LivenessError {
    /// The model does not validate.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The model declares no `eventually` property, so no world is ever live or dead.
    #[error("the model declares no `eventually` property to check")]
    NoLivenessProperty,
    /// An option is out of range.
    #[error("{0}")]
    BadOption(String),
}

/// A liveness run being configured.
#[must_use = "a liveness run does nothing until it is run"]
pub struct Liveness<P: Protocol> {
    model: Arc<Model<P>>,
    options: LivenessOptions,
}

impl<P: Protocol> Liveness<P> {
    /// A run of `model` with default options.
    pub fn new(model: Arc<Model<P>>) -> Self {
        Liveness { model, options: LivenessOptions::default() }
    }

    /// A run of `model` with `options`.
    pub fn with_options(model: Arc<Model<P>>, options: LivenessOptions) -> Self {
        Liveness { model, options }
    }

    /// Sets the exhaustive depth `d`.
    pub fn depth(mut self, depth: usize) -> Self {
        self.options.depth = depth;
        self
    }

    /// Sets the walk depth `dmax`.
    pub fn dmax(mut self, dmax: usize) -> Self {
        self.options.dmax = dmax;
        self
    }

    /// Sets the walks `k` per probe.
    pub fn walks(mut self, walks: usize) -> Self {
        self.options.walks = walks;
        self
    }

    /// Sets the event weights.
    pub fn weights(mut self, weights: Weights) -> Self {
        self.options.weights = Some(weights);
        self
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.options.seed = seed;
        self
    }

    /// Sets the worker threads.
    pub fn threads(mut self, threads: usize) -> Self {
        self.options.threads = threads;
        self
    }

    /// Sets where the search starts.
    pub fn prefix(mut self, prefix: Prefix) -> Self {
        self.options.prefix = prefix;
        self
    }

    /// Sets how many times C2 may double `dmax`.
    pub fn raises(mut self, raises: u32) -> Self {
        self.options.raises = raises;
        self
    }

    /// Sets whether `always` properties are checked on the way.
    pub fn invariants(mut self, check: bool) -> Self {
        self.options.invariants = check;
        self
    }

    /// Sets the divergence watchdog.
    pub fn watchdog(mut self, watchdog: Duration) -> Self {
        self.options.watchdog = watchdog;
        self
    }

    /// Stops cleanly after `timeout`, with a partial report.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.options.timeout = Some(timeout);
        self
    }

    /// Stops cleanly when `interrupt` is raised, with a partial report.
    pub fn interrupt(mut self, interrupt: Interrupt) -> Self {
        self.options.interrupt = Some(interrupt);
        self
    }

    /// Runs the search.
    ///
    /// # Errors
    /// A [`LivenessError`] if the model does not validate, has no liveness property, or an
    /// option is out of range.
    pub fn run(self) -> Result<LivenessReport, LivenessError> {
        let o = &self.options;
        if o.walks == 0 || o.dmax == 0 || o.dmax <= o.depth {
            return Err(LivenessError::BadOption(format!(
                "need at least one walk per probe and dmax above the depth (walks {}, depth {}, dmax {})",
                o.walks, o.depth, o.dmax
            )));
        }
        Simulator::new(&self.model)?;
        let live = LiveSet::of(&self.model);
        if live.0.is_empty() {
            return Err(LivenessError::NoLivenessProperty);
        }
        Ok(Run::new(self.model, self.options, live).run())
    }

    /// MaceMC's Figure 4 measurement: `walks` random walks from the start world (after the
    /// prefix, if any) with this run's weights, each up to `dmax` steps, on the run's threads;
    /// for each, the steps it took to reach a live world, or `None` if it never did (or met a
    /// violation). Walks the run's timeout or interrupt cut short are left out.
    ///
    /// # Errors
    /// As [`Liveness::run`]; a walk that diverges is an error too.
    pub fn steps_to_liveness(self, walks: usize) -> Result<Vec<Option<usize>>, LivenessError> {
        Simulator::new(&self.model)?;
        let live = LiveSet::of(&self.model);
        if live.0.is_empty() {
            return Err(LivenessError::NoLivenessProperty);
        }
        let mut run = Run::new(self.model, self.options, live);
        let start = run.starts().swap_remove(0);
        let root = run
            .root(start)
            .map_err(|_| LivenessError::BadOption("the start does not lead to a live world".into()))?;
        let o = &run.options;
        let mut pool =
            Pool::new(&run.model, o.threads, run.weights, &run.live, o.invariants, o.watchdog, &run.stop);
        let jobs: Vec<Arc<Job<P>>> = (0..walks)
            .map(|i| Arc::new(Job { start: root.clone(), max_steps: run.dmax, seed: o.seed, walk: i as u64 }))
            .collect();
        let walked = pool
            .run(&jobs)
            .map_err(|s| LivenessError::BadOption(format!("walk diverged after {} steps", s.steps)))?;
        let finished = walked.into_iter().filter(|w| !matches!(w.end, WalkEnd::Stopped));
        Ok(finished.map(|w| matches!(w.end, WalkEnd::Live).then_some(w.steps.len())).collect())
    }
}

/// One liveness run.
struct Run<P: Protocol> {
    model: Arc<Model<P>>,
    options: LivenessOptions,
    live: LiveSet,
    weights: Weights,
    started: Instant,
    /// Whether the run must stop (interrupted, out of time); shared with the walk workers.
    stop: Arc<Stop>,
    stats: LivenessStats,
    dmax: usize,
    /// The `init` choices of the root and the steps from it to the search's root.
    init_choices: Vec<usize>,
    prefix: Steps,
    /// The first undecided (C2) path's report, kept while the rest of the periphery is scanned
    /// for a decisive one.
    undecided: Option<LivenessReport>,
    /// Suspects seen when the first undecided path was kept.
    undecided_at: u64,
}

impl<P: Protocol> Run<P> {
    fn new(model: Arc<Model<P>>, options: LivenessOptions, live: LiveSet) -> Self {
        let weights = options.weights.unwrap_or_else(|| model.walk_weights());
        let dmax = options.dmax;
        let started = Instant::now();
        let stop = Arc::new(Stop::new(started, options.timeout, options.interrupt.clone()));
        Run {
            model,
            options,
            live,
            weights,
            started,
            stop,
            stats: LivenessStats::default(),
            dmax,
            init_choices: Vec::new(),
            prefix: Vec::new(),
            undecided: None,
            undecided_at: 0,
        }
    }

    fn sim(&self) -> Simulator<'_, P> {
        Simulator::new(&self.model).expect("validated when the run started")
    }

    /// The start worlds: the initial worlds (one per choice vector of the `init` handlers), or
    /// the start scenario's world.
    fn starts(&self) -> Vec<(Vec<usize>, World<P>, Option<foretell_model::StepViolation>)> {
        let mut starts = Vec::new();
        self.sim().initial_worlds(|choices, world, violation| starts.push((choices, world, violation)));
        starts
    }

    /// The search's root from the start world `start` (reached with `init_choices`): that
    /// world, or the end of the live prefix.
    fn root(
        &mut self,
        (init_choices, root, violation): (Vec<usize>, World<P>, Option<foretell_model::StepViolation>),
    ) -> Result<World<P>, Box<LivenessReport>> {
        self.init_choices = init_choices;
        self.prefix.clear();
        if let Some(v) = violation {
            return Err(Box::new(self.safety(&[], v)));
        }
        let Prefix::Live { faults } = self.options.prefix else { return Ok(root) };
        match self.live_prefix(&root, faults) {
            Ok(Some((steps, world))) => {
                self.prefix = steps;
                Ok(world)
            }
            Ok(None) => Err(Box::new(self.finish(LivenessVerdict::NoLivePrefix, None))),
            Err(report) => Err(report),
        }
    }

    /// Searches from every start world in turn; the first decisive finding ends the run, and so
    /// does a stop. An undecided (C2) path is kept while the rest is scanned, and reported if
    /// nothing decisive turns up.
    fn run(&mut self) -> LivenessReport {
        let o = &self.options;
        let mut pool =
            Pool::new(&self.model, o.threads, self.weights, &self.live, o.invariants, o.watchdog, &self.stop);
        for start in self.starts() {
            let root = match self.root(start) {
                Ok(root) => root,
                Err(report) => return *report,
            };
            let periphery = match self.search(&root) {
                Ok(periphery) => periphery,
                Err(report) => return *report,
            };
            let worlds = match periphery {
                Periphery::Violation(v, steps, stats) => {
                    self.stats.search_states += stats.unique;
                    return self.safety(&steps, v);
                }
                Periphery::Worlds(worlds, stats) => {
                    self.stats.search_states += stats.unique;
                    worlds
                }
            };
            self.stats.periphery += worlds.len() as u64;
            if let Some(report) = self.scan(&mut pool, &root, &worlds) {
                return report;
            }
        }
        match self.undecided.take() {
            Some(report) => self.refreshed(report),
            None => self.finish(LivenessVerdict::NoSuspect, None),
        }
    }

    /// Walks from `root` until a live world, for the prefix-based search (a stop ends the run).
    fn live_prefix(
        &mut self,
        root: &World<P>,
        faults: bool,
    ) -> Result<Option<(Steps, World<P>)>, Box<LivenessReport>> {
        let sim = self.sim();
        let weights = if faults { self.weights } else { self.weights.without_faults() };
        let is_live = |w: &World<P>| self.live.holds(&self.model, w);
        let walker = Walker {
            sim: &sim,
            weights,
            live: &is_live,
            invariants: self.options.invariants,
            stop: &self.stop,
        };
        let mut rng = WalkRng::new(self.options.seed, u64::MAX);
        let walked = walker.walk(root, self.dmax, &mut rng, |_, _| {});
        match walked.end {
            WalkEnd::Live => Ok(Some((walked.steps, walked.last))),
            WalkEnd::Violation(v) => Err(Box::new(self.safety(&walked.steps, v))),
            WalkEnd::Exhausted | WalkEnd::Stuck => Ok(None),
            WalkEnd::Stopped => Err(Box::new(self.stopped())),
        }
    }

    /// The exhaustive search to depth `d`, on a watched thread of its own.
    fn search(&mut self, root: &World<P>) -> Result<Periphery<P>, Box<LivenessReport>> {
        let beat = Arc::new(SearchBeat::default());
        let (sender, receiver) = std::sync::mpsc::channel();
        {
            let (model, root, live, beat) =
                (Arc::clone(&self.model), root.clone(), self.live.clone(), Arc::clone(&beat));
            let (depth, invariants) = (self.options.depth, self.options.invariants);
            std::thread::spawn(move || {
                let _ = sender.send(periphery::search(&model, &root, depth, &live, invariants, &beat));
            });
        }
        let mut last = (0, Instant::now());
        loop {
            match receiver.recv_timeout(Duration::from_millis(20)) {
                Ok(periphery) => return Ok(periphery),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    unreachable!("the search thread sends before it ends")
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            }
            if self.stop.poll().is_some() {
                beat.stop.store(true, Ordering::Relaxed);
                return Err(Box::new(self.stopped()));
            }
            let expanded = beat.expanded.load(Ordering::Acquire);
            if expanded != last.0 {
                last = (expanded, Instant::now());
            } else if last.1.elapsed() > self.options.watchdog {
                return Err(Box::new(self.divergence_in_search(root, beat.current())));
            }
        }
    }

    /// Walks from each periphery world in turn (in parallel batches, in order) until a suspect
    /// is confirmed dead, a violation or divergence turns up, or the run must stop (a report),
    /// or the periphery is done (`None`). The first undecided (C2) path is kept in
    /// `self.undecided`, and at most [`UNDECIDED_MORE`] further suspects are examined after it.
    /// A stop during a batch or a confirmation leaves the suspects not yet examined, and the
    /// one being examined, unconfirmed.
    fn scan(
        &mut self,
        pool: &mut Pool<P>,
        root: &World<P>,
        periphery: &[(World<P>, Steps)],
    ) -> Option<LivenessReport> {
        let batch = self.options.threads.max(1) * 4;
        let mut next = 0;
        let mut raises = 0;
        let suspect = |w: &Walked<P>| matches!(w.end, WalkEnd::Exhausted | WalkEnd::Stuck);
        while next < periphery.len() {
            if self.stop.poll().is_some() {
                return Some(self.stopped());
            }
            let end = (next + batch).min(periphery.len());
            let jobs: Vec<Arc<Job<P>>> = (next..end)
                .map(|i| {
                    let (world, path) = &periphery[i];
                    Arc::new(Job {
                        start: world.clone(),
                        max_steps: self.dmax.saturating_sub(path.len()).max(1),
                        seed: self.options.seed,
                        walk: i as u64 | (u64::from(raises) << 40),
                    })
                })
                .collect();
            let walks = match pool.run(&jobs) {
                Ok(walks) => walks,
                Err(stalled) => {
                    let index = next + jobs.iter().position(|j| Arc::ptr_eq(j, &stalled.job)).unwrap_or(0);
                    return Some(self.divergence_in_walk(&periphery[index].1, &stalled));
                }
            };
            count_walks(&mut self.stats, &walks);
            let along = |offset: usize, walked: &Walked<P>| -> Steps {
                periphery[next + offset].1.iter().chain(&walked.steps).cloned().collect()
            };
            // A safety violation is definite: it goes first, whatever came before it in the batch.
            let violation = walks.iter().enumerate().find_map(|(offset, w)| match &w.end {
                WalkEnd::Violation(v) => Some((along(offset, w), v.clone())),
                _ => None,
            });
            if let Some((steps, v)) = violation {
                return Some(self.safety(&steps, v));
            }
            if walks.iter().any(|w| matches!(w.end, WalkEnd::Stopped)) {
                // The stop cut the batch short: the walks that did finish as suspects stay so.
                let suspects = walks.iter().filter(|w| suspect(w)).count();
                self.suspects(suspects);
                self.stats.unconfirmed += suspects as u64;
                return Some(self.stopped());
            }
            let mut resume = end;
            for (offset, walked) in walks.iter().enumerate() {
                if suspect(walked) {
                    if self.undecided.is_some() && self.stats.suspects >= self.undecided_at + UNDECIDED_MORE {
                        return self.undecided.take().map(|report| self.refreshed(report));
                    }
                    self.suspects(1);
                    // Shown before its confirmation, which can be long.
                    self.report_progress();
                    match self.confirm(pool, root, along(offset, walked), &mut raises) {
                        Confirmed::Report(report) => return Some(*report),
                        Confirmed::Undecided(report) => {
                            if self.undecided.is_none() {
                                self.undecided_at = self.stats.suspects;
                                self.undecided = Some(*report);
                            }
                        }
                        Confirmed::Recovered => {
                            // Not a suspect after all. The raised dmax applies to the rest
                            // of the periphery, whose walks are run anew.
                            self.stats.false_suspects += 1;
                            resume = next + offset + 1;
                            break;
                        }
                        Confirmed::Stopped => {
                            // Neither confirmed nor refuted, nor are the batch's later suspects.
                            let later = walks[offset + 1..].iter().filter(|w| suspect(w)).count();
                            self.suspects(later);
                            self.stats.unconfirmed += 1 + later as u64;
                            return Some(self.stopped());
                        }
                    }
                }
            }
            next = resume;
            self.report_progress();
        }
        None
    }

    /// FindCriticalTransition on a suspect path, raising `dmax` on C2 as often as allowed.
    fn confirm(
        &mut self,
        pool: &mut Pool<P>,
        root: &World<P>,
        mut steps: Steps,
        raises: &mut u32,
    ) -> Confirmed {
        loop {
            let Replay { worlds, parted, stopped } = self.replay(root, &steps, &self.stop);
            if let Some((at, problem)) = parted {
                return Confirmed::Report(Box::new(self.parted(&steps, at, &problem)));
            }
            if stopped {
                return Confirmed::Stopped;
            }
            let dinit = worlds.iter().rposition(|w| self.live.holds(&self.model, w)).map_or(0, |i| i + 1);
            let seed = self.options.seed.wrapping_add(u64::from(*raises));
            let (dmax, k) = (self.dmax, self.options.walks);
            let critical =
                match find_critical_transition(pool, &worlds, dinit, dmax, k, seed, &mut self.stats) {
                    Ok(critical) => critical,
                    // A half-finished search concludes nothing about the path.
                    Err(ProbeError::Stopped) => return Confirmed::Stopped,
                    Err(ProbeError::Stalled(from, stalled)) => {
                        return Confirmed::Report(Box::new(self.divergence_in_walk(&steps[..from], &stalled)))
                    }
                    Err(ProbeError::Violation(from, walk)) => {
                        let Walked { steps: walk_steps, end: WalkEnd::Violation(v), .. } = *walk else {
                            unreachable!("a probe error carries a walk that ended in a violation")
                        };
                        let path: Steps = steps[..from].iter().chain(&walk_steps).cloned().collect();
                        return Confirmed::Report(Box::new(self.safety(&path, v)));
                    }
                };
            if critical.case == Case::C1 {
                self.stats.confirm_seconds = Some(self.started.elapsed().as_secs_f64());
                let report = self.dead(&steps, &worlds, &critical);
                return Confirmed::Report(Box::new(report));
            }
            if *raises >= self.options.raises {
                let report = self.dead(&steps, &worlds, &critical);
                return Confirmed::Undecided(Box::new(report));
            }
            // C2: the walks may have been too short. Double dmax and extend the suspect walk.
            *raises += 1;
            self.dmax *= 2;
            self.report_progress();
            let last = worlds.last().expect("a path has a world").clone();
            let job = Arc::new(Job {
                start: last,
                max_steps: self.dmax.saturating_sub(steps.len()).max(1),
                seed: self.options.seed,
                walk: u64::MAX - u64::from(*raises),
            });
            let extension = match pool.run(std::slice::from_ref(&job)) {
                Ok(mut walks) => walks.pop().expect("one job, one walk"),
                Err(stalled) => {
                    return Confirmed::Report(Box::new(self.divergence_in_walk(&steps, &stalled)))
                }
            };
            count_walks(&mut self.stats, std::slice::from_ref(&extension));
            match extension.end {
                WalkEnd::Live => return Confirmed::Recovered,
                WalkEnd::Violation(v) => {
                    steps.extend(extension.steps);
                    return Confirmed::Report(Box::new(self.safety(&steps, v)));
                }
                WalkEnd::Exhausted | WalkEnd::Stuck => steps.extend(extension.steps),
                WalkEnd::Stopped => return Confirmed::Stopped,
            }
        }
    }

    /// Counts `n` more suspects.
    fn suspects(&mut self, n: usize) {
        if n > 0 {
            self.stats.suspects += n as u64;
            self.stats.first_suspect_seconds.get_or_insert(self.started.elapsed().as_secs_f64());
        }
    }

    /// `root` followed by the world after each of `steps`, re-executed on this thread. A step
    /// that is not enabled where the steps before it lead, or whose handler chooses differently,
    /// ends the replay there: a handler did not do here what it did on the walk that took the
    /// steps (see [`Run::parted`]). So does `stop` (polled every thousand steps or so; a path is
    /// up to `dmax` steps long): the replay is then `stopped`, its worlds a prefix of the path's.
    fn replay(&self, root: &World<P>, steps: &Steps, stop: &Stop) -> Replay<P> {
        let sim = self.sim();
        let mut worlds = Vec::with_capacity(steps.len() + 1);
        worlds.push(root.clone());
        for (at, (action, choices)) in steps.iter().enumerate() {
            if at > 0 && stop.poll_at(at).is_some() {
                return Replay { worlds, parted: None, stopped: true };
            }
            let world = worlds.last().expect("not empty");
            match sim.step_again(world, *action, choices, false) {
                Ok(outcome) => worlds.push(outcome.world),
                Err(problem) => return Replay { worlds, parted: Some((at, problem)), stopped: false },
            }
        }
        Replay { worlds, parted: None, stopped: false }
    }

    /// The trace from the initial world through the prefix and `steps`.
    fn record(&self, steps: &[(foretell_model::Action, Vec<usize>)]) -> Trace {
        let all: Steps = self.prefix.iter().chain(steps).cloned().collect();
        let mut trace = self.sim().record(&self.init_choices, &all);
        trace.engine = Some("liveness".into());
        trace.seed = Some(self.options.seed);
        trace
    }

    /// Trace steps before the search's root: the start scenario's and the prefix walk's.
    fn offset(&self, trace: &Trace) -> usize {
        trace.scenario.as_ref().map_or(0, |s| s.steps) + self.prefix.len()
    }

    fn safety(
        &mut self,
        steps: &[(foretell_model::Action, Vec<usize>)],
        violation: foretell_model::StepViolation,
    ) -> LivenessReport {
        let mut trace = self.record(steps);
        if trace.verdict.is_none() {
            trace.verdict = Some(TraceVerdict {
                property: violation.property.clone(),
                kind: violation.kind,
                step: trace.steps.len(),
                message: violation.message.clone(),
            });
        }
        self.finish(LivenessVerdict::SafetyViolation, Some(trace))
    }

    /// The report of a path whose step `at` did not re-execute on this thread as the walk that
    /// took it ran it, for the reason `problem`: its trace ends where it parted, with a
    /// nondeterminism verdict, as a safety violation of "deterministic handlers".
    fn parted(&mut self, steps: &Steps, at: usize, problem: &str) -> LivenessReport {
        let mut trace = self.record(&steps[..=at]);
        if trace.verdict.is_none() {
            trace.verdict = Some(TraceVerdict::parted(self.offset(&trace) + at + 1, problem));
        }
        self.finish(LivenessVerdict::SafetyViolation, Some(trace))
    }

    /// The report of a dead (C1) or undecided (C2) suspect path.
    fn dead(&mut self, steps: &Steps, worlds: &[World<P>], critical: &Critical<P>) -> LivenessReport {
        let keep = (critical.step + self.options.tail).min(steps.len());
        let mut trace = self.record(&steps[..keep]);
        let offset = self.offset(&trace);
        let last = worlds.last().expect("a path has a world");
        let not_live = self.live.not_live(&self.model, last);
        let (case, verdict) = match critical.case {
            Case::C1 => ("C1", LivenessVerdict::Dead),
            Case::C2 => ("C2", LivenessVerdict::Inconclusive),
        };
        let message = match critical.case {
            Case::C1 => format!(
                "after step {} no walk of {} reaches a world where {} hold",
                offset + critical.step,
                self.dmax,
                not_live.join(", ")
            ),
            Case::C2 => format!(
                "no live world within {} steps of the path, and no dead world early enough on it to be sure \
                 (dmax raised {} times): a livelock from the start of the path, or walks still too short",
                self.dmax, self.options.raises
            ),
        };
        if !trace.parted() {
            trace.verdict = Some(TraceVerdict {
                property: not_live.join(", "),
                kind: ViolationKind::Liveness,
                step: offset + critical.step,
                message,
            });
        }
        let nearest =
            critical.nearest.as_ref().map(|n| self.nearest_live(steps, worlds, n, critical.step, offset));
        let (nearest_live, diff) = match nearest {
            Some((live, diff)) => (Some(live), diff),
            None => (None, Vec::new()),
        };
        trace.liveness = Some(foretell_model::LivenessFinding {
            case: case.into(),
            critical_step: offset + critical.step,
            not_live,
            path_length: offset + steps.len(),
            nearest_live,
            diff,
        });
        self.finish(verdict, Some(trace))
    }

    /// The nearest live path (the dead path's first `from` steps, then the recovering walk) and
    /// the per-node difference after the critical step.
    fn nearest_live(
        &self,
        steps: &Steps,
        worlds: &[World<P>],
        recovery: &critical::Recovery<P>,
        critical: usize,
        offset: usize,
    ) -> (foretell_model::NearestLive, Vec<foretell_model::NodeDiff>) {
        let from = recovery.from;
        let live_steps: Steps = steps[..from].iter().chain(&recovery.walk.steps).cloned().collect();
        let trace = self.record(&live_steps);
        let shared = offset + from;
        // A recovering walk that does not re-execute here leaves a shorter trace and fewer worlds.
        let nearest = foretell_model::NearestLive {
            shared,
            steps: trace.steps.get(shared..).unwrap_or_default().to_vec(),
        };
        // The live path's world as many steps in as the dead path's first dead world.
        let live_worlds = self.replay(&worlds[from], &recovery.walk.steps, &Stop::never()).worlds;
        let live_world = &live_worlds[(critical - from).min(live_worlds.len() - 1)];
        (nearest, report::diff(&worlds[critical], live_world))
    }

    fn divergence_in_search(&mut self, root: &World<P>, path: Steps) -> LivenessReport {
        let worlds = self.replay(root, &path, &Stop::never()).worlds;
        let world = worlds.last().expect("a path has a world");
        let event = pool::diverging_event(&self.model, world, self.options.watchdog);
        self.divergence(&path, event)
    }

    fn divergence_in_walk(
        &mut self,
        path: &[(foretell_model::Action, Vec<usize>)],
        stalled: &Stalled<P>,
    ) -> LivenessReport {
        // Re-run the walk up to the step that hung (its earlier steps returned), then draw the
        // event it was about to run. The divergence is a finding: the re-run is not cut short.
        let sim = self.sim();
        let is_live = |w: &World<P>| self.live.holds(&self.model, w);
        let never = Stop::never();
        let walker = Walker {
            sim: &sim,
            weights: self.weights,
            live: &is_live,
            invariants: self.options.invariants,
            stop: &never,
        };
        let mut rng = WalkRng::new(stalled.job.seed, stalled.job.walk);
        let walked = walker.walk(&stalled.job.start, stalled.steps, &mut rng, |_, _| {});
        let mut actions = Vec::new();
        sim.actions(&walked.last, &mut actions);
        // The walk drew these events here and found them no step before it drew the one that
        // hung: the same draws, without running their handlers again.
        for _ in 0..stalled.idle {
            if let Some(idle) = walker.draw(&actions, &mut rng) {
                actions.retain(|a| *a != idle);
            }
        }
        let event = walker.draw(&actions, &mut rng).map(|a| sim.event(&walked.last, a));
        let steps: Steps = path.iter().chain(&walked.steps).cloned().collect();
        self.divergence(&steps, event)
    }

    fn divergence(
        &mut self,
        steps: &[(foretell_model::Action, Vec<usize>)],
        event: Option<EventOf<P>>,
    ) -> LivenessReport {
        let mut trace = self.record(steps);
        let what = match &event {
            Some(event) => format!(
                "{} did not return from {} within {:?}",
                event.node(),
                json_view(event),
                self.options.watchdog
            ),
            None => format!("a handler did not return within {:?}", self.options.watchdog),
        };
        if !trace.parted() {
            trace.verdict = Some(TraceVerdict {
                property: "divergence".into(),
                kind: ViolationKind::Divergence,
                step: trace.steps.len() + 1,
                message: what,
            });
        }
        self.finish(LivenessVerdict::Divergence, Some(trace))
    }

    /// A report kept while the run went on, with the whole run's counts.
    fn refreshed(&mut self, report: LivenessReport) -> LivenessReport {
        let mut latest = self.finish(report.verdict, report.trace);
        latest.dmax = report.dmax.max(latest.dmax);
        latest
    }

    fn property_names(&self) -> Vec<String> {
        let properties = self.model.properties();
        self.live.0.iter().map(|&i| properties[i].name().to_string()).collect()
    }

    /// The report of a run that was stopped: its counts so far, and the undecided (C2) path it
    /// had kept, if any (a finding of its own; the suspects not yet examined are counted as
    /// unconfirmed and reported as nothing more).
    fn stopped(&mut self) -> LivenessReport {
        let why = self.stop.reason().expect("a run stops after a poll found why");
        let verdict = LivenessVerdict::Stopped(why);
        match self.undecided.take() {
            Some(kept) => LivenessReport { verdict, ..self.refreshed(kept) },
            None => self.finish(verdict, None),
        }
    }

    fn report_progress(&self) {
        if let Some(sink) = &self.options.progress {
            sink(&LivenessProgress {
                walks: self.stats.walks,
                suspects: self.stats.suspects,
                dmax: self.dmax,
                elapsed: self.started.elapsed(),
            });
        }
    }

    fn finish(&mut self, verdict: LivenessVerdict, trace: Option<Trace>) -> LivenessReport {
        self.report_progress();
        self.stats.seconds = self.started.elapsed().as_secs_f64();
        LivenessReport {
            verdict,
            properties: self.property_names(),
            trace,
            stats: self.stats.clone(),
            dmax: self.dmax,
        }
    }
}

/// The worlds a replay went through, and, if it stopped short, the index of the step that did
/// not re-execute and why, or whether the run's stop cut it short.
struct Replay<P: Protocol> {
    worlds: Vec<World<P>>,
    parted: Option<(usize, String)>,
    stopped: bool,
}

/// Counts `walks` in `stats`: every walk that ran (one the run's stop ended before its first
/// step did not).
fn count_walks<P: Protocol>(stats: &mut LivenessStats, walks: &[Walked<P>]) {
    for walk in walks.iter().filter(|w| !(matches!(w.end, WalkEnd::Stopped) && w.steps.is_empty())) {
        stats.walks += 1;
        stats.walk_steps += walk.steps.len() as u64;
    }
}

/// Suspects examined after the first undecided (C2) one before the run gives up looking for a
/// dead one.
const UNDECIDED_MORE: u64 = 8;

/// How confirming a suspect ended.
enum Confirmed {
    /// A decisive report: a dead path, a safety violation or a divergence.
    Report(Box<LivenessReport>),
    /// Still C2 after every allowed raise of `dmax`.
    Undecided(Box<LivenessReport>),
    /// The extended suspect walk reached a live world: not a suspect after all.
    Recovered,
    /// The run was stopped before the suspect was confirmed or refuted.
    Stopped,
}
