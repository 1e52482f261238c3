//! The lasso engine's report: what was run, the counts the paper's Table II shows (buggy
//! executions, false positives, trace and cycle lengths, discarded cycles, time), per scheduler,
//! and the first finding with its replayable trace.

use super::scheduler::{SchedulerKind, Schedulers};
use super::{FoundKind, HashChoice, LassoMethod, LassoOptions, StreamResult};
use foretell_model::Trace;
use std::fmt::{self, Write as _};
use std::time::Duration;

/// How a lasso run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LassoCompletion {
    /// Every execution asked for ran (or, for `exact`, the whole graph was explored).
    Finished,
    /// A `dfs` scheduler enumerated every schedule before the executions ran out.
    SchedulesExhausted,
    /// The exact method reached its bound on worlds.
    WorldsBound,
    /// The time bound was reached.
    TimeBound,
    /// The run was interrupted.
    Interrupted,
}

/// One scheduler's share of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedulerStats {
    /// The scheduler.
    pub kind: SchedulerKind,
    /// Executions it ran.
    pub executions: u64,
    /// Those that reported a liveness bug.
    pub buggy: u64,
}

/// A finding with its trace.
#[derive(Clone, Debug)]
pub struct LassoFindingReport {
    /// The execution that found it (0 for `exact`).
    pub execution: u64,
    /// The scheduler that ran it (`None` for `exact`).
    pub scheduler: Option<SchedulerKind>,
    /// What it is.
    pub kind: FoundKind,
    /// The trace: the stem and one iteration of the cycle, with the lasso marked.
    pub trace: Trace,
    /// Whether confirmation showed it to be a false positive (`None`: not confirmed).
    pub false_positive: Option<bool>,
}

/// The size of the exact method's graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExactStats {
    /// Worlds (with monitor states).
    pub worlds: u64,
    /// Steps between them.
    pub edges: u64,
    /// Whether every world was expanded.
    pub complete: bool,
    /// Strongly connected components examined.
    pub components: u64,
    /// Fairness refinements.
    pub refinements: u64,
}

/// What a lasso run did and found.
#[derive(Clone, Debug)]
pub struct LassoReport {
    /// The method.
    pub method: LassoMethod,
    /// The scheduler or portfolio.
    pub schedulers: Schedulers,
    /// The seed.
    pub seed: u64,
    /// `B`, `TT`, `RT` and the hash, as run.
    pub max_steps: usize,
    /// `TT`.
    pub temperature_threshold: usize,
    /// `RT`.
    pub replays: usize,
    /// The hash compared.
    pub hash: HashChoice,
    /// The monitors watched.
    pub monitors: Vec<String>,
    /// Executions run.
    pub executions: u64,
    /// Executions that reported a liveness bug.
    pub buggy: u64,
    /// Executions that ended in a safety violation.
    pub safety: u64,
    /// Reports that confirmation showed to be false (`None` when not confirmed).
    pub false_positives: Option<u64>,
    /// Hot, fair candidate cycles whose replay failed (the paper's `D`).
    pub discarded: u64,
    /// Steps executed, replays included.
    pub steps: u64,
    trace_lengths: u64,
    cycle_lengths: u64,
    cycles: u64,
    /// Each scheduler's share.
    pub by_scheduler: Vec<SchedulerStats>,
    /// The first liveness finding (by execution number).
    pub finding: Option<LassoFindingReport>,
    /// The first safety violation (by execution number).
    pub violation: Option<LassoFindingReport>,
    /// The exact method's graph.
    pub exact: Option<ExactStats>,
    /// How the run ended.
    pub completion: LassoCompletion,
    /// Wall-clock time.
    pub elapsed: Duration,
}

impl LassoReport {
    pub(crate) fn new(options: &LassoOptions, monitors: Vec<String>) -> Self {
        LassoReport {
            method: options.method,
            schedulers: options.schedulers.clone(),
            seed: options.seed,
            max_steps: options.max_steps,
            temperature_threshold: options.temperature_threshold,
            replays: options.replays,
            hash: options.hash,
            monitors,
            executions: 0,
            buggy: 0,
            safety: 0,
            false_positives: options.confirm.then_some(0),
            discarded: 0,
            steps: 0,
            trace_lengths: 0,
            cycle_lengths: 0,
            cycles: 0,
            by_scheduler: Vec::new(),
            finding: None,
            violation: None,
            exact: None,
            completion: LassoCompletion::Finished,
            elapsed: Duration::ZERO,
        }
    }

    /// Records a finding of the exact method.
    pub(crate) fn record(
        &mut self,
        execution: u64,
        scheduler: Option<SchedulerKind>,
        kind: FoundKind,
        trace: Trace,
        false_positive: Option<bool>,
    ) {
        let finding = LassoFindingReport { execution, scheduler, kind: kind.clone(), trace, false_positive };
        if let FoundKind::Safety(_) = kind {
            self.safety += 1;
            self.violation = Some(finding);
        } else {
            self.buggy += 1;
            self.trace_lengths += finding.trace.steps.len() as u64;
            if let FoundKind::Lasso { cycle_length, .. } = kind {
                self.cycle_lengths += cycle_length as u64;
                self.cycles += 1;
            }
            self.finding = Some(finding);
        }
    }

    /// Adds a stream's executions; `members` orders the per-scheduler rows.
    pub(super) fn merge(&mut self, stream: StreamResult, members: &[SchedulerKind]) {
        self.executions += stream.executions;
        self.buggy += stream.buggy;
        self.safety += stream.safety;
        if let Some(fp) = &mut self.false_positives {
            *fp += stream.false_positives;
        }
        self.discarded += stream.discarded;
        self.steps += stream.steps;
        self.trace_lengths += stream.trace_lengths;
        self.cycle_lengths += stream.cycle_lengths;
        self.cycles += stream.cycles;
        match self.by_scheduler.iter_mut().find(|s| s.kind == stream.kind) {
            Some(row) => {
                row.executions += stream.executions;
                row.buggy += stream.buggy;
            }
            None => {
                self.by_scheduler.push(SchedulerStats {
                    kind: stream.kind,
                    executions: stream.executions,
                    buggy: stream.buggy,
                });
                self.by_scheduler.sort_by_key(|s| members.iter().position(|m| *m == s.kind));
            }
        }
        let earlier =
            |mine: Option<&LassoFindingReport>, theirs: u64| mine.is_none_or(|f| theirs < f.execution);
        if let Some((execution, kind, trace, false_positive)) = stream.first_bug {
            if earlier(self.finding.as_ref(), execution) {
                let scheduler = Some(stream.kind);
                self.finding = Some(LassoFindingReport { execution, scheduler, kind, trace, false_positive });
            }
        }
        if let Some((execution, kind, trace)) = stream.first_safety {
            if earlier(self.violation.as_ref(), execution) {
                let scheduler = Some(stream.kind);
                self.violation =
                    Some(LassoFindingReport { execution, scheduler, kind, trace, false_positive: None });
            }
        }
    }

    /// The share of executions that reported a liveness bug, in percent.
    pub fn buggy_percent(&self) -> f64 {
        if self.executions == 0 {
            0.0
        } else {
            100.0 * self.buggy as f64 / self.executions as f64
        }
    }

    /// The mean length of the reported traces (the paper's `L_T`).
    pub fn mean_trace_length(&self) -> Option<f64> {
        (self.buggy > 0).then(|| self.trace_lengths as f64 / self.buggy as f64)
    }

    /// The mean length of the reported cycles (the paper's `L_C`).
    pub fn mean_cycle_length(&self) -> Option<f64> {
        (self.cycles > 0).then(|| self.cycle_lengths as f64 / self.cycles as f64)
    }

    /// Executions per second.
    pub fn executions_per_second(&self) -> f64 {
        self.executions as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Whether the run found a liveness bug or a safety violation.
    pub fn found_something(&self) -> bool {
        self.finding.is_some() || self.violation.is_some()
    }
}

impl fmt::Display for LassoReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = String::new();
        let hash = match self.hash {
            HashChoice::Partial => "partial",
            HashChoice::Full => "full",
        };
        let _ = writeln!(text, "monitors: {} (hot = progress owed)", self.monitors.join(", "));
        match &self.exact {
            Some(exact) => {
                let _ = writeln!(
                    text,
                    "exact: {} worlds, {} steps, {} strongly connected components, {} refinements{}",
                    exact.worlds,
                    exact.edges,
                    exact.components,
                    exact.refinements,
                    if exact.complete { "" } else { " (graph not complete)" }
                );
            }
            None => {
                let _ = writeln!(
                    text,
                    "{} over {} executions of up to {} steps (scheduler {}, seed {}, hash {hash}{})",
                    self.method,
                    self.executions,
                    self.max_steps,
                    self.schedulers,
                    self.seed,
                    match self.method {
                        LassoMethod::Temperature => format!(", TT {}", self.temperature_threshold),
                        _ => format!(", RT {}", self.replays),
                    }
                );
                let _ = write!(text, "buggy executions: {} ({:.2}%)", self.buggy, self.buggy_percent());
                if let Some(fp) = self.false_positives {
                    let _ = write!(text, ", false positives: {fp}");
                }
                if let (Some(lt), lc) = (self.mean_trace_length(), self.mean_cycle_length()) {
                    let _ = write!(text, ", mean trace length {lt:.1}");
                    if let Some(lc) = lc {
                        let _ = write!(text, ", mean cycle length {lc:.1}");
                    }
                }
                let _ = writeln!(text);
                let _ = writeln!(
                    text,
                    "discarded cycles: {}, safety violations: {}, {} steps, {:.0} executions/s",
                    self.discarded,
                    self.safety,
                    self.steps,
                    self.executions_per_second()
                );
                if self.by_scheduler.len() > 1 {
                    for row in &self.by_scheduler {
                        let _ = writeln!(
                            text,
                            "  {:<16} {:>7} executions {:>6} buggy",
                            row.kind.to_string(),
                            row.executions,
                            row.buggy
                        );
                    }
                }
            }
        }
        match self.completion {
            LassoCompletion::Finished => {}
            LassoCompletion::SchedulesExhausted => {
                let _ = writeln!(text, "dfs enumerated every schedule");
            }
            LassoCompletion::WorldsBound => {
                let _ = writeln!(text, "stopped at the bound on worlds: the graph is incomplete");
            }
            LassoCompletion::TimeBound => {
                let _ = writeln!(text, "stopped at the time bound: partial report");
            }
            LassoCompletion::Interrupted => {
                let _ = writeln!(text, "interrupted: partial report");
            }
        }
        for (what, finding) in [("liveness", &self.finding), ("safety", &self.violation)] {
            let Some(finding) = finding else { continue };
            let by = match finding.scheduler {
                Some(kind) => format!(" in execution {} (scheduler {kind})", finding.execution),
                None => String::new(),
            };
            let confirmed = match finding.false_positive {
                Some(true) => " — a FALSE POSITIVE: confirmation failed",
                Some(false) => " — confirmed",
                None => "",
            };
            let _ = writeln!(text, "\nfirst {what} finding{by}{confirmed}:");
            let _ = write!(text, "{}", finding.trace.to_text(false));
        }
        if !self.found_something() {
            let _ = writeln!(text, "no liveness violation found");
        }
        f.write_str(&text)
    }
}
