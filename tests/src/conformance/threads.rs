//! The conformance checks with many threads on one breaker: probe admission is atomic, a
//! stampede after the cooldown admits exactly K, and no outcome is lost.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use tripgate_core::{Config, Outcome, RejectReason, State, SECOND};
use tripgate_host::{FakeClock, HostBreaker};

use super::{metrics, Host};

/// A breaker with `config`, tripped, its fake clock moved past the cooldown.
fn half_open<H: Host>(host: &H, config: &Config) -> (H::Breaker, Arc<FakeClock>) {
    let clock = Arc::new(FakeClock::new(0));
    let breaker = host.breaker(config, Arc::clone(&clock));
    for _ in 0..config.failure_threshold {
        let permit = breaker.admit().unwrap().expect("closed: admitted");
        breaker.settle(permit, Outcome::ConnectionError).unwrap();
    }
    assert_eq!(metrics(&breaker).state, State::Open);
    clock.advance(config.cooldown);
    assert_eq!(metrics(&breaker).state, State::HalfOpen);
    (breaker, clock)
}

/// Who is inside the guarded call now and at most (kept by the test, not the breaker), and
/// the admissions and rejections the threads saw.
#[derive(Default)]
struct Tally {
    inside: AtomicU32,
    most: AtomicU32,
    admitted: AtomicU64,
    rejected: AtomicU64,
}

impl Tally {
    /// One call: if admitted, a stay inside the guarded call that counts who is there,
    /// then a success recorded or the permit dropped (cancelled), by `succeed`.
    fn call<B: HostBreaker>(&self, breaker: &B, succeed: bool, k: u8) {
        let Ok(permit) = breaker.admit().unwrap() else {
            self.rejected.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let now_inside = self.inside.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now_inside, Ordering::SeqCst);
        assert!(now_inside <= u32::from(k), "{now_inside} probes inside");
        // Stay inside a while so other threads pile up at the door.
        for _ in 0..4 {
            thread::yield_now();
        }
        self.inside.fetch_sub(1, Ordering::SeqCst);
        if succeed {
            breaker.settle(permit, Outcome::Success).unwrap();
        } else {
            drop(permit);
        }
        self.admitted.fetch_add(1, Ordering::Relaxed);
    }
}

/// 64 threads × 2,000 rounds contend for K = 3 probe slots. The probes succeed (M is out of
/// reach, so the breaker stays half-open) or are dropped; the count of callers inside the
/// guarded call never exceeds K, and every rejection is counted as `probing`.
pub fn threads_never_put_more_than_k_probes_inside<H: Host>(host: &H) {
    const THREADS: usize = 64;
    const ROUNDS: usize = 2_000;
    const K: u8 = 3;
    let config = Config {
        half_open_max_probes: K,
        half_open_required_successes: u32::MAX,
        probe_timeout: 1_000_000 * SECOND,
        ..Config::default()
    };
    let (breaker, clock) = half_open(host, &config);
    let (tally, barrier) = (Tally::default(), Barrier::new(THREADS));
    thread::scope(|scope| {
        for t in 0..THREADS {
            let (breaker, clock, tally, barrier) = (&breaker, &clock, &tally, &barrier);
            scope.spawn(move || {
                barrier.wait();
                for round in 0..ROUNDS {
                    clock.advance(1_000); // time moves; never past probe-timeout
                    tally.call(breaker, (t + round) % 2 == 0, K);
                }
            });
        }
    });
    let (admitted, rejected) = (tally.admitted.into_inner(), tally.rejected.into_inner());
    assert_eq!(admitted + rejected, (THREADS * ROUNDS) as u64);
    assert!(tally.most.into_inner() <= u32::from(K));
    assert!(admitted > 0 && rejected > 0);
    let m = metrics(&breaker);
    assert_eq!((m.state, m.probes_out), (State::HalfOpen, 0));
    assert_eq!(m.rejected(RejectReason::Probing), rejected);
    let tripped = u64::from(config.failure_threshold);
    assert_eq!(m.admitted_total, admitted + tripped, "every probe counted");
}

/// SPEC failure mode 2: 200 callers arrive together after the cooldown and hold what they
/// get until all have asked; exactly K are admitted, for K = 1 and K = 4.
pub fn a_stampede_after_the_cooldown_admits_exactly_k<H: Host>(host: &H) {
    const CALLERS: usize = 200;
    for k in [1u8, 4] {
        let config = Config {
            half_open_max_probes: k,
            ..Config::default()
        };
        let (breaker, _clock) = half_open(host, &config);
        let (arrive, asked) = (Barrier::new(CALLERS), Barrier::new(CALLERS));
        let admitted = AtomicU64::new(0);
        thread::scope(|scope| {
            for _ in 0..CALLERS {
                let (breaker, arrive, asked, admitted) = (&breaker, &arrive, &asked, &admitted);
                scope.spawn(move || {
                    arrive.wait();
                    let permit = breaker.admit().unwrap();
                    if permit.is_ok() {
                        admitted.fetch_add(1, Ordering::Relaxed);
                    }
                    asked.wait(); // the probes stay out until every caller has asked
                    drop(permit);
                });
            }
        });
        assert_eq!(admitted.into_inner(), u64::from(k), "K = {k}");
        let rejected = metrics(&breaker).rejected(RejectReason::Probing);
        assert_eq!(rejected, (CALLERS - usize::from(k)) as u64, "K = {k}");
    }
}

/// Eight threads of admit + settle on one closed breaker: every outcome is counted exactly
/// once (a lost update would show in the totals).
pub fn no_outcome_is_lost_under_contention<H: Host>(host: &H) {
    const THREADS: u64 = 8;
    const ROUNDS: u64 = 5_000;
    let breaker = host.breaker(&Config::default(), Arc::new(FakeClock::new(0)));
    thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                for _ in 0..ROUNDS {
                    let permit = breaker.admit().unwrap().expect("closed: admitted");
                    breaker.settle(permit, Outcome::Success).unwrap();
                }
            });
        }
    });
    let m = metrics(&breaker);
    assert_eq!(
        (m.admitted_total, m.successes_total),
        (THREADS * ROUNDS, THREADS * ROUNDS)
    );
    assert_eq!((m.in_flight, m.state), (0, State::Closed));
}
