//! Single-decree Paxos behind a register interface on Stateright's actor API: three servers and
//! `C` clients over an unordered, non-duplicating network, with the semantics of
//! `shared/specs/stateright-models.md` (265 states for one client, 16,668 for two, 1,194,428
//! for three). Foretell's counterpart is the `stateright-paxos` system
//! (`foretell_systems::actor_paxos`), which builds the same state space.
//!
//! Stateright's own example also carries a linearizability tester's history in every state; for
//! this workload it never splits a state (the counts above are reached without it), so it is
//! left out and the safety property is the direct one: every decided server and every `GetOk`
//! in flight agree on one value.

use stateright::actor::{Actor, ActorModel, Id, Network, Out};
use stateright::Expectation;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

/// The number of servers.
pub const SERVERS: usize = 3;

/// A client request's id.
pub type RequestId = u64;

/// A ballot: a round, then the id of the server leading it.
pub type Ballot = (u32, Id);

/// A proposal: the `Put` request it answers, its requester and the value.
pub type Proposal = (RequestId, Id, char);

/// A message between actors.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Msg {
    /// A client asks to write a value.
    Put(RequestId, char),
    /// The write is done.
    PutOk(RequestId),
    /// A client asks to read the value.
    Get(RequestId),
    /// The value read.
    GetOk(RequestId, char),
    /// Phase 1a: the leader of `ballot` asks for promises.
    Prepare(Ballot),
    /// Phase 1b: a promise for `ballot`, with the sender's last accepted proposal.
    Prepared(Ballot, Option<(Ballot, Proposal)>),
    /// Phase 2a: the leader of `ballot` proposes.
    Accept(Ballot, Proposal),
    /// Phase 2b: the sender accepted the proposal of `ballot`.
    Accepted(Ballot),
    /// The proposal of `ballot` is decided.
    Decided(Ballot, Proposal),
}

/// A server's state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServerState {
    /// The highest ballot seen.
    pub ballot: Ballot,
    /// The client request this server leads a ballot for, if any.
    pub proposal: Option<Proposal>,
    /// The promises of this server's ballot: each promiser's last accepted proposal.
    pub prepares: BTreeMap<Id, Option<(Ballot, Proposal)>>,
    /// The servers that accepted this server's ballot.
    pub accepts: BTreeSet<Id>,
    /// The last accepted proposal, with its ballot.
    pub accepted: Option<(Ballot, Proposal)>,
    /// Whether the value is decided.
    pub is_decided: bool,
}

/// Where a client is in its put-then-get sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientState {
    /// Its `Put` is outstanding.
    AwaitingPutOk,
    /// Its `Get` is outstanding.
    AwaitingGetOk,
    /// Both operations returned.
    Done,
}

/// An actor's state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// A server.
    Server(ServerState),
    /// A client.
    Client(ClientState),
}

/// An actor: a Paxos server or a client that writes its value, then reads.
#[derive(Clone, Debug)]
pub enum PaxosActor {
    /// A server, with its two peers.
    Server {
        /// The other servers.
        peers: Vec<Id>,
    },
    /// A client with the value it writes.
    Client {
        /// The value.
        value: char,
    },
}

impl PaxosActor {
    fn on_server_msg(&self, me: Id, state: &mut Cow<ServerState>, src: Id, msg: Msg, o: &mut Out<Self>) {
        let PaxosActor::Server { peers } = self else { return };
        if state.is_decided {
            if let (Msg::Get(r), Some((_, (_, _, value)))) = (msg, state.accepted) {
                o.send(src, Msg::GetOk(r, value));
            }
            return;
        }
        match msg {
            Msg::Put(r, value) if state.proposal.is_none() => {
                let s = state.to_mut();
                s.proposal = Some((r, src, value));
                s.accepts.clear();
                s.ballot = (s.ballot.0 + 1, me);
                s.prepares = BTreeMap::from([(me, s.accepted)]);
                o.broadcast(peers, &Msg::Prepare(s.ballot));
            }
            Msg::Prepare(b) if b > state.ballot => {
                let s = state.to_mut();
                s.ballot = b;
                o.send(src, Msg::Prepared(b, s.accepted));
            }
            Msg::Prepared(b, last) if b == state.ballot => {
                let s = state.to_mut();
                s.prepares.insert(src, last);
                if s.prepares.len() == 2 {
                    let highest = s.prepares.values().max().copied().flatten();
                    let Some(proposal) = highest.map(|(_, p)| p).or(s.proposal) else { return };
                    s.accepted = Some((b, proposal));
                    s.accepts = BTreeSet::from([me]);
                    o.broadcast(peers, &Msg::Accept(b, proposal));
                }
            }
            Msg::Accept(b, proposal) if state.ballot <= b => {
                let s = state.to_mut();
                s.ballot = b;
                s.accepted = Some((b, proposal));
                o.send(src, Msg::Accepted(b));
            }
            Msg::Accepted(b) if b == state.ballot => {
                let s = state.to_mut();
                s.accepts.insert(src);
                if s.accepts.len() == 2 {
                    s.is_decided = true;
                    if let Some((_, proposal @ (request, requester, _))) = s.accepted {
                        o.broadcast(peers, &Msg::Decided(b, proposal));
                        o.send(requester, Msg::PutOk(request));
                    }
                }
            }
            Msg::Decided(b, proposal) => {
                let s = state.to_mut();
                s.ballot = b;
                s.accepted = Some((b, proposal));
                s.is_decided = true;
            }
            _ => {}
        }
    }
}

impl Actor for PaxosActor {
    type Msg = Msg;
    type State = State;
    type Timer = ();
    type Random = ();
    type Storage = ();

    fn on_start(&self, id: Id, _: &Option<()>, o: &mut Out<Self>) -> State {
        match self {
            PaxosActor::Server { .. } => State::Server(ServerState {
                ballot: (0, Id::from(0)),
                proposal: None,
                prepares: BTreeMap::new(),
                accepts: BTreeSet::new(),
                accepted: None,
                is_decided: false,
            }),
            PaxosActor::Client { value } => {
                let i = usize::from(id);
                o.send(Id::from(i % SERVERS), Msg::Put(i as RequestId, *value));
                State::Client(ClientState::AwaitingPutOk)
            }
        }
    }

    fn on_msg(&self, id: Id, state: &mut Cow<State>, src: Id, msg: Msg, o: &mut Out<Self>) {
        let i = usize::from(id);
        match (&**state, msg) {
            (State::Server(server), msg) => {
                let mut server = Cow::Borrowed(server);
                self.on_server_msg(id, &mut server, src, msg, o);
                if let Cow::Owned(server) = server {
                    *state.to_mut() = State::Server(server);
                }
            }
            (State::Client(ClientState::AwaitingPutOk), Msg::PutOk(r)) if r == i as RequestId => {
                *state.to_mut() = State::Client(ClientState::AwaitingGetOk);
                o.send(Id::from((i + 1) % SERVERS), Msg::Get(2 * i as RequestId));
            }
            (State::Client(ClientState::AwaitingGetOk), Msg::GetOk(r, _)) if r == 2 * i as RequestId => {
                *state.to_mut() = State::Client(ClientState::Done);
            }
            _ => {}
        }
    }
}

/// The model: three servers, then `clients` clients writing `'A'`, `'B'`, ..., over an
/// unordered non-duplicating network. `always "agreement"`: decided servers and the `GetOk`s in
/// flight carry one value; `sometimes "value chosen"`: a `GetOk` is in flight.
pub fn model(clients: usize) -> ActorModel<PaxosActor> {
    let servers = (0..SERVERS)
        .map(|s| PaxosActor::Server { peers: (0..SERVERS).filter(|p| *p != s).map(Id::from).collect() });
    let clients = (0..clients).map(|k| PaxosActor::Client { value: (b'A' + k as u8) as char });
    ActorModel::new((), ())
        .actors(servers)
        .actors(clients)
        .init_network(Network::new_unordered_nonduplicating([]))
        .property(Expectation::Always, "agreement", |_, s| {
            let decided = s.actor_states.iter().filter_map(|a| match &**a {
                State::Server(ServerState { is_decided: true, accepted: Some((_, (_, _, v))), .. }) => {
                    Some(*v)
                }
                _ => None,
            });
            let read = s.network.iter_deliverable().filter_map(|e| match e.msg {
                Msg::GetOk(_, v) => Some(*v),
                _ => None,
            });
            let mut values = decided.chain(read);
            let first = values.next();
            values.all(|v| Some(v) == first)
        })
        .property(Expectation::Sometimes, "value chosen", |_, s| {
            s.network.iter_deliverable().any(|e| matches!(e.msg, Msg::GetOk(..)))
        })
}
