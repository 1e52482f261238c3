//! What the `foretell` binary's end-to-end tests share: running the binary in a directory, a
//! scratch directory per test, and reading its output.

#![allow(dead_code)] // each test binary uses the part it needs

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `foretell args` in `dir` and waits for it.
pub fn foretell(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_foretell"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the binary runs")
}

/// A fresh directory for test `name` of this process, removed with everything in it when the
/// test drops it (a failing test's panic drops it too).
pub fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("foretell-test-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// A test's scratch directory; see [`scratch`].
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The standard output as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The standard output (or any bytes) as JSON, with the text in the panic if it is not.
pub fn json(text: &[u8]) -> serde_json::Value {
    serde_json::from_slice(text).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(text)))
}

/// Runs `foretell args` in `dir`, sends it SIGINT (Ctrl-C) after `after`, and waits for it.
pub fn interrupted(args: &[&str], dir: &Path, after: std::time::Duration) -> Output {
    signalled(args, dir, &[(after, "INT")])
}

/// Runs `foretell args` in `dir`, sends it each signal (a name `kill` knows) after its pause,
/// and waits for it. A signal after the first may find the process gone, and is then not sent.
pub fn signalled(args: &[&str], dir: &Path, signals: &[(std::time::Duration, &str)]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_foretell"))
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    for (i, &(pause, signal)) in signals.iter().enumerate() {
        std::thread::sleep(pause);
        let kill = Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .stderr(std::process::Stdio::null())
            .status()
            .expect("kill runs");
        assert!(kill.success() || i > 0, "kill -{signal} failed");
    }
    child.wait_with_output().expect("the binary ends")
}
