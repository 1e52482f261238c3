//! Private module for selective re-export: the engines, each only a frontier over the shared
//! [`crate::exploration`] core.

mod bfs;
mod dfs;
mod seen;
mod sharded_map;
mod stateless;

use crate::exploration::Exploration;
use crate::{CheckOptions, EngineKind, Memory, Report};
use foretell_model::{ModelError, Protocol, Simulator};

/// Runs the engine `options` names.
pub(crate) fn run<P: Protocol>(sim: Simulator<'_, P>, options: &CheckOptions) -> Result<Report, ModelError> {
    fits_in_memory(options)?;
    crate::teardown::settle();
    Ok(match options.engine {
        EngineKind::Lmc => return crate::lmc::run(&sim, options),
        EngineKind::Bfs => bfs::run(Exploration::new(sim, options), options.threads),
        EngineKind::Dfs => dfs::run(Exploration::new(sim, options), options.threads),
        EngineKind::Stateless => stateless::run(Exploration::new(sim, options)),
    })
}

/// Refuses a bitstate filter larger than the machine's memory: it is allocated whole, and its
/// bits are set all over it, so such a filter would end the process (an allocation failure, or
/// the system's out-of-memory killer) rather than the search.
fn fits_in_memory(options: &CheckOptions) -> Result<(), ModelError> {
    let Memory::Bitstate { bytes, .. } = options.memory else { return Ok(()) };
    match crate::memory::physical_bytes() {
        Some(physical) if bytes > physical => Err(ModelError::BadOptions(format!(
            "a bitstate filter of {} MiB is larger than this machine's memory ({} MiB)",
            bytes >> 20,
            physical >> 20
        ))),
        _ => Ok(()),
    }
}
