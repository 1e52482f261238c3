//! The simulator's step memo changes no answer: on every bundled network kind, with faults,
//! timers and handler choices, the successors a search gets (recalled from the memo wherever a
//! local step was met before) are exactly the steps run afresh, one by one, without it.
//!
//! A recorded step (`Simulator::step` with `record`) never consults the memo, so it is the
//! reference. Each world of a breadth-first search is compared in full: the same steps, in the
//! same order, with the same choices, reaching worlds with the same fingerprints. The worlds are
//! met in breadth-first order, so most of the steps compared are recalled ones.
//! A detached copy of each world (`World::detached`, which engines make of a world another
//! thread built) must have the same successors too, and each successor as a `Delta` swapped
//! into the world must make the built successor.

use foretell_model::{Action, ChoiceOdometer, Model, NodeId, Protocol, Simulator, World};
use foretell_systems::psharp::{basic_paxos, failure_detector};
use foretell_systems::{mace_transport, paxos, paxos_tla, randtree, two_phase_commit};
use std::collections::{HashSet, VecDeque};

/// A step that changes its world or violates a property, as (action, choices, fingerprint).
type Step = (Action, Vec<usize>, u128);

/// Every step of `world` run afresh, without the memo, as a search would list its successors.
fn fresh_steps<P: Protocol>(sim: &Simulator<'_, P>, world: &World<P>) -> Vec<Step> {
    let mut actions = Vec::new();
    sim.actions(world, &mut actions);
    let mut steps = Vec::new();
    for action in actions {
        let mut odometer = ChoiceOdometer::new();
        loop {
            let outcome = sim.step(world, action, &mut odometer, true);
            if outcome.world.fingerprint() != world.fingerprint() || outcome.violation.is_some() {
                steps.push((action, outcome.choices, outcome.world.fingerprint().0));
            }
            if !odometer.advance() {
                break;
            }
        }
    }
    steps
}

/// Searches `model` breadth-first through up to `limit` worlds, comparing each world's
/// successors with its steps run afresh; returns how many worlds were compared.
fn memo_agrees<P: Protocol>(name: &str, model: &Model<P>, limit: usize) -> usize {
    let sim = Simulator::new(model).expect("the model validates");
    let mut seen = HashSet::new();
    let mut queue = VecDeque::new();
    sim.initial_worlds(|_, world, _| {
        if seen.insert(world.fingerprint()) {
            queue.push_back(world);
        }
    });
    let mut compared = 0;
    while let Some(world) = queue.pop_front() {
        let mut recalled = Vec::new();
        let mut next = Vec::new();
        sim.successors(&world, |successor| {
            let fingerprint = successor.fingerprint();
            recalled.push((successor.action, successor.choices.clone(), fingerprint.0));
            let built = successor.into_world();
            assert_eq!(built.fingerprint(), fingerprint, "{name}: a built world keeps its fingerprint");
            next.push(built);
        });
        assert_eq!(recalled, fresh_steps(&sim, &world), "{name}: world {} differs", world.fingerprint());
        // Each successor as a delta (what a one-thread depth-first search keeps), swapped into a
        // copy of the world, makes the built world; swapped again, the world itself.
        let mut deltas = Vec::new();
        sim.successors(&world, |successor| deltas.push(successor.unbuilt().delta(&world)));
        let mut swapped = world.clone();
        for (mut delta, built) in deltas.into_iter().zip(&next) {
            delta.swap(&mut swapped);
            assert_eq!(swapped.fingerprint(), built.fingerprint(), "{name}: a delta makes the successor");
            assert_eq!(swapped.to_bytes(), built.to_bytes(), "{name}: a delta makes the successor");
            delta.swap(&mut swapped);
            assert_eq!(swapped.to_bytes(), world.to_bytes(), "{name}: a delta swapped again undoes itself");
        }
        // A detached copy (what a worker makes of a world it takes from another) steps alike.
        let detached = world.detached();
        assert_eq!(detached.fingerprint(), world.fingerprint(), "{name}: detaching keeps the fingerprint");
        let mut from_detached = Vec::new();
        sim.successors(&detached, |s| from_detached.push((s.action, s.choices.clone(), s.fingerprint().0)));
        assert_eq!(from_detached, recalled, "{name}: a detached world steps as the original");
        compared += 1;
        for built in next {
            if seen.len() < limit && seen.insert(built.fingerprint()) {
                queue.push_back(built);
            }
        }
    }
    compared
}

#[test]
fn grow_only_two_phase_commit() {
    assert_eq!(memo_agrees("2pc", &two_phase_commit::model(3, false), usize::MAX), 288, "TLC's count");
}

/// Paxos.tla's sends are broadcasts into a set of dozens of messages, some of them held
/// already: a delta adds only the new ones in place and takes back exactly those.
#[test]
fn grow_only_paxos_tla() {
    let config = paxos_tla::Config { acceptors: 3, ballots: 1, values: 2, bug: None };
    assert_eq!(memo_agrees("paxos-tla", &paxos_tla::model(&config), usize::MAX), 3921, "TLC's count");
}

#[test]
fn unordered_paxos_with_resets() {
    let model = paxos::model(&[(NodeId(0), 1), (NodeId(1), 2)], 1, paxos::Bug::None);
    assert!(memo_agrees("paxos", &model, 3000) >= 3000);
}

#[test]
fn fifo_channels_randtree_with_resets_and_socket_errors() {
    let config = randtree::Config { socket_errors: 1, ..randtree::Config::default() };
    assert!(memo_agrees("randtree", &randtree::model(config, randtree::Bug::None), 3000) >= 3000);
}

#[test]
fn fifo_channels_transport_with_drops_and_timers() {
    let model = mace_transport::model(mace_transport::Config::default());
    assert!(memo_agrees("mace-transport", &model, 3000) >= 3000);
}

#[test]
fn fifo_inboxes_with_timers_and_choices() {
    let basic_paxos = basic_paxos::model(&basic_paxos::Config::default());
    assert!(memo_agrees("basic-paxos", &basic_paxos, 3000) >= 3000);
    let detector = failure_detector::model(&failure_detector::Config::default());
    assert!(memo_agrees("failure-detector", &detector, 3000) >= 3000);
}

#[test]
fn unordered_actor_paxos() {
    let model = foretell_systems::actor_paxos::model(1);
    assert_eq!(memo_agrees("actor-paxos", &model, usize::MAX), 265, "Stateright's count");
}
