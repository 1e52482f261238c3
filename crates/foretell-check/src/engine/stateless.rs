//! Stateless search: depth-first exploration of choice sequences by re-execution (MaceMC,
//! NSDI'07, section 3.2, after VeriSoft).
//!
//! Only the current world is kept. Each frame of the search stack holds the successors of one
//! world of the current path as (action, choices, fingerprint) — small records, not worlds.
//! Descending into a successor re-steps it from its parent; backtracking past a world drops it,
//! and the parent of the next sibling is rebuilt by re-executing the path's choice sequence from
//! the start world (the initial world, or a scenario's). With [`crate::Pruning::Fingerprints`] a path stops at a world already
//! explored at the same or a smaller depth (MaceMC's state hashing), and the search visits
//! exactly the worlds stateful search does; with [`crate::Pruning::None`] it explores every
//! sequence up to the depth bound.

use super::seen::{key_of, Keyed};
use super::sharded_map::{self, split, ShardedMap};
use crate::exploration::{Exploration, Found, Steps};
use crate::{Pruning, Report};
use foretell_model::{
    Action, Fingerprint, FixedChoices, Protocol, StepOutcome, StepViolation, TraceVerdict, World,
};

struct Child {
    action: Action,
    choices: Vec<usize>,
    /// The key the visited set stores the step's world under.
    fingerprint: Fingerprint,
    /// The world's own fingerprint, which re-executing the step must reach again.
    reaches: Fingerprint,
    /// Whether the step itself violates a handler property; such a step is never pruned.
    violates: bool,
}

struct Frame {
    children: Vec<Child>,
    next: usize,
}

impl Frame {
    /// The child the search took last (the one its path goes through while it is below).
    fn taken(&self) -> &Child {
        &self.children[self.next - 1]
    }
}

pub(crate) fn run<P: Protocol>(mut exp: Exploration<'_, '_, P>) -> Report {
    let sim = exp.sim;
    let mut roots = Vec::new();
    sim.initial_worlds(|choices, world, violation| roots.push((choices, world, violation)));
    // Depth at which each distinct world was explored; a key is the fingerprint's low or full
    // bits, as for stateful search.
    let mut explored = ShardedMap::<u32>::default();
    let bits = exp.options.fingerprint_bits;
    let key = |fp: Fingerprint| sharded_map::stored_key(fp, bits);
    let mut found: Option<Found> = None;
    for (init_choices, world, violation) in roots {
        if found.is_some() || exp.should_stop(0) {
            break;
        }
        let root = key(key_of(sim, &world));
        if explored.shard_mut(root).insert(split(root), 0).is_some() {
            continue;
        }
        if let Some(v) = exp.examine(&world, 0, violation) {
            found = Some((v, init_choices, Vec::new()));
            break;
        }
        found = search_from(&mut exp, &mut explored, &key, init_choices, world);
    }
    exp.stats.visited_bytes = explored.bytes();
    exp.finish(found)
}

/// Depth-first search from one start world.
fn search_from<P: Protocol>(
    exp: &mut Exploration<'_, '_, P>,
    explored: &mut ShardedMap<u32>,
    key: &impl Fn(Fingerprint) -> u128,
    init_choices: Vec<usize>,
    init: World<P>,
) -> Option<Found> {
    let prune = exp.options.pruning == Pruning::Fingerprints;
    let mut path: Steps = Vec::new();
    let start = init.clone();
    let mut current = Some(init);
    let mut frames = vec![expand(exp, current.as_ref().expect("just set"))];
    while !frames.is_empty() {
        if exp.should_stop(frames.len()) {
            return None;
        }
        let frame = frames.last_mut().expect("not empty");
        let Some(child) = frame.children.get(frame.next) else {
            frames.pop();
            path.pop();
            current = None;
            continue;
        };
        frame.next += 1;
        let depth = path.len() + 1;
        let child_key = key(child.fingerprint);
        let seen_at = explored.shard_mut(child_key).get(&split(child_key)).copied();
        if prune && !child.violates && seen_at.is_some_and(|d| d as usize <= depth) {
            continue;
        }
        if current.is_none() {
            match reexecute(exp, &start, &path, &frames) {
                Ok(parent) => current = Some(parent),
                Err((at, problem)) => {
                    path.truncate(at + 1);
                    return Some((parted(at + 1, &problem), init_choices, path));
                }
            }
        }
        let parent = current.as_ref().expect("rebuilt above");
        let child = frames.last().expect("not empty").taken();
        let outcome = match step_as_explored(exp, parent, child) {
            Ok(outcome) => outcome,
            Err(problem) => {
                path.push((child.action, child.choices.clone()));
                return Some((parted(path.len(), &problem), init_choices, path));
            }
        };
        let step = (child.action, child.choices.clone());
        explored.shard_mut(child_key).insert(split(child_key), depth as u32);
        let violation = match (outcome.violation, seen_at) {
            (Some(v), _) => Some(v),
            (None, None) => exp.examine(&outcome.world, depth, None),
            (None, Some(_)) => None,
        };
        if let Some(v) = violation {
            path.push(step);
            return Some((v, init_choices, path));
        }
        if exp.at_depth_bound(depth) {
            continue;
        }
        frames.push(expand(exp, &outcome.world));
        path.push(step);
        current = Some(outcome.world);
    }
    None
}

/// The successors of `world` as small records; counts them as transitions.
fn expand<P: Protocol>(exp: &mut Exploration<'_, '_, P>, world: &World<P>) -> Frame {
    let mut children = Vec::new();
    let sim = exp.sim;
    sim.successors(world, |mut s| {
        let (action, choices, violates) = (s.action, std::mem::take(&mut s.choices), s.violation.is_some());
        let reaches = s.fingerprint();
        let fingerprint = Keyed::new(sim, s).key;
        children.push(Child { fingerprint, reaches, violates, action, choices });
    });
    exp.stats.transitions += children.len() as u64;
    Frame { children, next: 0 }
}

/// Rebuilds the world at the end of `path` by re-executing it from the start world (step `k` is
/// the child of `frames[k]` the search last took); `Err` with the index of the first step that
/// does not re-execute as explored, and why.
fn reexecute<P: Protocol>(
    exp: &Exploration<'_, '_, P>,
    start: &World<P>,
    path: &Steps,
    frames: &[Frame],
) -> Result<World<P>, (usize, String)> {
    let mut world = start.clone();
    for (at, frame) in frames.iter().take(path.len()).enumerate() {
        let child = frame.taken();
        world = step_as_explored(exp, &world, child).map_err(|problem| (at, problem))?.world;
    }
    Ok(world)
}

/// Takes `child`'s step again from `parent`. A handler that is a function of its state, event
/// and choices makes the same choices into the same world as when the search expanded the
/// parent; `Err` says how this one did not. Each step is checked before the next is taken, so
/// a step never runs in a world other than the one that enabled it.
fn step_as_explored<P: Protocol>(
    exp: &Exploration<'_, '_, P>,
    parent: &World<P>,
    child: &Child,
) -> Result<StepOutcome<P>, String> {
    let mut chooser = FixedChoices::new(&child.choices);
    let outcome = exp.sim.step(parent, child.action, &mut chooser, false);
    chooser.finish().map_err(|problem| format!("its handler chose differently: {problem}"))?;
    if outcome.world.fingerprint() != child.reaches {
        return Err("it reaches another world than when the search expanded its parent".into());
    }
    Ok(outcome)
}

/// The finding of a step, `step` steps from the start world, that did not re-execute as the
/// search explored it, for the reason `problem`.
fn parted(step: usize, problem: &str) -> StepViolation {
    TraceVerdict::parted(step, problem).into()
}
