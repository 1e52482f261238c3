//! What a run is asked to do: the engine, its bounds, and how it reports progress.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The exhaustive engines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    /// Stateful breadth-first search: shortest counterexamples.
    #[default]
    Bfs,
    /// Stateful depth-first search.
    Dfs,
    /// Depth-first search by re-execution of choice sequences (MaceMC, VeriSoft).
    Stateless,
}

impl EngineKind {
    /// Every engine, for usage messages.
    pub const ALL: [EngineKind; 3] = [EngineKind::Bfs, EngineKind::Dfs, EngineKind::Stateless];

    /// The engine's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Bfs => "bfs",
            EngineKind::Dfs => "dfs",
            EngineKind::Stateless => "stateless",
        }
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EngineKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        EngineKind::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| format!("unknown engine {s:?} (expected one of: bfs, dfs, stateless)"))
    }
}

/// How many fingerprint bits the visited set stores.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum FingerprintBits {
    /// 64 bits: half the memory; collisions become likely only past a few billion states.
    #[default]
    B64,
    /// 128 bits.
    B128,
}

/// Whether the stateless engine prunes re-visited worlds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Pruning {
    /// Stop a path at a world whose fingerprint was already explored at the same or a smaller
    /// depth (MaceMC's state hashing).
    #[default]
    Fingerprints,
    /// Explore every choice sequence up to the depth bound.
    None,
}

/// A flag that stops a run cleanly (set it from a Ctrl-C handler).
#[derive(Clone, Debug, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// A flag that is not set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the run to stop.
    pub fn raise(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether the run was asked to stop.
    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// A snapshot of a running search.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Progress {
    /// Distinct worlds found.
    pub unique_states: u64,
    /// Steps executed.
    pub transitions: u64,
    /// The deepest world found.
    pub max_depth: usize,
    /// Worlds waiting to be explored.
    pub queue: usize,
    /// Time since the run started.
    pub elapsed: Duration,
}

/// Receives progress snapshots, a few times a second.
pub type ProgressSink = Arc<dyn Fn(&Progress) + Send + Sync>;

/// Everything a run is asked to do.
#[derive(Clone, Default)]
pub struct CheckOptions {
    /// The engine.
    pub engine: EngineKind,
    /// Do not explore beyond this many steps from an initial world.
    pub depth_max: Option<usize>,
    /// Stop after this many distinct worlds.
    pub states_max: Option<u64>,
    /// Stop after this long.
    pub timeout: Option<Duration>,
    /// Visited-set width.
    pub fingerprint_bits: FingerprintBits,
    /// The stateless engine's pruning.
    pub pruning: Pruning,
    /// A flag that stops the run.
    pub interrupt: Option<Interrupt>,
    /// Where progress goes.
    pub progress: Option<ProgressSink>,
}

impl fmt::Debug for CheckOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CheckOptions")
            .field("engine", &self.engine)
            .field("depth_max", &self.depth_max)
            .field("states_max", &self.states_max)
            .field("timeout", &self.timeout)
            .field("fingerprint_bits", &self.fingerprint_bits)
            .field("pruning", &self.pruning)
            .finish_non_exhaustive()
    }
}
