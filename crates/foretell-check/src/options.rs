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
    /// Local model checking: node-local states, one shared monotone network, system states
    /// only to check invariants (LMC).
    Lmc,
}

impl EngineKind {
    /// Every engine, for usage messages.
    pub const ALL: [EngineKind; 4] =
        [EngineKind::Bfs, EngineKind::Dfs, EngineKind::Stateless, EngineKind::Lmc];

    /// The engines that explore worlds (all but LMC, which explores local states): they agree
    /// on every count and report a handler's panic as a violation.
    pub const GLOBAL: [EngineKind; 3] = [EngineKind::Bfs, EngineKind::Dfs, EngineKind::Stateless];

    /// The engine's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Bfs => "bfs",
            EngineKind::Dfs => "dfs",
            EngineKind::Stateless => "stateless",
            EngineKind::Lmc => "lmc",
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
            .ok_or_else(|| format!("unknown engine {s:?} (expected one of: bfs, dfs, stateless, lmc)"))
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

/// How the breadth-first engine stores the worlds it has seen, for spaces larger than memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Memory {
    /// Every 64-bit fingerprint (8 bytes a world): exact up to fingerprint collisions.
    #[default]
    Exact,
    /// Hash compaction: a 32-bit signature per world (4 bytes); distinct worlds may collide,
    /// and the report estimates how many were missed.
    Compact,
    /// Bitstate hashing (a Bloom filter of `bytes`, `hashes` bits per world, as SPIN's `-DBITSTATE`):
    /// fixed memory whatever the space; the report estimates how many worlds were missed.
    Bitstate {
        /// The filter's size.
        bytes: u64,
        /// Bits set per world.
        hashes: u32,
    },
}

impl Memory {
    pub(crate) fn mode(self) -> crate::fingerprint_set::MemoryMode {
        use crate::fingerprint_set::MemoryMode;
        match self {
            Memory::Exact => MemoryMode::Exact,
            Memory::Compact => MemoryMode::Compact,
            Memory::Bitstate { bytes, hashes } => MemoryMode::Bitstate { bytes, hashes },
        }
    }
}

impl FromStr for Memory {
    type Err = String;
    /// `exact`, `compact`, or `bitstate[:SIZE[:HASHES]]` with a size such as `512M` or `2G`
    /// (default 256M, 3 hashes).
    fn from_str(s: &str) -> Result<Self, String> {
        let mut parts = s.split(':');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some("exact"), None, ..) => Ok(Memory::Exact),
            (Some("compact"), None, ..) => Ok(Memory::Compact),
            (Some("bitstate"), size, hashes, None) => {
                let bytes = size.map_or(Ok(256 << 20), parse_bytes)?;
                let hashes = match hashes {
                    None => crate::fingerprint_set::MemoryMode::DEFAULT_HASHES,
                    Some(h) => h
                        .parse()
                        .ok()
                        .filter(|h| (1..=16).contains(h))
                        .ok_or_else(|| format!("bitstate hashes must be 1 to 16, not {h:?}"))?,
                };
                if bytes < 8 {
                    return Err(format!("a bitstate filter needs at least 8 bytes, not {bytes}"));
                }
                Ok(Memory::Bitstate { bytes, hashes })
            }
            _ => Err(format!(
                "unknown memory mode {s:?} (expected exact, compact or bitstate[:SIZE[:HASHES]])"
            )),
        }
    }
}

/// Parses a byte count such as `4096`, `512K`, `256M` or `2G` (powers of 1024).
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, ""),
    };
    let shift = match unit.to_ascii_uppercase().trim_end_matches(['B', 'I']) {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(format!("unknown size unit in {text:?} (expected K, M, G or T)")),
    };
    let value: u64 =
        digits.parse().map_err(|_| format!("not a size: {text:?} (expected e.g. 512M or 2G)"))?;
    value.checked_mul(1 << shift).ok_or_else(|| format!("size {text:?} is too large"))
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
    /// How the stateful engines store seen worlds.
    pub memory: Memory,
    /// Stop cleanly, with a partial report, when the process's resident memory reaches this many
    /// bytes.
    pub memory_max: Option<u64>,
    /// Worker threads of the stateful engines (0 or 1: one).
    pub threads: usize,
    /// The stateless engine's pruning.
    pub pruning: Pruning,
    /// What local model checking does.
    pub lmc: crate::LmcOptions,
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
