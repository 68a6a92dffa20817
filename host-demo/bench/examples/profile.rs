//! A loop to profile (`perf record -g target/release/examples/profile raw 5000000`):
//! acquire + record through the library, with a raw permit (`raw`) or a permit resource
//! (`resource`), or the bare bindings' raw pair with listing (`bare-listing`) or flat
//! (`bare-flat`: the handle path) results, or a bare `state()` (`bare-state`), or the
//! handle path with the store behind a `Mutex` and a `CoarseClock` read per call
//! (`bare-flat-locked`: what thread safety and a clock alone add to the bare bindings).
//! Under `valgrind --tool=callgrind` the instruction counts compare paths on a busy
//! machine; `CLOCK=fixed` gives the library a clock that stands at 1 ns, as the bare paths
//! pass `now = 1`, so that both do the same work in the guest (a moving clock turns the
//! window's buckets, more often under valgrind's slowdown).

use std::hint::black_box;

use tripgate_wasmtime::{Config, Outcome, Runtime};

fn main() {
    let mut args = std::env::args().skip(1);
    let workload = args.next().unwrap_or_else(|| "raw".into());
    let n: u64 = args
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000_000);
    let mut runtime = Runtime::new().unwrap();
    if std::env::var("CLOCK").is_ok_and(|clock| clock == "fixed") {
        runtime = runtime.with_clock(std::sync::Arc::new(tripgate_core::FakeClock::new(1)));
    }
    let breaker = runtime.breaker(&Config::default()).unwrap();
    match workload.as_str() {
        "raw" => {
            for _ in 0..n {
                let permit = breaker.acquire_raw().unwrap().decision.unwrap();
                black_box(breaker.record_raw(permit, Outcome::Success).unwrap());
            }
        }
        "resource" => {
            for _ in 0..n {
                let permit = breaker.acquire().unwrap().decision.unwrap();
                black_box(permit.record(Outcome::Success).unwrap());
            }
        }
        bare => {
            // KNOBS=backtraces,unwind,lazy,signals turns those engine settings off, one
            // by one, to compare their call costs.
            let mut config = wasmtime::Config::new();
            for knob in std::env::var("KNOBS").unwrap_or_default().split(',') {
                match knob {
                    "backtraces" => drop(config.wasm_backtrace_max_frames(None)),
                    "unwind" => drop(config.native_unwind_info(false)),
                    "lazy" => drop(config.table_lazy_init(false)),
                    "signals" => drop(config.signals_based_traps(false)),
                    _ => {}
                }
            }
            let engine = wasmtime::Engine::new(&config).unwrap();
            let tripgate_wasmtime_bench::Bare {
                mut store,
                tripgate,
                me,
                key,
            } = tripgate_wasmtime_bench::Bare::new(&engine);
            let hot = tripgate.tripgate_breaker_circuit_breaker();
            let api = hot.breaker();
            if bare == "bare-flat-locked" {
                use tripgate_core::Clock;
                let clock = tripgate_core::CoarseClock::new();
                let locked = std::sync::Mutex::new(store);
                for _ in 0..n {
                    let now = clock.now();
                    let h = {
                        let mut st = locked.lock().unwrap();
                        hot.call_acquire_handle(&mut *st, key, now).unwrap()
                    };
                    let h = u32::try_from(h).unwrap();
                    let now = clock.now();
                    let mut st = locked.lock().unwrap();
                    black_box(
                        hot.call_record_handle(&mut *st, key, h, Outcome::Success, now)
                            .unwrap(),
                    );
                }
                return;
            }
            for _ in 0..n {
                match bare {
                    "bare-listing" => {
                        let p = api
                            .call_acquire_raw(&mut store, me, 1)
                            .unwrap()
                            .decision
                            .unwrap();
                        black_box(
                            api.call_record_raw(&mut store, me, p, Outcome::Success, 1)
                                .unwrap(),
                        )
                        .ok();
                    }
                    "bare-flat" => {
                        let h = hot.call_acquire_handle(&mut store, key, 1).unwrap();
                        let h = u32::try_from(h).unwrap();
                        black_box(
                            hot.call_record_handle(&mut store, key, h, Outcome::Success, 1)
                                .unwrap(),
                        );
                    }
                    "bare-resource-flat" => {
                        let p = hot
                            .call_acquire_flat(&mut store, key, 1)
                            .unwrap()
                            .unwrap()
                            .decision
                            .unwrap();
                        black_box(
                            hot.call_record_flat(&mut store, key, p, Outcome::Success, 1)
                                .unwrap(),
                        );
                    }
                    "bare-resource-listing" => {
                        let p = api
                            .call_acquire(&mut store, me, 1)
                            .unwrap()
                            .decision
                            .unwrap();
                        black_box(
                            api.call_record_outcome(&mut store, me, p, Outcome::Success, 1)
                                .unwrap(),
                        )
                        .ok();
                    }
                    "bare-state" => {
                        black_box(api.call_state(&mut store, me, 1).unwrap());
                    }
                    other => panic!("unknown workload {other}"),
                }
            }
        }
    }
}
