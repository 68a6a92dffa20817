//! The `retry-budget` resource: the core's retry policy and budget (SPEC § Retries) for
//! hosts that run the component, kept in a cell since a resource is used by reference.

use alloc::string::{String, ToString};
use core::cell::RefCell;

use tripgate_core::retry::{self, Next, RetryBudget, RetryPolicy};

use crate::convert::case;
use crate::wit;

/// A budget and its policy.
pub(crate) struct RetryBudgetResource {
    policy: RetryPolicy,
    budget: RefCell<RetryBudget>,
}

fn policy(p: wit::RetryPolicy) -> RetryPolicy {
    RetryPolicy {
        max_attempts: p.max_attempts,
        base_delay: p.base_delay,
        max_delay: p.max_delay,
        budget_percent: p.budget_percent,
        min_retries_per_second: p.min_retries_per_second,
        seed: p.seed,
    }
}

impl wit::GuestRetryBudget for RetryBudgetResource {
    fn create(policy_: wit::RetryPolicy, now: u64) -> Result<wit::RetryBudget, String> {
        let policy = policy(policy_);
        policy.validate().map_err(|e| e.to_string())?;
        Ok(wit::RetryBudget::new(Self {
            budget: RefCell::new(RetryBudget::new(&policy, now)),
            policy,
        }))
    }

    fn deposit(&self) {
        self.budget.borrow_mut().deposit(&self.policy);
    }

    fn next(&self, attempt: u8, class: wit::Class, retry_after: u64, now: u64) -> wit::RetryNext {
        let mut budget = self.budget.borrow_mut();
        match retry::next(
            &self.policy,
            &mut budget,
            attempt,
            case(tripgate_core::Class::from_code, class as u8),
            retry_after,
            now,
        ) {
            Next::Retry(wait) => wit::RetryNext::Retry(wait),
            Next::Stop(stop) => wit::RetryNext::Stop(case(wit::RetryStop::from_repr, stop.code())),
        }
    }
}
