//! `foretell liveness` end to end: the dead path of a Mace bug with its critical transition in
//! the JSON report and the trace file, `show` and `replay` of that file, a fixed version with
//! no suspect, bad input as exit 2, and Ctrl-C and `--timeout` stopping a run in any phase.

mod support;

use std::process::Output;
use std::time::{Duration, Instant};
use support::{foretell, interrupted, scratch};

fn json(output: &Output) -> serde_json::Value {
    support::json(&output.stdout)
}

/// RT3 on three nodes without resets: a dead path (exit 1), its critical event a recovery timer, a trace file
/// that carries the finding, replays, and shows with the critical step marked.
#[test]
fn a_dead_path_is_reported_written_shown_and_replayed() {
    let dir = scratch("dead");
    let args = [
        "liveness",
        "randtree",
        "--bug",
        "recovery-timer",
        "--set",
        "resets=0",
        "--ignore-safety",
        "--depth",
        "4",
        "--dmax",
        "2000",
        "--threads",
        "2",
        "--json",
        "--trace-out",
        "dead.json",
    ];
    let output = foretell(&args, &dir);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let report = json(&output);
    assert_eq!(report["verdict"], "dead", "{report}");
    assert_eq!(report["case"], "C1", "{report}");
    assert_eq!(report["trace_file"], "dead.json");
    let step = report["critical_step"].as_u64().expect("a critical step") as usize;
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("dead.json")).unwrap()).unwrap();
    assert_eq!(trace["liveness"]["critical_step"].as_u64(), Some(step as u64));
    assert_eq!(trace["verdict"]["kind"], "liveness");
    assert_eq!(trace["steps"][step - 1]["event"], report["critical_event"]);

    let show = foretell(&["show", "dead.json"], &dir);
    assert_eq!(show.status.code(), Some(0), "{show:?}");
    let text = String::from_utf8_lossy(&show.stdout);
    let marked: Vec<&str> = text.lines().filter(|l| l.starts_with(">>")).collect();
    assert_eq!(marked.len(), 1, "{text}");
    assert!(marked[0].split_whitespace().nth(1) == Some(&step.to_string()), "{text}");
    assert!(text.contains("nearest live path"), "{text}");

    let replay = foretell(&["replay", "dead.json"], &dir);
    assert_eq!(replay.status.code(), Some(0), "{replay:?}");
}

/// The fixed version: no suspect, exit 0, and no trace file.
#[test]
fn a_fixed_version_has_no_suspect() {
    let dir = scratch("fixed");
    let args =
        ["liveness", "randtree", "--set", "nodes=2", "--depth", "3", "--dmax", "2000", "--threads", "2"];
    let output = foretell(&[&args[..], &["--json"]].concat(), &dir);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report = json(&output);
    assert_eq!(report["verdict"], "no_suspect", "{report}");
    assert!(report["trace_file"].is_null());
    assert!(report["stats"]["walks"].as_u64().unwrap() > 0);
    assert!(!dir.join("randtree.liveness.json").exists());
}

/// Bad flags and a system without liveness properties are exit 2 with one line on stderr.
#[test]
fn bad_input_is_exit_two() {
    let dir = scratch("bad");
    for args in [
        vec!["liveness", "randtree", "--weights", "app=x"],
        vec!["liveness", "randtree", "--prefix", "no-such-scenario"],
        vec!["liveness", "randtree", "--depth", "5", "--dmax", "5"],
        vec!["liveness", "two-phase-commit"],
        vec!["liveness", "no-such-system"],
        vec!["liveness", "randtree", "--timeout", "1e30"],
    ] {
        let output = foretell(&args, &dir);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// Ctrl-C (SIGINT) stops a long liveness run cleanly: the partial report is printed, exit 0.
#[test]
fn an_interrupted_liveness_run_prints_its_partial_report() {
    let dir = scratch("interrupt");
    let args = ["liveness", "randtree", "--set", "nodes=4", "--depth", "30", "--json"];
    let output = interrupted(&args, &dir, Duration::from_millis(1500));
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report = json(&output);
    assert_eq!(report["verdict"]["stopped"], "interrupted", "{report}");
    assert!(report["stats"]["seconds"].as_f64().unwrap() > 1.0, "{report}");
}

/// Five randtree nodes with 300 walks a probe, under real TCP's error order (where the fixed
/// version has dead paths): the exhaustive part takes milliseconds, the walks and the
/// confirmation of the first suspect about half a minute on one thread.
const LONG_WALKS: [&str; 10] = [
    "liveness",
    "randtree",
    "--set",
    "nodes=5",
    "--set",
    "errors=independent",
    "--walks",
    "300",
    "--threads",
    "1",
];

/// What a run stopped in its walks must print: the partial report with the verdict `stopped`
/// (for `why`), the walks so far, and nothing claimed as a violation — exit 0, no trace file.
fn assert_stopped_in_the_walks(output: &Output, why: &str, dir: &std::path::Path) {
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report = json(output);
    assert_eq!(report["verdict"]["stopped"], why, "{report}");
    let stats = &report["stats"];
    assert!(stats["walks"].as_u64().unwrap() > 0 && stats["periphery"].as_u64().unwrap() > 0, "{report}");
    assert!(stats["unconfirmed"].as_u64().unwrap() <= stats["suspects"].as_u64().unwrap(), "{report}");
    assert!(report["case"].is_null() && report["critical_step"].is_null(), "{report}");
    assert!(report["trace_file"].is_null(), "{report}");
    assert!(!dir.join("randtree.liveness.json").exists());
}

/// Ctrl-C during the walks (it used to be ignored there: the run went on for half a minute and
/// printed a full report) stops the run within a few seconds with its partial report.
#[test]
fn a_liveness_run_interrupted_in_its_walks_stops_promptly() {
    let dir = scratch("interrupt-walks");
    let started = Instant::now();
    let output = interrupted(&[&LONG_WALKS[..], &["--json"]].concat(), &dir, Duration::from_millis(1500));
    let elapsed = started.elapsed();
    assert_stopped_in_the_walks(&output, "interrupted", &dir);
    assert!(elapsed < Duration::from_secs(10), "the run ended {elapsed:?} after it started");
}

/// `--timeout` ends the walks as promptly, with the verdict that says the time ran out.
#[test]
fn a_liveness_run_out_of_time_in_its_walks_stops_promptly() {
    let dir = scratch("timeout-walks");
    let started = Instant::now();
    let output = foretell(&[&LONG_WALKS[..], &["--timeout", "1", "--json"]].concat(), &dir);
    let elapsed = started.elapsed();
    assert_stopped_in_the_walks(&output, "time_bound", &dir);
    assert!(elapsed < Duration::from_secs(10), "the run ended {elapsed:?} after it started");
}
