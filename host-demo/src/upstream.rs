//! The upstream: a real HTTP server (hyper on a single-threaded tokio runtime) on
//! 127.0.0.1 that plays the script, and counts what it sees in each phase: requests, its
//! own peak concurrency, and how many of those requests were half-open probes (the caller
//! marks them with an `x-probe` header).
//!
//! When a caller gives up and closes its connection, hyper drops the request's handler:
//! the upstream stops working on it, as a server that notices disconnects does.

use std::convert::Infallible;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::Semaphore;

use crate::scenario::{Behaviour, Timeline};

/// How the upstream behaves, at the run's scale.
#[derive(Clone, Debug)]
pub struct UpstreamConfig {
    /// Normal time to answer.
    pub latency: Duration,
    /// How long a request stalls during the hang.
    pub stall: Duration,
    /// Time one cold request takes to fill its part of the cache.
    pub fill: Duration,
    /// Cold requests that can fill at once (the backing store's capacity).
    pub fill_slots: usize,
    /// Fills that warm the cache.
    pub fills_to_warm: u32,
}

#[derive(Default, Debug)]
pub struct PhaseCounters {
    pub received: AtomicU64,
    pub probes: AtomicU64,
    pub peak: AtomicU32,
    pub peak_probes: AtomicU32,
    /// Requests whose caller left before the answer (the handler was dropped).
    pub abandoned: AtomicU64,
}

pub struct UpstreamShared {
    timeline: Timeline,
    config: UpstreamConfig,
    in_flight: AtomicU32,
    probes_in_flight: AtomicU32,
    pub phases: Vec<PhaseCounters>,
    fills: AtomicU32,
    fill_slots: Semaphore,
}

impl UpstreamShared {
    pub fn in_flight(&self) -> u32 {
        self.in_flight.load(Ordering::Relaxed)
    }

    pub fn probes_in_flight(&self) -> u32 {
        self.probes_in_flight.load(Ordering::Relaxed)
    }

    fn enter(&self, phase: usize, probe: bool) -> InFlight<'_> {
        let counters = &self.phases[phase];
        counters.received.fetch_add(1, Ordering::Relaxed);
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        counters.peak.fetch_max(now, Ordering::Relaxed);
        if probe {
            counters.probes.fetch_add(1, Ordering::Relaxed);
            let probes = self.probes_in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            counters.peak_probes.fetch_max(probes, Ordering::Relaxed);
        }
        InFlight {
            shared: self,
            phase,
            probe,
            answered: false,
        }
    }

    /// A cold cache: wait for a fill slot, fill, and count the fill, until the cache is
    /// warm. Requests dropped mid-fill (their caller left) fill nothing.
    async fn cold_start(&self) {
        let warm = || self.fills.load(Ordering::SeqCst) >= self.config.fills_to_warm;
        if !warm() {
            let _slot = self.fill_slots.acquire().await;
            if !warm() {
                tokio::time::sleep(self.config.fill).await;
                self.fills.fetch_add(1, Ordering::SeqCst);
            }
        }
        tokio::time::sleep(self.config.latency).await;
    }

    async fn answer(&self, probe: bool) -> (u16, usize) {
        let phase = self.timeline.phase_now();
        let mut guard = self.enter(phase, probe);
        let status = match self.timeline.scenario.phases[phase].behaviour {
            Behaviour::Healthy => {
                tokio::time::sleep(self.config.latency).await;
                200
            }
            Behaviour::Hang => {
                tokio::time::sleep(self.config.stall).await;
                200
            }
            Behaviour::Unavailable => {
                tokio::time::sleep(self.config.latency).await;
                503
            }
            Behaviour::NotFound => {
                tokio::time::sleep(self.config.latency).await;
                404
            }
            Behaviour::ColdStart => {
                self.cold_start().await;
                200
            }
        };
        guard.answered = true;
        (status, phase)
    }
}

/// One request in the upstream's hands; leaving releases its concurrency.
struct InFlight<'a> {
    shared: &'a UpstreamShared,
    phase: usize,
    probe: bool,
    answered: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.shared.in_flight.fetch_sub(1, Ordering::SeqCst);
        if self.probe {
            self.shared.probes_in_flight.fetch_sub(1, Ordering::SeqCst);
        }
        if !self.answered {
            self.shared.phases[self.phase]
                .abandoned
                .fetch_add(1, Ordering::Relaxed);
        }
    }
}

async fn handle(
    shared: Arc<UpstreamShared>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let probe = request.headers().contains_key("x-probe");
    let (status, phase) = shared.answer(probe).await;
    let body = match status {
        200 => "the upstream's answer\n",
        404 => "not found\n",
        _ => "unavailable\n",
    };
    let response = Response::builder()
        .status(status)
        .header("x-phase", phase.to_string())
        .header("content-type", "text/plain")
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new())));
    Ok(response)
}

/// The running upstream. [`Upstream::stop`] ends it.
pub struct Upstream {
    pub addr: SocketAddr,
    pub shared: Arc<UpstreamShared>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Upstream {
    pub fn start(timeline: Timeline, config: UpstreamConfig) -> Result<Self> {
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").context("binding the upstream")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(UpstreamShared {
            phases: (0..timeline.phases())
                .map(|_| PhaseCounters::default())
                .collect(),
            fill_slots: Semaphore::new(config.fill_slots.max(1)),
            timeline,
            config,
            in_flight: AtomicU32::new(0),
            probes_in_flight: AtomicU32::new(0),
            fills: AtomicU32::new(0),
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the upstream's runtime")?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new().name("upstream".into()).spawn({
            let shared = Arc::clone(&shared);
            let stop = Arc::clone(&stop);
            move || serve(runtime, listener, shared, stop)
        })?;
        Ok(Self {
            addr,
            shared,
            stop,
            thread: Some(thread),
        })
    }

    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop();
    }
}

fn serve(
    runtime: tokio::runtime::Runtime,
    listener: std::net::TcpListener,
    shared: Arc<UpstreamShared>,
    stop: Arc<AtomicBool>,
) {
    runtime.block_on(async move {
        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
            return;
        };
        while !stop.load(Ordering::SeqCst) {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let _ = stream.set_nodelay(true);
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                let service = service_fn(move |request| handle(Arc::clone(&shared), request));
                let _ = http1::Builder::new()
                    .timer(TokioTimer::new())
                    .keep_alive(false)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    // Dropping the runtime drops every connection still open (stalled requests).
    drop(runtime);
}
