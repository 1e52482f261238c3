//! The messages in flight during one soundness search, with a memo key that stays current as
//! they come and go.
//!
//! Soundness verification ([`super::soundness`]) memoizes its positions on the node states and
//! the messages in flight. Hashing the whole network at every position cost a quarter of the
//! search, so the key is updated by each change instead, in constant time:
//! - an unordered network is a multiset: the key is the sum of its messages' hashes;
//! - a grow-only network is a set: the same sum over the distinct messages;
//! - FIFO channels and inboxes are one sequence per queue: each queue keeps a polynomial hash
//!   of its sequence (appending multiplies by the base and adds; taking the oldest subtracts
//!   it times the base's power), and the key is the sum over the non-empty queues of a hash of
//!   (queue, polynomial, length).
//!
//! The search changes the network in strict last-in, first-out order — it takes a message,
//! appends what the step produced, and undoes both when it backs out — so every change has an
//! exact inverse. The key never leaves the search: it is built from raw numbers with a fast
//! 128-bit mixer, not the canonical encoding, and two lanes keep accidental collisions (which
//! would prune a real path) at about 2^-100 per pair of positions.

use super::explore::MsgId;
use foretell_model::NetworkKind;

/// The messages in flight and their key.
///
/// Every operation is constant time. A multiset (unordered or grow-only) is only its counts.
/// A FIFO queue is the messages appended to it during the search with a head index: taking the
/// oldest moves the head forward and putting it back moves it back, since the search undoes its
/// changes in the reverse order it made them.
pub(crate) struct InFlight<'q> {
    kind: NetworkKind,
    /// Per message of `I+`: the queue it waits in (FIFO disciplines).
    queues: &'q [u32],
    /// Per message of `I+`: its contribution to the key ([`element`]), worked out once.
    elements: Vec<u128>,
    /// The messages appended, in order: what [`InFlight::pop`] takes back.
    pushed: Vec<MsgId>,
    key: u128,
    /// FIFO: each queue's messages, head and polynomial hash.
    lines: Vec<Line>,
    /// How often each message is in flight: a message not in flight is refused at once (most of
    /// a search's attempts), and a grow-only network's key counts each once.
    copies: Vec<u32>,
    /// The bases' powers, `powers[k]` = (B1^k, B2^k).
    powers: Vec<(u64, u64)>,
}

/// One FIFO queue: the messages appended to it (those before `head` were taken) and its hash.
#[derive(Clone, Default)]
struct Line {
    items: Vec<MsgId>,
    head: usize,
    chain: Chain,
}

/// One FIFO queue's polynomial hash in two lanes, its length, and its contribution to the key.
#[derive(Clone, Copy, Default)]
struct Chain {
    low: u64,
    high: u64,
    len: u32,
    key: u128,
}

/// The polynomial bases (odd, so invertible modulo 2^64) and their inverses.
const BASES: (u64, u64) = (0x9e37_79b9_7f4a_7c15, 0xc2b2_ae3d_27d4_eb4f);
const INVERSES: (u64, u64) = (inverse(BASES.0), inverse(BASES.1));

/// The inverse of odd `b` modulo 2^64 (Newton's iteration: each step doubles the correct bits).
const fn inverse(b: u64) -> u64 {
    let mut x = b; // correct to 3 bits, since b * b = 1 mod 8 for odd b
    let mut i = 0;
    while i < 5 {
        x = x.wrapping_mul(2u64.wrapping_sub(b.wrapping_mul(x)));
        i += 1;
    }
    x
}

impl<'q> InFlight<'q> {
    /// The network holding `initial`, in order, under `kind`; `queues` gives each message's
    /// queue.
    pub(crate) fn new(kind: NetworkKind, queues: &'q [u32], initial: &[MsgId]) -> Self {
        let fifo = matches!(kind, NetworkKind::FifoChannels | NetworkKind::FifoInbox);
        let lines = if fifo { queues.iter().max().map_or(0, |&last| last as usize + 1) } else { 0 };
        let mut in_flight = InFlight {
            kind,
            queues,
            elements: (0..queues.len() as MsgId).map(element).collect(),
            pushed: Vec::new(),
            key: 0,
            lines: vec![Line::default(); lines],
            copies: vec![0; queues.len()],
            powers: vec![(1, 1)],
        };
        for &m in initial {
            in_flight.push(m);
        }
        in_flight.pushed.clear(); // the start is not undone
        in_flight
    }

    /// The key of the messages in flight, as the discipline sees them.
    pub(crate) fn key(&self) -> u128 {
        self.key
    }

    /// Appends `m` (a message a step produced).
    pub(crate) fn push(&mut self, m: MsgId) {
        self.pushed.push(m);
        let at = m as usize;
        self.copies[at] += 1;
        let e = self.elements[at];
        match self.kind {
            NetworkKind::Unordered => self.key = self.key.wrapping_add(e),
            NetworkKind::GrowOnly => {
                if self.copies[at] == 1 {
                    self.key = self.key.wrapping_add(e);
                }
            }
            NetworkKind::FifoChannels | NetworkKind::FifoInbox => {
                self.line(m).items.push(m);
                self.change_chain(m, |chain| {
                    chain.low = chain.low.wrapping_mul(BASES.0).wrapping_add(e as u64);
                    chain.high = chain.high.wrapping_mul(BASES.1).wrapping_add((e >> 64) as u64);
                    chain.len += 1;
                });
            }
        }
    }

    /// Removes the last message appended (undoes [`InFlight::push`]).
    pub(crate) fn pop(&mut self) {
        let m = self.pushed.pop().expect("a push to undo");
        let at = m as usize;
        self.copies[at] -= 1;
        let e = self.elements[at];
        match self.kind {
            NetworkKind::Unordered => self.key = self.key.wrapping_sub(e),
            NetworkKind::GrowOnly => {
                if self.copies[at] == 0 {
                    self.key = self.key.wrapping_sub(e);
                }
            }
            NetworkKind::FifoChannels | NetworkKind::FifoInbox => {
                self.line(m).items.pop();
                self.change_chain(m, |chain| {
                    chain.low = chain.low.wrapping_sub(e as u64).wrapping_mul(INVERSES.0);
                    chain.high = chain.high.wrapping_sub((e >> 64) as u64).wrapping_mul(INVERSES.1);
                    chain.len -= 1;
                });
            }
        }
    }

    /// Consumes `m` if the discipline offers it (anywhere in a multiset, at the head of its
    /// queue on FIFO channels and inboxes; a grow-only network keeps it); whether it did, for
    /// [`InFlight::put_back`].
    #[inline]
    pub(crate) fn take(&mut self, m: MsgId) -> bool {
        if self.copies.get(m as usize).is_none_or(|&copies| copies == 0) {
            return false;
        }
        self.take_held(m)
    }

    /// [`InFlight::take`] of a message in flight.
    fn take_held(&mut self, m: MsgId) -> bool {
        let e = self.elements[m as usize];
        match self.kind {
            NetworkKind::GrowOnly => return true,
            NetworkKind::Unordered => self.key = self.key.wrapping_sub(e),
            NetworkKind::FifoChannels | NetworkKind::FifoInbox => {
                let line = self.line(m);
                if line.items.get(line.head) != Some(&m) {
                    return false;
                }
                line.head += 1;
                let len = line.chain.len;
                let (p0, p1) = self.power(len - 1);
                self.change_chain(m, |chain| {
                    chain.low = chain.low.wrapping_sub((e as u64).wrapping_mul(p0));
                    chain.high = chain.high.wrapping_sub(((e >> 64) as u64).wrapping_mul(p1));
                    chain.len -= 1;
                });
            }
        }
        self.copies[m as usize] -= 1;
        true
    }

    /// Returns `m`, the last message taken and not yet put back (undoes [`InFlight::take`]).
    pub(crate) fn put_back(&mut self, m: MsgId) {
        let e = self.elements[m as usize];
        match self.kind {
            NetworkKind::GrowOnly => return,
            NetworkKind::Unordered => self.key = self.key.wrapping_add(e),
            NetworkKind::FifoChannels | NetworkKind::FifoInbox => {
                let line = self.line(m);
                line.head -= 1;
                let len = line.chain.len;
                let (p0, p1) = self.power(len);
                self.change_chain(m, |chain| {
                    chain.low = chain.low.wrapping_add((e as u64).wrapping_mul(p0));
                    chain.high = chain.high.wrapping_add(((e >> 64) as u64).wrapping_mul(p1));
                    chain.len += 1;
                });
            }
        }
        self.copies[m as usize] += 1;
    }

    /// The queue `m` waits in.
    fn line(&mut self, m: MsgId) -> &mut Line {
        &mut self.lines[self.queues[m as usize] as usize]
    }

    /// The bases' `k`th powers, (B1^k, B2^k).
    fn power(&mut self, k: u32) -> (u64, u64) {
        while self.powers.len() <= k as usize {
            let (a, b) = *self.powers.last().expect("B^0 is always there");
            self.powers.push((a.wrapping_mul(BASES.0), b.wrapping_mul(BASES.1)));
        }
        self.powers[k as usize]
    }

    /// Applies `change` to the chain of `m`'s queue and keeps the key current.
    fn change_chain(&mut self, m: MsgId, change: impl FnOnce(&mut Chain)) {
        let queue = self.queues[m as usize];
        let chain = &mut self.lines[queue as usize].chain;
        let before = chain.key;
        change(chain);
        chain.key = chain_key(queue, chain);
        self.key = self.key.wrapping_sub(before).wrapping_add(chain.key);
    }

    /// The messages in flight: each queue's in order, or a multiset's in id order.
    #[cfg(test)]
    fn held(&self) -> Vec<MsgId> {
        match self.kind {
            NetworkKind::Unordered | NetworkKind::GrowOnly => (0..self.copies.len() as MsgId)
                .flat_map(|m| std::iter::repeat_n(m, self.copies[m as usize] as usize))
                .collect(),
            NetworkKind::FifoChannels | NetworkKind::FifoInbox => {
                self.lines.iter().flat_map(|line| line.items[line.head..].iter().copied()).collect()
            }
        }
    }
}

/// A message's contribution: its id, mixed.
fn element(m: MsgId) -> u128 {
    step(SEED, m.into())
}

/// A queue's contribution to the key: nothing while it is empty.
fn chain_key(queue: u32, chain: &Chain) -> u128 {
    if chain.len == 0 {
        return 0;
    }
    let lanes = (u128::from(chain.high) << 64) | u128::from(chain.low);
    let place = (u128::from(queue) << 96) | (u128::from(chain.len) << 32);
    step(lanes ^ place, 0)
}

/// The start of a chain of [`step`]s.
pub(crate) const SEED: u128 = 0x243f_6a88_85a3_08d3_1319_8a2e_0370_7344;

/// One step of a 128-bit hash chain: two 64-bit lanes, each the SplitMix64 finalizer (a
/// bijection that spreads every input bit) of the lane mixed with `x`.
pub(crate) fn step(h: u128, x: u64) -> u128 {
    let lane = |v: u64| {
        let v = (v ^ (v >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let v = (v ^ (v >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        v ^ (v >> 31)
    };
    let low = lane((h as u64 ^ x).wrapping_add(0x9e37_79b9_7f4a_7c15));
    let high = lane(((h >> 64) as u64 ^ x.rotate_left(29)).wrapping_add(0xa076_1d64_78bd_642f));
    (u128::from(high) << 64) | u128::from(low)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: [NetworkKind; 4] =
        [NetworkKind::Unordered, NetworkKind::GrowOnly, NetworkKind::FifoChannels, NetworkKind::FifoInbox];

    fn key(kind: NetworkKind, queues: &[u32], net: &[MsgId]) -> u128 {
        InFlight::new(kind, queues, net).key()
    }

    #[test]
    fn the_inverses_invert() {
        assert_eq!(BASES.0.wrapping_mul(INVERSES.0), 1);
        assert_eq!(BASES.1.wrapping_mul(INVERSES.1), 1);
    }

    #[test]
    fn an_unordered_network_is_a_multiset() {
        let queues = [0; 4];
        let unordered = |net: &[MsgId]| key(NetworkKind::Unordered, &queues, net);
        assert_eq!(unordered(&[1, 2, 3]), unordered(&[3, 1, 2]));
        assert_ne!(unordered(&[1, 1, 2]), unordered(&[1, 2, 2]));
        assert_ne!(unordered(&[1, 2]), unordered(&[1, 2, 2]));
        assert_ne!(unordered(&[]), unordered(&[0]));
    }

    #[test]
    fn a_grow_only_network_is_a_set() {
        let queues = [0; 4];
        let grow_only = |net: &[MsgId]| key(NetworkKind::GrowOnly, &queues, net);
        assert_eq!(grow_only(&[1, 1, 2]), grow_only(&[2, 1]));
        assert_ne!(grow_only(&[1, 2]), grow_only(&[1, 3]));
    }

    #[test]
    fn fifo_queues_keep_their_order_but_not_their_interleaving() {
        // Messages 0 and 1 wait in queue 0, message 2 in queue 1 and message 3 in queue 5.
        let queues = [0, 0, 1, 5];
        for kind in [NetworkKind::FifoChannels, NetworkKind::FifoInbox] {
            let fifo = |net: &[MsgId]| key(kind, &queues, net);
            assert_eq!(fifo(&[0, 1, 2, 3]), fifo(&[2, 0, 3, 1]));
            assert_ne!(fifo(&[0, 1, 2]), fifo(&[1, 0, 2]));
            assert_ne!(fifo(&[0, 2]), fifo(&[1, 2]));
            assert_ne!(fifo(&[0, 0]), fifo(&[0]));
        }
    }

    #[test]
    fn fifo_takes_only_the_head_of_a_queue() {
        let queues = [0, 0, 1];
        let mut in_flight = InFlight::new(NetworkKind::FifoInbox, &queues, &[0, 1, 2]);
        assert!(!in_flight.take(1), "message 1 waits behind 0");
        assert!(in_flight.take(2));
        assert!(in_flight.take(0));
        assert!(in_flight.take(1));
        assert!(!in_flight.take(1), "taken already");
        assert!(in_flight.held().is_empty());
    }

    /// Random nested changes, each undone in reverse, keep the key equal to the key of the same
    /// messages built from scratch: the key depends on what is in flight, not on how it got so.
    #[test]
    fn the_key_follows_every_change_and_its_undoing() {
        let queues = [0, 0, 1, 2, 2, 2, 3, 1];
        let mut seed = 0x1234_5678_u64;
        let mut next = |n: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % n
        };
        for kind in KINDS {
            let mut in_flight = InFlight::new(kind, &queues, &[0, 3, 1]);
            let mut undo: Vec<Option<MsgId>> = Vec::new();
            for _ in 0..2000 {
                let m = next(queues.len() as u64) as MsgId;
                match next(3) {
                    0 if !undo.is_empty() => match undo.pop().expect("not empty") {
                        None => in_flight.pop(),
                        Some(m) => in_flight.put_back(m),
                    },
                    1 => {
                        if in_flight.take(m) {
                            undo.push(Some(m));
                        }
                    }
                    _ => {
                        in_flight.push(m);
                        undo.push(None);
                    }
                }
                let held = in_flight.held();
                assert_eq!(in_flight.key(), key(kind, &queues, &held), "{kind:?} after {held:?}");
            }
        }
    }
}
