//! ReplicatingStorage: a simplified Azure Storage vNext (Deligiannis et al., FAST'16) whose node
//! manager never repairs a failed replica, the running example of FMCAD'17 "Lasso Detection
//! using Partial-State Caching" (section V, Fig. 2, Table II), ported from
//! `shared/specs/psharp-benchmarks.md`, section 3.
//!
//! # Nodes
//! Every P# machine is a node with a fixed role: node 0 is the `Environment` (the failure
//! injector), node 1 the `NodeManager`, node 2 the `Client`, nodes 3 to 6 the `StorageNode`s
//! with ids 0 to 3, node 7 the environment's `FailureTimer`, node 8 the manager's `RepairTimer`
//! and nodes 9 to 12 the storage nodes' `SyncTimer`s (ids 0 to 3). Storage node 3 and its timer
//! are the one replacement the manager creates after the single fault: a slot that stays dormant
//! until then. Every node has a P# inbox ([`NetworkKind::FifoInbox`]).
//!
//! # Encoding
//! P#'s `CreateMachine` followed by `ConfigureEvent` is the one message [`Msg::Configure`] to a
//! dormant node, whose handler runs the machine's `Init` entry action and then its
//! `ConfigureEvent` handler (nothing but the `Configure` can reach a machine before it is
//! configured, so merging the two loses no behaviour). The environment, created first, runs its
//! `Init` and `Configuring` states in [`Protocol::init`]: it configures the manager and the
//! client there and starts in `Active`; the manager's `Init` entry (creating the repair timer)
//! also runs in `init`, so the manager's first queued event is always its `ConfigureEvent` and
//! the events its `Init` state defers cannot arrive before it. Payloads name storage ids where
//! the C# code passes machine references; the layout maps each id to its node. The manager's
//! `StorageNodeMap` (id to `true`) is a `BTreeSet` and its `DataMap` a `BTreeMap`, so the repair
//! loop visits ids in key order, as the spec notes. P#'s unhandled-event error is the local
//! assertion `"unhandled event"`; a halted machine drops whatever reaches it.
//!
//! Each P# timer is a periodic machine that sends itself `TickEvent` forever and, on each tick,
//! sends its target `Timeout` when `Random()` says so. Here each timer machine stays a node (so
//! that the scheduler and the fairness condition see it as the process it is), and its
//! self-loop is the foretell timer [`Timer::Tick`], armed while the machine is active: firing
//! it is `choose(2)` (0 sends `Timeout`, 1 does not) and re-arms it. Halting a timer disarms it.
//! No handler needs P#'s preemption inside it (the bug's interleaving is between whole
//! handlers), so every handler runs whole.
//!
//! The client's value, `RandomInteger(100) + 1`, is `choose(3) + 1` here ([`COMMANDS`]): the bug
//! needs one nonzero value, and fewer values keep the space small.
//!
//! # Phases
//! [`Protocol::phase`] is the P# machine state alone: the environment's `Active`, the manager's
//! `Init` or `Active`, the storage node's `Init` (dormant) or `Active`, the client's `Init`, the
//! timer's `Init` (dormant) or `Active`, or halted. Data values, maps and counts are left out.
//!
//! # Monitor
//! [`LivenessMonitor`] is the spec's, with its own map from storage id to data, fed from the
//! storage nodes' steps: a dormant node becoming active is `NotifyNodeCreated`, an active node
//! handling `StoreRequest` or `SyncRequest` is `NotifyNodeUpdate` (with its new data), and an
//! active node halting is `NotifyNodeFail`. The environment configures it in its `init`, so it
//! starts in the cold `Repaired`.
//!
//! # Variants
//! - `bug: true` (the benchmark): `SyncReport` does not check that the id is still in
//!   `StorageNodeMap`. A report a failed node sent after the manager was told of the failure
//!   (it was already in the node's inbox when `FaultInject` came) puts the dead id back into
//!   `DataMap`; with the two survivors it makes three copies of the latest value, so the repair
//!   never sends the replacement its `SyncRequest` and the monitor stays hot while the timers
//!   tick forever.
//! - `bug: false`: the fix, `SyncReport` ignores ids that are not in `StorageNodeMap`.

use foretell_model::{
    Event, Model, Monitor, NetworkKind, NodeId, Observation, Out, Protocol, Temperature, World,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// How many replicas the manager keeps (P#'s `NumberOfReplicas`).
pub const REPLICAS: usize = 3;

/// How many faults the environment injects (P#'s `NumberOfFaults`).
pub const FAULTS: u32 = 1;

/// How many values the client chooses from: it stores `1..=COMMANDS` (P#: `1..=100`).
pub const COMMANDS: usize = 3;

/// The id of the storage node the manager creates to replace the failed one.
pub const REPLACEMENT: u8 = REPLICAS as u8;

/// How many nodes the model has (see the module documentation for the layout).
pub const NODES: usize = 13;

/// The environment (failure injector).
pub const ENVIRONMENT: NodeId = NodeId(0);
/// The node manager.
pub const MANAGER: NodeId = NodeId(1);
/// The client.
pub const CLIENT: NodeId = NodeId(2);
/// The environment's failure timer.
pub const FAILURE_TIMER: NodeId = NodeId(7);
/// The manager's repair timer.
pub const REPAIR_TIMER: NodeId = NodeId(8);

/// The node of storage node `id` (0 to 3).
pub fn storage_node(id: u8) -> NodeId {
    NodeId(3 + u32::from(id))
}

/// The node of storage node `id`'s sync timer.
pub fn sync_timer(id: u8) -> NodeId {
    NodeId(9 + u32::from(id))
}

/// The node a timer node sends its `Timeout` to.
fn timer_target(timer: NodeId) -> NodeId {
    match timer {
        FAILURE_TIMER => ENVIRONMENT,
        REPAIR_TIMER => MANAGER,
        NodeId(n) => NodeId(n - sync_timer(0).0 + storage_node(0).0), // a sync timer's storage node
    }
}

/// A node's local state: one variant per P# machine state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum State {
    /// The environment, in `Active`.
    Environment(Environment),
    /// The manager before its `ConfigureEvent`.
    ManagerInit,
    /// The manager in `Active`.
    Manager(Manager),
    /// A storage node not yet created or configured (dormant).
    StorageInit,
    /// A storage node in `Active`.
    Storage(Storage),
    /// The client before its `ConfigureEvent`.
    ClientInit,
    /// A timer not yet created or configured (dormant).
    TimerInit,
    /// A timer ticking.
    TimerActive,
    /// A halted machine: it drops every event.
    Halted,
}

/// The environment's fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// `AliveNodes`: the storage ids that announced themselves and have not been failed, in
    /// announcement order.
    pub alive: Vec<u8>,
    /// `NumberOfFaults` left to inject.
    pub faults: u32,
    /// Whether the failure timer was created.
    pub failure_timer: bool,
}

/// The node manager's fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manager {
    /// `StorageNodeMap`: the ids of the storage nodes it believes alive.
    pub nodes: BTreeSet<u8>,
    /// `DataMap`: the data each storage id last reported.
    pub data: BTreeMap<u8, u32>,
}

/// A storage node's fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Storage {
    /// Its id.
    pub id: u8,
    /// The data it stores.
    pub data: u32,
}

/// A message (P# event).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Msg {
    /// `ConfigureEvent` (for a dormant node, also its creation).
    Configure,
    /// The client's `Request(cmd)` to the manager.
    Request {
        /// The value to add.
        command: u32,
    },
    /// The manager's `StoreRequest(cmd)` to a storage node.
    StoreRequest {
        /// The value to add.
        command: u32,
    },
    /// The manager's `SyncRequest(data)`: overwrite your data.
    SyncRequest {
        /// The latest data.
        data: u32,
    },
    /// A storage node's `SyncReport(id, data)` to the manager.
    SyncReport {
        /// The reporting node.
        id: u8,
        /// Its data.
        data: u32,
    },
    /// A storage node's `NotifyNode` to the environment: it is alive.
    NotifyNode {
        /// The storage id.
        id: u8,
    },
    /// The environment's `NotifyFailure(node)` to the manager.
    NotifyFailure {
        /// The failed storage id.
        id: u8,
    },
    /// The environment's `FaultInject` to the storage node it fails.
    FaultInject,
    /// A timer's `Timeout` to its target.
    Timeout,
    /// P#'s `Halt`, sent to a timer.
    Halt,
}

/// A timer machine's self-loop (P#'s `TickEvent`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Timer {
    /// One tick: maybe a `Timeout` to the target, then the next tick.
    Tick,
}

/// The benchmark's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Whether `SyncReport` lacks the guard (`true`, the benchmark) or has it (`false`).
    pub bug: bool,
}

impl Default for Config {
    /// The paper's benchmark: 3 replicas, 1 fault, 1 client request, the bug.
    fn default() -> Self {
        Config { bug: true }
    }
}

/// The ReplicatingStorage protocol.
pub struct ReplicatingStorage {
    /// Whether `SyncReport` accepts reports from ids no longer in `StorageNodeMap`.
    pub bug: bool,
}

/// What the benchmark is.
pub const ABOUT: &str = "P# ReplicatingStorage: a node manager keeping 3 replicas of a client's value \
                         while the environment fails one storage node";

/// The liveness bug.
pub const BUG: &str = "a failed node's SyncReport, handled after its NotifyFailure, puts it back into the \
                       manager's DataMap, so the replacement node is never repaired";

/// The model: the 13 nodes of the layout on P# inboxes, with the liveness monitor.
pub fn model(config: &Config) -> Model<ReplicatingStorage> {
    Model::new(ReplicatingStorage { bug: config.bug })
        .nodes(NODES)
        .network(NetworkKind::FifoInbox)
        .monitor(LivenessMonitor)
}

/// P#'s unhandled-event error.
fn unhandled(out: &mut Out<'_, ReplicatingStorage>) {
    out.require(false, "unhandled event");
}

impl Environment {
    fn on_message(&mut self, msg: &Msg, out: &mut Out<'_, ReplicatingStorage>) {
        match *msg {
            Msg::NotifyNode { id } => {
                self.alive.push(id);
                if self.alive.len() == REPLICAS && !self.failure_timer {
                    self.failure_timer = true;
                    out.send(FAILURE_TIMER, Msg::Configure);
                }
            }
            // InjectFault.
            Msg::Timeout if self.faults > 0 => {
                let victim = self.alive.remove(out.choose(self.alive.len()));
                out.send(storage_node(victim), Msg::FaultInject);
                out.send(MANAGER, Msg::NotifyFailure { id: victim });
                self.faults -= 1;
                if self.faults == 0 {
                    out.send(FAILURE_TIMER, Msg::Halt);
                }
            }
            Msg::Timeout => {}
            _ => unhandled(out),
        }
    }
}

impl Manager {
    /// `ConfigureEvent`: creates and configures the storage nodes 0 to 2.
    fn configure(out: &mut Out<'_, ReplicatingStorage>) -> Manager {
        let nodes: BTreeSet<u8> = (0..REPLICAS as u8).collect();
        for &id in &nodes {
            out.send(storage_node(id), Msg::Configure);
        }
        Manager { nodes, data: BTreeMap::new() }
    }

    fn on_message(&mut self, bug: bool, msg: &Msg, out: &mut Out<'_, ReplicatingStorage>) {
        match *msg {
            Msg::Request { command } => {
                for &id in &self.nodes {
                    out.send(storage_node(id), Msg::StoreRequest { command });
                }
            }
            Msg::Timeout => self.repair_nodes(out),
            Msg::SyncReport { id, data } => {
                if bug || self.nodes.contains(&id) {
                    self.data.insert(id, data);
                }
            }
            Msg::NotifyFailure { id } => {
                self.nodes.remove(&id);
                self.data.remove(&id);
                self.nodes.insert(REPLACEMENT);
                out.send(storage_node(REPLACEMENT), Msg::Configure);
            }
            _ => unhandled(out),
        }
    }

    /// `RepairNodes`: while fewer than [`REPLICAS`] ids hold the latest data, sends it to the
    /// others in id order until that many would.
    fn repair_nodes(&self, out: &mut Out<'_, ReplicatingStorage>) {
        let Some(&latest) = self.data.values().max() else { return };
        let mut holders = self.data.values().filter(|&&data| data == latest).count();
        for (&id, &data) in &self.data {
            if holders >= REPLICAS {
                break;
            }
            if data != latest {
                out.send(storage_node(id), Msg::SyncRequest { data: latest });
                holders += 1;
            }
        }
    }
}

impl Storage {
    /// `Init` entry and `ConfigureEvent`: data 0, creates its sync timer, announces itself.
    fn configure(id: u8, out: &mut Out<'_, ReplicatingStorage>) -> Storage {
        out.send(sync_timer(id), Msg::Configure);
        out.send(ENVIRONMENT, Msg::NotifyNode { id });
        Storage { id, data: 0 }
    }

    /// Handles `msg`; the state the node moves to if it leaves `Active`.
    fn on_message(&mut self, msg: &Msg, out: &mut Out<'_, ReplicatingStorage>) -> Option<State> {
        match *msg {
            Msg::StoreRequest { command } => self.data += command,
            Msg::SyncRequest { data } => self.data = data,
            Msg::Timeout => out.send(MANAGER, Msg::SyncReport { id: self.id, data: self.data }),
            Msg::FaultInject => {
                out.send(sync_timer(self.id), Msg::Halt);
                return Some(State::Halted);
            }
            _ => unhandled(out),
        }
        None
    }
}

impl Protocol for ReplicatingStorage {
    type State = State;
    type Msg = Msg;
    type Timer = Timer;
    type Input = ();

    /// The environment's `Init` and `Configuring` (it configures the manager and the client)
    /// and the manager's `Init` entry (it creates the repair timer); every other machine is
    /// dormant until its `Configure`.
    fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> State {
        match me {
            ENVIRONMENT => {
                out.send(MANAGER, Msg::Configure);
                out.send(CLIENT, Msg::Configure);
                State::Environment(Environment { alive: Vec::new(), faults: FAULTS, failure_timer: false })
            }
            MANAGER => {
                out.send(REPAIR_TIMER, Msg::Configure);
                State::ManagerInit
            }
            CLIENT => State::ClientInit,
            _ if (storage_node(0)..=storage_node(REPLACEMENT)).contains(&me) => State::StorageInit,
            _ => State::TimerInit,
        }
    }

    fn on_message(&self, me: NodeId, state: &mut State, _: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
        let next = match (&mut *state, msg) {
            (State::Halted, _) => None,
            (_, Msg::Halt) => {
                out.cancel_timer(&Timer::Tick);
                Some(State::Halted)
            }
            (State::Environment(environment), _) => {
                environment.on_message(msg, out);
                None
            }
            (State::ManagerInit, Msg::Configure) => Some(State::Manager(Manager::configure(out))),
            (State::Manager(manager), _) => {
                manager.on_message(self.bug, msg, out);
                None
            }
            (State::StorageInit, Msg::Configure) => {
                let id = u8::try_from(me.0 - storage_node(0).0).expect("a storage id");
                Some(State::Storage(Storage::configure(id, out)))
            }
            (State::Storage(storage), _) => storage.on_message(msg, out),
            // One request, then the client halts (its `Counter` reaches 1).
            (State::ClientInit, Msg::Configure) => {
                let command = out.choose(COMMANDS) as u32 + 1;
                out.send(MANAGER, Msg::Request { command });
                Some(State::Halted)
            }
            (State::TimerInit, Msg::Configure) => {
                out.set_timer(Timer::Tick, 0);
                Some(State::TimerActive)
            }
            _ => {
                unhandled(out);
                None
            }
        };
        if let Some(next) = next {
            *state = next;
        }
    }

    /// A tick: `Random()` decides whether the target gets a `Timeout`; the timer ticks on.
    fn on_timer(&self, me: NodeId, _: &mut State, _: &Timer, out: &mut Out<'_, Self>) {
        if out.choose(2) == 0 {
            out.send(timer_target(me), Msg::Timeout);
        }
        out.set_timer(Timer::Tick, 0);
    }

    fn phase(&self, state: &State) -> u64 {
        match state {
            State::Halted => 0,
            State::Environment(_) => 1,
            State::ManagerInit => 2,
            State::Manager(_) => 3,
            State::StorageInit => 4,
            State::Storage(_) => 5,
            State::ClientInit => 6,
            State::TimerInit => 7,
            State::TimerActive => 8,
        }
    }
}

/// The liveness monitor's P# states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Repair {
    /// Enough replicas hold the latest data (cold).
    Repaired,
    /// A node failed and the replicas are not yet repaired (hot).
    Repairing,
}

/// The liveness monitor's state: its P# state and its own map from storage id to data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RepairState {
    /// The P# state.
    pub repair: Repair,
    /// The data of every live storage node, as the nodes notified it.
    pub data: BTreeMap<u8, u32>,
}

/// The spec's liveness monitor: hot from a node failure until [`REPLICAS`] nodes hold equal data.
pub struct LivenessMonitor;

impl Monitor<ReplicatingStorage> for LivenessMonitor {
    type State = RepairState;

    fn name(&self) -> &str {
        "LivenessMonitor"
    }

    fn init(&self, _: &World<ReplicatingStorage>) -> RepairState {
        RepairState { repair: Repair::Repaired, data: BTreeMap::new() }
    }

    fn observe(&self, monitor: &mut RepairState, step: &Observation<'_, ReplicatingStorage>) {
        let Event::Deliver { to, msg, .. } = step.event else { return };
        match (step.before.state(*to), step.after.state(*to), msg) {
            (State::StorageInit, State::Storage(node), _) => {
                monitor.data.insert(node.id, node.data);
            }
            (State::Storage(node), State::Halted, _) => {
                monitor.data.remove(&node.id);
                monitor.repair = Repair::Repairing;
            }
            (State::Storage(_), State::Storage(node), Msg::StoreRequest { .. } | Msg::SyncRequest { .. }) => {
                monitor.data.insert(node.id, node.data);
                if monitor.repair == Repair::Repairing && largest_group(&monitor.data) >= REPLICAS {
                    monitor.repair = Repair::Repaired;
                }
            }
            _ => {}
        }
    }

    fn temperature(&self, monitor: &RepairState) -> Temperature {
        match monitor.repair {
            Repair::Repaired => Temperature::Cold,
            Repair::Repairing => Temperature::Hot,
        }
    }
}

/// The size of the largest group of equal values in `data`.
fn largest_group(data: &BTreeMap<u8, u32>) -> usize {
    let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
    for &value in data.values() {
        *counts.entry(value).or_default() += 1;
    }
    counts.into_values().max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::psharp::script::{deliver, timer as tick, Rng, Script};

    fn manager(script: &Script<'_, ReplicatingStorage>) -> Manager {
        match script.world.state(MANAGER) {
            State::Manager(manager) => manager.clone(),
            other => panic!("the manager is {other:?}"),
        }
    }

    /// Drives the spec's interleaving up to the point where the manager has every report: the
    /// client's 1 is stored on nodes 0 to 2; node 0's sync timer queues a `Timeout` at node 0;
    /// the environment fails node 0, so `FaultInject` queues behind that `Timeout` and
    /// `NotifyFailure(0)` reaches the manager's inbox first; node 0 then reports (its
    /// `SyncReport(0, 1)` queues behind `NotifyFailure(0)`) and halts; the manager replaces node
    /// 0 by node 3 and then handles the stale report; the survivors report 1 and node 3 reports 0.
    fn drive_to_stale_report(script: &mut Script<'_, ReplicatingStorage>) {
        script.step(deliver(MANAGER)).step(deliver(REPAIR_TIMER)).step_with(&[0], deliver(CLIENT));
        for id in 0..3 {
            script.step(deliver(storage_node(id))).step(deliver(sync_timer(id))).step(deliver(ENVIRONMENT));
        }
        script.step(deliver(FAILURE_TIMER)).step(deliver(MANAGER));
        for id in 0..3 {
            script.step(deliver(storage_node(id)));
            assert_eq!(*script.world.state(storage_node(id)), State::Storage(Storage { id, data: 1 }));
        }
        assert_eq!(script.temperature(), Temperature::Cold);

        script.step_with(&[0], tick(sync_timer(0)));
        script.step_with(&[0], tick(FAILURE_TIMER)).step_with(&[0], deliver(ENVIRONMENT));
        script.step(deliver(storage_node(0))); // Timeout: SyncReport(0, 1)
        script.step(deliver(storage_node(0))); // FaultInject
        assert_eq!(*script.world.state(storage_node(0)), State::Halted);
        assert_eq!(script.temperature(), Temperature::Hot);
        script.step(deliver(MANAGER)); // NotifyFailure(0)
        assert_eq!(manager(script).nodes, BTreeSet::from([1, 2, REPLACEMENT]));
        script.step(deliver(MANAGER)); // the stale SyncReport(0, 1)
        script.step(deliver(sync_timer(0))).step(deliver(FAILURE_TIMER)); // Halt, Halt
        let replacement = storage_node(REPLACEMENT);
        script.step(deliver(replacement)).step(deliver(sync_timer(REPLACEMENT))).step(deliver(ENVIRONMENT));
        for id in 1..=REPLACEMENT {
            script
                .step_with(&[0], tick(sync_timer(id)))
                .step(deliver(storage_node(id)))
                .step(deliver(MANAGER));
        }
        assert_eq!(script.temperature(), Temperature::Hot);
        assert_eq!(script.world.messages().len(), 0, "every inbox is empty");
    }

    /// The bug, step by step: the stale report makes `DataMap` hold three 1s (one of them the
    /// dead node's) and the replacement's 0, so `RepairNodes` returns at once; then one round of
    /// every live timer, each ticking once without and once with a `Timeout` that its target
    /// handles (so the timers' `Random()` takes both values, P#'s second fairness condition),
    /// returns to the very same world, hot throughout and fair: a fair hot lasso.
    #[test]
    fn a_stale_sync_report_blocks_the_repair_forever() {
        let model = model(&Config::default());
        let mut script = Script::new(&model);
        drive_to_stale_report(&mut script);
        assert_eq!(manager(&script).data, BTreeMap::from([(0, 1), (1, 1), (2, 1), (REPLACEMENT, 0)]));
        script.step_with(&[0], tick(REPAIR_TIMER)).step(deliver(MANAGER));
        assert_eq!(script.world.messages().len(), 0, "RepairNodes sent nothing");

        script.assert_fair_cycle(|script| {
            for timer in [REPAIR_TIMER, sync_timer(1), sync_timer(2), sync_timer(REPLACEMENT)] {
                script.step_hot(&[1], tick(timer)).step_hot(&[0], tick(timer));
                script.step_hot(&[], deliver(timer_target(timer)));
                if timer != REPAIR_TIMER {
                    script.step_hot(&[], deliver(MANAGER)); // its SyncReport
                }
            }
        });
    }

    /// The fix: along the same interleaving the manager ignores the dead node's report, so the
    /// first `RepairNodes` sends the replacement `SyncRequest(1)` and the monitor cools down.
    #[test]
    fn the_guard_lets_the_replacement_be_repaired() {
        let model = model(&Config { bug: false });
        let mut script = Script::new(&model);
        drive_to_stale_report(&mut script);
        assert_eq!(manager(&script).data, BTreeMap::from([(1, 1), (2, 1), (REPLACEMENT, 0)]));
        script.step_with(&[0], tick(REPAIR_TIMER)).step(deliver(MANAGER));
        assert_eq!(script.temperature(), Temperature::Hot);
        script.step(deliver(storage_node(REPLACEMENT)));
        let replacement = Storage { id: REPLACEMENT, data: 1 };
        assert_eq!(*script.world.state(storage_node(REPLACEMENT)), State::Storage(replacement));
        assert_eq!(script.temperature(), Temperature::Cold);
    }

    /// Smoke: 300 random executions of 500 steps of each variant, with the monitor watching,
    /// never fail an assertion (no unhandled event) nor panic, and each gets as far as the
    /// fault and the replacement.
    #[test]
    fn random_executions_handle_every_event() {
        for bug in [true, false] {
            let model = model(&Config { bug });
            let mut script = Script::new(&model);
            let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
            for _ in 0..300 {
                assert!(!script.reset().random_steps(&mut rng, 500), "the repair timer always ticks");
                let replaced = script.world.state(storage_node(REPLACEMENT));
                assert!(matches!(replaced, State::Storage(_)), "the run reaches the repair");
            }
        }
    }
}
