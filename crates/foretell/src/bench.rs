//! `foretell bench`: throughput of the stateful engines on the reference systems, on one thread
//! and on several, median of several runs, as a Markdown table for docs/BENCHMARKS.md. Runs
//! alternate between configurations so that machine noise spreads over all of them; the
//! speed-up column compares each multi-threaded row with the one-thread row of the same system
//! and engine, measured in the same run.

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
    fn median_seconds(&self) -> f64 {
        let mut seconds: Vec<f64> = self.reports.iter().map(|r| r.stats.seconds).collect();
        seconds.sort_by(f64::total_cmp);
        seconds[seconds.len() / 2]
    }
}

pub fn run(runs: u32, large: bool, threads: &[usize]) -> Result<ExitCode> {
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
    for run in 0..runs {
        for row in &mut rows {
            eprintln!("run {}/{runs}: {} {} threads={}", run + 1, row.label, row.engine, row.threads);
            let options =
                CheckOptions { engine: row.engine, threads: row.threads, ..CheckOptions::default() };
            row.reports.push(row.model.check(&options)?);
        }
    }
    outln!(
        "| system | engine | threads | unique states | transitions | median s | median states/s | speed-up |"
    );
    outln!("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for row in &rows {
        let stats = &row.reports[0].stats;
        let median = row.median_seconds();
        let one_thread = rows
            .iter()
            .find(|r| r.label == row.label && r.engine == row.engine && r.threads == 1)
            .map(|r| r.median_seconds());
        let speed_up = one_thread.map_or("".to_string(), |one| format!("{:.2}x", one / median));
        outln!(
            "| {} | {} | {} | {} | {} | {median:.3} | {:.0} | {speed_up} |",
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
    Ok(ExitCode::SUCCESS)
}
