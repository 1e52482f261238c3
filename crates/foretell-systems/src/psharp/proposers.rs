//! Proposers: two proposers out-bid each other at one acceptor, the first P# liveness benchmark
//! of FMCAD'17 "Lasso Detection using Partial-State Caching" (section VI, Table II, Appendix A
//! and C), from "a simple version of the Paxos consensus protocol" of Emmi and Lal (SAS'12).
//!
//! # Source
//! The P# source is not public. This port follows the paper's own description (Appendix A) and
//! shape (Table I: 3 machines, 3 machine states, 5 event types). A proposer proposes an integer
//! and waits for the acceptor's answer. The acceptor accepts a proposal greater than every one
//! it has seen. A proposer whose proposal was accepted sends the value again and waits for the
//! final acceptance; if the acceptor has seen a greater value in the meantime, it declines. A
//! declined proposer increments its value and starts over. [`super::basic_paxos`] is the
//! three-acceptor program the spec first took for this benchmark.
//!
//! # Nodes
//! Node 0 is the acceptor; nodes 1 and 2 are the proposers, which first propose 1 and 2. P#'s
//! `Environment`, which creates the machines, is [`Protocol::init`]: each proposer sends its
//! first proposal from `init`, and the acceptor's inbox takes the two in either order. Every
//! node has a P# inbox ([`NetworkKind::FifoInbox`]). Each handler runs whole: a P# machine here
//! sends at most one event per handler, so P#'s scheduling point at a send adds no interleaving.
//!
//! # Phases
//! [`Protocol::phase`] is the P# machine state alone: the acceptor's one state, and the
//! proposer's `Proposing`, `Confirming` or halted. Values are left out, so one round of the duel
//! repeats P#'s default partial hash although the values grew (Appendix C: with the values in
//! the hash, no state repeats).
//!
//! # Monitor
//! [`Progress`]: hot until the acceptor finally accepts some value, then cold for good.
//!
//! # Variants
//! - `bug: true` (the benchmark): duelling proposers. While one proposer confirms, the other's
//!   greater proposal arrives first; the first is declined, proposes one more, and so on in
//!   alternation, forever.
//! - `bug: false`: a distinguished proposer. A declined proposer retries only if it is proposer
//!   2; proposer 1 gives up. Proposer 1's values then never exceed 1, below every value of
//!   proposer 2, so proposer 2 is never declined and its value is chosen.

use foretell_model::{Model, Monitor, NetworkKind, NodeId, Observation, Out, Protocol, Temperature, World};
use serde::{Deserialize, Serialize};

/// The acceptor's node.
pub const ACCEPTOR: NodeId = NodeId(0);

/// The proposer that keeps retrying in the fixed variant.
pub const LEADER: NodeId = NodeId(2);

/// A message (a P# event). Proposers send the first and third kind, the acceptor the others.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Msg {
    /// A proposer proposes a value.
    Propose(u32),
    /// The acceptor accepts a proposal: the greatest it has seen.
    Agree(u32),
    /// The proposer sends its accepted value again, for the final acceptance.
    Confirm(u32),
    /// The acceptor finally accepts the value: it is chosen.
    Chosen(u32),
    /// The acceptor declines, having seen the greater value it names.
    Decline(u32),
}

/// Where a proposer is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Stage {
    /// Its proposal is on the way: waiting for `Agree` or `Decline`.
    Proposing,
    /// Its value was accepted and sent again: waiting for `Chosen` or `Decline`.
    Confirming,
    /// Its value was chosen (halted).
    Chosen,
    /// It gave up after a decline (fixed variant; halted).
    GaveUp,
}

/// A node's state: one variant per P# machine type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum State {
    /// The acceptor and the greatest value it has accepted (0: none).
    Acceptor {
        /// The greatest value accepted so far.
        greatest: u32,
    },
    /// A proposer, where it is and its current value.
    Proposer {
        /// Where it is.
        stage: Stage,
        /// The value it proposes now.
        value: u32,
    },
}

/// The benchmark's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Duelling proposers (`true`, the benchmark) or a distinguished proposer (`false`).
    pub bug: bool,
}

impl Default for Config {
    /// The paper's benchmark, with the bug.
    fn default() -> Self {
        Config { bug: true }
    }
}

/// The protocol of every node (node 0 is the acceptor, nodes 1 and 2 the proposers).
#[derive(Clone, Debug)]
pub struct Proposers {
    /// Whether a declined proposer always retries (the duel) or only the leader does.
    pub bug: bool,
}

/// One-sentence description.
pub const ABOUT: &str =
    "P# Proposers (FMCAD'17 Appendix A): two proposers out-bid each other at one acceptor";

/// The liveness bug.
pub const BUG: &str =
    "duelling proposers: each proposer's greater value reaches the acceptor while the other \
                       confirms, so the other is declined, proposes one more, and so on forever";

/// The model: one acceptor and two proposers on P# inboxes, with the liveness monitor.
pub fn model(config: &Config) -> Model<Proposers> {
    Model::new(Proposers { bug: config.bug }).nodes(3).network(NetworkKind::FifoInbox).monitor(Progress)
}

impl Proposers {
    fn on_acceptor(greatest: &mut u32, from: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
        match *msg {
            Msg::Propose(value) if value > *greatest => {
                *greatest = value;
                out.send(from, Msg::Agree(value));
            }
            Msg::Confirm(value) if value == *greatest => out.send(from, Msg::Chosen(value)),
            Msg::Propose(_) | Msg::Confirm(_) => out.send(from, Msg::Decline(*greatest)),
            ref other => out.require(false, format!("unhandled event: acceptor got {other:?}")),
        }
    }

    fn on_proposer(
        &self,
        me: NodeId,
        stage: &mut Stage,
        value: &mut u32,
        msg: &Msg,
        out: &mut Out<'_, Self>,
    ) {
        match (*stage, msg) {
            (Stage::Chosen | Stage::GaveUp, _) => {}
            (Stage::Proposing, Msg::Agree(agreed)) if agreed == value => {
                *stage = Stage::Confirming;
                out.send(ACCEPTOR, Msg::Confirm(*value));
            }
            (Stage::Confirming, Msg::Chosen(chosen)) if chosen == value => *stage = Stage::Chosen,
            (Stage::Proposing | Stage::Confirming, Msg::Decline(_)) if self.bug || me == LEADER => {
                *value += 1;
                *stage = Stage::Proposing;
                out.send(ACCEPTOR, Msg::Propose(*value));
            }
            (Stage::Proposing | Stage::Confirming, Msg::Decline(_)) => *stage = Stage::GaveUp,
            (stage, other) => {
                out.require(false, format!("unhandled event: proposer in {stage:?} got {other:?}"))
            }
        }
    }
}

impl Protocol for Proposers {
    type State = State;
    type Msg = Msg;
    type Timer = ();
    type Input = ();

    fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> State {
        if me == ACCEPTOR {
            return State::Acceptor { greatest: 0 };
        }
        let value = me.0;
        out.send(ACCEPTOR, Msg::Propose(value));
        State::Proposer { stage: Stage::Proposing, value }
    }

    fn on_message(&self, me: NodeId, state: &mut State, from: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
        match state {
            State::Acceptor { greatest } => Self::on_acceptor(greatest, from, msg, out),
            State::Proposer { stage, value } => self.on_proposer(me, stage, value, msg, out),
        }
    }

    fn phase(&self, state: &State) -> u64 {
        match state {
            State::Acceptor { .. } => 0,
            State::Proposer { stage, .. } => 1 + *stage as u64,
        }
    }
}

/// The monitor's P# state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProgressState {
    /// Hot: no value is chosen yet.
    Undecided,
    /// Cold for good: the acceptor finally accepted a value.
    Chosen,
}

/// The liveness monitor: some value is eventually chosen.
pub struct Progress;

impl Monitor<Proposers> for Progress {
    type State = ProgressState;

    fn name(&self) -> &str {
        "LivenessMonitor"
    }

    fn init(&self, _: &World<Proposers>) -> ProgressState {
        ProgressState::Undecided
    }

    fn observe(&self, state: &mut ProgressState, step: &Observation<'_, Proposers>) {
        if step.sent.iter().any(|(_, msg)| matches!(msg, Msg::Chosen(_))) {
            *state = ProgressState::Chosen;
        }
    }

    fn temperature(&self, state: &ProgressState) -> Temperature {
        match state {
            ProgressState::Undecided => Temperature::Hot,
            ProgressState::Chosen => Temperature::Cold,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::script::{deliver, Rng, Script};
    use super::*;
    use foretell_check::{Check, Completion};
    use foretell_model::PartialHash;

    const P1: NodeId = NodeId(1);
    const P2: NodeId = NodeId(2);

    fn proposer(world: &World<Proposers>, node: NodeId) -> (Stage, u32) {
        match world.state(node) {
            State::Proposer { stage, value } => (*stage, *value),
            other => panic!("{node} is not a proposer: {other:?}"),
        }
    }

    /// One round of the duel, from P1's proposal agreed and P2's proposal queued at the
    /// acceptor, to the same again two values higher: P1's confirmation loses to P2's greater
    /// value, P1 proposes twice to out-bid it, then P2's confirmation loses to that, and P2
    /// proposes twice. Each step delivers the head of the named node's inbox.
    fn duel_round(script: &mut Script<'_, Proposers>) {
        for node in [ACCEPTOR, P1, ACCEPTOR, P1, ACCEPTOR, P1, P2, ACCEPTOR, ACCEPTOR, P2, ACCEPTOR, P2] {
            script.step(deliver(node));
            assert_eq!(script.temperature(), Temperature::Hot);
        }
    }

    /// The lasso, step by step: a round of the duel is fair and hot and repeats P#'s default
    /// partial hash, but not the world, whose values grew by two (the paper's Appendix C); the
    /// full state as the hash sees the growth.
    #[test]
    fn a_duel_round_repeats_the_partial_hash_but_not_the_world() {
        for (hash, repeats) in [(PartialHash::Default, true), (PartialHash::Full, false)] {
            let model = model(&Config::default()).partial_hash(hash);
            let mut script = Script::new(&model);
            script.step(deliver(ACCEPTOR)); // P1's proposal of 1 is agreed.
            let (hash, world) = (script.partial_hash(), script.world.clone());
            script.mark();
            duel_round(&mut script);
            assert_eq!(script.partial_hash() == hash, repeats);
            assert!(script.fair(), "enabled {:?}, scheduled {:?}", script.enabled, script.scheduled);
            assert_ne!(script.world.fingerprint(), world.fingerprint());
            assert_eq!(proposer(&script.world, P1), (Stage::Proposing, proposer(&world, P1).1 + 2));
            assert_eq!(proposer(&script.world, P2), (Stage::Proposing, proposer(&world, P2).1 + 2));
        }
    }

    /// The fix: P1 gives up at its first decline, and P2's value is chosen.
    #[test]
    fn the_distinguished_proposer_ends_the_duel() {
        let model = model(&Config { bug: false });
        let mut script = Script::new(&model);
        for node in [ACCEPTOR, ACCEPTOR, P1, ACCEPTOR, P1] {
            script.step(deliver(node));
        }
        assert_eq!(proposer(&script.world, P1).0, Stage::GaveUp);
        for node in [P2, ACCEPTOR, P2] {
            script.step(deliver(node));
        }
        assert_eq!(proposer(&script.world, P2), (Stage::Chosen, 2));
        assert_eq!(script.temperature(), Temperature::Cold);
        assert!(script.events().is_empty());
    }

    /// Random executions of up to 500 steps never fail an assertion, and every one that ends
    /// has a value chosen and a cold monitor. The fix always ends, with P2's value chosen.
    #[test]
    fn random_executions_end_with_a_value_chosen() {
        for bug in [true, false] {
            let model = model(&Config { bug });
            let mut script = Script::new(&model);
            let mut ended = 0;
            for seed in 1..=300u64 {
                let mut rng = Rng::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
                if script.reset().random_steps(&mut rng, 500) {
                    ended += 1;
                    let chosen = [P1, P2].iter().any(|&p| proposer(&script.world, p).0 == Stage::Chosen);
                    assert!(chosen, "seed {seed}: ended with nothing chosen");
                    assert_eq!(script.temperature(), Temperature::Cold, "seed {seed}");
                    assert!(bug || proposer(&script.world, LEADER).0 == Stage::Chosen, "seed {seed}");
                }
            }
            assert_eq!(ended, 300, "bug {bug}: a random execution outlived 500 steps");
        }
    }

    /// The fix's space is finite and holds no unhandled event; the duel's is infinite.
    #[test]
    fn search_finds_no_unhandled_event() {
        let report = Check::bfs(&model(&Config { bug: false })).run();
        assert_eq!(report.completion, Completion::Exhausted, "{report}");
        assert!(report.violations.is_empty(), "{report}");
        let report = Check::bfs(&model(&Config { bug: true })).depth_max(30).run();
        assert_eq!(report.completion, Completion::DepthBound, "{report}");
        assert!(report.violations.is_empty(), "{report}");
    }
}
