//! RandTree, Mace's random overlay tree (spec section 3, from `RandTree.mac` at Mace r1116), as
//! MaceMC (NSDI'07, section 7.3) and CrystalBall (NSDI'09, sections 1.2 and 4.2.1) checked it,
//! with its documented bugs as variants.
//!
//! Nodes build one tree of bounded degree ([`MAX_CHILDREN`] children, 2 as in MaceMC's harness)
//! whose root should end up being the lowest node id. A node joins by sending `Join` to a peer;
//! a non-root forwards it to its root; a root accepts the node as a child if it has room,
//! otherwise it redirects the request to a random child (an [`Out::choose`]). A joining node
//! with a lower id than the root it asks is told to be the root (`ROOT_FORCE`) and the old root
//! joins under it. The root tells its children their siblings (`update_siblings`); a recurring
//! recovery timer probes peers outside the node's own neighbourhood so that separate trees learn
//! of each other and merge under the lower root (`probe`, `probe_join`); a broken connection to
//! a child removes it, one to the parent makes the node rejoin (at the root, or, when the parent
//! was the root, at the lowest sibling, which becomes the root if it is the node itself).
//!
//! Mapping onto foretell: `maceInit` is [`Protocol::init`] (a reset restarts through it, as
//! `maceReset` did); `joinOverlay` is the [`Input::JoinOverlay`] startup input (MaceMC's
//! `SimTreeApp`, given again after a reset); each `deliver` transition is a case of
//! [`Protocol::on_message`], tried in the file's order, and a message whose guards all fail is
//! dropped, as Mace drops it; the `join` (plain) and `recovery` (`recur`) timers are [`Timer`]s;
//! the transport's `error` upcall is [`Protocol::on_transport_error`].
//!
//! Environment: MaceMC's simulated TCP ([`NetworkKind::FifoChannels`]): FIFO per channel; a
//! reset node's peers see a transport error and the messages between them are lost; the
//! `resets` budget (default 1) and the `socket-errors` budget (bidirectional socket errors,
//! default 0). The `errors` parameter orders a transport error with later messages:
//! [`ErrorOrder::Queued`] (the default, as `SimulatorTCP.cc`: the error arrives before anything
//! the reset node's new incarnation sends) or [`ErrorOrder::Independent`] (real TCP, where the
//! new incarnation reconnects on a new connection). Under `independent` the fixed version is not
//! live with a reset: a peer can hear from the new incarnation, take it back as a child, and
//! only then handle the old connection's error, which removes the child for good. The `topology` parameter says whom each node's `joinOverlay` names: `next-node`
//! (MaceMC's `NEXT_NODE`, the default: node *i* joins through node *(i+1) mod n*) or `lone-root`
//! (node 0 gets an empty peer set and every other node joins through it), which the
//! `empty-peers` bug needs.
//!
//! Properties, as named in `RandTree.mac`: `always` `noLoops` (every parent chain reaches a root
//! or a node that is not joined), `joinedOrNullParent` (a joined node is a root or has a
//! parent), `timers` (a node not in init has its recovery timer armed), and CrystalBall's
//! `childrenSiblingsDisjoint` (no node's children meet its siblings); `eventually` `allJoined`,
//! `oneRoot`, `kidsMatch` (parent and child pointers agree), `rootMatch` and `siblingsMatch`.
//!
//! Variants (the fixed version is the default):
//! - `update-sibling` (CrystalBall, section 1.2, Figure 2): accepting a child leaves it among the
//!   siblings, and a node adopts a sibling list as its parent sent it, its own children
//!   included. In the paper a child n13 of n9 resets and rejoins directly under the root n1,
//!   whose `UpdateSibling` makes n9 list n13 as both child and sibling. The fix drops a new
//!   child from the siblings and filters the node's own children out of every sibling list it
//!   adopts: from `update_siblings` and also from the `JoinReply` that accepts it, because BFS
//!   finds an 11-step path from the initial world, with no reset, where a node accepted under
//!   the root receives its own child in the reply's sibling list (CrystalBall reports variants
//!   of the bug whose fixes touch other handlers; this is one).
//! - `recovery-timer` (MaceMC's RT3, the liveness bug of the paper's introduction): the
//!   recovery timer is re-armed only by its `joined` transition, so when it fires while the
//!   node is joining it is lost, the node never probes again and separate trees never merge.
//!   The firing while joining is the critical transition; it violates `timers` at once. The fix
//!   is Mace's `recur` timer, re-armed whether or not a transition fires.
//! - `empty-peers`: `joinOverlay` with no peers makes the node a joined root without arming the
//!   recovery timer (r1116), violating `timers`; the 2011 version arms it in both branches (and
//!   guards the recovery transition with a non-empty peer set, which every variant here uses).
//!   It needs `topology=lone-root`.
//! - `remove-while-joining` (RT10): the `remove` transition's guard is `state == joined` instead
//!   of "the sender is a child", so a parent that is busy joining drops its child's `remove` and
//!   keeps the child forever (the old body's `ASSERT` on a `remove` from a non-child is not
//!   encoded). In this encoding it is a liveness bug only: a stale child breaks no safety
//!   property here (no parent pointer changes, and siblings never take in children), so it
//!   shows as `kidsMatch` never holding again unless a fault breaks the connection. The
//!   `rt10` scenario ends with the `remove` reaching the parent while it is joining; without
//!   faults, no world within 16 steps of it has `kidsMatch` under the bug, while the fixed
//!   version has it at once.
//!
//! - `early-join-reply` (RT13, the MaceMC paper's section 6 case study): a node's `Join`,
//!   forwarded to the root, is accepted after the node has reset, and the acceptance reaches it
//!   back in init, where r1116 ignores it: the root keeps a child that does not know it
//!   (`kidsMatch` never holds again). The paper's fix, a `remove` in reply, is commented out in
//!   r1116; the fixed version has it.
//! - `adopt-child` (found by foretell's liveness walks, not in the papers): a joining node takes
//!   as its parent a node it lists as its own child, from a stale acceptance (the node had also
//!   been accepted elsewhere). When that node later loses its own parent to a reset, it takes a
//!   stale acceptance from the first, and each is the other's parent (`noLoops`, 4 nodes, the
//!   `stale-accept` scenario). r1116's `joinReply` has no guard against it; the fix declines
//!   such an acceptance with a `remove`.
//!
//! RT11 and RT14 (a `probe` or `probe_join` taking a node out of init with no recovery timer)
//! are fixed in r1116 by the `state != init` guards, which every variant keeps.
//!
//! Scenarios: `fig2` (CrystalBall's Figure 2, first row, on three nodes: n1, n9, n13 are nodes
//! 0, 1, 2; the tree 0 → 1 → 2, node 2 having joined under node 1 before node 0 took over as
//! root), `joined` (every node joined under node 0, the network empty: a live world, for two or
//! three nodes), `rt10` and `stale-accept` (four nodes); each is the list of events of a path
//! checked in the tests.
//!
//! Simplified: the application's verification upcall always accepts, so `UNAUTHORIZED` is never
//! sent, and `UNREACHABLE` is sent by no one; `rejoin` is sent by no handler; the upcalls to the
//! application and the debugging `printer` timer are left out; Mace's `ASSERT`s inside handlers
//! are not encoded (RT15-17 are separate bugs), except that the join timer's search for a peer
//! that is not a child, an endless loop in Mace when every peer is a child (RT1's divergence),
//! gives up after one round and violates the local assertion `joinTimerFindsPeer` (never reached
//! in the searches of the tests). Sends never fail: MaceMC's bounded TCP queues (RT12) are not
//! modelled. Time is abstract: an armed timer may fire at any point.

use crate::{apply_scenario, ConfigError, Param, ScenarioInfo, Settings, Start, System, Variant};
use foretell_check::DynModel;
use foretell_model::{
    Budget, Driver, ErrorOrder, Event, EventOf, Faults, Model, NetworkKind, NodeId, Out, Protocol, Scenario,
    World,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// The most children a node accepts (`MAX_CHILDREN`: 12 in RandTree, 2 in MaceMC's harness).
pub const MAX_CHILDREN: usize = 2;

/// Where a node is in joining the overlay (Mace's `state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    /// Initialised, `joinOverlay` not yet called.
    Init,
    /// Looking for a parent.
    Joining,
    /// In a tree, as its root or under a parent.
    Joined,
}

/// A node's state (Mace's state variables).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// `init`, `joining` or `joined`.
    pub phase: Phase,
    /// The root of the node's tree, as far as it knows (itself when it thinks it is root).
    pub root: NodeId,
    /// The parent; `None` for a root or a node not in a tree.
    pub parent: Option<NodeId>,
    /// The children.
    pub children: BTreeSet<NodeId>,
    /// The siblings: the parent's children as last reported, the node itself included (the
    /// fix leaves the node's own children out).
    pub siblings: BTreeSet<NodeId>,
    /// The parent's children exactly as last reported, so that the fix can give back a sibling
    /// it left out while that node was still a child here.
    pub reported: BTreeSet<NodeId>,
    /// The known nodes: bootstrap candidates and probe targets.
    pub peers: BTreeSet<NodeId>,
    /// The peer the node last sent a `Join` to from its peer set.
    pub bootstrap: Option<NodeId>,
    /// The peer the recovery timer probed last.
    pub last_probed: Option<NodeId>,
}

impl State {
    /// Whether the node believes it is the root of its tree.
    fn is_root(&self, me: NodeId) -> bool {
        self.root == me
    }
}

/// The status a `JoinReply` carries. RandTree also defines `UNREACHABLE` (never sent) and
/// `UNAUTHORIZED` (sent only when the application vetoes a join, which the MaceMC harness never
/// does), so they are left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JoinStatus {
    /// The sender took the joining node as a child.
    Accepted,
    /// The joining node has a lower id than the receiving root: it is to be the root.
    RootForce,
    /// The joining node is the receiver's root: it stays root.
    LoopError,
}

/// RandTree's messages (`rejoin` is declared in RandTree but sent by no handler, so it is left
/// out).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Msg {
    /// A join request for `source`, redirected down the tree by `redirected_by` (a root).
    Join {
        /// The joining node.
        source: NodeId,
        /// The root that redirected it to a child, if any.
        redirected_by: Option<NodeId>,
    },
    /// The answer to a join request.
    JoinReply {
        /// The outcome.
        status: JoinStatus,
        /// The root the joining node is to adopt.
        root: NodeId,
        /// The sender's children (the joining node's new siblings) when accepted.
        siblings: BTreeSet<NodeId>,
    },
    /// A child asks its parent to forget it.
    Remove,
    /// A parent tells a child the root and its siblings.
    UpdateSiblings {
        /// The root.
        root: NodeId,
        /// The sender's children.
        siblings: BTreeSet<NodeId>,
    },
    /// A recovery probe: the sender's root.
    Probe {
        /// The sender's root.
        root: NodeId,
    },
    /// Tells a root about a tree with a lower root, which it should join.
    ProbeJoin {
        /// The lower root.
        root: NodeId,
    },
    /// A parent tells its children the root changed.
    NewRoot {
        /// The new root.
        root: NodeId,
    },
}

/// RandTree's timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Timer {
    /// Retries a join with the next peer (a plain timer).
    Join,
    /// Probes a peer to merge trees (a `recur` timer in the fixed version).
    Recovery,
}

/// The application's input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Input {
    /// `joinOverlay(peers)`: join the overlay through these peers.
    JoinOverlay(BTreeSet<NodeId>),
}

/// The bug variants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Bug {
    /// The fixed protocol.
    #[default]
    None,
    /// CrystalBall's children/siblings bug: accepting a child keeps it among the siblings, and
    /// a sibling list is adopted as sent, own children included.
    UpdateSibling,
    /// RT3: the recovery timer is a plain timer, lost when it fires while the node is joining.
    RecoveryTimer,
    /// `joinOverlay` with no peers makes the node a root without arming the recovery timer.
    EmptyPeers,
    /// RT10: a `remove` is accepted only while joined, so a joining parent ignores it.
    RemoveWhileJoining,
    /// RT13: a `JoinReply(ACCEPTED)` reaching a node back in init is ignored, so the node that
    /// accepted a previous incarnation keeps it as a child.
    EarlyJoinReply,
    /// A joining node takes as its parent a node it lists as its own child (r1116, found by
    /// foretell): after a reset, two nodes can be each other's parent.
    AdoptChild,
}

/// The protocol.
#[derive(Clone, Debug)]
pub struct RandTree {
    bug: Bug,
}

/// The element of `set` after `after` (cyclically), or its first if `after` is not in it
/// (RandTree's `findNextInSet`); `None` if `set` is empty.
fn next_in(set: &BTreeSet<NodeId>, after: Option<NodeId>) -> Option<NodeId> {
    let first = set.iter().next().copied();
    match after {
        Some(after) if set.contains(&after) => set.range(after..).nth(1).copied().or(first),
        _ => first,
    }
}

impl RandTree {
    /// The protocol with `bug` (or none).
    pub fn new(bug: Bug) -> Self {
        RandTree { bug }
    }

    /// Sends `update_siblings(root, children)` to every child (`updateChildSiblings`).
    fn update_child_siblings(s: &State, out: &mut Out<'_, Self>) {
        let msg = Msg::UpdateSiblings { root: s.root, siblings: s.children.clone() };
        out.broadcast(s.children.iter().copied(), msg);
    }

    /// Sends `new_root(root)` to every child (`multicastNewRoot`).
    fn multicast_new_root(s: &State, out: &mut Out<'_, Self>) {
        out.broadcast(s.children.iter().copied(), Msg::NewRoot { root: s.root });
    }

    /// Adopts a sibling list from the parent; the fix leaves its own children out.
    fn adopt_siblings(&self, s: &mut State, siblings: &BTreeSet<NodeId>) {
        s.reported.clone_from(siblings);
        s.siblings.clone_from(siblings);
        self.refresh_siblings(s);
    }

    /// The fix keeps the siblings the parent's last report less the node's own children, also
    /// when a child comes or goes: a node that stops being a child here and is the parent's
    /// child is a sibling again (without this, a sibling left out while it was still a child
    /// here is lost for good when the parent sends no new report, and `siblingsMatch` never
    /// holds again).
    fn refresh_siblings(&self, s: &mut State) {
        if self.bug != Bug::UpdateSibling {
            s.siblings = s.reported.difference(&s.children).copied().collect();
        }
    }

    /// Becomes `joining` and sends a join request to `target`, which joins the peer set.
    fn join_via(me: NodeId, s: &mut State, target: NodeId, out: &mut Out<'_, Self>) {
        s.phase = Phase::Joining;
        s.peers.insert(target);
        s.bootstrap = Some(target);
        out.send(target, Msg::Join { source: me, redirected_by: None });
        out.set_timer(Timer::Join, 5_000);
    }

    /// Joins through the first peer and arms both timers (`joinOverlay` with peers).
    fn start_joining(me: NodeId, s: &mut State, out: &mut Out<'_, Self>) {
        let Some(first) = s.peers.iter().next().copied() else { return };
        s.bootstrap = Some(first);
        s.last_probed = Some(first);
        out.send(first, Msg::Join { source: me, redirected_by: None });
        out.set_timer(Timer::Join, 5_000);
        out.set_timer(Timer::Recovery, 10_000);
    }

    /// `joinOverlay(peers)`.
    fn join_overlay(&self, me: NodeId, s: &mut State, peers: &BTreeSet<NodeId>, out: &mut Out<'_, Self>) {
        if s.phase == Phase::Init {
            s.peers = peers.iter().copied().filter(|p| *p != me).collect();
            s.parent = None;
            if s.peers.is_empty() {
                s.phase = Phase::Joined;
                if self.bug != Bug::EmptyPeers {
                    out.set_timer(Timer::Recovery, 10_000);
                }
            } else {
                s.phase = Phase::Joining;
                Self::start_joining(me, s, out);
            }
        } else {
            let was_empty = s.peers.is_empty();
            s.peers.extend(peers.iter().copied().filter(|p| *p != me));
            if was_empty && !s.peers.is_empty() {
                Self::start_joining(me, s, out);
            }
        }
    }

    /// A join request for `source`, redirected by `redirected_by`.
    fn on_join(
        &self,
        me: NodeId,
        s: &mut State,
        source: NodeId,
        redirected_by: Option<NodeId>,
        out: &mut Out<'_, Self>,
    ) {
        if s.phase == Phase::Init {
            return;
        }
        if !s.is_root(me) && source != s.root && redirected_by != Some(s.root) {
            out.send(s.root, Msg::Join { source, redirected_by: None });
            return;
        }
        if source == s.root {
            let reply =
                Msg::JoinReply { status: JoinStatus::LoopError, root: s.root, siblings: BTreeSet::new() };
            out.send(source, reply);
            return;
        }
        if source < me && s.is_root(me) {
            let reply =
                Msg::JoinReply { status: JoinStatus::RootForce, root: source, siblings: BTreeSet::new() };
            out.send(source, reply);
            Self::join_via(me, s, source, out);
            return;
        }
        if !s.children.contains(&source) && s.children.len() < MAX_CHILDREN {
            self.accept_child(me, s, source, out);
        } else if !s.children.contains(&source) {
            let children: Vec<NodeId> = s.children.iter().copied().collect();
            if let Some(&child) = out.choose_from(&children) {
                out.send(child, Msg::Join { source, redirected_by: Some(s.root) });
            }
        }
    }

    /// Takes `child` as a child; the fix also drops it from the siblings.
    fn accept_child(&self, me: NodeId, s: &mut State, child: NodeId, out: &mut Out<'_, Self>) {
        s.children.insert(child);
        self.refresh_siblings(s);
        let reply =
            Msg::JoinReply { status: JoinStatus::Accepted, root: s.root, siblings: s.children.clone() };
        out.send(child, reply);
        if s.is_root(me) {
            s.phase = Phase::Joined;
            out.cancel_timer(&Timer::Join);
            Self::update_child_siblings(s, out);
        }
    }

    /// A reply to this node's join request.
    fn on_join_reply(
        &self,
        s: &mut State,
        from: NodeId,
        status: JoinStatus,
        root: NodeId,
        siblings: &BTreeSet<NodeId>,
        out: &mut Out<'_, Self>,
    ) {
        match (s.phase, status) {
            // The fix of `adopt-child`: an acceptance from one's own child (sent before that node
            // joined elsewhere) is declined, or the two could end up each other's parent.
            (Phase::Joining, JoinStatus::Accepted)
                if s.children.contains(&from) && self.bug != Bug::AdoptChild =>
            {
                out.send(from, Msg::Remove)
            }
            (Phase::Joining, JoinStatus::Accepted) => {
                s.root = root;
                self.adopt_siblings(s, siblings);
                s.parent = Some(from);
                s.phase = Phase::Joined;
                out.cancel_timer(&Timer::Join);
                Self::multicast_new_root(s, out);
                Self::update_child_siblings(s, out);
            }
            (Phase::Joining, JoinStatus::LoopError | JoinStatus::RootForce) => {
                s.phase = Phase::Joined;
                out.cancel_timer(&Timer::Join);
            }
            (Phase::Joined, JoinStatus::Accepted) if s.parent != Some(from) => out.send(from, Msg::Remove),
            // The MaceMC paper's fix of RT13 (commented out in r1116): an acceptance of a Join
            // that a previous incarnation sent is answered with a remove.
            (Phase::Init, JoinStatus::Accepted) if self.bug != Bug::EarlyJoinReply => {
                out.send(from, Msg::Remove)
            }
            _ => {}
        }
    }

    /// A child asks to be removed. The fix's guard is that the sender is a child; RT10's was
    /// that the node is joined.
    fn on_remove(&self, me: NodeId, s: &mut State, from: NodeId, out: &mut Out<'_, Self>) {
        let accepted = match self.bug {
            Bug::RemoveWhileJoining => s.phase == Phase::Joined,
            _ => true,
        };
        if accepted && s.children.remove(&from) {
            self.refresh_siblings(s);
            if s.is_root(me) {
                Self::update_child_siblings(s, out);
            }
        }
    }

    /// A probe from a node whose root is `root`.
    fn on_probe(me: NodeId, s: &mut State, root: NodeId, out: &mut Out<'_, Self>) {
        if s.root < root {
            out.send(root, Msg::ProbeJoin { root: s.root });
        } else if s.root > root {
            if s.is_root(me) {
                Self::join_via(me, s, root, out);
            } else {
                out.send(s.root, Msg::ProbeJoin { root });
            }
        }
    }

    /// The broken connection to `peer` (a reset or a socket error).
    fn on_error(&self, me: NodeId, s: &mut State, peer: NodeId, out: &mut Out<'_, Self>) {
        if s.children.remove(&peer) {
            self.refresh_siblings(s);
            if s.is_root(me) {
                Self::update_child_siblings(s, out);
            }
        } else if s.parent == Some(peer) && s.root == peer {
            let lowest = s.siblings.iter().copied().chain([me]).min().unwrap_or(me);
            s.parent = None;
            if lowest == me {
                s.root = me;
                Self::multicast_new_root(s, out);
                s.siblings.clear();
                s.reported.clear();
            } else {
                Self::join_via(me, s, lowest, out);
            }
            s.root = me;
        } else if s.parent == Some(peer) {
            s.parent = None;
            let root = s.root;
            Self::join_via(me, s, root, out);
            s.root = me;
        }
    }

    /// The join timer: retry with the next peer that is not a child.
    fn on_join_timer(me: NodeId, s: &mut State, out: &mut Out<'_, Self>) {
        if s.phase != Phase::Joining {
            return;
        }
        s.root = me;
        let mut candidate = s.bootstrap;
        for _ in 0..s.peers.len() {
            candidate = next_in(&s.peers, candidate);
            if candidate.is_some_and(|c| !s.children.contains(&c)) {
                break;
            }
        }
        out.require(candidate.is_none_or(|c| !s.children.contains(&c)), "joinTimerFindsPeer");
        s.bootstrap = candidate;
        if let Some(target) = candidate {
            out.send(target, Msg::Join { source: me, redirected_by: None });
        }
        out.set_timer(Timer::Join, 5_000);
    }

    /// The recovery timer: probe the next peer that is neither a child, the parent nor the root.
    fn on_recovery_timer(&self, s: &mut State, out: &mut Out<'_, Self>) {
        let recurring = self.bug != Bug::RecoveryTimer;
        if s.phase != Phase::Joined || s.peers.is_empty() {
            if recurring {
                out.set_timer(Timer::Recovery, 10_000);
            }
            return;
        }
        out.set_timer(Timer::Recovery, 10_000);
        let skipped = |s: &State, n: NodeId| s.children.contains(&n) || s.parent == Some(n) || s.root == n;
        let mut probed = next_in(&s.peers, s.last_probed);
        let mut count = 0;
        while count < s.peers.len() && probed.is_some_and(|n| skipped(s, n)) {
            probed = next_in(&s.peers, probed);
            count += 1;
        }
        s.last_probed = probed;
        if let Some(target) = probed.filter(|n| !skipped(s, *n)) {
            out.send(target, Msg::Probe { root: s.root });
        }
    }
}

impl Protocol for RandTree {
    type State = State;
    type Msg = Msg;
    type Timer = Timer;
    type Input = Input;

    fn init(&self, me: NodeId, _: &mut Out<'_, Self>) -> State {
        State {
            phase: Phase::Init,
            root: me,
            parent: None,
            children: BTreeSet::new(),
            siblings: BTreeSet::new(),
            reported: BTreeSet::new(),
            peers: BTreeSet::new(),
            bootstrap: None,
            last_probed: None,
        }
    }

    fn on_input(&self, me: NodeId, s: &mut State, input: &Input, out: &mut Out<'_, Self>) {
        let Input::JoinOverlay(peers) = input;
        self.join_overlay(me, s, peers, out);
    }

    fn on_message(&self, me: NodeId, s: &mut State, from: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
        match msg {
            Msg::Join { source, redirected_by } => self.on_join(me, s, *source, *redirected_by, out),
            Msg::JoinReply { status, root, siblings } => {
                self.on_join_reply(s, from, *status, *root, siblings, out)
            }
            Msg::Remove => self.on_remove(me, s, from, out),
            Msg::UpdateSiblings { root, siblings } => {
                if s.phase == Phase::Joined && s.parent == Some(from) {
                    s.root = *root;
                    self.adopt_siblings(s, siblings);
                }
            }
            Msg::Probe { root } if s.phase != Phase::Init => Self::on_probe(me, s, *root, out),
            Msg::ProbeJoin { root } if s.phase != Phase::Init => {
                if s.is_root(me) && *root <= s.root {
                    Self::join_via(me, s, *root, out);
                }
            }
            Msg::NewRoot { root } if s.parent == Some(from) => {
                s.root = *root;
                Self::multicast_new_root(s, out);
            }
            Msg::Probe { .. } | Msg::ProbeJoin { .. } | Msg::NewRoot { .. } => {}
        }
    }

    fn on_timer(&self, me: NodeId, s: &mut State, timer: &Timer, out: &mut Out<'_, Self>) {
        match timer {
            Timer::Join => Self::on_join_timer(me, s, out),
            Timer::Recovery => self.on_recovery_timer(s, out),
        }
    }

    fn on_transport_error(&self, me: NodeId, s: &mut State, peer: NodeId, out: &mut Out<'_, Self>) {
        self.on_error(me, s, peer, out);
    }
}

// ---- Properties. ----------------------------------------------------------------------------

/// `noLoops`: every node's parent chain reaches a node that is a root or not joined.
fn no_loops(w: &World<RandTree>) -> bool {
    NodeId::all(w.node_count()).all(|n| {
        let mut m = n;
        for _ in 0..=w.node_count() {
            let s = w.state(m);
            if s.is_root(m) || s.phase != Phase::Joined {
                return true;
            }
            match s.parent {
                Some(parent) => m = parent,
                None => return false,
            }
        }
        false
    })
}

/// `joinedOrNullParent`: a joined node is a root or has a parent.
fn joined_or_null_parent(w: &World<RandTree>) -> bool {
    NodeId::all(w.node_count()).all(|n| {
        let s = w.state(n);
        s.phase != Phase::Joined || s.is_root(n) || s.parent.is_some()
    })
}

/// `timers`: a node not in init has its recovery timer armed.
fn timers(w: &World<RandTree>) -> bool {
    NodeId::all(w.node_count()).all(|n| w.state(n).phase == Phase::Init || w.timer_armed(n, &Timer::Recovery))
}

/// CrystalBall's `childrenSiblingsDisjoint`: no node has a child among its siblings.
fn children_siblings_disjoint(w: &World<RandTree>) -> bool {
    w.states().all(|s| s.children.is_disjoint(&s.siblings))
}

/// `allJoined`: every node is joined.
fn all_joined(w: &World<RandTree>) -> bool {
    w.states().all(|s| s.phase == Phase::Joined)
}

/// `oneRoot`: exactly one node is its own root.
fn one_root(w: &World<RandTree>) -> bool {
    NodeId::all(w.node_count()).filter(|n| w.state(*n).is_root(*n)).count() == 1
}

/// `kidsMatch`: parent and child pointers agree.
fn kids_match(w: &World<RandTree>) -> bool {
    NodeId::all(w.node_count()).all(|n| {
        let s = w.state(n);
        let placed = s.is_root(n) || s.parent.is_some_and(|p| w.state(p).children.contains(&n));
        placed && s.children.iter().all(|c| w.state(*c).parent == Some(n))
    })
}

/// `rootMatch`: exactly one node is every node's root.
fn root_match(w: &World<RandTree>) -> bool {
    NodeId::all(w.node_count()).filter(|n| w.states().all(|s| s.root == *n)).count() == 1
}

/// `siblingsMatch`: the root's children agree on their siblings and their parent.
fn siblings_match(w: &World<RandTree>) -> bool {
    NodeId::all(w.node_count()).all(|n| {
        let s = w.state(n);
        Some(s.root) != s.parent
            || s.siblings.iter().all(|m| {
                let other = w.state(*m);
                other.siblings.contains(&n) && other.parent == s.parent
            })
    })
}

// ---- Model. ---------------------------------------------------------------------------------

/// Who each node's `joinOverlay` names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Topology {
    /// MaceMC's `SimTreeApp` with `NEXT_NODE`: node `i` joins through node `(i + 1) mod n`.
    #[default]
    NextNode,
    /// Node 0 is given no peers (it starts a tree alone); every other node joins through node 0.
    LoneRoot,
}

impl Topology {
    /// The peer set `joinOverlay` gives `node` of `nodes`.
    pub fn peers(self, node: NodeId, nodes: usize) -> BTreeSet<NodeId> {
        match self {
            Topology::NextNode => BTreeSet::from([NodeId::new((node.index() + 1) % nodes)]),
            Topology::LoneRoot if node.index() == 0 => BTreeSet::new(),
            Topology::LoneRoot => BTreeSet::from([NodeId(0)]),
        }
    }
}

/// A configuration of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// The node count.
    pub nodes: usize,
    /// Who joins through whom.
    pub topology: Topology,
    /// The node-reset budget.
    pub resets: u32,
    /// The socket-error budget.
    pub socket_errors: u32,
    /// How a broken connection's transport error is ordered with later messages: as MaceMC's
    /// simulated TCP (the default) or as real TCP across a reset.
    pub errors: ErrorOrder,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            nodes: 3,
            topology: Topology::NextNode,
            resets: 1,
            socket_errors: 0,
            errors: ErrorOrder::Queued,
        }
    }
}

/// The model: `config.nodes` RandTree nodes over MaceMC's TCP (FIFO channels; a reset or a
/// socket error breaks connections), each given `joinOverlay` at startup (again after a reset),
/// with RandTree's safety and liveness properties and CrystalBall's disjointness property.
pub fn model(config: Config, bug: Bug) -> Model<RandTree> {
    let driver = NodeId::all(config.nodes).fold(Driver::new(), |driver, n| {
        driver.startup(n, Input::JoinOverlay(config.topology.peers(n, config.nodes)))
    });
    Model::new(RandTree::new(bug))
        .nodes(config.nodes)
        .network(NetworkKind::FifoChannels)
        .error_order(config.errors)
        .faults(
            Faults::none()
                .resets(Budget::at_most(config.resets))
                .socket_errors(Budget::at_most(config.socket_errors)),
        )
        .driver(driver)
        .always("noLoops", no_loops)
        .always("joinedOrNullParent", joined_or_null_parent)
        .always("timers", timers)
        .always("childrenSiblingsDisjoint", children_siblings_disjoint)
        .eventually("allJoined", all_joined)
        .eventually("oneRoot", one_root)
        .eventually("kidsMatch", kids_match)
        .eventually("rootMatch", root_match)
        .eventually("siblingsMatch", siblings_match)
}

// ---- Scenarios. -----------------------------------------------------------------------------

/// One step of a scenario.
type Step = EventOf<RandTree>;

/// Node `node` of `nodes` calls `joinOverlay` with its `next-node` peer.
fn start(node: u32, nodes: usize) -> Step {
    let node = NodeId(node);
    Event::Input { node, input: Input::JoinOverlay(Topology::NextNode.peers(node, nodes)) }
}

/// `to` receives `msg` from `from`.
fn deliver(from: u32, to: u32, msg: Msg) -> Step {
    Event::Deliver { from: NodeId(from), to: NodeId(to), msg }
}

/// `Join` for `source`, not redirected.
fn join(source: u32) -> Msg {
    Msg::Join { source: NodeId(source), redirected_by: None }
}

/// A set of nodes.
fn nodes(ids: &[u32]) -> BTreeSet<NodeId> {
    ids.iter().map(|&i| NodeId(i)).collect()
}

/// `JoinReply(status, root, siblings)`.
fn reply(status: JoinStatus, root: u32, siblings: &[u32]) -> Msg {
    Msg::JoinReply { status, root: NodeId(root), siblings: nodes(siblings) }
}

/// `update_siblings(root, siblings)`.
fn update(root: u32, siblings: &[u32]) -> Msg {
    Msg::UpdateSiblings { root: NodeId(root), siblings: nodes(siblings) }
}

/// `joined` on two nodes, and the start of it on three: node 1, asked to join by the lower node
/// 0, forces it to be the root and joins under it. With three nodes, node 1's own `Join` to node
/// 2 is dropped first (node 2 is in init); with two, node 1's own `Join` goes to node 0 and is
/// accepted before the root-force exchange ends.
fn first_two(n: usize) -> Vec<Step> {
    use JoinStatus::{Accepted, RootForce};
    let mut steps = vec![start(0, n), start(1, n)];
    if n == 2 {
        steps.extend([
            deliver(0, 1, join(0)), // 1 is a root: root-force to 0, 1 joins through 0
            deliver(1, 0, join(1)), // 0 accepts 1
            deliver(1, 0, reply(RootForce, 0, &[])),
            deliver(1, 0, join(1)), // already a child
        ]);
    } else {
        steps.extend([
            deliver(1, 2, join(1)), // dropped: 2 is in init
            deliver(0, 1, join(0)), // 1 is a root: root-force to 0, 1 joins through 0
            deliver(1, 0, reply(RootForce, 0, &[])),
            deliver(1, 0, join(1)), // 0 accepts 1
        ]);
    }
    steps.extend([deliver(0, 1, reply(Accepted, 0, &[1])), deliver(0, 1, update(0, &[1]))]);
    steps
}

/// `joined` on three nodes: the star 0 → {1, 2}, siblings {1, 2}.
fn joined3() -> Vec<Step> {
    let mut steps = first_two(3);
    steps.extend([
        start(2, 3),
        deliver(2, 0, join(2)), // 0 accepts 2 and updates both children
        deliver(0, 2, reply(JoinStatus::Accepted, 0, &[1, 2])),
        deliver(0, 2, update(0, &[1, 2])),
        deliver(0, 1, update(0, &[1, 2])),
    ]);
    steps
}

/// CrystalBall's Figure 2, first row, on nodes 0 (n1), 1 (n9) and 2 (n13): node 2 joins under
/// node 1, then node 0 forces node 1 to join under it; the network ends empty.
fn fig2() -> Vec<Step> {
    use JoinStatus::{Accepted, RootForce};
    vec![
        start(1, 3),
        start(2, 3),
        deliver(2, 0, join(2)), // dropped: 0 is in init
        deliver(1, 2, join(1)), // 2 is a root: root-force to 1, 2 joins through 1
        deliver(2, 1, reply(RootForce, 1, &[])),
        deliver(2, 1, join(2)), // 1 accepts 2
        deliver(1, 2, reply(Accepted, 1, &[2])),
        deliver(1, 2, update(1, &[2])),
        start(0, 3),
        deliver(0, 1, join(0)), // 1 is a root: root-force to 0, 1 joins through 0
        deliver(1, 0, reply(RootForce, 0, &[])),
        deliver(1, 0, join(1)),                  // 0 accepts 1
        deliver(0, 1, reply(Accepted, 0, &[1])), // 1 tells 2 the new root and its siblings
        deliver(0, 1, update(0, &[1])),
        deliver(1, 2, Msg::NewRoot { root: NodeId(0) }),
        deliver(1, 2, update(0, &[2])),
    ]
}

/// MaceMC's RT10 setting on three nodes: node 2 is accepted by node 0 and then, late, by node
/// 1, which meanwhile is forced to join under node 0; node 2 asks node 1 to remove it, and the
/// `remove` reaches node 1 while it is still joining (the fixed node 1 forgets node 2, RT10's
/// keeps it).
fn rt10() -> Vec<Step> {
    use JoinStatus::{Accepted, RootForce};
    vec![
        start(0, 3),
        start(1, 3),
        start(2, 3),
        deliver(1, 2, join(1)), // 2 is a root: root-force to 1, 2 joins through 1
        deliver(2, 0, join(2)), // 0 accepts 2
        deliver(0, 2, reply(Accepted, 0, &[2])),
        deliver(2, 1, reply(RootForce, 1, &[])),
        deliver(2, 1, join(2)),                  // 1 accepts 2 too
        deliver(0, 1, join(0)),                  // 1 is a root: root-force to 0, 1 joins through 0
        deliver(1, 2, reply(Accepted, 1, &[2])), // 2 has a parent: it asks 1 to remove it
        deliver(2, 1, Msg::Remove),
    ]
}

/// A stale acceptance on four nodes, `adopt-child`'s setting (found by foretell's liveness
/// walks, then cut down to the steps it needs): node 3's `Join` is accepted by node 0 and, late,
/// by node 2, then a root (step 16), and node 2's `JoinReply` to it stays in flight; node 3
/// settles under node 0. Node 2, forced to join under node 0 meanwhile, is redirected by node 0
/// to node 3 (the last step, choosing node 0's child 3), which will accept it. From here
/// `adopt-child` is 6 steps from a loop: node 2 takes node 3, its own child, as its parent;
/// node 0 resets; node 3 rejoins and takes the stale acceptance from node 2.
fn stale_accept() -> Vec<(Step, Vec<usize>)> {
    use JoinStatus::{Accepted, RootForce};
    let timer = |node: u32, timer: Timer| Event::Timer { node: NodeId(node), timer };
    let plain = [
        start(1, 4),
        timer(1, Timer::Join),
        start(3, 4),
        start(2, 4),
        deliver(2, 3, join(2)), // 3 is a root: root-force to 2, 3 joins through 2
        start(0, 4),
        deliver(1, 2, join(1)), // 2 is a root: root-force to 1, 2 joins through 1
        deliver(2, 1, reply(RootForce, 1, &[])),
        deliver(3, 2, reply(RootForce, 2, &[])),
        deliver(2, 1, join(2)), // 1 accepts 2
        deliver(3, 0, join(3)), // 0 accepts 3
        deliver(0, 1, join(0)), // 1 is a root: root-force to 0, 1 joins through 0
        timer(2, Timer::Recovery),
        deliver(2, 1, Msg::Probe { root: NodeId(2) }),
        deliver(1, 2, join(1)), // 2 (joined, a root) root-forces 1 and joins through it
        deliver(3, 2, join(3)), // 2 accepts 3 too: its reply stays in flight
        deliver(0, 3, reply(Accepted, 0, &[3])), // 3 joins under 0
        deliver(1, 0, reply(RootForce, 0, &[])),
        timer(3, Timer::Recovery),
        deliver(1, 0, join(1)), // 0 accepts 1
        deliver(0, 1, reply(Accepted, 0, &[1, 3])),
        deliver(0, 3, update(0, &[3])),
        deliver(2, 1, reply(RootForce, 1, &[])),
        deliver(0, 3, update(0, &[1, 3])),
        deliver(2, 1, join(2)), // 1 forwards 2's join to its root 0
    ];
    let mut steps: Vec<_> = plain.into_iter().map(|step| (step, Vec::new())).collect();
    steps.push((deliver(1, 0, join(2)), vec![1])); // 0 is full: it redirects 2 to its child 3
    steps
}

/// The scenario `name` for `config`, if there is one: `fig2` and `rt10` on three nodes,
/// `joined` on two or three, `stale-accept` on four, all with the `next-node` topology.
pub fn scenario(name: &str, config: Config) -> Option<Scenario<RandTree>> {
    if config.topology != Topology::NextNode {
        return None;
    }
    let plain = |steps: Vec<Step>| steps.into_iter().map(|step| (step, Vec::new())).collect();
    let steps: Vec<(Step, Vec<usize>)> = match (name, config.nodes) {
        ("fig2", 3) => plain(fig2()),
        ("joined", 2) => plain(first_two(2)),
        ("joined", 3) => plain(joined3()),
        ("rt10", 3) => plain(rt10()),
        ("stale-accept", 4) => stale_accept(),
        _ => return None,
    };
    Some(steps.into_iter().fold(Scenario::new(name), |s, (event, choices)| s.then_choosing(event, choices)))
}

// ---- Registry. ------------------------------------------------------------------------------

/// The node counts the `nodes` parameter accepts.
const NODE_COUNTS: std::ops::RangeInclusive<usize> = 2..=5;

const PARAMS: &[Param] = &[
    Param { name: "nodes", default: "3", help: "nodes (2 to 5); update-sibling needs 3" },
    Param {
        name: "topology",
        default: "next-node",
        help: "next-node (node i joins through node i+1 mod n, MaceMC's NEXT_NODE) or lone-root \
               (node 0 has no peers, the others join through it; empty-peers needs it)",
    },
    Param { name: "resets", default: "1", help: "node resets (0 to 3)" },
    Param { name: "socket-errors", default: "0", help: "bidirectional socket errors (0 to 3)" },
    Param {
        name: "errors",
        default: "queued",
        help: "how a broken connection's error is ordered with later messages: queued (MaceMC's simulated \
               TCP: it arrives first) or independent (real TCP: a reset node's new connection may be heard \
               from first, and the fixed version is then not live under a reset)",
    },
];

const VARIANTS: &[Variant] = &[
    Variant {
        name: "update-sibling",
        help: "CrystalBall 1.2: a new child stays among the siblings and sibling lists are adopted \
               with own children in them (violates childrenSiblingsDisjoint)",
    },
    Variant {
        name: "recovery-timer",
        help: "RT3: the recovery timer is a plain timer, lost when it fires while joining (violates timers)",
    },
    Variant {
        name: "empty-peers",
        help: "joinOverlay with no peers becomes root without arming the recovery timer (violates timers; \
               needs topology=lone-root)",
    },
    Variant {
        name: "remove-while-joining",
        help: "RT10: a parent busy joining drops its child's remove and keeps the child forever \
               (liveness: kidsMatch)",
    },
    Variant {
        name: "early-join-reply",
        help: "RT13: a node back in init after a reset ignores the acceptance of its previous \
               incarnation's join, and the acceptor keeps it as a child forever (liveness: kidsMatch)",
    },
    Variant {
        name: "adopt-child",
        help: "a joining node takes as its parent a node it lists as its own child (a stale acceptance); \
               after a reset two nodes are each other's parent (violates noLoops; 4 nodes, from \
               scenario stale-accept 6 steps away)",
    },
];

const SCENARIOS: &[ScenarioInfo] = &[
    ScenarioInfo {
        needs: &[],
        name: "fig2",
        help: "CrystalBall Figure 2, first row (3 nodes): the tree 0 -> 1 -> 2, node 2 joined under node 1 \
               before node 0 became root; from it update-sibling is 5 steps away",
    },
    ScenarioInfo {
        needs: &[],
        name: "joined",
        help: "every node joined under node 0 and the network empty (2 or 3 nodes): a live world",
    },
    ScenarioInfo {
        needs: &[],
        name: "rt10",
        help: "MaceMC's RT10 (3 nodes): a child's remove has reached its parent while the parent was joining",
    },
    ScenarioInfo {
        needs: &[("nodes", "4")],
        name: "stale-accept",
        help:
            "a stale acceptance (4 nodes): node 2 accepted node 3, which joined under node 0, and is being \
               redirected to node 3; from it adopt-child is 6 steps from a loop",
    },
];

/// The variant named by the settings.
fn bug(settings: &Settings) -> Bug {
    let bugs = [
        ("update-sibling", Bug::UpdateSibling),
        ("recovery-timer", Bug::RecoveryTimer),
        ("empty-peers", Bug::EmptyPeers),
        ("remove-while-joining", Bug::RemoveWhileJoining),
        ("early-join-reply", Bug::EarlyJoinReply),
        ("adopt-child", Bug::AdoptChild),
    ];
    bugs.into_iter().find_map(|(name, bug)| settings.is(name).then_some(bug)).unwrap_or_default()
}

/// The model `settings` describe, with its protocol type (what the registry's `build` erases,
/// and what cluster mode needs).
///
/// # Errors
/// A [`crate::ConfigError`] for a bad parameter or an unknown scenario.
pub fn from_settings(settings: &Settings) -> Result<Model<RandTree>, crate::ConfigError> {
    let config = Config {
        nodes: settings.number("nodes", NODE_COUNTS)?,
        topology: settings
            .choice("topology", &[("next-node", Topology::NextNode), ("lone-root", Topology::LoneRoot)])?,
        resets: settings.number("resets", 0..=3)? as u32,
        socket_errors: settings.number("socket-errors", 0..=3)? as u32,
        errors: settings
            .choice("errors", &[("queued", ErrorOrder::Queued), ("independent", ErrorOrder::Independent)])?,
    };
    if let Some(Start::Scenario(name)) = &settings.start {
        let known = SCENARIOS.iter().any(|s| s.name == name);
        if known && scenario(name, config).is_none() {
            // The node counts `scenario` defines it for, asked of `scenario` itself.
            let nodes: Vec<String> = NODE_COUNTS
                .filter(|&nodes| {
                    scenario(name, Config { nodes, topology: Topology::NextNode, ..config }).is_some()
                })
                .map(|nodes| nodes.to_string())
                .collect();
            let nodes = nodes.join(" or ");
            let reason = format!("scenario {name} is defined for topology next-node with {nodes} nodes");
            let (name, value) = match config.topology {
                Topology::NextNode => ("nodes", config.nodes.to_string()),
                Topology::LoneRoot => ("topology", "lone-root".to_string()),
            };
            return Err(ConfigError::BadValue { name: name.into(), value, reason });
        }
    }
    apply_scenario(model(config, bug(settings)), settings, |name| scenario(name, config))
}

fn build(settings: &Settings) -> Result<Box<dyn DynModel>, ConfigError> {
    Ok(Box::new(from_settings(settings)?))
}

/// The registry entry.
pub fn system() -> System {
    System {
        name: "randtree",
        about: "Mace's RandTree overlay tree over MaceMC's TCP with resets (MaceMC 7.3, CrystalBall 1.2)",
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

    const SAFETY: [&str; 4] = ["noLoops", "joinedOrNullParent", "timers", "childrenSiblingsDisjoint"];
    const LIVENESS: [&str; 5] = ["allJoined", "oneRoot", "kidsMatch", "rootMatch", "siblingsMatch"];

    fn config(nodes: usize) -> Config {
        Config { nodes, ..Config::default() }
    }

    fn lone_root(nodes: usize) -> Config {
        Config { nodes, topology: Topology::LoneRoot, ..Config::default() }
    }

    fn from(name: &str, config: Config, bug: Bug) -> Model<RandTree> {
        model(config, bug).start_from(scenario(name, config).expect("the scenario exists"))
    }

    fn bfs(model: &Model<RandTree>, depth: usize) -> Report {
        let report = Check::bfs(model).depth_max(depth).run();
        println!("{report}");
        report
    }

    /// The shortest violation of `property` BFS finds within `depth` steps, replayed; its length
    /// in steps (scenario steps included).
    fn shortest(model: &Model<RandTree>, depth: usize, property: &str) -> usize {
        let report = bfs(model, depth);
        let violation = report.assert_violated(property);
        println!("{}", violation.trace.to_text(false));
        Simulator::new(model).unwrap().replay(&violation.trace).expect("replays");
        violation.trace.steps.len()
    }

    /// Every safety property holds, within a search that explored its whole bound.
    fn assert_safe(report: &Report) {
        for property in SAFETY {
            report.assert_holds(property);
        }
    }

    #[test]
    fn recovery_timer_is_found_from_the_initial_world() {
        // Node 0 starts joining, then its recovery timer fires and is lost.
        assert_eq!(shortest(&model(config(2), Bug::RecoveryTimer), 4, "timers"), 2);
        assert_eq!(shortest(&model(config(3), Bug::RecoveryTimer), 4, "timers"), 2);
    }

    #[test]
    fn empty_peers_is_found_from_the_initial_world() {
        // Node 0's joinOverlay makes it a root with no recovery timer.
        assert_eq!(shortest(&model(lone_root(2), Bug::EmptyPeers), 4, "timers"), 1);
    }

    #[test]
    fn update_sibling_is_found_from_the_initial_world() {
        // No reset needed: node 2 is accepted by nodes 0 and 1, and node 0's JoinReply to node 1
        // lists node 2 among node 1's siblings.
        let model = model(config(3), Bug::UpdateSibling);
        assert_eq!(shortest(&model, 11, "childrenSiblingsDisjoint"), 11);
    }

    /// Local model checking (without resets, which it does not explore) finds the same bug, with
    /// a trace that replays, and nothing in the fixed version. The recovery timers make the
    /// interleavings of the local states endless; soundness verification deepens step by step,
    /// so it finds the 11-event run among them (a search without a depth bound followed the
    /// timers for its whole budget and left the violation undecided).
    #[test]
    fn update_sibling_is_found_by_local_model_checking() {
        let config = Config { resets: 0, ..config(3) };
        let buggy = model(config, Bug::UpdateSibling);
        let report = Check::lmc(&buggy).run();
        println!("{report}");
        let violation = report.assert_violated("childrenSiblingsDisjoint");
        Simulator::new(&buggy).unwrap().replay(&violation.trace).expect("replays");
        assert_eq!(violation.trace.steps.len(), 11);
        // Two copies of a message sent again on one path, so that no limit cuts the space.
        let options = LmcOptions { duplicates: 2, ..LmcOptions::default() };
        let report = Check::lmc(&model(config, Bug::None)).lmc_options(options).run();
        println!("{report}");
        assert_eq!(report.completion, Completion::Exhausted);
        assert_safe(&report);
        assert_eq!(report.lmc.as_ref().expect("lmc statistics").preliminary_violations, 0);
    }

    #[test]
    fn update_sibling_is_found_from_fig2() {
        // Node 2 resets, joins again through node 0, which accepts it (once it has seen its
        // old connection to node 2 break) and sends node 1 the siblings {1, 2} while node 1
        // still has node 2 as a child.
        let model = from("fig2", config(3), Bug::UpdateSibling);
        assert_eq!(shortest(&model, 6, "childrenSiblingsDisjoint"), fig2().len() + 5);
    }

    #[test]
    fn adopt_child_is_found_from_stale_accept() {
        // Node 3 accepts node 2, node 2 takes its own child 3 as its parent, node 0 resets,
        // node 3 rejoins and takes node 2's stale acceptance: 2 -> 3 -> 2.
        let model = from("stale-accept", config(4), Bug::AdoptChild);
        assert_eq!(shortest(&model, 6, "noLoops"), stale_accept().len() + 6);
    }

    #[test]
    fn fixed_version_holds_from_stale_accept() {
        let report = bfs(&from("stale-accept", config(4), Bug::None), 8);
        assert_safe(&report);
        assert_eq!(report.stats.unique_states, 262_390);
    }

    #[test]
    fn fixed_version_holds_in_the_smallest_configuration() {
        let report = bfs(&model(config(2), Bug::None), 16);
        assert_safe(&report);
        assert_eq!(report.stats.unique_states, 23_468);
        // Real TCP's order lets a reset node's new incarnation be heard from before its error:
        // more interleavings.
        let independent = Config { errors: ErrorOrder::Independent, ..config(2) };
        let report = bfs(&model(independent, Bug::None), 16);
        assert_safe(&report);
        assert_eq!(report.stats.unique_states, 44_262);
        let report = bfs(&model(lone_root(2), Bug::None), 16);
        assert_safe(&report);
        assert_eq!(report.stats.unique_states, 303);
    }

    #[test]
    fn fixed_version_holds_on_three_nodes() {
        let report = bfs(&model(config(3), Bug::None), 11);
        assert_safe(&report);
        for property in LIVENESS {
            report.assert_covered(property);
        }
        assert_eq!(report.stats.unique_states, 75_179);
    }

    #[test]
    fn fixed_version_holds_from_fig2() {
        let report = bfs(&from("fig2", config(3), Bug::None), 10);
        assert_safe(&report);
        assert_eq!(report.stats.unique_states, 11_499);
    }

    #[test]
    fn fixed_version_holds_with_socket_errors_and_more_nodes() {
        let report = bfs(&model(Config { socket_errors: 1, ..config(2) }, Bug::None), 14);
        assert_safe(&report);
        assert_eq!(report.stats.unique_states, 12_571);
        let report = bfs(&model(config(4), Bug::None), 9);
        assert_safe(&report);
        assert_eq!(report.stats.unique_states, 37_511);
        let report = bfs(&model(config(5), Bug::None), 8);
        assert_safe(&report);
        assert_eq!(report.stats.unique_states, 32_837);
    }

    /// The fixed version, deeper: every world within 14 steps of the initial one.
    #[test]
    #[cfg_attr(debug_assertions, ignore = "0.9 million worlds; runs in the release-mode test command")]
    fn fixed_version_holds_on_three_nodes_deeper() {
        let report = bfs(&model(config(3), Bug::None), 14);
        assert_safe(&report);
        assert_eq!(report.stats.unique_states, 866_148);
    }

    #[test]
    fn remove_while_joining_breaks_no_safety_property() {
        let report = bfs(&model(config(3), Bug::RemoveWhileJoining), 11);
        assert_safe(&report);
    }

    /// From `rt10` without faults, the fixed parent has forgotten the child and `kidsMatch`
    /// holds at once; the buggy parent keeps it, and no world within 16 steps has `kidsMatch`
    /// (only a fault breaking the stale connection would clear it).
    #[test]
    fn remove_while_joining_keeps_a_stale_child() {
        let no_faults = Config { resets: 0, ..config(3) };
        let fixed = bfs(&from("rt10", no_faults, Bug::None), 16);
        assert_safe(&fixed);
        fixed.assert_covered("kidsMatch");
        assert_eq!(fixed.stats.unique_states, 78_169);
        let buggy = bfs(&from("rt10", no_faults, Bug::RemoveWhileJoining), 16);
        assert_safe(&buggy);
        assert_ne!(buggy.status("kidsMatch"), Some(Status::Covered));
        assert_eq!(buggy.stats.unique_states, 13_786);
    }

    #[test]
    fn scenarios_resolve_and_bad_ones_are_rejected() {
        for (name, nodes) in [("fig2", 3), ("joined", 2), ("joined", 3), ("rt10", 3), ("stale-accept", 4)] {
            let model = from(name, config(nodes), Bug::None);
            let report = bfs(&model, 0);
            assert_eq!(report.completion, Completion::DepthBound, "{name} on {nodes} nodes");
            assert_safe(&report);
            if name == "fig2" || name == "joined" {
                for property in LIVENESS {
                    report.assert_covered(property);
                }
            }
        }
        let system = system();
        let with_start = |overrides: &[(String, String)], name: &str| {
            let mut settings = system.settings(None, overrides).unwrap();
            settings.start = Some(Start::Scenario(name.into()));
            (system.build)(&settings)
        };
        let fig2 = with_start(&[], "fig2").unwrap();
        assert_eq!(fig2.summary().start.as_deref(), Some("fig2"));
        assert!(matches!(with_start(&[], "nope"), Err(ConfigError::UnknownScenario { .. })));
        let two = [("nodes".to_string(), "2".to_string())];
        let blames = |result: Result<Box<dyn DynModel>, ConfigError>| match result {
            Err(ConfigError::BadValue { name, reason, .. }) => (name, reason),
            other => panic!("not a bad value: {:?}", other.err()),
        };
        let (name, reason) = blames(with_start(&two, "fig2"));
        assert_eq!(
            (name.as_str(), reason.as_str()),
            ("nodes", "scenario fig2 is defined for topology next-node with 3 nodes")
        );
        let (_, reason) = blames(with_start(&two, "stale-accept"));
        assert!(reason.ends_with("with 4 nodes"), "{reason}");
        let five = [("nodes".to_string(), "5".to_string())];
        let (_, reason) = blames(with_start(&five, "joined"));
        assert!(reason.ends_with("with 2 or 3 nodes"), "{reason}");
        let lone = [("topology".to_string(), "lone-root".to_string())];
        assert_eq!(blames(with_start(&lone, "fig2")).0, "topology");
        assert_eq!(with_start(&two, "joined").unwrap().summary().start.as_deref(), Some("joined"));
    }

    #[test]
    fn every_variant_builds_and_bad_settings_are_rejected() {
        let system = system();
        for variant in system.variants {
            let settings = system.settings(Some(variant.name), &[]).unwrap();
            assert!((system.build)(&settings).is_ok(), "{}", variant.name);
        }
        let bad = system.settings(None, &[("topology".into(), "ring".into())]).unwrap();
        assert!(matches!((system.build)(&bad), Err(ConfigError::BadValue { .. })));
        let bad = system.settings(None, &[("errors".into(), "fifo".into())]).unwrap();
        assert!(matches!((system.build)(&bad), Err(ConfigError::BadValue { .. })));
        let bad = system.settings(None, &[("nodes".into(), "6".into())]).unwrap();
        assert!(matches!((system.build)(&bad), Err(ConfigError::BadValue { .. })));
    }
}
