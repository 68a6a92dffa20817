//! The component's `retry-budget` (SPEC § Retries) runs the shared retry vector
//! (`tests/vectors/retry/retry.json`) through the WIT, as a host other than this library
//! (jco, another wasmtime embedding) would use it; and a bad policy is an error naming
//! its field, never a trap.

use tripgate_vectors::retry::{run_retry_vector, Decider};
use tripgate_wasmtime::bindings::exports::tripgate::breaker::circuit_breaker::{
    Class as WitClass, RetryNext, RetryPolicy,
};
use tripgate_wasmtime::bindings::Tripgate;
use tripgate_wasmtime::tripgate_core::retry::{self, Next, Stop};
use tripgate_wasmtime::tripgate_core::{Class, Nanos};
use tripgate_wasmtime::{COMPONENT, MILLISECOND};
use wasmtime::component::{Component, Linker, ResourceAny};
use wasmtime::{Engine, Store};

fn instance() -> (Store<()>, Tripgate) {
    let engine = Engine::default();
    let component = Component::new(&engine, COMPONENT).unwrap();
    let mut store = Store::new(&engine, ());
    let tripgate = Tripgate::instantiate(&mut store, &component, &Linker::new(&engine)).unwrap();
    (store, tripgate)
}

/// A `retry-budget` resource in an instance of its own.
struct Budget {
    store: Store<()>,
    tripgate: Tripgate,
    budget: ResourceAny,
}

impl Budget {
    fn new(policy: retry::RetryPolicy) -> Self {
        let (mut store, tripgate) = instance();
        let wit = RetryPolicy {
            max_attempts: policy.max_attempts,
            base_delay: policy.base_delay,
            max_delay: policy.max_delay,
            budget_percent: policy.budget_percent,
            min_retries_per_second: policy.min_retries_per_second,
            seed: policy.seed,
        };
        let api = tripgate.tripgate_breaker_circuit_breaker().retry_budget();
        let budget = api.call_create(&mut store, wit, 0).unwrap().unwrap();
        Self {
            store,
            tripgate,
            budget,
        }
    }
}

impl Decider for Budget {
    fn deposit(&mut self) {
        let api = self
            .tripgate
            .tripgate_breaker_circuit_breaker()
            .retry_budget();
        api.call_deposit(&mut self.store, self.budget).unwrap();
    }
    fn next(&mut self, attempt: u8, class: Class, retry_after: Nanos, now: Nanos) -> Next {
        let class = match class {
            Class::Success => WitClass::Success,
            Class::Fault => WitClass::Fault,
            Class::Neutral => WitClass::Neutral,
        };
        let api = self
            .tripgate
            .tripgate_breaker_circuit_breaker()
            .retry_budget();
        let next = api
            .call_next(
                &mut self.store,
                self.budget,
                attempt,
                class,
                retry_after,
                now,
            )
            .unwrap();
        match next {
            RetryNext::Retry(wait) => Next::Retry(wait),
            RetryNext::Stop(stop) => Next::Stop(Stop::from_code(stop as u8).unwrap()),
        }
    }
}

#[test]
fn the_components_retry_budget_decides_as_the_vector_says() {
    let cases = run_retry_vector(|policy| Box::new(Budget::new(policy))).unwrap();
    assert!(cases >= 8, "{cases} cases");
}

#[test]
fn a_bad_policy_is_an_error_naming_its_field_never_a_trap() {
    let (mut store, tripgate) = instance();
    let api = tripgate.tripgate_breaker_circuit_breaker().retry_budget();
    let good = RetryPolicy {
        max_attempts: 3,
        base_delay: 50 * MILLISECOND,
        max_delay: 2000 * MILLISECOND,
        budget_percent: 20,
        min_retries_per_second: 10,
        seed: 0,
    };
    for (bad, message) in [
        (
            RetryPolicy {
                max_attempts: 0,
                ..good
            },
            "max-attempts must be between 1 and 10",
        ),
        (
            RetryPolicy {
                base_delay: 0,
                ..good
            },
            "base-delay must be > 0",
        ),
        (
            RetryPolicy {
                max_delay: 1,
                ..good
            },
            "max-delay must be >= base-delay",
        ),
        (
            RetryPolicy {
                budget_percent: 5000,
                ..good
            },
            "budget-percent must be between 0 and 1000",
        ),
    ] {
        let refused = api.call_create(&mut store, bad, 0).unwrap();
        assert_eq!(refused.err().as_deref(), Some(message));
    }
    assert!(api.call_create(&mut store, good, 0).unwrap().is_ok());
}
