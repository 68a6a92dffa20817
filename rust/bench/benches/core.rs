//! The breaker's hot paths, and the same workloads on `failsafe` 1.3 and `recloser` 1.4
//! in the same run, so the ratios are measured side by side.
//!
//! tripgate's core is plain data driven by `&mut self`; the others are shared, thread-safe
//! objects that read their own clock. So tripgate is measured three ways: bare (the
//! caller supplies `now`), bare plus a real `Instant` read per call, and behind a
//! `std::sync::Mutex` with a real clock (how a multi-threaded Rust host would hold it).

use std::hint::black_box;
use std::sync::Mutex;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use failsafe::CircuitBreaker as _;
use tripgate::{Clock, MonotonicClock};
use tripgate_bench::{err, failsafe_breaker, ok, peers_rejecting, recloser_breaker, timed};
use tripgate_core::{Breaker, Config, Outcome, Recorded, SECOND};

/// What a caller reads off a recorded outcome: its class and whether it moved the breaker.
/// (`black_box` of the whole 88-byte value would add a copy no caller makes, and the
/// copy's wide loads stall on the narrow stores that wrote its flags.)
fn consume(recorded: Recorded) {
    black_box((recorded.class, recorded.transitions.is_empty()));
}

fn tripgate() -> Breaker {
    Breaker::new(Config::default(), 0).unwrap()
}

fn tripped() -> Breaker {
    let mut b = tripgate();
    for _ in 0..5 {
        let p = b.acquire(0).decision.unwrap();
        b.record(p, Outcome::Timeout, 0);
    }
    b
}

fn acquire_record_closed(c: &mut Criterion) {
    let mut g = c.benchmark_group("acquire+record success, closed");
    let mut b = tripgate();
    g.bench_function("tripgate", |bench| {
        bench.iter_custom(|iters| {
            timed(iters, |now| {
                let p = b.acquire(now).decision.unwrap();
                consume(b.record(p, Outcome::Success, now));
            })
        })
    });
    let clock = MonotonicClock::new();
    let mut b = tripgate();
    g.bench_function("tripgate + Instant", |bench| {
        bench.iter_custom(|iters| {
            timed(iters, |_| {
                let p = b.acquire(clock.now()).decision.unwrap();
                consume(b.record(p, Outcome::Success, clock.now()));
            })
        })
    });
    let shared = Mutex::new(tripgate());
    g.bench_function("tripgate + Instant + Mutex", |bench| {
        bench.iter_custom(|iters| {
            timed(iters, |_| {
                let p = shared
                    .lock()
                    .unwrap()
                    .acquire(clock.now())
                    .decision
                    .unwrap();
                consume(
                    shared
                        .lock()
                        .unwrap()
                        .record(p, Outcome::Success, clock.now()),
                );
            })
        })
    });
    let f = failsafe_breaker();
    g.bench_function("failsafe", |bench| {
        bench.iter_custom(|iters| timed(iters, |_| drop(black_box(f.call(ok)))))
    });
    let r = recloser_breaker();
    g.bench_function("recloser", |bench| {
        bench.iter_custom(|iters| timed(iters, |_| drop(black_box(r.call(ok)))))
    });
    g.finish();
}

fn reject_open(c: &mut Criterion) {
    let mut g = c.benchmark_group("reject, open");
    let mut b = tripped();
    g.bench_function("tripgate", |bench| {
        bench.iter_custom(|iters| {
            timed(iters, |i| {
                assert!(b.acquire(SECOND + (i & 1)).decision.is_err())
            })
        })
    });
    let clock = MonotonicClock::new();
    let mut b = tripped();
    g.bench_function("tripgate + Instant", |bench| {
        bench.iter_custom(|iters| {
            timed(iters, |_| assert!(b.acquire(clock.now()).decision.is_err()))
        })
    });
    peers_rejecting(&mut g);
    g.finish();
}

fn reject_half_open(c: &mut Criterion) {
    // failsafe and recloser have no probe limit: in half-open they admit every caller
    // (the stampede of SPEC.md), so there is nothing of theirs to compare here.
    let mut g = c.benchmark_group("reject, half-open saturated");
    let mut b = tripped();
    let _probe = b.acquire(15 * SECOND).decision.unwrap();
    g.bench_function("tripgate", |bench| {
        bench.iter_custom(|iters| {
            timed(iters, |i| {
                assert!(b.acquire(15 * SECOND + (i & 1)).decision.is_err())
            })
        })
    });
    g.finish();
}

fn record_fault_that_trips(c: &mut Criterion) {
    let mut g = c.benchmark_group("record the fault that trips");
    g.bench_function("tripgate", |bench| {
        // By reference: the breaker is 1.8 KB, and moving it in and out of the batch
        // would be measured too.
        bench.iter_batched_ref(
            || {
                let mut b = tripgate();
                for _ in 0..4 {
                    let p = b.acquire(0).decision.unwrap();
                    b.record(p, Outcome::Timeout, 0);
                }
                let p = b.acquire(0).decision.ok();
                (b, p)
            },
            |(b, p)| {
                let recorded = b.record(p.take().unwrap(), Outcome::Timeout, 1);
                assert!(!recorded.transitions.is_empty());
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("failsafe", |bench| {
        bench.iter_batched(
            || {
                let f = failsafe_breaker();
                for _ in 0..4 {
                    let _ = f.call(err);
                }
                f
            },
            |f| {
                let _ = f.call(err);
                black_box(f)
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("recloser", |bench| {
        bench.iter_batched(
            || {
                let r = recloser_breaker();
                for _ in 0..5 {
                    let _ = r.call(err);
                }
                r
            },
            |r| {
                let _ = r.call(err);
                black_box(r)
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

/// What a scrape holds a breaker's lock for: `reading()` (the exposition's snapshot and
/// fleet status) against `metrics()` alone, on a breaker with a full window.
fn snapshot(c: &mut Criterion) {
    let mut g = c.benchmark_group("snapshot under the lock");
    let mut b = tripgate();
    for i in 0..100 {
        let p = b.acquire(i * SECOND / 10).decision.unwrap();
        b.record(p, Outcome::Success, i * SECOND / 10);
    }
    let now = 10 * SECOND;
    g.bench_function("metrics()", |bench| {
        bench.iter(|| black_box(b.metrics(black_box(now))))
    });
    g.bench_function("fleet_status()", |bench| {
        bench.iter(|| black_box(b.fleet_status(black_box(now))))
    });
    g.bench_function("reading() (exposition)", |bench| {
        bench.iter(|| black_box(b.reading(black_box(now))))
    });
    g.finish();
}

criterion_group!(
    benches,
    acquire_record_closed,
    reject_open,
    reject_half_open,
    record_fault_that_trips,
    snapshot
);
criterion_main!(benches);
