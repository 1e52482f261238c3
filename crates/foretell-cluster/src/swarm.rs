//! Swarm walks: independent seeded random walks on every worker of the cluster (swarm
//! verification, Holzmann, Joshi and Groce, 2008), for spaces too large to exhaust.
//!
//! Worker `g` (its global index) draws from splitmix64 seeded with `seed ^ g`: a fixed,
//! portable generator, so a run is reproducible from its seed and cluster shape. A walk starts
//! at a uniformly drawn initial world and takes up to `max_steps` uniformly drawn successors,
//! checking the step's handler properties and the invariants of every world it reaches. Workers
//! walk in rounds of [`ROUND_WALKS`] walks; after each round they exchange summaries
//! ([`crate::rounds`]), and every worker stops after the first round in which any walk found a
//! violation. The violation reported is that round's shortest (ties: the lowest worker), so the
//! result does not depend on timing; process 0 re-executes its path into a trace.

use crate::launch::{self, Local};
use crate::path::{self, Finding, Root};
use crate::rounds::Rounds;
use crate::{ClusterConfig, ClusterError, SwarmReport};
use foretell_model::{Model, Protocol, Simulator};
use serde::{Deserialize, Serialize};
use std::time::Instant;
use timely::worker::Worker;

/// Walks per worker between two agreements on whether to stop.
const ROUND_WALKS: u64 = 16;
/// The engine name written into traces.
const ENGINE: &str = "cluster-swarm";

/// One worker's report at the end of a round.
#[derive(Clone, Serialize, Deserialize)]
struct Summary {
    worker: u32,
    walks: u64,
    steps: u64,
    finished: bool,
    found: Option<Finding>,
}

/// splitmix64 (Steele, Lea and Flood, 2014): tiny, fast, and the same on every platform.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform draw from `0..n` (Lemire's multiply-shift; the bias is below 2^-32 for the
    /// successor counts of any model).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

pub(crate) fn run<P: Protocol>(
    model: &Model<P>,
    walks_per_worker: u64,
    max_steps: usize,
    seed: u64,
    config: &ClusterConfig,
) -> Result<Option<SwarmReport>, ClusterError> {
    let sim = Simulator::new(model)?;
    let roots = path::roots(sim);
    let digest = path::digest(sim, &roots, &config.job, &("swarm", walks_per_worker, max_steps as u64, seed));
    let walk = Walk { sim, roots: &roots, max_steps };
    let results =
        launch::run(config, digest, |worker, local| walker(worker, local, &walk, walks_per_worker, seed))?;
    Ok(results.into_iter().flatten().next())
}

/// What every walk of a run shares.
struct Walk<'a, 'm, P: Protocol> {
    sim: Simulator<'m, P>,
    roots: &'a [Root<P>],
    max_steps: usize,
}

impl<P: Protocol> Walk<'_, '_, P> {
    /// One walk; returns its violation, if it finds one, and counts its steps.
    fn once(&self, rng: &mut SplitMix, steps: &mut u64) -> Option<Finding> {
        let sim = self.sim;
        let root = rng.below(self.roots.len());
        let mut world = self.roots[root].world.clone();
        let mut path = Vec::new();
        let finding = |path: &Vec<u32>, key: u128, violation| Finding {
            depth: path.len() as u32,
            key,
            root: root as u32,
            path: path.clone(),
            violation,
        };
        let init = self.roots[root].violation.clone().or_else(|| sim.violated_invariant(&world));
        if let Some(violation) = init {
            return Some(finding(&path, world.fingerprint().0, violation));
        }
        for _ in 0..self.max_steps {
            let mut successors = Vec::new();
            sim.successors(&world, |s| successors.push(s));
            if successors.is_empty() {
                break;
            }
            let mut step = successors.swap_remove(rng.below(successors.len()));
            drop(successors);
            *steps += 1;
            path.push(step.ordinal);
            if let Some(violation) = step.violation.take() {
                return Some(finding(&path, step.fingerprint().0, *violation));
            }
            world = step.into_world();
            if let Some(violation) = sim.violated_invariant(&world) {
                return Some(finding(&path, world.fingerprint().0, violation));
            }
        }
        None
    }
}

/// One worker's walks; global worker 0 returns the report.
fn walker<P: Protocol>(
    worker: &mut Worker,
    local: &Local<'_>,
    walk: &Walk<'_, '_, P>,
    walks_per_worker: u64,
    seed: u64,
) -> Result<Option<SwarmReport>, ClusterError> {
    let started = Instant::now();
    let me = worker.index();
    let mut rng = SplitMix(seed ^ me as u64);
    let mut rounds = Rounds::<Summary>::new(worker);
    let (mut walks, mut steps) = (0u64, 0u64);
    let mut found = None;
    let mut round = 0;
    loop {
        let end = walks_per_worker.min(walks + ROUND_WALKS);
        while found.is_none() && walks < end {
            walks += 1;
            found = walk.once(&mut rng, &mut steps);
        }
        let summary = Summary {
            worker: me as u32,
            walks,
            steps,
            finished: walks == walks_per_worker,
            found: found.clone(),
        };
        let summaries = rounds.exchange(worker, local, round, summary)?;
        let any_found = summaries.iter().any(|s| s.found.is_some());
        if any_found || summaries.iter().all(|s| s.finished) {
            if me != 0 {
                return Ok(None);
            }
            let best = summaries
                .iter()
                .filter_map(|s| s.found.as_ref().map(|f| (f.depth, s.worker, f)))
                .min_by_key(|&(depth, worker, _)| (depth, worker))
                .map(|(_, _, f)| f.clone());
            let violation = match best {
                Some(finding) => {
                    let mut violation = finding.into_violation(walk.sim, walk.roots, ENGINE)?;
                    violation.trace.seed = Some(seed);
                    Some(violation)
                }
                None => None,
            };
            return Ok(Some(SwarmReport {
                walks: summaries.iter().map(|s| s.walks).sum(),
                steps: summaries.iter().map(|s| s.steps).sum(),
                seconds: started.elapsed().as_secs_f64(),
                violation,
            }));
        }
        round += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_is_the_reference_sequence_and_draws_stay_in_range() {
        // The first outputs of splitmix64 seeded with 0 (Vigna's reference implementation).
        let mut rng = SplitMix(0);
        assert_eq!(rng.next(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next(), 0x6e78_9e6a_a1b9_65f4);
        let mut counts = [0u32; 3];
        for _ in 0..3000 {
            counts[rng.below(3)] += 1;
        }
        assert!(counts.iter().all(|&c| (900..1100).contains(&c)), "{counts:?}");
    }
}
