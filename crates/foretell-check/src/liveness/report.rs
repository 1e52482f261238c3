//! The liveness report: what a developer needs to act on a dead path — the critical event, the
//! path trimmed around it, the nearest live path and how the two differ, node by node (MaceMC's
//! Figure 6 as text).

use crate::Completion;
use foretell_model::{json_view, NodeDiff, NodeId, Protocol, Trace, World};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;
use std::fmt::{self, Write as _};

/// What a liveness run concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LivenessVerdict {
    /// Every walk from the periphery reached a live world: no suspect.
    NoSuspect,
    /// Case C1: a dead path with its critical transition.
    Dead,
    /// Case C2 after every allowed raise of `dmax`: a path that never became live, with no dead
    /// world early enough on it to be sure (a livelock from its start, or walks too short).
    Inconclusive,
    /// A safety property was violated on the way.
    SafetyViolation,
    /// A handler did not return within the watchdog.
    Divergence,
    /// The prefix walk never reached a live world to start from.
    NoLivePrefix,
    /// The run was stopped (timeout or interrupt) before it concluded. The report keeps what the
    /// run had found by then: its counts, the suspects it had not finished examining
    /// ([`LivenessStats::unconfirmed`], never reported as violations), and the undecided (C2)
    /// path it had kept, if any.
    Stopped(Completion),
}

impl fmt::Display for LivenessVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LivenessVerdict::NoSuspect => {
                f.write_str("no suspect: every walk from the periphery became live")
            }
            LivenessVerdict::Dead => f.write_str("dead path found (C1): a liveness violation"),
            LivenessVerdict::Inconclusive => {
                f.write_str("no critical transition found (C2): a path that never became live")
            }
            LivenessVerdict::SafetyViolation => f.write_str("safety violation"),
            LivenessVerdict::Divergence => f.write_str("divergence: a handler did not return"),
            LivenessVerdict::NoLivePrefix => f.write_str("the prefix walk never reached a live world"),
            // The completion's own words say "stopped at ..." for every bound.
            LivenessVerdict::Stopped(Completion::Interrupted) => f.write_str("stopped: interrupted"),
            LivenessVerdict::Stopped(why) => write!(f, "{why}"),
        }
    }
}

/// Counts and times of a liveness run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LivenessStats {
    /// Distinct worlds of the exhaustive part.
    pub search_states: u64,
    /// Non-live worlds at its periphery.
    pub periphery: u64,
    /// Random walks run (periphery walks, probes and extensions; a walk the run's stop cut
    /// short counts if it had taken a step).
    pub walks: u64,
    /// Steps those walks took.
    pub walk_steps: u64,
    /// Suspect paths (walks that never became live).
    pub suspects: u64,
    /// Suspects that recovered when their walk was extended.
    pub false_suspects: u64,
    /// Suspects the run's stop left unexamined or half-examined: neither confirmed dead nor
    /// shown to recover, and not reported as violations.
    pub unconfirmed: u64,
    /// Seconds until the first suspect.
    pub first_suspect_seconds: Option<f64>,
    /// Seconds until a critical transition was confirmed (C1).
    pub confirm_seconds: Option<f64>,
    /// Seconds in all.
    pub seconds: f64,
}

impl LivenessStats {
    /// Walks per second over the whole run.
    pub fn walks_per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.walks as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// The outcome of a liveness run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LivenessReport {
    /// The conclusion.
    pub verdict: LivenessVerdict,
    /// The liveness properties checked: a world is live when all of them hold.
    pub properties: Vec<String>,
    /// The dead (or undecided) path, the safety violation, or the divergence; its
    /// `liveness` field carries the critical transition and the nearest live path.
    pub trace: Option<Trace>,
    /// Counts and times.
    pub stats: LivenessStats,
    /// The walk depth bound at the end (raised by C2).
    pub dmax: usize,
}

impl LivenessReport {
    /// The critical step of a dead path (C1); `None` otherwise — an undecided (C2) path has no
    /// confirmed critical transition.
    pub fn critical_step(&self) -> Option<usize> {
        self.trace.as_ref()?.liveness.as_ref().filter(|l| l.case == "C1").map(|l| l.critical_step)
    }

    /// The event JSON at the critical step.
    pub fn critical_event(&self) -> Option<&Value> {
        let trace = self.trace.as_ref()?;
        let step = self.critical_step()?;
        trace.steps.get(step.checked_sub(1)?).map(|s| &s.event)
    }

    /// Asserts, from a test, that a dead path (C1) was found, and returns its trace.
    ///
    /// # Panics
    /// With the report, if it was not.
    pub fn assert_dead(&self) -> &Trace {
        match (&self.verdict, &self.trace) {
            (LivenessVerdict::Dead, Some(trace)) => trace,
            _ => panic!("expected a dead path\n{self}"),
        }
    }
}

impl fmt::Display for LivenessReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.stats;
        let mut text = String::new();
        let _ = writeln!(text, "verdict: {}", self.verdict);
        let _ = writeln!(text, "liveness: a world is live when {} hold", self.properties.join(", "));
        let _ = writeln!(
            text,
            "search: {} worlds to the periphery, {} non-live there; walks: {} ({} steps, {:.0} walks/s), \
             {} suspect(s), {} recovered when extended; dmax {}; {:.2} s",
            s.search_states,
            s.periphery,
            s.walks,
            s.walk_steps,
            s.walks_per_second(),
            s.suspects,
            s.false_suspects,
            self.dmax,
            s.seconds
        );
        if s.unconfirmed > 0 {
            let _ = writeln!(
                text,
                "{} suspect(s) neither confirmed nor refuted when the run stopped: not reported as violations",
                s.unconfirmed
            );
        }
        if let Some(trace) = &self.trace {
            text.push_str(&describe(trace));
        }
        f.write_str(text.trim_end())
    }
}

/// A trace as text; a dead path as MaceMC's Figure 6 shows it: the steps with the critical one
/// marked, the nearest live path after the shared prefix, and the per-node difference.
pub fn describe(trace: &Trace) -> String {
    let mut text = String::new();
    let Some(finding) = &trace.liveness else {
        text.push_str(&trace.to_text(false));
        return text;
    };
    let confirmed = finding.case == "C1";
    if confirmed {
        let _ = writeln!(
            text,
            "dead path (C1), {} steps shown of {}; critical transition at step {}:",
            trace.steps.len(),
            finding.path_length,
            finding.critical_step
        );
    } else {
        let _ = writeln!(
            text,
            "undecided path (C2), {} steps shown of {}; no critical transition confirmed (the probes \
             found no recovery from step {} on, and none early enough on the path to tell a dead \
             world from walks that were too short):",
            trace.steps.len(),
            finding.path_length,
            finding.critical_step
        );
    }
    for line in trace.to_text(false).lines() {
        let number = line.split_whitespace().next().and_then(|n| n.parse::<usize>().ok());
        let marker = if confirmed && number == Some(finding.critical_step) { ">>" } else { "  " };
        let _ = writeln!(text, "{marker}{line}");
    }
    if let Some(live) = &finding.nearest_live {
        let _ = writeln!(
            text,
            "nearest live path: the same first {} steps, then ({} steps to a live world):",
            live.shared,
            live.steps.len()
        );
        let shown = live.steps.iter().take(12);
        let partial = Trace {
            steps: shown.cloned().collect(),
            verdict: None,
            liveness: None,
            lasso: None,
            scenario: None,
            ..trace.clone()
        };
        for line in partial.to_text(false).lines().filter(|l| !l.starts_with("system ")) {
            let _ = writeln!(text, "  {line}");
        }
        if live.steps.len() > 12 {
            let _ = writeln!(text, "    ... {} more steps", live.steps.len() - 12);
        }
    }
    for node in &finding.diff {
        let _ = writeln!(
            text,
            "n{} after step {} (- dead path, + live path):",
            node.node.0, finding.critical_step
        );
        for line in &node.dead {
            let _ = writeln!(text, "  - {line}");
        }
        for line in &node.live {
            let _ = writeln!(text, "  + {line}");
        }
    }
    text
}

/// How each node of `dead` differs from the same node of `live`: the `path = value` lines of
/// its state, timers and incoming messages that only one side has.
pub(crate) fn diff<P: Protocol>(dead: &World<P>, live: &World<P>) -> Vec<NodeDiff> {
    let mut diffs = Vec::new();
    for n in 0..dead.node_count().min(live.node_count()) {
        let node = NodeId::new(n);
        let (a, b) = (lines(dead, node), lines(live, node));
        let only_dead: Vec<String> = a.difference(&b).cloned().collect();
        let only_live: Vec<String> = b.difference(&a).cloned().collect();
        if !only_dead.is_empty() || !only_live.is_empty() {
            diffs.push(NodeDiff { node, dead: only_dead, live: only_live });
        }
    }
    diffs
}

/// A node's lines: its state, its armed timers, and what is in flight to it (messages and
/// transport errors), which is often where two paths part.
fn lines<P: Protocol>(world: &World<P>, node: NodeId) -> BTreeSet<String> {
    let view = world.node(node);
    let value = serde_json::json!({ "state": json_view(view.state), "timers": json_view(view.timers) });
    let mut out = BTreeSet::new();
    flatten("", &value, &mut out);
    for envelope in world.messages().filter(|e| e.to == node) {
        let msg = json_view(&envelope.msg);
        out.insert(format!("in flight from n{} = {msg}", envelope.from.0));
    }
    for (_, peer) in world.pending_transport_errors().iter().filter(|(at, _)| *at == node) {
        out.insert(format!("transport error pending = n{}", peer.0));
    }
    out
}

/// `path = value` for every leaf of `value`.
fn flatten(path: &str, value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, v) in map {
                flatten(&join(path, key), v, out);
            }
        }
        // A list of plain values reads as a set (the serialized form of sets and maps of
        // them): an element added in front does not make every later one differ.
        Value::Array(items) if !items.is_empty() && items.iter().all(|v| !v.is_object() && !v.is_array()) => {
            for v in items {
                out.insert(format!("{path}[] = {v}"));
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (i, v) in items.iter().enumerate() {
                flatten(&join(path, &i.to_string()), v, out);
            }
        }
        leaf => {
            out.insert(format!("{path} = {leaf}"));
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}
