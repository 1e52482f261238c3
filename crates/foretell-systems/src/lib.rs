//! Reference systems: the protocols the papers checked, each with its documented bugs as
//! switchable variants beside the fixed version, registered by name for the command line.

#![deny(missing_docs)]

pub mod actor_paxos;
pub mod paxos;
pub mod paxos_tla;
mod registry;
pub mod two_phase_commit;

pub use registry::{find, systems, ConfigError, Param, Settings, System, Variant};
