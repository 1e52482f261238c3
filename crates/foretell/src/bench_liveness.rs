//! `foretell bench --liveness`: the liveness engine (MaceMC, NSDI'07, section 4) on the Mace
//! systems, as two Markdown tables for docs/BENCHMARKS.md.
//!
//! The first table runs the engine on each liveness bug once per seed (seeds 0, 1, ...) and
//! gives medians over the seeds: seconds from the start of the run (the exhaustive search
//! included) to the first suspect path, to its confirmed critical transition (case C1) and in
//! all, the walks taken and their rate, and the critical step found (with its range, as each
//! seed follows another suspect path). Runs alternate between the bugs so that machine noise
//! spreads over all of them. A run that ends other than with a dead path is counted and named,
//! not retried. Walks run on the engine's default threads, one per core.
//!
//! The second is MaceMC's Figure 4 as numbers: from the start of each system's fixed version,
//! how many steps random walks take to reach a live world, with the biased weights and with
//! uniform ones, one fixed seed. Walks that never get there within `dmax` steps count as
//! longer than any that do.
//!
//! Ctrl-C stops the bench without losing it ([`crate::bench_stop`]): the run in progress is
//! discarded, no more start, and both tables are printed with the runs completed (the first
//! table's "found C1" column counts them); rows without any are "not measured".

use crate::bench_stop::Stop;
use anyhow::Result;
use foretell_check::{Interrupt, Liveness, LivenessReport, LivenessVerdict};
use foretell_model::{Model, Protocol, Weights};
use foretell_systems::{chord, mace_transport, randtree};
use std::process::ExitCode;
use std::sync::Arc;

/// The walks per weighting in the Figure 4 table.
const FIGURE4_WALKS: usize = 1000;

/// The seed of the Figure 4 walks.
const FIGURE4_SEED: u64 = 1;

/// How the engine searches for a bug: MaceMC's `d`, `dmax` and `k`, and whether `always`
/// properties are checked on the way.
#[derive(Clone, Copy, Debug)]
struct Search {
    depth: usize,
    dmax: usize,
    walks: usize,
    invariants: bool,
}

/// The search for every bug: the engine's default `d` and `k`, and a `dmax` more than 20
/// times the 90th percentile of the steps biased walks take to liveness from the start of
/// each fixed system (the second table).
const SEARCH: Search = Search { depth: 4, dmax: 2000, walks: 16, invariants: true };

/// A liveness engine run with a given seed.
type SeededRun = Box<dyn Fn(u64, Interrupt) -> Result<LivenessReport>>;

/// A liveness bug to find, with the search that finds it.
struct BugCase {
    /// The system and its bug variant.
    label: &'static str,
    /// Where the search starts, and the configuration if it is not the default.
    start: &'static str,
    search: Search,
    run: SeededRun,
}

/// The engine on `model` with `search`, any seed.
fn seeded<P: Protocol>(model: Model<P>, search: Search) -> SeededRun {
    let model = Arc::new(model);
    Box::new(move |seed, interrupt| {
        let run = Liveness::new(Arc::clone(&model))
            .interrupt(interrupt)
            .depth(search.depth)
            .dmax(search.dmax)
            .walks(search.walks)
            .invariants(search.invariants)
            .seed(seed);
        Ok(run.run()?)
    })
}

/// The liveness bugs of the Mace systems, each with a search that finds it in well under a
/// second on this project's machine.
fn bugs() -> Vec<BugCase> {
    vec![randtree_recovery_timer(), randtree_remove_while_joining(), chord_partition(), stale_syn()]
}

/// RT3: the lost recovery timer. It also violates `timers` at the critical step, so that
/// invariant is not checked.
fn randtree_recovery_timer() -> BugCase {
    let search = Search { invariants: false, ..SEARCH };
    let model = randtree::model(randtree::Config::default(), randtree::Bug::RecoveryTimer);
    BugCase {
        label: "randtree recovery-timer",
        start: "initial world (3 nodes, 1 reset)",
        search,
        run: seeded(model, search),
    }
}

/// RT10: the stale child, from the scenario that ends with the dropped `remove`.
fn randtree_remove_while_joining() -> BugCase {
    let search = SEARCH;
    let config = randtree::Config::default();
    let scenario = randtree::scenario("rt10", config).expect("rt10 is defined for 3 nodes");
    let model = randtree::model(config, randtree::Bug::RemoveWhileJoining).start_from(scenario);
    BugCase {
        label: "randtree remove-while-joining",
        start: "rt10 (1 reset)",
        search,
        run: seeded(model, search),
    }
}

/// PASTRY 2 on Chord: a socket error splits the ring for good.
fn chord_partition() -> BugCase {
    let search = SEARCH;
    let config =
        chord::Config { resets: 0, socket_errors: 1, bug: chord::Bug::Partition, ..chord::Config::default() };
    let scenario = chord::scenario("ring", config).expect("the ring stabilizes");
    BugCase {
        label: "chord partition",
        start: "ring (2 nodes, 1 socket error, no reset)",
        search,
        run: seeded(chord::model(config).start_from(scenario), search),
    }
}

/// MaceTransport 3 (Figure 5): the stale SYN. The variant also delivers twice, so the
/// invariants are not checked.
fn stale_syn() -> BugCase {
    let search = Search { invariants: false, ..SEARCH };
    let config =
        mace_transport::Config { bug: mace_transport::Bug::StaleSyn, ..mace_transport::Config::default() };
    let scenario = mace_transport::scenario("fig5", config.messages).expect("fig5 is defined");
    BugCase {
        label: "mace-transport stale-syn",
        start: "fig5 (2 messages, 1 reset)",
        search,
        run: seeded(mace_transport::model(config).start_from(scenario), search),
    }
}

/// The median of `values` (the upper one of an even count), or `None` if there are none.
fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied()
}

/// A median in seconds, or a dash.
fn seconds(value: Option<f64>) -> String {
    value.map_or("–".into(), |s| format!("{s:.3}"))
}

/// How many runs found a dead path, and what the others concluded.
fn found(reports: &[LivenessReport]) -> String {
    let dead = reports.iter().filter(|r| r.verdict == LivenessVerdict::Dead).count();
    let mut others: Vec<String> = Vec::new();
    for report in reports.iter().filter(|r| r.verdict != LivenessVerdict::Dead) {
        let name = verdict_name(report.verdict);
        if !others.contains(&name) {
            others.push(name);
        }
    }
    if others.is_empty() {
        format!("{dead}/{}", reports.len())
    } else {
        format!("{dead}/{} (others: {})", reports.len(), others.join(", "))
    }
}

/// A verdict in a word or two.
fn verdict_name(verdict: LivenessVerdict) -> String {
    match verdict {
        LivenessVerdict::NoSuspect => "no suspect".into(),
        LivenessVerdict::Dead => "C1".into(),
        LivenessVerdict::Inconclusive => "C2".into(),
        LivenessVerdict::SafetyViolation => "safety violation".into(),
        LivenessVerdict::Divergence => "divergence".into(),
        LivenessVerdict::NoLivePrefix => "no live prefix".into(),
        LivenessVerdict::Stopped(why) => format!("stopped ({why})"),
    }
}

/// The median critical step of the dead paths found, with the range when seeds differ.
fn critical_steps(reports: &[LivenessReport]) -> String {
    let mut steps: Vec<usize> = reports
        .iter()
        .filter(|r| r.verdict == LivenessVerdict::Dead)
        .filter_map(LivenessReport::critical_step)
        .collect();
    steps.sort_unstable();
    match (steps.first(), steps.last()) {
        (Some(low), Some(high)) if low == high => low.to_string(),
        (Some(low), Some(high)) => format!("{} ({low}–{high})", steps[steps.len() / 2]),
        _ => "–".into(),
    }
}

/// Runs every bug once per seed, the bugs alternating; the reports of each bug in seed order.
/// Ctrl-C stops them, the run in progress discarded.
fn run_bugs(cases: &[BugCase], runs: u32, stop: &mut Stop) -> Result<Vec<Vec<LivenessReport>>> {
    let mut reports: Vec<Vec<LivenessReport>> = cases.iter().map(|_| Vec::new()).collect();
    'seeds: for seed in 0..u64::from(runs) {
        for (case, reports) in cases.iter().zip(&mut reports) {
            if stop.raised() {
                break 'seeds;
            }
            eprintln!("run {}/{runs}: {} from {}", seed + 1, case.label, case.start);
            let report = (case.run)(seed, stop.interrupt())?;
            match stop.keep(report) {
                Some(report) => reports.push(report),
                None => break 'seeds,
            }
        }
    }
    Ok(reports)
}

/// Prints the bug table.
fn print_bugs(cases: &[BugCase], reports: &[Vec<LivenessReport>]) {
    outln!(
        "| bug | start | d / dmax / k | found C1 | critical step | median s to first suspect | \
         median s to C1 | median s in all | median walks | median walks/s | median walk steps/s |"
    );
    outln!("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (case, reports) in cases.iter().zip(reports) {
        let stat = |f: fn(&LivenessReport) -> Option<f64>| median(reports.iter().filter_map(f).collect());
        let Search { depth, dmax, walks, .. } = case.search;
        if reports.is_empty() {
            outln!(
                "| {} | {} | {depth} / {dmax} / {walks} | not measured | – | – | – | – | – | – | – |",
                case.label,
                case.start
            );
            continue;
        }
        outln!(
            "| {} | {} | {depth} / {dmax} / {walks} | {} | {} | {} | {} | {} | {:.0} | {:.0} | {:.0} |",
            case.label,
            case.start,
            found(reports),
            critical_steps(reports),
            seconds(stat(|r| r.stats.first_suspect_seconds)),
            seconds(stat(|r| r.stats.confirm_seconds)),
            seconds(stat(|r| Some(r.stats.seconds))),
            stat(|r| Some(r.stats.walks as f64)).unwrap_or(0.0),
            stat(|r| Some(r.stats.walks_per_second())).unwrap_or(0.0),
            stat(|r| Some(r.stats.walk_steps as f64 / r.stats.seconds.max(f64::MIN_POSITIVE))).unwrap_or(0.0),
        );
    }
}

/// Walks to liveness with given weights: the steps each walk took, `None` if it never got there.
type WeightedWalks = Box<dyn Fn(Weights, Interrupt) -> Result<Vec<Option<usize>>>>;

/// A fixed system whose walks to liveness are measured.
struct WalkCase {
    label: &'static str,
    start: &'static str,
    dmax: usize,
    walks: WeightedWalks,
}

/// [`FIGURE4_WALKS`] walks from the start of `model`, at most `dmax` steps each. Only liveness
/// is looked at: the fixed versions' invariants are checked elsewhere.
fn walks_to_liveness<P: Protocol>(model: Model<P>, dmax: usize) -> WeightedWalks {
    let model = Arc::new(model);
    Box::new(move |weights, interrupt| {
        let run = Liveness::new(Arc::clone(&model))
            .interrupt(interrupt)
            .dmax(dmax)
            .weights(weights)
            .seed(FIGURE4_SEED)
            .invariants(false);
        Ok(run.steps_to_liveness(FIGURE4_WALKS)?)
    })
}

/// The fixed systems from their initial worlds (none of which is live), in their default
/// configurations, plus RandTree on two nodes (Figure 4's "simple 2-node overlay tree") and
/// MaceTransport from `fig5` (an indeterminate world: two SYNs in flight after a reset).
fn fixed_systems() -> Vec<WalkCase> {
    let dmax = 20_000;
    let tree = randtree::Config::default();
    let transport = mace_transport::Config::default();
    let fig5 = mace_transport::scenario("fig5", transport.messages).expect("fig5 is defined");
    let case = |label, start, walks| WalkCase { label, start, dmax, walks };
    vec![
        case(
            "randtree",
            "initial world (2 nodes, 1 reset)",
            walks_to_liveness(
                randtree::model(randtree::Config { nodes: 2, ..tree }, randtree::Bug::None),
                dmax,
            ),
        ),
        case(
            "randtree",
            "initial world (3 nodes, 1 reset)",
            walks_to_liveness(randtree::model(tree, randtree::Bug::None), dmax),
        ),
        case(
            "chord",
            "initial world (2 nodes, 1 reset, 1 socket error)",
            walks_to_liveness(chord::model(chord::Config::default()), dmax),
        ),
        case(
            "mace-transport",
            "initial world (2 messages, 1 reset)",
            walks_to_liveness(mace_transport::model(transport), dmax),
        ),
        case(
            "mace-transport",
            "fig5 (2 messages, 1 reset)",
            walks_to_liveness(mace_transport::model(transport).start_from(fig5), dmax),
        ),
    ]
}

/// The distribution of the steps walks took to liveness.
struct Distribution {
    median: Option<usize>,
    p90: Option<usize>,
    /// The mean over the walks that reached a live world.
    mean: Option<f64>,
    reached: usize,
    walks: usize,
}

impl Distribution {
    /// Walks that never reached a live world sort after every walk that did.
    fn of(mut steps: Vec<Option<usize>>) -> Self {
        steps.sort_unstable_by_key(|s| s.unwrap_or(usize::MAX));
        let at = |fraction: f64| {
            let index = ((steps.len() as f64 * fraction).ceil() as usize).clamp(1, steps.len()) - 1;
            steps[index]
        };
        let reached: Vec<usize> = steps.iter().flatten().copied().collect();
        let mean = (!reached.is_empty()).then(|| reached.iter().sum::<usize>() as f64 / reached.len() as f64);
        Distribution { median: at(0.5), p90: at(0.9), mean, reached: reached.len(), walks: steps.len() }
    }
}

/// A percentile in steps, or "> dmax" when fewer walks than that reached liveness.
fn steps(value: Option<usize>, dmax: usize) -> String {
    value.map_or(format!("> {dmax}"), |s| s.to_string())
}

/// Measures and prints the Figure 4 table; after Ctrl-C, the rows not measured say so.
fn print_figure4(cases: &[WalkCase], stop: &mut Stop) -> Result<()> {
    outln!(
        "| system (fixed) | start | weights | walks | dmax | median steps | 90th percentile | \
         mean steps (reached) | reached live within dmax |"
    );
    outln!("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for case in cases {
        for (name, weights) in [("biased", Weights::BIASED), ("uniform", Weights::UNIFORM)] {
            let walks = if stop.raised() {
                None
            } else {
                eprintln!("walks to liveness: {} from {}, {name}", case.label, case.start);
                let walks = (case.walks)(weights, stop.interrupt())?;
                stop.keep(walks)
            };
            let Some(walks) = walks else {
                outln!(
                    "| {} | {} | {name} ({weights}) | not measured | {} | – | – | – | – |",
                    case.label,
                    case.start,
                    case.dmax
                );
                continue;
            };
            let d = Distribution::of(walks);
            outln!(
                "| {} | {} | {name} ({weights}) | {} | {} | {} | {} | {} | {:.1}% |",
                case.label,
                case.start,
                d.walks,
                case.dmax,
                steps(d.median, case.dmax),
                steps(d.p90, case.dmax),
                d.mean.map_or("–".into(), |m| format!("{m:.1}")),
                100.0 * d.reached as f64 / d.walks as f64
            );
        }
    }
    Ok(())
}

/// `foretell bench --liveness --runs N`: both tables, a blank line between them.
pub fn run(runs: u32) -> Result<ExitCode> {
    let mut stop = Stop::on_ctrl_c()?;
    let cases = bugs();
    let reports = run_bugs(&cases, runs, &mut stop)?;
    print_bugs(&cases, &reports);
    outln!();
    print_figure4(&fixed_systems(), &mut stop)?;
    stop.print_note();
    Ok(ExitCode::SUCCESS)
}
