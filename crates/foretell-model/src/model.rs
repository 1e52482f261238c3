//! `Model`: a protocol placed in an environment — nodes, network, faults, driver, properties.
//!
//! The model is the whole input of every engine. It is plain data plus the protocol value and
//! the property predicates, built with a small builder and validated once by
//! [`crate::Simulator::new`], so engines can trust it.

use crate::message_numbers::MessageNumbers;
use crate::scenario::Resolved;
use crate::{
    DynMonitor, ErrorOrder, Monitor, NetworkKind, NodeId, PartialHash, Projection, Property, PropertyKind,
    Protocol, Scenario, Symmetry, Weights, World,
};
use std::fmt;
use std::sync::{Arc, OnceLock};

/// How many faults of one kind a run may inject.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Budget {
    /// None at all.
    #[default]
    Off,
    /// At most this many along any trace. The count used is part of the world.
    Limited(u32),
    /// Any number. The count is not tracked, so it does not split worlds.
    Unbounded,
}

impl Budget {
    /// A budget of `n` faults (`Off` for 0).
    pub fn at_most(n: u32) -> Self {
        if n == 0 {
            Budget::Off
        } else {
            Budget::Limited(n)
        }
    }

    /// Whether one more fault is allowed after `used`.
    pub fn allows(self, used: u32) -> bool {
        match self {
            Budget::Off => false,
            Budget::Limited(max) => used < max,
            Budget::Unbounded => true,
        }
    }

    /// Whether faults of this kind are counted in the world.
    pub fn counted(self) -> bool {
        matches!(self, Budget::Limited(_))
    }
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Budget::Off => write!(f, "0"),
            Budget::Limited(n) => write!(f, "{n}"),
            Budget::Unbounded => write!(f, "unbounded"),
        }
    }
}

/// The fault budget: node resets, message loss and duplication.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Node resets (crash and restart through [`Protocol::restart`]).
    pub resets: Budget,
    /// The nodes that may reset; `None` means every node.
    pub resettable: Option<Vec<NodeId>>,
    /// Message losses.
    pub drops: Budget,
    /// Message duplications.
    pub duplicates: Budget,
    /// Bidirectional socket errors on open connections (`FifoChannels` only): MaceMC's
    /// simulated TCP breaking a connection after any delivery.
    pub socket_errors: Budget,
}

impl Faults {
    /// No faults.
    pub fn none() -> Self {
        Faults::default()
    }

    /// Sets the reset budget.
    pub fn resets(mut self, budget: Budget) -> Self {
        self.resets = budget;
        self
    }

    /// Restricts resets to `nodes`.
    pub fn resettable(mut self, nodes: impl IntoIterator<Item = NodeId>) -> Self {
        self.resettable = Some(nodes.into_iter().collect());
        self
    }

    /// Sets the loss budget.
    pub fn drops(mut self, budget: Budget) -> Self {
        self.drops = budget;
        self
    }

    /// Sets the duplication budget.
    pub fn duplicates(mut self, budget: Budget) -> Self {
        self.duplicates = budget;
        self
    }

    /// Sets the socket-error budget.
    pub fn socket_errors(mut self, budget: Budget) -> Self {
        self.socket_errors = budget;
        self
    }

    pub(crate) fn may_reset(&self, node: NodeId) -> bool {
        self.resettable.as_ref().is_none_or(|nodes| nodes.contains(&node))
    }
}

/// The test driver: application inputs given to nodes (MaceMC's SimApplication).
#[derive(Clone, Debug)]
pub struct Driver<P: Protocol> {
    pub(crate) once: Vec<(NodeId, P::Input)>,
    /// Bit `i` is set when one-shot input `i` is a startup input ([`Driver::startup`]).
    pub(crate) startup: u64,
    pub(crate) spontaneous: Vec<(NodeId, P::Input)>,
}

impl<P: Protocol> Default for Driver<P> {
    fn default() -> Self {
        Driver { once: Vec::new(), startup: 0, spontaneous: Vec::new() }
    }
}

impl<P: Protocol> Driver<P> {
    /// A driver that gives no input.
    pub fn new() -> Self {
        Self::default()
    }

    /// A one-shot input: delivered exactly once, at whatever point the search chooses.
    pub fn input(mut self, node: NodeId, input: P::Input) -> Self {
        self.once.push((node, input));
        self
    }

    /// A startup input: what the application does when its node starts, like MaceMC's
    /// SimApplication calling `joinOverlay` after `maceInit`. It is a one-shot input that the
    /// driver gives again after every reset of its node. A node's startup inputs are given in
    /// the order they are listed, and a node is not reset before all of them have been given
    /// (MaceMC offers a reset only to a node that has run an application event).
    pub fn startup(mut self, node: NodeId, input: P::Input) -> Self {
        if self.once.len() < 64 {
            self.startup |= 1 << self.once.len();
        }
        self.once.push((node, input));
        self
    }

    /// A spontaneous input: offered in every world, any number of times (a handler that ignores
    /// it makes a self-loop). TLA+ actions without a triggering message become these.
    pub fn spontaneous(mut self, node: NodeId, input: P::Input) -> Self {
        self.spontaneous.push((node, input));
        self
    }

    /// The one-shot inputs, in order.
    pub fn one_shot_inputs(&self) -> &[(NodeId, P::Input)] {
        &self.once
    }

    /// Whether one-shot input `index` is a startup input.
    pub fn is_startup(&self, index: usize) -> bool {
        index < 64 && self.startup & (1 << index) != 0
    }

    /// The one-shot inputs of `node`, as a mask of their indices.
    pub(crate) fn inputs_of(&self, node: NodeId) -> u64 {
        self.once.iter().enumerate().filter(|(_, (n, _))| *n == node).fold(0, |mask, (i, _)| mask | 1 << i)
    }

    /// The startup inputs of `node`, as a mask over the one-shot inputs.
    pub(crate) fn startup_of(&self, node: NodeId) -> u64 {
        if self.startup == 0 {
            return 0;
        }
        let of_node = self.once.iter().enumerate().filter(|(i, (n, _))| *n == node && self.is_startup(*i));
        of_node.fold(0, |mask, (i, _)| mask | 1 << i)
    }

    /// Whether one-shot input `index` may be given when the inputs in `pending` have not been:
    /// a startup input waits for the earlier startup inputs of its node.
    pub(crate) fn may_give(&self, index: usize, pending: u64) -> bool {
        if !self.is_startup(index) {
            return true;
        }
        let earlier = self.startup_of(self.once[index].0) & ((1 << index) - 1);
        pending & earlier == 0
    }

    /// The spontaneous inputs, in order.
    pub fn spontaneous_inputs(&self) -> &[(NodeId, P::Input)] {
        &self.spontaneous
    }
}

/// A protocol in its environment: what every engine checks.
///
/// # Examples
/// ```
/// # use foretell_model::*;
/// # struct Counter;
/// # impl Protocol for Counter {
/// #     type State = u8; type Msg = (); type Timer = (); type Input = ();
/// #     fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> u8 { 0 }
/// #     fn on_message(&self, _: NodeId, _: &mut u8, _: NodeId, _: &(), _: &mut Out<'_, Self>) {}
/// #     fn on_input(&self, _: NodeId, s: &mut u8, _: &(), _: &mut Out<'_, Self>) { *s = s.saturating_add(1).min(3) }
/// # }
/// let model = Model::new(Counter)
///     .nodes(2)
///     .driver(Driver::new().spontaneous(NodeId(0), ()))
///     .always("small", |w: &World<Counter>| w.states().all(|s| *s <= 3));
/// assert_eq!(model.node_count(), 2);
/// ```
pub struct Model<P: Protocol> {
    protocol: P,
    nodes: usize,
    network: NetworkKind,
    error_order: ErrorOrder,
    faults: Faults,
    driver: Driver<P>,
    properties: Vec<Property<P>>,
    symmetry: Option<Symmetry<P>>,
    queue_capacity: Option<usize>,
    weights: Weights,
    start: Option<Scenario<P>>,
    monitors: Vec<DynMonitor<P>>,
    partial_hash: PartialHash<P>,
    projections: Vec<(String, Projection<P>)>,
    /// The start scenario run against the model, once, by the first simulator.
    resolved: OnceLock<Result<Resolved<P>, String>>,
    /// The numbers of the messages sent so far, for a grow-only network's index of them.
    message_numbers: MessageNumbers,
}

impl<P: Protocol> Model<P> {
    /// A model of one node of `protocol` on an unordered network, with no faults, no inputs and
    /// no properties.
    pub fn new(protocol: P) -> Self {
        Model {
            protocol,
            nodes: 1,
            network: NetworkKind::Unordered,
            error_order: ErrorOrder::Independent,
            faults: Faults::none(),
            driver: Driver::new(),
            properties: Vec::new(),
            symmetry: None,
            queue_capacity: None,
            weights: Weights::default(),
            start: None,
            monitors: Vec::new(),
            partial_hash: PartialHash::Default,
            projections: Vec::new(),
            resolved: OnceLock::new(),
            message_numbers: MessageNumbers::default(),
        }
    }

    /// Sets the node count.
    pub fn nodes(mut self, count: usize) -> Self {
        self.nodes = count;
        self
    }

    /// Sets the network kind.
    pub fn network(mut self, kind: NetworkKind) -> Self {
        self.network = kind;
        self
    }

    /// Sets how a broken connection's transport error is ordered with the messages its two
    /// nodes send each other afterwards (`FifoChannels`; default [`ErrorOrder::Independent`]).
    pub fn error_order(mut self, order: ErrorOrder) -> Self {
        self.error_order = order;
        self
    }

    /// Bounds every FIFO queue (a channel, or an inbox) to `messages`: a send that finds its
    /// queue full fails, as MaceMC's simulated TCP refused a send beyond `queue_size`. See
    /// [`crate::Out::try_send`].
    pub fn queue_capacity(mut self, messages: usize) -> Self {
        self.queue_capacity = Some(messages);
        self
    }

    /// The bound on FIFO queues, if any.
    pub fn queue_capacity_limit(&self) -> Option<usize> {
        self.queue_capacity
    }

    /// Sets the model's walk weights: how likely random walks are to pick each kind of event
    /// (default [`Weights::BIASED`]); a run may override them.
    pub fn weights(mut self, weights: Weights) -> Self {
        self.weights = weights;
        self
    }

    /// The model's walk weights.
    pub fn walk_weights(&self) -> Weights {
        self.weights
    }

    /// Makes every engine start from the world `scenario` reaches instead of the initial world.
    /// Traces still begin at the initial world, with the scenario's steps first.
    pub fn start_from(mut self, scenario: Scenario<P>) -> Self {
        self.start = Some(scenario);
        self.resolved = OnceLock::new();
        self
    }

    /// The start scenario, if any.
    pub fn start_scenario(&self) -> Option<&Scenario<P>> {
        self.start.as_ref()
    }

    /// The start scenario resolved by `sim` (once per model).
    pub(crate) fn resolved_start(
        &self,
        sim: &crate::Simulator<'_, P>,
    ) -> Option<Result<&Resolved<P>, String>> {
        let scenario = self.start.as_ref()?;
        Some(self.resolved.get_or_init(|| scenario.resolve(sim)).as_ref().map_err(String::clone))
    }

    /// Sets the fault budget.
    pub fn faults(mut self, faults: Faults) -> Self {
        self.faults = faults;
        self
    }

    /// Sets the driver.
    pub fn driver(mut self, driver: Driver<P>) -> Self {
        if let Some(symmetry) = &mut self.symmetry {
            symmetry.bind(&driver);
        }
        self.driver = driver;
        self
    }

    /// Declares a symmetry: engines then identify worlds that differ only by a renaming of the
    /// interchangeable nodes, through [`Symmetry::canonical_fingerprint`].
    pub fn symmetry(mut self, mut symmetry: Symmetry<P>) -> Self {
        symmetry.bind(&self.driver);
        self.symmetry = Some(symmetry);
        self
    }

    /// Adds a safety invariant: `predicate` must hold in every reachable world.
    pub fn always(
        self,
        name: impl Into<String>,
        predicate: impl Fn(&World<P>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.property(PropertyKind::Always, name, predicate)
    }

    /// Adds a reachability goal: some reachable world should satisfy `predicate` (reported as
    /// covered or not covered).
    pub fn sometimes(
        self,
        name: impl Into<String>,
        predicate: impl Fn(&World<P>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.property(PropertyKind::Sometimes, name, predicate)
    }

    /// Adds a liveness property: `predicate` should eventually hold (a world where it holds is
    /// *live*). Checked by the liveness engines.
    pub fn eventually(
        self,
        name: impl Into<String>,
        predicate: impl Fn(&World<P>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.property(PropertyKind::Eventually, name, predicate)
    }

    /// Adds a specification monitor (P#'s liveness monitors): the lasso engines report
    /// executions that stay hot forever.
    pub fn monitor(mut self, monitor: impl Monitor<P>) -> Self {
        self.monitors.push(DynMonitor::new(monitor));
        self
    }

    /// Sets how lasso detection hashes worlds (default: [`PartialHash::Default`]).
    pub fn partial_hash(mut self, hash: PartialHash<P>) -> Self {
        self.partial_hash = hash;
        self
    }

    /// Declares a node-local projection of the `always` property `property`, with which local
    /// model checking builds only the system states that could violate it (LMC-OPT).
    pub fn projection(mut self, property: &str, projection: Projection<P>) -> Self {
        self.projections.push((property.to_string(), projection));
        self
    }

    /// The declared projections, by property name.
    pub fn projections(&self) -> &[(String, Projection<P>)] {
        &self.projections
    }

    /// The declared monitors (without the `eventually` properties).
    pub fn monitors(&self) -> &[DynMonitor<P>] {
        &self.monitors
    }

    /// How lasso detection hashes worlds.
    pub fn lasso_hash(&self) -> &PartialHash<P> {
        &self.partial_hash
    }

    fn property(
        mut self,
        kind: PropertyKind,
        name: impl Into<String>,
        predicate: impl Fn(&World<P>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.properties.push(Property { name: name.into(), kind, predicate: Arc::new(predicate) });
        self
    }

    /// The protocol.
    pub fn protocol(&self) -> &P {
        &self.protocol
    }

    /// The node count.
    pub fn node_count(&self) -> usize {
        self.nodes
    }

    /// The network kind.
    pub fn network_kind(&self) -> NetworkKind {
        self.network
    }

    /// The numbers of the messages sent, where the network keeps an index of them: for a
    /// grow-only network only ([`crate::message_numbers`]).
    pub(crate) fn message_numbers(&self) -> Option<&MessageNumbers> {
        (self.network == NetworkKind::GrowOnly).then_some(&self.message_numbers)
    }

    /// How transport errors are ordered with later messages (see [`Model::error_order`]).
    pub fn transport_error_order(&self) -> ErrorOrder {
        self.error_order
    }

    /// The fault budget.
    pub fn fault_budget(&self) -> &Faults {
        &self.faults
    }

    /// The driver.
    pub fn input_driver(&self) -> &Driver<P> {
        &self.driver
    }

    /// The properties, in declaration order.
    pub fn properties(&self) -> &[Property<P>] {
        &self.properties
    }

    /// The declared symmetry, if any.
    pub fn symmetry_ref(&self) -> Option<&Symmetry<P>> {
        self.symmetry.as_ref()
    }

    /// Checks that the model makes sense; engines call this through [`crate::Simulator::new`].
    ///
    /// # Errors
    /// A [`ModelError`] naming the first problem found.
    pub fn validate(&self) -> Result<(), ModelError> {
        if self.nodes == 0 {
            return Err(ModelError::NoNodes);
        }
        let inputs = self.driver.once.iter().chain(&self.driver.spontaneous);
        if let Some((node, _)) = inputs.into_iter().find(|(n, _)| n.index() >= self.nodes) {
            return Err(ModelError::UnknownNode { node: *node, nodes: self.nodes });
        }
        if let Some(node) = self.faults.resettable.iter().flatten().find(|n| n.index() >= self.nodes) {
            return Err(ModelError::UnknownNode { node: *node, nodes: self.nodes });
        }
        if self.driver.once.len() > 64 {
            return Err(ModelError::TooManyInputs(self.driver.once.len()));
        }
        let lossy = self.faults.drops != Budget::Off || self.faults.duplicates != Budget::Off;
        if lossy && !self.network.consumes() {
            return Err(ModelError::FaultsOnGrowOnly);
        }
        if self.queue_capacity.is_some()
            && !matches!(self.network, NetworkKind::FifoChannels | NetworkKind::FifoInbox)
        {
            return Err(ModelError::CapacityWithoutQueues);
        }
        if self.queue_capacity == Some(0) {
            return Err(ModelError::ZeroCapacity);
        }
        if self.faults.socket_errors != Budget::Off && self.network != NetworkKind::FifoChannels {
            return Err(ModelError::SocketErrorsWithoutConnections);
        }
        for (i, p) in self.properties.iter().enumerate() {
            if self.properties[..i].iter().any(|q| q.name == p.name) {
                return Err(ModelError::DuplicateProperty(p.name.clone()));
            }
        }
        if let Some(symmetry) = &self.symmetry {
            symmetry.check(self)?;
        }
        Ok(())
    }
}

/// Why a model cannot be checked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The model has no nodes.
    #[error("the model has no nodes")]
    NoNodes,
    /// An input or a resettable node names a node the model does not have.
    #[error("node {node} does not exist (the model has {nodes} nodes)")]
    UnknownNode {
        /// The missing node.
        node: NodeId,
        /// The node count.
        nodes: usize,
    },
    /// More one-shot inputs than the world's pending-input set holds.
    #[error("{0} one-shot inputs: at most 64 are supported")]
    TooManyInputs(usize),
    /// Loss or duplication on a grow-only network, where neither means anything.
    #[error("message loss and duplication do not apply to a grow-only network")]
    FaultsOnGrowOnly,
    /// The start scenario cannot be run.
    #[error("{0}")]
    Scenario(String),
    /// A queue capacity on a network without queues.
    #[error("a queue capacity applies to the fifo-channels and fifo-inbox networks only")]
    CapacityWithoutQueues,
    /// A queue capacity of zero, which would refuse every send.
    #[error("a queue capacity must be at least 1")]
    ZeroCapacity,
    /// Socket errors on a network without connections.
    #[error("socket errors apply to a fifo-channels network only")]
    SocketErrorsWithoutConnections,
    /// An engine cannot check this model.
    #[error("the {engine} engine cannot check this model: {reason}")]
    EngineUnsupported {
        /// The engine.
        engine: &'static str,
        /// Why.
        reason: String,
    },
    /// The search's options cannot be carried out, for the reason given.
    #[error("{0}")]
    BadOptions(String),
    /// Two properties share a name.
    #[error("two properties are named {0:?}")]
    DuplicateProperty(String),
    /// A symmetry lists a node twice.
    #[error("the symmetry lists node {0} twice")]
    DuplicateSymmetricNode(NodeId),
    /// A symmetry is not a symmetry of the model's environment.
    #[error("the symmetry does not hold: {0}")]
    NotSymmetric(String),
}
