//! Releasing a finished search's memory off the report's path.
//!
//! A search stopped by its time budget may hold gigabytes at that moment: a depth-first walk
//! ten thousand steps deep whose pending successors keep whole networks, a breadth-first level
//! of millions of worlds. Dropping them is work proportional to what they hold (0.8 s of a 3-s
//! `randtree` DFS, every allocation freed one by one), and it came between the budget and the
//! report. [`release`] hands such a value to a thread of its own, once its run has taken long
//! enough that starting a thread (tens of microseconds) is nothing beside it; shorter runs drop
//! theirs at once. A program that ends after its report (the CLI) never waits for the drop.
//!
//! Runs do not overlap a teardown: every run first waits for the releases in progress
//! ([`settle`]), so it has the machine and its memory budget sees its own memory, not its
//! predecessor's on its way out.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// A run shorter than this drops what it held itself.
const RELEASE_AFTER: Duration = Duration::from_millis(50);

/// How many releases are still dropping, and the signal each gives when it is done.
static RELEASING: Mutex<usize> = Mutex::new(0);
static RELEASED: Condvar = Condvar::new();

fn releasing() -> MutexGuard<'static, usize> {
    RELEASING.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Counts a release done when dropped: after the value, or while a panicking `Drop` unwinds.
struct Done;

impl Drop for Done {
    fn drop(&mut self) {
        *releasing() -= 1;
        RELEASED.notify_all();
    }
}

/// Drops `held`, which a run started at `started` has finished with: on a thread of its own if
/// the run has taken [`RELEASE_AFTER`] or more, else here and now (and here as well if no
/// thread can be started).
pub(crate) fn release<T: Send + 'static>(held: T, started: Instant) {
    if started.elapsed() < RELEASE_AFTER {
        drop(held);
        return;
    }
    // Counted before the thread starts, and under the lock its end needs, so the count never
    // goes below zero.
    let mut count = releasing();
    *count += 1;
    let spawned = std::thread::Builder::new().name("foretell-release".into()).spawn(move || {
        let _done = Done;
        drop(held);
    });
    // A thread that could not start dropped the closure, and `held` with it, already.
    if spawned.is_err() {
        *count -= 1;
    }
}

/// Waits until everything earlier runs released is dropped.
pub(crate) fn settle() {
    let mut count = releasing();
    while *count > 0 {
        count = RELEASED.wait(count).unwrap_or_else(PoisonError::into_inner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc::{channel, Receiver};
    use std::sync::Arc;

    /// Counts its drops; a gated one first waits until the test opens its gate, so a drop on
    /// the caller's thread would never return.
    struct Counted {
        drops: Arc<AtomicUsize>,
        gate: Option<Receiver<()>>,
    }

    impl Drop for Counted {
        fn drop(&mut self) {
            if let Some(gate) = &self.gate {
                let _ = gate.recv();
            }
            self.drops.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_short_run_drops_at_once_and_a_long_one_before_the_next_run_starts() {
        let drops = Arc::new(AtomicUsize::new(0));
        release(Counted { drops: Arc::clone(&drops), gate: None }, Instant::now());
        assert_eq!(drops.load(Ordering::SeqCst), 1, "a short run's value is dropped before release returns");
        let (open, gate) = channel();
        let long_ago = Instant::now() - RELEASE_AFTER * 2;
        release(Counted { drops: Arc::clone(&drops), gate: Some(gate) }, long_ago);
        assert_eq!(drops.load(Ordering::SeqCst), 1, "a long run's value is dropped on another thread");
        open.send(()).expect("the releasing thread waits at the gate");
        settle();
        assert_eq!(drops.load(Ordering::SeqCst), 2, "settle waits for the drop");
    }
}
