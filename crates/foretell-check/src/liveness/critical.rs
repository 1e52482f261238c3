//! FindCriticalTransition (MaceMC, NSDI'07, section 4.1, Algorithm 2): the first step of a
//! suspect path after which the system never recovers.
//!
//! `Recovers(p, i, k)` runs `k` random walks from the `i`-th world of the path out to depth
//! `dmax` and says whether any reached a live world. An exponential search doubles `i` from the
//! point where the path stopped being live until a world does not recover; a binary search
//! between the last recovering world and that one then finds the first dead world. Its step is
//! the critical transition (case C1). If no world dead enough early enough is found — the first
//! non-recovering world lies past `dmax / 2`, or even the start does not recover — the walks may
//! have been too short to tell (case C2). The cost is O(k · dmax · log dcrit); the `k` walks of
//! each probe run in parallel. One addition to the paper's algorithm: before a step is reported,
//! the world it leads to is probed again with four times as many walks, and if one of them
//! recovers the search goes on past it (a world with a narrow way back otherwise looks dead when
//! all `k` walks miss it, which put the step one early).
//!
//! A probe whose walks the run's stop cut short has no answer: "none of the walks recovered"
//! would take a world for dead on the word of walks that were not allowed to finish. The search
//! then ends with [`ProbeError::Stopped`] and concludes nothing about the path.

use super::pool::{Job, Pool, Stalled};
use super::report::LivenessStats;
use super::walk::{WalkEnd, Walked};
use foretell_model::{Protocol, World};
use std::sync::Arc;

/// The two cases of Algorithm 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// The path hit a dead world: the step is the critical transition.
    C1,
    /// The walks were too short to tell a dead world from a slow recovery.
    C2,
}

/// A recovering walk from a world of the suspect path: the candidate nearest live path.
pub(crate) struct Recovery<P: Protocol> {
    /// The index on the suspect path the walk started from.
    pub(crate) from: usize,
    pub(crate) walk: Walked<P>,
}

/// What Algorithm 2 found.
pub(crate) struct Critical<P: Protocol> {
    /// `dcrit`: the first dead world's index (its step is the critical transition).
    pub(crate) step: usize,
    pub(crate) case: Case,
    /// The recovering walk that started closest to the critical step.
    pub(crate) nearest: Option<Recovery<P>>,
}

/// How many times a critical step that more walks show to recover is searched past.
const RECHECKS: usize = 3;
/// How many times `k` walks re-probe the world after a critical step before it is reported.
const RECHECK_FACTOR: usize = 4;

/// Why a probe could not answer: a walk hung in a handler, or met a safety violation (both
/// with the index on the path the walk started from), or the run was stopped.
pub(crate) enum ProbeError<P: Protocol> {
    Stalled(usize, Box<Stalled<P>>),
    Violation(usize, Box<Walked<P>>),
    Stopped,
}

/// Runs Algorithm 2 on the path through `worlds` (`worlds[i]` is the world after `i` steps),
/// which is not live from index `dinit` on; `seed` names the probes' walks. The probes' walks
/// are counted in `stats` as they run, whatever the search ends with.
pub(crate) fn find_critical_transition<P: Protocol>(
    pool: &mut Pool<P>,
    worlds: &[World<P>],
    dinit: usize,
    dmax: usize,
    k: usize,
    seed: u64,
    stats: &mut LivenessStats,
) -> Result<Critical<P>, ProbeError<P>> {
    let mut search = Search { pool, worlds, dmax, k, seed, probes: 0, nearest: None, stats };
    let (step, case) = search.run(dinit)?;
    Ok(Critical { step, case, nearest: search.nearest })
}

struct Search<'a, P: Protocol> {
    pool: &'a mut Pool<P>,
    worlds: &'a [World<P>],
    dmax: usize,
    k: usize,
    seed: u64,
    probes: u64,
    nearest: Option<Recovery<P>>,
    stats: &'a mut LivenessStats,
}

impl<P: Protocol> Search<'_, P> {
    fn run(&mut self, dinit: usize) -> Result<(usize, Case), ProbeError<P>> {
        if !self.recovers(dinit, self.k)? {
            return Ok((dinit, Case::C2));
        }
        let mut dprev = dinit;
        let mut rechecks = 0;
        loop {
            // Phase 1: exponential search from `dprev`, which recovers.
            let mut dcurr = dprev.max(1);
            loop {
                if dcurr != dprev && !self.recovers(dcurr, self.k)? {
                    break;
                }
                if dcurr > self.dmax / 2 {
                    return Ok((dcurr, Case::C2));
                }
                dprev = dcurr;
                dcurr = (dcurr * 2).min(self.worlds.len() - 1);
                if dcurr == dprev {
                    // The path ends before a non-recovering world: nothing dead on it.
                    return Ok((dcurr, Case::C2));
                }
            }
            if dcurr > self.dmax / 2 {
                return Ok((dcurr, Case::C2));
            }
            // Phase 2: binary search; `dprev` recovers, `dcurr` does not.
            while dcurr - dprev > 1 {
                let mid = dprev + (dcurr - dprev) / 2;
                if self.recovers(mid, self.k)? {
                    dprev = mid;
                } else {
                    dcurr = mid;
                }
            }
            // `k` walks that all miss a narrow way back make a world look dead: before the step
            // is reported, the world it leads to is probed again with more walks, and if one
            // recovers the search goes on from there.
            if rechecks == RECHECKS || !self.recovers(dcurr, self.k * RECHECK_FACTOR)? {
                return Ok((dcurr, Case::C1));
            }
            rechecks += 1;
            dprev = dcurr;
        }
    }

    /// `Recovers(p, i, k)`: whether any of `k` walks from world `i` reaches a live world by
    /// depth `dmax`. Remembers the recovering walk that starts latest on the path. A safety
    /// violation on a walk is an answer of its own; a walk the run's stop cut short leaves the
    /// question open.
    fn recovers(&mut self, i: usize, k: usize) -> Result<bool, ProbeError<P>> {
        let max_steps = self.dmax.saturating_sub(i).max(1);
        self.probes += 1;
        let jobs: Vec<Arc<Job<P>>> = (0..k)
            .map(|j| {
                Arc::new(Job {
                    start: self.worlds[i].clone(),
                    max_steps,
                    seed: self.seed ^ 0x5eed_c417,
                    walk: self.probes << 20 | j as u64,
                })
            })
            .collect();
        let mut walks = self.pool.run(&jobs).map_err(|stalled| ProbeError::Stalled(i, Box::new(stalled)))?;
        super::count_walks(self.stats, &walks);
        if let Some(at) = walks.iter().position(|w| matches!(w.end, WalkEnd::Violation(_))) {
            return Err(ProbeError::Violation(i, Box::new(walks.swap_remove(at))));
        }
        if walks.iter().any(|w| matches!(w.end, WalkEnd::Stopped)) {
            return Err(ProbeError::Stopped);
        }
        let recovered = walks.into_iter().find(|w| matches!(w.end, WalkEnd::Live));
        let Some(walk) = recovered else { return Ok(false) };
        if self.nearest.as_ref().is_none_or(|n| n.from < i) {
            self.nearest = Some(Recovery { from: i, walk });
        }
        Ok(true)
    }
}
