//! One measured check: a model of one of the three families, in one tool, with one engine and
//! thread count, timed by the wall clock around the check call alone.

use foretell_check::{CheckOptions, EngineKind};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::hash::Hash;
use std::str::FromStr;
use std::time::Instant;

/// A model checker under comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tool {
    /// foretell, through [`foretell_check::Check`].
    Foretell,
    /// Stateright 0.31, through its `CheckerBuilder`.
    Stateright,
    /// [`crate::hand_written`]: two-phase commit only, breadth-first, one thread.
    HandWritten,
}

/// A search order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Engine {
    /// Breadth-first.
    Bfs,
    /// Depth-first.
    Dfs,
}

/// A family of models, as named on the command line (`--model`, `--only`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// Two-phase commit (TLA+'s `TwoPhase`); the size is the number of resource managers.
    TwoPhase,
    /// Lamport's `Paxos.tla` with 3 acceptors and 2 values; the size is the highest ballot.
    PaxosTla,
    /// Stateright's actor Paxos with 3 servers; the size is the number of clients.
    ActorPaxos,
}

/// A model: a family and its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Spec {
    /// The family.
    pub family: Family,
    /// Its size parameter (resource managers, highest ballot, or clients).
    pub size: usize,
}

/// The outcome of one check.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Distinct states, the initial one included.
    pub states: u64,
    /// Wall-clock seconds of the check call.
    pub seconds: f64,
    /// The process's peak resident set size in bytes (`getrusage`: Linux's `VmHWM`), when
    /// measured in a child process of its own.
    pub peak_rss_bytes: Option<u64>,
}

macro_rules! names {
    ($type:ty { $($variant:ident = $name:literal),* }) => {
        impl $type {
            /// Every value, in order.
            pub const ALL: &'static [$type] = &[$(<$type>::$variant),*];

            /// The command-line name.
            pub fn name(self) -> &'static str {
                match self { $(<$type>::$variant => $name),* }
            }
        }

        impl fmt::Display for $type {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(self.name())
            }
        }

        impl FromStr for $type {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                Self::ALL.iter().copied().find(|v| v.name() == s).ok_or_else(|| {
                    let known: Vec<&str> = Self::ALL.iter().map(|v| v.name()).collect();
                    format!("unknown {s:?} (known: {})", known.join(", "))
                })
            }
        }
    };
}

names!(Tool { Foretell = "foretell", Stateright = "stateright", HandWritten = "hand-written" });
names!(Engine { Bfs = "bfs", Dfs = "dfs" });
names!(Family { TwoPhase = "2pc", PaxosTla = "paxos-tla", ActorPaxos = "actor-paxos" });

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.family {
            Family::TwoPhase => write!(f, "2pc N={}", self.size),
            Family::PaxosTla => write!(f, "paxos-tla ballots 0..{}", self.size),
            Family::ActorPaxos => write!(f, "actor-paxos C={}", self.size),
        }
    }
}

impl Spec {
    /// The distinct-state count published for this model (TLC's for the TLA+ specs, Stateright's
    /// for its actor Paxos), where known.
    pub fn published_states(self) -> Option<u64> {
        let known: &[(usize, u64)] = match self.family {
            Family::TwoPhase => &[
                (3, 288),
                (4, 1_568),
                (5, 8_832),
                (6, 50_816),
                (7, 296_448),
                (8, 1_745_408),
                (9, 10_340_352),
            ],
            Family::PaxosTla => &[(1, 3_921), (2, 185_369)],
            Family::ActorPaxos => &[(1, 265), (2, 16_668), (3, 1_194_428)],
        };
        known.iter().find(|(size, _)| *size == self.size).map(|(_, states)| *states)
    }
}

/// Whether `tool` can check `spec` with `engine` and `threads` worker threads: the hand-written
/// search is one breadth-first search of two-phase commit on one thread.
pub fn supports(tool: Tool, spec: Spec, engine: Engine, threads: usize) -> bool {
    tool != Tool::HandWritten || (spec.family == Family::TwoPhase && engine == Engine::Bfs && threads == 1)
}

/// Checks `spec` with `tool`, `engine` and `threads` worker threads (at least 1), in this
/// process.
///
/// # Panics
/// If `tool` does not [support](supports) the configuration.
pub fn run(tool: Tool, spec: Spec, engine: Engine, threads: usize) -> Measurement {
    assert!(
        supports(tool, spec, engine, threads),
        "{tool} cannot check {spec} ({engine}, {threads} threads)"
    );
    match tool {
        Tool::Foretell => run_foretell(spec, engine, threads),
        Tool::Stateright => run_stateright(spec, engine, threads),
        Tool::HandWritten => run_hand_written(spec),
    }
}

fn run_hand_written(spec: Spec) -> Measurement {
    let start = Instant::now();
    let outcome = crate::hand_written::two_phase_commit(spec.size);
    let seconds = start.elapsed().as_secs_f64();
    assert!(outcome.consistent, "the hand-written search found two-phase commit inconsistent");
    Measurement { states: outcome.states, seconds, peak_rss_bytes: None }
}

/// foretell as its command runs a check: the registered system, built with the family's size
/// parameter and checked through its [`foretell_check::DynModel`], whose search is compiled
/// with the systems crate (as for `foretell check`) rather than in this crate.
fn run_foretell(spec: Spec, engine: Engine, threads: usize) -> Measurement {
    let (name, parameter) = match spec.family {
        Family::TwoPhase => ("two-phase-commit", "rms"),
        Family::PaxosTla => ("paxos-tla", "ballots"),
        Family::ActorPaxos => ("stateright-paxos", "clients"),
    };
    let system = foretell_systems::find(name).expect("the benchmark's systems are registered");
    let settings = system
        .settings(None, &[(parameter.to_string(), spec.size.to_string())])
        .unwrap_or_else(|e| panic!("{name} with {parameter}={}: {e}", spec.size));
    let model = system.build_model(&settings).unwrap_or_else(|e| panic!("{name}: {e}"));
    let engine = match engine {
        Engine::Bfs => EngineKind::Bfs,
        Engine::Dfs => EngineKind::Dfs,
    };
    let options = CheckOptions { engine, threads, ..CheckOptions::default() };
    let start = Instant::now();
    let report = model.check(&options).unwrap_or_else(|e| panic!("{name} does not validate: {e}"));
    let seconds = start.elapsed().as_secs_f64();
    assert!(report.completion.is_complete(), "foretell did not finish: {:?}", report.completion);
    Measurement { states: report.stats.unique_states, seconds, peak_rss_bytes: None }
}

fn run_stateright(spec: Spec, engine: Engine, threads: usize) -> Measurement {
    use crate::stateright_models::{actor_paxos, paxos_tla, two_phase};
    match spec.family {
        Family::TwoPhase => check_stateright(two_phase::TwoPhase { rms: spec.size }, engine, threads),
        Family::PaxosTla => {
            let model = paxos_tla::PaxosTla { acceptors: 3, ballots: spec.size, values: 2 };
            check_stateright(model, engine, threads)
        }
        Family::ActorPaxos => check_stateright(actor_paxos::model(spec.size), engine, threads),
    }
}

fn check_stateright<M>(model: M, engine: Engine, threads: usize) -> Measurement
where
    M: stateright::Model + Send + Sync + 'static,
    M::State: Hash + Send + Sync + Clone + PartialEq + 'static,
    M::Action: Clone + PartialEq,
{
    use stateright::Checker;
    let builder = model.checker().threads(threads);
    let start = Instant::now();
    let states = match engine {
        Engine::Bfs => builder.spawn_bfs().join().unique_state_count(),
        Engine::Dfs => builder.spawn_dfs().join().unique_state_count(),
    };
    let seconds = start.elapsed().as_secs_f64();
    Measurement { states: states as u64, seconds, peak_rss_bytes: None }
}
