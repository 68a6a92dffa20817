//! What a brownout run shows while it runs: the sampler's readings of the caller, the
//! upstream and the breaker, and the progress line on stderr.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Result;
use tripgate_wasmtime::State;

use crate::caller::CallerShared;
use crate::loadgen::LoadGen;
use crate::options::Options;
use crate::scenario::Timeline;
use crate::stats::{Mode, Tick};
use crate::upstream::UpstreamShared;

/// A thread that reads busy workers, the waiting line, the upstream's concurrency and the
/// breaker's state every few milliseconds.
pub struct Sampler {
    ticks: Arc<Mutex<Vec<Tick>>>,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Sampler {
    pub fn start(
        o: &Options,
        caller: &Arc<CallerShared>,
        upstream: &Arc<UpstreamShared>,
        timeline: &Timeline,
    ) -> Result<Self> {
        let ticks = Arc::new(Mutex::new(Vec::<Tick>::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (sink, stopped) = (Arc::clone(&ticks), Arc::clone(&stop));
        let (caller, upstream, timeline) =
            (Arc::clone(caller), Arc::clone(upstream), timeline.clone());
        let every = o
            .scaled(Duration::from_millis(10))
            .max(Duration::from_millis(4));
        let thread = std::thread::Builder::new()
            .name("sampler".into())
            .spawn(move || {
                let mut due = Instant::now();
                while !stopped.load(Ordering::SeqCst) {
                    let now = Instant::now();
                    let tick = Tick {
                        at: timeline.secs(now),
                        // How late this thread woke: the machine's scheduling delay.
                        late: now.saturating_duration_since(due).as_secs_f64(),
                        busy: caller.busy(),
                        waiting: caller.waiting(),
                        upstream: upstream.in_flight(),
                        probes: upstream.probes_in_flight(),
                        state: caller.breaker().and_then(|b| b.state().ok()),
                    };
                    sink.lock().unwrap_or_else(|p| p.into_inner()).push(tick);
                    due = Instant::now() + every;
                    std::thread::sleep(every);
                }
            })?;
        Ok(Self {
            ticks,
            stop,
            thread,
        })
    }

    /// Stops the thread; its readings.
    pub fn finish(self) -> Vec<Tick> {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.thread.join();
        std::mem::take(&mut *self.ticks.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// What the progress line reads.
pub struct Watched<'a> {
    pub mode: Mode,
    pub timeline: &'a Timeline,
    pub caller: &'a CallerShared,
    pub upstream: &'a UpstreamShared,
    pub load: &'a LoadGen,
}

/// Waits until `end`, printing a progress line now and then (unless `--quiet`): redrawn in
/// place on a terminal, a line a second otherwise.
pub fn progress_until(end: Instant, o: &Options, watched: &Watched<'_>) {
    let tty = std::io::stderr().is_terminal();
    let mut last_line = Instant::now() - Duration::from_secs(10);
    while Instant::now() < end {
        std::thread::sleep(
            Duration::from_millis(100).min(end.saturating_duration_since(Instant::now())),
        );
        let every = if tty {
            Duration::from_millis(200)
        } else {
            Duration::from_secs(1)
        };
        if o.quiet || last_line.elapsed() < every {
            continue;
        }
        last_line = Instant::now();
        let line = progress_line(o, watched);
        let mut err = std::io::stderr().lock();
        if tty {
            let _ = write!(err, "\r{line}\x1b[K");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }
}

fn progress_line(o: &Options, w: &Watched<'_>) -> String {
    let phase = &w.timeline.scenario.phases[w.timeline.phase_now()];
    let state = w
        .caller
        .breaker()
        .and_then(|b| b.state().ok())
        .map_or("none", State::name);
    format!(
        "  {:<13}{:>5.1}/{:.1} s  {:<14} busy {:>3}/{}  waiting {:>3}  upstream in flight {:>3} (probes {})  breaker {:<9} in flight {:>4}",
        w.mode.name(),
        w.timeline.secs(Instant::now()).max(0.0),
        w.timeline.scenario.total().as_secs_f64(),
        phase.name,
        w.caller.busy(),
        o.pool,
        w.caller.waiting(),
        w.upstream.in_flight(),
        w.upstream.probes_in_flight(),
        state,
        w.load.outstanding(),
    )
}
