//! FLEET.md's "How it is measured", from the runs' own logs, and the timeline picture.

use std::fmt::Write as _;

use super::{MemberLog, RunLog, MEMBERS, PROBES};

/// One run's figures.
#[derive(Clone, Debug, Default)]
pub struct Figures {
    pub failing_before_all_open: Option<usize>,
    pub peak_probes: i64,
    /// ms, sorted
    pub open_delays: Vec<f64>,
    pub close_delays: Vec<f64>,
    pub calls: u64,
    pub waited: u64,
    pub slowest_us: u64,
    pub local_members: usize,
    /// ms from the restart to each member's link coming back, sorted
    pub resync: Vec<f64>,
    /// ms from the kill to each Rust and each Node member's link going down, sorted
    pub noticed: [Vec<f64>; 2],
}

pub struct Table {
    pub off: Figures,
    pub on: Figures,
    /// Commands the members sent the store, and over how many seconds (fleet mode on,
    /// before the kill).
    pub store_commands: Option<(u64, f64)>,
    /// What was killed and restarted.
    pub store: &'static str,
    /// Members other than the broken one that left closed, and whether the broken one
    /// opened (Q = 2 run).
    pub quorum_others_opened: usize,
    pub quorum_broken_opened: bool,
    pub nodes: usize,
}

fn abs_us(run: &RunLog, ms: u64) -> u64 {
    run.start_us + ms * 1000
}

fn opened_at(m: &MemberLog, from_us: u64) -> Option<u64> {
    m.transitions
        .iter()
        .find(|t| t.0 >= from_us && t.2 == "open")
        .map(|t| t.0)
}

fn figures(run: &RunLog) -> Figures {
    let (fail, cold, kill) = (
        abs_us(run, run.marks.fail),
        abs_us(run, run.marks.cold),
        abs_us(run, run.marks.kill),
    );
    let (fail_again, restart) = (
        abs_us(run, run.marks.fail_again),
        abs_us(run, run.marks.restart),
    );
    let all: Vec<&Transition> = run
        .members
        .iter()
        .flat_map(|m| m.transitions.iter())
        .collect();
    // Open propagation: from the first member's own trip to each fleet-open; close
    // propagation: from the first round that graduated to each fleet-close.
    let open_delays = delays(
        &all,
        (fail, cold),
        |t| t.2 == "open" && t.3 != "fleet-open",
        "fleet-open",
    );
    let close_delays = delays(
        &all,
        (cold, kill),
        |t| t.3 == "probes-succeeded",
        "fleet-close",
    );
    let stats: Vec<[u64; 5]> = run.members.iter().filter_map(|m| m.stats).collect();
    let mut resync: Vec<f64> = run
        .members
        .iter()
        .filter_map(|m| m.links.iter().find(|(t, up)| *up && *t >= restart))
        .map(|(t, _)| (t - restart) as f64 / 1000.0)
        .collect();
    resync.sort_by(f64::total_cmp);
    Figures {
        failing_before_all_open: failing_before_all_open(run, fail),
        peak_probes: peak_probes(run, cold, kill),
        open_delays,
        close_delays,
        calls: stats.iter().map(|s| s[0]).sum(),
        waited: stats.iter().map(|s| s[2]).sum(),
        slowest_us: stats.iter().map(|s| s[3]).max().unwrap_or(0),
        local_members: local_members(run, fail_again, restart),
        resync,
        noticed: noticed(run, kill),
    }
}

/// A member's transition: (unix µs, from, to, reason).
type Transition = (u64, String, String, String);

/// The 503s the upstream answered from `fail` until every member was open; None if one
/// never opened.
fn failing_before_all_open(run: &RunLog, fail: u64) -> Option<usize> {
    let opens: Vec<Option<u64>> = run.members.iter().map(|m| opened_at(m, fail)).collect();
    opens
        .iter()
        .copied()
        .collect::<Option<Vec<u64>>>()
        .and_then(|t| t.into_iter().max())
        .map(|all_open| {
            run.seen
                .iter()
                .filter(|s| s.status == 503 && s.at_us >= fail && s.at_us <= all_open)
                .count()
        })
}

/// The most probes at the upstream at once from `cold` until the first member closed.
fn peak_probes(run: &RunLog, cold: u64, kill: u64) -> i64 {
    // Until the first member closes, every call at the upstream is a probe.
    let first_close = run
        .members
        .iter()
        .filter_map(|m| {
            m.transitions
                .iter()
                .find(|t| t.0 >= cold && t.2 == "closed")
        })
        .map(|t| t.0)
        .min()
        .unwrap_or(kill);
    run.probes
        .iter()
        .filter(|(t, _)| *t >= cold && *t < first_close)
        .map(|(_, n)| *n)
        .max()
        .unwrap_or(0)
}

/// Within `window`, ms from the first transition `origin` picks to each transition for
/// `reason`, sorted.
fn delays(
    all: &[&Transition],
    (from, to): (u64, u64),
    origin: impl Fn(&Transition) -> bool,
    reason: &str,
) -> Vec<f64> {
    let within = |t: &Transition| t.0 >= from && t.0 < to;
    let first = all
        .iter()
        .filter(|t| within(t) && origin(t))
        .map(|t| t.0)
        .min();
    let mut delays: Vec<f64> = first.map_or_else(Vec::new, |first| {
        all.iter()
            .filter(|t| within(t) && t.3 == reason)
            .map(|t| (t.0.saturating_sub(first)) as f64 / 1000.0)
            .collect()
    });
    delays.sort_by(f64::total_cmp);
    delays
}

/// Members that kept deciding locally while the store was down: each tripped on its own.
fn local_members(run: &RunLog, fail_again: u64, restart: u64) -> usize {
    run.members
        .iter()
        .filter(|m| {
            let tripped_alone = m.transitions.iter().any(|t| {
                t.0 >= fail_again && t.0 < restart && t.2 == "open" && t.3 != "fleet-open"
            });
            // (The Node member does not count its local decisions; its trip shows them.)
            tripped_alone && (m.node || m.stats.is_some_and(|s| s[4] > 0))
        })
        .count()
}

/// ms from the kill to each Rust and each Node member's link going down, sorted.
fn noticed(run: &RunLog, kill: u64) -> [Vec<f64>; 2] {
    let mut noticed = [Vec::new(), Vec::new()];
    for m in &run.members {
        if let Some((t, _)) = m.links.iter().find(|(t, up)| !*up && *t >= kill) {
            noticed[usize::from(m.node)].push((t - kill) as f64 / 1000.0);
        }
    }
    for kind in &mut noticed {
        kind.sort_by(f64::total_cmp);
    }
    noticed
}

fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted.get(i).copied()
}

fn p50_p99(sorted: &[f64]) -> String {
    match (quantile(sorted, 0.5), quantile(sorted, 0.99)) {
        (Some(a), Some(b)) => format!("{a:.1} / {b:.1} ms (n={})", sorted.len()),
        _ => "—".into(),
    }
}

impl Table {
    pub fn measure(off: &RunLog, on: &RunLog, quorum: &RunLog, store: &'static str) -> Self {
        let broken = quorum.members.first();
        let fail = quorum.start_us;
        Self {
            off: figures(off),
            on: figures(on),
            store_commands: on.store_commands,
            store,
            quorum_others_opened: quorum
                .members
                .iter()
                .skip(1)
                .filter(|m| opened_at(m, fail).is_some())
                .count(),
            quorum_broken_opened: broken.is_some_and(|m| opened_at(m, fail).is_some()),
            nodes: on.members.iter().filter(|m| m.node).count(),
        }
    }

    pub fn render(&self) -> String {
        let mut s = String::new();
        let n = MEMBERS;
        let _ = writeln!(
            s,
            "\nfleet of {n} member processes ({} Rust, {} Node), K = {PROBES} probes each\n",
            n - self.nodes,
            self.nodes
        );
        self.propagation(&mut s);
        self.outage(&mut s);
        let _ = writeln!(
            s,
            "\nQ = 2, one member's path broken (only its calls fail): the broken member {}, other members opened: {} of {}",
            if self.quorum_broken_opened { "opened locally" } else { "did not open" },
            self.quorum_others_opened,
            n - 1
        );
        s
    }

    /// Fleet mode off beside on: failing calls, probes, propagation, the store's load.
    fn propagation(&self, s: &mut String) {
        let n = MEMBERS;
        let _ = writeln!(
            s,
            "{:<58} {:>22} {:>22}",
            "", "fleet mode off", "fleet mode on"
        );
        let row = |s: &mut String, what: &str, off: String, on: String| {
            let _ = writeln!(s, "{what:<58} {off:>22} {on:>22}");
        };
        let failing = |f: &Figures| {
            f.failing_before_all_open
                .map_or("not all opened".into(), |n| n.to_string())
        };
        row(
            s,
            "failing calls at the upstream before every member was open",
            failing(&self.off),
            failing(&self.on),
        );
        row(
            s,
            &format!(
                "peak concurrent probes at the upstream (≤ {} / ≤ {PROBES})",
                n * usize::from(PROBES)
            ),
            self.off.peak_probes.to_string(),
            self.on.peak_probes.to_string(),
        );
        row(
            s,
            "open propagation p50 / p99",
            "—".into(),
            p50_p99(&self.on.open_delays),
        );
        row(
            s,
            "close propagation p50 / p99",
            "—".into(),
            p50_p99(&self.on.close_delays),
        );
        row(
            s,
            &format!("store commands/s, all {n} members (to the kill)"),
            "—".into(),
            self.store_commands
                .map_or("—".into(), |(commands, seconds)| {
                    format!(
                        "{:.1} ({commands} in {seconds:.1} s)",
                        commands as f64 / seconds
                    )
                }),
        );
    }

    /// The store killed mid-run: who waited, who decided alone, how fast it was noticed
    /// and resynced.
    fn outage(&self, s: &mut String) {
        let n = MEMBERS;
        let _ = writeln!(
            s,
            "\n{} killed mid-run (fleet on), restarted empty 1.4 s later:",
            self.store
        );
        let _ = writeln!(
            s,
            "  calls that waited on the store:      {} of {} (slowest decision {:.2} ms)",
            self.on.waited,
            self.on.calls,
            self.on.slowest_us as f64 / 1000.0
        );
        let _ = writeln!(s, "  members that kept deciding locally:  {} of {n} (each tripped on its own while Redis was down)", self.on.local_members);
        let p50_max = |v: &[f64]| match (quantile(v, 0.5), quantile(v, 1.0)) {
            (Some(a), Some(b)) => format!("p50 {a:.0} / max {b:.0} ms"),
            _ => "—".into(),
        };
        let _ = writeln!(
            s,
            "  time to notice it gone:              Rust {}, Node {}",
            p50_max(&self.on.noticed[0]),
            p50_max(&self.on.noticed[1]),
        );
        let _ = writeln!(
            s,
            "  time to resync after Redis returned: p50 {} / max {}",
            quantile(&self.on.resync, 0.5).map_or("—".into(), |v| format!("{v:.0} ms")),
            quantile(&self.on.resync, 1.0).map_or("—".into(), |v| format!("{v:.0} ms")),
        );
    }

    /// FLEET.md's bounds the run broke, if any.
    pub fn failures(&self) -> Vec<String> {
        let mut f = Vec::new();
        if self.on.peak_probes > i64::from(PROBES) {
            f.push(format!(
                "{} probes at once with fleet mode on",
                self.on.peak_probes
            ));
        }
        if self.on.waited > 0 {
            f.push(format!("{} calls waited on the store", self.on.waited));
        }
        if self.quorum_others_opened > 0 {
            f.push(format!(
                "{} healthy members opened below quorum",
                self.quorum_others_opened
            ));
        }
        if self.on.failing_before_all_open.is_none() {
            f.push("not every member opened with fleet mode on".into());
        }
        if self.on.resync.len() < MEMBERS - self.nodes {
            f.push(format!(
                "only {} members resynced after the restart",
                self.on.resync.len()
            ));
        }
        f
    }
}

const W: f64 = 1000.0;
const LEFT: f64 = 60.0;
const ROW: f64 = 14.0;

fn colour(state: &str) -> &'static str {
    match state {
        "closed" => "#16a34a",
        "open" => "#dc2626",
        "half-open" => "#f59e0b",
        _ => "#a1a1aa",
    }
}

/// One panel per run: a strip per member coloured by its state, the script's marks as
/// lines, and the upstream's failing calls as ticks under the strips.
pub fn svg(runs: &[&RunLog]) -> String {
    let panel = 40.0 + ROW * MEMBERS as f64 + 30.0;
    let height = panel * runs.len() as f64 + 20.0;
    let mut s = format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{W}' height='{height}' font-family='sans-serif' font-size='11'>\n<rect width='100%' height='100%' fill='white'/>\n"
    );
    let span_ms = runs.iter().map(|r| r.marks.end).max().unwrap_or(1) as f64;
    let x = |run: &RunLog, us: u64| {
        LEFT + (us.saturating_sub(run.start_us) as f64 / 1000.0) / span_ms * (W - LEFT - 20.0)
    };
    for (p, run) in runs.iter().enumerate() {
        let top = 20.0 + panel * p as f64;
        let _ = writeln!(
            s,
            "<text x='{LEFT}' y='{}' font-weight='bold'>fleet mode {}</text>",
            top + 12.0,
            run.title
        );
        let end = run.start_us + run.marks.end * 1000;
        for (i, m) in run.members.iter().enumerate() {
            let y = top + 20.0 + ROW * i as f64;
            let _ = writeln!(s, "<text x='4' y='{}'>{}</text>", y + 10.0, m.label);
            let mut state = "closed".to_string();
            let mut from = run.start_us;
            let mut segments: Vec<(u64, u64, String)> = Vec::new();
            for t in m.transitions.iter().filter(|t| t.0 >= run.start_us) {
                segments.push((from, t.0, state.clone()));
                state = t.2.clone();
                from = t.0;
            }
            segments.push((from, end, state));
            for (a, b, st) in segments {
                let (xa, xb) = (x(run, a), x(run, b.min(end)));
                let _ = writeln!(
                    s,
                    "<rect x='{xa:.1}' y='{y:.1}' width='{:.1}' height='{:.1}' fill='{}'/>",
                    (xb - xa).max(0.5),
                    ROW - 3.0,
                    colour(&st)
                );
            }
        }
        let ticks_y = top + 22.0 + ROW * MEMBERS as f64;
        for seen in run.seen.iter().filter(|s| s.status == 503) {
            let _ = writeln!(
                s,
                "<rect x='{:.1}' y='{ticks_y:.1}' width='0.6' height='6' fill='#7f1d1d'/>",
                x(run, seen.at_us)
            );
        }
        let marks = [
            (run.marks.fail, "fails"),
            (run.marks.cold, "back (cold)"),
            (run.marks.kill, "redis killed"),
            (run.marks.fail_again, "fails"),
            (run.marks.restart, "redis back"),
            (run.marks.healthy_again, "healthy"),
        ];
        for (ms, what) in marks.iter().filter(|(ms, _)| *ms < run.marks.end) {
            let mx = x(run, run.start_us + ms * 1000);
            let _ = writeln!(
                s,
                "<line x1='{mx:.1}' x2='{mx:.1}' y1='{}' y2='{}' stroke='#334155' stroke-dasharray='3,3'/><text x='{:.1}' y='{}' fill='#334155'>{what}</text>",
                top + 16.0,
                ticks_y + 8.0,
                mx + 2.0,
                top + 12.0
            );
        }
    }
    let _ = writeln!(
        s,
        "<text x='{LEFT}' y='{}' fill='#52525b'>green closed, red open, amber half-open; dark ticks: 503s the upstream served</text>",
        height - 4.0
    );
    s.push_str("</svg>\n");
    s
}
