//! MaceTransport: Mace's reliable, in-order, duplicate-suppressing message transport built over
//! UDP, as MaceMC checked it (Killian, Anderson, Jhala and Vahdat, "Life, Death, and the Critical
//! Transition: Finding Liveness Bugs in Systems Code", NSDI'07: section 6 with Figures 5 and 6,
//! and the MACE TRANSPORT bug notes of its appendix). The handlers follow
//! `services/Transport/MaceTransport.mac` at eventwave r1116 (spec section 5), and the
//! application is `SimTransportApp`.
//!
//! # Protocol
//! Node 0 (the sender) opens an *outgoing connection* to node 1 (the receiver) on its first
//! `route`. The connection's SYN identifier is a reading of the monotone clock and its sequence
//! numbers start just above `syn * 100` (Mace: `getmtime() * 10^6`); only its first message
//! carries the SYN. `sendPackets` moves messages from the retransmission queue `rtbuf`, then from
//! `sendbuf`, to `inflight` while fewer than `cwnd` are in flight, arms one retransmission timer
//! per in-flight sequence number and sends `Data(seq, syn, synecho, payload)`. The receiver's
//! *incoming connection* starts in `expectSyn`; a SYN sets `next = nextDeliver = seq` and records
//! `lastSyn`; in-order data advances `next` past any buffered successors, later data waits in
//! the out-of-order buffer, earlier data is a duplicate; every packet is answered with the
//! cumulative `Ack(next - 1)` and deliverable messages go up to the application in order. A SYN
//! older than `lastSyn` is refused with `Reset(syn, seq)`, and so is data that arrives when no
//! SYN was seen. After `FAST_RESET_DUP` arrivals of an already-buffered packet the receiver
//! resets the connection (fix MT #11). An ACK frees the acknowledged `rtbuf` and `inflight`
//! entries (cancelling their timers), grows `cwnd` and refills the window; the third duplicate
//! ACK fast-retransmits the next packet. A `Reset` closes the outgoing connection unless it is
//! stale (its syn is older than the connection's and it names no queued packet; fix MT #7). A
//! retransmission timer moves its packet to `rtbuf`, drops `cwnd` to 1 and refills the window.
//! Closing a connection cancels its timers (fix MT #2) and tells the application, which sends
//! its messages again on a new connection (`SimTransportApp::error`).
//!
//! Mace handler to foretell handler: `route` (called by `SimTransportApp::simulateEvent`) is
//! [`Input::Route`]; `deliver(Data)`, `deliver(Ack)` and `deliver(Reset)` are
//! [`Protocol::on_message`]; the `retransmissionTimer` scheduler is [`Protocol::on_timer`] with
//! one [`Retransmission`] timer per (destination, in-flight sequence number), as Mace's multi
//! timer; `maceReset` plus `maceInit` is [`Protocol::restart`].
//!
//! # Environment
//! Two nodes on MaceMC's simulated UDP ([`NetworkKind::Unordered`]: any packet in flight may
//! arrive next), with at most `drops` packet losses and at most `resets` resets of the sender
//! (a reset wipes its transport and application state and its timers; the monotone clock
//! survives, so a new incarnation's SYN is larger). The application sends `messages` messages
//! (default 2, the fewest Figure 5 needs) from node 0 to node 1: each `route` is a
//! [`Driver::startup`] input `Route(i)`, given in order and given again after the sender resets,
//! as the restarted `SimTransportApp` sends again (the sender can reset only once it has routed
//! them all, as MaceMC resets a node only after an application event). When a connection
//! breaks, the application routes the messages it had routed again, at once, in a new *epoch*
//! (`SimTransportApp` counts these errors in `outError` and starts over from message 0 at its
//! next events; here that happens inside the error upcall). The receiver's application records
//! every message it is delivered as (incarnation, epoch, index).
//!
//! # Properties
//! Safety: `retransmissionTimerScheduled` (every in-flight packet has its timer armed), and the
//! application-level `noDuplicateDelivery` and `sequenceOrdering` (the messages of each
//! incarnation and epoch of the sender are delivered at most once and in the order sent, with no
//! gap), plus the local assertion `retransmissionTimerFindsMessage` (a firing retransmission
//! timer finds its packet in flight). Liveness: `inflightEmpty`, `allMessagesDelivered` (the
//! receiver has every message of the sender's current incarnation and epoch) and
//! `sequenceNumbersMatch` (`curseq + 1` equals the receiver's `nextDeliver`). The `sometimes`
//! goal `receiverDesynchronised` is Figure 5's dead state (see [`receiver_desynchronised`]).
//! Mace's `retransmissionTimerScheduledCount` is left out: it would flag MT #2's leftover timer
//! one step before the timer fires and touches deleted state, which is the failure MaceMC
//! reported.
//!
//! # Variants
//! - `dup-delivery` (MaceTransport 1): the original design, in which the SYN was a flag and the
//!   receiver remembered nothing about it. A retransmitted SYN packet makes the receiver think
//!   the sender restarted: it drops the connection, opens a new one at that packet and delivers
//!   it a second time. The first fix remembered the sequence number of the SYN that opened the
//!   connection (the `stale-syn` design); the final design's `lastSyn` covers it too.
//! - `stale-timer` (MaceTransport 2): closing an outgoing connection does not cancel the
//!   retransmission timers of its in-flight packets. Once a new connection to the same peer is
//!   open, such a timer passes the handler's guard (a connection exists) and looks up a packet
//!   the closed connection took with it: the assertion fails.
//! - `stale-syn` (MaceTransport 3, Figure 5): the design between the two fixes. The SYN is still
//!   a flag, the receiver keeps only the sequence number of the SYN that opened its connection
//!   (the MT #1 fix), and a SYN with any other sequence number re-opens the connection there.
//!   After the sender resets, its old incarnation's SYN (the paper's 2001, here 101) can arrive
//!   after the new incarnation's (6001, here 201): the receiver then expects 102 while the
//!   sender, once the ACK for 201 arrives (the critical transition), sends 202 and on. The
//!   receiver buffers them forever and its ACKs never cover the sender's window:
//!   `inflightEmpty` and `allMessagesDelivered` can never hold again. This design predates the
//!   fast reset (MT #11), which would break the deadlock, so the variant has none; with no
//!   `lastSyn` its `Reset`s carry no SYN identifier and always close the connection. The fix is
//!   the final design: the SYN is a monotone timestamp, the receiver keeps `lastSyn` outside
//!   the connection (so it survives a close), refuses older SYNs with a `Reset`, and the sender
//!   ignores a `Reset` older than its connection. The same design also delivers twice: when a
//!   retransmission of the new SYN follows the stale one, it re-opens the connection again.
//!
//! # Checked (BFS; two messages, one sender reset, no loss unless said)
//! - `dup-delivery`: `noDuplicateDelivery` violated in 4 steps from the initial world (14
//!   worlds; 9 with one message and no reset, its smallest configuration).
//! - `stale-timer`: `retransmissionTimerFindsMessage` fails in 14 steps from the initial world
//!   (6,983 worlds); its smallest configuration is one message and one reset (13 steps, 1,151
//!   worlds). A reset is needed: it leaves the receiver a stale connection whose fast reset
//!   closes the sender's.
//! - `stale-syn`: from `fig5`, `receiverDesynchronised` is reached in 4 steps (53 worlds), and
//!   `noDuplicateDelivery` is violated in 4 steps too; from the dead world no world within 10
//!   steps delivers again or empties the window. Two messages and one reset are needed.
//! - The fixed version holds every safety property to depth 14 from the initial world (7,857
//!   worlds; 13,281 with one loss) and from `fig5` (5,086 worlds), never reaches
//!   `receiverDesynchronised`, and reaches a world where each liveness property holds.
//!
//! # Simplifications
//! Time is abstract: an armed timer may fire at any point, so there is no RTO estimate and
//! every firing counts as a timeout (`cwnd` back to 1; Mace does this once per batch), each
//! packet is queued for retransmission by its own timer (Mace also takes along older in-flight
//! packets by send time), and MAX_RTO's "send timeout", which would close a connection whose
//! oldest packet waited too long, is not modelled (MaceMC's random walks almost never took it,
//! which is why MT #3 showed as a liveness bug). The window grows by one packet per ACK (slow
//! start only) up to the number of messages the application sends, beyond which it changes
//! nothing. Duplicate-ACK counts stop at `FAST_RETRANSMIT_DUP`, where their effect no longer
//! changes. Fragmentation, `rid`, flow control (`canSend`, request-to-send), flush
//! notifications and statistics are left out; messages are never larger than a packet.

use crate::{Param, ScenarioInfo, Settings, System, Variant};
use foretell_check::DynModel;
use foretell_model::{
    Budget, Driver, Event, Faults, Model, NetworkKind, NodeId, Out, Protocol, Scenario, World,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A sequence number.
pub type Seq = u32;

/// A SYN identifier: a reading of the sender's monotone clock; 0 means "not a SYN".
pub type Syn = u64;

/// The node whose application sends.
pub const SENDER: NodeId = NodeId(0);

/// The node whose application receives.
pub const RECEIVER: NodeId = NodeId(1);

/// A connection with SYN identifier `s` numbers its packets from `s * SEQ_SPACING + 1`, which
/// keeps the sequence numbers of different connections apart (Mace used `getmtime() * 10^6`).
pub const SEQ_SPACING: Seq = 100;

/// Arrivals of an already-buffered packet after which the receiver resets the connection.
pub const FAST_RESET_DUP: u8 = 3;

/// Duplicate ACKs after which the sender retransmits the next packet at once.
pub const FAST_RETRANSMIT_DUP: u8 = 3;

/// Mace's initial retransmission timeout, used only as the timer's delay in a live run.
const INIT_RTO_MS: u64 = 1000;

/// The name of the local assertion a stale retransmission timer fails.
pub const STALE_TIMER_ASSERTION: &str = "retransmissionTimerFindsMessage";

/// An application message: which incarnation and epoch of the sender's application sent it,
/// and its index among that epoch's messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AppMsg {
    /// The sender's incarnation (how often it was reset).
    pub incarnation: u8,
    /// The sender application's count of broken connections when it routed the message.
    pub epoch: u8,
    /// The message's index, from 0.
    pub index: u8,
}

/// A packet the sender keeps until it is acknowledged (Mace's `MessageInfo`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Packet {
    /// Its sequence number.
    pub seq: Seq,
    /// The connection's SYN identifier if this is its first packet, otherwise 0.
    pub syn: Syn,
    /// The application message.
    pub payload: AppMsg,
}

/// A sender's connection to one peer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outgoing {
    /// The SYN identifier: the monotone clock when the connection opened.
    pub syn: Syn,
    /// The last sequence number given out.
    pub curseq: Seq,
    /// Whether the next enqueued packet is the first, which carries the SYN.
    pub return_syn: bool,
    /// Packets sent and not yet acknowledged, each with a retransmission timer.
    pub inflight: BTreeMap<Seq, Packet>,
    /// Packets waiting to be retransmitted.
    pub rtbuf: BTreeMap<Seq, Packet>,
    /// Packets waiting to be sent for the first time.
    pub sendbuf: VecDeque<Packet>,
    /// The last cumulative ACK received.
    pub last: Seq,
    /// Duplicate ACKs of `last` received (counting stops at [`FAST_RETRANSMIT_DUP`]).
    pub dupacks: u8,
    /// The congestion window, in packets.
    pub cwnd: u8,
}

impl Outgoing {
    /// A new connection whose SYN identifier is `syn`.
    fn open(syn: Syn) -> Self {
        Outgoing {
            syn,
            curseq: seq_base(syn),
            return_syn: true,
            inflight: BTreeMap::new(),
            rtbuf: BTreeMap::new(),
            sendbuf: VecDeque::new(),
            last: 0,
            dupacks: 0,
            cwnd: 1,
        }
    }

    /// The sequence number of the connection's first packet, the one that carries the SYN.
    pub fn first_seq(&self) -> Seq {
        seq_base(self.syn).saturating_add(1)
    }

    /// Queues `payload` as the next packet (Mace's `enqueue`).
    fn enqueue(&mut self, payload: AppMsg) {
        self.curseq = self.curseq.saturating_add(1);
        let syn = if std::mem::take(&mut self.return_syn) { self.syn } else { 0 };
        self.sendbuf.push_back(Packet { seq: self.curseq, syn, payload });
    }

    /// Whether packets wait to be sent or retransmitted.
    fn has_queued(&self) -> bool {
        !self.rtbuf.is_empty() || !self.sendbuf.is_empty()
    }

    /// Mace's `sendPackets`: fills the window from `rtbuf`, then `sendbuf`, arming a
    /// retransmission timer per packet sent.
    fn send_packets(&mut self, dest: NodeId, synecho: Syn, out: &mut Out<'_, MaceTransport>) {
        while self.has_queued() && self.inflight.len() < usize::from(self.cwnd) {
            let next = self.rtbuf.pop_first().map(|(_, packet)| packet).or_else(|| self.sendbuf.pop_front());
            let Some(packet) = next else { break };
            out.set_timer(Retransmission { dest, seq: packet.seq }, INIT_RTO_MS);
            out.send(dest, Msg::Data { seq: packet.seq, syn: packet.syn, synecho, payload: packet.payload });
            self.inflight.insert(packet.seq, packet);
        }
    }

    /// Records cumulative ACK `ack` (Mace's `setLast`).
    fn set_last(&mut self, ack: Seq) {
        if self.last == ack {
            self.dupacks = (self.dupacks + 1).min(FAST_RETRANSMIT_DUP);
        } else {
            self.last = ack;
            self.dupacks = 0;
        }
    }

    /// Grows the window by one packet, up to `max`.
    fn grow_window(&mut self, max: u8) {
        self.cwnd = self.cwnd.saturating_add(1).min(max);
    }

    /// Acknowledges every in-flight packet up to `ack`, cancelling their timers.
    fn acknowledge(&mut self, dest: NodeId, ack: Seq, window_max: u8, out: &mut Out<'_, MaceTransport>) {
        let acked: Vec<Seq> = self.inflight.range(..=ack).map(|(&seq, _)| seq).collect();
        for seq in acked {
            self.inflight.remove(&seq);
            out.cancel_timer(&Retransmission { dest, seq });
            self.grow_window(window_max);
        }
    }
}

/// The first sequence number of connection `syn`, less one.
fn seq_base(syn: Syn) -> Seq {
    Seq::try_from(syn).map_or(Seq::MAX, |syn| syn.saturating_mul(SEQ_SPACING))
}

/// A packet the receiver holds out of order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Buffered {
    /// The application message.
    pub payload: AppMsg,
    /// How often it arrived again (counted only where the fast reset exists).
    pub retries: u8,
}

/// A receiver's connection from one peer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Incoming {
    /// Whether no SYN has opened the connection yet.
    pub expect_syn: bool,
    /// The next sequence number expected (what the cumulative ACK is computed from).
    pub next: Seq,
    /// The next sequence number to deliver to the application.
    pub next_deliver: Seq,
    /// The sequence number of the SYN that opened the connection (the old design's MT #1 fix).
    pub syn_seq: Seq,
    /// Packets that arrived out of order.
    pub buffer: BTreeMap<Seq, Buffered>,
}

impl Incoming {
    /// A connection waiting for its SYN.
    fn new() -> Self {
        Incoming { expect_syn: true, next: 0, next_deliver: 0, syn_seq: 0, buffer: BTreeMap::new() }
    }

    /// Opens the connection at the SYN packet `seq`.
    fn open(&mut self, seq: Seq) {
        self.expect_syn = false;
        self.next = seq;
        self.next_deliver = seq;
        self.syn_seq = seq;
    }

    /// Delivers `payload`, the packet at `nextDeliver`, and the buffered packets that follow it.
    fn deliver(&mut self, payload: AppMsg, app: &mut App) {
        app.delivered.push(payload);
        self.next_deliver = self.next_deliver.saturating_add(1);
        while let Some(entry) = self.buffer.first_entry() {
            if *entry.key() != self.next_deliver {
                break;
            }
            app.delivered.push(entry.remove().payload);
            self.next_deliver = self.next_deliver.saturating_add(1);
        }
    }

    /// Advances `next` for the arrival of `seq`; false if `seq` is an old duplicate.
    fn advance(&mut self, seq: Seq) -> bool {
        if seq == self.next {
            self.next = self.next.saturating_add(1);
            while self.buffer.contains_key(&self.next) {
                self.next = self.next.saturating_add(1);
            }
            true
        } else {
            seq > self.next
        }
    }
}

/// The application (`SimTransportApp`): what the sender routed, what the receiver was given.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct App {
    /// How often the node was reset (MaceMC's incarnation number).
    pub incarnation: u8,
    /// How many of its connections broke (`SimTransportApp`'s `outError`).
    pub epoch: u8,
    /// How many messages it routed in this incarnation.
    pub routed: u8,
    /// Every message the transport delivered to it, in order.
    pub delivered: Vec<AppMsg>,
}

/// A node's state: the transport's, then the application's.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Outgoing connections, by destination.
    pub out: BTreeMap<NodeId, Outgoing>,
    /// Incoming connections, by source.
    pub inc: BTreeMap<NodeId, Incoming>,
    /// The newest SYN identifier seen from each peer (the final design only).
    pub last_syn: BTreeMap<NodeId, Syn>,
    /// The application.
    pub app: App,
}

/// Packets on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Msg {
    /// A data packet.
    Data {
        /// Its sequence number.
        seq: Seq,
        /// The connection's SYN identifier on its first packet, otherwise 0.
        syn: Syn,
        /// The newest SYN identifier the sender has seen from the destination, or 0.
        synecho: Syn,
        /// The application message.
        payload: AppMsg,
    },
    /// A cumulative acknowledgement of every packet up to `seq`.
    Ack {
        /// The last sequence number received in order.
        seq: Seq,
    },
    /// The receiver refuses a packet: the connection should be closed.
    Reset {
        /// The SYN identifier the reset is about (0 if none).
        syn: Syn,
        /// The refused packet's sequence number.
        seq: Seq,
    },
}

/// A retransmission timer: one per in-flight packet.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Retransmission {
    /// The connection's destination.
    pub dest: NodeId,
    /// The packet's sequence number.
    pub seq: Seq,
}

/// Application inputs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Input {
    /// The application routes its message with this index to every peer.
    Route(u8),
}

/// The bug variants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Bug {
    /// The r1116 transport.
    #[default]
    None,
    /// MT #1: the SYN is a flag and every SYN re-opens the receiver's connection.
    DupDelivery,
    /// MT #2: closing a connection leaves its retransmission timers armed.
    StaleTimer,
    /// MT #3: the SYN is a flag, and a SYN other than the connection's first re-opens it.
    StaleSyn,
}

impl Bug {
    /// Whether the variant is one of the old designs with a SYN flag: no SYN timestamps, no
    /// `lastSyn`, and (as it predates MT #11) no fast reset.
    fn syn_flag(self) -> bool {
        matches!(self, Bug::DupDelivery | Bug::StaleSyn)
    }
}

/// The protocol: the transport with its application.
#[derive(Clone, Debug)]
pub struct MaceTransport {
    bug: Bug,
    /// The largest useful window: the number of messages the application sends.
    window_max: u8,
}

impl MaceTransport {
    /// The transport with `bug`, for an application that sends `messages` messages.
    pub fn new(bug: Bug, messages: u8) -> Self {
        MaceTransport { bug, window_max: messages.max(1) }
    }

    /// Mace's `route`: opens the connection to `dest` if needed, queues `payload`, sends.
    fn route(&self, state: &mut State, dest: NodeId, payload: AppMsg, out: &mut Out<'_, Self>) {
        let synecho = synecho(state, dest);
        let c = state.out.entry(dest).or_insert_with(|| Outgoing::open(out.monotone_now()));
        c.enqueue(payload);
        c.send_packets(dest, synecho, out);
    }

    /// `deliver(Ack)`: frees acknowledged packets, or counts a duplicate ACK.
    fn deliver_ack(&self, state: &mut State, src: NodeId, ack: Seq, out: &mut Out<'_, Self>) {
        let synecho = synecho(state, src);
        let Some(c) = state.out.get_mut(&src) else {
            out.log(format_args!("ack {ack} for no connection"));
            return;
        };
        while let Some(entry) = c.rtbuf.first_entry() {
            if *entry.key() > ack {
                break;
            }
            entry.remove();
            c.grow_window(self.window_max);
        }
        let highest = c.inflight.last_key_value().map(|(&seq, _)| seq);
        // Fix MT #6: an ACK above every in-flight packet acknowledges them all.
        if c.inflight.contains_key(&ack) || highest.is_some_and(|highest| highest < ack) {
            c.acknowledge(src, ack, self.window_max, out);
            c.set_last(ack);
            c.send_packets(src, synecho, out);
        } else if ack == c.last {
            c.grow_window(self.window_max);
            c.set_last(ack);
            if c.dupacks >= FAST_RETRANSMIT_DUP {
                fast_retransmit(c, src, ack.saturating_add(1), out);
            }
            c.send_packets(src, synecho, out);
        } else {
            out.log(format_args!("unknown ack {ack}"));
        }
    }

    /// `deliver(Reset)`: closes the outgoing connection unless the reset is stale (fix MT #7).
    fn deliver_reset(&self, state: &mut State, src: NodeId, syn: Syn, seq: Seq, out: &mut Out<'_, Self>) {
        let Some(c) = state.out.get(&src) else { return };
        let current = syn == 0 || syn >= c.syn || c.inflight.contains_key(&seq) || c.rtbuf.contains_key(&seq);
        if current {
            self.close_outgoing(state, src, out);
        } else {
            out.log(format_args!("ignores a stale reset with syn {syn} (connection syn {})", c.syn));
        }
    }

    /// The `retransmissionTimer` scheduler: queues the packet for retransmission.
    fn retransmission_timer(&self, state: &mut State, timer: &Retransmission, out: &mut Out<'_, Self>) {
        let synecho = synecho(state, timer.dest);
        let Some(c) = state.out.get_mut(&timer.dest) else { return };
        let Some(packet) = c.inflight.remove(&timer.seq) else {
            // The packet belonged to a closed connection (MT #2): Mace's lookup fails here.
            out.require(false, STALE_TIMER_ASSERTION);
            return;
        };
        c.cwnd = 1;
        c.rtbuf.insert(timer.seq, packet);
        c.send_packets(timer.dest, synecho, out);
    }

    /// `deliver(Data)`, Mace's `processDeliver`: acknowledges, then buffers or delivers.
    fn deliver_data(&self, state: &mut State, src: NodeId, data: DataFields, out: &mut Out<'_, Self>) {
        let Some(ackseq) = self.send_ack(state, src, &data, out) else { return };
        let Some(c) = state.inc.get_mut(&src) else { return };
        if let Some(buffered) = c.buffer.get_mut(&data.seq) {
            // Fix MT #11 (not in the old designs): a packet that keeps arriving while it waits
            // for a gap to fill means the sender is on another connection.
            let fast_reset = !self.bug.syn_flag() && {
                buffered.retries = (buffered.retries + 1).min(FAST_RESET_DUP);
                buffered.retries >= FAST_RESET_DUP
            };
            if fast_reset {
                send_reset(&state.last_syn, src, 0, data.seq, out);
                self.close_incoming(state, src, true, out);
            }
            return;
        }
        if ackseq < data.seq {
            c.buffer.insert(data.seq, Buffered { payload: data.payload, retries: 0 });
        } else {
            c.deliver(data.payload, &mut state.app);
        }
    }

    /// Mace's `sendAck`: handles the SYN, advances `next` and sends the cumulative ACK. Returns
    /// the ACK's sequence number, or `None` if the packet is discarded.
    fn send_ack(
        &self,
        state: &mut State,
        src: NodeId,
        data: &DataFields,
        out: &mut Out<'_, Self>,
    ) -> Option<Seq> {
        let mut discard = false;
        if data.syn != 0 {
            if self.bug.syn_flag() {
                self.reopen_on_syn_flag(state, src, data.seq);
            } else {
                discard = self.refuse_stale_syn(state, src, data, out);
            }
        }
        let State { inc, last_syn, .. } = state;
        let c = inc.entry(src).or_insert_with(Incoming::new);
        if discard {
            return None;
        }
        if c.expect_syn {
            if data.syn == 0 {
                send_reset(last_syn, src, 0, data.seq, out);
                return None;
            }
            c.open(data.seq);
            if !self.bug.syn_flag() {
                last_syn.insert(src, data.syn);
            }
        }
        let fresh = c.advance(data.seq);
        let ackseq = c.next.saturating_sub(1);
        out.send(src, Msg::Ack { seq: ackseq });
        fresh.then_some(ackseq)
    }

    /// The final design's SYN check: refuses a SYN older than `lastSyn` (true: discard the
    /// packet); for a newer one, a restarted peer, closes the connections it broke.
    fn refuse_stale_syn(
        &self,
        state: &mut State,
        src: NodeId,
        data: &DataFields,
        out: &mut Out<'_, Self>,
    ) -> bool {
        let Some(&last) = state.last_syn.get(&src) else { return false };
        if data.syn < last {
            send_reset(&state.last_syn, src, data.syn, data.seq, out);
            return true;
        }
        // A newer SYN: the peer restarted. Only a node with an outgoing connection to it acts.
        let echoes_ours = state.out.get(&src).map(|c| c.syn == data.synecho);
        match echoes_ours {
            Some(false) if data.syn > last => {
                self.close_outgoing(state, src, out);
                self.close_incoming(state, src, false, out);
            }
            Some(true) if data.syn > last => self.close_incoming(state, src, true, out),
            _ => {}
        }
        false
    }

    /// The old designs' SYN flag: the receiver takes any SYN for a restarted sender and drops
    /// its connection, except (`stale-syn`, the MT #1 fix) a repeat of the SYN that opened it.
    fn reopen_on_syn_flag(&self, state: &mut State, src: NodeId, seq: Seq) {
        let repeat = self.bug == Bug::StaleSyn
            && state.inc.get(&src).is_some_and(|c| !c.expect_syn && c.syn_seq == seq);
        if !repeat {
            state.inc.remove(&src);
        }
    }

    /// Mace's `closeOutgoingConnection`: forgets the connection, cancels its timers (fix MT #2;
    /// not under `stale-timer`) and tells the application.
    fn close_outgoing(&self, state: &mut State, dest: NodeId, out: &mut Out<'_, Self>) {
        let Some(c) = state.out.remove(&dest) else { return };
        if self.bug != Bug::StaleTimer {
            for &seq in c.inflight.keys() {
                out.cancel_timer(&Retransmission { dest, seq });
            }
        }
        self.upcall_error(state, dest, out);
    }

    /// Mace's `closeIncomingConnection`: forgets the connection and bumps `lastSyn`, so that a
    /// late copy of the closed connection's SYN is refused.
    fn close_incoming(&self, state: &mut State, src: NodeId, upcall: bool, out: &mut Out<'_, Self>) {
        if upcall {
            self.upcall_error(state, src, out);
        }
        state.inc.remove(&src);
        if let Some(syn) = state.last_syn.get_mut(&src) {
            *syn = syn.saturating_add(1);
        }
    }

    /// `SimTransportApp::error`: an application that had routed messages to `peer` starts a new
    /// epoch and routes them again.
    fn upcall_error(&self, state: &mut State, peer: NodeId, out: &mut Out<'_, Self>) {
        if state.app.routed == 0 {
            return;
        }
        state.app.epoch = state.app.epoch.saturating_add(1);
        for index in 0..state.app.routed {
            let payload = AppMsg { incarnation: state.app.incarnation, epoch: state.app.epoch, index };
            self.route(state, peer, payload, out);
        }
    }
}

/// The fields of a `Data` packet.
struct DataFields {
    seq: Seq,
    syn: Syn,
    synecho: Syn,
    payload: AppMsg,
}

/// The SYN identifier a node echoes to `peer`: the newest it has seen from it, or 0.
fn synecho(state: &State, peer: NodeId) -> Syn {
    state.last_syn.get(&peer).copied().unwrap_or(0)
}

/// Mace's `sendReset`: a reset without its own SYN identifier carries `lastSyn`, if any.
fn send_reset(
    last_syn: &BTreeMap<NodeId, Syn>,
    dest: NodeId,
    syn: Syn,
    seq: Seq,
    out: &mut Out<'_, MaceTransport>,
) {
    let syn = if syn == 0 { last_syn.get(&dest).copied().unwrap_or(0) } else { syn };
    out.send(dest, Msg::Reset { syn, seq });
}

/// The fast retransmission after the third duplicate ACK: packet `seq` goes back to `rtbuf`.
fn fast_retransmit(c: &mut Outgoing, dest: NodeId, seq: Seq, out: &mut Out<'_, MaceTransport>) {
    if let Some(packet) = c.inflight.remove(&seq) {
        c.cwnd = 1;
        out.cancel_timer(&Retransmission { dest, seq });
        c.rtbuf.insert(seq, packet);
    }
}

impl Protocol for MaceTransport {
    type State = State;
    type Msg = Msg;
    type Timer = Retransmission;
    type Input = Input;

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> State {
        State::default()
    }

    fn restart(&self, me: NodeId, crashed: &State, out: &mut Out<'_, Self>) -> State {
        let mut state = self.init(me, out);
        state.app.incarnation = crashed.app.incarnation.saturating_add(1);
        state
    }

    fn on_input(&self, _: NodeId, state: &mut State, input: &Input, out: &mut Out<'_, Self>) {
        let Input::Route(index) = *input;
        state.app.routed = index.saturating_add(1);
        let payload = AppMsg { incarnation: state.app.incarnation, epoch: state.app.epoch, index };
        let peers: Vec<NodeId> = out.peers().collect();
        for peer in peers {
            self.route(state, peer, payload, out);
        }
    }

    fn on_message(&self, _: NodeId, state: &mut State, from: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
        match *msg {
            Msg::Data { seq, syn, synecho, payload } => {
                self.deliver_data(state, from, DataFields { seq, syn, synecho, payload }, out)
            }
            Msg::Ack { seq } => self.deliver_ack(state, from, seq, out),
            Msg::Reset { syn, seq } => self.deliver_reset(state, from, syn, seq, out),
        }
    }

    fn on_timer(&self, _: NodeId, state: &mut State, timer: &Retransmission, out: &mut Out<'_, Self>) {
        self.retransmission_timer(state, timer, out);
    }
}

/// Every in-flight packet of every node has its retransmission timer armed.
fn retransmission_timer_scheduled(w: &World<MaceTransport>) -> bool {
    NodeId::all(w.node_count()).all(|n| {
        w.state(n)
            .out
            .iter()
            .all(|(&dest, c)| c.inflight.keys().all(|&seq| w.timer_armed(n, &Retransmission { dest, seq })))
    })
}

/// No node was delivered the same message (incarnation, epoch, index) twice.
fn no_duplicate_delivery(w: &World<MaceTransport>) -> bool {
    w.states().all(|s| {
        let mut seen = BTreeSet::new();
        s.app.delivered.iter().all(|m| seen.insert(*m))
    })
}

/// Within each incarnation and epoch of the sender, every message delivered is a repeat or
/// the one after the highest delivered before it: messages arrive in the order sent, no gaps.
fn sequence_ordering(w: &World<MaceTransport>) -> bool {
    w.states().all(|s| {
        let mut highest: BTreeMap<(u8, u8), u8> = BTreeMap::new();
        s.app.delivered.iter().all(|m| {
            let stream = (m.incarnation, m.epoch);
            let in_order = highest.get(&stream).map_or(m.index == 0, |&h| m.index <= h.saturating_add(1));
            let top = highest.entry(stream).or_insert(m.index);
            *top = (*top).max(m.index);
            in_order
        })
    })
}

/// No packet is in flight anywhere.
fn inflight_empty(w: &World<MaceTransport>) -> bool {
    w.states().all(|s| s.out.values().all(|c| c.inflight.is_empty()))
}

/// The receiver has every message of the sender's current incarnation and epoch.
fn all_messages_delivered(w: &World<MaceTransport>, messages: u8) -> bool {
    let sender = &w.state(SENDER).app;
    let delivered = &w.state(RECEIVER).app.delivered;
    (0..messages).all(|index| {
        let m = AppMsg { incarnation: sender.incarnation, epoch: sender.epoch, index };
        delivered.contains(&m)
    })
}

/// Every outgoing connection's last sequence number is one below its peer's `nextDeliver`, where
/// the peer has the matching incoming connection.
fn sequence_numbers_match(w: &World<MaceTransport>) -> bool {
    NodeId::all(w.node_count()).all(|n| {
        w.state(n).out.iter().all(|(&peer, c)| {
            w.state(peer).inc.get(&n).is_none_or(|i| c.curseq.saturating_add(1) == i.next_deliver)
        })
    })
}

/// Figure 5's dead state: the sender's connection is established (the ACK of its SYN arrived),
/// the receiver's connection expects an older connection's packets and holds one of the new
/// connection's out of order, and nothing in flight can set it right (no copy of the new
/// connection's SYN is on its way to the receiver, no `Reset` to the sender).
///
/// Under `stale-syn` such a world can never again satisfy `inflightEmpty` or
/// `allMessagesDelivered` unless a sender reset is left in the budget: the sender never sends
/// its SYN again, the receiver only buffers the new packets, and its ACKs fall below the
/// sender's window, so the sender ignores them. The final design never reaches it: once the
/// receiver accepted a connection's SYN it refuses every older one.
pub fn receiver_desynchronised(w: &World<MaceTransport>) -> bool {
    let Some(c) = w.state(SENDER).out.get(&RECEIVER) else { return false };
    let Some(r) = w.state(RECEIVER).inc.get(&SENDER) else { return false };
    let first = c.first_seq();
    let established = c.last >= first;
    let behind = !r.expect_syn && r.next < first;
    let holds_new = r.buffer.range(first..).next().is_some();
    let rescue = w.messages().any(|e| match e.msg {
        Msg::Data { seq, syn, .. } => e.to == RECEIVER && syn != 0 && seq >= first,
        Msg::Reset { .. } => e.to == SENDER,
        Msg::Ack { .. } => false,
    });
    established && behind && holds_new && !rescue
}

/// A model's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Messages the sender's application sends (1 to 3).
    pub messages: u8,
    /// Resets of the sender.
    pub resets: u32,
    /// Packet losses.
    pub drops: u32,
    /// The variant.
    pub bug: Bug,
}

impl Default for Config {
    fn default() -> Self {
        Config { messages: 2, resets: 1, drops: 0, bug: Bug::None }
    }
}

/// The environment without properties: two nodes on UDP, the sender's application routing
/// `messages` messages as startup inputs, at most `resets` sender resets and `drops` losses.
pub fn environment(config: Config) -> Model<MaceTransport> {
    let driver =
        (0..config.messages).fold(Driver::new(), |driver, i| driver.startup(SENDER, Input::Route(i)));
    Model::new(MaceTransport::new(config.bug, config.messages))
        .nodes(2)
        .network(NetworkKind::Unordered)
        .faults(
            Faults::none()
                .resets(Budget::at_most(config.resets))
                .resettable([SENDER])
                .drops(Budget::at_most(config.drops)),
        )
        .driver(driver)
}

/// The model: [`environment`] with the safety properties `retransmissionTimerScheduled`,
/// `noDuplicateDelivery` and `sequenceOrdering`, the liveness properties `inflightEmpty`,
/// `allMessagesDelivered` and `sequenceNumbersMatch`, and the goal `receiverDesynchronised`.
pub fn model(config: Config) -> Model<MaceTransport> {
    let messages = config.messages;
    environment(config)
        .always("retransmissionTimerScheduled", retransmission_timer_scheduled)
        .always("noDuplicateDelivery", no_duplicate_delivery)
        .always("sequenceOrdering", sequence_ordering)
        .eventually("inflightEmpty", inflight_empty)
        .eventually("allMessagesDelivered", move |w| all_messages_delivered(w, messages))
        .eventually("sequenceNumbersMatch", sequence_numbers_match)
        .sometimes("receiverDesynchronised", receiver_desynchronised)
}

/// The events of the sender's application routing its `messages` messages.
fn route_all(scenario: Scenario<MaceTransport>, messages: u8) -> Scenario<MaceTransport> {
    (0..messages).fold(scenario, |s, i| s.then(Event::Input { node: SENDER, input: Input::Route(i) }))
}

/// The first packet of the sender's connection with SYN identifier `syn`, carrying message 0
/// of `incarnation` (epoch 0), as it goes out before the sender has heard from the receiver.
pub fn syn_packet(syn: Syn, incarnation: u8) -> Msg {
    let payload = AppMsg { incarnation, epoch: 0, index: 0 };
    Msg::Data { seq: seq_base(syn) + 1, syn, synecho: 0, payload }
}

/// The named scenario `name` for an application that sends `messages` messages:
/// - `fig5`: Figure 5's start. The sender's first incarnation routed its messages and its SYN
///   packet (101) is in flight; the sender resets (this needs `resets` ≥ 1) and its new
///   incarnation routes its messages again, sending its SYN packet (201).
/// - `connected`: the sender routed its messages, the receiver accepted the SYN packet and
///   its ACK reached the sender, which sent the next packet: a connection established at both
///   ends.
pub fn scenario(name: &str, messages: u8) -> Option<Scenario<MaceTransport>> {
    match name {
        "fig5" => {
            let old = route_all(Scenario::new("fig5"), messages);
            Some(route_all(old.then(Event::Reset { node: SENDER }), messages))
        }
        "connected" => {
            let routed = route_all(Scenario::new("connected"), messages);
            let syn = syn_packet(1, 0);
            let ack = Msg::Ack { seq: seq_base(1) + 1 };
            Some(routed.then(Event::Deliver { from: SENDER, to: RECEIVER, msg: syn }).then(Event::Deliver {
                from: RECEIVER,
                to: SENDER,
                msg: ack,
            }))
        }
        _ => None,
    }
}

const PARAMS: &[Param] = &[
    Param { name: "messages", default: "2", help: "messages the sender's application sends (1 to 3)" },
    Param { name: "resets", default: "1", help: "resets of the sender (0 to 2)" },
    Param { name: "drops", default: "0", help: "packet losses (0 to 2)" },
];

const VARIANTS: &[Variant] = &[
    Variant {
        name: "dup-delivery",
        help: "MaceTransport 1: an unremembered SYN flag; a retransmitted SYN is delivered twice",
    },
    Variant {
        name: "stale-timer",
        help: "MaceTransport 2: a closed connection's retransmission timer fires into a new one",
    },
    Variant {
        name: "stale-syn",
        help: "MaceTransport 3 (Figure 5): no lastSyn; a stale SYN re-opens the receiver, a dead state",
    },
];

const SCENARIOS: &[ScenarioInfo] = &[
    ScenarioInfo {
        needs: &[],
        name: "fig5",
        help: "Figure 5's start: the old SYN in flight, the sender reset, the new incarnation's SYN sent",
    },
    ScenarioInfo {
        needs: &[],
        name: "connected",
        help: "a connection established: the SYN accepted and acknowledged, the next packet in flight",
    },
];

/// The model `settings` describe, with its protocol type (what the registry's `build` erases,
/// and what cluster mode needs).
///
/// # Errors
/// A [`crate::ConfigError`] for a bad parameter or an unknown scenario.
pub fn from_settings(settings: &Settings) -> Result<Model<MaceTransport>, crate::ConfigError> {
    let messages = settings.number("messages", 1..=3)? as u8;
    let resets = settings.number("resets", 0..=2)? as u32;
    let drops = settings.number("drops", 0..=2)? as u32;
    let bug = if settings.is("dup-delivery") {
        Bug::DupDelivery
    } else if settings.is("stale-timer") {
        Bug::StaleTimer
    } else if settings.is("stale-syn") {
        Bug::StaleSyn
    } else {
        Bug::None
    };
    let config = Config { messages, resets, drops, bug };
    crate::apply_scenario(model(config), settings, |name| scenario(name, messages))
}

fn build(settings: &Settings) -> Result<Box<dyn DynModel>, crate::ConfigError> {
    Ok(Box::new(from_settings(settings)?))
}

/// The registry entry.
pub fn system() -> System {
    System {
        name: "mace-transport",
        about: "Mace's reliable transport over UDP as MaceMC checked it: two nodes, reordering, resets",
        params: PARAMS,
        variants: VARIANTS,
        scenarios: SCENARIOS,
        build,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use foretell_check::{Check, Completion, LmcOptions, Report, Status};
    use foretell_model::Simulator;

    /// The default configuration with `bug`: two messages, one sender reset, no loss.
    fn config(bug: Bug) -> Config {
        Config { bug, ..Config::default() }
    }

    /// The smallest configuration: one message, no reset, no loss.
    fn smallest(bug: Bug) -> Config {
        Config { messages: 1, resets: 0, drops: 0, bug }
    }

    /// The depth the stale-timer counterexample needs from the initial world.
    const STALE_TIMER_DEPTH: usize = 14;

    fn bfs(model: &Model<MaceTransport>, depth: usize) -> Report {
        let report = Check::bfs(model).depth_max(depth).run();
        println!("{report}");
        report
    }

    /// Asserts that `property` is violated with a shortest trace of `steps` steps that replays.
    fn assert_found(model: &Model<MaceTransport>, report: &Report, property: &str, steps: usize) {
        let violation = report.assert_violated(property);
        println!("{}", violation.trace.to_text(false));
        assert_eq!(violation.trace.steps.len(), steps);
        Simulator::new(model).unwrap().replay(&violation.trace).expect("replays");
    }

    /// The safety properties hold, the local assertion never fails, and every liveness
    /// property holds in some world explored.
    fn assert_fixed_holds(report: &Report) {
        for property in ["retransmissionTimerScheduled", "noDuplicateDelivery", "sequenceOrdering"] {
            report.assert_holds(property);
        }
        for property in ["inflightEmpty", "allMessagesDelivered", "sequenceNumbersMatch"] {
            report.assert_covered(property);
        }
        assert!(report.violations.is_empty(), "{report}");
        assert_eq!(report.status("receiverDesynchronised"), Some(Status::NotCovered));
    }

    /// A scenario of the default configuration.
    fn named(name: &str) -> Scenario<MaceTransport> {
        scenario(name, Config::default().messages).expect("a known scenario")
    }

    fn deliver(from: NodeId, to: NodeId, msg: Msg) -> Event<Msg, Retransmission, Input> {
        Event::Deliver { from, to, msg }
    }

    /// Figure 5 up to the critical transition, under `stale-syn`: the new SYN (201) and then the
    /// stale one (101) reach the receiver, which re-opens its connection at 101.
    fn before_critical_transition() -> Scenario<MaceTransport> {
        named("fig5").then(deliver(SENDER, RECEIVER, syn_packet(2, 1))).then(deliver(
            SENDER,
            RECEIVER,
            syn_packet(1, 0),
        ))
    }

    /// Figure 5 past the critical transition: the ACK of 201 reaches the sender, which sends
    /// 202, and the receiver buffers it.
    fn dead_state() -> Scenario<MaceTransport> {
        let second = AppMsg { incarnation: 1, epoch: 0, index: 1 };
        before_critical_transition().then(deliver(RECEIVER, SENDER, Msg::Ack { seq: 201 })).then(deliver(
            SENDER,
            RECEIVER,
            Msg::Data { seq: 202, syn: 0, synecho: 0, payload: second },
        ))
    }

    /// The environment with reachability goals only: under `stale-syn` a live path may pass
    /// through a duplicate delivery, which would stop a search that checks the safety properties.
    fn goals(bug: Bug) -> Model<MaceTransport> {
        let messages = Config::default().messages;
        environment(config(bug))
            .sometimes("receiverDesynchronised", receiver_desynchronised)
            .sometimes("allMessagesDelivered", move |w| all_messages_delivered(w, messages))
            .sometimes("inflightEmpty", inflight_empty)
    }

    #[test]
    fn dup_delivery_is_found_and_replays() {
        let model = model(config(Bug::DupDelivery));
        let report = bfs(&model, STALE_TIMER_DEPTH);
        // Route, deliver the SYN, its timer fires, deliver the retransmitted SYN.
        assert_found(&model, &report, "noDuplicateDelivery", 4);
        assert_eq!(report.stats.unique_states, 14);
    }

    #[test]
    fn dup_delivery_needs_one_message_and_no_reset() {
        let model = model(smallest(Bug::DupDelivery));
        let report = bfs(&model, STALE_TIMER_DEPTH);
        assert_found(&model, &report, "noDuplicateDelivery", 4);
        assert_eq!(report.stats.unique_states, 9);
    }

    /// Local model checking finds it too, once a second copy of a message is allowed: the
    /// retransmission is a self-reference of the sender (its timer armed again as it was),
    /// which soundness verification takes. Before, it had no predecessor pointer, the
    /// retransmitted SYN no producer, and the violation was refuted. The fixed transport
    /// passes. Its receiver acknowledges every retransmitted copy again, staying as it was, and
    /// the sender counts the duplicate acknowledgements until the third sets off a fast
    /// retransmission; so with two copies a message the limit cuts the sender's states short
    /// (a third copy would reach a new one), and with four its set is closed: the copies beyond
    /// the limit (the sender retransmits forever) lead nowhere new, and the run is complete.
    #[test]
    fn dup_delivery_is_found_by_local_model_checking() {
        let options = LmcOptions { duplicates: 1, ..LmcOptions::default() };
        for messages in [1, 2] {
            let buggy = model(Config { messages, ..smallest(Bug::DupDelivery) });
            let report = Check::lmc(&buggy).lmc_options(options).run();
            println!("{report}");
            assert_found(&buggy, &report, "noDuplicateDelivery", 4);
        }
        for (duplicates, completion) in [(1, Completion::DepthBound), (3, Completion::Exhausted)] {
            let options = LmcOptions { duplicates, ..LmcOptions::default() };
            let report = Check::lmc(&model(smallest(Bug::None))).lmc_options(options).run();
            println!("{report}");
            for property in ["retransmissionTimerScheduled", "noDuplicateDelivery", "sequenceOrdering"] {
                report.assert_holds(property);
            }
            assert!(report.violations.is_empty(), "{report}");
            assert_eq!(report.completion, completion, "{report}");
            let stats = report.lmc.as_ref().expect("lmc statistics");
            assert!(stats.duplicates_suppressed > 0, "{report}");
        }
    }

    /// From the initial world: the first incarnation's SYN is accepted, the sender resets, the
    /// receiver buffers the new SYN on its stale connection, three retransmissions make it
    /// reset the connection, the sender closes it and opens the next one, and the closed
    /// connection's timer fires.
    #[test]
    fn stale_timer_is_found_and_replays() {
        let model = model(config(Bug::StaleTimer));
        let report = bfs(&model, STALE_TIMER_DEPTH);
        assert_found(&model, &report, STALE_TIMER_ASSERTION, 14);
        assert_eq!(report.stats.unique_states, 6_983);
    }

    #[test]
    fn stale_timer_needs_one_message_and_one_reset() {
        let model = model(Config { resets: 1, ..smallest(Bug::StaleTimer) });
        let report = bfs(&model, STALE_TIMER_DEPTH);
        assert_found(&model, &report, STALE_TIMER_ASSERTION, 13);
        assert_eq!(report.stats.unique_states, 1_151);
    }

    /// The fixed version within the bound both safety bugs need.
    #[test]
    fn fixed_version_holds_within_the_bug_bounds() {
        let report = bfs(&model(config(Bug::None)), STALE_TIMER_DEPTH);
        assert_fixed_holds(&report);
        assert_eq!(report.stats.unique_states, 7_857);
    }

    #[test]
    fn fixed_version_holds_with_a_loss() {
        let report = bfs(&model(Config { drops: 1, ..config(Bug::None) }), STALE_TIMER_DEPTH);
        assert_fixed_holds(&report);
        assert_eq!(report.stats.unique_states, 13_281);
    }

    /// The smallest configuration's state counts by depth (the space is infinite: every firing
    /// of a retransmission timer adds a copy of its packet to the network).
    #[test]
    fn smallest_configuration_state_counts() {
        for (depth, states) in [(6, 23), (8, 41), (10, 67), (12, 102)] {
            let report = bfs(&model(smallest(Bug::None)), depth);
            assert_fixed_holds(&report);
            assert_eq!(report.stats.unique_states, states, "depth {depth}");
        }
    }

    /// From Figure 5's start, four deliveries reach the dead state under `stale-syn`; the fixed
    /// version never reaches it.
    #[test]
    fn stale_syn_desynchronises_from_fig5() {
        let reach = |bug: Bug, depth: usize| {
            let report = bfs(&goals(bug).start_from(named("fig5")), depth);
            assert!(report.completion.is_complete(), "{report}");
            (report.status("receiverDesynchronised"), report.stats.unique_states)
        };
        assert_eq!(reach(Bug::StaleSyn, 3), (Some(Status::NotCovered), 25));
        assert_eq!(reach(Bug::StaleSyn, 4), (Some(Status::Covered), 53));
        assert_eq!(reach(Bug::None, 4), (Some(Status::NotCovered), 47));
        assert_eq!(reach(Bug::None, 10), (Some(Status::NotCovered), 1_093));
    }

    /// Figure 6's critical transition: before the sender receives the ACK of its new SYN, a
    /// retransmission of that SYN can still resynchronise the receiver; once the receiver holds
    /// the next packet on the stale connection, no world within 10 steps has the new
    /// incarnation's messages all delivered or the sender's window empty.
    #[test]
    fn stale_syn_critical_transition_is_the_ack_of_the_new_syn() {
        let live = bfs(&goals(Bug::StaleSyn).start_from(before_critical_transition()), 10);
        live.assert_covered("allMessagesDelivered").assert_covered("inflightEmpty");
        let dead = bfs(&goals(Bug::StaleSyn).start_from(dead_state()), 10);
        dead.assert_covered("receiverDesynchronised");
        assert_eq!(dead.status("allMessagesDelivered"), Some(Status::NotCovered));
        assert_eq!(dead.status("inflightEmpty"), Some(Status::NotCovered));
        assert!(dead.completion.is_complete(), "{dead}");
        assert_eq!(live.stats.unique_states, 1_439);
        assert_eq!(dead.stats.unique_states, 58);
    }

    /// The old design's other face: after the stale SYN re-opened the receiver's connection, a
    /// retransmission of the new SYN re-opens it again and delivers that message a second time.
    #[test]
    fn stale_syn_also_redelivers_from_fig5() {
        let model = model(config(Bug::StaleSyn)).start_from(named("fig5"));
        let report = bfs(&model, STALE_TIMER_DEPTH);
        // The five scenario steps, then four.
        assert_found(&model, &report, "noDuplicateDelivery", 9);
    }

    /// The final design recovers from the receiver's stale connection (the old incarnation's
    /// SYN first, the new one buffered): the fast reset closes both ends and the application
    /// sends again on a new connection.
    #[test]
    fn fixed_version_recovers_from_a_stale_receiver_connection() {
        let stale = named("fig5").then(deliver(SENDER, RECEIVER, syn_packet(1, 0))).then(deliver(
            SENDER,
            RECEIVER,
            syn_packet(2, 1),
        ));
        let report = bfs(&model(config(Bug::None)).start_from(stale), 12);
        assert_fixed_holds(&report);
        assert_eq!(report.stats.unique_states, 451);
    }

    #[test]
    fn fixed_version_recovers_from_fig5() {
        let report = bfs(&model(config(Bug::None)).start_from(named("fig5")), STALE_TIMER_DEPTH);
        assert_fixed_holds(&report);
        assert_eq!(report.stats.unique_states, 5_086);
    }

    #[test]
    fn scenarios_resolve_and_unknown_names_are_rejected() {
        for info in SCENARIOS {
            let model = model(Config::default()).start_from(named(info.name));
            Simulator::new(&model).unwrap_or_else(|e| panic!("{}: {e}", info.name));
        }
        let connected = model(config(Bug::None)).start_from(named("connected"));
        bfs(&connected, 2).assert_covered("allMessagesDelivered");
        assert!(scenario("nope", 2).is_none());
        let system = system();
        let settings = system.settings(None, &[]).unwrap();
        for info in SCENARIOS {
            let start = system.scenario_start(info.name).unwrap();
            let from = Settings { start: Some(start), ..settings.clone() };
            let model = system.build_model(&from).unwrap();
            assert_eq!(model.summary().start.as_deref(), Some(info.name));
        }
        assert!(matches!(system.scenario_start("nope"), Err(crate::ConfigError::UnknownScenario { .. })));
        let unknown = Settings { start: Some(crate::Start::Scenario("nope".into())), ..settings };
        assert!(matches!((system.build)(&unknown), Err(crate::ConfigError::UnknownScenario { .. })));
    }

    #[test]
    fn registry_builds_every_variant_and_rejects_bad_values() {
        let system = system();
        for variant in [None, Some("dup-delivery"), Some("stale-timer"), Some("stale-syn")] {
            let settings = system.settings(variant, &[]).unwrap();
            assert!((system.build)(&settings).is_ok(), "{variant:?}");
        }
        for (name, value) in [("messages", "0"), ("messages", "4"), ("resets", "3"), ("drops", "x")] {
            let settings = system.settings(None, &[(name.into(), value.into())]).unwrap();
            assert!(matches!((system.build)(&settings), Err(crate::ConfigError::BadValue { .. })), "{name}");
        }
    }
}
