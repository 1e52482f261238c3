//! The report an engine returns: a verdict per property, statistics, and a trace per violation.

use crate::EngineKind;
use foretell_model::{Property, PropertyKind, Protocol, Trace, ViolationKind};
use serde::Serialize;
use std::fmt::{self, Write as _};

/// Why a search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Completion {
    /// Every reachable world was explored.
    Exhausted,
    /// Every world within the depth bound was explored; some had successors beyond it.
    DepthBound,
    /// The bound on distinct worlds was reached.
    StatesBound,
    /// The time bound was reached.
    TimeBound,
    /// The memory budget was reached.
    MemoryBound,
    /// The run was interrupted.
    Interrupted,
    /// The search stopped at the first violation.
    Violation,
}

impl Completion {
    /// Whether the search explored everything it was asked to: a `holds` verdict then covers
    /// the whole space within the depth bound.
    pub fn is_complete(self) -> bool {
        matches!(self, Completion::Exhausted | Completion::DepthBound)
    }
}

impl fmt::Display for Completion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Completion::Exhausted => "every reachable world explored",
            Completion::DepthBound => "every world within the depth bound explored",
            Completion::StatesBound => "stopped at the state bound",
            Completion::TimeBound => "stopped at the time bound",
            Completion::MemoryBound => "stopped at the memory budget",
            Completion::Interrupted => "interrupted",
            Completion::Violation => "stopped at the first violation",
        })
    }
}

/// A property's status at the end of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// No violation in the worlds explored (see [`Report::completion`] for how far that went).
    Holds,
    /// Violated; the report has its trace.
    Violated,
    /// A `sometimes` property held in some explored world.
    Covered,
    /// A `sometimes` property held in no explored world.
    NotCovered,
    /// An `eventually` property, which the safety engines do not check.
    NotChecked,
    /// Local model checking built system states where the property is false, and could show
    /// none of them reachable or unreachable within its soundness budget (or before the run
    /// stopped): neither a violation nor a pass.
    Undecided,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Holds => "holds",
            Status::Violated => "violated",
            Status::Covered => "covered",
            Status::NotCovered => "not covered",
            Status::NotChecked => "not checked by this engine",
            Status::Undecided => "undecided (possible violations neither confirmed nor refuted)",
        })
    }
}

/// One property's line in a report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PropertyReport {
    /// The name.
    pub name: String,
    /// `always`, `sometimes`, `eventually`, or `assertion`/`panic` for undeclared ones.
    pub kind: String,
    /// The status.
    pub status: Status,
}

/// A violation with the trace that reaches it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Violation {
    /// The property.
    pub property: String,
    /// How it was violated.
    pub kind: ViolationKind,
    /// A human-readable detail.
    pub message: String,
    /// The trace from an initial world to the violation.
    pub trace: Trace,
}

/// How likely a lossy visited set ([`crate::Memory::Compact`], [`crate::Memory::Bitstate`])
/// made the search miss states: a new state mistaken for a seen one is not explored, nor is
/// anything only reachable through it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Omission {
    /// The probability that the next new state would have been mistaken for a seen one.
    pub per_state: f64,
    /// The expected number of states mistaken for seen ones during the run.
    pub expected_missed: f64,
}

/// Counts of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    /// Distinct worlds found, initial ones included.
    pub unique_states: u64,
    /// Steps executed to generate successors (re-executions not counted).
    pub transitions: u64,
    /// The deepest world found, in steps from an initial world.
    pub max_depth: usize,
    /// Bytes held by the visited set at the end (0 for the stateless engine's map).
    pub visited_bytes: u64,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// The process's peak resident memory when the run ended, in bytes (`None` where the
    /// platform does not say).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_memory: Option<u64>,
}

impl Stats {
    /// Distinct worlds per second.
    pub fn states_per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.unique_states as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// What an engine found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// The engine.
    pub engine: EngineKind,
    /// Why the search ended.
    pub completion: Completion,
    /// Every property with its status.
    pub properties: Vec<PropertyReport>,
    /// The violations found, each with its trace.
    pub violations: Vec<Violation>,
    /// Counts.
    pub stats: Stats,
    /// For a lossy visited set, the estimate of states missed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub omission: Option<Omission>,
    /// Local model checking's counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lmc: Option<crate::LmcStats>,
}

impl Report {
    /// `"violated"` if a violation was found, `"undecided"` if some property is
    /// [`Status::Undecided`], otherwise `"holds"`.
    pub fn verdict(&self) -> &'static str {
        if !self.violations.is_empty() {
            "violated"
        } else if self.properties.iter().any(|p| p.status == Status::Undecided) {
            "undecided"
        } else {
            "holds"
        }
    }

    /// The status of property `name`, if the report has it.
    pub fn status(&self, name: &str) -> Option<Status> {
        self.properties.iter().find(|p| p.name == name).map(|p| p.status)
    }

    /// The violation of property `name`, if one was found.
    pub fn violation(&self, name: &str) -> Option<&Violation> {
        self.violations.iter().find(|v| v.property == name)
    }

    /// Asserts, from a test, that the run explored everything it was asked to and found no
    /// violation of `name`.
    ///
    /// # Panics
    /// With the report and the violating trace, if `name` was violated, is unknown, or the run
    /// stopped early.
    pub fn assert_holds(&self, name: &str) -> &Self {
        match self.status(name) {
            Some(Status::Holds) if self.completion.is_complete() => self,
            Some(Status::Holds) => panic!("{name:?} held, but the search {}\n{self}", self.completion),
            Some(Status::Violated) => {
                let trace = &self.violation(name).expect("a violated property has a trace").trace;
                panic!("{name:?} is violated:\n{}\n{self}", trace.to_text(true))
            }
            Some(other) => panic!("{name:?} is {other}, not an invariant that holds\n{self}"),
            None => panic!("no property is named {name:?}\n{self}"),
        }
    }

    /// Asserts, from a test, that `name` was violated, and returns the violation.
    ///
    /// # Panics
    /// With the report, if it was not.
    pub fn assert_violated(&self, name: &str) -> &Violation {
        self.violation(name).unwrap_or_else(|| panic!("expected a violation of {name:?}\n{self}"))
    }

    /// Asserts, from a test, that the `sometimes` property `name` was covered (or, for an
    /// `eventually` property, that a world where it holds was reached).
    ///
    /// # Panics
    /// With the report, if it was not.
    pub fn assert_covered(&self, name: &str) -> &Self {
        match self.status(name) {
            Some(Status::Covered) => self,
            other => panic!("expected {name:?} to be covered, it is {other:?}\n{self}"),
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.stats;
        let mut text = String::new();
        // A lossy visited set may have taken new worlds for seen ones: "every world explored"
        // is then only as true as the estimate below says.
        let lossy = if self.omission.is_some() { ", as far as the lossy visited set tells" } else { "" };
        let _ = writeln!(
            text,
            "verdict: {} ({}{lossy}; engine {})",
            self.verdict(),
            self.completion,
            self.engine
        );
        for p in &self.properties {
            let _ = writeln!(text, "  {:<10} {:<32} {}", p.kind, p.name, p.status);
        }
        let _ = write!(
            text,
            "states: {} unique, {} transitions, max depth {}, {:.2} s ({:.0} states/s)",
            s.unique_states,
            s.transitions,
            s.max_depth,
            s.seconds,
            s.states_per_second()
        );
        if s.visited_bytes > 0 {
            let _ = write!(text, ", visited set {:.1} MiB", s.visited_bytes as f64 / (1 << 20) as f64);
        }
        if let Some(bytes) = s.peak_memory {
            let _ = write!(text, ", peak memory {:.1} MiB", bytes as f64 / (1 << 20) as f64);
        }
        if let Some(o) = &self.omission {
            let _ = write!(
                text,
                "\nlossy visited set: {:.2e} probability per new state of being mistaken for a seen one, ",
                o.per_state
            );
            let _ = if o.expected_missed.is_finite() {
                write!(text, "about {:.1} states missed", o.expected_missed)
            } else {
                write!(text, "and it filled up: every world not seen before was then taken for a seen one")
            };
        }
        if let Some(lmc) = &self.lmc {
            let _ = write!(text, "\n{lmc}");
        }
        f.write_str(&text)
    }
}

impl PropertyReport {
    /// The property lines of a safety search's report: each declared property's status given
    /// which `sometimes` properties were `covered` (in declaration order) and the `violations`
    /// found, then a line for each violated property that was not declared (a `require`, a
    /// panic).
    pub fn for_search<P: Protocol>(
        properties: &[Property<P>],
        covered: &[bool],
        violations: &[Violation],
    ) -> Vec<PropertyReport> {
        let mut lines: Vec<PropertyReport> = properties
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let violated = violations.iter().any(|v| v.property == p.name());
                let status = match p.kind() {
                    PropertyKind::Always if violated => Status::Violated,
                    PropertyKind::Always => Status::Holds,
                    PropertyKind::Sometimes if covered.get(i).copied().unwrap_or(false) => Status::Covered,
                    PropertyKind::Sometimes => Status::NotCovered,
                    // A safety search cannot show liveness, but it shows a live world is reachable.
                    PropertyKind::Eventually if covered.get(i).copied().unwrap_or(false) => Status::Covered,
                    PropertyKind::Eventually => Status::NotChecked,
                };
                PropertyReport { name: p.name().to_string(), kind: kind_name(p.kind()).into(), status }
            })
            .collect();
        for v in violations {
            if !lines.iter().any(|p| p.name == v.property) {
                lines.push(PropertyReport {
                    name: v.property.clone(),
                    kind: v.kind.to_string(),
                    status: Status::Violated,
                });
            }
        }
        lines
    }
}

pub(crate) fn kind_name(kind: PropertyKind) -> &'static str {
    match kind {
        PropertyKind::Always => "always",
        PropertyKind::Sometimes => "sometimes",
        PropertyKind::Eventually => "eventually",
    }
}
