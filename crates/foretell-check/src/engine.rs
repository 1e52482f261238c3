//! Private module for selective re-export: the engines, each only a frontier over the shared
//! [`crate::exploration`] core.

mod bfs;
mod dfs;
mod seen;
mod stateless;

use crate::exploration::Exploration;
use crate::{CheckOptions, EngineKind, Report};
use foretell_model::{Protocol, Simulator};

/// Runs the engine `options` names.
pub(crate) fn run<P: Protocol>(sim: Simulator<'_, P>, options: &CheckOptions) -> Report {
    let exploration = Exploration::new(sim, options);
    match options.engine {
        EngineKind::Bfs => bfs::run(exploration, options.threads),
        EngineKind::Dfs => dfs::run(exploration, options.threads),
        EngineKind::Stateless => stateless::run(exploration),
    }
}
