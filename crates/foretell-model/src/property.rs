//! Properties: what a model promises, as predicates over worlds.
//!
//! `always` properties are safety invariants; `sometimes` properties are reachability goals that
//! show a search covered what it should; `eventually` properties are liveness predicates — a
//! world where one holds is *live* (MaceMC, NSDI'07, section 4). Local assertions
//! ([`crate::Out::require`]) and handler panics are checked by the simulator on every step and
//! need no declaration.

use crate::{Protocol, World};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// The kind of a declared property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PropertyKind {
    /// Must hold in every reachable world.
    Always,
    /// Should hold in some reachable world.
    Sometimes,
    /// Should eventually hold on every execution (liveness).
    Eventually,
}

impl fmt::Display for PropertyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PropertyKind::Always => "always",
            PropertyKind::Sometimes => "sometimes",
            PropertyKind::Eventually => "eventually",
        })
    }
}

/// A shared predicate over worlds.
pub(crate) type Predicate<P> = Arc<dyn Fn(&World<P>) -> bool + Send + Sync>;

/// A named predicate over worlds.
pub struct Property<P: Protocol> {
    pub(crate) name: String,
    pub(crate) kind: PropertyKind,
    pub(crate) predicate: Predicate<P>,
}

impl<P: Protocol> Property<P> {
    /// The property's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The property's kind.
    pub fn kind(&self) -> PropertyKind {
        self.kind
    }

    /// Whether the predicate holds in `world`.
    pub fn holds(&self, world: &World<P>) -> bool {
        (self.predicate)(world)
    }
}

impl<P: Protocol> Clone for Property<P> {
    fn clone(&self) -> Self {
        Property { name: self.name.clone(), kind: self.kind, predicate: Arc::clone(&self.predicate) }
    }
}

impl<P: Protocol> fmt::Debug for Property<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {:?}", self.kind, self.name)
    }
}
