//! Specification monitors: P#'s liveness monitors (FMCAD'17 "Lasso Detection using Partial-State
//! Caching", section II: a program state is *hot* when a monitor is in a hot state; a liveness
//! violation is a fair lasso whose cycle is hot).
//!
//! A monitor is a small state machine that watches every step — the event, the messages its
//! handler sent, and the worlds before and after — and says whether the execution owes
//! progress ([`Temperature::Hot`]), has made it ([`Temperature::Cold`]) or neither
//! ([`Temperature::Neutral`], P#'s unannotated "warm" states). Its state is part of the
//! checked state: lasso engines pair it with the world and include it in every fingerprint.
//!
//! An `eventually` property is the simplest monitor: hot in every world where its predicate
//! does not hold ([`DynMonitor::eventually`]).

use crate::{EventOf, NodeId, Property, PropertyKind, Protocol, World};
use serde::{de::DeserializeOwned, Serialize};
use std::fmt::{self, Debug};
use std::sync::Arc;

/// Whether an execution owes progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Temperature {
    /// Progress was made; nothing is owed.
    Cold,
    /// Neither hot nor cold (P#'s unannotated states).
    Neutral,
    /// Progress is owed: an execution that stays hot forever violates liveness.
    Hot,
}

/// One step as a monitor observes it.
pub struct Observation<'a, P: Protocol> {
    /// The world before the step.
    pub before: &'a World<P>,
    /// The event the step executed.
    pub event: &'a EventOf<P>,
    /// The messages the event's handler sent, with their destinations.
    pub sent: &'a [(NodeId, P::Msg)],
    /// The world after the step.
    pub after: &'a World<P>,
}

/// A specification monitor of protocol `P`.
pub trait Monitor<P: Protocol>: Send + Sync + 'static {
    /// The monitor's state: its P# state and any data it keeps. It is encoded canonically, so
    /// use ordered collections.
    type State: Clone + Debug + Serialize + DeserializeOwned + Send + Sync + 'static;

    /// The monitor's name, for reports.
    fn name(&self) -> &str;

    /// The monitor's state in the first world of an execution.
    fn init(&self, world: &World<P>) -> Self::State;

    /// Updates the state after a step.
    fn observe(&self, state: &mut Self::State, step: &Observation<'_, P>);

    /// The state's temperature.
    fn temperature(&self, state: &Self::State) -> Temperature;
}

/// A monitor's state, type-erased to its canonical encoding: cheap to clone, compare and hash.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct MonitorState(Arc<[u8]>);

impl MonitorState {
    fn encode<T: Serialize>(value: &T) -> Self {
        let bytes = postcard::to_stdvec(value).expect("canonical encoding of a monitor state cannot fail");
        MonitorState(bytes.into())
    }

    fn decode<T: DeserializeOwned>(&self) -> T {
        postcard::from_bytes(&self.0).expect("a monitor state decodes from its own encoding")
    }

    /// The canonical encoding.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// The object-safe face of a [`Monitor`], over encoded states.
trait ErasedMonitor<P: Protocol>: Send + Sync {
    fn name(&self) -> &str;
    fn init(&self, world: &World<P>) -> MonitorState;
    fn observe(&self, state: &mut MonitorState, step: &Observation<'_, P>);
    fn temperature(&self, state: &MonitorState) -> Temperature;
    fn describe(&self, state: &MonitorState) -> String;
}

struct Erased<M>(M);

impl<P: Protocol, M: Monitor<P>> ErasedMonitor<P> for Erased<M> {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn init(&self, world: &World<P>) -> MonitorState {
        MonitorState::encode(&self.0.init(world))
    }

    fn observe(&self, state: &mut MonitorState, step: &Observation<'_, P>) {
        let mut value: M::State = state.decode();
        self.0.observe(&mut value, step);
        let next = MonitorState::encode(&value);
        if next != *state {
            *state = next;
        }
    }

    fn temperature(&self, state: &MonitorState) -> Temperature {
        self.0.temperature(&state.decode())
    }

    fn describe(&self, state: &MonitorState) -> String {
        format!("{:?}", state.decode::<M::State>())
    }
}

/// An `eventually` property as a monitor: its state is whether the predicate holds.
struct Eventually<P: Protocol>(Property<P>);

impl<P: Protocol> ErasedMonitor<P> for Eventually<P> {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn init(&self, world: &World<P>) -> MonitorState {
        MonitorState::encode(&self.0.holds(world))
    }

    fn observe(&self, state: &mut MonitorState, step: &Observation<'_, P>) {
        let holds = self.0.holds(step.after);
        if state.decode::<bool>() != holds {
            *state = MonitorState::encode(&holds);
        }
    }

    fn temperature(&self, state: &MonitorState) -> Temperature {
        if state.decode::<bool>() {
            Temperature::Cold
        } else {
            Temperature::Hot
        }
    }

    fn describe(&self, state: &MonitorState) -> String {
        if state.decode::<bool>() { "holds" } else { "does not hold yet" }.to_string()
    }
}

/// A shared, type-erased monitor.
pub struct DynMonitor<P: Protocol>(Arc<dyn ErasedMonitor<P>>);

impl<P: Protocol> Clone for DynMonitor<P> {
    fn clone(&self) -> Self {
        DynMonitor(Arc::clone(&self.0))
    }
}

impl<P: Protocol> Debug for DynMonitor<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "monitor {:?}", self.name())
    }
}

impl<P: Protocol> DynMonitor<P> {
    /// Erases `monitor`'s state type.
    pub fn new(monitor: impl Monitor<P>) -> Self {
        DynMonitor(Arc::new(Erased(monitor)))
    }

    /// The monitor of an `eventually` property: hot wherever the predicate does not hold.
    ///
    /// # Panics
    /// If `property` is not an `eventually` property.
    pub fn eventually(property: Property<P>) -> Self {
        assert_eq!(property.kind(), PropertyKind::Eventually, "only an eventually property is a monitor");
        DynMonitor(Arc::new(Eventually(property)))
    }

    /// The monitor's name.
    pub fn name(&self) -> &str {
        self.0.name()
    }

    /// The state in an execution's first world.
    pub fn init(&self, world: &World<P>) -> MonitorState {
        self.0.init(world)
    }

    /// Updates `state` after a step.
    pub fn observe(&self, state: &mut MonitorState, step: &Observation<'_, P>) {
        self.0.observe(state, step)
    }

    /// The temperature of `state`.
    pub fn temperature(&self, state: &MonitorState) -> Temperature {
        self.0.temperature(state)
    }

    /// `state` in its `Debug` form.
    pub fn describe(&self, state: &MonitorState) -> String {
        self.0.describe(state)
    }
}
