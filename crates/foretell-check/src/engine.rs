//! Private module for selective re-export: the engines, each only a frontier over the shared
//! [`crate::exploration`] core.

mod bfs;
mod dfs;
mod seen;
mod sharded_map;
mod stateless;

use crate::exploration::Exploration;
use crate::{CheckOptions, EngineKind, Report};
use foretell_model::{ModelError, Protocol, Simulator};

/// Runs the engine `options` names.
pub(crate) fn run<P: Protocol>(sim: Simulator<'_, P>, options: &CheckOptions) -> Result<Report, ModelError> {
    Ok(match options.engine {
        EngineKind::Lmc => return crate::lmc::run(&sim, options),
        EngineKind::Bfs => bfs::run(Exploration::new(sim, options), options.threads),
        EngineKind::Dfs => dfs::run(Exploration::new(sim, options), options.threads),
        EngineKind::Stateless => stateless::run(Exploration::new(sim, options)),
    })
}
