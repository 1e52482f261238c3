//! foretell vs Stateright: the same three state spaces written for both tools, and one measured
//! check of either, which the `vs-stateright` benchmark binary runs in child processes.
//!
//! [`stateright_models`] holds the Stateright side; the foretell side is the registered systems
//! `two-phase-commit`, `paxos-tla` and `stateright-paxos` of `foretell-systems`. [`measure::run`]
//! checks one model in one tool and times the check call alone. [`hand_written`] is the third
//! contestant on two-phase commit: a plain breadth-first search written for that model alone.
//! [`cli`] is the command both benchmark binaries run.

pub mod cli;
pub mod hand_written;
pub mod measure;
pub mod stateright_models;
mod table;
