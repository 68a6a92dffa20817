//! What the benchmarks share: one timing loop for every workload and the peers built
//! with matching settings (`benches/core.rs`: the bare core; `benches/native.rs`: the
//! thread-safe breaker, threads and the tower layer). `examples/hot_path.rs` is the loop
//! profiled under perf and callgrind; `examples/alternating.rs` times the thread-safe
//! breaker and its peers in alternating rounds.

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::BenchmarkGroup;
use failsafe::{backoff, failure_policy, CircuitBreaker as _};

/// An hour: the peers' open wait, so nothing they do in a run ends a cooldown.
pub const HOUR: Duration = Duration::from_secs(3600);

/// Times `iters` calls of `f` in a plain loop. Every workload, tripgate's and the peers',
/// goes through this same loop, so criterion's per-iteration closure overhead (several
/// ns, as much as the work itself here) stays out of all of them alike.
pub fn timed(iters: u64, mut f: impl FnMut(u64)) -> Duration {
    let start = Instant::now();
    for i in 0..iters {
        f(black_box(i));
    }
    start.elapsed()
}

/// Wall time for `threads` threads doing `iters` calls of `f` each, started together,
/// divided by `threads`: criterion's time per iteration is then the time per call of
/// throughput (per pair, for acquire + record) while the threads share one breaker.
///
/// The workers time themselves: the span is from the first worker's start to the last
/// one's end. (Timed from the spawning thread, a start read after the barrier can come
/// late: with as many workers as cores, the spawning thread waits for a core while the
/// workers already run, and the span comes out short.)
pub fn threaded<T: Send + Sync + 'static>(
    shared: &Arc<T>,
    threads: u32,
    iters: u64,
    f: fn(&T),
) -> Duration {
    let barrier = Arc::new(Barrier::new(threads as usize));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (shared, barrier) = (Arc::clone(shared), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                let start = Instant::now();
                for _ in 0..iters {
                    f(&shared);
                }
                (start, Instant::now())
            })
        })
        .collect();
    let spans: Vec<(Instant, Instant)> = handles
        .into_iter()
        .map(|handle| handle.join().expect("bench thread"))
        .collect();
    let first = spans.iter().map(|&(start, _)| start).min();
    let last = spans.iter().map(|&(_, end)| end).max();
    match (first, last) {
        (Some(first), Some(last)) => last.duration_since(first) / threads,
        _ => Duration::ZERO,
    }
}

/// failsafe with the spec's default threshold: 5 consecutive failures open it for an hour.
pub fn failsafe_breaker() -> impl failsafe::CircuitBreaker + Send + Sync + 'static {
    failsafe::Config::new()
        .failure_policy(failure_policy::consecutive_failures(
            5,
            backoff::constant(HOUR),
        ))
        .build()
}

/// recloser over the last 5 calls at a 50 % error rate, open for an hour.
pub fn recloser_breaker() -> recloser::Recloser {
    recloser::Recloser::custom()
        .error_rate(0.5)
        .closed_len(5)
        .half_open_len(1)
        .open_wait(HOUR)
        .build()
}

/// Benches both peers rejecting while open (tripped by their own rules) in group `g`.
pub fn peers_rejecting(g: &mut BenchmarkGroup<'_, WallTime>) {
    let f = failsafe_breaker();
    for _ in 0..5 {
        let _ = f.call(err);
    }
    assert!(!f.is_call_permitted());
    g.bench_function("failsafe", |bench| {
        bench.iter_custom(|iters| timed(iters, |_| drop(black_box(f.call(ok)))))
    });
    let r = recloser_breaker();
    for _ in 0..6 {
        let _ = r.call(err);
    }
    assert!(matches!(r.call(ok), Err(recloser::Error::Rejected)));
    g.bench_function("recloser", |bench| {
        bench.iter_custom(|iters| timed(iters, |_| drop(black_box(r.call(ok)))))
    });
}

/// The thread-safe breaker with the spec's defaults and its own clock.
pub fn tripgate() -> tripgate::Breaker {
    tripgate::Breaker::new(tripgate::Config::default()).expect("the defaults are valid")
}

/// One acquire + record success on tripgate's shared breaker, its verdict consumed as a
/// caller reads it.
pub fn tripgate_pair(b: &tripgate::Breaker) {
    if let Ok(permit) = b.acquire() {
        black_box(permit.record(tripgate::Outcome::Success));
    }
}

/// One successful call through failsafe.
pub fn failsafe_pair(f: &(impl failsafe::CircuitBreaker + Send + Sync)) {
    drop(black_box(f.call(ok)));
}

/// One successful call through recloser.
pub fn recloser_pair(r: &recloser::Recloser) {
    drop(black_box(r.call(ok)));
}

/// A call that succeeds, opaque to the optimiser. (`()` errors: the peers' `call` takes
/// any `Result`, and the unit keeps their result as small as it can be.)
#[allow(clippy::result_unit_err)]
pub fn ok() -> Result<(), ()> {
    black_box(Ok(()))
}

/// A call that fails, opaque to the optimiser.
#[allow(clippy::result_unit_err)]
pub fn err() -> Result<(), ()> {
    black_box(Err(()))
}
