//! `foretell lasso`: the lasso engine on a bundled system — flags to options, the report as
//! text or JSON, and the finding's trace to a file.

use crate::cli::LassoArgs;
use crate::commands::{configured, print_text, progress_bar, usable_trace_out, write_trace};
use crate::signals::interrupt_on_signal;
use anyhow::Result;
use foretell_check::{FoundKind, LassoFindingReport, LassoOptions, LassoReport};
use foretell_model::SystemRef;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

pub fn run(args: LassoArgs) -> Result<ExitCode> {
    usable_trace_out(args.trace_out.as_deref())?;
    let (system, settings) = configured(&args.target, args.from.as_deref())?;
    let model = system.build_model(&settings)?;
    let interrupt = interrupt_on_signal()?;
    let defaults = LassoOptions::default();
    let options = LassoOptions {
        method: args.method,
        schedulers: args.scheduler.clone(),
        executions: args.executions,
        max_steps: args.max_steps as usize,
        unfair_steps: args.unfair_steps,
        temperature_threshold: args.tt as usize,
        replays: args.rt as usize,
        hash: args.hash,
        confirm: args.confirm,
        seed: args.seed,
        threads: args.threads.map_or(defaults.threads, usize::from),
        max_worlds: usize::try_from(args.max_worlds).unwrap_or(usize::MAX),
        interrupt: Some(interrupt),
        timeout: args.timeout,
    };
    let bar = progress_bar();
    bar.set_message(format!("{} ({})", args.method, args.scheduler));
    bar.enable_steady_tick(Duration::from_millis(200));
    let mut report = model.lasso(&options)?;
    bar.finish_and_clear();
    let system_ref = system.trace_ref(&settings);
    let file = (args.trace_out.clone())
        .unwrap_or_else(|| PathBuf::from(format!("{}.lasso.json", args.target.file_stem())));
    // The liveness finding's trace is written; a safety violation's when there is none.
    let finding = report.finding.as_mut().or(report.violation.as_mut());
    let written = write_trace(finding.map(|f| &mut f.trace), &system_ref, file);
    if args.json {
        outln!("{}", report_json(&report, &system_ref, written.as_deref()));
    } else {
        print_text(&system_ref, &report.to_string(), written.as_deref());
    }
    Ok(if report.found_something() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn finding_json(finding: &LassoFindingReport) -> serde_json::Value {
    let (kind, cycle_start, cycle_length) = match &finding.kind {
        FoundKind::Lasso { cycle_start, cycle_length } => ("lasso", Some(cycle_start), Some(cycle_length)),
        FoundKind::TooHot => ("temperature", None, None),
        FoundKind::EndsHot => ("ends-hot", None, None),
        FoundKind::Safety(_) => ("safety", None, None),
    };
    json!({
        "kind": kind,
        "execution": finding.execution,
        "scheduler": finding.scheduler.map(|s| s.to_string()),
        "steps": finding.trace.steps.len(),
        "cycle_start": cycle_start,
        "cycle_length": cycle_length,
        "verdict": finding.trace.verdict,
        "hot": finding.trace.lasso.as_ref().map(|l| l.hot.clone()),
        "false_positive": finding.false_positive,
    })
}

fn report_json(report: &LassoReport, system: &SystemRef, file: Option<&Path>) -> serde_json::Value {
    json!({
        "system": system.name,
        "variant": system.variant,
        "params": system.params,
        "method": report.method.to_string(),
        "scheduler": report.schedulers.to_string(),
        "seed": report.seed,
        "monitors": report.monitors,
        "executions": report.executions,
        "buggy": report.buggy,
        "buggy_percent": report.buggy_percent(),
        "false_positives": report.false_positives,
        "discarded": report.discarded,
        "safety_violations": report.safety,
        "steps": report.steps,
        "mean_trace_length": report.mean_trace_length(),
        "mean_cycle_length": report.mean_cycle_length(),
        "executions_per_second": report.executions_per_second(),
        "by_scheduler": report.by_scheduler.iter().map(|s| json!({
            "scheduler": s.kind.to_string(), "executions": s.executions, "buggy": s.buggy,
        })).collect::<Vec<_>>(),
        "exact": report.exact.map(|e| json!({
            "worlds": e.worlds, "edges": e.edges, "complete": e.complete,
            "components": e.components, "refinements": e.refinements,
        })),
        "completion": format!("{:?}", report.completion),
        "elapsed_seconds": report.elapsed.as_secs_f64(),
        "finding": report.finding.as_ref().map(finding_json),
        "violation": report.violation.as_ref().map(finding_json),
        "trace_file": file.map(|f| f.display().to_string()),
    })
}
