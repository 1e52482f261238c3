//! Breadth-first search, level by level, on any number of threads.
//!
//! The frontier is one BFS level at a time. Worker threads take chunks of the current level,
//! expand each world, and insert the successors' fingerprints in one shared visited set
//! ([`FingerprintSet`], sharded so that threads rarely meet); a successor that is new goes to
//! the worker's part of the next level. Because every world of a level is expanded before any
//! world of the next, the first violation found is at the smallest depth, so counterexamples
//! stay shortest whatever the thread count, and the distinct-state count is the same in every
//! run. (When several violations lie at that depth, which one a multi-threaded run reports
//! depends on which worker reaches one first; one thread always reports the same one.) One
//! thread runs the same code without spawning, and owns the visited set, so it inserts without
//! the shards' locks.
//!
//! A level is built and taken in chunks of [`CHUNK`] worlds: a worker fills chunks of the next
//! level as it finds new worlds, takes whole chunks of the current one, and drops each world
//! it expanded itself, so no thread gathers, moves or frees a level on its own between levels.
//! A worker takes the chunks it filled first, and then helps with the others' chunks, whose
//! worlds it detaches ([`World::detached`]): each thread's worlds then share memory, and
//! reference counts, only among themselves.
//!
//! Parent pointers are kept per worker as one `u64` per distinct world: the parent's reference
//! (worker and index) and the successor ordinal that leads from it, in a [`SegmentedVec`] that
//! grows without copying. A trace is rebuilt by following them to an initial world and
//! re-executing the ordinals.

use super::seen::{key_of, keyed_successors, lock, Seen, Visit, Visitor};
use crate::exploration::{Exploration, Found, Tally};
use crate::segmented_vec::SegmentedVec;
use crate::Report;
use foretell_model::{Protocol, Simulator, StepViolation, World};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex, PoisonError, RwLock};

/// A reference to a parent record: worker in the high bits, index in the low ones.
type RecordRef = u64;

const INDEX_BITS: u32 = 34;
const ORDINAL_BITS: u32 = 64 - INDEX_BITS - WORKER_BITS;
const WORKER_BITS: u32 = 6;
/// The most threads a search runs on.
pub(crate) const MAX_THREADS: usize = 1 << WORKER_BITS;
const ROOT: RecordRef = (1 << (INDEX_BITS + WORKER_BITS)) - 1;
/// Worlds in a chunk of a level: what a worker takes at a time.
const CHUNK: usize = 64;
/// The most worlds in a level that one worker expands alone (see [`work`]).
const SOLO_LEVEL: usize = 4 * CHUNK;
/// How many worlds ahead of the one it expands a worker hints the first level of a world's parts
/// into the cache (see [`World::prefetch`]); the second level follows at half the distance.
const PREFETCH_AHEAD: usize = 4;

/// A world of a level, with the reference to its parent record.
type Item<P> = (World<P>, RecordRef);

/// One worker's share of a level: the chunks of at most [`CHUNK`] worlds it filled, each taken
/// whole by one worker, and the next one to take.
struct Share<P: Protocol> {
    chunks: Vec<Mutex<Vec<Item<P>>>>,
    cursor: AtomicUsize,
}

impl<P: Protocol> Share<P> {
    fn new(chunks: impl Iterator<Item = Vec<Item<P>>>) -> Self {
        Share { chunks: chunks.map(Mutex::new).collect(), cursor: AtomicUsize::new(0) }
    }

    /// Takes the next chunk, if one is left.
    fn take(&self) -> Option<Vec<Item<P>>> {
        let chunk = self.chunks.get(self.cursor.fetch_add(1, Ordering::Relaxed))?;
        Some(std::mem::take(&mut *lock(chunk)))
    }
}

fn pack(parent: RecordRef, ordinal: u32) -> u64 {
    assert!(u64::from(ordinal) < 1 << ORDINAL_BITS, "a world has fewer than 16M successors");
    parent << ORDINAL_BITS | u64::from(ordinal)
}

fn unpack(record: u64) -> (RecordRef, u32) {
    (record >> ORDINAL_BITS, (record & ((1 << ORDINAL_BITS) - 1)) as u32)
}

/// One thread's share of the search.
struct Worker<P: Protocol> {
    index: usize,
    records: SegmentedVec<u64>,
    tally: Tally,
    /// The chunks of the next level this worker filled.
    next: Vec<Vec<Item<P>>>,
    /// The chunk of the next level being filled.
    filling: Vec<Item<P>>,
    found: Option<(RecordRef, StepViolation)>,
}

impl<P: Protocol> Worker<P> {
    fn new(index: usize, properties: usize) -> Self {
        let (next, filling) = (Vec::new(), Vec::with_capacity(CHUNK));
        Worker {
            index,
            records: SegmentedVec::new(),
            tally: Tally::new(properties),
            next,
            filling,
            found: None,
        }
    }

    /// Adds a world to the next level.
    fn push(&mut self, item: Item<P>) {
        self.filling.push(item);
        if self.filling.len() == CHUNK {
            let full = std::mem::replace(&mut self.filling, Vec::with_capacity(CHUNK));
            self.next.push(full);
        }
    }

    /// Hands over the chunks of the next level this worker filled.
    fn take_next(&mut self) -> impl Iterator<Item = Vec<Item<P>>> + '_ {
        if !self.filling.is_empty() {
            let last = std::mem::replace(&mut self.filling, Vec::with_capacity(CHUNK));
            self.next.push(last);
        }
        self.next.drain(..)
    }

    fn record(&mut self, parent: RecordRef, ordinal: u32) -> RecordRef {
        let index = self.records.len() as u64;
        assert!(index < 1 << INDEX_BITS, "fewer than 16G worlds per thread");
        self.records.push(pack(parent, ordinal));
        (self.index as u64) << INDEX_BITS | index
    }
}

/// What the workers share for the whole search. The workers are the same threads from the
/// first level to the last, so that no level pays for starting threads and a worker's share of
/// a level is the worlds it built itself; between levels they wait at `barrier`, and the last
/// to arrive builds the next level.
struct Shared<'a, 'm, 'o, P: Protocol> {
    sim: Simulator<'a, P>,
    exp: &'a Exploration<'m, 'o, P>,
    barrier: Barrier,
    /// The current level: one share per worker.
    level: RwLock<Vec<Share<P>>>,
    /// Each worker's chunks of the next level, handed over when its part of a level is done.
    next: Vec<Mutex<Vec<Vec<Item<P>>>>>,
    /// The worlds in `level`.
    worlds: AtomicUsize,
    /// Chunks of `level` taken so far.
    taken: AtomicUsize,
    /// The depth of `level`.
    depth: AtomicUsize,
    /// A worker found a violation, or a bound or an interrupt stopped the search.
    stop: AtomicBool,
    /// The search is over: no level follows.
    done: AtomicBool,
    /// Distinct worlds so far, for the states bound and progress.
    unique: AtomicU64,
    /// Held by the worker that polls the bounds, the interrupt and progress.
    progress: Mutex<()>,
}

impl<P: Protocol> Shared<'_, '_, '_, P> {
    /// Whether a search with `worlds` in its level at `depth` ends there.
    fn ends_at(&self, worlds: usize, depth: usize) -> bool {
        self.stop.load(Ordering::Relaxed)
            || worlds == 0
            || self.exp.poll(self.unique.load(Ordering::Relaxed), worlds)
            || self.exp.at_depth_bound(depth)
    }

    /// Whether the search goes on with a level small enough for one worker (see [`work`]).
    fn goes_on_solo(&self) -> bool {
        !self.done.load(Ordering::Relaxed) && self.worlds.load(Ordering::Relaxed) <= SOLO_LEVEL
    }

    /// Between two levels, on the last worker to finish one: the next level from the chunks the
    /// workers handed over. A level a stop cut short drops its untaken chunks here.
    fn next_level(&self) {
        let mut worlds = 0;
        let level: Vec<Share<P>> = self
            .next
            .iter()
            .map(|next| {
                let chunks = std::mem::take(&mut *lock(next));
                worlds += chunks.iter().map(Vec::len).sum::<usize>();
                Share::new(chunks.into_iter())
            })
            .collect();
        let depth = self.depth.load(Ordering::Relaxed) + 1;
        *self.level.write().unwrap_or_else(PoisonError::into_inner) = level;
        self.worlds.store(worlds, Ordering::Relaxed);
        self.taken.store(0, Ordering::Relaxed);
        self.depth.store(depth, Ordering::Relaxed);
        self.done.store(self.ends_at(worlds, depth), Ordering::Relaxed);
    }
}

pub(crate) fn run<P: Protocol>(mut exp: Exploration<'_, '_, P>, threads: usize) -> Report {
    let threads = threads.clamp(1, MAX_THREADS);
    let sim = exp.sim;
    let properties = sim.model().properties().len();
    let mut visited = Seen::new(exp.options, false, threads);
    let bits = exp.options.fingerprint_bits;
    let mut workers: Vec<Worker<P>> = (0..threads).map(|i| Worker::new(i, properties)).collect();
    let mut initial = Vec::new();
    let mut root = 0u32;
    sim.initial_worlds(|_, world, violation| {
        let first = &mut workers[0];
        if first.found.is_none() && matches!(visited.visit_owned(key_of(sim, &world), bits, 0), Visit::New) {
            let id = first.record(ROOT, root);
            match first.tally.examine(sim, &world, 0, violation) {
                Some(v) => first.found = Some((id, v)),
                None => initial.push((world, id)),
            }
        }
        root += 1;
    });
    let worlds = initial.len();
    let shared = Shared {
        sim,
        exp: &exp,
        barrier: Barrier::new(threads),
        level: RwLock::new(vec![Share::new(chunked(initial))]),
        next: (0..threads).map(|_| Mutex::default()).collect(),
        worlds: AtomicUsize::new(worlds),
        taken: AtomicUsize::new(0),
        depth: AtomicUsize::new(0),
        stop: AtomicBool::new(workers[0].found.is_some()),
        done: AtomicBool::new(false),
        unique: AtomicU64::new(workers[0].tally.unique),
        progress: Mutex::new(()),
    };
    shared.done.store(shared.ends_at(worlds, 0), Ordering::Relaxed);
    if threads == 1 {
        // The one worker owns the visited set: no locks (see `Visitor`).
        work(&shared, &mut workers[0], &mut visited);
    } else {
        std::thread::scope(|scope| {
            for worker in &mut workers {
                let (shared, visited) = (&shared, &visited);
                scope.spawn(move || work(shared, worker, visited));
            }
        });
    }
    // The levels hold every world queued when the search stopped.
    let Shared { level, next, .. } = shared;
    crate::teardown::release((level, next), exp.started());
    for worker in &workers {
        exp.absorb(&worker.tally);
    }
    if let Some(omission) = visited.omission() {
        exp.note_omission(omission);
    }
    exp.stats.visited_bytes = visited.bytes();
    debug_assert_eq!(exp.stats.unique_states, visited.len(), "every new world is counted once");
    let found = workers.iter_mut().find_map(|w| w.found.take());
    let found: Option<Found> = found.map(|(id, violation)| {
        let (root, ordinals) = path(&workers, id);
        exp.found_at(violation, root, &ordinals)
    });
    exp.finish(found)
}

/// One worker, from the first level to the last: its part of each level, then the wait for
/// the others. A worker that panics (a broken engine invariant: handlers' panics are caught
/// as violations long before) stops the search and keeps meeting the others at the barrier
/// until they see it, then passes the panic on.
///
/// A level of at most [`SOLO_LEVEL`] worlds is expanded by the worker that built it, alone,
/// while the others wait: shared, it would cost two meetings at the barrier, each of which
/// wakes sleeping threads, for less work than one wake-up. A deep, narrow space (a counter
/// that grows without bound) is nothing but such levels; with them shared, two threads were
/// 17 times slower than one there.
fn work<P: Protocol>(shared: &Shared<'_, '_, '_, P>, worker: &mut Worker<P>, mut visited: impl Visitor) {
    let mut panicked = None;
    while !shared.done.load(Ordering::Relaxed) {
        expand_guarded(shared, worker, &mut visited, &mut panicked);
        if shared.barrier.wait().is_leader() {
            shared.next_level();
            while shared.goes_on_solo() {
                expand_guarded(shared, worker, &mut visited, &mut panicked);
                shared.next_level();
            }
        }
        // The next level is built (or the search is done) before anyone goes on.
        shared.barrier.wait();
    }
    if let Some(payload) = panicked {
        resume_unwind(payload);
    }
}

/// This worker's part of the current level (none once it has panicked), and the hand-over of
/// the chunks of the next level it filled.
fn expand_guarded<P: Protocol>(
    shared: &Shared<'_, '_, '_, P>,
    worker: &mut Worker<P>,
    visited: &mut impl Visitor,
    panicked: &mut Option<Box<dyn std::any::Any + Send>>,
) {
    if panicked.is_none() {
        let level = shared.level.read().unwrap_or_else(PoisonError::into_inner);
        let expanded = catch_unwind(AssertUnwindSafe(|| expand_level(shared, &level, worker, visited)));
        if let Err(payload) = expanded {
            shared.stop.store(true, Ordering::Relaxed);
            *panicked = Some(payload);
        }
    }
    *lock(&shared.next[worker.index]) = worker.take_next().collect();
}

/// Expands the worlds of the current level this worker takes, until the level is done or the
/// search must stop.
fn expand_level<P: Protocol>(
    shared: &Shared<'_, '_, '_, P>,
    level: &[Share<P>],
    worker: &mut Worker<P>,
    visited: &mut impl Visitor,
) {
    let exp = shared.exp;
    let sim = shared.sim;
    let depth = shared.depth.load(Ordering::Relaxed) as u32 + 1;
    let bits = exp.options.fingerprint_bits;
    let mut keyed = Vec::new();
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        // Its own chunks first, then the others', in turn.
        let shares = level.len();
        let Some((share, mut chunk)) =
            (0..shares).map(|k| (worker.index + k) % shares).find_map(|s| Some((s, level[s].take()?)))
        else {
            return;
        };
        let taken = shared.taken.fetch_add(1, Ordering::Relaxed);
        // Taken whole: its worlds are expanded, and then dropped, on this thread.
        if share != worker.index {
            for (world, _) in &mut chunk {
                *world = world.detached();
            }
        }
        let before = worker.tally.unique;
        for (at, (world, id)) in chunk.iter().enumerate() {
            if let Some((ahead, _)) = chunk.get(at + PREFETCH_AHEAD) {
                ahead.prefetch();
            }
            if let Some((ahead, _)) = chunk.get(at + PREFETCH_AHEAD / 2) {
                ahead.prefetch_messages();
            }
            keyed_successors(sim, world, visited.set(), &mut keyed);
            for mut s in keyed.drain(..) {
                worker.tally.transitions += 1;
                if let Some(violation) = s.violation.take() {
                    // A step that breaks a handler property is a finding even into a seen world.
                    let step = worker.record(*id, s.ordinal);
                    worker.found = Some((step, *violation));
                    break;
                }
                if !matches!(visited.visit(s.key, bits, depth), Visit::New) {
                    continue;
                }
                let child = worker.record(*id, s.ordinal);
                let next = s.into_world(world);
                match worker.tally.examine(sim, &next, depth as usize, None) {
                    Some(v) => {
                        worker.found = Some((child, v));
                        break;
                    }
                    None => worker.push((next, child)),
                }
            }
            if worker.found.is_some() {
                shared.stop.store(true, Ordering::Relaxed);
                return;
            }
        }
        let unique = shared.unique.fetch_add(worker.tally.unique - before, Ordering::Relaxed);
        // One worker at a time polls the bounds, the interrupt and progress.
        if let Ok(_guard) = shared.progress.try_lock() {
            let queue = shared.worlds.load(Ordering::Relaxed).saturating_sub(taken * CHUNK);
            if exp.poll(unique, queue) {
                shared.stop.store(true, Ordering::Relaxed);
            }
        }
    }
}

/// `items` in chunks.
fn chunked<P: Protocol>(items: Vec<Item<P>>) -> impl Iterator<Item = Vec<Item<P>>> {
    let mut items = items.into_iter();
    std::iter::from_fn(move || {
        Some(items.by_ref().take(CHUNK).collect::<Vec<_>>()).filter(|chunk| !chunk.is_empty())
    })
}

/// The initial world's index and the successor ordinals that lead to record `id`.
fn path<P: Protocol>(workers: &[Worker<P>], mut id: RecordRef) -> (u32, Vec<u32>) {
    let mut ordinals = Vec::new();
    loop {
        let worker = (id >> INDEX_BITS) as usize;
        let index = (id & ((1 << INDEX_BITS) - 1)) as usize;
        let (parent, ordinal) =
            unpack(*workers[worker].records.get(index).expect("a parent reference names a record"));
        if parent == ROOT {
            ordinals.reverse();
            return (ordinal, ordinals);
        }
        ordinals.push(ordinal);
        id = parent;
    }
}
