//! Depth-first search, on one thread or many, with work stealing.
//!
//! Each worker keeps its own stack (a LIFO deque) of worlds to expand; an idle worker steals
//! the oldest world of another's stack, which hands over a large subtree, so the threads stay
//! busy without a level barrier (the asynchronous mode: no shortest-trace promise, no waiting).
//! All workers share one visited set of fingerprints. A world carries its path as a shared
//! linked list of successor ordinals, so a counterexample needs no parent records: memory is
//! the visited set plus the stacks, which stay small in depth-first order.
//!
//! A search on one thread keeps one world instead, and moves through the tree by swapping
//! successors in and out of it, in the same order (`alone`); it owns the visited set, so it
//! inserts without the shards' locks.
//!
//! With a depth bound the search remembers each world's smallest depth instead, and re-opens a
//! world reached again by a shorter path, so that every world within the bound is explored —
//! the bounded answer does not depend on the order in which paths were tried.

use super::seen::{key_of, keyed_successors, lock, Keyed, Seen, Visit, Visitor};
use crate::exploration::{Exploration, Tally};
use crate::segmented_vec::SegmentedVec;
use crate::shared_path::SharedPath;
use crate::Report;
use crossbeam_deque::{Steal, Stealer, Worker as Deque};
use foretell_model::{Delta, Protocol, Simulator, StepViolation, World};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The path to a world: the index of its initial world, then each step's successor ordinal.
type Path = SharedPath<u32>;

/// A violation and the path (as [`Path`]'s steps) to the world it was found in.
type Found = (Vec<u32>, StepViolation);

type Item<P> = (World<P>, Arc<Path>);

/// What every worker reports to: the exploration, the stop flag, the count of new worlds and
/// the first violation.
struct Run<'a, 'm, 'o, P: Protocol> {
    exp: &'a Exploration<'m, 'o, P>,
    stop: AtomicBool,
    unique: AtomicU64,
    found: Mutex<Option<Found>>,
}

/// What the workers of a search on several threads share besides the [`Run`].
struct Shared<'a, 'm, 'o, P: Protocol> {
    run: Run<'a, 'm, 'o, P>,
    seen: Seen,
    stealers: Vec<Stealer<Item<P>>>,
    /// Worlds pushed and not yet expanded, on every stack: zero means the search is over.
    pending: AtomicUsize,
}

pub(crate) fn run<P: Protocol>(mut exp: Exploration<'_, '_, P>, threads: usize) -> Report {
    let threads = threads.clamp(1, crate::engine::bfs::MAX_THREADS);
    let sim = exp.sim;
    let bits = exp.options.fingerprint_bits;
    let mut seen = Seen::new(exp.options, exp.options.depth_max.is_some());
    let properties = sim.model().properties().len();
    let mut tallies: Vec<Tally> = (0..threads).map(|_| Tally::new(properties)).collect();
    let mut roots = Vec::new();
    let mut roots_found = None;
    let mut root = 0u32;
    sim.initial_worlds(|_, world, violation| {
        if roots_found.is_none() && matches!(seen.visit(key_of(sim, &world), bits, 0), Visit::New) {
            let path = Path::start(root);
            match tallies[0].examine(sim, &world, 0, violation) {
                Some(v) => roots_found = Some((path.to_vec(), v)),
                None => roots.push((world, path)),
            }
        }
        root += 1;
    });
    let run = Run {
        exp: &exp,
        stop: AtomicBool::new(roots_found.is_some()),
        unique: AtomicU64::new(tallies[0].unique),
        found: Mutex::new(roots_found),
    };
    let run = if threads == 1 {
        alone(&run, &mut seen, roots, &mut tallies[0]);
        run
    } else {
        let deques: Vec<Deque<Item<P>>> = (0..threads).map(|_| Deque::new_lifo()).collect();
        let shared = Shared {
            run,
            stealers: deques.iter().map(Deque::stealer).collect(),
            pending: AtomicUsize::new(roots.len()),
            seen,
        };
        for item in roots {
            deques[0].push(item);
        }
        std::thread::scope(|scope| {
            for (index, (deque, tally)) in deques.into_iter().zip(tallies.iter_mut()).enumerate() {
                let shared = &shared;
                scope.spawn(move || work(shared, index, &deque, tally));
            }
        });
        seen = shared.seen;
        shared.run
    };
    let found = run.found.into_inner().unwrap_or_else(|p| p.into_inner());
    let omission = seen.omission();
    let (visited_bytes, visited_len) = (seen.bytes(), seen.len());
    for tally in &tallies {
        exp.absorb(tally);
    }
    if let Some(omission) = omission {
        exp.note_omission(omission);
    }
    exp.stats.visited_bytes = visited_bytes;
    // With a depth bound, re-opened worlds are not new; every new one is counted once.
    debug_assert_eq!(exp.stats.unique_states, visited_len, "every new world is counted once");
    let found = found.map(|(path, violation)| exp.found_at(violation, path[0], &path[1..]));
    exp.finish(found)
}

/// One of several workers: expands worlds from its own deque, steals when it is empty, and
/// stops when no world is pending anywhere or the search must stop.
fn work<P: Protocol>(
    shared: &Shared<'_, '_, '_, P>,
    index: usize,
    deque: &Deque<Item<P>>,
    tally: &mut Tally,
) {
    let exp = shared.run.exp;
    let sim: Simulator<'_, P> = exp.sim;
    let mut poll = Poll::default();
    let mut keyed = Vec::new();
    loop {
        if shared.run.stop.load(Ordering::Relaxed) {
            return;
        }
        let Some((mut world, path)) = deque.pop().or_else(|| steal(shared, index)) else {
            if shared.pending.load(Ordering::Acquire) == 0 {
                return;
            }
            std::thread::yield_now();
            continue;
        };
        let depth = path.depth();
        if exp.options.depth_max.is_some_and(|max| depth as usize >= max) {
            exp.note_depth_cut();
            shared.pending.fetch_sub(1, Ordering::AcqRel);
            continue;
        }
        let before = tally.unique;
        let found = expand(
            &shared.run,
            &mut &shared.seen,
            &mut world,
            depth,
            &mut keyed,
            tally,
            |s, new, world, tally| {
                let child = path.then(s.ordinal);
                let next = s.into_world(world);
                let violation = if new { tally.examine(sim, &next, depth as usize + 1, None) } else { None };
                if violation.is_none() {
                    // Counted before it can be stolen, so that `pending` never drops to zero early.
                    shared.pending.fetch_add(1, Ordering::AcqRel);
                    deque.push((next, child));
                }
                violation
            },
        );
        let found = found.map(|(ordinal, violation)| (path.then(ordinal).to_vec(), violation));
        shared.pending.fetch_sub(1, Ordering::AcqRel);
        if let Some(found) = found {
            lock(&shared.run.found).get_or_insert(found);
            shared.run.stop.store(true, Ordering::Relaxed);
            return;
        }
        if poll.after(&shared.run, tally.unique - before, deque.len()) {
            return;
        }
    }
}

/// The one worker of a one-thread search: it keeps one world, and walks the search tree by
/// swapping successors in and out of it ([`Delta`]), in the order `work` would take them. Its
/// stack holds each pending successor as the parts it changes, with its depth and ordinal; the
/// path to the current world is the stack of deltas that made it, each holding what its step
/// replaced. So no world is copied, counted or dropped per state, no path is allocated, and a
/// pending world costs the parts it changes rather than a node vector. Both stacks grow by
/// segments: an unbounded model makes them millions of entries deep, and a doubling `Vec`
/// would overshoot a memory budget for as long as it copies.
fn alone<P: Protocol>(run: &Run<'_, '_, '_, P>, mut seen: &mut Seen, roots: Vec<Item<P>>, tally: &mut Tally) {
    let exp = run.exp;
    let sim: Simulator<'_, P> = exp.sim;
    let mut poll = Poll::default();
    let mut keyed = Vec::new();
    // Pending successors: (depth, ordinal, delta from the parent they were found in).
    let mut pending: SegmentedVec<(u32, u32, Delta<P>)> = SegmentedVec::new();
    // The steps from the root to the current world: (ordinal, delta holding what it replaced).
    let mut steps: SegmentedVec<(u32, Delta<P>)> = SegmentedVec::new();
    for (mut world, root) in roots.into_iter().rev() {
        let root = *root.last();
        let mut depth = 0u32;
        steps.clear();
        loop {
            if run.stop.load(Ordering::Relaxed) {
                return;
            }
            let before = tally.unique;
            let found = if exp.options.depth_max.is_some_and(|max| depth as usize >= max) {
                exp.note_depth_cut();
                None
            } else {
                expand(run, &mut seen, &mut world, depth, &mut keyed, tally, |s, new, world, tally| {
                    let ordinal = s.ordinal;
                    let mut delta = s.into_delta(world);
                    let mut violation = None;
                    if new {
                        delta.swap(world);
                        violation = tally.examine(sim, world, depth as usize + 1, None);
                        delta.swap(world);
                    }
                    if violation.is_none() {
                        pending.push((depth + 1, ordinal, delta));
                    }
                    violation
                })
            };
            if let Some((ordinal, violation)) = found {
                let path = [root].into_iter().chain(steps.iter().map(|(o, _)| *o)).chain([ordinal]).collect();
                lock(&run.found).get_or_insert((path, violation));
                run.stop.store(true, Ordering::Relaxed);
                return;
            }
            if poll.after(run, tally.unique - before, pending.len()) {
                return;
            }
            // Down to the next pending successor, from its parent.
            let Some((next_depth, ordinal, mut delta)) = pending.pop() else {
                break;
            };
            while steps.len() >= next_depth as usize {
                let (_, mut undo) = steps.pop().expect("steps are as deep as the current world");
                undo.swap(&mut world);
            }
            delta.swap(&mut world);
            steps.push((ordinal, delta));
            depth = next_depth;
        }
    }
}

/// Looks every successor of `world` (at `depth`) up in the visited set, counting transitions,
/// and hands each one not seen before to `fresh`, saying whether it is new (else re-opened under
/// a depth bound); `fresh` examines it if new and keeps it. The first violation ends the
/// expansion, with the ordinal of its successor: a step's own, or one `fresh` returns.
fn expand<P: Protocol>(
    run: &Run<'_, '_, '_, P>,
    seen: &mut impl Visitor,
    world: &mut World<P>,
    depth: u32,
    keyed: &mut Vec<Keyed<P>>,
    tally: &mut Tally,
    mut fresh: impl FnMut(Keyed<P>, bool, &mut World<P>, &mut Tally) -> Option<StepViolation>,
) -> Option<(u32, StepViolation)> {
    let bits = run.exp.options.fingerprint_bits;
    keyed_successors(run.exp.sim, world, seen.set(), keyed);
    for mut s in keyed.drain(..) {
        tally.transitions += 1;
        let ordinal = s.ordinal;
        if let Some(violation) = s.violation.take() {
            return Some((ordinal, *violation));
        }
        let new = match seen.visit(s.key, bits, depth + 1) {
            Visit::Seen => continue,
            Visit::Reopened => false,
            Visit::New => true,
        };
        if let Some(violation) = fresh(s, new, world, tally) {
            return Some((ordinal, violation));
        }
    }
    None
}

/// When a worker polls the search's bounds, the interrupt and progress: every 256 worlds it
/// expands, adding its new worlds to the shared count then (not after each world, which would
/// be a locked instruction per world).
#[derive(Default)]
struct Poll {
    expanded: u32,
    unpolled: u64,
}

impl Poll {
    /// Counts one expanded world that added `new` worlds, with `queued` waiting on the worker;
    /// whether the search must stop.
    fn after<P: Protocol>(&mut self, run: &Run<'_, '_, '_, P>, new: u64, queued: usize) -> bool {
        self.unpolled += new;
        self.expanded += 1;
        if self.expanded < 256 {
            return false;
        }
        self.expanded = 0;
        let unique = run.unique.fetch_add(self.unpolled, Ordering::Relaxed) + self.unpolled;
        self.unpolled = 0;
        let stop = run.exp.poll(unique, queued);
        if stop {
            run.stop.store(true, Ordering::Relaxed);
        }
        stop
    }
}

/// Takes the oldest world from another worker's stack.
fn steal<P: Protocol>(shared: &Shared<'_, '_, '_, P>, me: usize) -> Option<Item<P>> {
    let n = shared.stealers.len();
    for offset in 1..n {
        let victim = &shared.stealers[(me + offset) % n];
        loop {
            match victim.steal() {
                // Detached: see `World::detached`.
                Steal::Success((world, path)) => return Some((world.detached(), path)),
                Steal::Empty => break,
                Steal::Retry => continue,
            }
        }
    }
    None
}
