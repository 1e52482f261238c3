//! Walk weights: how likely a random walk is to pick each kind of event (MaceMC, NSDI'07,
//! section 4.2).
//!
//! A uniform choice among all enabled events makes walks wander through sequences no real run
//! would take (the same timer firing seven times in a row) and makes them slow to reach live
//! worlds. MaceMC biased its `Choose` by event kind — application events over message
//! arrivals over timers — which cut the depth needed to reach liveness by 10 to 100 times.
//! Faults come last: a walk should show what the system does between failures.

use crate::Action;
use std::fmt;
use std::str::FromStr;

/// The kind of an event, as walk weights see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A driver input (one-shot, startup or spontaneous).
    Application,
    /// A message delivery or a transport error.
    Message,
    /// A timer firing.
    Timer,
    /// A fault: reset, loss, duplication, socket error.
    Fault,
}

impl Action {
    /// The kind of event this action is.
    pub fn kind(self) -> EventKind {
        match self {
            Action::Input(_) | Action::Spontaneous(_) => EventKind::Application,
            Action::Deliver(_) | Action::TransportError(_) => EventKind::Message,
            Action::Timer(..) => EventKind::Timer,
            Action::Reset(_) | Action::Drop(_) | Action::Duplicate(_) | Action::SocketError(_) => {
                EventKind::Fault
            }
        }
    }
}

/// Relative weights of the event kinds for random walks. An event's chance is its kind's
/// weight over the sum of the weights of every enabled event; a weight of 0 excludes the kind
/// (while another kind is enabled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Weights {
    /// Driver inputs.
    pub application: u32,
    /// Deliveries and transport errors.
    pub message: u32,
    /// Timers.
    pub timer: u32,
    /// Faults.
    pub fault: u32,
}

impl Weights {
    /// Every enabled event equally likely.
    pub const UNIFORM: Weights = Weights { application: 1, message: 1, timer: 1, fault: 1 };

    /// MaceMC's bias: application events over messages over timers over faults.
    pub const BIASED: Weights = Weights { application: 16, message: 8, timer: 2, fault: 1 };

    /// The weight of `action`.
    pub fn of(&self, action: Action) -> u32 {
        match action.kind() {
            EventKind::Application => self.application,
            EventKind::Message => self.message,
            EventKind::Timer => self.timer,
            EventKind::Fault => self.fault,
        }
    }

    /// The same weights with faults excluded (a prefix walk with node failures disabled).
    pub fn without_faults(self) -> Weights {
        Weights { fault: 0, ..self }
    }
}

impl Default for Weights {
    fn default() -> Self {
        Weights::BIASED
    }
}

impl fmt::Display for Weights {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Weights { application, message, timer, fault } = self;
        write!(f, "app={application},msg={message},timer={timer},fault={fault}")
    }
}

/// Why a weights specification is not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad weights {spec:?}: {reason} (expected `uniform`, `biased`, or KIND=N pairs such as app=16,msg=8,timer=2,fault=1)")]
pub struct WeightsError {
    spec: String,
    reason: String,
}

impl FromStr for Weights {
    type Err = WeightsError;

    /// `uniform`, `biased`, or comma-separated `KIND=N` pairs (kinds `app`, `msg`, `timer`,
    /// `fault`); kinds left out keep their biased weight.
    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let fail = |reason: String| WeightsError { spec: spec.to_string(), reason };
        match spec {
            "uniform" => return Ok(Weights::UNIFORM),
            "biased" => return Ok(Weights::BIASED),
            _ => {}
        }
        let mut weights = Weights::BIASED;
        for pair in spec.split(',') {
            let (kind, value) =
                pair.split_once('=').ok_or_else(|| fail(format!("{pair:?} is not KIND=N")))?;
            let value: u32 =
                value.trim().parse().map_err(|_| fail(format!("{value:?} is not a whole number")))?;
            let slot = match kind.trim() {
                "app" | "application" => &mut weights.application,
                "msg" | "message" => &mut weights.message,
                "timer" => &mut weights.timer,
                "fault" => &mut weights.fault,
                other => return Err(fail(format!("unknown kind {other:?}"))),
            };
            *slot = value;
        }
        if weights == (Weights { application: 0, message: 0, timer: 0, fault: 0 }) {
            return Err(fail("every weight is 0".into()));
        }
        Ok(weights)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_ones_are_rejected() {
        assert_eq!("uniform".parse::<Weights>().unwrap(), Weights::UNIFORM);
        let w: Weights = "app=3,timer=0".parse().unwrap();
        assert_eq!(w, Weights { application: 3, timer: 0, ..Weights::BIASED });
        assert_eq!(w.to_string().parse::<Weights>().unwrap(), w);
        for bad in ["", "app", "app=x", "net=1", "app=0,msg=0,timer=0,fault=0"] {
            assert!(bad.parse::<Weights>().is_err(), "{bad:?}");
        }
        assert_eq!(Weights::BIASED.of(Action::Reset(crate::NodeId(0))), 1);
        assert_eq!(Weights::BIASED.without_faults().of(Action::Drop(0)), 0);
    }
}
