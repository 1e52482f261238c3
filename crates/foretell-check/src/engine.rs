//! Private module for selective re-export: the engines, each only a frontier over the shared
//! [`crate::exploration`] core.

mod stateful;
mod stateless;

use crate::exploration::Exploration;
use crate::{CheckOptions, EngineKind, Report};
use foretell_model::{Protocol, Simulator};
use std::collections::VecDeque;

/// Runs the engine `options` names.
pub(crate) fn run<P: Protocol>(sim: Simulator<'_, P>, options: &CheckOptions) -> Report {
    let exploration = Exploration::new(sim, options);
    match options.engine {
        EngineKind::Bfs => stateful::run(exploration, VecDeque::new()),
        EngineKind::Dfs => stateful::run(exploration, Vec::new()),
        EngineKind::Stateless => stateless::run(exploration),
    }
}
