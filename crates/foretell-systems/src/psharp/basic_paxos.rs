//! BasicPaxos: single-decree Paxos with three acceptors and two competing proposers, P#'s port
//! of P's BasicPaxos, ported from `shared/specs/psharp-benchmarks.md`, section 1.
//!
//! The spec took this program for FMCAD'17's Proposers benchmark ("Lasso Detection using
//! Partial-State Caching", Table II), whose source it could not find. It is not that benchmark:
//! the paper's Table I gives Proposers 3 machines, 3 states and 5 event types, and its Appendix A
//! describes two proposers and one acceptor, which is [`super::proposers`]. This program has 7
//! machines and 9 event types. It stays as a benchmark of its own: its duel is a real livelock,
//! but every reject re-sends prepares to all three acceptors, so the proposers' inboxes grow
//! during a duel and no partial hash that names queued events repeats (caching finds nothing
//! here; see docs/BENCHMARKS.md).
//!
//! # Nodes
//! Nodes 0, 1 and 2 are the acceptors; node 3 is the proposer with serverId 1 and node 4 the one
//! with serverId 2; node 5 is proposer 1's timer and node 6 proposer 2's. P#'s `Environment`,
//! which creates the machines and halts, is [`Protocol::init`]: the roles are fixed by the node
//! index, and each proposer's `init` sends itself the `Config` event it is created with, so that
//! its start (P#'s `InitOnEntry`) is a step of its own and the two proposers start in either
//! order, as two newly created P# machines do. The timers are nodes so that the scheduler runs
//! them like the P# machines they are. Every node has a P# inbox ([`NetworkKind::FifoInbox`]).
//!
//! # Encoding
//! Payloads have value semantics: a `prepare` carries a copy of the proposer's proposal id,
//! whereas the C# original sends a reference that the proposer later bumps in place (the spec's
//! aliasing caveat; the livelock exists either way). Proposal ids are ordered by round, then by
//! serverId. P#'s unhandled-event error is a local assertion (`"unhandled event: ..."`); halted
//! proposers drop whatever reaches them. The proposer's `Assert(false)` on a chosen value (a
//! reachability probe in the copy that was read) is "value chosen, end of run": it halts.
//!
//! The timer's P# `Default` handler in `WaitForCancel` (send `TimeOut` when the inbox is empty)
//! is the foretell timer [`Tick::Default`], armed exactly while the timer machine waits for a
//! cancellation; it looks at its inbox ([`Out::mailbox`]) and, while a `StartTimer` or
//! `CancelTimer` is queued, does nothing and stays armed, as P#'s `Default` handler waits for an
//! empty inbox. `CancelTimer`'s `Random()` is `choose(2) == 0`: 0 sends
//! nothing, 1 sends a stale `TimeOut`. No handler needs P#'s preemption inside it, so every
//! handler runs whole.
//!
//! # Phases
//! [`Protocol::phase`] is the P# machine state alone, which is all P#'s default hash sees:
//! the acceptor's one state, the proposer's `Init`, `Phase1`, `Phase2` or halted, the timer's
//! `WaitForReq` or `WaitForCancel`. Rounds, counts and values are left out, so one iteration of
//! the duel repeats the default partial hash although the rounds, and so the world, grew.
//!
//! # Monitor
//! [`Progress`] is the spec's liveness monitor, fed from the messages a step sends: a
//! `prepare` is P#'s `NotifyPrepare` (Init or Accepted to the hot Proposed) and an `accepted`
//! is `NotifyAccepted` (Proposed to the cold Accepted). A chosen value ends the run (the P#
//! copy's `Assert(false)` stopped it there), so the monitor then stays cold for good
//! (`Chosen`): a prepare that a late proposer sends afterwards owes nothing.
//!
//! # Variants
//! - `bug: true` (the benchmark): duelling proposers. Each one's prepare overtakes the other's
//!   accept, no acceptor ever accepts, and the monitor stays hot while the rounds grow.
//! - `bug: false`: a distinguished proposer, the standard stable-leader fix of duelling
//!   proposers. After a reject only the proposer with the higher serverId retries; the other
//!   stops proposing (halts). P1 then never sends an id above (1, 1), which is below every id
//!   of P2, so P2 is never rejected and its value is chosen.

use foretell_model::{Model, Monitor, NetworkKind, NodeId, Observation, Out, Protocol, Temperature, World};
use serde::{Deserialize, Serialize};

/// The number of acceptors (nodes `0..ACCEPTORS`).
pub const ACCEPTORS: usize = 3;

/// The number of agreements (or acceptances) a proposer needs: a majority of the acceptors.
pub const MAJORITY: u32 = ACCEPTORS as u32 / 2 + 1;

/// The serverId of the proposer that keeps retrying in the fixed variant (the higher one).
pub const LEADER: u32 = 2;

/// The node of proposer `server_id` (1 or 2).
pub fn proposer_node(server_id: u32) -> NodeId {
    NodeId::new(ACCEPTORS - 1 + server_id as usize)
}

/// The node of proposer `server_id`'s timer.
pub fn timer_node(server_id: u32) -> NodeId {
    NodeId::new(ACCEPTORS + 1 + server_id as usize)
}

/// A proposal id, ordered lexicographically by round, then by serverId.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ProposalId {
    /// The round.
    pub round: u32,
    /// The proposer's serverId.
    pub server: u32,
}

/// A proposal: an id and a value. The default, id (0, 0) with value 0, means "none".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    /// The id.
    pub pid: ProposalId,
    /// The value; 0 is no value.
    pub value: u32,
}

/// A message (a P# event).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Msg {
    /// The proposer's creation event (its acceptors and serverId are fixed by the node layout).
    Config,
    /// Phase 1: a proposer asks the acceptors to agree to a proposal.
    Prepare(Proposal),
    /// Phase 2: a proposer asks the acceptors to accept a proposal.
    Accept(Proposal),
    /// An acceptor agrees to a prepare, sending the proposal it last agreed to.
    Agree(Proposal),
    /// An acceptor refuses a prepare or an accept, sending the id it last agreed to.
    Reject(ProposalId),
    /// An acceptor accepted the proposal.
    Accepted(Proposal),
    /// A proposer starts its timer.
    StartTimer,
    /// A proposer cancels its timer.
    CancelTimer,
    /// The timer expired (perhaps stale).
    TimeOut,
}

/// The proposer's P# state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProposerPhase {
    /// Created, waiting for its `Config`.
    Init,
    /// Collecting agreements to its prepare.
    Phase1,
    /// Collecting acceptances of its accept.
    Phase2,
    /// Halted because its value was chosen: the end of the run.
    Chosen,
    /// Halted because it stopped proposing (fixed variant).
    Halted,
}

/// A proposer's state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Proposer {
    /// The P# state.
    pub phase: ProposerPhase,
    /// The serverId.
    pub server_id: u32,
    /// The value it proposes.
    pub propose_value: u32,
    /// The id of its current proposal.
    pub next_id: ProposalId,
    /// Agreements received in this `Phase1`.
    pub agrees: u32,
    /// Acceptances of `next_id` received in this `Phase2`.
    pub accepts: u32,
    /// The highest proposal the agreements reported.
    pub promised: Proposal,
}

/// The timer machine's P# state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TimerPhase {
    /// Idle, waiting for `StartTimer`.
    WaitForReq,
    /// Running: it times out unless cancelled first.
    WaitForCancel,
}

/// A node's state: one variant per P# machine type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum State {
    /// An acceptor and the proposal it last agreed to.
    Acceptor {
        /// The last proposal agreed to.
        last: Proposal,
    },
    /// A proposer.
    Proposer(Proposer),
    /// A proposer's timer.
    Timer(TimerPhase),
}

/// The timer machine's P# `Default` handler, armed while it is in `WaitForCancel`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Tick {
    /// The timer expires.
    Default,
}

/// The benchmark's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Duelling proposers (`true`, the benchmark) or a distinguished proposer (`false`).
    pub bug: bool,
}

impl Default for Config {
    /// The paper's benchmark: 3 acceptors, 2 proposers, the bug.
    fn default() -> Self {
        Config { bug: true }
    }
}

/// The protocol of every node (the role is fixed by the node index; see the module doc).
#[derive(Clone, Debug)]
pub struct BasicPaxos {
    /// Whether a rejected proposer always retries (the duel) or only the leader does.
    pub bug: bool,
}

/// One-sentence description.
pub const ABOUT: &str = "P# BasicPaxos: single-decree Paxos with 3 acceptors and 2 competing proposers";

/// The liveness bug.
pub const BUG: &str = "duelling proposers: each one's prepare overtakes the other's accept, so no acceptor \
                       ever accepts while the rounds grow forever";

/// The model: 3 acceptors, 2 proposers and their 2 timers on P# inboxes, with the liveness
/// monitor.
pub fn model(config: &Config) -> Model<BasicPaxos> {
    Model::new(BasicPaxos { bug: config.bug })
        .nodes(ACCEPTORS + 4)
        .network(NetworkKind::FifoInbox)
        .monitor(Progress)
}

impl BasicPaxos {
    fn acceptors() -> impl Iterator<Item = NodeId> + Clone {
        NodeId::all(ACCEPTORS)
    }

    fn on_acceptor(last: &mut Proposal, from: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
        match msg {
            Msg::Prepare(proposal) if last.value == 0 => {
                out.send(from, Msg::Agree(Proposal::default()));
                *last = *proposal;
            }
            Msg::Prepare(proposal) if proposal.pid < last.pid => out.send(from, Msg::Reject(last.pid)),
            Msg::Prepare(proposal) => {
                out.send(from, Msg::Agree(*last));
                *last = *proposal;
            }
            Msg::Accept(proposal) if proposal.pid != last.pid => out.send(from, Msg::Reject(last.pid)),
            Msg::Accept(proposal) => out.send(from, Msg::Accepted(*proposal)),
            other => out.require(false, format!("unhandled event: acceptor got {other:?}")),
        }
    }

    fn on_proposer(&self, proposer: &mut Proposer, msg: &Msg, out: &mut Out<'_, Self>) {
        let timer = timer_node(proposer.server_id);
        match (proposer.phase, msg) {
            (ProposerPhase::Chosen | ProposerPhase::Halted, _) => {}
            (ProposerPhase::Init, Msg::Config) => Self::enter_phase1(proposer, out),
            (ProposerPhase::Phase1, Msg::Agree(previous)) => {
                proposer.agrees += 1;
                if proposer.promised.pid < previous.pid {
                    proposer.promised = *previous;
                }
                if proposer.agrees == MAJORITY {
                    out.send(timer, Msg::CancelTimer);
                    Self::enter_phase2(proposer, out);
                }
            }
            (ProposerPhase::Phase1, Msg::Reject(id)) => {
                if proposer.next_id.round <= id.round {
                    proposer.next_id.round = id.round + 1;
                }
                out.send(timer, Msg::CancelTimer);
                self.retry(proposer, out);
            }
            (ProposerPhase::Phase2, Msg::Accepted(proposal)) => {
                if proposal.pid == proposer.next_id {
                    proposer.accepts += 1;
                }
                if proposer.accepts == MAJORITY {
                    out.send(timer, Msg::CancelTimer);
                    proposer.phase = ProposerPhase::Chosen;
                }
            }
            (ProposerPhase::Phase2, Msg::Reject(id)) => {
                // The original bumps to the rejecting round, not past it, after a failed accept.
                if proposer.next_id.round <= id.round {
                    proposer.next_id.round = id.round;
                }
                out.send(timer, Msg::CancelTimer);
                self.retry(proposer, out);
            }
            (ProposerPhase::Phase1 | ProposerPhase::Phase2, Msg::TimeOut) => {
                Self::enter_phase1(proposer, out)
            }
            (ProposerPhase::Phase1, Msg::Accepted(_)) | (ProposerPhase::Phase2, Msg::Agree(_)) => {}
            (phase, other) => {
                out.require(false, format!("unhandled event: proposer in {phase:?} got {other:?}"))
            }
        }
    }

    /// After a reject: prepare again, unless the fix makes a non-leader stop proposing.
    fn retry(&self, proposer: &mut Proposer, out: &mut Out<'_, Self>) {
        if self.bug || proposer.server_id == LEADER {
            Self::enter_phase1(proposer, out);
        } else {
            proposer.phase = ProposerPhase::Halted;
        }
    }

    fn enter_phase1(proposer: &mut Proposer, out: &mut Out<'_, Self>) {
        proposer.phase = ProposerPhase::Phase1;
        proposer.agrees = 0;
        let proposal = Proposal { pid: proposer.next_id, value: proposer.propose_value };
        out.broadcast(Self::acceptors(), Msg::Prepare(proposal));
        out.send(timer_node(proposer.server_id), Msg::StartTimer);
    }

    fn enter_phase2(proposer: &mut Proposer, out: &mut Out<'_, Self>) {
        proposer.phase = ProposerPhase::Phase2;
        proposer.accepts = 0;
        if proposer.promised.value != 0 {
            proposer.propose_value = proposer.promised.value;
        }
        let proposal = Proposal { pid: proposer.next_id, value: proposer.propose_value };
        out.broadcast(Self::acceptors(), Msg::Accept(proposal));
        out.send(timer_node(proposer.server_id), Msg::StartTimer);
    }

    fn on_timer_machine(phase: &mut TimerPhase, me: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
        match (*phase, msg) {
            (TimerPhase::WaitForReq, Msg::StartTimer) => {
                *phase = TimerPhase::WaitForCancel;
                out.set_timer(Tick::Default, 1);
            }
            (TimerPhase::WaitForReq, Msg::CancelTimer) | (TimerPhase::WaitForCancel, Msg::StartTimer) => {}
            (TimerPhase::WaitForCancel, Msg::CancelTimer) => {
                if out.choose(2) == 1 {
                    out.send(Self::owner(me), Msg::TimeOut);
                }
                *phase = TimerPhase::WaitForReq;
                out.cancel_timer(&Tick::Default);
            }
            (phase, other) => {
                out.require(false, format!("unhandled event: timer in {phase:?} got {other:?}"))
            }
        }
    }

    /// The proposer that owns timer node `timer`.
    fn owner(timer: NodeId) -> NodeId {
        NodeId::new(timer.index() - 2)
    }
}

impl Protocol for BasicPaxos {
    type State = State;
    type Msg = Msg;
    type Timer = Tick;
    type Input = ();

    fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> State {
        match me.index() {
            i if i < ACCEPTORS => State::Acceptor { last: Proposal::default() },
            i if i < ACCEPTORS + 2 => {
                out.send(me, Msg::Config);
                let server_id = (i - ACCEPTORS + 1) as u32;
                State::Proposer(Proposer {
                    phase: ProposerPhase::Init,
                    server_id,
                    propose_value: server_id * 10 + 1,
                    next_id: ProposalId { round: 1, server: server_id },
                    agrees: 0,
                    accepts: 0,
                    promised: Proposal::default(),
                })
            }
            _ => State::Timer(TimerPhase::WaitForReq),
        }
    }

    fn on_message(&self, me: NodeId, state: &mut State, from: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
        match state {
            State::Acceptor { last } => Self::on_acceptor(last, from, msg, out),
            State::Proposer(proposer) => self.on_proposer(proposer, msg, out),
            State::Timer(phase) => Self::on_timer_machine(phase, me, msg, out),
        }
    }

    fn on_timer(&self, me: NodeId, state: &mut State, timer: &Tick, out: &mut Out<'_, Self>) {
        let Tick::Default = timer;
        if let State::Timer(phase @ TimerPhase::WaitForCancel) = state {
            if out.mailbox().next().is_some() {
                // P#'s `Default` handler runs only when the inbox is empty.
                out.set_timer(Tick::Default, 1);
                return;
            }
            out.send(Self::owner(me), Msg::TimeOut);
            *phase = TimerPhase::WaitForReq;
        }
    }

    fn phase(&self, state: &State) -> u64 {
        match state {
            State::Acceptor { .. } => 0,
            State::Proposer(proposer) => match proposer.phase {
                ProposerPhase::Init => 1,
                ProposerPhase::Phase1 => 2,
                ProposerPhase::Phase2 => 3,
                ProposerPhase::Chosen | ProposerPhase::Halted => 4,
            },
            State::Timer(TimerPhase::WaitForReq) => 5,
            State::Timer(TimerPhase::WaitForCancel) => 6,
        }
    }
}

/// The monitor's P# state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProgressState {
    /// Nothing proposed yet (P#'s unannotated start state).
    Init,
    /// Hot: a prepare was sent and no acceptor has accepted since.
    Proposed,
    /// Cold: an acceptor accepted.
    Accepted,
    /// Cold for good: a value was chosen, which ends the run.
    Chosen,
}

/// The liveness monitor: after any prepare, some acceptor must eventually accept something.
pub struct Progress;

impl Monitor<BasicPaxos> for Progress {
    type State = ProgressState;

    fn name(&self) -> &str {
        "LivenessMonitor"
    }

    fn init(&self, _: &World<BasicPaxos>) -> ProgressState {
        ProgressState::Init
    }

    fn observe(&self, state: &mut ProgressState, step: &Observation<'_, BasicPaxos>) {
        if *state == ProgressState::Chosen {
            return;
        }
        let chosen = |s: &State| matches!(s, State::Proposer(p) if p.phase == ProposerPhase::Chosen);
        if step.after.states().any(chosen) {
            *state = ProgressState::Chosen;
            return;
        }
        for (_, msg) in step.sent {
            match msg {
                Msg::Prepare(_) => *state = ProgressState::Proposed,
                Msg::Accepted(_) => *state = ProgressState::Accepted,
                _ => {}
            }
        }
    }

    fn temperature(&self, state: &ProgressState) -> Temperature {
        match state {
            ProgressState::Init => Temperature::Neutral,
            ProgressState::Proposed => Temperature::Hot,
            ProgressState::Accepted | ProgressState::Chosen => Temperature::Cold,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::script::{Rng, Script};
    use super::*;
    use foretell_check::{Check, Completion};
    use foretell_model::{Event, PartialHash};

    const P1: NodeId = NodeId(3);
    const P2: NodeId = NodeId(4);

    /// Delivers the head of `node`'s inbox. A running timer that is cancelled flips P#'s coin;
    /// the script answers "no stale timeout" (`choose(2) == 0`).
    fn deliver(script: &mut Script<'_, BasicPaxos>, node: NodeId) {
        let head = script.world.messages().find(|e| e.to == node).map(|e| e.msg.clone());
        let coin = matches!(script.world.state(node), State::Timer(TimerPhase::WaitForCancel))
            && head == Some(Msg::CancelTimer);
        let choices: &[usize] = if coin { &[0] } else { &[] };
        script.step_with(choices, |event| matches!(event, Event::Deliver { to, .. } if *to == node));
    }

    /// `node` handles its next `count` messages; the monitor stays hot.
    fn handle(script: &mut Script<'_, BasicPaxos>, node: NodeId, count: usize) {
        for _ in 0..count {
            deliver(script, node);
            assert_eq!(script.temperature(), Temperature::Hot);
        }
    }

    /// Each acceptor in turn handles one message, `layers` times: the replies of one layer
    /// reach the proposers before those of the next.
    fn acceptors(script: &mut Script<'_, BasicPaxos>, layers: usize) {
        for _ in 0..layers {
            for acceptor in NodeId::all(ACCEPTORS) {
                handle(script, acceptor, 1);
            }
        }
    }

    /// Both timers handle every request queued to them.
    fn timers(script: &mut Script<'_, BasicPaxos>) {
        for timer in [timer_node(1), timer_node(2)] {
            while script.world.messages().any(|e| e.to == timer) {
                handle(script, timer, 1);
            }
        }
    }

    fn proposer(world: &World<BasicPaxos>, node: NodeId) -> &Proposer {
        match world.state(node) {
            State::Proposer(proposer) => proposer,
            other => panic!("{node} is not a proposer: {other:?}"),
        }
    }

    fn round(world: &World<BasicPaxos>, node: NodeId) -> u32 {
        proposer(world, node).next_id.round
    }

    /// The spec's walk-through, steps 1 to 4: each proposer's accept is overtaken by the
    /// other's prepare. Ends with P1 in Phase1 at (1, 2) holding three rejects of its prepare
    /// (1, 1) and six agreements to its two prepares (1, 2), and P2 in Phase2 at (2, 1) holding
    /// the three rejects of its accept.
    fn reach_duel(script: &mut Script<'_, BasicPaxos>) {
        handle(script, P1, 1); // P1 starts and prepares (1, 1).
        acceptors(script, 1); // The acceptors agree.
        handle(script, P2, 1); // P2 starts and prepares (2, 1).
        handle(script, P1, 3); // Two agreements: P1 sends accept (1, 1); the third is ignored.
        acceptors(script, 2); // They agree to (2, 1), then reject (1, 1) with (2, 1).
        timers(script);
        handle(script, P1, 3); // Prepares (1, 1) again, then bumps and prepares (1, 2) twice.
        handle(script, P2, 3); // P2 sends accept (2, 1), queued behind P1's prepares.
        acceptors(script, 4); // Reject (1, 1), agree to (1, 2) twice, reject (2, 1) with (1, 2).
        timers(script);
        assert_eq!(proposer(&script.world, P1).phase, ProposerPhase::Phase1);
        assert_eq!(proposer(&script.world, P2).phase, ProposerPhase::Phase2);
        assert_eq!(script.world.messages().filter(|e| e.to == P1).count(), 9);
        assert_eq!(script.world.messages().filter(|e| e.to == P2).count(), 3);
    }

    /// One iteration of the duel, from the state `reach_duel` ends in (with P1 at (1, 2m) and
    /// P2 at (2, 2m - 1)) to the same state two rounds later: 88 steps.
    fn duel_iteration(script: &mut Script<'_, BasicPaxos>) {
        // The stale rejects make P1 prepare (1, 2m) three more times (no bump: 2m > 2m - 1).
        handle(script, P1, 3);
        // P2's rejects: it prepares (2, 2m), then bumps to (2, 2m + 1) and prepares twice.
        handle(script, P2, 3);
        // P1's six agreements: with two it sends accept (1, 2m), queued behind P2's prepares.
        handle(script, P1, 6);
        // Each acceptor agrees to the three prepares of each proposer, then rejects P1's accept.
        acceptors(script, 7);
        timers(script);
        // P1 ignores nine agreements in Phase2; the first reject takes it to (1, 2m + 1) (no
        // bump after an accept), which is rejected, and the next two to (1, 2m + 2).
        handle(script, P1, 12);
        // P2's agreements: with two it sends accept (2, 2m + 1), behind P1's prepares.
        handle(script, P2, 9);
        acceptors(script, 4);
        timers(script);
    }

    /// The livelock, step by step: an iteration of the duel is fair and hot, and returns to the
    /// same default partial hash (P# machine states and queued event names) although both
    /// proposers' rounds grew, so the exact world never repeats (the paper's Appendix C).
    #[test]
    fn a_duel_iteration_repeats_the_partial_hash_but_not_the_world() {
        let model = model(&Config::default());
        let mut script = Script::new(&model);
        reach_duel(&mut script);
        let (hash, world) = (script.partial_hash(), script.world.clone());
        script.mark();
        duel_iteration(&mut script);
        assert_eq!(script.temperature(), Temperature::Hot);
        assert!(script.partial_hash() == hash, "the partial hash differs after one iteration");
        assert!(script.fair(), "enabled {:?}, scheduled {:?}", script.enabled, script.scheduled);
        assert_eq!(script.scheduled.len(), ACCEPTORS + 4);
        assert_ne!(script.world.fingerprint(), world.fingerprint());
        assert_eq!(round(&script.world, P1), round(&world, P1) + 2);
        assert_eq!(round(&script.world, P2), round(&world, P2) + 2);
    }

    /// With the full fingerprint as the partial hash, the same iteration ends in a different
    /// hash: remembering the rounds hides the lasso (Appendix C, Table IV).
    #[test]
    fn the_full_hash_sees_the_rounds_grow() {
        let model = model(&Config::default()).partial_hash(PartialHash::Full);
        let mut script = Script::new(&model);
        reach_duel(&mut script);
        let hash = script.partial_hash();
        duel_iteration(&mut script);
        assert_eq!(script.temperature(), Temperature::Hot);
        assert!(script.partial_hash() != hash, "the full hash repeats");
    }

    /// The fix: at its first reject P1 stops proposing, and P2's accept goes through.
    #[test]
    fn the_distinguished_proposer_ends_the_duel() {
        let model = model(&Config { bug: false });
        let mut script = Script::new(&model);
        handle(&mut script, P1, 1);
        acceptors(&mut script, 1);
        handle(&mut script, P2, 1);
        handle(&mut script, P1, 3);
        acceptors(&mut script, 2);
        handle(&mut script, P1, 1); // The reject of P1's accept.
        assert_eq!(proposer(&script.world, P1).phase, ProposerPhase::Halted);
        handle(&mut script, P2, 2); // P2 sends accept (2, 1).
        for acceptor in NodeId::all(ACCEPTORS) {
            deliver(&mut script, acceptor);
            assert_eq!(script.temperature(), Temperature::Cold);
        }
        for _ in 0..3 {
            deliver(&mut script, P2); // The third agreement (ignored), then two acceptances.
        }
        let winner = proposer(&script.world, P2);
        assert_eq!(winner.phase, ProposerPhase::Chosen);
        assert_eq!(winner.accepts, MAJORITY);
    }

    /// How an execution ended: every node idle, P2 decided, P1 decided or not, the monitor.
    #[derive(Debug, PartialEq)]
    struct End {
        leader_decided: bool,
        other_decided: bool,
        /// The monitor's state, in its `Debug` form.
        monitor: String,
    }

    /// Random executions of up to `steps` steps, which must not fail an assertion; returns how
    /// each one that ended (no enabled step) ended.
    fn walks(config: &Config, runs: u64, steps: usize) -> Vec<End> {
        let model = model(config);
        let mut script = Script::new(&model);
        let decided = |world: &World<BasicPaxos>, id| {
            let proposer = proposer(world, proposer_node(id));
            proposer.phase == ProposerPhase::Chosen && proposer.accepts == MAJORITY
        };
        let mut ends = Vec::new();
        for seed in 1..=runs {
            let mut rng = Rng::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            if script.reset().random_steps(&mut rng, steps) {
                let world = &script.world;
                let (leader_decided, other_decided) = (decided(world, LEADER), decided(world, 1));
                ends.push(End { leader_decided, other_decided, monitor: script.describe(0) });
            }
        }
        ends
    }

    /// Random executions never fail an assertion. With the bug, many flood the acceptors with
    /// ever more prepares, and every one that ends has chosen a value and is cold. With the fix,
    /// every one ends with P2's value chosen; the only hot endings are a late prepare of P1 that
    /// was rejected (see the next test).
    #[test]
    fn random_executions_hold_their_assertions() {
        let chosen = format!("{:?}", ProgressState::Chosen);
        let ends = walks(&Config::default(), 300, 500);
        assert!(ends.len() > 50, "only {} of 300 executions ended", ends.len());
        for end in &ends {
            assert!(end.leader_decided || end.other_decided, "{end:?}");
            assert_eq!(end.monitor, chosen, "{end:?}");
        }
        let ends = walks(&Config { bug: false }, 300, 500);
        assert_eq!(ends.len(), 300, "every execution of the fix ends within 500 steps");
        for end in &ends {
            assert!(end.leader_decided, "{end:?}");
            assert_eq!(end.monitor, chosen, "{end:?}");
        }
    }

    /// A prepare after the choice owes nothing: P1 prepares only after P2's value was chosen,
    /// is rejected and stops, and nothing is accepted after that prepare — but the run ended
    /// with the choice, so the monitor stays cold.
    #[test]
    fn a_late_prepare_after_the_choice_owes_nothing() {
        let model = model(&Config { bug: false });
        let mut script = Script::new(&model);
        handle(&mut script, P2, 1); // P2 starts and prepares (2, 1).
        acceptors(&mut script, 1);
        handle(&mut script, P2, 2); // P2 sends accept (2, 1).
        for acceptor in NodeId::all(ACCEPTORS) {
            deliver(&mut script, acceptor);
        }
        for _ in 0..3 {
            deliver(&mut script, P2);
        }
        assert_eq!(proposer(&script.world, P2).accepts, MAJORITY);
        assert_eq!(script.temperature(), Temperature::Cold);
        deliver(&mut script, P1); // P1 starts late and prepares (1, 1).
        for acceptor in NodeId::all(ACCEPTORS) {
            deliver(&mut script, acceptor); // (1, 1) < (2, 1): rejected.
        }
        deliver(&mut script, P1);
        assert_eq!(proposer(&script.world, P1).phase, ProposerPhase::Halted);
        while script.world.messages().next().is_some() {
            let to = script.world.messages().next().map(|e| e.to).expect("a message");
            deliver(&mut script, to);
        }
        assert!(script.events().is_empty(), "{:?}", script.events());
        assert_eq!(script.temperature(), Temperature::Cold);
    }

    /// Breadth-first search to depth 12 finds no unhandled event in either variant (the space
    /// is infinite: timeouts may fire forever, and with the bug the rounds grow).
    #[test]
    fn bounded_search_finds_no_unhandled_event() {
        for (bug, states) in [(true, 183_650), (false, 144_992)] {
            let report = Check::bfs(&model(&Config { bug })).depth_max(12).run();
            assert!(report.violations.is_empty(), "{report}");
            assert_eq!(report.completion, Completion::DepthBound, "{report}");
            assert_eq!(report.stats.unique_states, states, "bug {bug}");
        }
    }
}
