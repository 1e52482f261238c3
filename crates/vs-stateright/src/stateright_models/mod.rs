//! The Stateright side: the three state spaces written against Stateright's public API
//! (`stateright::Model` and the actor API), independently of Stateright's own examples.
//!
//! Each model builds exactly the state space of its foretell counterpart, so the two tools'
//! distinct-state counts are equal and their times comparable.

pub mod actor_paxos;
pub mod paxos_tla;
pub mod two_phase;
