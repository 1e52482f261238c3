//! Scenarios: named starting worlds, each described by the events that lead to it from the
//! initial world.
//!
//! MaceMC's prefix-based search (NSDI'07, section 4.3) and CrystalBall's consequence prediction
//! from a live state (NSDI'09, section 3) both start a search somewhere other than the initial
//! world. A [`Scenario`] names such a world by the short list of events that reaches it (or by
//! the first steps of a saved trace). [`crate::Model::start_from`] makes it the model's start:
//! every engine then explores from the scenario's world, depths count from it, and the traces
//! engines write still begin at the initial world with the scenario's steps first, so they
//! replay under the ordinary simulator.

use crate::simulator::{EventOf, FixedChoices};
use crate::trace::compact;
use crate::{json_view, Action, Protocol, Simulator, Trace, World};
use std::fmt;

/// A named starting world: events applied in order from the initial world.
pub struct Scenario<P: Protocol> {
    name: String,
    init_choices: Vec<usize>,
    steps: Vec<(EventOf<P>, Vec<usize>)>,
}

impl<P: Protocol> Clone for Scenario<P> {
    fn clone(&self) -> Self {
        Scenario {
            name: self.name.clone(),
            init_choices: self.init_choices.clone(),
            steps: self.steps.clone(),
        }
    }
}

impl<P: Protocol> fmt::Debug for Scenario<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scenario").field("name", &self.name).field("steps", &self.steps.len()).finish()
    }
}

impl<P: Protocol> Scenario<P> {
    /// An empty scenario (the initial world itself), to which steps are added with
    /// [`Scenario::then`].
    pub fn new(name: impl Into<String>) -> Self {
        Scenario { name: name.into(), init_choices: Vec::new(), steps: Vec::new() }
    }

    /// The first `steps` steps of `trace` (all of them if it has fewer), named `name`: re-executed
    /// by `sim` from the trace's initial world, each recorded event found among those enabled
    /// where it ran, as [`Simulator::replay`] finds it (so an event whose JSON does not read back
    /// as the protocol's type still counts).
    ///
    /// # Errors
    /// A message naming the first step that does not fit the protocol, is not enabled, whose
    /// handler asks for other choices, or that reaches another world than the trace recorded
    /// (a prefix taken from another variant of the system where the two behave differently).
    pub fn from_trace(
        sim: &Simulator<'_, P>,
        name: impl Into<String>,
        trace: &Trace,
        steps: usize,
    ) -> Result<Self, String> {
        let mut scenario = Scenario::new(name);
        scenario.init_choices.clone_from(&trace.initial.choices);
        let mut events = Vec::new();
        sim.reexecute(trace, steps, |_, event, _, _| events.extend(event)).map_err(|e| e.to_string())?;
        let choices = trace.steps.iter().map(|step| step.choices.clone());
        scenario.steps = events.into_iter().zip(choices).collect();
        Ok(scenario)
    }

    /// Adds a step: `event`, with a handler that makes no choices.
    pub fn then(self, event: EventOf<P>) -> Self {
        self.then_choosing(event, Vec::new())
    }

    /// Adds a step: `event`, with the handler's `choose` calls answered by `choices`.
    pub fn then_choosing(mut self, event: EventOf<P>, choices: Vec<usize>) -> Self {
        self.steps.push((event, choices));
        self
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The events, in order, with their choice values.
    pub fn steps(&self) -> &[(EventOf<P>, Vec<usize>)] {
        &self.steps
    }

    /// The choice values of the `init` handlers.
    pub fn init_choices(&self) -> &[usize] {
        &self.init_choices
    }
}

/// A scenario run against a model: the steps as actions, and the world they reach.
pub(crate) struct Resolved<P: Protocol> {
    pub(crate) init_choices: Vec<usize>,
    pub(crate) steps: Vec<(Action, Vec<usize>)>,
    pub(crate) world: World<P>,
}

impl<P: Protocol> Scenario<P> {
    /// Runs the scenario from the initial world.
    ///
    /// # Errors
    /// A message naming the first step that is not enabled, whose choices do not fit, or that
    /// violates a property (a scenario is a path through correct behaviour).
    pub(crate) fn resolve(&self, sim: &Simulator<'_, P>) -> Result<Resolved<P>, String> {
        let fail = |step: usize, reason: String| format!("scenario {:?}, step {step}: {reason}", self.name);
        let mut chooser = FixedChoices::new(&self.init_choices);
        let (mut world, _, violation, _) = sim.init_with(&mut chooser, false);
        chooser.finish().map_err(|r| fail(0, r))?;
        if let Some(v) = violation.or_else(|| sim.violated_invariant(&world)) {
            return Err(fail(0, format!("the initial world violates {:?}", v.property)));
        }
        let mut steps = Vec::with_capacity(self.steps.len());
        for (i, (event, choices)) in self.steps.iter().enumerate() {
            let number = i + 1;
            let action = sim.find_action(&world, event).ok_or_else(|| {
                let event = compact(&json_view(event));
                fail(number, format!("event {event} is not enabled"))
            })?;
            let mut chooser = FixedChoices::new(choices);
            let outcome = sim.step(&world, action, &mut chooser, false);
            chooser.finish().map_err(|r| fail(number, r))?;
            if let Some(v) = outcome.violation.or_else(|| sim.violated_invariant(&outcome.world)) {
                return Err(fail(number, format!("violates {:?}", v.property)));
            }
            world = outcome.world;
            steps.push((action, choices.clone()));
        }
        Ok(Resolved { init_choices: self.init_choices.clone(), steps, world })
    }
}
