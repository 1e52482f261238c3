//! A successor as the parts of its parent world that it changes, swapped into the parent in
//! place: a depth-first search that keeps one world walks down a step by swapping its delta in
//! and back up by swapping the same delta again.
//!
//! A step changes at most one node slot (the acting node's), the network, and the driver's
//! counters. Building the next world as a new `World` copies its parent's node vector, raising
//! the shared count of every slot, and the world is dropped again once expanded, dropping them
//! all: two locked instructions per node and world, which took 9% of a one-thread depth-first
//! search of two-phase commit (docs/BENCHMARKS.md, "Locked instructions"). A swap moves the
//! changed parts only, and counts nothing. The network is one such part, a copy with the step's
//! sends, except where a large network would be copied for a few changes: then the delta makes
//! them in the world's own network in place and undoes them — the sends added to a grow-only
//! network ([`NetworkPart::Sends`]), the message consumed (or the queues a reset, a socket error
//! or a transport error cuts) and the sends posted to the other kinds ([`NetworkPart::Edit`]).
//! A deep search whose network grows with depth then keeps a few messages per pending successor
//! rather than a whole network.

use crate::network::{Cut, CutTaken, Envelope, Network};
use crate::step_memo::Ran;
use crate::world::{FaultsUsed, NodeSlot};
use crate::{Fingerprint, Protocol, World};
use std::rc::Rc;
use std::sync::Arc;

/// The parts of a world that one of its steps changes, or, once swapped in
/// ([`Delta::swap`]), the parts the step replaced.
pub struct Delta<P: Protocol>(Parts<P>);

enum Parts<P: Protocol> {
    Changed {
        fingerprint: Fingerprint,
        /// The acting node's index and its slot, where the step changed it.
        node: Option<(u32, Arc<NodeSlot<P>>)>,
        /// What the step did to the network.
        network: NetworkPart<P>,
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

/// What is left of a delta once what it shares with its thread's step memo is dropped
/// ([`Delta::into_remains`]): its node slot and a whole network or world, if it holds them,
/// which any thread may drop. A search stopped deep down holds gigabytes of such networks in
/// its pending deltas, and hands them to a thread of their own rather than drop them between
/// its time budget and its report.
pub struct Remains<P: Protocol> {
    // Held only to be dropped.
    _slot: Option<Arc<NodeSlot<P>>>,
    _network: Option<Arc<Network<P::Msg>>>,
    _world: Option<Box<World<P>>>,
}

/// What a step does to the network, as a delta holds it.
pub(crate) enum NetworkPart<P: Protocol> {
    /// Nothing.
    Unchanged,
    /// Replaces it with this network (swapped in and out).
    Whole(Arc<Network<P::Msg>>),
    /// Adds the sends of a handler run to a grow-only network, in place: a step that sends then
    /// copies no network, which would count every envelope's share once more, and its drop
    /// once less. `added` has bit `k` set for each of `ran`'s sends the swap in added (the
    /// others were held already), or is [`NOT_ADDED`] while the delta is not swapped in.
    Sends { ran: Rc<Ran<P>>, added: u64 },
    /// Takes the message a step consumes out of a network of the consuming kinds, and posts the
    /// handler's sends, in place; boxed, as it is rarer than the others and keeps the delta at
    /// 64 bytes.
    Edit(Box<Edit<P>>),
}

/// [`NetworkPart::Edit`]: a step's changes to a consuming network, made in place.
pub(crate) struct Edit<P: Protocol> {
    /// The index of the message the step consumes (delivers or loses), if it consumes one.
    consumed: Option<u32>,
    /// The queues the step cuts out (a reset, a socket error, a transport error), if any.
    cut: Option<Cut>,
    /// While swapped in: what the cut took out, and the network's hash right after it.
    cut_taken: Option<(CutTaken<P::Msg>, u128)>,
    /// The handler run whose sends are posted, if it sends.
    ran: Option<Rc<Ran<P>>>,
    /// The network's hash after the step; once swapped in, before it.
    hash: u128,
    /// While swapped in: the message consumed.
    taken: Option<Arc<Envelope<P::Msg>>>,
    /// While swapped in, bit `k` for each of `ran`'s sends that opened a connection (a FIFO
    /// channel's first message between two nodes); [`NOT_ADDED`] while not swapped in.
    opened: u64,
}

impl<P: Protocol> Edit<P> {
    /// The edit that consumes message `consumed` or makes `cut`, and posts `ran`'s sends,
    /// leaving the network with the hash `hash`.
    pub(crate) fn new(consumed: Option<u32>, cut: Option<Cut>, ran: Option<Rc<Ran<P>>>, hash: u128) -> Self {
        debug_assert!(consumed.is_none() || cut.is_none(), "a step consumes a message or cuts queues");
        Edit { consumed, cut, cut_taken: None, ran, hash, taken: None, opened: NOT_ADDED }
    }

    /// Makes the step's changes to `world`'s network; or, made, undoes them.
    #[inline(never)]
    fn swap(&mut self, world: &mut World<P>) {
        let network = Arc::make_mut(&mut world.network);
        let sends = self.ran.as_ref().map_or(&[][..], |ran| &ran.sends[..]);
        let consumed = self.consumed.map(|index| index as usize);
        let hash = std::mem::replace(&mut self.hash, network.hash());
        if self.opened == NOT_ADDED {
            if let Some(cut) = self.cut {
                let taken = network.cut_in_place(cut);
                self.cut_taken = Some((taken, network.hash()));
            }
            (self.taken, self.opened) = network.edit_in_place(consumed, sends, hash);
        } else {
            match self.cut_taken.take() {
                Some((taken, after_cut)) => {
                    network.undo_in_place(None, None, sends, self.opened, after_cut);
                    network.undo_cut(taken, hash);
                }
                None => network.undo_in_place(consumed, self.taken.take(), sends, self.opened, hash),
            }
            self.opened = NOT_ADDED;
        }
    }
}

/// [`NetworkPart::Sends`]'s `added` (and [`Edit`]'s `opened`) while its changes are not in the
/// world: no run of at most 63 sends adds (or opens) all 64.
pub(crate) const NOT_ADDED: u64 = u64::MAX;

impl<P: Protocol> NetworkPart<P> {
    #[inline(always)] // the common parts inline into the walk; sends added in place are not
    fn swap(&mut self, world: &mut World<P>) {
        match self {
            NetworkPart::Unchanged => {}
            NetworkPart::Whole(network) => std::mem::swap(&mut world.network, network),
            NetworkPart::Sends { ran, added } => swap_sends(ran, added, world),
            NetworkPart::Edit(edit) => edit.swap(world),
        }
    }
}

/// Adds `ran`'s sends to `world`'s network in place, noting in `added` those it held not yet;
/// or, with `added` noted, takes those back.
#[inline(never)]
fn swap_sends<P: Protocol>(ran: &Ran<P>, added: &mut u64, world: &mut World<P>) {
    let network = Arc::make_mut(&mut world.network);
    if *added == NOT_ADDED {
        *added = 0;
        for (k, envelope) in ran.sends.iter().enumerate() {
            if network.add(envelope) {
                *added |= 1 << k;
            }
        }
    } else {
        for (k, envelope) in ran.sends.iter().enumerate().rev() {
            if *added & (1 << k) != 0 {
                network.take_back(envelope);
            }
        }
        *added = NOT_ADDED;
    }
}

impl<P: Protocol> Delta<P> {
    pub(crate) fn changed(
        fingerprint: Fingerprint,
        node: Option<(u32, Arc<NodeSlot<P>>)>,
        network: NetworkPart<P>,
        rest: Option<Box<(u64, FaultsUsed)>>,
    ) -> Self {
        Delta(Parts::Changed { fingerprint, node, network, rest })
    }

    /// A delta that replaces a whole world with `world`.
    pub fn whole(world: World<P>) -> Self {
        Delta(Parts::World(Box::new(world)))
    }

    /// The delta less what it shares with the step memo of the thread that made it, which only
    /// that thread may let go of (a handler run's sends, shared by [`Rc`]): dropped here, and
    /// the rest returned, which any thread may drop — if there is any.
    pub fn into_remains(self) -> Option<Remains<P>> {
        match self.0 {
            Parts::Changed { node, network, .. } => {
                let network = match network {
                    NetworkPart::Whole(network) => Some(network),
                    NetworkPart::Unchanged | NetworkPart::Sends { .. } | NetworkPart::Edit(_) => None,
                };
                let slot = node.map(|(_, slot)| slot);
                (slot.is_some() || network.is_some()).then_some(Remains {
                    _slot: slot,
                    _network: network,
                    _world: None,
                })
            }
            Parts::World(world) => Some(Remains { _slot: None, _network: None, _world: Some(world) }),
        }
    }

    /// Exchanges the parts the delta holds with `world`'s. Made for a world by
    /// [`crate::Unbuilt::delta`] (or [`Delta::whole`] from its successor), the first swap turns
    /// that world into the successor and leaves the replaced parts here; the second turns it
    /// back.
    #[inline]
    pub fn swap(&mut self, world: &mut World<P>) {
        match &mut self.0 {
            Parts::Changed { fingerprint, node, network, rest } => {
                if let Some((index, slot)) = node {
                    std::mem::swap(&mut world.nodes[*index as usize], slot);
                }
                network.swap(world);
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
    use super::{Delta, NetworkPart, Parts};
    use crate::{
        Budget, Driver, ErrorOrder, Faults, Model, NetworkKind, NodeId, Out, Protocol, Simulator, World,
    };
    use std::collections::{HashSet, VecDeque};
    use std::sync::Arc;

    struct Nothing;

    impl Protocol for Nothing {
        type State = ();
        type Msg = ();
        type Timer = ();
        type Input = ();

        fn init(&self, _: NodeId, _: &mut Out<'_, Self>) {}

        fn on_message(&self, _: NodeId, _: &mut (), _: NodeId, _: &(), _: &mut Out<'_, Self>) {}
    }

    /// Node 0, on input `i` (once), sends node 1 the messages `i` and `i + 1`, which node 1
    /// ignores: on a grow-only network a later input's first message is often held already.
    /// Node 0 starts by sending `FILLER` others, so that the network holds enough messages for
    /// a step's sends to be added in place.
    struct Overlap;

    const INPUTS: u8 = 4;
    const FILLER: u8 = 32;

    impl Protocol for Overlap {
        /// The inputs taken, one bit each.
        type State = u8;
        type Msg = u8;
        type Timer = ();
        type Input = u8;

        fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> u8 {
            if me == NodeId::new(0) {
                (0..FILLER).for_each(|i| out.send(NodeId::new(1), 100 + i));
            }
            0
        }

        fn on_message(&self, _: NodeId, _: &mut u8, _: NodeId, _: &u8, out: &mut Out<'_, Self>) {
            out.disable();
        }

        fn on_input(&self, _: NodeId, taken: &mut u8, input: &u8, out: &mut Out<'_, Self>) {
            if *taken & (1 << input) != 0 {
                out.disable();
            } else {
                *taken |= 1 << input;
                out.send(NodeId::new(1), *input);
                out.send(NodeId::new(1), input + 1);
            }
        }
    }

    /// Walks `model` breadth-first through up to `limit` worlds and checks that every successor,
    /// as a delta swapped into a copy of its world, makes the built successor, and swapped again
    /// the world; `inspect` sees each world, successor and delta while it is swapped in. Returns
    /// how many worlds were walked.
    fn check_deltas<P: Protocol>(
        model: &Model<P>,
        limit: usize,
        mut inspect: impl FnMut(&World<P>, &World<P>, &Delta<P>),
    ) -> usize {
        let sim = Simulator::new(model).unwrap();
        let mut worlds = VecDeque::new();
        sim.initial_worlds(|_, world, _| worlds.push_back(world));
        let mut seen = HashSet::new();
        while let Some(world) = worlds.pop_front() {
            if seen.len() == limit || !seen.insert(world.fingerprint()) {
                continue;
            }
            let mut built = Vec::new();
            sim.successors(&world, |successor| built.push(successor.into_world()));
            let mut deltas = Vec::new();
            sim.successors(&world, |successor| deltas.push(successor.unbuilt().delta(&world)));
            let mut swapped = world.clone();
            for (mut delta, next) in deltas.into_iter().zip(&built) {
                delta.swap(&mut swapped);
                inspect(&world, next, &delta);
                assert_eq!(swapped.to_bytes(), next.to_bytes(), "a delta makes the successor");
                assert_eq!(swapped.fingerprint(), next.fingerprint());
                delta.swap(&mut swapped);
                assert_eq!(swapped.to_bytes(), world.to_bytes(), "a delta swapped again undoes itself");
                assert_eq!(swapped.fingerprint(), world.fingerprint());
            }
            worlds.extend(built);
        }
        seen.len()
    }

    /// Every successor of every world, as a delta swapped into a copy of its world, makes the
    /// built successor; swapped again, the world: also where a step's sends are partly held
    /// already, so that only the others are added in place and taken back.
    #[test]
    fn a_delta_adds_to_a_grow_only_network_only_what_it_did_not_hold() {
        let driver = (0..INPUTS).fold(Driver::new(), |driver, i| driver.spontaneous(NodeId::new(0), i));
        let model = Model::new(Overlap).nodes(2).network(NetworkKind::GrowOnly).driver(driver);
        let mut partly_held = 0;
        let seen = check_deltas(&model, usize::MAX, |world, next, _| {
            partly_held += usize::from(next.messages().len() - world.messages().len() == 1);
        });
        assert_eq!(seen, 1 << INPUTS, "every set of inputs taken");
        assert!(partly_held > 0, "some step sent a message held already");
    }

    /// Node 0 starts by sending node 1 `RELAYED` messages; node 1 relays each to node 2 and
    /// the even ones to itself too, and counts them: a consuming network large enough for a
    /// step's delivery and sends to be made in place, with connections opened by a send.
    struct Relay;

    const RELAYED: u8 = 40;

    impl Protocol for Relay {
        /// The messages taken.
        type State = u8;
        type Msg = u8;
        type Timer = ();
        type Input = ();

        fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> u8 {
            if me == NodeId::new(0) {
                (0..RELAYED).for_each(|i| out.send(NodeId::new(1), i));
            }
            0
        }

        fn on_message(&self, me: NodeId, taken: &mut u8, from: NodeId, msg: &u8, out: &mut Out<'_, Self>) {
            *taken += 1;
            if me == NodeId::new(1) && from == NodeId::new(0) {
                out.send(NodeId::new(2), *msg);
                if msg % 2 == 0 {
                    out.send(me, *msg);
                }
            }
        }
    }

    /// Every successor of the first worlds of a breadth-first search of [`Relay`] on each
    /// consuming network kind, with drops and duplicates, as a delta swapped into a copy of its
    /// world, makes the built successor; swapped again, the world. Some deltas are edits in
    /// place, and some of those open a connection.
    #[test]
    fn a_delta_edits_a_large_consuming_network_in_place_and_undoes_it() {
        for kind in [NetworkKind::Unordered, NetworkKind::FifoChannels, NetworkKind::FifoInbox] {
            let faults = Faults::none().drops(Budget::at_most(2)).duplicates(Budget::at_most(1));
            let model = Model::new(Relay).nodes(3).network(kind).faults(faults);
            let (mut edits, mut opening) = (0, 0);
            let seen = check_deltas(&model, 600, |_, _, delta| {
                if let Parts::Changed { network: NetworkPart::Edit(edit), .. } = &delta.0 {
                    edits += 1;
                    opening += usize::from(edit.opened != 0);
                }
            });
            assert_eq!(seen, 600, "{kind:?}: the space has more worlds than compared");
            assert!(edits > 0, "{kind:?}: some delta edits the network in place");
            let opens = kind == NetworkKind::FifoChannels;
            assert_eq!(opening > 0, opens, "{kind:?}: only FIFO channels have connections to open");
        }
    }

    /// Every successor with resets and socket errors on FIFO channels, as a delta swapped into
    /// a copy of its world, makes the built successor; swapped again, the world: resets,
    /// socket errors and transport errors cut in place where the network is large (the broken
    /// connections' queues out, their errors in; a delivered error out, with what its observer
    /// sent since if errors are queued), and back.
    #[test]
    fn a_delta_cuts_a_large_fifo_network_in_place_and_undoes_it() {
        use crate::network::Cut;
        for order in [ErrorOrder::Independent, ErrorOrder::Queued] {
            let faults = Faults::none().resets(Budget::at_most(2)).socket_errors(Budget::at_most(1));
            let model = Model::new(Relay).nodes(3).network(NetworkKind::FifoChannels).faults(faults);
            let model = model.error_order(order);
            let (mut resets, mut sockets, mut errors) = (0, 0, 0);
            let seen = check_deltas(&model, 600, |world, next, delta| {
                if let Parts::Changed { network: NetworkPart::Edit(edit), .. } = &delta.0 {
                    let losing = next.messages().len() < world.messages().len();
                    resets += usize::from(matches!(edit.cut, Some(Cut::Reset(_))) && losing);
                    sockets += usize::from(matches!(edit.cut, Some(Cut::Connection(_))) && losing);
                    errors += usize::from(matches!(edit.cut, Some(Cut::Error { .. })));
                }
            });
            assert_eq!(seen, 600, "{order:?}: the space has more worlds than compared");
            assert!(resets > 0, "{order:?}: some delta resets a node in place, losing messages");
            assert!(sockets > 0, "{order:?}: some delta breaks a connection in place, losing messages");
            assert!(errors > 0, "{order:?}: some delta delivers a transport error in place");
        }
    }

    /// What is left of a delta keeps its whole network, and another thread may drop it: a
    /// duplicate's successor holds one, which its remains keep alive until dropped there.
    #[test]
    fn a_delta_s_remains_keep_its_whole_network_for_another_thread_to_drop() {
        let faults = Faults::none().duplicates(Budget::at_most(1));
        let model = Model::new(Relay).nodes(3).network(NetworkKind::FifoChannels).faults(faults);
        let sim = Simulator::new(&model).unwrap();
        let mut start = None;
        sim.initial_worlds(|_, world, _| start = Some(world));
        let world = start.expect("one initial world");
        let mut deltas = Vec::new();
        sim.successors(&world, |successor| deltas.push(successor.unbuilt().delta(&world)));
        let whole = |delta: &Delta<Relay>| match &delta.0 {
            Parts::Changed { network: NetworkPart::Whole(network), .. } => Some(Arc::downgrade(network)),
            _ => None,
        };
        let networks: Vec<_> = deltas.iter().filter_map(whole).collect();
        assert!(!networks.is_empty(), "a duplicate's delta holds a whole network");
        let remains: Vec<_> = deltas.into_iter().filter_map(Delta::into_remains).collect();
        assert!(networks.iter().all(|n| n.upgrade().is_some()), "the remains keep the networks");
        std::thread::spawn(move || drop(remains)).join().expect("dropped on another thread");
        assert!(networks.iter().all(|n| n.upgrade().is_none()), "dropped with the remains");
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
