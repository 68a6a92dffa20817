//! Many threads on one breaker: probe admission is atomic, and no outcome is lost.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use tripgate::{Breaker, Config, FakeClock, Outcome, State, SECOND};

type Fake = Arc<FakeClock>;

/// A breaker with `config`, tripped, its fake clock moved past the cooldown.
fn half_open(config: Config) -> (Arc<Breaker<Fake>>, Fake) {
    let clock = Arc::new(FakeClock::new(0));
    let breaker = Breaker::with_clock(config, Arc::clone(&clock)).unwrap();
    for _ in 0..config.failure_threshold {
        breaker
            .acquire()
            .unwrap()
            .record(Outcome::status(503).unwrap());
    }
    assert_eq!(breaker.state(), State::Open);
    clock.advance(config.cooldown);
    assert_eq!(breaker.state(), State::HalfOpen);
    (Arc::new(breaker), clock)
}

/// 64 threads × 5,000 rounds contend for K = 3 probe slots. The probes succeed (M is
/// out of reach, so the breaker stays half-open) or are dropped (cancelled); the count
/// of callers inside the guarded call, kept by the test and not by the breaker, never
/// exceeds K.
#[test]
fn sixty_four_threads_never_put_more_than_k_inside_the_guarded_call() {
    const THREADS: usize = 64;
    const ROUNDS: usize = 5_000;
    const K: u8 = 3;
    let (breaker, clock) = half_open(Config {
        half_open_max_probes: K,
        half_open_required_successes: u32::MAX,
        probe_timeout: 1_000_000 * SECOND,
        ..Config::default()
    });
    let inside = Arc::new(AtomicU32::new(0));
    let most = Arc::new(AtomicU32::new(0));
    let admitted = Arc::new(AtomicU64::new(0));
    let barrier = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (breaker, clock) = (Arc::clone(&breaker), Arc::clone(&clock));
            let (inside, most, admitted) = (
                Arc::clone(&inside),
                Arc::clone(&most),
                Arc::clone(&admitted),
            );
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                barrier.wait();
                for round in 0..ROUNDS {
                    clock.advance(1_000); // time moves; never past probe-timeout
                    let Ok(permit) = breaker.acquire() else {
                        continue;
                    };
                    assert!(permit.is_probe());
                    let now_inside = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now_inside, Ordering::SeqCst);
                    assert!(now_inside <= u32::from(K), "{now_inside} probes inside");
                    // Stay inside a while so other threads pile up at the door.
                    for _ in 0..4 {
                        thread::yield_now();
                    }
                    inside.fetch_sub(1, Ordering::SeqCst);
                    if (t + round) % 2 == 0 {
                        let recorded = permit.record(Outcome::Success);
                        assert!(!recorded.stale);
                    } else {
                        drop(permit);
                    }
                    admitted.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let m = breaker.metrics();
    assert_eq!(m.state, State::HalfOpen);
    assert!(most.load(Ordering::SeqCst) <= u32::from(K));
    assert!(admitted.load(Ordering::Relaxed) > 0);
    assert_eq!(m.probes_out, 0, "every probe came back");
    assert_eq!(
        m.admitted_total,
        admitted.load(Ordering::Relaxed) + 5,
        "the five calls that tripped it, and every probe"
    );
}

/// Eight threads of acquire + record on one closed breaker: every outcome is counted
/// exactly once (a lost update under the lock would show in the totals).
#[test]
fn no_outcome_is_lost_under_contention() {
    const THREADS: u64 = 8;
    const ROUNDS: u64 = 20_000;
    let clock = Arc::new(FakeClock::new(0));
    let breaker = Arc::new(Breaker::with_clock(Config::default(), Arc::clone(&clock)).unwrap());
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let breaker = Arc::clone(&breaker);
            thread::spawn(move || {
                for _ in 0..ROUNDS {
                    breaker.acquire().unwrap().record(Outcome::Success);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let m = breaker.metrics();
    assert_eq!(m.admitted_total, THREADS * ROUNDS);
    assert_eq!(m.successes_total, THREADS * ROUNDS);
    assert_eq!((m.in_flight, m.state), (0, State::Closed));
}
