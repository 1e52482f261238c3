//! Rounds of agreement: every worker broadcasts a summary at timestamp `t`, and each reads all
//! the summaries of `t` once timely's progress tracking says that none is still on its way.
//!
//! This is how the workers of a cluster take the same decision at the same point (stop at a
//! violation or a bound, expand the next level, merge the counts) without a barrier of their
//! own: each worker decides from the same set of summaries with the same deterministic rule.

use crate::launch::{wait_until, LeakOnUnwind, Local};
use crate::ClusterError;
use std::cell::RefCell;
use std::rc::Rc;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::operators::{Input, Probe};
use timely::dataflow::{InputHandleVec, ProbeHandle};
use timely::worker::Worker;
use timely::ExchangeData;

/// One worker's end of the summary broadcast.
pub(crate) struct Rounds<S: ExchangeData + Clone> {
    input: LeakOnUnwind<InputHandleVec<u64, S>>,
    probe: ProbeHandle<u64>,
    /// Summaries received, with their round: a fast worker's next summary may arrive before
    /// this worker has read the current round's.
    received: Rc<RefCell<Vec<(u64, S)>>>,
}

impl<S: ExchangeData + Clone> Rounds<S> {
    /// Builds the broadcast dataflow on `worker`.
    pub(crate) fn new(worker: &mut Worker) -> Self {
        let mut input = InputHandleVec::new();
        let probe = ProbeHandle::new();
        let received = Rc::new(RefCell::new(Vec::new()));
        let sink = Rc::clone(&received);
        worker.dataflow::<u64, _, _>(|scope| {
            scope
                .input_from(&mut input)
                .broadcast()
                .unary::<CapacityContainerBuilder<Vec<()>>, _, _, _>(Pipeline, "CollectSummaries", |_, _| {
                    move |input, _| {
                        input.for_each(|stamp, data| {
                            // A totally ordered timestamp: the stamp is one time.
                            let round = stamp.least().copied().unwrap_or_default();
                            sink.borrow_mut().extend(data.drain(..).map(|s| (round, s)));
                        });
                    }
                })
                .probe_with(&probe);
        });
        Rounds { input: LeakOnUnwind::new(input), probe, received }
    }

    /// Broadcasts `mine` as this worker's summary of `round` and returns every worker's summary
    /// of `round` (in arrival order), once all have arrived. Rounds must be consecutive from 0.
    pub(crate) fn exchange(
        &mut self,
        worker: &mut Worker,
        local: &Local<'_>,
        round: u64,
        mine: S,
    ) -> Result<Vec<S>, ClusterError> {
        self.input.advance_to(round);
        self.input.send(mine);
        self.input.advance_to(round + 1);
        let probe = &self.probe;
        wait_until(worker, local, || !probe.less_than(&(round + 1)))?;
        let mut received = self.received.borrow_mut();
        let (now, later): (Vec<_>, Vec<_>) = received.drain(..).partition(|(r, _)| *r == round);
        *received = later;
        Ok(now.into_iter().map(|(_, s)| s).collect())
    }
}
