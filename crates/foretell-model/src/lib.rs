//! The foretell protocol model.
//!
//! A distributed system is written once as a [`Protocol`]: the code of one node, a deterministic
//! state machine whose handlers (message, timer, application input, transport error) run to
//! completion and never block. A [`Model`] puts a protocol in an environment — a node count, a
//! [`NetworkKind`], a fault budget ([`Faults`]), a [`Driver`] of application inputs and the
//! [`Property`]s to check — and the [`Simulator`] turns it into worlds and steps.
//!
//! The key design decision is the *one seam*: every source of non-determinism — which event runs
//! next, every [`Out::choose`] inside a handler, every fault — is an answer to a question the
//! simulator asks. A step is identified by an [`Action`] plus the handler's choice values, so
//! exhaustive search, stateless re-execution, random walks and trace replay are only different
//! answerers (MaceMC, NSDI'07, section 3.1: "the model checker controls all sources of
//! non-determinism ... the system calls Choose").
//!
//! This crate knows nothing about engines, threads, files or clocks: the same model, action and
//! choices always give the same world, with the same [`Fingerprint`] on every machine.

#![deny(missing_docs)]

mod cache_hint;
mod caught_panic;
mod delta;
mod event;
mod fingerprint;
mod hash_encoding;
mod idle_events;
mod ignored;
mod json_view;
mod local;
mod message_numbers;
mod model;
mod monitor;
mod network;
mod node_id;
mod out;
mod partial_hash;
mod projection;
mod property;
mod protocol;
mod scenario;
mod simulator;
mod step_memo;
mod symmetry;
mod system_state;
mod trace;
mod trace_text;
mod weights;
mod world;
mod world_bytes;

pub use cache_hint::{prefetch, prefetch_once};
pub use caught_panic::{catch_panic, panic_message};
pub use delta::{Delta, Remains};
pub use event::{Action, Event};
pub use fingerprint::{Fingerprint, FingerprintHasher};
pub use ignored::Ignored;
pub use json_view::json_view;
pub use local::{LocalAction, LocalEvent, LocalOutcome, LocalState, NextLocal};
pub use model::{Budget, Driver, Faults, Model, ModelError};
pub use monitor::{DynMonitor, Monitor, MonitorState, Observation, Temperature};
pub use network::{Envelope, ErrorOrder, NetworkKind};
pub use node_id::NodeId;
pub use out::{Chooser, Out, QueueFull};
pub use partial_hash::{message_kind, HashInput, PartialHash, PartialHasher};
pub use projection::{Projection, ProjectionKey, ProjectionRule};
pub use property::{Property, PropertyKind};
pub use protocol::Protocol;
pub use scenario::Scenario;
pub use simulator::{
    ChoiceOdometer, EventOf, FixedChoices, Simulator, StepOutcome, StepRecord, StepViolation, Successor,
    Unbuilt, ViolationKind,
};
pub use symmetry::{Permutation, Symmetry};
pub use system_state::SystemState;
pub use trace::{
    LassoFinding, LivenessFinding, NearestLive, NodeDiff, ReplayError, Replayed, SentMessage, SystemRef,
    Trace, TraceError, TraceInitial, TraceScenario, TraceStep, TraceVerdict, TRACE_FORMAT, TRACE_VERSION,
};
pub use weights::{EventKind, Weights, WeightsError};
pub use world::{reads_network, NodeView, World};
pub use world_bytes::{WorldBytesError, WorldDecoder};
