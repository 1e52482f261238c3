//! A successor as the parts of its parent world that it changes, swapped into the parent in
//! place: a depth-first search that keeps one world walks down a step by swapping its delta in
//! and back up by swapping the same delta again.
//!
//! A step changes at most one node slot (the acting node's), the network, and the driver's
//! counters. Building the next world as a new `World` copies its parent's node vector, raising
//! the shared count of every slot, and the world is dropped again once expanded, dropping them
//! all: two locked instructions per node and world, which took 9% of a one-thread depth-first
//! search of two-phase commit (docs/BENCHMARKS.md, "Locked instructions"). A swap moves the
//! changed parts only, and counts nothing.

use crate::network::Network;
use crate::world::{FaultsUsed, NodeSlot};
use crate::{Fingerprint, Protocol, World};
use std::sync::Arc;

/// The parts of a world that one of its steps changes, or, once swapped in
/// ([`Delta::swap`]), the parts the step replaced.
pub struct Delta<P: Protocol>(Parts<P>);

enum Parts<P: Protocol> {
    Changed {
        fingerprint: Fingerprint,
        /// The acting node's index and its slot, where the step changed it.
        node: Option<(u32, Arc<NodeSlot<P>>)>,
        /// The network, where the step changed it.
        network: Option<Arc<Network<P::Msg>>>,
        /// The driver's pending inputs and the faults used, where the step changed them: rare,
        /// so boxed (the step's change boxes them already, and the box moves over), which keeps
        /// a delta at 64 bytes rather than 80, where a search pushes, pops and swaps one per new
        /// world.
        rest: Option<Box<(u64, FaultsUsed)>>,
    },
    /// A whole world (a successor that had to be built anyway, to find its key under a
    /// symmetry).
    World(Box<World<P>>),
}

impl<P: Protocol> Delta<P> {
    pub(crate) fn changed(
        fingerprint: Fingerprint,
        node: Option<(u32, Arc<NodeSlot<P>>)>,
        network: Option<Arc<Network<P::Msg>>>,
        rest: Option<Box<(u64, FaultsUsed)>>,
    ) -> Self {
        Delta(Parts::Changed { fingerprint, node, network, rest })
    }

    /// A delta that replaces a whole world with `world`.
    pub fn whole(world: World<P>) -> Self {
        Delta(Parts::World(Box::new(world)))
    }

    /// Exchanges the parts the delta holds with `world`'s. Made for a world by
    /// [`crate::Unbuilt::delta`] (or [`Delta::whole`] from its successor), the first swap turns
    /// that world into the successor and leaves the replaced parts here; the second turns it
    /// back.
    pub fn swap(&mut self, world: &mut World<P>) {
        match &mut self.0 {
            Parts::Changed { fingerprint, node, network, rest } => {
                if let Some((index, slot)) = node {
                    std::mem::swap(&mut world.nodes[*index as usize], slot);
                }
                if let Some(network) = network {
                    std::mem::swap(&mut world.network, network);
                }
                if let Some(rest) = rest {
                    std::mem::swap(&mut world.pending, &mut rest.0);
                    std::mem::swap(&mut world.faults_used, &mut rest.1);
                }
                std::mem::swap(&mut world.fingerprint, fingerprint);
                debug_assert_eq!(
                    world.fingerprint,
                    world.clone().sealed().fingerprint,
                    "incremental fingerprint"
                );
            }
            Parts::World(whole) => std::mem::swap(world, whole),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Delta;
    use crate::{NodeId, Out, Protocol};

    struct Nothing;

    impl Protocol for Nothing {
        type State = ();
        type Msg = ();
        type Timer = ();
        type Input = ();

        fn init(&self, _: NodeId, _: &mut Out<'_, Self>) {}

        fn on_message(&self, _: NodeId, _: &mut (), _: NodeId, _: &(), _: &mut Out<'_, Self>) {}
    }

    /// A search moves a delta several times per new world (pushed, popped, swapped in, kept on
    /// the path), so its rare parts stay boxed: a fingerprint, a slot, a network, a box and the
    /// variant's tag (64 bytes on x86-64, where a `u128` is aligned to 16; less on narrower
    /// targets).
    #[test]
    fn a_delta_takes_at_most_64_bytes() {
        let size = std::mem::size_of::<Delta<Nothing>>();
        assert!(size <= 64, "a delta takes {size} bytes");
    }
}
