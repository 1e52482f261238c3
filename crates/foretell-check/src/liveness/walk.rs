//! Random walks over the one choice seam (MaceMC, NSDI'07, section 4.2): each step draws an
//! enabled event with probability proportional to its kind's weight, and every `choose` inside
//! the handler uniformly. A walk is a pure function of its start world, its seed and its
//! bounds, so any walk can be re-run step for step (to rebuild a path, or to find the step
//! that diverged). A walk asks the run's [`Stop`] every thousand steps or so and ends early, cut
//! short, when the run is interrupted or out of time: a walk may be up to `dmax` steps long.
//!
//! An event whose handler leaves the world as it was without choosing anything — one it
//! declares not enabled ([`foretell_model::Out::disable`]), or one it ignores — is no step, as
//! in the exhaustive search (and as a false guard is in MaceMC's walks): the draw goes on among
//! the other events of the world, and a world where every event is such is a deadlock.

use crate::stop::Stop;
use foretell_model::{Action, Chooser, Protocol, Simulator, StepViolation, Weights, World};
use rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// The steps of a path: each action with its handler's choice values.
pub(crate) type Steps = Vec<(Action, Vec<usize>)>;

/// The walk generator: PCG-64 MCG, a named portable generator, so a seed means the same walk on
/// every machine.
pub(crate) struct WalkRng(Pcg64Mcg);

impl WalkRng {
    /// The generator of walk number `walk` of a run seeded with `seed`.
    pub(crate) fn new(seed: u64, walk: u64) -> Self {
        let mixed = seed ^ walk.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17);
        WalkRng(Pcg64Mcg::seed_from_u64(mixed))
    }

    /// A uniform draw from `0..n` (Lemire's multiply-shift; `n` is at least 1).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.0.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

impl Chooser for WalkRng {
    fn choose(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }
}

/// How a walk ended.
#[derive(Debug)]
pub(crate) enum WalkEnd {
    /// It reached a world where every liveness property holds (after as many steps as it took).
    Live,
    /// It took every step it was allowed without reaching one.
    Exhausted,
    /// It reached a world that no event changes (a deadlock) that is not live.
    Stuck,
    /// A step violated a safety property.
    Violation(StepViolation),
    /// The run was stopped (interrupted, or out of time) before the walk ended: it says nothing
    /// about whether its start recovers.
    Stopped,
}

/// A finished walk: its steps and how it ended.
pub(crate) struct Walked<P: Protocol> {
    pub(crate) steps: Steps,
    pub(crate) end: WalkEnd,
    /// The world it ended in.
    pub(crate) last: World<P>,
}

/// What every walk of a run shares.
pub(crate) struct Walker<'s, 'm, P: Protocol> {
    pub(crate) sim: &'s Simulator<'m, P>,
    pub(crate) weights: Weights,
    pub(crate) live: &'s (dyn Fn(&World<P>) -> bool + Sync),
    /// Whether `always` properties are checked on the way (handler assertions and panics
    /// always are).
    pub(crate) invariants: bool,
    /// Asked every thousand steps or so whether the run must stop.
    pub(crate) stop: &'s Stop,
}

impl<P: Protocol> Walker<'_, '_, P> {
    /// Walks from `start` (a world known not to be live, or not yet checked) for at most
    /// `max_steps` steps, stopping at the first live world, or earlier when the run must stop
    /// ([`WalkEnd::Stopped`]). `tick` is called before each handler run with the number of
    /// steps taken so far and the events of this world already drawn and found to be no step
    /// (the divergence watchdog's heartbeat).
    pub(crate) fn walk(
        &self,
        start: &World<P>,
        max_steps: usize,
        rng: &mut WalkRng,
        mut tick: impl FnMut(usize, usize),
    ) -> Walked<P> {
        let mut world = start.clone();
        let mut steps = Vec::new();
        let mut actions = Vec::new();
        if (self.live)(&world) {
            return Walked { steps, end: WalkEnd::Live, last: world };
        }
        while steps.len() < max_steps {
            if self.stop.poll_at(steps.len()).is_some() {
                return Walked { steps, end: WalkEnd::Stopped, last: world };
            }
            self.sim.actions(&world, &mut actions);
            let mut idle = 0;
            let (action, outcome) = loop {
                tick(steps.len(), idle);
                let Some(action) = self.draw(&actions, rng) else {
                    return Walked { steps, end: WalkEnd::Stuck, last: world };
                };
                let outcome = self.sim.step(&world, action, rng, false);
                let no_step = outcome.violation.is_none()
                    && outcome.choices.is_empty()
                    && outcome.world.fingerprint() == world.fingerprint();
                if !no_step {
                    break (action, outcome);
                }
                actions.retain(|a| *a != action);
                idle += 1;
            };
            steps.push((action, outcome.choices));
            world = outcome.world;
            let invariant = || self.invariants.then(|| self.sim.violated_invariant(&world)).flatten();
            if let Some(violation) = outcome.violation.or_else(invariant) {
                return Walked { steps, end: WalkEnd::Violation(violation), last: world };
            }
            if (self.live)(&world) {
                return Walked { steps, end: WalkEnd::Live, last: world };
            }
        }
        Walked { steps, end: WalkEnd::Exhausted, last: world }
    }

    /// The action a walk takes next, with the `rng` draws [`Walker::walk`] would make; `None`
    /// when nothing is enabled.
    pub(crate) fn draw(&self, actions: &[Action], rng: &mut WalkRng) -> Option<Action> {
        let total: u64 = actions.iter().map(|a| u64::from(self.weights.of(*a))).sum();
        if total == 0 {
            // Only zero-weight kinds are enabled: they are still the system's only way on.
            return (!actions.is_empty()).then(|| actions[rng.below(actions.len() as u64) as usize]);
        }
        let mut point = rng.below(total);
        for &action in actions {
            let weight = u64::from(self.weights.of(action));
            if point < weight {
                return Some(action);
            }
            point -= weight;
        }
        unreachable!("the draw is below the total weight")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_follow_the_seed_and_stay_in_range() {
        let mut a = WalkRng::new(7, 3);
        let mut b = WalkRng::new(7, 3);
        let mut c = WalkRng::new(7, 4);
        let xs: Vec<usize> = (0..32).map(|_| a.choose(10)).collect();
        let ys: Vec<usize> = (0..32).map(|_| b.choose(10)).collect();
        let zs: Vec<usize> = (0..32).map(|_| c.choose(10)).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
        assert!(xs.iter().all(|x| *x < 10));
    }
}
