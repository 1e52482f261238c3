//! Single-decree Paxos, node for node as Lamport's `Paxos.tla` ("The Paxos Algorithm — or How
//! to Win a Turing Award"; tlaplus/Examples
//! `specifications/PaxosHowToWinATuringAward/Paxos.tla`).
//!
//! Nodes `0..A` are the acceptors; node `A + b` is the leader of ballot `b`, for `b` in
//! `0..=B`. Messages live in a grow-only set ([`NetworkKind::GrowOnly`]), as `msgs` does in the
//! spec: a message is never consumed and its receipt may repeat. The spec's actions map to
//! events as follows:
//!
//! * `Phase1a(b)`: the spontaneous input [`Input::Phase1a`] at leader `b` broadcasts `1a`.
//! * `Phase1b(a)`: acceptor `a` receives a `1a` with a ballot above `maxBal[a]`, promises it and
//!   sends its `1b` to that ballot's leader.
//! * `Phase2a(b, v)`: the spontaneous input [`Input::Phase2a`] at leader `b`. It reads the
//!   leader's mailbox — every `1b` ever sent to it — exactly as the spec reads `msgs`, and
//!   broadcasts `2a` if no `2a` of ballot `b` was sent yet and some quorum's `1b`s allow `v`.
//! * `Phase2b(a)`: acceptor `a` receives a `2a` with a ballot at least `maxBal[a]`, votes, and
//!   sends its `2b` to that ballot's leader.
//!
//! A leader's only state is whether it sent its `2a`, a function of the message set, so worlds
//! correspond one to one with the spec's states (`maxBal`, `maxVBal`, `maxVal`, `msgs`) and
//! the distinct-state counts equal TLC's: 3,921 for `MCPaxosTiny` (3 acceptors, 2 values,
//! ballots 0..1) and 185,369 for ballots 0..2.
//!
//! Two bug variants: `last-promise` drops the "highest `mbal`" condition of `Phase2a` (any
//! value voted by the quorum may be proposed; it needs three ballots to go wrong), and
//! `forget-promise` lets acceptors reset, keeping their vote but setting `maxBal := maxVBal`.

use crate::{Param, Settings, System, Variant};
use foretell_check::DynModel;
use foretell_model::{Budget, Driver, Faults, Model, NetworkKind, NodeId, Out, Protocol, World};
use serde::{Deserialize, Serialize};

/// A value that may be proposed and chosen.
pub type Value = u8;

/// A node's state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum State {
    /// An acceptor: `maxBal[a]`, `maxVBal[a]` and `maxVal[a]` of the spec (-1 and `None` for
    /// the spec's -1 and `None`).
    Acceptor {
        /// The highest ballot promised or voted in.
        max_bal: i64,
        /// The highest ballot voted in.
        max_vbal: i64,
        /// The value voted for in `max_vbal`.
        max_val: Option<Value>,
    },
    /// The leader of one ballot.
    Leader {
        /// Whether it sent its `2a` message (the spec's `\E m \in msgs: m.type = "2a" /\ m.bal = b`).
        sent_2a: bool,
    },
}

/// Messages of the protocol: the spec's four message types.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Msg {
    /// Phase 1a: the leader of `bal` asks for promises.
    P1a {
        /// The ballot.
        bal: i64,
    },
    /// Phase 1b: acceptor `acc` promises `bal` and reports its last vote.
    P1b {
        /// The acceptor.
        acc: u8,
        /// The ballot promised.
        bal: i64,
        /// The ballot of its last vote (-1 if none).
        mbal: i64,
        /// The value of its last vote.
        mval: Option<Value>,
    },
    /// Phase 2a: the leader of `bal` proposes `val`.
    P2a {
        /// The ballot.
        bal: i64,
        /// The value.
        val: Value,
    },
    /// Phase 2b: acceptor `acc` votes for `val` in `bal`.
    P2b {
        /// The acceptor.
        acc: u8,
        /// The ballot.
        bal: i64,
        /// The value.
        val: Value,
    },
}

/// Actions no message triggers: a leader's `Phase1a` and `Phase2a`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Input {
    /// `Phase1a(b)` at the leader of `b`.
    Phase1a,
    /// `Phase2a(b, v)` at the leader of `b`.
    Phase2a(Value),
}

/// A bug variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// `Phase2a` may take any value voted by the quorum, not the one of the highest ballot.
    LastPromise,
    /// Acceptors reset at any time and come back with `maxBal := maxVBal`.
    ForgetPromise,
}

/// The model's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// The number of acceptors.
    pub acceptors: usize,
    /// The highest ballot: ballots are `0..=ballots`.
    pub ballots: usize,
    /// The number of values.
    pub values: usize,
    /// The bug variant, or `None` for the spec as written.
    pub bug: Option<Bug>,
}

impl Default for Config {
    /// `MCPaxosTiny`: 3 acceptors, ballots 0..1, 2 values.
    fn default() -> Self {
        Config { acceptors: 3, ballots: 1, values: 2, bug: None }
    }
}

/// The protocol.
#[derive(Clone, Debug)]
pub struct PaxosTla {
    config: Config,
}

impl PaxosTla {
    fn is_acceptor(&self, node: NodeId) -> bool {
        node.index() < self.config.acceptors
    }

    fn leader(&self, bal: i64) -> NodeId {
        NodeId((self.config.acceptors + bal as usize) as u32)
    }

    fn acceptors(&self) -> impl Iterator<Item = NodeId> + Clone {
        NodeId::all(self.config.acceptors)
    }

    fn quorum_size(&self) -> usize {
        self.config.acceptors / 2 + 1
    }

    /// The spec's `Phase2a(b, v)` enabling condition on the `1b` messages (the `sent_2a` check
    /// aside): some majority `Q` all sent a `1b` for `b`, and either none of them voted or `v`
    /// is the value of (one of) their highest-ballot votes.
    fn may_propose(&self, b: i64, v: Value, out: &Out<'_, Self>) -> bool {
        let n = self.config.acceptors;
        let q1b: Vec<(u8, i64, Option<Value>)> = out
            .mailbox()
            .filter_map(|(_, m)| match m {
                Msg::P1b { acc, bal, mbal, mval } if *bal == b => Some((*acc, *mbal, *mval)),
                _ => None,
            })
            .collect();
        (0u32..1 << n).filter(|q| q.count_ones() as usize >= self.quorum_size()).any(|q| {
            let in_q = |a: u8| q & (1 << a) != 0;
            if !(0..n as u8).filter(|a| in_q(*a)).all(|a| q1b.iter().any(|m| m.0 == a)) {
                return false;
            }
            let q1bv: Vec<(i64, Option<Value>)> =
                q1b.iter().filter(|m| in_q(m.0) && m.1 >= 0).map(|m| (m.1, m.2)).collect();
            q1bv.is_empty()
                || q1bv.iter().any(|&(mbal, mval)| {
                    mval == Some(v)
                        && (self.config.bug == Some(Bug::LastPromise) || q1bv.iter().all(|mm| mbal >= mm.0))
                })
        })
    }
}

impl Protocol for PaxosTla {
    type State = State;
    type Msg = Msg;
    type Timer = ();
    type Input = Input;

    fn init(&self, me: NodeId, _: &mut Out<'_, Self>) -> State {
        if self.is_acceptor(me) {
            State::Acceptor { max_bal: -1, max_vbal: -1, max_val: None }
        } else {
            State::Leader { sent_2a: false }
        }
    }

    /// Only the `forget-promise` variant resets acceptors: the vote is kept, the promise is
    /// lowered to it.
    fn restart(&self, me: NodeId, crashed: &State, out: &mut Out<'_, Self>) -> State {
        match crashed {
            State::Acceptor { max_vbal, max_val, .. } => {
                State::Acceptor { max_bal: *max_vbal, max_vbal: *max_vbal, max_val: *max_val }
            }
            State::Leader { .. } => self.init(me, out),
        }
    }

    fn on_message(&self, me: NodeId, state: &mut State, _: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
        let State::Acceptor { max_bal, max_vbal, max_val } = state else { return };
        let acc = me.index() as u8;
        match *msg {
            // Phase1b(a)
            Msg::P1a { bal } if bal > *max_bal => {
                *max_bal = bal;
                out.send(self.leader(bal), Msg::P1b { acc, bal, mbal: *max_vbal, mval: *max_val });
            }
            // Phase2b(a)
            Msg::P2a { bal, val } if bal >= *max_bal => {
                *max_bal = bal;
                *max_vbal = bal;
                *max_val = Some(val);
                out.send(self.leader(bal), Msg::P2b { acc, bal, val });
            }
            _ => {}
        }
    }

    fn on_input(&self, me: NodeId, state: &mut State, input: &Input, out: &mut Out<'_, Self>) {
        let State::Leader { sent_2a } = state else { return };
        let b = (me.index() - self.config.acceptors) as i64;
        match *input {
            Input::Phase1a => out.broadcast(self.acceptors(), Msg::P1a { bal: b }),
            Input::Phase2a(v) => {
                if !*sent_2a && self.may_propose(b, v, out) {
                    *sent_2a = true;
                    out.broadcast(self.acceptors(), Msg::P2a { bal: b, val: v });
                }
            }
        }
    }
}

/// The values chosen in `world`: `v` is chosen if a majority of acceptors sent `2b` for `v` in
/// the same ballot (the spec's `Chosen`).
pub fn chosen(world: &World<PaxosTla>, acceptors: usize) -> Vec<Value> {
    let mut votes: Vec<(i64, Value, u8)> = world
        .messages()
        .filter_map(|e| match e.msg {
            Msg::P2b { acc, bal, val } => Some((bal, val, acc)),
            _ => None,
        })
        .collect();
    votes.sort_unstable();
    votes.dedup();
    let mut chosen: Vec<Value> = Vec::new();
    for group in votes.chunk_by(|x, y| (x.0, x.1) == (y.0, y.1)) {
        if group.len() > acceptors / 2 && !chosen.contains(&group[0].1) {
            chosen.push(group[0].1);
        }
    }
    chosen
}

/// The model for `config`: `always "consistency"` (at most one value chosen) and
/// `sometimes "value chosen"`.
pub fn model(config: &Config) -> Model<PaxosTla> {
    let protocol = PaxosTla { config: *config };
    let a = config.acceptors;
    let mut driver = Driver::new();
    for b in 0..=config.ballots {
        let leader = NodeId((a + b) as u32);
        driver = driver.spontaneous(leader, Input::Phase1a);
        for v in 0..config.values {
            driver = driver.spontaneous(leader, Input::Phase2a(v as Value));
        }
    }
    let faults = if config.bug == Some(Bug::ForgetPromise) {
        Faults::none().resets(Budget::Unbounded).resettable(NodeId::all(a))
    } else {
        Faults::none()
    };
    Model::new(protocol)
        .nodes(a + config.ballots + 1)
        .network(NetworkKind::GrowOnly)
        .faults(faults)
        .driver(driver)
        .always("consistency", move |w| chosen(w, a).len() <= 1)
        .sometimes("value chosen", move |w| !chosen(w, a).is_empty())
}

const PARAMS: &[Param] = &[
    Param { name: "acceptors", default: "3", help: "acceptors (1 to 5)" },
    Param { name: "ballots", default: "1", help: "the highest ballot: ballots are 0..=B (0 to 4)" },
    Param { name: "values", default: "2", help: "values that may be proposed (1 to 3)" },
];
const VARIANTS: &[Variant] = &[
    Variant {
        name: "last-promise",
        help: "Phase2a takes any value the quorum voted for, not the highest-ballot one (needs 3 ballots)",
    },
    Variant { name: "forget-promise", help: "an acceptor resets and comes back with maxBal := maxVBal" },
];

fn build(settings: &Settings) -> Result<Box<dyn DynModel>, crate::ConfigError> {
    let bug = if settings.is("last-promise") {
        Some(Bug::LastPromise)
    } else if settings.is("forget-promise") {
        Some(Bug::ForgetPromise)
    } else {
        None
    };
    let config = Config {
        acceptors: settings.number("acceptors", 1..=5)?,
        ballots: settings.number("ballots", 0..=4)?,
        values: settings.number("values", 1..=3)?,
        bug,
    };
    Ok(Box::new(model(&config)))
}

/// The registry entry.
pub fn system() -> System {
    System {
        name: "paxos-tla",
        about: "Lamport's Paxos.tla: acceptors and one leader per ballot over a grow-only message set",
        params: PARAMS,
        variants: VARIANTS,
        scenarios: &[],
        build,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use foretell_check::Check;

    fn config(ballots: usize, bug: Option<Bug>) -> Config {
        Config { ballots, bug, ..Config::default() }
    }

    /// `MCPaxosTiny`: TLC's 3,921 distinct states, whichever engine explores them.
    #[test]
    fn count_equals_tlc_for_tiny() {
        let model = model(&config(1, None));
        for report in [Check::bfs(&model).run(), Check::dfs(&model).run(), Check::stateless(&model).run()] {
            report.assert_holds("consistency").assert_covered("value chosen");
            assert_eq!(report.stats.unique_states, 3_921, "{}", report.engine);
        }
    }

    /// Ballots 0..2: 185,369 distinct states.
    #[test]
    #[cfg_attr(debug_assertions, ignore = "29 s in a debug build; runs in the release-mode test command")]
    fn count_for_three_ballots() {
        let report = Check::bfs(&model(&config(2, None))).run();
        report.assert_holds("consistency");
        assert_eq!(report.stats.unique_states, 185_369);
    }

    /// Forgetting the promise on reset: a 13-step violation with ballots 0..1, which replays.
    #[test]
    fn forget_promise_is_found_in_thirteen_steps_and_replays() {
        let model = model(&config(1, Some(Bug::ForgetPromise)));
        let report = Check::bfs(&model).run();
        let violation = report.assert_violated("consistency");
        assert_eq!(violation.trace.steps.len(), 13);
        foretell_model::Simulator::new(&model).unwrap().replay(&violation.trace).expect("replays");
    }

    /// With two ballots the last-promise bug cannot show: the state space is the correct one.
    #[test]
    fn last_promise_holds_with_two_ballots() {
        let report = Check::bfs(&model(&config(1, Some(Bug::LastPromise)))).run();
        report.assert_holds("consistency");
        assert_eq!(report.stats.unique_states, 3_921);
    }

    /// With three ballots it does: a 17-step violation, which replays.
    #[test]
    fn last_promise_is_found_in_seventeen_steps_with_three_ballots() {
        let model = model(&config(2, Some(Bug::LastPromise)));
        let report = Check::bfs(&model).run();
        let violation = report.assert_violated("consistency");
        assert_eq!(violation.trace.steps.len(), 17);
        foretell_model::Simulator::new(&model).unwrap().replay(&violation.trace).expect("replays");
    }
}
