//! A run's raw measurements, reduced per phase, and the acceptance checks.

use tripgate_wasmtime::{Metrics, State};

use crate::caller::TransitionEvent;
use crate::loadgen::{Ending, Route, Sample};
use crate::options::Options;
use crate::scenario::{Scenario, FLOOD, HANG, HEALTHY, RECOVERY, STORM};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    TimeoutOnly,
    Tripgate,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::TimeoutOnly => "timeout-only",
            Mode::Tripgate => "tripgate",
        }
    }
}

/// One reading of the sampler.
#[derive(Clone, Copy, Debug)]
pub struct Tick {
    /// Seconds since the start.
    pub at: f64,
    /// Seconds the sampler woke later than it asked to (scheduling delay).
    pub late: f64,
    pub busy: u32,
    pub waiting: u32,
    pub upstream: u32,
    pub probes: u32,
    pub state: Option<State>,
}

/// The caller's and the upstream's counters for one phase, read at the end.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    pub peak_busy: u32,
    pub peak_waiting: u32,
    pub shed: u64,
    pub sent: u64,
    pub probes_sent: u64,
    pub rejected: u64,
    pub recorded_404: u64,
    pub recorded_404_closed: u64,
    pub upstream_received: u64,
    pub upstream_probes: u64,
    pub upstream_peak: u32,
    pub upstream_peak_probes: u32,
    pub upstream_abandoned: u64,
}

/// Everything one run measured.
pub struct Run {
    pub mode: Mode,
    pub scenario: Scenario,
    pub pool: u32,
    pub samples: Vec<Sample>,
    pub ticks: Vec<Tick>,
    pub transitions: Vec<TransitionEvent>,
    pub counters: Vec<Counters>,
    pub metrics: Option<Metrics>,
    /// Wall seconds the run took, setup and drain included.
    pub wall: f64,
}

/// Latencies and endings of one route in one phase.
#[derive(Clone, Debug, Default)]
pub struct RouteStats {
    pub count: usize,
    pub ok: usize,
    pub not_found: usize,
    pub fallback: usize,
    pub busy: usize,
    pub timed_out: usize,
    pub errors: usize,
    /// Milliseconds, over every request (a failed one counts its time to failure).
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
    /// The load generator's own lag behind its schedule, p99 (milliseconds).
    pub lag_p99: f64,
}

impl RouteStats {
    fn of<'a>(samples: impl Iterator<Item = &'a Sample>) -> Self {
        let mut s = Self::default();
        let mut latencies = Vec::new();
        let mut lags = Vec::new();
        for sample in samples {
            s.count += 1;
            latencies.push(sample.latency * 1000.0);
            lags.push(sample.lag * 1000.0);
            match sample.ending {
                Ending::Ok => s.ok += 1,
                Ending::NotFound => s.not_found += 1,
                Ending::Fallback => s.fallback += 1,
                Ending::Busy => s.busy += 1,
                Ending::TimedOut => s.timed_out += 1,
                Ending::Error => s.errors += 1,
            }
        }
        latencies.sort_by(f64::total_cmp);
        s.p50 = percentile(&latencies, 0.50);
        s.p99 = percentile(&latencies, 0.99);
        s.max = latencies.last().copied().unwrap_or(0.0);
        lags.sort_by(f64::total_cmp);
        s.lag_p99 = percentile(&lags, 0.99);
        s
    }

    /// Requests that got no useful answer.
    pub fn failed(&self) -> usize {
        self.busy + self.timed_out + self.errors
    }

    pub fn error_rate(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.failed() as f64 / self.count as f64
        }
    }
}

/// Nearest-rank percentile of sorted values (0 when empty).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// One phase of one run.
#[derive(Clone, Debug)]
pub struct PhaseStats {
    pub local: RouteStats,
    pub upstream_route: RouteStats,
    pub counters: Counters,
    /// Share of the phase's sampler ticks with every worker busy.
    pub saturated_share: f64,
    pub transitions: Vec<TransitionEvent>,
    /// Transitions to open during the phase.
    pub trips: usize,
    /// Transitions to open caused by this phase's upstream answers (or its hung calls).
    pub trips_caused: usize,
    /// The sampler's wake-up delay, p99 in milliseconds: how busy the machine was.
    pub sched_delay_p99: f64,
    /// Share of ticks in closed, open and half-open (zero without a breaker).
    pub closed_share: f64,
    pub open_share: f64,
    pub half_open_share: f64,
}

pub fn phase_stats(run: &Run) -> Vec<PhaseStats> {
    (0..run.scenario.phases.len())
        .map(|i| {
            let phase = &run.scenario.phases[i];
            let (start, end) = (phase.start.as_secs_f64(), phase.end.as_secs_f64());
            let ticks: Vec<&Tick> = run
                .ticks
                .iter()
                .filter(|t| t.at >= start && t.at < end)
                .collect();
            let share = |f: &dyn Fn(&Tick) -> bool| {
                if ticks.is_empty() {
                    0.0
                } else {
                    ticks.iter().filter(|t| f(t)).count() as f64 / ticks.len() as f64
                }
            };
            let transitions: Vec<TransitionEvent> = run
                .transitions
                .iter()
                .filter(|t| t.phase == i)
                .cloned()
                .collect();
            let opened = |t: &&TransitionEvent| t.to == State::Open;
            PhaseStats {
                local: RouteStats::of(
                    run.samples
                        .iter()
                        .filter(|s| s.phase == i && s.route == Route::Local),
                ),
                upstream_route: RouteStats::of(
                    run.samples
                        .iter()
                        .filter(|s| s.phase == i && s.route == Route::Upstream),
                ),
                counters: run.counters[i].clone(),
                saturated_share: share(&|t| t.busy >= run.pool),
                sched_delay_p99: {
                    let mut late: Vec<f64> = ticks.iter().map(|t| t.late * 1000.0).collect();
                    late.sort_by(f64::total_cmp);
                    percentile(&late, 0.99)
                },
                trips: transitions.iter().filter(opened).count(),
                trips_caused: run
                    .transitions
                    .iter()
                    .filter(opened)
                    .filter(|t| t.cause == i)
                    .count(),
                transitions,
                closed_share: share(&|t| t.state == Some(State::Closed)),
                open_share: share(&|t| t.state == Some(State::Open)),
                half_open_share: share(&|t| t.state == Some(State::HalfOpen)),
            }
        })
        .collect()
}

/// One acceptance rule, measured.
#[derive(Clone, Debug)]
pub struct Check {
    pub name: &'static str,
    pub pass: bool,
    pub detail: String,
}

/// The acceptance rules, from the runs' own measurements. Rules about a run
/// that was not made are left out.
pub fn checks(o: &Options, runs: &[(&Run, &[PhaseStats])]) -> Vec<Check> {
    let mut out = Vec::new();
    let find = |mode| runs.iter().find(|(r, _)| r.mode == mode);
    if let Some((run, phases)) = find(Mode::Tripgate) {
        let (healthy, hang) = (&phases[HEALTHY].local, &phases[HANG].local);
        let limit = 2.0 * healthy.p99;
        out.push(Check {
            name: "tripgate: unrelated p99 in the hang within 2x healthy",
            pass: hang.count > 0 && healthy.count > 0 && hang.p99 <= limit && hang.failed() == 0,
            detail: format!(
                "hang p99 {:.1} ms vs healthy p99 {:.1} ms (limit {:.1} ms), {} of {} failed",
                hang.p99,
                healthy.p99,
                limit,
                hang.failed(),
                hang.count
            ),
        });
        let peak = phases
            .iter()
            .map(|p| p.counters.peak_busy)
            .max()
            .unwrap_or(0);
        out.push(Check {
            name: "tripgate: the worker pool never saturates",
            pass: peak < run.pool && phases.iter().all(|p| p.counters.shed == 0),
            detail: format!(
                "peak {peak} of {} workers busy over the whole run, {} shed",
                run.pool,
                phases.iter().map(|p| p.counters.shed).sum::<u64>()
            ),
        });
        // The probe and 404 counts come from the single-attempt path, which marks its
        // probes and records each answer itself: checked in a run without `--retries`.
        if o.retries == 0 {
            out.extend(probe_and_flood_checks(o, phases));
        }
    }
    if o.retries > 0 {
        out.extend(retry_checks(o, runs));
    }
    if let Some((run, phases)) = find(Mode::TimeoutOnly) {
        let (healthy, hang) = (&phases[HEALTHY].local, &phases[HANG].local);
        let peak = phases[HANG].counters.peak_busy;
        let stalls = hang.p99 > 2.0 * healthy.p99;
        let fails = hang.error_rate() >= 0.01;
        out.push(Check {
            name: "timeout-only: the pool saturates and the unrelated route stalls or fails",
            pass: peak >= run.pool && (stalls || fails),
            detail: format!(
                "peak {peak} of {} workers busy in the hang (saturated {:.0}% of it); \
                 unrelated p99 {:.1} ms vs healthy {:.1} ms, {:.1}% failed",
                run.pool,
                phases[HANG].saturated_share * 100.0,
                hang.p99,
                healthy.p99,
                hang.error_rate() * 100.0
            ),
        });
    }
    out
}

/// The recovery's probes (at most K at once) and the 404 flood (no trip), counted by the
/// single-attempt path.
fn probe_and_flood_checks(o: &Options, phases: &[PhaseStats]) -> Vec<Check> {
    let mut out = Vec::new();
    let recovery = &phases[RECOVERY].counters;
    out.push(Check {
        name: "tripgate: at most K concurrent probes reach the recovering upstream",
        pass: recovery.upstream_peak_probes <= u32::from(o.probes) && recovery.upstream_probes > 0,
        detail: format!(
            "peak {} concurrent probes at the upstream (K = {}), {} probes in recovery",
            recovery.upstream_peak_probes, o.probes, recovery.upstream_probes
        ),
    });
    let flood = &phases[FLOOD];
    let floor = 2 * u64::from(o.threshold);
    out.push(Check {
        name: "tripgate: the 404 flood trips nothing",
        pass: flood.trips_caused == 0 && flood.counters.recorded_404_closed >= floor,
        detail: format!(
            "{} trips caused by 404 answers; the closed breaker recorded {} 404s \
             (at least {floor} to count), closed {:.0}% of the phase",
            flood.trips_caused,
            flood.counters.recorded_404_closed,
            flood.closed_share * 100.0
        ),
    });
    out
}

/// Requests that reached the upstream per request offered on its route in the 503 storm.
pub fn storm_load(phases: &[PhaseStats]) -> f64 {
    let storm = &phases[STORM];
    let offered = storm.upstream_route.count.max(1);
    storm.counters.upstream_received as f64 / offered as f64
}

/// With `--retries N`: the upstream's load in the 503 storm per offered request, at most
/// `1 + budget` through tripgate, and what the same retries do without it.
fn retry_checks(o: &Options, runs: &[(&Run, &[PhaseStats])]) -> Vec<Check> {
    let budget = f64::from(tripgate_wasmtime::RetryPolicy::default().budget_percent) / 100.0;
    let mut out = Vec::new();
    for (run, phases) in runs {
        let load = storm_load(phases);
        let storm = &phases[STORM];
        let detail = format!(
            "{} requests reached the upstream for {} offered in the 503 storm: {load:.2} each",
            storm.counters.upstream_received, storm.upstream_route.count
        );
        out.push(match run.mode {
            Mode::Tripgate => Check {
                name: "tripgate, retries: the 503 storm's upstream load stays within 1 + budget",
                pass: load <= 1.0 + budget,
                detail: format!(
                    "{detail} (limit {:.2}, retries={})",
                    1.0 + budget,
                    o.retries
                ),
            },
            Mode::TimeoutOnly => Check {
                name: "timeout-only, retries: the retries multiply the 503 storm's load",
                pass: load > 1.0 + budget,
                detail: format!("{detail} (retries={})", o.retries),
            },
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 50.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&[3.0], 0.99), 3.0);
        assert_eq!(percentile(&[], 0.99), 0.0);
    }
}
