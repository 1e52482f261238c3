//! `foretell bench --lasso`: the P# benchmarks under the lasso engine — the paper's Table II
//! (FMCAD'17 "Lasso Detection using Partial-State Caching", section VI) measured on foretell in
//! one run, with the paper's figures beside ours, then Dining Philosophers with 2 to 5
//! philosophers (section III), then every fixed version — as Markdown tables for
//! docs/BENCHMARKS.md.
//!
//! Settings are the paper's: executions of at most 500 steps, `TT` 250, `RT` 10; temperature
//! with the random scheduler, caching with the portfolio (on every core). Every report is
//! confirmed, so false positives are counted rather than assumed: a lasso by replaying its
//! cycle 1000 more times, a temperature report by continuing its execution under the random
//! scheduler for 10 × `TT` steps (a report whose execution cools down was premature). The exact
//! method explores each benchmark's whole graph, up to two million worlds.
//!
//! Ctrl-C stops the bench without losing it ([`crate::bench_stop`]): the run in progress is
//! discarded, no more start, and the tables are printed with the runs completed, the cells of
//! the others "not measured".

use crate::bench_stop::Stop;
use anyhow::Result;
use foretell_check::{FoundKind, LassoMethod, LassoOptions, LassoReport, SchedulerKind, Schedulers};
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Duration;

/// What the paper reports for a benchmark (Table II).
struct Paper {
    temperature: f64,
    caching: f64,
    /// `L_T` and `L_C` of caching.
    lengths: Option<(f64, f64)>,
    discarded: u64,
}

/// A Table II row: the system, its buggy variant, and the paper's figures.
struct Row {
    system: &'static str,
    variant: Option<&'static str>,
    paper: Paper,
}

fn table_ii() -> Vec<Row> {
    let row = |system, variant, temperature, caching, lengths, discarded| Row {
        system,
        variant,
        paper: Paper { temperature, caching, lengths, discarded },
    };
    vec![
        row("proposers", Some("duelling"), 0.0, 1.16, Some((21.9, 13.0)), 237),
        row("chord-lookup", Some("key-17"), 6.02, 6.03, Some((36.4, 3.2)), 0),
        row("replicating-storage", Some("stale-report"), 13.78, 11.96, Some((295.4, 72.3)), 238),
        row("failure-detector", Some("late-register"), 0.03, 0.6, Some((78.1, 8.0)), 10076),
        row("process-scheduler", Some("lost-wakeup"), 0.33, 11.7, Some((236.1, 12.4)), 94671),
        row("leader-election", None, 0.0, 0.0, None, 60921),
        row("sliding-window", None, 0.0, 0.0, None, 0),
    ]
}

/// The paper's caching figures for 2 to 5 philosophers (section III).
const PHILOSOPHERS: [(usize, f64); 4] = [(2, 17.3), (3, 4.0), (4, 0.4), (5, 0.03)];

/// The exact method's time bound per benchmark.
const EXACT_TIMEOUT: Duration = Duration::from_secs(120);

/// One run, `None` if Ctrl-C came before or during it.
fn lasso(
    stop: &mut Stop,
    system: &str,
    variant: Option<&str>,
    set: &[(String, String)],
    options: LassoOptions,
) -> Result<Option<LassoReport>> {
    if stop.raised() {
        return Ok(None);
    }
    let system = foretell_systems::find(system)?;
    let settings = system.settings(variant, set)?;
    let model = system.build_model(&settings)?;
    let report = model.lasso(&LassoOptions { interrupt: Some(stop.interrupt()), ..options })?;
    Ok(stop.keep(report))
}

/// A cell of a run's report, or "not measured".
fn cell(report: &Option<LassoReport>, show: impl Fn(&LassoReport) -> String) -> String {
    report.as_ref().map_or("not measured".to_string(), show)
}

fn sampling(method: LassoMethod, schedulers: Schedulers, executions: u64) -> LassoOptions {
    LassoOptions { method, schedulers, executions, confirm: true, ..LassoOptions::default() }
}

fn exact() -> LassoOptions {
    LassoOptions { method: LassoMethod::Exact, timeout: Some(EXACT_TIMEOUT), ..LassoOptions::default() }
}

/// `12.34% (FP 0)`.
fn percent(report: &LassoReport) -> String {
    let fp = report.false_positives.unwrap_or(0);
    format!("{:.2}% (FP {fp})", report.buggy_percent())
}

/// What the exact method found, briefly.
fn exact_cell(report: &LassoReport) -> String {
    let stats = report.exact.expect("an exact report");
    let found = match report.finding.as_ref().map(|f| &f.kind) {
        Some(FoundKind::Lasso { cycle_start, cycle_length }) => format!("lasso {cycle_start}+{cycle_length}"),
        Some(FoundKind::EndsHot) => "stops hot".to_string(),
        Some(other) => format!("{other:?}"),
        None if stats.complete => "none".to_string(),
        None => "none so far".to_string(),
    };
    let complete = if stats.complete { "" } else { ", incomplete" };
    format!("{found} ({} worlds{complete}, {:.1} s)", stats.worlds, report.elapsed.as_secs_f64())
}

fn lengths(report: &LassoReport) -> String {
    match (report.mean_trace_length(), report.mean_cycle_length()) {
        (Some(lt), Some(lc)) => format!("{lt:.1}, {lc:.1}"),
        _ => "-".to_string(),
    }
}

pub fn run(executions: u64) -> Result<ExitCode> {
    let mut stop = Stop::on_ctrl_c()?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Table II on foretell: {executions} executions per method, at most 500 steps, TT 250, RT 10.\n"
    );
    let _ = writeln!(
        out,
        "| benchmark | temperature | caching | L_T, L_C | D | exact | exec/s (temp, caching) | paper: temperature, caching | paper: L_T, L_C | paper: D |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
    for row in table_ii() {
        eprintln!("bench --lasso: {}", row.system);
        let temperature = lasso(
            &mut stop,
            row.system,
            row.variant,
            &[],
            sampling(LassoMethod::Temperature, Schedulers::One(SchedulerKind::Random), executions),
        )?;
        let caching = lasso(
            &mut stop,
            row.system,
            row.variant,
            &[],
            sampling(LassoMethod::Caching, Schedulers::Portfolio, executions),
        )?;
        let exact = lasso(&mut stop, row.system, row.variant, &[], exact())?;
        let paper = &row.paper;
        let _ = writeln!(
            out,
            "| {}{} | {} | {} | {} | {} | {} | {}, {} | {}%, {}% | {} | {} |",
            row.system,
            row.variant.map_or(String::new(), |v| format!(" --bug {v}")),
            cell(&temperature, percent),
            cell(&caching, percent),
            cell(&caching, lengths),
            cell(&caching, |r| r.discarded.to_string()),
            cell(&exact, exact_cell),
            cell(&temperature, |r| format!("{:.0}", r.executions_per_second())),
            cell(&caching, |r| format!("{:.0}", r.executions_per_second())),
            paper.temperature,
            paper.caching,
            paper.lengths.map_or("-".to_string(), |(lt, lc)| format!("{lt}, {lc}")),
            paper.discarded,
        );
    }
    let _ = writeln!(
        out,
        "\nDining Philosophers ({executions} executions, random scheduler; temperature with TT 50):\n"
    );
    let _ = writeln!(out, "| philosophers | temperature | caching | L_T, L_C | D | exact | paper: caching |");
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for (philosophers, paper) in PHILOSOPHERS {
        eprintln!("bench --lasso: dining-philosophers {philosophers}");
        let set = [("philosophers".to_string(), philosophers.to_string())];
        let random = Schedulers::One(SchedulerKind::Random);
        let temperature = lasso(
            &mut stop,
            "dining-philosophers",
            Some("livelock"),
            &set,
            LassoOptions {
                temperature_threshold: 50,
                ..sampling(LassoMethod::Temperature, random.clone(), executions)
            },
        )?;
        let caching = lasso(
            &mut stop,
            "dining-philosophers",
            Some("livelock"),
            &set,
            sampling(LassoMethod::Caching, random, executions),
        )?;
        let exact = lasso(&mut stop, "dining-philosophers", Some("livelock"), &set, exact())?;
        let _ = writeln!(
            out,
            "| {philosophers} | {} | {} | {} | {} | {} | {paper}% |",
            cell(&temperature, percent),
            cell(&caching, percent),
            cell(&caching, lengths),
            cell(&caching, |r| r.discarded.to_string()),
            cell(&exact, exact_cell),
        );
    }
    let _ = writeln!(
        out,
        "\nThe fixed versions ({executions} executions of caching with the portfolio, and exact):\n"
    );
    let _ = writeln!(out, "| benchmark | caching | exact |");
    let _ = writeln!(out, "|---|---|---|");
    let fixed = table_ii().into_iter().filter(|row| row.variant.is_some()).map(|row| (row.system, vec![]));
    let philosophers =
        (2..=5).map(|n| ("dining-philosophers", vec![("philosophers".to_string(), n.to_string())]));
    for (system, set) in fixed.chain(philosophers) {
        eprintln!("bench --lasso: {system} (fixed)");
        let caching = lasso(
            &mut stop,
            system,
            None,
            &set,
            sampling(LassoMethod::Caching, Schedulers::Portfolio, executions),
        )?;
        let exact = lasso(&mut stop, system, None, &set, exact())?;
        let label = set.first().map_or(system.to_string(), |(_, n)| format!("{system} ({n})"));
        let _ = writeln!(out, "| {label} | {} | {} |", cell(&caching, percent), cell(&exact, exact_cell));
    }
    out!("{out}");
    stop.print_note();
    Ok(ExitCode::SUCCESS)
}
