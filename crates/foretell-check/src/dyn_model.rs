//! `DynModel`: a model with its protocol type erased, so that a registry of systems and the
//! command line can check, describe and replay any of them through one interface.

use crate::{
    Check, CheckOptions, Lasso, LassoError, LassoOptions, LassoReport, Liveness, LivenessError,
    LivenessOptions, LivenessReport, Report,
};
use foretell_model::{
    Budget, Model, ModelError, NetworkKind, Protocol, ReplayError, Scenario, Simulator, Trace, TraceVerdict,
};
use serde::Serialize;
use std::sync::Arc;

/// A declared property, by name and kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PropertySummary {
    /// The name.
    pub name: String,
    /// `always`, `sometimes` or `eventually`.
    pub kind: String,
}

/// What a model is, for listings and reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ModelSummary {
    /// The node count.
    pub nodes: usize,
    /// The network kind.
    pub network: NetworkKind,
    /// The reset budget.
    pub resets: String,
    /// The loss budget.
    pub drops: String,
    /// The duplication budget.
    pub duplicates: String,
    /// The socket-error budget.
    pub socket_errors: String,
    /// The bound on FIFO queues, if any.
    pub queue_capacity: Option<usize>,
    /// The scenario searches start from, if not the initial world.
    pub start: Option<String>,
    /// The declared properties.
    pub properties: Vec<PropertySummary>,
    /// The declared specification monitors, by name.
    pub monitors: Vec<String>,
}

/// The outcome of a successful replay.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReplaySummary {
    /// Steps re-executed.
    pub steps: usize,
    /// The violation reproduced, if the trace ends in one.
    pub verdict: Option<TraceVerdict>,
}

/// Any model, whatever its protocol type.
pub trait DynModel: Send + Sync {
    /// The model's shape and properties.
    fn summary(&self) -> ModelSummary;

    /// Runs a search.
    ///
    /// # Errors
    /// The model's [`ModelError`] if it does not validate.
    fn check(&self, options: &CheckOptions) -> Result<Report, ModelError>;

    /// Runs the liveness engine (it owns its model: its walk threads may outlive a handler
    /// that never returns).
    ///
    /// # Errors
    /// A [`LivenessError`] if the model does not validate, has no liveness property, or an
    /// option is out of range.
    fn liveness(self: Arc<Self>, options: &LivenessOptions) -> Result<LivenessReport, LivenessError>;

    /// Runs the lasso engine.
    ///
    /// # Errors
    /// A [`LassoError`] if the model does not validate, nothing in it can be hot, or an option
    /// is out of range.
    fn lasso(&self, options: &LassoOptions) -> Result<LassoReport, LassoError>;

    /// Re-executes a trace against this model.
    ///
    /// # Errors
    /// A [`ReplayError`] naming the first step that departs from the trace (a model that does
    /// not validate is reported at step 0).
    fn replay(&self, trace: &Trace) -> Result<ReplaySummary, ReplayError>;

    /// The same model, starting from the world the first `steps` steps of `trace` reach (a
    /// [`Scenario`] named `name`).
    ///
    /// # Errors
    /// A message naming the first step whose event does not fit the protocol.
    fn start_from_trace(
        self: Box<Self>,
        name: String,
        trace: &Trace,
        steps: usize,
    ) -> Result<Box<dyn DynModel>, String>;
}

fn budget(b: Budget) -> String {
    b.to_string()
}

impl<P: Protocol> DynModel for Model<P> {
    fn summary(&self) -> ModelSummary {
        let faults = self.fault_budget();
        ModelSummary {
            nodes: self.node_count(),
            network: self.network_kind(),
            resets: budget(faults.resets),
            drops: budget(faults.drops),
            duplicates: budget(faults.duplicates),
            socket_errors: budget(faults.socket_errors),
            queue_capacity: self.queue_capacity_limit(),
            start: self.start_scenario().map(|s| s.name().to_string()),
            properties: self
                .properties()
                .iter()
                .map(|p| PropertySummary { name: p.name().to_string(), kind: p.kind().to_string() })
                .collect(),
            monitors: self.monitors().iter().map(|m| m.name().to_string()).collect(),
        }
    }

    fn check(&self, options: &CheckOptions) -> Result<Report, ModelError> {
        Check::with_options(self, options.clone()).try_run()
    }

    fn liveness(self: Arc<Self>, options: &LivenessOptions) -> Result<LivenessReport, LivenessError> {
        Liveness::with_options(self, options.clone()).run()
    }

    fn lasso(&self, options: &LassoOptions) -> Result<LassoReport, LassoError> {
        Lasso::new(self).options(options.clone()).run()
    }

    fn replay(&self, trace: &Trace) -> Result<ReplaySummary, ReplayError> {
        let sim = Simulator::new(self).map_err(|e| ReplayError { step: 0, reason: e.to_string() })?;
        let replayed = sim.replay(trace)?;
        Ok(ReplaySummary { steps: trace.steps.len(), verdict: replayed.verdict })
    }

    fn start_from_trace(
        self: Box<Self>,
        name: String,
        trace: &Trace,
        steps: usize,
    ) -> Result<Box<dyn DynModel>, String> {
        let prefix = {
            let sim = Simulator::new(&*self).map_err(|e| e.to_string())?;
            Scenario::from_trace(&sim, name, trace, steps)?
        };
        Ok(Box::new(self.start_from(prefix)))
    }
}
