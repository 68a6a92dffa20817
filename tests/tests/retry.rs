//! The shared retry vector (`tests/vectors/retry/retry.json`) on the core's retry policy
//! (`tripgate_core::retry`): every decision and every wait, and the policy's own rules.

use std::path::PathBuf;

use serde_json::Value;
use tripgate_core::retry::{self, Next, RetryBudget, RetryField, RetryPolicy};
use tripgate_core::{Class, MILLISECOND};

fn vector() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("vectors/retry/retry.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The case's policy: the vector's defaults with the case's fields over them.
fn policy(defaults: &Value, given: &Value) -> RetryPolicy {
    let field = |name: &str| {
        given
            .get(name)
            .or_else(|| defaults.get(name))
            .and_then(Value::as_u64)
            .unwrap()
    };
    RetryPolicy {
        max_attempts: u8::try_from(field("max-attempts")).unwrap(),
        base_delay: field("base-delay-ms") * MILLISECOND,
        max_delay: field("max-delay-ms") * MILLISECOND,
        budget_percent: u16::try_from(field("budget-percent")).unwrap(),
        min_retries_per_second: u32::try_from(field("min-retries-per-second")).unwrap(),
        seed: field("seed"),
    }
}

fn expected(next: Next) -> Value {
    match next {
        Next::Retry(wait) => serde_json::json!({ "retry-ns": wait }),
        Next::Stop(stop) => serde_json::json!({ "stop": stop.name() }),
    }
}

#[test]
fn every_retry_decision_is_the_vectors() {
    let vector = vector();
    for case in vector["cases"].as_array().unwrap() {
        let policy = policy(&vector["defaults"], &case["policy"]);
        policy.validate().unwrap();
        let mut budget = RetryBudget::new(&policy, 0);
        for (i, step) in case["steps"].as_array().unwrap().iter().enumerate() {
            if step["op"] == "deposit" {
                for _ in 0..step["count"].as_u64().unwrap() {
                    budget.deposit(&policy);
                }
                continue;
            }
            let class = match step["class"].as_str().unwrap() {
                "fault" => Class::Fault,
                "success" => Class::Success,
                _ => Class::Neutral,
            };
            let next = retry::next(
                &policy,
                &mut budget,
                u8::try_from(step["attempt"].as_u64().unwrap()).unwrap(),
                class,
                step["retry-after-ms"].as_u64().unwrap() * MILLISECOND,
                step["at-ms"].as_u64().unwrap() * MILLISECOND,
            );
            assert_eq!(expected(next), step["expect"], "{}: step {i}", case["name"]);
        }
    }
}

#[test]
fn a_bad_policy_names_its_field() {
    let bad = |policy: RetryPolicy| policy.validate().unwrap_err();
    let error = bad(RetryPolicy {
        max_attempts: 0,
        ..RetryPolicy::default()
    });
    assert_eq!(
        (error.field, error.to_string().as_str()),
        (
            RetryField::MaxAttempts,
            "max-attempts must be between 1 and 10"
        )
    );
    let error = bad(RetryPolicy {
        base_delay: 0,
        ..RetryPolicy::default()
    });
    assert_eq!(error.to_string(), "base-delay must be > 0");
    let error = bad(RetryPolicy {
        max_delay: MILLISECOND,
        ..RetryPolicy::default()
    });
    assert_eq!(error.to_string(), "max-delay must be >= base-delay");
    let error = bad(RetryPolicy {
        budget_percent: 1001,
        ..RetryPolicy::default()
    });
    assert_eq!(
        error.to_string(),
        "budget-percent must be between 0 and 1000"
    );
    RetryPolicy::default().validate().unwrap();
}
