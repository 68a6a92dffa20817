//! The per-phase tables (both runs side by side) and the JSON results.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{json, Value};
use tripgate_wasmtime::RejectReason;

use crate::caller::TransitionEvent;
use crate::options::Options;
use crate::scenario::{Behaviour, Phase};
use crate::stats::{Check, PhaseStats, RouteStats, Run};
use crate::Setup;

const LABEL: usize = 36;
const COLUMN: usize = 24;

fn ms(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

pub fn secs(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1.0 {
        format!("{:.0} ms", s * 1000.0)
    } else {
        format!("{s:.1} s")
    }
}

fn describe(phase: &Phase, setup: &Setup) -> String {
    match phase.behaviour {
        Behaviour::Healthy => format!("the upstream answers 200 in {}", secs(setup.latency)),
        Behaviour::Hang => format!(
            "the upstream stalls {} per request; the caller's timeout is {}",
            secs(setup.stall),
            secs(setup.timeout)
        ),
        Behaviour::Unavailable => "the upstream answers 503".into(),
        Behaviour::NotFound => "the upstream answers 404 (alive: a client error)".into(),
        Behaviour::ColdStart => format!(
            "the upstream restarts cold: {} cache fills, {} at a time, {} each",
            setup.fills_to_warm,
            setup.fill_slots,
            secs(setup.fill)
        ),
    }
}

fn row(out: &mut String, label: &str, cells: &[String]) {
    let _ = write!(out, "  {label:<LABEL$}");
    for cell in cells {
        let _ = write!(out, "{cell:>COLUMN$}");
    }
    out.push('\n');
}

fn transitions_text(ts: &[TransitionEvent]) -> Vec<String> {
    ts.iter()
        .map(|t| {
            format!(
                "{:.2}s {}→{} ({})",
                t.at,
                short(t.from.name()),
                short(t.to.name()),
                t.reason.name()
            )
        })
        .collect()
}

fn short(state: &str) -> &str {
    match state {
        "half-open" => "half",
        other => other,
    }
}

/// The tables, one per phase, a column per run, then the checks.
pub fn tables(
    o: &Options,
    setup: &Setup,
    runs: &[(&Run, &[PhaseStats])],
    checks: &[Check],
) -> String {
    let mut out = String::new();
    let Some((first, _)) = runs.first() else {
        return out;
    };
    let phases = &first.scenario.phases;
    for (i, phase) in phases.iter().enumerate() {
        let _ = writeln!(
            out,
            "\n── phase {}/{}: {} ({:.1}–{:.1} s) · {}",
            i + 1,
            phases.len(),
            phase.name,
            phase.start.as_secs_f64(),
            phase.end.as_secs_f64(),
            describe(phase, setup)
        );
        let table = Columns { runs, phase: i };
        table.row(&mut out, "", |r, _| r.mode.name().to_string());
        service_rows(&mut out, &table, first.pool);
        breaker_rows(&mut out, &table, o, phase);
        transition_lines(&mut out, runs, i);
    }
    out.push_str("\n── acceptance (from this run's own measurements)\n");
    for check in checks {
        let _ = writeln!(
            out,
            "  [{}] {}\n         {}",
            if check.pass { "PASS" } else { "FAIL" },
            check.name,
            check.detail
        );
    }
    out
}

/// One phase of every run, a column each.
struct Columns<'a> {
    runs: &'a [(&'a Run, &'a [PhaseStats])],
    phase: usize,
}

impl Columns<'_> {
    fn row(&self, out: &mut String, label: &str, cell: impl Fn(&Run, &PhaseStats) -> String) {
        let cells: Vec<String> = self
            .runs
            .iter()
            .map(|(r, p)| cell(r, &p[self.phase]))
            .collect();
        row(out, label, &cells);
    }

    /// A row about the breaker: `none` in the column of the run without one.
    fn breaker_row(
        &self,
        out: &mut String,
        label: &str,
        none: &str,
        cell: impl Fn(&PhaseStats) -> String,
    ) {
        self.row(out, label, |r, p| match r.metrics {
            None => none.into(),
            Some(_) => cell(p),
        });
    }
}

/// What the caller service and the upstream went through.
fn service_rows(out: &mut String, table: &Columns<'_>, pool: u32) {
    let route = |s: &RouteStats| format!("{} / {} ms", ms(s.p50), ms(s.p99));
    table.row(out, "unrelated route p50 / p99", |_, p| route(&p.local));
    table.row(out, "unrelated route errors", |_, p| {
        format!(
            "{:.1}% ({}/{})",
            p.local.error_rate() * 100.0,
            p.local.failed(),
            p.local.count
        )
    });
    table.row(out, "machine: scheduling delay p99", |_, p| {
        format!("{} ms", ms(p.sched_delay_p99))
    });
    table.row(out, &format!("worker pool peak (of {pool})"), |r, p| {
        if p.counters.peak_busy >= r.pool {
            format!(
                "{} FULL {:.0}% of time",
                p.counters.peak_busy,
                p.saturated_share * 100.0
            )
        } else {
            p.counters.peak_busy.to_string()
        }
    });
    table.row(out, "waiting line peak / shed (503)", |_, p| {
        format!("{} / {}", p.counters.peak_waiting, p.counters.shed)
    });
    table.row(out, "upstream route: real / fallback / err", |_, p| {
        let s = &p.upstream_route;
        format!("{} / {} / {}", s.ok + s.not_found, s.fallback, s.failed())
    });
    table.row(out, "upstream route p50 / p99", |_, p| {
        route(&p.upstream_route)
    });
    table.row(out, "requests the upstream received", |_, p| {
        p.counters.upstream_received.to_string()
    });
    table.row(out, "upstream peak concurrency", |_, p| {
        p.counters.upstream_peak.to_string()
    });
}

/// What the breaker did, in the run that has one.
fn breaker_rows(out: &mut String, table: &Columns<'_>, o: &Options, phase: &Phase) {
    let label = format!("probes received (peak at once, K={})", o.probes);
    table.breaker_row(out, &label, "–", |p| {
        format!(
            "{} (peak {})",
            p.counters.upstream_probes, p.counters.upstream_peak_probes
        )
    });
    table.breaker_row(
        out,
        "breaker closed / open / half-open",
        "no breaker",
        |p| {
            format!(
                "{:.0}% / {:.0}% / {:.0}%",
                p.closed_share * 100.0,
                p.open_share * 100.0,
                p.half_open_share * 100.0
            )
        },
    );
    table.breaker_row(out, "rejected by the breaker", "–", |p| {
        p.counters.rejected.to_string()
    });
    table.breaker_row(out, "trips: in phase / by its answers", "–", |p| {
        format!("{} / {}", p.trips, p.trips_caused)
    });
    if phase.behaviour == Behaviour::NotFound {
        table.breaker_row(out, "404s the closed breaker recorded", "–", |p| {
            p.counters.recorded_404_closed.to_string()
        });
    }
}

/// The transitions of phase `i`, one per line, in the breaker's column.
fn transition_lines(out: &mut String, runs: &[(&Run, &[PhaseStats])], i: usize) {
    for (run, stats) in runs {
        if run.metrics.is_none() {
            continue;
        }
        let lines = transitions_text(&stats[i].transitions);
        let shown = 6;
        for (n, line) in lines.iter().take(shown).enumerate() {
            let label = if n == 0 { "transitions" } else { "" };
            let _ = writeln!(out, "  {label:<LABEL$}{line}");
        }
        if lines.len() > shown {
            let _ = writeln!(out, "  {:<LABEL$}… {} more", "", lines.len() - shown);
        }
    }
}

fn route_json(s: &RouteStats) -> Value {
    json!({
        "count": s.count,
        "ok": s.ok,
        "not_found": s.not_found,
        "fallback": s.fallback,
        "busy": s.busy,
        "timed_out": s.timed_out,
        "errors": s.errors,
        "failed": s.failed(),
        "error_rate": s.error_rate(),
        "p50_ms": s.p50,
        "p99_ms": s.p99,
        "max_ms": s.max,
        "generator_lag_p99_ms": s.lag_p99,
    })
}

fn transition_json(t: &TransitionEvent) -> Value {
    json!({
        "at_s": t.at,
        "from": t.from.name(),
        "to": t.to.name(),
        "reason": t.reason.name(),
        "phase": t.phase,
        "cause_phase": t.cause,
    })
}

/// Machine-readable results: the options, each run's phases, the checks.
pub fn json(
    o: &Options,
    setup: &Setup,
    runs: &[(&Run, &[PhaseStats])],
    checks: &[Check],
    picture: &Path,
) -> Value {
    let runs: Vec<Value> = runs
        .iter()
        .map(|(run, stats)| run_json(run, stats))
        .collect();
    json!({
        "options": {
            "scale": o.scale,
            "upstream_rate_per_s": o.upstream_rate(),
            "local_rate_per_s": o.local_rate,
            "pool": o.pool,
            "queue": o.queue,
            "timeout_ms": setup.timeout.as_secs_f64() * 1000.0,
            "k": o.probes,
            "m": o.successes,
            "threshold": o.threshold,
            "cooldown_ms": setup.cooldown.as_secs_f64() * 1000.0,
            "slow_call_ms": setup.slow_call.as_secs_f64() * 1000.0,
            "local_work_ms": o.local_work.as_secs_f64() * 1000.0,
            "client_timeout_ms": setup.client_timeout.as_secs_f64() * 1000.0,
            "seed": o.seed,
            "component": setup.component.as_ref().map(|p| p.display().to_string()),
        },
        "runs": runs,
        "checks": checks.iter().map(|c| json!({"name": c.name, "pass": c.pass, "detail": c.detail})).collect::<Vec<_>>(),
        "all_pass": checks.iter().all(|c| c.pass),
        "picture": picture.display().to_string(),
    })
}

/// One run: its phases and its breaker's lifetime counters.
fn run_json(run: &Run, stats: &[PhaseStats]) -> Value {
    let phases: Vec<Value> = run
        .scenario
        .phases
        .iter()
        .zip(stats.iter())
        .map(|(phase, p)| phase_json(run, phase, p))
        .collect();
    let metrics = run.metrics.as_ref().map(|m| {
        json!({
            "state": m.state.name(),
            "epoch": m.epoch,
            "admitted_total": m.admitted_total,
            "rejected_open": m.rejected(RejectReason::Open),
            "rejected_probing": m.rejected(RejectReason::Probing),
            "successes_total": m.successes_total,
            "faults_total": m.faults_total,
            "stale_total": m.stale_total,
            "transitions_total": m.transitions_total,
        })
    });
    json!({
        "mode": run.mode.name(),
        "pool": run.pool,
        "wall_s": run.wall,
        "requests": run.samples.len(),
        "pool_peak": stats.iter().map(|p| p.counters.peak_busy).max().unwrap_or(0),
        "breaker": metrics,
        "phases": phases,
    })
}

fn phase_json(run: &Run, phase: &Phase, p: &PhaseStats) -> Value {
    let c = &p.counters;
    json!({
        "name": phase.name,
        "start_s": phase.start.as_secs_f64(),
        "end_s": phase.end.as_secs_f64(),
        "local": route_json(&p.local),
        "upstream_route": route_json(&p.upstream_route),
        "pool_peak": c.peak_busy,
        "pool_saturated": c.peak_busy >= run.pool,
        "saturated_share": p.saturated_share,
        "sched_delay_p99_ms": p.sched_delay_p99,
        "waiting_peak": c.peak_waiting,
        "shed": c.shed,
        "calls_sent": c.sent,
        "probes_sent": c.probes_sent,
        "rejected": c.rejected,
        "recorded_404": c.recorded_404,
        "recorded_404_closed": c.recorded_404_closed,
        "upstream_received": c.upstream_received,
        "upstream_probes": c.upstream_probes,
        "upstream_peak_concurrency": c.upstream_peak,
        "upstream_peak_probes": c.upstream_peak_probes,
        "upstream_abandoned": c.upstream_abandoned,
        "trips": p.trips,
        "trips_caused": p.trips_caused,
        "closed_share": p.closed_share,
        "open_share": p.open_share,
        "half_open_share": p.half_open_share,
        "transitions": p.transitions.iter().map(transition_json).collect::<Vec<_>>(),
    })
}
