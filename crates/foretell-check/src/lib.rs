//! foretell's engines.
//!
//! Every engine drives the one [`foretell_model::Simulator`] and differs only in how it picks the
//! next step: [`EngineKind::Bfs`] (stateful breadth-first, shortest counterexamples),
//! [`EngineKind::Dfs`] (stateful depth-first) and [`EngineKind::Stateless`] (depth-first by
//! re-execution of choice sequences, MaceMC's search). What they share — property checks,
//! bounds, statistics, interruption, progress, trace reconstruction — lives in one exploration
//! core, so an engine is only its frontier. Engines return a [`Report`] and never print.
//!
//! ```
//! use foretell_check::Check;
//! # use foretell_model::*;
//! # struct Counter;
//! # impl Protocol for Counter {
//! #     type State = u8; type Msg = (); type Timer = (); type Input = ();
//! #     fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> u8 { 0 }
//! #     fn on_message(&self, _: NodeId, _: &mut u8, _: NodeId, _: &(), _: &mut Out<'_, Self>) {}
//! #     fn on_input(&self, _: NodeId, s: &mut u8, _: &(), _: &mut Out<'_, Self>) { *s += 1 }
//! # }
//! let model = Model::new(Counter)
//!     .driver(Driver::new().spontaneous(NodeId(0), ()))
//!     .always("below three", |w: &World<Counter>| *w.state(NodeId(0)) < 3);
//! let report = Check::bfs(&model).run();
//! let violation = report.assert_violated("below three");
//! assert_eq!(violation.trace.steps.len(), 3);
//! ```

#![deny(missing_docs)]

mod check;
mod dyn_model;
mod engine;
mod exploration;
mod fingerprint_set;
mod lasso;
mod liveness;
mod lmc;
mod memory;
mod options;
mod packed_set;
mod report;
mod segmented_vec;
mod shared_path;
mod stop;
mod teardown;
mod zeroed_pages;

pub use check::Check;
pub use dyn_model::{DynModel, ModelSummary, PropertySummary, ReplaySummary};
pub use lasso::{
    FoundKind, HashChoice, Lasso, LassoCompletion, LassoError, LassoFindingReport, LassoMethod, LassoOptions,
    LassoReport, SamplingMethod, SchedulerKind, SchedulerStats, Schedulers, CONFIRM_ITERATIONS, PORTFOLIO,
};
pub use liveness::{
    describe as describe_trace, Case, Liveness, LivenessError, LivenessOptions, LivenessProgress,
    LivenessReport, LivenessSink, LivenessStats, LivenessVerdict, Prefix,
};
pub use lmc::{LmcMode, LmcOptions, LmcStats};
pub use memory::{default_budget, over_budget, peak_resident_bytes, prepare_peak};
pub use options::{
    parse_bytes, CheckOptions, EngineKind, FingerprintBits, Interrupt, Memory, Progress, ProgressSink,
    Pruning,
};
pub use report::{Completion, Omission, PropertyReport, Report, Stats, Status, Violation};
