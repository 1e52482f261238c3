//! One process of the cluster tests (`tests/processes.rs` launches two): runs the test protocol
//! of `tests/support` by distributed breadth-first search or swarm walks, and on process 0
//! prints the counts on the first line of stdout and the violation's trace (JSON), if any,
//! after it.
//!
//! Usage: `cluster-test-node bfs|swarm [--bug] [--nodes N] [--workers N] [--processes N]
//! [--process-index I] [--hostfile FILE]`

#[path = "../../tests/support/mod.rs"]
mod support;

use foretell_check::CheckOptions;
use foretell_cluster::{check_distributed, swarm_walks, ClusterConfig};
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("cluster-test-node: {error}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let mode = args.next().ok_or("expected bfs or swarm")?;
    let (mut bug, mut nodes, mut config) = (false, 3, ClusterConfig::default());
    while let Some(flag) = args.next() {
        if flag == "--bug" {
            bug = true;
            continue;
        }
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let number = || value.parse::<usize>().map_err(|e| format!("{flag} {value}: {e}"));
        match flag.as_str() {
            "--nodes" => nodes = number()?,
            "--workers" => config.workers = number()?,
            "--processes" => config.processes = number()?,
            "--process-index" => config.process_index = number()?,
            "--hostfile" => {
                let text = std::fs::read_to_string(&value).map_err(|e| format!("{value}: {e}"))?;
                config.hosts =
                    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect();
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    let model = support::model(nodes, bug);
    let violation = match mode.as_str() {
        "bfs" => {
            let Some(report) =
                check_distributed(&model, &CheckOptions::default(), &config).map_err(|e| e.to_string())?
            else {
                return Ok(());
            };
            let s = &report.stats;
            println!("bfs {} {} {} {:?}", s.unique_states, s.transitions, s.max_depth, report.completion);
            report.violations.into_iter().next()
        }
        "swarm" => {
            let Some(report) = swarm_walks(&model, 200, 40, 7, &config).map_err(|e| e.to_string())? else {
                return Ok(());
            };
            println!("swarm {} {}", report.walks, report.steps);
            report.violation
        }
        other => return Err(format!("unknown mode {other:?}")),
    };
    if let Some(violation) = violation {
        println!("{}", violation.trace.to_json());
    }
    Ok(())
}
