//! `vs-stateright-mimalloc`: the side-by-side benchmark ([`foretell_vs_stateright::cli`]) with
//! mimalloc, the `foretell` command's allocator, for every contestant.

use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: foretell::Mimalloc = foretell::Mimalloc;

fn main() -> ExitCode {
    foretell_vs_stateright::cli::main("mimalloc")
}
