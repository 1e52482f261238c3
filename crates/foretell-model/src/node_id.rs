//! Node identifiers: a node is named by its index in the model, `0..nodes`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The name of one node of a model: its index, from `0` to the node count minus one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The node with index `i`.
    ///
    /// # Panics
    /// If `i` does not fit in 32 bits (no model has that many nodes).
    pub fn new(i: usize) -> Self {
        NodeId(u32::try_from(i).expect("node index fits in u32"))
    }

    /// The node's index, for indexing per-node vectors.
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// Every node of a model with `count` nodes, in order.
    pub fn all(count: usize) -> impl Iterator<Item = NodeId> + Clone {
        (0..count).map(NodeId::new)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "n{}", self.0)
    }
}

impl From<usize> for NodeId {
    fn from(i: usize) -> Self {
        NodeId::new(i)
    }
}
