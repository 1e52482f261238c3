//! Reference systems: the protocols the papers checked, each with its documented bugs as
//! switchable variants beside the fixed version, registered by name for the command line.

#![deny(missing_docs)]

pub mod actor_paxos;
pub mod chord;
#[cfg(feature = "cluster")]
mod cluster_registry;
pub mod mace_transport;
pub mod paxos;
pub mod paxos_tla;
pub mod psharp;
pub mod randtree;
mod registry;
pub mod two_phase_commit;

#[cfg(feature = "cluster")]
pub use cluster_registry::cluster_model;
pub use registry::{
    apply_scenario, find, systems, ConfigError, Param, ScenarioInfo, Settings, Start, System, Variant,
};
