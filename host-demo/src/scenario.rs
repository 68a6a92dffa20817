//! The script: six phases the upstream plays, in order, on one shared clock.

use std::time::{Duration, Instant};

/// What the upstream does during a phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// Answers 200 after its normal latency.
    Healthy,
    /// Accepts the request and stalls far past the caller's timeout before answering.
    Hang,
    /// Answers 503 at once.
    Unavailable,
    /// Answers 404 at once: alive, just not finding things.
    NotFound,
    /// Restarted with a cold cache: the first requests fill it, a few at a time, slowly.
    ColdStart,
}

#[derive(Clone, Debug)]
pub struct Phase {
    pub name: &'static str,
    pub behaviour: Behaviour,
    /// Offset from the scenario's start.
    pub start: Duration,
    pub end: Duration,
}

/// The phases at scale 1, in seconds.
const SCRIPT: [(&str, Behaviour, f64); 6] = [
    ("healthy", Behaviour::Healthy, 3.0),
    ("hang", Behaviour::Hang, 4.0),
    ("503 storm", Behaviour::Unavailable, 3.0),
    ("404 flood", Behaviour::NotFound, 3.0),
    ("recovery", Behaviour::ColdStart, 4.0),
    ("healthy again", Behaviour::Healthy, 3.0),
];

/// Index of the first healthy phase (the baseline) and of the others the checks use.
pub const HEALTHY: usize = 0;
pub const HANG: usize = 1;
pub const STORM: usize = 2;
pub const FLOOD: usize = 3;
pub const RECOVERY: usize = 4;

#[derive(Clone, Debug)]
pub struct Scenario {
    pub phases: Vec<Phase>,
}

impl Scenario {
    pub fn new(scale: f64) -> Self {
        let mut at = Duration::ZERO;
        let phases = SCRIPT
            .iter()
            .map(|&(name, behaviour, secs)| {
                let start = at;
                at += Duration::from_secs_f64(secs * scale);
                Phase {
                    name,
                    behaviour,
                    start,
                    end: at,
                }
            })
            .collect();
        Self { phases }
    }

    pub fn total(&self) -> Duration {
        self.phases.last().map_or(Duration::ZERO, |p| p.end)
    }

    /// The phase playing at `offset` (the first before the start, the last after the end).
    pub fn index_at(&self, offset: Duration) -> usize {
        self.phases
            .iter()
            .position(|p| offset < p.end)
            .unwrap_or(self.phases.len() - 1)
    }
}

/// The scenario and the instant it starts, shared by the upstream, the caller, the load
/// generator and the sampler so they agree on which phase is playing.
#[derive(Clone, Debug)]
pub struct Timeline {
    pub scenario: Scenario,
    pub start: Instant,
}

impl Timeline {
    pub fn offset(&self, at: Instant) -> Duration {
        at.saturating_duration_since(self.start)
    }

    /// Seconds since the start (negative before it).
    pub fn secs(&self, at: Instant) -> f64 {
        if at >= self.start {
            (at - self.start).as_secs_f64()
        } else {
            -(self.start - at).as_secs_f64()
        }
    }

    pub fn phase_at(&self, at: Instant) -> usize {
        self.scenario.index_at(self.offset(at))
    }

    pub fn phase_now(&self) -> usize {
        self.phase_at(Instant::now())
    }

    pub fn phases(&self) -> usize {
        self.scenario.phases.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_tile_the_timeline() {
        let s = Scenario::new(0.5);
        assert_eq!(s.total(), Duration::from_secs(10));
        assert_eq!(s.index_at(Duration::ZERO), 0);
        assert_eq!(s.index_at(Duration::from_millis(1499)), 0);
        assert_eq!(s.index_at(Duration::from_millis(1500)), HANG);
        assert_eq!(s.phases[FLOOD].behaviour, Behaviour::NotFound);
        assert_eq!(s.phases[RECOVERY].behaviour, Behaviour::ColdStart);
        assert_eq!(s.index_at(Duration::from_secs(99)), 5);
    }
}
