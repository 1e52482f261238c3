//! The cost of cluster mode against the local breadth-first engine, on two-phase commit.
//!
//! `cargo run --release -p foretell-cluster --example overhead -- [--rms 6,7] [--runs 3]`
//!
//! For each RM count: local `Check::bfs` (1 and 2 threads), then `check_distributed` with one
//! process of one and of two workers, and two processes of one worker on 127.0.0.1 (this
//! example starts itself as process 1). Prints a Markdown table of median wall-clock seconds
//! (cluster runs: from the call to the report, connection set-up included), distinct states per
//! second, and the CPU seconds of the run (this process and its children, from `/proc`: on a
//! machine shared with other work, the CPU time says more than the wall time); every
//! configuration must count the same states.

use foretell_check::{Check, CheckOptions};
use foretell_cluster::{check_distributed, ClusterConfig};
use foretell_systems::two_phase_commit;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    if let Some(hosts) = value("--process-1-of") {
        // The second process of a two-process run.
        let rms = value("--rms").and_then(|r| r.parse().ok()).expect("--rms N");
        let config =
            ClusterConfig { processes: 2, process_index: 1, hosts: split(&hosts), ..Default::default() };
        check_distributed(&two_phase_commit::model(rms, false), &CheckOptions::default(), &config)
            .expect("process 1 runs");
        return;
    }
    let rms_list: Vec<usize> = split(&value("--rms").unwrap_or_else(|| "6,7".into()))
        .iter()
        .map(|r| r.parse().expect("--rms takes numbers"))
        .collect();
    let runs: usize = value("--runs").map_or(3, |r| r.parse().expect("--runs takes a number"));
    println!(
        "| RMs | configuration | distinct states | wall s (median of {runs}) | states/s | vs local | CPU s |"
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: |");
    for rms in rms_list {
        let model = two_phase_commit::model(rms, false);
        let configurations: [(&str, &dyn Fn() -> u64); 5] = [
            ("local bfs, 1 thread", &|| Check::bfs(&model).run().stats.unique_states),
            ("local bfs, 2 threads", &|| Check::bfs(&model).threads(2).run().stats.unique_states),
            ("cluster, 1 process x 1 worker", &|| cluster(&model, 1)),
            ("cluster, 1 process x 2 workers", &|| cluster(&model, 2)),
            ("cluster, 2 processes x 1 worker", &|| two_processes(&model, rms)),
        ];
        let mut local = None;
        for (name, run) in configurations {
            let mut times = Vec::new();
            let mut cpu = Vec::new();
            let mut states = 0;
            for _ in 0..runs {
                let (started, cpu_before) = (Instant::now(), cpu_seconds());
                states = run();
                times.push(started.elapsed().as_secs_f64());
                cpu.push(cpu_seconds() - cpu_before);
            }
            let (median, cpu) = (median(&mut times), median(&mut cpu));
            let base = *local.get_or_insert(median);
            println!(
                "| {rms} | {name} | {states} | {median:.3} | {:.0} | {:.2}x | {cpu:.2} |",
                states as f64 / median,
                median / base
            );
        }
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// CPU seconds used by this process and its waited-for children (user and system), from
/// `/proc/self/stat` in clock ticks of 1/100 s; 0 where `/proc` is missing.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    // Fields 14 to 17 (utime, stime, cutime, cstime) follow the parenthesised command name.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: f64 = after.split_whitespace().skip(11).take(4).filter_map(|t| t.parse::<f64>().ok()).sum();
    ticks / 100.0
}

fn split(text: &str) -> Vec<String> {
    text.split(',').map(String::from).collect()
}

fn cluster(model: &foretell_model::Model<two_phase_commit::TwoPhase>, workers: usize) -> u64 {
    let report = check_distributed(model, &CheckOptions::default(), &ClusterConfig::local(workers));
    report.expect("the cluster run succeeds").expect("process 0 reports").stats.unique_states
}

/// Process 0 here, process 1 a child of this example, on two free local ports.
fn two_processes(model: &foretell_model::Model<two_phase_commit::TwoPhase>, rms: usize) -> u64 {
    let (a, b) = (TcpListener::bind("127.0.0.1:0").unwrap(), TcpListener::bind("127.0.0.1:0").unwrap());
    let hosts = format!("{},{}", a.local_addr().unwrap(), b.local_addr().unwrap());
    drop((a, b));
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--process-1-of", &hosts, "--rms", &rms.to_string()])
        .stdout(Stdio::null())
        .spawn()
        .expect("process 1 starts");
    let config = ClusterConfig { processes: 2, process_index: 0, hosts: split(&hosts), ..Default::default() };
    let report = check_distributed(model, &CheckOptions::default(), &config);
    assert!(child.wait().unwrap().success(), "process 1 failed");
    report.expect("the cluster run succeeds").expect("process 0 reports").stats.unique_states
}
