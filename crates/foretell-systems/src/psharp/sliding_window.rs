//! Sliding Window: the SPIN "p5"-style go-back-N protocol between two symmetric peers, a
//! bug-free benchmark of FMCAD'17 "Lasso Detection using Partial-State Caching" (section VI,
//! Table II), ported from `shared/specs/psharp-benchmarks.md`, section 7.
//!
//! # Nodes
//! Nodes 0 and 1 are the `ChannelMachine`s (channels 1 and 2); node 2 is peer 1, which reads
//! channel 2 and writes channel 1, and node 3 is peer 2, which reads channel 1 and writes
//! channel 2. P#'s `Environment`, which creates the machines and wires them with
//! `SetInputOutput`, is the fixed layout: each peer starts sliding in [`Protocol::init`]. Every
//! node has a P# inbox ([`NetworkKind::FifoInbox`]).
//!
//! # Encoding
//! The peer's `SlidingWindow` entry action is an infinite loop whose iterations each contain a
//! scheduling point (a send). It is split into one step per iteration: the continuation timer
//! [`Timer::Continue`] is armed while the peer loops, and each firing runs one iteration. An
//! iteration either sends a frame (while fewer than `MaxSeq` are unacknowledged) or sends
//! `GetMessageReq` to its input channel and blocks in P#'s `Receive`: the peer is then
//! [`Control::Receiving`] with the timer disarmed, and the `GetMessageResp` handler finishes the
//! iteration and re-arms the timer. Nothing but that reply is ever sent to a peer, so no event
//! needs deferring. SPIN's `timeout` has no P# equivalent and is the constant `false`, so the
//! go-back-N retransmission branch (taken on an empty channel when `timeout` holds) never runs
//! and is left out: an empty channel means "poll again". The channel's `GetMessageReq(sender)`
//! answers the sender of the request. P#'s unhandled-event error is the local assertion
//! `"unhandled event"`.
//!
//! # Phases
//! [`Protocol::phase`] is the control location: the channel's one state, and the peer looping
//! or blocked in `Receive`. Sequence numbers, counts and channel contents are left out.
//!
//! # Monitor
//! [`LivenessMonitor`] is the spec's, fed from the peers' steps: a step that sends a frame is
//! `NotifyMessageSent(NextFrame)`, and a reply whose frame is the expected one is
//! `NotifyMessageReceived(s)` with the frame's acknowledgement `s`, as the P# code passes it.
//! It flips between hot and cold on every send. Its `SentMessages` list, which the spec would
//! leave out of a partial hash, is part of every hash here (monitor states always are); that
//! changes nothing, because the list stops growing after the tenth send (no frame is ever
//! retransmitted) and so takes finitely many values.
//!
//! # Behaviour
//! Each peer sends its frames 0 to 4 with acknowledgement 5 before it reads anything, then
//! accepts the other's frames; acknowledgement 5 never lies in `[AckExp, NextFrame) = [0, 5)`,
//! so the window never slides and both peers poll empty channels forever. After the tenth send
//! the monitor is cold, so those polling cycles are cold: there is no liveness bug.

use foretell_model::{
    Event, Model, Monitor, NetworkKind, NodeId, Observation, Out, Protocol, Temperature, World,
};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Channel 1, written by peer 1 and read by peer 2.
pub const CHANNEL_1: NodeId = NodeId(0);
/// Channel 2, written by peer 2 and read by peer 1.
pub const CHANNEL_2: NodeId = NodeId(1);
/// Peer 1.
pub const PEER_1: NodeId = NodeId(2);
/// Peer 2.
pub const PEER_2: NodeId = NodeId(3);

/// A peer's input and output channels.
fn channels(peer: NodeId) -> (NodeId, NodeId) {
    if peer == PEER_1 {
        (CHANNEL_2, CHANNEL_1)
    } else {
        (CHANNEL_1, CHANNEL_2)
    }
}

/// A data frame with a piggy-backed acknowledgement: P#'s `Message(NextFrame, FrameExp)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// The frame's sequence number.
    pub seq: u8,
    /// The acknowledgement: the last frame the sender accepted.
    pub ack: u8,
}

/// Where a peer's loop is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Control {
    /// Looping: the next iteration runs when [`Timer::Continue`] fires.
    Sliding,
    /// Blocked in `Receive(GetMessageResp)`.
    Receiving,
}

/// A peer's fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Peer {
    /// Where its loop is.
    pub control: Control,
    /// `NextFrame`: the sequence number of the next frame to send.
    pub next_frame: u8,
    /// `AckExp`: the oldest unacknowledged frame.
    pub ack_expected: u8,
    /// `FrameExp`: the frame it accepts next.
    pub frame_expected: u8,
    /// `nbuf`: how many frames are unacknowledged.
    pub buffered: u8,
}

/// A node's local state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum State {
    /// A `ChannelMachine`: the frames in it, oldest first.
    Channel(VecDeque<Frame>),
    /// A `P5` peer.
    Peer(Peer),
}

/// A message (P# event).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Msg {
    /// `Message`: a peer puts a frame in its output channel.
    Message(Frame),
    /// `GetMessageReq`: a peer asks its input channel for the oldest frame.
    GetMessageReq,
    /// `GetMessageResp`: the channel's oldest frame, or `None` if it is empty.
    GetMessageResp(Option<Frame>),
}

/// The peer's loop continuation.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Timer {
    /// Runs the loop's next iteration.
    Continue,
}

/// The benchmark's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// `MaxSeq`: the window size; sequence numbers are modulo `max_seq + 1`.
    pub max_seq: u8,
}

impl Default for Config {
    /// The benchmark's `MaxSeq = 5` (sequence numbers modulo 6).
    fn default() -> Self {
        Config { max_seq: 5 }
    }
}

/// The sliding-window protocol.
pub struct SlidingWindow {
    /// `MaxSeq`.
    pub max_seq: u8,
}

/// What the benchmark is.
pub const ABOUT: &str =
    "P# Sliding Window: SPIN's p5 go-back-N between two peers; no bug, its polling cycles are cold";

/// The model: 2 channels and 2 peers on P# inboxes, with the liveness monitor and the invariant
/// `"window"` (each peer's `nbuf` counts exactly its frames from `AckExp` to `NextFrame`, at
/// most `MaxSeq`).
///
/// # Panics
/// If `config.max_seq` is not in `1..=127` (no window, or sums of sequence numbers that
/// overflow a `u8`).
pub fn model(config: &Config) -> Model<SlidingWindow> {
    assert!((1..=127).contains(&config.max_seq), "MaxSeq must be in 1..=127");
    let protocol = SlidingWindow { max_seq: config.max_seq };
    let modulus = protocol.modulus();
    let max_seq = config.max_seq;
    let window = move |world: &World<SlidingWindow>| {
        world.states().all(|state| match state {
            State::Channel(_) => true,
            State::Peer(peer) => {
                let outstanding = (peer.next_frame + modulus - peer.ack_expected) % modulus;
                peer.buffered == outstanding && peer.buffered <= max_seq
            }
        })
    };
    Model::new(protocol)
        .nodes(4)
        .network(NetworkKind::FifoInbox)
        .monitor(LivenessMonitor)
        .always("window", window)
}

impl SlidingWindow {
    /// The sequence-number modulus, `MaxSeq + 1`.
    fn modulus(&self) -> u8 {
        self.max_seq + 1
    }

    /// Whether `b` lies in the circular interval `[a, c)` of sequence numbers: it is fewer
    /// steps from `a` than `c` is.
    fn between(&self, a: u8, b: u8, c: u8) -> bool {
        let m = self.modulus();
        (b + m - a) % m < (c + m - a) % m
    }

    /// One loop iteration: send the next frame if the window has room, otherwise ask the input
    /// channel for a frame and block until it answers.
    fn iterate(&self, me: NodeId, peer: &mut Peer, out: &mut Out<'_, Self>) {
        let (input, output) = channels(me);
        if peer.buffered < self.max_seq {
            peer.buffered += 1;
            let ack = (peer.frame_expected + self.max_seq) % self.modulus();
            out.send(output, Msg::Message(Frame { seq: peer.next_frame, ack }));
            peer.next_frame = (peer.next_frame + 1) % self.modulus();
            out.set_timer(Timer::Continue, 0);
        } else {
            out.send(input, Msg::GetMessageReq);
            peer.control = Control::Receiving;
        }
    }

    /// The rest of the iteration once the channel answered: accept the expected frame, slide
    /// the window over what it acknowledges, then loop. An empty channel (`None`) means "poll
    /// again", `timeout` being false.
    fn received(&self, peer: &mut Peer, reply: Option<Frame>, out: &mut Out<'_, Self>) {
        if let Some(frame) = reply {
            if frame.seq == peer.frame_expected {
                peer.frame_expected = (peer.frame_expected + 1) % self.modulus();
            }
            while self.between(peer.ack_expected, frame.ack, peer.next_frame) {
                peer.buffered -= 1;
                peer.ack_expected = (peer.ack_expected + 1) % self.modulus();
            }
        }
        peer.control = Control::Sliding;
        out.set_timer(Timer::Continue, 0);
    }
}

impl Protocol for SlidingWindow {
    type State = State;
    type Msg = Msg;
    type Timer = Timer;
    type Input = ();

    /// Channels start empty; a peer starts its loop (`StartSliding`) with every counter at 0.
    fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> State {
        if me == CHANNEL_1 || me == CHANNEL_2 {
            return State::Channel(VecDeque::new());
        }
        out.set_timer(Timer::Continue, 0);
        State::Peer(Peer {
            control: Control::Sliding,
            next_frame: 0,
            ack_expected: 0,
            frame_expected: 0,
            buffered: 0,
        })
    }

    fn on_message(&self, _: NodeId, state: &mut State, from: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
        match (state, msg) {
            (State::Channel(frames), Msg::Message(frame)) => frames.push_back(*frame),
            (State::Channel(frames), Msg::GetMessageReq) => {
                out.send(from, Msg::GetMessageResp(frames.pop_front()));
            }
            (State::Peer(peer), Msg::GetMessageResp(reply)) if peer.control == Control::Receiving => {
                self.received(peer, *reply, out);
            }
            _ => out.require(false, "unhandled event"),
        }
    }

    fn on_timer(&self, me: NodeId, state: &mut State, _: &Timer, out: &mut Out<'_, Self>) {
        match state {
            State::Peer(peer) if peer.control == Control::Sliding => self.iterate(me, peer, out),
            _ => out.require(false, "the loop continues only while it runs"),
        }
    }

    fn phase(&self, state: &State) -> u64 {
        match state {
            State::Channel(_) => 0,
            State::Peer(Peer { control: Control::Sliding, .. }) => 1,
            State::Peer(Peer { control: Control::Receiving, .. }) => 2,
        }
    }
}

/// The liveness monitor's P# states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Delivery {
    /// `MessageReceived` (cold).
    Received,
    /// `MessageSent` (hot).
    Sent,
}

/// The liveness monitor's state: its P# state and its `SentMessages` list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeliveryState {
    /// The P# state.
    pub delivery: Delivery,
    /// `SentMessages`: the sequence numbers of the frames sent, in order.
    pub sent: Vec<u8>,
}

/// The spec's liveness monitor: hot and cold in turn on every send; a receipt while hot removes
/// the notified number from the list and cools it when the list empties.
pub struct LivenessMonitor;

impl LivenessMonitor {
    /// `NotifyMessageSent(frame)`.
    fn message_sent(monitor: &mut DeliveryState, frame: u8) {
        monitor.sent.push(frame);
        monitor.delivery = match monitor.delivery {
            Delivery::Received => Delivery::Sent,
            Delivery::Sent => Delivery::Received,
        };
    }

    /// `NotifyMessageReceived(frame)`.
    fn message_received(monitor: &mut DeliveryState, frame: u8) {
        if monitor.delivery == Delivery::Sent {
            if let Some(at) = monitor.sent.iter().position(|&f| f == frame) {
                monitor.sent.remove(at);
            }
            if monitor.sent.is_empty() {
                monitor.delivery = Delivery::Received;
            }
        }
    }
}

impl Monitor<SlidingWindow> for LivenessMonitor {
    type State = DeliveryState;

    fn name(&self) -> &str {
        "LivenessMonitor"
    }

    fn init(&self, _: &World<SlidingWindow>) -> DeliveryState {
        DeliveryState { delivery: Delivery::Received, sent: Vec::new() }
    }

    fn observe(&self, monitor: &mut DeliveryState, step: &Observation<'_, SlidingWindow>) {
        match step.event {
            Event::Timer { .. } => {
                for (_, msg) in step.sent {
                    if let Msg::Message(frame) = msg {
                        Self::message_sent(monitor, frame.seq);
                    }
                }
            }
            Event::Deliver { to, msg: Msg::GetMessageResp(Some(frame)), .. } => {
                if let State::Peer(peer) = step.before.state(*to) {
                    if frame.seq == peer.frame_expected {
                        Self::message_received(monitor, frame.ack);
                    }
                }
            }
            _ => {}
        }
    }

    fn temperature(&self, monitor: &DeliveryState) -> Temperature {
        match monitor.delivery {
            Delivery::Received => Temperature::Cold,
            Delivery::Sent => Temperature::Hot,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::psharp::script::{deliver, timer as iterate, Rng, Script};
    use foretell_check::{Check, Completion};

    fn peer(world: &World<SlidingWindow>, node: NodeId) -> Peer {
        match world.state(node) {
            State::Peer(peer) => peer.clone(),
            other => panic!("{node} is {other:?}"),
        }
    }

    /// One poll of peer `node`: it asks its input channel, the channel answers, the peer
    /// handles the answer. The temperature after each of the three steps.
    fn poll(script: &mut Script<'_, SlidingWindow>, node: NodeId) -> [Temperature; 3] {
        let (input, _) = channels(node);
        let asked = script.step(iterate(node)).temperature();
        let answered = script.step(deliver(input)).temperature();
        let handled = script.step(deliver(node)).temperature();
        [asked, answered, handled]
    }

    /// The spec's behaviour step by step: each peer sends frames 0 to 4 with acknowledgement 5
    /// (each one appended to its output channel), the monitor turning hot and cold in turn and
    /// cold after the tenth send; each peer then accepts the other's five frames without its
    /// window sliding; from there one round of polling (each peer polls its empty channel once)
    /// returns to the very same world, cold throughout and fair: the cycle is found but is not
    /// a liveness violation.
    #[test]
    fn ten_sends_then_cold_polling_forever() {
        let model = model(&Config::default());
        let mut script = Script::new(&model);
        let mut sends = 0;
        for node in [PEER_1, PEER_2] {
            for seq in 0..5 {
                script.step(iterate(node));
                sends += 1;
                let hot = if sends % 2 == 1 { Temperature::Hot } else { Temperature::Cold };
                assert_eq!(script.temperature(), hot, "after send {sends}");
                script.step(deliver(channels(node).1));
                let frames: VecDeque<Frame> = (0..=seq).map(|seq| Frame { seq, ack: 5 }).collect();
                assert_eq!(*script.world.state(channels(node).1), State::Channel(frames));
            }
        }
        for node in [PEER_1, PEER_2] {
            for _ in 0..5 {
                assert_eq!(poll(&mut script, node), [Temperature::Cold; 3]);
            }
            let done = Peer {
                control: Control::Sliding,
                next_frame: 5,
                ack_expected: 0,
                frame_expected: 5,
                buffered: 5,
            };
            assert_eq!(peer(&script.world, node), done, "every frame accepted, none acknowledged");
        }

        script.assert_fair_cycle(|script| {
            for node in [PEER_1, PEER_2] {
                assert_eq!(poll(script, node), [Temperature::Cold; 3]);
            }
        });
    }

    /// Every execution, run to its end (it polls forever, so cut at 500 steps) in 300 random
    /// schedules, holds its assertions, makes exactly 10 sends, and is cold from the tenth send
    /// on; it ends polling empty channels with every frame accepted.
    #[test]
    fn every_execution_ends_polling_cold() {
        let model = model(&Config::default());
        let mut script = Script::new(&model);
        let mut rng = Rng::new(0x2545_f491_4f6c_dd1d);
        for run in 0..300 {
            script.reset();
            let mut sends = 0;
            for _ in 0..500 {
                let record = script.random_step(&mut rng).expect("a peer can always poll");
                sends += record.sent.iter().filter(|(_, msg)| matches!(msg, Msg::Message(_))).count();
                if sends == 10 {
                    assert_eq!(script.temperature(), Temperature::Cold, "run {run}");
                }
            }
            assert_eq!(sends, 10, "run {run}");
            for node in [PEER_1, PEER_2] {
                assert_eq!(peer(&script.world, node).frame_expected, 5, "run {run}");
            }
            for channel in [CHANNEL_1, CHANNEL_2] {
                assert_eq!(*script.world.state(channel), State::Channel(VecDeque::new()), "run {run}");
            }
        }
    }

    /// Breadth-first search exhausts the finite state space (7,689 worlds): no assertion fails
    /// and the window invariant holds everywhere.
    #[test]
    fn bfs_finds_no_failure() {
        let model = model(&Config::default());
        let report = Check::bfs(&model).run();
        report.assert_holds("window");
        assert!(report.violations.is_empty(), "{report}");
        assert_eq!(report.completion, Completion::Exhausted);
        assert_eq!(report.stats.unique_states, 7_689);
    }
}
