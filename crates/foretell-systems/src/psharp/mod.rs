//! The P# liveness benchmarks of "Lasso Detection using Partial-State Caching" (Mudduluru et
//! al., FMCAD'17, Table II), ported from their P# sources as described in
//! `specs/psharp-benchmarks.md` (Proposers from the paper's own description), plus the
//! paper's Dining Philosophers (section III) and P#'s BasicPaxos.
//!
//! Each benchmark is a [`foretell_model::Protocol`] whose nodes are the P# machines (timers
//! included, so the scheduler and the fairness check see them as P# does), on one FIFO inbox
//! per node, with its P# liveness monitor as a [`foretell_model::Monitor`] and its machine
//! states as [`foretell_model::Protocol::phase`] (what P#'s default partial hash sees).
//! foretell's handlers are atomic where P#'s have a scheduling point at every send; where a bug
//! needs one inside a handler, the benchmark's module says how the handler was split. The
//! buggy version is the `--bug` variant; the default is the fixed one.

pub mod basic_paxos;
pub mod chord_lookup;
pub mod dining_philosophers;
pub mod failure_detector;
pub mod leader_election;
pub mod process_scheduler;
pub mod proposers;
pub mod replicating_storage;
#[cfg(test)]
mod script;
pub mod sliding_window;

use crate::{ConfigError, Param, Settings, System, Variant};
use foretell_check::DynModel;
use foretell_model::{Model, Protocol};

/// The benchmarks' registry entries, in Table II's order, then the two beyond it.
pub(crate) fn systems() -> Vec<System> {
    vec![
        System {
            name: "proposers",
            about: proposers::ABOUT,
            params: &[],
            variants: &[Variant { name: "duelling", help: proposers::BUG }],
            scenarios: &[],
            build: |s| boxed(proposers_model(s)?),
        },
        System {
            name: "chord-lookup",
            about: chord_lookup::ABOUT,
            params: &[],
            variants: &[Variant { name: "key-17", help: chord_lookup::BUG }],
            scenarios: &[],
            build: |s| boxed(chord_lookup_model(s)?),
        },
        System {
            name: "replicating-storage",
            about: replicating_storage::ABOUT,
            params: &[],
            variants: &[Variant { name: "stale-report", help: replicating_storage::BUG }],
            scenarios: &[],
            build: |s| boxed(replicating_storage_model(s)?),
        },
        System {
            name: "failure-detector",
            about: failure_detector::ABOUT,
            params: &[],
            variants: &[Variant { name: "late-register", help: failure_detector::BUG }],
            scenarios: &[],
            build: |s| boxed(failure_detector_model(s)?),
        },
        System {
            name: "process-scheduler",
            about: process_scheduler::ABOUT,
            params: &[],
            variants: &[Variant { name: "lost-wakeup", help: process_scheduler::BUG }],
            scenarios: &[],
            build: |s| boxed(process_scheduler_model(s)?),
        },
        System {
            name: "leader-election",
            about: leader_election::ABOUT,
            params: &[Param { name: "nodes", default: "5", help: "ring nodes (1 to 9)" }],
            variants: &[],
            scenarios: &[],
            build: |s| boxed(leader_election_model(s)?),
        },
        System {
            name: "sliding-window",
            about: sliding_window::ABOUT,
            params: &[Param {
                name: "max-seq",
                default: "5",
                help: "the window: sequence numbers are mod max-seq + 1",
            }],
            variants: &[],
            scenarios: &[],
            build: |s| boxed(sliding_window_model(s)?),
        },
        System {
            name: "dining-philosophers",
            about: dining_philosophers::ABOUT,
            params: &[Param {
                name: "philosophers",
                default: "3",
                help: "philosophers around the table (2 to 5)",
            }],
            variants: &[Variant { name: "livelock", help: dining_philosophers::BUG }],
            scenarios: &[],
            build: |s| boxed(dining_philosophers_model(s)?),
        },
        System {
            name: "basic-paxos",
            about: basic_paxos::ABOUT,
            params: &[],
            variants: &[Variant { name: "duelling", help: basic_paxos::BUG }],
            scenarios: &[],
            build: |s| boxed(basic_paxos_model(s)?),
        },
    ]
}

fn boxed<P: Protocol>(model: Model<P>) -> Result<Box<dyn DynModel>, ConfigError> {
    Ok(Box::new(model))
}

/// `model` starting where `settings` say (the benchmarks have no named scenarios).
fn started<P: Protocol>(model: Model<P>, settings: &Settings) -> Result<Model<P>, ConfigError> {
    crate::apply_scenario(model, settings, |_| None)
}

/// The typed models the settings describe (what the registry erases, and what cluster mode
/// needs).
pub(crate) fn proposers_model(s: &Settings) -> Result<Model<proposers::Proposers>, ConfigError> {
    started(proposers::model(&proposers::Config { bug: s.is("duelling") }), s)
}

pub(crate) fn basic_paxos_model(s: &Settings) -> Result<Model<basic_paxos::BasicPaxos>, ConfigError> {
    started(basic_paxos::model(&basic_paxos::Config { bug: s.is("duelling") }), s)
}

pub(crate) fn chord_lookup_model(s: &Settings) -> Result<Model<chord_lookup::ChordLookup>, ConfigError> {
    started(chord_lookup::model(&chord_lookup::Config { bug: s.is("key-17") }), s)
}

pub(crate) fn replicating_storage_model(
    s: &Settings,
) -> Result<Model<replicating_storage::ReplicatingStorage>, ConfigError> {
    started(replicating_storage::model(&replicating_storage::Config { bug: s.is("stale-report") }), s)
}

pub(crate) fn failure_detector_model(
    s: &Settings,
) -> Result<Model<failure_detector::FailureDetector>, ConfigError> {
    // The benchmark as P# has it, with untagged pongs; the fix tags them too.
    let config = if s.is("late-register") {
        failure_detector::Config::default()
    } else {
        failure_detector::Config::fixed()
    };
    started(failure_detector::model(&config), s)
}

pub(crate) fn process_scheduler_model(
    s: &Settings,
) -> Result<Model<process_scheduler::ProcessScheduler>, ConfigError> {
    started(process_scheduler::model(&process_scheduler::Config { bug: s.is("lost-wakeup") }), s)
}

pub(crate) fn leader_election_model(
    s: &Settings,
) -> Result<Model<leader_election::LeaderElection>, ConfigError> {
    let nodes = s.number("nodes", 1..=9)?;
    started(leader_election::model(&leader_election::Config { nodes }), s)
}

pub(crate) fn sliding_window_model(
    s: &Settings,
) -> Result<Model<sliding_window::SlidingWindow>, ConfigError> {
    let max_seq = s.number("max-seq", 1..=127)? as u8;
    started(sliding_window::model(&sliding_window::Config { max_seq }), s)
}

pub(crate) fn dining_philosophers_model(
    s: &Settings,
) -> Result<Model<dining_philosophers::DiningPhilosophers>, ConfigError> {
    let philosophers = s.number("philosophers", 2..=5)?;
    started(
        dining_philosophers::model(&dining_philosophers::Config { philosophers, bug: s.is("livelock") }),
        s,
    )
}
