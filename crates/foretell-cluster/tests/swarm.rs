//! Swarm walks find a planted violation, with a trace that replays, and stop at once.

mod support;

use foretell_cluster::{swarm_walks, ClusterConfig};
use foretell_model::Simulator;

#[test]
fn swarm_walks_find_the_planted_violation_and_its_trace_replays() {
    let model = support::model(3, true);
    let report = swarm_walks(&model, 500, 40, 11, &ClusterConfig::local(2)).unwrap().unwrap();
    let violation = report.violation.expect("the walks find the bug");
    assert_eq!(violation.property, "below three");
    assert_eq!(violation.trace.seed, Some(11));
    let replayed = Simulator::new(&model).unwrap().replay(&violation.trace).expect("the trace replays");
    assert_eq!(replayed.verdict.expect("it ends in the violation").property, "below three");
    assert!(report.walks < 2 * 500, "the first round with a violation stops every worker");
    // The same seed and shape give the same walk.
    let again = swarm_walks(&model, 500, 40, 11, &ClusterConfig::local(2)).unwrap().unwrap();
    assert_eq!(again.violation.unwrap().trace, violation.trace);
}

#[test]
fn swarm_walks_on_a_correct_model_run_every_walk() {
    let model = support::model(3, false);
    let report = swarm_walks(&model, 40, 30, 3, &ClusterConfig::local(2)).unwrap().unwrap();
    assert!(report.violation.is_none());
    assert_eq!(report.walks, 80);
    assert!(report.steps > 80);
}
