//! Partial-state hashes: what lasso detection remembers of a world (P#, FMCAD'17 "Lasso
//! Detection using Partial-State Caching", section III: `Hash(s)` "computes a fingerprint of a
//! state by hashing partial information gleaned from the program state").
//!
//! A repeat of the partial hash within one execution proposes a cycle, which the engine then
//! confirms by replay; so the hash may forget what never matters to progress — a round number
//! that grows forever, a retry counter — and a cycle that repeats everything but those is still
//! found (the paper's Appendix C: with the full state, Proposers has no lasso at all).
//!
//! The default follows P#'s: for each node its [`Protocol::phase`] (P#'s machine state) and its
//! armed timers, then the *kinds* of the messages in flight to it (P#'s event names: a
//! message's kind is its `Debug` form up to the first `(`, `{` or space, so an enum's variant
//! name), the pending transport errors and driver inputs. Monitors' states are added by the
//! engine, always.

use crate::{FingerprintHasher, Protocol, World};
use std::fmt::{self, Debug, Write};
use std::sync::Arc;
use xxhash_rust::xxh3::Xxh3;

/// A user-defined partial hash: feeds what matters of a world into the hasher.
pub type PartialHasher<P> = Arc<dyn Fn(&World<P>, &mut HashInput) + Send + Sync>;

/// What a custom partial hash feeds: values, hashed through their canonical encoding.
pub struct HashInput(Xxh3);

impl HashInput {
    /// Adds `value` to the hash.
    pub fn add<T: serde::Serialize + ?Sized>(&mut self, value: &T) {
        self.0.update(&FingerprintHasher::hash(value).to_le_bytes());
    }
}

/// How lasso detection hashes a world.
pub enum PartialHash<P: Protocol> {
    /// P#'s default: phases, timers and message kinds (see the module documentation).
    Default,
    /// The full fingerprint: a repeat is a repeat of the exact world.
    Full,
    /// A protocol's own choice.
    Custom(PartialHasher<P>),
}

impl<P: Protocol> Clone for PartialHash<P> {
    fn clone(&self) -> Self {
        match self {
            PartialHash::Default => PartialHash::Default,
            PartialHash::Full => PartialHash::Full,
            PartialHash::Custom(f) => PartialHash::Custom(Arc::clone(f)),
        }
    }
}

impl<P: Protocol> Debug for PartialHash<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PartialHash::Default => "default",
            PartialHash::Full => "full",
            PartialHash::Custom(_) => "custom",
        })
    }
}

impl<P: Protocol> PartialHash<P> {
    /// The partial hash of `world` under `protocol`.
    pub fn of(&self, protocol: &P, world: &World<P>) -> u64 {
        match self {
            PartialHash::Full => world.fingerprint().short(),
            PartialHash::Default => {
                let mut hasher = Xxh3::new();
                default_hash(protocol, world, &mut hasher);
                hasher.digest()
            }
            PartialHash::Custom(f) => {
                let mut input = HashInput(Xxh3::new());
                f(world, &mut input);
                input.0.digest()
            }
        }
    }
}

fn default_hash<P: Protocol>(protocol: &P, world: &World<P>, hasher: &mut Xxh3) {
    for slot in &world.nodes {
        hasher.update(&protocol.phase(&slot.state).to_le_bytes());
        hasher.update(&(FingerprintHasher::hash(&slot.timers) as u64).to_le_bytes());
    }
    for envelope in world.messages() {
        hasher.update(&envelope.from.0.to_le_bytes());
        hasher.update(&envelope.to.0.to_le_bytes());
        hasher.update(&message_kind(&envelope.msg).to_le_bytes());
    }
    for (node, peer) in world.pending_transport_errors() {
        hasher.update(&[0xfe]);
        hasher.update(&node.0.to_le_bytes());
        hasher.update(&peer.0.to_le_bytes());
    }
    hasher.update(&world.pending.to_le_bytes());
}

/// The hash of a message's kind: its `Debug` form up to the first `(`, `{` or space, formatted
/// no further than that.
pub fn message_kind<M: Debug>(msg: &M) -> u64 {
    struct Prefix(Xxh3);
    impl Write for Prefix {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            match s.find(['(', '{', ' ']) {
                Some(end) => {
                    self.0.update(&s.as_bytes()[..end]);
                    Err(fmt::Error) // stops the formatting: the rest is payload
                }
                None => {
                    self.0.update(s.as_bytes());
                    Ok(())
                }
            }
        }
    }
    let mut prefix = Prefix(Xxh3::new());
    let _ = write!(prefix, "{msg:?}");
    prefix.0.digest()
}

#[cfg(test)]
mod tests {
    use super::message_kind;

    #[derive(Debug)]
    #[allow(dead_code)] // read through Debug
    enum Msg {
        Prepare { round: u32 },
        Accept(u32),
        Ping,
    }

    #[test]
    fn a_message_kind_is_its_variant() {
        assert_eq!(message_kind(&Msg::Prepare { round: 1 }), message_kind(&Msg::Prepare { round: 7 }));
        assert_eq!(message_kind(&Msg::Accept(1)), message_kind(&Msg::Accept(2)));
        assert_ne!(message_kind(&Msg::Accept(1)), message_kind(&Msg::Ping));
        assert_ne!(message_kind(&Msg::Prepare { round: 1 }), message_kind(&Msg::Ping));
    }
}
