//! `foretell bench --lmc`: local model checking against the global engines on Paxos (LMC, "Local
//! Model Checking of Distributed Systems", section 5: Figures 10 and 11, and the two-proposal
//! space), measured in one run, as Markdown tables for docs/BENCHMARKS.md.
//!
//! The first table is the paper's Figure 10 space — three nodes, one proposal, no resets —
//! explored completely by global breadth-first search, by stateless depth-first search without
//! state hashing (the paper's B-DFS), and by LMC in its general and projected forms: median
//! seconds of `runs`, transitions, states, system states built, and each engine's speed-up over
//! global BFS. The second is the two-proposal space, each engine given the same time budget: how
//! deep it got.
//!
//! Ctrl-C stops the bench without losing it ([`crate::bench_stop`]): the run in progress is
//! discarded, no more start, and both tables are printed with the runs completed — the first
//! with a `runs` column saying how many each engine has — engines without any "not measured".

use crate::bench_stop::Stop;
use anyhow::Result;
use foretell_check::{Check, CheckOptions, Completion, EngineKind, LmcMode, LmcOptions, Pruning, Report};
use foretell_model::Model;
use foretell_systems::paxos::{model, parse_proposals, Bug, Paxos};
use std::process::ExitCode;
use std::time::Duration;

/// An engine configuration of the tables.
struct Engine {
    label: &'static str,
    options: CheckOptions,
    /// What the paper reports for it on the one-proposal space.
    paper: &'static str,
}

fn engines() -> Vec<Engine> {
    let lmc = |mode| CheckOptions {
        engine: EngineKind::Lmc,
        lmc: LmcOptions { mode, ..LmcOptions::default() },
        ..CheckOptions::default()
    };
    vec![
        Engine { label: "global BFS", options: CheckOptions::default(), paper: "-" },
        Engine {
            label: "stateless DFS with state hashing (MaceMC)",
            options: CheckOptions { engine: EngineKind::Stateless, ..CheckOptions::default() },
            paper: "-",
        },
        Engine {
            label: "B-DFS (stateless, no state hashing)",
            options: CheckOptions {
                engine: EngineKind::Stateless,
                pruning: Pruning::None,
                ..CheckOptions::default()
            },
            paper: "1514 s, 157,332 transitions",
        },
        Engine { label: "LMC general", options: lmc(LmcMode::General), paper: "5.16 s" },
        Engine {
            label: "LMC projected",
            options: lmc(LmcMode::Projected),
            paper: "189 ms, 1,186 transitions, 0 system states",
        },
    ]
}

fn run_one(model: &Model<Paxos>, options: &CheckOptions) -> Result<Report> {
    Ok(Check::with_options(model, options.clone()).try_run()?)
}

/// Runs the LMC benchmark: `runs` runs per engine on the one-proposal space, `seconds` per
/// engine on the two-proposal space.
pub fn run(runs: u32, seconds: u64) -> Result<ExitCode> {
    let mut stop = Stop::on_ctrl_c()?;
    let budget = Some(Duration::from_secs(seconds));
    let one = model(&parse_proposals("0:1").expect("valid"), 0, Bug::None);
    // Each engine's completed runs on the one-proposal space.
    let mut measured: Vec<(Engine, Vec<Report>)> = Vec::new();
    'engines: for engine in engines() {
        let mut reports = Vec::new();
        // Without state hashing the search is exponential: it gets the time budget, once.
        let unbounded = engine.options.pruning == Pruning::None;
        let options = CheckOptions {
            timeout: if unbounded { budget } else { None },
            interrupt: Some(stop.interrupt()),
            ..engine.options.clone()
        };
        for _ in 0..if unbounded { 1 } else { runs } {
            if stop.raised() {
                measured.push((engine, reports));
                break 'engines;
            }
            eprintln!("{}: run {}/{runs}", engine.label, reports.len() + 1);
            let report = run_one(&one, &options)?;
            reports.extend(stop.keep(report));
        }
        measured.push((engine, reports));
    }
    let two = model(&parse_proposals("0:1,1:2").expect("valid"), 0, Bug::None);
    // Each global and LMC engine's one run on the two-proposal space, if it completed.
    let mut deep: Vec<(Engine, Option<Report>)> = Vec::new();
    for engine in engines().into_iter().filter(|e| e.options.engine != EngineKind::Stateless) {
        if stop.raised() {
            deep.push((engine, None));
            continue;
        }
        eprintln!("{}: {seconds} s on two proposals", engine.label);
        let options =
            CheckOptions { timeout: budget, interrupt: Some(stop.interrupt()), ..engine.options.clone() };
        let report = run_one(&two, &options)?;
        deep.push((engine, stop.keep(report)));
    }

    outln!(
        "Paxos, 3 nodes, one proposal, no resets (LMC Figure 10), median of {runs} runs (B-DFS: one run of at \
         most {seconds} s):\n"
    );
    // An interrupted bench says how many runs each engine's median is over.
    let (runs_header, runs_align) = if stop.raised() { (" runs |", "---|") } else { ("", "") };
    outln!(
        "| engine | median s | transitions | states | system states | completion | vs global BFS | paper |{runs_header}"
    );
    outln!("|---|---|---|---|---|---|---|---|{runs_align}");
    let mut bfs_seconds = None;
    let engines_run = measured.len();
    let not_run = engines().into_iter().skip(engines_run).map(|engine| (engine, Vec::new()));
    for (engine, reports) in measured.into_iter().chain(not_run) {
        let runs_cell = if stop.raised() { format!(" {} |", reports.len()) } else { String::new() };
        let mut times: Vec<f64> = reports.iter().map(|r| r.stats.seconds).collect();
        times.sort_by(f64::total_cmp);
        let (Some(&median), Some(last)) = (times.get(times.len() / 2), reports.last()) else {
            outln!("| {} | not measured | – | – | – | – | – | {} |{runs_cell}", engine.label, engine.paper);
            continue;
        };
        // The first engine, global BFS, is the baseline.
        let baseline = *bfs_seconds.get_or_insert(median);
        let (states, system_states) = match &last.lmc {
            Some(lmc) => (format!("{} local", last.stats.unique_states), lmc.system_states.to_string()),
            None => (last.stats.unique_states.to_string(), "-".into()),
        };
        outln!(
            "| {} | {:.6} | {} | {} | {} | {} | {:.1}x | {} |{runs_cell}",
            engine.label,
            median,
            last.stats.transitions,
            states,
            system_states,
            completion(last.completion),
            baseline / median.max(1e-9),
            engine.paper
        );
    }
    outln!(
        "\nPaxos, 3 nodes, two proposals from two nodes, no resets: {seconds} s per engine (the paper: \
              B-DFS reached depth 20, LMC 39, of 41, in hours):\n"
    );
    outln!("| engine | depth reached (BFS: levels completed; LMC: longest event sequence) | transitions | states | preliminary violations (unsound) | completion |");
    outln!("|---|---|---|---|---|---|");
    for (engine, report) in deep {
        let Some(report) = report else {
            outln!("| {} | not measured | – | – | – | – |", engine.label);
            continue;
        };
        let (depth, violations) = match &report.lmc {
            // LMC's depth: the longest event sequence its local states stand for.
            Some(lmc) => {
                (lmc.deepest_sequence as usize, format!("{} ({})", lmc.preliminary_violations, lmc.unsound))
            }
            // A global search completed every level before its deepest.
            None if report.completion == Completion::Exhausted => (report.stats.max_depth, "-".into()),
            None => (report.stats.max_depth.saturating_sub(1), "-".into()),
        };
        outln!(
            "| {} | {} | {} | {} | {} | {} |",
            engine.label,
            depth,
            report.stats.transitions,
            report.stats.unique_states,
            violations,
            completion(report.completion)
        );
    }
    stop.print_note();
    Ok(ExitCode::SUCCESS)
}

fn completion(completion: Completion) -> &'static str {
    match completion {
        Completion::Exhausted => "complete",
        Completion::TimeBound => "time budget",
        _ => "stopped",
    }
}
