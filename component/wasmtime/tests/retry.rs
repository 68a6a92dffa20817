//! The component's `retry-budget` (SPEC § Retries) runs the shared retry vector
//! (`tests/vectors/retry/retry.json`) through the WIT, as a host other than this library
//! (jco, another wasmtime embedding) would use it; and a bad policy is an error naming
//! its field, never a trap.

use std::path::PathBuf;

use serde_json::Value;
use tripgate_wasmtime::bindings::exports::tripgate::breaker::circuit_breaker::{
    Class, RetryNext, RetryPolicy, RetryStop,
};
use tripgate_wasmtime::bindings::Tripgate;
use tripgate_wasmtime::{COMPONENT, MILLISECOND};
use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Store};

fn vector() -> Value {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/retry/retry.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn instance() -> (Store<()>, Tripgate) {
    let engine = Engine::default();
    let component = Component::new(&engine, COMPONENT).unwrap();
    let mut store = Store::new(&engine, ());
    let tripgate = Tripgate::instantiate(&mut store, &component, &Linker::new(&engine)).unwrap();
    (store, tripgate)
}

fn policy(defaults: &Value, given: &Value) -> RetryPolicy {
    let field = |name: &str| {
        given
            .get(name)
            .or_else(|| defaults.get(name))
            .and_then(Value::as_u64)
            .unwrap()
    };
    RetryPolicy {
        max_attempts: field("max-attempts") as u8,
        base_delay: field("base-delay-ms") * MILLISECOND,
        max_delay: field("max-delay-ms") * MILLISECOND,
        budget_percent: field("budget-percent") as u16,
        min_retries_per_second: field("min-retries-per-second") as u32,
        seed: field("seed"),
    }
}

fn answer(next: RetryNext) -> Value {
    match next {
        RetryNext::Retry(wait) => serde_json::json!({ "retry-ns": wait }),
        RetryNext::Stop(stop) => serde_json::json!({ "stop": match stop {
            RetryStop::Answered => "answered",
            RetryStop::Attempts => "attempts",
            RetryStop::Budget => "budget",
            RetryStop::StayAway => "stay-away",
        }}),
    }
}

#[test]
fn the_components_retry_budget_decides_as_the_vector_says() {
    let (mut store, tripgate) = instance();
    let api = tripgate.tripgate_breaker_circuit_breaker().retry_budget();
    let vector = vector();
    for case in vector["cases"].as_array().unwrap() {
        let policy = policy(&vector["defaults"], &case["policy"]);
        let budget = api.call_create(&mut store, policy, 0).unwrap().unwrap();
        for (i, step) in case["steps"].as_array().unwrap().iter().enumerate() {
            if step["op"] == "deposit" {
                for _ in 0..step["count"].as_u64().unwrap() {
                    api.call_deposit(&mut store, budget).unwrap();
                }
                continue;
            }
            let class = match step["class"].as_str().unwrap() {
                "fault" => Class::Fault,
                "success" => Class::Success,
                _ => Class::Neutral,
            };
            let next = api
                .call_next(
                    &mut store,
                    budget,
                    step["attempt"].as_u64().unwrap() as u8,
                    class,
                    step["retry-after-ms"].as_u64().unwrap() * MILLISECOND,
                    step["at-ms"].as_u64().unwrap() * MILLISECOND,
                )
                .unwrap();
            assert_eq!(answer(next), step["expect"], "{}: step {i}", case["name"]);
        }
        budget.resource_drop(&mut store).unwrap();
    }
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
