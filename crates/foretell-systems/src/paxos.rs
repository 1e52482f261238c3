//! Single-decree Paxos as CrystalBall (NSDI'09) and LMC (NSDI'11) ran it: three nodes, each a
//! proposer, an acceptor and a learner, over TCP-like FIFO channels with node resets.
//!
//! A round is a pair `(counter, node)`, ordered lexicographically. A `Propose(v)` driver input
//! starts a round one counter above every counter the node has seen and sends `Prepare` to every
//! node, itself included. An acceptor promises a round higher than its promise and reports its
//! vote; on a majority of promises the leader proposes the value of the highest-numbered vote
//! (its own value if there is none) in `Accept`; an acceptor votes for a round at least its
//! promise and tells every learner in `Learn`; a learner that hears a majority of votes for the
//! same round and value has that value chosen.
//!
//! Acceptor state (promise, vote, highest counter seen) and the chosen value are durable and
//! survive a reset; the leader's round and the learner's tallies are volatile. A reset breaks
//! the node's connections and loses the messages in flight on them.
//!
//! The two bugs the papers injected are variants: `last-promise` (the leader adopts the value of
//! the last promise to arrive, not of the highest-numbered vote) and `forget-promise` (an
//! acceptor's promise does not survive a reset: it falls back to its vote's round).

use crate::{apply_scenario, Param, ScenarioInfo, Settings, System, Variant};
use foretell_check::DynModel;
use foretell_model::{
    Budget, Driver, Event, Faults, Model, NetworkKind, NodeId, Out, Projection, Protocol, Scenario, World,
};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A proposed value.
pub type Value = u32;

/// The number of nodes.
pub const NODES: usize = 3;

/// A majority of [`NODES`].
const MAJORITY: usize = NODES / 2 + 1;

/// A round (ballot): ordered by counter, then by the leader's node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Round {
    /// The counter.
    pub counter: u32,
    /// The leader of the round.
    pub node: u32,
}

/// An acceptor's vote: the round it voted in and the value.
pub type Vote = (Round, Value);

/// Where a leader is in its round.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    /// Collecting promises.
    Preparing,
    /// The value is proposed with `Accept`.
    Accepting,
}

/// A set of nodes, one bit each: a leader's promisers and a learner's voters. It is encoded (and
/// shown) as the list of its nodes in order, like a `BTreeSet<NodeId>`, but copies, compares and
/// hashes as one byte, which every engine does with a node's state on each of its steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Nodes(u8);

impl Nodes {
    /// Adds `node`.
    pub fn insert(&mut self, node: NodeId) {
        self.0 |= 1 << node.0;
    }

    /// Whether `node` is in the set.
    pub fn contains(self, node: NodeId) -> bool {
        self.0 & (1 << node.0) != 0
    }

    /// The number of nodes in the set.
    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The nodes, in order.
    pub fn iter(self) -> impl Iterator<Item = NodeId> {
        let mut left = self.0;
        std::iter::from_fn(move || {
            (left != 0).then(|| {
                let node = NodeId(left.trailing_zeros());
                left &= left - 1;
                node
            })
        })
    }
}

impl Serialize for Nodes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.len()))?;
        self.iter().try_for_each(|node| seq.serialize_element(&node))?;
        seq.end()
    }
}

impl<'de> Deserialize<'de> for Nodes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut nodes = Nodes::default();
        for node in Vec::<NodeId>::deserialize(deserializer)? {
            if node.index() >= NODES {
                return Err(serde::de::Error::custom(format!(
                    "node {} does not exist (nodes are 0 to {})",
                    node.index(),
                    NODES - 1
                )));
            }
            nodes.insert(node);
        }
        Ok(nodes)
    }
}

/// A leader's volatile state for its current round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leader {
    /// The round.
    pub round: Round,
    /// The value it proposes if no acceptor has voted.
    pub value: Value,
    /// The phase.
    pub phase: Phase,
    /// The acceptors whose promises arrived.
    pub promised_by: Nodes,
    /// The vote each promise reported, by acceptor (`None` for an acceptor not in
    /// `promised_by`, so that equal promises make equal states).
    pub votes: [Option<Vote>; NODES],
    /// The acceptor whose promise arrived last; recorded only under `last-promise`, so that the
    /// correct version's states do not split on arrival order.
    pub last: Option<NodeId>,
}

/// A node's state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Acceptor (durable): the highest round promised; `None` is "−1".
    pub promised: Option<Round>,
    /// Acceptor (durable): the last vote.
    pub accepted: Option<Vote>,
    /// Durable: the highest round counter seen, so a new round is above every round seen.
    pub seen: u32,
    /// Leader (volatile): the current round, if the node proposed.
    pub leader: Option<Leader>,
    /// Learner (volatile): the acceptors heard voting for each round and value, sorted by vote.
    pub learns: Vec<(Vote, Nodes)>,
    /// Learner (durable): the chosen value.
    pub chosen: Option<Value>,
}

/// Messages of the protocol.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Msg {
    /// Phase 1a: a leader asks for promises for its round.
    Prepare(Round),
    /// Phase 1b: an acceptor promises the round and reports its vote.
    Promise(Round, Option<Vote>),
    /// Phase 2a: a leader proposes a value in its round.
    Accept(Round, Value),
    /// Phase 2b: an acceptor tells every learner it voted.
    Learn(Round, Value),
}

/// Driver inputs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Input {
    /// Start a round proposing this value.
    Propose(Value),
}

/// The bug variants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Bug {
    /// The correct protocol.
    #[default]
    None,
    /// The leader takes the value of the last promise received.
    LastPromise,
    /// An acceptor's promise does not survive a reset.
    ForgetPromise,
}

/// The protocol.
#[derive(Clone, Debug)]
pub struct Paxos {
    bug: Bug,
}

impl Paxos {
    /// The value a leader proposes once it has a majority of promises.
    fn pick(&self, leader: &Leader) -> Value {
        let vote = match self.bug {
            Bug::LastPromise => leader.last.and_then(|n| leader.votes[n.index()]),
            _ => leader.votes.iter().flatten().max_by_key(|(round, _)| *round).copied(),
        };
        vote.map_or(leader.value, |(_, value)| value)
    }
}

impl Protocol for Paxos {
    type State = State;
    type Msg = Msg;
    type Timer = ();
    type Input = Input;

    fn init(&self, _: NodeId, _: &mut Out<'_, Self>) -> State {
        State { promised: None, accepted: None, seen: 0, leader: None, learns: Vec::new(), chosen: None }
    }

    fn restart(&self, me: NodeId, crashed: &State, out: &mut Out<'_, Self>) -> State {
        let promised = match self.bug {
            Bug::ForgetPromise => crashed.accepted.map(|(round, _)| round),
            _ => crashed.promised,
        };
        State {
            promised,
            accepted: crashed.accepted,
            seen: crashed.seen,
            chosen: crashed.chosen,
            ..self.init(me, out)
        }
    }

    fn on_input(&self, me: NodeId, state: &mut State, input: &Input, out: &mut Out<'_, Self>) {
        let Input::Propose(value) = *input;
        let round = Round { counter: state.seen + 1, node: me.0 };
        state.seen = round.counter;
        state.leader = Some(Leader {
            round,
            value,
            phase: Phase::Preparing,
            promised_by: Nodes::default(),
            votes: [None; NODES],
            last: None,
        });
        out.log(format_args!("proposes {value} in round {round:?}"));
        let all = out.nodes();
        out.broadcast(all, Msg::Prepare(round));
    }

    fn on_message(&self, _: NodeId, state: &mut State, from: NodeId, msg: &Msg, out: &mut Out<'_, Self>) {
        match *msg {
            Msg::Prepare(round) => {
                state.seen = state.seen.max(round.counter);
                if state.promised.is_none_or(|p| round > p) {
                    state.promised = Some(round);
                    out.send(from, Msg::Promise(round, state.accepted));
                }
            }
            Msg::Promise(round, vote) => {
                let Some(leader) = state.leader.as_mut() else { return };
                if leader.round != round || leader.phase != Phase::Preparing {
                    return;
                }
                leader.promised_by.insert(from);
                leader.votes[from.index()] = vote;
                if self.bug == Bug::LastPromise {
                    leader.last = Some(from);
                }
                if leader.promised_by.len() >= MAJORITY {
                    let value = self.pick(leader);
                    leader.phase = Phase::Accepting;
                    out.log(format_args!("round {round:?} proposes {value}"));
                    let all = out.nodes();
                    out.broadcast(all, Msg::Accept(round, value));
                }
            }
            Msg::Accept(round, value) => {
                state.seen = state.seen.max(round.counter);
                if state.promised.is_none_or(|p| round >= p) {
                    state.promised = Some(round);
                    state.accepted = Some((round, value));
                    let all = out.nodes();
                    out.broadcast(all, Msg::Learn(round, value));
                }
            }
            Msg::Learn(round, value) => {
                let vote = (round, value);
                let at = match state.learns.binary_search_by_key(&vote, |&(v, _)| v) {
                    Ok(at) => at,
                    Err(at) => {
                        state.learns.insert(at, (vote, Nodes::default()));
                        at
                    }
                };
                let voters = &mut state.learns[at].1;
                voters.insert(from);
                if voters.len() >= MAJORITY {
                    out.require(state.chosen.is_none_or(|c| c == value), "chosen never changes");
                    state.chosen = Some(value);
                }
            }
        }
    }
}

/// Whether two nodes have different values chosen.
fn disagree(world: &World<Paxos>) -> bool {
    let mut chosen = world.states().filter_map(|s| s.chosen);
    chosen.next().is_some_and(|first| chosen.any(|value| value != first))
}

/// The model: three nodes, the one-shot `proposals` (node, value), FIFO channels, at most
/// `resets` node resets; `always "agreement"` (no two nodes chose different values) and
/// `sometimes "value chosen"`, besides the local assertion `"chosen never changes"`.
pub fn model(proposals: &[(NodeId, Value)], resets: u32, bug: Bug) -> Model<Paxos> {
    let driver = proposals
        .iter()
        .fold(Driver::new(), |driver, &(node, value)| driver.input(node, Input::Propose(value)));
    Model::new(Paxos { bug })
        .nodes(NODES)
        .network(NetworkKind::FifoChannels)
        .faults(Faults::none().resets(Budget::at_most(resets)))
        .driver(driver)
        .always("agreement", |w| !disagree(w))
        .projection("agreement", Projection::conflict(|s: &State| s.chosen.map(u64::from)))
        .sometimes("value chosen", |w| w.states().any(|s| s.chosen.is_some()))
}

/// The paper's numbering of the [`live`] scenario: node 0 proposes 1, node 1 proposes 2.
pub const LIVE_PROPOSALS: &str = "0:1,1:2";

/// LMC's live state (section 5.5) for two proposals `A:V1,B:V2`: node A proposed V1 and nodes A
/// and B accepted it, but only A learned it — the third node's accept and the other learns are
/// still in flight ("lost"), and B has not proposed yet. `None` unless there are exactly two
/// proposals.
pub fn live(proposals: &[(NodeId, Value)]) -> Option<Scenario<Paxos>> {
    let &[(a, value), (b, _)] = proposals else { return None };
    let round = Round { counter: 1, node: a.0 };
    let c = NodeId::all(NODES).find(|n| *n != a && *n != b).expect("three nodes");
    let deliver = |from: NodeId, to: NodeId, msg: Msg| Event::Deliver { from, to, msg };
    let steps = [
        Event::Input { node: a, input: Input::Propose(value) },
        deliver(a, a, Msg::Prepare(round)),
        deliver(a, b, Msg::Prepare(round)),
        deliver(a, c, Msg::Prepare(round)),
        deliver(a, a, Msg::Promise(round, None)),
        deliver(b, a, Msg::Promise(round, None)),
        deliver(a, a, Msg::Accept(round, value)),
        deliver(a, b, Msg::Accept(round, value)),
        deliver(a, a, Msg::Learn(round, value)),
        deliver(b, a, Msg::Learn(round, value)),
    ];
    Some(steps.into_iter().fold(Scenario::new("live"), Scenario::then))
}

/// Parses `proposals`: comma-separated `NODE:VALUE` pairs, at most one per node.
///
/// # Errors
/// The reason, if the text is not such a list.
pub fn parse_proposals(text: &str) -> Result<Vec<(NodeId, Value)>, String> {
    let mut proposals: Vec<(NodeId, Value)> = Vec::new();
    for item in text.split(',').map(str::trim) {
        let (node, value) = item.split_once(':').ok_or_else(|| format!("{item:?} is not NODE:VALUE"))?;
        let node: usize = node.trim().parse().map_err(|_| format!("{node:?} is not a node"))?;
        let value: Value = value.trim().parse().map_err(|_| format!("{value:?} is not a value"))?;
        if node >= NODES {
            return Err(format!("node {node} does not exist (nodes are 0 to {})", NODES - 1));
        }
        let node = NodeId::new(node);
        if proposals.iter().any(|(n, _)| *n == node) {
            return Err(format!("node {node} proposes twice"));
        }
        proposals.push((node, value));
    }
    Ok(proposals)
}

const PARAMS: &[Param] = &[
    Param {
        name: "proposals",
        default: "0:1,2:2",
        help: "NODE:VALUE proposals, comma-separated (nodes 0 to 2)",
    },
    Param { name: "resets", default: "1", help: "node resets (0 to 3)" },
];
const VARIANTS: &[Variant] = &[
    Variant {
        name: "last-promise",
        help: "the leader adopts the value of the last promise received, not the highest-numbered vote",
    },
    Variant {
        name: "forget-promise",
        help: "an acceptor's promise does not survive a reset (promised := voted round)",
    },
];

fn build(settings: &Settings) -> Result<Box<dyn DynModel>, crate::ConfigError> {
    let text = settings.values.get("proposals").map(String::as_str).unwrap_or_default();
    let proposals = parse_proposals(text).map_err(|reason| crate::ConfigError::BadValue {
        name: "proposals".into(),
        value: text.into(),
        reason,
    })?;
    let resets = settings.number("resets", 0..=3)?;
    let bug = if settings.is("last-promise") {
        Bug::LastPromise
    } else if settings.is("forget-promise") {
        Bug::ForgetPromise
    } else {
        Bug::None
    };
    let model = apply_scenario(model(&proposals, resets as u32, bug), settings, |name| match name {
        "live" => live(&proposals),
        _ => None,
    })
    .map_err(|error| match (&settings.start, error) {
        (Some(crate::Start::Scenario(name)), crate::ConfigError::UnknownScenario { .. })
            if name == "live" =>
        {
            crate::ConfigError::BadValue {
                name: "proposals".into(),
                value: text.into(),
                reason: "scenario live needs exactly two proposals".into(),
            }
        }
        (_, error) => error,
    })?;
    Ok(Box::new(model))
}

const SCENARIOS: &[ScenarioInfo] = &[ScenarioInfo {
    needs: &[],
    name: "live",
    help:
        "LMC section 5.5's live state for two proposals A:V1,B:V2: A's value V1 is accepted by A and B and \
           learned by A only; B has yet to propose V2",
}];

/// The registry entry.
pub fn system() -> System {
    System {
        name: "paxos",
        about:
            "single-decree Paxos as CrystalBall and LMC ran it: three nodes over FIFO channels with resets",
        params: PARAMS,
        variants: VARIANTS,
        scenarios: SCENARIOS,
        build,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use foretell_check::Check;

    fn default_proposals() -> Vec<(NodeId, Value)> {
        parse_proposals("0:1,2:2").unwrap()
    }

    #[test]
    fn proposals_parse_and_bad_text_is_rejected() {
        assert_eq!(default_proposals(), vec![(NodeId(0), 1), (NodeId(2), 2)]);
        for bad in ["", "0", "0:x", "3:1", "0:1,0:2", "a:1"] {
            assert!(parse_proposals(bad).is_err(), "{bad:?}");
        }
        let system = system();
        let settings = system.settings(None, &[("proposals".into(), "0:1;2:2".into())]).unwrap();
        assert!(matches!((system.build)(&settings), Err(crate::ConfigError::BadValue { .. })));
    }

    /// A node set reads and writes as the list of its nodes, and refuses a node that does not
    /// exist.
    #[test]
    fn node_sets_are_lists_of_nodes() {
        let mut nodes = Nodes::default();
        assert!(nodes.is_empty());
        nodes.insert(NodeId(2));
        nodes.insert(NodeId(0));
        nodes.insert(NodeId(2));
        assert_eq!((nodes.len(), nodes.contains(NodeId(1))), (2, false));
        let text = serde_json::to_string(&nodes).unwrap();
        assert_eq!(text, "[0,2]");
        assert_eq!(serde_json::from_str::<Nodes>(&text).unwrap(), nodes);
        let error = serde_json::from_str::<Nodes>("[0,3]").unwrap_err();
        assert!(error.to_string().contains("node 3 does not exist"), "{error}");
    }

    /// BFS depth bound shared by the bug and fix checks: both bugs' shortest traces take 19 steps
    /// (two rounds, each a proposal, two prepares, two promises, two accepts and two learns,
    /// plus a learn a FIFO channel holds in front of the second round's). The full space of
    /// the correct version does not fit in memory (it was killed after 4.5 minutes in release),
    /// and 19 steps already take millions of worlds, minutes in a debug build: these checks are
    /// skipped in debug builds and run in the release-mode test command.
    const DEPTH: usize = 19;

    /// A bound a debug build explores in seconds.
    const SHALLOW: usize = 12;

    /// Local model checking, both forms, against BFS on the paper's Figure 10 space (one
    /// proposal, no resets): the whole space, no violation.
    #[test]
    fn lmc_explores_one_proposal_completely() {
        use foretell_check::{Completion, LmcMode, LmcOptions};
        let model = model(&parse_proposals("0:1").unwrap(), 0, Bug::None);
        let bfs = Check::bfs(&model).run();
        println!("{bfs}");
        assert_eq!(bfs.completion, Completion::Exhausted);
        for mode in [LmcMode::General, LmcMode::Projected] {
            let report = Check::lmc(&model).lmc_options(LmcOptions { mode, ..LmcOptions::default() }).run();
            println!("{report}");
            assert_eq!(report.completion, Completion::Exhausted);
            assert!(report.violations.is_empty());
        }
    }

    fn lmc(model: &Model<Paxos>, mode: foretell_check::LmcMode) -> foretell_check::Report {
        let options = foretell_check::LmcOptions { mode, ..Default::default() };
        let report = Check::lmc(model).lmc_options(options).run();
        println!("{report}");
        report
    }

    /// LMC section 5.5: from the live state, the projected search finds `last-promise` (node 1's
    /// new round adopts node 2's empty promise, which arrived last, and chooses 2 while node 0
    /// chose 1) with a sound trace that the simulator replays.
    #[test]
    fn lmc_finds_last_promise_from_the_live_state() {
        let proposals = parse_proposals(LIVE_PROPOSALS).unwrap();
        let model = model(&proposals, 0, Bug::LastPromise).start_from(live(&proposals).unwrap());
        let report = lmc(&model, foretell_check::LmcMode::Projected);
        let violation = report.assert_violated("agreement");
        println!("{}", violation.trace.to_text(false));
        foretell_model::Simulator::new(&model).unwrap().replay(&violation.trace).expect("replays");
        let stats = report.lmc.as_ref().unwrap();
        assert!(stats.unsound >= 1, "unsound preliminary violations come first: {report}");
    }

    /// The correct version from the same live state: exhausted, nothing reported.
    #[test]
    fn lmc_correct_version_holds_from_the_live_state() {
        let proposals = parse_proposals(LIVE_PROPOSALS).unwrap();
        let model = model(&proposals, 0, Bug::None).start_from(live(&proposals).unwrap());
        for mode in [foretell_check::LmcMode::General, foretell_check::LmcMode::Projected] {
            let report = lmc(&model, mode);
            assert_eq!(report.completion, foretell_check::Completion::Exhausted);
            assert!(report.violations.is_empty(), "{report}");
        }
    }

    /// Two proposals from the initial world (the paper's harder space), first 3,000 local
    /// states: the correct version has preliminary violations — local states that adopted the
    /// other value through impossible orders — and soundness verification rejects each one.
    #[test]
    fn lmc_correct_version_preliminary_violations_are_unsound() {
        let model = model(&parse_proposals(LIVE_PROPOSALS).unwrap(), 0, Bug::None);
        let options =
            foretell_check::LmcOptions { mode: foretell_check::LmcMode::Projected, ..Default::default() };
        let report = Check::lmc(&model).lmc_options(options).states_max(3_000).run();
        println!("{report}");
        assert_eq!(report.completion, foretell_check::Completion::StatesBound);
        assert!(report.violations.is_empty(), "{report}");
        let stats = report.lmc.as_ref().unwrap();
        assert!(stats.preliminary_violations > 0, "{report}");
        assert_eq!(stats.unsound + stats.undecided, stats.preliminary_violations, "{report}");
        assert!(stats.unsound > 0, "{report}");
    }

    /// The correct version within a shallow bound, which a debug build checks in seconds.
    #[test]
    fn correct_version_holds_agreement_shallow() {
        let model = model(&default_proposals(), 1, Bug::None);
        let report = Check::bfs(&model).depth_max(SHALLOW).run();
        println!("{report}");
        report.assert_holds("agreement").assert_covered("value chosen");
        assert!(report.violations.is_empty(), "{report}");
    }

    /// The correct version within the bound the bugs need: 8,801,644 worlds, 53 s in release.
    #[test]
    #[cfg_attr(debug_assertions, ignore = "millions of worlds; runs in the release-mode test command")]
    fn correct_version_holds_agreement() {
        let model = model(&default_proposals(), 1, Bug::None);
        let report = Check::bfs(&model).depth_max(DEPTH).run();
        println!("{report}");
        report.assert_holds("agreement").assert_covered("value chosen");
        assert!(report.violations.is_empty(), "{report}");
    }

    /// The leader adopts the last promise's value even when it carries no vote: no reset needed.
    #[test]
    #[cfg_attr(debug_assertions, ignore = "millions of worlds; runs in the release-mode test command")]
    fn last_promise_is_found_and_replays() {
        let model = model(&default_proposals(), 0, Bug::LastPromise);
        let report = Check::bfs(&model).depth_max(DEPTH).run();
        println!("{report}");
        let violation = report.assert_violated("agreement");
        println!("{}", violation.trace.to_text(false));
        assert_eq!(violation.trace.steps.len(), 19);
        foretell_model::Simulator::new(&model).unwrap().replay(&violation.trace).expect("replays");
    }

    /// The shortest trace shows the local assertion (a learner that chose one value hears a
    /// majority for the other) before two learners disagree.
    #[test]
    #[cfg_attr(debug_assertions, ignore = "millions of worlds; runs in the release-mode test command")]
    fn forget_promise_is_found_and_replays() {
        let model = model(&default_proposals(), 1, Bug::ForgetPromise);
        let report = Check::bfs(&model).depth_max(DEPTH).run();
        println!("{report}");
        let violation = report.assert_violated("chosen never changes");
        println!("{}", violation.trace.to_text(false));
        assert_eq!(violation.trace.steps.len(), 19);
        foretell_model::Simulator::new(&model).unwrap().replay(&violation.trace).expect("replays");
    }
}
