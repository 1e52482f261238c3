//! Stateful search: breadth-first (a FIFO frontier: shortest counterexamples) or depth-first (a
//! LIFO frontier), storing fingerprints and parent pointers, never whole explored worlds.
//!
//! With a depth bound, depth-first search may first reach a world by a long path and cut it at
//! the bound; the visited set keeps each world's depth, so a later, shorter path re-opens it and
//! every world within the bound is explored, as breadth-first search would.

use crate::exploration::Exploration;
use crate::visited::{RecordId, Visit, Visited};
use crate::Report;
use foretell_model::{Protocol, StepViolation, World};
use std::collections::VecDeque;

/// The order in which found worlds are explored.
pub(crate) trait Frontier<T> {
    fn push(&mut self, item: T);
    fn pop(&mut self) -> Option<T>;
    fn len(&self) -> usize;
}

impl<T> Frontier<T> for VecDeque<T> {
    fn push(&mut self, item: T) {
        self.push_back(item);
    }
    fn pop(&mut self) -> Option<T> {
        self.pop_front()
    }
    fn len(&self) -> usize {
        VecDeque::len(self)
    }
}

impl<T> Frontier<T> for Vec<T> {
    fn push(&mut self, item: T) {
        Vec::push(self, item);
    }
    fn pop(&mut self) -> Option<T> {
        Vec::pop(self)
    }
    fn len(&self) -> usize {
        Vec::len(self)
    }
}

pub(crate) fn run<P: Protocol, F: Frontier<(World<P>, RecordId)>>(
    mut exp: Exploration<'_, '_, P>,
    mut frontier: F,
) -> Report {
    let mut visited = Visited::new(exp.options.fingerprint_bits);
    let mut found: Option<(RecordId, StepViolation)> = None;
    let sim = exp.sim;
    let mut root = 0u32;
    sim.initial_worlds(|_, world, violation| {
        if found.is_none() {
            if let Visit::New(id) = visited.visit(world.fingerprint(), None, root, 0) {
                match exp.examine(&world, 0, violation) {
                    Some(v) => found = Some((id, v)),
                    None => frontier.push((world, id)),
                }
            }
        }
        root += 1;
    });
    while found.is_none() && !exp.should_stop(frontier.len()) {
        let Some((world, id)) = frontier.pop() else { break };
        let depth = visited.depth(id) as usize;
        if exp.at_depth_bound(depth) {
            continue;
        }
        sim.successors(&world, |mut s| {
            if found.is_some() {
                return;
            }
            exp.stats.transitions += 1;
            if let Some(violation) = s.violation.take() {
                // A step that breaks a handler property is a finding even if its world was seen.
                let step = visited.record_step(id, s.ordinal);
                found = Some((step, *violation));
                return;
            }
            match visited.visit(s.fingerprint(), Some(id), s.ordinal, depth as u32 + 1) {
                Visit::Seen => {}
                Visit::Shallower(child) => frontier.push((s.into_world(), child)),
                Visit::New(child) => {
                    let world = s.into_world();
                    match exp.examine(&world, depth + 1, None) {
                        Some(v) => found = Some((child, v)),
                        None => frontier.push((world, child)),
                    }
                }
            }
        });
    }
    debug_assert!(found.is_some() || exp.stats.unique_states == visited.len() as u64);
    let found = found.map(|(id, violation)| {
        let (root, ordinals) = visited.path(id);
        let (init_choices, steps) = exp.steps_from_ordinals(root, &ordinals);
        (violation, init_choices, steps)
    });
    exp.finish(found)
}
