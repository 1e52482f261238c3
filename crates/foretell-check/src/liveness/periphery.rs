//! The exhaustive part of the liveness search (MaceMC, NSDI'07, section 4): breadth-first to
//! depth `d`, checking safety on the way, and collecting the *periphery* — the worlds at depth
//! `d` where not every liveness property holds, and the non-live worlds with no enabled event
//! at all — each with its path, in breadth-first order.

use super::walk::Steps;
use super::LiveSet;
use crate::shared_path::SharedPath;
use foretell_model::{Action, Model, Protocol, Simulator, StepViolation, World};
use rustc_hash::FxHashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A path from the search's root (which has none), shared between the worlds that extend it.
type Path = Option<Arc<SharedPath<(Action, Vec<usize>)>>>;

fn steps_of(path: &Path) -> Steps {
    path.as_deref().map_or_else(Vec::new, SharedPath::to_vec)
}

fn extended(path: &Path, step: (Action, Vec<usize>)) -> Path {
    Some(match path {
        Some(path) => path.then(step),
        None => SharedPath::start(step),
    })
}

/// What the search found.
pub(crate) enum Periphery<P: Protocol> {
    /// The non-live worlds at the periphery, with their paths from the root.
    Worlds(Vec<(World<P>, Steps)>, SearchStats),
    /// A safety violation, with its path from the root.
    Violation(StepViolation, Steps, SearchStats),
}

/// Counts of the exhaustive part.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SearchStats {
    pub(crate) unique: u64,
    pub(crate) transitions: u64,
}

/// The search's heartbeat: worlds expanded so far, and the path of the world being expanded
/// (for the divergence watchdog); and a flag that asks it to stop (the run was interrupted).
#[derive(Default)]
pub(crate) struct SearchBeat {
    pub(crate) expanded: AtomicU64,
    current: Mutex<Path>,
    pub(crate) stop: AtomicBool,
}

impl SearchBeat {
    /// The path of the world being expanded (built only when a divergence asks for it).
    pub(crate) fn current(&self) -> Steps {
        steps_of(&self.current.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// Breadth-first search from `root` to `depth`.
pub(crate) fn search<P: Protocol>(
    model: &Model<P>,
    root: &World<P>,
    depth: usize,
    live: &LiveSet,
    invariants: bool,
    beat: &SearchBeat,
) -> Periphery<P> {
    let sim = Simulator::new(model).expect("the coordinator validated the model");
    let invariant = |w: &World<P>| invariants.then(|| sim.violated_invariant(w)).flatten();
    let mut stats = SearchStats { unique: 1, transitions: 0 };
    if let Some(v) = invariant(root) {
        return Periphery::Violation(v, Vec::new(), stats);
    }
    let mut seen = FxHashSet::default();
    seen.insert(root.fingerprint().0);
    let mut level: Vec<(World<P>, Path)> = vec![(root.clone(), None)];
    let mut periphery = Vec::new();
    for _ in 0..depth {
        let mut next = Vec::new();
        for (world, path) in &level {
            if beat.stop.load(Ordering::Relaxed) {
                return Periphery::Worlds(Vec::new(), stats);
            }
            beat.current.lock().unwrap_or_else(|p| p.into_inner()).clone_from(path);
            beat.expanded.fetch_add(1, Ordering::Release);
            let mut found = None;
            let mut successors = 0;
            sim.successors(world, |mut s| {
                successors += 1;
                if found.is_some() {
                    return;
                }
                stats.transitions += 1;
                let step = (s.action, std::mem::take(&mut s.choices));
                let violation = s.violation.take().map(|v| *v);
                if violation.is_none() && !seen.insert(s.fingerprint().0) {
                    return;
                }
                let child = extended(path, step);
                let next_world = s.into_world();
                stats.unique += u64::from(violation.is_none());
                match violation.or_else(|| invariant(&next_world)) {
                    Some(v) => found = Some((v, steps_of(&child))),
                    None => next.push((next_world, child)),
                }
            });
            if let Some((v, steps)) = found {
                return Periphery::Violation(v, steps, stats);
            }
            if successors == 0 && !live.holds(model, world) {
                periphery.push((world.clone(), steps_of(path)));
            }
        }
        level = next;
    }
    let frontier = level.into_iter().filter(|(w, _)| !live.holds(model, w));
    periphery.extend(frontier.map(|(w, path)| (w, steps_of(&path))));
    Periphery::Worlds(periphery, stats)
}
