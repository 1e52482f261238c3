//! The command's standard output, which fails cleanly: `println!` panics when stdout is closed
//! or full (`foretell list | head -1`, `> /dev/full`). Here a reader that went away ends the
//! process quietly, as `ripgrep` does, and any other write error is a one-line error with exit
//! code 2.

use std::fmt;
use std::io::{self, Write};

/// Prints like `print!`, through [`write`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::write(format_args!($($arg)*)) };
}

/// Prints like `println!`, through [`write`].
macro_rules! outln {
    () => { $crate::output::write(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::output::write(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Writes `text` to stdout; exits the process if stdout cannot take it.
pub(crate) fn write(text: fmt::Arguments<'_>) {
    if let Err(error) = io::stdout().lock().write_fmt(text) {
        if error.kind() == io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("foretell: cannot write to standard output: {error}");
        std::process::exit(2);
    }
}
