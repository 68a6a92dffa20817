//! The component's call path in wasmtime, in one run: the bare generated bindings (a
//! bare store, a constant `now`: the floor), beside the host library (`tripgate-wasmtime`:
//! a lock, a clock, permits that release themselves), for both shapes of the WIT (the
//! resource functions and the typed keyed hot path); then threads on one breaker, beside
//! a `Mutex` around the native core with the same clock.
//!
//! Run: `cargo bench -p tripgate-wasmtime-bench --bench component`. With
//! `TRIPGATE_COMPONENT_V020` naming a build of `tripgate:breaker@0.2.0` (`compare-0.2.sh`
//! makes one and runs this), the 0.2.0 scalar pair, whose results are bit fields, runs
//! beside the typed keyed pair.

use std::sync::{Arc, Barrier, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use tripgate_host::{Clock, CoarseClock};
use tripgate_wasmtime::wit::Outcome;
use tripgate_wasmtime::{Breaker, Config, Runtime};
use tripgate_wasmtime_bench::{keyed_pair, Bare, ScalarV020};
use wasmtime::Engine;

/// The one compilation of the component that the bare bindings (default engine) and the
/// library both run: a comparison of the two is then not also one of where two
/// compilations of the same code landed in memory.
fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| Runtime::new().expect("compile the component"))
}

fn library_pair(breaker: &Breaker) {
    if let Ok(permit) = breaker.acquire().unwrap().decision {
        black_box(permit.record(Outcome::Success).unwrap());
    }
}

fn library_raw_pair(breaker: &Breaker) {
    if let Ok(permit) = breaker.acquire_raw().unwrap().decision {
        black_box(breaker.record_raw(permit, Outcome::Success).unwrap());
    }
}

/// The native core behind a `Mutex`, reading the same clock as the library: what the
/// library's thread scaling is compared with.
struct Locked {
    core: Mutex<tripgate_core::Breaker>,
    clock: CoarseClock,
}

fn locked_pair(locked: &Locked) {
    let now = locked.clock.now();
    let permit = locked.core.lock().unwrap().acquire(now).decision;
    if let Ok(permit) = permit {
        let now = locked.clock.now();
        let mut core = locked.core.lock().unwrap();
        black_box(core.record(permit, tripgate_core::Outcome::Success, now));
    }
}

/// Wall time for `iters` rounds in which each of `threads` threads does one pair on the
/// shared `target`: criterion's time per iteration is then the time a round takes.
fn threaded<T: Send + Sync + 'static>(
    target: &Arc<T>,
    threads: usize,
    iters: u64,
    op: fn(&T),
) -> Duration {
    let barrier = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let target = Arc::clone(target);
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                barrier.wait();
                for _ in 0..iters {
                    op(&target);
                }
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    for handle in handles {
        handle.join().unwrap();
    }
    start.elapsed()
}

fn bare(c: &mut Criterion) {
    let mut group = c.benchmark_group("bare bindings");
    let mut tuned = wasmtime::Config::new();
    tuned
        .wasm_backtrace_max_frames(None)
        .native_unwind_info(false);
    for (engine_name, engine) in [
        ("default engine", None),
        (
            "no backtraces, no unwind info",
            Some(Engine::new(&tuned).unwrap()),
        ),
    ] {
        let mut bare = match &engine {
            None => Bare::sharing(runtime()),
            Some(engine) => Bare::new(engine),
        };
        let me = bare.me;
        group.bench_function(BenchmarkId::new("state()", engine_name), |b| {
            b.iter(|| {
                let api = bare.tripgate.tripgate_breaker_circuit_breaker().breaker();
                black_box(api.call_state(&mut bare.store, me, 1).unwrap())
            })
        });
        if engine_name != "default engine" {
            continue;
        }
        group.bench_function("release() (returns a list: post-return)", |b| {
            b.iter(|| {
                let api = bare.tripgate.tripgate_breaker_circuit_breaker().breaker();
                black_box(api.call_release(&mut bare.store, me, 1).unwrap())
            })
        });
        group.bench_function("keyed ticket pair (typed records)", |b| {
            b.iter(|| black_box(keyed_pair(&mut bare, 1)))
        });
        if let Some(mut scalar) = ScalarV020::from_env(runtime().engine()) {
            group.bench_function("0.2.0 handle pair (s64 / s32 bit fields)", |b| {
                b.iter(|| black_box(scalar.pair(1)))
            });
        }
        group.bench_function("permit resource pair (acquire, record-outcome)", |b| {
            b.iter(|| {
                let api = bare.tripgate.tripgate_breaker_circuit_breaker().breaker();
                let permit = api.call_acquire(&mut bare.store, me, 1).unwrap().decision;
                let permit = permit.unwrap();
                black_box(api.call_record_outcome(
                    &mut bare.store,
                    me,
                    permit,
                    Outcome::Success,
                    1,
                ))
                .unwrap()
                .unwrap();
            })
        });
    }
    group.finish();
}

fn library(c: &mut Criterion) {
    let runtime = runtime();
    let config = Config::default();
    let breaker = runtime.breaker(&config).unwrap();
    let mut group = c.benchmark_group("host library");
    group.bench_function("state()", |b| {
        b.iter(|| black_box(breaker.state().unwrap()))
    });
    group.bench_function("raw permit pair", |b| b.iter(|| library_raw_pair(&breaker)));
    group.bench_function("permit pair (RAII)", |b| b.iter(|| library_pair(&breaker)));
    let isolated = runtime.breaker(&config).unwrap();
    isolated.isolate().unwrap();
    group.bench_function("rejection (isolated)", |b| {
        b.iter(|| black_box(isolated.acquire().unwrap().decision.is_err()))
    });
    group.finish();

    let mut group = c.benchmark_group("threads on one breaker");
    let shared = Arc::new(breaker);
    let locked = Arc::new(Locked {
        core: Mutex::new(tripgate_core::Breaker::new(config, 0).unwrap()),
        clock: CoarseClock::new(),
    });
    for threads in [1, 2, 8] {
        group.bench_function(BenchmarkId::new("library, raw permit", threads), |b| {
            b.iter_custom(|iters| threaded(&shared, threads, iters, library_raw_pair))
        });
        group.bench_function(BenchmarkId::new("library, permit (RAII)", threads), |b| {
            b.iter_custom(|iters| threaded(&shared, threads, iters, library_pair))
        });
        group.bench_function(BenchmarkId::new("Mutex<native core>", threads), |b| {
            b.iter_custom(|iters| threaded(&locked, threads, iters, locked_pair))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = bare, library
}
criterion_main!(benches);
