//! Exact fair cycles: a stateful breadth-first exploration that keeps the whole state graph —
//! worlds paired with their monitors' states — and then searches it for a strongly connected
//! component of hot worlds in which every event source enabled is taken (a source as in
//! [`super::execution`]) and every choice site takes each of its values
//! ([`super::fair_cycle`]). What TLC does with tableaux and SPIN with nested depth-first search,
//! on the implementation-level model; it complements P#'s sampling methods (FMCAD'17, section
//! VII) wherever the graph is finite and fits in memory.
//!
//! A lasso found in a partly explored graph is still real: its edges are real steps, and a step
//! to a world the bound on worlds left out leads to a cold vertex without steps, so the step's
//! source counts as enabled where it was taken and no cycle passes it. Only a lasso's absence is
//! then inconclusive.

use super::execution::{environment, fingerprint, is_idle, Executor, Sites, Steps};
use super::fair_cycle::{find_fair_lasso, ChoiceLabel, Edge, FairCycleStats, Graph};
use foretell_model::{Action, ChoiceOdometer, Chooser, MonitorState, Protocol, StepViolation, World};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::panic::Location;

/// What the exploration found.
pub(crate) struct Explored {
    /// Worlds (with monitor states) discovered.
    pub(crate) worlds: u64,
    /// Steps between them.
    pub(crate) edges: u64,
    /// Whether every discovered world was expanded.
    pub(crate) complete: bool,
    pub(crate) stats: FairCycleStats,
    pub(crate) found: Option<ExactFinding>,
}

/// A finding, as the steps that reach it.
pub(crate) struct ExactFinding {
    pub(crate) init_choices: Vec<usize>,
    pub(crate) steps: Steps,
    pub(crate) kind: ExactKind,
}

/// What kind of finding.
pub(crate) enum ExactKind {
    /// A fair hot cycle after `cycle_start` stem steps.
    Lasso { cycle_start: usize },
    /// A hot world with nothing enabled.
    EndsHot,
    /// A step that violates a safety property (the last step).
    Safety(StepViolation),
}

/// A chooser that answers from an odometer and notes the choice sites.
struct Noting<'a> {
    odometer: &'a mut ChoiceOdometer,
    /// The process whose handler runs.
    process: u32,
    sites: &'a mut Sites,
    labels: Vec<ChoiceLabel>,
}

impl Chooser for Noting<'_> {
    fn choose(&mut self, n: usize) -> usize {
        self.odometer.choose(n)
    }

    fn choose_at(&mut self, n: usize, site: &'static Location<'static>) -> usize {
        let value = self.odometer.choose(n);
        let site = self.sites.id(self.process, site);
        self.labels.push(ChoiceLabel { site, value: value as u32, arity: n as u32 });
        value
    }
}

/// One step of a world: its action, choices, choice labels and result.
type WorldStep<P> =
    (Action, Vec<usize>, Vec<ChoiceLabel>, Result<(World<P>, Vec<MonitorState>), StepViolation>);

impl<P: Protocol> Executor<'_, '_, P> {
    /// Every step of `world`: each enabled action with each vector of choice values.
    fn each_step(
        &self,
        world: &World<P>,
        monitors: &[MonitorState],
        sites: &mut Sites,
        mut each: impl FnMut(WorldStep<P>),
    ) {
        let mut actions = Vec::new();
        self.sim.actions(world, &mut actions);
        let mut odometer = ChoiceOdometer::new();
        let env = environment(self.model.node_count());
        for action in actions {
            let process = self.sim.process_of(world, action).map_or(env, |n| n.0);
            loop {
                let mut chooser = Noting { odometer: &mut odometer, process, sites, labels: Vec::new() };
                let result = self.step(world, monitors, action, &mut chooser);
                let labels = chooser.labels;
                let (result, choices) = match result {
                    Ok(stepped) => (Ok((stepped.world, stepped.monitors)), stepped.choices),
                    Err(violation) => (Err(violation), labels.iter().map(|l| l.value as usize).collect()),
                };
                each((action, choices, labels, result));
                if !odometer.advance() {
                    break;
                }
            }
        }
    }

    /// Explores up to `max_worlds` worlds and searches the graph for a fair hot lasso.
    ///
    /// Vertex 0 is a root before the initial worlds, and vertex 1 stands for every world the
    /// bound left out; neither is hot, and the worlds are numbered from 2.
    pub(crate) fn explore_exact(&self, max_worlds: usize, stop: &dyn Fn() -> bool) -> Explored {
        let mut sites = Sites::default();
        // Sources (event shapes) as small numbers for the graph, and back.
        let mut source_ids: FxHashMap<u64, u32> = FxHashMap::default();
        let mut shapes: Vec<u64> = Vec::new();
        let mut ids: FxHashMap<u128, u32> = FxHashMap::default();
        // Each vertex's fingerprint, to find its steps again when a path is rebuilt.
        let mut fingerprints: Vec<u128> = vec![0, 0];
        let mut graph = Graph {
            hot: vec![false, false],
            offsets: vec![0],
            edges: Vec::new(),
            choice_sets: vec![Vec::new()],
        };
        let mut choice_set_ids: FxHashMap<Vec<ChoiceLabel>, u32> = FxHashMap::default();
        // The parent edge of each vertex, for paths to dead ends and violations.
        let mut parent: Vec<u32> = vec![u32::MAX, u32::MAX];
        let mut init_choices: FxHashMap<u32, Vec<usize>> = FxHashMap::default();
        let mut queue: VecDeque<(World<P>, Vec<MonitorState>)> = VecDeque::new();
        let mut discover = |graph: &mut Graph,
                            parent: &mut Vec<u32>,
                            queue: &mut VecDeque<(World<P>, Vec<MonitorState>)>,
                            world: World<P>,
                            monitors: Vec<MonitorState>,
                            via: u32|
         -> Option<u32> {
            let fp = fingerprint(&world, &monitors);
            if let Some(&id) = ids.get(&fp) {
                return Some(id);
            }
            if ids.len() >= max_worlds {
                return None;
            }
            let id = graph.hot.len() as u32;
            ids.insert(fp, id);
            fingerprints.push(fp);
            graph.hot.push(self.hot(&monitors));
            parent.push(via);
            queue.push_back((world, monitors));
            Some(id)
        };
        let mut initial = Vec::new();
        self.sim.initial_worlds(|choices, world, _| initial.push((choices, world)));
        // An initial world the bound on worlds left out leaves the graph incomplete too.
        let mut complete = true;
        for (choices, world) in initial {
            let monitors = self.monitors.iter().map(|m| m.init(&world)).collect();
            let edge = graph.edges.len() as u32;
            match discover(&mut graph, &mut parent, &mut queue, world, monitors, edge) {
                Some(id) => {
                    graph.edges.push(Edge { target: id, source: Edge::UNOWED, choice_set: 0 });
                    init_choices.entry(id).or_insert(choices);
                }
                None => complete = false,
            }
        }
        // The root's edges end here, and the vertex of the worlds left out has none.
        graph.offsets.push(graph.edges.len() as u32);
        graph.offsets.push(graph.edges.len() as u32);
        let mut dead_end = None;
        let mut violation: Option<(u32, Action, Vec<usize>, StepViolation)> = None;
        let mut next_vertex = 2u32;
        while let Some((world, monitors)) = queue.pop_front() {
            let vertex = next_vertex;
            next_vertex += 1;
            if stop() {
                complete = false;
                break;
            }
            let mut stepped = Vec::new();
            self.each_step(&world, &monitors, &mut sites, |step| stepped.push(step));
            // A step that changes nothing and chooses nothing is no step (an idle event): no
            // edge, and it does not make its source enabled here.
            let here = fingerprint(&world, &monitors);
            stepped.retain(|(_, choices, _, result)| {
                !result.as_ref().is_ok_and(|(w, m)| is_idle(here, choices, w, m))
            });
            if stepped.is_empty() && graph.hot[vertex as usize] && dead_end.is_none() {
                dead_end = Some(vertex);
            }
            for (action, choices, labels, result) in stepped {
                let source = self.source(&world, action).map_or(Edge::UNOWED, |shape| {
                    *source_ids.entry(shape).or_insert_with(|| {
                        shapes.push(shape);
                        shapes.len() as u32 - 1
                    })
                });
                let (next, next_monitors) = match result {
                    Ok(next) => next,
                    Err(v) => {
                        if violation.is_none() {
                            violation = Some((vertex, action, choices, v));
                        }
                        continue;
                    }
                };
                let edge = graph.edges.len() as u32;
                let target = discover(&mut graph, &mut parent, &mut queue, next, next_monitors, edge)
                    .unwrap_or_else(|| {
                        complete = false;
                        LEFT_OUT
                    });
                let next_id = choice_set_ids.len() as u32 + 1;
                let choice_set = if labels.is_empty() {
                    0
                } else {
                    *choice_set_ids.entry(labels.clone()).or_insert_with(|| {
                        graph.choice_sets.push(labels);
                        next_id
                    })
                };
                graph.edges.push(Edge { target, source, choice_set });
            }
            graph.offsets.push(graph.edges.len() as u32);
        }
        // Worlds never expanded have no edges.
        while graph.offsets.len() < graph.hot.len() + 1 {
            graph.offsets.push(graph.edges.len() as u32);
            complete = false;
        }
        let (lasso, stats) = find_fair_lasso(&graph, 0);
        let worlds = graph.hot.len() as u64 - 2;
        let edges = graph.edges.len() as u64;
        let sources = edge_sources(&graph);
        let path_to = |vertex: u32| -> Vec<u32> {
            let mut path = Vec::new();
            let mut at = vertex;
            while at != 0 {
                let edge = parent[at as usize];
                path.push(edge);
                at = sources[edge as usize];
            }
            path.reverse();
            path
        };
        let rebuild =
            |edges_taken: &[u32]| self.rebuild(&graph, &fingerprints, &shapes, &init_choices, edges_taken);
        let found = if let Some((vertex, action, choices, v)) = violation {
            let (init, mut steps) = rebuild(&path_to(vertex));
            steps.push((action, choices));
            Some(ExactFinding { init_choices: init, steps, kind: ExactKind::Safety(v) })
        } else {
            let dead = dead_end.map(path_to);
            // The finding with the shorter stem (a dead end's path ends in it).
            match (lasso, dead) {
                (Some(lasso), dead) if dead.as_ref().is_none_or(|d| d.len() >= lasso.stem.len()) => {
                    let taken: Vec<u32> = lasso.stem.iter().chain(&lasso.cycle).copied().collect();
                    let (init, steps) = rebuild(&taken);
                    let cycle_start = lasso.stem.len() - 1;
                    Some(ExactFinding { init_choices: init, steps, kind: ExactKind::Lasso { cycle_start } })
                }
                (_, Some(dead)) => {
                    let (init, steps) = rebuild(&dead);
                    Some(ExactFinding { init_choices: init, steps, kind: ExactKind::EndsHot })
                }
                (_, None) => None,
            }
        };
        Explored { worlds, edges, complete, stats, found }
    }

    /// The initial choices and the steps along `edges_taken` (a path from the root), found
    /// by re-executing each step of each world and matching the target's fingerprint and the
    /// edge's source (by its index into `shapes`).
    fn rebuild(
        &self,
        graph: &Graph,
        fingerprints: &[u128],
        shapes: &[u64],
        init_choices: &FxHashMap<u32, Vec<usize>>,
        edges_taken: &[u32],
    ) -> (Vec<usize>, Steps) {
        let first = graph.edges[edges_taken[0] as usize].target;
        let choices = init_choices[&first].clone();
        let mut start = None;
        self.sim.initial_worlds(|c, w, _| {
            if c == choices && start.is_none() {
                start = Some(w);
            }
        });
        let mut world = start.expect("an initial world of the graph");
        let mut monitors: Vec<MonitorState> = self.monitors.iter().map(|m| m.init(&world)).collect();
        let mut steps = Vec::new();
        let mut sites = Sites::default();
        for &edge in &edges_taken[1..] {
            let Edge { target, source, .. } = graph.edges[edge as usize];
            let target = fingerprints[target as usize];
            let source = (source != Edge::UNOWED).then(|| shapes[source as usize]);
            let mut next = None;
            self.each_step(&world, &monitors, &mut sites, |(action, choices, _, result)| {
                if next.is_none() && self.source(&world, action) == source {
                    if let Ok((w, m)) = result {
                        if fingerprint(&w, &m) == target {
                            next = Some((action, choices, w, m));
                        }
                    }
                }
            });
            let (action, choices, w, m) = next.expect("a graph edge is a step");
            steps.push((action, choices));
            world = w;
            monitors = m;
        }
        (choices, steps)
    }
}

/// The vertex that stands for every world the bound on worlds left out.
const LEFT_OUT: u32 = 1;

/// The source vertex of every edge.
fn edge_sources(graph: &Graph) -> Vec<u32> {
    let mut sources = vec![0; graph.edges.len()];
    for (vertex, window) in graph.offsets.windows(2).enumerate() {
        sources[window[0] as usize..window[1] as usize].fill(vertex as u32);
    }
    sources
}
