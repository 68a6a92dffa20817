//! Retries that cannot become a storm (SPEC § Retries): the policy, the budget a
//! breaker's callers share, and the decision after each attempt. Pure, like the breaker:
//! time is passed in, nothing allocates, the jitter comes from a seeded generator. Each
//! host's guarded call runs the loop — every attempt admitted by the breaker, a rejection
//! ending the retries with the breaker's own answer — and waits as [`next`] says.

use core::fmt;

use crate::config::Rule;
use crate::outcome::Class;
use crate::phase::splitmix64;
use crate::table::table;
use crate::time::{since, Nanos, HALF_CIRCLE, MILLISECOND, SECOND};
use crate::words::Words;

/// How a guarded call retries a fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included: `retries = 3` is 4. 1 retries nothing.
    pub max_attempts: u8,
    /// Retry `n` waits a uniform draw from `[0, min(max-delay, base-delay × 2ⁿ⁻¹)]` (full
    /// jitter), or the upstream's `Retry-After` when that is longer.
    pub base_delay: Nanos,
    /// The longest wait between attempts: an upstream that asks for longer ends the
    /// retries (its answer is the call's).
    pub max_delay: Nanos,
    /// Retries may be at most this percentage of the calls admitted (the budget, shared
    /// by every caller of one breaker), so an outage sees at most `1 + budget` times the
    /// offered load (plus the floor).
    pub budget_percent: u16,
    /// Retries allowed each second whatever the budget, so a quiet service still retries.
    pub min_retries_per_second: u32,
    /// The jitter's seed: the same seed draws the same waits.
    pub seed: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            base_delay: 50 * MILLISECOND,
            max_delay: 2 * SECOND,
            budget_percent: 20,
            min_retries_per_second: 10,
            seed: 0,
        }
    }
}

table! {
    /// A retry policy's field, by the name every host uses for it.
    pub enum RetryField {
        /// [`RetryPolicy::max_attempts`].
        MaxAttempts = 0 => "max-attempts",
        /// [`RetryPolicy::base_delay`].
        BaseDelay = 1 => "base-delay",
        /// [`RetryPolicy::max_delay`].
        MaxDelay = 2 => "max-delay",
        /// [`RetryPolicy::budget_percent`].
        BudgetPercent = 3 => "budget-percent",
        /// [`RetryPolicy::min_retries_per_second`].
        MinRetriesPerSecond = 4 => "min-retries-per-second",
    }
}

/// The largest budget: retries ten times the calls (a budget, not a license).
pub const MAX_BUDGET_PERCENT: u16 = 1000;

/// A retry policy that breaks a rule: the field and the rule, as config errors say them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryError {
    /// The offending field.
    pub field: RetryField,
    /// The rule it breaks.
    pub rule: Rule,
}

impl RetryError {
    /// Writes the error in words (`max-attempts must be between 1 and 10`).
    pub fn describe<W: Words + ?Sized>(&self, out: &mut W) -> fmt::Result {
        out.word(self.field.name())?;
        out.word(" ")?;
        self.rule.describe(out)
    }
}

impl fmt::Display for RetryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.describe(f)
    }
}

impl RetryPolicy {
    /// Checks every rule; the error names the first field that breaks one:
    /// `max-attempts` 1–10 · `base-delay` > 0 · `max-delay` ≥ `base-delay` ·
    /// `budget-percent` 0–1000.
    pub fn validate(&self) -> Result<(), RetryError> {
        let check = |ok: bool, field, rule| {
            if ok {
                Ok(())
            } else {
                Err(RetryError { field, rule })
            }
        };
        check(
            (1..=10).contains(&self.max_attempts),
            RetryField::MaxAttempts,
            Rule::Between(1, 10),
        )?;
        check(self.base_delay > 0, RetryField::BaseDelay, Rule::Positive)?;
        check(
            self.max_delay >= self.base_delay,
            RetryField::MaxDelay,
            Rule::AtLeastNamed(RetryField::BaseDelay.name()),
        )?;
        check(
            self.budget_percent <= MAX_BUDGET_PERCENT,
            RetryField::BudgetPercent,
            Rule::Between(0, u64::from(MAX_BUDGET_PERCENT)),
        )
    }

    /// The most a budget may save up: what a hundred calls deposit (in thousandths of a
    /// retry), so a quiet spell cannot store up a storm.
    fn savings_cap(&self) -> u64 {
        u64::from(self.budget_percent).saturating_mul(1000)
    }
}

/// The budget a breaker's callers share, and the jitter's generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryBudget {
    /// Retries saved up by the calls, in thousandths of a retry.
    balance: u64,
    /// The floor's retries left this second, and the second it began.
    floor_left: u32,
    floor_since: Nanos,
    rng: u64,
}

table! {
    /// Why the retries stopped, by the name every host gives it (the WIT's `retry-stop`
    /// lists them in this order).
    pub enum Stop {
        /// The attempt was not a fault: its answer is the call's.
        Answered = 0 => "answered",
        /// Every attempt the policy allows was made.
        Attempts = 1 => "attempts",
        /// The budget has no retry left: retrying now would add load to a failing
        /// upstream.
        Budget = 2 => "budget",
        /// The upstream asked callers to stay away for longer than `max-delay`.
        StayAway = 3 => "stay-away",
    }
}

/// What to do after an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Stop, and answer with the last attempt (or the breaker's rejection).
    Stop(Stop),
    /// Wait this long, then ask the breaker for another attempt.
    Retry(Nanos),
}

impl RetryBudget {
    /// An empty budget at `now`, its jitter seeded by `policy`.
    pub fn new(policy: &RetryPolicy, now: Nanos) -> Self {
        Self {
            balance: 0,
            floor_left: policy.min_retries_per_second,
            floor_since: now,
            rng: policy.seed,
        }
    }

    /// A call's first attempt was admitted: it pays `budget-percent` of a retry in.
    pub fn deposit(&mut self, policy: &RetryPolicy) {
        let paid = u64::from(policy.budget_percent).saturating_mul(10);
        self.balance = self.balance.saturating_add(paid).min(policy.savings_cap());
    }

    /// Takes one retry from the savings, else from this second's floor; `false` if
    /// neither has one.
    fn withdraw(&mut self, policy: &RetryPolicy, now: Nanos) -> bool {
        if self.balance >= 1000 {
            self.balance = self.balance.saturating_sub(1000);
            return true;
        }
        // A new second only forward: a reading behind the last one (callers racing to
        // the lock, a clock that stepped back) refills nothing.
        let elapsed = since(now, self.floor_since);
        if (SECOND..HALF_CIRCLE).contains(&elapsed) {
            self.floor_since = now;
            self.floor_left = policy.min_retries_per_second;
        }
        if self.floor_left > 0 {
            self.floor_left = self.floor_left.saturating_sub(1);
            return true;
        }
        false
    }

    /// Retry `retry`'s wait (1 for the first retry): full jitter under the doubled base.
    fn backoff(&mut self, policy: &RetryPolicy, retry: u8) -> Nanos {
        let doublings = u32::from(retry.saturating_sub(1)).min(63);
        let ceiling = policy
            .base_delay
            .saturating_mul(1u64 << doublings)
            .min(policy.max_delay);
        // A uniform draw in [0, ceiling]: the top 64 bits of draw × (ceiling + 1).
        let draw = u128::from(splitmix64(&mut self.rng));
        let span = u128::from(ceiling).saturating_add(1);
        u64::try_from(draw.saturating_mul(span) >> 64).unwrap_or(ceiling)
    }
}

/// After attempt `attempt` (1 for the first) answered with `class` and asked callers to
/// stay away for `retry_after` (0: nothing), what the guarded call does next. A retry
/// is taken from `budget` only when one is made.
pub fn next(
    policy: &RetryPolicy,
    budget: &mut RetryBudget,
    attempt: u8,
    class: Class,
    retry_after: Nanos,
    now: Nanos,
) -> Next {
    if class != Class::Fault {
        return Next::Stop(Stop::Answered);
    }
    if attempt >= policy.max_attempts {
        return Next::Stop(Stop::Attempts);
    }
    if retry_after > policy.max_delay {
        return Next::Stop(Stop::StayAway);
    }
    if !budget.withdraw(policy, now) {
        return Next::Stop(Stop::Budget);
    }
    Next::Retry(budget.backoff(policy, attempt).max(retry_after))
}
