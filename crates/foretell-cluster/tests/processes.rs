//! Cluster mode across processes: two `cluster-test-node` processes on 127.0.0.1 must find
//! exactly what the local breadth-first engine finds, with a counterexample that replays.

mod support;

use foretell_check::Check;
use foretell_model::{Simulator, Trace};
use std::fs::File;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long a two-process run may take before it is killed.
const DEADLINE: Duration = Duration::from_secs(30);

/// Child processes, killed if the test fails before they exit.
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A scratch file under the system's temporary directory, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        Scratch(std::env::temp_dir().join(format!("foretell-cluster-{}-{name}", std::process::id())))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Two distinct ports that were free a moment ago.
fn free_ports() -> [u16; 2] {
    let a = TcpListener::bind("127.0.0.1:0").unwrap();
    let b = TcpListener::bind("127.0.0.1:0").unwrap();
    [a.local_addr().unwrap().port(), b.local_addr().unwrap().port()]
}

/// What each process printed and how it exited.
struct Outcome {
    status: [ExitStatus; 2],
    stdout: [String; 2],
    stderr: [String; 2],
}

/// Runs a two-process cluster; `args[i]` are process `i`'s arguments after the common ones.
fn cluster(name: &str, common: &[&str], args: [&[&str]; 2]) -> Outcome {
    cluster_killing(name, common, args, None)
}

/// [`cluster`], killing process 1 after `kill_after` if given.
///
/// The ports are free when they are picked, not when a node binds them: another test's process
/// may take one in between (an outgoing connection's ephemeral port, say). A run in which a node
/// could not listen for that reason is run again on fresh ports.
fn cluster_killing(name: &str, common: &[&str], args: [&[&str]; 2], kill_after: Option<Duration>) -> Outcome {
    const ATTEMPTS: usize = 5;
    for _ in 0..ATTEMPTS {
        if let Some(outcome) = cluster_once(name, common, args, kill_after) {
            return outcome;
        }
    }
    panic!("{ATTEMPTS} runs in a row found a port taken before a node could listen on it");
}

/// One run of [`cluster_killing`]; `None` if a node found its port taken.
fn cluster_once(
    name: &str,
    common: &[&str],
    args: [&[&str]; 2],
    kill_after: Option<Duration>,
) -> Option<Outcome> {
    let hosts = Scratch::new(&format!("{name}.hosts"));
    let [p0, p1] = free_ports();
    std::fs::write(&hosts.0, format!("127.0.0.1:{p0}\n127.0.0.1:{p1}\n")).unwrap();
    let files: Vec<[Scratch; 2]> = (0..2)
        .map(|i| [Scratch::new(&format!("{name}.{i}.out")), Scratch::new(&format!("{name}.{i}.err"))])
        .collect();
    let mut children = Children(Vec::new());
    for i in [1, 0] {
        let child = Command::new(env!("CARGO_BIN_EXE_cluster-test-node"))
            .args(common)
            .args(["--processes", "2", "--process-index", &i.to_string()])
            .arg("--hostfile")
            .arg(&hosts.0)
            .args(args[i])
            .stdin(Stdio::null())
            .stdout(File::create(&files[i][0].0).unwrap())
            .stderr(File::create(&files[i][1].0).unwrap())
            .spawn()
            .expect("the test node starts");
        children.0.push(child);
    }
    let started = Instant::now();
    let mut status = [None, None];
    while status.iter().any(Option::is_none) {
        if kill_after.is_some_and(|after| started.elapsed() >= after) && status[1].is_none() {
            children.0[0].kill().unwrap();
        }
        for (child, i) in children.0.iter_mut().zip([1, 0]) {
            if status[i].is_none() {
                status[i] = child.try_wait().unwrap();
            }
        }
        let port_taken = |i: usize| {
            status[i].is_some_and(|s| !s.success())
                && std::fs::read_to_string(&files[i][1].0).is_ok_and(|e| e.contains("Address already in use"))
        };
        if port_taken(0) || port_taken(1) {
            return None;
        }
        if started.elapsed() > DEADLINE {
            drop(children);
            let err: Vec<String> = files.iter().map(|f| std::fs::read_to_string(&f[1].0).unwrap()).collect();
            panic!("the cluster did not finish in {DEADLINE:?}; stderr: {err:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let read = |path: &PathBuf| std::fs::read_to_string(path).unwrap();
    Some(Outcome {
        status: status.map(|s| s.unwrap()),
        stdout: [read(&files[0][0].0), read(&files[1][0].0)],
        stderr: [read(&files[0][1].0), read(&files[1][1].0)],
    })
}

/// Process 0's output, after checking that both processes succeeded and only process 0 spoke.
fn report(outcome: &Outcome) -> (Vec<String>, Option<Trace>) {
    for i in 0..2 {
        assert!(outcome.status[i].success(), "process {i} failed: {}", outcome.stderr[i]);
    }
    assert_eq!(outcome.stdout[1], "", "only process 0 reports");
    let (first, rest) = outcome.stdout[0].split_once('\n').expect("a counts line");
    let trace = (!rest.trim().is_empty()).then(|| Trace::from_json(rest).expect("a trace"));
    (first.split_whitespace().map(String::from).collect(), trace)
}

#[test]
fn two_processes_count_exactly_what_local_bfs_counts() {
    let model = support::model(3, false);
    let local = Check::bfs(&model).run();
    let (counts, trace) = report(&cluster("holds", &["bfs"], [&[], &[]]));
    let s = &local.stats;
    let expected =
        ["bfs".to_string(), s.unique_states.to_string(), s.transitions.to_string(), s.max_depth.to_string()];
    assert_eq!(counts[..4], expected);
    assert_eq!(counts[4], format!("{:?}", local.completion));
    assert!(trace.is_none());
}

#[test]
fn two_processes_of_two_workers_find_a_shortest_counterexample_that_replays() {
    let model = support::model(3, true);
    let local = Check::bfs(&model).run();
    let expected = local.assert_violated("below three");
    let (counts, trace) = report(&cluster("violated", &["bfs", "--bug", "--workers", "2"], [&[], &[]]));
    assert_eq!(counts[4], "Violation");
    let trace = trace.expect("a counterexample");
    assert_eq!(trace.steps.len(), expected.trace.steps.len(), "shortest counterexample");
    let replayed = Simulator::new(&model).unwrap().replay(&trace).expect("the trace replays");
    assert_eq!(replayed.verdict.expect("it ends in the violation").property, "below three");
}

#[test]
fn swarm_walks_across_processes_find_the_planted_violation() {
    let model = support::model(3, true);
    let (counts, trace) = report(&cluster("swarm", &["swarm", "--bug"], [&[], &[]]));
    assert_eq!(counts[0], "swarm");
    let trace = trace.expect("the walks find the bug");
    let replayed = Simulator::new(&model).unwrap().replay(&trace).expect("the trace replays");
    assert_eq!(replayed.verdict.expect("it ends in the violation").property, "below three");
}

#[test]
fn processes_that_check_different_models_refuse_to_start() {
    let outcome = cluster("mismatch", &["bfs"], [&["--bug"], &[]]);
    for i in 0..2 {
        assert_eq!(outcome.status[i].code(), Some(2), "process {i}: {}", outcome.stderr[i]);
        assert!(outcome.stderr[i].contains("disagree"), "process {i}: {}", outcome.stderr[i]);
    }
}

#[test]
fn a_process_that_dies_takes_the_cluster_down() {
    // Seven nodes: far more work than the half second before the kill, so the kill comes
    // mid-search (five nodes finish in about 0.6 s now, a race with the kill).
    let common = ["bfs", "--nodes", "7"];
    let outcome = cluster_killing("killed", &common, [&[], &[]], Some(Duration::from_millis(500)));
    assert!(!outcome.status[1].success());
    assert_eq!(outcome.status[0].code(), Some(2), "{}", outcome.stderr[0]);
    assert!(outcome.stderr[0].contains("lost the connection"), "{}", outcome.stderr[0]);
}
