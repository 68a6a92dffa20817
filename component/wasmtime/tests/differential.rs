//! The same random steps on the native core and on the component in wasmtime: every
//! decision, report, metric and exported byte must match.

mod common;

use tripgate_core as core_api;
use tripgate_wasmtime::{
    Breaker, Config, FakeClock, Outcome, Permit, Transition, MILLISECOND, SECOND,
};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn configs() -> Vec<Config> {
    let d = Config::default();
    vec![
        d,
        Config {
            failure_threshold: 3,
            min_calls: 3,
            failure_rate: Some(50),
            slow_call_rate: Some(50),
            slow_call_duration: Some(300 * MILLISECOND),
            window: 10 * SECOND,
            buckets: 5,
            cooldown: 2 * SECOND,
            half_open_max_probes: 2,
            probe_timeout: 3 * SECOND,
            ..d
        },
        Config {
            window_calls: Some(20),
            half_open_max_probes: 3,
            half_open_required_successes: 3,
            cooldown: SECOND,
            backoff_factor: 2.0,
            max_cooldown: Some(10 * SECOND),
            jitter_percent: 30,
            jitter_seed: 42,
            fault_statuses: core_api::StatusSet::default().with(408).without(429),
            ..d
        },
        Config {
            max_in_flight: Some(4),
            half_open_max_probes: 4,
            half_open_required_successes: 5,
            half_open_success_rate: Some(60),
            cooldown: 500 * MILLISECOND,
            fault_grpc_codes: core_api::GrpcSet::EMPTY.with(2).with(14),
            ..d
        },
    ]
}

fn random_outcome(rng: &mut Rng) -> Outcome {
    match rng.below(20) {
        0..=5 => Outcome::Success,
        6..=9 => Outcome::Status([200, 404, 429, 408, 500, 503][rng.below(6) as usize]),
        10 => Outcome::Status([0, 99, 600, 9999][rng.below(4) as usize]),
        11..=12 => Outcome::Grpc(rng.below(20) as u8),
        13 => Outcome::Timeout,
        14 => Outcome::ConnectionError,
        15 => Outcome::Failure,
        16 => Outcome::Cancelled,
        17 => Outcome::Ignored,
        _ => Outcome::Status(503),
    }
}

/// The core's outcome, or `Cancelled` for the invalid ones: the component refuses those
/// and releases the permit as cancelled.
fn core_outcome(outcome: Outcome) -> core_api::Outcome {
    match outcome {
        Outcome::Success => core_api::Outcome::Success,
        Outcome::Status(code) => {
            core_api::Outcome::status(code).unwrap_or(core_api::Outcome::Cancelled)
        }
        Outcome::Grpc(code) => {
            core_api::Outcome::grpc(code).unwrap_or(core_api::Outcome::Cancelled)
        }
        Outcome::Timeout => core_api::Outcome::Timeout,
        Outcome::ConnectionError => core_api::Outcome::ConnectionError,
        Outcome::Failure => core_api::Outcome::Failure,
        Outcome::Cancelled => core_api::Outcome::Cancelled,
        Outcome::Ignored => core_api::Outcome::Ignored,
    }
}

fn wasm_transitions(ts: &[Transition]) -> Vec<core_api::Transition> {
    ts.to_vec()
}

fn core_transitions(ts: &core_api::Transitions) -> Vec<core_api::Transition> {
    ts.iter().copied().collect()
}

fn run(seed: u64, config: &Config, steps: usize) {
    let mut rng = Rng(seed | 1);
    let (runtime, clock): (_, std::sync::Arc<FakeClock>) = common::fake(0);
    let mut twins = Twins {
        wasm: runtime.breaker(config).unwrap(),
        native: core_api::Breaker::new(*config, 0).unwrap(),
        held: Vec::new(),
    };
    let mut now = 0u64;
    for step in 0..steps {
        let context = format!("seed {seed} step {step} now {now}");
        now = match rng.below(50) {
            0 => now.saturating_sub(rng.below(2 * SECOND)), // the clock steps back
            1..=3 => now + rng.below(20 * SECOND),
            _ => now + rng.below(200 * MILLISECOND),
        };
        clock.set(now);
        let op = rng.below(100);
        if std::env::var_os("TRACE").is_some() {
            eprintln!(
                "{step} now={now} op={op} held={} n={:?} w={:?}",
                twins.held.len(),
                twins.native.state(now),
                twins.wasm.state().unwrap()
            );
        }
        let holding = !twins.held.is_empty();
        match op {
            0..=39 => twins.acquire(now, &context),
            40..=74 if holding => twins.record(&mut rng, now, &context),
            75..=79 if holding => {
                // Dropping the host permit releases it as cancelled.
                let (wp, np) = twins.take(&mut rng);
                drop(wp);
                let _ = twins.native.record(np, core_api::Outcome::Cancelled, now);
            }
            80..=91 => {
                let state = twins.wasm.state().unwrap();
                assert_eq!(state, twins.native.state(now), "{context}");
                let metrics = twins.wasm.metrics().unwrap();
                assert_eq!(metrics, twins.native.metrics(now), "{context}");
            }
            92..=95 => twins.manual(&mut rng, now, &context),
            _ => twins.recycle(&mut rng, now, &context),
        }
    }
    assert_eq!(twins.wasm.metrics().unwrap(), twins.native.metrics(now));
}

/// The component's breaker and the native core's, with the permits both hold.
struct Twins {
    wasm: Breaker,
    native: core_api::Breaker,
    held: Vec<(Permit, core_api::Permit)>,
}

impl Twins {
    fn acquire(&mut self, now: u64, context: &str) {
        let (w, n) = (self.wasm.acquire().unwrap(), self.native.acquire(now));
        assert_eq!(
            wasm_transitions(&w.transitions),
            core_transitions(&n.transitions),
            "{context}"
        );
        match (w.decision, n.decision) {
            (Ok(wp), Ok(np)) => {
                assert_eq!(wp.is_probe(), np.is_probe(), "{context}");
                self.held.push((wp, np));
            }
            (Err(wr), Err(nr)) => {
                assert_eq!(wr, nr, "{context}");
            }
            (w, n) => panic!("{context}: component {w:?}, native {n:?}"),
        }
    }

    /// One of the held permit pairs, picked at random.
    fn take(&mut self, rng: &mut Rng) -> (Permit, core_api::Permit) {
        self.held
            .swap_remove(rng.below(self.held.len() as u64) as usize)
    }

    fn record(&mut self, rng: &mut Rng, now: u64, context: &str) {
        let (wp, np) = self.take(rng);
        let outcome = random_outcome(rng);
        let n = self.native.record(np, core_outcome(outcome), now);
        match wp.record(outcome) {
            Ok(w) => {
                // A stale ticket is never slow (its start may be gone).
                assert_eq!(
                    (w.class, w.slow, w.stale),
                    (n.class, n.slow && !n.stale, n.stale),
                    "{context}"
                );
                assert_eq!(
                    wasm_transitions(&w.transitions),
                    core_transitions(&n.transitions),
                    "{context}"
                );
            }
            Err(_) => assert!(
                matches!(outcome, Outcome::Status(c) if !(100..=599).contains(&c))
                    || matches!(outcome, Outcome::Grpc(c) if c > 16),
                "{context}: {outcome:?} refused"
            ),
        }
    }

    fn manual(&mut self, rng: &mut Rng, now: u64, context: &str) {
        let (wasm, native) = (&self.wasm, &mut self.native);
        let (w, n) = match rng.below(4) {
            0 => (wasm.isolate().unwrap(), native.isolate(now)),
            1 => (wasm.release().unwrap(), native.release(now)),
            2 => (wasm.disable().unwrap(), native.disable(now)),
            _ => (wasm.reset().unwrap(), native.reset(now)),
        };
        assert_eq!(wasm_transitions(&w), core_transitions(&n), "{context}");
    }

    /// The same bytes exported by both, imported back into both after the same time.
    fn recycle(&mut self, rng: &mut Rng, now: u64, context: &str) {
        let mut buffer = [0u8; core_api::MAX_EXPORT_LEN];
        let len = self.native.export(now, &mut buffer).unwrap();
        let bytes = self.wasm.export_state().unwrap();
        assert_eq!(bytes, buffer[..len], "{context}");
        let elapsed = rng.below(5 * SECOND);
        self.wasm.import_state(&bytes, elapsed).unwrap();
        self.native.import(&bytes, elapsed, now).unwrap();
    }
}

#[test]
fn component_and_native_core_agree_on_random_steps() {
    let configs = configs();
    let mut runs = 0;
    for seed in 1..=25u64 {
        for config in &configs {
            run(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15), config, 1_500);
            runs += 1;
        }
    }
    println!("{runs} runs x 1,500 random steps: component and native core agree");
}
