//! System-state creation: LMC's `checkSystemInvariant` (section 4, and section 4.2's LMC-OPT).
//!
//! System states exist only to check invariants. Each is built when its newest local state is
//! visited, from that state and the other nodes' states, so no combination is built twice.
//! In the general form every combination is built and checked. In the projected form a
//! property with a [`Projection`] keeps each node's states by key (states without a key are not
//! kept), and a new keyed state is combined only with the fewest other keyed states that could
//! violate the property — for Paxos agreement, a state of another node that chose a different
//! value; the nodes left out are free, for soundness verification to place in any state. Such
//! a combination is a preliminary violation by the projection's rule; whether the property is
//! really false is decided in the world soundness verification finds. Properties without a
//! projection get the general form.
//!
//! A new state's preliminary violations go to soundness verification together, as one
//! [`Preliminary`] that picks each other node's state from a set ([`Pick`]): one search answers
//! for all of them, and [`super::verdicts`] batches these groups further. Projected, a group is
//! one key group of another node, named by its key, so every combination of the sets is one by
//! the projection's rule. In the general form a group holds, per property, the states each node
//! has in the combinations that property is false in; their product may hold other
//! combinations, but the search succeeds only in a world where the property is false, and any
//! such combination with the new state is one of the group's. They still count one by one as
//! system states and preliminary violations.

use super::explore::{LocalSpace, StateId};
use super::state_set::StateSet;
use super::{is_false, Stopper};
use foretell_model::{NodeId, Projection, Property, PropertyKind, Protocol, Simulator};
use std::collections::BTreeMap;
use std::ops::ControlFlow;

/// How system states are built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LmcMode {
    /// Every combination of local states (the paper's LMC-GEN).
    #[default]
    General,
    /// Only the combinations each property's projection says could violate it (LMC-OPT).
    Projected,
}

/// The properties checked on one family of combinations.
struct Target<P: Protocol> {
    /// Indices of the `always` properties it checks.
    properties: Vec<usize>,
    projection: Option<Projection<P>>,
    /// Per node: the states by key (without a projection, all in one group); states whose key
    /// is `None` are not kept.
    groups: Vec<BTreeMap<Option<u64>, Vec<StateId>>>,
}

/// Combinations that violate a property, before soundness verification: one state per node
/// picked by each node's [`Pick`] (see the module's notes on groups).
pub(crate) struct Preliminary {
    /// Per node, where its state is picked from.
    pub(crate) picks: Vec<Pick>,
    /// The property (index in the model's properties).
    pub(crate) property: usize,
    /// How many preliminary violations it stands for.
    pub(crate) combinations: u64,
}

/// Where a preliminary violation picks one node's state from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Pick {
    /// Any state: the property does not constrain the node (projected mode).
    Free,
    /// One of these states, sorted.
    AnyOf(Vec<StateId>),
    /// One of the node's states with this key under the property's projection: the key group,
    /// which only grows, as it is when the violation is verified (see [`Combiner::key_group`]).
    Keyed(u64),
}

/// Where soundness verification may place one node.
#[derive(Debug)]
pub(crate) enum Place {
    /// Any state.
    Free,
    /// One of `targets`. `reach` is their backward closure: the states from which one of them
    /// can be reached ([`super::reach`]), the only ones the search moves the node into.
    AnyOf { targets: StateSet, reach: StateSet },
}

impl Place {
    /// Whether `state` is allowed.
    #[inline]
    pub(crate) fn admits(&self, state: StateId) -> bool {
        match self {
            Place::Free => true,
            Place::AnyOf { targets, .. } => targets.contains(state),
        }
    }

    /// The states from which an allowed one can be reached, `None` for any.
    pub(crate) fn reach(&self) -> Option<&StateSet> {
        match self {
            Place::Free => None,
            Place::AnyOf { reach, .. } => Some(reach),
        }
    }
}

/// Builds and checks system states.
pub(crate) struct Combiner<P: Protocol> {
    targets: Vec<Target<P>>,
    /// System states built (projected, combinations named by their key groups count too).
    pub(crate) built: u64,
    /// The worlds built to check a property in: the combiner's work.
    pub(crate) worlds: u64,
}

impl<P: Protocol> Combiner<P> {
    /// The combiner for `properties` over `nodes` nodes; in projected mode, with
    /// `projections` (by property name, which must name an `always` property).
    pub(crate) fn new(
        properties: &[Property<P>],
        projections: &[(String, Projection<P>)],
        mode: LmcMode,
        nodes: usize,
    ) -> Result<Self, String> {
        for (name, _) in projections {
            if !properties.iter().any(|p| p.name() == name && p.kind() == PropertyKind::Always) {
                return Err(format!("a projection names {name:?}, which is not an `always` property"));
            }
        }
        let always = properties.iter().enumerate().filter(|(_, p)| p.kind() == PropertyKind::Always);
        let mut general = Vec::new();
        let mut targets = Vec::new();
        for (i, property) in always {
            let projection = projections.iter().find(|(name, _)| name == property.name());
            match projection {
                Some((_, projection)) if mode == LmcMode::Projected => targets.push(Target {
                    properties: vec![i],
                    projection: Some(projection.clone()),
                    groups: vec![BTreeMap::new(); nodes],
                }),
                _ => general.push(i),
            }
        }
        if !general.is_empty() {
            targets.push(Target {
                properties: general,
                projection: None,
                groups: vec![BTreeMap::new(); nodes],
            });
        }
        Ok(Combiner { targets, built: 0, worlds: 0 })
    }

    /// Builds every new combination with state `state` of `node` and checks it; calls
    /// `violated` on each one a property is false in (or, projected, could be false in).
    pub(crate) fn visit(
        &mut self,
        space: &LocalSpace<'_, '_, P>,
        sim: &Simulator<'_, P>,
        node: NodeId,
        state: StateId,
        stopper: &Stopper,
        violated: &mut impl FnMut(Preliminary) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let local = &space.nodes[node.index()].states[state as usize].local;
        let (mut built, mut keyed) = (0u64, 0u64);
        let mut flow = ControlFlow::Continue(());
        for target in &mut self.targets {
            let key = target.projection.as_ref().map_or(Some(0), |p| p.key(local.state()));
            if key.is_some() {
                target.groups[node.index()].entry(key).or_default().push(state);
            }
            flow = match (&target.projection, key) {
                (None, _) => target.general(space, sim, node, state, stopper, &mut built, violated),
                (Some(projection), Some(key)) => {
                    target.keyed(projection, node, state, key, &mut keyed, violated)
                }
                (Some(_), None) => ControlFlow::Continue(()),
            };
            if flow.is_break() {
                break;
            }
        }
        self.built += built + keyed;
        self.worlds += built;
        flow
    }

    /// The states of `node` whose key under the projection of `property` is `key`, in the
    /// order visited (so sorted).
    pub(crate) fn key_group(&self, property: usize, node: usize, key: u64) -> &[StateId] {
        let target = self.targets.iter().find(|t| t.projection.is_some() && t.properties.contains(&property));
        target.and_then(|t| t.groups[node].get(&Some(key))).map_or(&[], Vec::as_slice)
    }
}

impl<P: Protocol> Target<P> {
    /// Every combination of `state` of `node` with the other nodes' states, each checked; the
    /// ones a property is false in go to verification as one group per property.
    #[allow(clippy::too_many_arguments)] // the parts of one visit
    fn general(
        &self,
        space: &LocalSpace<'_, '_, P>,
        sim: &Simulator<'_, P>,
        node: NodeId,
        state: StateId,
        stopper: &Stopper,
        built: &mut u64,
        violated: &mut impl FnMut(Preliminary) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let properties = sim.model().properties();
        let members: Vec<Vec<StateId>> = NodeId::all(space.nodes.len())
            .map(|n| {
                if n == node {
                    vec![state]
                } else {
                    self.groups[n.index()].values().flatten().copied().collect()
                }
            })
            .collect();
        // Per property: the states each node has in the combinations it is false in, and how
        // many those are.
        let mut found = vec![(vec![StateSet::default(); members.len()], 0u64); self.properties.len()];
        // One world, re-pointed at each combination's states.
        let mut reused = None;
        let flow = for_each_product(&members, &mut |states: &[StateId]| {
            if stopper.stopped() {
                return ControlFlow::Break(());
            }
            *built += 1;
            let world = space.world_in(&mut reused, states);
            if let Some(at) = self.properties.iter().position(|&i| is_false(&properties[i], world, stopper)) {
                let (sets, combinations) = &mut found[at];
                for (set, &state) in sets.iter_mut().zip(states) {
                    set.insert(state);
                }
                *combinations += 1;
            }
            ControlFlow::Continue(())
        });
        for ((sets, combinations), &property) in found.into_iter().zip(&self.properties) {
            if combinations > 0 {
                let picks = sets.iter().map(|set| Pick::AnyOf(set.iter().collect())).collect();
                violated(Preliminary { picks, property, combinations })?;
            }
        }
        flow
    }

    /// The smallest combinations of `state` (whose key is `key`) with other nodes' keyed
    /// states that the projection says could violate the property, one key group of the other
    /// node per [`Preliminary`], named by its key; the nodes left out are free, for soundness
    /// verification to place anywhere.
    fn keyed(
        &self,
        projection: &Projection<P>,
        node: NodeId,
        state: StateId,
        key: u64,
        built: &mut u64,
        violated: &mut impl FnMut(Preliminary) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let nodes = self.groups.len();
        let mut keys = vec![None; nodes];
        keys[node.index()] = Some(key);
        // This state alone, or with `other` placed in its key group `other_key`.
        let preliminary = |other: Option<(usize, u64, usize)>| {
            let mut picks = vec![Pick::Free; nodes];
            picks[node.index()] = Pick::AnyOf(vec![state]);
            let combinations = other.map_or(1, |(other, other_key, members)| {
                picks[other] = Pick::Keyed(other_key);
                members as u64
            });
            Preliminary { picks, property: self.properties[0], combinations }
        };
        if projection.may_violate(&keys) {
            *built += 1;
            return violated(preliminary(None));
        }
        // Add one more node at a time (the rules need at most two keyed nodes), a key group at
        // a time.
        for other in (0..nodes).filter(|&n| n != node.index()) {
            for (other_key, members) in &self.groups[other] {
                keys[other] = *other_key;
                if projection.may_violate(&keys) {
                    *built += members.len() as u64;
                    let other_key = other_key.expect("states without a key are not kept");
                    violated(preliminary(Some((other, other_key, members.len()))))?;
                }
            }
            keys[other] = None;
        }
        ControlFlow::Continue(())
    }
}

/// Calls `each` on every way of picking one item of each of `choices`, in order, as an
/// odometer turns: the last pick changes fastest, so most calls differ from the one before in
/// the last pick alone, which is what re-pointing one world at each combination
/// ([`LocalSpace::world_in`]) does least work for.
fn for_each_product<T: Copy>(
    choices: &[Vec<T>],
    each: &mut impl FnMut(&[T]) -> ControlFlow<()>,
) -> ControlFlow<()> {
    if choices.iter().any(Vec::is_empty) {
        return ControlFlow::Continue(());
    }
    let mut at = vec![0; choices.len()];
    let mut picked: Vec<T> = choices.iter().map(|items| items[0]).collect();
    loop {
        each(&picked)?;
        // Turn the last wheel; a wheel that comes round turns the one before it.
        let mut wheel = choices.len();
        loop {
            if wheel == 0 {
                return ControlFlow::Continue(());
            }
            wheel -= 1;
            at[wheel] += 1;
            if at[wheel] < choices[wheel].len() {
                picked[wheel] = choices[wheel][at[wheel]];
                break;
            }
            at[wheel] = 0;
            picked[wheel] = choices[wheel][0];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::for_each_product;
    use std::ops::ControlFlow;

    fn products(choices: &[Vec<u32>]) -> Vec<Vec<u32>> {
        let mut seen = Vec::new();
        let flow = for_each_product(choices, &mut |picked| {
            seen.push(picked.to_vec());
            ControlFlow::Continue(())
        });
        assert!(flow.is_continue());
        seen
    }

    #[test]
    fn the_product_comes_in_order_with_the_last_pick_fastest() {
        let seen = products(&[vec![1, 2], vec![7], vec![3, 4, 5]]);
        let expected: Vec<Vec<u32>> = [[1, 7, 3], [1, 7, 4], [1, 7, 5], [2, 7, 3], [2, 7, 4], [2, 7, 5]]
            .iter()
            .map(|c| c.to_vec())
            .collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn an_empty_choice_empties_the_product_and_no_choices_give_one_empty_pick() {
        assert!(products(&[vec![1, 2], vec![]]).is_empty());
        assert_eq!(products(&[]), vec![Vec::<u32>::new()]);
    }

    #[test]
    fn a_break_stops_the_product() {
        let mut calls = 0;
        let flow = for_each_product(&[vec![1, 2, 3], vec![4, 5]], &mut |_| {
            calls += 1;
            if calls == 4 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert!(flow.is_break());
        assert_eq!(calls, 4);
    }
}
