//! `foretell lasso` end to end: a P# benchmark's lasso in the JSON report and the trace file,
//! `show` (stem briefly, cycle in full) and `replay` of that file, each method, a fixed version
//! with nothing to report, an interrupted run's partial report, and bad input as exit 2.

mod support;

use std::process::Output;
use std::time::Duration;
use support::{foretell, interrupted, scratch, stdout};

fn json(output: &Output) -> serde_json::Value {
    support::json(&output.stdout)
}

#[test]
fn a_lasso_is_reported_written_shown_and_replayed() {
    let dir = scratch("lasso");
    let args = [
        "lasso",
        "chord-lookup",
        "--bug",
        "key-17",
        "--scheduler",
        "random",
        "--executions",
        "50",
        "--confirm",
        "--json",
        "--trace-out",
        "lasso.json",
    ];
    let output = foretell(&args, &dir);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let report = json(&output);
    assert_eq!(report["method"], "caching");
    assert_eq!(report["scheduler"], "random");
    assert_eq!(report["executions"], 50);
    assert_eq!(report["false_positives"], 0, "{report}");
    assert_eq!(report["finding"]["kind"], "lasso", "{report}");
    assert_eq!(report["finding"]["cycle_length"], 2, "{report}");
    assert_eq!(report["finding"]["false_positive"], false, "{report}");
    assert_eq!(report["trace_file"], "lasso.json");
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("lasso.json")).unwrap()).unwrap();
    assert_eq!(trace["lasso"]["method"], "caching");
    assert_eq!(trace["lasso"]["cycle_length"], 2);
    assert_eq!(trace["verdict"]["kind"], "liveness");
    assert_eq!(trace["system"]["name"], "chord-lookup");

    let show = foretell(&["show", "lasso.json"], &dir);
    assert_eq!(show.status.code(), Some(0), "{show:?}");
    let text = stdout(&show);
    assert!(text.contains("--- the cycle: these 2 steps repeat forever ---"), "{text}");
    assert!(text.contains("hot: LivenessMonitor = Requested"), "{text}");

    let replay = foretell(&["replay", "lasso.json"], &dir);
    assert_eq!(replay.status.code(), Some(0), "{replay:?}");
}

#[test]
fn every_method_finds_the_lost_wakeup_and_the_text_report_says_how() {
    let dir = scratch("methods");
    for method in ["caching", "temperature", "exact"] {
        let args =
            ["lasso", "process-scheduler", "--bug", "lost-wakeup", "--method", method, "--executions", "300"];
        let output = foretell(&args, &dir);
        assert_eq!(output.status.code(), Some(1), "{method}: {output:?}");
        let text = stdout(&output);
        assert!(text.contains("process-scheduler (lost-wakeup)"), "{text}");
        assert!(text.contains("first liveness finding"), "{method}: {text}");
    }
}

#[test]
fn a_fixed_version_reports_nothing_and_exits_0() {
    let dir = scratch("fixed");
    let output = foretell(&["lasso", "dining-philosophers", "--method", "exact", "--json"], &dir);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report = json(&output);
    assert_eq!(report["finding"], serde_json::Value::Null, "{report}");
    assert_eq!(report["exact"]["complete"], true, "{report}");
    assert_eq!(report["trace_file"], serde_json::Value::Null);
}

#[test]
fn an_interrupted_lasso_run_prints_its_partial_report() {
    let dir = scratch("lasso-interrupt");
    let args = ["lasso", "sliding-window", "--executions", "100000000", "--json"];
    let output = interrupted(&args, &dir, Duration::from_millis(1500));
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report = json(&output);
    assert_eq!(report["completion"], "Interrupted", "{report}");
    let executions = report["executions"].as_u64().unwrap();
    assert!(executions > 0 && executions < 100_000_000, "{report}");
}

#[test]
fn bad_flags_are_refused_with_a_reason() {
    let dir = scratch("lasso-bad");
    for (args, reason) in [
        (vec!["lasso", "proposers", "--scheduler", "fifo"], "unknown scheduler"),
        (vec!["lasso", "proposers", "--method", "guess"], "unknown method"),
        (vec!["lasso", "proposers", "--scheduler", "pct:0"], "from 1 to"),
        (vec!["lasso", "proposers", "--hash", "half"], "unknown hash"),
        (vec!["lasso", "dining-philosophers", "--set", "philosophers=9"], "must be from 2 to 5"),
        (vec!["lasso", "two-phase-commit"], "nothing can be hot"),
        (vec!["lasso", "proposers", "--timeout=-1"], "positive number of seconds"),
        (vec!["lasso", "proposers", "--timeout", "1e30"], "longer than a timeout can be"),
    ] {
        let output = foretell(&args, &dir);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(reason), "{args:?}: {stderr}");
    }
}
