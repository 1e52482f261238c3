//! Invariant-specific system states for local model checking (LMC, "Local Model Checking of
//! Distributed Systems", section 4.2, the paper's LMC-OPT): a cheap node-local projection of an
//! invariant, so that the engine builds only the combinations of local states that could
//! violate it.
//!
//! The projection maps each local state to a key — the value a Paxos node has chosen, whether a
//! RandTree node's children and siblings overlap — or to nothing, and a rule on the keys of a
//! combination says whether the invariant could be false there. The model declares it per
//! `always` property ([`crate::Model::projection`]); it must be sound: whenever the invariant is
//! false in a world, the rule holds of its nodes' keys.

use crate::Protocol;
use std::fmt;
use std::sync::Arc;

/// A local state's key under a projection.
pub type ProjectionKey<P> = Arc<dyn Fn(&<P as Protocol>::State) -> Option<u64> + Send + Sync>;

/// Which combinations of keys could violate the invariant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProjectionRule {
    /// Two nodes have keys, and they differ (agreement: no two nodes chose different values).
    Conflict,
    /// Some node has a key (a per-node invariant: the key flags a state that breaks it).
    Flagged,
}

/// A node-local projection of an invariant.
pub struct Projection<P: Protocol> {
    key: ProjectionKey<P>,
    rule: ProjectionRule,
}

impl<P: Protocol> Clone for Projection<P> {
    fn clone(&self) -> Self {
        Projection { key: Arc::clone(&self.key), rule: self.rule }
    }
}

impl<P: Protocol> fmt::Debug for Projection<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Projection").field("rule", &self.rule).finish_non_exhaustive()
    }
}

impl<P: Protocol> Projection<P> {
    /// Agreement: the invariant can fail only where two nodes' keys (say, the values they
    /// chose) exist and differ.
    pub fn conflict(key: impl Fn(&P::State) -> Option<u64> + Send + Sync + 'static) -> Self {
        Projection { key: Arc::new(key), rule: ProjectionRule::Conflict }
    }

    /// A per-node invariant: it can fail only where some node's state is `flagged`.
    pub fn flagged(flagged: impl Fn(&P::State) -> bool + Send + Sync + 'static) -> Self {
        Projection { key: Arc::new(move |s| flagged(s).then_some(0)), rule: ProjectionRule::Flagged }
    }

    /// The key of `state`.
    pub fn key(&self, state: &P::State) -> Option<u64> {
        (self.key)(state)
    }

    /// The rule.
    pub fn rule(&self) -> ProjectionRule {
        self.rule
    }

    /// Whether a combination whose nodes have `keys` could violate the invariant.
    pub fn may_violate(&self, keys: &[Option<u64>]) -> bool {
        let mut present = keys.iter().flatten();
        match self.rule {
            ProjectionRule::Flagged => present.next().is_some(),
            ProjectionRule::Conflict => {
                present.next().is_some_and(|first| keys.iter().flatten().any(|other| other != first))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NodeId, Out};

    struct Toy;
    impl Protocol for Toy {
        type State = u32;
        type Msg = ();
        type Timer = ();
        type Input = ();
        fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> u32 {
            0
        }
        fn on_message(&self, _: NodeId, _: &mut u32, _: NodeId, _: &(), _: &mut Out<'_, Self>) {}
    }

    #[test]
    fn conflict_needs_two_different_keys_and_flagged_one() {
        let conflict = Projection::<Toy>::conflict(|s| (*s > 0).then_some(u64::from(*s)));
        assert!(!conflict.may_violate(&[None, None, None]));
        assert!(!conflict.may_violate(&[Some(1), None, Some(1)]));
        assert!(conflict.may_violate(&[Some(1), None, Some(2)]));
        assert!(conflict.may_violate(&[None, Some(2), Some(1)]));
        assert_eq!(conflict.key(&3), Some(3));
        let flagged = Projection::<Toy>::flagged(|s| *s == 7);
        assert!(!flagged.may_violate(&[None, None]));
        assert!(flagged.may_violate(&[None, flagged.key(&7)]));
    }
}
