//! `foretell check --engine lmc` end to end: Paxos's `last-promise` found from the paper's live
//! state with LMC's counts in the JSON report and a trace that `replay` accepts and `show`
//! prints with every state; the correct version's one-proposal space exhausted; a memory
//! budget; and misused flags as exit 2 with a reason.

mod support;

use support::{foretell, scratch, stdout};

const LIVE: [&str; 10] = [
    "check",
    "paxos",
    "--engine",
    "lmc",
    "--set",
    "proposals=0:1,1:2",
    "--set",
    "resets=0",
    "--from",
    "live",
];

#[test]
fn last_promise_is_found_from_the_live_state_and_replays() {
    let dir = scratch("lmc");
    let args: Vec<&str> = LIVE
        .iter()
        .copied()
        .chain(["--bug", "last-promise", "--lmc-mode", "projected", "--json", "--trace-out", "lmc.json"])
        .collect();
    let output = foretell(&args, &dir);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let report = support::json(&output.stdout);
    assert_eq!(report["engine"], "lmc");
    assert_eq!(report["properties"]["agreement"]["status"], "violated", "{report}");
    assert_eq!(report["lmc"]["mode"], "projected", "{report}");
    assert!(report["lmc"]["unsound"].as_u64().unwrap() > 0, "{report}");
    let replay = foretell(&["replay", "lmc.json"], &dir);
    assert_eq!(replay.status.code(), Some(0), "{replay:?}");
    assert!(stdout(&replay).contains("\"agreement\" is violated"), "{replay:?}");
    // Each node counts learners per vote, a map keyed by (round, value) that plain JSON has no
    // object form for: the trace shows it as [key, value] pairs rather than leaving it out.
    let shown = stdout(&foretell(&["show", "lmc.json", "--states"], &dir));
    assert!(!shown.contains("unserializable"), "{shown}");
    assert!(shown.contains(r#""learns":[[[{"counter":1,"node":0},1],[0]]"#), "{shown}");
}

#[test]
fn the_one_proposal_space_is_exhausted() {
    let dir = scratch("lmc-one");
    let args = ["check", "paxos", "--engine", "lmc", "--set", "proposals=0:1", "--set", "resets=0"];
    let output = foretell(&args, &dir);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = stdout(&output);
    assert!(text.contains("every reachable world explored"), "{text}");
    assert!(text.contains("local states 72/16/16 per node, 18 messages"), "{text}");
}

/// With `--lmc-channel-order` no ring node takes a sender's message after a later one, so P#'s
/// leader election, whose local states run into millions in any order, is explored to the
/// end (given room for two copies of a message sent again on one path), and its property holds
/// (as the global search says). The flag keeps its bug-finding
/// too: `last-promise` is still found from the live state.
#[test]
fn channel_order_exhausts_leader_election_and_still_finds_last_promise() {
    let dir = scratch("lmc-channel-order");
    let args = [
        "check",
        "leader-election",
        "--engine",
        "lmc",
        "--lmc-channel-order",
        "--lmc-duplicates",
        "2",
        "--timeout",
        "60",
        "--json",
    ];
    let output = foretell(&args, &dir);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report = support::json(&output.stdout);
    assert_eq!(report["completion"], "exhausted", "{report}");
    let bfs = foretell(&["check", "leader-election", "--json"], &dir);
    assert_eq!(bfs.status.code(), Some(0), "{bfs:?}");
    let flags = ["--bug", "last-promise", "--lmc-mode", "projected", "--lmc-channel-order", "--json"];
    let args: Vec<&str> = LIVE.iter().copied().chain(flags).collect();
    let output = foretell(&args, &dir);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let report = support::json(&output.stdout);
    assert_eq!(report["properties"]["agreement"]["status"], "violated", "{report}");
}

/// Under LMC a handler meets local states and messages that no run combines, and P#'s
/// ReplicatingStorage then panics (`choose(0)`). Such a state is discarded and counted; the
/// panic is not printed, so a run that holds does not look as if it had crashed. (The timers
/// send again and again, and the storage nodes answer each timeout, so every duplicate limit
/// cuts the space; the default one keeps it small.)
#[test]
fn handler_panics_on_impossible_local_states_are_discarded_quietly() {
    let dir = scratch("lmc-quiet");
    let output = foretell(&["check", "replicating-storage", "--engine", "lmc", "--json"], &dir);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
    let report = support::json(&output.stdout);
    assert_eq!(report["completion"], "depth_bound", "{report}");
    assert!(report["lmc"]["discarded"].as_u64().unwrap() > 0, "{report}");
}

/// The dining philosophers retry round and round, so a fork rejects a philosopher more often
/// than any duplicate limit allows. The copy the limit keeps out is probed: the fork it finds
/// taken stays so and rejects once more, and that rejection (a copy `I+` does not have, or no
/// copy of a rejection it has, since a fork's one taken state keeps one first path) is probed
/// in its turn at the philosopher, where it leads only to states known already. Every node's
/// set is then closed (each of the two fork and four philosopher states is there), and the run
/// is exhausted, not cut at the limit.
#[test]
fn a_duplicate_limit_whose_cut_leads_nowhere_new_leaves_the_run_exhausted() {
    let dir = scratch("lmc-probe");
    for limit in ["0", "1"] {
        let args = ["check", "dining-philosophers", "--engine", "lmc", "--lmc-duplicates", limit, "--json"];
        let output = foretell(&args, &dir);
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        let report = support::json(&output.stdout);
        assert_eq!(report["completion"], "exhausted", "{report}");
        let states: Vec<u64> =
            report["lmc"]["local_states"].as_array().unwrap().iter().map(|n| n.as_u64().unwrap()).collect();
        assert_eq!(states, [2, 2, 2, 4, 4, 4], "{report}");
    }
}

/// An online-style run holds to a memory budget as to a time budget: two proposals (the
/// paper's harder space) under the projected form fill 190 MiB in 20 s; a budget of 50M stops
/// the run cleanly with a partial report, polled often enough to stay within a few megabytes.
#[test]
fn a_memory_budget_stops_the_run_cleanly() {
    let dir = scratch("lmc-budget");
    let args = [
        "check",
        "paxos",
        "--engine",
        "lmc",
        "--lmc-mode",
        "projected",
        "--set",
        "proposals=0:1,1:2",
        "--set",
        "resets=0",
        "--timeout",
        "1m",
        "--max-memory",
        "50M",
        "--json",
    ];
    let output = foretell(&args, &dir);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report = support::json(&output.stdout);
    assert_eq!(report["completion"], "memory_bound", "{report}");
    // Nothing was shown reachable; what the stop cut short of verification is undecided.
    assert!(["holds", "undecided"].contains(&report["verdict"].as_str().unwrap()), "{report}");
    let peak = report["stats"]["peak_memory"].as_u64().expect("Linux reports the peak");
    assert!(peak <= (50 << 20) + (5 << 20), "peak {peak} bytes against a budget of 50 MiB");
}

#[test]
fn misused_flags_are_refused() {
    let dir = scratch("lmc-flags");
    let cases: [&[&str]; 5] = [
        &["check", "paxos", "--lmc-mode", "projected"],
        &["check", "paxos", "--engine", "lmc", "--set", "resets=0", "--max-depth", "3"],
        &["check", "paxos", "--engine", "lmc", "--set", "resets=0", "--lmc-mode", "fast"],
        &["check", "paxos", "--engine", "lmc"],
        &["check", "stateright-paxos", "--engine", "lmc", "--lmc-channel-order"],
    ];
    for args in cases {
        let output = foretell(args, &dir);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
        assert!(!output.stderr.is_empty(), "{args:?} gives a reason");
    }
}

/// With a soundness budget too small to follow any run, the bug's preliminary violations stay
/// undecided: the verdict says so (exit 0: no violation shown, as at any bound), never "holds".
#[test]
fn a_soundness_budget_too_small_leaves_the_verdict_undecided() {
    let dir = scratch("lmc-undecided");
    let args: Vec<&str> = LIVE
        .iter()
        .copied()
        .chain(["--bug", "last-promise", "--lmc-mode", "projected", "--lmc-soundness-budget", "1", "--json"])
        .collect();
    let output = foretell(&args, &dir);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report = support::json(&output.stdout);
    assert_eq!(report["verdict"], "undecided", "{report}");
    assert_eq!(report["properties"]["agreement"]["status"], "undecided", "{report}");
    assert!(report["lmc"]["undecided"].as_u64().unwrap() > 0, "{report}");
}
