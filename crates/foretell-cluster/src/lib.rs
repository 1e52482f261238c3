//! Cluster mode: foretell's searches spread over the threads of several processes, on timely
//! dataflow.
//!
//! [`check_distributed`] is a *level-synchronous distributed breadth-first search* with hash
//! partitioning, the design of distributed TLC and of PReach (Bingham et al., "Going Parallel
//! with Enumerative Model Checking", FMCAD 2010), itself after Stern and Dill's parallel Murφ:
//! every world is owned by one worker, chosen by its fingerprint's high bits; each worker keeps
//! the visited set of the worlds it owns, expands the owned worlds of the current depth, and
//! ships each successor (as bytes, [`foretell_model::World::to_bytes`]) to its owner, which
//! keeps it for the next depth if it is new. Depth `d` is timely timestamp `d`, and levels
//! advance by timely's progress tracking, so every world of a depth is expanded before any of
//! the next: counterexamples are shortest, and the distinct-state count is that of the local
//! breadth-first engine. [`swarm_walks`] runs independent seeded random walks on every worker
//! (swarm verification, Holzmann et al., 2008) until one violates a property.
//!
//! Processes run the same binary and the same model, each with its own [`ClusterConfig`]
//! (`process_index`); they connect over TCP, and process 0 returns the merged report (the
//! others return `None`). There is no authentication and no encryption: run clusters on trusted
//! networks only.

#![deny(missing_docs)]

mod bfs;
mod launch;
mod path;
mod rounds;
mod swarm;

use foretell_check::{CheckOptions, Report, Violation};
use foretell_model::{Model, ModelError, Protocol};
use std::time::Duration;

/// Where this process sits in a cluster and how it reaches the others.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterConfig {
    /// Worker threads in each process (every process must use the same number).
    pub workers: usize,
    /// Processes in the cluster.
    pub processes: usize,
    /// This process's index, from 0 to `processes - 1`; process 0 reports.
    pub process_index: usize,
    /// Each process's `host:port`, in process order; empty means `127.0.0.1` with ports
    /// `base_port`, `base_port + 1`, ...
    pub hosts: Vec<String>,
    /// The first port when `hosts` is empty.
    pub base_port: u16,
    /// How long to wait for every other process to connect.
    pub connect_timeout: Duration,
    /// A name for what the cluster runs (the command line puts the system, variant and
    /// parameters here). Processes compare it, with a digest of the model and options, when
    /// they connect, and refuse to run together if they differ.
    pub job: String,
}

impl Default for ClusterConfig {
    /// One process, one worker.
    fn default() -> Self {
        ClusterConfig {
            workers: 1,
            processes: 1,
            process_index: 0,
            hosts: Vec::new(),
            base_port: 2101,
            connect_timeout: Duration::from_secs(60),
            job: String::new(),
        }
    }
}

impl ClusterConfig {
    /// One process with `workers` worker threads.
    pub fn local(workers: usize) -> Self {
        ClusterConfig { workers, ..Self::default() }
    }

    /// Every process's address, in process order.
    ///
    /// # Errors
    /// [`ClusterError::Config`] if the configuration is inconsistent (no worker, an index out of
    /// range, a host list of the wrong length or with an entry that is not `host:port`, ports
    /// beyond 65535).
    pub fn addresses(&self) -> Result<Vec<String>, ClusterError> {
        let bad = |what: String| Err(ClusterError::Config(what));
        if self.workers == 0 || self.processes == 0 {
            return bad("a cluster needs at least one process and one worker per process".into());
        }
        if self.workers.checked_mul(self.processes).is_none_or(|total| total > u32::MAX as usize) {
            return bad(format!("{} processes of {} workers are too many", self.processes, self.workers));
        }
        if self.process_index >= self.processes {
            return bad(format!(
                "process index {} is not below {} processes",
                self.process_index, self.processes
            ));
        }
        if self.hosts.is_empty() {
            return (0..self.processes)
                .map(|i| match u16::try_from(usize::from(self.base_port) + i) {
                    Ok(port) => Ok(format!("127.0.0.1:{port}")),
                    Err(_) => Err(ClusterError::Config(format!(
                        "ports from {} for {} processes pass 65535",
                        self.base_port, self.processes
                    ))),
                })
                .collect();
        }
        if self.hosts.len() != self.processes {
            return bad(format!("{} hosts are given for {} processes", self.hosts.len(), self.processes));
        }
        if let Some((i, host)) = self.hosts.iter().enumerate().find(|(_, host)| !is_host_and_port(host)) {
            return bad(format!(
                "the address of process {i}, {host:?}, is not HOST:PORT with a port from 1 to 65535"
            ));
        }
        Ok(self.hosts.clone())
    }
}

/// Whether `address` is a host (a name, an IPv4 address or a bracketed IPv6 one; resolved only
/// when the process connects) and a port other than 0, as `host:port`.
fn is_host_and_port(address: &str) -> bool {
    address
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok_and(|port| port != 0))
}

/// Why a cluster run failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// The cluster configuration or the run's options are not usable.
    #[error("bad cluster configuration: {0}")]
    Config(String),
    /// The model does not validate.
    #[error("invalid model: {0}")]
    Model(#[from] ModelError),
    /// A process could not listen, connect or complete the handshake in time, or lost a
    /// connection during the run.
    #[error("cluster network: {0}")]
    Network(String),
    /// Another process runs another model, other options or another cluster shape.
    #[error("the processes disagree: {0}")]
    Mismatch(String),
    /// A world or a path received from another worker does not fit the model.
    #[error("bad data from another worker: {0}")]
    Corrupt(String),
    /// A worker thread failed (a panic in foretell, or a lost connection to another process).
    #[error("a worker failed: {0}")]
    Worker(String),
}

/// What a swarm of random walks found.
#[derive(Clone, Debug, PartialEq)]
pub struct SwarmReport {
    /// Walks run, over every worker.
    pub walks: u64,
    /// Steps taken, over every worker.
    pub steps: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// The violation found, with its replayable trace (the shortest violating walk of the first
    /// round of walks that found one).
    pub violation: Option<Violation>,
}

/// Checks `model` by distributed breadth-first search over the cluster `config` describes.
/// Every process calls this with the same model and options; process 0 gets the [`Report`],
/// the others `None`.
///
/// The report has the shape of the local engines' (engine `bfs`) and, when the search
/// completes, the same counts as [`foretell_check::Check::bfs`]. Bounds (depth, states, time,
/// memory) and the interrupt are honoured between levels, so a bounded run may count up to one
/// level more than a local one; a violation stops every worker after the level it is found in,
/// and the one reported is at the smallest depth (ties: the smallest fingerprint).
/// `options.threads` is not used: `config.workers` sets the threads.
///
/// # Errors
/// [`ClusterError`] if the model or the configuration is invalid (only the exact memory mode
/// and the breadth-first engine apply), the processes cannot connect or disagree, or a worker
/// fails.
pub fn check_distributed<P: Protocol>(
    model: &Model<P>,
    options: &CheckOptions,
    config: &ClusterConfig,
) -> Result<Option<Report>, ClusterError> {
    bfs::run(model, options, config)
}

/// Runs `walks_per_worker` random walks of at most `max_steps` steps on every worker of the
/// cluster, each worker seeded with `seed` XOR its global index, checking every property on
/// every step. The first round of walks that finds a violation stops every worker; process 0
/// gets the [`SwarmReport`], the others `None`.
///
/// # Errors
/// As [`check_distributed`].
pub fn swarm_walks<P: Protocol>(
    model: &Model<P>,
    walks_per_worker: u64,
    max_steps: usize,
    seed: u64,
    config: &ClusterConfig,
) -> Result<Option<SwarmReport>, ClusterError> {
    swarm::run(model, walks_per_worker, max_steps, seed, config)
}

/// A model with its protocol type erased, for registries that hold models of several protocols
/// (as [`foretell_check::DynModel`] does for the local engines).
pub trait ClusterModel: Send + Sync {
    /// [`check_distributed`] on this model.
    ///
    /// # Errors
    /// As [`check_distributed`].
    fn check_distributed(
        &self,
        options: &CheckOptions,
        config: &ClusterConfig,
    ) -> Result<Option<Report>, ClusterError>;

    /// [`swarm_walks`] on this model.
    ///
    /// # Errors
    /// As [`swarm_walks`].
    fn swarm_walks(
        &self,
        walks_per_worker: u64,
        max_steps: usize,
        seed: u64,
        config: &ClusterConfig,
    ) -> Result<Option<SwarmReport>, ClusterError>;
}

impl<P: Protocol> ClusterModel for Model<P> {
    fn check_distributed(
        &self,
        options: &CheckOptions,
        config: &ClusterConfig,
    ) -> Result<Option<Report>, ClusterError> {
        check_distributed(self, options, config)
    }

    fn swarm_walks(
        &self,
        walks_per_worker: u64,
        max_steps: usize,
        seed: u64,
        config: &ClusterConfig,
    ) -> Result<Option<SwarmReport>, ClusterError> {
        swarm_walks(self, walks_per_worker, max_steps, seed, config)
    }
}

#[cfg(test)]
mod tests {
    use super::is_host_and_port;

    #[test]
    fn a_host_entry_is_a_host_and_a_port() {
        for good in ["127.0.0.1:2101", "[::1]:7000", "node-3.example.org:65535", "h:1"] {
            assert!(is_host_and_port(good), "{good}");
        }
        for bad in ["127.0.0.1", ":2101", "h:", "h:0", "h:65536", "h:21o1", "[::1]", ""] {
            assert!(!is_host_and_port(bad), "{bad}");
        }
    }
}
