//! `foretell cluster` end to end (the `cluster` feature): a cluster of two workers, or of two
//! processes on 127.0.0.1, reports `foretell check`'s counts; a bug's trace replays; swarm
//! walks find a bug.

#![cfg(feature = "cluster")]

use foretell::check::DynModel;
use foretell::model::Trace;
use std::fs::File;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use support::{foretell, json, scratch};

mod support;

/// The registry's model of two-phase commit with `rms` resource managers and `bug`.
fn two_phase(rms: &str, bug: Option<&str>) -> Box<dyn DynModel> {
    let system = foretell::systems::find("two-phase-commit").unwrap();
    (system.build)(&system.settings(bug, &[("rms".into(), rms.into())]).unwrap()).unwrap()
}

/// The trace in `file` replays against `model` and ends in a violation of `consistent`.
fn assert_replays(model: &dyn DynModel, file: &Path) {
    let trace = Trace::from_json(&std::fs::read_to_string(file).unwrap()).unwrap();
    assert!(trace.system.is_some(), "the trace names its system");
    let summary = model.replay(&trace).expect("the trace replays");
    assert_eq!(summary.verdict.expect("it ends in the violation").property, "consistent");
}

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

/// What one process of a cluster did.
struct Ran {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// Runs `foretell cluster` as two processes on free local ports, process `i` with `args[i]`.
///
/// The ports are free when they are picked, not when a process binds them: another test's
/// process may take one in between (an outgoing connection's ephemeral port, say). A run in
/// which a process could not listen for that reason is run again on fresh ports.
fn two_processes(dir: &Path, args: [&[&str]; 2]) -> [Ran; 2] {
    two_processes_killing(dir, args, None)
}

/// [`two_processes`], killing process `kill.0` (SIGKILL) once the cluster has run for `kill.1`.
fn two_processes_killing(dir: &Path, args: [&[&str]; 2], kill: Option<(usize, Duration)>) -> [Ran; 2] {
    const ATTEMPTS: usize = 5;
    for _ in 0..ATTEMPTS {
        if let Some(ran) = two_processes_once(dir, args, kill) {
            return ran;
        }
    }
    panic!("{ATTEMPTS} runs in a row found a port taken before a process could listen on it");
}

/// One run of [`two_processes`]; `None` if a process found its port taken.
fn two_processes_once(dir: &Path, args: [&[&str]; 2], kill: Option<(usize, Duration)>) -> Option<[Ran; 2]> {
    let (a, b) = (TcpListener::bind("127.0.0.1:0").unwrap(), TcpListener::bind("127.0.0.1:0").unwrap());
    let ports = [a.local_addr().unwrap().port(), b.local_addr().unwrap().port()];
    drop((a, b));
    let hosts = dir.join("hosts");
    std::fs::write(
        &hosts,
        format!("# two local processes\n127.0.0.1:{}\n127.0.0.1:{}\n", ports[0], ports[1]),
    )
    .unwrap();
    let mut children = Children(Vec::new());
    for (i, args) in args.iter().enumerate() {
        let child = Command::new(env!("CARGO_BIN_EXE_foretell"))
            .arg("cluster")
            .args(*args)
            .args(["--processes", "2", "--process-index", &i.to_string(), "--hostfile"])
            .arg(&hosts)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(File::create(dir.join(format!("out{i}"))).unwrap())
            .stderr(File::create(dir.join(format!("err{i}"))).unwrap())
            .spawn()
            .unwrap();
        children.0.push(child);
    }
    let started = Instant::now();
    let mut status = [None, None];
    while status.iter().any(Option::is_none) {
        for (i, child) in children.0.iter_mut().enumerate() {
            if status[i].is_none() {
                status[i] = child.try_wait().unwrap();
            }
        }
        let port_taken = |i: usize| {
            status[i].is_some_and(|s| !s.success())
                && std::fs::read_to_string(dir.join(format!("err{i}")))
                    .is_ok_and(|e| e.contains("Address already in use"))
        };
        if port_taken(0) || port_taken(1) {
            return None;
        }
        if let Some((victim, after)) = kill {
            if started.elapsed() >= after && status[victim].is_none() {
                children.0[victim].kill().unwrap();
            }
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the cluster did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    let read = |name: String| std::fs::read_to_string(dir.join(name)).unwrap();
    Some([0, 1].map(|i| Ran {
        status: status[i].expect("both exited"),
        stdout: read(format!("out{i}")),
        stderr: read(format!("err{i}")),
    }))
}

#[test]
fn two_workers_report_the_local_count() {
    let dir = scratch("workers");
    let output =
        foretell(&["cluster", "two-phase-commit", "--set", "rms=3", "--workers", "2", "--json"], &dir);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report = json(&output.stdout);
    assert_eq!(report["verdict"], "holds");
    assert_eq!(report["completion"], "exhausted");
    assert_eq!(report["stats"]["unique_states"], 288);
    assert_eq!(report["cluster"]["workers"], 2);
}

#[test]
fn two_processes_report_the_local_count() {
    let dir = scratch("processes");
    let local = two_phase("5", None).check(&Default::default()).unwrap();
    let args: &[&str] = &["two-phase-commit", "--set", "rms=5", "--json"];
    let [p0, p1] = two_processes(&dir, [args, args]);
    assert!(p0.status.success() && p1.status.success(), "{} {}", p0.stderr, p1.stderr);
    assert_eq!(p1.stdout, "", "only process 0 reports");
    let report = json(p0.stdout.as_bytes());
    assert_eq!(report["stats"]["unique_states"], local.stats.unique_states);
    assert_eq!(report["stats"]["transitions"], local.stats.transitions);
    assert_eq!(report["cluster"]["processes"], 2);
}

#[test]
fn two_processes_find_the_bug_and_its_trace_replays() {
    let dir = scratch("bug");
    let args: &[&str] =
        &["two-phase-commit", "--bug", "early-commit", "--workers", "2", "--trace-out", "bug.json"];
    let [p0, p1] = two_processes(&dir, [args, args]);
    assert_eq!((p0.status.code(), p1.status.code()), (Some(1), Some(0)), "{} {}", p0.stderr, p1.stderr);
    assert!(p0.stdout.contains("violation of \"consistent\""), "{}", p0.stdout);
    assert_replays(&*two_phase("3", Some("early-commit")), &dir.join("bug.json"));
}

#[test]
fn swarm_walks_find_the_bug() {
    let dir = scratch("swarm");
    let args = ["cluster", "two-phase-commit", "--bug", "early-commit", "--mode", "swarm", "--workers", "2"];
    let output = foretell(&[&args[..], &["--walks", "200", "--seed", "5", "--json"]].concat(), &dir);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let report = json(&output.stdout);
    assert_eq!(report["mode"], "swarm");
    assert_eq!(report["violations"][0]["property"], "consistent");
    let file = dir.join(report["violations"][0]["trace_file"].as_str().unwrap());
    assert_replays(&*two_phase("3", Some("early-commit")), &file);
}

/// A process that dies mid-run (SIGKILL) ends the other's run with one line: the lost
/// connection and its cause, not the panics of timely's threads that notice it.
#[test]
fn a_process_that_dies_ends_the_others_run_with_one_line() {
    let dir = scratch("killed");
    // Long enough (about 20 s) to be killed mid-run, and connected long before the kill.
    let args: &[&str] = &["two-phase-commit", "--set", "rms=9"];
    let [p0, p1] = two_processes_killing(&dir, [args, args], Some((1, Duration::from_secs(3))));
    assert_eq!(p1.status.code(), None, "process 1 was killed, not finished: {}", p1.stderr);
    assert_eq!(p0.status.code(), Some(2), "{}", p0.stderr);
    assert_eq!(p0.stdout, "");
    let error = p0.stderr.trim_end();
    assert_eq!(error.lines().count(), 1, "{error}");
    assert!(
        error.starts_with("foretell: cluster network: lost the connection to another process"),
        "{error}"
    );
    assert!(error.contains("timely communication error"), "the cause is kept: {error}");
}

#[test]
fn processes_with_different_settings_refuse_to_run_together() {
    let dir = scratch("mismatch");
    let [p0, p1] = two_processes(
        &dir,
        [&["two-phase-commit", "--set", "rms=3"], &["two-phase-commit", "--set", "rms=4"]],
    );
    for p in [p0, p1] {
        assert_eq!(p.status.code(), Some(2), "{}", p.stderr);
        assert!(p.stderr.contains("disagree"), "{}", p.stderr);
    }
}
