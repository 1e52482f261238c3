//! Stop signals: Ctrl-C (SIGINT), SIGTERM and SIGHUP raise a run's interrupt flag, so the run
//! stops at its next check of the flag and prints its partial report — the same for a user at
//! the terminal, for `timeout` and for a CI job cancelled. A signal that comes a second or
//! more after the first ends the process at once, exit code 130, for a run that cannot stop
//! cleanly: one stuck in a user's handler that never returns to where the flag is asked. One
//! that comes sooner is the same stop: `timeout` signals its command and then the command's
//! process group, and a terminal's Ctrl-C reaches every process of the foreground group.

use anyhow::{Context, Result};
use foretell_check::Interrupt;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The exit code after a second stop signal: 128 + SIGINT's number, as shells report Ctrl-C.
const EXIT_ON_SECOND_SIGNAL: i32 = 130;

/// How long after the first stop signal another one is still the same stop.
const SAME_STOP: Duration = Duration::from_secs(1);

/// An interrupt flag that the stop signals raise; installs the handler, so call once per process.
pub(crate) fn interrupt_on_signal() -> Result<Interrupt> {
    let interrupt = Interrupt::new();
    let signals = Signals { interrupt: interrupt.clone(), first: OnceLock::new() };
    ctrlc::set_handler(move || {
        if signals.received(Instant::now()) == Response::Exit {
            eprintln!(
                "foretell: stopped again before the run could stop cleanly; exiting without the report"
            );
            std::process::exit(EXIT_ON_SECOND_SIGNAL);
        }
    })
    .context("cannot install the handler of Ctrl-C and the stop signals")?;
    Ok(interrupt)
}

/// What the handler does on a signal.
#[derive(Debug, PartialEq, Eq)]
enum Response {
    /// The flag is raised: the run stops and reports.
    Stop,
    /// The flag was raised [`SAME_STOP`] or longer ago: the process exits.
    Exit,
}

/// The flag the signals raise, and when the first came.
struct Signals {
    interrupt: Interrupt,
    first: OnceLock<Instant>,
}

impl Signals {
    /// A signal at `now`: the first raises the flag; a later one asks for an exit, unless it
    /// is the same stop.
    fn received(&self, now: Instant) -> Response {
        self.interrupt.raise();
        match now.duration_since(*self.first.get_or_init(|| now)) < SAME_STOP {
            true => Response::Stop,
            false => Response::Exit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_signal_stops_the_run_and_one_a_second_later_exits() {
        let signals = Signals { interrupt: Interrupt::new(), first: OnceLock::new() };
        assert!(!signals.interrupt.is_raised());
        let first = Instant::now();
        assert_eq!(signals.received(first), Response::Stop);
        assert!(signals.interrupt.is_raised());
        assert_eq!(signals.received(first + SAME_STOP / 2), Response::Stop, "the same stop");
        assert_eq!(signals.received(first + SAME_STOP), Response::Exit);
        assert_eq!(signals.received(first + 3 * SAME_STOP), Response::Exit);
    }
}
