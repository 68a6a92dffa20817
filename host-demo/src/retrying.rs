//! The upstream route's call with retries (`--retries N`). Both runs wait the same way
//! between attempts — the core's policy, full jitter — so they differ only in what
//! tripgate adds: without it, the caller is a client with `retries=N` and nothing else;
//! with it, every attempt is admitted by the breaker (`call_retrying`) and retries come
//! out of a budget the route's callers share.

use std::io;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tripgate_wasmtime::tripgate_core::retry::{self, Next, RetryBudget};
use tripgate_wasmtime::tripgate_core::{Nanos, Outcome};
use tripgate_wasmtime::{Breaker, Classify, Config, Retries, RetryPolicy, Status};

use crate::http::Reply;

/// The retries of a run: the policy, and for the run without tripgate a budget nothing
/// limits (what a plain `retries=N` client does).
pub struct Retrying {
    policy: RetryPolicy,
    /// Where the plain budget's clock starts.
    epoch: Instant,
    plain: Mutex<RetryBudget>,
    /// The run with tripgate: its budget, shared by the route's callers.
    pub guarded: Option<Retries>,
}

impl Retrying {
    /// `retries` retries after the first attempt, budget and floor at the core's
    /// defaults for the run with tripgate.
    pub fn new(retries: u8, now: Nanos, with_tripgate: bool) -> anyhow::Result<Self> {
        let policy = RetryPolicy {
            max_attempts: retries.saturating_add(1),
            ..RetryPolicy::default()
        };
        let unlimited = RetryPolicy {
            budget_percent: retry::MAX_BUDGET_PERCENT,
            min_retries_per_second: u32::MAX,
            ..policy
        };
        let guarded = with_tripgate
            .then(|| Retries::new(policy, now))
            .transpose()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(Self {
            epoch: Instant::now(),
            plain: Mutex::new(RetryBudget::new(&unlimited, now)),
            policy: unlimited,
            guarded,
        })
    }
}

/// An attempt's answer as the breaker judges it, with the stay-away its headers ask for.
pub struct Answer(pub io::Result<Reply>);

impl Classify for Answer {
    fn outcome(&self) -> Outcome {
        match &self.0 {
            Ok(reply) => Status(reply.status).outcome(),
            Err(error) => error.outcome(),
        }
    }
    fn retry_after(&self) -> Nanos {
        match &self.0 {
            Ok(reply) => {
                tripgate_wasmtime::stay_away::from_headers(reply.status, |n| reply.header(n))
            }
            Err(_) => 0,
        }
    }
}

impl Retrying {
    /// The upstream call with retries: `attempt` makes one attempt (and counts it); the
    /// last attempt's answer, or `None` when the breaker turned the call away (`rejected`
    /// is told) or a host error ended it.
    pub fn call(
        &self,
        breaker: Option<&Breaker>,
        timeout: Duration,
        attempt: impl Fn() -> Answer,
        rejected: impl FnOnce(),
    ) -> Option<Answer> {
        let (Some(breaker), Some(retries)) = (breaker, &self.guarded) else {
            return Some(self.plain(attempt));
        };
        match breaker.call_retrying(retries, timeout, attempt) {
            Ok(answer) => Some(answer),
            Err(error) => {
                if error.rejection().is_some() {
                    rejected();
                }
                None
            }
        }
    }

    /// A client with `retries=N` and no breaker: the same waits, nothing else.
    fn plain(&self, attempt: impl Fn() -> Answer) -> Answer {
        let mut tries = 1u8;
        loop {
            let answer = attempt();
            // Judged as the breaker's defaults would: the same answers are faults.
            let class = Config::default().classify(answer.outcome());
            let now = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
            let next = {
                let mut budget = self.plain.lock().unwrap_or_else(|p| p.into_inner());
                if tries == 1 {
                    budget.deposit(&self.policy);
                }
                retry::next(
                    &self.policy,
                    &mut budget,
                    tries,
                    class,
                    answer.retry_after(),
                    now,
                )
            };
            match next {
                Next::Retry(wait) => std::thread::sleep(Duration::from_nanos(wait)),
                Next::Stop(_) => return answer,
            }
            tries = tries.saturating_add(1);
        }
    }
}
