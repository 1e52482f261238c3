//! `foretell bench`: BFS throughput on the reference systems, median of several runs, as a
//! Markdown table for docs/BENCHMARKS.md. Runs alternate between configurations so that machine
//! noise spreads over all of them.

use anyhow::Result;
use foretell_check::{CheckOptions, EngineKind, Report};
use std::process::ExitCode;

/// (system, parameters) pairs measured by default; `large` adds the slow ones.
fn configurations(large: bool) -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    let mut list = vec![
        ("two-phase-commit", vec![("rms", "5")]),
        ("two-phase-commit", vec![("rms", "6")]),
        ("two-phase-commit", vec![("rms", "7")]),
        ("paxos-tla", vec![("ballots", "1")]),
        ("paxos-tla", vec![("ballots", "2")]),
    ];
    if large {
        list.push(("two-phase-commit", vec![("rms", "8")]));
    }
    list
}

pub fn run(runs: u32, large: bool) -> Result<ExitCode> {
    let mut rows = Vec::new();
    for (name, params) in configurations(large) {
        let Ok(system) = foretell_systems::find(name) else {
            eprintln!("skipping {name}: not in this build");
            continue;
        };
        let overrides: Vec<(String, String)> =
            params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let model = (system.build)(&system.settings(None, &overrides)?)?;
        let label = format!(
            "{name} {}",
            params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
        );
        rows.push((label, model, Vec::<Report>::new()));
    }
    let options = CheckOptions { engine: EngineKind::Bfs, ..CheckOptions::default() };
    for run in 0..runs {
        for (label, model, reports) in &mut rows {
            eprintln!("run {}/{runs}: {label}", run + 1);
            reports.push(model.check(&options)?);
        }
    }
    println!("| system | unique states | transitions | max depth | median s | median states/s |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for (label, _, reports) in &rows {
        let first = &reports[0].stats;
        let mut seconds: Vec<f64> = reports.iter().map(|r| r.stats.seconds).collect();
        seconds.sort_by(f64::total_cmp);
        let median = seconds[seconds.len() / 2];
        println!(
            "| {label} | {} | {} | {} | {median:.3} | {:.0} |",
            first.unique_states,
            first.transitions,
            first.max_depth,
            first.unique_states as f64 / median
        );
    }
    Ok(ExitCode::SUCCESS)
}
