//! The component bench's ratios, measured so that a busy machine cannot skew them:
//! `cargo run --release -p tripgate-wasmtime-bench --example interleaved [rounds [batch]]`.
//!
//! Criterion measures each path for seconds, one after another, so a ratio of two of its
//! figures also carries whatever the machine did between them. Here every round times
//! each path for a batch of 100,000, back to back (in alternating order), and each ratio
//! is taken within a round; the report is the median and range of the per-round ratios: `state()`, the bare handle and
//! flat-resource pairs against it, and the host library against the bare pair of the same
//! permit kind. One more path splits the library's share: the bare handle pair with what
//! thread safety and a clock cost anyway (the store behind the core's `Lock`, a
//! `CoarseClock` read through `Arc<dyn Clock>` per call, as the library has them).

use std::hint::black_box;
use std::time::Instant;

use std::sync::Arc;

use tripgate_core::{Clock, CoarseClock, Lock};
use tripgate_wasmtime::wit::{Guest, Outcome};
use tripgate_wasmtime::{Breaker, Config, Runtime};
use tripgate_wasmtime_bench::Bare;
use wasmtime::Store;

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(31);
    let batch: u32 = std::env::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);

    // One compilation of the component for every path: the same machine code throughout.
    let runtime = Runtime::new().unwrap();
    let Bare {
        mut store,
        tripgate,
        me,
        key,
    } = Bare::sharing(&runtime);
    let hot = tripgate.tripgate_breaker_circuit_breaker();
    let api = hot.breaker();
    let breaker: Breaker = runtime.breaker(&Config::default()).unwrap();
    let locked = Lock::new(Bare::sharing(&runtime));
    let clock: Arc<dyn Clock + Send + Sync> = Arc::new(CoarseClock::new());

    // ns per call or pair for one batch.
    let mut time = |path: usize| -> f64 {
        let start = Instant::now();
        for _ in 0..batch {
            match path {
                0 => drop(black_box(api.call_state(&mut store, me, 1).unwrap())),
                1 => {
                    let handle = hot.call_acquire_handle(&mut store, key, 1).unwrap();
                    let handle = u32::try_from(handle).unwrap();
                    black_box(
                        hot.call_record_handle(&mut store, key, handle, Outcome::Success, 1)
                            .unwrap(),
                    );
                }
                2 => {
                    let acquired = hot.call_acquire_flat(&mut store, key, 1).unwrap();
                    let permit = acquired.unwrap().decision.unwrap();
                    black_box(
                        hot.call_record_flat(&mut store, key, permit, Outcome::Success, 1)
                            .unwrap(),
                    );
                }
                5 => {
                    let handle = locked_call(&locked, &*clock, |hot, store, key, now| {
                        hot.call_acquire_handle(store, key, now).unwrap()
                    });
                    let handle = u32::try_from(handle).unwrap();
                    black_box(locked_call(&locked, &*clock, |hot, store, key, now| {
                        hot.call_record_handle(store, key, handle, Outcome::Success, now)
                            .unwrap()
                    }));
                }
                3 => {
                    let permit = breaker.acquire_raw().unwrap().decision.unwrap();
                    black_box(breaker.record_raw(permit, Outcome::Success).unwrap());
                }
                4 => {
                    let permit = breaker.acquire().unwrap().decision.unwrap();
                    black_box(permit.record(Outcome::Success).unwrap());
                }
                _ => unreachable!(),
            }
        }
        start.elapsed().as_nanos() as f64 / f64::from(batch)
    };

    const PATHS: [&str; 6] = [
        "bare state()",
        "bare handle pair",
        "bare flat resource pair",
        "library raw pair",
        "library resource pair",
        "bare handle pair, locked",
    ];
    for path in 0..PATHS.len() {
        time(path); // warm up
    }
    let mut ns: Vec<[f64; PATHS.len()]> = Vec::with_capacity(rounds);
    for r in 0..rounds {
        let mut round = [0.0; PATHS.len()];
        // Forward in even rounds, backward in odd ones: no path always follows another.
        let order: Vec<usize> = if r % 2 == 0 {
            (0..PATHS.len()).collect()
        } else {
            (0..PATHS.len()).rev().collect()
        };
        for path in order {
            round[path] = time(path);
        }
        ns.push(round);
    }

    println!("{rounds} interleaved rounds of {batch} calls or pairs per path: median (range)");
    for (path, name) in PATHS.iter().enumerate() {
        let (median, low, high) = spread(ns.iter().map(|r| r[path]).collect());
        println!("  {name:26} {median:7.1} ns  ({low:.1}-{high:.1})");
    }
    println!("ratios within each round: median (range)");
    for (name, over, under) in [
        ("bare handle pair / state()", 1, 0),
        ("bare flat resource pair / state()", 2, 0),
        ("library raw / bare handle pair", 3, 1),
        ("library resource / bare flat resource", 4, 2),
        ("locked handle pair / bare handle pair", 5, 1),
        ("library raw / locked handle pair", 3, 5),
    ] {
        let (median, low, high) = spread(ns.iter().map(|r| r[over] / r[under]).collect());
        println!("  {name:38} {median:5.3}  ({low:.3}-{high:.3})");
    }
}

/// One bare keyed call as a thread-safe host makes it: the clock read, then the call
/// with the store behind the lock.
fn locked_call<T>(
    locked: &Lock<Bare>,
    clock: &dyn Clock,
    call: impl FnOnce(&Guest, &mut Store<()>, u32, u64) -> T,
) -> T {
    let now = clock.now();
    let mut bare = locked.lock();
    let Bare {
        store,
        tripgate,
        key,
        ..
    } = &mut *bare;
    call(
        tripgate.tripgate_breaker_circuit_breaker(),
        store,
        *key,
        now,
    )
}

fn spread(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    (
        values[values.len() / 2],
        values[0],
        values[values.len() - 1],
    )
}
