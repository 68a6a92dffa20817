//! The caller: a thread-per-request HTTP service, as a WSGI or servlet server is. A fixed
//! pool of worker threads takes connections from a bounded waiting line; when the line is
//! full the acceptor answers 503 at once. Two routes:
//!
//! * `GET /upstream` calls the upstream with a per-call timeout, through tripgate (the
//!   component, via the host library) or through the timeout alone, and answers with a
//!   fallback value when the call is rejected or fails;
//! * `GET /local` does local work that needs nothing from the upstream.

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tripgate_wasmtime::{Breaker, Classify, Reason, State, Status, Transition};

use crate::http;
use crate::retrying::{Answer, Retrying};
use crate::scenario::Timeline;

#[derive(Clone, Debug)]
pub struct CallerConfig {
    pub pool: u32,
    pub queue: u32,
    pub timeout: Duration,
    pub local_work: Duration,
    pub upstream: SocketAddr,
    /// Retries after the first attempt (`--retries`); 0: none.
    pub retries: u8,
}

/// A breaker transition as the caller saw it.
#[derive(Clone, Debug)]
pub struct TransitionEvent {
    /// Seconds since the scenario's start.
    pub at: f64,
    pub from: State,
    pub to: State,
    pub reason: Reason,
    /// The phase playing when it happened.
    pub phase: usize,
    /// The phase of the upstream answer whose outcome caused it (the answer's `x-phase`),
    /// or, for a call that got no answer and for admissions, the phase it was sent in.
    pub cause: usize,
}

/// What the caller counts per phase (by the time the event happened).
#[derive(Default, Debug)]
pub struct CallerPhase {
    pub peak_busy: AtomicU32,
    pub peak_waiting: AtomicU32,
    /// Connections answered 503 because the waiting line was full.
    pub shed: AtomicU64,
    /// Calls sent to the upstream, and of those, probes.
    pub sent: AtomicU64,
    pub probes_sent: AtomicU64,
    /// Calls the breaker turned away.
    pub rejected: AtomicU64,
    /// 404 answers the breaker recorded (as successes: the upstream is alive).
    pub recorded_404: AtomicU64,
    /// 404 answers recorded while the breaker was closed when the call was admitted.
    pub recorded_404_closed: AtomicU64,
}

struct Line {
    waiting: VecDeque<TcpStream>,
}

pub struct CallerShared {
    timeline: Timeline,
    config: CallerConfig,
    breaker: Option<Breaker>,
    retrying: Option<Retrying>,
    line: Mutex<Line>,
    wake: Condvar,
    busy: AtomicU32,
    waiting: AtomicU32,
    stop: AtomicBool,
    pub phases: Vec<CallerPhase>,
    pub transitions: Mutex<Vec<TransitionEvent>>,
}

impl CallerShared {
    pub fn busy(&self) -> u32 {
        self.busy.load(Ordering::Relaxed)
    }

    pub fn waiting(&self) -> u32 {
        self.waiting.load(Ordering::Relaxed)
    }

    pub fn breaker(&self) -> Option<&Breaker> {
        self.breaker.as_ref()
    }

    fn line(&self) -> MutexGuard<'_, Line> {
        self.line.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn now_phase(&self) -> &CallerPhase {
        &self.phases[self.timeline.phase_now()]
    }

    fn accept(&self, mut stream: TcpStream) {
        let _ = stream.set_nodelay(true);
        let mut line = self.line();
        let busy = self.busy.load(Ordering::SeqCst) as usize;
        // Full when every worker is busy and the waiting line holds `queue` connections.
        if busy + line.waiting.len() >= (self.config.pool + self.config.queue) as usize {
            drop(line);
            self.now_phase().shed.fetch_add(1, Ordering::Relaxed);
            if http::read_request_path(&mut stream, Duration::from_millis(200)).is_ok() {
                let _ = http::respond(&mut stream, 503, "Service Unavailable", &[], "busy\n");
            }
            return;
        }
        line.waiting.push_back(stream);
        let waiting = line.waiting.len() as u32;
        self.waiting.store(waiting, Ordering::Relaxed);
        self.now_phase()
            .peak_waiting
            .fetch_max(waiting, Ordering::Relaxed);
        drop(line);
        self.wake.notify_one();
    }

    fn next(&self) -> Option<TcpStream> {
        let mut line = self.line();
        loop {
            if self.stop.load(Ordering::SeqCst) {
                return None;
            }
            if let Some(stream) = line.waiting.pop_front() {
                self.waiting
                    .store(line.waiting.len() as u32, Ordering::Relaxed);
                let busy = self.busy.fetch_add(1, Ordering::SeqCst) + 1;
                self.now_phase()
                    .peak_busy
                    .fetch_max(busy, Ordering::Relaxed);
                return Some(stream);
            }
            line = self
                .wake
                .wait_timeout(line, Duration::from_millis(100))
                .map(|(guard, _)| guard)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }

    fn work(&self) {
        while let Some(stream) = self.next() {
            let _ = self.serve(stream);
            self.busy.fetch_sub(1, Ordering::SeqCst);
        }
    }

    fn serve(&self, mut stream: TcpStream) -> io::Result<()> {
        let path = http::read_request_path(&mut stream, Duration::from_secs(2))?;
        match path.as_str() {
            "/local" => {
                let digest = local_work(self.config.local_work);
                http::respond(&mut stream, 200, "OK", &[], &format!("{digest:016x}\n"))
            }
            "/upstream" => {
                let (status, source) = self.call_upstream();
                let reason = if status == 404 { "Not Found" } else { "OK" };
                let body = format!("{source}\n");
                http::respond(&mut stream, status, reason, &[("x-source", source)], &body)
            }
            _ => http::respond(&mut stream, 404, "Not Found", &[], "no such route\n"),
        }
    }

    /// The guarded call. Answers the upstream's 200 or 404 as they are; anything else
    /// (a rejection, a timeout, a 5xx, a refused connection) becomes the fallback value.
    fn call_upstream(&self) -> (u16, &'static str) {
        if let Some(retrying) = &self.retrying {
            return self.call_upstream_retrying(retrying);
        }
        let sent_in = self.timeline.phase_now();
        let counters = &self.phases[sent_in];
        let Some(breaker) = &self.breaker else {
            counters.sent.fetch_add(1, Ordering::Relaxed);
            return match http::get(self.config.upstream, "/", &[], self.config.timeout) {
                Ok(reply) if answered(reply.status) => (reply.status, "upstream"),
                _ => (200, "fallback"),
            };
        };
        let Ok(admission) = breaker.acquire() else {
            return (200, "fallback");
        };
        self.log(&admission.transitions, sent_in);
        let permit = match admission.decision {
            Ok(permit) => permit,
            Err(_rejection) => {
                counters.rejected.fetch_add(1, Ordering::Relaxed);
                return (200, "fallback");
            }
        };
        let probe = permit.is_probe();
        let closed = !probe;
        counters.sent.fetch_add(1, Ordering::Relaxed);
        if probe {
            counters.probes_sent.fetch_add(1, Ordering::Relaxed);
        }
        let headers: &[(&str, &str)] = if probe { &[("x-probe", "1")] } else { &[] };
        let result = http::get(self.config.upstream, "/", headers, self.config.timeout);
        let outcome = match &result {
            Ok(reply) => Status(reply.status).outcome(),
            Err(error) => error.outcome(),
        };
        let cause = result
            .as_ref()
            .ok()
            .and_then(|reply| reply.header("x-phase")?.parse().ok())
            .filter(|&phase| phase < self.phases.len())
            .unwrap_or(sent_in);
        if let Ok(recorded) = permit.record(outcome) {
            if matches!(&result, Ok(reply) if reply.status == 404) {
                let at = &self.phases[cause];
                at.recorded_404.fetch_add(1, Ordering::Relaxed);
                if closed {
                    at.recorded_404_closed.fetch_add(1, Ordering::Relaxed);
                }
            }
            self.log(&recorded.transitions, cause);
        }
        match result {
            Ok(reply) if answered(reply.status) => (reply.status, "upstream"),
            _ => (200, "fallback"),
        }
    }

    /// The guarded call with retries (`--retries`): the upstream's good answer, else the
    /// fallback.
    fn call_upstream_retrying(&self, retrying: &Retrying) -> (u16, &'static str) {
        let sent_in = self.timeline.phase_now();
        let counters = &self.phases[sent_in];
        let attempt = || {
            counters.sent.fetch_add(1, Ordering::Relaxed);
            Answer(http::get(
                self.config.upstream,
                "/",
                &[],
                self.config.timeout,
            ))
        };
        let rejected = || {
            counters.rejected.fetch_add(1, Ordering::Relaxed);
        };
        match retrying.call(
            self.breaker.as_ref(),
            self.config.timeout,
            attempt,
            rejected,
        ) {
            Some(Answer(Ok(reply))) if answered(reply.status) => (reply.status, "upstream"),
            _ => (200, "fallback"),
        }
    }

    fn log(&self, transitions: &[Transition], cause: usize) {
        if transitions.is_empty() {
            return;
        }
        let now = Instant::now();
        let at = self.timeline.secs(now);
        let phase = self.timeline.phase_at(now);
        let mut log = self.transitions.lock().unwrap_or_else(|p| p.into_inner());
        log.extend(transitions.iter().map(|t| TransitionEvent {
            at,
            from: t.from,
            to: t.to,
            reason: t.reason,
            phase,
            cause,
        }));
    }
}

/// An answer the caller passes on: a success, or a 4xx the client should see.
fn answered(status: u16) -> bool {
    status < 500 && status != 429
}

/// The unrelated route's work: a local lookup (a sleep, as an I/O wait on a local disk
/// or cache) and a little CPU.
fn local_work(wait: Duration) -> u64 {
    std::thread::sleep(wait);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for i in 0..20_000u64 {
        h = (h ^ std::hint::black_box(i)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The running caller service. [`Caller::stop`] ends it.
pub struct Caller {
    pub addr: SocketAddr,
    pub shared: Arc<CallerShared>,
    threads: Vec<JoinHandle<()>>,
}

impl Caller {
    pub fn start(
        timeline: Timeline,
        config: CallerConfig,
        breaker: Option<Breaker>,
    ) -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").context("binding the caller")?;
        let addr = listener.local_addr()?;
        let retrying = (config.retries > 0)
            .then(|| Retrying::new(config.retries, 0, breaker.is_some()))
            .transpose()?;
        let shared = Arc::new(CallerShared {
            retrying,
            phases: (0..timeline.phases())
                .map(|_| CallerPhase::default())
                .collect(),
            timeline,
            breaker,
            line: Mutex::new(Line {
                waiting: VecDeque::new(),
            }),
            wake: Condvar::new(),
            busy: AtomicU32::new(0),
            waiting: AtomicU32::new(0),
            stop: AtomicBool::new(false),
            transitions: Mutex::new(Vec::new()),
            config,
        });
        if let (Some(_), Some(breaker)) = (&shared.retrying, &shared.breaker) {
            // `call_retrying` tells its transitions to the listener: log them as they come.
            let weak = Arc::downgrade(&shared);
            breaker.on_transition(move |t| {
                if let Some(shared) = weak.upgrade() {
                    shared.log(std::slice::from_ref(t), shared.timeline.phase_now());
                }
            });
        }
        let mut threads = Vec::new();
        for i in 0..shared.config.pool {
            let shared = Arc::clone(&shared);
            threads.push(
                std::thread::Builder::new()
                    .name(format!("caller-worker-{i}"))
                    .stack_size(256 * 1024)
                    .spawn(move || shared.work())
                    .context("starting a caller worker")?,
            );
        }
        let acceptor = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("caller-acceptor".into())
                .spawn(move || {
                    for stream in listener.incoming() {
                        if shared.stop.load(Ordering::SeqCst) {
                            break;
                        }
                        if let Ok(stream) = stream {
                            shared.accept(stream);
                        }
                    }
                })
                .context("starting the caller's acceptor")?
        };
        threads.push(acceptor);
        Ok(Self {
            addr,
            shared,
            threads,
        })
    }

    pub fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.wake.notify_all();
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
        self.shared.line().waiting.clear();
    }
}

impl Drop for Caller {
    fn drop(&mut self) {
        self.stop();
    }
}
