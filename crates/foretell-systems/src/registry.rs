//! The registry: every system by name, with its parameters (and defaults), variants and a
//! constructor from settings, so the command line can build any of them as a
//! [`foretell_check::DynModel`].

use foretell_check::DynModel;
use foretell_model::{Model, Protocol, Scenario, SystemRef, Trace};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A parameter a system accepts, with its default.
#[derive(Clone, Copy, Debug)]
pub struct Param {
    /// The name, as in `--set NAME=VALUE`.
    pub name: &'static str,
    /// The default value.
    pub default: &'static str,
    /// What it means.
    pub help: &'static str,
}

/// A bug variant of a system.
#[derive(Clone, Copy, Debug)]
pub struct Variant {
    /// The name, as in `--bug NAME`.
    pub name: &'static str,
    /// The bug, in a sentence.
    pub help: &'static str,
}

/// A named scenario of a system: a starting world described by the events that reach it.
#[derive(Clone, Copy, Debug)]
pub struct ScenarioInfo {
    /// The name, as in `--from NAME`.
    pub name: &'static str,
    /// Where it comes from and what world it reaches, in a sentence.
    pub help: &'static str,
    /// The parameter values it is defined for, where they are not the defaults (`--set` them).
    pub needs: &'static [(&'static str, &'static str)],
}

/// A registered system.
pub struct System {
    /// The name, as in `foretell check NAME`.
    pub name: &'static str,
    /// What it is, in a sentence.
    pub about: &'static str,
    /// Its parameters.
    pub params: &'static [Param],
    /// Its bug variants.
    pub variants: &'static [Variant],
    /// Its named scenarios.
    pub scenarios: &'static [ScenarioInfo],
    /// Builds the model for the given settings.
    pub build: fn(&Settings) -> Result<Box<dyn DynModel>, ConfigError>,
}

/// Where a search starts, when not at the initial world.
#[derive(Clone, Debug, PartialEq)]
pub enum Start {
    /// A named scenario of the system.
    Scenario(String),
    /// The first `steps` steps of a saved trace of the system.
    Trace {
        /// Where the trace came from, to name the scenario.
        source: String,
        /// The trace.
        trace: Arc<Trace>,
        /// How many of its steps lead to the start.
        steps: usize,
    },
}

/// A system's configuration: a variant and every parameter's value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Settings {
    /// The bug variant, or `None` for the correct version.
    pub variant: Option<String>,
    /// Every parameter's value, defaults filled in.
    pub values: BTreeMap<String, String>,
    /// Where searches start, or `None` for the initial world.
    pub start: Option<Start>,
}

/// Why a configuration is not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// No system has that name.
    #[error("unknown system {name:?} (known: {known})")]
    UnknownSystem {
        /// The name given.
        name: String,
        /// The known names.
        known: String,
    },
    /// The system has no variant of that name.
    #[error("{system} has no bug {name:?} (known: {known})")]
    UnknownVariant {
        /// The system.
        system: String,
        /// The name given.
        name: String,
        /// The known variants.
        known: String,
    },
    /// The system has no parameter of that name.
    #[error("{system} has no parameter {name:?} (known: {known})")]
    UnknownParam {
        /// The system.
        system: String,
        /// The name given.
        name: String,
        /// The known parameters.
        known: String,
    },
    /// The system has no scenario of that name.
    #[error("{system} has no scenario {name:?} (known: {known})")]
    UnknownScenario {
        /// The system.
        system: String,
        /// The name given.
        name: String,
        /// The known scenarios.
        known: String,
    },
    /// A trace prefix that does not fit the system.
    #[error("cannot start from {source_name}: {reason}")]
    BadPrefix {
        /// Where the trace came from.
        source_name: String,
        /// Why it does not fit.
        reason: String,
    },
    /// A parameter's value is not acceptable.
    #[error("bad value {value:?} for {name}: {reason}")]
    BadValue {
        /// The parameter.
        name: String,
        /// The value given.
        value: String,
        /// Why it is rejected.
        reason: String,
    },
}

/// `value` as a parameter whose default is `default` keeps it: a number written as the default
/// is (`03` and `+3` as `3`), so that traces name one configuration one way and `--from` can
/// compare them; anything else as given, for the system to accept or refuse.
fn canonical(value: &str, default: &str) -> String {
    match (default.parse::<u64>(), value.parse::<u64>()) {
        (Ok(_), Ok(number)) => number.to_string(),
        _ => value.to_string(),
    }
}

impl System {
    /// The settings for `variant` and `overrides` (`NAME=VALUE` pairs), defaults filled in.
    ///
    /// # Errors
    /// A [`ConfigError`] naming an unknown variant or parameter.
    pub fn settings(
        &self,
        variant: Option<&str>,
        overrides: &[(String, String)],
    ) -> Result<Settings, ConfigError> {
        if let Some(name) = variant {
            if !self.variants.iter().any(|v| v.name == name) {
                let known: Vec<&str> = self.variants.iter().map(|v| v.name).collect();
                return Err(ConfigError::UnknownVariant {
                    system: self.name.into(),
                    name: name.into(),
                    known: known.join(", "),
                });
            }
        }
        let mut values: BTreeMap<String, String> =
            self.params.iter().map(|p| (p.name.to_string(), p.default.to_string())).collect();
        for (name, value) in overrides {
            match values.get_mut(name) {
                Some(slot) => *slot = canonical(value, slot),
                None => {
                    let known: Vec<&str> = self.params.iter().map(|p| p.name).collect();
                    return Err(ConfigError::UnknownParam {
                        system: self.name.into(),
                        name: name.clone(),
                        known: if known.is_empty() { "none".into() } else { known.join(", ") },
                    });
                }
            }
        }
        Ok(Settings { variant: variant.map(str::to_string), values, start: None })
    }

    /// How traces of this system with `settings` name it.
    pub fn trace_ref(&self, settings: &Settings) -> SystemRef {
        SystemRef {
            name: self.name.to_string(),
            variant: settings.variant.clone(),
            params: settings.values.clone(),
        }
    }

    /// The model for `settings`, starting where they say.
    ///
    /// # Errors
    /// A [`ConfigError`] for a bad parameter, an unknown scenario, or a trace prefix that does
    /// not fit the system.
    pub fn build_model(&self, settings: &Settings) -> Result<Box<dyn DynModel>, ConfigError> {
        let model = (self.build)(settings)?;
        match &settings.start {
            None => Ok(model),
            Some(Start::Scenario(name)) => {
                // Each system's `build` applies its own scenarios (`apply_scenario`).
                debug_assert_eq!(
                    model.summary().start.as_deref(),
                    Some(name.as_str()),
                    "{} ignored it",
                    self.name
                );
                Ok(model)
            }
            Some(Start::Trace { source, trace, steps }) => {
                let bad_prefix = |reason| ConfigError::BadPrefix { source_name: source.clone(), reason };
                // The same steps on differently sized systems reach different worlds. (Another
                // variant may start from the prefix: the fix, say, from where the bug showed.)
                let recorded = trace.system.iter().flat_map(|s| &s.params);
                let differing: Vec<String> = recorded
                    .filter_map(|(name, was)| {
                        let now = settings.values.get(name)?;
                        (now != was).then(|| format!("{name}={was}, not {name}={now}"))
                    })
                    .collect();
                if !differing.is_empty() {
                    return Err(bad_prefix(format!("it was recorded with {}", differing.join(", "))));
                }
                // Another variant re-executes the prefix only as far as it behaves the same.
                let recorded = trace.system.as_ref().and_then(|s| s.variant.as_deref());
                model.start_from_trace(format!("{source}:{steps}"), trace, *steps).map_err(|reason| {
                    if recorded == settings.variant.as_deref() {
                        return bad_prefix(reason);
                    }
                    let was = recorded
                        .map_or_else(|| "the correct version".to_string(), |bug| format!("--bug {bug}"));
                    bad_prefix(format!(
                        "{reason} (it was recorded with {was}, which does not behave the same there)"
                    ))
                })
            }
        }
    }

    /// The start at scenario `name`, for [`Settings::start`].
    ///
    /// # Errors
    /// [`ConfigError::UnknownScenario`] if the system has no scenario of that name.
    pub fn scenario_start(&self, name: &str) -> Result<Start, ConfigError> {
        if !self.scenarios.iter().any(|s| s.name == name) {
            let known: Vec<&str> = self.scenarios.iter().map(|s| s.name).collect();
            let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
            return Err(ConfigError::UnknownScenario { system: self.name.into(), name: name.into(), known });
        }
        Ok(Start::Scenario(name.to_string()))
    }
}

impl Settings {
    /// Parameter `name` as a whole number in `range`.
    ///
    /// # Errors
    /// [`ConfigError::BadValue`] if it is not one.
    pub fn number(&self, name: &str, range: std::ops::RangeInclusive<usize>) -> Result<usize, ConfigError> {
        let value = self.values.get(name).map(String::as_str).unwrap_or_default();
        let bad = |reason: String| ConfigError::BadValue { name: name.into(), value: value.into(), reason };
        let n: usize = value.parse().map_err(|_| bad("not a whole number".into()))?;
        if !range.contains(&n) {
            return Err(bad(format!("must be from {} to {}", range.start(), range.end())));
        }
        Ok(n)
    }

    /// The value of the parameter `name` among `choices` (each a name and its value).
    ///
    /// # Errors
    /// [`ConfigError::BadValue`] naming the choices if the value is none of them.
    pub fn choice<T: Copy>(&self, name: &str, choices: &[(&str, T)]) -> Result<T, ConfigError> {
        let value = self.values.get(name).map(String::as_str).unwrap_or_default();
        choices.iter().find(|(known, _)| *known == value).map(|&(_, choice)| choice).ok_or_else(|| {
            let names: Vec<&str> = choices.iter().map(|(known, _)| *known).collect();
            ConfigError::BadValue {
                name: name.into(),
                value: value.into(),
                reason: format!("must be {}", names.join(" or ")),
            }
        })
    }

    /// Whether the variant is `name`.
    pub fn is(&self, name: &str) -> bool {
        self.variant.as_deref() == Some(name)
    }
}

/// `model`, starting at the named scenario `settings` asks for, which `scenario` builds by name.
/// (A trace prefix is applied by [`System::build_model`] for every system.)
///
/// # Errors
/// [`ConfigError::UnknownScenario`] if `scenario` does not know the name.
pub fn apply_scenario<P: Protocol>(
    model: Model<P>,
    settings: &Settings,
    scenario: impl Fn(&str) -> Option<Scenario<P>>,
) -> Result<Model<P>, ConfigError> {
    match &settings.start {
        None | Some(Start::Trace { .. }) => Ok(model),
        Some(Start::Scenario(name)) => match scenario(name) {
            Some(scenario) => Ok(model.start_from(scenario)),
            None => Err(ConfigError::UnknownScenario {
                system: "this system".into(),
                name: name.clone(),
                known: "see `foretell list`".into(),
            }),
        },
    }
}

/// Every registered system.
pub fn systems() -> Vec<System> {
    let mut systems = vec![
        crate::two_phase_commit::system(),
        crate::paxos_tla::system(),
        crate::paxos::system(),
        crate::actor_paxos::system(),
        crate::randtree::system(),
        crate::chord::system(),
        crate::mace_transport::system(),
    ];
    systems.extend(crate::psharp::systems());
    systems
}

/// The system named `name`.
///
/// # Errors
/// [`ConfigError::UnknownSystem`] listing the known names.
pub fn find(name: &str) -> Result<System, ConfigError> {
    let all = systems();
    let known: Vec<&str> = all.iter().map(|s| s.name).collect();
    let known = known.join(", ");
    all.into_iter().find(|s| s.name == name).ok_or(ConfigError::UnknownSystem { name: name.into(), known })
}

#[cfg(test)]
mod tests {
    use super::*;
    use foretell_check::CheckOptions;

    /// Every registered scenario is applied by its system's `build`, with the parameter values it
    /// needs, and runs from the initial world (an event that is not enabled, or a violation on
    /// the way, would be an error here).
    #[test]
    fn every_scenario_of_every_system_starts_a_search() {
        for system in systems() {
            for scenario in system.scenarios {
                let needs: Vec<_> =
                    scenario.needs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
                let mut settings = system.settings(None, &needs).unwrap();
                settings.start = Some(system.scenario_start(scenario.name).unwrap());
                let model = system.build_model(&settings).unwrap();
                assert_eq!(model.summary().start.as_deref(), Some(scenario.name), "{}", system.name);
                let options = CheckOptions { depth_max: Some(0), ..CheckOptions::default() };
                let report = model.check(&options).unwrap_or_else(|e| panic!("{}: {e}", system.name));
                assert_eq!(report.stats.unique_states, 1, "{} from {}", system.name, scenario.name);
            }
            let unknown = system.scenario_start("no-such-scenario");
            assert!(matches!(unknown, Err(ConfigError::UnknownScenario { .. })), "{}", system.name);
        }
    }

    /// A number is kept as written canonically, whatever the user wrote; other values as given.
    #[test]
    fn numeric_parameters_are_kept_canonically() {
        let system = find("two-phase-commit").unwrap();
        for written in ["3", "03", "+3"] {
            let settings = system.settings(None, &[("rms".into(), written.into())]).unwrap();
            assert_eq!(settings.values["rms"], "3", "{written}");
        }
        let settings = system.settings(None, &[("rms".into(), "three".into())]).unwrap();
        assert_eq!(settings.values["rms"], "three", "left for the system to refuse");
    }
}
