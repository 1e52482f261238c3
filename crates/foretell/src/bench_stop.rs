//! Ctrl-C for `foretell bench`, in all its modes: nothing is lost when a bench is interrupted.
//!
//! The handler is installed once, at the start of the bench, and its flag goes into every
//! engine run. A run that comes back while the flag is raised was cut short: its measurement
//! is discarded (a partial run would poison a median) and no further run starts. The tables
//! are then printed with the runs completed so far, each row saying how many it has, rows
//! without any marked "not measured", followed by a line saying the bench was interrupted and
//! after how many runs. The exit code is the completed bench's, as `check` exits 0 with its
//! partial report.

use crate::signals::interrupt_on_signal;
use anyhow::Result;
use foretell_check::Interrupt;

/// The bench's interrupt flag and the engine runs it has completed.
pub(crate) struct Stop {
    interrupt: Interrupt,
    completed: u64,
}

impl Stop {
    /// Installs the Ctrl-C handler; call once per process.
    pub(crate) fn on_ctrl_c() -> Result<Self> {
        Ok(Stop { interrupt: interrupt_on_signal()?, completed: 0 })
    }

    /// The flag to pass to every engine run.
    pub(crate) fn interrupt(&self) -> Interrupt {
        self.interrupt.clone()
    }

    /// Whether Ctrl-C was pressed: start no more runs.
    pub(crate) fn raised(&self) -> bool {
        self.interrupt.is_raised()
    }

    /// A run's result, counted as completed, or `None` when Ctrl-C cut it short (the flag is
    /// raised as it returns): its measurement is discarded.
    pub(crate) fn keep<T>(&mut self, result: T) -> Option<T> {
        if self.raised() {
            return None;
        }
        self.completed += 1;
        Some(result)
    }

    /// After the tables: the line saying the bench was interrupted, if it was.
    pub(crate) fn print_note(&self) {
        if self.raised() {
            outln!(
                "\nInterrupted (Ctrl-C) after {} completed runs: the tables show those runs only; the run \
                 in progress was discarded and no more were started.",
                self.completed
            );
        }
    }
}
