//! Cluster mode's view of the registry: each system's model with its protocol type kept, as a
//! [`foretell_cluster::ClusterModel`], for the distributed search and swarm walks.
//!
//! The registry's `build` erases the protocol type behind [`foretell_check::DynModel`], which
//! only runs the local engines; a distributed search is generic over the protocol (worlds are
//! decoded in the receiving process), so this table builds each system's typed model from the
//! same [`Settings`]. The settings are first given to the system's own `build`, so they are
//! validated exactly as `foretell check` validates them; the tests check that both
//! constructions give the same model for every system and variant.

use crate::{
    chord, mace_transport, paxos, paxos_tla, psharp, randtree, two_phase_commit, ConfigError, Settings,
    System,
};
use foretell_cluster::ClusterModel;

type Build = fn(&Settings) -> Result<Box<dyn ClusterModel>, ConfigError>;

/// Every system that cluster mode can check, by registry name.
const CLUSTER: &[(&str, Build)] = &[
    ("two-phase-commit", two_phase_commit),
    ("paxos-tla", paxos_tla),
    ("paxos", paxos),
    ("stateright-paxos", stateright_paxos),
    ("randtree", |s| Ok(Box::new(randtree::from_settings(s)?))),
    ("chord", |s| Ok(Box::new(chord::from_settings(s)?))),
    ("mace-transport", |s| Ok(Box::new(mace_transport::from_settings(s)?))),
    ("proposers", |s| Ok(Box::new(psharp::proposers_model(s)?))),
    ("basic-paxos", |s| Ok(Box::new(psharp::basic_paxos_model(s)?))),
    ("chord-lookup", |s| Ok(Box::new(psharp::chord_lookup_model(s)?))),
    ("replicating-storage", |s| Ok(Box::new(psharp::replicating_storage_model(s)?))),
    ("failure-detector", |s| Ok(Box::new(psharp::failure_detector_model(s)?))),
    ("process-scheduler", |s| Ok(Box::new(psharp::process_scheduler_model(s)?))),
    ("leader-election", |s| Ok(Box::new(psharp::leader_election_model(s)?))),
    ("sliding-window", |s| Ok(Box::new(psharp::sliding_window_model(s)?))),
    ("dining-philosophers", |s| Ok(Box::new(psharp::dining_philosophers_model(s)?))),
];

/// `system`'s model for `settings`, typed for cluster mode.
///
/// # Errors
/// The [`ConfigError`] the system's own `build` gives for these settings, or
/// [`ConfigError::UnknownSystem`] for a system cluster mode does not know.
pub fn cluster_model(system: &System, settings: &Settings) -> Result<Box<dyn ClusterModel>, ConfigError> {
    let Some((_, build)) = CLUSTER.iter().find(|(name, _)| *name == system.name) else {
        let known: Vec<&str> = CLUSTER.iter().map(|(name, _)| *name).collect();
        return Err(ConfigError::UnknownSystem {
            name: format!("{} (in cluster mode)", system.name),
            known: known.join(", "),
        });
    };
    (system.build)(settings)?;
    build(settings)
}

fn two_phase_commit(settings: &Settings) -> Result<Box<dyn ClusterModel>, ConfigError> {
    let (rms, early_commit) = (settings.number("rms", 1..=12)?, settings.is("early-commit"));
    Ok(if settings.number("symmetry", 0..=1)? == 1 {
        Box::new(two_phase_commit::model_symmetric(rms, early_commit))
    } else {
        Box::new(two_phase_commit::model(rms, early_commit))
    })
}

fn paxos_tla(settings: &Settings) -> Result<Box<dyn ClusterModel>, ConfigError> {
    let bug = if settings.is("last-promise") {
        Some(paxos_tla::Bug::LastPromise)
    } else if settings.is("forget-promise") {
        Some(paxos_tla::Bug::ForgetPromise)
    } else {
        None
    };
    let config = paxos_tla::Config {
        acceptors: settings.number("acceptors", 1..=5)?,
        ballots: settings.number("ballots", 0..=4)?,
        values: settings.number("values", 1..=3)?,
        bug,
    };
    Ok(Box::new(paxos_tla::model(&config)))
}

fn paxos(settings: &Settings) -> Result<Box<dyn ClusterModel>, ConfigError> {
    let text = settings.values.get("proposals").map(String::as_str).unwrap_or_default();
    let proposals = paxos::parse_proposals(text).map_err(|reason| ConfigError::BadValue {
        name: "proposals".into(),
        value: text.into(),
        reason,
    })?;
    let resets = settings.number("resets", 0..=3)? as u32;
    let bug = if settings.is("last-promise") {
        paxos::Bug::LastPromise
    } else if settings.is("forget-promise") {
        paxos::Bug::ForgetPromise
    } else {
        paxos::Bug::None
    };
    Ok(Box::new(paxos::model(&proposals, resets, bug)))
}

fn stateright_paxos(settings: &Settings) -> Result<Box<dyn ClusterModel>, ConfigError> {
    Ok(Box::new(crate::actor_paxos::model(settings.number("clients", 1..=3)?)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use foretell_check::{CheckOptions, Completion};
    use foretell_cluster::ClusterConfig;

    /// Every system and variant: the typed model explores exactly what the registry's model
    /// explores (compared on the first levels, which is where a difference in parameters or
    /// variant shows).
    #[test]
    fn typed_models_match_the_registry_for_every_system_and_variant() {
        let options = CheckOptions { depth_max: Some(4), ..CheckOptions::default() };
        for system in crate::systems() {
            let variants = std::iter::once(None).chain(system.variants.iter().map(|v| Some(v.name)));
            for variant in variants {
                let settings = system.settings(variant, &[]).unwrap();
                let local = (system.build)(&settings).unwrap().check(&options).unwrap();
                let cluster = cluster_model(&system, &settings)
                    .unwrap_or_else(|e| panic!("{}: {e}", system.name))
                    .check_distributed(&options, &ClusterConfig::local(2))
                    .unwrap()
                    .unwrap();
                let what = format!("{} {variant:?}", system.name);
                assert_eq!(cluster.verdict(), local.verdict(), "{what}");
                match (local.violations.first(), cluster.violations.first()) {
                    // Local search stops at its violation, the cluster after that level: compare
                    // what both define, the shortest counterexample.
                    (Some(l), Some(c)) => {
                        assert_eq!(c.property, l.property, "{what}");
                        assert_eq!(c.trace.steps.len(), l.trace.steps.len(), "{what}");
                    }
                    _ => {
                        assert_eq!(cluster.stats.unique_states, local.stats.unique_states, "{what}");
                        assert_eq!(cluster.stats.transitions, local.stats.transitions, "{what}");
                    }
                }
            }
        }
    }

    /// Under a declared symmetry, worlds are owned and stored by their orbit's canonical
    /// fingerprint: the counts are those of the local engine.
    #[test]
    fn symmetric_two_phase_commit_counts_orbits_like_local_bfs() {
        let system = crate::find("two-phase-commit").unwrap();
        let settings = system.settings(None, &[("symmetry".into(), "1".into())]).unwrap();
        let local = (system.build)(&settings).unwrap().check(&CheckOptions::default()).unwrap();
        let model = cluster_model(&system, &settings).unwrap();
        let cluster =
            model.check_distributed(&CheckOptions::default(), &ClusterConfig::local(2)).unwrap().unwrap();
        assert_eq!(cluster.completion, Completion::Exhausted);
        assert_eq!(cluster.stats.unique_states, local.stats.unique_states);
        assert_eq!(cluster.stats.transitions, local.stats.transitions);
    }

    #[test]
    fn settings_are_validated_by_the_system_itself() {
        let system = crate::find("two-phase-commit").unwrap();
        let settings = system.settings(None, &[("rms".into(), "99".into())]).unwrap();
        assert!(matches!(cluster_model(&system, &settings), Err(ConfigError::BadValue { .. })));
    }
}
