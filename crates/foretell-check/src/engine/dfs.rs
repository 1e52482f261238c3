//! Depth-first search, on one thread or many, with work stealing.
//!
//! Each worker keeps its own stack (a LIFO deque) of worlds to expand; an idle worker steals
//! the oldest world of another's stack, which hands over a large subtree, so the threads stay
//! busy without a level barrier (the asynchronous mode: no shortest-trace promise, no waiting).
//! A worker alone keeps a plain vector.
//! All workers share one visited set of fingerprints. A world carries its path as a shared
//! linked list of successor ordinals, so a counterexample needs no parent records: memory is
//! the visited set plus the stacks, which stay small in depth-first order.
//!
//! With a depth bound the search remembers each world's smallest depth instead, and re-opens a
//! world reached again by a shorter path, so that every world within the bound is explored —
//! the bounded answer does not depend on the order in which paths were tried.

use super::seen::{key_of, keyed_successors, lock, Seen, Visit};
use crate::exploration::{Exploration, Found, Tally};
use crate::Report;
use crossbeam_deque::{Steal, Stealer, Worker as Deque};
use foretell_model::{Protocol, Simulator, StepViolation, World};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The path to a world: the successor ordinal from its parent's path, up to an initial world
/// whose `ordinal` is its index among the initial worlds.
struct Path {
    parent: Option<Arc<Path>>,
    ordinal: u32,
    depth: u32,
}

impl Path {
    fn child(self: &Arc<Self>, ordinal: u32) -> Arc<Path> {
        Arc::new(Path { parent: Some(Arc::clone(self)), ordinal, depth: self.depth + 1 })
    }

    /// The initial world's index and the ordinals from it.
    fn unwind(&self) -> (u32, Vec<u32>) {
        let mut ordinals = Vec::with_capacity(self.depth as usize);
        let mut at = self;
        while let Some(parent) = &at.parent {
            ordinals.push(at.ordinal);
            at = parent;
        }
        ordinals.reverse();
        (at.ordinal, ordinals)
    }
}

type Item<P> = (World<P>, Arc<Path>);

struct Shared<'a, 'm, 'o, P: Protocol> {
    exp: &'a Exploration<'m, 'o, P>,
    seen: Seen,
    stealers: Vec<Stealer<Item<P>>>,
    /// Worlds pushed and not yet expanded, on every stack: zero means the search is over.
    pending: AtomicUsize,
    stop: AtomicBool,
    unique: AtomicU64,
    found: Mutex<Option<(Arc<Path>, StepViolation)>>,
}

pub(crate) fn run<P: Protocol>(mut exp: Exploration<'_, '_, P>, threads: usize) -> Report {
    let threads = threads.clamp(1, crate::engine::bfs::MAX_THREADS);
    let sim = exp.sim;
    let bits = exp.options.fingerprint_bits;
    let seen = Seen::new(exp.options, exp.options.depth_max.is_some());
    let properties = sim.model().properties().len();
    let mut tallies: Vec<Tally> = (0..threads).map(|_| Tally::new(properties)).collect();
    let mut roots = Vec::new();
    let mut roots_found = None;
    let mut root = 0u32;
    sim.initial_worlds(|_, world, violation| {
        if roots_found.is_none() && matches!(seen.visit(key_of(sim, &world), bits, 0), Visit::New) {
            let path = Arc::new(Path { parent: None, ordinal: root, depth: 0 });
            match tallies[0].examine(sim, &world, 0, violation) {
                Some(v) => roots_found = Some((path, v)),
                None => roots.push((world, path)),
            }
        }
        root += 1;
    });
    let deques: Vec<Deque<Item<P>>> = (0..threads).map(|_| Deque::new_lifo()).collect();
    let shared = Shared {
        exp: &exp,
        stealers: deques.iter().map(Deque::stealer).collect(),
        pending: AtomicUsize::new(roots.len()),
        stop: AtomicBool::new(roots_found.is_some()),
        unique: AtomicU64::new(tallies[0].unique),
        found: Mutex::new(roots_found),
        seen,
    };
    if threads == 1 {
        work(&shared, &mut Stack::Alone(roots), &mut tallies[0]);
    } else {
        for item in roots {
            deques[0].push(item);
        }
        std::thread::scope(|scope| {
            for (index, (deque, tally)) in deques.into_iter().zip(tallies.iter_mut()).enumerate() {
                let shared = &shared;
                scope.spawn(move || work(shared, &mut Stack::Shared { deque, index, shared }, tally));
            }
        });
    }
    let found = shared.found.into_inner().unwrap_or_else(|p| p.into_inner());
    let omission = shared.seen.omission();
    let (visited_bytes, visited_len) = (shared.seen.bytes(), shared.seen.len());
    for tally in &tallies {
        exp.absorb(tally);
    }
    if let Some(omission) = omission {
        exp.note_omission(omission);
    }
    exp.stats.visited_bytes = visited_bytes;
    // With a depth bound, re-opened worlds are not new; every new one is counted once.
    debug_assert_eq!(exp.stats.unique_states, visited_len, "every new world is counted once");
    let found: Option<Found> = found.map(|(path, violation)| {
        let (root, ordinals) = path.unwind();
        exp.found_at(violation, root, &ordinals)
    });
    exp.finish(found)
}

/// A worker's stack of worlds to expand: a plain vector when it works alone, else a deque that
/// the other workers steal from. Alone, a world costs no shared count of pending worlds and no
/// fence on each pop: locked instructions that took 2PC N = 8 from 1.48 s to 1.52 s on one
/// thread (medians of seven alternated runs).
enum Stack<'s, 'a, 'm, 'o, P: Protocol> {
    Alone(Vec<Item<P>>),
    Shared { deque: Deque<Item<P>>, index: usize, shared: &'s Shared<'a, 'm, 'o, P> },
}

impl<P: Protocol> Stack<'_, '_, '_, '_, P> {
    /// The next world to expand, stolen if need be; `None` once no world is pending anywhere.
    fn pop(&mut self) -> Option<Item<P>> {
        match self {
            Stack::Alone(items) => items.pop(),
            Stack::Shared { deque, index, shared } => loop {
                if let Some(item) = deque.pop().or_else(|| steal(shared, *index)) {
                    return Some(item);
                }
                if shared.pending.load(Ordering::Acquire) == 0 || shared.stop.load(Ordering::Relaxed) {
                    return None;
                }
                std::thread::yield_now();
            },
        }
    }

    fn push(&mut self, item: Item<P>) {
        match self {
            Stack::Alone(items) => items.push(item),
            Stack::Shared { deque, shared, .. } => {
                // Counted before it can be stolen, so that `pending` never drops to zero early.
                shared.pending.fetch_add(1, Ordering::AcqRel);
                deque.push(item);
            }
        }
    }

    /// A popped world is expanded: it is no longer pending.
    fn expanded(&mut self) {
        if let Stack::Shared { shared, .. } = self {
            shared.pending.fetch_sub(1, Ordering::AcqRel);
        }
    }

    fn len(&self) -> usize {
        match self {
            Stack::Alone(items) => items.len(),
            Stack::Shared { deque, .. } => deque.len(),
        }
    }
}

/// One worker: expands worlds from its stack, and stops when no world is pending anywhere or
/// the search must stop.
fn work<P: Protocol>(
    shared: &Shared<'_, '_, '_, P>,
    stack: &mut Stack<'_, '_, '_, '_, P>,
    tally: &mut Tally,
) {
    let exp = shared.exp;
    let sim: Simulator<'_, P> = exp.sim;
    let bits = exp.options.fingerprint_bits;
    let mut since_poll = 0u32;
    // New worlds not yet added to the shared count, which is read only when polling.
    let mut unpolled = 0;
    let mut keyed = Vec::new();
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        let Some((world, path)) = stack.pop() else {
            return;
        };
        let depth = path.depth;
        if exp.options.depth_max.is_some_and(|max| depth as usize >= max) {
            exp.note_depth_cut();
            stack.expanded();
            continue;
        }
        let before = tally.unique;
        let mut found = None;
        keyed_successors(sim, &world, &shared.seen, &mut keyed);
        for mut s in keyed.drain(..) {
            tally.transitions += 1;
            if let Some(violation) = s.violation.take() {
                found = Some((path.child(s.ordinal), *violation));
                break;
            }
            match shared.seen.visit(s.key, bits, depth + 1) {
                Visit::Seen => {}
                Visit::Reopened => {
                    let child = path.child(s.ordinal);
                    stack.push((s.into_world(&world), child));
                }
                Visit::New => {
                    let child = path.child(s.ordinal);
                    let next = s.into_world(&world);
                    match tally.examine(sim, &next, depth as usize + 1, None) {
                        Some(v) => {
                            found = Some((child, v));
                            break;
                        }
                        None => stack.push((next, child)),
                    }
                }
            }
        }
        stack.expanded();
        if let Some(found) = found {
            lock(&shared.found).get_or_insert(found);
            shared.stop.store(true, Ordering::Relaxed);
            return;
        }
        unpolled += tally.unique - before;
        since_poll += 1;
        if since_poll >= 256 {
            since_poll = 0;
            let unique = shared.unique.fetch_add(unpolled, Ordering::Relaxed) + unpolled;
            unpolled = 0;
            if exp.poll(unique, stack.len()) {
                shared.stop.store(true, Ordering::Relaxed);
            }
        }
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
