//! `Check`: the builder a user's code and tests start a run with.

use crate::{CheckOptions, EngineKind, FingerprintBits, Interrupt, Memory, Progress, Pruning, Report};
use foretell_model::{Model, ModelError, Protocol, Simulator};
use std::sync::Arc;
use std::time::Duration;

/// A run being configured.
///
/// # Examples
/// ```text
/// let report = Check::bfs(&model).depth_max(30).run();
/// report.assert_holds("agreement");
/// ```
#[must_use = "a check does nothing until it is run"]
pub struct Check<'m, P: Protocol> {
    model: &'m Model<P>,
    options: CheckOptions,
}

impl<'m, P: Protocol> Check<'m, P> {
    /// A run of `model` with the given options.
    pub fn with_options(model: &'m Model<P>, options: CheckOptions) -> Self {
        Check { model, options }
    }

    /// Stateful breadth-first search: shortest counterexamples.
    pub fn bfs(model: &'m Model<P>) -> Self {
        Self::with_options(model, CheckOptions { engine: EngineKind::Bfs, ..Default::default() })
    }

    /// Stateful depth-first search.
    pub fn dfs(model: &'m Model<P>) -> Self {
        Self::with_options(model, CheckOptions { engine: EngineKind::Dfs, ..Default::default() })
    }

    /// Stateless depth-first search by re-execution, with fingerprint pruning.
    pub fn stateless(model: &'m Model<P>) -> Self {
        Self::with_options(model, CheckOptions { engine: EngineKind::Stateless, ..Default::default() })
    }

    /// Local model checking, with every combination of local states checked (LMC-GEN); see
    /// [`Check::lmc_options`] for the projected form and the bounds.
    pub fn lmc(model: &'m Model<P>) -> Self {
        Self::with_options(model, CheckOptions { engine: EngineKind::Lmc, ..Default::default() })
    }

    /// Sets what local model checking does.
    pub fn lmc_options(mut self, lmc: crate::LmcOptions) -> Self {
        self.options.lmc = lmc;
        self
    }

    /// Explores no world more than `depth` steps from an initial world.
    pub fn depth_max(mut self, depth: usize) -> Self {
        self.options.depth_max = Some(depth);
        self
    }

    /// Stops after `states` distinct worlds.
    pub fn states_max(mut self, states: u64) -> Self {
        self.options.states_max = Some(states);
        self
    }

    /// Stops after `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.options.timeout = Some(timeout);
        self
    }

    /// Sets the visited-set width.
    pub fn fingerprint_bits(mut self, bits: FingerprintBits) -> Self {
        self.options.fingerprint_bits = bits;
        self
    }

    /// Runs the stateful search on `threads` worker threads (at most 64): breadth-first level by
    /// level, depth-first with work stealing.
    pub fn threads(mut self, threads: usize) -> Self {
        self.options.threads = threads;
        self
    }

    /// Sets how the stateful engines store seen worlds.
    pub fn memory(mut self, memory: Memory) -> Self {
        self.options.memory = memory;
        self
    }

    /// Stops cleanly, with a partial report, when resident memory reaches `bytes`.
    pub fn memory_max(mut self, bytes: u64) -> Self {
        self.options.memory_max = Some(bytes);
        self
    }

    /// Sets the stateless engine's pruning.
    pub fn pruning(mut self, pruning: Pruning) -> Self {
        self.options.pruning = pruning;
        self
    }

    /// Stops cleanly when `interrupt` is raised.
    pub fn interrupt(mut self, interrupt: Interrupt) -> Self {
        self.options.interrupt = Some(interrupt);
        self
    }

    /// Sends progress snapshots to `sink`.
    pub fn progress(mut self, sink: impl Fn(&Progress) + Send + Sync + 'static) -> Self {
        self.options.progress = Some(Arc::new(sink));
        self
    }

    /// Runs the search.
    ///
    /// # Errors
    /// The model's [`ModelError`] if it does not validate.
    pub fn try_run(self) -> Result<Report, ModelError> {
        let sim = Simulator::new(self.model)?;
        crate::engine::run(sim, &self.options)
    }

    /// Runs the search.
    ///
    /// # Panics
    /// If the model does not validate (use [`Check::try_run`] to get the error instead).
    pub fn run(self) -> Report {
        self.try_run().unwrap_or_else(|e| panic!("invalid model: {e}"))
    }
}
