//! Single-decree Paxos behind a register interface, as Stateright's actor Paxos example runs it:
//! three servers and `C` clients over an unordered, non-duplicating network (semantics in
//! `shared/specs/stateright-models.md`). It exists to compare foretell with Stateright on one
//! state space: the distinct-state counts equal Stateright's, 265 for one client, 16,668 for
//! two and 1,194,428 for three.
//!
//! Nodes `0..3` are the servers, nodes `3..3 + C` the clients. Client `k` (node `i = 3 + k`)
//! sends `Put(i, 'A' + k)` to server `i mod 3` when it starts; on `PutOk` it sends `Get(2i)` to
//! server `(i + 1) mod 3`; on `GetOk` it is done. A server leads at most one ballot, for the
//! first `Put` it receives, runs both Paxos phases with its two peers, and once decided answers
//! `Get`s with the decided value.
//!
//! In Stateright's actor model a delivery the receiver ignores is no transition: the message
//! stays in the network. Every handler here says so with [`Out::disable`] wherever it ignores a
//! message, which is what makes the two state spaces the same.

use crate::{Param, Settings, System};
use foretell_check::DynModel;
use foretell_model::{Model, NetworkKind, NodeId, Out, Protocol, World};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The number of servers.
pub const SERVERS: usize = 3;

/// A client request's id.
pub type RequestId = u64;

/// A ballot, ordered by round, then by the server leading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Ballot {
    /// The round.
    pub round: u32,
    /// The server leading the ballot.
    pub leader: NodeId,
}

/// A proposal: the `Put` request it answers, its requester and the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Proposal {
    /// The `Put` request's id.
    pub request: RequestId,
    /// The client that sent it.
    pub requester: NodeId,
    /// The value to write.
    pub value: char,
}

/// A message between nodes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Msg {
    /// A client asks to write a value.
    Put(RequestId, char),
    /// The write is done.
    PutOk(RequestId),
    /// A client asks to read the value.
    Get(RequestId),
    /// The value read.
    GetOk(RequestId, char),
    /// Phase 1a: the leader of the ballot asks for promises.
    Prepare(Ballot),
    /// Phase 1b: a promise for the ballot, with the sender's last accepted proposal.
    Prepared(Ballot, Option<(Ballot, Proposal)>),
    /// Phase 2a: the leader of the ballot proposes.
    Accept(Ballot, Proposal),
    /// Phase 2b: the sender accepted the ballot's proposal.
    Accepted(Ballot),
    /// The ballot's proposal is decided.
    Decided(Ballot, Proposal),
}

/// A server's state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerState {
    /// The highest ballot seen.
    pub ballot: Ballot,
    /// The client request this server leads a ballot for, if any.
    pub proposal: Option<Proposal>,
    /// The promises of this server's ballot: each promiser's last accepted proposal.
    pub prepares: BTreeMap<NodeId, Option<(Ballot, Proposal)>>,
    /// The servers that accepted this server's ballot.
    pub accepts: BTreeSet<NodeId>,
    /// The last accepted proposal, with its ballot.
    pub accepted: Option<(Ballot, Proposal)>,
    /// Whether the value is decided.
    pub is_decided: bool,
}

/// Where a client is in its put-then-get sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientState {
    /// Its `Put` is outstanding.
    AwaitingPutOk,
    /// Its `Get` is outstanding.
    AwaitingGetOk,
    /// Both operations returned.
    Done,
}

/// A node's state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum State {
    /// A server.
    Server(ServerState),
    /// A client.
    Client(ClientState),
}

/// The protocol.
#[derive(Clone, Debug)]
pub struct ActorPaxos;

fn peers(me: NodeId) -> impl Iterator<Item = NodeId> + Clone {
    NodeId::all(SERVERS).filter(move |p| *p != me)
}

impl ActorPaxos {
    fn on_server_message(
        &self,
        me: NodeId,
        s: &mut ServerState,
        from: NodeId,
        msg: &Msg,
        out: &mut Out<'_, Self>,
    ) {
        if s.is_decided {
            match (msg, s.accepted) {
                (Msg::Get(r), Some((_, p))) => out.send(from, Msg::GetOk(*r, p.value)),
                _ => out.disable(),
            }
            return;
        }
        match *msg {
            Msg::Put(request, value) if s.proposal.is_none() => {
                s.proposal = Some(Proposal { request, requester: from, value });
                s.accepts.clear();
                s.ballot = Ballot { round: s.ballot.round + 1, leader: me };
                s.prepares = BTreeMap::from([(me, s.accepted)]);
                out.broadcast(peers(me), Msg::Prepare(s.ballot));
            }
            Msg::Prepare(b) if b > s.ballot => {
                s.ballot = b;
                out.send(from, Msg::Prepared(b, s.accepted));
            }
            Msg::Prepared(b, last) if b == s.ballot => {
                s.prepares.insert(from, last);
                if s.prepares.len() == 2 {
                    // The highest-ballot accepted proposal among the promises (none sorts lowest).
                    let highest = s.prepares.values().max().copied().flatten();
                    if let Some(p) = highest.map(|(_, p)| p).or(s.proposal) {
                        s.accepted = Some((b, p));
                        s.accepts = BTreeSet::from([me]);
                        out.broadcast(peers(me), Msg::Accept(b, p));
                    }
                }
            }
            Msg::Accept(b, p) if s.ballot <= b => {
                s.ballot = b;
                s.accepted = Some((b, p));
                out.send(from, Msg::Accepted(b));
            }
            Msg::Accepted(b) if b == s.ballot => {
                s.accepts.insert(from);
                if s.accepts.len() == 2 {
                    s.is_decided = true;
                    if let Some((_, p)) = s.accepted {
                        out.broadcast(peers(me), Msg::Decided(b, p));
                        out.send(p.requester, Msg::PutOk(p.request));
                    }
                }
            }
            Msg::Decided(b, p) => {
                s.ballot = b;
                s.accepted = Some((b, p));
                s.is_decided = true;
            }
            _ => out.disable(),
        }
    }
}

impl Protocol for ActorPaxos {
    type State = State;
    type Msg = Msg;
    type Timer = ();
    type Input = ();

    fn init(&self, me: NodeId, out: &mut Out<'_, Self>) -> State {
        let i = me.index();
        if i < SERVERS {
            State::Server(ServerState {
                ballot: Ballot { round: 0, leader: NodeId(0) },
                proposal: None,
                prepares: BTreeMap::new(),
                accepts: BTreeSet::new(),
                accepted: None,
                is_decided: false,
            })
        } else {
            let value = char::from(b'A' + (i - SERVERS) as u8);
            out.send(NodeId::new(i % SERVERS), Msg::Put(i as RequestId, value));
            State::Client(ClientState::AwaitingPutOk)
        }
    }

    fn on_message(&self, me: NodeId, state: &mut State, from: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
        let i = me.index();
        match (state, msg) {
            (State::Server(s), msg) => self.on_server_message(me, s, from, msg, out),
            (State::Client(c @ ClientState::AwaitingPutOk), Msg::PutOk(r)) if *r == i as RequestId => {
                *c = ClientState::AwaitingGetOk;
                out.send(NodeId::new((i + 1) % SERVERS), Msg::Get(2 * i as RequestId));
            }
            (State::Client(c @ ClientState::AwaitingGetOk), Msg::GetOk(r, _)) if *r == 2 * i as RequestId => {
                *c = ClientState::Done;
            }
            _ => out.disable(),
        }
    }
}

/// The values read or decided in `world`: each decided server's value, then the value of each
/// `GetOk` in flight.
pub fn values_seen(world: &World<ActorPaxos>) -> impl Iterator<Item = char> + '_ {
    let decided = world.states().filter_map(|s| match s {
        State::Server(ServerState { is_decided: true, accepted: Some((_, p)), .. }) => Some(p.value),
        _ => None,
    });
    let read = world.messages().filter_map(|e| match e.msg {
        Msg::GetOk(_, v) => Some(v),
        _ => None,
    });
    decided.chain(read)
}

/// The model with `clients` clients: `always "agreement"` (every decided server and every
/// `GetOk` in flight carry one value, the register's linearizability for this workload, where
/// each client writes once and then reads) and `sometimes "value chosen"` (a `GetOk` is in
/// flight).
pub fn model(clients: usize) -> Model<ActorPaxos> {
    Model::new(ActorPaxos)
        .nodes(SERVERS + clients)
        .network(NetworkKind::Unordered)
        .always("agreement", |w| {
            let mut values = values_seen(w);
            let first = values.next();
            values.all(|v| Some(v) == first)
        })
        .sometimes("value chosen", |w| w.messages().any(|e| matches!(e.msg, Msg::GetOk(..))))
}

const PARAMS: &[Param] =
    &[Param { name: "clients", default: "2", help: "clients, each a put then a get (1 to 3)" }];

fn build(settings: &Settings) -> Result<Box<dyn DynModel>, crate::ConfigError> {
    Ok(Box::new(model(settings.number("clients", 1..=3)?)))
}

/// The registry entry.
pub fn system() -> System {
    System {
        name: "stateright-paxos",
        about: "Stateright's actor Paxos: 3 servers and C clients over an unordered non-duplicating network",
        params: PARAMS,
        variants: &[],
        scenarios: &[],
        build,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use foretell_check::Check;

    /// One client: Stateright's 265 distinct states; a value is read, and all reads agree.
    #[test]
    fn count_equals_stateright_for_one_client() {
        let report = Check::bfs(&model(1)).run();
        report.assert_holds("agreement").assert_covered("value chosen");
        assert_eq!(report.stats.unique_states, 265);
        assert_eq!(report.stats.max_depth + 1, 14);
    }

    /// Two clients: Stateright's 16,668 distinct states, whichever stateful engine explores them.
    #[test]
    fn count_equals_stateright_for_two_clients() {
        let model = model(2);
        for report in [Check::bfs(&model).run(), Check::dfs(&model).run()] {
            report.assert_holds("agreement").assert_covered("value chosen");
            assert_eq!(report.stats.unique_states, 16_668, "{}", report.engine);
        }
    }
}
