//! Paths: how a world found by one worker is named for every other, and how process 0 turns
//! the path of a violation into a replayable trace.
//!
//! A world travels with its path from an initial world: the initial world's index and the
//! successor ordinals of each step ([`foretell_model::Successor::ordinal`]). The local engines
//! keep parent pointers instead and walk them back at the end; across processes that walk
//! would be a distributed query over every worker's records (which every worker would have to
//! keep, 8 bytes and more per world, until the end). A carried path costs 4 bytes per step of
//! depth per frontier world, on the wire and in the frontier only; the visited sets stay bare
//! fingerprints, and a counterexample is complete the moment it is found, wherever that is.
//! Process 0 re-executes the path with the one [`Simulator`] to record the trace.

use crate::ClusterError;
use foretell_check::Violation;
use foretell_model::{Action, FingerprintHasher, FixedChoices, Protocol, Simulator, StepViolation, World};
use serde::{Deserialize, Serialize};

/// An initial world: its `init` choices, the world, and the violation `init` caused.
pub(crate) struct Root<P: Protocol> {
    pub(crate) choices: Vec<usize>,
    pub(crate) world: World<P>,
    pub(crate) violation: Option<StepViolation>,
}

/// Every initial world, in the simulator's order (a path's root indexes this list).
pub(crate) fn roots<P: Protocol>(sim: Simulator<'_, P>) -> Vec<Root<P>> {
    let mut roots = Vec::new();
    sim.initial_worlds(|choices, world, violation| roots.push(Root { choices, world, violation }));
    roots
}

/// A violation and the path that reaches it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Finding {
    /// The violating world's depth: the path's length.
    pub(crate) depth: u32,
    /// The violating world's key (fingerprint), for a choice that does not depend on timing.
    pub(crate) key: u128,
    pub(crate) root: u32,
    pub(crate) path: Vec<u32>,
    pub(crate) violation: StepViolation,
}

impl Finding {
    /// The order in which findings are preferred: shallowest, then smallest fingerprint, then
    /// smallest path, so that every worker picks the same one.
    fn rank(&self) -> (u32, u128, u32, &[u32]) {
        (self.depth, self.key, self.root, &self.path)
    }

    /// Keeps the preferred of `best` and `candidate` in `best`.
    pub(crate) fn keep_best(best: &mut Option<Finding>, candidate: Finding) {
        if best.as_ref().is_none_or(|b| candidate.rank() < b.rank()) {
            *best = Some(candidate);
        }
    }

    /// The violation with its trace, re-executed from the initial world; `engine` names the
    /// search in the trace.
    pub(crate) fn into_violation<P: Protocol>(
        self,
        sim: Simulator<'_, P>,
        roots: &[Root<P>],
        engine: &str,
    ) -> Result<Violation, ClusterError> {
        let corrupt = |what: String| ClusterError::Corrupt(what);
        let root = roots.get(self.root as usize).ok_or_else(|| {
            corrupt(format!("a path starts at initial world {}, which does not exist", self.root))
        })?;
        let mut world = root.world.clone();
        let mut steps: Vec<(Action, Vec<usize>)> = Vec::with_capacity(self.path.len());
        for (i, &ordinal) in self.path.iter().enumerate() {
            let (action, choices) = sim.successor_step(&world, ordinal).ok_or_else(|| {
                corrupt(format!("step {} of a path names successor {ordinal}, which does not exist", i + 1))
            })?;
            let mut chooser = FixedChoices::new(&choices);
            world = sim.step(&world, action, &mut chooser, false).world;
            steps.push((action, choices));
        }
        let mut trace = sim.record(&root.choices, &steps);
        trace.engine = Some(engine.to_string());
        Ok(Violation {
            property: self.violation.property,
            kind: self.violation.kind,
            message: self.violation.message,
            trace,
        })
    }
}

/// Worlds of the first breadth-first levels that [`digest`] samples.
const SAMPLE_WORLDS: usize = 256;

/// A digest of what a run explores, which every process of a cluster must agree on: the job's
/// name, the model's shape and properties, its initial worlds, the successors of the first
/// [`SAMPLE_WORLDS`] worlds in breadth-first order (which catches most processes built with
/// other handlers), and the run's own parameters.
pub(crate) fn digest<P: Protocol>(
    sim: Simulator<'_, P>,
    roots: &[Root<P>],
    job: &str,
    run: &impl Serialize,
) -> u64 {
    let model = sim.model();
    let properties: Vec<&str> = model.properties().iter().map(|p| p.name()).collect();
    let mut queue: std::collections::VecDeque<World<P>> = roots.iter().map(|r| r.world.clone()).collect();
    let mut seen: std::collections::HashSet<u128> = queue.iter().map(|w| w.fingerprint().0).collect();
    let mut sample = Vec::new();
    while let Some(world) = queue.pop_front().filter(|_| sample.len() < SAMPLE_WORLDS) {
        sample.push(world.fingerprint().0);
        sim.successors(&world, |s| {
            sample.push(s.fingerprint().0);
            if seen.insert(s.fingerprint().0) {
                queue.push_back(s.into_world());
            }
        });
    }
    let shape = (job, model.node_count() as u64, model.network_kind(), properties, sample, run);
    FingerprintHasher::hash(&shape) as u64
}
