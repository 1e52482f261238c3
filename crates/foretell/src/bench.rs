//! `foretell bench`: throughput of the stateful engines on the reference systems, on one thread
//! and on several, median of several runs, as a Markdown table for docs/BENCHMARKS.md. Runs
//! alternate between configurations so that machine noise spreads over all of them; the
//! speed-up column compares each multi-threaded row with the one-thread row of the same system
//! and engine, measured in the same run.
//!
//! Ctrl-C stops the bench without losing it ([`crate::bench_stop`]): the run in progress is
//! discarded, and the table gives the medians of the runs completed, with a `runs` column
//! saying how many each row has; a row without any is "not measured".

use crate::bench_stop::Stop;
use anyhow::Result;
use foretell_check::{CheckOptions, DynModel, EngineKind, Report};
use std::process::ExitCode;

/// A system with its parameters, as `foretell check` takes them.
type System = (&'static str, Vec<(&'static str, &'static str)>);

/// The systems measured by default; `large` adds the slow ones.
fn systems(large: bool) -> Vec<System> {
    let mut list = vec![
        ("two-phase-commit", vec![("rms", "6")]),
        ("two-phase-commit", vec![("rms", "7")]),
        ("two-phase-commit", vec![("rms", "7"), ("symmetry", "1")]),
        ("paxos-tla", vec![("ballots", "1")]),
        ("paxos-tla", vec![("ballots", "2")]),
        // FIFO channels: deliveries consume their messages.
        ("paxos", vec![("proposals", "0:1,1:2"), ("resets", "0")]),
    ];
    if large {
        list.push(("two-phase-commit", vec![("rms", "8")]));
        list.push(("two-phase-commit", vec![("rms", "9"), ("symmetry", "1")]));
    }
    list
}

struct Row {
    label: String,
    engine: EngineKind,
    threads: usize,
    model: Box<dyn DynModel>,
    reports: Vec<Report>,
}

impl Row {
    /// The median of the completed runs, `None` if there are none (an interrupted bench).
    fn median_seconds(&self) -> Option<f64> {
        let mut seconds: Vec<f64> = self.reports.iter().map(|r| r.stats.seconds).collect();
        seconds.sort_by(f64::total_cmp);
        seconds.get(seconds.len() / 2).copied()
    }
}

pub fn run(runs: u32, large: bool, threads: &[usize]) -> Result<ExitCode> {
    let mut stop = Stop::on_ctrl_c()?;
    let mut rows = Vec::new();
    for (name, params) in systems(large) {
        let Ok(system) = foretell_systems::find(name) else {
            eprintln!("skipping {name}: not in this build");
            continue;
        };
        let overrides: Vec<(String, String)> =
            params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let settings = system.settings(None, &overrides)?;
        let label = format!(
            "{name} {}",
            params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
        );
        for engine in [EngineKind::Bfs, EngineKind::Dfs] {
            for &threads in threads {
                let model = (system.build)(&settings)?;
                rows.push(Row { label: label.clone(), engine, threads, model, reports: Vec::new() });
            }
        }
    }
    'runs: for run in 0..runs {
        for row in &mut rows {
            if stop.raised() {
                break 'runs;
            }
            eprintln!("run {}/{runs}: {} {} threads={}", run + 1, row.label, row.engine, row.threads);
            let options = CheckOptions {
                engine: row.engine,
                threads: row.threads,
                interrupt: Some(stop.interrupt()),
                ..CheckOptions::default()
            };
            let report = row.model.check(&options)?;
            match stop.keep(report) {
                Some(report) => row.reports.push(report),
                None => break 'runs,
            }
        }
    }
    // An interrupted bench says how many runs each row's median is over.
    let (runs_header, runs_align) = if stop.raised() { (" runs |", " ---: |") } else { ("", "") };
    outln!(
        "| system | engine | threads | unique states | transitions | median s | median states/s | speed-up |{runs_header}"
    );
    outln!("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |{runs_align}");
    for row in &rows {
        let runs_cell = if stop.raised() { format!(" {} |", row.reports.len()) } else { String::new() };
        let (Some(first), Some(median)) = (row.reports.first(), row.median_seconds()) else {
            outln!(
                "| {} | {} | {} | not measured | – | – | – | |{runs_cell}",
                row.label,
                row.engine,
                row.threads
            );
            continue;
        };
        let stats = &first.stats;
        let one_thread = rows
            .iter()
            .find(|r| r.label == row.label && r.engine == row.engine && r.threads == 1)
            .and_then(Row::median_seconds);
        let speed_up = one_thread.map_or("".to_string(), |one| format!("{:.2}x", one / median));
        outln!(
            "| {} | {} | {} | {} | {} | {median:.3} | {:.0} | {speed_up} |{runs_cell}",
            row.label,
            row.engine,
            row.threads,
            stats.unique_states,
            stats.transitions,
            stats.unique_states as f64 / median
        );
        if row.reports.iter().any(|r| r.stats.unique_states != stats.unique_states) {
            anyhow::bail!(
                "{} {} threads={}: the state count changed between runs",
                row.label,
                row.engine,
                row.threads
            );
        }
    }
    stop.print_note();
    Ok(ExitCode::SUCCESS)
}
