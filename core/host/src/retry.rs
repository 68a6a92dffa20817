//! Retries for every Rust host's guarded call: the core's policy and the budget a
//! breaker's callers share ([`Retries`]), and the loop that runs them ([`retrying`],
//! [`retrying_async`]). Every attempt is admitted by the breaker: a rejection ends the
//! retries with the breaker's own answer, so nothing retries into an open breaker, and a
//! half-open one lets no more than its probes through.

use std::cell::Cell;
#[cfg(feature = "tokio")]
use std::future::Future;
use std::time::Duration;

use tripgate_core::retry::{self, Next, RetryBudget, RetryError, RetryPolicy};
use tripgate_core::{Class, Nanos};

#[cfg(feature = "tokio")]
use crate::call::guarded_async;
use crate::call::{guarded, CallError};
use crate::classify::Judged;
use crate::{HostBreaker, Lock};

/// A retry policy and the budget of the calls that share it: one per breaker (or per
/// upstream), shared by all its callers (`Send + Sync`; keep it beside the breaker).
pub struct Retries {
    policy: RetryPolicy,
    budget: Lock<RetryBudget>,
}

impl std::fmt::Debug for Retries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retries")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Retries {
    /// Retries by `policy`, its budget empty at `now` (the breaker's clock); a bad policy
    /// is an error naming its field.
    pub fn new(policy: RetryPolicy, now: Nanos) -> Result<Self, RetryError> {
        policy.validate()?;
        Ok(Self {
            budget: Lock::new(RetryBudget::new(&policy, now)),
            policy,
        })
    }

    /// The policy.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// A call's first attempt was admitted: it pays into the budget. (For adapters that
    /// run their own loop, as a `tower` retry policy does; [`retrying`] calls it.)
    pub fn deposit(&self) {
        self.budget.lock().deposit(&self.policy);
    }

    /// After attempt `attempt` answered with `class` and asked for `retry_after`, what to
    /// do (the core's `retry::next` on the shared budget).
    pub fn next(&self, attempt: u8, class: Class, retry_after: Nanos, now: Nanos) -> Next {
        let mut budget = self.budget.lock();
        retry::next(&self.policy, &mut budget, attempt, class, retry_after, now)
    }
}

/// What one attempt left: the answer, or the wait before the next attempt.
enum Attempt<R, E> {
    Done(Result<R, CallError<R, E>>),
    Again(Duration),
}

/// After an attempt's answer (`retry_after`: the stay-away its result asked for), what
/// the loop does. An admitted first attempt pays into the budget; a fault (a failed
/// result, a timeout) is retried as the policy and the budget allow; anything else —
/// a good answer, the breaker's rejection, a host error — is the call's answer.
fn after<R, E>(
    retries: &Retries,
    attempt: u8,
    answer: Result<R, CallError<R, E>>,
    retry_after: Nanos,
    now: Nanos,
) -> Attempt<R, E> {
    let admitted = !matches!(answer, Err(CallError::Rejected(_) | CallError::Host(_)));
    if attempt == 1 && admitted {
        retries.deposit();
    }
    let fault = matches!(answer, Err(CallError::Failed(_) | CallError::TimedOut(_)));
    if !fault {
        return Attempt::Done(answer);
    }
    match retries.next(attempt, Class::Fault, retry_after, now) {
        Next::Retry(wait) => Attempt::Again(Duration::from_nanos(wait)),
        Next::Stop(_) => Attempt::Done(answer),
    }
}

/// [`guarded`] retried by `retries`: `f` runs again after a fault, each time admitted by
/// the breaker, after the wait the policy draws (or the upstream's longer `Retry-After`),
/// on the breaker's clock ([`HostBreaker::sleep`]). The last attempt's answer, or the
/// breaker's rejection, is the call's. `timeout` is each attempt's: the whole call may
/// take up to `max-attempts` times it, plus the waits.
pub fn retrying<B: HostBreaker, R, J: Into<Judged>>(
    breaker: &B,
    retries: &Retries,
    timeout: Duration,
    mut f: impl FnMut() -> R,
    classify: impl Fn(&R) -> J,
) -> Result<R, CallError<R, B::Error>> {
    let mut attempt = 1u8;
    loop {
        let asked = Cell::new(0);
        let answer = guarded(breaker, timeout, &mut f, |r: &R| noted(&asked, classify(r)));
        match after(retries, attempt, answer, asked.get(), breaker.now()) {
            Attempt::Done(answer) => return answer,
            Attempt::Again(wait) => breaker.sleep(wait),
        }
        attempt = attempt.saturating_add(1);
    }
}

/// [`guarded_async`] retried by `retries`, `make` making each attempt's future; the waits
/// are on tokio's timer. Dropping the returned future cancels the call: an attempt in
/// flight is released as `cancelled`, a wait simply ends.
#[cfg(feature = "tokio")]
pub async fn retrying_async<B: HostBreaker, R, J: Into<Judged>, F: Future<Output = R>>(
    breaker: &B,
    retries: &Retries,
    timeout: Duration,
    mut make: impl FnMut() -> F,
    classify: impl Fn(&R) -> J,
) -> Result<R, CallError<R, B::Error>> {
    let mut attempt = 1u8;
    loop {
        let asked = Cell::new(0);
        let classify = |r: &R| noted(&asked, classify(r));
        let answer = guarded_async(breaker, timeout, make(), classify).await;
        match after(retries, attempt, answer, asked.get(), breaker.now()) {
            Attempt::Done(answer) => return answer,
            Attempt::Again(wait) => tokio::time::sleep(wait).await,
        }
        attempt = attempt.saturating_add(1);
    }
}

/// A classifier's verdict, its stay-away noted for the retry's decision.
fn noted(asked: &Cell<Nanos>, judged: impl Into<Judged>) -> Judged {
    let judged = judged.into();
    asked.set(judged.retry_after);
    judged
}
