//! The same calls into the tripgate component under wasmtime 48.0.8 and 50.0.1, in one
//! process, interleaved round by round so both see the same machine:
//!
//! ```sh
//! cargo build -p tripgate-component --target wasm32-wasip2 --profile component
//! cargo run --release --manifest-path component/bench/wasmtime-versions/Cargo.toml -- \
//!     target/wasm32-wasip2/component/tripgate_component.wasm
//! ```
//!
//! Prints the median and the range over the rounds, in ns per call (or per pair).

use std::hint::black_box;
use std::time::Instant;

mod w48 {
    wasmtime48::component::bindgen!({
        path: "../../../wit",
        world: "tripgate",
        wasmtime_crate: wasmtime48,
    });
}

mod w50 {
    wasmtime50::component::bindgen!({
        path: "../../../wit",
        world: "tripgate",
        wasmtime_crate: wasmtime50,
    });
}

const ROUNDS: usize = 15;
const CALLS: u64 = 200_000;

/// One version's workloads; each returns the ns per operation of one timed round.
macro_rules! workloads {
    ($wasmtime:ident, $bindings:ident, $bytes:expr) => {{
        use $bindings::exports::tripgate::breaker::circuit_breaker as wit;
        use $wasmtime::component::{Component, Linker};
        let engine = $wasmtime::Engine::default();
        let component = Component::new(&engine, $bytes).expect("compile");
        let mut store = $wasmtime::Store::new(&engine, ());
        let tripgate = $bindings::Tripgate::instantiate(&mut store, &component, &Linker::new(&engine))
            .expect("instantiate");
        let config = wit::Config {
            failure_threshold: None, min_calls: None, failure_rate: None, slow_call_rate: None,
            slow_call_duration: None, window: None, buckets: None, window_calls: None,
            cooldown: None, backoff_factor: None, max_cooldown: None, jitter_percent: None,
            jitter_seed: None, max_in_flight: None, half_open_max_probes: None,
            half_open_required_successes: None, half_open_success_rate: None,
            probe_timeout: None, fault_statuses: None, fault_grpc_codes: None, fleet_quorum: None,
        };
        let me = tripgate.tripgate_breaker_circuit_breaker().breaker().call_create(&mut store, &config, 0).unwrap().unwrap();
        let key = tripgate.tripgate_breaker_circuit_breaker().breaker().call_key(&mut store, me).unwrap();
        let mut now = 0u64;
        move |workload: usize| -> f64 {
            let api = tripgate.tripgate_breaker_circuit_breaker();
            let started = Instant::now();
            for _ in 0..CALLS {
                now += 1;
                match workload {
                    0 => {
                        black_box(api.breaker().call_state(&mut store, me, now).unwrap());
                    }
                    1 => {
                        let admission = api.breaker().call_acquire_raw(&mut store, me, now).unwrap();
                        let permit = admission.decision.unwrap();
                        black_box(api.breaker().call_record_raw(&mut store, me, permit, wit::Outcome::Success, now).unwrap().unwrap());
                    }
                    2 => {
                        let admission = api.breaker().call_acquire(&mut store, me, now).unwrap();
                        let permit = admission.decision.unwrap();
                        black_box(api.breaker().call_record_outcome(&mut store, me, permit, wit::Outcome::Success, now).unwrap().unwrap());
                    }
                    3 => {
                        let handle = api.call_acquire_handle(&mut store, key, now).unwrap();
                        black_box(api.call_record_handle(&mut store, key, handle as u32, wit::Outcome::Success, now).unwrap());
                    }
                    _ => {
                        let admission = api.call_acquire_flat(&mut store, key, now).unwrap().unwrap();
                        let permit = admission.decision.unwrap();
                        black_box(api.call_record_flat(&mut store, key, permit, wit::Outcome::Success, now).unwrap());
                    }
                }
            }
            started.elapsed().as_nanos() as f64 / CALLS as f64
        }
    }};
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: wasmtime-versions PATH/tripgate_component.wasm");
    let bytes = std::fs::read(&path).expect("read the component");
    let mut v48 = workloads!(wasmtime48, w48, &bytes);
    let mut v50 = workloads!(wasmtime50, w50, &bytes);
    let names = [
        "state() (one call, scalar result)",
        "raw permit pair, listing",
        "permit resource pair, listing",
        "handle pair (scalar results, keyed)",
        "permit resource pair, flat (keyed)",
    ];
    for (workload, name) in names.iter().enumerate() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            a.push(v48(workload));
            b.push(v50(workload));
        }
        for v in [&mut a, &mut b] {
            v.sort_by(f64::total_cmp);
        }
        let show = |v: &[f64]| format!("{:.0} ns ({:.0}-{:.0})", v[ROUNDS / 2], v[0], v[ROUNDS - 1]);
        println!("{name:36} wasmtime 48: {:24} wasmtime 50: {}", show(&a), show(&b));
    }
}
