//! The distributed breadth-first search: level-synchronous, hash-partitioned (distributed TLC,
//! PReach, after Stern and Dill's parallel Murφ).
//!
//! Every world has one owner among the cluster's workers, `(key.short() >> 32) % workers`,
//! where the key is the world's fingerprint (its orbit's canonical fingerprint under a declared
//! symmetry). Routing uses the high half of the 64-bit fingerprint because hash tables index
//! buckets with the low bits: routing on those too would leave every owner's visited set using
//! a biased slice of its buckets.
//!
//! Round `d` (timely timestamp `d + 1` on the world exchange):
//! 1. each worker expands the worlds it owns at depth `d`, in the one simulator's order, and
//!    counts every step as a transition; a step that violates a handler property is a finding
//!    at depth `d + 1`;
//! 2. a successor owned by the worker itself is checked against its visited set at once; one
//!    owned by another worker is skipped if this worker already sent that key (a bounded
//!    "already sent" cache, see [`SENT_CACHE_MAX`]), otherwise built, encoded
//!    ([`World::to_bytes`]) and sent with its path through timely's `exchange` pact to its
//!    owner, whose operator drops it if its visited set has the key;
//! 3. each owner decodes its new worlds as they arrive (a [`WorldDecoder`] shares their equal
//!    node states and networks, as the simulator does for the worlds it builds), and once
//!    timely's probe says every message of the round was received, counts them and checks their
//!    invariants (and `sometimes` goals): depth `d + 1`;
//! 4. every worker broadcasts a summary (counts, level size, best finding, local stop reasons)
//!    at timestamp `d + 1` and reads everyone's ([`crate::rounds`]): all take the same decision
//!    — stop at a finding (the smallest (depth, fingerprint)), at an empty level, at a bound or
//!    an interrupt; else expand depth `d + 1`.
//!
//! Worlds travel with their paths ([`crate::path`]); global worker 0 rebuilds the trace.

use crate::launch::{self, wait_until, LeakOnUnwind, Local};
use crate::path::{self, Finding, Root};
use crate::rounds::Rounds;
use crate::{ClusterConfig, ClusterError};
use foretell_check::{
    over_budget, peak_resident_bytes, prepare_peak, CheckOptions, Completion, EngineKind, FingerprintBits,
    Memory, Progress, PropertyReport, Report, Stats,
};
use foretell_model::{
    Fingerprint, Model, PropertyKind, Protocol, Simulator, StepViolation, World, WorldDecoder,
};
use rustc_hash::FxHashSet;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::{Input, Probe};
use timely::dataflow::{InputHandleVec, ProbeHandle};
use timely::worker::Worker;

/// The most keys a worker remembers having sent (8 or 16 bytes each, as the visited set); the
/// cache is emptied when full. It only saves messages: the owner's visited set decides what is new.
const SENT_CACHE_MAX: usize = 1 << 20;
/// A worker lets timely run (deliver and deduplicate what it received) after expanding this
/// many worlds, so that a level's messages do not all wait in channels until its end.
const STEP_EVERY: usize = 256;
/// The engine name written into traces.
const ENGINE: &str = "cluster-bfs";

/// A world on its way to its owner.
#[derive(Clone, Serialize, Deserialize)]
struct Shipped {
    /// The key the owner's visited set stores.
    key: u128,
    root: u32,
    path: Vec<u32>,
    /// [`World::to_bytes`].
    world: Vec<u8>,
}

/// A world of the current level, owned by this worker.
struct Entry<P: Protocol> {
    world: World<P>,
    root: u32,
    path: Vec<u32>,
}

/// Why a worker asks to stop, from what only its own process can see.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum Halt {
    Interrupted,
    Time,
    Memory,
}

/// One worker's report at the end of a round.
#[derive(Clone, Serialize, Deserialize)]
struct Summary {
    /// Distinct worlds this worker owns.
    unique: u64,
    /// Steps this worker executed.
    transitions: u64,
    max_depth: u32,
    /// Bytes held by this worker's visited set.
    visited_bytes: u64,
    /// Worlds this worker owns at the new depth, to expand next.
    level: u64,
    covered: Vec<bool>,
    found: Option<Finding>,
    halt: Option<Halt>,
    /// Whether this worker stopped expanding its level part-way, for `halt`.
    cut: bool,
    /// Something this worker received that does not decode.
    error: Option<String>,
}

/// What every worker decides from a round's summaries.
enum Decision {
    Expand,
    Stop(Completion),
}

/// The keys a worker stores (visited, or already sent): 64 or 128 bits of the fingerprint.
enum Visited {
    Short(FxHashSet<u64>),
    Wide(FxHashSet<u128>),
}

impl Visited {
    fn new(bits: FingerprintBits) -> Self {
        match bits {
            FingerprintBits::B64 => Visited::Short(FxHashSet::default()),
            FingerprintBits::B128 => Visited::Wide(FxHashSet::default()),
        }
    }

    /// Whether `key` is new (it is then stored).
    fn insert(&mut self, key: u128) -> bool {
        match self {
            Visited::Short(set) => set.insert(key as u64),
            Visited::Wide(set) => set.insert(key),
        }
    }

    fn len(&self) -> usize {
        match self {
            Visited::Short(set) => set.len(),
            Visited::Wide(set) => set.len(),
        }
    }

    /// The memory the set holds: its slots and their control bytes.
    fn bytes(&self) -> u64 {
        let (slots, key) = match self {
            Visited::Short(set) => (set.capacity(), 8),
            Visited::Wide(set) => (set.capacity(), 16),
        };
        (slots * (key + 1)) as u64
    }
}

/// What the receiving operator shares with its worker's loop.
struct Inbox {
    visited: Visited,
    /// New worlds received, with the timestamp they travelled at.
    arrived: Vec<(u64, Shipped)>,
}

/// The owner of `key` among `workers`.
fn owner(key: u128, workers: usize) -> usize {
    ((key as u64 >> 32) % workers as u64) as usize
}

/// The key `world` is stored under.
fn key_of<P: Protocol>(sim: Simulator<'_, P>, world: &World<P>) -> Fingerprint {
    sim.model().symmetry_ref().map_or(world.fingerprint(), |symmetry| symmetry.canonical_fingerprint(world))
}

pub(crate) fn run<P: Protocol>(
    model: &Model<P>,
    options: &CheckOptions,
    config: &ClusterConfig,
) -> Result<Option<Report>, ClusterError> {
    if options.engine != EngineKind::Bfs {
        return Err(ClusterError::Config(format!(
            "cluster mode searches breadth-first; the {} engine is not distributed",
            options.engine
        )));
    }
    if options.memory != Memory::Exact {
        return Err(ClusterError::Config(
            "cluster mode stores exact fingerprints only (memory mode exact)".into(),
        ));
    }
    let sim = Simulator::new(model)?;
    let roots = path::roots(sim);
    let bits = matches!(options.fingerprint_bits, FingerprintBits::B128);
    let digest =
        path::digest(sim, &roots, &config.job, &("bfs", options.depth_max, options.states_max, bits));
    let results = launch::run(config, digest, |worker, local| search(worker, local, sim, options, &roots))?;
    Ok(results.into_iter().flatten().next())
}

/// Counts and coverage of the worlds one worker owns.
struct Tally {
    unique: u64,
    transitions: u64,
    max_depth: u32,
    covered: Vec<bool>,
}

impl Tally {
    /// Counts a new world at `depth` and checks it: the step's own violation first, then the
    /// invariants; if none, marks the `sometimes` goals it covers.
    fn examine<P: Protocol>(
        &mut self,
        sim: Simulator<'_, P>,
        world: &World<P>,
        depth: u32,
        step: Option<StepViolation>,
    ) -> Option<StepViolation> {
        self.unique += 1;
        self.max_depth = self.max_depth.max(depth);
        let violation = step.or_else(|| sim.violated_invariant(world));
        if violation.is_none() {
            for (property, covered) in sim.model().properties().iter().zip(&mut self.covered) {
                if !*covered && property.kind() == PropertyKind::Sometimes && property.holds(world) {
                    *covered = true;
                }
            }
        }
        violation
    }
}

/// One worker's whole search; global worker 0 returns the report.
fn search<P: Protocol>(
    worker: &mut Worker,
    local: &Local<'_>,
    sim: Simulator<'_, P>,
    options: &CheckOptions,
    roots: &[Root<P>],
) -> Result<Option<Report>, ClusterError> {
    prepare_peak();
    let started = Instant::now();
    let (me, workers) = (worker.index(), worker.peers());
    let inbox =
        Rc::new(RefCell::new(Inbox { visited: Visited::new(options.fingerprint_bits), arrived: Vec::new() }));
    let (mut outbox, probe) = world_exchange(worker, Rc::clone(&inbox), workers);
    let mut rounds = Rounds::<Summary>::new(worker);
    let properties = sim.model().properties().len();
    let mut tally = Tally { unique: 0, transitions: 0, max_depth: 0, covered: vec![false; properties] };
    let mut found: Option<Finding> = None;
    let mut error: Option<String> = None;
    // The current level, the next one and the arrivals being decoded keep their capacity from
    // round to round: growing them afresh each level costs more than the search on large ones.
    let mut level: Vec<Entry<P>> = Vec::new();
    let mut next: Vec<Entry<P>> = Vec::new();
    let mut arrivals: Vec<(u64, Shipped)> = Vec::new();
    let mut decoder = WorldDecoder::new(sim.model());
    for (index, root) in roots.iter().enumerate() {
        let key = key_of(sim, &root.world).0;
        if owner(key, workers) != me || !inbox.borrow_mut().visited.insert(key) {
            continue;
        }
        let index = index as u32;
        match tally.examine(sim, &root.world, 0, root.violation.clone()) {
            Some(violation) => Finding::keep_best(
                &mut found,
                Finding { depth: 0, key, root: index, path: Vec::new(), violation },
            ),
            None => level.push(Entry { world: root.world.clone(), root: index, path: Vec::new() }),
        }
    }
    let mut sent = Visited::new(options.fingerprint_bits);
    let mut depth = 0u32;
    let mut cut = false;
    let (completion, best) = loop {
        let summary = Summary {
            unique: tally.unique,
            transitions: tally.transitions,
            max_depth: tally.max_depth,
            visited_bytes: inbox.borrow().visited.bytes(),
            level: level.len() as u64,
            covered: tally.covered.clone(),
            found: found.clone(),
            halt: halt(options, started),
            cut,
            error: error.clone(),
        };
        let summaries = rounds.exchange(worker, local, u64::from(depth), summary)?;
        if let Some(error) = summaries.iter().find_map(|s| s.error.clone()) {
            return Err(ClusterError::Corrupt(error));
        }
        if me == 0 {
            if let Some(sink) = &options.progress {
                sink(&progress(&summaries, started));
            }
        }
        if let Decision::Stop(completion) = decide(&summaries, depth, options) {
            break (completion, summaries);
        }
        // Expand depth `depth`; the successors travel at timestamp `depth + 1`.
        let next_time = u64::from(depth) + 1;
        outbox.advance_to(next_time);
        for (i, entry) in level.drain(..).enumerate() {
            if i % STEP_EVERY == STEP_EVERY - 1 {
                worker.step();
                // Decode what arrived now, while it is in cache, rather than at the level's end.
                take_arrivals(&mut decoder, &inbox, next_time, &mut arrivals, &mut next, &mut error);
                // An interrupt or a bound stops this level part-way; the summary says why, and
                // every worker stops after the round.
                if halt(options, started).is_some() {
                    cut = true;
                    break;
                }
            }
            let path_to = |ordinal: u32| {
                let mut path = Vec::with_capacity(entry.path.len() + 1);
                path.extend_from_slice(&entry.path);
                path.push(ordinal);
                path
            };
            sim.successors(&entry.world, |mut s| {
                tally.transitions += 1;
                if let Some(violation) = s.violation.take() {
                    // A step that breaks a handler property is a finding even into a seen world.
                    let finding = Finding {
                        depth: depth + 1,
                        key: s.fingerprint().0,
                        root: entry.root,
                        path: path_to(s.ordinal),
                        violation: *violation,
                    };
                    Finding::keep_best(&mut found, finding);
                    return;
                }
                let ordinal = s.ordinal;
                let (key, world) = match sim.model().symmetry_ref() {
                    Some(symmetry) => {
                        let world = s.into_world();
                        (symmetry.canonical_fingerprint(&world).0, Ok(world))
                    }
                    None => (s.fingerprint().0, Err(s)),
                };
                if owner(key, workers) == me {
                    if inbox.borrow_mut().visited.insert(key) {
                        let world = world.unwrap_or_else(|s| s.into_world());
                        next.push(Entry { world, root: entry.root, path: path_to(ordinal) });
                    }
                } else if sent.insert(key) {
                    if sent.len() >= SENT_CACHE_MAX {
                        sent = Visited::new(options.fingerprint_bits);
                    }
                    let world = world.unwrap_or_else(|s| s.into_world()).to_bytes();
                    outbox.send(Shipped { key, root: entry.root, path: path_to(ordinal), world });
                }
            });
        }
        outbox.advance_to(next_time + 1);
        wait_until(worker, local, || !probe.less_than(&(next_time + 1)))?;
        take_arrivals(&mut decoder, &inbox, next_time, &mut arrivals, &mut next, &mut error);
        depth += 1;
        for entry in next.drain(..) {
            match tally.examine(sim, &entry.world, depth, None) {
                Some(violation) => {
                    let key = key_of(sim, &entry.world).0;
                    let finding = Finding { depth, key, root: entry.root, path: entry.path, violation };
                    Finding::keep_best(&mut found, finding);
                }
                None => level.push(entry),
            }
        }
    };
    drop(outbox);
    if me != 0 {
        return Ok(None);
    }
    report(sim, roots, completion, &best, started).map(Some)
}

/// Moves the worlds received so far (all new to this worker, sent at timestamp `time`) to
/// `next`, decoded (sharing their equal parts), through the empty buffer `spare`; the first that
/// does not decode becomes `error`.
fn take_arrivals<P: Protocol>(
    decoder: &mut WorldDecoder<'_, P>,
    inbox: &RefCell<Inbox>,
    time: u64,
    spare: &mut Vec<(u64, Shipped)>,
    next: &mut Vec<Entry<P>>,
    error: &mut Option<String>,
) {
    std::mem::swap(&mut inbox.borrow_mut().arrived, spare);
    for (sent_at, shipped) in spare.drain(..) {
        debug_assert_eq!(sent_at, time, "a world arrived in another round than it was sent in");
        match decoder.decode(&shipped.world) {
            Ok(world) => next.push(Entry { world, root: shipped.root, path: shipped.path }),
            Err(e) => {
                error.get_or_insert(format!("a received world does not decode: {e}"));
            }
        }
    }
}

/// The world exchange: an input for the successors this worker ships, routed by the `exchange`
/// pact to their owners, whose operator keeps the ones its visited set has not seen; and the
/// probe that says when a timestamp's worlds have all been received.
fn world_exchange(
    worker: &mut Worker,
    inbox: Rc<RefCell<Inbox>>,
    workers: usize,
) -> (LeakOnUnwind<InputHandleVec<u64, Shipped>>, ProbeHandle<u64>) {
    let mut input = InputHandleVec::new();
    let probe = ProbeHandle::new();
    worker.dataflow::<u64, _, _>(|scope| {
        scope
            .input_from(&mut input)
            .unary::<CapacityContainerBuilder<Vec<()>>, _, _, _>(
                Exchange::new(move |s: &Shipped| owner(s.key, workers) as u64),
                "Own",
                |_, _| {
                    move |input, _| {
                        input.for_each(|stamp, data| {
                            // A totally ordered timestamp: the stamp is one time.
                            let time = stamp.least().copied().unwrap_or_default();
                            let mut inbox = inbox.borrow_mut();
                            for shipped in data.drain(..) {
                                if inbox.visited.insert(shipped.key) {
                                    inbox.arrived.push((time, shipped));
                                }
                            }
                        });
                    }
                },
            )
            .probe_with(&probe);
    });
    (LeakOnUnwind::new(input), probe)
}

/// A stop this process asks for: the interrupt, the time bound, the memory budget.
fn halt(options: &CheckOptions, started: Instant) -> Option<Halt> {
    if options.interrupt.as_ref().is_some_and(|i| i.is_raised()) {
        Some(Halt::Interrupted)
    } else if options.timeout.is_some_and(|t| started.elapsed() >= t) {
        Some(Halt::Time)
    } else if over_budget(options.memory_max) {
        Some(Halt::Memory)
    } else {
        None
    }
}

/// The decision after the round that produced depth `depth`, the same on every worker; checks
/// in the local breadth-first engine's order. A worker that cut its level short did so for a
/// halt reason, which then decides.
fn decide(summaries: &[Summary], depth: u32, options: &CheckOptions) -> Decision {
    let halted = |h: Halt| summaries.iter().any(|s| s.halt == Some(h));
    let unique: u64 = summaries.iter().map(|s| s.unique).sum();
    let cut = summaries.iter().any(|s| s.cut);
    if summaries.iter().any(|s| s.found.is_some()) {
        Decision::Stop(Completion::Violation)
    } else if !cut && summaries.iter().all(|s| s.level == 0) {
        Decision::Stop(Completion::Exhausted)
    } else if halted(Halt::Interrupted) {
        Decision::Stop(Completion::Interrupted)
    } else if options.states_max.is_some_and(|max| unique >= max) {
        Decision::Stop(Completion::StatesBound)
    } else if halted(Halt::Time) {
        Decision::Stop(Completion::TimeBound)
    } else if halted(Halt::Memory) {
        Decision::Stop(Completion::MemoryBound)
    } else if options.depth_max.is_some_and(|max| depth as usize >= max) {
        Decision::Stop(Completion::DepthBound)
    } else {
        Decision::Expand
    }
}

fn progress(summaries: &[Summary], started: Instant) -> Progress {
    Progress {
        unique_states: summaries.iter().map(|s| s.unique).sum(),
        transitions: summaries.iter().map(|s| s.transitions).sum(),
        max_depth: summaries.iter().map(|s| s.max_depth).max().unwrap_or(0) as usize,
        queue: summaries.iter().map(|s| s.level as usize).sum(),
        elapsed: started.elapsed(),
    }
}

/// The merged report, from the last round's summaries.
fn report<P: Protocol>(
    sim: Simulator<'_, P>,
    roots: &[Root<P>],
    completion: Completion,
    summaries: &[Summary],
    started: Instant,
) -> Result<Report, ClusterError> {
    let mut best = None;
    for finding in summaries.iter().filter_map(|s| s.found.clone()) {
        Finding::keep_best(&mut best, finding);
    }
    let violations = match best {
        Some(finding) => vec![finding.into_violation(sim, roots, ENGINE)?],
        None => Vec::new(),
    };
    let declared = sim.model().properties();
    let covered: Vec<bool> = (0..declared.len())
        .map(|i| summaries.iter().any(|s| s.covered.get(i).copied().unwrap_or(false)))
        .collect();
    let properties = PropertyReport::for_search(declared, &covered, &violations);
    let p = progress(summaries, started);
    Ok(Report {
        engine: EngineKind::Bfs,
        completion,
        properties,
        violations,
        stats: Stats {
            unique_states: p.unique_states,
            transitions: p.transitions,
            max_depth: p.max_depth,
            visited_bytes: summaries.iter().map(|s| s.visited_bytes).sum(),
            seconds: started.elapsed().as_secs_f64(),
            // This process's: each process of a cluster run holds its own part of the search.
            peak_memory: peak_resident_bytes(),
        },
        omission: None,
        lmc: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_use_the_high_bits_and_cover_every_worker() {
        assert_eq!(owner(0xffff_ffff, 3), 0, "the low 32 bits do not route");
        assert_eq!(owner(5 << 32, 3), 2);
        let mut seen = [false; 5];
        for i in 0..100u128 {
            seen[owner(i << 32, 5)] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
