//! Dining Philosophers with non-blocking forks, a P# liveness benchmark (the livelock of
//! FMCAD'17 "Lasso Detection using Partial-State Caching", section III), ported from
//! `shared/specs/psharp-benchmarks.md`, section 8 (P#'s `DiningPhilosophersTest`).
//!
//! # Nodes
//! With `n` philosophers, nodes `0..n` are the forks (P#'s `Lock` machines) and node `n + i` is
//! philosopher `i`, whose left fork is fork `i` and right fork fork `(i + 1) mod n`. P#'s
//! `Environment`, which creates them and passes each philosopher its two forks, is
//! [`Protocol::init`]: roles and forks follow from the node index, and each philosopher starts
//! in `Trying` by sending its first `TryLock`. Doing that in `init` loses no interleaving: the
//! first requests all go to different forks, and each is still delivered when the scheduler
//! picks it. Every node has a P# inbox ([`NetworkKind::FifoInbox`]).
//!
//! # Encoding
//! A fork grants `TryLock` if it is free and refuses it otherwise, with no queue of waiters;
//! `Release` frees it. The philosopher's `TryAccess` blocks twice in P#'s `Receive(LockResp)`;
//! here each `Receive` is an explicit control state ([`Position::AwaitFirst`],
//! [`Position::AwaitSecond`]) and the code after it runs when the reply is delivered. Nothing
//! but the awaited reply can reach a waiting philosopher (its only other event, `TryAgain`, is
//! one it sends itself after the replies), so no deferral buffer is needed; the local assertion
//! `"unhandled event"` checks that, as P# would. `TryAgain` is a message to itself, which it
//! handles in its turn ([`Position::Retry`]). `Done` releases both forks and halts. No handler
//! needs P#'s preemption inside it, so every handler runs whole.
//!
//! # Phases
//! [`Protocol::phase`] is the philosopher's position (awaiting its first reply, its second
//! reply, about to retry, or done) and the fork's one P# state: P#'s default hash does not see
//! the fork's `LockVar`. Nothing grows, so the livelock repeats the exact world.
//!
//! # Monitor
//! [`Progress`]: hot until some philosopher is done (P#'s `NotifyDone`), then cold for good.
//!
//! # Variants
//! - `bug: true` (the benchmark): every philosopher takes its left fork first. If all take
//!   their left fork, all fail on the right one, release and retry, the world repeats exactly:
//!   a fair livelock.
//! - `bug: false`: ordered acquisition, every philosopher takes the lower-numbered of its two
//!   forks first (philosopher `n - 1` takes fork 0 before fork `n - 1`), which breaks the
//!   symmetry: some philosopher can always still eat, and every run that ends has one done.
//!
//! The registry accepts 2 to 5 philosophers ([`PHILOSOPHERS_MIN`], [`PHILOSOPHERS_MAX`]);
//! [`model`] itself builds any count without panicking.

use foretell_model::{Model, Monitor, NetworkKind, NodeId, Observation, Out, Protocol, Temperature, World};
use serde::{Deserialize, Serialize};

/// The fewest philosophers the benchmark is run with.
pub const PHILOSOPHERS_MIN: usize = 2;

/// The most philosophers the benchmark is run with.
pub const PHILOSOPHERS_MAX: usize = 5;

/// A message (a P# event). A `TryLock`'s sender is the envelope's sender.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Msg {
    /// A philosopher asks for a fork.
    TryLock,
    /// The fork's answer: granted or not.
    LockResp(bool),
    /// The holder frees the fork.
    Release,
    /// A philosopher reminds itself to try again.
    TryAgain,
}

/// Where a philosopher is in P#'s `Trying` state, or that it is done.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Position {
    /// Waiting for the reply to its first `TryLock`.
    AwaitFirst,
    /// Holding its first fork, waiting for the reply to its second `TryLock`.
    AwaitSecond,
    /// Holding nothing, its `TryAgain` on the way.
    Retry,
    /// It ate, released both forks and halted.
    Done,
}

/// A node's state: one variant per P# machine type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum State {
    /// A fork and whether it is taken (P#'s `LockVar`).
    Fork {
        /// Taken.
        taken: bool,
    },
    /// A philosopher.
    Philosopher(Position),
}

/// The benchmark's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// How many philosophers (and forks) sit at the table; the registry accepts 2 to 5.
    pub philosophers: usize,
    /// Left fork first (`true`, the benchmark) or lower-numbered fork first (`false`).
    pub bug: bool,
}

impl Default for Config {
    /// P#'s test: three philosophers, left fork first.
    fn default() -> Self {
        Config { philosophers: 3, bug: true }
    }
}

/// The protocol of every node (the role is fixed by the node index; see the module doc).
#[derive(Clone, Debug)]
pub struct DiningPhilosophers {
    /// The number of philosophers.
    pub philosophers: usize,
    /// Whether every philosopher takes its left fork first (the livelock) or its lower one.
    pub bug: bool,
}

/// One-sentence description.
pub const ABOUT: &str = "P# Dining Philosophers: philosophers try-lock two forks each and retry on failure";

/// The liveness bug.
pub const BUG: &str = "symmetric livelock: all take their left fork, all fail on the right one, all release \
                       and retry, and the world repeats exactly";

/// The model: the forks and the philosophers on P# inboxes, with the liveness monitor.
pub fn model(config: &Config) -> Model<DiningPhilosophers> {
    let protocol = DiningPhilosophers { philosophers: config.philosophers, bug: config.bug };
    Model::new(protocol).nodes(2 * config.philosophers).network(NetworkKind::FifoInbox).monitor(Progress)
}

impl DiningPhilosophers {
    /// The node of philosopher `i`.
    pub fn philosopher(&self, i: usize) -> NodeId {
        NodeId::new(self.philosophers + i)
    }

    /// The forks philosopher node `me` takes, in the order it takes them.
    fn forks(&self, me: NodeId) -> (NodeId, NodeId) {
        let i = me.index() - self.philosophers;
        let (left, right) = (i, (i + 1) % self.philosophers);
        let (first, second) = if self.bug { (left, right) } else { (left.min(right), left.max(right)) };
        (NodeId::new(first), NodeId::new(second))
    }

    fn on_fork(taken: &mut bool, from: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
        match msg {
            Msg::TryLock => {
                out.send(from, Msg::LockResp(!*taken));
                *taken = true;
            }
            Msg::Release => *taken = false,
            other => out.require(false, format!("unhandled event: fork got {other:?}")),
        }
    }

    fn on_philosopher(&self, me: NodeId, position: &mut Position, msg: &Msg, out: &mut Out<'_, Self>) {
        let (first, second) = self.forks(me);
        *position = match (*position, msg) {
            (Position::AwaitFirst, Msg::LockResp(true)) => {
                out.send(second, Msg::TryLock);
                Position::AwaitSecond
            }
            (Position::AwaitSecond, Msg::LockResp(true)) => {
                out.send(first, Msg::Release);
                out.send(second, Msg::Release);
                Position::Done
            }
            (Position::AwaitFirst | Position::AwaitSecond, Msg::LockResp(false)) => {
                if *position == Position::AwaitSecond {
                    out.send(first, Msg::Release);
                }
                out.send(me, Msg::TryAgain);
                Position::Retry
            }
            (Position::Retry, Msg::TryAgain) => {
                out.send(first, Msg::TryLock);
                Position::AwaitFirst
            }
            (Position::Done, _) => Position::Done,
            (position, other) => {
                out.require(false, format!("unhandled event: philosopher in {position:?} got {other:?}"));
                position
            }
        };
    }
}

impl Protocol for DiningPhilosophers {
    type State = State;
    type Msg = Msg;
    type Timer = ();
    type Input = ();

    fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> State {
        if me.index() < self.philosophers {
            State::Fork { taken: false }
        } else {
            out.send(self.forks(me).0, Msg::TryLock);
            State::Philosopher(Position::AwaitFirst)
        }
    }

    fn on_message(&self, me: NodeId, state: &mut State, from: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
        match state {
            State::Fork { taken } => Self::on_fork(taken, from, msg, out),
            State::Philosopher(position) => self.on_philosopher(me, position, msg, out),
        }
    }

    fn phase(&self, state: &State) -> u64 {
        match state {
            State::Fork { .. } => 0,
            State::Philosopher(Position::AwaitFirst) => 1,
            State::Philosopher(Position::AwaitSecond) => 2,
            State::Philosopher(Position::Retry) => 3,
            State::Philosopher(Position::Done) => 4,
        }
    }
}

/// Whether some philosopher is done in `world`.
pub fn someone_done(world: &World<DiningPhilosophers>) -> bool {
    world.states().any(|state| *state == State::Philosopher(Position::Done))
}

/// The monitor's P# state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProgressState {
    /// Hot: no philosopher has eaten yet.
    Init,
    /// Cold: some philosopher ate.
    Done,
}

/// The liveness monitor: some philosopher must eventually eat.
pub struct Progress;

impl Monitor<DiningPhilosophers> for Progress {
    type State = ProgressState;

    fn name(&self) -> &str {
        "LivenessMonitor"
    }

    fn init(&self, _: &World<DiningPhilosophers>) -> ProgressState {
        ProgressState::Init
    }

    /// P#'s `NotifyDone` is sent by a philosopher entering `Done`.
    fn observe(&self, state: &mut ProgressState, step: &Observation<'_, DiningPhilosophers>) {
        let node = step.event.node();
        let done = State::Philosopher(Position::Done);
        if *step.before.state(node) != done && *step.after.state(node) == done {
            *state = ProgressState::Done;
        }
    }

    fn temperature(&self, state: &ProgressState) -> Temperature {
        match state {
            ProgressState::Init => Temperature::Hot,
            ProgressState::Done => Temperature::Cold,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::script::{Rng, Script};
    use super::*;
    use foretell_check::{Check, Completion};
    use foretell_model::{Event, Simulator};
    use std::collections::HashMap;

    /// Delivers, for every philosopher `i` in turn, the message at the head of the inbox of the
    /// node `to(i)` picks; the monitor stays hot.
    fn each(script: &mut Script<'_, DiningPhilosophers>, n: usize, to: impl Fn(usize) -> NodeId) {
        for i in 0..n {
            let node = to(i);
            script.step_hot(&[], |event| matches!(event, Event::Deliver { to, .. } if *to == node));
        }
    }

    /// The livelock, step by step, for 2 and 3 philosophers: all take their left fork, all fail
    /// on their right one, all release and retry, and the exact world repeats, hot and fair.
    #[test]
    fn the_symmetric_livelock_repeats_the_world() {
        for n in [2, 3] {
            let model = model(&Config { philosophers: n, bug: true });
            let protocol = model.protocol();
            let philosopher = |i| protocol.philosopher(i);
            let left = |i| NodeId::new(i);
            let right = |i| NodeId::new((i + 1) % n);
            let mut script = Script::new(&model);
            let (hash, fingerprint) = (script.partial_hash(), script.world.fingerprint());
            script.mark();
            each(&mut script, n, left); // Every philosopher is granted its left fork.
            each(&mut script, n, philosopher); // All ask for their right fork.
            assert!(script.world.states().take(n).all(|fork| *fork == State::Fork { taken: true }));
            each(&mut script, n, right); // Every right fork is taken: refused.
            each(&mut script, n, philosopher); // All release their left fork and retry.
            each(&mut script, n, left); // The releases.
            assert!(script.world.states().take(n).all(|fork| *fork == State::Fork { taken: false }));
            each(&mut script, n, philosopher); // The TryAgains: all ask for their left fork again.
            assert_eq!(script.world.fingerprint(), fingerprint, "{n} philosophers");
            assert!(script.partial_hash() == hash, "{n} philosophers");
            assert!(
                script.fair(),
                "{n} philosophers: enabled {:?}, scheduled {:?}",
                script.enabled,
                script.scheduled
            );
            assert_eq!(script.scheduled.len(), 2 * n);
        }
    }

    /// With the fix the livelock's schedule ends in a meal: philosopher 2 asks for fork 0
    /// first, is refused and holds nothing, so philosopher 1 gets fork 2 as well.
    #[test]
    fn ordered_acquisition_breaks_the_symmetry() {
        let model = model(&Config { philosophers: 3, bug: false });
        let protocol = model.protocol();
        let mut script = Script::new(&model);
        let mut deliver = |node: NodeId| {
            script.step(|event| matches!(event, Event::Deliver { to, .. } if *to == node));
        };
        let (fork, philosopher) = (NodeId::new, |i| protocol.philosopher(i));
        deliver(fork(0)); // Granted to philosopher 0.
        deliver(fork(1)); // Granted to philosopher 1.
        deliver(fork(0)); // Refused to philosopher 2, which asked for fork 0 first.
        deliver(philosopher(0)); // Asks for fork 1.
        deliver(philosopher(1)); // Asks for fork 2.
        deliver(fork(1)); // Refused to philosopher 0.
        deliver(fork(2)); // Granted to philosopher 1.
        deliver(philosopher(1));
        assert_eq!(*script.world.state(philosopher(1)), State::Philosopher(Position::Done));
        assert_eq!(script.temperature(), Temperature::Cold);
    }

    /// Explores the whole space: each world's successors, by index, and which worlds have a
    /// philosopher done.
    fn graph(model: &Model<DiningPhilosophers>) -> (Vec<Vec<usize>>, Vec<bool>) {
        let simulator = Simulator::new(model).expect("a valid model");
        let mut worlds = Vec::new();
        simulator.initial_worlds(|_, world, _| worlds.push(world));
        let mut index: HashMap<_, _> = worlds.iter().enumerate().map(|(i, w)| (w.fingerprint(), i)).collect();
        let mut successors = Vec::new();
        let mut next = 0;
        while next < worlds.len() {
            let mut edges = Vec::new();
            let mut found = Vec::new();
            simulator.successors(&worlds[next], |successor| found.push(successor.into_world()));
            for world in found {
                let at = *index.entry(world.fingerprint()).or_insert(worlds.len());
                if at == worlds.len() {
                    worlds.push(world);
                }
                edges.push(at);
            }
            successors.push(edges);
            next += 1;
        }
        (successors, worlds.iter().map(someone_done).collect())
    }

    /// The fixed variant for 2 and 3 philosophers: BFS explores the whole space without an
    /// unhandled event, every world can still reach one where a philosopher is done (the
    /// monitor is cold exactly there), and every world without a step has one done.
    #[test]
    fn the_fix_can_always_make_progress() {
        for (n, states) in [(2, 33), (3, 715)] {
            let model = model(&Config { philosophers: n, bug: false });
            let report = Check::bfs(&model).run();
            assert_eq!(report.completion, Completion::Exhausted, "{report}");
            assert!(report.violations.is_empty(), "{report}");
            assert_eq!(report.stats.unique_states, states, "{n} philosophers");
            let (successors, done) = graph(&model);
            assert_eq!(successors.len() as u64, states);
            let mut live = done.clone();
            let mut changed = true;
            while changed {
                changed = false;
                for (world, edges) in successors.iter().enumerate() {
                    if !live[world] && edges.iter().any(|&next| live[next]) {
                        live[world] = true;
                        changed = true;
                    }
                }
            }
            assert!(live.iter().all(|&l| l), "{n} philosophers: a world cannot reach a philosopher done");
            for (world, edges) in successors.iter().enumerate() {
                assert!(
                    !edges.is_empty() || done[world],
                    "{n} philosophers: a terminal world with nobody done"
                );
            }
        }
    }

    /// Random executions of up to 500 steps, for 2 to 5 philosophers in both variants, never
    /// fail an assertion, and every one that ends has a philosopher done.
    #[test]
    fn random_executions_hold_their_assertions() {
        for n in PHILOSOPHERS_MIN..=PHILOSOPHERS_MAX {
            for bug in [true, false] {
                let model = model(&Config { philosophers: n, bug });
                let mut script = Script::new(&model);
                for seed in 1..=300u64 {
                    let mut rng = Rng::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    if script.reset().random_steps(&mut rng, 500) {
                        assert!(someone_done(&script.world), "seed {seed}: ended with nobody done");
                    }
                }
            }
        }
    }

    /// Outside the registry's range the model is still built without panicking.
    #[test]
    fn model_builds_for_any_count() {
        for n in [0, 1, 6] {
            assert_eq!(model(&Config { philosophers: n, bug: true }).node_count(), 2 * n);
        }
    }
}
