//! Breadth-first search at scale: the same counts and shortest traces on any thread count,
//! lossy memory modes that say what they may have missed, and a memory budget that stops
//! cleanly.

use foretell_check::{Check, Completion, Interrupt, Memory};
use foretell_model::*;

/// Each node counts its own inputs, up to `limit`; the space is every combination of counts.
struct Counters {
    limit: u16,
}

const NODES: usize = 4;
const LIMIT: u16 = 9;
const ALL_WORLDS: u64 = (LIMIT as u64 + 1).pow(NODES as u32);

impl Protocol for Counters {
    type State = u16;
    type Msg = ();
    type Timer = ();
    type Input = ();

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> u16 {
        0
    }

    fn on_message(&self, _: NodeId, _: &mut u16, _: NodeId, _: &(), _: &mut Out<'_, Self>) {}

    fn on_input(&self, _: NodeId, count: &mut u16, _: &(), out: &mut Out<'_, Self>) {
        if *count == self.limit {
            out.disable();
        } else {
            *count += 1;
        }
    }
}

/// `nodes` counters up to `limit`.
fn counting(nodes: usize, limit: u16) -> Model<Counters> {
    let mut driver = Driver::new();
    for node in NodeId::all(nodes) {
        driver = driver.spontaneous(node, ());
    }
    Model::new(Counters { limit }).nodes(nodes).driver(driver)
}

fn counters() -> Model<Counters> {
    counting(NODES, LIMIT)
}

fn sum(world: &World<Counters>) -> u32 {
    world.states().map(|c| u32::from(*c)).sum()
}

#[test]
fn every_thread_count_finds_the_same_worlds() {
    let model = counters().always("the sum stays small", |w| sum(w) < 100);
    for threads in [1, 2, 3, 8] {
        let report = Check::bfs(&model).threads(threads).run();
        report.assert_holds("the sum stays small");
        assert_eq!(report.stats.unique_states, ALL_WORLDS, "{threads} threads");
        assert_eq!(report.stats.max_depth, NODES * LIMIT as usize, "{threads} threads");
        assert_eq!(report.stats.transitions, ALL_WORLDS * NODES as u64 - 4 * 1000, "{threads} threads");
    }
}

#[test]
fn counterexamples_stay_shortest_on_every_thread_count() {
    let model = counters().always("the sum stays below 30", |w| sum(w) < 30);
    for threads in [1, 2, 4] {
        let report = Check::bfs(&model).threads(threads).run();
        let violation = report.assert_violated("the sum stays below 30");
        assert_eq!(violation.trace.steps.len(), 30, "{threads} threads");
        Simulator::new(&model).unwrap().replay(&violation.trace).expect("the trace replays");
    }
}

#[test]
fn sometimes_properties_are_covered_by_any_worker() {
    let model = counters().sometimes("every node at its limit", |w| w.states().all(|c| *c == LIMIT));
    let report = Check::bfs(&model).threads(2).run();
    report.assert_covered("every node at its limit");
}

#[test]
fn hash_compaction_explores_a_small_space_fully_and_says_it_is_lossy() {
    let model = counters();
    let report = Check::bfs(&model).memory(Memory::Compact).threads(2).run();
    assert_eq!(report.stats.unique_states, ALL_WORLDS);
    let omission = report.omission.expect("a lossy mode reports its omission estimate");
    assert!(omission.per_state > 0.0 && omission.per_state < 1e-5, "{omission:?}");
}

#[test]
fn bitstate_hashing_in_a_tiny_filter_misses_worlds_and_says_so() {
    let model = counters();
    let roomy = Check::bfs(&model).memory(Memory::Bitstate { bytes: 1 << 20, hashes: 3 }).run();
    assert_eq!(roomy.stats.unique_states, ALL_WORLDS);
    let cramped = Check::bfs(&model).memory(Memory::Bitstate { bytes: 256, hashes: 3 }).run();
    assert!(cramped.stats.unique_states < ALL_WORLDS, "{cramped}");
    let omission = cramped.omission.expect("bitstate reports its omission estimate");
    assert!(omission.per_state > 0.5, "a 2048-bit filter is nearly full: {omission:?}");
    assert!(omission.expected_missed > 1.0, "{omission:?}");
    assert!(cramped.to_string().contains("states missed"), "{cramped}");
}

#[test]
fn a_memory_budget_stops_cleanly_with_a_partial_report() {
    let model = counters().always("the sum stays small", |w| sum(w) < 100);
    for threads in [1, 2] {
        let report = Check::bfs(&model).threads(threads).memory_max(1).run();
        assert_eq!(report.completion, Completion::MemoryBound);
        assert!(report.violations.is_empty());
        assert!(report.stats.unique_states < ALL_WORLDS);
    }
}

#[test]
fn an_interrupt_stops_a_parallel_search() {
    let interrupt = Interrupt::new();
    interrupt.raise();
    let report = Check::bfs(&counters()).threads(2).interrupt(interrupt).run();
    assert_eq!(report.completion, Completion::Interrupted);
}

#[test]
fn depth_first_search_sharing_work_finds_every_world_on_any_thread_count() {
    let model = counters().always("the sum stays small", |w| sum(w) < 100);
    for threads in [1, 2, 4] {
        let report = Check::dfs(&model).threads(threads).run();
        report.assert_holds("the sum stays small");
        assert_eq!(report.stats.unique_states, ALL_WORLDS, "{threads} threads");
    }
}

#[test]
fn depth_bounded_searches_agree_whatever_the_order_and_thread_count() {
    let model = counters();
    let bfs = Check::bfs(&model).depth_max(12).run();
    assert_eq!(bfs.completion, Completion::DepthBound);
    for threads in [1, 2] {
        let dfs = Check::dfs(&model).depth_max(12).threads(threads).run();
        assert_eq!(dfs.completion, Completion::DepthBound);
        assert_eq!(dfs.stats.unique_states, bfs.stats.unique_states, "{threads} threads");
    }
}

#[test]
fn parallel_depth_first_search_reports_a_violation_that_replays() {
    let model = counters().always("the sum stays below 30", |w| sum(w) < 30);
    let report = Check::dfs(&model).threads(2).run();
    let violation = report.assert_violated("the sum stays below 30");
    assert!(violation.trace.steps.len() >= 30);
    Simulator::new(&model).unwrap().replay(&violation.trace).expect("the trace replays");
}

/// The top of a one-node ladder: a space of one world a level, `TOP` levels deep.
const TOP: u16 = 2000;

/// A deep, narrow space, whose levels one worker expands alone while the others wait: every
/// thread count explores it whole, and finds the same shortest counterexample in it.
#[test]
fn a_deep_narrow_space_gives_the_same_answers_on_every_thread_count() {
    let ladder = || counting(1, TOP);
    let below_top = ladder().always("below the top", |w| *w.state(NodeId(0)) < TOP);
    for threads in [1, 2, 4] {
        let whole = Check::bfs(&ladder()).threads(threads).run();
        assert_eq!(whole.completion, Completion::Exhausted, "{threads} threads");
        assert_eq!(whole.stats.unique_states, u64::from(TOP) + 1, "{threads} threads");
        assert_eq!(whole.stats.max_depth, usize::from(TOP), "{threads} threads");
        let violated = Check::bfs(&below_top).threads(threads).run();
        let violation = violated.assert_violated("below the top");
        assert_eq!(violation.trace.steps.len(), usize::from(TOP), "{threads} threads");
        Simulator::new(&below_top).unwrap().replay(&violation.trace).expect("the trace replays");
    }
}
