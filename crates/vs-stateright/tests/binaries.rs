//! Both benchmark binaries, the system allocator's and mimalloc's, run a child check end to
//! end: the JSON line they print has the published count.

use std::process::Command;

fn child_states(binary: &str) -> u64 {
    let output = Command::new(binary)
        .args([
            "one",
            "--tool",
            "foretell",
            "--model",
            "2pc",
            "--n",
            "3",
            "--engine",
            "bfs",
            "--threads",
            "2",
        ])
        .output()
        .expect("the benchmark binary starts");
    assert!(output.status.success(), "{binary}: {}", String::from_utf8_lossy(&output.stderr));
    let line: serde_json::Value = serde_json::from_slice(&output.stdout).expect("one JSON line");
    line["states"].as_u64().expect("a state count")
}

#[test]
fn both_allocators_check_two_phase_commit() {
    assert_eq!(child_states(env!("CARGO_BIN_EXE_vs-stateright")), 288);
    assert_eq!(child_states(env!("CARGO_BIN_EXE_vs-stateright-mimalloc")), 288);
}
