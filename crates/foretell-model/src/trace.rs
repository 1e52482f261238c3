//! Traces: the versioned JSON format every engine writes, and replay.
//!
//! A trace is the list of answers given at the one seam (which event, which choice values) plus
//! what they produced (messages sent, log lines, fingerprints, touched states), so that a person
//! can read it and a program can re-execute it. `replay` re-runs a trace against a model and
//! fails at the first step whose event is not enabled, whose choices disagree, or whose
//! fingerprint differs: a non-deterministic handler is a bug to report, not to hide.

use crate::simulator::{EventOf, FixedChoices, StepOutcome, StepViolation, ViolationKind};
use crate::{json_view, Action, Fingerprint, NodeId, Protocol, Simulator, World};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// The `format` field of every trace file.
pub const TRACE_FORMAT: &str = "foretell-trace";
/// The trace format version this crate writes and reads. Version 2 changed no field but what
/// the fingerprints are computed from ([`crate::FingerprintHasher`]): a version-1 trace would
/// replay with every fingerprint differing, which would read as a non-deterministic handler.
pub const TRACE_VERSION: u32 = 2;

/// Which configured system a trace belongs to, so that tools can rebuild its model.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemRef {
    /// The system's registered name.
    pub name: String,
    /// The variant (a bug name), or `None` for the correct version.
    #[serde(default)]
    pub variant: Option<String>,
    /// Every parameter's value, defaults included.
    #[serde(default)]
    pub params: BTreeMap<String, String>,
}

/// The initial world of a trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceInitial {
    /// The choice values the `init` handlers were given.
    #[serde(default)]
    pub choices: Vec<usize>,
    /// The initial world's fingerprint, 32 hexadecimal digits.
    pub fingerprint: String,
    /// Every node's initial state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub states: Option<Vec<Value>>,
}

/// The scenario a search started from: the trace's first steps lead to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceScenario {
    /// The scenario's name.
    pub name: String,
    /// How many of the trace's steps are the scenario's.
    pub steps: usize,
}

/// A message a step sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SentMessage {
    /// The destination.
    pub to: NodeId,
    /// The payload.
    pub msg: Value,
}

/// One step of a trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceStep {
    /// The step's number, from 1.
    pub step: usize,
    /// The node the event happened at.
    pub node: NodeId,
    /// The event ([`crate::Event`] as JSON).
    pub event: Value,
    /// The choice values the handler was given.
    #[serde(default)]
    pub choices: Vec<usize>,
    /// The messages the handler sent.
    #[serde(default)]
    pub sent: Vec<SentMessage>,
    /// The handler's log lines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<String>,
    /// The world's fingerprint after the step.
    pub fingerprint: String,
    /// The node's state after the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Value>,
}

/// Which property a trace violates, and where.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceVerdict {
    /// The property.
    pub property: String,
    /// How it was violated.
    pub kind: ViolationKind,
    /// The step at which it was violated (0: the initial world).
    pub step: usize,
    /// A human-readable detail.
    pub message: String,
}

impl From<TraceVerdict> for StepViolation {
    fn from(verdict: TraceVerdict) -> Self {
        StepViolation { kind: verdict.kind, property: verdict.property, message: verdict.message }
    }
}

impl TraceVerdict {
    /// The verdict on a path that parted, at `step`, from what a search explored, for the
    /// reason `problem`: some handler is not a function of its state, event and choices.
    pub fn parted(step: usize, problem: &str) -> Self {
        TraceVerdict {
            property: "deterministic handlers".into(),
            kind: ViolationKind::Nondeterminism,
            step,
            message: format!(
                "step {step} did not re-execute as the search explored it ({problem}): a handler is \
                 not a function of its state, event and choices"
            ),
        }
    }
}

/// A replayable trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    /// Always [`TRACE_FORMAT`].
    pub format: String,
    /// Always [`TRACE_VERSION`] for traces this version writes.
    pub version: u32,
    /// The system and configuration, when the trace came from a registered system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<SystemRef>,
    /// The engine that found it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The seed, for engines that draw random numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The scenario the search started from, when it did not start at the initial world.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<TraceScenario>,
    /// The initial world.
    pub initial: TraceInitial,
    /// The steps, in order.
    pub steps: Vec<TraceStep>,
    /// The violation the trace ends in, if it ends in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<TraceVerdict>,
    /// For a liveness violation: the critical transition and the nearest live path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub liveness: Option<LivenessFinding>,
    /// For a lasso: where its cycle starts and what kept it hot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lasso: Option<LassoFinding>,
}

/// What a lasso engine found (P#, FMCAD'17, section II): the trace's steps are the stem and then
/// one iteration of a cycle that can repeat forever, hot and fair.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LassoFinding {
    /// How it was found: `caching` (a partial-state repeat confirmed by replay), `exact` (a
    /// fair strongly connected component of the state graph), `temperature` (hot for too long)
    /// or `ends-hot` (the execution stopped in a hot world).
    pub method: String,
    /// The number of stem steps: the cycle is the steps after them (none for `temperature` and
    /// `ends-hot`, which report no cycle).
    pub cycle_start: usize,
    /// The cycle's length in steps.
    pub cycle_length: usize,
    /// The hot monitors at the end, each with its state.
    pub hot: Vec<(String, String)>,
}

/// What the liveness engine found on a dead path (MaceMC, NSDI'07, sections 4.1 and 5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LivenessFinding {
    /// `C1` (a dead world: the critical transition is known) or `C2` (the walks were too
    /// short to tell).
    pub case: String,
    /// The critical transition: the step into the first world that never recovers.
    pub critical_step: usize,
    /// The liveness properties that do not hold at the end of the dead path.
    pub not_live: Vec<String>,
    /// How long the dead path was before it was trimmed to end a little past the critical step.
    pub path_length: usize,
    /// The recovering walk that shares the longest prefix with the dead path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nearest_live: Option<NearestLive>,
    /// Per node, how the dead path's world and the live path's world differ after the
    /// critical step.
    #[serde(default)]
    pub diff: Vec<NodeDiff>,
}

/// The nearest live path: it follows the dead path for `shared` steps, then its own steps
/// lead to a live world.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NearestLive {
    /// Steps shared with the dead path.
    pub shared: usize,
    /// The steps after the shared prefix, numbered from `shared + 1`; the last reaches a live world.
    pub steps: Vec<TraceStep>,
}

/// How one node differs between the dead and the live path: lines `path = value` of its state
/// and timers that only one side has.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeDiff {
    /// The node.
    pub node: NodeId,
    /// Lines only the dead path's world has (state, timers, messages in flight to the node).
    pub dead: Vec<String>,
    /// Lines only the live path's world has.
    pub live: Vec<String>,
}

/// Why a trace file cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The text is not JSON of the trace's shape.
    #[error("not a foretell trace: {0}")]
    Malformed(String),
    /// The `format` field is not `foretell-trace`.
    #[error("not a foretell trace: format is {0:?}")]
    WrongFormat(String),
    /// The version is not one this build reads.
    #[error("trace format version {0} is not supported (this build reads version {TRACE_VERSION})")]
    UnsupportedVersion(u32),
}

/// Where and why a replay departed from its trace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ReplayError {
    /// The step (0: the initial world; past the last step: the verdict).
    pub step: usize,
    /// What went wrong.
    pub reason: String,
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.step == 0 {
            write!(f, "initial world: {}", self.reason)
        } else {
            write!(f, "step {}: {}", self.step, self.reason)
        }
    }
}

impl Trace {
    /// Whether recording this trace parted from the path a search explored (its verdict is
    /// [`ViolationKind::Nondeterminism`]): no conclusion about the path should replace it.
    pub fn parted(&self) -> bool {
        self.verdict.as_ref().is_some_and(|v| v.kind == ViolationKind::Nondeterminism)
    }

    /// Reads a trace from JSON text.
    ///
    /// # Errors
    /// [`TraceError`] when the text is not a trace of a supported version.
    pub fn from_json(text: &str) -> Result<Trace, TraceError> {
        // A byte-order mark, which some editors write before JSON, is no part of the trace.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let value: Value = serde_json::from_str(text).map_err(|e| TraceError::Malformed(e.to_string()))?;
        match value.get("format").and_then(Value::as_str) {
            Some(TRACE_FORMAT) => {}
            Some(other) => return Err(TraceError::WrongFormat(other.to_string())),
            None => return Err(TraceError::Malformed("no \"format\" field".into())),
        }
        match value.get("version").and_then(Value::as_u64) {
            Some(v) if v == u64::from(TRACE_VERSION) => {}
            Some(v) => return Err(TraceError::UnsupportedVersion(u32::try_from(v).unwrap_or(u32::MAX))),
            None => return Err(TraceError::Malformed("no numeric \"version\" field".into())),
        }
        serde_json::from_value(value).map_err(|e| TraceError::Malformed(e.to_string()))
    }

    /// The trace as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a trace is plain JSON data")
    }
}

/// A replayed trace: the worlds it passes through and the violation it reproduces.
pub struct Replayed<P: Protocol> {
    /// The initial world followed by the world after each step.
    pub worlds: Vec<World<P>>,
    /// The first violation met, if any.
    pub verdict: Option<TraceVerdict>,
}

impl<P: Protocol> fmt::Debug for Replayed<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replayed").field("worlds", &self.worlds).field("verdict", &self.verdict).finish()
    }
}

impl<'m, P: Protocol> Simulator<'m, P> {
    /// Records the trace that starts from the start world [`Simulator::initial_worlds`] gave
    /// with `init_choices` and takes `steps` (action, choices) in order. With a start scenario,
    /// the trace begins at the initial world and the scenario's steps come first. The verdict
    /// is the first violation met: a handler's, or an `always` property false in a world.
    ///
    /// Steps that do not re-execute as given — an action not enabled in the world the earlier
    /// steps reach, or choices the handler does not ask for — end the trace there, with a
    /// [`ViolationKind::Nondeterminism`] verdict unless a violation came first: engines produce
    /// the steps from this simulator, so only a handler that is not a function of its state,
    /// event and choices makes them part.
    pub fn record(&self, init_choices: &[usize], steps: &[(Action, Vec<usize>)]) -> Trace {
        let prefix = self.start().map_or(&[][..], |start| &start.steps[..]);
        let scenario = self
            .model()
            .start_scenario()
            .map(|s| TraceScenario { name: s.name().to_string(), steps: prefix.len() });
        let steps: Vec<&(Action, Vec<usize>)> = prefix.iter().chain(steps).collect();
        let mut chooser = FixedChoices::new(init_choices);
        let (mut world, _, init_violation, _) = self.init_with(&mut chooser, true);
        let mut verdict = match chooser.finish() {
            Ok(()) => self.verdict_at(0, init_violation, &world),
            Err(problem) => Some(TraceVerdict::parted(0, &format!("init chose differently: {problem}"))),
        };
        let initial = TraceInitial {
            choices: init_choices.to_vec(),
            fingerprint: world.fingerprint().to_string(),
            states: Some(world.states().map(json_view).collect()),
        };
        // Steps after an init that parted from the search do not belong to this trace.
        let init_parted = verdict.as_ref().is_some_and(|v| v.kind == ViolationKind::Nondeterminism);
        let steps = if init_parted { &steps[..0] } else { &steps[..] };
        let mut trace_steps = Vec::with_capacity(steps.len());
        for (i, &(action, choices)) in steps.iter().enumerate() {
            let outcome = match self.step_again(&world, *action, choices, true) {
                Ok(outcome) => outcome,
                Err(problem) => {
                    verdict.get_or_insert(TraceVerdict::parted(i + 1, &problem));
                    break;
                }
            };
            let record = outcome.record.expect("recording was asked for");
            world = outcome.world;
            let node = record.event.node();
            if verdict.is_none() {
                verdict = self.verdict_at(i + 1, outcome.violation, &world);
            }
            trace_steps.push(TraceStep {
                step: i + 1,
                node,
                event: json_view(&record.event),
                choices: choices.clone(),
                sent: record
                    .sent
                    .iter()
                    .map(|(to, msg)| SentMessage { to: *to, msg: json_view(msg) })
                    .collect(),
                log: record.log,
                fingerprint: world.fingerprint().to_string(),
                state: world.nodes.get(node.index()).map(|slot| json_view(&slot.state)),
            });
        }
        Trace {
            format: TRACE_FORMAT.into(),
            version: TRACE_VERSION,
            system: None,
            engine: None,
            seed: None,
            scenario,
            initial,
            steps: trace_steps,
            verdict,
            liveness: None,
            lasso: None,
        }
    }

    /// Re-executes a step that an engine took from `world` as `action` with `choices`, recording
    /// its events and logs with `recording`. `Err` says why it does not re-execute — `action` is
    /// not enabled in `world`, or its handler asks for other choices — which only a handler that
    /// is not a function of its state, event and choices brings about.
    ///
    /// # Errors
    /// The reason, in the words of a [`TraceVerdict::parted`] verdict.
    pub fn step_again(
        &self,
        world: &World<P>,
        action: Action,
        choices: &[usize],
        recording: bool,
    ) -> Result<StepOutcome<P>, String> {
        if !self.is_enabled(world, action) {
            return Err(format!("{action:?} is not enabled in the world the steps before it reach"));
        }
        let mut chooser = FixedChoices::new(choices);
        let outcome = self.step(world, action, &mut chooser, recording);
        chooser.finish().map_err(|problem| format!("its handler chose differently: {problem}"))?;
        Ok(outcome)
    }

    /// The verdict at `step`: the step's own violation, else an invariant false in `world`.
    fn verdict_at(
        &self,
        step: usize,
        violation: Option<StepViolation>,
        world: &World<P>,
    ) -> Option<TraceVerdict> {
        violation.or_else(|| self.violated_invariant(world)).map(|v| TraceVerdict {
            property: v.property,
            kind: v.kind,
            step,
            message: v.message,
        })
    }

    /// The enabled action in `world` whose event a trace recorded as `recorded`, with that event.
    ///
    /// A recorded event is read back as the protocol's event type. One that does not read back
    /// (its message holds a map keyed by a compound value, which [`json_view`] writes as a list
    /// of pairs) is matched by its JSON against the events enabled here.
    pub(crate) fn recorded_action(
        &self,
        world: &World<P>,
        recorded: &Value,
    ) -> Result<(Action, EventOf<P>), String> {
        match serde_json::from_value::<EventOf<P>>(recorded.clone()) {
            Ok(event) => match self.find_action(world, &event) {
                Some(action) => Ok((action, event)),
                None => Err(format!("event {} is not enabled here", compact(recorded))),
            },
            Err(unread) => {
                let mut actions = Vec::new();
                self.actions(world, &mut actions);
                actions
                    .into_iter()
                    .map(|action| (action, self.event(world, action)))
                    .find(|(_, event)| json_view(event) == *recorded)
                    .ok_or_else(|| format!("the event does not fit this system: {unread}"))
            }
        }
    }

    /// Re-executes the first `steps` steps of `trace` (all of them if it has fewer) from its
    /// initial world: each recorded event found among those enabled where it ran, its handler
    /// given the recorded choices, every fingerprint checked. `visit` sees the initial world
    /// (step 0, no event) and the world after each step, with the step's event and violation.
    ///
    /// # Errors
    /// A [`ReplayError`] naming the first step that does not re-execute as recorded.
    pub(crate) fn reexecute(
        &self,
        trace: &Trace,
        steps: usize,
        mut visit: impl FnMut(usize, Option<EventOf<P>>, &World<P>, Option<StepViolation>),
    ) -> Result<(), ReplayError> {
        let fail = |step: usize, reason: String| ReplayError { step, reason };
        let mut chooser = FixedChoices::new(&trace.initial.choices);
        let (mut world, _, init_violation, _) = self.init_with(&mut chooser, false);
        chooser.finish().map_err(|r| fail(0, r))?;
        check_fingerprint(0, &trace.initial.fingerprint, world.fingerprint())?;
        visit(0, None, &world, init_violation);
        for (i, step) in trace.steps.iter().take(steps).enumerate() {
            let number = i + 1;
            if step.step != number {
                return Err(fail(number, format!("is numbered {} in the trace", step.step)));
            }
            let (action, event) = self.recorded_action(&world, &step.event).map_err(|r| fail(number, r))?;
            if event.node() != step.node {
                return Err(fail(
                    number,
                    format!("names {} as its node, but its event is {}'s", step.node, event.node()),
                ));
            }
            let mut chooser = FixedChoices::new(&step.choices);
            let outcome = self.step(&world, action, &mut chooser, false);
            chooser.finish().map_err(|r| fail(number, r))?;
            world = outcome.world;
            check_fingerprint(number, &step.fingerprint, world.fingerprint())?;
            visit(number, Some(event), &world, outcome.violation);
        }
        Ok(())
    }

    /// Re-executes `trace` and checks every fingerprint and the verdict.
    ///
    /// # Errors
    /// A [`ReplayError`] naming the first step that does not re-execute as recorded.
    pub fn replay(&self, trace: &Trace) -> Result<Replayed<P>, ReplayError> {
        let mut verdict = None;
        let mut worlds = Vec::with_capacity(trace.steps.len() + 1);
        self.reexecute(trace, trace.steps.len(), |number, _, world, violation| {
            if verdict.is_none() {
                verdict = self.verdict_at(number, violation, world);
            }
            worlds.push(world.clone());
        })?;
        // A liveness, divergence or nondeterminism verdict is a search's conclusion, not
        // something one path re-executes into: replay checks its path.
        let decidable = |v: &&TraceVerdict| {
            !matches!(
                v.kind,
                ViolationKind::Liveness | ViolationKind::Divergence | ViolationKind::Nondeterminism
            )
        };
        if let Some(expected) = trace.verdict.as_ref().filter(decidable) {
            let same =
                verdict.as_ref().is_some_and(|v| v.property == expected.property && v.step == expected.step);
            if !same {
                let got = match &verdict {
                    Some(v) => format!("{:?} violated at step {}", v.property, v.step),
                    None => "no violation".into(),
                };
                let reason = format!(
                    "the trace says {:?} is violated at step {}, the replay gives {got}",
                    expected.property, expected.step
                );
                return Err(ReplayError { step: trace.steps.len() + 1, reason });
            }
        }
        Ok(Replayed { worlds, verdict })
    }
}

fn check_fingerprint(step: usize, recorded: &str, actual: Fingerprint) -> Result<(), ReplayError> {
    let Some(expected) = Fingerprint::from_hex(recorded) else {
        return Err(ReplayError {
            step,
            reason: format!("fingerprint {recorded:?} is not 32 hexadecimal digits"),
        });
    };
    if expected != actual {
        return Err(ReplayError {
            step,
            reason: format!("fingerprint differs: the trace has {expected}, the replay reaches {actual}"),
        });
    }
    Ok(())
}

/// One-line JSON for messages.
pub(crate) fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}
