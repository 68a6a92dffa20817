//! acquire + record through the component in wasmtime: one thread, and eight threads on
//! one breaker (contended) and on eight breakers (one per upstream). The native core is
//! measured beside it for scale.
//!
//! Run: `cargo build -p tripgate-component --target wasm32-wasip2 --release` then
//! `cargo bench -p host-demo`.

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use tripgate_wasmtime::{Breaker, Config, Outcome, Runtime};

const THREADS: usize = 8;

fn pair(breaker: &Breaker) {
    if let Ok(permit) = breaker.acquire().unwrap().decision {
        black_box(permit.record(Outcome::Success).unwrap());
    }
}

fn raw_pair(breaker: &Breaker) {
    if let Ok(permit) = breaker.acquire_raw().unwrap().decision {
        black_box(breaker.record_raw(permit, Outcome::Success).unwrap());
    }
}

/// Wall time for `iters` rounds in which each of `THREADS` threads does one pair on
/// `breakers[thread % len]`: criterion's time per iteration is then the time a round
/// takes while eight threads share the breaker(s).
fn threaded(breakers: &[Breaker], iters: u64, op: fn(&Breaker)) -> Duration {
    let barrier = Arc::new(Barrier::new(THREADS + 1));
    let handles: Vec<_> = (0..THREADS)
        .map(|i| {
            let breaker = breakers[i % breakers.len()].clone();
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                barrier.wait();
                for _ in 0..iters {
                    op(&breaker);
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

fn bench(c: &mut Criterion) {
    let runtime = Runtime::new().expect("compile the component");
    let config = Config::default();
    let breaker = runtime.breaker(&config).unwrap();

    let mut group = c.benchmark_group("acquire+record");
    group.bench_function("component, permit resource, 1 thread", |b| {
        b.iter(|| pair(&breaker))
    });
    group.bench_function("component, raw permit, 1 thread", |b| {
        b.iter(|| raw_pair(&breaker))
    });
    group.bench_function("component, state only, 1 thread", |b| {
        b.iter(|| black_box(breaker.state().unwrap()))
    });
    // The fail-fast path: an open breaker turning a caller away (one call).
    let open = runtime.breaker(&config).unwrap();
    open.isolate().unwrap();
    group.bench_function("component, rejected while isolated, 1 thread", |b| {
        b.iter(|| black_box(open.acquire().unwrap().decision.is_err()))
    });
    let one = [breaker.clone()];
    group.bench_function("component, permit resource, 8 threads, 1 breaker", |b| {
        b.iter_custom(|iters| threaded(&one, iters, pair))
    });
    group.bench_function("component, raw permit, 8 threads, 1 breaker", |b| {
        b.iter_custom(|iters| threaded(&one, iters, raw_pair))
    });
    let eight: Vec<Breaker> = (0..THREADS)
        .map(|_| runtime.breaker(&config).unwrap())
        .collect();
    group.bench_function("component, permit resource, 8 threads, 8 breakers", |b| {
        b.iter_custom(|iters| threaded(&eight, iters, pair))
    });

    // The floor: the generated bindings on a bare store, no mutex, no clock.
    {
        use tripgate_wasmtime::bindings::Tripgate;
        use wasmtime::component::{Component, Linker};
        let engine = wasmtime::Engine::default();
        let component = Component::new(&engine, tripgate_wasmtime::COMPONENT).unwrap();
        let mut store = wasmtime::Store::new(&engine, ());
        let tripgate =
            Tripgate::instantiate(&mut store, &component, &Linker::new(&engine)).unwrap();
        let api = tripgate.tripgate_breaker_circuit_breaker().breaker();
        let wit_config = tripgate_wasmtime::wit::Config::default();
        let me = api
            .call_create(&mut store, &wit_config, 0)
            .unwrap()
            .unwrap();
        group.bench_function("bare bindings, state only", |b| {
            b.iter(|| black_box(api.call_state(&mut store, me, 1).unwrap()))
        });
        {
            let mut tuned = wasmtime::Config::new();
            tuned
                .wasm_backtrace_max_frames(None)
                .native_unwind_info(false);
            let engine = wasmtime::Engine::new(&tuned).unwrap();
            let component = Component::new(&engine, tripgate_wasmtime::COMPONENT).unwrap();
            let mut store = wasmtime::Store::new(&engine, ());
            let tripgate =
                Tripgate::instantiate(&mut store, &component, &Linker::new(&engine)).unwrap();
            let api = tripgate.tripgate_breaker_circuit_breaker().breaker();
            let me = api
                .call_create(&mut store, &wit_config, 0)
                .unwrap()
                .unwrap();
            group.bench_function("bare bindings, state only, no backtraces", |b| {
                b.iter(|| black_box(api.call_state(&mut store, me, 1).unwrap()))
            });
        }
        group.bench_function(
            "bare bindings, release (returns a list: post-return)",
            |b| b.iter(|| black_box(api.call_release(&mut store, me, 1).unwrap())),
        );
        group.bench_function("bare bindings, metrics (a big flat record)", |b| {
            b.iter(|| black_box(api.call_metrics(&mut store, me, 1).unwrap()))
        });
        group.bench_function("bare bindings, raw permit pair", |b| {
            b.iter(|| {
                let admission = api.call_acquire_raw(&mut store, me, 1).unwrap();
                if let Ok(permit) = admission.decision {
                    black_box(
                        api.call_record_raw(&mut store, me, permit, Outcome::Success, 1)
                            .unwrap(),
                    )
                    .ok();
                }
            })
        });
        group.bench_function("bare bindings, permit resource pair", |b| {
            b.iter(|| {
                let admission = api.call_acquire(&mut store, me, 1).unwrap();
                if let Ok(permit) = admission.decision {
                    black_box(
                        api.call_record_outcome(&mut store, me, permit, Outcome::Success, 1)
                            .unwrap(),
                    )
                    .ok();
                }
            })
        });
    }

    let mut native = tripgate_core::Breaker::new(config, 0).unwrap();
    let mut now = 0u64;
    group.bench_function("native core, 1 thread", |b| {
        b.iter(|| {
            now += 1;
            if let Ok(permit) = native.acquire(now).decision {
                black_box(native.record(permit, tripgate_core::Outcome::Success, now));
            }
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
