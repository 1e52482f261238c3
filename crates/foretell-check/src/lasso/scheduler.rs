//! Schedulers: who runs next, and what every `choose` inside a handler answers — P#'s
//! `GETNEXT` (FMCAD'17 "Lasso Detection using Partial-State Caching", section III, Algorithm 1)
//! behind the one choice seam.
//!
//! A scheduler picks a *process* among the enabled ones (a node, or the environment for
//! faults) and then one of that process's enabled events. The kinds:
//!
//! - `random`: a uniformly random enabled process, then a uniformly random event of it.
//! - `pct:D`: probabilistic concurrency testing (Burckhardt, Kothari, Musuvathi and Nagarakatte,
//!   ASPLOS'10): random distinct priorities, the highest-priority enabled process runs, and at
//!   `D - 1` random steps the running process drops below every other.
//! - `probabilistic:K`: P#'s probabilistic random scheduler: keep running the last process
//!   while it is enabled, switching to a random one only when `K` coin flips all come up heads.
//! - `round-robin`: the enabled processes in turn, from a start that varies per execution.
//! - `dfs`: bounded depth-first enumeration of every decision (process, event and choice) over
//!   the first `unfair_steps` steps, one new schedule per execution, until they are exhausted.
//!
//! Only `random` and `round-robin` are fair by themselves; like P#'s liveness mode, the others
//! decide the first `unfair_steps` steps of an execution and hand over to the random scheduler
//! after that, so that long executions are fair and hot cycles mean something.
//!
//! Every decision of execution `e` is a function of (kind, seed, e) — and, for `dfs`, of the
//! executions before it — so a run is reproducible from its scheduler and seed.

use crate::liveness::WalkRng;
use std::fmt;
use std::str::FromStr;

/// A scheduler kind, as `--scheduler` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedulerKind {
    /// Uniformly random.
    Random,
    /// Priority-based with `depth - 1` priority change points.
    Pct {
        /// PCT's bug depth `d`.
        depth: u32,
    },
    /// Sticky random: switch process only when `coin_flips` coins are all heads.
    Probabilistic {
        /// The coins flipped before switching.
        coin_flips: u32,
    },
    /// The enabled processes in turn.
    RoundRobin,
    /// Bounded depth-first enumeration of schedules.
    Dfs,
}

/// The portfolio: what `--scheduler portfolio` runs side by side (after P#'s default
/// portfolio: random, several PCT bounds, probabilistic random, and systematic search).
pub const PORTFOLIO: [SchedulerKind; 8] = [
    SchedulerKind::Random,
    SchedulerKind::Pct { depth: 2 },
    SchedulerKind::Pct { depth: 3 },
    SchedulerKind::Pct { depth: 10 },
    SchedulerKind::Probabilistic { coin_flips: 1 },
    SchedulerKind::Probabilistic { coin_flips: 3 },
    SchedulerKind::RoundRobin,
    SchedulerKind::Dfs,
];

/// Which schedulers a run uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Schedulers {
    /// One kind for every execution.
    One(SchedulerKind),
    /// The [`PORTFOLIO`], execution `e` by member `e mod 8`.
    Portfolio,
}

impl Schedulers {
    /// The kinds, in member order.
    pub fn members(&self) -> Vec<SchedulerKind> {
        match self {
            Schedulers::One(kind) => vec![*kind],
            Schedulers::Portfolio => PORTFOLIO.to_vec(),
        }
    }
}

impl fmt::Display for SchedulerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedulerKind::Random => f.write_str("random"),
            SchedulerKind::Pct { depth } => write!(f, "pct:{depth}"),
            SchedulerKind::Probabilistic { coin_flips } => write!(f, "probabilistic:{coin_flips}"),
            SchedulerKind::RoundRobin => f.write_str("round-robin"),
            SchedulerKind::Dfs => f.write_str("dfs"),
        }
    }
}

impl fmt::Display for Schedulers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Schedulers::One(kind) => kind.fmt(f),
            Schedulers::Portfolio => f.write_str("portfolio"),
        }
    }
}

impl FromStr for Schedulers {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (name, arg) = match text.split_once(':') {
            Some((name, arg)) => (name, Some(arg)),
            None => (text, None),
        };
        let number = |default: u32, max: u32| -> Result<u32, String> {
            let Some(arg) = arg else { return Ok(default) };
            match arg.parse::<u32>() {
                Ok(n) if (1..=max).contains(&n) => Ok(n),
                _ => Err(format!("{name}'s parameter must be a number from 1 to {max}, not {arg:?}")),
            }
        };
        let no_arg = |kind: SchedulerKind| match arg {
            None => Ok(kind),
            Some(arg) => Err(format!("{name} takes no parameter (got {arg:?})")),
        };
        let kind = match name {
            "random" => no_arg(SchedulerKind::Random)?,
            "pct" => SchedulerKind::Pct { depth: number(3, 1000)? },
            "probabilistic" => SchedulerKind::Probabilistic { coin_flips: number(3, 32)? },
            "round-robin" => no_arg(SchedulerKind::RoundRobin)?,
            "dfs" => no_arg(SchedulerKind::Dfs)?,
            "portfolio" => {
                return match arg {
                    None => Ok(Schedulers::Portfolio),
                    Some(arg) => Err(format!("portfolio takes no parameter (got {arg:?})")),
                }
            }
            _ => {
                return Err(format!(
                "unknown scheduler {text:?} (known: random, pct[:D], probabilistic[:K], round-robin, dfs, \
                     portfolio)"
            ))
            }
        };
        Ok(Schedulers::One(kind))
    }
}

/// The state of one scheduler across the executions it runs.
pub(crate) struct Scheduler {
    kind: SchedulerKind,
    seed: u64,
    /// Processes: node indices, and the environment as the last one.
    processes: u32,
    /// Steps decided by `kind` before the random scheduler takes over.
    unfair_steps: usize,
    rng: WalkRng,
    /// The step of the current execution.
    step: usize,
    /// The last process scheduled.
    last: Option<u32>,
    /// PCT: each process's priority (higher runs first) and the steps that lower one.
    priorities: Vec<u64>,
    change_points: Vec<usize>,
    lowered: u64,
    /// DFS: the decisions of the current schedule as (taken, arity), and how many of them the
    /// current execution has replayed.
    decisions: Vec<(u32, u32)>,
    cursor: usize,
    /// Whether an execution was started (a `dfs` scheduler then moves to the next schedule).
    started: bool,
}

impl Scheduler {
    /// A scheduler of `kind` for a model with `processes` processes.
    pub(crate) fn new(kind: SchedulerKind, seed: u64, processes: u32, unfair_steps: usize) -> Self {
        Scheduler {
            kind,
            seed,
            processes,
            unfair_steps,
            rng: WalkRng::new(seed, 0),
            step: 0,
            last: None,
            priorities: Vec::new(),
            change_points: Vec::new(),
            lowered: 0,
            decisions: Vec::new(),
            cursor: 0,
            started: false,
        }
    }

    /// Prepares execution number `execution` of the run (which seeds its random decisions);
    /// `false` when a `dfs` scheduler has enumerated every schedule.
    pub(crate) fn start(&mut self, execution: u64) -> bool {
        let first = !std::mem::replace(&mut self.started, true);
        self.rng = WalkRng::new(self.seed, execution);
        self.step = 0;
        self.last = None;
        match self.kind {
            SchedulerKind::Pct { depth } => {
                // Distinct random priorities above every lowered one.
                let mut order: Vec<u32> = (0..self.processes).collect();
                for i in (1..order.len()).rev() {
                    order.swap(i, self.rng.below(i as u64 + 1) as usize);
                }
                self.priorities = vec![0; self.processes as usize];
                for (rank, &process) in order.iter().enumerate() {
                    self.priorities[process as usize] = u64::from(u32::MAX) + rank as u64;
                }
                let horizon = self.unfair_steps.max(1) as u64;
                self.change_points = (1..depth).map(|_| self.rng.below(horizon) as usize).collect();
                self.lowered = u64::from(u32::MAX);
            }
            SchedulerKind::RoundRobin => {
                self.last = Some((execution % u64::from(self.processes.max(1))) as u32);
            }
            SchedulerKind::Dfs => {
                self.cursor = 0;
                if !first {
                    while let Some(&(taken, arity)) = self.decisions.last() {
                        if taken + 1 < arity {
                            break;
                        }
                        self.decisions.pop();
                    }
                    match self.decisions.last_mut() {
                        Some(last) => last.0 += 1,
                        None => return false,
                    }
                }
            }
            SchedulerKind::Random | SchedulerKind::Probabilistic { .. } => {}
        }
        true
    }

    /// Whether the scheduler's own kind still decides (rather than the random tail).
    fn deciding(&self) -> bool {
        match self.kind {
            SchedulerKind::Random | SchedulerKind::RoundRobin => true,
            _ => self.step < self.unfair_steps,
        }
    }

    /// Picks the event to run: an index into `processes`, the process of each enabled event
    /// in the world's event order (not empty).
    pub(crate) fn next_event(&mut self, processes: &[u32]) -> usize {
        debug_assert!(!processes.is_empty());
        let deciding = self.deciding();
        let pick = if !deciding {
            self.random_event(processes)
        } else {
            match self.kind {
                SchedulerKind::Random => self.random_event(processes),
                SchedulerKind::Pct { .. } => {
                    if self.change_points.contains(&self.step) {
                        if let Some(top) = self.highest(processes) {
                            self.lowered -= 1;
                            self.priorities[top as usize] = self.lowered;
                        }
                    }
                    let top = self.highest(processes).expect("some process is enabled");
                    self.event_of(top, processes)
                }
                SchedulerKind::Probabilistic { coin_flips } => {
                    let keep = self.last.filter(|p| processes.contains(p));
                    let switch = (0..coin_flips).all(|_| self.rng.below(2) == 1);
                    match keep {
                        Some(process) if !switch => self.event_of(process, processes),
                        _ => self.random_event(processes),
                    }
                }
                SchedulerKind::RoundRobin => {
                    let after = self.last.map_or(0, |p| p + 1);
                    let n = self.processes.max(1);
                    let next = (0..n)
                        .map(|k| (after + k) % n)
                        .find(|p| processes.contains(p))
                        .expect("some process is enabled");
                    self.event_of(next, processes)
                }
                SchedulerKind::Dfs => self.decide(processes.len()),
            }
        };
        self.last = Some(processes[pick]);
        self.step += 1;
        pick
    }

    /// Answers a handler's `choose(n)`.
    pub(crate) fn next_choice(&mut self, n: usize) -> usize {
        if self.kind == SchedulerKind::Dfs && self.deciding() {
            self.decide(n)
        } else {
            self.rng.below(n as u64) as usize
        }
    }

    /// The next DFS decision among `arity` options.
    fn decide(&mut self, arity: usize) -> usize {
        let arity = arity as u32;
        let taken = match self.decisions.get(self.cursor) {
            // The model is deterministic, so a replayed prefix offers the same options.
            Some(&(taken, recorded)) if recorded == arity => taken,
            _ => {
                self.decisions.truncate(self.cursor);
                self.decisions.push((0, arity));
                0
            }
        };
        self.cursor += 1;
        taken as usize
    }

    /// A uniformly random enabled process (the `k`-th smallest of them), then a uniformly
    /// random event of it. Processes are below 64 (the engine admits at most 63 nodes).
    fn random_event(&mut self, processes: &[u32]) -> usize {
        let mut enabled = processes.iter().fold(0u64, |mask, &p| mask | 1 << p);
        for _ in 0..self.rng.below(u64::from(enabled.count_ones())) {
            enabled &= enabled - 1;
        }
        self.event_of(enabled.trailing_zeros(), processes)
    }

    /// A uniformly random event of `process`.
    fn event_of(&mut self, process: u32, processes: &[u32]) -> usize {
        let count = processes.iter().filter(|&&p| p == process).count() as u64;
        let nth = self.rng.below(count) as usize;
        processes
            .iter()
            .enumerate()
            .filter(|(_, &p)| p == process)
            .nth(nth)
            .map(|(i, _)| i)
            .expect("in range")
    }

    fn highest(&self, processes: &[u32]) -> Option<u32> {
        processes.iter().copied().max_by_key(|&p| self.priorities[p as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(kind: SchedulerKind, execution: u64, enabled: &[u32], steps: usize) -> Vec<u32> {
        let mut scheduler = Scheduler::new(kind, 7, 4, 100);
        assert!(scheduler.start(execution));
        (0..steps).map(|_| enabled[scheduler.next_event(enabled)]).collect()
    }

    #[test]
    fn names_parse_and_print_back() {
        for name in ["random", "pct:3", "probabilistic:2", "round-robin", "dfs", "portfolio"] {
            let parsed: Schedulers = name.parse().unwrap();
            assert_eq!(parsed.to_string(), name);
        }
        assert_eq!("pct".parse::<Schedulers>().unwrap(), Schedulers::One(SchedulerKind::Pct { depth: 3 }));
        for bad in ["pct:0", "pct:x", "random:1", "fifo", "portfolio:2", ""] {
            assert!(bad.parse::<Schedulers>().is_err(), "{bad}");
        }
    }

    #[test]
    fn an_execution_is_a_function_of_kind_seed_and_number() {
        for kind in PORTFOLIO {
            if kind == SchedulerKind::Dfs {
                continue;
            }
            let enabled = [0, 1, 1, 2, 3];
            assert_eq!(run(kind, 5, &enabled, 50), run(kind, 5, &enabled, 50), "{kind}");
        }
        assert_ne!(
            run(SchedulerKind::Random, 1, &[0, 1, 2, 3], 50),
            run(SchedulerKind::Random, 2, &[0, 1, 2, 3], 50)
        );
    }

    #[test]
    fn round_robin_takes_turns() {
        assert_eq!(run(SchedulerKind::RoundRobin, 0, &[0, 1, 3], 6), vec![1, 3, 0, 1, 3, 0]);
    }

    #[test]
    fn pct_without_change_points_runs_one_process_while_it_is_enabled() {
        let picks = run(SchedulerKind::Pct { depth: 1 }, 3, &[0, 1, 2, 3], 40);
        assert!(picks.iter().all(|&p| p == picks[0]), "{picks:?}");
    }

    #[test]
    fn probabilistic_mostly_keeps_the_last_process() {
        let picks = run(SchedulerKind::Probabilistic { coin_flips: 3 }, 0, &[0, 1, 2, 3], 90);
        let switches = picks.windows(2).filter(|w| w[0] != w[1]).count();
        assert!(switches < 30, "{switches} switches in {picks:?}");
    }

    #[test]
    fn dfs_enumerates_every_schedule_once() {
        // Two steps over two processes, then one binary choice: 2 * 2 * 2 schedules.
        let mut scheduler = Scheduler::new(SchedulerKind::Dfs, 0, 2, 10);
        let mut seen = std::collections::BTreeSet::new();
        let mut execution = 0;
        while scheduler.start(execution) {
            let a = scheduler.next_event(&[0, 1]);
            let b = scheduler.next_event(&[0, 1]);
            let c = scheduler.next_choice(2);
            assert!(seen.insert((a, b, c)), "repeated {:?}", (a, b, c));
            execution += 1;
        }
        assert_eq!(seen.len(), 8);
    }

    #[test]
    fn unfair_kinds_hand_over_to_random_after_the_unfair_steps() {
        let mut scheduler = Scheduler::new(SchedulerKind::Pct { depth: 1 }, 1, 4, 10);
        scheduler.start(0);
        let picks: Vec<usize> = (0..200).map(|_| scheduler.next_event(&[0, 1, 2, 3])).collect();
        let tail: std::collections::BTreeSet<usize> = picks[10..].iter().copied().collect();
        assert_eq!(tail.len(), 4, "the random tail runs every process");
    }
}
