//! Traces as text: one line per step (step, node, event, messages sent), states on request.

use crate::trace::compact;
use crate::{Trace, TraceStep};
use serde_json::Value;
use std::fmt::Write as _;

impl Trace {
    /// The trace as text, one line per step; with `states`, each touched node's state follows
    /// its step.
    pub fn to_text(&self, states: bool) -> String {
        let mut text = String::new();
        if let Some(system) = &self.system {
            let variant = system.variant.as_deref().unwrap_or("correct");
            let params: Vec<String> = system.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(text, "system {} ({variant}) {}", system.name, params.join(" "));
        }
        if states {
            for (i, state) in self.initial.states.iter().flatten().enumerate() {
                let _ = writeln!(text, "     init  n{i}  {}", compact(state));
            }
        }
        let scenario_end = |step: usize| self.scenario.as_ref().filter(|s| s.steps == step);
        if let Some(scenario) = scenario_end(0) {
            let _ = writeln!(text, "      --- the search started here, at scenario {:?} ---", scenario.name);
        }
        // A lasso's stem is shown briefly, its cycle in full.
        let cycle = self.lasso.as_ref().filter(|l| l.cycle_length > 0);
        let shown_from = cycle.map_or(0, |l| l.cycle_start.saturating_sub(STEM_SHOWN));
        if shown_from > 0 {
            let _ = writeln!(text, "      ... {shown_from} stem steps not shown ...");
        }
        for (i, step) in self.steps.iter().enumerate().skip(shown_from) {
            if cycle.is_some_and(|l| l.cycle_start == i) {
                let length = cycle.map_or(0, |l| l.cycle_length);
                let _ = writeln!(text, "      --- the cycle: these {length} steps repeat forever ---");
            }
            let _ = writeln!(text, "{}", step_line(step));
            for line in &step.log {
                let _ = writeln!(text, "            log: {line}");
            }
            if states {
                if let Some(state) = &step.state {
                    let _ = writeln!(text, "            state: {}", compact(state));
                }
            }
            if let Some(scenario) = scenario_end(step.step) {
                let _ =
                    writeln!(text, "      --- the search started here, at scenario {:?} ---", scenario.name);
            }
        }
        if let Some(verdict) = &self.verdict {
            let _ = writeln!(
                text,
                "violation at step {}: {} {:?}: {}",
                verdict.step, verdict.kind, verdict.property, verdict.message
            );
        }
        if let Some(lasso) = &self.lasso {
            for (monitor, state) in &lasso.hot {
                let _ = writeln!(text, "hot: {monitor} = {state}");
            }
        }
        text
    }
}

/// How many steps of a lasso's stem are shown before its cycle.
const STEM_SHOWN: usize = 3;

fn step_line(step: &TraceStep) -> String {
    let mut line = format!("{:>5}  {:<4} {}", step.step, format!("n{}", step.node.0), describe(&step.event));
    if !step.choices.is_empty() {
        let choices: Vec<String> = step.choices.iter().map(usize::to_string).collect();
        let _ = write!(line, "  [choices {}]", choices.join(","));
    }
    if !step.sent.is_empty() {
        let sent: Vec<String> =
            step.sent.iter().map(|m| format!("n{}: {}", m.to.0, compact(&m.msg))).collect();
        let _ = write!(line, "  => {}", sent.join(", "));
    }
    line
}

/// A compact, kind-specific description of an event's JSON.
fn describe(event: &Value) -> String {
    let field = |name: &str| event.get(name).map(compact).unwrap_or_default();
    let node = |name: &str| format!("n{}", field(name));
    match event.get("kind").and_then(Value::as_str) {
        Some("deliver") => format!("<- {}: {}", node("from"), field("msg")),
        Some("transport_error") => format!("transport error: connection to {} broke", node("peer")),
        Some("timer") => format!("timer {}", field("timer")),
        Some("input") => format!("input {}", field("input")),
        Some("spontaneous") => format!("spontaneous {}", field("input")),
        Some("reset") => "reset (crash and restart)".to_string(),
        Some("drop") => format!("network drops {} -> {}: {}", node("from"), node("to"), field("msg")),
        Some("duplicate") => {
            format!("network duplicates {} -> {}: {}", node("from"), node("to"), field("msg"))
        }
        Some("socket_error") => format!("socket error: the connection to {} breaks both ways", node("peer")),
        _ => compact(event),
    }
}
