//! Test support for the P# benchmarks: drive a model along a scripted execution — each step the
//! first enabled event a predicate accepts, with given choice values — while tracking what lasso
//! detection tracks (the monitors' states and temperatures, the partial hash, the enabled and
//! scheduled nodes), so that a test can show a benchmark's livelock cycle step by step.

use foretell_model::{
    Action, EventOf, FixedChoices, Model, MonitorState, Observation, Protocol, Simulator, Temperature, World,
};
use std::collections::BTreeSet;

/// A model driven step by step.
pub struct Script<'m, P: Protocol> {
    model: &'m Model<P>,
    simulator: Simulator<'m, P>,
    /// The current world.
    pub world: World<P>,
    /// Every declared monitor's state, in declaration order.
    pub monitors: Vec<MonitorState>,
    /// The nodes scheduled since the last [`Script::mark`].
    pub scheduled: BTreeSet<u32>,
    /// The nodes enabled in some world since the last [`Script::mark`].
    pub enabled: BTreeSet<u32>,
}

impl<'m, P: Protocol> Script<'m, P> {
    /// Starts at the model's (first) initial world.
    pub fn new(model: &'m Model<P>) -> Self {
        let simulator = Simulator::new(model).expect("a valid model");
        let mut first = None;
        simulator.initial_worlds(|_, world, violation| {
            assert!(violation.is_none(), "initialization failed: {violation:?}");
            first.get_or_insert(world);
        });
        let world = first.expect("an initial world");
        let monitors = model.monitors().iter().map(|m| m.init(&world)).collect();
        Script { model, simulator, world, monitors, scheduled: BTreeSet::new(), enabled: BTreeSet::new() }
    }

    /// The enabled events, in the simulator's order.
    pub fn events(&self) -> Vec<EventOf<P>> {
        self.actions().into_iter().map(|a| self.simulator.event(&self.world, a)).collect()
    }

    fn actions(&self) -> Vec<Action> {
        let mut actions = Vec::new();
        self.simulator.actions(&self.world, &mut actions);
        actions
    }

    /// Runs the first enabled event that `pick` accepts, giving its handler `choices`.
    ///
    /// # Panics
    /// If no enabled event is accepted, the handler asks other choices, or the step violates
    /// a property.
    pub fn step_with(&mut self, choices: &[usize], pick: impl Fn(&EventOf<P>) -> bool) -> &mut Self {
        let actions = self.actions();
        for action in &actions {
            if !action.is_fault() {
                self.enabled.insert(self.simulator.event(&self.world, *action).node().0);
            }
        }
        let action = actions
            .into_iter()
            .find(|a| pick(&self.simulator.event(&self.world, *a)))
            .unwrap_or_else(|| panic!("no enabled event matches; enabled: {:#?}", self.events()));
        let mut chooser = FixedChoices::new(choices);
        let outcome = self.simulator.observed_step(&self.world, action, &mut chooser);
        chooser.finish().expect("the handler asked exactly the given choices");
        assert!(outcome.violation.is_none(), "the step violated {:?}", outcome.violation);
        let record = outcome.record.expect("an observed step records its event");
        let observation = Observation {
            before: &self.world,
            event: &record.event,
            sent: &record.sent,
            after: &outcome.world,
        };
        for (monitor, state) in self.model.monitors().iter().zip(&mut self.monitors) {
            monitor.observe(state, &observation);
        }
        self.scheduled.insert(record.event.node().0);
        self.world = outcome.world;
        self
    }

    /// Runs the first enabled event that `pick` accepts; its handler makes no choices.
    pub fn step(&mut self, pick: impl Fn(&EventOf<P>) -> bool) -> &mut Self {
        self.step_with(&[], pick)
    }

    /// The hottest temperature among the monitors.
    pub fn temperature(&self) -> Temperature {
        let monitors = self.model.monitors().iter().zip(&self.monitors);
        monitors.map(|(m, s)| m.temperature(s)).max().unwrap_or(Temperature::Neutral)
    }

    /// The default partial hash of the current world with the monitors' states, as lasso
    /// detection computes it.
    pub fn partial_hash(&self) -> (u64, Vec<MonitorState>) {
        (self.model.lasso_hash().of(self.model.protocol(), &self.world), self.monitors.clone())
    }

    /// Starts a new segment: forgets the scheduled and enabled nodes.
    pub fn mark(&mut self) -> &mut Self {
        self.scheduled.clear();
        self.enabled.clear();
        self
    }

    /// Whether every node enabled since the last mark was also scheduled (the segment is fair).
    pub fn fair(&self) -> bool {
        self.enabled.is_subset(&self.scheduled)
    }
}
