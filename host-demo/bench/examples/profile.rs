//! A loop to profile (`perf record -g target/release/examples/profile raw 5000000`):
//! acquire + record through the library, with a raw permit (`raw`) or a permit resource
//! (`resource`), or the bare bindings' raw pair with listing (`bare-listing`) or flat
//! (`bare-flat`) results, or a bare `state()` (`bare-state`). Under
//! `valgrind --tool=callgrind` the instruction counts compare paths on a busy machine.

use std::hint::black_box;

use tripgate_wasmtime::{Config, Outcome, Runtime};

fn main() {
    let mut args = std::env::args().skip(1);
    let workload = args.next().unwrap_or_else(|| "raw".into());
    let n: u64 = args
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000_000);
    let runtime = Runtime::new().unwrap();
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
            use tripgate_wasmtime::bindings::Tripgate;
            use wasmtime::component::{Component, Linker};
            let engine = wasmtime::Engine::default();
            let component = Component::new(&engine, tripgate_wasmtime::COMPONENT).unwrap();
            let mut store = wasmtime::Store::new(&engine, ());
            let tripgate =
                Tripgate::instantiate(&mut store, &component, &Linker::new(&engine)).unwrap();
            let api = tripgate.tripgate_breaker_circuit_breaker().breaker();
            let config = tripgate_wasmtime::wit::Config::default();
            let me = api.call_create(&mut store, &config, 0).unwrap().unwrap();
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
                        let p = api
                            .call_acquire_raw_flat(&mut store, me, 1)
                            .unwrap()
                            .decision
                            .unwrap();
                        black_box(
                            api.call_record_raw_flat(&mut store, me, p, Outcome::Success, 1)
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
