//! Many threads, one half-open breaker inside the component: probe admission is atomic.

mod common;

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use tripgate_wasmtime::{Breaker, Config, FakeClock, Outcome, State, SECOND};

/// Trips a fresh breaker with `config` and moves the fake clock past the cooldown.
fn half_open(config: &Config) -> (Breaker, Arc<FakeClock>) {
    let (runtime, clock) = common::fake(0);
    let breaker = runtime.breaker(config).unwrap();
    for _ in 0..config.failure_threshold {
        let permit = breaker.acquire().unwrap().decision.unwrap();
        permit.record(Outcome::Status(503)).unwrap();
    }
    assert_eq!(breaker.state().unwrap(), State::Open);
    clock.advance(config.cooldown);
    assert_eq!(breaker.state().unwrap(), State::HalfOpen);
    (breaker, clock)
}

/// What the threads saw: who is inside the guarded call now and at most, kept by the test
/// and not by the breaker; the admissions and rejections.
#[derive(Default)]
struct Tally {
    inside: AtomicU32,
    most: AtomicU32,
    admitted: AtomicU64,
    rejected: AtomicU64,
}

impl Tally {
    /// One call through the breaker: if admitted, a guarded call that counts who is inside
    /// it (never more than `k`), then its outcome.
    fn call(&self, breaker: &Breaker, outcome: Outcome, k: u8) {
        match breaker.acquire().unwrap().decision {
            Ok(permit) => {
                let now_inside = self.inside.fetch_add(1, Ordering::SeqCst) + 1;
                self.most.fetch_max(now_inside, Ordering::SeqCst);
                assert!(now_inside <= u32::from(k), "{now_inside} probes inside");
                // Stay inside a while so other threads pile up at the door.
                for _ in 0..4 {
                    thread::yield_now();
                }
                self.inside.fetch_sub(1, Ordering::SeqCst);
                let recorded = permit.record(outcome).unwrap();
                assert!(!recorded.stale && recorded.transitions.is_empty());
                self.admitted.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                self.rejected.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// 64 threads × 10,000 rounds contend for K = 3 probe slots. The probes succeed (M is
/// out of reach, so the breaker stays half-open) or are cancelled; the count of callers
/// inside the guarded call, kept by the test and not by the breaker, never exceeds K.
#[test]
fn sixty_four_threads_never_exceed_k_outstanding_probes() {
    const THREADS: usize = 64;
    const ROUNDS: usize = 10_000;
    const K: u8 = 3;
    let config = Config {
        half_open_max_probes: K,
        half_open_required_successes: u32::MAX,
        probe_timeout: 1_000_000 * SECOND,
        ..Config::default()
    };
    let (breaker, clock) = half_open(&config);

    let tally = Arc::new(Tally::default());
    let barrier = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (breaker, clock) = (breaker.clone(), Arc::clone(&clock));
            let (tally, barrier) = (Arc::clone(&tally), Arc::clone(&barrier));
            thread::spawn(move || {
                barrier.wait();
                for round in 0..ROUNDS {
                    clock.advance(1_000); // time moves; never past probe-timeout
                    let outcome = if (t + round) % 2 == 0 {
                        Outcome::Success
                    } else {
                        Outcome::Cancelled
                    };
                    tally.call(&breaker, outcome, K);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }

    let Tally {
        most,
        admitted,
        rejected,
        ..
    } = &*tally;
    let (admitted, rejected) = (
        admitted.load(Ordering::Relaxed),
        rejected.load(Ordering::Relaxed),
    );
    let most = most.load(Ordering::SeqCst);
    println!(
        "{THREADS} threads x {ROUNDS} rounds: {admitted} probes admitted, {rejected} rejected, \
         at most {most} inside at once (K = {K})"
    );
    assert_eq!(admitted + rejected, (THREADS * ROUNDS) as u64);
    assert_eq!(
        most,
        u32::from(K),
        "the slots were all in use at some point, never more"
    );
    assert!(admitted > 0 && rejected > 0);
    let metrics = breaker.metrics().unwrap();
    assert_eq!(metrics.state, State::HalfOpen);
    assert_eq!(metrics.probes_out, 0);
    assert_eq!(
        metrics.rejected(tripgate_core::RejectReason::Probing),
        rejected
    );
}

/// SPEC failure mode 2: 200 callers arrive together after the cooldown; exactly K are
/// admitted, for K = 1 and K = 4.
#[test]
fn half_open_stampede_admits_exactly_k() {
    for k in [1u8, 4] {
        let config = Config {
            half_open_max_probes: k,
            ..Config::default()
        };
        let (breaker, _clock) = half_open(&config);
        let barrier = Arc::new(Barrier::new(200));
        let callers: Vec<_> = (0..200)
            .map(|_| {
                let (breaker, barrier) = (breaker.clone(), Arc::clone(&barrier));
                thread::spawn(move || {
                    barrier.wait();
                    // Hold the permit: the probe stays out until every caller has asked.
                    breaker.acquire().unwrap().decision.ok()
                })
            })
            .collect();
        let permits: Vec<_> = callers
            .into_iter()
            .filter_map(|caller| caller.join().unwrap())
            .collect();
        assert_eq!(permits.len(), usize::from(k), "K = {k}");
        assert!(permits.iter().all(|p| p.is_probe()));
        assert_eq!(
            breaker
                .metrics()
                .unwrap()
                .rejected(tripgate_core::RejectReason::Probing),
            200 - u64::from(k)
        );
    }
}
