//! `foretell cluster`: a bundled system checked by a cluster of processes (the `cluster`
//! feature) — distributed breadth-first search or swarm random walks, over
//! [`foretell_cluster`].
//!
//! Every process runs the same command with its own `--process-index`; they connect to each
//! other (the addresses of `--hostfile`, or 127.0.0.1 ports from `--base-port`), refuse to run
//! together unless they check the same system with the same settings, and process 0 prints
//! the merged report and writes the trace. There is no authentication: trusted networks only.

use crate::cli::{parse_duration, SystemChoice};
use crate::commands::{
    self, print_violation, progress_bar, show_progress_as, usable_trace_out, violation_json,
};
use anyhow::{Context, Result};
use foretell_check::{CheckOptions, Progress, Report, Violation};
use foretell_cluster::{ClusterConfig, SwarmReport};
use foretell_model::SystemRef;
use indicatif::ProgressBar;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// How a cluster searches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Exhaustive, distributed breadth-first search: shortest counterexamples, the same counts
    /// as `foretell check --engine bfs`.
    Bfs,
    /// Seeded random walks on every worker until one violates a property.
    Swarm,
}

/// `foretell cluster`'s flags.
#[derive(Debug, clap::Args)]
#[command(
    about = "Check a system on a cluster of processes: distributed breadth-first search or swarm walks",
    long_about = "Check a system on a cluster of processes: distributed breadth-first search (worlds \
                  partitioned among workers by fingerprint) or swarm random walks. Run the same \
                  command in every process, each with its own --process-index; process 0 prints \
                  the report. No authentication or encryption: trusted networks only."
)]
pub struct ClusterArgs {
    #[command(flatten)]
    pub target: SystemChoice,
    /// bfs: exhaustive distributed breadth-first search; swarm: random walks.
    #[arg(long, value_enum, default_value = "bfs")]
    pub mode: Mode,
    /// Worker threads in each process (the same in every process).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub workers: u16,
    /// Processes in the cluster.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub processes: u16,
    /// This process's index, 0 to PROCESSES-1; process 0 reports.
    #[arg(long, default_value_t = 0)]
    pub process_index: u16,
    /// A file of HOST:PORT lines, one per process in process order (blank lines and lines
    /// starting with # are skipped); default: 127.0.0.1 ports from --base-port.
    #[arg(long, value_name = "FILE")]
    pub hostfile: Option<PathBuf>,
    /// The first port when there is no --hostfile.
    #[arg(long, default_value_t = 2101)]
    pub base_port: u16,
    /// How long to wait for the other processes to connect: seconds, or with a unit (90s, 2m).
    #[arg(long, value_name = "TIME", default_value = "60", value_parser = parse_duration)]
    pub connect_timeout: Duration,
    /// (bfs) Explore no world more than D steps from the initial world.
    #[arg(long, value_name = "D")]
    pub max_depth: Option<usize>,
    /// (bfs) Stop after about S distinct worlds (checked between levels).
    #[arg(long, value_name = "S")]
    pub max_states: Option<u64>,
    /// (bfs) Stop after about TIME: seconds, or with a unit (500ms, 90s, 2m, 1h).
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// (swarm) Walks per worker.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub walks: u64,
    /// (swarm) Steps per walk at most.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub max_steps: usize,
    /// (swarm) The seed; worker W draws from SEED xor W.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// Where process 0 writes the violation's trace (default: SYSTEM[-BUG].trace.json).
    #[arg(long, value_name = "FILE")]
    pub trace_out: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `foretell cluster`: exit code 0 when every property holds (or on processes other than
/// 0), 1 when process 0 reports a violation.
pub fn run(args: ClusterArgs) -> Result<ExitCode> {
    usable_trace_out(args.trace_out.as_deref())?;
    let system = foretell_systems::find(&args.target.system)?;
    let settings = system.settings(args.target.bug.as_deref(), &args.target.set)?;
    let model = foretell_systems::cluster_model(&system, &settings)?;
    let system_ref = system.trace_ref(&settings);
    let hosts = match &args.hostfile {
        Some(path) => read_hostfile(path)?,
        None => Vec::new(),
    };
    let config = ClusterConfig {
        workers: usize::from(args.workers),
        processes: usize::from(args.processes),
        process_index: usize::from(args.process_index),
        hosts,
        base_port: args.base_port,
        connect_timeout: args.connect_timeout,
        job: format!("{} {:?} {:?}", system_ref.name, system_ref.variant, system_ref.params),
    };
    config.addresses()?;
    let reporter = config.process_index == 0;
    match args.mode {
        Mode::Bfs => {
            let interrupt = crate::signals::interrupt_on_signal()?;
            let bar = progress_bar();
            let sink_bar = bar.clone();
            let options = CheckOptions {
                depth_max: args.max_depth,
                states_max: args.max_states,
                timeout: args.timeout,
                interrupt: Some(interrupt),
                progress: reporter.then(|| {
                    Arc::new(move |p: &Progress| show_progress(&sink_bar, p)) as foretell_check::ProgressSink
                }),
                ..CheckOptions::default()
            };
            let report = model.check_distributed(&options, &config)?;
            bar.finish_and_clear();
            match report {
                Some(report) => print_bfs(report, &args, &config, &system_ref),
                None => Ok(ExitCode::SUCCESS),
            }
        }
        Mode::Swarm => match model.swarm_walks(args.walks, args.max_steps, args.seed, &config)? {
            Some(report) => print_swarm(report, &args, &config, &system_ref),
            None => Ok(ExitCode::SUCCESS),
        },
    }
}

/// The addresses of a hostfile.
fn read_hostfile(path: &PathBuf) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(String::from)
        .collect())
}

fn show_progress(bar: &ProgressBar, p: &Progress) {
    show_progress_as(bar, p, "level");
}

/// Names `violation`'s system and writes its trace; returns the file, if it could be written.
fn write_trace(violation: &mut Violation, args: &ClusterArgs, system: &SystemRef) -> Option<PathBuf> {
    let path = args.trace_out.clone().unwrap_or_else(|| args.target.default_trace_file(0));
    commands::write_trace(Some(&mut violation.trace), system, path)
}

fn cluster_json(config: &ClusterConfig) -> serde_json::Value {
    json!({"processes": config.processes, "workers": config.workers})
}

fn print_bfs(
    mut report: Report,
    args: &ClusterArgs,
    config: &ClusterConfig,
    system: &SystemRef,
) -> Result<ExitCode> {
    let mut files = Vec::new();
    for violation in &mut report.violations {
        files.push(write_trace(violation, args, system));
    }
    if args.json {
        let properties: serde_json::Map<String, serde_json::Value> = report
            .properties
            .iter()
            .map(|p| (p.name.clone(), json!({"kind": p.kind, "status": p.status})))
            .collect();
        let violations: Vec<_> =
            report.violations.iter().zip(&files).map(|(v, f)| violation_json(v, f.as_deref())).collect();
        let out = json!({
            "system": system.name,
            "variant": system.variant,
            "params": system.params,
            "mode": "bfs",
            "engine": report.engine,
            "cluster": cluster_json(config),
            "verdict": report.verdict(),
            "completion": report.completion,
            "properties": properties,
            "stats": report.stats,
            "violations": violations,
        });
        outln!("{out}");
    } else {
        let variant = system.variant.as_deref().unwrap_or("correct version");
        outln!(
            "{} ({variant}) on {} process(es) of {} worker(s)",
            system.name,
            config.processes,
            config.workers
        );
        outln!("{report}");
        for (violation, file) in report.violations.iter().zip(&files) {
            print_violation(violation, file.as_deref());
        }
    }
    Ok(if report.violations.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn print_swarm(
    mut report: SwarmReport,
    args: &ClusterArgs,
    config: &ClusterConfig,
    system: &SystemRef,
) -> Result<ExitCode> {
    let file = report.violation.as_mut().and_then(|violation| write_trace(violation, args, system));
    let found = report.violation.as_ref().map(|v| (v, file.as_deref()));
    if args.json {
        let out = json!({
            "system": system.name,
            "variant": system.variant,
            "params": system.params,
            "mode": "swarm",
            "cluster": cluster_json(config),
            "verdict": if found.is_some() { "violated" } else { "no violation found" },
            "seed": args.seed,
            "walks": report.walks,
            "steps": report.steps,
            "seconds": report.seconds,
            "violations": found.map(|(v, f)| violation_json(v, f)).into_iter().collect::<Vec<_>>(),
        });
        outln!("{out}");
    } else {
        let variant = system.variant.as_deref().unwrap_or("correct version");
        outln!(
            "{} ({variant}): swarm of {} process(es) of {} worker(s), seed {}",
            system.name,
            config.processes,
            config.workers,
            args.seed
        );
        let verdict =
            if found.is_some() { "violated" } else { "no violation found (walks are not exhaustive)" };
        outln!("verdict: {verdict}");
        outln!("{} walks, {} steps, {:.2} s", report.walks, report.steps, report.seconds);
        if let Some((violation, file)) = found {
            print_violation(violation, file);
        }
    }
    Ok(if found.is_some() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
