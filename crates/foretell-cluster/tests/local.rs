//! Cluster mode in one process: two workers exchange worlds through timely's in-process
//! channels and must find exactly what the local breadth-first engine finds.

mod support;

use foretell_check::{Check, CheckOptions, Completion, EngineKind, FingerprintBits, Memory, Report};
use foretell_cluster::{check_distributed, ClusterConfig, ClusterError};
use foretell_model::{Model, Protocol, Simulator};

fn distributed<P: Protocol>(model: &Model<P>, options: &CheckOptions, workers: usize) -> Report {
    check_distributed(model, options, &ClusterConfig::local(workers))
        .expect("the cluster run succeeds")
        .expect("process 0 gets the report")
}

fn assert_same_counts(cluster: &Report, local: &Report) {
    assert_eq!(cluster.stats.unique_states, local.stats.unique_states, "unique states");
    assert_eq!(cluster.stats.transitions, local.stats.transitions, "transitions");
    assert_eq!(cluster.stats.max_depth, local.stats.max_depth, "max depth");
    assert_eq!(cluster.completion, local.completion);
    assert_eq!(cluster.properties, local.properties);
}

#[test]
fn two_workers_count_exactly_what_local_bfs_counts() {
    let model = support::model(3, false);
    let local = Check::bfs(&model).run();
    assert_eq!(local.completion, Completion::Exhausted);
    for workers in [1, 2, 3] {
        let cluster = distributed(&model, &CheckOptions::default(), workers);
        assert_same_counts(&cluster, &local);
        cluster.assert_holds("below three").assert_covered("all two");
    }
}

#[test]
fn bounds_and_wide_fingerprints_match_local_bfs() {
    let model = support::model(3, false);
    let depth = CheckOptions { depth_max: Some(6), ..CheckOptions::default() };
    let cluster = distributed(&model, &depth, 2);
    assert_same_counts(&cluster, &Check::bfs(&model).depth_max(6).run());
    assert_eq!(cluster.completion, Completion::DepthBound);
    let wide = CheckOptions { fingerprint_bits: FingerprintBits::B128, ..CheckOptions::default() };
    let local = Check::bfs(&model).fingerprint_bits(FingerprintBits::B128).run();
    assert_same_counts(&distributed(&model, &wide, 2), &local);
    // A state bound stops between levels: at least the bound, at most one level more.
    let states = CheckOptions { states_max: Some(1000), ..CheckOptions::default() };
    let bounded = distributed(&model, &states, 2);
    assert_eq!(bounded.completion, Completion::StatesBound);
    assert!(bounded.stats.unique_states >= 1000 && bounded.stats.unique_states < local.stats.unique_states);
}

#[test]
fn a_violation_gives_the_shortest_trace_and_it_replays() {
    let model = support::model(3, true);
    let local = Check::bfs(&model).run();
    let expected = local.assert_violated("below three");
    let sim = Simulator::new(&model).unwrap();
    for workers in [1, 2] {
        let cluster = distributed(&model, &CheckOptions::default(), workers);
        assert_eq!(cluster.completion, Completion::Violation);
        assert_eq!(cluster.engine, EngineKind::Bfs);
        let found = cluster.assert_violated("below three");
        assert_eq!(found.trace.steps.len(), expected.trace.steps.len(), "shortest counterexample");
        let replayed = sim.replay(&found.trace).expect("the trace replays");
        let verdict = replayed.verdict.expect("the replay reaches the violation");
        assert_eq!((verdict.property.as_str(), verdict.step), ("below three", found.trace.steps.len()));
        // The whole level of the violation is explored: at least what local BFS counted.
        assert!(cluster.stats.unique_states >= local.stats.unique_states);
        assert_eq!(cluster.stats.max_depth, found.trace.steps.len());
    }
    // Deterministic: the same violating world whatever the worker count.
    let last = |r: &Report| r.violations[0].trace.steps.last().unwrap().fingerprint.clone();
    let one = distributed(&model, &CheckOptions::default(), 1);
    assert_eq!(last(&one), last(&distributed(&model, &CheckOptions::default(), 3)));
}

#[test]
fn unsupported_options_and_configurations_are_errors() {
    let model = support::model(3, false);
    let local = ClusterConfig::local(2);
    let dfs = CheckOptions { engine: EngineKind::Dfs, ..CheckOptions::default() };
    assert!(matches!(check_distributed(&model, &dfs, &local), Err(ClusterError::Config(_))));
    let compact = CheckOptions { memory: Memory::Compact, ..CheckOptions::default() };
    assert!(matches!(check_distributed(&model, &compact, &local), Err(ClusterError::Config(_))));
    let options = CheckOptions::default();
    for config in [
        ClusterConfig::local(0),
        ClusterConfig { processes: 2, process_index: 2, ..ClusterConfig::default() },
        ClusterConfig { processes: 2, hosts: vec!["127.0.0.1:1".into()], ..ClusterConfig::default() },
        ClusterConfig {
            processes: 2,
            hosts: vec!["127.0.0.1:1".into(), "127.0.0.1".into()],
            ..ClusterConfig::default()
        },
        ClusterConfig {
            processes: 2,
            hosts: vec!["[::1]:7000".into(), ":7001".into()],
            ..ClusterConfig::default()
        },
        ClusterConfig { processes: 1, hosts: vec!["localhost:70000".into()], ..ClusterConfig::default() },
        ClusterConfig { processes: 1, hosts: vec!["localhost:0".into()], ..ClusterConfig::default() },
        ClusterConfig { processes: 3, base_port: 65534, ..ClusterConfig::default() },
    ] {
        assert!(
            matches!(check_distributed(&model, &options, &config), Err(ClusterError::Config(_))),
            "{config:?}"
        );
    }
    let invalid = support::model(0, false);
    assert!(matches!(check_distributed(&invalid, &options, &local), Err(ClusterError::Model(_))));
}
