//! The lasso engine (`foretell_check::Lasso`, P#'s lasso detection and the exact fair-cycle
//! search) on the P# benchmark suite: each benchmark bug is found with a fixed seed — as a
//! lasso whose trace replays, whose cycle is the bug's story, and which survives a thousand
//! more iterations of its cycle — and each fixed version, and each benchmark without a bug,
//! reports nothing.
//!
//! Every execution is a function of (scheduler, seed, execution number), so the execution
//! counts below (measured: the first finding's execution number, with some margin) give the
//! same reports on every machine and with any number of threads.

use foretell_check::{
    FoundKind, HashChoice, LassoMethod, LassoOptions, LassoReport, SchedulerKind, Schedulers,
    CONFIRM_ITERATIONS,
};
use foretell_model::{Model, Protocol, Simulator};
use foretell_systems::psharp::{
    basic_paxos, chord_lookup, dining_philosophers, failure_detector, leader_election, process_scheduler,
    proposers, replicating_storage, sliding_window,
};

fn options(method: LassoMethod, schedulers: Schedulers, executions: u64) -> LassoOptions {
    LassoOptions { method, schedulers, executions, confirm: true, threads: 2, ..LassoOptions::default() }
}

fn caching(scheduler: SchedulerKind, executions: u64) -> LassoOptions {
    options(LassoMethod::Caching, Schedulers::One(scheduler), executions)
}

fn exact() -> LassoOptions {
    options(LassoMethod::Exact, Schedulers::Portfolio, 0)
}

fn run<P: Protocol>(model: &Model<P>, options: LassoOptions) -> LassoReport {
    let report = foretell_check::Lasso::new(model).options(options).run().expect("runs");
    println!("{report}");
    report
}

/// Asserts that `report` found a confirmed lasso whose trace replays; returns the cycle's
/// events.
fn assert_lasso<P: Protocol>(model: &Model<P>, report: &LassoReport) -> Vec<serde_json::Value> {
    let finding = report.finding.as_ref().expect("a liveness finding");
    let FoundKind::Lasso { cycle_start, cycle_length } = finding.kind else {
        panic!("not a lasso: {:?}", finding.kind)
    };
    assert!(cycle_length > 0);
    assert_eq!(finding.trace.steps.len(), cycle_start + cycle_length);
    if report.method != LassoMethod::Exact {
        assert_eq!(finding.false_positive, Some(false), "the cycle repeats {CONFIRM_ITERATIONS} more times");
        assert_eq!(report.false_positives, Some(0));
    }
    assert!(report.violation.is_none(), "no safety violation");
    Simulator::new(model).unwrap().replay(&finding.trace).expect("the lasso's trace replays");
    finding.trace.steps[cycle_start..].iter().map(|s| s.event.clone()).collect()
}

/// Asserts that `report` found nothing, and for the exact method that its graph is complete.
fn assert_nothing(report: &LassoReport) {
    assert!(report.finding.is_none() && report.violation.is_none(), "{report}");
    if let Some(exact) = report.exact {
        assert!(exact.complete, "the whole graph was explored");
    }
}

/// The nodes whose events make up `cycle`.
fn nodes(cycle: &[serde_json::Value]) -> std::collections::BTreeSet<u64> {
    let node = |e: &serde_json::Value| e.get("to").or_else(|| e.get("node")).and_then(|n| n.as_u64());
    cycle.iter().map(|e| node(e).expect("an event names its node")).collect()
}

#[test]
fn chord_lookup_of_key_17_ping_pongs_forever_between_two_ring_nodes() {
    let model = chord_lookup::model(&chord_lookup::Config { bug: true });
    let report = run(&model, caching(SchedulerKind::Random, 50));
    let cycle = assert_lasso(&model, &report);
    assert_eq!(cycle.len(), 2, "{cycle:?}");
    assert!(cycle.iter().all(|e| e["msg"]["FindSuccessor"]["key"] == 17), "{cycle:?}");
    // Ring nodes 1 and 3 (ids 0 and 3) forward the lookup to each other.
    assert_eq!(nodes(&cycle), [1, 3].into());
    let temperature =
        run(&model, options(LassoMethod::Temperature, Schedulers::One(SchedulerKind::Random), 50));
    assert!(temperature.buggy > 0, "the ping-pong also stays hot for TT steps");
}

#[test]
fn chord_lookup_without_key_17_answers_every_lookup() {
    let model = chord_lookup::model(&chord_lookup::Config { bug: false });
    assert_nothing(&run(&model, options(LassoMethod::Caching, Schedulers::Portfolio, 400)));
    assert_nothing(&run(&model, exact()));
}

#[test]
fn replicating_storage_never_repairs_after_a_stale_sync_report() {
    let model = replicating_storage::model(&replicating_storage::Config { bug: true });
    // The first finding of the random scheduler with seed 0 is execution 505.
    let report = run(&model, caching(SchedulerKind::Random, 520));
    let cycle = assert_lasso(&model, &report);
    // The manager keeps handling sync reports and its repair timer's timeouts, and repairs
    // nothing: every live timer ticks, and the manager runs, in the cycle.
    let manager = u64::from(replicating_storage::MANAGER.0);
    let repair_timer = u64::from(replicating_storage::REPAIR_TIMER.0);
    assert!(nodes(&cycle).is_superset(&[manager, repair_timer].into()), "{cycle:?}");
    let finding = report.finding.as_ref().expect("found");
    let hot = &finding.trace.lasso.as_ref().expect("a lasso").hot;
    assert!(hot[0].1.contains("Repairing"), "{hot:?}");
}

#[test]
fn replicating_storage_with_the_guard_repairs() {
    let model = replicating_storage::model(&replicating_storage::Config { bug: false });
    assert_nothing(&run(&model, options(LassoMethod::Caching, Schedulers::Portfolio, 1000)));
}

#[test]
fn failure_detector_forgets_a_failure_declared_before_the_driver_registers() {
    let model = failure_detector::model(&failure_detector::Config::default());
    let report = run(&model, caching(SchedulerKind::Random, 100));
    let cycle = assert_lasso(&model, &report);
    // Only the detector and its timer run in the cycle.
    let expected = [failure_detector::DETECTOR, failure_detector::TIMER].map(|n| u64::from(n.0));
    assert_eq!(nodes(&cycle), expected.into(), "{cycle:?}");
}

#[test]
fn failure_detector_with_the_client_registered_first_reports_every_failure() {
    let model = failure_detector::model(&failure_detector::Config::fixed());
    assert_nothing(&run(&model, options(LassoMethod::Caching, Schedulers::Portfolio, 1000)));
}

#[test]
fn process_scheduler_loses_a_wakeup_under_sampling_and_exactly() {
    let model = process_scheduler::model(&process_scheduler::Config { bug: true });
    let report = run(&model, caching(SchedulerKind::Random, 200));
    let cycle = assert_lasso(&model, &report);
    let client = u64::from(process_scheduler::CLIENT.0);
    assert!(!nodes(&cycle).contains(&client), "the client sleeps through the cycle: {cycle:?}");
    let exact = run(&model, exact());
    let cycle = assert_lasso(&model, &exact);
    assert!(!nodes(&cycle).contains(&client), "{cycle:?}");
    assert!(exact.exact.expect("exact").complete);
}

#[test]
fn process_scheduler_fixed_wakes_the_client() {
    let model = process_scheduler::model(&process_scheduler::Config { bug: false });
    assert_nothing(&run(&model, exact()));
    assert_nothing(&run(&model, options(LassoMethod::Caching, Schedulers::Portfolio, 1000)));
}

#[test]
fn dining_philosophers_livelock_is_found_by_caching_and_exact_but_not_by_temperature() {
    for philosophers in 2..=5 {
        let model = dining_philosophers::model(&dining_philosophers::Config { philosophers, bug: true });
        let cached = run(&model, caching(SchedulerKind::Random, 200));
        let cycle = assert_lasso(&model, &cached);
        assert_eq!(nodes(&cycle).len(), 2 * philosophers, "every fork and philosopher runs in the cycle");
        let temperature = LassoOptions {
            temperature_threshold: 50,
            ..options(LassoMethod::Temperature, Schedulers::One(SchedulerKind::Random), 200)
        };
        let temperature = run(&model, temperature);
        assert_eq!(temperature.buggy - temperature.false_positives.unwrap_or(0), 0, "{philosophers}");
        if philosophers <= 3 {
            let exact = run(&model, exact());
            assert_lasso(&model, &exact);
            assert!(exact.exact.expect("exact").complete);
        }
        if philosophers == 3 {
            // The livelock's worlds come early in the breadth-first order: a bound of 80 of the
            // graph's 1,346 worlds leaves the rest out and still finds the lasso, because steps
            // to worlds left out still count as enabled where they were taken.
            let cut = run(&model, LassoOptions { max_worlds: 80, ..exact() });
            assert_lasso(&model, &cut);
            assert!(!cut.exact.expect("exact").complete);
        }
    }
}

#[test]
fn dining_philosophers_taking_the_lower_fork_first_always_eat() {
    for philosophers in 2..=4 {
        let model = dining_philosophers::model(&dining_philosophers::Config { philosophers, bug: false });
        assert_nothing(&run(&model, exact()));
        assert_nothing(&run(&model, caching(SchedulerKind::Random, 300)));
    }
}

#[test]
fn leader_election_and_sliding_window_report_nothing() {
    let election = leader_election::model(&leader_election::Config { nodes: 5 });
    assert_nothing(&run(&election, options(LassoMethod::Caching, Schedulers::Portfolio, 400)));
    assert_nothing(&run(&election, exact()));
    let window = sliding_window::model(&sliding_window::Config { max_seq: 5 });
    let report = run(&window, options(LassoMethod::Caching, Schedulers::Portfolio, 400));
    assert_nothing(&report);
    assert_nothing(&run(&window, exact()));
}

/// The paper's Appendix C: the duel is a lasso of repeating *actions* whose values grow, so
/// caching finds it with P#'s default partial hash (machine states and queued event kinds) and
/// not with the full state, where nothing repeats; temperature does not find it either, as in
/// Table II (a duel rarely lasts TT steps).
#[test]
fn proposers_duel_is_a_lasso_of_the_partial_hash_and_not_of_the_full_state() {
    let model = proposers::model(&proposers::Config { bug: true });
    let sticky = SchedulerKind::Probabilistic { coin_flips: 3 };
    let report = run(&model, caching(sticky, 300));
    let cycle = assert_lasso(&model, &report);
    assert_eq!(nodes(&cycle), [0, 1, 2].into(), "the acceptor and both proposers run in the cycle");
    let proposed: Vec<u64> = cycle.iter().filter_map(|e| e["msg"]["Propose"].as_u64()).collect();
    assert!(proposed.windows(2).all(|w| w[0] <= w[1]) && proposed.first() < proposed.last(), "{cycle:?}");
    let declines = cycle.iter().filter(|e| e["msg"].get("Decline").is_some()).count();
    assert!(declines >= 2, "each proposer is declined in the cycle: {cycle:?}");

    let full = LassoOptions { hash: HashChoice::Full, ..caching(sticky, 300) };
    let full = run(&model, full);
    assert_nothing(&full);
    assert_eq!(full.discarded, 0, "no candidate cycle at all: the full state never repeats");
    let temperature = options(LassoMethod::Temperature, Schedulers::One(SchedulerKind::Random), 2000);
    assert_eq!(run(&model, temperature).buggy, 0);
}

#[test]
fn proposers_with_a_distinguished_proposer_report_nothing() {
    let model = proposers::model(&proposers::Config { bug: false });
    assert_nothing(&run(&model, options(LassoMethod::Caching, Schedulers::Portfolio, 2000)));
    assert_nothing(&run(&model, exact()));
}

#[test]
fn basic_paxos_with_a_distinguished_proposer_reports_nothing() {
    let model = basic_paxos::model(&basic_paxos::Config { bug: false });
    assert_nothing(&run(&model, options(LassoMethod::Caching, Schedulers::Portfolio, 400)));
    let full =
        LassoOptions { hash: HashChoice::Full, ..options(LassoMethod::Caching, Schedulers::Portfolio, 400) };
    assert_nothing(&run(&model, full));
}

#[test]
fn a_lasso_report_shows_the_stem_briefly_and_the_cycle_in_full() {
    let model = chord_lookup::model(&chord_lookup::Config { bug: true });
    let report = run(&model, caching(SchedulerKind::Random, 50));
    let finding = report.finding.expect("found");
    let text = finding.trace.to_text(false);
    assert!(text.contains("stem steps not shown"), "{text}");
    assert!(text.contains("--- the cycle: these 2 steps repeat forever ---"), "{text}");
    assert!(text.contains("hot: LivenessMonitor = Requested"), "{text}");
    assert!(text.matches("FindSuccessor").count() >= 2, "{text}");
}
