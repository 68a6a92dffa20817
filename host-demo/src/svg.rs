//! The timeline picture: one self-contained SVG, a panel per run. Each panel has the
//! breaker's state as a coloured strip, busy workers and the upstream's concurrency as
//! lines (with the pool size), and the unrelated route's latencies as dots (log scale).

use std::fmt::Write as _;

use tripgate_wasmtime::State;

use crate::loadgen::Route;
use crate::stats::{PhaseStats, Run, Tick};

const WIDTH: f64 = 1100.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 24.0;
const STRIP: f64 = 14.0;
const CHART: f64 = 150.0;
const DOTS: f64 = 80.0;
const PANEL: f64 = 30.0 + STRIP + 8.0 + CHART + 12.0 + DOTS + 34.0;

const BUSY: &str = "#2563eb";
const UPSTREAM: &str = "#ea580c";
const PROBES: &str = "#9333ea";
const POOL: &str = "#dc2626";
const WAITING: &str = "#64748b";

fn state_colour(state: Option<State>) -> &'static str {
    match state {
        None => "#d4d4d8",
        Some(State::Closed) => "#16a34a",
        Some(State::Open) => "#dc2626",
        Some(State::HalfOpen) => "#f59e0b",
        Some(State::Isolated) => "#7f1d1d",
        Some(State::Disabled) => "#a1a1aa",
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

pub fn render(runs: &[(&Run, &[PhaseStats])], title: &str, client_timeout_ms: f64) -> String {
    let height = 48.0 + PANEL * runs.len() as f64 + 40.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="system-ui, sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="24" font-size="15" font-weight="600">{}</text>"#,
        esc(title)
    );
    // One y-scale for both panels' charts, so they compare at a glance.
    let top = runs
        .iter()
        .flat_map(|(r, _)| {
            r.ticks
                .iter()
                .map(|t| t.busy.max(t.upstream).max(t.waiting))
        })
        .chain(runs.iter().map(|(r, _)| r.pool))
        .max()
        .unwrap_or(1)
        .max(1) as f64
        * 1.1;
    for (n, (run, _)) in runs.iter().enumerate() {
        panel(&mut s, run, 48.0 + PANEL * n as f64, top, client_timeout_ms);
    }
    legend(&mut s, height - 22.0);
    s.push_str("</svg>\n");
    s
}

fn panel(s: &mut String, run: &Run, y0: f64, top: f64, client_timeout_ms: f64) {
    let strip_y = y0 + 30.0;
    let chart_y = strip_y + STRIP + 8.0;
    let dots_y = chart_y + CHART + 12.0;
    let p = Panel {
        run,
        y0,
        total: run.scenario.total().as_secs_f64().max(1e-9),
        strip_y,
        chart_y,
        dots_y,
        bottom: dots_y + DOTS,
    };
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="{}" font-size="13" font-weight="600">{}</text>"#,
        y0 + 12.0,
        esc(match run.metrics {
            None => "timeout-only (no breaker)",
            Some(_) => "tripgate",
        })
    );
    p.phases(s);
    p.strip(s);
    p.chart(s, top);
    p.latencies(s, client_timeout_ms);
    p.time_axis(s);
}

/// One run's panel: where its parts lie.
struct Panel<'a> {
    run: &'a Run,
    /// The panel's top.
    y0: f64,
    /// The scenario's length in seconds.
    total: f64,
    strip_y: f64,
    chart_y: f64,
    dots_y: f64,
    bottom: f64,
}

impl Panel<'_> {
    /// Where second `t` of the run lies.
    fn x(&self, t: f64) -> f64 {
        LEFT + (WIDTH - LEFT - RIGHT) * (t / self.total).clamp(0.0, 1.0)
    }

    /// Phase bands and names.
    fn phases(&self, s: &mut String) {
        let (y0, chart_y, bottom) = (self.y0, self.chart_y, self.bottom);
        for (i, phase) in self.run.scenario.phases.iter().enumerate() {
            let (a, b) = (
                self.x(phase.start.as_secs_f64()),
                self.x(phase.end.as_secs_f64()),
            );
            let fill = if i % 2 == 0 { "#f4f4f5" } else { "#ffffff" };
            let _ = writeln!(
                s,
                r#"<rect x="{a:.1}" y="{chart_y:.1}" width="{:.1}" height="{:.1}" fill="{fill}"/>"#,
                b - a,
                bottom - chart_y
            );
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#52525b">{}</text>"##,
                (a + b) / 2.0,
                y0 + 26.0,
                esc(phase.name)
            );
            let _ = writeln!(
                s,
                r##"<line x1="{a:.1}" x2="{a:.1}" y1="{:.1}" y2="{bottom:.1}" stroke="#a1a1aa" stroke-dasharray="2,3"/>"##,
                y0 + 16.0
            );
        }
    }

    /// The breaker's state strip, run-length encoded.
    fn strip(&self, s: &mut String) {
        let (ticks, strip_y) = (&self.run.ticks, self.strip_y);
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#52525b">breaker</text>"##,
            LEFT - 6.0,
            strip_y + 11.0
        );
        let mut i = 0;
        while i < ticks.len() {
            let state = ticks[i].state;
            let mut j = i + 1;
            while j < ticks.len() && ticks[j].state == state {
                j += 1;
            }
            let a = self.x(ticks[i].at.max(0.0));
            let b = if j < ticks.len() {
                self.x(ticks[j].at)
            } else {
                self.x(self.total)
            };
            if b > a {
                let _ = writeln!(
                    s,
                    r#"<rect x="{a:.1}" y="{strip_y:.1}" width="{:.2}" height="{STRIP}" fill="{}"/>"#,
                    b - a,
                    state_colour(state)
                );
            }
            i = j;
        }
    }

    /// The chart's axis, the pool line, and a line per reading (scaled to `top`).
    fn chart(&self, s: &mut String, top: f64) {
        let run = self.run;
        let y = |v: f64| self.chart_y + CHART - CHART * (v / top).clamp(0.0, 1.0);
        for v in [0.0, (top / 1.1 / 2.0).round(), (top / 1.1).round()] {
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#52525b">{v}</text>"##,
                LEFT - 6.0,
                y(v) + 4.0
            );
        }
        let pool_y = y(f64::from(run.pool));
        let _ = writeln!(
            s,
            r#"<line x1="{LEFT}" x2="{:.1}" y1="{pool_y:.1}" y2="{pool_y:.1}" stroke="{POOL}" stroke-dasharray="6,3"/>"#,
            WIDTH - RIGHT
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="{POOL}">pool: {} workers</text>"#,
            WIDTH - RIGHT - 4.0,
            pool_y - 4.0,
            run.pool
        );
        for (colour, width, value) in [
            (
                UPSTREAM,
                1.5,
                &(|t: &Tick| t.upstream) as &dyn Fn(&Tick) -> u32,
            ),
            (WAITING, 1.0, &|t: &Tick| t.waiting),
            (PROBES, 1.5, &|t: &Tick| t.probes),
            (BUSY, 2.0, &|t: &Tick| t.busy),
        ] {
            let points: Vec<String> = run
                .ticks
                .iter()
                .filter(|t| t.at >= 0.0)
                .map(|t| format!("{:.1},{:.1}", self.x(t.at), y(f64::from(value(t)))))
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline fill="none" stroke="{colour}" stroke-width="{width}" stroke-linejoin="round" points="{}"/>"#,
                points.join(" ")
            );
        }
    }

    /// The unrelated route's latencies, log scale from 1 ms to the client timeout.
    fn latencies(&self, s: &mut String, client_timeout_ms: f64) {
        let (dots_y, plot) = (self.dots_y, WIDTH - LEFT - RIGHT);
        let (lo, hi) = (1.0f64.ln(), client_timeout_ms.max(10.0).ln());
        let ly =
            |ms: f64| dots_y + DOTS - DOTS * ((ms.max(1.0).ln() - lo) / (hi - lo)).clamp(0.0, 1.0);
        let _ = writeln!(
            s,
            r##"<rect x="{LEFT}" y="{dots_y:.1}" width="{plot:.1}" height="{DOTS}" fill="none" stroke="#e4e4e7"/>"##
        );
        for ms in [1.0, 10.0, 100.0, 1000.0, 10000.0] {
            if ms > client_timeout_ms.max(10.0) * 1.01 {
                break;
            }
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#52525b">{}</text><line x1="{LEFT}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#e4e4e7"/>"##,
                LEFT - 6.0,
                ly(ms) + 4.0,
                if ms >= 1000.0 {
                    format!("{} s", ms / 1000.0)
                } else {
                    format!("{ms} ms")
                },
                WIDTH - RIGHT,
                ly(ms),
                ly(ms)
            );
        }
        for sample in self.run.samples.iter().filter(|s| s.route == Route::Local) {
            let (cx, cy) = (self.x(sample.at), ly(sample.latency * 1000.0));
            if sample.ending.failed() {
                // A failure (shed at once or timed out) is drawn at the top, however fast
                // it failed: the client got nothing.
                let _ = writeln!(
                    s,
                    r##"<path d="M{:.1},{:.1}l4,4m0,-4l-4,4" stroke="#dc2626" stroke-width="1"/>"##,
                    cx - 2.0,
                    dots_y + 1.0
                );
            } else {
                let _ = writeln!(
                    s,
                    r##"<circle cx="{cx:.1}" cy="{cy:.1}" r="1.4" fill="#0f766e" fill-opacity="0.6"/>"##
                );
            }
        }
        let _ = writeln!(
            s,
            r##"<text x="{LEFT}" y="{:.1}" fill="#52525b">unrelated route latency (log scale; red x at the top = failed: shed or timed out)</text>"##,
            self.bottom + 14.0
        );
    }

    fn time_axis(&self, s: &mut String) {
        let total = self.total;
        let step = if total > 12.0 {
            2.0
        } else if total > 6.0 {
            1.0
        } else {
            0.5
        };
        let mut t = 0.0;
        while t <= total + 1e-9 {
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#71717a">{t} s</text>"##,
                self.x(t),
                self.bottom + 28.0
            );
            t += step;
        }
    }
}

fn legend(s: &mut String, y: f64) {
    let items: [(&str, &str); 8] = [
        (BUSY, "busy workers"),
        (WAITING, "waiting connections"),
        (UPSTREAM, "upstream concurrency"),
        (PROBES, "probes at the upstream"),
        ("#16a34a", "closed"),
        ("#dc2626", "open"),
        ("#f59e0b", "half-open"),
        ("#d4d4d8", "no breaker"),
    ];
    let mut x = LEFT;
    for (colour, label) in items {
        let _ = writeln!(
            s,
            r#"<rect x="{x:.1}" y="{:.1}" width="12" height="10" fill="{colour}"/><text x="{:.1}" y="{y:.1}">{label}</text>"#,
            y - 9.0,
            x + 16.0
        );
        x += 22.0 + 6.5 * label.len() as f64 + 18.0;
    }
}
