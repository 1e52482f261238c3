//! When a run must stop for its time budget or an interrupt (Ctrl-C): the one answer every
//! engine asks — the global searches between worlds, local model checking between handler runs
//! and system states, lasso detection between executions, and each long loop of a liveness run
//! (a walk of up to `dmax` steps, a replay of a suspect path, the probes of
//! FindCriticalTransition, the prefix walk), cheaply, every [`POLL_EVERY`] steps where a loop is
//! hot. It is shared between threads. The engines' own bounds (states, memory, depth) are
//! theirs.
//!
//! The first poll that finds a reason records it, so that every later question gets the same
//! answer (a run interrupted after its time budget ran out stays "stopped at the time bound").

use crate::exploration::POLL_EVERY;
use crate::{Completion, Interrupt};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A run's stop condition.
pub(crate) struct Stop {
    started: Instant,
    timeout: Option<Duration>,
    interrupt: Option<Interrupt>,
    reason: OnceLock<Completion>,
}

impl Stop {
    /// Stops `timeout` after `started`, or when `interrupt` is raised.
    pub(crate) fn new(started: Instant, timeout: Option<Duration>, interrupt: Option<Interrupt>) -> Self {
        Stop { started, timeout, interrupt, reason: OnceLock::new() }
    }

    /// Never stops: for re-running a walk or a path that must be rebuilt whole (the path of a
    /// finding already made).
    pub(crate) fn never() -> Self {
        Stop::new(Instant::now(), None, None)
    }

    /// Why the run must stop, looking at the flag and the clock now; `None` if it goes on.
    pub(crate) fn poll(&self) -> Option<Completion> {
        if let Some(reason) = self.reason.get() {
            return Some(*reason);
        }
        let reason = if self.interrupt.as_ref().is_some_and(Interrupt::is_raised) {
            Completion::Interrupted
        } else if self.timeout.is_some_and(|t| self.started.elapsed() >= t) {
            Completion::TimeBound
        } else {
            return None;
        };
        Some(*self.reason.get_or_init(|| reason))
    }

    /// [`Stop::poll`] at step `step` of a long loop: looks only every [`POLL_EVERY`] steps (and
    /// at step 0, so that work handed out after the stop ends at once).
    pub(crate) fn poll_at(&self, step: usize) -> Option<Completion> {
        if step as u64 % POLL_EVERY == 0 {
            self.poll()
        } else {
            None
        }
    }

    /// The reason a poll has already found, without looking again.
    pub(crate) fn reason(&self) -> Option<Completion> {
        self.reason.get().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_reason_found_is_kept() {
        let interrupt = Interrupt::new();
        let stop = Stop::new(Instant::now(), Some(Duration::from_secs(3600)), Some(interrupt.clone()));
        assert_eq!(stop.poll(), None);
        assert_eq!(stop.reason(), None);
        interrupt.raise();
        // Between polls only every POLL_EVERY-th step looks.
        assert_eq!(stop.poll_at(1), None);
        assert_eq!(stop.poll_at(POLL_EVERY as usize), Some(Completion::Interrupted));
        assert_eq!(stop.reason(), Some(Completion::Interrupted));

        let out_of_time = Stop::new(Instant::now(), Some(Duration::ZERO), Some(Interrupt::new()));
        assert_eq!(out_of_time.poll_at(0), Some(Completion::TimeBound));
        assert_eq!(Stop::never().poll(), None);
    }
}
