//! The upstream route's call with retries (`--retries N`). Both runs wait the same way
//! between attempts — the core's policy, full jitter — so they differ only in what
//! tripgate adds: without it, the caller is a client with `retries=N` and nothing else;
//! with it, every attempt is admitted by the breaker (`call_retrying`) and retries come
//! out of a budget the route's callers share.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tripgate_wasmtime::tripgate_core::retry::{self, Next, RetryBudget};
use tripgate_wasmtime::tripgate_core::{Nanos, Outcome};
use tripgate_wasmtime::{Classify, Config, Retries, RetryPolicy, Status};

use crate::caller::CallerShared;
use crate::http::{self, Reply};

/// The retries of a run: the policy, and for the run without tripgate a budget nothing
/// limits (what a plain `retries=N` client does).
pub struct Retrying {
    policy: RetryPolicy,
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

impl CallerShared {
    /// One attempt at the upstream, counted as sent in the phase the call began in.
    fn attempt(&self, sent_in: usize) -> Answer {
        self.phases[sent_in].sent.fetch_add(1, Ordering::Relaxed);
        Answer(http::get(
            self.config.upstream,
            "/",
            &[],
            self.config.timeout,
        ))
    }

    /// The guarded call with retries: the upstream's good answer, else the fallback.
    pub(crate) fn call_upstream_retrying(&self, retrying: &Retrying) -> (u16, &'static str) {
        let sent_in = self.timeline.phase_now();
        let answer = match (&self.breaker, &retrying.guarded) {
            (Some(breaker), Some(retries)) => {
                let timeout = self.config.timeout;
                match breaker.call_retrying(retries, timeout, || self.attempt(sent_in)) {
                    Ok(answer) => Some(answer),
                    Err(error) => {
                        if error.rejection().is_some() {
                            self.phases[sent_in]
                                .rejected
                                .fetch_add(1, Ordering::Relaxed);
                        }
                        None
                    }
                }
            }
            _ => Some(self.plain_retries(retrying, sent_in)),
        };
        match answer {
            Some(Answer(Ok(reply))) if crate::caller::answered(reply.status) => {
                (reply.status, "upstream")
            }
            _ => (200, "fallback"),
        }
    }

    /// A client with `retries=N` and no breaker: the same waits, nothing else.
    fn plain_retries(&self, retrying: &Retrying, sent_in: usize) -> Answer {
        let mut attempt = 1u8;
        loop {
            let answer = self.attempt(sent_in);
            // Judged as the breaker's defaults would: the same answers are faults.
            let class = Config::default().classify(answer.outcome());
            let now =
                u64::try_from(self.timeline.offset(Instant::now()).as_nanos()).unwrap_or(u64::MAX);
            let next = {
                let mut budget = retrying.plain.lock().unwrap_or_else(|p| p.into_inner());
                if attempt == 1 {
                    budget.deposit(&retrying.policy);
                }
                retry::next(
                    &retrying.policy,
                    &mut budget,
                    attempt,
                    class,
                    answer.retry_after(),
                    now,
                )
            };
            match next {
                Next::Retry(wait) => std::thread::sleep(Duration::from_nanos(wait)),
                Next::Stop(_) => return answer,
            }
            attempt = attempt.saturating_add(1);
        }
    }
}
