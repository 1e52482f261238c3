//! Test support for the P# benchmarks: drive a model along a scripted execution — each step the
//! first enabled event a predicate accepts, with given choice values — while tracking what lasso
//! detection tracks (the monitors' states and temperatures, the partial hash, the enabled and
//! scheduled nodes), so that a test can show a benchmark's livelock cycle step by step; run
//! random executions with the same tracking ([`Rng`], [`Script::random_steps`]); and explore
//! every pair of a world and the monitors' states ([`monitored_space`]).

use foretell_model::{
    Action, ChoiceOdometer, Chooser, Event, EventOf, FixedChoices, Model, MonitorState, NodeId, Observation,
    Protocol, Simulator, StepRecord, Temperature, World,
};
use std::collections::{BTreeSet, HashSet};

/// A model driven step by step.
pub struct Script<'m, P: Protocol> {
    model: &'m Model<P>,
    simulator: Simulator<'m, P>,
    initial: World<P>,
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
        let initial = first.expect("an initial world");
        let monitors = model.monitors().iter().map(|m| m.init(&initial)).collect();
        let world = initial.clone();
        Script {
            model,
            simulator,
            initial,
            world,
            monitors,
            scheduled: BTreeSet::new(),
            enabled: BTreeSet::new(),
        }
    }

    /// Starts over at the initial world, with the monitors' initial states and no mark.
    pub fn reset(&mut self) -> &mut Self {
        self.world = self.initial.clone();
        self.monitors = self.model.monitors().iter().map(|m| m.init(&self.world)).collect();
        self.mark()
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
        let action = actions
            .iter()
            .copied()
            .find(|a| pick(&self.simulator.event(&self.world, *a)))
            .unwrap_or_else(|| panic!("no enabled event matches; enabled: {:#?}", self.events()));
        let mut chooser = FixedChoices::new(choices);
        self.advance(&actions, action, &mut chooser);
        chooser.finish().expect("the handler asked exactly the given choices");
        self
    }

    /// Runs the first enabled event that `pick` accepts; its handler makes no choices.
    pub fn step(&mut self, pick: impl Fn(&EventOf<P>) -> bool) -> &mut Self {
        self.step_with(&[], pick)
    }

    /// Runs the first enabled event that `pick` accepts, giving its handler `choices`, and
    /// asserts that the monitors are hot after it.
    pub fn step_hot(&mut self, choices: &[usize], pick: impl Fn(&EventOf<P>) -> bool) -> &mut Self {
        self.step_with(choices, pick);
        assert_eq!(self.temperature(), Temperature::Hot);
        self
    }

    /// Runs one enabled event picked uniformly by `rng`, which also answers its handler's
    /// choices; returns what the step did, or `None` when no event is enabled.
    ///
    /// # Panics
    /// If the step violates a property or leaves a world that breaks an invariant.
    pub fn random_step(&mut self, rng: &mut Rng) -> Option<StepRecord<P>> {
        let actions = self.actions();
        if actions.is_empty() {
            return None;
        }
        let action = actions[rng.below(actions.len())];
        let record = self.advance(&actions, action, rng);
        if let Some(violation) = self.simulator.violated_invariant(&self.world) {
            panic!("the step after {:?} broke an invariant: {violation:?}", record.event);
        }
        Some(record)
    }

    /// Runs up to `steps` random steps ([`Script::random_step`]); returns whether it stopped
    /// early because no event was enabled.
    pub fn random_steps(&mut self, rng: &mut Rng, steps: usize) -> bool {
        (0..steps).any(|_| self.random_step(rng).is_none())
    }

    /// Runs `action`, one of the enabled `actions`, asking `chooser` for its handler's choices,
    /// and moves the monitors, the enabled and the scheduled nodes along.
    fn advance(&mut self, actions: &[Action], action: Action, chooser: &mut dyn Chooser) -> StepRecord<P> {
        for action in actions {
            if !action.is_fault() {
                self.enabled.insert(self.simulator.event(&self.world, *action).node().0);
            }
        }
        let outcome = self.simulator.observed_step(&self.world, action, chooser);
        assert!(outcome.violation.is_none(), "the step violated {:?}", outcome.violation);
        let record = outcome.record.expect("an observed step records its event");
        observe(self.model, &mut self.monitors, &self.world, &record, &outcome.world);
        self.scheduled.insert(record.event.node().0);
        self.world = outcome.world;
        record
    }

    /// The hottest temperature among the monitors.
    pub fn temperature(&self) -> Temperature {
        hottest(self.model, &self.monitors)
    }

    /// The state of the `monitor`-th declared monitor, in its `Debug` form.
    pub fn describe(&self, monitor: usize) -> String {
        self.model.monitors()[monitor].describe(&self.monitors[monitor])
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

    /// Runs `segment` from a new mark and asserts that it closes a fair cycle: the default
    /// partial hash and the exact world are those it started from, and every node enabled
    /// along it was scheduled in it.
    pub fn assert_fair_cycle(&mut self, segment: impl FnOnce(&mut Self)) -> &mut Self {
        let (hash, world) = (self.partial_hash(), self.world.fingerprint());
        self.mark();
        segment(self);
        assert!(self.partial_hash() == hash, "the partial hash repeats");
        assert_eq!(self.world.fingerprint(), world, "the exact world repeats");
        assert!(self.fair(), "enabled {:?}, scheduled {:?}", self.enabled, self.scheduled);
        self
    }
}

/// The delivery of the head of `node`'s inbox.
pub fn deliver<M, T, I>(node: NodeId) -> impl Fn(&Event<M, T, I>) -> bool {
    move |event| matches!(event, Event::Deliver { to, .. } if *to == node)
}

/// The delivery of the head of `to`'s inbox, which `from` sent.
pub fn deliver_from<M, T, I>(from: NodeId, to: NodeId) -> impl Fn(&Event<M, T, I>) -> bool {
    move |event| matches!(event, Event::Deliver { from: f, to: t, .. } if (*f, *t) == (from, to))
}

/// A timer of `node` fires.
pub fn timer<M, T, I>(node: NodeId) -> impl Fn(&Event<M, T, I>) -> bool {
    move |event| matches!(event, Event::Timer { node: n, .. } if *n == node)
}

/// A seeded xorshift generator: the random executions' scheduler and the answer to every
/// choice their handlers make.
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`, which must not be 0.
    pub fn new(seed: u64) -> Self {
        assert_ne!(seed, 0, "xorshift stays at 0");
        Rng(seed)
    }

    /// A value in `0..n`; `n` is at least 1.
    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

impl Chooser for Rng {
    fn choose(&mut self, n: usize) -> usize {
        self.below(n)
    }
}

/// The hottest temperature among `model`'s monitors in `states`.
pub fn hottest<P: Protocol>(model: &Model<P>, states: &[MonitorState]) -> Temperature {
    let monitors = model.monitors().iter().zip(states);
    monitors.map(|(m, s)| m.temperature(s)).max().unwrap_or(Temperature::Neutral)
}

/// Moves `model`'s monitors in `states` along the step from `before` that `record` recorded
/// and that led to `after`.
fn observe<P: Protocol>(
    model: &Model<P>,
    states: &mut [MonitorState],
    before: &World<P>,
    record: &StepRecord<P>,
    after: &World<P>,
) {
    let observation = Observation { before, event: &record.event, sent: &record.sent, after };
    for (monitor, state) in model.monitors().iter().zip(states) {
        monitor.observe(state, &observation);
    }
}

/// A world with the monitors' states an execution reached it in.
pub type Monitored<P> = (World<P>, Vec<MonitorState>);

/// Every pair of a world and the monitors' states that some execution of `model` reaches,
/// from every initial world and with every choice of every handler: how many pairs there are,
/// and the terminal ones (no enabled event). Violations do not stop the search.
pub fn monitored_space<P: Protocol>(model: &Model<P>) -> (usize, Vec<Monitored<P>>) {
    let simulator = Simulator::new(model).expect("a valid model");
    let mut stack: Vec<Monitored<P>> = Vec::new();
    simulator.initial_worlds(|_, world, _| {
        let monitors = model.monitors().iter().map(|m| m.init(&world)).collect();
        stack.push((world, monitors));
    });
    let (mut seen, mut terminal, mut actions) = (HashSet::new(), Vec::new(), Vec::new());
    while let Some((world, monitors)) = stack.pop() {
        if !seen.insert((world.fingerprint(), monitors.clone())) {
            continue;
        }
        simulator.actions(&world, &mut actions);
        for action in &actions {
            let mut odometer = ChoiceOdometer::new();
            loop {
                let outcome = simulator.observed_step(&world, *action, &mut odometer);
                let record = outcome.record.expect("an observed step records its event");
                let mut next = monitors.clone();
                observe(model, &mut next, &world, &record, &outcome.world);
                stack.push((outcome.world, next));
                if !odometer.advance() {
                    break;
                }
            }
        }
        if actions.is_empty() {
            terminal.push((world, monitors));
        }
    }
    (seen.len(), terminal)
}
