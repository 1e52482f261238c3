//! The `vs-stateright` command: foretell and Stateright side by side on the same state spaces.
//!
//! Every configuration (model, engine, thread count) runs `--runs` times in each tool, the tools
//! alternating run by run, and every run in a fresh child process: the binary re-invokes itself
//! as `vs-stateright one --tool T --model M --n N --engine E --threads K`, which checks once and
//! prints one JSON line (distinct states, seconds of the check call, peak RSS). The parent prints
//! a Markdown table of medians, with foretell's speed over Stateright's both as the ratio of the
//! medians and per round (the two tools' runs of one round, side by side in time: on a machine
//! whose speed drifts, the steadier figure), and exits non-zero if a distinct-state count differs
//! from the published one (and so between the tools). Two-phase commit's one-thread
//! breadth-first rows also run a hand-written search of that model (`--tool hand-written`), and
//! a second table sets foretell's one-thread figures beside it.
//!
//! Two binaries run this command, and differ only in the process's allocator, which every
//! contestant's child then uses alike: `vs-stateright` the system's (what a Stateright user's
//! binary gets), `vs-stateright-mimalloc` mimalloc (what the `foretell` command ships with).

use crate::measure::{self, Engine, Family, Measurement, Spec, Tool};
use crate::table::{self, Row, Samples};
use clap::{Parser, Subcommand};
use foretell_check::{peak_resident_bytes, prepare_peak};
use std::process::{Command as Process, ExitCode, Stdio};

/// Benchmark foretell against Stateright 0.31 on two-phase commit, Paxos.tla and Stateright's
/// actor Paxos, with equal distinct-state counts.
#[derive(Parser, Debug)]
#[command(name = "vs-stateright")]
struct Cli {
    /// The child-process mode (internal).
    #[command(subcommand)]
    command: Option<Command>,
    /// Runs per tool and configuration; the table shows medians.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Worker thread counts to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    threads: Vec<usize>,
    /// Only this model family: 2pc, paxos-tla or actor-paxos.
    #[arg(long)]
    only: Option<Family>,
    /// Add the large configurations: two-phase commit with 9 resource managers and actor Paxos
    /// with 3 clients.
    #[arg(long)]
    large: bool,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Checks one configuration once and prints its measurement as one JSON line.
    #[command(hide = true)]
    One {
        /// The tool.
        #[arg(long)]
        tool: Tool,
        /// The model family.
        #[arg(long)]
        model: Family,
        /// The size: resource managers, highest ballot, or clients.
        #[arg(long)]
        n: usize,
        /// The search order.
        #[arg(long)]
        engine: Engine,
        /// Worker threads.
        #[arg(long, default_value_t = 1)]
        threads: usize,
    },
}

/// The models measured, in table order.
fn specs(large: bool, only: Option<Family>) -> Vec<Spec> {
    let mut specs: Vec<Spec> = [(Family::TwoPhase, 6), (Family::TwoPhase, 7), (Family::TwoPhase, 8)]
        .into_iter()
        .chain(large.then_some((Family::TwoPhase, 9)))
        .chain([(Family::PaxosTla, 2), (Family::ActorPaxos, 2)])
        .chain(large.then_some((Family::ActorPaxos, 3)))
        .map(|(family, size)| Spec { family, size })
        .collect();
    specs.retain(|s| only.is_none_or(|f| s.family == f));
    specs
}

/// Runs one check in a fresh child process and reads its JSON line.
fn run_child(tool: Tool, spec: Spec, engine: Engine, threads: usize) -> Result<Measurement, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let output = Process::new(exe)
        .args(["one", "--tool", tool.name(), "--model", spec.family.name()])
        .args(["--n", &spec.size.to_string(), "--engine", engine.name(), "--threads", &threads.to_string()])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot start a child process: {e}"))?;
    if !output.status.success() {
        return Err(format!("{tool} on {spec} ({engine}, {threads} threads) failed: {}", output.status));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).map_err(|e| format!("bad child output {line:?}: {e}"))
}

/// Measures one configuration: `runs` runs of each tool that supports it, the tools taking turns
/// at going first.
fn measure_row(spec: Spec, engine: Engine, threads: usize, runs: usize) -> Result<Row, String> {
    let mut row = Row {
        spec,
        engine,
        threads,
        foretell: Samples::default(),
        stateright: Samples::default(),
        hand_written: Samples::default(),
    };
    let tools: Vec<Tool> =
        Tool::ALL.iter().copied().filter(|&tool| measure::supports(tool, spec, engine, threads)).collect();
    for run in 0..runs {
        for turn in 0..tools.len() {
            let tool = tools[(run + turn) % tools.len()];
            let m = run_child(tool, spec, engine, threads)?;
            eprintln!(
                "[{}/{runs}] {tool:12} {spec} {engine} {threads} thread(s): {} states in {:.3} s",
                run + 1,
                m.states,
                m.seconds
            );
            match tool {
                Tool::Foretell => row.foretell.0.push(m),
                Tool::Stateright => row.stateright.0.push(m),
                Tool::HandWritten => row.hand_written.0.push(m),
            }
        }
    }
    Ok(row)
}

fn bench(cli: &Cli, allocator: &str) -> Result<ExitCode, String> {
    if cli.runs == 0 || cli.threads.contains(&0) {
        return Err("--runs and every --threads value must be at least 1".into());
    }
    let mut rows = Vec::new();
    for spec in specs(cli.large, cli.only) {
        for engine in Engine::ALL.iter().copied() {
            for &threads in &cli.threads {
                rows.push(measure_row(spec, engine, threads, cli.runs)?);
            }
        }
    }
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "foretell vs Stateright 0.31: medians of {} runs per tool, {cores} cores, {allocator} allocator\n",
        cli.runs
    );
    println!("{}", table::markdown(&rows));
    let against_hand_written = table::against_hand_written(&rows);
    if !against_hand_written.is_empty() {
        println!("\nTwo-phase commit on one thread against a hand-written breadth-first search\n");
        println!("{against_hand_written}");
    }
    let mismatches: Vec<&Row> = rows.iter().filter(|r| !r.counts_equal()).collect();
    for row in &mismatches {
        eprintln!(
            "MISMATCH: {} {} {} thread(s): expected {:?} distinct states, foretell found {:?}, stateright {:?}, hand-written {:?}",
            row.spec,
            row.engine,
            row.threads,
            row.spec.published_states(),
            row.foretell.0.iter().map(|m| m.states).collect::<Vec<_>>(),
            row.stateright.0.iter().map(|m| m.states).collect::<Vec<_>>(),
            row.hand_written.0.iter().map(|m| m.states).collect::<Vec<_>>(),
        );
    }
    Ok(if mismatches.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// The child process: checks once and prints the measurement as one JSON line.
fn one(tool: Tool, spec: Spec, engine: Engine, threads: usize) -> Result<ExitCode, String> {
    if threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    if !measure::supports(tool, spec, engine, threads) {
        return Err(format!("{tool} checks only two-phase commit, breadth-first, on one thread"));
    }
    // The first reading, before either tool runs: it bounds the parent's peak that `exec`
    // carried into this child's, which the reading after the check must not count.
    prepare_peak();
    let m = measure::run(tool, spec, engine, threads);
    // Read after the check: the peak of the whole run.
    let m = Measurement { peak_rss_bytes: peak_resident_bytes(), ..m };
    println!("{}", serde_json::to_string(&m).map_err(|e| e.to_string())?);
    Ok(ExitCode::SUCCESS)
}

/// Runs the command; `allocator` names the process's allocator for the report.
pub fn main(allocator: &str) -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::One { tool, model, n, engine, threads }) => {
            one(tool, Spec { family: model, size: n }, engine, threads)
        }
        None => bench(&cli, allocator),
    };
    result.unwrap_or_else(|e| {
        eprintln!("vs-stateright: {e}");
        ExitCode::from(2)
    })
}
