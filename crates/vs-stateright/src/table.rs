//! The benchmark's summary: one row per (model, engine, threads) with both tools' medians, and
//! its Markdown rendering; and foretell's one-thread two-phase commit beside the hand-written
//! search.

use crate::measure::{Engine, Family, Measurement, Spec};

/// Every run of one tool in one configuration.
#[derive(Clone, Debug, Default)]
pub struct Samples(pub Vec<Measurement>);

impl Samples {
    /// The distinct-state count if every run found the same one.
    pub fn states(&self) -> Option<u64> {
        let first = self.0.first()?.states;
        self.0.iter().all(|m| m.states == first).then_some(first)
    }

    /// The median of the runs' seconds.
    pub fn median_seconds(&self) -> Option<f64> {
        median(self.0.iter().map(|m| m.seconds).collect())
    }

    /// The median of the runs' peak resident set sizes, in MB.
    pub fn median_peak_mb(&self) -> Option<f64> {
        median(self.0.iter().filter_map(|m| m.peak_rss_bytes).map(|b| b as f64 / 1e6).collect())
    }

    /// Distinct states per second at the median time.
    pub fn states_per_second(&self) -> Option<f64> {
        Some(self.states()? as f64 / self.median_seconds()?)
    }
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 { values[mid] } else { (values[mid - 1] + values[mid]) / 2.0 })
}

/// One configuration's results in both tools.
#[derive(Clone, Debug)]
pub struct Row {
    /// The model.
    pub spec: Spec,
    /// The search order.
    pub engine: Engine,
    /// Worker threads.
    pub threads: usize,
    /// foretell's runs.
    pub foretell: Samples,
    /// Stateright's runs.
    pub stateright: Samples,
    /// The hand-written search's runs (two-phase commit, breadth-first, one thread; otherwise
    /// none).
    pub hand_written: Samples,
}

impl Row {
    /// foretell's speed over Stateright's in each round: Stateright's seconds over foretell's in
    /// the two runs of the same round (equal counts make that the ratio of states/s). The two
    /// runs of a round follow one another, so a machine that slows down or speeds up over the
    /// benchmark moves both alike, where the ratio of the medians can pair a fast run of one
    /// tool with a slow run of the other.
    pub fn round_ratios(&self) -> Vec<f64> {
        self.foretell.0.iter().zip(&self.stateright.0).map(|(f, s)| s.seconds / f.seconds).collect()
    }

    /// Whether every run of every tool found the published distinct-state count.
    pub fn counts_equal(&self) -> bool {
        let expected = self.spec.published_states();
        [&self.foretell, &self.stateright, &self.hand_written]
            .iter()
            .all(|s| s.0.iter().all(|m| Some(m.states) == expected))
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn or_na<T>(value: Option<T>, show: impl Fn(T) -> String) -> String {
    value.map(show).unwrap_or_else(|| "n/a".into())
}

/// The Markdown table of `rows`.
pub fn markdown(rows: &[Row]) -> String {
    let mut out = String::from(
        "| model | engine | threads | foretell states | stateright states | equal? | foretell median s \
         | stateright median s | foretell states/s | stateright states/s | foretell peak MB \
         | stateright peak MB | foretell/stateright states/s | per round: median (range) |\n\
         | --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for row in rows {
        let (f, s) = (&row.foretell, &row.stateright);
        let ratio = f.states_per_second().zip(s.states_per_second()).map(|(f, s)| f / s);
        let cells = [
            row.spec.to_string(),
            row.engine.to_string(),
            row.threads.to_string(),
            or_na(f.states(), thousands),
            or_na(s.states(), thousands),
            if row.counts_equal() { "yes".into() } else { "**MISMATCH**".into() },
            or_na(f.median_seconds(), |x| format!("{x:.3}")),
            or_na(s.median_seconds(), |x| format!("{x:.3}")),
            or_na(f.states_per_second(), |x| thousands(x.round() as u64)),
            or_na(s.states_per_second(), |x| thousands(x.round() as u64)),
            or_na(f.median_peak_mb(), |x| format!("{x:.1}")),
            or_na(s.median_peak_mb(), |x| format!("{x:.1}")),
            or_na(ratio, |x| format!("{x:.2}")),
            spread(row.round_ratios()),
        ];
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

/// The median of `ratios` with their smallest and largest, as "4.83 (4.68 to 4.96)".
fn spread(ratios: Vec<f64>) -> String {
    let low = ratios.iter().copied().reduce(f64::min);
    let high = ratios.iter().copied().reduce(f64::max);
    match (median(ratios), low, high) {
        (Some(mid), Some(low), Some(high)) => format!("{mid:.2} ({low:.2} to {high:.2})"),
        _ => "n/a".into(),
    }
}

/// The Markdown table of two-phase commit on one thread: the hand-written search beside
/// foretell's breadth-first and depth-first search from the same run (empty if no row has
/// hand-written runs).
pub fn against_hand_written(rows: &[Row]) -> String {
    let one_thread = |spec: Spec, engine: Engine| {
        rows.iter().find(|r| r.spec == spec && r.engine == engine && r.threads == 1).map(|r| &r.foretell)
    };
    let measured = rows.iter().filter(|r| r.spec.family == Family::TwoPhase && !r.hand_written.0.is_empty());
    let mut out = String::new();
    for row in measured {
        if out.is_empty() {
            out.push_str(
                "| model | hand-written median s | hand-written states/s | hand-written peak MB \
                 | foretell BFS states/s | foretell DFS states/s | foretell's faster/hand-written |\n\
                 | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
            );
        }
        let hand = &row.hand_written;
        let rate = |engine| one_thread(row.spec, engine).and_then(Samples::states_per_second);
        let (bfs, dfs) = (rate(Engine::Bfs), rate(Engine::Dfs));
        let best = bfs.into_iter().chain(dfs).reduce(f64::max);
        let ratio = best.zip(hand.states_per_second()).map(|(f, h)| f / h);
        let cells = [
            row.spec.to_string(),
            or_na(hand.median_seconds(), |x| format!("{x:.3}")),
            or_na(hand.states_per_second(), |x| thousands(x.round() as u64)),
            or_na(hand.median_peak_mb(), |x| format!("{x:.1}")),
            or_na(bfs, |x| thousands(x.round() as u64)),
            or_na(dfs, |x| thousands(x.round() as u64)),
            or_na(ratio, |x| format!("{x:.2}")),
        ];
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_745_408), "1,745,408");
    }

    fn runs(seconds: &[f64]) -> Samples {
        Samples(
            seconds
                .iter()
                .map(|&seconds| Measurement { states: 10, seconds, peak_rss_bytes: None })
                .collect(),
        )
    }

    #[test]
    fn each_round_pairs_the_tools_runs_of_that_round() {
        let spec = Spec { family: Family::TwoPhase, size: 8 };
        let row = Row {
            spec,
            engine: Engine::Dfs,
            threads: 1,
            // The machine slows down in the second round: both tools take twice as long.
            foretell: runs(&[1.0, 2.0, 1.0]),
            stateright: runs(&[5.0, 10.0, 4.0]),
            hand_written: Samples::default(),
        };
        assert_eq!(row.round_ratios(), [5.0, 5.0, 4.0]);
        assert_eq!(spread(row.round_ratios()), "5.00 (4.00 to 5.00)");
        assert_eq!(spread(Vec::new()), "n/a");
        let table = markdown(&[row]);
        assert!(
            table.lines().nth(2).is_some_and(|line| line.ends_with("| 5.00 (4.00 to 5.00) |")),
            "{table}"
        );
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
    }
}
