//! A path from an initial world that the worlds extending it share: a linked list from the
//! newest step back to the first, each link counted by an `Arc`, so that a search holding many
//! worlds keeps one copy of their common prefix.
//!
//! Dropping a path unlinks it in a loop. The drop the compiler writes would recurse once per
//! link and overflow the stack on the paths of an unbounded model, a million steps deep.

use std::sync::Arc;

/// One step of a path and, through its parent, every step before it.
pub(crate) struct SharedPath<T> {
    parent: Option<Arc<SharedPath<T>>>,
    step: T,
    depth: u32,
}

impl<T> SharedPath<T> {
    /// The path of one step, at depth 0.
    pub(crate) fn start(step: T) -> Arc<Self> {
        Arc::new(SharedPath { parent: None, step, depth: 0 })
    }

    /// This path followed by `step`.
    pub(crate) fn then(self: &Arc<Self>, step: T) -> Arc<Self> {
        Arc::new(SharedPath { parent: Some(Arc::clone(self)), step, depth: self.depth + 1 })
    }

    /// The number of steps before the last one.
    pub(crate) fn depth(&self) -> u32 {
        self.depth
    }

    /// The steps, first to last.
    pub(crate) fn to_vec(&self) -> Vec<T>
    where
        T: Clone,
    {
        let mut steps = Vec::with_capacity(self.depth as usize + 1);
        let mut at = Some(self);
        while let Some(link) = at {
            steps.push(link.step.clone());
            at = link.parent.as_deref();
        }
        steps.reverse();
        steps
    }
}

impl<T> Drop for SharedPath<T> {
    fn drop(&mut self) {
        let mut parent = self.parent.take();
        // Only the last holder of a link unlinks it; a link another path still holds stops
        // the loop, and `into_inner` picks exactly one of two threads dropping at once.
        while let Some(link) = parent {
            parent = Arc::into_inner(link).and_then(|mut only| only.parent.take());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_come_back_in_order_and_shared_prefixes_survive() {
        let common = SharedPath::start('a').then('b');
        let left = common.then('c');
        let right = common.then('d');
        drop(common);
        drop(left);
        assert_eq!(right.to_vec(), ['a', 'b', 'd']);
        assert_eq!(right.depth(), 2);
    }

    #[test]
    fn a_path_a_million_steps_long_drops_without_recursion() {
        let mut path = SharedPath::start(0u32);
        for step in 1..1_000_000 {
            path = path.then(step);
        }
        let copy = Arc::clone(&path);
        drop(path);
        assert_eq!(copy.depth(), 999_999);
        drop(copy);
    }
}
