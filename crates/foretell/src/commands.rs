//! The verbs: glue between parsed flags, the system registry, the engines and the terminal.

use crate::cli::{CheckArgs, Cli, Command, LivenessArgs, SystemChoice};
use crate::signals::interrupt_on_signal;
use anyhow::{bail, Context, Result};
use foretell_check::{
    CheckOptions, DynModel, EngineKind, FingerprintBits, LivenessOptions, LivenessProgress, LivenessReport,
    LivenessVerdict, LmcOptions, Memory, Prefix, Progress, Report, Violation,
};
use foretell_model::{SystemRef, Trace, TraceVerdict, ViolationKind};
use foretell_systems::{Settings, Start, System};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::List => list(),
        Command::Check(args) => check(args),
        Command::Liveness(args) => liveness(args),
        Command::Lasso(args) => crate::lasso_cmd::run(args),
        Command::Replay { file } => replay(&file),
        #[cfg(feature = "cluster")]
        Command::Cluster(args) => crate::cluster_cmd::run(args),
        Command::Bench { runs, liveness: true, .. } => crate::bench_liveness::run(runs),
        Command::Bench { lasso: true, executions, .. } => crate::bench_lasso::run(executions),
        Command::Bench { runs, lmc: true, seconds, .. } => crate::bench_lmc::run(runs, seconds),
        Command::Bench { runs, large, threads, .. } => {
            let threads: Vec<usize> = threads.into_iter().map(usize::from).collect();
            crate::bench::run(runs, large, &threads)
        }
        Command::Show { file, states } => {
            let trace = load_trace(&file)?;
            if trace.liveness.is_some() {
                out!("{}", foretell_check::describe_trace(&trace));
            } else {
                out!("{}", trace.to_text(states));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn list() -> Result<ExitCode> {
    for system in foretell_systems::systems() {
        outln!("{}: {}", system.name, system.about);
        for p in system.params {
            outln!("    --set {}={:<8} {}", p.name, p.default, p.help);
        }
        for v in system.variants {
            outln!("    --bug {:<18} {}", v.name, v.help);
        }
        for s in system.scenarios {
            let needs: Vec<String> =
                s.needs.iter().map(|(name, value)| format!("--set {name}={value}")).collect();
            let needs = if needs.is_empty() { String::new() } else { format!(" (with {})", needs.join(" ")) };
            outln!("    --from {:<17} {}{needs}", s.name, s.help);
        }
        let model = (system.build)(&system.settings(None, &[])?)?;
        let summary = model.summary();
        for p in summary.properties {
            outln!("    {:<10} {}", p.kind, p.name);
        }
        for monitor in summary.monitors {
            outln!("    {:<10} {monitor}", "monitor");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn check(args: CheckArgs) -> Result<ExitCode> {
    usable_trace_out(args.trace_out.as_deref())?;
    let (system, settings) = configured(&args.target, args.from.as_deref())?;
    let model = system.build_model(&settings)?;
    let interrupt = interrupt_on_signal()?;
    let bar = progress_bar();
    let sink_bar = bar.clone();
    let lmc = lmc_options(&args)?;
    applicable_to_the_engine(&args)?;
    let options = CheckOptions {
        engine: args.engine,
        lmc,
        depth_max: args.max_depth,
        states_max: args.max_states,
        timeout: args.timeout,
        fingerprint_bits: args.fingerprint_bits,
        threads: usize::from(args.threads),
        memory: args.memory,
        memory_max: args.max_memory.or_else(foretell_check::default_budget),
        interrupt: Some(interrupt),
        progress: Some(Arc::new(move |p: &Progress| show_progress(&sink_bar, p))),
        ..CheckOptions::default()
    };
    let mut report = model.check(&options)?;
    bar.finish_and_clear();
    let system_ref = system.trace_ref(&settings);
    let trace_files: Vec<Option<PathBuf>> = (report.violations.iter_mut().enumerate())
        .map(|(i, violation)| write_trace(Some(&mut violation.trace), &system_ref, trace_path(&args, i)))
        .collect();
    if args.json {
        outln!("{}", report_json(&report, &system_ref, &trace_files));
    } else {
        print_report(&report, &system_ref, &trace_files);
    }
    Ok(if report.violations.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Refuses flags the chosen engine would silently ignore (local model checking's are refused by
/// [`lmc_options`]).
fn applicable_to_the_engine(args: &CheckArgs) -> Result<()> {
    if args.engine == EngineKind::Stateless {
        if args.memory != Memory::Exact {
            bail!("--memory does not apply to --engine stateless (it keeps its own map of explored worlds)");
        }
        if args.threads != 1 {
            bail!("--threads does not apply to --engine stateless (it runs on one thread)");
        }
    }
    if args.fingerprint_bits == FingerprintBits::B128 && args.memory != Memory::Exact {
        bail!("--fingerprint-bits 128 applies to --memory exact only (the lossy modes keep fewer bits)");
    }
    Ok(())
}

/// Local model checking's options from `args`: its flags need `--engine lmc`, and the flags of
/// the global engines' visited set and bounds do not apply to it.
fn lmc_options(args: &CheckArgs) -> Result<LmcOptions> {
    if args.engine != EngineKind::Lmc {
        if args.lmc.any() {
            bail!("the --lmc-* flags apply to --engine lmc only");
        }
        return Ok(LmcOptions::default());
    }
    let global = [
        ("--max-depth", args.max_depth.is_some()),
        ("--memory", args.memory != Memory::Exact),
        ("--threads", args.threads != 1),
    ];
    if let Some((flag, _)) = global.iter().find(|(_, given)| *given) {
        bail!("{flag} does not apply to --engine lmc (it bounds the global engines; see --lmc-local-events)");
    }
    let defaults = LmcOptions::default();
    Ok(LmcOptions {
        mode: args.lmc.lmc_mode.unwrap_or(defaults.mode),
        local_events: args.lmc.lmc_local_events,
        iterative: args.lmc.lmc_iterative,
        duplicates: args.lmc.lmc_duplicates.unwrap_or(defaults.duplicates),
        soundness_budget: args.lmc.lmc_soundness_budget.unwrap_or(defaults.soundness_budget),
        channel_order: args.lmc.lmc_channel_order,
    })
}

fn liveness(args: LivenessArgs) -> Result<ExitCode> {
    usable_trace_out(args.trace_out.as_deref())?;
    let (system, mut settings) = configured(&args.target, None)?;
    let prefix = match args.prefix.as_deref() {
        None => Prefix::Start,
        Some("live") => Prefix::Live { faults: false },
        Some("live-with-faults") => Prefix::Live { faults: true },
        Some(scenario) => {
            settings.start = Some(system.scenario_start(scenario)?);
            Prefix::Start
        }
    };
    let model: Arc<dyn DynModel> = Arc::from(system.build_model(&settings)?);
    let interrupt = interrupt_on_signal()?;
    let bar = progress_bar();
    let sink_bar = bar.clone();
    let defaults = LivenessOptions::default();
    let options = LivenessOptions {
        depth: args.depth,
        dmax: args.dmax,
        walks: args.walks as usize,
        weights: args.weights,
        seed: args.seed,
        threads: args.threads.map_or(defaults.threads, usize::from),
        prefix,
        watchdog: Duration::from_millis(args.watchdog),
        invariants: !args.ignore_safety,
        timeout: args.timeout,
        interrupt: Some(interrupt),
        progress: Some(Arc::new(move |p: &LivenessProgress| {
            sink_bar.set_message(format!("{} walks, {} suspect(s), dmax {}", p.walks, p.suspects, p.dmax));
            sink_bar.tick();
        })),
        ..defaults
    };
    let mut report = model.liveness(&options)?;
    bar.finish_and_clear();
    let system_ref = system.trace_ref(&settings);
    let file = (args.trace_out.clone())
        .unwrap_or_else(|| PathBuf::from(format!("{}.liveness.json", args.target.file_stem())));
    let written = write_trace(report.trace.as_mut(), &system_ref, file);
    if args.json {
        outln!("{}", liveness_json(&report, &system_ref, written.as_deref()));
    } else {
        print_text(&system_ref, &format!("{report}\n"), written.as_deref());
    }
    // A stopped run reports a path only if it had kept an undecided (C2) one before the stop;
    // the suspects it had not finished examining are counts, not findings.
    let found = match report.verdict {
        // No live world to start from is a setup to change (--dmax, --prefix), not a finding.
        LivenessVerdict::NoSuspect | LivenessVerdict::NoLivePrefix => false,
        LivenessVerdict::Stopped(_) => report.trace.is_some(),
        _ => true,
    };
    Ok(if found { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn liveness_json(report: &LivenessReport, system: &SystemRef, file: Option<&Path>) -> serde_json::Value {
    let finding = report.trace.as_ref().and_then(|t| t.liveness.as_ref());
    json!({
        "system": system.name,
        "variant": system.variant,
        "params": system.params,
        "verdict": report.verdict,
        "properties": report.properties,
        "critical_step": report.critical_step(),
        "critical_event": report.critical_event(),
        "case": finding.map(|f| f.case.clone()),
        "not_live": finding.map(|f| f.not_live.clone()),
        "verdict_message": report.trace.as_ref().and_then(|t| t.verdict.as_ref()).map(|v| v.message.clone()),
        "steps": report.trace.as_ref().map(|t| t.steps.len()),
        "dmax": report.dmax,
        "stats": report.stats,
        "trace_file": file.map(|f| f.display().to_string()),
    })
}

/// The system `target` names, with its settings, starting `from` a scenario or trace prefix.
pub(crate) fn configured(target: &SystemChoice, from: Option<&str>) -> Result<(System, Settings)> {
    let system = foretell_systems::find(&target.system)?;
    let mut settings = system.settings(target.bug.as_deref(), &target.set)?;
    if let Some(from) = from {
        settings.start = Some(start(&system, from)?);
    }
    Ok((system, settings))
}

/// Refuses a `--trace-out` path that no trace could be written to (a directory, or a file in a
/// directory that does not exist) before a search runs, rather than after it.
pub(crate) fn usable_trace_out(path: Option<&Path>) -> Result<()> {
    let Some(path) = path else { return Ok(()) };
    if path.is_dir() {
        bail!("--trace-out {}: is a directory", path.display());
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        bail!("--trace-out {}: there is no directory {}", path.display(), parent.display());
    }
    Ok(())
}

/// Writes `trace`, if there is one, to `file`, naming `system` in it; the file written. A trace
/// that cannot be written is reported on stderr and the run's report still printed: a search
/// that may have taken hours is not thrown away for its output file.
pub(crate) fn write_trace(trace: Option<&mut Trace>, system: &SystemRef, file: PathBuf) -> Option<PathBuf> {
    let trace = trace?;
    trace.system = Some(system.clone());
    match std::fs::write(&file, trace.to_json()) {
        Ok(()) => Some(file),
        Err(error) => {
            eprintln!("foretell: cannot write the trace to {}: {error}", file.display());
            None
        }
    }
}

/// Prints a text report: the system and variant, the report, and where its trace went.
pub(crate) fn print_text(system: &SystemRef, report: &str, written: Option<&Path>) {
    let variant = system.variant.as_deref().unwrap_or("correct version");
    outln!("{} ({variant})", system.name);
    out!("{report}");
    if let Some(file) = written {
        outln!("trace written to {} (foretell show {0}; foretell replay {0})", file.display());
    }
}

/// Where `--from` starts: a trace file's prefix (a value naming a `.json` file, with an
/// optional `:STEPS`), or a named scenario.
pub(crate) fn start(system: &foretell_systems::System, from: &str) -> Result<Start> {
    let (file, steps) = match from.rsplit_once(':') {
        Some((file, steps)) if file.ends_with(".json") => {
            let steps: usize =
                steps.parse().with_context(|| format!("--from {from}: STEPS must be a number"))?;
            (file, Some(steps))
        }
        _ => (from, None),
    };
    if !file.ends_with(".json") {
        return Ok(system.scenario_start(from)?);
    }
    let trace = load_trace(Path::new(file))?;
    if let Some(other) = trace.system.as_ref().filter(|s| s.name != system.name) {
        bail!("{file} is a trace of {}, not of {}", other.name, system.name);
    }
    let safety = |v: &&TraceVerdict| {
        v.step == trace.steps.len()
            && matches!(v.kind, ViolationKind::Invariant | ViolationKind::Assertion | ViolationKind::Panic)
    };
    if let (None, Some(verdict)) = (steps, trace.verdict.as_ref().filter(safety)) {
        // A check's trace ends in its violation, which a search cannot start from.
        let before = verdict.step.saturating_sub(1);
        bail!(
            "{file} ends in a violation of {:?} at step {}; start from before it with --from {file}:{before}",
            verdict.property,
            verdict.step
        );
    }
    let steps = steps.unwrap_or(trace.steps.len());
    if steps > trace.steps.len() {
        bail!("{file} has {} steps, fewer than the {steps} asked for", trace.steps.len());
    }
    Ok(Start::Trace { source: file.to_string(), trace: Arc::new(trace), steps })
}

fn trace_path(args: &CheckArgs, index: usize) -> PathBuf {
    match (&args.trace_out, index) {
        (Some(path), 0) => path.clone(),
        (Some(path), i) => path.with_extension(format!("{i}.json")),
        (None, i) => args.target.default_trace_file(i),
    }
}

/// The spinner a long search shows on stderr.
pub(crate) fn progress_bar() -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("a valid template"));
    bar
}

fn show_progress(bar: &ProgressBar, p: &Progress) {
    show_progress_as(bar, p, "queue");
}

/// Shows a progress snapshot on the spinner; `queue` names what `Progress::queue` counts.
pub(crate) fn show_progress_as(bar: &ProgressBar, p: &Progress, queue: &str) {
    let rate = p.unique_states as f64 / p.elapsed.as_secs_f64().max(1e-9);
    bar.set_message(format!(
        "{} states ({rate:.0}/s), {} transitions, depth {}, {queue} {}",
        p.unique_states, p.transitions, p.max_depth, p.queue
    ));
    bar.tick();
}

fn print_report(report: &Report, system: &SystemRef, trace_files: &[Option<PathBuf>]) {
    let variant = system.variant.as_deref().unwrap_or("correct version");
    outln!("{} ({variant})", system.name);
    outln!("{report}");
    for (violation, file) in report.violations.iter().zip(trace_files) {
        print_violation(violation, file.as_deref());
    }
}

/// Prints a violation's trace and where it was written (`None`: it could not be).
pub(crate) fn print_violation(violation: &Violation, file: Option<&Path>) {
    outln!();
    outln!(
        "violation of {:?} ({}) in {} steps:",
        violation.property,
        violation.kind,
        violation.trace.steps.len()
    );
    out!("{}", violation.trace.to_text(false));
    match file {
        Some(file) => {
            outln!("trace written to {} (foretell show {0} --states; foretell replay {0})", file.display())
        }
        None => outln!("trace not written (see the error above)"),
    }
}

/// A violation in a JSON report: what was violated and where its trace was written.
pub(crate) fn violation_json(violation: &Violation, file: Option<&Path>) -> serde_json::Value {
    json!({
        "property": violation.property,
        "kind": violation.kind,
        "message": violation.message,
        "steps": violation.trace.steps.len(),
        "trace_file": file.map(|f| f.display().to_string()),
    })
}

fn report_json(report: &Report, system: &SystemRef, trace_files: &[Option<PathBuf>]) -> serde_json::Value {
    let violations: Vec<_> = report
        .violations
        .iter()
        .zip(trace_files)
        .map(|(v, file)| violation_json(v, file.as_deref()))
        .collect();
    let properties: serde_json::Map<String, serde_json::Value> = report
        .properties
        .iter()
        .map(|p| (p.name.clone(), json!({"kind": p.kind, "status": p.status})))
        .collect();
    json!({
        "system": system.name,
        "variant": system.variant,
        "params": system.params,
        "engine": report.engine,
        "verdict": report.verdict(),
        "completion": report.completion,
        "properties": properties,
        "stats": report.stats,
        "omission": report.omission,
        "lmc": report.lmc,
        "violations": violations,
    })
}

fn load_trace(file: &Path) -> Result<Trace> {
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    Trace::from_json(&text).with_context(|| file.display().to_string())
}

fn replay(file: &Path) -> Result<ExitCode> {
    let trace = load_trace(file)?;
    let Some(system_ref) = &trace.system else {
        bail!(
            "{}: the trace does not name its system, so there is nothing to replay it against",
            file.display()
        );
    };
    let system = foretell_systems::find(&system_ref.name)?;
    let overrides: Vec<(String, String)> = system_ref.params.clone().into_iter().collect();
    let settings = system.settings(system_ref.variant.as_deref(), &overrides)?;
    let model = (system.build)(&settings)?;
    match model.replay(&trace) {
        Ok(summary) => {
            match &summary.verdict {
                Some(v) => outln!(
                    "replayed {} steps: {:?} is violated at step {} ({})",
                    summary.steps,
                    v.property,
                    v.step,
                    v.message
                ),
                None => outln!("replayed {} steps: every fingerprint matches, no violation", summary.steps),
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            outln!("replay departs from {}: {error}", file.display());
            Ok(ExitCode::from(1))
        }
    }
}
