//! Both tools find the same distinct-state counts, equal to the published ones, on the small
//! configurations of every model family: in process, both engines, one and two threads.

use foretell_vs_stateright::measure::{run, Engine, Family, Spec, Tool};

fn assert_equal_counts(family: Family, size: usize) {
    let spec = Spec { family, size };
    let expected = spec.published_states().expect("a published count");
    for engine in [Engine::Bfs, Engine::Dfs] {
        for threads in [1, 2] {
            for tool in [Tool::Foretell, Tool::Stateright] {
                let states = run(tool, spec, engine, threads).states;
                assert_eq!(states, expected, "{tool} on {spec} with {engine} on {threads} threads");
            }
        }
    }
}

#[test]
fn two_phase_commit_three_and_five_rms() {
    assert_equal_counts(Family::TwoPhase, 3);
    assert_equal_counts(Family::TwoPhase, 5);
}

#[test]
fn paxos_tla_ballots_zero_to_one() {
    assert_equal_counts(Family::PaxosTla, 1);
}

#[test]
fn actor_paxos_one_and_two_clients() {
    assert_equal_counts(Family::ActorPaxos, 1);
    assert_equal_counts(Family::ActorPaxos, 2);
}
