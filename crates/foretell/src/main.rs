//! The `foretell` command: the CLI plus glue code over the library crates.
//!
//! Results go to stdout (text, or one JSON object with `--json`); progress and errors go to
//! stderr. Exit codes: 0 every property holds within the bounds explored, 1 a violation was
//! found (or a replay departs from its trace), 2 bad usage or bad input, with a one-line reason.

#[macro_use]
mod output;
mod bench;
mod bench_lasso;
mod bench_liveness;
mod bench_lmc;
mod bench_stop;
mod cli;
#[cfg(feature = "cluster")]
mod cluster_cmd;
mod commands;
mod lasso_cmd;
mod signals;

use clap::Parser;
use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: foretell::Mimalloc = foretell::Mimalloc;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("foretell: {error:#}");
            ExitCode::from(2)
        }
    }
}
