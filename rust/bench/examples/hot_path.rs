//! One hot path of the bare core in a plain loop, for a profiler:
//! `valgrind --tool=callgrind target/release/examples/hot_path closed 1000000`.
//!
//! Workloads: `closed` (acquire + record success), `closed-count` and `closed-hang` (the
//! same with a count window, and with hang tracking), `open` (rejection), `trip` (the fault
//! that trips, on a fresh copy of a breaker four faults from tripping), `shared` (the
//! thread-safe breaker's acquire + record, one thread), `failsafe` and `recloser` (their
//! closed pair, as the benches run it), `clock` (one `QuantaClock` read).

use std::hint::black_box;

use tripgate_core::{Breaker, Config, Outcome, SECOND};

fn main() {
    let mut args = std::env::args().skip(1);
    let workload = args.next().unwrap_or_else(|| "closed".into());
    let iters: u64 = args
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let mut b = Breaker::new(Config::default(), 0).unwrap();
    match workload.as_str() {
        "closed" => {
            for now in 0..iters {
                let p = b.acquire(black_box(now)).decision.unwrap();
                let r = b.record(p, Outcome::Success, black_box(now));
                black_box((r.class, r.transitions.len()));
            }
        }
        // The closed pair with a count window, and with hang tracking (the general path).
        "closed-count" => closed_with(
            Config {
                window_calls: Some(100),
                ..Config::default()
            },
            iters,
        ),
        "closed-hang" => closed_with(
            Config {
                slow_call_duration: Some(SECOND),
                ..Config::default()
            },
            iters,
        ),
        "open" => {
            for _ in 0..5 {
                let p = b.acquire(0).decision.unwrap();
                b.record(p, Outcome::Timeout, 0);
            }
            for i in 0..iters {
                assert!(b.acquire(black_box(SECOND + (i & 1))).decision.is_err());
            }
        }
        "trip" => {
            for _ in 0..4 {
                let p = b.acquire(0).decision.unwrap();
                b.record(p, Outcome::Timeout, 0);
            }
            for _ in 0..iters {
                let mut copy = b.clone();
                let p = copy.acquire(black_box(1)).decision.unwrap();
                black_box(&copy.record(p, Outcome::Timeout, 1));
            }
        }
        "shared" => {
            let b = tripgate::Breaker::new(Config::default()).unwrap();
            for _ in 0..iters {
                black_box(b.acquire().unwrap().record(Outcome::Success));
            }
        }
        // The peers' closed pair, as the native bench and `alternating` run them.
        "failsafe" => peer(tripgate_bench::failsafe_breaker(), iters, |f| {
            tripgate_bench::failsafe_pair(f)
        }),
        "recloser" => peer(tripgate_bench::recloser_breaker(), iters, |r| {
            tripgate_bench::recloser_pair(r)
        }),
        "clock" => {
            let clock = tripgate::QuantaClock::new();
            for _ in 0..iters {
                black_box(tripgate::Clock::now(&clock));
            }
        }
        other => panic!("unknown workload {other}"),
    }
}

/// `closed` on a breaker of `config`, out of line so that it leaves the code of the other
/// workloads (and so their instruction counts) as they were.
#[inline(never)]
fn closed_with(config: Config, iters: u64) {
    let mut b = Breaker::new(config, 0).unwrap();
    for now in 0..iters {
        let p = b.acquire(black_box(now)).decision.unwrap();
        let r = b.record(p, Outcome::Success, black_box(now));
        black_box((r.class, r.transitions.len()));
    }
}

/// A peer's pair, out of line for the same reason as `closed_with`.
#[inline(never)]
fn peer<T>(breaker: T, iters: u64, pair: impl Fn(&T)) {
    for _ in 0..iters {
        pair(black_box(&breaker));
    }
}
