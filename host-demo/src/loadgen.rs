//! The open-loop load generator: arrivals at fixed rates (Poisson, from a seed, so both
//! runs send the same requests at the same offsets), each on a thread of its own, sent
//! whether or not earlier ones have been answered, so a stalled service never slows the
//! arrivals (no coordinated omission). Latency counts from the moment the request's thread
//! starts sending; how late that was against the schedule (the generator's own lag on a
//! busy machine) is kept apart.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::http;
use crate::scenario::Timeline;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// `/upstream`: calls the upstream through the guard.
    Upstream,
    /// `/local`: unrelated local work.
    Local,
}

impl Route {
    fn path(self) -> &'static str {
        match self {
            Route::Upstream => "/upstream",
            Route::Local => "/local",
        }
    }
}

/// How one request ended, as the client saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// 200 (for `/upstream`: the upstream's own answer).
    Ok,
    /// `/upstream` answered with the upstream's 404.
    NotFound,
    /// `/upstream` answered 200 with the fallback value.
    Fallback,
    /// The caller's waiting line was full: 503 at once.
    Busy,
    /// No answer within the client's timeout.
    TimedOut,
    /// Anything else (refused, reset, a bad answer).
    Error,
}

impl Ending {
    /// For the client, an error: it got no useful answer.
    pub fn failed(self) -> bool {
        matches!(self, Ending::Busy | Ending::TimedOut | Ending::Error)
    }
}

#[derive(Clone, Debug)]
pub struct Sample {
    pub route: Route,
    /// Phase of the scheduled arrival.
    pub phase: usize,
    /// Scheduled arrival, seconds since the start.
    pub at: f64,
    /// Seconds from the start of the send to the end.
    pub latency: f64,
    /// Seconds from the scheduled arrival to the start of the send.
    pub lag: f64,
    pub ending: Ending,
}

/// Arrival offsets of a Poisson process at `rate` per second over `span`.
pub fn arrivals(rate: f64, span: Duration, seed: u64) -> Vec<Duration> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut at = 0.0f64;
    let mut out = Vec::new();
    loop {
        // Exponential gaps; 1 - u is in (0, 1], so the log is finite.
        at += -(1.0 - rng.f64()).ln() / rate;
        if at >= span.as_secs_f64() {
            return out;
        }
        out.push(Duration::from_secs_f64(at));
    }
}

pub struct LoadGen {
    dispatchers: Vec<JoinHandle<()>>,
    samples: Arc<Mutex<Vec<Sample>>>,
    outstanding: Arc<AtomicUsize>,
    client_timeout: Duration,
}

impl LoadGen {
    pub fn start(
        timeline: &Timeline,
        target: SocketAddr,
        schedules: Vec<(Route, Vec<Duration>)>,
        client_timeout: Duration,
    ) -> std::io::Result<Self> {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let outstanding = Arc::new(AtomicUsize::new(0));
        let mut dispatchers = Vec::new();
        for (route, offsets) in schedules {
            let timeline = timeline.clone();
            let samples = Arc::clone(&samples);
            let outstanding = Arc::clone(&outstanding);
            dispatchers.push(
                std::thread::Builder::new()
                    .name(format!("load-{:?}", route).to_lowercase())
                    .spawn(move || {
                        dispatch(
                            &timeline,
                            target,
                            route,
                            offsets,
                            client_timeout,
                            &samples,
                            &outstanding,
                        )
                    })?,
            );
        }
        Ok(Self {
            dispatchers,
            samples,
            outstanding,
            client_timeout,
        })
    }

    /// Requests sent and not yet ended.
    pub fn outstanding(&self) -> usize {
        self.outstanding.load(Ordering::Relaxed)
    }

    /// Waits for the schedule to end and every request to end (each is bounded by the
    /// client timeout), then returns the samples in arrival order.
    pub fn finish(self) -> Vec<Sample> {
        for dispatcher in self.dispatchers {
            let _ = dispatcher.join();
        }
        let deadline = Instant::now() + self.client_timeout + Duration::from_secs(5);
        while self.outstanding.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut samples =
            std::mem::take(&mut *self.samples.lock().unwrap_or_else(|p| p.into_inner()));
        samples.sort_by(|a, b| a.at.total_cmp(&b.at));
        samples
    }
}

fn dispatch(
    timeline: &Timeline,
    target: SocketAddr,
    route: Route,
    offsets: Vec<Duration>,
    client_timeout: Duration,
    samples: &Arc<Mutex<Vec<Sample>>>,
    outstanding: &Arc<AtomicUsize>,
) {
    for offset in offsets {
        let scheduled = timeline.start + offset;
        let wait = scheduled.saturating_duration_since(Instant::now());
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
        let phase = timeline.scenario.index_at(offset);
        let at = offset.as_secs_f64();
        outstanding.fetch_add(1, Ordering::SeqCst);
        let samples_for_thread = Arc::clone(samples);
        let outstanding_for_thread = Arc::clone(outstanding);
        let spawned = std::thread::Builder::new()
            .stack_size(128 * 1024)
            .spawn(move || {
                let sent = Instant::now();
                let ending = send(target, route, client_timeout);
                let sample = Sample {
                    route,
                    phase,
                    at,
                    latency: sent.elapsed().as_secs_f64(),
                    lag: sent.saturating_duration_since(scheduled).as_secs_f64(),
                    ending,
                };
                samples_for_thread
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(sample);
                outstanding_for_thread.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            outstanding.fetch_sub(1, Ordering::SeqCst);
            samples
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(Sample {
                    route,
                    phase,
                    at,
                    latency: 0.0,
                    lag: 0.0,
                    ending: Ending::Error,
                });
        }
    }
}

fn send(target: SocketAddr, route: Route, client_timeout: Duration) -> Ending {
    match http::get(target, route.path(), &[], client_timeout) {
        Ok(reply) => match (reply.status, reply.header("x-source")) {
            (200, Some("fallback")) => Ending::Fallback,
            (200, _) => Ending::Ok,
            (404, _) if route == Route::Upstream => Ending::NotFound,
            (503, _) => Ending::Busy,
            _ => Ending::Error,
        },
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => Ending::TimedOut,
        Err(_) => Ending::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_replay_from_the_seed_at_about_the_rate() {
        let a = arrivals(100.0, Duration::from_secs(10), 7);
        assert_eq!(a, arrivals(100.0, Duration::from_secs(10), 7));
        assert_ne!(a, arrivals(100.0, Duration::from_secs(10), 8));
        assert!((900..1100).contains(&a.len()), "{}", a.len());
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
    }
}
