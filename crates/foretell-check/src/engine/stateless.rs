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
use crate::exploration::{Exploration, Found, Steps};
use crate::{Pruning, Report};
use foretell_model::{Action, Fingerprint, FixedChoices, Protocol, World};
use rustc_hash::FxHashMap;

struct Child {
    action: Action,
    choices: Vec<usize>,
    fingerprint: Fingerprint,
    /// Whether the step itself violates a handler property; such a step is never pruned.
    violates: bool,
}

struct Frame {
    children: Vec<Child>,
    next: usize,
}

pub(crate) fn run<P: Protocol>(mut exp: Exploration<'_, '_, P>) -> Report {
    let sim = exp.sim;
    let mut roots = Vec::new();
    sim.initial_worlds(|choices, world, violation| roots.push((choices, world, violation)));
    // Depth at which each distinct world was explored; a key is the fingerprint's low or full
    // bits, as for stateful search.
    let mut explored: FxHashMap<u128, u32> = FxHashMap::default();
    let key = |fp: Fingerprint| match exp.options.fingerprint_bits {
        crate::FingerprintBits::B64 => u128::from(fp.short()),
        crate::FingerprintBits::B128 => fp.0,
    };
    let mut found: Option<Found> = None;
    for (init_choices, world, violation) in roots {
        if found.is_some() || exp.should_stop(0) {
            break;
        }
        if explored.insert(key(key_of(sim, &world)), 0).is_some() {
            continue;
        }
        if let Some(v) = exp.examine(&world, 0, violation) {
            found = Some((v, init_choices, Vec::new()));
            break;
        }
        found = search_from(&mut exp, &mut explored, &key, init_choices, world);
    }
    exp.finish(found)
}

/// Depth-first search from one start world.
fn search_from<P: Protocol>(
    exp: &mut Exploration<'_, '_, P>,
    explored: &mut FxHashMap<u128, u32>,
    key: &impl Fn(Fingerprint) -> u128,
    init_choices: Vec<usize>,
    init: World<P>,
) -> Option<Found> {
    let sim = exp.sim;
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
        let seen_at = explored.get(&key(child.fingerprint)).copied();
        if prune && !child.violates && seen_at.is_some_and(|d| d as usize <= depth) {
            continue;
        }
        let parent = current.get_or_insert_with(|| reexecute(exp, &start, &path));
        let mut chooser = FixedChoices::new(&child.choices);
        let outcome = sim.step(parent, child.action, &mut chooser, false);
        let step = (child.action, child.choices.clone());
        explored.insert(key(child.fingerprint), depth as u32);
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
        let fingerprint = Keyed::new(sim, s).key;
        children.push(Child { fingerprint, violates, action, choices });
    });
    exp.stats.transitions += children.len() as u64;
    Frame { children, next: 0 }
}

/// Rebuilds the world at the end of `path` by re-executing it from the start world.
fn reexecute<P: Protocol>(exp: &Exploration<'_, '_, P>, start: &World<P>, path: &Steps) -> World<P> {
    let sim = exp.sim;
    let mut world = start.clone();
    for (action, choices) in path {
        let mut chooser = FixedChoices::new(choices);
        world = sim.step(&world, *action, &mut chooser, false).world;
    }
    world
}
