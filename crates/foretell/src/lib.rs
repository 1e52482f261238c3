//! foretell finds bugs in distributed systems before their users do.
//!
//! Write a protocol once as a [`foretell_model::Protocol`], put it in a [`foretell_model::Model`]
//! with the properties it promises, and check it with [`foretell_check::Check`]:
//! `use foretell::prelude::*;` brings in everything a user's code and tests need.

#![deny(missing_docs)]

mod allocator;

pub use allocator::Mimalloc;
pub use foretell_check as check;
pub use foretell_model as model;
pub use foretell_systems as systems;

/// Everything a protocol author and a test need.
pub mod prelude {
    pub use foretell_check::{Check, CheckOptions, EngineKind, Report, Status};
    pub use foretell_model::{
        Budget, Driver, Event, Faults, Ignored, Model, NetworkKind, NodeId, Out, Protocol, Scenario, Trace,
        World,
    };
}
