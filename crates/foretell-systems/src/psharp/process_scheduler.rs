//! Process Scheduler: the lost-wakeup bug of SPIN's "wakeup" model as a P# program, a liveness
//! benchmark of FMCAD'17 "Lasso Detection using Partial-State Caching" (section VI, Table II),
//! ported from `shared/specs/psharp-benchmarks.md`, section 5.
//!
//! A client process goes to sleep when a resource is taken and an interrupt routine (the
//! server) is meant to wake it. The shared variables are machines of their own, and every
//! access to one is a request answered by a reply, so another machine can run between any two
//! accesses: that is where the wakeup gets lost.
//!
//! # Nodes
//! Nodes 0 to 3 are the variable machines `Lk` (lock, initially false), `RLock` (the resource
//! is taken, false), `RWant` (the client wants it, false) and `State` (the client's `Running` or
//! `Wakeme`, initially `Running`); node 4 is the client and node 5 the server. P#'s
//! `Environment`, which creates them, is [`Protocol::init`]. Every node has a P# inbox
//! ([`NetworkKind::FifoInbox`]).
//!
//! # Encoding
//! - A variable machine answers `ValueReq` with `ValueResp`, and `SetReq` with `SetResp` after
//!   unblocking the waiters whose value now matches. `Waiting(v)` is answered with `WaitResp`
//!   at once if the value is `v`, or else when a set makes it `v`. `AtomicTestSet` sets a false
//!   value to true and is always answered. One handler serves all four variables (only `Lk`
//!   and `State` ever get `Waiting`, only `Lk` gets `AtomicTestSet`); the requester is the
//!   message's sender rather than a payload field.
//! - **Handlers split at every request.** P#'s client and server handlers send a request and
//!   block in `Receive` for its reply, with a scheduling point at each. Here each such handler
//!   is a chain of steps: the step that sends a request records in the node's program counter
//!   ([`ClientPc`], [`ServerPc`]) which reply it awaits and ends; the reply's delivery is the
//!   next step and runs the code up to the next request. Nothing else can reach a node while
//!   it awaits a reply (each variable answers only its requester, and the self-sent `Sleep`,
//!   `Progress` and `Wakeup` are only sent at the end of a handler), so no message needs
//!   deferring; any other event is P#'s unhandled-event error, the local assertion
//!   `"unhandled event"`.
//! - The handlers' starts: the client's and the server's P# `OnInitialize` raise `Progress` and
//!   `Wakeup`, so their `init` already sends the first request of those handlers.
//!
//! # Safety and liveness
//! The client asserts that `RLock` is false when it starts to progress: the local assertion
//! [`RLOCK_FREE`]. [`Liveness`] is the spec's monitor: `Progressing` (cold) goes to `Suspended`
//! (hot) on `NotifyClientSleep` and back on `NotifyClientProgress`. The client notifies them
//! just before it sends `Waiting(State == Running)` and just after the `WaitResp` arrives, so the
//! monitor reads them from the client's program counter entering and leaving
//! [`ClientPc::SleepWaitRunning`].
//!
//! # Phases
//! [`Protocol::phase`] is what P#'s default hash sees of a machine, its machine state, plus
//! the position inside a split handler: the client's and the server's program counters (where
//! each is blocked, as the spec suggests). A variable machine has one P# state, so its phase is
//! constant; its value is a field, which P#'s default hash leaves out.
//!
//! # Variants
//! - `bug: true` ([`Variant::Bug`], the benchmark): the server reads `State` right after
//!   clearing `RWant`, while the client may be between setting `RWant` and setting `State` to
//!   `Wakeme`. It reads `Running`, wakes nobody, and the client then blocks for good while the
//!   server loops.
//! - [`Variant::SpinFix`], the spec's fix (SPIN's proposed fix) alone: after clearing `RWant`
//!   the server waits for `Lk` to be false again before it reads `State`. That closes the
//!   window of the client's first sleep, which it enters holding `Lk`, but **not** the window
//!   of a later one: a woken client loops back to re-test `RLock` without taking `Lk` again.
//!   If the server cleared `RLock` before the client consumed the resource, the woken client
//!   reads `RLock = true` and goes to sleep again with `Lk` free, and the server's second wait
//!   passes at once, reads `Running`, and the wakeup is lost. The exhaustive search of the
//!   tests finds this fair lasso; this variant is kept to show it.
//! - `bug: false` ([`Variant::Fixed`]): SPIN's fix, and the client takes `Lk` again (its
//!   test-and-set, the first step of `Sleep`) after each wakeup before it re-tests `RLock`, as a
//!   condition-variable wait re-acquires its mutex. The client then sets `RWant` and `State`
//!   only while holding `Lk`, so the server's second wait cannot pass between the two; the
//!   tests' exhaustive search finds no fair lasso.

use foretell_model::{Model, Monitor, NetworkKind, NodeId, Observation, Out, Protocol, Temperature, World};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One sentence on the benchmark.
pub const ABOUT: &str = "SPIN's wakeup model in P#: a client sleeps on shared variables (machines) until an \
                         interrupt routine wakes it";

/// One sentence on the liveness bug.
pub const BUG: &str = "the server reads the client's State between the client's RWant := true and State := \
                       Wakeme, so the wakeup is lost and the client sleeps forever while the server loops";

/// The name of the client's assertion that the resource is free when it progresses.
pub const RLOCK_FREE: &str = "RLock is false when the client progresses";

/// The lock variable.
pub const LK: NodeId = NodeId(0);
/// The variable that says the resource is taken.
pub const RLOCK: NodeId = NodeId(1);
/// The variable that says the client wants the resource.
pub const RWANT: NodeId = NodeId(2);
/// The client's scheduling state.
pub const STATE: NodeId = NodeId(3);
/// The sleeping process.
pub const CLIENT: NodeId = NodeId(4);
/// The interrupt routine.
pub const SERVER: NodeId = NodeId(5);

/// The benchmark's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The server reads `State` without waiting for the lock (the lost wakeup); `false` is
    /// [`Variant::Fixed`].
    pub bug: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config { bug: true }
    }
}

/// The code the server and the client run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// The benchmark: the server reads `State` right after clearing `RWant`.
    Bug,
    /// SPIN's proposed fix alone: the server waits for `Lk` to be false again before it reads
    /// `State`. A wakeup that follows a wakeup is still lost.
    SpinFix,
    /// SPIN's fix, and the client takes `Lk` again after each wakeup before it re-tests
    /// `RLock`, as a condition-variable wait re-acquires its mutex.
    Fixed,
}

/// The client's scheduling state (SPIN's `mtype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// Running.
    Running,
    /// Asleep, waiting to be woken.
    Wakeme,
}

/// The value of a variable machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Value {
    /// `Lk`, `RLock` or `RWant`.
    Bool(bool),
    /// `State`.
    Mode(Mode),
}

/// The messages: requests to variables, their replies, and the self-sent handler starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Msg {
    /// Read the variable.
    ValueReq,
    /// The variable's value.
    ValueResp(Value),
    /// Set the variable.
    SetReq(Value),
    /// The variable is set.
    SetResp,
    /// Reply when the variable has this value.
    Waiting(Value),
    /// The variable has the awaited value.
    WaitResp,
    /// Set the lock if it is free.
    AtomicTestSet,
    /// The test-and-set is done (whether or not it took the lock).
    AtomicTestSetResp,
    /// The client's `Progress` handler.
    Progress,
    /// The client's `Sleep` handler.
    Sleep,
    /// The server's `Wakeup` handler.
    Wakeup,
}

/// Where the client is: which reply it awaits, in which handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientPc {
    /// Between handlers: a self-sent `Sleep` or `Progress` is on its way.
    Idle,
    /// `Progress`, step 1: reading `RLock`.
    ProgressReadRLock,
    /// `Progress`, step 2: setting `RLock` to true.
    ProgressSetRLock,
    /// `Progress`, step 3: setting `Lk` to false.
    ProgressReleaseLk,
    /// `Sleep`, step 1: test-and-setting `Lk`.
    SleepTestSet,
    /// `Sleep`, loop: reading `RLock`.
    SleepReadRLock,
    /// `Sleep`, loop: setting `RWant` to true.
    SleepSetRWant,
    /// `Sleep`, loop: setting `State` to `Wakeme`.
    SleepSetState,
    /// `Sleep`, loop: setting `Lk` to false.
    SleepReleaseLk,
    /// `Sleep`, loop: blocked until `State` is `Running` (the monitor's `Suspended`).
    SleepWaitRunning,
}

/// Where the server is in its `Wakeup` handler: which reply it awaits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ServerPc {
    /// Between handlers: a self-sent `Wakeup` is on its way.
    Idle,
    /// Step 1: setting `RLock` to false.
    ClearRLock,
    /// Step 2: waiting for `Lk` to be false.
    WaitLkFree,
    /// Step 3: reading `RWant`.
    ReadRWant,
    /// Setting `RWant` to false.
    ClearRWant,
    /// The fix: waiting for `Lk` to be false again.
    WaitLkFreeAgain,
    /// Reading `State`.
    ReadState,
    /// Setting `State` to `Running`.
    WakeClient,
}

/// A node's state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum State {
    /// A variable machine.
    Var {
        /// The value.
        value: Value,
        /// The requesters blocked in `Waiting`, with the value each awaits.
        blocked: BTreeMap<NodeId, Value>,
    },
    /// The client.
    Client(ClientPc),
    /// The server.
    Server(ServerPc),
}

/// The protocol: every node's code, the role fixed by the node index.
#[derive(Clone, Debug)]
pub struct ProcessScheduler {
    variant: Variant,
}

impl Protocol for ProcessScheduler {
    type State = State;
    type Msg = Msg;
    type Timer = ();
    type Input = ();

    fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> State {
        match me {
            LK | RLOCK | RWANT => State::Var { value: Value::Bool(false), blocked: BTreeMap::new() },
            STATE => State::Var { value: Value::Mode(Mode::Running), blocked: BTreeMap::new() },
            CLIENT => State::Client(progress(out)),
            _ => State::Server(wakeup(out)),
        }
    }

    fn on_message(&self, _: NodeId, state: &mut State, from: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
        let next = match state {
            State::Var { value, blocked } => return on_request(value, blocked, from, msg, out),
            State::Client(pc) => self.client_step(*pc, msg, out).map(State::Client),
            State::Server(pc) => self.server_step(*pc, msg, out).map(State::Server),
        };
        match next {
            Some(next) => *state = next,
            None => out.require(false, "unhandled event"),
        }
    }

    fn phase(&self, state: &State) -> u64 {
        match state {
            State::Var { .. } => 0,
            State::Client(pc) => 0x10 + *pc as u64,
            State::Server(pc) => 0x20 + *pc as u64,
        }
    }
}

/// A variable machine serves one request.
fn on_request(
    value: &mut Value,
    blocked: &mut BTreeMap<NodeId, Value>,
    from: NodeId,
    msg: &Msg,
    out: &mut Out<'_, ProcessScheduler>,
) {
    match msg {
        Msg::ValueReq => out.send(from, Msg::ValueResp(*value)),
        Msg::SetReq(v) => {
            *value = *v;
            unblock(*value, blocked, out);
            out.send(from, Msg::SetResp);
        }
        Msg::Waiting(v) if v == value => out.send(from, Msg::WaitResp),
        Msg::Waiting(v) => {
            blocked.insert(from, *v);
        }
        Msg::AtomicTestSet => {
            if *value == Value::Bool(false) {
                *value = Value::Bool(true);
                unblock(*value, blocked, out);
            }
            out.send(from, Msg::AtomicTestSetResp);
        }
        _ => out.require(false, "unhandled event"),
    }
}

/// Answers and forgets the waiters whose awaited value is `value`.
fn unblock(value: Value, blocked: &mut BTreeMap<NodeId, Value>, out: &mut Out<'_, ProcessScheduler>) {
    blocked.retain(|waiter, awaited| {
        let woken = *awaited == value;
        if woken {
            out.send(*waiter, Msg::WaitResp);
        }
        !woken
    });
}

/// The start of the client's `Progress` handler: read `RLock`.
fn progress(out: &mut Out<'_, ProcessScheduler>) -> ClientPc {
    out.send(RLOCK, Msg::ValueReq);
    ClientPc::ProgressReadRLock
}

/// The start of the server's `Wakeup` handler: clear `RLock`.
fn wakeup(out: &mut Out<'_, ProcessScheduler>) -> ServerPc {
    out.send(RLOCK, Msg::SetReq(Value::Bool(false)));
    ServerPc::ClearRLock
}

impl ProcessScheduler {
    /// The client's code from the reply `msg` it awaited at `pc` to its next request; `None` if
    /// `msg` is not that reply.
    fn client_step(&self, pc: ClientPc, msg: &Msg, out: &mut Out<'_, Self>) -> Option<ClientPc> {
        use ClientPc::*;
        let (to, request, next) = match (pc, msg) {
            (Idle, Msg::Progress) => return Some(progress(out)),
            (ProgressReadRLock, Msg::ValueResp(Value::Bool(rlock))) => {
                out.require(!rlock, RLOCK_FREE);
                (RLOCK, Msg::SetReq(Value::Bool(true)), ProgressSetRLock)
            }
            (ProgressSetRLock, Msg::SetResp) => (LK, Msg::SetReq(Value::Bool(false)), ProgressReleaseLk),
            (ProgressReleaseLk, Msg::SetResp) => (CLIENT, Msg::Sleep, Idle),
            (Idle, Msg::Sleep) => (LK, Msg::AtomicTestSet, SleepTestSet),
            (SleepTestSet, Msg::AtomicTestSetResp) => (RLOCK, Msg::ValueReq, SleepReadRLock),
            (SleepWaitRunning, Msg::WaitResp) if self.variant == Variant::Fixed => {
                (LK, Msg::AtomicTestSet, SleepTestSet)
            }
            (SleepWaitRunning, Msg::WaitResp) => (RLOCK, Msg::ValueReq, SleepReadRLock),
            (SleepReadRLock, Msg::ValueResp(Value::Bool(true))) => {
                (RWANT, Msg::SetReq(Value::Bool(true)), SleepSetRWant)
            }
            (SleepReadRLock, Msg::ValueResp(Value::Bool(false))) => (CLIENT, Msg::Progress, Idle),
            (SleepSetRWant, Msg::SetResp) => (STATE, Msg::SetReq(Value::Mode(Mode::Wakeme)), SleepSetState),
            (SleepSetState, Msg::SetResp) => (LK, Msg::SetReq(Value::Bool(false)), SleepReleaseLk),
            (SleepReleaseLk, Msg::SetResp) => {
                (STATE, Msg::Waiting(Value::Mode(Mode::Running)), SleepWaitRunning)
            }
            _ => return None,
        };
        out.send(to, request);
        Some(next)
    }

    /// The server's code from the reply `msg` it awaited at `pc` to its next request; `None` if
    /// `msg` is not that reply.
    fn server_step(&self, pc: ServerPc, msg: &Msg, out: &mut Out<'_, Self>) -> Option<ServerPc> {
        use ServerPc::*;
        let read_state = (STATE, Msg::ValueReq, ReadState);
        let (to, request, next) = match (pc, msg) {
            (Idle, Msg::Wakeup) => return Some(wakeup(out)),
            (ClearRLock, Msg::SetResp) => (LK, Msg::Waiting(Value::Bool(false)), WaitLkFree),
            (WaitLkFree, Msg::WaitResp) => (RWANT, Msg::ValueReq, ReadRWant),
            (ReadRWant, Msg::ValueResp(Value::Bool(true))) => {
                (RWANT, Msg::SetReq(Value::Bool(false)), ClearRWant)
            }
            (ReadRWant, Msg::ValueResp(Value::Bool(false))) => (SERVER, Msg::Wakeup, Idle),
            (ClearRWant, Msg::SetResp) if self.variant == Variant::Bug => read_state,
            (ClearRWant, Msg::SetResp) => (LK, Msg::Waiting(Value::Bool(false)), WaitLkFreeAgain),
            (WaitLkFreeAgain, Msg::WaitResp) => read_state,
            (ReadState, Msg::ValueResp(Value::Mode(Mode::Wakeme))) => {
                (STATE, Msg::SetReq(Value::Mode(Mode::Running)), WakeClient)
            }
            (ReadState, Msg::ValueResp(Value::Mode(Mode::Running))) | (WakeClient, Msg::SetResp) => {
                (SERVER, Msg::Wakeup, Idle)
            }
            _ => return None,
        };
        out.send(to, request);
        Some(next)
    }
}

/// The client's program counter in `world`.
fn client_pc(world: &World<ProcessScheduler>) -> ClientPc {
    match world.state(CLIENT) {
        State::Client(pc) => *pc,
        other => unreachable!("node 4 is the client, not {other:?}"),
    }
}

/// The spec's liveness monitor: hot while the client sleeps.
#[derive(Clone, Copy, Debug)]
pub struct Liveness;

/// The states of [`Liveness`] (P#'s `Init` goes to `Progressing` at once).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LivenessState {
    /// The client makes progress (cold).
    Progressing,
    /// The client sleeps (hot).
    Suspended,
}

impl Monitor<ProcessScheduler> for Liveness {
    type State = LivenessState;

    fn name(&self) -> &str {
        "LivenessMonitor"
    }

    fn init(&self, _: &World<ProcessScheduler>) -> LivenessState {
        LivenessState::Progressing
    }

    fn observe(&self, state: &mut LivenessState, step: &Observation<'_, ProcessScheduler>) {
        let asleep = |world| client_pc(world) == ClientPc::SleepWaitRunning;
        match (asleep(step.before), asleep(step.after)) {
            (false, true) => *state = LivenessState::Suspended, // NotifyClientSleep
            (true, false) => *state = LivenessState::Progressing, // NotifyClientProgress
            _ => {}
        }
    }

    fn temperature(&self, state: &LivenessState) -> Temperature {
        match state {
            LivenessState::Progressing => Temperature::Cold,
            LivenessState::Suspended => Temperature::Hot,
        }
    }
}

/// The benchmark's model: six nodes on P# inboxes, with the liveness monitor. `bug: false` is
/// [`Variant::Fixed`].
pub fn model(config: &Config) -> Model<ProcessScheduler> {
    model_variant(if config.bug { Variant::Bug } else { Variant::Fixed })
}

/// The model of one variant.
pub fn model_variant(variant: Variant) -> Model<ProcessScheduler> {
    Model::new(ProcessScheduler { variant }).nodes(6).network(NetworkKind::FifoInbox).monitor(Liveness)
}

#[cfg(test)]
mod tests {
    use super::super::script::{deliver_from as deliver, Rng, Script};
    use super::*;
    use foretell_check::{Check, Completion};
    use foretell_model::{Fingerprint, Simulator};
    use std::collections::{BTreeSet, HashMap};

    /// Steps 1 to 5 of the spec's lost wakeup, up to the server clearing `RWant`; the bug and
    /// the fix take the same steps so far.
    fn up_to_rwant_cleared(script: &mut Script<'_, ProcessScheduler>) {
        script
            .step(deliver(CLIENT, RLOCK)) // RLock answers the client's read of Progress: false.
            .step(deliver(SERVER, RLOCK)) // 1. Server: RLock := false.
            .step(deliver(RLOCK, SERVER)) // The server asks to wait for lk == false.
            .step(deliver(RLOCK, CLIENT)) // 2. Client: reads RLock = false, sets RLock := true,
            .step(deliver(CLIENT, RLOCK))
            .step(deliver(RLOCK, CLIENT)) //    then lk := false,
            .step(deliver(SERVER, LK)) //     3. Server: lk is false, its wait succeeds at once.
            .step(deliver(CLIENT, LK))
            .step(deliver(LK, CLIENT)) //     The client sends itself Sleep,
            .step(deliver(CLIENT, CLIENT)) // 4. Client: test-and-sets lk (true),
            .step(deliver(CLIENT, LK))
            .step(deliver(LK, CLIENT)) //     reads RLock = true,
            .step(deliver(CLIENT, RLOCK))
            .step(deliver(RLOCK, CLIENT)) //  and sets RWant := true.
            .step(deliver(CLIENT, RWANT))
            .step(deliver(LK, SERVER)) //     5. Server: reads RWant = true,
            .step(deliver(SERVER, RWANT))
            .step(deliver(RWANT, SERVER)) //  sets RWant := false.
            .step(deliver(SERVER, RWANT));
        assert_eq!(client_pc(&script.world), ClientPc::SleepSetRWant);
        assert_eq!(script.temperature(), Temperature::Cold);
    }

    /// The client's steps from `RWant := true` to blocking: State := Wakeme, lk := false,
    /// NotifyClientSleep and sending Waiting(State == Running).
    fn client_goes_to_sleep(script: &mut Script<'_, ProcessScheduler>) {
        script
            .step(deliver(RWANT, CLIENT))
            .step(deliver(CLIENT, STATE))
            .step(deliver(STATE, CLIENT))
            .step(deliver(CLIENT, LK))
            .step(deliver(LK, CLIENT));
        assert_eq!(client_pc(&script.world), ClientPc::SleepWaitRunning);
    }

    /// One iteration of the server's loop when RWant is false: RLock := false, wait for
    /// lk == false (free), read RWant (false), send itself Wakeup.
    fn server_loop(script: &mut Script<'_, ProcessScheduler>) {
        let steps = [
            (SERVER, SERVER),
            (SERVER, RLOCK),
            (RLOCK, SERVER),
            (SERVER, LK),
            (LK, SERVER),
            (SERVER, RWANT),
            (RWANT, SERVER),
        ];
        for (from, to) in steps {
            script.step_hot(&[], deliver(from, to));
        }
    }

    /// The spec's seven-step lost wakeup: the server reads State while it is still Running, the
    /// client then blocks waiting for Running, and one iteration of the server's loop returns
    /// to the exact same world, hot and fair (the blocked client has nothing to receive, so it
    /// is not enabled).
    #[test]
    fn lost_wakeup_leaves_the_client_asleep_forever() {
        let model = model(&Config::default());
        let mut script = Script::new(&model);
        up_to_rwant_cleared(&mut script);
        script
            .step(deliver(RWANT, SERVER)) // The server reads State: Running,
            .step(deliver(SERVER, STATE))
            .step(deliver(STATE, SERVER)); // so it wakes nobody and sends itself Wakeup.
        assert_eq!(script.world.state(SERVER), &State::Server(ServerPc::Idle));
        client_goes_to_sleep(&mut script); // 6. Client: State := Wakeme, lk := false, blocks.
        assert_eq!(script.temperature(), Temperature::Hot);
        script.step(deliver(CLIENT, STATE)); // State records the client as blocked.
        server_loop(&mut script); // 7. The server loops; RLock goes from true to false.

        script.assert_fair_cycle(server_loop);
        assert!(!script.enabled.contains(&CLIENT.0), "the blocked client is not enabled");
    }

    /// Delivers, in order, the heads of the inboxes of the `(sender, receiver)` pairs.
    fn deliver_all(script: &mut Script<'_, ProcessScheduler>, pairs: &[(NodeId, NodeId)]) {
        for &(from, to) in pairs {
            script.step(deliver(from, to));
        }
    }

    /// SPIN's fix alone loses a wakeup that follows a wakeup: the server cleared RLock before
    /// the client consumed the resource, so the woken client finds RLock true and goes back to
    /// sleep without holding lk; the server's second wait for lk then passes at once, it reads
    /// Running, and the client sleeps forever while the server loops (exactly, hot and fair).
    #[test]
    fn spin_fix_alone_loses_a_wakeup_that_follows_a_wakeup() {
        let model = model_variant(Variant::SpinFix);
        let mut script = Script::new(&model);
        deliver_all(
            &mut script,
            &[
                (CLIENT, RLOCK), // RLock answers Progress's read: false.
                (SERVER, RLOCK), // Server: RLock := false, before the client consumes it;
                (RLOCK, SERVER),
                (SERVER, LK),    //    lk is free, its wait is answered at once.
                (RLOCK, CLIENT), // Client: RLock := true, lk := false, Sleep:
                (CLIENT, RLOCK),
                (RLOCK, CLIENT),
                (CLIENT, LK),
                (LK, CLIENT),
                (CLIENT, CLIENT),
                (CLIENT, LK), //   takes lk, reads RLock = true, RWant := true.
                (LK, CLIENT),
                (CLIENT, RLOCK),
                (RLOCK, CLIENT),
                (CLIENT, RWANT),
                (LK, SERVER), //   Server: reads RWant = true, clears it,
                (SERVER, RWANT),
                (RWANT, SERVER),
                (SERVER, RWANT),
                (RWANT, SERVER),
                (SERVER, LK),    //   and waits for lk (held by the client).
                (RWANT, CLIENT), // Client: State := Wakeme, lk := false (the server may go on),
                (CLIENT, STATE),
                (STATE, CLIENT),
                (CLIENT, LK),
                (LK, CLIENT), //   and sleeps.
                (LK, SERVER), //   Server: reads Wakeme and wakes the client.
                (CLIENT, STATE),
                (SERVER, STATE),
                (STATE, SERVER),
                (SERVER, STATE),
                (STATE, CLIENT), // The client wakes up.
            ],
        );
        assert_eq!(script.temperature(), Temperature::Cold);
        deliver_all(
            &mut script,
            &[
                (CLIENT, RLOCK), // The woken client reads RLock = true and sets RWant := true,
                (RLOCK, CLIENT), // without holding lk.
                (CLIENT, RWANT),
                (STATE, SERVER), // The server's next iteration: RLock := false,
                (SERVER, SERVER),
                (SERVER, RLOCK),
                (RLOCK, SERVER),
                (SERVER, LK), //   lk is free,
                (LK, SERVER),
                (SERVER, RWANT), // RWant = true: clears it,
                (RWANT, SERVER),
                (SERVER, RWANT),
                (RWANT, SERVER),
                (SERVER, LK), //   lk is still free,
                (LK, SERVER),
                (SERVER, STATE), // and State is still Running: the wakeup is lost.
                (STATE, SERVER),
                (RWANT, CLIENT), // Client: State := Wakeme, lk := false, and it sleeps for good.
                (CLIENT, STATE),
                (STATE, CLIENT),
                (CLIENT, LK),
                (LK, CLIENT),
                (CLIENT, STATE),
            ],
        );
        assert_eq!(client_pc(&script.world), ClientPc::SleepWaitRunning);
        server_loop(&mut script);

        script.assert_fair_cycle(server_loop);
    }

    /// SPIN's fix on the same interleaving, alone or with the client's relock: the server
    /// waits for the client to release lk, so it reads Wakeme and wakes the client, and the
    /// monitor cools down.
    #[test]
    fn the_fix_wakes_the_client_on_the_same_interleaving() {
        for variant in [Variant::SpinFix, Variant::Fixed] {
            wakes_the_client_on_the_same_interleaving(variant);
        }
    }

    fn wakes_the_client_on_the_same_interleaving(variant: Variant) {
        let model = model_variant(variant);
        let mut script = Script::new(&model);
        up_to_rwant_cleared(&mut script);
        script.step(deliver(RWANT, SERVER)).step(deliver(SERVER, LK)); // lk is true: the server blocks.
        assert_eq!(script.world.state(SERVER), &State::Server(ServerPc::WaitLkFreeAgain));
        client_goes_to_sleep(&mut script); // Releasing lk unblocks the server.
        assert_eq!(script.temperature(), Temperature::Hot);
        script
            .step(deliver(LK, SERVER)) //   The server reads State
            .step(deliver(CLIENT, STATE)) // after the client's Waiting(Running):
            .step(deliver(SERVER, STATE))
            .step(deliver(STATE, SERVER)) // it is Wakeme,
            .step(deliver(SERVER, STATE)); // so the server sets Running, which answers the client.
        assert_eq!(script.temperature(), Temperature::Hot);
        script.step(deliver(STATE, CLIENT));
        assert_eq!(script.temperature(), Temperature::Cold);
        let relocks =
            if variant == Variant::Fixed { ClientPc::SleepTestSet } else { ClientPc::SleepReadRLock };
        assert_eq!(client_pc(&script.world), relocks);
    }

    /// Every reachable world of either variant, from the full reachable graph: the client's
    /// assertion never fails, and the state space is small and pinned.
    #[test]
    fn the_client_assertion_holds_in_every_reachable_world() {
        for (variant, states) in [(Variant::Bug, 654), (Variant::SpinFix, 628), (Variant::Fixed, 422)] {
            let report = Check::bfs(&model_variant(variant)).run();
            assert_eq!(report.completion, Completion::Exhausted, "{report}");
            assert!(report.violations.is_empty(), "{report}");
            assert_eq!(report.stats.unique_states, states, "{variant:?}");
        }
    }

    /// The reachable graph: for each world, whether the monitor is hot there (the client is
    /// asleep: the monitor's state is a function of the world), the nodes enabled in it, and
    /// its steps as (the node that takes it, the next world).
    struct Graph {
        hot: Vec<bool>,
        enabled: Vec<BTreeSet<NodeId>>,
        steps: Vec<Vec<(NodeId, usize)>>,
    }

    fn reachable(model: &Model<ProcessScheduler>) -> Graph {
        let simulator = Simulator::new(model).unwrap();
        let mut index = HashMap::<Fingerprint, usize>::new();
        let mut worlds = Vec::new();
        simulator.initial_worlds(|_, world, _| {
            index.insert(world.fingerprint(), worlds.len());
            worlds.push(world);
        });
        let mut graph = Graph { hot: Vec::new(), enabled: Vec::new(), steps: Vec::new() };
        let mut actions = Vec::new();
        while let Some(world) = worlds.get(graph.steps.len()).cloned() {
            simulator.actions(&world, &mut actions);
            graph.enabled.push(actions.iter().map(|a| simulator.event(&world, *a).node()).collect());
            graph.hot.push(client_pc(&world) == ClientPc::SleepWaitRunning);
            let mut steps = Vec::new();
            simulator.successors(&world, |successor| {
                let node = simulator.event(&world, successor.action).node();
                let at = *index.entry(successor.fingerprint()).or_insert_with(|| {
                    worlds.push(successor.into_world());
                    worlds.len() - 1
                });
                steps.push((node, at));
            });
            graph.steps.push(steps);
        }
        graph
    }

    /// The strongly connected components of the graph restricted to the worlds in `keep`
    /// (Tarjan's algorithm, iterative).
    fn components(graph: &Graph, keep: &BTreeSet<usize>) -> Vec<Vec<usize>> {
        let (mut order, mut low) = (HashMap::<usize, usize>::new(), HashMap::<usize, usize>::new());
        let (mut stack, mut on_stack, mut found) = (Vec::new(), BTreeSet::new(), Vec::new());
        for &root in keep {
            if order.contains_key(&root) {
                continue;
            }
            let mut calls = vec![(root, 0)];
            order.insert(root, order.len());
            low.insert(root, order[&root]);
            stack.push(root);
            on_stack.insert(root);
            while let Some(&mut (world, ref mut child)) = calls.last_mut() {
                if let Some(&(_, next)) = graph.steps[world].get(*child) {
                    *child += 1;
                    if !keep.contains(&next) {
                        continue;
                    }
                    if !order.contains_key(&next) {
                        order.insert(next, order.len());
                        low.insert(next, order[&next]);
                        stack.push(next);
                        on_stack.insert(next);
                        calls.push((next, 0));
                    } else if on_stack.contains(&next) {
                        low.insert(world, low[&world].min(order[&next]));
                    }
                    continue;
                }
                calls.pop();
                if let Some(&(parent, _)) = calls.last() {
                    low.insert(parent, low[&parent].min(low[&world]));
                }
                if low[&world] == order[&world] {
                    let mut component = Vec::new();
                    while let Some(member) = stack.pop() {
                        on_stack.remove(&member);
                        component.push(member);
                        if member == world {
                            break;
                        }
                    }
                    found.push(component);
                }
            }
        }
        found
    }

    /// Whether some cycle through worlds of `keep` is fair in P#'s sense: every node enabled
    /// in one of its worlds takes one of its steps. A component whose steps schedule every
    /// node enabled in it has one (the cycle through all its steps); otherwise a fair cycle
    /// inside it avoids the worlds where an unscheduled node is enabled, so those are removed
    /// and the rest is searched again (Emerson and Lei's refinement).
    fn fair_cycle_within(graph: &Graph, keep: &BTreeSet<usize>) -> bool {
        components(graph, keep).into_iter().any(|component| {
            let members: BTreeSet<usize> = component.into_iter().collect();
            let steps = members.iter().flat_map(|&w| &graph.steps[w]);
            let scheduled: BTreeSet<NodeId> =
                steps.filter(|(_, next)| members.contains(next)).map(|(node, _)| *node).collect();
            if scheduled.is_empty() {
                return false; // a single world without a self-loop: no cycle
            }
            let starved = |w: &usize| graph.enabled[*w].iter().any(|n| !scheduled.contains(n));
            if !members.iter().any(starved) {
                return true;
            }
            fair_cycle_within(graph, &members.iter().copied().filter(|w| !starved(w)).collect())
        })
    }

    /// The fix leaves no fair execution in which the client sleeps forever. The bug has one,
    /// and so does SPIN's fix alone (a wakeup that follows a wakeup is lost; see the module
    /// documentation). A liveness violation is a fair cycle of hot worlds, so the search looks
    /// for one among all the reachable hot worlds.
    #[test]
    fn no_fair_execution_of_the_fix_sleeps_forever() {
        for (variant, lasso) in [(Variant::Bug, true), (Variant::SpinFix, true), (Variant::Fixed, false)] {
            let graph = reachable(&model_variant(variant));
            let hot: BTreeSet<usize> = (0..graph.hot.len()).filter(|w| graph.hot[*w]).collect();
            assert!(!hot.is_empty(), "the client sleeps in some world");
            assert_eq!(fair_cycle_within(&graph, &hot), lasso, "{variant:?}");
        }
    }

    /// 300 random executions of up to 500 steps of each variant: no handler panics and the
    /// client's assertion always holds.
    #[test]
    fn random_executions_violate_nothing() {
        for variant in [Variant::Bug, Variant::SpinFix, Variant::Fixed] {
            let model = model_variant(variant);
            let mut script = Script::new(&model);
            let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
            for _ in 0..300 {
                script.reset().random_steps(&mut rng, 500);
            }
        }
    }
}
