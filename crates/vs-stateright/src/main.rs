//! `vs-stateright`: the side-by-side benchmark ([`foretell_vs_stateright::cli`]) with the
//! system allocator for every contestant.

use std::process::ExitCode;

fn main() -> ExitCode {
    foretell_vs_stateright::cli::main("system")
}
