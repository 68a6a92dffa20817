//! A loop to profile (`perf record -g target/release/examples/profile raw 5000000`):
//! acquire + record through the library, with a raw permit (`raw`) or an RAII permit
//! (`permit`), or on the bare bindings: the typed keyed pair (`bare-keyed`), the permit
//! resource pair (`bare-resource`), a `state()` (`bare-state`), the 0.2.0 scalar pair
//! (`bare-scalar-v020`, with `TRIPGATE_COMPONENT_V020` naming a build of that version), or
//! the keyed pair with the store behind a `Mutex` and a `CoarseClock` read per call
//! (`bare-keyed-locked`: what thread safety and a clock alone add to the bare bindings),
//! or what an instance per request starts and ends with: an `export-state`, a breaker
//! brought back from it, and its drop, by one `restore` call (`bare-restore`) or by
//! `create`, `import-state` and `key` (`bare-create-import`).
//! Under `valgrind --tool=callgrind` the instruction counts compare paths on a busy
//! machine; `CLOCK=fixed` gives the library a clock that stands at 1 ns, as the bare paths
//! pass `now = 1`, so that both do the same work in the guest (a moving clock turns the
//! window's buckets, more often under valgrind's slowdown).

use std::hint::black_box;
use std::sync::Mutex;

use tripgate_host::{Clock, CoarseClock, FakeClock};
use tripgate_wasmtime::wit;
use tripgate_wasmtime::{Config, Outcome, Runtime};
use tripgate_wasmtime_bench::{admitted, keyed_pair, Bare, ScalarV020};
use wasmtime::component::ResourceAny;
use wasmtime::Store;

fn main() {
    let mut args = std::env::args().skip(1);
    let workload = args.next().unwrap_or_else(|| "raw".into());
    let n: u64 = args
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000_000);
    let mut runtime = Runtime::new().unwrap();
    if std::env::var("CLOCK").is_ok_and(|clock| clock == "fixed") {
        runtime = runtime.with_clock(std::sync::Arc::new(FakeClock::new(1)));
    }
    let breaker = runtime.breaker(&Config::default()).unwrap();
    match workload.as_str() {
        "raw" => {
            for _ in 0..n {
                let permit = breaker.acquire_raw().unwrap().decision.unwrap();
                black_box(breaker.record_raw(permit, Outcome::Success).unwrap());
            }
        }
        "permit" => {
            for _ in 0..n {
                let permit = breaker.acquire().unwrap().decision.unwrap();
                black_box(permit.record(Outcome::Success).unwrap());
            }
        }
        "bare-scalar-v020" => {
            let mut scalar = ScalarV020::from_env(&engine())
                .expect("TRIPGATE_COMPONENT_V020 names a 0.2.0 component");
            for _ in 0..n {
                black_box(scalar.pair(1));
            }
        }
        "bare-keyed-locked" => keyed_locked(Bare::new(&engine()), n),
        bare => bare_calls(Bare::new(&engine()), bare, n),
    }
}

/// The engine of the bare paths. KNOBS=backtraces,unwind,lazy,signals turns those engine
/// settings off, one by one, to compare their call costs; `perfmap` writes
/// /tmp/perf-PID.map, which names the guest's functions in a profile
/// (`wasm[0]::function[N]`).
fn engine() -> wasmtime::Engine {
    let mut config = wasmtime::Config::new();
    for knob in std::env::var("KNOBS").unwrap_or_default().split(',') {
        match knob {
            "backtraces" => drop(config.wasm_backtrace_max_frames(None)),
            "unwind" => drop(config.native_unwind_info(false)),
            "lazy" => drop(config.table_lazy_init(false)),
            "signals" => drop(config.signals_based_traps(false)),
            "perfmap" => drop(config.profiler(wasmtime::ProfilingStrategy::PerfMap)),
            _ => {}
        }
    }
    wasmtime::Engine::new(&config).unwrap()
}

/// The keyed pair with the store behind a `Mutex` and a `CoarseClock` read per call.
fn keyed_locked(bare: Bare, n: u64) {
    let clock = CoarseClock::new();
    let locked = Mutex::new(bare);
    for _ in 0..n {
        let admission = locked_call(&locked, clock.now(), |hot, store, key, now| {
            hot.call_acquire_keyed(store, key, now).unwrap()
        });
        let ticket = admitted(admission).ticket;
        black_box(locked_call(&locked, clock.now(), |hot, store, key, now| {
            hot.call_record_keyed(store, key, ticket, Outcome::Success, now)
                .unwrap()
        }))
        .ok();
    }
}

/// One keyed call at `now` with the store behind the lock.
fn locked_call<T>(
    locked: &Mutex<Bare>,
    now: u64,
    call: impl FnOnce(&wit::Guest, &mut Store<()>, u32, u64) -> T,
) -> T {
    let mut b = locked.lock().unwrap();
    let Bare {
        store,
        tripgate,
        key,
        ..
    } = &mut *b;
    call(
        tripgate.tripgate_breaker_circuit_breaker(),
        store,
        *key,
        now,
    )
}

/// `n` of the bare bindings' `workload`.
fn bare_calls(mut bare: Bare, workload: &str, n: u64) {
    let me = bare.me;
    for _ in 0..n {
        let Bare {
            store, tripgate, ..
        } = &mut bare;
        let api = tripgate.tripgate_breaker_circuit_breaker().breaker();
        match workload {
            "bare-keyed" => drop(black_box(keyed_pair(&mut bare, 1))),
            "bare-resource" => {
                let p = api.call_acquire(&mut *store, me, 1).unwrap().decision;
                black_box(
                    api.call_record_outcome(store, me, p.unwrap(), Outcome::Success, 1)
                        .unwrap(),
                )
                .ok();
            }
            "bare-state" => {
                black_box(api.call_state(store, me, 1).unwrap());
            }
            "bare-restore" | "bare-create-import" => {
                let hot = tripgate.tripgate_breaker_circuit_breaker();
                restore(hot, store, me, workload == "bare-restore");
            }
            other => panic!("unknown workload {other}"),
        }
    }
}

/// What an instance per request starts and ends with: an `export-state`, a breaker
/// brought back from it (by one `restore` call, or by `create`, `import-state` and `key`),
/// and its drop.
fn restore(hot: &wit::Guest, store: &mut Store<()>, me: ResourceAny, by_restore: bool) {
    let api = hot.breaker();
    let config = wit::Config::default();
    let bytes = api.call_export_state(&mut *store, me, 1).unwrap().unwrap();
    let breaker = if by_restore {
        let snapshot = wit::Snapshot { bytes, elapsed: 0 };
        let restored = api
            .call_restore(&mut *store, &config, Some(&snapshot), 1)
            .unwrap()
            .unwrap();
        black_box(restored.key);
        restored.breaker
    } else {
        let breaker = api.call_create(&mut *store, &config, 1).unwrap().unwrap();
        api.call_import_state(&mut *store, breaker, &bytes, 0, 1)
            .unwrap()
            .unwrap();
        black_box(api.call_key(&mut *store, breaker).unwrap());
        breaker
    };
    breaker.resource_drop(&mut *store).unwrap();
}
