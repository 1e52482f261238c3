//! The walk pool: worker threads that run random walks, and the divergence watchdog (MaceMC,
//! NSDI'07, section 3.1: a handler that never returns is a bug to report, not a reason for the
//! checker to hang).
//!
//! Workers are detached threads that own the model (`Arc`), so a worker stuck in a handler that
//! never returns can be abandoned: the run reports the divergence and goes on without it (the
//! thread itself cannot be stopped from outside; it ends with the process). Each worker
//! publishes a heartbeat — the job it runs and the steps it has taken — before every step; a
//! job whose heartbeat has not moved for longer than the watchdog is a divergence at that step.
//! Walks are pure functions of (start, seed, bounds), so the coordinator rebuilds the diverging
//! walk's path by re-running it up to the step that hung, without running that step.
//!
//! The workers share the run's [`Stop`]: once the run is interrupted or out of time, the walk
//! each worker is running ends within about a thousand steps and every walk still queued ends
//! before its first step, all as [`WalkEnd::Stopped`](super::walk::WalkEnd::Stopped), so a batch
//! returns promptly, whatever `dmax`, and the caller decides what its finished walks mean.

use super::walk::{WalkRng, Walked, Walker};
use super::LiveSet;
use crate::stop::Stop;
use foretell_model::{Model, Protocol, Simulator, Weights, World};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const IDLE: u64 = u64::MAX;
/// How often the coordinator looks at the heartbeats while it waits.
const PULSE: Duration = Duration::from_millis(20);

/// One walk to run.
pub(crate) struct Job<P: Protocol> {
    pub(crate) start: World<P>,
    pub(crate) max_steps: usize,
    pub(crate) seed: u64,
    pub(crate) walk: u64,
}

/// A walk that did not come back: its job, how many steps it had taken, and how many events
/// of the world it hung in it had already drawn and found to be no step.
pub(crate) struct Stalled<P: Protocol> {
    pub(crate) job: Arc<Job<P>>,
    pub(crate) steps: usize,
    pub(crate) idle: usize,
}

/// A worker's heartbeat: its job, and its walk's steps and idle draws (as `Walker::walk` ticks).
struct Beat {
    job: AtomicU64,
    steps: AtomicU64,
    idle: AtomicU64,
}

type Shared<P> = Arc<Mutex<Receiver<(usize, Arc<Job<P>>)>>>;

/// Worker threads running walks, with heartbeats.
pub(crate) struct Pool<P: Protocol> {
    jobs: Option<Sender<(usize, Arc<Job<P>>)>>,
    results: Receiver<(usize, Walked<P>)>,
    beats: Vec<Arc<Beat>>,
    watchdog: Duration,
}

impl<P: Protocol> Pool<P> {
    /// `threads` workers walking `model` with `weights`, "live" meaning `live`, until `stop`.
    pub(crate) fn new(
        model: &Arc<Model<P>>,
        threads: usize,
        weights: Weights,
        live: &LiveSet,
        invariants: bool,
        watchdog: Duration,
        stop: &Arc<Stop>,
    ) -> Self {
        let (jobs, queue) = channel::<(usize, Arc<Job<P>>)>();
        let queue: Shared<P> = Arc::new(Mutex::new(queue));
        let (report, results) = channel();
        let beats: Vec<Arc<Beat>> = (0..threads.max(1))
            .map(|_| {
                Arc::new(Beat {
                    job: AtomicU64::new(IDLE),
                    steps: AtomicU64::new(0),
                    idle: AtomicU64::new(0),
                })
            })
            .collect();
        for beat in &beats {
            let (model, queue, report, beat, live, stop) = (
                Arc::clone(model),
                Arc::clone(&queue),
                report.clone(),
                Arc::clone(beat),
                live.clone(),
                Arc::clone(stop),
            );
            let walking = Walking { weights, live, invariants, stop };
            std::thread::spawn(move || work(&model, &walking, &queue, &report, &beat));
        }
        Pool { jobs: Some(jobs), results, beats, watchdog }
    }

    /// Runs `jobs` and returns their walks in job order (those the run's stop cut short end
    /// [`WalkEnd::Stopped`](super::walk::WalkEnd::Stopped)), or the first walk that stalled.
    pub(crate) fn run(&mut self, jobs: &[Arc<Job<P>>]) -> Result<Vec<Walked<P>>, Stalled<P>> {
        let sender = self.jobs.as_ref().expect("the pool is open");
        for (i, job) in jobs.iter().enumerate() {
            sender.send((i, Arc::clone(job))).expect("workers live as long as the pool");
        }
        let mut done: Vec<Option<Walked<P>>> = (0..jobs.len()).map(|_| None).collect();
        let mut remaining = jobs.len();
        let mut seen: Vec<(u64, u64, u64, Instant)> =
            self.beats.iter().map(|_| (IDLE, 0, 0, Instant::now())).collect();
        while remaining > 0 {
            match self.results.recv_timeout(PULSE) {
                Ok((i, walked)) => {
                    done[i] = Some(walked);
                    remaining -= 1;
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => unreachable!("the pool holds a sender"),
            }
            if let Some((job, steps, idle)) = self.stalled(&mut seen) {
                // Drop the queue: idle workers finish, the stuck one is abandoned.
                self.jobs = None;
                return Err(Stalled { job: Arc::clone(&jobs[job]), steps, idle });
            }
        }
        Ok(done.into_iter().map(|w| w.expect("every job reported")).collect())
    }

    /// The first busy worker whose heartbeat has not moved for longer than the watchdog.
    fn stalled(&self, seen: &mut [(u64, u64, u64, Instant)]) -> Option<(usize, usize, usize)> {
        let now = Instant::now();
        for (beat, (job, steps, idle, since)) in self.beats.iter().zip(seen.iter_mut()) {
            let (j, s, i) = (
                beat.job.load(Ordering::Acquire),
                beat.steps.load(Ordering::Acquire),
                beat.idle.load(Ordering::Acquire),
            );
            if (j, s, i) != (*job, *steps, *idle) {
                (*job, *steps, *idle, *since) = (j, s, i, now);
            } else if j != IDLE && now - *since > self.watchdog {
                return Some((j as usize, s as usize, i as usize));
            }
        }
        None
    }
}

/// What a worker walks with, besides the model.
struct Walking {
    weights: Weights,
    live: LiveSet,
    invariants: bool,
    stop: Arc<Stop>,
}

fn work<P: Protocol>(
    model: &Model<P>,
    walking: &Walking,
    queue: &Shared<P>,
    report: &Sender<(usize, Walked<P>)>,
    beat: &Beat,
) {
    let sim = Simulator::new(model).expect("the coordinator validated the model");
    let is_live = |w: &World<P>| walking.live.holds(model, w);
    let walker = Walker {
        sim: &sim,
        weights: walking.weights,
        live: &is_live,
        invariants: walking.invariants,
        stop: &walking.stop,
    };
    loop {
        let next = queue.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok((i, job)) = next else { return };
        beat.steps.store(0, Ordering::Release);
        beat.idle.store(0, Ordering::Release);
        beat.job.store(i as u64, Ordering::Release);
        let mut rng = WalkRng::new(job.seed, job.walk);
        let walked = walker.walk(&job.start, job.max_steps, &mut rng, |steps, idle| {
            beat.steps.store(steps as u64, Ordering::Release);
            beat.idle.store(idle as u64, Ordering::Release);
        });
        beat.job.store(IDLE, Ordering::Release);
        if report.send((i, walked)).is_err() {
            return;
        }
    }
}

/// Which enabled event of `world` does not return within `watchdog`: each is run on a thread of
/// its own (with its handler's first choice values), and the first that does not finish in time
/// is named. The threads of events that do not finish are abandoned.
pub(crate) fn diverging_event<P: Protocol>(
    model: &Arc<Model<P>>,
    world: &World<P>,
    watchdog: Duration,
) -> Option<foretell_model::EventOf<P>> {
    let sim = Simulator::new(model).expect("the coordinator validated the model");
    let mut actions = Vec::new();
    sim.actions(world, &mut actions);
    actions.into_iter().find_map(|action| {
        let (model, world2) = (Arc::clone(model), world.clone());
        let (done, finished) = channel();
        std::thread::spawn(move || {
            let sim = Simulator::new(&model).expect("validated");
            let mut odometer = foretell_model::ChoiceOdometer::new();
            let _ = sim.step(&world2, action, &mut odometer, false);
            let _ = done.send(());
        });
        match finished.recv_timeout(watchdog) {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => Some(sim.event(world, action)),
        }
    })
}
