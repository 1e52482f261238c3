//! Lamport's `Paxos.tla` (tlaplus/Examples, `PaxosHowToWinATuringAward`) as a plain Stateright
//! [`Model`], action for action: the same state space as foretell's `paxos-tla` system (3,921
//! states for 3 acceptors, 2 values and ballots 0..1; 185,369 for ballots 0..2).

use stateright::{Model, Property};
use std::collections::BTreeSet;

/// A value that may be proposed and chosen.
pub type Value = u8;

/// A message of the spec's grow-only set `msgs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

/// A state of the spec: `maxBal`, `maxVBal`, `maxVal` and `msgs`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// `maxBal[a]`: the highest ballot acceptor `a` promised or voted in (-1 for none).
    pub max_bal: Vec<i64>,
    /// `maxVBal[a]`: the highest ballot `a` voted in (-1 for none).
    pub max_vbal: Vec<i64>,
    /// `maxVal[a]`: the value `a` voted for in `max_vbal[a]`.
    pub max_val: Vec<Option<Value>>,
    /// Every message sent so far.
    pub msgs: BTreeSet<Msg>,
}

/// The spec's actions, each with the message it reads where it reads one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// `Phase1a(b)`.
    Phase1a(i64),
    /// `Phase2a(b, v)`.
    Phase2a(i64, Value),
    /// `Phase1b(a)` on the `1a` message of ballot `b`.
    Phase1b(u8, i64),
    /// `Phase2b(a)` on the `2a` message of ballot `b` and value `v`.
    Phase2b(u8, i64, Value),
}

/// `Paxos.tla` with the given constants.
#[derive(Clone, Debug)]
pub struct PaxosTla {
    /// The number of acceptors.
    pub acceptors: usize,
    /// The highest ballot: ballots are `0..=ballots`.
    pub ballots: usize,
    /// The number of values: values are `0..values`.
    pub values: usize,
}

impl PaxosTla {
    /// The spec's `Phase2a(b, v)` condition on the `1b` messages: some majority all sent a `1b`
    /// for `b`, and either none of them voted or `v` is the value of their highest vote.
    fn may_propose(&self, state: &State, b: i64, v: Value) -> bool {
        let n = self.acceptors;
        let q1b: Vec<(u8, i64, Option<Value>)> = state
            .msgs
            .iter()
            .filter_map(|m| match *m {
                Msg::P1b { acc, bal, mbal, mval } if bal == b => Some((acc, mbal, mval)),
                _ => None,
            })
            .collect();
        (0u32..1 << n).filter(|q| q.count_ones() as usize > n / 2).any(|q| {
            let in_q = |a: u8| q & (1 << a) != 0;
            if !(0..n as u8).filter(|a| in_q(*a)).all(|a| q1b.iter().any(|m| m.0 == a)) {
                return false;
            }
            let q1bv: Vec<(i64, Option<Value>)> =
                q1b.iter().filter(|m| in_q(m.0) && m.1 >= 0).map(|m| (m.1, m.2)).collect();
            q1bv.is_empty()
                || q1bv.iter().any(|&(mbal, mval)| mval == Some(v) && q1bv.iter().all(|mm| mbal >= mm.0))
        })
    }
}

/// The values chosen in `state`: a majority of acceptors voted for it in one ballot.
pub fn chosen(state: &State, acceptors: usize) -> Vec<Value> {
    let mut votes: Vec<(i64, Value, u8)> = state
        .msgs
        .iter()
        .filter_map(|m| match *m {
            Msg::P2b { acc, bal, val } => Some((bal, val, acc)),
            _ => None,
        })
        .collect();
    votes.sort_unstable();
    let mut chosen: Vec<Value> = Vec::new();
    for group in votes.chunk_by(|x, y| (x.0, x.1) == (y.0, y.1)) {
        if group.len() > acceptors / 2 && !chosen.contains(&group[0].1) {
            chosen.push(group[0].1);
        }
    }
    chosen
}

impl Model for PaxosTla {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let a = self.acceptors;
        vec![State {
            max_bal: vec![-1; a],
            max_vbal: vec![-1; a],
            max_val: vec![None; a],
            msgs: BTreeSet::new(),
        }]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        for b in 0..=self.ballots as i64 {
            actions.push(Action::Phase1a(b));
            if !state.msgs.iter().any(|m| matches!(m, Msg::P2a { bal, .. } if *bal == b)) {
                for v in 0..self.values as Value {
                    if self.may_propose(state, b, v) {
                        actions.push(Action::Phase2a(b, v));
                    }
                }
            }
        }
        for a in 0..self.acceptors {
            for m in &state.msgs {
                match *m {
                    Msg::P1a { bal } if bal > state.max_bal[a] => actions.push(Action::Phase1b(a as u8, bal)),
                    Msg::P2a { bal, val } if bal >= state.max_bal[a] => {
                        actions.push(Action::Phase2b(a as u8, bal, val))
                    }
                    _ => {}
                }
            }
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut next = last.clone();
        match action {
            Action::Phase1a(bal) => {
                next.msgs.insert(Msg::P1a { bal });
            }
            Action::Phase2a(bal, val) => {
                next.msgs.insert(Msg::P2a { bal, val });
            }
            Action::Phase1b(acc, bal) => {
                let a = acc as usize;
                next.max_bal[a] = bal;
                next.msgs.insert(Msg::P1b { acc, bal, mbal: last.max_vbal[a], mval: last.max_val[a] });
            }
            Action::Phase2b(acc, bal, val) => {
                let a = acc as usize;
                next.max_bal[a] = bal;
                next.max_vbal[a] = bal;
                next.max_val[a] = Some(val);
                next.msgs.insert(Msg::P2b { acc, bal, val });
            }
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("consistency", |m: &Self, s: &State| chosen(s, m.acceptors).len() <= 1),
            Property::sometimes("value chosen", |m: &Self, s: &State| !chosen(s, m.acceptors).is_empty()),
        ]
    }
}
