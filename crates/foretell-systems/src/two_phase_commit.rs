//! Two-phase commit, node for node as TLA+'s `TwoPhase` (Gray and Lamport, "Consensus on
//! Transaction Commit"; tlaplus/Examples `transaction_commit/TwoPhase.tla`).
//!
//! Node 0 is the transaction manager (TM), nodes 1..=N the resource managers (RMs). Messages
//! live in a grow-only set, as in the spec, so a message is never consumed and its receipt may
//! repeat. Actions that no message triggers (`TMCommit`, `TMAbort`, `RMPrepare`,
//! `RMChooseToAbort`) are spontaneous driver inputs. The world is then in one-to-one
//! correspondence with the spec's state (`rmState`, `tmState`, `tmPrepared`, `msgs`), so the
//! distinct-state counts equal TLC's: 288 for N = 3, 8,832 for N = 5, 50,816 for N = 6.
//!
//! The RMs are interchangeable ([`rm_symmetry`]). [`model_symmetric`] (`--set symmetry=1`)
//! declares it, and a search that stores canonical fingerprints then visits each orbit of
//! states under renaming of the RMs once: 80 for N = 3, 166 for N = 4, 314 for N = 5, 553 for
//! N = 6.

use crate::{Param, Settings, System, Variant};
use foretell_check::DynModel;
use foretell_model::{Driver, Model, NetworkKind, NodeId, Out, Permutation, Protocol, Symmetry, World};
use serde::{Deserialize, Serialize};

/// A resource manager's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RmState {
    /// Working on the transaction.
    Working,
    /// Prepared to commit.
    Prepared,
    /// Committed.
    Committed,
    /// Aborted.
    Aborted,
}

/// The transaction manager's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TmState {
    /// Collecting `Prepared` messages.
    Init,
    /// Decided to commit.
    Committed,
    /// Decided to abort.
    Aborted,
}

/// A node's state: the TM's or an RM's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum State {
    /// The transaction manager: its decision and which RMs it knows are prepared.
    Tm {
        /// The decision.
        state: TmState,
        /// `prepared[i]`: RM `i + 1` is known to be prepared.
        prepared: Vec<bool>,
    },
    /// A resource manager.
    Rm(RmState),
}

/// Messages of the protocol.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Msg {
    /// An RM tells the TM it is prepared.
    Prepared,
    /// The TM's commit decision.
    Commit,
    /// The TM's abort decision.
    Abort,
}

/// Actions no message triggers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Input {
    /// TM: commit if every RM is prepared.
    Commit,
    /// TM: abort while undecided.
    Abort,
    /// RM: prepare while working.
    Prepare,
    /// RM: abort on its own while working.
    ChooseToAbort,
}

/// The protocol.
#[derive(Clone, Debug)]
pub struct TwoPhase {
    rms: usize,
    early_commit: bool,
}

const TM: NodeId = NodeId(0);

impl Protocol for TwoPhase {
    type State = State;
    type Msg = Msg;
    type Timer = ();
    type Input = Input;

    fn init(&self, me: NodeId, _: &mut Out<'_, Self>) -> State {
        if me == TM {
            State::Tm { state: TmState::Init, prepared: vec![false; self.rms] }
        } else {
            State::Rm(RmState::Working)
        }
    }

    fn on_message(&self, _: NodeId, state: &mut State, from: NodeId, msg: &Msg, _: &mut Out<'_, Self>) {
        match (state, msg) {
            (State::Tm { state: TmState::Init, prepared }, Msg::Prepared) => {
                prepared[from.index() - 1] = true
            }
            (State::Rm(rm), Msg::Commit) => *rm = RmState::Committed,
            (State::Rm(rm), Msg::Abort) => *rm = RmState::Aborted,
            _ => {}
        }
    }

    fn on_input(&self, _: NodeId, state: &mut State, input: &Input, out: &mut Out<'_, Self>) {
        match (state, input) {
            (State::Tm { state: tm @ TmState::Init, prepared }, Input::Commit)
                if prepared.iter().all(|p| *p) || (self.early_commit && prepared.iter().any(|p| *p)) =>
            {
                *tm = TmState::Committed;
                let rms = out.peers();
                out.broadcast(rms, Msg::Commit);
            }
            (State::Tm { state: tm @ TmState::Init, .. }, Input::Abort) => {
                *tm = TmState::Aborted;
                let rms = out.peers();
                out.broadcast(rms, Msg::Abort);
            }
            (State::Rm(rm @ RmState::Working), Input::Prepare) => {
                *rm = RmState::Prepared;
                out.send(TM, Msg::Prepared);
            }
            (State::Rm(rm @ RmState::Working), Input::ChooseToAbort) => *rm = RmState::Aborted,
            _ => {}
        }
    }
}

fn rm_states(world: &World<TwoPhase>) -> impl Iterator<Item = RmState> + Clone + '_ {
    world.states().filter_map(|s| match s {
        State::Rm(rm) => Some(*rm),
        State::Tm { .. } => None,
    })
}

/// The model with `rms` resource managers: `always "consistent"` (no RM committed while another
/// aborted), and the two agreement outcomes as `sometimes` goals. With `early_commit`, the TM
/// commits as soon as one RM is prepared — the classic mistake of not waiting for every vote.
pub fn model(rms: usize, early_commit: bool) -> Model<TwoPhase> {
    let mut driver = Driver::new().spontaneous(TM, Input::Commit).spontaneous(TM, Input::Abort);
    for rm in NodeId::all(rms + 1).skip(1) {
        driver = driver.spontaneous(rm, Input::Prepare).spontaneous(rm, Input::ChooseToAbort);
    }
    Model::new(TwoPhase { rms, early_commit })
        .nodes(rms + 1)
        .network(NetworkKind::GrowOnly)
        .driver(driver)
        .always("consistent", |w| {
            let mut states = rm_states(w);
            !(states.clone().any(|s| s == RmState::Committed) && states.any(|s| s == RmState::Aborted))
        })
        .sometimes("abort agreement", |w| rm_states(w).all(|s| s == RmState::Aborted))
        .sometimes("commit agreement", |w| rm_states(w).all(|s| s == RmState::Committed))
}

/// The RMs' symmetry: renaming RMs permutes the TM's `prepared` vector; RM states, messages (the
/// sender is in the envelope) and inputs hold no ids.
pub fn rm_symmetry(rms: usize) -> Symmetry<TwoPhase> {
    Symmetry::among(NodeId::all(rms + 1).skip(1)).states(|state: &State, p: &Permutation| match state {
        State::Tm { state, prepared } => {
            let mut renamed = vec![false; prepared.len()];
            for (i, known) in prepared.iter().enumerate() {
                renamed[p.apply(NodeId::new(i + 1)).index() - 1] = *known;
            }
            State::Tm { state: *state, prepared: renamed }
        }
        State::Rm(rm) => State::Rm(*rm),
    })
}

/// [`model`] with [`rm_symmetry`]: a search visits each orbit of states once.
pub fn model_symmetric(rms: usize, early_commit: bool) -> Model<TwoPhase> {
    model(rms, early_commit).symmetry(rm_symmetry(rms))
}

const PARAMS: &[Param] = &[
    Param { name: "rms", default: "3", help: "resource managers (1 to 12)" },
    Param { name: "symmetry", default: "0", help: "1: visit states only up to renaming the RMs" },
];
const VARIANTS: &[Variant] =
    &[Variant { name: "early-commit", help: "the TM commits once any RM is prepared, not all" }];

fn build(settings: &Settings) -> Result<Box<dyn DynModel>, crate::ConfigError> {
    let (rms, early_commit) = (settings.number("rms", 1..=12)?, settings.is("early-commit"));
    if settings.number("symmetry", 0..=1)? == 1 {
        Ok(Box::new(model_symmetric(rms, early_commit)))
    } else {
        Ok(Box::new(model(rms, early_commit)))
    }
}

/// The registry entry.
pub fn system() -> System {
    System {
        name: "two-phase-commit",
        about: "TLA+'s TwoPhase: a transaction manager and N resource managers over a grow-only message set",
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

    /// The distinct-state counts equal TLC's (and Stateright's) for the same spec, whichever
    /// engine explores them.
    #[test]
    fn counts_equal_tlc_for_three_and_five_rms() {
        for (rms, expected) in [(3, 288), (5, 8_832)] {
            let model = model(rms, false);
            for report in [Check::bfs(&model).run(), Check::dfs(&model).run(), Check::stateless(&model).run()]
            {
                report
                    .assert_holds("consistent")
                    .assert_covered("abort agreement")
                    .assert_covered("commit agreement");
                assert_eq!(report.stats.unique_states, expected, "{} with {rms} RMs", report.engine);
            }
        }
    }

    /// The BFS depth equals TLC's (11 for N = 3, counting the initial state as 1).
    #[test]
    fn bfs_depth_matches_tlc() {
        assert_eq!(Check::bfs(&model(3, false)).run().stats.max_depth + 1, 11);
    }

    /// Six RMs: TwoPhase.tla's comment says 50,816 reachable states.
    #[test]
    fn count_equals_tlc_for_six_rms() {
        assert_eq!(Check::bfs(&model(6, false)).run().stats.unique_states, 50_816);
    }

    /// The early-commit bug: BFS finds the shortest inconsistency (one RM prepares, the TM
    /// receives it and commits, an RM that never prepared aborts on its own, the commit reaches
    /// the prepared RM), and the trace replays.
    #[test]
    fn early_commit_is_found_in_five_steps_and_replays() {
        let model = model(2, true);
        let report = Check::bfs(&model).run();
        let violation = report.assert_violated("consistent");
        assert_eq!(violation.trace.steps.len(), 5);
        foretell_model::Simulator::new(&model).unwrap().replay(&violation.trace).expect("replays");
    }

    /// The engines store canonical fingerprints: breadth- and depth-first search, on one thread
    /// or two (four different exploration orders), count exactly the orbits of the true
    /// canonical form, run after run. (Stateright's sort-based reduction gives 107 for N = 3 and
    /// 665 for N = 5, depending on search order.)
    #[test]
    fn engines_count_orbits_on_any_thread_count_run_after_run() {
        for (rms, expected) in [(3, 80), (4, 166), (5, 314), (6, 553)] {
            let model = model_symmetric(rms, false);
            for run in 0..10 {
                for threads in [1, 2] {
                    let bfs = Check::bfs(&model).threads(threads).run();
                    bfs.assert_holds("consistent");
                    assert_eq!(
                        bfs.stats.unique_states, expected,
                        "bfs, {rms} RMs, {threads} threads, run {run}"
                    );
                    let dfs = Check::dfs(&model).threads(threads).run();
                    assert_eq!(
                        dfs.stats.unique_states, expected,
                        "dfs, {rms} RMs, {threads} threads, run {run}"
                    );
                }
            }
        }
    }

    /// The symmetric model still finds early commit, with a trace that replays.
    #[test]
    fn symmetry_keeps_violations_and_their_traces() {
        let model = model_symmetric(3, true);
        let report = Check::bfs(&model).threads(2).run();
        let violation = report.assert_violated("consistent");
        assert_eq!(violation.trace.steps.len(), 5);
        foretell_model::Simulator::new(&model).unwrap().replay(&violation.trace).expect("replays");
    }

    /// RM 1 preparing and RM 2 preparing are one state up to renaming — also once the TM has
    /// recorded it in `prepared` — and a genuinely different state is not.
    #[test]
    fn renamed_steps_share_a_canonical_fingerprint() {
        use foretell_model::{ChoiceOdometer, Event, EventOf, Simulator};
        let model = model_symmetric(3, false);
        let sim = Simulator::new(&model).expect("a valid model");
        let run = |events: &[EventOf<TwoPhase>]| {
            let mut world = None;
            sim.initial_worlds(|_, w, _| world = Some(w));
            let mut world = world.expect("an initial world");
            for event in events {
                let action = sim.find_action(&world, event).expect("enabled");
                world = sim.step(&world, action, &mut ChoiceOdometer::new(), false).world;
            }
            world
        };
        let prepare = |rm: u32| Event::Spontaneous { node: NodeId(rm), input: Input::Prepare };
        let receive = |rm: u32| Event::Deliver { from: NodeId(rm), to: TM, msg: Msg::Prepared };
        let canonical =
            |w: &World<TwoPhase>| model.symmetry_ref().expect("symmetric").canonical_fingerprint(w);
        let one = run(&[prepare(1)]);
        let two = run(&[prepare(2)]);
        assert_ne!(one.fingerprint(), two.fingerprint());
        assert_eq!(canonical(&one), canonical(&two));
        let one_recorded = run(&[prepare(1), receive(1), prepare(3)]);
        let two_recorded = run(&[prepare(3), prepare(2), receive(2)]);
        assert_eq!(canonical(&one_recorded), canonical(&two_recorded));
        // Two RMs prepared in both, but the TM has recorded a different number of them.
        let both_recorded = run(&[prepare(1), receive(1), prepare(3), receive(3)]);
        assert_ne!(canonical(&one_recorded), canonical(&both_recorded));
        assert_ne!(canonical(&one), canonical(&one_recorded));
    }

    /// The registry's `symmetry` parameter is a 0/1 switch.
    #[test]
    fn symmetry_is_a_parameter() {
        let system = system();
        for (value, accepted) in [("0", true), ("1", true), ("2", false)] {
            let settings =
                system.settings(None, &[("symmetry".into(), value.into())]).expect("known parameter");
            assert_eq!((system.build)(&settings).is_ok(), accepted, "symmetry={value}");
        }
        assert!(model_symmetric(4, true).validate().is_ok());
    }
}
