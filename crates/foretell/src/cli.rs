//! The command line's shape: verbs and typed flags, parsed by clap.

use clap::{Parser, Subcommand};
use foretell_check::{
    parse_bytes, EngineKind, FingerprintBits, HashChoice, LassoMethod, LmcMode, Memory, Schedulers,
};
use foretell_model::Weights;
use std::path::PathBuf;
use std::time::Duration;

/// foretell: find bugs in distributed systems before their users do.
#[derive(Debug, Parser)]
#[command(name = "foretell", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the bundled systems with their parameters, variants and properties.
    List,
    /// Check a system exhaustively for safety violations.
    Check(CheckArgs),
    /// Look for liveness violations as MaceMC does: walks from the periphery of a bounded
    /// search, the critical transition of a dead path, and the nearest live path.
    Liveness(LivenessArgs),
    /// Look for liveness violations as lassos, as P# does: hot, fair cycles found by
    /// partial-state caching confirmed by replay, by the temperature threshold, or exactly in
    /// the state graph; reported with the stem briefly and the cycle in full.
    Lasso(LassoArgs),
    #[cfg(feature = "cluster")]
    Cluster(crate::cluster_cmd::ClusterArgs),
    /// Re-execute a trace file and report the first step that departs from it.
    Replay {
        /// The trace file.
        file: PathBuf,
    },
    /// Measure the stateful engines' throughput (distinct states per second, median of runs)
    /// on the reference systems, on one thread and on several, as a Markdown table; with
    /// `--liveness`, the liveness engine instead.
    Bench {
        /// Runs per configuration; the median is reported (`--lasso` counts executions instead).
        #[arg(long, default_value_t = 5, conflicts_with = "lasso", value_parser = clap::value_parser!(u32).range(1..=101))]
        runs: u32,
        /// Measure the liveness engine: time to a confirmed dead path for each liveness bug of
        /// the Mace systems (one seed per run), and the steps biased and uniform walks take to
        /// reach a live world (MaceMC's Figure 4), as two Markdown tables.
        #[arg(long, conflicts_with_all = ["large", "threads", "lasso"])]
        liveness: bool,
        /// Measure the lasso engine: the P# benchmarks' Table II (temperature, caching and
        /// exact, with the paper's figures beside), Dining Philosophers with 2 to 5
        /// philosophers, and the fixed versions, as Markdown tables.
        #[arg(long, conflicts_with_all = ["large", "threads"])]
        lasso: bool,
        /// Measure local model checking: Paxos with one proposal explored completely by the
        /// global engines and by LMC (general and projected), then each engine's depth on two
        /// proposals within `--seconds`, as Markdown tables.
        #[arg(long, conflicts_with_all = ["large", "threads", "lasso", "liveness"])]
        lmc: bool,
        /// Seconds per engine on the two-proposal space for `--lmc`.
        #[arg(long, default_value_t = 60, requires = "lmc", value_parser = clap::value_parser!(u64).range(1..))]
        seconds: u64,
        /// Executions per method for `--lasso`.
        #[arg(long, default_value_t = 1000, requires = "lasso", value_parser = clap::value_parser!(u64).range(1..))]
        executions: u64,
        /// Also run the larger configurations (two-phase commit with 8 RMs, and 9 with symmetry).
        #[arg(long)]
        large: bool,
        /// The thread counts to measure, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "1,2", value_parser = clap::value_parser!(u16).range(1..=64))]
        threads: Vec<u16>,
    },
    /// Print a trace file as text, one line per step.
    Show {
        /// The trace file.
        file: PathBuf,
        /// Also print each touched node's state after its step.
        #[arg(long)]
        states: bool,
    },
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub target: SystemChoice,
    /// The engine.
    #[arg(long, default_value = "bfs", value_parser = parse_engine)]
    pub engine: EngineKind,
    /// Explore no world more than D steps from the initial world.
    #[arg(long, value_name = "D")]
    pub max_depth: Option<usize>,
    /// Stop after S distinct worlds (with --engine lmc: S local states). The engines check the
    /// bound between batches of worlds (64 for breadth-first search, a few hundred for the
    /// others), so a run may pass it by the worlds a batch finds.
    #[arg(long, value_name = "S")]
    pub max_states: Option<u64>,
    /// Stop after TIME: seconds, or with a unit (500ms, 90s, 2m, 1h).
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Fingerprint bits kept per visited world: 64 (half the memory) or 128.
    #[arg(long, default_value = "64", value_parser = parse_bits)]
    pub fingerprint_bits: FingerprintBits,
    /// Worker threads for breadth-first (level by level) and depth-first (work stealing)
    /// search, 1 to 64.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub threads: u16,
    /// How breadth-first search stores seen worlds: exact (8 bytes a world), compact (4 bytes,
    /// lossy) or bitstate[:SIZE[:HASHES]] (a Bloom filter of fixed SIZE, lossy); lossy modes
    /// report the expected number of states missed.
    #[arg(long, default_value = "exact", value_name = "MODE", value_parser = parse_memory)]
    pub memory: Memory,
    /// Stop cleanly with a partial report when the process's resident memory reaches SIZE
    /// (e.g. 2G). Default: nine tenths of the memory available when the run starts (or of the
    /// container's limit, if lower).
    #[arg(long, value_name = "SIZE", value_parser = parse_bytes)]
    pub max_memory: Option<u64>,
    /// Start from a named scenario of the system (see `foretell list`), or from the world a
    /// saved trace reaches after its first STEPS steps (FILE.json[:STEPS], all by default).
    /// Depths count from there; traces still start at the initial world.
    #[arg(long, value_name = "SCENARIO|FILE[:STEPS]")]
    pub from: Option<String>,
    /// Where to write the violation's trace (default: SYSTEM[-BUG].trace.json).
    #[arg(long, value_name = "FILE")]
    pub trace_out: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub lmc: LmcArgs,
}

/// The flags of `--engine lmc`.
#[derive(Debug, clap::Args)]
pub struct LmcArgs {
    /// With --engine lmc: build every combination of local states (general), or only those the
    /// system's projections say could violate a property (projected, the paper's LMC-OPT).
    #[arg(long, value_name = "MODE", value_parser = parse_lmc_mode)]
    pub lmc_mode: Option<LmcMode>,
    /// With --engine lmc: at most N local events (timers, inputs) on a node's path.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub lmc_local_events: Option<u32>,
    /// With --engine lmc: raise the local-event bound from 1, round by round, from scratch (up
    /// to --lmc-local-events, or until nothing is cut).
    #[arg(long)]
    pub lmc_iterative: bool,
    /// With --engine lmc: a message sent again on one path is explored at most K more times.
    #[arg(long, value_name = "K")]
    pub lmc_duplicates: Option<u32>,
    /// With --engine lmc: one soundness verification examines at most N positions (node states
    /// and messages in flight) before it leaves its preliminary violation undecided [default:
    /// 1048576].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub lmc_soundness_budget: Option<u64>,
    /// With --engine lmc on FIFO channels or inboxes that duplicate nothing (refused elsewhere):
    /// never deliver a message locally after a later one from the same sender (each state and
    /// message then counts its channel places).
    #[arg(long)]
    pub lmc_channel_order: bool,
}

impl LmcArgs {
    /// Whether any flag was given.
    pub fn any(&self) -> bool {
        self.lmc_mode.is_some()
            || self.lmc_local_events.is_some()
            || self.lmc_iterative
            || self.lmc_duplicates.is_some()
            || self.lmc_soundness_budget.is_some()
            || self.lmc_channel_order
    }
}

#[derive(Debug, clap::Args)]
pub struct LivenessArgs {
    #[command(flatten)]
    pub target: SystemChoice,
    /// Depth d of the exhaustive search whose periphery the walks start from.
    #[arg(long, default_value_t = 4, value_name = "D")]
    pub depth: usize,
    /// Depth the random walks go to (raised automatically when walks look too short).
    #[arg(long, default_value_t = 20_000, value_name = "N")]
    pub dmax: usize,
    /// Random walks per probe when looking for the critical transition.
    #[arg(long, default_value_t = 16, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub walks: u32,
    /// Event weights of the walks: `uniform`, `biased`, or KIND=N pairs (app, msg, timer,
    /// fault), e.g. app=16,msg=8,timer=2,fault=1 (default: the system's).
    #[arg(long, value_name = "SPEC", value_parser = parse_weights)]
    pub weights: Option<Weights>,
    /// The seed every walk derives from.
    #[arg(long, default_value_t = 0, value_name = "S")]
    pub seed: u64,
    /// Where the search starts: `live` (the first live world a fault-free walk reaches,
    /// MaceMC's prefix-based search), `live-with-faults`, or a named scenario of the system.
    #[arg(long, value_name = "live|SCENARIO")]
    pub prefix: Option<String>,
    /// Worker threads for the walks (default: every core).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub threads: Option<u16>,
    /// Milliseconds a handler may run before it is reported as a divergence (at least 10: below
    /// that, a worker the system merely paused would look stuck).
    #[arg(long, default_value_t = 1000, value_name = "MS", value_parser = clap::value_parser!(u64).range(10..))]
    pub watchdog: u64,
    /// Look for liveness violations only: do not check `always` properties on the way.
    #[arg(long)]
    pub ignore_safety: bool,
    /// Stop after TIME: seconds, or with a unit (500ms, 90s, 2m, 1h).
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Where to write the trace (default: SYSTEM[-BUG].liveness.json).
    #[arg(long, value_name = "FILE")]
    pub trace_out: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct LassoArgs {
    #[command(flatten)]
    pub target: SystemChoice,
    /// caching (partial-state caching with replay), temperature (hot for TT steps in a row) or
    /// exact (fair cycles of the whole state graph).
    #[arg(long, default_value = "caching", value_parser = parse_method)]
    pub method: LassoMethod,
    /// random, pct[:D], probabilistic[:K], round-robin, dfs, or portfolio (all of them side by
    /// side, on every core).
    #[arg(long, default_value = "portfolio", value_name = "NAME", value_parser = parse_schedulers)]
    pub scheduler: Schedulers,
    /// Executions to run.
    #[arg(long, default_value_t = 1000, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub executions: u64,
    /// The longest execution, in steps (B).
    #[arg(long, default_value_t = 500, value_name = "B", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_steps: u64,
    /// Steps an unfair scheduler (pct, probabilistic, dfs) decides before a random one takes
    /// over; also the depth bound of dfs.
    #[arg(long, default_value_t = 100, value_name = "U")]
    pub unfair_steps: usize,
    /// The temperature threshold: consecutive hot steps that count as a violation.
    #[arg(long, default_value_t = 250, value_name = "TT", value_parser = clap::value_parser!(u64).range(1..))]
    pub tt: u64,
    /// Times a candidate cycle is replayed before it is reported.
    #[arg(long, default_value_t = 10, value_name = "RT", value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub rt: u64,
    /// What caching compares: the system's partial hash, or the full state.
    #[arg(long, default_value = "partial", value_parser = parse_hash)]
    pub hash: HashChoice,
    /// Check every report for a false positive (replay a lasso's cycle 1000 more times;
    /// continue a temperature report's execution to see whether it cools down).
    #[arg(long)]
    pub confirm: bool,
    /// The seed every execution derives from.
    #[arg(long, default_value_t = 0, value_name = "S")]
    pub seed: u64,
    /// Worker threads (default: every core).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub threads: Option<u16>,
    /// The most worlds the exact method keeps.
    #[arg(long, default_value_t = 2_000_000, value_name = "W", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_worlds: u64,
    /// Start from a named scenario of the system, or from a saved trace's prefix
    /// (FILE.json[:STEPS]).
    #[arg(long, value_name = "SCENARIO|FILE[:STEPS]")]
    pub from: Option<String>,
    /// Stop after TIME (with a partial report): seconds, or with a unit (500ms, 90s, 2m, 1h).
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Where to write the finding's trace (default: SYSTEM[-BUG].lasso.json).
    #[arg(long, value_name = "FILE")]
    pub trace_out: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

fn parse_method(text: &str) -> Result<LassoMethod, String> {
    text.parse()
}

fn parse_schedulers(text: &str) -> Result<Schedulers, String> {
    text.parse()
}

fn parse_hash(text: &str) -> Result<HashChoice, String> {
    text.parse()
}

fn parse_weights(text: &str) -> Result<Weights, String> {
    text.parse().map_err(|e: foretell_model::WeightsError| e.to_string())
}

/// Which bundled system a command checks: its name, bug variant and parameters.
#[derive(Debug, clap::Args)]
pub struct SystemChoice {
    /// The system to check (see `foretell list`).
    pub system: String,
    /// A bug variant of the system (default: the correct version).
    #[arg(long = "bug", value_name = "NAME")]
    pub bug: Option<String>,
    /// A system parameter, NAME=VALUE (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = parse_assignment)]
    pub set: Vec<(String, String)>,
}

impl SystemChoice {
    /// The file a violation's trace goes to unless `--trace-out` names one:
    /// SYSTEM[-BUG].trace.json, with the violation's index before `.trace` from the second on.
    pub fn default_trace_file(&self, index: usize) -> PathBuf {
        let base = self.file_stem();
        PathBuf::from(if index == 0 {
            format!("{base}.trace.json")
        } else {
            format!("{base}.{index}.trace.json")
        })
    }

    /// SYSTEM[-BUG]: the stem of the files a command writes by default.
    pub fn file_stem(&self) -> String {
        match &self.bug {
            Some(bug) => format!("{}-{bug}", self.system),
            None => self.system.clone(),
        }
    }
}

fn parse_assignment(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
        _ => Err(format!("expected NAME=VALUE, got {text:?}")),
    }
}

/// A positive, finite time a `Duration` can hold: a number of seconds (fractions allowed), or a
/// number with a unit, `ms`, `s`, `m` or `h` (`90`, `1.5s`, `500ms`, `2m`, `1h`).
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let refuse = || {
        format!(
            "expected a positive number of seconds, or one with a unit (500ms, 90s, 2m, 1h), got {text:?}"
        )
    };
    // `ms` before `m` and `s`, which end it too.
    let units = [("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)];
    let (number, scale) = units
        .iter()
        .find_map(|&(unit, scale)| Some((text.strip_suffix(unit)?, scale)))
        .unwrap_or((text, 1.0));
    let number: f64 = number.trim_end().parse().map_err(|_| refuse())?;
    let secs = number * scale;
    if secs.is_nan() || secs <= 0.0 {
        return Err(refuse());
    }
    Duration::try_from_secs_f64(secs).map_err(|_| format!("{text} is longer than a timeout can be"))
}

fn parse_bits(text: &str) -> Result<FingerprintBits, String> {
    match text {
        "64" => Ok(FingerprintBits::B64),
        "128" => Ok(FingerprintBits::B128),
        _ => Err(format!("expected 64 or 128, got {text:?}")),
    }
}

fn parse_memory(text: &str) -> Result<Memory, String> {
    text.parse()
}

fn parse_engine(text: &str) -> Result<EngineKind, String> {
    text.parse()
}

fn parse_lmc_mode(text: &str) -> Result<LmcMode, String> {
    match text {
        "general" => Ok(LmcMode::General),
        "projected" => Ok(LmcMode::Projected),
        _ => Err(format!("unknown mode {text:?} (expected general or projected)")),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn a_time_is_seconds_or_a_number_with_a_unit() {
        for (text, secs) in [
            ("90", 90.0),
            ("0.25", 0.25),
            ("1.5s", 1.5),
            ("500ms", 0.5),
            ("2m", 120.0),
            ("1h", 3600.0),
            ("3 s", 3.0),
        ] {
            assert_eq!(parse_duration(text), Ok(Duration::from_secs_f64(secs)), "{text}");
        }
        for text in ["0", "0ms", "-1s", "NaN", "s", "ms", "", "5x", "5 minutes", "m5"] {
            let error = parse_duration(text).expect_err(text);
            assert!(error.contains("positive number of seconds"), "{text}: {error}");
        }
        for text in ["1e30h", "inf"] {
            assert!(parse_duration(text).expect_err(text).contains("longer than a timeout can be"), "{text}");
        }
    }
}
