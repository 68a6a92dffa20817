//! The component bench's ratios, measured so that a busy machine cannot skew them:
//! `cargo run --release -p tripgate-wasmtime-bench --example interleaved [rounds [batch]]`.
//!
//! Criterion measures each path for seconds, one after another, so a ratio of two of its
//! figures also carries whatever the machine did between them. Here every round times
//! each path for a batch of 100,000, back to back (in alternating order), and each ratio
//! is taken within a round; the report is the median and range of the per-round ratios:
//! the bare keyed pair and the bare permit-resource pair against `state()`, and the host
//! library against the bare keyed pair. One more path splits the library's share: the
//! bare keyed pair with what thread safety and a clock cost anyway (the store behind the
//! host's `Lock`, a `CoarseClock` read through `Arc<dyn Clock>` per call, as the library
//! has them). With `TRIPGATE_COMPONENT_V020` set (see `compare-0.2.sh`), the 0.2.0
//! scalar pair joins the rounds, and the typed keyed pair is given against it.

use std::hint::black_box;
use std::time::Instant;

use std::sync::Arc;

use tripgate_host::{Clock, CoarseClock, Lock};
use tripgate_wasmtime::wit::{Guest, Outcome};
use tripgate_wasmtime::{Breaker, Config, Runtime};
use tripgate_wasmtime_bench::{admitted, keyed_pair, Bare, ScalarV020};
use wasmtime::component::ResourceAny;
use wasmtime::Store;

const PATHS: [&str; 7] = [
    "bare state()",
    "bare keyed pair",
    "bare permit resource pair",
    "library raw pair",
    "library permit pair",
    "bare keyed pair, locked",
    "bare 0.2.0 scalar pair",
];

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
    let bare = Bare::sharing(&runtime);
    let mut subjects = Subjects {
        me: bare.me,
        bare,
        breaker: runtime.breaker(&Config::default()).unwrap(),
        locked: Lock::new(Bare::sharing(&runtime)),
        clock: Arc::new(CoarseClock::new()),
        scalar: ScalarV020::from_env(runtime.engine()),
    };
    // ns per call or pair for one batch.
    let mut time = |path: usize| -> f64 {
        let start = Instant::now();
        for _ in 0..batch {
            subjects.call(path);
        }
        start.elapsed().as_nanos() as f64 / f64::from(batch)
    };
    let paths = if ScalarV020::from_env(runtime.engine()).is_some() {
        PATHS.len()
    } else {
        PATHS.len() - 1
    };
    for path in 0..paths {
        time(path); // warm up
    }
    let mut ns: Vec<[f64; PATHS.len()]> = Vec::with_capacity(rounds);
    for r in 0..rounds {
        let mut round = [0.0; PATHS.len()];
        // Forward in even rounds, backward in odd ones: no path always follows another.
        let order: Vec<usize> = if r % 2 == 0 {
            (0..paths).collect()
        } else {
            (0..paths).rev().collect()
        };
        for path in order {
            round[path] = time(path);
        }
        ns.push(round);
    }
    report(&ns, rounds, batch, paths);
}

/// What the paths call: one compiled component throughout.
struct Subjects {
    bare: Bare,
    me: ResourceAny,
    breaker: Breaker,
    locked: Lock<Bare>,
    clock: Arc<dyn Clock + Send + Sync>,
    scalar: Option<ScalarV020>,
}

impl Subjects {
    /// One call or pair of the path numbered as in `PATHS`.
    #[inline(always)]
    fn call(&mut self, path: usize) {
        let (bare, me) = (&mut self.bare, self.me);
        match path {
            0 => {
                let api = bare.tripgate.tripgate_breaker_circuit_breaker().breaker();
                black_box(api.call_state(&mut bare.store, me, 1).unwrap());
            }
            1 => drop(black_box(keyed_pair(bare, 1))),
            2 => {
                let api = bare.tripgate.tripgate_breaker_circuit_breaker().breaker();
                let permit = api.call_acquire(&mut bare.store, me, 1).unwrap().decision;
                black_box(
                    api.call_record_outcome(
                        &mut bare.store,
                        me,
                        permit.unwrap(),
                        Outcome::Success,
                        1,
                    )
                    .unwrap()
                    .unwrap(),
                );
            }
            3 => {
                let permit = self.breaker.acquire_raw().unwrap().decision.unwrap();
                black_box(self.breaker.record_raw(permit, Outcome::Success).unwrap());
            }
            4 => {
                let permit = self.breaker.acquire().unwrap().decision.unwrap();
                black_box(permit.record(Outcome::Success).unwrap());
            }
            5 => {
                let (locked, clock) = (&self.locked, &*self.clock);
                let admission = locked_call(locked, clock, |hot, store, key, now| {
                    hot.call_acquire_keyed(store, key, now).unwrap()
                });
                let ticket = admitted(admission).ticket;
                black_box(locked_call(locked, clock, |hot, store, key, now| {
                    hot.call_record_keyed(store, key, ticket, Outcome::Success, now)
                        .unwrap()
                        .unwrap()
                }));
            }
            6 => {
                let scalar = self.scalar.as_mut().expect("a 0.2.0 component");
                black_box(scalar.pair(1));
            }
            _ => unreachable!(),
        }
    }
}

/// Each path's median and range, then the ratios within each round.
fn report(ns: &[[f64; PATHS.len()]], rounds: usize, batch: u32, paths: usize) {
    println!("{rounds} interleaved rounds of {batch} calls or pairs per path: median (range)");
    for (path, name) in PATHS.iter().enumerate().take(paths) {
        let (median, low, high) = spread(ns.iter().map(|r| r[path]).collect());
        println!("  {name:26} {median:7.1} ns  ({low:.1}-{high:.1})");
    }
    println!("ratios within each round: median (range)");
    for (name, over, under) in [
        ("bare keyed pair / state()", 1, 0),
        ("bare permit resource pair / state()", 2, 0),
        ("library raw / bare keyed pair", 3, 1),
        ("library permit / bare keyed pair", 4, 1),
        ("locked keyed pair / bare keyed pair", 5, 1),
        ("library raw / locked keyed pair", 3, 5),
        ("bare keyed pair / bare 0.2.0 scalar pair", 1, 6),
    ]
    .into_iter()
    .filter(|&(_, over, under)| over < paths && under < paths)
    {
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
