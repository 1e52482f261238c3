//! Two-phase commit as a plain Stateright [`Model`], action for action as TLA+'s `TwoPhase`:
//! the same state space as foretell's `two-phase-commit` system (288 states for 3 resource
//! managers, 8,832 for 5, 1,745,408 for 8).

use stateright::{Model, Property};
use std::collections::BTreeSet;

/// A resource manager's state (`rmState[r]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rm {
    /// Working on the transaction.
    Working,
    /// Prepared to commit.
    Prepared,
    /// Committed.
    Committed,
    /// Aborted.
    Aborted,
}

/// The transaction manager's state (`tmState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tm {
    /// Collecting `Prepared` messages.
    Init,
    /// Decided to commit.
    Committed,
    /// Decided to abort.
    Aborted,
}

/// A message of the grow-only message set (`msgs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Msg {
    /// Resource manager `r` is prepared.
    Prepared(usize),
    /// The commit decision.
    Commit,
    /// The abort decision.
    Abort,
}

/// A state of the spec: `rmState`, `tmState`, `tmPrepared` and `msgs`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// Each resource manager's state.
    pub rm: Vec<Rm>,
    /// The transaction manager's state.
    pub tm: Tm,
    /// The resource managers the transaction manager knows are prepared.
    pub tm_prepared: Vec<bool>,
    /// Every message sent so far.
    pub msgs: BTreeSet<Msg>,
}

/// The spec's actions, with the resource manager they concern.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// `TMRcvPrepared(r)`.
    TmRcvPrepared(usize),
    /// `TMCommit`.
    TmCommit,
    /// `TMAbort`.
    TmAbort,
    /// `RMPrepare(r)`.
    RmPrepare(usize),
    /// `RMChooseToAbort(r)`.
    RmChooseToAbort(usize),
    /// `RMRcvCommitMsg(r)`.
    RmRcvCommitMsg(usize),
    /// `RMRcvAbortMsg(r)`.
    RmRcvAbortMsg(usize),
}

/// Two-phase commit with `rms` resource managers.
#[derive(Clone, Debug)]
pub struct TwoPhase {
    /// The number of resource managers.
    pub rms: usize,
}

impl Model for TwoPhase {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![State {
            rm: vec![Rm::Working; self.rms],
            tm: Tm::Init,
            tm_prepared: vec![false; self.rms],
            msgs: BTreeSet::new(),
        }]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        if state.tm == Tm::Init {
            if state.tm_prepared.iter().all(|p| *p) {
                actions.push(Action::TmCommit);
            }
            actions.push(Action::TmAbort);
        }
        for r in 0..self.rms {
            if state.tm == Tm::Init && state.msgs.contains(&Msg::Prepared(r)) {
                actions.push(Action::TmRcvPrepared(r));
            }
            if state.rm[r] == Rm::Working {
                actions.push(Action::RmPrepare(r));
                actions.push(Action::RmChooseToAbort(r));
            }
            if state.msgs.contains(&Msg::Commit) {
                actions.push(Action::RmRcvCommitMsg(r));
            }
            if state.msgs.contains(&Msg::Abort) {
                actions.push(Action::RmRcvAbortMsg(r));
            }
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut next = last.clone();
        match action {
            Action::TmRcvPrepared(r) => next.tm_prepared[r] = true,
            Action::TmCommit => {
                next.tm = Tm::Committed;
                next.msgs.insert(Msg::Commit);
            }
            Action::TmAbort => {
                next.tm = Tm::Aborted;
                next.msgs.insert(Msg::Abort);
            }
            Action::RmPrepare(r) => {
                next.rm[r] = Rm::Prepared;
                next.msgs.insert(Msg::Prepared(r));
            }
            Action::RmChooseToAbort(r) | Action::RmRcvAbortMsg(r) => next.rm[r] = Rm::Aborted,
            Action::RmRcvCommitMsg(r) => next.rm[r] = Rm::Committed,
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("consistent", |_, s: &State| {
                !(s.rm.contains(&Rm::Aborted) && s.rm.contains(&Rm::Committed))
            }),
            Property::sometimes("abort agreement", |_, s: &State| s.rm.iter().all(|r| *r == Rm::Aborted)),
            Property::sometimes("commit agreement", |_, s: &State| s.rm.iter().all(|r| *r == Rm::Committed)),
        ]
    }
}
