//! The shared retry vector (`tests/vectors/retry/retry.json`) on the core's retry policy
//! (`tripgate_core::retry`): every decision and every wait, and the policy's own rules.

use tripgate_core::retry::{self, Next, RetryBudget, RetryField, RetryPolicy};
use tripgate_core::{Class, Nanos, MILLISECOND};
use tripgate_vectors::retry::{run_retry_vector, Decider};

/// The core's budget and policy.
struct Core(RetryPolicy, RetryBudget);

impl Decider for Core {
    fn deposit(&mut self) {
        self.1.deposit(&self.0);
    }
    fn next(&mut self, attempt: u8, class: Class, retry_after: Nanos, now: Nanos) -> Next {
        retry::next(&self.0, &mut self.1, attempt, class, retry_after, now)
    }
}

#[test]
fn every_retry_decision_is_the_vectors() {
    let cases = run_retry_vector(|policy| {
        policy.validate().unwrap();
        Box::new(Core(policy, RetryBudget::new(&policy, 0)))
    })
    .unwrap();
    assert!(cases >= 8, "{cases} cases");
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
