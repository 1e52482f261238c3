//! The step memo: what a node's handler did the last time its node slot met an event, so that a
//! search re-running the same local step in another world recalls it instead.
//!
//! A handler is a deterministic function of its node's local state and the event (replay
//! already relies on that). So a step whose handler made no choice, failed no check and did not
//! read the network has an outcome that depends on (acting node's slot, event) alone: the node's
//! next slot, or none if it did not change, and the messages it sent. A world's state space is
//! roughly a product of its nodes' local states, so a search meets each local step in many
//! worlds — a depth-first search of two-phase commit with six resource managers runs handlers
//! 2,359 times for its 256,001 transitions (callgrind's call count) — and a recalled step
//! costs a lookup, not a state clone, a handler run and a state hash. The recalled slot is shared (`Arc`) by every world it enters,
//! and so are the recalled messages, whose hashes are already known.
//!
//! The sends are kept even where they changed nothing (a grow-only network that held them),
//! because in another world they may; a recalled step posts them to that world's network, after
//! the event's own effect on it (a delivery consumes its message from a network that consumes
//! messages). A step whose node changed nothing and sent nothing — an input the node ignores in
//! its phase, a message delivered again to a grow-only network — is thus no successor where the
//! event leaves the network alone. A handler that declares its event not enabled
//! ([`crate::Out::disable`]) is recalled as [`Outcome::Disabled`]: no step at all. An event
//! recalled as either is also written into the slot ([`crate::idle_events`]), and the worlds
//! holding that slot then skip it without a lookup.
//!
//! Fields a protocol marks [`crate::Ignored`] are outside the slot hash: like state hashing, the
//! memo assumes they do not change what a handler does, and a recalled slot carries the ignored
//! fields of the run that produced it.
//!
//! The memo is a direct-mapped cache per thread: a key lives in the one entry its bits pick,
//! and a new key evicts an old one. A hit needs the whole key — the slot's 128-bit hash and the
//! event's — to match, so eviction only costs a handler run, never a wrong answer.

use crate::world::NodeSlot;
use crate::{Envelope, Protocol};
use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// A step's memo key: the acting node's slot hash (its position, state, timers and clock) and
/// the [`EventKey`].
pub(crate) type Key = (u128, u64);

/// An event's part of a memo key: 62 bits naming the event, under a 2-bit tag saying what kind
/// of event it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventKey {
    /// A message delivered, by the low 62 bits of its envelope's hash (`key`), with the
    /// model's number for it, if any (see [`crate::message_numbers`]), which names the same
    /// message and is not part of the bits.
    Delivery { key: u64, number: u32 },
    /// The acting slot's `t`-th armed timer fires.
    Timer(u32),
    /// Spontaneous driver input `i`.
    Input(u32),
}

impl EventKey {
    const PAYLOAD: u64 = !(0b11 << 62);

    /// The delivery of `envelope`.
    pub(crate) fn delivery<M>(envelope: &Envelope<M>) -> Self {
        EventKey::Delivery { key: envelope.hash as u64 & Self::PAYLOAD, number: envelope.number }
    }

    /// The key's 64 bits, as the memo stores them.
    #[inline]
    pub(crate) fn bits(self) -> u64 {
        match self {
            EventKey::Delivery { key, .. } => key,
            EventKey::Timer(t) => 1 << 62 | u64::from(t),
            EventKey::Input(i) => 2 << 62 | u64::from(i),
        }
    }
}

/// What a recalled step does.
pub(crate) enum Outcome<P: Protocol> {
    /// The handler declared the event not enabled: no step, not even the event's own effect.
    Disabled,
    /// The handler ran; shared with every successor that recalls it.
    Ran(Rc<Ran<P>>),
}

/// What a handler run did to its node and the network.
pub(crate) struct Ran<P: Protocol> {
    /// The node's next slot; `None` if it stayed the same.
    pub(crate) slot: Option<Arc<NodeSlot<P>>>,
    /// The messages it sent, in order.
    pub(crate) sends: Box<[Arc<Envelope<P::Msg>>]>,
}

struct Entry<P: Protocol> {
    key: Key,
    outcome: Outcome<P>,
}

/// One simulator's memo on one thread.
pub(crate) struct StepMemo<P: Protocol> {
    simulator: u64,
    entries: Box<[Entry<P>]>,
}

impl<P: Protocol> StepMemo<P> {
    /// Entries per thread (8K: the hot local steps of a search are few, and the memo must not
    /// weigh on the memory a search is measured by).
    const BITS: u32 = 13;
    /// No real key: its event part has both tag bits set, which no event key has.
    const VACANT: Key = (0, u64::MAX);

    fn new(simulator: u64) -> Self {
        let vacant = || Entry { key: Self::VACANT, outcome: Outcome::Disabled };
        StepMemo { simulator, entries: (0..1 << Self::BITS).map(|_| vacant()).collect() }
    }

    fn entry(key: Key) -> usize {
        let mixed = (key.0 as u64 ^ (key.0 >> 64) as u64 ^ key.1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (mixed >> (64 - Self::BITS)) as usize
    }

    /// The remembered outcome of the step with `key`.
    pub(crate) fn recall(&self, key: Key) -> Option<&Outcome<P>> {
        let entry = &self.entries[Self::entry(key)];
        (entry.key == key).then_some(&entry.outcome)
    }

    /// Remembers `outcome` for `key`, evicting whatever shared its entry.
    pub(crate) fn remember(&mut self, key: Key, outcome: Outcome<P>) {
        self.entries[Self::entry(key)] = Entry { key, outcome };
    }
}

thread_local! {
    /// This thread's memo, for the simulator that last used it (its protocol type erased).
    static MEMO: RefCell<Option<Box<dyn Any>>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's memo for simulator `simulator`, which starts empty whenever
/// another simulator used the thread last. A handler that explores a model of its own re-enters
/// here while the memo is in use; it gets `None`, and runs its steps without one.
pub(crate) fn with_memo<P: Protocol, R>(simulator: u64, f: impl FnOnce(Option<&mut StepMemo<P>>) -> R) -> R {
    MEMO.with(|cell| {
        let Ok(mut held) = cell.try_borrow_mut() else {
            return f(None);
        };
        let ours = held.as_ref().and_then(|memo| memo.downcast_ref::<StepMemo<P>>());
        if ours.is_none_or(|memo| memo.simulator != simulator) {
            *held = Some(Box::new(StepMemo::<P>::new(simulator)));
        }
        f(held.as_mut().and_then(|memo| memo.downcast_mut::<StepMemo<P>>()))
    })
}
