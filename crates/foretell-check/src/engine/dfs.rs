//! Depth-first search, on one thread or many.
//!
//! A worker keeps one world and walks the search tree by swapping successors in and out of it
//! ([`Delta`]): its stack holds each pending successor as the parts of its parent it changes,
//! and the path to the current world is the stack of deltas that made it, each holding what its
//! step replaced. So no world is copied, counted or dropped per state: building whole worlds
//! raised and dropped the shared count of every node slot per world, locked instructions that
//! took a quarter of a one-thread search's time, and on several threads each worker's counts
//! were what held it back.
//!
//! Workers share work on demand. A worker with nothing to explore says so on the shared
//! [`Board`]; a busy worker that sees someone waiting builds the oldest successor on its stack
//! (the root of the largest subtree it holds) as a whole world, from the deltas, and gives it
//! away with its path. The taker detaches it (see `World::detached`), so that the worlds it then
//! walks through share no counts with the giver's. A search on one thread is the same walk with
//! nobody to give to; it owns the visited set, so it inserts without the shards' locks. All
//! workers share one visited set of fingerprints. A counterexample needs no parent records: the
//! path is the given world's path and the walk's own steps, so memory is the visited set plus
//! the stacks, which stay small in depth-first order.
//!
//! With a depth bound the search remembers each world's smallest depth instead, and re-opens a
//! world reached again by a shorter path, so that every world within the bound is explored —
//! the bounded answer does not depend on the order in which paths were tried.

use super::seen::{key_of, keyed_successors, lock, Keyed, Seen, Visit, Visitor};
use crate::exploration::{Exploration, Tally};
use crate::segmented_vec::SegmentedVec;
use crate::shared_path::SharedPath;
use crate::Report;
use foretell_model::{Delta, Protocol, Simulator, StepViolation, World};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The path to a world: the index of its initial world, then each step's successor ordinal.
type Path = SharedPath<u32>;

/// A violation and the path (as [`Path`]'s steps) to the world it was found in.
type Found = (Vec<u32>, StepViolation);

/// A world to explore the subtree of, with its path.
type Item<P> = (World<P>, Arc<Path>);

/// What every worker reports to: the exploration, the stop flag, the count of new worlds and
/// the first violation.
struct Run<'a, 'm, 'o, P: Protocol> {
    exp: &'a Exploration<'m, 'o, P>,
    stop: AtomicBool,
    unique: AtomicU64,
    found: Mutex<Option<Found>>,
}

/// Where workers hand each other worlds to explore: the initial worlds at first, then the
/// successors busy workers give to waiting ones.
struct Board<P: Protocol> {
    /// Worlds to explore, taken from the end.
    worlds: Mutex<Vec<Item<P>>>,
    /// How many `worlds` holds, for givers to read without the lock.
    queued: AtomicUsize,
    /// Workers waiting for a world.
    waiting: AtomicUsize,
    /// Workers exploring a world's subtree, who may still give; changed under the lock of
    /// `worlds` when a world is taken, so that a waiting worker never sees both empty while a
    /// taken world is on its way to being explored.
    busy: AtomicUsize,
}

impl<P: Protocol> Board<P> {
    fn new(worlds: Vec<Item<P>>) -> Self {
        let queued = AtomicUsize::new(worlds.len());
        Board { worlds: Mutex::new(worlds), queued, waiting: AtomicUsize::new(0), busy: AtomicUsize::new(0) }
    }

    /// Whether more workers wait than worlds are queued for them.
    #[inline]
    fn wants(&self) -> bool {
        self.waiting.load(Ordering::Relaxed) > self.queued.load(Ordering::Relaxed)
    }

    /// Queues `item` for a waiting worker.
    fn give(&self, item: Item<P>) {
        let mut worlds = lock(&self.worlds);
        worlds.push(item);
        self.queued.store(worlds.len(), Ordering::Relaxed);
    }

    /// The next world to explore, waiting for one while another worker may still give one;
    /// `None` once none is queued and no worker is busy, or the search must stop. A world
    /// taken makes this worker busy until [`Board::done`].
    fn take(&self, stop: &AtomicBool) -> Option<Item<P>> {
        let mut waiting = false;
        let result = loop {
            {
                let mut worlds = lock(&self.worlds);
                if let Some(item) = worlds.pop() {
                    self.queued.store(worlds.len(), Ordering::Relaxed);
                    self.busy.fetch_add(1, Ordering::SeqCst);
                    break Some(item);
                }
                if self.busy.load(Ordering::SeqCst) == 0 || stop.load(Ordering::Relaxed) {
                    break None;
                }
            }
            if !waiting {
                self.waiting.fetch_add(1, Ordering::Relaxed);
                waiting = true;
            }
            std::thread::yield_now();
        };
        if waiting {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
        }
        result
    }

    /// This worker explored the world it took, and gave away whatever it will give of it.
    fn done(&self) {
        self.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

pub(crate) fn run<P: Protocol>(mut exp: Exploration<'_, '_, P>, threads: usize) -> Report {
    let threads = threads.clamp(1, crate::engine::bfs::MAX_THREADS);
    let sim = exp.sim;
    let bits = exp.options.fingerprint_bits;
    let mut seen = Seen::new(exp.options, exp.options.depth_max.is_some(), threads);
    let properties = sim.model().properties().len();
    let mut tallies: Vec<Tally> = (0..threads).map(|_| Tally::new(properties)).collect();
    let mut roots = Vec::new();
    let mut roots_found = None;
    let mut root = 0u32;
    sim.initial_worlds(|_, world, violation| {
        if roots_found.is_none() && matches!(seen.visit_owned(key_of(sim, &world), bits, 0), Visit::New) {
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
    let board = Board::new(roots);
    if threads == 1 {
        work(&run, &mut &mut seen, &board, &mut tallies[0], false);
    } else {
        std::thread::scope(|scope| {
            for tally in &mut tallies {
                let (run, seen, board) = (&run, &seen, &board);
                scope.spawn(move || work(run, &mut &*seen, board, tally, true));
            }
        });
    }
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

/// One worker: explores the subtrees of the worlds it takes from `board` until none is left or
/// the search must stop; `detach` makes each world it takes share no memory with its giver's.
fn work<P: Protocol>(
    run: &Run<'_, '_, '_, P>,
    seen: &mut impl Visitor,
    board: &Board<P>,
    tally: &mut Tally,
    detach: bool,
) {
    let mut walk = Walk::new();
    while let Some((world, path)) = board.take(&run.stop) {
        let world = if detach { world.detached() } else { world };
        let stop = walk.explore(run, seen, board, world, &path, tally);
        board.done();
        if stop {
            break;
        }
    }
    walk.release(run.exp.started());
}

/// A worker's stacks, kept from one world it explores to the next.
struct Walk<P: Protocol> {
    poll: Poll,
    keyed: Vec<Keyed<P>>,
    /// Pending successors: (depth, ordinal, delta from the parent they were found in); the
    /// first `given` were given away, and hold no delta.
    pending: SegmentedVec<(u32, u32, Option<Delta<P>>)>,
    given: usize,
    /// The steps from the explored world to the current one: (ordinal, delta holding what the
    /// step replaced).
    steps: SegmentedVec<(u32, Delta<P>)>,
}

impl<P: Protocol> Walk<P> {
    fn new() -> Self {
        Walk {
            poll: Poll::default(),
            keyed: Vec::new(),
            pending: SegmentedVec::new(),
            given: 0,
            steps: SegmentedVec::new(),
        }
    }

    /// Explores the subtree of `world`, reached by `path`, depth first, giving successors away
    /// while `board` wants them; whether the search must stop.
    fn explore(
        &mut self,
        run: &Run<'_, '_, '_, P>,
        seen: &mut impl Visitor,
        board: &Board<P>,
        mut world: World<P>,
        path: &Arc<Path>,
        tally: &mut Tally,
    ) -> bool {
        let exp = run.exp;
        let sim: Simulator<'_, P> = exp.sim;
        let start = path.depth();
        let mut depth = start;
        self.pending.clear();
        self.given = 0;
        self.steps.clear();
        loop {
            if run.stop.load(Ordering::Relaxed) {
                return true;
            }
            let before = tally.unique;
            let pending = &mut self.pending;
            let found = if exp.options.depth_max.is_some_and(|max| depth as usize >= max) {
                exp.note_depth_cut();
                None
            } else {
                expand(run, seen, &mut world, depth, &mut self.keyed, tally, |s, new, world, tally| {
                    let ordinal = s.ordinal;
                    let mut delta = s.into_delta(world);
                    let mut violation = None;
                    if new {
                        delta.swap(world);
                        violation = tally.examine(sim, world, depth as usize + 1, None);
                        delta.swap(world);
                    }
                    if violation.is_none() {
                        pending.push((depth + 1, ordinal, Some(delta)));
                    }
                    violation
                })
            };
            if let Some((ordinal, violation)) = found {
                let mut steps = path.to_vec();
                steps.extend(self.steps.iter().map(|(o, _)| *o));
                steps.push(ordinal);
                lock(&run.found).get_or_insert((steps, violation));
                run.stop.store(true, Ordering::Relaxed);
                return true;
            }
            if self.poll.after(run, tally.unique - before, self.pending.len() - self.given) {
                return true;
            }
            // Keep one successor to go down to; give the oldest of the others.
            if board.wants() && self.pending.len() - self.given >= 2 {
                board.give(self.give_oldest(&world, path, start));
            }
            // Down to the next pending successor, from its parent.
            if self.pending.len() == self.given {
                return false;
            }
            let (next_depth, ordinal, delta) = self.pending.pop().expect("a successor is pending");
            let mut delta = delta.expect("successors above the given ones keep their deltas");
            while start + self.steps.len() as u32 >= next_depth {
                let (_, mut undo) = self.steps.pop().expect("steps are as deep as the current world");
                undo.swap(&mut world);
            }
            delta.swap(&mut world);
            self.steps.push((ordinal, delta));
            depth = next_depth;
        }
    }

    /// Lets go of the pending successors and the steps down, which a walk stopped deep down
    /// holds by the hundred thousand, many with a whole network: what they share with this
    /// thread's step memo is dropped here, the rest on a thread of its own once the run
    /// (started at `started`) has taken long enough ([`crate::teardown`]).
    fn release(mut self, started: Instant) {
        // In segments, which it gains as fast as the stacks lose theirs: a list allocated
        // whole (a third of the deltas' bytes) took a search stopped by its memory budget 5%
        // past it.
        let mut remains = SegmentedVec::new();
        while let Some((_, _, delta)) = self.pending.pop() {
            if let Some(left) = delta.and_then(Delta::into_remains) {
                remains.push(left);
            }
        }
        while let Some((_, delta)) = self.steps.pop() {
            if let Some(left) = delta.into_remains() {
                remains.push(left);
            }
        }
        crate::teardown::release(remains, started);
    }

    /// The oldest pending successor not given yet, built as a whole world with its path, for
    /// another worker; `world` is the current world, at the end of the steps from the explored
    /// world at depth `start`, reached by `path`.
    fn give_oldest(&mut self, world: &World<P>, path: &Arc<Path>, start: u32) -> Item<P> {
        let (depth, ordinal, delta) = self.pending.get_mut(self.given).expect("a successor is pending");
        let (depth, ordinal) = (*depth, *ordinal);
        let mut delta = delta.take().expect("successors above the given ones keep their deltas");
        self.given += 1;
        // Its parent, at depth - 1: the current world with the later steps undone, on a copy.
        let kept = (depth - 1 - start) as usize;
        let mut parent = world.clone();
        for index in (kept..self.steps.len()).rev() {
            self.steps.get_mut(index).expect("a step below the top").1.swap(&mut parent);
        }
        let mut successor = parent.clone();
        delta.swap(&mut successor);
        // Each step's delta back to what it replaced, for this worker's own way back up.
        for index in kept..self.steps.len() {
            self.steps.get_mut(index).expect("a step below the top").1.swap(&mut parent);
        }
        debug_assert_eq!(parent.fingerprint(), world.fingerprint(), "the steps are as they were");
        let given = self.steps.iter().take(kept).fold(Arc::clone(path), |given, (step, _)| given.then(*step));
        (successor, given.then(ordinal))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CheckOptions;
    use foretell_model::{Driver, FixedChoices, Model, NodeId, Out};

    /// Each node, on an input, sends its successor in the ring one message, up to `LIMIT`, and
    /// counts the messages it receives: steps change node slots and the network.
    struct Ring;

    const NODES: usize = 3;
    const LIMIT: u8 = 2;

    impl Protocol for Ring {
        /// (messages sent, messages received).
        type State = (u8, u8);
        type Msg = ();
        type Timer = ();
        type Input = ();

        fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> (u8, u8) {
            (0, 0)
        }

        fn on_message(
            &self,
            _: NodeId,
            (_, received): &mut (u8, u8),
            _: NodeId,
            _: &(),
            _: &mut Out<'_, Self>,
        ) {
            *received += 1;
        }

        fn on_input(&self, me: NodeId, (sent, _): &mut (u8, u8), _: &(), out: &mut Out<'_, Self>) {
            if *sent == LIMIT {
                out.disable();
            } else {
                *sent += 1;
                out.send(NodeId::new((me.index() + 1) % NODES), ());
            }
        }
    }

    fn ring() -> Model<Ring> {
        let driver = NodeId::all(NODES).fold(Driver::new(), |driver, node| driver.spontaneous(node, ()));
        Model::new(Ring).nodes(NODES).driver(driver)
    }

    /// The world at the end of `path` (an initial world's index, then successor ordinals),
    /// stepped afresh.
    fn replayed(sim: Simulator<'_, Ring>, path: &[u32]) -> World<Ring> {
        let mut roots = Vec::new();
        sim.initial_worlds(|_, world, _| roots.push(world));
        path[1..].iter().fold(roots.swap_remove(path[0] as usize), |world, &ordinal| {
            let (action, choices) = sim.successor_step(&world, ordinal).expect("the ordinal is a step");
            sim.step(&world, action, &mut FixedChoices::new(&choices), false).world
        })
    }

    /// A worker that sees someone waiting at every world gives away the oldest successor it
    /// holds each time: every world it gives is the world its path leads to, and the worlds given,
    /// explored in turn, complete the space.
    #[test]
    fn a_worker_always_asked_gives_worlds_that_their_paths_reach() {
        let model = ring();
        let sim = Simulator::new(&model).unwrap();
        let options = CheckOptions::default();
        let exp = Exploration::new(sim, &options);
        let run = Run {
            exp: &exp,
            stop: AtomicBool::new(false),
            unique: AtomicU64::new(0),
            found: Mutex::new(None),
        };
        let mut seen = Seen::new(&options, false, 1);
        let mut tally = Tally::new(0);
        let mut roots = Vec::new();
        sim.initial_worlds(|_, world, _| roots.push(world));
        let root = roots.pop().expect("an initial world");
        assert!(roots.is_empty(), "one initial world");
        assert!(matches!(seen.visit_owned(root.fingerprint(), options.fingerprint_bits, 0), Visit::New));
        // As many workers wait as there could ever be worlds queued for them.
        let board = Board::new(Vec::new());
        board.waiting.store(usize::MAX / 2, Ordering::Relaxed);
        let mut walk = Walk::new();
        assert!(!walk.explore(&run, &mut &mut seen, &board, root, &Path::start(0), &mut tally));
        let given = board.worlds.lock().unwrap().len();
        assert!(given > 10, "{given} worlds given");
        for (world, path) in board.worlds.lock().unwrap().iter() {
            let path = path.to_vec();
            assert_eq!(world.fingerprint(), replayed(sim, &path).fingerprint(), "{path:?}");
        }
        // The given worlds, explored by a worker (giving on), complete the space.
        work(&run, &mut &mut seen, &board, &mut tally, false);
        let all = crate::Check::dfs(&model).run().stats.unique_states;
        assert_eq!(tally.unique + 1, all, "every world but the initial one is counted by the walks");
        assert_eq!(seen.len(), all);
    }
}
